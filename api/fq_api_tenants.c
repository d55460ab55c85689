/*  fq_api_tenants.c — /v1/tenants: the tenants with their limits and live
    figures, creating and changing them, issuing their tokens (api/API.md).
    Depth and age come from the database's counters; what is in flight and
    the send rate from the dispatcher's metrics; the bounce and complaint
    rates of the last day from the figures /metrics reads from the
    database at most once a minute (fq_api_rates_refresh).

    A tenant's send budget (migration 0017) is "max_send_rate", not
    "send_rate": that name was the live figure, messages acked a second,
    long before a tenant had a limit on it, and clients (fairq top) read
    it as a number. The limit and the figure sit side by side as
    max_inflight and inflight do. */
#include "fq_api_internal.h"
#include "fq_api_latency.h"
#include "fq_channel.h"
#include "fq_error.h"
#include "fq_limits.h"
#include "fq_rate.h"
#include <limits.h>
#include <string.h>

//  The schema's limits (0001_schema.sql).
#define S_WEIGHT_MIN 1
#define S_WEIGHT_MAX 1000

//  Every count a rate's text takes fits the schema's (fq_limits.h).
_Static_assert(FQ_RATE_COUNT_MAX <= FQ_TENANT_SEND_RATE_COUNT_MAX, "send rate count");

//  Room for what fq_rate_parse says of a bad rate: its text quoted (cut)
//  and the units it takes.
#define S_PROBLEM_SIZE 256

//  A nullable limit of a tenant, 0 for none: the number, or null.
static json_t *s_nullable(int64_t value)
{
    return value > 0 ? json_integer((json_int_t)value) : json_null();
}

//  A rate of the last day (fq_metrics_tenant_rates_of), or null when not
//  known.
static json_t *s_rate_json(double rate)
{
    return rate >= 0 ? json_real(rate) : json_null();
}

//  Its send rate as operators write it ("100/s"), or null.
static json_t *s_send_rate_json(const fq_tenant_info_t *t)
{
    if (t->send_rate_count <= 0)
        return json_null();
    fq_rate_t rate = {t->send_rate_count, t->send_rate_period_s};
    char text[FQ_RATE_TEXT_SIZE];
    fq_rate_format(&rate, text);
    return json_string(text);
}

static json_t *s_tenant_json(fq_api_call_t *call, const fq_tenant_info_t *t)
{
    int64_t inflight = 0;
    double send_rate = 0;
    if (call->server->metrics)
        fq_metrics_tenant_live(call->server->metrics, t->name, &inflight, &send_rate);
    json_t *object = json_pack(
        "{s:s, s:i, s:i, s:o, s:o, s:o, s:I, s:I, s:I, s:I, s:I, s:I, s:f, s:I, s:b}", "name",
        t->name, "weight", t->weight, "max_inflight", t->max_inflight, "submit_rate",
        s_nullable(t->submit_rate), "max_send_rate", s_send_rate_json(t), "daily_quota",
        s_nullable(t->daily_quota), "sent_today", (json_int_t)t->sent_today, "open_requests",
        (json_int_t)t->open_requests, "depth", (json_int_t)t->depth, "failed",
        (json_int_t)t->failed, "unsplit", (json_int_t)t->unsplit, "inflight", (json_int_t)inflight,
        "send_rate", send_rate, "oldest_pending_age_s", (json_int_t)t->oldest_pending_s,
        "signing_secret_set", t->signing_secret_set);
    //  Its requests' one-click unsubscribe default (0021)
    if (object)
        json_object_set_new(object, "unsubscribe", json_boolean(t->unsubscribe));
    //  An operator's hold (0024), and the age of its oldest work due now:
    //  oldest_pending_age_s counts paused and later work too
    if (object) {
        json_object_set_new(object, "held", json_boolean(t->held != 0));
        json_object_set_new(object, "oldest_due_age_s", json_integer((json_int_t)t->oldest_due_s));
    }
    //  Its hard-bounce and complaint rates of the last day, as /metrics
    //  shows them (read at most once a minute: fq_api_rates_refresh)
    if (object) {
        double bounce_rate, complaint_rate;
        fq_metrics_tenant_rates_of(call->server->metrics, t->name, &bounce_rate, &complaint_rate);
        json_object_set_new(object, "bounce_rate", s_rate_json(bounce_rate));
        json_object_set_new(object, "complaint_rate", s_rate_json(complaint_rate));
    }
    //  Its delivery and end-to-end times of the last minutes, as this
    //  fairqd saw the acks (nothing on one that does not lead)
    if (object) {
        fq_latency_view_t latency;
        fq_metrics_tenant_latency(call->server->metrics, t->name, &latency);
        json_object_set_new(object, "latency", fq_api_latency_json(&latency));
    }
    return object;
}

