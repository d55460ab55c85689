/*  sender_channels_test.c — the channels a sender serves: the names it
    takes, the capabilities its HELLO says, and the sender actor routing
    each message to its channel's transport, giving back one of a channel
    it does not serve, and passing a receiver's Retry-After on in its NACK,
    and its deferral: a receiver that throttles or cannot be reached.
    Each channel's pool of workers: the sizes it takes (channel_concurrency),
    the credit granted per channel (CREDIT n, channel), and a channel whose
    receiver hangs holding its own workers and credit, never another's.

    The actor runs against a stand-in dispatcher of the same system (the
    sender addresses it by its local path), which welcomes it with
    protocol 2 and writes down what it hears, in order (HELLO, CREDIT n
    CHANNEL, ACK id, NACK id, BYE). The channels: email of the null kind
    (delivered by the sender actor itself) or through a shell script that
    waits until the test lets it finish, http to tests/e2e/http_sink.py,
    sms through a shell script.
*/
#include "fq_error.h"
#include "fq_sender.h"
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>
#include "fq_test_ports.h"
#include "fq_test_process.h"

//  How long anything here may take: milliseconds normally, more under
//  sanitizers on a loaded machine. The sink's start included.
#define S_WAIT_MS         20000
#define S_EXIT_TIMEOUT_MS 10000
#define S_HTTP_TIMEOUT_MS 15000
#define S_LINE_SIZE       256
#define S_PATH_SIZE       512
#define S_ERROR_SIZE      512
#define S_NACKS_MAX       16
#define S_ACKS_MAX        16
#define S_EVENTS_MAX      64

//  How long a delivery that should not end may be watched not ending.
#define S_STUCK_MS 300

#define S_DISPATCHER "/user/dispatcher"

// --------------------------------------------------------------------------
//  Names and capabilities

//  1. Channel lists: names split on commas, blanks around them dropped;
//  empty, invalid, repeated or too many names refused with a reason.
static void test_channel_lists(void **unused)
{
    (void)unused;
    char names[FQ_SENDER_CHANNELS_MAX][FQ_SENDER_CHANNEL_NAME_MAX + 1];
    char error[S_ERROR_SIZE];
    int count = -1;
    assert_int_equal(fq_sender_channels_parse("email", names, &count, error, sizeof error), 0);
    assert_int_equal(count, 1);
    assert_string_equal(names[0], "email");
    assert_int_equal(
        fq_sender_channels_parse(" email ,http,\tsms-2_b ", names, &count, error, sizeof error), 0);
    assert_int_equal(count, 3);
    assert_string_equal(names[1], "http");
    assert_string_equal(names[2], "sms-2_b");

    const char *bad[] = {"",
                         " ",
                         "email,",
                         ",http",
                         "email,,http",
                         "Email",
                         "a b",
                         "sms!",
                         "email,email",
                         "a,b,c,d,e,f,g,h,i",
                         "a234567890123456789012345678901234"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        error[0] = 0;
        if (fq_sender_channels_parse(bad[i], names, &count, error, sizeof error) != FQ_EINVAL)
            fail_msg("\"%s\" taken", bad[i]);
        assert_true(strlen(error) > 0);
    }
    assert_true(fq_sender_channel_name_valid("push"));
    assert_true(fq_sender_channel_name_valid("2fa"));
    assert_false(fq_sender_channel_name_valid("push notifications"));
}

