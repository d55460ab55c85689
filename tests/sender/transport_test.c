/*  transport_test.c — delivering messages, against a real SMTP server.

    Each SMTP test starts tests/e2e/smtp_sink.py (aiosmtpd) on a free port
    with an empty rules file, delivers through fq_transport and checks
    what the sink wrote down: one JSON line per accepted message, with the
    number of the connection that carried it. Tests change the sink's
    answers mid-run by replacing its rules file, to see each kind of
    failure classified as fairq-sender will retry it (TRANSIENT), retry it
    without counting an attempt because the server throttles (THROTTLED)
    or could not be reached (UNREACHABLE), or give it up (PERMANENT), and
    the server's own words in the error. The rules of fq_smtp_classify
    are tested on their own too, reply by reply.

    The sink runs with --quit-on-eof (fq_test_process.h): no test leaves a
    server behind.
*/
#include "fq_transport.h"
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include "fq_test_ports.h"
#include "fq_test_process.h"
#include "fq_test_sink_records.h"
#include "fq_transport_smtp.h"

//  How long the sink may take to start listening: Python and aiosmtpd
//  load in well under a second, but tests run in parallel under ASan.
#define S_READY_TIMEOUT_MS 20000

//  How long a sink or a Python check may take to exit once asked.
#define S_EXIT_TIMEOUT_MS 10000

//  The per-delivery timeout of the transports under test: generous, as
//  nothing here should come near it but the stall test.
#define S_DELIVERY_TIMEOUT_MS 15000

//  The stall test: the sink waits this long before answering RCPT, the
//  transport gives up after S_SHORT_TIMEOUT_MS.
#define S_STALL_S          5
#define S_SHORT_TIMEOUT_MS 500

//  Deliveries over one kept connection in the reuse test.
#define S_REUSE_COUNT 3

//  Room for a "ready PORT" line, a URL, a path, a rules file.
#define S_LINE_SIZE  128
#define S_RULES_SIZE 2048
#define S_URL_SIZE   64
#define S_PATH_SIZE  (2 * S_LINE_SIZE)

#define S_ERROR_SIZE FQ_TRANSPORT_ERROR_SIZE

#define S_MS_PER_S FQ_TEST_MS_PER_S

//  A body line far longer than the 76 characters of an encoded line, of
//  the letters a to z over and over.
#define S_LONG_LINE 2000
#define S_LETTERS   26

typedef struct {
    pid_t pid;
    int in;  //  Our end of its stdin: closing it stops the sink
    int out; //  Our end of its stdout: "ready PORT"
    int port;
    const char *auth; //  --auth USER:PASSWORD, or NULL
    char dir[S_LINE_SIZE];
    char out_path[S_PATH_SIZE];
    char rules_path[S_PATH_SIZE];
    char url[S_URL_SIZE];
} s_sink_t;

// --------------------------------------------------------------------------
//  The sink

//  Starts the sink on sink->port (0: any free port) and waits until it
//  listens.
static void s_sink_start(s_sink_t *sink)
{
    char port[S_LINE_SIZE];
    snprintf(port, sizeof port, "%d", sink->port);
    //  --auth USER:PASSWORD last, when the test wants AUTH
    char *argv[] = {FQ_TEST_PYTHON,
                    FQ_SMTP_SINK,
                    "--port",
                    port,
                    "--out",
                    sink->out_path,
                    "--rules",
                    sink->rules_path,
                    "--quit-on-eof",
                    sink->auth ? "--auth" : NULL,
                    (char *)sink->auth,
                    NULL};
    sink->pid = fq_test_spawn(argv, &sink->in, &sink->out);
    char line[S_LINE_SIZE];
    if (fq_test_read_line(sink->out, line, sizeof line, S_READY_TIMEOUT_MS) != 0 ||
        sscanf(line, "ready %d", &sink->port) != 1)
        fail_msg("smtp sink did not start within %d ms", S_READY_TIMEOUT_MS);
    snprintf(sink->url, sizeof sink->url, "smtp://127.0.0.1:%d", sink->port);
}

//  Stops the sink: end of its stdin, then a clean exit.
static int s_sink_stop(s_sink_t *sink)
{
    int status = 0;
    if (sink->pid > 0) {
        close(sink->in);
        status = fq_test_wait(sink->pid, S_EXIT_TIMEOUT_MS);
        close(sink->out);
        sink->pid = 0;
    }
    return status;
}

static int s_setup_with(void **state, const char *auth)
{
    s_sink_t *sink = calloc(1, sizeof *sink);
    assert_non_null(sink);
    sink->auth = auth;
    snprintf(sink->dir, sizeof sink->dir, "/tmp/fq_transport_test.XXXXXX");
    assert_non_null(mkdtemp(sink->dir));
    snprintf(sink->out_path, sizeof sink->out_path, "%s/out.jsonl", sink->dir);
    snprintf(sink->rules_path, sizeof sink->rules_path, "%s/rules.json", sink->dir);
    *state = sink;
    s_sink_start(sink);
    return 0;
}

static int s_setup(void **state)
{
    return s_setup_with(state, NULL);
}

//  A sink that offers AUTH and takes only this user.
#define S_USER     "fairq"
#define S_PASSWORD "s3cret"
static int s_setup_auth(void **state)
{
    return s_setup_with(state, S_USER ":" S_PASSWORD);
}

