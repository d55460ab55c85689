/*  transport_http_test.c — the http kind, against a real HTTP server.

    Each test starts tests/e2e/http_sink.py on a free port (with a
    self-signed certificate for the TLS test), delivers through
    fq_transport and checks what the sink wrote down: one JSON line per
    request received, with the number of the connection that carried it.
    The sink answers as each request's query string asks (?status=429&
    retry_after=7, ?delay=5, ...), so a test picks the answer with the
    URL: each kind of answer is classified as fairq-sender will retry it
    (TRANSIENT, with the receiver's Retry-After), retry it without counting
    an attempt because the receiver throttles (THROTTLED) or could not be
    reached (UNREACHABLE), or give it up (PERMANENT), with the status and
    the start of the body in the error. fq_http_classify is tested on its
    own too, status by status.
*/
#include "fq_transport.h"
#include <jansson.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "fq_test_ports.h"
#include "fq_test_process.h"
#include "fq_test_sink_records.h"
#include "fq_transport_http.h"

//  How long the sink may take to start listening (and make its
//  certificate): well under a second, but tests run in parallel under ASan.
#define S_READY_TIMEOUT_MS 20000
#define S_EXIT_TIMEOUT_MS  10000

//  The transports' timeouts: generous, as nothing here should come near
//  them but the stall test, where the sink waits S_STALL_S and the
//  transport gives up after S_SHORT_TIMEOUT_MS.
#define S_DELIVERY_TIMEOUT_MS 15000
#define S_STALL_S             5
#define S_SHORT_TIMEOUT_MS    500

//  Deliveries over one kept connection in the keep-alive test, and the
//  size of the large answer among them (past what the transport keeps,
//  within what it reads).
#define S_REUSE_COUNT 4
#define S_BIG_ANSWER  100000

//  A Retry-After as an HTTP-date this far ahead, and the slack allowed
//  for the clock's second ticking meanwhile.
#define S_DATE_AHEAD_S 120
#define S_DATE_SLACK_S 3

//  A body longer than what the error shows of it.
#define S_LONG_BODY  5000
#define S_BODY_SHOWN 200

#define S_LINE_SIZE 256
#define S_PATH_SIZE 512
#define S_BASE_SIZE 128
//  Room for a base and any path_query of the tests
#define S_URL_SIZE 512

#define S_ERROR_SIZE FQ_TRANSPORT_ERROR_SIZE

typedef struct {
    pid_t pid;
    int in, out;
    int port;
    bool tls;
    char dir[S_LINE_SIZE];
    char out_path[S_PATH_SIZE];
    char cert_path[S_PATH_SIZE];
    char base[S_BASE_SIZE]; //  http://127.0.0.1:PORT
} s_sink_t;

// --------------------------------------------------------------------------
//  The sink

static void s_sink_start(s_sink_t *sink)
{
    char *argv[] = {FQ_TEST_PYTHON,  FQ_HTTP_SINK,
                    "--port",        "0",
                    "--out",         sink->out_path,
                    "--quit-on-eof", sink->tls ? "--tls-dir" : NULL,
                    sink->dir,       NULL};
    sink->pid = fq_test_spawn(argv, &sink->in, &sink->out);
    char line[S_LINE_SIZE];
    if (fq_test_read_line(sink->out, line, sizeof line, S_READY_TIMEOUT_MS) != 0 ||
        sscanf(line, "ready %d", &sink->port) != 1)
        fail_msg("http sink did not start within %d ms", S_READY_TIMEOUT_MS);
    snprintf(sink->base, sizeof sink->base, "%s://127.0.0.1:%d", sink->tls ? "https" : "http",
             sink->port);
}

static int s_setup_with(void **state, bool tls)
{
    s_sink_t *sink = calloc(1, sizeof *sink);
    assert_non_null(sink);
    sink->tls = tls;
    snprintf(sink->dir, sizeof sink->dir, "/tmp/fq_http_test.XXXXXX");
    assert_non_null(mkdtemp(sink->dir));
    snprintf(sink->out_path, sizeof sink->out_path, "%s/out.jsonl", sink->dir);
    snprintf(sink->cert_path, sizeof sink->cert_path, "%s/cert.pem", sink->dir);
    *state = sink;
    s_sink_start(sink);
    return 0;
}

