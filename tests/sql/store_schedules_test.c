/*  store_schedules_test.c — tenants' schedules of recurring sends
    (fq_store_schedules.h, migration 0025) against a real PostgreSQL: the
    next firing in a time zone (a spring gap fires at the first instant
    after it, an autumn repeat fires once, month ends, February 29, the
    day rule when both day fields are restricted), a schedule made and
    checked (an unknown time zone, a request a submit would refuse, a name
    taken, the most a tenant may have), one firing submitted once by two
    firers at the same moment and by a firer that fires it again, the
    missed firings' two rules after downtime, and a paused schedule that
    fires nothing.

    To wait no real minutes, tests move a schedule's next firing into the
    past in the database, as downtime would leave it. */
#include "fq_error.h"
#include "fq_store.h"
#include "fq_store_schedules.h"
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include "fq_test_sql.h"

//  A set of values as the schema holds it (bit n: value n).
#define S_BIT(n)       (INT64_C(1) << (n))
#define S_ALL_MINUTES  ((INT64_C(1) << 60) - 1)
#define S_ALL_HOURS    ((INT64_C(1) << 24) - 1)
#define S_ALL_DAYS     (((INT64_C(1) << 32) - 1) & ~INT64_C(1))
#define S_ALL_MONTHS   (((INT64_C(1) << 13) - 1) & ~INT64_C(1))
#define S_ALL_WEEKDAYS ((INT64_C(1) << 7) - 1)

#define S_RECIPIENTS "[{\"to\": \"ann@example.com\", \"fields\": {\"name\": \"Ann\"}}]"
#define S_REQUEST                                                                                  \
    "{\"from\": \"news@example.com\", \"subject\": \"Hi {{name}}\", \"body\": \"Weekly\", "        \
    "\"recipients\": " S_RECIPIENTS "}"

static char s_conninfo[128];

static int s_group_setup(void **state)
{
    (void)state;
    const char *tenants[] = {"acme", "limits", "twice", "late", "lazy", "paused", NULL};
    return fq_test_db_prepare(s_conninfo, sizeof s_conninfo, tenants, NULL);
}

static int s_group_teardown(void **state)
{
    (void)state;
    fq_test_db_drop();
    return 0;
}

//  fairq.schedule_next of the sets in tz after the instant after, as
//  RFC 3339 in UTC.
static char *s_next(PGconn *conn, int64_t minutes, int64_t hours, int64_t days, int64_t months,
                    int64_t weekdays, bool days_any, bool weekdays_any, const char *tz,
                    const char *after)
{
    char m[24], h[24], d[24], mo[24], w[24];
    const char *params[] = {fq_test_param(m, sizeof m, minutes),
                            fq_test_param(h, sizeof h, hours),
                            fq_test_param(d, sizeof d, days),
                            fq_test_param(mo, sizeof mo, months),
                            fq_test_param(w, sizeof w, weekdays),
                            days_any ? "true" : "false",
                            weekdays_any ? "true" : "false",
                            tz,
                            after};
    PGresult *res = PQexecParams(
        conn,
        "SELECT to_char(fairq.schedule_next($1::bigint, $2::bigint, $3::bigint, $4::bigint,"
        " $5::bigint, $6::boolean, $7::boolean, $8, $9::timestamptz) AT TIME ZONE 'UTC',"
        " 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')",
        9, NULL, params, NULL, NULL, 0);
    if (PQresultStatus(res) != PGRES_TUPLES_OK)
        fail_msg("schedule_next: %s", PQerrorMessage(conn));
    char *next = strdup(PQgetvalue(res, 0, 0));
    PQclear(res);
    assert_non_null(next);
    return next;
}

static void s_expect_next(PGconn *conn, int64_t minutes, int64_t hours, int64_t days,
                          int64_t months, int64_t weekdays, bool days_any, bool weekdays_any,
                          const char *tz, const char *after, const char *expected)
{
    char *next =
        s_next(conn, minutes, hours, days, months, weekdays, days_any, weekdays_any, tz, after);
    if (strcmp(next, expected) != 0)
        fail_msg("after %s in %s: %s, not %s", after, tz, next, expected);
    free(next);
}

