/*  fq_cli_commands_requests.c — a request's life: status (--watch is
    fq_cli_watch.c), list, cancel, pause, resume, reschedule, rejects.
*/
#include "fq_cli_args.h"
#include "fq_limits.h"
#include "fq_cli_commands.h"
#include "fq_cli_pages.h"
#include "fq_cli_table.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

//  API.md: limit is 1..1000 per page
#define S_LIMIT_MAX 1000
//  API.md: priority orders requests within a tenant

//  status --watch polls every second unless told: a progress bar that
//  moves once a second reads as live, and costs fairqd one indexed read
#define S_WATCH_INTERVAL_S     1.0
#define S_WATCH_INTERVAL_MIN_S 0.1
#define S_WATCH_INTERVAL_MAX_S 3600.0

#define S_PATH_SIZE 128

static const char *const s_request_statuses[] = {"accepted", "splitting", "active",   "paused",
                                                 "done",     "cancelled", "rejected", NULL};

void fq_cli_request_path(char *path, size_t size, const char *kind, int64_t id, const char *suffix)
{
    snprintf(path, size, "/v1/%s/%lld%s", kind, (long long)id, suffix ? suffix : "");
}

void fq_cli_print_request(const json_t *request)
{
    static const char *const fields[] = {
        "request",   "id",          "tenant",   "tenant",  "status",     "status",    "priority",
        "priority",  "total",       "total",    "pending", "pending",    "in flight", "inflight",
        "sent",      "sent",        "failed",   "failed",  "dead",       "dead",      "cancelled",
        "cancelled", "rejected",    "rejected", "created", "created_at", "send at",   "send_at",
        "finished",  "finished_at", NULL};
    fq_cli_print_fields(stdout, request, fields);
}

void fq_cli_print_request_line(const json_t *request)
{
    char tenant[FQ_CLI_VALUE_SIZE], status[FQ_CLI_VALUE_SIZE];
    fq_cli_format_value(tenant, sizeof tenant, json_object_get(request, "tenant"));
    fq_cli_format_value(status, sizeof status, json_object_get(request, "status"));
    printf("request %lld (%s) %s: total %lld, sent %lld, failed %lld, dead %lld, pending %lld",
           (long long)json_integer_value(json_object_get(request, "id")), tenant, status,
           (long long)json_integer_value(json_object_get(request, "total")),
           (long long)json_integer_value(json_object_get(request, "sent")),
           (long long)json_integer_value(json_object_get(request, "failed")),
           (long long)json_integer_value(json_object_get(request, "dead")),
           (long long)json_integer_value(json_object_get(request, "pending")));
    //  The rare counters only when there are some
    static const char *const rare[] = {"cancelled", "rejected", NULL};
    for (size_t i = 0; rare[i]; i++) {
        json_int_t n = json_integer_value(json_object_get(request, rare[i]));
        if (n)
            printf(", %s %lld", rare[i], (long long)n);
    }
    putchar('\n');
}

//  METHOD /v1/requests/ID (with body, if any) and the request it answers,
//  as the API gave it (--json) or for people. Returns the exit code.
static int s_show_request(fq_cli_t *cli, const char *method, int64_t id, json_t *body)
{
    char path[S_PATH_SIZE];
    fq_cli_request_path(path, sizeof path, "requests", id, NULL);
    fq_cli_answer_t answer = {0};
    int rc = fq_cli_call(cli, method, path, body, NULL, &answer);
    if (rc == FQ_CLI_EXIT_OK) {
        if (cli->json)
            fq_cli_print_raw(&answer);
        else
            fq_cli_print_request(answer.json);
    }
    fq_cli_answer_reset(&answer);
    return rc;
}

//  ---------------------------------------------------------------------
//  status

static const fq_cli_option_t s_status_options[] = {
    {"watch", NULL,
     "follow it until it is finished: a progress bar on a terminal, else a line per change; "
     "exit 0 only if every recipient was sent"},
    {"interval-s", "N", "seconds between polls with --watch (default 1; 0.1..3600)"},
    {NULL, NULL, NULL}};

static int s_status(fq_cli_t *cli, const fq_cli_args_t *args)
{
    int64_t id;
    double interval = S_WATCH_INTERVAL_S;
    const char *text = fq_cli_arg(args, "interval-s");
    if (fq_cli_parse_id(args->pos[0], "request id", &id) ||
        (text && fq_cli_parse_seconds(text, "--interval-s", S_WATCH_INTERVAL_MIN_S,
                                      S_WATCH_INTERVAL_MAX_S, &interval)))
        return FQ_CLI_EXIT_USAGE;
    if (fq_cli_flag(args, "watch"))
        return fq_cli_watch(cli, id, interval);
    return s_show_request(cli, "GET", id, NULL);
}

