/*  fq_store_webhooks.c — tenants' webhook endpoints and their feeding
    (see fq_store_webhooks.h; the schema and the feed are
    sql/migrations/0020_webhooks.sql). */
#include "fq_store_webhooks.h"
#include "fq_error.h"
#include "fq_store_internal.h"
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  Random bytes of a secret fairq makes: Standard Webhooks asks for 24 to
//  64; 32 is HMAC-SHA256's own key size.
#define S_SECRET_BYTES 32

//  Room for "whsec_" and the base64 of S_SECRET_BYTES, with its NUL.
#define S_SECRET_SIZE 64

//  What a secret starts with, as Standard Webhooks writes it (the schema's
//  fairq.signing_secret_problem checks the same).
#define S_SECRET_PREFIX "whsec_"

//  A new endpoint's cursor: after every event of the transactions before
//  fairq.webhook_start_txid, whatever their id (the largest bigint).
#define S_CURSOR_ID_LAST "9223372036854775807"

//  The columns of an endpoint's row, in the order s_row reads them; the
//  backlog counts at most FQ_WEBHOOK_BACKLOG_COUNTED + 1 events (the
//  one more says there are more), along events_tenant_idx.
#define S_COLUMNS                                                                                  \
    "w.id, w.url, array_to_string(w.event_types, ','), w.secret,"                                  \
    " CASE WHEN w.previous_until > now() THEN extract(epoch FROM w.previous_until)::bigint END,"   \
    " w.enabled, w.disabled_reason, w.batch_request_id, w.batch_events, w.failures,"               \
    " extract(epoch FROM w.failing_since)::bigint, w.last_error,"                                  \
    " extract(epoch FROM w.last_error_at)::bigint, extract(epoch FROM w.last_success_at)::bigint," \
    " extract(epoch FROM w.next_attempt_at)::bigint, w.delivered,"                                 \
    " (SELECT count(*) FROM (SELECT 1 FROM fairq.events e WHERE e.tenant_id = w.tenant_id"         \
    "   AND (e.txid, e.row_id) > (w.cursor_txid, w.cursor_id - " FQ_STORE_EVENT_BLOCK_TEXT ")"     \
    "   AND (e.txid, e.id) > (w.cursor_txid, w.cursor_id)"                                         \
    "   AND (w.event_types IS NULL OR e.type = ANY (w.event_types)) LIMIT 10001) b),"              \
    " extract(epoch FROM w.created_at)::bigint"

_Static_assert(FQ_WEBHOOK_BACKLOG_COUNTED == 10000, "S_COLUMNS counts up to 10001");

static char *s_text(const PGresult *res, int row, int col)
{
    return PQgetisnull(res, row, col) ? NULL : strdup(PQgetvalue(res, row, col));
}

//  Fills out from res's rows. Returns their count or FQ_ENOMEM.
static int s_rows(fq_store_t *self, PGresult *res, fq_webhook_list_t *out)
{
    int rows = PQntuples(res);
    *out = (fq_webhook_list_t){0};
    if (rows == 0)
        return 0;
    out->rows = calloc((size_t)rows, sizeof *out->rows);
    if (!out->rows)
        return fq_store_fail(self, FQ_ENOMEM, "out of memory");
    out->count = (size_t)rows;
    bool mem = false;
    for (int r = 0; r < rows; r++) {
        fq_webhook_t *w = &out->rows[r];
        int64_t counted = fq_store_int64(res, r, 16);
        *w = (fq_webhook_t){
            .id = fq_store_int64(res, r, 0),
            .url = s_text(res, r, 1),
            .event_types = s_text(res, r, 2),
            .secret = s_text(res, r, 3),
            .previous_until = fq_store_int64(res, r, 4),
            .enabled = PQgetvalue(res, r, 5)[0] == 't',
            .disabled_reason = s_text(res, r, 6),
            .batch_request = fq_store_int64(res, r, 7),
            .batch_events = (int)fq_store_int64(res, r, 8),
            .failures = (int)fq_store_int64(res, r, 9),
            .failing_since = fq_store_int64(res, r, 10),
            .last_error = s_text(res, r, 11),
            .last_error_at = fq_store_int64(res, r, 12),
            .last_success_at = fq_store_int64(res, r, 13),
            .next_attempt_at = fq_store_int64(res, r, 14),
            .delivered = fq_store_int64(res, r, 15),
            .backlog = counted > FQ_WEBHOOK_BACKLOG_COUNTED ? FQ_WEBHOOK_BACKLOG_COUNTED : counted,
            .backlog_more = counted > FQ_WEBHOOK_BACKLOG_COUNTED,
            .created_at = fq_store_int64(res, r, 17)};
        mem = mem || !w->url || !w->secret || (!w->event_types && !PQgetisnull(res, r, 2)) ||
              (!w->disabled_reason && !PQgetisnull(res, r, 6)) ||
              (!w->last_error && !PQgetisnull(res, r, 11));
    }
    if (mem) {
        fq_webhook_list_free(out);
        return fq_store_fail(self, FQ_ENOMEM, "out of memory");
    }
    return rows;
}

