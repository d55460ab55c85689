/*  fq_store.h — fairq's PostgreSQL store: the one module that speaks SQL.

    One fq_store_t is one libpq connection, used by one thread. Every
    function returns 0 (or a count) on success and a negative fq error
    code on failure; fq_store_error() then holds a message in PostgreSQL's
    style ("could not apply acks: ..."). All SQL is parameterised.

    Message lifecycle: pending -> sent, or failed (retried at
    next_attempt_at) -> dead; cancelled. "In flight" is never written: a
    message handed to a sender stays pending until its ack, so after a
    crash everything not final is pending again and is sent again (at least
    once). docs/delivery.md tells the whole of it.

    The sections below follow the store's files, one topic each:
    connection and notifications (fq_store.c; the hot statements it
    keeps prepared, fq_store_prepared.c), migrations
    (fq_store_migrate.c), tenants and API tokens (fq_store_tenants.c),
    requests (fq_store_requests.c), messages: splitting
    (fq_store_split.c), paging and loading (fq_store_messages.c), acks
    and nacks (fq_store_acks.c), operator queries (fq_store_operator.c)
    and background jobs (fq_store_maintenance.c).
*/
#ifndef FQ_STORE_H
#define FQ_STORE_H

#include "fq_buf.h"
#include "fq_limits.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct fq_store fq_store_t;

//  Largest page of a list, a search, an error summary or a finishing batch.
#define FQ_STORE_PAGE_MAX 1000

//  Room for a request's channel and its NUL: the schema's
//  requests_channel_check takes 1..32 bytes (FQ_CHANNEL_NAME_MAX of
//  channels/fq_channel.h, which the store may not include).
#define FQ_STORE_CHANNEL_SIZE 33
//  Room for a destination's name (0016: 1 to 64 bytes) and its NUL.
#define FQ_STORE_DESTINATION_SIZE 65
//  The destination of every domain no other destination names.
#define FQ_STORE_DESTINATION_DEFAULT "default"

//  ---------------------------------------------------------------------
//  Connection

//  Connects with a libpq connection string ("" uses the PG* environment).
//  NULL on failure, with the reason in error.
fq_store_t *fq_store_new(const char *conninfo, char *error, size_t error_size);
//  The same, with name as the session's application_name (cut to 63
//  bytes) unless the connection string names one; fq_store_new's is
//  "fairq".
#define FQ_STORE_APPLICATION_NAME_SIZE 64
fq_store_t *fq_store_new_named(const char *conninfo, const char *name, char *error,
                               size_t error_size);
void fq_store_destroy(fq_store_t **self_p);

//  The last error's message; never NULL. It may quote the server's own
//  words (which name tables, columns, hosts and users): fit for a log,
//  not for an answer to a client.
const char *fq_store_error(fq_store_t *self);

//  When the last error came from the server: its SQLSTATE ("23514") and
//  the constraint it names ("requests_subject_check"); "" for the store's
//  own errors or when the server named none. For callers that answer in
//  their own words. Static for self's life, overwritten by the next error.
const char *fq_store_error_sqlstate(fq_store_t *self);
const char *fq_store_error_constraint(fq_store_t *self);

//  True while the connection is up: false once a statement found it cut
//  (a database restart, a broken network), even where libpq has not
//  noticed yet. fq_store_reconnect re-establishes it. Returns 0 or FQ_EDB.
bool fq_store_connected(fq_store_t *self);
int fq_store_reconnect(fq_store_t *self);

//  Checks, without a round trip, that an idle connection was not closed
//  by the server meanwhile (a database restart ends every session, and a
//  connection unused since then only finds out with its next statement).
//  Reads what the server sent, if anything; false when the connection is
//  gone, and fq_store_connected is false from then on.
bool fq_store_alive(fq_store_t *self);

//  The channel fairq.submit and every request change NOTIFY on.
#define FQ_STORE_REQUESTS_CHANNEL "fairq_requests"

//  LISTENs on channel with this connection (again after a reconnect).
int fq_store_listen(fq_store_t *self, const char *channel);

//  The connection's socket, to wait on for notifications (it changes with
//  each reconnect); -1 when not connected.
int fq_store_socket(fq_store_t *self);

//  Reads what the server sent without waiting and counts the notifications
//  received since the last call. The first max that name a request (their
//  payload is its id, as every fairq notification's is) go to requests,
//  *nrequests of them. Returns the count, or FQ_EDB when the connection is
//  lost.
int fq_store_notifications(fq_store_t *self, int64_t *requests, int max, int *nrequests);

//  ---------------------------------------------------------------------
//  Migrations

//  Applies the migrations the database lacks, in one transaction, under an
//  advisory lock (two daemons starting at once apply them once). Returns
//  how many were applied, or FQ_ESCHEMA if the database's schema is newer
//  than this program's, or FQ_EDB.
int fq_store_migrate(fq_store_t *self);

//  The highest migration applied, 0 for an empty database.
int fq_store_schema_version(fq_store_t *self, int *version);

//  ---------------------------------------------------------------------
//  Leadership (fq_store_leader.c): one leader among several fairqd, by a
//  lease on the one row of fairq.leader and an epoch that fences the
//  leader's writes (migration 0009 says why both).

//  The SQLSTATE of a fence that refused a stale leader's write.
#define FQ_STORE_SQLSTATE_DEPOSED "FQ001"

typedef struct {
    bool leading;                       //  The caller holds the lease now (renewed or taken over)
    int64_t epoch;                      //  The current epoch: the leader's fencing token
    char holder[FQ_LEADER_HOLDER_SIZE]; //  Who leads, as it names itself
    int64_t since_ms;                   //  When the current leader took over, Unix ms
    int ms_left; //  Of the current lease, by the database's clock; 0 when out
} fq_leader_t;

//  Renews holder's lease of lease_ms (it leads at epoch), or with epoch 0
//  takes it over if it has run out; answers who leads now in out. Returns
//  0 or FQ_EDB (FQ_EINVAL for a bad argument).
int fq_store_lead(fq_store_t *self, const char *holder, int64_t epoch, int lease_ms,
                  fq_leader_t *out);

//  Gives holder's lease at epoch up at once (a clean stop), so that a
//  standby need not wait for it to run out. Returns 0 or FQ_EDB.
int fq_store_resign(fq_store_t *self, const char *holder, int64_t epoch);

//  Makes every leader-only statement of this connection (splits, the
//  dispatcher's loads, acks and nacks, claims of due retries, the reaper's
//  writes) carry epoch: the database then refuses each with FQ_EDEPOSED
//  once another fairqd has taken over (fairq.fence, or for loads, acks and
//  nacks fairq.check_epoch: migration 0009). 0, the default, fences
//  nothing (tools and tests).
void fq_store_set_epoch(fq_store_t *self, int64_t epoch);

//  ---------------------------------------------------------------------
//  Tenants and their API tokens. A tenant's live figures come from the
//  counters of its unfinished requests (never from counting messages).
//  What is in flight is known to the scheduler only, not to the store.

//  What a tenant created without a value gets (fairqd's tenant_* keys);
//  0 in a field: the store's own default (weight 1, max_inflight 1000,
//  no submit rate).
typedef struct {
    int weight;
    int max_inflight;
    int submit_rate; //  Submits per minute; 0: no limit
} fq_tenant_defaults_t;

