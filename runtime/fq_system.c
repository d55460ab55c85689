/*  fq_system.c — system lifecycle, guardians, counters and clients. */
#include "fq_actor_internal.h"
#include "fq_czmq_log.h"
#include <unistd.h>

int fq_guardian_spawn(zactor_t *guardian, const char *name, const fq_behaviour_t *behaviour,
                      void *args, const fq_spawn_opts_t *opts);

//  Guardians only parent their children; they take no messages of their own.
static int s_guardian_receive(fq_ctx_t *ctx, void *state, const fq_msg_t *msg)
{
    (void)ctx;
    (void)state;
    (void)msg;
    return 0;
}

static const fq_behaviour_t s_guardian = {.name = "guardian", .receive = s_guardian_receive};

static atomic_uint s_system_seq;

fq_system_t *fq_system_new(const fq_system_config_t *cfg)
{
    if (!cfg || !fq_name_valid(cfg->name) || cfg->mailbox_hwm < 0 || cfg->send_timeout_ms < 0)
        return NULL;
    //  fairq handles its own signals; CZMQ's handler would make every
    //  poll loop stop on the first SIGINT instead. Set before CZMQ starts
    //  (the routing below starts it), or CZMQ would install its own.
    zsys_handler_set(NULL);
    //  CZMQ's own lines (zauth's, zsys_shutdown's at exit) in fairq's format
    fq_czmq_log_route();
    fq_system_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    self->config = *cfg;
    snprintf(self->name, sizeof self->name, "%s", cfg->name);
    self->config.name = self->name;
    if (!self->config.mailbox_hwm)
        self->config.mailbox_hwm = FQ_DEFAULT_MAILBOX_HWM;
    if (!self->config.send_timeout_ms)
        self->config.send_timeout_ms = FQ_DEFAULT_SEND_TIMEOUT_MS;
    snprintf(self->id, sizeof self->id, "%d-%u", (int)getpid(), atomic_fetch_add(&s_system_seq, 1));
    pthread_mutex_init(&self->lock, NULL);
    self->registry = fq_registry_new(self->id);
    fq_spawn_opts_t opts = fq_spawn_opts_default();
    if (!self->registry ||
        fq_cell_new(self, "", "user", &s_guardian, NULL, &opts, true, &self->user_guardian) ||
        fq_cell_start(self->user_guardian) ||
        fq_cell_new(self, "", "system", &s_guardian, NULL, &opts, true, &self->system_guardian) ||
        fq_cell_start(self->system_guardian)) {
        fq_system_destroy(&self);
        return NULL;
    }
    return self;
}

void fq_system_destroy(fq_system_t **self_p)
{
    fq_system_t *self = *self_p;
    if (!self)
        return;
    //  Application actors first: they may still talk to the gateway.
    fq_cell_destroy(&self->user_guardian, NULL, false, "system stopped");
    fq_cell_destroy(&self->system_guardian, NULL, false, "system stopped");
    fq_registry_destroy(&self->registry);
    pthread_mutex_destroy(&self->lock);
    free(self);
    *self_p = NULL;
}

const char *fq_system_name(fq_system_t *self)
{
    return self->name;
}

static int s_spawn_under(fq_system_t *self, fq_cell_t *guardian, const char *name,
                         const fq_behaviour_t *behaviour, void *args, const fq_spawn_opts_t *opts)
{
    pthread_mutex_lock(&self->lock);
    int rc = fq_guardian_spawn(guardian->actor, name, behaviour, args, opts);
    pthread_mutex_unlock(&self->lock);
    return rc;
}

int fq_system_spawn(fq_system_t *self, const char *name, const fq_behaviour_t *behaviour,
                    void *args, const fq_spawn_opts_t *opts)
{
    return s_spawn_under(self, self->user_guardian, name, behaviour, args, opts);
}

int fq_system_spawn_system(fq_system_t *self, const char *name, const fq_behaviour_t *behaviour,
                           void *args, const fq_spawn_opts_t *opts)
{
    return s_spawn_under(self, self->system_guardian, name, behaviour, args, opts);
}

bool fq_system_failed(fq_system_t *self, char *reason, size_t reason_size)
{
    bool failed = atomic_load(&self->failed);
    if (failed && reason && reason_size)
        snprintf(reason, reason_size, "%s", self->failure);
    return failed;
}

uint64_t fq_system_dead_letters(fq_system_t *self)
{
    return atomic_load(&self->dead_letters);
}

