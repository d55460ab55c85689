/*  store_split_at_submit_test.c — fairq.split_at_submit (0028), the split
    of a small mail request in its submit's own transaction, against a
    real PostgreSQL.

    The SQL split may only take a request the splitter would make the
    same messages of: each case of the corpus is submitted twice, once
    split at its submit and once by fq_store_split_chunk_to (the
    splitter's own code, with the fields the C template parser finds);
    whatever SQL took, the splitter must have rejected none of and written
    alike, row for row. Every case also says whether SQL must take it, so
    that a fast path that took nothing, or took a recipient the splitter
    rejects, fails here. */
#include "fq_store.h"
#include "fq_error.h"
#include "fq_template.h"
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>
#include "fq_test_sql.h"

//  The most recipients fairq.split_at_submit takes (its c_max).
#define S_MAX 100

static char s_conninfo[128];
static int64_t s_tenant;

static int s_group_setup(void **state)
{
    (void)state;
    const char *tenants[] = {"acme", NULL};
    if (fq_test_db_prepare(s_conninfo, sizeof s_conninfo, tenants, &s_tenant))
        return -1;
    PGconn *conn = fq_test_connect(s_conninfo);
    PGresult *res = PQexec(conn, "INSERT INTO fairq.destinations (name) VALUES ('bigmail');"
                                 " INSERT INTO fairq.destination_domains (domain, destination)"
                                 " VALUES ('big.example', 'bigmail')");
    int rc = PQresultStatus(res) == PGRES_COMMAND_OK ? 0 : -1;
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

//  A connection whose submits split small requests (the test database
//  leaves them to the splitter: fq_test_db_splits_by_splitter).
static PGconn *s_connect_splitting(void)
{
    PGconn *conn = fq_test_connect(s_conninfo);
    fq_test_exec(conn, "SET fairq.split_at_submit = on", 0);
    return conn;
}

//  The splitter's destinations: big.example is bigmail's.
static const char *s_of_domain(const char *domain, void *arg)
{
    (void)arg;
    return strcmp(domain, "big.example") == 0 ? "bigmail" : NULL;
}

//  The messages of request id, one line each in id order.
static char *s_messages(PGconn *conn, int64_t id)
{
    char text[32];
    return fq_test_text(conn,
                        "SELECT coalesce(string_agg(destination || ' ' || recipient || ' '"
                        " || fields::text, E'\\n' ORDER BY id), '')"
                        " FROM fairq.messages WHERE request_id = $1",
                        1, fq_test_param(text, sizeof text, id));
}

static char *s_status(PGconn *conn, int64_t id)
{
    char text[32];
    return fq_test_text(conn, "SELECT status::text FROM fairq.requests WHERE id = $1", 1,
                        fq_test_param(text, sizeof text, id));
}

typedef struct {
    const char *what;
    const char *subject, *body;
    const char *recipients;
    bool taken; //  fairq.split_at_submit must take it (else it must not)
} s_case_t;

//  Submits a case with fairq.submit_json on conn; returns its id.
static int64_t s_submit_sql(PGconn *conn, const s_case_t *c)
{
    return fq_test_int(conn,
                       "SELECT fairq.submit_json('acme', 'news@acme.example', $1, $2, $3::json)", 3,
                       c->subject, c->body, c->recipients);
}

//  Splits a case with the splitter's code: submitted by the store (which
//  leaves it unsplit), its required fields from the C parser, the
//  subject's first.
static int64_t s_submit_split_c(fq_store_t *store, const s_case_t *c, fq_split_result_t *result)
{
    char error[256];
    fq_template_t *subject = fq_template_new(c->subject, FQ_TEMPLATE_HEADER, error, sizeof error);
    fq_template_t *body = fq_template_new(c->body, FQ_TEMPLATE_PLAIN, error, sizeof error);
    assert_non_null(subject);
    assert_non_null(body);
    const char *names[32];
    size_t count = 0;
    for (size_t i = 0; i < fq_template_field_count(subject); i++)
        names[count++] = fq_template_field(subject, i);
    size_t nheader = count;
    for (size_t i = 0; i < fq_template_field_count(body); i++)
        names[count++] = fq_template_field(body, i);
    fq_submit_t req = {.tenant = "acme",
                       .from = "news@acme.example",
                       .subject = c->subject,
                       .body = c->body,
                       .recipients_json = c->recipients};
    int64_t id;
    if (fq_store_submit(store, &req, &id))
        fail_msg("%s: submit: %s", c->what, fq_store_error(store));
    fq_split_destinations_t destinations = {.of_domain = s_of_domain};
    int rc = fq_store_split_chunk_to(store, id, names, count, nheader, &destinations, result);
    fq_buf_free(&destinations.written);
    fq_template_destroy(&subject);
    fq_template_destroy(&body);
    if (rc != 1)
        fail_msg("%s: split: %d %s", c->what, rc, fq_store_error(store));
    return id;
}

//  n recipients, the i-th at big.example when i is odd; malloc'ed.
static char *s_recipients(int n)
{
    size_t capacity = (size_t)n * 80 + 3;
    char *json = malloc(capacity);
    assert_non_null(json);
    size_t len = 0;
    json[len++] = '[';
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(json + len, capacity - len,
                                "%s{\"to\":\"r%d@%s\",\"fields\":{\"name\":\"N%d\"}}", i ? "," : "",
                                i, i % 2 ? "big.example" : "x.example", i);
    json[len++] = ']';
    json[len] = 0;
    return json;
}

//  Each case split both ways: what SQL took, the splitter took whole and
//  wrote alike; what SQL left stays unsplit, for the splitter.
static void test_sql_takes_only_what_the_splitter_takes_alike(void **unused)
{
    (void)unused;
    char *hundred = s_recipients(S_MAX), *too_many = s_recipients(S_MAX + 1);
    const char *hi = "Hi {{name}}", *dear = "Dear {{ name }}";
    const s_case_t cases[] = {
        {"one recipient", hi, dear, "[{\"to\":\"a@x.example\",\"fields\":{\"name\":\"A\"}}]", true},
        {"destinations by domain, any case", hi, dear,
         "[{\"to\":\"a@Big.Example\",\"fields\":{\"name\":\"A\"}},"
         " {\"to\":\"b@x.example\",\"fields\":{\"name\":\"B\"}},"
         " {\"fields\":{\"name\":\"C\"},\"to\":\"c@big.example\"}]",
         true},
        {"fields of every kind", hi, "{{name}} {{n}} {{p}} {{yes}} {{no}} {{note}}",
         "[{\"to\":\"a@x.example\",\"fields\":{\"name\":\"\\u00e9 \\\"q\\\"\",\"n\":-3,"
         "\"p\":2.50,\"yes\":true,\"no\":false,\"note\":\"two\\nlines in the body\","
         "\"unused\":\"x\"}}]",
         true},
        {"no fields needed, none given", "Hi", "Hello", "[{\"to\":\"a@x.example\"}]", true},
        {"fields null", "Hi", "Hello", "[{\"to\":\"a@x.example\",\"fields\":null}]", true},
        {"keys written with escapes", hi, dear,
         "[{\"\\u0074o\":\"a@x.example\",\"\\u0066ields\":{\"n\\u0061me\":\"A\"}}]", true},
        {"a surrogate pair", hi, dear,
         "[{\"to\":\"a@x.example\",\"fields\":{\"name\":\"\\ud83d\\ude00\"}}]", true},
        {"good and bad together", hi, dear,
         "[{\"to\":\"a@x.example\",\"fields\":{\"name\":\"A\"}},"
         " {\"to\":\"b@x.example\",\"fields\":{}}]",
         false},
        {"on the global list", "Hi", "Hello", "[{\"to\":\"all-gone@x.example\"}]", false},
        {"the most recipients", hi, dear, hundred, true},
        {"one recipient too many", hi, dear, too_many, false},
        {"a field missing", hi, dear, "[{\"to\":\"a@x.example\",\"fields\":{\"other\":\"A\"}}]",
         false},
        {"no fields but needed", hi, dear, "[{\"to\":\"a@x.example\"}]", false},
        {"a subject field on two lines", hi, dear,
         "[{\"to\":\"a@x.example\",\"fields\":{\"name\":\"A\\r\\nBcc: e@evil.example\"}}]", false},
        {"not an address", hi, dear, "[{\"to\":\"a@localhost\",\"fields\":{\"name\":\"A\"}}]",
         false},
        {"a space in the address", hi, dear,
         "[{\"to\":\"a b@x.example\",\"fields\":{\"name\":\"A\"}}]", false},
        {"to not a string", hi, dear, "[{\"to\":5,\"fields\":{\"name\":\"A\"}}]", false},
        {"a bare address", "Hi", "Hello", "[\"a@x.example\"]", false},
        {"a key of another name", "Hi", "Hello",
         "[{\"to\":\"a@x.example\",\"email\":\"a@x.example\"}]", false},
        {"a key twice", "Hi", "Hello", "[{\"to\":\"a@x.example\",\"to\":\"b@x.example\"}]", false},
        {"a field key twice", hi, dear,
         "[{\"to\":\"a@x.example\",\"fields\":{\"name\":\"A\",\"name\":\"B\"}}]", false},
        {"a field not a scalar", hi, dear,
         "[{\"to\":\"a@x.example\",\"fields\":{\"name\":{\"first\":\"A\"}}}]", false},
        {"a field null", hi, dear, "[{\"to\":\"a@x.example\",\"fields\":{\"name\":null}}]", false},
        {"fields not an object", "Hi", "Hello", "[{\"to\":\"a@x.example\",\"fields\":[1]}]", false},
        {"a number jansson cannot read", hi, dear,
         "[{\"to\":\"a@x.example\",\"fields\":{\"name\":\"A\",\"n\":1e400}}]", false},
        {"a number of twenty digits", hi, dear,
         "[{\"to\":\"a@x.example\",\"fields\":{\"name\":12345678901234567890}}]", false},
        {"a NUL escape", hi, dear, "[{\"to\":\"a@x.example\",\"fields\":{\"name\":\"A\\u0000\"}}]",
         false},
        {"a suppressed address", "Hi", "Hello", "[{\"to\":\"Gone@X.example\"}]", false},
        {"unsubscribe_url used", "Hi", "Leave: {{unsubscribe_url}}",
         "[{\"to\":\"a@x.example\",\"fields\":{\"unsubscribe_url\":\"https://u.example/\"}}]",
         false},
    };
    PGconn *conn = s_connect_splitting();
    char tenant[32];
    fq_test_exec(conn,
                 "INSERT INTO fairq.suppressions (tenant_id, address, reason)"
                 " VALUES ($1, 'gone@x.example', 'manual'), (NULL, 'all-gone@x.example', 'manual')",
                 1, fq_test_param(tenant, sizeof tenant, s_tenant));
    fq_store_t *store = fq_test_store(s_conninfo);
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const s_case_t *c = &cases[k];
        int64_t fast = s_submit_sql(conn, c);
        char *status = s_status(conn, fast);
        bool taken = strcmp(status, "active") == 0;
        if (taken != c->taken)
            fail_msg("%s: split at submit %s, status %s", c->what, taken ? "took it" : "left it",
                     status);
        fq_split_result_t result;
        int64_t slow = s_submit_split_c(store, c, &result);
        char *fast_rows = s_messages(conn, fast), *slow_rows = s_messages(conn, slow);
        if (taken) {
            if (result.rejected != 0)
                fail_msg("%s: split at submit, but the splitter rejected %d", c->what,
                         result.rejected);
            assert_string_equal(fast_rows, slow_rows);
        } else {
            //  Left as it was: the splitter's, whole
            assert_string_equal(status, "accepted");
            assert_string_equal(fast_rows, "");
            char id[32];
            assert_int_equal(fq_test_int(conn,
                                         "SELECT count(*) FROM fairq.recipient_chunks"
                                         " WHERE request_id = $1",
                                         1, fq_test_param(id, sizeof id, fast)),
                             1);
        }
        free(status);
        free(fast_rows);
        free(slow_rows);
    }
    fq_store_destroy(&store);
    PQfinish(conn);
    free(hundred);
    free(too_many);
}

