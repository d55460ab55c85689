/*  fq_token_command.c — "fairqd token create": a bearer token straight
    into PostgreSQL, through the store (sql/fq_store.h), to bootstrap (see
    fq_token_command.h).

    Its own options (--admin, --tenant, --json, --help) are taken out of
    the command line; everything else is fairqd's configuration, handed to
    fq_fairqd_config_load as the daemon's own command line would be, so
    that --config, --database and every other key mean what they mean to
    fairqd, with the same messages.
*/
#include "fq_token_command.h"
#include "fq_error.h"
#include "fq_fairqd.h"
#include "fq_limits.h"
#include "fq_store.h"
#include <jansson.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

//  The one subcommand, and the two words as messages name them
#define S_CREATE "create"
#define S_PREFIX FQ_FAIRQD_PROGRAM " " FQ_TOKEN_COMMAND " " S_CREATE

//  The words before the options: "token create"
#define S_WORDS 2

//  What starts an option, as in fairqd's own flags
#define S_DASHES     "--"
#define S_DASHES_LEN (sizeof S_DASHES - 1)

//  The command's own options; every other is fairqd's configuration
typedef struct {
    bool admin;
    const char *tenant;
    bool json;
} s_options_t;

//  What --help prints: the options, then what the configuration adds.
static void s_usage(FILE *out)
{
    fprintf(out,
            "usage: " S_PREFIX " --admin | --tenant NAME [--json] [--config PATH] "
            "[--KEY=VALUE ...]\n"
            "       " S_PREFIX " --help\n"
            "\n"
            "Makes a bearer token of the HTTP API straight in the database, to bootstrap: the\n"
            "first admin token cannot come from the API, which needs one. Run it where the\n"
            "database is reachable, with fairqd's configuration: the database is found as fairqd\n"
            "finds it (--database, FAIRQ_DATABASE, the config file; empty: the PG* environment).\n"
            "A database without fairq's schema gets it first, as at fairqd's start; a schema\n"
            "newer than this fairqd is refused.\n"
            "\n"
            "The token is printed alone on a line, and shown this once: only its hash is kept.\n"
            "\n"
            "Options:\n"
            "  --admin              an admin token: sees and changes everything\n"
            "  --tenant NAME        a token of this tenant only (instead of --admin)\n"
            "  --json               print {\"tenant\": NAME or null, \"token\": TOKEN} instead\n"
            "  --config PATH        fairqd's config file (or FAIRQ_CONFIG)\n"
            "  --database=CONNINFO  PostgreSQL connection string (or FAIRQ_DATABASE)\n"
            "  --KEY=VALUE          any other setting of fairqd (\"fairqd --help\" lists them)\n"
            "\n"
            "Exit codes: 0 the token is printed; 1 the database could not be reached, or\n"
            "refused (no such tenant); 2 usage or configuration error; 3 the database's schema\n"
            "is newer than this fairqd.\n");
}

void fq_token_command_summary(FILE *out)
{
    fprintf(out, "\nThe first API token, made in the database with the settings above (its own\n"
                 "--help tells more):\n"
                 "  " S_PREFIX " --admin | --tenant NAME [--json] [--KEY=VALUE ...]\n");
}

//  Prints "PREFIX: message" and the hint on stderr. Returns the usage exit
//  code.
static int s_usage_error(const char *prefix, const char *format, ...)
    __attribute__((format(printf, 2, 3)));

static int s_usage_error(const char *prefix, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    fprintf(stderr, "%s: ", prefix);
    vfprintf(stderr, format, args);
    va_end(args);
    fprintf(stderr, "\nTry \"" S_PREFIX " --help\" for more information.\n");
    return FQ_FAIRQD_EXIT_CONFIG;
}

//  Prints "fairqd token create: message" on stderr, without the line
//  breaks libpq ends its messages with. Returns code.
static int s_fail(int code, const char *message)
{
    int len = (int)strlen(message);
    while (len > 0 && (message[len - 1] == '\n' || message[len - 1] == ' '))
        len--;
    fprintf(stderr, S_PREFIX ": %.*s\n", len, message);
    return code;
}

