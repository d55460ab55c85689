/*  fq_actor_internal.h — actor cells and contexts, shared by fq_actor.c,
    fq_cell.c and fq_system.c (internal). */
#ifndef FQ_ACTOR_INTERNAL_H
#define FQ_ACTOR_INTERNAL_H

#include "fq_outbox.h"
#include "fq_system_internal.h"
#include "fq_timers.h"

//  How an actor's thread ended, as reported to its parent in "$EXIT".
enum {
    FQ_EXIT_RUNNING = -1,
    FQ_EXIT_STOPPED = 0,   //  Asked to stop, or stopped itself
    FQ_EXIT_FAILED = 1,    //  start or receive failed, or the thread ended
    FQ_EXIT_ESCALATED = 2, //  A child's failure was escalated to it
};

//  A cell is the supervision record of one actor: it outlives the actor's
//  threads, so the mailbox (and the messages in it) survive a restart.
//  Owned by the parent's context (guardians: by the system).
struct fq_cell {
    fq_system_t *sys;
    char path[FQ_PATH_MAX + 1];
    const fq_behaviour_t *behaviour;
    void *args;
    fq_spawn_opts_t opts;
    bool guardian;
    fq_entry_t *entry;
    zsock_t *mailbox;       //  PULL bound to entry->endpoint
    zactor_t *actor;        //  The running incarnation, NULL while backing off
    int64_t *restart_times; //  Monotonic ms of recent restarts, oldest first
    int restart_count;
    int restart_timer; //  Parent's timer id while backing off
    //  Last ask correlation id. Kept across restarts: a reply to an ask of
    //  an earlier incarnation may still arrive, and must match no new ask.
    uint64_t next_corr;
};

//  Creates a cell for parent_path/name with a bound mailbox. Takes args
//  (freed with opts->args_free on failure). Returns 0 or a code.
int fq_cell_new(fq_system_t *sys, const char *parent_path, const char *name,
                const fq_behaviour_t *behaviour, void *args, const fq_spawn_opts_t *opts,
                bool guardian, fq_cell_t **cell_p);

//  Starts a new incarnation of the cell's actor. Returns 0 or FQ_ENOMEM.
int fq_cell_start(fq_cell_t *cell);

//  Stops the cell's actor if it runs, unregisters it, drops what is left in
//  its mailbox (as dead letters), tells its watchers through outbox (when
//  not NULL) and frees it.
void fq_cell_destroy(fq_cell_t **cell_p, fq_outbox_t *outbox, bool failed, const char *reason);

#endif
