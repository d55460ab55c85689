/*  fq_store_operator.c — operator queries: messages searched and changed
    by a filter, a request's lifecycle, the error summary (see fq_store.h;
    docs/delivery.md says what they mean for delivery); 0003_admin.sql
    made the indexes they rely on.

    A message filter becomes a WHERE clause built from fixed fragments, one
    per field set, each comparing a column with a $n parameter: what the
    operator typed is only ever a parameter value, never SQL text, and no
    fragment uses LIKE, so % and _ match themselves.

    Lock order. Acks, nacks and cancels lock messages, then their request;
    the splitter locks a chunk, then its request. The functions here keep
    those orders (a request cancel deletes chunks, then cancels messages,
    then changes the request), except where they touch rows no ack can
    lock: retrying locks the requests first, then their dead messages, as
    the pruner does (fq_store_maintenance.c), so the two cannot deadlock
    and a request being pruned is never reopened.
*/
#include "fq_store_internal.h"
#include "fq_limits.h"
#include "fq_error.h"
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  Parameters of one statement: a filter has at most ten (one per field)
//  and the statements around it at most three more.

//  A request's priority within its tenant: the schema's check
//  (0001_schema.sql).

//  Room for a request's status.
#define S_STATUS_SIZE 32

//  What a change to a request answers: it wakes fairqd, which (re)loads the
//  request whose id is the payload, as after a submit.
#define S_NOTIFY "pg_notify('" FQ_STORE_REQUESTS_CHANNEL "', r.id::text)"

//  Status names, indexed by fq_message_status_t.
static const char *const s_status_names[] = {"any",    "pending", "sent",
                                             "failed", "dead",    "cancelled"};
#define S_STATUS_COUNT (sizeof s_status_names / sizeof s_status_names[0])

//  Every status a filter may name, as a mask of FQ_STATUS_BIT.
#define S_ALL_STATUSES ((1u << S_STATUS_COUNT) - 1)

const char *fq_message_status_name(fq_message_status_t status)
{
    return (unsigned)status < S_STATUS_COUNT ? s_status_names[status] : "unknown";
}

int fq_message_status_parse(const char *name, fq_message_status_t *status)
{
    for (size_t i = 0; name && i < S_STATUS_COUNT; i++)
        if (strcmp(name, s_status_names[i]) == 0) {
            *status = (fq_message_status_t)i;
            return 0;
        }
    return FQ_EINVAL;
}

//  ---------------------------------------------------------------------
//  Statements (fq_statement_t, fq_store_internal.h)

//  Runs a statement whose one row holds one integer (a count); returns it,
//  or a negative code.
static int64_t s_run_count(fq_store_t *self, fq_statement_t *q, const char *what)
{
    int rc;
    PGresult *res = fq_statement_run(self, q, PGRES_TUPLES_OK, what, &rc);
    if (!res)
        return rc;
    int64_t n = PQntuples(res) == 1 ? fq_store_int64(res, 0, 0) : 0;
    PQclear(res);
    return n;
}

//  ---------------------------------------------------------------------
//  Message filters

//  An error or a code narrows a change too: "retry every dead message
//  that met 4.7.1" is what an operator asks after a receiver's incident,
//  and a change goes in batches (fq_store_bulk.c). Status and age do not:
//  every message has them.
static bool s_narrows(const fq_message_filter_t *f)
{
    return f->message_id || f->request_id || f->tenant_id || f->tenant || f->recipient ||
           f->domain || f->error || f->code;
}

//  The reply code last_error starts with: an SMTP reply's, or an http
//  status as the http transport words it ("HTTP 503: ...").
#define S_CODE_PATTERN "'^(?:HTTP )?([0-9]{3})(?![0-9])'"
//  The first RFC 3463 enhanced status code: class 2, 4 or 5, subject and
//  detail of 1 to 3 digits each, not part of a longer dotted number (an
//  IP address, a version).
#define S_ENHANCED_PATTERN "'(?:^|[^0-9.])([245][.][0-9]{1,3}[.][0-9]{1,3})(?![0-9]|[.][0-9])'"

