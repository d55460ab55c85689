/*  send_budget_test.c — one tenant's send rate and daily quota, as the
    scheduler uses them.

    Whenever a message of the tenant could go, the scheduler asks how many
    may (fq_send_budget_allowance). With a quota, a block must be reserved
    in the database first: fq_send_budget_want says how much, and the
    database's answer (what was reserved before and after, by anyone) comes
    back as fq_send_budget_reserved. Here the database is a counter: the
    unit under test is the arithmetic, the SQL is tested by
    sql.store_send_days_test. Time is simulated.
*/
#include "fq_send_budget.h"
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#define S_S  INT64_C(1000000)
#define T0   (INT64_C(777) * S_S)
#define DAY1 INT64_C(20000)
#define DAY2 (DAY1 + 1)

//  The database row of one tenant's day: what is reserved, by anyone.
typedef struct {
    int64_t reserved;
    int64_t reservations; //  Statements run
} s_row_t;

//  What fq_store_reserve_sends does: never past the quota.
static void s_reserve(fq_send_budget_t *budget, s_row_t *row)
{
    int64_t want = fq_send_budget_want(budget);
    if (want <= 0)
        return;
    int64_t before = row->reserved;
    int64_t after = before + want < budget->quota ? before + want : budget->quota;
    if (after < before)
        after = before;
    row->reserved = after;
    row->reservations++;
    fq_send_budget_reserved(budget, before, after);
}

//  The scheduler's loop: hands out one message at a time while the budget
//  allows, reserving when it must. Returns how many went.
static int64_t s_send(fq_send_budget_t *budget, s_row_t *row, int64_t most, int64_t now)
{
    int64_t sent = 0;
    while (sent < most) {
        if (fq_send_budget_allowance(budget, now) == 0)
            s_reserve(budget, row);
        if (fq_send_budget_allowance(budget, now) == 0)
            break;
        fq_send_budget_take(budget, 1, now);
        sent++;
    }
    return sent;
}

static fq_send_budget_t s_budget(const char *rate_text, int64_t quota, int64_t day)
{
    fq_send_budget_t budget = {0};
    fq_rate_t rate = {0};
    if (rate_text)
        assert_int_equal(fq_rate_parse(rate_text, &rate, NULL, 0), 0);
    fq_send_budget_configure(&budget, rate_text ? &rate : NULL, quota, T0);
    fq_send_budget_today(&budget, day);
    return budget;
}

//  No limits: everything goes, and nothing is reserved.
static void test_unlimited(void **state)
{
    (void)state;
    fq_send_budget_t budget = s_budget(NULL, 0, DAY1);
    assert_false(fq_send_budget_limits(&budget));
    assert_int_equal(fq_send_budget_allowance(&budget, T0), INT64_MAX);
    assert_int_equal(fq_send_budget_want(&budget), 0);
}

//  A rate of 10/s: a second's burst at once, then 10 a second.
static void test_rate(void **state)
{
    (void)state;
    fq_send_budget_t budget = s_budget("10/s", 0, DAY1);
    s_row_t row = {0};
    assert_true(fq_send_budget_limits(&budget));
    assert_int_equal(s_send(&budget, &row, 1000, T0), 10);
    assert_int_equal(fq_send_budget_allowance(&budget, T0), 0);
    //  The next token in 100 ms
    assert_int_equal(fq_send_budget_wait_us(&budget, T0, 0), S_S / 10);
    int64_t sent = 0;
    for (int64_t t = T0; t <= T0 + 5 * S_S; t += S_S / 100)
        sent += s_send(&budget, &row, 1000, t);
    assert_int_equal(sent, 50);
    assert_int_equal(row.reservations, 0);
}

