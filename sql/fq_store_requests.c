/*  fq_store_requests.c — requests: intake, and reading them back with
    their counters and rejected recipients (see fq_store.h).

    A submit is one call of fairq.submit_keyed, the function behind
    fairq.submit_json, which applications call in their own transactions:
    it checks the request, stores its recipients in chunks for the splitter
    and notifies fairqd, so a request taken by SQL and one taken by the
    HTTP API are the same. The store adds the request's fingerprint, which
    an idempotency key's repeat is compared with (migration 0012).
*/
#include "fq_store_internal.h"
#include "fq_error.h"
#include <limits.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  fairq.submit_keyed's parameters (0021's: 0015's, with headers,
//  reply_to, text_body, the channel and the http fields, then
//  unsubscribe), and the recipients' place among them.
#define S_SUBMIT_PARAMS     22
#define S_SUBMIT_RECIPIENTS 4

//  fq_store_internal.h's, shared with the schedules' stored requests.
#define S_CHANNEL_EMAIL        FQ_STORE_CHANNEL_EMAIL
#define S_MAX_ATTEMPTS_DEFAULT FQ_STORE_MAX_ATTEMPTS_DEFAULT

//  A request's fingerprint: a BLAKE2b of 32 bytes (the schema's
//  requests_fingerprint_check holds the same size), as a bytea literal in
//  hex ("\x" and 64 digits) and as bare hex (encode(..., 'hex')).
#define S_FINGERPRINT_SIZE  crypto_generichash_BYTES
#define S_FINGERPRINT_HEX   (2 * S_FINGERPRINT_SIZE + 1)
#define S_FINGERPRINT_BYTEA (2 + S_FINGERPRINT_HEX)

//  What fingerprints are made of; a new way of making them takes a new tag,
//  so that it never compares equal to one made the old way.
#define S_FINGERPRINT_TAG "fairq submit 1"

//  What the parts a request's headers add to its fingerprint start with.
#define S_FINGERPRINT_HEADERS "headers"

//  What the part a request's text_body adds to its fingerprint starts with.
#define S_FINGERPRINT_TEXT_BODY "text_body"

//  What the part a request's channel other than mail adds starts with.
#define S_FINGERPRINT_CHANNEL "channel"

//  What the part a request's own unsubscribe adds starts with.
#define S_FINGERPRINT_UNSUBSCRIBE "unsubscribe"

//  The SQLSTATE fairq.submit_keyed raises for a key that named a request
//  of another fingerprint (0012_idempotency_fingerprint.sql).
#define S_SQLSTATE_KEY_REUSED "FQ002"

//  The columns of a request's load that name one extra header and give its
//  value, its text_body, and its channel's (fq_store_request_templates):
//  the channel, then the http fields and the secret, in the order of
//  s_template_strings.
#define S_TEMPLATE_HEADER_NAME  9
#define S_TEMPLATE_HEADER_VALUE 10
#define S_TEMPLATE_TEXT_BODY    11
#define S_TEMPLATE_CHANNEL      12

//  The column of a request's load that says whether its mail carries
//  one-click unsubscribe (0021): the last, after the strings from
//  S_TEMPLATE_TEXT_BODY on.
#define S_TEMPLATE_UNSUBSCRIBE 19

//  Room for a number written as text in a fingerprint.
#define S_FINGERPRINT_NUMBER 24

//  The words of FQ_ECONFLICT for a reused key, the store's own.
#define S_KEY_REUSED "idempotency key names a request submitted with other content"

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
//  Intake

static size_t s_recipients_size(const fq_submit_t *req)
{
    return req->recipients_size ? req->recipients_size
                                : (req->recipients_json ? strlen(req->recipients_json) : 0);
}

//  One part of a fingerprint, its length first: "ab" then "c" must not
//  make the fingerprint of "a" then "bc". NULL is a part of its own.
static void s_fingerprint_part(crypto_generichash_state *state, const char *text, size_t size)
{
    char length[S_FINGERPRINT_NUMBER];
    int n = text ? snprintf(length, sizeof length, "%zu:", size)
                 : snprintf(length, sizeof length, "-:");
    crypto_generichash_update(state, (const unsigned char *)length, (size_t)n);
    if (text)
        crypto_generichash_update(state, (const unsigned char *)text, size);
}

