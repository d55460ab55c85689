/*  store_status_test.c — batched status writes against a real PostgreSQL:
    acks mark messages sent (once), nacks schedule retries with bounded
    exponential backoff or make messages dead, the request's counters
    follow, the ack stays a HOT update, and a batch hit by a lost
    connection is all or nothing. */
#include "fq_store.h"
#include "fq_error.h"
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include "fq_test_sql.h"

//  Messages of the HOT measurement, and the ack batch the dispatcher uses.
#define S_HOT_MESSAGES 10000
#define S_ACK_BATCH    500

//  Share of the acks that must be HOT updates.
#define S_HOT_SHARE 0.95

//  How long the statistics collector may take to report.
#define S_STATS_DEADLINE_MS 30000

//  Messages nacked together in the backoff test: enough to see the jitter.
#define S_BACKOFF_MESSAGES 200

//  Longest last_error kept (the nack statement keeps its first 2000 bytes).
#define S_ERROR_MAX 2000

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

//  A split request of n messages; their ids, in order, go to ids.
static int64_t s_request(fq_store_t *store, PGconn *conn, int n, int max_attempts, int64_t *ids)
{
    char *recipients = fq_test_recipients("st", n);
    fq_submit_t req = {.tenant = "acme",
                       .from = "news@acme.example",
                       .subject = "Hello {{name}}",
                       .body = "Dear {{ name }}",
                       .recipients_json = recipients,
                       .max_attempts = max_attempts};
    int64_t id = fq_test_submit_split(store, &req, NULL, 0);
    free(recipients);
    char id_text[32];
    fq_test_param(id_text, sizeof id_text, id);
    PGresult *res = fq_test_query(conn,
                                  "SELECT id FROM fairq.messages WHERE request_id = $1"
                                  " ORDER BY id",
                                  1, id_text);
    assert_int_equal(PQntuples(res), n);
    for (int i = 0; i < n; i++)
        ids[i] = strtoll(PQgetvalue(res, i, 0), NULL, 10);
    PQclear(res);
    return id;
}

//  The request's counters as "sent/failed/dead".
static char *s_counters(PGconn *conn, int64_t request_id)
{
    char id_text[32];
    return fq_test_text(conn,
                        "SELECT format('%s/%s/%s', sent, failed, dead) FROM fairq.requests"
                        " WHERE id = $1",
                        1, fq_test_param(id_text, sizeof id_text, request_id));
}

static void s_expect_counters(PGconn *conn, int64_t request_id, const char *wanted)
{
    char *counters = s_counters(conn, request_id);
    assert_string_equal(counters, wanted);
    free(counters);
}

//  How many of the request's messages are in status.
static int64_t s_count_status(PGconn *conn, int64_t request_id, const char *status)
{
    char id_text[32];
    return fq_test_int(conn,
                       "SELECT count(*) FROM fairq.messages WHERE request_id = $1"
                       " AND status = $2::fairq.message_status",
                       2, fq_test_param(id_text, sizeof id_text, request_id), status);
}

//  n_tup_upd and n_tup_hot_upd of fairq.messages, as the server reports.
static void s_update_stats(PGconn *conn, int64_t *updates, int64_t *hot)
{
    PGresult *res = fq_test_query(conn,
                                  "SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables"
                                  " WHERE relid = 'fairq.messages'::regclass",
                                  0);
    *updates = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
    *hot = strtoll(PQgetvalue(res, 0, 1), NULL, 10);
    PQclear(res);
}

