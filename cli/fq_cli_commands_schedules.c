/*  fq_cli_commands_schedules.c — schedules (list, add, show, pause,
    resume, remove): a tenant's recurring sends, each a cron expression in
    a time zone whose firings submit a stored request (api/API.md,
    "Schedules"; docs/operations.md, "Recurring sends").

    Every command names its tenant with --tenant NAME, as the webhooks
    commands do: the API names the tenant in its paths. A schedule is named
    by its id or its name. The request is read from a file, as "fairq
    submit" reads one: the body of POST /v1/requests, without tenant and
    send_at. The expression, the time zone and the request are checked by
    the API, which says what is wrong.
*/
#include "fq_buf.h"
#include "fq_cli_args.h"
#include "fq_cli_commands.h"
#include "fq_cli_table.h"
#include "fq_limits.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  Longest schedule name (API.md: 1..64 of a-z 0-9 _ . - from a letter)
#define S_NAME_MAX 64

//  Room for a schedule's path: the longest tenant name, a name, the rest
#define S_PATH_SIZE (FQ_TENANT_NAME_SIZE + S_NAME_MAX + 64)

//  The option every command has: which tenant's schedules
#define S_TENANT_OPTION                                                                            \
    {                                                                                              \
        "tenant", "NAME", "the tenant whose schedules (required)"                                  \
    }

static const fq_cli_option_t s_tenant_options[] = {S_TENANT_OPTION, {NULL, NULL, NULL}};

static const fq_cli_option_t s_add_options[] = {
    S_TENANT_OPTION,
    {"cron", "EXPR",
     "when it fires: minute hour day-of-month month day-of-week, quoted (required)"},
    {"time-zone", "ZONE", "the IANA time zone the expression is read in (default UTC)"},
    {"request", "FILE",
     "the request each firing submits, the JSON body of a submit (\"-\": standard input; "
     "required)"},
    {"missed", "latest|skip",
     "firings missed while fairqd was down: fire the latest once (default), or none"},
    {"paused", NULL, "made paused: it fires nothing until resumed"},
    {NULL, NULL, NULL}};

static const char *const s_missed_choices[] = {"latest", "skip", NULL};

//  The tenant the options name, and the path of its schedules
//  ("/v1/tenants/NAME/schedules") into path. Returns 0 or
//  FQ_CLI_EXIT_USAGE (printed).
static int s_tenant(const fq_cli_args_t *args, const char **tenant, char *path, size_t size)
{
    return fq_cli_tenant_path(args, "schedules", tenant, path, size);
}

//  Whether text is a schedule's name (API.md's rule).
static bool s_name_valid(const char *text)
{
    size_t len = strlen(text);
    if (len < 1 || len > S_NAME_MAX || text[0] < 'a' || text[0] > 'z')
        return false;
    return strspn(text, "abcdefghijklmnopqrstuvwxyz0123456789_.-") == len;
}

//  The schedule of the first positional argument (an id or a name) and
//  its path. Returns 0 or FQ_CLI_EXIT_USAGE (printed).
static int s_schedule(const fq_cli_args_t *args, const char **tenant, char *path, size_t size)
{
    char base[S_PATH_SIZE];
    const char *which = args->pos[0];
    int64_t id;
    if (which[0] >= '0' && which[0] <= '9') {
        if (fq_cli_parse_id(which, "schedule id", &id))
            return FQ_CLI_EXIT_USAGE;
    } else if (!s_name_valid(which)) {
        char shown[FQ_CLI_VALUE_SIZE];
        fq_cli_escape(shown, sizeof shown, which);
        fq_cli_error("invalid schedule \"%s\" (its id, or its name: 1..%d of a-z 0-9 _ . - "
                     "starting with a letter)",
                     shown, S_NAME_MAX);
        return FQ_CLI_EXIT_USAGE;
    }
    if (s_tenant(args, tenant, base, sizeof base))
        return FQ_CLI_EXIT_USAGE;
    int n = snprintf(path, size, "%s/%s", base, which);
    if (n < 0 || (size_t)n >= size) {
        fq_cli_error("invalid schedule: its path is too long");
        return FQ_CLI_EXIT_USAGE;
    }
    return 0;
}

