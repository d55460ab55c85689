/*  fq_store_api.c — the HTTP API's reads and its tokens (see fq_store.h).

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

//  Text of a 64-bit integer, sign and NUL included.
#define S_INT_TEXT 24

#define S_TOKEN_PREFIX       "fq_"
#define S_TOKEN_RANDOM_BYTES 32

//  A SHA-256 as a bytea literal in hex: "\x" and 64 digits.
#define S_HASH_TEXT (2 + 2 * crypto_hash_sha256_BYTES + 1)

static const char *const s_request_statuses[] = {"accepted", "splitting", "active",  "paused",
                                                 "done",     "cancelled", "rejected"};

bool fq_request_status_valid(const char *name)
{
    for (size_t i = 0; name && i < sizeof s_request_statuses / sizeof *s_request_statuses; i++)
        if (strcmp(name, s_request_statuses[i]) == 0)
            return true;
    return false;
}

bool fq_request_status_finished(const char *status)
{
    return strcmp(status, "done") == 0 || strcmp(status, "cancelled") == 0 ||
           strcmp(status, "rejected") == 0;
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
                           "could not create token: tenant \"%.64s\" does not exist", tenant);
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

//  ---------------------------------------------------------------------
//  Requests

#define S_REQUEST_SQL                                                                              \
    "SELECT r.id, r.tenant_id, t.name, r.status, r.priority, r.total, r.split, r.failed,"          \
    " r.sent, r.dead, r.cancelled, r.rejected,"                                                    \
    " extract(epoch FROM r.created_at)::bigint, extract(epoch FROM r.send_at)::bigint,"            \
    " extract(epoch FROM r.finished_at)::bigint"                                                   \
    " FROM fairq.requests r JOIN fairq.tenants t ON t.id = r.tenant_id"

static void s_request_row(const PGresult *res, int row, void *item)
{
    fq_request_info_t *out = item;
    *out = (fq_request_info_t){.id = fq_store_int64(res, row, 0),
                               .tenant_id = fq_store_int64(res, row, 1),
                               .priority = (int)fq_store_int64(res, row, 4),
                               .total = fq_store_int64(res, row, 5),
                               .split = fq_store_int64(res, row, 6),
                               .failed = fq_store_int64(res, row, 7),
                               .sent = fq_store_int64(res, row, 8),
                               .dead = fq_store_int64(res, row, 9),
                               .cancelled = fq_store_int64(res, row, 10),
                               .rejected = fq_store_int64(res, row, 11),
                               .created_at = fq_store_int64(res, row, 12),
                               .send_at = fq_store_int64(res, row, 13),
                               .finished_at = fq_store_int64(res, row, 14)};
    snprintf(out->tenant, sizeof out->tenant, "%s", PQgetvalue(res, row, 2));
    snprintf(out->status, sizeof out->status, "%s", PQgetvalue(res, row, 3));
    int64_t pending =
        out->total - out->failed - out->sent - out->dead - out->cancelled - out->rejected;
    //  The stored counter counts message rows; a cancel also drops the
    //  recipients not yet split, which never became rows: they are
    //  cancelled as well
    if (strcmp(out->status, "cancelled") == 0) {
        out->cancelled += pending;
        pending = 0;
    }
    out->pending = pending > 0 ? pending : 0;
}

int fq_store_request_get(fq_store_t *self, int64_t request_id, fq_request_info_t *out)
{
    *out = (fq_request_info_t){0};
    char id[S_INT_TEXT];
    snprintf(id, sizeof id, "%lld", (long long)request_id);
    const char *params[] = {id};
    int rc;
    PGresult *res = fq_store_query(self, S_REQUEST_SQL " WHERE r.id = $1::bigint", 1, params,
                                   PGRES_TUPLES_OK, "read request", &rc);
    if (!res)
        return rc;
    if (PQntuples(res) == 1)
        s_request_row(res, 0, out);
    else
        rc = fq_store_fail(self, FQ_ENOTFOUND, "could not read request: request %s does not exist",
                           id);
    PQclear(res);
    return rc;
}

int fq_store_request_list(fq_store_t *self, int64_t tenant_id, const char *status, int64_t before,
                          int limit, fq_request_list_t *list)
{
    *list = (fq_request_list_t){0};
    if (limit < 1 || limit > FQ_STORE_PAGE_MAX)
        return fq_store_fail(self, FQ_EINVAL,
                             "could not list requests: limit %d is not within 1..%d", limit,
                             FQ_STORE_PAGE_MAX);
    if (status && !fq_request_status_valid(status))
        return fq_store_fail(self, FQ_EINVAL, "could not list requests: unknown status \"%.32s\"",
                             status);
    if (tenant_id < 0 || before < 0)
        return fq_store_fail(self, FQ_EINVAL, "could not list requests: negative id");
    char tenant[S_INT_TEXT], below[S_INT_TEXT], count[S_INT_TEXT];
    snprintf(tenant, sizeof tenant, "%lld", (long long)tenant_id);
    snprintf(below, sizeof below, "%lld", (long long)before);
    snprintf(count, sizeof count, "%d", limit);
    const char *params[] = {tenant, status, below, count};
    //  By tenant: requests_tenant_idx (tenant_id, id) read backwards; else
    //  the primary key backwards. Either stops after limit rows matching.
    int rc;
    PGresult *res =
        fq_store_query(self,
                       S_REQUEST_SQL " WHERE ($1::bigint = 0 OR r.tenant_id = $1::bigint)"
                                     " AND ($2::fairq.request_status IS NULL"
                                     "  OR r.status = $2::fairq.request_status)"
                                     " AND ($3::bigint = 0 OR r.id < $3::bigint)"
                                     " ORDER BY r.id DESC LIMIT $4::int",
                       4, params, PGRES_TUPLES_OK, "list requests", &rc);
    if (!res)
        return rc;
    void *rows;
    rc = fq_store_rows(self, res, sizeof *list->rows, s_request_row, &rows);
    list->rows = rows;
    list->count = rc > 0 ? (size_t)rc : 0;
    return rc;
}

void fq_request_list_free(fq_request_list_t *list)
{
    free(list->rows);
    *list = (fq_request_list_t){0};
}

//  ---------------------------------------------------------------------
//  Rejects

int fq_store_rejects(fq_store_t *self, int64_t request_id, int after, int limit,
                     fq_reject_page_t *page)
{
    *page = (fq_reject_page_t){0};
    if (limit < 1 || limit > FQ_STORE_PAGE_MAX)
        return fq_store_fail(self, FQ_EINVAL,
                             "could not read rejects: limit %d is not within 1..%d", limit,
                             FQ_STORE_PAGE_MAX);
    char id[S_INT_TEXT], from[S_INT_TEXT], count[S_INT_TEXT];
    snprintf(id, sizeof id, "%lld", (long long)request_id);
    snprintf(from, sizeof from, "%d", after);
    snprintf(count, sizeof count, "%d", limit);
    const char *params[] = {id, from, count};
    int rc;
    PGresult *res = fq_store_query(self,
                                   "SELECT position, recipient, reason FROM fairq.rejects"
                                   " WHERE request_id = $1::bigint AND position > $2::int"
                                   " ORDER BY position LIMIT $3::int",
                                   3, params, PGRES_TUPLES_OK, "read rejects", &rc);
    if (!res)
        return rc;
    //  One block: the rows, then their strings
    size_t n = (size_t)PQntuples(res), bytes = n * sizeof(fq_reject_t);
    for (size_t i = 0; i < n; i++)
        bytes += (size_t)PQgetlength(res, (int)i, 1) + (size_t)PQgetlength(res, (int)i, 2) + 2;
    char *block = n ? malloc(bytes) : NULL;
    if (n && !block) {
        PQclear(res);
        return fq_store_fail(self, FQ_ENOMEM, "out of memory");
    }
    page->rows = (fq_reject_t *)block;
    char *text = block + n * sizeof(fq_reject_t);
    for (size_t i = 0; i < n; i++) {
        fq_reject_t *row = &page->rows[i];
        row->position = (int)fq_store_int64(res, (int)i, 0);
        row->recipient = NULL;
        if (!PQgetisnull(res, (int)i, 1)) {
            size_t len = (size_t)PQgetlength(res, (int)i, 1);
            memcpy(text, PQgetvalue(res, (int)i, 1), len + 1);
            row->recipient = text;
            text += len + 1;
        }
        size_t len = (size_t)PQgetlength(res, (int)i, 2);
        memcpy(text, PQgetvalue(res, (int)i, 2), len + 1);
        row->reason = text;
        text += len + 1;
    }
    page->count = n;
    PQclear(res);
    return (int)n;
}

void fq_reject_page_free(fq_reject_page_t *page)
{
    free(page->rows);
    *page = (fq_reject_page_t){0};
}

int fq_store_tenant_name(fq_store_t *self, int64_t tenant_id, char name[65])
{
    char id[S_INT_TEXT];
    snprintf(id, sizeof id, "%lld", (long long)tenant_id);
    const char *params[] = {id};
    int rc;
    PGresult *res = fq_store_query(self, "SELECT name FROM fairq.tenants WHERE id = $1::bigint", 1,
                                   params, PGRES_TUPLES_OK, "read tenant", &rc);
    if (!res)
        return rc;
    if (PQntuples(res) == 1)
        snprintf(name, 65, "%s", PQgetvalue(res, 0, 0));
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
        rc = fq_store_fail(self, FQ_ENOTFOUND, "could not read tenant: \"%.64s\" does not exist",
                           params[0]);
    PQclear(res);
    return rc;
}

int fq_store_request_by_key(fq_store_t *self, const char *tenant, const char *key,
                            int64_t *request_id)
{
    const char *params[] = {tenant, key};
    int rc;
    PGresult *res = fq_store_query(self,
                                   "SELECT r.id FROM fairq.requests r"
                                   " JOIN fairq.tenants t ON t.id = r.tenant_id"
                                   " WHERE t.name = $1 AND r.idempotency_key = $2",
                                   2, params, PGRES_TUPLES_OK, "find request by key", &rc);
    if (!res)
        return rc;
    if (PQntuples(res) == 1)
        *request_id = fq_store_int64(res, 0, 0);
    else
        rc = fq_store_fail(self, FQ_ENOTFOUND, "no request with that idempotency key");
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
    char text[S_INT_TEXT];
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
