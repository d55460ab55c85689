/*  shaper_test.c — one destination's budget, as the scheduler uses it.

    The scheduler keeps one fq_shaper_t per destination (a mail domain, an
    http host, a group). Whenever it could send, it asks how many of the
    destination's messages it may release (fq_shaper_allowance), releases
    them and says so (fq_shaper_take); when the answer is 0 it sleeps for
    fq_shaper_wait_us. The senders' outcomes come back as
    fq_shaper_delivered, fq_shaper_throttled (SMTP 421, HTTP 429, ...) and
    fq_shaper_unreachable. Time is simulated: every call is given the
    clock, in microseconds.
*/
#include "fq_shaper.h"
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <math.h>
#include <cmocka.h>

#define S_MS INT64_C(1000)
#define S_S  INT64_C(1000000)

//  Where the simulated clock starts: anywhere, as a monotonic clock does.
#define T0 (INT64_C(12345) * S_S)

//  Most tests in flight nothing: the bucket alone limits.
#define S_NONE_INFLIGHT 0

//  cmocka compares floats only: rates are doubles.
static void s_assert_near(double actual, double expected, double epsilon)
{
    if (fabs(actual - expected) > epsilon)
        fail_msg("%.12g is not %.12g (within %g)", actual, expected, epsilon);
}

static void s_assert_rate(fq_shaper_t *shaper, int64_t now, double expected)
{
    s_assert_near(fq_shaper_effective_per_s(shaper, now), expected, 1e-9);
}

static void s_assert_state(fq_shaper_t *shaper, int64_t now, const char *expected)
{
    assert_string_equal(fq_shaper_state_name(fq_shaper_state(shaper, now)), expected);
}

//  The scheduler's loop for one destination: from start to end, every
//  step, releases whatever the allowance says. Returns how many.
static int64_t s_release(fq_shaper_t *shaper, int64_t start, int64_t end, int64_t step)
{
    int64_t released = 0;
    for (int64_t now = start; now <= end; now += step) {
        int64_t allowance = fq_shaper_allowance(shaper, S_NONE_INFLIGHT, now);
        if (allowance > 0) {
            fq_shaper_take(shaper, allowance, now);
            released += allowance;
        }
    }
    return released;
}

// --------------------------------------------------------------------------
//  The bucket

static void test_burst_then_exactly_the_rate(void **state)
{
    (void)state;
    fq_shaper_t shaper;
    fq_shaper_init(&shaper, 10, 5, 0, T0);
    assert_string_equal(fq_shaper_state_name(fq_shaper_state(&shaper, T0)), "open");
    s_assert_near(fq_shaper_configured_per_s(&shaper), 10, 0);

    //  The burst at once
    assert_int_equal(fq_shaper_allowance(&shaper, S_NONE_INFLIGHT, T0), 5);
    fq_shaper_take(&shaper, 5, T0);
    assert_int_equal(fq_shaper_allowance(&shaper, S_NONE_INFLIGHT, T0), 0);

    //  Then one per 100 ms, not a microsecond early
    assert_int_equal(fq_shaper_wait_us(&shaper, T0), 100 * S_MS);
    assert_int_equal(fq_shaper_allowance(&shaper, S_NONE_INFLIGHT, T0 + 100 * S_MS - 1), 0);
    assert_int_equal(fq_shaper_wait_us(&shaper, T0 + 100 * S_MS - 1), 1);
    assert_int_equal(fq_shaper_allowance(&shaper, S_NONE_INFLIGHT, T0 + 100 * S_MS), 1);

    //  Over 10 s polled every millisecond: the burst and then 10 a second
    fq_shaper_init(&shaper, 10, 5, 0, T0);
    assert_int_equal(s_release(&shaper, T0, T0 + 10 * S_S, S_MS), 5 + 100);
}

