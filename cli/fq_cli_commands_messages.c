/*  fq_cli_commands_messages.c — single messages: search, message, retry;
    and errors, what the failed and dead ones met. */
#include "fq_cli_args.h"
#include "fq_cli_commands.h"
#include "fq_cli_pages.h"
#include "fq_cli_table.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  API.md: limit is 1..1000 per page
#define S_LIMIT_MAX 1000

#define S_PATH_SIZE 128

//  Room for an age in seconds as text
#define S_AGE_TEXT 24

//  ASCII DEL, a control character like those below ' '
#define S_DEL 0x7F

//  API.md: top is 1..1000 groups
#define S_TOP_MAX 1000

//  Characters of an error's example a table shows: the codes are beside
//  it, and the rest of the line would wrap; --json has it whole
#define S_EXAMPLE_WIDTH 60

static const char *const s_message_statuses[] = {"pending", "sent",      "failed",
                                                 "dead",    "cancelled", NULL};

//  A message object, one label and value per line.
static void s_print_message(const json_t *message)
{
    static const char *const fields[] = {"message",
                                         "id",
                                         "request",
                                         "request",
                                         "tenant",
                                         "tenant",
                                         "to",
                                         "to",
                                         "status",
                                         "status",
                                         "attempts",
                                         "attempts",
                                         "next attempt",
                                         "next_attempt_at",
                                         "last attempt",
                                         "last_attempt_at",
                                         "last error",
                                         "last_error",
                                         NULL};
    fq_cli_print_fields(stdout, message, fields);
}

//  ---------------------------------------------------------------------
//  search

static const fq_cli_option_t s_search_options[] = {
    {"request", "ID", "messages of this request"},
    {"tenant", "NAME", "messages of this tenant"},
    {"status", "STATUS", "in this status (pending, sent, failed, dead, cancelled)"},
    {"to", "ADDR", "to this address (exact, any case)"},
    {"domain", "DOMAIN", "to addresses at this domain (the part after '@', any case)"},
    {"error", "TEXT", "whose last error contains TEXT (any case)"},
    {"code", "CODE", "whose last error has this reply code (550) or enhanced code (5.1.1)"},
    {"older-than", "AGE", "created more than AGE ago (seconds, or 90m, 2h, 3d)"},
    {"limit", "N", "at most N per page (1..1000, default 100)"},
    {"after", "ID", "after message ID (the next page)"},
    {"all", NULL, "every page, following next_after (with --json: one document)"},
    {NULL, NULL, NULL}};

//  A value that is sent as it is, but must not be empty nor hold control
//  characters (an address or a domain).
static int s_parse_text(const char *text, const char *option)
{
    bool ok = *text != 0;
    for (const unsigned char *c = (const unsigned char *)text; ok && *c; c++)
        ok = *c >= ' ' && *c != S_DEL;
    if (!ok) {
        fq_cli_error("invalid value for %s: empty or with control characters", option);
        return FQ_CLI_EXIT_USAGE;
    }
    return 0;
}

