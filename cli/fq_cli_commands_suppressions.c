/*  fq_cli_commands_suppressions.c — suppressions (list, add, remove,
    import): the addresses not to mail, a tenant's list or the operator's
    global one (api/API.md, "Suppression lists").

    Every command names its list: --tenant NAME, or --global (admin). The
    API names a list in its paths, and a token does not say which tenant
    it is for, so neither is guessed. An address is checked here only for
    what the API refuses in any case (empty, too long, no @, a space or
    control character): the API holds the whole rule and says what is
    wrong with the rest.
*/
#include "fq_cli_args.h"
#include "fq_cli_commands.h"
#include "fq_cli_pages.h"
#include "fq_cli_table.h"
#include "fq_feedback_names.h"
#include "fq_limits.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  API.md: limit is 1..1000 per page, 100 unless given
#define S_LIMIT_MAX 1000

//  API.md: an address is at most 320 bytes, a detail at most 2000
#define S_ADDRESS_MAX 320
#define S_DETAIL_MAX  2000

//  Printable ASCII without the space: what an address may hold
#define S_PRINTABLE_FIRST '!'
#define S_PRINTABLE_LAST  '~'

//  The control characters a detail may not hold: below the space, DEL
#define S_CONTROL_LAST (' ' - 1)
#define S_DEL          0x7f

//  An added entry: the API answers 201 (200: it was there already)
#define S_HTTP_CREATED 201

//  Room for a list's name for people: "tenant \"NAME\"", "the global list"
#define S_LIST_NAME_SIZE (FQ_TENANT_NAME_SIZE + 32)

//  The reasons in the order the API counts them (API.md)

//  The options every command has: which list
#define S_LIST_OPTIONS                                                                             \
    {"tenant", "NAME", "the list of this tenant"},                                                 \
    {                                                                                              \
        "global", NULL, "the operator's global list, which holds for every tenant (admin)"         \
    }

static const fq_cli_option_t s_list_options[] = {
    S_LIST_OPTIONS,
    {"after", "ADDRESS", "the page after this address (a page's \"next\", as --json shows it)"},
    {"limit", "N", "at most N entries (1..1000, default 100)"},
    {NULL, NULL, NULL}};

static const fq_cli_option_t s_add_options[] = {
    S_LIST_OPTIONS,
    {"detail", "TEXT", "a note kept with each address (at most 2000 bytes, one line)"},
    {NULL, NULL, NULL}};

static const fq_cli_option_t s_other_options[] = {S_LIST_OPTIONS, {NULL, NULL, NULL}};

//  ---------------------------------------------------------------------
//  The list, and the checks of arguments

//  Which list the options name: *tenant (NULL: the global one) and its
//  path, "/v1/tenants/NAME/suppressions" or "/v1/suppressions", into path
//  (size bytes). Returns 0 or FQ_CLI_EXIT_USAGE (printed).
static int s_list(const fq_cli_args_t *args, const char **tenant, char *path, size_t size)
{
    *tenant = fq_cli_arg(args, "tenant");
    bool global = fq_cli_flag(args, "global");
    if (*tenant && global) {
        fq_cli_error("--tenant NAME and --global cannot go together: one list at a time");
        return FQ_CLI_EXIT_USAGE;
    }
    if (!*tenant && !global) {
        fq_cli_error("which list? give --tenant NAME (a tenant's) or --global (the operator's, "
                     "admin)");
        return FQ_CLI_EXIT_USAGE;
    }
    if (*tenant && fq_cli_parse_tenant(*tenant, "tenant"))
        return FQ_CLI_EXIT_USAGE;
    if (*tenant)
        snprintf(path, size, "/v1/tenants/%s/suppressions", *tenant);
    else
        snprintf(path, size, "/v1/suppressions");
    return 0;
}

//  Room for a list's path: the longest tenant name and the rest.
#define S_PATH_SIZE (FQ_TENANT_NAME_SIZE + 64)

static void s_list_name(char *out, size_t size, const char *tenant)
{
    if (tenant)
        snprintf(out, size, "the list of tenant %s", tenant);
    else
        snprintf(out, size, "the global list");
}

//  An address as far as it is checked here: 1..320 bytes of printable
//  ASCII without spaces, with an @. what names it ("address", "value for
//  --after"). Returns 0 or FQ_CLI_EXIT_USAGE (printed).
static int s_parse_address(const char *text, const char *what)
{
    size_t size = strlen(text);
    bool printable = true;
    for (size_t i = 0; i < size; i++)
        printable = printable && text[i] >= S_PRINTABLE_FIRST && text[i] <= S_PRINTABLE_LAST;
    if (size == 0 || size > S_ADDRESS_MAX || !printable || !strchr(text, '@')) {
        char shown[FQ_CLI_VALUE_SIZE];
        fq_cli_escape(shown, sizeof shown, text);
        fq_cli_error("invalid %s \"%s\" (an address: local@domain, 1..%d bytes of printable ASCII "
                     "without spaces)",
                     what, shown, S_ADDRESS_MAX);
        return FQ_CLI_EXIT_USAGE;
    }
    return 0;
}

