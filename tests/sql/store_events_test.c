/*  store_events_test.c — reading fairq.events a page at a time
    (fq_store_events.h, migration 0018) against a real PostgreSQL: events
    written by SQL, each statement its own transaction, read back in
    (txid, id) order across pages with no duplicate and no gap, even where
    ids and transactions are in another order; every filter (a tenant by
    id or by name, a request, a type) and the refusals of names that do
    not exist or are another tenant's, in the same words; an event of a
    transaction still open never returned, the newer ones held back behind
    it, the older ones given, and the cursor never passing it, so that the
    next page after its commit starts with it; malformed cursors, unknown
    types, limits and negative ids refused in words before the database is
    asked; and the plans: a tenant's page (or a request's) walks
    events_tenant_idx, every tenant's events_order_idx, never a full sort
    (an incremental one orders the events of a stored row, 0029); and a
    request's message.sent events of one ack batch, one stored row, read
    back as events of their own across pages that end inside it. */
#include "fq_error.h"
#include "fq_store.h"
#include "fq_store_events.h"
#include "fq_store_internal.h"
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include "fq_test_sql.h"

//  How long a read may wait for transactions of other programs sharing
//  the cluster (they hold the snapshot's bound back while they run).
#define S_SETTLE_MS 10000

static char s_conninfo[128];
static int64_t s_acme, s_bravo; //  Tenant ids
static int64_t s_acme_request, s_bravo_request;

static int64_t s_request(fq_store_t *store, const char *tenant)
{
    char from[64];
    snprintf(from, sizeof from, "news@%s.example", tenant);
    fq_submit_t req = {.tenant = tenant,
                       .from = from,
                       .subject = "Hi",
                       .body = "Hello",
                       .recipients_json = "[{\"to\": \"ann@example.org\"}]"};
    int64_t id;
    if (fq_store_submit(store, &req, &id))
        fail_msg("submit: %s", fq_store_error(store));
    return id;
}

//  A request of tenant's to count recipients (fq_test_recipients with
//  prefix), split into messages as the splitter does; its id.
static int64_t s_split_request(fq_store_t *store, const char *tenant, const char *prefix, int count)
{
    char from[64];
    snprintf(from, sizeof from, "news@%s.example", tenant);
    char *recipients = fq_test_recipients(prefix, count);
    fq_submit_t req = {.tenant = tenant,
                       .from = from,
                       .subject = "Hi",
                       .body = "Hello",
                       .recipients_json = recipients};
    int64_t id = fq_test_submit_split(store, &req, NULL, 0);
    free(recipients);
    return id;
}

static int s_group_setup(void **state)
{
    (void)state;
    const char *tenants[] = {"acme", "bravo", "plans", NULL};
    if (fq_test_db_prepare(s_conninfo, sizeof s_conninfo, tenants, &s_acme))
        return -1;
    fq_store_t *store = fq_store_new(s_conninfo, NULL, 0);
    int rc = store ? fq_store_tenant_id(store, "bravo", &s_bravo) : -1;
    fq_store_destroy(&store);
    return rc ? -1 : 0;
}

static int s_group_teardown(void **state)
{
    (void)state;
    fq_test_db_drop();
    return 0;
}

//  Writes one event in a transaction of its own (conn's, if it is in one)
//  and returns its id. request and message 0 are none; recipient and
//  detail NULL are none.
static int64_t s_event(PGconn *conn, int64_t tenant, int64_t request, int64_t message,
                       const char *type, const char *recipient, const char *detail)
{
    char t[32], r[32], m[32];
    return fq_test_int(conn,
                       "INSERT INTO fairq.events (tenant_id, request_id, message_id, type,"
                       " recipient, detail) VALUES ($1::bigint, nullif($2::bigint, 0),"
                       " nullif($3::bigint, 0), $4::fairq.event_type, $5, $6) RETURNING id",
                       6, fq_test_param(t, sizeof t, tenant), fq_test_param(r, sizeof r, request),
                       fq_test_param(m, sizeof m, message), type, recipient, detail);
}

