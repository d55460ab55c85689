/*  fq_http_policy.h — the defaults of the HTTP server's connection policy
    (fq_http.h), which fairqd's configuration table offers as its keys'
    defaults (fairqd/fq_fairqd_keys.h): one value each, in one place. It
    lives here, beside the configuration engine, because both the HTTP
    server (api/) and fairqd's table read it.

    Every open connection holds a slot and a file until it is closed, idle
    or not, and a client that takes them all shuts everyone else out. So
    the server bounds them in total and per client address, and closes a
    connection that stays silent.

    * FQ_HTTP_CONNECTIONS_MAX 1000: far more than the callers of an API of
      this kind (a few applications, the fairq CLI, a metrics scraper)
      keep open, each a file descriptor: fairqd raises its soft limit of
      open files to fit them (fq_http_new).
    * FQ_HTTP_CONNECTIONS_PER_IP 64: an application's pool of keep-alive
      connections (urllib3 keeps 10 per host, libcurl's multi interface
      up to a few dozen) fits with room, while one address, connecting
      and never sending, holds at most this many slots: it takes sixteen
      addresses to fill the total.
    * FQ_HTTP_IDLE_TIMEOUT_S 10: a connection is closed once it has been
      silent this long: waiting for a request on a kept-alive connection,
      or in the middle of one (a client sending its headers or body a byte
      at a time holds a slot no longer than the time between its bytes).
      A live client sends a request's pieces well within it, and one
      reconnecting after a pause pays one TCP handshake.
*/
#ifndef FQ_HTTP_POLICY_H
#define FQ_HTTP_POLICY_H

//  Plain numbers: fairqd's configuration table shows them as text.
#define FQ_HTTP_CONNECTIONS_MAX    1000
#define FQ_HTTP_CONNECTIONS_PER_IP 64
#define FQ_HTTP_IDLE_TIMEOUT_S     10

#endif
