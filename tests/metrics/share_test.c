/*  share_test.c — what the web console reads of fq_metrics: each
    tenant's share of dispatch in 10-second slots (GET /v1/share), the
    senders (GET /v1/senders), and a tenant's bounce and complaint rates
    (the tenant object).

    The share is kept on the metrics' clock, faked here: slots fill as the
    batches flush, roll over as the clock passes their end, and leave the
    window (and the ring) as it moves on. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "fq_metrics.h"
#include <stdlib.h>
#include <string.h>

//  Tenant ids as the database would number them.
#define S_ACME  1
#define S_BETA  2
#define S_GAMMA 3

#define S_REQUEST 11

#define S_SECOND_MS 1000
#define S_SLOT_MS   (FQ_METRICS_SHARE_SLOT_S * S_SECOND_MS)

//  Slots of a minute, and of the whole window kept.
#define S_MINUTE_SLOTS (60 / FQ_METRICS_SHARE_SLOT_S)

static int64_t s_fake_now(void *arg)
{
    return *(const int64_t *)arg;
}

//  n messages of tenant handed to a sender, flushed at once.
static void s_dispatch(fq_metrics_t *metrics, int64_t tenant, int n)
{
    fq_metrics_batch_t *batch = fq_metrics_batch_new(metrics);
    for (int i = 0; i < n; i++)
        fq_metrics_batch_dispatched(batch, tenant, S_REQUEST, 0, -1);
    fq_metrics_batch_destroy(&batch);
}

//  The row of name in list, or NULL.
static const fq_metrics_share_t *s_row(const fq_metrics_share_list_t *list, const char *name)
{
    for (size_t i = 0; i < list->count; i++)
        if (strcmp(list->rows[i].name, name) == 0)
            return &list->rows[i];
    return NULL;
}

//  Asserts the row's counts, oldest first, are those of expected.
static void s_assert_counts(const fq_metrics_share_list_t *list, const char *name,
                            const int64_t *expected)
{
    const fq_metrics_share_t *row = s_row(list, name);
    assert_non_null(row);
    for (size_t i = 0; i < list->slots; i++) {
        if (row->dispatched[i] != expected[i])
            print_error("%s: slot %zu of %zu holds %lld, not %lld\n", name, i, list->slots,
                        (long long)row->dispatched[i], (long long)expected[i]);
        assert_int_equal(row->dispatched[i], expected[i]);
    }
}

static fq_metrics_t *s_metrics(int64_t *now)
{
    fq_metrics_t *metrics = fq_metrics_new();
    assert_non_null(metrics);
    fq_metrics_set_clock(metrics, s_fake_now, now);
    fq_metrics_tenant_name(metrics, S_ACME, "acme");
    fq_metrics_tenant_name(metrics, S_BETA, "beta");
    fq_metrics_tenant_name(metrics, S_GAMMA, "gamma");
    return metrics;
}

//  ---------------------------------------------------------------------
//  The share of dispatch

static void test_share_slots_roll_over(void **state)
{
    (void)state;
    //  4 s into a slot
    int64_t now = 1000 * S_SLOT_MS + 4 * S_SECOND_MS;
    fq_metrics_t *metrics = s_metrics(&now);
    s_dispatch(metrics, S_ACME, 3);
    now += 3 * S_SECOND_MS; //  The same slot
    s_dispatch(metrics, S_ACME, 1);
    now += S_SLOT_MS; //  The next one
    s_dispatch(metrics, S_ACME, 2);
    s_dispatch(metrics, S_BETA, 5);

    fq_metrics_share_list_t list;
    assert_int_equal(fq_metrics_share(metrics, S_MINUTE_SLOTS, NULL, &list), 0);
    assert_int_equal(list.slots, S_MINUTE_SLOTS);
    //  3 s left of the current slot, the newest
    assert_int_equal(list.until_in_ms, 3 * S_SECOND_MS);
    //  By name; gamma, handed nothing, left out
    assert_int_equal(list.count, 2);
    assert_string_equal(list.rows[0].name, "acme");
    assert_string_equal(list.rows[1].name, "beta");
    s_assert_counts(&list, "acme", (int64_t[]){0, 0, 0, 0, 4, 2});
    s_assert_counts(&list, "beta", (int64_t[]){0, 0, 0, 0, 0, 5});
    fq_metrics_share_list_free(&list);

    //  A slot passes with nothing: the counts move one to the left
    now += S_SLOT_MS;
    assert_int_equal(fq_metrics_share(metrics, S_MINUTE_SLOTS, NULL, &list), 0);
    s_assert_counts(&list, "acme", (int64_t[]){0, 0, 0, 4, 2, 0});
    fq_metrics_share_list_free(&list);
    fq_metrics_destroy(&metrics);
}

static void test_share_window_cut(void **state)
{
    (void)state;
    int64_t now = 77 * S_SLOT_MS;
    fq_metrics_t *metrics = s_metrics(&now);
    s_dispatch(metrics, S_ACME, 7);
    now += S_SLOT_MS;
    s_dispatch(metrics, S_BETA, 1);
    //  Six slots on, acme's slot is out of a minute's window, not out of
    //  ten minutes'
    now += 5 * S_SLOT_MS;
    fq_metrics_share_list_t list;
    assert_int_equal(fq_metrics_share(metrics, S_MINUTE_SLOTS, NULL, &list), 0);
    assert_int_equal(list.count, 1);
    s_assert_counts(&list, "beta", (int64_t[]){1, 0, 0, 0, 0, 0});
    fq_metrics_share_list_free(&list);
    assert_int_equal(fq_metrics_share(metrics, FQ_METRICS_SHARE_SLOTS, NULL, &list), 0);
    assert_int_equal(list.count, 2);
    assert_int_equal(list.slots, FQ_METRICS_SHARE_SLOTS);
    int64_t sum = 0;
    const fq_metrics_share_t *acme = s_row(&list, "acme");
    for (size_t i = 0; i < list.slots; i++)
        sum += acme->dispatched[i];
    assert_int_equal(sum, 7);
    assert_int_equal(acme->dispatched[FQ_METRICS_SHARE_SLOTS - 7], 7);
    fq_metrics_share_list_free(&list);
    //  More slots than kept are cut to those kept; fewer than one is one
    assert_int_equal(fq_metrics_share(metrics, 1000, NULL, &list), 0);
    assert_int_equal(list.slots, FQ_METRICS_SHARE_SLOTS);
    fq_metrics_share_list_free(&list);
    assert_int_equal(fq_metrics_share(metrics, 0, NULL, &list), 0);
    assert_int_equal(list.slots, 1);
    assert_int_equal(list.count, 0);
    fq_metrics_share_list_free(&list);

    //  A whole ring later the same entries count anew: acme's old 7 are
    //  not added to what it is handed now
    now = 77 * S_SLOT_MS + FQ_METRICS_SHARE_SLOTS * S_SLOT_MS;
    s_dispatch(metrics, S_ACME, 2);
    assert_int_equal(fq_metrics_share(metrics, FQ_METRICS_SHARE_SLOTS, NULL, &list), 0);
    assert_int_equal(list.count, 2); //  beta's one, the oldest slot of the window
    s_assert_counts(&list, "beta", (int64_t[FQ_METRICS_SHARE_SLOTS]){1});
    acme = s_row(&list, "acme");
    assert_non_null(acme);
    sum = 0;
    for (size_t i = 0; i < list.slots; i++)
        sum += acme->dispatched[i];
    assert_int_equal(sum, 2);
    assert_int_equal(acme->dispatched[FQ_METRICS_SHARE_SLOTS - 1], 2);
    fq_metrics_share_list_free(&list);
    fq_metrics_destroy(&metrics);
}

static void test_share_counts_at_the_flush(void **state)
{
    (void)state;
    //  A clock that starts at 0 (and runs below it) is fine
    int64_t now = -S_SECOND_MS;
    fq_metrics_t *metrics = s_metrics(&now);
    fq_metrics_batch_t *batch = fq_metrics_batch_new(metrics);
    fq_metrics_batch_dispatched(batch, S_GAMMA, S_REQUEST, 0, -1);
    now += 2 * S_SECOND_MS; //  Into the next slot before the flush
    fq_metrics_batch_flush(batch);
    fq_metrics_share_list_t list;
    assert_int_equal(fq_metrics_share(metrics, 2, NULL, &list), 0);
    s_assert_counts(&list, "gamma", (int64_t[]){0, 1});
    assert_int_equal(list.until_in_ms, S_SLOT_MS - S_SECOND_MS);
    fq_metrics_share_list_free(&list);
    fq_metrics_batch_destroy(&batch);
    fq_metrics_destroy(&metrics);
}

static void test_share_of_one_tenant(void **state)
{
    (void)state;
    int64_t now = 5 * S_SLOT_MS;
    fq_metrics_t *metrics = s_metrics(&now);
    s_dispatch(metrics, S_ACME, 1);
    s_dispatch(metrics, S_BETA, 2);
    s_dispatch(metrics, 99, 4); //  A tenant not named yet: no row
    fq_metrics_share_list_t list;
    assert_int_equal(fq_metrics_share(metrics, S_MINUTE_SLOTS, "beta", &list), 0);
    assert_int_equal(list.count, 1);
    s_assert_counts(&list, "beta", (int64_t[]){0, 0, 0, 0, 0, 2});
    fq_metrics_share_list_free(&list);
    assert_int_equal(fq_metrics_share(metrics, S_MINUTE_SLOTS, "nobody", &list), 0);
    assert_int_equal(list.count, 0);
    fq_metrics_share_list_free(&list);
    assert_int_equal(fq_metrics_share(metrics, S_MINUTE_SLOTS, NULL, &list), 0);
    assert_int_equal(list.count, 2);
    fq_metrics_share_list_free(&list);
    //  Without metrics: nothing, a slot ahead
    assert_int_equal(fq_metrics_share(NULL, S_MINUTE_SLOTS, NULL, &list), 0);
    assert_int_equal(list.count, 0);
    assert_int_equal(list.until_in_ms, S_SLOT_MS);
    fq_metrics_share_list_free(&list);
    fq_metrics_destroy(&metrics);
}

//  ---------------------------------------------------------------------
//  The senders

static void test_sender_list(void **state)
{
    (void)state;
    int64_t now = 0;
    fq_metrics_t *metrics = s_metrics(&now);
    uint64_t zulu = fq_metrics_sender_join(metrics, "zulu", "tcp://10.0.0.9:5000");
    uint64_t alpha2 = fq_metrics_sender_join(metrics, "alpha", "tcp://10.0.0.2:5000");
    uint64_t alpha1 = fq_metrics_sender_join(metrics, "alpha", "tcp://10.0.0.1:5000");
    fq_metrics_batch_t *batch = fq_metrics_batch_new(metrics);
    for (int i = 0; i < 3; i++)
        fq_metrics_batch_dispatched(batch, S_ACME, S_REQUEST, alpha1, -1);
    fq_metrics_batch_settled(batch, S_ACME, S_REQUEST, alpha1, FQ_METRICS_SENT);
    fq_metrics_batch_settled(batch, S_ACME, S_REQUEST, alpha1, FQ_METRICS_FAILED);
    fq_metrics_batch_sender(batch, alpha1, 1, 15);
    fq_metrics_batch_dispatched(batch, S_ACME, S_REQUEST, zulu, -1);
    fq_metrics_batch_settled(batch, S_ACME, S_REQUEST, zulu, FQ_METRICS_DEAD);
    fq_metrics_batch_dispatched(batch, S_ACME, S_REQUEST, alpha2, -1);
    fq_metrics_batch_sender(batch, alpha2, 1, 7);
    fq_metrics_batch_flush(batch);
    //  alpha2 dies: its message is given back, its gauges drop to 0
    fq_metrics_batch_settled(batch, S_ACME, S_REQUEST, alpha2, FQ_METRICS_REQUEUED);
    fq_metrics_batch_destroy(&batch);
    fq_metrics_sender_leave(metrics, alpha2);

    fq_metrics_sender_list_t list;
    assert_int_equal(fq_metrics_senders(metrics, &list), 0);
    assert_int_equal(list.count, 3);
    //  By name, then address
    const fq_metrics_sender_view_t *a1 = &list.rows[0], *a2 = &list.rows[1], *z = &list.rows[2];
    assert_string_equal(a1->name, "alpha");
    assert_string_equal(a1->address, "tcp://10.0.0.1:5000");
    assert_string_equal(a2->address, "tcp://10.0.0.2:5000");
    assert_string_equal(z->name, "zulu");
    assert_true(a1->connected);
    assert_int_equal(a1->credit, 15);
    assert_int_equal(a1->inflight, 1);
    assert_int_equal(a1->dispatched, 3);
    assert_int_equal(a1->sent, 1);
    assert_int_equal(a1->failed, 1);
    assert_int_equal(a1->dead, 0);
    assert_false(a2->connected);
    assert_int_equal(a2->credit, 0);
    assert_int_equal(a2->inflight, 0);
    assert_int_equal(a2->dispatched, 1);
    assert_int_equal(a2->requeued, 1);
    assert_int_equal(z->dead, 1);
    fq_metrics_sender_list_free(&list);
    assert_null(list.rows);

    //  Without metrics, or before any HELLO: none
    assert_int_equal(fq_metrics_senders(NULL, &list), 0);
    assert_int_equal(list.count, 0);
    fq_metrics_sender_list_free(&list);
    fq_metrics_destroy(&metrics);
    metrics = s_metrics(&now);
    assert_int_equal(fq_metrics_senders(metrics, &list), 0);
    assert_int_equal(list.count, 0);
    fq_metrics_sender_list_free(&list);
    fq_metrics_destroy(&metrics);
}

//  ---------------------------------------------------------------------
//  A tenant's rates of the last day

//  As fq_store_tenant_rates gives them, in the database's order (not the
//  bytes' order the lookup uses).
static fq_tenant_rates_t s_rates_rows[] = {
    {.tenant_id = S_GAMMA, .name = "gamma"},
    {.tenant_id = S_ACME,
     .name = "acme",
     .delivered = 1990,
     .bounces = 40,
     .bounces_refused = 10,
     .complaints = 6},
    {.tenant_id = S_BETA, .name = "beta", .bounces = 5, .bounces_refused = 5},
};
static const fq_tenant_rates_list_t s_rates = {s_rates_rows,
                                               sizeof s_rates_rows / sizeof s_rates_rows[0]};

static void test_tenant_rates_of(void **state)
{
    (void)state;
    int64_t now = 0;
    fq_metrics_t *metrics = s_metrics(&now);
    double bounce, complaint;
    //  Never read: not known
    fq_metrics_tenant_rates_of(metrics, "acme", &bounce, &complaint);
    assert_true(bounce < 0 && complaint < 0);
    assert_true(fq_metrics_tenant_rates_due(metrics));
    fq_metrics_tenant_rates(metrics, &s_rates);
    //  What fairq_tenant_bounce_rate and fairq_tenant_complaint_rate show
    fq_metrics_tenant_rates_of(metrics, "acme", &bounce, &complaint);
    assert_true(bounce == fq_tenant_bounce_rate(&s_rates_rows[1]));
    assert_true(bounce == 0.02);
    assert_true(complaint == fq_tenant_complaint_rate(&s_rates_rows[1]));
    assert_true(complaint == 6.0 / 1990);
    //  Every verdict a bounce; nothing delivered to complain of
    fq_metrics_tenant_rates_of(metrics, "beta", &bounce, &complaint);
    assert_true(bounce == 1);
    assert_true(complaint < 0);
    //  No mail in the window; a tenant the read did not have
    fq_metrics_tenant_rates_of(metrics, "gamma", &bounce, &complaint);
    assert_true(bounce < 0 && complaint < 0);
    fq_metrics_tenant_rates_of(metrics, "delta", &bounce, &complaint);
    assert_true(bounce < 0 && complaint < 0);
    //  The rows given are the caller's: left as they were
    assert_string_equal(s_rates_rows[0].name, "gamma");
    //  Without metrics: not known
    fq_metrics_tenant_rates_of(NULL, "acme", &bounce, &complaint);
    assert_true(bounce < 0 && complaint < 0);
    fq_metrics_destroy(&metrics);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_share_slots_roll_over),
        cmocka_unit_test(test_share_window_cut),
        cmocka_unit_test(test_share_counts_at_the_flush),
        cmocka_unit_test(test_share_of_one_tenant),
        cmocka_unit_test(test_sender_list),
        cmocka_unit_test(test_tenant_rates_of),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