//  Acking 10,000 messages in batches rewrites them in place: at least 95%
//  of the updates are HOT, so acks write no index entries.
static void test_ack_updates_stay_hot(void **unused)
{
    (void)unused;
    fq_store_t *splitter = fq_test_store(s_conninfo);
    PGconn *conn = fq_test_connect(s_conninfo);
    int64_t *ids = malloc(S_HOT_MESSAGES * sizeof *ids);
    assert_non_null(ids);
    s_request(splitter, conn, S_HOT_MESSAGES, 0, ids);
    fq_store_destroy(&splitter);
    int64_t updates_before, hot_before;
    s_update_stats(conn, &updates_before, &hot_before);

    fq_store_t *store = fq_test_store(s_conninfo);
    for (int i = 0; i < S_HOT_MESSAGES; i += S_ACK_BATCH)
        assert_int_equal(fq_store_ack_batch(store, ids + i, S_ACK_BATCH), S_ACK_BATCH);
    //  The backend reports its statistics at the latest when it exits
    fq_store_destroy(&store);
    int64_t updates, hot;
    int64_t deadline = fq_test_now_ms() + S_STATS_DEADLINE_MS;
    do {
        fq_test_sleep_ms(100);
        s_update_stats(conn, &updates, &hot);
    } while (updates - updates_before < S_HOT_MESSAGES && fq_test_now_ms() < deadline);
    updates -= updates_before;
    hot -= hot_before;
    print_message("%lld updates, %lld HOT (%.1f%%)\n", (long long)updates, (long long)hot,
                  updates ? 100.0 * (double)hot / (double)updates : 0.0);
    assert_true(updates >= S_HOT_MESSAGES);
    assert_true((double)hot >= S_HOT_SHARE * (double)updates);
    free(ids);
    PQfinish(conn);
}

//  Acks mark messages sent and count them once: a second ack, an unknown
//  id, an id twice in a batch or a cancelled message change nothing.
static void test_acks_mark_sent_once(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    PGconn *conn = fq_test_connect(s_conninfo);
    int64_t ids[1000], other_ids[10];
    int64_t request = s_request(store, conn, 1000, 0, ids);
    int64_t other = s_request(store, conn, 10, 0, other_ids);
    for (int i = 0; i < 1000; i += 250)
        assert_int_equal(fq_store_ack_batch(store, ids + i, 250), 250);
    assert_int_equal(s_count_status(conn, request, "sent"), 1000);
    s_expect_counters(conn, request, "1000/0/0");
    char id_text[32];
    fq_test_param(id_text, sizeof id_text, request);
    assert_int_equal(fq_test_int(conn,
                                 "SELECT count(*) FROM fairq.messages WHERE request_id = $1"
                                 " AND try_count = 1 AND last_attempt_at IS NOT NULL"
                                 " AND next_attempt_at IS NULL",
                                 1, id_text),
                     1000);

    //  Duplicates from a reconnecting sender are harmless
    for (int i = 0; i < 1000; i += 250)
        assert_int_equal(fq_store_ack_batch(store, ids + i, 250), 0);
    s_expect_counters(conn, request, "1000/0/0");
    assert_int_equal(fq_store_ack_batch(store, (int64_t[]){INT64_MAX - 1}, 1), 0);
    assert_int_equal(fq_store_ack_batch(store, NULL, 0), 0);
    int64_t twice[] = {other_ids[0], other_ids[0], other_ids[1]};
    assert_int_equal(fq_store_ack_batch(store, twice, 3), 2);
    s_expect_counters(conn, other, "2/0/0");
    fq_test_param(id_text, sizeof id_text, other_ids[2]);
    fq_test_exec(conn, "UPDATE fairq.messages SET status = 'cancelled' WHERE id = $1", 1, id_text);
    assert_int_equal(fq_store_ack_batch(store, &other_ids[2], 1), 0);
    //  One batch may span requests; each request counts its own
    int64_t mixed[] = {other_ids[3], other_ids[4], ids[0]};
    assert_int_equal(fq_store_ack_batch(store, mixed, 3), 2);
    s_expect_counters(conn, other, "4/0/0");
    s_expect_counters(conn, request, "1000/0/0");
    PQfinish(conn);
    fq_store_destroy(&store);
}

