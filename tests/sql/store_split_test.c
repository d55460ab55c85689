/*  store_split_test.c — fq_store_split_chunk against a real PostgreSQL:
    recipients become message rows in submit order, chunk by chunk, with
    dispatch possible after the first; bad recipients are rejected alone,
    with their reason; cancelled requests split into nothing; and a split
    that fails half way leaves nothing of its chunk behind. */
#include "fq_store.h"
#include "fq_error.h"
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include "fq_test_sql.h"

//  Recipients per stored chunk (fairq.chunk_size()).
#define S_CHUNK_SIZE 10000

//  The big request of these tests: three chunks, the last one partial.
#define S_BIG 25000

//  A small request of these tests: the most recipients a split writes
//  with one INSERT (fq_store_split.c).
#define S_SMALL 1000

//  The row at which the injected fault stops a split.
#define S_FAULT_ROW 5000

static char s_conninfo[128];

static int s_group_setup(void **state)
{
    (void)state;
    const char *tenants[] = {"acme", NULL};
    return fq_test_db_prepare(s_conninfo, sizeof s_conninfo, tenants, NULL);
}

static int s_group_teardown(void **state)
{
    (void)state;
    fq_test_db_drop();
    return 0;
}

//  n recipients whose fields hold strings, integers, decimals and
//  booleans, as an application would send them; malloc'ed.
static char *s_rich_recipients(const char *prefix, int n)
{
    size_t capacity = (size_t)n * (strlen(prefix) + 200) + 3;
    char *json = malloc(capacity);
    assert_non_null(json);
    size_t len = 0;
    json[len++] = '[';
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(json + len, capacity - len,
                                "%s{\"to\":\"%s%d@example.com\",\"fields\":{\"name\":\"N%d\","
                                "\"i\":%d,\"price\":%d.1,\"rate\":0.07,\"vip\":%s,"
                                "\"note\":\"tab\\there \\\"q\\\" \\\\ \\u00e9\"}}",
                                i ? "," : "", prefix, i, i, i, i, i % 2 ? "true" : "false");
    json[len++] = ']';
    json[len] = 0;
    return json;
}

static int64_t s_submit(fq_store_t *store, const char *recipients)
{
    fq_submit_t req = {.tenant = "acme",
                       .from = "news@acme.example",
                       .subject = "Hello {{name}}",
                       .body = "Dear {{ name }}",
                       .recipients_json = recipients};
    int64_t id;
    if (fq_store_submit(store, &req, &id))
        fail_msg("submit: %s", fq_store_error(store));
    return id;
}

static char *s_status(PGconn *conn, const char *id)
{
    return fq_test_text(conn, "SELECT status::text FROM fairq.requests WHERE id = $1", 1, id);
}

static void s_expect_status(PGconn *conn, const char *id, const char *wanted)
{
    char *status = s_status(conn, id);
    assert_non_null(status);
    assert_string_equal(status, wanted);
    free(status);
}

static const char *const S_NAME[] = {"name"};

//  Message k of request id_text (in id order) is recipient k of
//  recipients (n of them), with equal fields, pending and untried, under
//  the request's tenant.
static void s_expect_messages_match(PGconn *conn, const char *id_text, const char *recipients,
                                    int n)
{
    //  A hash join: the planner cannot know how many elements the JSON
    //  array has
    fq_test_exec(conn, "SET enable_nestloop = off", 0);
    PGresult *res = fq_test_query(conn,
                                  "WITH m AS (SELECT row_number() OVER (ORDER BY id) AS ord,"
                                  "   recipient, fields, status, try_count, tenant_id"
                                  "   FROM fairq.messages WHERE request_id = $1)"
                                  " SELECT e.ord, e.elem::text, m.recipient, m.fields::text"
                                  " FROM m"
                                  " JOIN jsonb_array_elements($2::jsonb) WITH ORDINALITY"
                                  "   AS e(elem, ord) USING (ord)"
                                  " JOIN fairq.requests r ON r.id = $1"
                                  " WHERE m.recipient IS DISTINCT FROM e.elem->>'to'"
                                  "   OR m.fields <> e.elem->'fields'"
                                  "   OR m.status <> 'pending' OR m.try_count <> 0"
                                  "   OR m.tenant_id <> r.tenant_id"
                                  " ORDER BY e.ord LIMIT 3",
                                  2, id_text, recipients);
    for (int i = 0; i < PQntuples(res); i++)
        print_message("recipient %s %s became %s %s\n", PQgetvalue(res, i, 0),
                      PQgetvalue(res, i, 1), PQgetvalue(res, i, 2), PQgetvalue(res, i, 3));
    assert_int_equal(PQntuples(res), 0);
    PQclear(res);
    fq_test_exec(conn, "RESET enable_nestloop", 0);
    assert_int_equal(
        fq_test_int(conn, "SELECT count(*) FROM fairq.messages WHERE request_id = $1", 1, id_text),
        n);
}

