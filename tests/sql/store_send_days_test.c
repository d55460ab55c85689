/*  store_send_days_test.c — a tenant's daily quota as the scheduler
    reserves it in blocks (fq_store_shaping.h, migration 0017) against a
    real PostgreSQL: the first reservation of a day starts from 0, the
    next ones follow it; a reservation never goes past the quota, and a
    quota lowered below what is reserved reserves nothing more; each day
    and each tenant has a count of its own; what is recorded gives back
    the unused rest but never takes the reservation below the count; a
    tenant's days older than a week go as its new day starts; bad
    arguments are errors that leave the store usable; the tenants' send
    limits the schema refuses. One database for the program, one tenant
    (or two) per test. */
#include "fq_error.h"
#include "fq_store.h"
#include "fq_store_shaping.h"
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include "fq_test_sql.h"

//  A day of the tests (days since 1970-01-01: 2024-10-04); the store
//  takes any, so no test depends on today's date.
#define S_DAY 20000

//  Days a tenant's rows are kept before its new day deletes them
//  (0017's reserve_sends: day < p_day - 7).
#define S_KEPT_DAYS 7

//  Room for an integer as a query parameter.
#define S_INT_TEXT 24

static char s_conninfo[128];

static int s_group_setup(void **state)
{
    (void)state;
    const char *tenants[] = {NULL};
    return fq_test_db_prepare(s_conninfo, sizeof s_conninfo, tenants, NULL);
}

static int s_group_teardown(void **state)
{
    (void)state;
    fq_test_db_drop();
    return 0;
}

//  A new tenant's id; every test names its own.
static int64_t s_tenant(fq_store_t *store, const char *name)
{
    int64_t id = 0;
    if (fq_store_tenant_put(store, &(fq_tenant_spec_t){.name = name}, &id))
        fail_msg("tenant %s: %s", name, fq_store_error(store));
    return id;
}

//  A reservation that must succeed; checks what it answers.
static void s_reserve(fq_store_t *store, int64_t tenant, int64_t day, int64_t want, int64_t quota,
                      int64_t used, int64_t before_wanted, int64_t after_wanted)
{
    int64_t before = -1, after = -1;
    if (fq_store_reserve_sends(store, tenant, day, want, quota, used, &before, &after))
        fail_msg("reserve: %s", fq_store_error(store));
    assert_int_equal(before, before_wanted);
    assert_int_equal(after, after_wanted);
}

//  A column (reserved or used) of tenant's row for day; -1 without one.
static int64_t s_row(PGconn *conn, const char *column, int64_t tenant, int64_t day)
{
    char id[S_INT_TEXT], date[S_INT_TEXT], sql[256];
    snprintf(sql, sizeof sql,
             "SELECT coalesce((SELECT %s FROM fairq.tenant_send_days WHERE tenant_id = $1::bigint"
             " AND day = date '1970-01-01' + $2::int), -1)",
             column);
    return fq_test_int(conn, sql, 2, fq_test_param(id, sizeof id, tenant),
                       fq_test_param(date, sizeof date, day));
}

//  A day's first reservation starts from nothing, and blocks follow one
//  another; a want of 0 reserves nothing but makes the day's row.
static void test_blocks_follow_each_other(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    PGconn *conn = fq_test_connect(s_conninfo);
    int64_t acme = s_tenant(store, "blocks");
    assert_int_equal(s_row(conn, "reserved", acme, S_DAY), -1);
    s_reserve(store, acme, S_DAY, 5, 100, 0, 0, 5);
    s_reserve(store, acme, S_DAY, 5, 100, 5, 5, 10);
    s_reserve(store, acme, S_DAY, 5, 100, 10, 10, 15);
    s_reserve(store, acme, S_DAY, 0, 100, 12, 15, 15);
    assert_int_equal(s_row(conn, "reserved", acme, S_DAY), 15);
    //  used is written with each block: the figure the API shows
    assert_int_equal(s_row(conn, "used", acme, S_DAY), 12);
    //  A count beyond the reservation is recorded as the reservation
    s_reserve(store, acme, S_DAY, 0, 100, 40, 15, 15);
    assert_int_equal(s_row(conn, "used", acme, S_DAY), 15);
    PQfinish(conn);
    fq_store_destroy(&store);
}

