/*  store_submit_test.c — intake against a real PostgreSQL: fairq.submit
    inside an application's own transaction (a plain libpq connection, as an
    application has), NOTIFY only on commit, idempotency keys, refused
    input that leaves nothing behind, a from address that is not one
    address refused in SQL and in C alike, hostile text stored byte for
    byte, and recipients stored in chunks. */
#include "fq_store.h"
#include "fq_error.h"
#include "fq_recipients.h"
#include <jansson.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include "fq_test_sql.h"

//  How long a test waits for a notification that should come.
#define S_NOTIFY_DEADLINE_MS 10000

//  The body limit of fairq.requests (1 MiB, the template parser's limit).
#define S_BODY_MAX (1024 * 1024)

//  Recipients per stored chunk (fairq.chunk_size()).
#define S_CHUNK_SIZE 10000

//  A template of many tags must be checked in time linear in its size.
#define S_TAG_BODY_DEADLINE_MS 20000

static char s_conninfo[128];

static int s_group_setup(void **state)
{
    (void)state;
    const char *tenants[] = {"acme", "globex", NULL};
    int rc = fq_test_db_prepare(s_conninfo, sizeof s_conninfo, tenants, NULL);
    //  The application's own table, for the transactional enqueue tests
    PGconn *conn = PQconnectdb(s_conninfo);
    PGresult *res = PQexec(conn, "CREATE TABLE app_orders (id serial PRIMARY KEY, note text)");
    if (PQresultStatus(res) != PGRES_COMMAND_OK)
        rc = -1;
    PQclear(res);
    PQfinish(conn);
    return rc;
}

static int s_group_teardown(void **state)
{
    (void)state;
    fq_test_db_drop();
    return 0;
}

//  How many rows every fairq table holds, as one string to compare.
static char *s_row_counts(PGconn *conn)
{
    return fq_test_text(conn,
                        "SELECT format('requests %s, chunks %s, messages %s, rejects %s,"
                        " tenants %s', (SELECT count(*) FROM fairq.requests),"
                        " (SELECT count(*) FROM fairq.recipient_chunks),"
                        " (SELECT count(*) FROM fairq.messages),"
                        " (SELECT count(*) FROM fairq.rejects),"
                        " (SELECT count(*) FROM fairq.tenants))",
                        0);
}

//  The next notification on conn within timeout_ms, or NULL; PQfreemem it.
static PGnotify *s_wait_notify(PGconn *conn, int timeout_ms)
{
    int64_t deadline = fq_test_now_ms() + timeout_ms;
    for (;;) {
        assert_int_equal(PQconsumeInput(conn), 1);
        PGnotify *notify = PQnotifies(conn);
        if (notify)
            return notify;
        int64_t left = deadline - fq_test_now_ms();
        if (left <= 0)
            return NULL;
        struct pollfd pfd = {.fd = PQsocket(conn), .events = POLLIN};
        poll(&pfd, 1, (int)(left < 100 ? left : 100));
    }
}

//  A marker notification sent after the event under test: notifications
//  arrive in commit order, so if the marker comes first, nothing else came.
static void s_expect_only_marker(PGconn *app, PGconn *listener)
{
    PQclear(fq_test_query(app, "SELECT pg_notify('fairq_requests', 'marker')", 0));
    PGnotify *notify = s_wait_notify(listener, S_NOTIFY_DEADLINE_MS);
    assert_non_null(notify);
    assert_string_equal(notify->relname, "fairq_requests");
    assert_string_equal(notify->extra, "marker");
    PQfreemem(notify);
}

static PGconn *s_listener(void)
{
    PGconn *listener = fq_test_connect(s_conninfo);
    fq_test_exec(listener, "LISTEN fairq_requests", 0);
    return listener;
}

//  The application's transaction: its own row, then the submit; ends with
//  end_sql (COMMIT or ROLLBACK). Returns the request id fairq.submit gave.
static int64_t s_app_transaction(PGconn *app, const char *note, const char *end_sql)
{
    fq_test_exec(app, "BEGIN", 0);
    fq_test_exec(app, "INSERT INTO app_orders (note) VALUES ($1)", 1, note);
    int64_t id = fq_test_int(app,
                             "SELECT fairq.submit('acme', 'shop@acme.example', 'Order {{n}}',"
                             " 'Thanks for order {{ n }}', $1::jsonb)",
                             1,
                             "[{\"to\":\"ann@example.com\",\"fields\":{\"n\":\"1\"}},"
                             "{\"to\":\"bob@example.com\",\"fields\":{\"n\":\"2\"}}]");
    assert_true(id > 0);
    fq_test_exec(app, end_sql, 0);
    return id;
}

