/*  fq_api_schedules.c — a tenant's schedules of recurring sends under
    /v1/tenants/{name}/schedules (api/API.md, "Schedules"): made, listed,
    read with their next and last firing, changed (paused, resumed, a new
    expression, time zone or request), and deleted. The store holds them
    (fq_store_schedules.h); fairqd's schedule firer fires them
    (docs/operations.md, "Recurring sends").

    A tenant's token manages its own schedules only: another tenant's
    answers 404 as a tenant that does not exist, as everywhere. The cron
    expression is parsed here (fq_cron.h), so a bad one is refused with
    the field that is wrong; the request is read by the very code a submit
    is read by (fq_api_submit_read), then tried by the store, so a firing
    never fails for a reason that could be known now.
*/
#include "fq_api_internal.h"
#include "fq_cron.h"
#include "fq_error.h"
#include "fq_store_schedules.h"
#include <stdlib.h>
#include <string.h>

//  What a bad value is quoted with in an answer, at most.
#define S_QUOTE_MAX 40

//  ---------------------------------------------------------------------
//  Answers

//  The schedule object of API.md; with its request when the store read it.
static json_t *s_schedule_json(const fq_schedule_t *s)
{
    json_t *request = s->request ? json_loads(s->request, 0, NULL) : NULL;
    json_t *json =
        json_pack("{s:I, s:s, s:s, s:s, s:s, s:b, s:o, s:o, s:o, s:o, s:I, s:I, s:o, s:o}", "id",
                  (json_int_t)s->id, "name", s->name, "cron", s->cron, "time_zone", s->time_zone,
                  "missed", s->missed, "paused", s->paused, "next_fire_at",
                  fq_api_time(s->paused ? 0 : s->next_fire_at), "last_fire_at",
                  fq_api_time(s->last_fire_at), "last_request",
                  s->last_request_id ? json_integer((json_int_t)s->last_request_id) : json_null(),
                  "last_error", s->last_error ? json_string(s->last_error) : json_null(), "fired",
                  (json_int_t)s->fired, "skipped", (json_int_t)s->skipped, "created_at",
                  fq_api_time(s->created_at), "updated_at", fq_api_time(s->updated_at));
    if (json && request)
        json_object_set_new(json, "request", request);
    else
        json_decref(request);
    return json;
}

//  Answers status with the one schedule of list, or the store's error.
static void s_reply_one(fq_api_call_t *call, int rc, unsigned status, fq_schedule_list_t *list)
{
    if (rc < 0)
        fq_api_fail_store(call, rc);
    else if (list->count != 1)
        fq_api_fail(call, MHD_HTTP_NOT_FOUND, "schedule %s does not exist", call->params[1]);
    else {
        json_t *json = s_schedule_json(&list->rows[0]);
        if (json)
            fq_api_reply(call, status, json);
        else
            fq_api_fail(call, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
    }
    fq_schedule_list_free(list);
}

//  ---------------------------------------------------------------------
//  Fields

//  The schedule the path names, by id (digits) or name, read with its
//  request into *list; false after answering.
static bool s_load(fq_api_call_t *call, const char *tenant, fq_schedule_list_t *list)
{
    const char *segment = call->params[1];
    int64_t id = 0;
    const char *name = NULL;
    if (*segment >= '0' && *segment <= '9') {
        if (!fq_api_parse_id(call, segment, "schedule id", false, &id))
            return false;
    } else if (fq_schedule_name_valid(segment))
        name = segment;
    else {
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST,
                    "a schedule is named by its id or its name (1..%d of a-z 0-9 _ . - starting "
                    "with a letter)",
                    FQ_SCHEDULE_NAME_MAX);
        return false;
    }
    int rc = fq_store_schedules(call->store, tenant, id, name, list);
    if (rc < 0) {
        fq_api_fail_store(call, rc);
        return false;
    }
    return true;
}

