/*  store_leader_test.c — the leader's lease and the epoch that fences its
    writes, against a real PostgreSQL: one leader at a time, a standby
    takes over only once the lease ran out (or was given up), a deposed
    leader cannot renew, its loads and writes are refused and change
    nothing, and a takeover waits for a fenced write in progress to commit. */
#include "fq_store.h"
#include "fq_error.h"
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include "fq_test_sql.h"

//  A lease short enough to wait out in a test.
#define S_LEASE_MS 300

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

//  Every test starts with nobody leading, and the last epoch unchanged.
static int s_setup(void **state)
{
    (void)state;
    PGconn *conn = fq_test_connect(s_conninfo);
    fq_test_exec(conn, "UPDATE fairq.leader SET lease_until = '-infinity', holder = ''", 0);
    PQfinish(conn);
    return 0;
}

//  Leads (or tries to), failing the test when the statement fails.
static fq_leader_t s_lead(fq_store_t *store, const char *holder, int64_t epoch, int lease_ms)
{
    fq_leader_t leader;
    int rc = fq_store_lead(store, holder, epoch, lease_ms, &leader);
    if (rc)
        fail_msg("lead: %s", fq_store_error(store));
    return leader;
}

static void test_one_leader_until_the_lease_runs_out(void **state)
{
    (void)state;
    fq_store_t *a = fq_test_store(s_conninfo), *b = fq_test_store(s_conninfo);
    fq_leader_t first = s_lead(a, "a@host:1", 0, S_LEASE_MS);
    assert_true(first.leading);
    assert_string_equal(first.holder, "a@host:1");
    assert_true(first.epoch > 0);

    //  b stands by while a's lease holds, and sees who leads
    fq_leader_t seen = s_lead(b, "b@host:2", 0, S_LEASE_MS);
    assert_false(seen.leading);
    assert_int_equal(seen.epoch, first.epoch);
    assert_string_equal(seen.holder, "a@host:1");
    assert_true(seen.ms_left > 0 && seen.ms_left <= S_LEASE_MS);

    //  Renewals keep it a's, at the same epoch, past the first lease
    for (int i = 0; i < 4; i++) {
        fq_test_sleep_ms(S_LEASE_MS / 3);
        fq_leader_t renewed = s_lead(a, "a@host:1", first.epoch, S_LEASE_MS);
        assert_true(renewed.leading);
        assert_int_equal(renewed.epoch, first.epoch);
        assert_false(s_lead(b, "b@host:2", 0, S_LEASE_MS).leading);
    }

    //  a stops renewing: b takes over once the lease ran out, one epoch on
    fq_test_sleep_ms(S_LEASE_MS + 50);
    fq_leader_t taken = s_lead(b, "b@host:2", 0, S_LEASE_MS);
    assert_true(taken.leading);
    assert_int_equal(taken.epoch, first.epoch + 1);
    assert_string_equal(taken.holder, "b@host:2");

    //  a wakes: deposed, its renewal refused, and told who leads now
    fq_leader_t deposed = s_lead(a, "a@host:1", first.epoch, S_LEASE_MS);
    assert_false(deposed.leading);
    assert_int_equal(deposed.epoch, taken.epoch);
    assert_string_equal(deposed.holder, "b@host:2");
    fq_store_destroy(&a);
    fq_store_destroy(&b);
}

static void test_a_resigned_lease_is_taken_at_once(void **state)
{
    (void)state;
    fq_store_t *a = fq_test_store(s_conninfo), *b = fq_test_store(s_conninfo);
    fq_leader_t first = s_lead(a, "a@host:1", 0, 60000);
    assert_true(first.leading);
    assert_false(s_lead(b, "b@host:2", 0, 60000).leading);
    assert_int_equal(fq_store_resign(a, "a@host:1", first.epoch), 0);
    fq_leader_t taken = s_lead(b, "b@host:2", 0, 60000);
    assert_true(taken.leading);
    assert_int_equal(taken.epoch, first.epoch + 1);
    //  Resigning a lease one does not hold changes nothing
    assert_int_equal(fq_store_resign(a, "a@host:1", first.epoch), 0);
    assert_false(s_lead(a, "a@host:1", 0, 60000).leading);
    fq_store_destroy(&a);
    fq_store_destroy(&b);
}

