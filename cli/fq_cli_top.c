/*  fq_cli_top.c — fairq top: a live per-tenant view of GET /v1/tenants
    (depth, in flight, rate, oldest due age, holds), redrawn in the terminal
    every interval until q or Ctrl-C.

    Two rates, each labelled with its window. The tenants' send_rate is
    fairqd's average over the last minute, "RATE/S (1m)": steady, but a
    minute late. The rate now, "RATE/S (6s)", comes from fairqd's
    counters of acked messages (GET /metrics), read at every refresh:
    the difference between the newest reading and the one a few
    refreshes before it (fq_cli_rates.h). /metrics needs an admin token
    (or fairqd's metrics_public): without it, only the minute's rate.
    The same reading gives the channels' lanes and the destinations: a
    line for each destination that is not idle (throttled, suspended, or
    with messages ready or in flight), busiest first, with the rate the
    scheduler shapes it to now. And each tenant's bounce and complaint
    rates of the last 24 hours, marked when above what bulk senders must
    stay under (fq_cli_tenant_rates.h): those decide whether its mail
    lands. They come from the same /metrics, and --once reads it once for
    them. And each tenant's delivery times, end to end and in the sender,
    median and 99th percentile, from its histograms' buckets between
    readings a minute apart (fq_cli_latency.h): only the live view reads
    twice, so --once leaves them out.

    At 100 columns the table fits with typical figures; on a terminal
    narrower than the table, WEIGHT and MAX (the tenant's settings, which
    fairq tenants shows) are left out first.

    The screen is drawn on the terminal's alternate screen, as top does,
    and each frame is written at once over the last one (cursor home, each
    line then "erase to its end", then "erase below"), so nothing flickers.
    The terminal is put back on every way out but SIGKILL. Without a
    terminal, or with --once or --json, one snapshot is printed.

    A server that cannot be reached for a moment is shown in the header
    and asked again at the next tick; an answer that will not change by
    waiting (401, 403, 404) ends top with its exit code.
*/
#include "fq_cli_args.h"
#include "fq_cli_commands.h"
#include "fq_cli_channels.h"
#include "fq_cli_destinations.h"
#include "fq_cli_latency.h"
#include "fq_cli_rates.h"
#include "fq_cli_table.h"
#include "fq_cli_tenant_rates.h"
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

//  Every 2 s unless told: as top does, quick enough to watch a backlog
//  drain, and a trifle for fairqd (one read of its in-memory view)
#define S_INTERVAL_S     2.0
#define S_INTERVAL_MIN_S 0.2
#define S_INTERVAL_MAX_S 3600.0

#define S_MS_PER_S 1000.0
#define S_NS_PER_S 1e9

//  The rate now is over at least this long, in whole refreshes (6 s at
//  the default 2 s): a few seconds show a change at once, and smooth out
//  the acks that senders send in batches
#define S_NOW_WINDOW_S 5.0

//  The delivery times are over at least a minute, in whole refreshes: a
//  p99 of a few seconds rests on too few deliveries of a quiet tenant.
//  At most this many readings are kept (a refresh of 0.2 s would keep
//  300): past them the window is shorter, and the help says so.
#define S_LATENCY_WINDOW_S     60.0
#define S_LATENCY_READINGS_MAX 60

//  The quantiles shown: the median and the tail
#define S_P50 0.5
#define S_P99 0.99

//  What the API's send_rate averages over (api/API.md)
#define S_MINUTE_LABEL "1m"

#define S_HEADER_SIZE 32

//  Below any interval's rounding error: 5 s / 0.2 s is 25 refreshes, not 26
#define S_ROUNDING 1e-9

//  Lines above the table (title, totals, blank) and below it (a "more"
//  line), for fitting the table in the terminal's height
#define S_HEADER_LINES 3
#define S_FOOTER_LINES 1

//  When the terminal does not say its height
#define S_DEFAULT_ROWS 24

#define S_LINE_SIZE 1024

//  Most destinations shown, a line each: the busiest, above the tenants
#define S_DESTINATION_LINES 5
#define S_TIME_SIZE         16
#define S_KEYS_SIZE         16

//  Terminal controls (ECMA-48 and xterm's alternate screen)
#define S_ALT_SCREEN_ON  "\033[?1049h"
#define S_ALT_SCREEN_OFF "\033[?1049l"
#define S_CURSOR_HIDE    "\033[?25l"
#define S_CURSOR_SHOW    "\033[?25h"
#define S_HOME           "\033[H"
#define S_ERASE_LINE     "\033[K"
#define S_ERASE_BELOW    "\033[J"