//  2. HELLO's capabilities: the kinds, batch, then one channel=NAME per
//  channel; a sender of no channels serves email through its transport,
//  as before channels were; too many for a HELLO are refused.
static void test_capabilities(void **unused)
{
    (void)unused;
    char text[FQ_SENDER_CAPABILITIES_MAX + 1];
    fq_sender_config_t config = {.transport = {.kind = "smtp"}};
    assert_int_equal(fq_sender_capabilities(&config, text, sizeof text), 0);
    assert_string_equal(text, "smtp,batch,channel=email");

    config = (fq_sender_config_t){.nchannels = 4,
                                  .channels = {{"email", {.kind = "smtp"}, 0},
                                               {"http", {.kind = "http"}, 0},
                                               {"sms", {.kind = "exec"}, 0},
                                               {"push", {.kind = "exec"}, 0}}};
    assert_int_equal(fq_sender_capabilities(&config, text, sizeof text), 0);
    assert_string_equal(text,
                        "smtp,http,exec,batch,channel=email,channel=http,channel=sms,channel=push");
    //  A buffer too small
    assert_int_equal(fq_sender_capabilities(&config, text, 10), FQ_ETOOBIG);

    //  Names so long that their tokens pass what fairqd takes
    config.nchannels = FQ_SENDER_CHANNELS_MAX;
    char long_names[FQ_SENDER_CHANNELS_MAX][FQ_SENDER_CHANNEL_NAME_MAX + 1];
    for (int i = 0; i < FQ_SENDER_CHANNELS_MAX; i++) {
        memset(long_names[i], 'a' + i, FQ_SENDER_CHANNEL_NAME_MAX);
        long_names[i][FQ_SENDER_CHANNEL_NAME_MAX] = 0;
        config.channels[i] = (fq_sender_channel_t){long_names[i], {.kind = "exec"}, 0};
    }
    assert_int_equal(fq_sender_capabilities(&config, text, sizeof text), FQ_ETOOBIG);
    //  And fq_sender_start refuses such a sender, or one with a bad name
    fq_system_t *sys = fq_system_new(&(fq_system_config_t){.name = "caps"});
    assert_non_null(sys);
    config.dispatcher = S_DISPATCHER;
    config.name = "caps";
    config.version = "test";
    config.concurrency = 1;
    assert_int_equal(fq_sender_start(sys, &config), FQ_ETOOBIG);
    config.nchannels = 2;
    config.channels[0] = (fq_sender_channel_t){"email", {.kind = "null"}, 0};
    config.channels[1] = (fq_sender_channel_t){"Bad Name", {.kind = "null"}, 0};
    assert_int_equal(fq_sender_start(sys, &config), FQ_EINVAL);
    config.channels[1] = (fq_sender_channel_t){"email", {.kind = "null"}, 0};
    assert_int_equal(fq_sender_start(sys, &config), FQ_EINVAL);
    //  A pool of more workers than a channel may have
    config.channels[1] = (fq_sender_channel_t){"http", {.kind = "null"}, FQ_SENDER_WORKERS + 1};
    assert_int_equal(fq_sender_start(sys, &config), FQ_EINVAL);
    config.channels[1].concurrency = -1;
    assert_int_equal(fq_sender_start(sys, &config), FQ_EINVAL);
    fq_system_destroy(&sys);
}

