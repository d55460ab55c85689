/*  fq_pipeline.h — fairqd's actors and where they live (docs/architecture.md).

        /user/intake        wakes the scheduler on NOTIFY fairq_requests
        /user/scheduler     fairness: which message goes out next
        /user/splitter-N    turns stored recipients into message rows
        /user/dispatcher    the senders: credit, rendering, in-flight
        /user/store         writes acks and nacks in batches
        /user/reaper        finishes requests, moves scan cursors, prunes
        /user/webhooks      feeds tenants' webhook endpoints from the events
        /user/schedules     fires tenants' schedules of recurring sends

    Each actor's behaviour is in a file of its own (fq_<name>.c); each that
    speaks SQL opens its own connection (fq_db.h). fq_pipeline_start spawns
    them all with the settings below. */
#ifndef FQ_PIPELINE_H
#define FQ_PIPELINE_H

#include "fq_channel.h"
#include "fq_db.h"
#include "fq_lease.h"
#include "fq_messages.h"
#include "fq_metrics.h"
#include "fq_store.h"
#include "fq_store_webhooks.h"
#include "fq_system.h"
#include "fq_unsubscribe_token.h"

#define FQ_PATH_INTAKE     "/user/intake"
#define FQ_PATH_SCHEDULER  "/user/scheduler"
#define FQ_PATH_DISPATCHER FQ_PROTOCOL_DISPATCHER_PATH
#define FQ_PATH_STORE      "/user/store"
#define FQ_PATH_REAPER     "/user/reaper"
//  Splitters are FQ_PATH_SPLITTER_PREFIX "1", "2", ...
#define FQ_PATH_SPLITTER_PREFIX "/user/splitter-"
#define FQ_SPLITTERS_MAX        16

//  What a tenant's weight buys a share of (fairqd's fairness_cost,
//  docs/fairness.md "What a message costs"): messages, their rendered
//  bytes, or the time senders took to deliver them.
typedef enum {
    FQ_FAIRNESS_COST_MESSAGES,
    FQ_FAIRNESS_COST_BYTES,
    FQ_FAIRNESS_COST_TIME,
} fq_fairness_cost_t;

//  What every actor is started with; strings are copied.
typedef struct {
    const char *database; //  libpq connection string
    const char *name;     //  The actor system's name (Message-ID domain fallback)
    int prefetch;         //  Ready ids kept per active request
    int splitters;        //  Size of the splitter pool
    int poll_ms;          //  Slow poll of open requests and due retries
    int ack_batch;        //  Acks and nacks per transaction
    int ack_flush_ms;     //  Longest an ack waits for its batch
    fq_retry_policy_t retry;
    //  The intake's connection string, for its LISTEN, which needs a
    //  session of its own (not one a pooler in transaction mode lends);
    //  NULL or "": database
    const char *database_listen;
    int retention_s;       //  Finished requests are pruned after this
    fq_metrics_t *metrics; //  Where the actors record; borrowed, shared; NULL = none
    //  Leadership (fq_lease.h): the epoch every leader-only write carries
    //  (0: none), and the lease the scheduler and the dispatcher check
    //  before each dispatch (borrowed, shared; NULL: always held, for a
    //  pipeline that runs alone, as in tests)
    int64_t epoch;
    fq_lease_t *lease;
    fq_fairness_cost_t fairness_cost;
    //  No message.sent event for an ack (fairqd's sent_events = false);
    //  false, the default, writes them
    bool skip_sent_events;
    //  How webhooks are fed (fairqd's webhook_* keys; the back-off's base
    //  and cap are retry's)
    fq_webhook_feed_t webhooks;
    //  One-click unsubscribe (fairqd's unsubscribe_* keys,
    //  docs/feedback.md): the public base URL its links start with, no
    //  '/' at its end (NULL or "": off, and a message of a request with
    //  unsubscribe on dies, as it cannot carry the link it promises), the
    //  mailto address of its List-Unsubscribe (NULL or "": none), and the
    //  key its tokens are sealed with (wiped when a copy is freed)
    const char *unsubscribe_url;
    const char *unsubscribe_mailto;
    unsigned char unsubscribe_key[FQ_UNSUBSCRIBE_KEY_SIZE];
} fq_pipeline_config_t;

