/*  fq_store_unsubscribe.c — one-click unsubscribe (see
    fq_store_unsubscribe.h): one call of fairq.unsubscribe (0021), which
    suppresses, cancels and reports in the one transaction of its
    statement, so a POST that fails halfway leaves nothing half done. */
#include "fq_store_unsubscribe.h"
#include "fq_error.h"
#include "fq_store_internal.h"
#include <stdio.h>

int fq_store_unsubscribe(fq_store_t *self, int64_t tenant_id, int64_t request_id,
                         const char *recipient, fq_unsubscribe_result_t *out)
{
    *out = (fq_unsubscribe_result_t){0};
    if (tenant_id <= 0 || request_id <= 0 || !recipient || !*recipient)
        return fq_store_fail(self, FQ_EINVAL,
                             "could not unsubscribe: no tenant, request or "
                             "recipient");
    char tenant[FQ_STORE_INT_TEXT], request[FQ_STORE_INT_TEXT];
    snprintf(tenant, sizeof tenant, "%lld", (long long)tenant_id);
    snprintf(request, sizeof request, "%lld", (long long)request_id);
    const char *params[] = {tenant, request, recipient};
    int rc;
    PGresult *res = fq_store_query(self,
                                   "SELECT u.known, u.suppressed, u.cancelled"
                                   " FROM fairq.unsubscribe($1::bigint, $2::bigint, $3) AS u",
                                   3, params, PGRES_TUPLES_OK, "unsubscribe", &rc);
    if (!res)
        return rc;
    if (PQntuples(res) == 1) {
        out->known = PQgetvalue(res, 0, 0)[0] == 't';
        out->suppressed = PQgetvalue(res, 0, 1)[0] == 't';
        out->cancelled = (int)fq_store_int64(res, 0, 2);
    }
    PQclear(res);
    return 0;
}