static int s_teardown(void **state)
{
    s_sink_t *sink = *state;
    int status = s_sink_stop(sink);
    const char *files[] = {"out.jsonl", "rules.json", "mbox", NULL};
    char path[S_PATH_SIZE];
    for (int i = 0; files[i]; i++) {
        snprintf(path, sizeof path, "%s/%s", sink->dir, files[i]);
        unlink(path);
    }
    rmdir(sink->dir);
    free(sink);
    //  The sink must have exited cleanly, by itself
    return status == 0 ? 0 : -1;
}

//  Replaces the sink's rules: a new file renamed over the old, which the
//  sink sees at its next command (smtp_sink.py explains why a rename).
static void s_sink_rules(s_sink_t *sink, const char *json)
{
    char tmp[S_PATH_SIZE + S_LINE_SIZE];
    snprintf(tmp, sizeof tmp, "%s.tmp", sink->rules_path);
    FILE *file = fopen(tmp, "w");
    assert_non_null(file);
    assert_true(fputs(json, file) >= 0);
    assert_int_equal(fclose(file), 0);
    assert_int_equal(rename(tmp, sink->rules_path), 0);
}

static json_int_t s_conn(json_t *record)
{
    return json_integer_value(json_object_get(record, "conn"));
}

// --------------------------------------------------------------------------
//  Transports and messages

static fq_transport_t *s_smtp(s_sink_t *sink)
{
    fq_transport_config_t cfg = {
        .kind = "smtp", .url = sink->url, .timeout_ms = S_DELIVERY_TIMEOUT_MS};
    char error[S_ERROR_SIZE];
    fq_transport_t *transport = fq_transport_new(&cfg, error, sizeof error);
    if (!transport)
        fail_msg("smtp transport refused: %s", error);
    return transport;
}

static fq_delivery_t s_message(uint64_t id, const char *to)
{
    return (fq_delivery_t){
        .id = id,
        .tenant = "acme",
        .request_id = 7,
        .attempt = 1,
        .to = to,
        .from = "Shop <shop@example.com>",
        .subject = "Your order",
        .body = "Hello,\nyour order has shipped.\n",
    };
}

//  Delivers msg, expecting result; returns the error text (static).
static const char *s_deliver(fq_transport_t *transport, const fq_delivery_t *msg,
                             fq_delivery_result_t expected)
{
    static char error[S_ERROR_SIZE];
    uint32_t retry_after_s = 1;
    fq_delivery_result_t result =
        fq_transport_deliver(transport, msg, &retry_after_s, error, sizeof error);
    //  Mail has no Retry-After
    assert_int_equal(retry_after_s, 0);
    if (result != expected)
        fail_msg("delivery to %s: result %d, expected %d (%s)", msg->to, result, expected, error);
    if (expected == FQ_DELIVERY_OK)
        assert_string_equal(error, "");
    else {
        assert_true(strlen(error) > 0);
        assert_null(strpbrk(error, "\r\n"));
    }
    return error;
}

static void s_expect_contains(const char *text, const char *part)
{
    if (!strstr(text, part))
        fail_msg("\"%s\" does not hold \"%s\"", text, part);
}

// --------------------------------------------------------------------------
//  SMTP

//  1. A message arrives whole: envelope, decoded subject and body, the
//  stable Message-ID, extra headers, the EHLO name.
static void test_smtp_delivers(void **state)
{
    s_sink_t *sink = *state;
    fq_transport_config_t cfg = {.kind = "smtp",
                                 .url = sink->url,
                                 .helo = "sender-1.fairq.test",
                                 .timeout_ms = S_DELIVERY_TIMEOUT_MS};
    char error[S_ERROR_SIZE];
    fq_transport_t *transport = fq_transport_new(&cfg, error, sizeof error);
    assert_non_null(transport);

    //  A body with what SMTP and mail readers trip on: a lone "." line
    //  (libcurl doubles leading dots), 8-bit text, a very long line
    static char body[2 * S_LONG_LINE];
    char *at = body + sprintf(body, "Grüße!\n.\n..two dots\nFrom here\n");
    for (int i = 0; i < S_LONG_LINE; i++)
        *at++ = (char)('a' + i % S_LETTERS);
    strcpy(at, "\nend\n");
    const char *names[] = {"X-Campaign"};
    const char *values[] = {"spring"};
    fq_delivery_t msg = s_message(1001, "Ann Lee <ann@example.org>");
    msg.subject = "Café ☕ order";
    msg.body = body;
    msg.nheaders = 1;
    msg.header_names = names;
    msg.header_values = values;
    s_deliver(transport, &msg, FQ_DELIVERY_OK);

    json_t *messages = fq_test_sink_records(sink->out_path);
    assert_int_equal(json_array_size(messages), 1);
    json_t *record = json_array_get(messages, 0);
    assert_string_equal(fq_test_record_field(record, "from"), "shop@example.com");
    json_t *to = json_object_get(record, "to");
    assert_int_equal(json_array_size(to), 1);
    assert_string_equal(json_string_value(json_array_get(to, 0)), "ann@example.org");
    assert_string_equal(fq_test_record_field(record, "subject"), "Café ☕ order");
    assert_string_equal(fq_test_record_field(record, "message_id"), "<fairq.1001@example.com>");
    assert_string_equal(fq_test_record_field(record, "body"), body);
    assert_string_equal(fq_test_record_field(record, "helo"), "sender-1.fairq.test");
    json_t *headers = json_object_get(record, "headers");
    assert_string_equal(json_string_value(json_object_get(headers, "X-Campaign")), "spring");
    assert_string_equal(json_string_value(json_object_get(headers, "To")),
                        "Ann Lee <ann@example.org>");
    json_decref(messages);
    fq_transport_destroy(&transport);
    fq_transport_destroy(&transport); //  Safe twice
    assert_null(transport);
}