//  The path of address on the list at base, the address escaped. NULL
//  when out of memory (printed); caller frees.
static char *s_entry_path(const char *base, const char *address)
{
    char *escaped = fq_cli_url_escape(address);
    char *path = NULL;
    if (!escaped || asprintf(&path, "%s/%s", base, escaped) < 0)
        path = NULL;
    free(escaped);
    if (!path)
        fq_cli_error("out of memory");
    return path;
}

//  ---------------------------------------------------------------------
//  suppressions, suppressions list

//  "9 entries: manual 8, bounce 1, complaint 0, unsubscribe 0", from the
//  first page's counts, on stderr (stdout is the table).
static void s_print_counts(const json_t *counts, const char *list)
{
    if (!json_is_object(counts))
        return;
    fprintf(stderr, "%s holds %lld:", list,
            (long long)json_integer_value(json_object_get(counts, "total")));
    for (size_t i = 0; fq_suppression_reasons[i]; i++)
        fprintf(stderr, "%s %s %lld", i ? "," : "", fq_suppression_reasons[i],
                (long long)json_integer_value(json_object_get(counts, fq_suppression_reasons[i])));
    fputc('\n', stderr);
}

static int s_print_page(const json_t *page)
{
    static const char *const headers[] = {"ADDRESS", "REASON", "CREATED", "DETAIL"};
    static const char *const keys[] = {"address", "reason", "created_at", "detail"};
    const json_t *rows = json_object_get(page, "suppressions");
    if (json_array_size(rows) == 0)
        return FQ_CLI_EXIT_OK;
    fq_cli_table_t *table = fq_cli_table_new(headers, "llll");
    size_t i;
    const json_t *row;
    json_array_foreach(rows, i, row)
    {
        for (size_t k = 0; table && k < sizeof keys / sizeof *keys; k++)
            fq_cli_table_add_json(table, json_object_get(row, keys[k]));
    }
    if (!table) {
        fq_cli_error("out of memory");
        return FQ_CLI_EXIT_FAILED;
    }
    fq_cli_table_print(table, stdout, SIZE_MAX, "\n");
    fq_cli_table_destroy(&table);
    return FQ_CLI_EXIT_OK;
}

static int s_suppressions(fq_cli_t *cli, const fq_cli_args_t *args)
{
    const char *tenant, *after = fq_cli_arg(args, "after");
    const char *limit_text = fq_cli_arg(args, "limit");
    char base[S_PATH_SIZE];
    int64_t limit;
    if (s_list(args, &tenant, base, sizeof base) ||
        (after && s_parse_address(after, "value for --after")) ||
        (limit_text && fq_cli_parse_int(limit_text, "--limit", 1, S_LIMIT_MAX, &limit)))
        return FQ_CLI_EXIT_USAGE;
    fq_cli_query_t query[] = {{"after", after}, {"limit", limit_text}, {NULL, NULL}};
    char *path = fq_cli_query_path(base, query);
    if (!path) {
        fq_cli_error("out of memory");
        return FQ_CLI_EXIT_FAILED;
    }
    fq_cli_answer_t answer = {0};
    int rc = fq_cli_call(cli, "GET", path, NULL, NULL, &answer);
    if (rc == FQ_CLI_EXIT_OK && cli->json)
        fq_cli_print_raw(&answer);
    else if (rc == FQ_CLI_EXIT_OK) {
        rc = s_print_page(answer.json);
        char list[S_LIST_NAME_SIZE];
        s_list_name(list, sizeof list, tenant);
        s_print_counts(json_object_get(answer.json, "counts"), list);
        const char *next = json_string_value(json_object_get(answer.json, "next"));
        if (next)
            fprintf(stderr, "(more: --after %s)\n", next);
    }
    fq_cli_answer_reset(&answer);
    free(path);
    return rc;
}

#define S_LIST_USAGE "[--tenant NAME | --global] [--after ADDRESS] [--limit N]"
#define S_LIST_DESCRIPTION                                                                         \
    "One line per address, in address order: its reason (manual, bounce, complaint or\n"           \
    "unsubscribe), when it was added and its detail. A recipient on its tenant's list or\n"        \
    "on the global one is refused when its request is split (the reason \"suppressed\"\n"          \
    "among the request's rejects). The first page says on stderr how many the list\n"              \
    "holds by reason; a full page ends with the --after ADDRESS of the next."

