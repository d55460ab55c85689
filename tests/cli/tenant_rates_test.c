/*  tenant_rates_test.c — the tenants' bounce and complaint rates fairq
    top reads from /metrics and shows (fq_cli_tenant_rates.h): both rates
    of each tenant, in the order they come; a tenant with one rate only
    (nothing delivered: no complaint rate); other families and samples that
    do not parse skipped; percentages in the decimals that tell the limits
    apart, marked above them; and the table's width, by which top leaves
    out columns on a narrow terminal. */
#include "fq_cli_table.h"
#include "fq_cli_tenant_rates.h"
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

static const char s_metrics[] = "# HELP fairq_tenant_bounces_24h Hard bounces\n"
                                "# TYPE fairq_tenant_bounces_24h gauge\n"
                                "fairq_tenant_bounces_24h{tenant=\"acme\"} 40\n"
                                "# TYPE fairq_tenant_bounce_rate gauge\n"
                                "fairq_tenant_bounce_rate{tenant=\"acme\"} 0.02\n"
                                "fairq_tenant_bounce_rate{tenant=\"beta\"} 1\n"
                                "fairq_tenant_bounce_rate{tenant=\"broken} 1\n"
                                "fairq_tenant_bounce_rate{tenant=\"nothing\"} x\n"
                                "# TYPE fairq_tenant_complaint_rate gauge\n"
                                "fairq_tenant_complaint_rate{tenant=\"acme\"} 0.0035\n"
                                "fairq_tenant_complaint_rate{tenant=\"gamma\"} 1e-05\n"
                                "fairq_tenant_rates_age_seconds 12.000\n";

static void test_parse(void **unused)
{
    (void)unused;
    fq_cli_tenant_rates_t *rows;
    size_t count;
    assert_int_equal(fq_cli_tenant_rates_parse(s_metrics, &rows, &count), 0);
    assert_int_equal(count, 3);
    assert_string_equal(rows[0].name, "acme");
    assert_float_equal(rows[0].bounce_rate, 0.02, 0);
    assert_float_equal(rows[0].complaint_rate, 0.0035, 0);
    //  beta delivered nothing: all that met a verdict bounced, and no
    //  complaint rate
    const fq_cli_tenant_rates_t *beta = fq_cli_tenant_rates_find(rows, count, "beta");
    assert_non_null(beta);
    assert_float_equal(beta->bounce_rate, 1, 0);
    assert_true(beta->complaint_rate < 0);
    assert_string_equal(rows[2].name, "gamma");
    assert_true(rows[2].bounce_rate < 0);
    assert_null(fq_cli_tenant_rates_find(rows, count, "nothing"));
    assert_null(fq_cli_tenant_rates_find(rows, count, NULL));
    free(rows);
    //  A text without them: none, not a failure
    assert_int_equal(fq_cli_tenant_rates_parse("fairq_database_up 1\n", &rows, &count), 0);
    assert_int_equal(count, 0);
    free(rows);
}

static void s_assert_bounce(double rate, const char *shown)
{
    char text[32];
    fq_cli_format_bounce_rate(text, sizeof text, rate);
    assert_string_equal(text, shown);
}

static void s_assert_complaint(double rate, const char *shown)
{
    char text[32];
    fq_cli_format_complaint_rate(text, sizeof text, rate);
    assert_string_equal(text, shown);
}

static void test_format(void **unused)
{
    (void)unused;
    s_assert_bounce(-1, "-");
    s_assert_bounce(0, "0.00%");
    s_assert_bounce(0.0004, "0.04%");
    s_assert_bounce(0.015, "1.5%");
    //  At the limit is not above it
    s_assert_bounce(FQ_CLI_BOUNCE_RATE_LIMIT, "2.0%");
    s_assert_bounce(0.025, "2.5%!");
    s_assert_bounce(0.125, "12%!");
    s_assert_bounce(1, "100%!");
    s_assert_complaint(-1, "-");
    s_assert_complaint(0.0005, "0.05%");
    s_assert_complaint(FQ_CLI_COMPLAINT_RATE_RECOMMENDED, "0.10%");
    s_assert_complaint(0.0015, "0.15%*");
    s_assert_complaint(FQ_CLI_COMPLAINT_RATE_LIMIT, "0.30%*");
    s_assert_complaint(0.0035, "0.35%!");
    s_assert_complaint(0.02, "2.0%!");
}

static void test_table_width(void **unused)
{
    (void)unused;
    const char *headers[] = {"TENANT", "BOUNCE"};
    fq_cli_table_t *table = fq_cli_table_new(headers, "lr");
    assert_non_null(table);
    //  The widest cell of each column, two spaces between them
    assert_int_equal(fq_cli_table_width(table, SIZE_MAX), 6 + 2 + 6);
    fq_cli_table_add(table, "a-long-tenant-name");
    fq_cli_table_add(table, "0.04%");
    fq_cli_table_add(table, "b");
    fq_cli_table_add(table, "100%!");
    assert_int_equal(fq_cli_table_width(table, SIZE_MAX), 18 + 2 + 6);
    //  Only the rows shown count
    fq_cli_table_destroy(&table);
    table = fq_cli_table_new(headers, "lr");
    fq_cli_table_add(table, "b");
    fq_cli_table_add(table, "1%");
    fq_cli_table_add(table, "a-long-tenant-name");
    fq_cli_table_add(table, "2%");
    assert_int_equal(fq_cli_table_width(table, 1), 6 + 2 + 6);
    fq_cli_table_destroy(&table);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_format),
        cmocka_unit_test(test_table_width),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
