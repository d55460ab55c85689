/*  fq_cli_commands_holds.c — operators' holds (holds, hold tenant |
    destination | all, release tenant | destination | all): stop a tenant's,
    a destination's or all sending by hand, and let it go again
    (api/API.md, "Holds"; docs/operations.md, "Holds").

    Holding what is held already is no error (the hold that stands is
    shown); releasing what is not held is (exit 3, the API's 404), so a
    script sees that its release did nothing. */
#include "fq_cli_args.h"
#include "fq_cli_commands.h"
#include "fq_cli_table.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define S_HTTP_CREATED 201

//  Room for "user@host", the author a hold is written with by default.
#define S_BY_SIZE 101

//  The scope words, as the API and the commands write them.
#define S_TENANT      "tenant"
#define S_DESTINATION "destination"
#define S_ALL         "all"

//  A hold for people, one line: "tenant acme (by ops at ...): reason".
static void s_print_hold(const json_t *hold, const char *verb)
{
    const char *scope = json_string_value(json_object_get(hold, "scope"));
    const char *name = json_string_value(json_object_get(hold, "name"));
    const char *reason = json_string_value(json_object_get(hold, "reason"));
    const char *by = json_string_value(json_object_get(hold, "created_by"));
    const char *at = json_string_value(json_object_get(hold, "created_at"));
    printf("%s%s%s %s (by %s at %s)%s%s\n", scope ? scope : "?", name ? " " : "", name ? name : "",
           verb, by ? by : "?", at ? at : "?", reason && *reason ? ": " : "", reason ? reason : "");
}

//  ---------------------------------------------------------------------
//  holds

