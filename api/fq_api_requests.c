/*  fq_api_requests.c — /v1/requests: submit, read, list, the lifecycle
    (cancel, pause, resume, PATCH) and the recipients refused
    (api/API.md). */
#include "fq_api_internal.h"
#include "fq_channel.h"
#include "fq_error.h"
#include "fq_limits.h"
#include "fq_log.h"
#include "fq_mail_headers.h"
#include "fq_recipients.h"
#include "fq_template.h"
#include <stdlib.h>
#include <string.h>

//  The Idempotency-Key header's limits (the schema's check).
#define S_IDEMPOTENCY_KEY_MAX 255

//  Most of a key quoted in an answer, bytes: enough to tell which it was.
#define S_IDEMPOTENCY_KEY_QUOTED 64

#define S_MAX_ATTEMPTS_MIN 1
#define S_MAX_ATTEMPTS_MAX 100

//  Most of a bad header's name quoted in an answer, bytes: enough to find
//  it by.
#define S_HEADER_NAME_QUOTED 64

//  Largest "http" object of a submit read, bytes of JSON: its templates at
//  their limits, each byte written as a \u escape (6 bytes), and room for
//  its other members. A larger one is refused before it is built.
#define S_HTTP_OBJECT_MAX                                                                          \
    (6 * (FQ_HTTP_URL_MAX + FQ_HTTP_BODY_MAX + FQ_HTTP_HEADERS_BYTES_MAX) + 4096)

//  ---------------------------------------------------------------------
//  Fields of a body

//  A required string field; NULL after answering 400.
static const char *s_string(fq_api_call_t *call, json_t *body, const char *key)
{
    json_t *value = json_object_get(body, key);
    if (json_is_string(value))
        return json_string_value(value);
    fq_api_fail(call, MHD_HTTP_BAD_REQUEST, value ? "%s must be a string" : "%s is required", key);
    return NULL;
}

//  An optional integer field within min..max; false after answering 400.
static bool s_int(fq_api_call_t *call, json_t *body, const char *key, int min, int max, int *out)
{
    json_t *value = json_object_get(body, key);
    if (!value)
        return true;
    if (json_is_integer(value) && json_integer_value(value) >= min &&
        json_integer_value(value) <= max) {
        *out = (int)json_integer_value(value);
        return true;
    }
    fq_api_fail(call, MHD_HTTP_BAD_REQUEST, "%s must be an integer within %d..%d", key, min, max);
    return false;
}

//  Whose the submitted request is: an admin names the tenant, a tenant's
//  token may only name itself. NULL after answering.
static const char *s_submit_tenant(fq_api_call_t *call, json_t *body)
{
    json_t *tenant = json_object_get(body, "tenant");
    if (tenant && !json_is_string(tenant)) {
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST, "tenant must be a string");
        return NULL;
    }
    if (!call->owner.admin) {
        if (tenant && strcmp(json_string_value(tenant), call->owner.tenant) != 0) {
            fq_api_fail(call, MHD_HTTP_FORBIDDEN, "this token submits for tenant \"%s\" only",
                        call->owner.tenant);
            return NULL;
        }
        return call->owner.tenant;
    }
    if (!tenant) {
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST, "tenant is required with an admin token");
        return NULL;
    }
    int64_t id;
    int rc = fq_store_tenant_id(call->store, json_string_value(tenant), &id);
    if (rc) {
        fq_api_fail_store(call, rc);
        return NULL;
    }
    return json_string_value(tenant);
}

//  The Idempotency-Key header, NULL when absent; false after answering 400.
static bool s_idempotency_key(fq_api_call_t *call, const char **key)
{
    *key = MHD_lookup_connection_value(call->connection, MHD_HEADER_KIND, "Idempotency-Key");
    if (!*key)
        return true;
    size_t len = strlen(*key);
    bool printable = len >= 1 && len <= S_IDEMPOTENCY_KEY_MAX;
    for (size_t i = 0; printable && i < len; i++)
        printable = (unsigned char)(*key)[i] >= ' ' && (*key)[i] != 0x7f;
    if (!printable)
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST,
                    "Idempotency-Key must be 1..%d bytes without control characters",
                    S_IDEMPOTENCY_KEY_MAX);
    return printable;
}

//  Whether the call is held to a submit rate: a tenant's token is, to its
//  tenant's submit_rate; an admin's submits (an operator's own) are not.
static bool s_rate_limited(fq_api_call_t *call)
{
    return !call->owner.admin && call->owner.submit_rate > 0;
}