//  25,000 recipients become 25,000 pending messages, in submit order, with
//  their fields intact; the request goes accepted -> splitting -> active,
//  and its first messages can be dispatched before the split ends.
static void test_split_keeps_order_and_fields(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    PGconn *conn = fq_test_connect(s_conninfo);
    char *recipients = s_rich_recipients("big", S_BIG);
    int64_t id = s_submit(store, recipients);
    char id_text[32];
    fq_test_param(id_text, sizeof id_text, id);
    s_expect_status(conn, id_text, "accepted");

    fq_split_result_t split;
    int expect_split[] = {S_CHUNK_SIZE, S_CHUNK_SIZE, S_BIG - 2 * S_CHUNK_SIZE};
    for (int chunk = 0; chunk < 3; chunk++) {
        int rc = fq_store_split_chunk(store, id, S_NAME, 1, 0, &split);
        if (rc != 1)
            fail_msg("chunk %d: %d %s", chunk, rc, fq_store_error(store));
        assert_int_equal(split.split, expect_split[chunk]);
        assert_int_equal(split.rejected, 0);
        assert_int_equal(split.last, chunk == 2);
        assert_int_equal(split.nids, 0); //  Paged by the scheduler
        s_expect_status(conn, id_text, chunk < 2 ? "splitting" : "active");
        if (chunk == 0) {
            //  Dispatch can begin: the first chunk's messages are ready
            int64_t ids[100];
            assert_int_equal(fq_store_next_ready(store, id, 0, 100, ids), 100);
            for (int i = 1; i < 100; i++)
                assert_true(ids[i] > ids[i - 1]);
        }
    }
    //  Nothing left: 0, and nothing changes
    assert_int_equal(fq_store_split_chunk(store, id, S_NAME, 1, 0, &split), 0);
    assert_int_equal(split.split, 0);
    assert_true(split.last);
    s_expect_status(conn, id_text, "active");
    assert_int_equal(fq_test_int(conn,
                                 "SELECT count(*) FROM fairq.requests WHERE id = $1"
                                 " AND total = $2 AND split = $2 AND rejected = 0",
                                 2, id_text, "25000"),
                     1);
    assert_int_equal(fq_test_int(conn,
                                 "SELECT count(*) FROM fairq.recipient_chunks"
                                 " WHERE request_id = $1",
                                 1, id_text),
                     0);

    s_expect_messages_match(conn, id_text, recipients, S_BIG);
    //  The numbers read back as the application wrote them
    char *price = fq_test_text(conn,
                               "SELECT fields->>'price' FROM fairq.messages WHERE request_id = $1"
                               " ORDER BY id OFFSET 3 LIMIT 1",
                               1, id_text);
    assert_string_equal(price, "3.1");
    free(price);
    free(recipients);
    PQfinish(conn);
    fq_store_destroy(&store);
}

//  A small request (S_SMALL recipients, the most that are written with
//  one INSERT rather than COPY) becomes its messages in one split, in
//  submit order, with fields holding quotes, backslashes, tabs and
//  non-ASCII intact, exactly as a big request's do.
static void test_small_split_keeps_order_and_fields(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    PGconn *conn = fq_test_connect(s_conninfo);
    char *recipients = s_rich_recipients("small", S_SMALL);
    int64_t id = s_submit(store, recipients);
    char id_text[32];
    fq_test_param(id_text, sizeof id_text, id);
    fq_split_result_t split;
    int rc = fq_store_split_chunk(store, id, S_NAME, 1, 0, &split);
    if (rc != 1)
        fail_msg("split: %d %s", rc, fq_store_error(store));
    assert_int_equal(split.split, S_SMALL);
    assert_int_equal(split.rejected, 0);
    assert_true(split.last);
    //  Too many ids to hand back: the scheduler pages them
    assert_int_equal(split.nids, 0);
    //  The store's session is idle, no transaction left open by the
    //  pipelines, and its last statement was the split's COMMIT
    char *last = fq_test_text(conn,
                              "SELECT state || ': ' || query FROM pg_stat_activity"
                              " WHERE datname = current_database() AND application_name = 'fairq'",
                              0);
    assert_non_null(last);
    assert_string_equal(last, "idle: COMMIT");
    free(last);
    s_expect_status(conn, id_text, "active");
    s_expect_messages_match(conn, id_text, recipients, S_SMALL);
    int64_t ids[S_SMALL];
    assert_int_equal(fq_store_next_ready(store, id, 0, S_SMALL, ids), S_SMALL);
    for (int i = 1; i < S_SMALL; i++)
        assert_true(ids[i] > ids[i - 1]);
    //  Nothing left
    assert_int_equal(fq_store_split_chunk(store, id, S_NAME, 1, 0, &split), 0);
    assert_true(split.last);
    free(recipients);
    PQfinish(conn);
    fq_store_destroy(&store);
}

