/*  fq_outbox.c — encode, route and send, with a per-thread socket cache. */
#include "fq_outbox.h"
#include "fq_system_internal.h"

//  Lingering lets a message sent just before a socket closes still reach
//  the mailbox; past this the context would block at shutdown.
#define S_ROUTE_LINGER_MS 1000

//  Routes cached before those to actors that are gone are dropped. Each
//  holds a socket: an actor answering the asks of short-lived clients
//  (each with a path of its own) would otherwise keep one per client ever
//  seen, until ZeroMQ's socket limit (1,023) stops the whole system.
#define S_ROUTES_SWEEP_AT 64

typedef struct {
    fq_entry_t *entry;
    zsock_t *push;
} s_route_t;

struct fq_outbox {
    fq_system_t *sys;
    zhashx_t *routes; //  path -> s_route_t*
    msgpack_sbuffer buf;
    //  The previous send's address and route. A sender mostly sends to the
    //  same address many times in a row (a producer feeding a consumer, an
    //  actor replying to its parent), so one strcmp replaces parsing the
    //  address and hashing its path. NULL after any route is dropped.
    s_route_t *last;
    bool last_remote;
    char last_to[FQ_ADDRESS_MAX + 1];
    size_t sweep_at; //  Cached routes past which the dead are dropped
};

static void s_route_destroy(void **item)
{
    s_route_t *route = *item;
    if (route) {
        zsock_destroy(&route->push);
        fq_entry_release(&route->entry);
        free(route);
        *item = NULL;
    }
}

fq_outbox_t *fq_outbox_new(fq_system_t *sys)
{
    fq_outbox_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    self->sys = sys;
    self->routes = zhashx_new();
    if (!self->routes) {
        free(self);
        return NULL;
    }
    zhashx_set_destructor(self->routes, s_route_destroy);
    msgpack_sbuffer_init(&self->buf);
    return self;
}

void fq_outbox_destroy(fq_outbox_t **self_p)
{
    fq_outbox_t *self = *self_p;
    if (!self)
        return;
    zhashx_destroy(&self->routes);
    msgpack_sbuffer_destroy(&self->buf);
    free(self);
    *self_p = NULL;
}

//  Drops the route to path, and the memo of the last one with it.
static void s_forget(fq_outbox_t *self, const char *path)
{
    self->last = NULL;
    zhashx_delete(self->routes, path);
}

//  Drops the routes to actors that are gone; the next sweep comes when the
//  cache has doubled from what is left.
static void s_sweep(fq_outbox_t *self)
{
    zlistx_t *gone = zlistx_new();
    for (s_route_t *route = zhashx_first(self->routes); route && gone;
         route = zhashx_next(self->routes))
        if (!atomic_load_explicit(&route->entry->alive, memory_order_relaxed))
            zlistx_add_end(gone, (void *)zhashx_cursor(self->routes));
    //  The keys are the hash's own copies: deleted after the walk
    for (const char *path = gone ? zlistx_first(gone) : NULL; path; path = zlistx_next(gone))
        zhashx_delete(self->routes, path);
    zlistx_destroy(&gone);
    self->last = NULL;
    size_t left = zhashx_size(self->routes);
    self->sweep_at = 2 * (left > S_ROUTES_SWEEP_AT / 2 ? left : S_ROUTES_SWEEP_AT / 2);
}

//  The cached route to path, re-resolved if its actor has gone (a new
//  actor may have been spawned at the same path since).
static s_route_t *s_route(fq_outbox_t *self, const char *path)
{
    s_route_t *route = zhashx_lookup(self->routes, path);
    if (route && atomic_load_explicit(&route->entry->alive, memory_order_relaxed))
        return route;
    if (route)
        s_forget(self, path);

    fq_entry_t *entry = fq_registry_lookup(self->sys->registry, path);
    if (!entry)
        return NULL;
    route = calloc(1, sizeof *route);
    zsock_t *push = route ? zsock_new(ZMQ_PUSH) : NULL;
    if (!push) {
        free(route);
        fq_entry_release(&entry);
        return NULL;
    }
    zsock_set_sndhwm(push, self->sys->config.mailbox_hwm);
    zsock_set_sndtimeo(push, self->sys->config.send_timeout_ms);
    zsock_set_linger(push, S_ROUTE_LINGER_MS);
    if (zsock_connect(push, "%s", entry->endpoint)) {
        zsock_destroy(&push);
        free(route);
        fq_entry_release(&entry);
        return NULL;
    }
    route->entry = entry;
    route->push = push;
    if (zhashx_size(self->routes) >= (self->sweep_at ? self->sweep_at : S_ROUTES_SWEEP_AT))
        s_sweep(self);
    zhashx_insert(self->routes, path, route);
    return route;
}

