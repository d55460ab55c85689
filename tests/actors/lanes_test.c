/*  lanes_test.c — the scheduler's lanes (fq_lanes.h) alone: one per
    channel and destination, the channel's credit shared by its lanes, the
    destination's budget shared by its lanes (one per channel), and a
    destination no longer configured shaped by "default"'s budget. No
    database, no actor. */
#include "fq_lanes.h"
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#define S_PREFETCH 8

static fq_destination_budget_t s_budget(const char *name, int64_t count, int period_s,
                                        int64_t burst, int64_t max_inflight)
{
    fq_destination_budget_t budget = {.rate_count = count,
                                      .rate_period_s = period_s,
                                      .burst = burst,
                                      .max_inflight = max_inflight};
    strcpy(budget.name, name);
    return budget;
}

//  A lane per channel and destination; "" and NULL are email and default.
static void test_a_lane_per_channel_and_destination(void **state)
{
    (void)state;
    fq_lanes_t *lanes = fq_lanes_new(S_PREFETCH);
    fq_lane_t *mail = fq_lanes_get(lanes, "email", NULL);
    assert_non_null(mail);
    assert_ptr_equal(fq_lanes_get(lanes, "", "default"), mail);
    assert_string_equal(mail->destination, FQ_STORE_DESTINATION_DEFAULT);
    fq_lane_t *google = fq_lanes_get(lanes, "email", "google");
    fq_lane_t *hooks = fq_lanes_get(lanes, "http", NULL);
    assert_true(google != mail && hooks != mail && hooks != google);
    assert_int_equal(fq_lanes_count(lanes), 3);
    //  The two mail lanes spend one credit; http its own
    assert_ptr_equal(google->channel, mail->channel);
    assert_true(hooks->channel != mail->channel);
    assert_int_equal(fq_lanes_channel_count(lanes), 2);
    //  A name too long is no lane
    char long_name[FQ_STORE_DESTINATION_SIZE + 1];
    memset(long_name, 'a', sizeof long_name - 1);
    long_name[sizeof long_name - 1] = 0;
    assert_null(fq_lanes_get(lanes, "email", long_name));
    fq_lanes_destroy(&lanes);
    assert_null(lanes);
}

//  A configured destination's lanes spend its budget, whichever channel;
//  one not configured (deleted since its messages were stamped) spends the
//  default's, and its own again once it is configured anew.
static void test_budgets_follow_the_configuration(void **state)
{
    (void)state;
    fq_lanes_t *lanes = fq_lanes_new(S_PREFETCH);
    fq_destination_budget_t budgets[] = {s_budget("default", 0, 0, 0, 0),
                                         s_budget("google", 10, 1, 5, 3)};
    fq_lanes_configure(lanes, budgets, 2, 0);
    fq_lane_t *google_mail = fq_lanes_get(lanes, "email", "google");
    fq_lane_t *google_hooks = fq_lanes_get(lanes, "http", "google");
    fq_lane_t *gone = fq_lanes_get(lanes, "email", "gone");
    fq_lane_t *fallback = fq_lanes_get(lanes, "email", NULL);
    assert_ptr_equal(google_mail->budget, google_hooks->budget);
    assert_string_equal(google_mail->budget->name, "google");
    assert_ptr_equal(gone->budget, fallback->budget);
    //  10/s, burst 5, at most 3 in flight: the smaller bound holds
    fq_shaper_t *shaper = &google_mail->budget->shaper;
    assert_int_equal(fq_shaper_allowance(shaper, 0, 0), 3);
    assert_int_equal(fq_shaper_allowance(shaper, 1, 0), 2);
    assert_true(fq_shaper_configured_per_s(shaper) == 10.0);
    //  Without a burst a rate's bucket holds one second's worth
    fq_destination_budget_t again[] = {s_budget("default", 0, 0, 0, 0),
                                       s_budget("google", 120, 60, 0, 0),
                                       s_budget("gone", 1, 1, 0, 0)};
    fq_lanes_configure(lanes, again, 3, 0);
    assert_int_equal(fq_shaper_allowance(shaper, 0, 0), 2);
    assert_string_equal(gone->budget->name, "gone");
    //  Deleted: google's lanes take the default's budget, with what they
    //  have in flight
    google_mail->budget->inflight = 2;
    fq_lanes_configure(lanes, again, 1, 0);
    assert_ptr_equal(google_mail->budget, fallback->budget);
    assert_int_equal(fallback->budget->inflight, 0); //  None of its own was in flight
    fq_lanes_destroy(&lanes);
}

//  An idle lane goes; one a request takes part in, or with messages, stays.
static void test_idle_lanes_are_pruned(void **state)
{
    (void)state;
    fq_lanes_t *lanes = fq_lanes_new(S_PREFETCH);
    fq_lane_t *held = fq_lanes_get(lanes, "email", "google");
    fq_lane_t *busy = fq_lanes_get(lanes, "email", "yahoo");
    fq_lanes_get(lanes, "email", "idle");
    fq_lanes_hold(held);
    assert_int_equal(fq_fairness_push(busy->fairness, 1, 1, 100), 0);
    fq_lanes_prune(lanes);
    assert_int_equal(fq_lanes_count(lanes), 2);
    fq_lanes_release(held);
    fq_lanes_prune(lanes);
    assert_int_equal(fq_lanes_count(lanes), 1);
    assert_string_equal(fq_lanes_at(lanes, 0)->destination, "yahoo");
    //  Channels stay, their credit with them; destinations are the
    //  configured ones (none here but "default"), whatever lanes come
    assert_int_equal(fq_lanes_channel_count(lanes), 1);
    assert_int_equal(fq_lanes_destination_count(lanes), 1);
    fq_lanes_destroy(&lanes);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_lane_per_channel_and_destination),
        cmocka_unit_test(test_budgets_follow_the_configuration),
        cmocka_unit_test(test_idle_lanes_are_pruned),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
