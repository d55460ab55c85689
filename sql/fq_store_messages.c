/*  fq_store_messages.c — messages: paged for the scheduler, loaded for
    the dispatcher (see fq_store.h; splitting is fq_store_split.c).
*/
#include "fq_store_internal.h"
#include "fq_error.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  ---------------------------------------------------------------------
//  Paging for the scheduler

//  Bitmap scans off for one page (fq_store_tune_paging says why), in the
//  page's own transaction rather than the session's: behind PgBouncer in
//  transaction pooling a SET on the session would stay on whichever
//  server connection ran it, serving other clients, while the next page
//  may run on another. The settings cost no round trip of their own: they
//  go with the page, in one pipeline (fq_store_query_after).
//
//  The page's plan is also the prepared statement's generic one, planned
//  once: the server otherwise kept planning each page anew (a custom plan
//  for the arrays' values), which took longer than running it (under the
//  pipeline benchmark's load, 550 ms of planning against 527 ms of
//  execution for its 7,056 pages, pg_stat_statements). The values change
//  nothing of the plan: each ask's index scan reads the row of the unnest
//  it belongs to, unknown to any plan, and bitmap scans are off in both.
#define S_PAGING_SETUP                                                                             \
    "SELECT set_config('enable_bitmapscan', 'off', true),"                                         \
    " set_config('plan_cache_mode', 'force_generic_plan', true)"

int fq_store_next_ready(fq_store_t *self, int64_t request_id, int64_t after_id, int limit,
                        int64_t *ids)
{
    char id[FQ_STORE_INT_TEXT], after[FQ_STORE_INT_TEXT], count[FQ_STORE_INT_TEXT];
    snprintf(id, sizeof id, "%lld", (long long)request_id);
    snprintf(after, sizeof after, "%lld", (long long)after_id);
    snprintf(count, sizeof count, "%d", limit);
    const char *params[] = {id, after, count};
    const char *sql = "SELECT id FROM fairq.messages WHERE request_id = $1 AND id > $2"
                      " AND status = 'pending' ORDER BY id LIMIT $3";
    int rc;
    PGresult *res = self->paging_tuned
                        ? fq_store_query_after(self, S_PAGING_SETUP, sql, 3, params,
                                               PGRES_TUPLES_OK, "page ready messages", true, &rc)
                        : fq_store_query_prepared(self, sql, 3, params, PGRES_TUPLES_OK,
                                                  "page ready messages", &rc);
    if (!res)
        return rc;
    int n = PQntuples(res);
    for (int i = 0; i < n; i++)
        ids[i] = fq_store_int64(res, i, 0);
    PQclear(res);
    return n;
}

//  The columns of a message row as the dispatcher renders it, from first
//  on (fq_message_row_t's order); read back by s_rows_read.
#define S_ROW_COLUMNS(m)                                                                           \
    m ".id, " m ".request_id, " m ".tenant_id, " m ".recipient, " m ".fields, " m ".try_count, " m \
      ".destination <> 'default', " m ".destination"

static int s_rows_read(PGresult *res, int first, fq_message_rows_t *out);

