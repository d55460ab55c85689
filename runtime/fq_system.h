/*  fq_system.h — an actor system: its guardians, top-level actors, clients
    for threads that are not actors, and per-actor counters.

    A system has two guardian actors: /user for the application's actors
    and /system for the runtime's own (the gateway). A failure escalated up
    to a guardian ends nothing by itself: the system records it and calls
    config.on_escalation, and the application decides (fairqd exits so
    that systemd restarts it; state is in PostgreSQL).
*/
#ifndef FQ_SYSTEM_H
#define FQ_SYSTEM_H

#include "fq_actor.h"
#include "fq_address.h"

typedef struct fq_cell fq_cell_t;

typedef struct {
    const char *name;    //  System name, as remote peers address it (fq://name/...)
    int mailbox_hwm;     //  Messages a mailbox holds before senders wait; 0 = default
    int send_timeout_ms; //  How long a sender waits on a full mailbox; 0 = default
    //  Called from a guardian's thread when a failure escalates to it.
    void (*on_escalation)(fq_system_t *sys, const char *path, const char *reason, void *arg);
    void *on_escalation_arg;
} fq_system_config_t;

#define FQ_DEFAULT_MAILBOX_HWM     10000
#define FQ_DEFAULT_SEND_TIMEOUT_MS 5000

//  Starts a system; NULL if cfg is invalid or resources run out.
fq_system_t *fq_system_new(const fq_system_config_t *cfg);

//  Stops /user, then /system, children before parents, and frees all.
void fq_system_destroy(fq_system_t **self_p);

const char *fq_system_name(fq_system_t *self);

//  Spawns a top-level actor /user/name (or /system/name), from any
//  thread. Same ownership rules as fq_spawn.
int fq_system_spawn(fq_system_t *self, const char *name, const fq_behaviour_t *behaviour,
                    void *args, const fq_spawn_opts_t *opts);
int fq_system_spawn_system(fq_system_t *self, const char *name, const fq_behaviour_t *behaviour,
                           void *args, const fq_spawn_opts_t *opts);

//  True once a failure escalated to a guardian; reason gets its text.
bool fq_system_failed(fq_system_t *self, char *reason, size_t reason_size);

typedef struct {
    char path[FQ_PATH_MAX + 1];
    uint64_t handled;       //  Messages taken from the mailbox
    uint64_t mailbox_depth; //  Messages queued, not yet handled
    uint64_t restarts;
    uint64_t failures;
    uint64_t malformed; //  Frames dropped because they did not decode
    uint64_t refused;   //  Messages refused as not allowed from where they came
} fq_actor_stats_t;

//  Looks up a live actor by path. Returns 0, or FQ_ENOACTOR.
int fq_system_lookup(fq_system_t *self, const char *path);

//  Counters of the live actor at path. Returns 0 or FQ_ENOACTOR.
int fq_system_stats(fq_system_t *self, const char *path, fq_actor_stats_t *stats);

//  Calls fn with the counters of every live actor; returns how many.
int fq_system_foreach_stats(fq_system_t *self, void (*fn)(const fq_actor_stats_t *stats, void *arg),
                            void *arg);

//  Messages dropped because their actor was gone.
uint64_t fq_system_dead_letters(fq_system_t *self);

//  A client lets a thread that is not an actor (main, a test, an HTTP
//  handler) tell, ask and watch. It has an address of its own
//  (/temp/client-N), so replies and TERMINATED notices reach it. One
//  client belongs to one thread.
typedef struct fq_client fq_client_t;

//  Destroy every client before its system.
fq_client_t *fq_client_new(fq_system_t *sys);
void fq_client_destroy(fq_client_t **self_p);
const char *fq_client_address(fq_client_t *self);

int fq_client_tell(fq_client_t *self, const char *to, const fq_msgdesc_t *desc, const void *msg);

//  Blocking ask. On 0, *reply is valid until the client's next call.
//  Returns FQ_ETIMEDOUT after timeout_ms, or the code of an ERROR reply.
int fq_client_ask(fq_client_t *self, const char *to, const fq_msgdesc_t *desc, const void *msg,
                  int timeout_ms, fq_msg_t *reply);

//  Waits up to timeout_ms for a message sent to the client (not a reply
//  to an ask). On 0, *msg is valid until the client's next call.
int fq_client_recv(fq_client_t *self, int timeout_ms, fq_msg_t *msg);

int fq_client_watch(fq_client_t *self, const char *address);
int fq_client_stop(fq_client_t *self, const char *address);

#endif