static volatile sig_atomic_t s_stop;

static void s_on_signal(int signum)
{
    //  SIGWINCH only interrupts the wait, so that the next frame fits
    if (signum != SIGWINCH)
        s_stop = 1;
}

static const fq_cli_option_t s_top_options[] = {
    {"interval-s", "N",
     "seconds between refreshes (default 2; 0.2..3600); the rate now is over the whole "
     "refreshes that make at least 5 s"},
    {"once", NULL, "print one snapshot and exit (what happens without a terminal)"},
    {NULL, NULL, NULL}};

//  Busiest first: by depth, then by name
static int s_by_depth(const void *a, const void *b)
{
    const json_t *x = *(const json_t *const *)a, *y = *(const json_t *const *)b;
    json_int_t dx = json_integer_value(json_object_get(x, "depth"));
    json_int_t dy = json_integer_value(json_object_get(y, "depth"));
    if (dx != dy)
        return dx > dy ? -1 : 1;
    const char *nx = json_string_value(json_object_get(x, "name"));
    const char *ny = json_string_value(json_object_get(y, "name"));
    return strcmp(nx ? nx : "", ny ? ny : "");
}

//  The rate now: where it comes from and its column's header
typedef struct {
    fq_cli_rates_t *rates; //  NULL: not shown (a snapshot, or no /metrics)
    char header[S_HEADER_SIZE];
    //  Each channel's lane, from the same reading of /metrics
    fq_cli_channel_t channels[FQ_CLI_CHANNELS_MAX];
    size_t nchannels;
    //  Each destination, from the same reading (owned)
    fq_cli_destination_t *destinations;
    size_t ndestinations;
    //  Each tenant's bounce and complaint rates of the last day, from the
    //  same reading (owned); their columns show once /metrics was read
    fq_cli_tenant_rates_t *tenant_rates;
    size_t ntenant_rates;
    bool tenant_rates_read;
    //  Each tenant's delivery histograms, from the same readings; NULL:
    //  not shown (a snapshot, or no /metrics)
    fq_cli_latency_t *latency;
} s_now_t;

//  Most columns of the table
#define S_COLUMNS_MAX 16

//  A rate for people, one decimal; "-" when not known (negative).
static void s_format_rate(char *text, size_t size, double rate)
{
    if (rate < 0)
        snprintf(text, size, "-");
    else
        snprintf(text, size, "%.1f", rate);
}

static void s_column(const char **headers, char *align, size_t *count, const char *header,
                     char side)
{
    headers[*count] = header;
    align[(*count)++] = side;
    align[*count] = 0;
}

