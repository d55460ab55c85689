/*  store_paging_test.c — the scheduler's queries against a real
    PostgreSQL: paging a request's ready messages by id cursor, claiming
    due retries under a lease, finding due requests; and, with 200,000
    messages in the table, their plans: index scans whose cost is bounded
    by the page size, not by the backlog. The plans are printed. */
#include "fq_store.h"
#include "fq_store_internal.h"
#include "fq_error.h"
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include "fq_test_sql.h"

//  The page size the scheduler asks for.
#define S_PAGE 100

//  A page may look at no more rows than this, however big the backlog.
#define S_ROWS_EXAMINED_MAX 1000

//  ...nor touch more buffers than this.
#define S_BUFFERS_MAX 200

//  The backlog of the plan test: many small requests, one big one.
#define S_SMALL_REQUESTS 1000
#define S_SMALL_SIZE     100
#define S_BIG_SIZE       100000

//  The retry lease of the claim test, and how long past it the test waits.
#define S_LEASE_S     1
#define S_LEASE_SLACK 300

//  How long a terminated backend may take to leave pg_stat_activity.
#define S_GONE_MS 5000

static char s_conninfo[128];
static int64_t s_tenant;

static int s_group_setup(void **state)
{
    (void)state;
    const char *tenants[] = {"acme", NULL};
    return fq_test_db_prepare(s_conninfo, sizeof s_conninfo, tenants, &s_tenant);
}

static int s_group_teardown(void **state)
{
    (void)state;
    fq_test_db_drop();
    return 0;
}

//  Each test starts from empty tables.
static int s_reset(void **state)
{
    (void)state;
    PGconn *conn = PQconnectdb(s_conninfo);
    PGresult *res = PQexec(conn, "TRUNCATE fairq.messages, fairq.rejects,"
                                 " fairq.recipient_chunks, fairq.request_destinations,"
                                 " fairq.requests");
    int rc = PQresultStatus(res) == PGRES_COMMAND_OK ? 0 : -1;
    PQclear(res);
    PQfinish(conn);
    return rc;
}

static int64_t s_request(fq_store_t *store, int n, int64_t send_at)
{
    char *recipients = fq_test_recipients("pg", n);
    fq_submit_t req = {.tenant = "acme",
                       .from = "news@acme.example",
                       .subject = "Hello {{name}}",
                       .body = "Dear {{ name }}",
                       .recipients_json = recipients,
                       .send_at = send_at};
    int64_t id = fq_test_submit_split(store, &req, NULL, 0);
    free(recipients);
    return id;
}

//  The ids of a request's pending messages, as SQL sees them; n gets the count.
static int64_t *s_pending_ids(PGconn *conn, int64_t request_id, int *n)
{
    char id_text[32];
    PGresult *res = fq_test_query(conn,
                                  "SELECT id FROM fairq.messages WHERE request_id = $1"
                                  " AND status = 'pending' ORDER BY id",
                                  1, fq_test_param(id_text, sizeof id_text, request_id));
    *n = PQntuples(res);
    int64_t *ids = malloc(((size_t)*n + 1) * sizeof *ids);
    assert_non_null(ids);
    for (int i = 0; i < *n; i++)
        ids[i] = strtoll(PQgetvalue(res, i, 0), NULL, 10);
    PQclear(res);
    return ids;
}

//  Paging a request by id cursor visits each pending message once, in id
//  order, and nothing else: not its sent, failed, dead or cancelled
//  messages, nor another request's.
static void test_next_ready_pages_pending_messages(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    PGconn *conn = fq_test_connect(s_conninfo);
    int64_t request = s_request(store, 250, 0);
    int64_t other = s_request(store, 50, 0);
    char id_text[32];
    fq_test_param(id_text, sizeof id_text, request);
    fq_test_exec(conn,
                 "UPDATE fairq.messages m SET status = (CASE"
                 "   WHEN k % 5 = 1 THEN 'sent' WHEN k % 5 = 2 THEN 'failed'"
                 "   WHEN k % 7 = 3 THEN 'dead' WHEN k % 11 = 4 THEN 'cancelled'"
                 "   ELSE 'pending' END)::fairq.message_status"
                 " FROM (SELECT id, row_number() OVER (ORDER BY id) AS k FROM fairq.messages"
                 "       WHERE request_id = $1) n WHERE m.id = n.id",
                 1, id_text);
    int expected_count;
    int64_t *expected = s_pending_ids(conn, request, &expected_count);
    assert_true(expected_count > 0 && expected_count < 250);

    //  The same pages from a store tuned as the scheduler's is, whose pages
    //  each carry their own setting (one pipeline, one transaction)
    const int pages[] = {S_PAGE, 7, 1};
    for (int tuned = 0; tuned < 2; tuned++) {
        if (tuned)
            assert_int_equal(fq_store_tune_paging(store), 0);
        for (size_t p = 0; p < sizeof pages / sizeof pages[0]; p++) {
            int64_t page[S_PAGE];
            int64_t cursor = 0;
            int seen = 0, n;
            while ((n = fq_store_next_ready(store, request, cursor, pages[p], page)) > 0) {
                assert_true(n <= pages[p]);
                for (int i = 0; i < n; i++) {
                    assert_true(seen < expected_count);
                    assert_true(page[i] == expected[seen]);
                    seen++;
                }
                cursor = page[n - 1];
            }
            assert_int_equal(n, 0);
            assert_int_equal(seen, expected_count);
        }
    }
    //  The other request pages its own 50
    int64_t page[S_PAGE];
    assert_int_equal(fq_store_next_ready(store, other, 0, S_PAGE, page), 50);
    //  A request that does not exist has nothing ready
    assert_int_equal(fq_store_next_ready(store, INT64_MAX, 0, S_PAGE, page), 0);
    free(expected);
    PQfinish(conn);
    fq_store_destroy(&store);
}

