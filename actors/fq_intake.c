/*  fq_intake.c — /user/intake: requests come in.

    Applications submit with fairq.submit in their own transactions; every
    submit and every change of a request NOTIFYs fairq_requests at commit.
    The intake LISTENs on a connection of its own and relays each burst of
    notifications to the scheduler as one REQUESTS_CHANGED, which then
    looks at the open requests at once instead of at its next slow poll.
    After a lost connection it LISTENs again and tells the scheduler too,
    since notifications sent meanwhile are gone. (The HTTP API's submit
    goes through this actor as well, once it exists.) */
#include "fq_db.h"
#include "fq_log.h"
#include "fq_pipeline.h"
#include <stdlib.h>

//  How often the connection is read for notifications: the latency a
//  submit adds before the scheduler hears of it.
#define S_LISTEN_POLL_MS 20

typedef struct {
    fq_pipeline_config_t *config;
    fq_db_t *db;
    bool connected; //  Was connected at the last look
    uint64_t notifications;
} s_self_t;

static int s_listen(fq_store_t *store, void *arg)
{
    (void)arg;
    return fq_store_listen(store, FQ_STORE_REQUESTS_CHANNEL);
}

static void s_tell_changed(fq_ctx_t *ctx)
{
    fq_requests_changed_t changed = {.request = 0};
    fq_tell(ctx, FQ_PATH_SCHEDULER, &fq_requests_changed_desc, &changed);
}

static int s_start(fq_ctx_t *ctx, void *args, void **state_p)
{
    s_self_t *self = calloc(1, sizeof *self);
    if (!self)
        return FQ_ENOMEM;
    self->config = args;
    self->db = fq_db_new(self->config->database, "intake");
    fq_tick_t tick = {.what = FQ_TICK_POLL};
    if (!self->db || fq_timer_every(ctx, S_LISTEN_POLL_MS, &fq_tick_desc, &tick) < 0) {
        fq_db_destroy(&self->db);
        free(self);
        return FQ_ENOMEM;
    }
    fq_db_on_connect(self->db, s_listen, self);
    self->connected = fq_db_store(self->db) != NULL;
    *state_p = self;
    return 0;
}

static int s_receive(fq_ctx_t *ctx, void *state, const fq_msg_t *msg)
{
    s_self_t *self = state;
    if (msg->type != FQ_MSG_TICK)
        return 0;
    fq_store_t *store = fq_db_store(self->db);
    if (!store) {
        self->connected = false;
        return 0;
    }
    if (!self->connected) {
        self->connected = true;
        s_tell_changed(ctx); //  Notifications may have been missed
    }
    int count = fq_store_notifications(store);
    if (count < 0) {
        fq_db_failed(self->db, count);
        self->connected = false;
    } else if (count > 0) {
        self->notifications += (uint64_t)count;
        s_tell_changed(ctx);
    }
    return 0;
}

static void s_stop(fq_ctx_t *ctx, void *state)
{
    (void)ctx;
    s_self_t *self = state;
    fq_db_destroy(&self->db);
    free(self);
}

const fq_behaviour_t fq_intake_behaviour = {"intake", s_start, s_receive, s_stop};