//  Takes a token of the tenant's bucket, the one in the database that every
//  fairqd shares (fq_store.h); false after answering 429, or the store's
//  error (503 when the database cannot be reached).
static bool s_rate_allows(fq_api_call_t *call)
{
    if (!s_rate_limited(call))
        return true;
    int retry_after_s = 0;
    int rc = fq_store_take_submit_token(call->store, call->owner.tenant_id, call->owner.submit_rate,
                                        &retry_after_s);
    if (rc) {
        fq_api_fail_store(call, rc);
        return false;
    }
    if (retry_after_s == 0)
        return true;
    snprintf(call->retry_after, sizeof call->retry_after, "%d", retry_after_s);
    fq_api_fail(call, MHD_HTTP_TOO_MANY_REQUESTS,
                "tenant \"%s\" may submit %d requests a minute; try again in %d s",
                call->owner.tenant, call->owner.submit_rate, retry_after_s);
    return false;
}

//  Gives back the token of a submit the database refused, or answered
//  with the request its Idempotency-Key named. Called once the answer is
//  made, which reads the store's error of the submit. Without the
//  database the token is lost: the tenant waits a little longer.
static void s_rate_give_back(fq_api_call_t *call)
{
    if (!s_rate_limited(call) || !fq_store_connected(call->store))
        return;
    if (fq_store_give_back_submit_token(call->store, call->owner.tenant_id,
                                        call->owner.submit_rate) != 0)
        fq_log(FQ_LOG_WARNING, "http: could not give tenant \"%s\" its submit token back: %s",
               call->owner.tenant, fq_store_error(call->store));
}

//  Answers the request's object with status.
static void s_reply_request(fq_api_call_t *call, unsigned status, int64_t id)
{
    fq_request_info_t request;
    int rc = fq_store_request_get(call->store, id, &request);
    if (rc)
        fq_api_fail_store(call, rc);
    else
        fq_api_reply(call, status, fq_api_request_json(call, &request));
    fq_request_info_free(&request);
}

//  A template of the request; false after answering 400 naming what. The
//  database checks templates too, in its own words: checked here, a bad
//  one is refused in fairq's (the grammar is the same: fq_template.h).
static bool s_template(fq_api_call_t *call, const char *text, fq_template_mode_t mode,
                       const char *what)
{
    char error[FQ_TEMPLATE_ERROR_SIZE];
    fq_template_t *template = fq_template_new(text, mode, error, sizeof error);
    if (!template) {
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST, "%s: %s", what, error);
        return false;
    }
    fq_template_destroy(&template);
    return true;
}

//  The plain-text alternative of an HTML body, NULL when not given: a
//  template of the body's grammar, rendered as plain text (no escaping),
//  and only beside an HTML body, which is what it is an alternative to;
//  false after answering 400.
static bool s_text_body(fq_api_call_t *call, json_t *body, bool html, const char **text_body)
{
    json_t *value = json_object_get(body, "text_body");
    *text_body = NULL;
    if (!value)
        return true;
    if (!json_is_string(value)) {
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST, "text_body must be a string");
        return false;
    }
    if (!html) {
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST,
                    "text_body is the plain-text alternative of an HTML body: it needs html true");
        return false;
    }
    if (!s_template(call, json_string_value(value), FQ_TEMPLATE_PLAIN, "text_body"))
        return false;
    *text_body = json_string_value(value);
    return true;
}

//  The from address: one address, by the rule recipients are split by
//  (fairq.submit checks it too, 0008_submit_from.sql); false after
//  answering 400.
static bool s_from(fq_api_call_t *call, const char *from)
{
    const char *problem = fq_recipient_address_problem(from, strlen(from));
    if (problem)
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST, "invalid from address: %s", problem);
    return !problem;
}

//  The recipients' shape: an array of objects with "to" (and "fields"),
//  checked before anything is stored. A client that sent bare addresses,
//  or named "to" otherwise ("email"), would otherwise be told 202 and find
//  its request done with every recipient rejected. Each recipient's
//  values are still checked when it is split, and a bad one rejected alone
//  (API.md). False after answering 400 naming the first such recipient.
static bool s_recipients_shape(fq_api_call_t *call, const fq_api_slice_t *recipients)
{
    char reason[FQ_RECIPIENT_REASON_SIZE];
    size_t position;
    const char *problem = fq_recipients_shape_problem(recipients->text, recipients->size, &position,
                                                      reason, sizeof reason);
    if (problem)
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST, "recipients[%zu]: %s", position, problem);
    return !problem;
}

//  Most headers of a submit read before they are checked: one more than a
//  request may give, so that the check refuses that one and a body of a
//  thousand headers is not read to its end.
#define S_HEADERS_READ (FQ_MAIL_HEADERS_MAX + 1)

//  fq_api_json_members's answer once S_HEADERS_READ are read: stop there.
#define S_HEADERS_ENOUGH 1

//  The headers of a submit as they are read, in the order given.
typedef struct {
    fq_api_call_t *call;
    json_t *keys[S_HEADERS_READ];   //  Their names as JSON strings, owned
    json_t *values[S_HEADERS_READ]; //  Their values, owned
    const char *names[S_HEADERS_READ];
    const char *texts[S_HEADERS_READ]; //  Both borrowed from keys and values
    size_t count;
} s_headers_t;

