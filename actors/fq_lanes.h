/*  fq_lanes.h — the scheduler's lanes: one per channel and destination,
    each its own fairness core; the channel's free sender credit and the
    destination's budget shared by their lanes.

    Channels never share a turn or a credit: a tenant's e-mail backlog
    does not slow its own or anyone's webhooks, and credit that senders
    grant for http is spent on http messages only, so a stuck SMTP relay
    never holds up webhooks, nor the reverse (docs/fairness.md,
    "Channels"). Inside a channel each destination (a recipient domain or
    http host, or a named group of them, 0016) has a lane of its own, so
    tenants share a destination's budget by their weights, and a
    destination without budget holds back its own messages only: they
    take no sender credit and stand in no other lane's way
    (docs/fairness.md, "Destinations"). A tenant's max_inflight holds in
    each lane on its own.

    A lane is made when the first request (or credit) of its channel and
    destination comes and dropped once idle: no request takes part in it
    (fq_lanes_hold), nothing ready or in flight. The set of channels is
    open, so a tenant that names many channels no sender serves costs a
    lane per channel while those requests are open, as any request costs,
    and no more. Lanes never move in memory while they live, so a request
    may point at its lane. Channels and destinations (a handful, and at
    most FQ_STORE_DESTINATIONS_MAX configured) live as long as the lanes
    object. */
#ifndef FQ_LANES_H
#define FQ_LANES_H

#include "fq_fairness.h"
#include "fq_shaper.h"
#include "fq_store_shaping.h"
#include <stddef.h>
#include <stdint.h>

//  A channel: its free sender credit, which its lanes spend in turns.
typedef struct {
    char name[FQ_STORE_CHANNEL_SIZE]; //  "email", "http", ...
    int64_t credit;
    size_t turn; //  Where its next round of lanes starts
} fq_lane_channel_t;

//  A destination: its budget and what is in flight to it.
typedef struct {
    char name[FQ_STORE_DESTINATION_SIZE];
    fq_shaper_t shaper;
    bool configured; //  In fairq.destinations at the last read
    int64_t inflight;
    uint64_t sent;      //  Released to the senders
    uint64_t deferred;  //  Given back by a throttling reply or a failed connection
    uint64_t throttled; //  Throttling replies among them
} fq_lane_destination_t;

typedef struct {
    char destination[FQ_STORE_DESTINATION_SIZE]; //  As its messages are stamped
    fq_lane_channel_t *channel;
    //  Its destination's budget: the default's while the destination is
    //  not configured (one deleted since its messages were split)
    fq_lane_destination_t *budget;
    fq_fairness_t *fairness;
    uint64_t dispatched; //  Messages released in this lane
    size_t holds;        //  Requests taking part (fq_lanes_hold)
    //  The mean cost of its messages lately, under a fairness_cost other
    //  than messages: a message costs its tenant its cost over this mean
    //  (an average message costs 1, as a pick charges); 0 until the first
    double cost_mean;
} fq_lane_t;

typedef struct fq_lanes fq_lanes_t;

//  prefetch is each lane's fairness core's (fq_fairness_new).
fq_lanes_t *fq_lanes_new(int prefetch);
void fq_lanes_destroy(fq_lanes_t **self_p);

//  The lane of channel ("" is "email", a MESSAGE of an older fairqd) and
//  destination (NULL or "": "default"), made if new; NULL when memory ran
//  out or a name is too long.
fq_lane_t *fq_lanes_get(fq_lanes_t *self, const char *channel, const char *destination);

//  The channel named so, made if new (NULL: out of memory, too long).
fq_lane_channel_t *fq_lanes_channel(fq_lanes_t *self, const char *channel);

//  Sets every destination's budget from budgets (count of them, as read
//  from the database) at now_us; a destination no longer among them is
//  no longer configured, and its lanes take the default's budget.
void fq_lanes_configure(fq_lanes_t *self, const fq_destination_budget_t *budgets, size_t count,
                        int64_t now_us);

//  A request takes part in lane, or no longer does.
void fq_lanes_hold(fq_lane_t *lane);
void fq_lanes_release(fq_lane_t *lane);

//  Drops the idle lanes (see above). Lanes may move in the order of
//  fq_lanes_at afterwards.
void fq_lanes_prune(fq_lanes_t *self);

size_t fq_lanes_count(const fq_lanes_t *self);
fq_lane_t *fq_lanes_at(fq_lanes_t *self, size_t index);

size_t fq_lanes_channel_count(const fq_lanes_t *self);
fq_lane_channel_t *fq_lanes_channel_at(fq_lanes_t *self, size_t index);

size_t fq_lanes_destination_count(const fq_lanes_t *self);
fq_lane_destination_t *fq_lanes_destination_at(fq_lanes_t *self, size_t index);

#endif
