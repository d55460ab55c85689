/*  fq_actor.c — the actor thread: its poll loop, dispatch, supervision of
    its children, timers and asks, and the fq_ctx_t API of fq_actor.h. */
#include "fq_actor_internal.h"
#include "fq_intkeys.h"
#include "fq_log.h"
#include <pthread.h>
#include <stdarg.h>
#include <string.h>

//  Messages taken from the mailbox per poll round. Past this the loop
//  polls again, so the parent's pipe, children's exits and timers are
//  served even while a producer keeps the mailbox full.
#define S_MAILBOX_BATCH 256

//  Scratch memory per message; grows for large messages, shrinks back.
#define S_ZONE_CHUNK 8192

enum { S_TIMER_USER, S_TIMER_ASK, S_TIMER_RESTART };

typedef struct {
    size_t size;
    char data[];
} s_frame_t;

typedef struct {
    uint64_t corr;
    fq_ask_fn *fn;
    void *arg;
    int timer;
    bool remote; //  Asked of an actor in another system, through the gateway
} s_ask_t;

typedef struct {
    zsock_t *sock; //  A socket to read, or NULL for a file descriptor
    fq_reader_fn *fn;
    int fd; //  With sock NULL
    fq_fd_reader_fn *fd_fn;
} s_reader_t;

struct fq_ctx {
    fq_system_t *sys;
    fq_cell_t *cell;
    zsock_t *pipe;
    fq_outbox_t *outbox;
    msgpack_zone zone;
    void *state;
    bool started;
    int exit_code;
    char exit_reason[256];
    zlistx_t *children; //  fq_cell_t*, owned
    zlistx_t *readers;  //  s_reader_t*, owned
    fq_timers_t *timers;
    zhashx_t *asks; //  corr -> s_ask_t*, owned
    zmq_pollitem_t *items;
    void **owners; //  Per poll item: the child cell or reader it belongs to
    size_t nitems;
    size_t first_reader; //  Items before this index are children
    bool rebuild;
    zmq_msg_t frame;
};

fq_spawn_opts_t fq_spawn_opts_default(void)
{
    fq_spawn_opts_t opts = {
        .supervision = {.strategy = FQ_SUPERVISE_RESTART,
                        .max_restarts = 5,
                        .within_ms = 10000,
                        .backoff_min_ms = 10,
                        .backoff_max_ms = 1000},
    };
    return opts;
}

//  Records why the actor ends; the first reason wins.
static void s_exit(fq_ctx_t *ctx, int code, const char *format, ...)
{
    if (ctx->exit_code != FQ_EXIT_RUNNING)
        return;
    ctx->exit_code = code;
    va_list args;
    va_start(args, format);
    vsnprintf(ctx->exit_reason, sizeof ctx->exit_reason, format, args);
    va_end(args);
}

static void s_free_item(void **item)
{
    free(*item);
    *item = NULL;
}

static void s_ctx_destroy(fq_ctx_t **ctx_p)
{
    fq_ctx_t *ctx = *ctx_p;
    if (!ctx)
        return;
    zlistx_destroy(&ctx->children);
    zlistx_destroy(&ctx->readers);
    zhashx_destroy(&ctx->asks);
    fq_timers_destroy(&ctx->timers);
    fq_outbox_destroy(&ctx->outbox);
    msgpack_zone_destroy(&ctx->zone);
    zmq_msg_close(&ctx->frame);
    free(ctx->items);
    free(ctx->owners);
    free(ctx);
    *ctx_p = NULL;
}