//  The table of the tenants sorted. settings: with WEIGHT and MAX, the
//  tenant's settings rather than what it does now (fairq tenants shows
//  them), the first columns to go when the terminal is too narrow. With
//  now->rates, a column of the rate now before the minute's; with
//  now->tenant_rates_read, the bounce and complaint rates of the last
//  day at the end. NULL when out of memory.
static fq_cli_table_t *s_table(json_t *const *sorted, size_t count, const s_now_t *now,
                               bool settings)
{
    const char *headers[S_COLUMNS_MAX];
    char align[S_COLUMNS_MAX + 1];
    size_t n = 0;
    s_column(headers, align, &n, "TENANT", 'l');
    if (settings)
        s_column(headers, align, &n, "WEIGHT", 'r');
    s_column(headers, align, &n, "DEPTH", 'r');
    s_column(headers, align, &n, "IN FLIGHT", 'r');
    if (settings)
        s_column(headers, align, &n, "MAX", 'r');
    s_column(headers, align, &n, "FAILED", 'r');
    if (now->rates)
        s_column(headers, align, &n, now->header, 'r');
    s_column(headers, align, &n, "RATE/S (" S_MINUTE_LABEL ")", 'r');
    s_column(headers, align, &n, "OLDEST DUE", 'r');
    s_column(headers, align, &n, "OPEN", 'r');
    s_column(headers, align, &n, "UNSPLIT", 'r');
    if (now->latency) {
        s_column(headers, align, &n, "E2E p50/p99", 'r');
        s_column(headers, align, &n, "SEND p50/p99", 'r');
    }
    if (now->tenant_rates_read) {
        s_column(headers, align, &n, "BOUNCE", 'r');
        s_column(headers, align, &n, "COMPL", 'r');
    }
    fq_cli_table_t *table = fq_cli_table_new(headers, align);
    for (size_t i = 0; table && i < count; i++) {
        const json_t *tenant = sorted[i];
        const char *name = json_string_value(json_object_get(tenant, "name"));
        char text[FQ_CLI_VALUE_SIZE];
        //  An operator's hold (0024) shows at the name, where one looks
        if (json_is_true(json_object_get(tenant, "held"))) {
            snprintf(text, sizeof text, "%s (held)", name ? name : "?");
            fq_cli_table_add(table, text);
        } else
            fq_cli_table_add_json(table, json_object_get(tenant, "name"));
        if (settings)
            fq_cli_table_add_json(table, json_object_get(tenant, "weight"));
        fq_cli_table_add_json(table, json_object_get(tenant, "depth"));
        fq_cli_table_add_json(table, json_object_get(tenant, "inflight"));
        if (settings)
            fq_cli_table_add_json(table, json_object_get(tenant, "max_inflight"));
        fq_cli_table_add_json(table, json_object_get(tenant, "failed"));
        if (now->rates) {
            s_format_rate(text, sizeof text, name ? fq_cli_rates_get(now->rates, name) : -1);
            fq_cli_table_add(table, text);
        }
        fq_cli_table_add_json(table, json_object_get(tenant, "send_rate"));
        //  The work due now and not sent (a fairqd before 0024: the
        //  oldest unfinished request, paused and later ones too)
        const json_t *due = json_object_get(tenant, "oldest_due_age_s");
        fq_cli_format_age_value(text, sizeof text,
                                due ? due : json_object_get(tenant, "oldest_pending_age_s"));
        fq_cli_table_add(table, text);
        fq_cli_table_add_json(table, json_object_get(tenant, "open_requests"));
        fq_cli_table_add_json(table, json_object_get(tenant, "unsplit"));
        if (now->latency) {
            static const fq_cli_latency_of_t of[] = {FQ_CLI_LATENCY_OF_END_TO_END,
                                                     FQ_CLI_LATENCY_OF_DELIVERY};
            for (size_t k = 0; k < sizeof of / sizeof *of; k++) {
                fq_cli_latency_format(text, sizeof text,
                                      fq_cli_latency_get(now->latency, name, of[k], S_P50),
                                      fq_cli_latency_get(now->latency, name, of[k], S_P99));
                fq_cli_table_add(table, text);
            }
        }
        if (now->tenant_rates_read) {
            const fq_cli_tenant_rates_t *rates =
                fq_cli_tenant_rates_find(now->tenant_rates, now->ntenant_rates, name);
            fq_cli_format_bounce_rate(text, sizeof text, rates ? rates->bounce_rate : -1);
            fq_cli_table_add(table, text);
            fq_cli_format_complaint_rate(text, sizeof text, rates ? rates->complaint_rate : -1);
            fq_cli_table_add(table, text);
        }
    }
    return table;
}

//  The table of tenants, busiest first, at most max_rows of them, each
//  line ending with eol; then a line saying how many did not fit. Wider
//  than width (0: no limit), the table leaves out the tenants' settings.
static void s_print_table(FILE *out, const json_t *tenants, size_t max_rows, const char *eol,
                          const s_now_t *now, size_t width)
{
    size_t count = json_array_size(tenants);
    json_t **sorted = calloc(count ? count : 1, sizeof *sorted);
    for (size_t i = 0; sorted && i < count; i++)
        sorted[i] = json_array_get(tenants, i);
    if (sorted)
        qsort(sorted, count, sizeof *sorted, s_by_depth);
    fq_cli_table_t *table = sorted ? s_table(sorted, count, now, true) : NULL;
    if (table && width > 0 && fq_cli_table_width(table, max_rows) > width) {
        fq_cli_table_destroy(&table);
        table = s_table(sorted, count, now, false);
    }
    if (!table) {
        fprintf(out, "%s: out of memory%s", FQ_CLI_PROGRAM, eol);
        free(sorted);
        return;
    }
    fq_cli_table_print(table, out, max_rows, eol);
    if (count > max_rows)
        fprintf(out, "... and %zu more tenants%s", count - max_rows, eol);
    fq_cli_table_destroy(&table);
    free(sorted);
}