void fq_webhook_list_free(fq_webhook_list_t *list)
{
    for (size_t i = 0; list->rows && i < list->count; i++) {
        fq_webhook_t *w = &list->rows[i];
        if (w->secret)
            sodium_memzero(w->secret, strlen(w->secret));
        free(w->url);
        free(w->event_types);
        free(w->secret);
        free(w->disabled_reason);
        free(w->last_error);
    }
    free(list->rows);
    *list = (fq_webhook_list_t){0};
}

//  The types as an array literal of the enum into buf, each checked.
static int s_types(fq_store_t *self, const fq_webhook_spec_t *spec, fq_buf_t *buf)
{
    if (spec->ntypes > FQ_WEBHOOK_EVENT_TYPES_MAX)
        return fq_store_fail(self, FQ_EINVAL, "events: at most %d types",
                             FQ_WEBHOOK_EVENT_TYPES_MAX);
    int mem = fq_buf_add_char(buf, '{');
    for (size_t i = 0; i < spec->ntypes; i++) {
        if (!fq_event_type(spec->types[i]))
            return fq_store_fail(self, FQ_EINVAL,
                                 "events: \"%.40s\" is not one of " FQ_EVENT_TYPES_TEXT,
                                 spec->types[i]);
        mem |= (i ? fq_buf_add_char(buf, ',') : 0) | fq_store_array_text(buf, spec->types[i]);
    }
    mem |= fq_buf_add_char(buf, '}');
    return mem ? fq_store_fail(self, FQ_ENOMEM, "out of memory") : 0;
}

//  A new secret: "whsec_" and the base64 of S_SECRET_BYTES random bytes.
static int s_make_secret(fq_store_t *self, char secret[S_SECRET_SIZE])
{
    if (sodium_init() < 0)
        return fq_store_fail(self, FQ_ENOMEM, "could not make a secret: libsodium failed to start");
    unsigned char random[S_SECRET_BYTES];
    randombytes_buf(random, sizeof random);
    size_t prefix = strlen(S_SECRET_PREFIX);
    memcpy(secret, S_SECRET_PREFIX, prefix);
    sodium_bin2base64(secret + prefix, S_SECRET_SIZE - prefix, random, sizeof random,
                      sodium_base64_VARIANT_ORIGINAL);
    sodium_memzero(random, sizeof random);
    return 0;
}

//  Runs a statement that returns endpoint rows (S_COLUMNS) into out;
//  none is "webhook ID does not exist".
static int s_query_rows(fq_store_t *self, const char *sql, int nparams, const char *const *params,
                        int64_t id, const char *what, fq_webhook_list_t *out)
{
    int rc;
    PGresult *res = fq_store_query(self, sql, nparams, params, PGRES_TUPLES_OK, what, &rc);
    if (!res)
        return rc;
    rc = s_rows(self, res, out);
    PQclear(res);
    if (rc == 0 && id > 0)
        return fq_store_fail(self, FQ_ENOTFOUND, "webhook %lld does not exist", (long long)id);
    return rc;
}

//  In an open transaction: takes back endpoint id's batch in flight when
//  take is true (fairq.webhook_batch_take_back: cancelled without events,
//  its events sent anew by the next pass), then runs the statement that
//  changes the endpoint; commits, or rolls back on failure. For the
//  changes a batch already made must not outlive: a new secret (the
//  dispatcher keeps a request's secret as it first read it), a new URL,
//  the endpoint's removal.
static int s_change(fq_store_t *self, bool take, const char *tenant_id, const char *id,
                    const char *sql, int nparams, const char *const *params, int64_t webhook,
                    const char *what, fq_webhook_list_t *out)
{
    int rc = fq_store_exec(self, "BEGIN", what);
    if (rc == 0 && take) {
        const char *back[] = {tenant_id, id};
        PGresult *res = fq_store_query(self,
                                       "SELECT fairq.webhook_batch_take_back(id)"
                                       " FROM fairq.webhooks WHERE tenant_id = $1 AND id = $2",
                                       2, back, PGRES_TUPLES_OK, what, &rc);
        PQclear(res);
    }
    if (rc == 0)
        rc = s_query_rows(self, sql, nparams, params, webhook, what, out);
    if (rc >= 0 && (rc = fq_store_exec(self, "COMMIT", what)) == 0)
        return 0;
    fq_store_rollback(self);
    fq_webhook_list_free(out);
    return rc;
}

