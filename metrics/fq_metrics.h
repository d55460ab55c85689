/*  fq_metrics.h — fairqd's figures, for GET /metrics and the live fields of
    the HTTP API (a tenant's inflight and send_rate, a request's inflight,
    a destination's live figures as the scheduler tells them).

    One fq_metrics_t is shared by every actor and the HTTP threads; a mutex
    inside guards it. Actors record into an fq_metrics_batch_t of their own,
    without the lock, and apply it with fq_metrics_batch_flush: one lock per
    DISPATCH, per flush of acks, per database batch, never one per message
    (the dispatcher hands out tens of thousands of messages a second).

    Tenants are keyed by id (what the scheduler and the dispatcher know of a
    message); their names come from fq_metrics_tenant_name (the splitters
    and the dispatcher load them with a request's templates) and from the
    tenant list given to fq_metrics_render. Senders are keyed by the id
    fq_metrics_sender_join hands out.

    Every function takes a NULL fq_metrics_t or fq_metrics_batch_t and then
    does nothing (queries answer 0): tests and benchmarks run the pipeline
    without metrics.

    fq_metrics_render writes Prometheus' text format, version 0.0.4. */
#ifndef FQ_METRICS_H
#define FQ_METRICS_H

#include "fq_latency.h"
#include "fq_lease.h"
#include "fq_store.h"
#include "fq_store_rates.h"
#include "fq_system.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct fq_metrics fq_metrics_t;

//  NULL when out of memory.
fq_metrics_t *fq_metrics_new(void);

//  Nobody may use self any more (the actors are stopped, the HTTP server
//  too). Safe twice; nulls the caller's pointer.
void fq_metrics_destroy(fq_metrics_t **self_p);

//  Makes the send rate read its time, in milliseconds of any monotonic
//  clock, from now_ms(arg) rather than zclock_mono(). For tests.
void fq_metrics_set_clock(fq_metrics_t *self, int64_t (*now_ms)(void *arg), void *arg);

//  Makes the exposition say who leads and whether this fairqd does
//  (lease borrowed; it must outlive self). Set once, before the HTTP API
//  starts.
void fq_metrics_set_lease(fq_metrics_t *self, const fq_lease_t *lease);

//  ---------------------------------------------------------------------
//  Queries (HTTP threads)

//  Messages of request_id in a sender's hands right now (0 when unknown).
int64_t fq_metrics_request_inflight(fq_metrics_t *self, int64_t request_id);

//  A tenant's messages in flight right now, and its messages acked per
//  second over the last 60 s (both 0 for a tenant never seen).
void fq_metrics_tenant_live(fq_metrics_t *self, const char *tenant, int64_t *inflight,
                            double *send_rate);

//  A tenant's delivery and end-to-end times over the last
//  FQ_LATENCY_WINDOW_S (fq_latency.h) into out: nothing delivered (each
//  quantile -1) for a tenant never seen, or on a fairqd that does not
//  lead (only the leader dispatches and hears the acks).
void fq_metrics_tenant_latency(fq_metrics_t *self, const char *tenant, fq_latency_view_t *out);

//  The same of a destination, its channels together.
void fq_metrics_destination_latency(fq_metrics_t *self, const char *destination,
                                    fq_latency_view_t *out);

//  ---------------------------------------------------------------------
//  The senders and the tenants' share, for the web console (HTTP threads)

//  Most bytes of a sender's name and of its address kept: they are its
//  remote peer's choice, shown in every scrape.
#define FQ_METRICS_LABEL_MAX 128

//  A sender as this fairqd knows it (senders connect to the leader only:
//  a fairqd that does not lead knows none). The counters run since it
//  first said HELLO to this fairqd.
typedef struct {
    char name[FQ_METRICS_LABEL_MAX + 1];
    char address[FQ_METRICS_LABEL_MAX + 1];
    bool connected;           //  false: it left, its counters kept on show
    int64_t credit, inflight; //  Now (0 once it left)
    int64_t dispatched, sent, failed, dead, requeued;
} fq_metrics_sender_view_t;

typedef struct {
    fq_metrics_sender_view_t *rows; //  Owned: fq_metrics_sender_list_free
    size_t count;
} fq_metrics_sender_list_t;

//  Every sender of fq_metrics_sender_join, connected or departed (the
//  departed until too many have left), sorted by name then address.
//  Returns 0, or -1 when out of memory (list then empty).
int fq_metrics_senders(fq_metrics_t *self, fq_metrics_sender_list_t *list);
void fq_metrics_sender_list_free(fq_metrics_sender_list_t *list);