//  True when arg is the flag --name, alone (*value NULL) or as
//  --name=VALUE (*value the text after '=').
static bool s_is_option(const char *arg, const char *name, const char **value)
{
    size_t len = strlen(name);
    if (strncmp(arg, S_DASHES, S_DASHES_LEN) != 0 || strncmp(arg + S_DASHES_LEN, name, len) != 0)
        return false;
    const char *end = arg + S_DASHES_LEN + len;
    if (*end != 0 && *end != '=')
        return false;
    *value = *end ? end + 1 : NULL;
    return true;
}

//  Takes the command's own options out of args (argc of them) into
//  options; the others, in their order, go to config_argv after the
//  program's name (*config_argc of them in all). Returns 0, or the usage
//  exit code (printed).
static int s_split(int argc, char *argv[], s_options_t *options, char **config_argv,
                   int *config_argc)
{
    *config_argc = 0;
    config_argv[(*config_argc)++] = (char *)FQ_FAIRQD_PROGRAM;
    for (int i = 0; i < argc; i++) {
        const char *value;
        bool *flag = s_is_option(argv[i], "admin", &value)  ? &options->admin
                     : s_is_option(argv[i], "json", &value) ? &options->json
                                                            : NULL;
        if (flag) {
            if (value)
                return s_usage_error(S_PREFIX, "option %.*s takes no value",
                                     (int)strcspn(argv[i], "="), argv[i]);
            *flag = true;
        } else if (s_is_option(argv[i], "tenant", &value)) {
            //  As fairqd reads its flags: the value after '=', or the next
            //  argument unless it is a flag itself
            if (!value && i + 1 < argc && strncmp(argv[i + 1], S_DASHES, S_DASHES_LEN) != 0)
                value = argv[++i];
            if (!value || !*value)
                return s_usage_error(S_PREFIX, "option --tenant needs a value (a tenant's name)");
            if (options->tenant)
                return s_usage_error(S_PREFIX, "option --tenant given more than once");
            //  The API's and the CLI's rule: a typo is a usage error, not
            //  a tenant that does not exist
            if (!fq_tenant_name_valid(value))
                return s_usage_error(S_PREFIX,
                                     "invalid tenant name \"%s\" (1..%d of a-z 0-9 _ . -, "
                                     "starting with a letter or digit)",
                                     value, FQ_TENANT_NAME_MAX);
            options->tenant = value;
        } else
            config_argv[(*config_argc)++] = argv[i];
    }
    config_argv[*config_argc] = NULL;
    if (options->admin == (options->tenant != NULL))
        return s_usage_error(S_PREFIX, "needs --admin or --tenant NAME (one of them)");
    return 0;
}

//  Writes the token as fq_token_command.h says. Returns the exit code.
static int s_print(const s_options_t *options, const char *token)
{
    if (options->json) {
        json_t *answer =
            json_pack("{s:o, s:s}", "tenant",
                      options->tenant ? json_string(options->tenant) : json_null(), "token", token);
        if (!answer)
            return s_fail(FQ_FAIRQD_EXIT_FAILURE, "could not print the token: out of memory");
        json_dumpf(answer, stdout, JSON_COMPACT);
        putchar('\n');
        json_decref(answer);
    } else
        //  The token alone, so that TOKEN=$(fairqd token create --admin) works
        puts(token);
    //  A full disk or a closed pipe must not pass for success
    if (fflush(stdout) != 0 || ferror(stdout))
        return s_fail(FQ_FAIRQD_EXIT_FAILURE,
                      "could not write the token (it was made, but never shown: make another)");
    return FQ_FAIRQD_EXIT_OK;
}