const fq_cli_command_t fq_cli_cmd_status = {
    .name = "status",
    .usage = "ID [--watch [--interval-s N]]",
    .summary = "a request's status and counters; --watch follows it to the end",
    .description =
        "Without a terminal (or with --json), --watch prints one line each time the status or\n"
        "a counter changes, and with --json the final request object. --watch exits 0 when\n"
        "the request is done with every recipient sent, 1 when it finished with dead,\n"
        "cancelled or rejected recipients (or was cancelled or rejected). While fairqd cannot\n"
        "be reached it keeps trying for --timeout-s N seconds, then exits 5.",
    .options = s_status_options,
    .min_args = 1,
    .max_args = 1,
    .run = s_status};

//  ---------------------------------------------------------------------
//  list

static const fq_cli_option_t s_list_options[] = {
    {"tenant", "NAME", "only this tenant's requests"},
    {"status", "STATUS",
     "only requests in this status (accepted, splitting, active, paused, done, "
     "cancelled, rejected)"},
    {"limit", "N", "at most N requests (1..1000, default 100)"},
    {"before", "ID", "older than request ID (the next page)"},
    {NULL, NULL, NULL}};

static int s_list(fq_cli_t *cli, const fq_cli_args_t *args)
{
    const char *tenant = fq_cli_arg(args, "tenant"), *status = fq_cli_arg(args, "status");
    const char *limit = fq_cli_arg(args, "limit"), *before = fq_cli_arg(args, "before");
    int64_t n;
    if ((tenant && fq_cli_parse_tenant(tenant, "tenant")) ||
        (status && fq_cli_parse_choice(status, "--status", s_request_statuses)) ||
        (limit && fq_cli_parse_int(limit, "--limit", 1, S_LIMIT_MAX, &n)) ||
        (before && fq_cli_parse_id(before, "--before id", &n)))
        return FQ_CLI_EXIT_USAGE;
    fq_cli_query_t query[] = {
        {"tenant", tenant}, {"status", status}, {"limit", limit}, {"before", before}, {0}};
    json_t *list = NULL;
    int rc =
        fq_cli_pages(cli, "/v1/requests", query, "requests", "next_before", "before", false, &list);
    if (rc != FQ_CLI_EXIT_OK)
        return rc;
    static const char *const headers[] = {"ID",     "TENANT", "STATUS",  "TOTAL",   "SENT",
                                          "FAILED", "DEAD",   "PENDING", "CREATED", "SEND AT"};
    static const char *const keys[] = {"id",     "tenant", "status",  "total",      "sent",
                                       "failed", "dead",   "pending", "created_at", "send_at"};
    static const fq_cli_page_view_t view = {.array_key = "requests",
                                            .headers = headers,
                                            .keys = keys,
                                            .columns = sizeof keys / sizeof *keys,
                                            .align = "rllrrrrrll",
                                            .next_key = "next_before",
                                            .more = "(older requests: --before %lld)"};
    return fq_cli_pages_print(cli, list, &view);
}

const fq_cli_command_t fq_cli_cmd_list = {
    .name = "list",
    .usage = "[--tenant NAME] [--status STATUS] [--limit N] [--before ID]",
    .summary = "requests, newest first",
    .options = s_list_options,
    .min_args = 0,
    .max_args = 0,
    .run = s_list};

//  ---------------------------------------------------------------------
//  cancel, pause, resume

//  POST /v1/requests/ID/ACTION and the request after it.
static int s_lifecycle(fq_cli_t *cli, const fq_cli_args_t *args, const char *action)
{
    int64_t id;
    if (fq_cli_parse_id(args->pos[0], "request id", &id))
        return FQ_CLI_EXIT_USAGE;
    //  The action's word ("cancel") is the CLI's own, so the path fits
    char path[S_PATH_SIZE], suffix[S_PATH_SIZE / 4];
    snprintf(suffix, sizeof suffix, "/%s", action);
    fq_cli_request_path(path, sizeof path, "requests", id, suffix);
    fq_cli_answer_t answer = {0};
    int rc = fq_cli_call(cli, "POST", path, NULL, NULL, &answer);
    if (rc == FQ_CLI_EXIT_OK) {
        if (cli->json)
            fq_cli_print_raw(&answer);
        else
            fq_cli_print_request_line(answer.json);
    }
    fq_cli_answer_reset(&answer);
    return rc;
}

static int s_cancel(fq_cli_t *cli, const fq_cli_args_t *args)
{
    return s_lifecycle(cli, args, "cancel");
}

static int s_pause(fq_cli_t *cli, const fq_cli_args_t *args)
{
    return s_lifecycle(cli, args, "pause");
}

static int s_resume(fq_cli_t *cli, const fq_cli_args_t *args)
{
    return s_lifecycle(cli, args, "resume");
}

static const char s_lifecycle_note[] =
    "Doing it twice changes nothing (exit 0); a finished request (done, cancelled,\n"
    "rejected) cannot change: exit 6.";

