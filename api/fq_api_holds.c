/*  fq_api_holds.c — /v1/holds (admin): operators' holds of a tenant, a
    destination or all (api/API.md, "Holds"; docs/operations.md, "Holds").

    A hold is written to the database and nothing else: its trigger
    NOTIFYs every fairqd, and the leader's scheduler reads the holds again
    at once, whichever fairqd took the call. Holding what is held answers
    200 with the hold that stands; releasing what is not held, 404. */
#include "fq_api_internal.h"
#include "fq_error.h"
#include "fq_limits.h"
#include "fq_store_holds.h"
#include <string.h>

//  Who placed a hold when the call does not say ("by").
#define S_BY_DEFAULT "admin"

#define S_SCOPE_RULE "scope must be \"tenant\", \"destination\" or \"all\""

//  The hold object of API.md.
static json_t *s_hold_json(const fq_hold_t *hold)
{
    return json_pack("{s:s, s:o, s:s, s:s, s:o}", "scope", fq_hold_scope_name(hold->scope), "name",
                     hold->scope == FQ_HOLD_ALL ? json_null() : json_string(hold->name), "reason",
                     hold->reason, "created_by", hold->created_by, "created_at",
                     fq_api_time(hold->created_at));
}

void fq_api_hold_list(fq_api_call_t *call)
{
    if (!fq_api_query_allowed(call, NULL))
        return;
    fq_hold_list_t holds;
    int rc = fq_store_hold_list(call->store, &holds);
    if (rc < 0) {
        fq_api_fail_store(call, rc);
        return;
    }
    json_t *rows = json_array();
    bool all = false;
    for (size_t i = 0; i < holds.count; i++) {
        all |= holds.rows[i].scope == FQ_HOLD_ALL;
        json_array_append_new(rows, s_hold_json(&holds.rows[i]));
    }
    fq_hold_list_free(&holds);
    fq_api_reply(call, MHD_HTTP_OK, json_pack("{s:b, s:o}", "all", all, "holds", rows));
}

//  The name a hold of scope names: a tenant's or a destination's, by
//  their rules; none for all. false after answering 400.
static bool s_name_valid(fq_api_call_t *call, fq_hold_scope_t scope, const char *name)
{
    if (scope == FQ_HOLD_ALL) {
        if (!name)
            return true;
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST, "a hold of all names nothing: leave name out");
        return false;
    }
    bool tenant = scope == FQ_HOLD_TENANT;
    if (name && (tenant ? fq_tenant_name_valid(name) : fq_destination_name_valid(name)))
        return true;
    fq_api_fail(call, MHD_HTTP_BAD_REQUEST,
                "name must be a %s name: 1..%d of a-z 0-9 _ . -, starting with a letter or digit",
                tenant ? "tenant" : "destination",
                tenant ? FQ_TENANT_NAME_MAX : FQ_DESTINATION_NAME_MAX);
    return false;
}

//  A text field of the body: absent or null (NULL), or a string of
//  min..max bytes. false after answering 400.
static bool s_text(fq_api_call_t *call, json_t *body, const char *key, size_t min, size_t max,
                   const char **out)
{
    json_t *value = json_object_get(body, key);
    *out = NULL;
    if (!value || json_is_null(value))
        return true;
    size_t length = json_is_string(value) ? json_string_length(value) : 0;
    //  A NUL inside would be cut by the database's text
    if (json_is_string(value) && length >= min && length <= max &&
        strlen(json_string_value(value)) == length) {
        *out = json_string_value(value);
        return true;
    }
    fq_api_fail(call, MHD_HTTP_BAD_REQUEST, "%s must be a text of %zu..%zu bytes", key, min, max);
    return false;
}

void fq_api_hold_create(fq_api_call_t *call)
{
    static const char *const keys[] = {"scope", "name", "reason", "by", NULL};
    if (!fq_api_query_allowed(call, NULL))
        return;
    json_t *body = fq_api_body_fields(call, keys, NULL, NULL);
    if (!body)
        return;
    fq_hold_scope_t scope;
    const char *scope_text = json_string_value(json_object_get(body, "scope"));
    const char *name = NULL, *reason = NULL, *by = NULL;
    if (!scope_text || fq_hold_scope_parse(scope_text, &scope) != 0)
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST, S_SCOPE_RULE);
    else if (s_text(call, body, "name", 1, FQ_HOLD_NAME_SIZE - 1, &name) &&
             s_name_valid(call, scope, name) &&
             s_text(call, body, "reason", 0, FQ_HOLD_REASON_MAX, &reason) &&
             s_text(call, body, "by", 1, FQ_HOLD_BY_MAX, &by)) {
        fq_hold_t hold;
        bool created = false;
        int rc = fq_store_hold_put(call->store, scope, name, reason, by ? by : S_BY_DEFAULT, &hold,
                                   &created);
        if (rc)
            fq_api_fail_store(call, rc);
        else
            fq_api_reply(call, created ? MHD_HTTP_CREATED : MHD_HTTP_OK, s_hold_json(&hold));
    }
    json_decref(body);
}

//  Releases the hold of scope (the path's) and name.
static void s_release(fq_api_call_t *call, const char *scope_text, const char *name)
{
    fq_hold_scope_t scope;
    if (!fq_api_query_allowed(call, NULL))
        return;
    if (fq_hold_scope_parse(scope_text, &scope) != 0) {
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST, S_SCOPE_RULE);
        return;
    }
    if (!s_name_valid(call, scope, name))
        return;
    fq_hold_t hold;
    int rc = fq_store_hold_release(call->store, scope, name, &hold);
    if (rc) {
        fq_api_fail_store(call, rc);
        return;
    }
    json_t *answer = s_hold_json(&hold);
    if (answer)
        json_object_set_new(answer, "released", json_true());
    fq_api_reply(call, MHD_HTTP_OK, answer);
}

//  DELETE /v1/holds/all: the one scope that names nothing.
void fq_api_hold_release_all(fq_api_call_t *call)
{
    if (strcmp(call->params[0], "all") != 0) {
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST,
                    "a hold of a tenant or destination is released at "
                    "/v1/holds/tenant/NAME or /v1/holds/destination/NAME; all at /v1/holds/all");
        return;
    }
    s_release(call, call->params[0], NULL);
}

void fq_api_hold_release(fq_api_call_t *call)
{
    if (strcmp(call->params[0], "all") == 0) {
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST,
                    "a hold of all names nothing: DELETE /v1/holds/all");
        return;
    }
    s_release(call, call->params[0], call->params[1]);
}
