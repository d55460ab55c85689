/*  fq_feedback_names.h — the names of delivery feedback that several parts
    check by: the event types (fairq.event_type, migration 0018) and the
    suppression reasons (fairq.suppression_reason, 0019). The store reads
    and writes them, the API checks a query's type by them, the CLI its
    options: one list each, here, in the schema's order (the store's tests
    compare them with the schema's enums). */
#ifndef FQ_FEEDBACK_NAMES_H
#define FQ_FEEDBACK_NAMES_H

//  The event types, NULL-ended.
extern const char *const fq_event_types[];

//  The types as one text, for messages: "message.sent, message.deferred,
//  ..., request.cancelled".
#define FQ_EVENT_TYPES_TEXT                                                                        \
    "message.sent, message.deferred, message.dead, message.cancelled, message.rejected, "          \
    "message.suppressed, message.unsubscribed, message.bounced, message.complained, "              \
    "request.split, request.done, request.cancelled"

//  The type's static name when name is one of fq_event_types, else NULL.
const char *fq_event_type(const char *name);

//  The suppression reasons, NULL-ended; how many there are; the one of
//  the API and the CLI.
extern const char *const fq_suppression_reasons[];
#define FQ_SUPPRESSION_REASON_COUNT 4
#define FQ_SUPPRESSION_MANUAL       "manual"

//  The reasons as one text, for messages.
#define FQ_SUPPRESSION_REASONS_TEXT "manual, bounce, complaint, unsubscribe"

//  The reason's static name when name is one of fq_suppression_reasons,
//  else NULL.
const char *fq_suppression_reason(const char *name);

#endif
