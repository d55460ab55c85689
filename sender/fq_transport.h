/*  fq_transport.h — how fairq-sender delivers one message.

    A transport takes one rendered message (the dispatcher rendered the
    templates already) and delivers it, answering delivered, a transient
    failure (try again later: a 4xx-like answer, a connection that failed)
    or a permanent one (a 5xx-like answer: the message is dead). Two kinds
    of transient failure say that the moment failed rather than the
    message, so that fairqd slows the destination down instead of
    counting an attempt: the receiver throttles (THROTTLED), or no
    connection to it could be made (UNREACHABLE). One
    transport object belongs to one thread; fairq-sender gives each of its
    delivery workers its own, so an SMTP connection is reused by one worker
    for message after message.

    Kinds:
    * smtp — libcurl: smtp:// (with STARTTLS when the server offers it, or
      required with starttls = "require") and smtps://, optional AUTH;
    * file — appends each message, as a full RFC 5322 message in mbox
      format ("From " line first), to a file, under an exclusive lock so
      that several workers and processes may share one file;
    * null — accepts everything and delivers nothing (benchmarks); with a
      path it appends one line per message to it, "<unix time in ns>
      <message id> <tenant> <request id>", so a benchmark sees the order
      and time of deliveries;
    * http — libcurl: one HTTP(S) request per message, to the message's
      URL (its to), with its method, headers and body, over a connection
      kept alive from message to message (fq_transport_http.h);
    * exec — runs a command per message, the message on its stdin and its
      particulars in the environment (fq_transport_exec.h).

    A message has a channel: "email" (or "", an older fairqd's) is mail,
    which the smtp, file and exec kinds render as RFC 5322 text; any other
    channel ("http", "sms", ...) is a body with headers. Which transport
    serves which channel is fairq-sender's choice (fq_sender.h): the http
    kind serves the channel "http", the mail kinds "email", exec any.

    The smtp and file kinds write the same RFC 5322 text (fq_mime.h): Date,
    From, To, Subject (RFC 2047 encoded when not ASCII), a stable
    Message-ID derived from the message id, MIME-Version, Content-Type
    text/plain or text/html in UTF-8, then the extra headers given.
*/
#ifndef FQ_TRANSPORT_H
#define FQ_TRANSPORT_H

#include "fq_channel.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

//  One message to deliver; every string is borrowed for the call.
typedef struct {
    uint64_t id; //  fairq's message id: stable over retries
    const char *tenant;
    uint64_t request_id;
    uint32_t attempt; //  1 for the first attempt
    const char *to;
    const char *from;
    const char *subject; //  Rendered, one line
    const char *body;    //  Rendered
    bool body_is_html;
    //  The plain-text alternative of an HTML body; NULL or "": none. With
    //  one, the message is multipart/alternative (fq_mime.h)
    const char *text_body;
    size_t nheaders; //  Extra headers, names and values
    const char *const *header_names;
    const char *const *header_values;
    //  The channel: NULL, "" or "email" for mail; else its name ("http")
    const char *channel;
    //  http: the request's method (POST, PUT, PATCH, DELETE, GET); NULL
    //  or "": POST
    const char *method;
    //  Mail with one-click unsubscribe: its List-Unsubscribe field's value,
    //  written with List-Unsubscribe-Post (fq_mime.h); NULL or "": none
    const char *list_unsubscribe;
} fq_delivery_t;

//  msg's channel, "email" when it names none.
const char *fq_delivery_channel(const fq_delivery_t *msg);

//  A delivery's outcome. THROTTLED and UNREACHABLE are transient too
//  (retry later), and more: fairq-sender's NACK carries them as its
//  deferral (docs/protocol.md), which costs the message no attempt.
typedef enum {
    FQ_DELIVERY_OK = 0,
    FQ_DELIVERY_TRANSIENT = 1, //  Retry later
    FQ_DELIVERY_PERMANENT = 2, //  Never retry
    //  Retry later, slower: the receiver asked us to slow down (an SMTP
    //  421 or 454, an HTTP 429), whatever the message
    FQ_DELIVERY_THROTTLED = 3,
    //  Retry later: no connection to the receiver could be made (refused,
    //  its name not resolved, no answer before the connect timeout)
    FQ_DELIVERY_UNREACHABLE = 4,
} fq_delivery_result_t;

//  The longest wait a transport reports (Retry-After): a day. A receiver
//  asking for more is not believed; fairqd's own backoff takes over.
#define FQ_TRANSPORT_RETRY_AFTER_MAX_S 86400

