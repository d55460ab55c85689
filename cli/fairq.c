/*  fairq.c — fairq, the command-line client of fairqd's HTTP API
    (api/API.md).

        fairq [--url URL] [--token TOKEN] [--json] [--timeout-s N] COMMAND [ARGS]
        fairq --version


    The global options may also follow the command. --url and --token may
    come from the environment (FAIRQ_URL, FAIRQ_TOKEN; better than a flag,
    which other users see in ps), --timeout-s from FAIRQ_TIMEOUT_S; flags
    win. The token is never printed.

    Output is for people (aligned tables, the API's times as they are),
    or with --json the API's JSON answer, one document, for scripts.
    Errors go to stderr as "fairq: ..." with the API's detail.

    Exit codes (FQ_CLI_EXITS in fq_cli.h, printed by --help):
      0 success
      1 the API refused the request (400, 405, 413, 422, another 4xx), or a
        request followed with status --watch finished with dead, rejected
        or cancelled messages
      2 usage error: bad arguments, an unreadable or malformed file
      3 not found (404)
      4 no token or an unknown one (401), or not allowed (403)
      5 server or connection problem: refused, timed out, 5xx, 503
      6 conflict (409): the change does not apply in that state
      7 rate limited (429)
*/
#include "fq_cli.h"
#include "fq_cli_args.h"
#include "fq_cli_commands.h"
#include <curl/curl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef FQ_VERSION
#define FQ_VERSION "unknown"
#endif

//  fairqd's default http_listen (api/API.md)
#define S_DEFAULT_URL "http://127.0.0.1:8080"

//  Long enough for a submission of a million recipients over a slow link,
//  short enough that a script does not hang on a server that never answers
#define S_DEFAULT_TIMEOUT_S 30
#define S_TIMEOUT_MAX_S     86400

#define S_PREFIX_SIZE 64

//  ASCII DEL, a control character like those below ' '
#define S_DEL 0x7F

//  The help's layout: items indented, their texts in a column, wrapped
//  to fit a terminal of the usual width
#define S_HELP_COLUMNS  80
#define S_HELP_INDENT   2
#define S_COMMAND_WIDTH 15
#define S_OPTION_WIDTH  22
#define S_CODE_WIDTH    2
//  A command's subcommands ("tenants set"), and their options under them
#define S_SUBCOMMAND_WIDTH  21
#define S_SUBCOMMAND_INDENT 2
#define S_SUB_OPTION_INDENT 6
#define S_SUB_OPTION_WIDTH  21

//  A command that moved out of fairq: "token create" wrote to PostgreSQL,
//  and fairq speaks HTTP only. The bootstrap token is now made by fairqd,
//  which has the database (fairqd/fq_token_command.h)
#define S_MOVED_TOKEN "token"

//  What "fairq token --help" says: where the command went
static const char s_moved_token_help[] =
    "Usage: fairqd token create --admin | --tenant NAME [--json] [--config PATH]\n"
    "\n"
    "\"" FQ_CLI_PROGRAM " token create\" moved to fairqd. " FQ_CLI_PROGRAM
    " only talks to the HTTP API, and\n"
    "the first admin token cannot come from the API, which needs one: fairqd makes it\n"
    "straight in the database. Run \"fairqd token create\" on a host that reaches the\n"
    "database, with fairqd's configuration (\"fairqd token create --help\" tells more).\n"
    "\n"
    "Every later token comes through the API, with an admin token:\n"
    "  " FQ_CLI_PROGRAM " tenants token NAME            a new token of tenant NAME, shown once\n"
    "  " FQ_CLI_PROGRAM " tenants tokens NAME           their ids and ages\n"
    "  " FQ_CLI_PROGRAM " tenants revoke NAME TOKEN_ID  one of them revoked\n";