typedef struct {
    const char *name;
    int weight;       //  0 keeps the current value (a new tenant: the default)
    int max_inflight; //  0 keeps the current value (a new tenant: the default)
    int submit_rate;  //  Submits per minute; 0 keeps (a new tenant: the default), -1 no limit
    fq_tenant_defaults_t defaults; //  For a new tenant
    //  The default signing secret of its http requests (migration 0015,
    //  "whsec_..." as the caller checked it): NULL keeps the current one
    //  (a new tenant: none), "" removes it
    const char *signing_secret;
    //  Its send rate (migration 0017): send_rate_count messages per
    //  send_rate_period_s (1, 60, 3600 or 86400). A count of 0 keeps the
    //  current rate (a new tenant: none), -1 (any negative) removes it,
    //  above 0 sets both
    int64_t send_rate_count;
    int send_rate_period_s;
    //  Messages it may have handed to senders in a UTC day (0017): 0 keeps
    //  (a new tenant: none), -1 (any negative) removes it, above 0 sets it
    int64_t daily_quota;
    //  Its requests' default of one-click unsubscribe (0021): 0 keeps (a
    //  new tenant: off), above 0 on, below 0 off
    int unsubscribe;
} fq_tenant_spec_t;

//  Creates or updates a tenant. Returns 0 with its id, FQ_EINVAL (bad name
//  or limits, see the message) or FQ_EDB.
int fq_store_tenant_put(fq_store_t *self, const fq_tenant_spec_t *spec, int64_t *id);

typedef struct {
    int64_t id;
    char name[FQ_TENANT_NAME_SIZE]; //  At most FQ_TENANT_NAME_MAX bytes (the schema's check)
    int weight;
    int max_inflight;
    int submit_rate;          //  Submits per minute; 0 = unlimited
    int64_t open_requests;    //  Accepted, splitting, active or paused
    int64_t depth;            //  Pending + failed messages
    int64_t failed;           //  Of depth, waiting for a retry
    int64_t unsplit;          //  Recipients not yet split into messages
    int64_t oldest_pending_s; //  Age of the oldest unfinished request; 0 = none
    bool signing_secret_set;  //  It has a default signing secret (never read back)
    int64_t send_rate_count;  //  Its send rate (0017): messages per send_rate_period_s; 0 = none
    int send_rate_period_s;   //  1, 60, 3600 or 86400; 0 = none
    int64_t daily_quota;      //  Messages a UTC day; 0 = none
    int64_t sent_today;       //  Of its quota, used today (UTC) as the leader last wrote it
    bool unsubscribe;         //  Its requests' default of one-click unsubscribe (0021)
    //  Age of its oldest message due now, not paused, held nor backing off
    //  (0024's fairq.tenant_oldest_due); 0 = none
    int64_t oldest_due_s;
    int64_t held; //  1 while an operator's hold of it stands (0024), else 0
} fq_tenant_info_t;

//  One tenant by name. Returns 0, FQ_ENOTFOUND or FQ_EDB.
int fq_store_tenant_get(fq_store_t *self, const char *name, fq_tenant_info_t *out);

typedef struct {
    fq_tenant_info_t *rows; //  Owned by the caller: fq_tenant_list_free
    size_t count;
} fq_tenant_list_t;

//  Every tenant, by name. Returns how many, or a negative code.
int fq_store_tenant_list(fq_store_t *self, fq_tenant_list_t *list);
void fq_tenant_list_free(fq_tenant_list_t *list);

//  A tenant's name by id, into name (FQ_TENANT_NAME_SIZE bytes). Returns
//  0, FQ_ENOTFOUND or FQ_EDB.
int fq_store_tenant_name(fq_store_t *self, int64_t tenant_id, char name[FQ_TENANT_NAME_SIZE]);

//  A tenant's id by name. Returns 0, FQ_ENOTFOUND or FQ_EDB.
int fq_store_tenant_id(fq_store_t *self, const char *name, int64_t *tenant_id);

//  A tenant's submit rate, one token bucket in the database that every
//  fairqd shares (migration 0010 says why): it holds up to rate tokens, a
//  minute's worth, and gains rate/60 a second, so a tenant may submit its
//  whole minute at once and then its rate on average, never more than
//  twice its rate in any minute, however many fairqd serve it. Times are
//  the database's.

//  Takes one token of tenant_id's bucket for rate (> 0) submits per
//  minute: *retry_after_s is 0 when it took one, otherwise the whole
//  seconds (1..60) until one is back. Returns 0, FQ_EINVAL (a rate not
//  above 0, an unknown tenant) or FQ_EDB.
int fq_store_take_submit_token(fq_store_t *self, int64_t tenant_id, int rate, int *retry_after_s);

//  Gives back the token a take got, when what it paid for did not happen
//  (a submit the database refused). Never fills the bucket past rate.
//  Returns 0 or FQ_EDB.
int fq_store_give_back_submit_token(fq_store_t *self, int64_t tenant_id, int rate);

//  Tokens of the HTTP API (api/API.md): only their SHA-256 is stored.

//  A token's text: "fq_", 43 characters of URL-safe base64 (32 random
//  bytes), and the NUL.
#define FQ_STORE_TOKEN_SIZE 47

//  Makes a new bearer token for tenant (NULL: an admin token), keeps only
//  its SHA-256 in fairq.api_tokens and writes the token itself, shown
//  this once, into token (FQ_STORE_TOKEN_SIZE bytes at least), and its id
//  (what revokes it) into *id unless id is NULL. Returns 0, FQ_ENOTFOUND
//  (no such tenant), FQ_EINVAL (token_size too small) or FQ_EDB.
int fq_store_token_create(fq_store_t *self, const char *tenant, char *token, size_t token_size,
                          int64_t *id);

typedef struct {
    int64_t id;
    int64_t created_at; //  Unix seconds
} fq_token_info_t;

typedef struct {
    fq_token_info_t *rows; //  Owned by the caller: fq_token_list_free
    size_t count;
} fq_token_list_t;

//  The tokens of tenant (NULL: the admin tokens), oldest first: their ids
//  and ages, never the tokens. Returns how many, or a negative code.
int fq_store_token_list(fq_store_t *self, const char *tenant, fq_token_list_t *list);
void fq_token_list_free(fq_token_list_t *list);

//  Revokes token id of tenant (NULL: an admin token): calls with it answer
//  401 from now on. Returns 0, FQ_ENOTFOUND (no such token of that
//  tenant) or FQ_EDB.
int fq_store_token_revoke(fq_store_t *self, const char *tenant, int64_t id);

//  Whose token this is.
typedef struct {
    bool admin;                       //  An admin token: every tenant
    int64_t tenant_id;                //  A tenant's token: that tenant (0 for an admin)
    char tenant[FQ_TENANT_NAME_SIZE]; //  Its name ("" for an admin)
    int submit_rate;                  //  Its submits per minute; 0 = unlimited
} fq_token_owner_t;

//  Looks a presented token up by its SHA-256. Returns 0, FQ_ENOTFOUND (no
//  such token; also for text that cannot be a token) or FQ_EDB.
int fq_store_token_lookup(fq_store_t *self, const char *token, fq_token_owner_t *owner);

//  ---------------------------------------------------------------------
//  Requests: intake and reads

