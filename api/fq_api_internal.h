/*  fq_api_internal.h — what the API's route files share (internal).

    fq_http.c accepts a call, reads its body, authenticates it and finds
    its route; the route's handler (fq_api_<resource>.c) fills in the
    answer: a status and a JSON document, or a text. Handlers never build
    a response themselves, so every answer has the same shape and every
    error the same body, {"error": CODE, "detail": TEXT}.
*/
#ifndef FQ_API_INTERNAL_H
#define FQ_API_INTERNAL_H

#include "fq_http.h"
#include "fq_store.h"
#include <jansson.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

//  Path parameters a route may have ("{}" segments).
#define FQ_API_PARAMS_MAX 2

//  Default and largest page of a list.
#define FQ_API_PAGE_DEFAULT 100

struct fq_http {
    struct MHD_Daemon *daemon;
    char *database;
    //  What a reload may change while calls run (fq_http_set_live)
    _Atomic size_t body_max;
    _Atomic bool metrics_public;
    _Atomic int tenant_weight, tenant_max_inflight, tenant_submit_rate;
    fq_metrics_t *metrics;
    fq_system_t *system;
    const fq_lease_t *lease; //  Who leads, for /healthz; NULL: not said
    //  What POST /v1/feedback suppresses (fq_http_config_t's words)
    char bounce_pattern[FQ_STORE_BOUNCE_PATTERN_SIZE];
    bool suppress_complaints;
    //  One-click unsubscribe: whether links are made (unsubscribe_url is
    //  set: a submit or a tenant may ask for it); and for the public
    //  listener, its key, and that it serves the unsubscribe pages alone,
    //  each answer with the headers of a page facing the internet
    bool unsubscribe_on;
    bool unsubscribe_pages;
    unsigned char unsubscribe_key[FQ_UNSUBSCRIBE_KEY_SIZE];
    pthread_key_t store_key;         //  Each pool thread's connection (fq_http.c)
    _Atomic int64_t connected_at_ms; //  When a pool thread last connected
    int port;
    //  libmicrohttpd's own messages, at most a few a second (a flood of
    //  refused connections would otherwise be a flood of log lines)
    pthread_mutex_t log_lock;
    int64_t log_second; //  The second being counted, monotonic
    int log_lines;      //  Lines logged in it
    int log_dropped;    //  Lines left out since the last one logged
};

//  A header an answer carries besides those every answer gets.
typedef struct {
    const char *name, *value;
} fq_api_header_t;

typedef struct {
    fq_http_t *server;
    struct MHD_Connection *connection;
    fq_store_t *store; //  This thread's connection, up when a handler runs
    const char *method;
    const char *path;                      //  As it came (not decoded), for the log
    const char *params[FQ_API_PARAMS_MAX]; //  The "{}" segments, decoded, in order
    const char *body;                      //  NUL-terminated; "" when none
    size_t body_size;
    fq_token_owner_t owner; //  Who called (set before the handler runs)
    bool lost;              //  The database connection was lost during the call,
                            //  and made again: the call may be run once more

    //  The answer
    unsigned status;
    json_t *json; //  Owned; or
    char *text;   //  Owned, with text_type; or
    //  Bytes that outlive every call (the console's files, built into
    //  fairqd), sent as they are without a copy, with text_type
    const char *static_text;
    size_t static_size;
    const char *text_type;
    char retry_after[16];           //  For 429: a Retry-After header, when set
    char allow[64];                 //  For 405: the Allow header
    bool replayed;                  //  The answer of an earlier submit with the same
                                    //  Idempotency-Key: an Idempotent-Replayed header
    bool close;                     //  Close the connection after the answer
    const fq_api_header_t *headers; //  More headers, ended by a NULL name; or NULL
} fq_api_call_t;

//  A value of a JSON body left where it is, in the body (the recipients of
//  a submit): text is NULL when the body has no such member.
typedef struct {
    const char *text; //  Points into the body; not NUL-terminated
    size_t size;
} fq_api_slice_t;

typedef void(fq_api_handler_fn)(fq_api_call_t *call);

//  The pool thread's database connection, connected (again, if it was
//  lost); NULL after answering 503.
fq_store_t *fq_api_store(fq_api_call_t *call);

//  After a store call failed: when the thread's connection turns out to be
//  cut (a database restart), connects again. Returns true when it did, so
//  the statement may be tried once more; false when the connection was not
//  the matter, or it cannot be made (the thread then pauses before trying).
bool fq_api_reconnect(fq_api_call_t *call);

