/*  fq_registry.h — the system-wide table of live actors (internal).

    Maps each path to an entry holding the actor's mailbox endpoint, its
    counters and its watchers. Threads look paths up only on a cache miss
    (see fq_outbox.h), so one mutex is enough. Entries are reference
    counted: a sender's cached route keeps its entry alive after the actor
    is gone and sees alive turn false.
*/
#ifndef FQ_REGISTRY_H
#define FQ_REGISTRY_H

#include "fq_address.h"
#include <czmq.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct fq_entry {
    atomic_int refs;
    atomic_bool alive;
    //  Written by senders and by the owner: on separate cache lines so the
    //  two threads do not bounce one line on every message.
    _Alignas(64) atomic_uint_fast64_t enqueued;
    _Alignas(64) atomic_uint_fast64_t handled;
    atomic_uint_fast64_t restarts;
    atomic_uint_fast64_t failures;
    atomic_uint_fast64_t malformed;
    atomic_uint_fast64_t refused;
    char path[FQ_PATH_MAX + 1];
    char endpoint[FQ_PATH_MAX + 64];
    zlistx_t *watchers; //  Watcher paths (strings); guarded by the registry
} fq_entry_t;

typedef struct fq_registry fq_registry_t;

fq_registry_t *fq_registry_new(const char *system_id);
void fq_registry_destroy(fq_registry_t **self_p);

//  Registers path; on success *entry_p holds a reference for the caller.
//  Returns FQ_EEXIST if a live actor has the path, FQ_EINVAL if malformed.
int fq_registry_add(fq_registry_t *self, const char *path, fq_entry_t **entry_p);

//  A new reference to the live entry at path, or NULL.
fq_entry_t *fq_registry_lookup(fq_registry_t *self, const char *path);

//  Marks entry dead, unlists it and returns its watchers (caller destroys
//  the list). The caller's reference stays its own to release.
zlistx_t *fq_registry_remove(fq_registry_t *self, fq_entry_t *entry);

//  Adds watcher to the entry at target. Returns FQ_ENOACTOR if no live
//  actor is there (the caller then sends TERMINATED at once).
int fq_registry_watch(fq_registry_t *self, const char *target, const char *watcher);
void fq_registry_unwatch(fq_registry_t *self, const char *target, const char *watcher);

void fq_entry_retain(fq_entry_t *entry);
void fq_entry_release(fq_entry_t **entry_p);

//  Calls fn for each live entry under the registry lock; fn must not call
//  back into the registry.
void fq_registry_foreach(fq_registry_t *self, void (*fn)(const fq_entry_t *entry, void *arg),
                         void *arg);

#endif