//  2. One transport, several messages, one connection.
static void test_smtp_reuses_connection(void **state)
{
    s_sink_t *sink = *state;
    fq_transport_t *transport = s_smtp(sink);
    for (int i = 0; i < S_REUSE_COUNT; i++) {
        fq_delivery_t msg = s_message(2000 + (uint64_t)i, "ann@example.org");
        s_deliver(transport, &msg, FQ_DELIVERY_OK);
    }
    json_t *messages = fq_test_sink_records(sink->out_path);
    assert_int_equal(json_array_size(messages), S_REUSE_COUNT);
    for (int i = 0; i < S_REUSE_COUNT; i++) {
        json_t *record = json_array_get(messages, (size_t)i);
        assert_int_equal(s_conn(record), 1);
        char id[S_LINE_SIZE];
        snprintf(id, sizeof id, "<fairq.%d@example.com>", 2000 + i);
        assert_string_equal(fq_test_record_field(record, "message_id"), id);
    }
    json_decref(messages);
    fq_transport_destroy(&transport);
}

//  3. A 4xx reply, at RCPT or after the data, is transient and the error
//  is the server's reply; when the server accepts again, so does it.
static void test_smtp_transient(void **state)
{
    s_sink_t *sink = *state;
    fq_transport_t *transport = s_smtp(sink);
    s_sink_rules(sink, "{\"rules\": [{\"match\": \"busy@\", \"reply\": \"451 4.3.0 try later\"}]}");
    fq_delivery_t msg = s_message(3001, "busy@example.org");
    const char *error = s_deliver(transport, &msg, FQ_DELIVERY_TRANSIENT);
    assert_string_equal(error, "451 4.3.0 try later");

    //  Now the whole server defers, after reading each message
    s_sink_rules(sink, "{\"default\": \"451 4.3.0 local error in processing\"}");
    msg = s_message(3002, "ann@example.org");
    error = s_deliver(transport, &msg, FQ_DELIVERY_TRANSIENT);
    assert_string_equal(error, "451 4.3.0 local error in processing");
    json_t *messages = fq_test_sink_records(sink->out_path);
    assert_int_equal(json_array_size(messages), 0);
    json_decref(messages);

    //  The server recovers: the retry goes through
    s_sink_rules(sink, "{}");
    msg.attempt = 2;
    s_deliver(transport, &msg, FQ_DELIVERY_OK);
    messages = fq_test_sink_records(sink->out_path);
    assert_int_equal(json_array_size(messages), 1);
    assert_string_equal(fq_test_record_field(json_array_get(messages, 0), "message_id"),
                        "<fairq.3002@example.com>");
    json_decref(messages);
    fq_transport_destroy(&transport);
}

//  4. A 5xx reply about the message is permanent, with the server's text;
//  the transport goes on with the next message, on a new connection.
static void test_smtp_permanent(void **state)
{
    s_sink_t *sink = *state;
    fq_transport_t *transport = s_smtp(sink);
    s_sink_rules(sink, "{\"rules\": ["
                       "{\"match\": \"nobody@\", \"reply\": \"550 5.1.1 no such user\"},"
                       "{\"match\": \"spam@\", \"reply\": \"554 5.7.1 message refused\","
                       " \"at\": \"data\"}]}");
    fq_delivery_t msg = s_message(4001, "ann@example.org");
    s_deliver(transport, &msg, FQ_DELIVERY_OK);
    msg = s_message(4002, "nobody@example.org");
    const char *error = s_deliver(transport, &msg, FQ_DELIVERY_PERMANENT);
    assert_string_equal(error, "550 5.1.1 no such user");
    msg = s_message(4003, "spam@example.org");
    error = s_deliver(transport, &msg, FQ_DELIVERY_PERMANENT);
    assert_string_equal(error, "554 5.7.1 message refused");
    msg = s_message(4004, "ann@example.org");
    s_deliver(transport, &msg, FQ_DELIVERY_OK);

    json_t *messages = fq_test_sink_records(sink->out_path);
    assert_int_equal(json_array_size(messages), 2);
    //  libcurl closed the connection after the refused RCPT
    assert_true(s_conn(json_array_get(messages, 1)) > s_conn(json_array_get(messages, 0)));
    json_decref(messages);
    fq_transport_destroy(&transport);
}