//  A transient failure schedules a retry: failed, with next_attempt_at in
//  the future between half and all of min(cap, base * 2^(attempt-1)), and
//  the attempt, its time and the error kept.
static void test_transient_nack_backs_off(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    PGconn *conn = fq_test_connect(s_conninfo);
    int64_t ids[S_BACKOFF_MESSAGES];
    int64_t request = s_request(store, conn, S_BACKOFF_MESSAGES, 10, ids);
    char id_text[32];
    fq_test_param(id_text, sizeof id_text, request);
    fq_retry_policy_t policy = {.base_ms = 1000, .cap_ms = 5000};
    fq_nack_t nacks[S_BACKOFF_MESSAGES];
    for (int attempt = 1; attempt <= 5; attempt++) {
        char error[64];
        snprintf(error, sizeof error, "421 4.7.0 try again later (%d)", attempt);
        for (int i = 0; i < S_BACKOFF_MESSAGES; i++)
            nacks[i] = (fq_nack_t){.id = ids[i], .permanent = false, .error = error};
        int changed = fq_store_nack_batch(store, nacks, S_BACKOFF_MESSAGES, &policy);
        if (changed != S_BACKOFF_MESSAGES)
            fail_msg("attempt %d: %d %s", attempt, changed, fq_store_error(store));
        double full = policy.base_ms * (double)(1 << (attempt - 1));
        full = full < policy.cap_ms ? full : policy.cap_ms;
        char attempt_text[16];
        fq_test_param(attempt_text, sizeof attempt_text, attempt);
        PGresult *res = fq_test_query(
            conn,
            "SELECT count(*), min(d), max(d), bool_and(status = 'failed' AND try_count = $2"
            "   AND last_error = $3 AND next_attempt_at > clock_timestamp()"
            "   AND last_attempt_at > clock_timestamp() - interval '1 minute')"
            " FROM (SELECT *, extract(epoch FROM next_attempt_at - last_attempt_at) * 1000 AS d"
            "       FROM fairq.messages WHERE request_id = $1) m",
            3, id_text, attempt_text, error);
        double low = atof(PQgetvalue(res, 0, 1)), high = atof(PQgetvalue(res, 0, 2));
        print_message("attempt %d: delays %.0f..%.0f ms, bounds %.0f..%.0f ms\n", attempt, low,
                      high, full / 2, full);
        assert_int_equal(atoi(PQgetvalue(res, 0, 0)), S_BACKOFF_MESSAGES);
        assert_string_equal(PQgetvalue(res, 0, 3), "t");
        //  Within the bounds (to the microsecond intervals keep)...
        assert_true(low >= full / 2 - 0.01);
        assert_true(high <= full + 0.01);
        //  ...and spread across them: the jitter that keeps retries apart
        assert_true(high - low > full / 4);
        PQclear(res);
        //  Each message counts once in failed, however often it failed
        s_expect_counters(conn, request, "0/200/0");
    }
    PQfinish(conn);
    fq_store_destroy(&store);
}

