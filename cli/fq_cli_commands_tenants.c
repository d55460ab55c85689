/*  fq_cli_commands_tenants.c — tenants (list, show, set, token) and health. */
#include "fq_cli_args.h"
#include "fq_cli_commands.h"
#include "fq_cli_pages.h"
#include "fq_cli_table.h"
#include "fq_limits.h"
#include "fq_rate.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  The schema's limits (sql/migrations/0001_schema.sql): weight 1..1000,
//  max_inflight and submit_rate positive PostgreSQL integers
#define S_WEIGHT_MAX  1000
#define S_INTEGER_MAX 2147483647

//  The schema's limit of a daily quota (0017_tenant_send_budgets.sql); a
//  send rate's count is fq_rate.h's, the same as the schema's

//  The word of the options for "no limit".
#define S_NONE "none"

//  Room for what fq_rate_parse says of a bad rate.
#define S_PROBLEM_SIZE 256

#define S_HTTP_CREATED 201

//  Room for "/tokens/" and a token id (a 63-bit integer in decimal)
#define S_TOKEN_SUFFIX_SIZE 32

//  The path of a tenant and suffix, its name escaped; NULL when out of
//  memory (printed). Caller frees.
static char *s_tenant_path(const char *name, const char *suffix)
{
    char *escaped = fq_cli_url_escape(name);
    char *path = NULL;
    if (!escaped || asprintf(&path, "/v1/tenants/%s%s", escaped, suffix ? suffix : "") < 0)
        path = NULL;
    free(escaped);
    if (!path)
        fq_cli_error("out of memory");
    return path;
}

static void s_print_tenant(const json_t *tenant)
{
    static const char *const fields[] = {
        "tenant",        "name",        "weight",      "weight",        "max in flight",
        "max_inflight",  "submit rate", "submit_rate", "max send rate", "max_send_rate",
        "daily quota",   "daily_quota", "sent today",  "sent_today",    "open requests",
        "open_requests", "depth",       "depth",       "failed",        "failed",
        "unsplit",       "unsplit",     "in flight",   "inflight",      "send rate/s (1m)",
        "send_rate",     "oldest",      "oldest",      "oldest due",    "oldest_due",
        "held",          "held",        NULL};
    //  A copy with the ages written for people under the keys "oldest"
    //  (its oldest open request) and "oldest_due" (its oldest work due now)
    json_t *shown = json_copy((json_t *)tenant);
    char age[FQ_CLI_VALUE_SIZE];
    fq_cli_format_age_value(age, sizeof age, json_object_get(tenant, "oldest_pending_age_s"));
    json_object_set_new(shown, "oldest", json_string(age));
    fq_cli_format_age_value(age, sizeof age, json_object_get(tenant, "oldest_due_age_s"));
    json_object_set_new(shown, "oldest_due", json_string(age));
    if (!json_object_get(tenant, "held"))
        json_object_set_new(shown, "held", json_string("-"));
    fq_cli_print_fields(stdout, shown ? shown : tenant, fields);
    json_decref(shown);
}

//  ---------------------------------------------------------------------
//  tenants

