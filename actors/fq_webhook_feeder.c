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
#include "fq_leader_pass.h"
#include "fq_log.h"
#include "fq_store_webhooks.h"

static int s_feed(fq_store_t *store, const fq_pipeline_config_t *config)
{
    fq_webhook_feed_t feed = config->webhooks;
    feed.base_ms = config->retry.base_ms;
    feed.cap_ms = config->retry.cap_ms;
    int rc = fq_store_webhooks_feed(store, &feed);
    if (rc > 0)
        fq_log(FQ_LOG_DEBUG, "webhooks: %d batch%s submitted", rc, rc == 1 ? "" : "es");
    return rc;
}

static int s_start(fq_ctx_t *ctx, void *args, void **state_p)
{
    return fq_leader_pass_start(ctx, args, "webhooks", state_p);
}

static int s_receive(fq_ctx_t *ctx, void *state, const fq_msg_t *msg)
{
    (void)ctx;
    if (msg->type == FQ_MSG_TICK)
        fq_leader_pass_run(state, s_feed);
    return 0;
}

static void s_stop(fq_ctx_t *ctx, void *state)
{
    (void)ctx;
    fq_leader_pass_stop(state);
}

const fq_behaviour_t fq_webhook_feeder_behaviour = {
    .name = "webhooks", .start = s_start, .receive = s_receive, .stop = s_stop};