//  The commands, in the order --help lists them
static const fq_cli_command_t *const s_commands[] = {&fq_cli_cmd_submit,
                                                     &fq_cli_cmd_status,
                                                     &fq_cli_cmd_list,
                                                     &fq_cli_cmd_search,
                                                     &fq_cli_cmd_message,
                                                     &fq_cli_cmd_cancel,
                                                     &fq_cli_cmd_pause,
                                                     &fq_cli_cmd_resume,
                                                     &fq_cli_cmd_reschedule,
                                                     &fq_cli_cmd_retry,
                                                     &fq_cli_cmd_messages_cancel,
                                                     &fq_cli_cmd_messages_retry,
                                                     &fq_cli_cmd_messages_reschedule,
                                                     &fq_cli_cmd_rejects,
                                                     &fq_cli_cmd_events,
                                                     &fq_cli_cmd_errors,
                                                     &fq_cli_cmd_tenants,
                                                     &fq_cli_cmd_tenants_show,
                                                     &fq_cli_cmd_tenants_set,
                                                     &fq_cli_cmd_tenants_token,
                                                     &fq_cli_cmd_tenants_tokens,
                                                     &fq_cli_cmd_tenants_revoke,
                                                     &fq_cli_cmd_destinations,
                                                     &fq_cli_cmd_destinations_show,
                                                     &fq_cli_cmd_destinations_set,
                                                     &fq_cli_cmd_destinations_delete,
                                                     &fq_cli_cmd_holds,
                                                     &fq_cli_cmd_hold_tenant,
                                                     &fq_cli_cmd_hold_destination,
                                                     &fq_cli_cmd_hold_all,
                                                     &fq_cli_cmd_release_tenant,
                                                     &fq_cli_cmd_release_destination,
                                                     &fq_cli_cmd_release_all,
                                                     &fq_cli_cmd_suppressions,
                                                     &fq_cli_cmd_suppressions_list,
                                                     &fq_cli_cmd_suppressions_add,
                                                     &fq_cli_cmd_suppressions_remove,
                                                     &fq_cli_cmd_suppressions_import,
                                                     &fq_cli_cmd_webhooks,
                                                     &fq_cli_cmd_webhooks_list,
                                                     &fq_cli_cmd_webhooks_add,
                                                     &fq_cli_cmd_webhooks_show,
                                                     &fq_cli_cmd_webhooks_set,
                                                     &fq_cli_cmd_webhooks_rotate,
                                                     &fq_cli_cmd_webhooks_remove,
                                                     &fq_cli_cmd_schedules,
                                                     &fq_cli_cmd_schedules_list,
                                                     &fq_cli_cmd_schedules_add,
                                                     &fq_cli_cmd_schedules_show,
                                                     &fq_cli_cmd_schedules_pause,
                                                     &fq_cli_cmd_schedules_resume,
                                                     &fq_cli_cmd_schedules_remove,
                                                     &fq_cli_cmd_feedback,
                                                     &fq_cli_cmd_top,
                                                     &fq_cli_cmd_shape,
                                                     &fq_cli_cmd_health,
                                                     NULL};

static const fq_cli_option_t s_global_options[] = {
    {"url", "URL", "fairqd's API (default $FAIRQ_URL, else " S_DEFAULT_URL ")"},
    {"token", "TOKEN", "bearer token (default $FAIRQ_TOKEN; never printed)"},
    {"json", NULL, "print the API's JSON answer as it is, one document, for scripts"},
    {"timeout-s", "N",
     "longest one HTTP exchange may take (default $FAIRQ_TIMEOUT_S, else 30; 1..86400)"},
    {NULL, NULL, NULL}};

//  Options of fairq alone, before any command
static const fq_cli_option_t s_program_options[] = {
    {"version", NULL, "print the version (" FQ_CLI_PROGRAM " X.Y.Z) and exit; before any command"},
    {NULL, NULL, NULL}};

//  Prints "  LEFT  text", LEFT after indent spaces, with text wrapped at
//  S_HELP_COLUMNS, its continuation lines indented under its start (and
//  on a line of its own when LEFT is wider than left_width).
static void s_print_item_at(FILE *out, int indent, const char *left, int left_width,
                            const char *text)
{
    int column = fprintf(out, "%*s%-*s ", indent, "", left_width, left);
    indent += left_width + 1;
    if (column > indent)
        column = fprintf(out, "\n%*s", indent, "") - 1;
    bool first = true;
    while (*text) {
        while (*text == ' ')
            text++;
        int word = (int)strcspn(text, " ");
        if (!word)
            break;
        if (!first && column + 1 + word > S_HELP_COLUMNS)
            column = fprintf(out, "\n%*s", indent, "") - 1;
        else if (!first)
            column += fprintf(out, " ");
        column += fprintf(out, "%.*s", word, text);
        text += word;
        first = false;
    }
    fputc('\n', out);
}

