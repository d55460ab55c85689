/*  fq_cli_commands_bulk.c — messages changed by filter: cancel, retry of
    the dead, a new time for the failed ones' next attempt (POST
    /v1/messages/bulk). fairqd answers after about ten seconds of batches
    with where it got to; the command goes on from there until the whole
    filter is done, and reports the totals. */
#include "fq_cli_args.h"
#include "fq_cli_commands.h"
#include "fq_cli_table.h"
#include "fq_limits.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *const s_statuses[] = {"pending", "sent", "failed", "dead", "cancelled", NULL};

//  The filter's options, and the action's; reschedule adds --send-at.
#define S_FILTER_OPTIONS                                                                           \
    {"tenant", "NAME", "messages of this tenant"}, {"request", "ID", "messages of this request"},  \
        {"status", "STATUS", "only those in this status (narrows the action's own)"},              \
        {"to", "ADDR", "to this address (exact, any case)"},                                       \
        {"domain", "DOMAIN", "to addresses at this domain (any case)"},                            \
        {"error", "TEXT", "whose last error contains TEXT (any case)"},                            \
        {"code", "CODE", "whose last error has this reply code (550) or enhanced code (5.1.1)"},   \
        {"older-than", "AGE", "created more than AGE ago (seconds, or 90m, 2h, 3d)"},              \
        {"dry-run", NULL, "only count what would change"},                                         \
    {                                                                                              \
        "batch", "N", "messages per transaction (1..10000, default 1000)"                          \
    }

static const fq_cli_option_t s_options[] = {S_FILTER_OPTIONS, {NULL, NULL, NULL}};

static const fq_cli_option_t s_reschedule_options[] = {
    S_FILTER_OPTIONS,
    {"send-at", "TIME",
     "the new next attempt: RFC 3339 with a zone, Unix seconds, or +N with s, m, h or d"},
    {NULL, NULL, NULL}};

//  The body of the call: action, filter, settings; NULL after a usage
//  error (printed).
static json_t *s_body(const char *action, const fq_cli_args_t *args)
{
    const char *tenant = fq_cli_arg(args, "tenant"), *request = fq_cli_arg(args, "request");
    const char *status = fq_cli_arg(args, "status"), *batch = fq_cli_arg(args, "batch");
    const char *older = fq_cli_arg(args, "older-than"), *send_at = fq_cli_arg(args, "send-at");
    int64_t request_id = 0, batch_n = 0, older_s = 0;
    json_t *when = NULL;
    if ((tenant && fq_cli_parse_tenant(tenant, "tenant")) ||
        (request && fq_cli_parse_id(request, "--request id", &request_id)) ||
        (status && fq_cli_parse_choice(status, "--status", s_statuses)) ||
        (batch && fq_cli_parse_int(batch, "--batch", 1, FQ_BULK_BATCH_MAX, &batch_n)) ||
        (older && fq_cli_parse_duration(older, "--older-than", &older_s)) ||
        (send_at && fq_cli_parse_time(send_at, "--send-at", (int64_t)time(NULL), &when)))
        return NULL;
    if (strcmp(action, "reschedule") == 0 && !when) {
        fq_cli_error("reschedule needs --send-at TIME (\"now\" is +0s)");
        return NULL;
    }
    json_t *body =
        json_pack("{s:s, s:b}", "action", action, "dry_run", fq_cli_flag(args, "dry-run"));
    static const char *const texts[] = {"tenant", "status", "to", "domain", "error", "code", NULL};
    for (size_t i = 0; texts[i]; i++)
        if (fq_cli_arg(args, texts[i]))
            json_object_set_new(body, texts[i], json_string(fq_cli_arg(args, texts[i])));
    if (request)
        json_object_set_new(body, "request", json_integer(request_id));
    if (older)
        json_object_set_new(body, "older_than", json_integer(older_s));
    if (batch)
        json_object_set_new(body, "batch", json_integer(batch_n));
    if (when)
        json_object_set_new(body, "send_at", when);
    return body;
}