//  The tenant's unsubscribe default as the body gives it (absent: kept,
//  0), into *unsubscribe (above 0 on, below 0 off). true may be asked
//  only of a fairqd that makes unsubscribe links (unsubscribe_url): its
//  mail could not carry them. False after answering 400.
static bool s_unsubscribe(fq_api_call_t *call, json_t *body, int *unsubscribe)
{
    json_t *value = json_object_get(body, "unsubscribe");
    *unsubscribe = 0;
    if (!value)
        return true;
    if (!json_is_boolean(value)) {
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST, "unsubscribe must be true or false");
        return false;
    }
    if (json_is_true(value) && !call->server->unsubscribe_on) {
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST,
                    "unsubscribe needs one-click unsubscribe configured (fairqd's "
                    "unsubscribe_url): ask the operator");
        return false;
    }
    *unsubscribe = json_is_true(value) ? 1 : -1;
    return true;
}

//  The tenant of the path, if the caller may see it; false after
//  answering (another tenant's name answers as an unknown one).
static bool s_load(fq_api_call_t *call, fq_tenant_info_t *tenant)
{
    const char *name = call->params[0];
    if (!fq_tenant_name_valid(name)) {
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST, FQ_API_TENANT_NAME_RULE, FQ_TENANT_NAME_MAX);
        return false;
    }
    if (!call->owner.admin && strcmp(name, call->owner.tenant) != 0) {
        fq_api_fail(call, MHD_HTTP_NOT_FOUND, "could not read tenant: \"%s\" does not exist", name);
        return false;
    }
    int rc = fq_store_tenant_get(call->store, name, tenant);
    if (rc)
        fq_api_fail_store(call, rc);
    return rc == 0;
}

void fq_api_tenant_list(fq_api_call_t *call)
{
    if (!fq_api_query_allowed(call, NULL))
        return;
    json_t *rows = json_array();
    if (!call->owner.admin) {
        fq_tenant_info_t tenant;
        int rc = fq_store_tenant_get(call->store, call->owner.tenant, &tenant);
        if (rc) {
            json_decref(rows);
            fq_api_fail_store(call, rc);
            return;
        }
        fq_api_rates_refresh(call);
        json_array_append_new(rows, s_tenant_json(call, &tenant));
    } else {
        fq_tenant_list_t list;
        int rc = fq_store_tenant_list(call->store, &list);
        if (rc < 0) {
            json_decref(rows);
            fq_api_fail_store(call, rc);
            return;
        }
        fq_api_rates_refresh(call);
        for (size_t i = 0; i < list.count; i++)
            json_array_append_new(rows, s_tenant_json(call, &list.rows[i]));
        fq_tenant_list_free(&list);
    }
    fq_api_reply(call, MHD_HTTP_OK, json_pack("{s:o}", "tenants", rows));
}

void fq_api_tenant_get(fq_api_call_t *call)
{
    fq_tenant_info_t tenant;
    if (!fq_api_query_allowed(call, NULL) || !s_load(call, &tenant))
        return;
    fq_api_rates_refresh(call);
    fq_api_reply(call, MHD_HTTP_OK, s_tenant_json(call, &tenant));
}

