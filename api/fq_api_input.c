/*  fq_api_input.c — reading what a call brings (query values, path ids,
    JSON bodies, times) and writing the objects every route answers with.
    Every reader answers 400 itself, naming what was wrong, and returns
    false (or NULL), so a handler only checks and returns.
*/
#include "fq_api_internal.h"
#include "fq_limits.h"
#include "fq_utf8.h"
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

//  An RFC 3339 time: "2026-11-21T10:04:05Z" and its room.
#define S_TIME_TEXT 32

//  The last second RFC 3339 can write (9999-12-31T23:59:59Z): later times
//  are refused here rather than by the database, in its own words.
#define S_TIME_MAX 253402300799LL

//  ---------------------------------------------------------------------
//  Query values

typedef struct {
    fq_api_call_t *call;
    const char *const *names;
    const char *unknown;  //  The first name not allowed
    const char *not_utf8; //  The first one whose value is not UTF-8
} s_query_check_t;

static enum MHD_Result s_query_key(void *cls, enum MHD_ValueKind kind, const char *key,
                                   const char *value)
{
    (void)kind;
    s_query_check_t *check = cls;
    bool known = false;
    for (const char *const *name = check->names; name && *name && !known; name++)
        known = strcmp(key, *name) == 0;
    if (!known)
        check->unknown = key;
    //  Values go to the database, which refuses text that is not UTF-8
    //  in its own words
    else if (value && !fq_utf8_valid(value, strlen(value)))
        check->not_utf8 = key;
    return known && !check->not_utf8 ? MHD_YES : MHD_NO;
}

bool fq_api_query_allowed(fq_api_call_t *call, const char *const *names)
{
    s_query_check_t check = {.call = call, .names = names};
    MHD_get_connection_values(call->connection, MHD_GET_ARGUMENT_KIND, s_query_key, &check);
    if (check.unknown)
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST, "unknown query parameter \"%.64s\"", check.unknown);
    else if (check.not_utf8)
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST, "query parameter %s is not valid UTF-8",
                    check.not_utf8);
    return !check.unknown && !check.not_utf8;
}

const char *fq_api_query(fq_api_call_t *call, const char *name)
{
    return MHD_lookup_connection_value(call->connection, MHD_GET_ARGUMENT_KIND, name);
}

bool fq_api_parse_int(fq_api_call_t *call, const char *text, const char *what, int64_t min,
                      int64_t max, int64_t def, int64_t *value)
{
    if (!text) {
        *value = def;
        return true;
    }
    char *end;
    errno = 0;
    long long parsed = strtoll(text, &end, 10);
    //  Digits only: strtoll would take blanks and a '+'
    bool digits = *text && (isdigit((unsigned char)*text) || *text == '-');
    if (!digits || *end || errno == ERANGE || parsed < min || parsed > max) {
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST,
                    "%s must be an integer within %lld..%lld, not \"%.32s\"", what, (long long)min,
                    (long long)max, text);
        return false;
    }
    *value = parsed;
    return true;
}

bool fq_api_parse_id(fq_api_call_t *call, const char *text, const char *what, bool optional,
                     int64_t *id)
{
    *id = 0;
    if (optional && (!text || !*text))
        return true;
    char *end = NULL;
    errno = 0;
    long long parsed = text && isdigit((unsigned char)*text) ? strtoll(text, &end, 10) : 0;
    if (!end || *end || errno == ERANGE || parsed <= 0) {
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST, "%s id must be a positive integer, not \"%.32s\"",
                    what, text ? text : "");
        return false;
    }
    *id = parsed;
    return true;
}

//  ---------------------------------------------------------------------
//  Bodies

typedef struct {
    fq_api_call_t *call;
    const char *const *keys;
    const char *const *slice_keys;
    fq_api_slice_t *slices;
    json_t *object;
} s_fields_t;

//  The slice key is, or NULL when it is built.
static fq_api_slice_t *s_slice_of(s_fields_t *self, const char *key)
{
    for (size_t i = 0; self->slice_keys && self->slice_keys[i]; i++)
        if (strcmp(key, self->slice_keys[i]) == 0)
            return &self->slices[i];
    return NULL;
}