//  Many requests paged in one statement give each exactly the page it
//  would get alone: its own pending messages after its own cursor, up to
//  its own limit, in id order, in the order asked; a request with nothing
//  (unknown, or paged to its end) gets an empty page, not a shift of the
//  others'. More than the bounds is refused.
static void test_next_ready_many_pages_each_request(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    PGconn *conn = fq_test_connect(s_conninfo);
    int64_t requests[4];
    const int sizes[] = {40, 3, 25, 60};
    for (int i = 0; i < 4; i++)
        requests[i] = s_request(store, sizes[i], 0);
    int counts_pending[4];
    int64_t *pending[4];
    for (int i = 0; i < 4; i++)
        pending[i] = s_pending_ids(conn, requests[i], &counts_pending[i]);
    //  Some of the first request sent meanwhile: skipped
    assert_int_equal(fq_store_ack_batch(store, pending[0] + 5, 5), 5);
    for (int tuned = 0; tuned < 2; tuned++) {
        if (tuned)
            assert_int_equal(fq_store_tune_paging(store), 0);
        fq_page_ask_t asks[] = {
            {requests[0], pending[0][2], 10, NULL}, //  after its third: 4..11, minus 5 sent
            {INT64_MAX, 0, 50, NULL},               //  unknown
            {requests[1], 0, 50, NULL},             //  all 3
            {requests[2], pending[2][24], 5, NULL}, //  past its end
            {requests[3], 0, 7, NULL},              //  the first 7
        };
        int nasks = (int)(sizeof asks / sizeof asks[0]);
        int64_t ids[128];
        int counts[8];
        int n = fq_store_next_ready_many(store, asks, nasks, ids, counts);
        int total = 0;
        for (int i = 0; i < nasks; i++) {
            int64_t alone[64];
            int expected = fq_store_next_ready(store, asks[i].request_id, asks[i].after_id,
                                               asks[i].limit, alone);
            assert_int_equal(counts[i], expected);
            for (int k = 0; k < expected; k++)
                assert_true(ids[total + k] == alone[k]);
            total += counts[i];
        }
        assert_int_equal(n, total);
        assert_int_equal(counts[0], 10);
        assert_int_equal(ids[0], pending[0][3]);
        assert_int_equal(ids[1], pending[0][4]);
        assert_int_equal(ids[2], pending[0][10]); //  5..9 were sent
        assert_int_equal(counts[1], 0);
        assert_int_equal(counts[2], 3);
        assert_int_equal(counts[3], 0);
        assert_int_equal(counts[4], 7);
        assert_int_equal(ids[n - 1], pending[3][6]);
        //  With their rows: the same pages, each row as a load reads it
        fq_message_rows_t rows;
        int rows_counts[8];
        assert_int_equal(fq_store_next_ready_rows(store, asks, nasks, &rows, rows_counts), n);
        assert_int_equal(rows.count, (size_t)n);
        assert_memory_equal(rows_counts, counts, (size_t)nasks * sizeof *counts);
        fq_message_rows_t loaded;
        assert_int_equal(fq_store_load_messages(store, ids, (size_t)n, &loaded), n);
        for (int i = 0; i < n; i++) {
            const fq_message_row_t *row = &rows.rows[i], *load = NULL;
            for (size_t k = 0; k < loaded.count && !load; k++)
                if (loaded.rows[k].id == ids[i])
                    load = &loaded.rows[k];
            assert_non_null(load);
            assert_int_equal(row->id, ids[i]);
            assert_int_equal(row->request_id, load->request_id);
            assert_int_equal(row->tenant_id, load->tenant_id);
            assert_string_equal(row->recipient, load->recipient);
            assert_string_equal(row->fields, load->fields);
            assert_int_equal(row->try_count, load->try_count);
            assert_int_equal(row->named_destination, load->named_destination);
            assert_string_equal(row->destination, load->destination);
        }
        fq_message_rows_free(&loaded);
        fq_message_rows_free(&rows);
    }
    //  Nothing asked, nothing done; too much asked, refused
    int counts[1];
    int64_t none[1];
    assert_int_equal(fq_store_next_ready_many(store, NULL, 0, none, counts), 0);
    fq_page_ask_t huge = {requests[3], 0, FQ_STORE_PAGE_IDS_MAX + 1, NULL};
    assert_int_equal(fq_store_next_ready_many(store, &huge, 1, none, counts), FQ_EINVAL);
    //  One query pages by destination or not at all, never both
    fq_page_ask_t mixed[] = {{requests[1], 0, 5, NULL}, {requests[3], 0, 5, "default"}};
    int64_t mixed_ids[10];
    int mixed_counts[2];
    assert_int_equal(fq_store_next_ready_many(store, mixed, 2, mixed_ids, mixed_counts), FQ_EINVAL);
    for (int i = 0; i < 4; i++)
        free(pending[i]);
    PQfinish(conn);
    fq_store_destroy(&store);
}

//  A tuned store's pages are planned once, not at each page: their
//  statement runs its generic plan (fq_store_messages.c), as the server
//  counts in the store's own session. Planning every page anew took longer
//  than running it under the pipeline benchmark's load.
static void test_tuned_pages_are_planned_once(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    int64_t request = s_request(store, 30, 0);
    assert_int_equal(fq_store_tune_paging(store), 0);
    const int pages = 12;
    for (int i = 0; i < pages; i++) {
        fq_page_ask_t ask = {request, i, 3, "default"};
        int64_t ids[3];
        int counts[1];
        assert_int_equal(fq_store_next_ready_many(store, &ask, 1, ids, counts), 3);
        assert_int_equal(counts[0], 3);
        //  And the page with its rows, the scheduler's
        fq_message_rows_t rows;
        assert_int_equal(fq_store_next_ready_rows(store, &ask, 1, &rows, counts), 3);
        fq_message_rows_free(&rows);
    }
    const char *params[] = {"SELECT q.ord, m.id"};
    int rc;
    PGresult *res = fq_store_query(store,
                                   "SELECT generic_plans, custom_plans FROM pg_prepared_statements"
                                   " WHERE starts_with(statement, $1)",
                                   1, params, PGRES_TUPLES_OK, "read prepared statements", &rc);
    assert_non_null(res);
    assert_int_equal(PQntuples(res), 2);
    for (int i = 0; i < 2; i++) {
        print_message("a page statement: %s generic plans, %s custom plans\n",
                      PQgetvalue(res, i, 0), PQgetvalue(res, i, 1));
        assert_int_equal(fq_store_int64(res, i, 0), pages);
        assert_int_equal(fq_store_int64(res, i, 1), 0);
    }
    PQclear(res);
    fq_store_destroy(&store);
}

//  A tuned page whose connection was cut fails as a lost connection (the
//  scheduler's store then reconnects), not as a refused statement, and
//  leaves nothing half done: after a reconnect the same page comes whole.
static void test_tuned_page_after_lost_connection(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    PGconn *conn = fq_test_connect(s_conninfo);
    int64_t request = s_request(store, 30, 0);
    assert_int_equal(fq_store_tune_paging(store), 0);
    int64_t page[S_PAGE];
    assert_int_equal(fq_store_next_ready(store, request, 0, S_PAGE, page), 30);
    fq_test_kill_store_backends(conn, S_GONE_MS);
    assert_int_equal(fq_store_next_ready(store, request, 0, S_PAGE, page), FQ_EDB);
    assert_false(fq_store_connected(store));
    assert_int_equal(fq_store_reconnect(store), 0);
    assert_int_equal(fq_store_next_ready(store, request, 0, S_PAGE, page), 30);
    PQfinish(conn);
    fq_store_destroy(&store);
}

static bool s_contains(const fq_due_message_t *due, int n, int64_t id)
{
    for (int i = 0; i < n; i++)
        if (due[i].id == id)
            return true;
    return false;
}