//  No reservation goes past the quota: a want bigger than what is left
//  gets what is left; a spent quota nothing; a quota lowered below what
//  is reserved reserves nothing more and takes nothing back.
static void test_never_past_the_quota(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    PGconn *conn = fq_test_connect(s_conninfo);
    int64_t acme = s_tenant(store, "quota");
    s_reserve(store, acme, S_DAY, 20, 30, 0, 0, 20);
    s_reserve(store, acme, S_DAY, 15, 30, 20, 20, 30);
    s_reserve(store, acme, S_DAY, 15, 30, 30, 30, 30);
    s_reserve(store, acme, S_DAY, 1, 30, 30, 30, 30);
    //  Lowered to 10: nothing more, and the 30 reserved stay
    s_reserve(store, acme, S_DAY, 5, 10, 30, 30, 30);
    assert_int_equal(s_row(conn, "reserved", acme, S_DAY), 30);
    //  Raised to 40: 10 more, in blocks
    s_reserve(store, acme, S_DAY, 6, 40, 30, 30, 36);
    s_reserve(store, acme, S_DAY, 6, 40, 36, 36, 40);
    s_reserve(store, acme, S_DAY, 6, 40, 40, 40, 40);
    assert_int_equal(s_row(conn, "reserved", acme, S_DAY), 40);
    PQfinish(conn);
    fq_store_destroy(&store);
}

//  Each (tenant, day) has a count of its own.
static void test_days_and_tenants_independent(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    PGconn *conn = fq_test_connect(s_conninfo);
    int64_t acme = s_tenant(store, "days_a"), bravo = s_tenant(store, "days_b");
    s_reserve(store, acme, S_DAY, 10, 10, 0, 0, 10);
    s_reserve(store, acme, S_DAY, 1, 10, 10, 10, 10); //  Spent today
    s_reserve(store, acme, S_DAY + 1, 4, 10, 0, 0, 4);
    s_reserve(store, bravo, S_DAY, 7, 10, 0, 0, 7);
    s_reserve(store, acme, S_DAY - 1, 3, 10, 0, 0, 3);
    assert_int_equal(s_row(conn, "reserved", acme, S_DAY), 10);
    assert_int_equal(s_row(conn, "reserved", acme, S_DAY + 1), 4);
    assert_int_equal(s_row(conn, "reserved", acme, S_DAY - 1), 3);
    assert_int_equal(s_row(conn, "reserved", bravo, S_DAY), 7);
    assert_int_equal(s_row(conn, "reserved", bravo, S_DAY + 1), -1);
    PQfinish(conn);
    fq_store_destroy(&store);
}

//  A record gives back the unused rest of a reservation, never below the
//  count, and writes the count; 0 only records the count.
static void test_record_gives_back(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    PGconn *conn = fq_test_connect(s_conninfo);
    int64_t acme = s_tenant(store, "record");
    s_reserve(store, acme, S_DAY, 10, 100, 0, 0, 10);
    assert_int_equal(fq_store_record_sends(store, acme, S_DAY, 0, 3), 0);
    assert_int_equal(s_row(conn, "reserved", acme, S_DAY), 10);
    assert_int_equal(s_row(conn, "used", acme, S_DAY), 3);
    assert_int_equal(fq_store_record_sends(store, acme, S_DAY, 4, 6), 0);
    assert_int_equal(s_row(conn, "reserved", acme, S_DAY), 6);
    assert_int_equal(s_row(conn, "used", acme, S_DAY), 6);
    //  More given back than is left: the reservation stops at the count
    assert_int_equal(fq_store_record_sends(store, acme, S_DAY, 100, 5), 0);
    assert_int_equal(s_row(conn, "reserved", acme, S_DAY), 5);
    assert_int_equal(s_row(conn, "used", acme, S_DAY), 5);
    //  What was given back may be reserved again
    s_reserve(store, acme, S_DAY, 10, 100, 5, 5, 15);
    //  A day without a row: nothing to record, no row made
    assert_int_equal(fq_store_record_sends(store, acme, S_DAY + 3, 1, 1), 0);
    assert_int_equal(s_row(conn, "reserved", acme, S_DAY + 3), -1);
    PQfinish(conn);
    fq_store_destroy(&store);
}

