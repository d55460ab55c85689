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
//  libcurl's reason when the server gave none.
fq_delivery_result_t fq_smtp_send(fq_smtp_t *self, const fq_delivery_t *msg, const char *text,
                                  size_t len, char *error, size_t error_size);

#endif
