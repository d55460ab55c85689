/*  fq_cli_http.c — the fairq client's HTTP exchanges over libcurl. */
#include "fq_cli_http.h"
#include "fq_cli_table.h"
#include <ctype.h>
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

//  Room for the server's detail as shown, escaped
#define S_DETAIL_SHOWN 1024

#ifndef FQ_VERSION
#define FQ_VERSION "unknown"
#endif

//  The largest answer we keep in memory. The API's biggest answers are
//  pages of at most 1,000 messages (a few hundred KiB); anything far larger
//  is not fairqd talking, and must not exhaust the memory of the machine
//  the client runs on.
#define S_ANSWER_MAX ((size_t)64 * 1024 * 1024)

//  A Retry-After beyond this many seconds (over 31 years) is not read
//  further, so that a silly value cannot overflow
#define S_RETRY_AFTER_MAX 1000000000L

struct fq_cli_http {
    CURL *curl;
    char *base_url;
    char *authorization; //  "Authorization: Bearer TOKEN", or NULL
    long timeout_s;
};

fq_cli_http_t *fq_cli_http_new(const char *base_url, const char *token, long timeout_s)
{
    fq_cli_http_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    self->curl = curl_easy_init();
    self->base_url = strdup(base_url);
    self->timeout_s = timeout_s;
    if (token && asprintf(&self->authorization, "Authorization: Bearer %s", token) < 0)
        self->authorization = NULL;
    if (!self->curl || !self->base_url || (token && !self->authorization)) {
        fq_cli_http_destroy(&self);
        return NULL;
    }
    return self;
}

void fq_cli_http_destroy(fq_cli_http_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    fq_cli_http_t *self = *self_p;
    if (self->curl)
        curl_easy_cleanup(self->curl);
    free(self->base_url);
    if (self->authorization) {
        memset(self->authorization, 0, strlen(self->authorization));
        free(self->authorization);
    }
    free(self);
    *self_p = NULL;
}

void fq_cli_answer_reset(fq_cli_answer_t *answer)
{
    fq_buf_free(&answer->body);
    json_decref(answer->json);
    memset(answer, 0, sizeof *answer);
    answer->retry_after_s = -1;
}

//  libcurl's body callback: appends to the answer, up to S_ANSWER_MAX.
static size_t s_on_body(char *data, size_t size, size_t nmemb, void *arg)
{
    fq_cli_answer_t *answer = arg;
    size_t len = size * nmemb;
    //  Returning less than len makes libcurl fail the transfer
    //  (CURLE_WRITE_ERROR)
    if (len > S_ANSWER_MAX - answer->body.size || fq_buf_add(&answer->body, data, len) != 0)
        return 0;
    return len;
}

//  libcurl's header callback: keeps Retry-After (seconds; the HTTP-date
//  form is not what fairqd sends, and is ignored).
static size_t s_on_header(char *data, size_t size, size_t nmemb, void *arg)
{
    fq_cli_answer_t *answer = arg;
    size_t len = size * nmemb;
    static const char name[] = "Retry-After:";
    if (len > sizeof name - 1 && strncasecmp(data, name, sizeof name - 1) == 0) {
        size_t i = sizeof name - 1;
        while (i < len && (data[i] == ' ' || data[i] == '\t'))
            i++;
        long seconds = 0;
        bool digits = false;
        while (i < len && isdigit((unsigned char)data[i]) && seconds < S_RETRY_AFTER_MAX) {
            seconds = seconds * 10 + (data[i++] - '0');
            digits = true;
        }
        if (digits)
            answer->retry_after_s = seconds;
    }
    return len;
}

//  A request's body: bytes in memory, or a stream of a known size.
typedef struct {
    const char *data; //  NULL: none (or a stream)
    size_t size;
    fq_cli_http_read_fn *read; //  Set: a stream
    void *arg;
} s_body_t;

//  libcurl's read callback, for a streamed body.
static size_t s_on_read(char *buffer, size_t size, size_t nitems, void *arg)
{
    const s_body_t *body = arg;
    size_t got = body->read(buffer, size * nitems, body->arg);
    return got == FQ_CLI_HTTP_ABORT ? CURL_READFUNC_ABORT : got;
}