//  Reads one header of a submit: 0 to go on, S_HEADERS_ENOUGH, or -1
//  after answering (400 naming a value that is not a string).
static int s_header(void *arg, const char *key_text, size_t key_size, const char *value_text,
                    size_t value_size)
{
    s_headers_t *self = arg;
    fq_api_call_t *call = self->call;
    json_t *key = json_loadb(key_text, key_size, JSON_DECODE_ANY, NULL);
    json_t *value =
        *value_text == '"' ? json_loadb(value_text, value_size, JSON_DECODE_ANY, NULL) : NULL;
    const char *name = json_string_value(key);
    if (!name || (*value_text == '"' && !value))
        fq_api_fail(call, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
    else if (!value)
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST, "header \"%.*s\": its value must be a string",
                    S_HEADER_NAME_QUOTED, name);
    else {
        self->keys[self->count] = key;
        self->values[self->count] = value;
        self->names[self->count] = name;
        self->texts[self->count] = json_string_value(value);
        self->count++;
        return self->count == S_HEADERS_READ ? S_HEADERS_ENOUGH : 0;
    }
    json_decref(key);
    json_decref(value);
    return -1;
}

//  The headers read, as one object sorted and compact (the same headers
//  are the same text, for the fingerprint) in *json, a string the caller
//  frees; NULL for none. False after answering 500.
static bool s_headers_json(fq_api_call_t *call, const s_headers_t *headers, char **json)
{
    if (headers->count == 0)
        return true;
    json_t *object = json_object();
    bool built = object != NULL;
    for (size_t i = 0; built && i < headers->count; i++)
        built = json_object_set(object, headers->names[i], headers->values[i]) == 0;
    if (built)
        *json = json_dumps(object, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(object);
    if (!*json)
        fq_api_fail(call, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
    return *json != NULL;
}

//  The request's extra headers (API.md): an object of names to string
//  values, held together to the rule fairq-sender writes them by
//  (fq_mail_headers_problem), so that a bad one is refused now, with a
//  400 naming it, rather than every message dying at delivery. Writes
//  them into *json (s_headers_json); NULL for none or {}. False after
//  answering.
static bool s_headers(fq_api_call_t *call, const fq_api_slice_t *slice, char **json)
{
    *json = NULL;
    if (!slice->text)
        return true;
    s_headers_t headers = {.call = call};
    int rc = *slice->text == '{' ? fq_api_json_members(slice->text, slice->size, s_header, &headers)
                                 : -1;
    if (rc == -1 && !call->json)
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST,
                    "headers must be an object of header names to string values");
    bool ok = rc == 0 || rc == S_HEADERS_ENOUGH;
    if (ok) {
        char reason[FQ_MAIL_HEADER_REASON_SIZE];
        size_t at;
        ok = fq_mail_headers_problem(headers.names, headers.texts, headers.count,
                                     FQ_MAIL_HEADERS_GIVEN, &at, reason, sizeof reason) == 0;
        if (!ok)
            fq_api_fail(call, MHD_HTTP_BAD_REQUEST, "header \"%.*s\": %s", S_HEADER_NAME_QUOTED,
                        headers.names[at], reason);
    }
    ok = ok && s_headers_json(call, &headers, json);
    for (size_t i = 0; i < headers.count; i++) {
        json_decref(headers.keys[i]);
        json_decref(headers.values[i]);
    }
    return ok;
}

//  The reply_to address, NULL when not given: one address by the rule of
//  the from address; false after answering 400.
static bool s_reply_to(fq_api_call_t *call, json_t *body, const char **reply_to)
{
    json_t *value = json_object_get(body, "reply_to");
    *reply_to = NULL;
    if (!value)
        return true;
    if (!json_is_string(value)) {
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST, "reply_to must be a string");
        return false;
    }
    const char *problem =
        fq_recipient_address_problem(json_string_value(value), json_string_length(value));
    if (problem) {
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST, "invalid reply_to address: %s", problem);
        return false;
    }
    *reply_to = json_string_value(value);
    return true;
}

//  Answers the request an Idempotency-Key named before (rc 0 or 1 of the
//  store: found, the same request), or 422 when it named another (rc
//  FQ_ECONFLICT), or the store's error. False when rc is none of these:
//  the key is new.
static bool s_key_answered(fq_api_call_t *call, const fq_submit_t *submit, int rc, int64_t id)
{
    if (rc == FQ_ENOTFOUND)
        return false;
    if (rc == 0 || rc == 1) {
        s_reply_request(call, MHD_HTTP_ACCEPTED, id);
        call->replayed = call->status == MHD_HTTP_ACCEPTED;
    } else if (rc == FQ_ECONFLICT)
        fq_api_fail(call, MHD_HTTP_UNPROCESSABLE_CONTENT,
                    "Idempotency-Key \"%.*s\" was used for another request: a key repeats only "
                    "the same request (the same fields and recipients); use a new key for a new "
                    "request",
                    S_IDEMPOTENCY_KEY_QUOTED, submit->idempotency_key);
    else
        fq_api_fail_store(call, rc);
    return true;
}

