/*  fq_store_split.c — a request's recipients into message rows (see
    fq_store.h, fq_store_split_chunk).

    Splitting takes one stored chunk of recipients at a time. Each
    recipient is read and checked alone (recipients/): a good one becomes a
    message row, a bad one a reject with its reason, and the chunk's
    deletion and the request's counters go in the same transaction, so a
    crash leaves either all of a chunk split or none.

    A split is a few round trips, not one per statement: the reads go in
    one pipeline (BEGIN, the leader's fence, the request's templates, the
    chunk, its suppressed addresses), the writes and the COMMIT in
    another: the rejects, then one statement for everything else (each
    statement is parsed and planned anew, and on a busy server each is a
    wait). A big request's rows go in between with COPY (two round trips
    of its own, and the cheapest way in for 10,000 rows); a small
    request's go with an INSERT in that statement, which answers their
    ids, so that the scheduler need not page them. On a busy
    server each round trip waits for the backend to be scheduled again,
    and a new tenant's first message waits for its request's split: when
    it took eleven round trips, they were 10 to 120 ms of that wait under
    the pipeline benchmark's load.
*/
#include "fq_store_internal.h"
#include "fq_error.h"
#include "fq_domain.h"
#include "fq_recipients.h"
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

//  COPY data is handed to libpq in pieces of about this size.
#define S_COPY_FLUSH_BYTES (256 * 1024)

//  Requests of at most this many recipients (the scheduler's small ones,
//  which it splits first) have their rows written by one INSERT of arrays.
#define S_INSERT_TOTAL_MAX 1000

//  Room for the first columns of a message's COPY row: the request's and
//  the tenant's ids, each followed by a tab.
#define S_ROW_PREFIX_SIZE (2 * FQ_STORE_INT_TEXT)

typedef struct {
    int64_t chunk_no;
    int64_t first_position;
    int64_t tenant_id;
    bool cancelled;
    bool key_only; //  The request is not mail: its recipients have keys, not addresses
    bool small;    //  At most S_INSERT_TOTAL_MAX recipients in all
    //  The chunk's row; its column S_CHUNK_RECIPIENTS is the recipients, a
    //  JSON array as the server stores it; owned
    PGresult *recipients;
} s_chunk_t;

//  The column of a chunk's row holding its recipients.
#define S_CHUNK_RECIPIENTS 4

//  ---------------------------------------------------------------------
//  Rejects

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

//  Closes the arrays. Returns 0, or -1 when memory runs out.
static int s_rejects_end(s_rejects_t *self)
{
    return fq_buf_add_char(&self->positions, '}') | fq_buf_add_char(&self->addresses, '}') |
           fq_buf_add_char(&self->reasons, '}');
}

//  Each refused recipient with its event (0018), in the split's
//  transaction: $1 the request, $2 to $4 the rejects' arrays.
#define S_REJECTS_SQL                                                                              \
    "WITH refused AS (INSERT INTO fairq.rejects (request_id, position, recipient, reason)"         \
    "  SELECT $1, p, a, r FROM unnest($2::int[], $3::text[], $4::text[]) AS u(p, a, r)"            \
    "  RETURNING request_id, recipient, reason)"                                                   \
    " INSERT INTO fairq.event_rows (tenant_id, request_id, type, recipient, detail)"               \
    " SELECT q.tenant_id, f.request_id, CASE WHEN f.reason = '" FQ_STORE_REJECT_SUPPRESSED "'"     \
    "  THEN 'message.suppressed' ELSE 'message.rejected' END::fairq.event_type,"                   \
    "  f.recipient, left(f.reason, 2000)"                                                          \
    " FROM refused f JOIN fairq.requests q ON q.id = f.request_id"                                 \
    " WHERE q.webhook_id IS NULL"

static void s_rejects_free(s_rejects_t *self)
{
    fq_buf_free(&self->positions);
    fq_buf_free(&self->addresses);
    fq_buf_free(&self->reasons);
}

//  ---------------------------------------------------------------------
//  Destinations

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

