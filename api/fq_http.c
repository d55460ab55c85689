/*  fq_http.c — the HTTP server: accepting calls, bodies, authentication,
    routing and answering (see fq_http.h; the routes are api/API.md).

    A call goes through libmicrohttpd's access handler several times: once
    with its headers (a body announced larger than body_max is refused
    there, before it is read), once per piece of body, and once more when
    the body is complete, when it is authenticated and routed. The route's
    handler runs in the pool thread with that thread's own database
    connection.
*/
#include "fq_api_internal.h"
#include "fq_error.h"
#include "fq_log.h"
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define S_CONTENT_JSON "application/json"

//  After failing to connect to the database, a pool thread answers 503 at
//  once for this long before it tries again.
#define S_RECONNECT_PAUSE_MS 1000

//  A body's buffer starts at this and doubles as pieces come.
#define S_BODY_FIRST 4096

//  Longest "host" of http_listen, and of the port's digits.
#define S_HOST_MAX 256
#define S_PORT_MAX 8

//  A call whose headers alone take more than this is refused by MHD with
//  431; bodies are limited by body_max instead.
#define S_CONNECTION_MEMORY (64 * 1024)

//  An idle keep-alive connection is closed after this many seconds, so
//  clients that vanish do not hold a pool thread's slots for ever.
#define S_CONNECTION_TIMEOUT_S 60

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
    {"GET", "/v1/messages/{}", fq_api_message_get, S_AUTH_TOKEN},
    {"POST", "/v1/messages/{}/retry", fq_api_message_retry, S_AUTH_TOKEN},
    {"GET", "/v1/tenants", fq_api_tenant_list, S_AUTH_TOKEN},
    {"GET", "/v1/tenants/{}", fq_api_tenant_get, S_AUTH_TOKEN},
    {"PUT", "/v1/tenants/{}", fq_api_tenant_put, S_AUTH_ADMIN},
    {"POST", "/v1/tenants/{}/tokens", fq_api_tenant_token, S_AUTH_ADMIN},
    {"GET", "/v1/tenants/{}/tokens", fq_api_tenant_tokens, S_AUTH_ADMIN},
    {"DELETE", "/v1/tenants/{}/tokens/{}", fq_api_tenant_token_revoke, S_AUTH_ADMIN},
};
#define S_ROUTE_COUNT (sizeof s_routes / sizeof s_routes[0])

//  Matches path against pattern, segment by segment; "{}" takes any
//  non-empty segment, written into params (pointing into scratch, a copy
//  of path cut at each '/'). An empty segment (a doubled or trailing '/')
//  matches nothing.
static bool s_route_matches(const char *pattern, const char *path, char *scratch,
                            const char **params)
{
    strcpy(scratch, path);
    char *s = scratch;
    char at_s = *s; //  What scratch held at s before it was cut there
    const char *p = pattern;
    int nparams = 0;
    while (*p) {
        if (*p != '/' || at_s != '/')
            return false;
        p++, s++;
        size_t p_len = strcspn(p, "/"), s_len = strcspn(s, "/");
        if (s_len == 0)
            return false;
        if (p_len == 2 && strncmp(p, "{}", 2) == 0) {
            if (nparams == FQ_API_PARAMS_MAX)
                return false;
            params[nparams++] = s;
        } else if (p_len != s_len || strncmp(p, s, p_len) != 0)
            return false;
        p += p_len;
        s += s_len;
        at_s = *s;
        *s = '\0';
    }
    return at_s == '\0';
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
    call->status = status;
    call->json = json ? json : json_object();
}

