/*  fq_reaper.c — /user/reaper: periodic upkeep (docs/delivery.md).

    Every poll_ms it marks done the requests whose every recipient is final
    and keeps the planner's statistics of the messages current
    (fq_store_refresh_stats); once every S_ADVANCE_EVERY_MS it moves each
    open request's scan_from past its sent history (where the scheduler
    starts paging after a restart), a few requests at a time, spread over
    that period; every S_PRUNE_EVERY_MS it deletes requests finished longer
    than retention_s ago, in bounded batches. Messages of dead senders need
    no reaping: they are pending until acked, and the dispatcher hands them
    back at once. */
#include "fq_db.h"
#include "fq_log.h"
#include "fq_pipeline.h"
#include <czmq.h>
#include <stdlib.h>

//  Requests finished per statement, and messages each cursor reads at most
//  per pass: each statement stays short.
#define S_BATCH       FQ_STORE_PAGE_MAX
#define S_SCAN_WINDOW 10000

//  Requests whose cursors one step of the advance moves.
#define S_ADVANCE_STEP 20

//  scan_from only matters after a restart (and a resume), whose first page
//  of a request then walks past what was sent since: a minute of sending
//  at most, at the cost of one index scan. A pass reads every message
//  finished since the last one (one heap fetch each: status is not
//  indexed, to keep acks HOT), and up to S_SCAN_WINDOW of each request, so
//  it runs rarely; at every few seconds it took a third of the database's
//  time during a campaign.
//
//  A pass goes S_ADVANCE_STEP requests at a time, its steps spread evenly
//  over the period (by the number of requests the last pass found), each
//  after the last request the step before looked at, so that it reaches
//  every open request (one statement took the first S_BATCH). All at once,
//  a pass over a hundred campaigns read up to a million messages in one
//  statement: in the pipeline benchmark a run it fell in lost a tenth of
//  its throughput (0.19 cores). Spread, each statement reads a fifth of
//  that at most; the work of a pass is the same.
#define S_ADVANCE_EVERY_MS 60000

//  Pruning is cheap to postpone; a minute keeps its statements rare.
#define S_PRUNE_EVERY_MS 60000
#define S_PRUNE_BATCH    10000

typedef struct {
    fq_pipeline_config_t *config;
    fq_db_t *db;
    int64_t next_prune;   //  zclock_mono()
    int64_t next_advance; //  zclock_mono(): the advance's next step
    int64_t advance_from; //  The request after which that step starts; 0: a new pass
    int pass_requests;    //  Requests the pass so far looked at
    int last_pass;        //  Requests the last whole pass looked at
    uint64_t finished, pruned;
} s_self_t;

//  One step of the advance of scan cursors, and when the next one is due:
//  S_ADVANCE_EVERY_MS divided among the steps a pass takes, of last_pass
//  requests or, while this pass has found more, of those and a step more.
//  Returns 0 or a negative code.
static int s_advance_step(s_self_t *self, fq_store_t *store)
{
    fq_advance_t step;
    int rc = fq_store_advance_scan(store, self->advance_from, S_ADVANCE_STEP, S_SCAN_WINDOW, &step);
    if (rc < 0)
        return rc;
    self->pass_requests += step.looked;
    self->advance_from = step.last_id;
    if (step.looked < S_ADVANCE_STEP) {
        //  The pass is over: the next one starts from the first request
        self->last_pass = self->pass_requests;
        self->pass_requests = 0;
        self->advance_from = 0;
    }
    int found = self->pass_requests + S_ADVANCE_STEP;
    int steps = (self->last_pass > found ? self->last_pass : found) / S_ADVANCE_STEP + 1;
    self->next_advance += S_ADVANCE_EVERY_MS / steps;
    return 0;
}

static void s_upkeep(s_self_t *self)
{
    fq_store_t *store = fq_db_store(self->db);
    if (!store)
        return;
    int rc, finished = 0;
    do {
        rc = fq_store_finish_requests(store, S_BATCH);
        if (rc > 0)
            finished += rc;
    } while (rc == S_BATCH);
    if (finished > 0) {
        self->finished += (uint64_t)finished;
        fq_log(FQ_LOG_INFO, "reaper: %d request%s done", finished, finished == 1 ? "" : "s");
    }
    if (rc >= 0)
        rc = fq_store_refresh_stats(store);
    //  The steps due since the last tick (several when a pass has many
    //  requests), and the next step a period from now at the latest
    int64_t now = zclock_mono();
    if (self->next_advance < now - S_ADVANCE_EVERY_MS)
        self->next_advance = now;
    while (rc >= 0 && now >= self->next_advance)
        rc = s_advance_step(self, store);
    if (rc >= 0 && zclock_mono() >= self->next_prune) {
        self->next_prune = zclock_mono() + S_PRUNE_EVERY_MS;
        fq_prune_result_t pruned = {.more = true};
        while (rc >= 0 && pruned.more) {
            rc = fq_store_prune(store, self->config->retention_s, S_PRUNE_BATCH, &pruned);
            if (rc == 0 && pruned.requests > 0) {
                self->pruned += (uint64_t)pruned.requests;
                fq_log(FQ_LOG_INFO, "reaper: pruned %d finished requests", pruned.requests);
            }
        }
        //  Events keep the same window of history as the requests
        int events = S_PRUNE_BATCH;
        while (rc >= 0 && events == S_PRUNE_BATCH) {
            events = fq_store_prune_events(store, self->config->retention_s, S_PRUNE_BATCH);
            rc = events < 0 ? events : 0;
        }
    }
    if (rc < 0)
        fq_db_failed(self->db, rc);
}

static int s_start(fq_ctx_t *ctx, void *args, void **state_p)
{
    s_self_t *self = calloc(1, sizeof *self);
    if (!self)
        return FQ_ENOMEM;
    self->config = args;
    //  Until a pass has counted them: as many requests as a statement of
    //  the others takes, so that the first pass after a start goes quickly
    self->last_pass = S_BATCH;
    self->db = fq_pipeline_db(self->config, "reaper");
    fq_tick_t tick = {.what = FQ_TICK_POLL};
    if (!self->db || fq_timer_every(ctx, self->config->poll_ms, &fq_tick_desc, &tick) < 0) {
        fq_db_destroy(&self->db);
        free(self);
        return FQ_ENOMEM;
    }
    *state_p = self;
    return 0;
}

static int s_receive(fq_ctx_t *ctx, void *state, const fq_msg_t *msg)
{
    (void)ctx;
    if (msg->type == FQ_MSG_TICK)
        s_upkeep(state);
    return 0;
}

static void s_stop(fq_ctx_t *ctx, void *state)
{
    (void)ctx;
    s_self_t *self = state;
    fq_db_destroy(&self->db);
    free(self);
}

const fq_behaviour_t fq_reaper_behaviour = {
    .name = "reaper", .start = s_start, .receive = s_receive, .stop = s_stop};