//  Reads one page, or fails with the store's message.
static int s_read(fq_store_t *store, const fq_event_filter_t *filter, const char *after, int limit,
                  fq_event_page_t *page)
{
    int rc = fq_store_events(store, filter, after, limit, page);
    if (rc < 0)
        fail_msg("read events: %s (%s)", fq_store_error(store), fq_err_name(rc));
    assert_int_equal((size_t)rc, page->count);
    return rc;
}

//  Every event matching filter, following the cursors with pages of limit:
//  their ids into ids (at most max), how many.
static size_t s_read_all(fq_store_t *store, const fq_event_filter_t *filter, int limit,
                         int64_t *ids, size_t max)
{
    char cursor[FQ_EVENT_CURSOR_SIZE] = FQ_EVENT_CURSOR_START;
    size_t count = 0;
    fq_event_page_t page;
    while (s_read(store, filter, cursor, limit, &page) > 0) {
        assert_true(page.count <= (size_t)limit);
        for (size_t i = 0; i < page.count; i++) {
            assert_true(count < max);
            ids[count++] = page.rows[i].id;
        }
        assert_string_not_equal(page.next, cursor);
        snprintf(cursor, sizeof cursor, "%s", page.next);
        fq_event_page_free(&page);
    }
    //  The end: an empty page gives the cursor back
    assert_string_equal(page.next, cursor);
    fq_event_page_free(&page);
    return count;
}

//  The ids the database holds for where (a condition on e), in reading
//  order, into ids; how many.
static size_t s_sql_ids(PGconn *conn, const char *where, int64_t *ids, size_t max)
{
    char sql[512];
    snprintf(sql, sizeof sql, "SELECT id FROM fairq.events e WHERE %s ORDER BY txid, id", where);
    PGresult *res = fq_test_query(conn, sql, 0);
    size_t n = (size_t)PQntuples(res);
    assert_true(n <= max);
    for (size_t i = 0; i < n; i++)
        ids[i] = strtoll(PQgetvalue(res, (int)i, 0), NULL, 10);
    PQclear(res);
    return n;
}

static void s_assert_ids(const int64_t *got, size_t ngot, const int64_t *wanted, size_t nwanted)
{
    assert_int_equal(ngot, nwanted);
    for (size_t i = 0; i < ngot; i++)
        if (got[i] != wanted[i])
            fail_msg("event %zu: id %lld, wanted %lld", i, (long long)got[i], (long long)wanted[i]);
}

//  The read must fail with rc, its message holding words.
static void s_refused(fq_store_t *store, const fq_event_filter_t *filter, const char *after,
                      int limit, int rc, const char *words)
{
    fq_event_page_t page;
    int got = fq_store_events(store, filter, after, limit, &page);
    if (got != rc)
        fail_msg("after \"%s\", limit %d: %d (%s), wanted %s", after ? after : "(null)", limit, got,
                 fq_store_error(store), fq_err_name(rc));
    assert_int_equal(page.count, 0);
    assert_null(page.rows);
    if (!strstr(fq_store_error(store), words))
        fail_msg("\"%s\" does not say \"%s\"", fq_store_error(store), words);
    //  The store's own words, not the database's
    assert_string_equal(fq_store_error_sqlstate(store), "");
}