//  Builds one member of the body into the object; -1 after answering 400.
static int s_field(void *arg, const char *key_text, size_t key_size, const char *value,
                   size_t value_size)
{
    s_fields_t *self = arg;
    //  The key as jansson decodes it ("\u0074enant" is "tenant")
    json_t *key_json = json_loadb(key_text, key_size, JSON_DECODE_ANY, NULL);
    const char *key = json_string_value(key_json);
    bool known = false;
    for (const char *const *k = self->keys; key && *k && !known; k++)
        known = strcmp(key, *k) == 0;
    fq_api_slice_t *slice = known ? s_slice_of(self, key) : NULL;
    int rc = -1;
    if (!known)
        fq_api_fail(self->call, MHD_HTTP_BAD_REQUEST, "unknown field \"%.64s\"", key ? key : "");
    else if (json_object_get(self->object, key) || (slice && slice->text))
        fq_api_fail(self->call, MHD_HTTP_BAD_REQUEST, "field \"%s\" is given twice", key);
    else if (slice) {
        *slice = (fq_api_slice_t){value, value_size};
        rc = 0;
    } else {
        json_t *built = *value == '['   ? json_array()
                        : *value == '{' ? json_object()
                                        : json_loadb(value, value_size, JSON_DECODE_ANY, NULL);
        if (built && json_object_set_new(self->object, key, built) == 0)
            rc = 0;
        else
            fq_api_fail(self->call, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
    }
    json_decref(key_json);
    return rc;
}

json_t *fq_api_body_fields(fq_api_call_t *call, const char *const *keys,
                           const char *const *slice_keys, fq_api_slice_t *slices)
{
    char error[JSON_ERROR_TEXT_LENGTH + 64];
    for (size_t i = 0; slice_keys && slice_keys[i]; i++)
        slices[i] = (fq_api_slice_t){0};
    if (!fq_api_json_valid(call->body, call->body_size, error, sizeof error)) {
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST, "%s", error);
        return NULL;
    }
    s_fields_t fields = {call, keys, slice_keys, slices, json_object()};
    if (!fields.object) {
        fq_api_fail(call, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
        return NULL;
    }
    int rc = fq_api_json_members(call->body, call->body_size, s_field, &fields);
    if (rc == 0)
        return fields.object;
    if (rc == -1 && !call->json)
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST, "the body must be a JSON object");
    json_decref(fields.object);
    return NULL;
}

//  ---------------------------------------------------------------------
//  Times

json_t *fq_api_time(int64_t unix_s)
{
    if (unix_s <= 0)
        return json_null();
    time_t t = (time_t)unix_s;
    struct tm tm;
    char text[S_TIME_TEXT];
    if (!gmtime_r(&t, &tm) || !strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm))
        return json_null();
    return json_string(text);
}

//  Parses an RFC 3339 date-time with a zone: "2026-11-21T10:04:05Z",
//  "...05.250+02:00" (a fraction is dropped). Returns 0 or -1.
static int s_parse_rfc3339(const char *text, int64_t *unix_s)
{
    //  RFC 3339 allows "t" for "T", and a space where readers prefer one
    char copy[S_TIME_TEXT * 2];
    size_t length = strlen(text);
    if (length < strlen("2026-11-21T10:04:05Z") || length >= sizeof copy)
        return -1;
    memcpy(copy, text, length + 1);
    if (copy[10] == 't' || copy[10] == ' ')
        copy[10] = 'T';
    struct tm tm = {0};
    const char *rest = strptime(copy, "%Y-%m-%dT%H:%M:%S", &tm);
    if (!rest)
        return -1;
    if (*rest == '.') {
        rest++;
        if (!isdigit((unsigned char)*rest))
            return -1;
        while (isdigit((unsigned char)*rest))
            rest++;
    }
    long offset_s = 0;
    if (*rest == 'Z' || *rest == 'z')
        rest++;
    else if ((*rest == '+' || *rest == '-') && isdigit((unsigned char)rest[1]) &&
             isdigit((unsigned char)rest[2]) && rest[3] == ':' && isdigit((unsigned char)rest[4]) &&
             isdigit((unsigned char)rest[5])) {
        int hours = (rest[1] - '0') * 10 + (rest[2] - '0');
        int minutes = (rest[4] - '0') * 10 + (rest[5] - '0');
        if (hours > 23 || minutes > 59)
            return -1;
        offset_s = (hours * 60L + minutes) * 60L * (*rest == '-' ? -1 : 1);
        rest += 6;
    } else
        return -1;
    if (*rest)
        return -1;
    //  A leap second (:60) is taken as the second before it: a send time a
    //  second early harms nobody
    if (tm.tm_sec == 60)
        tm.tm_sec = 59;
    //  timegm normalises: February 30th would quietly become March 2nd
    struct tm given = tm;
    time_t t = timegm(&tm);
    if (t == (time_t)-1 || tm.tm_mday != given.tm_mday || tm.tm_mon != given.tm_mon ||
        tm.tm_hour != given.tm_hour || tm.tm_min != given.tm_min)
        return -1;
    *unix_s = (int64_t)t - offset_s;
    return 0;
}

