/*  store_holds_test.c — operators' holds against a real PostgreSQL: a
    hold of a tenant, a destination or all is placed once however often it
    is asked, released once, NOTIFYs the schedulers, keeps its retries
    unclaimed; and a tenant's oldest due age counts only the work fairq
    would send now (not paused, held, scheduled later nor backing off). */
#include "fq_store.h"
#include "fq_error.h"
#include "fq_store_holds.h"
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include "fq_test_sql.h"

//  How old the test's messages are made, in seconds, and the slack a
//  figure in whole seconds may have on a slow machine.
#define S_AGE_S   100
#define S_SLACK_S 5

static char s_conninfo[128];

static int s_group_setup(void **state)
{
    (void)state;
    const char *tenants[] = {"acme", "beta", NULL};
    return fq_test_db_prepare(s_conninfo, sizeof s_conninfo, tenants, NULL);
}

static int s_group_teardown(void **state)
{
    (void)state;
    fq_test_db_drop();
    return 0;
}

//  A split request of acme of n messages. Returns its id.
static int64_t s_request(fq_store_t *store, int n)
{
    char *recipients = fq_test_recipients("ho", n);
    fq_submit_t req = {.tenant = "acme",
                       .from = "news@acme.example",
                       .subject = "Hello {{name}}",
                       .body = "Dear {{ name }}",
                       .recipients_json = recipients};
    int64_t id = fq_test_submit_split(store, &req, NULL, 0);
    free(recipients);
    return id;
}

static void s_release_everything(PGconn *conn)
{
    fq_test_exec(conn, "DELETE FROM fairq.holds", 0);
}

static void test_hold_is_idempotent_and_released_once(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    PGconn *conn = fq_test_connect(s_conninfo);
    PGconn *listener = fq_test_connect(s_conninfo);
    fq_test_exec(listener, "LISTEN fairq_requests", 0);
    s_release_everything(conn);

    fq_hold_t hold;
    bool created = false;
    assert_int_equal(
        fq_store_hold_put(store, FQ_HOLD_TENANT, "acme", "abuse report", "ops", &hold, &created),
        0);
    assert_true(created);
    assert_int_equal(hold.scope, FQ_HOLD_TENANT);
    assert_string_equal(hold.name, "acme");
    assert_true(hold.tenant_id > 0);
    assert_string_equal(hold.reason, "abuse report");
    assert_string_equal(hold.created_by, "ops");
    assert_true(hold.created_at > 0);

    //  Its change woke the schedulers, with an empty payload
    PQconsumeInput(listener);
    PGnotify *notify = PQnotifies(listener);
    assert_non_null(notify);
    assert_string_equal(notify->extra, "");
    PQfreemem(notify);

    //  Again: nothing changes, the first reason stays
    assert_int_equal(
        fq_store_hold_put(store, FQ_HOLD_TENANT, "acme", "another", "someone", &hold, &created), 0);
    assert_false(created);
    assert_string_equal(hold.reason, "abuse report");
    assert_int_equal(fq_test_int(conn, "SELECT count(*) FROM fairq.holds", 0), 1);

    assert_int_equal(
        fq_store_hold_put(store, FQ_HOLD_DESTINATION, "default", NULL, "ops", NULL, &created), 0);
    assert_true(created);
    //  All names nothing, whatever name comes with it
    assert_int_equal(fq_store_hold_put(store, FQ_HOLD_ALL, "ignored", "", "ops", &hold, &created),
                     0);
    assert_string_equal(hold.name, "");

    fq_hold_list_t list;
    assert_int_equal(fq_store_hold_list(store, &list), 3);
    assert_int_equal(list.rows[0].scope, FQ_HOLD_ALL);
    assert_int_equal(list.rows[1].scope, FQ_HOLD_TENANT);
    assert_int_equal(list.rows[2].scope, FQ_HOLD_DESTINATION);
    assert_string_equal(list.rows[2].name, "default");
    fq_hold_list_free(&list);

    //  What does not exist, or cannot be written, is refused in words
    assert_int_equal(fq_store_hold_put(store, FQ_HOLD_TENANT, "nobody", NULL, "ops", NULL, NULL),
                     FQ_ENOTFOUND);
    assert_non_null(strstr(fq_store_error(store), "tenant \"nobody\" does not exist"));
    assert_int_equal(
        fq_store_hold_put(store, FQ_HOLD_DESTINATION, "nowhere", NULL, "ops", NULL, NULL),
        FQ_ENOTFOUND);
    char reason[FQ_HOLD_REASON_MAX + 2];
    memset(reason, 'r', sizeof reason - 1);
    reason[sizeof reason - 1] = 0;
    assert_int_equal(fq_store_hold_put(store, FQ_HOLD_TENANT, "beta", reason, "ops", NULL, NULL),
                     FQ_EINVAL);
    assert_int_equal(fq_store_hold_put(store, FQ_HOLD_TENANT, "beta", NULL, "", NULL, NULL),
                     FQ_EINVAL);
    //  The schema holds the same limit
    reason[FQ_HOLD_REASON_MAX] = 0;
    assert_int_equal(fq_store_hold_put(store, FQ_HOLD_TENANT, "beta", reason, "ops", NULL, NULL),
                     0);
    assert_int_equal(fq_store_hold_release(store, FQ_HOLD_TENANT, "beta", NULL), 0);

    //  Released once; then not held
    assert_int_equal(fq_store_hold_release(store, FQ_HOLD_TENANT, "acme", &hold), 0);
    assert_string_equal(hold.reason, "abuse report");
    assert_int_equal(fq_store_hold_release(store, FQ_HOLD_TENANT, "acme", NULL), FQ_ENOTFOUND);
    assert_non_null(strstr(fq_store_error(store), "tenant \"acme\" is not held"));
    assert_int_equal(fq_store_hold_release(store, FQ_HOLD_TENANT, "nobody", NULL), FQ_ENOTFOUND);
    assert_int_equal(fq_store_hold_release(store, FQ_HOLD_ALL, NULL, NULL), 0);
    assert_int_equal(fq_store_hold_release(store, FQ_HOLD_ALL, NULL, NULL), FQ_ENOTFOUND);
    assert_int_equal(fq_store_hold_release(store, FQ_HOLD_DESTINATION, "default", NULL), 0);
    assert_int_equal(fq_store_hold_list(store, &list), 0);
    fq_hold_list_free(&list);

    fq_hold_scope_t scope;
    assert_int_equal(fq_hold_scope_parse("destination", &scope), 0);
    assert_int_equal(scope, FQ_HOLD_DESTINATION);
    assert_int_equal(fq_hold_scope_parse("everything", &scope), FQ_EINVAL);
    PQfinish(listener);
    PQfinish(conn);
    fq_store_destroy(&store);
}

