/*  fq_store_tenants.c — tenants, their live figures, their submit rate and
    their API tokens (see fq_store.h).

    Tokens: 32 random bytes from libsodium's CSPRNG, written as "fq_" and
    URL-safe base64, so they can be told apart from other secrets in a
    config file or a leak scanner. Only their SHA-256 is stored and looked
    up; a token is 256 bits of randomness, so a plain (unsalted) hash is
    enough: there is no dictionary to try.
*/
#include "fq_store_internal.h"
#include "fq_error.h"
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_TOKEN_PREFIX       "fq_"
#define S_TOKEN_RANDOM_BYTES 32

//  A SHA-256 as a bytea literal in hex: "\x" and 64 digits.
#define S_HASH_TEXT (2 + 2 * crypto_hash_sha256_BYTES + 1)

//  ---------------------------------------------------------------------
//  Tenants

int fq_store_tenant_put(fq_store_t *self, const fq_tenant_spec_t *spec, int64_t *id)
{
    char weight[FQ_STORE_INT_TEXT], inflight[FQ_STORE_INT_TEXT], rate[FQ_STORE_INT_TEXT];
    char default_weight[FQ_STORE_INT_TEXT], default_inflight[FQ_STORE_INT_TEXT];
    char default_rate[FQ_STORE_INT_TEXT], send_count[FQ_STORE_INT_TEXT];
    char send_period[FQ_STORE_INT_TEXT], quota[FQ_STORE_INT_TEXT], unsubscribe[FQ_STORE_INT_TEXT];
    snprintf(weight, sizeof weight, "%d", spec->weight);
    snprintf(inflight, sizeof inflight, "%d", spec->max_inflight);
    snprintf(rate, sizeof rate, "%d", spec->submit_rate);
    snprintf(default_weight, sizeof default_weight, "%d", spec->defaults.weight);
    snprintf(default_inflight, sizeof default_inflight, "%d", spec->defaults.max_inflight);
    snprintf(default_rate, sizeof default_rate, "%d", spec->defaults.submit_rate);
    snprintf(send_count, sizeof send_count, "%lld", (long long)spec->send_rate_count);
    snprintf(send_period, sizeof send_period, "%d", spec->send_rate_period_s);
    snprintf(quota, sizeof quota, "%lld", (long long)spec->daily_quota);
    snprintf(unsubscribe, sizeof unsubscribe, "%d", spec->unsubscribe);
    const char *params[] = {spec->name,     weight,           inflight,     rate,
                            default_weight, default_inflight, default_rate, spec->signing_secret,
                            send_count,     send_period,      quota,        unsubscribe};
    int rc;
    //  A value left out (0) of a new tenant is the default given, else the
    //  store's own. The signing secret: NULL keeps it, '' removes it. The
    //  send rate and the daily quota (0017) have no default: 0 keeps, a
    //  negative value removes; the rate's count and period go together,
    //  and the schema's checks refuse what is out of range. unsubscribe
    //  (0021): 0 keeps (a new tenant: off), above 0 on, below 0 off
    PGresult *res = fq_store_query(
        self,
        "INSERT INTO fairq.tenants AS t (name, weight, max_inflight, submit_rate, signing_secret,"
        "                                send_rate_count, send_rate_period_s, daily_quota,"
        "                                unsubscribe)"
        " VALUES ($1, CASE WHEN $2::int > 0 THEN $2::int WHEN $5::int > 0 THEN $5::int ELSE 1 END,"
        "         CASE WHEN $3::int > 0 THEN $3::int WHEN $6::int > 0 THEN $6::int ELSE 1000 END,"
        "         CASE WHEN $4::int > 0 THEN $4::int WHEN $4::int = 0 AND $7::int > 0"
        "              THEN $7::int END, nullif($8::text, ''),"
        "         CASE WHEN $9::bigint > 0 THEN $9::bigint END,"
        "         CASE WHEN $9::bigint > 0 THEN $10::int END,"
        "         CASE WHEN $11::bigint > 0 THEN $11::bigint END, $12::int > 0)"
        " ON CONFLICT (name) DO UPDATE SET"
        "  weight = CASE WHEN $2::int > 0 THEN $2::int ELSE t.weight END,"
        "  max_inflight = CASE WHEN $3::int > 0 THEN $3::int ELSE t.max_inflight END,"
        "  submit_rate = CASE WHEN $4::int > 0 THEN $4::int"
        "                     WHEN $4::int < 0 THEN NULL ELSE t.submit_rate END,"
        "  signing_secret = CASE WHEN $8::text IS NULL THEN t.signing_secret"
        "                        ELSE nullif($8::text, '') END,"
        "  send_rate_count = CASE WHEN $9::bigint > 0 THEN $9::bigint"
        "                         WHEN $9::bigint < 0 THEN NULL ELSE t.send_rate_count END,"
        "  send_rate_period_s = CASE WHEN $9::bigint > 0 THEN $10::int"
        "                            WHEN $9::bigint < 0 THEN NULL ELSE t.send_rate_period_s END,"
        "  daily_quota = CASE WHEN $11::bigint > 0 THEN $11::bigint"
        "                     WHEN $11::bigint < 0 THEN NULL ELSE t.daily_quota END,"
        "  unsubscribe = CASE WHEN $12::int = 0 THEN t.unsubscribe ELSE $12::int > 0 END"
        " RETURNING t.id",
        12, params, PGRES_TUPLES_OK, "store tenant", &rc);
    if (!res)
        return rc;
    if (id)
        *id = fq_store_int64(res, 0, 0);
    PQclear(res);
    return 0;
}

