/*  fq_dispatch_batch.h — the messages of one DISPATCH bound for one sender,
    gathered while they are rendered and sent as one MESSAGES frame
    (docs/protocol.md, protocol 2).

    Across a CURVE gateway every frame is encrypted, sent, received and
    decrypted on its own, and crosses two inproc hops on each side: one
    frame per DISPATCH instead of one per message takes most of that work
    off fairqd, the gateway and the sender. Only senders whose HELLO listed
    "batch" get them; the others get one MSG per message. */
#ifndef FQ_DISPATCH_BATCH_H
#define FQ_DISPATCH_BATCH_H

#include "fq_messages.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

//  A batch is sent once it holds this many messages or bytes of subject,
//  body, text_body and extra headers (names and values: up to 8 KiB a
//  message, FQ_MAIL_HEADERS_BYTES_MAX), whichever comes first, so one frame stays
//  small next to the gateway's 64 MB limit and the sender starts on the
//  first ones early.
#define FQ_DISPATCH_BATCH_MESSAGES 256
#define FQ_DISPATCH_BATCH_BYTES    (1024 * 1024)

//  One message gathered, with what the dispatcher records once it is sent.
typedef struct {
    int64_t request_id, tenant_id;
    int64_t latency_ms; //  Its dispatch latency (-1: not a first attempt)
    //  One block its to and headers point into, freed with it: a message
    //  rendered for a channel other than mail (an http request's URL and
    //  headers, channels/fq_channel.h), or mail's List-Unsubscribe value
    //  (its list_unsubscribe); NULL when they are borrowed
    void *owned;
} fq_dispatch_batch_item_t;

typedef struct {
    fq_message_t *messages; //  subject, body, text_body (and item.owned) owned, the others borrowed
    fq_dispatch_batch_item_t *items;
    uint32_t count, capacity;
    size_t bytes;
} fq_dispatch_batch_t;

//  Adds message, taking its subject, body and text_body (malloc'ed, or
//  NULL for none: subject and text_body then go as ""; freed by the batch)
//  and item.owned; its other strings must outlive the batch's next clear.
//  Returns 0, or FQ_ENOMEM with nothing taken.
int fq_dispatch_batch_add(fq_dispatch_batch_t *self, const fq_message_t *message,
                          fq_dispatch_batch_item_t item);

//  True once the batch should go (FQ_DISPATCH_BATCH_MESSAGES or _BYTES).
bool fq_dispatch_batch_full(const fq_dispatch_batch_t *self);

//  The MESSAGES frame of what it holds.
fq_messages_t fq_dispatch_batch_frame(const fq_dispatch_batch_t *self);

//  Empties it (frees the subjects and bodies), keeping its memory.
void fq_dispatch_batch_clear(fq_dispatch_batch_t *self);

//  Frees everything.
void fq_dispatch_batch_release(fq_dispatch_batch_t *self);

#endif
