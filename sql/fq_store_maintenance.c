/*  fq_store_maintenance.c — the store's background jobs: finishing
    requests, moving the scheduler's scan cursors, keeping the planner's
    statistics current and pruning finished history (see fq_store.h).

    Each call is bounded by its limit, so a job never holds many locks or
    writes much WAL at once, and skips rows someone else holds rather than
    waiting for them: the acks come first. Pruning locks the requests
    first, then their messages, as a retry of dead messages does
    (fq_store_operator.c), so the two cannot deadlock. They are the
    leader's work: each passes the fence of its epoch (fq_store_set_epoch).
*/
#include "fq_store_internal.h"
#include "fq_error.h"
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

//  Requests one prune call takes on: enough to fill a batch when requests
//  are small, few enough that the call locks little.
#define S_PRUNE_REQUESTS 100

//  An idempotency key answers the same request for at least a day (api/
//  API.md), whatever retention_s says: a client retrying a submit after a
//  long outage must not send the campaign twice.
#define S_IDEMPOTENCY_KEPT "interval '1 day'"

//  ---------------------------------------------------------------------
//  Finishing

//  Unfinished requests come from requests_open_idx, finished ones without
//  a finished_at from requests_finished_idx (NULLs are in it): neither
//  scan grows with history. Rows an ack holds are skipped, not waited for.
static const char *const S_FINISH_SQL =
    "WITH due AS (SELECT r.id FROM fairq.requests r WHERE r.status IN " FQ_STORE_UNFINISHED
    "  AND r.sent + r.dead + r.cancelled + r.rejected >= r.total"
    "  AND NOT EXISTS (SELECT 1 FROM fairq.recipient_chunks c WHERE c.request_id = r.id)"
    "  ORDER BY r.id LIMIT $1 FOR UPDATE OF r SKIP LOCKED),"
    " done AS (UPDATE fairq.requests r SET status = 'done', finished_at = now(),"
    "   updated_at = now() FROM due WHERE r.id = due.id"
    "   RETURNING r.id, r.tenant_id, r.webhook_id),"
    //  A webhook's batch reports nothing (0020)
    " evented AS (INSERT INTO fairq.event_rows (tenant_id, request_id, type)"
    "  SELECT tenant_id, id, 'request.done' FROM done WHERE webhook_id IS NULL),"
    " stamped AS (UPDATE fairq.requests r SET finished_at = r.updated_at"
    "  FROM (SELECT id FROM fairq.requests WHERE status IN " FQ_STORE_FINISHED
    "        AND finished_at IS NULL ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED) s"
    "  WHERE r.id = s.id RETURNING r.id)"
    " SELECT (SELECT count(*) FROM done), (SELECT count(*) FROM stamped),"
    "  (SELECT fairq.fence($2::bigint))";

int fq_store_finish_requests(fq_store_t *self, int limit)
{
    if (limit < 1 || limit > FQ_STORE_PAGE_MAX)
        return fq_store_fail(self, FQ_EINVAL,
                             "could not finish requests: limit %d is not within "
                             "1..%d",
                             limit, FQ_STORE_PAGE_MAX);
    char count[FQ_STORE_INT_TEXT];
    snprintf(count, sizeof count, "%d", limit);
    const char *params[] = {count, fq_store_fence(self)};
    int rc;
    PGresult *res =
        fq_store_query(self, S_FINISH_SQL, 2, params, PGRES_TUPLES_OK, "finish requests", &rc);
    if (!res)
        return rc;
    int done = (int)fq_store_int64(res, 0, 0);
    PQclear(res);
    return done;
}

//  ---------------------------------------------------------------------
//  The scheduler's cursors and the planner's statistics