static void s_fingerprint_number(crypto_generichash_state *state, long long number)
{
    char text[S_FINGERPRINT_NUMBER];
    int n = snprintf(text, sizeof text, "%lld", number);
    s_fingerprint_part(state, text, (size_t)n);
}

//  The fingerprint of a submit, as fairq reads it: what two calls must
//  share to be the same request again. The fields as they were parsed
//  (so neither their order in a body nor its spacing matters, and a
//  default left out is the default given), the recipients as the text
//  they came as. The tenant and the key are left out: they find the
//  request the fingerprint is compared with. Writes it as a bytea literal
//  into hex; false when libsodium cannot start.
static bool s_fingerprint(const fq_submit_t *req, char hex[S_FINGERPRINT_BYTEA])
{
    if (sodium_init() < 0)
        return false;
    crypto_generichash_state state;
    unsigned char digest[S_FINGERPRINT_SIZE];
    crypto_generichash_init(&state, NULL, 0, sizeof digest);
    s_fingerprint_part(&state, S_FINGERPRINT_TAG, strlen(S_FINGERPRINT_TAG));
    const char *texts[] = {req->from, req->subject, req->body};
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++)
        s_fingerprint_part(&state, texts[i], texts[i] ? strlen(texts[i]) : 0);
    s_fingerprint_number(&state, req->body_is_html);
    s_fingerprint_number(&state, (long long)req->send_at);
    s_fingerprint_number(&state, req->priority);
    s_fingerprint_number(&state,
                         req->max_attempts > 0 ? req->max_attempts : S_MAX_ATTEMPTS_DEFAULT);
    s_fingerprint_part(&state, req->recipients_json, s_recipients_size(req));
    //  Headers came later (0013): a request without any keeps the
    //  fingerprint it always had, so its key still answers it
    if (req->headers_json || req->reply_to) {
        s_fingerprint_part(&state, S_FINGERPRINT_HEADERS, strlen(S_FINGERPRINT_HEADERS));
        s_fingerprint_part(&state, req->headers_json,
                           req->headers_json ? strlen(req->headers_json) : 0);
        s_fingerprint_part(&state, req->reply_to, req->reply_to ? strlen(req->reply_to) : 0);
    }
    //  And text_body later still (0014), the same way
    if (req->text_body) {
        s_fingerprint_part(&state, S_FINGERPRINT_TEXT_BODY, strlen(S_FINGERPRINT_TEXT_BODY));
        s_fingerprint_part(&state, req->text_body, strlen(req->text_body));
    }
    //  And unsubscribe (0021), only when the request says: one that leaves
    //  it to its tenant keeps the fingerprint it had
    if (req->unsubscribe != FQ_SUBMIT_UNSUBSCRIBE_TENANT) {
        s_fingerprint_part(&state, S_FINGERPRINT_UNSUBSCRIBE, strlen(S_FINGERPRINT_UNSUBSCRIBE));
        s_fingerprint_number(&state, req->unsubscribe == FQ_SUBMIT_UNSUBSCRIBE_ON);
    }
    //  And a channel other than mail (0015): mail keeps its fingerprint
    if (req->channel && strcmp(req->channel, S_CHANNEL_EMAIL) != 0) {
        const char *parts[] = {req->channel,           req->http_method, req->http_url,
                               req->http_headers_json, req->http_body,   req->http_body_format,
                               req->signing_secret};
        s_fingerprint_part(&state, S_FINGERPRINT_CHANNEL, strlen(S_FINGERPRINT_CHANNEL));
        for (size_t i = 0; i < sizeof parts / sizeof *parts; i++)
            s_fingerprint_part(&state, parts[i], parts[i] ? strlen(parts[i]) : 0);
    }
    crypto_generichash_final(&state, digest, sizeof digest);
    memcpy(hex, "\\x", 2);
    sodium_bin2hex(hex + 2, S_FINGERPRINT_HEX, digest, sizeof digest);
    return true;
}

