/*  store_submit_rate_test.c — a tenant's submit rate, one token bucket in
    the database (migration 0010), against a real PostgreSQL: a burst of
    the whole minute, then refusals that say how long to wait; the bucket
    refills by the database's clock (moved here by moving refreshed_at back,
    not by sleeping) and never past the rate; a lowered rate holds at once;
    a token given back is taken again; connections share one bucket, and
    threads racing for it never get more than the rate between them; a
    connection the server cut answers FQ_EDB. Each test has a database of
    its own. */
#include "fq_store.h"
#include "fq_error.h"
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include "fq_test_sql.h"

//  Connections (as fairqd's HTTP threads, or several fairqd) racing for
//  one bucket, and the takes each tries.
#define S_RACERS          4
#define S_TAKES_PER_RACER 40

//  Room for an integer as a query parameter.
#define S_INT_TEXT 24

//  How long the statements of a test may take between two looks at the
//  database's clock: the retries and refills below allow that much.
#define S_SLACK_S 2

static char s_conninfo[128];

static int s_setup(void **state)
{
    (void)state;
    return fq_test_db_create_named("rate", true, s_conninfo, sizeof s_conninfo);
}

static int s_teardown(void **state)
{
    (void)state;
    fq_test_db_drop_named("rate");
    return 0;
}

//  A new tenant's id.
static int64_t s_tenant(fq_store_t *store, const char *name)
{
    int64_t id = 0;
    if (fq_store_tenant_put(store, &(fq_tenant_spec_t){.name = name}, &id))
        fail_msg("tenant: %s", fq_store_error(store));
    return id;
}

//  One take: 0 when a token was taken, else the seconds to wait.
static int s_take(fq_store_t *store, int64_t tenant, int rate)
{
    int retry_after_s = -1;
    if (fq_store_take_submit_token(store, tenant, rate, &retry_after_s))
        fail_msg("take: %s", fq_store_error(store));
    assert_true(retry_after_s >= 0);
    return retry_after_s;
}

//  Takes until refused (at most limit times); returns how many were taken.
static int s_take_all(fq_store_t *store, int64_t tenant, int rate, int limit, int *retry_after_s)
{
    int taken = 0;
    while (taken < limit && (*retry_after_s = s_take(store, tenant, rate)) == 0)
        taken++;
    return taken;
}

//  Empties tenant's bucket as of ago_s seconds before the database's now,
//  as if its last token had been taken then.
static void s_emptied_ago(PGconn *conn, int64_t tenant, int ago_s)
{
    char id[S_INT_TEXT], ago[S_INT_TEXT];
    fq_test_exec(conn,
                 "UPDATE fairq.submit_buckets SET tokens = 0,"
                 " refreshed_at = clock_timestamp() - make_interval(secs => $2::int)"
                 " WHERE tenant_id = $1::bigint",
                 2, fq_test_param(id, sizeof id, tenant), fq_test_param(ago, sizeof ago, ago_s));
}

//  A tenant gets its whole minute at once, then a refusal that says how
//  long until a token is back (a minute / rate), with its bucket left as it
//  was; another tenant is not held back.
static void test_burst_then_refused(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    PGconn *conn = fq_test_connect(s_conninfo);
    int64_t acme = s_tenant(store, "acme"), bravo = s_tenant(store, "bravo");
    int retry_after_s = 0;
    assert_int_equal(s_take_all(store, acme, 3, 100, &retry_after_s), 3);
    //  Empty: one token comes back in 60 / 3 = 20 s, less what passed
    assert_in_range(retry_after_s, 20 - S_SLACK_S, 20);
    char id[S_INT_TEXT];
    fq_test_param(id, sizeof id, acme);
    char *before = fq_test_text(conn,
                                "SELECT tokens || ' ' || refreshed_at FROM fairq.submit_buckets"
                                " WHERE tenant_id = $1::bigint",
                                1, id);
    assert_in_range(s_take(store, acme, 3), 20 - S_SLACK_S, 20);
    char *after = fq_test_text(conn,
                               "SELECT tokens || ' ' || refreshed_at FROM fairq.submit_buckets"
                               " WHERE tenant_id = $1::bigint",
                               1, id);
    assert_string_equal(before, after); //  A refusal writes nothing
    free(before);
    free(after);
    //  One row per tenant, bravo's bucket its own and full
    assert_int_equal(s_take_all(store, bravo, 2, 100, &retry_after_s), 2);
    assert_in_range(retry_after_s, 30 - S_SLACK_S, 30);
    assert_int_equal(fq_test_int(conn, "SELECT count(*) FROM fairq.submit_buckets", 0), 2);
    PQfinish(conn);
    fq_store_destroy(&store);
}