//  For each open request after $4 (at most $1 of them, in id order), the
//  first message after scan_from that is not final (an index scan along
//  messages_request_idx that stops there, so its cost is the messages
//  finished since the last call), and scan_from moves to just before it; at
//  most window ($2) messages are read per request. Only then are the rows
//  to change locked, in id order and skipping locked ones: an ack batch
//  updates the counters of many requests at once, in no set order, and a
//  statement that held those locks while reading messages stalled the acks
//  (measured: 20% of the database's time) or deadlocked with them. A
//  request skipped now moves on the next call. If all window messages read
//  are final, scan_from moves past the last. Answers how many moved, how
//  many were looked at and the last of them (the next call's $4).
//
//  Fix: "only then" is the aggregate's (a), which takes every row of s
//  before it answers. Without it the planner locked each request as soon
//  as its own reading was done, in a nested loop, and held it while it
//  read the next ones': up to a window of 10,000 messages for each of a
//  campaign's requests. Every ack batch, which touches a hundred of them,
//  then waited for the whole statement; in the pipeline benchmark (fsync
//  on) dispatch stood still for 1.7 s, and two new tenants' requests with
//  it.
static const char *const S_ADVANCE_SCAN_SQL =
    "WITH s AS MATERIALIZED (SELECT o.id, coalesce("
    "         (SELECT w.id - 1 FROM (SELECT m.id, m.status FROM fairq.messages m"
    "                  WHERE m.request_id = o.id AND m.id > o.scan_from"
    "                  ORDER BY m.id LIMIT $2) w"
    "           WHERE w.status IN ('pending', 'failed') ORDER BY w.id LIMIT 1),"
    "         (SELECT max(w.id) FROM (SELECT m.id FROM fairq.messages m"
    "                  WHERE m.request_id = o.id AND m.id > o.scan_from"
    "                  ORDER BY m.id LIMIT $2) w)) AS next_from"
    "       FROM fairq.requests o"
    "       WHERE o.status IN " FQ_STORE_UNFINISHED " AND o.id > $4::bigint"
    "       ORDER BY o.id LIMIT $1),"
    " a AS (SELECT array_agg(s.id) AS ids, array_agg(s.next_from) AS nexts FROM s),"
    " l AS (SELECT r.id, v.next_from"
    "       FROM a CROSS JOIN LATERAL unnest(a.ids, a.nexts) AS v(id, next_from)"
    "       JOIN fairq.requests r ON r.id = v.id"
    "       WHERE v.next_from > r.scan_from ORDER BY r.id FOR UPDATE OF r SKIP LOCKED),"
    " moved AS (UPDATE fairq.requests r SET scan_from = l.next_from"
    "  FROM l WHERE r.id = l.id AND (SELECT fairq.fence($3::bigint)) RETURNING r.id)"
    " SELECT (SELECT count(*) FROM moved), (SELECT count(*) FROM s),"
    "  (SELECT coalesce(max(id), 0) FROM s)";

int fq_store_refresh_stats(fq_store_t *self)
{
    char floor[FQ_STORE_INT_TEXT];
    snprintf(floor, sizeof floor, "%d", FQ_STORE_ANALYZE_MIN_ROWS);
    const char *params[] = {floor};
    int rc;
    PGresult *res =
        fq_store_query(self,
                       //  Rows, not changes: every ack changes a row, and
                       //  counting them analyzed a growing table about
                       //  every second under load (a tenth of a core)
                       "SELECT s.n_live_tup > greatest(2 * c.reltuples, $1::bigint)"
                       " FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid"
                       " WHERE s.relid = 'fairq.messages'::regclass",
                       1, params, PGRES_TUPLES_OK, "read the statistics of messages", &rc);
    if (!res)
        return rc;
    bool stale = PQntuples(res) == 1 && PQgetvalue(res, 0, 0)[0] == 't';
    PQclear(res);
    if (!stale)
        return 0;
    rc = fq_store_exec(
        self, "ANALYZE fairq.messages (id, request_id, tenant_id, status, next_attempt_at)",
        "analyze messages");
    return rc ? rc : 1;
}

