/*  fq_api_messages.c — /v1/messages: search, one message, retry of a dead
    one, bulk actions by filter; /v1/errors: what the failed and dead ones
    met (api/API.md). A tenant's token reaches its own tenant only: the
    store's filter gets its tenant id whatever the query or body says. */
#include "fq_api_internal.h"
#include "fq_error.h"
#include "fq_limits.h"
#include <stdio.h>
#include <string.h>

//  Tenant names of a page's messages: one lookup per tenant, not per row.
#define S_NAMES_CACHED 8

typedef struct {
    int64_t ids[S_NAMES_CACHED];
    char names[S_NAMES_CACHED][FQ_TENANT_NAME_SIZE];
    size_t count;
} s_names_t;

//  The name of tenant_id; NULL after answering the store's error.
static const char *s_tenant_name(fq_api_call_t *call, s_names_t *names, int64_t tenant_id)
{
    if (call->owner.tenant_id == tenant_id)
        return call->owner.tenant;
    for (size_t i = 0; i < names->count; i++)
        if (names->ids[i] == tenant_id)
            return names->names[i];
    size_t slot = names->count < S_NAMES_CACHED ? names->count++ : S_NAMES_CACHED - 1;
    int rc = fq_store_tenant_name(call->store, tenant_id, names->names[slot]);
    if (rc) {
        fq_api_fail_store(call, rc);
        names->count--;
        return NULL;
    }
    names->ids[slot] = tenant_id;
    return names->names[slot];
}

//  The message object of API.md; NULL after answering.
static json_t *s_message_json(fq_api_call_t *call, s_names_t *names, const fq_message_info_t *m)
{
    const char *tenant = s_tenant_name(call, names, m->tenant_id);
    if (!tenant)
        return NULL;
    return json_pack("{s:I, s:I, s:s, s:s, s:s, s:i, s:o, s:o, s:o}", "id", (json_int_t)m->id,
                     "request", (json_int_t)m->request_id, "tenant", tenant, "to", m->recipient,
                     "status", fq_message_status_name(m->status), "attempts", m->try_count,
                     "next_attempt_at", fq_api_time(m->next_attempt_at), "last_attempt_at",
                     fq_api_time(m->last_attempt_at), "last_error",
                     m->last_error ? json_string(m->last_error) : json_null());
}

//  Room for an int64_t as text: 19 digits, a sign and the NUL.
#define S_INT_TEXT 21

//  Where a filter's fields are read from: the query of a search, or the
//  body of a bulk action (where request and older_than are numbers, kept
//  here as text so that both are checked by the same code).
typedef struct {
    json_t *body; //  NULL: the query
    char request[S_INT_TEXT];
    char older_than[S_INT_TEXT];
} s_source_t;

//  The field key of source, or NULL when absent.
static const char *s_field(fq_api_call_t *call, s_source_t *source, const char *key)
{
    if (!source->body)
        return fq_api_query(call, key);
    json_t *value = json_object_get(source->body, key);
    if (json_is_integer(value)) {
        char *text = strcmp(key, "request") == 0 ? source->request : source->older_than;
        snprintf(text, S_INT_TEXT, "%lld", (long long)json_integer_value(value));
        return text;
    }
    return json_string_value(value);
}

//  In a body, the filter's text fields must be strings and its numbers
//  integers; false after answering 400.
static bool s_body_types(fq_api_call_t *call, json_t *body)
{
    static const char *const texts[] = {"tenant", "status", "to", "domain", "error", "code", NULL};
    static const char *const numbers[] = {"request", "older_than", NULL};
    for (size_t i = 0; texts[i]; i++) {
        json_t *value = json_object_get(body, texts[i]);
        if (value && !json_is_string(value)) {
            fq_api_fail(call, MHD_HTTP_BAD_REQUEST, "%s must be a string", texts[i]);
            return false;
        }
    }
    for (size_t i = 0; numbers[i]; i++) {
        json_t *value = json_object_get(body, numbers[i]);
        if (value && !json_is_integer(value)) {
            fq_api_fail(call, MHD_HTTP_BAD_REQUEST, "%s must be an integer", numbers[i]);
            return false;
        }
    }
    return true;
}