//  An optional positive integer field up to max; null allowed when
//  nullable (written as -1). false after answering 400.
static bool s_limit(fq_api_call_t *call, json_t *body, const char *key, int64_t min, int64_t max,
                    bool nullable, int64_t *out)
{
    json_t *value = json_object_get(body, key);
    if (!value)
        return true;
    if (nullable && json_is_null(value)) {
        *out = -1;
        return true;
    }
    if (json_is_integer(value) && json_integer_value(value) >= min &&
        json_integer_value(value) <= max) {
        *out = json_integer_value(value);
        return true;
    }
    fq_api_fail(call, MHD_HTTP_BAD_REQUEST, "%s must be an integer within %lld..%lld%s", key,
                (long long)min, (long long)max, nullable ? ", or null" : "");
    return false;
}

//  The same, for a field that fits an int (the schema's integer columns).
static bool s_int_limit(fq_api_call_t *call, json_t *body, const char *key, int min, int max,
                        bool nullable, int *out)
{
    int64_t value = *out;
    if (!s_limit(call, body, key, min, max, nullable, &value))
        return false;
    *out = (int)value;
    return true;
}

//  "max_send_rate": a text ("100/s") into spec, null to remove it (count
//  -1), absent to keep it (count 0). false after answering 400.
static bool s_send_rate(fq_api_call_t *call, json_t *body, fq_tenant_spec_t *spec)
{
    json_t *value = json_object_get(body, "max_send_rate");
    if (!value)
        return true;
    if (json_is_null(value)) {
        spec->send_rate_count = -1;
        return true;
    }
    if (!json_is_string(value)) {
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST,
                    "max_send_rate must be a text such as \"100/s\", \"5/min\", \"10000/h\" or "
                    "\"1000/d\", or null");
        return false;
    }
    fq_rate_t rate;
    char problem[S_PROBLEM_SIZE];
    if (fq_rate_parse(json_string_value(value), &rate, problem, sizeof problem) != 0) {
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST, "max_send_rate: %s", problem);
        return false;
    }
    spec->send_rate_count = rate.count;
    spec->send_rate_period_s = rate.period_s;
    return true;
}

//  The tenant's default signing secret for its http requests: a secret
//  into *secret, "" for null (remove it), NULL when not given; false after
//  answering 400. Never echoed: an answer says only that there is one.
static bool s_signing_secret(fq_api_call_t *call, json_t *body, const char **secret)
{
    json_t *value = json_object_get(body, "signing_secret");
    *secret = NULL;
    if (!value)
        return true;
    if (json_is_null(value)) {
        *secret = "";
        return true;
    }
    const char *problem =
        json_is_string(value) ? fq_http_secret_problem(json_string_value(value)) : "";
    if (problem) {
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST, "signing_secret must be null, or %s",
                    *problem ? problem : "a string");
        return false;
    }
    *secret = json_string_value(value);
    return true;
}