static void test_the_bucket_holds_the_burst_at_most(void **state)
{
    (void)state;
    fq_shaper_t shaper;
    fq_shaper_init(&shaper, 10, 5, 0, T0);
    fq_shaper_take(&shaper, 5, T0);
    //  A minute idle earns the burst, not 600
    assert_int_equal(fq_shaper_allowance(&shaper, S_NONE_INFLIGHT, T0 + 60 * S_S), 5);
    //  A full bucket does not grow by waiting
    assert_int_equal(fq_shaper_wait_us(&shaper, T0 + 60 * S_S), -1);
}

static void test_a_fraction_of_a_token_is_kept(void **state)
{
    (void)state;
    //  7 a minute, polled each second: one per 8.57 s. Dropping the
    //  fraction left at each release would give one per 9 s (66 in ten
    //  minutes); kept, it gives 70.
    fq_shaper_t shaper;
    fq_shaper_init(&shaper, 7.0 / 60, 2, 0, T0);
    fq_shaper_take(&shaper, 2, T0);
    assert_int_equal(s_release(&shaper, T0, T0 + 600 * S_S, S_S), 70);
}

static void test_a_release_beyond_the_allowance_is_paid_by_waiting(void **state)
{
    (void)state;
    fq_shaper_t shaper;
    fq_shaper_init(&shaper, 10, 1, 0, T0);
    fq_shaper_take(&shaper, 3, T0); //  Two more than the one token
    assert_int_equal(fq_shaper_wait_us(&shaper, T0), 300 * S_MS);
    assert_int_equal(fq_shaper_allowance(&shaper, S_NONE_INFLIGHT, T0 + 299 * S_MS), 0);
    assert_int_equal(fq_shaper_allowance(&shaper, S_NONE_INFLIGHT, T0 + 300 * S_MS), 1);
}

static void test_wait_us(void **state)
{
    (void)state;
    fq_shaper_t shaper;
    fq_shaper_init(&shaper, 10, 1, 0, T0);
    assert_int_equal(fq_shaper_wait_us(&shaper, T0), -1); //  A token is there
    fq_shaper_take(&shaper, 1, T0);
    assert_int_equal(fq_shaper_wait_us(&shaper, T0), 100 * S_MS);
    assert_int_equal(fq_shaper_wait_us(&shaper, T0 + 30 * S_MS), 70 * S_MS);

    fq_shaper_init(&shaper, 1.0 / 60, 1, 0, T0); //  1/min
    fq_shaper_take(&shaper, 1, T0);
    assert_int_equal(fq_shaper_wait_us(&shaper, T0), 60 * S_S);

    fq_shaper_init(&shaper, 1000.0 / 86400, 1, 0, T0); //  1000/d
    fq_shaper_take(&shaper, 1, T0);
    assert_int_equal(fq_shaper_wait_us(&shaper, T0), 86400 * S_MS);

    //  No rate: time changes nothing
    fq_shaper_init(&shaper, 0, 1, 0, T0);
    fq_shaper_take(&shaper, 1000, T0);
    assert_int_equal(fq_shaper_wait_us(&shaper, T0), -1);
}

static void test_max_inflight_bounds_the_allowance(void **state)
{
    (void)state;
    fq_shaper_t shaper;
    fq_shaper_init(&shaper, 0, 1, 3, T0); //  No rate, 3 in flight at most
    assert_int_equal(fq_shaper_allowance(&shaper, 0, T0), 3);
    assert_int_equal(fq_shaper_allowance(&shaper, 2, T0), 1);
    assert_int_equal(fq_shaper_allowance(&shaper, 3, T0), 0);
    assert_int_equal(fq_shaper_allowance(&shaper, 5, T0), 0);
    assert_int_equal(fq_shaper_wait_us(&shaper, T0), -1); //  A completion frees it

    //  With a rate, the lesser binds
    fq_shaper_init(&shaper, 100, 100, 10, T0);
    assert_int_equal(fq_shaper_allowance(&shaper, 0, T0), 10);
    fq_shaper_take(&shaper, 10, T0);
    assert_int_equal(fq_shaper_allowance(&shaper, 10, T0), 0);
    assert_int_equal(fq_shaper_wait_us(&shaper, T0), -1); //  90 tokens wait
    assert_int_equal(fq_shaper_allowance(&shaper, 4, T0), 6);

    //  Nothing limits at all
    fq_shaper_init(&shaper, 0, 1, 0, T0);
    assert_int_equal(fq_shaper_allowance(&shaper, 1000000, T0), INT64_MAX);
    s_assert_rate(&shaper, T0, 0);
}

