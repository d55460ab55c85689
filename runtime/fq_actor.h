/*  fq_actor.h — actors: behaviours, spawning, messaging, timers, watch.

    An actor is a CZMQ zactor (a thread and a PAIR pipe to its parent) that
    polls its pipe, its mailbox (an inproc PULL socket) and its children's
    pipes. Actors share no memory: they exchange schema-typed messages in
    envelopes (fq_envelope.h). Every actor has a path such as
    /user/scheduler/splitter-1; its parent supervises it (one-for-one).

    Everything taking an fq_ctx_t must be called from that actor's own
    thread, inside its behaviour callbacks.
*/
#ifndef FQ_ACTOR_H
#define FQ_ACTOR_H

#include "fq_envelope.h"
#include "fq_error.h"
#include "fq_schema.h"
#include "fq_sysmsg.h"
#include <czmq.h>

typedef struct fq_system fq_system_t;
typedef struct fq_ctx fq_ctx_t;

//  A received message, valid until the handler returns.
typedef struct {
    uint32_t type;      //  FQ_MSG_* id
    uint32_t flags;     //  FQ_ENV_* bits
    uint64_t corr;      //  Correlation id of an ask, else 0
    const char *sender; //  Address to reply to, "" if none
    const char *to;     //  Full target address when it is remote, else ""
    const msgpack_object *body;
    msgpack_zone *zone; //  Scratch memory reset after each message
    const void *frame;  //  The raw envelope, for forwarding unchanged
    size_t frame_size;
} fq_msg_t;

//  Decodes msg's body as desc's type into out (a struct of that type).
//  Returns FQ_EDECODE on a type mismatch or malformed body; strings in out
//  live until the handler returns.
int fq_msg_decode(const fq_msg_t *msg, const fq_msgdesc_t *desc, void *out);

//  What an actor does. start builds the state from args (each restart
//  calls it again with the same args); receive handles one message and
//  returns 0, or a negative code to fail (the parent's supervision then
//  applies); stop releases the state and runs whenever start succeeded.
//  idle, if set, runs each time the actor has handled every message that
//  was waiting: an actor that gathers work per message (acks to write,
//  credit to hand out) does it there once per burst instead of once per
//  message, with no timer and no added wait.
typedef struct {
    const char *name;
    int (*start)(fq_ctx_t *ctx, void *args, void **state_p);
    int (*receive)(fq_ctx_t *ctx, void *state, const fq_msg_t *msg);
    void (*stop)(fq_ctx_t *ctx, void *state);
    void (*idle)(fq_ctx_t *ctx, void *state);
} fq_behaviour_t;

typedef enum {
    FQ_SUPERVISE_RESTART,  //  Restart the failed child alone
    FQ_SUPERVISE_STOP,     //  Stop it for good (watchers are told)
    FQ_SUPERVISE_ESCALATE, //  Fail the parent too
} fq_strategy_t;

typedef struct {
    fq_strategy_t strategy;
    //  Restart intensity: more than max_restarts within within_ms escalates.
    int max_restarts;
    int within_ms;
    //  Delay before restart n is backoff_min_ms * 2^(n-1), capped.
    int backoff_min_ms;
    int backoff_max_ms;
} fq_supervision_t;

typedef struct {
    fq_supervision_t supervision;
    void (*args_free)(void *args); //  Called when the actor is gone for good
    int mailbox_hwm;               //  0 = runtime default
} fq_spawn_opts_t;

//  Defaults: restart, 5 restarts within 10 s, backoff 10 ms to 1 s.
fq_spawn_opts_t fq_spawn_opts_default(void);

//  Spawns a child of the calling actor named name (one path segment).
//  args are owned by the child from here on if opts->args_free is set,
//  even when spawning fails. Returns 0, FQ_EEXIST or FQ_EINVAL.
int fq_spawn(fq_ctx_t *ctx, const char *name, const fq_behaviour_t *behaviour, void *args,
             const fq_spawn_opts_t *opts);

