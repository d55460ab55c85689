/*  fq_store_schedules.c — tenants' schedules of recurring sends (see
    fq_store_schedules.h and sql/migrations/0025_schedules.sql). */
#include "fq_store_schedules.h"
#include "fq_error.h"
#include "fq_store_internal.h"
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  A name taken (schedules' UNIQUE (tenant_id, name)).
#define S_SQLSTATE_UNIQUE "23505"

//  A schedule's columns as the API reads them; the request only when one
//  is read ($one).
#define S_COLUMNS                                                                                  \
    "s.id, s.name, s.cron, s.time_zone, s.missed, s.paused,"                                       \
    " CASE WHEN $3::boolean THEN s.request::text END,"                                             \
    " extract(epoch FROM s.next_fire_at)::bigint, extract(epoch FROM s.last_fire_at)::bigint,"     \
    " s.last_request_id, s.last_error, s.fired, s.skipped,"                                        \
    " extract(epoch FROM s.created_at)::bigint, extract(epoch FROM s.updated_at)::bigint"

enum {
    S_COL_ID,
    S_COL_NAME,
    S_COL_CRON,
    S_COL_TIME_ZONE,
    S_COL_MISSED,
    S_COL_PAUSED,
    S_COL_REQUEST,
    S_COL_NEXT,
    S_COL_LAST,
    S_COL_LAST_REQUEST,
    S_COL_LAST_ERROR,
    S_COL_FIRED,
    S_COL_SKIPPED,
    S_COL_CREATED,
    S_COL_UPDATED,
};

bool fq_schedule_name_valid(const char *name)
{
    size_t len = strlen(name);
    if (len < 1 || len > FQ_SCHEDULE_NAME_MAX || name[0] < 'a' || name[0] > 'z')
        return false;
    for (size_t i = 0; i < len; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-'))
            return false;
    }
    return true;
}

static char *s_text(const PGresult *res, int row, int col)
{
    return PQgetisnull(res, row, col) ? NULL : strdup(PQgetvalue(res, row, col));
}

//  Whether a column that is not NULL failed to copy.
static bool s_lost(const PGresult *res, int row, int col, const char *copy)
{
    return !copy && !PQgetisnull(res, row, col);
}

//  Fills out from res's rows. Returns their count or FQ_ENOMEM.
static int s_rows(fq_store_t *self, PGresult *res, fq_schedule_list_t *out)
{
    int rows = PQntuples(res);
    *out = (fq_schedule_list_t){0};
    if (rows == 0)
        return 0;
    out->rows = calloc((size_t)rows, sizeof *out->rows);
    if (!out->rows)
        return fq_store_fail(self, FQ_ENOMEM, "out of memory");
    out->count = (size_t)rows;
    bool mem = false;
    for (int r = 0; r < rows; r++) {
        fq_schedule_t *s = &out->rows[r];
        *s = (fq_schedule_t){.id = fq_store_int64(res, r, S_COL_ID),
                             .name = s_text(res, r, S_COL_NAME),
                             .cron = s_text(res, r, S_COL_CRON),
                             .time_zone = s_text(res, r, S_COL_TIME_ZONE),
                             .missed = s_text(res, r, S_COL_MISSED),
                             .paused = PQgetvalue(res, r, S_COL_PAUSED)[0] == 't',
                             .request = s_text(res, r, S_COL_REQUEST),
                             .next_fire_at = fq_store_int64(res, r, S_COL_NEXT),
                             .last_fire_at = fq_store_int64(res, r, S_COL_LAST),
                             .last_request_id = fq_store_int64(res, r, S_COL_LAST_REQUEST),
                             .last_error = s_text(res, r, S_COL_LAST_ERROR),
                             .fired = fq_store_int64(res, r, S_COL_FIRED),
                             .skipped = fq_store_int64(res, r, S_COL_SKIPPED),
                             .created_at = fq_store_int64(res, r, S_COL_CREATED),
                             .updated_at = fq_store_int64(res, r, S_COL_UPDATED)};
        mem = mem || !s->name || !s->cron || !s->time_zone || !s->missed ||
              s_lost(res, r, S_COL_REQUEST, s->request) ||
              s_lost(res, r, S_COL_LAST_ERROR, s->last_error);
    }
    if (mem) {
        fq_schedule_list_free(out);
        return fq_store_fail(self, FQ_ENOMEM, "out of memory");
    }
    return rows;
}

void fq_schedule_list_free(fq_schedule_list_t *list)
{
    for (size_t i = 0; list->rows && i < list->count; i++) {
        fq_schedule_t *s = &list->rows[i];
        free(s->name);
        free(s->cron);
        free(s->time_zone);
        free(s->missed);
        free(s->request);
        free(s->last_error);
    }
    free(list->rows);
    *list = (fq_schedule_list_t){0};
}

int fq_store_schedules(fq_store_t *self, const char *tenant, int64_t id, const char *name,
                       fq_schedule_list_t *out)
{
    *out = (fq_schedule_list_t){0};
    int64_t tenant_id;
    int rc = fq_store_tenant_id(self, tenant, &tenant_id);
    if (rc)
        return rc;
    bool one = id > 0 || name;
    char tenant_text[FQ_STORE_INT_TEXT], id_text[FQ_STORE_INT_TEXT];
    snprintf(tenant_text, sizeof tenant_text, "%lld", (long long)tenant_id);
    snprintf(id_text, sizeof id_text, "%lld", (long long)id);
    const char *params[] = {tenant_text, id_text, one ? "true" : "false", name};
    PGresult *res = fq_store_query(self,
                                   "SELECT " S_COLUMNS " FROM fairq.schedules s"
                                   " WHERE s.tenant_id = $1 AND ($2::bigint = 0 OR s.id = $2)"
                                   " AND ($4::text IS NULL OR s.name = $4) ORDER BY s.name",
                                   4, params, PGRES_TUPLES_OK, "read schedules", &rc);
    if (!res)
        return rc;
    rc = s_rows(self, res, out);
    PQclear(res);
    if (rc == 0 && one) {
        if (name)
            return fq_store_fail(self, FQ_ENOTFOUND, "schedule \"%.*s\" does not exist",
                                 FQ_SCHEDULE_NAME_MAX, name);
        return fq_store_fail(self, FQ_ENOTFOUND, "schedule %lld does not exist", (long long)id);
    }
    return rc;
}

//  A set as a parameter, or NULL when the expression is kept.
static const char *s_set(const fq_schedule_spec_t *spec, int64_t bits, char text[FQ_STORE_INT_TEXT])
{
    if (!spec->cron)
        return NULL;
    snprintf(text, FQ_STORE_INT_TEXT, "%lld", (long long)bits);
    return text;
}

//  fairq.schedule_save's parameters, in its order.
enum {
    S_SAVE_TENANT,
    S_SAVE_ID,
    S_SAVE_MAX,
    S_SAVE_NAME,
    S_SAVE_CRON,
    S_SAVE_MINUTES,
    S_SAVE_HOURS,
    S_SAVE_DAYS,
    S_SAVE_MONTHS,
    S_SAVE_WEEKDAYS,
    S_SAVE_DAYS_ANY,
    S_SAVE_WEEKDAYS_ANY,
    S_SAVE_TIME_ZONE,
    S_SAVE_MISSED,
    S_SAVE_PAUSED,
    S_SAVE_REQUEST,
    S_SAVE_FROM,
    S_SAVE_SUBJECT,
    S_SAVE_BODY,
    S_SAVE_RECIPIENTS,
    S_SAVE_HTML,
    S_SAVE_PRIORITY,
    S_SAVE_ATTEMPTS,
    S_SAVE_HEADERS,
    S_SAVE_REPLY_TO,
    S_SAVE_TEXT_BODY,
    S_SAVE_CHANNEL,
    S_SAVE_HTTP_METHOD,
    S_SAVE_HTTP_URL,
    S_SAVE_HTTP_HEADERS,
    S_SAVE_HTTP_BODY,
    S_SAVE_HTTP_FORMAT,
    S_SAVE_SECRET,
    S_SAVE_UNSUBSCRIBE,
    S_SAVE_PARAMS
};

//  Each set's text; NULLs for what stays.
typedef struct {
    char id[FQ_STORE_INT_TEXT], max[FQ_STORE_INT_TEXT];
    char sets[5][FQ_STORE_INT_TEXT];
    char priority[FQ_STORE_INT_TEXT], attempts[FQ_STORE_INT_TEXT];
} s_save_text_t;

static void s_save_params(const char *tenant, int64_t id, const fq_schedule_spec_t *spec,
                          s_save_text_t *t, const char *params[S_SAVE_PARAMS],
                          int lengths[S_SAVE_PARAMS], int formats[S_SAVE_PARAMS])
{
    snprintf(t->id, sizeof t->id, "%lld", (long long)id);
    snprintf(t->max, sizeof t->max, "%d", FQ_SCHEDULES_PER_TENANT_MAX);
    params[S_SAVE_TENANT] = tenant;
    params[S_SAVE_ID] = id > 0 ? t->id : NULL;
    params[S_SAVE_MAX] = t->max;
    params[S_SAVE_NAME] = spec->name;
    params[S_SAVE_CRON] = spec->cron;
    params[S_SAVE_MINUTES] = s_set(spec, spec->minutes, t->sets[0]);
    params[S_SAVE_HOURS] = s_set(spec, spec->hours, t->sets[1]);
    params[S_SAVE_DAYS] = s_set(spec, spec->days, t->sets[2]);
    params[S_SAVE_MONTHS] = s_set(spec, spec->months, t->sets[3]);
    params[S_SAVE_WEEKDAYS] = s_set(spec, spec->weekdays, t->sets[4]);
    params[S_SAVE_DAYS_ANY] = spec->cron ? (spec->days_any ? "true" : "false") : NULL;
    params[S_SAVE_WEEKDAYS_ANY] = spec->cron ? (spec->weekdays_any ? "true" : "false") : NULL;
    params[S_SAVE_TIME_ZONE] = spec->time_zone;
    params[S_SAVE_MISSED] = spec->missed;
    params[S_SAVE_PAUSED] = spec->paused < 0 ? NULL : spec->paused ? "true" : "false";
    const fq_submit_t *r = spec->request ? spec->submit : NULL;
    if (!r)
        return;
    //  The request and the recipients go as the slices they are: json's
    //  binary format is its text
    params[S_SAVE_REQUEST] = spec->request;
    lengths[S_SAVE_REQUEST] = (int)spec->request_size;
    formats[S_SAVE_REQUEST] = 1;
    params[S_SAVE_RECIPIENTS] = r->recipients_json;
    lengths[S_SAVE_RECIPIENTS] =
        (int)(r->recipients_size ? r->recipients_size : strlen(r->recipients_json));
    formats[S_SAVE_RECIPIENTS] = 1;
    snprintf(t->priority, sizeof t->priority, "%d", r->priority);
    snprintf(t->attempts, sizeof t->attempts, "%d",
             r->max_attempts > 0 ? r->max_attempts : FQ_STORE_MAX_ATTEMPTS_DEFAULT);
    params[S_SAVE_FROM] = r->from;
    //  The schema's columns are not NULL: another channel's are empty
    params[S_SAVE_SUBJECT] = r->subject ? r->subject : "";
    params[S_SAVE_BODY] = r->body ? r->body : "";
    params[S_SAVE_HTML] = r->body_is_html ? "true" : "false";
    params[S_SAVE_PRIORITY] = t->priority;
    params[S_SAVE_ATTEMPTS] = t->attempts;
    params[S_SAVE_HEADERS] = r->headers_json;
    params[S_SAVE_REPLY_TO] = r->reply_to;
    params[S_SAVE_TEXT_BODY] = r->text_body;
    params[S_SAVE_CHANNEL] = r->channel ? r->channel : FQ_STORE_CHANNEL_EMAIL;
    params[S_SAVE_HTTP_METHOD] = r->http_method;
    params[S_SAVE_HTTP_URL] = r->http_url;
    params[S_SAVE_HTTP_HEADERS] = r->http_headers_json;
    params[S_SAVE_HTTP_BODY] = r->http_body;
    params[S_SAVE_HTTP_FORMAT] = r->http_body_format;
    params[S_SAVE_SECRET] = r->signing_secret;
    params[S_SAVE_UNSUBSCRIBE] = r->unsubscribe == FQ_SUBMIT_UNSUBSCRIBE_TENANT ? NULL
                                 : r->unsubscribe == FQ_SUBMIT_UNSUBSCRIBE_ON   ? "true"
                                                                                : "false";
}

int fq_store_schedule_save(fq_store_t *self, const char *tenant, int64_t id,
                           const fq_schedule_spec_t *spec, fq_schedule_list_t *out)
{
    *out = (fq_schedule_list_t){0};
    if (spec->request && (spec->request_size > INT_MAX || spec->submit->recipients_size > INT_MAX))
        return fq_store_fail(self, FQ_EINVAL, "could not save schedule: request too large");
    //  The tenant's words when it does not exist, as every read says them
    int64_t tenant_id;
    int rc = fq_store_tenant_id(self, tenant, &tenant_id);
    if (rc)
        return rc;
    s_save_text_t text;
    const char *params[S_SAVE_PARAMS] = {0};
    int lengths[S_SAVE_PARAMS] = {0}, formats[S_SAVE_PARAMS] = {0};
    s_save_params(tenant, id, spec, &text, params, lengths, formats);
    PGresult *res = PQexecParams(
        self->conn,
        "SELECT fairq.schedule_save($1, $2::bigint, $3::int, $4, $5, $6::bigint, $7::bigint,"
        " $8::bigint, $9::bigint, $10::bigint, $11::boolean, $12::boolean, $13, $14,"
        " $15::boolean, $16::json, $17, $18, $19, $20::json, $21::boolean, $22::int, $23::int,"
        " $24::jsonb, $25, $26, $27, $28, $29, $30::jsonb, $31, $32, $33, $34::boolean)",
        S_SAVE_PARAMS, NULL, params, lengths, formats, 0);
    rc = fq_store_check(self, res, PGRES_TUPLES_OK, "save schedule");
    if (rc && strcmp(self->sqlstate, S_SQLSTATE_UNIQUE) == 0)
        return fq_store_fail(self, FQ_ECONFLICT, "schedule \"%.*s\" exists already",
                             FQ_SCHEDULE_NAME_MAX, spec->name ? spec->name : "");
    //  Its own words (a time zone, a request refused): fairq's, not the
    //  server's, so the API may say them
    if (rc == FQ_EINVAL && strcmp(self->sqlstate, "22023") == 0) {
        const char *said = strstr(self->error, ": ");
        char message[FQ_STORE_ERROR_SIZE];
        snprintf(message, sizeof message, "%s", said ? said + 2 : self->error);
        self->sqlstate[0] = '\0';
        return fq_store_fail(self, FQ_EINVAL, "%s", message);
    }
    if (rc)
        return rc;
    if (PQgetisnull(res, 0, 0)) {
        PQclear(res);
        return fq_store_fail(self, FQ_ENOTFOUND, "schedule %lld does not exist", (long long)id);
    }
    int64_t saved = fq_store_int64(res, 0, 0);
    PQclear(res);
    rc = fq_store_schedules(self, tenant, saved, NULL, out);
    return rc < 0 ? rc : 0;
}

int fq_store_schedule_delete(fq_store_t *self, const char *tenant, int64_t id)
{
    int64_t tenant_id;
    int rc = fq_store_tenant_id(self, tenant, &tenant_id);
    if (rc)
        return rc;
    char tenant_text[FQ_STORE_INT_TEXT], id_text[FQ_STORE_INT_TEXT];
    snprintf(tenant_text, sizeof tenant_text, "%lld", (long long)tenant_id);
    snprintf(id_text, sizeof id_text, "%lld", (long long)id);
    const char *params[] = {tenant_text, id_text};
    PGresult *res =
        fq_store_query(self, "DELETE FROM fairq.schedules WHERE tenant_id = $1 AND id = $2", 2,
                       params, PGRES_COMMAND_OK, "delete schedule", &rc);
    if (!res)
        return rc;
    bool deleted = strcmp(PQcmdTuples(res), "1") == 0;
    PQclear(res);
    return deleted
               ? 0
               : fq_store_fail(self, FQ_ENOTFOUND, "schedule %lld does not exist", (long long)id);
}

void fq_schedule_firing_list_free(fq_schedule_firing_list_t *list)
{
    for (size_t i = 0; list->rows && i < list->count; i++) {
        free(list->rows[i].tenant);
        free(list->rows[i].name);
        free(list->rows[i].error);
    }
    free(list->rows);
    *list = (fq_schedule_firing_list_t){0};
}

int fq_store_schedules_fire(fq_store_t *self, const fq_schedule_fire_t *fire,
                            fq_schedule_firing_list_t *out)
{
    *out = (fq_schedule_firing_list_t){0};
    char limit[FQ_STORE_INT_TEXT], grace[FQ_STORE_INT_TEXT], counted[FQ_STORE_INT_TEXT];
    snprintf(limit, sizeof limit, "%d", fire->limit);
    snprintf(grace, sizeof grace, "%d", fire->grace_s);
    snprintf(counted, sizeof counted, "%d", fire->counted);
    const char *params[] = {fq_store_fence(self), limit, grace, counted};
    int rc;
    PGresult *res = fq_store_query(
        self,
        "SELECT f.schedule_id, f.tenant, f.name, extract(epoch FROM f.fire_at)::bigint,"
        " f.request_id, f.replayed, f.skipped, f.error"
        " FROM fairq.schedules_fire($1::bigint, $2::int, $3::int, $4::int) AS f",
        4, params, PGRES_TUPLES_OK, "fire schedules", &rc);
    if (!res)
        return rc;
    int rows = PQntuples(res);
    if (rows > 0 && !(out->rows = calloc((size_t)rows, sizeof *out->rows))) {
        PQclear(res);
        return fq_store_fail(self, FQ_ENOMEM, "out of memory");
    }
    out->count = (size_t)rows;
    bool mem = false;
    for (int r = 0; r < rows; r++) {
        fq_schedule_firing_t *f = &out->rows[r];
        *f = (fq_schedule_firing_t){.schedule_id = fq_store_int64(res, r, 0),
                                    .tenant = s_text(res, r, 1),
                                    .name = s_text(res, r, 2),
                                    .fire_at = fq_store_int64(res, r, 3),
                                    .request_id = fq_store_int64(res, r, 4),
                                    .replayed = PQgetvalue(res, r, 5)[0] == 't',
                                    .skipped = fq_store_int64(res, r, 6),
                                    .error = s_text(res, r, 7)};
        mem = mem || !f->tenant || !f->name || s_lost(res, r, 7, f->error);
    }
    PQclear(res);
    if (mem) {
        fq_schedule_firing_list_free(out);
        return fq_store_fail(self, FQ_ENOMEM, "out of memory");
    }
    return rows;
}