static int s_send(fq_outbox_t *self, s_route_t *route, const char *path, const void *frame,
                  size_t size)
{
    //  Counted before the send so that depth (enqueued - handled) is never
    //  seen negative by a reader racing the receiver.
    atomic_fetch_add_explicit(&route->entry->enqueued, 1, memory_order_relaxed);
    if (zmq_send(zsock_resolve(route->push), frame, size, 0) == -1) {
        atomic_fetch_sub_explicit(&route->entry->enqueued, 1, memory_order_relaxed);
        bool gone = !atomic_load(&route->entry->alive);
        if (gone)
            s_forget(self, path);
        return gone ? FQ_ENOACTOR : FQ_EFULL;
    }
    return 0;
}

int fq_outbox_send_frame(fq_outbox_t *self, const char *path, const void *frame, size_t size)
{
    s_route_t *route = s_route(self, path);
    if (!route)
        return FQ_ENOACTOR;
    return s_send(self, route, path, frame, size);
}

int fq_outbox_send(fq_outbox_t *self, const char *to, uint32_t type, uint32_t flags, uint64_t corr,
                   const char *sender, const fq_msgdesc_t *desc, const void *msg,
                   const fq_raw_body_t *raw_body)
{
    s_route_t *route = NULL;
    bool remote = false;
    const char *path = to;
    if (self->last && to && streq(to, self->last_to) &&
        atomic_load_explicit(&self->last->entry->alive, memory_order_relaxed)) {
        route = self->last;
        remote = self->last_remote;
    } else {
        char system[FQ_ADDRESS_MAX + 1];
        int kind = fq_address_split(to, system, sizeof system, &path);
        if (kind < 0)
            return FQ_EINVAL;
        remote = kind == 1;
    }
    msgpack_sbuffer_clear(&self->buf);
    int rc = fq_envelope_encode(&self->buf, type, flags, corr, sender, remote ? to : NULL, desc,
                                msg, raw_body);
    if (rc)
        return rc;
    if (self->buf.size > FQ_ENVELOPE_MAX_SIZE)
        return FQ_ETOOBIG;
    if (remote)
        path = FQ_GATEWAY_PATH;
    if (!route) {
        route = s_route(self, path);
        if (!route)
            return remote ? FQ_EPEER : FQ_ENOACTOR;
        //  fq_address_split took only addresses that fit
        snprintf(self->last_to, sizeof self->last_to, "%s", to);
        self->last_remote = remote;
        self->last = route;
    }
    rc = s_send(self, route, path, self->buf.data, self->buf.size);
    return remote && rc == FQ_ENOACTOR ? FQ_EPEER : rc;
}

int fq_outbox_watch(fq_outbox_t *self, const char *watcher, const char *address, bool watch)
{
    char system[FQ_ADDRESS_MAX + 1];
    const char *path;
    int remote = fq_address_split(address, system, sizeof system, &path);
    if (remote < 0)
        return FQ_EINVAL;
    if (remote) {
        if (watch) {
            fq_watch_remote_t req = {.watcher = watcher, .target = address};
            return fq_outbox_send(self, FQ_GATEWAY_PATH, FQ_MSG_WATCH_REMOTE, 0, 0, watcher,
                                  &fq_watch_remote_desc, &req, NULL);
        }
        fq_unwatch_remote_t req = {.watcher = watcher, .target = address};
        return fq_outbox_send(self, FQ_GATEWAY_PATH, FQ_MSG_UNWATCH_REMOTE, 0, 0, watcher,
                              &fq_unwatch_remote_desc, &req, NULL);
    }
    if (!watch) {
        fq_registry_unwatch(self->sys->registry, path, watcher);
        return 0;
    }
    if (fq_registry_watch(self->sys->registry, path, watcher) == 0)
        return 0;
    //  Watching what is not there answers at once, as if it had just died
    fq_terminated_t notice = {.path = address, .failed = false, .reason = "no such actor"};
    return fq_outbox_send(self, watcher, FQ_MSG_TERMINATED, 0, 0, address, &fq_terminated_desc,
                          &notice, NULL);
}