//  The totals over every tenant, each rate with its window.
static void s_print_totals(FILE *out, const json_t *tenants, const char *eol, const s_now_t *now)
{
    json_int_t depth = 0, inflight = 0, open = 0;
    double rate = 0, rate_now = 0;
    size_t i;
    json_t *tenant;
    json_array_foreach(tenants, i, tenant)
    {
        depth += json_integer_value(json_object_get(tenant, "depth"));
        inflight += json_integer_value(json_object_get(tenant, "inflight"));
        open += json_integer_value(json_object_get(tenant, "open_requests"));
        rate += json_number_value(json_object_get(tenant, "send_rate"));
        const char *name = json_string_value(json_object_get(tenant, "name"));
        double r = now->rates && name ? fq_cli_rates_get(now->rates, name) : -1;
        //  One tenant not known makes the total not known
        rate_now = r < 0 || rate_now < 0 ? -1 : rate_now + r;
    }
    fprintf(out, "%zu tenants  depth %lld  in flight %lld  ", json_array_size(tenants),
            (long long)depth, (long long)inflight);
    if (now->rates) {
        char text[FQ_CLI_VALUE_SIZE];
        s_format_rate(text, sizeof text, rate_now);
        //  "RATE/S (6s)" says the window: "(6s)"
        const char *window = strchr(now->header, '(');
        fprintf(out, "%s/s %s, ", text, window ? window : "");
    }
    fprintf(out, "%.1f/s (" S_MINUTE_LABEL ")  open requests %lld%s", rate, (long long)open, eol);
}

//  One line of channels, when fairqd has more than mail or a channel
//  waits: each with its messages ready, free credit and in flight.
//  Returns the lines written (0 or 1).
static int s_print_channels(FILE *out, const s_now_t *now, const char *eol)
{
    bool show = now->nchannels > 1;
    for (size_t i = 0; i < now->nchannels; i++)
        show = show || fq_cli_channel_waits(&now->channels[i]);
    if (!show)
        return 0;
    fprintf(out, "channels");
    for (size_t i = 0; i < now->nchannels; i++) {
        const fq_cli_channel_t *channel = &now->channels[i];
        char name[FQ_CLI_VALUE_SIZE];
        fq_cli_escape(name, sizeof name, channel->name);
        fprintf(out, "  %s: ready %lld, credit %lld, in flight %lld%s", name,
                (long long)channel->ready, (long long)channel->credit, (long long)channel->inflight,
                fq_cli_channel_waits(channel) ? " (waiting: no sender serves it)" : "");
    }
    fprintf(out, "%s", eol);
    return 1;
}

//  Busiest first: by messages ready, then in flight, then by name
static int s_by_ready(const void *a, const void *b)
{
    const fq_cli_destination_t *x = a, *y = b;
    if (x->ready != y->ready)
        return x->ready > y->ready ? -1 : 1;
    if (x->inflight != y->inflight)
        return x->inflight > y->inflight ? -1 : 1;
    return strcmp(x->name, y->name);
}

//  A line per destination that is not idle (busiest first, at most
//  S_DESTINATION_LINES; then how many more): its state, the rate it is
//  shaped to now, its messages ready and in flight. Returns the lines
//  written.
static int s_print_destinations(FILE *out, s_now_t *now, const char *eol)
{
    if (now->ndestinations > 1)
        qsort(now->destinations, now->ndestinations, sizeof *now->destinations, s_by_ready);
    int lines = 0;
    size_t busy = 0;
    for (size_t i = 0; i < now->ndestinations; i++) {
        const fq_cli_destination_t *d = &now->destinations[i];
        if (fq_cli_destination_idle(d) || busy++ >= S_DESTINATION_LINES)
            continue;
        char name[FQ_CLI_VALUE_SIZE], state[FQ_CLI_VALUE_SIZE], rate[FQ_CLI_VALUE_SIZE];
        fq_cli_escape(name, sizeof name, d->name);
        fq_cli_escape(state, sizeof state, d->state);
        if (d->effective_rate < 0)
            snprintf(rate, sizeof rate, "no rate limit");
        else
            snprintf(rate, sizeof rate, "%.1f/s", d->effective_rate);
        char left[FQ_CLI_VALUE_SIZE] = "";
        if (d->suspended_s > 0)
            fq_cli_format_age(left, sizeof left, d->suspended_s);
        fprintf(out, "destination %s: %s%s%s, %s, ready %lld, in flight %lld%s", name, state,
                *left ? " for " : "", left, rate, (long long)d->ready, (long long)d->inflight, eol);
        lines++;
    }
    if (busy > S_DESTINATION_LINES) {
        fprintf(out, "... and %zu more destinations not idle%s", busy - S_DESTINATION_LINES, eol);
        lines++;
    }
    return lines;
}