//  As a tenant's new day starts, its days older than a week go; its
//  others, and other tenants' days, stay; a day already begun deletes
//  nothing.
static void test_old_days_deleted(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    PGconn *conn = fq_test_connect(s_conninfo);
    int64_t acme = s_tenant(store, "old_a"), bravo = s_tenant(store, "old_b");
    int64_t oldest = S_DAY - S_KEPT_DAYS - 1, kept = S_DAY - S_KEPT_DAYS;
    s_reserve(store, acme, oldest, 1, 10, 0, 0, 1);
    s_reserve(store, acme, kept, 1, 10, 0, 0, 1);
    s_reserve(store, acme, S_DAY - 1, 1, 10, 0, 0, 1);
    s_reserve(store, bravo, oldest, 1, 10, 0, 0, 1);
    s_reserve(store, acme, S_DAY, 1, 10, 0, 0, 1);
    assert_int_equal(s_row(conn, "reserved", acme, oldest), -1);
    assert_int_equal(s_row(conn, "reserved", acme, kept), 1);
    assert_int_equal(s_row(conn, "reserved", acme, S_DAY - 1), 1);
    assert_int_equal(s_row(conn, "reserved", bravo, oldest), 1);
    //  A row as old, written later: today's second reservation keeps it,
    //  tomorrow's first deletes it (and today's kept one, now 8 days old)
    char id[S_INT_TEXT], date[S_INT_TEXT];
    fq_test_exec(conn,
                 "INSERT INTO fairq.tenant_send_days (tenant_id, day, reserved)"
                 " VALUES ($1::bigint, date '1970-01-01' + $2::int, 2)",
                 2, fq_test_param(id, sizeof id, acme), fq_test_param(date, sizeof date, oldest));
    s_reserve(store, acme, S_DAY, 1, 10, 1, 1, 2);
    assert_int_equal(s_row(conn, "reserved", acme, oldest), 2);
    s_reserve(store, acme, S_DAY + 1, 1, 10, 0, 0, 1);
    assert_int_equal(s_row(conn, "reserved", acme, oldest), -1);
    assert_int_equal(s_row(conn, "reserved", acme, kept), -1);
    assert_int_equal(s_row(conn, "reserved", acme, S_DAY - 1), 1);
    assert_int_equal(s_row(conn, "reserved", acme, S_DAY), 2);
    PQfinish(conn);
    fq_store_destroy(&store);
}

//  reserve must fail with rc and SQLSTATE state, answering 0 and 0.
static void s_reserve_refused(fq_store_t *store, int64_t tenant, int64_t want, int64_t quota,
                              int64_t used, int rc, const char *state)
{
    int64_t before = -1, after = -1;
    int got = fq_store_reserve_sends(store, tenant, S_DAY, want, quota, used, &before, &after);
    if (got != rc)
        fail_msg("reserve want %lld quota %lld used %lld: %s (%s), wanted %s", (long long)want,
                 (long long)quota, (long long)used, fq_err_name(got), fq_store_error(store),
                 fq_err_name(rc));
    assert_string_equal(fq_store_error_sqlstate(store), state);
    assert_non_null(strstr(fq_store_error(store), "could not reserve a daily quota"));
    assert_int_equal(before, 0);
    assert_int_equal(after, 0);
}

//  A negative want or count, a quota below 1 and a tenant that does not
//  exist are refused, write nothing, and the store goes on.
static void test_bad_arguments(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    PGconn *conn = fq_test_connect(s_conninfo);
    int64_t acme = s_tenant(store, "bad");
    s_reserve_refused(store, acme, -1, 10, 0, FQ_EINVAL, "22023");
    s_reserve_refused(store, acme, 1, 0, 0, FQ_EINVAL, "22023");
    s_reserve_refused(store, acme, 1, -5, 0, FQ_EINVAL, "22023");
    s_reserve_refused(store, acme, 1, 10, -1, FQ_EINVAL, "22023");
    assert_int_equal(s_row(conn, "reserved", acme, S_DAY), -1);
    int64_t unknown = acme + 1000000;
    s_reserve_refused(store, unknown, 1, 10, 0, FQ_EINVAL, "23503"); //  foreign_key_violation
    assert_string_equal(fq_store_error_constraint(store), "tenant_send_days_tenant_id_fkey");
    assert_int_equal(fq_test_int(conn,
                                 "SELECT count(*) FROM fairq.tenant_send_days"
                                 " WHERE tenant_id NOT IN (SELECT id FROM fairq.tenants)",
                                 0),
                     0);
    assert_true(fq_store_connected(store));
    s_reserve(store, acme, S_DAY, 3, 10, 0, 0, 3);
    //  A negative give-back or count is taken as 0
    assert_int_equal(fq_store_record_sends(store, acme, S_DAY, -4, -2), 0);
    assert_int_equal(s_row(conn, "reserved", acme, S_DAY), 3);
    assert_int_equal(s_row(conn, "used", acme, S_DAY), 0);
    PQfinish(conn);
    fq_store_destroy(&store);
}