static void test_pages_in_order(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    s_acme_request = s_request(store, "acme");
    s_bravo_request = s_request(store, "bravo");
    PGconn *conn = fq_test_connect(s_conninfo);
    static const char *const types[] = {"message.sent", "message.deferred", "message.dead",
                                        "message.rejected"};
    for (int i = 0; i < 24; i++) {
        bool acme = i % 3 != 0;
        char to[64];
        snprintf(to, sizeof to, "r%d@example.org", i);
        s_event(conn, acme ? s_acme : s_bravo, acme ? s_acme_request : s_bravo_request, 100 + i,
                types[i % 4], to, i % 4 == 1 ? "451 4.7.1 try later" : NULL);
    }
    //  Several events of one transaction share its txid
    fq_test_exec(conn, "BEGIN", 0);
    for (int i = 0; i < 3; i++)
        s_event(conn, s_acme, s_acme_request, 0, "request.split", NULL, NULL);
    fq_test_exec(conn, "COMMIT", 0);
    //  Ids in another order than transactions: the first transaction takes
    //  its txid, the second writes and commits, then the first writes a
    //  higher id. Reading order is the txid's
    PGconn *early = fq_test_connect(s_conninfo);
    fq_test_exec(early, "BEGIN", 0);
    PQclear(fq_test_query(early, "SELECT pg_current_xact_id()", 0));
    int64_t second = s_event(conn, s_bravo, 0, 0, "request.done", NULL, NULL);
    int64_t first = s_event(early, s_acme, 0, 0, "request.cancelled", NULL, NULL);
    fq_test_exec(early, "COMMIT", 0);
    PQfinish(early);
    assert_true(first > second);

    int64_t wanted[64], got[64];
    size_t nwanted = s_sql_ids(conn, "true", wanted, 64);
    assert_int_equal(nwanted, 24 + 3 + 2);
    for (int limit = 1; limit <= 5; limit += 2) {
        size_t n = s_read_all(store, &(fq_event_filter_t){0}, limit, got, 64);
        s_assert_ids(got, n, wanted, nwanted);
    }
    //  first comes before second
    size_t at_first = 0, at_second = 0;
    for (size_t i = 0; i < nwanted; i++) {
        at_first = wanted[i] == first ? i : at_first;
        at_second = wanted[i] == second ? i : at_second;
    }
    assert_true(at_first < at_second);

    //  One event whole; the cursor is the last row's txid and id
    fq_event_page_t page;
    assert_int_equal(s_read(store, &(fq_event_filter_t){0}, NULL, 2, &page), 2);
    const fq_event_t *e = &page.rows[1];
    assert_int_equal(e->id, wanted[1]);
    assert_string_equal(e->tenant, "acme");
    assert_int_equal(e->request_id, s_acme_request);
    assert_int_equal(e->message_id, 101);
    assert_string_equal(e->type, "message.deferred");
    assert_string_equal(e->recipient, "r1@example.org");
    assert_string_equal(e->detail, "451 4.7.1 try later");
    assert_true(llabs(e->at - (int64_t)time(NULL)) < 600);
    char cursor[FQ_EVENT_CURSOR_SIZE], id[32];
    char *txid = fq_test_text(conn, "SELECT txid::text FROM fairq.events WHERE id = $1::bigint", 1,
                              fq_test_param(id, sizeof id, e->id));
    snprintf(cursor, sizeof cursor, "%s-%lld", txid, (long long)e->id);
    free(txid);
    assert_string_equal(page.next, cursor);
    assert_string_equal(page.rows[0].tenant, "bravo");
    assert_null(page.rows[0].detail);
    fq_event_page_free(&page);
    //  A request's event has no message nor recipient
    assert_int_equal(s_read(store, &(fq_event_filter_t){.type = "request.split"}, NULL, 1, &page),
                     1);
    assert_int_equal(page.rows[0].message_id, 0);
    assert_null(page.rows[0].recipient);
    fq_event_page_free(&page);
    //  Nothing at all: the start's cursor back
    assert_int_equal(
        s_read(store, &(fq_event_filter_t){.type = "message.cancelled"}, NULL, 10, &page), 0);
    assert_string_equal(page.next, FQ_EVENT_CURSOR_START);
    assert_null(page.rows);
    fq_event_page_free(&page);
    PQfinish(conn);
    fq_store_destroy(&store);
}

