/*  fq_messages.h — typed messages of fairq's actors and of the sender
    protocol, generated from fq_messages.def. */
#ifndef FQ_MESSAGES_H
#define FQ_MESSAGES_H

#include "fq_sysmsg.h"
#include "fq_system.h"

#define FQ_SCHEMA_FILE "fq_messages.def"
#include "fq_schema_declare.h"
#undef FQ_SCHEMA_FILE

//  The sender protocol's version, said in WELCOME (sender/PROTOCOL.md).
#define FQ_SENDER_PROTOCOL 1

//  Answers a STATS_QUERY with count counters: keys[i] = values[i].
void fq_stats_reply(fq_ctx_t *ctx, const fq_msg_t *query, const char *const *keys,
                    const uint64_t *values, size_t count);

//  Asks the actor at path to DRAIN, again every few milliseconds, until it
//  answers that nothing is left in flight or timeout_ms passes. Returns
//  what was left at its last answer (0: drained), or -1 if it never
//  answered. For a main thread stopping its system cleanly.
int fq_drain_wait(fq_system_t *sys, const char *path, int timeout_ms);

#endif