int fq_store_advance_scan(fq_store_t *self, int64_t after_id, int limit, int window,
                          fq_advance_t *out)
{
    if (limit < 1 || limit > FQ_STORE_PAGE_MAX || window < 1)
        return fq_store_fail(self, FQ_EINVAL, "limit must be 1 to %d and window at least 1",
                             FQ_STORE_PAGE_MAX);
    char limit_text[FQ_STORE_INT_TEXT], window_text[FQ_STORE_INT_TEXT], after[FQ_STORE_INT_TEXT];
    snprintf(limit_text, sizeof limit_text, "%d", limit);
    snprintf(window_text, sizeof window_text, "%d", window);
    snprintf(after, sizeof after, "%lld", (long long)(after_id > 0 ? after_id : 0));
    const char *params[] = {limit_text, window_text, fq_store_fence(self), after};
    int rc;
    PGresult *res = fq_store_query(self, S_ADVANCE_SCAN_SQL, 4, params, PGRES_TUPLES_OK,
                                   "advance scan cursors", &rc);
    if (!res)
        return rc;
    *out = (fq_advance_t){.moved = (int)fq_store_int64(res, 0, 0),
                          .looked = (int)fq_store_int64(res, 0, 1),
                          .last_id = fq_store_int64(res, 0, 2)};
    PQclear(res);
    return out->moved;
}

//  ---------------------------------------------------------------------
//  Pruning

//  Runs one prune step on the requests in ids (an array literal, $1),
//  with limit as $2 unless negative: a statement answering a count.
//  Returns it or a negative code.
static int64_t s_prune_step(fq_store_t *self, const char *sql, const char *ids, int64_t limit,
                            const char *what)
{
    char count[FQ_STORE_INT_TEXT];
    snprintf(count, sizeof count, "%lld", (long long)limit);
    const char *params[] = {ids, count};
    int rc;
    PGresult *res =
        fq_store_query(self, sql, limit >= 0 ? 2 : 1, params, PGRES_TUPLES_OK, what, &rc);
    if (!res)
        return rc;
    int64_t n = PQntuples(res) == 1 ? fq_store_int64(res, 0, 0) : 0;
    PQclear(res);
    return n;
}

