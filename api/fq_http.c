/*  fq_http.c — the HTTP server: accepting calls, bodies, authentication,
    routing and answering (see fq_http.h; the routes are api/API.md).

    A call goes through libmicrohttpd's access handler several times: once
    with its headers (a body announced larger than body_max is refused
    there, before it is read, and so is a body whose framing is
    ambiguous), once per piece of body, and once more when the body is
    complete, when it is authenticated and routed. The route's handler
    runs in the pool thread with that thread's own database connection.

    Calls are routed on their path as it came, not as libmicrohttpd
    decodes it: the path is cut at each '/' first, and each segment is
    decoded after, so that "%2F" is a character of a segment, never a
    separator ("/v1/tenants/acme%2Ftokens" is not the tokens route).
*/
#include "fq_api_internal.h"
#include "fq_error.h"
#include "fq_log.h"
#include "fq_buf.h"
#include "fq_utf8.h"
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <time.h>

#define S_CONTENT_JSON "application/json"

//  The header of an answer given again for a repeated Idempotency-Key (the
//  IETF httpapi Idempotency-Key draft).
#define S_HEADER_REPLAYED "Idempotent-Replayed"

//  After failing to connect to the database, a pool thread answers 503 at
//  once for this long before it tries again.
#define S_RECONNECT_PAUSE_MS 1000

//  Longest "host" of http_listen, and of the port's digits.
#define S_HOST_MAX 256
#define S_PORT_MAX 8

//  A call whose headers alone take more than this is refused by MHD with
//  431; bodies are limited by body_max instead.
#define S_CONNECTION_MEMORY (64 * 1024)

//  Files fairqd holds open besides the HTTP connections: the database
//  connections (one per HTTP thread and per actor), the gateway's sockets
//  and ZeroMQ's own, libmicrohttpd's wake-up pipes, the log. A few dozen
//  in practice; the limit of open files must leave room for this many.
#define S_FILES_RESERVED 256

//  Lines of libmicrohttpd's own a second, at most: it logs one per
//  connection it refuses, and a flood of connections must not flood the
//  log. The lines left out are counted in the next one.
#define S_MHD_LOG_PER_S 5

//  Room for a message of the store's (fq_store_error) or of libpq's.
#define S_MESSAGE_MAX 1024

#define S_MS_PER_S  1000
#define S_NS_PER_MS 1000000

//  ---------------------------------------------------------------------
//  Routes (api/API.md). "{}" is a path parameter; admin routes answer 403
//  to a tenant token; public ones need no token at all.

typedef enum { S_AUTH_TOKEN, S_AUTH_ADMIN, S_AUTH_NONE, S_AUTH_METRICS } s_auth_t;

typedef struct {
    const char *method;
    const char *pattern;
    fq_api_handler_fn *handler;
    s_auth_t auth;
} s_route_t;

static const s_route_t s_routes[] = {
    {"GET", "/healthz", fq_api_healthz, S_AUTH_NONE},
    {"GET", "/console", fq_api_console_page, S_AUTH_NONE},
    {"GET", "/console/", fq_api_console_page, S_AUTH_NONE},
    {"GET", "/console/{}", fq_api_console_file, S_AUTH_NONE},
    {"GET", "/metrics", fq_api_metrics, S_AUTH_METRICS},
    {"POST", "/v1/requests", fq_api_request_submit, S_AUTH_TOKEN},
    {"GET", "/v1/requests", fq_api_request_list, S_AUTH_TOKEN},
    {"GET", "/v1/requests/{}", fq_api_request_get, S_AUTH_TOKEN},
    {"PATCH", "/v1/requests/{}", fq_api_request_patch, S_AUTH_TOKEN},
    {"POST", "/v1/requests/{}/cancel", fq_api_request_cancel, S_AUTH_TOKEN},
    {"POST", "/v1/requests/{}/pause", fq_api_request_pause, S_AUTH_TOKEN},
    {"POST", "/v1/requests/{}/resume", fq_api_request_resume, S_AUTH_TOKEN},
    {"GET", "/v1/requests/{}/rejects", fq_api_request_rejects, S_AUTH_TOKEN},
    {"GET", "/v1/messages", fq_api_message_search, S_AUTH_TOKEN},
    {"POST", "/v1/messages/bulk", fq_api_message_bulk, S_AUTH_TOKEN},
    {"GET", "/v1/messages/{}", fq_api_message_get, S_AUTH_TOKEN},
    {"POST", "/v1/messages/{}/retry", fq_api_message_retry, S_AUTH_TOKEN},
    {"GET", "/v1/errors", fq_api_error_summary, S_AUTH_TOKEN},
    {"GET", "/v1/shape", fq_api_shape, S_AUTH_TOKEN},
    {"GET", "/v1/events", fq_api_event_list, S_AUTH_TOKEN},
    //  Who calls, and the leader's live figures (a web console's views)
    {"GET", "/v1/whoami", fq_api_whoami, S_AUTH_TOKEN},
    {"GET", "/v1/senders", fq_api_sender_list, S_AUTH_ADMIN},
    {"GET", "/v1/share", fq_api_share, S_AUTH_TOKEN},
    {"GET", "/v1/tenants", fq_api_tenant_list, S_AUTH_TOKEN},
    {"GET", "/v1/tenants/{}", fq_api_tenant_get, S_AUTH_TOKEN},
    {"PUT", "/v1/tenants/{}", fq_api_tenant_put, S_AUTH_ADMIN},
    {"POST", "/v1/tenants/{}/tokens", fq_api_tenant_token, S_AUTH_ADMIN},
    {"GET", "/v1/tenants/{}/tokens", fq_api_tenant_tokens, S_AUTH_ADMIN},
    {"DELETE", "/v1/tenants/{}/tokens/{}", fq_api_tenant_token_revoke, S_AUTH_ADMIN},
    {"GET", "/v1/destinations", fq_api_destination_list, S_AUTH_ADMIN},
    {"GET", "/v1/destinations/{}", fq_api_destination_get, S_AUTH_ADMIN},
    {"PUT", "/v1/destinations/{}", fq_api_destination_put, S_AUTH_ADMIN},
    {"DELETE", "/v1/destinations/{}", fq_api_destination_delete, S_AUTH_ADMIN},
    {"GET", "/v1/holds", fq_api_hold_list, S_AUTH_ADMIN},
    {"POST", "/v1/holds", fq_api_hold_create, S_AUTH_ADMIN},
    {"DELETE", "/v1/holds/{}", fq_api_hold_release_all, S_AUTH_ADMIN},
    {"DELETE", "/v1/holds/{}/{}", fq_api_hold_release, S_AUTH_ADMIN},
    //  A tenant's list (a tenant token: its own), and the global one
    {"GET", "/v1/tenants/{}/suppressions", fq_api_suppression_list, S_AUTH_TOKEN},
    {"POST", "/v1/tenants/{}/suppressions/import", fq_api_suppression_import, S_AUTH_TOKEN},
    {"GET", "/v1/tenants/{}/suppressions/{}", fq_api_suppression_get, S_AUTH_TOKEN},
    {"PUT", "/v1/tenants/{}/suppressions/{}", fq_api_suppression_put, S_AUTH_TOKEN},
    {"DELETE", "/v1/tenants/{}/suppressions/{}", fq_api_suppression_delete, S_AUTH_TOKEN},
    //  A tenant's webhook endpoints (a tenant token: its own)
    {"GET", "/v1/tenants/{}/webhooks", fq_api_webhook_list, S_AUTH_TOKEN},
    {"POST", "/v1/tenants/{}/webhooks", fq_api_webhook_create, S_AUTH_TOKEN},
    {"GET", "/v1/tenants/{}/webhooks/{}", fq_api_webhook_get, S_AUTH_TOKEN},
    {"PATCH", "/v1/tenants/{}/webhooks/{}", fq_api_webhook_patch, S_AUTH_TOKEN},
    {"DELETE", "/v1/tenants/{}/webhooks/{}", fq_api_webhook_delete, S_AUTH_TOKEN},
    {"POST", "/v1/tenants/{}/webhooks/{}/rotate", fq_api_webhook_rotate, S_AUTH_TOKEN},
    //  A tenant's schedules of recurring sends (a tenant token: its own)
    {"GET", "/v1/tenants/{}/schedules", fq_api_schedule_list, S_AUTH_TOKEN},
    {"POST", "/v1/tenants/{}/schedules", fq_api_schedule_create, S_AUTH_TOKEN},
    {"GET", "/v1/tenants/{}/schedules/{}", fq_api_schedule_get, S_AUTH_TOKEN},
    {"PATCH", "/v1/tenants/{}/schedules/{}", fq_api_schedule_patch, S_AUTH_TOKEN},
    {"DELETE", "/v1/tenants/{}/schedules/{}", fq_api_schedule_delete, S_AUTH_TOKEN},
    {"GET", "/v1/suppressions", fq_api_global_suppression_list, S_AUTH_ADMIN},
    {"POST", "/v1/suppressions/import", fq_api_global_suppression_import, S_AUTH_ADMIN},
    {"GET", "/v1/suppressions/{}", fq_api_global_suppression_get, S_AUTH_ADMIN},
    {"PUT", "/v1/suppressions/{}", fq_api_global_suppression_put, S_AUTH_ADMIN},
    {"DELETE", "/v1/suppressions/{}", fq_api_global_suppression_delete, S_AUTH_ADMIN},
    {"POST", "/v1/feedback", fq_api_feedback, S_AUTH_ADMIN},
};
//  What the log says of an unsubscribe page's path: the token in it is
//  what unsubscribes its recipient, so whoever reads the log must not get
//  it.
#define S_UNSUBSCRIBE_LOGGED_PATH "/u/(token)"