static fq_ctx_t *s_ctx_new(fq_cell_t *cell, zsock_t *pipe)
{
    fq_ctx_t *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return NULL;
    ctx->sys = cell->sys;
    ctx->cell = cell;
    ctx->pipe = pipe;
    ctx->exit_code = FQ_EXIT_RUNNING;
    ctx->rebuild = true;
    zmq_msg_init(&ctx->frame);
    bool zone_ok = msgpack_zone_init(&ctx->zone, S_ZONE_CHUNK);
    ctx->outbox = fq_outbox_new(cell->sys);
    ctx->children = zlistx_new();
    ctx->readers = zlistx_new();
    ctx->timers = fq_timers_new();
    ctx->asks = zhashx_new();
    if (!zone_ok || !ctx->outbox || !ctx->children || !ctx->readers || !ctx->timers || !ctx->asks) {
        if (!zone_ok)
            msgpack_zone_init(&ctx->zone, S_ZONE_CHUNK); //  So destroy is safe
        s_ctx_destroy(&ctx);
        return NULL;
    }
    zlistx_set_destructor(ctx->readers, s_free_item);
    fq_intkeys_use(ctx->asks);
    zhashx_set_destructor(ctx->asks, s_free_item);
    return ctx;
}

//  ---------------------------------------------------------------------
//  Supervision of children

static void s_remove_child(fq_ctx_t *ctx, fq_cell_t *cell, bool failed, const char *reason)
{
    void *handle = zlistx_find(ctx->children, cell);
    if (handle)
        zlistx_detach(ctx->children, handle);
    fq_cell_destroy(&cell, ctx->outbox, failed, reason);
    ctx->rebuild = true;
}

static void s_escalate(fq_ctx_t *ctx, fq_cell_t *cell, const char *reason)
{
    char text[FQ_PATH_MAX + 320];
    snprintf(text, sizeof text, "%s: %s", cell->path, reason);
    s_remove_child(ctx, cell, true, reason);
    if (ctx->cell->guardian) {
        //  Nothing above a guardian but the application: record and tell it
        fq_system_t *sys = ctx->sys;
        fq_log(FQ_LOG_ERROR, "failure escalated to %s: %s", ctx->cell->path, text);
        if (!atomic_exchange(&sys->failed, true))
            snprintf(sys->failure, sizeof sys->failure, "%s", text);
        if (sys->config.on_escalation)
            sys->config.on_escalation(sys, ctx->cell->path, text, sys->config.on_escalation_arg);
        return;
    }
    s_exit(ctx, FQ_EXIT_ESCALATED, "escalated from %s", text);
}

//  Restart intensity: forget restarts older than the window; if max are
//  left in it, this failure is one too many.
static bool s_intensity_exceeded(fq_cell_t *cell, int64_t now)
{
    const fq_supervision_t *sv = &cell->opts.supervision;
    int kept = 0;
    for (int i = 0; i < cell->restart_count; i++)
        if (now - cell->restart_times[i] < sv->within_ms)
            cell->restart_times[kept++] = cell->restart_times[i];
    cell->restart_count = kept;
    return kept >= sv->max_restarts;
}

static int s_backoff_ms(const fq_supervision_t *sv, int recent_restarts)
{
    int64_t delay = sv->backoff_min_ms > 0 ? sv->backoff_min_ms : 0;
    for (int i = 0; i < recent_restarts && delay < sv->backoff_max_ms; i++)
        delay *= 2;
    return (int)(delay > sv->backoff_max_ms ? sv->backoff_max_ms : delay);
}

static void s_supervise(fq_ctx_t *ctx, fq_cell_t *cell, int code, const char *reason)
{
    if (code == FQ_EXIT_STOPPED) {
        s_remove_child(ctx, cell, false, reason);
        return;
    }
    atomic_fetch_add(&cell->entry->failures, 1);
    fq_log(FQ_LOG_WARNING, "actor %s failed: %s", cell->path, reason);
    const fq_supervision_t *sv = &cell->opts.supervision;
    if (sv->strategy == FQ_SUPERVISE_STOP) {
        s_remove_child(ctx, cell, true, reason);
        return;
    }
    if (sv->strategy == FQ_SUPERVISE_ESCALATE) {
        s_escalate(ctx, cell, reason);
        return;
    }
    int64_t now = zclock_mono();
    if (s_intensity_exceeded(cell, now)) {
        char text[300];
        snprintf(text, sizeof text, "more than %d restarts within %d ms, last: %s",
                 sv->max_restarts, sv->within_ms, reason);
        s_escalate(ctx, cell, text);
        return;
    }
    int delay = s_backoff_ms(sv, cell->restart_count);
    cell->restart_times[cell->restart_count++] = now;
    cell->restart_timer = fq_timers_add(ctx->timers, now, delay, 0, S_TIMER_RESTART, cell, NULL);
    if (cell->restart_timer < 0)
        s_escalate(ctx, cell, "out of memory scheduling restart");
}

