/*  fq_store_events.c — pages of fairq.events in reading order (see
    fq_store_events.h; the schema and why it is read this way are
    migration 0018's).

    A page is one statement of fixed fragments, every value a parameter,
    on the view fairq.events (0029: a stored row is one event, or a
    request's message.sent events of one ack batch, a block of ids):

        WHERE (e.txid, e.row_id) > (cursor's txid, cursor's id - block)
          AND (e.txid, e.id) > (cursor) AND e.txid < xmin(snapshot)
          [AND e.tenant_id = $t] [AND e.request_id = $r] [AND e.type = $y]
        ORDER BY e.txid, e.row_id, e.id LIMIT $n

    With a tenant, events_tenant_idx (tenant_id, txid, id) of the stored
    rows serves it in order, the first bound and the snapshot's as the
    range of the scan (the second, on the events, is a filter: only the
    row holding the cursor's event has events before it); without one,
    events_order_idx (txid, id). A request alone is narrowed to its tenant
    (one lookup first), so it walks the tenant's index too rather than
    every tenant's events.
*/
#include "fq_store_events.h"
#include "fq_error.h"
#include "fq_limits.h"
#include "fq_store_internal.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  Parameters of a page: the cursor's two numbers, the limit, a tenant, a
//  request and a type.

//  What a cursor may be quoted with in a message, at most.
#define S_QUOTE_MAX 40

//  The columns of a page, in this order.
enum { S_ID, S_TENANT, S_REQUEST, S_MESSAGE, S_TYPE, S_RECIPIENT, S_DETAIL, S_AT, S_TXID };

//  ---------------------------------------------------------------------
//  The cursor

typedef struct {
    uint64_t txid; //  xid8: unsigned 64 bits
    int64_t id;    //  bigint, >= 0
} s_cursor_t;

//  Reads the decimal digits at *text (at least one) as a number up to max;
//  moves *text past them. Returns false when there are none, or too many.
static bool s_digits(const char **text, uint64_t max, uint64_t *value)
{
    const char *c = *text;
    uint64_t v = 0;
    for (; *c >= '0' && *c <= '9'; c++) {
        unsigned digit = (unsigned)(*c - '0');
        if (v > (max - digit) / 10)
            return false;
        v = v * 10 + digit;
    }
    if (c == *text)
        return false;
    *text = c;
    *value = v;
    return true;
}

//  Parses "TXID-ID" (digits only) into cursor; NULL is the start. Returns
//  0 or FQ_EINVAL with the message.
static int s_cursor_parse(fq_store_t *self, const char *text, s_cursor_t *cursor)
{
    *cursor = (s_cursor_t){0};
    if (!text)
        return 0;
    const char *c = text;
    uint64_t txid, id;
    if (!s_digits(&c, UINT64_MAX, &txid) || *c++ != '-' || !s_digits(&c, INT64_MAX, &id) || *c)
        return fq_store_fail(self, FQ_EINVAL,
                             "could not read events: \"%.*s\" is not a cursor (a cursor is the "
                             "\"next\" of a page, two numbers joined by '-', as \"%s\" for the "
                             "start)",
                             S_QUOTE_MAX, text, FQ_EVENT_CURSOR_START);
    cursor->txid = txid;
    cursor->id = (int64_t)id;
    return 0;
}

static void s_cursor_text(char *out, uint64_t txid, int64_t id)
{
    snprintf(out, FQ_EVENT_CURSOR_SIZE, "%llu-%lld", (unsigned long long)txid, (long long)id);
}

//  ---------------------------------------------------------------------
//  The statement

//  The filter checked, its tenant and request resolved.
typedef struct {
    int64_t tenant_id; //  0: every tenant
    int64_t request_id;
    const char *type; //  Static; NULL: any
    s_cursor_t after;
    int limit;
} s_read_t;

