/*  fq_store_holds.c — operators' holds (fq_store_holds.h). */
#include "fq_store_holds.h"
#include "fq_error.h"
#include "fq_store_internal.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const s_scope_names[] = {
    [FQ_HOLD_TENANT] = "tenant", [FQ_HOLD_DESTINATION] = "destination", [FQ_HOLD_ALL] = "all"};

#define S_SCOPES (sizeof s_scope_names / sizeof s_scope_names[0])

const char *fq_hold_scope_name(fq_hold_scope_t scope)
{
    return (size_t)scope < S_SCOPES ? s_scope_names[scope] : "all";
}

int fq_hold_scope_parse(const char *text, fq_hold_scope_t *scope)
{
    for (size_t i = 0; text && i < S_SCOPES; i++)
        if (strcmp(text, s_scope_names[i]) == 0) {
            *scope = (fq_hold_scope_t)i;
            return 0;
        }
    return FQ_EINVAL;
}

//  The columns of a hold, as s_hold_row reads them (h: fairq.holds).
#define S_HOLD_COLUMNS                                                                             \
    " h.id, h.scope, coalesce((SELECT t.name FROM fairq.tenants t WHERE t.id = h.tenant_id),"      \
    " h.destination, ''), coalesce(h.tenant_id, 0), h.reason, h.created_by,"                       \
    " extract(epoch FROM h.created_at)::bigint"

//  Which hold $1 (scope) and $2 (name) name, in a WHERE of fairq.holds h.
#define S_HOLD_NAMED                                                                               \
    " h.scope = $1::text AND ($1::text = 'all'"                                                    \
    "  OR h.tenant_id = (SELECT t.id FROM fairq.tenants t WHERE t.name = $2::text)"                \
    "  OR h.destination = $2::text)"

static void s_hold_row(const PGresult *res, int row, void *item)
{
    fq_hold_t *out = item;
    fq_hold_scope_t scope = FQ_HOLD_ALL;
    fq_hold_scope_parse(PQgetvalue(res, row, 1), &scope);
    *out = (fq_hold_t){.id = fq_store_int64(res, row, 0),
                       .scope = scope,
                       .tenant_id = fq_store_int64(res, row, 3),
                       .created_at = fq_store_int64(res, row, 6)};
    snprintf(out->name, sizeof out->name, "%s", PQgetvalue(res, row, 2));
    snprintf(out->reason, sizeof out->reason, "%s", PQgetvalue(res, row, 4));
    snprintf(out->created_by, sizeof out->created_by, "%s", PQgetvalue(res, row, 5));
}

int fq_store_hold_list(fq_store_t *self, fq_hold_list_t *list)
{
    *list = (fq_hold_list_t){0};
    int rc;
    PGresult *res = fq_store_query(
        self,
        "SELECT" S_HOLD_COLUMNS " FROM fairq.holds h"
        " ORDER BY CASE h.scope WHEN 'all' THEN 0 WHEN 'tenant' THEN 1 ELSE 2 END,"
        " coalesce((SELECT t.name FROM fairq.tenants t WHERE t.id = h.tenant_id), h.destination)"
        " COLLATE \"C\"",
        0, NULL, PGRES_TUPLES_OK, "list holds", &rc);
    if (!res)
        return rc;
    void *rows;
    rc = fq_store_rows(self, res, sizeof *list->rows, s_hold_row, &rows);
    list->rows = rows;
    list->count = rc > 0 ? (size_t)rc : 0;
    return rc;
}

void fq_hold_list_free(fq_hold_list_t *list)
{
    free(list->rows);
    *list = (fq_hold_list_t){0};
}

//  Reads the hold scope and name name into out. Returns 0, FQ_ENOTFOUND
//  or FQ_EDB.
static int s_hold_get(fq_store_t *self, const char *const params[2], fq_hold_t *out)
{
    int rc;
    PGresult *res =
        fq_store_query(self, "SELECT" S_HOLD_COLUMNS " FROM fairq.holds h WHERE" S_HOLD_NAMED, 2,
                       params, PGRES_TUPLES_OK, "read hold", &rc);
    if (!res)
        return rc;
    if (PQntuples(res) == 1)
        s_hold_row(res, 0, out);
    else
        rc = fq_store_fail(self, FQ_ENOTFOUND, "could not read hold: released meanwhile");
    PQclear(res);
    return rc;
}