static void s_restart(fq_ctx_t *ctx, fq_cell_t *cell)
{
    cell->restart_timer = 0;
    atomic_fetch_add(&cell->entry->restarts, 1);
    if (fq_cell_start(cell) != 0)
        s_supervise(ctx, cell, FQ_EXIT_FAILED, "could not start actor thread");
    ctx->rebuild = true;
}

//  A child's pipe spoke: it can only be the child reporting its end.
static void s_child_exited(fq_ctx_t *ctx, fq_cell_t *cell)
{
    int code = FQ_EXIT_FAILED;
    char reason[256] = "actor thread ended unexpectedly";
    zmsg_t *report = zmsg_recv(cell->actor);
    char *command = report ? zmsg_popstr(report) : NULL;
    if (command && streq(command, "$EXIT")) {
        char *code_text = zmsg_popstr(report);
        char *text = zmsg_popstr(report);
        code = code_text ? atoi(code_text) : FQ_EXIT_FAILED;
        if (text)
            snprintf(reason, sizeof reason, "%s", text);
        zstr_free(&code_text);
        zstr_free(&text);
    }
    zstr_free(&command);
    zmsg_destroy(&report);
    zactor_destroy(&cell->actor);
    ctx->rebuild = true;
    s_supervise(ctx, cell, code, reason);
}

//  ---------------------------------------------------------------------
//  Messages

static void s_complete_ask(fq_ctx_t *ctx, const fq_msg_t *msg)
{
    s_ask_t *ask = fq_intkey_lookup(ctx->asks, msg->corr);
    if (!ask)
        return; //  A reply after its time-out: the asker has moved on
    //  A peer may answer only what was asked of a peer: correlation ids
    //  are easy to guess, and a forged reply must not complete (or cut
    //  short) an ask between local actors
    if ((msg->flags & FQ_ENV_REMOTE) && !ask->remote)
        return;
    fq_ask_fn *fn = ask->fn;
    void *arg = ask->arg;
    fq_timers_cancel(ctx->timers, ask->timer);
    fq_intkey_delete(ctx->asks, msg->corr);
    if (msg->type == FQ_MSG_ERROR) {
        fq_error_t error;
        int status = fq_msg_decode(msg, &fq_error_desc, &error);
        if (status == 0)
            status = error.code < 0 && error.code > INT32_MIN ? (int)error.code : FQ_EFAILED;
        fn(ctx, ctx->state, status, NULL, arg);
    } else
        fn(ctx, ctx->state, 0, msg, arg);
}

//  Decodes and handles one envelope. Bad bytes are counted and dropped:
//  a peer's garbage must never take the actor down.
static void s_dispatch(fq_ctx_t *ctx, const void *data, size_t size)
{
    fq_envelope_t env;
    //  A frame addressed to another system is in transit (only the gateway
    //  receives those): the gateway sends its bytes on as they are, so its
    //  body is not decoded here.
    if (fq_envelope_decode_head(data, size, &ctx->zone, &env) != 0 ||
        (!env.to[0] && fq_envelope_decode_body(&ctx->zone, &env) != 0)) {
        uint64_t seen = atomic_fetch_add(&ctx->cell->entry->malformed, 1);
        if (seen % FQ_MALFORMED_LOG_EVERY == 0)
            fq_log(FQ_LOG_WARNING, "%s dropped a malformed frame of %zu bytes (%llu so far)",
                   ctx->cell->path, size, (unsigned long long)seen + 1);
        msgpack_zone_clear(&ctx->zone);
        return;
    }
    fq_msg_t msg = {.type = env.type,
                    .flags = env.flags,
                    .corr = env.corr,
                    .sender = env.sender,
                    .to = env.to,
                    .body = env.body,
                    .zone = &ctx->zone,
                    .frame = data,
                    .frame_size = size};
    bool local = !(env.flags & FQ_ENV_REMOTE);
    //  In transit, its flags are for the far end, not for us
    bool in_transit = env.to[0] != 0;
    if (env.flags & FQ_ENV_REPLY && !in_transit)
        s_complete_ask(ctx, &msg);
    else if (env.type == FQ_MSG_STOP && local && !in_transit)
        s_exit(ctx, FQ_EXIT_STOPPED, "stopped by %s", env.sender[0] ? env.sender : "request");
    else if (env.type == FQ_MSG_STOP)
        fq_log(FQ_LOG_WARNING, "%s refused a stop request from %s", ctx->cell->path, env.sender);
    else {
        int rc = ctx->cell->behaviour->receive(ctx, ctx->state, &msg);
        if (rc < 0)
            s_exit(ctx, FQ_EXIT_FAILED, "%s failed handling message %u: %s",
                   ctx->cell->behaviour->name ? ctx->cell->behaviour->name : "actor", env.type,
                   fq_strerror(rc));
    }
    msgpack_zone_clear(&ctx->zone);
}

