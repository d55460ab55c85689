/*  fq_store_acks.c — the senders' answers: acks and nacks, in batches
    (see fq_store.h).

    A batch is one statement, so one transaction, all of it or none: it
    changes the messages, the counters of their requests and the events
    that report them (fairq.event_rows, 0018 and 0029) together. Only
    the leader writes outcomes: each batch passes the fence of its epoch
    first (fq_store_set_epoch).
*/
#include "fq_store_internal.h"
#include "fq_error.h"
#include "fq_utf8.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  Fix: a copy of text with each byte that does not start well-formed
//  UTF-8 replaced by '?'; NULL when memory runs out. The server refuses
//  invalid UTF-8 in a parameter, and refused the whole statement with it:
//  one sender's reply in Latin-1 made a nack batch fail on every retry.
static char *s_valid_utf8_copy(const char *text)
{
    char *copy = strdup(text);
    if (copy)
        fq_utf8_replace_invalid(copy, strlen(copy), '?');
    return copy;
}

//  The ack changes only columns no index covers, so it stays a HOT update
//  (no index writes). try_count > 1 after the update means the message had
//  failed before, so the request's failed counter goes down by one.
static const char *const S_ACK_SQL =
    "WITH acked AS ("
    "  UPDATE fairq.messages m SET status = 'sent', try_count = m.try_count + 1,"
    "    last_attempt_at = now(), next_attempt_at = NULL, updated_at = now(),"
    "    claimed_epoch = NULL"
    "  FROM unnest($1::bigint[]) AS a(id)"
    "  WHERE m.id = a.id AND m.status IN ('pending', 'failed') AND (SELECT "
    "fairq.check_epoch($2::bigint))"
    "  RETURNING m.id, m.request_id, m.tenant_id, m.recipient, m.try_count > 1 AS was_failed),"
    " counted AS (UPDATE fairq.requests r SET sent = r.sent + c.n,"
    "    failed = r.failed - c.retried, updated_at = now()"
    "  FROM (SELECT request_id, count(*) AS n, count(*) FILTER (WHERE was_failed) AS retried"
    "        FROM acked GROUP BY request_id) c"
    "  WHERE r.id = c.request_id RETURNING r.id, r.webhook_id, c.n),"
    //  Its events commit with it (0018): never lost, never invented. One
    //  row holds a request's events of the batch, up to a block of them
    //  (0029), in the order of their messages: a campaign's deliveries
    //  cost a row and two index entries a batch, not each. A webhook's
    //  batch reports nothing (0020): the next batch would carry it
    " evented AS (INSERT INTO fairq.event_rows (tenant_id, request_id, type, message_ids,"
    "    recipients)"
    "  SELECT tenant_id, request_id, 'message.sent', array_agg(id ORDER BY id),"
    "    array_agg(recipient ORDER BY id)"
    "  FROM (SELECT a.*, (row_number() OVER (PARTITION BY a.request_id ORDER BY a.id) - 1)"
    "          / " FQ_STORE_EVENT_BLOCK_TEXT " AS block"
    "        FROM acked a JOIN counted c ON c.id = a.request_id"
    "        WHERE $3::boolean AND c.webhook_id IS NULL) b"
    "  GROUP BY tenant_id, request_id, block ORDER BY request_id, block)"
    " SELECT coalesce(sum(n), 0) FROM counted";

int fq_store_ack_batch(fq_store_t *self, const int64_t *ids, size_t count)
{
    return fq_store_ack_batch_events(self, ids, count, true);
}

int fq_store_ack_batch_events(fq_store_t *self, const int64_t *ids, size_t count, bool events)
{
    if (count == 0)
        return 0;
    int rc;
    fq_buf_t array = {0};
    if (fq_store_id_array(&array, ids, count, sizeof *ids)) {
        fq_buf_free(&array);
        return fq_store_fail(self, FQ_ENOMEM, "out of memory");
    }
    //  One statement is one transaction: all of the batch or none of it
    const char *params[] = {array.data, fq_store_fence(self), events ? "true" : "false"};
    PGresult *res =
        fq_store_query_prepared(self, S_ACK_SQL, 3, params, PGRES_TUPLES_OK, "apply acks", &rc);
    fq_buf_free(&array);
    if (!res)
        return rc;
    int applied = (int)fq_store_int64(res, 0, 0);
    PQclear(res);
    return applied;
}