//  A permanent failure makes the message dead at once, with the sender's
//  text (kept byte for byte, cut at 2000 bytes); it is final after that.
static void test_permanent_nack_is_dead(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    PGconn *conn = fq_test_connect(s_conninfo);
    int64_t ids[4];
    int64_t request = s_request(store, conn, 4, 5, ids);
    fq_retry_policy_t policy = {.base_ms = 1000, .cap_ms = 60000};
    const char *error = "550 5.1.1 <o'neil@example.com>: \"user\" unknown \\ caf\xc3\xa9, {x}";
    char *long_error = malloc(3 * S_ERROR_MAX + 1);
    assert_non_null(long_error);
    memset(long_error, 'e', 3 * S_ERROR_MAX);
    long_error[3 * S_ERROR_MAX] = 0;
    fq_nack_t nacks[] = {{ids[0], true, error, 0, false},
                         {ids[1], true, long_error, 0, false},
                         {ids[2], false, "451 later", 0, false},
                         {ids[3], true, NULL, 0, false}};
    assert_int_equal(fq_store_nack_batch(store, nacks, 4, &policy), 4);
    s_expect_counters(conn, request, "0/1/3");
    char id_text[32];
    fq_test_param(id_text, sizeof id_text, ids[0]);
    PGresult *res = fq_test_query(conn,
                                  "SELECT status, last_error, next_attempt_at IS NULL, try_count"
                                  " FROM fairq.messages WHERE id = $1",
                                  1, id_text);
    assert_string_equal(PQgetvalue(res, 0, 0), "dead");
    assert_string_equal(PQgetvalue(res, 0, 1), error);
    assert_string_equal(PQgetvalue(res, 0, 2), "t");
    assert_string_equal(PQgetvalue(res, 0, 3), "1");
    PQclear(res);
    fq_test_param(id_text, sizeof id_text, ids[1]);
    assert_int_equal(fq_test_int(conn,
                                 "SELECT octet_length(last_error) FROM fairq.messages"
                                 " WHERE id = $1",
                                 1, id_text),
                     S_ERROR_MAX);
    //  Dead is final: neither an ack nor another nack changes it
    assert_int_equal(fq_store_ack_batch(store, ids, 2), 0);
    assert_int_equal(fq_store_nack_batch(store, nacks, 2, &policy), 0);
    s_expect_counters(conn, request, "0/1/3");
    assert_int_equal(s_count_status(conn, request, "dead"), 3);
    free(long_error);
    PQfinish(conn);
    fq_store_destroy(&store);
}

//  A sender's error text that is not UTF-8 (a server answering in
//  Latin-1) is still recorded, its bad bytes replaced, with the rest of
//  the batch: one odd reply never blocks status writes.
static void test_nack_error_not_utf8(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    PGconn *conn = fq_test_connect(s_conninfo);
    int64_t ids[3];
    int64_t request = s_request(store, conn, 3, 5, ids);
    fq_retry_policy_t policy = {.base_ms = 1000, .cap_ms = 60000};
    fq_nack_t nacks[] = {{ids[0], true, "550 Empf\xe4nger unbekannt \xff\xfe", 0, false},
                         {ids[1], false, "451 caf\xc3\xa9 \xe2\x82 cut \xc3", 0, false},
                         {ids[2], false, "421 plain", 0, false}};
    int changed = fq_store_nack_batch(store, nacks, 3, &policy);
    if (changed != 3)
        fail_msg("%d %s", changed, fq_store_error(store));
    s_expect_counters(conn, request, "0/2/1");
    char id_text[32];
    char *error = fq_test_text(conn, "SELECT last_error FROM fairq.messages WHERE id = $1", 1,
                               fq_test_param(id_text, sizeof id_text, ids[0]));
    assert_string_equal(error, "550 Empf?nger unbekannt ??");
    free(error);
    error = fq_test_text(conn, "SELECT last_error FROM fairq.messages WHERE id = $1", 1,
                         fq_test_param(id_text, sizeof id_text, ids[1]));
    assert_string_equal(error, "451 caf\xc3\xa9 ?? cut ?");
    free(error);
    PQfinish(conn);
    fq_store_destroy(&store);
}