//  Daylight saving time in Europe/Berlin (2026-03-29 02:00 -> 03:00 CEST,
//  2026-10-25 03:00 CEST -> 02:00 CET) and America/New_York.
static void test_next_time_zones(void **state)
{
    (void)state;
    PGconn *conn = fq_test_connect(s_conninfo);
    //  "30 2 * * *": the day of the gap fires at its end, 03:00 CEST
    s_expect_next(conn, S_BIT(30), S_BIT(2), S_ALL_DAYS, S_ALL_MONTHS, S_ALL_WEEKDAYS, true, true,
                  "Europe/Berlin", "2026-03-28T12:00:00Z", "2026-03-29T01:00:00Z");
    //  ... and the day after at 02:30 CEST again
    s_expect_next(conn, S_BIT(30), S_BIT(2), S_ALL_DAYS, S_ALL_MONTHS, S_ALL_WEEKDAYS, true, true,
                  "Europe/Berlin", "2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z");
    //  "*/15 2 * * *": four local times in the gap are one firing
    s_expect_next(conn, S_BIT(0) | S_BIT(15) | S_BIT(30) | S_BIT(45), S_BIT(2), S_ALL_DAYS,
                  S_ALL_MONTHS, S_ALL_WEEKDAYS, true, true, "Europe/Berlin", "2026-03-29T01:00:00Z",
                  "2026-03-30T00:00:00Z");
    //  "30 2 * * *" in autumn: 02:30 happens twice, fires at the first
    s_expect_next(conn, S_BIT(30), S_BIT(2), S_ALL_DAYS, S_ALL_MONTHS, S_ALL_WEEKDAYS, true, true,
                  "Europe/Berlin", "2026-10-24T12:00:00Z", "2026-10-25T00:30:00Z");
    s_expect_next(conn, S_BIT(30), S_BIT(2), S_ALL_DAYS, S_ALL_MONTHS, S_ALL_WEEKDAYS, true, true,
                  "Europe/Berlin", "2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z");
    //  "30 * * * *": the repeated hour fires once, so 02:30 CEST is
    //  followed by 03:30 CET, two hours later
    s_expect_next(conn, S_BIT(30), S_ALL_HOURS, S_ALL_DAYS, S_ALL_MONTHS, S_ALL_WEEKDAYS, true,
                  true, "Europe/Berlin", "2026-10-25T00:30:00Z", "2026-10-25T02:30:00Z");
    //  "0 9 * * *" in New York: 13:00 UTC in summer, 14:00 in winter
    s_expect_next(conn, S_BIT(0), S_BIT(9), S_ALL_DAYS, S_ALL_MONTHS, S_ALL_WEEKDAYS, true, true,
                  "America/New_York", "2026-07-01T00:00:00Z", "2026-07-01T13:00:00Z");
    s_expect_next(conn, S_BIT(0), S_BIT(9), S_ALL_DAYS, S_ALL_MONTHS, S_ALL_WEEKDAYS, true, true,
                  "America/New_York", "2026-11-02T00:00:00Z", "2026-11-02T14:00:00Z");
    //  New York's gap (2026-03-08 02:00 -> 03:00 EDT): 02:30 fires at 03:00
    s_expect_next(conn, S_BIT(30), S_BIT(2), S_ALL_DAYS, S_ALL_MONTHS, S_ALL_WEEKDAYS, true, true,
                  "America/New_York", "2026-03-07T12:00:00Z", "2026-03-08T07:00:00Z");
    PQfinish(conn);
}

static void test_next_calendar(void **state)
{
    (void)state;
    PGconn *conn = fq_test_connect(s_conninfo);
    //  "0 0 31 * *": months without a 31st are passed over
    s_expect_next(conn, S_BIT(0), S_BIT(0), S_BIT(31), S_ALL_MONTHS, S_ALL_WEEKDAYS, false, true,
                  "UTC", "2026-03-31T00:00:00Z", "2026-05-31T00:00:00Z");
    //  "0 0 29 2 *": the next leap year; 2100 is none
    s_expect_next(conn, S_BIT(0), S_BIT(0), S_BIT(29), S_BIT(2), S_ALL_WEEKDAYS, false, true, "UTC",
                  "2026-01-01T00:00:00Z", "2028-02-29T00:00:00Z");
    s_expect_next(conn, S_BIT(0), S_BIT(0), S_BIT(29), S_BIT(2), S_ALL_WEEKDAYS, false, true, "UTC",
                  "2096-03-01T00:00:00Z", "2104-02-29T00:00:00Z");
    //  "0 12 13 * fri": both restricted, either will do: 2026-11-13 is a
    //  Friday and a 13th, then Friday 20th
    s_expect_next(conn, S_BIT(0), S_BIT(12), S_BIT(13), S_ALL_MONTHS, S_BIT(5), false, false, "UTC",
                  "2026-11-12T00:00:00Z", "2026-11-13T12:00:00Z");
    s_expect_next(conn, S_BIT(0), S_BIT(12), S_BIT(13), S_ALL_MONTHS, S_BIT(5), false, false, "UTC",
                  "2026-11-13T12:00:00Z", "2026-11-20T12:00:00Z");
    //  "0 12 * * fri": weekday alone
    s_expect_next(conn, S_BIT(0), S_BIT(12), S_ALL_DAYS, S_ALL_MONTHS, S_BIT(5), true, false, "UTC",
                  "2026-11-13T12:00:00Z", "2026-11-20T12:00:00Z");
    //  "0 0 1 jan *" across a year's end, in Tokyo
    s_expect_next(conn, S_BIT(0), S_BIT(0), S_BIT(1), S_BIT(1), S_ALL_WEEKDAYS, false, true,
                  "Asia/Tokyo", "2026-06-01T00:00:00Z", "2026-12-31T15:00:00Z");
    PQfinish(conn);
}

