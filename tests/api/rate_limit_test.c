/*  rate_limit_test.c — a tenant's submits per minute (api/fq_rate_limit.h):
    a burst of a minute's worth at once, then the rate on average, and a
    Retry-After that is neither early nor late. */
#include "fq_rate_limit.h"
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#define MINUTE_MS 60000

static void test_burst_then_refused(void **state)
{
    (void)state;
    fq_rate_limit_t *limit = fq_rate_limit_new();
    int retry_after = -1;
    for (int i = 0; i < 6; i++)
        assert_true(fq_rate_limit_take(limit, "acme", 6, 1000, &retry_after));
    assert_false(fq_rate_limit_take(limit, "acme", 6, 1000, &retry_after));
    //  6 a minute: one every 10 s
    assert_int_equal(retry_after, 10);
    fq_rate_limit_destroy(&limit);
    assert_null(limit);
    fq_rate_limit_destroy(&limit); //  Safe twice
}

static void test_refills_at_the_rate(void **state)
{
    (void)state;
    fq_rate_limit_t *limit = fq_rate_limit_new();
    int retry_after = 0;
    for (int i = 0; i < 60; i++)
        assert_true(fq_rate_limit_take(limit, "acme", 60, 0, &retry_after));
    assert_false(fq_rate_limit_take(limit, "acme", 60, 500, &retry_after));
    assert_int_equal(retry_after, 1);
    //  A second later, one more; never more than the minute's worth
    assert_true(fq_rate_limit_take(limit, "acme", 60, 1000, &retry_after));
    assert_false(fq_rate_limit_take(limit, "acme", 60, 1000, &retry_after));
    int allowed = 0;
    for (int i = 0; i < 200; i++)
        allowed += fq_rate_limit_take(limit, "acme", 60, 10 * MINUTE_MS, &retry_after);
    assert_int_equal(allowed, 60);
    fq_rate_limit_destroy(&limit);
}

static void test_tenants_apart(void **state)
{
    (void)state;
    fq_rate_limit_t *limit = fq_rate_limit_new();
    int retry_after = 0;
    assert_true(fq_rate_limit_take(limit, "big", 1, 0, &retry_after));
    assert_false(fq_rate_limit_take(limit, "big", 1, 0, &retry_after));
    assert_int_equal(retry_after, 60);
    //  Another tenant's bucket is its own
    assert_true(fq_rate_limit_take(limit, "small", 1, 0, &retry_after));
    fq_rate_limit_destroy(&limit);
}

static void test_lowered_rate_applies_at_once(void **state)
{
    (void)state;
    fq_rate_limit_t *limit = fq_rate_limit_new();
    int retry_after = 0;
    assert_true(fq_rate_limit_take(limit, "acme", 1000, 0, &retry_after));
    //  The operator lowers the limit to 2 a minute: the bucket holds at
    //  most 2 from now on, not the 999 left of the old rate
    assert_true(fq_rate_limit_take(limit, "acme", 2, 1, &retry_after));
    assert_true(fq_rate_limit_take(limit, "acme", 2, 1, &retry_after));
    assert_false(fq_rate_limit_take(limit, "acme", 2, 1, &retry_after));
    fq_rate_limit_destroy(&limit);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_burst_then_refused),
        cmocka_unit_test(test_refills_at_the_rate),
        cmocka_unit_test(test_tenants_apart),
        cmocka_unit_test(test_lowered_rate_applies_at_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