//  Only failed messages whose retry is due are claimed; a claim holds them
//  for the lease (claiming again finds none), and after the lease they
//  come back, as after a crash before their ack.
static void test_claim_due_retries_leases(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    PGconn *conn = fq_test_connect(s_conninfo);
    int64_t request = s_request(store, 20, 0);
    int count;
    int64_t *ids = s_pending_ids(conn, request, &count);
    assert_int_equal(count, 20);
    //  0-9 due at once, 10-14 in an hour, 15 dead, 16-19 pending, 19 sent
    fq_nack_t nacks[16];
    for (int i = 0; i < 16; i++)
        nacks[i] = (fq_nack_t){.id = ids[i], .permanent = i == 15, .error = "421 busy"};
    fq_retry_policy_t soon = {.base_ms = 1, .cap_ms = 1},
                      later = {.base_ms = 3600000, .cap_ms = 3600000};
    assert_int_equal(fq_store_nack_batch(store, nacks, 10, &soon), 10);
    assert_int_equal(fq_store_nack_batch(store, nacks + 10, 6, &later), 6);
    assert_int_equal(fq_store_ack_batch(store, &ids[19], 1), 1);
    fq_test_sleep_ms(50);

    fq_due_message_t due[64];
    //  The limit holds; the rest follow on the next claim
    int first = fq_store_claim_due_retries(store, 4, S_LEASE_S, due);
    assert_int_equal(first, 4);
    int rest = fq_store_claim_due_retries(store, 64, S_LEASE_S, due + first);
    assert_int_equal(rest, 6);
    for (int i = 0; i < 10; i++) {
        assert_true(s_contains(due, 10, ids[i]));
        assert_int_equal(due[i].request_id, request);
        assert_int_equal(due[i].tenant_id, s_tenant);
    }
    //  Leased: their retry moved a lease ahead, and nobody else gets them
    char id_text[32];
    assert_int_equal(fq_test_int(conn,
                                 "SELECT count(*) FROM fairq.messages WHERE request_id = $1"
                                 " AND status = 'failed' AND next_attempt_at"
                                 "   BETWEEN now() + interval '0.5 s' AND now() + interval '1 s'",
                                 1, fq_test_param(id_text, sizeof id_text, request)),
                     10);
    assert_int_equal(fq_store_claim_due_retries(store, 64, S_LEASE_S, due), 0);

    //  The lease passes without an ack: the same ten are due again
    fq_test_sleep_ms(S_LEASE_S * 1000 + S_LEASE_SLACK);
    int again = fq_store_claim_due_retries(store, 64, S_LEASE_S, due);
    assert_int_equal(again, 10);
    for (int i = 0; i < 10; i++)
        assert_true(s_contains(due, again, ids[i]));
    //  A paused request's retries stay where they are until it resumes
    fq_test_sleep_ms(S_LEASE_S * 1000 + S_LEASE_SLACK);
    fq_test_exec(conn, "UPDATE fairq.requests SET status = 'paused' WHERE id = $1", 1, id_text);
    assert_int_equal(fq_store_claim_due_retries(store, 64, S_LEASE_S, due), 0);
    fq_test_exec(conn, "UPDATE fairq.requests SET status = 'active' WHERE id = $1", 1, id_text);
    assert_int_equal(fq_store_claim_due_retries(store, 64, S_LEASE_S, due), 10);
    //  Acked retries are never claimed again
    assert_int_equal(fq_store_ack_batch(store, ids, 10), 10);
    fq_test_sleep_ms(S_LEASE_S * 1000 + S_LEASE_SLACK);
    assert_int_equal(fq_store_claim_due_retries(store, 64, S_LEASE_S, due), 0);
    free(ids);
    PQfinish(conn);
    fq_store_destroy(&store);
}

//  Due requests are the unfinished ones whose send time has come, oldest
//  first: not those scheduled later, paused, done, cancelled or rejected.
static void test_due_requests_excludes_the_rest(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    PGconn *conn = fq_test_connect(s_conninfo);
    char tenant[32];
    fq_test_param(tenant, sizeof tenant, s_tenant);
    PGresult *res = fq_test_query(
        conn,
        "INSERT INTO fairq.requests (tenant_id, from_addr, subject, body, status, send_at,"
        "  priority, scan_from)"
        " SELECT $1, 'news@acme.example', 's', 'b', s::fairq.request_status,"
        "   now() + h * interval '1 hour', p, f"
        " FROM (VALUES ('accepted', -3, 5, 0), ('splitting', -2, 0, 0),"
        "   ('active', -1, -7, 1234), ('accepted', 1, 0, 0), ('paused', -4, 0, 0),"
        "   ('done', -5, 0, 0), ('cancelled', -6, 0, 0), ('rejected', -7, 0, 0))"
        "   AS v(s, h, p, f)"
        " ORDER BY h DESC RETURNING id, status",
        1, tenant);
    int64_t accepted = 0, splitting = 0, active = 0;
    for (int i = 0; i < PQntuples(res); i++) {
        const char *status = PQgetvalue(res, i, 1);
        int64_t id = strtoll(PQgetvalue(res, i, 0), NULL, 10);
        if (strcmp(status, "splitting") == 0)
            splitting = id;
        else if (strcmp(status, "active") == 0)
            active = id;
        else if (strcmp(status, "accepted") == 0 && (accepted == 0 || id > accepted))
            accepted = id; //  The past one was inserted after the future one
    }
    PQclear(res);
    //  Through the API: one to send now, one in an hour
    int64_t now_request = s_request(store, 1, 0);
    s_request(store, 1, (int64_t)time(NULL) + 3600);

    fq_due_request_t due[16];
    int n = fq_store_due_requests(store, 16, due);
    assert_int_equal(n, 4);
    int64_t order[] = {accepted, splitting, active, now_request};
    for (int i = 0; i < 4; i++)
        assert_int_equal(due[i].id, order[i]);
    assert_int_equal(due[0].priority, 5);
    assert_int_equal(due[2].priority, -7);
    assert_int_equal(due[2].scan_from, 1234);
    //  With the tenant's name, for the scheduler's log
    for (int i = 0; i < 4; i++) {
        assert_int_equal(due[i].tenant_id, s_tenant);
        assert_string_equal(due[i].tenant, "acme");
    }
    //  Come due lately, of those scheduled for later than their submit:
    //  none of the above (each was due at its submit, and had its NOTIFY);
    //  one submitted an hour ago for 5 s ago is, within a minute's reach
    //  and not within 2 s
    assert_int_equal(fq_store_due_requests_since(store, 9000000, 16, due), 0);
    int64_t scheduled = fq_test_int(
        conn,
        "INSERT INTO fairq.requests (tenant_id, from_addr, subject, body, status, send_at,"
        "  created_at)"
        " VALUES ($1, 'news@acme.example', 's', 'b', 'accepted', now() - interval '5 s',"
        "  now() - interval '1 hour') RETURNING id",
        1, tenant);
    assert_int_equal(fq_store_due_requests_since(store, 60000, 16, due), 1);
    assert_int_equal(due[0].id, scheduled);
    assert_string_equal(due[0].tenant, "acme");
    assert_string_equal(due[0].channel, "email");
    assert_int_equal(fq_store_due_requests_since(store, 2000, 16, due), 0);
    char scheduled_id[32];
    fq_test_exec(conn, "DELETE FROM fairq.requests WHERE id = $1", 1,
                 fq_test_param(scheduled_id, sizeof scheduled_id, scheduled));
    //  The limit takes the oldest
    assert_int_equal(fq_store_due_requests(store, 2, due), 2);
    assert_int_equal(due[0].id, accepted);
    assert_int_equal(due[1].id, splitting);
    //  One by its id: the same rule, the same columns
    fq_due_request_t one;
    assert_int_equal(fq_store_due_request(store, active, 0, &one, NULL), 1);
    assert_int_equal(one.id, active);
    assert_int_equal(one.priority, -7);
    assert_int_equal(one.scan_from, 1234);
    assert_int_equal(one.tenant_id, s_tenant);
    assert_string_equal(one.tenant, "acme");
    assert_int_equal(fq_store_due_request(store, now_request, 0, &one, NULL), 1);
    assert_int_equal(one.id, now_request);
    //  Not due: paused, finished, later, unknown
    int64_t later = fq_test_int(conn,
                                "SELECT id FROM fairq.requests WHERE send_at > now() + interval "
                                "'30 minutes' AND status = 'accepted' ORDER BY id LIMIT 1",
                                0);
    const char *not_due[] = {"paused", "done", "cancelled", "rejected"};
    for (size_t i = 0; i < sizeof not_due / sizeof not_due[0]; i++) {
        int64_t id =
            fq_test_int(conn, "SELECT id FROM fairq.requests WHERE status = $1", 1, not_due[i]);
        assert_int_equal(fq_store_due_request(store, id, 0, &one, NULL), 0);
    }
    assert_int_equal(fq_store_due_request(store, later, 0, &one, NULL), 0);
    assert_int_equal(fq_store_due_request(store, 1000000000, 0, &one, NULL), 0);
    PQfinish(conn);
    fq_store_destroy(&store);
}