//  Warming a new connection (fq_store_split_warm) reads nothing, locks
//  nothing, writes nothing and leaves no transaction open, with requests
//  waiting to be split or not; the splits after it are as without it, and
//  a warming on a connection the server ended fails as any statement.
static void test_warm_changes_nothing(void **unused)
{
    (void)unused;
    PGconn *conn = fq_test_connect(s_conninfo);
    fq_store_t *store = fq_test_store(s_conninfo);
    char *recipients = s_rich_recipients("warm", 10);
    int64_t id = s_submit(store, recipients);
    char id_text[32];
    fq_test_param(id_text, sizeof id_text, id);
    const char *rows = "SELECT (SELECT count(*) FROM fairq.messages) * 1000000"
                       " + (SELECT count(*) FROM fairq.recipient_chunks) * 1000"
                       " + (SELECT count(*) FROM fairq.events)";
    int64_t before = fq_test_int(conn, rows, 0);
    fq_store_t *fresh = fq_test_store(s_conninfo);
    assert_int_equal(fq_store_split_warm(fresh), 0);
    assert_int_equal(fq_store_split_warm(fresh), 0);
    assert_int_equal(fq_test_int(conn, rows, 0), before);
    //  Its session idle, outside any transaction, holding no lock
    assert_int_equal(fq_test_int(conn,
                                 "SELECT count(*) FROM pg_stat_activity a"
                                 " WHERE a.datname = current_database()"
                                 " AND a.application_name = 'fairq'"
                                 " AND (a.state <> 'idle'"
                                 "      OR EXISTS (SELECT 1 FROM pg_locks l WHERE l.pid = a.pid))",
                                 0),
                     0);
    s_expect_status(conn, id_text, "accepted");
    //  The warmed connection splits as any other
    fq_split_result_t split;
    int rc = fq_store_split_chunk(fresh, id, S_NAME, 1, 0, &split);
    if (rc != 1)
        fail_msg("split: %d %s", rc, fq_store_error(fresh));
    assert_int_equal(split.split, 10);
    s_expect_messages_match(conn, id_text, recipients, 10);
    //  The server ended the sessions: the warming says so
    fq_test_kill_store_backends(conn, 5000);
    assert_int_equal(fq_store_split_warm(fresh), FQ_EDB);
    assert_int_equal(fq_store_reconnect(fresh), 0);
    assert_int_equal(fq_store_split_warm(fresh), 0);
    free(recipients);
    fq_store_destroy(&fresh);
    fq_store_destroy(&store);
    PQfinish(conn);
}

typedef struct {
    const char *json;   //  The recipient as submitted
    const char *reason; //  A word of the reason it is rejected for, NULL if good
} s_case_t;

