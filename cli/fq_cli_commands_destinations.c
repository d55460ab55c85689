/*  fq_cli_commands_destinations.c — destinations (list, show, set,
    delete): the receiving side's budgets (api/API.md, "Destinations").

    The API's PUT replaces a destination whole; "destinations set" reads
    it first and changes only what its options name, so that a script
    setting a rate does not drop the domains. Between the read and the
    write another client may change it: the last write wins, as with any
    PUT.
*/
#include "fq_cli_args.h"
#include "fq_cli_commands.h"
#include "fq_cli_table.h"
#include "fq_limits.h"
#include "fq_rate.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_HTTP_CREATED   201
#define S_HTTP_NOT_FOUND 404

//  The word of the options for "no limit", and for the rate's own burst.
#define S_NONE    "none"
#define S_DEFAULT "default"

//  What separates the domains of --domains.
#define S_DOMAIN_SEPARATORS ","

//  Room for what fq_rate_parse says of a bad rate.
#define S_PROBLEM_SIZE 256

//  The path of a destination, its name escaped; NULL when out of memory
//  (printed). Caller frees.
static char *s_destination_path(const char *name)
{
    char *escaped = fq_cli_url_escape(name);
    char *path = NULL;
    if (!escaped || asprintf(&path, "/v1/destinations/%s", escaped) < 0)
        path = NULL;
    free(escaped);
    if (!path)
        fq_cli_error("out of memory");
    return path;
}

//  A limit for people: the number, or "none" for null.
static void s_format_limit(char *text, size_t size, const json_t *value)
{
    if (json_is_null(value))
        snprintf(text, size, S_NONE);
    else
        fq_cli_format_value(text, size, value);
}

//  The burst for people: the one set, or the rate's default ("100
//  (default)"), "-" without a rate.
static void s_format_burst(char *text, size_t size, const json_t *destination, bool long_form)
{
    const json_t *burst = json_object_get(destination, "burst");
    const char *rate_text = json_string_value(json_object_get(destination, "rate"));
    fq_rate_t rate;
    if (json_is_integer(burst))
        fq_cli_format_value(text, size, burst);
    else if (rate_text && fq_rate_parse(rate_text, &rate, NULL, 0) == 0)
        snprintf(text, size, long_form ? "%lld (the rate's default)" : "%lld (default)",
                 (long long)fq_rate_default_burst(&rate));
    else
        snprintf(text, size, "-");
}

//  The domains, one text: "a.com,b.com" ("-" for none).
static char *s_join_domains(const json_t *destination)
{
    fq_buf_t text = {0};
    size_t i;
    const json_t *domain;
    int rc = 0;
    json_array_foreach(json_object_get(destination, "domains"), i, domain)
    {
        if (i)
            rc |= fq_buf_add_char(&text, ',');
        rc |= fq_buf_add_str(&text, json_string_value(domain) ? json_string_value(domain) : "");
    }
    if (!text.size)
        rc |= fq_buf_add_str(&text, "-");
    if (rc) {
        fq_buf_free(&text);
        return NULL;
    }
    return fq_buf_take(&text);
}

//  The figures the scheduler reports, for people: "50.0/s", or "none".
static void s_format_rate_now(char *text, size_t size, const json_t *live)
{
    const json_t *rate = json_object_get(live, "effective_rate");
    if (json_is_number(rate))
        snprintf(text, size, "%.1f/s", json_number_value(rate));
    else
        snprintf(text, size, S_NONE);
}

static void s_print_destination(const json_t *destination)
{
    static const char *const fields[] = {
        "destination",   "name",         "rate",     "rate",     "burst",     "burst",
        "max in flight", "max_inflight", "domains",  "domains",  "state",     "state",
        "rate now",      "rate_now",     "ready",    "ready",    "in flight", "inflight",
        "sent",          "sent",         "deferred", "deferred", "throttled", "throttled",
        "updated",       "updated_at",   NULL};
    //  A copy with every value written for people, the live ones at the top
    json_t *shown = json_copy((json_t *)destination);
    const json_t *live = json_object_get(destination, "live");
    char text[FQ_CLI_VALUE_SIZE];
    char *domains = s_join_domains(destination);
    if (!shown || !domains) {
        fq_cli_error("out of memory");
        json_decref(shown);
        free(domains);
        return;
    }
    json_object_update(shown, json_object_get(destination, "live"));
    s_format_limit(text, sizeof text, json_object_get(destination, "rate"));
    json_object_set_new(shown, "rate", json_string(text));
    s_format_burst(text, sizeof text, destination, true);
    json_object_set_new(shown, "burst", json_string(text));
    s_format_limit(text, sizeof text, json_object_get(destination, "max_inflight"));
    json_object_set_new(shown, "max_inflight", json_string(text));
    json_object_set_new(shown, "domains", json_string(domains));
    s_format_rate_now(text, sizeof text, live);
    json_object_set_new(shown, "rate_now", json_string(text));
    fq_cli_print_fields(stdout, shown, fields);
    json_decref(shown);
    free(domains);
}

