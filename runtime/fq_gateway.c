/*  fq_gateway.c — the remote transport actor (see fq_gateway.h). */
#include "fq_gateway.h"
#include "fq_log.h"
#include "fq_system_internal.h"
#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>

//  The reason given when a peer leaves with BYE.
#define S_GOODBYE          "said goodbye"
#define S_PROTOCOL_VERSION 1
#define S_ZAP_DOMAIN       "fairq"

//  Where a connect list's endpoints must point: addresses name a joined
//  system as tcp://HOST:PORT, so no other transport can be routed to.
#define S_ENDPOINT_SCHEME "tcp://"
//  Room for a reason that names an endpoint, as logged when moving on.
#define S_REASON_SIZE 256

typedef struct {
    char *target; //  Remote address as the watcher wrote it
    char *path;   //  Its path part
    char *watcher;
} s_watch_t;

typedef struct {
    char name[FQ_NAME_MAX + 1];
    zframe_t *routing_id; //  Bound side: the ROUTER identity; NULL on the connecting side
    char key[41];         //  Z85 CURVE public key, "" in insecure mode
    int64_t last_seen;
    int64_t last_sent;
    int64_t stalled_since; //  First failed send to it since its last good one, or 0
    zlistx_t *watches;     //  s_watch_t*: our actors watching this peer's
} s_peer_t;

typedef struct {
    //  Configuration, owned (copied at start); survives restarts.
    char *bind;
    char *connect; //  The connect list as given
    //  Its endpoints, pointing into endpoint_text (connect with each
    //  separator made a string's end)
    char *endpoint_text;
    const char *endpoints[FQ_GATEWAY_ENDPOINTS_MAX];
    size_t endpoint_count;
    char *allow_dir;
    char *server_key;
    zcert_t *cert;
    bool insecure;
    fq_gateway_admit_t *admit; //  Paths owned
    size_t admit_count;
    int heartbeat_ms;
    int heartbeat_timeout_ms;
    int welcome_timeout_ms; //  Connecting side: how long an endpoint has to welcome us
    int reconnect_min_ms;
    int reconnect_max_ms;
    bool holds_zap; //  This gateway holds s_zap_claimed
} s_config_t;

//  zauth serves the ZAP endpoint of the whole process, and a second zauth
//  aborts the process binding it (an assert in CZMQ): so one CURVE-bound
//  gateway per process at a time, and a second is refused as a
//  configuration error. Released when the gateway is gone for good.
static atomic_bool s_zap_claimed;

typedef struct {
    fq_ctx_t *ctx;
    s_config_t *cfg;
    zactor_t *auth;
    zsock_t *router;
    zsock_t *dealer;
    zsock_t *monitor;        //  PAIR reading the DEALER's connection events
    unsigned dealer_serial;  //  Counts DEALERs: tells a read loop its socket was replaced
    zhashx_t *peers_by_name; //  name -> s_peer_t*, owned
    s_peer_t *server;        //  Connecting side: the system we joined, once welcomed
    size_t endpoint;         //  Index of the DEALER's endpoint in cfg->endpoints
    size_t tried;            //  Endpoints that failed since the last welcome or back-off
    int64_t dealer_since;    //  When the current DEALER was created
    int64_t reconnect_at;    //  When to create the next DEALER, 0 = now
    int reconnect_delay;
    zhashx_t *remote_watchers; //  local path -> zlistx of peer names watching it
    msgpack_zone zone;
    msgpack_sbuffer buf;
    uint64_t frames_in, frames_out, malformed, refused;
} s_self_t;

static void s_config_free(void *arg)
{
    s_config_t *cfg = arg;
    if (!cfg)
        return;
    if (cfg->holds_zap)
        atomic_store(&s_zap_claimed, false);
    free(cfg->bind);
    free(cfg->connect);
    free(cfg->endpoint_text);
    free(cfg->allow_dir);
    free(cfg->server_key);
    for (size_t i = 0; i < cfg->admit_count; i++)
        free((char *)cfg->admit[i].path);
    free(cfg->admit);
    zcert_destroy(&cfg->cert);
    free(cfg);
}

static char *s_strdup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

static void s_watch_destroy(void **item)
{
    s_watch_t *watch = *item;
    if (watch) {
        free(watch->target);
        free(watch->path);
        free(watch->watcher);
        free(watch);
        *item = NULL;
    }
}

static void s_peer_destroy(void **item)
{
    s_peer_t *peer = *item;
    if (peer) {
        zframe_destroy(&peer->routing_id);
        zlistx_destroy(&peer->watches);
        free(peer);
        *item = NULL;
    }
}

static s_peer_t *s_peer_new(const char *name, zframe_t *routing_id, const char *key)
{
    s_peer_t *peer = calloc(1, sizeof *peer);
    if (!peer)
        return NULL;
    peer->watches = zlistx_new();
    if (!peer->watches) {
        free(peer);
        return NULL;
    }
    zlistx_set_destructor(peer->watches, s_watch_destroy);
    snprintf(peer->name, sizeof peer->name, "%s", name);
    snprintf(peer->key, sizeof peer->key, "%s", key ? key : "");
    peer->routing_id = routing_id ? zframe_dup(routing_id) : NULL;
    peer->last_seen = zclock_mono();
    return peer;
}

//  ---------------------------------------------------------------------
//  Sending frames to peers

//  How frames go out. What our actors send (messages, and their watches
//  and death notices) may wait for a full pipe to a peer to drain, up to
//  the send time-out: that is backpressure. What the gateway answers to a
//  peer's frames by itself (REHELLO, WELCOME, ERROR) and its heartbeats and
//  BYE never wait: a peer that kept sending but never read made the gateway
//  wait the whole send time-out (5 s by default) for each answer once its
//  pipe was full, and every other peer then missed its heartbeats and was
//  declared dead. An answer the peer does not read is dropped.
typedef enum { S_SEND_WAIT, S_SEND_DONTWAIT } s_send_mode_t;

static int s_send_frame(s_self_t *self, s_peer_t *peer, const void *data, size_t size,
                        s_send_mode_t mode)
{
    //  Once a send to a peer has timed out, later ones fail at once until
    //  one gets through: a peer that stops reading costs one wait, not one
    //  per message, and the heartbeat tick drops it if it stays stuck.
    if (peer->stalled_since)
        mode = S_SEND_DONTWAIT;
    int flags = mode == S_SEND_DONTWAIT ? ZMQ_DONTWAIT : 0;
    int rc;
    if (peer->routing_id) {
        rc = zmq_send(zsock_resolve(self->router), zframe_data(peer->routing_id),
                      zframe_size(peer->routing_id), ZMQ_SNDMORE | flags);
        if (rc >= 0)
            rc = zmq_send(zsock_resolve(self->router), data, size, flags);
    } else if (self->dealer)
        rc = zmq_send(zsock_resolve(self->dealer), data, size, flags);
    else
        rc = -1;
    if (rc < 0) {
        if (zmq_errno() == EAGAIN && !peer->stalled_since)
            peer->stalled_since = zclock_mono();
        return FQ_EPEER;
    }
    peer->stalled_since = 0;
    peer->last_sent = zclock_mono();
    self->frames_out++;
    return 0;
}