const fq_cli_command_t fq_cli_cmd_suppressions = {
    .name = "suppressions",
    .usage = S_LIST_USAGE,
    .summary = "the addresses not to mail: a tenant's list, or the global one",
    .description = S_LIST_DESCRIPTION,
    .options = s_list_options,
    .min_args = 0,
    .max_args = 0,
    .run = s_suppressions};

const fq_cli_command_t fq_cli_cmd_suppressions_list = {
    .name = "suppressions list",
    .usage = S_LIST_USAGE,
    .summary = "the addresses of a suppression list, a page at a time",
    .description = S_LIST_DESCRIPTION,
    .options = s_list_options,
    .min_args = 0,
    .max_args = 0,
    .run = s_suppressions};

//  ---------------------------------------------------------------------
//  suppressions add

//  A --detail as the API takes it: at most 2000 bytes without control
//  characters. Returns 0 or FQ_CLI_EXIT_USAGE (printed).
static int s_parse_detail(const char *text)
{
    bool control = false;
    for (const char *c = text; *c; c++)
        control = control || (unsigned char)*c <= S_CONTROL_LAST || *c == S_DEL;
    if (strlen(text) > S_DETAIL_MAX || control) {
        fq_cli_error("invalid value for --detail (at most %d bytes of text, without control "
                     "characters such as a line break)",
                     S_DETAIL_MAX);
        return FQ_CLI_EXIT_USAGE;
    }
    return 0;
}

static int s_suppressions_add(fq_cli_t *cli, const fq_cli_args_t *args)
{
    const char *tenant, *detail = fq_cli_arg(args, "detail");
    char base[S_PATH_SIZE];
    if (s_list(args, &tenant, base, sizeof base) || (detail && s_parse_detail(detail)))
        return FQ_CLI_EXIT_USAGE;
    for (int i = 0; i < args->npos; i++)
        if (s_parse_address(args->pos[i], "address"))
            return FQ_CLI_EXIT_USAGE;
    json_t *body = detail ? json_pack("{s:s}", "detail", detail) : NULL;
    if (detail && !body) {
        fq_cli_error("out of memory");
        return FQ_CLI_EXIT_FAILED;
    }
    char list[S_LIST_NAME_SIZE];
    s_list_name(list, sizeof list, tenant);
    //  One PUT each, in the order given; the first that fails ends it
    int rc = FQ_CLI_EXIT_OK;
    for (int i = 0; i < args->npos && rc == FQ_CLI_EXIT_OK; i++) {
        char *path = s_entry_path(base, args->pos[i]);
        if (!path) {
            rc = FQ_CLI_EXIT_FAILED;
            break;
        }
        fq_cli_answer_t answer = {0};
        rc = fq_cli_call(cli, "PUT", path, body, NULL, &answer);
        char address[FQ_CLI_VALUE_SIZE];
        fq_cli_format_value(address, sizeof address, json_object_get(answer.json, "address"));
        if (rc == FQ_CLI_EXIT_OK && cli->json)
            fq_cli_print_raw(&answer);
        else if (rc == FQ_CLI_EXIT_OK && answer.status == S_HTTP_CREATED)
            printf("%s added to %s\n", address, list);
        else if (rc == FQ_CLI_EXIT_OK) {
            char reason[FQ_CLI_VALUE_SIZE], since[FQ_CLI_VALUE_SIZE];
            fq_cli_format_value(reason, sizeof reason, json_object_get(answer.json, "reason"));
            fq_cli_format_value(since, sizeof since, json_object_get(answer.json, "created_at"));
            printf("%s was on %s already (%s, since %s)\n", address, list, reason, since);
        }
        fq_cli_answer_reset(&answer);
        free(path);
    }
    json_decref(body);
    return rc;
}

//  The summary below says how many addresses one add takes
_Static_assert(FQ_CLI_POSITIONAL_MAX == 4, "suppressions add's summary");

const fq_cli_command_t fq_cli_cmd_suppressions_add = {
    .name = "suppressions add",
    .usage = "ADDRESS... [--tenant NAME | --global] [--detail TEXT]",
    .summary = "add addresses to a suppression list (up to 4; more: import)",
    .description =
        "Each address is added with the reason manual, in any case (Bob@Example.com and\n"
        "bob@example.com are one entry). One already on the list stays as it was, its\n"
        "reason and detail kept. With --json, each entry as the API answers it, one a line.",
    .options = s_add_options,
    .min_args = 1,
    .max_args = FQ_CLI_POSITIONAL_MAX,
    .run = s_suppressions_add};

//  ---------------------------------------------------------------------
//  suppressions remove