static void s_print_schedule(const json_t *schedule)
{
    static const char *const fields[] = {"schedule",
                                         "id",
                                         "name",
                                         "name",
                                         "cron",
                                         "cron",
                                         "time zone",
                                         "time_zone",
                                         "missed",
                                         "missed",
                                         "paused",
                                         "paused",
                                         "next fire at",
                                         "next_fire_at",
                                         "last fire at",
                                         "last_fire_at",
                                         "last request",
                                         "last_request",
                                         "last error",
                                         "last_error",
                                         "fired",
                                         "fired",
                                         "skipped",
                                         "skipped",
                                         "created",
                                         "created_at",
                                         "updated",
                                         "updated_at",
                                         NULL};
    fq_cli_print_fields(stdout, schedule, fields);
}

//  ---------------------------------------------------------------------
//  schedules, schedules list

static int s_schedules(fq_cli_t *cli, const fq_cli_args_t *args)
{
    const char *tenant;
    char path[S_PATH_SIZE];
    if (s_tenant(args, &tenant, path, sizeof path))
        return FQ_CLI_EXIT_USAGE;
    fq_cli_answer_t answer = {0};
    int rc = fq_cli_call(cli, "GET", path, NULL, NULL, &answer);
    const json_t *rows = json_object_get(answer.json, "schedules");
    if (rc == FQ_CLI_EXIT_OK && cli->json)
        fq_cli_print_raw(&answer);
    else if (rc == FQ_CLI_EXIT_OK && json_array_size(rows) == 0)
        fprintf(stderr,
                "tenant %s has no schedule (\"fairq schedules add NAME --tenant %s --cron EXPR "
                "--request FILE\" adds one)\n",
                tenant, tenant);
    else if (rc == FQ_CLI_EXIT_OK) {
        static const char *const headers[] = {"ID",           "NAME",  "CRON",   "TIME ZONE",
                                              "NEXT FIRE AT", "FIRED", "SKIPPED"};
        fq_cli_table_t *table = fq_cli_table_new(headers, "rllllrr");
        size_t i;
        const json_t *schedule;
        json_array_foreach(rows, i, schedule)
        {
            if (!table)
                break;
            static const char *const keys[] = {"id",           "name",  "cron",   "time_zone",
                                               "next_fire_at", "fired", "skipped"};
            for (size_t k = 0; k < sizeof keys / sizeof *keys; k++) {
                const json_t *value = json_object_get(schedule, keys[k]);
                //  A paused schedule has no next firing: it says so
                if (k == 4 && json_is_true(json_object_get(schedule, "paused")))
                    fq_cli_table_add(table, "paused");
                else
                    fq_cli_table_add_json(table, value);
            }
        }
        if (table)
            fq_cli_table_print(table, stdout, SIZE_MAX, "\n");
        else {
            fq_cli_error("out of memory");
            rc = FQ_CLI_EXIT_FAILED;
        }
        fq_cli_table_destroy(&table);
    }
    fq_cli_answer_reset(&answer);
    return rc;
}

#define S_LIST_DESCRIPTION                                                                         \
    "One line per schedule, in name order: its expression and time zone, its next firing\n"        \
    "(\"paused\" when paused), the requests it submitted and the firings it skipped after\n"       \
    "downtime. \"fairq schedules show ID|NAME\" tells the rest. A tenant's token manages\n"        \
    "its own tenant's schedules; an admin token any tenant's."

const fq_cli_command_t fq_cli_cmd_schedules = {.name = "schedules",
                                               .usage = "--tenant NAME",
                                               .summary = "a tenant's recurring sends",
                                               .description = S_LIST_DESCRIPTION,
                                               .options = s_tenant_options,
                                               .min_args = 0,
                                               .max_args = 0,
                                               .run = s_schedules};

const fq_cli_command_t fq_cli_cmd_schedules_list = {
    .name = "schedules list",
    .usage = "--tenant NAME",
    .summary = "a tenant's schedules and their next firings",
    .description = S_LIST_DESCRIPTION,
    .options = s_tenant_options,
    .min_args = 0,
    .max_args = 0,
    .run = s_schedules};

//  ---------------------------------------------------------------------
//  schedules add

