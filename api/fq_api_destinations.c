/*  fq_api_destinations.c — /v1/destinations (admin): the receiving side's
    budgets, each with its rate, burst, most in flight and domains, and how
    the scheduler shapes it right now (api/API.md, "Destinations").

    What a destination is, is read from the database; how it is shaped
    now, from the scheduler's figures in the shared metrics (a fairqd that
    does not lead, or a destination the scheduler has not seen yet, shows
    it open and idle). A PUT replaces a destination whole, domains and
    all: every field is checked here first, so that a refusal names the
    field; a domain another destination owns is the store's conflict. */
#include "fq_api_internal.h"
#include "fq_api_latency.h"
#include "fq_domain.h"
#include "fq_error.h"
#include "fq_limits.h"
#include "fq_rate.h"
#include "fq_recipients.h"
#include "fq_store_destinations.h"
#include "fq_store_holds.h"
#include <stdlib.h>
#include <string.h>

//  What a destination's name may be, as an answer says it.
#define S_NAME_RULE "a destination name is 1..%d of a-z 0-9 _ . - and starts with a letter or digit"

//  Room for what fq_rate_parse says of a bad rate: its text quoted (cut)
//  and the units it takes.
#define S_PROBLEM_SIZE 256

//  Every rate the text takes fits the schema's integer count.
_Static_assert(FQ_RATE_COUNT_MAX <= FQ_DESTINATION_RATE_COUNT_MAX, "rate count");

//  ---------------------------------------------------------------------
//  Answers

//  A rate (messages a second), null for none.
static json_t *s_rate_json(double per_s)
{
    return per_s > 0 ? json_real(per_s) : json_null();
}

//  Whether holds (fq_store_hold_list's) hold destination name.
static bool s_held(const fq_hold_list_t *holds, const char *name)
{
    for (size_t i = 0; i < holds->count; i++)
        if (holds->rows[i].scope == FQ_HOLD_DESTINATION && strcmp(holds->rows[i].name, name) == 0)
            return true;
    return false;
}

//  The destination object of API.md; holds say whether it is held.
static json_t *s_destination_json(fq_api_call_t *call, const fq_destination_t *d,
                                  const fq_hold_list_t *holds)
{
    fq_rate_t rate = {d->rate_count, d->rate_period_s};
    char rate_text[FQ_RATE_TEXT_SIZE];
    if (d->rate_count > 0)
        fq_rate_format(&rate, rate_text);
    json_t *domains = json_array();
    for (size_t i = 0; i < d->ndomains; i++)
        json_array_append_new(domains, json_string(d->domains[i]));
    fq_metrics_destination_t live;
    char state[FQ_METRICS_STATE_SIZE];
    //  Not told yet: as it would be, open, at its configured rate
    if (!fq_metrics_destination_live(call->server->metrics, d->name, &live, state))
        live.effective_per_s = d->rate_count > 0 ? fq_rate_per_s(&rate) : 0;
    json_t *figures =
        json_pack("{s:s, s:o, s:I, s:I, s:I, s:I, s:I, s:I}", "state", state, "effective_rate",
                  s_rate_json(live.effective_per_s), "ready", (json_int_t)live.ready, "inflight",
                  (json_int_t)live.inflight, "sent", (json_int_t)live.sent, "deferred",
                  (json_int_t)live.deferred, "throttled", (json_int_t)live.throttled,
                  "suspended_for_ms", (json_int_t)live.suspended_for_ms);
    //  Its delivery and end-to-end times, its channels together
    fq_latency_view_t latency;
    fq_metrics_destination_latency(call->server->metrics, d->name, &latency);
    if (figures)
        json_object_set_new(figures, "latency", fq_api_latency_json(&latency));
    return json_pack("{s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:b}", "name", d->name, "rate",
                     d->rate_count > 0 ? json_string(rate_text) : json_null(), "burst",
                     d->burst > 0 ? json_integer(d->burst) : json_null(), "max_inflight",
                     d->max_inflight > 0 ? json_integer(d->max_inflight) : json_null(), "domains",
                     domains, "updated_at", fq_api_time(d->updated_at), "live", figures, "held",
                     s_held(holds, d->name));
}

//  The destination of the path, when its name is one; false after
//  answering 400.
static bool s_name(fq_api_call_t *call, const char **name)
{
    *name = call->params[0];
    if (fq_destination_name_valid(*name))
        return true;
    fq_api_fail(call, MHD_HTTP_BAD_REQUEST, S_NAME_RULE, FQ_DESTINATION_NAME_MAX);
    return false;
}