static void s_stats_of(const fq_entry_t *entry, fq_actor_stats_t *stats)
{
    memset(stats, 0, sizeof *stats);
    snprintf(stats->path, sizeof stats->path, "%s", entry->path);
    uint64_t enqueued = atomic_load(&entry->enqueued);
    stats->handled = atomic_load(&entry->handled);
    stats->mailbox_depth = enqueued > stats->handled ? enqueued - stats->handled : 0;
    stats->restarts = atomic_load(&entry->restarts);
    stats->failures = atomic_load(&entry->failures);
    stats->malformed = atomic_load(&entry->malformed);
    stats->refused = atomic_load(&entry->refused);
}

int fq_system_lookup(fq_system_t *self, const char *path)
{
    fq_entry_t *entry = fq_registry_lookup(self->registry, path);
    int rc = entry ? 0 : FQ_ENOACTOR;
    fq_entry_release(&entry);
    return rc;
}

int fq_system_stats(fq_system_t *self, const char *path, fq_actor_stats_t *stats)
{
    fq_entry_t *entry = fq_registry_lookup(self->registry, path);
    if (!entry)
        return FQ_ENOACTOR;
    s_stats_of(entry, stats);
    fq_entry_release(&entry);
    return 0;
}

typedef struct {
    void (*fn)(const fq_actor_stats_t *stats, void *arg);
    void *arg;
    int count;
} s_foreach_t;

static void s_foreach_entry(const fq_entry_t *entry, void *arg)
{
    s_foreach_t *walk = arg;
    fq_actor_stats_t stats;
    s_stats_of(entry, &stats);
    walk->fn(&stats, walk->arg);
    walk->count++;
}

int fq_system_foreach_stats(fq_system_t *self, void (*fn)(const fq_actor_stats_t *stats, void *arg),
                            void *arg)
{
    s_foreach_t walk = {fn, arg, 0};
    fq_registry_foreach(self->registry, s_foreach_entry, &walk);
    return walk.count;
}

//  ---------------------------------------------------------------------
//  Clients

struct fq_client {
    fq_system_t *sys;
    fq_entry_t *entry;
    zsock_t *inbox;
    fq_outbox_t *outbox;
    msgpack_zone zone;
    zmq_msg_t frame;
    uint64_t next_corr;
    zlistx_t *pending; //  zframe_t*: tells that came during an ask, for recv
    zframe_t *current; //  The pending frame recv handed out last
};

fq_client_t *fq_client_new(fq_system_t *sys)
{
    fq_client_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    self->sys = sys;
    zmq_msg_init(&self->frame);
    msgpack_zone_init(&self->zone, 4096);
    char path[FQ_PATH_MAX + 1];
    snprintf(path, sizeof path, "/temp/client-%llu",
             (unsigned long long)atomic_fetch_add(&sys->client_seq, 1));
    self->outbox = fq_outbox_new(sys);
    self->inbox = zsock_new(ZMQ_PULL);
    self->pending = zlistx_new();
    if (self->pending)
        zlistx_set_destructor(self->pending, (zlistx_destructor_fn *)zframe_destroy);
    if (!self->outbox || !self->inbox || !self->pending ||
        fq_registry_add(sys->registry, path, &self->entry) ||
        zsock_bind(self->inbox, "%s", self->entry->endpoint)) {
        fq_client_destroy(&self);
        return NULL;
    }
    zsock_set_rcvhwm(self->inbox, sys->config.mailbox_hwm);
    return self;
}

void fq_client_destroy(fq_client_t **self_p)
{
    fq_client_t *self = *self_p;
    if (!self)
        return;
    if (self->entry) {
        zlistx_t *watchers = fq_registry_remove(self->sys->registry, self->entry);
        zlistx_destroy(&watchers);
        fq_entry_release(&self->entry);
    }
    zsock_destroy(&self->inbox);
    zlistx_destroy(&self->pending);
    zframe_destroy(&self->current);
    fq_outbox_destroy(&self->outbox);
    msgpack_zone_destroy(&self->zone);
    zmq_msg_close(&self->frame);
    free(self);
    *self_p = NULL;
}

const char *fq_client_address(fq_client_t *self)
{
    return self->entry->path;
}

int fq_client_tell(fq_client_t *self, const char *to, const fq_msgdesc_t *desc, const void *msg)
{
    return fq_outbox_send(self->outbox, to, desc->id, 0, 0, self->entry->path, desc, msg, NULL);
}