//  ---------------------------------------------------------------------
//  Plans

//  The statement the store's backend ran last, exactly as the store sent
//  it (pg_stat_activity keeps an idle backend's last query, up to
//  track_activity_query_size bytes: a longer one would be cut, so fails).
static char *s_last_store_query(PGconn *conn)
{
    char *query = fq_test_text(conn,
                               "SELECT query FROM pg_stat_activity"
                               " WHERE datname = current_database()"
                               "   AND application_name = 'fairq' AND state = 'idle'",
                               0);
    assert_non_null(query);
    int64_t room = fq_test_int(conn,
                               "SELECT setting::int FROM pg_settings"
                               " WHERE name = 'track_activity_query_size'",
                               0);
    assert_true((int64_t)strlen(query) < room - 1);
    return query;
}

//  The statement the store prepared that begins with start, read in the
//  store's own session (pg_prepared_statements), whole: for a statement
//  longer than pg_stat_activity keeps.
static char *s_prepared_store_query(fq_store_t *store, const char *start)
{
    const char *params[] = {start};
    int rc;
    PGresult *res = fq_store_query(store,
                                   "SELECT statement FROM pg_prepared_statements"
                                   " WHERE starts_with(statement, $1)",
                                   1, params, PGRES_TUPLES_OK, "read prepared statements", &rc);
    assert_non_null(res);
    assert_int_equal(PQntuples(res), 1);
    char *query = strdup(PQgetvalue(res, 0, 0));
    PQclear(res);
    return query;
}

typedef struct {
    int index_scans; //  Index or index-only scans of fairq.messages
    int other_scans; //  Any other scan of it (seq, bitmap, tid)
    int seq_scans;   //  Of those, sequential scans
    double examined; //  Rows its scans returned or filtered out
    int64_t buffers; //  Shared buffers the whole plan touched
} s_plan_stats_t;

//  Walks a plan node and its children, adding up what touches relation.
static void s_walk_plan(json_t *node, const char *relation, s_plan_stats_t *stats)
{
    const char *type = json_string_value(json_object_get(node, "Node Type"));
    const char *name = json_string_value(json_object_get(node, "Relation Name"));
    if (type && name && strcmp(name, relation) == 0 && strcmp(type, "ModifyTable") != 0) {
        if (strcmp(type, "Index Scan") == 0 || strcmp(type, "Index Only Scan") == 0)
            stats->index_scans++;
        else
            stats->other_scans++;
        if (strcmp(type, "Seq Scan") == 0)
            stats->seq_scans++;
        double loops = json_number_value(json_object_get(node, "Actual Loops"));
        loops = loops > 0 ? loops : 1;
        stats->examined +=
            loops * (json_number_value(json_object_get(node, "Actual Rows")) +
                     json_number_value(json_object_get(node, "Rows Removed by Filter")) +
                     json_number_value(json_object_get(node, "Rows Removed by Index Recheck")));
    }
    size_t i;
    json_t *child;
    json_array_foreach(json_object_get(node, "Plans"), i, child)
    {
        s_walk_plan(child, relation, stats);
    }
}

//  EXPLAINs query with params (ANALYZE runs it, in a transaction rolled
//  back after), prints the plan as text, and returns its figures on
//  relation.
static s_plan_stats_t s_explain(PGconn *conn, const char *title, const char *query,
                                const char *relation, int nparams, const char *const *params)
{
    size_t size = strlen(query) + 64;
    char *sql = malloc(size);
    assert_non_null(sql);
    fq_test_exec(conn, "BEGIN", 0);
    snprintf(sql, size, "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) %s", query);
    PGresult *res = PQexecParams(conn, sql, nparams, NULL, params, NULL, NULL, 0);
    if (PQresultStatus(res) != PGRES_TUPLES_OK)
        fail_msg("%s: %s", sql, PQresultErrorMessage(res));
    print_message("---- %s\n%s\n", title, query);
    for (int i = 0; i < PQntuples(res); i++)
        print_message("  %s\n", PQgetvalue(res, i, 0));
    PQclear(res);
    fq_test_exec(conn, "ROLLBACK", 0);

    fq_test_exec(conn, "BEGIN", 0);
    snprintf(sql, size, "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) %s", query);
    res = PQexecParams(conn, sql, nparams, NULL, params, NULL, NULL, 0);
    if (PQresultStatus(res) != PGRES_TUPLES_OK)
        fail_msg("%s: %s", sql, PQresultErrorMessage(res));
    json_error_t error;
    json_t *plan = json_loads(PQgetvalue(res, 0, 0), 0, &error);
    PQclear(res);
    fq_test_exec(conn, "ROLLBACK", 0);
    if (!plan)
        fail_msg("plan JSON: %s", error.text);
    json_t *top = json_object_get(json_array_get(plan, 0), "Plan");
    s_plan_stats_t stats = {0};
    s_walk_plan(top, relation, &stats);
    stats.buffers = (int64_t)(json_number_value(json_object_get(top, "Shared Hit Blocks")) +
                              json_number_value(json_object_get(top, "Shared Read Blocks")));
    print_message("  => %d index scan(s), %d other scan(s) of %s, %.0f rows examined,"
                  " %lld buffers\n",
                  stats.index_scans, stats.other_scans, relation, stats.examined,
                  (long long)stats.buffers);
    json_decref(plan);
    free(sql);
    return stats;
}