static void test_filters(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    PGconn *conn = fq_test_connect(s_conninfo);
    int64_t wanted[64], got[64];
    char where[256];
    size_t n;

    //  A tenant by id, or by name, or both
    snprintf(where, sizeof where, "tenant_id = %lld", (long long)s_acme);
    size_t nwanted = s_sql_ids(conn, where, wanted, 64);
    assert_true(nwanted > 10);
    n = s_read_all(store, &(fq_event_filter_t){.tenant_id = s_acme}, 4, got, 64);
    s_assert_ids(got, n, wanted, nwanted);
    n = s_read_all(store, &(fq_event_filter_t){.tenant = "acme"}, 4, got, 64);
    s_assert_ids(got, n, wanted, nwanted);
    n = s_read_all(store, &(fq_event_filter_t){.tenant_id = s_acme, .tenant = "acme"}, 4, got, 64);
    s_assert_ids(got, n, wanted, nwanted);

    //  A request, alone or with its tenant
    snprintf(where, sizeof where, "request_id = %lld", (long long)s_bravo_request);
    nwanted = s_sql_ids(conn, where, wanted, 64);
    assert_true(nwanted > 3);
    n = s_read_all(store, &(fq_event_filter_t){.request_id = s_bravo_request}, 3, got, 64);
    s_assert_ids(got, n, wanted, nwanted);
    n = s_read_all(store, &(fq_event_filter_t){.request_id = s_bravo_request, .tenant = "bravo"}, 3,
                   got, 64);
    s_assert_ids(got, n, wanted, nwanted);

    //  A type, with a tenant
    snprintf(where, sizeof where, "tenant_id = %lld AND type = 'message.deferred'",
             (long long)s_acme);
    nwanted = s_sql_ids(conn, where, wanted, 64);
    assert_true(nwanted >= 3);
    n = s_read_all(store, &(fq_event_filter_t){.tenant_id = s_acme, .type = "message.deferred"}, 2,
                   got, 64);
    s_assert_ids(got, n, wanted, nwanted);
    nwanted = s_sql_ids(conn, "type = 'request.done'", wanted, 64);
    n = s_read_all(store, &(fq_event_filter_t){.type = "request.done"}, 2, got, 64);
    s_assert_ids(got, n, wanted, nwanted);

    //  A tenant that exists with no event: an empty page, not an error
    fq_event_page_t page;
    assert_int_equal(s_read(store, &(fq_event_filter_t){.tenant = "plans"}, NULL, 10, &page), 0);
    fq_event_page_free(&page);

    //  Names that do not exist, and another tenant's, in the same words
    s_refused(store, &(fq_event_filter_t){.tenant = "nobody"}, NULL, 10, FQ_ENOTFOUND,
              "could not read tenant: \"nobody\" does not exist");
    s_refused(store, &(fq_event_filter_t){.tenant_id = s_acme, .tenant = "bravo"}, NULL, 10,
              FQ_ENOTFOUND, "could not read tenant: \"bravo\" does not exist");
    char words[64];
    snprintf(words, sizeof words, "request %lld does not exist", (long long)s_bravo_request);
    s_refused(store, &(fq_event_filter_t){.tenant_id = s_acme, .request_id = s_bravo_request}, NULL,
              10, FQ_ENOTFOUND, words);
    s_refused(store, &(fq_event_filter_t){.tenant = "acme", .request_id = s_bravo_request}, NULL,
              10, FQ_ENOTFOUND, words);
    s_refused(store, &(fq_event_filter_t){.request_id = 987654321}, NULL, 10, FQ_ENOTFOUND,
              "request 987654321 does not exist");
    PQfinish(conn);
    fq_store_destroy(&store);
}

//  Reads every event after cursor into ids, waiting up to S_SETTLE_MS
//  until the page holds at least min of them (another program's
//  transaction may hold the snapshot's bound back a moment). Moves cursor.
static size_t s_read_settled(fq_store_t *store, const fq_event_filter_t *filter, char *cursor,
                             size_t min, int64_t *ids, size_t max)
{
    int64_t deadline = fq_test_now_ms() + S_SETTLE_MS;
    fq_event_page_t page;
    while (true) {
        s_read(store, filter, cursor, (int)max, &page);
        if (page.count >= min || fq_test_now_ms() > deadline)
            break;
        fq_event_page_free(&page);
        fq_test_sleep_ms(50);
    }
    for (size_t i = 0; i < page.count; i++)
        ids[i] = page.rows[i].id;
    snprintf(cursor, FQ_EVENT_CURSOR_SIZE, "%s", page.next);
    size_t n = page.count;
    fq_event_page_free(&page);
    return n;
}