//  One chunk of good and bad recipients: each bad one is rejected alone,
//  at its position, with its reason; the good ones become messages.
static void test_bad_recipients_are_rejected_alone(void **unused)
{
    (void)unused;
    const s_case_t cases[] = {
        {"{\"to\":\"first@example.com\",\"fields\":{\"name\":\"A\"}}", NULL},
        {"{\"fields\":{\"name\":\"x\"}}", "\"to\""},
        {"{\"to\":42,\"fields\":{\"name\":\"x\"}}", "\"to\""},
        {"{\"to\":null,\"fields\":{\"name\":\"x\"}}", "\"to\""},
        {"{\"to\":\"no-at.example.com\",\"fields\":{\"name\":\"x\"}}", "local@domain"},
        {"{\"to\":\"a@b@example.com\",\"fields\":{\"name\":\"x\"}}", "more than one @"},
        {"{\"to\":\"@example.com\",\"fields\":{\"name\":\"x\"}}", "local@domain"},
        {"{\"to\":\"a@\",\"fields\":{\"name\":\"x\"}}", "local@domain"},
        {"{\"to\":\"\",\"fields\":{\"name\":\"x\"}}", "empty"},
        {"{\"to\":\"a b@example.com\",\"fields\":{\"name\":\"x\"}}", "space"},
        {"{\"to\":\" a@example.com\",\"fields\":{\"name\":\"x\"}}", "space"},
        {"{\"to\":\"a\\r@example.com\",\"fields\":{\"name\":\"x\"}}", "CR or LF"},
        {"{\"to\":\"a@exam\\nple.com\",\"fields\":{\"name\":\"x\"}}", "CR or LF"},
        {"{\"to\":\"a@example.com\\r\\nBcc: all@example.com\",\"fields\":{\"name\":\"x\"}}",
         "CR or LF"},
        {"{\"to\":\"\\na@example.com\",\"fields\":{\"name\":\"x\"}}", "CR or LF"},
        {"{\"to\":\"a@example.com\\n\",\"fields\":{\"name\":\"x\"}}", "CR or LF"},
        {"{\"to\":\"a@exa_mple.com\",\"fields\":{\"name\":\"x\"}}", "domain"},
        {"{\"to\":\"a@localhost\",\"fields\":{\"name\":\"x\"}}", "domain"},
        {"{\"to\":\"a@ex..ample.com\",\"fields\":{\"name\":\"x\"}}", "domain"},
        {"{\"to\":\"caf\\u00e9@example.com\",\"fields\":{\"name\":\"x\"}}", "non-ASCII"},
        {"{\"to\":\"middle@example.com\",\"fields\":{\"name\":\"M\",\"extra\":7}}", NULL},
        {"{\"to\":\"nofield@example.com\",\"fields\":{}}", "missing"},
        {"{\"to\":\"nofields@example.com\"}", "missing"},
        {"{\"to\":\"other@example.com\",\"fields\":{\"nam\":\"x\"}}", "missing"},
        {"{\"to\":\"obj@example.com\",\"fields\":{\"name\":{\"first\":\"x\"}}}", "not a string"},
        {"{\"to\":\"arr@example.com\",\"fields\":{\"name\":[\"x\"]}}", "not a string"},
        {"{\"to\":\"nul@example.com\",\"fields\":{\"name\":null}}", "not a string"},
        {"{\"to\":\"unused@example.com\",\"fields\":{\"name\":\"x\",\"deep\":[1]}}",
         "not a string"},
        {"{\"to\":\"fo@example.com\",\"fields\":[\"name\"]}", "not an object"},
        {"\"plain@example.com\"", "not an object"},
        {"42", "not an object"},
        {"null", "not an object"},
        {"[\"a@example.com\"]", "not an object"},
        //  Numbers jansson cannot hold: that recipient only, not the request
        {"{\"to\":\"huge@example.com\",\"fields\":{\"name\":\"x\",\"n\":1e400}}",
         "could not be read"},
        {"{\"to\":\"long@example.com\",\"fields\":{\"name\":\"x\","
         "\"n\":123456789012345678901234567890}}",
         "could not be read"},
        //  A long non-ASCII field name in the reason, cut on a character
        {"{\"to\":\"utf@example.com\",\"fields\":{\"name\":\"x\",\"a\u00e9\u00e9\u00e9"
         "\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9"
         "\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9"
         "\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\":{}}}",
         "not a string"},
        //  name goes into the subject (nheader 1 below): no line breaks there
        {"{\"to\":\"hdr@example.com\",\"fields\":{\"name\":\"x\\r\\nBcc: all@example.com\"}}",
         "subject"},
        {"{\"to\":\"hdr2@example.com\",\"fields\":{\"name\":\"two\\nlines\"}}", "subject"},
        {"{\"to\":\"o'neil+tag@sub.example.com\",\"fields\":{\"name\":1.5}}", NULL},
        {"{\"to\":\"last@example.com\",\"fields\":{\"name\":true}}", NULL},
    };
    size_t n = sizeof cases / sizeof cases[0];
    size_t capacity = 2;
    for (size_t i = 0; i < n; i++)
        capacity += strlen(cases[i].json) + 1;
    char *recipients = malloc(capacity + 1);
    assert_non_null(recipients);
    strcpy(recipients, "[");
    int good = 0;
    for (size_t i = 0; i < n; i++) {
        strcat(recipients, i ? "," : "");
        strcat(recipients, cases[i].json);
        good += !cases[i].reason;
    }
    strcat(recipients, "]");

    fq_store_t *store = fq_test_store(s_conninfo);
    PGconn *conn = fq_test_connect(s_conninfo);
    int64_t id = s_submit(store, recipients);
    char id_text[32];
    fq_test_param(id_text, sizeof id_text, id);
    fq_split_result_t split;
    int rc = fq_store_split_chunk(store, id, S_NAME, 1, 1, &split);
    if (rc != 1)
        fail_msg("split: %d %s", rc, fq_store_error(store));
    assert_int_equal(split.split, good);
    assert_int_equal(split.rejected, (int)n - good);
    assert_true(split.last);
    s_expect_status(conn, id_text, "active");
    //  The good ones' ids come back, all in the one destination
    assert_int_equal(split.nids, good);
    assert_int_equal(split.nid_counts, 1);
    assert_int_equal(split.id_counts[0], good);
    assert_int_equal(split.ids[0], fq_test_int(conn,
                                               "SELECT min(id) FROM fairq.messages"
                                               " WHERE request_id = $1",
                                               1, id_text));
    assert_int_equal(split.ids[good - 1], fq_test_int(conn,
                                                      "SELECT max(id) FROM fairq.messages"
                                                      " WHERE request_id = $1",
                                                      1, id_text));
    assert_int_equal(fq_test_int(conn,
                                 "SELECT split * 1000 + rejected FROM fairq.requests"
                                 " WHERE id = $1",
                                 1, id_text),
                     good * 1000 + ((int)n - good));

    PGresult *rejects = fq_test_query(conn,
                                      "SELECT position, recipient, reason FROM fairq.rejects"
                                      " WHERE request_id = $1 ORDER BY position",
                                      1, id_text);
    PGresult *messages = fq_test_query(conn,
                                       "SELECT recipient, fields FROM fairq.messages"
                                       " WHERE request_id = $1 ORDER BY id",
                                       1, id_text);
    assert_int_equal(PQntuples(rejects), (int)n - good);
    assert_int_equal(PQntuples(messages), good);
    int reject = 0, message = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *recipient = json_loads(cases[i].json, JSON_DECODE_ANY, NULL);
        json_t *to = json_is_object(recipient) ? json_object_get(recipient, "to") : NULL;
        if (cases[i].reason) {
            assert_int_equal(atoi(PQgetvalue(rejects, reject, 0)), (int)i);
            const char *reason = PQgetvalue(rejects, reject, 2);
            if (!strstr(reason, cases[i].reason))
                fail_msg("recipient %zu %s: reason \"%s\" lacks \"%s\"", i, cases[i].json, reason,
                         cases[i].reason);
            //  The address is kept as given, when it was a string
            if (json_is_string(to))
                assert_string_equal(PQgetvalue(rejects, reject, 1), json_string_value(to));
            else
                assert_true(PQgetisnull(rejects, reject, 1));
            reject++;
        } else {
            assert_string_equal(PQgetvalue(messages, message, 0), json_string_value(to));
            message++;
        }
        json_decref(recipient);
    }
    PQclear(rejects);
    PQclear(messages);
    //  No line break ever reaches a stored recipient
    assert_int_equal(
        fq_test_int(conn, "SELECT count(*) FROM fairq.messages WHERE recipient ~ '[\\r\\n]'", 0),
        0);
    free(recipients);
    PQfinish(conn);
    fq_store_destroy(&store);
}