#define S_ROUTE_COUNT (sizeof s_routes / sizeof s_routes[0])

//  The public unsubscribe listener's routes (fq_api_unsubscribe.c), its
//  only ones: it may face the internet, the admin API never does.
static const s_route_t s_unsubscribe_routes[] = {
    {"GET", "/u/{}", fq_api_unsubscribe_page, S_AUTH_NONE},
    {"POST", "/u/{}", fq_api_unsubscribe_post, S_AUTH_NONE},
};
#define S_UNSUBSCRIBE_ROUTE_COUNT (sizeof s_unsubscribe_routes / sizeof s_unsubscribe_routes[0])

//  What every answer of the unsubscribe listener carries: its pages load
//  nothing (no script, style, image or frame: default-src 'none'), post
//  their form only to themselves, are framed by no one (clickjacking),
//  leak no token in a Referer, and are kept by no cache (a token is a
//  capability).
static const fq_api_header_t s_unsubscribe_headers[] = {
    {"Content-Security-Policy",
     "default-src 'none'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"},
    {"X-Frame-Options", "DENY"},
    {"X-Content-Type-Options", "nosniff"},
    {"Referrer-Policy", "no-referrer"},
    {"Cache-Control", "no-store"},
    {NULL, NULL},
};

//  A path cut into its segments, each decoded: the segments one after the
//  other, each ended by a NUL (a decoded segment holds none: see
//  s_path_split).
typedef struct {
    char *segments;
    size_t count;
} s_path_t;

//  Matches the segments of path against pattern; "{}" takes any
//  non-empty segment, written into params. An empty segment (a doubled or
//  trailing '/') matches nothing but an empty segment of the pattern
//  ("/console/", the address a browser's user types as often as
//  "/console").
static bool s_route_matches(const char *pattern, const s_path_t *path, const char **params)
{
    const char *segment = path->segments;
    const char *p = pattern;
    size_t matched = 0;
    int nparams = 0;
    while (*p) {
        p++; //  The pattern's '/'
        size_t p_len = strcspn(p, "/");
        if (matched == path->count || (!*segment && p_len > 0))
            return false;
        if (p_len == 2 && strncmp(p, "{}", 2) == 0) {
            if (nparams == FQ_API_PARAMS_MAX)
                return false;
            params[nparams++] = segment;
        } else if (strlen(segment) != p_len || strncmp(p, segment, p_len) != 0)
            return false;
        p += p_len;
        segment += strlen(segment) + 1;
        matched++;
    }
    return matched == path->count;
}

//  A pool thread's own: its database connection, and when it last failed
//  to connect.
typedef struct {
    fq_store_t *store;
    int64_t failed_at_ms; //  0: not failing
} s_thread_t;

static void s_unavailable(fq_api_call_t *call, s_thread_t *thread, const char *reason);

//  ---------------------------------------------------------------------
//  Answers

static const char *s_error_code(unsigned status)
{
    switch (status) {
    case MHD_HTTP_BAD_REQUEST:
        return "bad_request";
    case MHD_HTTP_UNAUTHORIZED:
        return "unauthorized";
    case MHD_HTTP_FORBIDDEN:
        return "forbidden";
    case MHD_HTTP_NOT_FOUND:
        return "not_found";
    case MHD_HTTP_METHOD_NOT_ALLOWED:
        return "method_not_allowed";
    case MHD_HTTP_CONFLICT:
        return "conflict";
    case MHD_HTTP_CONTENT_TOO_LARGE:
        return "payload_too_large";
    case MHD_HTTP_UNPROCESSABLE_CONTENT:
        return "unprocessable_content";
    case MHD_HTTP_TOO_MANY_REQUESTS:
        return "rate_limited";
    case MHD_HTTP_SERVICE_UNAVAILABLE:
        return "database_unavailable";
    default:
        return "internal";
    }
}