//  Answers destination name (200, or status).
static void s_reply_one(fq_api_call_t *call, const char *name, unsigned status)
{
    fq_destination_t destination;
    int rc = fq_store_destination_get(call->store, name, &destination);
    if (rc) {
        fq_api_fail_store(call, rc);
        return;
    }
    fq_hold_list_t holds;
    rc = fq_store_hold_list(call->store, &holds);
    if (rc < 0)
        fq_api_fail_store(call, rc);
    else
        fq_api_reply(call, status, s_destination_json(call, &destination, &holds));
    fq_hold_list_free(&holds);
    fq_destination_free(&destination);
}

void fq_api_destination_list(fq_api_call_t *call)
{
    if (!fq_api_query_allowed(call, NULL))
        return;
    fq_destination_list_t list;
    int rc = fq_store_destination_list(call->store, &list);
    if (rc < 0) {
        fq_api_fail_store(call, rc);
        return;
    }
    fq_hold_list_t holds;
    rc = fq_store_hold_list(call->store, &holds);
    if (rc < 0) {
        fq_destination_list_free(&list);
        fq_api_fail_store(call, rc);
        return;
    }
    json_t *rows = json_array();
    for (size_t i = 0; i < list.count; i++)
        json_array_append_new(rows, s_destination_json(call, &list.rows[i], &holds));
    fq_hold_list_free(&holds);
    fq_destination_list_free(&list);
    fq_api_reply(call, MHD_HTTP_OK, json_pack("{s:o}", "destinations", rows));
}

void fq_api_destination_get(fq_api_call_t *call)
{
    const char *name;
    if (fq_api_query_allowed(call, NULL) && s_name(call, &name))
        s_reply_one(call, name, MHD_HTTP_OK);
}

//  ---------------------------------------------------------------------
//  PUT

//  The domains of a PUT: lowercased copies (owned), each with its place
//  in the array given, for the answers that name it.
typedef struct {
    char **names;
    size_t *positions;
    size_t count;
} s_domains_t;

static void s_domains_free(s_domains_t *domains)
{
    for (size_t i = 0; i < domains->count; i++)
        free(domains->names[i]);
    free(domains->names);
    free(domains->positions);
    *domains = (s_domains_t){0};
}

//  One domain of the array, the size bytes of JSON at text, at position:
//  lowercased and checked into domains. false after answering 400.
static bool s_domain(fq_api_call_t *call, const char *text, size_t size, size_t position,
                     s_domains_t *domains)
{
    json_t *value = json_loadb(text, size, JSON_DECODE_ANY, NULL);
    const char *given = json_string_value(value);
    size_t length = given ? json_string_length(value) : 0;
    char *copy = given ? strndup(given, length) : NULL;
    bool ok = false;
    if (!given)
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST, "domains[%zu] must be a string", position);
    else if (!copy)
        fq_api_fail(call, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
    else {
        fq_domain_lower(copy);
        const char *problem = fq_domain_problem(copy, length);
        if (problem)
            fq_api_fail(call, MHD_HTTP_BAD_REQUEST, "domains[%zu]: \"%.*s\" %s", position,
                        FQ_DOMAIN_MAX + 1, given, problem);
        else {
            domains->names[domains->count] = copy;
            domains->positions[domains->count++] = position;
            copy = NULL;
            ok = true;
        }
    }
    free(copy);
    json_decref(value);
    return ok;
}

//  Orders pointers to domains by the domain.
static int s_by_domain(const void *a, const void *b)
{
    return strcmp(**(char *const *const *)a, **(char *const *const *)b);
}

//  Reads "domains" (the slice: an array of strings, not built whole)
//  into domains. false after answering 400.
static bool s_domains(fq_api_call_t *call, const fq_api_slice_t *slice, s_domains_t *domains)
{
    *domains = (s_domains_t){0};
    //  Absent or null: none
    static const char null_text[] = "null";
    if (!slice->text ||
        (slice->size == sizeof null_text - 1 && memcmp(slice->text, null_text, slice->size) == 0))
        return true;
    if (*slice->text != '[') {
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST, "domains must be an array of domain names");
        return false;
    }
    //  Counted first, the list walked without building it: a body of
    //  millions of domains is refused before any is held
    fq_recipients_scan_t scan;
    size_t count = 0, size;
    fq_recipients_scan_start(&scan, slice->text, slice->size);
    while (fq_recipients_scan_next(&scan, &size))
        count++;
    if (count > FQ_DESTINATION_DOMAINS_MAX) {
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST, "domains: more than %d domains (%zu)",
                    FQ_DESTINATION_DOMAINS_MAX, count);
        return false;
    }
    domains->names = calloc(count + 1, sizeof *domains->names);
    domains->positions = calloc(count + 1, sizeof *domains->positions);
    if (!domains->names || !domains->positions) {
        fq_api_fail(call, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
        return false;
    }
    fq_recipients_scan_start(&scan, slice->text, slice->size);
    const char *element;
    for (size_t i = 0; (element = fq_recipients_scan_next(&scan, &size)) != NULL; i++)
        if (!s_domain(call, element, size, i, domains))
            return false;
    //  The same domain twice (in any case) is a mistake, not a merge.
    //  Sorted, neighbours alike are one given twice, named at its later place
    char **sorted[FQ_DESTINATION_DOMAINS_MAX + 1];
    for (size_t i = 0; i < domains->count; i++)
        sorted[i] = &domains->names[i];
    qsort(sorted, domains->count, sizeof *sorted, s_by_domain);
    for (size_t i = 1; i < domains->count; i++)
        if (strcmp(*sorted[i - 1], *sorted[i]) == 0) {
            size_t a = domains->positions[sorted[i - 1] - domains->names];
            size_t b = domains->positions[sorted[i] - domains->names];
            fq_api_fail(call, MHD_HTTP_BAD_REQUEST,
                        "domains[%zu]: \"%s\" is given twice (also at %zu)", a > b ? a : b,
                        *sorted[i], a > b ? b : a);
            return false;
        }
    return true;
}