//  Digits of one part of an enhanced status code (RFC 3463: 1 to 3).
#define S_ENHANCED_PART_MAX 3

//  Whether code is one the patterns above can read: three digits, or
//  class.subject.detail with a class of 2, 4 or 5.
static bool s_code_valid(const char *code)
{
    size_t n = strlen(code);
    if (n == 3)
        return isdigit((unsigned char)code[0]) && isdigit((unsigned char)code[1]) &&
               isdigit((unsigned char)code[2]);
    if (code[0] != '2' && code[0] != '4' && code[0] != '5')
        return false;
    const char *c = code + 1;
    for (int part = 0; part < 2; part++) {
        if (*c++ != '.')
            return false;
        size_t digits = 0;
        while (isdigit((unsigned char)*c) && digits <= S_ENHANCED_PART_MAX)
            c++, digits++;
        if (digits < 1 || digits > S_ENHANCED_PART_MAX)
            return false;
    }
    return *c == 0;
}

//  Checks a filter: statuses is the mask of statuses the query accepts;
//  a change needs a field that narrows it.
static int s_filter_check(fq_store_t *self, const fq_message_filter_t *f, unsigned statuses,
                          bool change, const char *what)
{
    if (!f)
        return fq_store_fail(self, FQ_EINVAL, "could not %s: no filter", what);
    if (f->message_id < 0 || f->request_id < 0 || f->tenant_id < 0)
        return fq_store_fail(self, FQ_EINVAL, "could not %s: an id is negative", what);
    if ((f->tenant && !*f->tenant) || (f->recipient && !*f->recipient) ||
        (f->domain && !*f->domain) || (f->error && !*f->error) || (f->code && !*f->code))
        return fq_store_fail(self, FQ_EINVAL, "could not %s: a filter string is empty", what);
    if (f->code && !s_code_valid(f->code))
        return fq_store_fail(self, FQ_EINVAL,
                             "could not %s: a code is three digits (550) or an enhanced status"
                             " code (5.1.1)",
                             what);
    if (f->older_than_s < 0 || f->older_than_s > FQ_AGE_MAX_S)
        return fq_store_fail(self, FQ_EINVAL, "could not %s: an age is not within 0..%lld seconds",
                             what, (long long)FQ_AGE_MAX_S);
    if ((unsigned)f->status >= S_STATUS_COUNT)
        return fq_store_fail(self, FQ_EINVAL, "could not %s: unknown message status %d", what,
                             (int)f->status);
    if (!(statuses & FQ_STATUS_BIT(f->status)))
        return fq_store_fail(self, FQ_EINVAL, "could not %s: it does not apply to %s messages",
                             what, s_status_names[f->status]);
    if (change && !s_narrows(f))
        return fq_store_fail(self, FQ_EINVAL,
                             "could not %s: name a message, request, tenant, recipient, domain,"
                             " error or code",
                             what);
    return 0;
}

