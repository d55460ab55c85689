/*  fq_api_latency.c — a latency view as JSON (fq_api_latency.h). */
#include "fq_api_latency.h"
#include <math.h>

//  Quantiles are estimates within a bucket: shown to the millisecond,
//  digits beyond it would only be noise.
#define S_MS_PER_S 1000.0

//  A quantile, null when there is none (nothing delivered).
static json_t *s_seconds(double value)
{
    return value < 0 ? json_null() : json_real(round(value * S_MS_PER_S) / S_MS_PER_S);
}

static json_t *s_quantiles(const fq_latency_quantiles_t *q)
{
    return json_pack("{s:o, s:o, s:o}", "p50", s_seconds(q->p50), "p95", s_seconds(q->p95), "p99",
                     s_seconds(q->p99));
}

json_t *fq_api_latency_json(const fq_latency_view_t *view)
{
    return json_pack("{s:I, s:I, s:o, s:o}", "window_s", (json_int_t)view->window_s, "delivered",
                     (json_int_t)view->delivered, "delivery_s", s_quantiles(&view->delivery),
                     "end_to_end_s", s_quantiles(&view->end_to_end));
}