static void s_drain_mailbox(fq_ctx_t *ctx)
{
    void *mailbox = zsock_resolve(ctx->cell->mailbox);
    bool empty = false;
    for (int i = 0; i < S_MAILBOX_BATCH && ctx->exit_code == FQ_EXIT_RUNNING; i++) {
        if (zmq_msg_recv(&ctx->frame, mailbox, ZMQ_DONTWAIT) < 0) {
            empty = true;
            break;
        }
        atomic_fetch_add_explicit(&ctx->cell->entry->handled, 1, memory_order_relaxed);
        s_dispatch(ctx, zmq_msg_data(&ctx->frame), zmq_msg_size(&ctx->frame));
    }
    const fq_behaviour_t *behaviour = ctx->cell->behaviour;
    if (empty && behaviour->idle && ctx->started && ctx->exit_code == FQ_EXIT_RUNNING)
        behaviour->idle(ctx, ctx->state);
}

//  Commands on the pipe from the parent (or, for a guardian, the system).
typedef struct {
    const char *name;
    const fq_behaviour_t *behaviour;
    void *args;
    const fq_spawn_opts_t *opts;
} fq_spawn_request_t;

static void s_handle_pipe(fq_ctx_t *ctx)
{
    zmsg_t *command = zmsg_recv(ctx->pipe);
    char *name = command ? zmsg_popstr(command) : NULL;
    if (!name || streq(name, "$TERM"))
        s_exit(ctx, FQ_EXIT_STOPPED, "stopped with its parent");
    else if (streq(name, "SPAWN") && ctx->cell->guardian) {
        zframe_t *frame = zmsg_pop(command);
        fq_spawn_request_t *req = NULL;
        if (frame && zframe_size(frame) == sizeof req)
            memcpy(&req, zframe_data(frame), sizeof req);
        zframe_destroy(&frame);
        int rc = req ? fq_spawn(ctx, req->name, req->behaviour, req->args, req->opts) : FQ_EINVAL;
        zsock_send(ctx->pipe, "i", rc);
    }
    zstr_free(&name);
    zmsg_destroy(&command);
}

static void s_fire_timers(fq_ctx_t *ctx)
{
    int64_t now = zclock_mono();
    fq_timer_t *timer;
    while (ctx->exit_code == FQ_EXIT_RUNNING && (timer = fq_timers_pop_due(ctx->timers, now))) {
        if (timer->kind == S_TIMER_USER) {
            s_frame_t *frame = timer->payload;
            s_dispatch(ctx, frame->data, frame->size);
        } else if (timer->kind == S_TIMER_ASK) {
            uint64_t corr = (uint64_t)(uintptr_t)timer->payload;
            s_ask_t *ask = fq_intkey_lookup(ctx->asks, corr);
            if (ask) {
                fq_ask_fn *fn = ask->fn;
                void *arg = ask->arg;
                fq_intkey_delete(ctx->asks, corr);
                fn(ctx, ctx->state, FQ_ETIMEDOUT, NULL, arg);
            }
        } else if (timer->kind == S_TIMER_RESTART)
            s_restart(ctx, timer->payload);
        if (!timer->interval_ms)
            fq_timer_free(&timer);
    }
}

