/*  fq_cli.c — calling the API and reporting its errors, for every command. */
#include "fq_cli.h"
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  HTTP statuses the exit codes tell apart (api/API.md, Errors)
#define S_HTTP_OK_FIRST     200
#define S_HTTP_NO_CONTENT   204
#define S_HTTP_OK_LAST      299
#define S_HTTP_UNAUTHORIZED 401
#define S_HTTP_FORBIDDEN    403
#define S_HTTP_NOT_FOUND    404
#define S_HTTP_CONFLICT     409
#define S_HTTP_TOO_MANY     429
#define S_HTTP_SERVER_FIRST 500
#define S_HTTP_SERVER_LAST  599

//  Room for an error line: the API's detail and what we add to it
#define S_MESSAGE_SIZE 1024

void fq_cli_error(const char *format, ...)
{
    va_list args;
    va_start(args, format);
    fprintf(stderr, "%s: ", FQ_CLI_PROGRAM);
    vfprintf(stderr, format, args);
    fputc('\n', stderr);
    va_end(args);
}

//  The exit code for an answer's status (the table in fq_cli.h).
static int s_exit_for(const fq_cli_answer_t *answer)
{
    long status = answer->status;
    if (status >= S_HTTP_OK_FIRST && status <= S_HTTP_OK_LAST)
        return FQ_CLI_EXIT_OK;
    //  No answer at all, or one from a server in trouble
    if (status == 0 || (status >= S_HTTP_SERVER_FIRST && status <= S_HTTP_SERVER_LAST))
        return FQ_CLI_EXIT_SERVER;
    switch (status) {
    case S_HTTP_UNAUTHORIZED:
    case S_HTTP_FORBIDDEN:
        return FQ_CLI_EXIT_AUTH;
    case S_HTTP_NOT_FOUND:
        return FQ_CLI_EXIT_NOT_FOUND;
    case S_HTTP_CONFLICT:
        return FQ_CLI_EXIT_CONFLICT;
    case S_HTTP_TOO_MANY:
        return FQ_CLI_EXIT_RATE_LIMITED;
    default:
        //  Other 4xx (400, 405, 413), and 1xx or 3xx, which fairqd never
        //  sends: the request was refused as it is
        return FQ_CLI_EXIT_FAILED;
    }
}

void fq_cli_report(const fq_cli_t *self, const fq_cli_answer_t *answer)
{
    char text[S_MESSAGE_SIZE];
    fq_cli_answer_describe(answer, text, sizeof text);
    if (answer->status == S_HTTP_UNAUTHORIZED && !self->token)
        fq_cli_error("%s; no token given (--token or FAIRQ_TOKEN)", text);
    else if (answer->status == S_HTTP_TOO_MANY && answer->retry_after_s >= 0)
        fq_cli_error("%s; retry after %ld s", text, answer->retry_after_s);
    else if (answer->timed_out)
        fq_cli_error("%s (--timeout-s %ld)", text, self->timeout_s);
    else
        fq_cli_error("%s", text);
}

//  The client's HTTP, made on first use. NULL (printed) when it cannot be.
static fq_cli_http_t *s_http(fq_cli_t *self, fq_cli_answer_t *answer)
{
    if (!self->http)
        self->http = fq_cli_http_new(self->url, self->token, self->timeout_s);
    if (!self->http) {
        fq_cli_answer_reset(answer);
        fq_cli_error("could not set up HTTP (libcurl): out of memory");
    }
    return self->http;
}

//  The exit code of an exchange that fq_cli_http made, reported.
static int s_outcome(fq_cli_t *self, const char *method, const char *path, fq_cli_answer_t *answer)
{
    int rc = s_exit_for(answer);
    if (rc == FQ_CLI_EXIT_OK && !answer->json && answer->status != S_HTTP_NO_CONTENT) {
        //  A 2xx that is not JSON (but a 204, which has no body) is not
        //  fairqd's API answering
        snprintf(answer->error, sizeof answer->error,
                 "the server at %s answered %s %s with something that is not JSON", self->url,
                 method, path);
        answer->status = 0;
        if (!self->quiet)
            fq_cli_error("%s", answer->error);
        return FQ_CLI_EXIT_SERVER;
    }
    if (rc != FQ_CLI_EXIT_OK && !self->quiet)
        fq_cli_report(self, answer);
    return rc;
}

