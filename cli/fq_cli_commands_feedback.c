/*  fq_cli_commands_feedback.c — feedback: posts a bounce or complaint that
    came back after delivery (a DSN or an ARF report, the raw message) to
    fairqd (api/API.md, "Feedback"), and prints what it matched. Reading
    the message from standard input, it is the command of an MTA's pipe
    (Postfix's pipe(8), a procmail or sieve rule): docs/feedback.md says how
    to wire it.

    Exit codes for a pipe: 0 when fairqd took the report (whatever it
    matched: a report about a message fairq no longer holds is no reason
    for the MTA to bounce the bounce), 1 when it is no report (400), 2
    when FILE cannot be read, and the server's code (5) when fairqd could not be reached or
    its database is down, which an MTA's pipe treats as temporary
    (EX_TEMPFAIL is the pipe's business: see docs/feedback.md).
*/
#include "fq_cli_args.h"
#include "fq_cli_commands.h"
#include "fq_cli_table.h"
#include <stdio.h>
#include <string.h>

//  The raw message: a DSN or an ARF report as it arrived
static const char *const s_raw_headers[] = {"Content-Type: message/rfc822", NULL};

//  One recipient's result for people: "bounce bob@example.net (fairq.42@
//  mail.example.org): recorded, message.bounced, suppressed".
static void s_print_result(const json_t *result)
{
    char type[FQ_CLI_VALUE_SIZE], recipient[FQ_CLI_VALUE_SIZE], id[FQ_CLI_VALUE_SIZE];
    char outcome[FQ_CLI_VALUE_SIZE], reason[FQ_CLI_VALUE_SIZE], status[FQ_CLI_VALUE_SIZE];
    fq_cli_format_value(type, sizeof type, json_object_get(result, "type"));
    fq_cli_format_value(recipient, sizeof recipient, json_object_get(result, "recipient"));
    fq_cli_format_value(id, sizeof id, json_object_get(result, "message_id"));
    fq_cli_format_value(outcome, sizeof outcome, json_object_get(result, "outcome"));
    fq_cli_format_value(reason, sizeof reason, json_object_get(result, "reason"));
    fq_cli_format_value(status, sizeof status, json_object_get(result, "status"));
    printf("%s %s (%s", type, recipient, id);
    if (json_is_string(json_object_get(result, "status")))
        printf(", status %s", status);
    printf("): %s", outcome);
    if (json_is_string(json_object_get(result, "reason")))
        printf(": %s", reason);
    if (json_is_integer(json_object_get(result, "message"))) {
        char tenant[FQ_CLI_VALUE_SIZE];
        fq_cli_format_value(tenant, sizeof tenant, json_object_get(result, "tenant"));
        printf(", message %lld of tenant %s",
               (long long)json_integer_value(json_object_get(result, "message")), tenant);
    }
    if (json_is_true(json_object_get(result, "suppressed")))
        printf(", address suppressed");
    printf("\n");
}

static int s_feedback(fq_cli_t *cli, const fq_cli_args_t *args)
{
    const char *file = args->npos > 0 ? args->pos[0] : "-";
    fq_buf_t text = {0};
    int rc = fq_cli_read_file(file, &text);
    fq_cli_answer_t answer = {0};
    if (rc == 0)
        rc = fq_cli_call_raw(cli, "POST", "/v1/feedback", text.data ? text.data : "", text.size,
                             s_raw_headers, &answer);
    if (rc == FQ_CLI_EXIT_OK && cli->json)
        fq_cli_print_raw(&answer);
    else if (rc == FQ_CLI_EXIT_OK) {
        char kind[FQ_CLI_VALUE_SIZE];
        fq_cli_format_value(kind, sizeof kind, json_object_get(answer.json, "kind"));
        printf("%s report: %lld recorded, %lld duplicates, %lld ignored, %lld unmatched\n", kind,
               (long long)json_integer_value(json_object_get(answer.json, "recorded")),
               (long long)json_integer_value(json_object_get(answer.json, "duplicates")),
               (long long)json_integer_value(json_object_get(answer.json, "ignored")),
               (long long)json_integer_value(json_object_get(answer.json, "unmatched")));
        size_t i;
        const json_t *result;
        json_array_foreach(json_object_get(answer.json, "results"), i, result)
            s_print_result(result);
    }
    fq_cli_answer_reset(&answer);
    fq_buf_free(&text);
    return rc;
}

const fq_cli_command_t fq_cli_cmd_feedback = {
    .name = "feedback",
    .usage = "[FILE]",
    .summary = "post a bounce (DSN) or complaint (ARF report) from FILE or stdin (admin)",
    .description =
        "FILE (default -, standard input) is the raw message as it came back: a delivery\n"
        "status notification or an abuse feedback report. fairqd matches it to the message\n"
        "by fairq's Message-ID and the recipient, records a message.bounced or\n"
        "message.complained event, and suppresses the address as configured. Prints what\n"
        "each recipient of the report became. As an MTA's pipe command: exit 0 when fairqd\n"
        "took the report, 1 when it is no report, 5 when fairqd or its database is down.",
    .options = NULL,
    .min_args = 0,
    .max_args = 1,
    .run = s_feedback};