void fq_api_reply(fq_api_call_t *call, unsigned status, json_t *json)
{
    json_decref(call->json);
    //  jansson tells of out of memory anywhere in a body only by a NULL: a
    //  500, never an answer with the figures missing (and should even that
    //  fail, s_send answers the NULL with its own 500)
    if (!json) {
        status = MHD_HTTP_INTERNAL_SERVER_ERROR;
        json = json_pack("{s:s, s:s}", "error", s_error_code(status), "detail",
                         "the answer could not be written as JSON (out of memory)");
    }
    call->status = status;
    call->json = json;
}

void fq_api_reply_empty(fq_api_call_t *call)
{
    char *nothing = strdup("");
    if (!nothing) {
        fq_api_fail(call, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
        return;
    }
    json_decref(call->json);
    call->json = NULL;
    call->status = MHD_HTTP_NO_CONTENT;
    free(call->text);
    call->text = nothing;
    call->text_type = "application/json";
}

void fq_api_fail(fq_api_call_t *call, unsigned status, const char *format, ...)
{
    char detail[1024];
    va_list args;
    va_start(args, format);
    vsnprintf(detail, sizeof detail, format, args);
    va_end(args);
    //  A detail may quote a path or a value as it came, and a JSON string
    //  must be UTF-8 (jansson refuses to make one of anything else)
    fq_utf8_replace_invalid(detail, strlen(detail), '?');
    fq_api_reply(call, status,
                 json_pack("{s:s, s:s}", "error", s_error_code(status), "detail", detail));
}

//  The database's checks that a call can break, in fairq's words: a
//  detail never quotes the database, whose words name its tables and
//  columns (the handlers check most of this before; these are what is
//  left to the schema, and what an older or newer schema adds).
static const struct {
    const char *constraint;
    const char *words;
} s_constraint_words[] = {
    {"requests_from_addr_check", "from must be one address of 3..320 bytes, without control "
                                 "characters"},
    {"requests_subject_check", "subject must be at most 998 bytes, without control characters "
                               "(tab, CR, LF, U+2028...)"},
    {"requests_body_check", "body must be at most 1048576 bytes"},
    {"requests_priority_check", "priority must be an integer within -1000..1000"},
    {"requests_max_attempts_check", "max_attempts must be an integer within 1..100"},
    {"requests_idempotency_key_check", "Idempotency-Key must be 1..255 bytes"},
    {"requests_headers_check", "headers must be an object of header names to string values"},
    {"requests_text_body_check", "text_body must be at most 1048576 bytes, with html true"},
    {"requests_reply_to_check", "reply_to must be one address of 3..320 bytes, without control "
                                "characters"},
    {"tenants_name_check", "a tenant name is 1..64 of a-z 0-9 _ . - and starts with a letter or "
                           "digit"},
    {"tenants_weight_check", "weight must be an integer within 1..1000"},
    {"tenants_max_inflight_check", "max_inflight must be a positive integer"},
    {"tenants_submit_rate_check", "submit_rate must be a positive integer, or null"},
    {"tenants_signing_secret_check", "signing_secret must be \"whsec_\" and the base64 of 24 "
                                     "to 64 bytes, or null"},
    {"requests_channel_check", "channel must be 1..32 of a-z 0-9 _ -"},
    {"requests_from_addr_email_check", "from is required with channel \"email\""},
    {"requests_http_check", "http must be given with channel \"http\" only, with a method, "
                            "an http(s) URL of at most 8192 bytes and a body_format"},
    {"requests_signing_secret_check", "http.signing_secret must be \"whsec_\" and the base64 "
                                      "of 24 to 64 bytes"},
    {"destinations_name_check", "a destination name is 1..64 of a-z 0-9 _ . - and starts with a "
                                "letter or digit"},
    {"destination_domains_domain_check", "a domain is 1..253 bytes of labels of a-z 0-9 - "
                                         "between dots"},
    {"destination_domains_destination_check", "the destination \"default\" takes no domains"},
    {"destination_domains_pkey", "a domain belongs to another destination"},
};
#define S_CONSTRAINT_COUNT (sizeof s_constraint_words / sizeof s_constraint_words[0])

//  Answers 400 for data the database refused, in fairq's words; what the
//  database said goes to the log.
static void s_refused(fq_api_call_t *call)
{
    const char *constraint = fq_store_error_constraint(call->store);
    const char *state = fq_store_error_sqlstate(call->store);
    fq_log(FQ_LOG_WARNING, "http: %s %.200s: %s (sqlstate %s)", call->method, call->path,
           fq_store_error(call->store), state);
    for (size_t i = 0; i < S_CONSTRAINT_COUNT; i++)
        if (strcmp(constraint, s_constraint_words[i].constraint) == 0) {
            fq_api_fail(call, MHD_HTTP_BAD_REQUEST, "%s", s_constraint_words[i].words);
            return;
        }
    //  Class 22 is data the server could not take as given
    const char *words = strcmp(state, "22008") == 0   ? "a time is out of range"
                        : strcmp(state, "22021") == 0 ? "a text is not valid UTF-8"
                        : strcmp(state, "22001") == 0 ? "a text is too long"
                        : strcmp(state, "23505") == 0 ? "it exists already"
                                                      : "a value is not acceptable";
    fq_api_fail(call, MHD_HTTP_BAD_REQUEST, "the database refused the call: %s", words);
}

void fq_api_fail_store(fq_api_call_t *call, int rc)
{
    //  The store's own messages ("request 5 does not exist") are fairq's
    //  words; the server's (with an SQLSTATE) are not
    bool own = !*fq_store_error_sqlstate(call->store);
    const char *message = fq_store_error(call->store);
    if (rc == FQ_ENOTFOUND)
        fq_api_fail(call, MHD_HTTP_NOT_FOUND, "%s", own ? message : "not found");
    else if (rc == FQ_EINVAL && own)
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST, "%s", message);
    else if (rc == FQ_EINVAL)
        s_refused(call);
    else if (rc == FQ_ECONFLICT)
        fq_api_fail(call, MHD_HTTP_CONFLICT, "%s",
                    own ? message : "changed by another call at the same moment: try again");
    else if (!fq_store_connected(call->store)) {
        //  Cut under the call (a database restart): made again now, the
        //  next call finds it up; this one may run again (s_run)
        char lost[S_MESSAGE_MAX];
        snprintf(lost, sizeof lost, "%s", message);
        if (fq_api_reconnect(call)) {
            fq_log(FQ_LOG_WARNING, "http: %s %.200s: %s; connected again", call->method, call->path,
                   lost);
            call->lost = true;
            fq_api_fail(call, MHD_HTTP_SERVICE_UNAVAILABLE,
                        "the database connection was lost during the call; try again");
        } else
            s_unavailable(call, pthread_getspecific(call->server->store_key), lost);
    } else {
        //  The database's own words stay in the log: they may name tables,
        //  hosts and users
        fq_log(FQ_LOG_ERROR, "http: %s %.200s: %s", call->method, call->path, message);
        fq_api_fail(call, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal error; fairqd's log says more");
    }
}

bool fq_api_may_see(fq_api_call_t *call, int64_t tenant_id, const char *what, int64_t id)
{
    if (tenant_id >= 0 && (call->owner.admin || call->owner.tenant_id == tenant_id))
        return true;
    //  The very answer an unknown id gets: a tenant cannot probe for
    //  another tenant's ids
    fq_api_fail(call, MHD_HTTP_NOT_FOUND, "%s %lld does not exist", what, (long long)id);
    return false;
}

bool fq_api_require_admin(fq_api_call_t *call)
{
    if (call->owner.admin)
        return true;
    fq_api_fail(call, MHD_HTTP_FORBIDDEN, "this needs an admin token");
    return false;
}

//  Queues the call's answer on its connection.
static enum MHD_Result s_send(fq_api_call_t *call)
{
    struct MHD_Response *response;
    const char *type;
    if (call->text) {
        char *text = call->text;
        call->text = NULL;
        type = call->text_type;
        response = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
        if (!response)
            free(text);
    } else if (call->static_text) {
        //  Static bytes: libmicrohttpd reads them where they are, and
        //  never writes or frees them (the cast only fits its signature)
        type = call->text_type;
        response = MHD_create_response_from_buffer(call->static_size, (void *)call->static_text,
                                                   MHD_RESPMEM_PERSISTENT);
    } else {
        if (!call->json)
            fq_api_fail(call, MHD_HTTP_INTERNAL_SERVER_ERROR, "no answer");
        char *text = json_dumps(call->json, JSON_COMPACT);
        type = S_CONTENT_JSON;
        response = text ? MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE)
                        : NULL;
        if (!response)
            free(text);
    }
    if (!response)
        return MHD_NO;
    MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    if (call->status == MHD_HTTP_UNAUTHORIZED)
        MHD_add_response_header(response, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
    if (call->allow[0])
        MHD_add_response_header(response, MHD_HTTP_HEADER_ALLOW, call->allow);
    if (call->retry_after[0])
        MHD_add_response_header(response, MHD_HTTP_HEADER_RETRY_AFTER, call->retry_after);
    if (call->replayed)
        MHD_add_response_header(response, S_HEADER_REPLAYED, "true");
    //  Every answer of the unsubscribe listener, its errors too, carries
    //  the headers of a page facing the internet (its handlers set none)
    const fq_api_header_t *headers =
        call->server->unsubscribe_pages ? s_unsubscribe_headers : call->headers;
    for (const fq_api_header_t *header = headers; header && header->name; header++)
        MHD_add_response_header(response, header->name, header->value);
    //  libmicrohttpd closes the connection after an answer that says so
    if (call->close)
        MHD_add_response_header(response, MHD_HTTP_HEADER_CONNECTION, "close");
    enum MHD_Result rc = MHD_queue_response(call->connection, call->status, response);
    MHD_destroy_response(response);
    return rc;
}

//  ---------------------------------------------------------------------
//  Each pool thread's database connection

static void s_thread_free(void *thread)
{
    s_thread_t *self = thread;
    fq_store_destroy(&self->store);
    free(self);
}

int64_t fq_api_now_ms(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * S_MS_PER_S + now.tv_nsec / S_NS_PER_MS;
}

//  Notes that the thread could not reach the database. The reason
//  (libpq's text names hosts, users, what failed) goes to the log, once
//  per outage of each thread, never to callers, who may not even have a
//  token.
static void s_failed(s_thread_t *thread, const char *reason)
{
    if (!thread->failed_at_ms)
        fq_log(FQ_LOG_WARNING, "http: %s", reason);
    thread->failed_at_ms = fq_api_now_ms();
}

//  Notes that the thread is connected: others stop pausing before they
//  try again.
static void s_connected(fq_http_t *self, s_thread_t *thread)
{
    if (thread->failed_at_ms)
        fq_log(FQ_LOG_INFO, "http: connected to database again");
    thread->failed_at_ms = 0;
    atomic_store(&self->connected_at_ms, fq_api_now_ms());
}

//  Answers 503 for a database that cannot be reached.
static void s_unavailable(fq_api_call_t *call, s_thread_t *thread, const char *reason)
{
    if (thread)
        s_failed(thread, reason);
    fq_api_fail(call, MHD_HTTP_SERVICE_UNAVAILABLE,
                "the database cannot be reached; fairqd keeps trying");
}

//  A database that just failed is not tried again at once: each try may
//  take connect_timeout, and this thread serves other calls too. Unless
//  another thread has connected since: then it is back.
static bool s_pausing(fq_http_t *self, s_thread_t *thread)
{
    int64_t connected_at = atomic_load(&self->connected_at_ms);
    return thread->failed_at_ms && connected_at < thread->failed_at_ms &&
           fq_api_now_ms() - thread->failed_at_ms < S_RECONNECT_PAUSE_MS;
}

fq_store_t *fq_api_store(fq_api_call_t *call)
{
    fq_http_t *self = call->server;
    s_thread_t *thread = pthread_getspecific(self->store_key);
    if (!thread) {
        thread = calloc(1, sizeof *thread);
        if (!thread || pthread_setspecific(self->store_key, thread) != 0) {
            free(thread);
            fq_api_fail(call, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
            return NULL;
        }
    }
    //  A restart of the database ended the session of every thread; one
    //  idle since finds out here, before its call's first statement
    //  fails on it
    if (thread->store && fq_store_alive(thread->store))
        return thread->store;
    if (s_pausing(self, thread)) {
        fq_api_fail(call, MHD_HTTP_SERVICE_UNAVAILABLE,
                    "the database cannot be reached; fairqd keeps trying");
        return NULL;
    }
    char error[S_MESSAGE_MAX];
    if (thread->store && fq_store_reconnect(thread->store) != 0) {
        s_unavailable(call, thread, fq_store_error(thread->store));
        return NULL;
    }
    if (!thread->store &&
        !(thread->store = fq_store_new_named(self->database, "fairq api", error, sizeof error))) {
        s_unavailable(call, thread, error);
        return NULL;
    }
    s_connected(self, thread);
    return thread->store;
}

bool fq_api_reconnect(fq_api_call_t *call)
{
    s_thread_t *thread = pthread_getspecific(call->server->store_key);
    if (!thread || !thread->store || fq_store_connected(thread->store) ||
        s_pausing(call->server, thread))
        return false;
    if (fq_store_reconnect(thread->store) != 0) {
        s_failed(thread, fq_store_error(thread->store));
        return false;
    }
    s_connected(call->server, thread);
    return true;
}

//  ---------------------------------------------------------------------
//  Authentication

//  A token's characters (RFC 6750's b64token): letters, digits and
//  "-._~+/", then any '='s.
static bool s_b64token(const char *token, size_t size)
{
    size_t length = 0;
    while (length < size &&
           (isalnum((unsigned char)token[length]) || strchr("-._~+/", token[length]) != NULL) &&
           token[length])
        length++;
    if (length == 0)
        return false;
    while (length < size && token[length] == '=')
        length++;
    return length == size;
}

typedef struct {
    int count;
    const char *value;
    size_t size;
    const char *after;    //  One past the NUL that ends the value's text
    const char *next_key; //  The next header's name, in the order they came
    bool seen;            //  The last header looked at was the Authorization
} s_header_t;

static enum MHD_Result s_authorization(void *cls, enum MHD_ValueKind kind, const char *key,
                                       size_t key_size, const char *value, size_t value_size)
{
    (void)kind;
    (void)key_size;
    s_header_t *header = cls;
    if (header->seen && !header->next_key)
        header->next_key = key;
    header->seen = strcasecmp(key, MHD_HTTP_HEADER_AUTHORIZATION) == 0;
    if (header->seen) {
        header->count++;
        header->value = value;
        header->size = value_size;
        header->after = value + strlen(value) + 1;
        header->next_key = NULL;
    }
    return MHD_YES;
}

//  Whether the header's value went on past a NUL. libmicrohttpd 0.9.75
//  gives a value up to its first NUL and its size as strlen, so "Bearer
//  TOKEN\0garbage" would read as "Bearer TOKEN". Its header lines lie in
//  its read buffer one after the other, each line's CR and LF overwritten
//  with NULs: the NUL ending the value must be the line's end, right
//  before the next header's name (or one NUL before it, a CR LF). After
//  the last header only the blank line may follow; there a run of NULs
//  right before the line's end cannot be told from it (the token before
//  them is whole).
static bool s_value_cut(const s_header_t *header)
{
    if (header->size != strlen(header->value)) //  Where the size is the real one
        return true;
#if MHD_VERSION > 0x00097500
    //  The layout read below is 0.9.75's (Debian 12's); the test suite's
    //  NUL cases show whether a later version needs the same care
    return false;
#endif
    if (header->next_key)
        return header->next_key != header->after &&
               !(header->after[0] == '\0' && header->next_key == header->after + 1);
    return header->after[0] != '\0';
}

//  Takes the bearer token of the call; false after answering 401 or 503.
//  The header is taken exactly as RFC 6750 writes it, "Bearer" (in any
//  case, as RFC 9110 has schemes), one space and the token, whole: a
//  token followed by anything, a NUL included, is no token.
static bool s_authenticate(fq_api_call_t *call)
{
    s_header_t header = {0};
    MHD_get_connection_values_n(call->connection, MHD_HEADER_KIND, s_authorization, &header);
    const char *scheme = "Bearer ";
    size_t scheme_size = strlen(scheme);
    if (header.count != 1 || header.size < scheme_size ||
        strncasecmp(header.value, scheme, scheme_size) != 0) {
        fq_api_fail(call, MHD_HTTP_UNAUTHORIZED,
                    "a bearer token is needed (Authorization: Bearer TOKEN)");
        return false;
    }
    const char *token = header.value + scheme_size;
    if (!s_b64token(token, header.size - scheme_size) || s_value_cut(&header)) {
        fq_api_fail(call, MHD_HTTP_UNAUTHORIZED, "malformed bearer token");
        return false;
    }
    int rc = fq_store_token_lookup(call->store, token, &call->owner);
    //  A connection cut since fq_api_store looked (a database restart):
    //  connect again once, so this call does not fail for it
    if (rc == FQ_EDB && fq_api_reconnect(call))
        rc = fq_store_token_lookup(call->store, token, &call->owner);
    if (rc == FQ_ENOTFOUND) {
        fq_api_fail(call, MHD_HTTP_UNAUTHORIZED, "unknown token");
        return false;
    }
    if (rc) {
        fq_api_fail_store(call, rc);
        return false;
    }
    return true;
}

//  ---------------------------------------------------------------------
//  A call's admission and its body

//  What a connection's call collects between libmicrohttpd's rounds: its
//  path as it came (taken before libmicrohttpd decodes it), who it is and
//  where it goes (settled from the headers, before any body is read),
//  then the body.
typedef struct {
    char *raw_path;         //  The request's path, not decoded, without the query
    bool started;           //  Its headers went through the access handler
    const s_route_t *route; //  NULL when the call was answered at once
    s_path_t path;          //  The path's segments, decoded: params point into it
    const char *params[FQ_API_PARAMS_MAX];
    fq_token_owner_t owner;
    size_t announced; //  Content-Length, when one came: the body's size
    size_t body_max;  //  http_body_max when the call came (a reload may change it)
    fq_buf_t body;    //  Doubles as pieces come, up to the size announced
    bool too_large;   //  Over body_max: the rest is read and dropped
} s_upload_t;

static void s_upload_free(s_upload_t *upload)
{
    if (upload) {
        free(upload->raw_path);
        free(upload->path.segments);
        fq_buf_free(&upload->body);
        free(upload);
    }
}

static int s_hex_digit(char c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

//  Cuts raw (a path as it came, starting with '/') at each '/' and
//  decodes each segment's %XX escapes (an escape that is not one stays
//  as it is). Returns 0; 1 when a segment decodes to a '/' or a NUL,
//  which no route, id or name may hold (and a '/' must not become a
//  separator); -1 when memory runs out.
static int s_path_split(const char *raw, s_path_t *path)
{
    *path = (s_path_t){0};
    path->segments = malloc(strlen(raw) + 1);
    if (!path->segments)
        return -1;
    char *out = path->segments;
    for (const char *in = raw + 1;; in++) {
        if (*in == '/' || *in == '\0') {
            *out++ = '\0';
            path->count++;
            if (*in == '\0')
                return 0;
            continue;
        }
        int high = in[0] == '%' ? s_hex_digit(in[1]) : -1;
        int low = high >= 0 ? s_hex_digit(in[2]) : -1;
        if (low < 0) {
            *out++ = *in;
            continue;
        }
        char decoded = (char)(high * 16 + low);
        if (decoded == '/' || decoded == '\0')
            return 1;
        *out++ = decoded;
        in += 2;
    }
}

//  Finds the route of the call's method and path into upload; false after
//  answering 400 (a segment no route takes), 404 or 405 (with the methods
//  the path has).
static bool s_find_route(fq_api_call_t *call, s_upload_t *upload)
{
    const char *raw = upload->raw_path;
    int rc = raw[0] == '/' ? s_path_split(raw, &upload->path) : 0;
    if (rc < 0) {
        fq_api_fail(call, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
        return false;
    }
    if (rc > 0) {
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST,
                    "a path segment may not hold an escaped '/' or NUL (%%2F, %%00)");
        return false;
    }
    char allow[sizeof call->allow] = "";
    bool pages = call->server->unsubscribe_pages;
    const s_route_t *routes = pages ? s_unsubscribe_routes : s_routes;
    size_t count = pages ? S_UNSUBSCRIBE_ROUTE_COUNT : S_ROUTE_COUNT;
    for (size_t i = 0; upload->path.segments && i < count; i++) {
        const char *params[FQ_API_PARAMS_MAX] = {0};
        if (!s_route_matches(routes[i].pattern, &upload->path, params))
            continue;
        size_t used = strlen(allow);
        snprintf(allow + used, sizeof allow - used, "%s%s", used ? ", " : "", routes[i].method);
        if (!upload->route && strcmp(routes[i].method, call->method) == 0) {
            upload->route = &routes[i];
            memcpy(upload->params, params, sizeof upload->params);
        }
    }
    if (upload->route) {
        //  A parameter is a name or an id, and goes to the database as text
        for (int p = 0; p < FQ_API_PARAMS_MAX && upload->params[p]; p++)
            if (!fq_utf8_valid(upload->params[p], strlen(upload->params[p]))) {
                fq_api_fail(call, MHD_HTTP_BAD_REQUEST, "a path segment is not valid UTF-8");
                return false;
            }
        return true;
    }
    if (*allow) {
        fq_api_fail(call, MHD_HTTP_METHOD_NOT_ALLOWED, "%s is not allowed here; use %s",
                    call->method, allow);
        snprintf(call->allow, sizeof call->allow, "%s", allow);
    } else
        fq_api_fail(call, MHD_HTTP_NOT_FOUND, "no such route: %s %.200s", call->method, raw);
    return false;
}

//  How the call's body is framed, from its headers.
typedef struct {
    int lengths;   //  Content-Length headers
    int encodings; //  Transfer-Encoding headers
    const char *length;
    size_t length_size;
    const char *encoding;
    size_t encoding_size;
} s_framing_t;

static enum MHD_Result s_framing_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                        size_t key_size, const char *value, size_t value_size)
{
    (void)kind;
    (void)key_size;
    s_framing_t *framing = cls;
    if (strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH) == 0) {
        framing->lengths++;
        framing->length = value;
        framing->length_size = value_size;
    } else if (strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING) == 0) {
        framing->encodings++;
        framing->encoding = value;
        framing->encoding_size = value_size;
    }
    return MHD_YES;
}