//  3. Pool sizes (channel_concurrency): NAME:N pairs of channels served,
//  1..FQ_SENDER_WORKERS each; a channel not named keeps the default
//  (concurrency), and the sum is what HELLO says.
static void test_pool_sizes(void **unused)
{
    (void)unused;
    const char names[][FQ_SENDER_CHANNEL_NAME_MAX + 1] = {"email", "http", "sms"};
    char error[S_ERROR_SIZE];
    int sizes[3] = {0, 0, 0};
    assert_int_equal(fq_sender_pools_parse("", names, 3, sizes, error, sizeof error), 0);
    assert_int_equal(fq_sender_pools_parse(" \t", names, 3, sizes, error, sizeof error), 0);
    assert_int_equal(sizes[0] + sizes[1] + sizes[2], 0);
    assert_int_equal(
        fq_sender_pools_parse(" http : 200 ,sms:4", names, 3, sizes, error, sizeof error), 0);
    assert_int_equal(sizes[0], 0);
    assert_int_equal(sizes[1], 200);
    assert_int_equal(sizes[2], 4);

    //  Each refused, saying why
    const struct {
        const char *list;
        const char *error;
    } bad[] = {
        {"http", "\"http\" is not NAME:N"},
        {":4", "\":4\" is not NAME:N"},
        {"http:4,", "an empty item (want NAME:N, ...)"},
        {",http:4", "an empty item (want NAME:N, ...)"},
        {"push:4", "\"push\" is not a channel this sender serves (channels: email, http, sms)"},
        {"HTTP:4", "\"HTTP\" is not a channel this sender serves (channels: email, http, sms)"},
        {"http:1,http:2", "channel \"http\" is given twice"},
        {"http:", "http: \"\" is not an integer"},
        {"http:abc", "http: \"abc\" is not an integer"},
        {"http:-1", "http: \"-1\" is not an integer"},
        {"http:4 5", "http: \"4 5\" is not an integer"},
        {"http:0", "http: 0 is out of range (1..200)"},
        {"http:201", "http: 201 is out of range (1..200)"},
        {"http:99999999999999999999", "http: 99999999999999999999 is out of range (1..200)"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        error[0] = 0;
        if (fq_sender_pools_parse(bad[i].list, names, 3, sizes, error, sizeof error) != FQ_EINVAL)
            fail_msg("\"%s\" taken", bad[i].list);
        assert_string_equal(error, bad[i].error);
    }

    //  The sizes in effect, and their sum
    fq_sender_config_t config = {.concurrency = 8,
                                 .nchannels = 3,
                                 .channels = {{"email", {.kind = "smtp"}, 0},
                                              {"http", {.kind = "http"}, 200},
                                              {"sms", {.kind = "exec"}, 4}}};
    assert_int_equal(fq_sender_pool_size(&config, 0), 8);
    assert_int_equal(fq_sender_pool_size(&config, 1), 200);
    assert_int_equal(fq_sender_workers(&config), 212);
    //  No channels: the email channel alone, concurrency workers
    config = (fq_sender_config_t){.concurrency = 5, .transport = {.kind = "smtp"}};
    assert_int_equal(fq_sender_pool_size(&config, 0), 5);
    assert_int_equal(fq_sender_workers(&config), 5);
}

// --------------------------------------------------------------------------
//  The stand-in dispatcher

typedef struct {
    uint64_t id;
    bool permanent;
    char error[S_ERROR_SIZE];
    uint32_t retry_after_s;
    uint32_t deferral;
} s_nack_t;

//  What the dispatcher saw, shared with the test's thread.
typedef struct {
    pthread_mutex_t lock;
    char capabilities[S_LINE_SIZE];
    uint32_t concurrency; //  The last HELLO's
    int credits;
    uint64_t acks[S_ACKS_MAX];
    int nacks_ok;
    s_nack_t nacks[S_NACKS_MAX];
    int nnacks;
    //  Everything, in order: "HELLO", "CREDIT 3 http", "ACK 7", "NACK 8",
    //  "BYE"
    char events[S_EVENTS_MAX][S_LINE_SIZE];
    int nevents;
} s_seen_t;

//  Writes down an event (seen locked).
static void s_event(s_seen_t *seen, const char *format, ...)
{
    if (seen->nevents == S_EVENTS_MAX)
        return;
    va_list args;
    va_start(args, format);
    vsnprintf(seen->events[seen->nevents++], S_LINE_SIZE, format, args);
    va_end(args);
}

static int s_dispatcher_start(fq_ctx_t *ctx, void *args, void **state_p)
{
    (void)ctx;
    *state_p = args;
    return 0;
}

static int s_dispatcher_receive(fq_ctx_t *ctx, void *state, const fq_msg_t *msg)
{
    s_seen_t *seen = state;
    pthread_mutex_lock(&seen->lock);
    if (msg->type == FQ_MSG_HELLO) {
        fq_hello_t hello;
        if (fq_msg_decode(msg, &fq_hello_desc, &hello) == 0) {
            snprintf(seen->capabilities, sizeof seen->capabilities, "%s", hello.capabilities);
            seen->concurrency = hello.concurrency;
            s_event(seen, "HELLO");
        }
    } else if (msg->type == FQ_MSG_CREDIT) {
        fq_credit_t credit;
        if (fq_msg_decode(msg, &fq_credit_desc, &credit) == 0) {
            seen->credits++;
            s_event(seen, "CREDIT %u %s", credit.n, credit.channel);
        }
    } else if (msg->type == FQ_MSG_ACKS) {
        fq_sender_acks_t acks;
        if (fq_msg_decode(msg, &fq_sender_acks_desc, &acks) == 0)
            for (uint32_t i = 0; i < acks.ids.count && seen->nacks_ok < S_ACKS_MAX; i++) {
                seen->acks[seen->nacks_ok++] = acks.ids.items[i];
                s_event(seen, "ACK %llu", (unsigned long long)acks.ids.items[i]);
            }
    } else if (msg->type == FQ_MSG_NACK) {
        fq_sender_nack_t nack;
        if (fq_msg_decode(msg, &fq_sender_nack_desc, &nack) == 0 && seen->nnacks < S_NACKS_MAX) {
            s_nack_t *into = &seen->nacks[seen->nnacks++];
            into->id = nack.id;
            into->permanent = nack.permanent;
            snprintf(into->error, sizeof into->error, "%s", nack.error);
            into->retry_after_s = nack.retry_after_s;
            into->deferral = nack.deferral;
            s_event(seen, "NACK %llu", (unsigned long long)nack.id);
        }
    } else if (msg->type == FQ_MSG_BYE)
        s_event(seen, "BYE");
    pthread_mutex_unlock(&seen->lock);
    if (msg->type != FQ_MSG_HELLO)
        return 0;
    fq_welcome_t welcome = {.system = "stand-in", .protocol = FQ_SENDER_PROTOCOL};
    return fq_reply(ctx, msg, &fq_welcome_desc, &welcome);
}

static const fq_behaviour_t s_dispatcher = {
    .name = "dispatcher", .start = s_dispatcher_start, .receive = s_dispatcher_receive};

//  Waits until the dispatcher heard of message id (an ACK, or a NACK
//  copied to *nack); true for an ACK.
static bool s_outcome(s_seen_t *seen, uint64_t id, s_nack_t *nack)
{
    int64_t deadline = fq_test_now_ms() + S_WAIT_MS;
    while (fq_test_now_ms() < deadline) {
        pthread_mutex_lock(&seen->lock);
        for (int i = 0; i < seen->nacks_ok; i++)
            if (seen->acks[i] == id) {
                pthread_mutex_unlock(&seen->lock);
                return true;
            }
        for (int i = 0; i < seen->nnacks; i++)
            if (seen->nacks[i].id == id) {
                *nack = seen->nacks[i];
                pthread_mutex_unlock(&seen->lock);
                return false;
            }
        pthread_mutex_unlock(&seen->lock);
        usleep(FQ_TEST_POLL_MS * FQ_TEST_US_PER_MS);
    }
    fail_msg("no outcome for message %llu within %d ms", (unsigned long long)id, S_WAIT_MS);
    return false;
}

//  Waits until the dispatcher heard event, at index from or later;
//  returns its index.
static int s_wait_event(s_seen_t *seen, int from, const char *event)
{
    int64_t deadline = fq_test_now_ms() + S_WAIT_MS;
    while (fq_test_now_ms() < deadline) {
        pthread_mutex_lock(&seen->lock);
        for (int i = from; i < seen->nevents; i++)
            if (strcmp(seen->events[i], event) == 0) {
                pthread_mutex_unlock(&seen->lock);
                return i;
            }
        pthread_mutex_unlock(&seen->lock);
        usleep(FQ_TEST_POLL_MS * FQ_TEST_US_PER_MS);
    }
    fail_msg("the dispatcher did not hear \"%s\" within %d ms", event, S_WAIT_MS);
    return -1;
}

//  How many events from index from on begin with prefix, now.
static int s_events_since(s_seen_t *seen, int from, const char *prefix)
{
    int count = 0;
    pthread_mutex_lock(&seen->lock);
    for (int i = from; i < seen->nevents; i++)
        count += strncmp(seen->events[i], prefix, strlen(prefix)) == 0;
    pthread_mutex_unlock(&seen->lock);
    return count;
}

//  The event at index i.
static void s_assert_event(s_seen_t *seen, int i, const char *event)
{
    pthread_mutex_lock(&seen->lock);
    char copy[S_LINE_SIZE] = "(none)";
    if (i < seen->nevents)
        snprintf(copy, sizeof copy, "%s", seen->events[i]);
    pthread_mutex_unlock(&seen->lock);
    assert_string_equal(copy, event);
}

//  A MESSAGE of channel to to, every string set.
static fq_message_t s_message(uint64_t id, const char *channel, const char *to)
{
    return (fq_message_t){.id = id,
                          .tenant = "acme",
                          .request = 7,
                          .attempt = 1,
                          .to = to,
                          .from = "shop@example.com",
                          .subject = "Your order",
                          .body = "{\"order\":42}",
                          .text_body = "",
                          .channel = channel,
                          .method = "POST"};
}

// --------------------------------------------------------------------------

//  4. The sender says its channels in HELLO, delivers each message by
//  its channel's transport, gives back one of another channel (transient,
//  saying so), and passes a receiver's Retry-After on in its NACK, with
//  the deferral its transport found: throttled (429), unreachable (a
//  connection refused), or none (a 500, an exec failure, a 400).
static void test_sender_serves_its_channels(void **unused)
{
    (void)unused;
    //  The http sink, and the sms script
    char dir[] = "/tmp/fq_channels_test.XXXXXX";
    assert_non_null(mkdtemp(dir));
    char out_path[S_PATH_SIZE], script[S_PATH_SIZE];
    snprintf(out_path, sizeof out_path, "%s/out.jsonl", dir);
    snprintf(script, sizeof script, "%s/sms.sh", dir);
    FILE *file = fopen(script, "w");
    assert_non_null(file);
    fputs("#!/bin/sh\ncat > /dev/null\necho 'sms gateway busy' >&2\nexit 75\n", file);
    assert_int_equal(fclose(file), 0);
    assert_int_equal(chmod(script, 0700), 0);
    char *argv[] = {FQ_TEST_PYTHON, FQ_HTTP_SINK, "--port",        "0",
                    "--out",        out_path,     "--quit-on-eof", NULL};
    int sink_in, sink_out, port;
    pid_t sink = fq_test_spawn(argv, &sink_in, &sink_out);
    char line[S_LINE_SIZE];
    if (fq_test_read_line(sink_out, line, sizeof line, S_WAIT_MS) != 0 ||
        sscanf(line, "ready %d", &port) != 1)
        fail_msg("http sink did not start");

    s_seen_t seen = {.lock = PTHREAD_MUTEX_INITIALIZER};
    fq_system_t *sys = fq_system_new(&(fq_system_config_t){.name = "spoke"});
    assert_non_null(sys);
    assert_int_equal(fq_system_spawn(sys, "dispatcher", &s_dispatcher, &seen, NULL), 0);
    fq_sender_config_t config = {
        .dispatcher = S_DISPATCHER,
        .name = "spoke",
        .version = "test",
        .concurrency = 2,
        .nchannels = 3,
        .channels = {{"email", {.kind = "null"}},
                     {"http", {.kind = "http", .timeout_ms = S_HTTP_TIMEOUT_MS}},
                     {"sms", {.kind = "exec", .command = script}}}};
    assert_int_equal(fq_sender_start(sys, &config), 0);

    //  HELLO, then the credit of the welcomed sender
    int64_t deadline = fq_test_now_ms() + S_WAIT_MS;
    bool credited = false;
    while (!credited && fq_test_now_ms() < deadline) {
        pthread_mutex_lock(&seen.lock);
        credited = seen.credits > 0;
        pthread_mutex_unlock(&seen.lock);
        usleep(FQ_TEST_POLL_MS * FQ_TEST_US_PER_MS);
    }
    assert_true(credited);
    assert_string_equal(seen.capabilities,
                        "null,http,exec,batch,channel=email,channel=http,channel=sms");
    //  Each channel's pool is concurrency (2) workers, its credit granted
    //  apart; the email channel's null kind too, delivered inline
    s_wait_event(&seen, 0, "CREDIT 2 sms");
    s_assert_event(&seen, 0, "HELLO");
    s_assert_event(&seen, 1, "CREDIT 2 email");
    s_assert_event(&seen, 2, "CREDIT 2 http");
    assert_int_equal(seen.concurrency, 6);

    fq_client_t *client = fq_client_new(sys);
    assert_non_null(client);
    s_nack_t nack;
    //  email ("" is email), delivered by the null kind
    fq_message_t msg = s_message(1, "", "ann@example.org");
    assert_int_equal(fq_client_tell(client, FQ_SENDER_PATH, &fq_message_desc, &msg), 0);
    assert_true(s_outcome(&seen, 1, &nack));

    //  A channel not served: back at once, transient, saying which
    msg = s_message(2, "pigeon", "loft 3");
    assert_int_equal(fq_client_tell(client, FQ_SENDER_PATH, &fq_message_desc, &msg), 0);
    assert_false(s_outcome(&seen, 2, &nack));
    assert_false(nack.permanent);
    assert_string_equal(nack.error,
                        "channel \"pigeon\" is not served by this sender (it serves email, http, "
                        "sms)");
    assert_int_equal(nack.retry_after_s, 0);
    assert_int_equal(nack.deferral, FQ_DEFERRAL_NONE);

    //  sms through its script: exit 75, transient
    msg = s_message(3, "sms", "+15551234567");
    assert_int_equal(fq_client_tell(client, FQ_SENDER_PATH, &fq_message_desc, &msg), 0);
    assert_false(s_outcome(&seen, 3, &nack));
    assert_false(nack.permanent);
    assert_string_equal(nack.error, "exit 75: sms gateway busy");
    assert_int_equal(nack.deferral, FQ_DEFERRAL_NONE);

    //  http: 429 with Retry-After 7, which the NACK carries, throttled;
    //  then a 400
    char url[S_PATH_SIZE];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/hook?status=429&retry_after=7&body=slow", port);
    msg = s_message(4, "http", url);
    assert_int_equal(fq_client_tell(client, FQ_SENDER_PATH, &fq_message_desc, &msg), 0);
    assert_false(s_outcome(&seen, 4, &nack));
    assert_false(nack.permanent);
    assert_string_equal(nack.error, "HTTP 429: slow");
    assert_int_equal(nack.retry_after_s, 7);
    assert_int_equal(nack.deferral, FQ_DEFERRAL_THROTTLED);
    snprintf(url, sizeof url, "http://127.0.0.1:%d/hook?status=400&body=no", port);
    msg = s_message(5, "http", url);
    assert_int_equal(fq_client_tell(client, FQ_SENDER_PATH, &fq_message_desc, &msg), 0);
    assert_false(s_outcome(&seen, 5, &nack));
    assert_true(nack.permanent);
    assert_string_equal(nack.error, "HTTP 400: no");
    assert_int_equal(nack.deferral, FQ_DEFERRAL_NONE);
    //  A 500: transient, no deferral; nobody listening: unreachable, with
    //  libcurl's reason as the error
    snprintf(url, sizeof url, "http://127.0.0.1:%d/hook?status=500&body=boom", port);
    msg = s_message(7, "http", url);
    assert_int_equal(fq_client_tell(client, FQ_SENDER_PATH, &fq_message_desc, &msg), 0);
    assert_false(s_outcome(&seen, 7, &nack));
    assert_false(nack.permanent);
    assert_string_equal(nack.error, "HTTP 500: boom");
    assert_int_equal(nack.deferral, FQ_DEFERRAL_NONE);
    fq_test_port_t refusing;
    fq_test_port_refusing(&refusing);
    snprintf(url, sizeof url, "http://127.0.0.1:%d/hook", refusing.port);
    msg = s_message(8, "http", url);
    assert_int_equal(fq_client_tell(client, FQ_SENDER_PATH, &fq_message_desc, &msg), 0);
    assert_false(s_outcome(&seen, 8, &nack));
    fq_test_port_close(&refusing);
    assert_false(nack.permanent);
    assert_non_null(strstr(nack.error, "onnect"));
    assert_int_equal(nack.deferral, FQ_DEFERRAL_UNREACHABLE);
    snprintf(url, sizeof url, "http://127.0.0.1:%d/hook", port);
    msg = s_message(6, "http", url);
    assert_int_equal(fq_client_tell(client, FQ_SENDER_PATH, &fq_message_desc, &msg), 0);
    assert_true(s_outcome(&seen, 6, &nack));

    fq_client_destroy(&client);
    fq_system_destroy(&sys);
    close(sink_in);
    assert_int_equal(fq_test_wait(sink, S_EXIT_TIMEOUT_MS), 0);
    close(sink_out);
    unlink(out_path);
    unlink(script);
    rmdir(dir);
}

//  A file of text, written whole.
static void s_write_file(const char *path, const char *text)
{
    FILE *file = fopen(path, "w");
    assert_non_null(file);
    fputs(text, file);
    assert_int_equal(fclose(file), 0);
}

//  Waits until path exists.
static void s_wait_file(const char *path)
{
    int64_t deadline = fq_test_now_ms() + S_WAIT_MS;
    while (access(path, F_OK) != 0) {
        if (fq_test_now_ms() > deadline)
            fail_msg("%s did not appear within %d ms", path, S_WAIT_MS);
        usleep(FQ_TEST_POLL_MS * FQ_TEST_US_PER_MS);
    }
}

//  Stops the stand-in dispatcher and starts another (a fairqd that went
//  and came back): the sender says HELLO again and is welcomed anew.
static void s_dispatcher_restart(fq_system_t *sys, fq_client_t *client, s_seen_t *seen)
{
    assert_int_equal(fq_client_tell(client, S_DISPATCHER, &fq_stop_desc, &(fq_stop_t){0}), 0);
    int64_t deadline = fq_test_now_ms() + S_WAIT_MS;
    while (fq_system_spawn(sys, "dispatcher", &s_dispatcher, seen, NULL) != 0) {
        if (fq_test_now_ms() > deadline)
            fail_msg("could not spawn the dispatcher again");
        usleep(FQ_TEST_POLL_MS * FQ_TEST_US_PER_MS);
    }
}

//  5. Credit per channel. A sender of email (a pool of 1, through a
//  command that hangs until the test lets it end) and http (a pool of 3)
//  grants a CREDIT for each channel, with its pool's size. While the
//  email delivery hangs, a second email is refused (its pool is full) and
//  http messages are delivered and acknowledged. After a new WELCOME only
//  the channels' idle workers are credited (http 3, email none), and the
//  hung delivery, once it ends, gives back its own channel's credit
//  (CREDIT 1 email). The drain on SIGTERM waits for it, after a BYE.
static void test_credit_per_channel(void **unused)
{
    (void)unused;
    char dir[] = "/tmp/fq_pools_test.XXXXXX";
    assert_non_null(mkdtemp(dir));
    char out_path[S_PATH_SIZE], script[S_PATH_SIZE], release[S_PATH_SIZE], running[S_PATH_SIZE];
    snprintf(out_path, sizeof out_path, "%s/out.jsonl", dir);
    snprintf(script, sizeof script, "%s/relay.sh", dir);
    snprintf(release, sizeof release, "%s/release", dir);
    snprintf(running, sizeof running, "%s/running", dir);
    //  A relay that hangs: it takes the message, then waits for the test
    char text[4 * S_PATH_SIZE];
    snprintf(text, sizeof text,
             "#!/bin/sh\ncat > /dev/null\ntouch %s\nwhile [ ! -e %s ]; do sleep 0.02; "
             "done\nrm -f %s\nexit 0\n",
             running, release, running);
    s_write_file(script, text);
    assert_int_equal(chmod(script, 0700), 0);
    char *argv[] = {FQ_TEST_PYTHON, FQ_HTTP_SINK, "--port",        "0",
                    "--out",        out_path,     "--quit-on-eof", NULL};
    int sink_in, sink_out, port;
    pid_t sink = fq_test_spawn(argv, &sink_in, &sink_out);
    char line[S_LINE_SIZE];
    if (fq_test_read_line(sink_out, line, sizeof line, S_WAIT_MS) != 0 ||
        sscanf(line, "ready %d", &port) != 1)
        fail_msg("http sink did not start");
    char url[S_PATH_SIZE];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/hook", port);

    s_seen_t seen = {.lock = PTHREAD_MUTEX_INITIALIZER};
    fq_system_t *sys = fq_system_new(&(fq_system_config_t){.name = "pools"});
    assert_non_null(sys);
    assert_int_equal(fq_system_spawn(sys, "dispatcher", &s_dispatcher, &seen, NULL), 0);
    fq_sender_config_t config = {
        .dispatcher = S_DISPATCHER,
        .name = "pools",
        .version = "test",
        .concurrency = 3,
        .nchannels = 2,
        .channels = {{"email", {.kind = "exec", .command = script, .timeout_ms = S_WAIT_MS}, 1},
                     {"http", {.kind = "http", .timeout_ms = S_HTTP_TIMEOUT_MS}, 0}}};
    assert_int_equal(fq_sender_start(sys, &config), 0);

    //  After WELCOME: one CREDIT per channel, its pool's size; HELLO's
    //  concurrency is the two together
    s_wait_event(&seen, 0, "CREDIT 3 http");
    s_assert_event(&seen, 0, "HELLO");
    s_assert_event(&seen, 1, "CREDIT 1 email");
    s_assert_event(&seen, 2, "CREDIT 3 http");
    assert_int_equal(seen.concurrency, 4);

    //  An email that hangs takes the email pool's one worker
    fq_client_t *client = fq_client_new(sys);
    assert_non_null(client);
    fq_message_t msg = s_message(10, "email", "ann@example.org");
    assert_int_equal(fq_client_tell(client, FQ_SENDER_PATH, &fq_message_desc, &msg), 0);
    s_wait_file(running);
    //  One dispatch: an email more than the email credit, refused at once
    //  (transient), and three webhooks, the http credit, each delivered
    //  while the first email hangs
    fq_message_t batch[] = {s_message(11, "", "bob@example.org"), s_message(20, "http", url),
                            s_message(21, "http", url), s_message(22, "http", url)};
    fq_messages_t messages = {.messages = {4, batch}};
    assert_int_equal(fq_client_tell(client, FQ_SENDER_PATH, &fq_messages_desc, &messages), 0);
    s_nack_t nack;
    assert_false(s_outcome(&seen, 11, &nack));
    assert_false(nack.permanent);
    assert_string_equal(nack.error, "sender has no idle worker of channel \"email\"");
    for (uint64_t id = 20; id <= 22; id++)
        assert_true(s_outcome(&seen, id, &nack));
    usleep(S_STUCK_MS * FQ_TEST_US_PER_MS);
    assert_int_equal(s_events_since(&seen, 0, "ACK 10"), 0);
    assert_int_equal(s_events_since(&seen, 0, "NACK 10"), 0);
    assert_int_equal(s_events_since(&seen, 0, "CREDIT"), 2);

    //  fairqd goes and comes back: a new WELCOME credits the idle
    //  workers, http's three and no email (its worker is still busy)
    s_dispatcher_restart(sys, client, &seen);
    int welcomed = s_wait_event(&seen, 1, "HELLO");
    int http = s_wait_event(&seen, welcomed, "CREDIT 3 http");
    assert_int_equal(s_events_since(&seen, welcomed, "CREDIT"), 1);
    //  The hung email ends: its ACK, and its worker's credit, of the old
    //  session, given back to the email channel alone
    s_write_file(release, "");
    s_wait_event(&seen, http, "ACK 10");
    s_wait_event(&seen, http, "CREDIT 1 email");
    //  A webhook of the new session: its ACK gives the credit back, no
    //  CREDIT
    msg = s_message(23, "http", url);
    assert_int_equal(fq_client_tell(client, FQ_SENDER_PATH, &fq_message_desc, &msg), 0);
    s_wait_event(&seen, http, "ACK 23");
    assert_int_equal(s_events_since(&seen, welcomed, "CREDIT"), 2);
    assert_int_equal(s_events_since(&seen, welcomed, "CREDIT 1 email"), 1);

    //  Draining: BYE, then the wait for the email still being delivered
    unlink(release);
    assert_int_not_equal(access(running, F_OK), 0); //  The last run has ended
    msg = s_message(12, "email", "cy@example.org");
    assert_int_equal(fq_client_tell(client, FQ_SENDER_PATH, &fq_message_desc, &msg), 0);
    s_wait_file(running);
    assert_int_equal(fq_sender_drain(sys, S_STUCK_MS), 1);
    int bye = s_wait_event(&seen, http, "BYE");
    s_write_file(release, "");
    assert_int_equal(fq_sender_drain(sys, S_WAIT_MS), 0);
    s_wait_event(&seen, bye, "ACK 12");
    //  Stopping: no credit after the BYE
    assert_int_equal(s_events_since(&seen, bye, "CREDIT"), 0);

    fq_client_destroy(&client);
    fq_system_destroy(&sys);
    close(sink_in);
    assert_int_equal(fq_test_wait(sink, S_EXIT_TIMEOUT_MS), 0);
    close(sink_out);
    unlink(out_path);
    unlink(script);
    unlink(release);
    unlink(running);
    rmdir(dir);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const char *proxies[] = {"http_proxy",  "https_proxy", "HTTP_PROXY",
                             "HTTPS_PROXY", "all_proxy",   "ALL_PROXY"};
    for (size_t i = 0; i < sizeof proxies / sizeof proxies[0]; i++)
        unsetenv(proxies[i]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_channel_lists),
        cmocka_unit_test(test_capabilities),
        cmocka_unit_test(test_pool_sizes),
        cmocka_unit_test(test_sender_serves_its_channels),
        cmocka_unit_test(test_credit_per_channel),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
