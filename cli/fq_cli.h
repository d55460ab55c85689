/*  fq_cli.h — what the parts of the fairq command-line client share.

    fairq talks to fairqd's HTTP API (api/API.md). Each command is an
    fq_cli_command_t, defined beside its code (fq_cli_commands_*.c,
    fq_cli_top.c) and listed in fairq.c's command table. A command gets the
    client (fq_cli_t: where the API is, the token, --json) and its parsed
    arguments (fq_cli_args.h), and returns an exit code from the table
    below, the one place those codes are defined: scripts rely on them, and
    `fairq --help` prints them from here.
*/
#ifndef FQ_CLI_H
#define FQ_CLI_H

#include "fq_buf.h"
#include "fq_cli_http.h"
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#define FQ_CLI_PROGRAM "fairq"

//  X(NAME, CODE, MEANING)
#define FQ_CLI_EXITS(X)                                                                            \
    X(OK, 0, "success")                                                                            \
    X(FAILED, 1,                                                                                   \
      "the API refused the request (400, 405, 413, 422, another 4xx), or a request watched with "  \
      "status --watch finished with dead, rejected or cancelled messages")                         \
    X(USAGE, 2, "usage error: bad arguments, an unreadable or malformed file (file:line)")         \
    X(NOT_FOUND, 3, "not found (404): no such request, message, tenant or route, or not yours")    \
    X(AUTH, 4, "no token or an unknown one (401), or not allowed (403)")                           \
    X(SERVER, 5, "server or connection problem: refused, timed out, 5xx, database unavailable")    \
    X(CONFLICT, 6, "conflict (409): the change does not apply in the resource's state")            \
    X(RATE_LIMITED, 7, "rate limited (429): the tenant's submit_rate; retry after the time shown")

typedef enum {
#define X(name, code, meaning) FQ_CLI_EXIT_##name = code,
    FQ_CLI_EXITS(X)
#undef X
} fq_cli_exit_t;

//  The client: set up by fairq.c from the global options, used by every
//  command. The HTTP connection is made on first use and reused (status
//  --watch and top poll over one keep-alive connection).
typedef struct {
    const char *url;   //  Base URL, without a trailing '/'
    const char *token; //  Bearer token or NULL; never printed
    bool json;         //  --json: the API's answer as is, for scripts
    bool quiet;        //  fq_cli_call prints no error (a poll that reports its own)
    long timeout_s;    //  Longest one HTTP exchange may take
    fq_cli_http_t *http;
} fq_cli_t;

typedef struct fq_cli_args fq_cli_args_t;

//  One option of a command: --name VALUE, or a switch when value is NULL.
typedef struct {
    const char *name;  //  Without the leading "--"
    const char *value; //  Placeholder in the help ("N", "TIME"); NULL: a switch
    const char *help;
} fq_cli_option_t;

typedef struct {
    const char *name;               //  "status", or two words: "tenants set"
    const char *usage;              //  What follows the name: "ID [--watch]"
    const char *summary;            //  One line for `fairq --help`
    const char *description;        //  More, for `fairq COMMAND --help`; may be NULL
    const fq_cli_option_t *options; //  Ends with {NULL}; may be NULL
    int min_args;                   //  Positional arguments
    int max_args;
    int (*run)(fq_cli_t *cli, const fq_cli_args_t *args);
} fq_cli_command_t;

//  ---------------------------------------------------------------------
//  Calling the API

//  Performs one exchange: method on path (with its query), the JSON body
//  if any (borrowed; NULL for none), extra headers (NULL-terminated, may
//  be NULL). On a 2xx answer with a JSON body returns FQ_CLI_EXIT_OK and
//  fills answer (the caller resets it with fq_cli_answer_reset). Otherwise
//  prints "fairq: ..." with the API's detail to stderr and returns the
//  exit code the failure maps to (answer is still filled, for its status).
int fq_cli_call(fq_cli_t *self, const char *method, const char *path, json_t *body,
                const char *const *headers, fq_cli_answer_t *answer);

//  The same with a body given as bytes (a submission file, sent as is).
int fq_cli_call_raw(fq_cli_t *self, const char *method, const char *path, const char *body,
                    size_t body_size, const char *const *headers, fq_cli_answer_t *answer);

//  The same with a body of body_size bytes streamed from read (see
//  fq_cli_http_request_stream), for a body too large to hold in memory.
int fq_cli_call_stream(fq_cli_t *self, const char *method, const char *path,
                       fq_cli_http_read_fn *read, void *arg, size_t body_size,
                       const char *const *headers, fq_cli_answer_t *answer);

//  GET path of a route that answers text, not JSON (/metrics): a 2xx
//  answer is FQ_CLI_EXIT_OK whatever its body (in answer->body).
//  Otherwise as fq_cli_call.
int fq_cli_call_text(fq_cli_t *self, const char *path, fq_cli_answer_t *answer);

//  Prints "fairq: ..." saying why the exchange failed, with a hint where
//  one helps (no token given, Retry-After, the timeout).
void fq_cli_report(const fq_cli_t *self, const fq_cli_answer_t *answer);

//  Prints the answer's body as it came, ending with a newline (--json).
void fq_cli_print_raw(const fq_cli_answer_t *answer);

//  Prints a JSON document on stdout, compact, ending with a newline
//  (--json output that fairq assembles, such as the pages of search --all).
void fq_cli_print_json(const json_t *json);

//  Reads the whole of path ("-": standard input) into buffer (appended;
//  NUL-terminated, the caller frees it). Returns 0, or FQ_CLI_EXIT_USAGE
//  after printing why ("could not open \"x\": ...").
int fq_cli_read_file(const char *path, fq_buf_t *buffer);

//  What standard input is called in messages.
#define FQ_CLI_STDIN_NAME "<stdin>"

//  Prints "fairq: " and the message to stderr (printf-style).
void fq_cli_error(const char *format, ...) __attribute__((format(printf, 1, 2)));

#endif
