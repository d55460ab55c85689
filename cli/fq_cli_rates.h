/*  fq_cli_rates.h — each tenant's send rate now, from successive
    readings of fairqd's counters (fairq top).

    A tenant object's send_rate is fairqd's average over the last minute:
    steady, but a minute late to show a change (a backlog that starts
    draining, a sender that stops). fairqd's /metrics counts each tenant's
    acked messages since it started (fairq_tenant_sent_total, a
    Prometheus counter); two readings a few seconds apart give the rate
    over those seconds. A reader keeps the last few readings and answers
    the rate between the newest and the oldest of them.
*/
#ifndef FQ_CLI_RATES_H
#define FQ_CLI_RATES_H

#include <stddef.h>

//  The counter read, one sample per tenant (api/API.md, GET /metrics)
#define FQ_CLI_RATES_FAMILY "fairq_tenant_sent_total"

typedef struct fq_cli_rates fq_cli_rates_t;

//  A reader that keeps readings (2 or more) readings: the rate is over the
//  last readings - 1 intervals between them. NULL when out of memory.
fq_cli_rates_t *fq_cli_rates_new(size_t readings);
void fq_cli_rates_destroy(fq_cli_rates_t **self_p);

//  Adds a reading: text (NUL-terminated; borrowed) is GET /metrics's
//  answer, read at now (seconds on a monotonic clock, later than the last
//  reading's). Returns 0 (a fairqd that acked nothing yet declares the
//  family without a sample: a reading of nothing); or -1 when text holds
//  neither a sample nor the declaration of FQ_CLI_RATES_FAMILY (not
//  fairqd's metrics) or memory ran out, and the reading is not kept.
int fq_cli_rates_add(fq_cli_rates_t *self, double now, const char *text);

//  Tenant's acked messages a second from the oldest reading kept to the
//  newest (a tenant without a sample has sent none). -1 when that is not
//  known: fewer than two readings, or the counter went down (fairqd
//  restarted, or another fairqd answered).
double fq_cli_rates_get(const fq_cli_rates_t *self, const char *tenant);

//  Seconds between the oldest reading kept and the newest; 0 with fewer
//  than two.
double fq_cli_rates_span(const fq_cli_rates_t *self);

#endif