static void test_bad_arguments_are_refused(void **state)
{
    (void)state;
    fq_store_t *a = fq_test_store(s_conninfo);
    fq_leader_t leader;
    assert_int_equal(fq_store_lead(a, "", 0, S_LEASE_MS, &leader), FQ_EINVAL);
    assert_int_equal(fq_store_lead(a, "a", -1, S_LEASE_MS, &leader), FQ_EINVAL);
    assert_int_equal(fq_store_lead(a, "a", 0, 10, &leader), FQ_EINVAL);
    //  The function checks for itself too (applications may call it)
    PGconn *conn = fq_test_connect(s_conninfo);
    PGresult *res = PQexec(conn, "SELECT * FROM fairq.lead('a', 0, 5)");
    assert_int_equal(PQresultStatus(res), PGRES_FATAL_ERROR);
    assert_string_equal(PQresultErrorField(res, PG_DIAG_SQLSTATE), "22023");
    PQclear(res);
    PQfinish(conn);
    fq_store_destroy(&a);
}

//  A split request of n messages; their ids go to ids.
static int64_t s_request(fq_store_t *store, int n, int64_t *ids)
{
    char *recipients = fq_test_recipients("ld", n);
    fq_submit_t req = {.tenant = "acme",
                       .from = "news@acme.example",
                       .subject = "Hello {{name}}",
                       .body = "Dear {{ name }}",
                       .recipients_json = recipients};
    int64_t id = fq_test_submit_split(store, &req, NULL, 0);
    free(recipients);
    PGconn *conn = fq_test_connect(s_conninfo);
    char id_text[32];
    fq_test_param(id_text, sizeof id_text, id);
    PGresult *res = fq_test_query(
        conn, "SELECT id FROM fairq.messages WHERE request_id = $1 ORDER BY id", 1, id_text);
    assert_int_equal(PQntuples(res), n);
    for (int i = 0; i < n; i++)
        ids[i] = strtoll(PQgetvalue(res, i, 0), NULL, 10);
    PQclear(res);
    PQfinish(conn);
    return id;
}

//  a leads (its writes fenced by its epoch) and has a split request of n
//  messages, their ids in ids.
static int64_t s_lead_with_request(fq_store_t *a, int n, int64_t *ids)
{
    fq_leader_t first = s_lead(a, "a@host:1", 0, S_LEASE_MS);
    assert_true(first.leading);
    fq_store_set_epoch(a, first.epoch);
    return s_request(a, n, ids);
}

static void test_a_deposed_leaders_writes_are_refused(void **state)
{
    (void)state;
    fq_store_t *a = fq_test_store(s_conninfo), *b = fq_test_store(s_conninfo);
    int64_t ids[4];
    int64_t request = s_lead_with_request(a, 4, ids);
    //  And one not split yet
    char *recipients = fq_test_recipients("later", 3);
    fq_submit_t req = {.tenant = "acme",
                       .from = "news@acme.example",
                       .subject = "Hello {{name}}",
                       .body = "Dear {{ name }}",
                       .recipients_json = recipients};
    int64_t unsplit;
    assert_int_equal(fq_store_submit(a, &req, &unsplit), 0);
    free(recipients);

    //  While a leads, its loads and fenced writes go through
    fq_message_rows_t loaded;
    assert_int_equal(fq_store_load_messages(a, ids, 4, &loaded), 4);
    fq_message_rows_free(&loaded);
    fq_page_ask_t asks[] = {{request, 0, 10, NULL}};
    int counts[1];
    assert_int_equal(fq_store_next_ready_rows(a, asks, 1, &loaded, counts), 4);
    fq_message_rows_free(&loaded);
    fq_page_ask_t by_destination[] = {{request, 0, 10, "default"}};
    assert_int_equal(fq_store_next_ready_rows(a, by_destination, 1, &loaded, counts), 4);
    fq_message_rows_free(&loaded);
    assert_int_equal(fq_store_ack_batch(a, ids, 1), 1);

    fq_test_sleep_ms(S_LEASE_MS + 50);
    fq_leader_t taken = s_lead(b, "b@host:2", 0, S_LEASE_MS);
    assert_true(taken.leading);

    //  Now a can no longer load what it would hand out
    fq_message_rows_t rows;
    assert_int_equal(fq_store_load_messages(a, ids, 4, &rows), FQ_EDEPOSED);
    fq_message_rows_free(&rows);
    //  Nor page the rows it would hand out without loading them
    assert_int_equal(fq_store_next_ready_rows(a, asks, 1, &rows, counts), FQ_EDEPOSED);
    assert_int_equal(fq_store_next_ready_rows(a, by_destination, 1, &rows, counts), FQ_EDEPOSED);
    assert_int_equal(rows.count, 0);

    //  And every leader-only write of a is refused, and changes nothing
    assert_int_equal(fq_store_ack_batch(a, ids + 1, 1), FQ_EDEPOSED);
    assert_string_equal(fq_store_error_sqlstate(a), FQ_STORE_SQLSTATE_DEPOSED);
    fq_nack_t nack = {.id = ids[2], .permanent = false, .error = "451 later"};
    fq_retry_policy_t policy = {.base_ms = 1000, .cap_ms = 60000};
    assert_int_equal(fq_store_nack_batch(a, &nack, 1, &policy), FQ_EDEPOSED);
    fq_due_message_t due[4];
    assert_int_equal(fq_store_claim_due_retries(a, 4, 60, due), FQ_EDEPOSED);
    assert_int_equal(fq_store_finish_requests(a, 10), FQ_EDEPOSED);
    fq_advance_t advanced;
    assert_int_equal(fq_store_advance_scan(a, 0, 10, 100, &advanced), FQ_EDEPOSED);
    fq_prune_result_t pruned;
    assert_int_equal(fq_store_prune(a, 0, 100, &pruned), FQ_EDEPOSED);
    //  Its split is refused in its first round trip, and rolled back
    fq_split_result_t split;
    assert_int_equal(fq_store_split_chunk(a, unsplit, NULL, 0, 0, &split), FQ_EDEPOSED);
    assert_int_equal(split.split, 0);
    //  Still connected: a refusal is not a lost connection
    assert_true(fq_store_connected(a));

    PGconn *conn = fq_test_connect(s_conninfo);
    char id_text[32];
    fq_test_param(id_text, sizeof id_text, request);
    assert_int_equal(fq_test_int(conn,
                                 "SELECT count(*) FROM fairq.messages WHERE request_id = $1"
                                 " AND status = 'pending' AND try_count = 0",
                                 1, id_text),
                     3);
    assert_int_equal(fq_test_int(conn, "SELECT sent FROM fairq.requests WHERE id = $1", 1, id_text),
                     1);

    //  The new leader's writes, with its epoch, go through
    fq_store_set_epoch(b, taken.epoch);
    assert_int_equal(fq_store_ack_batch(b, ids + 1, 3), 3);
    //  And writes that carry no epoch (tools, tests) are not fenced: the
    //  refused split left its chunk, and a's session no transaction open
    fq_store_set_epoch(a, 0);
    assert_int_equal(fq_store_ack_batch(a, ids, 1), 0); //  Sent already: nothing to change
    assert_int_equal(fq_store_split_chunk(a, unsplit, NULL, 0, 0, &split), 1);
    assert_int_equal(split.split, 3);
    assert_true(split.last);
    PQfinish(conn);
    fq_store_destroy(&a);
    fq_store_destroy(&b);
}