//  Checks that the message, request and tenant a filter names exist, and
//  finds the id of the tenant named. One round trip, none if it names none.
static int s_filter_resolve(fq_store_t *self, const fq_message_filter_t *f,
                            fq_filter_resolved_t *out, const char *what)
{
    *out = (fq_filter_resolved_t){.filter = f};
    if (!f->message_id && !f->request_id && !f->tenant_id && !f->tenant)
        return 0;
    char message[FQ_STORE_INT_TEXT], request[FQ_STORE_INT_TEXT], tenant[FQ_STORE_INT_TEXT];
    snprintf(message, sizeof message, "%lld", (long long)f->message_id);
    snprintf(request, sizeof request, "%lld", (long long)f->request_id);
    snprintf(tenant, sizeof tenant, "%lld", (long long)f->tenant_id);
    const char *params[] = {message, request, tenant, f->tenant};
    int rc;
    PGresult *res = fq_store_query(
        self,
        "SELECT $1::bigint = 0 OR EXISTS (SELECT 1 FROM fairq.messages WHERE id = $1::bigint),"
        " $2::bigint = 0 OR EXISTS (SELECT 1 FROM fairq.requests WHERE id = $2::bigint),"
        " $3::bigint = 0 OR EXISTS (SELECT 1 FROM fairq.tenants WHERE id = $3::bigint),"
        " (SELECT id FROM fairq.tenants WHERE name = $4::text)",
        4, params, PGRES_TUPLES_OK, what, &rc);
    if (!res)
        return rc;
    if (PQgetvalue(res, 0, 0)[0] != 't')
        rc = fq_store_fail(self, FQ_ENOTFOUND, "could not %s: message %s does not exist", what,
                           message);
    else if (PQgetvalue(res, 0, 1)[0] != 't')
        rc = fq_store_fail(self, FQ_ENOTFOUND, "could not %s: request %s does not exist", what,
                           request);
    else if (PQgetvalue(res, 0, 2)[0] != 't')
        rc = fq_store_fail(self, FQ_ENOTFOUND, "could not %s: tenant %s does not exist", what,
                           tenant);
    else if (f->tenant && PQgetisnull(res, 0, 3))
        rc = fq_store_fail(self, FQ_ENOTFOUND, "could not %s: tenant \"%.*s\" does not exist", what,
                           FQ_TENANT_NAME_MAX, f->tenant);
    else
        out->tenant_by_name = fq_store_int64(res, 0, 3);
    PQclear(res);
    return rc;
}

int fq_store_filter_prepare(fq_store_t *self, const fq_message_filter_t *f, unsigned statuses,
                            bool change, fq_filter_resolved_t *out, const char *what)
{
    int rc = s_filter_check(self, f, statuses, change, what);
    return rc ? rc : s_filter_resolve(self, f, out, what);
}

//  Appends " AND ..." for each field set; the messages are "m". Each
//  fragment is one an index serves (request, tenant: (x, id); recipient,
//  domain: expression indexes on exactly these expressions).
void fq_store_filter_where(fq_statement_t *q, const fq_filter_resolved_t *resolved)
{
    const fq_message_filter_t *f = resolved->filter;
    if (f->message_id)
        fq_statement_sql_param(q, " AND m.id = ", fq_statement_int(q, f->message_id), "");
    if (f->request_id)
        fq_statement_sql_param(q, " AND m.request_id = ", fq_statement_int(q, f->request_id), "");
    if (f->tenant_id)
        fq_statement_sql_param(q, " AND m.tenant_id = ", fq_statement_int(q, f->tenant_id), "");
    if (f->tenant)
        fq_statement_sql_param(
            q, " AND m.tenant_id = ", fq_statement_int(q, resolved->tenant_by_name), "");
    if (f->status != FQ_MESSAGE_ANY)
        fq_statement_sql_param(q,
                               " AND m.status = ", fq_statement_text(q, s_status_names[f->status]),
                               "::fairq.message_status");
    if (f->recipient)
        fq_statement_sql_param(q, " AND lower(m.recipient) = lower(",
                               fq_statement_text(q, f->recipient), "::text)");
    if (f->domain)
        fq_statement_sql_param(q, " AND lower(split_part(m.recipient, '@', 2)) = lower(",
                               fq_statement_text(q, f->domain), "::text)");
    //  The last three are read from the rows the others selected: no
    //  index has them. strpos, not LIKE: what the operator typed matches
    //  itself, % and _ included
    if (f->error)
        fq_statement_sql_param(q, " AND strpos(lower(m.last_error), lower(",
                               fq_statement_text(q, f->error), "::text)) > 0");
    if (f->code) {
        int code = fq_statement_text(q, f->code);
        fq_statement_sql_param(q, " AND (substring(m.last_error FROM " S_CODE_PATTERN ") = ", code,
                               "::text");
        fq_statement_sql_param(
            q, " OR substring(m.last_error FROM " S_ENHANCED_PATTERN ") = ", code, "::text)");
    }
    if (f->older_than_s)
        fq_statement_sql_param(q, " AND m.created_at < now() - make_interval(secs => ",
                               fq_statement_int(q, f->older_than_s), "::double precision)");
}

