/*  fq_store_messages.c — messages: split from a request's recipients,
    paged for the scheduler, loaded for the dispatcher (see fq_store.h).

    Splitting takes one stored chunk of recipients at a time. Each
    recipient is read and checked alone (recipients/): a good one becomes a
    message row, streamed with COPY, a bad one a reject with its reason,
    and the chunk's deletion and the request's counters go in the same
    transaction, so a crash leaves either all of a chunk split or none.
*/
#include "fq_store_internal.h"
#include "fq_error.h"
#include "fq_domain.h"
#include "fq_recipients.h"
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  COPY data is handed to libpq in pieces of about this size.
#define S_COPY_FLUSH_BYTES (256 * 1024)

//  Room for the first columns of a message's COPY row: the request's and
//  the tenant's ids, each followed by a tab.
#define S_ROW_PREFIX_SIZE (2 * FQ_STORE_INT_TEXT)

//  ---------------------------------------------------------------------
//  Splitting

typedef struct {
    int64_t chunk_no;
    int64_t first_position;
    int64_t tenant_id;
    bool cancelled;
    bool key_only; //  The request is not mail: its recipients have keys, not addresses
    //  The chunk's row; its column S_CHUNK_RECIPIENTS is the recipients, a
    //  JSON array as the server stores it; owned
    PGresult *recipients;
} s_chunk_t;

//  The column of a chunk's row holding its recipients.
#define S_CHUNK_RECIPIENTS 4

//  The recipients of a chunk that were refused, as array literals for one
//  INSERT into fairq.rejects.
typedef struct {
    fq_buf_t positions; //  int[]: where each stood in the submitted array
    fq_buf_t addresses; //  text[]: its "to", NULL when it had no "to" string
    fq_buf_t reasons;   //  text[]
    int count;
} s_rejects_t;

//  Adds a refused recipient. Returns 0, or -1 when memory runs out.
static int s_rejects_add(s_rejects_t *self, int64_t position, const char *address,
                         const char *reason)
{
    const char *separator = self->count ? "," : "{";
    self->count++;
    return fq_buf_printf(&self->positions, "%s%lld", separator, (long long)position) |
           fq_buf_add_str(&self->addresses, separator) |
           fq_store_array_text(&self->addresses, address) |
           fq_buf_add_str(&self->reasons, separator) | fq_store_array_text(&self->reasons, reason);
}

//  Records the refused recipients of request_id, in the open transaction.
static int s_rejects_insert(fq_store_t *store, const char *request_id, s_rejects_t *self)
{
    if (fq_buf_add_char(&self->positions, '}') | fq_buf_add_char(&self->addresses, '}') |
        fq_buf_add_char(&self->reasons, '}'))
        return fq_store_fail(store, FQ_ENOMEM, "out of memory");
    const char *params[] = {request_id, self->positions.data, self->addresses.data,
                            self->reasons.data};
    int rc;
    //  Each with its event (0018), in the split's transaction
    PGresult *res = fq_store_query(
        store,
        "WITH refused AS (INSERT INTO fairq.rejects (request_id, position, recipient, reason)"
        "  SELECT $1, p, a, r FROM unnest($2::int[], $3::text[], $4::text[]) AS u(p, a, r)"
        "  RETURNING request_id, recipient, reason)"
        " INSERT INTO fairq.events (tenant_id, request_id, type, recipient, detail)"
        " SELECT q.tenant_id, f.request_id, CASE WHEN f.reason = '" FQ_STORE_REJECT_SUPPRESSED "'"
        "  THEN 'message.suppressed' ELSE 'message.rejected' END::fairq.event_type,"
        "  f.recipient, left(f.reason, 2000)"
        " FROM refused f JOIN fairq.requests q ON q.id = f.request_id"
        " WHERE q.webhook_id IS NULL",
        4, params, PGRES_COMMAND_OK, "record rejected recipients", &rc);
    PQclear(res);
    return rc;
}

static void s_rejects_free(s_rejects_t *self)
{
    fq_buf_free(&self->positions);
    fq_buf_free(&self->addresses);
    fq_buf_free(&self->reasons);
}