//  An application that rolls back its transaction leaves neither its row
//  nor any fairq row, and fairqd is not woken.
static void test_rolled_back_submit_leaves_nothing(void **unused)
{
    (void)unused;
    PGconn *app = fq_test_connect(s_conninfo);
    PGconn *listener = s_listener();
    char *before = s_row_counts(app);

    char id_text[32];
    fq_test_param(id_text, sizeof id_text, s_app_transaction(app, "rolled back", "ROLLBACK"));

    assert_int_equal(
        fq_test_int(app, "SELECT count(*) FROM app_orders WHERE note = 'rolled back'", 0), 0);
    assert_int_equal(
        fq_test_int(app, "SELECT count(*) FROM fairq.requests WHERE id = $1", 1, id_text), 0);
    assert_int_equal(fq_test_int(app,
                                 "SELECT count(*) FROM fairq.recipient_chunks"
                                 " WHERE request_id = $1",
                                 1, id_text),
                     0);
    char *after = s_row_counts(app);
    assert_string_equal(before, after);
    s_expect_only_marker(app, listener);
    free(before);
    free(after);
    PQfinish(listener);
    PQfinish(app);
}

//  A committed submit exists together with the application's row, and
//  wakes fairqd with exactly one notification carrying the request id.
static void test_committed_submit_notifies_once(void **unused)
{
    (void)unused;
    PGconn *app = fq_test_connect(s_conninfo);
    PGconn *listener = s_listener();

    int64_t id = s_app_transaction(app, "committed", "COMMIT");
    char id_text[32];
    fq_test_param(id_text, sizeof id_text, id);

    assert_int_equal(
        fq_test_int(app, "SELECT count(*) FROM app_orders WHERE note = 'committed'", 0), 1);
    assert_int_equal(fq_test_int(app,
                                 "SELECT count(*) FROM fairq.requests WHERE id = $1"
                                 " AND status = 'accepted' AND total = 2",
                                 1, id_text),
                     1);
    assert_int_equal(fq_test_int(app,
                                 "SELECT sum(json_array_length(recipients))"
                                 " FROM fairq.recipient_chunks WHERE request_id = $1",
                                 1, id_text),
                     2);
    PGnotify *notify = s_wait_notify(listener, S_NOTIFY_DEADLINE_MS);
    assert_non_null(notify);
    assert_string_equal(notify->relname, "fairq_requests");
    assert_string_equal(notify->extra, id_text);
    PQfreemem(notify);
    s_expect_only_marker(app, listener);
    PQfinish(listener);
    PQfinish(app);
}

//  The store's LISTEN hands the scheduler the requests notified by name:
//  their ids, in commit order; a payload that is not an id (another
//  program's, or this test's marker) is counted but names nothing, and
//  more than the room given are counted, not named.
static void test_notifications_name_their_requests(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    assert_int_equal(fq_store_listen(store, FQ_STORE_REQUESTS_CHANNEL), 0);
    PGconn *app = fq_test_connect(s_conninfo);
    int64_t first = s_app_transaction(app, "named 1", "COMMIT");
    int64_t second = s_app_transaction(app, "named 2", "COMMIT");
    const char *payloads[] = {"marker", "-5", "12abc", ""};
    for (size_t i = 0; i < sizeof payloads / sizeof payloads[0]; i++)
        PQclear(fq_test_query(app, "SELECT pg_notify('fairq_requests', $1)", 1, payloads[i]));
    int64_t third = s_app_transaction(app, "named 3", "COMMIT");

    int64_t named[2];
    int nnamed = -1, count = 0, total_named = 0;
    int64_t seen[3] = {0};
    int64_t deadline = fq_test_now_ms() + S_NOTIFY_DEADLINE_MS;
    while (count < 7 && fq_test_now_ms() < deadline) {
        int got = fq_store_notifications(store, named, 2, &nnamed);
        assert_true(got >= 0);
        assert_true(nnamed <= 2 && nnamed <= got);
        for (int i = 0; i < nnamed && total_named < 3; i++)
            seen[total_named++] = named[i];
        count += got;
        if (count < 7)
            fq_test_sleep_ms(10);
    }
    assert_int_equal(count, 7);
    //  Read in one go, only the room of two is named; read as they came,
    //  all three are: either way in commit order
    assert_true(total_named >= 2);
    assert_int_equal(seen[0], first);
    assert_int_equal(seen[1], second);
    if (total_named == 3)
        assert_int_equal(seen[2], third);
    PQfinish(app);
    fq_store_destroy(&store);
}

static fq_submit_t s_valid_request(void)
{
    return (fq_submit_t){.tenant = "acme",
                         .from = "news@acme.example",
                         .subject = "Hello {{name}}",
                         .body = "Dear {{ name }}, {{{ footer }}}",
                         .recipients_json = "[{\"to\":\"a@example.com\",\"fields\":{\"name\":\"A\","
                                            "\"footer\":\"<b>f</b>\"}}]"};
}