//  5. No connection made: UNREACHABLE, with libcurl's reason. Nobody
//  listening (refused at once), a host that never answers (the connect
//  timeout strikes), a name that does not resolve.
static void test_smtp_unreachable(void **state)
{
    (void)state;
    fq_test_port_t refusing, silent;
    fq_test_port_refusing(&refusing);
    fq_test_port_silent(&silent);
    char refusing_url[S_URL_SIZE], silent_url[S_URL_SIZE];
    snprintf(refusing_url, sizeof refusing_url, "smtp://127.0.0.1:%d", refusing.port);
    snprintf(silent_url, sizeof silent_url, "smtp://127.0.0.1:%d", silent.port);
    const struct {
        const char *url;
        const char *reason;
    } cases[] = {
        {refusing_url, "onnect"},
        {silent_url, "ime"}, //  "timed out", or "Timeout was reached"
        //  .invalid never resolves (RFC 6761); a resolver that takes too
        //  long to say so times out, unreachable as well
        {"smtp://fairq-test.invalid:25", "resolv"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fq_transport_config_t cfg = {
            .kind = "smtp", .url = cases[i].url, .timeout_ms = S_SHORT_TIMEOUT_MS};
        char error[S_ERROR_SIZE];
        fq_transport_t *transport = fq_transport_new(&cfg, error, sizeof error);
        assert_non_null(transport);
        fq_delivery_t msg = s_message(5001 + i, "ann@example.org");
        const char *reason = s_deliver(transport, &msg, FQ_DELIVERY_UNREACHABLE);
        s_expect_contains(reason, cases[i].reason);
        fq_transport_destroy(&transport);
    }
    fq_test_port_close(&refusing);
    fq_test_port_close(&silent);
}

//  5b. TLS that fails is not UNREACHABLE: the server answered, and a
//  certificate or a setting is wrong, which no waiting cures. smtps://
//  to the sink, which speaks SMTP in clear: transient.
static void test_smtp_tls_failure_transient(void **state)
{
    s_sink_t *sink = *state;
    char url[S_URL_SIZE];
    snprintf(url, sizeof url, "smtps://127.0.0.1:%d", sink->port);
    fq_transport_config_t cfg = {.kind = "smtp", .url = url, .timeout_ms = S_DELIVERY_TIMEOUT_MS};
    char error[S_ERROR_SIZE];
    fq_transport_t *transport = fq_transport_new(&cfg, error, sizeof error);
    assert_non_null(transport);
    fq_delivery_t msg = s_message(5101, "ann@example.org");
    s_deliver(transport, &msg, FQ_DELIVERY_TRANSIENT);
    fq_transport_destroy(&transport);
}

//  6. A server that stalls: the delivery times out, transient (not
//  unreachable: the connection was made).
static void test_smtp_timeout(void **state)
{
    s_sink_t *sink = *state;
    char rules[S_LINE_SIZE * 2];
    snprintf(rules, sizeof rules,
             "{\"rules\": [{\"match\": \"slow@\", \"reply\": \"250 OK\", \"delay\": %d}]}",
             S_STALL_S);
    s_sink_rules(sink, rules);
    fq_transport_config_t cfg = {
        .kind = "smtp", .url = sink->url, .timeout_ms = S_SHORT_TIMEOUT_MS};
    char error[S_ERROR_SIZE];
    fq_transport_t *transport = fq_transport_new(&cfg, error, sizeof error);
    assert_non_null(transport);
    fq_delivery_t msg = s_message(6001, "slow@example.org");
    int64_t start = fq_test_now_ms();
    const char *reason = s_deliver(transport, &msg, FQ_DELIVERY_TRANSIENT);
    assert_true(fq_test_now_ms() - start < S_STALL_S * S_MS_PER_S);
    s_expect_contains(reason, "timed out");
    fq_transport_destroy(&transport);
}

//  7. The server restarts between two messages: the kept connection is
//  dead, the next message goes over a new one.
static void test_smtp_server_restart(void **state)
{
    s_sink_t *sink = *state;
    fq_transport_t *transport = s_smtp(sink);
    fq_delivery_t msg = s_message(7001, "ann@example.org");
    s_deliver(transport, &msg, FQ_DELIVERY_OK);
    assert_int_equal(s_sink_stop(sink), 0);
    s_sink_start(sink); //  Same port, connections numbered from 1 again
    msg = s_message(7002, "ann@example.org");
    s_deliver(transport, &msg, FQ_DELIVERY_OK);
    json_t *messages = fq_test_sink_records(sink->out_path);
    assert_int_equal(json_array_size(messages), 2);
    assert_int_equal(s_conn(json_array_get(messages, 1)), 1);
    json_decref(messages);
    fq_transport_destroy(&transport);
}

//  8. The server hangs up as a kept connection is reused (its idle
//  timeout struck just then): no command was answered, so the transport
//  tries again at once on a new connection, and the message goes.
static void test_smtp_hangup_on_reuse(void **state)
{
    s_sink_t *sink = *state;
    const char *hangup = "{\"rules\": [{\"at\": \"mail\", \"match\": \"shop@\","
                         " \"reply\": \"disconnect\", \"times\": 1}]}";
    fq_transport_t *transport = s_smtp(sink);
    fq_delivery_t msg = s_message(7501, "ann@example.org");
    s_deliver(transport, &msg, FQ_DELIVERY_OK);
    s_sink_rules(sink, hangup);
    msg = s_message(7502, "ann@example.org");
    s_deliver(transport, &msg, FQ_DELIVERY_OK);
    json_t *messages = fq_test_sink_records(sink->out_path);
    assert_int_equal(json_array_size(messages), 2);
    assert_int_equal(s_conn(json_array_get(messages, 0)), 1);
    assert_int_equal(s_conn(json_array_get(messages, 1)), 2);
    json_decref(messages);
    fq_transport_destroy(&transport);

    //  On a new connection a hang-up is not retried: that server is in
    //  trouble, and the delivery is transient. (New rules, so that the
    //  sink counts "times" afresh.)
    s_sink_rules(sink, "{\"rules\": [{\"at\": \"mail\", \"match\": \"shop@example.com\","
                       " \"reply\": \"disconnect\", \"times\": 1}]}");
    transport = s_smtp(sink);
    msg = s_message(7503, "ann@example.org");
    s_deliver(transport, &msg, FQ_DELIVERY_TRANSIENT);
    fq_transport_destroy(&transport);
}

//  9. AUTH: the right password delivers; a wrong one is the sender's
//  configuration, not the message's fault: transient, with the reply.
static void test_smtp_auth(void **state)
{
    s_sink_t *sink = *state;
    fq_transport_config_t cfg = {.kind = "smtp",
                                 .url = sink->url,
                                 .username = S_USER,
                                 .password = S_PASSWORD,
                                 .timeout_ms = S_DELIVERY_TIMEOUT_MS};
    char error[S_ERROR_SIZE];
    fq_transport_t *transport = fq_transport_new(&cfg, error, sizeof error);
    assert_non_null(transport);
    fq_delivery_t msg = s_message(8001, "ann@example.org");
    s_deliver(transport, &msg, FQ_DELIVERY_OK);
    fq_transport_destroy(&transport);

    cfg.password = "wrong";
    transport = fq_transport_new(&cfg, error, sizeof error);
    assert_non_null(transport);
    msg = s_message(8002, "ann@example.org");
    const char *reason = s_deliver(transport, &msg, FQ_DELIVERY_TRANSIENT);
    s_expect_contains(reason, "535");
    fq_transport_destroy(&transport);

    json_t *messages = fq_test_sink_records(sink->out_path);
    assert_int_equal(json_array_size(messages), 1);
    assert_string_equal(fq_test_record_field(json_array_get(messages, 0), "auth"), S_USER);
    json_decref(messages);
}

//  10. starttls = "require" and a server without STARTTLS: nothing is
//  sent in clear; transient, since it is the configuration's fault.
static void test_smtp_starttls_required(void **state)
{
    s_sink_t *sink = *state;
    fq_transport_config_t cfg = {.kind = "smtp",
                                 .url = sink->url,
                                 .starttls = "require",
                                 .timeout_ms = S_DELIVERY_TIMEOUT_MS};
    char error[S_ERROR_SIZE];
    fq_transport_t *transport = fq_transport_new(&cfg, error, sizeof error);
    assert_non_null(transport);
    fq_delivery_t msg = s_message(9001, "ann@example.org");
    s_deliver(transport, &msg, FQ_DELIVERY_TRANSIENT);
    json_t *messages = fq_test_sink_records(sink->out_path);
    assert_int_equal(json_array_size(messages), 0);
    json_decref(messages);
    fq_transport_destroy(&transport);
}

//  11. A message that cannot be rendered fails for good, before any
//  connection: retrying would render it no better.
static void test_smtp_bad_message_permanent(void **state)
{
    s_sink_t *sink = *state;
    fq_transport_t *transport = s_smtp(sink);
    fq_delivery_t msg = s_message(10001, "ann@example.org");
    msg.subject = "Hi\r\nBcc: everyone@example.org";
    const char *reason = s_deliver(transport, &msg, FQ_DELIVERY_PERMANENT);
    s_expect_contains(reason, "subject");
    msg = s_message(10002, "ann@example.org, bob@example.org");
    s_deliver(transport, &msg, FQ_DELIVERY_PERMANENT);
    json_t *messages = fq_test_sink_records(sink->out_path);
    assert_int_equal(json_array_size(messages), 0);
    json_decref(messages);
    fq_transport_destroy(&transport);
}

//  12. Replies that throttle, at each stage of the transaction, each
//  THROTTLED with the server's words as the error, beside those that do
//  not: a plain 4xx, one of a recipient's mailbox, a 5xx.
static void test_smtp_throttled(void **state)
{
    s_sink_t *sink = *state;
    static const struct {
        const char *to; //  The rule's match, and the recipient
        const char *at;
        const char *reply;
        fq_delivery_result_t expected;
    } cases[] = {
        {"gmail@", "rcpt", "421 4.7.28 rate limited, try again later", FQ_DELIVERY_THROTTLED},
        {"outlook@", "rcpt", "451 4.7.500 Server busy. Please try again later",
         FQ_DELIVERY_THROTTLED},
        {"greylist@", "data", "451 4.7.1 please try again later", FQ_DELIVERY_THROTTLED},
        {"later@", "rcpt", "451 4.3.0 try later", FQ_DELIVERY_TRANSIENT},
        {"storage@", "data", "452 4.3.1 insufficient system storage", FQ_DELIVERY_THROTTLED},
        {"quota@", "rcpt", "452 4.2.2 mailbox full", FQ_DELIVERY_TRANSIENT},
        {"ses@", "data", "454 Throttling failure: Maximum sending rate exceeded",
         FQ_DELIVERY_THROTTLED},
        {"crowd@", "rcpt", "450 4.4.5 Too Many connections from your address",
         FQ_DELIVERY_THROTTLED},
        {"nobody@", "rcpt", "550 5.1.1 no such user", FQ_DELIVERY_PERMANENT},
    };
    //  At MAIL too: the sender's address matches there
    char rules[S_RULES_SIZE] = "{\"rules\": [{\"at\": \"mail\", \"match\": \"shop@\", "
                               "\"reply\": \"421 4.3.2 service shutting down\", \"times\": 1}";
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t used = strlen(rules);
        snprintf(rules + used, sizeof rules - used,
                 ", {\"at\": \"%s\", \"match\": \"%s\", \"reply\": \"%s\"}", cases[i].at,
                 cases[i].to, cases[i].reply);
    }
    strcat(rules, "]}");
    s_sink_rules(sink, rules);
    fq_transport_t *transport = s_smtp(sink);
    fq_delivery_t msg = s_message(12001, "ann@example.org");
    const char *error = s_deliver(transport, &msg, FQ_DELIVERY_THROTTLED);
    assert_string_equal(error, "421 4.3.2 service shutting down");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char to[S_LINE_SIZE];
        snprintf(to, sizeof to, "%sexample.org", cases[i].to);
        msg = s_message(12002 + i, to);
        error = s_deliver(transport, &msg, cases[i].expected);
        assert_string_equal(error, cases[i].reply);
    }
    //  And the server takes mail again, on the same transport
    msg = s_message(12100, "ann@example.org");
    s_deliver(transport, &msg, FQ_DELIVERY_OK);
    json_t *messages = fq_test_sink_records(sink->out_path);
    assert_int_equal(json_array_size(messages), 1);
    json_decref(messages);
    fq_transport_destroy(&transport);
}

