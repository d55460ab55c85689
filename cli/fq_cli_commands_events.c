/*  fq_cli_commands_events.c — events: what happened to messages and
    requests (GET /v1/events, api/API.md), oldest first, one line each;
    --follow polls for more with each page's cursor until interrupted.

    A line is the event's time, type, tenant, request, message, recipient
    and detail, two spaces apart, "-" for none, every value escaped
    (fq_cli_table.h): a receiver's reply is text from far away. With
    --json a page is the API's answer as it is; with --follow, each event
    is one compact JSON object on a line of its own (JSON Lines), as they
    come.
*/
#include "fq_cli_args.h"
#include "fq_cli_commands.h"
#include "fq_cli_pages.h"
#include "fq_cli_table.h"
#include "fq_feedback_names.h"
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

//  API.md: limit is 1..1000 per page, 100 unless given
#define S_LIMIT_MAX     1000
#define S_LIMIT_DEFAULT 100

//  --follow asks again this often once it has read all there is
#define S_FOLLOW_INTERVAL_S 1

//  A cursor is two numbers joined by '-': a transaction id (xid8) and an
//  event id (bigint), 20 digits at most each
#define S_CURSOR_DIGITS_MAX 20
#define S_CURSOR_SIZE       (2 * S_CURSOR_DIGITS_MAX + 2)
#define S_CURSOR_START      "0-0"

//  The longest type ("message.unsubscribed"): the type's column lines up
#define S_TYPE_WIDTH 20

#define S_DIGITS "0123456789"

#define S_NS_PER_S 1e9

static volatile sig_atomic_t s_stop;

static void s_on_signal(int signum)
{
    (void)signum;
    s_stop = 1;
}

static const fq_cli_option_t s_options[] = {
    {"tenant", "NAME", "events of this tenant"},
    {"request", "ID", "events of this request"},
    {"type", "TYPE",
     "of this type: message.sent, message.deferred, message.dead, message.cancelled, "
     "message.rejected, message.suppressed, message.unsubscribed, message.bounced, "
     "message.complained, request.split, request.done or request.cancelled"},
    {"after", "CURSOR",
     "after this cursor (a page's \"next\", as --json shows it); default: from the oldest"},
    {"limit", "N", "at most N per page (1..1000, default 100)"},
    {"follow", NULL,
     "keep polling for new events every second until interrupted (with --json: one event "
     "per line)"},
    {NULL, NULL, NULL}};

//  A cursor as the API hands them out: digits, '-', digits.
static int s_parse_cursor(const char *text)
{
    size_t txid = strspn(text, S_DIGITS);
    size_t id = text[txid] == '-' ? strspn(text + txid + 1, S_DIGITS) : 0;
    if (txid == 0 || txid > S_CURSOR_DIGITS_MAX || id == 0 || id > S_CURSOR_DIGITS_MAX ||
        text[txid + 1 + id]) {
        fq_cli_error("invalid value for --after: \"%s\" (a cursor: the \"next\" of a page, two "
                     "numbers joined by '-', as %s for the start)",
                     text, S_CURSOR_START);
        return FQ_CLI_EXIT_USAGE;
    }
    return 0;
}

//  One event, one line.
static void s_print_event(const json_t *event)
{
    static const char *const keys[] = {"at",      "type",      "tenant", "request",
                                       "message", "recipient", "detail"};
    enum { AT, TYPE, TENANT, REQUEST, MESSAGE, RECIPIENT, DETAIL, COUNT };
    char values[COUNT][FQ_CLI_VALUE_SIZE];
    for (size_t i = 0; i < COUNT; i++)
        fq_cli_format_value(values[i], sizeof values[i], json_object_get(event, keys[i]));
    printf("%s  %-*s  %s  %s  %s  %s  %s\n", values[AT], S_TYPE_WIDTH, values[TYPE], values[TENANT],
           values[REQUEST], values[MESSAGE], values[RECIPIENT], values[DETAIL]);
}

//  GET /v1/events with query, and after=cursor unless it is NULL. An
//  answer without its events and next is the server's fault. Returns the
//  exit code; answer is the caller's to reset.
static int s_page(fq_cli_t *cli, const fq_cli_query_t *query, const char *cursor,
                  fq_cli_answer_t *answer)
{
    char *path = fq_cli_query_path("/v1/events", query);
    if (path && cursor && fq_cli_url_add_query(&path, "after", cursor) != 0) {
        free(path);
        path = NULL;
    }
    if (!path) {
        fq_cli_error("out of memory");
        return FQ_CLI_EXIT_FAILED;
    }
    int rc = fq_cli_call(cli, "GET", path, NULL, NULL, answer);
    if (rc == FQ_CLI_EXIT_OK && (!json_is_array(json_object_get(answer->json, "events")) ||
                                 !json_is_string(json_object_get(answer->json, "next")))) {
        snprintf(answer->error, sizeof answer->error,
                 "the server answered GET %s without \"events\" and \"next\"", path);
        answer->status = 0;
        if (!cli->quiet)
            fq_cli_error("%s", answer->error);
        rc = FQ_CLI_EXIT_SERVER;
    }
    free(path);
    return rc;
}

//  Prints a page's events, each a line (or a JSON object with json).
static void s_print_events(const json_t *events, bool json)
{
    size_t i;
    json_t *event;
    json_array_foreach(events, i, event)
    {
        if (json)
            fq_cli_print_json(event);
        else
            s_print_event(event);
    }
    fflush(stdout);
}