//  Answers status with json (taken over). NULL, jansson's out of memory,
//  answers 500.
void fq_api_reply(fq_api_call_t *call, unsigned status, json_t *json);

//  Answers 204 with no body (a delete done).
void fq_api_reply_empty(fq_api_call_t *call);

//  Answers an error: status, its code from API.md's table, and a detail
//  (printf-style).
void fq_api_fail(fq_api_call_t *call, unsigned status, const char *format, ...)
    __attribute__((format(printf, 3, 4)));

//  Answers the error of a store call that returned rc: 404 for
//  FQ_ENOTFOUND, 400 for FQ_EINVAL, 409 for FQ_ECONFLICT, 503 when the
//  database connection is lost (made again at once when it can be: then
//  a GET is run once more), 500 otherwise. The database's own words never
//  go into the answer: a constraint it names is said in fairq's words,
//  and what it said is logged.
void fq_api_fail_store(fq_api_call_t *call, int rc);

//  The call's tenant token may only see tenant_id: false (and a 404 with
//  what's text, the same an unknown id gets) when it is another tenant's.
//  tenant_id -1 (nobody's) answers that 404 to an admin too.
bool fq_api_may_see(fq_api_call_t *call, int64_t tenant_id, const char *what, int64_t id);

//  What a tenant's name may be, as an answer says it (a format: the
//  longest name is FQ_TENANT_NAME_MAX).
#define FQ_API_TENANT_NAME_RULE                                                                    \
    "a tenant name is 1..%d of a-z 0-9 _ . - and starts with a letter or digit"

//  The tenant of a route under /v1/tenants/{name} (params[0]), if the
//  caller may manage what the tenant owns (an admin, or the tenant's own
//  token); false after answering: 400 for a name that is none, 404 for
//  another tenant's, as for one that does not exist.
bool fq_api_own_tenant(fq_api_call_t *call, const char **tenant);

//  Answers 403 unless the caller holds an admin token; returns whether it
//  does.
bool fq_api_require_admin(fq_api_call_t *call);

//  Query parameters. Each route names the ones it takes; any other is a
//  400 (a misspelt filter must not silently widen a search). Returns
//  false after answering 400.
bool fq_api_query_allowed(fq_api_call_t *call, const char *const *names);
const char *fq_api_query(fq_api_call_t *call, const char *name);

//  A positive id from text (a path segment or a query value; NULL or ""
//  gives 0 without error when optional). Returns false after answering 400.
bool fq_api_parse_id(fq_api_call_t *call, const char *text, const char *what, bool optional,
                     int64_t *id);

//  An integer query value within min..max, or def when absent. Returns
//  false after answering 400.
bool fq_api_parse_int(fq_api_call_t *call, const char *text, const char *what, int64_t min,
                      int64_t max, int64_t def, int64_t *value);

//  The body as a JSON object of the keys listed (NULL-terminated; any
//  other key, or one twice, is a 400). The body is checked whole as JSON
//  (fq_api_json_valid) but only its top members are built, and of them
//  only strings, numbers, booleans and null: an array or object stands in
//  as an empty one of its kind, which the handler's type check refuses
//  (no field but a slice takes one), so fairqd never holds a tree as
//  large as the body. The values of slice_keys (a NULL-terminated list of
//  some of keys; NULL: none) are not built at all but left in the body,
//  each described in slices[i] (text NULL when absent). Returns NULL
//  after answering 400.
json_t *fq_api_body_fields(fq_api_call_t *call, const char *const *keys,
                           const char *const *slice_keys, fq_api_slice_t *slices);

//  JSON as jansson would take it (fq_api_json.c). text holds size bytes
//  and a NUL after them. Returns false with the reason, naming the byte,
//  in error.
bool fq_api_json_valid(const char *text, size_t size, char *error, size_t error_size);

//  Called for each member of an object: its key as it is written (quoted,
//  escapes and all) and its value's text. Returns 0 to go on.
typedef int(fq_api_member_fn)(void *arg, const char *key, size_t key_size, const char *value,
                              size_t value_size);

//  Calls member for each member of the top object of text, a text that
//  fq_api_json_valid took. Returns 0, member's first other answer, or -1
//  when the document is not an object.
int fq_api_json_members(const char *text, size_t size, fq_api_member_fn *member, void *arg);

//  Whether the JSON value of size bytes at value is an empty array.
bool fq_api_json_array_empty(const char *value, size_t size);

