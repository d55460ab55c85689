/*  fq_store_bulk.c — changes by filter: cancel, retry of dead messages,
    a new time for failed ones' next attempt (see fq_store.h). Each change
    is made a batch at a time: the ids of the batch messages of lowest id
    past a cursor that the filter and the action select are read with no
    lock, then those messages are changed in one short transaction with
    the request counters and the events, so a change of a million messages
    never holds a lock while it searches, nor for longer than one batch.

    Lock orders, as fq_store_operator.c's head comment says: a cancel or
    a new time locks messages (an ack's order: messages, then their
    request); a retry locks the requests first, then their dead messages,
    as the pruner does, so a request being pruned is never reopened.

    The change locks its messages by id and checks the action's condition
    again on each locked row: one that an ack or a nack changed since the
    batch was read is left out, so a bulk change never undoes a delivery.
*/
#include "fq_store_internal.h"
#include "fq_error.h"
#include <stdlib.h>
#include <string.h>

static const char *const s_action_names[] = {NULL, "cancel", "retry", "reschedule"};
#define S_ACTION_COUNT (sizeof s_action_names / sizeof s_action_names[0])

const char *fq_bulk_action_name(fq_bulk_action_t action)
{
    return (unsigned)action < S_ACTION_COUNT ? s_action_names[action] : NULL;
}

int fq_bulk_action_parse(const char *name, fq_bulk_action_t *action)
{
    for (size_t i = 1; name && i < S_ACTION_COUNT; i++)
        if (strcmp(name, s_action_names[i]) == 0) {
            *action = (fq_bulk_action_t)i;
            return 0;
        }
    return FQ_EINVAL;
}

//  What each action applies to, as a condition on the messages "m", and
//  the statuses a filter may narrow it to.
typedef struct {
    const char *condition;
    unsigned statuses;
    const char *what;
} s_action_t;

static const s_action_t s_actions[] = {
    [FQ_BULK_CANCEL] = {"m.status IN ('pending', 'failed')",
                        FQ_STATUS_BIT(FQ_MESSAGE_ANY) | FQ_STATUS_BIT(FQ_MESSAGE_PENDING) |
                            FQ_STATUS_BIT(FQ_MESSAGE_FAILED),
                        "cancel messages"},
    //  Only an attempt kills a message, so a dead one has try_count > 0 and
    //  becomes failed: the invariant the ack relies on (try_count > 0 on a
    //  message not final means failed) holds, and so does the counter.
    //  Messages of cancelled requests, and of requests being pruned, stay
    //  dead
    [FQ_BULK_RETRY] = {"m.status = 'dead' AND m.try_count > 0"
                       " AND EXISTS (SELECT 1 FROM fairq.requests r WHERE r.id = m.request_id"
                       "  AND r.status NOT IN ('cancelled', 'rejected')"
                       "  AND r.pruning_since IS NULL)",
                       FQ_STATUS_BIT(FQ_MESSAGE_ANY) | FQ_STATUS_BIT(FQ_MESSAGE_DEAD),
                       "retry dead messages"},
    [FQ_BULK_RESCHEDULE] = {"m.status = 'failed'",
                            FQ_STATUS_BIT(FQ_MESSAGE_ANY) | FQ_STATUS_BIT(FQ_MESSAGE_FAILED),
                            "reschedule messages"},
};

//  Appends the messages the action selects past after_id, in id order, at
//  most limit of them (0: all), their rows locked if asked: "SELECT m.id,
//  m.status, m.request_id FROM ...".
static void s_select(fq_statement_t *q, const fq_filter_resolved_t *resolved,
                     const s_action_t *action, int64_t after_id, int limit, bool lock)
{
    fq_statement_sql(q, "SELECT m.id, m.status, m.request_id FROM fairq.messages m WHERE ");
    fq_statement_sql(q, action->condition);
    if (after_id > 0)
        fq_statement_sql_param(q, " AND m.id > ", fq_statement_int(q, after_id), "");
    fq_store_filter_where(q, resolved);
    if (limit > 0)
        fq_statement_sql_param(q, " ORDER BY m.id LIMIT ", fq_statement_int(q, limit), "");
    if (lock)
        fq_statement_sql(q, " FOR UPDATE OF m");
}