//  The request file's JSON object into *request (new reference). Returns
//  0 or FQ_CLI_EXIT_USAGE (printed).
static int s_read_request(const char *path, json_t **request)
{
    fq_buf_t text = {0};
    if (fq_cli_read_file(path, &text)) {
        fq_buf_free(&text);
        return FQ_CLI_EXIT_USAGE;
    }
    const char *name = strcmp(path, "-") == 0 ? FQ_CLI_STDIN_NAME : path;
    json_error_t error;
    *request = json_loadb(text.data ? text.data : "", text.size, JSON_REJECT_DUPLICATES, &error);
    fq_buf_free(&text);
    if (!*request)
        fq_cli_error("%s:%d:%d: %s", name, error.line, error.column, error.text);
    else if (!json_is_object(*request)) {
        fq_cli_error("%s: not a JSON object (the body of POST /v1/requests)", name);
        json_decref(*request);
        *request = NULL;
    }
    return *request ? 0 : FQ_CLI_EXIT_USAGE;
}

static int s_schedules_add(fq_cli_t *cli, const fq_cli_args_t *args)
{
    const char *tenant, *cron = fq_cli_arg(args, "cron"), *zone = fq_cli_arg(args, "time-zone");
    const char *file = fq_cli_arg(args, "request"), *missed = fq_cli_arg(args, "missed");
    char path[S_PATH_SIZE];
    if (s_tenant(args, &tenant, path, sizeof path))
        return FQ_CLI_EXIT_USAGE;
    if (!s_name_valid(args->pos[0])) {
        char shown[FQ_CLI_VALUE_SIZE];
        fq_cli_escape(shown, sizeof shown, args->pos[0]);
        fq_cli_error("invalid schedule name \"%s\" (1..%d of a-z 0-9 _ . - starting with a "
                     "letter)",
                     shown, S_NAME_MAX);
        return FQ_CLI_EXIT_USAGE;
    }
    if (!cron || !file) {
        fq_cli_error("give --cron EXPR (when it fires) and --request FILE (what it submits)");
        return FQ_CLI_EXIT_USAGE;
    }
    if (missed && fq_cli_parse_choice(missed, "--missed", s_missed_choices))
        return FQ_CLI_EXIT_USAGE;
    json_t *request;
    if (s_read_request(file, &request))
        return FQ_CLI_EXIT_USAGE;
    json_t *body =
        json_pack("{s:s, s:s, s:s, s:o, s:b}", "name", args->pos[0], "cron", cron, "time_zone",
                  zone ? zone : "UTC", "request", request, "paused", fq_cli_flag(args, "paused"));
    if (body && missed && json_object_set_new(body, "missed", json_string(missed)) != 0) {
        json_decref(body);
        body = NULL;
    }
    if (!body) {
        fq_cli_error("out of memory");
        return FQ_CLI_EXIT_FAILED;
    }
    fq_cli_answer_t answer = {0};
    int rc = fq_cli_call(cli, "POST", path, body, NULL, &answer);
    if (rc == FQ_CLI_EXIT_OK && cli->json)
        fq_cli_print_raw(&answer);
    else if (rc == FQ_CLI_EXIT_OK) {
        printf("schedule %lld (%s) added for tenant %s\n",
               (long long)json_integer_value(json_object_get(answer.json, "id")), args->pos[0],
               tenant);
        s_print_schedule(answer.json);
    }
    fq_cli_answer_reset(&answer);
    json_decref(body);
    return rc;
}

const fq_cli_command_t fq_cli_cmd_schedules_add = {
    .name = "schedules add",
    .usage = "NAME --tenant NAME --cron EXPR --request FILE [--time-zone ZONE]\n"
             "       [--missed latest|skip] [--paused]",
    .summary = "make a schedule whose firings submit a request",
    .description =
        "EXPR is cron's five fields (\"0 9 * * mon-fri\": 09:00 on weekdays) read in ZONE;\n"
        "FILE the body of a submit (as \"fairq submit\" takes it) without tenant and send_at,\n"
        "checked now as a submit is. A tenant has at most 100 schedules. With --json, the\n"
        "schedule as the API answers it.",
    .options = s_add_options,
    .min_args = 1,
    .max_args = 1,
    .run = s_schedules_add};

//  ---------------------------------------------------------------------
//  schedules show, pause, resume, remove

