/*  fq_lease.h — what one fairqd knows of leadership, shared by its threads.

    Several fairqd may run against one database; one of them leads: it
    alone splits, schedules and dispatches (docs/operations.md, "Several
    fairqd"). fairqd's lease keeper (fairqd/fq_lease_keeper.h) renews the
    lease in PostgreSQL and writes here what it learns; the scheduler and
    the dispatcher read fq_lease_held before every dispatch, the HTTP API
    and the metrics read fq_lease_view.

    Held means: the last renewal that succeeded was sent less than the
    local validity ago, by this host's monotonic clock. The local validity
    is shorter than the lease the database grants from the renewal's own
    start, so a leader whose renewals stop (frozen, cut off, its database
    gone) stops dispatching before any standby may take over: a leader
    that wakes from SIGSTOP after its lease ran out dispatches nothing more
    than what its senders already had in their hands. Thread-safe.
*/
#ifndef FQ_LEASE_H
#define FQ_LEASE_H

#include "fq_limits.h"
#include <stdbool.h>
#include <stdint.h>

typedef struct fq_lease fq_lease_t;

//  Who leads, as this instance last saw it.
typedef struct {
    bool known;    //  The lease was read at least once
    bool leading;  //  This instance leads (it may not hold the lease right now)
    bool held;     //  ... and holds it now: it may dispatch
    int64_t epoch; //  The current leader's epoch
    char holder[FQ_LEADER_HOLDER_SIZE]; //  The current leader's name ("" if none yet)
    int64_t since_ms;                   //  When it took over, Unix ms
} fq_lease_view_t;

//  holder: this instance's name ("name@host:pid"), cut to fit. NULL when
//  out of memory.
fq_lease_t *fq_lease_new(const char *holder);
void fq_lease_destroy(fq_lease_t **self_p);

//  This instance's name.
const char *fq_lease_holder(const fq_lease_t *self);

//  The monotonic clock, in ms: what held_until is measured in.
int64_t fq_lease_now_ms(void);

//  This instance leads at epoch and may dispatch until held_until_ms.
void fq_lease_hold(fq_lease_t *self, int64_t epoch, int64_t held_until_ms);

//  Whether this instance may dispatch now.
bool fq_lease_held(const fq_lease_t *self);

//  This instance's epoch while it leads, 0 before.
int64_t fq_lease_epoch(const fq_lease_t *self);

//  Records who leads (read from the database), for fq_lease_view.
void fq_lease_observe(fq_lease_t *self, int64_t epoch, const char *holder, int64_t since_ms);

//  Who leads, and whether this instance does and holds the lease now.
void fq_lease_view(const fq_lease_t *self, fq_lease_view_t *out);

#endif