//  Makes request's messages failed and due a second ago.
static void s_fail_due(PGconn *conn, int64_t request)
{
    char id[32];
    fq_test_param(id, sizeof id, request);
    fq_test_exec(conn,
                 "UPDATE fairq.messages SET status = 'failed', claimed_epoch = NULL,"
                 " next_attempt_at = now() - interval '1 s' WHERE request_id = $1",
                 1, id);
}

static void test_held_retries_are_not_claimed(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    PGconn *conn = fq_test_connect(s_conninfo);
    s_release_everything(conn);
    int64_t request = s_request(store, 3);
    fq_due_message_t claimed[8];
    const fq_hold_scope_t scopes[] = {FQ_HOLD_TENANT, FQ_HOLD_DESTINATION, FQ_HOLD_ALL};
    const char *names[] = {"acme", "default", NULL};
    for (size_t i = 0; i < sizeof scopes / sizeof scopes[0]; i++) {
        s_fail_due(conn, request);
        assert_int_equal(fq_store_hold_put(store, scopes[i], names[i], NULL, "ops", NULL, NULL), 0);
        assert_int_equal(fq_store_claim_due_retries(store, 8, 60, claimed), 0);
        //  Untouched: no attempt counted, still due
        char id[32];
        fq_test_param(id, sizeof id, request);
        assert_int_equal(fq_test_int(conn,
                                     "SELECT count(*) FROM fairq.messages WHERE request_id = $1"
                                     " AND try_count = 0 AND next_attempt_at <= now()",
                                     1, id),
                         3);
        assert_int_equal(fq_store_hold_release(store, scopes[i], names[i], NULL), 0);
        assert_int_equal(fq_store_claim_due_retries(store, 8, 60, claimed), 3);
    }
    //  Another tenant's hold holds nothing of acme's
    s_fail_due(conn, request);
    assert_int_equal(fq_store_hold_put(store, FQ_HOLD_TENANT, "beta", NULL, "ops", NULL, NULL), 0);
    assert_int_equal(fq_store_claim_due_retries(store, 8, 60, claimed), 3);
    s_release_everything(conn);
    fq_test_exec(conn, "UPDATE fairq.requests SET status = 'cancelled'", 0);
    PQfinish(conn);
    fq_store_destroy(&store);
}