int fq_store_prune(fq_store_t *self, int retention_s, int batch, fq_prune_result_t *result)
{
    *result = (fq_prune_result_t){0};
    if (retention_s < 0)
        return fq_store_fail(self, FQ_EINVAL, "could not prune: retention is negative");
    if (batch < 1 || batch > FQ_STORE_PRUNE_BATCH_MAX)
        return fq_store_fail(self, FQ_EINVAL, "could not prune: batch %d is not within 1..%d",
                             batch, FQ_STORE_PRUNE_BATCH_MAX);
    char retention[FQ_STORE_INT_TEXT], requests[FQ_STORE_INT_TEXT];
    snprintf(retention, sizeof retention, "%d", retention_s);
    snprintf(requests, sizeof requests, "%d", S_PRUNE_REQUESTS);
    const char *params[] = {retention, requests};
    int rc = fq_store_exec(self, "BEGIN", "begin prune");
    if (rc == 0)
        rc = fq_store_fence_transaction(self);
    //  The oldest expired requests, locked and marked: from now on nothing
    //  reopens them (fq_store_retry_dead skips requests being pruned)
    PGresult *res = NULL;
    if (rc == 0)
        res = fq_store_query(
            self,
            "WITH expired AS MATERIALIZED (SELECT id, pruning_since FROM fairq.requests"
            "  WHERE status IN " FQ_STORE_FINISHED
            "  AND finished_at < now() - make_interval(secs => $1::int)"
            "  AND (idempotency_key IS NULL OR created_at < now() - " S_IDEMPOTENCY_KEPT ")"
            "  ORDER BY finished_at, id LIMIT $2 FOR UPDATE SKIP LOCKED),"
            " marked AS (UPDATE fairq.requests r SET pruning_since = now() FROM expired e"
            "  WHERE r.id = e.id AND e.pruning_since IS NULL)"
            " SELECT count(*), coalesce(array_agg(id), '{}') FROM expired",
            2, params, PGRES_TUPLES_OK, "find expired requests", &rc);
    int64_t expired = res ? fq_store_int64(res, 0, 0) : 0;
    const char *ids = res ? PQgetvalue(res, 0, 1) : NULL;
    int64_t left = batch, n = 0;
    if (rc == 0 && expired) {
        n = s_prune_step(self,
                         "WITH gone AS (DELETE FROM fairq.messages WHERE id IN"
                         "  (SELECT m.id FROM fairq.messages m"
                         "   WHERE m.request_id = ANY ($1::bigint[]) LIMIT $2) RETURNING 1)"
                         " SELECT count(*) FROM gone",
                         ids, left, "prune messages");
        result->messages = (int)(n > 0 ? n : 0);
        left -= result->messages;
    }
    if (n >= 0 && expired && left > 0) {
        n = s_prune_step(self,
                         "WITH gone AS (DELETE FROM fairq.rejects j USING"
                         "  (SELECT request_id, position FROM fairq.rejects"
                         "   WHERE request_id = ANY ($1::bigint[]) LIMIT $2) x"
                         "  WHERE j.request_id = x.request_id AND j.position = x.position"
                         "  RETURNING 1) SELECT count(*) FROM gone",
                         ids, left, "prune rejects");
        result->rejects = (int)(n > 0 ? n : 0);
    }
    //  Chunks go by cascade; a finished request has none left, normally
    if (n >= 0 && expired) {
        n = s_prune_step(
            self,
            "WITH gone AS (DELETE FROM fairq.requests r"
            "  WHERE r.id = ANY ($1::bigint[])"
            "  AND NOT EXISTS (SELECT 1 FROM fairq.messages m WHERE m.request_id = r.id)"
            "  AND NOT EXISTS (SELECT 1 FROM fairq.rejects j WHERE j.request_id = r.id)"
            "  RETURNING 1) SELECT count(*) FROM gone",
            ids, -1, "prune requests");
        result->requests = (int)(n > 0 ? n : 0);
    }
    PQclear(res);
    if (rc == 0 && n < 0)
        rc = (int)n;
    if (rc == 0)
        rc = fq_store_exec(self, "COMMIT", "commit prune");
    if (rc) {
        fq_store_rollback(self);
        *result = (fq_prune_result_t){0};
        return rc;
    }
    result->more = expired == S_PRUNE_REQUESTS || result->requests < expired;
    return 0;
}

//  The oldest rows first (a row may hold many events, 0029), along
//  events_order_idx: events are appended in about the order of their
//  time, so the batch reads the batch oldest rows and no more (a table
//  whose oldest event is young costs one short scan), and deletes those of
//  them past retention.
int fq_store_prune_events(fq_store_t *self, int retention_s, int batch)
{
    if (retention_s < 0 || batch < 1 || batch > FQ_STORE_PRUNE_BATCH_MAX)
        return fq_store_fail(self, FQ_EINVAL,
                             "could not prune events: retention %d or batch %d out of range",
                             retention_s, batch);
    char retention[FQ_STORE_INT_TEXT], limit[FQ_STORE_INT_TEXT];
    snprintf(retention, sizeof retention, "%d", retention_s);
    snprintf(limit, sizeof limit, "%d", batch);
    const char *params[] = {retention, limit};
    int rc;
    PGresult *res = fq_store_query(
        self,
        "WITH oldest AS (SELECT txid, id, at FROM fairq.event_rows ORDER BY txid, id LIMIT $2),"
        " gone AS (DELETE FROM fairq.event_rows e USING oldest o"
        "  WHERE e.txid = o.txid AND e.id = o.id"
        "   AND o.at < now() - make_interval(secs => $1::int) RETURNING 1)"
        " SELECT count(*) FROM gone",
        2, params, PGRES_TUPLES_OK, "prune events", &rc);
    if (!res)
        return rc;
    int n = (int)fq_store_int64(res, 0, 0);
    PQclear(res);
    return n;
}