//  Locks and reads the first chunk left, in the open transaction. Returns 1
//  with it, 0 if none is left.
static int s_take_chunk(fq_store_t *self, const char *request_id, s_chunk_t *chunk)
{
    const char *params[] = {request_id};
    int rc;
    PGresult *res = fq_store_query(self,
                                   "SELECT c.chunk_no, c.first_position, r.tenant_id,"
                                   " r.status = 'cancelled', c.recipients, r.channel <> 'email'"
                                   " FROM fairq.recipient_chunks c"
                                   " JOIN fairq.requests r ON r.id = c.request_id"
                                   " WHERE c.request_id = $1 ORDER BY c.chunk_no LIMIT 1"
                                   " FOR UPDATE OF c",
                                   1, params, PGRES_TUPLES_OK, "read recipients", &rc);
    if (!res)
        return rc;
    if (PQntuples(res) == 0) {
        PQclear(res);
        return 0;
    }
    chunk->chunk_no = fq_store_int64(res, 0, 0);
    chunk->first_position = fq_store_int64(res, 0, 1);
    chunk->tenant_id = fq_store_int64(res, 0, 2);
    chunk->cancelled = PQgetvalue(res, 0, 3)[0] == 't';
    chunk->key_only = PQgetvalue(res, 0, 5)[0] == 't';
    //  Each recipient's "fields" is copied as the server's own text (see
    //  s_copy_messages); the chunk is read whole, as one value, which
    //  costs the server less than cutting it into rows
    chunk->recipients = res;
    return 1;
}

//  Appends the COPY row of a good recipient (text, size bytes, as read
//  into recipient): prefix (the ids), its destination, its address and its
//  fields as the server wrote them, "{}" when it has none. Returns 0 or -1 when memory
//  runs out; *bad is set when its fields cannot be found in its text.
static int s_message_row(fq_buf_t *rows, const char *prefix, size_t prefix_size,
                         const char *destination, json_t *recipient, const char *text, size_t size,
                         bool *bad)
{
    size_t to_size = 0;
    const char *to = fq_recipient_to(recipient, &to_size);
    //  A destination's name needs no COPY escaping (0016: a-z 0-9 _ . -)
    int mem = fq_buf_add(rows, prefix, prefix_size) | fq_buf_add_str(rows, destination) |
              fq_buf_add_char(rows, '\t') | fq_store_copy_text(rows, to, to_size) |
              fq_buf_add_char(rows, '\t');
    json_t *fields = json_object_get(recipient, "fields");
    size_t fields_size = 0;
    const char *fields_text =
        json_is_object(fields) ? fq_recipient_fields_text(text, size, &fields_size) : NULL;
    if (fields_text)
        mem |= fq_store_copy_text(rows, fields_text, fields_size);
    else if (json_is_object(fields)) //  Not in jsonb output text: cannot happen
        *bad = true;
    else
        mem |= fq_buf_add_str(rows, "{}");
    return mem | fq_buf_add_char(rows, '\n');
}

//  The distinct destinations of one chunk, as the resolver's pointers:
//  a handful (the named destinations a list reaches, and "default"), so
//  a linear search by pointer costs less than hashing each message's.
typedef struct {
    const char **names;
    size_t count, capacity;
} s_seen_t;

//  Adds name if not seen yet. Returns 0, or -1 when memory runs out.
static int s_seen_add(s_seen_t *seen, const char *name)
{
    for (size_t i = 0; i < seen->count; i++)
        if (seen->names[i] == name || strcmp(seen->names[i], name) == 0)
            return 0;
    if (seen->count == seen->capacity) {
        size_t capacity = seen->capacity ? 2 * seen->capacity : 8;
        const char **grown = realloc(seen->names, capacity * sizeof *grown);
        if (!grown)
            return -1;
        seen->names = grown;
        seen->capacity = capacity;
    }
    seen->names[seen->count++] = name;
    return 0;
}