typedef struct {
    const char *kind; //  "smtp", "file", "null", "http" or "exec"
    //  smtp
    const char *url;      //  smtp://host:port or smtps://host:port
    const char *username; //  NULL or "": no AUTH
    const char *password;
    const char *starttls; //  "try" (default), "require" or "never"
    //  smtp, http: do not verify the server's certificate (tests)
    bool insecure_tls;
    //  smtp, http, exec: longest one delivery may take; 0 = default (30 s)
    int timeout_ms;
    const char *helo; //  Name said in EHLO; NULL = libcurl's default
    //  http: longest the connection may take to open (TCP and TLS); 0 =
    //  default (10 s), never more than timeout_ms
    int connect_timeout_ms;
    //  http: the CA certificates (PEM) the server's is checked against;
    //  NULL or "": the system's
    const char *ca_file;
    //  exec: the command, an absolute program path and its arguments
    //  split on blanks (no shell, no quoting)
    const char *command;
    //  file (the mbox), or null (its delivery log; NULL or "": none)
    const char *path;
    //  Domain of the Message-ID (<fairq.ID@domain>); NULL or "": the
    //  From address's domain
    const char *message_id_domain;
} fq_transport_config_t;

typedef struct fq_transport fq_transport_t;

//  A size for the error buffers below that holds any reason in full: an
//  SMTP reply line may be 512 characters long (RFC 5321, 4.5.3.1.5).
#define FQ_TRANSPORT_ERROR_SIZE 1024

//  A transport of cfg->kind; NULL with the reason in error (an unknown
//  kind, a bad URL, a file that cannot be opened for appending). cfg's
//  strings are copied. An smtp transport connects at its first delivery,
//  so a new one checks a configuration without a server.
fq_transport_t *fq_transport_new(const fq_transport_config_t *cfg, char *error, size_t error_size);

//  Closes the transport's connection (QUIT) or file and frees it; nulls
//  *self_p, so a second call does nothing.
void fq_transport_destroy(fq_transport_t **self_p);

//  Delivers msg. On a failure, error holds a one-line reason; for SMTP the
//  server's own reply ("550 5.1.1 <x@y>: no such user"), for HTTP the
//  status and the start of the response's body ("HTTP 400: bad field"),
//  for exec the exit and the first line the command wrote to stderr, so
//  an operator sees what the receiver said.
//
//  *retry_after_s (retry_after_s may be NULL) is set to the seconds the
//  receiver asked to wait before a retry (HTTP's Retry-After on a
//  transient failure, at most FQ_TRANSPORT_RETRY_AFTER_MAX_S), 0 when it
//  asked nothing.
//
//  PERMANENT is for what no retry can cure: a 5xx reply to this message
//  (to MAIL FROM, RCPT TO, DATA or the data), or a message that cannot be
//  rendered (a CR or LF in its subject, a recipient that is not one
//  address). Everything else is transient: 4xx replies, connections that
//  fail or time out, and 5xx replies to the session (a refused AUTH, a
//  greeting that refuses us), which are the sender's configuration and
//  would otherwise fail every message for good. Of those, a reply that
//  throttles is THROTTLED (fq_smtp_classify in fq_transport_smtp.h says
//  which), a connection that could not be made UNREACHABLE
//  (fq_transport_curl_failure), the rest TRANSIENT. A TLS handshake that
//  fails is TRANSIENT, not UNREACHABLE: the server answered, and the
//  failure is a certificate or a setting, which no back-off cures. The
//  http and exec kinds say in their headers what they count as which.
//  Error buffers of FQ_TRANSPORT_ERROR_SIZE bytes hold any reason whole.
fq_delivery_result_t fq_transport_deliver(fq_transport_t *self, const fq_delivery_t *msg,
                                          uint32_t *retry_after_s, char *error, size_t error_size);

//  For the kinds: writes len bytes of text from outside (a response body,
//  a command's stderr) to out (size bytes, NUL-terminated) as one line
//  fit for a log and the database: cut at the first line end and to fit
//  without splitting a character, each other control character made a
//  space, each byte that is not UTF-8 a '?'.
void fq_transport_text_line(char *out, size_t size, const char *text, size_t len);

//  For the libcurl kinds (smtp, http): libcurl's global set-up, done once
//  per process by whichever thread comes first. 0, or FQ_EINVAL with the
//  reason in error.
int fq_transport_curl_init(char *error, size_t error_size);

//  For the libcurl kinds: how a transfer that failed with curl_code (a
//  CURLcode) without an answer of the server counts. connected: whether
//  it had a connection to the server, new or kept
//  (fq_transport_curl_connected). UNREACHABLE when none could be made:
//  the name did not resolve, the connection was refused (or had no
//  route), or the time ran out before it was made; TRANSIENT for anything
//  else (a TLS failure, a connection lost, a server that stalls).
fq_delivery_result_t fq_transport_curl_failure(int curl_code, bool connected);

//  Whether the last transfer of curl (a CURL *) had a connection to its
//  server, one made or one kept from before: libcurl names the server's
//  address only once connected.
bool fq_transport_curl_connected(void *curl);

#endif