//  How many bytes of valid UTF-8 (RFC 3629: no overlong forms, no
//  surrogates, nothing past U+10FFFF) start at p; 0 when none do.
static int s_utf8_char(const unsigned char *p)
{
    if (p[0] < 0x80)
        return 1;
    int length = p[0] >= 0xc2 && p[0] <= 0xdf   ? 2
                 : p[0] >= 0xe0 && p[0] <= 0xef ? 3
                 : p[0] >= 0xf0 && p[0] <= 0xf4 ? 4
                                                : 0;
    for (int i = 1; i < length; i++)
        if ((p[i] & 0xc0) != 0x80)
            return 0;
    //  The second byte's range where the first allows less than 80..BF
    if ((p[0] == 0xe0 && p[1] < 0xa0) || (p[0] == 0xed && p[1] > 0x9f) ||
        (p[0] == 0xf0 && p[1] < 0x90) || (p[0] == 0xf4 && p[1] > 0x8f))
        return 0;
    return length;
}

//  Replaces each byte of text that is not part of valid UTF-8 with '?':
//  a detail may quote a path or a value as it came, and a JSON string must
//  be UTF-8 (jansson refuses to make one of anything else).
static void s_utf8_clean(char *text)
{
    unsigned char *p = (unsigned char *)text;
    while (*p) {
        int length = s_utf8_char(p);
        if (length)
            p += length;
        else
            *p++ = '?';
    }
}

void fq_api_fail(fq_api_call_t *call, unsigned status, const char *format, ...)
{
    char detail[1024];
    va_list args;
    va_start(args, format);
    vsnprintf(detail, sizeof detail, format, args);
    va_end(args);
    s_utf8_clean(detail);
    fq_api_reply(call, status,
                 json_pack("{s:s, s:s}", "error", s_error_code(status), "detail", detail));
}