int fq_store_submit(fq_store_t *self, const fq_submit_t *req, int64_t *request_id)
{
    char send_at[FQ_STORE_INT_TEXT], priority[FQ_STORE_INT_TEXT], attempts[FQ_STORE_INT_TEXT];
    snprintf(send_at, sizeof send_at, "%lld", (long long)req->send_at);
    snprintf(priority, sizeof priority, "%d", req->priority);
    snprintf(attempts, sizeof attempts, "%d",
             req->max_attempts > 0 ? req->max_attempts : S_MAX_ATTEMPTS_DEFAULT);
    size_t recipients_size = s_recipients_size(req);
    if (recipients_size > INT_MAX)
        return fq_store_fail(self, FQ_EINVAL, "could not submit request: recipients too large");
    //  Only a request with a key is ever compared with another
    char fingerprint[S_FINGERPRINT_BYTEA];
    if (req->idempotency_key && !s_fingerprint(req, fingerprint))
        return fq_store_fail(self, FQ_EDB, "could not submit request: libsodium failed to start");
    const char *params[] = {req->tenant,
                            req->from,
                            req->subject,
                            req->body,
                            req->recipients_json,
                            req->body_is_html ? "true" : "false",
                            send_at,
                            priority,
                            attempts,
                            req->idempotency_key,
                            req->idempotency_key ? fingerprint : NULL,
                            req->headers_json,
                            req->reply_to,
                            req->text_body,
                            req->channel ? req->channel : S_CHANNEL_EMAIL,
                            req->http_method,
                            req->http_url,
                            req->http_headers_json,
                            req->http_body,
                            req->http_body_format,
                            req->signing_secret,
                            req->unsubscribe == FQ_SUBMIT_UNSUBSCRIBE_TENANT ? NULL
                            : req->unsubscribe == FQ_SUBMIT_UNSUBSCRIBE_ON   ? "true"
                                                                             : "false"};
    //  The recipients in binary format, which for json is the text itself
    //  with its length: a slice of an HTTP body goes as it is, with no
    //  terminated copy of up to http_body_max bytes
    int lengths[S_SUBMIT_PARAMS] = {[S_SUBMIT_RECIPIENTS] = (int)recipients_size};
    int formats[S_SUBMIT_PARAMS] = {[S_SUBMIT_RECIPIENTS] = 1};
    PGresult *res = PQexecParams(self->conn,
                                 "SELECT k.request_id, k.replayed FROM fairq.submit_keyed($1, $2,"
                                 " $3, $4, $5::json, $6::boolean,"
                                 " CASE WHEN $7::bigint > 0 THEN to_timestamp($7::bigint)"
                                 " ELSE now() END, $8::int, $9::int, $10, $11::bytea,"
                                 " $12::jsonb, $13, $14, $15, $16, $17, $18::jsonb, $19, $20,"
                                 " $21, $22::boolean) AS k",
                                 S_SUBMIT_PARAMS, NULL, params, lengths, formats, 0);
    int rc = fq_store_check(self, res, PGRES_TUPLES_OK, "submit request");
    //  Said in the store's words: the server's would name its function
    if (rc && strcmp(self->sqlstate, S_SQLSTATE_KEY_REUSED) == 0)
        return fq_store_fail(self, FQ_ECONFLICT, "could not submit request: " S_KEY_REUSED);
    if (rc)
        return rc;
    *request_id = fq_store_int64(res, 0, 0);
    rc = PQgetvalue(res, 0, 1)[0] == 't' ? 1 : 0;
    PQclear(res);
    return rc;
}

//  Takes the headers of a request's rows first..end-1 (columns
//  S_TEMPLATE_HEADER_NAME and _VALUE of each, NULL in a row without one)
//  into out. Returns 0 or -1 when memory ran out.
static int s_template_headers(const PGresult *res, int first, int end, fq_request_templates_t *out)
{
    size_t n = 0;
    for (int row = first; row < end; row++)
        n += !PQgetisnull(res, row, S_TEMPLATE_HEADER_NAME);
    if (n == 0)
        return 0;
    out->header_names = calloc(n, sizeof *out->header_names);
    out->header_values = calloc(n, sizeof *out->header_values);
    if (!out->header_names || !out->header_values)
        return -1;
    for (int row = first; row < end; row++) {
        if (PQgetisnull(res, row, S_TEMPLATE_HEADER_NAME))
            continue;
        out->header_names[out->nheaders] = strdup(PQgetvalue(res, row, S_TEMPLATE_HEADER_NAME));
        out->header_values[out->nheaders] = strdup(PQgetvalue(res, row, S_TEMPLATE_HEADER_VALUE));
        out->nheaders++;
        if (!out->header_names[out->nheaders - 1] || !out->header_values[out->nheaders - 1])
            return -1;
    }
    return 0;
}