//  ---------------------------------------------------------------------
//  Search

static int s_search_build(fq_store_t *self, const fq_message_filter_t *filter, int64_t after_id,
                          int limit, fq_statement_t *q, const char *what)
{
    if (limit < 1 || limit > FQ_STORE_PAGE_MAX)
        return fq_store_fail(self, FQ_EINVAL, "could not %s: limit %d is not within 1..%d", what,
                             limit, FQ_STORE_PAGE_MAX);
    fq_filter_resolved_t resolved;
    int rc = fq_store_filter_prepare(self, filter, S_ALL_STATUSES, false, &resolved, what);
    if (rc)
        return rc;
    fq_statement_sql_param(
        q,
        "SELECT m.id, m.request_id, m.tenant_id, m.recipient, m.status, m.try_count,"
        " coalesce(floor(extract(epoch FROM m.next_attempt_at))::bigint, 0),"
        " coalesce(floor(extract(epoch FROM m.last_attempt_at))::bigint, 0),"
        " m.last_error FROM fairq.messages m WHERE m.id > ",
        fq_statement_int(q, after_id > 0 ? after_id : 0), "");
    int limit_param = fq_statement_int(q, limit);
    fq_store_filter_where(q, &resolved);
    fq_statement_sql_param(q, " ORDER BY m.id LIMIT ", limit_param, "");
    return 0;
}

static fq_message_status_t s_status_of(const char *name)
{
    fq_message_status_t status = FQ_MESSAGE_ANY;
    fq_message_status_parse(name, &status);
    return status;
}

//  Copies the rows into one block: the row array, then the strings.
static int s_search_page(fq_store_t *self, const PGresult *res, fq_message_page_t *page)
{
    size_t n = (size_t)PQntuples(res);
    size_t size = n * sizeof(fq_message_info_t);
    for (size_t i = 0; i < n; i++)
        size += (size_t)PQgetlength(res, (int)i, 3) + 1 + (size_t)PQgetlength(res, (int)i, 8) + 1;
    if (n == 0)
        return 0;
    fq_message_info_t *rows = malloc(size);
    if (!rows)
        return fq_store_fail(self, FQ_ENOMEM, "out of memory");
    char *strings = (char *)(rows + n);
    for (size_t i = 0; i < n; i++) {
        int row = (int)i;
        fq_message_info_t *info = &rows[i];
        *info = (fq_message_info_t){.id = fq_store_int64(res, row, 0),
                                    .request_id = fq_store_int64(res, row, 1),
                                    .tenant_id = fq_store_int64(res, row, 2),
                                    .status = s_status_of(PQgetvalue(res, row, 4)),
                                    .try_count = (int)fq_store_int64(res, row, 5),
                                    .next_attempt_at = fq_store_int64(res, row, 6),
                                    .last_attempt_at = fq_store_int64(res, row, 7)};
        size_t len = (size_t)PQgetlength(res, row, 3);
        memcpy(strings, PQgetvalue(res, row, 3), len + 1);
        info->recipient = strings;
        strings += len + 1;
        if (!PQgetisnull(res, row, 8)) {
            len = (size_t)PQgetlength(res, row, 8);
            memcpy(strings, PQgetvalue(res, row, 8), len + 1);
            info->last_error = strings;
            strings += len + 1;
        }
    }
    page->rows = rows;
    page->count = n;
    return 0;
}