static int s_holds(fq_cli_t *cli, const fq_cli_args_t *args)
{
    (void)args;
    fq_cli_answer_t answer = {0};
    int rc = fq_cli_call(cli, "GET", "/v1/holds", NULL, NULL, &answer);
    if (rc == FQ_CLI_EXIT_OK && cli->json)
        fq_cli_print_raw(&answer);
    else if (rc == FQ_CLI_EXIT_OK) {
        static const char *const headers[] = {"SCOPE", "NAME", "BY", "SINCE", "REASON"};
        fq_cli_table_t *table = fq_cli_table_new(headers, "lllll");
        size_t i;
        json_t *hold;
        json_array_foreach(json_object_get(answer.json, "holds"), i, hold)
        {
            if (!table)
                break;
            const json_t *name = json_object_get(hold, "name");
            fq_cli_table_add_json(table, json_object_get(hold, "scope"));
            fq_cli_table_add(table, json_is_string(name) ? json_string_value(name) : "-");
            fq_cli_table_add_json(table, json_object_get(hold, "created_by"));
            fq_cli_table_add_json(table, json_object_get(hold, "created_at"));
            const char *reason = json_string_value(json_object_get(hold, "reason"));
            fq_cli_table_add(table, reason && *reason ? reason : "-");
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

const fq_cli_command_t fq_cli_cmd_holds = {
    .name = "holds",
    .usage = "",
    .summary = "the holds: tenants, destinations or all held by an operator (admin)",
    .description = "Held work stays pending and costs no attempt; it goes out when released.\n"
                   "Messages already in a sender's hands when a hold came finish as they would.",
    .min_args = 0,
    .max_args = 0,
    .run = s_holds};

//  ---------------------------------------------------------------------
//  hold

static const fq_cli_option_t s_hold_options[] = {
    {"reason", "TEXT", "why, for the other operators (at most 500 bytes)"},
    {"by", "WHO", "who holds (default: user@host of this shell)"},
    {NULL, NULL, NULL}};

//  The default author: $USER@host, or "fairq".
static void s_default_by(char by[S_BY_SIZE])
{
    char host[S_BY_SIZE] = "";
    const char *user = getenv("USER");
    if (gethostname(host, sizeof host) != 0)
        host[0] = 0;
    host[sizeof host - 1] = 0;
    if (user && *user && *host)
        snprintf(by, S_BY_SIZE, "%.40s@%.59s", user, host);
    else
        snprintf(by, S_BY_SIZE, "%.100s", user && *user ? user : FQ_CLI_PROGRAM);
}

static int s_hold(fq_cli_t *cli, const fq_cli_args_t *args, const char *scope)
{
    const char *name = strcmp(scope, S_ALL) == 0 ? NULL : args->pos[0];
    if (name && fq_cli_parse_tenant(name, strcmp(scope, S_TENANT) == 0 ? "tenant name"
                                                                       : "destination name"))
        return FQ_CLI_EXIT_USAGE;
    char by[S_BY_SIZE];
    s_default_by(by);
    const char *reason = fq_cli_arg(args, "reason"), *given_by = fq_cli_arg(args, "by");
    json_t *body = json_pack("{s:s, s:s}", "scope", scope, "by", given_by ? given_by : by);
    if (body && name)
        json_object_set_new(body, "name", json_string(name));
    if (body && reason)
        json_object_set_new(body, "reason", json_string(reason));
    if (!body) {
        fq_cli_error("out of memory");
        return FQ_CLI_EXIT_FAILED;
    }
    fq_cli_answer_t answer = {0};
    int rc = fq_cli_call(cli, "POST", "/v1/holds", body, NULL, &answer);
    if (rc == FQ_CLI_EXIT_OK && cli->json)
        fq_cli_print_raw(&answer);
    else if (rc == FQ_CLI_EXIT_OK)
        s_print_hold(answer.json, answer.status == S_HTTP_CREATED ? "held" : "was held already");
    fq_cli_answer_reset(&answer);
    json_decref(body);
    return rc;
}

static int s_hold_tenant(fq_cli_t *cli, const fq_cli_args_t *args)
{
    return s_hold(cli, args, S_TENANT);
}

static int s_hold_destination(fq_cli_t *cli, const fq_cli_args_t *args)
{
    return s_hold(cli, args, S_DESTINATION);
}

static int s_hold_all(fq_cli_t *cli, const fq_cli_args_t *args)
{
    return s_hold(cli, args, S_ALL);
}

const fq_cli_command_t fq_cli_cmd_hold_tenant = {
    .name = "hold tenant",
    .usage = "NAME [--reason TEXT] [--by WHO]",
    .summary = "hold a tenant's messages until released (admin)",
    .description =
        "Its messages stay pending, take no sender and cost no attempt; its requests are\n"
        "still taken. Holding it again changes nothing (the first reason stays).",
    .options = s_hold_options,
    .min_args = 1,
    .max_args = 1,
    .run = s_hold_tenant};

const fq_cli_command_t fq_cli_cmd_hold_destination = {
    .name = "hold destination",
    .usage = "NAME [--reason TEXT] [--by WHO]",
    .summary = "hold every message to a destination until released (admin)",
    .description = "NAME is a destination as \"" FQ_CLI_PROGRAM
                   " destinations\" lists it (\"default\": every domain\n"
                   "no other destination names).",
    .options = s_hold_options,
    .min_args = 1,
    .max_args = 1,
    .run = s_hold_destination};

const fq_cli_command_t fq_cli_cmd_hold_all = {
    .name = "hold all",
    .usage = "[--reason TEXT] [--by WHO]",
    .summary = "hold every message until released: fairq sends nothing (admin)",
    .options = s_hold_options,
    .min_args = 0,
    .max_args = 0,
    .run = s_hold_all};

//  ---------------------------------------------------------------------
//  release

static int s_release(fq_cli_t *cli, const fq_cli_args_t *args, const char *scope)
{
    const char *name = strcmp(scope, S_ALL) == 0 ? NULL : args->pos[0];
    if (name && fq_cli_parse_tenant(name, strcmp(scope, S_TENANT) == 0 ? "tenant name"
                                                                       : "destination name"))
        return FQ_CLI_EXIT_USAGE;
    char *escaped = name ? fq_cli_url_escape(name) : NULL;
    char *path = NULL;
    if ((name && !escaped) ||
        asprintf(&path, "/v1/holds/%s%s%s", scope, name ? "/" : "", name ? escaped : "") < 0)
        path = NULL;
    free(escaped);
    if (!path) {
        fq_cli_error("out of memory");
        return FQ_CLI_EXIT_FAILED;
    }
    fq_cli_answer_t answer = {0};
    int rc = fq_cli_call(cli, "DELETE", path, NULL, NULL, &answer);
    if (rc == FQ_CLI_EXIT_OK && cli->json)
        fq_cli_print_raw(&answer);
    else if (rc == FQ_CLI_EXIT_OK)
        s_print_hold(answer.json, "released; held");
    fq_cli_answer_reset(&answer);
    free(path);
    return rc;
}

static int s_release_tenant(fq_cli_t *cli, const fq_cli_args_t *args)
{
    return s_release(cli, args, S_TENANT);
}

static int s_release_destination(fq_cli_t *cli, const fq_cli_args_t *args)
{
    return s_release(cli, args, S_DESTINATION);
}

static int s_release_all(fq_cli_t *cli, const fq_cli_args_t *args)
{
    return s_release(cli, args, S_ALL);
}

const fq_cli_command_t fq_cli_cmd_release_tenant = {
    .name = "release tenant",
    .usage = "NAME",
    .summary = "release a tenant's hold: its messages go out again at once (admin)",
    .description = "Not held: exit 3.",
    .min_args = 1,
    .max_args = 1,
    .run = s_release_tenant};

const fq_cli_command_t fq_cli_cmd_release_destination = {.name = "release destination",
                                                         .usage = "NAME",
                                                         .summary =
                                                             "release a destination's hold (admin)",
                                                         .description = "Not held: exit 3.",
                                                         .min_args = 1,
                                                         .max_args = 1,
                                                         .run = s_release_destination};

const fq_cli_command_t fq_cli_cmd_release_all = {
    .name = "release all",
    .usage = "",
    .summary = "release the hold of all; tenants' and destinations' own holds stay (admin)",
    .description = "Not held: exit 3.",
    .min_args = 0,
    .max_args = 0,
    .run = s_release_all};