static void test_open_transaction_is_never_passed(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    PGconn *conn = fq_test_connect(s_conninfo);
    fq_event_filter_t filter = {0};
    int64_t ids[64];
    //  The end of what is there now
    char cursor[FQ_EVENT_CURSOR_SIZE] = FQ_EVENT_CURSOR_START;
    while (s_read_settled(store, &filter, cursor, 0, ids, 64) > 0)
        ;

    //  older takes its txid first, then open writes and stays open, then
    //  older writes and commits; then newer events, in transactions that
    //  began after open's
    PGconn *older = fq_test_connect(s_conninfo);
    PGconn *open = fq_test_connect(s_conninfo);
    fq_test_exec(older, "BEGIN", 0);
    PQclear(fq_test_query(older, "SELECT pg_current_xact_id()", 0));
    fq_test_exec(open, "BEGIN", 0);
    int64_t held = s_event(open, s_bravo, 0, 0, "message.dead", "x@example.org", "550 no");
    int64_t old = s_event(older, s_acme, 0, 0, "message.sent", "o@example.org", NULL);
    fq_test_exec(older, "COMMIT", 0);
    PQfinish(older);
    int64_t newer[2];
    newer[0] = s_event(conn, s_acme, 0, 0, "message.sent", "n0@example.org", NULL);
    newer[1] = s_event(conn, s_bravo, 0, 0, "message.sent", "n1@example.org", NULL);
    //  A transaction rolled back takes its event with it
    fq_test_exec(conn, "BEGIN", 0);
    s_event(conn, s_acme, 0, 0, "message.sent", "gone@example.org", NULL);
    fq_test_exec(conn, "ROLLBACK", 0);

    //  The older transaction's event comes; the open one's does not, nor
    //  anything newer, whichever tenant: the cursor stays before them
    assert_int_equal(s_read_settled(store, &filter, cursor, 1, ids, 64), 1);
    assert_int_equal(ids[0], old);
    char stuck[FQ_EVENT_CURSOR_SIZE];
    snprintf(stuck, sizeof stuck, "%s", cursor);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(s_read_settled(store, &filter, cursor, 0, ids, 64), 0);
        assert_string_equal(cursor, stuck);
    }
    fq_event_filter_t acme = {.tenant = "acme"};
    char acme_cursor[FQ_EVENT_CURSOR_SIZE];
    snprintf(acme_cursor, sizeof acme_cursor, "%s", cursor);
    assert_int_equal(s_read_settled(store, &acme, acme_cursor, 0, ids, 64), 0);

    //  Once it commits, the next page starts with its event, then the newer
    fq_test_exec(open, "COMMIT", 0);
    PQfinish(open);
    assert_int_equal(s_read_settled(store, &filter, cursor, 3, ids, 64), 3);
    assert_int_equal(ids[0], held);
    assert_int_equal(ids[1], newer[0]);
    assert_int_equal(ids[2], newer[1]);
    assert_int_equal(s_read_settled(store, &acme, acme_cursor, 1, ids, 64), 1);
    assert_int_equal(ids[0], newer[0]);
    assert_int_equal(s_read_settled(store, &filter, cursor, 0, ids, 64), 0);
    PQfinish(conn);
    fq_store_destroy(&store);
}