const fq_cli_command_t fq_cli_cmd_cancel = {
    .name = "cancel",
    .usage = "ID",
    .summary = "cancel a request: its unsent messages are not sent",
    .description = s_lifecycle_note,
    .min_args = 1,
    .max_args = 1,
    .run = s_cancel};

const fq_cli_command_t fq_cli_cmd_pause = {
    .name = "pause",
    .usage = "ID",
    .summary = "pause a request: nothing more is sent until it is resumed",
    .description = s_lifecycle_note,
    .min_args = 1,
    .max_args = 1,
    .run = s_pause};

const fq_cli_command_t fq_cli_cmd_resume = {.name = "resume",
                                            .usage = "ID",
                                            .summary = "resume a paused request",
                                            .description = s_lifecycle_note,
                                            .min_args = 1,
                                            .max_args = 1,
                                            .run = s_resume};

//  ---------------------------------------------------------------------
//  reschedule

static const fq_cli_option_t s_reschedule_options[] = {
    {"send-at", "TIME",
     "send its pending messages from TIME: RFC 3339 with a zone, Unix seconds, or +N[smhd]"},
    {"priority", "N", "its priority within its tenant (-1000..1000, higher first)"},
    {NULL, NULL, NULL}};

static int s_reschedule(fq_cli_t *cli, const fq_cli_args_t *args)
{
    int64_t id, priority;
    const char *send_at = fq_cli_arg(args, "send-at"), *prio = fq_cli_arg(args, "priority");
    json_t *when = NULL;
    if (fq_cli_parse_id(args->pos[0], "request id", &id) ||
        (prio &&
         fq_cli_parse_int(prio, "--priority", FQ_PRIORITY_MIN, FQ_PRIORITY_MAX, &priority)) ||
        (send_at && fq_cli_parse_time(send_at, "--send-at", (int64_t)time(NULL), &when)))
        return FQ_CLI_EXIT_USAGE;
    if (!send_at && !prio) {
        fq_cli_error("reschedule needs --send-at or --priority (or both)");
        return FQ_CLI_EXIT_USAGE;
    }
    json_t *body = json_object();
    if (when)
        json_object_set_new(body, "send_at", when);
    if (prio)
        json_object_set_new(body, "priority", json_integer(priority));
    int rc = s_show_request(cli, "PATCH", id, body);
    json_decref(body);
    return rc;
}

const fq_cli_command_t fq_cli_cmd_reschedule = {
    .name = "reschedule",
    .usage = "ID [--send-at TIME] [--priority N]",
    .summary = "change when a request's pending messages go, or its priority",
    .description = "A finished request cannot change: exit 6.",
    .options = s_reschedule_options,
    .min_args = 1,
    .max_args = 1,
    .run = s_reschedule};

//  ---------------------------------------------------------------------
//  rejects

static const fq_cli_option_t s_rejects_options[] = {
    {"limit", "N", "at most N per page (1..1000, default 100)"},
    {"after", "POSITION", "after this position (the next page)"},
    {"all", NULL, "every page"},
    {NULL, NULL, NULL}};

static int s_rejects(fq_cli_t *cli, const fq_cli_args_t *args)
{
    int64_t id, n;
    const char *limit = fq_cli_arg(args, "limit"), *after = fq_cli_arg(args, "after");
    if (fq_cli_parse_id(args->pos[0], "request id", &id) ||
        (limit && fq_cli_parse_int(limit, "--limit", 1, S_LIMIT_MAX, &n)) ||
        (after && fq_cli_parse_int(after, "--after", 0, INT64_MAX, &n)))
        return FQ_CLI_EXIT_USAGE;
    char path[S_PATH_SIZE];
    fq_cli_request_path(path, sizeof path, "requests", id, "/rejects");
    fq_cli_query_t query[] = {{"limit", limit}, {"after", after}, {0}};
    json_t *list = NULL;
    int rc = fq_cli_pages(cli, path, query, "rejects", "next_after", "after",
                          fq_cli_flag(args, "all"), &list);
    if (rc != FQ_CLI_EXIT_OK)
        return rc;
    static const char *const headers[] = {"POSITION", "RECIPIENT", "REASON"};
    static const char *const keys[] = {"position", "recipient", "reason"};
    static const fq_cli_page_view_t view = {.array_key = "rejects",
                                            .headers = headers,
                                            .keys = keys,
                                            .columns = sizeof keys / sizeof *keys,
                                            .align = "rll",
                                            .next_key = "next_after",
                                            .more = "(more: --after %lld, or --all)"};
    return fq_cli_pages_print(cli, list, &view);
}

const fq_cli_command_t fq_cli_cmd_rejects = {
    .name = "rejects",
    .usage = "ID [--limit N] [--after POSITION] [--all]",
    .summary = "the recipients of a request that were refused, and why",
    .description = "POSITION counts from 0 in the submitted recipients (with --csv: the data "
                   "rows,\nso POSITION 0 is the row after the header).",
    .options = s_rejects_options,
    .min_args = 1,
    .max_args = 1,
    .run = s_rejects};