//  The same idempotency key answers the same request and stores nothing
//  more; with another request it is refused, and stores nothing either;
//  another tenant may use the same key for a request of its own.
static void test_idempotency_key(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    PGconn *conn = fq_test_connect(s_conninfo);
    PGconn *listener = s_listener();
    fq_submit_t req = s_valid_request();
    req.idempotency_key = "order-42";
    int64_t first, again, other;
    assert_int_equal(fq_store_submit(store, &req, &first), 0);
    PGnotify *notify = s_wait_notify(listener, S_NOTIFY_DEADLINE_MS);
    assert_non_null(notify);
    PQfreemem(notify);
    char *before = s_row_counts(conn);

    //  A retry of the same call, and of the same request with a default
    //  given (5 attempts): the first request, and 1 says so
    again = 0;
    assert_int_equal(fq_store_submit(store, &req, &again), 1);
    assert_int_equal(again, first);
    req.max_attempts = 5;
    assert_int_equal(fq_store_request_by_key(store, &req, &again), 0);
    assert_int_equal(fq_store_submit(store, &req, &again), 1);
    assert_int_equal(again, first);
    //  A retry whose content changed, in any one part: refused
    const fq_submit_t same = req;
    fq_submit_t changed[7];
    for (size_t i = 0; i < sizeof changed / sizeof *changed; i++)
        changed[i] = same;
    changed[0].subject = "Changed {{name}}";
    changed[1].recipients_json = "[{\"to\":\"x@example.com\",\"fields\":{\"name\":\"X\"}},"
                                 "{\"to\":\"y@example.com\",\"fields\":{\"name\":\"Y\"}}]";
    changed[2].from = "other@acme.example";
    changed[3].body_is_html = true;
    changed[4].send_at = 4102444800; //  2100-01-01
    changed[5].priority = 1;
    //  The parts are told apart: a subject's end is not the body's start
    changed[6].subject = "Hello {{name}}Dear {{ name }}";
    changed[6].body = ", {{{ footer }}}";
    for (size_t i = 0; i < sizeof changed / sizeof *changed; i++) {
        int64_t id = 0;
        if (fq_store_submit(store, &changed[i], &id) != FQ_ECONFLICT)
            fail_msg("change %zu: not refused (%s)", i, fq_store_error(store));
        assert_non_null(strstr(fq_store_error(store), "idempotency key"));
        id = 0;
        assert_int_equal(fq_store_request_by_key(store, &changed[i], &id), FQ_ECONFLICT);
        assert_int_equal(id, first);
    }
    //  A request kept before fingerprints were (migration 0012), or
    //  submitted in SQL, has none: its key answers it whatever comes
    char first_text[32];
    fq_test_param(first_text, sizeof first_text, first);
    fq_test_exec(conn, "UPDATE fairq.requests SET fingerprint = NULL WHERE id = $1", 1, first_text);
    assert_int_equal(fq_store_request_by_key(store, &changed[0], &again), 0);
    assert_int_equal(fq_store_submit(store, &changed[0], &again), 1);
    assert_int_equal(again, first);
    char *after = s_row_counts(conn);
    assert_string_equal(before, after);
    //  The first request is untouched, and nobody was woken for nothing
    char id_text[32];
    fq_test_param(id_text, sizeof id_text, first);
    assert_int_equal(fq_test_int(conn,
                                 "SELECT count(*) FROM fairq.requests WHERE id = $1"
                                 " AND subject = 'Hello {{name}}' AND total = 1",
                                 1, id_text),
                     1);
    s_expect_only_marker(conn, listener);

    //  Another tenant's key space is its own
    req.tenant = "globex";
    assert_int_equal(fq_store_request_by_key(store, &req, &other), FQ_ENOTFOUND);
    assert_int_equal(fq_store_submit(store, &req, &other), 0);
    assert_true(other != first);
    assert_int_equal(fq_store_submit(store, &req, &again), 1);
    assert_int_equal(again, other);
    assert_int_equal(fq_test_int(conn,
                                 "SELECT count(*) FROM fairq.requests"
                                 " WHERE idempotency_key = 'order-42'",
                                 0),
                     2);
    //  Without a key, every submit is a new request
    req.idempotency_key = NULL;
    int64_t a, b;
    assert_int_equal(fq_store_submit(store, &req, &a), 0);
    assert_int_equal(fq_store_submit(store, &req, &b), 0);
    assert_true(a != b);
    free(before);
    free(after);
    PQfinish(listener);
    PQfinish(conn);
    fq_store_destroy(&store);
}