//  An optional string field into *text (NULL when absent); false after
//  answering 400.
static bool s_string(fq_api_call_t *call, json_t *body, const char *key, bool required,
                     const char **text)
{
    json_t *value = json_object_get(body, key);
    *text = json_string_value(value);
    if (value ? json_is_string(value) : !required)
        return true;
    fq_api_fail(call, MHD_HTTP_BAD_REQUEST, value ? "%s must be a string" : "%s is required", key);
    return false;
}

//  The fields of a create (required: every one but missed and paused) or
//  of a change into spec, the expression parsed into cron; false after
//  answering 400.
static bool s_fields(fq_api_call_t *call, json_t *body, bool create, fq_schedule_spec_t *spec,
                     fq_cron_t *cron)
{
    json_t *paused = json_object_get(body, "paused");
    char problem[FQ_CRON_PROBLEM_SIZE];
    if (!s_string(call, body, "name", create, &spec->name) ||
        !s_string(call, body, "cron", create, &spec->cron) ||
        !s_string(call, body, "time_zone", create, &spec->time_zone) ||
        !s_string(call, body, "missed", false, &spec->missed))
        return false;
    if (spec->name && !fq_schedule_name_valid(spec->name)) {
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST,
                    "name: a schedule's name is 1..%d of a-z 0-9 _ . - starting with a letter",
                    FQ_SCHEDULE_NAME_MAX);
        return false;
    }
    if (spec->cron && !fq_cron_parse(spec->cron, cron, problem, sizeof problem)) {
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST, "cron: %s", problem);
        return false;
    }
    if (spec->time_zone &&
        (!*spec->time_zone || strlen(spec->time_zone) > FQ_SCHEDULE_TIME_ZONE_MAX)) {
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST,
                    "time_zone: an IANA time zone name (Europe/Berlin) of 1..%d bytes",
                    FQ_SCHEDULE_TIME_ZONE_MAX);
        return false;
    }
    if (spec->missed && strcmp(spec->missed, FQ_SCHEDULE_MISSED_LATEST) != 0 &&
        strcmp(spec->missed, FQ_SCHEDULE_MISSED_SKIP) != 0) {
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST,
                    "missed must be \"" FQ_SCHEDULE_MISSED_LATEST "\" (fire the latest missed "
                    "firing once) or \"" FQ_SCHEDULE_MISSED_SKIP "\" (fire none), not \"%.*s\"",
                    S_QUOTE_MAX, spec->missed);
        return false;
    }
    if (paused && !json_is_boolean(paused)) {
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST, "paused must be true or false");
        return false;
    }
    spec->paused = paused ? json_is_true(paused) : -1;
    if (spec->cron)
        *spec = (fq_schedule_spec_t){.name = spec->name,
                                     .cron = spec->cron,
                                     .minutes = (int64_t)cron->minutes,
                                     .hours = cron->hours,
                                     .days = cron->days,
                                     .months = cron->months,
                                     .weekdays = cron->weekdays,
                                     .days_any = cron->days_any,
                                     .weekdays_any = cron->weekdays_any,
                                     .time_zone = spec->time_zone,
                                     .missed = spec->missed,
                                     .paused = spec->paused};
    return true;
}

//  The request of a create or a change: the slice read as a submit's body
//  is (its copy, NUL-terminated as a body is, in *copy: the request's
//  strings point into it), into spec. No slice (a change that keeps the
//  request) is true with nothing read. False after answering 400, with
//  "request: " before what the submit's check said.
static bool s_request(fq_api_call_t *call, const fq_api_slice_t *slice, char **copy,
                      fq_api_submit_t **read, fq_schedule_spec_t *spec)
{
    if (!slice->text)
        return true;
    if (*slice->text != '{') {
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST,
                    "request must be an object: the body of a submit (POST /v1/requests)");
        return false;
    }
    if (!(*copy = strndup(slice->text, slice->size))) {
        fq_api_fail(call, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
        return false;
    }
    //  The submit's reader reads the call's body: the request is made the
    //  body while it reads
    const char *body = call->body;
    size_t body_size = call->body_size;
    call->body = *copy;
    call->body_size = slice->size;
    *read = fq_api_submit_read(call, true);
    call->body = body;
    call->body_size = body_size;
    if (!*read) {
        json_t *detail = json_object_get(call->json, "detail");
        char *said = json_is_string(detail) ? strdup(json_string_value(detail)) : NULL;
        if (said) {
            fq_api_fail(call, call->status, "request: %s", said);
            free(said);
        }
        return false;
    }
    spec->request = *copy;
    spec->request_size = slice->size;
    spec->submit = fq_api_submit_of(*read);
    return true;
}

