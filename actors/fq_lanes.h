/*  fq_lanes.h — the scheduler's lanes: one per channel, each its own
    fairness core and its own free sender credit.

    Channels never share a turn or a credit: a tenant's e-mail backlog
    does not slow its own or anyone's webhooks, and credit that senders
    grant for http is spent on http messages only, so a stuck SMTP relay
    never holds up webhooks, nor the reverse (docs/fairness.md,
    "Channels"). Inside a lane tenants take turns by their weights, as
    everywhere; a tenant's max_inflight holds in each lane on its own.

    A lane is made when the first request (or credit) of its channel comes
    and dropped once idle: no request takes part in it (fq_lanes_hold),
    nothing ready or in flight, no credit. The set of channels is open, so
    a tenant that names many channels no sender serves costs a lane per
    channel while those requests are open, as any request costs, and no
    more. Lanes never move in memory while they live, so a request may
    point at its lane. */
#ifndef FQ_LANES_H
#define FQ_LANES_H

#include "fq_fairness.h"
#include "fq_store.h"
#include <stddef.h>
#include <stdint.h>

typedef struct {
    char channel[FQ_STORE_CHANNEL_SIZE]; //  "email", "http", ...
    fq_fairness_t *fairness;
    int64_t credit;      //  Free sender credit for this channel
    uint64_t dispatched; //  Messages released in this lane
    size_t holds;        //  Requests taking part (fq_lanes_hold)
} fq_lane_t;

typedef struct fq_lanes fq_lanes_t;

//  prefetch is each lane's fairness core's (fq_fairness_new).
fq_lanes_t *fq_lanes_new(int prefetch);
void fq_lanes_destroy(fq_lanes_t **self_p);

//  The lane of channel ("" is "email", a MESSAGE of an older fairqd),
//  made if new; NULL when memory ran out or channel is too long.
fq_lane_t *fq_lanes_get(fq_lanes_t *self, const char *channel);

//  The lane of channel if it exists, else NULL.
fq_lane_t *fq_lanes_find(fq_lanes_t *self, const char *channel);

//  A request takes part in lane, or no longer does.
void fq_lanes_hold(fq_lane_t *lane);
void fq_lanes_release(fq_lane_t *lane);

//  Drops the idle lanes (see above). Lanes may move in the order of
//  fq_lanes_at afterwards.
void fq_lanes_prune(fq_lanes_t *self);

size_t fq_lanes_count(const fq_lanes_t *self);
fq_lane_t *fq_lanes_at(fq_lanes_t *self, size_t index);

#endif
