/*  timers_test.c — an actor's timer heap.

    An actor adds timers (user ticks, ask time-outs, restart back-offs),
    sleeps for fq_timers_timeout, then takes what is due with
    fq_timers_pop_due. Time is passed in explicitly, so these tests run on
    a made-up clock and never sleep.
*/
#include "fq_error.h"
#include "fq_timers.h"
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

//  Seed of the random-deadline tests, fixed so a failure can be replayed.
#define S_SEED 0x7173e55eedULL

//  A caller's tags for what a timer is for.
enum { S_KIND_TICK = 1, S_KIND_ASK_TIMEOUT = 2 };

//  Payload whose release is counted, so a test sees each freed exactly once.
typedef struct {
    int freed;
} s_payload_t;

static void s_payload_free(void *payload)
{
    ((s_payload_t *)payload)->freed++;
}

//  xorshift64*: reproducible without touching the process-wide rand() state.
static uint64_t s_random(uint64_t *seed)
{
    *seed ^= *seed >> 12;
    *seed ^= *seed << 25;
    *seed ^= *seed >> 27;
    return *seed * 0x2545f4914f6cdd1dULL;
}

// --------------------------------------------------------------------------
//  Time-outs and due timers

//  With no timers the actor may sleep forever (-1); destroy is safe twice
//  and clears the caller's pointer.
static void test_empty_timers(void **unused)
{
    (void)unused;
    fq_timers_t *timers = fq_timers_new();
    assert_non_null(timers);
    assert_int_equal(fq_timers_timeout(timers, 0), -1);
    assert_null(fq_timers_pop_due(timers, 1000000));
    fq_timers_destroy(&timers);
    assert_null(timers);
    fq_timers_destroy(&timers);
}

//  The time-out counts down to the next deadline and is 0 once it is due
//  (or overdue); the timer is handed out only from its deadline on, with
//  its kind and payload.
static void test_timeout_counts_down_to_due(void **unused)
{
    (void)unused;
    fq_timers_t *timers = fq_timers_new();
    s_payload_t payload = {0};
    int id = fq_timers_add(timers, 1000, 50, 0, S_KIND_ASK_TIMEOUT, &payload, s_payload_free);
    assert_true(id > 0);

    assert_int_equal(fq_timers_timeout(timers, 1000), 50);
    assert_int_equal(fq_timers_timeout(timers, 1049), 1);
    assert_null(fq_timers_pop_due(timers, 1049));
    assert_int_equal(fq_timers_timeout(timers, 1050), 0);
    assert_int_equal(fq_timers_timeout(timers, 9999), 0);

    fq_timer_t *timer = fq_timers_pop_due(timers, 1050);
    assert_non_null(timer);
    assert_int_equal(timer->id, id);
    assert_int_equal(timer->kind, S_KIND_ASK_TIMEOUT);
    assert_int_equal(timer->deadline, 1050);
    assert_ptr_equal(timer->payload, &payload);
    assert_int_equal(payload.freed, 0);
    fq_timer_free(&timer);
    assert_null(timer);
    assert_int_equal(payload.freed, 1);

    //  Fired one-shot timers are gone
    assert_null(fq_timers_pop_due(timers, 9999));
    assert_int_equal(fq_timers_timeout(timers, 9999), -1);
    fq_timers_destroy(&timers);
    assert_int_equal(payload.freed, 1);
}

//  A zero or negative delay means due now; a negative interval means
//  one-shot.
static void test_non_positive_delays(void **unused)
{
    (void)unused;
    fq_timers_t *timers = fq_timers_new();
    assert_true(fq_timers_add(timers, 500, 0, 0, S_KIND_TICK, NULL, NULL) > 0);
    assert_true(fq_timers_add(timers, 500, -100, -5, S_KIND_TICK, NULL, NULL) > 0);
    assert_int_equal(fq_timers_timeout(timers, 500), 0);
    for (int k = 0; k < 2; k++) {
        fq_timer_t *timer = fq_timers_pop_due(timers, 500);
        assert_non_null(timer);
        assert_int_equal(timer->deadline, 500);
        assert_int_equal(timer->interval_ms, 0);
        fq_timer_free(&timer);
    }
    assert_null(fq_timers_pop_due(timers, 500));
    fq_timers_destroy(&timers);
}