//  The call's body must be framed one way only (RFC 9112 6.3): by one
//  Content-Length of digits alone, or by Transfer-Encoding: chunked alone
//  (HTTP/1.1), or not at all. A front proxy and fairqd that read an
//  ambiguous framing differently disagree on where the request ends, and
//  the bytes after it, a request smuggled in, would run as one of its
//  own. So such a call is refused and its connection closed before
//  anything after it is read. libmicrohttpd itself refuses a first
//  Content-Length that is not a number, before fairqd sees the call; it
//  closes the connection too. Returns false after answering 400.
static bool s_framing_ok(fq_api_call_t *call, const char *version, s_upload_t *upload)
{
    s_framing_t framing = {0};
    MHD_get_connection_values_n(call->connection, MHD_HEADER_KIND, s_framing_header, &framing);
    const char *problem = NULL;
    if (framing.lengths && framing.encodings)
        problem = "both Content-Length and Transfer-Encoding";
    else if (framing.lengths > 1)
        problem = "more than one Content-Length";
    else if (framing.encodings > 1)
        problem = "more than one Transfer-Encoding";
    else if (framing.lengths && (framing.length_size == 0 ||
                                 strspn(framing.length, "0123456789") != framing.length_size))
        problem = "a Content-Length that is not a number";
    else if (framing.encodings && (framing.encoding_size != strlen("chunked") ||
                                   strncasecmp(framing.encoding, "chunked", 7) != 0))
        problem = "a Transfer-Encoding other than chunked";
    else if (framing.encodings && strcmp(version, MHD_HTTP_VERSION_1_1) != 0)
        problem = "Transfer-Encoding in a request older than HTTP/1.1";
    if (!problem) {
        upload->announced = framing.lengths ? strtoull(framing.length, NULL, 10) : 0;
        return true;
    }
    call->close = true;
    fq_api_fail(call, MHD_HTTP_BAD_REQUEST, "the request's body is framed ambiguously: %s",
                problem);
    return false;
}