//  A request split at its submit is what a split by the splitter leaves:
//  active, counted, its chunk gone, its destinations recorded, its
//  request.split event written, its messages in the recipients' order;
//  and its submit still wakes fairqd, once, at commit.
static void test_a_request_split_at_submit_is_ready_to_page(void **unused)
{
    (void)unused;
    PGconn *listener = fq_test_connect(s_conninfo);
    fq_test_exec(listener, "LISTEN fairq_requests", 0);
    PGconn *conn = s_connect_splitting();
    fq_test_exec(conn, "BEGIN", 0);
    int64_t id = s_submit_sql(conn, &(s_case_t){.subject = "Hi {{name}}",
                                                .body = "Dear {{name}}",
                                                .recipients = "[{\"to\":\"z@x.example\",\"fields\":"
                                                              "{\"name\":\"Z\"}},{\"to\":\"y@big."
                                                              "example\",\"fields\":{\"name\":"
                                                              "\"Y\"}}]"});
    fq_test_exec(conn, "COMMIT", 0);
    char text[32];
    const char *param = fq_test_param(text, sizeof text, id);
    assert_int_equal(fq_test_int(conn,
                                 "SELECT count(*) FROM fairq.requests WHERE id = $1"
                                 " AND status = 'active' AND split = 2 AND total = 2"
                                 " AND rejected = 0",
                                 1, param),
                     1);
    assert_int_equal(
        fq_test_int(conn, "SELECT count(*) FROM fairq.recipient_chunks WHERE request_id = $1", 1,
                    param),
        0);
    char *reached = fq_test_text(conn,
                                 "SELECT string_agg(destination, ',' ORDER BY destination)"
                                 " FROM fairq.request_destinations WHERE request_id = $1",
                                 1, param);
    assert_string_equal(reached, "bigmail,default");
    free(reached);
    char *order = fq_test_text(conn,
                               "SELECT string_agg(recipient, ',' ORDER BY id)"
                               " FROM fairq.messages WHERE request_id = $1 AND status = 'pending'",
                               1, param);
    assert_string_equal(order, "z@x.example,y@big.example");
    free(order);
    char *events = fq_test_text(conn,
                                "SELECT string_agg(type::text, ',' ORDER BY id)"
                                " FROM fairq.events WHERE request_id = $1",
                                1, param);
    assert_string_equal(events, "request.split");
    free(events);
    //  The scheduler finds it split, with messages to page
    fq_store_t *store = fq_test_store(s_conninfo);
    fq_due_request_t due;
    assert_int_equal(fq_store_due_request(store, id, 0, &due, NULL), 1);
    assert_true(due.split_done);
    assert_true(due.any_split);
    assert_int_equal(due.split, 2);
    assert_true(due.split_at_submit);
    //  and, asked, its messages by destination, as a splitter names them
    fq_due_messages_t messages = {0};
    assert_int_equal(fq_store_due_request(store, id, 256, &due, &messages), 1);
    assert_true(due.split_done);
    assert_int_equal(messages.nids, 2);
    assert_int_equal(messages.ndestinations, 2);
    assert_string_equal(messages.destinations.data, "bigmail,default");
    assert_int_equal(messages.id_counts[0], 1);
    assert_int_equal(messages.id_counts[1], 1);
    //  y@big.example is the second recipient: the second id
    assert_true(messages.ids[0] > messages.ids[1]);
    int64_t big = messages.ids[0];
    //  More than asked for: paged as usual
    assert_int_equal(fq_store_due_request(store, id, 1, &due, &messages), 1);
    assert_int_equal(messages.nids, 0);
    //  One sent is no longer among them
    char sent[32];
    fq_test_exec(conn, "UPDATE fairq.messages SET status = 'sent' WHERE id = $1", 1,
                 fq_test_param(sent, sizeof sent, big));
    assert_int_equal(fq_store_due_request(store, id, 256, &due, &messages), 1);
    assert_int_equal(messages.nids, 1);
    assert_string_equal(messages.destinations.data, "default");
    fq_buf_free(&messages.destinations);
    fq_store_destroy(&store);

    int64_t deadline = fq_test_now_ms() + 5000;
    int notified = 0;
    while (fq_test_now_ms() < deadline && notified == 0) {
        assert_int_equal(PQconsumeInput(listener), 1);
        PGnotify *note;
        while ((note = PQnotifies(listener))) {
            assert_string_equal(note->extra, param);
            notified++;
            PQfreemem(note);
        }
        if (notified == 0)
            fq_test_sleep_ms(10);
    }
    assert_int_equal(notified, 1);
    PQfinish(conn);
    PQfinish(listener);
}