static int s_suppressions_remove(fq_cli_t *cli, const fq_cli_args_t *args)
{
    const char *tenant;
    char base[S_PATH_SIZE];
    if (s_list(args, &tenant, base, sizeof base) || s_parse_address(args->pos[0], "address"))
        return FQ_CLI_EXIT_USAGE;
    char *path = s_entry_path(base, args->pos[0]);
    if (!path)
        return FQ_CLI_EXIT_FAILED;
    fq_cli_answer_t answer = {0};
    //  204, no body: fq_cli_call takes it as done
    int rc = fq_cli_call(cli, "DELETE", path, NULL, NULL, &answer);
    if (rc == FQ_CLI_EXIT_OK && !cli->json) {
        char list[S_LIST_NAME_SIZE], address[FQ_CLI_VALUE_SIZE];
        s_list_name(list, sizeof list, tenant);
        fq_cli_escape(address, sizeof address, args->pos[0]);
        printf("%s removed from %s\n", address, list);
    }
    fq_cli_answer_reset(&answer);
    free(path);
    return rc;
}

const fq_cli_command_t fq_cli_cmd_suppressions_remove = {
    .name = "suppressions remove",
    .usage = "ADDRESS [--tenant NAME | --global]",
    .summary = "remove an address from a suppression list",
    .description = "The next requests reach the address again (exit 3 when the list does not\n"
                   "hold it). With --json nothing is printed: the exit code says it.",
    .options = s_other_options,
    .min_args = 1,
    .max_args = 1,
    .run = s_suppressions_remove};

//  ---------------------------------------------------------------------
//  suppressions import

//  The import's answer for people: the counts, then each refused line
//  listed (on stderr).
static void s_print_import(const json_t *result, const char *name, const char *list)
{
    long long refused = (long long)json_integer_value(json_object_get(result, "refused_count"));
    printf("%lld added to %s, %lld on it already, %lld lines refused\n",
           (long long)json_integer_value(json_object_get(result, "added")), list,
           (long long)json_integer_value(json_object_get(result, "already")), refused);
    size_t i;
    const json_t *line;
    json_array_foreach(json_object_get(result, "refused"), i, line)
    {
        char address[FQ_CLI_VALUE_SIZE], reason[FQ_CLI_VALUE_SIZE];
        fq_cli_format_value(address, sizeof address, json_object_get(line, "address"));
        fq_cli_format_value(reason, sizeof reason, json_object_get(line, "reason"));
        fprintf(stderr, "%s:%lld: \"%s\": %s\n", name,
                (long long)json_integer_value(json_object_get(line, "line")), address, reason);
    }
    if (refused > (long long)json_array_size(json_object_get(result, "refused")))
        fprintf(stderr, "%s: %lld more lines refused (the API lists the first %zu)\n", name,
                refused - (long long)json_array_size(json_object_get(result, "refused")),
                json_array_size(json_object_get(result, "refused")));
}

static int s_suppressions_import(fq_cli_t *cli, const fq_cli_args_t *args)
{
    const char *tenant, *file = args->pos[0];
    char base[S_PATH_SIZE];
    if (s_list(args, &tenant, base, sizeof base))
        return FQ_CLI_EXIT_USAGE;
    fq_buf_t text = {0};
    int rc = fq_cli_read_file(file, &text);
    char *path = NULL;
    if (rc == 0 && asprintf(&path, "%s/import", base) < 0) {
        path = NULL;
        fq_cli_error("out of memory");
        rc = FQ_CLI_EXIT_FAILED;
    }
    fq_cli_answer_t answer = {0};
    if (rc == 0)
        rc = fq_cli_call_raw(cli, "POST", path, text.data ? text.data : "", text.size, NULL,
                             &answer);
    if (rc == FQ_CLI_EXIT_OK) {
        if (cli->json)
            fq_cli_print_raw(&answer);
        else {
            char list[S_LIST_NAME_SIZE];
            s_list_name(list, sizeof list, tenant);
            s_print_import(answer.json, strcmp(file, "-") == 0 ? FQ_CLI_STDIN_NAME : file, list);
        }
        //  The others are added; a script learns that some were not
        if (json_integer_value(json_object_get(answer.json, "refused_count")) > 0)
            rc = FQ_CLI_EXIT_FAILED;
    }
    fq_cli_answer_reset(&answer);
    fq_buf_free(&text);
    free(path);
    return rc;
}

const fq_cli_command_t fq_cli_cmd_suppressions_import = {
    .name = "suppressions import",
    .usage = "FILE.csv [--tenant NAME | --global]",
    .summary = "import a CSV file of addresses (- for stdin) into a suppression list",
    .description =
        "The file is an address a line, or CSV whose header line names the address column\n"
        "\"address\" or \"email\" (a spreadsheet's export, its other columns not read). Each\n"
        "line that is not an address is refused alone, shown as FILE:LINE on stderr, and the\n"
        "others are added (reason manual): exit 1 when a line was refused, 0 when none was.",
    .options = s_other_options,
    .min_args = 1,
    .max_args = 1,
    .run = s_suppressions_import};