//  ---------------------------------------------------------------------
//  The loop

static int s_rebuild_pollset(fq_ctx_t *ctx)
{
    size_t n = 2 + zlistx_size(ctx->children) + zlistx_size(ctx->readers);
    zmq_pollitem_t *items = realloc(ctx->items, n * sizeof *items);
    if (items)
        ctx->items = items;
    void **owners = items ? realloc(ctx->owners, n * sizeof *owners) : NULL;
    if (!owners)
        return FQ_ENOMEM;
    ctx->owners = owners;
    size_t i = 0;
    items[i] = (zmq_pollitem_t){zsock_resolve(ctx->pipe), 0, ZMQ_POLLIN, 0};
    owners[i++] = NULL;
    items[i] = (zmq_pollitem_t){zsock_resolve(ctx->cell->mailbox), 0, ZMQ_POLLIN, 0};
    owners[i++] = NULL;
    for (fq_cell_t *cell = zlistx_first(ctx->children); cell; cell = zlistx_next(ctx->children))
        if (cell->actor) {
            items[i] = (zmq_pollitem_t){zsock_resolve(cell->actor), 0, ZMQ_POLLIN, 0};
            owners[i++] = cell;
        }
    size_t first_reader = i;
    for (s_reader_t *reader = zlistx_first(ctx->readers); reader;
         reader = zlistx_next(ctx->readers)) {
        items[i] = reader->sock ? (zmq_pollitem_t){zsock_resolve(reader->sock), 0, ZMQ_POLLIN, 0}
                                : (zmq_pollitem_t){NULL, reader->fd, ZMQ_POLLIN, 0};
        owners[i++] = reader;
    }
    ctx->nitems = i;
    ctx->first_reader = first_reader;
    ctx->rebuild = false;
    return 0;
}

static void s_poll_once(fq_ctx_t *ctx)
{
    if (ctx->rebuild && s_rebuild_pollset(ctx)) {
        s_exit(ctx, FQ_EXIT_FAILED, "out of memory");
        return;
    }
    long timeout = fq_timers_timeout(ctx->timers, zclock_mono());
    int rc = zmq_poll(ctx->items, (int)ctx->nitems, timeout);
    if (rc < 0) {
        if (zmq_errno() != EINTR)
            s_exit(ctx, FQ_EXIT_FAILED, "poll failed: %s", zmq_strerror(zmq_errno()));
        return;
    }
    s_fire_timers(ctx);
    if (rc == 0)
        return;
    size_t first_reader = ctx->first_reader;
    //  Copy what is ready first: handling one may rebuild the poll set
    size_t nready = 0;
    void *ready[ctx->nitems];
    bool reader_ready[ctx->nitems];
    //  A descriptor at its end (a closed pipe, a failed connection) may say
    //  so with POLLHUP or POLLERR alone, which zmq_poll reports as
    //  ZMQ_POLLERR: its reader runs then too, to see the end and remove it
    //  (else poll would return at once, for ever)
    for (size_t i = 2; i < ctx->nitems; i++)
        if (ctx->items[i].revents & (ZMQ_POLLIN | (ctx->items[i].socket ? 0 : ZMQ_POLLERR))) {
            reader_ready[nready] = i >= first_reader;
            ready[nready++] = ctx->owners[i];
        }
    bool pipe_ready = ctx->items[0].revents & ZMQ_POLLIN;
    bool mailbox_ready = ctx->items[1].revents & ZMQ_POLLIN;
    if (pipe_ready)
        s_handle_pipe(ctx);
    for (size_t i = 0; i < nready; i++) {
        if (!reader_ready[i])
            s_child_exited(ctx, ready[i]);
        else if (ctx->exit_code == FQ_EXIT_RUNNING && zlistx_find(ctx->readers, ready[i])) {
            s_reader_t *reader = ready[i];
            int status = reader->sock ? reader->fn(ctx, ctx->state, reader->sock)
                                      : reader->fd_fn(ctx, ctx->state, reader->fd);
            if (status < 0)
                s_exit(ctx, FQ_EXIT_FAILED, "reader failed: %s", fq_strerror(status));
        }
    }
    if (mailbox_ready && ctx->exit_code == FQ_EXIT_RUNNING)
        s_drain_mailbox(ctx);
}

