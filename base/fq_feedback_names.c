/*  fq_feedback_names.c — event types and suppression reasons (see
    fq_feedback_names.h). */
#include "fq_feedback_names.h"
#include <stddef.h>
#include <string.h>

const char *const fq_event_types[] = {"message.sent",
                                      "message.deferred",
                                      "message.dead",
                                      "message.cancelled",
                                      "message.rejected",
                                      "message.suppressed",
                                      "message.unsubscribed",
                                      "message.bounced",
                                      "message.complained",
                                      "request.split",
                                      "request.done",
                                      "request.cancelled",
                                      NULL};

const char *const fq_suppression_reasons[] = {"manual", "bounce", "complaint", "unsubscribe", NULL};

_Static_assert(sizeof fq_suppression_reasons / sizeof fq_suppression_reasons[0] ==
                   FQ_SUPPRESSION_REASON_COUNT + 1,
               "FQ_SUPPRESSION_REASON_COUNT");

//  The static name in names (NULL-ended) that name is, or NULL.
static const char *s_find(const char *const *names, const char *name)
{
    for (size_t i = 0; name && names[i]; i++)
        if (strcmp(name, names[i]) == 0)
            return names[i];
    return NULL;
}

const char *fq_event_type(const char *name)
{
    return s_find(fq_event_types, name);
}

const char *fq_suppression_reason(const char *name)
{
    return s_find(fq_suppression_reasons, name);
}
