/*  fq_config.h — the configuration engine of fairq's programs: a table of
    keys, four sources, one syntax, one set of messages.

    The engine knows no program. Each program declares its keys as one
    X-macro list beside its code (fairqd: fairqd/fq_fairqd_keys.h;
    fairq-sender: sender/fq_sender_keys.h) and describes itself in a
    schema (fq_config_schema_t): its name, its environment prefix, the
    variable naming its config file, its keys, the commands it takes
    besides its settings, and its checks between keys. Everything else is
    generated here from the schema: the parsers, the error messages, the
    printout and the help, so the programs read and say the same, and a
    new key is one row of a program's table.

    A key has a name, a type (text, a libpq connection string, a secret,
    an integer with its range, a boolean or one word of a list), a
    default, an environment variable (the program's prefix and the name
    in capitals) and one line of help. A value comes from, in increasing
    precedence:

        default < config file < environment < command line

    The config file is named by --config PATH (or the schema's variable:
    FAIRQ_CONFIG for fairqd). It holds "key = value" lines; blank lines
    and comments (from a '#' at the start of a line or after a blank,
    outside quotes) are skipped; blanks around keys and values are
    dropped. A value in double quotes keeps its blanks and '#'s; inside
    the quotes \" is a quote and \\ a backslash. A bare "key =" is an
    error: an empty text is written "". A key may appear once per file.
    The environment holds PREFIX<NAME>=value. The command line holds
    --name=value or --name value (a boolean alone means true). Flags are
    spelled with dashes (--http-listen), as the help shows them; keys in
    files with underscores (http_listen); in either a '-' may stand for a
    '_' and the other way round, so --http_listen is --http-listen. An
    empty value from the environment or a flag is an empty text, and an
    error for other types. Unknown variables of the prefix are ignored
    (other fairq programs share "FAIRQ_"); unknown keys and flags are
    errors.

    Besides the settings, the command line may hold --help (or -h),
    --version, --print-config, --config PATH and the schema's commands
    (fairq-sender's --make-cert PATH).

    Every error names its source, in the form

        config /etc/fairq.conf:12: unknown key "databse" (did you mean "database"?)
        environment FAIRQ_PREFETCH: invalid value for "prefetch": "ten" is not an integer
        flag --ack_batch: invalid value for "ack_batch": 0 is out of range (1..10000)

    and the caller prefixes it with the program's name.
*/
#ifndef FQ_CONFIG_H
#define FQ_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

//  Stringizes a macro's value, so that a table's default can be another
//  module's constant (FQ_CONFIG_STR(FQ_GATEWAY_HEARTBEAT_MS) is "1000").
#define FQ_CONFIG_STR_(x) #x
#define FQ_CONFIG_STR(x)  FQ_CONFIG_STR_(x)

//  The types a key can have.
typedef enum {
    FQ_CONFIG_TYPE_STRING,   //  Any text
    FQ_CONFIG_TYPE_CONNINFO, //  A libpq connection string: its password is masked when shown
    FQ_CONFIG_TYPE_SECRET,   //  Any text, masked whole when shown (a password)
    FQ_CONFIG_TYPE_INT,      //  A decimal integer within the key's min..max
    FQ_CONFIG_TYPE_BOOL,     //  true/false, yes/no, on/off, 1/0 (any case)
    FQ_CONFIG_TYPE_CHOICE,   //  One of the words of the key's choices ("a|b|c")
} fq_config_type_t;

//  One key: a row of a program's table.
typedef struct {
    const char *name; //  In files and the printout; in flags with '-' for '_'
    const char *env;  //  Its environment variable
    fq_config_type_t type;
    const char *def; //  The default, as it would be written in a file
    long long min;   //  INT: the range
    long long max;
    const char *choices; //  CHOICE: "a|b|c"
    const char *help;    //  One line
} fq_config_key_t;

