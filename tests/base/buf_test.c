/*  buf_test.c — the one growable buffer: appends of every kind, growth far
    past the first allocation, and taking the text out. */
#include "fq_buf.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

static void test_appends_read_as_one_string(void **state)
{
    (void)state;
    fq_buf_t buf = {0};
    int rc = fq_buf_add(&buf, "ab", 2) | fq_buf_add_str(&buf, "cd") | fq_buf_add_char(&buf, '-') |
             fq_buf_printf(&buf, "%d/%s", 42, "x");
    assert_int_equal(rc, 0);
    assert_string_equal(buf.data, "abcd-42/x");
    assert_int_equal(buf.size, strlen("abcd-42/x"));
    fq_buf_reset(&buf);
    assert_int_equal(buf.size, 0);
    assert_string_equal(buf.data, "");
    fq_buf_free(&buf);
    assert_null(buf.data);
}

static void test_grows_and_keeps_bytes(void **state)
{
    (void)state;
    fq_buf_t buf = {0};
    for (int i = 0; i < 100000; i++)
        assert_int_equal(fq_buf_add_char(&buf, (char)('a' + i % 26)), 0);
    assert_int_equal(buf.size, 100000);
    assert_true(buf.capacity > buf.size);
    for (int i = 0; i < 100000; i += 9973)
        assert_int_equal(buf.data[i], 'a' + i % 26);
    assert_int_equal(buf.data[buf.size], 0);
    fq_buf_free(&buf);
}

static void test_take_hands_over_the_text(void **state)
{
    (void)state;
    fq_buf_t buf = {0};
    char *empty = fq_buf_take(&buf);
    assert_string_equal(empty, "");
    free(empty);
    assert_int_equal(fq_buf_printf(&buf, "%s", "kept"), 0);
    char *text = fq_buf_take(&buf);
    assert_string_equal(text, "kept");
    assert_null(buf.data);
    assert_int_equal(buf.size, 0);
    free(text);
}

static void test_absurd_size_is_refused(void **state)
{
    (void)state;
    fq_buf_t buf = {0};
    assert_int_equal(fq_buf_add_str(&buf, "x"), 0);
    assert_int_equal(fq_buf_reserve(&buf, SIZE_MAX - 1), -1);
    assert_string_equal(buf.data, "x"); //  left as it was
    fq_buf_free(&buf);
}

static void test_bounded_growth_stops_at_the_bound(void **state)
{
    (void)state;
    fq_buf_t buf = {0};
    //  A body announced as 5000 bytes: held in 5001, not in 8192
    assert_int_equal(fq_buf_reserve_bounded(&buf, 3000, 5000), 0);
    assert_int_equal(fq_buf_add(&buf, "x", 1), 0);
    assert_int_equal(fq_buf_reserve_bounded(&buf, 4999, 5000), 0);
    assert_int_equal(buf.capacity, 5001);
    assert_int_equal(fq_buf_reserve_bounded(&buf, 5000, 5000), -1);
    assert_int_equal(buf.size, 1);
    fq_buf_free(&buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_appends_read_as_one_string),
        cmocka_unit_test(test_grows_and_keeps_bytes),
        cmocka_unit_test(test_take_hands_over_the_text),
        cmocka_unit_test(test_absurd_size_is_refused),
        cmocka_unit_test(test_bounded_growth_stops_at_the_bound),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