//  A retry waits out its backoff, or the receiver's Retry-After
//  (retry_after, seconds) when that is longer: the receiver's wish holds
//  beyond the policy's cap.
static const char *const S_NACK_SQL =
    "WITH input AS ("
    "  SELECT * FROM unnest($1::bigint[], $2::boolean[], $3::text[], $7::bigint[],"
    "                       $8::boolean[])"
    "   AS n(id, permanent, error, retry_after, deferred)),"
    " nacked AS ("
    "  UPDATE fairq.messages m SET"
    //  A deferral costs no attempt (0016): the count stays, and it never
    //  makes the message dead
    "    try_count = m.try_count + CASE WHEN i.deferred THEN 0 ELSE 1 END,"
    "    last_attempt_at = now(), updated_at = now(),"
    "    last_error = left(i.error, 2000), claimed_epoch = NULL,"
    "    status = CASE WHEN NOT i.deferred AND (i.permanent OR m.try_count + 1 >= r.max_attempts)"
    "                  THEN 'dead' ELSE 'failed' END::fairq.message_status,"
    "    next_attempt_at = CASE WHEN NOT i.deferred"
    "                            AND (i.permanent OR m.try_count + 1 >= r.max_attempts) THEN NULL"
    "      ELSE now() + make_interval(secs => greatest(least($5::float8,"
    "             $4::float8 * power(2, m.try_count)) * (0.5 + random() / 2) / 1000,"
    "             coalesce(i.retry_after, 0)::float8)) END"
    //  o is the row as it was: whether it was failed before this answer
    //  (a deferred one is failed with no attempt counted)
    "  FROM input i, fairq.requests r, fairq.messages o"
    "  WHERE m.id = i.id AND o.id = i.id AND r.id = m.request_id"
    "    AND m.status IN ('pending', 'failed') AND (SELECT fairq.check_epoch($6::bigint))"
    "  RETURNING m.id, m.request_id, m.tenant_id, m.recipient, m.status, m.last_error,"
    "    i.permanent, o.status = 'failed' AS was_failed),"
    //  A hard bounce suppresses its address for the tenant (0019)
    " suppressed AS (INSERT INTO fairq.suppressions (tenant_id, address, reason, detail)"
    "  SELECT DISTINCT ON (tenant_id, lower(recipient)) tenant_id, lower(recipient), 'bounce',"
    "   last_error FROM nacked"
    "  WHERE status = 'dead' AND permanent AND $9::text <> '' AND last_error ~ $9::text"
    "   AND octet_length(recipient) BETWEEN 3 AND 320"
    "   AND recipient !~ '[[:space:][:cntrl:]]'"
    "  ON CONFLICT DO NOTHING),"
    " counted AS (UPDATE fairq.requests r SET"
    "    failed = r.failed + c.failed - c.retried, dead = r.dead + c.dead, updated_at = now()"
    "  FROM (SELECT request_id, count(*) AS n,"
    "          count(*) FILTER (WHERE status = 'failed') AS failed,"
    "          count(*) FILTER (WHERE status = 'dead') AS dead,"
    "          count(*) FILTER (WHERE was_failed) AS retried"
    "        FROM nacked GROUP BY request_id) c"
    "  WHERE r.id = c.request_id RETURNING r.id, r.webhook_id, c.n),"
    //  None for a webhook's batch (0020), as for its ack
    " evented AS (INSERT INTO fairq.event_rows"
    "   (tenant_id, request_id, message_id, type, recipient, detail)"
    "  SELECT n.tenant_id, n.request_id, n.id, CASE WHEN n.status = 'dead' THEN 'message.dead'"
    "    ELSE 'message.deferred' END::fairq.event_type, n.recipient, n.last_error"
    "  FROM nacked n JOIN counted c ON c.id = n.request_id WHERE c.webhook_id IS NULL)"
    " SELECT coalesce(sum(n), 0) FROM counted";

int fq_store_nack_batch(fq_store_t *self, const fq_nack_t *nacks, size_t count,
                        const fq_retry_policy_t *policy)
{
    if (count == 0)
        return 0;
    fq_buf_t ids = {0}, permanent = {0}, errors = {0}, waits = {0}, deferred = {0};
    int mem = fq_store_id_array(&ids, &nacks[0].id, count, sizeof *nacks);
    mem |= fq_buf_add(&permanent, "{", 1) | fq_buf_add(&errors, "{", 1) |
           fq_buf_add(&waits, "{", 1) | fq_buf_add(&deferred, "{", 1);
    for (size_t i = 0; i < count && mem == 0; i++) {
        mem |= fq_buf_printf(&deferred, "%s%c", i ? "," : "", nacks[i].deferred ? 't' : 'f');
        mem |= fq_buf_printf(&waits, "%s%lu", i ? "," : "", (unsigned long)nacks[i].retry_after_s);
        mem |= fq_buf_add(&permanent,
                          i ? (nacks[i].permanent ? ",t" : ",f") : (nacks[i].permanent ? "t" : "f"),
                          i ? 2 : 1);
        mem |= fq_buf_add(&errors, i ? "," : "", i ? 1 : 0);
        char *clean = s_valid_utf8_copy(nacks[i].error ? nacks[i].error : "");
        mem |= clean ? fq_store_array_text(&errors, clean) : -1;
        free(clean);
    }
    mem |= fq_buf_add(&permanent, "}", 1) | fq_buf_add(&errors, "}", 1) |
           fq_buf_add(&waits, "}", 1) | fq_buf_add(&deferred, "}", 1);
    char base[FQ_STORE_INT_TEXT], cap[FQ_STORE_INT_TEXT];
    snprintf(base, sizeof base, "%d", policy->base_ms);
    snprintf(cap, sizeof cap, "%d", policy->cap_ms);
    const char *params[] = {ids.data,
                            permanent.data,
                            errors.data,
                            base,
                            cap,
                            fq_store_fence(self),
                            waits.data,
                            deferred.data,
                            policy->bounce_pattern ? policy->bounce_pattern : ""};
    PGresult *res = NULL;
    int rc;
    if (mem)
        rc = fq_store_fail(self, FQ_ENOMEM, "out of memory");
    else
        res = fq_store_query_prepared(self, S_NACK_SQL, 9, params, PGRES_TUPLES_OK, "apply nacks",
                                      &rc);
    fq_buf_free(&ids);
    fq_buf_free(&deferred);
    fq_buf_free(&waits);
    fq_buf_free(&permanent);
    fq_buf_free(&errors);
    if (!res)
        return rc;
    int applied = (int)fq_store_int64(res, 0, 0);
    PQclear(res);
    return applied;
}

