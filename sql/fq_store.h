/*  fq_store.h — fairq's PostgreSQL store: the one module that speaks SQL.

    One fq_store_t is one libpq connection, used by one thread. Every
    function returns 0 (or a count) on success and a negative fq error
    code on failure; fq_store_error() then holds a message in PostgreSQL's
    style ("could not apply acks: ..."). All SQL is parameterised.

    Message lifecycle (DESIGN §5): pending -> sent, or failed (retried at
    next_attempt_at) -> dead; cancelled. "In flight" is never written: a
    message handed to a sender stays pending until its ack, so after a
    crash everything not final is pending again and is sent again (at least
    once).
*/
#ifndef FQ_STORE_H
#define FQ_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct fq_store fq_store_t;

//  Connects with a libpq connection string ("" uses the PG* environment).
//  NULL on failure, with the reason in error.
fq_store_t *fq_store_new(const char *conninfo, char *error, size_t error_size);
void fq_store_destroy(fq_store_t **self_p);

//  The last error's message; never NULL.
const char *fq_store_error(fq_store_t *self);

//  True while the connection is up; fq_store_reconnect re-establishes it
//  (after a database restart). Returns 0 or FQ_EDB.
bool fq_store_connected(fq_store_t *self);
int fq_store_reconnect(fq_store_t *self);

//  Applies the migrations the database lacks, in one transaction, under an
//  advisory lock (two daemons starting at once apply them once). Returns
//  how many were applied, or FQ_ESCHEMA if the database's schema is newer
//  than this program's, or FQ_EDB.
int fq_store_migrate(fq_store_t *self);

//  The highest migration applied, 0 for an empty database.
int fq_store_schema_version(fq_store_t *self, int *version);

//  ---------------------------------------------------------------------
//  Tenants

typedef struct {
    const char *name;
    int weight;       //  0 keeps the current value (1 for a new tenant)
    int max_inflight; //  0 keeps the current value
    int submit_rate;  //  Submits per minute; 0 keeps, -1 removes the limit
} fq_tenant_spec_t;

//  Creates or updates a tenant. Returns 0 with its id, FQ_EINVAL (bad name
//  or limits, see the message) or FQ_EDB.
int fq_store_tenant_put(fq_store_t *self, const fq_tenant_spec_t *spec, int64_t *id);

//  ---------------------------------------------------------------------
//  Intake and splitting

typedef struct {
    const char *tenant;
    const char *from;
    const char *subject; //  Template
    const char *body;    //  Template
    bool body_is_html;
    const char *recipients_json; //  [{"to": "...", "fields": {...}}, ...]
    int64_t send_at;             //  Unix seconds; 0 = now
    int priority;
    int max_attempts;            //  0 = default (5)
    const char *idempotency_key; //  NULL = none
} fq_submit_t;

//  Submits a request through fairq.submit (the same function applications
//  call in their own transactions). A repeated idempotency key answers the
//  first request's id and creates nothing. Returns 0, FQ_EINVAL (bad
//  input: the message says what) or FQ_EDB.
int fq_store_submit(fq_store_t *self, const fq_submit_t *req, int64_t *request_id);

typedef struct {
    int64_t id;
    int64_t tenant_id;
    char *subject; //  Owned by the caller: free()
    char *body;
    bool body_is_html;
    int max_attempts;
} fq_request_templates_t;

//  Loads what the splitter needs to validate a request's recipients.
int fq_store_request_templates(fq_store_t *self, int64_t request_id, fq_request_templates_t *out);
void fq_request_templates_free(fq_request_templates_t *templates);

typedef struct {
    int split;    //  Message rows written
    int rejected; //  Recipients refused (listed in fairq.rejects)
    bool last;    //  No chunk left: the request is fully split
} fq_split_result_t;

//  Splits the next stored chunk of a request into message rows with COPY,
//  in one transaction with the chunk's deletion and the counters. A bad
//  recipient (missing "to", invalid address, CR or LF anywhere in it, a
//  field of a template missing, a field that is not a string, number or
//  boolean) is rejected alone, with its reason; the others go on.
//  required_fields are the fields the request's templates use. Returns 1
//  when a chunk was split, 0 when none was left, or a negative code.
int fq_store_split_chunk(fq_store_t *self, int64_t request_id, const char *const *required_fields,
                         size_t nrequired, fq_split_result_t *result);

//  ---------------------------------------------------------------------
//  Status writes, in batches: one transaction each

typedef struct {
    int64_t id;
    bool permanent;    //  A 5xx-like answer: dead at once
    const char *error; //  The sender's text, kept as last_error
} fq_nack_t;

typedef struct {
    int base_ms; //  First retry delay; doubles with each attempt
    int cap_ms;  //  Longest delay
} fq_retry_policy_t;

//  Marks messages sent. Acks for messages already final are ignored, so a
//  duplicate ack is harmless. Returns how many changed, or FQ_EDB (then
//  nothing did).
int fq_store_ack_batch(fq_store_t *self, const int64_t *ids, size_t count);

//  Records failed attempts: a permanent error, or the request's last
//  attempt, makes the message dead; otherwise it is failed until
//  next_attempt_at = now + a delay drawn between half and all of
//  min(cap, base * 2^(attempt-1)) (exponential backoff, equal jitter).
//  Returns how many changed, or FQ_EDB.
int fq_store_nack_batch(fq_store_t *self, const fq_nack_t *nacks, size_t count,
                        const fq_retry_policy_t *policy);

//  ---------------------------------------------------------------------
//  Paging for the scheduler; each query's cost is bounded by its limit,
//  not by the backlog

//  Ids of up to limit pending messages of a request after after_id, in id
//  order. Returns how many were written to ids.
int fq_store_next_ready(fq_store_t *self, int64_t request_id, int64_t after_id, int limit,
                        int64_t *ids);

typedef struct {
    int64_t id;
    int64_t request_id;
    int64_t tenant_id;
} fq_due_message_t;

//  Claims up to limit failed messages whose retry is due: their
//  next_attempt_at moves lease_s ahead, so a crash before the ack brings
//  them back then. Returns how many were written to out.
int fq_store_claim_due_retries(fq_store_t *self, int limit, int lease_s, fq_due_message_t *out);

typedef struct {
    int64_t id;
    int64_t tenant_id;
    int priority;
    int64_t scan_from;
} fq_due_request_t;

//  Unfinished requests (accepted, splitting, active) whose send_at has
//  come, oldest send_at first (the partial index holds only unfinished
//  requests, so the scan never touches finished history). Returns how many
//  were written to out.
int fq_store_due_requests(fq_store_t *self, int limit, fq_due_request_t *out);

#endif