int fq_store_search_messages(fq_store_t *self, const fq_message_filter_t *filter, int64_t after_id,
                             int limit, fq_message_page_t *page)
{
    *page = (fq_message_page_t){0};
    fq_statement_t q = {0};
    int rc = s_search_build(self, filter, after_id, limit, &q, "search messages");
    PGresult *res = rc ? NULL : fq_statement_run(self, &q, PGRES_TUPLES_OK, "search messages", &rc);
    fq_buf_free(&q.sql);
    if (!res)
        return rc;
    rc = s_search_page(self, res, page);
    PQclear(res);
    return rc ? rc : (int)page->count;
}

void fq_message_page_free(fq_message_page_t *page)
{
    free(page->rows);
    *page = (fq_message_page_t){0};
}

int fq_store_explain_search(fq_store_t *self, const fq_message_filter_t *filter, int64_t after_id,
                            int limit, char **plan)
{
    *plan = NULL;
    fq_statement_t q = {0};
    fq_statement_sql(&q, "EXPLAIN (FORMAT JSON) ");
    int rc = s_search_build(self, filter, after_id, limit, &q, "explain search");
    PGresult *res = rc ? NULL : fq_statement_run(self, &q, PGRES_TUPLES_OK, "explain search", &rc);
    fq_buf_free(&q.sql);
    if (!res)
        return rc;
    *plan = strdup(PQntuples(res) == 1 ? PQgetvalue(res, 0, 0) : "");
    PQclear(res);
    return *plan ? 0 : fq_store_fail(self, FQ_ENOMEM, "out of memory");
}

//  ---------------------------------------------------------------------
//  Changes by filter (cancel and retry: fq_store_bulk.c)

int fq_store_release_claims(fq_store_t *self, const fq_message_filter_t *filter)
{
    fq_filter_resolved_t resolved;
    unsigned statuses = FQ_STATUS_BIT(FQ_MESSAGE_ANY) | FQ_STATUS_BIT(FQ_MESSAGE_FAILED);
    int rc = fq_store_filter_prepare(self, filter, statuses, true, &resolved, "release claims");
    if (rc)
        return rc;
    fq_statement_t q = {0};
    fq_statement_sql(&q, "WITH released AS (UPDATE fairq.messages m SET next_attempt_at = now(),"
                         "   claimed_epoch = NULL, updated_at = now()"
                         "  WHERE m.status = 'failed' AND m.next_attempt_at > now()");
    fq_store_filter_where(&q, &resolved);
    fq_statement_sql(&q, " RETURNING 1) SELECT count(*) FROM released");
    return (int)s_run_count(self, &q, "release claims");
}

//  ---------------------------------------------------------------------
//  Request lifecycle

//  A request's status, to explain why a change did not apply. Returns 0
//  with it, FQ_ENOTFOUND or FQ_EDB.
static int s_request_status(fq_store_t *self, const char *id, char *status, size_t size,
                            const char *what)
{
    const char *params[] = {id};
    int rc;
    PGresult *res = fq_store_query(self, "SELECT status FROM fairq.requests WHERE id = $1::bigint",
                                   1, params, PGRES_TUPLES_OK, what, &rc);
    if (!res)
        return rc;
    if (PQntuples(res) == 1)
        snprintf(status, size, "%s", PQgetvalue(res, 0, 0));
    else
        rc = fq_store_fail(self, FQ_ENOTFOUND, "could not %s: request %s does not exist", what, id);
    PQclear(res);
    return rc;
}

//  Runs a one-request UPDATE ... RETURNING: 1 when it changed the row, 0
//  when its condition excluded it, or a negative code.
static int s_request_update(fq_store_t *self, const char *sql, int nparams,
                            const char *const *params, const char *what)
{
    int rc;
    PGresult *res = fq_store_query(self, sql, nparams, params, PGRES_TUPLES_OK, what, &rc);
    if (!res)
        return rc;
    int changed = PQntuples(res) > 0;
    PQclear(res);
    return changed;
}

static bool s_paused(const char *status)
{
    return strcmp(status, "paused") == 0;
}