//  Milliseconds of the monotonic clock, for timeouts and budgets.
int64_t fq_api_now_ms(void);

//  A time as RFC 3339 in UTC ("2026-11-21T10:04:05Z"), or JSON null for 0.
json_t *fq_api_time(int64_t unix_s);

//  Parses a time given as RFC 3339 with a zone, or as integer Unix
//  seconds (>= 0). Returns false after answering 400 naming what.
bool fq_api_parse_time(fq_api_call_t *call, json_t *value, const char *what, int64_t *unix_s);

//  A submit's body, read and checked (fq_api_requests.c).
typedef struct fq_api_submit fq_api_submit_t;

//  Reads call->body as POST /v1/requests does, every check of a submit
//  but the database's made. scheduled: a schedule's request, which names
//  no tenant and no send_at (the schedule says whose and when) and reads
//  no Idempotency-Key (tenant, send_at and idempotency_key are left for
//  the caller). Its strings point into the body and into what it owns.
//  NULL after answering.
fq_api_submit_t *fq_api_submit_read(fq_api_call_t *call, bool scheduled);
const fq_submit_t *fq_api_submit_of(const fq_api_submit_t *self);
void fq_api_submit_destroy(fq_api_submit_t **self_p);

//  The request object of API.md.
json_t *fq_api_request_json(fq_api_call_t *call, const fq_request_info_t *request);

//  Reads the tenants' bounce and complaint rates of the last day into the
//  metrics when they are due (at most once a minute,
//  fq_metrics_tenant_rates_due), for /metrics and the tenant object; a
//  failed read is logged and keeps the last figures. Needs call->store
//  (fq_api_rates.c).
void fq_api_rates_refresh(fq_api_call_t *call);

//  The routes' handlers, by file.
fq_api_handler_fn fq_api_healthz, fq_api_metrics;                                 //  system
fq_api_handler_fn fq_api_whoami;                                                  //  whoami
fq_api_handler_fn fq_api_sender_list, fq_api_share;                               //  live
fq_api_handler_fn fq_api_request_submit, fq_api_request_list, fq_api_request_get; //  requests
fq_api_handler_fn fq_api_request_cancel, fq_api_request_pause, fq_api_request_resume;
fq_api_handler_fn fq_api_request_patch, fq_api_request_rejects;
fq_api_handler_fn fq_api_message_search, fq_api_message_get, fq_api_message_retry; //  messages
fq_api_handler_fn fq_api_message_bulk;
fq_api_handler_fn fq_api_shape; //  shape
fq_api_handler_fn fq_api_error_summary;
fq_api_handler_fn fq_api_event_list;                                        //  events
fq_api_handler_fn fq_api_tenant_list, fq_api_tenant_get, fq_api_tenant_put; //  tenants
fq_api_handler_fn fq_api_tenant_token, fq_api_tenant_tokens, fq_api_tenant_token_revoke;
fq_api_handler_fn fq_api_destination_list, fq_api_destination_get; //  destinations
fq_api_handler_fn fq_api_destination_put, fq_api_destination_delete;
fq_api_handler_fn fq_api_hold_list, fq_api_hold_create; //  holds
fq_api_handler_fn fq_api_hold_release, fq_api_hold_release_all;
fq_api_handler_fn fq_api_suppression_list, fq_api_suppression_get; //  suppressions
fq_api_handler_fn fq_api_suppression_put, fq_api_suppression_delete, fq_api_suppression_import;
fq_api_handler_fn fq_api_global_suppression_list, fq_api_global_suppression_get;
fq_api_handler_fn fq_api_global_suppression_put, fq_api_global_suppression_delete;
fq_api_handler_fn fq_api_global_suppression_import;
fq_api_handler_fn fq_api_webhook_list, fq_api_webhook_create, fq_api_webhook_get; //  webhooks
fq_api_handler_fn fq_api_webhook_patch, fq_api_webhook_delete, fq_api_webhook_rotate;
fq_api_handler_fn fq_api_schedule_list, fq_api_schedule_create, fq_api_schedule_get; //  schedules
fq_api_handler_fn fq_api_schedule_patch, fq_api_schedule_delete;
fq_api_handler_fn fq_api_feedback;                                  //  feedback
fq_api_handler_fn fq_api_unsubscribe_page, fq_api_unsubscribe_post; //  unsubscribe (public)
fq_api_handler_fn fq_api_console_page, fq_api_console_file;         //  console (public files)

#endif
