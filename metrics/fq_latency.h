/*  fq_latency.h — how long deliveries take: the figures of one tenant, or
    of one channel's destination, behind fairq_*_delivery_seconds and
    fairq_*_end_to_end_seconds (docs/operations.md) and the API's
    "latency" fields (api/API.md).

    Two times of each delivered message (acked by its sender):

    * delivery: from its hand-off to a sender (the dispatcher told it in a
      MSG or MESSAGES frame) to its ACK reaching the dispatcher: the time
      in the sender, its queue and its transport.
    * end to end: from when its request was due, its accepted time (its
      submit's commit) or its send_at if later, to the same ACK: the time
      waiting for its turn, for credit, for any retry, and in the sender.
      A request scheduled for later is not charged the wait it asked for.

    Each is kept twice: since fairqd started (cumulative buckets, for
    Prometheus) and over the last FQ_LATENCY_WINDOW_S in slots (the
    quantiles the API answers, which need no second reading).

    Plain data, no lock: fq_metrics keeps these under its own. */
#ifndef FQ_LATENCY_H
#define FQ_LATENCY_H

#include <stdint.h>

//  Buckets' upper bounds, in seconds (fq_latency_bounds).
#define FQ_LATENCY_BOUNDS 24
extern const double fq_latency_bounds[FQ_LATENCY_BOUNDS];

//  The window of the quantiles: the last 5 minutes, long enough for a
//  p99 of a quiet tenant to rest on more than a handful of messages,
//  short enough to show a relay that slowed down this morning as it is
//  now. Kept in slots of FQ_LATENCY_SLOT_S: the window covers between
//  FQ_LATENCY_WINDOW_S - FQ_LATENCY_SLOT_S and FQ_LATENCY_WINDOW_S.
#define FQ_LATENCY_SLOT_S   30
#define FQ_LATENCY_SLOTS    10
#define FQ_LATENCY_WINDOW_S (FQ_LATENCY_SLOT_S * FQ_LATENCY_SLOTS)

typedef struct {
    uint64_t buckets[FQ_LATENCY_BOUNDS + 1]; //  Per bound, not cumulative; the last above all
    uint64_t count;
    double sum; //  Seconds
} fq_latency_histogram_t;

//  The two times of the messages delivered in one span.
typedef struct {
    fq_latency_histogram_t delivery, end_to_end;
} fq_latency_pair_t;

typedef struct {
    fq_latency_pair_t total; //  Since fairqd started
    fq_latency_pair_t slots[FQ_LATENCY_SLOTS];
    int64_t slot_at[FQ_LATENCY_SLOTS]; //  The slot number (now_s / FQ_LATENCY_SLOT_S) each holds
} fq_latency_t;

//  A message delivered at now_s (seconds of a clock that does not step
//  back: fq_metrics' own) after delivery_s in the
//  sender and end_to_end_s in all; a negative time is not known and is
//  left out of its histogram. self zeroed (calloc) is a start.
void fq_latency_observe(fq_latency_t *self, int64_t now_s, double delivery_s, double end_to_end_s);

//  Adds self's slots within the window that ends at now_s into window
//  (several channels of one destination add up into one).
void fq_latency_window(const fq_latency_t *self, int64_t now_s, fq_latency_pair_t *window);

//  Quantiles of one time, in seconds; each -1 when nothing was delivered.
typedef struct {
    double p50, p95, p99;
} fq_latency_quantiles_t;

//  What the API shows of a window.
typedef struct {
    int64_t window_s; //  FQ_LATENCY_WINDOW_S
    uint64_t delivered;
    fq_latency_quantiles_t delivery, end_to_end;
} fq_latency_view_t;

//  The quantiles of window (fq_latency_window) into out.
void fq_latency_view(const fq_latency_pair_t *window, fq_latency_view_t *out);

#endif