//  The filter of source (its strings stay source's or the call's); false
//  after answering 400 or 404.
static bool s_filter_from(fq_api_call_t *call, s_source_t *source, fq_message_filter_t *filter)
{
    *filter = (fq_message_filter_t){.tenant_id = call->owner.tenant_id};
    const char *status = s_field(call, source, "status");
    if (status && (fq_message_status_parse(status, &filter->status) != 0 ||
                   filter->status == FQ_MESSAGE_ANY)) {
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST,
                    "status must be pending, sent, failed, dead or cancelled");
        return false;
    }
    const char *tenant = s_field(call, source, "tenant");
    if (tenant && !call->owner.admin && strcmp(tenant, call->owner.tenant) != 0) {
        fq_api_fail(call, MHD_HTTP_NOT_FOUND, "could not read tenant: \"%.*s\" does not exist",
                    FQ_TENANT_NAME_MAX, tenant);
        return false;
    }
    filter->tenant = tenant;
    filter->recipient = s_field(call, source, "to");
    filter->domain = s_field(call, source, "domain");
    filter->error = s_field(call, source, "error");
    filter->code = s_field(call, source, "code");
    if (!fq_api_parse_int(call, s_field(call, source, "older_than"), "older_than", 0, FQ_AGE_MAX_S,
                          0, &filter->older_than_s) ||
        !fq_api_parse_id(call, s_field(call, source, "request"), "request", true,
                         &filter->request_id))
        return false;
    //  Another tenant's request answers as an unknown one does
    if (filter->request_id && !call->owner.admin) {
        fq_request_info_t request;
        int rc = fq_store_request_get(call->store, filter->request_id, &request);
        if (rc)
            fq_request_info_free(&request);
        if (rc == FQ_ENOTFOUND)
            return fq_api_may_see(call, -1, "request", filter->request_id);
        if (rc) {
            fq_api_fail_store(call, rc);
            return false;
        }
        fq_request_info_free(&request);
        if (!fq_api_may_see(call, request.tenant_id, "request", filter->request_id))
            return false;
    }
    return true;
}

//  The filter of the query; false after answering 400 or 404.
static bool s_filter(fq_api_call_t *call, fq_message_filter_t *filter)
{
    s_source_t query = {0};
    return s_filter_from(call, &query, filter);
}

//  Answers page's messages (the key of the list is key).
static void s_reply_page(fq_api_call_t *call, const fq_message_page_t *page, int64_t limit)
{
    s_names_t names = {0};
    json_t *rows = json_array();
    for (size_t i = 0; i < page->count; i++) {
        json_t *row = s_message_json(call, &names, &page->rows[i]);
        if (!row) {
            json_decref(rows);
            return;
        }
        json_array_append_new(rows, row);
    }
    json_t *next =
        page->count == (size_t)limit ? json_integer(page->rows[page->count - 1].id) : json_null();
    fq_api_reply(call, MHD_HTTP_OK, json_pack("{s:o, s:o}", "messages", rows, "next_after", next));
}

void fq_api_message_search(fq_api_call_t *call)
{
    static const char *const params[] = {"request", "tenant", "status", "to",
                                         "domain",  "error",  "code",   "older_than",
                                         "after",   "limit",  NULL};
    fq_message_filter_t filter;
    int64_t after, limit;
    if (!fq_api_query_allowed(call, params) || !s_filter(call, &filter) ||
        !fq_api_parse_int(call, fq_api_query(call, "after"), "after", 0, INT64_MAX, 0, &after) ||
        !fq_api_parse_int(call, fq_api_query(call, "limit"), "limit", 1, FQ_STORE_PAGE_MAX,
                          FQ_API_PAGE_DEFAULT, &limit))
        return;
    fq_message_page_t page;
    int rc = fq_store_search_messages(call->store, &filter, after, (int)limit, &page);
    if (rc < 0) {
        fq_api_fail_store(call, rc);
        return;
    }
    s_reply_page(call, &page, limit);
    fq_message_page_free(&page);
}