//  Two applications submitting with the same key at the same moment get
//  the same request: the second waits for the first's transaction, and
//  answers its id after the commit, or makes its own after a rollback.
static void test_idempotency_key_concurrent(void **unused)
{
    (void)unused;
    const char *submit = "SELECT fairq.submit('acme', 'shop@acme.example', 'Hi', 'Body',"
                         " '[{\"to\":\"a@example.com\"}]'::jsonb, idempotency_key => $1)";
    const char *ends[] = {"COMMIT", "ROLLBACK"};
    const char *keys[] = {"race-commit", "race-rollback"};
    for (int k = 0; k < 2; k++) {
        PGconn *first = fq_test_connect(s_conninfo);
        PGconn *second = fq_test_connect(s_conninfo);
        fq_test_exec(first, "BEGIN", 0);
        int64_t id = fq_test_int(first, submit, 1, keys[k]);
        const char *params[] = {keys[k]};
        assert_int_equal(PQsendQueryParams(second, submit, 1, NULL, params, NULL, NULL, 0), 1);
        //  The second is blocked on the first's uncommitted key
        char pid[16];
        fq_test_param(pid, sizeof pid, PQbackendPID(second));
        int64_t deadline = fq_test_now_ms() + S_NOTIFY_DEADLINE_MS;
        //  (asked on a third connection: a transaction's view of
        //  pg_stat_activity does not change)
        PGconn *watch = fq_test_connect(s_conninfo);
        while (fq_test_int(watch,
                           "SELECT count(*) FROM pg_stat_activity WHERE pid = $1"
                           " AND wait_event_type = 'Lock'",
                           1, pid) == 0) {
            assert_true(fq_test_now_ms() < deadline);
            fq_test_sleep_ms(10);
        }
        PQfinish(watch);
        fq_test_exec(first, ends[k], 0);
        PGresult *res = PQgetResult(second);
        assert_int_equal(PQresultStatus(res), PGRES_TUPLES_OK);
        int64_t other = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
        PQclear(res);
        assert_null(PQgetResult(second));
        if (k == 0)
            assert_int_equal(other, id);
        else
            assert_true(other != id);
        assert_int_equal(fq_test_int(first,
                                     "SELECT count(*) FROM fairq.requests"
                                     " WHERE idempotency_key = $1",
                                     1, keys[k]),
                         1);
        PQfinish(second);
        PQfinish(first);
    }
}

//  Two calls with the same key and fingerprints at the same moment: the
//  second waits for the first's transaction and then answers its request
//  as replayed when the fingerprints agree, or is refused (FQ002, which the
//  store says as FQ_ECONFLICT) when they differ; nothing more is stored.
static void test_idempotency_key_concurrent_fingerprints(void **unused)
{
    (void)unused;
    const char *submit = "SELECT request_id, replayed FROM fairq.submit_keyed('acme',"
                         " 'shop@acme.example', 'Hi', 'Body', '[{\"to\":\"a@example.com\"}]',"
                         " false, now(), 0, 5, $1, decode(repeat($2, 32), 'hex'))";
    const char *keys[] = {"print-same", "print-other"};
    const char *seconds[] = {"aa", "bb"};
    for (int k = 0; k < 2; k++) {
        PGconn *first = fq_test_connect(s_conninfo);
        PGconn *second = fq_test_connect(s_conninfo);
        fq_test_exec(first, "BEGIN", 0);
        int64_t id = fq_test_int(first, submit, 2, keys[k], "aa");
        const char *params[] = {keys[k], seconds[k]};
        assert_int_equal(PQsendQueryParams(second, submit, 2, NULL, params, NULL, NULL, 0), 1);
        char pid[16];
        fq_test_param(pid, sizeof pid, PQbackendPID(second));
        int64_t deadline = fq_test_now_ms() + S_NOTIFY_DEADLINE_MS;
        PGconn *watch = fq_test_connect(s_conninfo);
        while (fq_test_int(watch,
                           "SELECT count(*) FROM pg_stat_activity WHERE pid = $1"
                           " AND wait_event_type = 'Lock'",
                           1, pid) == 0) {
            assert_true(fq_test_now_ms() < deadline);
            fq_test_sleep_ms(10);
        }
        PQfinish(watch);
        fq_test_exec(first, "COMMIT", 0);
        PGresult *res = PQgetResult(second);
        if (k == 0) {
            assert_int_equal(PQresultStatus(res), PGRES_TUPLES_OK);
            assert_int_equal(strtoll(PQgetvalue(res, 0, 0), NULL, 10), id);
            assert_string_equal(PQgetvalue(res, 0, 1), "t");
        } else {
            assert_int_equal(PQresultStatus(res), PGRES_FATAL_ERROR);
            assert_string_equal(PQresultErrorField(res, PG_DIAG_SQLSTATE), "FQ002");
        }
        PQclear(res);
        assert_null(PQgetResult(second));
        assert_int_equal(fq_test_int(first,
                                     "SELECT count(*) FROM fairq.requests"
                                     " WHERE idempotency_key = $1",
                                     1, keys[k]),
                         1);
        PQfinish(second);
        PQfinish(first);
    }
}