//  An UPDATE of tenants the schema must refuse with SQLSTATE 23514 and
//  the constraint named.
static void s_tenants_refused(PGconn *conn, const char *set, const char *constraint)
{
    char sql[256];
    snprintf(sql, sizeof sql, "UPDATE fairq.tenants SET %s WHERE name = 'limits'", set);
    PGresult *res = PQexec(conn, sql);
    if (PQresultStatus(res) != PGRES_FATAL_ERROR) {
        PQclear(res);
        fail_msg("%s: accepted", sql);
    }
    assert_string_equal(PQresultErrorField(res, PG_DIAG_SQLSTATE), "23514");
    assert_string_equal(PQresultErrorField(res, PG_DIAG_CONSTRAINT_NAME), constraint);
    PQclear(res);
}

//  A rate's count without its period (or the other way), a period other
//  than 1, 60, 3600 or 86400 and a quota of 0 are refused, whoever
//  writes; what the store writes is what the schema allows.
static void test_tenant_limits_checked(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    PGconn *conn = fq_test_connect(s_conninfo);
    int64_t id = s_tenant(store, "limits");
    s_tenants_refused(conn, "send_rate_count = 20", "tenants_send_rate_whole");
    s_tenants_refused(conn, "send_rate_period_s = 60", "tenants_send_rate_whole");
    s_tenants_refused(conn, "send_rate_count = 20, send_rate_period_s = 7",
                      "tenants_send_rate_period_s_check");
    s_tenants_refused(conn, "send_rate_count = 0, send_rate_period_s = 1",
                      "tenants_send_rate_count_check");
    s_tenants_refused(conn, "daily_quota = 0", "tenants_daily_quota_check");
    s_tenants_refused(conn, "daily_quota = -3", "tenants_daily_quota_check");

    //  Through the store: the same refusals, as FQ_EINVAL
    fq_tenant_spec_t spec = {.name = "limits", .send_rate_count = 20, .send_rate_period_s = 7};
    assert_int_equal(fq_store_tenant_put(store, &spec, NULL), FQ_EINVAL);
    assert_string_equal(fq_store_error_constraint(store), "tenants_send_rate_period_s_check");
    spec = (fq_tenant_spec_t){
        .name = "limits", .send_rate_count = 20, .send_rate_period_s = 1, .daily_quota = 30};
    int64_t again = 0;
    assert_int_equal(fq_store_tenant_put(store, &spec, &again), 0);
    assert_int_equal(again, id);
    assert_int_equal(fq_test_int(conn,
                                 "SELECT send_rate_count * 1000000 + send_rate_period_s * 1000"
                                 " + daily_quota FROM fairq.tenants WHERE name = 'limits'",
                                 0),
                     20 * 1000000 + 1 * 1000 + 30);
    //  Negative values remove them, and none is a valid state
    spec = (fq_tenant_spec_t){.name = "limits", .send_rate_count = -1, .daily_quota = -1};
    assert_int_equal(fq_store_tenant_put(store, &spec, NULL), 0);
    assert_int_equal(fq_test_int(conn,
                                 "SELECT count(*) FROM fairq.tenants WHERE name = 'limits'"
                                 " AND send_rate_count IS NULL AND send_rate_period_s IS NULL"
                                 " AND daily_quota IS NULL",
                                 0),
                     1);
    PQfinish(conn);
    fq_store_destroy(&store);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_blocks_follow_each_other),
        cmocka_unit_test(test_never_past_the_quota),
        cmocka_unit_test(test_days_and_tenants_independent),
        cmocka_unit_test(test_record_gives_back),
        cmocka_unit_test(test_old_days_deleted),
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_tenant_limits_checked),
    };
    return cmocka_run_group_tests(tests, s_group_setup, s_group_teardown);
}
