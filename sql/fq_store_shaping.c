/*  fq_store_shaping.c — the destinations as the pipeline reads them, and
    tenants' daily quotas as the scheduler reserves them (see
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

//  ---------------------------------------------------------------------
//  Daily quotas (0017)

int fq_store_reserve_sends(fq_store_t *self, int64_t tenant_id, int64_t day, int64_t want,
                           int64_t quota, int64_t used, int64_t *before, int64_t *after)
{
    *before = *after = 0;
    char tenant[FQ_STORE_INT_TEXT], date[FQ_STORE_INT_TEXT], wanted[FQ_STORE_INT_TEXT];
    char most[FQ_STORE_INT_TEXT], count[FQ_STORE_INT_TEXT];
    snprintf(tenant, sizeof tenant, "%lld", (long long)tenant_id);
    snprintf(date, sizeof date, "%lld", (long long)day);
    snprintf(wanted, sizeof wanted, "%lld", (long long)want);
    snprintf(most, sizeof most, "%lld", (long long)quota);
    snprintf(count, sizeof count, "%lld", (long long)used);
    const char *params[] = {tenant, date, wanted, most, count};
    int rc;
    PGresult *res = fq_store_query(self,
                                   "SELECT before, after FROM fairq.reserve_sends($1::bigint,"
                                   " date '1970-01-01' + $2::int, $3::bigint, $4::bigint,"
                                   " $5::bigint)",
                                   5, params, PGRES_TUPLES_OK, "reserve a daily quota", &rc);
    if (!res)
        return rc;
    *before = fq_store_int64(res, 0, 0);
    *after = fq_store_int64(res, 0, 1);
    PQclear(res);
    return 0;
}

int fq_store_record_sends(fq_store_t *self, int64_t tenant_id, int64_t day, int64_t unused,
                          int64_t used)
{
    char tenant[FQ_STORE_INT_TEXT], date[FQ_STORE_INT_TEXT], back[FQ_STORE_INT_TEXT];
    char count[FQ_STORE_INT_TEXT];
    snprintf(tenant, sizeof tenant, "%lld", (long long)tenant_id);
    snprintf(date, sizeof date, "%lld", (long long)day);
    snprintf(back, sizeof back, "%lld", (long long)(unused > 0 ? unused : 0));
    snprintf(count, sizeof count, "%lld", (long long)(used > 0 ? used : 0));
    const char *params[] = {tenant, date, back, count};
    int rc;
    //  What is given back never takes reserved below the count: another
    //  leader's reservations since are its own
    PGresult *res =
        fq_store_query(self,
                       "UPDATE fairq.tenant_send_days"
                       " SET reserved = greatest(reserved - $3::bigint, $4::bigint, 0),"
                       "     used = $4::bigint,"
                       "     updated_at = now()"
                       " WHERE tenant_id = $1::bigint AND day = date '1970-01-01' + $2::int",
                       4, params, PGRES_COMMAND_OK, "record a daily count", &rc);
    if (!res)
        return rc;
    PQclear(res);
    return 0;
}