//  One frame of the live view, written at once. note, if any, follows
//  the title (why the rate now is not shown).
static void s_draw(const fq_cli_t *cli, const fq_cli_answer_t *answer, int rc, double interval,
                   s_now_t *now, const char *note)
{
    char *frame = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&frame, &size);
    if (!out)
        return;
    struct winsize ws = {0};
    bool size_known = ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0;
    int rows = size_known && ws.ws_row > 0 ? ws.ws_row : S_DEFAULT_ROWS;
    //  0: the terminal does not say, and the table keeps every column
    size_t width = size_known ? ws.ws_col : 0;
    char clock[S_TIME_SIZE];
    time_t seconds = time(NULL);
    struct tm tm;
    strftime(clock, sizeof clock, "%H:%M:%S", localtime_r(&seconds, &tm));
    char url[FQ_CLI_VALUE_SIZE];
    fq_cli_escape(url, sizeof url, cli->url);
    fprintf(out, "%sfairq top  %s  %s  every %gs  q: quit%s%s%s", S_HOME, url, clock, interval,
            note ? "  " : "", note ? note : "", S_ERASE_LINE "\n");
    const json_t *tenants = json_object_get(answer->json, "tenants");
    if (rc != FQ_CLI_EXIT_OK) {
        char text[S_LINE_SIZE], shown[FQ_CLI_VALUE_SIZE];
        fq_cli_answer_describe(answer, text, sizeof text);
        fq_cli_escape(shown, sizeof shown, text);
        fprintf(out, "%s (asking again)%s", shown, S_ERASE_LINE "\n");
    } else {
        s_print_totals(out, tenants, S_ERASE_LINE "\n", now);
        int lines = s_print_channels(out, now, S_ERASE_LINE "\n");
        lines += s_print_destinations(out, now, S_ERASE_LINE "\n");
        fprintf(out, "%s", S_ERASE_LINE "\n");
        int room = rows - S_HEADER_LINES - lines - S_FOOTER_LINES - 1;
        s_print_table(out, tenants, room > 0 ? (size_t)room : 0, S_ERASE_LINE "\n", now, width);
    }
    fprintf(out, "%s", S_ERASE_BELOW);
    fclose(out);
    fwrite(frame, 1, size, stdout);
    fflush(stdout);
    free(frame);
}

//  Waits up to interval seconds for a key; returns true when it was q.
static bool s_wait_key(bool keys, double interval)
{
    struct pollfd fd = {.fd = STDIN_FILENO, .events = POLLIN};
    int ms = (int)(interval * S_MS_PER_S);
    if (poll(&fd, keys ? 1 : 0, ms) <= 0)
        return false;
    char buffer[S_KEYS_SIZE];
    ssize_t n = read(STDIN_FILENO, buffer, sizeof buffer);
    for (ssize_t i = 0; i < n; i++)
        if (buffer[i] == 'q' || buffer[i] == 'Q')
            return true;
    //  Another key (space...) refreshes now
    return false;
}

//  A snapshot: the totals and the table, or the JSON as it came.
static int s_once(fq_cli_t *cli)
{
    fq_cli_answer_t answer = {0};
    int rc = fq_cli_call(cli, "GET", "/v1/tenants", NULL, NULL, &answer);
    if (rc == FQ_CLI_EXIT_OK) {
        if (cli->json)
            fq_cli_print_raw(&answer);
        else {
            //  One reading: the minute's rate only; and the day's bounce
            //  and complaint rates when /metrics may be read
            const json_t *tenants = json_object_get(answer.json, "tenants");
            s_now_t once = {0};
            fq_cli_answer_t metrics = {0};
            bool quiet = cli->quiet;
            cli->quiet = true;
            if (fq_cli_call_text(cli, "/metrics", &metrics) == FQ_CLI_EXIT_OK && metrics.body.data)
                once.tenant_rates_read =
                    fq_cli_tenant_rates_parse(metrics.body.data, &once.tenant_rates,
                                              &once.ntenant_rates) == 0;
            cli->quiet = quiet;
            fq_cli_answer_reset(&metrics);
            s_print_totals(stdout, tenants, "\n", &once);
            s_print_table(stdout, tenants, SIZE_MAX, "\n", &once, 0);
            free(once.tenant_rates);
        }
    }
    fq_cli_answer_reset(&answer);
    return rc;
}