int fq_store_webhook_create(fq_store_t *self, const char *tenant, const fq_webhook_spec_t *spec,
                            fq_webhook_list_t *out)
{
    *out = (fq_webhook_list_t){0};
    int64_t tenant_id;
    int rc = fq_store_tenant_id(self, tenant, &tenant_id);
    if (rc)
        return rc;
    fq_buf_t types = {0};
    if (spec->ntypes > 0 && (rc = s_types(self, spec, &types)) != 0) {
        fq_buf_free(&types);
        return rc;
    }
    char made[S_SECRET_SIZE];
    if (!spec->secret && (rc = s_make_secret(self, made)) != 0) {
        fq_buf_free(&types);
        return rc;
    }
    char id_text[FQ_STORE_INT_TEXT], max[FQ_STORE_INT_TEXT];
    snprintf(id_text, sizeof id_text, "%lld", (long long)tenant_id);
    snprintf(max, sizeof max, "%d", FQ_WEBHOOKS_PER_TENANT_MAX);
    const char *params[] = {id_text, spec->url, spec->ntypes ? types.data : NULL,
                            spec->secret ? spec->secret : made, max};
    //  The count and the insert in one statement; two creates at once may
    //  both pass it, which costs one endpoint over the limit at worst
    rc = s_query_rows(self,
                      "WITH added AS (INSERT INTO fairq.webhooks AS w"
                      "  (tenant_id, url, event_types, secret, cursor_txid, cursor_id)"
                      "  SELECT $1, $2, $3::fairq.event_type[], $4, fairq.webhook_start_txid(),"
                      "   " S_CURSOR_ID_LAST
                      "  WHERE (SELECT count(*) FROM fairq.webhooks WHERE tenant_id = $1) < $5"
                      "  RETURNING *)"
                      " SELECT " S_COLUMNS " FROM added w",
                      5, params, 0, "create webhook", out);
    sodium_memzero(made, sizeof made);
    fq_buf_free(&types);
    if (rc == 0)
        return fq_store_fail(self, FQ_EINVAL, "a tenant has at most %d webhooks",
                             FQ_WEBHOOKS_PER_TENANT_MAX);
    return rc < 0 ? rc : 0;
}

int fq_store_webhooks(fq_store_t *self, const char *tenant, int64_t id, fq_webhook_list_t *out)
{
    *out = (fq_webhook_list_t){0};
    int64_t tenant_id;
    int rc = fq_store_tenant_id(self, tenant, &tenant_id);
    if (rc)
        return rc;
    char tenant_text[FQ_STORE_INT_TEXT], id_text[FQ_STORE_INT_TEXT];
    snprintf(tenant_text, sizeof tenant_text, "%lld", (long long)tenant_id);
    snprintf(id_text, sizeof id_text, "%lld", (long long)id);
    const char *params[] = {tenant_text, id_text};
    return s_query_rows(self,
                        "SELECT " S_COLUMNS " FROM fairq.webhooks w"
                        " WHERE w.tenant_id = $1 AND ($2::bigint = 0 OR w.id = $2) ORDER BY w.id",
                        2, params, id, "read webhooks", out);
}

int fq_store_webhook_update(fq_store_t *self, const char *tenant, int64_t id,
                            const fq_webhook_spec_t *spec, fq_webhook_list_t *out)
{
    *out = (fq_webhook_list_t){0};
    int64_t tenant_id;
    int rc = fq_store_tenant_id(self, tenant, &tenant_id);
    if (rc)
        return rc;
    fq_buf_t types = {0};
    if (spec->set_types && spec->ntypes > 0 && (rc = s_types(self, spec, &types)) != 0) {
        fq_buf_free(&types);
        return rc;
    }
    char tenant_text[FQ_STORE_INT_TEXT], id_text[FQ_STORE_INT_TEXT];
    snprintf(tenant_text, sizeof tenant_text, "%lld", (long long)tenant_id);
    snprintf(id_text, sizeof id_text, "%lld", (long long)id);
    const char *enabled = spec->enabled < 0 ? NULL : spec->enabled ? "true" : "false";
    const char *params[] = {tenant_text,
                            id_text,
                            spec->url,
                            spec->set_types ? "true" : "false",
                            spec->ntypes ? types.data : NULL,
                            enabled};
    //  Enabling (again, or while it backs off) forgets the failures: the
    //  tenant says the endpoint is back, so its next batch goes now (its
    //  cursor is where it was)
    //  A new URL takes the batch in flight back: it would go to the old one
    rc = s_change(
        self, spec->url != NULL, tenant_text, id_text,
        "WITH changed AS (UPDATE fairq.webhooks w SET url = coalesce($3, w.url),"
        "  event_types = CASE WHEN $4::boolean THEN $5::fairq.event_type[] ELSE w.event_types END,"
        "  enabled = coalesce($6::boolean, w.enabled),"
        "  disabled_reason = CASE WHEN $6::boolean THEN NULL ELSE w.disabled_reason END,"
        "  failures = CASE WHEN $6::boolean THEN 0 ELSE w.failures END,"
        "  failing_since = CASE WHEN $6::boolean THEN NULL ELSE w.failing_since END,"
        "  next_attempt_at = CASE WHEN $6::boolean THEN now() ELSE w.next_attempt_at END,"
        "  updated_at = now()"
        "  WHERE w.tenant_id = $1 AND w.id = $2 RETURNING *)"
        " SELECT " S_COLUMNS " FROM changed w",
        6, params, id, "change webhook", out);
    fq_buf_free(&types);
    return rc < 0 ? rc : 0;
}

