/*  fq_latency.c — delivery and end-to-end times (fq_latency.h). */
#include "fq_latency.h"
#include "fq_quantile.h"
#include <stddef.h>

//  From a millisecond (the null transport, a relay next door) to a day
//  (end to end across retries that back off for hours); one set for both
//  times, so that their buckets compare one to one.
const double fq_latency_bounds[FQ_LATENCY_BOUNDS] = {
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,  0.25, 0.5,  1,     2.5,   5,
    10,    30,     60,    120,  300,   600,  1800, 3600, 7200, 14400, 43200, 86400};

//  The quantiles the API answers: the median, and the tail operators hold
//  relays to.
#define S_P50 0.5
#define S_P95 0.95
#define S_P99 0.99

static size_t s_bucket(double value)
{
    size_t i = 0;
    while (i < FQ_LATENCY_BOUNDS && value > fq_latency_bounds[i])
        i++;
    return i;
}

static void s_add_one(fq_latency_histogram_t *histogram, size_t bucket, double value)
{
    histogram->buckets[bucket]++;
    histogram->count++;
    histogram->sum += value;
}

static void s_add(fq_latency_histogram_t *into, const fq_latency_histogram_t *from)
{
    for (size_t i = 0; i <= FQ_LATENCY_BOUNDS; i++)
        into->buckets[i] += from->buckets[i];
    into->count += from->count;
    into->sum += from->sum;
}

//  The slot number of a Unix second (never negative: clocks before 1970
//  are not fairqd's).
static int64_t s_slot_of(int64_t now_s)
{
    return now_s > 0 ? now_s / FQ_LATENCY_SLOT_S : 0;
}

void fq_latency_observe(fq_latency_t *self, int64_t now_s, double delivery_s, double end_to_end_s)
{
    int64_t number = s_slot_of(now_s);
    size_t at = (size_t)(number % FQ_LATENCY_SLOTS);
    if (self->slot_at[at] != number) {
        self->slot_at[at] = number;
        self->slots[at] = (fq_latency_pair_t){0};
    }
    if (delivery_s >= 0) {
        size_t bucket = s_bucket(delivery_s);
        s_add_one(&self->total.delivery, bucket, delivery_s);
        s_add_one(&self->slots[at].delivery, bucket, delivery_s);
    }
    if (end_to_end_s >= 0) {
        size_t bucket = s_bucket(end_to_end_s);
        s_add_one(&self->total.end_to_end, bucket, end_to_end_s);
        s_add_one(&self->slots[at].end_to_end, bucket, end_to_end_s);
    }
}

void fq_latency_window(const fq_latency_t *self, int64_t now_s, fq_latency_pair_t *window)
{
    int64_t number = s_slot_of(now_s);
    for (size_t i = 0; i < FQ_LATENCY_SLOTS; i++)
        //  A slot of a clock that stepped back is left out, as is an old one
        if (self->slot_at[i] > number - FQ_LATENCY_SLOTS && self->slot_at[i] <= number &&
            (self->slots[i].delivery.count || self->slots[i].end_to_end.count)) {
            s_add(&window->delivery, &self->slots[i].delivery);
            s_add(&window->end_to_end, &self->slots[i].end_to_end);
        }
}

static void s_quantiles(const fq_latency_histogram_t *histogram, fq_latency_quantiles_t *out)
{
    double cumulative[FQ_LATENCY_BOUNDS];
    uint64_t running = 0;
    for (size_t i = 0; i < FQ_LATENCY_BOUNDS; i++) {
        running += histogram->buckets[i];
        cumulative[i] = (double)running;
    }
    double total = (double)histogram->count;
    out->p50 = fq_quantile(S_P50, fq_latency_bounds, cumulative, FQ_LATENCY_BOUNDS, total);
    out->p95 = fq_quantile(S_P95, fq_latency_bounds, cumulative, FQ_LATENCY_BOUNDS, total);
    out->p99 = fq_quantile(S_P99, fq_latency_bounds, cumulative, FQ_LATENCY_BOUNDS, total);
}

void fq_latency_view(const fq_latency_pair_t *window, fq_latency_view_t *out)
{
    out->window_s = FQ_LATENCY_WINDOW_S;
    out->delivered = window->delivery.count;
    s_quantiles(&window->delivery, &out->delivery);
    s_quantiles(&window->end_to_end, &out->end_to_end);
}