//  One request's templates from its rows first..end-1 of res. Returns 0 or
//  -1 when memory ran out (out freed).
static int s_template_of(const PGresult *res, int first, int end, fq_request_templates_t *out)
{
    *out = (fq_request_templates_t){.id = fq_store_int64(res, first, 0),
                                    .tenant_id = fq_store_int64(res, first, 1),
                                    .subject = strdup(PQgetvalue(res, first, 2)),
                                    .body = strdup(PQgetvalue(res, first, 3)),
                                    .body_is_html = PQgetvalue(res, first, 4)[0] == 't',
                                    .max_attempts = (int)fq_store_int64(res, first, 5),
                                    .from_addr = strdup(PQgetvalue(res, first, 6)),
                                    .tenant = strdup(PQgetvalue(res, first, 7)),
                                    .due_at_ms = fq_store_int64(res, first, 8),
                                    .unsubscribe =
                                        PQgetvalue(res, first, S_TEMPLATE_UNSUBSCRIBE)[0] == 't'};
    int mem = s_template_headers(res, first, end, out);
    char **strings[] = {&out->text_body,      &out->channel,        &out->http_method,
                        &out->http_url,       &out->http_body,      &out->http_body_format,
                        &out->signing_secret, &out->previous_secret};
    for (int i = 0; i < (int)(sizeof strings / sizeof *strings); i++)
        if (!PQgetisnull(res, first, S_TEMPLATE_TEXT_BODY + i) &&
            !(*strings[i] = strdup(PQgetvalue(res, first, S_TEMPLATE_TEXT_BODY + i))))
            mem = -1;
    if (mem || !out->subject || !out->body || !out->from_addr || !out->tenant || !out->channel) {
        fq_request_templates_free(out);
        return -1;
    }
    return 0;
}

//  One row for each extra header (its reply_to last, as Reply-To), or
//  one without any: the request's own columns repeat in each, and a
//  request's rows come together. The name 'Reply-To' is
//  FQ_MAIL_HEADER_REPLY_TO (mailheaders/fq_mail_headers.h), written
//  here rather than passed: the store may not include mailheaders/
//  (docs/code-map.md), and fairq-sender checks the headers it carries
//  against that constant. An http request's headers are its
//  http_headers (it has no mail headers); its secret is its own, else
//  its tenant's as it is now; a webhook's batch is signed by its
//  endpoint's secrets as they are now (0020). A request whose mail
//  carries fairq's one-click unsubscribe (its own unsubscribe, else its
//  tenant's default now: 0021) leaves its own List-Unsubscribe and
//  List-Unsubscribe-Post out, which fairq writes for it (the names are
//  FQ_MAIL_HEADER_LIST_UNSUBSCRIBE and _POST of mailheaders/, spelt
//  here as Reply-To is; a tenant that turned its default on after the
//  submit made them two)
#define S_TEMPLATES_SQL                                                                            \
    "SELECT r.id, r.tenant_id, r.subject, r.body, r.body_is_html,"                                 \
    " r.max_attempts, coalesce(r.from_addr, ''), t.name,"                                          \
    " (extract(epoch FROM greatest(r.created_at, r.send_at))"                                      \
    "  * 1000)::bigint, h.name, h.value, r.text_body, r.channel, r.http_method, r.http_url,"       \
    " r.http_body, r.http_body_format,"                                                            \
    " CASE WHEN r.channel = 'http'"                                                                \
    "  THEN coalesce(r.signing_secret, w.secret, t.signing_secret) END,"                           \
    " CASE WHEN w.previous_until > now() THEN w.previous_secret END,"                              \
    " u.unsubscribe"                                                                               \
    " FROM fairq.requests r JOIN fairq.tenants t ON t.id = r.tenant_id"                            \
    " LEFT JOIN fairq.webhooks w ON w.id = r.webhook_id"                                           \
    " CROSS JOIN LATERAL (SELECT r.channel = 'email'"                                              \
    "  AND coalesce(r.unsubscribe, t.unsubscribe)) AS u(unsubscribe)"                              \
    " LEFT JOIN LATERAL (SELECT e.key, e.value, 0 FROM jsonb_each_text(CASE"                       \
    "   WHEN r.channel = 'email' THEN r.headers ELSE r.http_headers END) e"                        \
    "   WHERE NOT (u.unsubscribe AND lower(e.key) IN ('list-unsubscribe', "                        \
    "'list-unsubscribe-post'))"                                                                    \
    "  UNION ALL SELECT 'Reply-To', r.reply_to, 1 WHERE r.reply_to IS NOT NULL)"                   \
    "  AS h(name, value, last) ON true"                                                            \
    " WHERE r.id = ANY($1::bigint[]) ORDER BY r.id, h.last, h.name"

