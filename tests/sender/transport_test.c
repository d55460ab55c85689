/*  transport_test.c — delivering messages, against a real SMTP server.

    Each SMTP test starts tests/e2e/smtp_sink.py (aiosmtpd) on a free port
    with an empty rules file, delivers through fq_transport and checks
    what the sink wrote down: one JSON line per accepted message, with the
    number of the connection that carried it. Tests change the sink's
    answers mid-run by replacing its rules file, to see each kind of
    failure classified as fairq-sender will retry it (TRANSIENT) or give
    it up (PERMANENT), and the server's own words in the error.

    The sink runs with --quit-on-eof (fq_test_process.h): no test leaves a
    server behind.
*/
#include "fq_transport.h"
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include "fq_test_process.h"
#include "fq_test_sink_records.h"

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

//  Room for a "ready PORT" line, a URL, a path.
#define S_LINE_SIZE 128
#define S_URL_SIZE  64
#define S_PATH_SIZE (2 * S_LINE_SIZE)

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
    s_sink_rules(sink, "{\"default\": \"452 4.3.1 insufficient system storage\"}");
    msg = s_message(3002, "ann@example.org");
    error = s_deliver(transport, &msg, FQ_DELIVERY_TRANSIENT);
    assert_string_equal(error, "452 4.3.1 insufficient system storage");
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

//  5. Nobody listening: transient, with libcurl's reason.
static void test_smtp_unreachable(void **state)
{
    (void)state;
    //  A port bound but not listening refuses connections, and no other
    //  test can start listening on it meanwhile
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(fd, (struct sockaddr *)&address, sizeof address), 0);
    socklen_t address_len = sizeof address;
    assert_int_equal(getsockname(fd, (struct sockaddr *)&address, &address_len), 0);
    char url[S_URL_SIZE];
    snprintf(url, sizeof url, "smtp://127.0.0.1:%d", ntohs(address.sin_port));

    fq_transport_config_t cfg = {.kind = "smtp", .url = url, .timeout_ms = S_DELIVERY_TIMEOUT_MS};
    char error[S_ERROR_SIZE];
    fq_transport_t *transport = fq_transport_new(&cfg, error, sizeof error);
    assert_non_null(transport);
    fq_delivery_t msg = s_message(5001, "ann@example.org");
    const char *reason = s_deliver(transport, &msg, FQ_DELIVERY_TRANSIENT);
    s_expect_contains(reason, "onnect");
    fq_transport_destroy(&transport);
    close(fd);
}

//  6. A server that stalls: the delivery times out, transient.
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

//  12. The file kind appends mbox records that mail readers can read.
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

//  13. The null kind accepts everything, bad messages included.
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

//  14. Configurations that cannot work are refused at once, with a reason.
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
        cmocka_unit_test_setup_teardown(test_smtp_timeout, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_smtp_server_restart, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_smtp_hangup_on_reuse, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_smtp_auth, s_setup_auth, s_teardown),
        cmocka_unit_test_setup_teardown(test_smtp_starttls_required, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_smtp_bad_message_permanent, s_setup, s_teardown),
        cmocka_unit_test(test_file_mbox),
        cmocka_unit_test(test_null_kind),
        cmocka_unit_test(test_bad_config_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