//  A new leader starts in three steps, so that the first message after a
//  takeover waits for as little as it can. fq_pipeline_start spawns the
//  actors under /user that a dispatch needs (store, scheduler,
//  dispatcher). fairqd then starts the gateway, and senders may come in
//  while those actors connect to the database (each opens its connection
//  as it starts; a HELLO waits in the dispatcher's mailbox meanwhile).
//  fq_pipeline_wait_ready waits, up to timeout_ms, until the three have
//  connected (or found the database away and will retry): 0, or the code
//  of the first that did not answer (FQ_ETIMEDOUT; FQ_ENOACTOR for one
//  that failed to start). Only then fq_pipeline_start_rest spawns the others
//  (splitters, intake, reaper, webhooks, schedules): opening their five or
//  more connections at the same time took the CPU the dispatcher's needed
//  (a connection is a TLS handshake and a password exchange; under load
//  on two cores the dispatcher's took 170 to 310 ms, most of a takeover's
//  time after the lease). The start functions return 0 or the code of the
//  first spawn that failed.
int fq_pipeline_start(fq_system_t *sys, const fq_pipeline_config_t *config);
int fq_pipeline_wait_ready(fq_system_t *sys, int timeout_ms);
int fq_pipeline_start_rest(fq_system_t *sys, const fq_pipeline_config_t *config);

//  Asks the dispatcher to stop handing out messages and waits, up to
//  timeout_ms, until every message in flight is acked or nacked (and those
//  outcomes are on their way to the store). Returns how many were still
//  in flight when it gave up (0: drained).
int fq_pipeline_drain(fq_system_t *sys, int timeout_ms);

//  The behaviours; each takes a copy of fq_pipeline_config_t as args
//  (fq_pipeline_config_dup), except the splitters, which get theirs with
//  an index.
extern const fq_behaviour_t fq_intake_behaviour;
extern const fq_behaviour_t fq_scheduler_behaviour;
extern const fq_behaviour_t fq_splitter_behaviour;
extern const fq_behaviour_t fq_dispatcher_behaviour;
extern const fq_behaviour_t fq_store_writer_behaviour;
extern const fq_behaviour_t fq_reaper_behaviour;
extern const fq_behaviour_t fq_webhook_feeder_behaviour;
extern const fq_behaviour_t fq_schedule_firer_behaviour;

//  A deep copy of config for an actor's args (freed by
//  fq_pipeline_config_free, the spawn's args_free), except metrics and
//  lease: the pointers are copied, the actors share them. The copy's
//  database_listen is database when config has none. NULL when out of
//  memory.
fq_pipeline_config_t *fq_pipeline_config_dup(const fq_pipeline_config_t *config);
void fq_pipeline_config_free(void *config);

//  An actor's own database connection (fq_db.h), who naming it in the
//  log, whose leader-only writes carry config's epoch. NULL when out of
//  memory.
fq_db_t *fq_pipeline_db(const fq_pipeline_config_t *config, const char *who);

//  Whether the pipeline may dispatch now: it holds the leader's lease.
bool fq_pipeline_may_dispatch(const fq_pipeline_config_t *config);

//  The http templates of a request loaded by the store (its channel
//  "http"), parsed and checked (channels/fq_channel.h) for the splitter,
//  which checks recipients against their fields, and the dispatcher,
//  which renders them. NULL with why in error: the request breaks the rule
//  of an http request (stored by SQL), or memory ran out.
fq_http_templates_t *fq_pipeline_http_templates(const fq_request_templates_t *request, char *error,
                                                size_t error_size);

//  Timer kinds carried in TICK.what.
enum {
    FQ_TICK_POLL = 1,  //  Periodic upkeep
    FQ_TICK_FLUSH = 2, //  The store's batch deadline
    FQ_TICK_SOON = 3,  //  A poll asked for by a notification
    FQ_TICK_RETRY = 4, //  Try the database again
    FQ_TICK_SHAPE = 5, //  A destination's budget grew back (the scheduler's)
    FQ_TICK_PACE = 6,  //  A paced sender's relay takes more (the dispatcher's)
    FQ_TICK_STORE = 7, //  Ask the store how far it wrote (the dispatcher's)
};

#endif