static void test_refusals(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    fq_event_filter_t any = {0};
    static const char *const cursors[] = {"",
                                          "abc",
                                          "12",
                                          "12-",
                                          "-12",
                                          "12-34-56",
                                          "12 -34",
                                          " 12-34",
                                          "12-34 ",
                                          "+12-34",
                                          "12-+34",
                                          "12--34",
                                          "12_34",
                                          "0x10-1",
                                          "12-34x",
                                          "18446744073709551616-1",
                                          "1-9223372036854775808",
                                          "99999999999999999999999-1"};
    for (size_t i = 0; i < sizeof cursors / sizeof *cursors; i++)
        s_refused(store, &any, cursors[i], 10, FQ_EINVAL, "is not a cursor");
    s_refused(store, &any, "abc", 10, FQ_EINVAL,
              "could not read events: \"abc\" is not a cursor (a cursor is the \"next\" of a page, "
              "two numbers joined by '-', as \"0-0\" for the start)");
    //  The largest cursor is one
    fq_event_page_t page;
    assert_int_equal(s_read(store, &any, "18446744073709551615-9223372036854775807", 10, &page), 0);
    assert_string_equal(page.next, "18446744073709551615-9223372036854775807");
    fq_event_page_free(&page);
    //  A cursor is given back in its plain form
    assert_int_equal(s_read(store, &(fq_event_filter_t){.type = "message.cancelled"},
                            "0000000000000000000000001-00", 1, &page),
                     0);
    assert_string_equal(page.next, "1-0");
    fq_event_page_free(&page);

    static const char *const types[] = {"message.opened", "", "MESSAGE.SENT", "message",
                                        "message.sent "};
    for (size_t i = 0; i < sizeof types / sizeof *types; i++)
        s_refused(store, &(fq_event_filter_t){.type = types[i]}, NULL, 10, FQ_EINVAL,
                  "is none of " FQ_EVENT_TYPES_TEXT);
    for (size_t i = 0; fq_event_types[i]; i++) {
        assert_int_equal(fq_store_events(store, &(fq_event_filter_t){.type = fq_event_types[i]},
                                         NULL, 1, &page) >= 0,
                         1);
        fq_event_page_free(&page);
    }
    //  The C list is the schema's
    PGconn *conn = fq_test_connect(s_conninfo);
    char *schema =
        fq_test_text(conn,
                     "SELECT string_agg(t::text, ', ' ORDER BY t) FROM unnest(enum_range(NULL::"
                     "fairq.event_type)) t",
                     0);
    assert_string_equal(schema, FQ_EVENT_TYPES_TEXT);
    free(schema);
    //  And the text the list's, in the same order
    char joined[sizeof FQ_EVENT_TYPES_TEXT + 1] = "";
    for (size_t i = 0; fq_event_types[i]; i++)
        snprintf(joined + strlen(joined), sizeof joined - strlen(joined), "%s%s", i ? ", " : "",
                 fq_event_types[i]);
    assert_string_equal(joined, FQ_EVENT_TYPES_TEXT);
    PQfinish(conn);

    s_refused(store, &any, NULL, 0, FQ_EINVAL, "limit 0 is not within 1..1000");
    s_refused(store, &any, NULL, -1, FQ_EINVAL, "limit -1 is not within 1..1000");
    s_refused(store, &any, NULL, FQ_STORE_PAGE_MAX + 1, FQ_EINVAL,
              "limit 1001 is not within 1..1000");
    assert_true(s_read(store, &any, NULL, FQ_STORE_PAGE_MAX, &page) > 0);
    fq_event_page_free(&page);
    assert_int_equal(s_read(store, &any, NULL, 1, &page), 1);
    fq_event_page_free(&page);
    s_refused(store, &(fq_event_filter_t){.tenant_id = -1}, NULL, 10, FQ_EINVAL, "negative");
    s_refused(store, &(fq_event_filter_t){.request_id = -5}, NULL, 10, FQ_EINVAL, "negative");
    s_refused(store, &(fq_event_filter_t){.tenant = ""}, NULL, 10, FQ_EINVAL, "empty");
    s_refused(store, NULL, NULL, 10, FQ_EINVAL, "no filter");
    fq_store_destroy(&store);
}

//  Whether plan walks index and sorts nothing, scans no table whole.
static void s_assert_plan(fq_store_t *store, const fq_event_filter_t *filter, const char *after,
                          const char *index)
{
    char *plan;
    if (fq_store_explain_events(store, filter, after, 100, &plan))
        fail_msg("explain: %s", fq_store_error(store));
    char wanted[128];
    snprintf(wanted, sizeof wanted, "\"Index Name\": \"%s", index);
    bool good = strstr(plan, wanted) && !strstr(plan, "\"Sort\"") &&
                !strstr(plan, "\"Seq Scan\"") && !strstr(plan, "Bitmap");
    if (!good)
        fprintf(stderr, "the plan does not walk %s alone:\n%s\n", index, plan);
    free(plan);
    assert_true(good);
}

