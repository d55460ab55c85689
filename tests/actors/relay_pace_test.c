/*  relay_pace_test.c — a sender's relay limit in the dispatcher
    (fq_relay_pace.h) alone: the capability read from a HELLO, credit
    held and let go no faster than the rate (after a burst of one second's
    worth), channels in turns. Time is simulated. */
#include "fq_relay_pace.h"
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#define S_MS INT64_C(1000)
#define S_S  INT64_C(1000000)
#define T0   (INT64_C(777) * S_S)

static void test_the_capability(void **state)
{
    (void)state;
    fq_rate_t rate;
    assert_true(fq_relay_pace_capability("smtp,batch,channel=email,max_rate=14/s", &rate));
    assert_int_equal(rate.count, 14);
    assert_int_equal(rate.period_s, 1);
    assert_true(fq_relay_pace_capability(" max_rate=600/min , batch", &rate));
    assert_int_equal(rate.count, 600);
    assert_int_equal(rate.period_s, 60);
    //  None, or one that does not read: not paced
    assert_false(fq_relay_pace_capability("smtp,batch", &rate));
    assert_false(fq_relay_pace_capability("", &rate));
    assert_false(fq_relay_pace_capability("max_rate=", &rate));
    assert_false(fq_relay_pace_capability("max_rate=fast", &rate));
    assert_false(fq_relay_pace_capability("max_rate=0/s", &rate));
    assert_false(fq_relay_pace_capability("xmax_rate=5/s", &rate));
}

//  20 workers' credit at 10/s: 10 at once (one second's burst), then one
//  each 100 ms, and over 10 s no more than 10 + 100.
static void test_credit_goes_on_at_the_rate(void **state)
{
    (void)state;
    fq_rate_t rate = {10, 1};
    fq_relay_pace_t *pace = fq_relay_pace_new(&rate, T0);
    assert_non_null(pace);
    int64_t released[1];
    fq_relay_pace_hold(pace, 0, 20);
    assert_int_equal(fq_relay_pace_release(pace, 1, released, T0), 10);
    assert_int_equal(released[0], 10);
    assert_int_equal(fq_relay_pace_held(pace), 10);
    assert_int_equal(fq_relay_pace_wait_us(pace, T0), 100 * S_MS);
    assert_int_equal(fq_relay_pace_release(pace, 1, released, T0 + 50 * S_MS), 0);
    assert_int_equal(fq_relay_pace_release(pace, 1, released, T0 + 100 * S_MS), 1);
    //  Every answer's credit comes back to be held: over 10 s, 10 + 100
    int64_t total = 11;
    for (int64_t t = T0 + 101 * S_MS; t <= T0 + 10 * S_S; t += S_MS) {
        int64_t n = fq_relay_pace_release(pace, 1, released, t);
        fq_relay_pace_hold(pace, 0, n); //  Answered at once
        total += n;
    }
    assert_int_equal(total, 10 + 100);
    fq_relay_pace_destroy(&pace);
    assert_null(pace);
}

//  Nothing held: nothing to wait for; channels take turns.
static void test_channels_take_turns(void **state)
{
    (void)state;
    fq_rate_t rate = {4, 1};
    fq_relay_pace_t *pace = fq_relay_pace_new(&rate, T0);
    int64_t released[2];
    assert_int_equal(fq_relay_pace_wait_us(pace, T0), -1);
    fq_relay_pace_hold(pace, 0, 10);
    fq_relay_pace_hold(pace, 1, 10);
    assert_int_equal(fq_relay_pace_release(pace, 2, released, T0), 4);
    assert_int_equal(released[0], 2);
    assert_int_equal(released[1], 2);
    //  A channel index past the sender's is never held
    fq_relay_pace_hold(pace, FQ_RELAY_PACE_CHANNELS, 5);
    fq_relay_pace_hold(pace, -1, 5);
    assert_int_equal(fq_relay_pace_held(pace), 16);
    fq_relay_pace_destroy(&pace);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_the_capability),
        cmocka_unit_test(test_credit_goes_on_at_the_rate),
        cmocka_unit_test(test_channels_take_turns),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