//  Calls until fairqd says the filter is done, adding up its counts into
//  total (the last answer, with the counts of all of them).
static int s_run(fq_cli_t *cli, const char *action, const fq_cli_args_t *args)
{
    json_t *body = s_body(action, args);
    if (!body)
        return FQ_CLI_EXIT_USAGE;
    json_int_t matched = 0, changed = 0, batches = 0;
    int rc;
    for (;;) {
        fq_cli_answer_t answer = {0};
        rc = fq_cli_call(cli, "POST", "/v1/messages/bulk", body, NULL, &answer);
        if (rc != FQ_CLI_EXIT_OK) {
            fq_cli_answer_reset(&answer);
            break;
        }
        matched += json_integer_value(json_object_get(answer.json, "matched"));
        changed += json_integer_value(json_object_get(answer.json, "changed"));
        batches += json_integer_value(json_object_get(answer.json, "batches"));
        json_t *next = json_object_get(answer.json, "next_after");
        bool complete = json_is_true(json_object_get(answer.json, "complete"));
        if (!complete && json_is_integer(next)) {
            json_object_set(body, "after", next);
            //  On a terminal, where it got to (a long change takes minutes)
            if (!cli->json)
                fprintf(
                    stderr, "%s: %lld so far, at message %lld\n", action,
                    (long long)(json_is_true(json_object_get(body, "dry_run")) ? matched : changed),
                    (long long)json_integer_value(next));
            fq_cli_answer_reset(&answer);
            continue;
        }
        fq_cli_answer_reset(&answer);
        break;
    }
    if (rc == FQ_CLI_EXIT_OK) {
        bool dry_run = json_is_true(json_object_get(body, "dry_run"));
        if (cli->json) {
            json_t *total = json_pack("{s:s, s:b, s:I, s:I, s:I, s:b, s:n}", "action", action,
                                      "dry_run", dry_run, "matched", matched, "changed", changed,
                                      "batches", batches, "complete", 1, "next_after");
            char *text = json_dumps(total, JSON_COMPACT);
            if (text)
                puts(text);
            free(text);
            json_decref(total);
        } else if (dry_run)
            printf("%s would change %lld messages (dry run, %lld batches)\n", action,
                   (long long)matched, (long long)batches);
        else
            printf("%s: %lld messages changed of %lld matched (%lld batches)\n", action,
                   (long long)changed, (long long)matched, (long long)batches);
    }
    json_decref(body);
    return rc;
}

static int s_cancel(fq_cli_t *cli, const fq_cli_args_t *args)
{
    return s_run(cli, "cancel", args);
}

static int s_retry(fq_cli_t *cli, const fq_cli_args_t *args)
{
    return s_run(cli, "retry", args);
}

static int s_reschedule(fq_cli_t *cli, const fq_cli_args_t *args)
{
    return s_run(cli, "reschedule", args);
}

#define S_USAGE                                                                                    \
    "[--tenant NAME] [--request ID] [--status STATUS] [--to ADDR] [--domain DOMAIN] "              \
    "[--error TEXT] [--code CODE] [--older-than AGE] [--dry-run] [--batch N]"

#define S_DESCRIPTION                                                                              \
    "Name at least a tenant, request, address, domain, error or code (a tenant's token:\n"         \
    "its own tenant). fairqd changes the messages a batch at a time, each batch a short\n"         \
    "transaction, so deliveries go on meanwhile; a message delivered meanwhile is left\n"          \
    "as it is. Interrupted, the same command again goes on where it stopped."

const fq_cli_command_t fq_cli_cmd_messages_cancel = {
    .name = "messages cancel",
    .usage = S_USAGE,
    .summary = "cancel the pending and failed messages a filter selects",
    .description = S_DESCRIPTION,
    .options = s_options,
    .min_args = 0,
    .max_args = 0,
    .run = s_cancel};

const fq_cli_command_t fq_cli_cmd_messages_retry = {
    .name = "messages retry",
    .usage = S_USAGE,
    .summary = "give the dead messages a filter selects one more attempt, now",
    .description = S_DESCRIPTION "\nMessages of cancelled or expired requests stay dead.",
    .options = s_options,
    .min_args = 0,
    .max_args = 0,
    .run = s_retry};

const fq_cli_command_t fq_cli_cmd_messages_reschedule = {
    .name = "messages reschedule",
    .usage = S_USAGE " --send-at TIME",
    .summary = "move the next attempt of the failed messages a filter selects",
    .description = S_DESCRIPTION
    "\nOnly failed messages (waiting for a retry) have a time of their own: pending ones\n"
    "start with their request (fairq reschedule ID --send-at) or wait out a hold.",
    .options = s_reschedule_options,
    .min_args = 0,
    .max_args = 0,
    .run = s_reschedule};