//  The request's max_attempts-th failure makes a message dead, and the
//  failed counter hands it over to dead.
static void test_last_attempt_is_dead(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    PGconn *conn = fq_test_connect(s_conninfo);
    int64_t ids[2];
    int64_t request = s_request(store, conn, 2, 3, ids);
    fq_retry_policy_t policy = {.base_ms = 10, .cap_ms = 10};
    fq_nack_t nack = {.id = ids[0], .permanent = false, .error = "421 busy"};
    const char *after[] = {"0/1/0", "0/1/0", "0/0/1"};
    const char *status[] = {"failed", "failed", "dead"};
    char id_text[32];
    fq_test_param(id_text, sizeof id_text, ids[0]);
    for (int attempt = 0; attempt < 3; attempt++) {
        assert_int_equal(fq_store_nack_batch(store, &nack, 1, &policy), 1);
        s_expect_counters(conn, request, after[attempt]);
        char *got =
            fq_test_text(conn, "SELECT status::text FROM fairq.messages WHERE id = $1", 1, id_text);
        assert_string_equal(got, status[attempt]);
        free(got);
    }
    assert_int_equal(fq_test_int(conn,
                                 "SELECT count(*) FROM fairq.messages WHERE id = $1"
                                 " AND try_count = 3 AND next_attempt_at IS NULL"
                                 " AND last_error = '421 busy'",
                                 1, id_text),
                     1);
    assert_int_equal(fq_store_nack_batch(store, &nack, 1, &policy), 0);
    //  max_attempts 1: the first failure is the last
    int64_t once[1];
    int64_t single = s_request(store, conn, 1, 1, once);
    nack.id = once[0];
    assert_int_equal(fq_store_nack_batch(store, &nack, 1, &policy), 1);
    s_expect_counters(conn, single, "0/0/1");
    PQfinish(conn);
    fq_store_destroy(&store);
}

//  A deferral (the receiver throttled, 0016) costs no attempt and never
//  makes a message dead, even one at its last attempt; it waits its
//  back-off (or the Retry-After) as failed, counted once as failed, and a
//  failure after it counts its attempt as usual.
static void test_deferral_costs_no_attempt(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    PGconn *conn = fq_test_connect(s_conninfo);
    int64_t ids[1];
    int64_t request = s_request(store, conn, 1, 1, ids); //  max_attempts 1
    //  A minute's back-off: the check that it waits must not race a loaded
    //  machine (10 ms was over before the check read it, now and then)
    fq_retry_policy_t policy = {.base_ms = 60000, .cap_ms = 60000};
    fq_nack_t nack = {.id = ids[0], .error = "421 4.7.0 try later", .deferred = true};
    char id_text[32];
    fq_test_param(id_text, sizeof id_text, ids[0]);
    for (int deferral = 0; deferral < 3; deferral++) {
        assert_int_equal(fq_store_nack_batch(store, &nack, 1, &policy), 1);
        s_expect_counters(conn, request, "0/1/0");
    }
    assert_int_equal(fq_test_int(conn,
                                 "SELECT count(*) FROM fairq.messages WHERE id = $1"
                                 " AND status = 'failed' AND try_count = 0"
                                 " AND next_attempt_at > now()"
                                 " AND last_error = '421 4.7.0 try later'",
                                 1, id_text),
                     1);
    //  The receiver's Retry-After holds it as it holds a failure
    nack.retry_after_s = 600;
    assert_int_equal(fq_store_nack_batch(store, &nack, 1, &policy), 1);
    assert_int_equal(fq_test_int(conn,
                                 "SELECT count(*) FROM fairq.messages WHERE id = $1"
                                 " AND next_attempt_at > now() + interval '590 seconds'",
                                 1, id_text),
                     1);
    //  A real failure then is its one attempt: dead
    nack = (fq_nack_t){.id = ids[0], .error = "450 mailbox busy"};
    assert_int_equal(fq_store_nack_batch(store, &nack, 1, &policy), 1);
    s_expect_counters(conn, request, "0/0/1");
    PQfinish(conn);
    fq_store_destroy(&store);
}