// --------------------------------------------------------------------------
//  Throttling: down by half, back by steps

static void test_a_throttling_reply_halves_the_rate_once_a_second(void **state)
{
    (void)state;
    fq_shaper_t shaper;
    fq_shaper_init(&shaper, 100, 100, 0, T0);
    fq_shaper_throttled(&shaper, T0);
    s_assert_state(&shaper, T0, "throttled");
    s_assert_rate(&shaper, T0, 50);
    //  The saved-up burst is gone: the lower rate holds at once
    assert_int_equal(fq_shaper_allowance(&shaper, S_NONE_INFLIGHT, T0), 1);

    //  49 more replies to the same burst within half a second: one signal
    for (int i = 1; i < 50; i++)
        fq_shaper_throttled(&shaper, T0 + i * 10 * S_MS);
    s_assert_rate(&shaper, T0 + 500 * S_MS, 50);

    //  A reply a second after the decrease halves again
    fq_shaper_throttled(&shaper, T0 + S_S);
    s_assert_rate(&shaper, T0 + S_S, 25);
    s_assert_near(fq_shaper_configured_per_s(&shaper), 100, 0);
}

static void test_the_rate_stops_at_one_per_ten_seconds(void **state)
{
    (void)state;
    fq_shaper_t shaper;
    fq_shaper_init(&shaper, 10, 10, 0, T0);
    //  A reply every half second for 8 s: a decrease each second, and
    //  never a quiet second to climb in
    double expected[] = {5, 2.5, 1.25, 0.625, 0.3125, 0.15625, 0.1, 0.1};
    for (int i = 0; i < 16; i++) {
        int64_t now = T0 + i * 500 * S_MS;
        fq_shaper_throttled(&shaper, now);
        s_assert_rate(&shaper, now, expected[i / 2]);
    }
    int64_t last = T0 + 15 * 500 * S_MS;
    //  One message per 10 s
    fq_shaper_take(&shaper, 1, last);
    assert_int_equal(fq_shaper_wait_us(&shaper, last), S_S); //  Until the first step
    //  Then back up by 0.5 (5% of 10) per quiet second: 20 s to 10/s
    s_assert_rate(&shaper, last + S_S, 0.6);
    s_assert_rate(&shaper, last + 19 * S_S, 9.6);
    s_assert_state(&shaper, last + 20 * S_S - 1, "throttled");
    s_assert_state(&shaper, last + 20 * S_S, "open");
    s_assert_rate(&shaper, last + 20 * S_S, 10);
}

static void test_the_rate_climbs_back_in_quiet_seconds(void **state)
{
    (void)state;
    fq_shaper_t shaper;
    fq_shaper_init(&shaper, 100, 100, 0, T0);
    fq_shaper_throttled(&shaper, T0);
    //  5/s a quiet second, 10 s from 50 back to 100
    s_assert_rate(&shaper, T0 + S_S - 1, 50);
    s_assert_rate(&shaper, T0 + S_S, 55);
    s_assert_rate(&shaper, T0 + 9 * S_S + 999 * S_MS, 95);
    s_assert_state(&shaper, T0 + 9 * S_S + 999 * S_MS, "throttled");
    s_assert_state(&shaper, T0 + 10 * S_S, "open");
    s_assert_rate(&shaper, T0 + 10 * S_S, 100);

    //  What the scheduler gets meanwhile: the token left, then 50, 55, ...
    //  95 in the ten seconds of the climb
    fq_shaper_init(&shaper, 100, 100, 0, T0);
    fq_shaper_take(&shaper, 100, T0);
    fq_shaper_throttled(&shaper, T0);
    int64_t released = s_release(&shaper, T0, T0 + 10 * S_S - S_MS, S_MS);
    assert_in_range(released, 725 - 1, 725 + 1);
}

