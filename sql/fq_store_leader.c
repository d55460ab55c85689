/*  fq_store_leader.c — leadership: the lease, its renewal, and the epoch
    that fences a leader's writes (see fq_store.h and migration 0009).
*/
#include "fq_store_internal.h"
#include "fq_error.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool s_holder_valid(const char *holder)
{
    return holder && *holder && strlen(holder) < FQ_LEADER_HOLDER_SIZE;
}

int fq_store_lead(fq_store_t *self, const char *holder, int64_t epoch, int lease_ms,
                  fq_leader_t *out)
{
    *out = (fq_leader_t){0};
    if (!s_holder_valid(holder) || epoch < 0 || lease_ms < 100)
        return fq_store_fail(self, FQ_EINVAL, "could not lead: bad holder, epoch or lease");
    char epoch_text[FQ_STORE_INT_TEXT], lease[FQ_STORE_INT_TEXT];
    snprintf(epoch_text, sizeof epoch_text, "%lld", (long long)epoch);
    snprintf(lease, sizeof lease, "%d", lease_ms);
    const char *params[] = {holder, epoch_text, lease};
    int rc;
    PGresult *res = fq_store_query(
        self,
        "SELECT holds_lease, epoch, holder, (extract(epoch FROM since) * 1000)::bigint, ms_left"
        " FROM fairq.lead($1, $2::bigint, $3::int)",
        3, params, PGRES_TUPLES_OK, "renew the leader's lease", &rc);
    if (!res)
        return rc;
    if (PQntuples(res) != 1) {
        PQclear(res);
        return fq_store_fail(self, FQ_EDB, "could not renew the leader's lease: no answer");
    }
    out->leading = strcmp(PQgetvalue(res, 0, 0), "t") == 0;
    out->epoch = fq_store_int64(res, 0, 1);
    snprintf(out->holder, sizeof out->holder, "%s", PQgetvalue(res, 0, 2));
    out->since_ms = fq_store_int64(res, 0, 3);
    out->ms_left = (int)fq_store_int64(res, 0, 4);
    PQclear(res);
    return 0;
}

int fq_store_resign(fq_store_t *self, const char *holder, int64_t epoch)
{
    if (!s_holder_valid(holder))
        return fq_store_fail(self, FQ_EINVAL, "could not resign: bad holder");
    char epoch_text[FQ_STORE_INT_TEXT];
    snprintf(epoch_text, sizeof epoch_text, "%lld", (long long)epoch);
    const char *params[] = {holder, epoch_text};
    int rc;
    PGresult *res = fq_store_query(self, "SELECT fairq.resign($1, $2::bigint)", 2, params,
                                   PGRES_TUPLES_OK, "give the leader's lease up", &rc);
    PQclear(res);
    return rc;
}

void fq_store_set_epoch(fq_store_t *self, int64_t epoch)
{
    if (epoch > 0)
        snprintf(self->epoch, sizeof self->epoch, "%lld", (long long)epoch);
    else
        self->epoch[0] = '\0';
}

const char *fq_store_fence(fq_store_t *self)
{
    return self->epoch[0] ? self->epoch : NULL;
}

int fq_store_fence_transaction(fq_store_t *self)
{
    if (!self->epoch[0])
        return 0;
    const char *params[] = {self->epoch};
    int rc;
    PGresult *res = fq_store_query(self, "SELECT fairq.fence($1::bigint)", 1, params,
                                   PGRES_TUPLES_OK, "check the leader's epoch", &rc);
    PQclear(res);
    return rc;
}
