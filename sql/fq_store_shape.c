/*  fq_store_shape.c — the queue's shape (see fq_store_shape.h). */
#include "fq_store_shape.h"
#include "fq_store_internal.h"
#include "fq_error.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const int fq_shape_edges_min[FQ_SHAPE_EDGES] = {5, 10, 20, 40, 80, 160, 320, 640, 1280};

//  A request's bucket: -1 for "later", else width_bucket's 0 (under the
//  first edge) .. FQ_SHAPE_EDGES (over the last).
#define S_BUCKET                                                                                   \
    "CASE WHEN r.send_at > now() THEN -1"                                                          \
    " ELSE width_bucket(extract(epoch FROM now() - greatest(r.created_at, r.send_at)) / 60,"       \
    "                   $3::float8[]) END"
#define S_WAITING_REQUESTS                                                                         \
    " r.status IN " FQ_STORE_UNFINISHED " AND ($1::bigint = 0 OR r.tenant_id = $1::bigint)"

//  One row per tenant, destination and bucket: the messages waiting, and
//  the recipients not split yet (no destination yet: ''), which wait as
//  much as their request's messages do.
static const char *const s_shape_sql =
    "SELECT t.name, w.destination, w.bucket, sum(w.n)::bigint FROM"
    " (SELECT r.tenant_id, CASE WHEN $2::boolean THEN m.destination ELSE '' END AS destination,"
    "   " S_BUCKET " AS bucket, 1 AS n"
    "  FROM fairq.requests r JOIN fairq.messages m"
    "   ON m.request_id = r.id AND m.id > r.scan_from AND m.status IN ('pending', 'failed')"
    "  WHERE" S_WAITING_REQUESTS "  UNION ALL"
    "  SELECT r.tenant_id, '', " S_BUCKET ", greatest(r.total - r.split - r.rejected, 0)"
    "  FROM fairq.requests r WHERE" S_WAITING_REQUESTS " AND r.total > r.split + r.rejected"
    " ) w JOIN fairq.tenants t ON t.id = w.tenant_id"
    " GROUP BY 1, 2, 3 ORDER BY 1, 2, 3";

//  The edges as a PostgreSQL array literal: "{5,10,...}".
#define S_EDGES_TEXT 64

static int s_by_total(const void *a, const void *b)
{
    const fq_shape_row_t *x = a, *y = b;
    if (x->total != y->total)
        return x->total > y->total ? -1 : 1;
    int c = strcmp(x->tenant, y->tenant);
    return c ? c : strcmp(x->destination, y->destination);
}

int fq_store_shape(fq_store_t *self, int64_t tenant_id, bool by_destination, fq_shape_t *shape)
{
    *shape = (fq_shape_t){0};
    char tenant[FQ_STORE_INT_TEXT], edges[S_EDGES_TEXT];
    snprintf(tenant, sizeof tenant, "%lld", (long long)tenant_id);
    size_t used = (size_t)snprintf(edges, sizeof edges, "{");
    for (int i = 0; i < FQ_SHAPE_EDGES; i++)
        used += (size_t)snprintf(edges + used, sizeof edges - used, "%s%d", i ? "," : "",
                                 fq_shape_edges_min[i]);
    snprintf(edges + used, sizeof edges - used, "}");
    const char *params[] = {tenant, by_destination ? "true" : "false", edges};
    int rc;
    PGresult *res =
        fq_store_query(self, s_shape_sql, 3, params, PGRES_TUPLES_OK, "read the shape", &rc);
    if (!res)
        return rc;
    int n = PQntuples(res);
    fq_shape_row_t *rows = n ? calloc((size_t)n, sizeof *rows) : NULL;
    if (n && !rows) {
        PQclear(res);
        return fq_store_fail(self, FQ_ENOMEM, "out of memory");
    }
    //  The result is ordered by tenant and destination: a row per change
    size_t count = 0;
    for (int i = 0; i < n; i++) {
        const char *name = PQgetvalue(res, i, 0), *destination = PQgetvalue(res, i, 1);
        fq_shape_row_t *row = count ? &rows[count - 1] : NULL;
        if (!row || strcmp(row->tenant, name) != 0 || strcmp(row->destination, destination) != 0) {
            row = &rows[count++];
            snprintf(row->tenant, sizeof row->tenant, "%s", name);
            snprintf(row->destination, sizeof row->destination, "%s", destination);
        }
        int64_t bucket = fq_store_int64(res, i, 2), messages = fq_store_int64(res, i, 3);
        if (bucket < 0)
            row->later += messages;
        else
            row->ages[bucket < FQ_SHAPE_BUCKETS ? bucket : FQ_SHAPE_BUCKETS - 1] += messages;
        row->total += messages;
    }
    PQclear(res);
    if (count)
        qsort(rows, count, sizeof *rows, s_by_total);
    shape->rows = rows;
    shape->count = count;
    return (int)count;
}

void fq_shape_free(fq_shape_t *shape)
{
    free(shape->rows);
    *shape = (fq_shape_t){0};
}