//  Figures from the counters of unfinished requests (requests_open_idx),
//  never from counting messages. A message not yet final is pending or
//  failed, so their sum is what is split minus what is final. What it sent
//  today is the leader's count of today's UTC day (0017), 0 before the
//  leader wrote one.
#define S_TENANT_SQL                                                                               \
    "SELECT t.id, t.name, t.weight, t.max_inflight, coalesce(t.submit_rate, 0),"                   \
    " coalesce(s.open, 0), coalesce(s.depth, 0), coalesce(s.failed, 0),"                           \
    " coalesce(s.unsplit, 0),"                                                                     \
    " coalesce(greatest(floor(extract(epoch FROM now() - s.oldest)), 0)::bigint, 0),"              \
    " t.signing_secret IS NOT NULL, coalesce(t.send_rate_count, 0),"                               \
    " coalesce(t.send_rate_period_s, 0), coalesce(t.daily_quota, 0), coalesce(d.used, 0),"         \
    " t.unsubscribe,"                                                                              \
    " coalesce(greatest(floor(extract(epoch FROM now() - o.since)), 0)::bigint, 0),"               \
    " EXISTS (SELECT 1 FROM fairq.holds h WHERE h.scope = 'tenant' AND h.tenant_id = t.id)"        \
    " FROM fairq.tenants t LEFT JOIN (SELECT tenant_id, count(*) AS open,"                         \
    "   sum(split - sent - dead - cancelled) AS depth, sum(failed) AS failed,"                     \
    "   sum(greatest(total - split - rejected, 0)) AS unsplit, min(created_at) AS oldest"          \
    "  FROM fairq.requests WHERE status IN " FQ_STORE_UNFINISHED " GROUP BY tenant_id) s"          \
    " ON s.tenant_id = t.id"                                                                       \
    " LEFT JOIN fairq.tenant_send_days d"                                                          \
    " ON d.tenant_id = t.id AND d.day = (now() AT TIME ZONE 'UTC')::date"                          \
    " LEFT JOIN fairq.tenant_oldest_due o ON o.tenant_id = t.id"