//  13. A server that turns us away at the greeting: a 421 throttles (and
//  the next connection, greeted, delivers); a 554 refuses the session,
//  which is the sender's configuration or the server's, never the
//  message's: transient.
static void test_smtp_greeting(void **state)
{
    s_sink_t *sink = *state;
    s_sink_rules(sink, "{\"rules\": [{\"at\": \"connect\", "
                       "\"reply\": \"421 4.7.0 too busy, come back later\", \"times\": 1}]}");
    fq_transport_t *transport = s_smtp(sink);
    fq_delivery_t msg = s_message(13001, "ann@example.org");
    const char *error = s_deliver(transport, &msg, FQ_DELIVERY_THROTTLED);
    assert_string_equal(error, "421 4.7.0 too busy, come back later");
    msg = s_message(13002, "ann@example.org");
    s_deliver(transport, &msg, FQ_DELIVERY_OK);
    fq_transport_destroy(&transport);

    s_sink_rules(sink, "{\"rules\": [{\"at\": \"connect\", "
                       "\"reply\": \"554 5.7.1 no SMTP service here\"}]}");
    transport = s_smtp(sink);
    msg = s_message(13003, "ann@example.org");
    error = s_deliver(transport, &msg, FQ_DELIVERY_TRANSIENT);
    assert_string_equal(error, "554 5.7.1 no SMTP service here");
    fq_transport_destroy(&transport);
    json_t *messages = fq_test_sink_records(sink->out_path);
    assert_int_equal(json_array_size(messages), 1);
    json_decref(messages);
}