//  ---------------------------------------------------------------------
//  Channels (API.md, "Channels")

//  The submit's channel into *channel: "email" when not given; false
//  after answering 400.
static bool s_channel(fq_api_call_t *call, json_t *body, const char **channel)
{
    json_t *value = json_object_get(body, "channel");
    *channel = FQ_CHANNEL_EMAIL;
    if (!value)
        return true;
    const char *problem = json_is_string(value) ? fq_channel_name_problem(json_string_value(value))
                                                : "channel must be a string";
    if (problem) {
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST, "channel: %s", problem);
        return false;
    }
    *channel = json_string_value(value);
    return true;
}

//  Mail's own fields are refused for another channel, by name: a client
//  that sent a subject to a webhook would otherwise never see it used.
//  false after answering 400.
static bool s_no_mail_fields(fq_api_call_t *call, json_t *body, const fq_api_slice_t *headers,
                             const char *channel)
{
    static const char *const mail[] = {"from", "subject", "html", "text_body", "reply_to"};
    const char *given = headers->text ? "headers" : NULL;
    for (size_t i = 0; !given && i < sizeof mail / sizeof *mail; i++)
        if (json_object_get(body, mail[i]))
            given = mail[i];
    if (given)
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST,
                    "%s is for mail only: channel \"%s\" takes none of from, subject, html, "
                    "text_body, headers and reply_to",
                    given, channel);
    return !given;
}

//  An http object's string member key into *text (NULL when absent and
//  not required); false after answering 400.
static bool s_http_string(fq_api_call_t *call, json_t *http, const char *key, bool required,
                          const char **text)
{
    json_t *value = json_object_get(http, key);
    *text = json_string_value(value);
    if (json_is_string(value) || (!value && !required))
        return true;
    fq_api_fail(call, MHD_HTTP_BAD_REQUEST,
                value ? "http.%s must be a string" : "http.%s is required", key);
    return false;
}

//  What a submit's "http" holds, as it is read: the object (owned), and
//  its headers as arrays borrowed from it.
typedef struct {
    json_t *object;
    const char **names;
    const char **values;
    size_t count;
} s_http_t;

static void s_http_free(s_http_t *http)
{
    json_decref(http->object);
    free(http->names);
    free(http->values);
    *http = (s_http_t){0};
}

//  The headers of an http object into http's arrays; false after
//  answering 400 (or 500).
static bool s_http_headers(fq_api_call_t *call, s_http_t *http)
{
    json_t *headers = json_object_get(http->object, "headers");
    if (!headers)
        return true;
    if (!json_is_object(headers)) {
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST,
                    "http.headers must be an object of header names to string values");
        return false;
    }
    size_t size = json_object_size(headers);
    http->names = calloc(size ? size : 1, sizeof *http->names);
    http->values = calloc(size ? size : 1, sizeof *http->values);
    if (!http->names || !http->values) {
        fq_api_fail(call, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
        return false;
    }
    const char *name;
    json_t *value;
    json_object_foreach(headers, name, value)
    {
        if (!json_is_string(value)) {
            fq_api_fail(call, MHD_HTTP_BAD_REQUEST,
                        "http.headers \"%.*s\": its value must be a string", S_HEADER_NAME_QUOTED,
                        name);
            return false;
        }
        http->names[http->count] = name;
        http->values[http->count++] = json_string_value(value);
    }
    return true;
}