static void test_a_reply_restarts_the_quiet_second(void **state)
{
    (void)state;
    fq_shaper_t shaper;
    fq_shaper_init(&shaper, 100, 100, 0, T0);
    fq_shaper_throttled(&shaper, T0);
    //  A late reply (ignored for the rate) 0.9 s later: no step at T0 + 1 s
    fq_shaper_throttled(&shaper, T0 + 900 * S_MS);
    s_assert_rate(&shaper, T0 + S_S, 50);
    s_assert_rate(&shaper, T0 + 1900 * S_MS, 55);
}

static void test_reads_do_not_change_the_outcome(void **state)
{
    (void)state;
    //  Two destinations throttled alike; one read every millisecond, the
    //  other only at the end. Tokens earned over the climb: 1 left, then
    //  50 + 55 + ... + 95, then 2 s at 100.
    fq_shaper_t often, once;
    fq_shaper_init(&often, 100, 10000, 0, T0);
    fq_shaper_init(&once, 100, 10000, 0, T0);
    fq_shaper_throttled(&often, T0);
    fq_shaper_throttled(&once, T0);
    for (int64_t now = T0; now < T0 + 12 * S_S; now += S_MS)
        (void)fq_shaper_allowance(&often, S_NONE_INFLIGHT, now);
    assert_int_equal(fq_shaper_allowance(&often, S_NONE_INFLIGHT, T0 + 12 * S_S), 926);
    assert_int_equal(fq_shaper_allowance(&once, S_NONE_INFLIGHT, T0 + 12 * S_S), 926);
}

static void test_wait_us_during_the_climb(void **state)
{
    (void)state;
    fq_shaper_t shaper;
    fq_shaper_init(&shaper, 1, 1, 0, T0); //  Step: the least, 0.1/s
    fq_shaper_throttled(&shaper, T0);     //  0.5/s
    fq_shaper_take(&shaper, 1, T0);
    //  At 0.5/s the next token is 2 s away, but the rate goes up in 1 s
    assert_int_equal(fq_shaper_wait_us(&shaper, T0), S_S);
    //  Then half a token is there, and 0.6/s brings the rest
    assert_int_equal(fq_shaper_wait_us(&shaper, T0 + S_S), 833334);
    assert_int_equal(fq_shaper_allowance(&shaper, S_NONE_INFLIGHT, T0 + S_S + 833333), 0);
    assert_int_equal(fq_shaper_allowance(&shaper, S_NONE_INFLIGHT, T0 + S_S + 833334), 1);
}

static void test_an_unlimited_destination_is_slowed_from_what_it_took(void **state)
{
    (void)state;
    fq_shaper_t shaper;
    fq_shaper_init(&shaper, 0, 1, 0, T0);
    //  200 a second for 3 s
    for (int64_t now = T0; now < T0 + 3 * S_S; now += 5 * S_MS) {
        assert_int_equal(fq_shaper_allowance(&shaper, S_NONE_INFLIGHT, now), INT64_MAX);
        fq_shaper_take(&shaper, 1, now);
    }
    int64_t t = T0 + 3 * S_S;
    fq_shaper_throttled(&shaper, t);
    s_assert_state(&shaper, t, "throttled");
    s_assert_rate(&shaper, t, 100);
    s_assert_near(fq_shaper_configured_per_s(&shaper), 0, 0);
    assert_int_equal(fq_shaper_allowance(&shaper, S_NONE_INFLIGHT, t), 1);
    fq_shaper_take(&shaper, 1, t);
    assert_int_equal(fq_shaper_wait_us(&shaper, t), 10 * S_MS);

    //  Back by 10/s (5% of the 200 it took) a quiet second: unlimited
    //  again after 10 s
    s_assert_rate(&shaper, t + 5 * S_S, 150);
    s_assert_state(&shaper, t + 10 * S_S - 1, "throttled");
    s_assert_state(&shaper, t + 10 * S_S, "open");
    s_assert_rate(&shaper, t + 10 * S_S, 0);
    assert_int_equal(fq_shaper_allowance(&shaper, S_NONE_INFLIGHT, t + 10 * S_S), INT64_MAX);
    assert_int_equal(fq_shaper_wait_us(&shaper, t + 10 * S_S), -1);
}