void fq_api_tenant_put(fq_api_call_t *call)
{
    static const char *const keys[] = {
        "weight",        "max_inflight", "submit_rate", "signing_secret",
        "max_send_rate", "daily_quota",  "unsubscribe", NULL};
    const char *name = call->params[0];
    if (!fq_api_query_allowed(call, NULL))
        return;
    if (!fq_tenant_name_valid(name)) {
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST, FQ_API_TENANT_NAME_RULE, FQ_TENANT_NAME_MAX);
        return;
    }
    json_t *body = fq_api_body_fields(call, keys, NULL, NULL);
    if (!body)
        return;
    fq_tenant_spec_t spec = {
        .name = name,
        .defaults = {
            atomic_load_explicit(&call->server->tenant_weight, memory_order_relaxed),
            atomic_load_explicit(&call->server->tenant_max_inflight, memory_order_relaxed),
            atomic_load_explicit(&call->server->tenant_submit_rate, memory_order_relaxed)}};
    int64_t id;
    if (s_int_limit(call, body, "weight", S_WEIGHT_MIN, S_WEIGHT_MAX, false, &spec.weight) &&
        s_int_limit(call, body, "max_inflight", 1, INT_MAX, false, &spec.max_inflight) &&
        s_int_limit(call, body, "submit_rate", 1, INT_MAX, true, &spec.submit_rate) &&
        s_signing_secret(call, body, &spec.signing_secret) && s_send_rate(call, body, &spec) &&
        s_limit(call, body, "daily_quota", 1, FQ_TENANT_DAILY_QUOTA_MAX, true, &spec.daily_quota) &&
        s_unsubscribe(call, body, &spec.unsubscribe)) {
        int rc = fq_store_tenant_id(call->store, name, &id);
        bool created = rc == FQ_ENOTFOUND;
        if (rc == 0 || created)
            rc = fq_store_tenant_put(call->store, &spec, &id);
        fq_tenant_info_t tenant;
        if (rc == 0)
            rc = fq_store_tenant_get(call->store, name, &tenant);
        if (rc)
            fq_api_fail_store(call, rc);
        else
            fq_api_reply(call, created ? MHD_HTTP_CREATED : MHD_HTTP_OK,
                         s_tenant_json(call, &tenant));
    }
    json_decref(body);
}

void fq_api_tenant_token(fq_api_call_t *call)
{
    fq_tenant_info_t tenant;
    if (!fq_api_query_allowed(call, NULL) || !s_load(call, &tenant))
        return;
    char token[FQ_STORE_TOKEN_SIZE];
    int64_t id = 0;
    int rc = fq_store_token_create(call->store, tenant.name, token, sizeof token, &id);
    if (rc) {
        fq_api_fail_store(call, rc);
        return;
    }
    fq_api_reply(
        call, MHD_HTTP_CREATED,
        json_pack("{s:s, s:I, s:s}", "tenant", tenant.name, "id", (json_int_t)id, "token", token));
    memset(token, 0, sizeof token);
}

void fq_api_tenant_tokens(fq_api_call_t *call)
{
    fq_tenant_info_t tenant;
    if (!fq_api_query_allowed(call, NULL) || !s_load(call, &tenant))
        return;
    fq_token_list_t list;
    int rc = fq_store_token_list(call->store, tenant.name, &list);
    if (rc < 0) {
        fq_api_fail_store(call, rc);
        return;
    }
    json_t *rows = json_array();
    for (size_t i = 0; i < list.count; i++)
        json_array_append_new(rows, json_pack("{s:I, s:o}", "id", (json_int_t)list.rows[i].id,
                                              "created_at", fq_api_time(list.rows[i].created_at)));
    fq_token_list_free(&list);
    fq_api_reply(call, MHD_HTTP_OK, json_pack("{s:s, s:o}", "tenant", tenant.name, "tokens", rows));
}

void fq_api_tenant_token_revoke(fq_api_call_t *call)
{
    fq_tenant_info_t tenant;
    int64_t id;
    if (!fq_api_query_allowed(call, NULL) || !s_load(call, &tenant) ||
        !fq_api_parse_id(call, call->params[1], "token", false, &id))
        return;
    int rc = fq_store_token_revoke(call->store, tenant.name, id);
    if (rc == FQ_ENOTFOUND)
        fq_api_fail(call, MHD_HTTP_NOT_FOUND, "tenant \"%s\" has no token %lld", tenant.name,
                    (long long)id);
    else if (rc)
        fq_api_fail_store(call, rc);
    else
        fq_api_reply(call, MHD_HTTP_OK,
                     json_pack("{s:s, s:I, s:b}", "tenant", tenant.name, "id", (json_int_t)id,
                               "revoked", 1));
}
