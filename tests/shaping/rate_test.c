/*  rate_test.c — a destination's rate as operators write it.

    A rate comes from a config file or an API body ("rate = 100/s"): it is
    parsed once with fq_rate_parse, shown back with fq_rate_format (in
    --print-config, in the API), and turned into the shaper's numbers with
    fq_rate_per_s and, when no burst is configured, fq_rate_default_burst.
*/
#include "fq_error.h"
#include "fq_rate.h"
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <math.h>
#include <string.h>
#include <cmocka.h>

//  Room for a problem message, as a caller would give.
#define S_PROBLEM_SIZE 256

//  cmocka compares floats only: rates are doubles.
static void s_assert_near(double actual, double expected, double epsilon)
{
    if (fabs(actual - expected) > epsilon)
        fail_msg("%.12g is not %.12g (within %g)", actual, expected, epsilon);
}

//  Parses text, which must be accepted, and returns the rate.
static fq_rate_t s_parse(const char *text)
{
    fq_rate_t rate = {0, 0};
    char problem[S_PROBLEM_SIZE] = "";
    int rc = fq_rate_parse(text, &rate, problem, sizeof problem);
    if (rc != 0)
        fail_msg("%s: %s", text, problem);
    assert_string_equal(problem, "");
    return rate;
}

//  Parses text, which must be refused with exactly the message expected.
static void s_refused(const char *text, const char *expected)
{
    fq_rate_t rate = {7, 1};
    char problem[S_PROBLEM_SIZE] = "";
    assert_int_equal(fq_rate_parse(text, &rate, problem, sizeof problem), FQ_EINVAL);
    assert_string_equal(problem, expected);
    //  A refused rate leaves the caller's value as it was
    assert_int_equal(rate.count, 7);
    assert_int_equal(rate.period_s, 1);
}

static void s_format_is(fq_rate_t rate, const char *expected)
{
    char text[FQ_RATE_TEXT_SIZE];
    fq_rate_format(&rate, text);
    assert_string_equal(text, expected);
}

static void test_every_unit(void **state)
{
    (void)state;
    struct {
        const char *text;
        int64_t count;
        int period_s;
        const char *canonical;
    } forms[] = {
        {"100/s", 100, 1, "100/s"},
        {"100/sec", 100, 1, "100/s"},
        {"5/min", 5, 60, "5/min"},
        {"5/m", 5, 60, "5/min"},
        {"10000/h", 10000, 3600, "10000/h"},
        {"10000/hour", 10000, 3600, "10000/h"},
        {"1000/d", 1000, 86400, "1000/d"},
        {"1000/day", 1000, 86400, "1000/d"},
        {"1/s", 1, 1, "1/s"},
        {"1000000000/d", 1000000000, 86400, "1000000000/d"},
        {"007/min", 7, 60, "7/min"},
    };
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        fq_rate_t rate = s_parse(forms[i].text);
        assert_int_equal(rate.count, forms[i].count);
        assert_int_equal(rate.period_s, forms[i].period_s);
        s_format_is(rate, forms[i].canonical);
        //  The canonical text reads back to the same rate
        fq_rate_t again = s_parse(forms[i].canonical);
        assert_int_equal(again.count, rate.count);
        assert_int_equal(again.period_s, rate.period_s);
    }
}

