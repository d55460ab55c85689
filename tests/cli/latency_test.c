/*  latency_test.c — fairq top's delivery and end-to-end quantiles: each
    tenant's histograms read twice from fairqd's /metrics
    (fq_cli_latency.h), the deliveries between the readings taken from
    their buckets' differences, and "not known" when they cannot be told.
*/
#include "fq_cli_latency.h"
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

//  Float sums: how close two estimates must be
#define S_EPSILON 1e-9

//  A tenant's two histograms as fairqd writes them, with three bounds:
//  at or below 0.1 s, 1 s and 10 s, then all
#define S_HISTOGRAMS(tenant, d1, d2, d3, dall, e1, e2, e3, eall)                                   \
    "# TYPE fairq_tenant_delivery_seconds histogram\n"                                             \
    "fairq_tenant_delivery_seconds_bucket{tenant=\"" tenant "\",le=\"0.1\"} " #d1 "\n"             \
    "fairq_tenant_delivery_seconds_bucket{tenant=\"" tenant "\",le=\"1\"} " #d2 "\n"               \
    "fairq_tenant_delivery_seconds_bucket{tenant=\"" tenant "\",le=\"10\"} " #d3 "\n"              \
    "fairq_tenant_delivery_seconds_bucket{tenant=\"" tenant "\",le=\"+Inf\"} " #dall "\n"          \
    "fairq_tenant_delivery_seconds_sum{tenant=\"" tenant "\"} 1\n"                                 \
    "fairq_tenant_delivery_seconds_count{tenant=\"" tenant "\"} " #dall "\n"                       \
    "fairq_tenant_end_to_end_seconds_bucket{tenant=\"" tenant "\",le=\"0.1\"} " #e1 "\n"           \
    "fairq_tenant_end_to_end_seconds_bucket{tenant=\"" tenant "\",le=\"1\"} " #e2 "\n"             \
    "fairq_tenant_end_to_end_seconds_bucket{tenant=\"" tenant "\",le=\"10\"} " #e3 "\n"            \
    "fairq_tenant_end_to_end_seconds_bucket{tenant=\"" tenant "\",le=\"+Inf\"} " #eall "\n"        \
    "fairq_destination_delivery_seconds_bucket{destination=\"x\",channel=\"email\",le=\"0.1\"} "   \
    "99\n"

static double s_get(const fq_cli_latency_t *latency, const char *tenant, fq_cli_latency_of_t of,
                    double q)
{
    return fq_cli_latency_get(latency, tenant, of, q);
}

static void test_quantiles_between_readings(void **state)
{
    (void)state;
    fq_cli_latency_t *latency = fq_cli_latency_new(3);
    assert_non_null(latency);
    //  Before: 100 deliveries, all fast
    assert_int_equal(fq_cli_latency_add(latency, 10.0,
                                        S_HISTOGRAMS("acme", 100, 100, 100, 100, 0, 100, 100, 100)),
                     0);
    //  One reading tells nothing
    assert_true(s_get(latency, "acme", FQ_CLI_LATENCY_OF_DELIVERY, 0.5) < 0);
    //  Then 10 more, each between 0.1 and 1 s in the sender, between 1 and
    //  10 s end to end: only those count, not the 100 before
    assert_int_equal(fq_cli_latency_add(latency, 12.0,
                                        S_HISTOGRAMS("acme", 100, 110, 110, 110, 0, 100, 110, 110)),
                     0);
    assert_true(fq_cli_latency_span(latency) == 2.0);
    double p50 = s_get(latency, "acme", FQ_CLI_LATENCY_OF_DELIVERY, 0.5);
    assert_true(fabs(p50 - 0.55) < S_EPSILON);
    double e2e = s_get(latency, "acme", FQ_CLI_LATENCY_OF_END_TO_END, 0.5);
    assert_true(fabs(e2e - 5.5) < S_EPSILON);
    assert_true(s_get(latency, "acme", FQ_CLI_LATENCY_OF_END_TO_END, 0.99) > e2e);
    //  Nothing delivered between the readings: not known
    fq_cli_latency_t *quiet = fq_cli_latency_new(2);
    fq_cli_latency_add(quiet, 1.0, S_HISTOGRAMS("acme", 1, 1, 1, 1, 1, 1, 1, 1));
    fq_cli_latency_add(quiet, 2.0, S_HISTOGRAMS("acme", 1, 1, 1, 1, 1, 1, 1, 1));
    assert_true(s_get(quiet, "acme", FQ_CLI_LATENCY_OF_DELIVERY, 0.5) < 0);
    fq_cli_latency_destroy(&quiet);
    //  A tenant without a histogram: not known
    assert_true(s_get(latency, "newco", FQ_CLI_LATENCY_OF_DELIVERY, 0.5) < 0);
    //  Three kept: the oldest goes and the window slides
    assert_int_equal(fq_cli_latency_add(latency, 14.0,
                                        S_HISTOGRAMS("acme", 100, 110, 120, 120, 0, 100, 110, 120)),
                     0);
    assert_true(fq_cli_latency_span(latency) == 4.0);
    assert_int_equal(fq_cli_latency_add(latency, 16.0,
                                        S_HISTOGRAMS("acme", 100, 110, 120, 120, 0, 100, 110, 120)),
                     0);
    //  Of 12 to 16: the 10 above 1 s, none faster
    assert_true(s_get(latency, "acme", FQ_CLI_LATENCY_OF_DELIVERY, 0.5) > 1);
    fq_cli_latency_destroy(&latency);
    assert_null(latency);
    fq_cli_latency_destroy(&latency); //  Safe twice
}

static void test_new_tenant_and_reset(void **state)
{
    (void)state;
    fq_cli_latency_t *latency = fq_cli_latency_new(2);
    //  A tenant first seen in the newer reading counted nothing before it
    fq_cli_latency_add(latency, 1.0, "# nothing of fairqd's latency yet\n");
    fq_cli_latency_add(latency, 2.0, S_HISTOGRAMS("newco", 4, 4, 4, 4, 0, 4, 4, 4));
    assert_true(fabs(s_get(latency, "newco", FQ_CLI_LATENCY_OF_DELIVERY, 0.5) - 0.05) < S_EPSILON);
    //  Counts that went down (fairqd restarted): not known
    fq_cli_latency_add(latency, 3.0, S_HISTOGRAMS("newco", 1, 1, 1, 1, 0, 1, 1, 1));
    assert_true(s_get(latency, "newco", FQ_CLI_LATENCY_OF_DELIVERY, 0.5) < 0);
    //  Deliveries above the highest bound: the highest bound, all that is known
    fq_cli_latency_add(latency, 4.0, S_HISTOGRAMS("newco", 1, 1, 1, 5, 0, 1, 1, 5));
    assert_true(s_get(latency, "newco", FQ_CLI_LATENCY_OF_DELIVERY, 0.99) == 10);
    fq_cli_latency_destroy(&latency);
}

static void test_format(void **state)
{
    (void)state;
    char text[64];
    fq_cli_latency_format(text, sizeof text, 0.0853, 1.24);
    assert_string_equal(text, "85ms/1.2s");
    fq_cli_latency_format(text, sizeof text, 42, 600);
    assert_string_equal(text, "42s/10m");
    fq_cli_latency_format(text, sizeof text, -1, 7200);
    assert_string_equal(text, "-/2h");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quantiles_between_readings),
        cmocka_unit_test(test_new_tenant_and_reset),
        cmocka_unit_test(test_format),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