//  Ids are positive and distinct, so each can be cancelled on its own.
static void test_ids_are_unique(void **unused)
{
    (void)unused;
    enum { S_COUNT = 1000 };
    fq_timers_t *timers = fq_timers_new();
    int ids[S_COUNT];
    for (int k = 0; k < S_COUNT; k++) {
        ids[k] = fq_timers_add(timers, 0, k, 0, S_KIND_TICK, NULL, NULL);
        assert_true(ids[k] > 0);
        for (int j = 0; j < k; j++)
            assert_int_not_equal(ids[j], ids[k]);
    }
    fq_timers_destroy(&timers);
}

// --------------------------------------------------------------------------
//  Ordering

//  Timers added in random order come out in deadline order, timers with
//  the same deadline in the order they were added, and only once due.
static void test_pop_in_deadline_order(void **unused)
{
    (void)unused;
    enum { S_COUNT = 5000, S_SPREAD_MS = 1000 }; //  Many ties on purpose
    fq_timers_t *timers = fq_timers_new();
    uint64_t seed = S_SEED;
    for (int k = 0; k < S_COUNT; k++) {
        int delay = (int)(s_random(&seed) % S_SPREAD_MS);
        assert_true(fq_timers_add(timers, 0, delay, 0, S_KIND_TICK, NULL, NULL) > 0);
    }

    int popped = 0;
    int64_t last_deadline = -1;
    int last_id = 0;
    //  Walk the clock forward; at each instant exactly the due timers appear
    for (int64_t now = 0; now < S_SPREAD_MS; now++) {
        fq_timer_t *timer;
        while ((timer = fq_timers_pop_due(timers, now))) {
            assert_int_equal(timer->deadline, now);
            assert_true(timer->deadline > last_deadline ||
                        (timer->deadline == last_deadline && timer->id > last_id));
            last_deadline = timer->deadline;
            last_id = timer->id;
            popped++;
            fq_timer_free(&timer);
        }
        long timeout = fq_timers_timeout(timers, now);
        assert_true(timeout == -1 || timeout >= 1);
    }
    assert_int_equal(popped, S_COUNT);
    assert_int_equal(fq_timers_timeout(timers, S_SPREAD_MS), -1);
    fq_timers_destroy(&timers);
}

//  Timers added between pops (as handlers add new ones) still come out in
//  deadline order.
static void test_order_with_interleaved_adds(void **unused)
{
    (void)unused;
    enum { S_ROUNDS = 2000, S_MAX_DELAY = 300 };
    fq_timers_t *timers = fq_timers_new();
    uint64_t seed = S_SEED;
    int64_t now = 0, last_deadline = 0;
    int added = 0, popped = 0;
    for (int round = 0; round < S_ROUNDS; round++) {
        int adds = (int)(s_random(&seed) % 4);
        for (int k = 0; k < adds; k++, added++)
            fq_timers_add(timers, now, (int)(s_random(&seed) % S_MAX_DELAY), 0, S_KIND_TICK, NULL,
                          NULL);
        now += (int64_t)(s_random(&seed) % 3);
        fq_timer_t *timer;
        while ((timer = fq_timers_pop_due(timers, now))) {
            assert_true(timer->deadline <= now);
            assert_true(timer->deadline >= last_deadline);
            last_deadline = timer->deadline;
            popped++;
            fq_timer_free(&timer);
        }
    }
    while (fq_timers_timeout(timers, now) >= 0) {
        now += fq_timers_timeout(timers, now);
        fq_timer_t *timer = fq_timers_pop_due(timers, now);
        assert_non_null(timer);
        assert_true(timer->deadline >= last_deadline);
        last_deadline = timer->deadline;
        popped++;
        fq_timer_free(&timer);
    }
    assert_int_equal(popped, added);
    fq_timers_destroy(&timers);
}