//  s_explain of query as the scheduler's tuned store runs it: prepared, in
//  a transaction with bitmap scans off, by its generic plan (planned once,
//  blind to the values of params, which go in as literals).
static s_plan_stats_t s_explain_generic(PGconn *conn, const char *title, const char *query,
                                        const char *relation, int nparams,
                                        const char *const *params)
{
    fq_buf_t execute = {0};
    assert_int_equal(fq_buf_add_str(&execute, "EXECUTE fq_generic_page("), 0);
    for (int i = 0; i < nparams; i++) {
        if (!params[i]) {
            assert_int_equal(fq_buf_printf(&execute, "%sNULL", i ? ", " : ""), 0);
            continue;
        }
        char *literal = PQescapeLiteral(conn, params[i], strlen(params[i]));
        assert_non_null(literal);
        assert_int_equal(fq_buf_printf(&execute, "%s%s", i ? ", " : "", literal), 0);
        PQfreemem(literal);
    }
    assert_int_equal(fq_buf_add_str(&execute, ")"), 0);
    size_t size = strlen(query) + 64;
    char *prepare = malloc(size);
    assert_non_null(prepare);
    snprintf(prepare, size, "PREPARE fq_generic_page AS %s", query);
    fq_test_exec(conn, prepare, 0);
    free(prepare);
    //  For the session: s_explain's transactions are its own
    fq_test_exec(conn, "SET enable_bitmapscan = off", 0);
    fq_test_exec(conn, "SET plan_cache_mode = force_generic_plan", 0);
    s_plan_stats_t stats = s_explain(conn, title, execute.data, relation, 0, NULL);
    fq_test_exec(conn, "RESET plan_cache_mode", 0);
    fq_test_exec(conn, "RESET enable_bitmapscan", 0);
    fq_test_exec(conn, "DEALLOCATE fq_generic_page", 0);
    fq_buf_free(&execute);
    return stats;
}