//  Reads and checks the submit's "http" (slice) for channel "http" into
//  submit (its strings borrowed from http, and its headers as one sorted
//  object in *headers_json, the caller's to free); false after answering.
static bool s_http(fq_api_call_t *call, const fq_api_slice_t *slice, fq_submit_t *submit,
                   s_http_t *http, char **headers_json)
{
    static const char *const keys[] = {"method", "url",         "headers",
                                       "body",   "body_format", "signing_secret"};
    if (!slice->text) {
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST, "http is required with channel \"http\"");
        return false;
    }
    if (slice->size > S_HTTP_OBJECT_MAX) {
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST, "http: more than %d bytes of JSON",
                    S_HTTP_OBJECT_MAX);
        return false;
    }
    json_error_t error;
    http->object = json_loadb(slice->text, slice->size, JSON_REJECT_DUPLICATES, &error);
    if (!json_is_object(http->object)) {
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST, "http must be an object%s%s",
                    http->object ? "" : ": ", http->object ? "" : error.text);
        return false;
    }
    const char *key;
    json_t *value;
    json_object_foreach(http->object, key, value)
    {
        bool known = false;
        for (size_t i = 0; i < sizeof keys / sizeof *keys && !known; i++)
            known = strcmp(key, keys[i]) == 0;
        if (!known) {
            fq_api_fail(call, MHD_HTTP_BAD_REQUEST, "http: unknown field \"%.64s\"", key);
            return false;
        }
    }
    fq_http_spec_t spec = {.body_format = FQ_HTTP_BODY_JSON};
    const char *format = NULL;
    if (!s_http_string(call, http->object, "method", true, &spec.method) ||
        !s_http_string(call, http->object, "url", true, &spec.url) ||
        !s_http_string(call, http->object, "body", false, &spec.body) ||
        !s_http_string(call, http->object, "body_format", false, &format) ||
        !s_http_string(call, http->object, "signing_secret", false, &spec.secret) ||
        !s_http_headers(call, http))
        return false;
    if (format && fq_http_body_format_parse(format, &spec.body_format) != 0) {
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST, "http.body_format must be json or form");
        return false;
    }
    spec.header_names = http->names;
    spec.header_values = http->values;
    spec.nheaders = http->count;
    char problem[FQ_HTTP_PROBLEM_SIZE];
    const char *found = fq_http_spec_problem(&spec, problem, sizeof problem);
    if (found) {
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST, "%s", found);
        return false;
    }
    //  Sorted and compact: the same headers are the same text, for the
    //  fingerprint
    json_t *headers = json_object_get(http->object, "headers");
    if (headers && json_object_size(headers) > 0 &&
        !(*headers_json = json_dumps(headers, JSON_COMPACT | JSON_SORT_KEYS))) {
        fq_api_fail(call, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
        return false;
    }
    submit->http_method = spec.method;
    submit->http_url = spec.url;
    submit->http_headers_json = *headers_json;
    submit->http_body = spec.body;
    submit->http_body_format = fq_http_body_format_name(spec.body_format);
    submit->signing_secret = spec.secret;
    return true;
}

//  The fields of a channel other than mail into submit: for "http" its
//  http object (s_http), for another its body, a template rendered as it
//  is. false after answering.
static bool s_channel_fields(fq_api_call_t *call, json_t *body, const fq_api_slice_t *slices,
                             size_t headers_slice, size_t http_slice, fq_submit_t *submit,
                             s_http_t *http, char **headers_json)
{
    if (!s_no_mail_fields(call, body, &slices[headers_slice], submit->channel))
        return false;
    if (strcmp(submit->channel, FQ_CHANNEL_HTTP) == 0) {
        if (json_object_get(body, "body")) {
            fq_api_fail(call, MHD_HTTP_BAD_REQUEST,
                        "body: an http request gives its body as http.body");
            return false;
        }
        return s_http(call, &slices[http_slice], submit, http, headers_json);
    }
    if (slices[http_slice].text) {
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST, "http is for channel \"http\" only, not \"%s\"",
                    submit->channel);
        return false;
    }
    return (submit->body = s_string(call, body, "body")) &&
           s_template(call, submit->body, FQ_TEMPLATE_PLAIN, "body");
}

//  The request's one-click unsubscribe (0021) as the body gives it (absent:
//  its tenant's default). Mail's only; true needs a fairqd that makes
//  unsubscribe links (unsubscribe_url), and the request then may not give
//  List-Unsubscribe or List-Unsubscribe-Post among its headers (headers:
//  the object s_headers made, NULL for none), which fairq writes. A
//  tenant's default that is on is checked by fairq.submit_keyed (0021),
//  which refuses those headers too. False after answering 400.
static bool s_unsubscribe(fq_api_call_t *call, json_t *body, bool email, const char *headers,
                          fq_submit_unsubscribe_t *unsubscribe)
{
    json_t *value = json_object_get(body, "unsubscribe");
    *unsubscribe = FQ_SUBMIT_UNSUBSCRIBE_TENANT;
    if (!value)
        return true;
    if (!json_is_boolean(value)) {
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST, "unsubscribe must be true or false");
        return false;
    }
    *unsubscribe = json_is_true(value) ? FQ_SUBMIT_UNSUBSCRIBE_ON : FQ_SUBMIT_UNSUBSCRIBE_OFF;
    if (!json_is_true(value))
        return true;
    if (!email) {
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST, "unsubscribe is for mail only");
        return false;
    }
    if (!call->server->unsubscribe_on) {
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST,
                    "unsubscribe needs one-click unsubscribe configured (fairqd's "
                    "unsubscribe_url): ask the operator");
        return false;
    }
    json_t *given = headers ? json_loads(headers, 0, NULL) : NULL;
    const char *name;
    json_t *ignored;
    bool clash = false;
    json_object_foreach(given, name, ignored)
    {
        if (fq_mail_header_unsubscribe(name)) {
            fq_api_fail(call, MHD_HTTP_BAD_REQUEST,
                        "header \"%s\": fairq writes it for a request with unsubscribe on", name);
            clash = true;
            break;
        }
    }
    json_decref(given);
    return !clash;
}

//  A submit's body as read (fq_api_internal.h): the request and what
//  holds its strings.
struct fq_api_submit {
    fq_submit_t submit;
    json_t *body;
    char *headers, *http_headers;
    s_http_t http;
};