int fq_cli_call_raw(fq_cli_t *self, const char *method, const char *path, const char *body,
                    size_t body_size, const char *const *headers, fq_cli_answer_t *answer)
{
    if (!s_http(self, answer))
        return FQ_CLI_EXIT_SERVER;
    fq_cli_http_request(self->http, method, path, body, body_size, headers, answer);
    return s_outcome(self, method, path, answer);
}

int fq_cli_call_stream(fq_cli_t *self, const char *method, const char *path,
                       fq_cli_http_read_fn *read, void *arg, size_t body_size,
                       const char *const *headers, fq_cli_answer_t *answer)
{
    if (!s_http(self, answer))
        return FQ_CLI_EXIT_SERVER;
    fq_cli_http_request_stream(self->http, method, path, read, arg, body_size, headers, answer);
    return s_outcome(self, method, path, answer);
}

int fq_cli_call_text(fq_cli_t *self, const char *path, fq_cli_answer_t *answer)
{
    if (!s_http(self, answer))
        return FQ_CLI_EXIT_SERVER;
    fq_cli_http_request(self->http, "GET", path, NULL, 0, NULL, answer);
    int rc = s_exit_for(answer);
    if (rc != FQ_CLI_EXIT_OK && !self->quiet)
        fq_cli_report(self, answer);
    return rc;
}

int fq_cli_call(fq_cli_t *self, const char *method, const char *path, json_t *body,
                const char *const *headers, fq_cli_answer_t *answer)
{
    char *text = NULL;
    if (body) {
        text = json_dumps(body, JSON_COMPACT);
        if (!text) {
            fq_cli_answer_reset(answer);
            fq_cli_error("could not encode the request body (out of memory)");
            return FQ_CLI_EXIT_FAILED;
        }
    }
    int rc = fq_cli_call_raw(self, method, path, text, text ? strlen(text) : 0, headers, answer);
    free(text);
    return rc;
}

void fq_cli_print_raw(const fq_cli_answer_t *answer)
{
    fwrite(answer->body.data, 1, answer->body.size, stdout);
    if (answer->body.size == 0 || answer->body.data[answer->body.size - 1] != '\n')
        putchar('\n');
}

void fq_cli_print_json(const json_t *json)
{
    json_dumpf(json, stdout, JSON_COMPACT);
    putchar('\n');
}

//  A file is read a piece of this size at a time
#define S_READ_CHUNK 65536

int fq_cli_read_file(const char *path, fq_buf_t *buffer)
{
    bool from_stdin = strcmp(path, "-") == 0;
    const char *name = from_stdin ? FQ_CLI_STDIN_NAME : path;
    FILE *file = from_stdin ? stdin : fopen(path, "rb");
    if (!file) {
        fq_cli_error("could not open \"%s\": %s", path, strerror(errno));
        return FQ_CLI_EXIT_USAGE;
    }
    bool ok;
    while ((ok = fq_buf_reserve(buffer, S_READ_CHUNK) == 0)) {
        size_t n = fread(buffer->data + buffer->size, 1, S_READ_CHUNK, file);
        buffer->size += n;
        buffer->data[buffer->size] = '\0';
        if (n == 0)
            break;
    }
    int error = ferror(file) ? errno : ok ? 0 : ENOMEM;
    if (!from_stdin)
        fclose(file);
    if (error) {
        fq_cli_error("could not read \"%s\": %s", name, strerror(error));
        return FQ_CLI_EXIT_USAGE;
    }
    return 0;
}