//  The scheduler's queries stay index scans bounded by their page size
//  with 200,000 messages in the table: a growing backlog does not slow
//  down dispatch.
static void test_paging_plans_are_bounded(void **unused)
{
    (void)unused;
    PGconn *conn = fq_test_connect(s_conninfo);
    char tenant[32], small[16], big[16];
    fq_test_param(tenant, sizeof tenant, s_tenant);
    fq_test_param(small, sizeof small, S_SMALL_REQUESTS);
    fq_test_param(big, sizeof big, S_BIG_SIZE);
    //  History and backlog: small requests, nine in ten done (sent), the
    //  others active, a few of their messages failed (half due); and one
    //  big active request whose first half is already sent
    fq_test_exec(conn,
                 "INSERT INTO fairq.requests (tenant_id, from_addr, subject, body, status,"
                 "  total, send_at)"
                 " SELECT $1, 'news@acme.example', 's', 'b',"
                 "   (CASE WHEN g % 10 = 0 THEN 'active' ELSE 'done' END)::fairq.request_status,"
                 "   100, now() - g * interval '1 minute'"
                 " FROM generate_series(1, $2::int) g",
                 2, tenant, small);
    //  A backlog of requests too: submitted, not split yet, all due
    fq_test_exec(conn,
                 "INSERT INTO fairq.requests (tenant_id, from_addr, subject, body, status,"
                 "  total, send_at)"
                 " SELECT $1, 'news@acme.example', 's', 'b', 'accepted', 0,"
                 "   now() - g * interval '1 second'"
                 " FROM generate_series(1, $2::int) g",
                 2, tenant, "5000");
    int64_t big_request = fq_test_int(conn,
                                      "INSERT INTO fairq.requests (tenant_id, from_addr, subject,"
                                      "  body, status, total)"
                                      " VALUES ($1, 'news@acme.example', 's', 'b', 'active', $2)"
                                      " RETURNING id",
                                      2, tenant, big);
    fq_test_exec(conn,
                 "INSERT INTO fairq.messages (request_id, tenant_id, recipient, fields, status,"
                 "  try_count, next_attempt_at)"
                 " SELECT r.id, r.tenant_id, 'u' || r.id || '.' || g || '@example.com',"
                 "   jsonb_build_object('name', 'N' || g),"
                 "   (CASE WHEN r.status = 'done' THEN 'sent' WHEN g % 20 = 0 THEN 'failed'"
                 "         ELSE 'pending' END)::fairq.message_status,"
                 "   (r.status = 'done' OR g % 20 = 0)::int,"
                 "   CASE WHEN r.status = 'done' OR g % 20 <> 0 THEN NULL"
                 "        WHEN g % 40 = 0 THEN now() - interval '10 minutes'"
                 "        ELSE now() + interval '10 minutes' END"
                 " FROM fairq.requests r, generate_series(1, $1::int) g"
                 " WHERE r.total = $1::int ORDER BY r.id, g",
                 1, "100");
    char big_text[32];
    fq_test_param(big_text, sizeof big_text, big_request);
    fq_test_exec(
        conn,
        "INSERT INTO fairq.messages (request_id, tenant_id, recipient, fields, status,"
        "  try_count)"
        " SELECT $1, $2, 'big' || g || '@example.com', jsonb_build_object('name', 'N' || g),"
        "   (CASE WHEN g <= $3::int / 2 THEN 'sent' ELSE 'pending' END)"
        "     ::fairq.message_status, (g <= $3::int / 2)::int"
        " FROM generate_series(1, $3::int) g",
        3, big_text, tenant, big);
    fq_test_exec(conn, "ANALYZE fairq.messages", 0);
    fq_test_exec(conn, "ANALYZE fairq.requests", 0);
    int64_t total = fq_test_int(conn, "SELECT count(*) FROM fairq.messages", 0);
    print_message("%lld messages in %lld requests\n", (long long)total,
                  (long long)fq_test_int(conn, "SELECT count(*) FROM fairq.requests", 0));
    assert_true(total >= 200000);

    fq_store_t *store = fq_test_store(s_conninfo);
    int64_t page[S_PAGE];

    //  next_ready on the big request, from where the scheduler got to (the
    //  first pending message), and on a small active request from 0
    char cursor[32], limit[16], small_request[32];
    fq_test_param(limit, sizeof limit, S_PAGE);
    int64_t first_pending = fq_test_int(conn,
                                        "SELECT min(id) FROM fairq.messages WHERE request_id = $1"
                                        " AND status = 'pending'",
                                        1, big_text);
    fq_test_param(cursor, sizeof cursor, first_pending - 1);
    assert_int_equal(fq_store_next_ready(store, big_request, first_pending - 1, S_PAGE, page),
                     S_PAGE);
    char *next_ready = s_last_store_query(conn);
    const char *params_big[] = {big_text, cursor, limit};
    s_plan_stats_t stats =
        s_explain(conn, "next_ready, big request, 50,000 pending after the cursor", next_ready,
                  "messages", 3, params_big);
    assert_true(stats.index_scans >= 1);
    assert_int_equal(stats.seq_scans, 0);
    assert_true(stats.examined < S_ROWS_EXAMINED_MAX);
    assert_true(stats.buffers < S_BUFFERS_MAX);

    fq_test_param(small_request, sizeof small_request,
                  fq_test_int(conn,
                              "SELECT min(id) FROM fairq.requests WHERE status = 'active'"
                              " AND total = 100",
                              0));
    const char *params_small[] = {small_request, "0", limit};
    stats = s_explain(conn, "next_ready, small request, from the start", next_ready, "messages", 3,
                      params_small);
    assert_true(stats.index_scans >= 1);
    assert_int_equal(stats.seq_scans, 0);
    assert_true(stats.examined < S_ROWS_EXAMINED_MAX);
    assert_true(stats.buffers < S_BUFFERS_MAX);

    //  Many pages in one statement: the big request's and ten small ones',
    //  each an index scan from its cursor, bounded by its own limit
    fq_page_ask_t asks[11] = {{big_request, first_pending - 1, S_PAGE, NULL}};
    PGresult *smalls = fq_test_query(conn,
                                     "SELECT id FROM fairq.requests WHERE status = 'active'"
                                     " AND total = 100 ORDER BY id LIMIT 10",
                                     0);
    assert_int_equal(PQntuples(smalls), 10);
    for (int i = 0; i < 10; i++)
        asks[i + 1] = (fq_page_ask_t){strtoll(PQgetvalue(smalls, i, 0), NULL, 10), 0, S_PAGE, NULL};
    PQclear(smalls);
    int64_t many_ids[11 * S_PAGE];
    int many_counts[11];
    assert_true(fq_store_next_ready_many(store, asks, 11, many_ids, many_counts) > S_PAGE);
    assert_int_equal(many_counts[0], S_PAGE);
    char *many = s_last_store_query(conn);
    char many_requests[512], many_afters[512], many_limits[128];
    size_t lr = 0, la = 0, ll = 0;
    for (int i = 0; i < 11; i++) {
        const char *sep = i ? "," : "{";
        lr += (size_t)snprintf(many_requests + lr, sizeof many_requests - lr, "%s%lld", sep,
                               (long long)asks[i].request_id);
        la += (size_t)snprintf(many_afters + la, sizeof many_afters - la, "%s%lld", sep,
                               (long long)asks[i].after_id);
        ll +=
            (size_t)snprintf(many_limits + ll, sizeof many_limits - ll, "%s%d", sep, asks[i].limit);
    }
    snprintf(many_requests + lr, sizeof many_requests - lr, "}");
    snprintf(many_afters + la, sizeof many_afters - la, "}");
    snprintf(many_limits + ll, sizeof many_limits - ll, "}");
    const char *params_many[] = {many_requests, many_afters, many_limits};
    stats = s_explain(conn, "next_ready_many, the big request and ten small ones", many, "messages",
                      3, params_many);
    assert_true(stats.index_scans >= 1);
    assert_int_equal(stats.seq_scans, 0);
    assert_true(stats.examined < 11 * S_ROWS_EXAMINED_MAX);

    //  By destination (0016): the first 25,000 pending messages of the big
    //  request go to "google", the rest to "default". A page of "default"
    //  from the cursor walks messages_request_destination_idx straight to
    //  its own, never reading google's backlog, and google's likewise
    char last_google[32];
    fq_test_param(last_google, sizeof last_google, first_pending + 24999);
    fq_test_exec(conn,
                 "UPDATE fairq.messages SET destination = 'google'"
                 " WHERE request_id = $1 AND id BETWEEN $2::bigint AND $3::bigint",
                 3, big_text, cursor, last_google);
    fq_test_exec(conn, "ANALYZE fairq.messages", 0);
    fq_page_ask_t by_destination[] = {{big_request, first_pending - 1, S_PAGE, "default"},
                                      {big_request, first_pending - 1, S_PAGE, "google"}};
    int64_t destination_ids[2 * S_PAGE];
    int destination_counts[2];
    assert_int_equal(
        fq_store_next_ready_many(store, by_destination, 2, destination_ids, destination_counts),
        2 * S_PAGE);
    assert_int_equal(destination_counts[0], S_PAGE);
    assert_int_equal(destination_ids[0], first_pending + 25000);
    assert_int_equal(destination_ids[S_PAGE], first_pending);
    char *paged_by_destination = s_last_store_query(conn);
    char two_requests[80], two_afters[80], two_limits[48];
    snprintf(two_requests, sizeof two_requests, "{%s,%s}", big_text, big_text);
    snprintf(two_afters, sizeof two_afters, "{%s,%s}", cursor, cursor);
    snprintf(two_limits, sizeof two_limits, "{%s,%s}", limit, limit);
    const char *params_destination[] = {two_requests, two_afters, two_limits, "{default,google}"};
    stats = s_explain(conn, "next_ready_many by destination, past 25,000 of another's",
                      paged_by_destination, "messages", 4, params_destination);
    assert_true(stats.index_scans >= 1);
    assert_int_equal(stats.seq_scans, 0);
    assert_true(stats.examined < 2 * S_ROWS_EXAMINED_MAX);
    //  The plan the scheduler runs: its page statement's generic plan,
    //  planned once for any values (fq_store_messages.c), bounded as well
    stats = s_explain_generic(conn, "next_ready_many by destination, its generic plan",
                              paged_by_destination, "messages", 4, params_destination);
    assert_true(stats.index_scans >= 1);
    assert_int_equal(stats.other_scans, 0);
    assert_true(stats.examined < 2 * S_ROWS_EXAMINED_MAX);
    stats = s_explain_generic(conn, "next_ready_many, the big request and ten small ones, generic",
                              many, "messages", 3, params_many);
    assert_true(stats.index_scans >= 1);
    assert_int_equal(stats.other_scans, 0);
    assert_true(stats.examined < 11 * S_ROWS_EXAMINED_MAX);
    //  The pages with their rows, the scheduler's: the same walk
    fq_message_rows_t rows;
    assert_int_equal(fq_store_next_ready_rows(store, by_destination, 2, &rows, destination_counts),
                     2 * S_PAGE);
    assert_int_equal(rows.rows[0].id, first_pending + 25000);
    assert_string_equal(rows.rows[S_PAGE].destination, "google");
    fq_message_rows_free(&rows);
    char *rows_by_destination = s_last_store_query(conn);
    //  (no leadership here: no epoch to check)
    const char *params_rows[] = {two_requests, two_afters, two_limits, "{default,google}", NULL};
    stats = s_explain_generic(conn, "next_ready_rows by destination, its generic plan",
                              rows_by_destination, "messages", 5, params_rows);
    assert_true(stats.index_scans >= 1);
    assert_int_equal(stats.other_scans, 0);
    assert_true(stats.examined < 2 * S_ROWS_EXAMINED_MAX);
    free(rows_by_destination);
    free(many);
    free(paged_by_destination);

    //  Evidence, not asserted: from cursor 0 the page first walks past the
    //  50,000 messages already sent (requests.scan_from would skip them,
    //  but nothing advances it yet)
    const char *params_zero[] = {big_text, "0", limit};
    s_explain(conn, "next_ready, big request, from 0 (for comparison)", next_ready, "messages", 3,
              params_zero);
    free(next_ready);

    //  claim_due_retries
    fq_due_message_t due[S_PAGE];
    int claimed = fq_store_claim_due_retries(store, S_PAGE, 60, due);
    assert_true(claimed > 0);
    char *claim = s_last_store_query(conn);
    const char *params_claim[] = {limit, "60", NULL}; //  No epoch: not fenced
    stats = s_explain(conn, "claim_due_retries", claim, "messages", 3, params_claim);
    //  As everywhere here: an index may be read by a plain or a bitmap scan
    //  (with the small statistics target of 0004 the planner picks either);
    //  what is asserted is that no scan walks the table and that few rows
    //  are examined
    assert_true(stats.index_scans >= 1);
    assert_int_equal(stats.seq_scans, 0);
    assert_true(stats.examined < S_ROWS_EXAMINED_MAX);
    free(claim);

    //  due_requests
    fq_due_request_t due_requests[S_PAGE];
    assert_true(fq_store_due_requests(store, S_PAGE, due_requests) > 0);
    char *due_query = s_last_store_query(conn);
    const char *params_due[] = {limit};
    stats = s_explain(conn, "due_requests", due_query, "requests", 1, params_due);
    assert_true(stats.index_scans >= 1);
    assert_int_equal(stats.seq_scans, 0);
    assert_true(stats.examined < S_ROWS_EXAMINED_MAX);
    free(due_query);

    //  And the ack, for completeness: one index probe per id
    assert_int_equal(fq_store_ack_batch(store, page, S_PAGE), S_PAGE);
    char *ack = s_prepared_store_query(store, "WITH acked AS (");
    char ids[S_PAGE * 24];
    size_t len = 0;
    for (int i = 0; i < S_PAGE; i++)
        len += (size_t)snprintf(ids + len, sizeof ids - len, "%s%lld", i ? "," : "{",
                                (long long)(page[i] + S_PAGE));
    snprintf(ids + len, sizeof ids - len, "}");
    //  No epoch: not fenced; with its message.sent events
    const char *params_ack[] = {ids, NULL, "true"};
    stats = s_explain(conn, "ack_batch of 100", ack, "messages", 3, params_ack);
    assert_true(stats.index_scans >= 1);
    assert_int_equal(stats.seq_scans, 0);
    assert_true(stats.examined < S_ROWS_EXAMINED_MAX);
    free(ack);

    fq_store_destroy(&store);
    PQfinish(conn);
}

