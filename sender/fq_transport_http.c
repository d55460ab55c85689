/*  fq_transport_http.c — the http kind: libcurl's HTTP client (contract
    in fq_transport_http.h).

    One easy handle lives as long as the transport, and with it libcurl's
    cache of open connections: a request to a host this handle spoke to
    before goes over the same connection when the server kept it open
    (HTTP/1.1 keep-alive), and libcurl retries on a fresh connection a
    request whose reused one turned out closed before any answer. Options
    that do not change are set once; each delivery sets its URL, method,
    body and headers, and resets what the previous one set.

    What is read of an answer is bounded: the status line, the
    Retry-After header, and S_BODY_KEEP bytes of the body for the error
    message. The rest of the body is read and dropped, so that the
    connection can serve the next request, up to S_BODY_READ_MAX; a body
    larger still ends the transfer (and its connection) — the status has
    arrived by then, and it alone decides.
*/
#include "fq_error.h"
#include "fq_transport_http.h"
#include <assert.h>
#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

//  The version, passed by CMake from project(fairq VERSION ...).
#ifndef FQ_VERSION
#define FQ_VERSION "unknown"
#endif

//  Says who calls, so that a receiver's logs name us.
#define S_USER_AGENT "fairq-sender/" FQ_VERSION

//  A request that takes longer has failed (transiently): long enough for
//  a slow webhook receiver, short enough that a hung one does not hold a
//  worker for minutes. Opening the connection (TCP and TLS) gets less: a
//  host that does not answer a SYN in 10 s is down.
#define S_TIMEOUT_DEFAULT_MS         30000
#define S_CONNECT_TIMEOUT_DEFAULT_MS 10000

//  Of a response's body, what is kept for the error (the error shows
//  S_BODY_SHOWN bytes of it), and what is read at most: a larger body
//  ends the transfer rather than keep a worker busy downloading it.
#define S_BODY_KEEP      4096
#define S_BODY_SHOWN     200
#define S_BODY_READ_MAX  (1024 * 1024)
#define S_REASON_SIZE    128
#define S_RETRY_AFTER_SZ 64

//  libcurl may speak only these: no URL of a message can make the handle
//  read a file or speak another protocol.
#define S_PROTOCOLS "http,https"

//  Status classes and the statuses of class 4 that are worth a retry:
//  408 Request Timeout, 425 Too Early, 429 Too Many Requests; and 503
//  Service Unavailable, which throttles when it says how long to wait.
#define S_STATUS_CLASS        100
#define S_CLASS_SUCCESS       2
#define S_CLASS_REDIRECT      3
#define S_CLASS_SERVER        5
#define S_REQUEST_TIMEOUT     408
#define S_TOO_EARLY           425
#define S_TOO_MANY_REQUESTS   429
#define S_SERVICE_UNAVAILABLE 503

//  The methods a message may have; the first is the default.
static const char *const s_methods[] = {"POST", "PUT", "PATCH", "DELETE", "GET"};
#define S_METHOD_DEFAULT s_methods[0]

//  Headers a message may not set: libcurl frames the body, and another
//  length than the body's would make the receiver misread the connection.
static const char *const s_framing_headers[] = {"Content-Length", "Transfer-Encoding"};

struct fq_http {
    CURL *curl;
    char curl_error[CURL_ERROR_SIZE]; //  libcurl's detail of the last failure
    //  The answer being read (s_header, s_write)
    char body[S_BODY_KEEP];
    size_t body_len;  //  Kept
    size_t body_read; //  Read in all
    bool body_cut;    //  Past S_BODY_READ_MAX: the transfer was ended
    char reason[S_REASON_SIZE];
    char retry_after[S_RETRY_AFTER_SZ];
};

// --------------------------------------------------------------------------
//  What the server says