//  Sends a gateway control message (to = nil) to peer.
static int s_send_control(s_self_t *self, s_peer_t *peer, const fq_msgdesc_t *desc, const void *msg,
                          s_send_mode_t mode)
{
    msgpack_sbuffer_clear(&self->buf);
    int rc = fq_envelope_encode(&self->buf, desc->id, 0, 0, NULL, NULL, desc, msg, NULL);
    return rc ? rc : s_send_frame(self, peer, self->buf.data, self->buf.size, mode);
}

static void s_send_hello(s_self_t *self)
{
    fq_gw_hello_t hello = {.system = fq_system_name(fq_ctx_system(self->ctx)),
                           .version = S_PROTOCOL_VERSION,
                           .heartbeat_ms = (uint32_t)self->cfg->heartbeat_ms};
    msgpack_sbuffer_clear(&self->buf);
    if (fq_envelope_encode(&self->buf, FQ_MSG_GW_HELLO, 0, 0, NULL, NULL, &fq_gw_hello_desc, &hello,
                           NULL) == 0 &&
        zmq_send(zsock_resolve(self->dealer), self->buf.data, self->buf.size, ZMQ_DONTWAIT) >= 0)
        self->frames_out++;
}

//  ---------------------------------------------------------------------
//  Peers coming and going

static void s_tell_terminated(s_self_t *self, const char *watcher, const char *target, bool failed,
                              const char *reason)
{
    fq_terminated_t notice = {.path = target, .failed = failed, .reason = reason};
    fq_tell(self->ctx, watcher, &fq_terminated_desc, &notice);
}

//  A peer is gone: every local watcher of its actors hears of it, and
//  whatever it watched here is forgotten.
static void s_peer_lost(s_self_t *self, s_peer_t *peer, const char *reason)
{
    //  A peer that said goodbye left as it should; any other loss is news
    if (strcmp(reason, S_GOODBYE) == 0)
        fq_log(FQ_LOG_INFO, "gateway: peer %s left: %s", peer->name, reason);
    else
        fq_log(FQ_LOG_WARNING, "gateway: peer %s lost: %s", peer->name, reason);
    for (s_watch_t *watch = zlistx_first(peer->watches); watch; watch = zlistx_next(peer->watches))
        s_tell_terminated(self, watch->watcher, watch->target, true, reason);
    for (zlistx_t *names = zhashx_first(self->remote_watchers); names;
         names = zhashx_next(self->remote_watchers)) {
        void *handle = zlistx_find(names, peer->name);
        if (handle)
            zlistx_delete(names, handle);
    }
    if (peer == self->server)
        self->server = NULL;
    zhashx_delete(self->peers_by_name, peer->name);
}

static int s_on_dealer(fq_ctx_t *ctx, void *state, zsock_t *sock);
static int s_on_monitor(fq_ctx_t *ctx, void *state, zsock_t *sock);

//  The endpoint the DEALER connects to (or will, once it is opened).
static const char *s_endpoint(const s_self_t *self)
{
    return self->cfg->endpoints[self->endpoint];
}

//  Has the heartbeat tick run in delay_ms as well as on its own schedule:
//  a welcome that is due or a reconnect must not wait for the next tick
//  (a second by default), or finding a new leader would take that long.
static void s_tick_in(s_self_t *self, int delay_ms)
{
    fq_timer_once(self->ctx, delay_ms, &fq_gw_heartbeat_desc, &(fq_gw_heartbeat_t){0});
}

static void s_monitor_close(s_self_t *self)
{
    if (!self->monitor)
        return;
    fq_ctx_remove_reader(self->ctx, self->monitor);
    zsock_destroy(&self->monitor);
}

//  Watches the DEALER's connection through a socket monitor: when the
//  server's process dies, its kernel closes the TCP connection and
//  DISCONNECTED says so at once, where the heartbeats take
//  heartbeat_timeout_ms. (A frozen server keeps its connection up; the
//  heartbeats still catch that.) Returns 0 or -1.
static int s_monitor_open(s_self_t *self)
{
    //  Each DEALER's monitor needs an inproc name of its own in the process
    static atomic_uint serial;
    char endpoint[64];
    snprintf(endpoint, sizeof endpoint, "inproc://fq-gateway-monitor-%u",
             atomic_fetch_add(&serial, 1));
    if (zmq_socket_monitor(zsock_resolve(self->dealer), endpoint,
                           ZMQ_EVENT_DISCONNECTED | ZMQ_EVENT_CONNECT_RETRIED) != 0)
        return -1;
    self->monitor = zsock_new(ZMQ_PAIR);
    if (!self->monitor)
        return -1;
    zsock_set_linger(self->monitor, 0);
    if (zsock_connect(self->monitor, "%s", endpoint) != 0 ||
        fq_ctx_add_reader(self->ctx, self->monitor, s_on_monitor) != 0) {
        zsock_destroy(&self->monitor);
        return -1;
    }
    return 0;
}

static void s_dealer_close(s_self_t *self)
{
    if (!self->dealer)
        return;
    zmq_socket_monitor(zsock_resolve(self->dealer), NULL, 0);
    s_monitor_close(self);
    fq_ctx_remove_reader(self->ctx, self->dealer);
    zsock_destroy(&self->dealer);
}

static void s_dealer_open(s_self_t *self);

//  The current endpoint gave us no server, or we lost the one it gave:
//  try the next endpoint at once, since with several fairqd only the
//  leader binds and the others refuse. Only once a whole round of
//  endpoints failed do we wait, doubling the wait each round, so that a
//  cluster that is down is not hammered. reason says what happened.
static void s_move_on_logged(s_self_t *self, const char *reason, fq_log_level_t level)
{
    s_config_t *cfg = self->cfg;
    s_dealer_close(self);
    self->endpoint = (self->endpoint + 1) % cfg->endpoint_count;
    if (++self->tried < cfg->endpoint_count) {
        fq_log(level, "gateway: %s; trying %s", reason, s_endpoint(self));
        self->reconnect_at = 0;
        s_dealer_open(self);
        return;
    }
    self->tried = 0;
    self->reconnect_at = zclock_mono() + self->reconnect_delay;
    fq_log(level, "gateway: %s; reconnecting to %s in %d ms", reason, s_endpoint(self),
           self->reconnect_delay);
    s_tick_in(self, self->reconnect_delay);
    int most = cfg->endpoint_count > 1 && cfg->reconnect_max_ms > FQ_GATEWAY_ROUND_DELAY_MAX_MS
                   ? FQ_GATEWAY_ROUND_DELAY_MAX_MS
                   : cfg->reconnect_max_ms;
    self->reconnect_delay = self->reconnect_delay * 2 > most ? most : self->reconnect_delay * 2;
}