//  The destination of a mail recipient: its domain's by the resolver.
static const char *s_destination_of(const fq_split_destinations_t *destinations, json_t *recipient)
{
    if (!destinations)
        return FQ_STORE_DESTINATION_DEFAULT;
    if (destinations->fixed)
        return destinations->fixed;
    const char *to = destinations->of_domain ? fq_recipient_to(recipient, NULL) : NULL;
    const char *at = to ? strrchr(to, '@') : NULL;
    char domain[FQ_DOMAIN_SIZE]; //  A longer one is named by no destination
    size_t size = at ? strlen(at + 1) : 0;
    if (size == 0 || size >= sizeof domain)
        return FQ_STORE_DESTINATION_DEFAULT;
    memcpy(domain, at + 1, size + 1);
    fq_domain_lower(domain);
    const char *name = destinations->of_domain(domain, destinations->arg);
    return name ? name : FQ_STORE_DESTINATION_DEFAULT;
}

//  The addresses of a chunk that its tenant's suppression list or the
//  global one holds (0019), lowercased and sorted for bsearch.
typedef struct {
    PGresult *res; //  Owns the strings
    const char **addresses;
    int count;
} s_suppressed_t;

static int s_compare_text(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

//  Reads which of the chunk's recipients are suppressed: one index probe
//  per recipient, and none at all (the first EXISTS, evaluated once) when
//  neither list has an entry. Returns 0 or a negative code.
static int s_suppressed_read(fq_store_t *self, const char *request_id, const s_chunk_t *chunk,
                             s_suppressed_t *out)
{
    char chunk_no[FQ_STORE_INT_TEXT], tenant[FQ_STORE_INT_TEXT];
    snprintf(chunk_no, sizeof chunk_no, "%lld", (long long)chunk->chunk_no);
    snprintf(tenant, sizeof tenant, "%lld", (long long)chunk->tenant_id);
    const char *params[] = {request_id, chunk_no, tenant};
    int rc;
    PGresult *res =
        fq_store_query(self,
                       "SELECT DISTINCT lower(r->>'to') FROM fairq.recipient_chunks c,"
                       " json_array_elements(c.recipients) AS r"
                       " WHERE c.request_id = $1 AND c.chunk_no = $2"
                       "  AND EXISTS (SELECT 1 FROM fairq.suppressions s"
                       "              WHERE coalesce(s.tenant_id, 0) IN (0, $3::bigint))"
                       "  AND EXISTS (SELECT 1 FROM fairq.suppressions s"
                       "              WHERE coalesce(s.tenant_id, 0) IN (0, $3::bigint)"
                       "              AND s.address = lower(r->>'to'))",
                       3, params, PGRES_TUPLES_OK, "read suppressed recipients", &rc);
    if (!res)
        return rc;
    int n = PQntuples(res);
    out->res = res;
    out->count = 0;
    out->addresses = n ? malloc((size_t)n * sizeof *out->addresses) : NULL;
    if (n && !out->addresses)
        return fq_store_fail(self, FQ_ENOMEM, "out of memory");
    for (int i = 0; i < n; i++)
        if (!PQgetisnull(res, i, 0))
            out->addresses[out->count++] = PQgetvalue(res, i, 0);
    if (out->count > 1)
        qsort(out->addresses, (size_t)out->count, sizeof *out->addresses, s_compare_text);
    return 0;
}

//  Whether the address to (as the recipient wrote it) is suppressed.
static bool s_is_suppressed(const s_suppressed_t *suppressed, const char *to)
{
    if (!to || suppressed->count == 0)
        return false;
    char lowered[FQ_RECIPIENT_ADDRESS_MAX + 1];
    size_t length = strlen(to);
    if (length >= sizeof lowered)
        return false; //  Too long to be an address: refused as one anyway
    for (size_t i = 0; i <= length; i++)
        lowered[i] = (char)tolower((unsigned char)to[i]);
    const char *key = lowered;
    return bsearch(&key, suppressed->addresses, (size_t)suppressed->count,
                   sizeof *suppressed->addresses, s_compare_text) != NULL;
}

static void s_suppressed_free(s_suppressed_t *suppressed)
{
    free(suppressed->addresses);
    PQclear(suppressed->res);
    *suppressed = (s_suppressed_t){0};
}

//  Streams the good recipients as COPY rows, each with its destination
//  (noted in seen); collects the others as rejects, the suppressed ones
//  among them (reason "suppressed").
static int s_copy_messages(fq_store_t *self, const char *request_id, const s_chunk_t *chunk,
                           const fq_recipient_rules_t *rules,
                           const fq_split_destinations_t *destinations,
                           const s_suppressed_t *suppressed, s_seen_t *seen, s_rejects_t *rejects,
                           fq_split_result_t *result)
{
    PGresult *res = PQexec(self->conn, "COPY fairq.messages (request_id, tenant_id, destination,"
                                       " recipient, fields) FROM STDIN");
    int rc = fq_store_check(self, res, PGRES_COPY_IN, "start COPY of messages");
    if (rc)
        return rc;
    PQclear(res);
    fq_buf_t rows = {0};
    int mem = 0; //  -1 once a buffer could not grow
    char prefix[S_ROW_PREFIX_SIZE];
    int prefix_len =
        snprintf(prefix, sizeof prefix, "%s\t%lld\t", request_id, (long long)chunk->tenant_id);
    bool bad_chunk = false;
    fq_recipients_scan_t scan;
    fq_recipients_scan_start(&scan, PQgetvalue(chunk->recipients, 0, S_CHUNK_RECIPIENTS),
                             (size_t)PQgetlength(chunk->recipients, 0, S_CHUNK_RECIPIENTS));
    const char *element;
    size_t size;
    for (int64_t position = chunk->first_position;
         !bad_chunk && (element = fq_recipients_scan_next(&scan, &size)); position++) {
        char reason[FQ_RECIPIENT_REASON_SIZE];
        json_t *recipient;
        const char *problem =
            fq_recipient_read(element, size, rules, &recipient, reason, sizeof reason);
        if (problem) {
            mem |= s_rejects_add(rejects, position, fq_recipient_to(recipient, NULL), problem);
            result->rejected++;
        } else if (!rules->key_only &&
                   s_is_suppressed(suppressed, fq_recipient_to(recipient, NULL))) {
            mem |= s_rejects_add(rejects, position, fq_recipient_to(recipient, NULL),
                                 FQ_STORE_REJECT_SUPPRESSED);
            result->rejected++;
            result->suppressed++;
        } else {
            //  A key is no address: another channel's messages go to the
            //  request's one destination (fixed) or "default"
            const char *destination = rules->key_only && !(destinations && destinations->fixed)
                                          ? FQ_STORE_DESTINATION_DEFAULT
                                          : s_destination_of(destinations, recipient);
            mem |= s_seen_add(seen, destination) |
                   s_message_row(&rows, prefix, (size_t)prefix_len, destination, recipient, element,
                                 size, &bad_chunk);
            result->split++;
        }
        json_decref(recipient);
        if (mem == 0 && rows.size >= S_COPY_FLUSH_BYTES) {
            if (PQputCopyData(self->conn, rows.data, (int)rows.size) != 1)
                rc = FQ_EDB;
            rows.size = 0;
        }
        if (rc || mem)
            break;
    }
    if (scan.malformed)
        bad_chunk = true;
    if (bad_chunk && rc == 0)
        rc = FQ_EINVAL;
    if (mem)
        rc = FQ_ENOMEM;
    if (rc == 0 && rows.size && PQputCopyData(self->conn, rows.data, (int)rows.size) != 1)
        rc = FQ_EDB;
    fq_buf_free(&rows);
    //  End the COPY either way, so the connection is usable again
    if (PQputCopyEnd(self->conn, rc ? "fairq split failed" : NULL) != 1)
        rc = rc ? rc : FQ_EDB;
    res = PQgetResult(self->conn);
    int end = fq_store_check(self, res, PGRES_COMMAND_OK, "COPY messages");
    if (end == 0)
        PQclear(res);
    while ((res = PQgetResult(self->conn)))
        PQclear(res);
    if (rc == FQ_ENOMEM)
        return fq_store_fail(self, rc, "out of memory");
    if (rc == FQ_EINVAL)
        return fq_store_fail(self, rc, "could not read recipients of request %s: not a JSON array",
                             request_id);
    return rc ? (end ? end
                     : fq_store_fail(self, rc, "could not COPY messages: %s",
                                     PQerrorMessage(self->conn)))
              : end;
}

//  Records that request_id has messages in the destinations seen, in the
//  open transaction (the scheduler's list of lanes to page it in after a
//  restart); written, when not NULL, gets them comma-separated.
static int s_destinations_record(fq_store_t *self, const char *request_id, const s_seen_t *seen,
                                 fq_buf_t *written)
{
    fq_buf_t names = {0};
    int mem = fq_buf_add_char(&names, '{');
    for (size_t i = 0; i < seen->count; i++)
        mem |= fq_buf_add_str(&names, i ? "," : "") | fq_store_array_text(&names, seen->names[i]);
    mem |= fq_buf_add_char(&names, '}');
    for (size_t i = 0; written && i < seen->count; i++)
        mem |= fq_buf_add_str(written, written->size ? "," : "") |
               fq_buf_add_str(written, seen->names[i]);
    if (mem) {
        fq_buf_free(&names);
        return fq_store_fail(self, FQ_ENOMEM, "out of memory");
    }
    const char *params[] = {request_id, names.data};
    int rc;
    PGresult *res =
        fq_store_query(self,
                       "INSERT INTO fairq.request_destinations (request_id, destination)"
                       " SELECT $1, unnest($2::text[]) ON CONFLICT DO NOTHING",
                       2, params, PGRES_COMMAND_OK, "record request destinations", &rc);
    PQclear(res);
    fq_buf_free(&names);
    return rc;
}

int fq_store_split_chunk(fq_store_t *self, int64_t request_id, const char *const *required_fields,
                         size_t nrequired, size_t nheader, fq_split_result_t *result)
{
    return fq_store_split_chunk_to(self, request_id, required_fields, nrequired, nheader, NULL,
                                   result);
}

int fq_store_split_chunk_to(fq_store_t *self, int64_t request_id,
                            const char *const *required_fields, size_t nrequired, size_t nheader,
                            fq_split_destinations_t *destinations, fq_split_result_t *result)
{
    *result = (fq_split_result_t){0};
    s_seen_t seen = {0};
    if (destinations)
        destinations->written.size = 0;
    char id[FQ_STORE_INT_TEXT];
    snprintf(id, sizeof id, "%lld", (long long)request_id);
    fq_recipient_rules_t rules = {required_fields, nrequired, nheader, false};
    s_chunk_t chunk = {0};
    s_rejects_t rejects = {0};
    int rc = fq_store_exec(self, "BEGIN", "begin split");
    if (rc == 0)
        rc = fq_store_fence_transaction(self);
    int taken = rc ? rc : s_take_chunk(self, id, &chunk);
    if (taken < 0)
        rc = taken;
    //  A channel other than mail names its recipients by keys
    rules.key_only = chunk.key_only;
    s_suppressed_t suppressed = {0};
    if (rc == 0 && taken && !chunk.cancelled && !chunk.key_only)
        rc = s_suppressed_read(self, id, &chunk, &suppressed);
    if (rc == 0 && taken && !chunk.cancelled)
        rc = s_copy_messages(self, id, &chunk, &rules, destinations, &suppressed, &seen, &rejects,
                             result);
    s_suppressed_free(&suppressed);
    if (rc == 0 && result->rejected)
        rc = s_rejects_insert(self, id, &rejects);
    if (rc == 0 && seen.count)
        rc = s_destinations_record(self, id, &seen, destinations ? &destinations->written : NULL);
    if (rc == 0) {
        char chunk_no[FQ_STORE_INT_TEXT], split[FQ_STORE_INT_TEXT], rejected[FQ_STORE_INT_TEXT];
        snprintf(chunk_no, sizeof chunk_no, "%lld", (long long)chunk.chunk_no);
        snprintf(split, sizeof split, "%d", result->split);
        snprintf(rejected, sizeof rejected, "%d", result->rejected);
        const char *params[] = {id, chunk_no, split, rejected, taken ? "true" : "false"};
        //  The chunk goes in the same transaction as its messages: a crash
        //  leaves either both or neither
        PGresult *res = fq_store_query(
            self,
            "WITH gone AS (DELETE FROM fairq.recipient_chunks"
            "              WHERE request_id = $1 AND chunk_no = $2 AND $5::boolean RETURNING 1),"
            " left_over AS (SELECT count(*) - (SELECT count(*) FROM gone) AS n"
            "               FROM fairq.recipient_chunks WHERE request_id = $1),"
            " updated AS (UPDATE fairq.requests r SET split = split + $3::int,"
            "  rejected = rejected + $4::int, updated_at = now(),"
            "  status = CASE WHEN r.status IN ('accepted', 'splitting')"
            "                THEN (CASE WHEN (SELECT n FROM left_over) > 0 THEN 'splitting'"
            "                           WHEN split + $3::int = 0 THEN 'done'"
            "                           ELSE 'active' END)::fairq.request_status"
            "                ELSE r.status END,"
            //  A request that ends here (every recipient rejected) is
            //  finished now, so that retention finds it
            "  finished_at = CASE WHEN r.status IN ('accepted', 'splitting')"
            "                      AND (SELECT n FROM left_over) = 0 AND split + $3::int = 0"
            "                     THEN now() ELSE r.finished_at END"
            " WHERE r.id = $1"
            " RETURNING r.id, r.tenant_id, r.status, r.webhook_id,"
            "  (SELECT n FROM left_over) AS n),"
            //  This split its last chunk: the request's events (0018), with
            //  it (done too when every recipient was rejected)
            " evented AS (INSERT INTO fairq.events (tenant_id, request_id, type)"
            "  SELECT tenant_id, id, e.type FROM updated,"
            "   unnest(ARRAY['request.split', 'request.done']::fairq.event_type[]) AS e(type)"
            "  WHERE n = 0 AND EXISTS (SELECT 1 FROM gone) AND webhook_id IS NULL"
            "   AND (e.type = 'request.split' OR status = 'done'))"
            " SELECT n FROM updated",
            5, params, PGRES_TUPLES_OK, "update request after split", &rc);
        if (res)
            result->last = PQntuples(res) == 1 && fq_store_int64(res, 0, 0) == 0;
        PQclear(res);
    }
    if (rc == 0)
        rc = fq_store_exec(self, "COMMIT", "commit split");
    if (rc)
        fq_store_rollback(self);
    PQclear(chunk.recipients);
    s_rejects_free(&rejects);
    free(seen.names);
    if (rc) {
        *result = (fq_split_result_t){0};
        if (destinations)
            destinations->written.size = 0;
    }
    return rc ? rc : taken;
}

//  ---------------------------------------------------------------------
//  Paging for the scheduler

//  Bitmap scans off for one page (fq_store_tune_paging says why), in the
//  page's own transaction rather than the session's: behind PgBouncer in
//  transaction pooling a SET on the session would stay on whichever
//  server connection ran it, serving other clients, while the next page
//  may run on another. The setting costs no round trip of its own: it
//  goes with the page, in one pipeline (fq_store_query_after).
#define S_PAGING_SETUP "SELECT set_config('enable_bitmapscan', 'off', true)"

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
    PGresult *res =
        self->paging_tuned
            ? fq_store_query_after(self, S_PAGING_SETUP, sql, 3, params, PGRES_TUPLES_OK,
                                   "page ready messages", &rc)
            : fq_store_query(self, sql, 3, params, PGRES_TUPLES_OK, "page ready messages", &rc);
    if (!res)
        return rc;
    int n = PQntuples(res);
    for (int i = 0; i < n; i++)
        ids[i] = fq_store_int64(res, i, 0);
    PQclear(res);
    return n;
}

