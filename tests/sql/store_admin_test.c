/*  store_admin_test.c — the operator queries against a real PostgreSQL.

    Each test makes its own tenant and requests, drives its messages into
    the states it needs through the store (split, ack, nack), runs one
    operator query and checks the rows, and ends by checking every
    request's counters against a COUNT(*) ... GROUP BY status of its
    messages. */
#include "fq_store.h"
#include "fq_store_shape.h"
#include "fq_error.h"
#include "fq_test_db.h"
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

static char s_conninfo[128];
static fq_store_t *s_store; //  The store under test
static PGconn *s_db;        //  A second connection, to look at the rows

//  Submits are split at once, like fairqd's splitter would.
#define S_SPLIT_ALL true
#define S_NO_SPLIT  false

//  A retry policy whose first retry is far away: a nacked message stays
//  failed, not due, for the whole test.
static const fq_retry_policy_t s_slow_retry = {.base_ms = 600000, .cap_ms = 600000};

static int s_group_setup(void **state)
{
    (void)state;
    if (fq_test_db_create(s_conninfo, sizeof s_conninfo) || fq_test_db_splits_by_splitter())
        return -1;
    char error[256];
    s_store = fq_store_new(s_conninfo, error, sizeof error);
    s_db = PQconnectdb(s_conninfo);
    if (!s_store || PQstatus(s_db) != CONNECTION_OK || fq_store_migrate(s_store) < 3) {
        fprintf(stderr, "setup: %s\n", s_store ? fq_store_error(s_store) : error);
        return -1;
    }
    return 0;
}

static int s_group_teardown(void **state)
{
    (void)state;
    fq_store_destroy(&s_store);
    PQfinish(s_db);
    fq_test_db_drop();
    return 0;
}

//  ---------------------------------------------------------------------
//  Helpers

//  Runs sql on the second connection; the first column of its first row
//  as an integer (0 when NULL or no row).
static int64_t s_sql_int(const char *sql)
{
    PGresult *res = PQexec(s_db, sql);
    ExecStatusType status = PQresultStatus(res);
    if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK)
        fail_msg("%s: %s", sql, PQerrorMessage(s_db));
    int64_t value = status == PGRES_TUPLES_OK && PQntuples(res) && !PQgetisnull(res, 0, 0)
                        ? strtoll(PQgetvalue(res, 0, 0), NULL, 10)
                        : 0;
    PQclear(res);
    return value;
}

//  The same, with a request id put in the text by printf (ids only).
static int64_t s_sql_id(const char *format, int64_t id)
{
    char sql[1024];
    snprintf(sql, sizeof sql, format, (long long)id);
    return s_sql_int(sql);
}

static void s_request_status(int64_t id, const char *want)
{
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM fairq.requests WHERE id = %lld AND status = '%s'", (long long)id,
             want);
    if (s_sql_int(sql) != 1)
        fail_msg("request %lld is not %s", (long long)id, want);
}

//  Every request's counters equal the counts of its messages by status,
//  and a message not final has try_count > 0 exactly when it is failed.
//  (A request being pruned has lost rows on purpose, so it is left out.)
static void s_assert_counters(void)
{
    int64_t wrong = s_sql_int(
        "SELECT count(*) FROM fairq.requests r LEFT JOIN ("
        "  SELECT request_id, sum(n) AS split,"
        "   coalesce(sum(n) FILTER (WHERE status = 'sent'), 0) AS sent,"
        "   coalesce(sum(n) FILTER (WHERE status = 'failed'), 0) AS failed,"
        "   coalesce(sum(n) FILTER (WHERE status = 'dead'), 0) AS dead,"
        "   coalesce(sum(n) FILTER (WHERE status = 'cancelled'), 0) AS cancelled"
        "  FROM (SELECT request_id, status, count(*) AS n FROM fairq.messages"
        "        GROUP BY request_id, status) by_status GROUP BY request_id) c"
        " ON c.request_id = r.id WHERE r.pruning_since IS NULL"
        " AND (r.split, r.sent, r.failed, r.dead, r.cancelled) IS DISTINCT FROM"
        " (coalesce(c.split, 0)::int, coalesce(c.sent, 0)::int, coalesce(c.failed, 0)::int,"
        "  coalesce(c.dead, 0)::int, coalesce(c.cancelled, 0)::int)");
    assert_int_equal(wrong, 0);
    assert_int_equal(s_sql_int("SELECT count(*) FROM fairq.messages"
                               " WHERE (status = 'pending' AND try_count > 0)"
                               " OR (status = 'failed' AND try_count = 0)"),
                     0);
}

static void s_tenant(const char *name)
{
    fq_tenant_spec_t spec = {.name = name};
    if (fq_store_tenant_put(s_store, &spec, NULL))
        fail_msg("%s", fq_store_error(s_store));
}

//  Appends s to json as a JSON string.
static size_t s_json_string(char *json, size_t at, const char *s)
{
    json[at++] = '"';
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            json[at++] = '\\';
        json[at++] = *s;
    }
    json[at++] = '"';
    return at;
}

//  Submits a request of tenant to the n recipients to (or, with to NULL,
//  to n generated ones), and splits it if asked. Returns its id.
static int64_t s_request(const char *tenant, const char *const *to, size_t n, int max_attempts,
                         bool split)
{
    size_t size = 16;
    for (size_t i = 0; i < n; i++)
        size += 32 + (to ? 2 * strlen(to[i]) : 32);
    char *json = malloc(size);
    assert_non_null(json);
    size_t at = 0;
    json[at++] = '[';
    for (size_t i = 0; i < n; i++) {
        char generated[64];
        snprintf(generated, sizeof generated, "u%zu@bulk.example", i);
        at += (size_t)sprintf(json + at, "%s{\"to\":", i ? "," : "");
        at = s_json_string(json, at, to ? to[i] : generated);
        json[at++] = '}';
    }
    json[at++] = ']';
    json[at] = 0;
    fq_submit_t req = {.tenant = tenant,
                       .from = "ops@fairq.example",
                       .subject = "Hello",
                       .body = "Body",
                       .recipients_json = json,
                       .max_attempts = max_attempts};
    int64_t id;
    int rc = fq_store_submit(s_store, &req, &id);
    free(json);
    if (rc)
        fail_msg("submit: %s", fq_store_error(s_store));
    fq_split_result_t result;
    while (split && (rc = fq_store_split_chunk(s_store, id, NULL, 0, 0, &result)) == 1)
        ;
    if (rc < 0)
        fail_msg("split: %s", fq_store_error(s_store));
    return id;
}

//  The ids of a request's messages, in id order (at most max).
static size_t s_message_ids(int64_t request_id, int64_t *ids, size_t max)
{
    fq_message_filter_t filter = {.request_id = request_id};
    fq_message_page_t page;
    int n = fq_store_search_messages(s_store, &filter, 0, (int)max, &page);
    if (n < 0)
        fail_msg("search: %s", fq_store_error(s_store));
    for (int i = 0; i < n; i++)
        ids[i] = page.rows[i].id;
    fq_message_page_free(&page);
    return (size_t)n;
}

static void s_ack(int64_t id)
{
    assert_int_equal(fq_store_ack_batch(s_store, &id, 1), 1);
}

static void s_nack(int64_t id, bool permanent, const char *error)
{
    fq_nack_t nack = {.id = id, .permanent = permanent, .error = error};
    assert_int_equal(fq_store_nack_batch(s_store, &nack, 1, &s_slow_retry), 1);
}

//  Searches and returns the number of rows; the page is freed.
static int s_count(const fq_message_filter_t *filter)
{
    fq_message_page_t page;
    int n = fq_store_search_messages(s_store, filter, 0, FQ_STORE_PAGE_MAX, &page);
    if (n < 0)
        fail_msg("search: %s", fq_store_error(s_store));
    fq_message_page_free(&page);
    return n;
}

static void s_assert_fails(int rc, int code)
{
    if (rc != code)
        fail_msg("wanted %s, got %d (%s)", fq_err_name(code), rc, fq_store_error(s_store));
    assert_true(strlen(fq_store_error(s_store)) > 0);
}

//  ---------------------------------------------------------------------
//  Status names

static void test_status_names(void **unused)
{
    (void)unused;
    for (int s = FQ_MESSAGE_ANY; s <= FQ_MESSAGE_CANCELLED; s++) {
        fq_message_status_t parsed;
        assert_int_equal(fq_message_status_parse(fq_message_status_name(s), &parsed), 0);
        assert_int_equal(parsed, s);
    }
    fq_message_status_t parsed;
    assert_int_equal(fq_message_status_parse("inflight", &parsed), FQ_EINVAL);
    assert_int_equal(fq_message_status_parse(NULL, &parsed), FQ_EINVAL);
    assert_string_equal(fq_message_status_name((fq_message_status_t)99), "unknown");
}

//  ---------------------------------------------------------------------
//  Search