static void s_move_on(s_self_t *self, const char *reason)
{
    s_move_on_logged(self, reason, FQ_LOG_INFO);
}

//  The server we joined is gone: its watchers hear of it (s_peer_lost)
//  and we move on to the next endpoint.
static void s_server_lost(s_self_t *self, const char *reason)
{
    char what[S_REASON_SIZE];
    snprintf(what, sizeof what, "lost %s at %s (%s)", self->server->name, s_endpoint(self), reason);
    s_peer_lost(self, self->server, reason);
    s_move_on(self, what);
}

//  Creates a fresh DEALER to the current endpoint: after a server restart
//  the old connection's identity means nothing, so Paranoid Pirate starts
//  over with a new socket. A DEALER that cannot be made counts as a failed
//  endpoint.
static void s_dealer_open(s_self_t *self)
{
    s_config_t *cfg = self->cfg;
    self->dealer = zsock_new(ZMQ_DEALER);
    self->dealer_serial++;
    if (self->dealer) {
        zsock_set_linger(self->dealer, 0);
        zsock_set_maxmsgsize(self->dealer, (int)FQ_ENVELOPE_MAX_SIZE);
        zsock_set_sndtimeo(self->dealer, fq_ctx_system(self->ctx)->config.send_timeout_ms);
        zsock_set_reconnect_ivl(self->dealer, cfg->reconnect_min_ms);
        zsock_set_reconnect_ivl_max(self->dealer, cfg->reconnect_max_ms);
        if (!cfg->insecure) {
            zcert_apply(cfg->cert, self->dealer);
            zsock_set_curve_serverkey(self->dealer, cfg->server_key);
        }
    }
    //  The monitor before the connection, so that it sees every event
    if (!self->dealer || s_monitor_open(self) != 0 ||
        zsock_connect(self->dealer, "%s", s_endpoint(self)) != 0 ||
        fq_ctx_add_reader(self->ctx, self->dealer, s_on_dealer) != 0) {
        char reason[S_REASON_SIZE];
        snprintf(reason, sizeof reason, "could not connect to %s", s_endpoint(self));
        fq_log(FQ_LOG_ERROR, "gateway: %s", reason);
        s_move_on(self, reason);
        return;
    }
    self->dealer_since = zclock_mono();
    s_tick_in(self, cfg->welcome_timeout_ms + 1);
    s_send_hello(self);
}

//  ---------------------------------------------------------------------
//  Frames from peers

//  Whether system ("tcp://HOST:PORT") names the system we join: any one
//  endpoint of the connect list, whichever we joined (all of them stand for
//  one service, which only one of them serves at a time), or the list.
static bool s_names_server(const s_config_t *cfg, const char *system)
{
    if (!cfg->connect)
        return false;
    for (size_t i = 0; i < cfg->endpoint_count; i++)
        if (streq(system, cfg->endpoints[i]))
            return true;
    return streq(system, cfg->connect);
}

//  Finds the peer an outbound address names: a bound-side peer by system
//  name, or the system we joined, by name or by an endpoint of the list.
static s_peer_t *s_peer_for(s_self_t *self, const char *system)
{
    if (strncmp(system, "fq://", 5) == 0) {
        s_peer_t *peer = zhashx_lookup(self->peers_by_name, system + 5);
        return peer;
    }
    if (self->server && s_names_server(self->cfg, system))
        return self->server;
    return NULL;
}

//  ---------------------------------------------------------------------
//  Admission

//  How a frame comes, as an FQ_ADMIT_* kind; 0 for flags no peer sends (a
//  claim to be REMOTE already, or an ask and a reply at once).
static unsigned s_kind(uint32_t flags)
{
    switch (flags) {
    case 0:
        return FQ_ADMIT_TELL;
    case FQ_ENV_ASK:
        return FQ_ADMIT_ASK;
    case FQ_ENV_REPLY:
        return FQ_ADMIT_REPLY;
    default:
        return 0;
    }
}

static bool s_row_matches_path(const fq_gateway_admit_t *row, const char *path)
{
    return !row->path || streq(row->path, path);
}

//  Whether the admission table lets a peer send type to path as kind. The
//  runtime's own messages never pass: a peer's STOP, TERMINATED or watch
//  request would be obeyed by the actor runtime itself. An ERROR is
//  admitted as a reply only, where a row names it.
static bool s_admitted(const s_config_t *cfg, uint32_t type, unsigned kind, const char *path)
{
    if (!kind || (type < FQ_MSG_USER_FIRST && !(type == FQ_MSG_ERROR && kind == FQ_ADMIT_REPLY)))
        return false;
    for (size_t i = 0; i < cfg->admit_count; i++) {
        const fq_gateway_admit_t *row = &cfg->admit[i];
        bool type_matches = row->type == type || (row->type == 0 && type >= FQ_MSG_USER_FIRST);
        if (type_matches && (row->kinds & kind) && s_row_matches_path(row, path))
            return true;
    }
    return false;
}

//  Whether a peer may watch path: only an actor it may send to.
static bool s_watch_admitted(const s_config_t *cfg, const char *path)
{
    for (size_t i = 0; i < cfg->admit_count; i++)
        if (s_row_matches_path(&cfg->admit[i], path))
            return true;
    return false;
}

//  Counts a frame the table refused. Logged at the 1st, 2nd, 4th, 8th, ...
//  so that a hostile peer cannot flood the log.
static void s_refused(s_self_t *self, s_peer_t *peer, uint32_t type, const char *to)
{
    self->refused++;
    fq_count_refused(self->ctx);
    if ((self->refused & (self->refused - 1)) == 0)
        fq_log(FQ_LOG_WARNING,
               "gateway: refused message type %u to %.*s from peer %s (%llu refused so far)", type,
               FQ_PATH_MAX, to, peer->name, (unsigned long long)self->refused);
}

static void s_reply_error(s_self_t *self, s_peer_t *peer, const fq_envelope_t *env, int code)
{
    //  Only a path of the peer's own can be answered (see s_deliver)
    if (!(env->flags & FQ_ENV_ASK) || !fq_path_valid(env->sender))
        return;
    fq_error_t error = {.code = code, .text = fq_strerror(code)};
    msgpack_sbuffer_clear(&self->buf);
    //  Sent back as the reply, addressed in the peer's own terms
    if (fq_envelope_encode(&self->buf, FQ_MSG_ERROR, FQ_ENV_REPLY, env->corr, NULL, env->sender,
                           &fq_error_desc, &error, NULL) == 0)
        s_send_frame(self, peer, self->buf.data, self->buf.size, S_SEND_DONTWAIT);
}