//  "rate": a text ("100/s") into *rate, or null or absent (none: count
//  0). false after answering 400.
static bool s_rate(fq_api_call_t *call, json_t *body, fq_rate_t *rate)
{
    *rate = (fq_rate_t){0};
    json_t *value = json_object_get(body, "rate");
    if (!value || json_is_null(value))
        return true;
    char problem[S_PROBLEM_SIZE];
    if (!json_is_string(value)) {
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST,
                    "rate must be a text such as \"100/s\", \"5/min\", \"10000/h\" or "
                    "\"1000/d\", or null");
        return false;
    }
    if (fq_rate_parse(json_string_value(value), rate, problem, sizeof problem) != 0) {
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST, "%s", problem);
        return false;
    }
    return true;
}

//  An integer field within 1..max, or null or absent (0). false after
//  answering 400.
static bool s_limit(fq_api_call_t *call, json_t *body, const char *key, int64_t max, int64_t *out)
{
    *out = 0;
    json_t *value = json_object_get(body, key);
    if (!value || json_is_null(value))
        return true;
    if (json_is_integer(value) && json_integer_value(value) >= 1 &&
        json_integer_value(value) <= max) {
        *out = json_integer_value(value);
        return true;
    }
    fq_api_fail(call, MHD_HTTP_BAD_REQUEST, "%s must be an integer within 1..%lld, or null", key,
                (long long)max);
    return false;
}

void fq_api_destination_put(fq_api_call_t *call)
{
    static const char *const keys[] = {"rate", "burst", "max_inflight", "domains", NULL};
    static const char *const slice_keys[] = {"domains", NULL};
    const char *name;
    if (!fq_api_query_allowed(call, NULL) || !s_name(call, &name))
        return;
    fq_api_slice_t slices[1];
    json_t *body = fq_api_body_fields(call, keys, slice_keys, slices);
    if (!body)
        return;
    fq_rate_t rate;
    fq_destination_spec_t spec = {.name = name};
    s_domains_t domains = {0};
    bool good =
        s_rate(call, body, &rate) &&
        s_limit(call, body, "burst", FQ_DESTINATION_BURST_MAX, &spec.burst) &&
        s_limit(call, body, "max_inflight", FQ_DESTINATION_INFLIGHT_MAX, &spec.max_inflight) &&
        s_domains(call, &slices[0], &domains);
    if (good && spec.burst > 0 && rate.count == 0) {
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST,
                    "burst needs a rate: it is the size of the rate's bucket");
        good = false;
    }
    if (good && domains.count > 0 && strcmp(name, FQ_DESTINATION_DEFAULT) == 0) {
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST,
                    "domains: the destination \"" FQ_DESTINATION_DEFAULT
                    "\" takes none: it is every domain no other destination names");
        good = false;
    }
    if (good) {
        spec.rate_count = rate.count;
        spec.rate_period_s = rate.count > 0 ? rate.period_s : 0;
        spec.domains = (const char *const *)domains.names;
        spec.ndomains = domains.count;
        bool created = false;
        int rc = fq_store_destination_put(call->store, &spec, &created);
        if (rc)
            fq_api_fail_store(call, rc);
        else
            s_reply_one(call, name, created ? MHD_HTTP_CREATED : MHD_HTTP_OK);
    }
    s_domains_free(&domains);
    json_decref(body);
}

//  ---------------------------------------------------------------------
//  DELETE

void fq_api_destination_delete(fq_api_call_t *call)
{
    const char *name;
    if (!fq_api_query_allowed(call, NULL) || !s_name(call, &name))
        return;
    int rc = fq_store_destination_delete(call->store, name);
    if (rc)
        fq_api_fail_store(call, rc);
    else
        fq_api_reply(call, MHD_HTTP_OK, json_pack("{s:s, s:b}", "name", name, "deleted", 1));
}