//  The message of the path, if the caller may see it: into page (one
//  row). False after answering.
static bool s_load(fq_api_call_t *call, fq_message_page_t *page)
{
    fq_message_filter_t filter = {.tenant_id = call->owner.tenant_id};
    if (!fq_api_query_allowed(call, NULL) ||
        !fq_api_parse_id(call, call->params[0], "message", false, &filter.message_id))
        return false;
    int rc = fq_store_search_messages(call->store, &filter, 0, 1, page);
    //  Unknown, or another tenant's (which the filter left out): the same
    if (rc == 0 || (rc == FQ_ENOTFOUND)) {
        if (rc == 0)
            fq_message_page_free(page);
        fq_api_fail(call, MHD_HTTP_NOT_FOUND, "message %lld does not exist",
                    (long long)filter.message_id);
        return false;
    }
    if (rc < 0) {
        fq_api_fail_store(call, rc);
        return false;
    }
    return true;
}

//  Answers the one message of page, and frees the page.
static void s_reply_message(fq_api_call_t *call, fq_message_page_t *page)
{
    s_names_t names = {0};
    json_t *row = s_message_json(call, &names, &page->rows[0]);
    if (row)
        fq_api_reply(call, MHD_HTTP_OK, row);
    fq_message_page_free(page);
}

void fq_api_message_get(fq_api_call_t *call)
{
    fq_message_page_t page;
    if (s_load(call, &page))
        s_reply_message(call, &page);
}

void fq_api_message_retry(fq_api_call_t *call)
{
    fq_message_page_t page;
    if (!s_load(call, &page))
        return;
    fq_message_info_t message = page.rows[0];
    fq_message_page_free(&page);
    if (message.status != FQ_MESSAGE_DEAD) {
        fq_api_fail(call, MHD_HTTP_CONFLICT, "message %lld is %s, not dead: nothing to retry",
                    (long long)message.id, fq_message_status_name(message.status));
        return;
    }
    fq_message_filter_t filter = {.message_id = message.id};
    int rc = fq_store_retry_dead(call->store, &filter);
    if (rc < 0) {
        fq_api_fail_store(call, rc);
        return;
    }
    if (rc == 0) {
        //  Its request was cancelled or is being pruned: it stays dead
        fq_api_fail(call, MHD_HTTP_CONFLICT,
                    "message %lld stays dead: its request is cancelled or expired",
                    (long long)message.id);
        return;
    }
    rc = fq_store_search_messages(call->store, &filter, 0, 1, &page);
    if (rc <= 0) {
        if (rc < 0)
            fq_api_fail_store(call, rc);
        else
            fq_api_fail(call, MHD_HTTP_NOT_FOUND, "message %lld does not exist",
                        (long long)message.id);
        return;
    }
    s_reply_message(call, &page);
}

//  The error summary row of API.md.
static json_t *s_error_json(const fq_error_count_t *e)
{
    return json_pack("{s:s, s:s, s:o, s:o, s:I, s:I, s:I, s:o}", "tenant", e->tenant, "destination",
                     e->destination, "code", e->code ? json_string(e->code) : json_null(),
                     "enhanced", e->enhanced ? json_string(e->enhanced) : json_null(), "count",
                     (json_int_t)e->count, "failed", (json_int_t)e->failed, "dead",
                     (json_int_t)e->dead, "example",
                     e->example ? json_string(e->example) : json_null());
}

void fq_api_error_summary(fq_api_call_t *call)
{
    static const char *const params[] = {"tenant", "request", "status", "destination", "top", NULL};
    if (!fq_api_query_allowed(call, params))
        return;
    //  Only these two have errors to summarise
    const char *status = fq_api_query(call, "status");
    if (status && strcmp(status, "failed") != 0 && strcmp(status, "dead") != 0) {
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST, "status must be failed or dead");
        return;
    }
    const char *destination = fq_api_query(call, "destination");
    if (destination && !fq_destination_name_valid(destination)) {
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST, "destination must be a destination name");
        return;
    }
    fq_message_filter_t filter;
    int64_t top;
    if (!s_filter(call, &filter) || !fq_api_parse_int(call, fq_api_query(call, "top"), "top", 1,
                                                      FQ_STORE_PAGE_MAX, FQ_API_PAGE_DEFAULT, &top))
        return;
    fq_error_summary_t summary;
    int rc = fq_store_error_summary(call->store, &filter, destination, (int)top, &summary);
    if (rc < 0) {
        fq_api_fail_store(call, rc);
        return;
    }
    json_t *rows = json_array();
    for (size_t i = 0; i < summary.count; i++)
        json_array_append_new(rows, s_error_json(&summary.rows[i]));
    fq_error_summary_free(&summary);
    fq_api_reply(call, MHD_HTTP_OK, json_pack("{s:o}", "errors", rows));
}