//  A peer's message for one of our actors: rewrite the sender so replies
//  route back through this gateway, mark it remote, and deliver it.
static void s_deliver(s_self_t *self, s_peer_t *peer, const fq_envelope_t *env)
{
    char system[FQ_ADDRESS_MAX + 1];
    const char *path;
    //  Anything but a reply must name its sender by a valid path of the
    //  peer's (a peer's runtime always does). Behaviours answer with
    //  fq_reply, which fails on an empty or malformed sender, and so would
    //  they: a few such frames failed an actor past its restart limit and
    //  the escalation marked the whole system failed.
    bool answerable = fq_path_valid(env->sender);
    //  The system part, if any, named us; a bare path is ours as well
    if (fq_address_split(env->to, system, sizeof system, &path) < 0 ||
        !s_admitted(self->cfg, env->type, s_kind(env->flags), path) ||
        (!answerable && !(env->flags & FQ_ENV_REPLY))) {
        s_refused(self, peer, env->type, env->to);
        s_reply_error(self, peer, env, FQ_EINVAL);
        return;
    }
    char sender[FQ_ADDRESS_MAX + 1] = "";
    if (answerable)
        snprintf(sender, sizeof sender, "fq://%s%s", peer->name, env->sender);
    msgpack_sbuffer_clear(&self->buf);
    //  The body goes on as it came (checked whole by fq_envelope_decode_head,
    //  decoded by the actor it is for), not unpacked and packed again
    int rc = fq_envelope_encode(&self->buf, env->type, env->flags | FQ_ENV_REMOTE, env->corr,
                                sender, NULL, NULL, NULL, &env->raw);
    if (rc == 0)
        rc = fq_forward(self->ctx, path, self->buf.data, self->buf.size);
    if (rc)
        s_reply_error(self, peer, env, rc);
}

static void s_on_gw_watch(s_self_t *self, s_peer_t *peer, const fq_msg_t *msg)
{
    fq_gw_watch_t req;
    if (fq_msg_decode(msg, &fq_gw_watch_desc, &req) || !fq_path_valid(req.path)) {
        self->malformed++;
        return;
    }
    if (!s_watch_admitted(self->cfg, req.path)) {
        //  As for an absent actor: the watcher hears at once that it is gone
        s_refused(self, peer, FQ_MSG_GW_WATCH, req.path);
        fq_gw_terminated_t refused = {.path = req.path, .failed = true, .reason = "not admitted"};
        s_send_control(self, peer, &fq_gw_terminated_desc, &refused, S_SEND_DONTWAIT);
        return;
    }
    zlistx_t *names = zhashx_lookup(self->remote_watchers, req.path);
    if (!names) {
        names = zlistx_new();
        if (!names)
            return;
        zlistx_set_duplicator(names, (zlistx_duplicator_fn *)strdup);
        zlistx_set_destructor(names, (zlistx_destructor_fn *)zstr_free);
        zlistx_set_comparator(names, (zlistx_comparator_fn *)strcmp);
        zhashx_insert(self->remote_watchers, req.path, names);
    }
    if (!zlistx_find(names, peer->name))
        zlistx_add_end(names, peer->name);
    //  Our own watch; an absent actor answers TERMINATED at once
    fq_watch(self->ctx, req.path);
}

static void s_on_gw_terminated(s_self_t *self, s_peer_t *peer, const fq_msg_t *msg)
{
    fq_gw_terminated_t notice;
    if (fq_msg_decode(msg, &fq_gw_terminated_desc, &notice)) {
        self->malformed++;
        return;
    }
    //  Delete at the cursor: zlistx then steps the cursor back, so the
    //  next zlistx_next yields the following watch. (Reading ahead with
    //  zlistx_next before zlistx_find moved the cursor made that read-ahead
    //  item come round again after the deletion and be used once freed when
    //  two watchers watched the same path.)
    for (s_watch_t *watch = zlistx_first(peer->watches); watch; watch = zlistx_next(peer->watches))
        if (streq(watch->path, notice.path)) {
            s_tell_terminated(self, watch->watcher, watch->target, notice.failed, notice.reason);
            zlistx_delete(peer->watches, zlistx_cursor(peer->watches));
        }
}

//  Whether a peer's message of type is for the gateway itself rather than
//  for an actor behind it.
static bool s_gateway_own(uint32_t type)
{
    return type == FQ_MSG_GW_HELLO || type == FQ_MSG_GW_WELCOME || type == FQ_MSG_GW_REHELLO ||
           type == FQ_MSG_GW_HEARTBEAT || type == FQ_MSG_GW_BYE || type == FQ_MSG_GW_WATCH ||
           type == FQ_MSG_GW_TERMINATED;
}

