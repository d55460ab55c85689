/*  store_smoke_test.c — the store's main path against a real PostgreSQL. */
#include "fq_store.h"
#include "fq_error.h"
#include "fq_test_db.h"
#include <setjmp.h>
#include <stdarg.h>
#include <string.h>
#include <cmocka.h>

static char s_conninfo[128];

static int s_group_setup(void **state)
{
    (void)state;
    return fq_test_db_create(s_conninfo, sizeof s_conninfo);
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

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_request_lifecycle)};
    return cmocka_run_group_tests(tests, s_group_setup, s_group_teardown);
}