int fq_store_hold_put(fq_store_t *self, fq_hold_scope_t scope, const char *name, const char *reason,
                      const char *by, fq_hold_t *out, bool *created)
{
    if (created)
        *created = false;
    const char *what = fq_hold_scope_name(scope);
    if (scope == FQ_HOLD_ALL || !name)
        name = "";
    if (!reason)
        reason = "";
    if (strlen(reason) > FQ_HOLD_REASON_MAX)
        return fq_store_fail(self, FQ_EINVAL, "could not hold: the reason is longer than %d bytes",
                             FQ_HOLD_REASON_MAX);
    if (!by || !*by || strlen(by) > FQ_HOLD_BY_MAX)
        return fq_store_fail(self, FQ_EINVAL, "could not hold: who holds must be 1..%d bytes",
                             FQ_HOLD_BY_MAX);
    const char *params[] = {what, name, reason, by};
    int rc;
    //  One statement: the tenant or destination looked up, and the hold
    //  written unless it is there already (the unique index)
    PGresult *res = fq_store_query(
        self,
        "WITH target AS (SELECT"
        "  CASE WHEN $1::text = 'tenant'"
        "       THEN (SELECT t.id FROM fairq.tenants t WHERE t.name = $2::text) END AS tenant_id,"
        "  CASE WHEN $1::text = 'destination'"
        "       THEN (SELECT d.name FROM fairq.destinations d WHERE d.name = $2::text)"
        "  END AS destination),"
        " found AS (SELECT * FROM target"
        "  WHERE $1::text = 'all' OR tenant_id IS NOT NULL OR destination IS NOT NULL),"
        " made AS (INSERT INTO fairq.holds (scope, tenant_id, destination, reason, created_by)"
        "  SELECT $1::text, tenant_id, destination, $3::text, $4::text FROM found"
        "  ON CONFLICT DO NOTHING RETURNING id)"
        " SELECT EXISTS (SELECT 1 FROM found), EXISTS (SELECT 1 FROM made)",
        4, params, PGRES_TUPLES_OK, "hold", &rc);
    if (!res)
        return rc;
    bool found = PQntuples(res) == 1 && PQgetvalue(res, 0, 0)[0] == 't';
    bool made = PQntuples(res) == 1 && PQgetvalue(res, 0, 1)[0] == 't';
    PQclear(res);
    if (!found)
        return fq_store_fail(self, FQ_ENOTFOUND, "could not hold: %s \"%.*s\" does not exist", what,
                             FQ_HOLD_NAME_SIZE - 1, name);
    if (created)
        *created = made;
    fq_hold_t hold;
    return s_hold_get(self, params, out ? out : &hold);
}

int fq_store_hold_release(fq_store_t *self, fq_hold_scope_t scope, const char *name, fq_hold_t *out)
{
    const char *what = fq_hold_scope_name(scope);
    if (scope == FQ_HOLD_ALL || !name)
        name = "";
    const char *params[] = {what, name};
    int rc;
    PGresult *res = fq_store_query(
        self, "DELETE FROM fairq.holds h WHERE" S_HOLD_NAMED " RETURNING" S_HOLD_COLUMNS, 2, params,
        PGRES_TUPLES_OK, "release hold", &rc);
    if (!res)
        return rc;
    if (PQntuples(res) == 1) {
        if (out)
            s_hold_row(res, 0, out);
    } else if (scope == FQ_HOLD_ALL)
        rc = fq_store_fail(self, FQ_ENOTFOUND, "could not release: all is not held");
    else
        rc = fq_store_fail(self, FQ_ENOTFOUND, "could not release: %s \"%.*s\" is not held", what,
                           FQ_HOLD_NAME_SIZE - 1, name);
    PQclear(res);
    return rc;
}