//  A repeated idempotency key answers the first request and splits
//  nothing again; a submit rolled back leaves no message behind.
static void test_a_replay_or_a_rollback_makes_no_messages(void **unused)
{
    (void)unused;
    PGconn *conn = s_connect_splitting();
    const char *sql = "SELECT fairq.submit_json('acme', 'news@acme.example', 'Hi', 'Hello',"
                      " '[{\"to\":\"k@x.example\"}]', idempotency_key => 'replayed')";
    int64_t first = fq_test_int(conn, sql, 0);
    int64_t again = fq_test_int(conn, sql, 0);
    assert_int_equal(again, first);
    assert_int_equal(
        fq_test_int(conn, "SELECT count(*) FROM fairq.messages WHERE recipient = 'k@x.example'", 0),
        1);
    int64_t before = fq_test_int(conn, "SELECT count(*) FROM fairq.messages", 0);
    fq_test_exec(conn, "BEGIN", 0);
    int64_t gone = fq_test_int(conn,
                               "SELECT fairq.submit_json('acme', 'news@acme.example', 'Hi',"
                               " 'Hello', '[{\"to\":\"r@x.example\"}]')",
                               0);
    assert_true(gone > first);
    fq_test_exec(conn, "ROLLBACK", 0);
    assert_int_equal(fq_test_int(conn, "SELECT count(*) FROM fairq.messages", 0), before);
    PQfinish(conn);
}

