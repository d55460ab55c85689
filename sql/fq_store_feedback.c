/*  fq_store_feedback.c — bounces and complaints that arrive after
    delivery (see fq_store_feedback.h).
*/
#include "fq_store_feedback.h"
#include "fq_error.h"
#include "fq_store_internal.h"
#include "fq_utf8.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  Longest detail kept: the schema's events and suppressions detail checks.
#define S_DETAIL_MAX 2000

//  One statement, one transaction. The message is matched by id and by
//  its recipient lowercased ($2, or $3 when given); its event is inserted
//  unless it has one of this type (0022: the conflict is skipped); only a
//  new event suppresses, so a report posted again, after an operator took
//  the address off the list, does not put it back. $6 says whether this
//  report suppresses: every complaint when suppress_complaints ($7), a
//  bounce when suppress_bounces' pattern ($8) matches its status ($9) or
//  its diagnostic's reply ($10, the text after its type: "smtp; 550 ..."
//  is matched as "550 ...", where a basic code is the first word, as in
//  the nack batch's match of an SMTP reply).
static const char *const S_RECORD_SQL =
    "WITH m AS (SELECT id, tenant_id, request_id, recipient,"
    "    lower(recipient) IN (lower($2::text), lower(coalesce($3::text, $2::text))) AS same"
    "  FROM fairq.messages WHERE id = $1::bigint),"
    " matched AS (SELECT * FROM m WHERE same),"
    " evented AS (INSERT INTO fairq.event_rows"
    "   (tenant_id, request_id, message_id, type, recipient, detail)"
    "  SELECT tenant_id, request_id, id, $4::fairq.event_type, recipient, $5::text FROM matched"
    "  ON CONFLICT (message_id, type) WHERE type IN ('message.bounced', 'message.complained')"
    "  DO NOTHING RETURNING tenant_id, recipient),"
    " suppressed AS (INSERT INTO fairq.suppressions (tenant_id, address, reason, detail)"
    "  SELECT tenant_id, lower(recipient), $6::fairq.suppression_reason, $5::text FROM evented"
    "  WHERE CASE WHEN $6::text = 'complaint' THEN $7::boolean"
    "    ELSE $8::text <> '' AND (coalesce($9::text, '') ~ $8::text"
    "      OR regexp_replace(coalesce($10::text, ''), '^[[:alnum:]-]+;[[:space:]]*', '')"
    "         ~ $8::text) END"
    "   AND octet_length(recipient) BETWEEN 3 AND 320"
    "   AND recipient !~ '[[:space:][:cntrl:]]'"
    "  ON CONFLICT DO NOTHING RETURNING 1)"
    " SELECT (SELECT count(*) FROM m), (SELECT count(*) FROM matched),"
    "  (SELECT count(*) FROM evented), (SELECT count(*) FROM suppressed),"
    "  m.tenant_id, m.request_id, t.name"
    " FROM (SELECT 1) one LEFT JOIN m ON true LEFT JOIN fairq.tenants t ON t.id = m.tenant_id";

const char *fq_feedback_outcome_name(fq_feedback_outcome_t outcome)
{
    switch (outcome) {
    case FQ_FEEDBACK_RECORDED:
        return "recorded";
    case FQ_FEEDBACK_DUPLICATE:
        return "duplicate";
    case FQ_FEEDBACK_NO_MESSAGE:
        return "no_such_message";
    case FQ_FEEDBACK_OTHER_RECIPIENT:
        return "other_recipient";
    }
    return "unknown";
}

