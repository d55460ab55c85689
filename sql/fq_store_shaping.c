/*  fq_store_shaping.c — the destinations as the pipeline reads them (see
    fq_store_shaping.h). */
#include "fq_store_shaping.h"
#include "fq_store_internal.h"
#include <stdio.h>
#include <stdlib.h>

int fq_store_destination_domains(fq_store_t *self,
                                 void (*each)(const char *domain, const char *destination,
                                              void *arg),
                                 void *arg)
{
    int rc;
    PGresult *res =
        fq_store_query(self, "SELECT domain, destination FROM fairq.destination_domains", 0, NULL,
                       PGRES_TUPLES_OK, "read destination domains", &rc);
    if (!res)
        return rc;
    int n = PQntuples(res);
    for (int i = 0; i < n; i++)
        each(PQgetvalue(res, i, 0), PQgetvalue(res, i, 1), arg);
    PQclear(res);
    return n;
}

int fq_store_destination_budgets(fq_store_t *self, fq_destination_budget_t *out, int max)
{
    char limit[FQ_STORE_INT_TEXT];
    snprintf(limit, sizeof limit, "%d", max);
    const char *params[] = {limit};
    int rc;
    PGresult *res = fq_store_query(
        self,
        "SELECT name, coalesce(rate_count, 0), coalesce(rate_period_s, 0), coalesce(burst, 0),"
        " coalesce(max_inflight, 0) FROM fairq.destinations ORDER BY name LIMIT $1",
        1, params, PGRES_TUPLES_OK, "read destination budgets", &rc);
    if (!res)
        return rc;
    int n = PQntuples(res);
    for (int i = 0; i < n; i++) {
        out[i] = (fq_destination_budget_t){.rate_count = fq_store_int64(res, i, 1),
                                           .rate_period_s = (int)fq_store_int64(res, i, 2),
                                           .burst = fq_store_int64(res, i, 3),
                                           .max_inflight = fq_store_int64(res, i, 4)};
        snprintf(out[i].name, sizeof out[i].name, "%s", PQgetvalue(res, i, 0));
    }
    PQclear(res);
    return n;
}

int fq_store_request_destinations(fq_store_t *self, const int64_t *ids, size_t count,
                                  void (*each)(int64_t request_id, const char *destination,
                                               void *arg),
                                  void *arg)
{
    if (count == 0)
        return 0;
    int rc;
    PGresult *res =
        fq_store_query_ids(self,
                           "SELECT request_id, destination"
                           " FROM fairq.request_destinations"
                           " WHERE request_id = ANY ($1::bigint[])",
                           ids, count, PGRES_TUPLES_OK, "read the destinations of requests", &rc);
    if (!res)
        return rc;
    int n = PQntuples(res);
    for (int i = 0; i < n; i++)
        each(fq_store_int64(res, i, 0), PQgetvalue(res, i, 1), arg);
    PQclear(res);
    return n;
}
