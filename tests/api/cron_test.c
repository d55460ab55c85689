/*  cron_test.c — a schedule's cron expression (api/fq_cron.h): the sets
    each field's syntax makes (lists, ranges, steps, "*", names, Sunday 7),
    cron's rule for a day when both day fields are restricted, the
    shorthands, and malformed expressions refused with the field and the
    reason. Which instant a firing falls on (time zones, daylight saving,
    month ends) is PostgreSQL's: tests/sql/store_schedules_test.c. */
#include "fq_cron.h"
#include <stdio.h>
#include <string.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

//  Weekdays as fq_cron_matches takes them.
enum { SUN, MON, TUE, WED, THU, FRI, SAT };

static fq_cron_t s_parse(const char *text)
{
    fq_cron_t cron;
    char problem[FQ_CRON_PROBLEM_SIZE] = "";
    if (!fq_cron_parse(text, &cron, problem, sizeof problem))
        fail_msg("\"%s\" refused: %s", text, problem);
    return cron;
}

//  text is refused with a problem that contains said.
static void s_refused(const char *text, const char *said)
{
    fq_cron_t cron;
    char problem[FQ_CRON_PROBLEM_SIZE] = "";
    if (fq_cron_parse(text, &cron, problem, sizeof problem))
        fail_msg("\"%s\" taken", text);
    if (!strstr(problem, said))
        fail_msg("\"%s\": \"%s\" does not say \"%s\"", text, problem, said);
}

static void test_every_minute(void **state)
{
    (void)state;
    fq_cron_t c = s_parse("* * * * *");
    assert_true(c.minutes == (UINT64_C(1) << 60) - 1);
    assert_int_equal(c.hours, (1u << 24) - 1);
    assert_int_equal(c.days, 0xfffffffeu);
    assert_int_equal(c.months, 0x1ffe);
    assert_int_equal(c.weekdays, 0x7f);
    assert_true(c.days_any && c.weekdays_any);
}

static void test_lists_ranges_steps(void **state)
{
    (void)state;
    fq_cron_t c = s_parse("0,15,30-32 */6 1-10/3 * *");
    assert_true(c.minutes == (UINT64_C(1) << 0 | UINT64_C(1) << 15 | UINT64_C(1) << 30 |
                              UINT64_C(1) << 31 | UINT64_C(1) << 32));
    assert_int_equal(c.hours, 1u << 0 | 1u << 6 | 1u << 12 | 1u << 18);
    assert_int_equal(c.days, 1u << 1 | 1u << 4 | 1u << 7 | 1u << 10);
    //  "a/n" runs from a to the field's end
    c = s_parse("5/20 * * * *");
    assert_true(c.minutes == (UINT64_C(1) << 5 | UINT64_C(1) << 25 | UINT64_C(1) << 45));
    //  Extra blanks between fields are one
    c = s_parse("  0   9  *  *  1-5 ");
    assert_int_equal(c.weekdays, 0x3e);
}

static void test_names(void **state)
{
    (void)state;
    fq_cron_t c = s_parse("0 9 * jan,MAR-May mon-fri");
    assert_int_equal(c.months, 1u << 1 | 1u << 3 | 1u << 4 | 1u << 5);
    assert_int_equal(c.weekdays, 0x3e);
    //  Sunday is 0 and 7
    assert_int_equal(s_parse("0 0 * * 7").weekdays, 1u << SUN);
    assert_int_equal(s_parse("0 0 * * 5-7").weekdays, 1u << FRI | 1u << SAT | 1u << SUN);
    assert_int_equal(s_parse("0 0 * * Sun").weekdays, 1u << SUN);
}

