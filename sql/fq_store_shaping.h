/*  fq_store_shaping.h — what the pipeline reads of the destinations
    (0016): the domains each one names, for the splitter that stamps
    every message with its destination; the budgets, for the scheduler
    that shapes each destination's traffic; and which destinations a
    request has messages in, for a scheduler that takes the request in.
    The operator's reads and writes of destinations are
    fq_store_destinations.h's. Also a tenant's daily quota as the
    scheduler reserves it in blocks (0017). */
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

//  Reserves up to want (>= 0) more of tenant_id's daily quota (>= 1) for
//  day (days since 1970-01-01, UTC), recording used as its count so far.
//  Returns 0 with what was reserved for that day before (by this leader
//  or any earlier one) in *before and now in *after: after - before may
//  be handed out. Never reserves past the quota. Or a negative code.
int fq_store_reserve_sends(fq_store_t *self, int64_t tenant_id, int64_t day, int64_t want,
                           int64_t quota, int64_t used, int64_t *before, int64_t *after);

//  Records used as tenant_id's count for day and gives back unused (>= 0)
//  of what this leader reserved (a clean stop gives back what it will not
//  hand out; 0 only records the count). Returns 0 or a negative code.
int fq_store_record_sends(fq_store_t *self, int64_t tenant_id, int64_t day, int64_t unused,
                          int64_t used);

#endif