typedef struct {
    fq_store_t *store;
    int64_t took_over_at;
} s_takeover_t;

static void *s_take_over(void *arg)
{
    s_takeover_t *takeover = arg;
    fq_leader_t leader;
    int rc = fq_store_lead(takeover->store, "b@host:2", 0, S_LEASE_MS, &leader);
    takeover->took_over_at = rc == 0 && leader.leading ? fq_test_now_ms() : -1;
    return NULL;
}

//  A fenced write in progress holds the takeover back until it commits, so
//  the new leader reads what the old one wrote last; the renewals of the
//  leader itself never wait for its own writes.
//  A leader that dies holding claimed retries: the next one releases them
//  as it starts, so they go out at once rather than when the claim's lease
//  ends; its own claims, and the acked and nacked, stay as they are.
static void test_a_new_leader_releases_the_old_ones_claims(void **state)
{
    (void)state;
    fq_store_t *a = fq_test_store(s_conninfo), *b = fq_test_store(s_conninfo);
    int64_t ids[4];
    int64_t request = s_lead_with_request(a, 4, ids);
    //  Four failures, due at once; a claims them (a lease of an hour)
    fq_nack_t nacks[4];
    for (int i = 0; i < 4; i++)
        nacks[i] = (fq_nack_t){.id = ids[i], .permanent = false, .error = "451 later"};
    fq_retry_policy_t soon = {.base_ms = 1, .cap_ms = 1};
    assert_int_equal(fq_store_nack_batch(a, nacks, 4, &soon), 4);
    fq_test_sleep_ms(20);
    fq_due_message_t due[8];
    assert_int_equal(fq_store_claim_due_retries(a, 8, 3600, due), 4);
    //  a's own release finds nothing of an earlier epoch
    assert_int_equal(fq_store_release_stale_claims(a), 0);
    //  Without an epoch there is no earlier leader
    fq_store_t *plain = fq_test_store(s_conninfo);
    assert_int_equal(fq_store_release_stale_claims(plain), 0);
    fq_store_destroy(&plain);

    //  a dies holding them; b takes over
    fq_test_sleep_ms(S_LEASE_MS + 50);
    fq_leader_t taken = s_lead(b, "b@host:2", 0, S_LEASE_MS);
    assert_true(taken.leading);
    fq_store_set_epoch(b, taken.epoch);
    assert_int_equal(fq_store_claim_due_retries(b, 8, 3600, due), 0);
    //  One of them was acked meanwhile (a late answer): not a retry any more
    PGconn *conn = fq_test_connect(s_conninfo);
    char id_text[32];
    fq_test_param(id_text, sizeof id_text, ids[3]);
    fq_test_exec(conn, "UPDATE fairq.messages SET status = 'sent' WHERE id = $1", 1, id_text);
    assert_int_equal(fq_store_release_stale_claims(b), 3);
    assert_int_equal(fq_store_claim_due_retries(b, 8, 3600, due), 3);
    //  Now b's own: released again by nobody but a later leader
    assert_int_equal(fq_store_release_stale_claims(b), 0);
    fq_test_param(id_text, sizeof id_text, request);
    assert_int_equal(fq_test_int(conn,
                                 "SELECT count(*) FROM fairq.messages WHERE request_id = $1"
                                 " AND status = 'failed' AND claimed_epoch = "
                                 "(SELECT epoch FROM fairq.leader)",
                                 1, id_text),
                     3);
    //  An ack and a nack clear the mark
    assert_int_equal(fq_store_ack_batch(b, ids, 1), 1);
    fq_nack_t again = {.id = ids[1], .permanent = false, .error = "451 again"};
    assert_int_equal(fq_store_nack_batch(b, &again, 1, &soon), 1);
    assert_int_equal(fq_test_int(conn,
                                 "SELECT count(*) FROM fairq.messages WHERE request_id = $1"
                                 " AND claimed_epoch IS NOT NULL AND status <> 'sent'",
                                 1, id_text),
                     1);
    PQfinish(conn);
    fq_store_destroy(&a);
    fq_store_destroy(&b);
}