//  Runs the pages of nasks requests in one statement, each row its ask's
//  ordinality first, then its id alone or (with_rows) S_ROW_COLUMNS. Returns
//  the result, or NULL with *rc set.
static PGresult *s_pages_query(fq_store_t *self, const fq_page_ask_t *asks, int nasks,
                               bool with_rows, int *rc)
{
    int64_t total = 0;
    for (int i = 0; i < nasks; i++)
        total += asks[i].limit > 0 ? asks[i].limit : 0;
    if (nasks > FQ_STORE_PAGE_ASKS_MAX || total > FQ_STORE_PAGE_IDS_MAX) {
        *rc = fq_store_fail(self, FQ_EINVAL, "could not page: %d requests, %lld ids", nasks,
                            (long long)total);
        return NULL;
    }
    for (int i = 1; i < nasks; i++)
        if ((asks[i].destination == NULL) != (asks[0].destination == NULL)) {
            *rc = fq_store_fail(self, FQ_EINVAL,
                                "could not page: some asks name a destination, some do not");
            return NULL;
        }
    bool by_destination = asks[0].destination != NULL;
    fq_buf_t requests = {0}, afters = {0}, limits = {0}, destinations = {0};
    int built = fq_store_id_array(&requests, &asks[0].request_id, (size_t)nasks, sizeof *asks) |
                fq_store_id_array(&afters, &asks[0].after_id, (size_t)nasks, sizeof *asks) |
                fq_buf_add_char(&limits, '{') | fq_buf_add_char(&destinations, '{');
    for (int i = 0; i < nasks && built == 0; i++) {
        built = fq_buf_printf(&limits, i ? ",%d" : "%d", asks[i].limit > 0 ? asks[i].limit : 0);
        if (by_destination && built == 0)
            built =
                fq_buf_add_str(&destinations, i ? "," : "") |
                fq_store_array_text(&destinations, asks[i].destination ? asks[i].destination : "");
    }
    built |= fq_buf_add_char(&limits, '}') | fq_buf_add_char(&destinations, '}');
    if (built) {
        fq_buf_free(&requests);
        fq_buf_free(&afters);
        fq_buf_free(&limits);
        fq_buf_free(&destinations);
        *rc = fq_store_fail(self, FQ_ENOMEM, "out of memory");
        return NULL;
    }
    const char *params[5] = {requests.data, afters.data, limits.data};
    int nparams = 3;
    if (by_destination)
        params[nparams++] = destinations.data;
    //  The rows go out without being loaded again, so a page of rows
    //  checks the leader's epoch as a load does (fq_store_load_with): a
    //  deposed leader pages none
    if (with_rows)
        params[nparams++] = fq_store_fence(self);
        //  Each ask walks messages_request_destination_idx (or, for all of a
        //  request's messages, messages_request_idx) from its cursor, as a
        //  single page does; the ordinality keeps the pages apart and in order.
        //  By destination, a throttled destination's backlog is never read to
        //  reach another's messages. The rows' other columns come from the
        //  heap tuple each id's status is read from anyway.
#define S_PAGE_BY_DESTINATION(columns, inner, where)                                               \
    "SELECT q.ord, " columns                                                                       \
    " FROM unnest($1::bigint[], $2::bigint[], $3::int[], $4::text[]) WITH ORDINALITY"              \
    "      AS q(request_id, after_id, lim, destination, ord)"                                      \
    " CROSS JOIN LATERAL (SELECT " inner " FROM fairq.messages"                                    \
    "   WHERE request_id = q.request_id AND destination = q.destination"                           \
    "   AND id > q.after_id AND status = 'pending' ORDER BY id LIMIT q.lim) m" where               \
    " ORDER BY q.ord, m.id"
#define S_PAGE_ALL(columns, inner, where)                                                          \
    "SELECT q.ord, " columns " FROM unnest($1::bigint[], $2::bigint[], $3::int[]) WITH ORDINALITY" \
    "      AS q(request_id, after_id, lim, ord)"                                                   \
    " CROSS JOIN LATERAL (SELECT " inner " FROM fairq.messages"                                    \
    "   WHERE request_id = q.request_id AND id > q.after_id"                                       \
    "   AND status = 'pending' ORDER BY id LIMIT q.lim) m" where " ORDER BY q.ord, m.id"
#define S_INNER_ROW "id, request_id, tenant_id, recipient, fields, try_count, destination"
    const char *sql =
        by_destination
            ? (with_rows ? S_PAGE_BY_DESTINATION(S_ROW_COLUMNS("m"), S_INNER_ROW,
                                                 " WHERE (SELECT fairq.check_epoch($5::bigint))")
                         : S_PAGE_BY_DESTINATION("m.id", "id", ""))
            : (with_rows ? S_PAGE_ALL(S_ROW_COLUMNS("m"), S_INNER_ROW,
                                      " WHERE (SELECT fairq.check_epoch($4::bigint))")
                         : S_PAGE_ALL("m.id", "id", ""));
#undef S_INNER_ROW
#undef S_PAGE_BY_DESTINATION
#undef S_PAGE_ALL
    PGresult *res = self->paging_tuned
                        ? fq_store_query_after(self, S_PAGING_SETUP, sql, nparams, params,
                                               PGRES_TUPLES_OK, "page ready messages", true, rc)
                        : fq_store_query_prepared(self, sql, nparams, params, PGRES_TUPLES_OK,
                                                  "page ready messages", rc);
    fq_buf_free(&requests);
    fq_buf_free(&afters);
    fq_buf_free(&limits);
    fq_buf_free(&destinations);
    return res;
}