bool fq_api_parse_time(fq_api_call_t *call, json_t *value, const char *what, int64_t *unix_s)
{
    if (json_is_integer(value) && json_integer_value(value) >= 0 &&
        json_integer_value(value) <= S_TIME_MAX) {
        *unix_s = json_integer_value(value);
        return true;
    }
    if (json_is_string(value) && s_parse_rfc3339(json_string_value(value), unix_s) == 0 &&
        *unix_s >= 0 && *unix_s <= S_TIME_MAX)
        return true;
    fq_api_fail(call, MHD_HTTP_BAD_REQUEST,
                "%s must be an RFC 3339 time with a zone (2026-11-21T10:04:05Z) or Unix seconds,"
                " before the year 10000",
                what);
    return false;
}

//  ---------------------------------------------------------------------
//  Answers

json_t *fq_api_request_json(fq_api_call_t *call, const fq_request_info_t *r)
{
    json_t *json = json_object();
    json_object_set_new(json, "id", json_integer(r->id));
    json_object_set_new(json, "tenant", json_string(r->tenant));
    json_object_set_new(json, "status", json_string(r->status));
    json_object_set_new(json, "priority", json_integer(r->priority));
    json_object_set_new(json, "total", json_integer(r->total));
    json_object_set_new(json, "pending", json_integer(r->pending));
    json_object_set_new(json, "inflight",
                        json_integer(fq_metrics_request_inflight(call->server->metrics, r->id)));
    json_object_set_new(json, "sent", json_integer(r->sent));
    json_object_set_new(json, "failed", json_integer(r->failed));
    json_object_set_new(json, "dead", json_integer(r->dead));
    json_object_set_new(json, "cancelled", json_integer(r->cancelled));
    json_object_set_new(json, "rejected", json_integer(r->rejected));
    json_object_set_new(json, "created_at", fq_api_time(r->created_at));
    json_object_set_new(json, "send_at", fq_api_time(r->send_at));
    json_object_set_new(json, "finished_at", fq_api_time(r->finished_at));
    //  Stored by a submit this API checked (or fairq.submit_keyed's own
    //  checks): an object, "{}" for a request without any
    json_t *headers = r->headers ? json_loads(r->headers, 0, NULL) : NULL;
    json_object_set_new(json, "headers", json_is_object(headers) ? headers : json_object());
    if (headers && !json_is_object(headers))
        json_decref(headers);
    json_object_set_new(json, "reply_to", r->reply_to ? json_string(r->reply_to) : json_null());
    json_object_set_new(json, "text_body", r->text_body ? json_string(r->text_body) : json_null());
    json_object_set_new(json, "channel", json_string(r->channel));
    //  The store's object of the http fields (never the secret: whether
    //  one signs), null for another channel
    json_t *http = r->http ? json_loads(r->http, 0, NULL) : NULL;
    json_object_set_new(json, "http", json_is_object(http) ? http : json_null());
    if (http && !json_is_object(http))
        json_decref(http);
    return json;
}

bool fq_api_own_tenant(fq_api_call_t *call, const char **tenant)
{
    *tenant = call->params[0];
    if (!fq_tenant_name_valid(*tenant)) {
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST, FQ_API_TENANT_NAME_RULE, FQ_TENANT_NAME_MAX);
        return false;
    }
    if (!call->owner.admin && strcmp(*tenant, call->owner.tenant) != 0) {
        fq_api_fail(call, MHD_HTTP_NOT_FOUND, "could not read tenant: \"%s\" does not exist",
                    *tenant);
        return false;
    }
    return true;
}