// --------------------------------------------------------------------------
//  Cancelling

//  A timer cancelled before it is due never fires, and its payload is
//  freed exactly once; the others fire as planned.
static void test_cancel_before_due(void **unused)
{
    (void)unused;
    fq_timers_t *timers = fq_timers_new();
    s_payload_t payloads[3] = {{0}};
    int ids[3];
    for (int k = 0; k < 3; k++)
        ids[k] =
            fq_timers_add(timers, 0, 10 * (k + 1), 0, S_KIND_TICK, &payloads[k], s_payload_free);
    fq_timers_cancel(timers, ids[1]);

    fq_timer_t *timer = fq_timers_pop_due(timers, 100);
    assert_int_equal(timer->id, ids[0]);
    fq_timer_free(&timer);
    timer = fq_timers_pop_due(timers, 100);
    assert_int_equal(timer->id, ids[2]);
    fq_timer_free(&timer);
    assert_null(fq_timers_pop_due(timers, 100));
    for (int k = 0; k < 3; k++)
        assert_int_equal(payloads[k].freed, 1);

    fq_timers_destroy(&timers);
    for (int k = 0; k < 3; k++)
        assert_int_equal(payloads[k].freed, 1);
}

//  Cancelling the earliest timer moves the time-out on to the next one,
//  and cancelling the last leaves nothing to wait for.
static void test_cancel_updates_timeout(void **unused)
{
    (void)unused;
    fq_timers_t *timers = fq_timers_new();
    s_payload_t first = {0}, second = {0};
    int a = fq_timers_add(timers, 0, 10, 0, S_KIND_TICK, &first, s_payload_free);
    int b = fq_timers_add(timers, 0, 20, 0, S_KIND_TICK, &second, s_payload_free);
    assert_int_equal(fq_timers_timeout(timers, 0), 10);
    fq_timers_cancel(timers, a);
    assert_int_equal(fq_timers_timeout(timers, 0), 20);
    assert_int_equal(first.freed, 1);
    fq_timers_cancel(timers, b);
    assert_int_equal(fq_timers_timeout(timers, 0), -1);
    assert_int_equal(second.freed, 1);
    fq_timers_destroy(&timers);
    assert_int_equal(first.freed, 1);
    assert_int_equal(second.freed, 1);
}

//  Cancelling an unknown id, an id twice, or the id of a timer already
//  handed out is harmless: nothing else is cancelled or freed.
static void test_cancel_unknown_or_fired_ignored(void **unused)
{
    (void)unused;
    fq_timers_t *timers = fq_timers_new();
    s_payload_t fired = {0}, pending = {0};
    int fired_id = fq_timers_add(timers, 0, 1, 0, S_KIND_TICK, &fired, s_payload_free);
    int pending_id = fq_timers_add(timers, 0, 100, 0, S_KIND_TICK, &pending, s_payload_free);

    fq_timer_t *timer = fq_timers_pop_due(timers, 1);
    assert_int_equal(timer->id, fired_id);
    fq_timers_cancel(timers, fired_id); //  Already handed out
    fq_timers_cancel(timers, -1);
    fq_timers_cancel(timers, pending_id + 1000);
    assert_int_equal(fired.freed, 0);
    assert_ptr_equal(timer->payload, &fired);
    fq_timer_free(&timer);
    assert_int_equal(fired.freed, 1);

    fq_timers_cancel(timers, pending_id);
    fq_timers_cancel(timers, pending_id);
    assert_null(fq_timers_pop_due(timers, 1000));
    fq_timers_destroy(&timers);
    assert_int_equal(fired.freed, 1);
    assert_int_equal(pending.freed, 1);
}

