/*  fq_store_dispatch.c — what the dispatcher renders, and notifications.

    The scheduler pages message ids only (a few bytes per prefetched
    message); the dispatcher loads the rows it is about to render in one
    query per batch of picks, just before sending (DESIGN §3). */
#include "fq_error.h"
#include "fq_store_internal.h"
#include <stdlib.h>
#include <string.h>

int fq_store_load_messages(fq_store_t *self, const int64_t *ids, size_t count,
                           fq_message_rows_t *out)
{
    *out = (fq_message_rows_t){0};
    if (count == 0)
        return 0;
    if (count > FQ_STORE_LOAD_MAX)
        return fq_store_fail(self, FQ_EINVAL, "could not load messages: %zu ids (at most %d)",
                             count, FQ_STORE_LOAD_MAX);
    fq_buf_t array = {0};
    if (fq_buf_add_id_array(&array, ids, count, sizeof *ids)) {
        fq_buf_free(&array);
        return fq_store_fail(self, FQ_ENOMEM, "out of memory");
    }
    const char *params[] = {array.data};
    int rc;
    PGresult *res =
        fq_store_query(self,
                       "SELECT m.id, m.request_id, m.tenant_id, m.recipient, m.fields, m.try_count"
                       " FROM fairq.messages m WHERE m.id = ANY($1::bigint[])"
                       " AND m.status IN ('pending', 'failed')"
                       //  Only while its request may send: a pick of a request
                       //  paused, cancelled or moved to a later send_at since
                       //  it was paged (or given back by a sender that died)
                       //  is not handed out; it stays pending for later
                       " AND EXISTS (SELECT 1 FROM fairq.requests r WHERE r.id = m.request_id"
                       " AND r.status IN ('accepted', 'splitting', 'active')"
                       " AND r.send_at <= now())",
                       1, params, PGRES_TUPLES_OK, "load messages", &rc);
    fq_buf_free(&array);
    if (!res)
        return rc;
    int n = PQntuples(res);
    //  One block: the rows, then their strings
    size_t strings = 0;
    for (int i = 0; i < n; i++)
        strings += (size_t)PQgetlength(res, i, 3) + 1 + (size_t)PQgetlength(res, i, 4) + 1;
    char *block = malloc(sizeof(fq_message_row_t) * (size_t)n + strings + 1);
    if (!block) {
        PQclear(res);
        return fq_store_fail(self, FQ_ENOMEM, "out of memory");
    }
    fq_message_row_t *rows = (fq_message_row_t *)block;
    char *text = block + sizeof(fq_message_row_t) * (size_t)n;
    for (int i = 0; i < n; i++) {
        rows[i] = (fq_message_row_t){.id = fq_store_int64(res, i, 0),
                                     .request_id = fq_store_int64(res, i, 1),
                                     .tenant_id = fq_store_int64(res, i, 2),
                                     .try_count = (int)fq_store_int64(res, i, 5)};
        for (int col = 3; col <= 4; col++) {
            size_t len = (size_t)PQgetlength(res, i, col);
            memcpy(text, PQgetvalue(res, i, col), len + 1);
            if (col == 3)
                rows[i].recipient = text;
            else
                rows[i].fields = text;
            text += len + 1;
        }
    }
    PQclear(res);
    *out = (fq_message_rows_t){rows, (size_t)n};
    return n;
}

void fq_message_rows_free(fq_message_rows_t *rows)
{
    free(rows->rows);
    *rows = (fq_message_rows_t){0};
}

int fq_store_listen(fq_store_t *self, const char *channel)
{
    char *quoted = PQescapeIdentifier(self->conn, channel, strlen(channel));
    if (!quoted)
        return fq_store_fail(self, FQ_EDB, "could not listen: %s", PQerrorMessage(self->conn));
    char sql[256];
    snprintf(sql, sizeof sql, "LISTEN %s", quoted);
    PQfreemem(quoted);
    return fq_store_exec(self, sql, "listen for notifications");
}

int fq_store_socket(fq_store_t *self)
{
    return self->conn && PQstatus(self->conn) == CONNECTION_OK ? PQsocket(self->conn) : -1;
}

int fq_store_notifications(fq_store_t *self)
{
    if (!PQconsumeInput(self->conn) || PQstatus(self->conn) != CONNECTION_OK)
        return fq_store_fail(self, FQ_EDB, "could not read notifications: %s",
                             PQerrorMessage(self->conn));
    int count = 0;
    PGnotify *notify;
    while ((notify = PQnotifies(self->conn)) != NULL) {
        count++;
        PQfreemem(notify);
    }
    return count;
}

int fq_store_tune_paging(fq_store_t *self)
{
    return fq_store_exec(self, "SET enable_bitmapscan = off", "tune the paging session");
}