//  A create (id 0) or a change of schedule id, from the body.
static void s_save(fq_api_call_t *call, const char *tenant, int64_t id)
{
    static const char *const keys[] = {"name",   "cron",    "time_zone", "missed",
                                       "paused", "request", NULL};
    static const char *const slice_keys[] = {"request", NULL};
    fq_api_slice_t slices[1];
    json_t *body = fq_api_body_fields(call, keys, slice_keys, slices);
    if (!body)
        return;
    fq_schedule_spec_t spec = {.paused = -1};
    fq_cron_t cron;
    char *copy = NULL;
    fq_api_submit_t *read = NULL;
    if (id == 0 && !slices[0].text)
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST,
                    "request is required: the body of a submit (POST /v1/requests) each firing "
                    "submits");
    else if (s_fields(call, body, id == 0, &spec, &cron) &&
             s_request(call, &slices[0], &copy, &read, &spec)) {
        fq_schedule_list_t list;
        int rc = fq_store_schedule_save(call->store, tenant, id, &spec, &list);
        s_reply_one(call, rc, id == 0 ? MHD_HTTP_CREATED : MHD_HTTP_OK, &list);
    }
    fq_api_submit_destroy(&read);
    free(copy);
    json_decref(body);
}

//  ---------------------------------------------------------------------
//  Routes

void fq_api_schedule_list(fq_api_call_t *call)
{
    const char *tenant;
    if (!fq_api_query_allowed(call, NULL) || !fq_api_own_tenant(call, &tenant))
        return;
    fq_schedule_list_t list;
    int rc = fq_store_schedules(call->store, tenant, 0, NULL, &list);
    if (rc < 0) {
        fq_api_fail_store(call, rc);
        return;
    }
    json_t *rows = json_array();
    for (size_t i = 0; rows && i < list.count; i++)
        if (json_array_append_new(rows, s_schedule_json(&list.rows[i])) != 0) {
            json_decref(rows);
            rows = NULL;
        }
    fq_schedule_list_free(&list);
    if (!rows)
        fq_api_fail(call, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
    else
        fq_api_reply(call, MHD_HTTP_OK, json_pack("{s:o}", "schedules", rows));
}

void fq_api_schedule_create(fq_api_call_t *call)
{
    const char *tenant;
    if (fq_api_query_allowed(call, NULL) && fq_api_own_tenant(call, &tenant))
        s_save(call, tenant, 0);
}

void fq_api_schedule_get(fq_api_call_t *call)
{
    const char *tenant;
    fq_schedule_list_t list;
    if (fq_api_query_allowed(call, NULL) && fq_api_own_tenant(call, &tenant) &&
        s_load(call, tenant, &list))
        s_reply_one(call, 0, MHD_HTTP_OK, &list);
}

void fq_api_schedule_patch(fq_api_call_t *call)
{
    const char *tenant;
    fq_schedule_list_t list;
    if (!fq_api_query_allowed(call, NULL) || !fq_api_own_tenant(call, &tenant) ||
        !s_load(call, tenant, &list))
        return;
    int64_t id = list.rows[0].id;
    fq_schedule_list_free(&list);
    s_save(call, tenant, id);
}

void fq_api_schedule_delete(fq_api_call_t *call)
{
    const char *tenant;
    fq_schedule_list_t list;
    if (!fq_api_query_allowed(call, NULL) || !fq_api_own_tenant(call, &tenant) ||
        !s_load(call, tenant, &list))
        return;
    int rc = fq_store_schedule_delete(call->store, tenant, list.rows[0].id);
    fq_schedule_list_free(&list);
    if (rc < 0)
        fq_api_fail_store(call, rc);
    else
        fq_api_reply_empty(call);
}