//  The advance goes through the open requests a few at a time, in id
//  order, each call after the last request the one before looked at, and
//  says when it has seen the last of them; requests already finished are
//  not looked at.
static void test_advance_steps_through_the_requests(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    PGconn *conn = fq_test_connect(s_conninfo);
    int64_t requests[5];
    for (int i = 0; i < 5; i++) {
        requests[i] = s_request(store, 10, 0);
        int count;
        int64_t *ids = s_pending_ids(conn, requests[i], &count);
        assert_int_equal(fq_store_ack_batch(store, ids, (size_t)count), 10);
        free(ids);
    }
    //  The third is done: no cursor of it matters any more
    char third[32];
    fq_test_param(third, sizeof third, requests[2]);
    fq_test_exec(conn, "UPDATE fairq.requests SET status = 'done' WHERE id = $1", 1, third);

    fq_advance_t step;
    assert_int_equal(fq_store_advance_scan(store, 0, 2, 100, &step), 2);
    assert_int_equal(step.looked, 2);
    assert_int_equal(step.last_id, requests[1]);
    assert_int_equal(fq_store_advance_scan(store, step.last_id, 2, 100, &step), 2);
    assert_int_equal(step.looked, 2);
    assert_int_equal(step.last_id, requests[4]);
    //  None after the last: the pass is over
    assert_int_equal(fq_store_advance_scan(store, step.last_id, 2, 100, &step), 0);
    assert_int_equal(step.looked, 0);
    assert_int_equal(step.last_id, 0);
    //  Every open request's cursor is past its messages, the done one's is not
    assert_int_equal(fq_test_int(conn,
                                 "SELECT count(*) FROM fairq.requests r WHERE r.scan_from ="
                                 " (SELECT max(id) FROM fairq.messages WHERE request_id = r.id)",
                                 0),
                     4);
    assert_int_equal(
        fq_test_int(conn, "SELECT scan_from FROM fairq.requests WHERE id = $1", 1, third), 0);
    //  A second pass finds nothing more to move
    assert_int_equal(fq_store_advance_scan(store, 0, 10, 100, &step), 0);
    assert_int_equal(step.looked, 4);
    PQfinish(conn);
    fq_store_destroy(&store);
}

//  The advance of the reaper, run in a thread of its own.
typedef struct {
    fq_store_t *store;
    int window;
    int rc;
    atomic_bool done;
} s_advance_t;

static void *s_advance_run(void *arg)
{
    s_advance_t *advance = arg;
    fq_advance_t advanced;
    advance->rc = fq_store_advance_scan(advance->store, 0, 1000, advance->window, &advanced);
    atomic_store(&advance->done, true);
    return NULL;
}

