/*  fq_schedule_firer.c — /user/schedules: fires tenants' schedules of
    recurring sends (docs/operations.md, "Recurring sends").

    Every poll_ms it runs one pass of the store's firing
    (fq_store_schedules_fire, sql/migrations/0025_schedules.sql): each
    schedule whose next firing came submits its stored request, with an
    idempotency key of the schedule and the firing's instant, and moves
    on to its next firing in the same transaction. Everything is in the
    database, so the actor holds nothing and restarts alone; two fairqds
    never fire one firing twice (the pass skips schedules another one
    holds, and the key answers a repeat with the first request), and only
    the leader fires. */
#include "fq_leader_pass.h"
#include "fq_log.h"
#include "fq_store_schedules.h"

//  Schedules fired in one pass at most: a pass is one transaction that
//  holds them locked (and the leader row shared, by its fence), kept
//  short; more due at once (a restart after downtime) wait a poll_ms.
#define S_FIRE_LIMIT 10

//  A firing found this much later than its time was missed (fairqd was
//  down, or no fairqd led): a leader's failover or a restart takes less,
//  so a schedule whose missed is "skip" skips only what a real outage
//  cost it.
#define S_MISSED_GRACE_S 300

//  Missed firings counted one by one at most: each is a step of the
//  schedule's next-firing walk, so a minutely schedule after a week down
//  (10,080 of them) would hold its pass for long; past this many the walk
//  jumps to the latest, and the count logged is a lower bound.
#define S_MISSED_COUNTED 100

//  What a pass did, a line each: firings at info, what went wrong or was
//  skipped at warning, so an operator sees a missed firing in the log.
static void s_report(const fq_schedule_firing_t *f)
{
    if (f->skipped > 0)
        fq_log(FQ_LOG_WARNING,
               "schedules: tenant %s schedule %s (%lld): %s%lld missed firing%s skipped%s",
               f->tenant, f->name, (long long)f->schedule_id,
               f->skipped > S_MISSED_COUNTED ? "at least " : "", (long long)f->skipped,
               f->skipped == 1 ? "" : "s", f->fire_at ? ", the latest fired" : "");
    if (f->error)
        fq_log(FQ_LOG_WARNING, "schedules: tenant %s schedule %s (%lld): could not submit: %s",
               f->tenant, f->name, (long long)f->schedule_id, f->error);
    else if (f->fire_at && f->replayed)
        fq_log(FQ_LOG_INFO,
               "schedules: tenant %s schedule %s (%lld): firing %lld submitted already "
               "(request %lld)",
               f->tenant, f->name, (long long)f->schedule_id, (long long)f->fire_at,
               (long long)f->request_id);
    else if (f->fire_at)
        fq_log(FQ_LOG_INFO, "schedules: tenant %s schedule %s (%lld): fired, request %lld",
               f->tenant, f->name, (long long)f->schedule_id, (long long)f->request_id);
}

static int s_fire(fq_store_t *store, const fq_pipeline_config_t *config)
{
    (void)config;
    fq_schedule_fire_t fire = {
        .limit = S_FIRE_LIMIT, .grace_s = S_MISSED_GRACE_S, .counted = S_MISSED_COUNTED};
    fq_schedule_firing_list_t done;
    int rc = fq_store_schedules_fire(store, &fire, &done);
    if (rc < 0)
        return rc;
    for (size_t i = 0; i < done.count; i++)
        s_report(&done.rows[i]);
    fq_schedule_firing_list_free(&done);
    return 0;
}

static int s_start(fq_ctx_t *ctx, void *args, void **state_p)
{
    return fq_leader_pass_start(ctx, args, "schedules", state_p);
}

static int s_receive(fq_ctx_t *ctx, void *state, const fq_msg_t *msg)
{
    (void)ctx;
    if (msg->type == FQ_MSG_TICK)
        fq_leader_pass_run(state, s_fire);
    return 0;
}

static void s_stop(fq_ctx_t *ctx, void *state)
{
    (void)ctx;
    fq_leader_pass_stop(state);
}

const fq_behaviour_t fq_schedule_firer_behaviour = {
    .name = "schedules", .start = s_start, .receive = s_receive, .stop = s_stop};
