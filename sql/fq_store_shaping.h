/*  fq_store_shaping.h — what the pipeline reads of the destinations
    (0016): the domains each one names, for the splitter that stamps
    every message with its destination; the budgets, for the scheduler
    that shapes each destination's traffic; and which destinations a
    request has messages in, for a scheduler that takes the request in.
    The operator's reads and writes of destinations are
    fq_store_destinations.h's. */
#ifndef FQ_STORE_SHAPING_H
#define FQ_STORE_SHAPING_H

#include "fq_limits.h"
#include "fq_store.h"

//  Calls each for every named domain with its destination's name.
//  Returns how many, or a negative code.
int fq_store_destination_domains(fq_store_t *self,
                                 void (*each)(const char *domain, const char *destination,
                                              void *arg),
                                 void *arg);

//  A destination's budget; 0 is no limit.
typedef struct {
    char name[FQ_STORE_DESTINATION_SIZE];
    int64_t rate_count; //  Messages per rate_period_s
    int rate_period_s;  //  1, 60, 3600 or 86400 (0 without a rate)
    int64_t burst;      //  0: the rate's default (one second's worth)
    int64_t max_inflight;
} fq_destination_budget_t;

//  Most destinations fairqd shapes: the writes refuse one more
//  (fq_store_destinations.h).
#define FQ_STORE_DESTINATIONS_MAX FQ_DESTINATIONS_MAX

//  Every destination's budget ("default" among them), up to max, by name.
//  Returns how many were written to out, or a negative code.
int fq_store_destination_budgets(fq_store_t *self, fq_destination_budget_t *out, int max);

//  Calls each for every destination the requests ids (count of them) have
//  messages in. Returns how many pairs, or a negative code.
int fq_store_request_destinations(fq_store_t *self, const int64_t *ids, size_t count,
                                  void (*each)(int64_t request_id, const char *destination,
                                               void *arg),
                                  void *arg);

#endif