//  Waits for the next well-formed envelope in the inbox until deadline.
static int s_client_next(fq_client_t *self, int64_t deadline, fq_envelope_t *env)
{
    while (true) {
        int64_t wait = deadline - zclock_mono();
        if (wait < 0)
            return FQ_ETIMEDOUT;
        zmq_pollitem_t item = {zsock_resolve(self->inbox), 0, ZMQ_POLLIN, 0};
        int rc = zmq_poll(&item, 1, (long)wait);
        if (rc < 0 && zmq_errno() != EINTR)
            return FQ_EIO;
        if (rc <= 0)
            continue;
        if (zmq_msg_recv(&self->frame, zsock_resolve(self->inbox), ZMQ_DONTWAIT) < 0)
            continue;
        atomic_fetch_add(&self->entry->handled, 1);
        msgpack_zone_clear(&self->zone);
        if (fq_envelope_decode(zmq_msg_data(&self->frame), zmq_msg_size(&self->frame), &self->zone,
                               env) == 0)
            return 0;
        atomic_fetch_add(&self->entry->malformed, 1);
    }
}

static void s_msg_from(fq_client_t *self, const fq_envelope_t *env, fq_msg_t *msg)
{
    *msg = (fq_msg_t){.type = env->type,
                      .flags = env->flags,
                      .corr = env->corr,
                      .sender = env->sender,
                      .to = env->to,
                      .body = env->body,
                      .zone = &self->zone,
                      .frame = zmq_msg_data(&self->frame),
                      .frame_size = zmq_msg_size(&self->frame)};
}

int fq_client_ask(fq_client_t *self, const char *to, const fq_msgdesc_t *desc, const void *msg,
                  int timeout_ms, fq_msg_t *reply)
{
    uint64_t corr = ++self->next_corr;
    int rc = fq_outbox_send(self->outbox, to, desc->id, FQ_ENV_ASK, corr, self->entry->path, desc,
                            msg, NULL);
    if (rc)
        return rc;
    int64_t deadline = zclock_mono() + timeout_ms;
    fq_envelope_t env;
    //  A late reply to an earlier ask is skipped: a client serves one caller
    //  at a time. Tells and TERMINATED notices are kept for fq_client_recv.
    while ((rc = s_client_next(self, deadline, &env)) == 0) {
        if (!(env.flags & FQ_ENV_REPLY)) {
            zframe_t *copy = zframe_new(zmq_msg_data(&self->frame), zmq_msg_size(&self->frame));
            if (!copy || !zlistx_add_end(self->pending, copy)) {
                zframe_destroy(&copy);
                atomic_fetch_add(&self->sys->dead_letters, 1);
            }
            continue;
        }
        if (env.corr != corr)
            continue;
        s_msg_from(self, &env, reply);
        if (env.type != FQ_MSG_ERROR)
            return 0;
        fq_error_t error;
        if (fq_msg_decode(reply, &fq_error_desc, &error))
            return FQ_EDECODE;
        return error.code < 0 && error.code > INT32_MIN ? (int)error.code : FQ_EFAILED;
    }
    return rc;
}

int fq_client_recv(fq_client_t *self, int timeout_ms, fq_msg_t *msg)
{
    int64_t deadline = zclock_mono() + timeout_ms;
    fq_envelope_t env;
    int rc;
    //  First what came while the client waited in an ask (decoded before)
    zframe_destroy(&self->current);
    if ((self->current = zlistx_first(self->pending))) {
        zlistx_detach_cur(self->pending);
        msgpack_zone_clear(&self->zone);
        if (fq_envelope_decode(zframe_data(self->current), zframe_size(self->current), &self->zone,
                               &env) == 0) {
            s_msg_from(self, &env, msg);
            msg->frame = zframe_data(self->current);
            msg->frame_size = zframe_size(self->current);
            return 0;
        }
    }
    while ((rc = s_client_next(self, deadline, &env)) == 0) {
        if (env.flags & FQ_ENV_REPLY)
            continue; //  A reply whose ask already timed out
        s_msg_from(self, &env, msg);
        return 0;
    }
    return rc;
}

int fq_client_watch(fq_client_t *self, const char *address)
{
    return fq_outbox_watch(self->outbox, self->entry->path, address, true);
}

int fq_client_stop(fq_client_t *self, const char *address)
{
    if (!fq_path_valid(address))
        return FQ_EINVAL;
    fq_stop_t stop = {0};
    return fq_client_tell(self, address, &fq_stop_desc, &stop);
}