static void test_plans_walk_the_indexes(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    PGconn *conn = fq_test_connect(s_conninfo);
    int64_t plans = fq_test_int(conn, "SELECT id FROM fairq.tenants WHERE name = 'plans'", 0);
    int64_t request = s_request(store, "plans");
    //  Forty transactions of a thousand events, one in ten of them for plans
    char p[32], a[32], r[32];
    for (int i = 0; i < 40; i++)
        fq_test_exec(conn,
                     "INSERT INTO fairq.events (tenant_id, request_id, message_id, type, recipient)"
                     " SELECT CASE WHEN g % 10 = 0 THEN $1::bigint ELSE $2::bigint END,"
                     " CASE WHEN g % 10 = 0 THEN $3::bigint END, g,"
                     " (enum_range(NULL::fairq.event_type))[1 + g % 5], 'p' || g || '@example.org'"
                     " FROM generate_series(1, 1000) g",
                     3, fq_test_param(p, sizeof p, plans), fq_test_param(a, sizeof a, s_acme),
                     fq_test_param(r, sizeof r, request));
    fq_test_exec(conn, "ANALYZE fairq.event_rows", 0);
    char middle[FQ_EVENT_CURSOR_SIZE];
    char *text = fq_test_text(conn,
                              "SELECT txid::text || '-' || id FROM fairq.events"
                              " WHERE tenant_id = $1::bigint ORDER BY txid, id OFFSET 2000 LIMIT 1",
                              1, p);
    assert_non_null(text);
    snprintf(middle, sizeof middle, "%s", text);
    free(text);

    s_assert_plan(store, &(fq_event_filter_t){.tenant_id = plans}, NULL, "events_tenant_idx");
    s_assert_plan(store, &(fq_event_filter_t){.tenant = "plans"}, middle, "events_tenant_idx");
    s_assert_plan(store, &(fq_event_filter_t){.tenant_id = plans, .type = "message.dead"}, middle,
                  "events_tenant_idx");
    s_assert_plan(store, &(fq_event_filter_t){.request_id = request}, NULL, "events_tenant_idx");
    //  A tenant with most of the events may walk either index, never sort
    s_assert_plan(store, &(fq_event_filter_t){.tenant = "acme"}, middle, "events_");
    s_assert_plan(store, &(fq_event_filter_t){0}, NULL, "events_order_idx");
    s_assert_plan(store, &(fq_event_filter_t){0}, middle, "events_order_idx");

    //  And the pages give what the plans promise
    fq_event_page_t page;
    assert_int_equal(s_read(store, &(fq_event_filter_t){.tenant = "plans"}, middle, 1000, &page),
                     1000);
    assert_int_equal(page.rows[0].message_id % 10, 0);
    for (size_t i = 0; i < page.count; i++)
        assert_string_equal(page.rows[i].tenant, "plans");
    fq_event_page_free(&page);
    PQfinish(conn);
    fq_store_destroy(&store);
}

