/*  fq_api_webhooks.c — a tenant's webhook endpoints under
    /v1/tenants/{name}/webhooks (api/API.md, "Webhooks"): registered,
    listed, read with their state (last error, backlog, batch in flight),
    changed (URL, event types, enabled), secrets rotated, and deleted. The
    store holds them (fq_store_webhooks.h); fairqd's webhook feeder
    delivers to them (docs/feedback.md, "Webhooks").

    A tenant's token manages its own endpoints only: another tenant's
    answers 404 as a tenant that does not exist, as everywhere. An
    endpoint's URL is checked by the http channel's rule (a URL fairq-sender
    would send to), and holds no template: each batch is a request to it.
*/
#include "fq_api_internal.h"
#include "fq_channel.h"
#include "fq_store_webhooks.h"
#include <stdlib.h>
#include <string.h>

//  How long a rotated secret signs beside the new one unless the call
//  says: a day lets a receiver deploy its new secret in its own time.
#define S_KEEP_PREVIOUS_S_DEFAULT 86400

//  The most a rotated secret may keep signing: a week.
#define S_KEEP_PREVIOUS_S_MAX (7 * 86400)

//  What a bad value is quoted with in an answer, at most.
#define S_QUOTE_MAX 40

//  How the http channel's rule names a URL's problems; an endpoint's
//  answer names its own field instead.
#define S_CHANNEL_URL_FIELD "http.url: "

//  ---------------------------------------------------------------------
//  Answers

static json_t *s_types_json(const char *types)
{
    if (!types)
        return json_null();
    json_t *list = json_array();
    const char *p = types;
    while (list && *p) {
        size_t length = strcspn(p, ",");
        json_array_append_new(list, json_stringn(p, length));
        p += length + (p[length] == ',');
    }
    return list;
}

//  The endpoint object of API.md.
static json_t *s_webhook_json(const fq_webhook_t *w)
{
    const char *state = !w->enabled ? "disabled" : w->failing_since ? "failing" : "ok";
    json_t *batch = w->batch_request
                        ? json_pack("{s:I, s:i}", "request", (json_int_t)w->batch_request, "events",
                                    w->batch_events)
                        : json_null();
    return json_pack(
        "{s:I, s:s, s:o, s:s, s:o, s:b, s:s, s:o, s:o, s:i, s:o, s:o, s:o, s:o, s:o, s:I, s:I, "
        "s:b, s:o}",
        "id", (json_int_t)w->id, "url", w->url, "events", s_types_json(w->event_types), "secret",
        w->secret, "previous_secret_until", fq_api_time(w->previous_until), "enabled", w->enabled,
        "state", state, "disabled_reason",
        w->disabled_reason ? json_string(w->disabled_reason) : json_null(), "batch", batch,
        "failures", w->failures, "failing_since", fq_api_time(w->failing_since), "last_error",
        w->last_error ? json_string(w->last_error) : json_null(), "last_error_at",
        fq_api_time(w->last_error_at), "last_success_at", fq_api_time(w->last_success_at),
        "next_attempt_at", fq_api_time(w->next_attempt_at), "delivered", (json_int_t)w->delivered,
        "backlog", (json_int_t)w->backlog, "backlog_more", w->backlog_more, "created_at",
        fq_api_time(w->created_at));
}

//  Answers status with the one endpoint of list, or the store's error.
static void s_reply_one(fq_api_call_t *call, int rc, unsigned status, fq_webhook_list_t *list)
{
    if (rc < 0)
        fq_api_fail_store(call, rc);
    else if (list->count != 1)
        fq_api_fail(call, MHD_HTTP_NOT_FOUND, "webhook %s does not exist", call->params[1]);
    else
        fq_api_reply(call, status, s_webhook_json(&list->rows[0]));
    fq_webhook_list_free(list);
}

//  ---------------------------------------------------------------------
//  Input