//  Everything a peer sends. Malformed frames are counted and dropped; the
//  peer and the gateway carry on.
static void s_on_frame(s_self_t *self, zframe_t *routing_id, const char *key, const void *data,
                       size_t size)
{
    self->frames_in++;
    msgpack_zone_clear(&self->zone);
    fq_envelope_t env;
    //  Only the gateway's own messages have their body decoded here; the
    //  others' bodies are delivered as they came (s_deliver)
    if (fq_envelope_decode_head(data, size, &self->zone, &env) ||
        (s_gateway_own(env.type) && fq_envelope_decode_body(&self->zone, &env))) {
        if (self->malformed++ % FQ_MALFORMED_LOG_EVERY == 0)
            fq_log(FQ_LOG_WARNING, "gateway: dropped a malformed frame of %zu bytes (%llu so far)",
                   size, (unsigned long long)self->malformed);
        return;
    }
    fq_msg_t msg = {.type = env.type, .body = env.body, .zone = &self->zone};
    s_peer_t *peer = NULL;
    if (routing_id) {
        //  Bound side: find the peer by its connection
        for (s_peer_t *p = zhashx_first(self->peers_by_name); p;
             p = zhashx_next(self->peers_by_name))
            if (zframe_eq(p->routing_id, routing_id)) {
                peer = p;
                break;
            }
        if (env.type == FQ_MSG_GW_HELLO) {
            fq_gw_hello_t hello;
            if (fq_msg_decode(&msg, &fq_gw_hello_desc, &hello) || !fq_name_valid(hello.system)) {
                self->malformed++;
                return;
            }
            s_peer_t *same_name = zhashx_lookup(self->peers_by_name, hello.system);
            if (same_name && !streq(same_name->key, key)) {
                //  A name belongs to one key: another key may not take it over
                self->refused++;
                fq_log(FQ_LOG_WARNING, "gateway: refused %s: name held by another key",
                       hello.system);
                return;
            }
            if (same_name)
                s_peer_lost(self, same_name, "replaced by a new connection");
            if (peer && peer != same_name)
                s_peer_lost(self, peer, "renamed itself");
            peer = s_peer_new(hello.system, routing_id, key);
            if (!peer || zhashx_insert(self->peers_by_name, peer->name, peer) != 0) {
                s_peer_destroy((void **)&peer);
                return;
            }
            fq_log(FQ_LOG_INFO, "gateway: peer %s joined", peer->name);
            fq_gw_welcome_t welcome = {.system = fq_system_name(fq_ctx_system(self->ctx)),
                                       .version = S_PROTOCOL_VERSION};
            s_send_control(self, peer, &fq_gw_welcome_desc, &welcome, S_SEND_DONTWAIT);
            return;
        }
        if (!peer) {
            //  We restarted, or it skipped HELLO: ask it to introduce itself
            s_peer_t stranger = {.routing_id = routing_id};
            s_send_control(self, &stranger, &fq_gw_rehello_desc, &(fq_gw_rehello_t){0},
                           S_SEND_DONTWAIT);
            return;
        }
    } else {
        if (env.type == FQ_MSG_GW_WELCOME) {
            fq_gw_welcome_t welcome;
            if (fq_msg_decode(&msg, &fq_gw_welcome_desc, &welcome) ||
                !fq_name_valid(welcome.system)) {
                self->malformed++;
                return;
            }
            if (self->server)
                s_peer_lost(self, self->server, "welcomed again");
            self->server = s_peer_new(welcome.system, NULL, self->cfg->server_key);
            if (self->server &&
                zhashx_insert(self->peers_by_name, self->server->name, self->server) != 0)
                s_peer_destroy((void **)&self->server);
            //  Joined: the next loss starts a fresh round, without waiting
            self->reconnect_delay = self->cfg->reconnect_min_ms;
            self->tried = 0;
            fq_log(FQ_LOG_INFO, "gateway: joined %s at %s", welcome.system, s_endpoint(self));
            return;
        }
        if (env.type == FQ_MSG_GW_REHELLO) {
            s_send_hello(self);
            return;
        }
        peer = self->server;
        if (!peer)
            return; //  Not welcomed yet: nothing else is meaningful
    }
    peer->last_seen = zclock_mono();
    switch (env.type) {
    case FQ_MSG_GW_HEARTBEAT:
        break;
    case FQ_MSG_GW_BYE:
        if (peer == self->server)
            s_server_lost(self, S_GOODBYE);
        else
            s_peer_lost(self, peer, S_GOODBYE);
        break;
    case FQ_MSG_GW_WATCH:
        s_on_gw_watch(self, peer, &msg);
        break;
    case FQ_MSG_GW_TERMINATED:
        s_on_gw_terminated(self, peer, &msg);
        break;
    default:
        s_deliver(self, peer, &env);
    }
}

static int s_on_router(fq_ctx_t *ctx, void *state, zsock_t *sock)
{
    (void)ctx;
    s_self_t *self = state;
    //  Drain a batch, then let the loop serve the mailbox too
    for (int i = 0; i < 256; i++) {
        zmsg_t *frames = zmsg_recv_nowait(sock);
        if (!frames)
            break;
        zframe_t *routing_id = zmsg_pop(frames);
        zframe_t *body = zmsg_pop(frames);
        if (routing_id && body && zmsg_size(frames) == 0) {
            const char *key = zframe_meta(body, "User-Id");
            s_on_frame(self, routing_id, key ? key : "", zframe_data(body), zframe_size(body));
        } else
            self->malformed++;
        zframe_destroy(&routing_id);
        zframe_destroy(&body);
        zmsg_destroy(&frames);
    }
    return 0;
}

static int s_on_dealer(fq_ctx_t *ctx, void *state, zsock_t *sock)
{
    (void)ctx;
    s_self_t *self = state;
    //  A frame (BYE) may make us move on: the DEALER read here is then
    //  gone, and a new one may have been made at the same address
    unsigned serial = self->dealer_serial;
    zmq_msg_t frame;
    zmq_msg_init(&frame);
    for (int i = 0; i < 256 && self->dealer == sock && self->dealer_serial == serial; i++) {
        if (zmq_msg_recv(&frame, zsock_resolve(sock), ZMQ_DONTWAIT) < 0)
            break;
        if (zmq_msg_more(&frame)) {
            //  Gateway frames are single-part; skip the whole message
            self->malformed++;
            while (zmq_msg_more(&frame) && zmq_msg_recv(&frame, zsock_resolve(sock), 0) >= 0)
                ;
            continue;
        }
        s_on_frame(self, NULL, "", zmq_msg_data(&frame), zmq_msg_size(&frame));
    }
    zmq_msg_close(&frame);
    return 0;
}

//  A socket monitor's event number (an event frame holds a 16-bit event
//  number and a 32-bit value; the endpoint follows); 0 when unreadable.
static uint16_t s_event_number(zmsg_t *event)
{
    zframe_t *head = zmsg_first(event);
    uint16_t number;
    if (!head || zframe_size(head) < sizeof number)
        return 0;
    memcpy(&number, zframe_data(head), sizeof number);
    return number;
}

//  The DEALER's connection dropped: the server's process died (or the
//  connection was cut), and ZeroMQ would only reconnect to the same
//  endpoint. Move on at once, whether or not it had welcomed us. Or, with
//  several endpoints, the connection was refused (a standby binds
//  nothing): the next endpoint at once too, quietly, since during a
//  failover this happens a few times a second.
static int s_on_monitor(fq_ctx_t *ctx, void *state, zsock_t *sock)
{
    (void)ctx;
    s_self_t *self = state;
    zmsg_t *event;
    while (self->monitor == sock && (event = zmsg_recv_nowait(sock)) != NULL) {
        uint16_t number = s_event_number(event);
        zmsg_destroy(&event);
        if (number == ZMQ_EVENT_CONNECT_RETRIED && !self->server && self->cfg->endpoint_count > 1) {
            char reason[S_REASON_SIZE];
            snprintf(reason, sizeof reason, "%s refused the connection", s_endpoint(self));
            s_move_on_logged(self, reason, FQ_LOG_DEBUG);
            break;
        }
        if (number != ZMQ_EVENT_DISCONNECTED)
            continue;
        if (self->server)
            s_server_lost(self, "connection dropped");
        else {
            char reason[S_REASON_SIZE];
            snprintf(reason, sizeof reason, "connection to %s dropped before a welcome",
                     s_endpoint(self));
            s_move_on(self, reason);
        }
        break;
    }
    return 0;
}

//  ---------------------------------------------------------------------
//  Messages from local actors