static void s_print_item(FILE *out, const char *left, int left_width, const char *text)
{
    s_print_item_at(out, S_HELP_INDENT, left, left_width, text);
}

//  Each option as "--name VALUE  help", indented, in a column width wide.
static void s_print_options_at(FILE *out, const fq_cli_option_t *options, int indent, int width)
{
    for (size_t i = 0; options && options[i].name; i++) {
        char left[S_PREFIX_SIZE];
        snprintf(left, sizeof left, "--%s%s%s", options[i].name, options[i].value ? " " : "",
                 options[i].value ? options[i].value : "");
        s_print_item_at(out, indent, left, width, options[i].help);
    }
}

static void s_print_options(FILE *out, const fq_cli_option_t *options)
{
    s_print_options_at(out, options, S_HELP_INDENT, S_OPTION_WIDTH);
}

static void s_usage(FILE *out)
{
    fprintf(out,
            "Usage: %s [--url URL] [--token TOKEN] [--json] [--timeout-s N] COMMAND [ARGS]\n"
            "       %s --version\n\n"
            "The command-line client of fairqd's HTTP API.\n\nCommands:\n",
            FQ_CLI_PROGRAM, FQ_CLI_PROGRAM);
    for (size_t i = 0; s_commands[i]; i++)
        s_print_item(out, s_commands[i]->name, S_COMMAND_WIDTH, s_commands[i]->summary);
    fprintf(out, "\nGlobal options (before or after the command):\n");
    s_print_options(out, s_global_options);
    s_print_item(out, "--help, -h", S_OPTION_WIDTH, "this text; after a command, that command's");
    s_print_options(out, s_program_options);
    fprintf(out, "\nExit codes:\n");
#define X(name, code, meaning) s_print_item(out, #code, S_CODE_WIDTH, meaning);
    FQ_CLI_EXITS(X)
#undef X
    fprintf(out, "\n\"%s COMMAND --help\" tells more about a command.\n", FQ_CLI_PROGRAM);
}

//  The subcommand of parent that commands[i] is ("set" of "tenants"), or
//  NULL when it is none.
static const char *s_subcommand(const fq_cli_command_t *parent, size_t i)
{
    size_t len = strlen(parent->name);
    const char *name = s_commands[i]->name;
    return strncmp(name, parent->name, len) == 0 && name[len] == ' ' ? name + len + 1 : NULL;
}

//  A command's subcommands, one line each (its name, arguments and
//  summary), with their options under them. Nothing when it has none.
static void s_print_subcommands(FILE *out, const fq_cli_command_t *command)
{
    bool first = true;
    for (size_t i = 0; s_commands[i]; i++) {
        const char *sub = s_subcommand(command, i);
        if (!sub)
            continue;
        if (first)
            fprintf(out, "\nSubcommands (\"%s %s SUBCOMMAND --help\" tells more):\n",
                    FQ_CLI_PROGRAM, command->name);
        first = false;
        //  Its positional arguments (none when the usage starts with an
        //  option); the options follow, one a line
        const fq_cli_command_t *c = s_commands[i];
        const char *options =
            strncmp(c->usage, "[--", strlen("[--")) == 0 ? c->usage : strstr(c->usage, " [--");
        int words = options ? (int)(options - c->usage) : (int)strlen(c->usage);
        char left[S_PREFIX_SIZE];
        snprintf(left, sizeof left, "%s%s%.*s", sub, words ? " " : "", words, c->usage);
        s_print_item_at(out, S_SUBCOMMAND_INDENT, left, S_SUBCOMMAND_WIDTH, c->summary);
        s_print_options_at(out, c->options, S_SUB_OPTION_INDENT, S_SUB_OPTION_WIDTH);
    }
}

static bool s_has_subcommands(const fq_cli_command_t *command)
{
    for (size_t i = 0; s_commands[i]; i++)
        if (s_subcommand(command, i))
            return true;
    return false;
}

static void s_command_usage(FILE *out, const fq_cli_command_t *command)
{
    fprintf(out, "Usage: %s %s%s%s\n", FQ_CLI_PROGRAM, command->name, *command->usage ? " " : "",
            command->usage);
    if (s_has_subcommands(command))
        fprintf(out, "       %s %s SUBCOMMAND [ARGS]\n", FQ_CLI_PROGRAM, command->name);
    fprintf(out, "\n%s.\n", command->summary);
    if (command->description)
        fprintf(out, "\n%s\n", command->description);
    if (command->options && command->options[0].name) {
        fprintf(out, "\nOptions:\n");
        s_print_options(out, command->options);
    }
    s_print_subcommands(out, command);
    fprintf(out, "\nGlobal options (\"%s --help\" for all, and the exit codes):\n", FQ_CLI_PROGRAM);
    s_print_options(out, s_global_options);
}