static void test_a_takeover_waits_for_a_fenced_write(void **state)
{
    (void)state;
    fq_store_t *a = fq_test_store(s_conninfo), *b = fq_test_store(s_conninfo);
    fq_leader_t first = s_lead(a, "a@host:1", 0, S_LEASE_MS);
    assert_true(first.leading);
    char epoch[32];
    fq_test_param(epoch, sizeof epoch, first.epoch);

    //  A transaction of a's that passed the fence (as a split does) and
    //  has not committed yet
    PGconn *writer = fq_test_connect(s_conninfo);
    fq_test_exec(writer, "BEGIN", 0);
    PQclear(fq_test_query(writer, "SELECT fairq.fence($1::bigint)", 1, epoch));

    //  a renews meanwhile without waiting
    int64_t started = fq_test_now_ms();
    assert_true(s_lead(a, "a@host:1", first.epoch, S_LEASE_MS).leading);
    assert_true(fq_test_now_ms() - started < S_LEASE_MS);

    fq_test_sleep_ms(S_LEASE_MS + 50);
    s_takeover_t takeover = {.store = b};
    pthread_t thread;
    assert_int_equal(pthread_create(&thread, NULL, s_take_over, &takeover), 0);
    fq_test_sleep_ms(300);
    int64_t committed_at = fq_test_now_ms();
    fq_test_exec(writer, "COMMIT", 0);
    pthread_join(thread, NULL);
    assert_true(takeover.took_over_at >= committed_at);

    //  After the takeover, the same fence refuses
    PGresult *res = PQexecParams(writer, "SELECT fairq.fence($1::bigint)", 1, NULL,
                                 (const char *const[]){epoch}, NULL, NULL, 0);
    assert_int_equal(PQresultStatus(res), PGRES_FATAL_ERROR);
    assert_string_equal(PQresultErrorField(res, PG_DIAG_SQLSTATE), FQ_STORE_SQLSTATE_DEPOSED);
    PQclear(res);
    PQfinish(writer);
    fq_store_destroy(&a);
    fq_store_destroy(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_one_leader_until_the_lease_runs_out, s_setup),
        cmocka_unit_test_setup(test_a_resigned_lease_is_taken_at_once, s_setup),
        cmocka_unit_test_setup(test_bad_arguments_are_refused, s_setup),
        cmocka_unit_test_setup(test_a_deposed_leaders_writes_are_refused, s_setup),
        cmocka_unit_test_setup(test_a_takeover_waits_for_a_fenced_write, s_setup),
        cmocka_unit_test_setup(test_a_new_leader_releases_the_old_ones_claims, s_setup),
    };
    return cmocka_run_group_tests(tests, s_group_setup, s_group_teardown);
}
