/*  fq_transport_smtp.h — the smtp kind of fq_transport, private to sender/.

    fq_transport.c renders each message (fq_mime.h) and hands the text
    here; this half owns the libcurl handle and so the connection that
    successive deliveries share.
*/
#ifndef FQ_TRANSPORT_SMTP_H
#define FQ_TRANSPORT_SMTP_H

#include "fq_transport.h"

typedef struct fq_smtp fq_smtp_t;

//  An SMTP client for cfg (kind "smtp"): checks the URL (smtp:// or
//  smtps:// with a host), starttls and helo; connects only at the first
//  delivery. NULL with the reason in error.
fq_smtp_t *fq_smtp_new(const fq_transport_config_t *cfg, char *error, size_t error_size);

//  Closes the connection (QUIT) and frees; safe on NULL, nulls *self_p.
void fq_smtp_destroy(fq_smtp_t **self_p);

//  Sends text (len bytes, msg as fq_mime_render wrote it) from msg->from
//  to msg->to, over the connection of the previous delivery when the
//  server kept it open. On a failure, error holds the server's reply, or
//  libcurl's reason when the server gave none. A failure with a reply is
//  classified by fq_smtp_classify; one without, by
//  fq_transport_curl_failure (UNREACHABLE when no connection was made).
fq_delivery_result_t fq_smtp_send(fq_smtp_t *self, const fq_delivery_t *msg, const char *text,
                                  size_t len, char *error, size_t error_size);

//  How a refusal counts: the reply (code, and its text whole, code first,
//  the lines of a reply of several joined by spaces), and whether it
//  answered a command of the mail transaction (MAIL, RCPT, DATA, the
//  data) or of the session (the greeting, EHLO, STARTTLS, AUTH).
//
//  * 5yz to the transaction: PERMANENT; 5yz to the session: TRANSIENT
//    (the sender's configuration, the same for every message);
//  * THROTTLED, at any stage, the greeting included:
//    - 421, whatever its text;
//    - 451 with an enhanced code 4.7.x ("451 4.7.500 Server busy");
//    - 452 and 454 ("454 Throttling failure: Maximum sending rate
//      exceeded");
//    - any other 4yz whose text says "rate limit" ("rate-limit",
//      "ratelimit"), "throttl" or "too many", in any case;
//    but, 421 aside, not a 4yz whose enhanced code is 4.2.x, the
//    recipient's mailbox (Gmail's "452 4.2.2 The email account that you
//    tried to reach is over quota", "450 4.2.1 too many messages for this
//    mailbox"): one recipient's state, which says nothing of the server's
//    pace, and which would never cost its message an attempt;
//  * any other 4yz: TRANSIENT ("451 4.3.0 try later").
fq_delivery_result_t fq_smtp_classify(long code, const char *reply, bool in_transaction);

#endif
