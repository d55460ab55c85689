/*  fq_lease_keeper.c — keeps, or waits for, the leader's lease (see
    fq_lease_keeper.h and migration 0009). */
#include "fq_lease_keeper.h"
#include "fq_error.h"
#include "fq_log.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

//  A leader renews at half the lease (as a DHCP client does): a renewal
//  that fails (a slow statement, a reconnect) is tried again every sixth
//  of a lease, twice more before the leader stops trusting its lease. The
//  time a standby waits after a leader died is what was left of its lease:
//  renewing more often would leave more of it (every third of a lease, 2
//  to 3 s of the default 3 s, 2.5 s on average; at half, 1.5 to 3 s).
#define S_RENEWALS_PER_LEASE 2
//  A standby looks six times per lease length: it takes over at most a
//  sixth of a lease after the lease ran out, or after a leader resigned.
#define S_LOOKS_PER_LEASE 6
//  The part of the lease a leader trusts itself with, in tenths: it stops
//  dispatching a tenth of the lease before a standby may take over, which
//  covers any difference of pace between this host's clock and the
//  database's.
#define S_HELD_TENTHS 9

#define S_ERROR_MAX 1024

struct fq_lease_keeper {
    char *conninfo;
    fq_store_t *store; //  NULL until the first connection succeeds
    fq_lease_t *lease;
    int lease_ms;
    int64_t epoch;         //  Ours while we lead, 0 as a standby
    int64_t seen_epoch;    //  The epoch last logged, to log each change once
    int64_t last_renewal;  //  Monotonic ms of the last renewal that held
    bool warned_unrenewed; //  Logged that the lease is not being renewed
    bool deposed;          //  Another instance took the lease over from us
};

fq_lease_keeper_t *fq_lease_keeper_new(const char *conninfo, fq_lease_t *lease, int lease_ms)
{
    fq_lease_keeper_t *self = calloc(1, sizeof *self);
    if (!self || !(self->conninfo = strdup(conninfo))) {
        free(self);
        return NULL;
    }
    self->lease = lease;
    self->lease_ms = lease_ms;
    self->seen_epoch = -1;
    return self;
}

void fq_lease_keeper_destroy(fq_lease_keeper_t **self_p)
{
    fq_lease_keeper_t *self = *self_p;
    if (!self)
        return;
    fq_store_destroy(&self->store);
    free(self->conninfo);
    free(self);
    *self_p = NULL;
}

//  A connected store, or NULL (logged) while the database cannot be reached.
static fq_store_t *s_store(fq_lease_keeper_t *self)
{
    if (self->store && fq_store_connected(self->store))
        return self->store;
    if (self->store) {
        if (fq_store_reconnect(self->store) == 0)
            return self->store;
        fq_log(FQ_LOG_DEBUG, "leadership: %s", fq_store_error(self->store));
        return NULL;
    }
    char error[S_ERROR_MAX];
    self->store = fq_store_new_named(self->conninfo, "fairq lease", error, sizeof error);
    if (!self->store)
        fq_log(FQ_LOG_DEBUG, "leadership: %s", error);
    return self->store;
}

//  Unix time in ms as "2025-01-02 03:04:05 UTC", for the log.
static void s_format_time(int64_t unix_ms, char *out, size_t size)
{
    time_t seconds = (time_t)(unix_ms / 1000);
    struct tm tm;
    gmtime_r(&seconds, &tm);
    strftime(out, size, "%Y-%m-%d %H:%M:%S UTC", &tm);
}

//  Logs a change of leader, once per epoch.
static void s_log_leader(fq_lease_keeper_t *self, const fq_leader_t *leader)
{
    if (leader->epoch == self->seen_epoch)
        return;
    self->seen_epoch = leader->epoch;
    char since[64];
    s_format_time(leader->since_ms, since, sizeof since);
    if (leader->epoch == 0 || !leader->holder[0])
        fq_log(FQ_LOG_INFO, "leadership: no fairqd has led yet");
    else if (leader->leading)
        fq_log(FQ_LOG_INFO, "leadership: this fairqd (%s) leads since %s, epoch %lld",
               leader->holder, since, (long long)leader->epoch);
    else
        fq_log(FQ_LOG_INFO, "leadership: %s leads since %s, epoch %lld; this fairqd (%s) stands by",
               leader->holder, since, (long long)leader->epoch, fq_lease_holder(self->lease));
}