static void s_tenant_row(const PGresult *res, int row, void *item)
{
    fq_tenant_info_t *out = item;
    *out = (fq_tenant_info_t){.id = fq_store_int64(res, row, 0),
                              .weight = (int)fq_store_int64(res, row, 2),
                              .max_inflight = (int)fq_store_int64(res, row, 3),
                              .submit_rate = (int)fq_store_int64(res, row, 4),
                              .open_requests = fq_store_int64(res, row, 5),
                              .depth = fq_store_int64(res, row, 6),
                              .failed = fq_store_int64(res, row, 7),
                              .unsplit = fq_store_int64(res, row, 8),
                              .oldest_pending_s = fq_store_int64(res, row, 9),
                              .signing_secret_set = PQgetvalue(res, row, 10)[0] == 't',
                              .send_rate_count = fq_store_int64(res, row, 11),
                              .send_rate_period_s = (int)fq_store_int64(res, row, 12),
                              .daily_quota = fq_store_int64(res, row, 13),
                              .sent_today = fq_store_int64(res, row, 14),
                              .unsubscribe = PQgetvalue(res, row, 15)[0] == 't',
                              .oldest_due_s = fq_store_int64(res, row, 16),
                              .held = PQgetvalue(res, row, 17)[0] == 't'};
    snprintf(out->name, sizeof out->name, "%s", PQgetvalue(res, row, 1));
}

int fq_store_tenant_get(fq_store_t *self, const char *name, fq_tenant_info_t *out)
{
    *out = (fq_tenant_info_t){0};
    const char *params[] = {name ? name : ""};
    int rc;
    PGresult *res = fq_store_query(self, S_TENANT_SQL " WHERE t.name = $1", 1, params,
                                   PGRES_TUPLES_OK, "read tenant", &rc);
    if (!res)
        return rc;
    if (PQntuples(res) == 1)
        s_tenant_row(res, 0, out);
    else
        rc = fq_store_fail(self, FQ_ENOTFOUND, "could not read tenant: \"%.*s\" does not exist",
                           FQ_TENANT_NAME_MAX, params[0]);
    PQclear(res);
    return rc;
}

int fq_store_tenant_list(fq_store_t *self, fq_tenant_list_t *list)
{
    *list = (fq_tenant_list_t){0};
    int rc;
    PGresult *res = fq_store_query(self, S_TENANT_SQL " ORDER BY t.name COLLATE \"C\"", 0, NULL,
                                   PGRES_TUPLES_OK, "list tenants", &rc);
    if (!res)
        return rc;
    void *rows;
    rc = fq_store_rows(self, res, sizeof *list->rows, s_tenant_row, &rows);
    list->rows = rows;
    list->count = rc > 0 ? (size_t)rc : 0;
    return rc;
}

void fq_tenant_list_free(fq_tenant_list_t *list)
{
    free(list->rows);
    *list = (fq_tenant_list_t){0};
}

int fq_store_tenant_name(fq_store_t *self, int64_t tenant_id, char name[FQ_TENANT_NAME_SIZE])
{
    char id[FQ_STORE_INT_TEXT];
    snprintf(id, sizeof id, "%lld", (long long)tenant_id);
    const char *params[] = {id};
    int rc;
    PGresult *res = fq_store_query(self, "SELECT name FROM fairq.tenants WHERE id = $1::bigint", 1,
                                   params, PGRES_TUPLES_OK, "read tenant", &rc);
    if (!res)
        return rc;
    if (PQntuples(res) == 1)
        snprintf(name, FQ_TENANT_NAME_SIZE, "%s", PQgetvalue(res, 0, 0));
    else
        rc = fq_store_fail(self, FQ_ENOTFOUND, "could not read tenant: tenant %s does not exist",
                           id);
    PQclear(res);
    return rc;
}

int fq_store_tenant_id(fq_store_t *self, const char *name, int64_t *tenant_id)
{
    const char *params[] = {name ? name : ""};
    int rc;
    PGresult *res = fq_store_query(self, "SELECT id FROM fairq.tenants WHERE name = $1", 1, params,
                                   PGRES_TUPLES_OK, "read tenant", &rc);
    if (!res)
        return rc;
    if (PQntuples(res) == 1)
        *tenant_id = fq_store_int64(res, 0, 0);
    else
        rc = fq_store_fail(self, FQ_ENOTFOUND, "could not read tenant: \"%.*s\" does not exist",
                           FQ_TENANT_NAME_MAX, params[0]);
    PQclear(res);
    return rc;
}

//  ---------------------------------------------------------------------
//  Submit rate (migration 0010)