static void test_an_unlimited_destination_throttled_unseen_starts_at_ten(void **state)
{
    (void)state;
    fq_shaper_t shaper;
    fq_shaper_init(&shaper, 0, 1, 0, T0);
    fq_shaper_throttled(&shaper, T0);
    s_assert_rate(&shaper, T0, 5);
    s_assert_rate(&shaper, T0 + 9 * S_S, 9.5);
    s_assert_rate(&shaper, T0 + 10 * S_S, 0);
}

// --------------------------------------------------------------------------
//  Suspension

//  Three connection failures in a row at now.
static void s_fail_three(fq_shaper_t *shaper, int64_t now)
{
    for (int i = 0; i < FQ_SHAPER_SUSPEND_AFTER; i++)
        fq_shaper_unreachable(shaper, now);
}

static void test_three_failures_suspend_for_thirty_seconds(void **state)
{
    (void)state;
    fq_shaper_t shaper;
    fq_shaper_init(&shaper, 10, 10, 0, T0);
    fq_shaper_unreachable(&shaper, T0);
    fq_shaper_unreachable(&shaper, T0);
    s_assert_state(&shaper, T0, "open"); //  Two can be a blip
    fq_shaper_unreachable(&shaper, T0);
    s_assert_state(&shaper, T0, "suspended");
    assert_int_equal(fq_shaper_suspended_for_us(&shaper, T0), 30 * S_S);
    assert_int_equal(fq_shaper_allowance(&shaper, S_NONE_INFLIGHT, T0), 0);
    assert_int_equal(fq_shaper_wait_us(&shaper, T0), 30 * S_S);
    s_assert_rate(&shaper, T0, 10); //  What it will resume at

    //  Failures reported meanwhile do not extend it
    s_fail_three(&shaper, T0 + 10 * S_S);
    assert_int_equal(fq_shaper_suspended_for_us(&shaper, T0 + 10 * S_S), 20 * S_S);
    assert_int_equal(fq_shaper_wait_us(&shaper, T0 + 10 * S_S), 20 * S_S);

    //  It ends by itself, with one token: a probe first
    int64_t end = T0 + 30 * S_S;
    assert_int_equal(fq_shaper_allowance(&shaper, S_NONE_INFLIGHT, end - 1), 0);
    s_assert_state(&shaper, end, "open");
    assert_int_equal(fq_shaper_suspended_for_us(&shaper, end), 0);
    assert_int_equal(fq_shaper_allowance(&shaper, S_NONE_INFLIGHT, end), 1);
    fq_shaper_take(&shaper, 1, end);
    assert_int_equal(fq_shaper_wait_us(&shaper, end), 100 * S_MS);

    //  The run of failures starts again from 0
    fq_shaper_unreachable(&shaper, end);
    fq_shaper_unreachable(&shaper, end);
    s_assert_state(&shaper, end, "open");
}

static void test_a_delivery_breaks_the_run(void **state)
{
    (void)state;
    fq_shaper_t shaper;
    fq_shaper_init(&shaper, 10, 10, 0, T0);
    fq_shaper_unreachable(&shaper, T0);
    fq_shaper_unreachable(&shaper, T0);
    fq_shaper_delivered(&shaper, T0);
    fq_shaper_unreachable(&shaper, T0);
    fq_shaper_unreachable(&shaper, T0);
    s_assert_state(&shaper, T0, "open");
}