//  Counts the rows of res per ask, by the ordinality in its column 0.
static void s_page_counts(PGresult *res, int nasks, int *counts)
{
    memset(counts, 0, (size_t)nasks * sizeof *counts);
    int n = PQntuples(res);
    for (int i = 0; i < n; i++) {
        int64_t ord = fq_store_int64(res, i, 0);
        if (ord >= 1 && ord <= nasks)
            counts[ord - 1]++;
    }
}

int fq_store_next_ready_many(fq_store_t *self, const fq_page_ask_t *asks, int nasks, int64_t *ids,
                             int *counts)
{
    if (nasks <= 0)
        return 0;
    int rc;
    PGresult *res = s_pages_query(self, asks, nasks, false, &rc);
    if (!res)
        return rc;
    s_page_counts(res, nasks, counts);
    int n = PQntuples(res);
    for (int i = 0; i < n; i++)
        ids[i] = fq_store_int64(res, i, 1);
    PQclear(res);
    return n;
}

int fq_store_next_ready_rows(fq_store_t *self, const fq_page_ask_t *asks, int nasks,
                             fq_message_rows_t *out, int *counts)
{
    *out = (fq_message_rows_t){0};
    if (nasks <= 0)
        return 0;
    int rc;
    PGresult *res = s_pages_query(self, asks, nasks, true, &rc);
    if (!res)
        return rc;
    s_page_counts(res, nasks, counts);
    int n = s_rows_read(res, 1, out);
    PQclear(res);
    return n < 0 ? fq_store_fail(self, FQ_ENOMEM, "out of memory") : n;
}

int fq_store_claim_due_retries(fq_store_t *self, int limit, int lease_s, fq_due_message_t *out)
{
    char count[FQ_STORE_INT_TEXT], lease[FQ_STORE_INT_TEXT];
    snprintf(count, sizeof count, "%d", limit);
    snprintf(lease, sizeof lease, "%d", lease_s);
    const char *params[] = {count, lease, fq_store_fence(self)};
    int rc;
    PGresult *res = fq_store_query(
        self,
        "UPDATE fairq.messages m SET next_attempt_at = now() + make_interval(secs => $2::int),"
        " claimed_epoch = $3::bigint"
        " FROM (SELECT id FROM fairq.messages WHERE next_attempt_at <= now()"
        "       AND status = 'failed'"
        //  A paused or cancelled request's retries wait where they are
        "       AND EXISTS (SELECT 1 FROM fairq.requests r WHERE r.id = request_id"
        "                   AND r.status IN ('splitting', 'active'))"
        //  A held one too (0024): claimed, it would wait out its lease in
        //  the scheduler's memory and come due again at the lease's end
        "       AND NOT fairq.held(tenant_id, destination)"
        "       ORDER BY next_attempt_at LIMIT $1"
        "       FOR UPDATE SKIP LOCKED) due"
        " WHERE m.id = due.id AND (SELECT fairq.fence($3::bigint))"
        " RETURNING m.id, m.request_id, m.tenant_id,"
        "  (SELECT r.channel FROM fairq.requests r WHERE r.id = m.request_id), m.destination",
        3, params, PGRES_TUPLES_OK, "claim due retries", &rc);
    if (!res)
        return rc;
    int n = PQntuples(res);
    for (int i = 0; i < n; i++) {
        out[i] = (fq_due_message_t){fq_store_int64(res, i, 0), fq_store_int64(res, i, 1),
                                    fq_store_int64(res, i, 2), "", ""};
        snprintf(out[i].channel, sizeof out[i].channel, "%s", PQgetvalue(res, i, 3));
        snprintf(out[i].destination, sizeof out[i].destination, "%s", PQgetvalue(res, i, 4));
    }
    PQclear(res);
    return n;
}