//  The bucket gains rate / 60 tokens a second, by the database's clock,
//  and never holds more than rate.
static void test_refill_over_time(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    PGconn *conn = fq_test_connect(s_conninfo);
    int64_t acme = s_tenant(store, "acme");
    int retry_after_s = 0;
    //  6 a minute: a token every 10 s
    assert_int_equal(s_take_all(store, acme, 6, 100, &retry_after_s), 6);
    s_emptied_ago(conn, acme, 10);
    assert_int_equal(s_take_all(store, acme, 6, 100, &retry_after_s), 1);
    assert_in_range(retry_after_s, 10 - S_SLACK_S, 10);
    //  Two and a half tokens: two taken, the half is 5 s from a whole one
    s_emptied_ago(conn, acme, 25);
    assert_int_equal(s_take_all(store, acme, 6, 100, &retry_after_s), 2);
    assert_in_range(retry_after_s, 5 - S_SLACK_S, 5);
    //  An hour's worth is still one minute's
    s_emptied_ago(conn, acme, 3600);
    assert_int_equal(s_take_all(store, acme, 6, 100, &retry_after_s), 6);
    assert_in_range(retry_after_s, 10 - S_SLACK_S, 10);
    //  1 a minute: half a minute is half a token
    int64_t slow = s_tenant(store, "slow");
    assert_int_equal(s_take(store, slow, 1), 0);
    assert_in_range(s_take(store, slow, 1), 60 - S_SLACK_S, 60);
    s_emptied_ago(conn, slow, 30);
    assert_in_range(s_take(store, slow, 1), 30 - S_SLACK_S, 30);
    s_emptied_ago(conn, slow, 60);
    assert_int_equal(s_take(store, slow, 1), 0);
    //  A refreshed_at ahead of the clock (a clock stepped back) adds nothing
    fq_test_exec(conn,
                 "UPDATE fairq.submit_buckets SET tokens = 0,"
                 " refreshed_at = clock_timestamp() + interval '1 hour'",
                 0);
    assert_int_equal(s_take(store, slow, 1), 60);
    PQfinish(conn);
    fq_store_destroy(&store);
}

//  A rate lowered under a bucket that holds more holds at once; a rate
//  raised lets the bucket fill to the new rate.
static void test_rate_changes_hold_at_once(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    PGconn *conn = fq_test_connect(s_conninfo);
    int64_t acme = s_tenant(store, "acme");
    int retry_after_s = 0;
    assert_int_equal(s_take(store, acme, 100), 0); //  99 left
    assert_int_equal(s_take_all(store, acme, 2, 100, &retry_after_s), 2);
    assert_in_range(retry_after_s, 30 - S_SLACK_S, 30);
    s_emptied_ago(conn, acme, 3600);
    assert_int_equal(s_take_all(store, acme, 10, 100, &retry_after_s), 10);
    PQfinish(conn);
    fq_store_destroy(&store);
}

//  A token given back (its submit was refused) is taken again, never past
//  the rate; giving back to a tenant without a bucket does nothing.
static void test_give_back(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    PGconn *conn = fq_test_connect(s_conninfo);
    int64_t acme = s_tenant(store, "acme"), bravo = s_tenant(store, "bravo");
    int retry_after_s = 0;
    assert_int_equal(s_take_all(store, acme, 2, 100, &retry_after_s), 2);
    assert_int_equal(fq_store_give_back_submit_token(store, acme, 2), 0);
    assert_int_equal(s_take_all(store, acme, 2, 100, &retry_after_s), 1);
    assert_true(retry_after_s > 0);
    //  A bucket one short gets three back, and holds two
    s_emptied_ago(conn, acme, 3600);
    assert_int_equal(s_take(store, acme, 2), 0);
    for (int i = 0; i < 3; i++)
        assert_int_equal(fq_store_give_back_submit_token(store, acme, 2), 0);
    assert_int_equal(s_take_all(store, acme, 2, 100, &retry_after_s), 2);
    assert_int_equal(fq_store_give_back_submit_token(store, bravo, 2), 0);
    assert_int_equal(fq_test_int(conn, "SELECT count(*) FROM fairq.submit_buckets", 0), 1);
    PQfinish(conn);
    fq_store_destroy(&store);
}