int fq_store_templates_step(fq_store_t *self, const int64_t *ids, size_t count, fq_buf_t *array,
                            const char **param, fq_store_step_t *step)
{
    if (count > FQ_STORE_TEMPLATES_MAX)
        return fq_store_fail(self, FQ_EINVAL, "could not load templates: %zu requests (at most %d)",
                             count, FQ_STORE_TEMPLATES_MAX);
    if (fq_store_id_array(array, ids, count, sizeof *ids))
        return fq_store_fail(self, FQ_ENOMEM, "out of memory");
    *param = array->data;
    *step = (fq_store_step_t){.sql = S_TEMPLATES_SQL,
                              .nparams = 1,
                              .params = param,
                              .wanted = PGRES_TUPLES_OK,
                              .what = "load requests",
                              .keep = true,
                              .prepare = true};
    return 0;
}

int fq_store_templates_read(fq_store_t *self, PGresult *res, fq_request_templates_t *out)
{
    int rows = PQntuples(res), n = 0;
    for (int first = 0; first < rows;) {
        int end = first + 1;
        while (end < rows && strcmp(PQgetvalue(res, end, 0), PQgetvalue(res, first, 0)) == 0)
            end++;
        if (s_template_of(res, first, end, &out[n]) != 0) {
            for (int i = 0; i < n; i++)
                fq_request_templates_free(&out[i]);
            PQclear(res);
            return fq_store_fail(self, FQ_ENOMEM, "out of memory");
        }
        n++;
        first = end;
    }
    PQclear(res);
    return n;
}

int fq_store_request_templates_many(fq_store_t *self, const int64_t *ids, size_t count,
                                    fq_request_templates_t *out)
{
    if (count == 0)
        return 0;
    fq_buf_t array = {0};
    const char *param;
    fq_store_step_t step;
    int rc = fq_store_templates_step(self, ids, count, &array, &param, &step);
    if (rc == 0)
        rc = fq_store_pipeline(self, &step, 1);
    fq_buf_free(&array);
    return rc ? rc : fq_store_templates_read(self, step.res, out);
}

int fq_store_request_templates(fq_store_t *self, int64_t request_id, fq_request_templates_t *out)
{
    *out = (fq_request_templates_t){0};
    int n = fq_store_request_templates_many(self, &request_id, 1, out);
    if (n == 0)
        return fq_store_fail(self, FQ_ENOTFOUND, "request %lld does not exist",
                             (long long)request_id);
    return n < 0 ? n : 0;
}

void fq_request_templates_free(fq_request_templates_t *templates)
{
    free(templates->subject);
    free(templates->body);
    free(templates->from_addr);
    free(templates->tenant);
    free(templates->text_body);
    templates->subject = templates->body = templates->from_addr = templates->tenant = NULL;
    templates->text_body = NULL;
    if (templates->signing_secret)
        sodium_memzero(templates->signing_secret, strlen(templates->signing_secret));
    free(templates->signing_secret);
    if (templates->previous_secret)
        sodium_memzero(templates->previous_secret, strlen(templates->previous_secret));
    free(templates->previous_secret);
    free(templates->channel);
    free(templates->http_method);
    free(templates->http_url);
    free(templates->http_body);
    free(templates->http_body_format);
    templates->signing_secret = templates->previous_secret = NULL;
    templates->channel = templates->http_method = NULL;
    templates->http_url = templates->http_body = templates->http_body_format = NULL;
    for (size_t i = 0; i < templates->nheaders; i++) {
        free(templates->header_names[i]);
        free(templates->header_values[i]);
    }
    free(templates->header_names);
    free(templates->header_values);
    templates->header_names = templates->header_values = NULL;
    templates->nheaders = 0;
}

