/*  tenant_budgets_test.c — the scheduler's tenant holds (fq_tenant_budgets.h)
    alone: an operator's hold keeps a tenant out of every lane's turns, in
    lanes made before and after it, and composes with a spent send rate: a
    tenant held both ways takes its turns again only when both allow. A
    rate needs no database (only a daily quota reserves). No actor. */
#include "fq_tenant_budgets.h"
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#define S_PREFETCH 8
#define S_TENANT   1
#define S_OTHER    2
#define S_SECOND   INT64_C(1000000)

static int64_t s_wall(void)
{
    return 0; //  The first second of a UTC day, always
}

//  A lane with one request of tenant holding one ready message.
static void s_ready(fq_lane_t *lane, int64_t request, int64_t tenant, int64_t message)
{
    assert_int_equal(fq_fairness_request_add(lane->fairness, request, tenant, 0, 0, true), 0);
    int64_t id, after;
    int limit;
    assert_int_equal(fq_fairness_next_refill(lane->fairness, &id, &after, &limit), 1);
    assert_int_equal(fq_fairness_request_fill(lane->fairness, request, &message, 1), 0);
}

//  Whom the lane would send next: the tenant, or 0 for nobody.
static int64_t s_next(fq_lane_t *lane)
{
    fq_pick_t pick;
    if (!fq_fairness_next(lane->fairness, &pick))
        return 0;
    //  Put back: the test only asks who may go
    fq_fairness_push(lane->fairness, pick.request_id, pick.tenant_id, pick.message_id);
    fq_fairness_done(lane->fairness, pick.tenant_id);
    return pick.tenant_id;
}

static void test_operator_hold_in_every_lane(void **state)
{
    (void)state;
    fq_lanes_t *lanes = fq_lanes_new(S_PREFETCH);
    fq_tenant_budgets_t *budgets = fq_tenant_budgets_new(lanes, NULL, s_wall);
    fq_lane_t *mail = fq_lanes_get(lanes, "email", NULL);
    s_ready(mail, 10, S_TENANT, 100);
    assert_int_equal(s_next(mail), S_TENANT);

    int64_t held[] = {S_TENANT};
    assert_int_equal(fq_tenant_budgets_operator_holds(budgets, held, 1), 0);
    assert_true(fq_tenant_budgets_operator_held(budgets, S_TENANT));
    assert_false(fq_tenant_budgets_operator_held(budgets, S_OTHER));
    assert_int_equal(s_next(mail), 0);
    //  A lane made later holds it as it joins
    fq_lane_t *hooks = fq_lanes_get(lanes, "http", NULL);
    fq_tenant_budgets_joined(budgets, S_TENANT, hooks->fairness);
    s_ready(hooks, 11, S_TENANT, 101);
    assert_int_equal(s_next(hooks), 0);
    //  The others go on
    s_ready(mail, 12, S_OTHER, 102);
    assert_int_equal(s_next(mail), S_OTHER);
    //  Named again: nothing changes; named no more: let back in everywhere
    assert_int_equal(fq_tenant_budgets_operator_holds(budgets, held, 1), 0);
    assert_int_equal(s_next(hooks), 0);
    assert_int_equal(fq_tenant_budgets_operator_holds(budgets, NULL, 0), 0);
    assert_int_equal(s_next(hooks), S_TENANT);
    fq_tenant_budgets_destroy(&budgets, false);
    fq_lanes_destroy(&lanes);
}

static void test_held_both_ways_goes_when_both_allow(void **state)
{
    (void)state;
    fq_lanes_t *lanes = fq_lanes_new(S_PREFETCH);
    fq_tenant_budgets_t *budgets = fq_tenant_budgets_new(lanes, NULL, s_wall);
    fq_lane_t *mail = fq_lanes_get(lanes, "email", NULL);
    s_ready(mail, 10, S_TENANT, 100);
    int64_t now = S_SECOND;
    //  One message a second: the first spends it, and the budget holds
    fq_tenant_budgets_configure(budgets, S_TENANT, 1, 1, 0, now);
    assert_true(fq_tenant_budgets_take(budgets, S_TENANT, now));
    assert_int_equal(s_next(mail), 0);
    //  The operator holds it too; the rate refills: still held
    int64_t held[] = {S_TENANT};
    assert_int_equal(fq_tenant_budgets_operator_holds(budgets, held, 1), 0);
    now += 2 * S_SECOND;
    fq_tenant_budgets_wake(budgets, now);
    assert_int_equal(s_next(mail), 0);
    //  Released by the operator: its budget allows, so it goes
    assert_int_equal(fq_tenant_budgets_operator_holds(budgets, NULL, 0), 0);
    assert_int_equal(s_next(mail), S_TENANT);

    //  The other order: released by the operator while its budget holds
    assert_true(fq_tenant_budgets_take(budgets, S_TENANT, now));
    assert_int_equal(s_next(mail), 0);
    assert_int_equal(fq_tenant_budgets_operator_holds(budgets, held, 1), 0);
    assert_int_equal(fq_tenant_budgets_operator_holds(budgets, NULL, 0), 0);
    assert_int_equal(s_next(mail), 0);
    now += 2 * S_SECOND;
    fq_tenant_budgets_wake(budgets, now);
    assert_int_equal(s_next(mail), S_TENANT);

    //  Its limits removed while an operator holds it: still held
    assert_int_equal(fq_tenant_budgets_operator_holds(budgets, held, 1), 0);
    assert_true(fq_tenant_budgets_configure(budgets, S_TENANT, 0, 0, 0, now));
    assert_int_equal(s_next(mail), 0);
    fq_tenant_budgets_destroy(&budgets, false);
    fq_lanes_destroy(&lanes);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_operator_hold_in_every_lane),
        cmocka_unit_test(test_held_both_ways_goes_when_both_allow),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
