/*  fq_gateway.h — the one transport for remote actors.

    The gateway is an actor (/system/gateway) that joins actor systems in
    different processes over ZeroMQ tcp: one side binds a ROUTER, the other
    connects a DEALER. Messages to "fq://name/path" or "tcp://host:port/path"
    reach it through the ordinary fq_tell, travel as the same envelopes,
    and are delivered on the far side as if sent locally; the sender's
    address is rewritten to fq://<its system>/<path> so replies find their
    way back.

    Security: CURVE. The bound side has a server certificate and an allow
    list (a directory of client public certificates, checked by zauth); a
    peer whose key is not listed never completes its handshake. Insecure
    mode (no CURVE) exists for development only and says so loudly.

    Admission: a peer is a remote party, not one of our actors. Of what it
    sends, only the rows of the admission table (message type, local path,
    and whether as a tell, an ask or a reply) reach an actor; everything
    else is refused and counted, and an ask is answered with an ERROR
    reply. The runtime's own messages (STOP, TERMINATED, watches, ...) never
    reach an actor from a peer, whatever the table says; a peer may watch
    only a path it may send to. Without a table nothing is admitted.

    Liveness (the Paranoid Pirate pattern): both sides send HEARTBEAT when
    idle; a peer silent for heartbeat_timeout_ms is dead, and every local
    watcher of its actors gets TERMINATED. The connecting side then drops
    its socket and connects anew, saying HELLO again. It also watches its
    TCP connection (a ZeroMQ socket monitor): a server whose process died
    has its connection closed by its kernel, and is lost at once rather
    than after the heartbeat timeout. A frozen server keeps its connection
    up, and the heartbeats catch it.

    Several servers: connect may list up to FQ_GATEWAY_ENDPOINTS_MAX
    endpoints, comma-separated ("tcp://a:5555,tcp://b:5555"), the
    instances of one service of which one at a time binds (a leader; the
    standbys bind nothing). The gateway connects to one endpoint at a time,
    the first to begin with. When the current one gives no WELCOME within
    the welcome timeout (the smaller of heartbeat_timeout_ms and
    FQ_GATEWAY_WELCOME_TIMEOUT_MS), or the server joined there is lost
    (heartbeat timeout, BYE, connection dropped), or refuses the TCP
    connection (nothing listens there: a standby), it tries the next one
    at once; between whole rounds of endpoints that failed it waits,
    doubling from reconnect_min_ms up to FQ_GATEWAY_ROUND_DELAY_MAX_MS (a
    failover lasts seconds, and a refused connection costs nothing), and
    starts over once joined. An address
    "tcp://X/path" where X is any endpoint of the list (or the list
    itself) reaches whichever server was joined. They share one server
    certificate: server_key is the same for all of them. With one endpoint
    this is the plain reconnect with back-off.
*/
#ifndef FQ_GATEWAY_H
#define FQ_GATEWAY_H

#include "fq_system.h"

//  How a peer's message may come, in fq_gateway_admit_t.kinds.
enum {
    FQ_ADMIT_TELL = 1,  //  A plain tell
    FQ_ADMIT_ASK = 2,   //  An ask, which the actor answers
    FQ_ADMIT_REPLY = 4, //  A reply to an ask of ours (FQ_MSG_ERROR may be one)
};

//  One row of the admission table: type may come to path as kinds. For
//  tests and meshes of trusted systems only, type 0 stands for every
//  application message (FQ_MSG_USER_FIRST and up) and a NULL path for every
//  path; a table that faces untrusted peers names each one.
typedef struct {
    uint32_t type;
    const char *path;
    unsigned kinds;
} fq_gateway_admit_t;

typedef struct {
    const char *bind;    //  Endpoint to accept peers on, e.g. "tcp://*:5555"; or NULL
    const char *connect; //  Endpoint(s) of the system to join, comma-separated; or NULL
    //  CURVE. cert: this system's certificate (secret key included), from
    //  cert_file or given directly (borrowed). allow_dir: public
    //  certificates of the peers allowed in (bind side). server_key: the
    //  Z85 public key of the system we connect to.
    const char *cert_file;
    zcert_t *cert;
    const char *allow_dir;
    const char *server_key;
    bool insecure; //  No CURVE at all: development only
    //  What peers may send here (copied); NULL or empty: nothing
    const fq_gateway_admit_t *admit;
    size_t admit_count;
    int heartbeat_ms;         //  Idle interval between heartbeats; 0 = default
    int heartbeat_timeout_ms; //  Silence after which a peer is dead; 0 = default
    int reconnect_min_ms;     //  First reconnect delay; 0 = default
    int reconnect_max_ms;     //  Cap of the doubling reconnect delay; 0 = default
} fq_gateway_config_t;

#define FQ_GATEWAY_HEARTBEAT_MS         1000
#define FQ_GATEWAY_HEARTBEAT_TIMEOUT_MS 3000
#define FQ_GATEWAY_RECONNECT_MIN_MS     100
#define FQ_GATEWAY_RECONNECT_MAX_MS     5000
//  Longest wait for an endpoint's WELCOME before trying the next: a
//  standby refuses the connection at once, so waiting longer only keeps
//  us from the leader.
#define FQ_GATEWAY_WELCOME_TIMEOUT_MS 1000
//  Longest wait between two rounds of a connect list's endpoints: a new
//  leader binds a few seconds after the old one died, and should be found
//  within a fraction of a second.
#define FQ_GATEWAY_ROUND_DELAY_MAX_MS 100
//  Most endpoints in a connect list: the instances of one service.
#define FQ_GATEWAY_ENDPOINTS_MAX 16
//  What separates a connect list's endpoints.
#define FQ_GATEWAY_ENDPOINT_SEPARATOR ','

//  Whether list is a valid connect list: 1 to FQ_GATEWAY_ENDPOINTS_MAX
//  endpoints separated by commas, none empty, each tcp://HOST:PORT (as far
//  as its scheme). When not, what is wrong is written into problem.
bool fq_gateway_endpoints_valid(const char *list, char *problem, size_t size);

//  Writes a new CURVE certificate: its public half to path, its secret
//  half to path_secret (readable by the owner only), as the gateway and
//  the sender load them. Returns 0, or -1 when a file cannot be written.
int fq_gateway_cert_make(const char *path);

//  `PROGRAM --make-cert PATH`, as fairqd and fairq-sender run it: makes the
//  certificate and says so on stdout, or says why not on stderr. Returns
//  the exit code: 0, or 1 when a file cannot be written.
int fq_gateway_cert_command(const char *program, const char *path);

//  Validates cfg, loads keys and spawns /system/gateway. Strings and the
//  admission table in cfg are copied. Returns 0, FQ_EINVAL (with a logged
//  reason: a certificate that is missing or lacks its secret key, an allow
//  directory that is missing, not a directory or unreadable, a malformed
//  admission row, a connect list that fq_gateway_endpoints_valid refuses)
//  or FQ_EEXIST. The bind itself happens later, in the gateway's own thread: a failed bind
//  fails the actor (restarts, then escalation), so wait for it with
//  fq_gateway_wait_connected and watch fq_system_failed.
int fq_gateway_start(fq_system_t *sys, const fq_gateway_config_t *cfg);

//  Blocks until the gateway has a welcomed connection to the system at
//  (one of) its connect endpoint(s), or timeout_ms passes. Returns 0 or FQ_ETIMEDOUT.
int fq_gateway_wait_connected(fq_system_t *sys, int timeout_ms);

#endif