//  A spec of the expression "* * * * *" (every minute) in UTC with the
//  request of S_REQUEST, submit made for it.
static fq_schedule_spec_t s_spec(const char *name, fq_submit_t *submit)
{
    *submit = (fq_submit_t){.from = "news@example.com",
                            .subject = "Hi {{name}}",
                            .body = "Weekly",
                            .recipients_json = S_RECIPIENTS};
    return (fq_schedule_spec_t){.name = name,
                                .cron = "* * * * *",
                                .minutes = S_ALL_MINUTES,
                                .hours = S_ALL_HOURS,
                                .days = S_ALL_DAYS,
                                .months = S_ALL_MONTHS,
                                .weekdays = S_ALL_WEEKDAYS,
                                .days_any = true,
                                .weekdays_any = true,
                                .time_zone = "UTC",
                                .paused = -1,
                                .request = S_REQUEST,
                                .request_size = strlen(S_REQUEST),
                                .submit = submit};
}

static int64_t s_create(fq_store_t *store, const char *tenant, const fq_schedule_spec_t *spec)
{
    fq_schedule_list_t list;
    int rc = fq_store_schedule_save(store, tenant, 0, spec, &list);
    if (rc)
        fail_msg("create %s: %s", spec->name, fq_store_error(store));
    assert_int_equal(list.count, 1);
    int64_t id = list.rows[0].id;
    assert_string_equal(list.rows[0].missed,
                        spec->missed ? spec->missed : FQ_SCHEDULE_MISSED_LATEST);
    assert_non_null(list.rows[0].request);
    assert_true(list.rows[0].next_fire_at > 0);
    fq_schedule_list_free(&list);
    return id;
}

//  The tenant's requests.
static int64_t s_requests(PGconn *conn, const char *tenant)
{
    return fq_test_int(conn,
                       "SELECT count(*) FROM fairq.requests r JOIN fairq.tenants t"
                       " ON t.id = r.tenant_id WHERE t.name = $1",
                       1, tenant);
}

//  Moves schedule id's next firing ago back from now, whole minutes, as
//  downtime would have left it.
//  Makes schedule id due, ago before this minute, and the only schedule:
//  the earlier ones fire every minute too, and once a minute turns a pass
//  would fire them with it.
static void s_due(PGconn *conn, int64_t id, const char *ago)
{
    char text[24];
    fq_test_exec(conn, "DELETE FROM fairq.schedules WHERE id <> $1", 1,
                 fq_test_param(text, sizeof text, id));
    fq_test_exec(conn,
                 "UPDATE fairq.schedules SET next_fire_at ="
                 " date_trunc('minute', now()) - $2::interval WHERE id = $1",
                 2, fq_test_param(text, sizeof text, id), ago);
}

static int s_fire(fq_store_t *store, fq_schedule_firing_list_t *out)
{
    fq_schedule_fire_t fire = {.limit = 100, .grace_s = 300, .counted = 10000};
    int rc = fq_store_schedules_fire(store, &fire, out);
    if (rc < 0)
        fail_msg("fire: %s", fq_store_error(store));
    return rc;
}

