/*  limits_test.c — the limits of base/fq_limits.h are the schema's:
    tenant names, and tenants' send budgets.

    The C side (API, metrics, the store's buffers) sizes tenant names with
    FQ_TENANT_NAME_MAX; the schema's CHECK says the same number in its own
    words. A name of exactly the limit must be stored whole and read back
    whole into a buffer of FQ_TENANT_NAME_SIZE, one byte more must be
    refused by the database itself, so neither side can drift alone. */
#include "fq_error.h"
#include "fq_limits.h"
#include "fq_store.h"
#include "fq_test_db.h"
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
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

static void s_name_of_length(char *name, size_t length)
{
    memset(name, 'a', length);
    name[length] = 0;
}

static void test_tenant_name_limit_is_the_schemas(void **unused)
{
    (void)unused;
    char error[256];
    fq_store_t *store = fq_store_new(s_conninfo, error, sizeof error);
    assert_non_null(store);
    assert_true(fq_store_migrate(store) >= 0);

    char longest[FQ_TENANT_NAME_SIZE];
    s_name_of_length(longest, FQ_TENANT_NAME_MAX);
    int64_t id;
    int rc = fq_store_tenant_put(store, &(fq_tenant_spec_t){.name = longest}, &id);
    if (rc)
        fail_msg("a name of %d bytes was refused: %s", FQ_TENANT_NAME_MAX, fq_store_error(store));
    char back[FQ_TENANT_NAME_SIZE];
    assert_int_equal(fq_store_tenant_name(store, id, back), 0);
    assert_string_equal(back, longest);

    char too_long[FQ_TENANT_NAME_SIZE + 1];
    s_name_of_length(too_long, FQ_TENANT_NAME_MAX + 1);
    rc = fq_store_tenant_put(store, &(fq_tenant_spec_t){.name = too_long}, &id);
    assert_int_equal(rc, FQ_EINVAL);
    fq_store_destroy(&store);
}

//  A send budget of exactly the limits is stored; one more is refused by
//  the database itself (0017's CHECKs).
static void test_send_budget_limits_are_the_schemas(void **unused)
{
    (void)unused;
    char error[256];
    fq_store_t *store = fq_store_new(s_conninfo, error, sizeof error);
    assert_non_null(store);
    assert_true(fq_store_migrate(store) >= 0);
    int64_t id;
    fq_tenant_spec_t most = {.name = "budget",
                             .send_rate_count = FQ_TENANT_SEND_RATE_COUNT_MAX,
                             .send_rate_period_s = 1,
                             .daily_quota = FQ_TENANT_DAILY_QUOTA_MAX};
    int rc = fq_store_tenant_put(store, &most, &id);
    if (rc)
        fail_msg("the largest send budget was refused: %s", fq_store_error(store));
    fq_tenant_info_t back;
    assert_int_equal(fq_store_tenant_get(store, "budget", &back), 0);
    assert_true(back.send_rate_count == FQ_TENANT_SEND_RATE_COUNT_MAX);
    assert_true(back.daily_quota == FQ_TENANT_DAILY_QUOTA_MAX);
    fq_tenant_spec_t rate_over = most;
    rate_over.send_rate_count = FQ_TENANT_SEND_RATE_COUNT_MAX + 1;
    rate_over.daily_quota = 0;
    assert_int_equal(fq_store_tenant_put(store, &rate_over, &id), FQ_EINVAL);
    fq_tenant_spec_t quota_over = {.name = "budget", .daily_quota = FQ_TENANT_DAILY_QUOTA_MAX + 1};
    assert_int_equal(fq_store_tenant_put(store, &quota_over, &id), FQ_EINVAL);
    fq_store_destroy(&store);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tenant_name_limit_is_the_schemas),
        cmocka_unit_test(test_send_budget_limits_are_the_schemas),
    };
    return cmocka_run_group_tests(tests, s_group_setup, s_group_teardown);
}