//  The status of a one-recipient request to address submitted on conn
//  after setting (a SET or RESET of fairq.split_at_submit) ran there.
static char *s_status_after(PGconn *conn, const char *setting, const char *address)
{
    fq_test_exec(conn, setting, 0);
    char recipients[64];
    snprintf(recipients, sizeof recipients, "[{\"to\":\"%s\"}]", address);
    return s_status(
        conn, s_submit_sql(
                  conn, &(s_case_t){.subject = "Hi", .body = "Hello", .recipients = recipients}));
}

//  Requests for later, and the setting off, are the splitter's.
static void test_later_or_off_is_left_to_the_splitter(void **unused)
{
    (void)unused;
    PGconn *conn = s_connect_splitting();
    int64_t later = fq_test_int(conn,
                                "SELECT fairq.submit_json('acme', 'news@acme.example', 'Hi',"
                                " 'Hello', '[{\"to\":\"l@x.example\"}]',"
                                " send_at => now() + interval '1 hour')",
                                0);
    char *status = s_status(conn, later);
    assert_string_equal(status, "accepted");
    free(status);
    const struct {
        const char *setting, *address, *status;
    } cases[] = {
        {"SET fairq.split_at_submit = off", "o@x.example", "accepted"},
        //  Any spelling of false PostgreSQL takes
        {"SET fairq.split_at_submit = 'NO'", "o2@x.example", "accepted"},
        {"SET fairq.split_at_submit = ' False '", "o3@x.example", "accepted"},
        //  Reset: the database's own setting holds again (off, for the
        //  store tests)
        {"RESET fairq.split_at_submit", "n@x.example", "accepted"},
        //  Empty, it is on, as where it was never set
        {"SET fairq.split_at_submit = ''", "u@x.example", "active"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        status = s_status_after(conn, cases[k].setting, cases[k].address);
        if (strcmp(status, cases[k].status) != 0)
            fail_msg("%s: status %s, wanted %s", cases[k].setting, status, cases[k].status);
        free(status);
    }
    PQfinish(conn);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sql_takes_only_what_the_splitter_takes_alike),
        cmocka_unit_test(test_a_request_split_at_submit_is_ready_to_page),
        cmocka_unit_test(test_a_replay_or_a_rollback_makes_no_messages),
        cmocka_unit_test(test_later_or_off_is_left_to_the_splitter),
    };
    return cmocka_run_group_tests(tests, s_group_setup, s_group_teardown);
}