//  Whether a request's mail carries one-click unsubscribe (migration
//  0021): as its tenant's default says when its messages are dispatched,
//  or on or off whatever the tenant says.
typedef enum {
    FQ_SUBMIT_UNSUBSCRIBE_TENANT = 0,
    FQ_SUBMIT_UNSUBSCRIBE_ON,
    FQ_SUBMIT_UNSUBSCRIBE_OFF,
} fq_submit_unsubscribe_t;

typedef struct {
    const char *tenant;
    const char *from;
    const char *subject; //  Template
    const char *body;    //  Template
    bool body_is_html;
    const char *recipients_json; //  [{"to": "...", "fields": {...}}, ...]
    size_t recipients_size;      //  Its length; 0: up to its NUL. A slice of a
                                 //  larger text (an HTTP body) needs no copy
    int64_t send_at;             //  Unix seconds; 0 = now
    int priority;
    int max_attempts;            //  0 = default (5)
    const char *idempotency_key; //  NULL = none
    //  The request's extra mail headers, a JSON object of names to string
    //  values as its caller checked them (mailheaders/fq_mail_headers.h);
    //  NULL: none. Written the same way for the same headers (sorted,
    //  compact), as it goes into the fingerprint as it is
    const char *headers_json;
    const char *reply_to; //  One address; NULL = none
    //  The plain-text alternative of an HTML body, a template of the
    //  body's grammar rendered without escaping; NULL = none. Only with
    //  body_is_html (fairq.submit_keyed refuses it otherwise: FQ_EINVAL)
    const char *text_body;
    //  The channel (migration 0015): NULL or "email" for mail. Another
    //  name makes the recipients' "to" keys, not addresses, and takes none
    //  of mail's fields (from, subject, html, headers, reply_to, text_body:
    //  NULL). "http" takes the http_ fields below and no body; another
    //  channel takes body, a template rendered as it is. fairq.submit_keyed
    //  checks what SQL can (FQ_EINVAL); the caller checks the rest
    //  (channels/fq_channel.h, fq_http_spec_problem)
    const char *channel;
    const char *http_method;
    const char *http_url; //  Template
    //  Its headers, a JSON object of names to value templates, written as
    //  headers_json is (sorted, compact); NULL: none
    const char *http_headers_json;
    const char *http_body;        //  Template; NULL: no body
    const char *http_body_format; //  "json" or "form"
    const char *signing_secret;   //  "whsec_..."; NULL: none (its tenant's, if any)
    //  One-click unsubscribe (migration 0021): mail only
    fq_submit_unsubscribe_t unsubscribe;
} fq_submit_t;

//  Submits a request through fairq.submit_keyed (the function behind
//  fairq.submit_json, which applications call in their own transactions,
//  and fairq.submit with the recipients as jsonb). With an idempotency
//  key, the request's fingerprint (fq_submit_t as fairq reads it: the same
//  request written with its fields in another order, or a default given
//  explicitly, has the same one) is kept with it, and a repeated key
//  answers the first request's id and creates nothing, if that request
//  had the same fingerprint or none (it was submitted before migration
//  0012, or in SQL). The recipients go to the server as they are, without
//  a copy of fairq's own (libpq's send buffer holds one). Returns 0 with a
//  new request's id, 1 with the id of the request the key named already,
//  FQ_ECONFLICT when the key named a request of another fingerprint
//  (nothing is created), FQ_EINVAL (bad input: the message says what) or
//  FQ_EDB. Every submit, of any channel, calls 0021's fairq.submit_keyed
//  (0015's 21 arguments, NULL for none, and unsubscribe): it needs schema
//  21. With unsubscribe on (its own, or its tenant's default) a request
//  may not give List-Unsubscribe or List-Unsubscribe-Post (FQ_EINVAL).
//  That function refuses headers the API would refuse as a set (more than
//  32 or 8 KiB, a name twice in any case, Reply-To among them: FQ_EINVAL).
int fq_store_submit(fq_store_t *self, const fq_submit_t *req, int64_t *request_id);

typedef struct {
    int64_t id;
    int64_t tenant_id;
    char *subject; //  Owned by the caller: free()
    char *body;
    bool body_is_html;
    int max_attempts;
    char *from_addr;   //  Owned by the caller: free()
    char *tenant;      //  The tenant's name; owned by the caller: free()
    int64_t due_at_ms; //  When it was due: max(created_at, send_at), Unix ms
    //  The extra headers of each message, by name, then its reply_to as
    //  "Reply-To" (migration 0013); of an http request, its headers (names
    //  and value templates, by name). Each string and both arrays owned by
    //  the caller (fq_request_templates_free). NULL arrays when none
    char **header_names;
    char **header_values;
    size_t nheaders;
    char *text_body; //  The plain-text alternative's template (0014); NULL: none. Owned
    //  Its channel (0015): "email", "http", ...; owned. Another channel
    //  than mail has from_addr "" and subject "" (body its template, but
    //  "" for http)
    char *channel;
    //  An http request's fields, NULL for another channel; owned
    char *http_method;
    char *http_url;
    char *http_body; //  NULL: no body
    char *http_body_format;
    //  What signs its messages: its own secret, else its tenant's as it is
    //  now (0015), or for a webhook's batch its endpoint's (0020); NULL:
    //  unsigned. Owned, and wiped when freed
    char *signing_secret;
    //  A webhook endpoint's previous secret while it still signs after a
    //  rotation (0020); NULL: none. Owned, and wiped when freed
    char *previous_secret;
    //  Whether its mail carries one-click unsubscribe (0021): its own
    //  unsubscribe, else its tenant's default as it is now; false for
    //  another channel. When true, headers hold no List-Unsubscribe nor
    //  List-Unsubscribe-Post of the request's own: fairq writes them
    bool unsubscribe;
} fq_request_templates_t;

//  Loads what the splitter needs to validate a request's recipients, and
//  the dispatcher to render its messages.
int fq_store_request_templates(fq_store_t *self, int64_t request_id, fq_request_templates_t *out);

//  Most requests in one fq_store_request_templates_many.
#define FQ_STORE_TEMPLATES_MAX 1000

//  The templates of the requests among ids (at most
//  FQ_STORE_TEMPLATES_MAX, each once) that exist, in one query: written to
//  out in id order, each owned by the caller (fq_request_templates_free).
//  Returns how many, or a negative code. A DISPATCH of messages from many
//  requests loads what it lacks in one round trip rather than one each.
int fq_store_request_templates_many(fq_store_t *self, const int64_t *ids, size_t count,
                                    fq_request_templates_t *out);
void fq_request_templates_free(fq_request_templates_t *templates);