static bool s_running(const char *status)
{
    return strcmp(status, "accepted") == 0 || strcmp(status, "splitting") == 0 ||
           strcmp(status, "active") == 0;
}

//  After a lifecycle UPDATE matched nothing: 0 when the request already is
//  in the state wanted (already, if given, says so), otherwise why not.
static int s_request_refusal(fq_store_t *self, const char *id, bool (*already)(const char *),
                             const char *what)
{
    char status[S_STATUS_SIZE];
    int rc = s_request_status(self, id, status, sizeof status, what);
    if (rc)
        return rc;
    if (already && already(status))
        return 0;
    if (fq_request_status_finished(status))
        return fq_store_fail(self, FQ_EINVAL, "could not %s: request %s is %s", what, id, status);
    //  It changed between the UPDATE and this read
    return fq_store_fail(self, FQ_ECONFLICT,
                         "could not %s: request %s changed meanwhile, try again", what, id);
}

int fq_store_request_cancel(fq_store_t *self, int64_t request_id)
{
    const char *what = "cancel request";
    char id[FQ_STORE_INT_TEXT], status[S_STATUS_SIZE];
    snprintf(id, sizeof id, "%lld", (long long)request_id);
    const char *params[] = {id};
    int rc = fq_store_exec(self, "BEGIN", "begin cancel");
    if (rc == 0)
        rc = s_request_status(self, id, status, sizeof status, what);
    if (rc == 0 && strcmp(status, "cancelled") == 0) {
        fq_store_rollback(self);
        return 0;
    }
    if (rc == 0 && fq_request_status_finished(status))
        rc = fq_store_fail(self, FQ_EINVAL, "could not %s: request %s is %s", what, id, status);
    //  Chunks first: a split in progress holds its chunk, then takes the
    //  request row; waiting for the chunk lets it finish, and its messages
    //  are then cancelled with the rest
    PGresult *res = NULL;
    if (rc == 0)
        res = fq_store_query(self, "DELETE FROM fairq.recipient_chunks WHERE request_id = $1", 1,
                             params, PGRES_COMMAND_OK, "drop unsplit recipients", &rc);
    PQclear(res);
    int cancelled = 0;
    if (rc == 0) {
        fq_message_filter_t filter = {.request_id = request_id};
        int64_t changed = 0;
        rc = fq_store_cancel_all(self, &(fq_filter_resolved_t){.filter = &filter}, &changed);
        cancelled = (int)changed;
    }
    if (rc == 0) {
        int changed = s_request_update(
            self,
            "WITH cancelled AS (UPDATE fairq.requests r SET status = 'cancelled',"
            " finished_at = now(), updated_at = now() WHERE r.id = $1 AND "
            "r.status IN " FQ_STORE_UNFINISHED " RETURNING r.*),"
            " evented AS (INSERT INTO fairq.event_rows (tenant_id, request_id, type)"
            "  SELECT tenant_id, id, 'request.cancelled' FROM cancelled"
            "  WHERE webhook_id IS NULL)"
            " SELECT " S_NOTIFY " FROM cancelled r",
            1, params, what);
        rc = changed < 0 ? changed
             : changed > 0
                 ? 0
                 : fq_store_fail(self, FQ_ECONFLICT,
                                 "could not %s: request %s changed meanwhile, try again", what, id);
    }
    if (rc == 0)
        rc = fq_store_exec(self, "COMMIT", "commit cancel");
    if (rc)
        fq_store_rollback(self);
    return rc ? rc : cancelled;
}

int fq_store_request_pause(fq_store_t *self, int64_t request_id)
{
    char id[FQ_STORE_INT_TEXT];
    snprintf(id, sizeof id, "%lld", (long long)request_id);
    const char *params[] = {id};
    int changed =
        s_request_update(self,
                         "UPDATE fairq.requests r SET status = 'paused', updated_at = now()"
                         " WHERE r.id = $1 AND r.status IN ('accepted', 'splitting',"
                         " 'active') RETURNING " S_NOTIFY,
                         1, params, "pause request");
    return changed ? changed : s_request_refusal(self, id, s_paused, "pause request");
}