//  A request whose every recipient is bad ends done, with nothing split and
//  a finish time (so retention finds it); one with no recipients too.
static void test_all_bad_request_is_done(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    PGconn *conn = fq_test_connect(s_conninfo);
    const char *lists[] = {"[{\"to\":\"bad\"},{\"to\":\"a@example.com\"},\"x\"]", "[]"};
    const int rejected[] = {3, 0};
    for (size_t k = 0; k < 2; k++) {
        int64_t id = s_submit(store, lists[k]);
        char id_text[32];
        fq_test_param(id_text, sizeof id_text, id);
        fq_split_result_t split;
        int rc = fq_store_split_chunk(store, id, S_NAME, 1, 0, &split);
        assert_int_equal(rc, rejected[k] ? 1 : 0);
        assert_int_equal(split.split, 0);
        assert_int_equal(split.rejected, rejected[k]);
        assert_true(split.last);
        assert_int_equal(split.nids, 0);
        s_expect_status(conn, id_text, "done");
        assert_int_equal(fq_test_int(conn,
                                     "SELECT count(*) FROM fairq.requests WHERE id = $1"
                                     " AND split = 0 AND rejected = $2"
                                     " AND finished_at IS NOT NULL",
                                     2, id_text, rejected[k] ? "3" : "0"),
                         1);
        assert_int_equal(fq_test_int(conn,
                                     "SELECT count(*) FROM fairq.messages"
                                     " WHERE request_id = $1",
                                     1, id_text),
                         0);
        //  A finished request is out of the scheduler's way
        fq_due_request_t due[64];
        int found = fq_store_due_requests(store, 64, due);
        assert_true(found >= 0);
        for (int i = 0; i < found; i++)
            assert_true(due[i].id != id);
    }
    PQfinish(conn);
    fq_store_destroy(&store);
}

