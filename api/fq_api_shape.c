/*  fq_api_shape.c — GET /v1/shape: the waiting messages per tenant (and
    destination) by how long they have waited (api/API.md). A tenant's
    token sees its own tenant only. */
#include "fq_api_internal.h"
#include "fq_store_shape.h"
#include "fq_error.h"
#include <string.h>

//  The tenant the query names (0: every tenant); false after answering.
static bool s_tenant(fq_api_call_t *call, int64_t *tenant_id)
{
    const char *name = fq_api_query(call, "tenant");
    *tenant_id = call->owner.tenant_id;
    if (!name)
        return true;
    if (!call->owner.admin && strcmp(name, call->owner.tenant) != 0) {
        fq_api_fail(call, MHD_HTTP_NOT_FOUND, "could not read tenant: \"%.*s\" does not exist",
                    FQ_TENANT_NAME_MAX, name);
        return false;
    }
    if (!fq_tenant_name_valid(name)) {
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST, FQ_API_TENANT_NAME_RULE, FQ_TENANT_NAME_MAX);
        return false;
    }
    int rc = fq_store_tenant_id(call->store, name, tenant_id);
    if (rc)
        fq_api_fail_store(call, rc);
    return rc == 0;
}

void fq_api_shape(fq_api_call_t *call)
{
    static const char *const params[] = {"tenant", "by", NULL};
    int64_t tenant_id;
    if (!fq_api_query_allowed(call, params) || !s_tenant(call, &tenant_id))
        return;
    const char *by = fq_api_query(call, "by");
    if (by && strcmp(by, "tenant") != 0 && strcmp(by, "destination") != 0) {
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST, "by must be tenant or destination");
        return;
    }
    bool by_destination = by && strcmp(by, "destination") == 0;
    fq_shape_t shape;
    int rc = fq_store_shape(call->store, tenant_id, by_destination, &shape);
    if (rc < 0) {
        fq_api_fail_store(call, rc);
        return;
    }
    json_t *edges = json_array(), *rows = json_array();
    for (int i = 0; i < FQ_SHAPE_EDGES; i++)
        json_array_append_new(edges, json_integer(fq_shape_edges_min[i]));
    for (size_t i = 0; i < shape.count; i++) {
        const fq_shape_row_t *r = &shape.rows[i];
        json_t *ages = json_array();
        for (int b = 0; b < FQ_SHAPE_BUCKETS; b++)
            json_array_append_new(ages, json_integer(r->ages[b]));
        json_array_append_new(
            rows,
            json_pack("{s:s, s:o, s:I, s:I, s:o}", "tenant", r->tenant, "destination",
                      by_destination && *r->destination ? json_string(r->destination) : json_null(),
                      "total", (json_int_t)r->total, "later", (json_int_t)r->later, "ages", ages));
    }
    fq_shape_free(&shape);
    fq_api_reply(call, MHD_HTTP_OK, json_pack("{s:o, s:o}", "edges_minutes", edges, "shape", rows));
}