//  A request and its counters (never counted from messages). Times are
//  Unix seconds, 0 for none.
typedef struct {
    int64_t id;
    int64_t tenant_id;
    char tenant[FQ_TENANT_NAME_SIZE];
    char status[16]; //  accepted, splitting, active, paused, done, cancelled, rejected
    int priority;
    int64_t total; //  = pending + failed + sent + dead + cancelled + rejected
    int64_t split;
    int64_t pending; //  Not yet sent, split or not; in flight included
    int64_t failed;  //  Waiting for a retry
    int64_t sent;
    int64_t dead;
    int64_t cancelled; //  Of a cancelled request: every recipient not sent, dead or rejected
    int64_t rejected;
    int64_t created_at;
    int64_t send_at;
    int64_t finished_at;
    char *headers;   //  Its extra mail headers as a JSON object's text ("{}": none)
    char *reply_to;  //  NULL: none
    char *text_body; //  Its plain-text alternative's template; NULL: none
    char channel[FQ_STORE_CHANNEL_SIZE]; //  "email", "http", ... (0015)
    //  An http request's fields as a JSON object's text: method, url,
    //  headers (an object), body (null: none), body_format, and signed
    //  (whether a secret, its own or its tenant's, signs its messages; the
    //  secret is never read back). NULL for another channel
    char *http;
    //  The webhook endpoint whose batch it is (0020); 0: none
    int64_t webhook_id;
} fq_request_info_t;

//  One request. Returns 0, FQ_ENOTFOUND, FQ_ENOMEM or FQ_EDB. What out
//  holds is the caller's to free with fq_request_info_free, whatever the
//  code.
int fq_store_request_get(fq_store_t *self, int64_t request_id, fq_request_info_t *out);

//  Frees the strings of a request read by the store; safe twice.
void fq_request_info_free(fq_request_info_t *request);

//  Whether a request in status can no longer change (done, cancelled,
//  rejected).
bool fq_request_status_finished(const char *status);

//  Whether name is a request status.
bool fq_request_status_valid(const char *name);

typedef struct {
    fq_request_info_t *rows; //  Owned by the caller: fq_request_list_free
    size_t count;
} fq_request_list_t;

//  Up to limit (1..FQ_STORE_PAGE_MAX) requests with an id below before
//  (0: from the newest), newest first, of tenant_id (0: any) in status
//  (NULL: any). Returns how many, FQ_EINVAL or FQ_EDB.
int fq_store_request_list(fq_store_t *self, int64_t tenant_id, const char *status, int64_t before,
                          int limit, fq_request_list_t *list);
void fq_request_list_free(fq_request_list_t *list);

//  The request req->tenant submitted with req->idempotency_key, if any, as
//  fq_store_submit would answer it, without submitting. Returns 0 with its
//  id when it is the same request (the same fingerprint, or none kept),
//  FQ_ECONFLICT with its id when it had another fingerprint, FQ_ENOTFOUND
//  (no such request, or no key) or FQ_EDB.
int fq_store_request_by_key(fq_store_t *self, const fq_submit_t *req, int64_t *request_id);

typedef struct {
    int position;          //  In the submitted array, from 0
    const char *recipient; //  NULL when it had no "to" text; points into the page
    const char *reason;    //  Points into the page
} fq_reject_t;

//  Rows and strings are one block, owned by the caller.
typedef struct {
    fq_reject_t *rows;
    size_t count;
} fq_reject_page_t;

//  Up to limit (1..FQ_STORE_PAGE_MAX) recipients of request_id the
//  splitter refused, with a position above after (-1: from the first), in
//  position order. Returns how many, or a negative code.
int fq_store_rejects(fq_store_t *self, int64_t request_id, int after, int limit,
                     fq_reject_page_t *page);
void fq_reject_page_free(fq_reject_page_t *page);

//  ---------------------------------------------------------------------
//  Messages: splitting a request into them, paging them for the scheduler
//  (each query's cost bounded by its limit, not by the backlog) and
//  loading what the dispatcher renders. The scheduler pages message ids
//  only (a few bytes per prefetched message); the dispatcher loads the rows
//  it is about to render in one query per batch of picks, just before
//  sending (docs/architecture.md).

//  The reason of a recipient refused at split because it is suppressed
//  (0019): its event is message.suppressed, not message.rejected.
#define FQ_STORE_REJECT_SUPPRESSED "suppressed"

//  Most message ids a split hands back (fq_split_result_t).
#define FQ_STORE_SPLIT_IDS_MAX 256

typedef struct {
    int split;      //  Message rows written
    int rejected;   //  Recipients refused (listed in fairq.rejects), suppressed ones too
    int suppressed; //  Of them, refused because a suppression list holds them
    bool last;      //  No chunk left: the request is fully split
    //  A request split whole by this one chunk (a small one, written by
    //  INSERT) of at most FQ_STORE_SPLIT_IDS_MAX messages: the ids of all
    //  its message rows, grouped by destination in the order of
    //  destinations->written (the first id_counts[0] ids are the first
    //  destination's, and so on; nid_counts of them, one per destination
    //  written), ascending within each, so that they need not be paged.
    //  nids is 0 for any other split.
    int nids, nid_counts;
    int64_t ids[FQ_STORE_SPLIT_IDS_MAX];
    int id_counts[FQ_STORE_SPLIT_IDS_MAX];
} fq_split_result_t;

//  Splits the next stored chunk of a request into message rows with COPY
//  (a request of at most 1,000 recipients: one INSERT), in one
//  transaction with the chunk's deletion and the counters. A bad
//  recipient (missing "to", invalid address, CR or LF anywhere in it, a
//  field of a template missing, a field that is not a string, number or
//  boolean, a field of the subject whose text holds CR, LF or NUL) is
//  rejected alone, with its reason; the others go on. So is a recipient
//  whose address its tenant's suppression list or the global one holds
//  (0019), with the reason FQ_STORE_REJECT_SUPPRESSED. A request of a
//  channel other than mail (0015) has recipient keys instead of
//  addresses (fq_recipient_key_problem). required_fields are the fields
//  the request's templates use, the subject's first: the first nheader of
//  them go into a mail header (an http request's: into its HTTP headers).
//  Returns 1 when a chunk was split, 0 when none was left, or a negative
//  code.
int fq_store_split_chunk(fq_store_t *self, int64_t request_id, const char *const *required_fields,
                         size_t nrequired, size_t nheader, fq_split_result_t *result);

//  Where split messages go (0016): each message row is stamped with its
//  destination as it is written, and the request's destinations are
//  recorded (fairq.request_destinations) in the same transaction.
typedef struct {
    //  The destination of a mail recipient's domain (lowercase), or NULL
    //  for "default". What it returns must last until the split returns;
    //  equal names are best the same pointer (they are told apart by it
    //  first).
    const char *(*of_domain)(const char *domain, void *arg);
    void *arg;
    //  Every message's destination when not NULL: an http request's host's
    //  (a URL's host is never a template), or another channel's
    const char *fixed;
    //  Out: the destinations written to, comma-separated; the caller frees
    fq_buf_t written;
} fq_split_destinations_t;

//  fq_store_split_chunk with each message's destination by destinations
//  (fq_store_split_chunk: every message's is "default").
int fq_store_split_chunk_to(fq_store_t *self, int64_t request_id,
                            const char *const *required_fields, size_t nrequired, size_t nheader,
                            fq_split_destinations_t *destinations, fq_split_result_t *result);

//  The fields every recipient of a request must have, the first nheader
//  of them going into a header (fq_store_split_chunk's required_fields).
typedef struct {
    const char *const *names;
    size_t count, nheader;
} fq_split_fields_t;

//  Works out a request's fields from its templates for
//  fq_store_split_chunk_with, and may set destinations->fixed; what it
//  points to must last until the split returns. Returns 0, or a negative
//  code with why in error (FQ_EINVAL: a template that does not parse).
typedef int fq_split_prepare_fn(const fq_request_templates_t *templates, fq_split_fields_t *fields,
                                char *error, size_t error_size, void *arg);

