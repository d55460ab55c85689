/*  store_smoke_test.c — the store's main path against a real PostgreSQL. */
#include "fq_store.h"
#include "fq_error.h"
#include "fq_test_db.h"
#include <setjmp.h>
#include <stdarg.h>
#include <string.h>
#include <cmocka.h>
#include "fq_test_sql.h"

static char s_conninfo[128];

static int s_group_setup(void **state)
{
    (void)state;
    return fq_test_db_create(s_conninfo, sizeof s_conninfo) || fq_test_db_splits_by_splitter() ? -1
                                                                                               : 0;
}

static int s_group_teardown(void **state)
{
    (void)state;
    fq_test_db_drop();
    return 0;
}

//  Submit, split, page, ack and nack one small request end to end.
static void test_request_lifecycle(void **unused)
{
    (void)unused;
    char error[256];
    fq_store_t *store = fq_store_new(s_conninfo, error, sizeof error);
    assert_non_null(store);
    int applied = fq_store_migrate(store);
    if (applied < 2)
        fail_msg("migrate: %d %s", applied, fq_store_error(store));
    assert_int_equal(fq_store_migrate(store), 0);
    int64_t tenant;
    assert_int_equal(fq_store_tenant_put(store, &(fq_tenant_spec_t){.name = "acme"}, &tenant), 0);
    fq_submit_t req = {.tenant = "acme",
                       .from = "news@acme.example",
                       .subject = "Hi {{name}}",
                       .body = "Dear {{ name }}",
                       .recipients_json = "[{\"to\":\"a@x.example\",\"fields\":{\"name\":\"A\"}},"
                                          "{\"to\":\"bad\",\"fields\":{\"name\":\"B\"}},"
                                          "{\"to\":\"c@x.example\",\"fields\":{}}]"};
    int64_t id;
    int rc = fq_store_submit(store, &req, &id);
    if (rc)
        fail_msg("%s", fq_store_error(store));
    fq_split_result_t split;
    const char *required[] = {"name"};
    rc = fq_store_split_chunk(store, id, required, 1, 0, &split);
    if (rc != 1)
        fail_msg("%d %s", rc, fq_store_error(store));
    assert_int_equal(split.split, 1);
    assert_int_equal(split.rejected, 2);
    assert_true(split.last);
    int64_t ids[10];
    assert_int_equal(fq_store_next_ready(store, id, 0, 10, ids), 1);
    assert_int_equal(fq_store_ack_batch(store, ids, 1), 1);
    assert_int_equal(fq_store_ack_batch(store, ids, 1), 0);
    fq_nack_t nack = {.id = ids[0], .permanent = true, .error = "550 no"};
    rc = fq_store_nack_batch(store, &nack, 1,
                             &(fq_retry_policy_t){.base_ms = 1000, .cap_ms = 60000});
    if (rc < 0)
        fail_msg("%s", fq_store_error(store));
    assert_int_equal(rc, 0);
    fq_store_destroy(&store);
}

//  Requests of one message each, split: their ids into ids.
#define S_SMALL_REQUESTS 60

static void s_small_requests(fq_store_t *store, int64_t *ids)
{
    const char *required[] = {"name"};
    for (int i = 0; i < S_SMALL_REQUESTS; i++) {
        fq_submit_t req = {.tenant = "acme",
                           .from = "news@acme.example",
                           .subject = "Hi {{name}}",
                           .body = "Dear {{ name }}, the news of the week.",
                           .recipients_json =
                               "[{\"to\":\"a@x.example\",\"fields\":{\"name\":\"A\"}}]"};
        int64_t request;
        if (fq_store_submit(store, &req, &request))
            fail_msg("%s", fq_store_error(store));
        fq_split_result_t split;
        if (fq_store_split_chunk(store, request, required, 1, 0, &split) != 1)
            fail_msg("%s", fq_store_error(store));
        assert_int_equal(fq_store_next_ready(store, request, 0, 1, &ids[i]), 1);
    }
}

//  An ack batch that holds a message of each of many requests updates
//  their counters where the rows are (0027: room on each page), without a
//  new entry in each of the table's indexes: every row stays on its page.
static void test_ack_counters_stay_on_their_page(void **unused)
{
    (void)unused;
    char error[256];
    fq_store_t *store = fq_store_new(s_conninfo, error, sizeof error);
    assert_non_null(store);
    if (fq_store_migrate(store) < 0)
        fail_msg("migrate: %s", fq_store_error(store));
    int64_t tenant, ids[S_SMALL_REQUESTS];
    assert_int_equal(fq_store_tenant_put(store, &(fq_tenant_spec_t){.name = "acme"}, &tenant), 0);
    PGconn *conn = fq_test_connect(s_conninfo);
    fq_test_exec(conn, "DELETE FROM fairq.messages", 0);
    fq_test_exec(conn, "DELETE FROM fairq.requests", 0);
    fq_test_exec(conn, "VACUUM FULL fairq.requests", 0);
    s_small_requests(store, ids);
    //  The page of each request's row, as a sum that any move changes
    static const char *const pages =
        "SELECT sum(id * ((ctid::text::point)[0]::bigint + 1)) FROM fairq.requests";
    int64_t before = fq_test_int(conn, pages, 0);
    assert_true(fq_test_int(conn,
                            "SELECT count(DISTINCT (ctid::text::point)[0])"
                            " FROM fairq.requests",
                            0) > 1);
    assert_int_equal(fq_store_ack_batch(store, ids, S_SMALL_REQUESTS), S_SMALL_REQUESTS);
    assert_int_equal(fq_test_int(conn, "SELECT sum(sent) FROM fairq.requests", 0),
                     S_SMALL_REQUESTS);
    assert_int_equal(fq_test_int(conn, pages, 0), before);
    PQfinish(conn);
    fq_store_destroy(&store);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_request_lifecycle),
                                       cmocka_unit_test(test_ack_counters_stay_on_their_page)};
    return cmocka_run_group_tests(tests, s_group_setup, s_group_teardown);
}
