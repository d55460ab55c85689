/*  fq_cli_commands_messages.c — single messages: search, message, retry. */
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

//  ASCII DEL, a control character like those below ' '
#define S_DEL 0x7F

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
    const char *after = fq_cli_arg(args, "after");
    int64_t n;
    if ((request && fq_cli_parse_id(request, "--request id", &n)) ||
        (tenant && fq_cli_parse_tenant(tenant, "tenant")) ||
        (status && fq_cli_parse_choice(status, "--status", s_message_statuses)) ||
        (to && s_parse_text(to, "--to")) || (domain && s_parse_text(domain, "--domain")) ||
        (limit && fq_cli_parse_int(limit, "--limit", 1, S_LIMIT_MAX, &n)) ||
        (after && fq_cli_parse_int(after, "--after", 0, INT64_MAX, &n)))
        return FQ_CLI_EXIT_USAGE;
    fq_cli_query_t query[] = {{"request", request}, {"tenant", tenant}, {"status", status},
                              {"to", to},           {"domain", domain}, {"limit", limit},
                              {"after", after},     {NULL, NULL}};
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
                                                "[--to ADDR] [--domain DOMAIN] [--limit N] "
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