static void test_day_rule(void **state)
{
    (void)state;
    //  Both restricted: the 1st and the 15th, and every Monday
    fq_cron_t c = s_parse("0 12 1,15 * mon");
    assert_false(c.days_any || c.weekdays_any);
    assert_true(fq_cron_matches(&c, 6, 1, THU, 12, 0));
    assert_true(fq_cron_matches(&c, 6, 8, MON, 12, 0));
    assert_false(fq_cron_matches(&c, 6, 9, TUE, 12, 0));
    assert_false(fq_cron_matches(&c, 6, 8, MON, 12, 1));
    //  One restricted: that one alone decides
    c = s_parse("0 12 * * mon");
    assert_true(fq_cron_matches(&c, 6, 8, MON, 12, 0));
    assert_false(fq_cron_matches(&c, 6, 1, THU, 12, 0));
    c = s_parse("0 12 13 * *");
    assert_true(fq_cron_matches(&c, 6, 13, FRI, 12, 0));
    assert_false(fq_cron_matches(&c, 6, 14, SAT, 12, 0));
    //  A field starting with "*" counts as unrestricted, as in cron
    c = s_parse("0 12 */2 * mon");
    assert_true(c.days_any);
    assert_false(fq_cron_matches(&c, 6, 3, THU, 12, 0));
    assert_true(fq_cron_matches(&c, 6, 1, MON, 12, 0));
}

static void test_month_ends(void **state)
{
    (void)state;
    //  February 29 exists (in a leap year); February 30 never does
    assert_int_equal(s_parse("0 0 29 2 *").days, 1u << 29);
    assert_int_equal(s_parse("0 0 31 * *").days, 1u << 31);
    s_refused("0 0 30 2 *", "day-of-month: no month given has such a day");
    s_refused("0 0 31 apr,jun,sep,nov *", "would never fire");
    //  With a weekday too, the OR rule makes it fire on the weekday
    s_parse("0 0 30 2 mon");
}

static void test_shorthands(void **state)
{
    (void)state;
    fq_cron_t c = s_parse("@daily");
    assert_true(c.minutes == 1 && c.hours == 1 && c.days_any && c.weekdays_any);
    assert_int_equal(s_parse("@hourly").hours, (1u << 24) - 1);
    assert_int_equal(s_parse("@weekly").weekdays, 1u << SUN);
    assert_int_equal(s_parse("@MONTHLY").days, 1u << 1);
    assert_int_equal(s_parse("@yearly").months, 1u << 1);
    s_refused("@often", "is not one of @yearly");
    s_refused("@daily 5", "is not one of");
}

static void test_malformed(void **state)
{
    (void)state;
    s_refused("", "has 5 fields");
    s_refused("* * * *", "this one 4");
    s_refused("* * * * * *", "this one more");
    s_refused("60 * * * *", "minute: 60 is out of range 0..59");
    s_refused("* 24 * * *", "hour: 24 is out of range 0..23");
    s_refused("* * 0 * *", "day-of-month: 0 is out of range 1..31");
    s_refused("* * * 13 *", "month: 13 is out of range 1..12");
    s_refused("* * * * 8", "day-of-week: 8 is out of range 0..7");
    s_refused("* * * foo *", "month: \"foo\" is not a name it takes");
    s_refused("* * * * mon-funday", "day-of-week:");
    s_refused("x * * * *", "minute: \"x\" is not a number");
    s_refused("5-1 * * * *", "minute: range 5-1 goes backwards");
    s_refused("*/0 * * * *", "minute: a step is a number 1..60");
    s_refused("*/ * * * *", "minute: a step is a number");
    s_refused("1,,2 * * * *", "minute: an empty item in a list");
    s_refused("1, * * * *", "minute: an empty item");
    s_refused("1- * * * *", "minute: expected a number");
    s_refused("* * * * 1#2", "day-of-week: unexpected \"#\"");
    s_refused("* * L * *", "day-of-month: \"L\" is not a number");
    s_refused("0000 * * * *", "minute: 000 is out of range");
    char long_text[FQ_CRON_MAX + 8];
    memset(long_text, '1', sizeof long_text - 1);
    long_text[sizeof long_text - 1] = '\0';
    s_refused(long_text, "at most");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_minute), cmocka_unit_test(test_lists_ranges_steps),
        cmocka_unit_test(test_names),        cmocka_unit_test(test_day_rule),
        cmocka_unit_test(test_month_ends),   cmocka_unit_test(test_shorthands),
        cmocka_unit_test(test_malformed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
