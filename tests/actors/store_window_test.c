/*  store_window_test.c — how far the store may fall behind the senders'
    answers (actors/fq_store_window.h), alone: counts told and written,
    what is unwritten, when credit is kept back. */
#include "fq_store_window.h"
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

//  ack_batch 100: a window of FQ_STORE_WINDOW_BATCHES batches. Credit is
//  kept back past it, gathered answers counted, and goes on once the
//  store wrote.
static void test_credit_is_kept_back_past_the_window(void **state)
{
    (void)state;
    const uint64_t w = 100 * FQ_STORE_WINDOW_BATCHES;
    fq_store_window_t window;
    fq_store_window_init(&window, 100);
    assert_int_equal(window.window, w);
    assert_int_equal(fq_store_window_tell(&window, w - 100), w - 100);
    assert_false(fq_store_window_full(&window, 100));
    assert_true(fq_store_window_full(&window, 101));
    assert_int_equal(fq_store_window_tell(&window, 128), w + 28);
    assert_int_equal(fq_store_window_unwritten(&window, 0), w + 28);
    assert_true(fq_store_window_full(&window, 0));
    //  The first w - 100 are written: 128 left
    fq_store_window_written(&window, w - 100);
    assert_int_equal(fq_store_window_unwritten(&window, 0), 128);
    assert_false(fq_store_window_full(&window, 0));
}

//  STORE_WRITTEN answers may come late or out of turn: the count never
//  goes back, and never past what was told.
static void test_written_never_goes_back_nor_past_told(void **state)
{
    (void)state;
    fq_store_window_t window;
    fq_store_window_init(&window, 10);
    fq_store_window_tell(&window, 50);
    fq_store_window_written(&window, 40);
    fq_store_window_written(&window, 20);
    assert_int_equal(fq_store_window_unwritten(&window, 0), 10);
    fq_store_window_written(&window, 100000);
    assert_int_equal(fq_store_window_unwritten(&window, 0), 0);
    assert_int_equal(window.written, 50);
    //  Told after: counted again from there
    fq_store_window_tell(&window, window.window + 1);
    assert_true(fq_store_window_full(&window, 0));
}

//  An ack_batch of 0 (never configured so) still leaves a window of one.
static void test_a_window_is_never_zero(void **state)
{
    (void)state;
    fq_store_window_t window;
    fq_store_window_init(&window, 0);
    assert_int_equal(window.window, 1);
    fq_store_window_tell(&window, 1);
    assert_false(fq_store_window_full(&window, 0));
    assert_true(fq_store_window_full(&window, 1));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_credit_is_kept_back_past_the_window),
        cmocka_unit_test(test_written_never_goes_back_nor_past_told),
        cmocka_unit_test(test_a_window_is_never_zero),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