//  A request cancelled before it was split loses its chunks without a
//  single message being written, and stays cancelled.
static void test_cancelled_request_splits_into_nothing(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    PGconn *conn = fq_test_connect(s_conninfo);
    char *recipients = fq_test_recipients("cancel", S_CHUNK_SIZE + 500);
    int64_t id = s_submit(store, recipients);
    char id_text[32];
    fq_test_param(id_text, sizeof id_text, id);
    fq_test_exec(conn, "UPDATE fairq.requests SET status = 'cancelled' WHERE id = $1", 1, id_text);
    fq_split_result_t split;
    int chunks = 0, rc;
    while ((rc = fq_store_split_chunk(store, id, S_NAME, 1, 0, &split)) == 1) {
        assert_int_equal(split.split, 0);
        assert_int_equal(split.rejected, 0);
        chunks++;
    }
    if (rc)
        fail_msg("split: %s", fq_store_error(store));
    assert_int_equal(chunks, 2);
    assert_int_equal(
        fq_test_int(conn, "SELECT count(*) FROM fairq.messages WHERE request_id = $1", 1, id_text),
        0);
    assert_int_equal(fq_test_int(conn,
                                 "SELECT count(*) FROM fairq.recipient_chunks"
                                 " WHERE request_id = $1",
                                 1, id_text),
                     0);
    s_expect_status(conn, id_text, "cancelled");
    free(recipients);
    PQfinish(conn);
    fq_store_destroy(&store);
}

//  A split that fails half way through its COPY (here a trigger raises at
//  the 5,000th row; a crash is the same transaction lost) leaves no
//  message of the chunk and the chunk itself in place; a retry splits it
//  fully, with no duplicate.
static void test_failed_split_leaves_chunk_for_retry(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    PGconn *conn = fq_test_connect(s_conninfo);
    char *recipients = fq_test_recipients("fault", S_CHUNK_SIZE + 2000);
    int64_t id = s_submit(store, recipients);
    char id_text[32];
    fq_test_param(id_text, sizeof id_text, id);
    char trigger[512];
    snprintf(trigger, sizeof trigger,
             "CREATE FUNCTION fq_test_fault() RETURNS trigger LANGUAGE plpgsql AS $$"
             " BEGIN IF nextval('fq_test_fault_seq') = %d THEN"
             "   RAISE EXCEPTION 'injected fault at row %%', %d;"
             " END IF; RETURN NEW; END $$",
             S_FAULT_ROW, S_FAULT_ROW);
    fq_test_exec(conn, "CREATE SEQUENCE fq_test_fault_seq", 0);
    fq_test_exec(conn, trigger, 0);
    fq_test_exec(conn,
                 "CREATE TRIGGER fq_test_fault BEFORE INSERT ON fairq.messages"
                 " FOR EACH ROW EXECUTE FUNCTION fq_test_fault()",
                 0);

    fq_split_result_t split = {.split = -1};
    int rc = fq_store_split_chunk(store, id, S_NAME, 1, 0, &split);
    assert_int_equal(rc, FQ_EDB);
    print_message("%s\n", fq_store_error(store));
    assert_non_null(strstr(fq_store_error(store), "injected fault at row 5000"));
    assert_int_equal(split.split, 0);
    assert_int_equal(fq_test_int(conn, "SELECT last_value FROM fq_test_fault_seq", 0), S_FAULT_ROW);
    //  Nothing of the chunk, the chunk still there, the request untouched
    assert_int_equal(
        fq_test_int(conn, "SELECT count(*) FROM fairq.messages WHERE request_id = $1", 1, id_text),
        0);
    assert_int_equal(fq_test_int(conn,
                                 "SELECT count(*) FROM fairq.recipient_chunks"
                                 " WHERE request_id = $1",
                                 1, id_text),
                     2);
    assert_int_equal(fq_test_int(conn,
                                 "SELECT count(*) FROM fairq.requests WHERE id = $1"
                                 " AND split = 0 AND rejected = 0 AND status = 'accepted'",
                                 1, id_text),
                     1);

    //  The retry, on the same connection, splits everything once
    fq_test_exec(conn, "DROP TRIGGER fq_test_fault ON fairq.messages", 0);
    int chunks = 0;
    while ((rc = fq_store_split_chunk(store, id, S_NAME, 1, 0, &split)) == 1)
        chunks++;
    if (rc)
        fail_msg("retry: %s", fq_store_error(store));
    assert_int_equal(chunks, 2);
    assert_int_equal(fq_test_int(conn,
                                 "SELECT count(DISTINCT recipient) * 10 + (count(*) ="
                                 " count(DISTINCT recipient))::int"
                                 " FROM fairq.messages WHERE request_id = $1",
                                 1, id_text),
                     (S_CHUNK_SIZE + 2000) * 10 + 1);
    s_expect_status(conn, id_text, "active");
    fq_test_exec(conn, "DROP FUNCTION fq_test_fault()", 0);
    fq_test_exec(conn, "DROP SEQUENCE fq_test_fault_seq", 0);
    free(recipients);
    PQfinish(conn);
    fq_store_destroy(&store);
}

