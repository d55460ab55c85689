/*  fq_messages.h — typed messages of fairq's actors and of the sender
    protocol, generated from fq_messages.def. */
#ifndef FQ_MESSAGES_H
#define FQ_MESSAGES_H

#include "fq_gateway.h"
#include "fq_sysmsg.h"
#include "fq_system.h"

#define FQ_SCHEMA_FILE "fq_messages.def"
#include "fq_schema_declare.h"
#undef FQ_SCHEMA_FILE

//  The sender protocol's version, said in WELCOME (docs/protocol.md).
//  2 added the batches: MESSAGES to a sender whose HELLO lists
//  FQ_SENDER_CAN_BATCH among its capabilities, and ACKS from a sender
//  welcomed with protocol 2 or later.
#define FQ_SENDER_PROTOCOL  2
#define FQ_SENDER_CAN_BATCH "batch"
//  A capability "max_rate=14/s": the sender's relay takes no more than
//  that rate, and fairqd hands it no more (actors/fq_relay_pace.h).
#define FQ_SENDER_CAN_MAX_RATE "max_rate="

//  A NACK's deferral (and a SETTLED's): the message did not fail, the
//  moment did. It costs no attempt and goes out again once its
//  destination's budget allows, which the throttling reply lowers and
//  repeated connection failures suspend (docs/fairness.md, "Destinations").
#define FQ_DEFERRAL_NONE        0
#define FQ_DEFERRAL_THROTTLED   1 //  421, 451 4.7.x, 452, 454; HTTP 429
#define FQ_DEFERRAL_UNREACHABLE 2 //  The connection could not be made

//  The protocol's two ends: fairqd's dispatcher and a sender's actor.
#define FQ_PROTOCOL_DISPATCHER_PATH "/user/dispatcher"
#define FQ_PROTOCOL_SENDER_PATH     "/user/sender"

//  The admission tables of the two gateways (fq_gateway.h): all that a
//  sender may send into fairqd (HELLO, CREDIT, ACK, ACKS, NACK, BYE to
//  the dispatcher), and all that fairqd may send into a sender (MSG,
//  MESSAGES, and the replies to its HELLO). Nothing else from the other side reaches an actor.
extern const fq_gateway_admit_t fq_protocol_fairqd_admit[];
extern const size_t fq_protocol_fairqd_admit_count;
extern const fq_gateway_admit_t fq_protocol_sender_admit[];
extern const size_t fq_protocol_sender_admit_count;

//  The next capability of a HELLO's comma-separated list at *at, spaces
//  around it dropped: its first character, with its length in *length;
//  *at moves past it and its comma (NULL after the last). NULL when *at
//  is NULL.
const char *fq_capability_next(const char **at, size_t *length);

//  Answers a STATS_QUERY with count counters: keys[i] = values[i].
void fq_stats_reply(fq_ctx_t *ctx, const fq_msg_t *query, const char *const *keys,
                    const uint64_t *values, size_t count);

//  Asks the actor at path to DRAIN, again every few milliseconds, until it
//  answers that nothing is left in flight or timeout_ms passes. Returns
//  what was left at its last answer (0: drained), or -1 if it never
//  answered. For a main thread stopping its system cleanly.
int fq_drain_wait(fq_system_t *sys, const char *path, int timeout_ms);

#endif
