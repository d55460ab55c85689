/*  fq_reaper.c — /user/reaper: periodic upkeep (docs/delivery.md).

    Every poll_ms it marks done the requests whose every recipient is final
    and keeps the planner's statistics of the messages current
    (fq_store_refresh_stats); every S_ADVANCE_EVERY_MS it moves each open
    request's scan_from past its sent history (where the scheduler starts
    paging after a restart); every S_PRUNE_EVERY_MS it deletes requests
    finished longer than retention_s ago, in bounded batches. Messages of
    dead senders need no reaping: they are pending until acked, and the
    dispatcher hands them back at once. */
#include "fq_db.h"
#include "fq_log.h"
#include "fq_pipeline.h"
#include <czmq.h>
#include <stdlib.h>

//  Requests finished and cursors moved per statement, and messages each
//  cursor reads at most per pass: each statement stays short.
#define S_BATCH       FQ_STORE_PAGE_MAX
#define S_SCAN_WINDOW 10000

//  scan_from only matters after a restart (and a resume), whose first page
//  of a request then walks past what was sent since: a minute of sending
//  at most, at the cost of one index scan. A pass reads every message
//  finished since the last one (one heap fetch each: status is not
//  indexed, to keep acks HOT), and up to S_SCAN_WINDOW of each request, so
//  it runs rarely; at every few seconds it took a third of the database's
//  time during a campaign.
#define S_ADVANCE_EVERY_MS 60000

//  Pruning is cheap to postpone; a minute keeps its statements rare.
#define S_PRUNE_EVERY_MS 60000
#define S_PRUNE_BATCH    10000

typedef struct {
    fq_pipeline_config_t *config;
    fq_db_t *db;
    int64_t next_prune;   //  zclock_mono()
    int64_t next_advance; //  zclock_mono()
    uint64_t finished, pruned;
} s_self_t;

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
    if (rc >= 0 && zclock_mono() >= self->next_advance) {
        self->next_advance = zclock_mono() + S_ADVANCE_EVERY_MS;
        rc = fq_store_advance_scan(store, S_BATCH, S_SCAN_WINDOW);
    }
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
