/*  row_cache_test.c — the rows the scheduler paged (actors/fq_row_cache.h),
    alone: a row is given out once, only while fresh, as it was paged;
    stale rows age out oldest first; past the byte limit rows are not
    kept. */
#include "fq_row_cache.h"
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#define S_FRESH_US 500000

static fq_message_row_t s_row(int64_t id, const char *recipient)
{
    return (fq_message_row_t){.id = id,
                              .request_id = 7,
                              .tenant_id = 3,
                              .recipient = recipient,
                              .fields = "{\"name\":\"Ann\"}",
                              .try_count = 2,
                              .named_destination = true,
                              .destination = "example.org"};
}

//  A row comes back once, whole, as it was paged (a copy: the page's
//  strings may go), and is gone after.
static void test_a_row_is_taken_once_as_paged(void **state)
{
    (void)state;
    int64_t paged_us = -1;
    fq_row_cache_t *cache = fq_row_cache_new(1 << 20, S_FRESH_US);
    assert_non_null(cache);
    char recipient[] = "ann@example.org";
    fq_message_row_t row = s_row(42, recipient);
    assert_int_equal(fq_row_cache_put(cache, &row, 1000), 0);
    recipient[0] = 'X'; //  The page's block is freed after the put
    assert_int_equal(fq_row_cache_count(cache), 1);
    assert_null(fq_row_cache_take(cache, 41, 1000, &paged_us));
    fq_message_row_t *taken = fq_row_cache_take(cache, 42, 1000 + S_FRESH_US, &paged_us);
    assert_non_null(taken);
    assert_int_equal(paged_us, 1000);
    assert_int_equal(taken->id, 42);
    assert_int_equal(taken->request_id, 7);
    assert_int_equal(taken->tenant_id, 3);
    assert_string_equal(taken->recipient, "ann@example.org");
    assert_string_equal(taken->fields, "{\"name\":\"Ann\"}");
    assert_int_equal(taken->try_count, 2);
    assert_true(taken->named_destination);
    assert_string_equal(taken->destination, "example.org");
    free(taken);
    assert_null(fq_row_cache_take(cache, 42, 1000, &paged_us));
    assert_int_equal(fq_row_cache_count(cache), 0);
    assert_int_equal(fq_row_cache_bytes(cache), 0);
    fq_row_cache_destroy(&cache);
    assert_null(cache);
}

//  A row older than fresh is not given out (its message is loaded again,
//  its status read anew): dropped by the take, or by the expiry, oldest
//  first, the fresh ones kept.
static void test_stale_rows_are_not_given_out(void **state)
{
    (void)state;
    int64_t paged_us = -1;
    fq_row_cache_t *cache = fq_row_cache_new(1 << 20, S_FRESH_US);
    for (int64_t id = 1; id <= 10; id++) {
        fq_message_row_t row = s_row(id, "a@example.org");
        assert_int_equal(fq_row_cache_put(cache, &row, id * 100000), 0);
    }
    //  At 1.25 s, rows 1 to 7 (paged at 0.1 to 0.7 s) are stale
    assert_null(fq_row_cache_take(cache, 2, 1250000, &paged_us));
    assert_int_equal(fq_row_cache_count(cache), 9);
    assert_int_equal(fq_row_cache_expire(cache, 1250000), 6);
    assert_int_equal(fq_row_cache_count(cache), 3);
    for (int64_t id = 1; id <= 7; id++)
        assert_null(fq_row_cache_take(cache, id, 1250000, &paged_us));
    for (int64_t id = 8; id <= 10; id++) {
        fq_message_row_t *row = fq_row_cache_take(cache, id, 1250000, &paged_us);
        assert_non_null(row);
        free(row);
    }
    assert_int_equal(fq_row_cache_bytes(cache), 0);
    fq_row_cache_destroy(&cache);
}

//  A row paged again replaces the first (its age too); a dropped one is
//  gone.
static void test_paged_again_replaces_and_drop_forgets(void **state)
{
    (void)state;
    int64_t paged_us = -1;
    fq_row_cache_t *cache = fq_row_cache_new(1 << 20, S_FRESH_US);
    fq_message_row_t first = s_row(5, "old@example.org"), again = s_row(5, "new@example.org");
    assert_int_equal(fq_row_cache_put(cache, &first, 0), 0);
    size_t one = fq_row_cache_bytes(cache);
    assert_int_equal(fq_row_cache_put(cache, &again, 400000), 0);
    assert_int_equal(fq_row_cache_count(cache), 1);
    assert_int_equal(fq_row_cache_bytes(cache), one);
    //  Fresh from its second page at 0.8 s, which the first was not
    assert_int_equal(fq_row_cache_expire(cache, 800000), 0);
    fq_message_row_t *row = fq_row_cache_take(cache, 5, 800000, &paged_us);
    assert_non_null(row);
    assert_string_equal(row->recipient, "new@example.org");
    free(row);
    fq_message_row_t other = s_row(6, "b@example.org");
    assert_int_equal(fq_row_cache_put(cache, &other, 800000), 0);
    fq_row_cache_drop(cache, 6);
    fq_row_cache_drop(cache, 6);
    assert_null(fq_row_cache_take(cache, 6, 800000, &paged_us));
    assert_int_equal(fq_row_cache_count(cache), 0);
    fq_row_cache_destroy(&cache);
}

//  Past max_bytes a row is not kept, and there is room again once rows
//  are taken; rows left at the end are freed with the cache (ASan's leak
//  check).
static void test_full_cache_keeps_nothing_more(void **state)
{
    (void)state;
    int64_t paged_us = -1;
    fq_row_cache_t *cache = fq_row_cache_new(1000, S_FRESH_US);
    int kept = 0, refused = 0;
    for (int64_t id = 1; id <= 100; id++) {
        fq_message_row_t row = s_row(id, "someone@example.org");
        int rc = fq_row_cache_put(cache, &row, 0);
        assert_true(rc == 0 || rc == 1);
        kept += rc == 0;
        refused += rc == 1;
    }
    assert_true(kept >= 1 && kept < 100);
    assert_int_equal(kept + refused, 100);
    assert_false(fq_row_cache_has_room(cache));
    assert_true(fq_row_cache_bytes(cache) >= 1000);
    assert_true(fq_row_cache_bytes(cache) < 1000 + 1000 / (size_t)kept + 256);
    free(fq_row_cache_take(cache, 1, 0, &paged_us));
    assert_true(fq_row_cache_has_room(cache));
    fq_row_cache_destroy(&cache);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_row_is_taken_once_as_paged),
        cmocka_unit_test(test_stale_rows_are_not_given_out),
        cmocka_unit_test(test_paged_again_replaces_and_drop_forgets),
        cmocka_unit_test(test_full_cache_keeps_nothing_more),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