//  Children stop before their parent's own stop runs, so a parent may
//  still rely on them being gone (as OTP and Akka do).
static void s_teardown(fq_ctx_t *ctx)
{
    fq_cell_t *cell;
    while ((cell = zlistx_last(ctx->children))) {
        zlistx_detach_cur(ctx->children);
        fq_cell_destroy(&cell, ctx->outbox, false, "parent stopped");
    }
    //  Every ask gets exactly one answer, even when its asker is ending
    s_ask_t *ask;
    while ((ask = zhashx_first(ctx->asks))) {
        fq_ask_fn *fn = ask->fn;
        void *arg = ask->arg;
        fq_intkey_delete(ctx->asks, ask->corr);
        fn(ctx, ctx->started ? ctx->state : NULL, FQ_ECLOSED, NULL, arg);
    }
    if (ctx->started && ctx->cell->behaviour->stop)
        ctx->cell->behaviour->stop(ctx, ctx->state);
    ctx->started = false;
}

static void s_report_exit(fq_ctx_t *ctx)
{
    zsock_send(ctx->pipe, "sis", "$EXIT", ctx->exit_code, ctx->exit_reason);
}

//  Runs if the thread is ended under us (pthread_exit in a behaviour):
//  the parent must still hear of it, or it would wait forever.
static void s_unexpected_end(void *arg)
{
    fq_ctx_t *ctx = arg;
    ctx->exit_code = FQ_EXIT_RUNNING;
    s_exit(ctx, FQ_EXIT_FAILED, "actor thread ended unexpectedly");
    ctx->started = false; //  Its state may be half-changed; do not run stop
    s_teardown(ctx);
    s_report_exit(ctx);
    zsock_t *pipe = ctx->pipe;
    s_ctx_destroy(&ctx);
    zsock_signal(pipe, 0);
    zsock_destroy(&pipe);
}

//  The thread takes the actor's name (the last part of its path, cut to
//  the 15 bytes the kernel keeps), so that top -H, perf and /proc show
//  which actor spends the CPU.
static void s_name_thread(const fq_cell_t *cell)
{
    const char *slash = strrchr(cell->path, '/');
    const char *last = slash ? slash + 1 : cell->path;
    char name[16];
    size_t length = strnlen(last, sizeof name - 1);
    memcpy(name, last, length);
    name[length] = '\0';
    pthread_setname_np(pthread_self(), name);
}

void fq_actor_main(zsock_t *pipe, void *args)
{
    fq_cell_t *cell = args;
    s_name_thread(cell);
    fq_ctx_t *ctx = s_ctx_new(cell, pipe);
    zsock_signal(pipe, 0);
    if (!ctx) {
        zsock_send(pipe, "sis", "$EXIT", FQ_EXIT_FAILED, "out of memory");
        return;
    }
    pthread_cleanup_push(s_unexpected_end, ctx);
    int rc = cell->behaviour->start ? cell->behaviour->start(ctx, cell->args, &ctx->state) : 0;
    if (rc < 0)
        s_exit(ctx, FQ_EXIT_FAILED, "start failed: %s", fq_strerror(rc));
    else
        ctx->started = true;
    while (ctx->exit_code == FQ_EXIT_RUNNING)
        s_poll_once(ctx);
    s_teardown(ctx);
    pthread_cleanup_pop(0);
    s_report_exit(ctx);
    s_ctx_destroy(&ctx);
}

//  ---------------------------------------------------------------------
//  The fq_ctx_t API

int fq_msg_decode(const fq_msg_t *msg, const fq_msgdesc_t *desc, void *out)
{
    //  A frame in transit has no decoded body (s_dispatch)
    if (!msg || !desc || msg->type != desc->id || !msg->body)
        return FQ_EDECODE;
    return desc->decode(msg->body, out, msg->zone);
}