//  The tenants' share of dispatch: messages handed to senders, counted per
//  tenant in slots of FQ_METRICS_SHARE_SLOT_S seconds of the monotonic
//  clock (fq_metrics_set_clock's), the last FQ_METRICS_SHARE_SLOTS of
//  them (10 minutes) kept in a ring per tenant.
#define FQ_METRICS_SHARE_SLOT_S 10
#define FQ_METRICS_SHARE_SLOTS  60

typedef struct {
    char name[FQ_TENANT_NAME_SIZE];
    int64_t dispatched[FQ_METRICS_SHARE_SLOTS]; //  Oldest first; slots of the list used
} fq_metrics_share_t;

typedef struct {
    fq_metrics_share_t *rows; //  By name; owned: fq_metrics_share_list_free
    size_t count;
    size_t slots; //  Of each row: the window asked for
    //  Milliseconds from now to the end of the newest slot, the current
    //  one, still filling (1..FQ_METRICS_SHARE_SLOT_S * 1000): the caller
    //  maps it to wall time
    int64_t until_in_ms;
} fq_metrics_share_list_t;

//  The share over a window of the last `slots` slots (taken as 1 when
//  fewer, as FQ_METRICS_SHARE_SLOTS when more), the newest the current
//  one, still filling: a row per named tenant that was handed a message
//  in the window, by name; when tenant is not NULL, that tenant's row
//  alone (none when it was handed nothing). The rows are allocated
//  outside the lock. Returns 0, or -1 when out of memory (list then
//  empty).
int fq_metrics_share(fq_metrics_t *self, size_t slots, const char *tenant,
                     fq_metrics_share_list_t *list);
void fq_metrics_share_list_free(fq_metrics_share_list_t *list);

//  The whole exposition as Prometheus text; the caller frees it. sys: each
//  actor's mailbox depth, messages handled, restarts and failures (left out
//  when NULL). tenants: each tenant's depth, failed messages waiting for a
//  retry, recipients not yet split, open requests and the age of its oldest
//  pending request, read from the database by the caller; NULL when the
//  database is unreachable: those gauges are then left out and
//  fairq_database_up is 0 (else 1). NULL when out of memory.
char *fq_metrics_render(fq_metrics_t *self, fq_system_t *sys, const fq_tenant_list_t *tenants);

//  ---------------------------------------------------------------------
//  The tenants' bounce and complaint rates (HTTP threads)
//
//  Read from the database (fq_store_rates.h) by whoever serves /metrics
//  or the API's tenant objects, at most once a minute, not at every call:
//  the figures cover a day (FQ_STORE_RATES_WINDOW_S), so a minute more or
//  less changes little, and several Prometheus servers scraping every few
//  seconds must not each pay the count. Kept here between two reads, and
//  shown with their age (fairq_tenant_rates_age_seconds).

//  How often the rates are read again, in milliseconds.
#define FQ_METRICS_RATES_REFRESH_MS 60000

//  Whether the rates are due to be read again: never read, or read
//  FQ_METRICS_RATES_REFRESH_MS ago or longer. True hands the read to the
//  caller, who must then call fq_metrics_tenant_rates; until it does,
//  every other caller is told false (two scrapes at once read once).
bool fq_metrics_tenant_rates_due(fq_metrics_t *self);

//  The rates read (rows copied; borrowed list), or NULL when the read
//  failed: the last figures then stay, and the next scrape tries again.
void fq_metrics_tenant_rates(fq_metrics_t *self, const fq_tenant_rates_list_t *rates);

//  A tenant's bounce and complaint rates, 0..1 (fq_tenant_bounce_rate,
//  fq_tenant_complaint_rate: what fairq_tenant_bounce_rate and
//  fairq_tenant_complaint_rate show), as last read: each < 0 when not
//  known (never read, the tenant not in the read, or nothing to divide
//  by in the window).
void fq_metrics_tenant_rates_of(fq_metrics_t *self, const char *tenant, double *bounce_rate,
                                double *complaint_rate);

//  How many error groups /metrics shows (fairq_message_errors): the most
//  frequent ones only, so that many distinct replies cannot swell every
//  scrape with series.
#define FQ_METRICS_ERRORS_TOP 100