//  The advance reads every request's finished messages before it locks
//  any request: an ack batch, which updates the counters of a hundred of
//  them, must not wait for the whole statement's reading. While it reads
//  (S_ADVANCE_REQUESTS requests of S_ADVANCE_SENT sent messages each), the
//  first of them is free for another transaction nearly all the time; it
//  is locked only in the statement's last moments, when it writes.
#define S_ADVANCE_REQUESTS 40
#define S_ADVANCE_SENT     10000
static void test_advance_locks_no_request_while_reading(void **unused)
{
    (void)unused;
    PGconn *conn = fq_test_connect(s_conninfo);
    char tenant[32], requests[16], sent[16];
    fq_test_param(tenant, sizeof tenant, s_tenant);
    fq_test_param(requests, sizeof requests, S_ADVANCE_REQUESTS);
    fq_test_param(sent, sizeof sent, S_ADVANCE_SENT);
    fq_test_exec(conn,
                 "INSERT INTO fairq.requests (tenant_id, from_addr, subject, body, status, total)"
                 " SELECT $1, 'news@acme.example', 's', 'b', 'active', $3::int"
                 " FROM generate_series(1, $2::int)",
                 3, tenant, requests, sent);
    fq_test_exec(conn,
                 "INSERT INTO fairq.messages (request_id, tenant_id, recipient, status, try_count)"
                 " SELECT r.id, r.tenant_id, 'u' || g || '@example.com', 'sent', 1"
                 " FROM fairq.requests r, generate_series(1, $1::int) g ORDER BY r.id, g",
                 1, sent);
    fq_test_exec(conn, "ANALYZE fairq.messages", 0);
    fq_test_exec(conn, "ANALYZE fairq.requests", 0);
    char first[32];
    fq_test_param(first, sizeof first, fq_test_int(conn, "SELECT min(id) FROM fairq.requests", 0));

    s_advance_t advance = {.store = fq_test_store(s_conninfo), .window = S_ADVANCE_SENT};
    atomic_init(&advance.done, false);
    pthread_t thread;
    assert_int_equal(pthread_create(&thread, NULL, s_advance_run, &advance), 0);
    int tries = 0, locked = 0;
    const char *params[] = {first};
    while (!atomic_load(&advance.done)) {
        fq_test_exec(conn, "BEGIN", 0);
        PGresult *res = PQexecParams(conn,
                                     "SELECT 1 FROM fairq.requests WHERE id = $1"
                                     " FOR UPDATE NOWAIT",
                                     1, NULL, params, NULL, NULL, 0);
        const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
        if (PQresultStatus(res) != PGRES_TUPLES_OK) {
            if (!state || strcmp(state, "55P03") != 0)
                fail_msg("lock the first request: %s", PQresultErrorMessage(res));
            locked++;
        }
        tries++;
        PQclear(res);
        fq_test_exec(conn, "ROLLBACK", 0);
        fq_test_sleep_ms(5);
    }
    assert_int_equal(pthread_join(thread, NULL), 0);
    print_message("the first request was locked at %d of %d tries during the advance\n", locked,
                  tries);
    assert_int_equal(advance.rc, S_ADVANCE_REQUESTS);
    //  The advance lasted long enough for the tries to tell
    assert_true(tries >= 10);
    assert_true(locked <= 2);
    //  And it did its work: every request past its sent history
    assert_int_equal(fq_test_int(conn,
                                 "SELECT count(*) FROM fairq.requests r WHERE r.scan_from ="
                                 " (SELECT max(id) FROM fairq.messages WHERE request_id = r.id)",
                                 0),
                     S_ADVANCE_REQUESTS);
    fq_store_destroy(&advance.store);
    PQfinish(conn);
}

//  After a restart paging resumes at scan_from: it moves past the final
//  messages at the start of a request, stops before the first one still to
//  send, and reads no more than its window per call.
static void test_scan_from_skips_sent_history(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    PGconn *conn = fq_test_connect(s_conninfo);
    int64_t request = s_request(store, 50, 0);
    int count;
    int64_t *ids = s_pending_ids(conn, request, &count);
    assert_int_equal(count, 50);
    char id_text[32];
    fq_test_param(id_text, sizeof id_text, request);
    const char *scan_sql = "SELECT scan_from FROM fairq.requests WHERE id = $1";
    fq_advance_t advanced;

    //  The first 30 sent, except the 21st, which failed and waits for a retry
    assert_int_equal(fq_store_ack_batch(store, ids, 20), 20);
    assert_int_equal(fq_store_ack_batch(store, ids + 21, 9), 9);
    fq_nack_t nack = {.id = ids[20], .error = "451 later"};
    assert_int_equal(fq_store_nack_batch(store, &nack, 1,
                                         &(fq_retry_policy_t){.base_ms = 60000, .cap_ms = 60000}),
                     1);

    //  A window of 8 moves 8 messages per call
    assert_int_equal(fq_store_advance_scan(store, 0, 100, 8, &advanced), 1);
    assert_int_equal(fq_test_int(conn, scan_sql, 1, id_text), ids[7]);
    //  A large window stops just before the failed message
    assert_int_equal(fq_store_advance_scan(store, 0, 100, 1000, &advanced), 1);
    assert_int_equal(fq_test_int(conn, scan_sql, 1, id_text), ids[20] - 1);
    assert_int_equal(fq_store_advance_scan(store, 0, 100, 1000, &advanced), 0);
    //  Paging from there finds the failed one's successors that are pending
    int64_t page[64];
    assert_int_equal(fq_store_next_ready(store, request, ids[20] - 1, 64, page), 20);
    assert_int_equal(page[0], ids[30]);

    //  Everything final: past the last message
    assert_int_equal(fq_store_ack_batch(store, ids + 20, 30), 21); // 9 were sent already
    assert_int_equal(fq_store_advance_scan(store, 0, 100, 1000, &advanced), 1);
    assert_int_equal(fq_test_int(conn, scan_sql, 1, id_text), ids[49]);
    assert_int_equal(fq_store_advance_scan(store, 0, 0, 10, &advanced), FQ_EINVAL);
    free(ids);
    PQfinish(conn);
    fq_store_destroy(&store);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_next_ready_pages_pending_messages, s_reset),
        cmocka_unit_test_setup(test_next_ready_many_pages_each_request, s_reset),
        cmocka_unit_test_setup(test_tuned_pages_are_planned_once, s_reset),
        cmocka_unit_test_setup(test_tuned_page_after_lost_connection, s_reset),
        cmocka_unit_test_setup(test_claim_due_retries_leases, s_reset),
        cmocka_unit_test_setup(test_due_requests_excludes_the_rest, s_reset),
        cmocka_unit_test_setup(test_paging_plans_are_bounded, s_reset),
        cmocka_unit_test_setup(test_scan_from_skips_sent_history, s_reset),
        cmocka_unit_test_setup(test_advance_locks_no_request_while_reading, s_reset),
        cmocka_unit_test_setup(test_advance_steps_through_the_requests, s_reset),
    };
    return cmocka_run_group_tests(tests, s_group_setup, s_group_teardown);
}