//  ---------------------------------------------------------------------
//  Reads

#define S_REQUEST_SQL                                                                              \
    "SELECT r.id, r.tenant_id, t.name, r.status, r.priority, r.total, r.split, r.failed,"          \
    " r.sent, r.dead, r.cancelled, r.rejected,"                                                    \
    " extract(epoch FROM r.created_at)::bigint, extract(epoch FROM r.send_at)::bigint,"            \
    " extract(epoch FROM r.finished_at)::bigint, coalesce(r.headers, '{}')::text, r.reply_to,"     \
    " r.text_body, r.channel, CASE WHEN r.channel = 'http' THEN jsonb_build_object("               \
    "  'method', r.http_method, 'url', r.http_url, 'headers', coalesce(r.http_headers, '{}'),"     \
    "  'body', r.http_body, 'body_format', r.http_body_format,"                                    \
    "  'signed', r.signing_secret IS NOT NULL OR t.signing_secret IS NOT NULL)::text END,"         \
    " r.webhook_id"                                                                                \
    " FROM fairq.requests r JOIN fairq.tenants t ON t.id = r.tenant_id"

//  The columns of S_REQUEST_SQL holding the request's headers and reply_to,
//  its text_body, its channel and its http fields.
#define S_REQUEST_HEADERS   15
#define S_REQUEST_REPLY_TO  16
#define S_REQUEST_TEXT_BODY 17
#define S_REQUEST_CHANNEL   18
#define S_REQUEST_HTTP      19
#define S_REQUEST_WEBHOOK   20

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
                               .finished_at = fq_store_int64(res, row, 14),
                               .webhook_id = fq_store_int64(res, row, S_REQUEST_WEBHOOK)};
    //  headers NULL tells the caller memory ran out, for either string
    out->headers = strdup(PQgetvalue(res, row, S_REQUEST_HEADERS));
    if (!PQgetisnull(res, row, S_REQUEST_REPLY_TO)) {
        out->reply_to = strdup(PQgetvalue(res, row, S_REQUEST_REPLY_TO));
        if (!out->reply_to) {
            free(out->headers);
            out->headers = NULL;
        }
    }
    if (!PQgetisnull(res, row, S_REQUEST_TEXT_BODY)) {
        out->text_body = strdup(PQgetvalue(res, row, S_REQUEST_TEXT_BODY));
        if (!out->text_body) {
            free(out->headers);
            out->headers = NULL;
        }
    }
    if (!PQgetisnull(res, row, S_REQUEST_HTTP)) {
        out->http = strdup(PQgetvalue(res, row, S_REQUEST_HTTP));
        if (!out->http) {
            free(out->headers);
            out->headers = NULL;
        }
    }
    snprintf(out->channel, sizeof out->channel, "%s", PQgetvalue(res, row, S_REQUEST_CHANNEL));
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
    char id[FQ_STORE_INT_TEXT];
    snprintf(id, sizeof id, "%lld", (long long)request_id);
    const char *params[] = {id};
    int rc;
    PGresult *res = fq_store_query(self, S_REQUEST_SQL " WHERE r.id = $1::bigint", 1, params,
                                   PGRES_TUPLES_OK, "read request", &rc);
    if (!res)
        return rc;
    if (PQntuples(res) == 1) {
        s_request_row(res, 0, out);
        if (!out->headers)
            rc = fq_store_fail(self, FQ_ENOMEM, "could not read request: out of memory");
    } else
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
    char tenant[FQ_STORE_INT_TEXT], below[FQ_STORE_INT_TEXT], count[FQ_STORE_INT_TEXT];
    snprintf(tenant, sizeof tenant, "%lld", (long long)tenant_id);
    snprintf(below, sizeof below, "%lld", (long long)before);
    snprintf(count, sizeof count, "%d", limit);
    const char *params[] = {tenant, status, below, count};
    //  By tenant: requests_tenant_idx (tenant_id, id) read backwards; else
    //  the primary key backwards. Either stops after limit rows matching;
    //  a tenant's webhook batches are left out (GET its webhooks for them)
    int rc;
    PGresult *res =
        fq_store_query(self,
                       S_REQUEST_SQL " WHERE ($1::bigint = 0 OR r.tenant_id = $1::bigint)"
                                     " AND ($2::fairq.request_status IS NULL"
                                     "  OR r.status = $2::fairq.request_status)"
                                     " AND ($3::bigint = 0 OR r.id < $3::bigint)"
                                     //  A webhook's batches are its own (0020)
                                     " AND r.webhook_id IS NULL"
                                     " ORDER BY r.id DESC LIMIT $4::int",
                       4, params, PGRES_TUPLES_OK, "list requests", &rc);
    if (!res)
        return rc;
    bool copied = true;
    void *rows;
    rc = fq_store_rows(self, res, sizeof *list->rows, s_request_row, &rows);
    list->rows = rows;
    list->count = rc > 0 ? (size_t)rc : 0;
    for (size_t i = 0; i < list->count; i++)
        copied = copied && list->rows[i].headers;
    if (!copied) {
        fq_request_list_free(list);
        return fq_store_fail(self, FQ_ENOMEM, "could not list requests: out of memory");
    }
    return rc;
}