static double s_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / S_NS_PER_S;
}

//  Follows the events from cursor (NULL: the oldest) until a signal ends
//  it: 0 then. A server that does not answer (fairqd restarting, its
//  database away) is waited for up to --timeout-s; any other failure ends
//  it with its code.
static int s_follow(fq_cli_t *cli, const fq_cli_query_t *query, const char *after, int64_t limit)
{
    char cursor[S_CURSOR_SIZE] = "";
    if (after)
        snprintf(cursor, sizeof cursor, "%s", after);
    //  No SA_RESTART: a signal ends the wait between polls at once
    struct sigaction action = {.sa_handler = s_on_signal}, old[2];
    static const int signals[] = {SIGINT, SIGTERM};
    for (size_t i = 0; i < sizeof signals / sizeof *signals; i++)
        sigaction(signals[i], &action, &old[i]);
    s_stop = 0;
    cli->quiet = true;
    double failing_since = -1;
    bool reported = false;
    int rc = FQ_CLI_EXIT_OK;
    fq_cli_answer_t answer = {0};
    while (!s_stop) {
        double now = s_now();
        rc = s_page(cli, query, *cursor ? cursor : NULL, &answer);
        if (s_stop)
            break;
        if (rc == FQ_CLI_EXIT_SERVER) {
            if (failing_since < 0)
                failing_since = now;
            if (now - failing_since >= (double)cli->timeout_s)
                break;
            if (!reported) {
                char text[FQ_CLI_HTTP_ERROR_SIZE];
                fq_cli_answer_describe(&answer, text, sizeof text);
                fq_cli_error("%s (trying again for %ld s)", text, cli->timeout_s);
                reported = true;
            }
        } else if (rc != FQ_CLI_EXIT_OK)
            break;
        size_t count = 0;
        if (rc == FQ_CLI_EXIT_OK) {
            failing_since = -1;
            reported = false;
            const json_t *events = json_object_get(answer.json, "events");
            s_print_events(events, cli->json);
            count = json_array_size(events);
            snprintf(cursor, sizeof cursor, "%s",
                     json_string_value(json_object_get(answer.json, "next")));
        }
        fq_cli_answer_reset(&answer);
        //  A full page: more may be waiting, ask again at once
        if (count < (size_t)limit) {
            struct timespec wait = {.tv_sec = S_FOLLOW_INTERVAL_S};
            while (!s_stop && nanosleep(&wait, &wait) != 0 && errno == EINTR)
                ;
        }
    }
    cli->quiet = false;
    for (size_t i = 0; i < sizeof signals / sizeof *signals; i++)
        sigaction(signals[i], &old[i], NULL);
    if (s_stop) {
        fq_cli_answer_reset(&answer);
        return FQ_CLI_EXIT_OK;
    }
    fq_cli_report(cli, &answer);
    fq_cli_answer_reset(&answer);
    return rc;
}

static int s_events(fq_cli_t *cli, const fq_cli_args_t *args)
{
    const char *tenant = fq_cli_arg(args, "tenant"), *request = fq_cli_arg(args, "request");
    const char *type = fq_cli_arg(args, "type"), *after = fq_cli_arg(args, "after");
    const char *limit_text = fq_cli_arg(args, "limit");
    int64_t n, limit = S_LIMIT_DEFAULT;
    if ((tenant && fq_cli_parse_tenant(tenant, "tenant")) ||
        (request && fq_cli_parse_id(request, "--request id", &n)) ||
        (type && fq_cli_parse_choice(type, "--type", fq_event_types)) ||
        (after && s_parse_cursor(after)) ||
        (limit_text && fq_cli_parse_int(limit_text, "--limit", 1, S_LIMIT_MAX, &limit)))
        return FQ_CLI_EXIT_USAGE;
    fq_cli_query_t query[] = {{"tenant", tenant},
                              {"request", request},
                              {"type", type},
                              {"limit", limit_text},
                              {NULL, NULL}};
    if (fq_cli_flag(args, "follow"))
        return s_follow(cli, query, after, limit);
    fq_cli_answer_t answer = {0};
    int rc = s_page(cli, query, after, &answer);
    if (rc == FQ_CLI_EXIT_OK && cli->json)
        fq_cli_print_raw(&answer);
    else if (rc == FQ_CLI_EXIT_OK) {
        const json_t *events = json_object_get(answer.json, "events");
        s_print_events(events, false);
        if (json_array_size(events) == (size_t)limit)
            fprintf(stderr, "(more: --after %s, or --follow)\n",
                    json_string_value(json_object_get(answer.json, "next")));
    }
    fq_cli_answer_reset(&answer);
    return rc;
}

const fq_cli_command_t fq_cli_cmd_events = {
    .name = "events",
    .usage = "[--tenant NAME] [--request ID] [--type TYPE] [--after CURSOR] [--limit N] "
             "[--follow]",
    .summary = "what happened to messages and requests, oldest first",
    .description =
        "One line per event: its time, type, tenant, request, message, recipient and detail\n"
        "(\"-\" for none), oldest first. An event of a transaction still running shows once it\n"
        "ends, after those read before: a poll from a page's cursor misses none. --follow\n"
        "starts at --after CURSOR (or the oldest) and goes on until interrupted (Ctrl-C:\n"
        "exit 0); while fairqd cannot be reached it keeps trying for --timeout-s N seconds,\n"
        "then exits 5.",
    .options = s_options,
    .min_args = 0,
    .max_args = 0,
    .run = s_events};