static int s_perform(fq_cli_http_t *self, const char *method, const char *path,
                     const s_body_t *body, const char *const *headers, fq_cli_answer_t *answer)
{
    fq_cli_answer_reset(answer);
    size_t url_size = strlen(self->base_url) + strlen(path) + 1;
    char *url = malloc(url_size);
    struct curl_slist *list = NULL, *next;
    bool ok = url != NULL;
    if (ok)
        snprintf(url, url_size, "%s%s", self->base_url, path);

        //  Each header is appended through a temporary so that a failed append
        //  (out of memory) does not lose the list built so far
#define S_APPEND(line)                                                                             \
    do {                                                                                           \
        if (ok && (next = curl_slist_append(list, (line))) != NULL)                                \
            list = next;                                                                           \
        else                                                                                       \
            ok = false;                                                                            \
    } while (0)
    S_APPEND("Accept: application/json");
    S_APPEND("User-Agent: fairq/" FQ_VERSION);
    //  A body in memory goes at once: fairqd reads it anyway, and a wait
    //  for "100 Continue" would only add a round trip. A streamed one is
    //  large: the server may refuse it from its headers (413) before a
    //  byte of it has been read from the file and sent.
    S_APPEND(body->read ? "Expect: 100-continue" : "Expect:");
    //  JSON unless the caller says otherwise (a raw report is
    //  message/rfc822): one Content-Type, never two
    bool typed = false;
    for (size_t i = 0; headers && headers[i]; i++)
        typed |= strncasecmp(headers[i], "Content-Type:", strlen("Content-Type:")) == 0;
    if ((body->data || body->read) && !typed)
        S_APPEND("Content-Type: application/json");
    if (self->authorization)
        S_APPEND(self->authorization);
    for (size_t i = 0; headers && headers[i]; i++)
        S_APPEND(headers[i]);
#undef S_APPEND
    if (!ok) {
        snprintf(answer->error, sizeof answer->error, "out of memory");
        curl_slist_free_all(list);
        free(url);
        return -1;
    }

    char curl_error[CURL_ERROR_SIZE] = "";
    CURL *curl = self->curl;
    //  Reset keeps the connection cache: the next exchange reuses it
    curl_easy_reset(curl);
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT, self->timeout_s);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, list);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, curl_error);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, s_on_body);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, answer);
    curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, s_on_header);
    curl_easy_setopt(curl, CURLOPT_HEADERDATA, answer);
    if (strcmp(method, "GET") == 0)
        curl_easy_setopt(curl, CURLOPT_HTTPGET, 1L);
    else {
        if (body->read) {
            curl_easy_setopt(curl, CURLOPT_POST, 1L);
            curl_easy_setopt(curl, CURLOPT_READFUNCTION, s_on_read);
            curl_easy_setopt(curl, CURLOPT_READDATA, (void *)body);
        } else
            //  POST without a body (cancel, pause...) sends an empty one
            curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body->data ? body->data : "");
        curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body->size);
        if (strcmp(method, "POST") != 0)
            curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method);
    }
    CURLcode rc = curl_easy_perform(curl);
    //  The handle outlives this call: it must not keep pointers to them
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, NULL);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, NULL);
    curl_easy_setopt(curl, CURLOPT_READDATA, NULL);
    curl_slist_free_all(list);
    free(url);
    if (rc != CURLE_OK) {
        answer->timed_out = rc == CURLE_OPERATION_TIMEDOUT;
        snprintf(answer->error, sizeof answer->error, "could not reach %s: %s", self->base_url,
                 *curl_error ? curl_error : curl_easy_strerror(rc));
        answer->status = 0;
        return -1;
    }
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &answer->status);
    //  An empty answer is "" too (adding nothing makes the NUL)
    if (fq_buf_add(&answer->body, "", 0) != 0) {
        snprintf(answer->error, sizeof answer->error, "out of memory");
        answer->status = 0;
        return -1;
    }
    answer->json = json_loadb(answer->body.data, answer->body.size, 0, NULL);
    return 0;
}

int fq_cli_http_request(fq_cli_http_t *self, const char *method, const char *path, const char *body,
                        size_t body_size, const char *const *headers, fq_cli_answer_t *answer)
{
    s_body_t in_memory = {.data = body, .size = body ? body_size : 0};
    return s_perform(self, method, path, &in_memory, headers, answer);
}

int fq_cli_http_request_stream(fq_cli_http_t *self, const char *method, const char *path,
                               fq_cli_http_read_fn *read, void *arg, size_t body_size,
                               const char *const *headers, fq_cli_answer_t *answer)
{
    s_body_t stream = {.size = body_size, .read = read, .arg = arg};
    return s_perform(self, method, path, &stream, headers, answer);
}

void fq_cli_answer_describe(const fq_cli_answer_t *answer, char *text, size_t size)
{
    if (answer->status == 0) {
        snprintf(text, size, "%s", answer->error);
        return;
    }
    const char *code = json_string_value(json_object_get(answer->json, "error"));
    const char *detail = json_string_value(json_object_get(answer->json, "detail"));
    //  Shown on a terminal: the server's text (or a man in the middle of
    //  plain http) must not bring escape sequences along
    char shown_detail[S_DETAIL_SHOWN], shown_code[S_DETAIL_SHOWN];
    fq_cli_escape(shown_detail, sizeof shown_detail, detail ? detail : "");
    fq_cli_escape(shown_code, sizeof shown_code, code ? code : "");
    if (detail && code)
        snprintf(text, size, "%s (%ld %s)", shown_detail, answer->status, shown_code);
    else if (detail || code)
        snprintf(text, size, "%s (%ld)", detail ? shown_detail : shown_code, answer->status);
    else
        //  Not the API's error document: a proxy, or not fairqd at all
        snprintf(text, size, "the server answered %ld without an error document", answer->status);
}

//  RFC 3986's unreserved characters: ALPHA / DIGIT / "-" / "." / "_" / "~"
//  (spelt out rather than isalnum, which depends on the locale)
static bool s_unreserved(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '.' || c == '_' || c == '~';
}

char *fq_cli_url_escape(const char *text)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t len = strlen(text);
    //  Each byte takes at most three characters ("%XX")
    char *out = malloc(len * 3 + 1);
    if (!out)
        return NULL;
    char *o = out;
    for (const unsigned char *c = (const unsigned char *)text; *c; c++) {
        if (s_unreserved(*c))
            *o++ = (char)*c;
        else {
            *o++ = '%';
            *o++ = hex[*c >> 4];
            *o++ = hex[*c & 0x0F];
        }
    }
    *o = 0;
    return out;
}

int fq_cli_url_add_query(char **path, const char *key, const char *value)
{
    char *escaped = fq_cli_url_escape(value);
    if (!escaped)
        return -1;
    char sep = strchr(*path, '?') ? '&' : '?';
    char *joined = NULL;
    int rc = asprintf(&joined, "%s%c%s=%s", *path, sep, key, escaped);
    free(escaped);
    if (rc < 0)
        return -1;
    free(*path);
    *path = joined;
    return 0;
}