//  14. fq_smtp_classify on its own: code, text, stage.
static void test_smtp_classify(void **unused)
{
    (void)unused;
    static const struct {
        long code;
        const char *reply;
        bool in_transaction;
        fq_delivery_result_t expected;
    } cases[] = {
        //  5xx: the message's (permanent) or the session's (transient)
        {550, "550 5.1.1 no such user", true, FQ_DELIVERY_PERMANENT},
        {554, "554 5.7.1 rate limit exceeded", true, FQ_DELIVERY_PERMANENT},
        {535, "535 5.7.8 authentication failed", false, FQ_DELIVERY_TRANSIENT},
        {554, "554 no service", false, FQ_DELIVERY_TRANSIENT},
        //  421: always, at the greeting as anywhere
        {421, "421 4.7.0 [TSS04] Messages temporarily deferred", false, FQ_DELIVERY_THROTTLED},
        {421, "421 closing", true, FQ_DELIVERY_THROTTLED},
        {421, "421 4.2.2 mailbox full", true, FQ_DELIVERY_THROTTLED},
        {421, "421", false, FQ_DELIVERY_THROTTLED},
        //  451: with 4.7.x only, or words that throttle
        {451, "451 4.7.500 Server busy", true, FQ_DELIVERY_THROTTLED},
        {451, "451-4.7.650 The mail server has been temporarily rate limited 451 4.7.650 more",
         true, FQ_DELIVERY_THROTTLED},
        {451, "451 4.7.1 Greylisted", true, FQ_DELIVERY_THROTTLED},
        {451, "451 4.3.0 try later", true, FQ_DELIVERY_TRANSIENT},
        {451, "451 4.4.7 message delayed", true, FQ_DELIVERY_TRANSIENT},
        {451, "451 local error", true, FQ_DELIVERY_TRANSIENT},
        {451, "451 5.7.1 a class not the reply's", true, FQ_DELIVERY_TRANSIENT},
        {451, "451 4.77 not a code", true, FQ_DELIVERY_TRANSIENT},
        {451, "451 4.7. not a code", true, FQ_DELIVERY_TRANSIENT},
        {451, "451 4.7", true, FQ_DELIVERY_TRANSIENT},
        {451, "451 Rate Limit exceeded", true, FQ_DELIVERY_THROTTLED},
        //  452, 454: throttled, but for a recipient's mailbox
        {452, "452 4.3.1 insufficient system storage", true, FQ_DELIVERY_THROTTLED},
        {452, "452 4.5.3 Too many recipients", true, FQ_DELIVERY_THROTTLED},
        {452, "452 too busy", true, FQ_DELIVERY_THROTTLED},
        {452, "452 4.2.2 The email account that you tried to reach is over quota", true,
         FQ_DELIVERY_TRANSIENT},
        {454, "454 Throttling failure: Maximum sending rate exceeded", true, FQ_DELIVERY_THROTTLED},
        {454, "454 4.7.0 TLS not available due to temporary reason", false, FQ_DELIVERY_THROTTLED},
        //  Other 4xx: by their words
        {450, "450 4.7.1 Client host rejected: too many connections", true, FQ_DELIVERY_THROTTLED},
        {450, "450 4.2.1 too many messages for this mailbox", true, FQ_DELIVERY_TRANSIENT},
        {450, "450 sending ratelimit reached", true, FQ_DELIVERY_THROTTLED},
        {450, "450 rate-limited", true, FQ_DELIVERY_THROTTLED},
        {450, "450 4.7.1 you are being THROTTLED", true, FQ_DELIVERY_THROTTLED},
        {450, "450 4.2.0 Greylisted, see http://postgrey.schweikert.ch/", true,
         FQ_DELIVERY_TRANSIENT},
        {450, "450 4.1.8 sender domain not found", true, FQ_DELIVERY_TRANSIENT},
        {471, "471 unknown", true, FQ_DELIVERY_TRANSIENT},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fq_delivery_result_t result =
            fq_smtp_classify(cases[i].code, cases[i].reply, cases[i].in_transaction);
        if (result != cases[i].expected)
            fail_msg("\"%s\" (%s): %d, expected %d", cases[i].reply,
                     cases[i].in_transaction ? "transaction" : "session", result,
                     cases[i].expected);
    }
}

