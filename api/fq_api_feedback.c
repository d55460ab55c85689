/*  fq_api_feedback.c — POST /v1/feedback: bounces and complaints that
    arrive after delivery (api/API.md, "Feedback"; docs/feedback.md, "Bounces
    and complaints that arrive later"). An admin route: the operator's MTA
    pipe (fairq feedback) or bounce mailbox poller posts what came back.

    The body is a raw message, a DSN (RFC 3464) or an ARF report (RFC
    5965), read by reports/fq_report.h; or the JSON form, one report or an
    array of them, for a poller that parsed its mail itself. Each recipient
    of a report is recorded on its own (fq_store_feedback.h: matched by
    fairq's Message-ID and the recipient, once), and the answer says for
    each what became of it: recorded, duplicate, ignored (a report that
    is no permanent failure, or no complaint) or unmatched (and why).

    What counts: a DSN recipient whose Action is failed, with a permanent
    status (5.x.x) or none; a delayed, delivered, relayed or expanded one,
    or a failed one with a 4.x.x status (an MTA that gave up retrying: the
    address may be fine), records nothing. An ARF report whose
    Feedback-Type is abuse, fraud, virus or other is a complaint; not-spam
    and auth-failure (a DMARC failure report, about the domain, not the
    recipient) record nothing.
*/
#include "fq_api_internal.h"
#include "fq_log.h"
#include "fq_report.h"
#include "fq_store_feedback.h"
#include <stdlib.h>
#include <string.h>
#include <strings.h>

//  Reports in one JSON array: a poller's batch of one mailbox round.
#define S_JSON_REPORTS_MAX 1000

//  Room for a report's error, quoted in a 400.
#define S_ERROR_SIZE 256

//  What a bad value may be quoted with in a detail, at most.
#define S_QUOTE_MAX 60

//  The feedback types that are complaints (RFC 5965 7.3's registry; the
//  others are not about the recipient's wish).
static const char *const s_complaint_types[] = {"abuse", "fraud", "virus", "other", NULL};

//  The JSON form's keys.
static const char *const s_json_keys[] = {"type",   "message_id", "recipient", "original_recipient",
                                          "status", "detail",     NULL};

//  The answer being built: one result per recipient, and the counts.
typedef struct {
    json_t *results;
    int64_t recorded, duplicates, ignored, unmatched;
    bool nomem;
} s_answer_t;

//  One recipient of a report, as the handler takes it from either form.
typedef struct {
    fq_feedback_kind_t kind;
    const char *message_id; //  As the report gives it; NULL: none
    const char *recipient;
    const char *original_recipient;
    const char *action; //  DSN only
    const char *status;
    const char *diagnostic; //  Or a complaint's feedback type
} s_item_t;

static void s_result(s_answer_t *answer, const s_item_t *item, const char *outcome,
                     const char *reason, json_t *more)
{
    json_t *result =
        json_pack("{s:s, s:o, s:o, s:o, s:o, s:s}", "type",
                  item->kind == FQ_FEEDBACK_BOUNCE ? "bounce" : "complaint", "message_id",
                  item->message_id ? json_string(item->message_id) : json_null(), "recipient",
                  item->recipient ? json_string(item->recipient) : json_null(), "action",
                  item->action ? json_string(item->action) : json_null(), "status",
                  item->status ? json_string(item->status) : json_null(), "outcome", outcome);
    if (result && reason)
        json_object_set_new(result, "reason", json_string(reason));
    if (result && more)
        json_object_update(result, more);
    json_decref(more);
    if (!result || json_array_append_new(answer->results, result) != 0)
        answer->nomem = true;
}

//  Whether a bounce's status says the failure is permanent: 5.x.x, or no
//  status at all (the Action said failed).
static bool s_permanent(const char *status)
{
    return !status || !*status || status[0] == '5';
}

