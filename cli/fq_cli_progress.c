/*  fq_cli_progress.c — a request's progress, rate and time left. */
#include "fq_cli_progress.h"
#include "fq_cli_table.h"
#include <stdio.h>
#include <string.h>

//  The bar's length is what the width leaves, within these bounds; below
//  the shortest, no bar at all
#define S_BAR_MIN 10
#define S_BAR_MAX 50

//  Brackets and the space after them
#define S_BAR_FRAME 3

#define S_PERCENT 100

//  Room for the text beside the bar, and for an ETA
#define S_INFO_SIZE 256
#define S_ETA_SIZE  32

//  The statuses after which a request changes no more (API.md)
static const char *const s_final[] = {"done", "cancelled", "rejected", NULL};

void fq_cli_progress_init(fq_cli_progress_t *self)
{
    memset(self, 0, sizeof *self);
}

static int64_t s_count(const json_t *request, const char *key)
{
    return json_integer_value(json_object_get(request, key));
}

int fq_cli_progress_update(fq_cli_progress_t *self, double now, const json_t *request)
{
    const char *status = json_string_value(json_object_get(request, "status"));
    if (!status || !json_is_integer(json_object_get(request, "id")))
        return -1;
    self->id = s_count(request, "id");
    snprintf(self->status, sizeof self->status, "%s", status);
    self->total = s_count(request, "total");
    self->pending = s_count(request, "pending");
    self->inflight = s_count(request, "inflight");
    self->sent = s_count(request, "sent");
    self->failed = s_count(request, "failed");
    self->dead = s_count(request, "dead");
    self->cancelled = s_count(request, "cancelled");
    self->rejected = s_count(request, "rejected");

    //  Samples older than the window go, but two stay, so that a slow
    //  poll still gives a rate
    if (self->nsamples == FQ_CLI_PROGRESS_SAMPLES) {
        memmove(self->samples, self->samples + 1, (self->nsamples - 1) * sizeof *self->samples);
        self->nsamples--;
    }
    self->samples[self->nsamples++] =
        (fq_cli_progress_sample_t){.t = now, .handled = self->sent + self->dead};
    size_t drop = 0;
    while (self->nsamples - drop > 2 && self->samples[drop + 1].t <= now - FQ_CLI_PROGRESS_WINDOW_S)
        drop++;
    if (drop) {
        memmove(self->samples, self->samples + drop,
                (self->nsamples - drop) * sizeof *self->samples);
        self->nsamples -= drop;
    }
    return 0;
}

double fq_cli_progress_rate(const fq_cli_progress_t *self)
{
    if (self->nsamples < 2)
        return 0;
    const fq_cli_progress_sample_t *first = &self->samples[0];
    const fq_cli_progress_sample_t *last = &self->samples[self->nsamples - 1];
    double span = last->t - first->t;
    if (span <= 0 || last->handled < first->handled)
        return 0;
    return (double)(last->handled - first->handled) / span;
}

double fq_cli_progress_eta(const fq_cli_progress_t *self)
{
    double rate = fq_cli_progress_rate(self);
    if (fq_cli_progress_finished(self))
        return 0;
    if (rate <= 0)
        return -1;
    return (double)(self->pending + self->failed) / rate;
}

bool fq_cli_progress_finished(const fq_cli_progress_t *self)
{
    for (size_t i = 0; s_final[i]; i++)
        if (strcmp(self->status, s_final[i]) == 0)
            return true;
    return false;
}

bool fq_cli_progress_succeeded(const fq_cli_progress_t *self)
{
    return strcmp(self->status, "done") == 0 && self->dead == 0 && self->cancelled == 0 &&
           self->rejected == 0;
}

//  Handled for the bar: everything that will not be sent again
static int64_t s_handled(const fq_cli_progress_t *self)
{
    return self->sent + self->dead + self->cancelled + self->rejected;
}

void fq_cli_progress_bar(const fq_cli_progress_t *self, char *text, size_t size, int width)
{
    int64_t handled = s_handled(self);
    int percent = self->total > 0 ? (int)(handled * S_PERCENT / self->total) : 0;
    char eta[S_ETA_SIZE] = "-";
    double seconds = fq_cli_progress_eta(self);
    if (seconds >= 0)
        fq_cli_format_age(eta, sizeof eta, seconds);
    char info[S_INFO_SIZE];
    int len =
        snprintf(info, sizeof info,
                 "%3d%%  sent %lld  failed %lld  dead %lld  pending %lld  %.1f/s  ETA %s  %s",
                 percent, (long long)self->sent, (long long)self->failed, (long long)self->dead,
                 (long long)self->pending, fq_cli_progress_rate(self), eta, self->status);
    int bar = width - len - S_BAR_FRAME;
    if (bar > S_BAR_MAX)
        bar = S_BAR_MAX;
    if (bar < S_BAR_MIN) {
        snprintf(text, size, "%.*s", width > 0 ? width : 0, info);
        return;
    }
    int filled = self->total > 0 ? (int)(handled * bar / self->total) : 0;
    if (filled > bar)
        filled = bar;
    char line[S_BAR_MAX + 1];
    memset(line, '#', (size_t)filled);
    memset(line + filled, '-', (size_t)(bar - filled));
    line[bar] = 0;
    snprintf(text, size, "[%s] %s", line, info);
}

void fq_cli_progress_line(const fq_cli_progress_t *self, char *text, size_t size)
{
    int len = snprintf(text, size,
                       "request %lld %s: %lld/%lld handled, sent %lld, failed %lld, dead %lld, "
                       "pending %lld",
                       (long long)self->id, self->status, (long long)s_handled(self),
                       (long long)self->total, (long long)self->sent, (long long)self->failed,
                       (long long)self->dead, (long long)self->pending);
    if (len < 0 || (size_t)len >= size)
        return;
    //  Shown only when there are some, as they are rare
    if (self->cancelled)
        len += snprintf(text + len, size - (size_t)len, ", cancelled %lld",
                        (long long)self->cancelled);
    if (self->rejected && len >= 0 && (size_t)len < size)
        snprintf(text + len, size - (size_t)len, ", rejected %lld", (long long)self->rejected);
}