//  A split whose connection is killed mid-COPY (the database restarted, an
//  operator terminated it) fails cleanly, leaves nothing of its chunk, and
//  after a reconnect the retry splits everything once.
static void test_killed_split_leaves_chunk_for_retry(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    PGconn *conn = fq_test_connect(s_conninfo);
    char *recipients = fq_test_recipients("killed", S_CHUNK_SIZE);
    int64_t id = s_submit(store, recipients);
    char id_text[32];
    fq_test_param(id_text, sizeof id_text, id);
    //  A trigger stalls the COPY at its 5,000th row on an advisory lock
    //  this connection holds; another connection, meanwhile, waits for the
    //  stall and terminates the stalled backend
    PQclear(fq_test_query(conn, "SELECT pg_advisory_lock(4242)", 0));
    fq_test_exec(conn,
                 "CREATE FUNCTION fq_test_stall() RETURNS trigger LANGUAGE plpgsql AS $$"
                 " BEGIN IF NEW.recipient = 'killed4999@example.com' THEN"
                 "   PERFORM pg_advisory_xact_lock_shared(4242);"
                 " END IF; RETURN NEW; END $$",
                 0);
    fq_test_exec(conn,
                 "CREATE TRIGGER fq_test_stall BEFORE INSERT ON fairq.messages"
                 " FOR EACH ROW EXECUTE FUNCTION fq_test_stall()",
                 0);
    PGconn *killer = fq_test_connect(s_conninfo);
    assert_int_equal(PQsendQuery(killer,
                                 "DO $$ DECLARE victim integer; BEGIN"
                                 " FOR i IN 1..600 LOOP"
                                 "  PERFORM pg_stat_clear_snapshot();"
                                 "  SELECT pid INTO victim FROM pg_stat_activity"
                                 "   WHERE datname = current_database()"
                                 "     AND application_name = 'fairq'"
                                 "     AND wait_event_type = 'Lock' AND wait_event = 'advisory';"
                                 "  EXIT WHEN victim IS NOT NULL;"
                                 "  PERFORM pg_sleep(0.05);"
                                 " END LOOP;"
                                 " PERFORM pg_terminate_backend(victim);"
                                 " END $$"),
                     1);
    fq_split_result_t split;
    int rc = fq_store_split_chunk(store, id, S_NAME, 1, 0, &split);
    print_message("%d %s\n", rc, fq_store_error(store));
    assert_int_equal(rc, FQ_EDB);
    PGresult *res;
    while ((res = PQgetResult(killer)))
        PQclear(res);
    PQfinish(killer);
    PQclear(fq_test_query(conn, "SELECT pg_advisory_unlock(4242)", 0));
    fq_test_exec(conn, "DROP TRIGGER fq_test_stall ON fairq.messages", 0);
    fq_test_exec(conn, "DROP FUNCTION fq_test_stall()", 0);

    assert_false(fq_store_connected(store));
    assert_int_equal(
        fq_test_int(conn, "SELECT count(*) FROM fairq.messages WHERE request_id = $1", 1, id_text),
        0);
    assert_int_equal(fq_test_int(conn,
                                 "SELECT count(*) FROM fairq.recipient_chunks"
                                 " WHERE request_id = $1",
                                 1, id_text),
                     1);
    assert_int_equal(fq_store_reconnect(store), 0);
    assert_int_equal(fq_store_split_chunk(store, id, S_NAME, 1, 0, &split), 1);
    assert_int_equal(split.split, S_CHUNK_SIZE);
    assert_true(split.last);
    assert_int_equal(
        fq_test_int(conn, "SELECT count(*) FROM fairq.messages WHERE request_id = $1", 1, id_text),
        S_CHUNK_SIZE);
    free(recipients);
    PQfinish(conn);
    fq_store_destroy(&store);
}

//  The resolver of test_split_stamps_destinations: gmail.com and
//  googlemail.com are "google", yahoo.com "yahoo", any other "default".
static const char *s_of_domain(const char *domain, void *arg)
{
    (void)arg;
    if (strcmp(domain, "gmail.com") == 0 || strcmp(domain, "googlemail.com") == 0)
        return "google";
    return strcmp(domain, "yahoo.com") == 0 ? "yahoo" : NULL;
}