int fq_store_release_stale_claims(fq_store_t *self)
{
    const char *params[] = {fq_store_fence(self)};
    if (!params[0])
        return 0; //  No leadership: no earlier leader's claims
    int rc;
    PGresult *res = fq_store_query(
        self,
        "WITH released AS (UPDATE fairq.messages SET next_attempt_at = now(), claimed_epoch = NULL"
        "  WHERE claimed_epoch IS NOT NULL AND claimed_epoch < $1::bigint AND status = 'failed'"
        "  AND (SELECT fairq.fence($1::bigint)) RETURNING 1)"
        " SELECT count(*) FROM released",
        1, params, PGRES_TUPLES_OK, "release an earlier leader's claims", &rc);
    if (!res)
        return rc;
    int released = (int)fq_store_int64(res, 0, 0);
    PQclear(res);
    return released;
}

//  Whether request r has no recipients left to split.
#define S_SPLIT_WHOLE                                                                              \
    "NOT EXISTS (SELECT 1 FROM fairq.recipient_chunks c WHERE c.request_id = r.id)"

//  The columns of a due request, and the rows they come from.
#define S_DUE_COLUMNS                                                                              \
    "SELECT r.id, r.tenant_id, r.priority, r.scan_from, " S_SPLIT_WHOLE ","                        \
    " t.weight, t.max_inflight, r.total, t.name, r.channel, r.split > 0,"                          \
    " coalesce(t.send_rate_count, 0), coalesce(t.send_rate_period_s, 0),"                          \
    " coalesce(t.daily_quota, 0), r.split, r.split_at_submit"
#define S_DUE_FROM                                                                                 \
    " FROM fairq.requests r JOIN fairq.tenants t ON t.id = r.tenant_id"                            \
    " WHERE r.status IN " FQ_STORE_UNFINISHED " AND r.status <> 'paused' AND r.send_at <= now()"
#define S_DUE_SELECT S_DUE_COLUMNS S_DUE_FROM

//  The pending messages of request $1 when it has 1 to $2 rows, as
//  "destination id" pairs, comma-separated, in the order of
//  messages_request_destination_idx (0016); NULL for another. Whether it
//  is split whole is the row's own column (S_SPLIT_WHOLE), read by the
//  caller. The order
//  and the limit make that index the plan: with the request's id taken
//  from r (a parameter of a subplan), and the statistics of a table that
//  COPY had grown tenfold since its last ANALYZE, the planner walked
//  messages_pkey from the first message instead, 40 ms under load. Every
//  pending message is after the request's cursor (scan_from: those before
//  it are final).
#define S_DUE_MESSAGES                                                                             \
    "(SELECT string_agg(p.destination || ' ' || p.id, ',' ORDER BY p.destination, p.id)"           \
    " FROM (SELECT m.destination, m.id FROM fairq.messages m"                                      \
    "       WHERE m.request_id = $1 AND m.status = 'pending'"                                      \
    "       ORDER BY m.destination, m.id LIMIT $2::int + 1) p"                                     \
    " WHERE r.split BETWEEN 1 AND $2::int)"