static void test_search_filters_and_paging(void **unused)
{
    (void)unused;
    s_tenant("search");
    s_tenant("search-other");
    const char *to[] = {"Alice@One.example", "bob@one.example",    "carol@two.example",
                        "dave@two.example",  "erin@three.example", "frank@three.example"};
    int64_t request = s_request("search", to, 6, 0, S_SPLIT_ALL);
    int64_t ids[6];
    assert_int_equal(s_message_ids(request, ids, 6), 6);
    s_ack(ids[0]);
    s_nack(ids[1], false, "451 try later");
    s_nack(ids[2], true, "550 no such user");

    //  Keyset paging by id: 4, then 2, then nothing
    fq_message_filter_t by_request = {.request_id = request};
    fq_message_page_t page;
    assert_int_equal(fq_store_search_messages(s_store, &by_request, 0, 4, &page), 4);
    int64_t last = page.rows[3].id;
    assert_int_equal(page.rows[0].id, ids[0]);
    assert_string_equal(page.rows[0].recipient, "Alice@One.example");
    assert_int_equal(page.rows[0].status, FQ_MESSAGE_SENT);
    assert_int_equal(page.rows[0].request_id, request);
    fq_message_page_free(&page);
    assert_int_equal(fq_store_search_messages(s_store, &by_request, last, 4, &page), 2);
    assert_int_equal(page.rows[0].id, ids[4]);
    last = page.rows[1].id;
    fq_message_page_free(&page);
    assert_int_equal(fq_store_search_messages(s_store, &by_request, last, 4, &page), 0);
    assert_null(page.rows);

    //  A failed message carries its attempt
    fq_message_filter_t failed = {.request_id = request, .status = FQ_MESSAGE_FAILED};
    assert_int_equal(fq_store_search_messages(s_store, &failed, 0, 10, &page), 1);
    assert_int_equal(page.rows[0].id, ids[1]);
    assert_int_equal(page.rows[0].try_count, 1);
    assert_string_equal(page.rows[0].last_error, "451 try later");
    assert_true(page.rows[0].next_attempt_at > page.rows[0].last_attempt_at);
    assert_true(page.rows[0].last_attempt_at > 0);
    int64_t tenant_id = page.rows[0].tenant_id;
    fq_message_page_free(&page);

    //  A pending one has none
    fq_message_filter_t pending = {.message_id = ids[5]};
    assert_int_equal(fq_store_search_messages(s_store, &pending, 0, 10, &page), 1);
    assert_int_equal(page.rows[0].status, FQ_MESSAGE_PENDING);
    assert_int_equal(page.rows[0].try_count, 0);
    assert_int_equal(page.rows[0].next_attempt_at, 0);
    assert_int_equal(page.rows[0].last_attempt_at, 0);
    assert_null(page.rows[0].last_error);
    fq_message_page_free(&page);

    assert_int_equal(s_count(&(fq_message_filter_t){.tenant = "search"}), 6);
    assert_int_equal(s_count(&(fq_message_filter_t){.tenant_id = tenant_id}), 6);
    assert_int_equal(s_count(&(fq_message_filter_t){.tenant = "search-other"}), 0);
    //  Name and id of two different tenants: both must match, none does
    assert_int_equal(
        s_count(&(fq_message_filter_t){.tenant = "search-other", .tenant_id = tenant_id}), 0);
    assert_int_equal(s_count(&(fq_message_filter_t){.tenant = "search", .status = FQ_MESSAGE_DEAD}),
                     1);
    //  Recipient and domain, case-insensitive both ways
    assert_int_equal(s_count(&(fq_message_filter_t){.recipient = "ALICE@one.EXAMPLE"}), 1);
    assert_int_equal(s_count(&(fq_message_filter_t){.recipient = "alice@one.example",
                                                    .status = FQ_MESSAGE_SENT}),
                     1);
    assert_int_equal(s_count(&(fq_message_filter_t){.tenant = "search", .domain = "TWO.example"}),
                     2);
    assert_int_equal(
        s_count(&(fq_message_filter_t){.domain = "one.example", .status = FQ_MESSAGE_PENDING}), 0);
    s_assert_counters();
}

static void test_search_bad_input(void **unused)
{
    (void)unused;
    fq_message_page_t page;
    fq_message_filter_t none = {0};
    s_assert_fails(fq_store_search_messages(s_store, &none, 0, 0, &page), FQ_EINVAL);
    assert_null(page.rows);
    s_assert_fails(fq_store_search_messages(s_store, &none, 0, FQ_STORE_PAGE_MAX + 1, &page),
                   FQ_EINVAL);
    s_assert_fails(fq_store_search_messages(s_store, &none, 0, -5, &page), FQ_EINVAL);
    s_assert_fails(fq_store_search_messages(s_store, NULL, 0, 10, &page), FQ_EINVAL);
    s_assert_fails(fq_store_search_messages(
                       s_store, &(fq_message_filter_t){.request_id = 987654321}, 0, 10, &page),
                   FQ_ENOTFOUND);
    assert_non_null(strstr(fq_store_error(s_store), "request 987654321 does not exist"));
    s_assert_fails(fq_store_search_messages(
                       s_store, &(fq_message_filter_t){.tenant = "no-such-tenant"}, 0, 10, &page),
                   FQ_ENOTFOUND);
    s_assert_fails(fq_store_search_messages(s_store, &(fq_message_filter_t){.tenant_id = 987654321},
                                            0, 10, &page),
                   FQ_ENOTFOUND);
    s_assert_fails(fq_store_search_messages(
                       s_store, &(fq_message_filter_t){.message_id = 987654321}, 0, 10, &page),
                   FQ_ENOTFOUND);
    s_assert_fails(
        fq_store_search_messages(s_store, &(fq_message_filter_t){.recipient = ""}, 0, 10, &page),
        FQ_EINVAL);
    s_assert_fails(
        fq_store_search_messages(s_store, &(fq_message_filter_t){.domain = ""}, 0, 10, &page),
        FQ_EINVAL);
    s_assert_fails(
        fq_store_search_messages(s_store, &(fq_message_filter_t){.request_id = -1}, 0, 10, &page),
        FQ_EINVAL);
    s_assert_fails(
        fq_store_search_messages(s_store, &(fq_message_filter_t){.status = (fq_message_status_t)42},
                                 0, 10, &page),
        FQ_EINVAL);
    //  An empty filter is a valid search (of everything)
    assert_true(fq_store_search_messages(s_store, &none, 0, 1, &page) >= 0);
    fq_message_page_free(&page);
}

//  Filters are parameters compared with =: quotes are data, and % and _
//  are not wildcards (LIKE would make "a_c" match "abc").
static void test_filters_match_literally(void **unused)
{
    (void)unused;
    s_tenant("literal");
    const char *to[] = {"a%b_c@lit.example",  "axbyc@lit.example",       "abc@lit.example",
                        "o'hara@lit.example", "back\\slash@lit.example", "zed@lit-x.example"};
    int64_t request = s_request("literal", to, 6, 0, S_SPLIT_ALL);
    assert_int_equal(s_sql_id("SELECT split FROM fairq.requests WHERE id = %lld", request), 6);
    fq_message_page_t page;
    fq_message_filter_t exact = {.recipient = "A%B_C@LIT.example"};
    assert_int_equal(fq_store_search_messages(s_store, &exact, 0, 10, &page), 1);
    assert_string_equal(page.rows[0].recipient, "a%b_c@lit.example");
    fq_message_page_free(&page);
    const char *no_match[] = {"%",
                              "a%",
                              "a%@lit.example",
                              "%@lit.example",
                              "_bc@lit.example",
                              "a_c@lit.example",
                              "a%b%c@lit.example",
                              "x' OR '1'='1",
                              "abc@lit.example' --",
                              "abc@lit.example\\"};
    for (size_t i = 0; i < sizeof no_match / sizeof no_match[0]; i++) {
        fq_message_filter_t filter = {.tenant = "literal", .recipient = no_match[i]};
        if (s_count(&filter) != 0)
            fail_msg("recipient filter \"%s\" matched", no_match[i]);
    }
    assert_int_equal(s_count(&(fq_message_filter_t){.recipient = "O'Hara@lit.example"}), 1);
    assert_int_equal(s_count(&(fq_message_filter_t){.recipient = "back\\slash@lit.example"}), 1);
    assert_int_equal(s_count(&(fq_message_filter_t){.recipient = "abc@lit.example"}), 1);

    assert_int_equal(s_count(&(fq_message_filter_t){.domain = "lit.example"}), 5);
    assert_int_equal(s_count(&(fq_message_filter_t){.domain = "LIT-X.EXAMPLE"}), 1);
    const char *no_domain[] = {
        "%", "lit%", "lit_example", "lit-_.example", "_it.example", "lit.example' OR ''='"};
    for (size_t i = 0; i < sizeof no_domain / sizeof no_domain[0]; i++) {
        fq_message_filter_t filter = {.tenant = "literal", .domain = no_domain[i]};
        if (s_count(&filter) != 0)
            fail_msg("domain filter \"%s\" matched", no_domain[i]);
    }
    //  The same filters change nothing
    assert_int_equal(fq_store_cancel_messages(
                         s_store, &(fq_message_filter_t){.tenant = "literal", .recipient = "%"}),
                     0);
    assert_int_equal(
        fq_store_cancel_messages(s_store, &(fq_message_filter_t){.domain = "lit_example"}), 0);
    assert_int_equal(s_sql_id("SELECT cancelled FROM fairq.requests WHERE id = %lld", request), 0);
    //  And the exact one changes exactly its message
    assert_int_equal(fq_store_cancel_messages(s_store, &exact), 1);
    assert_int_equal(s_sql_id("SELECT cancelled FROM fairq.requests WHERE id = %lld", request), 1);
    s_assert_counters();
}