//  ---------------------------------------------------------------------
//  destinations

//  One row of the table of destinations.
static void s_add_row(fq_cli_table_t *table, const json_t *destination)
{
    const json_t *live = json_object_get(destination, "live");
    char text[FQ_CLI_VALUE_SIZE];
    fq_cli_table_add_json(table, json_object_get(destination, "name"));
    s_format_limit(text, sizeof text, json_object_get(destination, "rate"));
    fq_cli_table_add(table, text);
    s_format_burst(text, sizeof text, destination, false);
    fq_cli_table_add(table, text);
    s_format_limit(text, sizeof text, json_object_get(destination, "max_inflight"));
    fq_cli_table_add(table, text);
    fq_cli_table_add_json(table, json_object_get(live, "state"));
    s_format_rate_now(text, sizeof text, live);
    fq_cli_table_add(table, text);
    static const char *const counts[] = {"ready", "inflight", "sent", "deferred", "throttled"};
    for (size_t i = 0; i < sizeof counts / sizeof *counts; i++)
        fq_cli_table_add_json(table, json_object_get(live, counts[i]));
    char *domains = s_join_domains(destination);
    fq_cli_table_add(table, domains ? domains : "-");
    free(domains);
}

static int s_destinations(fq_cli_t *cli, const fq_cli_args_t *args)
{
    (void)args;
    fq_cli_answer_t answer = {0};
    int rc = fq_cli_call(cli, "GET", "/v1/destinations", NULL, NULL, &answer);
    if (rc == FQ_CLI_EXIT_OK && cli->json)
        fq_cli_print_raw(&answer);
    else if (rc == FQ_CLI_EXIT_OK) {
        static const char *const headers[] = {"NAME",  "RATE",     "BURST",     "MAX INFLIGHT",
                                              "STATE", "RATE NOW", "READY",     "IN FLIGHT",
                                              "SENT",  "DEFERRED", "THROTTLED", "DOMAINS"};
        fq_cli_table_t *table = fq_cli_table_new(headers, "lrrrlrrrrrrl");
        size_t i;
        json_t *destination;
        json_array_foreach(json_object_get(answer.json, "destinations"), i, destination)
        {
            if (table)
                s_add_row(table, destination);
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

const fq_cli_command_t fq_cli_cmd_destinations = {
    .name = "destinations",
    .usage = "",
    .summary = "destinations with their rate, burst, limit, domains and how they fare (admin)",
    .description =
        "A destination is a recipient domain (or an http host), or a named group of them,\n"
        "with a budget: a rate, a burst and a most in flight. \"default\" is every domain no\n"
        "other destination names, sharing its one budget. STATE is open, throttled (slowed\n"
        "after throttling replies) or suspended; RATE NOW the rate the scheduler shapes it\n"
        "to now; SENT, DEFERRED and THROTTLED count since fairqd started (0 and open on a\n"
        "fairqd that does not lead).",
    .min_args = 0,
    .max_args = 0,
    .run = s_destinations};

//  ---------------------------------------------------------------------
//  destinations show

//  GET the destination of path into answer; with missing_ok a 404 is not
//  an error (nothing printed, answer->status 404). Returns the exit code.
static int s_get(fq_cli_t *cli, const char *path, bool missing_ok, fq_cli_answer_t *answer)
{
    cli->quiet = missing_ok;
    int rc = fq_cli_call(cli, "GET", path, NULL, NULL, answer);
    cli->quiet = false;
    if (rc != FQ_CLI_EXIT_OK && missing_ok && answer->status == S_HTTP_NOT_FOUND)
        return FQ_CLI_EXIT_OK;
    if (rc != FQ_CLI_EXIT_OK && missing_ok)
        fq_cli_report(cli, answer);
    return rc;
}

static int s_destinations_show(fq_cli_t *cli, const fq_cli_args_t *args)
{
    if (fq_cli_parse_tenant(args->pos[0], "destination name"))
        return FQ_CLI_EXIT_USAGE;
    char *path = s_destination_path(args->pos[0]);
    if (!path)
        return FQ_CLI_EXIT_FAILED;
    fq_cli_answer_t answer = {0};
    int rc = s_get(cli, path, false, &answer);
    if (rc == FQ_CLI_EXIT_OK) {
        if (cli->json)
            fq_cli_print_raw(&answer);
        else
            s_print_destination(answer.json);
    }
    fq_cli_answer_reset(&answer);
    free(path);
    return rc;
}

const fq_cli_command_t fq_cli_cmd_destinations_show = {.name = "destinations show",
                                                       .usage = "NAME",
                                                       .summary = "one destination (admin)",
                                                       .min_args = 1,
                                                       .max_args = 1,
                                                       .run = s_destinations_show};

//  ---------------------------------------------------------------------
//  destinations set

static const fq_cli_option_t s_set_options[] = {
    {"rate", "RATE|none",
     "most messages a period: 100/s, 5/min, 10000/h, 1000/d; none for no rate (new: none)"},
    {"burst", "N|default",
     "messages that may go at once after a quiet while (1..1000000); default: one second of "
     "the rate (new: default)"},
    {"max-inflight", "N|none",
     "most messages in senders' hands at once (1..1000000), or none (new: none)"},
    {"domains", "LIST|none",
     "the destination's domains, all of them, between commas (gmail.com,googlemail.com; "
     "any it had and this lacks go back to \"default\"); none for none (new: none)"},
    {NULL, NULL, NULL}};

//  Checks the options of set. Returns 0 or FQ_CLI_EXIT_USAGE (printed).
static int s_check_options(const fq_cli_args_t *args, int64_t *burst, int64_t *inflight)
{
    const char *rate = fq_cli_arg(args, "rate"), *burst_text = fq_cli_arg(args, "burst");
    const char *inflight_text = fq_cli_arg(args, "max-inflight");
    fq_rate_t parsed;
    char problem[S_PROBLEM_SIZE];
    if (rate && strcmp(rate, S_NONE) != 0 &&
        fq_rate_parse(rate, &parsed, problem, sizeof problem) != 0) {
        fq_cli_error("--rate: %s (or none)", problem);
        return FQ_CLI_EXIT_USAGE;
    }
    if (burst_text && strcmp(burst_text, S_DEFAULT) != 0 &&
        fq_cli_parse_int(burst_text, "--burst (or default)", 1, FQ_DESTINATION_BURST_MAX, burst))
        return FQ_CLI_EXIT_USAGE;
    if (inflight_text && strcmp(inflight_text, S_NONE) != 0 &&
        fq_cli_parse_int(inflight_text, "--max-inflight (or none)", 1, FQ_DESTINATION_INFLIGHT_MAX,
                         inflight))
        return FQ_CLI_EXIT_USAGE;
    return 0;
}

//  The body of the PUT: what the destination is now (current; NULL for
//  a new one), with the options' changes.
static json_t *s_set_body(const fq_cli_args_t *args, const json_t *current, int64_t burst,
                          int64_t inflight)
{
    const char *rate = fq_cli_arg(args, "rate"), *burst_text = fq_cli_arg(args, "burst");
    const char *inflight_text = fq_cli_arg(args, "max-inflight");
    const char *domains = fq_cli_arg(args, "domains");
    json_t *body = json_object();
    static const char *const kept[] = {"rate", "burst", "max_inflight"};
    for (size_t i = 0; i < sizeof kept / sizeof *kept; i++) {
        json_t *value = json_object_get(current, kept[i]);
        json_object_set_new(body, kept[i], value ? json_incref(value) : json_null());
    }
    json_t *list = json_object_get(current, "domains");
    json_object_set_new(body, "domains", json_is_array(list) ? json_copy(list) : json_array());
    if (rate)
        json_object_set_new(body, "rate",
                            strcmp(rate, S_NONE) == 0 ? json_null() : json_string(rate));
    //  No rate, no bucket: a burst kept from before would be refused
    if ((rate && strcmp(rate, S_NONE) == 0 && !burst_text) ||
        (burst_text && strcmp(burst_text, S_DEFAULT) == 0))
        json_object_set_new(body, "burst", json_null());
    else if (burst_text)
        json_object_set_new(body, "burst", json_integer(burst));
    if (inflight_text)
        json_object_set_new(body, "max_inflight",
                            strcmp(inflight_text, S_NONE) == 0 ? json_null()
                                                               : json_integer(inflight));
    if (domains) {
        json_t *array = json_array();
        char *copy = strdup(domains), *save = NULL;
        for (char *domain = copy && strcmp(domains, S_NONE) != 0
                                ? strtok_r(copy, S_DOMAIN_SEPARATORS, &save)
                                : NULL;
             domain; domain = strtok_r(NULL, S_DOMAIN_SEPARATORS, &save))
            json_array_append_new(array, json_string(domain));
        free(copy);
        json_object_set_new(body, "domains", array);
    }
    return body;
}

static int s_destinations_set(fq_cli_t *cli, const fq_cli_args_t *args)
{
    int64_t burst = 0, inflight = 0;
    if (fq_cli_parse_tenant(args->pos[0], "destination name") ||
        s_check_options(args, &burst, &inflight))
        return FQ_CLI_EXIT_USAGE;
    char *path = s_destination_path(args->pos[0]);
    if (!path)
        return FQ_CLI_EXIT_FAILED;
    fq_cli_answer_t current = {0}, answer = {0};
    int rc = s_get(cli, path, true, &current);
    json_t *body = NULL;
    if (rc == FQ_CLI_EXIT_OK) {
        body = s_set_body(args, current.status == S_HTTP_NOT_FOUND ? NULL : current.json, burst,
                          inflight);
        rc = body ? fq_cli_call(cli, "PUT", path, body, NULL, &answer) : FQ_CLI_EXIT_FAILED;
    }
    if (rc == FQ_CLI_EXIT_OK) {
        if (cli->json)
            fq_cli_print_raw(&answer);
        else {
            printf("destination %s %s\n", args->pos[0],
                   answer.status == S_HTTP_CREATED ? "created" : "updated");
            s_print_destination(answer.json);
        }
    }
    fq_cli_answer_reset(&current);
    fq_cli_answer_reset(&answer);
    json_decref(body);
    free(path);
    return rc;
}

const fq_cli_command_t fq_cli_cmd_destinations_set = {
    .name = "destinations set",
    .usage = "NAME [--rate RATE|none] [--burst N|default] [--max-inflight N|none] "
             "[--domains LIST|none]",
    .summary = "create a destination, or change its budget and domains (admin)",
    .description =
        "Options left out keep their value (a new destination has no limit and no domain).\n"
        "--domains LIST|none is the whole list; a domain another destination has is\n"
        "refused (exit 6): take it out of that one first. \"default\" takes a budget but no\n"
        "domains. A change of domains applies to the messages split after it.",
    .options = s_set_options,
    .min_args = 1,
    .max_args = 1,
    .run = s_destinations_set};

//  ---------------------------------------------------------------------
//  destinations delete

static int s_destinations_delete(fq_cli_t *cli, const fq_cli_args_t *args)
{
    if (fq_cli_parse_tenant(args->pos[0], "destination name"))
        return FQ_CLI_EXIT_USAGE;
    char *path = s_destination_path(args->pos[0]);
    if (!path)
        return FQ_CLI_EXIT_FAILED;
    fq_cli_answer_t answer = {0};
    int rc = fq_cli_call(cli, "DELETE", path, NULL, NULL, &answer);
    if (rc == FQ_CLI_EXIT_OK) {
        if (cli->json)
            fq_cli_print_raw(&answer);
        else
            printf("destination %s deleted\n", args->pos[0]);
    }
    fq_cli_answer_reset(&answer);
    free(path);
    return rc;
}

const fq_cli_command_t fq_cli_cmd_destinations_delete = {
    .name = "destinations delete",
    .usage = "NAME",
    .summary = "delete a destination: its domains go back to \"default\" (admin)",
    .description = "\"default\" cannot be deleted.",
    .min_args = 1,
    .max_args = 1,
    .run = s_destinations_delete};