//  The command named by argv[i] (and argv[i + 1] for two words, as in
//  "tenants set"); *words says how many it took.
static const fq_cli_command_t *s_find(int argc, char **argv, int i, int *words)
{
    for (size_t c = 0; i + 1 < argc && s_commands[c]; c++) {
        const char *name = s_commands[c]->name, *space = strchr(name, ' ');
        if (space && strncmp(name, argv[i], (size_t)(space - name)) == 0 &&
            argv[i][space - name] == 0 && strcmp(space + 1, argv[i + 1]) == 0) {
            *words = 2;
            return s_commands[c];
        }
    }
    for (size_t c = 0; s_commands[c]; c++)
        if (strcmp(s_commands[c]->name, argv[i]) == 0) {
            *words = 1;
            return s_commands[c];
        }
    return NULL;
}

//  A global option's value: the flag's, else the environment's.
static const char *s_global(const fq_cli_args_t *args, const char *name, const char *env)
{
    const char *value = fq_cli_arg(args, name);
    if (!value && env) {
        value = getenv(env);
        if (value && !*value)
            value = NULL;
    }
    return value;
}

//  Sets up cli from the global options. Returns 0 or FQ_CLI_EXIT_USAGE.
static int s_setup(fq_cli_t *cli, const fq_cli_args_t *args, char **url)
{
    const char *base = s_global(args, "url", "FAIRQ_URL");
    if (!base)
        base = S_DEFAULT_URL;
    if (strncmp(base, "http://", strlen("http://")) != 0 &&
        strncmp(base, "https://", strlen("https://")) != 0) {
        fq_cli_error("invalid --url \"%s\" (http://HOST:PORT or https://...)", base);
        return FQ_CLI_EXIT_USAGE;
    }
    *url = strdup(base);
    if (!*url) {
        fq_cli_error("out of memory");
        return FQ_CLI_EXIT_USAGE;
    }
    //  The paths we add start with '/'
    size_t len = strlen(*url);
    while (len > 0 && (*url)[len - 1] == '/')
        (*url)[--len] = 0;
    cli->url = *url;
    cli->token = s_global(args, "token", "FAIRQ_TOKEN");
    //  It goes into a header line: a space or control character would
    //  break it (or add lines); the token itself is not shown
    for (const char *c = cli->token; c && *c; c++)
        if (*c <= ' ' || *c == S_DEL) {
            fq_cli_error("invalid --token (or FAIRQ_TOKEN): a space or control character in it");
            return FQ_CLI_EXIT_USAGE;
        }
    cli->json = fq_cli_flag(args, "json");
    int64_t timeout = S_DEFAULT_TIMEOUT_S;
    const char *text = s_global(args, "timeout-s", "FAIRQ_TIMEOUT_S");
    if (text && fq_cli_parse_int(text, "--timeout-s", 1, S_TIMEOUT_MAX_S, &timeout))
        return FQ_CLI_EXIT_USAGE;
    cli->timeout_s = (long)timeout;
    return 0;
}