static int s_setup(void **state)
{
    return s_setup_with(state, false);
}

static int s_setup_tls(void **state)
{
    return s_setup_with(state, true);
}

static int s_teardown(void **state)
{
    s_sink_t *sink = *state;
    close(sink->in);
    int status = fq_test_wait(sink->pid, S_EXIT_TIMEOUT_MS);
    close(sink->out);
    const char *files[] = {"out.jsonl", "cert.pem", "key.pem", NULL};
    char path[S_PATH_SIZE + S_LINE_SIZE];
    for (int i = 0; files[i]; i++) {
        snprintf(path, sizeof path, "%s/%s", sink->dir, files[i]);
        unlink(path);
    }
    rmdir(sink->dir);
    free(sink);
    return status == 0 ? 0 : -1;
}

//  A header of a record as the sink received it, NULL when absent.
static const char *s_header(json_t *record, const char *name)
{
    return json_string_value(json_object_get(json_object_get(record, "headers"), name));
}

static json_int_t s_conn(json_t *record)
{
    return json_integer_value(json_object_get(record, "conn"));
}

// --------------------------------------------------------------------------
//  Transports and messages

static fq_transport_t *s_http(const fq_transport_config_t *overrides)
{
    fq_transport_config_t cfg = {.kind = "http", .timeout_ms = S_DELIVERY_TIMEOUT_MS};
    if (overrides)
        cfg = *overrides;
    char error[S_ERROR_SIZE];
    fq_transport_t *transport = fq_transport_new(&cfg, error, sizeof error);
    if (!transport)
        fail_msg("http transport refused: %s", error);
    return transport;
}

//  A message to url (sink's base and path_query).
static fq_delivery_t s_request(s_sink_t *sink, uint64_t id, const char *path_query, char *url)
{
    if (snprintf(url, S_URL_SIZE, "%s%s", sink ? sink->base : "", path_query) >= S_URL_SIZE)
        fail_msg("url too long: %s", path_query);
    return (fq_delivery_t){
        .id = id,
        .tenant = "acme",
        .request_id = 7,
        .attempt = 1,
        .to = url,
        .body = "{\"event\":\"order.shipped\"}",
        .channel = FQ_CHANNEL_HTTP,
        .method = "POST",
    };
}

//  Delivers msg expecting result; returns the error (static) and the
//  Retry-After in *retry_after_s (may be NULL).
static const char *s_deliver(fq_transport_t *transport, const fq_delivery_t *msg,
                             fq_delivery_result_t expected, uint32_t *retry_after_s)
{
    static char error[S_ERROR_SIZE];
    uint32_t retry = UINT32_MAX;
    fq_delivery_result_t result = fq_transport_deliver(transport, msg, &retry, error, sizeof error);
    if (result != expected)
        fail_msg("delivery to %s: result %d, expected %d (%s)", msg->to, result, expected, error);
    assert_int_not_equal(retry, UINT32_MAX);
    if (expected == FQ_DELIVERY_OK) {
        assert_string_equal(error, "");
        assert_int_equal(retry, 0);
    } else {
        assert_true(strlen(error) > 0);
        assert_null(strpbrk(error, "\r\n"));
    }
    if (retry_after_s)
        *retry_after_s = retry;
    return error;
}

static void s_expect_contains(const char *text, const char *part)
{
    if (!strstr(text, part))
        fail_msg("\"%s\" does not hold \"%s\"", text, part);
}

// --------------------------------------------------------------------------
//  Tests