static void s_forward_out(s_self_t *self, const fq_msg_t *msg)
{
    char system[FQ_ADDRESS_MAX + 1];
    const char *path;
    s_peer_t *peer = NULL;
    if (fq_address_split(msg->to, system, sizeof system, &path) == 1)
        peer = s_peer_for(self, system);
    if (peer && s_send_frame(self, peer, msg->frame, msg->frame_size, S_SEND_WAIT) == 0)
        return;
    atomic_fetch_add(&fq_ctx_system(self->ctx)->dead_letters, 1);
    if ((msg->flags & FQ_ENV_ASK) && msg->sender[0] == '/') {
        fq_error_t error = {.code = FQ_EPEER, .text = "remote system not connected"};
        fq_reply(self->ctx, msg, &fq_error_desc, &error);
    }
}

static void s_watch_remote(s_self_t *self, const fq_msg_t *msg, bool watch)
{
    fq_watch_remote_t req;
    if (fq_msg_decode(msg, &fq_watch_remote_desc, &req))
        return;
    char system[FQ_ADDRESS_MAX + 1];
    const char *path;
    s_peer_t *peer = NULL;
    if (fq_address_split(req.target, system, sizeof system, &path) == 1)
        peer = s_peer_for(self, system);
    if (!watch) {
        if (!peer)
            return;
        for (s_watch_t *w = zlistx_first(peer->watches); w; w = zlistx_next(peer->watches))
            if (streq(w->target, req.target) && streq(w->watcher, req.watcher)) {
                zlistx_delete(peer->watches, zlistx_cursor(peer->watches));
                break;
            }
        return;
    }
    if (!peer) {
        s_tell_terminated(self, req.watcher, req.target, true, "remote system not connected");
        return;
    }
    s_watch_t *entry = calloc(1, sizeof *entry);
    if (!entry)
        return;
    entry->target = strdup(req.target);
    entry->path = strdup(path);
    entry->watcher = strdup(req.watcher);
    zlistx_add_end(peer->watches, entry);
    fq_gw_watch_t remote = {.path = path};
    s_send_control(self, peer, &fq_gw_watch_desc, &remote, S_SEND_WAIT);
}

//  One of our actors that a peer watches has stopped: tell the peer.
static void s_local_terminated(s_self_t *self, const fq_msg_t *msg)
{
    fq_terminated_t notice;
    if (fq_msg_decode(msg, &fq_terminated_desc, &notice))
        return;
    zlistx_t *names = zhashx_lookup(self->remote_watchers, notice.path);
    if (!names)
        return;
    fq_gw_terminated_t remote = {
        .path = notice.path, .failed = notice.failed, .reason = notice.reason};
    for (const char *name = zlistx_first(names); name; name = zlistx_next(names)) {
        s_peer_t *peer = zhashx_lookup(self->peers_by_name, name);
        if (peer)
            s_send_control(self, peer, &fq_gw_terminated_desc, &remote, S_SEND_WAIT);
    }
    zhashx_delete(self->remote_watchers, notice.path);
}

static void s_heartbeat(s_self_t *self)
{
    int64_t now = zclock_mono();
    s_peer_t *peer = zhashx_first(self->peers_by_name);
    while (peer) {
        s_peer_t *next = zhashx_next(self->peers_by_name);
        char reason[128] = "";
        if (now - peer->last_seen > self->cfg->heartbeat_timeout_ms)
            snprintf(reason, sizeof reason, "no heartbeat for %d ms",
                     self->cfg->heartbeat_timeout_ms);
        else if (peer->stalled_since && now - peer->stalled_since > self->cfg->heartbeat_timeout_ms)
            snprintf(reason, sizeof reason, "not reading what it is sent for %d ms",
                     self->cfg->heartbeat_timeout_ms);
        if (reason[0]) {
            if (peer == self->server)
                s_server_lost(self, reason);
            else
                s_peer_lost(self, peer, reason);
            //  The hash changed under the cursor: start over next tick
            return;
        }
        if (now - peer->last_sent >= self->cfg->heartbeat_ms)
            s_send_control(self, peer, &fq_gw_heartbeat_desc, &(fq_gw_heartbeat_t){0},
                           S_SEND_DONTWAIT);
        peer = next;
    }
    if (!self->cfg->connect)
        return;
    if (!self->dealer && now >= self->reconnect_at)
        s_dealer_open(self);
    else if (self->dealer && !self->server &&
             now - self->dealer_since > self->cfg->welcome_timeout_ms) {
        char reason[S_REASON_SIZE];
        snprintf(reason, sizeof reason, "no welcome from %s in %d ms", s_endpoint(self),
                 self->cfg->welcome_timeout_ms);
        s_move_on(self, reason);
    }
}

static int s_receive(fq_ctx_t *ctx, void *state, const fq_msg_t *msg)
{
    s_self_t *self = state;
    if (msg->to[0]) {
        s_forward_out(self, msg);
        return 0;
    }
    if (msg->flags & FQ_ENV_REMOTE)
        return 0;
    switch (msg->type) {
    case FQ_MSG_GW_HEARTBEAT:
        s_heartbeat(self);
        break;
    case FQ_MSG_WATCH_REMOTE:
        s_watch_remote(self, msg, true);
        break;
    case FQ_MSG_UNWATCH_REMOTE:
        s_watch_remote(self, msg, false);
        break;
    case FQ_MSG_TERMINATED:
        s_local_terminated(self, msg);
        break;
    case FQ_MSG_GW_STATUS_QUERY: {
        fq_gw_status_t status = {.connected = self->cfg->connect ? self->server != NULL : true,
                                 .peers = (uint32_t)zhashx_size(self->peers_by_name),
                                 .frames_in = self->frames_in,
                                 .frames_out = self->frames_out,
                                 .malformed = self->malformed,
                                 .refused = self->refused};
        fq_reply(ctx, msg, &fq_gw_status_desc, &status);
        break;
    }
    default:
        break;
    }
    return 0;
}

static void s_stop(fq_ctx_t *ctx, void *state)
{
    (void)ctx;
    s_self_t *self = state;
    //  Say goodbye so peers need not wait out the heartbeat timeout
    for (s_peer_t *peer = zhashx_first(self->peers_by_name); peer;
         peer = zhashx_next(self->peers_by_name))
        s_send_control(self, peer, &fq_gw_bye_desc, &(fq_gw_bye_t){.reason = "stopping"},
                       S_SEND_DONTWAIT);
    s_dealer_close(self);
    if (self->router)
        fq_ctx_remove_reader(ctx, self->router);
    zsock_destroy(&self->router);
    zactor_destroy(&self->auth);
    zhashx_destroy(&self->peers_by_name);
    zhashx_destroy(&self->remote_watchers);
    msgpack_zone_destroy(&self->zone);
    msgpack_sbuffer_destroy(&self->buf);
    free(self);
}