//  ---------------------------------------------------------------------
//  Hard bounces (0019)

//  Whether code is an enhanced status code (class.subject.detail: 2, 4
//  or 5, then one to three digits twice) or a basic reply code (three
//  digits, 2 to 5 first).
static bool s_enhanced_code(const char *code, size_t length)
{
    if (length < 5 || (code[0] != '2' && code[0] != '4' && code[0] != '5') || code[1] != '.')
        return false;
    size_t i = 2, parts = 0;
    while (parts < 2) {
        size_t digits = 0;
        while (i < length && code[i] >= '0' && code[i] <= '9' && digits < 4)
            i++, digits++;
        if (digits < 1 || digits > 3)
            return false;
        parts++;
        if (parts == 1) {
            if (i >= length || code[i] != '.')
                return false;
            i++;
        }
    }
    return i == length;
}

static bool s_basic_code(const char *code, size_t length)
{
    return length == 3 && code[0] >= '2' && code[0] <= '5' && code[1] >= '0' && code[1] <= '9' &&
           code[2] >= '0' && code[2] <= '9';
}

int fq_store_bounce_pattern(const char *codes, char out[FQ_STORE_BOUNCE_PATTERN_SIZE],
                            char *problem, size_t problem_size)
{
    //  Enhanced codes anywhere, as a whole code (not 5.1.10 for 5.1.1);
    //  basic codes as the reply's first word
    fq_buf_t enhanced = {0}, basic = {0};
    int rc = 0;
    for (const char *at = codes ? codes : ""; *at && rc == 0;) {
        size_t length = strcspn(at, ",");
        const char *code = at;
        while (length && *code == ' ')
            code++, length--;
        while (length && code[length - 1] == ' ')
            length--;
        int mem = 0;
        if (s_enhanced_code(code, length)) {
            mem |= fq_buf_add_str(&enhanced, enhanced.size ? "|" : "");
            for (size_t i = 0; i < length; i++)
                mem |= fq_buf_add_str(&enhanced, code[i] == '.' ? "\\." : (char[]){code[i], 0});
        } else if (s_basic_code(code, length)) {
            mem |= fq_buf_add_str(&basic, basic.size ? "|" : "");
            mem |= fq_buf_add(&basic, code, length);
        } else if (length > 0) {
            if (problem)
                snprintf(problem, problem_size,
                         "\"%.*s\" is not a reply code: write enhanced status codes (5.1.1) or "
                         "basic reply codes (550), comma-separated",
                         (int)(length > 40 ? 40 : length), code);
            rc = FQ_EINVAL;
        }
        if (mem) {
            if (problem)
                snprintf(problem, problem_size, "out of memory");
            rc = FQ_ENOMEM;
        }
        at += strcspn(at, ",");
        if (*at == ',')
            at++;
    }
    out[0] = 0;
    if (rc == 0 && (enhanced.size || basic.size)) {
        int n = snprintf(out, FQ_STORE_BOUNCE_PATTERN_SIZE, "%s%.*s%s%s%s%.*s%s",
                         enhanced.size ? "(^|[^0-9.])(" : "", (int)enhanced.size,
                         enhanced.size ? enhanced.data : "", enhanced.size ? ")($|[^0-9])" : "",
                         enhanced.size && basic.size ? "|" : "", basic.size ? "^(" : "",
                         (int)basic.size, basic.size ? basic.data : "",
                         basic.size ? ")($|[^0-9])" : "");
        if (n < 0 || n >= FQ_STORE_BOUNCE_PATTERN_SIZE) {
            if (problem)
                snprintf(problem, problem_size, "too many codes: at most about 60");
            out[0] = 0;
            rc = FQ_EINVAL;
        }
    }
    fq_buf_free(&enhanced);
    fq_buf_free(&basic);
    return rc;
}