//  Checks what needs no database. Returns 0 or FQ_EINVAL.
static int s_check(fq_store_t *self, const fq_event_filter_t *f, const char *after, int limit,
                   s_read_t *read)
{
    *read = (s_read_t){.limit = limit};
    if (!f)
        return fq_store_fail(self, FQ_EINVAL, "could not read events: no filter");
    if (limit < 1 || limit > FQ_STORE_PAGE_MAX)
        return fq_store_fail(self, FQ_EINVAL, "could not read events: limit %d is not within 1..%d",
                             limit, FQ_STORE_PAGE_MAX);
    if (f->tenant_id < 0 || f->request_id < 0)
        return fq_store_fail(self, FQ_EINVAL, "could not read events: an id is negative");
    if (f->tenant && !*f->tenant)
        return fq_store_fail(self, FQ_EINVAL, "could not read events: the tenant's name is empty");
    if (f->type && !(read->type = fq_event_type(f->type)))
        return fq_store_fail(self, FQ_EINVAL,
                             "could not read events: type \"%.*s\" is none of " FQ_EVENT_TYPES_TEXT,
                             S_QUOTE_MAX, f->type);
    read->tenant_id = f->tenant_id;
    read->request_id = f->request_id;
    return s_cursor_parse(self, after, &read->after);
}

//  The tenant named and the request's tenant, in one round trip (none when
//  the filter names neither). Returns 0, FQ_ENOTFOUND or FQ_EDB.
static int s_resolve(fq_store_t *self, const fq_event_filter_t *f, s_read_t *read)
{
    if (!f->tenant && !f->request_id)
        return 0;
    char request[FQ_STORE_INT_TEXT];
    snprintf(request, sizeof request, "%lld", (long long)f->request_id);
    const char *params[] = {f->tenant, request};
    int rc;
    PGresult *res = fq_store_query(self,
                                   "SELECT (SELECT id FROM fairq.tenants WHERE name = $1::text),"
                                   " (SELECT tenant_id FROM fairq.requests WHERE id = $2::bigint)",
                                   2, params, PGRES_TUPLES_OK, "read events", &rc);
    if (!res)
        return rc;
    int64_t named = fq_store_int64(res, 0, 0);
    int64_t owner = fq_store_int64(res, 0, 1);
    PQclear(res);
    //  A tenant token naming another tenant learns no more than that it
    //  does not exist: the words fq_store_tenant_id uses
    if (f->tenant && (!named || (read->tenant_id && named != read->tenant_id)))
        return fq_store_fail(self, FQ_ENOTFOUND, "could not read tenant: \"%.*s\" does not exist",
                             FQ_TENANT_NAME_MAX, f->tenant);
    if (named)
        read->tenant_id = named;
    //  Another tenant's request answers as one that does not exist
    if (f->request_id && (!owner || (read->tenant_id && owner != read->tenant_id)))
        return fq_store_fail(self, FQ_ENOTFOUND, "request %lld does not exist",
                             (long long)f->request_id);
    if (f->request_id)
        read->tenant_id = owner;
    return 0;
}

static void s_build(fq_statement_t *q, const s_read_t *read)
{
    fq_statement_sql(q,
                     "SELECT e.id, coalesce(t.name, ''), e.request_id, e.message_id, e.type::text,"
                     " e.recipient, e.detail, floor(extract(epoch FROM e.at))::bigint, e.txid::text"
                     " FROM fairq.events e LEFT JOIN fairq.tenants t ON t.id = e.tenant_id");
    //  The stored rows first (row_id: the index's), then the events: the
    //  row holding the cursor's event begins at most a block before it
    int txid = fq_statement_uint(q, read->after.txid);
    int id = fq_statement_int(q, read->after.id);
    fq_statement_sql_param(q, " WHERE (e.txid, e.row_id) > (", txid, "::xid8");
    fq_statement_sql_param(q, ", ", id, "::bigint - " FQ_STORE_EVENT_BLOCK_TEXT ")");
    fq_statement_sql_param(q, " AND (e.txid, e.id) > (", txid, "::xid8");
    fq_statement_sql_param(q, ", ", id, "::bigint)");
    //  Only transactions older than every one running: what commits later
    //  sorts after this page's cursor (the header says why)
    fq_statement_sql(q, " AND e.txid < pg_snapshot_xmin(pg_current_snapshot())");
    if (read->tenant_id)
        fq_statement_sql_param(q, " AND e.tenant_id = ", fq_statement_int(q, read->tenant_id),
                               "::bigint");
    if (read->request_id)
        fq_statement_sql_param(q, " AND e.request_id = ", fq_statement_int(q, read->request_id),
                               "::bigint");
    if (read->type)
        fq_statement_sql_param(q, " AND e.type = ", fq_statement_text(q, read->type),
                               "::fairq.event_type");
    fq_statement_sql_param(q, " ORDER BY e.txid, e.row_id, e.id LIMIT ",
                           fq_statement_int(q, read->limit), "");
}