int fq_spawn(fq_ctx_t *ctx, const char *name, const fq_behaviour_t *behaviour, void *args,
             const fq_spawn_opts_t *opts)
{
    fq_cell_t *cell;
    int rc = fq_cell_new(ctx->sys, ctx->cell->path, name, behaviour, args, opts, false, &cell);
    if (rc)
        return rc;
    if (fq_cell_start(cell) || !zlistx_add_end(ctx->children, cell)) {
        fq_cell_destroy(&cell, NULL, false, "spawn failed");
        return FQ_ENOMEM;
    }
    ctx->rebuild = true;
    return 0;
}

int fq_tell(fq_ctx_t *ctx, const char *to, const fq_msgdesc_t *desc, const void *msg)
{
    return fq_outbox_send(ctx->outbox, to, desc->id, 0, 0, ctx->cell->path, desc, msg, NULL);
}

int fq_reply(fq_ctx_t *ctx, const fq_msg_t *request, const fq_msgdesc_t *desc, const void *msg)
{
    if (!request->sender || !request->sender[0])
        return FQ_EINVAL;
    return fq_outbox_send(ctx->outbox, request->sender, desc->id, FQ_ENV_REPLY, request->corr,
                          ctx->cell->path, desc, msg, NULL);
}

int fq_ask(fq_ctx_t *ctx, const char *to, const fq_msgdesc_t *desc, const void *msg, int timeout_ms,
           fq_ask_fn *fn, void *arg)
{
    if (!fn || timeout_ms < 0)
        return FQ_EINVAL;
    uint64_t corr = ++ctx->cell->next_corr;
    int rc = fq_outbox_send(ctx->outbox, to, desc->id, FQ_ENV_ASK, corr, ctx->cell->path, desc, msg,
                            NULL);
    if (rc)
        return rc;
    s_ask_t *ask = calloc(1, sizeof *ask);
    if (!ask)
        return FQ_ENOMEM;
    *ask = (s_ask_t){.corr = corr, .fn = fn, .arg = arg, .remote = to[0] != '/'};
    ask->timer = fq_timers_add(ctx->timers, zclock_mono(), timeout_ms, 0, S_TIMER_ASK,
                               (void *)(uintptr_t)corr, NULL);
    if (ask->timer < 0 || fq_intkey_insert(ctx->asks, corr, ask) != 0) {
        fq_timers_cancel(ctx->timers, ask->timer);
        free(ask);
        return FQ_ENOMEM;
    }
    return 0;
}

static int s_timer(fq_ctx_t *ctx, int delay_ms, int interval_ms, const fq_msgdesc_t *desc,
                   const void *msg)
{
    if (delay_ms < 0 || interval_ms < 0 || !desc)
        return FQ_EINVAL;
    msgpack_sbuffer buf;
    msgpack_sbuffer_init(&buf);
    int rc = fq_envelope_encode(&buf, desc->id, 0, 0, ctx->cell->path, NULL, desc, msg, NULL);
    s_frame_t *frame = rc ? NULL : malloc(sizeof *frame + buf.size);
    if (frame) {
        frame->size = buf.size;
        memcpy(frame->data, buf.data, buf.size);
    }
    msgpack_sbuffer_destroy(&buf);
    if (!frame)
        return rc ? rc : FQ_ENOMEM;
    return fq_timers_add(ctx->timers, zclock_mono(), delay_ms, interval_ms, S_TIMER_USER, frame,
                         free);
}

int fq_timer_once(fq_ctx_t *ctx, int delay_ms, const fq_msgdesc_t *desc, const void *msg)
{
    return s_timer(ctx, delay_ms, 0, desc, msg);
}

int fq_timer_every(fq_ctx_t *ctx, int interval_ms, const fq_msgdesc_t *desc, const void *msg)
{
    if (interval_ms <= 0)
        return FQ_EINVAL;
    return s_timer(ctx, interval_ms, interval_ms, desc, msg);
}