//  The URL of body into *url (NULL when absent and optional); false after
//  answering 400.
static bool s_url(fq_api_call_t *call, json_t *body, bool required, const char **url)
{
    json_t *value = json_object_get(body, "url");
    *url = NULL;
    if (!value && !required)
        return true;
    if (!json_is_string(value)) {
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST, "url is required: the endpoint's http(s) URL");
        return false;
    }
    const char *text = json_string_value(value);
    //  Each batch is an http request whose URL is a template: a tag in it
    //  would be a field no batch has
    if (strstr(text, "{{")) {
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST, "url: an endpoint's URL holds no \"{{\"");
        return false;
    }
    fq_http_spec_t spec = {.method = "POST", .url = text, .body_format = FQ_HTTP_BODY_JSON};
    char problem[FQ_HTTP_PROBLEM_SIZE];
    const char *found = fq_http_spec_problem(&spec, problem, sizeof problem);
    if (found) {
        //  The channel's words name its field ("http.url: ...")
        size_t field = strlen(S_CHANNEL_URL_FIELD);
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST, "url: %s",
                    strncmp(found, S_CHANNEL_URL_FIELD, field) == 0 ? found + field : found);
        return false;
    }
    *url = text;
    return true;
}

//  The event types of the events slice into spec (an array of type names,
//  or null for every type); false after answering 400. *parsed holds the
//  names (json_decref it).
static bool s_types(fq_api_call_t *call, const fq_api_slice_t *slice, fq_webhook_spec_t *spec,
                    const char **names, json_t **parsed)
{
    *parsed = NULL;
    if (!slice->text)
        return true;
    spec->set_types = true;
    json_t *value = json_loadb(slice->text, slice->size, JSON_DECODE_ANY, NULL);
    if (json_is_null(value)) {
        json_decref(value);
        return true;
    }
    size_t count = json_is_array(value) ? json_array_size(value) : 0;
    if (count == 0 || count > FQ_WEBHOOK_EVENT_TYPES_MAX) {
        json_decref(value);
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST,
                    "events must be null (every type) or an array of 1..%d of " FQ_EVENT_TYPES_TEXT,
                    FQ_WEBHOOK_EVENT_TYPES_MAX);
        return false;
    }
    for (size_t i = 0; i < count; i++) {
        const char *name = json_string_value(json_array_get(value, i));
        if (!name || !fq_event_type(name)) {
            fq_api_fail(call, MHD_HTTP_BAD_REQUEST,
                        "events[%zu] must be one of " FQ_EVENT_TYPES_TEXT ", not \"%.*s\"", i,
                        S_QUOTE_MAX, name ? name : "(not a string)");
            json_decref(value);
            return false;
        }
        names[i] = name;
    }
    spec->types = names;
    spec->ntypes = count;
    *parsed = value;
    return true;
}

//  A secret given into *secret (NULL when absent: fairq makes one); false
//  after answering 400.
static bool s_secret(fq_api_call_t *call, json_t *body, const char **secret)
{
    json_t *value = json_object_get(body, "secret");
    *secret = NULL;
    if (!value || json_is_null(value))
        return true;
    const char *problem =
        json_is_string(value) ? fq_http_secret_problem(json_string_value(value)) : "";
    if (problem) {
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST, "secret must be null (fairq makes one), or %s",
                    *problem ? problem : "a string");
        return false;
    }
    *secret = json_string_value(value);
    return true;
}

//  The endpoint's id from the path; false after answering 400.
static bool s_id(fq_api_call_t *call, int64_t *id)
{
    return fq_api_parse_id(call, call->params[1], "webhook id", false, id);
}

//  ---------------------------------------------------------------------
//  Routes