static void test_the_back_off_doubles_up_to_fifteen_minutes(void **state)
{
    (void)state;
    fq_shaper_t shaper;
    fq_shaper_init(&shaper, 10, 10, 0, T0);
    int64_t expected_s[] = {30, 60, 120, 240, 480, 900, 900};
    int64_t now = T0;
    for (size_t i = 0; i < sizeof expected_s / sizeof expected_s[0]; i++) {
        s_fail_three(&shaper, now);
        assert_int_equal(fq_shaper_suspended_for_us(&shaper, now), expected_s[i] * S_S);
        now += expected_s[i] * S_S; //  Resumes, and fails again at once
        s_assert_state(&shaper, now, "open");
    }
    //  A delivery: the next suspension is a short one again
    fq_shaper_delivered(&shaper, now);
    s_fail_three(&shaper, now);
    assert_int_equal(fq_shaper_suspended_for_us(&shaper, now), 30 * S_S);
}

static void test_a_suspension_keeps_the_throttle_where_it_was(void **state)
{
    (void)state;
    fq_shaper_t shaper;
    fq_shaper_init(&shaper, 100, 100, 0, T0);
    fq_shaper_throttled(&shaper, T0);
    s_fail_three(&shaper, T0 + 500 * S_MS);
    s_assert_state(&shaper, T0 + 20 * S_S, "suspended");
    //  Resumed throttled at 50, the climb going on from where it paused
    int64_t end = T0 + 30500 * S_MS;
    s_assert_state(&shaper, end, "throttled");
    s_assert_rate(&shaper, end, 50);
    assert_int_equal(fq_shaper_allowance(&shaper, S_NONE_INFLIGHT, end), 1);
    s_assert_rate(&shaper, end + 500 * S_MS, 55);
}

// --------------------------------------------------------------------------
//  Configuration changes

static void test_configure_keeps_a_throttle_and_caps_it(void **state)
{
    (void)state;
    fq_shaper_t shaper;
    fq_shaper_init(&shaper, 100, 100, 0, T0);
    fq_shaper_throttled(&shaper, T0);

    //  Raised to 80/s: still throttled at 50, climbing by 4 to 80 (8 s)
    fq_shaper_configure(&shaper, 80, 80, 0, T0);
    s_assert_state(&shaper, T0, "throttled");
    s_assert_rate(&shaper, T0, 50);
    s_assert_rate(&shaper, T0 + 7 * S_S, 78);
    s_assert_state(&shaper, T0 + 8 * S_S, "open");
    s_assert_rate(&shaper, T0 + 8 * S_S, 80);

    //  Lowered below the throttled rate: capped, still throttled until a
    //  quiet second has passed
    fq_shaper_init(&shaper, 100, 100, 0, T0);
    fq_shaper_throttled(&shaper, T0);
    fq_shaper_configure(&shaper, 20, 20, 0, T0 + 500 * S_MS);
    s_assert_state(&shaper, T0 + 500 * S_MS, "throttled");
    s_assert_rate(&shaper, T0 + 500 * S_MS, 20);
    s_assert_near(fq_shaper_configured_per_s(&shaper), 20, 0);
    s_assert_state(&shaper, T0 + S_S, "open");
    s_assert_rate(&shaper, T0 + S_S, 20);
}

static void test_configure_clamps_the_tokens(void **state)
{
    (void)state;
    fq_shaper_t shaper;
    fq_shaper_init(&shaper, 100, 100, 0, T0);
    fq_shaper_configure(&shaper, 100, 10, 0, T0);
    assert_int_equal(fq_shaper_allowance(&shaper, S_NONE_INFLIGHT, T0), 10);

    //  A destination given its first rate starts with a full bucket
    fq_shaper_init(&shaper, 0, 1, 0, T0);
    fq_shaper_configure(&shaper, 10, 5, 2, T0);
    assert_int_equal(fq_shaper_allowance(&shaper, S_NONE_INFLIGHT, T0), 2);
    assert_int_equal(fq_shaper_allowance(&shaper, 1, T0), 1);
    fq_shaper_configure(&shaper, 10, 5, 0, T0);
    assert_int_equal(fq_shaper_allowance(&shaper, S_NONE_INFLIGHT, T0), 5);
}

