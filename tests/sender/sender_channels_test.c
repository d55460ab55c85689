/*  sender_channels_test.c — the channels a sender serves: the names it
    takes, the capabilities its HELLO says, and the sender actor routing
    each message to its channel's transport, giving back one of a channel
    it does not serve, and passing a receiver's Retry-After on in its NACK.

    The actor runs against a stand-in dispatcher of the same system (the
    sender addresses it by its local path), which welcomes it with
    protocol 2 and writes down the HELLO, the ACKs and the NACKs. Its
    channels: email of the null kind (delivered by the sender actor
    itself), http to tests/e2e/http_sink.py, sms through a shell script.
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
                                  .channels = {{"email", {.kind = "smtp"}},
                                               {"http", {.kind = "http"}},
                                               {"sms", {.kind = "exec"}},
                                               {"push", {.kind = "exec"}}}};
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
        config.channels[i] = (fq_sender_channel_t){long_names[i], {.kind = "exec"}};
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
    config.channels[0] = (fq_sender_channel_t){"email", {.kind = "null"}};
    config.channels[1] = (fq_sender_channel_t){"Bad Name", {.kind = "null"}};
    assert_int_equal(fq_sender_start(sys, &config), FQ_EINVAL);
    config.channels[1] = (fq_sender_channel_t){"email", {.kind = "null"}};
    assert_int_equal(fq_sender_start(sys, &config), FQ_EINVAL);
    fq_system_destroy(&sys);
}

// --------------------------------------------------------------------------
//  The stand-in dispatcher

typedef struct {
    uint64_t id;
    bool permanent;
    char error[S_ERROR_SIZE];
    uint32_t retry_after_s;
} s_nack_t;

//  What the dispatcher saw, shared with the test's thread.
typedef struct {
    pthread_mutex_t lock;
    char capabilities[S_LINE_SIZE];
    int credits;
    uint64_t acks[S_ACKS_MAX];
    int nacks_ok;
    s_nack_t nacks[S_NACKS_MAX];
    int nnacks;
} s_seen_t;

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
        if (fq_msg_decode(msg, &fq_hello_desc, &hello) == 0)
            snprintf(seen->capabilities, sizeof seen->capabilities, "%s", hello.capabilities);
    } else if (msg->type == FQ_MSG_CREDIT)
        seen->credits++;
    else if (msg->type == FQ_MSG_ACKS) {
        fq_sender_acks_t acks;
        if (fq_msg_decode(msg, &fq_sender_acks_desc, &acks) == 0)
            for (uint32_t i = 0; i < acks.ids.count && seen->nacks_ok < S_ACKS_MAX; i++)
                seen->acks[seen->nacks_ok++] = acks.ids.items[i];
    } else if (msg->type == FQ_MSG_NACK) {
        fq_sender_nack_t nack;
        if (fq_msg_decode(msg, &fq_sender_nack_desc, &nack) == 0 && seen->nnacks < S_NACKS_MAX) {
            s_nack_t *into = &seen->nacks[seen->nnacks++];
            into->id = nack.id;
            into->permanent = nack.permanent;
            snprintf(into->error, sizeof into->error, "%s", nack.error);
            into->retry_after_s = nack.retry_after_s;
        }
    }
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

//  3. The sender says its channels in HELLO, delivers each message by
//  its channel's transport, gives back one of another channel (transient,
//  saying so), and passes a receiver's Retry-After on in its NACK.
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

    //  sms through its script: exit 75, transient
    msg = s_message(3, "sms", "+15551234567");
    assert_int_equal(fq_client_tell(client, FQ_SENDER_PATH, &fq_message_desc, &msg), 0);
    assert_false(s_outcome(&seen, 3, &nack));
    assert_false(nack.permanent);
    assert_string_equal(nack.error, "exit 75: sms gateway busy");

    //  http: 429 with Retry-After 7, which the NACK carries; then a 400
    char url[S_PATH_SIZE];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/hook?status=429&retry_after=7&body=slow", port);
    msg = s_message(4, "http", url);
    assert_int_equal(fq_client_tell(client, FQ_SENDER_PATH, &fq_message_desc, &msg), 0);
    assert_false(s_outcome(&seen, 4, &nack));
    assert_false(nack.permanent);
    assert_string_equal(nack.error, "HTTP 429: slow");
    assert_int_equal(nack.retry_after_s, 7);
    snprintf(url, sizeof url, "http://127.0.0.1:%d/hook?status=400&body=no", port);
    msg = s_message(5, "http", url);
    assert_int_equal(fq_client_tell(client, FQ_SENDER_PATH, &fq_message_desc, &msg), 0);
    assert_false(s_outcome(&seen, 5, &nack));
    assert_true(nack.permanent);
    assert_string_equal(nack.error, "HTTP 400: no");
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
        cmocka_unit_test(test_sender_serves_its_channels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
