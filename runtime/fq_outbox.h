/*  fq_outbox.h — one thread's sending side (internal).

    Each actor thread, and each external client, owns an outbox: an encode
    buffer and a cache of PUSH sockets connected to the mailboxes it has
    sent to. ZeroMQ sockets belong to one thread, so outboxes are never
    shared. A remote address goes to the local gateway's mailbox with the
    full address in the envelope's to field.
*/
#ifndef FQ_OUTBOX_H
#define FQ_OUTBOX_H

#include "fq_envelope.h"

typedef struct fq_system fq_system_t;
typedef struct fq_outbox fq_outbox_t;

fq_outbox_t *fq_outbox_new(fq_system_t *sys);
void fq_outbox_destroy(fq_outbox_t **self_p);

//  Encodes and sends one envelope to address (see fq_envelope_encode for
//  the body arguments). Returns 0, FQ_EINVAL, FQ_ENOACTOR, FQ_EFULL,
//  FQ_EPEER (remote address and no gateway) or FQ_ENOMEM.
int fq_outbox_send(fq_outbox_t *self, const char *to, uint32_t type, uint32_t flags, uint64_t corr,
                   const char *sender, const fq_msgdesc_t *desc, const void *msg,
                   const fq_raw_body_t *raw_body);

//  Sends an already encoded envelope to a local path as it is.
int fq_outbox_send_frame(fq_outbox_t *self, const char *path, const void *frame, size_t size);

//  Registers watcher's death watch on address (local or remote). If there
//  is no such local actor, TERMINATED goes to watcher at once.
int fq_outbox_watch(fq_outbox_t *self, const char *watcher, const char *address, bool watch);

#endif