//  Whether GET /metrics needs no token (metrics_public, as last set).
static bool s_metrics_public(fq_http_t *self)
{
    return atomic_load_explicit(&self->metrics_public, memory_order_relaxed);
}

//  From the headers alone: the route, and the caller's token. A call that
//  may not go on is answered before a byte of its body is read, so nobody
//  without a token can make fairqd hold bodies. False after answering.
static bool s_admit(fq_api_call_t *call, s_upload_t *upload)
{
    upload->body_max = atomic_load_explicit(&call->server->body_max, memory_order_relaxed);
    if (upload->announced > upload->body_max) {
        fq_api_fail(call, MHD_HTTP_CONTENT_TOO_LARGE,
                    "the body is larger than %zu bytes (http_body_max)", upload->body_max);
        return false;
    }
    if (!s_find_route(call, upload))
        return false;
    s_auth_t auth = upload->route->auth;
    //  /healthz and a public /metrics report on the database themselves
    if (auth == S_AUTH_NONE || (auth == S_AUTH_METRICS && s_metrics_public(call->server)))
        return true;
    call->store = fq_api_store(call);
    if (!call->store || !s_authenticate(call) ||
        (auth != S_AUTH_TOKEN && !fq_api_require_admin(call)))
        return false;
    upload->owner = call->owner;
    return true;
}

