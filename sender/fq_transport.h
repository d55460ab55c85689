/*  fq_transport.h — how fairq-sender delivers one message.

    A transport takes one rendered message (the dispatcher rendered the
    templates already) and delivers it, answering delivered, a transient
    failure (try again later: a 4xx-like answer, a connection that failed)
    or a permanent one (a 5xx-like answer: the message is dead). One
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
      and time of deliveries.

    The smtp and file kinds write the same RFC 5322 text (fq_mime.h): Date,
    From, To, Subject (RFC 2047 encoded when not ASCII), a stable
    Message-ID derived from the message id, MIME-Version, Content-Type
    text/plain or text/html in UTF-8, then the extra headers given.
*/
#ifndef FQ_TRANSPORT_H
#define FQ_TRANSPORT_H

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
} fq_delivery_t;

typedef enum {
    FQ_DELIVERY_OK = 0,
    FQ_DELIVERY_TRANSIENT = 1, //  Retry later
    FQ_DELIVERY_PERMANENT = 2, //  Never retry
} fq_delivery_result_t;

typedef struct {
    const char *kind; //  "smtp", "file" or "null"
    //  smtp
    const char *url;      //  smtp://host:port or smtps://host:port
    const char *username; //  NULL or "": no AUTH
    const char *password;
    const char *starttls; //  "try" (default), "require" or "never"
    bool insecure_tls;    //  Do not verify the server's certificate (tests)
    int timeout_ms;       //  Per delivery; 0 = default (30 s)
    const char *helo;     //  Name said in EHLO; NULL = libcurl's default
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
//  server's own reply ("550 5.1.1 <x@y>: no such user"), so an operator
//  sees what the mail server said.
//
//  PERMANENT is for what no retry can cure: a 5xx reply to this message
//  (to MAIL FROM, RCPT TO, DATA or the data), or a message that cannot be
//  rendered (a CR or LF in its subject, a recipient that is not one
//  address). Everything else is TRANSIENT: 4xx replies, connections that
//  fail or time out, and 5xx replies to the session (a refused AUTH, a
//  greeting that refuses us), which are the sender's configuration and
//  would otherwise fail every message for good.
//  Error buffers of FQ_TRANSPORT_ERROR_SIZE bytes hold any reason whole.
fq_delivery_result_t fq_transport_deliver(fq_transport_t *self, const fq_delivery_t *msg,
                                          char *error, size_t error_size);

#endif
