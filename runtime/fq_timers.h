/*  fq_timers.h — an actor's timers: a min-heap ordered by deadline (internal).

    One heap serves user timers, ask time-outs and restart back-offs, so an
    actor's poll waits exactly until its next deadline. Cancelling marks
    the timer and the heap drops it when it comes up: O(log n) for all.
*/
#ifndef FQ_TIMERS_H
#define FQ_TIMERS_H

#include <stdbool.h>
#include <stdint.h>

typedef struct fq_timer {
    int id;
    int kind;         //  Caller's tag for what the timer is for
    int64_t deadline; //  Monotonic ms
    int interval_ms;  //  0 for a one-shot timer
    bool cancelled;
    void *payload; //  Freed with payload_free when the timer is freed
    void (*payload_free)(void *payload);
} fq_timer_t;

typedef struct fq_timers fq_timers_t;

fq_timers_t *fq_timers_new(void);
void fq_timers_destroy(fq_timers_t **self_p);

//  Adds a timer due at now + delay_ms, repeating every interval_ms if
//  that is > 0. Takes payload. Returns its id (> 0) or FQ_ENOMEM.
int fq_timers_add(fq_timers_t *self, int64_t now, int delay_ms, int interval_ms, int kind,
                  void *payload, void (*payload_free)(void *payload));

//  Cancels the timer with id; unknown or fired ids are ignored.
void fq_timers_cancel(fq_timers_t *self, int id);

//  Milliseconds until the next deadline (0 if one is due), -1 if none.
long fq_timers_timeout(fq_timers_t *self, int64_t now);

//  The next due timer, or NULL. A periodic timer stays scheduled and is
//  still owned by the heap; a one-shot timer is handed to the caller, who
//  frees it with fq_timer_free.
fq_timer_t *fq_timers_pop_due(fq_timers_t *self, int64_t now);

void fq_timer_free(fq_timer_t **timer_p);

#endif