//  Submits req, expects FQ_EINVAL with needle in a "could not submit
//  request: " message, and no row added anywhere.
static void s_expect_refused(fq_store_t *store, PGconn *conn, const fq_submit_t *req,
                             const char *needle, const char *what)
{
    char *before = s_row_counts(conn);
    int64_t id = -1;
    int rc = fq_store_submit(store, req, &id);
    const char *error = fq_store_error(store);
    if (rc != FQ_EINVAL)
        fail_msg("%s: got %d (%s), wanted FQ_EINVAL", what, rc, rc ? error : "accepted");
    const char *prefix = "could not submit request: ";
    if (strncmp(error, prefix, strlen(prefix)) != 0 || !strstr(error, needle))
        fail_msg("%s: message \"%s\" lacks \"%s\"", what, error, needle);
    assert_int_not_equal(error[strlen(error) - 1], '\n');
    char *after = s_row_counts(conn);
    if (strcmp(before, after) != 0)
        fail_msg("%s: rows changed: %s -> %s", what, before, after);
    free(before);
    free(after);
}

//  Every kind of bad input is refused with a message saying what, and
//  stores nothing; the connection stays usable for the next submit.
static void test_bad_input_is_refused(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    PGconn *conn = fq_test_connect(s_conninfo);
    fq_submit_t req;

    req = s_valid_request();
    req.tenant = "nobody";
    s_expect_refused(store, conn, &req, "unknown tenant \"nobody\"", "unknown tenant");
    req.tenant = "acme'; DROP TABLE fairq.messages; --";
    s_expect_refused(store, conn, &req, "unknown tenant", "tenant with SQL in it");

    const char *not_arrays[] = {"{\"to\":\"a@example.com\"}", "\"a@example.com\"", "42", "null"};
    for (size_t i = 0; i < sizeof not_arrays / sizeof not_arrays[0]; i++) {
        req = s_valid_request();
        req.recipients_json = not_arrays[i];
        s_expect_refused(store, conn, &req, "recipients must be a JSON array", not_arrays[i]);
    }
    req = s_valid_request();
    req.recipients_json = "[{\"to\": ";
    s_expect_refused(store, conn, &req, "invalid input syntax for type json", "broken JSON");
    //  A "\u0000" is valid JSON text: the submit takes it, and the splitter
    //  refuses that recipient alone (it cannot become a text column)
    req.recipients_json = "[{\"to\":\"a@example.com\",\"fields\":{\"n\":\"\\u0000\"}},"
                          "{\"to\":\"b@example.com\"}]";
    int64_t nul_request;
    assert_int_equal(fq_store_submit(store, &req, &nul_request), 0);
    fq_split_result_t split;
    assert_int_equal(fq_store_split_chunk(store, nul_request, NULL, 0, 0, &split), 1);
    assert_int_equal(split.split, 1);
    assert_int_equal(split.rejected, 1);

    const char *bad_templates[] = {"{{name",     "{{{x}}",        "{{ }}", "{{bad name}}",
                                   "Hi {{name}", "{{a}} and {{b", "{{}}",  "{{1abc}}"};
    for (size_t i = 0; i < sizeof bad_templates / sizeof bad_templates[0]; i++) {
        req = s_valid_request();
        req.subject = bad_templates[i];
        s_expect_refused(store, conn, &req, "template has", bad_templates[i]);
        req = s_valid_request();
        req.body = bad_templates[i];
        s_expect_refused(store, conn, &req, "template has", bad_templates[i]);
    }

    //  Header injection: no line break in what becomes a mail header
    const char *broken_lines[] = {"Hi\r\nBcc: all@example.com", "Hi\nthere", "Hi\rthere",
                                  "tab\there"};
    for (size_t i = 0; i < sizeof broken_lines / sizeof broken_lines[0]; i++) {
        req = s_valid_request();
        req.subject = broken_lines[i];
        s_expect_refused(store, conn, &req, "requests_subject_check", "subject with a break");
    }
    const char *broken_froms[] = {"news@acme.example\r\nBcc: all@example.com",
                                  "news@acme.example\n", "\rnews@acme.example"};
    for (size_t i = 0; i < sizeof broken_froms / sizeof broken_froms[0]; i++) {
        req = s_valid_request();
        req.from = broken_froms[i];
        s_expect_refused(store, conn, &req, "invalid from address: address contains CR or LF",
                         "from with a break");
    }
    req = s_valid_request();
    req.from = "";
    s_expect_refused(store, conn, &req, "invalid from address: empty address", "empty from");

    //  A body one byte over the limit; the limit itself is accepted below
    char *body = malloc(S_BODY_MAX + 2);
    assert_non_null(body);
    memset(body, 'a', S_BODY_MAX + 1);
    body[S_BODY_MAX + 1] = 0;
    req = s_valid_request();
    req.body = body;
    s_expect_refused(store, conn, &req, "requests_body_check", "oversized body");

    //  Invalid UTF-8 in each text field: the server refuses the bytes
    const char *bad_utf8 = "caf\xc3\x28 \xff";
    char recipients[128];
    snprintf(recipients, sizeof recipients,
             "[{\"to\":\"a@example.com\",\"fields\":{\"n\":\"%s\"}}]", bad_utf8);
    for (int field = 0; field < 6; field++) {
        req = s_valid_request();
        const char **target[] = {&req.tenant,          &req.from,           &req.subject, &req.body,
                                 &req.recipients_json, &req.idempotency_key};
        *target[field] = field == 4 ? recipients : bad_utf8;
        s_expect_refused(store, conn, &req, "invalid byte sequence for encoding \"UTF8\"",
                         "invalid UTF-8");
    }

    //  Limits on the numbers
    req = s_valid_request();
    req.priority = 5000;
    s_expect_refused(store, conn, &req, "requests_priority_check", "priority out of range");
    req = s_valid_request();
    req.max_attempts = 1000;
    s_expect_refused(store, conn, &req, "requests_max_attempts_check", "max_attempts too high");
    char long_key[300];
    memset(long_key, 'k', sizeof long_key - 1);
    long_key[sizeof long_key - 1] = 0;
    req = s_valid_request();
    req.idempotency_key = long_key;
    s_expect_refused(store, conn, &req, "requests_idempotency_key_check", "key too long");

    //  After all that, the same connection still submits
    req = s_valid_request();
    int64_t id;
    assert_int_equal(fq_store_submit(store, &req, &id), 0);
    body[S_BODY_MAX] = 0;
    req.body = body;
    assert_int_equal(fq_store_submit(store, &req, &id), 0);
    free(body);
    PQfinish(conn);
    fq_store_destroy(&store);
}