void fq_request_info_free(fq_request_info_t *request)
{
    free(request->headers);
    free(request->reply_to);
    free(request->text_body);
    free(request->http);
    request->headers = request->reply_to = request->text_body = request->http = NULL;
}

void fq_request_list_free(fq_request_list_t *list)
{
    for (size_t i = 0; i < list->count; i++)
        fq_request_info_free(&list->rows[i]);
    free(list->rows);
    *list = (fq_request_list_t){0};
}

int fq_store_request_by_key(fq_store_t *self, const fq_submit_t *req, int64_t *request_id)
{
    if (!req->idempotency_key)
        return fq_store_fail(self, FQ_ENOTFOUND, "no request with that idempotency key");
    const char *params[] = {req->tenant, req->idempotency_key};
    int rc;
    PGresult *res = fq_store_query(self,
                                   "SELECT r.id, encode(r.fingerprint, 'hex')"
                                   " FROM fairq.requests r"
                                   " JOIN fairq.tenants t ON t.id = r.tenant_id"
                                   " WHERE t.name = $1 AND r.idempotency_key = $2",
                                   2, params, PGRES_TUPLES_OK, "find request by key", &rc);
    if (!res)
        return rc;
    if (PQntuples(res) != 1) {
        PQclear(res);
        return fq_store_fail(self, FQ_ENOTFOUND, "no request with that idempotency key");
    }
    *request_id = fq_store_int64(res, 0, 0);
    //  The fingerprint is made only when there is one to compare with: a
    //  new key (the usual case) costs no pass over the recipients here
    const char *stored = PQgetvalue(res, 0, 1);
    char fingerprint[S_FINGERPRINT_BYTEA];
    if (!PQgetisnull(res, 0, 1) && !s_fingerprint(req, fingerprint))
        rc = fq_store_fail(self, FQ_EDB,
                           "could not find request by key: libsodium failed to "
                           "start");
    else if (!PQgetisnull(res, 0, 1) && strcmp(stored, fingerprint + 2) != 0)
        rc = fq_store_fail(self, FQ_ECONFLICT, "could not find request by key: " S_KEY_REUSED);
    PQclear(res);
    return rc;
}

int fq_store_rejects(fq_store_t *self, int64_t request_id, int after, int limit,
                     fq_reject_page_t *page)
{
    *page = (fq_reject_page_t){0};
    if (limit < 1 || limit > FQ_STORE_PAGE_MAX)
        return fq_store_fail(self, FQ_EINVAL,
                             "could not read rejects: limit %d is not within 1..%d", limit,
                             FQ_STORE_PAGE_MAX);
    char id[FQ_STORE_INT_TEXT], from[FQ_STORE_INT_TEXT], count[FQ_STORE_INT_TEXT];
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