//  One header line of the answer (CRLF included). A status line starts a
//  response (an interim 100 Continue comes before the final one): what
//  an earlier one said is forgotten.
static size_t s_header(char *data, size_t size, size_t nitems, void *userdata)
{
    fq_http_t *self = userdata;
    size_t len = size * nitems;
    size_t end = len;
    while (end > 0 && (data[end - 1] == '\r' || data[end - 1] == '\n'))
        end--;
    static const char status_prefix[] = "HTTP/";
    static const char retry_name[] = "Retry-After:";
    if (end >= sizeof status_prefix - 1 &&
        strncmp(data, status_prefix, sizeof status_prefix - 1) == 0) {
        self->retry_after[0] = 0;
        //  "HTTP/1.1 503 Service Unavailable": the words after the code
        const char *at = memchr(data, ' ', end);
        at = at ? memchr(at + 1, ' ', end - (size_t)(at + 1 - data)) : NULL;
        if (at)
            fq_transport_text_line(self->reason, sizeof self->reason, at + 1,
                                   end - (size_t)(at + 1 - data));
        else
            self->reason[0] = 0;
    } else if (end >= sizeof retry_name - 1 &&
               strncasecmp(data, retry_name, sizeof retry_name - 1) == 0) {
        const char *value = data + sizeof retry_name - 1;
        size_t value_len = end - (sizeof retry_name - 1);
        while (value_len > 0 && (*value == ' ' || *value == '\t')) {
            value++;
            value_len--;
        }
        while (value_len > 0 && (value[value_len - 1] == ' ' || value[value_len - 1] == '\t'))
            value_len--;
        fq_transport_text_line(self->retry_after, sizeof self->retry_after, value, value_len);
    }
    return len;
}

//  The body: the first S_BODY_KEEP bytes are kept, the rest dropped.
static size_t s_write(char *data, size_t size, size_t nmemb, void *userdata)
{
    fq_http_t *self = userdata;
    size_t len = size * nmemb;
    size_t room = sizeof self->body - self->body_len;
    size_t keep = len < room ? len : room;
    memcpy(self->body + self->body_len, data, keep);
    self->body_len += keep;
    self->body_read += len;
    if (self->body_read > S_BODY_READ_MAX) {
        self->body_cut = true;
        return 0; //  Ends the transfer: CURLE_WRITE_ERROR
    }
    return len;
}

//  The seconds a Retry-After value asks for: delta-seconds ("120") or an
//  HTTP-date, capped; 0 for none, a date past, or a value that is neither.
static uint32_t s_retry_after(const char *value)
{
    if (!*value)
        return 0;
    if (strspn(value, "0123456789") == strlen(value)) {
        errno = 0;
        unsigned long long seconds = strtoull(value, NULL, 10);
        if (errno == ERANGE || seconds > FQ_TRANSPORT_RETRY_AFTER_MAX_S)
            return FQ_TRANSPORT_RETRY_AFTER_MAX_S;
        return (uint32_t)seconds;
    }
    time_t when = curl_getdate(value, NULL);
    time_t now = time(NULL);
    if (when == -1 || when <= now)
        return 0;
    if (when - now > FQ_TRANSPORT_RETRY_AFTER_MAX_S)
        return FQ_TRANSPORT_RETRY_AFTER_MAX_S;
    return (uint32_t)(when - now);
}

// --------------------------------------------------------------------------
//  Set-up