//  A tenant name with SQL in it is refused and stores nothing.
static void test_bad_tenant_name_is_refused(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    PGconn *conn = fq_test_connect(s_conninfo);
    char *before = s_row_counts(conn);
    const char *names[] = {
        "acme'; DROP TABLE fairq.messages; --", "Acme", "", "a b", "$1", "caf\xc3\x28"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        int64_t id = 0;
        assert_int_equal(fq_store_tenant_put(store, &(fq_tenant_spec_t){.name = names[i]}, &id),
                         FQ_EINVAL);
        assert_non_null(strstr(fq_store_error(store), "could not store tenant: "));
    }
    char *after = s_row_counts(conn);
    assert_string_equal(before, after);
    free(before);
    free(after);
    PQfinish(conn);
    fq_store_destroy(&store);
}

//  Text that looks like SQL, quoting or escapes, in every text field.
static const char *const S_HOSTILE[] = {
    "O'Reilly's \"quoted\" 'text'",
    "back\\slash \\\\ \\' \\\" \\x41 \\n \\. \\N",
    "'); DROP TABLE fairq.messages; --",
    "$1 $2::text $$dollar$$ $tag$ :name ? %s %n %%",
    "semi; colon -- comment /* block */ E'\\x00' \\copy",
    "Unicode: Zo\xc3\xab, \xe9\x9b\xaa, \xe2\x98\x83, \xf0\x9d\x84\x9e",
};