static int s_search(fq_cli_t *cli, const fq_cli_args_t *args)
{
    const char *request = fq_cli_arg(args, "request"), *tenant = fq_cli_arg(args, "tenant");
    const char *status = fq_cli_arg(args, "status"), *to = fq_cli_arg(args, "to");
    const char *domain = fq_cli_arg(args, "domain"), *limit = fq_cli_arg(args, "limit");
    const char *after = fq_cli_arg(args, "after"), *error = fq_cli_arg(args, "error");
    const char *code = fq_cli_arg(args, "code"), *older = fq_cli_arg(args, "older-than");
    char older_s[S_AGE_TEXT] = "";
    int64_t n;
    if ((request && fq_cli_parse_id(request, "--request id", &n)) ||
        (tenant && fq_cli_parse_tenant(tenant, "tenant")) ||
        (status && fq_cli_parse_choice(status, "--status", s_message_statuses)) ||
        (to && s_parse_text(to, "--to")) || (domain && s_parse_text(domain, "--domain")) ||
        (limit && fq_cli_parse_int(limit, "--limit", 1, S_LIMIT_MAX, &n)) ||
        (after && fq_cli_parse_int(after, "--after", 0, INT64_MAX, &n)) ||
        (error && s_parse_text(error, "--error")) || (code && s_parse_text(code, "--code")) ||
        (older && fq_cli_parse_duration(older, "--older-than", &n)))
        return FQ_CLI_EXIT_USAGE;
    if (older)
        snprintf(older_s, sizeof older_s, "%lld", (long long)n);
    fq_cli_query_t query[] = {{"request", request}, {"tenant", tenant},
                              {"status", status},   {"to", to},
                              {"domain", domain},   {"error", error},
                              {"code", code},       {"older_than", older ? older_s : NULL},
                              {"limit", limit},     {"after", after},
                              {NULL, NULL}};
    json_t *list = NULL;
    int rc = fq_cli_pages(cli, "/v1/messages", query, "messages", "next_after", "after",
                          fq_cli_flag(args, "all"), &list);
    if (rc != FQ_CLI_EXIT_OK)
        return rc;
    static const char *const headers[] = {"ID",     "REQUEST",  "TENANT",       "TO",
                                          "STATUS", "ATTEMPTS", "NEXT ATTEMPT", "LAST ERROR"};
    static const char *const keys[] = {"id",     "request",  "tenant",          "to",
                                       "status", "attempts", "next_attempt_at", "last_error"};
    static const fq_cli_page_view_t view = {.array_key = "messages",
                                            .headers = headers,
                                            .keys = keys,
                                            .columns = sizeof keys / sizeof *keys,
                                            .align = "rrllrrll",
                                            .next_key = "next_after",
                                            .more = "(more: --after %lld, or --all)"};
    return fq_cli_pages_print(cli, list, &view);
}

const fq_cli_command_t fq_cli_cmd_search = {.name = "search",
                                            .usage =
                                                "[--request ID] [--tenant NAME] [--status STATUS] "
                                                "[--to ADDR] [--domain DOMAIN] [--error TEXT] "
                                                "[--code CODE] [--older-than AGE] [--limit N] "
                                                "[--after ID] [--all]",
                                            .summary = "find messages, in id order",
                                            .options = s_search_options,
                                            .min_args = 0,
                                            .max_args = 0,
                                            .run = s_search};

//  ---------------------------------------------------------------------
//  message, retry

//  METHOD /v1/messages/ID[suffix], the message shown.
static int s_message_call(fq_cli_t *cli, const fq_cli_args_t *args, const char *method,
                          const char *suffix)
{
    int64_t id;
    if (fq_cli_parse_id(args->pos[0], "message id", &id))
        return FQ_CLI_EXIT_USAGE;
    char path[S_PATH_SIZE];
    fq_cli_request_path(path, sizeof path, "messages", id, suffix);
    fq_cli_answer_t answer = {0};
    int rc = fq_cli_call(cli, method, path, NULL, NULL, &answer);
    if (rc == FQ_CLI_EXIT_OK) {
        if (cli->json)
            fq_cli_print_raw(&answer);
        else
            s_print_message(answer.json);
    }
    fq_cli_answer_reset(&answer);
    return rc;
}

static int s_message(fq_cli_t *cli, const fq_cli_args_t *args)
{
    return s_message_call(cli, args, "GET", NULL);
}

static int s_retry(fq_cli_t *cli, const fq_cli_args_t *args)
{
    return s_message_call(cli, args, "POST", "/retry");
}

const fq_cli_command_t fq_cli_cmd_message = {
    .name = "message",
    .usage = "ID",
    .summary = "one message: its recipient, status, attempts and last error",
    .min_args = 1,
    .max_args = 1,
    .run = s_message};

const fq_cli_command_t fq_cli_cmd_retry = {
    .name = "retry",
    .usage = "MESSAGE_ID",
    .summary = "give a dead message one more attempt, now",
    .description = "A message that is not dead cannot be retried: exit 6.",
    .min_args = 1,
    .max_args = 1,
    .run = s_retry};

//  ---------------------------------------------------------------------
//  errors