fq_http_t *fq_http_new(const fq_transport_config_t *cfg, char *error, size_t error_size)
{
    if (cfg->ca_file && *cfg->ca_file && access(cfg->ca_file, R_OK) != 0) {
        fq_error_format(error, error_size, "could not read the CA file %s: %s", cfg->ca_file,
                        strerror(errno));
        return NULL;
    }
    if (fq_transport_curl_init(error, error_size) != 0)
        return NULL;
    fq_http_t *self = calloc(1, sizeof *self);
    if (!self || !(self->curl = curl_easy_init())) {
        fq_error_format(error, error_size, "out of memory");
        free(self);
        return NULL;
    }
    long timeout_ms = cfg->timeout_ms > 0 ? cfg->timeout_ms : S_TIMEOUT_DEFAULT_MS;
    long connect_ms =
        cfg->connect_timeout_ms > 0 ? cfg->connect_timeout_ms : S_CONNECT_TIMEOUT_DEFAULT_MS;
    if (connect_ms > timeout_ms)
        connect_ms = timeout_ms;
    CURL *curl = self->curl;
    CURLcode rc = CURLE_OK;
#define S_SET(option, value)                                                                       \
    do {                                                                                           \
        if (rc == CURLE_OK)                                                                        \
            rc = curl_easy_setopt(curl, option, value);                                            \
    } while (0)
    S_SET(CURLOPT_PROTOCOLS_STR, S_PROTOCOLS);
    //  A redirect is the receiver's answer, not a new destination
    S_SET(CURLOPT_FOLLOWLOCATION, 0L);
    //  Worker threads: no SIGALRM for timeouts, no signals at all
    S_SET(CURLOPT_NOSIGNAL, 1L);
    S_SET(CURLOPT_USERAGENT, S_USER_AGENT);
    if (cfg->insecure_tls) {
        S_SET(CURLOPT_SSL_VERIFYPEER, 0L);
        S_SET(CURLOPT_SSL_VERIFYHOST, 0L);
    } else {
        S_SET(CURLOPT_SSL_VERIFYPEER, 1L);
        S_SET(CURLOPT_SSL_VERIFYHOST, 2L);
    }
    if (cfg->ca_file && *cfg->ca_file)
        S_SET(CURLOPT_CAINFO, cfg->ca_file);
    S_SET(CURLOPT_TIMEOUT_MS, timeout_ms);
    S_SET(CURLOPT_CONNECTTIMEOUT_MS, connect_ms);
    //  A connection kept between messages may die silently (NAT, a
    //  firewall): probes find out before a request is lost in it
    S_SET(CURLOPT_TCP_KEEPALIVE, 1L);
    S_SET(CURLOPT_ERRORBUFFER, self->curl_error);
    S_SET(CURLOPT_HEADERFUNCTION, s_header);
    S_SET(CURLOPT_HEADERDATA, self);
    S_SET(CURLOPT_WRITEFUNCTION, s_write);
    S_SET(CURLOPT_WRITEDATA, self);
#undef S_SET
    if (rc != CURLE_OK) {
        fq_error_format(error, error_size, "could not configure libcurl: %s",
                        curl_easy_strerror(rc));
        fq_http_destroy(&self);
    }
    return self;
}

void fq_http_destroy(fq_http_t **self_p)
{
    assert(self_p);
    fq_http_t *self = *self_p;
    if (!self)
        return;
    if (self->curl)
        curl_easy_cleanup(self->curl);
    free(self);
    *self_p = NULL;
}

// --------------------------------------------------------------------------
//  The request

//  msg's method in capitals, or NULL when it is none of s_methods.
static const char *s_method(const fq_delivery_t *msg)
{
    if (!msg->method || !*msg->method)
        return S_METHOD_DEFAULT;
    for (size_t i = 0; i < sizeof s_methods / sizeof s_methods[0]; i++)
        if (strcasecmp(msg->method, s_methods[i]) == 0)
            return s_methods[i];
    return NULL;
}