//  Hostile text is stored and read back byte for byte, in the request and
//  in each message's recipient and fields.
static void test_hostile_text_round_trips(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    PGconn *conn = fq_test_connect(s_conninfo);
    size_t n = sizeof S_HOSTILE / sizeof S_HOSTILE[0];
    for (size_t i = 0; i < n; i++) {
        const char *text = S_HOSTILE[i];
        char subject[256], body[512], key[256], to[128], from[128];
        snprintf(subject, sizeof subject, "%s {{v}}", text);
        snprintf(body, sizeof body, "%s\t\r\n{{{v}}} %s", text, text);
        snprintf(key, sizeof key, "key %s", text);
        //  An address's local part takes every printable character
        snprintf(to, sizeof to, "o'neil\\$1;--\"x\"%zu@example.com", i);
        snprintf(from, sizeof from, "');DROP/**/TABLE/**/fairq.messages;--%zu@acme.example", i);
        json_t *list =
            json_pack("[{s:s, s:{s:s, s:s}}]", "to", to, "fields", "v", text, "w", "{{v}}");
        char *recipients = json_dumps(list, JSON_COMPACT);
        fq_submit_t req = {.tenant = "acme",
                           .from = from,
                           .subject = subject,
                           .body = body,
                           .recipients_json = recipients,
                           .idempotency_key = key};
        const char *required[] = {"v"};
        int64_t id = fq_test_submit_split(store, &req, required, 1);
        char id_text[32];
        fq_test_param(id_text, sizeof id_text, id);

        PGresult *res = fq_test_query(conn,
                                      "SELECT from_addr, subject, body, idempotency_key, split,"
                                      " rejected FROM fairq.requests WHERE id = $1",
                                      1, id_text);
        assert_int_equal(PQntuples(res), 1);
        assert_string_equal(PQgetvalue(res, 0, 0), from);
        assert_string_equal(PQgetvalue(res, 0, 1), subject);
        assert_string_equal(PQgetvalue(res, 0, 2), body);
        assert_string_equal(PQgetvalue(res, 0, 3), key);
        assert_string_equal(PQgetvalue(res, 0, 4), "1");
        assert_string_equal(PQgetvalue(res, 0, 5), "0");
        PQclear(res);
        char *fields = json_dumps(json_array_get(list, 0), JSON_COMPACT);
        res = fq_test_query(conn,
                            "SELECT recipient, fields->>'v', fields->>'w',"
                            " fields = ($2::jsonb)->'fields'"
                            " FROM fairq.messages WHERE request_id = $1",
                            2, id_text, fields);
        assert_int_equal(PQntuples(res), 1);
        assert_string_equal(PQgetvalue(res, 0, 0), to);
        assert_string_equal(PQgetvalue(res, 0, 1), text);
        assert_string_equal(PQgetvalue(res, 0, 2), "{{v}}");
        assert_string_equal(PQgetvalue(res, 0, 3), "t");
        PQclear(res);
        //  The same hostile key finds the same request
        int64_t again;
        assert_int_equal(fq_store_submit(store, &req, &again), 1);
        assert_int_equal(again, id);
        free(fields);
        free(recipients);
        json_decref(list);
    }
    //  And nothing was dropped along the way
    assert_int_equal(
        fq_test_int(conn, "SELECT (to_regclass('fairq.messages') IS NOT NULL)::int", 0), 1);
    PQfinish(conn);
    fq_store_destroy(&store);
}

//  Recipients are stored in chunks of 10,000, in order: 25,000 make three.
static void test_recipients_are_chunked(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    PGconn *conn = fq_test_connect(s_conninfo);
    const int sizes[] = {25000, S_CHUNK_SIZE, S_CHUNK_SIZE + 1, 1, 0};
    const int chunks[] = {3, 1, 2, 1, 0};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        char *recipients = fq_test_recipients("c", sizes[k]);
        fq_submit_t req = s_valid_request();
        req.recipients_json = recipients;
        int64_t id;
        assert_int_equal(fq_store_submit(store, &req, &id), 0);
        char id_text[32];
        fq_test_param(id_text, sizeof id_text, id);
        assert_int_equal(
            fq_test_int(conn, "SELECT total FROM fairq.requests WHERE id = $1", 1, id_text),
            sizes[k]);
        PGresult *res = fq_test_query(conn,
                                      "SELECT chunk_no, first_position,"
                                      " json_array_length(recipients), recipients->0->>'to'"
                                      " FROM fairq.recipient_chunks WHERE request_id = $1"
                                      " ORDER BY chunk_no",
                                      1, id_text);
        assert_int_equal(PQntuples(res), chunks[k]);
        for (int i = 0; i < PQntuples(res); i++) {
            int first = i * S_CHUNK_SIZE;
            int expect_len = sizes[k] - first < S_CHUNK_SIZE ? sizes[k] - first : S_CHUNK_SIZE;
            char to[64];
            snprintf(to, sizeof to, "c%d@example.com", first);
            assert_int_equal(atoi(PQgetvalue(res, i, 0)), i);
            assert_int_equal(atoi(PQgetvalue(res, i, 1)), first);
            assert_int_equal(atoi(PQgetvalue(res, i, 2)), expect_len);
            assert_string_equal(PQgetvalue(res, i, 3), to);
        }
        PQclear(res);
        free(recipients);
    }
    PQfinish(conn);
    fq_store_destroy(&store);
}

//  A body made of many tags (a large newsletter) is checked quickly: the
//  check is linear in the template's size, so a big template cannot hold a
//  database backend for minutes.
static void test_many_tags_submit_quickly(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    const char *tag = "<p>{{ name }} {{{ footer }}}</p>\n";
    size_t count = S_BODY_MAX / 2 / strlen(tag);
    char *body = malloc(count * strlen(tag) + 1);
    assert_non_null(body);
    for (size_t i = 0; i < count; i++)
        memcpy(body + i * strlen(tag), tag, strlen(tag));
    body[count * strlen(tag)] = 0;
    fq_submit_t req = s_valid_request();
    req.body = body;
    int64_t started = fq_test_now_ms(), id;
    int rc = fq_store_submit(store, &req, &id);
    int64_t took = fq_test_now_ms() - started;
    if (rc)
        fail_msg("%s", fq_store_error(store));
    print_message("%zu tags (%zu bytes) checked in %lld ms\n", 2 * count, strlen(body),
                  (long long)took);
    assert_true(took < S_TAG_BODY_DEADLINE_MS);
    //  And a bad tag at the very end of it is still found
    char *last = strrchr(body, '}');
    last[0] = last[-1] = last[-2] = ' ';
    int64_t bad;
    assert_int_equal(fq_store_submit(store, &req, &bad), FQ_EINVAL);
    assert_non_null(strstr(fq_store_error(store), "template has an unclosed tag"));
    free(body);
    fq_store_destroy(&store);
}

