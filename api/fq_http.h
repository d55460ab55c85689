/*  fq_http.h — fairqd's HTTP API server (api/API.md; its settings are in
    docs/operations.md).

    libmicrohttpd serves the API from a small pool of threads. Each pool
    thread opens its own PostgreSQL connection the first time it needs one
    (one fq_store_t per thread, as libpq connections are not shared),
    checks before each call that the server has not closed it meanwhile
    (a database restart), and connects again after the database was lost;
    while it cannot, calls answer 503 and the server itself stays up.

    Connections are bounded in total, per client address and in how long
    they may stay silent (fq_http_policy.h); requests whose framing is
    ambiguous (Content-Length and Transfer-Encoding together, two lengths)
    are refused and their connection closed, so that nothing after them is
    read as a request of its own.

    The server reads what the actors know (messages in flight, send rates,
    each actor's mailbox) from the shared fq_metrics_t and the actor
    system; everything else comes from the database, so several fairqd
    processes may serve the same database.
*/
#ifndef FQ_HTTP_H
#define FQ_HTTP_H

#include "fq_http_policy.h"
#include "fq_metrics.h"
#include "fq_store.h"
#include "fq_system.h"
#include "fq_unsubscribe_token.h"
#include <stdbool.h>
#include <stddef.h>

typedef struct {
    const char *listen;      //  "host:port" ("[::1]:8080" for IPv6); port 0 picks one
    const char *database;    //  libpq connection string of the pool threads
    size_t body_max;         //  Largest request body, in bytes (413 beyond)
    int threads;             //  Size of the thread pool
    bool metrics_public;     //  GET /metrics without a token
    fq_metrics_t *metrics;   //  Borrowed; may be NULL
    fq_system_t *system;     //  Borrowed, for per-actor figures; may be NULL
    const fq_lease_t *lease; // Borrowed, who leads, for /healthz; may be NULL
    int connections_max;     //  Connections open at once; 0: FQ_HTTP_CONNECTIONS_MAX
    int connections_per_ip;  //  Of them from one address; 0: FQ_HTTP_CONNECTIONS_PER_IP
    int idle_timeout_s;      //  Silence that closes one; 0: FQ_HTTP_IDLE_TIMEOUT_S
    fq_tenant_defaults_t tenant_defaults; //  What a tenant created without them gets
    //  What reports posted to POST /v1/feedback suppress: the codes of
    //  suppress_bounces as written (fq_store_bounce_pattern's list; NULL
    //  or "": no bounce does) and suppress_complaints. Fixed at start, as
    //  the pipeline's pattern of the same codes is
    const char *suppress_bounces;
    bool suppress_complaints;
    //  One-click unsubscribe (docs/feedback.md): the public base URL of
    //  its links (NULL or "": off, and a submit or a tenant asking for it
    //  is refused with 400, as its mail could not carry the link); and,
    //  for fairqd's public unsubscribe listener, the key its tokens open
    //  with (copied): a server given one serves the unsubscribe pages
    //  (GET and POST /u/TOKEN) and nothing else, the admin API not at all
    const char *unsubscribe_url;
    const unsigned char *unsubscribe_key;
} fq_http_config_t;

//  The largest body the unsubscribe listener reads: a one-click POST is
//  "List-Unsubscribe=One-Click" (26 bytes), as a form or a multipart body
//  of a few hundred; more is no unsubscribe, and a public listener should
//  hold little for whoever sends it.
#define FQ_HTTP_UNSUBSCRIBE_BODY_MAX 4096

typedef struct fq_http fq_http_t;

//  Starts serving. Every connection is a file: when the process's soft
//  limit of open files (RLIMIT_NOFILE) is too low for connections_max and
//  what fairqd opens besides, it is raised, up to the hard limit. Returns
//  NULL with the reason in error (an address that does not parse or
//  resolve, a port in use, a hard limit too low for connections_max).
//  Borrows config's strings only during the call.
fq_http_t *fq_http_new(const fq_http_config_t *config, char *error, size_t error_size);

//  Stops accepting, finishes the calls in progress and closes the pool's
//  database connections. Safe twice.
void fq_http_destroy(fq_http_t **self_p);

//  The port it listens on (useful with port 0).
int fq_http_port(fq_http_t *self);

//  Takes the settings of config that may change while calls run (fairqd's
//  reload on SIGHUP): body_max (for the calls that come after),
//  metrics_public and tenant_defaults. Its other fields are ignored: they
//  were fixed when the server started. Any thread.
void fq_http_set_live(fq_http_t *self, const fq_http_config_t *config);

#endif
