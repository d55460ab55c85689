/*  channels_test.c — fairq top's channel lines: each channel's lane read
    from fairqd's /metrics (fq_cli_channels.h), and a channel waiting for
    a sender told apart from one that is merely busy.
*/
#include "fq_cli_channels.h"
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

static const char s_metrics[] = "# HELP fairq_channel_ready Messages the scheduler holds ready\n"
                                "# TYPE fairq_channel_ready gauge\n"
                                "fairq_channel_ready{channel=\"email\"} 120\n"
                                "fairq_channel_ready{channel=\"sms\"} 4\n"
                                "fairq_channel_credit{channel=\"email\"} 0\n"
                                "fairq_channel_credit{channel=\"sms\"} 0\n"
                                "fairq_channel_credit{channel=\"http\"} 17\n"
                                "fairq_channel_inflight{channel=\"email\"} 64\n"
                                "fairq_channel_inflight{channel=\"sms\"} 0\n"
                                "fairq_channel_inflightx{channel=\"email\"} 99\n"
                                "fairq_channel_ready{channel=\"broken\"} x\n"
                                "fairq_tenant_sent_total{tenant=\"acme\"} 5\n";

static void test_parse(void **state)
{
    (void)state;
    fq_cli_channel_t channels[FQ_CLI_CHANNELS_MAX];
    size_t n = fq_cli_channels_parse(s_metrics, channels, FQ_CLI_CHANNELS_MAX);
    assert_int_equal(n, 3);
    assert_string_equal(channels[0].name, "email");
    assert_int_equal(channels[0].ready, 120);
    assert_int_equal(channels[0].credit, 0);
    assert_int_equal(channels[0].inflight, 64);
    assert_string_equal(channels[1].name, "sms");
    assert_string_equal(channels[2].name, "http");
    assert_int_equal(channels[2].credit, 17);
    assert_int_equal(channels[2].ready, 0);
    //  Busy is not waiting; ready with no credit and nothing out is
    assert_false(fq_cli_channel_waits(&channels[0]));
    assert_true(fq_cli_channel_waits(&channels[1]));
    assert_false(fq_cli_channel_waits(&channels[2]));
    //  A short array keeps the first ones
    assert_int_equal(fq_cli_channels_parse(s_metrics, channels, 1), 1);
    assert_string_equal(channels[0].name, "email");
    //  Nothing of the kind
    assert_int_equal(fq_cli_channels_parse("", channels, FQ_CLI_CHANNELS_MAX), 0);
    assert_int_equal(fq_cli_channels_parse("fairq_channel_ready{channel=\"a", channels, 4), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_parse)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