/*  A row of a key table, from a program's X-macro list
    X(ID, name, TYPE, default, min, max, choices, help), its variable
    prefix ID:

        static const fq_config_key_t s_keys[] = {
        #define X(...) FQ_CONFIG_KEY("FAIRQ_", __VA_ARGS__)
            FQ_FAIRQD_KEYS(X)
        #undef X
        };
*/
#define FQ_CONFIG_KEY(prefix, id, name, type, def, min, max, choices, help)                        \
    {#name, prefix #id, FQ_CONFIG_TYPE_##type, def, min, max, choices, help},

//  A flag that is no setting: it asks the program to do something else
//  than run, then exit (fairq-sender --make-cert PATH).
typedef struct {
    const char *name;        //  "make_cert" (--make-cert)
    const char *placeholder; //  Its value in the help ("PATH"); NULL: it takes none
    const char *help;        //  One line
} fq_config_command_t;

typedef struct fq_config fq_config_t;

//  A program's configuration: everything the engine needs to read it and
//  tell about it. Static storage, shared by every fq_config_t of it.
typedef struct {
    const char *program;    //  "fairqd": the printout's and the help's
    const char *synopsis;   //  The help's usage after the program's name
    const char *env_prefix; //  "FAIRQ_": every key's variable starts so
    const char *env_file;   //  "FAIRQ_CONFIG": names the config file
    const fq_config_key_t *keys;
    int key_count;
    const fq_config_command_t *commands; //  May be NULL
    int command_count;
    //  Checks between keys, once every source is in (NULL: none). Returns
    //  0, or FQ_EINVAL with the reason in error (fq_config_error,
    //  fq_config_check_at_least).
    int (*check)(fq_config_t *config, char *error, size_t error_size);
} fq_config_schema_t;

//  Where a key's value came from.
typedef enum {
    FQ_CONFIG_FROM_DEFAULT,
    FQ_CONFIG_FROM_FILE,
    FQ_CONFIG_FROM_ENV,
    FQ_CONFIG_FROM_FLAG,
} fq_config_source_t;

//  What the command line asks for.
typedef enum {
    FQ_CONFIG_RUN,     //  Run with the configuration
    FQ_CONFIG_HELP,    //  --help (or -h): print fq_config_help and exit
    FQ_CONFIG_VERSION, //  --version: print the program's version and exit
    FQ_CONFIG_PRINT,   //  --print-config: print fq_config_print and exit
    FQ_CONFIG_COMMAND, //  One of the schema's commands (fq_config_command)
} fq_config_action_t;

//  A configuration of schema's program (borrowed, static), holding every
//  default. NULL when out of memory.
fq_config_t *fq_config_new(const fq_config_schema_t *schema);
void fq_config_destroy(fq_config_t **self_p);

//  Loads the configuration: the defaults, then the config file (--config
//  PATH, else the schema's variable, else none), then envp
//  (NULL-terminated "NAME=value" strings; NULL reads the process's
//  environment), then the flags of argv (argv[0] is the program), then
//  the schema's checks. Nothing is kept of an earlier load. Borrows
//  everything it is given.
//  --help anywhere wins over every other argument, even a wrong one, and
//  --version over every other but --help: nothing else is looked at. A
//  command reads the command line only (its flags are checked, no file,
//  environment or check is).
//  Returns 0; or FQ_EINVAL with the reason in error (see above for its
//  form; truncated to error_size), after which the values are unspecified;
//  or FQ_ENOMEM.
int fq_config_load(fq_config_t *self, int argc, char *const argv[], char *const envp[], char *error,
                   size_t error_size);

//  What the command line of the last load asked for.
fq_config_action_t fq_config_action(fq_config_t *self);

//  With FQ_CONFIG_COMMAND: which command (its index in the schema), and
//  in *value its value (NULL for one that takes none; points into argv).
//  -1 for another action.
int fq_config_command(fq_config_t *self, const char **value);

//  The config file the last load read, or NULL. Owned by self.
const char *fq_config_file(fq_config_t *self);

//  Typed values; key is an index of the schema's table (the program's
//  enum). The key's type must match (text for STRING, CONNINFO, SECRET and
//  CHOICE keys). Strings are owned by self, valid until the next load.
const char *fq_config_str(fq_config_t *self, int key);
int fq_config_int(fq_config_t *self, int key);
bool fq_config_bool(fq_config_t *self, int key);

//  Where key's value came from, and that source spelled out for people
//  ("default", "config /etc/fairq.conf:12", "environment FAIRQ_PREFETCH",
//  "flag --prefetch"); the text is owned by self.
fq_config_source_t fq_config_source(fq_config_t *self, int key);
const char *fq_config_origin(fq_config_t *self, int key);

//  The key's name in files ("gateway_bind") and its environment variable
//  ("FAIRQ_GATEWAY_BIND"); static storage.
const char *fq_config_key_name(fq_config_t *self, int key);
const char *fq_config_key_env(fq_config_t *self, int key);

//  key's value as it may be shown: a connection string with its password
//  replaced by ********, a secret replaced whole (unless empty), other
//  values as they are. Returns a string the caller frees, or NULL when
//  out of memory.
char *fq_config_shown(fq_config_t *self, int key);

//  Whether key has the same value in self and other, two configurations
//  of one schema (wherever each came from).
bool fq_config_equal(fq_config_t *self, fq_config_t *other, int key);

//  Gives self key's value in from (same schema), with its source and
//  origin: for a program that applies part of a configuration read again.
//  Returns 0 or FQ_ENOMEM (self unchanged).
int fq_config_adopt(fq_config_t *self, fq_config_t *from, int key);

//  For the schema's checks: writes "ORIGIN: message" to error, ORIGIN
//  being where key's value came from. Returns FQ_EINVAL.
int fq_config_error(fq_config_t *self, int key, char *error, size_t error_size, const char *format,
                    ...) __attribute__((format(printf, 5, 6)));

//  For the schema's checks: upper's value must be at least factor times
//  lower's. Returns 0, or FQ_EINVAL with a message naming both values and
//  their sources, put on the source that overrode the other:
//  "flag --heartbeat_ms: heartbeat_timeout_ms = 3000 (default) must be at
//  least twice heartbeat_ms = 2000 (flag --heartbeat_ms)".
int fq_config_check_at_least(fq_config_t *self, int upper, int lower, int factor, char *error,
                             size_t error_size);

//  User text quoted in an error message is cut after this many bytes:
//  enough to recognise it, without a pasted blob burying the message.
#define FQ_CONFIG_QUOTE_MAX 64
//  Room for such a quote: each byte may become \xNN, plus quotes and "...".
#define FQ_CONFIG_QUOTED_SIZE (4 * FQ_CONFIG_QUOTE_MAX + 8)

//  text as an error message quotes user text: in double quotes, escaped
//  (control bytes as \xNN), cut after FQ_CONFIG_QUOTE_MAX bytes with
//  "...". Returns out.
const char *fq_config_quote(char out[FQ_CONFIG_QUOTED_SIZE], const char *text);

//  Writes every key, its value (secrets masked) and its source as a config
//  file ("key = value  # source") that fq_config_load reads back.
void fq_config_print(fq_config_t *self, FILE *out);

//  Writes the --help text of the program, generated from its schema.
void fq_config_help(fq_config_t *self, FILE *out);

#endif