//  Records one item; false after answering the call (the database is
//  gone, or out of memory): the whole call then fails as the store's.
static bool s_record(fq_api_call_t *call, s_answer_t *answer, const s_item_t *item)
{
    char reason[S_ERROR_SIZE];
    if (item->kind == FQ_FEEDBACK_BOUNCE && item->action && strcmp(item->action, "failed") != 0) {
        snprintf(reason, sizeof reason, "action %.*s: only a failed delivery is a bounce",
                 S_QUOTE_MAX, item->action);
        answer->ignored++;
        s_result(answer, item, "ignored", reason, NULL);
        return true;
    }
    if (item->kind == FQ_FEEDBACK_BOUNCE && !s_permanent(item->status)) {
        snprintf(reason, sizeof reason, "status %.*s is no permanent failure", S_QUOTE_MAX,
                 item->status);
        answer->ignored++;
        s_result(answer, item, "ignored", reason, NULL);
        return true;
    }
    int64_t id = 0;
    const char *unmatched = NULL;
    if (!item->recipient || !*item->recipient)
        unmatched = "the report names no recipient";
    else if (!item->message_id)
        unmatched = "the report returns no Message-ID";
    else if (fq_report_fairq_id(item->message_id, &id) != 0)
        unmatched = "the Message-ID is not fairq's (<fairq.ID@domain>)";
    if (unmatched) {
        answer->unmatched++;
        s_result(answer, item, "unmatched", unmatched, NULL);
        return true;
    }
    fq_feedback_t feedback = {.kind = item->kind,
                              .message_id = id,
                              .recipient = item->recipient,
                              .original_recipient = item->original_recipient,
                              .status = item->status,
                              .diagnostic = item->diagnostic};
    fq_feedback_policy_t policy = {.bounce_pattern = call->server->bounce_pattern,
                                   .suppress_complaints = call->server->suppress_complaints};
    fq_feedback_result_t result;
    int rc = fq_store_feedback_record(call->store, &feedback, &policy, &result);
    if (rc) {
        fq_api_fail_store(call, rc);
        return false;
    }
    const char *outcome = fq_feedback_outcome_name(result.outcome);
    if (result.outcome == FQ_FEEDBACK_NO_MESSAGE || result.outcome == FQ_FEEDBACK_OTHER_RECIPIENT) {
        answer->unmatched++;
        //  Neither says whose the message is: the reason only
        s_result(answer, item, "unmatched",
                 result.outcome == FQ_FEEDBACK_NO_MESSAGE
                     ? "no such message (never made, or pruned)"
                     : "the message went to another recipient",
                 NULL);
        return true;
    }
    const char *event = item->kind == FQ_FEEDBACK_BOUNCE ? "message.bounced" : "message.complained";
    if (result.outcome == FQ_FEEDBACK_RECORDED) {
        answer->recorded++;
        fq_log(FQ_LOG_INFO, "feedback: message %lld of tenant \"%s\": %s%s", (long long)id,
               result.tenant, event, result.suppressed ? ", address suppressed" : "");
    } else
        answer->duplicates++;
    s_result(answer, item, outcome, NULL,
             json_pack("{s:I, s:s, s:I, s:s, s:b}", "message", (json_int_t)id, "tenant",
                       result.tenant, "request", (json_int_t)result.request_id, "event", event,
                       "suppressed", result.suppressed));
    return true;
}

//  ---------------------------------------------------------------------
//  A raw message