static double s_monotonic(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / S_NS_PER_S;
}

//  Reads fairqd's counters into now->rates. When they cannot be had for
//  good (refused: a tenant token, or not fairqd's metrics), stops reading
//  them, drops the column and says why in *note; a server that does not
//  answer for a moment is asked again at the next refresh.
static void s_read_rates(fq_cli_t *cli, s_now_t *now, const char **note)
{
    if (!now->rates)
        return;
    fq_cli_answer_t metrics = {0};
    int rc = fq_cli_call_text(cli, "/metrics", &metrics);
    double at = s_monotonic();
    if (rc == FQ_CLI_EXIT_OK && fq_cli_rates_add(now->rates, at, metrics.body.data))
        rc = FQ_CLI_EXIT_FAILED;
    //  Out of memory: this reading is left out, the last ones stay
    if (rc == FQ_CLI_EXIT_OK && now->latency)
        fq_cli_latency_add(now->latency, at, metrics.body.data);
    if (rc == FQ_CLI_EXIT_OK) {
        now->nchannels =
            fq_cli_channels_parse(metrics.body.data, now->channels, FQ_CLI_CHANNELS_MAX);
        free(now->destinations);
        //  Out of memory: no destination lines this time
        fq_cli_destinations_parse(metrics.body.data, &now->destinations, &now->ndestinations);
        free(now->tenant_rates);
        now->tenant_rates_read = fq_cli_tenant_rates_parse(metrics.body.data, &now->tenant_rates,
                                                           &now->ntenant_rates) == 0;
    }
    if (rc != FQ_CLI_EXIT_OK && rc != FQ_CLI_EXIT_SERVER) {
        fq_cli_rates_destroy(&now->rates);
        fq_cli_latency_destroy(&now->latency);
        now->tenant_rates_read = false;
        *note = "(rate now needs /metrics: an admin token, or metrics_public)";
    }
    fq_cli_answer_reset(&metrics);
}

static int s_top(fq_cli_t *cli, const fq_cli_args_t *args)
{
    double interval = S_INTERVAL_S;
    const char *text = fq_cli_arg(args, "interval-s");
    if (text &&
        fq_cli_parse_seconds(text, "--interval-s", S_INTERVAL_MIN_S, S_INTERVAL_MAX_S, &interval))
        return FQ_CLI_EXIT_USAGE;
    if (fq_cli_flag(args, "once") || cli->json || !isatty(STDOUT_FILENO))
        return s_once(cli);

    //  Keys without Enter and without echo; Ctrl-C still signals
    struct termios saved, raw;
    bool keys = isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &saved) == 0;
    if (keys) {
        raw = saved;
        raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
        raw.c_cc[VMIN] = 0;
        raw.c_cc[VTIME] = 0;
        tcsetattr(STDIN_FILENO, TCSANOW, &raw);
    }
    //  No SA_RESTART: a signal ends the wait at once
    struct sigaction action = {.sa_handler = s_on_signal}, old[4];
    static const int signals[] = {SIGINT, SIGTERM, SIGHUP, SIGWINCH};
    for (size_t i = 0; i < sizeof signals / sizeof *signals; i++)
        sigaction(signals[i], &action, &old[i]);
    fputs(S_ALT_SCREEN_ON S_CURSOR_HIDE, stdout);

    //  The rate now spans as many refreshes as make S_NOW_WINDOW_S
    double intervals = ceil(S_NOW_WINDOW_S / interval - S_ROUNDING);
    s_now_t now = {.rates = fq_cli_rates_new((size_t)intervals + 1)};
    //  The delivery times span as many refreshes as make
    //  S_LATENCY_WINDOW_S, at most S_LATENCY_READINGS_MAX
    double latency_intervals = ceil(S_LATENCY_WINDOW_S / interval - S_ROUNDING);
    if (latency_intervals > S_LATENCY_READINGS_MAX)
        latency_intervals = S_LATENCY_READINGS_MAX;
    now.latency = fq_cli_latency_new((size_t)latency_intervals + 1);
    snprintf(now.header, sizeof now.header, "RATE/S (%gs)", intervals * interval);
    const char *note = now.rates ? NULL : "(out of memory for the rate now)";

    fq_cli_answer_t answer = {0};
    int rc = FQ_CLI_EXIT_OK;
    cli->quiet = true;
    while (!s_stop) {
        rc = fq_cli_call(cli, "GET", "/v1/tenants", NULL, NULL, &answer);
        //  Waiting will not change these: stop, and say why below
        if (rc != FQ_CLI_EXIT_OK && rc != FQ_CLI_EXIT_SERVER)
            break;
        if (rc == FQ_CLI_EXIT_OK)
            s_read_rates(cli, &now, &note);
        s_draw(cli, &answer, rc, interval, &now, note);
        if (s_wait_key(keys, interval))
            break;
    }
    cli->quiet = false;

    fputs(S_CURSOR_SHOW S_ALT_SCREEN_OFF, stdout);
    fflush(stdout);
    for (size_t i = 0; i < sizeof signals / sizeof *signals; i++)
        sigaction(signals[i], &old[i], NULL);
    if (keys)
        tcsetattr(STDIN_FILENO, TCSANOW, &saved);
    if (rc != FQ_CLI_EXIT_OK && rc != FQ_CLI_EXIT_SERVER)
        fq_cli_report(cli, &answer);
    else
        //  Quitting is a success, whatever the last refresh saw
        rc = FQ_CLI_EXIT_OK;
    fq_cli_answer_reset(&answer);
    fq_cli_rates_destroy(&now.rates);
    fq_cli_latency_destroy(&now.latency);
    free(now.destinations);
    free(now.tenant_rates);
    return rc;
}