static void s_zlistx_destroy(void **item)
{
    zlistx_destroy((zlistx_t **)item);
}

static int s_start_state(fq_ctx_t *ctx, void *args, void **state_p)
{
    s_config_t *cfg = args;
    s_self_t *self = calloc(1, sizeof *self);
    if (!self)
        return FQ_ENOMEM;
    *state_p = self;
    self->ctx = ctx;
    self->cfg = cfg;
    self->reconnect_delay = cfg->reconnect_min_ms;
    msgpack_zone_init(&self->zone, 8192);
    msgpack_sbuffer_init(&self->buf);
    self->peers_by_name = zhashx_new();
    self->remote_watchers = zhashx_new();
    if (!self->peers_by_name || !self->remote_watchers)
        return FQ_ENOMEM;
    zhashx_set_destructor(self->peers_by_name, s_peer_destroy);
    zhashx_set_destructor(self->remote_watchers, s_zlistx_destroy);
    if (cfg->bind) {
        if (!cfg->insecure) {
            //  zauth checks each connecting key against the allow list
            self->auth = zactor_new(zauth, NULL);
            if (!self->auth)
                return FQ_ENOMEM;
            zstr_sendx(self->auth, "CURVE", cfg->allow_dir, NULL);
            zsock_wait(self->auth);
        }
        self->router = zsock_new(ZMQ_ROUTER);
        if (!self->router)
            return FQ_ENOMEM;
        zsock_set_linger(self->router, 0);
        zsock_set_router_mandatory(self->router, 1);
        //  A full pipe to one peer may hold the gateway up only briefly:
        //  every other peer's heartbeats wait behind it.
        int wait_ms = cfg->heartbeat_ms / 2 > 0 ? cfg->heartbeat_ms / 2 : 1;
        zsock_set_sndtimeo(self->router, wait_ms < fq_ctx_system(ctx)->config.send_timeout_ms
                                             ? wait_ms
                                             : fq_ctx_system(ctx)->config.send_timeout_ms);
        zsock_set_maxmsgsize(self->router, (int)FQ_ENVELOPE_MAX_SIZE);
        if (!cfg->insecure) {
            zcert_apply(cfg->cert, self->router);
            zsock_set_curve_server(self->router, 1);
            zsock_set_zap_domain(self->router, S_ZAP_DOMAIN);
        }
        if (zsock_bind(self->router, "%s", cfg->bind) < 0) {
            fq_log(FQ_LOG_ERROR, "gateway: could not bind %s: %s", cfg->bind, zmq_strerror(errno));
            return FQ_EINVAL;
        }
        int rc = fq_ctx_add_reader(ctx, self->router, s_on_router);
        if (rc)
            return rc;
    }
    if (cfg->connect)
        s_dealer_open(self);
    //  The heartbeat tick also drives reconnects and peer expiry
    int tick = cfg->heartbeat_ms < cfg->heartbeat_timeout_ms / 3 ? cfg->heartbeat_ms
                                                                 : cfg->heartbeat_timeout_ms / 3;
    if (tick < 1)
        tick = 1;
    int timer = fq_timer_every(ctx, tick, &fq_gw_heartbeat_desc, &(fq_gw_heartbeat_t){0});
    return timer < 0 ? timer : 0;
}

//  The runtime runs stop only after a successful start, so a failed start
//  releases what it made itself. Above all the zauth actor: it holds the
//  process-wide ZAP endpoint, and the restart that follows a failure (a
//  bind to a port in use fails every time) aborted in zauth binding it again.
static int s_start(fq_ctx_t *ctx, void *args, void **state_p)
{
    int rc = s_start_state(ctx, args, state_p);
    if (rc < 0 && *state_p) {
        s_stop(ctx, *state_p);
        *state_p = NULL;
    }
    return rc;
}

static const fq_behaviour_t s_gateway = {
    .name = "gateway", .start = s_start, .receive = s_receive, .stop = s_stop};

static int s_default(int value, int fallback)
{
    return value > 0 ? value : fallback;
}

//  What s_admit_copy says when memory ran out (not the configuration's fault).
static const char s_out_of_memory[] = "out of memory";

//  Copies the admission table into cfg. Returns NULL, or what is wrong.
static const char *s_admit_copy(s_config_t *cfg, const fq_gateway_admit_t *admit, size_t count)
{
    if (count == 0 || !admit)
        return NULL;
    cfg->admit = calloc(count, sizeof *cfg->admit);
    if (!cfg->admit)
        return s_out_of_memory;
    for (size_t i = 0; i < count; i++) {
        const fq_gateway_admit_t *row = &admit[i];
        if (row->path && !fq_path_valid(row->path))
            return "an admission row names an invalid path";
        if (!row->kinds ||
            (row->kinds & ~(unsigned)(FQ_ADMIT_TELL | FQ_ADMIT_ASK | FQ_ADMIT_REPLY)))
            return "an admission row has no valid kinds";
        cfg->admit[i] = (fq_gateway_admit_t){row->type, NULL, row->kinds};
        cfg->admit_count = i + 1;
        if (row->path && !(cfg->admit[i].path = strdup(row->path)))
            return s_out_of_memory;
    }
    return NULL;
}

//  Whether key is a CURVE public key in Z85: libzmq asserts on one that
//  does not decode, so it is checked before it gets there.
static bool s_z85_key_valid(const char *key)
{
    uint8_t decoded[32];
    return key && strlen(key) == 40 && zmq_z85_decode(decoded, key) != NULL;
}

//  Whether cert holds a secret key: zcert_load reads the secret from the
//  "_secret" file beside the public one and leaves it all zeros when that
//  file is missing. Such a certificate cannot complete a CURVE handshake:
//  fairqd would start and no sender could ever join.
static bool s_cert_has_secret(zcert_t *cert)
{
    const byte *secret = zcert_secret_key(cert);
    for (int i = 0; i < 32; i++)
        if (secret[i])
            return true;
    return false;
}

//  Checks the allow directory as zauth will read it. Returns NULL, or what
//  is wrong: zauth fails closed on a missing or unreadable directory
//  (every peer refused) without a word, so it is refused here, loudly.
static const char *s_allow_dir_problem(const char *dir, char *problem, size_t size)
{
    struct stat st;
    if (stat(dir, &st) != 0)
        snprintf(problem, size, "allow_dir %s: %s", dir, strerror(errno));
    else if (!S_ISDIR(st.st_mode))
        snprintf(problem, size, "allow_dir %s is not a directory", dir);
    else {
        DIR *listing = opendir(dir);
        if (!listing)
            snprintf(problem, size, "allow_dir %s cannot be read: %s", dir, strerror(errno));
        else
            closedir(listing);
    }
    return *problem ? problem : NULL;
}