//  EXPLAIN of the search with each filter, on 100,000 messages: every
//  filter but status is served by its index.
static void test_search_plans_use_indexes(void **unused)
{
    (void)unused;
    s_tenant("plans");
    s_tenant("plans-b");
    //  Twenty requests of 5,000 messages over 1,000 domains, all pending,
    //  with counters to match. Tenant "plans" has one of them (5%), the
    //  share where walking the primary key would cost more than the index
    s_sql_int("WITH t AS (SELECT id, name FROM fairq.tenants WHERE name IN ('plans', 'plans-b')),"
              " r AS (INSERT INTO fairq.requests (tenant_id, from_addr, subject, body, status,"
              "   total, split)"
              "  SELECT CASE WHEN g = 1 THEN (SELECT id FROM t WHERE name = 'plans')"
              "   ELSE (SELECT id FROM t WHERE name = 'plans-b') END,"
              "   'ops@fairq.example', 'S', 'B', 'active', 5000, 5000"
              "  FROM generate_series(1, 20) g RETURNING id, tenant_id)"
              " INSERT INTO fairq.messages (request_id, tenant_id, recipient)"
              " SELECT r.id, r.tenant_id, 'u' || i || '@d' || (i % 1000) || '.example'"
              " FROM r, generate_series(1, 5000) i");
    s_sql_int("ANALYZE fairq.messages");
    //  The first of them: its ids lie below the others', so walking the
    //  primary key would not find them quickly
    int64_t request = s_sql_int("SELECT min(m.request_id) FROM fairq.messages m"
                                " JOIN fairq.tenants t ON t.id = m.tenant_id"
                                " WHERE t.name = 'plans'");
    int64_t middle =
        s_sql_id("SELECT min(id) + 5000 FROM fairq.messages WHERE request_id = %lld", request);
    int64_t tenant = s_sql_int("SELECT id FROM fairq.tenants WHERE name = 'plans'");
    assert_true(s_sql_int("SELECT count(*) FROM fairq.messages") >= 100000);

    struct {
        fq_message_filter_t filter;
        int64_t after_id;
        const char *index;
    } cases[] = {
        {{.request_id = request}, 0, "messages_request_idx"},
        {{.request_id = request, .status = FQ_MESSAGE_PENDING}, 0, "messages_request_idx"},
        {{.request_id = request}, middle, "messages_request_idx"},
        {{.tenant_id = tenant}, 0, "messages_tenant_idx"},
        {{.tenant = "plans"}, 0, "messages_tenant_idx"},
        {{.tenant = "plans", .status = FQ_MESSAGE_FAILED}, 0, "messages_tenant_idx"},
        {{.recipient = "U4321@D321.example"}, 0, "messages_recipient_idx"},
        {{.recipient = "u4321@d321.example", .tenant = "plans"}, 0, "messages_recipient_idx"},
        {{.domain = "d321.example"}, 0, "messages_domain_idx"},
        {{.domain = "D321.EXAMPLE", .status = FQ_MESSAGE_PENDING}, 5000, "messages_domain_idx"},
        {{.message_id = 12345}, 0, "messages_pkey"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *plan;
        if (cases[i].filter.message_id)
            cases[i].filter.message_id = s_sql_int("SELECT min(id) + 12345 FROM fairq.messages");
        int rc = fq_store_explain_search(s_store, &cases[i].filter, cases[i].after_id, 100, &plan);
        if (rc)
            fail_msg("explain %zu: %s", i, fq_store_error(s_store));
        char wanted[128];
        snprintf(wanted, sizeof wanted, "\"Index Name\": \"%s\"", cases[i].index);
        bool uses_index = strstr(plan, wanted) && !strstr(plan, "\"Seq Scan\"");
        if (!uses_index)
            fprintf(stderr, "case %zu does not use %s:\n%s\n", i, cases[i].index, plan);
        free(plan);
        assert_true(uses_index);
    }
    //  And the searches give what the plans promise
    assert_int_equal(s_count(&(fq_message_filter_t){.domain = "d321.example"}), 100);
    assert_int_equal(s_count(&(fq_message_filter_t){.recipient = "U4321@D321.example"}), 20);
    assert_int_equal(
        s_count(&(fq_message_filter_t){.recipient = "u4321@d321.example", .request_id = request}),
        1);
    char *plan;
    s_assert_fails(fq_store_explain_search(s_store, &(fq_message_filter_t){0}, 0, 0, &plan),
                   FQ_EINVAL);
    assert_null(plan);
    s_assert_counters();
}

//  ---------------------------------------------------------------------
//  Cancel

static void test_cancel_by_filter(void **unused)
{
    (void)unused;
    s_tenant("cancel");
    const char *to[] = {"k0@keep.example", "k1@keep.example", "k2@keep.example", "d0@drop.example",
                        "d1@drop.example", "d2@drop.example", "d3@drop.example"};
    int64_t request = s_request("cancel", to, 7, 0, S_SPLIT_ALL);
    int64_t ids[7];
    assert_int_equal(s_message_ids(request, ids, 7), 7);
    s_ack(ids[3]);                //  d0 sent
    s_nack(ids[4], false, "451"); //  d1 failed
    s_nack(ids[5], true, "550");  //  d2 dead
    s_nack(ids[0], false, "451"); //  k0 failed

    //  A change needs a narrowing filter, and a status it can apply to
    s_assert_fails(fq_store_cancel_messages(s_store, &(fq_message_filter_t){0}), FQ_EINVAL);
    s_assert_fails(fq_store_cancel_messages(s_store, NULL), FQ_EINVAL);
    s_assert_fails(
        fq_store_cancel_messages(s_store, &(fq_message_filter_t){.status = FQ_MESSAGE_PENDING}),
        FQ_EINVAL);
    s_assert_fails(
        fq_store_cancel_messages(
            s_store, &(fq_message_filter_t){.request_id = request, .status = FQ_MESSAGE_SENT}),
        FQ_EINVAL);
    s_assert_fails(fq_store_cancel_messages(s_store, &(fq_message_filter_t){.request_id = 987654}),
                   FQ_ENOTFOUND);
    s_assert_fails(fq_store_cancel_messages(s_store, &(fq_message_filter_t){.tenant = "nobody"}),
                   FQ_ENOTFOUND);
    s_assert_counters();

    //  d1 (failed) and d3 (pending); d0 stays sent and d2 dead
    fq_message_filter_t drop = {.tenant = "cancel", .domain = "drop.example"};
    assert_int_equal(fq_store_cancel_messages(s_store, &drop), 2);
    assert_int_equal(fq_store_cancel_messages(s_store, &drop), 0);
    s_assert_counters();
    assert_int_equal(s_sql_id("SELECT cancelled FROM fairq.requests WHERE id = %lld", request), 2);
    assert_int_equal(s_sql_id("SELECT failed FROM fairq.requests WHERE id = %lld", request), 1);
    assert_int_equal(
        s_count(&(fq_message_filter_t){.domain = "drop.example", .status = FQ_MESSAGE_CANCELLED}),
        2);
    assert_int_equal(
        s_count(&(fq_message_filter_t){.domain = "drop.example", .status = FQ_MESSAGE_DEAD}), 1);
    //  A cancelled retry has left the retry index
    assert_int_equal(s_sql_id("SELECT count(*) FROM fairq.messages WHERE request_id = %lld"
                              " AND status = 'cancelled' AND next_attempt_at IS NOT NULL",
                              request),
                     0);

    //  Status narrows: only the pending ones of keep.example (k1, k2)
    fq_message_filter_t keep_pending = {.request_id = request, .status = FQ_MESSAGE_PENDING};
    assert_int_equal(fq_store_cancel_messages(s_store, &keep_pending), 2);
    s_assert_counters();
    //  One message by id: k0, failed
    assert_int_equal(
        fq_store_cancel_messages(s_store, &(fq_message_filter_t){.message_id = ids[0]}), 1);
    s_assert_counters();
    assert_int_equal(s_sql_id("SELECT failed FROM fairq.requests WHERE id = %lld", request), 0);
    //  Everything is final now: an ack of a cancelled message is ignored
    assert_int_equal(fq_store_ack_batch(s_store, &ids[1], 1), 0);
    assert_true(fq_store_finish_requests(s_store, FQ_STORE_PAGE_MAX) >= 1);
    s_request_status(request, "done");
    s_assert_counters();
}

static void test_cancel_request(void **unused)
{
    (void)unused;
    s_tenant("cancelreq");
    //  One recipient more than a chunk holds: split the first chunk only
    int64_t request = s_request("cancelreq", NULL, 10001, 0, S_NO_SPLIT);
    fq_split_result_t split;
    assert_int_equal(fq_store_split_chunk(s_store, request, NULL, 0, 0, &split), 1);
    assert_int_equal(split.split, 10000);
    assert_false(split.last);
    s_request_status(request, "splitting");
    int64_t ids[4];
    assert_int_equal(s_message_ids(request, ids, 4), 4);
    s_ack(ids[0]);
    s_nack(ids[1], false, "451");
    s_nack(ids[2], true, "550");

    //  9,998 messages were pending or failed; the 10,001st never was one
    assert_int_equal(fq_store_request_cancel(s_store, request), 9998);
    s_request_status(request, "cancelled");
    assert_int_equal(
        s_sql_id("SELECT count(*) FROM fairq.recipient_chunks WHERE request_id = %lld", request),
        0);
    assert_int_equal(s_sql_id("SELECT count(*) FROM fairq.requests WHERE id = %lld"
                              " AND finished_at IS NOT NULL AND cancelled = 9998"
                              " AND sent = 1 AND dead = 1 AND failed = 0",
                              request),
                     1);
    s_assert_counters();
    //  Again: nothing to do
    assert_int_equal(fq_store_request_cancel(s_store, request), 0);
    //  The splitter finds nothing left
    assert_int_equal(fq_store_split_chunk(s_store, request, NULL, 0, 0, &split), 0);
    s_request_status(request, "cancelled");
    //  A cancelled request cannot be paused, resumed into life or changed
    s_assert_fails(fq_store_request_pause(s_store, request), FQ_EINVAL);
    assert_non_null(strstr(fq_store_error(s_store), "is cancelled"));
    s_assert_fails(fq_store_request_resume(s_store, request), FQ_EINVAL);
    s_assert_fails(
        fq_store_request_change(s_store, request, &(fq_request_change_t){.set_priority = true}),
        FQ_EINVAL);
    s_assert_fails(fq_store_request_cancel(s_store, 987654321), FQ_ENOTFOUND);

    //  A done request cannot be cancelled
    const char *to[] = {"one@done.example"};
    int64_t done = s_request("cancelreq", to, 1, 0, S_SPLIT_ALL);
    assert_int_equal(s_message_ids(done, ids, 1), 1);
    s_ack(ids[0]);
    assert_true(fq_store_finish_requests(s_store, FQ_STORE_PAGE_MAX) >= 1);
    s_request_status(done, "done");
    s_assert_fails(fq_store_request_cancel(s_store, done), FQ_EINVAL);
    assert_non_null(strstr(fq_store_error(s_store), "is done"));
    s_request_status(done, "done");
    //  The store's connection is usable after the refusals
    assert_int_equal(fq_store_request_cancel(s_store, request), 0);
    s_assert_counters();
}

//  ---------------------------------------------------------------------
//  Pause, resume, change

static bool s_is_due(int64_t request)
{
    fq_due_request_t due[256];
    int n = fq_store_due_requests(s_store, 256, due);
    assert_true(n >= 0 && n < 256);
    for (int i = 0; i < n; i++)
        if (due[i].id == request)
            return true;
    return false;
}

static void test_pause_resume(void **unused)
{
    (void)unused;
    s_tenant("pause");
    const char *to[] = {"a@pause.example", "b@pause.example"};
    int64_t active = s_request("pause", to, 2, 0, S_SPLIT_ALL);
    s_request_status(active, "active");
    assert_true(s_is_due(active));
    assert_int_equal(fq_store_request_pause(s_store, active), 1);
    s_request_status(active, "paused");
    assert_false(s_is_due(active));
    assert_int_equal(fq_store_request_pause(s_store, active), 0);
    assert_int_equal(fq_store_request_resume(s_store, active), 1);
    s_request_status(active, "active");
    assert_true(s_is_due(active));
    assert_int_equal(fq_store_request_resume(s_store, active), 0);

    //  Paused before its split: resumes to where it was
    int64_t unsplit = s_request("pause", to, 2, 0, S_NO_SPLIT);
    s_request_status(unsplit, "accepted");
    assert_int_equal(fq_store_request_pause(s_store, unsplit), 1);
    assert_int_equal(fq_store_request_resume(s_store, unsplit), 1);
    s_request_status(unsplit, "accepted");

    s_assert_fails(fq_store_request_pause(s_store, 987654321), FQ_ENOTFOUND);
    s_assert_fails(fq_store_request_resume(s_store, 987654321), FQ_ENOTFOUND);
    //  Finished: refused
    int64_t ids[2];
    assert_int_equal(s_message_ids(active, ids, 2), 2);
    s_ack(ids[0]);
    s_nack(ids[1], true, "550");
    assert_true(fq_store_finish_requests(s_store, FQ_STORE_PAGE_MAX) >= 1);
    s_request_status(active, "done");
    s_assert_fails(fq_store_request_pause(s_store, active), FQ_EINVAL);
    s_assert_fails(fq_store_request_resume(s_store, active), FQ_EINVAL);
    s_assert_counters();
}

static void test_change_request(void **unused)
{
    (void)unused;
    s_tenant("change");
    const char *to[] = {"a@change.example"};
    int64_t request = s_request("change", to, 1, 0, S_SPLIT_ALL);
    fq_request_change_t priority = {.set_priority = true, .priority = 7};
    assert_int_equal(fq_store_request_change(s_store, request, &priority), 0);
    assert_int_equal(s_sql_id("SELECT priority FROM fairq.requests WHERE id = %lld", request), 7);

    //  Later: no longer due; the priority is kept
    fq_request_change_t later = {.set_send_at = true, .send_at = 4102444800}; //  2100-01-01
    assert_int_equal(fq_store_request_change(s_store, request, &later), 0);
    assert_false(s_is_due(request));
    assert_int_equal(s_sql_id("SELECT extract(epoch FROM send_at)::bigint FROM fairq.requests"
                              " WHERE id = %lld",
                              request),
                     4102444800);
    assert_int_equal(s_sql_id("SELECT priority FROM fairq.requests WHERE id = %lld", request), 7);
    //  Now again, and a lower priority, at once
    fq_request_change_t now = {
        .set_send_at = true, .send_at = 0, .set_priority = true, .priority = -3};
    assert_int_equal(fq_store_request_change(s_store, request, &now), 0);
    assert_true(s_is_due(request));
    assert_int_equal(s_sql_id("SELECT priority FROM fairq.requests WHERE id = %lld", request), -3);

    s_assert_fails(fq_store_request_change(s_store, request, &(fq_request_change_t){0}), FQ_EINVAL);
    s_assert_fails(fq_store_request_change(s_store, request, NULL), FQ_EINVAL);
    s_assert_fails(
        fq_store_request_change(s_store, request,
                                &(fq_request_change_t){.set_priority = true, .priority = 1001}),
        FQ_EINVAL);
    s_assert_fails(
        fq_store_request_change(s_store, request,
                                &(fq_request_change_t){.set_send_at = true, .send_at = -1}),
        FQ_EINVAL);
    s_assert_fails(fq_store_request_change(s_store, 987654321, &priority), FQ_ENOTFOUND);
    assert_int_equal(fq_store_request_cancel(s_store, request), 1);
    s_assert_fails(fq_store_request_change(s_store, request, &priority), FQ_EINVAL);
    assert_non_null(strstr(fq_store_error(s_store), "is cancelled"));
    s_assert_counters();
}

//  ---------------------------------------------------------------------
//  Retry and release

static bool s_claimed(int64_t id, const fq_due_message_t *claimed, int n)
{
    for (int i = 0; i < n; i++)
        if (claimed[i].id == id)
            return true;
    return false;
}

static void test_retry_dead(void **unused)
{
    (void)unused;
    s_tenant("retry");
    const char *to[] = {"a@retry.example", "b@retry.example", "c@retry.example", "d@retry.example"};
    int64_t request = s_request("retry", to, 4, 0, S_SPLIT_ALL);
    int64_t ids[4];
    assert_int_equal(s_message_ids(request, ids, 4), 4);
    s_ack(ids[0]);
    s_ack(ids[1]);
    s_nack(ids[2], true, "550 mailbox full");
    s_nack(ids[3], true, "550 mailbox full");
    assert_true(fq_store_finish_requests(s_store, FQ_STORE_PAGE_MAX) >= 1);
    s_request_status(request, "done");

    s_assert_fails(fq_store_retry_dead(s_store, &(fq_message_filter_t){0}), FQ_EINVAL);
    s_assert_fails(fq_store_retry_dead(s_store, &(fq_message_filter_t){.status = FQ_MESSAGE_DEAD}),
                   FQ_EINVAL);
    s_assert_fails(
        fq_store_retry_dead(
            s_store, &(fq_message_filter_t){.request_id = request, .status = FQ_MESSAGE_FAILED}),
        FQ_EINVAL);
    s_assert_fails(fq_store_retry_dead(s_store, &(fq_message_filter_t){.request_id = 987654}),
                   FQ_ENOTFOUND);

    //  Both dead messages: failed, due now, try_count kept; the request is
    //  open again
    fq_message_filter_t filter = {.request_id = request, .status = FQ_MESSAGE_DEAD};
    assert_int_equal(fq_store_retry_dead(s_store, &filter), 2);
    assert_int_equal(fq_store_retry_dead(s_store, &filter), 0);
    s_assert_counters();
    s_request_status(request, "active");
    assert_int_equal(
        s_sql_id("SELECT count(*) FROM fairq.requests WHERE id = %lld AND finished_at IS NULL",
                 request),
        1);
    assert_int_equal(s_sql_id("SELECT count(*) FROM fairq.messages WHERE request_id = %lld"
                              " AND status = 'failed' AND try_count = 1"
                              " AND next_attempt_at <= now() AND last_error = '550 mailbox full'",
                              request),
                     2);
    //  The scheduler claims them as due retries; one is delivered, one dies
    fq_due_message_t claimed[FQ_STORE_PAGE_MAX];
    int n = fq_store_claim_due_retries(s_store, FQ_STORE_PAGE_MAX, 60, claimed);
    assert_true(s_claimed(ids[2], claimed, n) && s_claimed(ids[3], claimed, n));
    s_ack(ids[2]);
    s_nack(ids[3], true, "550 still full");
    s_assert_counters();
    assert_true(fq_store_finish_requests(s_store, FQ_STORE_PAGE_MAX) >= 1);
    s_request_status(request, "done");

    //  A message dead after its last attempt gets exactly one more
    const char *one[] = {"once@retry.example"};
    int64_t single = s_request("retry", one, 1, 1, S_SPLIT_ALL);
    assert_int_equal(s_message_ids(single, ids, 1), 1);
    s_nack(ids[0], false, "451 later");
    assert_int_equal(
        s_count(&(fq_message_filter_t){.message_id = ids[0], .status = FQ_MESSAGE_DEAD}), 1);
    assert_int_equal(fq_store_retry_dead(s_store, &(fq_message_filter_t){.message_id = ids[0]}), 1);
    s_nack(ids[0], false, "451 later again");
    assert_int_equal(
        s_count(&(fq_message_filter_t){.message_id = ids[0], .status = FQ_MESSAGE_DEAD}), 1);
    assert_int_equal(s_sql_id("SELECT try_count FROM fairq.messages WHERE id = %lld", ids[0]), 2);
    s_assert_counters();

    //  A cancelled request's dead messages stay dead
    int64_t cancelled = s_request("retry", to, 2, 0, S_SPLIT_ALL);
    assert_int_equal(s_message_ids(cancelled, ids, 2), 2);
    s_nack(ids[0], true, "550");
    assert_int_equal(fq_store_request_cancel(s_store, cancelled), 1);
    assert_int_equal(fq_store_retry_dead(s_store, &(fq_message_filter_t){.request_id = cancelled}),
                     0);
    //  By tenant: the dead message of the done request, not the cancelled one
    assert_int_equal(fq_store_retry_dead(s_store, &(fq_message_filter_t){.tenant = "retry"}), 2);
    s_assert_counters();
}

//  Runs action on filter a batch of batch at a time from the start, as
//  the API does; how many batches ran (the last one empty) into *batches,
//  the matched and changed totals into the others.
static int s_bulk(fq_bulk_action_t action, const fq_message_filter_t *filter, int batch,
                  bool dry_run, int64_t send_at, int64_t *matched, int64_t *changed)
{
    fq_bulk_t bulk = {.action = action, .batch = batch, .dry_run = dry_run, .send_at = send_at};
    int64_t after = 0;
    *matched = *changed = 0;
    for (int batches = 1;; batches++) {
        fq_bulk_batch_t out;
        int rc = fq_store_bulk_batch(s_store, filter, &bulk, after, &out);
        if (rc)
            fail_msg("bulk %s: %s", fq_bulk_action_name(action), fq_store_error(s_store));
        if (out.done)
            return batches;
        assert_true(out.last_id > after);
        assert_true(out.matched <= batch);
        *matched += out.matched;
        *changed += out.changed;
        after = out.last_id;
    }
}

static void test_bulk_actions(void **unused)
{
    (void)unused;
    s_tenant("bulk");
    s_tenant("bulk2");
    //  25 recipients: 0..9 stay pending, 10..14 fail with a full mailbox
    //  (4.2.2), 15..19 die of an unknown user (5.1.1), 20..24 are sent
    int64_t request = s_request("bulk", NULL, 25, 0, S_SPLIT_ALL);
    int64_t other = s_request("bulk2", NULL, 5, 0, S_SPLIT_ALL);
    int64_t ids[25], others[5];
    assert_int_equal(s_message_ids(request, ids, 25), 25);
    assert_int_equal(s_message_ids(other, others, 5), 5);
    for (int i = 10; i < 15; i++)
        s_nack(ids[i], false, "452 4.2.2 Mailbox Full, try later");
    for (int i = 15; i < 20; i++)
        s_nack(ids[i], true, "550 5.1.1 <u@bulk.example>: No Such User");
    for (int i = 20; i < 25; i++)
        s_ack(ids[i]);
    s_nack(others[0], true, "550 5.1.1 no such user");

    //  A dry run counts, in batches, and changes nothing
    int64_t matched, changed;
    fq_message_filter_t tenant = {.tenant = "bulk"};
    assert_int_equal(s_bulk(FQ_BULK_CANCEL, &tenant, 4, true, 0, &matched, &changed), 5);
    assert_int_equal(matched, 15);
    assert_int_equal(changed, 0);
    assert_int_equal(
        s_count(&(fq_message_filter_t){.tenant = "bulk", .status = FQ_MESSAGE_CANCELLED}), 0);
    assert_int_equal(s_bulk(FQ_BULK_RETRY, &tenant, 100, true, 0, &matched, &changed), 2);
    assert_int_equal(matched, 5);

    //  Retry by enhanced code: the five dead of this tenant, in two
    //  batches, not the other tenant's (the tenant narrows it)
    fq_message_filter_t code = {.tenant = "bulk", .code = "5.1.1"};
    assert_int_equal(s_bulk(FQ_BULK_RETRY, &code, 3, false, 0, &matched, &changed), 3);
    assert_int_equal(matched, 5);
    assert_int_equal(changed, 5);
    assert_int_equal(s_count(&(fq_message_filter_t){.tenant = "bulk2", .status = FQ_MESSAGE_DEAD}),
                     1);
    s_assert_counters();
    //  By the reply code and by the error text (any case)
    assert_int_equal(s_count(&(fq_message_filter_t){.code = "550", .tenant = "bulk"}), 5);
    assert_int_equal(s_count(&(fq_message_filter_t){.code = "550", .tenant = "bulk2"}), 1);
    assert_int_equal(s_count(&(fq_message_filter_t){.error = "no such USER", .tenant = "bulk"}), 5);
    assert_int_equal(s_count(&(fq_message_filter_t){.error = "mailbox full", .code = "452"}), 5);
    assert_int_equal(s_count(&(fq_message_filter_t){.code = "4.2.2", .tenant = "bulk2"}), 0);

    //  Reschedule the mailbox-full retries to tomorrow, then back to now
    int64_t tomorrow = time(NULL) + 86400;
    fq_message_filter_t full = {.error = "mailbox full", .tenant = "bulk"};
    assert_int_equal(s_bulk(FQ_BULK_RESCHEDULE, &full, 2, false, tomorrow, &matched, &changed), 4);
    assert_int_equal(changed, 5);
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM fairq.messages WHERE strpos(last_error, 'Full') > 0"
             " AND status = 'failed' AND extract(epoch FROM next_attempt_at)::bigint = %lld",
             (long long)tomorrow);
    assert_int_equal(s_sql_int(sql), 5);
    assert_int_equal(s_bulk(FQ_BULK_RESCHEDULE, &full, 10, false, 0, &matched, &changed), 2);
    assert_int_equal(changed, 5);
    assert_int_equal(s_sql_int("SELECT count(*) FROM fairq.messages WHERE"
                               " strpos(last_error, 'Full') > 0 AND next_attempt_at <= now()"),
                     5);

    //  Age: nothing is an hour old until the rows say so
    fq_message_filter_t old = {.tenant = "bulk", .older_than_s = 3600};
    assert_int_equal(s_bulk(FQ_BULK_CANCEL, &old, 10, true, 0, &matched, &changed), 1);
    assert_int_equal(matched, 0);
    s_sql_id("UPDATE fairq.messages SET created_at = now() - interval '2 hours'"
             " WHERE request_id = %lld AND id % 2 = 0",
             request);
    //  Cancel the pending and failed ones of those: every other message of
    //  0..19 (the retried ones are failed again), with counters and events
    int64_t events =
        s_sql_int("SELECT count(*) FROM fairq.events WHERE type = 'message.cancelled'");
    assert_int_equal(s_bulk(FQ_BULK_CANCEL, &old, 3, false, 0, &matched, &changed), 5);
    assert_int_equal(changed, 10);
    assert_int_equal(matched, 10);
    assert_int_equal(
        s_sql_int("SELECT count(*) FROM fairq.events WHERE type = 'message.cancelled'"),
        events + 10);
    assert_int_equal(s_count(&(fq_message_filter_t){.tenant = "bulk", .status = FQ_MESSAGE_SENT}),
                     5);
    s_assert_counters();
}