const fq_cli_command_t fq_cli_cmd_top = {
    .name = "top",
    .usage = "[--interval-s N] [--once]",
    .summary = "live per-tenant view: depth, in flight, rate, oldest due age, holds, delivery "
               "times, bounce and complaint rates",
    .description =
        "Refreshes every interval until q or Ctrl-C; any other key refreshes at once.\n"
        "Busiest tenants (deepest backlog) first. Two rates, of messages acked a second:\n"
        "RATE/S (6s) is the rate now, over the last 6 s (the whole refreshes that make at\n"
        "least 5 s: 5 s at --interval-s 1, 10 s at --interval-s 10), from fairqd's counters\n"
        "(GET /metrics, read at each refresh; it needs an admin token or fairqd's\n"
        "metrics_public, and shows \"-\" until two readings are in); RATE/S (1m) is fairqd's\n"
        "average over the last minute. With /metrics, a line for each destination that is\n"
        "not idle (throttled, suspended, or with messages ready or in flight): its state,\n"
        "the rate it is shaped to now, its messages ready and in flight. Also with\n"
        "/metrics, BOUNCE and COMPL: each tenant's hard bounces and complaints over its\n"
        "mail of the last 24 hours, in percent (\"-\": nothing delivered in that time).\n"
        "\"!\" marks a rate above what bulk senders must stay under (complaints 0.3%, as\n"
        "Gmail and Yahoo require; bounces 2%), \"*\" complaints above the 0.1% they\n"
        "recommend. Also with /metrics, E2E p50/p99 and SEND p50/p99: each tenant's median\n"
        "and 99th percentile of its delivered messages' times, end to end (from when its\n"
        "request was due, accepted or its send_at, to the ack) and in the sender (from\n"
        "the hand-off to the ack), over the last minute (the whole refreshes that make at\n"
        "least 60 s, at most 60 of them; \"-\": nothing delivered in that time, or fewer\n"
        "than two readings). OLDEST DUE is the age of the tenant's oldest message that is\n"
        "due now and not sent: paused, held, scheduled and backing-off work is left out.\n"
        "\"(held)\" after a name: an operator holds the tenant (" FQ_CLI_PROGRAM " holds).\n"
        "On a terminal narrower than the table, WEIGHT and MAX are\n"
        "left out.\n"
        "Without a terminal, with --once or with --json, prints one snapshot, with the\n"
        "minute's rate only.",
    .options = s_top_options,
    .min_args = 0,
    .max_args = 0,
    .run = s_top};
