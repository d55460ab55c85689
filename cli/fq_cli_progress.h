/*  fq_cli_progress.h — the progress of one request, for `status --watch`:
    its counters, the delivery rate over the last seconds, the time left,
    and the two ways to show them (a bar redrawn in place on a terminal, a
    line per change elsewhere).

    Pure logic: the caller fetches the request object and says when; so it
    is tested without a server or a clock.
*/
#ifndef FQ_CLI_PROGRESS_H
#define FQ_CLI_PROGRESS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

//  The rate is measured over this window: long enough to smooth the
//  batches in which acks arrive, short enough to follow a change of pace
#define FQ_CLI_PROGRESS_WINDOW_S 10.0

//  Samples kept for the window (polls at 0.1 s at the fastest)
#define FQ_CLI_PROGRESS_SAMPLES 128

//  Longest status word of the API ("splitting", "cancelled") and its NUL
#define FQ_CLI_PROGRESS_STATUS_SIZE 16

typedef struct {
    double t;        //  Seconds, any origin
    int64_t handled; //  sent + dead at t
} fq_cli_progress_sample_t;

typedef struct {
    int64_t id;
    char status[FQ_CLI_PROGRESS_STATUS_SIZE];
    int64_t total, pending, inflight, sent, failed, dead, cancelled, rejected;
    fq_cli_progress_sample_t samples[FQ_CLI_PROGRESS_SAMPLES];
    size_t nsamples;
} fq_cli_progress_t;

void fq_cli_progress_init(fq_cli_progress_t *self);

//  Takes the request object (API.md) seen at time now (seconds). Returns
//  0, or -1 when request is not a request object (nothing changes).
int fq_cli_progress_update(fq_cli_progress_t *self, double now, const json_t *request);

//  Messages handled (sent or dead) per second over the window; 0 until
//  two samples span some time.
double fq_cli_progress_rate(const fq_cli_progress_t *self);

//  Seconds until pending and failed messages are handled at that rate; a
//  negative number when unknown (no rate yet).
double fq_cli_progress_eta(const fq_cli_progress_t *self);

//  True once the request is done, cancelled or rejected: it changes no
//  more.
bool fq_cli_progress_finished(const fq_cli_progress_t *self);

//  True when it finished with every recipient sent: done, and no dead,
//  cancelled or rejected ones.
bool fq_cli_progress_succeeded(const fq_cli_progress_t *self);

//  The terminal's line, at most width characters:
//  "[#######-------]  45%  sent 450  failed 2  dead 0  pending 548  120.5/s  ETA 4s  active"
//  (the bar is left out when the width is too small for it).
void fq_cli_progress_bar(const fq_cli_progress_t *self, char *text, size_t size, int width);

//  The line printed when output is not a terminal; it changes only when
//  the status or a counter does (no rate), so that one is printed per
//  change: "request 42 active: 450/1000 handled, sent 450, failed 2, ..."
void fq_cli_progress_line(const fq_cli_progress_t *self, char *text, size_t size);

#endif