//  15. fq_transport_curl_failure on its own: what a failure without a
//  reply counts as, connected or not.
static void test_curl_failure_classify(void **unused)
{
    (void)unused;
    assert_int_equal(fq_transport_curl_failure(CURLE_COULDNT_CONNECT, false),
                     FQ_DELIVERY_UNREACHABLE);
    assert_int_equal(fq_transport_curl_failure(CURLE_COULDNT_RESOLVE_HOST, false),
                     FQ_DELIVERY_UNREACHABLE);
    assert_int_equal(fq_transport_curl_failure(CURLE_OPERATION_TIMEDOUT, false),
                     FQ_DELIVERY_UNREACHABLE);
    //  Connected, then the time ran out: a slow server, not an absent one
    assert_int_equal(fq_transport_curl_failure(CURLE_OPERATION_TIMEDOUT, true),
                     FQ_DELIVERY_TRANSIENT);
    const CURLcode transient[] = {CURLE_SSL_CONNECT_ERROR,  CURLE_PEER_FAILED_VERIFICATION,
                                  CURLE_USE_SSL_FAILED,     CURLE_RECV_ERROR,
                                  CURLE_SEND_ERROR,         CURLE_GOT_NOTHING,
                                  CURLE_WEIRD_SERVER_REPLY, CURLE_OUT_OF_MEMORY};
    for (size_t i = 0; i < sizeof transient / sizeof transient[0]; i++) {
        assert_int_equal(fq_transport_curl_failure(transient[i], true), FQ_DELIVERY_TRANSIENT);
        assert_int_equal(fq_transport_curl_failure(transient[i], false), FQ_DELIVERY_TRANSIENT);
    }
}

// --------------------------------------------------------------------------
//  file and null

//  Runs Python's mailbox module over path: a JSON array of the messages
//  it finds, with their separator line, decoded subject and body.
static json_t *s_read_mbox(const char *path)
{
    char *argv[] = {FQ_TEST_PYTHON, "-c",
                    "import email.header, json, mailbox, sys\n"
                    "out = []\n"
                    "for m in mailbox.mbox(sys.argv[1]):\n"
                    "    subject = email.header.make_header(\n"
                    "        email.header.decode_header(m['Subject']))\n"
                    "    out.append({'from_line': m.get_from(), 'subject': str(subject),\n"
                    "                'message_id': m['Message-ID'],\n"
                    "                'body': m.get_payload(decode=True).decode('utf-8')})\n"
                    "print(json.dumps(out))\n",
                    (char *)path, NULL};
    int in, out;
    pid_t pid = fq_test_spawn(argv, &in, &out);
    close(in);
    char *text = NULL;
    size_t size = 0;
    FILE *stream = open_memstream(&text, &size);
    char chunk[S_LINE_SIZE];
    ssize_t got;
    while ((got = read(out, chunk, sizeof chunk)) > 0)
        fwrite(chunk, 1, (size_t)got, stream);
    fclose(stream);
    close(out);
    assert_int_equal(fq_test_wait(pid, S_EXIT_TIMEOUT_MS), 0);
    json_error_t error;
    json_t *messages = json_loads(text, 0, &error);
    if (!messages)
        fail_msg("mailbox output is not JSON (%s): %s", error.text, text);
    free(text);
    return messages;
}