//  Appends the messages of ids (a bigint[] literal) that the action still
//  applies to, locked; PostgreSQL checks the condition again on the row it
//  locked, so one an ack changed since it was read is left out.
static void s_select_ids(fq_statement_t *q, const s_action_t *action, const char *ids)
{
    fq_statement_sql_param(q,
                           "SELECT m.id, m.status, m.request_id FROM fairq.messages m"
                           " WHERE m.id = ANY (",
                           fq_statement_text(q, ids), "::bigint[]) AND ");
    fq_statement_sql(q, action->condition);
    fq_statement_sql(q, " ORDER BY m.id FOR UPDATE OF m");
}

//  What a change statement answers: how many it changed.
static int s_run_changed(fq_store_t *self, fq_statement_t *q, const char *what, int64_t *changed)
{
    int rc;
    PGresult *res = fq_statement_run(self, q, PGRES_TUPLES_OK, what, &rc);
    if (!res)
        return rc;
    *changed = fq_store_int64(res, 0, 0);
    PQclear(res);
    return 0;
}

//  The cancel of target (the statement so far ends inside "WITH target AS
//  MATERIALIZED (" with the locked rows), with its counters and events.
static int s_cancel(fq_store_t *self, fq_statement_t *q, int64_t *changed)
{
    //  next_attempt_at goes too: a cancelled message must leave the retry
    //  index, or every claim would step over it
    fq_statement_sql(q, "),"
                        " changed AS (UPDATE fairq.messages m SET status = 'cancelled',"
                        "   next_attempt_at = NULL, updated_at = now()"
                        "  FROM target t WHERE m.id = t.id"
                        "  RETURNING m.id, m.request_id, m.tenant_id, m.recipient,"
                        "   t.status = 'failed' AS was_failed),"
                        //  None for a webhook's batch (0020): a batch reports nothing
                        " evented AS (INSERT INTO fairq.event_rows"
                        "   (tenant_id, request_id, message_id, type, recipient)"
                        "  SELECT c.tenant_id, c.request_id, c.id, 'message.cancelled', c.recipient"
                        "  FROM changed c WHERE NOT EXISTS (SELECT 1 FROM fairq.requests r"
                        "   WHERE r.id = c.request_id AND r.webhook_id IS NOT NULL)),"
                        " counted AS (UPDATE fairq.requests r SET cancelled = r.cancelled + c.n,"
                        "   failed = r.failed - c.failed, updated_at = now()"
                        "  FROM (SELECT request_id, count(*) AS n,"
                        "          count(*) FILTER (WHERE was_failed) AS failed"
                        "        FROM changed GROUP BY request_id) c"
                        "  WHERE r.id = c.request_id RETURNING c.n)"
                        " SELECT coalesce(sum(n), 0) FROM counted");
    return s_run_changed(self, q, s_actions[FQ_BULK_CANCEL].what, changed);
}

int fq_store_cancel_all(fq_store_t *self, const fq_filter_resolved_t *resolved, int64_t *changed)
{
    fq_statement_t q = {0};
    fq_statement_sql(&q, "WITH target AS MATERIALIZED (");
    s_select(&q, resolved, &s_actions[FQ_BULK_CANCEL], 0, 0, true);
    return s_cancel(self, &q, changed);
}