//  A 429 with Retry-After: 20 halves the rate and holds the destination
//  for those 20 s; it then resumes throttled, with one token to probe.
//  A later, shorter Retry-After does not cut the hold short.
static void test_retry_after_holds_the_destination(void **state)
{
    (void)state;
    fq_shaper_t shaper;
    fq_shaper_init(&shaper, 10, 10, 0, T0);
    fq_shaper_retry_after(&shaper, 20 * S_S, T0);
    assert_int_equal(fq_shaper_state(&shaper, T0), FQ_SHAPER_SUSPENDED);
    assert_int_equal(fq_shaper_allowance(&shaper, S_NONE_INFLIGHT, T0 + S_S), 0);
    fq_shaper_retry_after(&shaper, 5 * S_S, T0 + 2 * S_S);
    assert_int_equal(fq_shaper_suspended_for_us(&shaper, T0 + 10 * S_S), 10 * S_S);
    assert_int_equal(fq_shaper_wait_us(&shaper, T0 + 19 * S_S), S_S);
    assert_int_equal(fq_shaper_allowance(&shaper, S_NONE_INFLIGHT, T0 + 20 * S_S), 1);
    assert_int_equal(fq_shaper_state(&shaper, T0 + 20 * S_S), FQ_SHAPER_THROTTLED);
    s_assert_rate(&shaper, T0 + 20 * S_S, 5);
    //  Without a wait it is a plain throttling reply
    fq_shaper_t plain;
    fq_shaper_init(&plain, 10, 10, 0, T0);
    fq_shaper_retry_after(&plain, 0, T0);
    assert_int_equal(fq_shaper_state(&plain, T0), FQ_SHAPER_THROTTLED);
    assert_int_equal(fq_shaper_allowance(&plain, S_NONE_INFLIGHT, T0), 1);
}

static void test_state_names(void **state)
{
    (void)state;
    assert_string_equal(fq_shaper_state_name(FQ_SHAPER_OPEN), "open");
    assert_string_equal(fq_shaper_state_name(FQ_SHAPER_THROTTLED), "throttled");
    assert_string_equal(fq_shaper_state_name(FQ_SHAPER_SUSPENDED), "suspended");
    assert_string_equal(fq_shaper_state_name((fq_shaper_state_t)42), "unknown");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_burst_then_exactly_the_rate),
        cmocka_unit_test(test_the_bucket_holds_the_burst_at_most),
        cmocka_unit_test(test_a_fraction_of_a_token_is_kept),
        cmocka_unit_test(test_a_release_beyond_the_allowance_is_paid_by_waiting),
        cmocka_unit_test(test_wait_us),
        cmocka_unit_test(test_max_inflight_bounds_the_allowance),
        cmocka_unit_test(test_a_throttling_reply_halves_the_rate_once_a_second),
        cmocka_unit_test(test_the_rate_stops_at_one_per_ten_seconds),
        cmocka_unit_test(test_the_rate_climbs_back_in_quiet_seconds),
        cmocka_unit_test(test_a_reply_restarts_the_quiet_second),
        cmocka_unit_test(test_reads_do_not_change_the_outcome),
        cmocka_unit_test(test_wait_us_during_the_climb),
        cmocka_unit_test(test_an_unlimited_destination_is_slowed_from_what_it_took),
        cmocka_unit_test(test_an_unlimited_destination_throttled_unseen_starts_at_ten),
        cmocka_unit_test(test_three_failures_suspend_for_thirty_seconds),
        cmocka_unit_test(test_a_delivery_breaks_the_run),
        cmocka_unit_test(test_the_back_off_doubles_up_to_fifteen_minutes),
        cmocka_unit_test(test_a_suspension_keeps_the_throttle_where_it_was),
        cmocka_unit_test(test_configure_keeps_a_throttle_and_caps_it),
        cmocka_unit_test(test_configure_clamps_the_tokens),
        cmocka_unit_test(test_retry_after_holds_the_destination),
        cmocka_unit_test(test_state_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