//  Gives the database its schema as fairqd's start would, and makes the
//  token. Returns the exit code (printed, but for success).
static int s_create(fq_config_t *config, const s_options_t *options)
{
    char error[FQ_FAIRQD_ERROR_MAX];
    fq_fairqd_connect_timeout();
    fq_store_t *store =
        fq_store_new(fq_config_str(config, FQ_FAIRQD_KEY_DATABASE), error, sizeof error);
    if (!store)
        return s_fail(FQ_FAIRQD_EXIT_FAILURE, error);
    int rc = fq_store_migrate(store), version = 0;
    if (rc == FQ_ESCHEMA)
        rc = s_fail(FQ_FAIRQD_EXIT_SCHEMA, fq_store_error(store));
    else if (rc < 0 || (rc > 0 && fq_store_schema_version(store, &version) != 0))
        rc = s_fail(FQ_FAIRQD_EXIT_FAILURE, fq_store_error(store));
    else {
        //  Said on stderr, where it does not mix with the token: the
        //  database has changed, which its owner should know
        if (rc > 0)
            fprintf(stderr, S_PREFIX ": applied %d migration%s, schema at version %d\n", rc,
                    rc == 1 ? "" : "s", version);
        char token[FQ_STORE_TOKEN_SIZE];
        rc = fq_store_token_create(store, options->tenant, token, sizeof token, NULL);
        if (rc == FQ_ENOTFOUND) {
            fprintf(stderr,
                    S_PREFIX ": no tenant \"%s\" (create it first, with an admin token: fairq "
                             "tenants set %s)\n",
                    options->tenant, options->tenant);
            rc = FQ_FAIRQD_EXIT_FAILURE;
        } else if (rc != 0)
            rc = s_fail(FQ_FAIRQD_EXIT_FAILURE, fq_store_error(store));
        else
            rc = s_print(options, token);
        memset(token, 0, sizeof token);
    }
    fq_store_destroy(&store);
    return rc;
}

int fq_token_command(int argc, char *argv[])
{
    const char *prefix = FQ_FAIRQD_PROGRAM " " FQ_TOKEN_COMMAND;
    //  --help anywhere wins over every other argument, as for fairqd
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            s_usage(stdout);
            return FQ_FAIRQD_EXIT_OK;
        }
    if (argc < S_WORDS)
        return s_usage_error(prefix, "missing subcommand (" S_PREFIX ")");
    if (strcmp(argv[1], S_CREATE) != 0)
        return s_usage_error(prefix, "unknown subcommand \"%s\" (" S_PREFIX ")", argv[1]);

    s_options_t options = {0};
    //  The program's name, the settings, and the NULL
    char **config_argv = calloc((size_t)argc + 1, sizeof *config_argv);
    fq_config_t *config = fq_config_new(&fq_fairqd_schema);
    char error[FQ_FAIRQD_ERROR_MAX];
    int config_argc = 0, rc;
    if (!config_argv || !config)
        rc = s_fail(FQ_FAIRQD_EXIT_FAILURE, "out of memory");
    else
        rc = s_split(argc - S_WORDS, argv + S_WORDS, &options, config_argv, &config_argc);
    if (rc == 0) {
        rc = fq_fairqd_config_load(config, config_argc, config_argv, error, sizeof error);
        if (rc == FQ_ENOMEM)
            rc = s_fail(FQ_FAIRQD_EXIT_FAILURE, "out of memory");
        else if (rc)
            rc = s_usage_error(S_PREFIX, "%s", error);
        else if (fq_config_action(config) == FQ_CONFIG_VERSION) {
            printf("%s %s\n", FQ_FAIRQD_PROGRAM, FQ_VERSION);
            rc = FQ_FAIRQD_EXIT_OK;
        } else if (fq_config_action(config) == FQ_CONFIG_PRINT) {
            //  Which database it would use, and from where
            fq_config_print(config, stdout);
            rc = FQ_FAIRQD_EXIT_OK;
        } else
            rc = s_create(config, &options);
    }
    fq_config_destroy(&config);
    free(config_argv);
    return rc;
}