//  The URL to as libcurl will use it (the caller frees it with
//  curl_free), or NULL when it is not an http:// or https:// URL with a
//  host. The reason does not repeat the URL: it may hold a secret.
static char *s_url(const char *to, char *error, size_t error_size)
{
    CURLU *url = curl_url();
    if (!url) {
        fq_error_format(error, error_size, "out of memory");
        return NULL;
    }
    char *scheme = NULL, *host = NULL, *full = NULL;
    CURLUcode uc = to ? curl_url_set(url, CURLUPART_URL, to, 0) : CURLUE_MALFORMED_INPUT;
    if (uc != CURLUE_OK)
        fq_error_format(error, error_size, "bad http url: %s", curl_url_strerror(uc));
    else if (curl_url_get(url, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
             (strcmp(scheme, "http") != 0 && strcmp(scheme, "https") != 0))
        fq_error_format(error, error_size, "url scheme \"%s\" is not http or https",
                        scheme ? scheme : "");
    else if (curl_url_get(url, CURLUPART_HOST, &host, 0) != CURLUE_OK || !*host)
        fq_error_format(error, error_size, "bad http url: no host");
    else if (curl_url_get(url, CURLUPART_URL, &full, 0) != CURLUE_OK)
        fq_error_format(error, error_size, "bad http url");
    curl_free(scheme);
    curl_free(host);
    curl_url_cleanup(url);
    return full;
}

//  Whether c may be in a header's name (RFC 9110 5.6.2, tchar).
static bool s_is_tchar(char c)
{
    return isalnum((unsigned char)c) || (c && strchr("!#$%&'*+-.^_`|~", c));
}

//  One header line for libcurl, appended to *list; 0, or FQ_EINVAL (the
//  message's fault, said in error) or FQ_ENOMEM.
static int s_header_line(struct curl_slist **list, const char *name, const char *value, char *error,
                         size_t error_size)
{
    size_t name_len = strlen(name);
    bool token = name_len > 0;
    for (size_t i = 0; i < name_len; i++)
        token = token && s_is_tchar(name[i]);
    //  The name is shown only once known to be harmless
    if (!token) {
        fq_error_format(error, error_size, "a header name is not a token");
        return FQ_EINVAL;
    }
    for (const char *c = value; *c; c++)
        if (((unsigned char)*c < ' ' && *c != '\t') || *c == 0x7F) {
            fq_error_format(error, error_size, "header %s holds %s", name,
                            *c == '\r' || *c == '\n' ? "CR or LF" : "a control character");
            return FQ_EINVAL;
        }
    for (size_t i = 0; i < sizeof s_framing_headers / sizeof s_framing_headers[0]; i++)
        if (strcasecmp(name, s_framing_headers[i]) == 0) {
            fq_error_format(error, error_size, "header %s is the sender's to set", name);
            return FQ_EINVAL;
        }
    //  libcurl reads "Name:" as "send no Name"; an empty value is "Name;"
    char *line;
    if ((*value ? asprintf(&line, "%s: %s", name, value) : asprintf(&line, "%s;", name)) < 0)
        line = NULL;
    struct curl_slist *longer = line ? curl_slist_append(*list, line) : NULL;
    free(line);
    if (!longer) {
        fq_error_format(error, error_size, "out of memory");
        return FQ_ENOMEM;
    }
    *list = longer;
    return 0;
}

//  msg's headers as libcurl takes them, in *list (NULL when none): the
//  message's own, then what keeps libcurl from adding its own to them.
static int s_headers(const fq_delivery_t *msg, struct curl_slist **list, char *error,
                     size_t error_size)
{
    *list = NULL;
    bool content_type = false;
    int rc = 0;
    for (size_t i = 0; i < msg->nheaders && rc == 0; i++) {
        rc = s_header_line(list, msg->header_names[i], msg->header_values[i], error, error_size);
        content_type = content_type || strcasecmp(msg->header_names[i], "Content-Type") == 0;
    }
    //  "Expect: 100-continue" before a large body costs a round trip and
    //  trips up simple receivers; libcurl's default Content-Type for a
    //  body (a form) would be a lie: a body without one goes without
    const char *removed[] = {"Expect:", content_type ? NULL : "Content-Type:"};
    for (size_t i = 0; i < sizeof removed / sizeof removed[0] && rc == 0 && removed[i]; i++) {
        struct curl_slist *longer = curl_slist_append(*list, removed[i]);
        if (!longer) {
            fq_error_format(error, error_size, "out of memory");
            rc = FQ_ENOMEM;
        } else
            *list = longer;
    }
    if (rc != 0) {
        curl_slist_free_all(*list);
        *list = NULL;
    }
    return rc;
}

//  Sets the handle for method with body; resets what an earlier request
//  set. POST, PUT and PATCH carry the body (even empty), DELETE when it
//  is not empty, GET never.
static CURLcode s_set_method(fq_http_t *self, const char *method, const char *body)
{
    CURL *curl = self->curl;
    CURLcode rc = curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, NULL);
    if (rc == CURLE_OK)
        rc = curl_easy_setopt(curl, CURLOPT_HTTPGET, 1L);
    bool has_body = strcmp(method, "GET") != 0 && (strcmp(method, "DELETE") != 0 || *body);
    if (rc == CURLE_OK && has_body)
        rc = curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
    if (rc == CURLE_OK && has_body)
        rc = curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body);
    if (rc == CURLE_OK && strcmp(method, "POST") != 0 && strcmp(method, "GET") != 0)
        rc = curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method);
    return rc;
}