static int s_run(int argc, char **argv)
{
    fq_cli_args_t args = {.tables = {s_global_options, s_program_options}, .ntables = 2};
    int next = 0;
    int rc = fq_cli_args_parse(&args, argc, argv, true, &next, FQ_CLI_PROGRAM);
    if (rc)
        return rc;
    if (fq_cli_flag(&args, "version")) {
        printf("%s %s\n", FQ_CLI_PROGRAM, FQ_VERSION);
        return FQ_CLI_EXIT_OK;
    }
    if (next >= argc) {
        if (args.help) {
            s_usage(stdout);
            return FQ_CLI_EXIT_OK;
        }
        fq_cli_error("no command given");
        fprintf(stderr, "Try \"%s --help\" for more information.\n", FQ_CLI_PROGRAM);
        return FQ_CLI_EXIT_USAGE;
    }
    if (strcmp(argv[next], "help") == 0 && !args.help) {
        //  "fairq help" and "fairq help COMMAND"
        int words = 0;
        const fq_cli_command_t *command =
            next + 1 < argc ? s_find(argc, argv, next + 1, &words) : NULL;
        if (command)
            s_command_usage(stdout, command);
        else
            s_usage(stdout);
        return FQ_CLI_EXIT_OK;
    }
    if (strcmp(argv[next], S_MOVED_TOKEN) == 0) {
        //  Asked for help, it answers with where the command went
        bool help = args.help;
        for (int i = next + 1; i < argc && !help; i++)
            help = strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0;
        if (help) {
            fputs(s_moved_token_help, stdout);
            return FQ_CLI_EXIT_OK;
        }
        fq_cli_error("\"%s token create\" moved to fairqd: run \"fairqd token create\" on the "
                     "database host (%s only talks to the HTTP API)",
                     FQ_CLI_PROGRAM, FQ_CLI_PROGRAM);
        fprintf(stderr, "Try \"fairqd token create --help\" for more information.\n");
        return FQ_CLI_EXIT_USAGE;
    }
    int words = 0;
    const fq_cli_command_t *command = s_find(argc, argv, next, &words);
    //  The first word of commands only ("hold" of "hold tenant"): their
    //  list, on stdout when asked for with --help
    const fq_cli_command_t group = {.name = argv[next], .usage = ""};
    if (!command && s_has_subcommands(&group)) {
        bool help = args.help;
        for (int i = next + 1; i < argc && !help; i++)
            help = strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0;
        if (!help && next + 1 < argc)
            fq_cli_error("unknown command \"%s %s\"", argv[next], argv[next + 1]);
        else if (!help)
            fq_cli_error("\"%s\" needs a subcommand", argv[next]);
        FILE *out = help ? stdout : stderr;
        fprintf(out, "Usage: %s %s SUBCOMMAND [ARGS]\n", FQ_CLI_PROGRAM, group.name);
        s_print_subcommands(out, &group);
        return help ? FQ_CLI_EXIT_OK : FQ_CLI_EXIT_USAGE;
    }
    if (!command) {
        fq_cli_error("unknown command \"%s\"", argv[next]);
        fprintf(stderr, "Try \"%s --help\" for the list of commands.\n", FQ_CLI_PROGRAM);
        return FQ_CLI_EXIT_USAGE;
    }
    char prefix[S_PREFIX_SIZE];
    snprintf(prefix, sizeof prefix, "%s %s", FQ_CLI_PROGRAM, command->name);
    args.command = command;
    //  The command's options take the place of fairq's own (--version
    //  was not given: it returned above)
    args.tables[1] = command->options;
    args.ntables = 2;
    //  The command's argv: its last word stands where getopt wants argv[0]
    int first = next + words - 1;
    rc = fq_cli_args_parse(&args, argc - first, argv + first, false, NULL, prefix);
    if (rc)
        return rc;
    if (args.help) {
        s_command_usage(stdout, command);
        return FQ_CLI_EXIT_OK;
    }
    if (args.npos < command->min_args || args.npos > command->max_args) {
        if (args.npos > command->max_args)
            fprintf(stderr, "%s: unexpected argument \"%s\"\n", prefix,
                    args.pos[command->max_args]);
        else
            fprintf(stderr, "%s: missing argument\n", prefix);
        fprintf(stderr, "Usage: %s %s\n", prefix, command->usage);
        if (s_has_subcommands(command))
            fprintf(stderr, "Try \"%s --help\" for its subcommands.\n", prefix);
        return FQ_CLI_EXIT_USAGE;
    }
    fq_cli_t cli = {0};
    char *url = NULL;
    rc = s_setup(&cli, &args, &url);
    if (rc == 0)
        rc = command->run(&cli, &args);
    fq_cli_http_destroy(&cli.http);
    free(url);
    return rc;
}

int main(int argc, char *argv[])
{
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        fq_cli_error("could not initialise libcurl");
        return FQ_CLI_EXIT_SERVER;
    }
    int rc = s_run(argc, argv);
    curl_global_cleanup();
    //  A full disk or a closed pipe must not pass for success
    if ((fflush(stdout) != 0 || ferror(stdout)) && rc == FQ_CLI_EXIT_OK) {
        fq_cli_error("could not write the output");
        rc = FQ_CLI_EXIT_FAILED;
    }
    return rc;
}