//  Appends a piece of body; false when it would pass max (or memory ran
//  out, which is answered as too large too: the body cannot be taken).
//  The buffer doubles, but never beyond what the announced size or max
//  needs: a body is held once, not in a buffer up to twice its size.
static bool s_upload_add(s_upload_t *upload, const char *data, size_t size, size_t max)
{
    fq_buf_t *body = &upload->body;
    size_t bound =
        upload->announced && upload->announced >= body->size + size ? upload->announced : max;
    if (upload->too_large || size > max - body->size || fq_buf_reserve_bounded(body, size, bound) ||
        fq_buf_add(body, data, size)) {
        upload->too_large = true;
        return false;
    }
    return true;
}

//  Whether a call may run twice to the same effect: a read.
static bool s_safe_method(const char *method)
{
    return strcmp(method, MHD_HTTP_METHOD_GET) == 0 || strcmp(method, MHD_HTTP_METHOD_HEAD) == 0;
}

//  Forgets the answer a handler gave, before it runs again: every field
//  of "The answer" in fq_api_call_t but close, which the framing of the
//  call set, not the handler.
static void s_answer_reset(fq_api_call_t *call)
{
    json_decref(call->json);
    call->json = NULL;
    free(call->text);
    call->text = NULL;
    call->static_text = NULL;
    call->static_size = 0;
    call->text_type = NULL;
    call->status = 0;
    call->allow[0] = call->retry_after[0] = '\0';
    call->replayed = false;
    call->headers = NULL;
}