fq_delivery_result_t fq_http_classify(long status, bool retry_after)
{
    long class = status / S_STATUS_CLASS;
    if (class == S_CLASS_SUCCESS)
        return FQ_DELIVERY_OK;
    //  A 503 that names a time to come back is the receiver pacing us, as
    //  a 429 is; without one it may be a broken backend, as any 5xx
    if (status == S_TOO_MANY_REQUESTS || (status == S_SERVICE_UNAVAILABLE && retry_after))
        return FQ_DELIVERY_THROTTLED;
    if (class == S_CLASS_SERVER || status == S_REQUEST_TIMEOUT || status == S_TOO_EARLY)
        return FQ_DELIVERY_TRANSIENT;
    return FQ_DELIVERY_PERMANENT;
}

//  The answer to a completed request (status), classified.
static fq_delivery_result_t s_status(fq_http_t *self, long status, uint32_t *retry_after_s,
                                     char *error, size_t error_size)
{
    fq_delivery_result_t result = fq_http_classify(status, self->retry_after[0] != 0);
    if (result == FQ_DELIVERY_OK)
        return result;
    if (status / S_STATUS_CLASS == S_CLASS_REDIRECT) {
        fq_error_format(error, error_size, "HTTP %ld: redirect not followed", status);
        return result;
    }
    char shown[S_BODY_SHOWN + 1];
    fq_transport_text_line(shown, sizeof shown, self->body, self->body_len);
    const char *words = *shown ? shown : self->reason;
    if (*words)
        fq_error_format(error, error_size, "HTTP %ld: %s", status, words);
    else
        fq_error_format(error, error_size, "HTTP %ld", status);
    if (result != FQ_DELIVERY_PERMANENT)
        *retry_after_s = s_retry_after(self->retry_after);
    return result;
}

fq_delivery_result_t fq_http_send(fq_http_t *self, const fq_delivery_t *msg,
                                  uint32_t *retry_after_s, char *error, size_t error_size)
{
    assert(self);
    assert(retry_after_s);
    *retry_after_s = 0;
    const char *method = s_method(msg);
    if (!method) {
        fq_error_format(error, error_size, "method is not POST, PUT, PATCH, DELETE or GET");
        return FQ_DELIVERY_PERMANENT;
    }
    char *url = s_url(msg->to, error, error_size);
    if (!url)
        return FQ_DELIVERY_PERMANENT;
    struct curl_slist *headers;
    int rc = s_headers(msg, &headers, error, error_size);
    if (rc != 0) {
        curl_free(url);
        return rc == FQ_ENOMEM ? FQ_DELIVERY_TRANSIENT : FQ_DELIVERY_PERMANENT;
    }
    const char *body = msg->body ? msg->body : "";
    CURLcode code = curl_easy_setopt(self->curl, CURLOPT_URL, url);
    if (code == CURLE_OK)
        code = s_set_method(self, method, body);
    if (code == CURLE_OK)
        code = curl_easy_setopt(self->curl, CURLOPT_HTTPHEADER, headers);
    self->curl_error[0] = self->reason[0] = self->retry_after[0] = 0;
    self->body_len = self->body_read = 0;
    self->body_cut = false;
    if (code == CURLE_OK)
        code = curl_easy_perform(self->curl);
    long status = 0;
    curl_easy_getinfo(self->curl, CURLINFO_RESPONSE_CODE, &status);
    fq_delivery_result_t result;
    if (code == CURLE_OK || (code == CURLE_WRITE_ERROR && self->body_cut && status > 0))
        result = s_status(self, status, retry_after_s, error, error_size);
    else {
        //  No answer: the connection failed, timed out, TLS failed
        fq_error_format(error, error_size, "%s",
                        self->curl_error[0] ? self->curl_error : curl_easy_strerror(code));
        result = fq_transport_curl_failure(code, fq_transport_curl_connected(self->curl));
    }
    //  The handle must not keep pointers to what is freed now
    curl_easy_setopt(self->curl, CURLOPT_HTTPHEADER, NULL);
    curl_easy_setopt(self->curl, CURLOPT_POSTFIELDS, NULL);
    curl_slist_free_all(headers);
    curl_free(url);
    return result;
}
