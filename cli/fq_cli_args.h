/*  fq_cli_args.h — the fairq client's command lines: options, positional
    arguments, and the checks every value goes through before anything is
    sent.

    A command line is `fairq [GLOBAL OPTIONS] COMMAND [ARGUMENTS]`; the
    global options (--url, --token, --json, --timeout-s) are also taken
    after the command, among its own options, in any order.

    Every check prints "fairq: invalid ..." saying what was expected and
    returns FQ_CLI_EXIT_USAGE; 0 when the value is good.
*/
#ifndef FQ_CLI_ARGS_H
#define FQ_CLI_ARGS_H

#include "fq_cli.h"
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

//  Most options one command line may know (global and command's together).
#define FQ_CLI_OPTIONS_MAX 32

//  Most positional arguments a command takes.
#define FQ_CLI_POSITIONAL_MAX 4

struct fq_cli_args {
    const fq_cli_command_t *command;
    //  Option tables in order (the global one, then the command's), and
    //  the value given for each option (NULL: not given; "" a switch given)
    const fq_cli_option_t *tables[2];
    size_t ntables;
    const char *values[FQ_CLI_OPTIONS_MAX];
    //  Positional arguments, pointing into argv
    const char *pos[FQ_CLI_POSITIONAL_MAX];
    int npos;
    bool help; //  --help or -h was given
};

//  Parses argv[1..argc-1] against the option tables in args (set
//  args->tables and ntables first; values already set stay unless given
//  again). With stop_at_word, stops at the first word that is not an
//  option and returns its index in *next; otherwise options and words
//  may mix and words go to args->pos. Returns 0 or FQ_CLI_EXIT_USAGE
//  (printed, naming prefix: "fairq" or "fairq status").
int fq_cli_args_parse(fq_cli_args_t *args, int argc, char **argv, bool stop_at_word, int *next,
                      const char *prefix);

//  The value given for option name (from any table), or NULL.
const char *fq_cli_arg(const fq_cli_args_t *args, const char *name);

//  True when switch name was given.
bool fq_cli_flag(const fq_cli_args_t *args, const char *name);

//  ---------------------------------------------------------------------
//  Checks

//  An id of a request or message: a positive integer that fits in 63 bits.
//  what names it in the message ("request id").
int fq_cli_parse_id(const char *text, const char *what, int64_t *id);

//  An integer in min..max; option names it in the message ("--priority").
int fq_cli_parse_int(const char *text, const char *option, int64_t min, int64_t max,
                     int64_t *value);

//  A number of seconds (decimals allowed) in min..max.
int fq_cli_parse_seconds(const char *text, const char *option, double min, double max,
                         double *value);

//  A time for send_at, as the API takes it, into a JSON value (new
//  reference): an RFC 3339 time with a zone (a string, passed as is),
//  Unix seconds (an integer), or "+N" with a unit s, m, h or d (seconds
//  from now, sent as Unix seconds). now is the current Unix time.
int fq_cli_parse_time(const char *text, const char *option, int64_t now, json_t **value);

//  A length of time: N seconds, or N with a unit s, m, h or d ("90m"),
//  of at most ten years; as seconds into *seconds.
int fq_cli_parse_duration(const char *text, const char *option, int64_t *seconds);

//  True for a well-formed RFC 3339 date-time with a zone.
bool fq_cli_rfc3339_valid(const char *text);

//  A tenant name as the schema takes it: a lowercase letter or digit,
//  then up to 63 of [a-z0-9_.-].
int fq_cli_parse_tenant(const char *text, const char *what);

//  The tenant --tenant NAME names (required: the API names the tenant in
//  the paths of what it owns) and the path of its resource
//  ("/v1/tenants/NAME/webhooks") into path, size bytes.
int fq_cli_tenant_path(const fq_cli_args_t *args, const char *resource, const char **tenant,
                       char *path, size_t size);

//  One of the NULL-terminated words in choices.
int fq_cli_parse_choice(const char *text, const char *option, const char *const *choices);

//  An Idempotency-Key: 1..255 bytes, printable ASCII (it travels in an
//  HTTP header, where a CR or LF would end it and start another).
int fq_cli_parse_idempotency_key(const char *text);

#endif
