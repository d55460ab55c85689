/*  fq_store_feedback.h — bounces and complaints that arrive after
    delivery (a DSN, an ARF report, or their JSON form: POST /v1/feedback,
    api/API.md), recorded against the message they name. Defined in
    fq_store_feedback.c; the connection and its errors are fq_store.h's;
    docs/feedback.md, "Bounces and complaints that arrive later", says how
    operators wire it.

    A report names a message by fairq's own Message-ID (the message's id)
    and a recipient. It is matched only when that message exists and went
    to that recipient (compared lowercased): a report that is forged or
    mistaken, naming a Message-ID with another address, touches nothing.
    A match writes one event (message.bounced or message.complained, 0018)
    and, as the policy says, suppresses the address for the message's
    tenant (reason bounce or complaint, 0019), in one statement, so one
    transaction. The same report recorded again writes nothing: a message
    has at most one event of each of these types (0022's unique index).
*/
#ifndef FQ_STORE_FEEDBACK_H
#define FQ_STORE_FEEDBACK_H

#include "fq_limits.h"
#include "fq_store.h"
#include <stdbool.h>
#include <stdint.h>

typedef enum {
    FQ_FEEDBACK_BOUNCE = 1, //  A DSN: message.bounced, reason bounce
    FQ_FEEDBACK_COMPLAINT,  //  An ARF report: message.complained, reason complaint
} fq_feedback_kind_t;

//  One report of one recipient. Strings are the caller's; each may be
//  NULL but recipient. Invalid UTF-8 is replaced, control characters
//  become spaces, and the detail is cut to the schema's 2000 bytes.
typedef struct {
    fq_feedback_kind_t kind;
    int64_t message_id;             //  From the Message-ID (fq_report_fairq_id)
    const char *recipient;          //  The report's recipient (DSN: Final-Recipient)
    const char *original_recipient; //  Matched too when given (DSN: Original-Recipient)
    const char *status;             //  A bounce's status code (5.1.1)
    //  A bounce's Diagnostic-Code ("smtp; 550 5.1.1 ..."), a complaint's
    //  feedback type ("abuse"). The event's and the suppression's detail
    //  is status and this, with a space between
    const char *diagnostic;
} fq_feedback_t;

//  What suppresses.
typedef struct {
    //  Bounces whose status or diagnostic reply the pattern matches: the
    //  pattern of fairqd's suppress_bounces (fq_store_bounce_pattern), the
    //  same that suppresses hard bounces at SMTP time; NULL or "": none
    const char *bounce_pattern;
    bool suppress_complaints; //  Every complaint (fairqd's suppress_complaints)
} fq_feedback_policy_t;

typedef enum {
    FQ_FEEDBACK_RECORDED = 0,    //  Its event written (and suppressed, as the policy says)
    FQ_FEEDBACK_DUPLICATE,       //  The message has this event already: nothing written
    FQ_FEEDBACK_NO_MESSAGE,      //  No such message (never made, or pruned)
    FQ_FEEDBACK_OTHER_RECIPIENT, //  The message went to another address: nothing written
} fq_feedback_outcome_t;

typedef struct {
    fq_feedback_outcome_t outcome;
    bool suppressed; //  Its address was added to the tenant's list now
    //  The message's tenant and request, when it exists (0 and "" when not)
    int64_t tenant_id;
    int64_t request_id;
    char tenant[FQ_TENANT_NAME_SIZE];
} fq_feedback_result_t;

//  The outcome's name, as the API answers it: "recorded", "duplicate",
//  "no_such_message", "other_recipient".
const char *fq_feedback_outcome_name(fq_feedback_outcome_t outcome);

//  Records feedback as the header says, into *result. Returns 0 (whatever
//  the outcome), FQ_EINVAL (no recipient, a kind that is none, an id not
//  positive), FQ_ENOMEM or FQ_EDB (then nothing was written).
int fq_store_feedback_record(fq_store_t *self, const fq_feedback_t *feedback,
                             const fq_feedback_policy_t *policy, fq_feedback_result_t *result);

#endif