//  1. A request arrives as the message says: method, path, headers (a
//  signature among them) and body intact, our User-Agent, and nothing
//  libcurl would add of its own (a form's Content-Type, Expect).
static void test_http_delivers(void **state)
{
    s_sink_t *sink = *state;
    fq_transport_t *transport = s_http(NULL);
    char url[S_URL_SIZE];
    const char *names[] = {"Content-Type", "X-Fairq-Signature", "X-Empty"};
    const char *values[] = {"application/json", "t=1700000000,v1=5257a869e7ecebeda32affa62cdca3fa",
                            ""};
    fq_delivery_t msg = s_request(sink, 1, "/hooks/orders?tenant=acme", url);
    msg.nheaders = 3;
    msg.header_names = names;
    msg.header_values = values;
    s_deliver(transport, &msg, FQ_DELIVERY_OK, NULL);

    //  The other methods, in any case; a body without a Content-Type
    //  goes without one; DELETE and GET without a body send none
    const char *methods[] = {"put", "PATCH", "DELETE", "GET"};
    for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++) {
        msg = s_request(sink, 2 + i, "/items/42", url);
        msg.method = methods[i];
        if (i >= 2)
            msg.body = "";
        s_deliver(transport, &msg, FQ_DELIVERY_OK, NULL);
    }

    json_t *requests = fq_test_sink_records(sink->out_path);
    assert_int_equal(json_array_size(requests), 5);
    json_t *first = json_array_get(requests, 0);
    assert_string_equal(fq_test_record_field(first, "method"), "POST");
    assert_string_equal(fq_test_record_field(first, "path"), "/hooks/orders?tenant=acme");
    assert_string_equal(fq_test_record_field(first, "body"), "{\"event\":\"order.shipped\"}");
    assert_string_equal(s_header(first, "Content-Type"), "application/json");
    assert_string_equal(s_header(first, "X-Fairq-Signature"), values[1]);
    assert_string_equal(s_header(first, "X-Empty"), "");
    assert_string_equal(s_header(first, "Content-Length"), "25");
    assert_true(strncmp(s_header(first, "User-Agent"), "fairq-sender/", strlen("fairq-sender/")) ==
                0);
    assert_null(s_header(first, "Expect"));
    const char *expected[] = {"PUT", "PATCH", "DELETE", "GET"};
    for (size_t i = 0; i < 4; i++) {
        json_t *record = json_array_get(requests, 1 + i);
        assert_string_equal(fq_test_record_field(record, "method"), expected[i]);
        assert_null(s_header(record, "Content-Type"));
        assert_string_equal(fq_test_record_field(record, "body"),
                            i < 2 ? "{\"event\":\"order.shipped\"}" : "");
    }
    json_decref(requests);
    fq_transport_destroy(&transport);
    fq_transport_destroy(&transport); //  Safe twice
    assert_null(transport);
}

//  2. One transport, several requests, one connection (kept alive), even
//  after an answer larger than what the transport keeps of it.
static void test_http_keeps_connection(void **state)
{
    s_sink_t *sink = *state;
    fq_transport_t *transport = s_http(NULL);
    char url[S_URL_SIZE], path[S_LINE_SIZE];
    for (int i = 0; i < S_REUSE_COUNT; i++) {
        snprintf(path, sizeof path, i == 1 ? "/hook?big=%d" : "/hook?n=%d",
                 i == 1 ? S_BIG_ANSWER : i);
        fq_delivery_t msg = s_request(sink, 100 + (uint64_t)i, path, url);
        s_deliver(transport, &msg, FQ_DELIVERY_OK, NULL);
    }
    json_t *requests = fq_test_sink_records(sink->out_path);
    assert_int_equal(json_array_size(requests), S_REUSE_COUNT);
    for (int i = 0; i < S_REUSE_COUNT; i++)
        assert_int_equal(s_conn(json_array_get(requests, (size_t)i)), 1);
    json_decref(requests);

    //  A server that closes after answering: the next request opens anew
    fq_delivery_t msg = s_request(sink, 110, "/hook?close=1", url);
    s_deliver(transport, &msg, FQ_DELIVERY_OK, NULL);
    msg = s_request(sink, 111, "/hook", url);
    s_deliver(transport, &msg, FQ_DELIVERY_OK, NULL);
    requests = fq_test_sink_records(sink->out_path);
    assert_int_equal(s_conn(json_array_get(requests, S_REUSE_COUNT + 1)), 2);
    json_decref(requests);
    fq_transport_destroy(&transport);
}