static void test_save(void **state)
{
    (void)state;
    fq_store_t *store = fq_test_store(s_conninfo);
    PGconn *conn = fq_test_connect(s_conninfo);
    fq_submit_t submit;
    fq_schedule_spec_t spec = s_spec("weekly", &submit);
    int64_t id = s_create(store, "acme", &spec);
    //  The trial submit left nothing
    assert_int_equal(s_requests(conn, "acme"), 0);
    fq_schedule_list_t list;
    //  Read back by id and by name; listed without its request
    assert_int_equal(fq_store_schedules(store, "acme", id, NULL, &list), 1);
    fq_schedule_list_free(&list);
    assert_int_equal(fq_store_schedules(store, "acme", 0, "weekly", &list), 1);
    assert_int_equal(list.rows[0].id, id);
    fq_schedule_list_free(&list);
    assert_int_equal(fq_store_schedules(store, "acme", 0, NULL, &list), 1);
    assert_null(list.rows[0].request);
    fq_schedule_list_free(&list);
    assert_int_equal(fq_store_schedules(store, "acme", 0, "other", &list), FQ_ENOTFOUND);
    assert_int_equal(fq_store_schedules(store, "limits", id, NULL, &list), FQ_ENOTFOUND);
    //  The name is taken
    assert_int_equal(fq_store_schedule_save(store, "acme", 0, &spec, &list), FQ_ECONFLICT);
    assert_non_null(strstr(fq_store_error(store), "exists already"));
    //  An unknown time zone
    spec = s_spec("mars", &submit);
    spec.time_zone = "Mars/Olympus_Mons";
    assert_int_equal(fq_store_schedule_save(store, "acme", 0, &spec, &list), FQ_EINVAL);
    assert_non_null(strstr(fq_store_error(store), "time_zone: \"Mars/Olympus_Mons\""));
    assert_string_equal(fq_store_error_sqlstate(store), "");
    //  A request the submit refuses, in its words
    spec = s_spec("bad", &submit);
    submit.from = "not an address";
    assert_int_equal(fq_store_schedule_save(store, "acme", 0, &spec, &list), FQ_EINVAL);
    assert_non_null(strstr(fq_store_error(store), "request: invalid from address"));
    //  No tenant, no schedule
    spec = s_spec("ghost", &submit);
    assert_int_equal(fq_store_schedule_save(store, "nobody", 0, &spec, &list), FQ_ENOTFOUND);
    assert_int_equal(fq_store_schedule_save(store, "acme", id + 1000, &spec, &list), FQ_ENOTFOUND);
    //  A change: paused, a new time zone; the request kept
    fq_schedule_spec_t change = {.paused = 1, .time_zone = "Europe/Berlin"};
    assert_int_equal(fq_store_schedule_save(store, "acme", id, &change, &list), 0);
    assert_true(list.rows[0].paused);
    assert_string_equal(list.rows[0].time_zone, "Europe/Berlin");
    assert_string_equal(list.rows[0].cron, "* * * * *");
    assert_non_null(strstr(list.rows[0].request, "news@example.com"));
    fq_schedule_list_free(&list);
    //  Deleted, then gone
    assert_int_equal(fq_store_schedule_delete(store, "acme", id), 0);
    assert_int_equal(fq_store_schedule_delete(store, "acme", id), FQ_ENOTFOUND);
    PQfinish(conn);
    fq_store_destroy(&store);
}

//  FQ_SCHEDULE_NAME_MAX is the schema's CHECK: a name of that many bytes
//  is stored whole, one more is refused by the database itself.
static void test_name_limit_is_the_schemas(void **state)
{
    (void)state;
    fq_store_t *store = fq_test_store(s_conninfo);
    char name[FQ_SCHEDULE_NAME_MAX + 2];
    memset(name, 'n', FQ_SCHEDULE_NAME_MAX);
    name[FQ_SCHEDULE_NAME_MAX] = '\0';
    assert_true(fq_schedule_name_valid(name));
    fq_submit_t submit;
    fq_schedule_spec_t spec = s_spec(name, &submit);
    fq_schedule_list_t list;
    assert_int_equal(fq_store_schedule_save(store, "acme", 0, &spec, &list), 0);
    assert_string_equal(list.rows[0].name, name);
    assert_int_equal(fq_store_schedule_delete(store, "acme", list.rows[0].id), 0);
    fq_schedule_list_free(&list);
    strcat(name, "n");
    assert_false(fq_schedule_name_valid(name));
    assert_int_equal(fq_store_schedule_save(store, "acme", 0, &spec, &list), FQ_EINVAL);
    assert_false(fq_schedule_name_valid("9lives"));
    assert_false(fq_schedule_name_valid("Digest"));
    assert_false(fq_schedule_name_valid(""));
    fq_store_destroy(&store);
}