//  acme's oldest due age, checked within the slack, and whether it is held.
static void s_expect_due(fq_store_t *store, int64_t age_s, bool held)
{
    fq_tenant_info_t info;
    assert_int_equal(fq_store_tenant_get(store, "acme", &info), 0);
    if (age_s == 0)
        assert_int_equal(info.oldest_due_s, 0);
    else
        assert_in_range(info.oldest_due_s, age_s - S_SLACK_S, age_s + S_SLACK_S);
    assert_int_equal(info.held, held ? 1 : 0);
}

static void test_oldest_due_counts_only_work_due_now(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    PGconn *conn = fq_test_connect(s_conninfo);
    s_release_everything(conn);
    fq_test_exec(conn, "UPDATE fairq.requests SET status = 'cancelled'", 0);
    s_expect_due(store, 0, false);

    int64_t request = s_request(store, 4);
    char id[32], age[32];
    fq_test_param(id, sizeof id, request);
    fq_test_param(age, sizeof age, S_AGE_S);
    fq_test_exec(conn,
                 "UPDATE fairq.messages SET created_at = now() - make_interval(secs => $2::int)"
                 " WHERE request_id = $1",
                 2, id, age);
    fq_test_exec(conn,
                 "UPDATE fairq.requests SET status = 'active',"
                 " send_at = now() - make_interval(secs => $2::int),"
                 " created_at = now() - make_interval(secs => $2::int) WHERE id = $1",
                 2, id, age);
    s_expect_due(store, S_AGE_S, false);

    //  Paused: not due, though oldest_pending_age_s still counts it
    fq_test_exec(conn, "UPDATE fairq.requests SET status = 'paused' WHERE id = $1", 1, id);
    s_expect_due(store, 0, false);
    fq_tenant_info_t info;
    assert_int_equal(fq_store_tenant_get(store, "acme", &info), 0);
    assert_true(info.oldest_pending_s >= S_AGE_S - S_SLACK_S);
    fq_test_exec(conn, "UPDATE fairq.requests SET status = 'active' WHERE id = $1", 1, id);
    s_expect_due(store, S_AGE_S, false);

    //  Held, in each of the three ways
    assert_int_equal(fq_store_hold_put(store, FQ_HOLD_TENANT, "acme", NULL, "ops", NULL, NULL), 0);
    s_expect_due(store, 0, true);
    assert_int_equal(fq_store_hold_release(store, FQ_HOLD_TENANT, "acme", NULL), 0);
    assert_int_equal(
        fq_store_hold_put(store, FQ_HOLD_DESTINATION, "default", NULL, "ops", NULL, NULL), 0);
    s_expect_due(store, 0, false);
    assert_int_equal(fq_store_hold_release(store, FQ_HOLD_DESTINATION, "default", NULL), 0);
    assert_int_equal(fq_store_hold_put(store, FQ_HOLD_ALL, NULL, NULL, "ops", NULL, NULL), 0);
    s_expect_due(store, 0, false);
    assert_int_equal(fq_store_hold_release(store, FQ_HOLD_ALL, NULL, NULL), 0);
    s_expect_due(store, S_AGE_S, false);

    //  Scheduled for later
    fq_test_exec(conn, "UPDATE fairq.requests SET send_at = now() + interval '1 h' WHERE id = $1",
                 1, id);
    s_expect_due(store, 0, false);
    fq_test_exec(conn, "UPDATE fairq.requests SET send_at = now() - interval '1 s' WHERE id = $1",
                 1, id);

    //  Backing off: not due; a retry come due counts from when it came due
    fq_test_exec(conn,
                 "UPDATE fairq.messages SET status = 'failed',"
                 " next_attempt_at = now() + interval '1 h' WHERE request_id = $1",
                 1, id);
    s_expect_due(store, 0, false);
    fq_test_exec(conn,
                 "UPDATE fairq.messages SET next_attempt_at = now() - interval '50 s'"
                 " WHERE request_id = $1",
                 1, id);
    s_expect_due(store, 50, false);
    fq_test_exec(conn, "UPDATE fairq.requests SET status = 'cancelled'", 0);
    PQfinish(conn);
    fq_store_destroy(&store);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hold_is_idempotent_and_released_once),
        cmocka_unit_test(test_held_retries_are_not_claimed),
        cmocka_unit_test(test_oldest_due_counts_only_work_due_now),
    };
    return cmocka_run_group_tests(tests, s_group_setup, s_group_teardown);
}