int fq_store_take_submit_token(fq_store_t *self, int64_t tenant_id, int rate, int *retry_after_s)
{
    *retry_after_s = 0;
    if (rate <= 0)
        return fq_store_fail(self, FQ_EINVAL, "could not take a submit token: rate %d", rate);
    char id[FQ_STORE_INT_TEXT], rate_text[FQ_STORE_INT_TEXT];
    snprintf(id, sizeof id, "%lld", (long long)tenant_id);
    snprintf(rate_text, sizeof rate_text, "%d", rate);
    const char *params[] = {id, rate_text};
    int rc;
    PGresult *res = fq_store_query(self, "SELECT fairq.take_submit_token($1::bigint, $2::int)", 2,
                                   params, PGRES_TUPLES_OK, "take a submit token", &rc);
    if (!res)
        return rc;
    if (PQntuples(res) == 1 && !PQgetisnull(res, 0, 0))
        *retry_after_s = (int)fq_store_int64(res, 0, 0);
    else
        rc = fq_store_fail(self, FQ_EDB, "could not take a submit token: no answer");
    PQclear(res);
    return rc;
}

int fq_store_give_back_submit_token(fq_store_t *self, int64_t tenant_id, int rate)
{
    char id[FQ_STORE_INT_TEXT], rate_text[FQ_STORE_INT_TEXT];
    snprintf(id, sizeof id, "%lld", (long long)tenant_id);
    snprintf(rate_text, sizeof rate_text, "%d", rate);
    const char *params[] = {id, rate_text};
    int rc;
    PGresult *res = fq_store_query(self, "SELECT fairq.give_back_submit_token($1::bigint, $2::int)",
                                   2, params, PGRES_TUPLES_OK, "give a submit token back", &rc);
    PQclear(res);
    return rc;
}

//  ---------------------------------------------------------------------
//  Tokens

//  The SHA-256 of token as a bytea literal.
static void s_token_hash(const char *token, char hex[S_HASH_TEXT])
{
    unsigned char digest[crypto_hash_sha256_BYTES];
    crypto_hash_sha256(digest, (const unsigned char *)token, strlen(token));
    memcpy(hex, "\\x", 2);
    sodium_bin2hex(hex + 2, S_HASH_TEXT - 2, digest, sizeof digest);
}