static void test_limit(void **state)
{
    (void)state;
    fq_store_t *store = fq_test_store(s_conninfo);
    fq_submit_t submit;
    char name[32];
    for (int i = 0; i < FQ_SCHEDULES_PER_TENANT_MAX; i++) {
        snprintf(name, sizeof name, "s%d", i);
        fq_schedule_spec_t spec = s_spec(name, &submit);
        s_create(store, "limits", &spec);
    }
    fq_schedule_spec_t spec = s_spec("one-more", &submit);
    fq_schedule_list_t list;
    assert_int_equal(fq_store_schedule_save(store, "limits", 0, &spec, &list), FQ_EINVAL);
    assert_non_null(strstr(fq_store_error(store), "at most 100 schedules"));
    fq_store_destroy(&store);
}

//  One firer's pass, on a store of its own (a thread: two fairqds).
static void *s_firer(void *arg)
{
    fq_store_t *store = arg;
    fq_schedule_firing_list_t done;
    fq_schedule_fire_t fire = {.limit = 100, .grace_s = 300, .counted = 10000};
    intptr_t rc = fq_store_schedules_fire(store, &fire, &done);
    fq_schedule_firing_list_free(&done);
    return (void *)rc;
}

static void test_fire_once(void **state)
{
    (void)state;
    fq_store_t *a = fq_test_store(s_conninfo), *b = fq_test_store(s_conninfo);
    PGconn *conn = fq_test_connect(s_conninfo);
    fq_submit_t submit;
    fq_schedule_spec_t spec = s_spec("daily", &submit);
    int64_t id = s_create(a, "twice", &spec);
    s_due(conn, id, "0 minutes");
    pthread_t ta, tb;
    assert_int_equal(pthread_create(&ta, NULL, s_firer, a), 0);
    assert_int_equal(pthread_create(&tb, NULL, s_firer, b), 0);
    void *ra, *rb;
    pthread_join(ta, &ra);
    pthread_join(tb, &rb);
    assert_true((intptr_t)ra >= 0 && (intptr_t)rb >= 0);
    //  One of them fired it, once
    assert_int_equal((intptr_t)ra + (intptr_t)rb, 1);
    assert_int_equal(s_requests(conn, "twice"), 1);
    //  The same firing due again (a firer whose commit was lost to it):
    //  its key answers the first request, none is made
    char text[24];
    fq_test_exec(conn, "UPDATE fairq.schedules SET next_fire_at = last_fire_at WHERE id = $1", 1,
                 fq_test_param(text, sizeof text, id));
    fq_schedule_firing_list_t done;
    assert_int_equal(s_fire(a, &done), 1);
    assert_true(done.rows[0].replayed);
    assert_null(done.rows[0].error);
    fq_schedule_firing_list_free(&done);
    assert_int_equal(s_requests(conn, "twice"), 1);
    fq_schedule_list_t list;
    assert_int_equal(fq_store_schedules(a, "twice", id, NULL, &list), 1);
    assert_int_equal(list.rows[0].fired, 1);
    assert_true(list.rows[0].last_request_id > 0);
    assert_true(list.rows[0].next_fire_at > list.rows[0].last_fire_at);
    fq_schedule_list_free(&list);
    //  Nothing due: nothing fired
    assert_int_equal(s_fire(a, &done), 0);
    fq_schedule_firing_list_free(&done);
    PQfinish(conn);
    fq_store_destroy(&a);
    fq_store_destroy(&b);
}