//  The destinations seen as an array literal into names; written, when
//  not NULL, gets them comma-separated. Returns 0, or -1 when memory runs
//  out.
static int s_seen_names(const s_seen_t *seen, fq_buf_t *names, fq_buf_t *written)
{
    int mem = fq_buf_add_char(names, '{');
    for (size_t i = 0; i < seen->count; i++)
        mem |= fq_buf_add_str(names, i ? "," : "") | fq_store_array_text(names, seen->names[i]);
    mem |= fq_buf_add_char(names, '}');
    for (size_t i = 0; written && i < seen->count; i++)
        mem |= fq_buf_add_str(written, written->size ? "," : "") |
               fq_buf_add_str(written, seen->names[i]);
    return mem;
}

//  ---------------------------------------------------------------------
//  Suppressed addresses

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

//  Which recipients of request $1's first chunk (the one s_take_chunk
//  locks) are suppressed, for mail only: one index probe per recipient,
//  and none at all (the first EXISTS, evaluated once) when neither list
//  has an entry. A recipient the server cannot read as text (a \u0000
//  escape, or half a surrogate pair: fairq.json_text_readable, 0028) is
//  left out: ->> refuses the whole object, and the whole chunk's split
//  failed with it, every time it was tried; jansson refuses it anyway, so
//  it is rejected as a recipient that could not be read.
#define S_SUPPRESSED_SQL                                                                           \
    "SELECT DISTINCT lower(r->>'to') FROM fairq.recipient_chunks c,"                               \
    " json_array_elements(c.recipients) AS r"                                                      \
    " WHERE c.request_id = $1"                                                                     \
    "  AND fairq.json_text_readable(r::text)"                                                      \
    "  AND c.chunk_no = (SELECT min(chunk_no) FROM fairq.recipient_chunks WHERE request_id = $1)"  \
    "  AND (SELECT channel = 'email' FROM fairq.requests WHERE id = $1)"                           \
    "  AND EXISTS (SELECT 1 FROM fairq.suppressions s"                                             \
    "              WHERE coalesce(s.tenant_id, 0) IN"                                              \
    "               (0, (SELECT tenant_id FROM fairq.requests WHERE id = $1)))"                    \
    "  AND EXISTS (SELECT 1 FROM fairq.suppressions s"                                             \
    "              WHERE coalesce(s.tenant_id, 0) IN"                                              \
    "               (0, (SELECT tenant_id FROM fairq.requests WHERE id = $1))"                     \
    "              AND s.address = lower(r->>'to'))"