static void s_raw(fq_api_call_t *call, s_answer_t *answer, const char *content_type)
{
    //  Posted as multipart/report, the report's own Content-Type (and its
    //  boundary) is the HTTP header's: put it back in front of the body
    fq_buf_t framed = {0};
    const char *data = call->body;
    size_t size = call->body_size;
    if (content_type && strncasecmp(content_type, "multipart/", strlen("multipart/")) == 0) {
        if (fq_buf_printf(&framed, "Content-Type: %s\r\n\r\n", content_type) ||
            fq_buf_add(&framed, call->body, call->body_size)) {
            fq_buf_free(&framed);
            fq_api_fail(call, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
            return;
        }
        data = framed.data;
        size = framed.size;
    }
    char error[S_ERROR_SIZE];
    fq_report_t *report = fq_report_parse(data, size, error, sizeof error);
    fq_buf_free(&framed);
    if (!report) {
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST, "%s", error);
        return;
    }
    bool complaint = false;
    for (size_t i = 0; s_complaint_types[i]; i++)
        complaint |=
            report->feedback_type && strcmp(report->feedback_type, s_complaint_types[i]) == 0;
    bool ok = true;
    for (size_t i = 0; ok && i < report->count; i++) {
        const fq_report_recipient_t *r = &report->recipients[i];
        s_item_t item = {
            .kind = report->kind == FQ_REPORT_ARF ? FQ_FEEDBACK_COMPLAINT : FQ_FEEDBACK_BOUNCE,
            .message_id = report->message_id,
            .recipient = r->recipient,
            .original_recipient = r->original_recipient,
            .action = r->action,
            .status = r->status,
            .diagnostic = report->kind == FQ_REPORT_ARF ? report->feedback_type : r->diagnostic};
        if (report->kind == FQ_REPORT_ARF && !complaint) {
            char reason[S_ERROR_SIZE];
            snprintf(reason, sizeof reason, "feedback type %.*s is no complaint", S_QUOTE_MAX,
                     report->feedback_type);
            answer->ignored++;
            s_result(answer, &item, "ignored", reason, NULL);
        } else
            ok = s_record(call, answer, &item);
    }
    if (ok && report->count == 0) {
        //  An ARF report that names no recipient (many providers redact
        //  it): matching by Message-ID alone would let anyone who can
        //  reach the abuse mailbox suppress any address of a guessed id
        s_item_t item = {.kind = FQ_FEEDBACK_COMPLAINT, .message_id = report->message_id};
        answer->unmatched++;
        s_result(answer, &item, "unmatched", "the report names no recipient", NULL);
    }
    if (ok) {
        json_t *json =
            json_pack("{s:s, s:o}", "kind", fq_report_kind_name(report->kind), "feedback_type",
                      report->feedback_type ? json_string(report->feedback_type) : json_null());
        fq_api_reply(call, MHD_HTTP_OK, json);
    }
    fq_report_destroy(&report);
}

//  ---------------------------------------------------------------------
//  The JSON form

//  One object of the JSON form into item (its strings the object's);
//  false after answering 400 naming the report (index, -1: the only one).
static bool s_json_item(fq_api_call_t *call, json_t *object, long index, s_item_t *item)
{
    char where[32] = "";
    if (index >= 0)
        snprintf(where, sizeof where, "report %ld: ", index);
    if (!json_is_object(object)) {
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST, "%sa report is an object", where);
        return false;
    }
    const char *key;
    json_t *value;
    json_object_foreach(object, key, value)
    {
        bool known = false;
        for (size_t i = 0; s_json_keys[i]; i++)
            known |= strcmp(key, s_json_keys[i]) == 0;
        if (!known) {
            fq_api_fail(call, MHD_HTTP_BAD_REQUEST, "%sunknown key \"%.*s\"", where, S_QUOTE_MAX,
                        key);
            return false;
        }
        if (!json_is_string(value) && !json_is_null(value)) {
            fq_api_fail(call, MHD_HTTP_BAD_REQUEST, "%s%s must be a string", where, key);
            return false;
        }
    }
    const char *type = json_string_value(json_object_get(object, "type"));
    if (!type || (strcmp(type, "bounce") != 0 && strcmp(type, "complaint") != 0)) {
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST, "%stype must be \"bounce\" or \"complaint\"",
                    where);
        return false;
    }
    *item = (s_item_t){
        .kind = strcmp(type, "bounce") == 0 ? FQ_FEEDBACK_BOUNCE : FQ_FEEDBACK_COMPLAINT,
        .message_id = json_string_value(json_object_get(object, "message_id")),
        .recipient = json_string_value(json_object_get(object, "recipient")),
        .original_recipient = json_string_value(json_object_get(object, "original_recipient")),
        .status = json_string_value(json_object_get(object, "status")),
        .diagnostic = json_string_value(json_object_get(object, "detail"))};
    if (!item->message_id || !item->recipient || !*item->recipient) {
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST, "%smessage_id and recipient are required", where);
        return false;
    }
    return true;
}

