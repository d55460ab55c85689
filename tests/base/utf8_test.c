/*  utf8_test.c — the one UTF-8 check: what RFC 3629 allows and what it
    does not, at the edges of each range, and texts cut mid-sequence. */
#include "fq_utf8.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

static bool s_valid(const char *text)
{
    return fq_utf8_valid(text, strlen(text));
}

static void test_well_formed(void **state)
{
    (void)state;
    assert_true(s_valid(""));
    assert_true(s_valid("plain ascii"));
    assert_true(s_valid("caf\xC3\xA9"));      //  é
    assert_true(s_valid("\xE2\x82\xAC"));     //  €
    assert_true(s_valid("\xED\x9F\xBF"));     //  U+D7FF, last before surrogates
    assert_true(s_valid("\xF0\x9F\x98\x80")); //  U+1F600
    assert_true(s_valid("\xF4\x8F\xBF\xBF")); //  U+10FFFF, the last code point
    assert_true(fq_utf8_valid("a\0b", 3));    //  NUL is a character here
}

static void test_ill_formed(void **state)
{
    (void)state;
    assert_false(s_valid("\x80"));             //  a lone continuation
    assert_false(s_valid("\xC0\xAF"));         //  overlong '/'
    assert_false(s_valid("\xC1\xBF"));         //  overlong
    assert_false(s_valid("\xE0\x9F\xBF"));     //  overlong three-byte form
    assert_false(s_valid("\xED\xA0\x80"));     //  U+D800, a surrogate
    assert_false(s_valid("\xF0\x8F\xBF\xBF")); //  overlong four-byte form
    assert_false(s_valid("\xF4\x90\x80\x80")); //  above U+10FFFF
    assert_false(s_valid("\xF5\x80\x80\x80")); //  no such lead byte
    assert_false(s_valid("\xFF"));
    assert_false(s_valid("\xE2\x82"));  //  cut short at the end
    assert_false(s_valid("\xE2\x82x")); //  cut short by another character
}

static void test_invalid_at(void **state)
{
    (void)state;
    const char *text = "ab\xC3\xA9\xFFz";
    assert_int_equal(fq_utf8_invalid_at(text, strlen(text)), 4);
    //  Only size bytes are read: the é is cut, so the check stops there
    assert_int_equal(fq_utf8_invalid_at(text, 3), 2);
    assert_int_equal(fq_utf8_invalid_at("abc", 3), 3);
}

static void test_sequence_and_lead(void **state)
{
    (void)state;
    assert_int_equal(fq_utf8_sequence("\xF0\x9F\x98\x80", 4), 4);
    assert_int_equal(fq_utf8_sequence("\xF0\x9F\x98\x80", 3), 0);
    assert_int_equal(fq_utf8_sequence("x", 0), 0);
    assert_int_equal(fq_utf8_lead_length(0x41), 1);
    assert_int_equal(fq_utf8_lead_length(0xC2), 2);
    assert_int_equal(fq_utf8_lead_length(0xC1), 0);
    assert_int_equal(fq_utf8_lead_length(0xBF), 0);
    assert_int_equal(fq_utf8_lead_length(0xF4), 4);
    assert_true(fq_utf8_second_ok(0xE0, 0xA0));
    assert_false(fq_utf8_second_ok(0xE0, 0x9F));
    assert_false(fq_utf8_second_ok(0xED, 0xA0));
}

static void test_prefix_never_splits(void **state)
{
    (void)state;
    const char *text = "ab\xE2\x82\xAC"; //  "ab€", 5 bytes
    assert_int_equal(fq_utf8_prefix(text, 5, 10), 5);
    assert_int_equal(fq_utf8_prefix(text, 5, 5), 5);
    assert_int_equal(fq_utf8_prefix(text, 5, 4), 2);
    assert_int_equal(fq_utf8_prefix(text, 5, 3), 2);
    assert_int_equal(fq_utf8_prefix(text, 5, 2), 2);
    assert_int_equal(fq_utf8_prefix(text, 5, 0), 0);
}

static void test_replace_invalid_keeps_good_characters(void **state)
{
    (void)state;
    char text[] = "caf\xC3\xA9 \xE9t\xE9 \xED\xA0\x80 \xE2\x82";
    fq_utf8_replace_invalid(text, strlen(text), '?');
    assert_string_equal(text, "caf\xC3\xA9 ?t? ??? ??");
    assert_true(s_valid(text));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_well_formed),
        cmocka_unit_test(test_ill_formed),
        cmocka_unit_test(test_invalid_at),
        cmocka_unit_test(test_sequence_and_lead),
        cmocka_unit_test(test_prefix_never_splits),
        cmocka_unit_test(test_replace_invalid_keeps_good_characters),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