//  Cancelling id 0, which no timer has (a natural "no timer yet" value in
//  an actor's state), is ignored like any other unknown id.
static void test_cancel_id_zero_ignored(void **unused)
{
    (void)unused;
    //  fq_timers_cancel passes id 0 to zhashx_lookup as a NULL key, which
    //  czmq asserts on: the process aborts. Remove this skip once
    //  fq_timers_cancel ignores ids <= 0.
    fq_timers_t *timers = fq_timers_new();
    s_payload_t payload = {0};
    fq_timers_add(timers, 0, 10, 0, S_KIND_TICK, &payload, s_payload_free);
    fq_timers_cancel(timers, 0);
    fq_timer_t *timer = fq_timers_pop_due(timers, 10);
    assert_non_null(timer);
    fq_timer_free(&timer);
    fq_timers_destroy(&timers);
    assert_int_equal(payload.freed, 1);
}

// --------------------------------------------------------------------------
//  Periodic timers

//  A periodic timer fires at its first deadline and then every interval,
//  stays owned by the heap (payload untouched) and, when the actor is
//  late, fires once and resumes from now rather than catching up in a
//  burst.
static void test_periodic_keeps_firing(void **unused)
{
    (void)unused;
    fq_timers_t *timers = fq_timers_new();
    s_payload_t payload = {0};
    int id = fq_timers_add(timers, 0, 10, 100, S_KIND_TICK, &payload, s_payload_free);

    const int64_t fire_at[] = {10, 110, 210, 310};
    for (size_t k = 0; k < sizeof fire_at / sizeof fire_at[0]; k++) {
        assert_null(fq_timers_pop_due(timers, fire_at[k] - 1));
        fq_timer_t *timer = fq_timers_pop_due(timers, fire_at[k]);
        assert_non_null(timer);
        assert_int_equal(timer->id, id);
        assert_int_equal(timer->interval_ms, 100);
        assert_null(fq_timers_pop_due(timers, fire_at[k])); //  Once per period
        assert_int_equal(fq_timers_timeout(timers, fire_at[k]), 100);
    }

    //  Late by 3.5 periods: one tick now, the next a full interval later
    assert_non_null(fq_timers_pop_due(timers, 760));
    assert_null(fq_timers_pop_due(timers, 760));
    assert_int_equal(fq_timers_timeout(timers, 760), 100);
    assert_non_null(fq_timers_pop_due(timers, 860));

    assert_int_equal(payload.freed, 0);
    fq_timers_destroy(&timers);
    assert_int_equal(payload.freed, 1);
}

//  A cancelled periodic timer stops firing and its payload is freed once.
static void test_cancel_periodic(void **unused)
{
    (void)unused;
    fq_timers_t *timers = fq_timers_new();
    s_payload_t payload = {0};
    int id = fq_timers_add(timers, 0, 10, 10, S_KIND_TICK, &payload, s_payload_free);
    for (int64_t now = 10; now <= 50; now += 10)
        assert_non_null(fq_timers_pop_due(timers, now));
    fq_timers_cancel(timers, id);
    assert_null(fq_timers_pop_due(timers, 1000));
    assert_int_equal(fq_timers_timeout(timers, 1000), -1);
    assert_int_equal(payload.freed, 1);
    fq_timers_destroy(&timers);
    assert_int_equal(payload.freed, 1);
}

//  A periodic timer's handler may cancel its own timer while holding it:
//  the timer stays valid until the next call into the heap, then is gone.
static void test_periodic_cancels_itself(void **unused)
{
    (void)unused;
    fq_timers_t *timers = fq_timers_new();
    s_payload_t payload = {0};
    fq_timers_add(timers, 0, 5, 5, S_KIND_TICK, &payload, s_payload_free);
    fq_timer_t *timer = fq_timers_pop_due(timers, 5);
    assert_non_null(timer);
    fq_timers_cancel(timers, timer->id);
    assert_ptr_equal(timer->payload, &payload); //  Still readable this turn
    assert_int_equal(payload.freed, 0);
    assert_null(fq_timers_pop_due(timers, 10));
    assert_int_equal(payload.freed, 1);
    fq_timers_destroy(&timers);
    assert_int_equal(payload.freed, 1);
}