//  Whether the errors below are due to be read again, as the rates are
//  (fq_metrics_tenant_rates_due) but on their own clock: only /metrics
//  shows them, so only it reads them. True hands the read to the caller,
//  who must then call fq_metrics_errors.
bool fq_metrics_errors_due(fq_metrics_t *self);

//  The errors of the failed and dead messages (fq_store_error_summary
//  over every tenant, FQ_METRICS_ERRORS_TOP groups; borrowed), or NULL
//  when the read failed: the last figures then stay, and they stay due.
void fq_metrics_errors(fq_metrics_t *self, const fq_error_summary_t *errors);

//  ---------------------------------------------------------------------
//  Names and senders (rare: each takes the lock)

//  Tells the name of a tenant id (copied; at most FQ_TENANT_NAME_MAX bytes,
//  fq_limits.h, as the schema allows). Counters recorded by id show under
//  this name.
void fq_metrics_tenant_name(fq_metrics_t *self, int64_t tenant_id, const char *name);

//  A tenant's send budget (0017) as the scheduler holds it: held while its
//  rate or daily quota holds its messages back, and what counts against
//  its quota today. A tenant whose limits are removed is told (false, 0).
void fq_metrics_tenant_budget(fq_metrics_t *self, int64_t tenant_id, bool held, int64_t sent_today);

//  A sender said HELLO: name (its own choice, sent by a remote peer) and
//  address are copied. Returns the id its records go under, 0 when self is
//  NULL or out of memory (records under 0 count for tenants only). A sender
//  that comes back with the same name and address continues its counters.
uint64_t fq_metrics_sender_join(fq_metrics_t *self, const char *name, const char *address);

//  The sender left: its gauges drop to 0 and its counters stay on show
//  (until too many senders have left; then the departed are forgotten).
//  Flush the batches holding its records first.
void fq_metrics_sender_leave(fq_metrics_t *self, uint64_t sender);

//  The scheduler's lane of channel right now: messages it holds ready
//  (waiting for credit), free sender credit and messages in flight. Set
//  under the lock, at most a few times a second.
void fq_metrics_channel(fq_metrics_t *self, const char *channel, int64_t ready, int64_t credit,
                        int64_t inflight);

//  A destination (sql/migrations/0016_destinations.sql) as the scheduler
//  shapes it right now. Rates are messages a second.
typedef struct {
    const char *name;
    double configured_per_s;  //  0 = no rate limit
    double effective_per_s;   //  0 = no limit now (lowered after throttling replies)
    int64_t max_inflight;     //  0 = no limit
    int64_t ready, inflight;  //  Messages held ready for it; in senders' hands
    const char *state;        //  "open", "throttled", "suspended"
    int64_t suspended_for_ms; //  0 unless suspended
    //  Since fairqd started: messages released to senders; deferred (given
    //  back without an attempt); throttling replies
    uint64_t sent, deferred, throttled;
} fq_metrics_destination_t;

//  The scheduler tells a destination's figures, after each poll, for every
//  destination it knows (copied; a name is cut to FQ_DESTINATION_NAME_MAX
//  bytes). Set under the lock.
void fq_metrics_destination(fq_metrics_t *self, const fq_metrics_destination_t *destination);

//  Destination name is no longer configured (deleted): its figures leave
//  /metrics and the API's live view, its delivery and end-to-end times
//  with them. Nothing when it is not there.
void fq_metrics_destination_forget(fq_metrics_t *self, const char *name);

//  Room for a destination's state and its NUL.
#define FQ_METRICS_STATE_SIZE 16

//  The figures of destination name as the scheduler last told them, into
//  out: out->name is name, out->state points to state (the caller's).
//  Returns false, out all 0 and the state "open", when it has told none
//  (this fairqd does not lead, or the destination is new).
bool fq_metrics_destination_live(fq_metrics_t *self, const char *name,
                                 fq_metrics_destination_t *out, char state[FQ_METRICS_STATE_SIZE]);

//  ---------------------------------------------------------------------
//  Recording (actors)

//  How a message handed to a sender left its hands.
typedef enum {
    FQ_METRICS_SENT,     //  Acked
    FQ_METRICS_FAILED,   //  Nacked; it will be tried again
    FQ_METRICS_DEAD,     //  Nacked permanently, or at its last attempt
    FQ_METRICS_REQUEUED, //  Given back unsent: its sender left or died
    FQ_METRICS_RELEASED, //  Forgotten with no outcome: the dispatcher stopped
} fq_metrics_outcome_t;