//  Runs the admitted call's handler, once its body is complete. A read
//  whose database connection was cut under it (and made again) runs once
//  more; a change answers 503, as it may or may not have been made.
static void s_run(fq_api_call_t *call, s_upload_t *upload)
{
    memcpy(call->params, upload->params, sizeof call->params);
    call->owner = upload->owner;
    call->body = upload->body.data ? upload->body.data : "";
    call->body_size = upload->body.size;
    s_auth_t auth = upload->route->auth;
    for (int attempt = 0;; attempt++) {
        if (auth == S_AUTH_METRICS && s_metrics_public(call->server)) {
            //  Public /metrics: the actors' figures are worth showing
            //  without the database (with fairq_database_up 0), so its 503
            //  is dropped
            call->store = fq_api_store(call);
            json_decref(call->json);
            call->json = NULL;
        } else if (auth != S_AUTH_NONE && !(call->store = fq_api_store(call)))
            return;
        call->lost = false;
        upload->route->handler(call);
        if (!call->lost || attempt > 0 || !s_safe_method(call->method))
            return;
        s_answer_reset(call);
    }
}

//  ---------------------------------------------------------------------
//  libmicrohttpd's callbacks

//  Called with each request's line, before libmicrohttpd decodes its
//  path: keeps the path as it came for routing. What it returns is the
//  call's state, freed by s_completed; NULL when memory runs out (the
//  access handler then drops the connection).
static void *s_request_started(void *cls, const char *uri, struct MHD_Connection *connection)
{
    (void)cls;
    (void)connection;
    s_upload_t *upload = calloc(1, sizeof *upload);
    if (upload && !(upload->raw_path = strndup(uri, strcspn(uri, "?")))) {
        free(upload);
        upload = NULL;
    }
    return upload;
}

static enum MHD_Result s_access(void *cls, struct MHD_Connection *connection, const char *url,
                                const char *method, const char *version, const char *upload_data,
                                size_t *upload_data_size, void **con_cls)
{
    (void)url; //  Decoded by libmicrohttpd: routing takes the path as it came
    fq_http_t *self = cls;
    s_upload_t *upload = *con_cls;
    if (!upload)
        return MHD_NO;
    fq_api_call_t call = {.server = self,
                          .connection = connection,
                          .method = method,
                          .path = self->unsubscribe_pages ? S_UNSUBSCRIBE_LOGGED_PATH
                                                          : upload->raw_path};
    if (!upload->started) {
        //  First round: the headers only
        upload->started = true;
        if (s_framing_ok(&call, version, upload) && s_admit(&call, upload))
            return MHD_YES;
        upload->route = NULL;
    } else if (*upload_data_size) {
        s_upload_add(upload, upload_data, *upload_data_size, upload->body_max);
        *upload_data_size = 0;
        return MHD_YES;
    } else if (upload->too_large)
        fq_api_fail(&call, MHD_HTTP_CONTENT_TOO_LARGE,
                    "the body is larger than %zu bytes (http_body_max)", upload->body_max);
    else
        s_run(&call, upload);
    enum MHD_Result rc = s_send(&call);
    json_decref(call.json);
    free(call.text);
    fq_log(FQ_LOG_DEBUG, "http: %s %.200s %u", method, call.path, call.status);
    return rc;
}

static void s_completed(void *cls, struct MHD_Connection *connection, void **con_cls,
                        enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)connection;
    (void)toe;
    s_upload_free(*con_cls);
    *con_cls = NULL;
}

//  Decodes %XX escapes in place, except %00: a NUL would cut the text
//  short. libmicrohttpd calls it for each query argument (and for the
//  path, which fairq routes as it came instead: s_request_started).
static size_t s_unescape(void *cls, struct MHD_Connection *connection, char *text)
{
    (void)cls;
    (void)connection;
    char *out = text;
    for (const char *in = text; *in; in++) {
        int high = in[0] == '%' ? s_hex_digit(in[1]) : -1;
        int low = high >= 0 ? s_hex_digit(in[2]) : -1;
        if (low >= 0 && (high || low)) {
            *out++ = (char)(high * 16 + low);
            in += 2;
        } else
            *out++ = *in;
    }
    *out = '\0';
    return (size_t)(out - text);
}

static void s_mhd_log(void *cls, const char *format, va_list args)
{
    fq_http_t *self = cls;
    pthread_mutex_lock(&self->log_lock);
    int64_t second = fq_api_now_ms() / S_MS_PER_S;
    if (second != self->log_second) {
        self->log_second = second;
        self->log_lines = 0;
    }
    bool logged = self->log_lines < S_MHD_LOG_PER_S;
    int dropped = 0;
    if (logged) {
        self->log_lines++;
        dropped = self->log_dropped;
        self->log_dropped = 0;
    } else
        self->log_dropped++;
    pthread_mutex_unlock(&self->log_lock);
    if (!logged)
        return;
    char line[512];
    vsnprintf(line, sizeof line, format, args);
    //  MHD ends its lines with a newline; fq_log adds its own
    line[strcspn(line, "\n")] = '\0';
    if (dropped)
        fq_log(FQ_LOG_WARNING, "http: %s (and %d more messages left out)", line, dropped);
    else
        fq_log(FQ_LOG_WARNING, "http: %s", line);
}

//  ---------------------------------------------------------------------
//  Starting and stopping

//  Resolves "host:port" ("[v6]:port") into addr. Returns 0 or -1 with the
//  reason in error.
static int s_resolve(const char *listen, struct sockaddr_storage *addr, char *error,
                     size_t error_size)
{
    char host[S_HOST_MAX], port[S_PORT_MAX];
    const char *colon = strrchr(listen, ':');
    size_t host_len = colon ? (size_t)(colon - listen) : 0;
    if (!colon || host_len == 0 || host_len >= sizeof host || strlen(colon + 1) == 0 ||
        strlen(colon + 1) >= sizeof port || strspn(colon + 1, "0123456789") != strlen(colon + 1)) {
        fq_error_format(error, error_size,
                        "invalid http_listen \"%s\": expected host:port, e.g. 127.0.0.1:8080",
                        listen);
        return -1;
    }
    memcpy(host, listen, host_len);
    host[host_len] = '\0';
    if (host[0] == '[' && host[host_len - 1] == ']') { //  [::1]
        memmove(host, host + 1, host_len - 2);
        host[host_len - 2] = '\0';
    }
    snprintf(port, sizeof port, "%s", colon + 1);
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE},
                    *found = NULL;
    int rc = getaddrinfo(strcmp(host, "*") == 0 ? NULL : host, port, &hints, &found);
    if (rc != 0 || !found) {
        fq_error_format(error, error_size, "could not resolve http_listen \"%s\": %s", listen,
                        gai_strerror(rc));
        return -1;
    }
    memcpy(addr, found->ai_addr, found->ai_addrlen);
    freeaddrinfo(found);
    return 0;
}