// --------------------------------------------------------------------------
//  Ownership and scale

//  Destroying the heap frees the payloads of every timer it still holds:
//  pending, cancelled and periodic (LeakSanitizer checks the mallocs).
static void test_destroy_frees_remaining_payloads(void **unused)
{
    (void)unused;
    fq_timers_t *timers = fq_timers_new();
    enum { S_COUNT = 10 };
    for (int k = 0; k < S_COUNT; k++) {
        char *payload = malloc(32);
        assert_non_null(payload);
        int id = fq_timers_add(timers, 0, 100 + k, k % 3 ? 0 : 50, S_KIND_TICK, payload, free);
        if (k % 4 == 0)
            fq_timers_cancel(timers, id);
    }
    //  Add one that has no payload at all
    fq_timers_add(timers, 0, 5, 0, S_KIND_TICK, NULL, NULL);

    s_payload_t counted[S_COUNT] = {{0}};
    for (int k = 0; k < S_COUNT; k++) {
        int id = fq_timers_add(timers, 0, k, 0, S_KIND_TICK, &counted[k], s_payload_free);
        if (k % 2)
            fq_timers_cancel(timers, id);
    }
    fq_timers_destroy(&timers);
    for (int k = 0; k < S_COUNT; k++)
        assert_int_equal(counted[k].freed, 1);
}

//  100,000 timers with random deadlines, half cancelled: exactly the other
//  half fire, in deadline order, and every payload is freed once.
static void test_hundred_thousand_timers(void **unused)
{
    (void)unused;
    enum { S_COUNT = 100000, S_SPREAD_MS = 1000000 };
    fq_timers_t *timers = fq_timers_new();
    s_payload_t *payloads = calloc(S_COUNT, sizeof *payloads);
    int *ids = calloc(S_COUNT, sizeof *ids);
    assert_non_null(payloads);
    assert_non_null(ids);
    uint64_t seed = S_SEED;
    for (int k = 0; k < S_COUNT; k++) {
        int delay = (int)(s_random(&seed) % S_SPREAD_MS);
        ids[k] = fq_timers_add(timers, 0, delay, 0, k, &payloads[k], s_payload_free);
        assert_true(ids[k] > 0);
    }
    for (int k = 0; k < S_COUNT; k += 2)
        fq_timers_cancel(timers, ids[k]);

    int popped = 0;
    int64_t last_deadline = 0;
    fq_timer_t *timer;
    while ((timer = fq_timers_pop_due(timers, S_SPREAD_MS))) {
        assert_true(timer->kind % 2 == 1); //  Only the timers not cancelled
        assert_true(timer->deadline >= last_deadline);
        last_deadline = timer->deadline;
        popped++;
        fq_timer_free(&timer);
    }
    assert_int_equal(popped, S_COUNT / 2);
    assert_int_equal(fq_timers_timeout(timers, S_SPREAD_MS), -1);
    for (int k = 0; k < S_COUNT; k++)
        assert_int_equal(payloads[k].freed, 1);
    fq_timers_destroy(&timers);
    free(payloads);
    free(ids);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty_timers),
        cmocka_unit_test(test_timeout_counts_down_to_due),
        cmocka_unit_test(test_non_positive_delays),
        cmocka_unit_test(test_ids_are_unique),
        cmocka_unit_test(test_pop_in_deadline_order),
        cmocka_unit_test(test_order_with_interleaved_adds),
        cmocka_unit_test(test_cancel_before_due),
        cmocka_unit_test(test_cancel_updates_timeout),
        cmocka_unit_test(test_cancel_unknown_or_fired_ignored),
        cmocka_unit_test(test_cancel_id_zero_ignored),
        cmocka_unit_test(test_periodic_keeps_firing),
        cmocka_unit_test(test_cancel_periodic),
        cmocka_unit_test(test_periodic_cancels_itself),
        cmocka_unit_test(test_destroy_frees_remaining_payloads),
        cmocka_unit_test(test_hundred_thousand_timers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