//  A bulk cancel run on its own connection while another holds a message
//  locked by an ack not yet committed.
typedef struct {
    const fq_message_filter_t *filter;
    fq_bulk_batch_t batch;
    int rc;
} s_bulk_thread_t;

static void *s_bulk_cancel_thread(void *arg)
{
    s_bulk_thread_t *run = arg;
    char error[256];
    fq_store_t *store = fq_store_new(s_conninfo, error, sizeof error);
    fq_bulk_t cancel = {.action = FQ_BULK_CANCEL, .batch = 100};
    run->rc = store ? fq_store_bulk_batch(store, run->filter, &cancel, 0, &run->batch) : -1;
    fq_store_destroy(&store);
    return NULL;
}

static void test_bulk_cancel_leaves_an_ack_alone(void **unused)
{
    (void)unused;
    s_tenant("bulkrace");
    int64_t request = s_request("bulkrace", NULL, 3, 0, S_SPLIT_ALL);
    int64_t ids[3];
    assert_int_equal(s_message_ids(request, ids, 3), 3);
    //  An ack of the first message, as the ack batch writes it, held open
    char sql[512];
    snprintf(sql, sizeof sql,
             "BEGIN; UPDATE fairq.messages SET status = 'sent', try_count = 1"
             " WHERE id = %lld; UPDATE fairq.requests SET sent = sent + 1 WHERE id = %lld",
             (long long)ids[0], (long long)request);
    PGresult *res = PQexec(s_db, sql);
    assert_int_equal(PQresultStatus(res), PGRES_COMMAND_OK);
    PQclear(res);
    fq_message_filter_t filter = {.request_id = request};
    s_bulk_thread_t run = {.filter = &filter};
    pthread_t thread;
    assert_int_equal(pthread_create(&thread, NULL, s_bulk_cancel_thread, &run), 0);
    //  The cancel read the three as pending and waits for the first's lock
    //  (a wait that shows in pg_locks); then the ack commits
    for (int i = 0; i < 100 && !s_sql_int("SELECT count(*) FROM pg_locks WHERE NOT granted"); i++)
        usleep(20000);
    res = PQexec(s_db, "COMMIT");
    assert_int_equal(PQresultStatus(res), PGRES_COMMAND_OK);
    PQclear(res);
    assert_int_equal(pthread_join(thread, NULL), 0);
    assert_int_equal(run.rc, 0);
    assert_int_equal(run.batch.matched, 3);
    assert_int_equal(run.batch.changed, 2);
    assert_int_equal(s_sql_id("SELECT count(*) FROM fairq.messages WHERE id = %lld"
                              " AND status = 'sent'",
                              ids[0]),
                     1);
    assert_int_equal(
        s_count(&(fq_message_filter_t){.request_id = request, .status = FQ_MESSAGE_CANCELLED}), 2);
    s_assert_counters();
}

