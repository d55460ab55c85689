/*  fq_cli_http.h — the fairq client's HTTP: libcurl, JSON answers, and
    what an answer means for the exit code.

    One fq_cli_http_t is one libcurl handle, reused for every exchange so
    that polling (status --watch, top) keeps one connection open. The
    token goes only into the Authorization header: never into a message.
*/
#ifndef FQ_CLI_HTTP_H
#define FQ_CLI_HTTP_H

#include "fq_buf.h"
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

//  Room for libcurl's error text (CURL_ERROR_SIZE) and what we add to it.
#define FQ_CLI_HTTP_ERROR_SIZE 512

typedef struct fq_cli_http fq_cli_http_t;

//  One answer. Owned by the caller; fq_cli_answer_reset frees its parts.
typedef struct {
    long status;        //  HTTP status; 0 when no answer came (see error)
    fq_buf_t body;      //  The answer's bytes (data NUL-terminated, also when empty)
    json_t *json;       //  body parsed, or NULL when it is not JSON
    long retry_after_s; //  The Retry-After header in seconds, -1 when none
    bool timed_out;     //  No answer within the timeout
    char error[FQ_CLI_HTTP_ERROR_SIZE]; //  Why no answer came (status 0)
} fq_cli_answer_t;

//  A client of the API at base_url ("http://HOST:PORT", no trailing '/'),
//  with token (may be NULL; copied) and a timeout for each exchange.
//  NULL when libcurl cannot make a handle.
fq_cli_http_t *fq_cli_http_new(const char *base_url, const char *token, long timeout_s);
void fq_cli_http_destroy(fq_cli_http_t **self_p);

//  Performs method ("GET", "POST", "PUT", "PATCH") on path ("/v1/..."),
//  with body (body_size bytes, sent as application/json unless headers
//  hold a Content-Type; NULL: none) and extra header lines (NULL-terminated array, or NULL). Fills
//  answer (reset first); returns 0 when an answer came (whatever its status), -1 when none did
//  (answer->error says why).
int fq_cli_http_request(fq_cli_http_t *self, const char *method, const char *path, const char *body,
                        size_t body_size, const char *const *headers, fq_cli_answer_t *answer);

//  Where a streamed body comes from: at most size bytes into buffer.
//  Returns how many (0 at the end), or FQ_CLI_HTTP_ABORT to give up the
//  exchange (the server then never sees a whole body).
typedef size_t(fq_cli_http_read_fn)(char *buffer, size_t size, void *arg);
#define FQ_CLI_HTTP_ABORT ((size_t)-1)

//  The same with a body of exactly body_size bytes that read (with arg)
//  yields as it is sent, so that a body of any size takes no more memory
//  than a piece of it. It says "Expect: 100-continue": a server that
//  refuses the body from its headers (413, 401) answers before any of it
//  is sent.
int fq_cli_http_request_stream(fq_cli_http_t *self, const char *method, const char *path,
                               fq_cli_http_read_fn *read, void *arg, size_t body_size,
                               const char *const *headers, fq_cli_answer_t *answer);

//  Frees what answer holds and empties it; safe on an empty answer.
void fq_cli_answer_reset(fq_cli_answer_t *answer);

//  Text for people saying why an answer is a failure: the API's detail
//  and error code ("no such request (404 not_found)"), or the transport's
//  error. Written into text (size bytes, truncated to fit).
void fq_cli_answer_describe(const fq_cli_answer_t *answer, char *text, size_t size);

//  A copy of text with every byte outside RFC 3986's unreserved set
//  percent-encoded, for a path segment or a query value. Caller frees;
//  NULL when out of memory.
char *fq_cli_url_escape(const char *text);

//  Appends "?key=value" (or "&key=value" when path has a query already)
//  to *path (malloc'd, replaced), value escaped. Returns 0, or -1 when out
//  of memory (*path is then unchanged).
int fq_cli_url_add_query(char **path, const char *key, const char *value);

#endif