static int s_due_rows(PGresult *res, fq_due_request_t *out)
{
    int n = PQntuples(res);
    for (int i = 0; i < n; i++) {
        out[i] = (fq_due_request_t){.id = fq_store_int64(res, i, 0),
                                    .tenant_id = fq_store_int64(res, i, 1),
                                    .priority = (int)fq_store_int64(res, i, 2),
                                    .scan_from = fq_store_int64(res, i, 3),
                                    .split_done = PQgetvalue(res, i, 4)[0] == 't',
                                    .weight = (int)fq_store_int64(res, i, 5),
                                    .max_inflight = (int)fq_store_int64(res, i, 6),
                                    .total = fq_store_int64(res, i, 7)};
        snprintf(out[i].tenant, sizeof out[i].tenant, "%s", PQgetvalue(res, i, 8));
        snprintf(out[i].channel, sizeof out[i].channel, "%s", PQgetvalue(res, i, 9));
        out[i].any_split = PQgetvalue(res, i, 10)[0] == 't';
        out[i].send_rate_count = fq_store_int64(res, i, 11);
        out[i].send_rate_period_s = (int)fq_store_int64(res, i, 12);
        out[i].daily_quota = fq_store_int64(res, i, 13);
        out[i].split = fq_store_int64(res, i, 14);
        out[i].split_at_submit = PQgetvalue(res, i, 15)[0] == 't';
    }
    PQclear(res);
    return n;
}

int fq_store_due_requests(fq_store_t *self, int limit, fq_due_request_t *out)
{
    char count[FQ_STORE_INT_TEXT];
    snprintf(count, sizeof count, "%d", limit);
    const char *params[] = {count};
    int rc;
    //  The IN list repeats the predicate of requests_open_idx word for word,
    //  so the planner can use that partial index; paused is then left out
    PGresult *res = fq_store_query(self, S_DUE_SELECT " ORDER BY r.send_at, r.id LIMIT $1", 1,
                                   params, PGRES_TUPLES_OK, "find due requests", &rc);
    return res ? s_due_rows(res, out) : rc;
}

int fq_store_due_requests_since(fq_store_t *self, int64_t since_ms, int limit,
                                fq_due_request_t *out)
{
    char window[FQ_STORE_INT_TEXT], count[FQ_STORE_INT_TEXT];
    snprintf(window, sizeof window, "%lld", (long long)since_ms);
    snprintf(count, sizeof count, "%d", limit);
    const char *params[] = {window, count};
    int rc;
    //  A range of requests_open_idx (send_at), whatever the open requests;
    //  only those scheduled for later than their submit: the others had
    //  their NOTIFY
    PGresult *res = fq_store_query(
        self,
        S_DUE_SELECT " AND r.send_at > now() - make_interval(secs => $1::bigint / 1000.0)"
                     " AND r.send_at > r.created_at"
                     " ORDER BY r.send_at, r.id LIMIT $2",
        2, params, PGRES_TUPLES_OK, "find requests come due", &rc);
    return res ? s_due_rows(res, out) : rc;
}

//  Reads the "destination id" pairs of S_DUE_MESSAGES (text) into
//  messages, at most max ids. Anything else leaves it empty: the
//  scheduler then pages the request. Returns 0, or -1 when memory ran out.
static int s_due_messages_read(const char *text, int max, fq_due_messages_t *messages)
{
    messages->nids = messages->ndestinations = 0;
    messages->destinations.size = 0;
    int mem = 0;
    const char *at = text, *last = NULL;
    size_t last_size = 0;
    while (*at && mem == 0) {
        size_t name_size = strcspn(at, " ,");
        char *end = (char *)at;
        long long id = at[name_size] == ' ' ? strtoll(at + name_size + 1, &end, 10) : 0;
        if (name_size == 0 || name_size >= FQ_STORE_DESTINATION_SIZE || id <= 0 ||
            (*end && *end != ',') || messages->nids == max)
            break;
        bool same = last && name_size == last_size && memcmp(at, last, name_size) == 0;
        if (same && id <= messages->ids[messages->nids - 1])
            break; //  Not ascending: not as asked
        if (!same) {
            mem = (messages->ndestinations ? fq_buf_add_char(&messages->destinations, ',') : 0) |
                  fq_buf_add(&messages->destinations, at, name_size);
            messages->id_counts[messages->ndestinations++] = 0;
            last = at;
            last_size = name_size;
        }
        messages->ids[messages->nids++] = id;
        messages->id_counts[messages->ndestinations - 1]++;
        at = end + (*end == ',');
    }
    if (mem || *at) {
        messages->nids = messages->ndestinations = 0;
        messages->destinations.size = 0;
    }
    return mem ? -1 : 0;
}