void fq_api_submit_destroy(fq_api_submit_t **self_p)
{
    fq_api_submit_t *self = *self_p;
    if (!self)
        return;
    free(self->headers);
    free(self->http_headers);
    s_http_free(&self->http);
    json_decref(self->body);
    free(self);
    *self_p = NULL;
}

const fq_submit_t *fq_api_submit_of(const fq_api_submit_t *self)
{
    return &self->submit;
}

fq_api_submit_t *fq_api_submit_read(fq_api_call_t *call, bool scheduled)
{
    static const char *const keys[] = {"tenant",       "from",       "subject",     "body",
                                       "html",         "recipients", "send_at",     "priority",
                                       "max_attempts", "headers",    "reply_to",    "text_body",
                                       "channel",      "http",       "unsubscribe", NULL};
    //  The recipients are not built: they go to the database as the slice
    //  of the body they are, and the splitter reads them from there. The
    //  headers are built one by one as they are read (s_headers), and an
    //  http request's "http" alone, once its size is known (s_http). Each
    //  slice is named by its index, and its key given at that index (NULL
    //  after them ends the list)
    enum { S_SLICE_RECIPIENTS, S_SLICE_HEADERS, S_SLICE_HTTP, S_SLICES };
    static const char *const slice_keys[S_SLICES + 1] = {[S_SLICE_RECIPIENTS] = "recipients",
                                                         [S_SLICE_HEADERS] = "headers",
                                                         [S_SLICE_HTTP] = "http"};
    fq_api_submit_t *self = calloc(1, sizeof *self);
    if (!self) {
        fq_api_fail(call, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
        return NULL;
    }
    fq_submit_t *submit = &self->submit;
    fq_api_slice_t slices[S_SLICES];
    json_t *body = self->body = fq_api_body_fields(call, keys, slice_keys, slices);
    if (!body)
        goto fail;
    fq_api_slice_t recipients = slices[S_SLICE_RECIPIENTS];
    json_t *html = json_object_get(body, "html");
    json_t *send_at = json_object_get(body, "send_at");
    //  A schedule's request is its tenant's, sent when it fires
    const char *scheduled_field = json_object_get(body, "tenant") ? "tenant" : "send_at";
    if (scheduled && json_object_get(body, scheduled_field)) {
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST,
                    "%s: a schedule's request takes none (the schedule says whose and when)",
                    scheduled_field);
        goto fail;
    }
    if (!s_channel(call, body, &submit->channel))
        goto fail;
    bool email = fq_channel_is_email(submit->channel);
    if (!email) {
        if (!s_channel_fields(call, body, slices, S_SLICE_HEADERS, S_SLICE_HTTP, submit,
                              &self->http, &self->http_headers))
            goto fail;
    } else if (slices[S_SLICE_HTTP].text) {
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST,
                    "http is for channel \"http\" only: this request is mail (channel "
                    "\"email\", the default)");
        goto fail;
    } else if (!(submit->from = s_string(call, body, "from")) || !s_from(call, submit->from) ||
               !(submit->subject = s_string(call, body, "subject")) ||
               !(submit->body = s_string(call, body, "body")))
        goto fail;
    if (email && html && !json_is_boolean(html)) {
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST, "html must be true or false");
        goto fail;
    }
    submit->body_is_html = json_is_true(html);
    if (email &&
        (!s_template(call, submit->subject, FQ_TEMPLATE_HEADER, "subject") ||
         !s_template(call, submit->body,
                     submit->body_is_html ? FQ_TEMPLATE_HTML : FQ_TEMPLATE_PLAIN, "body") ||
         !s_text_body(call, body, submit->body_is_html, &submit->text_body)))
        goto fail;
    if (!recipients.text || *recipients.text != '[' ||
        fq_api_json_array_empty(recipients.text, recipients.size)) {
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST,
                    recipients.text ? "recipients must be a non-empty array"
                                    : "recipients is required");
        goto fail;
    }
    if (!s_recipients_shape(call, &recipients))
        goto fail;
    if ((send_at && !fq_api_parse_time(call, send_at, "send_at", &submit->send_at)) ||
        !s_int(call, body, "priority", FQ_PRIORITY_MIN, FQ_PRIORITY_MAX, &submit->priority) ||
        !s_int(call, body, "max_attempts", S_MAX_ATTEMPTS_MIN, S_MAX_ATTEMPTS_MAX,
               &submit->max_attempts) ||
        (email && (!s_headers(call, &slices[S_SLICE_HEADERS], &self->headers) ||
                   !s_reply_to(call, body, &submit->reply_to))) ||
        !s_unsubscribe(call, body, email, self->headers, &submit->unsubscribe) ||
        (!scheduled && (!s_idempotency_key(call, &submit->idempotency_key) ||
                        !(submit->tenant = s_submit_tenant(call, body)))))
        goto fail;
    submit->headers_json = self->headers;
    //  Each recipient's values are checked by the splitter, which refuses
    //  a bad one alone (API.md)
    submit->recipients_json = recipients.text;
    submit->recipients_size = recipients.size;
    return self;
