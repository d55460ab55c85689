/*  store_rates_test.c — each tenant's figures of the last day
    (fq_store_rates.h, migration 0023): mail delivered from the requests'
    counters, spread over their span at the window's edge; hard bounces,
    complaints and unsubscribes from their events, the window's edge
    included; the suppression list's entries; a tenant with no delivery.
    Rows are written straight into the tables, with their times, as the
    store would have written them over two days. Against a real
    PostgreSQL. */
#include "fq_error.h"
#include "fq_store.h"
#include "fq_store_rates.h"
#include "fq_test_db.h"
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>
#include "fq_test_sql.h"

static char s_conninfo[128];

//  A day, as the figures of GET /metrics take it
#define S_DAY FQ_STORE_RATES_WINDOW_S

static int s_group_setup(void **state)
{
    (void)state;
    const char *tenants[] = {"acme", "beta", "idle", NULL};
    return fq_test_db_prepare(s_conninfo, sizeof s_conninfo, tenants, NULL);
}

static int s_group_teardown(void **state)
{
    (void)state;
    fq_test_db_drop();
    return 0;
}

//  A request of tenant that delivered sent messages, first possible
//  delivery began ago, last change ended ago (both SQL intervals), with
//  status, on channel (email, or http with what an http request needs).
static void s_request(PGconn *conn, const char *tenant, const char *status, const char *channel,
                      int sent, const char *began, const char *ended)
{
    char count[24];
    fq_test_param(count, sizeof count, sent);
    fq_test_exec(conn,
                 "INSERT INTO fairq.requests (tenant_id, from_addr, subject, body, status, total,"
                 "  split, sent, created_at, send_at, updated_at, finished_at, channel,"
                 "  http_method, http_url, http_body_format)"
                 " SELECT t.id, CASE WHEN $3 = 'email' THEN 'news@example.com' END, 'Hi', 'Hello',"
                 "  $2::fairq.request_status, $4::int, $4::int, $4::int,"
                 "  now() - $5::interval, now() - $5::interval, now() - $6::interval,"
                 "  CASE WHEN $2 IN ('done', 'cancelled') THEN now() - $6::interval END, $3,"
                 "  CASE WHEN $3 = 'http' THEN 'POST' END,"
                 "  CASE WHEN $3 = 'http' THEN 'https://hooks.example.com/' END,"
                 "  CASE WHEN $3 = 'http' THEN 'json' END"
                 " FROM fairq.tenants t WHERE t.name = $1",
                 6, tenant, status, channel, count, began, ended);
}

//  count events of tenant, of type, with detail (NULL: none), ago (an SQL
//  interval), for messages first_id, first_id + 1, ...
static void s_events(PGconn *conn, const char *tenant, const char *type, const char *detail,
                     int count, int first_id, const char *ago)
{
    char n[24], first[24];
    fq_test_param(n, sizeof n, count);
    fq_test_param(first, sizeof first, first_id);
    fq_test_exec(conn,
                 "INSERT INTO fairq.events (tenant_id, message_id, type, recipient, detail, at)"
                 " SELECT t.id, $5::bigint + i, $2::fairq.event_type, 'r' || i || '@example.com',"
                 "  $3, now() - $6::interval"
                 " FROM fairq.tenants t, generate_series(0, $4::int - 1) AS i WHERE t.name = $1",
                 6, tenant, type, detail, n, first, ago);
}

//  count entries of tenant's list (NULL: the global list), named prefix.
static void s_suppress(PGconn *conn, const char *tenant, const char *prefix, int count)
{
    char n[24];
    fq_test_param(n, sizeof n, count);
    fq_test_exec(conn,
                 "INSERT INTO fairq.suppressions (tenant_id, address, reason)"
                 " SELECT (SELECT id FROM fairq.tenants WHERE name = $1),"
                 "  $2 || i || '@example.com', 'manual' FROM generate_series(1, $3::int) AS i",
                 3, tenant, prefix, n);
}

static const fq_tenant_rates_t *s_find(const fq_tenant_rates_list_t *list, const char *name)
{
    for (size_t i = 0; i < list->count; i++)
        if (strcmp(list->rows[i].name, name) == 0)
            return &list->rows[i];
    fail_msg("no figures for tenant %s", name);
    return NULL;
}

