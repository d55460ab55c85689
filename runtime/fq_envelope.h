/*  fq_envelope.h — the one frame format every actor message travels in.

    An envelope is a msgpack array [type, flags, corr, sender, to, body]:
    type is the message id, corr the ask correlation id (0 for a tell),
    sender the address replies go to, to the target address (nil for a
    local mailbox, set when the frame goes through a gateway) and body the
    schema-encoded message. The same bytes cross inproc mailboxes and the
    tcp gateway, so a remote actor is addressed exactly like a local one.
*/
#ifndef FQ_ENVELOPE_H
#define FQ_ENVELOPE_H

#include "fq_schema.h"

enum {
    FQ_ENV_ASK = 1,    //  The sender waits for a reply carrying corr
    FQ_ENV_REPLY = 2,  //  This is the reply to the sender's ask corr
    FQ_ENV_REMOTE = 4, //  Arrived through the gateway from another system
};

//  Largest frame the runtime accepts, local or remote.
#define FQ_ENVELOPE_MAX_SIZE (64u * 1024u * 1024u)

//  Most msgpack items one frame may hold. Each decoded item costs about 50
//  bytes of memory against one byte on the wire, so without a cap a 64 MB
//  frame of nils from a peer would cost gigabytes to decode.
#define FQ_MSGPACK_MAX_ITEMS 1000000u

//  A body already encoded: the msgpack bytes of one object, as a frame
//  carried them.
typedef struct {
    const char *data;
    size_t size;
} fq_raw_body_t;

typedef struct {
    uint32_t type;
    uint32_t flags;
    uint64_t corr;
    const char *sender; //  NUL-terminated, "" when unknown; lives in the zone
    const char *to;     //  NUL-terminated, "" when local; lives in the zone
    //  The body decoded; NULL when only the head was (fq_envelope_decode_head)
    const msgpack_object *body;
    fq_raw_body_t raw; //  The body's bytes, within the frame decoded
} fq_envelope_t;

//  Appends an envelope to buf. sender and to may be NULL. Either desc and
//  msg (typed body) or raw_body (a body as another frame carried it, whole:
//  fq_envelope_t.raw) gives the body.
int fq_envelope_encode(msgpack_sbuffer *buf, uint32_t type, uint32_t flags, uint64_t corr,
                       const char *sender, const char *to, const fq_msgdesc_t *desc,
                       const void *msg, const fq_raw_body_t *raw_body);

//  Decodes untrusted bytes into env; strings and the body live in zone and
//  in data, both of which must outlive env. Returns 0 or FQ_EDECODE.
//  fq_envelope_decode_head and then fq_envelope_decode_body.
int fq_envelope_decode(const void *data, size_t size, msgpack_zone *zone, fq_envelope_t *env);

//  Checks the whole frame (fq_msgpack_check) and decodes its head: every
//  field but the body, which is left as its bytes (env->raw; env->body is
//  NULL). What only routes a frame needs no more: a frame in transit
//  through a gateway is not unpacked there, nor its body packed again.
int fq_envelope_decode_head(const void *data, size_t size, msgpack_zone *zone, fq_envelope_t *env);

//  Decodes env->raw into env->body, in zone. Returns 0 or FQ_EDECODE.
int fq_envelope_decode_body(msgpack_zone *zone, fq_envelope_t *env);

//  Checks that data holds exactly one well-formed msgpack object whose
//  declared container sizes fit in the bytes present, so that decoding
//  cannot be made to allocate more than the frame's size justifies.
int fq_msgpack_check(const void *data, size_t size);

#endif