static const fq_cli_option_t s_errors_options[] = {
    {"tenant", "NAME", "errors of this tenant's messages"},
    {"request", "ID", "errors of this request's messages"},
    {"status", "STATUS", "failed (to be retried) or dead: of these messages only"},
    {"destination", "NAME", "errors of the messages split with this destination"},
    {"top", "N", "the N most frequent (1..1000, default 100)"},
    {NULL, NULL, NULL}};

//  text cut to S_EXAMPLE_WIDTH characters (UTF-8 sequences count one),
//  ending with "..." when cut.
static void s_shorten(char *text)
{
    static const char dots[] = "...";
    if (fq_cli_width(text) <= S_EXAMPLE_WIDTH)
        return;
    size_t chars = 0, at = 0;
    for (; text[at]; at++)
        if (((unsigned char)text[at] & 0xC0) != 0x80 && chars++ == S_EXAMPLE_WIDTH - 3)
            break;
    memcpy(text + at, dots, sizeof dots);
}

static void s_add_error(fq_cli_table_t *table, const json_t *error)
{
    static const char *const keys[] = {"tenant", "destination", "code", "enhanced",
                                       "count",  "failed",      "dead"};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
        fq_cli_table_add_json(table, json_object_get(error, keys[i]));
    char example[FQ_CLI_VALUE_SIZE];
    fq_cli_format_value(example, sizeof example, json_object_get(error, "example"));
    s_shorten(example);
    fq_cli_table_add(table, example);
}

static int s_errors(fq_cli_t *cli, const fq_cli_args_t *args)
{
    const char *request = fq_cli_arg(args, "request"), *tenant = fq_cli_arg(args, "tenant");
    const char *status = fq_cli_arg(args, "status"), *top = fq_cli_arg(args, "top");
    const char *destination = fq_cli_arg(args, "destination");
    static const char *const statuses[] = {"failed", "dead", NULL};
    int64_t n;
    if ((request && fq_cli_parse_id(request, "--request id", &n)) ||
        (tenant && fq_cli_parse_tenant(tenant, "tenant")) ||
        (status && fq_cli_parse_choice(status, "--status", statuses)) ||
        (destination && fq_cli_parse_tenant(destination, "destination name")) ||
        (top && fq_cli_parse_int(top, "--top", 1, S_TOP_MAX, &n)))
        return FQ_CLI_EXIT_USAGE;
    fq_cli_query_t query[] = {{"tenant", tenant}, {"request", request},
                              {"status", status}, {"destination", destination},
                              {"top", top},       {NULL, NULL}};
    char *path = fq_cli_query_path("/v1/errors", query);
    if (!path) {
        fq_cli_error("out of memory");
        return FQ_CLI_EXIT_FAILED;
    }
    fq_cli_answer_t answer = {0};
    int rc = fq_cli_call(cli, "GET", path, NULL, NULL, &answer);
    free(path);
    if (rc == FQ_CLI_EXIT_OK && cli->json)
        fq_cli_print_raw(&answer);
    else if (rc == FQ_CLI_EXIT_OK) {
        static const char *const headers[] = {"TENANT", "DESTINATION", "CODE", "ENHANCED",
                                              "COUNT",  "FAILED",      "DEAD", "EXAMPLE"};
        fq_cli_table_t *table = fq_cli_table_new(headers, "llllrrrl");
        size_t i;
        json_t *error;
        json_array_foreach(json_object_get(answer.json, "errors"), i, error)
        {
            if (table)
                s_add_error(table, error);
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

const fq_cli_command_t fq_cli_cmd_errors = {
    .name = "errors",
    .usage = "[--tenant NAME] [--request ID] [--status STATUS] [--destination NAME] "
             "[--top N]",
    .summary = "what the failed and dead messages met, most frequent first",
    .description =
        "Errors are grouped by tenant, destination and their codes: CODE is the reply code\n"
        "the error starts with (an SMTP reply's 550, an http status's 503), ENHANCED the\n"
        "first enhanced status code in it (5.1.1); \"-\" when it has none. EXAMPLE is one\n"
        "error of the group, shortened (--json shows it whole).",
    .options = s_errors_options,
    .min_args = 0,
    .max_args = 0,
    .run = s_errors};
