/*  fq_lease_keeper.h — keeps, or waits for, the leader's lease.

    fairqd's main thread calls fq_lease_keeper_step whenever the step says
    to: a leader renews its lease at half its length; a standby
    looks at it often enough to take over soon after it ran out (or at
    once after a leader resigned). What it learns goes into the shared
    fq_lease_t (who leads, and whether this instance may dispatch) and the
    log (every change of leader, once).

    A renewal that fails for want of the database is tried again at the
    next step; meanwhile the lease runs out locally and dispatching stops
    (fq_lease.h). A leader whose renewal is refused was deposed: it must
    stop, and start again as a standby, since everything its pipeline holds
    in memory was built under an epoch that is over.
*/
#ifndef FQ_LEASE_KEEPER_H
#define FQ_LEASE_KEEPER_H

#include "fq_lease.h"
#include "fq_store.h"

typedef struct fq_lease_keeper fq_lease_keeper_t;

typedef enum {
    FQ_LEASE_STANDBY, //  Another instance leads, or none may yet
    FQ_LEASE_ELECTED, //  This instance has just taken over: start the pipeline
    FQ_LEASE_LEADING, //  This instance leads (its lease renewed, or being retried)
    FQ_LEASE_DEPOSED, //  This instance led and another has taken over: stop
} fq_lease_state_t;

//  conninfo: the database (copied); lease: written by the steps
//  (borrowed); lease_ms: the lease's length. NULL when out of memory.
fq_lease_keeper_t *fq_lease_keeper_new(const char *conninfo, fq_lease_t *lease, int lease_ms);
void fq_lease_keeper_destroy(fq_lease_keeper_t **self_p);

//  One look at the lease: renews it, or tries to take it over. Returns
//  what this instance is now, and in *next_ms when to look again.
fq_lease_state_t fq_lease_keeper_step(fq_lease_keeper_t *self, int *next_ms);

//  Gives the lease up, if this instance leads, so that a standby takes
//  over without waiting for it to run out. For a clean stop, once the
//  pipeline has written everything it will.
void fq_lease_keeper_resign(fq_lease_keeper_t *self);

#endif
