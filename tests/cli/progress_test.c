/*  progress_test.c — what `fairq status --watch` shows of a request: the
    rate over the last seconds, the time left, the bar that fits the
    terminal, the line printed per change, and when the watch ends and
    with which outcome.
*/
#include "fq_cli_progress.h"
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#define S_LINE_SIZE 512

//  A request object as the API answers it.
static json_t *s_request(const char *status, int total, int pending, int sent, int failed, int dead)
{
    return json_pack("{s:i, s:s, s:s, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i}", "id", 42,
                     "tenant", "acme", "status", status, "priority", 0, "total", total, "pending",
                     pending, "inflight", 3, "sent", sent, "failed", failed, "dead", dead,
                     "cancelled", 0, "rejected", 0);
}

static void s_update(fq_cli_progress_t *progress, double t, json_t *request)
{
    assert_int_equal(fq_cli_progress_update(progress, t, request), 0);
    json_decref(request);
}

static void test_rate_and_eta(void **state)
{
    (void)state;
    fq_cli_progress_t p;
    fq_cli_progress_init(&p);
    s_update(&p, 100.0, s_request("active", 1000, 1000, 0, 0, 0));
    assert_true(fq_cli_progress_rate(&p) == 0);
    assert_true(fq_cli_progress_eta(&p) < 0); //  Unknown yet
    s_update(&p, 101.0, s_request("active", 1000, 900, 95, 0, 5));
    assert_true(fq_cli_progress_rate(&p) == 100.0);
    assert_true(fq_cli_progress_eta(&p) == 9.0);
    s_update(&p, 102.0, s_request("active", 1000, 700, 295, 0, 5));
    assert_true(fq_cli_progress_rate(&p) == 150.0);
    assert_false(fq_cli_progress_finished(&p));
}

static void test_rate_follows_the_window(void **state)
{
    (void)state;
    fq_cli_progress_t p;
    fq_cli_progress_init(&p);
    //  Fast for 20 s, then slow: the rate forgets the fast part
    int sent = 0;
    for (int t = 0; t <= 20; t++, sent += 100)
        s_update(&p, t, s_request("active", 100000, 100000 - sent, sent, 0, 0));
    for (int t = 21; t <= 40; t++, sent += 10)
        s_update(&p, t, s_request("active", 100000, 100000 - sent, sent, 0, 0));
    double rate = fq_cli_progress_rate(&p);
    assert_true(rate >= 9.9 && rate <= 10.1);
    assert_true(p.nsamples <= FQ_CLI_PROGRESS_SAMPLES);
}

static void test_many_samples(void **state)
{
    (void)state;
    //  Polls far faster than the window: the samples stay bounded
    fq_cli_progress_t p;
    fq_cli_progress_init(&p);
    for (int i = 0; i < 1000; i++)
        s_update(&p, i * 0.01, s_request("active", 100000, 100000 - i, i, 0, 0));
    assert_int_equal(p.nsamples, FQ_CLI_PROGRESS_SAMPLES);
    double rate = fq_cli_progress_rate(&p);
    assert_true(rate > 99.0 && rate < 101.0);
}

static void test_outcomes(void **state)
{
    (void)state;
    fq_cli_progress_t p;
    fq_cli_progress_init(&p);
    s_update(&p, 1, s_request("done", 10, 0, 10, 0, 0));
    assert_true(fq_cli_progress_finished(&p));
    assert_true(fq_cli_progress_succeeded(&p));
    assert_true(fq_cli_progress_eta(&p) == 0);
    s_update(&p, 2, s_request("done", 10, 0, 9, 0, 1));
    assert_true(fq_cli_progress_finished(&p));
    assert_false(fq_cli_progress_succeeded(&p)); //  One dead
    s_update(&p, 3, s_request("cancelled", 10, 0, 5, 0, 0));
    assert_true(fq_cli_progress_finished(&p));
    assert_false(fq_cli_progress_succeeded(&p));
    s_update(&p, 4, s_request("paused", 10, 5, 5, 0, 0));
    assert_false(fq_cli_progress_finished(&p)); //  It may be resumed
    s_update(&p, 5, s_request("rejected", 10, 0, 0, 0, 0));
    assert_true(fq_cli_progress_finished(&p));
}

static void test_not_a_request(void **state)
{
    (void)state;
    fq_cli_progress_t p;
    fq_cli_progress_init(&p);
    json_t *error = json_pack("{s:s, s:s}", "error", "not_found", "detail", "no such request");
    assert_int_equal(fq_cli_progress_update(&p, 1, error), -1);
    assert_int_equal(fq_cli_progress_update(&p, 1, NULL), -1);
    json_decref(error);
    assert_int_equal(p.nsamples, 0);
}

static void test_bar_fits(void **state)
{
    (void)state;
    fq_cli_progress_t p;
    fq_cli_progress_init(&p);
    s_update(&p, 0, s_request("active", 1000, 1000, 0, 0, 0));
    s_update(&p, 2, s_request("active", 1000, 548, 450, 2, 0));
    char line[S_LINE_SIZE];
    for (int width = 0; width <= 200; width++) {
        fq_cli_progress_bar(&p, line, sizeof line, width);
        assert_true(strlen(line) <= (size_t)width);
        if (width >= 120) {
            assert_non_null(strstr(line, "[##"));
            assert_non_null(strstr(line, " 45%"));
            assert_non_null(strstr(line, "225.0/s"));
            assert_non_null(strstr(line, "ETA 2s"));
            assert_non_null(strstr(line, "active"));
        }
    }
    fq_cli_progress_bar(&p, line, sizeof line, 130);
    //  45% of the bar is filled
    size_t bar = strcspn(line, "]") - 1;
    size_t filled = strspn(line + 1, "#");
    assert_true(filled * 100 / bar >= 43 && filled * 100 / bar <= 45);
}

static void test_line_per_change(void **state)
{
    (void)state;
    fq_cli_progress_t p;
    fq_cli_progress_init(&p);
    char a[S_LINE_SIZE], b[S_LINE_SIZE];
    s_update(&p, 0, s_request("active", 10, 10, 0, 0, 0));
    fq_cli_progress_line(&p, a, sizeof a);
    assert_string_equal(a, "request 42 active: 0/10 handled, sent 0, failed 0, dead 0, pending 10");
    //  Only time passes: the same line, so nothing new is printed
    s_update(&p, 1, s_request("active", 10, 10, 0, 0, 0));
    fq_cli_progress_line(&p, b, sizeof b);
    assert_string_equal(a, b);
    s_update(&p, 2, s_request("done", 10, 0, 9, 0, 1));
    fq_cli_progress_line(&p, b, sizeof b);
    assert_string_equal(b, "request 42 done: 10/10 handled, sent 9, failed 0, dead 1, pending 0");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rate_and_eta),    cmocka_unit_test(test_rate_follows_the_window),
        cmocka_unit_test(test_many_samples),    cmocka_unit_test(test_outcomes),
        cmocka_unit_test(test_not_a_request),   cmocka_unit_test(test_bar_fits),
        cmocka_unit_test(test_line_per_change),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