static void s_json(fq_api_call_t *call, s_answer_t *answer)
{
    json_error_t error;
    json_t *root = json_loadb(call->body, call->body_size, JSON_REJECT_DUPLICATES, &error);
    if (!root) {
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST, "body is not JSON: %s (at byte %d)", error.text,
                    error.position);
        return;
    }
    bool array = json_is_array(root);
    size_t count = array ? json_array_size(root) : 1;
    if (array && (count == 0 || count > S_JSON_REPORTS_MAX)) {
        json_decref(root);
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST, "an array of 1..%d reports is taken",
                    S_JSON_REPORTS_MAX);
        return;
    }
    //  Every report is checked before any is recorded: a 400 writes nothing
    s_item_t *items = calloc(count, sizeof *items);
    bool ok = items != NULL;
    if (!items)
        fq_api_fail(call, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
    for (size_t i = 0; ok && i < count; i++)
        ok = s_json_item(call, array ? json_array_get(root, i) : root, array ? (long)i : -1,
                         &items[i]);
    for (size_t i = 0; ok && i < count; i++)
        ok = s_record(call, answer, &items[i]);
    if (ok)
        fq_api_reply(call, MHD_HTTP_OK, json_pack("{s:s, s:n}", "kind", "json", "feedback_type"));
    free(items);
    json_decref(root);
}

//  ---------------------------------------------------------------------
//  The route

void fq_api_feedback(fq_api_call_t *call)
{
    if (!fq_api_query_allowed(call, NULL))
        return;
    if (call->body_size > FQ_REPORT_SIZE_MAX) {
        fq_api_fail(call, MHD_HTTP_CONTENT_TOO_LARGE,
                    "a report is at most %d bytes; this one is %zu", FQ_REPORT_SIZE_MAX,
                    call->body_size);
        return;
    }
    const char *content_type =
        MHD_lookup_connection_value(call->connection, MHD_HEADER_KIND, "Content-Type");
    size_t type_length = content_type ? strcspn(content_type, "; \t") : 0;
    bool json = false;
    static const char *const raw_types[] = {"message/rfc822", "multipart/report", "text/plain",
                                            "application/octet-stream", NULL};
    bool raw = type_length == 0;
    for (size_t i = 0; raw_types[i] && !raw; i++)
        raw = type_length == strlen(raw_types[i]) &&
              strncasecmp(content_type, raw_types[i], type_length) == 0;
    json = type_length == strlen("application/json") &&
           strncasecmp(content_type, "application/json", type_length) == 0;
    if (!raw && !json) {
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST,
                    "Content-Type must be message/rfc822, multipart/report or text/plain (a raw "
                    "report) or application/json, not \"%.*s\"",
                    S_QUOTE_MAX, content_type);
        return;
    }
    if (call->body_size == 0) {
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST, "the body is empty: post the report");
        return;
    }
    s_answer_t answer = {.results = json_array()};
    if (!answer.results) {
        fq_api_fail(call, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
        return;
    }
    if (json)
        s_json(call, &answer);
    else
        s_raw(call, &answer, content_type);
    //  Answered 200 with the kind: the results and the counts go with it
    if (call->status == MHD_HTTP_OK && call->json && !answer.nomem) {
        json_object_set_new(call->json, "results", answer.results);
        answer.results = NULL;
        json_object_set_new(call->json, "recorded", json_integer(answer.recorded));
        json_object_set_new(call->json, "duplicates", json_integer(answer.duplicates));
        json_object_set_new(call->json, "ignored", json_integer(answer.ignored));
        json_object_set_new(call->json, "unmatched", json_integer(answer.unmatched));
    } else if (call->status == MHD_HTTP_OK)
        fq_api_fail(call, MHD_HTTP_INTERNAL_SERVER_ERROR,
                    "the answer could not be written as JSON (out of memory)");
    json_decref(answer.results);
}
