/*  fq_cli_watch.c — following a request to its end (status --watch,
    submit --watch): poll it, show its progress (fq_cli_progress.h), and
    say how it ended in the exit code.

    On a terminal one line is redrawn in place: a bar, the counters, the
    rate and the time left. Elsewhere (a pipe, a log, a CI job) a line is
    printed each time the status or a counter changes, so a log shows the
    request's course without a line per poll. With --json, nothing until
    the end, then the final request object.
*/
#include "fq_cli_commands.h"
#include "fq_cli_progress.h"
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

//  A terminal's width when it does not say
#define S_DEFAULT_COLUMNS 80

//  ECMA-48: erase from the cursor to the end of the line
#define S_ERASE_LINE "\033[K"

#define S_PATH_SIZE 128
#define S_LINE_SIZE 512
#define S_NS_PER_S  1e9

static double s_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / S_NS_PER_S;
}

static void s_sleep(double seconds)
{
    struct timespec ts = {.tv_sec = (time_t)seconds,
                          .tv_nsec = (long)((seconds - floor(seconds)) * S_NS_PER_S)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static int s_columns(void)
{
    struct winsize ws;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
        return ws.ws_col;
    return S_DEFAULT_COLUMNS;
}

int fq_cli_watch(fq_cli_t *cli, int64_t id, double interval_s)
{
    bool tty = !cli->json && isatty(STDOUT_FILENO);
    char path[S_PATH_SIZE], line[S_LINE_SIZE], last[S_LINE_SIZE] = "";
    fq_cli_request_path(path, sizeof path, "requests", id, NULL);
    fq_cli_progress_t progress;
    fq_cli_progress_init(&progress);
    fq_cli_answer_t answer = {0};
    fq_cli_answer_reset(&answer);
    //  When fairqd restarts or its database goes away for a moment, the
    //  watch waits for it rather than ending: up to --timeout-s
    double failing_since = -1;
    bool drawn = false, reported = false;
    int rc;
    cli->quiet = true;
    while (true) {
        double now = s_now();
        rc = fq_cli_call(cli, "GET", path, NULL, NULL, &answer);
        if (rc == FQ_CLI_EXIT_SERVER) {
            if (failing_since < 0)
                failing_since = now;
            if (now - failing_since >= (double)cli->timeout_s)
                break;
            if (!reported) {
                //  Below the bar, which then starts again on a line of its own
                if (drawn) {
                    putchar('\n');
                    fflush(stdout);
                    drawn = false;
                }
                char text[S_LINE_SIZE];
                fq_cli_answer_describe(&answer, text, sizeof text);
                fq_cli_error("%s (trying again for %ld s)", text, cli->timeout_s);
                reported = true;
            }
            s_sleep(interval_s);
            continue;
        }
        if (rc != FQ_CLI_EXIT_OK)
            break;
        failing_since = -1;
        reported = false;
        if (fq_cli_progress_update(&progress, now, answer.json) != 0) {
            snprintf(answer.error, sizeof answer.error,
                     "the server answered GET %s with something that is not a request", path);
            answer.status = 0;
            rc = FQ_CLI_EXIT_SERVER;
            break;
        }
        if (tty) {
            //  One character short of the width: a line that fills the
            //  terminal would move the cursor to the next one
            fq_cli_progress_bar(&progress, line, sizeof line, s_columns() - 1);
            //  Back to the start of the line, the bar, and erase what a
            //  longer line before it left
            printf("\r%s%s", line, S_ERASE_LINE);
            fflush(stdout);
            drawn = true;
        } else if (!cli->json) {
            fq_cli_progress_line(&progress, line, sizeof line);
            if (strcmp(line, last) != 0) {
                puts(line);
                fflush(stdout);
                snprintf(last, sizeof last, "%s", line);
            }
        }
        if (fq_cli_progress_finished(&progress))
            break;
        s_sleep(interval_s);
    }
    cli->quiet = false;
    if (drawn)
        putchar('\n');
    if (rc != FQ_CLI_EXIT_OK) {
        fq_cli_report(cli, &answer);
        fq_cli_answer_reset(&answer);
        return rc;
    }
    if (cli->json)
        fq_cli_print_raw(&answer);
    else if (tty)
        fq_cli_print_request_line(answer.json);
    fq_cli_answer_reset(&answer);
    if (fq_cli_progress_succeeded(&progress))
        return FQ_CLI_EXIT_OK;
    fflush(stdout);
    char hint[S_LINE_SIZE] = "";
    if (progress.rejected > 0)
        snprintf(hint, sizeof hint, " (\"%s rejects %lld\" shows the rejected)", FQ_CLI_PROGRAM,
                 (long long)id);
    fq_cli_error("request %lld %s with %lld dead, %lld cancelled and %lld rejected of %lld%s",
                 (long long)id, progress.status, (long long)progress.dead,
                 (long long)progress.cancelled, (long long)progress.rejected,
                 (long long)progress.total, hint);
    return FQ_CLI_EXIT_FAILED;
}