bool fq_gateway_endpoints_valid(const char *list, char *problem, size_t size)
{
    size_t count = 0;
    for (const char *element = list; element; count++) {
        const char *separator = strchr(element, FQ_GATEWAY_ENDPOINT_SEPARATOR);
        int len = separator ? (int)(separator - element) : (int)strlen(element);
        if (count == FQ_GATEWAY_ENDPOINTS_MAX) {
            snprintf(problem, size, "more than %d endpoints in \"%.*s\"", FQ_GATEWAY_ENDPOINTS_MAX,
                     FQ_PATH_MAX, list);
            return false;
        }
        if (len == 0) {
            snprintf(problem, size, "endpoint %zu of \"%.*s\" is empty", count + 1, FQ_PATH_MAX,
                     list);
            return false;
        }
        if (len <= (int)strlen(S_ENDPOINT_SCHEME) ||
            strncmp(element, S_ENDPOINT_SCHEME, strlen(S_ENDPOINT_SCHEME)) != 0) {
            snprintf(problem, size, "endpoint \"%.*s\" is not " S_ENDPOINT_SCHEME "HOST:PORT",
                     len < FQ_PATH_MAX ? len : FQ_PATH_MAX, element);
            return false;
        }
        element = separator ? separator + 1 : NULL;
    }
    return true;
}

//  Splits the connect list into cfg->endpoints. Returns NULL, or what is
//  wrong with the list (written into problem).
static const char *s_endpoints_split(s_config_t *cfg, char *problem, size_t size)
{
    if (!fq_gateway_endpoints_valid(cfg->connect, problem, size))
        return problem;
    cfg->endpoint_text = strdup(cfg->connect);
    if (!cfg->endpoint_text)
        return s_out_of_memory;
    for (char *element = cfg->endpoint_text; element;) {
        cfg->endpoints[cfg->endpoint_count++] = element;
        element = strchr(element, FQ_GATEWAY_ENDPOINT_SEPARATOR);
        if (element)
            *element++ = 0;
    }
    return NULL;
}

int fq_gateway_start(fq_system_t *sys, const fq_gateway_config_t *in)
{
    if (!in || (!in->bind && !in->connect)) {
        fq_log(FQ_LOG_ERROR, "gateway: nothing to bind or connect");
        return FQ_EINVAL;
    }
    s_config_t *cfg = calloc(1, sizeof *cfg);
    if (!cfg)
        return FQ_ENOMEM;
    cfg->bind = s_strdup_or_null(in->bind);
    cfg->connect = s_strdup_or_null(in->connect);
    cfg->allow_dir = s_strdup_or_null(in->allow_dir);
    cfg->server_key = s_strdup_or_null(in->server_key);
    cfg->insecure = in->insecure;
    const char *problem = s_admit_copy(cfg, in->admit, in->admit_count);
    char problem_text[FQ_PATH_MAX + 128] = "";
    if (!problem && cfg->connect)
        problem = s_endpoints_split(cfg, problem_text, sizeof problem_text);
    cfg->heartbeat_ms = s_default(in->heartbeat_ms, FQ_GATEWAY_HEARTBEAT_MS);
    cfg->heartbeat_timeout_ms =
        s_default(in->heartbeat_timeout_ms, FQ_GATEWAY_HEARTBEAT_TIMEOUT_MS);
    cfg->welcome_timeout_ms = cfg->heartbeat_timeout_ms < FQ_GATEWAY_WELCOME_TIMEOUT_MS
                                  ? cfg->heartbeat_timeout_ms
                                  : FQ_GATEWAY_WELCOME_TIMEOUT_MS;
    cfg->reconnect_min_ms = s_default(in->reconnect_min_ms, FQ_GATEWAY_RECONNECT_MIN_MS);
    cfg->reconnect_max_ms = s_default(in->reconnect_max_ms, FQ_GATEWAY_RECONNECT_MAX_MS);
    if (!problem && cfg->insecure)
        fq_log(FQ_LOG_WARNING,
               "gateway: insecure mode, no CURVE authentication or encryption: any host that "
               "reaches %s can act as a peer (never use this in production)",
               cfg->bind ? cfg->bind : cfg->connect);
    else if (!problem) {
        cfg->cert = in->cert        ? zcert_dup(in->cert)
                    : in->cert_file ? zcert_load(in->cert_file)
                                    : NULL;
        if (!cfg->cert && in->cert_file)
            snprintf(problem_text, sizeof problem_text, "could not load the CURVE certificate %.*s",
                     FQ_PATH_MAX, in->cert_file);
        if (!cfg->cert)
            problem = *problem_text ? problem_text
                                    : "a CURVE certificate (cert or cert_file) is required";
        else if (!s_cert_has_secret(cfg->cert))
            problem = "the CURVE certificate has no secret key (its _secret file is missing)";
        else if (cfg->bind && !cfg->allow_dir)
            problem = "binding needs allow_dir, the directory of allowed peer certificates";
        else if (cfg->bind &&
                 s_allow_dir_problem(cfg->allow_dir, problem_text, sizeof problem_text))
            problem = problem_text;
        else if (cfg->connect && !s_z85_key_valid(cfg->server_key))
            problem = "connecting needs server_key, the server's 40-character Z85 public key";
        else if (cfg->bind && atomic_exchange(&s_zap_claimed, true))
            problem = "another CURVE-bound gateway runs in this process (zauth serves one)";
        else
            cfg->holds_zap = cfg->bind != NULL;
    }
    if (problem) {
        fq_log(FQ_LOG_ERROR, "gateway: %s", problem);
        s_config_free(cfg);
        return problem == s_out_of_memory ? FQ_ENOMEM : FQ_EINVAL;
    }
    fq_spawn_opts_t opts = fq_spawn_opts_default();
    opts.args_free = s_config_free;
    return fq_system_spawn_system(sys, "gateway", &s_gateway, cfg, &opts);
}

int fq_gateway_wait_connected(fq_system_t *sys, int timeout_ms)
{
    fq_client_t *client = fq_client_new(sys);
    if (!client)
        return FQ_ENOMEM;
    int64_t deadline = zclock_mono() + timeout_ms;
    int rc = FQ_ETIMEDOUT;
    while (zclock_mono() < deadline) {
        fq_msg_t reply;
        fq_gw_status_t status;
        if (fq_client_ask(client, FQ_GATEWAY_PATH, &fq_gw_status_query_desc,
                          &(fq_gw_status_query_t){0}, 500, &reply) == 0 &&
            fq_msg_decode(&reply, &fq_gw_status_desc, &status) == 0 && status.connected) {
            rc = 0;
            break;
        }
        zclock_sleep(20);
    }
    fq_client_destroy(&client);
    return rc;
}