//  Two days of history, read as a day's figures.
static void test_figures_of_the_day(void **state)
{
    (void)state;
    PGconn *conn = fq_test_connect(s_conninfo);
    //  acme's deliveries: a request wholly in the day counts whole; one
    //  that began 36 h ago and last changed 12 h ago half (half its span
    //  is in the day); one still active, whole; one finished 25 h ago and
    //  an http request, nothing
    s_request(conn, "acme", "done", "email", 1000, "2 hours", "1 hour");
    s_request(conn, "acme", "done", "email", 1200, "36 hours", "12 hours");
    s_request(conn, "acme", "active", "email", 400, "3 hours", "10 minutes");
    s_request(conn, "acme", "done", "email", 500, "30 hours", "25 hours");
    s_request(conn, "acme", "active", "http", 100, "1 hour", "1 minute");
    //  acme's outcomes: hard bounces at SMTP time (a minute inside the
    //  window's edge counts, a minute outside does not), policy refusals
    //  that are no bounce, bounce reports, one of them for a message that
    //  bounced at SMTP time too (one bounce), complaints, unsubscribes,
    //  and message.sent events, which count for nothing here
    s_events(conn, "acme", "message.dead", "550 5.1.1 <x@example.com>: no such user", 30, 1000,
             "1 hour");
    s_events(conn, "acme", "message.dead", "550 5.1.1 gone", 1, 2000, "23 hours 59 minutes");
    s_events(conn, "acme", "message.dead", "550 5.1.1 gone", 1, 2001, "24 hours 1 minute");
    s_events(conn, "acme", "message.dead", "550 5.7.1 refused by policy", 10, 3000, "1 hour");
    s_events(conn, "acme", "message.bounced", "5.1.1 smtp; 550 5.1.1 no such user", 9, 4000,
             "2 hours");
    s_events(conn, "acme", "message.bounced", "5.1.1 smtp; 550 5.1.1 no such user", 1, 1000,
             "30 minutes");
    s_events(conn, "acme", "message.complained", "abuse", 6, 5000, "5 hours");
    s_events(conn, "acme", "message.complained", "abuse", 1, 6000, "24 hours 1 minute");
    s_events(conn, "acme", "message.unsubscribed", NULL, 4, 7000, "20 hours");
    s_events(conn, "acme", "message.sent", NULL, 50, 8000, "1 hour");
    s_suppress(conn, "acme", "acme", 3);
    s_suppress(conn, "beta", "beta", 1);
    s_suppress(conn, NULL, "global", 2);
    //  beta delivered nothing in the day: two addresses that do not exist,
    //  and a complaint about mail of the day before
    s_events(conn, "beta", "message.dead", "550 5.1.1 no such user", 2, 10000, "3 hours");
    s_events(conn, "beta", "message.complained", "abuse", 1, 11000, "1 hour");
    PQfinish(conn);

    fq_store_t *store = fq_test_store(s_conninfo);
    char pattern[FQ_STORE_BOUNCE_PATTERN_SIZE];
    assert_int_equal(fq_store_bounce_pattern("5.1.1,5.1.2", pattern, NULL, 0), 0);
    fq_tenant_rates_list_t list;
    assert_int_equal(fq_store_tenant_rates(store, pattern, S_DAY, &list), 3);
    assert_string_equal(list.rows[0].name, "acme"); //  By name
    const fq_tenant_rates_t *acme = s_find(&list, "acme");
    assert_int_equal(acme->delivered, 1000 + 600 + 400);
    assert_int_equal(acme->bounces_refused, 31);
    assert_int_equal(acme->bounces, 31 + 9);
    assert_int_equal(acme->complaints, 6);
    assert_int_equal(acme->unsubscribes, 4);
    assert_int_equal(acme->suppressions, 3);
    assert_float_equal(fq_tenant_bounce_rate(acme), 40.0 / 2031.0, 1e-12);
    assert_float_equal(fq_tenant_complaint_rate(acme), 0.003, 1e-12);
    const fq_tenant_rates_t *beta = s_find(&list, "beta");
    assert_int_equal(beta->delivered, 0);
    assert_int_equal(beta->bounces, 2);
    assert_int_equal(beta->bounces_refused, 2);
    assert_int_equal(beta->complaints, 1);
    assert_int_equal(beta->suppressions, 1);
    //  Every message that met a verdict bounced: 100%; no complaint rate
    //  without a delivery
    assert_float_equal(fq_tenant_bounce_rate(beta), 1.0, 0);
    assert_true(fq_tenant_complaint_rate(beta) < 0);
    const fq_tenant_rates_t *idle = s_find(&list, "idle");
    assert_int_equal(idle->delivered + idle->bounces + idle->complaints + idle->unsubscribes +
                         idle->suppressions,
                     0);
    assert_true(fq_tenant_bounce_rate(idle) < 0);
    assert_true(fq_tenant_complaint_rate(idle) < 0);
    fq_tenant_rates_free(&list);
    assert_null(list.rows);

    //  Without suppress_bounces, only bounce reports are hard bounces
    assert_int_equal(fq_store_tenant_rates(store, "", S_DAY, &list), 3);
    acme = s_find(&list, "acme");
    assert_int_equal(acme->bounces, 10);
    assert_int_equal(acme->bounces_refused, 0);
    assert_int_equal(acme->delivered, 2000);
    fq_tenant_rates_free(&list);

    //  A window of two hours: the request of the last two hours whole, the
    //  active one (3 h to 10 min ago) its last 110 of 170 minutes
    assert_int_equal(fq_store_tenant_rates(store, pattern, 2 * 3600 + 60, &list), 3);
    acme = s_find(&list, "acme");
    assert_int_equal(acme->delivered, 1000 + 261); //  400 * 111 / 170 = 261.2
    assert_int_equal(acme->bounces, 30 + 9);
    fq_tenant_rates_free(&list);

    //  No window is no window
    assert_int_equal(fq_store_tenant_rates(store, pattern, 0, &list), FQ_EINVAL);
    assert_int_equal(list.count, 0);
    fq_store_destroy(&store);
}

//  The count reads the partial index of 0023, not the whole table.
static void test_events_read_by_their_index(void **state)
{
    (void)state;
    PGconn *conn = fq_test_connect(s_conninfo);
    //  A test's table is small enough to read whole: ask for an index
    fq_test_exec(conn, "ANALYZE fairq.event_rows", 0);
    fq_test_exec(conn, "SET enable_seqscan = off", 0);
    PGresult *res = fq_test_query(
        conn,
        "EXPLAIN SELECT count(*) FROM fairq.events e WHERE e.tenant_id = 1"
        " AND e.at >= now() - interval '1 day' AND e.type IN ('message.dead', 'message.bounced',"
        " 'message.complained', 'message.unsubscribed')",
        0);
    bool indexed = false;
    for (int i = 0; i < PQntuples(res); i++)
        indexed = indexed || strstr(PQgetvalue(res, i, 0), "events_feedback_rates_idx") != NULL;
    PQclear(res);
    assert_true(indexed);
    PQfinish(conn);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_figures_of_the_day),
        cmocka_unit_test(test_events_read_by_their_index),
    };
    return cmocka_run_group_tests(tests, s_group_setup, s_group_teardown);
}
