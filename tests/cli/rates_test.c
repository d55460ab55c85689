/*  rates_test.c — fairq top's rate now: each tenant's acked messages a
    second between readings of fairqd's /metrics (fq_cli_rates.h), over
    the last few readings, and "not known" when it cannot be told.
*/
#include "fq_cli_rates.h"
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

//  What fairqd's /metrics looks like around the counter read
#define S_METRICS(acme, shop)                                                                      \
    "# HELP fairq_tenant_sent_total Messages acked by a sender\n"                                  \
    "# TYPE fairq_tenant_sent_total counter\n"                                                     \
    "fairq_tenant_sent_total{tenant=\"acme\"} " #acme "\n"                                         \
    "fairq_tenant_sent_total{tenant=\"shop\"} " #shop "\n"                                         \
    "fairq_tenant_sent_totally{tenant=\"acme\"} 999999\n"                                          \
    "fairq_tenant_dead_total{tenant=\"acme\"} 5\n"

static void test_rate_between_readings(void **state)
{
    (void)state;
    fq_cli_rates_t *rates = fq_cli_rates_new(3);
    assert_non_null(rates);
    //  One reading tells no rate
    assert_int_equal(fq_cli_rates_add(rates, 100.0, S_METRICS(1000, 0)), 0);
    assert_true(fq_cli_rates_get(rates, "acme") < 0);
    assert_true(fq_cli_rates_span(rates) == 0);
    //  Two: the difference over the time between them
    assert_int_equal(fq_cli_rates_add(rates, 102.0, S_METRICS(1100, 0)), 0);
    assert_true(fq_cli_rates_get(rates, "acme") == 50.0);
    assert_true(fq_cli_rates_get(rates, "shop") == 0.0);
    //  A tenant without a sample has sent nothing
    assert_true(fq_cli_rates_get(rates, "newco") == 0.0);
    assert_int_equal(fq_cli_rates_add(rates, 104.0, S_METRICS(1300, 40)), 0);
    assert_true(fq_cli_rates_span(rates) == 4.0);
    assert_true(fq_cli_rates_get(rates, "acme") == 75.0);
    assert_true(fq_cli_rates_get(rates, "shop") == 10.0);
    //  Three readings kept: the oldest goes, the window slides
    assert_int_equal(fq_cli_rates_add(rates, 106.0, S_METRICS(1300, 80)), 0);
    assert_true(fq_cli_rates_span(rates) == 4.0);
    assert_true(fq_cli_rates_get(rates, "acme") == 50.0);
    assert_true(fq_cli_rates_get(rates, "shop") == 20.0);
    fq_cli_rates_destroy(&rates);
    assert_null(rates);
    fq_cli_rates_destroy(&rates); //  Safe twice
}

static void test_counter_reset_is_not_known(void **state)
{
    (void)state;
    fq_cli_rates_t *rates = fq_cli_rates_new(2);
    assert_int_equal(fq_cli_rates_add(rates, 0.0, S_METRICS(500, 7)), 0);
    //  fairqd restarted (or another fairqd answered): counters went down
    assert_int_equal(fq_cli_rates_add(rates, 2.0, S_METRICS(20, 9)), 0);
    assert_true(fq_cli_rates_get(rates, "acme") < 0);
    assert_true(fq_cli_rates_get(rates, "shop") == 1.0);
    //  A tenant gone from the counters was reset too
    assert_int_equal(fq_cli_rates_add(rates, 4.0, "fairq_tenant_sent_total{tenant=\"shop\"} 9\n"),
                     0);
    assert_true(fq_cli_rates_get(rates, "acme") < 0);
    assert_true(fq_cli_rates_get(rates, "shop") == 0.0);
    fq_cli_rates_destroy(&rates);
}

static void test_what_is_not_a_reading(void **state)
{
    (void)state;
    fq_cli_rates_t *rates = fq_cli_rates_new(2);
    assert_int_equal(fq_cli_rates_add(rates, 0.0, S_METRICS(10, 10)), 0);
    //  Not fairqd's metrics, or malformed samples: not kept
    static const char *const bad[] = {"",
                                      "{\"error\": \"forbidden\"}",
                                      "# TYPE fairq_tenant_sent_totally counter\n",
                                      "fairq_tenant_sent_total{tenant=\"acme\"}\n",
                                      "fairq_tenant_sent_total{tenant=\"acme} 5\n",
                                      "fairq_tenant_sent_total{name=\"acme\"} 5\n",
                                      "fairq_tenant_sent_total 5\n",
                                      NULL};
    for (size_t i = 0; bad[i]; i++)
        if (fq_cli_rates_add(rates, 1.0 + (double)i, bad[i]) != -1)
            fail_msg("took \"%s\" for a reading", bad[i]);
    assert_true(fq_cli_rates_span(rates) == 0);
    //  Labels in any order, escaped, and no newline at the end
    assert_int_equal(
        fq_cli_rates_add(rates, 10.0, "fairq_tenant_sent_total{x=\"a\\\"b,}\",tenant=\"acme\"} 30"),
        0);
    assert_true(fq_cli_rates_get(rates, "acme") == 2.0);
    fq_cli_rates_destroy(&rates);
}

//  A fairqd that acked nothing yet declares the counter without samples:
//  a reading of nothing, and a tenant's first acks after it count whole.
static void test_an_idle_fairqd_is_a_reading(void **state)
{
    (void)state;
    fq_cli_rates_t *rates = fq_cli_rates_new(2);
    assert_int_equal(fq_cli_rates_add(rates, 0.0,
                                      "# HELP fairq_tenant_sent_total Messages acked by a sender\n"
                                      "# TYPE fairq_tenant_sent_total counter\n"
                                      "# TYPE fairq_tenant_failed_total counter\n"),
                     0);
    assert_int_equal(fq_cli_rates_add(rates, 4.0, S_METRICS(20, 0)), 0);
    assert_true(fq_cli_rates_get(rates, "acme") == 5.0);
    assert_true(fq_cli_rates_get(rates, "shop") == 0.0);
    fq_cli_rates_destroy(&rates);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rate_between_readings),
        cmocka_unit_test(test_counter_reset_is_not_known),
        cmocka_unit_test(test_what_is_not_a_reading),
        cmocka_unit_test(test_an_idle_fairqd_is_a_reading),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