//  Readies a new connection for splitting: the split's first round trip
//  (templates, chunk, suppressed recipients) for no request, which reads
//  nothing, locks nothing and writes nothing. A new server session loads
//  what a statement reads into its caches as it first plans it, and that
//  cost 33 ms of the first small request's split on the splitter kept
//  for small requests (fq_bench_pipeline, with log_min_duration_statement).
//  Returns 0 or a code; a failure costs nothing but the warming.
int fq_store_split_warm(fq_store_t *self);

//  fq_store_split_chunk_to with the fields worked out by prepare from the
//  request's templates, which the split reads in its first round trip
//  with the chunk (rather than in one of their own before it). A request
//  that does not exist is FQ_ENOTFOUND; prepare's failure is the split's.
int fq_store_split_chunk_with(fq_store_t *self, int64_t request_id, fq_split_prepare_fn *prepare,
                              void *arg, fq_split_destinations_t *destinations,
                              fq_split_result_t *result);

//  Ids of up to limit pending messages of a request after after_id, in id
//  order. Returns how many were written to ids. Call fq_store_tune_paging
//  once per connection first (see there).
int fq_store_next_ready(fq_store_t *self, int64_t request_id, int64_t after_id, int limit,
                        int64_t *ids);

//  One request's page asked for by fq_store_next_ready_many.
typedef struct {
    int64_t request_id;
    int64_t after_id;
    int limit;
    //  Its messages of this destination only (0016), NULL for all of them.
    //  One query's asks all name one or all name none.
    const char *destination;
} fq_page_ask_t;

//  Most ids and asks in one fq_store_next_ready_many.
#define FQ_STORE_PAGE_IDS_MAX  16384
#define FQ_STORE_PAGE_ASKS_MAX 512

//  The pages of nasks requests in one statement, as fq_store_next_ready
//  would give each: ids holds them one after the other, counts[i] how many
//  belong to asks[i]. The sum of the limits is at most
//  FQ_STORE_PAGE_IDS_MAX, nasks at most FQ_STORE_PAGE_ASKS_MAX. Returns
//  the ids written, or a negative code. One round trip for many requests:
//  with 100,000 open requests of a few messages each, a page per request
//  was a round trip per few messages.
int fq_store_next_ready_many(fq_store_t *self, const fq_page_ask_t *asks, int nasks, int64_t *ids,
                             int *counts);

//  Makes this connection page by walking messages_request_idx in order.
//  The messages table grows by a million rows in seconds while its
//  statistics lag behind (autovacuum analyzes it a minute later), and the
//  planner, then believing few rows are pending, reads every pending row
//  of the request with a bitmap scan and sorts them to keep the first page:
//  measured 18 to 160 ms per page instead of 0.1 ms, which capped dispatch
//  at 8,000 msgs/s. Bitmap scans are turned off for each of this
//  connection's fq_store_next_ready, in that page's own transaction, not
//  for the session: a session's setting is not the statement's behind
//  PgBouncer in transaction pooling, and lingers for other clients there
//  (docs/operations.md). The setting goes with the page in one round trip,
//  with a second one: the page's generic plan, planned once rather than
//  at every page (planning took longer than the page itself).
//  Marks the store only (it lasts across reconnects); returns 0.
int fq_store_tune_paging(fq_store_t *self);

typedef struct {
    int64_t id;
    int64_t request_id;
    int64_t tenant_id;
    char channel[FQ_STORE_CHANNEL_SIZE];         //  Its request's
    char destination[FQ_STORE_DESTINATION_SIZE]; //  Its own (0016)
} fq_due_message_t;

//  Claims up to limit failed messages whose retry is due: their
//  next_attempt_at moves lease_s ahead, so a crash before the ack brings
//  them back then. Returns how many were written to out.
int fq_store_claim_due_retries(fq_store_t *self, int limit, int lease_s, fq_due_message_t *out);

//  Makes the retries claimed by a leader of an earlier epoch than this
//  store's (fq_store_set_epoch) due at once: that leader is gone, and its
//  claims would otherwise hold them back until their lease ends. A new
//  leader's scheduler calls it once as it starts. Returns how many, 0
//  without an epoch, or an error (FQ_EDEPOSED when deposed meanwhile).
int fq_store_release_stale_claims(fq_store_t *self);

typedef struct {
    int64_t id;
    int64_t tenant_id;
    int priority;
    int64_t scan_from;
    bool split_done;                     //  No recipients left to split
    int64_t total;                       //  Recipients submitted
    int weight;                          //  The tenant's
    int max_inflight;                    //  The tenant's
    char tenant[FQ_TENANT_NAME_SIZE];    //  The tenant's name, for the log
    char channel[FQ_STORE_CHANNEL_SIZE]; //  "email", "http", ...
    bool any_split;                      //  Some of its messages exist (in some destinations)
    int64_t split;                       //  Message rows made of its recipients so far
    bool split_at_submit;                //  By its submit (0028), not by a splitter
    //  The tenant's send budget (0017); 0: no limit
    int64_t send_rate_count; //  Messages per send_rate_period_s
    int send_rate_period_s;  //  1, 60, 3600 or 86400
    int64_t daily_quota;     //  Messages a UTC day
} fq_due_request_t;

//  Unfinished requests (accepted, splitting, active) whose send_at has
//  come, oldest send_at first (the partial index holds only unfinished
//  requests, so the scan never touches finished history). Returns how many
//  were written to out.
int fq_store_due_requests(fq_store_t *self, int limit, fq_due_request_t *out);

//  As fq_store_due_requests, only those scheduled for later than their
//  submit whose send_at came in the last since_ms: the scheduler's light
//  poll, for what no NOTIFY announces when its time comes.
int fq_store_due_requests_since(fq_store_t *self, int64_t since_ms, int limit,
                                fq_due_request_t *out);

//  The pending messages of a request split whole, after its cursor, as a
//  splitter names those of a small request it splits (SPLIT_DONE): their
//  ids grouped by destination (in name order, ascending within each), so
//  that the scheduler need not read its destinations and page them.
typedef struct {
    int64_t ids[FQ_STORE_SPLIT_IDS_MAX];
    int64_t id_counts[FQ_STORE_SPLIT_IDS_MAX]; //  Of each destination, in order
    int nids;                                  //  0: none read (page them)
    int ndestinations;
    fq_buf_t destinations; //  Comma-separated, in that order; the caller frees
} fq_due_messages_t;

//  The one request request_id if it is due as fq_store_due_requests finds
//  them: returns 1 with it in *out, 0 if it is not (finished, paused,
//  later, unknown), or an error. A primary-key lookup: the scheduler's
//  answer to the NOTIFY of a submit, with no full poll in between. When
//  messages is not NULL, the same query reads the request's messages
//  into it if it is split whole into 1 to max of them (at most
//  FQ_STORE_SPLIT_IDS_MAX): a request split at its submit (0028), which
//  the scheduler then takes in with one round trip; messages->nids is 0
//  when the request is not such, or has no pending message left.
int fq_store_due_request(fq_store_t *self, int64_t request_id, int max, fq_due_request_t *out,
                         fq_due_messages_t *messages);