//  Checks, resolves and builds the statement into q (after prefix).
static int s_prepare(fq_store_t *self, const fq_event_filter_t *filter, const char *after,
                     int limit, fq_statement_t *q, s_read_t *read)
{
    int rc = s_check(self, filter, after, limit, read);
    if (rc == 0)
        rc = s_resolve(self, filter, read);
    if (rc == 0)
        s_build(q, read);
    if (rc == 0 && q->mem)
        rc = fq_store_fail(self, FQ_ENOMEM, "out of memory");
    return rc;
}

//  ---------------------------------------------------------------------
//  The page

//  Copies the rows into one block (the rows, then their strings) and sets
//  the page's next cursor. Returns 0 or FQ_ENOMEM.
static int s_page(fq_store_t *self, const PGresult *res, const s_read_t *read,
                  fq_event_page_t *page)
{
    int n = PQntuples(res);
    if (n == 0) {
        s_cursor_text(page->next, read->after.txid, read->after.id);
        return 0;
    }
    size_t size = (size_t)n * sizeof(fq_event_t);
    for (int i = 0; i < n; i++)
        size += fq_store_text_size(res, i, S_TENANT) + fq_store_text_size(res, i, S_RECIPIENT) +
                fq_store_text_size(res, i, S_DETAIL);
    fq_event_t *rows = malloc(size);
    if (!rows)
        return fq_store_fail(self, FQ_ENOMEM, "out of memory");
    char *strings = (char *)(rows + n);
    for (int i = 0; i < n; i++) {
        const char *type = fq_event_type(PQgetvalue(res, i, S_TYPE));
        rows[i] = (fq_event_t){.id = fq_store_int64(res, i, S_ID),
                               .request_id = fq_store_int64(res, i, S_REQUEST),
                               .message_id = fq_store_int64(res, i, S_MESSAGE),
                               //  A type only a newer schema knows
                               .type = type ? type : "unknown",
                               .at = fq_store_int64(res, i, S_AT)};
        rows[i].tenant = fq_store_text_copy(res, i, S_TENANT, &strings);
        rows[i].recipient = fq_store_text_copy(res, i, S_RECIPIENT, &strings);
        rows[i].detail = fq_store_text_copy(res, i, S_DETAIL, &strings);
    }
    page->rows = rows;
    page->count = (size_t)n;
    snprintf(page->next, sizeof page->next, "%s-%lld", PQgetvalue(res, n - 1, S_TXID),
             (long long)rows[n - 1].id);
    return 0;
}

int fq_store_events(fq_store_t *self, const fq_event_filter_t *filter, const char *after, int limit,
                    fq_event_page_t *page)
{
    *page = (fq_event_page_t){0};
    fq_statement_t q = {0};
    s_read_t read;
    int rc = s_prepare(self, filter, after, limit, &q, &read);
    PGresult *res = rc ? NULL : fq_statement_run(self, &q, PGRES_TUPLES_OK, "read events", &rc);
    fq_buf_free(&q.sql);
    if (!res)
        return rc;
    rc = s_page(self, res, &read, page);
    PQclear(res);
    return rc ? rc : (int)page->count;
}

void fq_event_page_free(fq_event_page_t *page)
{
    free(page->rows);
    *page = (fq_event_page_t){0};
}

int fq_store_explain_events(fq_store_t *self, const fq_event_filter_t *filter, const char *after,
                            int limit, char **plan)
{
    *plan = NULL;
    fq_statement_t q = {0};
    s_read_t read;
    fq_statement_sql(&q, "EXPLAIN (FORMAT JSON) ");
    int rc = s_prepare(self, filter, after, limit, &q, &read);
    PGresult *res = rc ? NULL : fq_statement_run(self, &q, PGRES_TUPLES_OK, "explain events", &rc);
    fq_buf_free(&q.sql);
    if (!res)
        return rc;
    *plan = strdup(PQntuples(res) == 1 ? PQgetvalue(res, 0, 0) : "");
    PQclear(res);
    return *plan ? 0 : fq_store_fail(self, FQ_ENOMEM, "out of memory");
}