fail:
    fq_api_submit_destroy(&self);
    return NULL;
}

void fq_api_request_submit(fq_api_call_t *call)
{
    if (!fq_api_query_allowed(call, NULL))
        return;
    fq_api_submit_t *read = fq_api_submit_read(call, false);
    if (!read)
        return;
    const fq_submit_t submit = read->submit;
    //  A client retrying with its key gets the first request, without
    //  spending its submit rate on it
    int64_t id = 0;
    int rc = fq_store_request_by_key(call->store, &submit, &id);
    if (s_key_answered(call, &submit, rc, id) || !s_rate_allows(call))
        goto done;
    rc = fq_store_submit(call->store, &submit, &id);
    if (rc == 0) {
        s_reply_request(call, MHD_HTTP_ACCEPTED, id);
        goto done;
    }
    //  Its key taken meanwhile by another call (a client's retry racing
    //  its first try) is answered as above; either way no token is spent
    if (rc == 1 || rc == FQ_ECONFLICT)
        s_key_answered(call, &submit, rc, id);
    else
        fq_api_fail_store(call, rc);
    s_rate_give_back(call);
done:
    fq_api_submit_destroy(&read);
}

//  ---------------------------------------------------------------------
//  One request

//  The request of the path, if the caller may see it, for the caller to
//  free (fq_request_info_free) whatever the answer; false after
//  answering.
static bool s_load(fq_api_call_t *call, fq_request_info_t *request)
{
    int64_t id;
    *request = (fq_request_info_t){0};
    if (!fq_api_parse_id(call, call->params[0], "request", false, &id))
        return false;
    int rc = fq_store_request_get(call->store, id, request);
    //  A webhook's batch is no request a tenant reads or changes: its
    //  endpoint says how it fares (GET .../webhooks/{id}), and a batch
    //  paused or cancelled here would hold up or skip the endpoint's events
    if (rc == 0 && request->webhook_id) {
        fq_request_info_free(request);
        rc = FQ_ENOTFOUND;
    }
    if (rc == FQ_ENOTFOUND)
        return fq_api_may_see(call, -1, "request", id); //  The same 404 as another's
    if (rc) {
        fq_api_fail_store(call, rc);
        return false;
    }
    return fq_api_may_see(call, request->tenant_id, "request", id);
}

void fq_api_request_get(fq_api_call_t *call)
{
    fq_request_info_t request = {0};
    if (fq_api_query_allowed(call, NULL) && s_load(call, &request))
        fq_api_reply(call, MHD_HTTP_OK, fq_api_request_json(call, &request));
    fq_request_info_free(&request);
}

//  A change to a finished request is a conflict, unless it is already
//  what was asked (already: cancelling a cancelled request).
static bool s_changeable(fq_api_call_t *call, const fq_request_info_t *request, const char *already)
{
    if (!fq_request_status_finished(request->status) ||
        (already && strcmp(request->status, already) == 0))
        return true;
    fq_api_fail(call, MHD_HTTP_CONFLICT, "request %lld is %s: it can no longer change",
                (long long)request->id, request->status);
    return false;
}

//  Runs a lifecycle change and answers the request as it is after it.
static void s_lifecycle(fq_api_call_t *call, int (*change)(fq_store_t *, int64_t),
                        const char *already)
{
    fq_request_info_t request = {0};
    bool changeable = fq_api_query_allowed(call, NULL) && s_load(call, &request) &&
                      s_changeable(call, &request, already);
    fq_request_info_free(&request);
    if (!changeable)
        return;
    int rc = change(call->store, request.id);
    //  It finished between the read and the change (the store's words)
    if (rc == FQ_EINVAL && !*fq_store_error_sqlstate(call->store))
        fq_api_fail(call, MHD_HTTP_CONFLICT, "%s", fq_store_error(call->store));
    else if (rc < 0)
        fq_api_fail_store(call, rc);
    else
        s_reply_request(call, MHD_HTTP_OK, request.id);
}

void fq_api_request_cancel(fq_api_call_t *call)
{
    s_lifecycle(call, fq_store_request_cancel, "cancelled");
}

void fq_api_request_pause(fq_api_call_t *call)
{
    s_lifecycle(call, fq_store_request_pause, NULL);
}

void fq_api_request_resume(fq_api_call_t *call)
{
    s_lifecycle(call, fq_store_request_resume, NULL);
}