//  Each message is stamped with its domain's destination (any case of the
//  domain), "default" when none names it; the request's destinations are
//  recorded once each, and said back comma-separated, in the split's own
//  transaction.
static void test_split_stamps_destinations(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    PGconn *conn = fq_test_connect(s_conninfo);
    int64_t id = s_submit(store, "[{\"to\":\"a@gmail.com\",\"fields\":{\"name\":\"A\"}},"
                                 "{\"to\":\"b@GoogleMail.COM\",\"fields\":{\"name\":\"B\"}},"
                                 "{\"to\":\"c@yahoo.com\",\"fields\":{\"name\":\"C\"}},"
                                 "{\"to\":\"d@example.org\",\"fields\":{\"name\":\"D\"}},"
                                 "{\"to\":\"e@gmail.com\",\"fields\":{\"name\":\"E\"}}]");
    char id_text[32];
    fq_test_param(id_text, sizeof id_text, id);
    fq_split_destinations_t destinations = {.of_domain = s_of_domain};
    fq_split_result_t split;
    assert_int_equal(fq_store_split_chunk_to(store, id, S_NAME, 1, 1, &destinations, &split), 1);
    assert_int_equal(split.split, 5);
    assert_non_null(destinations.written.data);
    assert_string_equal(destinations.written.data, "google,yahoo,default");
    char *stamped = fq_test_text(conn,
                                 "SELECT string_agg(destination, ',' ORDER BY id)"
                                 " FROM fairq.messages WHERE request_id = $1",
                                 1, id_text);
    assert_string_equal(stamped, "google,google,yahoo,default,google");
    free(stamped);
    char *recorded = fq_test_text(conn,
                                  "SELECT string_agg(destination, ',' ORDER BY destination)"
                                  " FROM fairq.request_destinations WHERE request_id = $1",
                                  1, id_text);
    assert_string_equal(recorded, "default,google,yahoo");
    free(recorded);
    //  A request split whole hands back its message ids, grouped by
    //  destination in the order said, ascending within each
    assert_int_equal(split.nids, 5);
    assert_int_equal(split.nid_counts, 3);
    assert_int_equal(split.id_counts[0], 3);
    assert_int_equal(split.id_counts[1], 1);
    assert_int_equal(split.id_counts[2], 1);
    char *grouped = fq_test_text(conn,
                                 "SELECT string_agg(id::text, ',' ORDER BY array_position("
                                 "  ARRAY['google', 'yahoo', 'default'], destination), id)"
                                 " FROM fairq.messages WHERE request_id = $1",
                                 1, id_text);
    char said[256] = "";
    for (int i = 0; i < split.nids; i++)
        snprintf(said + strlen(said), sizeof said - strlen(said), "%s%lld", i ? "," : "",
                 (long long)split.ids[i]);
    assert_string_equal(said, grouped);
    free(grouped);
    //  No chunk left: nothing written, nothing said
    assert_int_equal(fq_store_split_chunk_to(store, id, S_NAME, 1, 1, &destinations, &split), 0);
    assert_int_equal(destinations.written.size, 0);
    //  A fixed destination (an http request's host's) takes every message
    int64_t fixed = s_submit(store, "[{\"to\":\"x@gmail.com\",\"fields\":{\"name\":\"X\"}}]");
    char fixed_text[32];
    fq_test_param(fixed_text, sizeof fixed_text, fixed);
    destinations.fixed = "hooks";
    assert_int_equal(fq_store_split_chunk_to(store, fixed, S_NAME, 1, 1, &destinations, &split), 1);
    assert_string_equal(destinations.written.data, "hooks");
    stamped = fq_test_text(conn, "SELECT destination FROM fairq.messages WHERE request_id = $1", 1,
                           fixed_text);
    assert_string_equal(stamped, "hooks");
    free(stamped);
    fq_buf_free(&destinations.written);
    fq_store_destroy(&store);
    PQfinish(conn);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split_keeps_order_and_fields),
        cmocka_unit_test(test_small_split_keeps_order_and_fields),
        cmocka_unit_test(test_bad_recipients_are_rejected_alone),
        cmocka_unit_test(test_all_bad_request_is_done),
        cmocka_unit_test(test_cancelled_request_splits_into_nothing),
        cmocka_unit_test(test_failed_split_leaves_chunk_for_retry),
        cmocka_unit_test(test_killed_split_leaves_chunk_for_retry),
        cmocka_unit_test(test_split_stamps_destinations),
        cmocka_unit_test(test_warm_changes_nothing),
    };
    return cmocka_run_group_tests(tests, s_group_setup, s_group_teardown);
}