//  Addresses for the from check: one of each fault, in the places the
//  check finds them first, and good ones of every shape.
static const char *const S_ADDRESSES[] = {
    "news@acme.example",
    "o'neil\\$1;--\"x\"@example.com",
    "a@b.c",
    "first.last+tag@sub-domain.example.org",
    "",
    "news",
    "a@b, c@d",
    "a@b.example,c@d.example",
    "news\xe2\x80\xa8@acme.example", //  U+2028, a line separator
    "Acme News <news@acme.example>",
    "news@acme",
    "@acme.example",
    "news@",
    "news@.acme.example",
    "news@acme.example.",
    "news@acme..example",
    "news@acme_corp.example",
    "news@@acme.example",
    "a@b@c d", //  A second @ before the space: the @ is named
    "a b@c@d", //  The space first
    "news@acme.example\r\nBcc: all@example.com",
    "\tnews@acme.example",
    "n\x7fws@acme.example",
    "caf\xc3\xa9@acme.example",
};

//  The from address of a request is one address, by the rule recipients
//  are split by: fairq.address_problem (SQL) says what
//  fq_recipient_address_problem (C) says, word for word, and a submit with
//  a bad one, through the store or called in SQL by an application, is
//  refused with that reason and stores nothing.
static void test_from_must_be_one_address(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    PGconn *app = fq_test_connect(s_conninfo);
    char long_local[400];
    memset(long_local, 'a', 310);
    snprintf(long_local + 310, sizeof long_local - 310, "@acme.example");
    size_t n = sizeof S_ADDRESSES / sizeof S_ADDRESSES[0];
    int good = 0, bad = 0;
    for (size_t i = 0; i <= n; i++) {
        const char *from = i < n ? S_ADDRESSES[i] : long_local;
        const char *problem = fq_recipient_address_problem(from, strlen(from));
        char *sql_problem = fq_test_text(app, "SELECT fairq.address_problem($1)", 1, from);
        if (problem && (!sql_problem || strcmp(problem, sql_problem) != 0))
            fail_msg("\"%s\": C says \"%s\", SQL \"%s\"", from, problem,
                     sql_problem ? sql_problem : "(good)");
        if (!problem && sql_problem)
            fail_msg("\"%s\": C takes it, SQL says \"%s\"", from, sql_problem);
        free(sql_problem);
        fq_submit_t req = s_valid_request();
        req.from = from;
        int64_t id;
        if (!problem) {
            assert_int_equal(fq_store_submit(store, &req, &id), 0);
            good++;
            continue;
        }
        char wanted[256];
        snprintf(wanted, sizeof wanted, "invalid from address: %s", problem);
        s_expect_refused(store, app, &req, wanted, from);
        //  fairq.submit, as an application calls it in its own transaction
        char *before = s_row_counts(app);
        PGresult *res = PQexecParams(app,
                                     "SELECT fairq.submit('acme', $1, 'Hi', 'Body',"
                                     " '[{\"to\": \"a@example.com\"}]'::jsonb)",
                                     1, NULL, &from, NULL, NULL, 0);
        assert_int_equal(PQresultStatus(res), PGRES_FATAL_ERROR);
        assert_string_equal(PQresultErrorField(res, PG_DIAG_SQLSTATE), "22023");
        assert_string_equal(PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY), wanted);
        PQclear(res);
        char *after = s_row_counts(app);
        assert_string_equal(before, after);
        free(before);
        free(after);
        bad++;
    }
    assert_int_equal(good, 4);
    assert_true(bad >= 18);
    PQfinish(app);
    fq_store_destroy(&store);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rolled_back_submit_leaves_nothing),
        cmocka_unit_test(test_committed_submit_notifies_once),
        cmocka_unit_test(test_notifications_name_their_requests),
        cmocka_unit_test(test_idempotency_key),
        cmocka_unit_test(test_idempotency_key_concurrent),
        cmocka_unit_test(test_idempotency_key_concurrent_fingerprints),
        cmocka_unit_test(test_bad_input_is_refused),
        cmocka_unit_test(test_bad_tenant_name_is_refused),
        cmocka_unit_test(test_from_must_be_one_address),
        cmocka_unit_test(test_hostile_text_round_trips),
        cmocka_unit_test(test_recipients_are_chunked),
        cmocka_unit_test(test_many_tags_submit_quickly),
    };
    return cmocka_run_group_tests(tests, s_group_setup, s_group_teardown);
}
