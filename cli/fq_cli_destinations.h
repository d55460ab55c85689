/*  fq_cli_destinations.h — each destination as fairq top shows it, read
    from fairqd's /metrics (fairq_destination_ready, _inflight,
    _effective_rate, _suspended_seconds and _state, one sample per
    destination: api/API.md, GET /metrics).

    top shows only the destinations that are not idle: those with messages
    ready or in flight, or not open (throttled, suspended). An idle one is
    most of them, most of the time, and says nothing.
*/
#ifndef FQ_CLI_DESTINATIONS_H
#define FQ_CLI_DESTINATIONS_H

#include "fq_limits.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

//  Room for a state's name ("suspended") and its NUL; a longer one is cut.
#define FQ_CLI_DESTINATION_STATE_SIZE 16

typedef struct {
    char name[FQ_DESTINATION_NAME_SIZE];
    char state[FQ_CLI_DESTINATION_STATE_SIZE]; //  "open" until its state sample says another
    int64_t ready, inflight;
    double effective_rate; //  Messages a second; < 0: no limit (+Inf)
    double suspended_s;    //  Seconds of suspension left
} fq_cli_destination_t;

//  The destinations of a /metrics text (NUL-terminated), in the order
//  they first appear, into *out (allocated; the caller frees it), *count
//  of them. Samples that do not parse are skipped. Returns 0, or -1 when
//  out of memory (then *out is NULL).
int fq_cli_destinations_parse(const char *text, fq_cli_destination_t **out, size_t *count);

//  True when destination is open with nothing ready nor in flight.
bool fq_cli_destination_idle(const fq_cli_destination_t *destination);

#endif