//  A message as the dispatcher renders it. Strings point into the page.
typedef struct {
    int64_t id;
    int64_t request_id;
    int64_t tenant_id;
    const char *recipient;
    const char *fields; //  JSON object of the recipient's fields
    int try_count;      //  Attempts made before this one
    //  Its destination is a named one (0016), not "default": the scheduler
    //  adapts a named destination's budget to the receiver's deferrals
    bool named_destination;
    const char *destination; //  Its destination's name ("default" too), for the metrics
} fq_message_row_t;

//  Rows and strings are one block, owned by the caller.
typedef struct {
    fq_message_row_t *rows;
    size_t count;
} fq_message_rows_t;

//  Loads the messages among ids (at most FQ_STORE_LOAD_MAX) that are still
//  pending or failed, in no particular order: a message cancelled since it
//  was paged is left out, and the caller settles it unsent. A request
//  paused or rescheduled is the scheduler's to leave out, at its next poll.
//  Returns how many rows were loaded, or a negative code.
#define FQ_STORE_LOAD_MAX 10000
int fq_store_load_messages(fq_store_t *self, const int64_t *ids, size_t count,
                           fq_message_rows_t *out);

//  The templates a load asks for with its messages (fq_store_load_with):
//  of the requests among ids (at most FQ_STORE_TEMPLATES_MAX, each once),
//  as fq_store_request_templates_many loads them into out (room for
//  count), *loaded of them, each owned by the caller.
typedef struct {
    const int64_t *ids;
    size_t count;
    fq_request_templates_t *out;
    int loaded;
} fq_templates_ask_t;

//  fq_store_load_messages, and the templates of ask (NULL: none) in the
//  same round trip: the dispatcher's first load of a new request's
//  messages needs its templates too, and under a busy server each round
//  trip is a wait of its own. Returns as fq_store_load_messages does;
//  ask->loaded is set when it is not negative.
int fq_store_load_with(fq_store_t *self, const int64_t *ids, size_t count, fq_templates_ask_t *ask,
                       fq_message_rows_t *out);
void fq_message_rows_free(fq_message_rows_t *rows);

//  fq_store_next_ready_many with the rows themselves (as
//  fq_store_load_messages gives them, in the pages' order) instead of
//  their ids: the scheduler hands a page's rows to the dispatcher with its
//  picks, which then renders them without loading them again. Each row is
//  read from the heap tuple its status is read from anyway. Returns the
//  rows read, or a negative code; out is owned by the caller.
int fq_store_next_ready_rows(fq_store_t *self, const fq_page_ask_t *asks, int nasks,
                             fq_message_rows_t *out, int *counts);

//  ---------------------------------------------------------------------
//  Acks and nacks: status writes in batches, one transaction each

typedef struct {
    int64_t id;
    bool permanent;    //  A 5xx-like answer: dead at once
    const char *error; //  The sender's text, kept as last_error
    //  The receiver asked for no retry before this many seconds (HTTP's
    //  Retry-After); 0: no such wish
    uint32_t retry_after_s;
    //  Deferred by the receiver (throttling, or not reached): no attempt
    //  is counted and it never dies of it; it waits its back-off (or the
    //  Retry-After) as a failed message would
    bool deferred;
} fq_nack_t;

typedef struct {
    int base_ms; //  First retry delay; doubles with each attempt
    int cap_ms;  //  Longest delay
    //  The permanent failures that suppress their address for the tenant
    //  (0019, reason "bounce"): a PostgreSQL regular expression matched
    //  against the receiver's reply, from fq_store_bounce_pattern; NULL or
    //  "": none do
    const char *bounce_pattern;
} fq_retry_policy_t;

//  Room for the pattern of any list fq_store_bounce_pattern takes.
#define FQ_STORE_BOUNCE_PATTERN_SIZE 1024

//  The pattern of the replies that count as hard bounces, from a comma-
//  separated list of codes as operators write them: enhanced status codes
//  (RFC 3463, "5.1.1", found anywhere in the reply, as a whole code) and
//  basic reply codes ("550", the reply's first word). "" gives "" (none).
//  Returns 0, or FQ_EINVAL with problem (when not NULL) naming the code
//  that is not one, and what is.
int fq_store_bounce_pattern(const char *codes, char out[FQ_STORE_BOUNCE_PATTERN_SIZE],
                            char *problem, size_t problem_size);

//  Marks messages sent, each with its message.sent event (0018). Acks for
//  messages already final are ignored, so a duplicate ack is harmless.
//  Returns how many changed, or FQ_EDB (then nothing did).
int fq_store_ack_batch(fq_store_t *self, const int64_t *ids, size_t count);

//  As fq_store_ack_batch; with events false, no message.sent events are
//  written (fairqd's sent_events = false: a tenth of the ack's cost, for
//  deployments that read none).
int fq_store_ack_batch_events(fq_store_t *self, const int64_t *ids, size_t count, bool events);

//  Records failed attempts: a permanent error, or the request's last
//  attempt, makes the message dead (a permanent error the policy's
//  bounce_pattern matches also suppresses its address for its tenant,
//  0019); otherwise it is failed until
//  next_attempt_at = now + a delay drawn between half and all of
//  min(cap, base * 2^(attempt-1)) (exponential backoff, equal jitter),
//  or now + retry_after_s when that is later (the receiver's wish is
//  kept, beyond the cap too). Returns how many changed, or FQ_EDB.
int fq_store_nack_batch(fq_store_t *self, const fq_nack_t *nacks, size_t count,
                        const fq_retry_policy_t *policy);

//  ---------------------------------------------------------------------
//  Operator queries (their effect on delivery: docs/delivery.md, "Dead
//  messages" and "Cancel and pause"; how clients ask them: api/API.md)
//
//  Searching, cancelling, retrying and summarising messages; the lifecycle
//  of a request (cancel, pause, resume, reschedule). Every change to
//  messages updates the request counters (sent, failed, dead, cancelled)
//  in the same transaction, so a request's status never needs to count
//  its rows.
//
//  "In flight" is not a stored state. A message handed to a sender stays
//  pending until its ack or nack, so nothing is ever stranded "in flight"
//  in the database: after a crash everything not final is sent again. What
//  can be stranded are retries claimed by fq_store_claim_due_retries on a
//  node that then died: their next_attempt_at was pushed a lease ahead, and
//  they come back by themselves when it passes. fq_store_release_claims
//  brings them back at once.
//
//  Costs: the request, tenant, recipient and domain filters are served by
//  indexes. Status alone is not (no index may cover it, or the ack UPDATE
//  would stop being HOT): a search by status alone walks messages in id
//  order until it has found a page, and a change by filter costs as many
//  rows as the other filters select, which is why changes need one of them.

typedef enum {
    FQ_MESSAGE_ANY = 0, //  In a filter: any status
    FQ_MESSAGE_PENDING,
    FQ_MESSAGE_SENT,
    FQ_MESSAGE_FAILED,
    FQ_MESSAGE_DEAD,
    FQ_MESSAGE_CANCELLED
} fq_message_status_t;

//  The status's name as the database and the HTTP API spell it ("pending",
//  ..., "any" for FQ_MESSAGE_ANY); never NULL, static storage.
const char *fq_message_status_name(fq_message_status_t status);

//  Parses a status name (one of those above). Returns 0 or FQ_EINVAL.
int fq_message_status_parse(const char *name, fq_message_status_t *status);