static void test_missed(void **state)
{
    (void)state;
    fq_store_t *store = fq_test_store(s_conninfo);
    PGconn *conn = fq_test_connect(s_conninfo);
    fq_submit_t submit;
    //  "latest": ten minutes down, the latest firing fires once, the nine
    //  or ten before it are skipped (now's own minute may be one more)
    fq_schedule_spec_t spec = s_spec("latest", &submit);
    int64_t id = s_create(store, "late", &spec);
    s_due(conn, id, "10 minutes");
    fq_schedule_firing_list_t done;
    assert_int_equal(s_fire(store, &done), 1);
    assert_true(done.rows[0].request_id > 0);
    assert_true(done.rows[0].skipped >= 10 && done.rows[0].skipped <= 11);
    fq_schedule_firing_list_free(&done);
    assert_int_equal(s_requests(conn, "late"), 1);
    char text[24];
    assert_int_equal(fq_test_int(conn,
                                 "SELECT count(*) FROM fairq.schedules WHERE id = $1"
                                 " AND last_fire_at > now() - interval '1 minute'"
                                 " AND next_fire_at > now()",
                                 1, fq_test_param(text, sizeof text, id)),
                     1);
    //  "skip", hourly at the minute of ten minutes ago, which was missed:
    //  it does not fire; the next firing is the next hour's
    spec = s_spec("skipping", &submit);
    spec.missed = FQ_SCHEDULE_MISSED_SKIP;
    int64_t minute =
        fq_test_int(conn, "SELECT extract(minute FROM now() - interval '10 minutes')::int", 0);
    char cron[32];
    snprintf(cron, sizeof cron, "%d * * * *", (int)minute);
    spec.cron = cron;
    spec.minutes = S_BIT(minute);
    id = s_create(store, "lazy", &spec);
    s_due(conn, id, "10 minutes");
    assert_int_equal(s_fire(store, &done), 1);
    assert_int_equal(done.rows[0].request_id, 0);
    assert_int_equal(done.rows[0].fire_at, 0);
    assert_int_equal(done.rows[0].skipped, 1);
    fq_schedule_firing_list_free(&done);
    assert_int_equal(s_requests(conn, "lazy"), 0);
    fq_schedule_list_t list;
    assert_int_equal(fq_store_schedules(store, "lazy", id, NULL, &list), 1);
    assert_int_equal(list.rows[0].skipped, 1);
    assert_int_equal(list.rows[0].fired, 0);
    assert_true(list.rows[0].next_fire_at >= time(NULL));
    fq_schedule_list_free(&list);
    //  Within the grace, "skip" fires as any schedule does
    s_due(conn, id, "0 minutes");
    assert_int_equal(s_fire(store, &done), 1);
    assert_true(done.rows[0].request_id > 0);
    fq_schedule_firing_list_free(&done);
    //  A week down, every minute: counted up to the limit, then the walk
    //  jumps; the latest still fires once
    spec = s_spec("week", &submit);
    id = s_create(store, "late", &spec);
    s_due(conn, id, "7 days");
    fq_schedule_fire_t fire = {.limit = 100, .grace_s = 300, .counted = 100};
    assert_int_equal(fq_store_schedules_fire(store, &fire, &done), 1);
    assert_true(done.rows[0].request_id > 0);
    assert_true(done.rows[0].skipped >= 100);
    fq_schedule_firing_list_free(&done);
    assert_int_equal(s_requests(conn, "late"), 2);
    PQfinish(conn);
    fq_store_destroy(&store);
}

static void test_paused(void **state)
{
    (void)state;
    fq_store_t *store = fq_test_store(s_conninfo);
    PGconn *conn = fq_test_connect(s_conninfo);
    fq_submit_t submit;
    fq_schedule_spec_t spec = s_spec("held", &submit);
    spec.paused = 1;
    int64_t id = s_create(store, "paused", &spec);
    s_due(conn, id, "5 minutes");
    fq_schedule_firing_list_t done;
    assert_int_equal(s_fire(store, &done), 0);
    fq_schedule_firing_list_free(&done);
    assert_int_equal(s_requests(conn, "paused"), 0);
    //  Resumed: it starts from now, the firings while paused never made
    fq_schedule_spec_t resume = {.paused = 0};
    fq_schedule_list_t list;
    assert_int_equal(fq_store_schedule_save(store, "paused", id, &resume, &list), 0);
    assert_false(list.rows[0].paused);
    assert_true(list.rows[0].next_fire_at >= time(NULL));
    fq_schedule_list_free(&list);
    assert_int_equal(s_fire(store, &done), 0);
    fq_schedule_firing_list_free(&done);
    assert_int_equal(s_requests(conn, "paused"), 0);
    PQfinish(conn);
    fq_store_destroy(&store);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_next_time_zones),
        cmocka_unit_test(test_next_calendar),
        cmocka_unit_test(test_save),
        cmocka_unit_test(test_name_limit_is_the_schemas),
        cmocka_unit_test(test_limit),
        cmocka_unit_test(test_fire_once),
        cmocka_unit_test(test_missed),
        cmocka_unit_test(test_paused),
    };
    return cmocka_run_group_tests(tests, s_group_setup, s_group_teardown);
}