//  The retry of the dead messages of ids, in a transaction of its own:
//  their requests locked first (the pruner's order), then the messages
//  changed.
static int s_retry(fq_store_t *self, const char *ids, int64_t *changed)
{
    const s_action_t *action = &s_actions[FQ_BULK_RETRY];
    int rc = fq_store_exec(self, "BEGIN", "begin retry");
    fq_statement_t q = {0};
    if (rc == 0) {
        int ids_param = fq_statement_text(&q, ids);
        fq_statement_sql_param(
            &q,
            "WITH locked AS (SELECT r.id FROM fairq.requests r"
            "  WHERE r.id IN (SELECT m.request_id FROM fairq.messages m WHERE m.id = ANY (",
            ids_param,
            "::bigint[]))"
            "  AND r.status NOT IN ('cancelled', 'rejected') AND r.pruning_since IS NULL"
            "  ORDER BY r.id FOR UPDATE OF r),"
            " changed AS (UPDATE fairq.messages m SET status = 'failed',"
            "   next_attempt_at = now(), updated_at = now()"
            "  WHERE m.request_id IN (SELECT id FROM locked) AND m.id = ANY (");
        fq_statement_sql_param(&q, "", ids_param, "::bigint[]) AND ");
        fq_statement_sql(&q, action->condition);
        fq_statement_sql(&q, "  RETURNING m.request_id),"
                             " counted AS (UPDATE fairq.requests r SET dead = r.dead - c.n,"
                             "   failed = r.failed + c.n, updated_at = now(),"
                             "   status = CASE WHEN r.status = 'done' THEN 'active'"
                             "    ELSE r.status END,"
                             "   finished_at = CASE WHEN r.status = 'done' THEN NULL"
                             "    ELSE r.finished_at END"
                             "  FROM (SELECT request_id, count(*) AS n FROM changed"
                             "        GROUP BY request_id) c"
                             "  WHERE r.id = c.request_id RETURNING c.n)"
                             " SELECT coalesce(sum(n), 0) FROM counted");
        rc = s_run_changed(self, &q, action->what, changed);
    }
    if (rc == 0)
        rc = fq_store_exec(self, "COMMIT", "commit retry");
    if (rc)
        fq_store_rollback(self);
    return rc;
}

static int s_reschedule(fq_store_t *self, const char *ids, int64_t send_at, int64_t *changed)
{
    const s_action_t *action = &s_actions[FQ_BULK_RESCHEDULE];
    fq_statement_t q = {0};
    fq_statement_sql(&q, "WITH target AS MATERIALIZED (");
    s_select_ids(&q, action, ids);
    //  A retry claimed by a node is released with it (claimed_epoch), as
    //  fq_store_release_claims does: the next claim takes it at the new time
    int time = fq_statement_int(&q, send_at);
    fq_statement_sql_param(&q,
                           "),"
                           " changed AS (UPDATE fairq.messages m SET next_attempt_at ="
                           "   CASE WHEN ",
                           time, "::bigint = 0 THEN now()");
    fq_statement_sql_param(&q, " ELSE to_timestamp(", time, "::bigint) END,");
    fq_statement_sql(&q, "   claimed_epoch = NULL, updated_at = now()"
                         "  FROM target t WHERE m.id = t.id RETURNING 1)"
                         " SELECT count(*) FROM changed");
    return s_run_changed(self, &q, action->what, changed);
}

//  Reads the batch: the ids of at most limit messages past after_id that
//  the action applies to, with no lock, as a bigint[] literal into *ids
//  (the caller frees it), their count and the last of them into out.
static int s_read_batch(fq_store_t *self, const fq_filter_resolved_t *resolved,
                        const s_action_t *action, int64_t after_id, int limit, char **ids,
                        fq_bulk_batch_t *out)
{
    fq_statement_t q = {0};
    fq_statement_sql(&q, "SELECT coalesce(array_agg(id ORDER BY id), '{}'), count(*),"
                         " coalesce(max(id), 0) FROM (");
    s_select(&q, resolved, action, after_id, limit, false);
    fq_statement_sql(&q, ") batch");
    int rc;
    PGresult *res = fq_statement_run(self, &q, PGRES_TUPLES_OK, action->what, &rc);
    if (!res)
        return rc;
    out->matched = fq_store_int64(res, 0, 1);
    out->last_id = out->matched ? fq_store_int64(res, 0, 2) : after_id;
    out->done = out->matched == 0;
    *ids = strdup(PQgetvalue(res, 0, 0));
    PQclear(res);
    return *ids ? 0 : fq_store_fail(self, FQ_ENOMEM, "out of memory");
}