static void test_bulk_bad_input(void **unused)
{
    (void)unused;
    s_tenant("bulkbad");
    fq_bulk_batch_t out;
    fq_bulk_t cancel = {.action = FQ_BULK_CANCEL, .batch = 10};
    fq_message_filter_t tenant = {.tenant = "bulkbad"};
    //  Filters too wide, or malformed
    const fq_message_filter_t wide[] = {
        {0},
        {.status = FQ_MESSAGE_PENDING},
        {.older_than_s = 60},
        {.tenant = "bulkbad", .code = "55"},
        {.tenant = "bulkbad", .code = "5.1"},
        {.tenant = "bulkbad", .code = "6.1.1"},
        {.tenant = "bulkbad", .code = "5.1.1234"},
        {.tenant = "bulkbad", .code = "550 "},
        {.tenant = "bulkbad", .error = ""},
        {.tenant = "bulkbad", .older_than_s = -1},
        {.tenant = "bulkbad", .status = FQ_MESSAGE_SENT},
    };
    for (size_t i = 0; i < sizeof wide / sizeof wide[0]; i++)
        s_assert_fails(fq_store_bulk_batch(s_store, &wide[i], &cancel, 0, &out), FQ_EINVAL);
    s_assert_fails(
        fq_store_bulk_batch(s_store, &(fq_message_filter_t){.tenant = "nobody"}, &cancel, 0, &out),
        FQ_ENOTFOUND);
    //  A retry applies to dead messages only, a reschedule to failed ones
    fq_bulk_t retry = {.action = FQ_BULK_RETRY, .batch = 10};
    fq_message_filter_t pending = {.tenant = "bulkbad", .status = FQ_MESSAGE_PENDING};
    s_assert_fails(fq_store_bulk_batch(s_store, &pending, &retry, 0, &out), FQ_EINVAL);
    fq_bulk_t reschedule = {.action = FQ_BULK_RESCHEDULE, .batch = 10};
    s_assert_fails(fq_store_bulk_batch(s_store, &pending, &reschedule, 0, &out), FQ_EINVAL);
    //  Batches, actions, cursors and times out of range
    const fq_bulk_t bad[] = {
        {.action = FQ_BULK_CANCEL, .batch = 0},
        {.action = FQ_BULK_CANCEL, .batch = FQ_STORE_BULK_BATCH_MAX + 1},
        {.action = (fq_bulk_action_t)0, .batch = 10},
        {.action = (fq_bulk_action_t)99, .batch = 10},
        {.action = FQ_BULK_RESCHEDULE, .batch = 10, .send_at = -5},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        s_assert_fails(fq_store_bulk_batch(s_store, &tenant, &bad[i], 0, &out), FQ_EINVAL);
    s_assert_fails(fq_store_bulk_batch(s_store, &tenant, &cancel, -1, &out), FQ_EINVAL);
    s_assert_fails(fq_store_bulk_batch(s_store, &tenant, NULL, 0, &out), FQ_EINVAL);
    //  A code and an error narrow a change on their own
    assert_int_equal(
        fq_store_bulk_batch(s_store, &(fq_message_filter_t){.code = "5.7.1"}, &cancel, 0, &out), 0);
    assert_true(out.done);
    //  Names
    fq_bulk_action_t action;
    assert_int_equal(fq_bulk_action_parse("retry", &action), 0);
    assert_int_equal(action, FQ_BULK_RETRY);
    assert_int_equal(fq_bulk_action_parse("Retry", &action), FQ_EINVAL);
    assert_int_equal(fq_bulk_action_parse(NULL, &action), FQ_EINVAL);
    assert_string_equal(fq_bulk_action_name(FQ_BULK_RESCHEDULE), "reschedule");
    assert_null(fq_bulk_action_name((fq_bulk_action_t)7));
}

static void test_shape(void **unused)
{
    (void)unused;
    s_tenant("shape");
    s_tenant("shape2");
    //  shape: 6 waiting now (one of them failed), 2 sent; 3 for tomorrow.
    //  shape2: 4 waiting for 30 minutes, 1 for 3 days
    int64_t now = s_request("shape", NULL, 8, 0, S_SPLIT_ALL);
    int64_t ids[8];
    assert_int_equal(s_message_ids(now, ids, 8), 8);
    s_ack(ids[0]);
    s_ack(ids[1]);
    s_nack(ids[2], false, "451 later");
    int64_t later = s_request("shape", NULL, 3, 0, S_SPLIT_ALL);
    s_sql_id("UPDATE fairq.requests SET send_at = now() + interval '1 day' WHERE id = %lld", later);
    //  Two recipients of a request not split yet: they wait too
    int64_t unsplit = s_request("shape", NULL, 2, 0, S_NO_SPLIT);
    s_sql_id("UPDATE fairq.requests SET send_at = now() + interval '1 hour' WHERE id = %lld",
             unsplit);
    int64_t old = s_request("shape2", NULL, 4, 0, S_SPLIT_ALL);
    s_sql_id("UPDATE fairq.requests SET created_at = now() - interval '30 minutes',"
             " send_at = now() - interval '30 minutes' WHERE id = %lld",
             old);
    int64_t older = s_request("shape2", NULL, 1, 0, S_SPLIT_ALL);
    s_sql_id("UPDATE fairq.requests SET created_at = now() - interval '3 days',"
             " send_at = now() - interval '3 days' WHERE id = %lld",
             older);
    s_sql_id("UPDATE fairq.messages SET destination = 'slow' WHERE request_id = %lld", older);

    fq_shape_t shape;
    int64_t shape_id = s_sql_int("SELECT id FROM fairq.tenants WHERE name = 'shape'");
    assert_int_equal(fq_store_shape(s_store, shape_id, false, &shape), 1);
    assert_string_equal(shape.rows[0].tenant, "shape");
    assert_string_equal(shape.rows[0].destination, "");
    assert_int_equal(shape.rows[0].total, 11);
    assert_int_equal(shape.rows[0].later, 5);
    assert_int_equal(shape.rows[0].ages[0], 6);
    fq_shape_free(&shape);

    int64_t shape2_id = s_sql_int("SELECT id FROM fairq.tenants WHERE name = 'shape2'");
    assert_int_equal(fq_store_shape(s_store, shape2_id, true, &shape), 2);
    //  Most first: the default destination's 4, 30 minutes old (20..40)
    assert_string_equal(shape.rows[0].destination, "default");
    assert_int_equal(shape.rows[0].total, 4);
    assert_int_equal(shape.rows[0].ages[3], 4);
    assert_string_equal(shape.rows[1].destination, "slow");
    assert_int_equal(shape.rows[1].ages[FQ_SHAPE_BUCKETS - 1], 1);
    fq_shape_free(&shape);

    //  Everyone's: a finished request is not read, a cancelled one neither
    assert_int_equal(fq_store_request_cancel(s_store, later), 3);
    assert_true(fq_store_shape(s_store, 0, false, &shape) >= 2);
    for (size_t i = 0; i < shape.count; i++)
        if (strcmp(shape.rows[i].tenant, "shape") == 0)
            assert_int_equal(shape.rows[i].total, 8);
    fq_shape_free(&shape);
    assert_int_equal(fq_store_shape(s_store, 987654, false, &shape), 0);
    assert_null(shape.rows);
}

static void test_release_claims(void **unused)
{
    (void)unused;
    s_tenant("release");
    const char *to[] = {"a@release.example", "b@release.example", "c@release.example"};
    int64_t request = s_request("release", to, 3, 0, S_SPLIT_ALL);
    int64_t ids[3];
    assert_int_equal(s_message_ids(request, ids, 3), 3);
    s_nack(ids[0], false, "451");
    s_nack(ids[1], false, "451");
    s_ack(ids[2]);
    //  Backing off for minutes
    assert_int_equal(s_sql_id("SELECT count(*) FROM fairq.messages WHERE request_id = %lld"
                              " AND next_attempt_at > now() + interval '4 minutes'",
                              request),
                     2);
    s_assert_fails(fq_store_release_claims(s_store, &(fq_message_filter_t){0}), FQ_EINVAL);
    s_assert_fails(
        fq_store_release_claims(
            s_store, &(fq_message_filter_t){.request_id = request, .status = FQ_MESSAGE_DEAD}),
        FQ_EINVAL);
    s_assert_fails(fq_store_release_claims(s_store, &(fq_message_filter_t){.tenant = "nobody"}),
                   FQ_ENOTFOUND);

    fq_message_filter_t filter = {.tenant = "release"};
    assert_int_equal(fq_store_release_claims(s_store, &filter), 2);
    assert_int_equal(s_sql_id("SELECT count(*) FROM fairq.messages WHERE request_id = %lld"
                              " AND status = 'failed' AND next_attempt_at <= now()",
                              request),
                     2);
    //  A node claims them, with a lease, and dies: released at once
    fq_due_message_t claimed[FQ_STORE_PAGE_MAX];
    int n = fq_store_claim_due_retries(s_store, FQ_STORE_PAGE_MAX, 3600, claimed);
    assert_true(s_claimed(ids[0], claimed, n) && s_claimed(ids[1], claimed, n));
    assert_int_equal(fq_store_release_claims(s_store, &filter), 2);
    n = fq_store_claim_due_retries(s_store, FQ_STORE_PAGE_MAX, 3600, claimed);
    assert_true(s_claimed(ids[0], claimed, n) && s_claimed(ids[1], claimed, n));
    //  Narrower: one recipient
    assert_int_equal(
        fq_store_release_claims(s_store, &(fq_message_filter_t){.recipient = "A@release.example"}),
        1);
    s_assert_counters();
}

//  ---------------------------------------------------------------------
//  Error summary

//  The row of tenant, destination, code and enhanced in summary; NULL if
//  none (code and enhanced may be NULL, and match NULL only).
static const fq_error_count_t *s_error_row(const fq_error_summary_t *summary, const char *tenant,
                                           const char *destination, const char *code,
                                           const char *enhanced)
{
    for (size_t i = 0; i < summary->count; i++) {
        const fq_error_count_t *r = &summary->rows[i];
        if (strcmp(r->tenant, tenant) == 0 && strcmp(r->destination, destination) == 0 &&
            (code ? r->code && strcmp(r->code, code) == 0 : !r->code) &&
            (enhanced ? r->enhanced && strcmp(r->enhanced, enhanced) == 0 : !r->enhanced))
            return r;
    }
    return NULL;
}

static void s_assert_error_row(const fq_error_summary_t *summary, const char *tenant,
                               const char *destination, const char *code, const char *enhanced,
                               int64_t failed, int64_t dead)
{
    const fq_error_count_t *r = s_error_row(summary, tenant, destination, code, enhanced);
    assert_non_null(r);
    assert_int_equal(r->failed, failed);
    assert_int_equal(r->dead, dead);
    assert_int_equal(r->count, failed + dead);
}

static void test_error_summary(void **unused)
{
    (void)unused;
    s_tenant("errors");
    s_tenant("errors2");
    const char *to[] = {"a@err.example", "b@err.example", "c@err.example", "d@err.example",
                        "e@err.example", "f@err.example", "g@err.example", "h@err.example",
                        "i@err.example", "j@err.example", "k@err.example", "l@err.example"};
    int64_t request = s_request("errors", to, 12, 0, S_SPLIT_ALL);
    int64_t ids[12];
    assert_int_equal(s_message_ids(request, ids, 12), 12);
    for (int i = 0; i < 4; i++)
        s_nack(ids[i], false, "451 4.7.1 greylisted");
    s_nack(ids[4], true, "451 4.7.1 greylisted, try later");
    for (int i = 5; i < 8; i++)
        s_nack(ids[i], true, "550 5.1.1 <x@err.example>: no such user");
    s_nack(ids[8], true, "550 5.7.1 relaying denied");
    s_nack(ids[9], false, "HTTP 503: Service Unavailable");
    s_nack(ids[10], true, "connection refused");
    s_ack(ids[11]);
    //  Two of the unknown users were split with another destination
    for (int i = 6; i < 8; i++)
        assert_int_equal(s_sql_id("WITH u AS (UPDATE fairq.messages SET destination = 'errdest'"
                                  " WHERE id = %lld RETURNING 1) SELECT count(*) FROM u",
                                  ids[i]),
                         1);
    //  Another tenant's
    const char *to2[] = {"a@err2.example"};
    int64_t request2 = s_request("errors2", to2, 1, 0, S_SPLIT_ALL);
    int64_t id2;
    assert_int_equal(s_message_ids(request2, &id2, 1), 1);
    s_nack(id2, true, "550 5.1.1 <a@err2.example>: no such user");

    fq_message_filter_t filter = {.tenant = "errors"};
    fq_error_summary_t summary;
    assert_int_equal(fq_store_error_summary(s_store, &filter, NULL, 10, &summary), 6);
    //  Most frequent first; the codes group texts that differ
    assert_string_equal(summary.rows[0].tenant, "errors");
    assert_string_equal(summary.rows[0].destination, FQ_DESTINATION_DEFAULT);
    assert_string_equal(summary.rows[0].code, "451");
    assert_string_equal(summary.rows[0].enhanced, "4.7.1");
    assert_string_equal(summary.rows[0].example, "451 4.7.1 greylisted");
    s_assert_error_row(&summary, "errors", FQ_DESTINATION_DEFAULT, "451", "4.7.1", 4, 1);
    s_assert_error_row(&summary, "errors", FQ_DESTINATION_DEFAULT, "550", "5.1.1", 0, 1);
    s_assert_error_row(&summary, "errors", "errdest", "550", "5.1.1", 0, 2);
    s_assert_error_row(&summary, "errors", FQ_DESTINATION_DEFAULT, "550", "5.7.1", 0, 1);
    s_assert_error_row(&summary, "errors", FQ_DESTINATION_DEFAULT, "503", NULL, 1, 0);
    s_assert_error_row(&summary, "errors", FQ_DESTINATION_DEFAULT, NULL, NULL, 0, 1);
    assert_string_equal(s_error_row(&summary, "errors", "errdest", "550", "5.1.1")->example,
                        "550 5.1.1 <x@err.example>: no such user");
    assert_string_equal(
        s_error_row(&summary, "errors", FQ_DESTINATION_DEFAULT, "503", NULL)->example,
        "HTTP 503: Service Unavailable");
    assert_string_equal(
        s_error_row(&summary, "errors", FQ_DESTINATION_DEFAULT, NULL, NULL)->example,
        "connection refused");
    assert_null(s_error_row(&summary, "errors2", FQ_DESTINATION_DEFAULT, "550", "5.1.1"));
    fq_error_summary_free(&summary);
    assert_null(summary.rows);

    assert_int_equal(fq_store_error_summary(s_store, &filter, NULL, 1, &summary), 1);
    fq_error_summary_free(&summary);
    //  One destination
    assert_int_equal(fq_store_error_summary(s_store, &filter, "errdest", 10, &summary), 1);
    s_assert_error_row(&summary, "errors", "errdest", "550", "5.1.1", 0, 2);
    fq_error_summary_free(&summary);
    assert_int_equal(fq_store_error_summary(s_store, &filter, "nowhere", 10, &summary), 0);
    //  Dead only: the order turns
    filter.status = FQ_MESSAGE_DEAD;
    assert_int_equal(fq_store_error_summary(s_store, &filter, NULL, 10, &summary), 5);
    assert_string_equal(summary.rows[0].destination, "errdest");
    assert_int_equal(summary.rows[0].count, 2);
    assert_null(s_error_row(&summary, "errors", FQ_DESTINATION_DEFAULT, "503", NULL));
    fq_error_summary_free(&summary);
    //  By request; the other tenant; and over everything
    assert_int_equal(fq_store_error_summary(s_store, &(fq_message_filter_t){.request_id = request},
                                            NULL, 10, &summary),
                     6);
    fq_error_summary_free(&summary);
    assert_int_equal(fq_store_error_summary(s_store, &(fq_message_filter_t){.tenant = "errors2"},
                                            NULL, 10, &summary),
                     1);
    s_assert_error_row(&summary, "errors2", FQ_DESTINATION_DEFAULT, "550", "5.1.1", 0, 1);
    assert_string_equal(summary.rows[0].example, "550 5.1.1 <a@err2.example>: no such user");
    fq_error_summary_free(&summary);
    int n = fq_store_error_summary(s_store, &(fq_message_filter_t){0}, NULL, FQ_STORE_PAGE_MAX,
                                   &summary);
    assert_true(n >= 7);
    assert_non_null(s_error_row(&summary, "errors", "errdest", "550", "5.1.1"));
    assert_non_null(s_error_row(&summary, "errors2", FQ_DESTINATION_DEFAULT, "550", "5.1.1"));
    fq_error_summary_free(&summary);

    s_assert_fails(fq_store_error_summary(s_store, &filter, NULL, 0, &summary), FQ_EINVAL);
    s_assert_fails(fq_store_error_summary(s_store, &filter, NULL, FQ_STORE_PAGE_MAX + 1, &summary),
                   FQ_EINVAL);
    s_assert_fails(fq_store_error_summary(s_store,
                                          &(fq_message_filter_t){.status = FQ_MESSAGE_PENDING},
                                          NULL, 10, &summary),
                   FQ_EINVAL);
    s_assert_fails(fq_store_error_summary(s_store, &(fq_message_filter_t){.request_id = 98765},
                                          NULL, 10, &summary),
                   FQ_ENOTFOUND);
    s_assert_fails(fq_store_error_summary(s_store, &filter, "", 10, &summary), FQ_EINVAL);
    assert_null(summary.rows);
    s_assert_counters();
}

//  ---------------------------------------------------------------------
//  Finish and prune

static void test_finish_and_prune(void **unused)
{
    (void)unused;
    s_tenant("prune");
    //  Five good recipients and two the splitter rejects
    const char *to[] = {"a@prune.example",
                        "b@prune.example",
                        "not an address",
                        "c@prune.example",
                        "d@prune.example",
                        "e@prune.example",
                        "bad@"};
    int64_t request = s_request("prune", to, 7, 0, S_SPLIT_ALL);
    assert_int_equal(s_sql_id("SELECT rejected FROM fairq.requests WHERE id = %lld", request), 2);
    const char *other_to[] = {"x@prune.example"};
    int64_t open = s_request("prune", other_to, 1, 0, S_SPLIT_ALL);
    int64_t ids[5];
    assert_int_equal(s_message_ids(request, ids, 5), 5);
    for (int i = 0; i < 3; i++)
        s_ack(ids[i]);
    s_nack(ids[3], true, "550");

    //  One message is still pending: not finished
    s_assert_fails(fq_store_finish_requests(s_store, 0), FQ_EINVAL);
    s_assert_fails(fq_store_finish_requests(s_store, FQ_STORE_PAGE_MAX + 1), FQ_EINVAL);
    assert_true(fq_store_finish_requests(s_store, FQ_STORE_PAGE_MAX) >= 0);
    s_request_status(request, "active");
    s_nack(ids[4], true, "550");
    assert_true(fq_store_finish_requests(s_store, FQ_STORE_PAGE_MAX) >= 1);
    s_request_status(request, "done");
    s_request_status(open, "active");
    assert_int_equal(s_sql_id("SELECT count(*) FROM fairq.requests WHERE id = %lld"
                              " AND finished_at IS NOT NULL",
                              request),
                     1);

    //  Every recipient rejected: the splitter makes it done but gives it no
    //  finished_at; finishing stamps one
    const char *bad[] = {"nobody", "still nobody"};
    int64_t rejected = s_request("prune", bad, 2, 0, S_SPLIT_ALL);
    s_request_status(rejected, "done");
    assert_true(fq_store_finish_requests(s_store, FQ_STORE_PAGE_MAX) >= 0);
    assert_int_equal(s_sql_id("SELECT count(*) FROM fairq.requests WHERE id = %lld"
                              " AND finished_at IS NOT NULL",
                              rejected),
                     1);

    fq_prune_result_t result;
    s_assert_fails(fq_store_prune(s_store, -1, 10, &result), FQ_EINVAL);
    s_assert_fails(fq_store_prune(s_store, 3600, 0, &result), FQ_EINVAL);
    s_assert_fails(fq_store_prune(s_store, 3600, FQ_STORE_PRUNE_BATCH_MAX + 1, &result), FQ_EINVAL);
    //  Finished just now: kept for the retention
    assert_int_equal(fq_store_prune(s_store, 3600, 2, &result), 0);
    assert_int_equal(result.messages + result.rejects + result.requests, 0);
    assert_false(result.more);

    //  Two hours ago: pruned, at most two rows per call
    s_sql_id("UPDATE fairq.requests SET finished_at = now() - interval '2 hours'"
             " WHERE id = %lld",
             request);
    s_sql_id("UPDATE fairq.requests SET finished_at = now() - interval '3 hours'"
             " WHERE id = %lld",
             rejected);
    int messages = 0, rejects = 0, requests = 0, calls = 0;
    do {
        assert_int_equal(fq_store_prune(s_store, 3600, 2, &result), 0);
        assert_true(result.messages + result.rejects <= 2);
        messages += result.messages;
        rejects += result.rejects;
        requests += result.requests;
        //  A request being pruned is never reopened
        if (calls++ == 0)
            assert_int_equal(
                fq_store_retry_dead(s_store, &(fq_message_filter_t){.request_id = request}), 0);
    } while (result.more);
    assert_int_equal(messages, 5);
    assert_int_equal(rejects, 4);
    assert_int_equal(requests, 2);
    assert_true(calls >= 5);
    assert_int_equal(s_sql_id("SELECT count(*) FROM fairq.requests WHERE id = %lld", request), 0);
    assert_int_equal(
        s_sql_id("SELECT count(*) FROM fairq.messages WHERE request_id = %lld", request), 0);
    assert_int_equal(
        s_sql_id("SELECT count(*) FROM fairq.rejects WHERE request_id = %lld", rejected), 0);
    //  Untouched: the open request
    s_request_status(open, "active");
    assert_int_equal(s_count(&(fq_message_filter_t){.request_id = open}), 1);
    s_assert_fails(fq_store_search_messages(s_store, &(fq_message_filter_t){.request_id = request},
                                            0, 10, &(fq_message_page_t){0}),
                   FQ_ENOTFOUND);
    s_assert_counters();
}

//  ---------------------------------------------------------------------
//  Tenants

static void test_tenants(void **unused)
{
    (void)unused;
    fq_tenant_spec_t spec = {.name = "stats", .weight = 3, .max_inflight = 50, .submit_rate = 10};
    int64_t id;
    assert_int_equal(fq_store_tenant_put(s_store, &spec, &id), 0);
    s_tenant("stats-empty");
    fq_tenant_info_t info;
    assert_int_equal(fq_store_tenant_get(s_store, "stats", &info), 0);
    assert_int_equal(info.id, id);
    assert_string_equal(info.name, "stats");
    assert_int_equal(info.weight, 3);
    assert_int_equal(info.max_inflight, 50);
    assert_int_equal(info.submit_rate, 10);
    assert_int_equal(info.open_requests, 0);
    assert_int_equal(info.depth, 0);
    assert_int_equal(info.oldest_pending_s, 0);

    const char *to[] = {"a@stats.example", "b@stats.example", "c@stats.example", "d@stats.example"};
    int64_t split = s_request("stats", to, 4, 0, S_SPLIT_ALL);
    int64_t ids[4];
    assert_int_equal(s_message_ids(split, ids, 4), 4);
    s_ack(ids[0]);
    s_nack(ids[1], false, "451");
    s_nack(ids[2], true, "550");
    s_request("stats", to, 3, 0, S_NO_SPLIT);
    s_sql_id("UPDATE fairq.requests SET created_at = now() - interval '100 seconds'"
             " WHERE id = %lld",
             split);
    assert_int_equal(fq_store_tenant_get(s_store, "stats", &info), 0);
    assert_int_equal(info.open_requests, 2);
    assert_int_equal(info.depth, 2); //  one pending, one failed
    assert_int_equal(info.failed, 1);
    assert_int_equal(info.unsplit, 3);
    assert_true(info.oldest_pending_s >= 100 && info.oldest_pending_s < 1000);

    fq_tenant_list_t list;
    int n = fq_store_tenant_list(s_store, &list);
    assert_true(n >= 2);
    bool seen_stats = false, seen_empty = false;
    for (int i = 0; i < n; i++) {
        if (i)
            assert_true(strcmp(list.rows[i - 1].name, list.rows[i].name) < 0);
        if (strcmp(list.rows[i].name, "stats") == 0) {
            seen_stats = true;
            assert_int_equal(list.rows[i].depth, 2);
            assert_int_equal(list.rows[i].unsplit, 3);
            assert_int_equal(list.rows[i].weight, 3);
        }
        if (strcmp(list.rows[i].name, "stats-empty") == 0) {
            seen_empty = true;
            assert_int_equal(list.rows[i].open_requests, 0);
            assert_int_equal(list.rows[i].depth, 0);
            assert_int_equal(list.rows[i].submit_rate, 0);
        }
    }
    assert_true(seen_stats && seen_empty);
    fq_tenant_list_free(&list);
    assert_null(list.rows);

    s_assert_fails(fq_store_tenant_get(s_store, "no-such-tenant", &info), FQ_ENOTFOUND);
    s_assert_fails(fq_store_tenant_get(s_store, "x'; DROP TABLE fairq.tenants; --", &info),
                   FQ_ENOTFOUND);
    s_assert_fails(fq_store_tenant_get(s_store, NULL, &info), FQ_ENOTFOUND);
    s_assert_counters();
}

//  A tenant's send budget (0017): set, kept by a put that leaves it out,
//  removed, refused by the schema's checks with nothing changed, and what
//  it sent today read from the leader's day row.
static void s_assert_budget(const char *name, int64_t count, int period_s, int64_t quota,
                            int64_t sent_today)
{
    fq_tenant_info_t info;
    assert_int_equal(fq_store_tenant_get(s_store, name, &info), 0);
    assert_int_equal(info.send_rate_count, count);
    assert_int_equal(info.send_rate_period_s, period_s);
    assert_int_equal(info.daily_quota, quota);
    assert_int_equal(info.sent_today, sent_today);
}

static void s_assert_refused(const fq_tenant_spec_t *spec, const char *constraint)
{
    s_assert_fails(fq_store_tenant_put(s_store, spec, NULL), FQ_EINVAL);
    assert_non_null(strstr(fq_store_error(s_store), "could not store tenant"));
    assert_string_equal(fq_store_error_constraint(s_store), constraint);
}

static void test_tenant_send_budgets(void **unused)
{
    (void)unused;
    //  A new tenant has none, whatever the defaults of the other limits
    fq_tenant_spec_t spec = {.name = "budget-none", .defaults = {2, 30, 60}};
    assert_int_equal(fq_store_tenant_put(s_store, &spec, NULL), 0);
    s_assert_budget("budget-none", 0, 0, 0, 0);

    //  Set on creation; kept by a put that names other limits
    int64_t id;
    spec = (fq_tenant_spec_t){
        .name = "budget", .send_rate_count = 100, .send_rate_period_s = 1, .daily_quota = 5000};
    assert_int_equal(fq_store_tenant_put(s_store, &spec, &id), 0);
    s_assert_budget("budget", 100, 1, 5000, 0);
    spec = (fq_tenant_spec_t){.name = "budget", .weight = 4, .send_rate_period_s = 60};
    assert_int_equal(fq_store_tenant_put(s_store, &spec, NULL), 0);
    s_assert_budget("budget", 100, 1, 5000, 0);

    //  Changed one at a time: the rate's count and period go together
    spec = (fq_tenant_spec_t){.name = "budget", .send_rate_count = 5, .send_rate_period_s = 60};
    assert_int_equal(fq_store_tenant_put(s_store, &spec, NULL), 0);
    s_assert_budget("budget", 5, 60, 5000, 0);
    spec = (fq_tenant_spec_t){.name = "budget", .daily_quota = 1000000000000};
    assert_int_equal(fq_store_tenant_put(s_store, &spec, NULL), 0);
    s_assert_budget("budget", 5, 60, 1000000000000, 0);
    spec = (fq_tenant_spec_t){
        .name = "budget", .send_rate_count = 1000000000, .send_rate_period_s = 86400};
    assert_int_equal(fq_store_tenant_put(s_store, &spec, NULL), 0);
    s_assert_budget("budget", 1000000000, 86400, 1000000000000, 0);

    //  Sent today: the used of today's UTC row as the leader reserved and
    //  counted it (fairq.reserve_sends); yesterday's is not today's
    char sql[512];
    snprintf(sql, sizeof sql,
             "SELECT after FROM fairq.reserve_sends(%lld, (now() AT TIME ZONE 'UTC')::date,"
             " 50, 5000, 42)",
             (long long)id);
    assert_int_equal(s_sql_int(sql), 50);
    snprintf(sql, sizeof sql,
             "INSERT INTO fairq.tenant_send_days (tenant_id, day, reserved, used)"
             " VALUES (%lld, (now() AT TIME ZONE 'UTC')::date - 1, 900, 900)",
             (long long)id);
    s_sql_int(sql);
    s_assert_budget("budget", 1000000000, 86400, 1000000000000, 42);
    s_assert_budget("budget-none", 0, 0, 0, 0);
    fq_tenant_list_t list;
    int n = fq_store_tenant_list(s_store, &list);
    bool seen = false;
    for (int i = 0; i < n; i++)
        if (strcmp(list.rows[i].name, "budget") == 0) {
            seen = true;
            assert_int_equal(list.rows[i].sent_today, 42);
            assert_int_equal(list.rows[i].send_rate_count, 1000000000);
            assert_int_equal(list.rows[i].daily_quota, 1000000000000);
        }
    fq_tenant_list_free(&list);
    assert_true(seen);

    //  Refused by the schema, as any check it holds: FQ_EINVAL naming the
    //  constraint, and nothing changed
    s_assert_refused(&(fq_tenant_spec_t){.name = "budget",
                                         .send_rate_count = 1000000001,
                                         .send_rate_period_s = 1},
                     "tenants_send_rate_count_check");
    s_assert_refused(
        &(fq_tenant_spec_t){.name = "budget", .send_rate_count = 10, .send_rate_period_s = 7},
        "tenants_send_rate_period_s_check");
    s_assert_refused(&(fq_tenant_spec_t){.name = "budget", .send_rate_count = 10},
                     "tenants_send_rate_period_s_check");
    s_assert_refused(&(fq_tenant_spec_t){.name = "budget", .daily_quota = 1000000000001},
                     "tenants_daily_quota_check");
    //  Past an integer: the database's own refusal of the value, no constraint
    s_assert_refused(&(fq_tenant_spec_t){.name = "budget",
                                         .send_rate_count = INT64_C(3000000000),
                                         .send_rate_period_s = 1},
                     "");
    s_assert_budget("budget", 1000000000, 86400, 1000000000000, 42);
    s_assert_refused(&(fq_tenant_spec_t){.name = "budget-refused", .daily_quota = INT64_MAX},
                     "tenants_daily_quota_check");
    assert_int_equal(s_sql_int("SELECT count(*) FROM fairq.tenants WHERE name = 'budget-refused'"),
                     0);

    //  Removed (-1, any negative), one without the other; the day's count
    //  stays what it was
    spec = (fq_tenant_spec_t){.name = "budget", .send_rate_count = -1};
    assert_int_equal(fq_store_tenant_put(s_store, &spec, NULL), 0);
    s_assert_budget("budget", 0, 0, 1000000000000, 42);
    spec = (fq_tenant_spec_t){.name = "budget", .daily_quota = -1};
    assert_int_equal(fq_store_tenant_put(s_store, &spec, NULL), 0);
    s_assert_budget("budget", 0, 0, 0, 42);
    assert_int_equal(s_sql_int("SELECT count(*) FROM fairq.tenants WHERE name = 'budget'"
                               " AND send_rate_count IS NULL AND send_rate_period_s IS NULL"
                               " AND daily_quota IS NULL AND weight = 4"),
                     1);
    //  Removing what is not there is no error
    spec = (fq_tenant_spec_t){.name = "budget-none", .send_rate_count = -5, .daily_quota = -5};
    assert_int_equal(fq_store_tenant_put(s_store, &spec, NULL), 0);
    s_assert_budget("budget-none", 0, 0, 0, 0);
    s_assert_counters();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_status_names),
        cmocka_unit_test(test_search_filters_and_paging),
        cmocka_unit_test(test_search_bad_input),
        cmocka_unit_test(test_filters_match_literally),
        cmocka_unit_test(test_cancel_by_filter),
        cmocka_unit_test(test_cancel_request),
        cmocka_unit_test(test_pause_resume),
        cmocka_unit_test(test_change_request),
        cmocka_unit_test(test_retry_dead),
        cmocka_unit_test(test_release_claims),
        cmocka_unit_test(test_bulk_actions),
        cmocka_unit_test(test_bulk_bad_input),
        cmocka_unit_test(test_bulk_cancel_leaves_an_ack_alone),
        cmocka_unit_test(test_shape),
        cmocka_unit_test(test_error_summary),
        cmocka_unit_test(test_finish_and_prune),
        cmocka_unit_test(test_tenants),
        cmocka_unit_test(test_search_plans_use_indexes),
        cmocka_unit_test(test_tenant_send_budgets),
    };
    return cmocka_run_group_tests(tests, s_group_setup, s_group_teardown);
}