//  The lease could not be renewed: the database is away or refused. A
//  leader keeps its epoch and tries again; its lease runs out meanwhile.
static fq_lease_state_t s_unrenewed(fq_lease_keeper_t *self, int *next_ms)
{
    *next_ms = self->lease_ms / S_LOOKS_PER_LEASE;
    if (self->epoch == 0)
        return FQ_LEASE_STANDBY;
    int64_t since = fq_lease_now_ms() - self->last_renewal;
    if (!self->warned_unrenewed && !fq_lease_held(self->lease)) {
        self->warned_unrenewed = true;
        fq_log(FQ_LOG_WARNING,
               "leadership: lease not renewed for %lld ms (%s): dispatching paused until it is",
               (long long)since,
               self->store ? fq_store_error(self->store) : "no database connection");
    }
    return FQ_LEASE_LEADING;
}

fq_lease_state_t fq_lease_keeper_step(fq_lease_keeper_t *self, int *next_ms)
{
    fq_store_t *store = s_store(self);
    if (!store)
        return s_unrenewed(self, next_ms);
    int64_t sent = fq_lease_now_ms();
    fq_leader_t leader;
    int rc =
        fq_store_lead(store, fq_lease_holder(self->lease), self->epoch, self->lease_ms, &leader);
    if (rc) {
        fq_log(FQ_LOG_DEBUG, "leadership: %s", fq_store_error(store));
        return s_unrenewed(self, next_ms);
    }
    fq_lease_observe(self->lease, leader.epoch, leader.holder, leader.since_ms);
    s_log_leader(self, &leader);
    if (leader.leading) {
        //  Measured from the renewal's start, which is before the
        //  database's own: the local lease always ends first
        fq_lease_hold(self->lease, leader.epoch,
                      sent + (int64_t)self->lease_ms * S_HELD_TENTHS / 10);
        self->last_renewal = sent;
        if (self->warned_unrenewed)
            fq_log(FQ_LOG_INFO, "leadership: lease renewed; dispatching again");
        self->warned_unrenewed = false;
        *next_ms = self->lease_ms / S_RENEWALS_PER_LEASE;
        bool elected = self->epoch == 0;
        self->epoch = leader.epoch;
        return elected ? FQ_LEASE_ELECTED : FQ_LEASE_LEADING;
    }
    if (self->epoch) {
        fq_lease_hold(self->lease, self->epoch, 0);
        self->deposed = true;
        return FQ_LEASE_DEPOSED;
    }
    //  A standby looks again when the lease runs out, and anyway soon
    //  enough to notice a resignation
    int look = self->lease_ms / S_LOOKS_PER_LEASE;
    *next_ms = leader.ms_left < look ? leader.ms_left + 1 : look;
    return FQ_LEASE_STANDBY;
}

void fq_lease_keeper_resign(fq_lease_keeper_t *self)
{
    //  Not leading, or deposed (the lease is someone else's now)
    if (self->epoch == 0 || self->deposed)
        return;
    fq_lease_hold(self->lease, self->epoch, 0);
    fq_store_t *store = s_store(self);
    if (store && fq_store_resign(store, fq_lease_holder(self->lease), self->epoch) == 0)
        fq_log(FQ_LOG_INFO, "leadership: lease given up (epoch %lld)", (long long)self->epoch);
    else
        fq_log(FQ_LOG_WARNING,
               "leadership: could not give the lease up (%s); a standby takes over when it "
               "runs out",
               store ? fq_store_error(store) : "no database connection");
}