//  Which messages an operator query applies to: every field set must match
//  (AND); 0, NULL or FQ_MESSAGE_ANY leave a field out. Strings are matched
//  literally (no wildcards: % and _ are plain characters) and belong to
//  the caller. A message, request or tenant named that does not exist makes
//  the query fail with FQ_ENOTFOUND; an empty string or a negative id with
//  FQ_EINVAL.
typedef struct {
    int64_t message_id;
    int64_t request_id;
    int64_t tenant_id;
    const char *tenant;         //  Tenant name; with tenant_id, both must match
    fq_message_status_t status; //  Alone it does not narrow a change enough
    const char *recipient;      //  Exact address, case-insensitive
    const char *domain;         //  The address's domain, case-insensitive
    const char *error;          //  Text last_error contains, case-insensitive
    //  A reply code ("550", an http status) or an RFC 3463 enhanced status
    //  code ("5.1.1") of last_error, as the error summary reads them
    const char *code;
    int64_t older_than_s; //  Created more than this many seconds ago; 0: any age
} fq_message_filter_t;

typedef struct {
    int64_t id;
    int64_t request_id;
    int64_t tenant_id;
    const char *recipient; //  Points into the page
    fq_message_status_t status;
    int try_count;
    int64_t next_attempt_at; //  Unix seconds; 0 = none
    int64_t last_attempt_at; //  Unix seconds; 0 = never attempted
    const char *last_error;  //  NULL = none; points into the page
} fq_message_info_t;

//  One page of a search: rows and the strings they point to are one block,
//  owned by the caller and freed with fq_message_page_free.
typedef struct {
    fq_message_info_t *rows;
    size_t count;
} fq_message_page_t;

//  Up to limit (1..FQ_STORE_PAGE_MAX) messages matching filter with an id
//  above after_id, in id order (keyset paging: pass the last id seen to get
//  the next page). The filter may be empty. Returns how many rows page
//  holds (0 at the end), FQ_EINVAL, FQ_ENOTFOUND, FQ_ENOMEM or FQ_EDB; on
//  failure page is empty.
int fq_store_search_messages(fq_store_t *self, const fq_message_filter_t *filter, int64_t after_id,
                             int limit, fq_message_page_t *page);
void fq_message_page_free(fq_message_page_t *page);

//  How the database would run that search: EXPLAIN (FORMAT JSON) of the
//  very statement fq_store_search_messages sends, with the same values.
//  For operators chasing a slow search, and for the tests that check each
//  filter is served by its index. *plan is the caller's, free() it.
//  Returns 0 or a code as for the search.
int fq_store_explain_search(fq_store_t *self, const fq_message_filter_t *filter, int64_t after_id,
                            int limit, char **plan);

//  Cancels the pending and failed messages matching filter, which must
//  name a message, request, tenant, recipient, domain, error or code
//  (status and age may narrow it further; FQ_EINVAL otherwise). Every
//  batch of fq_store_bulk_batch, each a transaction with the counters. A
//  message already handed to a sender may still be delivered: its ack is
//  then ignored. Returns how many were cancelled, or a negative code.
int fq_store_cancel_messages(fq_store_t *self, const fq_message_filter_t *filter);

//  Gives the dead messages matching filter one more attempt: they become
//  failed, due now (next_attempt_at = now), with try_count kept, so the
//  retry is claimed by fq_store_claim_due_retries and a message at its
//  last attempt is dead again after one more transient failure. A done
//  request gets active again (finished_at cleared); messages of cancelled
//  requests, and of requests being pruned, are left dead. filter needs a
//  narrowing field as for a cancel; status may be FQ_MESSAGE_ANY or
//  FQ_MESSAGE_DEAD only. Returns how many were retried, or a negative code.
int fq_store_retry_dead(fq_store_t *self, const fq_message_filter_t *filter);

//  ---------------------------------------------------------------------
//  Bulk actions by filter (fq_store_bulk.c): the same changes for as many
//  messages as a filter selects, a batch at a time. A batch first reads
//  the ids of at most batch messages past a cursor, in id order, with no
//  lock (however many rows the filter must step over to find them), then
//  changes those ids in one short transaction that locks only them; so a
//  change of millions never holds a lock while it searches, and acks,
//  nacks and the scheduler's paging go on between batches. The caller
//  loops, passing the cursor back, until a batch reports done.

typedef enum {
    FQ_BULK_CANCEL = 1, //  Pending and failed messages become cancelled
    FQ_BULK_RETRY,      //  Dead messages get one more attempt, now
    FQ_BULK_RESCHEDULE  //  Failed messages' next attempt moves to send_at
} fq_bulk_action_t;

//  Most messages one batch takes; FQ_STORE_BULK_BATCH is the default: a
//  thousand row locks are held for a few milliseconds, and a million
//  messages take a thousand round trips.
#define FQ_STORE_BULK_BATCH     1000
#define FQ_STORE_BULK_BATCH_MAX FQ_BULK_BATCH_MAX

typedef struct {
    fq_bulk_action_t action;
    bool dry_run;    //  Only count what would change; nothing is locked
    int batch;       //  1..FQ_STORE_BULK_BATCH_MAX messages per batch
    int64_t send_at; //  FQ_BULK_RESCHEDULE: Unix seconds, 0 = now
} fq_bulk_t;

typedef struct {
    int64_t matched; //  Messages the action applies to (a dry run: would)
    int64_t changed; //  Of them, changed (0 in a dry run)
    int64_t last_id; //  The cursor: pass it as after_id for the next batch
    bool done;       //  No message past last_id matches
} fq_bulk_batch_t;

//  The action's name as the API spells it ("cancel", "retry",
//  "reschedule"), or NULL; and its parse (0 or FQ_EINVAL).
const char *fq_bulk_action_name(fq_bulk_action_t action);
int fq_bulk_action_parse(const char *name, fq_bulk_action_t *action);

//  Runs one batch of bulk's action on the messages matching filter with
//  an id above after_id: the batch messages of lowest id the action
//  applies to (cancel: pending and failed; retry: dead, of a request
//  neither cancelled nor expired; reschedule: failed), with the counters
//  and events of the single changes above. filter must narrow as for
//  fq_store_cancel_messages (or name an error or a code), and its status
//  may only narrow the action's own. A message changed by someone else
//  since the batch was read is left as it is now (its ack won). Returns 0
//  and fills *out, or a negative code (then nothing changed).
int fq_store_bulk_batch(fq_store_t *self, const fq_message_filter_t *filter, const fq_bulk_t *bulk,
                        int64_t after_id, fq_bulk_batch_t *out);

//  Makes every failed message matching filter due now: a retry claimed by
//  a node that died is released, and a retry waiting out its backoff is
//  hurried (what an operator would otherwise do by moving its next attempt
//  by hand). A claim cannot be told apart from a backoff reliably (a lease
//  shorter than the policy's cap looks like one), so this does not try to.
//  The status stays failed, so no counter changes. A retry claimed by a
//  live node may then be sent twice (at least once; the message id lets
//  the receiver deduplicate). filter needs a narrowing field as for a
//  cancel; status may be FQ_MESSAGE_ANY or FQ_MESSAGE_FAILED only. Returns
//  how many were released, or a negative code.
int fq_store_release_claims(fq_store_t *self, const fq_message_filter_t *filter);

