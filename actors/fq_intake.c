/*  fq_intake.c — /user/intake: requests come in.

    Applications submit with fairq.submit in their own transactions; every
    submit and every change of a request NOTIFYs fairq_requests at commit.
    The intake LISTENs on a connection of its own, waits on its socket in
    the actor's poll loop, and relays each notification's request (its
    payload) to the scheduler as a REQUESTS_CHANGED naming it, so a new
    request is looked at within a millisecond or two instead of at the next
    slow poll: the first messages of a small request from a new tenant must
    not wait. A burst of more than S_NAMED_MAX becomes one REQUESTS_CHANGED
    naming none (a full poll).

    After a lost connection it connects again (fq_db.h), LISTENs again and
    tells the scheduler too, since notifications sent meanwhile are gone.
    Its connection is database_listen's, the one of fairqd's connections
    that must be a session of its own: every other one works through a
    pooler in transaction mode.
    The HTTP API submits the same way, through fairq.submit_json in its own
    transaction: its requests reach the scheduler by this actor's NOTIFY
    like any application's, so a submit needs no actor of the fairqd that
    took it, and the database's commit is the one moment a request exists. */
#include "fq_db.h"
#include "fq_log.h"
#include "fq_pipeline.h"
#include <stdlib.h>

//  How often the intake checks its connection while nothing arrives: a
//  connection lost without the socket saying so is noticed this late, and
//  a reconnect is tried at this pace at the fastest.
#define S_CHECK_MS 500

//  Most requests of one burst of notifications passed on by name.
#define S_NAMED_MAX 64

typedef struct {
    fq_pipeline_config_t *config;
    fq_ctx_t *ctx; //  The intake's own context (fq_db calls back in its thread)
    fq_db_t *db;
    int fd; //  The socket waited on, or -1
    uint64_t notifications;
} s_self_t;

//  request: the one that changed, or 0 for "look at them all".
static void s_tell_changed(fq_ctx_t *ctx, int64_t request)
{
    fq_requests_changed_t changed = {.request = (uint64_t)request};
    fq_tell(ctx, FQ_PATH_SCHEDULER, &fq_requests_changed_desc, &changed);
}

static void s_unwatch(s_self_t *self)
{
    if (self->fd >= 0)
        fq_ctx_remove_fd_reader(self->ctx, self->fd);
    self->fd = -1;
}

//  Reads the notifications that came; tells the scheduler if any did.
static void s_read(s_self_t *self, fq_store_t *store)
{
    int64_t named[S_NAMED_MAX];
    int nnamed = 0;
    int count = fq_store_notifications(store, named, S_NAMED_MAX, &nnamed);
    if (count < 0) {
        fq_db_failed(self->db, count);
        s_unwatch(self);
    } else if (count > 0) {
        self->notifications += (uint64_t)count;
        //  Named one by one only if every one was named
        if (nnamed < count)
            s_tell_changed(self->ctx, 0);
        else
            for (int i = 0; i < nnamed; i++)
                s_tell_changed(self->ctx, named[i]);
    }
}

static int s_on_readable(fq_ctx_t *ctx, void *state, int fd)
{
    (void)ctx;
    (void)fd;
    s_self_t *self = state;
    fq_store_t *store = fq_db_store(self->db);
    if (store)
        s_read(self, store);
    else
        s_unwatch(self); //  A dead socket stays readable: stop polling it
    return 0;
}

//  After each (re)connection: LISTEN, wait on the new socket, and have the
//  scheduler look, for what was missed meanwhile.
static int s_on_connect(fq_store_t *store, void *arg)
{
    s_self_t *self = arg;
    int rc = fq_store_listen(store, FQ_STORE_REQUESTS_CHANNEL);
    if (rc)
        return rc;
    s_unwatch(self);
    self->fd = fq_store_socket(store);
    if (self->fd >= 0 && fq_ctx_add_fd_reader(self->ctx, self->fd, s_on_readable) != 0)
        self->fd = -1;
    s_tell_changed(self->ctx, 0);
    return 0;
}

static int s_start(fq_ctx_t *ctx, void *args, void **state_p)
{
    s_self_t *self = calloc(1, sizeof *self);
    if (!self)
        return FQ_ENOMEM;
    self->config = args;
    self->ctx = ctx;
    self->fd = -1;
    //  database_listen, not database: behind a pooler in transaction mode
    //  (docs/operations.md, "Behind PgBouncer") a LISTEN would stay on the
    //  server connection of its one transaction, which then serves other
    //  clients, and its notifications would reach fairq only by chance. The
    //  intake writes nothing, so its connection carries no epoch.
    self->db = fq_db_new(self->config->database_listen, "intake");
    fq_tick_t tick = {.what = FQ_TICK_POLL};
    if (!self->db || fq_timer_every(ctx, S_CHECK_MS, &fq_tick_desc, &tick) < 0) {
        fq_db_destroy(&self->db);
        free(self);
        return FQ_ENOMEM;
    }
    fq_db_on_connect(self->db, s_on_connect, self);
    *state_p = self;
    return 0;
}

static int s_receive(fq_ctx_t *ctx, void *state, const fq_msg_t *msg)
{
    (void)ctx;
    s_self_t *self = state;
    if (msg->type != FQ_MSG_TICK)
        return 0;
    //  Reconnects when due (s_on_connect then waits on the new socket)
    fq_store_t *store = fq_db_store(self->db);
    if (store)
        s_read(self, store);
    return 0;
}

static void s_stop(fq_ctx_t *ctx, void *state)
{
    (void)ctx;
    s_self_t *self = state;
    s_unwatch(self);
    fq_db_destroy(&self->db);
    free(self);
}

const fq_behaviour_t fq_intake_behaviour = {
    .name = "intake", .start = s_start, .receive = s_receive, .stop = s_stop};
