/*  fq_cli_latency.h — each tenant's delivery and end-to-end times now,
    from successive readings of fairqd's histograms (fairq top).

    fairqd's /metrics counts each tenant's delivered messages by how long
    they took, in cumulative buckets since it started
    (fairq_tenant_delivery_seconds and fairq_tenant_end_to_end_seconds,
    Prometheus histograms: docs/operations.md). The buckets of two readings
    apart are the deliveries between them, and a quantile of those is
    estimated as Prometheus' histogram_quantile() does (base/fq_quantile.h,
    the same estimate fairqd answers the API's with). A reader keeps the
    last few readings and answers over the newest and the oldest of them.
*/
#ifndef FQ_CLI_LATENCY_H
#define FQ_CLI_LATENCY_H

#include <stddef.h>

//  The families read, one histogram per tenant (api/API.md, GET /metrics)
#define FQ_CLI_LATENCY_DELIVERY   "fairq_tenant_delivery_seconds"
#define FQ_CLI_LATENCY_END_TO_END "fairq_tenant_end_to_end_seconds"

//  Most buckets of one histogram read (fairqd has 24 and +Inf); more are
//  left out, and the quantiles they would tell with them.
#define FQ_CLI_LATENCY_BUCKETS_MAX 32

typedef enum {
    FQ_CLI_LATENCY_OF_DELIVERY,   //  From the hand-off to a sender to its ack
    FQ_CLI_LATENCY_OF_END_TO_END, //  From when the request was due to the ack
} fq_cli_latency_of_t;

typedef struct fq_cli_latency fq_cli_latency_t;

//  A reader that keeps readings (2 or more) readings. NULL when out of
//  memory.
fq_cli_latency_t *fq_cli_latency_new(size_t readings);
void fq_cli_latency_destroy(fq_cli_latency_t **self_p);

//  Adds a reading: text (NUL-terminated; borrowed) is GET /metrics's
//  answer, read at now (seconds on a monotonic clock, later than the last
//  reading's). A text without the families is a reading of nothing (an
//  older fairqd). Returns 0, or -1 when out of memory (the reading is not
//  kept).
int fq_cli_latency_add(fq_cli_latency_t *self, double now, const char *text);

//  Tenant's q-quantile (0..1) of what, in seconds, over the deliveries
//  between the oldest reading kept and the newest. -1 when it is not
//  known: fewer than two readings, nothing delivered between them, or the
//  counts went down (fairqd restarted, or another fairqd answered).
double fq_cli_latency_get(const fq_cli_latency_t *self, const char *tenant,
                          fq_cli_latency_of_t what, double q);

//  Seconds between the oldest reading kept and the newest; 0 with fewer
//  than two.
double fq_cli_latency_span(const fq_cli_latency_t *self);

//  Two quantiles as top shows them, "p50/p99" in fitting units ("85ms",
//  "1.2s", "4m", "2h"), each "-" when not known (< 0).
void fq_cli_latency_format(char *text, size_t size, double p50, double p99);

#endif