//  3. 429 with Retry-After: throttled, with the seconds asked for; as a
//  date too; more than a day is a day; a 503 with one throttles as well;
//  408 and 425 are transient, the same.
static void test_http_retry_after(void **state)
{
    s_sink_t *sink = *state;
    fq_transport_t *transport = s_http(NULL);
    char url[S_URL_SIZE];
    uint32_t retry;
    fq_delivery_t msg = s_request(sink, 200, "/hook?status=429&retry_after=7&body=slow+down", url);
    const char *error = s_deliver(transport, &msg, FQ_DELIVERY_THROTTLED, &retry);
    assert_string_equal(error, "HTTP 429: slow down");
    assert_int_equal(retry, 7);

    //  An HTTP-date (IMF-fixdate) S_DATE_AHEAD_S seconds ahead
    char date[S_LINE_SIZE], path[S_PATH_SIZE];
    time_t when = time(NULL) + S_DATE_AHEAD_S;
    struct tm tm;
    gmtime_r(&when, &tm);
    strftime(date, sizeof date, "%a,%%20%d%%20%b%%20%Y%%20%H:%M:%S%%20GMT", &tm);
    snprintf(path, sizeof path, "/hook?status=503&retry_after=%s", date);
    msg = s_request(sink, 201, path, url);
    s_deliver(transport, &msg, FQ_DELIVERY_THROTTLED, &retry);
    assert_in_range(retry, S_DATE_AHEAD_S - S_DATE_SLACK_S, S_DATE_AHEAD_S);

    msg = s_request(sink, 202, "/hook?status=429&retry_after=9999999", url);
    s_deliver(transport, &msg, FQ_DELIVERY_THROTTLED, &retry);
    assert_int_equal(retry, FQ_TRANSPORT_RETRY_AFTER_MAX_S);

    //  A date past, or nonsense: no wish (a 429 throttles all the same)
    msg = s_request(sink, 203,
                    "/hook?status=429&retry_after=Thu,%2001%20Jan%201970%2000:00:00%20GMT", url);
    s_deliver(transport, &msg, FQ_DELIVERY_THROTTLED, &retry);
    assert_int_equal(retry, 0);
    msg = s_request(sink, 206, "/hook?status=429", url);
    s_deliver(transport, &msg, FQ_DELIVERY_THROTTLED, &retry);
    assert_int_equal(retry, 0);
    msg = s_request(sink, 204, "/hook?status=408&retry_after=soon", url);
    error = s_deliver(transport, &msg, FQ_DELIVERY_TRANSIENT, &retry);
    assert_int_equal(retry, 0);
    s_expect_contains(error, "HTTP 408");
    msg = s_request(sink, 205, "/hook?status=425", url);
    s_deliver(transport, &msg, FQ_DELIVERY_TRANSIENT, NULL);
    fq_transport_destroy(&transport);
}

//  4. A 5xx is transient, not throttled, with the body's first line in
//  the error; no Retry-After is no wish; the answer's reason phrase
//  stands in for an empty body. A 503 without Retry-After is one more.
static void test_http_server_error_transient(void **state)
{
    s_sink_t *sink = *state;
    fq_transport_t *transport = s_http(NULL);
    char url[S_URL_SIZE];
    uint32_t retry;
    fq_delivery_t msg = s_request(sink, 300, "/hook?status=500&body=boom%0Atraceback...", url);
    const char *error = s_deliver(transport, &msg, FQ_DELIVERY_TRANSIENT, &retry);
    assert_string_equal(error, "HTTP 500: boom");
    assert_int_equal(retry, 0);
    msg = s_request(sink, 301, "/hook?status=502&body=", url);
    error = s_deliver(transport, &msg, FQ_DELIVERY_TRANSIENT, NULL);
    assert_string_equal(error, "HTTP 502: Bad Gateway");
    msg = s_request(sink, 302, "/hook?status=503&body=down", url);
    error = s_deliver(transport, &msg, FQ_DELIVERY_TRANSIENT, &retry);
    assert_string_equal(error, "HTTP 503: down");
    assert_int_equal(retry, 0);
    fq_transport_destroy(&transport);
}