static void test_refusals_say_what_is_wrong(void **state)
{
    (void)state;
    s_refused("", "rate \"\": empty; write COUNT/UNIT, as 100/s, 5/min, 10000/h or 1000/d");
    s_refused(NULL, "rate \"\": empty; write COUNT/UNIT, as 100/s, 5/min, 10000/h or 1000/d");
    s_refused("10", "rate \"10\": no unit; write COUNT/UNIT, as 100/s, 5/min, 10000/h or 1000/d");
    s_refused("/s", "rate \"/s\": no count before \"/\"; write COUNT/UNIT, as 100/s, 5/min, "
                    "10000/h or 1000/d");
    s_refused("0/s", "rate \"0/s\": count \"0\" is not a whole number from 1 to 1000000000");
    s_refused("-1/s", "rate \"-1/s\": count \"-1\" is not a whole number from 1 to 1000000000");
    s_refused("1e3/s", "rate \"1e3/s\": count \"1e3\" is not a whole number from 1 to 1000000000");
    s_refused("2.5/s", "rate \"2.5/s\": count \"2.5\" is not a whole number from 1 to 1000000000");
    s_refused("99999999999/s", "rate \"99999999999/s\": count \"99999999999\" is not a whole "
                               "number from 1 to 1000000000");
    s_refused("1000000001/s", "rate \"1000000001/s\": count \"1000000001\" is not a whole "
                              "number from 1 to 1000000000");
    s_refused("10/x", "rate \"10/x\": unknown unit \"x\"; units are s, min, h, d (also sec, m, "
                      "hour, day)");
    s_refused("10/ s", "rate \"10/ s\": unknown unit \" s\"; units are s, min, h, d (also sec, "
                       "m, hour, day)");
    s_refused("10/S", "rate \"10/S\": unknown unit \"S\"; units are s, min, h, d (also sec, m, "
                      "hour, day)");
    s_refused("10/s/s", "rate \"10/s/s\": unknown unit \"s/s\"; units are s, min, h, d (also "
                        "sec, m, hour, day)");
    s_refused("10/", "rate \"10/\": unknown unit \"\"; units are s, min, h, d (also sec, m, "
                     "hour, day)");
}

static void test_long_text_is_cut_in_the_message(void **state)
{
    (void)state;
    char text[200];
    memset(text, 'x', sizeof text - 1);
    text[sizeof text - 1] = '\0';
    text[3] = '/';
    char problem[S_PROBLEM_SIZE];
    fq_rate_t rate;
    assert_int_equal(fq_rate_parse(text, &rate, problem, sizeof problem), FQ_EINVAL);
    //  40 bytes of the text, then "...", then what is wrong, whole
    assert_memory_equal(problem, "rate \"xxx/xxxx", 14);
    assert_non_null(strstr(problem, "xxx...\": count \"xxx\" is not a whole number"));
    //  No buffer for the problem is fine too
    assert_int_equal(fq_rate_parse("", &rate, NULL, 0), FQ_EINVAL);
}

static void test_per_second_and_default_burst(void **state)
{
    (void)state;
    fq_rate_t rate = s_parse("100/s");
    assert_true(fq_rate_per_s(&rate) == 100.0);
    assert_int_equal(fq_rate_default_burst(&rate), 100);

    rate = s_parse("6000/min"); //  Exactly 100 a second: a burst of 100, not 101
    assert_true(fq_rate_per_s(&rate) == 100.0);
    assert_int_equal(fq_rate_default_burst(&rate), 100);

    rate = s_parse("150/min");
    assert_true(fq_rate_per_s(&rate) == 2.5);
    assert_int_equal(fq_rate_default_burst(&rate), 3);

    rate = s_parse("5/min");
    s_assert_near(fq_rate_per_s(&rate), 5.0 / 60, 1e-12);
    assert_int_equal(fq_rate_default_burst(&rate), 1);

    rate = s_parse("36000/h");
    assert_true(fq_rate_per_s(&rate) == 10.0);
    assert_int_equal(fq_rate_default_burst(&rate), 10);

    rate = s_parse("1000/d");
    s_assert_near(fq_rate_per_s(&rate), 1000.0 / 86400, 1e-12);
    assert_int_equal(fq_rate_default_burst(&rate), 1);

    rate = s_parse("1000000000/s");
    assert_int_equal(fq_rate_default_burst(&rate), 1000000000);
}

static void test_a_period_of_none_of_the_units_shows(void **state)
{
    (void)state;
    //  A caller's mistake: printed as it is, never as a near unit
    s_format_is((fq_rate_t){5, 30}, "5/30s");
    assert_true(fq_rate_per_s(&(fq_rate_t){5, 0}) == 0);
    assert_int_equal(fq_rate_default_burst(&(fq_rate_t){5, 0}), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_unit),
        cmocka_unit_test(test_refusals_say_what_is_wrong),
        cmocka_unit_test(test_long_text_is_cut_in_the_message),
        cmocka_unit_test(test_per_second_and_default_burst),
        cmocka_unit_test(test_a_period_of_none_of_the_units_shows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