//  The database statements whose batches are measured.
typedef enum {
    FQ_METRICS_DB_ACKS,  //  The store writer's acks (fq_store_ack_batch)
    FQ_METRICS_DB_NACKS, //  The store writer's nacks (fq_store_nack_batch)
    FQ_METRICS_DB_LOAD,  //  The dispatcher's row loads (fq_store_load_messages)
    FQ_METRICS_DB_SPLIT, //  A splitter's chunks (fq_store_split_chunk)
    FQ_METRICS_DB_COUNT
} fq_metrics_statement_t;

//  One actor's records, held without a lock until flushed. Belongs to one
//  thread. NULL when metrics is NULL or out of memory; every call then
//  does nothing.
typedef struct fq_metrics_batch fq_metrics_batch_t;

fq_metrics_batch_t *fq_metrics_batch_new(fq_metrics_t *metrics);

//  Flushes what it holds, then frees it. Safe twice.
void fq_metrics_batch_destroy(fq_metrics_batch_t **self_p);

//  Applies what is held, under the lock once. A batch also flushes by
//  itself when it is full.
void fq_metrics_batch_flush(fq_metrics_batch_t *self);

//  A request was taken up with this many recipients (the scheduler, once
//  per request).
void fq_metrics_batch_submitted(fq_metrics_batch_t *self, int64_t tenant_id, int64_t recipients);

//  A splitter wrote split message rows and rejected recipients.
void fq_metrics_batch_split(fq_metrics_batch_t *self, int64_t tenant_id, int64_t split,
                            int64_t rejected);

//  Of the rejected, recipients refused because a suppression list holds
//  them (0019).
void fq_metrics_batch_suppressed(fq_metrics_batch_t *self, int64_t tenant_id, int64_t recipients);

//  A hard bounce: a permanent failure whose reply names a code of fairqd's
//  suppress_bounces (its address is suppressed as it is recorded).
void fq_metrics_batch_bounced(fq_metrics_batch_t *self, int64_t tenant_id);

//  A message of request_id went to sender. latency_ms: milliseconds since
//  its request was due (created, or its send_at) for a first attempt, < 0
//  for a retry (not observed).
void fq_metrics_batch_dispatched(fq_metrics_batch_t *self, int64_t tenant_id, int64_t request_id,
                                 uint64_t sender, int64_t latency_ms);

//  A message recorded as dispatched left its sender's hands.
void fq_metrics_batch_settled(fq_metrics_batch_t *self, int64_t tenant_id, int64_t request_id,
                              uint64_t sender, fq_metrics_outcome_t outcome);

//  A message recorded as dispatched was acked (and settled as
//  FQ_METRICS_SENT): delivery_us, microseconds from its hand-off to a
//  sender to its ACK; end_to_end_ms, milliseconds from when its request
//  was due (accepted, or its send_at if later) to its ACK (fq_latency.h);
//  either < 0 when not known. channel and destination (borrowed until the
//  batch flushes) say where it went: NULL for none, and then it counts for
//  its tenant only. Nacks and deferrals are not recorded: a timeout would
//  read as a slow delivery and a quick refusal as a quick one.
void fq_metrics_batch_delivered(fq_metrics_batch_t *self, int64_t tenant_id, const char *channel,
                                const char *destination, int64_t delivery_us,
                                int64_t end_to_end_ms);

//  A message that can never be rendered went dead without a sender.
void fq_metrics_batch_unsendable(fq_metrics_batch_t *self, int64_t tenant_id);

//  A sender's messages in hand and free credit right now.
void fq_metrics_batch_sender(fq_metrics_batch_t *self, uint64_t sender, int64_t inflight,
                             int64_t credit);

//  The dispatcher's outcomes received and not yet written by the store,
//  the times it has stopped dispatch until the store caught up
//  (actors/fq_store_window.h) and how long in all, in microseconds:
//  fairq_store_unwritten, fairq_store_waits_total and
//  fairq_store_wait_seconds_total.
void fq_metrics_batch_store(fq_metrics_batch_t *self, int64_t unwritten, int64_t waits,
                            int64_t wait_us);

//  A database batch of rows took usecs microseconds (zclock_usecs()
//  apart); ok false: it failed (counted as an error, not observed).
void fq_metrics_batch_db(fq_metrics_batch_t *self, fq_metrics_statement_t statement, size_t rows,
                         int64_t usecs, bool ok);

#endif