void fq_timer_cancel(fq_ctx_t *ctx, int timer_id)
{
    fq_timers_cancel(ctx->timers, timer_id);
}

int fq_watch(fq_ctx_t *ctx, const char *address)
{
    return fq_outbox_watch(ctx->outbox, ctx->cell->path, address, true);
}

void fq_unwatch(fq_ctx_t *ctx, const char *address)
{
    fq_outbox_watch(ctx->outbox, ctx->cell->path, address, false);
}

int fq_stop(fq_ctx_t *ctx, const char *address)
{
    if (!fq_path_valid(address))
        return FQ_EINVAL; //  Only local actors can be stopped
    fq_stop_t stop = {0};
    return fq_tell(ctx, address, &fq_stop_desc, &stop);
}

void fq_stop_self(fq_ctx_t *ctx)
{
    s_exit(ctx, FQ_EXIT_STOPPED, "stopped itself");
}

uint64_t fq_count_refused(fq_ctx_t *ctx)
{
    return atomic_fetch_add(&ctx->cell->entry->refused, 1) + 1;
}

const char *fq_self(fq_ctx_t *ctx)
{
    return ctx->cell->path;
}

fq_system_t *fq_ctx_system(fq_ctx_t *ctx)
{
    return ctx->sys;
}

int fq_ctx_add_reader(fq_ctx_t *ctx, zsock_t *sock, fq_reader_fn *fn)
{
    s_reader_t *reader = calloc(1, sizeof *reader);
    if (!reader || !zlistx_add_end(ctx->readers, reader)) {
        free(reader);
        return FQ_ENOMEM;
    }
    reader->sock = sock;
    reader->fn = fn;
    ctx->rebuild = true;
    return 0;
}

int fq_ctx_add_fd_reader(fq_ctx_t *ctx, int fd, fq_fd_reader_fn *fn)
{
    s_reader_t *reader = calloc(1, sizeof *reader);
    if (!reader || fd < 0 || !zlistx_add_end(ctx->readers, reader)) {
        free(reader);
        return fd < 0 ? FQ_EINVAL : FQ_ENOMEM;
    }
    reader->fd = fd;
    reader->fd_fn = fn;
    ctx->rebuild = true;
    return 0;
}

void fq_ctx_remove_fd_reader(fq_ctx_t *ctx, int fd)
{
    for (s_reader_t *reader = zlistx_first(ctx->readers); reader;
         reader = zlistx_next(ctx->readers))
        if (!reader->sock && reader->fd == fd) {
            zlistx_delete(ctx->readers, zlistx_cursor(ctx->readers));
            ctx->rebuild = true;
            return;
        }
}

void fq_ctx_remove_reader(fq_ctx_t *ctx, zsock_t *sock)
{
    for (s_reader_t *reader = zlistx_first(ctx->readers); reader;
         reader = zlistx_next(ctx->readers))
        if (reader->sock && reader->sock == sock) {
            zlistx_delete(ctx->readers, zlistx_cursor(ctx->readers));
            ctx->rebuild = true;
            return;
        }
}

int fq_forward(fq_ctx_t *ctx, const char *to, const void *frame, size_t size)
{
    if (!fq_path_valid(to))
        return FQ_EINVAL;
    return fq_outbox_send_frame(ctx->outbox, to, frame, size);
}

//  Guardian spawns from other threads arrive over the guardian's pipe;
//  only the system holding that pipe can send them (fq_system.c).
int fq_guardian_spawn(zactor_t *guardian, const char *name, const fq_behaviour_t *behaviour,
                      void *args, const fq_spawn_opts_t *opts)
{
    fq_spawn_request_t req = {name, behaviour, args, opts};
    fq_spawn_request_t *ptr = &req;
    zmsg_t *command = zmsg_new();
    zmsg_addstr(command, "SPAWN");
    zmsg_addmem(command, &ptr, sizeof ptr);
    if (zmsg_send(&command, guardian) != 0)
        return FQ_ECLOSED;
    int rc = FQ_ECLOSED;
    if (zsock_recv(guardian, "i", &rc) != 0)
        return FQ_ECLOSED;
    return rc;
}