static int s_schedules_show(fq_cli_t *cli, const fq_cli_args_t *args)
{
    const char *tenant;
    char path[S_PATH_SIZE];
    if (s_schedule(args, &tenant, path, sizeof path))
        return FQ_CLI_EXIT_USAGE;
    fq_cli_answer_t answer = {0};
    int rc = fq_cli_call(cli, "GET", path, NULL, NULL, &answer);
    if (rc == FQ_CLI_EXIT_OK && cli->json)
        fq_cli_print_raw(&answer);
    else if (rc == FQ_CLI_EXIT_OK) {
        s_print_schedule(answer.json);
        printf("request:\n");
        fq_cli_print_json(json_object_get(answer.json, "request"));
    }
    fq_cli_answer_reset(&answer);
    return rc;
}

const fq_cli_command_t fq_cli_cmd_schedules_show = {
    .name = "schedules show",
    .usage = "ID|NAME --tenant NAME",
    .summary = "one schedule: its next and last firing, its last request, its request",
    .description = "\"last error\" says why the last firing submitted nothing, if it did not.",
    .options = s_tenant_options,
    .min_args = 1,
    .max_args = 1,
    .run = s_schedules_show};

//  PATCHes paused to the schedule, and says what became of it.
static int s_set_paused(fq_cli_t *cli, const fq_cli_args_t *args, bool paused)
{
    const char *tenant;
    char path[S_PATH_SIZE];
    if (s_schedule(args, &tenant, path, sizeof path))
        return FQ_CLI_EXIT_USAGE;
    json_t *body = json_pack("{s:b}", "paused", paused);
    if (!body) {
        fq_cli_error("out of memory");
        return FQ_CLI_EXIT_FAILED;
    }
    fq_cli_answer_t answer = {0};
    int rc = fq_cli_call(cli, "PATCH", path, body, NULL, &answer);
    if (rc == FQ_CLI_EXIT_OK && cli->json)
        fq_cli_print_raw(&answer);
    else if (rc == FQ_CLI_EXIT_OK) {
        char next[FQ_CLI_VALUE_SIZE];
        fq_cli_format_value(next, sizeof next, json_object_get(answer.json, "next_fire_at"));
        if (paused)
            printf("schedule %s paused\n", args->pos[0]);
        else
            printf("schedule %s resumed: next firing at %s\n", args->pos[0], next);
    }
    fq_cli_answer_reset(&answer);
    json_decref(body);
    return rc;
}

static int s_schedules_pause(fq_cli_t *cli, const fq_cli_args_t *args)
{
    return s_set_paused(cli, args, true);
}

static int s_schedules_resume(fq_cli_t *cli, const fq_cli_args_t *args)
{
    return s_set_paused(cli, args, false);
}

const fq_cli_command_t fq_cli_cmd_schedules_pause = {
    .name = "schedules pause",
    .usage = "ID|NAME --tenant NAME",
    .summary = "stop a schedule firing until resumed",
    .description = "Requests it submitted already are not touched (\"fairq pause\" holds one).",
    .options = s_tenant_options,
    .min_args = 1,
    .max_args = 1,
    .run = s_schedules_pause};

const fq_cli_command_t fq_cli_cmd_schedules_resume = {
    .name = "schedules resume",
    .usage = "ID|NAME --tenant NAME",
    .summary = "let a paused schedule fire again, from now on",
    .description = "The firings it would have made while paused are not made.",
    .options = s_tenant_options,
    .min_args = 1,
    .max_args = 1,
    .run = s_schedules_resume};

static int s_schedules_remove(fq_cli_t *cli, const fq_cli_args_t *args)
{
    const char *tenant;
    char path[S_PATH_SIZE];
    if (s_schedule(args, &tenant, path, sizeof path))
        return FQ_CLI_EXIT_USAGE;
    fq_cli_answer_t answer = {0};
    int rc = fq_cli_call(cli, "DELETE", path, NULL, NULL, &answer);
    if (rc == FQ_CLI_EXIT_OK && !cli->json)
        printf("schedule %s removed\n", args->pos[0]);
    fq_cli_answer_reset(&answer);
    return rc;
}

const fq_cli_command_t fq_cli_cmd_schedules_remove = {
    .name = "schedules remove",
    .usage = "ID|NAME --tenant NAME",
    .summary = "remove a schedule; the requests it submitted stay",
    .description = "Exit 3 when the tenant has no such schedule. With --json nothing is printed:\n"
                   "the exit code says it.",
    .options = s_tenant_options,
    .min_args = 1,
    .max_args = 1,
    .run = s_schedules_remove};