int fq_store_request_resume(fq_store_t *self, int64_t request_id)
{
    char id[FQ_STORE_INT_TEXT];
    snprintf(id, sizeof id, "%lld", (long long)request_id);
    const char *params[] = {id};
    //  Back to the state it was paused in: the split may not be complete
    //  (the splitter leaves a paused request's status alone)
    int changed = s_request_update(
        self,
        "UPDATE fairq.requests r SET updated_at = now(), status = (CASE"
        "  WHEN NOT EXISTS (SELECT 1 FROM fairq.recipient_chunks c WHERE c.request_id = r.id)"
        "  THEN 'active' WHEN r.split = 0 AND r.rejected = 0 THEN 'accepted'"
        "  ELSE 'splitting' END)::fairq.request_status"
        " WHERE r.id = $1 AND r.status = 'paused' RETURNING " S_NOTIFY,
        1, params, "resume request");
    return changed ? changed : s_request_refusal(self, id, s_running, "resume request");
}

int fq_store_request_change(fq_store_t *self, int64_t request_id, const fq_request_change_t *change)
{
    const char *what = "change request";
    if (!change || (!change->set_send_at && !change->set_priority))
        return fq_store_fail(self, FQ_EINVAL, "could not %s: nothing to change", what);
    if (change->set_priority &&
        (change->priority < FQ_PRIORITY_MIN || change->priority > FQ_PRIORITY_MAX))
        return fq_store_fail(self, FQ_EINVAL, "could not %s: priority %d is not within %d..%d",
                             what, change->priority, FQ_PRIORITY_MIN, FQ_PRIORITY_MAX);
    if (change->set_send_at && change->send_at < 0)
        return fq_store_fail(self, FQ_EINVAL, "could not %s: send_at is negative", what);
    char id[FQ_STORE_INT_TEXT], send_at[FQ_STORE_INT_TEXT], priority[FQ_STORE_INT_TEXT];
    snprintf(id, sizeof id, "%lld", (long long)request_id);
    snprintf(send_at, sizeof send_at, "%lld", (long long)change->send_at);
    snprintf(priority, sizeof priority, "%d", change->priority);
    const char *params[] = {id, change->set_send_at ? "true" : "false", send_at,
                            change->set_priority ? "true" : "false", priority};
    int changed = s_request_update(
        self,
        "UPDATE fairq.requests r SET updated_at = now(),"
        " send_at = CASE WHEN NOT $2::boolean THEN r.send_at"
        "  WHEN $3::bigint > 0 THEN to_timestamp($3::bigint) ELSE now() END,"
        " priority = CASE WHEN $4::boolean THEN $5::int ELSE r.priority END"
        " WHERE r.id = $1 AND r.status IN " FQ_STORE_UNFINISHED " RETURNING " S_NOTIFY,
        5, params, what);
    if (changed < 0)
        return changed;
    return changed ? 0 : s_request_refusal(self, id, NULL, what);
}

//  ---------------------------------------------------------------------
//  Error summary

//  The columns of a summary row, as fq_error_count_t lists them.
enum { S_ERR_TENANT, S_ERR_DESTINATION, S_ERR_CODE, S_ERR_ENHANCED, S_ERR_EXAMPLE, S_ERR_STRINGS };