//  ---------------------------------------------------------------------
//  Bulk actions

//  How long one call runs batches before it answers with where it got to
//  (next_after): a proxy or a client gives up on a call that says nothing
//  for tens of seconds, and the caller can go on from there.
#define S_BULK_CALL_MS 10000

//  The action's settings from body; false after answering 400.
static bool s_bulk_settings(fq_api_call_t *call, json_t *body, fq_bulk_t *bulk, int64_t *after)
{
    json_t *action = json_object_get(body, "action");
    if (!json_is_string(action) || fq_bulk_action_parse(json_string_value(action), &bulk->action)) {
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST, "action must be cancel, retry or reschedule");
        return false;
    }
    json_t *dry_run = json_object_get(body, "dry_run");
    if (dry_run && !json_is_boolean(dry_run)) {
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST, "dry_run must be true or false");
        return false;
    }
    bulk->dry_run = json_is_true(dry_run);
    json_t *batch = json_object_get(body, "batch");
    json_t *from = json_object_get(body, "after");
    if ((batch && (!json_is_integer(batch) || json_integer_value(batch) < 1 ||
                   json_integer_value(batch) > FQ_STORE_BULK_BATCH_MAX)) ||
        (from && (!json_is_integer(from) || json_integer_value(from) < 0))) {
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST,
                    "batch must be an integer within 1..%d, after one >= 0",
                    FQ_STORE_BULK_BATCH_MAX);
        return false;
    }
    bulk->batch = batch ? (int)json_integer_value(batch) : FQ_STORE_BULK_BATCH;
    *after = from ? json_integer_value(from) : 0;
    json_t *send_at = json_object_get(body, "send_at");
    if ((bulk->action == FQ_BULK_RESCHEDULE) != (send_at != NULL)) {
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST, "send_at goes with reschedule, and only with it");
        return false;
    }
    return !send_at || fq_api_parse_time(call, send_at, "send_at", &bulk->send_at);
}

void fq_api_message_bulk(fq_api_call_t *call)
{
    static const char *const keys[] = {"action", "dry_run", "batch",      "after", "send_at",
                                       "tenant", "request", "status",     "to",    "domain",
                                       "error",  "code",    "older_than", NULL};
    if (!fq_api_query_allowed(call, NULL))
        return;
    json_t *body = fq_api_body_fields(call, keys, NULL, NULL);
    if (!body)
        return;
    fq_bulk_t bulk = {0};
    fq_message_filter_t filter;
    s_source_t source = {.body = body};
    int64_t after;
    if (!s_bulk_settings(call, body, &bulk, &after) || !s_body_types(call, body) ||
        !s_filter_from(call, &source, &filter)) {
        json_decref(body);
        return;
    }
    int64_t matched = 0, changed = 0, batches = 0, deadline = fq_api_now_ms() + S_BULK_CALL_MS;
    fq_bulk_batch_t batch = {0};
    do {
        int rc = fq_store_bulk_batch(call->store, &filter, &bulk, after, &batch);
        if (rc) {
            //  What the batches before changed stays changed; the same call
            //  again goes on where they stopped
            fq_api_fail_store(call, rc);
            json_decref(body);
            return;
        }
        batches++;
        matched += batch.matched;
        changed += batch.changed;
        after = batch.last_id;
    } while (!batch.done && fq_api_now_ms() < deadline);
    fq_api_reply(call, MHD_HTTP_OK,
                 json_pack("{s:s, s:b, s:I, s:I, s:I, s:b, s:o}", "action",
                           fq_bulk_action_name(bulk.action), "dry_run", bulk.dry_run, "matched",
                           (json_int_t)matched, "changed", (json_int_t)changed, "batches",
                           (json_int_t)batches, "complete", batch.done, "next_after",
                           batch.done ? json_null() : json_integer(after)));
    json_decref(body);
}
