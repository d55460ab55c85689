/*  fq_webhook_feeder.c — /user/webhooks: feeds tenants' webhook endpoints
    from the events (docs/feedback.md, "Webhooks").

    Every poll_ms it runs one pass of the store's feed
    (fq_store_webhooks_feed, sql/migrations/0020_webhooks.sql): each
    endpoint whose batch ended is settled (its cursor moves past a batch
    delivered; a batch that died counts a failure and backs off), and each
    endpoint with nothing in flight and events waiting gets its next batch
    as an http request of its tenant, which the pipeline then delivers like
    any other. Everything is in the database, so the actor holds nothing
    and restarts alone; two fairqds never feed one endpoint twice (the pass
    skips endpoints another one holds), and only the leader feeds. */
#include "fq_db.h"
#include "fq_log.h"
#include "fq_pipeline.h"
#include "fq_store_webhooks.h"
#include <czmq.h>
#include <stdlib.h>

typedef struct {
    fq_pipeline_config_t *config;
    fq_db_t *db;
} s_self_t;

static void s_feed(s_self_t *self)
{
    if (!fq_pipeline_may_dispatch(self->config))
        return;
    fq_store_t *store = fq_db_store(self->db);
    if (!store)
        return;
    fq_webhook_feed_t feed = self->config->webhooks;
    feed.base_ms = self->config->retry.base_ms;
    feed.cap_ms = self->config->retry.cap_ms;
    int rc = fq_store_webhooks_feed(store, &feed);
    if (rc < 0) {
        fq_db_failed(self->db, rc);
        return;
    }
    if (rc > 0)
        fq_log(FQ_LOG_DEBUG, "webhooks: %d batch%s submitted", rc, rc == 1 ? "" : "es");
}

static int s_start(fq_ctx_t *ctx, void *args, void **state_p)
{
    s_self_t *self = calloc(1, sizeof *self);
    if (!self)
        return FQ_ENOMEM;
    self->config = args;
    self->db = fq_pipeline_db(self->config, "webhooks");
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
        s_feed(state);
    return 0;
}

static void s_stop(fq_ctx_t *ctx, void *state)
{
    (void)ctx;
    s_self_t *self = state;
    fq_db_destroy(&self->db);
    free(self);
}

const fq_behaviour_t fq_webhook_feeder_behaviour = {
    .name = "webhooks", .start = s_start, .receive = s_receive, .stop = s_stop};
