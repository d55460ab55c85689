/*  fq_lanes.h — the scheduler's lanes: one per channel, each its own
    fairness core and its own free sender credit.

    Channels never share a turn or a credit: a tenant's e-mail backlog
    does not slow its own or anyone's webhooks, and credit that senders
    grant for http is spent on http messages only, so a stuck SMTP relay
    never holds up webhooks, nor the reverse (docs/fairness.md,
    "Channels"). Inside a lane tenants take turns by their weights, as
    everywhere; a tenant's max_inflight holds in each lane on its own.

    A lane is made when the first request of its channel is taken in and
    kept for the life of the scheduler: there are a handful of channels.
    Lanes never move in memory, so a request may point at its lane. */
#ifndef FQ_LANES_H
#define FQ_LANES_H

#include "fq_fairness.h"
#include "fq_store.h"
#include <stddef.h>
#include <stdint.h>

//  Most lanes: beyond it a request of yet another channel waits (logged).
#define FQ_LANES_MAX 32

typedef struct {
    char channel[FQ_STORE_CHANNEL_SIZE]; //  "email", "http", ...
    fq_fairness_t *fairness;
    int64_t credit;      //  Free sender credit for this channel
    uint64_t dispatched; //  Messages released in this lane
} fq_lane_t;

typedef struct fq_lanes fq_lanes_t;

//  prefetch is each lane's fairness core's (fq_fairness_new).
fq_lanes_t *fq_lanes_new(int prefetch);
void fq_lanes_destroy(fq_lanes_t **self_p);

//  The lane of channel ("" is "email", a MESSAGE of an older fairqd),
//  made if new; NULL when FQ_LANES_MAX are taken or memory ran out.
fq_lane_t *fq_lanes_get(fq_lanes_t *self, const char *channel);

//  The lane of channel if it exists, else NULL.
fq_lane_t *fq_lanes_find(fq_lanes_t *self, const char *channel);

size_t fq_lanes_count(const fq_lanes_t *self);
fq_lane_t *fq_lanes_at(fq_lanes_t *self, size_t index);

#endif