//  A quota of 100 a day: reserved in blocks of 2 (a fiftieth), never
//  past 100, then held until the next day, which starts afresh.
static void test_quota(void **state)
{
    (void)state;
    fq_send_budget_t budget = s_budget(NULL, 100, DAY1);
    s_row_t row = {0};
    //  Nothing is known before the first reservation
    assert_int_equal(fq_send_budget_allowance(&budget, T0), 0);
    assert_int_equal(fq_send_budget_want(&budget), 2);
    assert_int_equal(fq_send_budget_wait_us(&budget, T0, 0), -1);
    assert_int_equal(s_send(&budget, &row, 1000, T0), 100);
    assert_int_equal(row.reserved, 100);
    assert_int_equal(row.reservations, 50);
    assert_true(fq_send_budget_quota_spent(&budget));
    assert_int_equal(fq_send_budget_want(&budget), 0);
    //  Held until midnight UTC: 10 s before it, 10 s to wait
    assert_int_equal(fq_send_budget_wait_us(&budget, T0, 86400 - 10), 10 * S_S);
    assert_int_equal(s_send(&budget, &row, 1000, T0 + S_S), 0);
    //  What comes back unsent no longer counts: it may go again
    fq_send_budget_give_back(&budget, 3, DAY1);
    assert_false(fq_send_budget_quota_spent(&budget));
    assert_int_equal(s_send(&budget, &row, 1000, T0 + S_S), 3);
    //  Given back for a day that is over: that day's count stands
    fq_send_budget_today(&budget, DAY2);
    fq_send_budget_give_back(&budget, 3, DAY1);
    assert_int_equal(budget.used, 0);
    s_row_t next_day = {0};
    assert_int_equal(s_send(&budget, &next_day, 1000, T0 + 2 * S_S), 100);
}

//  Blocks: a fiftieth of the quota, at least 1, at most 1,000.
static void test_block_size(void **state)
{
    (void)state;
    fq_send_budget_t small = s_budget(NULL, 7, DAY1);
    assert_int_equal(fq_send_budget_want(&small), 1);
    fq_send_budget_t middle = s_budget(NULL, 10000, DAY1);
    assert_int_equal(fq_send_budget_want(&middle), 200);
    fq_send_budget_t big = s_budget(NULL, 10000000, DAY1);
    assert_int_equal(fq_send_budget_want(&big), FQ_SEND_BUDGET_BLOCK_MAX);
}

//  A scheduler that starts (after a crash, or a failover) counts what
//  earlier leaders reserved that day as sent: the quota holds across it,
//  at the cost of at most one unused block.
static void test_restart_keeps_quota(void **state)
{
    (void)state;
    s_row_t row = {0};
    fq_send_budget_t first = s_budget(NULL, 1000, DAY1);
    assert_int_equal(s_send(&first, &row, 333, T0), 333);
    assert_int_equal(row.reserved, 340); //  Blocks of 20
    //  It crashes; the next one starts
    fq_send_budget_t second = s_budget(NULL, 1000, DAY1);
    int64_t total = 333 + s_send(&second, &row, 100000, T0);
    assert_int_equal(row.reserved, 1000);
    //  Never over; the crashed leader's unused 7 are lost, no more
    assert_int_equal(total, 1000 - 7);
    assert_true(fq_send_budget_quota_spent(&second));
}

//  Both: the rate paces, the quota ends the day.
static void test_rate_and_quota(void **state)
{
    (void)state;
    fq_send_budget_t budget = s_budget("5/s", 12, DAY1);
    s_row_t row = {0};
    int64_t sent = 0, t = T0;
    for (; t <= T0 + 10 * S_S; t += S_S / 10)
        sent += s_send(&budget, &row, 1000, t);
    assert_int_equal(sent, 12);
    assert_true(fq_send_budget_quota_spent(&budget));
    //  Reconfigured with a bigger quota: it goes on, the count kept
    fq_rate_t rate;
    assert_int_equal(fq_rate_parse("5/s", &rate, NULL, 0), 0);
    fq_send_budget_configure(&budget, &rate, 20, t);
    assert_false(fq_send_budget_quota_spent(&budget));
    for (int64_t u = t; u <= t + 10 * S_S; u += S_S / 10)
        sent += s_send(&budget, &row, 1000, u);
    assert_int_equal(sent, 20);
    //  The limits removed: nothing holds
    fq_send_budget_configure(&budget, NULL, 0, t);
    assert_false(fq_send_budget_limits(&budget));
    assert_int_equal(fq_send_budget_allowance(&budget, t), INT64_MAX);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unlimited),
        cmocka_unit_test(test_rate),
        cmocka_unit_test(test_quota),
        cmocka_unit_test(test_block_size),
        cmocka_unit_test(test_restart_keeps_quota),
        cmocka_unit_test(test_rate_and_quota),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