//  16. The file kind appends mbox records that mail readers can read.
static void test_file_mbox(void **unused)
{
    (void)unused;
    char dir[] = "/tmp/fq_transport_mbox.XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[sizeof dir + S_LINE_SIZE];
    snprintf(path, sizeof path, "%s/mbox", dir);
    fq_transport_config_t cfg = {.kind = "file", .path = path};
    char error[S_ERROR_SIZE];
    fq_transport_t *transport = fq_transport_new(&cfg, error, sizeof error);
    assert_non_null(transport);
    fq_delivery_t msg = s_message(11001, "ann@example.org");
    msg.subject = "Café";
    msg.body = "First message\nFrom here, a line mbox must not split at\n";
    s_deliver(transport, &msg, FQ_DELIVERY_OK);
    msg = s_message(11002, "bob@example.org");
    msg.body = "Second message\n";
    s_deliver(transport, &msg, FQ_DELIVERY_OK);
    fq_transport_destroy(&transport);

    json_t *messages = s_read_mbox(path);
    assert_int_equal(json_array_size(messages), 2);
    json_t *first = json_array_get(messages, 0);
    assert_string_equal(fq_test_record_field(first, "subject"), "Café");
    assert_string_equal(fq_test_record_field(first, "message_id"), "<fairq.11001@example.com>");
    assert_string_equal(fq_test_record_field(first, "body"),
                        "First message\nFrom here, a line mbox must not split at\n");
    assert_true(strncmp(fq_test_record_field(first, "from_line"), "fairq@", strlen("fairq@")) == 0);
    json_t *second = json_array_get(messages, 1);
    assert_string_equal(fq_test_record_field(second, "message_id"), "<fairq.11002@example.com>");
    assert_string_equal(fq_test_record_field(second, "body"), "Second message\n");
    json_decref(messages);

    //  Appending: a new transport adds to the file, it does not replace it
    transport = fq_transport_new(&cfg, error, sizeof error);
    assert_non_null(transport);
    msg = s_message(11003, "cy@example.org");
    s_deliver(transport, &msg, FQ_DELIVERY_OK);
    fq_transport_destroy(&transport);
    messages = s_read_mbox(path);
    assert_int_equal(json_array_size(messages), 3);
    json_decref(messages);
    unlink(path);
    rmdir(dir);
}

//  17. The null kind accepts everything, bad messages included.
static void test_null_kind(void **unused)
{
    (void)unused;
    fq_transport_config_t cfg = {.kind = "null"};
    char error[S_ERROR_SIZE];
    fq_transport_t *transport = fq_transport_new(&cfg, error, sizeof error);
    assert_non_null(transport);
    fq_delivery_t msg = s_message(12001, "ann@example.org");
    s_deliver(transport, &msg, FQ_DELIVERY_OK);
    fq_transport_destroy(&transport);
}

//  18. Configurations that cannot work are refused at once, with a reason.
static void test_bad_config_refused(void **unused)
{
    (void)unused;
    const fq_transport_config_t bad[] = {
        {.kind = NULL},
        {.kind = "smtp2"},
        {.kind = "smtp"},
        {.kind = "smtp", .url = "http://127.0.0.1:25"},
        {.kind = "smtp", .url = "imap://127.0.0.1"},
        {.kind = "smtp", .url = "smtp://"},
        {.kind = "smtp", .url = "not a url"},
        {.kind = "smtp", .url = "smtp://127.0.0.1:25", .starttls = "maybe"},
        {.kind = "smtp", .url = "smtp://127.0.0.1:25", .helo = "bad name/../x"},
        {.kind = "smtp", .url = "smtp://127.0.0.1:25/name", .helo = "other.name"},
        {.kind = "smtp", .url = "smtp://127.0.0.1:25", .message_id_domain = "not a domain"},
        {.kind = "file"},
        {.kind = "file", .path = "/nonexistent-fairq-dir/mbox"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char error[S_ERROR_SIZE] = "";
        fq_transport_t *transport = fq_transport_new(&bad[i], error, sizeof error);
        if (transport)
            fail_msg("configuration %zu accepted", i);
        assert_true(strlen(error) > 0);
    }
    //  And the good ones of the same shapes are taken
    const fq_transport_config_t good[] = {
        {.kind = "smtp", .url = "smtps://127.0.0.1:465"},
        {.kind = "smtp", .url = "SMTP://127.0.0.1:25", .starttls = "never"},
        {.kind = "smtp", .url = "smtp://127.0.0.1:25/sender.example"},
        {.kind = "smtp", .url = "smtp://127.0.0.1", .helo = "sender.example"},
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        char error[S_ERROR_SIZE] = "";
        fq_transport_t *transport = fq_transport_new(&good[i], error, sizeof error);
        if (!transport)
            fail_msg("configuration %zu refused: %s", i, error);
        fq_transport_destroy(&transport);
    }
}

int main(void)
{
    //  A sink that dies must not kill the test with SIGPIPE
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_smtp_delivers, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_smtp_reuses_connection, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_smtp_transient, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_smtp_permanent, s_setup, s_teardown),
        cmocka_unit_test(test_smtp_unreachable),
        cmocka_unit_test_setup_teardown(test_smtp_tls_failure_transient, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_smtp_timeout, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_smtp_server_restart, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_smtp_hangup_on_reuse, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_smtp_auth, s_setup_auth, s_teardown),
        cmocka_unit_test_setup_teardown(test_smtp_starttls_required, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_smtp_bad_message_permanent, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_smtp_throttled, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_smtp_greeting, s_setup, s_teardown),
        cmocka_unit_test(test_smtp_classify),
        cmocka_unit_test(test_curl_failure_classify),
        cmocka_unit_test(test_file_mbox),
        cmocka_unit_test(test_null_kind),
        cmocka_unit_test(test_bad_config_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