//  Makes room for connections_max connections in the process's limit of
//  open files: the soft limit is raised as far as they need, never past
//  the hard limit (which only root may raise). Returns 0, or -1 with the
//  reason in error when the hard limit is too low.
static int s_reserve_files(int connections_max, char *error, size_t error_size)
{
    struct rlimit limit;
    if (getrlimit(RLIMIT_NOFILE, &limit) != 0)
        return 0; //  Not known: libmicrohttpd refuses what it cannot open
    rlim_t needed = (rlim_t)connections_max + S_FILES_RESERVED;
    if (limit.rlim_cur == RLIM_INFINITY || limit.rlim_cur >= needed)
        return 0;
    if (limit.rlim_max != RLIM_INFINITY && limit.rlim_max < needed) {
        fq_error_format(error, error_size,
                        "http_connections_max = %d needs %llu open files with what fairqd opens "
                        "besides, but the hard limit of open files is %llu: lower "
                        "http_connections_max or raise the limit (ulimit -Hn, LimitNOFILE=)",
                        connections_max, (unsigned long long)needed,
                        (unsigned long long)limit.rlim_max);
        return -1;
    }
    rlim_t was = limit.rlim_cur;
    limit.rlim_cur = needed;
    if (setrlimit(RLIMIT_NOFILE, &limit) != 0) {
        fq_error_format(error, error_size, "could not raise the limit of open files to %llu: %s",
                        (unsigned long long)needed, strerror(errno));
        return -1;
    }
    fq_log(FQ_LOG_INFO, "http: open files limit raised from %llu to %llu for %d connections",
           (unsigned long long)was, (unsigned long long)needed, connections_max);
    return 0;
}

fq_http_t *fq_http_new(const fq_http_config_t *config, char *error, size_t error_size)
{
    struct sockaddr_storage addr = {0};
    if (s_resolve(config->listen, &addr, error, error_size) != 0)
        return NULL;
    int connections_max =
        config->connections_max > 0 ? config->connections_max : FQ_HTTP_CONNECTIONS_MAX;
    int per_ip =
        config->connections_per_ip > 0 ? config->connections_per_ip : FQ_HTTP_CONNECTIONS_PER_IP;
    int idle_timeout_s =
        config->idle_timeout_s > 0 ? config->idle_timeout_s : FQ_HTTP_IDLE_TIMEOUT_S;
    int threads = config->threads > 0 ? config->threads : 1;
    //  libmicrohttpd shares the total among its threads: each takes at
    //  least one
    if (connections_max < threads) {
        fq_error_format(error, error_size,
                        "http_connections_max = %d must be at least http_threads = %d",
                        connections_max, threads);
        return NULL;
    }
    if (s_reserve_files(connections_max, error, error_size) != 0)
        return NULL;
    fq_http_t *self = calloc(1, sizeof *self);
    if (!self || !(self->database = strdup(config->database ? config->database : "")) ||
        pthread_key_create(&self->store_key, s_thread_free) != 0) {
        fq_error_format(error, error_size, "could not start the HTTP server: out of memory");
        if (self) {
            free(self->database);
            free(self);
        }
        return NULL;
    }
    pthread_mutex_init(&self->log_lock, NULL);
    fq_http_set_live(self, config);
    self->unsubscribe_on = config->unsubscribe_url && *config->unsubscribe_url;
    if (config->unsubscribe_key) {
        self->unsubscribe_pages = true;
        memcpy(self->unsubscribe_key, config->unsubscribe_key, sizeof self->unsubscribe_key);
    }
    self->lease = config->lease;
    self->metrics = config->metrics;
    self->system = config->system;
    //  fairqd checked the codes as it read them: a list that is none
    //  suppresses no bounce
    if (fq_store_bounce_pattern(config->suppress_bounces, self->bounce_pattern, NULL, 0) != 0)
        self->bounce_pattern[0] = 0;
    self->suppress_complaints = config->suppress_complaints;
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG | MHD_USE_POLL;
    if (addr.ss_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    //  The logger first: MHD logs about the options it reads after it
    self->daemon = MHD_start_daemon(
        flags, 0, NULL, NULL, s_access, self, MHD_OPTION_EXTERNAL_LOGGER, s_mhd_log, self,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr, MHD_OPTION_THREAD_POOL_SIZE,
        (unsigned)threads, MHD_OPTION_URI_LOG_CALLBACK, s_request_started, self,
        MHD_OPTION_NOTIFY_COMPLETED, s_completed, self, MHD_OPTION_UNESCAPE_CALLBACK, s_unescape,
        self, MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)S_CONNECTION_MEMORY,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)connections_max, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
        (unsigned)per_ip, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)idle_timeout_s, MHD_OPTION_END);
    if (!self->daemon) {
        fq_error_format(error, error_size, "could not listen on %s: %s", config->listen,
                        strerror(errno ? errno : EADDRINUSE));
        fq_http_destroy(&self);
        return NULL;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(self->daemon, MHD_DAEMON_INFO_BIND_PORT);
    self->port = info ? info->port : 0;
    return self;
}

void fq_http_destroy(fq_http_t **self_p)
{
    fq_http_t *self = *self_p;
    if (!self)
        return;
    //  Joins the pool threads; each closes its connection as it ends
    if (self->daemon)
        MHD_stop_daemon(self->daemon);
    pthread_key_delete(self->store_key);
    pthread_mutex_destroy(&self->log_lock);
    sodium_memzero(self->unsubscribe_key, sizeof self->unsubscribe_key);
    free(self->database);
    free(self);
    *self_p = NULL;
}

int fq_http_port(fq_http_t *self)
{
    return self->port;
}

void fq_http_set_live(fq_http_t *self, const fq_http_config_t *config)
{
    //  Each setting on its own: a call sees each one as it was or as it
    //  is, never a torn value (relaxed: no other memory hangs on them)
    atomic_store_explicit(&self->body_max, config->body_max, memory_order_relaxed);
    atomic_store_explicit(&self->metrics_public, config->metrics_public, memory_order_relaxed);
    atomic_store_explicit(&self->tenant_weight, config->tenant_defaults.weight,
                          memory_order_relaxed);
    atomic_store_explicit(&self->tenant_max_inflight, config->tenant_defaults.max_inflight,
                          memory_order_relaxed);
    atomic_store_explicit(&self->tenant_submit_rate, config->tenant_defaults.submit_rate,
                          memory_order_relaxed);
}