//  Takes the suppressed addresses from res (owned from now on). Returns
//  0, or FQ_ENOMEM.
static int s_suppressed_take(fq_store_t *self, PGresult *res, s_suppressed_t *out)
{
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

//  ---------------------------------------------------------------------
//  The reads: one round trip

//  Locks and reads request $1's first chunk left, with what its request
//  says of it: its tenant, whether it was cancelled, whether it is mail,
//  whether it is small.
#define S_TAKE_SQL                                                                                 \
    "SELECT c.chunk_no, c.first_position, r.tenant_id,"                                            \
    " r.status = 'cancelled', c.recipients, r.channel <> 'email', r.total <= $2::int"              \
    " FROM fairq.recipient_chunks c"                                                               \
    " JOIN fairq.requests r ON r.id = c.request_id"                                                \
    " WHERE c.request_id = $1 ORDER BY c.chunk_no LIMIT 1"                                         \
    " FOR UPDATE OF c"

//  The split's reads of a request, which its first round trip makes:
//  its templates, its first chunk left (locked) and that chunk's
//  suppressed addresses, as three steps kept for their results, and the
//  parameters the steps point to.
typedef struct {
    fq_buf_t ids; //  The templates' parameter: {request}
    const char *ids_param;
    char small[FQ_STORE_INT_TEXT];
    const char *take[2], *one[1];
    fq_store_step_t steps[3]; //  Templates, chunk, suppressed
} s_reads_t;

//  Makes the reads of request (request_id its text, which must outlive
//  them); the caller frees reads->ids. Returns 0 or a code.
static int s_reads_make(fq_store_t *self, const int64_t *request, const char *request_id,
                        s_reads_t *reads)
{
    int rc =
        fq_store_templates_step(self, request, 1, &reads->ids, &reads->ids_param, &reads->steps[0]);
    if (rc)
        return rc;
    snprintf(reads->small, sizeof reads->small, "%d", S_INSERT_TOTAL_MAX);
    reads->take[0] = request_id;
    reads->take[1] = reads->small;
    reads->one[0] = request_id;
    reads->steps[1] = (fq_store_step_t){.sql = S_TAKE_SQL,
                                        .nparams = 2,
                                        .params = reads->take,
                                        .wanted = PGRES_TUPLES_OK,
                                        .what = "read recipients",
                                        .keep = true};
    reads->steps[2] = (fq_store_step_t){.sql = S_SUPPRESSED_SQL,
                                        .nparams = 1,
                                        .params = reads->one,
                                        .wanted = PGRES_TUPLES_OK,
                                        .what = "read suppressed recipients",
                                        .keep = true};
    return 0;
}

//  Opens the split's transaction and reads, in one pipeline: the
//  leader's fence (when this connection has an epoch), then the reads
//  (s_reads_make): the request's templates into *templates, the first
//  chunk left and its suppressed addresses. Returns 1 with the chunk, 0
//  when none is left, or a negative code (the transaction is left for the
//  caller to roll back).
static int s_begin(fq_store_t *self, int64_t request, const char *request_id, s_chunk_t *chunk,
                   s_suppressed_t *suppressed, fq_request_templates_t *templates)
{
    s_reads_t reads = {0};
    int rc = s_reads_make(self, &request, request_id, &reads);
    if (rc) {
        fq_buf_free(&reads.ids);
        return rc;
    }
    const char *fence[] = {fq_store_fence(self)};
    fq_store_step_t steps[5];
    size_t n = 0;
    steps[n++] =
        (fq_store_step_t){.sql = "BEGIN", .wanted = PGRES_COMMAND_OK, .what = "begin split"};
    if (fence[0])
        steps[n++] = (fq_store_step_t){.sql = "SELECT fairq.fence($1::bigint)",
                                       .nparams = 1,
                                       .params = fence,
                                       .wanted = PGRES_TUPLES_OK,
                                       .what = "check the leader's epoch"};
    size_t read = n, taken = n + 1;
    for (size_t i = 0; i < 3; i++)
        steps[n++] = reads.steps[i];
    rc = fq_store_pipeline(self, steps, n);
    fq_buf_free(&reads.ids);
    if (rc)
        return rc;
    int found = fq_store_templates_read(self, steps[read].res, templates);
    PGresult *res = steps[taken].res;
    if (found <= 0) {
        PQclear(res);
        PQclear(steps[taken + 1].res);
        return found < 0
                   ? found
                   : fq_store_fail(self, FQ_ENOTFOUND, "request %s does not exist", request_id);
    }
    if (PQntuples(res) == 0) {
        PQclear(res);
        PQclear(steps[taken + 1].res);
        return 0;
    }
    chunk->chunk_no = fq_store_int64(res, 0, 0);
    chunk->first_position = fq_store_int64(res, 0, 1);
    chunk->tenant_id = fq_store_int64(res, 0, 2);
    chunk->cancelled = PQgetvalue(res, 0, 3)[0] == 't';
    chunk->key_only = PQgetvalue(res, 0, 5)[0] == 't';
    chunk->small = PQgetvalue(res, 0, 6)[0] == 't';
    //  Each recipient's "fields" is copied as the server's own text (see
    //  s_rows_add); the chunk is read whole, as one value, which costs the
    //  server less than cutting it into rows
    chunk->recipients = res;
    rc = s_suppressed_take(self, steps[taken + 1].res, suppressed);
    return rc ? rc : 1;
}

//  ---------------------------------------------------------------------
//  The rows

//  Where a chunk's message rows go: streamed with COPY as they come, or
//  gathered as array literals for one INSERT (a small request's).
typedef struct {
    fq_store_t *store;
    bool insert;
    fq_buf_t copy;                             //  COPY rows not sent yet
    char prefix[S_ROW_PREFIX_SIZE];            //  Each COPY row's ids
    size_t prefix_size;                        //
    fq_buf_t destinations, recipients, fields; //  The INSERT's arrays
    int count;
} s_rows_t;

//  Starts the rows of chunk of request_id: COPY begins now unless they go
//  by INSERT. Returns 0 or a code.
static int s_rows_start(s_rows_t *rows, fq_store_t *store, const char *request_id,
                        const s_chunk_t *chunk)
{
    *rows = (s_rows_t){.store = store, .insert = chunk->small};
    rows->prefix_size = (size_t)snprintf(rows->prefix, sizeof rows->prefix, "%s\t%lld\t",
                                         request_id, (long long)chunk->tenant_id);
    if (rows->insert)
        return 0;
    PGresult *res = PQexec(store->conn, "COPY fairq.messages (request_id, tenant_id, destination,"
                                        " recipient, fields) FROM STDIN");
    int rc = fq_store_check(store, res, PGRES_COPY_IN, "start COPY of messages");
    if (rc == 0)
        PQclear(res);
    return rc;
}

//  Adds a message row: its destination, its address (to, to_size bytes)
//  and its fields as the server wrote them (fields, fields_size bytes).
//  Returns 0, -1 when memory runs out, or FQ_EDB when COPY data could not
//  be sent.
static int s_rows_add(s_rows_t *rows, const char *destination, const char *to, size_t to_size,
                      const char *fields, size_t fields_size)
{
    const char *separator = rows->count++ ? "," : "{";
    if (rows->insert)
        return fq_buf_add_str(&rows->destinations, separator) |
               fq_store_array_text(&rows->destinations, destination) |
               fq_buf_add_str(&rows->recipients, separator) |
               fq_store_array_text_n(&rows->recipients, to, to_size) |
               fq_buf_add_str(&rows->fields, separator) |
               fq_store_array_text_n(&rows->fields, fields, fields_size);
    //  A destination's name needs no COPY escaping (0016: a-z 0-9 _ . -)
    fq_buf_t *copy = &rows->copy;
    int mem = fq_buf_add(copy, rows->prefix, rows->prefix_size) |
              fq_buf_add_str(copy, destination) | fq_buf_add_char(copy, '\t') |
              fq_store_copy_text(copy, to, to_size) | fq_buf_add_char(copy, '\t') |
              fq_store_copy_text(copy, fields, fields_size) | fq_buf_add_char(copy, '\n');
    if (mem)
        return -1;
    if (copy->size >= S_COPY_FLUSH_BYTES) {
        bool sent = PQputCopyData(rows->store->conn, copy->data, (int)copy->size) == 1;
        copy->size = 0;
        if (!sent)
            return FQ_EDB;
    }
    return 0;
}

//  Ends the rows: COPY sends the rest and ends (failed when rc is not 0);
//  the INSERT's arrays are closed. Returns rc, or the code of what failed
//  now.
static int s_rows_end(s_rows_t *rows, int rc)
{
    fq_store_t *store = rows->store;
    if (rows->insert) {
        if (rc == 0 && rows->count &&
            (fq_buf_add_char(&rows->destinations, '}') | fq_buf_add_char(&rows->recipients, '}') |
             fq_buf_add_char(&rows->fields, '}')))
            rc = FQ_ENOMEM;
        return rc;
    }
    if (rc == 0 && rows->copy.size &&
        PQputCopyData(store->conn, rows->copy.data, (int)rows->copy.size) != 1)
        rc = FQ_EDB;
    //  End the COPY either way, so the connection is usable again
    if (PQputCopyEnd(store->conn, rc ? "fairq split failed" : NULL) != 1)
        rc = rc ? rc : FQ_EDB;
    PGresult *res = PQgetResult(store->conn);
    int end = fq_store_check(store, res, PGRES_COMMAND_OK, "COPY messages");
    if (end == 0)
        PQclear(res);
    while ((res = PQgetResult(store->conn)))
        PQclear(res);
    //  A failure of this side's (out of memory, a bad chunk) is said by
    //  the caller; one of the connection's by the server's message, if any
    if (rc == FQ_EDB)
        return end ? end
                   : fq_store_fail(store, rc, "could not COPY messages: %s",
                                   PQerrorMessage(store->conn));
    return rc ? rc : end;
}

static void s_rows_free(s_rows_t *rows)
{
    fq_buf_free(&rows->copy);
    fq_buf_free(&rows->destinations);
    fq_buf_free(&rows->recipients);
    fq_buf_free(&rows->fields);
}

//  Writes each good recipient of chunk as a message row, with its
//  destination (noted in seen); collects the others as rejects, the
//  suppressed ones among them (reason "suppressed"). Returns 0 or a code.
static int s_write_rows(s_rows_t *rows, const char *request_id, const s_chunk_t *chunk,
                        const fq_recipient_rules_t *rules,
                        const fq_split_destinations_t *destinations,
                        const s_suppressed_t *suppressed, s_seen_t *seen, s_rejects_t *rejects,
                        fq_split_result_t *result)
{
    int rc = 0;
    bool bad_chunk = false;
    fq_recipients_scan_t scan;
    fq_recipients_scan_start(&scan, PQgetvalue(chunk->recipients, 0, S_CHUNK_RECIPIENTS),
                             (size_t)PQgetlength(chunk->recipients, 0, S_CHUNK_RECIPIENTS));
    const char *element;
    size_t size;
    for (int64_t position = chunk->first_position;
         rc == 0 && (element = fq_recipients_scan_next(&scan, &size)); position++) {
        char reason[FQ_RECIPIENT_REASON_SIZE];
        json_t *recipient;
        const char *problem =
            fq_recipient_read(element, size, rules, &recipient, reason, sizeof reason);
        const char *to = fq_recipient_to(recipient, NULL);
        if (problem) {
            rc = s_rejects_add(rejects, position, to, problem);
            result->rejected++;
        } else if (!rules->key_only && s_is_suppressed(suppressed, to)) {
            rc = s_rejects_add(rejects, position, to, FQ_STORE_REJECT_SUPPRESSED);
            result->rejected++;
            result->suppressed++;
        } else {
            //  A key is no address: another channel's messages go to the
            //  request's one destination (fixed) or "default"
            const char *destination = rules->key_only && !(destinations && destinations->fixed)
                                          ? FQ_STORE_DESTINATION_DEFAULT
                                          : s_destination_of(destinations, recipient);
            size_t to_size = 0;
            to = fq_recipient_to(recipient, &to_size);
            json_t *fields = json_object_get(recipient, "fields");
            size_t fields_size = 2;
            const char *fields_text = json_is_object(fields)
                                          ? fq_recipient_fields_text(element, size, &fields_size)
                                          : "{}";
            if (!fields_text)
                bad_chunk = true; //  Not in jsonb output text: cannot happen
            else if (s_seen_add(seen, destination))
                rc = -1;
            else
                rc = s_rows_add(rows, destination, to, to_size, fields_text, fields_size);
            result->split++;
        }
        json_decref(recipient);
        if (bad_chunk && rc == 0)
            rc = FQ_EINVAL;
    }
    if (scan.malformed && rc == 0)
        rc = FQ_EINVAL;
    if (rc == -1)
        rc = FQ_ENOMEM;
    rc = s_rows_end(rows, rc);
    if (rc == FQ_ENOMEM)
        return fq_store_fail(rows->store, rc, "out of memory");
    if (rc == FQ_EINVAL)
        return fq_store_fail(rows->store, rc,
                             "could not read recipients of request %s: not a JSON array",
                             request_id);
    return rc;
}

//  ---------------------------------------------------------------------
//  The writes and the commit: one round trip

//  Every write of a split but its rejects, in one statement (each
//  statement is parsed and planned anew, and on a busy server each is a
//  wait): a small request's message rows ($6 its tenant, $7 to $9 the
//  arrays of their destinations, recipients and fields in the recipients'
//  order, which their ids follow as with COPY; NULL when they went by
//  COPY), the destinations the chunk reached ($10: the scheduler's list
//  of lanes to page the request in after a restart), and the chunk's
//  deletion and the request's counters and status, in the same
//  transaction as its messages: $1 the request, $2 the chunk, $3 and $4
//  the rows split and rejected, $5 whether a chunk was taken. Answers the
//  chunks left, and the ids of the rows inserted grouped by destination
//  in the order of $10 (ascending within each), with each one's place in
//  $10 (counted from 1) beside it.
#define S_WRITE_SQL                                                                                \
    "WITH inserted AS (INSERT INTO fairq.messages"                                                 \
    "  (request_id, tenant_id, destination, recipient, fields)"                                    \
    "  SELECT $1, $6, d, r, f::jsonb FROM unnest($7::text[], $8::text[], $9::text[])"             \
    "   WITH ORDINALITY AS u(d, r, f, n) ORDER BY n RETURNING id, destination),"                   \
    " reached AS (INSERT INTO fairq.request_destinations (request_id, destination)"                \
    "  SELECT $1, unnest($10::text[]) ON CONFLICT DO NOTHING),"                                    \
    " gone AS (DELETE FROM fairq.recipient_chunks"                                                 \
    "              WHERE request_id = $1 AND chunk_no = $2 AND $5::boolean RETURNING 1),"          \
    " left_over AS (SELECT count(*) - (SELECT count(*) FROM gone) AS n"                            \
    "               FROM fairq.recipient_chunks WHERE request_id = $1),"                           \
    " updated AS (UPDATE fairq.requests r SET split = split + $3::int,"                            \
    "  rejected = rejected + $4::int, updated_at = now(),"                                         \
    "  status = CASE WHEN r.status IN ('accepted', 'splitting')"                                   \
    "                THEN (CASE WHEN (SELECT n FROM left_over) > 0 THEN 'splitting'"               \
    "                           WHEN split + $3::int = 0 THEN 'done'"                              \
    "                           ELSE 'active' END)::fairq.request_status"                          \
    "                ELSE r.status END,"                                                           \
    /* A request that ends here (every recipient rejected) is finished */                          \
    /* now, so that retention finds it */                                                          \
    "  finished_at = CASE WHEN r.status IN ('accepted', 'splitting')"                              \
    "                      AND (SELECT n FROM left_over) = 0 AND split + $3::int = 0"              \
    "                     THEN now() ELSE r.finished_at END"                                       \
    " WHERE r.id = $1"                                                                             \
    " RETURNING r.id, r.tenant_id, r.status, r.webhook_id,"                                        \
    "  (SELECT n FROM left_over) AS n),"                                                           \
    /* This split its last chunk: the request's events (0018), with it */                          \
    /* (done too when every recipient was rejected) */                                             \
    " evented AS (INSERT INTO fairq.event_rows (tenant_id, request_id, type)"                      \
    "  SELECT tenant_id, id, e.type FROM updated,"                                                 \
    "   unnest(ARRAY['request.split', 'request.done']::fairq.event_type[]) AS e(type)"             \
    "  WHERE n = 0 AND EXISTS (SELECT 1 FROM gone) AND webhook_id IS NULL"                         \
    "   AND (e.type = 'request.split' OR status = 'done')),"                                       \
    " placed AS (SELECT id, array_position($10::text[], destination) AS place FROM inserted)"      \
    " SELECT n, (SELECT array_agg(id ORDER BY place, id) FROM placed),"                            \
    "  (SELECT array_agg(place ORDER BY place, id) FROM placed) FROM updated"

//  What the writes need, kept alive until their round trip.
typedef struct {
    const char *request_id;
    const s_chunk_t *chunk;
    bool taken;
    const s_rows_t *rows;
    s_rejects_t *rejects;
    const s_seen_t *seen;
    fq_buf_t *written; //  NULL, or the destinations written, comma-separated
} s_writes_t;

//  Reads an array of positive integers (text) into values, at most max;
//  returns how many, or -1 when text is not such an array.
static int s_int_array(const char *text, int64_t *values, int max)
{
    int count = 0;
    const char *at = text;
    if (*at++ != '{')
        return -1;
    while (*at && *at != '}') {
        char *end;
        long long value = strtoll(at, &end, 10);
        if (end == at || value <= 0 || count == max)
            return -1;
        values[count++] = value;
        at = end + (*end == ',');
    }
    return *at == '}' && at[1] == 0 ? count : -1;
}

//  Takes the ids the write answered (ids_text), grouped by destination,
//  and each one's destination as its place among those seen, from 1
//  (places_text), into result. Anything but what was asked for (a count
//  that is not the rows', places out of order or out of range, ids not
//  ascending within a destination) leaves result without ids: the
//  scheduler then pages them.
static void s_ids_take(const char *ids_text, const char *places_text, int rows,
                       const s_seen_t *seen, fq_split_result_t *result)
{
    int64_t places[FQ_STORE_SPLIT_IDS_MAX];
    int count = s_int_array(ids_text, result->ids, FQ_STORE_SPLIT_IDS_MAX);
    if (count != rows || s_int_array(places_text, places, FQ_STORE_SPLIT_IDS_MAX) != count)
        return;
    for (size_t k = 0; k < seen->count; k++)
        result->id_counts[k] = 0;
    for (int i = 0; i < count; i++) {
        bool same = i > 0 && places[i] == places[i - 1];
        if (places[i] > (int64_t)seen->count || (i > 0 && places[i] < places[i - 1]) ||
            (same && result->ids[i] <= result->ids[i - 1]))
            return;
        result->id_counts[places[i] - 1]++;
    }
    result->nids = count;
    result->nid_counts = (int)seen->count;
}

//  Writes the rejects, then the rows of a small request, the
//  destinations and the request's counters (S_WRITE_SQL), and commits, in
//  one pipeline. Returns 0 with result->last set (and the ids of a
//  request split whole), or a code (the transaction is left for the
//  caller to roll back).
static int s_write_and_commit(fq_store_t *self, const s_writes_t *w, fq_split_result_t *result)
{
    char tenant[FQ_STORE_INT_TEXT], chunk_no[FQ_STORE_INT_TEXT], split[FQ_STORE_INT_TEXT],
        rejected[FQ_STORE_INT_TEXT];
    snprintf(tenant, sizeof tenant, "%lld", (long long)w->chunk->tenant_id);
    snprintf(chunk_no, sizeof chunk_no, "%lld", (long long)w->chunk->chunk_no);
    snprintf(split, sizeof split, "%d", result->split);
    snprintf(rejected, sizeof rejected, "%d", result->rejected);
    fq_buf_t names = {0};
    if ((w->rejects->count && s_rejects_end(w->rejects)) ||
        (w->seen->count && s_seen_names(w->seen, &names, w->written))) {
        fq_buf_free(&names);
        return fq_store_fail(self, FQ_ENOMEM, "out of memory");
    }
    const s_rows_t *rows = w->rows;
    bool insert = rows->insert && rows->count;
    const char *rejects[] = {w->request_id, w->rejects->positions.data, w->rejects->addresses.data,
                             w->rejects->reasons.data};
    const char *write[] = {w->request_id,
                           chunk_no,
                           split,
                           rejected,
                           w->taken ? "true" : "false",
                           tenant,
                           insert ? rows->destinations.data : NULL,
                           insert ? rows->recipients.data : NULL,
                           insert ? rows->fields.data : NULL,
                           w->seen->count ? names.data : NULL};
    fq_store_step_t steps[3];
    size_t n = 0;
    if (w->rejects->count)
        steps[n++] = (fq_store_step_t){.sql = S_REJECTS_SQL,
                                       .nparams = 4,
                                       .params = rejects,
                                       .wanted = PGRES_COMMAND_OK,
                                       .what = "record rejected recipients"};
    size_t written = n;
    steps[n++] = (fq_store_step_t){.sql = S_WRITE_SQL,
                                   .nparams = 10,
                                   .params = write,
                                   .wanted = PGRES_TUPLES_OK,
                                   .what = "write split messages",
                                   .keep = true};
    steps[n++] =
        (fq_store_step_t){.sql = "COMMIT", .wanted = PGRES_COMMAND_OK, .what = "commit split"};
    int rc = fq_store_pipeline(self, steps, n);
    fq_buf_free(&names);
    if (rc)
        return rc;
    PGresult *res = steps[written].res;
    result->last = PQntuples(res) == 1 && fq_store_int64(res, 0, 0) == 0;
    //  The request's one chunk, its first and last: these are all its rows
    if (result->last && insert && w->chunk->first_position == 0 &&
        rows->count <= FQ_STORE_SPLIT_IDS_MAX && !PQgetisnull(res, 0, 1) && !PQgetisnull(res, 0, 2))
        s_ids_take(PQgetvalue(res, 0, 1), PQgetvalue(res, 0, 2), rows->count, w->seen, result);
    PQclear(res);
    return 0;
}

//  ---------------------------------------------------------------------
//  A split

//  fq_store_split_chunk_to's prepare: the fields it was given.
static int s_given_fields(const fq_request_templates_t *templates, fq_split_fields_t *fields,
                          char *error, size_t error_size, void *arg)
{
    (void)templates;
    (void)error;
    (void)error_size;
    *fields = *(const fq_split_fields_t *)arg;
    return 0;
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
    fq_split_fields_t fields = {required_fields, nrequired, nheader};
    return fq_store_split_chunk_with(self, request_id, s_given_fields, &fields, destinations,
                                     result);
}

int fq_store_split_warm(fq_store_t *self)
{
    //  Request 0 never exists (ids start at 1): every statement plans as
    //  for a real split, and finds nothing
    const int64_t none = 0;
    s_reads_t reads = {0};
    int rc = s_reads_make(self, &none, "0", &reads);
    if (rc == 0)
        rc = fq_store_pipeline(self, reads.steps, 3);
    for (size_t i = 0; rc == 0 && i < 3; i++)
        PQclear(reads.steps[i].res);
    fq_buf_free(&reads.ids);
    return rc;
}

int fq_store_split_chunk_with(fq_store_t *self, int64_t request_id, fq_split_prepare_fn *prepare,
                              void *arg, fq_split_destinations_t *destinations,
                              fq_split_result_t *result)
{
    *result = (fq_split_result_t){0};
    if (destinations)
        destinations->written.size = 0;
    char id[FQ_STORE_INT_TEXT];
    snprintf(id, sizeof id, "%lld", (long long)request_id);
    fq_request_templates_t templates = {0};
    s_chunk_t chunk = {0};
    s_suppressed_t suppressed = {0};
    s_rows_t rows = {0};
    s_seen_t seen = {0};
    s_rejects_t rejects = {0};
    int taken = s_begin(self, request_id, id, &chunk, &suppressed, &templates);
    int rc = taken < 0 ? taken : 0;
    fq_split_fields_t fields = {0};
    if (rc == 0) {
        char error[FQ_STORE_ERROR_SIZE] = "";
        rc = prepare(&templates, &fields, error, sizeof error, arg);
        if (rc)
            fq_store_fail(self, rc, "%s", error[0] ? error : fq_strerror(rc));
    }
    //  A channel other than mail names its recipients by keys
    fq_recipient_rules_t rules = {fields.names, fields.count, fields.nheader, chunk.key_only};
    if (rc == 0 && taken && !chunk.cancelled) {
        rc = s_rows_start(&rows, self, id, &chunk);
        if (rc == 0)
            rc = s_write_rows(&rows, id, &chunk, &rules, destinations, &suppressed, &seen, &rejects,
                              result);
    }
    if (rc == 0) {
        s_writes_t writes = {.request_id = id,
                             .chunk = &chunk,
                             .taken = taken > 0,
                             .rows = &rows,
                             .rejects = &rejects,
                             .seen = &seen,
                             .written = destinations ? &destinations->written : NULL};
        rc = s_write_and_commit(self, &writes, result);
    }
    if (rc)
        fq_store_rollback(self);
    fq_request_templates_free(&templates);
    s_suppressed_free(&suppressed);
    PQclear(chunk.recipients);
    s_rows_free(&rows);
    s_rejects_free(&rejects);
    free(seen.names);
    if (rc) {
        *result = (fq_split_result_t){0};
        if (destinations)
            destinations->written.size = 0;
    }
    return rc ? rc : taken;
}