//  Sends msg (of desc's type) to the actor at address, local (/user/x)
//  or remote (fq://system/user/x, tcp://host:port/user/x). Returns 0,
//  FQ_ENOACTOR, FQ_EFULL (mailbox full past the send timeout) or FQ_EPEER.
int fq_tell(fq_ctx_t *ctx, const char *to, const fq_msgdesc_t *desc, const void *msg);

//  Answers an ask: sends msg to request's sender with its correlation id.
int fq_reply(fq_ctx_t *ctx, const fq_msg_t *request, const fq_msgdesc_t *desc, const void *msg);

//  Called once per ask, in the asking actor's thread: status 0 with the
//  reply, or a negative code (FQ_ETIMEDOUT, FQ_ECLOSED when the asker stops
//  first, or the code of an ERROR reply) with reply NULL.
typedef void(fq_ask_fn)(fq_ctx_t *ctx, void *state, int status, const fq_msg_t *reply, void *arg);

//  Sends msg as a request; exactly one call of fn follows, within
//  timeout_ms. Returns 0 or the send error (then fn is never called).
int fq_ask(fq_ctx_t *ctx, const char *to, const fq_msgdesc_t *desc, const void *msg, int timeout_ms,
           fq_ask_fn *fn, void *arg);

//  Delivers msg to this actor once after delay_ms, or every interval_ms.
//  Returns a timer id (> 0) for fq_timer_cancel, or a negative code.
int fq_timer_once(fq_ctx_t *ctx, int delay_ms, const fq_msgdesc_t *desc, const void *msg);
int fq_timer_every(fq_ctx_t *ctx, int interval_ms, const fq_msgdesc_t *desc, const void *msg);
void fq_timer_cancel(fq_ctx_t *ctx, int timer_id);

//  Death watch: a TERMINATED message comes when the actor at address stops
//  for good (at once if there is none). A remote actor also counts as
//  stopped when its system misses heartbeats.
int fq_watch(fq_ctx_t *ctx, const char *address);
void fq_unwatch(fq_ctx_t *ctx, const char *address);

//  Asks the actor at address to stop after the messages already queued for
//  it (a poison pill). Its children stop first; watchers are told.
int fq_stop(fq_ctx_t *ctx, const char *address);

//  Ends the calling actor after the current message.
void fq_stop_self(fq_ctx_t *ctx);

//  Counts, in the calling actor's refused counter (fq_actor_stats_t), a
//  message it refused as not allowed from where it came: one the gateway's
//  admission table refused, an answer from a peer that has no say in it.
//  Returns the count so far, for logging at growing intervals.
uint64_t fq_count_refused(fq_ctx_t *ctx);

//  The calling actor's path; and its system.
const char *fq_self(fq_ctx_t *ctx);
fq_system_t *fq_ctx_system(fq_ctx_t *ctx);

//  Lets an actor poll a socket of its own (for example a gateway's ROUTER)
//  in its loop; fn returns 0, or negative to fail the actor.
typedef int(fq_reader_fn)(fq_ctx_t *ctx, void *state, zsock_t *sock);
int fq_ctx_add_reader(fq_ctx_t *ctx, zsock_t *sock, fq_reader_fn *fn);
void fq_ctx_remove_reader(fq_ctx_t *ctx, zsock_t *sock);

//  The same for a file descriptor that is not a ZeroMQ socket (a libpq
//  connection's socket, say): fn runs whenever fd is readable. The actor
//  removes it before closing fd.
typedef int(fq_fd_reader_fn)(fq_ctx_t *ctx, void *state, int fd);
int fq_ctx_add_fd_reader(fq_ctx_t *ctx, int fd, fq_fd_reader_fn *fn);
void fq_ctx_remove_fd_reader(fq_ctx_t *ctx, int fd);

//  Re-delivers an already encoded envelope to address without decoding
//  its body (the gateway uses this). Returns as fq_tell.
int fq_forward(fq_ctx_t *ctx, const char *to, const void *frame, size_t size);

#endif
