/*  latency_test.c — delivery and end-to-end times: the histograms of
    fq_latency, the quantile estimate of fq_quantile, and what fq_metrics
    makes of the dispatcher's records (/metrics and the API's views).

    No database and no clock of its own: fq_metrics reads a fake clock, so
    that the window's slots are walked second by second. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "fq_latency.h"
#include "fq_metrics.h"
#include "fq_quantile.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define S_ACME 1
#define S_BETA 2

#define S_SECOND_MS 1000
#define S_US_PER_MS 1000

//  How close two estimates must be: float sums, not a tolerance of the
//  estimate itself
#define S_EPSILON 1e-9

static void s_assert_line(const char *text, const char *line)
{
    size_t len = strlen(line);
    for (const char *at = strstr(text, line); at; at = strstr(at + 1, line))
        if ((at == text || at[-1] == '\n') && at[len] == '\n')
            return;
    print_error("missing line: %s\nin:\n%s\n", line, text);
    fail();
}

//  The quantile of Prometheus' histogram_quantile: linear within a bucket,
//  the highest bound for the +Inf bucket, none without an observation.
static void test_quantile(void **state)
{
    (void)state;
    const double bounds[] = {0.1, 0.5, 1};
    //  10 at or below 0.1, 10 more at or below 0.5, none more to 1, 5 above
    const double cumulative[] = {10, 20, 20};
    double total = 25;
    //  Rank 5 of 10 in [0, 0.1]: halfway
    assert_true(fabs(fq_quantile(0.2, bounds, cumulative, 3, total) - 0.05) < S_EPSILON);
    //  Rank 15: halfway through (0.1, 0.5]
    assert_true(fabs(fq_quantile(0.6, bounds, cumulative, 3, total) - 0.3) < S_EPSILON);
    //  Rank 20: the top of (0.1, 0.5]
    assert_true(fabs(fq_quantile(0.8, bounds, cumulative, 3, total) - 0.5) < S_EPSILON);
    //  Rank 24.75, above every bound: the highest bound is all that is known
    assert_true(fabs(fq_quantile(0.99, bounds, cumulative, 3, total) - 1) < S_EPSILON);
    assert_true(fq_quantile(0.5, bounds, cumulative, 3, 0) < 0);
    assert_true(fq_quantile(1.5, bounds, cumulative, 3, total) < 0);
    //  q 0 with an empty first bucket: its lower end
    const double late[] = {0, 4, 4};
    assert_true(fabs(fq_quantile(0, bounds, late, 3, 4) - 0) < S_EPSILON);
}

//  Observations land in the bucket whose bound is the first at or above
//  them, in the total and in the slot of their time.
static void test_observe_and_window(void **state)
{
    (void)state;
    fq_latency_t *latency = calloc(1, sizeof *latency);
    assert_non_null(latency);
    int64_t now = 1000 * FQ_LATENCY_SLOT_S;
    //  100 messages: 0.2 s in the sender each, 1 s end to end
    for (int i = 0; i < 100; i++)
        fq_latency_observe(latency, now, 0.2, 1.0);
    //  One with no known end-to-end time: its delivery counts alone
    fq_latency_observe(latency, now, 0.2, -1);
    assert_int_equal(latency->total.delivery.count, 101);
    assert_int_equal(latency->total.end_to_end.count, 100);
    assert_true(fabs(latency->total.delivery.sum - 101 * 0.2) < 1e-6);
    //  0.2 is above 0.1 and at most 0.25
    size_t bucket = 0;
    while (fq_latency_bounds[bucket] < 0.2)
        bucket++;
    assert_true(fq_latency_bounds[bucket] == 0.25);
    assert_int_equal(latency->total.delivery.buckets[bucket], 101);

    fq_latency_pair_t window = {0};
    fq_latency_window(latency, now, &window);
    fq_latency_view_t view;
    fq_latency_view(&window, &view);
    assert_int_equal(view.window_s, FQ_LATENCY_WINDOW_S);
    assert_int_equal(view.delivered, 101);
    //  All in (0.1, 0.25]: the median halfway through it
    assert_true(fabs(view.delivery.p50 - 0.175) < S_EPSILON);
    assert_true(view.delivery.p99 <= 0.25 && view.delivery.p99 > view.delivery.p50);
    assert_true(view.end_to_end.p50 > 0.5 && view.end_to_end.p50 <= 1);

    //  A slow minute later: the window holds both
    int64_t later = now + 2 * FQ_LATENCY_SLOT_S;
    for (int i = 0; i < 100; i++)
        fq_latency_observe(latency, later, 20, 40);
    window = (fq_latency_pair_t){0};
    fq_latency_window(latency, later, &window);
    fq_latency_view(&window, &view);
    assert_int_equal(view.delivered, 201);
    assert_true(view.delivery.p99 > 10 && view.delivery.p99 <= 30);
    assert_true(view.delivery.p50 <= 0.25);

    //  Past the window, the first slot is gone; the total keeps all
    int64_t past = now + FQ_LATENCY_WINDOW_S;
    window = (fq_latency_pair_t){0};
    fq_latency_window(latency, past, &window);
    fq_latency_view(&window, &view);
    assert_int_equal(view.delivered, 100);
    assert_true(view.delivery.p50 > 10);
    assert_int_equal(latency->total.delivery.count, 201);

    //  And long after, nothing: no quantile
    window = (fq_latency_pair_t){0};
    fq_latency_window(latency, later + 2 * FQ_LATENCY_WINDOW_S, &window);
    fq_latency_view(&window, &view);
    assert_int_equal(view.delivered, 0);
    assert_true(view.delivery.p50 < 0 && view.end_to_end.p99 < 0);
    free(latency);
}

//  A slot reused after the ring came round starts empty.
static void test_slot_reuse(void **state)
{
    (void)state;
    fq_latency_t latency = {0};
    int64_t now = 7 * FQ_LATENCY_SLOT_S;
    fq_latency_observe(&latency, now, 1, 1);
    int64_t round = now + FQ_LATENCY_WINDOW_S; //  The same slot, a window later
    fq_latency_observe(&latency, round, 2, 2);
    fq_latency_pair_t window = {0};
    fq_latency_window(&latency, round, &window);
    assert_int_equal(window.delivery.count, 1);
    assert_true(fabs(window.delivery.sum - 2) < S_EPSILON);
    assert_int_equal(latency.total.delivery.count, 2);
}

static int64_t s_clock_ms;

static int64_t s_clock(void *arg)
{
    (void)arg;
    return s_clock_ms;
}

//  The dispatcher's records, as /metrics and the API show them.
static void test_metrics(void **state)
{
    (void)state;
    s_clock_ms = 1000 * S_SECOND_MS;
    fq_metrics_t *metrics = fq_metrics_new();
    assert_non_null(metrics);
    fq_metrics_set_clock(metrics, s_clock, NULL);
    fq_metrics_tenant_name(metrics, S_ACME, "acme");
    fq_metrics_tenant_name(metrics, S_BETA, "beta");
    fq_metrics_batch_t *batch = fq_metrics_batch_new(metrics);
    //  Names borrowed until the flush: the dispatcher's interned routes
    char channel[] = "email", google[] = "google", other[] = "default", hooks[] = "http";
    for (int i = 0; i < 4; i++)
        fq_metrics_batch_delivered(batch, S_ACME, channel, google, 250 * S_US_PER_MS, 1500);
    fq_metrics_batch_delivered(batch, S_ACME, hooks, google, 500 * S_US_PER_MS, 500);
    fq_metrics_batch_delivered(batch, S_BETA, channel, other, 3 * S_US_PER_MS, -1);
    //  No route known: its tenant's figures only
    fq_metrics_batch_delivered(batch, S_BETA, NULL, NULL, 3 * S_US_PER_MS, 5);
    fq_metrics_batch_flush(batch);

    char *text = fq_metrics_render(metrics, NULL, NULL);
    assert_non_null(text);
    s_assert_line(text, "# TYPE fairq_tenant_delivery_seconds histogram");
    s_assert_line(text, "# TYPE fairq_destination_end_to_end_seconds histogram");
    s_assert_line(text, "fairq_tenant_delivery_seconds_count{tenant=\"acme\"} 5");
    s_assert_line(text, "fairq_tenant_delivery_seconds_sum{tenant=\"acme\"} 1.5");
    s_assert_line(text, "fairq_tenant_delivery_seconds_bucket{tenant=\"acme\",le=\"0.25\"} 4");
    s_assert_line(text, "fairq_tenant_delivery_seconds_bucket{tenant=\"acme\",le=\"0.1\"} 0");
    s_assert_line(text, "fairq_tenant_delivery_seconds_bucket{tenant=\"acme\",le=\"+Inf\"} 5");
    s_assert_line(text, "fairq_tenant_end_to_end_seconds_count{tenant=\"beta\"} 1");
    s_assert_line(text, "fairq_tenant_delivery_seconds_count{tenant=\"beta\"} 2");
    s_assert_line(text, "fairq_destination_delivery_seconds_count{destination=\"google\","
                        "channel=\"email\"} 4");
    s_assert_line(text, "fairq_destination_delivery_seconds_count{destination=\"google\","
                        "channel=\"http\"} 1");
    s_assert_line(text, "fairq_destination_end_to_end_seconds_sum{destination=\"google\","
                        "channel=\"email\"} 6");
    s_assert_line(text, "fairq_destination_end_to_end_seconds_count{destination=\"default\","
                        "channel=\"email\"} 0");
    free(text);

    fq_latency_view_t view;
    fq_metrics_tenant_latency(metrics, "acme", &view);
    assert_int_equal(view.delivered, 5);
    assert_true(view.delivery.p50 > 0.1 && view.delivery.p50 <= 0.25);
    //  Four of five at 1.5 s: the median in (1, 2.5]
    assert_true(view.end_to_end.p50 > 1 && view.end_to_end.p50 <= 2.5);
    fq_metrics_tenant_latency(metrics, "nobody", &view);
    assert_int_equal(view.delivered, 0);
    assert_true(view.delivery.p50 < 0);
    //  A destination's channels together
    fq_metrics_destination_latency(metrics, "google", &view);
    assert_int_equal(view.delivered, 5);

    //  The window moves on; the totals stay
    s_clock_ms += 2 * FQ_LATENCY_WINDOW_S * S_SECOND_MS;
    fq_metrics_tenant_latency(metrics, "acme", &view);
    assert_int_equal(view.delivered, 0);
    text = fq_metrics_render(metrics, NULL, NULL);
    s_assert_line(text, "fairq_tenant_delivery_seconds_count{tenant=\"acme\"} 5");
    free(text);

    //  A destination deleted leaves with its routes
    fq_metrics_destination_forget(metrics, "google");
    text = fq_metrics_render(metrics, NULL, NULL);
    assert_null(strstr(text, "destination=\"google\""));
    s_assert_line(text, "fairq_destination_delivery_seconds_count{destination=\"default\","
                        "channel=\"email\"} 1");
    free(text);
    fq_metrics_destination_latency(metrics, "google", &view);
    assert_int_equal(view.delivered, 0);

    fq_metrics_batch_destroy(&batch);
    fq_metrics_destroy(&metrics);
    //  NULL does nothing, and answers nothing delivered
    fq_metrics_batch_delivered(NULL, S_ACME, channel, google, 1, 1);
    fq_metrics_tenant_latency(NULL, "acme", &view);
    assert_int_equal(view.delivered, 0);
    fq_metrics_destination_latency(NULL, "google", &view);
    assert_int_equal(view.delivered, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quantile),
        cmocka_unit_test(test_observe_and_window),
        cmocka_unit_test(test_slot_reuse),
        cmocka_unit_test(test_metrics),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