static int s_tenants(fq_cli_t *cli, const fq_cli_args_t *args)
{
    (void)args;
    fq_cli_answer_t answer = {0};
    int rc = fq_cli_call(cli, "GET", "/v1/tenants", NULL, NULL, &answer);
    if (rc == FQ_CLI_EXIT_OK && cli->json)
        fq_cli_print_raw(&answer);
    else if (rc == FQ_CLI_EXIT_OK) {
        static const char *const headers[] = {
            "NAME",        "WEIGHT",      "MAX INFLIGHT", "SUBMIT RATE", "MAX SEND RATE",
            "DAILY QUOTA", "SENT TODAY",  "OPEN",         "DEPTH",       "FAILED",
            "IN FLIGHT",   "RATE/S (1m)", "OLDEST DUE",   "HELD"};
        static const char *const keys[] = {"name",        "weight",        "max_inflight",
                                           "submit_rate", "max_send_rate", "daily_quota",
                                           "sent_today",  "open_requests", "depth",
                                           "failed",      "inflight",      "send_rate"};
        fq_cli_table_t *table = fq_cli_table_new(headers, "lrrrrrrrrrrrrl");
        size_t i;
        json_t *tenant;
        json_array_foreach(json_object_get(answer.json, "tenants"), i, tenant)
        {
            for (size_t k = 0; table && k < sizeof keys / sizeof *keys; k++)
                fq_cli_table_add_json(table, json_object_get(tenant, keys[k]));
            //  Its oldest work due now (a fairqd before 0024: its oldest
            //  open request)
            const json_t *due = json_object_get(tenant, "oldest_due_age_s");
            char age[FQ_CLI_VALUE_SIZE];
            fq_cli_format_age_value(age, sizeof age,
                                    due ? due : json_object_get(tenant, "oldest_pending_age_s"));
            if (table) {
                fq_cli_table_add(table, age);
                fq_cli_table_add(table,
                                 json_is_true(json_object_get(tenant, "held")) ? "yes" : "-");
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

const fq_cli_command_t fq_cli_cmd_tenants = {
    .name = "tenants",
    .usage = "",
    .summary = "tenants with their weight, limits, depth, in flight, rate and oldest age",
    .description =
        "A tenant token sees only its own tenant. RATE/S (1m) is messages acked a second,\n"
        "fairqd's average over the last minute (\"fairq top\" shows the rate now); MAX SEND\n"
        "RATE and DAILY QUOTA are its send budget, SENT TODAY what the quota counted of\n"
        "today (UTC) as the leading fairqd last recorded it. OLDEST DUE is the age of its\n"
        "oldest message due now and not sent (paused, held, scheduled and backing-off work\n"
        "left out); HELD says an operator holds it (" FQ_CLI_PROGRAM " holds).",
    .min_args = 0,
    .max_args = 0,
    .run = s_tenants};

//  ---------------------------------------------------------------------
//  tenants show

static int s_tenants_show(fq_cli_t *cli, const fq_cli_args_t *args)
{
    if (fq_cli_parse_tenant(args->pos[0], "tenant name"))
        return FQ_CLI_EXIT_USAGE;
    char *path = s_tenant_path(args->pos[0], NULL);
    if (!path)
        return FQ_CLI_EXIT_FAILED;
    fq_cli_answer_t answer = {0};
    int rc = fq_cli_call(cli, "GET", path, NULL, NULL, &answer);
    if (rc == FQ_CLI_EXIT_OK) {
        if (cli->json)
            fq_cli_print_raw(&answer);
        else
            s_print_tenant(answer.json);
    }
    fq_cli_answer_reset(&answer);
    free(path);
    return rc;
}

const fq_cli_command_t fq_cli_cmd_tenants_show = {.name = "tenants show",
                                                  .usage = "NAME",
                                                  .summary = "one tenant",
                                                  .min_args = 1,
                                                  .max_args = 1,
                                                  .run = s_tenants_show};

//  ---------------------------------------------------------------------
//  tenants set

static const fq_cli_option_t s_set_options[] = {
    {"weight", "N", "share of dispatch while backlogged (1..1000; new: fairqd's tenant_weight, 1)"},
    {"max-inflight", "N",
     "most messages in senders' hands at once (1..2147483647; new: tenant_max_inflight, 1000)"},
    {"submit-rate", "N|none",
     "most submits per minute, or none for no limit (new: tenant_submit_rate, none)"},
    {"max-send-rate", "RATE|none",
     "most of its messages handed to senders a period: 100/s, 5/min, 10000/h, 1000/d; none "
     "for no limit (new: none)"},
    {"daily-quota", "N|none",
     "most of its messages handed to senders a UTC day (1..1000000000000), or none (new: "
     "none)"},
    {NULL, NULL, NULL}};

static int s_tenants_set(fq_cli_t *cli, const fq_cli_args_t *args)
{
    const char *weight = fq_cli_arg(args, "weight"), *inflight = fq_cli_arg(args, "max-inflight");
    const char *rate = fq_cli_arg(args, "submit-rate");
    const char *send_rate = fq_cli_arg(args, "max-send-rate");
    const char *quota = fq_cli_arg(args, "daily-quota");
    int64_t w = 0, m = 0, r = 0, q = 0;
    bool no_rate = rate && strcmp(rate, S_NONE) == 0;
    bool no_send_rate = send_rate && strcmp(send_rate, S_NONE) == 0;
    bool no_quota = quota && strcmp(quota, S_NONE) == 0;
    if (fq_cli_parse_tenant(args->pos[0], "tenant name") ||
        (weight && fq_cli_parse_int(weight, "--weight", 1, S_WEIGHT_MAX, &w)) ||
        (inflight && fq_cli_parse_int(inflight, "--max-inflight", 1, S_INTEGER_MAX, &m)))
        return FQ_CLI_EXIT_USAGE;
    if (rate && !no_rate && fq_cli_parse_int(rate, "--submit-rate (or none)", 1, S_INTEGER_MAX, &r))
        return FQ_CLI_EXIT_USAGE;
    //  The rate read as fairqd reads it, so that a typo is a usage error
    //  before any call
    fq_rate_t parsed;
    char problem[S_PROBLEM_SIZE];
    if (send_rate && !no_send_rate &&
        fq_rate_parse(send_rate, &parsed, problem, sizeof problem) != 0) {
        fq_cli_error("--max-send-rate: %s (or none)", problem);
        return FQ_CLI_EXIT_USAGE;
    }
    if (quota && !no_quota &&
        fq_cli_parse_int(quota, "--daily-quota (or none)", 1, FQ_TENANT_DAILY_QUOTA_MAX, &q))
        return FQ_CLI_EXIT_USAGE;
    json_t *body = json_object();
    if (weight)
        json_object_set_new(body, "weight", json_integer(w));
    if (inflight)
        json_object_set_new(body, "max_inflight", json_integer(m));
    if (rate)
        json_object_set_new(body, "submit_rate", no_rate ? json_null() : json_integer(r));
    if (send_rate)
        json_object_set_new(body, "max_send_rate",
                            no_send_rate ? json_null() : json_string(send_rate));
    if (quota)
        json_object_set_new(body, "daily_quota", no_quota ? json_null() : json_integer(q));
    char *path = s_tenant_path(args->pos[0], NULL);
    int rc = FQ_CLI_EXIT_FAILED;
    fq_cli_answer_t answer = {0};
    if (path && body)
        rc = fq_cli_call(cli, "PUT", path, body, NULL, &answer);
    if (rc == FQ_CLI_EXIT_OK) {
        if (cli->json)
            fq_cli_print_raw(&answer);
        else {
            printf("tenant %s %s\n", args->pos[0],
                   answer.status == S_HTTP_CREATED ? "created" : "updated");
            s_print_tenant(answer.json);
        }
    }
    fq_cli_answer_reset(&answer);
    json_decref(body);
    free(path);
    return rc;
}

const fq_cli_command_t fq_cli_cmd_tenants_set = {
    .name = "tenants set",
    .usage = "NAME [--weight N] [--max-inflight N] [--submit-rate N|none] "
             "[--max-send-rate RATE|none] [--daily-quota N|none]",
    .summary = "create a tenant, or change its weight and limits (admin)",
    .description = "Options left out keep their value (a new tenant gets the defaults).",
    .options = s_set_options,
    .min_args = 1,
    .max_args = 1,
    .run = s_tenants_set};

//  ---------------------------------------------------------------------
//  tenants token

static int s_tenants_token(fq_cli_t *cli, const fq_cli_args_t *args)
{
    if (fq_cli_parse_tenant(args->pos[0], "tenant name"))
        return FQ_CLI_EXIT_USAGE;
    char *path = s_tenant_path(args->pos[0], "/tokens");
    if (!path)
        return FQ_CLI_EXIT_FAILED;
    fq_cli_answer_t answer = {0};
    int rc = fq_cli_call(cli, "POST", path, NULL, NULL, &answer);
    const char *token = json_string_value(json_object_get(answer.json, "token"));
    if (rc == FQ_CLI_EXIT_OK && !token) {
        fq_cli_error("the server answered POST %s without a token", path);
        rc = FQ_CLI_EXIT_SERVER;
    }
    if (rc == FQ_CLI_EXIT_OK) {
        if (cli->json)
            fq_cli_print_raw(&answer);
        else
            //  The token alone, so that TOKEN=$(fairq tenants token acme) works
            puts(token);
    }
    fq_cli_answer_reset(&answer);
    free(path);
    return rc;
}

const fq_cli_command_t fq_cli_cmd_tenants_token = {
    .name = "tenants token",
    .usage = "NAME",
    .summary = "issue a new API token for a tenant (admin); shown once",
    .description = "Prints the token alone on a line. Its tenant's other tokens stay valid\n"
                   "(\"fairq tenants tokens NAME\" lists them, \"fairq tenants revoke\" ends one).",
    .min_args = 1,
    .max_args = 1,
    .run = s_tenants_token};

//  ---------------------------------------------------------------------
//  tenants tokens, tenants revoke

static int s_tenants_tokens(fq_cli_t *cli, const fq_cli_args_t *args)
{
    if (fq_cli_parse_tenant(args->pos[0], "tenant name"))
        return FQ_CLI_EXIT_USAGE;
    char *path = s_tenant_path(args->pos[0], "/tokens");
    if (!path)
        return FQ_CLI_EXIT_FAILED;
    json_t *list = NULL;
    int rc = fq_cli_pages(cli, path, NULL, "tokens", "next_after", "after", false, &list);
    free(path);
    if (rc != FQ_CLI_EXIT_OK)
        return rc;
    static const char *const headers[] = {"ID", "CREATED"};
    static const char *const keys[] = {"id", "created_at"};
    static const fq_cli_page_view_t view = {.array_key = "tokens",
                                            .headers = headers,
                                            .keys = keys,
                                            .columns = sizeof keys / sizeof *keys,
                                            .align = "rl",
                                            .next_key = "next_after",
                                            .more = "(more: %lld)"};
    return fq_cli_pages_print(cli, list, &view);
}

const fq_cli_command_t fq_cli_cmd_tenants_tokens = {
    .name = "tenants tokens",
    .usage = "NAME",
    .summary = "a tenant's API tokens: their ids and ages, never the tokens (admin)",
    .min_args = 1,
    .max_args = 1,
    .run = s_tenants_tokens};

static int s_tenants_revoke(fq_cli_t *cli, const fq_cli_args_t *args)
{
    int64_t id;
    if (fq_cli_parse_tenant(args->pos[0], "tenant name") ||
        fq_cli_parse_id(args->pos[1], "token id", &id))
        return FQ_CLI_EXIT_USAGE;
    char suffix[S_TOKEN_SUFFIX_SIZE];
    snprintf(suffix, sizeof suffix, "/tokens/%lld", (long long)id);
    char *path = s_tenant_path(args->pos[0], suffix);
    if (!path)
        return FQ_CLI_EXIT_FAILED;
    fq_cli_answer_t answer = {0};
    int rc = fq_cli_call(cli, "DELETE", path, NULL, NULL, &answer);
    if (rc == FQ_CLI_EXIT_OK) {
        if (cli->json)
            fq_cli_print_raw(&answer);
        else
            printf("token %lld of tenant %s revoked\n", (long long)id, args->pos[0]);
    }
    fq_cli_answer_reset(&answer);
    free(path);
    return rc;
}

const fq_cli_command_t fq_cli_cmd_tenants_revoke = {
    .name = "tenants revoke",
    .usage = "NAME TOKEN_ID",
    .summary = "revoke one of a tenant's API tokens by its id (admin)",
    .description = "Calls with the token answer 401 from then on. \"fairq tenants tokens NAME\" "
                   "lists the ids.",
    .min_args = 2,
    .max_args = 2,
    .run = s_tenants_revoke};

//  ---------------------------------------------------------------------
//  health

static int s_health(fq_cli_t *cli, const fq_cli_args_t *args)
{
    (void)args;
    fq_cli_answer_t answer = {0};
    //  An unhealthy answer (503) is still shown whole with --json
    cli->quiet = true;
    int rc = fq_cli_call(cli, "GET", "/healthz", NULL, NULL, &answer);
    cli->quiet = false;
    if (cli->json && answer.json)
        fq_cli_print_raw(&answer);
    if (rc != FQ_CLI_EXIT_OK)
        fq_cli_report(cli, &answer);
    else if (!cli->json) {
        char status[FQ_CLI_VALUE_SIZE], database[FQ_CLI_VALUE_SIZE];
        fq_cli_format_value(status, sizeof status, json_object_get(answer.json, "status"));
        fq_cli_format_value(database, sizeof database, json_object_get(answer.json, "database"));
        printf("%s (database %s)\n", status, database);
    }
    fq_cli_answer_reset(&answer);
    return rc;
}

const fq_cli_command_t fq_cli_cmd_health = {
    .name = "health",
    .usage = "",
    .summary = "is fairqd up, and can it reach its database? (no token needed)",
    .description = "Exit 0 when healthy, 5 when fairqd cannot be reached or its database "
                   "cannot.",
    .min_args = 0,
    .max_args = 0,
    .run = s_health};