int fq_store_token_create(fq_store_t *self, const char *tenant, char *token, size_t token_size,
                          int64_t *id)
{
    if (token_size < FQ_STORE_TOKEN_SIZE)
        return fq_store_fail(self, FQ_EINVAL, "could not create token: buffer too small");
    if (sodium_init() < 0)
        return fq_store_fail(self, FQ_EDB, "could not create token: libsodium failed to start");
    unsigned char random[S_TOKEN_RANDOM_BYTES];
    randombytes_buf(random, sizeof random);
    memcpy(token, S_TOKEN_PREFIX, strlen(S_TOKEN_PREFIX));
    sodium_bin2base64(token + strlen(S_TOKEN_PREFIX), token_size - strlen(S_TOKEN_PREFIX), random,
                      sizeof random, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    sodium_memzero(random, sizeof random);
    char hash[S_HASH_TEXT];
    s_token_hash(token, hash);
    const char *params[] = {hash, tenant};
    int rc;
    PGresult *res = fq_store_query(
        self,
        tenant ? "INSERT INTO fairq.api_tokens (hash, tenant_id)"
                 " SELECT $1::bytea, t.id FROM fairq.tenants t WHERE t.name = $2 RETURNING id"
               : "INSERT INTO fairq.api_tokens (hash, tenant_id) VALUES ($1::bytea, NULL)"
                 " RETURNING id",
        tenant ? 2 : 1, params, PGRES_TUPLES_OK, "create token", &rc);
    if (res && PQntuples(res) == 1 && id)
        *id = fq_store_int64(res, 0, 0);
    if (res && PQntuples(res) == 0)
        rc = fq_store_fail(self, FQ_ENOTFOUND,
                           "could not create token: tenant \"%.*s\" does not exist",
                           FQ_TENANT_NAME_MAX, tenant);
    PQclear(res);
    if (rc)
        sodium_memzero(token, token_size);
    return rc;
}

int fq_store_token_lookup(fq_store_t *self, const char *token, fq_token_owner_t *owner)
{
    *owner = (fq_token_owner_t){0};
    //  Anything longer than a token cannot be one: not worth hashing
    if (!token || strlen(token) != FQ_STORE_TOKEN_SIZE - 1)
        return fq_store_fail(self, FQ_ENOTFOUND, "unknown token");
    char hash[S_HASH_TEXT];
    s_token_hash(token, hash);
    const char *params[] = {hash};
    int rc;
    PGresult *res = fq_store_query(self,
                                   "SELECT k.tenant_id IS NULL, coalesce(k.tenant_id, 0),"
                                   " coalesce(t.name, ''), coalesce(t.submit_rate, 0)"
                                   " FROM fairq.api_tokens k"
                                   " LEFT JOIN fairq.tenants t ON t.id = k.tenant_id"
                                   " WHERE k.hash = $1::bytea",
                                   1, params, PGRES_TUPLES_OK, "look up token", &rc);
    if (!res)
        return rc;
    if (PQntuples(res) == 1) {
        owner->admin = PQgetvalue(res, 0, 0)[0] == 't';
        owner->tenant_id = fq_store_int64(res, 0, 1);
        snprintf(owner->tenant, sizeof owner->tenant, "%s", PQgetvalue(res, 0, 2));
        owner->submit_rate = (int)fq_store_int64(res, 0, 3);
    } else
        rc = fq_store_fail(self, FQ_ENOTFOUND, "unknown token");
    PQclear(res);
    return rc;
}

static void s_token_row(const PGresult *res, int row, void *item)
{
    *(fq_token_info_t *)item = (fq_token_info_t){.id = fq_store_int64(res, row, 0),
                                                 .created_at = fq_store_int64(res, row, 1)};
}

int fq_store_token_list(fq_store_t *self, const char *tenant, fq_token_list_t *list)
{
    *list = (fq_token_list_t){0};
    const char *params[] = {tenant};
    int rc;
    PGresult *res = fq_store_query(
        self,
        tenant ? "SELECT k.id, extract(epoch FROM k.created_at)::bigint FROM fairq.api_tokens k"
                 " JOIN fairq.tenants t ON t.id = k.tenant_id WHERE t.name = $1 ORDER BY k.id"
               : "SELECT k.id, extract(epoch FROM k.created_at)::bigint FROM fairq.api_tokens k"
                 " WHERE k.tenant_id IS NULL ORDER BY k.id",
        tenant ? 1 : 0, params, PGRES_TUPLES_OK, "list tokens", &rc);
    if (!res)
        return rc;
    void *rows;
    rc = fq_store_rows(self, res, sizeof *list->rows, s_token_row, &rows);
    list->rows = rows;
    list->count = rc > 0 ? (size_t)rc : 0;
    return rc;
}

void fq_token_list_free(fq_token_list_t *list)
{
    free(list->rows);
    *list = (fq_token_list_t){0};
}

int fq_store_token_revoke(fq_store_t *self, const char *tenant, int64_t id)
{
    char text[FQ_STORE_INT_TEXT];
    snprintf(text, sizeof text, "%lld", (long long)id);
    const char *params[] = {text, tenant};
    int rc;
    //  The tenant must match: one tenant's name cannot revoke another's
    //  token, nor an admin's
    PGresult *res = fq_store_query(
        self,
        tenant ? "DELETE FROM fairq.api_tokens k USING fairq.tenants t"
                 " WHERE k.id = $1::bigint AND t.id = k.tenant_id AND t.name = $2 RETURNING k.id"
               : "DELETE FROM fairq.api_tokens k WHERE k.id = $1::bigint AND k.tenant_id IS NULL"
                 " RETURNING k.id",
        tenant ? 2 : 1, params, PGRES_TUPLES_OK, "revoke token", &rc);
    if (!res)
        return rc;
    if (PQntuples(res) == 0)
        rc = fq_store_fail(self, FQ_ENOTFOUND, "could not revoke token: token %s does not exist",
                           text);
    PQclear(res);
    return rc;
}
