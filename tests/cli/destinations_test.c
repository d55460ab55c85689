/*  destinations_test.c — the destinations fairq top reads from /metrics
    (fq_cli_destinations.h): every figure of each, in the order they come;
    +Inf as no limit; the state from the series that is 1; a destination
    idle only when open with nothing ready nor in flight; lines of other
    families and samples that do not parse skipped. */
#include "fq_cli_destinations.h"
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

static const char s_metrics[] =
    "# HELP fairq_destination_ready Messages the scheduler holds ready\n"
    "# TYPE fairq_destination_ready gauge\n"
    "fairq_destination_ready{destination=\"default\"} 0\n"
    "fairq_destination_ready{destination=\"google\"} 7\n"
    "fairq_destination_ready{destination=\"yahoo\"} 0\n"
    "fairq_destination_inflight{destination=\"default\"} 0\n"
    "fairq_destination_inflight{destination=\"google\"} 3\n"
    "fairq_destination_inflight{destination=\"yahoo\"} 0\n"
    "fairq_destination_effective_rate{destination=\"default\"} +Inf\n"
    "fairq_destination_effective_rate{destination=\"google\"} 50\n"
    "fairq_destination_effective_rate{destination=\"yahoo\"} 0.5\n"
    "fairq_destination_suspended_seconds{destination=\"yahoo\"} 12.5\n"
    "fairq_destination_sent_total{destination=\"google\"} 1000\n"
    "fairq_destination_state{destination=\"default\",state=\"open\"} 1\n"
    "fairq_destination_state{destination=\"default\",state=\"throttled\"} 0\n"
    "fairq_destination_state{destination=\"google\",state=\"open\"} 0\n"
    "fairq_destination_state{destination=\"google\",state=\"throttled\"} 1\n"
    "fairq_destination_state{destination=\"yahoo\",state=\"open\"} 0\n"
    "fairq_destination_state{destination=\"yahoo\",state=\"suspended\"} 1\n"
    "fairq_channel_ready{channel=\"email\"} 4\n"
    "fairq_destination_ready{destination=\"broken} 4\n"
    "fairq_destination_ready{destination=\"nothing\"} x\n";

static void test_parse(void **unused)
{
    (void)unused;
    fq_cli_destination_t *rows = NULL;
    size_t count = 0;
    assert_int_equal(fq_cli_destinations_parse(s_metrics, &rows, &count), 0);
    //  "nothing" is named (its value does not parse): open, idle
    assert_int_equal(count, 4);
    assert_string_equal(rows[0].name, "default");
    assert_string_equal(rows[0].state, "open");
    assert_true(rows[0].effective_rate < 0);
    assert_true(fq_cli_destination_idle(&rows[0]));
    assert_string_equal(rows[1].name, "google");
    assert_string_equal(rows[1].state, "throttled");
    assert_int_equal(rows[1].ready, 7);
    assert_int_equal(rows[1].inflight, 3);
    assert_true(rows[1].effective_rate == 50);
    assert_false(fq_cli_destination_idle(&rows[1]));
    assert_string_equal(rows[2].name, "yahoo");
    assert_string_equal(rows[2].state, "suspended");
    assert_true(rows[2].effective_rate == 0.5);
    assert_true(rows[2].suspended_s == 12.5);
    //  Nothing ready nor in flight, but suspended: not idle
    assert_false(fq_cli_destination_idle(&rows[2]));
    assert_string_equal(rows[3].name, "nothing");
    assert_int_equal(rows[3].ready, 0);
    assert_true(fq_cli_destination_idle(&rows[3]));
    free(rows);

    //  A fairqd without destinations (or an older one): none
    assert_int_equal(fq_cli_destinations_parse("fairq_database_up 1\n", &rows, &count), 0);
    assert_int_equal(count, 0);
    free(rows);
    assert_int_equal(fq_cli_destinations_parse("", &rows, &count), 0);
    assert_int_equal(count, 0);
    free(rows);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