//  How often a batch that lost a deadlock (40P01) or a serialization
//  failure (40001) is tried again: it rolled back whole and its cursor did
//  not move, so trying again is safe. A deadlock can happen when an ack
//  batch and a change share two requests and update them in the other
//  order; PostgreSQL breaks it by failing one of the two.
#define S_TRIES 3

static bool s_try_again(fq_store_t *self)
{
    const char *state = fq_store_error_sqlstate(self);
    return strcmp(state, "40P01") == 0 || strcmp(state, "40001") == 0;
}

static int s_change(fq_store_t *self, const fq_bulk_t *bulk, const char *ids, int64_t *changed)
{
    int rc = 0;
    for (int tries = 0; tries < S_TRIES; tries++) {
        if (bulk->action == FQ_BULK_CANCEL) {
            fq_statement_t q = {0};
            fq_statement_sql(&q, "WITH target AS MATERIALIZED (");
            s_select_ids(&q, &s_actions[FQ_BULK_CANCEL], ids);
            rc = s_cancel(self, &q, changed);
        } else if (bulk->action == FQ_BULK_RETRY)
            rc = s_retry(self, ids, changed);
        else
            rc = s_reschedule(self, ids, bulk->send_at, changed);
        if (rc == 0 || !s_try_again(self))
            break;
    }
    return rc;
}

int fq_store_bulk_batch(fq_store_t *self, const fq_message_filter_t *filter, const fq_bulk_t *bulk,
                        int64_t after_id, fq_bulk_batch_t *out)
{
    *out = (fq_bulk_batch_t){.last_id = after_id};
    if (!bulk || !fq_bulk_action_name(bulk->action))
        return fq_store_fail(self, FQ_EINVAL, "could not run a bulk action: no such action");
    const s_action_t *action = &s_actions[bulk->action];
    if (bulk->batch < 1 || bulk->batch > FQ_STORE_BULK_BATCH_MAX)
        return fq_store_fail(self, FQ_EINVAL, "could not %s: batch %d is not within 1..%d",
                             action->what, bulk->batch, FQ_STORE_BULK_BATCH_MAX);
    if (after_id < 0 || bulk->send_at < 0)
        return fq_store_fail(self, FQ_EINVAL, "could not %s: a cursor or a time is negative",
                             action->what);
    fq_filter_resolved_t resolved;
    int rc = fq_store_filter_prepare(self, filter, action->statuses, true, &resolved, action->what);
    char *ids = NULL;
    if (rc == 0)
        rc = s_read_batch(self, &resolved, action, after_id, bulk->batch, &ids, out);
    if (rc == 0 && !bulk->dry_run && !out->done)
        rc = s_change(self, bulk, ids, &out->changed);
    free(ids);
    if (rc)
        *out = (fq_bulk_batch_t){.last_id = after_id};
    return rc;
}

//  Every batch of action on filter, from the start; the total changed or
//  a negative code (what the batches before changed stays changed).
static int s_all_batches(fq_store_t *self, const fq_message_filter_t *filter,
                         fq_bulk_action_t action)
{
    fq_bulk_t bulk = {.action = action, .batch = FQ_STORE_BULK_BATCH};
    int64_t changed = 0, after = 0;
    for (;;) {
        fq_bulk_batch_t batch;
        int rc = fq_store_bulk_batch(self, filter, &bulk, after, &batch);
        if (rc)
            return rc;
        if (batch.done)
            return (int)changed;
        changed += batch.changed;
        after = batch.last_id;
    }
}

int fq_store_cancel_messages(fq_store_t *self, const fq_message_filter_t *filter)
{
    return s_all_batches(self, filter, FQ_BULK_CANCEL);
}

int fq_store_retry_dead(fq_store_t *self, const fq_message_filter_t *filter)
{
    return s_all_batches(self, filter, FQ_BULK_RETRY);
}