void fq_api_webhook_list(fq_api_call_t *call)
{
    const char *tenant;
    if (!fq_api_query_allowed(call, NULL) || !fq_api_own_tenant(call, &tenant))
        return;
    fq_webhook_list_t list;
    int rc = fq_store_webhooks(call->store, tenant, 0, &list);
    if (rc < 0) {
        fq_api_fail_store(call, rc);
        return;
    }
    json_t *rows = json_array();
    for (size_t i = 0; rows && i < list.count; i++)
        if (json_array_append_new(rows, s_webhook_json(&list.rows[i])) != 0) {
            json_decref(rows);
            rows = NULL;
        }
    fq_webhook_list_free(&list);
    if (!rows)
        fq_api_fail(call, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
    else
        fq_api_reply(call, MHD_HTTP_OK, json_pack("{s:o}", "webhooks", rows));
}

void fq_api_webhook_create(fq_api_call_t *call)
{
    static const char *const keys[] = {"url", "events", "secret", NULL};
    static const char *const slice_keys[] = {"events", NULL};
    const char *tenant;
    if (!fq_api_query_allowed(call, NULL) || !fq_api_own_tenant(call, &tenant))
        return;
    fq_api_slice_t slices[1];
    json_t *body = fq_api_body_fields(call, keys, slice_keys, slices);
    if (!body)
        return;
    fq_webhook_spec_t spec = {.enabled = -1};
    const char *names[FQ_WEBHOOK_EVENT_TYPES_MAX];
    json_t *parsed = NULL;
    if (s_url(call, body, true, &spec.url) && s_types(call, &slices[0], &spec, names, &parsed) &&
        s_secret(call, body, &spec.secret)) {
        fq_webhook_list_t list;
        int rc = fq_store_webhook_create(call->store, tenant, &spec, &list);
        s_reply_one(call, rc, MHD_HTTP_CREATED, &list);
    }
    json_decref(parsed);
    json_decref(body);
}

void fq_api_webhook_get(fq_api_call_t *call)
{
    const char *tenant;
    int64_t id;
    if (!fq_api_query_allowed(call, NULL) || !fq_api_own_tenant(call, &tenant) || !s_id(call, &id))
        return;
    fq_webhook_list_t list;
    int rc = fq_store_webhooks(call->store, tenant, id, &list);
    s_reply_one(call, rc, MHD_HTTP_OK, &list);
}

void fq_api_webhook_patch(fq_api_call_t *call)
{
    static const char *const keys[] = {"url", "events", "enabled", NULL};
    static const char *const slice_keys[] = {"events", NULL};
    const char *tenant;
    int64_t id;
    if (!fq_api_query_allowed(call, NULL) || !fq_api_own_tenant(call, &tenant) || !s_id(call, &id))
        return;
    fq_api_slice_t slices[1];
    json_t *body = fq_api_body_fields(call, keys, slice_keys, slices);
    if (!body)
        return;
    fq_webhook_spec_t spec = {.enabled = -1};
    const char *names[FQ_WEBHOOK_EVENT_TYPES_MAX];
    json_t *parsed = NULL;
    json_t *enabled = json_object_get(body, "enabled");
    if (enabled && !json_is_boolean(enabled))
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST, "enabled must be true or false");
    else if (s_url(call, body, false, &spec.url) &&
             s_types(call, &slices[0], &spec, names, &parsed)) {
        spec.enabled = enabled ? json_is_true(enabled) : -1;
        fq_webhook_list_t list;
        int rc = fq_store_webhook_update(call->store, tenant, id, &spec, &list);
        s_reply_one(call, rc, MHD_HTTP_OK, &list);
    }
    json_decref(parsed);
    json_decref(body);
}

void fq_api_webhook_rotate(fq_api_call_t *call)
{
    static const char *const keys[] = {"secret", "keep_previous_s", NULL};
    const char *tenant;
    int64_t id;
    if (!fq_api_query_allowed(call, NULL) || !fq_api_own_tenant(call, &tenant) || !s_id(call, &id))
        return;
    //  No body at all: a secret fairq makes, the old one kept a day
    json_t *body =
        call->body_size == 0 ? json_object() : fq_api_body_fields(call, keys, NULL, NULL);
    if (!body)
        return;
    const char *secret;
    json_t *keep = json_object_get(body, "keep_previous_s");
    if (keep && (!json_is_integer(keep) || json_integer_value(keep) < 0 ||
                 json_integer_value(keep) > S_KEEP_PREVIOUS_S_MAX))
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST,
                    "keep_previous_s must be an integer of 0..%d (seconds the old secret still "
                    "signs)",
                    S_KEEP_PREVIOUS_S_MAX);
    else if (s_secret(call, body, &secret)) {
        int keep_s = keep ? (int)json_integer_value(keep) : S_KEEP_PREVIOUS_S_DEFAULT;
        fq_webhook_list_t list;
        int rc = fq_store_webhook_rotate(call->store, tenant, id, secret, keep_s, &list);
        s_reply_one(call, rc, MHD_HTTP_OK, &list);
    }
    json_decref(body);
}

void fq_api_webhook_delete(fq_api_call_t *call)
{
    const char *tenant;
    int64_t id;
    if (!fq_api_query_allowed(call, NULL) || !fq_api_own_tenant(call, &tenant) || !s_id(call, &id))
        return;
    int rc = fq_store_webhook_delete(call->store, tenant, id);
    if (rc < 0)
        fq_api_fail_store(call, rc);
    else
        fq_api_reply_empty(call);
}