//  Copies the rows into one block: the row array, then the strings.
static int s_summary_copy(fq_store_t *self, const PGresult *res, fq_error_summary_t *summary)
{
    size_t n = (size_t)PQntuples(res);
    size_t size = n * sizeof(fq_error_count_t);
    for (size_t i = 0; i < n; i++)
        for (int col = 0; col < S_ERR_STRINGS; col++)
            size += (size_t)PQgetlength(res, (int)i, col) + 1;
    fq_error_count_t *rows = n ? malloc(size) : NULL;
    if (n && !rows)
        return fq_store_fail(self, FQ_ENOMEM, "out of memory");
    char *strings = (char *)(rows + n);
    for (size_t i = 0; i < n; i++) {
        int row = (int)i;
        const char *copied[S_ERR_STRINGS] = {0};
        for (int col = 0; col < S_ERR_STRINGS; col++) {
            if (PQgetisnull(res, row, col))
                continue;
            size_t len = (size_t)PQgetlength(res, row, col);
            memcpy(strings, PQgetvalue(res, row, col), len + 1);
            copied[col] = strings;
            strings += len + 1;
        }
        rows[i] = (fq_error_count_t){.tenant = copied[S_ERR_TENANT],
                                     .destination = copied[S_ERR_DESTINATION],
                                     .code = copied[S_ERR_CODE],
                                     .enhanced = copied[S_ERR_ENHANCED],
                                     .example = copied[S_ERR_EXAMPLE],
                                     .count = fq_store_int64(res, row, S_ERR_STRINGS),
                                     .failed = fq_store_int64(res, row, S_ERR_STRINGS + 1),
                                     .dead = fq_store_int64(res, row, S_ERR_STRINGS + 2)};
    }
    summary->rows = rows;
    summary->count = n;
    return (int)n;
}

int fq_store_error_summary(fq_store_t *self, const fq_message_filter_t *filter,
                           const char *destination, int top, fq_error_summary_t *summary)
{
    const char *what = "summarise errors";
    *summary = (fq_error_summary_t){0};
    if (top < 1 || top > FQ_STORE_PAGE_MAX)
        return fq_store_fail(self, FQ_EINVAL, "could not %s: top %d is not within 1..%d", what, top,
                             FQ_STORE_PAGE_MAX);
    if (destination && !*destination)
        return fq_store_fail(self, FQ_EINVAL, "could not %s: a filter string is empty", what);
    fq_filter_resolved_t resolved;
    unsigned statuses = FQ_STATUS_BIT(FQ_MESSAGE_ANY) | FQ_STATUS_BIT(FQ_MESSAGE_FAILED) |
                        FQ_STATUS_BIT(FQ_MESSAGE_DEAD);
    int rc = fq_store_filter_prepare(self, filter, statuses, false, &resolved, what);
    if (rc)
        return rc;
    fq_statement_t q = {0};
    int top_param = fq_statement_int(&q, top);
    //  min(): one example, the same one each time for the same messages
    fq_statement_sql(&q, "SELECT t.name, e.destination, e.code, e.enhanced, min(e.last_error),"
                         " count(*), count(*) FILTER (WHERE e.status = 'failed'),"
                         " count(*) FILTER (WHERE e.status = 'dead')"
                         " FROM (SELECT m.tenant_id, m.destination, m.status, m.last_error,"
                         "  substring(m.last_error FROM " S_CODE_PATTERN ") AS code,"
                         "  substring(m.last_error FROM " S_ENHANCED_PATTERN ") AS enhanced"
                         "  FROM fairq.messages m WHERE m.status IN ('failed', 'dead')");
    fq_store_filter_where(&q, &resolved);
    if (destination)
        fq_statement_sql_param(&q, " AND m.destination = ", fq_statement_text(&q, destination),
                               "::text");
    fq_statement_sql_param(&q,
                           ") e JOIN fairq.tenants t ON t.id = e.tenant_id"
                           " GROUP BY 1, 2, 3, 4 ORDER BY 6 DESC, 1, 2, 3 NULLS LAST, 4 NULLS LAST"
                           " LIMIT ",
                           top_param, "");
    PGresult *res = fq_statement_run(self, &q, PGRES_TUPLES_OK, what, &rc);
    if (!res)
        return rc;
    rc = s_summary_copy(self, res, summary);
    PQclear(res);
    return rc;
}

void fq_error_summary_free(fq_error_summary_t *summary)
{
    free(summary->rows);
    *summary = (fq_error_summary_t){0};
}