//  5. Another 4xx is permanent, with the status and the start of the body
//  (control characters made spaces, at most S_BODY_SHOWN bytes).
static void test_http_client_error_permanent(void **state)
{
    s_sink_t *sink = *state;
    fq_transport_t *transport = s_http(NULL);
    char url[S_URL_SIZE];
    uint32_t retry;
    fq_delivery_t msg =
        s_request(sink, 400, "/hook?status=400&body=field%20%22amount%22%09is%1Bmissing", url);
    const char *error = s_deliver(transport, &msg, FQ_DELIVERY_PERMANENT, &retry);
    assert_string_equal(error, "HTTP 400: field \"amount\" is missing");
    assert_int_equal(retry, 0);

    char path[S_LINE_SIZE];
    snprintf(path, sizeof path, "/hook?status=422&big=%d", S_LONG_BODY);
    msg = s_request(sink, 401, path, url);
    error = s_deliver(transport, &msg, FQ_DELIVERY_PERMANENT, NULL);
    assert_int_equal(strlen(error), strlen("HTTP 422: ") + S_BODY_SHOWN);
    msg = s_request(sink, 402, "/hook?status=404&body=", url);
    error = s_deliver(transport, &msg, FQ_DELIVERY_PERMANENT, NULL);
    assert_string_equal(error, "HTTP 404: Not Found");
    fq_transport_destroy(&transport);
}

//  6. A server that stalls: the request times out, transient (not
//  unreachable: the connection was made), on a new connection or on one
//  kept from the request before.
static void test_http_timeout(void **state)
{
    s_sink_t *sink = *state;
    fq_transport_config_t cfg = {.kind = "http", .timeout_ms = S_SHORT_TIMEOUT_MS};
    fq_transport_t *transport = s_http(&cfg);
    char url[S_URL_SIZE], path[S_LINE_SIZE];
    snprintf(path, sizeof path, "/hook?delay=%d", S_STALL_S);
    fq_delivery_t msg = s_request(sink, 500, path, url);
    int64_t start = fq_test_now_ms();
    uint32_t retry;
    const char *error = s_deliver(transport, &msg, FQ_DELIVERY_TRANSIENT, &retry);
    assert_true(fq_test_now_ms() - start < S_STALL_S * FQ_TEST_MS_PER_S);
    s_expect_contains(error, "timed out");
    assert_int_equal(retry, 0);
    fq_transport_destroy(&transport);

    transport = s_http(&cfg);
    msg = s_request(sink, 501, "/hook", url);
    s_deliver(transport, &msg, FQ_DELIVERY_OK, NULL);
    msg = s_request(sink, 502, path, url);
    s_deliver(transport, &msg, FQ_DELIVERY_TRANSIENT, NULL);
    json_t *requests = fq_test_sink_records(sink->out_path);
    assert_int_equal(json_array_size(requests), 3);
    assert_int_equal(s_conn(json_array_get(requests, 2)), s_conn(json_array_get(requests, 1)));
    json_decref(requests);
    fq_transport_destroy(&transport);
}

//  7. A redirect is not followed: permanent, and the sink saw one request.
static void test_http_redirect_permanent(void **state)
{
    s_sink_t *sink = *state;
    fq_transport_t *transport = s_http(NULL);
    char url[S_URL_SIZE], path[S_PATH_SIZE];
    snprintf(path, sizeof path, "/old?status=301&location=%s/new", sink->base);
    fq_delivery_t msg = s_request(sink, 600, path, url);
    const char *error = s_deliver(transport, &msg, FQ_DELIVERY_PERMANENT, NULL);
    assert_string_equal(error, "HTTP 301: redirect not followed");
    msg = s_request(sink, 601, "/old?status=307&location=/new", url);
    error = s_deliver(transport, &msg, FQ_DELIVERY_PERMANENT, NULL);
    assert_string_equal(error, "HTTP 307: redirect not followed");
    json_t *requests = fq_test_sink_records(sink->out_path);
    assert_int_equal(json_array_size(requests), 2);
    json_decref(requests);
    fq_transport_destroy(&transport);
}