void fq_api_fail_store(fq_api_call_t *call, int rc)
{
    const char *message = fq_store_error(call->store);
    if (rc == FQ_ENOTFOUND)
        fq_api_fail(call, MHD_HTTP_NOT_FOUND, "%s", message);
    else if (rc == FQ_EINVAL)
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST, "%s", message);
    else if (rc == FQ_ECONFLICT)
        fq_api_fail(call, MHD_HTTP_CONFLICT, "%s", message);
    else if (!fq_store_connected(call->store))
        s_unavailable(call, pthread_getspecific(call->server->store_key), message);
    else {
        //  The database's own words stay in the log: they may name tables,
        //  hosts and users
        fq_log(FQ_LOG_ERROR, "http: %s %.200s: %s", call->method, call->url, message);
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
    char *text;
    size_t size;
    const char *type;
    if (call->text) {
        text = call->text;
        call->text = NULL;
        type = call->text_type;
    } else {
        if (!call->json)
            fq_api_fail(call, MHD_HTTP_INTERNAL_SERVER_ERROR, "no answer");
        text = json_dumps(call->json, JSON_COMPACT);
        type = S_CONTENT_JSON;
    }
    size = text ? strlen(text) : 0;
    struct MHD_Response *response =
        text ? MHD_create_response_from_buffer(size, text, MHD_RESPMEM_MUST_FREE) : NULL;
    if (!response) {
        free(text);
        return MHD_NO;
    }
    MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    if (call->status == MHD_HTTP_UNAUTHORIZED)
        MHD_add_response_header(response, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
    if (call->allow[0])
        MHD_add_response_header(response, MHD_HTTP_HEADER_ALLOW, call->allow);
    if (call->retry_after[0])
        MHD_add_response_header(response, MHD_HTTP_HEADER_RETRY_AFTER, call->retry_after);
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

static int64_t s_now_ms(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

//  Notes that the thread could not reach the database. The reason
//  (libpq's text names hosts, users, what failed) goes to the log, once
//  per outage of each thread, never to callers, who may not even have a
//  token.
static void s_failed(s_thread_t *thread, const char *reason)
{
    if (!thread->failed_at_ms)
        fq_log(FQ_LOG_WARNING, "http: %s", reason);
    thread->failed_at_ms = s_now_ms();
}

//  Notes that the thread is connected: others stop pausing before they
//  try again.
static void s_connected(fq_http_t *self, s_thread_t *thread)
{
    if (thread->failed_at_ms)
        fq_log(FQ_LOG_INFO, "http: connected to database again");
    thread->failed_at_ms = 0;
    atomic_store(&self->connected_at_ms, s_now_ms());
}

//  Answers 503 for a database that cannot be reached.
static void s_unavailable(fq_api_call_t *call, s_thread_t *thread, const char *reason)
{
    if (thread)
        s_failed(thread, reason);
    fq_api_fail(call, MHD_HTTP_SERVICE_UNAVAILABLE,
                "the database cannot be reached; fairqd keeps trying");
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
    if (thread->store && fq_store_connected(thread->store))
        return thread->store;
    //  A database that just failed is not tried again at once: each try
    //  may take connect_timeout, and this thread serves other calls too.
    //  Unless another thread has connected since: then it is back
    int64_t connected_at = atomic_load(&self->connected_at_ms);
    if (thread->failed_at_ms && connected_at < thread->failed_at_ms &&
        s_now_ms() - thread->failed_at_ms < S_RECONNECT_PAUSE_MS) {
        fq_api_fail(call, MHD_HTTP_SERVICE_UNAVAILABLE,
                    "the database cannot be reached; fairqd keeps trying");
        return NULL;
    }
    char error[1024];
    if (thread->store && fq_store_reconnect(thread->store) != 0) {
        s_unavailable(call, thread, fq_store_error(thread->store));
        return NULL;
    }
    if (!thread->store && !(thread->store = fq_store_new(self->database, error, sizeof error))) {
        s_unavailable(call, thread, error);
        return NULL;
    }
    s_connected(self, thread);
    return thread->store;
}

bool fq_api_reconnect(fq_api_call_t *call)
{
    s_thread_t *thread = pthread_getspecific(call->server->store_key);
    if (!thread || !thread->store || fq_store_connected(thread->store))
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

//  Takes the bearer token of the call; false after answering 401 or 503.
static bool s_authenticate(fq_api_call_t *call)
{
    const char *header = MHD_lookup_connection_value(call->connection, MHD_HEADER_KIND,
                                                     MHD_HTTP_HEADER_AUTHORIZATION);
    const char *scheme = "Bearer ";
    if (!header || strncasecmp(header, scheme, strlen(scheme)) != 0) {
        fq_api_fail(call, MHD_HTTP_UNAUTHORIZED,
                    "a bearer token is needed (Authorization: Bearer TOKEN)");
        return false;
    }
    const char *token = header + strlen(scheme);
    while (*token == ' ')
        token++;
    int rc = fq_store_token_lookup(call->store, token, &call->owner);
    //  The first query after the database restarted finds the connection
    //  cut: connect again once, so this call does not fail for it
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

//  What a connection's call collects between libmicrohttpd's rounds: who
//  it is and where it goes (settled from the headers, before any body is
//  read), then the body.
typedef struct {
    const s_route_t *route; //  NULL when the call was answered at once
    char *path;             //  A copy of the URL cut into segments: params point into it
    const char *params[FQ_API_PARAMS_MAX];
    fq_token_owner_t owner;
    char *body;
    size_t size;
    size_t capacity;
    bool too_large; //  Over body_max: the rest is read and dropped
} s_upload_t;

static void s_upload_free(s_upload_t *upload)
{
    if (upload) {
        free(upload->path);
        free(upload->body);
        free(upload);
    }
}

//  Finds the route of the call's method and url into upload; false after
//  answering 404 or 405 (with the methods the path has).
static bool s_find_route(fq_api_call_t *call, const char *url, s_upload_t *upload)
{
    size_t size = strlen(url) + 1;
    char *scratch = malloc(size);
    upload->path = malloc(size);
    if (!scratch || !upload->path) {
        free(scratch);
        fq_api_fail(call, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
        return false;
    }
    char allow[sizeof call->allow] = "";
    for (size_t i = 0; i < S_ROUTE_COUNT; i++) {
        const char *params[FQ_API_PARAMS_MAX] = {0};
        if (!s_route_matches(s_routes[i].pattern, url, scratch, params))
            continue;
        size_t used = strlen(allow);
        snprintf(allow + used, sizeof allow - used, "%s%s", used ? ", " : "", s_routes[i].method);
        if (!upload->route && strcmp(s_routes[i].method, call->method) == 0) {
            upload->route = &s_routes[i];
            memcpy(upload->path, scratch, size);
            for (int p = 0; p < FQ_API_PARAMS_MAX; p++)
                upload->params[p] = params[p] ? upload->path + (params[p] - scratch) : NULL;
        }
    }
    free(scratch);
    if (upload->route)
        return true;
    if (*allow) {
        fq_api_fail(call, MHD_HTTP_METHOD_NOT_ALLOWED, "%s is not allowed here; use %s",
                    call->method, allow);
        snprintf(call->allow, sizeof call->allow, "%s", allow);
    } else
        fq_api_fail(call, MHD_HTTP_NOT_FOUND, "no such route: %s %.200s", call->method, url);
    return false;
}

//  From the headers alone: the route, and the caller's token. A call that
//  may not go on is answered before a byte of its body is read, so nobody
//  without a token can make fairqd hold bodies. False after answering.
static bool s_admit(fq_api_call_t *call, const char *url, s_upload_t *upload)
{
    const char *length = MHD_lookup_connection_value(call->connection, MHD_HEADER_KIND,
                                                     MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (length && strtoull(length, NULL, 10) > call->server->body_max) {
        fq_api_fail(call, MHD_HTTP_CONTENT_TOO_LARGE,
                    "the body is larger than %zu bytes (http_body_max)", call->server->body_max);
        return false;
    }
    if (!s_find_route(call, url, upload))
        return false;
    s_auth_t auth = upload->route->auth;
    //  /healthz and a public /metrics report on the database themselves
    if (auth == S_AUTH_NONE || (auth == S_AUTH_METRICS && call->server->metrics_public))
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
//  The buffer doubles, but never beyond what max needs.
static bool s_upload_add(s_upload_t *upload, const char *data, size_t size, size_t max)
{
    if (upload->too_large || size > max - upload->size) {
        upload->too_large = true;
        return false;
    }
    if (upload->size + size + 1 > upload->capacity) {
        size_t capacity = upload->capacity ? upload->capacity : S_BODY_FIRST;
        while (capacity < upload->size + size + 1)
            capacity *= 2;
        if (capacity > max + 1)
            capacity = max + 1;
        char *body = realloc(upload->body, capacity);
        if (!body) {
            upload->too_large = true;
            return false;
        }
        upload->body = body;
        upload->capacity = capacity;
    }
    memcpy(upload->body + upload->size, data, size);
    upload->size += size;
    upload->body[upload->size] = '\0';
    return true;
}

//  Runs the admitted call's handler, once its body is complete.
static void s_run(fq_api_call_t *call, s_upload_t *upload)
{
    memcpy(call->params, upload->params, sizeof call->params);
    call->owner = upload->owner;
    call->body = upload->body ? upload->body : "";
    call->body_size = upload->size;
    s_auth_t auth = upload->route->auth;
    if (auth == S_AUTH_METRICS && call->server->metrics_public) {
        //  Public /metrics: the actors' figures are worth showing without
        //  the database (with fairq_database_up 0), so its 503 is dropped
        call->store = fq_api_store(call);
        json_decref(call->json);
        call->json = NULL;
    } else if (auth != S_AUTH_NONE && !(call->store = fq_api_store(call)))
        return;
    upload->route->handler(call);
}

//  ---------------------------------------------------------------------
//  libmicrohttpd's callbacks

static enum MHD_Result s_access(void *cls, struct MHD_Connection *connection, const char *url,
                                const char *method, const char *version, const char *upload_data,
                                size_t *upload_data_size, void **con_cls)
{
    (void)version;
    fq_http_t *self = cls;
    s_upload_t *upload = *con_cls;
    fq_api_call_t call = {.server = self, .connection = connection, .method = method, .url = url};
    if (!upload) {
        //  First round: the headers only
        upload = calloc(1, sizeof *upload);
        if (!upload)
            return MHD_NO;
        *con_cls = upload;
        if (s_admit(&call, url, upload))
            return MHD_YES;
        upload->route = NULL;
    } else if (*upload_data_size) {
        s_upload_add(upload, upload_data, *upload_data_size, self->body_max);
        *upload_data_size = 0;
        return MHD_YES;
    } else if (upload->too_large)
        fq_api_fail(&call, MHD_HTTP_CONTENT_TOO_LARGE,
                    "the body is larger than %zu bytes (http_body_max)", self->body_max);
    else
        s_run(&call, upload);
    enum MHD_Result rc = s_send(&call);
    json_decref(call.json);
    free(call.text);
    fq_log(FQ_LOG_DEBUG, "http: %s %.200s %u", method, url, call.status);
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
//  short, so "/v1/requests/1%00" would read as request 1. Left as it is,
//  it fails to parse like any other odd character.
static size_t s_unescape(void *cls, struct MHD_Connection *connection, char *text)
{
    (void)cls;
    (void)connection;
    char *out = text;
    for (const char *in = text; *in; in++) {
        unsigned value;
        if (in[0] == '%' && isxdigit((unsigned char)in[1]) && isxdigit((unsigned char)in[2]) &&
            sscanf(in + 1, "%2x", &value) == 1 && value != 0) {
            *out++ = (char)value;
            in += 2;
        } else
            *out++ = *in;
    }
    *out = '\0';
    return (size_t)(out - text);
}

static void s_mhd_log(void *cls, const char *format, va_list args)
{
    (void)cls;
    char line[512];
    vsnprintf(line, sizeof line, format, args);
    //  MHD ends its lines with a newline; fq_log adds its own
    line[strcspn(line, "\n")] = '\0';
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

fq_http_t *fq_http_new(const fq_http_config_t *config, char *error, size_t error_size)
{
    struct sockaddr_storage addr = {0};
    if (s_resolve(config->listen, &addr, error, error_size) != 0)
        return NULL;
    fq_http_t *self = calloc(1, sizeof *self);
    if (!self || !(self->database = strdup(config->database ? config->database : "")) ||
        !(self->submits = fq_rate_limit_new()) ||
        pthread_key_create(&self->store_key, s_thread_free) != 0) {
        fq_error_format(error, error_size, "could not start the HTTP server: out of memory");
        if (self) {
            fq_rate_limit_destroy(&self->submits);
            free(self->database);
            free(self);
        }
        return NULL;
    }
    self->body_max = config->body_max;
    self->metrics_public = config->metrics_public;
    self->metrics = config->metrics;
    self->system = config->system;
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG | MHD_USE_POLL;
    if (addr.ss_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    //  The logger first: MHD logs about the options it reads after it
    self->daemon = MHD_start_daemon(
        flags, 0, NULL, NULL, s_access, self, MHD_OPTION_EXTERNAL_LOGGER, s_mhd_log, self,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr, MHD_OPTION_THREAD_POOL_SIZE,
        (unsigned)(config->threads > 0 ? config->threads : 1), MHD_OPTION_NOTIFY_COMPLETED,
        s_completed, self, MHD_OPTION_UNESCAPE_CALLBACK, s_unescape, self,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)S_CONNECTION_MEMORY,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)S_CONNECTION_TIMEOUT_S, MHD_OPTION_END);
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
    fq_rate_limit_destroy(&self->submits);
    free(self->database);
    free(self);
    *self_p = NULL;
}

int fq_http_port(fq_http_t *self)
{
    return self->port;
}