//  A copy of text fit for a parameter: invalid UTF-8 replaced by '?' (the
//  server refuses the statement otherwise), control characters by spaces
//  (a folded diagnostic keeps none), cut to max bytes at a character's
//  start. NULL for NULL, and when memory runs out (*nomem set).
static char *s_clean(const char *text, size_t max, bool *nomem)
{
    if (!text)
        return NULL;
    size_t length = strnlen(text, max);
    //  Back to a character's start, so the cut leaves no half character
    while (length < strlen(text) && length > 0 && ((unsigned char)text[length] & 0xC0) == 0x80)
        length--;
    char *copy = strndup(text, length);
    if (!copy) {
        *nomem = true;
        return NULL;
    }
    fq_utf8_replace_invalid(copy, length, '?');
    for (char *at = copy; *at; at++)
        if ((unsigned char)*at < 0x20 || *at == 0x7f)
            *at = ' ';
    return copy;
}

int fq_store_feedback_record(fq_store_t *self, const fq_feedback_t *feedback,
                             const fq_feedback_policy_t *policy, fq_feedback_result_t *result)
{
    memset(result, 0, sizeof *result);
    if (!feedback->recipient || !*feedback->recipient)
        return fq_store_fail(self, FQ_EINVAL, "could not record feedback: no recipient");
    if (feedback->message_id <= 0)
        return fq_store_fail(self, FQ_EINVAL, "could not record feedback: no message id");
    bool bounce = feedback->kind == FQ_FEEDBACK_BOUNCE;
    if (!bounce && feedback->kind != FQ_FEEDBACK_COMPLAINT)
        return fq_store_fail(self, FQ_EINVAL, "could not record feedback: unknown kind");
    bool nomem = false;
    char *recipient = s_clean(feedback->recipient, S_DETAIL_MAX, &nomem);
    char *original = s_clean(feedback->original_recipient, S_DETAIL_MAX, &nomem);
    char *status = s_clean(feedback->status, S_DETAIL_MAX, &nomem);
    char *diagnostic = s_clean(feedback->diagnostic, S_DETAIL_MAX, &nomem);
    fq_buf_t joined = {0};
    if (status && *status)
        nomem |= fq_buf_add_str(&joined, status) != 0;
    if (diagnostic && *diagnostic)
        nomem |= fq_buf_printf(&joined, "%s%s", joined.size ? " " : "", diagnostic) != 0;
    char *detail = nomem ? NULL : s_clean(joined.size ? joined.data : "", S_DETAIL_MAX, &nomem);
    fq_buf_free(&joined);
    char id[FQ_STORE_INT_TEXT];
    snprintf(id, sizeof id, "%lld", (long long)feedback->message_id);
    const char *params[] = {id,
                            recipient,
                            original && *original ? original : NULL,
                            bounce ? "message.bounced" : "message.complained",
                            detail && *detail ? detail : NULL,
                            bounce ? "bounce" : "complaint",
                            policy && policy->suppress_complaints ? "true" : "false",
                            policy && policy->bounce_pattern ? policy->bounce_pattern : "",
                            status,
                            diagnostic};
    int rc = 0;
    PGresult *res = NULL;
    if (nomem)
        rc = fq_store_fail(self, FQ_ENOMEM, "out of memory");
    else
        res =
            fq_store_query(self, S_RECORD_SQL, 10, params, PGRES_TUPLES_OK, "record feedback", &rc);
    free(recipient);
    free(original);
    free(status);
    free(diagnostic);
    free(detail);
    if (!res)
        return rc;
    int64_t found = fq_store_int64(res, 0, 0), matched = fq_store_int64(res, 0, 1);
    int64_t evented = fq_store_int64(res, 0, 2);
    result->suppressed = fq_store_int64(res, 0, 3) > 0;
    result->tenant_id = fq_store_int64(res, 0, 4);
    result->request_id = fq_store_int64(res, 0, 5);
    if (!PQgetisnull(res, 0, 6))
        snprintf(result->tenant, sizeof result->tenant, "%s", PQgetvalue(res, 0, 6));
    result->outcome = !found     ? FQ_FEEDBACK_NO_MESSAGE
                      : !matched ? FQ_FEEDBACK_OTHER_RECIPIENT
                      : evented  ? FQ_FEEDBACK_RECORDED
                                 : FQ_FEEDBACK_DUPLICATE;
    PQclear(res);
    return 0;
}