int fq_store_due_request(fq_store_t *self, int64_t request_id, int max, fq_due_request_t *out,
                         fq_due_messages_t *messages)
{
    if (!messages || max < 0)
        max = 0;
    if (max > FQ_STORE_SPLIT_IDS_MAX)
        max = FQ_STORE_SPLIT_IDS_MAX;
    char id[FQ_STORE_INT_TEXT], most[FQ_STORE_INT_TEXT];
    snprintf(id, sizeof id, "%lld", (long long)request_id);
    snprintf(most, sizeof most, "%d", max);
    const char *params[] = {id, most};
    int rc;
    PGresult *res =
        fq_store_query(self, S_DUE_COLUMNS ", " S_DUE_MESSAGES S_DUE_FROM " AND r.id = $1", 2,
                       params, PGRES_TUPLES_OK, "find a due request", &rc);
    if (!res)
        return rc;
    //  Column 4 is S_SPLIT_WHOLE: a request with chunks left (its first
    //  chunk's recipients mostly rejected) is paged as it is split
    if (messages) {
        messages->nids = messages->ndestinations = 0;
        if (PQntuples(res) == 1 && !PQgetisnull(res, 0, 16) && PQgetvalue(res, 0, 4)[0] == 't' &&
            s_due_messages_read(PQgetvalue(res, 0, 16), max, messages) != 0) {
            PQclear(res);
            return fq_store_fail(self, FQ_ENOMEM, "out of memory");
        }
    }
    return s_due_rows(res, out);
}

int fq_store_tune_paging(fq_store_t *self)
{
    self->paging_tuned = true;
    return 0;
}

//  ---------------------------------------------------------------------
//  Loading for the dispatcher

int fq_store_load_messages(fq_store_t *self, const int64_t *ids, size_t count,
                           fq_message_rows_t *out)
{
    return fq_store_load_with(self, ids, count, NULL, out);
}

