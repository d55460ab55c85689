/*  fq_api_latency.h — a latency view (metrics/fq_latency.h) as the API
    writes it: a tenant's "latency" and a destination's "live"."latency"
    (api/API.md). */
#ifndef FQ_API_LATENCY_H
#define FQ_API_LATENCY_H

#include "fq_latency.h"
#include <jansson.h>

//  {"window_s", "delivered", "delivery_s", "end_to_end_s"}, each time an
//  object of p50, p95 and p99 in seconds (to the millisecond), each null
//  when nothing was delivered in the window (the object stays: clients
//  read one shape). A new reference; NULL when out of memory.
json_t *fq_api_latency_json(const fq_latency_view_t *view);

#endif