//  A message that failed and then went through counts as sent, no longer
//  as failed, with both attempts counted.
static void test_failed_then_acked(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    PGconn *conn = fq_test_connect(s_conninfo);
    int64_t ids[3];
    int64_t request = s_request(store, conn, 3, 5, ids);
    fq_retry_policy_t policy = {.base_ms = 1000, .cap_ms = 60000};
    fq_nack_t nacks[] = {{ids[0], false, "421 busy", 0, false},
                         {ids[1], false, "421 busy", 0, false}};
    assert_int_equal(fq_store_nack_batch(store, nacks, 2, &policy), 2);
    s_expect_counters(conn, request, "0/2/0");
    int64_t acks[] = {ids[0], ids[2]};
    assert_int_equal(fq_store_ack_batch(store, acks, 2), 2);
    s_expect_counters(conn, request, "2/1/0");
    char id_text[32];
    fq_test_param(id_text, sizeof id_text, ids[0]);
    assert_int_equal(fq_test_int(conn,
                                 "SELECT count(*) FROM fairq.messages WHERE id = $1"
                                 " AND status = 'sent' AND try_count = 2"
                                 " AND next_attempt_at IS NULL",
                                 1, id_text),
                     1);
    PQfinish(conn);
    fq_store_destroy(&store);
}

//  When the database connection is lost, an ack batch fails whole with
//  "could not apply acks: ...", nothing of it is written, and after a
//  reconnect the same batch applies fully.
static void test_lost_connection_fails_whole_batch(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    PGconn *conn = fq_test_connect(s_conninfo);
    int64_t ids[300];
    int64_t request = s_request(store, conn, 300, 5, ids);

    fq_test_kill_store_backends(conn, S_STATS_DEADLINE_MS);
    int rc = fq_store_ack_batch(store, ids, 300);
    print_message("%s\n", fq_store_error(store));
    assert_int_equal(rc, FQ_EDB);
    const char *prefix = "could not apply acks: ";
    assert_memory_equal(fq_store_error(store), prefix, strlen(prefix));
    assert_true(strlen(fq_store_error(store)) > strlen(prefix));
    assert_false(fq_store_connected(store));
    assert_int_equal(s_count_status(conn, request, "pending"), 300);
    s_expect_counters(conn, request, "0/0/0");

    assert_int_equal(fq_store_reconnect(store), 0);
    assert_true(fq_store_connected(store));
    assert_int_equal(fq_store_ack_batch(store, ids, 300), 300);
    assert_int_equal(s_count_status(conn, request, "sent"), 300);
    s_expect_counters(conn, request, "300/0/0");

    //  Nacks likewise
    int64_t more[10];
    int64_t second = s_request(store, conn, 10, 5, more);
    fq_test_kill_store_backends(conn, S_STATS_DEADLINE_MS);
    fq_nack_t nacks[10];
    for (int i = 0; i < 10; i++)
        nacks[i] = (fq_nack_t){.id = more[i], .permanent = i % 2, .error = "421 busy"};
    fq_retry_policy_t policy = {.base_ms = 1000, .cap_ms = 60000};
    assert_int_equal(fq_store_nack_batch(store, nacks, 10, &policy), FQ_EDB);
    assert_non_null(strstr(fq_store_error(store), "could not apply nacks: "));
    s_expect_counters(conn, second, "0/0/0");
    assert_int_equal(fq_store_reconnect(store), 0);
    assert_int_equal(fq_store_nack_batch(store, nacks, 10, &policy), 10);
    s_expect_counters(conn, second, "0/5/5");
    PQfinish(conn);
    fq_store_destroy(&store);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        //  First, while no other test's updates are in the statistics
        cmocka_unit_test(test_ack_updates_stay_hot),
        cmocka_unit_test(test_acks_mark_sent_once),
        cmocka_unit_test(test_transient_nack_backs_off),
        cmocka_unit_test(test_permanent_nack_is_dead),
        cmocka_unit_test(test_nack_error_not_utf8),
        cmocka_unit_test(test_last_attempt_is_dead),
        cmocka_unit_test(test_deferral_costs_no_attempt),
        cmocka_unit_test(test_failed_then_acked),
        cmocka_unit_test(test_lost_connection_fails_whole_batch),
    };
    return cmocka_run_group_tests(tests, s_group_setup, s_group_teardown);
}