int fq_store_webhook_rotate(fq_store_t *self, const char *tenant, int64_t id, const char *secret,
                            int keep_s, fq_webhook_list_t *out)
{
    *out = (fq_webhook_list_t){0};
    int64_t tenant_id;
    int rc = fq_store_tenant_id(self, tenant, &tenant_id);
    if (rc)
        return rc;
    char made[S_SECRET_SIZE];
    if (!secret && (rc = s_make_secret(self, made)) != 0)
        return rc;
    char tenant_text[FQ_STORE_INT_TEXT], id_text[FQ_STORE_INT_TEXT], keep[FQ_STORE_INT_TEXT];
    snprintf(tenant_text, sizeof tenant_text, "%lld", (long long)tenant_id);
    snprintf(id_text, sizeof id_text, "%lld", (long long)id);
    snprintf(keep, sizeof keep, "%d", keep_s);
    const char *params[] = {tenant_text, id_text, secret ? secret : made, keep};
    //  The batch in flight is taken back: sent anew, it is signed by the
    //  new secret (and the old one while it is kept)
    rc = s_change(self, true, tenant_text, id_text,
                  "WITH rotated AS (UPDATE fairq.webhooks w SET secret = $3,"
                  "  previous_secret = CASE WHEN $4::int > 0 THEN w.secret END,"
                  "  previous_until = CASE WHEN $4::int > 0"
                  "   THEN now() + make_interval(secs => $4::int) END,"
                  "  updated_at = now()"
                  "  WHERE w.tenant_id = $1 AND w.id = $2 RETURNING *)"
                  " SELECT " S_COLUMNS " FROM rotated w",
                  4, params, id, "rotate webhook secret", out);
    sodium_memzero(made, sizeof made);
    return rc < 0 ? rc : 0;
}

int fq_store_webhook_delete(fq_store_t *self, const char *tenant, int64_t id)
{
    int64_t tenant_id;
    int rc = fq_store_tenant_id(self, tenant, &tenant_id);
    if (rc)
        return rc;
    char tenant_text[FQ_STORE_INT_TEXT], id_text[FQ_STORE_INT_TEXT];
    snprintf(tenant_text, sizeof tenant_text, "%lld", (long long)tenant_id);
    snprintf(id_text, sizeof id_text, "%lld", (long long)id);
    const char *params[] = {tenant_text, id_text};
    //  Its batch in flight is taken back first, in the same transaction
    fq_webhook_list_t gone = {0};
    rc = s_change(self, true, tenant_text, id_text,
                  "WITH gone AS (DELETE FROM fairq.webhooks w WHERE w.tenant_id = $1 AND w.id = $2"
                  "  RETURNING *) SELECT " S_COLUMNS " FROM gone w",
                  2, params, id, "delete webhook", &gone);
    fq_webhook_list_free(&gone);
    return rc;
}

int fq_store_webhooks_feed(fq_store_t *self, const fq_webhook_feed_t *feed)
{
    int values[] = {feed->batch,   feed->bytes,  feed->scan,           feed->max_attempts,
                    feed->base_ms, feed->cap_ms, feed->disable_after_s};
    enum { S_VALUES = sizeof values / sizeof *values };
    char text[S_VALUES][FQ_STORE_INT_TEXT];
    for (int i = 0; i < S_VALUES; i++)
        snprintf(text[i], sizeof text[i], "%d", values[i]);
    const char *params[] = {text[0], text[1], text[2], text[3],
                            text[4], text[5], text[6], fq_store_fence(self)};
    int rc;
    PGresult *res = fq_store_query(self,
                                   "SELECT fairq.webhooks_feed($1::int, $2::int, $3::int, $4::int,"
                                   " $5::int, $6::int, $7::int, $8::bigint)",
                                   8, params, PGRES_TUPLES_OK, "feed webhooks", &rc);
    if (!res)
        return rc;
    int submitted = (int)fq_store_int64(res, 0, 0);
    PQclear(res);
    return submitted;
}
