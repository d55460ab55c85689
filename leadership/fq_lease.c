/*  fq_lease.c — what one fairqd knows of leadership (see fq_lease.h). */
#include "fq_lease.h"
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct fq_lease {
    char holder[FQ_LEADER_HOLDER_SIZE];
    //  Read on every dispatch, so atomics rather than the lock
    _Atomic int64_t epoch;         //  Ours while we lead, 0 before
    _Atomic int64_t held_until_ms; //  Monotonic; 0: not held
    pthread_mutex_t lock;          //  Guards the rest
    bool known;
    int64_t leader_epoch;
    char leader[FQ_LEADER_HOLDER_SIZE];
    int64_t leader_since_ms;
};

fq_lease_t *fq_lease_new(const char *holder)
{
    fq_lease_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    snprintf(self->holder, sizeof self->holder, "%s", holder);
    pthread_mutex_init(&self->lock, NULL);
    return self;
}

void fq_lease_destroy(fq_lease_t **self_p)
{
    fq_lease_t *self = *self_p;
    if (!self)
        return;
    pthread_mutex_destroy(&self->lock);
    free(self);
    *self_p = NULL;
}

const char *fq_lease_holder(const fq_lease_t *self)
{
    return self->holder;
}

int64_t fq_lease_now_ms(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

void fq_lease_hold(fq_lease_t *self, int64_t epoch, int64_t held_until_ms)
{
    atomic_store(&self->epoch, epoch);
    atomic_store(&self->held_until_ms, held_until_ms);
}

bool fq_lease_held(const fq_lease_t *self)
{
    return fq_lease_now_ms() < atomic_load(&self->held_until_ms);
}

int64_t fq_lease_epoch(const fq_lease_t *self)
{
    return atomic_load(&self->epoch);
}

void fq_lease_observe(fq_lease_t *self, int64_t epoch, const char *holder, int64_t since_ms)
{
    pthread_mutex_lock(&self->lock);
    self->known = true;
    self->leader_epoch = epoch;
    snprintf(self->leader, sizeof self->leader, "%s", holder);
    self->leader_since_ms = since_ms;
    pthread_mutex_unlock(&self->lock);
}

void fq_lease_view(const fq_lease_t *self, fq_lease_view_t *out)
{
    fq_lease_t *lease = (fq_lease_t *)self; //  The lock only: nothing changes
    pthread_mutex_lock(&lease->lock);
    *out = (fq_lease_view_t){
        .known = self->known, .epoch = self->leader_epoch, .since_ms = self->leader_since_ms};
    snprintf(out->holder, sizeof out->holder, "%s", self->leader);
    pthread_mutex_unlock(&lease->lock);
    int64_t mine = fq_lease_epoch(self);
    out->leading = mine > 0 && mine == out->epoch;
    out->held = out->leading && fq_lease_held(self);
}