//  ---------------------------------------------------------------------
//  Request lifecycle. Each change is one transaction and wakes fairqd
//  with NOTIFY fairq_requests (payload: the request id), as a submit does,
//  so it reloads the request. Unknown request: FQ_ENOTFOUND. A finished
//  request (done, cancelled, rejected) cannot change: FQ_EINVAL, with a
//  message saying which state it is in. A request changed by someone else
//  between the change's two statements: FQ_ECONFLICT (try again).

//  Cancels a request: its recipients not yet split are dropped, its
//  pending and failed messages cancelled (counters kept), its status set
//  to cancelled. Cancelling a cancelled request changes nothing. Returns
//  how many messages were cancelled.
int fq_store_request_cancel(fq_store_t *self, int64_t request_id);

//  Pauses a request (accepted, splitting or active): the scheduler stops
//  dispatching and splitting it (fq_store_due_requests skips it). Returns
//  1, or 0 when it was paused already.
int fq_store_request_pause(fq_store_t *self, int64_t request_id);

//  Resumes a paused request: it is active again, or accepted / splitting
//  when it was paused before its split completed. Returns 1, or 0 when it
//  was not paused (nothing to do).
int fq_store_request_resume(fq_store_t *self, int64_t request_id);

typedef struct {
    bool set_send_at;
    int64_t send_at; //  Unix seconds; 0 = now
    bool set_priority;
    int priority; //  -1000..1000, higher first within the tenant
} fq_request_change_t;

//  Changes when a request's pending work starts and its priority. At least
//  one of the two must be set (FQ_EINVAL otherwise, or for a priority out
//  of range). Returns 0 or a negative code.
int fq_store_request_change(fq_store_t *self, int64_t request_id,
                            const fq_request_change_t *change);

//  ---------------------------------------------------------------------
//  Error summary: which errors the failed and dead messages met, and how
//  often, per tenant and destination (what an operator would otherwise ask
//  the database by hand with "select last_error, count(*) ... group by 1").
//  Errors are grouped by their codes, not their text (which names the
//  recipient): code is the basic reply code last_error starts with (an
//  SMTP reply's "550", an http status's "503" of "HTTP 503: ..."), and
//  enhanced the first RFC 3463 enhanced status code in it ("5.1.1").

typedef struct {
    const char *tenant;      //  Tenant name
    const char *destination; //  The destination the messages were split with
    const char *code;        //  3 digits; NULL when last_error starts with none
    const char *enhanced;    //  class.subject.detail; NULL when there is none
    const char *example;     //  One last_error of the group; NULL when none has one
    int64_t count;           //  failed + dead
    int64_t failed;
    int64_t dead;
} fq_error_count_t;

//  Rows and strings are one block, owned by the caller.
typedef struct {
    fq_error_count_t *rows;
    size_t count;
} fq_error_summary_t;

//  The top (1..FQ_STORE_PAGE_MAX) groups of the failed and dead messages
//  matching filter (empty: all of them) and, unless NULL, split with the
//  destination named (a name that matches none gives no rows; an empty
//  one is FQ_EINVAL), most frequent first. status may be FQ_MESSAGE_ANY,
//  FQ_MESSAGE_FAILED or FQ_MESSAGE_DEAD. Returns how many rows summary
//  holds, or a negative code; on failure summary is empty.
int fq_store_error_summary(fq_store_t *self, const fq_message_filter_t *filter,
                           const char *destination, int top, fq_error_summary_t *summary);
void fq_error_summary_free(fq_error_summary_t *summary);

//  ---------------------------------------------------------------------
//  Finishing and pruning: background jobs, each call bounded

//  Largest number of rows one fq_store_prune call deletes.
#define FQ_STORE_PRUNE_BATCH_MAX 100000

//  Marks done up to limit (1..FQ_STORE_PAGE_MAX) unfinished requests that
//  are fully split (no recipients left to split) and whose every recipient
//  is final (sent + dead + cancelled + rejected = total), with finished_at
//  = now. Also stamps up to limit finished requests that lack a finished_at
//  (one whose every recipient was rejected is made done by the splitter),
//  so that pruning finds them. Requests locked by a concurrent change are
//  left for the next call. Returns how many were marked done.
int fq_store_finish_requests(fq_store_t *self, int limit);

//  What one fq_store_advance_scan did.
typedef struct {
    int moved;       //  Requests whose scan_from moved
    int looked;      //  Requests looked at (fewer than limit: none are left after them)
    int64_t last_id; //  The last of them, where the next call goes on; 0 when none
} fq_advance_t;

//  Moves requests.scan_from forward past the final messages at the start
//  of each unfinished request, for up to limit requests (1..
//  FQ_STORE_PAGE_MAX) after after_id in id order, reading at most window
//  messages of each: where the scheduler starts paging after a restart, so
//  it never rereads a request's sent history. No request is locked while
//  messages are read. Fills out; returns how many requests moved, or a
//  negative code.
int fq_store_advance_scan(fq_store_t *self, int64_t after_id, int limit, int window,
                          fq_advance_t *out);

//  Keeps the planner's statistics of fairq.messages current: ANALYZEs it
//  when it holds more than twice the rows of the last analysis (and at
//  least FQ_STORE_ANALYZE_MIN_ROWS), so the statistics are redone each
//  time the table doubles, O(log n) times while a campaign is split (a
//  table's churn, its acks, is autovacuum's to analyze). A table that
//  grew from nothing to a million rows in seconds is otherwise planned as
//  nearly empty until autovacuum comes by, a minute later: due retries
//  were then claimed by a sequential scan (120 ms each instead of 0.03 ms)
//  and pages read with bitmap scans. Only the columns the scheduler's and
//  the reaper's queries filter on are analyzed (each pass took a fifth of a
//  campaign's database time with all of them). Returns 1 when it analyzed,
//  0 when there was no need, or a negative code.
#define FQ_STORE_ANALYZE_MIN_ROWS 50000
int fq_store_refresh_stats(fq_store_t *self);

typedef struct {
    int messages; //  Message rows deleted
    int rejects;  //  Rows of fairq.rejects deleted
    int requests; //  Request rows deleted (with their chunks, if any)
    bool more;    //  Work was left over: call again
} fq_prune_result_t;

//  Deletes finished requests (done, cancelled, rejected) whose finished_at
//  is more than retention_s (>= 0) seconds old (and, for a request
//  submitted with an idempotency key, that was submitted more than a day
//  ago, so the key is honoured that long): first their messages and
//  rejects, at most batch (1..FQ_STORE_PRUNE_BATCH_MAX) rows per call,
//  then each request row once none is left. One transaction per call, so
//  no call holds many locks or writes much WAL at once; call it until
//  result->more is false. Returns 0 or a negative code.
int fq_store_prune(fq_store_t *self, int retention_s, int batch, fq_prune_result_t *result);

//  Deletes the oldest events older than retention_s: at most batch
//  (1..FQ_STORE_PRUNE_BATCH_MAX) rows of fairq.event_rows (0018, 0029; a
//  row holds one event, or a batch's message.sent events of a request) in
//  one statement. Returns how many rows (call again while it is batch), or
//  a negative code.
int fq_store_prune_events(fq_store_t *self, int retention_s, int batch);

#endif