void fq_api_request_patch(fq_api_call_t *call)
{
    static const char *const keys[] = {"send_at", "priority", NULL};
    fq_request_info_t request = {0};
    if (!fq_api_query_allowed(call, NULL))
        return;
    json_t *body = fq_api_body_fields(call, keys, NULL, NULL);
    if (!body)
        return;
    fq_request_change_t change = {0};
    json_t *send_at = json_object_get(body, "send_at");
    change.set_send_at = send_at != NULL;
    change.set_priority = json_object_get(body, "priority") != NULL;
    if ((send_at && !fq_api_parse_time(call, send_at, "send_at", &change.send_at)) ||
        !s_int(call, body, "priority", FQ_PRIORITY_MIN, FQ_PRIORITY_MAX, &change.priority))
        goto done;
    if (!change.set_send_at && !change.set_priority) {
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST, "nothing to change: give send_at or priority");
        goto done;
    }
    if (!s_load(call, &request) || !s_changeable(call, &request, NULL))
        goto done;
    int rc = fq_store_request_change(call->store, request.id, &change);
    int64_t id = request.id;
    fq_request_info_free(&request);
    if (rc == FQ_EINVAL && fq_store_request_get(call->store, id, &request) == 0 &&
        fq_request_status_finished(request.status))
        fq_api_fail(call, MHD_HTTP_CONFLICT, "request %lld is %s: it can no longer change",
                    (long long)request.id, request.status);
    else if (rc < 0)
        fq_api_fail_store(call, rc);
    else
        s_reply_request(call, MHD_HTTP_OK, id);
done:
    fq_request_info_free(&request);
    json_decref(body);
}

void fq_api_request_rejects(fq_api_call_t *call)
{
    static const char *const params[] = {"after", "limit", NULL};
    fq_request_info_t request = {0};
    int64_t after, limit;
    bool loaded = fq_api_query_allowed(call, params) && s_load(call, &request);
    fq_request_info_free(&request);
    if (!loaded ||
        !fq_api_parse_int(call, fq_api_query(call, "after"), "after", -1, INT32_MAX, -1, &after) ||
        !fq_api_parse_int(call, fq_api_query(call, "limit"), "limit", 1, FQ_STORE_PAGE_MAX,
                          FQ_API_PAGE_DEFAULT, &limit))
        return;
    fq_reject_page_t page;
    int rc = fq_store_rejects(call->store, request.id, (int)after, (int)limit, &page);
    if (rc < 0) {
        fq_api_fail_store(call, rc);
        return;
    }
    json_t *rows = json_array();
    for (size_t i = 0; i < page.count; i++)
        json_array_append_new(
            rows,
            json_pack("{s:i, s:o, s:s}", "position", page.rows[i].position, "recipient",
                      page.rows[i].recipient ? json_string(page.rows[i].recipient) : json_null(),
                      "reason", page.rows[i].reason));
    json_t *next = page.count == (size_t)limit ? json_integer(page.rows[page.count - 1].position)
                                               : json_null();
    fq_reject_page_free(&page);
    fq_api_reply(call, MHD_HTTP_OK, json_pack("{s:o, s:o}", "rejects", rows, "next_after", next));
}

//  ---------------------------------------------------------------------
//  Lists

void fq_api_request_list(fq_api_call_t *call)
{
    static const char *const params[] = {"tenant", "status", "before", "limit", NULL};
    if (!fq_api_query_allowed(call, params))
        return;
    const char *tenant = fq_api_query(call, "tenant");
    const char *status = fq_api_query(call, "status");
    int64_t before, limit, tenant_id = call->owner.tenant_id;
    if (!fq_api_parse_id(call, fq_api_query(call, "before"), "before", true, &before) ||
        !fq_api_parse_int(call, fq_api_query(call, "limit"), "limit", 1, FQ_STORE_PAGE_MAX,
                          FQ_API_PAGE_DEFAULT, &limit))
        return;
    if (status && !fq_request_status_valid(status)) {
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST,
                    "status must be accepted, splitting, active, paused, done, cancelled or"
                    " rejected");
        return;
    }
    if (tenant && !call->owner.admin && strcmp(tenant, call->owner.tenant) != 0) {
        fq_api_fail(call, MHD_HTTP_NOT_FOUND, "could not read tenant: \"%.*s\" does not exist",
                    FQ_TENANT_NAME_MAX, tenant);
        return;
    }
    int rc = 0;
    if (tenant && call->owner.admin)
        rc = fq_store_tenant_id(call->store, tenant, &tenant_id);
    fq_request_list_t list = {0};
    if (rc == 0)
        rc = fq_store_request_list(call->store, tenant_id, status, before, (int)limit, &list);
    if (rc < 0) {
        fq_api_fail_store(call, rc);
        return;
    }
    json_t *rows = json_array();
    for (size_t i = 0; i < list.count; i++)
        json_array_append_new(rows, fq_api_request_json(call, &list.rows[i]));
    json_t *next =
        list.count == (size_t)limit ? json_integer(list.rows[list.count - 1].id) : json_null();
    fq_request_list_free(&list);
    fq_api_reply(call, MHD_HTTP_OK, json_pack("{s:o, s:o}", "requests", rows, "next_before", next));
}