typedef struct {
    int64_t tenant;
    int rate;
    int taken;
    int failed; //  Takes that failed (the test then fails)
} s_racer_t;

static void *s_racer(void *arg)
{
    s_racer_t *racer = arg;
    char error[512];
    fq_store_t *store = fq_store_new(s_conninfo, error, sizeof error);
    for (int i = 0; i < S_TAKES_PER_RACER; i++) {
        int retry_after_s;
        if (!store ||
            fq_store_take_submit_token(store, racer->tenant, racer->rate, &retry_after_s) != 0)
            racer->failed++;
        else if (retry_after_s == 0)
            racer->taken++;
    }
    fq_store_destroy(&store);
    return NULL;
}

//  Connections share one bucket: several taking at once (each a fairqd)
//  get the rate between them, not the rate each.
static void test_connections_share_one_bucket(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    fq_store_t *other = fq_test_store(s_conninfo);
    int64_t acme = s_tenant(store, "acme");
    int taken = 0;
    for (int i = 0; i < 10; i++)
        taken += s_take(i % 2 ? other : store, acme, 4) == 0;
    assert_int_equal(taken, 4);

    int64_t race = s_tenant(store, "race");
    int rate = S_RACERS * S_TAKES_PER_RACER / 2;
    s_racer_t racers[S_RACERS];
    pthread_t threads[S_RACERS];
    int64_t started_ms = fq_test_now_ms();
    for (int i = 0; i < S_RACERS; i++) {
        racers[i] = (s_racer_t){.tenant = race, .rate = rate};
        assert_int_equal(pthread_create(&threads[i], NULL, s_racer, &racers[i]), 0);
    }
    int total = 0;
    for (int i = 0; i < S_RACERS; i++) {
        pthread_join(threads[i], NULL);
        assert_int_equal(racers[i].failed, 0);
        total += racers[i].taken;
    }
    //  The rate, and what the clock gave back while they raced (rate / 60
    //  a second: a token every 0.75 s)
    int64_t raced_ms = fq_test_now_ms() - started_ms;
    print_message("%d racers took %d of a bucket of %d in %lld ms\n", S_RACERS, total, rate,
                  (long long)raced_ms);
    assert_in_range(total, rate, rate + raced_ms * rate / 60000 + 1);
    fq_store_destroy(&other);
    fq_store_destroy(&store);
}

//  Bad arguments are refused; a connection the server cut fails with
//  FQ_EDB and reads as lost (the HTTP API then answers 503), and works
//  again once made again.
static void test_errors(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    PGconn *conn = fq_test_connect(s_conninfo);
    int64_t acme = s_tenant(store, "acme");
    int retry_after_s = -1;
    assert_int_equal(fq_store_take_submit_token(store, acme, 0, &retry_after_s), FQ_EINVAL);
    assert_int_equal(retry_after_s, 0);
    assert_int_equal(fq_store_take_submit_token(store, acme, -5, &retry_after_s), FQ_EINVAL);
    assert_int_equal(fq_store_take_submit_token(store, acme + 1000, 5, &retry_after_s), FQ_EINVAL);
    assert_string_equal(fq_store_error_sqlstate(store), "23503"); //  No such tenant
    //  The function itself refuses what the store would not send
    PGresult *res = PQexec(conn, "SELECT fairq.take_submit_token(1, 0)");
    assert_int_equal(PQresultStatus(res), PGRES_FATAL_ERROR);
    assert_string_equal(PQresultErrorField(res, PG_DIAG_SQLSTATE), "22023");
    PQclear(res);

    fq_test_kill_store_backends(conn, S_SLACK_S * 1000);
    assert_int_equal(fq_store_take_submit_token(store, acme, 5, &retry_after_s), FQ_EDB);
    assert_false(fq_store_connected(store));
    assert_int_equal(fq_store_reconnect(store), 0);
    assert_int_equal(s_take(store, acme, 5), 0);
    assert_int_equal(fq_store_give_back_submit_token(store, acme, 5), 0);
    PQfinish(conn);
    fq_store_destroy(&store);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_burst_then_refused, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_refill_over_time, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_rate_changes_hold_at_once, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_give_back, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_connections_share_one_bucket, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_errors, s_setup, s_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