int fq_store_load_with(fq_store_t *self, const int64_t *ids, size_t count, fq_templates_ask_t *ask,
                       fq_message_rows_t *out)
{
    *out = (fq_message_rows_t){0};
    if (ask)
        ask->loaded = 0;
    bool templates = ask && ask->count;
    if (count == 0 && !templates)
        return 0;
    if (count > FQ_STORE_LOAD_MAX)
        return fq_store_fail(self, FQ_EINVAL, "could not load messages: %zu ids (at most %d)",
                             count, FQ_STORE_LOAD_MAX);
    fq_buf_t array = {0}, requests = {0};
    const char *request_param;
    fq_store_step_t steps[2];
    //  The messages' step first, when there are messages to load
    size_t nsteps = count ? 1 : 0, templates_step = nsteps;
    int rc = count && fq_store_id_array(&array, ids, count, sizeof *ids)
                 ? fq_store_fail(self, FQ_ENOMEM, "out of memory")
                 : 0;
    if (rc == 0 && templates)
        rc = fq_store_templates_step(self, ask->ids, ask->count, &requests, &request_param,
                                     &steps[nsteps++]);
    if (rc) {
        fq_buf_free(&array);
        fq_buf_free(&requests);
        return rc;
    }
    //  Loading is how the leader hands messages out, so it checks its epoch
    //  too (without the fence's lock: migration 0009 says why): once a
    //  standby has taken over, a deposed leader (woken from SIGSTOP, say)
    //  cannot load, so cannot send, anything more than what it had loaded
    //  or paged before (the scheduler's rows of the last half second,
    //  actors/fq_row_cache.h), whatever its own clock says
    const char *params[] = {array.data, fq_store_fence(self)};
    if (count)
        steps[0] = (fq_store_step_t){
            .sql =
                "SELECT " S_ROW_COLUMNS("m") " FROM fairq.messages m"
                                             " WHERE m.id = ANY($1::bigint[])"
                                             //  A cancel makes its messages 'cancelled' in the same
                                             //  transaction, so a pick of a request cancelled since
                                             //  it was paged is not handed out. A pause or a later
                                             //  send_at takes effect at the scheduler's next poll
                                             //  instead (milliseconds after its NOTIFY), not here:
                                             //  checking the request of every row cost a third of
                                             //  the pipeline's throughput, as the rows of open
                                             //  requests are rewritten by every ack batch
                                             //  (fq_bench_pipeline: 28,400 msgs/s without the
                                             //  check, 18,500 with it, on one machine in one hour).
                                             " AND m.status IN ('pending', 'failed')"
                                             " AND (SELECT fairq.check_epoch($2::bigint))",
            .nparams = 2,
            .params = params,
            .wanted = PGRES_TUPLES_OK,
            .what = "load messages",
            .keep = true,
            .prepare = true};
    rc = fq_store_pipeline(self, steps, nsteps);
    fq_buf_free(&array);
    fq_buf_free(&requests);
    if (rc)
        return rc;
    if (templates) {
        int loaded = fq_store_templates_read(self, steps[templates_step].res, ask->out);
        if (loaded < 0) {
            if (count)
                PQclear(steps[0].res);
            return loaded;
        }
        ask->loaded = loaded;
    }
    if (!count)
        return 0;
    PGresult *res = steps[0].res;
    int n = s_rows_read(res, 0, out);
    PQclear(res);
    return n < 0 ? fq_store_fail(self, FQ_ENOMEM, "out of memory") : n;
}

//  Reads res's rows, S_ROW_COLUMNS from column first on, into out as one
//  block: the rows, then their strings. Returns how many, or -1 when
//  memory ran out.
static int s_rows_read(PGresult *res, int first, fq_message_rows_t *out)
{
    *out = (fq_message_rows_t){0};
    int n = PQntuples(res);
    size_t strings = 0;
    for (int i = 0; i < n; i++)
        strings += (size_t)PQgetlength(res, i, first + 3) + 1 +
                   (size_t)PQgetlength(res, i, first + 4) + 1 +
                   (size_t)PQgetlength(res, i, first + 7) + 1;
    char *block = malloc(sizeof(fq_message_row_t) * (size_t)n + strings + 1);
    if (!block)
        return -1;
    fq_message_row_t *rows = (fq_message_row_t *)block;
    char *text = block + sizeof(fq_message_row_t) * (size_t)n;
    for (int i = 0; i < n; i++) {
        rows[i] = (fq_message_row_t){.id = fq_store_int64(res, i, first),
                                     .request_id = fq_store_int64(res, i, first + 1),
                                     .tenant_id = fq_store_int64(res, i, first + 2),
                                     .try_count = (int)fq_store_int64(res, i, first + 5),
                                     .named_destination = PQgetvalue(res, i, first + 6)[0] == 't'};
        const char **strings_of[] = {&rows[i].recipient, &rows[i].fields, &rows[i].destination};
        const int columns[] = {first + 3, first + 4, first + 7};
        for (int k = 0; k < 3; k++) {
            size_t len = (size_t)PQgetlength(res, i, columns[k]);
            memcpy(text, PQgetvalue(res, i, columns[k]), len + 1);
            *strings_of[k] = text;
            text += len + 1;
        }
    }
    *out = (fq_message_rows_t){rows, (size_t)n};
    return n;
}

void fq_message_rows_free(fq_message_rows_t *rows)
{
    free(rows->rows);
    *rows = (fq_message_rows_t){0};
}