//  8. What no request could carry fails for good, before any connection:
//  a URL of another scheme or none, an unknown method, a header that
//  would add lines, a name that is no token, a framing header.
static void test_http_bad_message_permanent(void **state)
{
    s_sink_t *sink = *state;
    fq_transport_t *transport = s_http(NULL);
    char url[S_URL_SIZE];
    const char *urls[] = {"ftp://127.0.0.1/x", "file:///etc/passwd", "not a url", "", "http://"};
    for (size_t i = 0; i < sizeof urls / sizeof urls[0]; i++) {
        fq_delivery_t msg = s_request(NULL, 700 + i, urls[i], url);
        s_deliver(transport, &msg, FQ_DELIVERY_PERMANENT, NULL);
    }
    fq_delivery_t msg = s_request(sink, 710, "/hook", url);
    msg.method = "TRACE";
    s_expect_contains(s_deliver(transport, &msg, FQ_DELIVERY_PERMANENT, NULL), "method");

    const char *names[][1] = {
        {"X-Evil"}, {"X Evil"}, {"Content-Length"}, {"transfer-encoding"}, {""}};
    const char *values[][1] = {{"a\r\nX-Injected: yes"}, {"a"}, {"1"}, {"chunked"}, {"a"}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        msg = s_request(sink, 720 + i, "/hook", url);
        msg.nheaders = 1;
        msg.header_names = names[i];
        msg.header_values = values[i];
        const char *error = s_deliver(transport, &msg, FQ_DELIVERY_PERMANENT, NULL);
        if (i == 0)
            s_expect_contains(error, "CR or LF");
    }
    json_t *requests = fq_test_sink_records(sink->out_path);
    assert_int_equal(json_array_size(requests), 0);
    json_decref(requests);
    fq_transport_destroy(&transport);
}

//  9. No connection made: UNREACHABLE, with libcurl's reason. Nobody
//  listening (refused at once), a host that never answers (the connect
//  timeout strikes), a name that does not resolve.
static void test_http_unreachable(void **unused)
{
    (void)unused;
    fq_test_port_t refusing, silent;
    fq_test_port_refusing(&refusing);
    fq_test_port_silent(&silent);
    char refusing_url[S_BASE_SIZE], silent_url[S_BASE_SIZE];
    snprintf(refusing_url, sizeof refusing_url, "http://127.0.0.1:%d/hook", refusing.port);
    snprintf(silent_url, sizeof silent_url, "http://127.0.0.1:%d/hook", silent.port);
    const struct {
        const char *url;
        const char *reason;
    } cases[] = {
        {refusing_url, "onnect"},
        {silent_url, "ime"}, //  "timed out", or "Timeout was reached"
        //  .invalid never resolves (RFC 6761); a resolver that takes too
        //  long to say so times out, unreachable as well
        {"http://fairq-test.invalid/hook", "resolv"},
    };
    fq_transport_config_t cfg = {.kind = "http",
                                 .timeout_ms = S_DELIVERY_TIMEOUT_MS,
                                 .connect_timeout_ms = S_SHORT_TIMEOUT_MS};
    fq_transport_t *transport = s_http(&cfg);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char url[S_URL_SIZE];
        fq_delivery_t msg = s_request(NULL, 800 + i, cases[i].url, url);
        uint32_t retry;
        s_expect_contains(s_deliver(transport, &msg, FQ_DELIVERY_UNREACHABLE, &retry),
                          cases[i].reason);
        assert_int_equal(retry, 0);
    }
    fq_transport_destroy(&transport);
    fq_test_port_close(&refusing);
    fq_test_port_close(&silent);
}

//  10. TLS is verified: a certificate nobody vouches for fails the
//  connection (transient, not unreachable: the sender's configuration, or
//  the receiver's),
//  unless the CA file names it, or verification is off (tests).
static void test_http_tls_verified(void **state)
{
    s_sink_t *sink = *state;
    char url[S_URL_SIZE];
    fq_transport_t *transport = s_http(NULL);
    fq_delivery_t msg = s_request(sink, 900, "/secure", url);
    const char *error = s_deliver(transport, &msg, FQ_DELIVERY_TRANSIENT, NULL);
    s_expect_contains(error, "certificate");
    fq_transport_destroy(&transport);
    json_t *requests = fq_test_sink_records(sink->out_path);
    assert_int_equal(json_array_size(requests), 0);
    json_decref(requests);

    fq_transport_config_t cfg = {
        .kind = "http", .timeout_ms = S_DELIVERY_TIMEOUT_MS, .ca_file = sink->cert_path};
    transport = s_http(&cfg);
    msg = s_request(sink, 901, "/secure", url);
    s_deliver(transport, &msg, FQ_DELIVERY_OK, NULL);
    fq_transport_destroy(&transport);

    cfg = (fq_transport_config_t){
        .kind = "http", .timeout_ms = S_DELIVERY_TIMEOUT_MS, .insecure_tls = true};
    transport = s_http(&cfg);
    msg = s_request(sink, 902, "/secure", url);
    s_deliver(transport, &msg, FQ_DELIVERY_OK, NULL);
    fq_transport_destroy(&transport);
    requests = fq_test_sink_records(sink->out_path);
    assert_int_equal(json_array_size(requests), 2);
    json_decref(requests);
}