//  A request's message.sent events of one ack batch are one stored row
//  (0029), up to a block of them; read back, each is an event of its own:
//  its own id, in reading order, with its message and recipient, a page
//  ending inside a row and the next starting there.
static void test_a_batch_of_acks_is_a_row_of_events(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    PGconn *conn = fq_test_connect(s_conninfo);
    //  The identity's step is the block the statements assume
    assert_int_equal(fq_test_int(conn,
                                 "SELECT seqincrement FROM pg_sequence WHERE seqrelid ="
                                 " pg_get_serial_sequence('fairq.event_rows', 'id')::regclass",
                                 0),
                     FQ_STORE_EVENT_BLOCK);
    enum { BIG = FQ_STORE_EVENT_BLOCK + 6, SMALL = 3 };
    int64_t big = s_split_request(store, "acme", "big", BIG);
    int64_t small = s_split_request(store, "bravo", "small", SMALL);
    int64_t before = fq_test_int(conn, "SELECT count(*) FROM fairq.event_rows", 0);
    //  Both requests' messages in one batch, the small one's among the others
    char b[32], m[32];
    PGresult *res =
        fq_test_query(conn,
                      "SELECT id FROM fairq.messages WHERE request_id IN ($1::bigint,"
                      " $2::bigint) ORDER BY request_id = $2::bigint, id",
                      2, fq_test_param(b, sizeof b, big), fq_test_param(m, sizeof m, small));
    assert_int_equal(PQntuples(res), BIG + SMALL);
    int64_t ids[BIG + SMALL];
    for (int i = 0; i < BIG + SMALL; i++)
        ids[i] = strtoll(PQgetvalue(res, i, 0), NULL, 10);
    PQclear(res);
    int64_t swap = ids[10];
    ids[10] = ids[BIG], ids[BIG] = swap;
    assert_int_equal(fq_store_ack_batch(store, ids, BIG + SMALL), BIG + SMALL);

    //  Three rows: a block of the big request's, the rest of it, the small one's
    assert_int_equal(fq_test_int(conn, "SELECT count(*) FROM fairq.event_rows", 0) - before, 3);
    assert_int_equal(fq_test_int(conn,
                                 "SELECT count(*) FROM fairq.event_rows WHERE message_ids IS NOT"
                                 " NULL AND cardinality(message_ids) = $1::int",
                                 1, fq_test_param(b, sizeof b, FQ_STORE_EVENT_BLOCK)),
                     1);
    //  Every message's event once, with its own id, request, tenant and recipient
    assert_int_equal(fq_test_int(conn,
                                 "SELECT count(DISTINCT e.id) FROM fairq.events e"
                                 " JOIN fairq.messages m ON m.id = e.message_id"
                                 " AND m.request_id = e.request_id AND m.tenant_id = e.tenant_id"
                                 " AND m.recipient = e.recipient WHERE e.type = 'message.sent'"
                                 " AND m.status = 'sent'",
                                 0),
                     BIG + SMALL);
    //  Read by pages that end inside the rows: the database's order, all
    //  of them, the request's ids in the order of its messages
    static int64_t wanted[BIG + 64], got[BIG + 64];
    int64_t requests[] = {big, small};
    for (int r = 0; r < 2; r++) {
        char where[96];
        snprintf(where, sizeof where, "request_id = %lld AND type = 'message.sent'",
                 (long long)requests[r]);
        size_t nwanted = s_sql_ids(conn, where, wanted, BIG + 64);
        assert_int_equal(nwanted, r == 0 ? BIG : SMALL);
        for (int limit = 7; limit <= 1000; limit *= 11) {
            fq_event_filter_t sent = {.request_id = requests[r], .type = "message.sent"};
            size_t n = s_read_all(store, &sent, limit, got, BIG + 64);
            s_assert_ids(got, n, wanted, nwanted);
        }
        for (size_t i = 1; i < nwanted; i++)
            assert_true(wanted[i] > wanted[i - 1]);
    }
    //  One event whole, from the middle of a row
    fq_event_page_t page;
    char cursor[FQ_EVENT_CURSOR_SIZE];
    fq_event_filter_t sent = {.request_id = big, .type = "message.sent"};
    assert_int_equal(s_read(store, &sent, NULL, 5, &page), 5);
    snprintf(cursor, sizeof cursor, "%s", page.next);
    fq_event_page_free(&page);
    assert_int_equal(s_read(store, &sent, cursor, 1, &page), 1);
    assert_string_equal(page.rows[0].tenant, "acme");
    assert_string_equal(page.rows[0].type, "message.sent");
    assert_string_equal(page.rows[0].recipient, "big5@example.com");
    assert_int_equal(page.rows[0].message_id,
                     fq_test_int(conn,
                                 "SELECT id FROM fairq.messages WHERE request_id = $1::bigint"
                                 " ORDER BY id OFFSET 5 LIMIT 1",
                                 1, fq_test_param(b, sizeof b, big)));
    assert_null(page.rows[0].detail);
    fq_event_page_free(&page);

    //  A row holds one request's events, a block at most
    PGresult *refused = PQexec(conn, "INSERT INTO fairq.event_rows (tenant_id, type, message_ids,"
                                     " recipients) SELECT 1, 'message.sent', array_agg(g),"
                                     " array_agg('x'::text) FROM generate_series(1, 1025) g");
    assert_string_equal(PQresultErrorField(refused, PG_DIAG_SQLSTATE), "23514");
    PQclear(refused);
    //  And its ids and recipients together or not at all
    refused = PQexec(conn, "INSERT INTO fairq.event_rows (tenant_id, type, message_ids)"
                           " VALUES (1, 'message.sent', ARRAY[1, 2])");
    assert_string_equal(PQresultErrorField(refused, PG_DIAG_SQLSTATE), "23514");
    PQclear(refused);
    PQfinish(conn);
    fq_store_destroy(&store);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pages_in_order),
        cmocka_unit_test(test_filters),
        cmocka_unit_test(test_open_transaction_is_never_passed),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_plans_walk_the_indexes),
        cmocka_unit_test(test_a_batch_of_acks_is_a_row_of_events),
    };
    return cmocka_run_group_tests(tests, s_group_setup, s_group_teardown);
}