int fq_store_next_ready_many(fq_store_t *self, const fq_page_ask_t *asks, int nasks, int64_t *ids,
                             int *counts)
{
    if (nasks <= 0)
        return 0;
    int64_t total = 0;
    for (int i = 0; i < nasks; i++)
        total += asks[i].limit > 0 ? asks[i].limit : 0;
    if (nasks > FQ_STORE_PAGE_ASKS_MAX || total > FQ_STORE_PAGE_IDS_MAX)
        return fq_store_fail(self, FQ_EINVAL, "could not page: %d requests, %lld ids", nasks,
                             (long long)total);
    for (int i = 1; i < nasks; i++)
        if ((asks[i].destination == NULL) != (asks[0].destination == NULL))
            return fq_store_fail(self, FQ_EINVAL,
                                 "could not page: some asks name a destination, some do not");
    bool by_destination = asks[0].destination != NULL;
    fq_buf_t requests = {0}, afters = {0}, limits = {0}, destinations = {0};
    int rc = fq_store_id_array(&requests, &asks[0].request_id, (size_t)nasks, sizeof *asks) |
             fq_store_id_array(&afters, &asks[0].after_id, (size_t)nasks, sizeof *asks) |
             fq_buf_add_char(&limits, '{') | fq_buf_add_char(&destinations, '{');
    for (int i = 0; i < nasks && rc == 0; i++) {
        rc = fq_buf_printf(&limits, i ? ",%d" : "%d", asks[i].limit > 0 ? asks[i].limit : 0);
        if (by_destination && rc == 0)
            rc = fq_buf_add_str(&destinations, i ? "," : "") |
                 fq_store_array_text(&destinations, asks[i].destination ? asks[i].destination : "");
    }
    rc |= fq_buf_add_char(&limits, '}') | fq_buf_add_char(&destinations, '}');
    if (rc) {
        fq_buf_free(&requests);
        fq_buf_free(&afters);
        fq_buf_free(&limits);
        fq_buf_free(&destinations);
        return fq_store_fail(self, FQ_ENOMEM, "out of memory");
    }
    const char *params[] = {requests.data, afters.data, limits.data, destinations.data};
    //  Each ask walks messages_request_destination_idx (or, for all of a
    //  request's messages, messages_request_idx) from its cursor, as a
    //  single page does; the ordinality keeps the pages apart and in order.
    //  By destination, a throttled destination's backlog is never read to
    //  reach another's messages.
    const char *sql =
        by_destination
            ? "SELECT q.ord, m.id"
              " FROM unnest($1::bigint[], $2::bigint[], $3::int[], $4::text[]) WITH ORDINALITY"
              "      AS q(request_id, after_id, lim, destination, ord)"
              " CROSS JOIN LATERAL (SELECT id FROM fairq.messages"
              "   WHERE request_id = q.request_id AND destination = q.destination"
              "   AND id > q.after_id AND status = 'pending' ORDER BY id LIMIT q.lim) m"
              " ORDER BY q.ord, m.id"
            : "SELECT q.ord, m.id"
              " FROM unnest($1::bigint[], $2::bigint[], $3::int[]) WITH ORDINALITY"
              "      AS q(request_id, after_id, lim, ord)"
              " CROSS JOIN LATERAL (SELECT id FROM fairq.messages"
              "   WHERE request_id = q.request_id AND id > q.after_id"
              "   AND status = 'pending' ORDER BY id LIMIT q.lim) m"
              " ORDER BY q.ord, m.id";
    int nparams = by_destination ? 4 : 3;
    PGresult *res = self->paging_tuned
                        ? fq_store_query_after(self, S_PAGING_SETUP, sql, nparams, params,
                                               PGRES_TUPLES_OK, "page ready messages", &rc)
                        : fq_store_query(self, sql, nparams, params, PGRES_TUPLES_OK,
                                         "page ready messages", &rc);
    fq_buf_free(&requests);
    fq_buf_free(&afters);
    fq_buf_free(&limits);
    fq_buf_free(&destinations);
    if (!res)
        return rc;
    memset(counts, 0, (size_t)nasks * sizeof *counts);
    int n = PQntuples(res);
    for (int i = 0; i < n; i++) {
        int64_t ord = fq_store_int64(res, i, 0);
        if (ord >= 1 && ord <= nasks)
            counts[ord - 1]++;
        ids[i] = fq_store_int64(res, i, 1);
    }
    PQclear(res);
    return n;
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

//  The columns of a due request, and the rows they come from.
#define S_DUE_SELECT                                                                               \
    "SELECT r.id, r.tenant_id, r.priority, r.scan_from,"                                           \
    " NOT EXISTS (SELECT 1 FROM fairq.recipient_chunks c WHERE c.request_id = r.id),"              \
    " t.weight, t.max_inflight, r.total, t.name, r.channel, r.split > 0,"                          \
    " coalesce(t.send_rate_count, 0), coalesce(t.send_rate_period_s, 0),"                          \
    " coalesce(t.daily_quota, 0)"                                                                  \
    " FROM fairq.requests r JOIN fairq.tenants t ON t.id = r.tenant_id"                            \
    " WHERE r.status IN " FQ_STORE_UNFINISHED " AND r.status <> 'paused' AND r.send_at <= now()"

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

int fq_store_due_request(fq_store_t *self, int64_t request_id, fq_due_request_t *out)
{
    char id[FQ_STORE_INT_TEXT];
    snprintf(id, sizeof id, "%lld", (long long)request_id);
    const char *params[] = {id};
    int rc;
    PGresult *res = fq_store_query(self, S_DUE_SELECT " AND r.id = $1", 1, params, PGRES_TUPLES_OK,
                                   "find a due request", &rc);
    return res ? s_due_rows(res, out) : rc;
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
    *out = (fq_message_rows_t){0};
    if (count == 0)
        return 0;
    if (count > FQ_STORE_LOAD_MAX)
        return fq_store_fail(self, FQ_EINVAL, "could not load messages: %zu ids (at most %d)",
                             count, FQ_STORE_LOAD_MAX);
    int rc;
    fq_buf_t array = {0};
    if (fq_store_id_array(&array, ids, count, sizeof *ids)) {
        fq_buf_free(&array);
        return fq_store_fail(self, FQ_ENOMEM, "out of memory");
    }
    //  Loading is how the leader hands messages out, so it checks its epoch
    //  too (without the fence's lock: migration 0009 says why): once a
    //  standby has taken over, a deposed leader (woken from SIGSTOP, say)
    //  cannot load, so cannot send, anything more than what it had loaded
    //  before, whatever its own clock says
    const char *params[] = {array.data, fq_store_fence(self)};
    PGresult *res = fq_store_query(
        self,
        "SELECT m.id, m.request_id, m.tenant_id, m.recipient, m.fields, m.try_count,"
        " m.destination <> 'default', m.destination"
        " FROM fairq.messages m WHERE m.id = ANY($1::bigint[])"
        //  A cancel makes its messages 'cancelled' in the same
        //  transaction, so a pick of a request cancelled since it was
        //  paged is not handed out. A pause or a later send_at takes
        //  effect at the scheduler's next poll instead (milliseconds
        //  after its NOTIFY), not here: checking the request of every
        //  row cost a third of the pipeline's throughput, as the rows
        //  of open requests are rewritten by every ack batch
        //  (fq_bench_pipeline: 28,400 msgs/s without the check, 18,500
        //  with it, on one machine in one hour).
        " AND m.status IN ('pending', 'failed') AND (SELECT fairq.check_epoch($2::bigint))",
        2, params, PGRES_TUPLES_OK, "load messages", &rc);
    fq_buf_free(&array);
    if (!res)
        return rc;
    int n = PQntuples(res);
    //  One block: the rows, then their strings
    size_t strings = 0;
    for (int i = 0; i < n; i++)
        strings += (size_t)PQgetlength(res, i, 3) + 1 + (size_t)PQgetlength(res, i, 4) + 1 +
                   (size_t)PQgetlength(res, i, 7) + 1;
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
                                     .try_count = (int)fq_store_int64(res, i, 5),
                                     .named_destination = PQgetvalue(res, i, 6)[0] == 't'};
        for (int col = 3; col <= 4; col++) {
            size_t len = (size_t)PQgetlength(res, i, col);
            memcpy(text, PQgetvalue(res, i, col), len + 1);
            if (col == 3)
                rows[i].recipient = text;
            else
                rows[i].fields = text;
            text += len + 1;
        }
        size_t len = (size_t)PQgetlength(res, i, 7);
        memcpy(text, PQgetvalue(res, i, 7), len + 1);
        rows[i].destination = text;
        text += len + 1;
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