//  11. A CA file that cannot be read is refused at once.
static void test_http_bad_config_refused(void **unused)
{
    (void)unused;
    fq_transport_config_t cfg = {.kind = "http", .ca_file = "/nonexistent-fairq-dir/ca.pem"};
    char error[S_ERROR_SIZE] = "";
    assert_null(fq_transport_new(&cfg, error, sizeof error));
    s_expect_contains(error, "CA file");
}

//  12. fq_http_classify on its own: each status, with a Retry-After or
//  without.
static void test_http_classify(void **unused)
{
    (void)unused;
    static const struct {
        long status;
        fq_delivery_result_t without, with; //  Retry-After
    } cases[] = {
        {200, FQ_DELIVERY_OK, FQ_DELIVERY_OK},
        {204, FQ_DELIVERY_OK, FQ_DELIVERY_OK},
        {301, FQ_DELIVERY_PERMANENT, FQ_DELIVERY_PERMANENT},
        {400, FQ_DELIVERY_PERMANENT, FQ_DELIVERY_PERMANENT},
        {404, FQ_DELIVERY_PERMANENT, FQ_DELIVERY_PERMANENT},
        {408, FQ_DELIVERY_TRANSIENT, FQ_DELIVERY_TRANSIENT},
        {425, FQ_DELIVERY_TRANSIENT, FQ_DELIVERY_TRANSIENT},
        {429, FQ_DELIVERY_THROTTLED, FQ_DELIVERY_THROTTLED},
        {500, FQ_DELIVERY_TRANSIENT, FQ_DELIVERY_TRANSIENT},
        {502, FQ_DELIVERY_TRANSIENT, FQ_DELIVERY_TRANSIENT},
        {503, FQ_DELIVERY_TRANSIENT, FQ_DELIVERY_THROTTLED},
        {504, FQ_DELIVERY_TRANSIENT, FQ_DELIVERY_TRANSIENT},
        {100, FQ_DELIVERY_PERMANENT, FQ_DELIVERY_PERMANENT},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (fq_http_classify(cases[i].status, false) != cases[i].without)
            fail_msg("%ld without Retry-After: %d", cases[i].status,
                     fq_http_classify(cases[i].status, false));
        if (fq_http_classify(cases[i].status, true) != cases[i].with)
            fail_msg("%ld with Retry-After: %d", cases[i].status,
                     fq_http_classify(cases[i].status, true));
    }
}

int main(void)
{
    //  A sink that dies must not kill the test with SIGPIPE
    signal(SIGPIPE, SIG_IGN);
    //  The sink is local: no proxy of the environment in the way
    const char *proxies[] = {"http_proxy",  "https_proxy", "HTTP_PROXY",
                             "HTTPS_PROXY", "all_proxy",   "ALL_PROXY"};
    for (size_t i = 0; i < sizeof proxies / sizeof proxies[0]; i++)
        unsetenv(proxies[i]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_http_delivers, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_http_keeps_connection, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_http_retry_after, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_http_server_error_transient, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_http_client_error_permanent, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_http_timeout, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_http_redirect_permanent, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_http_bad_message_permanent, s_setup, s_teardown),
        cmocka_unit_test(test_http_unreachable),
        cmocka_unit_test_setup_teardown(test_http_tls_verified, s_setup_tls, s_teardown),
        cmocka_unit_test(test_http_bad_config_refused),
        cmocka_unit_test(test_http_classify),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
