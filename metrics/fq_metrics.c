/*  fq_metrics.c — fairqd's figures in memory, written as Prometheus text.

    Actors gather records in a batch of their own (an array, no lock) and
    apply it in one go; HTTP threads read under the same lock. Rendering
    copies what it needs under the lock and formats without it, so a scrape
    never holds up the dispatcher for longer than a copy. */
#include "fq_metrics.h"
#include "fq_buf.h"
#include "fq_intkeys.h"
#include "fq_limits.h"
#include "fq_utf8.h"
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  The send rate of the HTTP API is "messages acked per second over the
//  last minute": acks are counted per second in a ring this long.
#define S_RATE_WINDOW_S 60
#define S_MS_PER_S      1000.0
#define S_US_PER_S      1000000.0

//  Records a batch holds before it flushes by itself: well above one
//  DISPATCH (256 messages) and what settles between two flushes, so a
//  batch flushes when its actor says, not midway.
#define S_BATCH_EVENTS 1024

//  Departed senders whose counters stay on show. Past this many they are
//  forgotten (one coming back later starts over, which Prometheus reads as
//  a counter reset): a peer saying HELLO under ever new names must not
//  make fairqd keep each one.
#define S_SENDERS_GONE_MAX 64

//  A sender's name and address are its remote peer's choice and appear in
//  every scrape, on every sender series: they are cut to this many bytes.
#define S_LABEL_MAX FQ_METRICS_LABEL_MAX

//  Milliseconds of a slot of the tenants' share of dispatch.
#define S_SHARE_SLOT_MS (FQ_METRICS_SHARE_SLOT_S * 1000)

//  Shown in place of a byte of a label that is not UTF-8 (the exposition
//  must be UTF-8): U+FFFD, the replacement character.
#define S_REPLACEMENT "\xEF\xBF\xBD"

//  Clients (fq_client_t) of threads that are not actors live under this
//  path, one per HTTP request or tool run, each with a new number: as
//  series they would only churn, and they are left out.
#define S_CLIENT_PREFIX "/temp/"

//  Room first made for the actors' figures: fairqd runs a dozen actors
//  and its splitters; grown by doubling.
#define S_ACTORS_INITIAL 32

//  Digits of a double: most read back the same from 15 (and look as
//  written: 0.1, not 0.10000000000000001); 17 always do.
#define S_DOUBLE_SHORT 15
#define S_DOUBLE_EXACT 17
//  Room for one: sign, 17 digits, point, "e-308" and the NUL, with margin.
#define S_DOUBLE_TEXT 32

#define S_COUNT(array) (sizeof(array) / sizeof((array)[0]))

//  ---------------------------------------------------------------------
//  Histograms

//  Dispatch latency in seconds: a lone message goes out within
//  milliseconds of its submit; the last of a campaign of millions waits
//  its turn for hours, so the buckets reach four hours.
static const double s_latency_bounds[] = {0.005, 0.01, 0.025, 0.05, 0.1,  0.25, 0.5,
                                          1,     2.5,  5,     10,   30,   60,   120,
                                          300,   600,  1800,  3600, 7200, 14400};

//  Rows of a database batch: from a lone ack to FQ_STORE_LOAD_MAX.
static const double s_rows_bounds[] = {1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000};

//  Seconds of a database batch: a fraction of a millisecond when all is
//  well, up to what a statement may take before the database gives up.
static const double s_seconds_bounds[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                          0.1,    0.25,  0.5,    1,     2.5,  5,     10};

#define S_BUCKETS_MAX 20
_Static_assert(S_COUNT(s_latency_bounds) <= S_BUCKETS_MAX, "latency buckets");
_Static_assert(S_COUNT(s_rows_bounds) <= S_BUCKETS_MAX, "rows buckets");
_Static_assert(S_COUNT(s_seconds_bounds) <= S_BUCKETS_MAX, "seconds buckets");

typedef struct {
    uint64_t buckets[S_BUCKETS_MAX + 1]; //  Per bound, not cumulative; the last above all
    uint64_t count;
    double sum;
} s_histogram_t;

static void s_observe(s_histogram_t *histogram, const double *bounds, size_t nbounds, double value)
{
    size_t i = 0;
    while (i < nbounds && value > bounds[i])
        i++;
    histogram->buckets[i]++;
    histogram->count++;
    histogram->sum += value;
}

//  ---------------------------------------------------------------------
//  What is kept

//  Outcomes counted (FQ_METRICS_RELEASED is not one)
#define S_OUTCOMES FQ_METRICS_RELEASED

//  All int64_t, so that the families below read them by offset.
typedef struct {
    int64_t submitted, split, rejected, dispatched;
    int64_t outcomes[S_OUTCOMES];
    int64_t inflight;
    int64_t suppressed; //  Recipients refused at split: on a suppression list
    int64_t bounced;    //  Hard bounces (suppress_bounces)
    int64_t send_held;  //  1 while its send budget holds it out of dispatch
    int64_t sent_today; //  Counted against its daily quota (0 without one)
} s_tenant_counts_t;

typedef struct {
    int64_t id;
    char name[FQ_TENANT_NAME_SIZE]; //  "" until told
    s_tenant_counts_t counts;
    s_histogram_t latency;
    int64_t rate_second[S_RATE_WINDOW_S]; //  The second each slot counts
    int64_t rate_count[S_RATE_WINDOW_S];  //  Acks in that second
    fq_latency_t *delivered;              //  Made at its first delivery; NULL: none yet
    //  Its share of dispatch: the slot (S_SHARE_SLOT_MS of the clock) each
    //  ring entry counts, and the messages handed to senders in it
    int64_t share_slot[FQ_METRICS_SHARE_SLOTS];
    int64_t share_count[FQ_METRICS_SHARE_SLOTS];
} s_tenant_t;

typedef struct {
    int64_t up; //  1 connected, 0 left
    int64_t dispatched;
    int64_t outcomes[S_OUTCOMES];
    int64_t inflight, credit;
} s_sender_counts_t;

typedef struct {
    uint64_t id;
    char *name, *address; //  Cut to S_LABEL_MAX bytes
    s_sender_counts_t counts;
} s_sender_t;

typedef struct {
    s_histogram_t rows, seconds;
    int64_t errors;
} s_db_t;

//  Most channels shown (as many as the scheduler keeps lanes for).
#define S_CHANNELS_MAX 32

//  One channel's lane, as the scheduler last said.
typedef struct {
    char name[S_LABEL_MAX + 1];
    int64_t ready, credit, inflight;
} s_channel_t;

//  Most destinations kept: as many as an operator configures, with room to
//  spare; past it a new one is not shown, so that no runaway can grow
//  fairqd without end.
#define S_DESTINATIONS_MAX 10000

//  The states a destination's state gauge has a series for, always: a
//  dashboard finds each, 1 for the current one and 0 for the others.
static const char *const s_destination_states[] = {"open", "throttled", "suspended"};

//  One destination, as the scheduler last said: its figures as told, their
//  strings (name, state) copied beside them and their pointers NULL.
typedef struct {
    char name[FQ_DESTINATION_NAME_SIZE];
    char state[FQ_METRICS_STATE_SIZE];
    fq_metrics_destination_t figures;
} s_destination_t;

//  The delivery and end-to-end times of one channel's messages to one
//  destination (a destination takes mail and http alike). As many as
//  destinations are kept, S_DESTINATIONS_MAX; a delivery past them counts
//  for its tenant only.
typedef struct {
    char destination[FQ_DESTINATION_NAME_SIZE];
    char channel[S_LABEL_MAX + 1];
    fq_latency_t latency;
} s_route_t;

//  A route's key: its destination, a tab (in no destination's name,
//  0016), its channel.
#define S_ROUTE_KEY_SIZE (FQ_DESTINATION_NAME_SIZE + S_LABEL_MAX + 2)

//  A figure read from the database by the HTTP threads at most once each
//  FQ_METRICS_RATES_REFRESH_MS (fq_metrics.h says why), and by one caller
//  at a time.
typedef struct {
    int64_t at;   //  now_ms() of the last read
    bool read;    //  Once read at all
    bool reading; //  A caller was told to read it, and has not said
} s_refresh_t;

struct fq_metrics {
    pthread_mutex_t lock;
    zhashx_t *tenants;      //  Tenant id -> s_tenant_t*, owned
    zhashx_t *tenant_names; //  Name -> s_tenant_t*, borrowed
    zhashx_t *senders;      //  Sender id -> s_sender_t*, owned
    zhashx_t *requests;     //  Request id -> messages in flight (the value pointer itself)
    uint64_t last_sender;   //  The last id handed out
    size_t senders_gone;
    s_db_t db[FQ_METRICS_DB_COUNT];
    //  Outcomes the store has not written yet, and the times dispatch
    //  waited for it and how long (fq_metrics_batch_store)
    int64_t store_unwritten, store_waits, store_wait_us;
    int64_t (*now_ms)(void *arg);
    void *clock_arg;
    const fq_lease_t *lease; //  Who leads; NULL: not said
    s_channel_t channels[S_CHANNELS_MAX];
    size_t nchannels;
    zhashx_t *destinations; //  Name -> s_destination_t*, owned
    zhashx_t *routes;       //  Route key -> s_route_t*, owned
    //  The tenants' rates as last read (fq_metrics_tenant_rates), by name
    fq_tenant_rates_t *rates;
    size_t nrates;
    s_refresh_t rates_refresh;
    char *errors; //  fairq_message_errors' samples as last read; NULL: none yet
    s_refresh_t errors_refresh;
};

typedef enum {
    S_SUBMITTED,
    S_SPLIT,
    S_DISPATCHED,
    S_SETTLED,
    S_UNSENDABLE,
    S_SENDER,
    S_DB,
    S_SUPPRESSED, //  Recipients refused at split as suppressed (a)
    S_BOUNCED,    //  A hard bounce: a permanent failure of a suppress_bounces code
    S_DELIVERED,  //  Acked: its delivery and end-to-end times (a, b)
    S_STORE       //  Outcomes unwritten, times dispatch waited (a, b), how long (time)
} s_kind_t;

//  One record of a batch; which fields count depends on kind.
typedef struct {
    s_kind_t kind;
    int detail; //  Outcome or statement
    int64_t tenant_id;
    int64_t request_id;
    uint64_t sender;
    int64_t a, b; //  Recipients; split, rejected; inflight, credit; rows; us, ms
    int64_t time; //  Latency in ms, or database time in us; < 0: none
    const char *channel, *destination; //  Of a delivery (borrowed until the flush); NULL: none
} s_event_t;

struct fq_metrics_batch {
    fq_metrics_t *metrics;
    size_t count;
    s_event_t events[S_BATCH_EVENTS];
};

//  ---------------------------------------------------------------------
//  Life

static void s_sender_free(void **item)
{
    s_sender_t *sender = *item;
    if (sender) {
        free(sender->name);
        free(sender->address);
        free(sender);
        *item = NULL;
    }
}

//  A destination's or a route's: one allocation.
static void s_tenant_free(void **item)
{
    free(*item);
    *item = NULL;
}

//  A tenant's: its delivery times too.
static void s_tenant_destroy(void **item)
{
    s_tenant_t *tenant = *item;
    if (tenant)
        free(tenant->delivered);
    s_tenant_free(item);
}

static int64_t s_mono_ms(void *arg)
{
    (void)arg;
    return zclock_mono();
}

fq_metrics_t *fq_metrics_new(void)
{
    fq_metrics_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    if (pthread_mutex_init(&self->lock, NULL) != 0) {
        free(self);
        return NULL;
    }
    self->tenants = zhashx_new();
    self->tenant_names = zhashx_new();
    self->senders = zhashx_new();
    self->requests = zhashx_new();
    self->destinations = zhashx_new();
    self->routes = zhashx_new();
    self->now_ms = s_mono_ms;
    if (!self->tenants || !self->tenant_names || !self->senders || !self->requests ||
        !self->destinations || !self->routes) {
        fq_metrics_destroy(&self);
        return NULL;
    }
    fq_intkeys_use(self->tenants);
    zhashx_set_destructor(self->tenants, s_tenant_destroy);
    fq_intkeys_use(self->senders);
    zhashx_set_destructor(self->senders, s_sender_free);
    fq_intkeys_use(self->requests);
    zhashx_set_destructor(self->destinations, s_tenant_free);
    zhashx_set_destructor(self->routes, s_tenant_free);
    return self;
}

void fq_metrics_destroy(fq_metrics_t **self_p)
{
    fq_metrics_t *self = *self_p;
    if (!self)
        return;
    zhashx_destroy(&self->tenant_names);
    zhashx_destroy(&self->tenants);
    zhashx_destroy(&self->senders);
    zhashx_destroy(&self->requests);
    zhashx_destroy(&self->destinations);
    zhashx_destroy(&self->routes);
    free(self->rates);
    free(self->errors);
    pthread_mutex_destroy(&self->lock);
    free(self);
    *self_p = NULL;
}

void fq_metrics_set_clock(fq_metrics_t *self, int64_t (*now_ms)(void *arg), void *arg)
{
    if (!self)
        return;
    pthread_mutex_lock(&self->lock);
    self->now_ms = now_ms ? now_ms : s_mono_ms;
    self->clock_arg = arg;
    pthread_mutex_unlock(&self->lock);
}

void fq_metrics_set_lease(fq_metrics_t *self, const fq_lease_t *lease)
{
    if (self)
        self->lease = lease;
}

//  ---------------------------------------------------------------------
//  Under the lock

//  The tenant of id, made on first use. NULL for no tenant (id 0) or when
//  out of memory.
static s_tenant_t *s_tenant(fq_metrics_t *self, int64_t id)
{
    if (id <= 0)
        return NULL;
    s_tenant_t *tenant = fq_intkey_lookup(self->tenants, id);
    if (!tenant) {
        tenant = calloc(1, sizeof *tenant);
        if (!tenant)
            return NULL;
        tenant->id = id;
        fq_intkey_insert(self->tenants, id, tenant);
    }
    return tenant;
}

//  The whole second of the clock now.
static int64_t s_second(fq_metrics_t *self)
{
    return self->now_ms(self->clock_arg) / (int64_t)S_MS_PER_S;
}

static size_t s_rate_slot(int64_t second)
{
    return (size_t)(((second % S_RATE_WINDOW_S) + S_RATE_WINDOW_S) % S_RATE_WINDOW_S);
}

//  The share slot of a time of the clock: floored, so that a test's clock
//  may start anywhere.
static int64_t s_share_slot(int64_t ms)
{
    return ms >= 0 ? ms / S_SHARE_SLOT_MS : -((-ms + S_SHARE_SLOT_MS - 1) / S_SHARE_SLOT_MS);
}

static size_t s_share_index(int64_t slot)
{
    return (size_t)(((slot % FQ_METRICS_SHARE_SLOTS) + FQ_METRICS_SHARE_SLOTS) %
                    FQ_METRICS_SHARE_SLOTS);
}

//  One message more handed to a sender in slot; an entry of the ring that
//  counted a slot a full ring ago starts again.
static void s_share_add(s_tenant_t *tenant, int64_t slot)
{
    size_t at = s_share_index(slot);
    if (tenant->share_slot[at] != slot) {
        tenant->share_slot[at] = slot;
        tenant->share_count[at] = 0;
    }
    tenant->share_count[at]++;
}

static void s_rate_add(s_tenant_t *tenant, int64_t second)
{
    size_t slot = s_rate_slot(second);
    if (tenant->rate_second[slot] != second) {
        tenant->rate_second[slot] = second;
        tenant->rate_count[slot] = 0;
    }
    tenant->rate_count[slot]++;
}

//  Acks per second over the window that ends with this second.
static double s_rate(const s_tenant_t *tenant, int64_t second)
{
    int64_t acks = 0;
    for (size_t i = 0; i < S_RATE_WINDOW_S; i++)
        if (tenant->rate_second[i] > second - S_RATE_WINDOW_S && tenant->rate_second[i] <= second)
            acks += tenant->rate_count[i];
    return (double)acks / S_RATE_WINDOW_S;
}

//  Counts one more (or one less) message of a request in flight; a
//  request with none left leaves the table, which so stays as small as
//  what is in flight.
static void s_request_add(fq_metrics_t *self, int64_t request_id, int64_t delta)
{
    if (request_id <= 0)
        return;
    int64_t n = (int64_t)(uintptr_t)fq_intkey_lookup(self->requests, request_id) + delta;
    if (n > 0)
        fq_intkey_update(self->requests, request_id, (void *)(uintptr_t)n);
    else
        fq_intkey_delete(self->requests, request_id);
}

//  The route of destination and channel, made on first use; NULL when
//  there are S_DESTINATIONS_MAX already, or out of memory.
static s_route_t *s_route(fq_metrics_t *self, const char *destination, const char *channel)
{
    char key[S_ROUTE_KEY_SIZE];
    snprintf(key, sizeof key, "%.*s\t%.*s", FQ_DESTINATION_NAME_MAX, destination, S_LABEL_MAX,
             channel);
    s_route_t *route = zhashx_lookup(self->routes, key);
    if (route || zhashx_size(self->routes) >= S_DESTINATIONS_MAX)
        return route;
    route = calloc(1, sizeof *route);
    if (!route)
        return NULL;
    snprintf(route->destination, sizeof route->destination, "%s", destination);
    //  Not within a UTF-8 sequence: the channel is a label
    size_t length = fq_utf8_prefix(channel, strnlen(channel, S_LABEL_MAX + 1), S_LABEL_MAX);
    memcpy(route->channel, channel, length);
    if (zhashx_insert(self->routes, key, route) != 0) {
        free(route);
        return NULL;
    }
    return route;
}

//  A delivery's times, into its tenant's figures and its route's.
static void s_delivered(fq_metrics_t *self, s_tenant_t *tenant, const s_event_t *event,
                        int64_t second)
{
    double delivery_s = event->a >= 0 ? (double)event->a / S_US_PER_S : -1;
    double end_to_end_s = event->b >= 0 ? (double)event->b / S_MS_PER_S : -1;
    if (tenant && !tenant->delivered)
        tenant->delivered = calloc(1, sizeof *tenant->delivered);
    if (tenant && tenant->delivered)
        fq_latency_observe(tenant->delivered, second, delivery_s, end_to_end_s);
    s_route_t *route = event->destination && event->channel
                           ? s_route(self, event->destination, event->channel)
                           : NULL;
    if (route)
        fq_latency_observe(&route->latency, second, delivery_s, end_to_end_s);
}

//  Applies one record; second and share_slot are the clock's at the
//  flush, read once for the whole batch.
static void s_apply(fq_metrics_t *self, const s_event_t *event, int64_t second, int64_t share_slot)
{
    s_tenant_t *tenant = s_tenant(self, event->tenant_id);
    s_sender_t *sender = event->sender ? fq_intkey_lookup(self->senders, event->sender) : NULL;
    switch (event->kind) {
    case S_SUBMITTED:
        if (tenant)
            tenant->counts.submitted += event->a;
        break;
    case S_SPLIT:
        if (tenant) {
            tenant->counts.split += event->a;
            tenant->counts.rejected += event->b;
        }
        break;
    case S_DISPATCHED:
        if (tenant) {
            tenant->counts.dispatched++;
            tenant->counts.inflight++;
            s_share_add(tenant, share_slot);
            if (event->time >= 0)
                s_observe(&tenant->latency, s_latency_bounds, S_COUNT(s_latency_bounds),
                          (double)event->time / S_MS_PER_S);
        }
        if (sender)
            sender->counts.dispatched++;
        s_request_add(self, event->request_id, 1);
        break;
    case S_SETTLED:
        //  Never below 0: a record lost to a full memory must not leave a
        //  negative gauge behind
        if (tenant && tenant->counts.inflight > 0)
            tenant->counts.inflight--;
        s_request_add(self, event->request_id, -1);
        if (event->detail < S_OUTCOMES) {
            if (tenant)
                tenant->counts.outcomes[event->detail]++;
            if (sender)
                sender->counts.outcomes[event->detail]++;
        }
        if (tenant && event->detail == FQ_METRICS_SENT)
            s_rate_add(tenant, second);
        break;
    case S_UNSENDABLE:
        if (tenant)
            tenant->counts.outcomes[FQ_METRICS_DEAD]++;
        break;
    case S_SUPPRESSED:
        if (tenant)
            tenant->counts.suppressed += event->a;
        break;
    case S_BOUNCED:
        if (tenant)
            tenant->counts.bounced++;
        break;
    case S_DELIVERED:
        s_delivered(self, tenant, event, second);
        break;
    case S_SENDER:
        if (sender && sender->counts.up) {
            sender->counts.inflight = event->a;
            sender->counts.credit = event->b;
        }
        break;
    case S_STORE:
        self->store_unwritten = event->a;
        self->store_waits = event->b;
        self->store_wait_us = event->time;
        break;
    case S_DB: {
        s_db_t *db = &self->db[event->detail];
        if (event->time < 0)
            db->errors++;
        else {
            s_observe(&db->rows, s_rows_bounds, S_COUNT(s_rows_bounds), (double)event->a);
            s_observe(&db->seconds, s_seconds_bounds, S_COUNT(s_seconds_bounds),
                      (double)event->time / S_US_PER_S);
        }
        break;
    }
    }
}

//  ---------------------------------------------------------------------
//  Names and senders

void fq_metrics_tenant_name(fq_metrics_t *self, int64_t tenant_id, const char *name)
{
    if (!self || !name || !*name)
        return;
    pthread_mutex_lock(&self->lock);
    s_tenant_t *tenant = s_tenant(self, tenant_id);
    if (tenant && strncmp(tenant->name, name, sizeof tenant->name) != 0) {
        if (*tenant->name && zhashx_lookup(self->tenant_names, tenant->name) == tenant)
            zhashx_delete(self->tenant_names, tenant->name);
        snprintf(tenant->name, sizeof tenant->name, "%s", name);
        //  A name now on another id (the tenant was made again) leaves
        //  the old one, so that no two series carry the same name
        s_tenant_t *before = zhashx_lookup(self->tenant_names, tenant->name);
        if (before && before != tenant)
            *before->name = '\0';
        zhashx_update(self->tenant_names, tenant->name, tenant);
    }
    pthread_mutex_unlock(&self->lock);
}

//  A copy of text cut to S_LABEL_MAX bytes, not within a UTF-8 sequence.
static char *s_label_dup(const char *text)
{
    return strndup(text, fq_utf8_prefix(text, strnlen(text, S_LABEL_MAX + 1), S_LABEL_MAX));
}

//  Forgets the senders that left, once too many are kept.
static void s_forget_gone(fq_metrics_t *self)
{
    uint64_t gone[S_SENDERS_GONE_MAX + 1];
    size_t n = 0;
    for (s_sender_t *sender = zhashx_first(self->senders); sender && n < S_COUNT(gone);
         sender = zhashx_next(self->senders))
        if (!sender->counts.up)
            gone[n++] = sender->id;
    for (size_t i = 0; i < n; i++)
        fq_intkey_delete(self->senders, gone[i]);
    self->senders_gone -= n;
}

uint64_t fq_metrics_sender_join(fq_metrics_t *self, const char *name, const char *address)
{
    if (!self)
        return 0;
    char *label = s_label_dup(name ? name : ""), *where = s_label_dup(address ? address : "");
    uint64_t id = 0;
    pthread_mutex_lock(&self->lock);
    s_sender_t *sender = zhashx_first(self->senders);
    while (sender && label && where &&
           (strcmp(sender->name, label) != 0 || strcmp(sender->address, where) != 0))
        sender = zhashx_next(self->senders);
    if (sender) {
        //  Back again: its counters go on
        if (!sender->counts.up)
            self->senders_gone--;
        sender->counts.up = 1;
        id = sender->id;
    } else if (label && where && (sender = calloc(1, sizeof *sender))) {
        *sender = (s_sender_t){.id = ++self->last_sender, .name = label, .address = where};
        sender->counts.up = 1;
        label = where = NULL;
        fq_intkey_insert(self->senders, sender->id, sender);
        id = sender->id;
    }
    pthread_mutex_unlock(&self->lock);
    free(label);
    free(where);
    return id;
}

void fq_metrics_sender_leave(fq_metrics_t *self, uint64_t id)
{
    if (!self || !id)
        return;
    pthread_mutex_lock(&self->lock);
    s_sender_t *sender = fq_intkey_lookup(self->senders, id);
    if (sender && sender->counts.up) {
        sender->counts.up = 0;
        sender->counts.inflight = 0;
        sender->counts.credit = 0;
        if (++self->senders_gone > S_SENDERS_GONE_MAX)
            s_forget_gone(self);
    }
    pthread_mutex_unlock(&self->lock);
}

//  ---------------------------------------------------------------------
//  Queries

int64_t fq_metrics_request_inflight(fq_metrics_t *self, int64_t request_id)
{
    if (!self || request_id <= 0)
        return 0;
    pthread_mutex_lock(&self->lock);
    int64_t n = (int64_t)(uintptr_t)fq_intkey_lookup(self->requests, request_id);
    pthread_mutex_unlock(&self->lock);
    return n;
}

void fq_metrics_tenant_live(fq_metrics_t *self, const char *tenant, int64_t *inflight,
                            double *send_rate)
{
    int64_t n = 0;
    double rate = 0;
    if (self && tenant) {
        pthread_mutex_lock(&self->lock);
        s_tenant_t *found = zhashx_lookup(self->tenant_names, tenant);
        if (found) {
            n = found->counts.inflight;
            rate = s_rate(found, s_second(self));
        }
        pthread_mutex_unlock(&self->lock);
    }
    if (inflight)
        *inflight = n;
    if (send_rate)
        *send_rate = rate;
}

void fq_metrics_tenant_latency(fq_metrics_t *self, const char *tenant, fq_latency_view_t *out)
{
    fq_latency_pair_t window = {0};
    if (self && tenant) {
        pthread_mutex_lock(&self->lock);
        s_tenant_t *found = zhashx_lookup(self->tenant_names, tenant);
        if (found && found->delivered)
            fq_latency_window(found->delivered, s_second(self), &window);
        pthread_mutex_unlock(&self->lock);
    }
    fq_latency_view(&window, out);
}

void fq_metrics_destination_latency(fq_metrics_t *self, const char *destination,
                                    fq_latency_view_t *out)
{
    fq_latency_pair_t window = {0};
    if (self && destination) {
        pthread_mutex_lock(&self->lock);
        int64_t second = s_second(self);
        //  Its channels, one route each: a walk of as many routes as
        //  destinations, for one API call
        for (s_route_t *route = zhashx_first(self->routes); route;
             route = zhashx_next(self->routes))
            if (strcmp(route->destination, destination) == 0)
                fq_latency_window(&route->latency, second, &window);
        pthread_mutex_unlock(&self->lock);
    }
    fq_latency_view(&window, out);
}

static int s_sender_view_order(const void *a, const void *b)
{
    const fq_metrics_sender_view_t *x = a, *y = b;
    int order = strcmp(x->name, y->name);
    return order ? order : strcmp(x->address, y->address);
}

//  How often a copy allocates again for a table that grew between its
//  count and its copy before it copies what fits: tenants and senders come
//  rarely, so a second try all but always has room.
#define S_COPY_TRIES 3

//  Rows of size bytes, one for each entry of table and at least one,
//  allocated outside the lock (a pipeline thread recording must never
//  wait on an allocation of an HTTP thread's), then the lock taken: a
//  table that grew in between is counted again, S_COPY_TRIES times at
//  most. Returns the rows (the caller frees them) with the lock held, and
//  in *room how many rows there are, the most to copy; NULL when out of
//  memory, the lock not held.
static void *s_rows_locked(fq_metrics_t *self, zhashx_t *table, size_t size, size_t *room)
{
    pthread_mutex_lock(&self->lock);
    size_t want = zhashx_size(table);
    pthread_mutex_unlock(&self->lock);
    for (int tries = 1;; tries++) {
        void *rows = calloc(want ? want : 1, size);
        if (!rows)
            return NULL;
        pthread_mutex_lock(&self->lock);
        size_t now = zhashx_size(table);
        if (now <= want || tries == S_COPY_TRIES) {
            *room = want ? want : 1;
            return rows;
        }
        pthread_mutex_unlock(&self->lock);
        free(rows);
        want = now;
    }
}

int fq_metrics_senders(fq_metrics_t *self, fq_metrics_sender_list_t *list)
{
    *list = (fq_metrics_sender_list_t){0};
    if (!self)
        return 0;
    //  Copied under the lock into rows of fixed size, allocated before it;
    //  sorted after it
    size_t room;
    list->rows = s_rows_locked(self, self->senders, sizeof *list->rows, &room);
    if (!list->rows)
        return -1;
    for (s_sender_t *sender = zhashx_first(self->senders); sender && list->count < room;
         sender = zhashx_next(self->senders)) {
        fq_metrics_sender_view_t *row = &list->rows[list->count++];
        snprintf(row->name, sizeof row->name, "%s", sender->name);
        snprintf(row->address, sizeof row->address, "%s", sender->address);
        const s_sender_counts_t *counts = &sender->counts;
        row->connected = counts->up != 0;
        row->credit = counts->credit;
        row->inflight = counts->inflight;
        row->dispatched = counts->dispatched;
        row->sent = counts->outcomes[FQ_METRICS_SENT];
        row->failed = counts->outcomes[FQ_METRICS_FAILED];
        row->dead = counts->outcomes[FQ_METRICS_DEAD];
        row->requeued = counts->outcomes[FQ_METRICS_REQUEUED];
    }
    pthread_mutex_unlock(&self->lock);
    qsort(list->rows, list->count, sizeof *list->rows, s_sender_view_order);
    return 0;
}

void fq_metrics_sender_list_free(fq_metrics_sender_list_t *list)
{
    free(list->rows);
    *list = (fq_metrics_sender_list_t){0};
}

static int s_share_order(const void *a, const void *b)
{
    return strcmp(((const fq_metrics_share_t *)a)->name, ((const fq_metrics_share_t *)b)->name);
}

//  Copies tenant's counts of the window of slots that ends with newest
//  into row, oldest first; returns their sum.
static int64_t s_share_copy(const s_tenant_t *tenant, int64_t newest, size_t slots,
                            fq_metrics_share_t *row)
{
    int64_t sum = 0;
    for (size_t i = 0; i < slots; i++) {
        int64_t slot = newest - (int64_t)(slots - 1 - i);
        size_t at = s_share_index(slot);
        row->dispatched[i] = tenant->share_slot[at] == slot ? tenant->share_count[at] : 0;
        sum += row->dispatched[i];
    }
    return sum;
}

//  Adds tenant's row to list when it was handed a message in the window
//  of list->slots that ends with newest; a tenant without a name yet, or
//  whose name went to another id (made again), has none: one row per
//  name. There is room for it.
static void s_share_row(fq_metrics_share_list_t *list, const s_tenant_t *tenant, int64_t newest)
{
    fq_metrics_share_t *row = &list->rows[list->count];
    if (*tenant->name && s_share_copy(tenant, newest, list->slots, row) > 0) {
        memcpy(row->name, tenant->name, sizeof row->name);
        list->count++;
    }
}

int fq_metrics_share(fq_metrics_t *self, size_t slots, const char *tenant,
                     fq_metrics_share_list_t *list)
{
    if (slots < 1)
        slots = 1;
    if (slots > FQ_METRICS_SHARE_SLOTS)
        slots = FQ_METRICS_SHARE_SLOTS;
    *list = (fq_metrics_share_list_t){.slots = slots, .until_in_ms = S_SHARE_SLOT_MS};
    if (!self)
        return 0;
    //  One tenant's row is looked up by its name; every tenant's are
    //  copied into rows allocated before the lock (s_rows_locked)
    size_t room = 1;
    if (tenant) {
        list->rows = calloc(room, sizeof *list->rows);
        if (list->rows)
            pthread_mutex_lock(&self->lock);
    } else
        list->rows = s_rows_locked(self, self->tenants, sizeof *list->rows, &room);
    if (!list->rows)
        return -1;
    int64_t now_ms = self->now_ms(self->clock_arg), newest = s_share_slot(now_ms);
    list->until_in_ms = (newest + 1) * S_SHARE_SLOT_MS - now_ms;
    if (tenant) {
        const s_tenant_t *found = zhashx_lookup(self->tenant_names, tenant);
        if (found)
            s_share_row(list, found, newest);
    } else
        for (s_tenant_t *found = zhashx_first(self->tenants); found && list->count < room;
             found = zhashx_next(self->tenants))
            s_share_row(list, found, newest);
    pthread_mutex_unlock(&self->lock);
    qsort(list->rows, list->count, sizeof *list->rows, s_share_order);
    return 0;
}

void fq_metrics_share_list_free(fq_metrics_share_list_t *list)
{
    free(list->rows);
    *list = (fq_metrics_share_list_t){0};
}

//  ---------------------------------------------------------------------
//  Batches

fq_metrics_batch_t *fq_metrics_batch_new(fq_metrics_t *metrics)
{
    if (!metrics)
        return NULL;
    fq_metrics_batch_t *self = malloc(sizeof *self);
    if (self) {
        self->metrics = metrics;
        self->count = 0;
    }
    return self;
}

void fq_metrics_batch_destroy(fq_metrics_batch_t **self_p)
{
    fq_metrics_batch_t *self = *self_p;
    if (self) {
        fq_metrics_batch_flush(self);
        free(self);
        *self_p = NULL;
    }
}

void fq_metrics_batch_flush(fq_metrics_batch_t *self)
{
    if (!self || self->count == 0)
        return;
    fq_metrics_t *metrics = self->metrics;
    pthread_mutex_lock(&metrics->lock);
    int64_t now_ms = metrics->now_ms(metrics->clock_arg);
    int64_t second = now_ms / (int64_t)S_MS_PER_S, share_slot = s_share_slot(now_ms);
    for (size_t i = 0; i < self->count; i++)
        s_apply(metrics, &self->events[i], second, share_slot);
    pthread_mutex_unlock(&metrics->lock);
    self->count = 0;
}

//  The next record of the batch, flushing it first when it is full.
static s_event_t *s_event(fq_metrics_batch_t *self, s_kind_t kind, int64_t tenant_id)
{
    if (self->count == S_BATCH_EVENTS)
        fq_metrics_batch_flush(self);
    s_event_t *event = &self->events[self->count++];
    *event = (s_event_t){.kind = kind, .tenant_id = tenant_id, .time = -1};
    return event;
}

void fq_metrics_batch_submitted(fq_metrics_batch_t *self, int64_t tenant_id, int64_t recipients)
{
    if (self)
        s_event(self, S_SUBMITTED, tenant_id)->a = recipients;
}

void fq_metrics_batch_split(fq_metrics_batch_t *self, int64_t tenant_id, int64_t split,
                            int64_t rejected)
{
    if (self) {
        s_event_t *event = s_event(self, S_SPLIT, tenant_id);
        event->a = split;
        event->b = rejected;
    }
}

void fq_metrics_batch_suppressed(fq_metrics_batch_t *self, int64_t tenant_id, int64_t recipients)
{
    if (self && recipients > 0)
        s_event(self, S_SUPPRESSED, tenant_id)->a = recipients;
}

void fq_metrics_batch_bounced(fq_metrics_batch_t *self, int64_t tenant_id)
{
    if (self)
        s_event(self, S_BOUNCED, tenant_id);
}

void fq_metrics_batch_dispatched(fq_metrics_batch_t *self, int64_t tenant_id, int64_t request_id,
                                 uint64_t sender, int64_t latency_ms)
{
    if (self) {
        s_event_t *event = s_event(self, S_DISPATCHED, tenant_id);
        event->request_id = request_id;
        event->sender = sender;
        event->time = latency_ms;
    }
}

void fq_metrics_batch_settled(fq_metrics_batch_t *self, int64_t tenant_id, int64_t request_id,
                              uint64_t sender, fq_metrics_outcome_t outcome)
{
    if (self && outcome >= FQ_METRICS_SENT && outcome <= FQ_METRICS_RELEASED) {
        s_event_t *event = s_event(self, S_SETTLED, tenant_id);
        event->request_id = request_id;
        event->sender = sender;
        event->detail = (int)outcome;
    }
}

void fq_metrics_batch_delivered(fq_metrics_batch_t *self, int64_t tenant_id, const char *channel,
                                const char *destination, int64_t delivery_us, int64_t end_to_end_ms)
{
    if (self) {
        s_event_t *event = s_event(self, S_DELIVERED, tenant_id);
        event->channel = channel;
        event->destination = destination;
        event->a = delivery_us;
        event->b = end_to_end_ms;
    }
}

void fq_metrics_batch_unsendable(fq_metrics_batch_t *self, int64_t tenant_id)
{
    if (self)
        s_event(self, S_UNSENDABLE, tenant_id);
}

void fq_metrics_batch_sender(fq_metrics_batch_t *self, uint64_t sender, int64_t inflight,
                             int64_t credit)
{
    if (self && sender) {
        s_event_t *event = s_event(self, S_SENDER, 0);
        event->sender = sender;
        event->a = inflight;
        event->b = credit;
    }
}

void fq_metrics_batch_store(fq_metrics_batch_t *self, int64_t unwritten, int64_t waits,
                            int64_t wait_us)
{
    if (self) {
        s_event_t *event = s_event(self, S_STORE, 0);
        event->a = unwritten;
        event->b = waits;
        event->time = wait_us;
    }
}

void fq_metrics_batch_db(fq_metrics_batch_t *self, fq_metrics_statement_t statement, size_t rows,
                         int64_t usecs, bool ok)
{
    if (self && statement >= FQ_METRICS_DB_ACKS && statement < FQ_METRICS_DB_COUNT) {
        s_event_t *event = s_event(self, S_DB, 0);
        event->detail = (int)statement;
        event->a = (int64_t)rows;
        event->time = ok ? (usecs > 0 ? usecs : 0) : -1;
    }
}

//  ---------------------------------------------------------------------
//  Output: the text is written into one fq_buf_t. Each writer returns 0,
//  or -1 when memory ran out (fq_buf.h), ORed together and checked once.

//  A double in the fewest digits that read back as the same value.
static int s_out_double(fq_buf_t *out, double value)
{
    char text[S_DOUBLE_TEXT];
    snprintf(text, sizeof text, "%.*g", S_DOUBLE_SHORT, value);
    if (strtod(text, NULL) != value)
        snprintf(text, sizeof text, "%.*g", S_DOUBLE_EXACT, value);
    return fq_buf_add_str(out, text);
}

//  A label value as the text format wants it: backslash, double quote and
//  line feed escaped; a byte that is not UTF-8 replaced.
static int s_out_label(fq_buf_t *out, const char *value)
{
    int rc = 0;
    size_t size = strlen(value);
    for (size_t at = 0; at < size;) {
        size_t len = fq_utf8_sequence(value + at, size - at);
        if (value[at] == '\\')
            rc |= fq_buf_add_str(out, "\\\\");
        else if (value[at] == '"')
            rc |= fq_buf_add_str(out, "\\\"");
        else if (value[at] == '\n')
            rc |= fq_buf_add_str(out, "\\n");
        else if (len == 0)
            rc |= fq_buf_add_str(out, S_REPLACEMENT);
        else {
            rc |= fq_buf_add(out, value + at, len);
            at += len;
            continue;
        }
        at++;
    }
    return rc;
}

static int s_out_family(fq_buf_t *out, const char *name, const char *type, const char *help)
{
    return fq_buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

//  Starts a sample: name suffix{label="value" (escaped); the caller
//  writes any other label, the closing brace and the value.
static int s_out_sample(fq_buf_t *out, const char *name, const char *suffix, const char *label,
                        const char *value)
{
    int rc = fq_buf_printf(out, "%s%s{%s=\"", name, suffix, label);
    rc |= s_out_label(out, value);
    return rc | fq_buf_add_char(out, '"');
}

static int s_out_histogram(fq_buf_t *out, const char *name, const char *label, const char *value,
                           const s_histogram_t *histogram, const double *bounds, size_t nbounds)
{
    int rc = 0;
    uint64_t cumulative = 0;
    for (size_t i = 0; i < nbounds; i++) {
        cumulative += histogram->buckets[i];
        rc |= s_out_sample(out, name, "_bucket", label, value);
        rc |= fq_buf_add_str(out, ",le=\"");
        rc |= s_out_double(out, bounds[i]);
        rc |= fq_buf_printf(out, "\"} %" PRIu64 "\n", cumulative);
    }
    rc |= s_out_sample(out, name, "_bucket", label, value);
    rc |= fq_buf_printf(out, ",le=\"+Inf\"} %" PRIu64 "\n", histogram->count);
    rc |= s_out_sample(out, name, "_sum", label, value);
    rc |= fq_buf_add_str(out, "} ");
    rc |= s_out_double(out, histogram->sum);
    rc |= fq_buf_add_char(out, '\n');
    rc |= s_out_sample(out, name, "_count", label, value);
    return rc | fq_buf_printf(out, "} %" PRIu64 "\n", histogram->count);
}

//  ---------------------------------------------------------------------
//  Families

typedef struct {
    const char *name;
    const char *type;
    const char *help;
    size_t offset; //  Of the figure (int64_t, or uint64_t for actors) in its row
} s_family_t;

#define S_TENANT_AT(field) offsetof(s_tenant_counts_t, field)
static const s_family_t s_tenant_families[] = {
    {"fairq_tenant_submitted_total", "counter", "Recipients of the requests this fairqd took up",
     S_TENANT_AT(submitted)},
    {"fairq_tenant_split_total", "counter", "Message rows written by the splitters",
     S_TENANT_AT(split)},
    {"fairq_tenant_rejected_total", "counter", "Recipients rejected by the splitters",
     S_TENANT_AT(rejected)},
    {"fairq_tenant_dispatched_total", "counter", "Messages handed to a sender",
     S_TENANT_AT(dispatched)},
    {"fairq_tenant_sent_total", "counter", "Messages acked by a sender",
     S_TENANT_AT(outcomes[FQ_METRICS_SENT])},
    {"fairq_tenant_failed_total", "counter", "Messages nacked that will be tried again",
     S_TENANT_AT(outcomes[FQ_METRICS_FAILED])},
    {"fairq_tenant_dead_total", "counter",
     "Messages dead: nacked permanently or at their last attempt, or never renderable",
     S_TENANT_AT(outcomes[FQ_METRICS_DEAD])},
    {"fairq_tenant_requeued_total", "counter",
     "Messages given back unsent because their sender left or died",
     S_TENANT_AT(outcomes[FQ_METRICS_REQUEUED])},
    {"fairq_tenant_inflight", "gauge", "Messages in a sender's hands", S_TENANT_AT(inflight)},
    {"fairq_tenant_suppressed_total", "counter",
     "Recipients refused at split because a suppression list holds them", S_TENANT_AT(suppressed)},
    {"fairq_tenant_bounced_total", "counter",
     "Hard bounces: permanent failures whose reply names a code of suppress_bounces",
     S_TENANT_AT(bounced)},
    {"fairq_tenant_send_held", "gauge",
     "1 while the tenant's send rate or daily quota holds its messages back",
     S_TENANT_AT(send_held)},
    {"fairq_tenant_sent_today", "gauge",
     "Messages counted against the tenant's daily quota this UTC day (0 without a quota)",
     S_TENANT_AT(sent_today)},
};

#define S_INFO_AT(field) offsetof(fq_tenant_info_t, field)
static const s_family_t s_tenant_db_families[] = {
    {"fairq_tenant_depth", "gauge", "Pending and failed messages", S_INFO_AT(depth)},
    {"fairq_tenant_failed_waiting", "gauge", "Failed messages waiting for a retry",
     S_INFO_AT(failed)},
    {"fairq_tenant_unsplit", "gauge", "Recipients not yet split into messages", S_INFO_AT(unsplit)},
    {"fairq_tenant_open_requests", "gauge", "Requests accepted, splitting, active or paused",
     S_INFO_AT(open_requests)},
    {"fairq_tenant_oldest_pending_age_seconds", "gauge", "Age of the oldest unfinished request",
     S_INFO_AT(oldest_pending_s)},
    {"fairq_tenant_oldest_due_age_seconds", "gauge",
     "Age of the oldest message due now: not paused, held, scheduled later nor backing off",
     S_INFO_AT(oldest_due_s)},
    {"fairq_tenant_held", "gauge", "1 while an operator holds the tenant's messages",
     S_INFO_AT(held)},
    {"fairq_tenant_daily_quota", "gauge", "Most messages sent a UTC day (0: no quota)",
     S_INFO_AT(daily_quota)},
};

#define S_SENDER_AT(field) offsetof(s_sender_counts_t, field)
static const s_family_t s_sender_families[] = {
    {"fairq_sender_up", "gauge", "1 while the sender is connected, 0 once it left",
     S_SENDER_AT(up)},
    {"fairq_sender_dispatched_total", "counter", "Messages handed to the sender",
     S_SENDER_AT(dispatched)},
    {"fairq_sender_sent_total", "counter", "Messages the sender acked",
     S_SENDER_AT(outcomes[FQ_METRICS_SENT])},
    {"fairq_sender_failed_total", "counter", "Messages the sender nacked, to be tried again",
     S_SENDER_AT(outcomes[FQ_METRICS_FAILED])},
    {"fairq_sender_dead_total", "counter",
     "Messages the sender nacked permanently or at their last attempt",
     S_SENDER_AT(outcomes[FQ_METRICS_DEAD])},
    {"fairq_sender_requeued_total", "counter",
     "Messages given back unsent when the sender left or died",
     S_SENDER_AT(outcomes[FQ_METRICS_REQUEUED])},
    {"fairq_sender_inflight", "gauge", "Messages in the sender's hands", S_SENDER_AT(inflight)},
    {"fairq_sender_credit", "gauge", "Messages the sender may still be given", S_SENDER_AT(credit)},
};

#define S_ACTOR_AT(field) offsetof(fq_actor_stats_t, field)
static const s_family_t s_actor_families[] = {
    {"fairq_actor_mailbox_depth", "gauge", "Messages queued for the actor, not yet handled",
     S_ACTOR_AT(mailbox_depth)},
    {"fairq_actor_handled_total", "counter", "Messages the actor took from its mailbox",
     S_ACTOR_AT(handled)},
    {"fairq_actor_restarts_total", "counter", "Times the actor was restarted after a failure",
     S_ACTOR_AT(restarts)},
    {"fairq_actor_failures_total", "counter", "Failures of the actor", S_ACTOR_AT(failures)},
    {"fairq_actor_malformed_total", "counter",
     "Frames the actor dropped because they did not decode", S_ACTOR_AT(malformed)},
    {"fairq_actor_refused_total", "counter",
     "Messages the actor refused as not allowed from where they came (a peer's message outside "
     "the gateway's admission table, an answer from a sender that does not hold the message)",
     S_ACTOR_AT(refused)},
};

//  As statement="..." in the database families.
static const char *const s_statement_names[FQ_METRICS_DB_COUNT] = {
    [FQ_METRICS_DB_ACKS] = "acks",
    [FQ_METRICS_DB_NACKS] = "nacks",
    [FQ_METRICS_DB_LOAD] = "load",
    [FQ_METRICS_DB_SPLIT] = "split",
};

static int64_t s_int64_at(const void *row, size_t offset)
{
    int64_t value;
    memcpy(&value, (const char *)row + offset, sizeof value);
    return value;
}

//  ---------------------------------------------------------------------
//  Rendering: a copy taken under the lock, written without it

typedef struct {
    int64_t id;
    char name[FQ_TENANT_NAME_SIZE];
    s_tenant_counts_t counts;
    s_histogram_t latency;
    fq_latency_pair_t delivered;  //  Its delivery and end-to-end times since the start
    const fq_tenant_info_t *info; //  From the database, or NULL
} s_tenant_row_t;

//  A route's times since the start, as rendered.
typedef struct {
    char destination[FQ_DESTINATION_NAME_SIZE];
    char channel[S_LABEL_MAX + 1];
    fq_latency_pair_t delivered;
} s_route_row_t;

typedef struct {
    char *name, *address;
    s_sender_counts_t counts;
} s_sender_row_t;

typedef struct {
    s_tenant_row_t *tenants;
    size_t ntenants;
    s_sender_row_t *senders;
    size_t nsenders;
    s_db_t db[FQ_METRICS_DB_COUNT];
    int64_t store_unwritten, store_waits, store_wait_us;
    int64_t requests; //  Requests with messages in flight
    fq_actor_stats_t *actors;
    size_t nactors, actors_size;
    s_channel_t channels[S_CHANNELS_MAX];
    size_t nchannels;
    s_destination_t *destinations; //  By name
    size_t ndestinations;
    s_route_row_t *routes; //  By destination, then channel
    size_t nroutes;
    fq_tenant_rates_t *rates; //  By name
    size_t nrates;
    double rates_age_s;    //  < 0: never read
    char *errors;          //  fairq_message_errors' samples; NULL: none
    uint64_t dead_letters; //  Of the system
    bool failed;           //  Out of memory
} s_snapshot_t;

static int s_by_id(const void *a, const void *b)
{
    int64_t x = ((const s_tenant_row_t *)a)->id, y = ((const s_tenant_row_t *)b)->id;
    return x < y ? -1 : x > y;
}

static int s_by_name(const void *a, const void *b)
{
    return strcmp(((const s_tenant_row_t *)a)->name, ((const s_tenant_row_t *)b)->name);
}

static int s_sender_order(const void *a, const void *b)
{
    const s_sender_row_t *x = a, *y = b;
    int order = strcmp(x->name, y->name);
    return order ? order : strcmp(x->address, y->address);
}

static int s_actor_order(const void *a, const void *b)
{
    return strcmp(((const fq_actor_stats_t *)a)->path, ((const fq_actor_stats_t *)b)->path);
}

static int s_destination_order(const void *a, const void *b)
{
    return strcmp(((const s_destination_t *)a)->name, ((const s_destination_t *)b)->name);
}

//  Copies the destinations (under the lock), by name.
static void s_snapshot_destinations(s_snapshot_t *snap, fq_metrics_t *self)
{
    size_t count = zhashx_size(self->destinations);
    snap->destinations = calloc(count + 1, sizeof *snap->destinations);
    snap->failed = snap->failed || !snap->destinations;
    for (s_destination_t *destination = snap->destinations ? zhashx_first(self->destinations)
                                                           : NULL;
         destination; destination = zhashx_next(self->destinations))
        snap->destinations[snap->ndestinations++] = *destination;
    qsort(snap->destinations, snap->ndestinations, sizeof *snap->destinations, s_destination_order);
}

static int s_route_order(const void *a, const void *b)
{
    const s_route_row_t *x = a, *y = b;
    int order = strcmp(x->destination, y->destination);
    return order ? order : strcmp(x->channel, y->channel);
}

//  Copies the routes' times since the start (under the lock), in order.
static void s_snapshot_routes(s_snapshot_t *snap, fq_metrics_t *self)
{
    snap->routes = calloc(zhashx_size(self->routes) + 1, sizeof *snap->routes);
    snap->failed = snap->failed || !snap->routes;
    for (s_route_t *route = snap->routes ? zhashx_first(self->routes) : NULL; route;
         route = zhashx_next(self->routes)) {
        s_route_row_t *row = &snap->routes[snap->nroutes++];
        memcpy(row->destination, route->destination, sizeof row->destination);
        memcpy(row->channel, route->channel, sizeof row->channel);
        row->delivered = route->latency.total;
    }
    if (snap->nroutes > 1)
        qsort(snap->routes, snap->nroutes, sizeof *snap->routes, s_route_order);
}

//  Copies the tenants' rates (under the lock) and says how old they are.
static void s_snapshot_rates(s_snapshot_t *snap, fq_metrics_t *self)
{
    snap->rates_age_s = -1;
    if (self->errors) {
        snap->errors = strdup(self->errors);
        snap->failed = snap->failed || !snap->errors;
    }
    if (!self->rates_refresh.read)
        return;
    snap->rates_age_s =
        (double)(self->now_ms(self->clock_arg) - self->rates_refresh.at) / S_MS_PER_S;
    snap->rates = calloc(self->nrates + 1, sizeof *snap->rates);
    snap->failed = snap->failed || !snap->rates;
    if (snap->rates && self->nrates) {
        memcpy(snap->rates, self->rates, self->nrates * sizeof *snap->rates);
        snap->nrates = self->nrates;
    }
}

//  Copies what self holds; room is left for the database's tenants.
static void s_snapshot_take(s_snapshot_t *snap, fq_metrics_t *self, size_t extra_tenants)
{
    if (self)
        pthread_mutex_lock(&self->lock);
    size_t ntenants = self ? zhashx_size(self->tenants) : 0,
           nsenders = self ? zhashx_size(self->senders) : 0;
    snap->tenants = calloc(ntenants + extra_tenants + 1, sizeof *snap->tenants);
    snap->senders = calloc(nsenders + 1, sizeof *snap->senders);
    snap->failed = !snap->tenants || !snap->senders;
    for (s_tenant_t *tenant = self && !snap->failed ? zhashx_first(self->tenants) : NULL; tenant;
         tenant = zhashx_next(self->tenants)) {
        s_tenant_row_t *row = &snap->tenants[snap->ntenants++];
        row->id = tenant->id;
        memcpy(row->name, tenant->name, sizeof row->name);
        row->counts = tenant->counts;
        row->latency = tenant->latency;
        if (tenant->delivered)
            row->delivered = tenant->delivered->total;
    }
    for (s_sender_t *sender = self && !snap->failed ? zhashx_first(self->senders) : NULL;
         sender && !snap->failed; sender = zhashx_next(self->senders)) {
        s_sender_row_t *row = &snap->senders[snap->nsenders++];
        row->name = strdup(sender->name);
        row->address = strdup(sender->address);
        row->counts = sender->counts;
        snap->failed = !row->name || !row->address;
    }
    if (self) {
        memcpy(snap->db, self->db, sizeof snap->db);
        snap->store_unwritten = self->store_unwritten;
        snap->store_waits = self->store_waits;
        snap->store_wait_us = self->store_wait_us;
        memcpy(snap->channels, self->channels, sizeof snap->channels);
        snap->nchannels = self->nchannels;
        s_snapshot_destinations(snap, self);
        s_snapshot_routes(snap, self);
        s_snapshot_rates(snap, self);
        snap->requests = (int64_t)zhashx_size(self->requests);
        pthread_mutex_unlock(&self->lock);
    }
}

//  Joins the database's tenants to the copy: their names and gauges, and
//  zero counters for those not seen yet. Tenants without a known name are
//  left out (they show once a splitter or the dispatcher names them).
static void s_snapshot_join(s_snapshot_t *snap, const fq_tenant_list_t *list)
{
    size_t known = snap->ntenants;
    qsort(snap->tenants, known, sizeof *snap->tenants, s_by_id);
    for (size_t i = 0; list && i < list->count; i++) {
        const fq_tenant_info_t *info = &list->rows[i];
        s_tenant_row_t key = {.id = info->id};
        s_tenant_row_t *row = bsearch(&key, snap->tenants, known, sizeof key, s_by_id);
        if (!row) {
            row = &snap->tenants[snap->ntenants++];
            row->id = info->id;
        }
        row->info = info;
        snprintf(row->name, sizeof row->name, "%s", info->name);
    }
    qsort(snap->tenants, snap->ntenants, sizeof *snap->tenants, s_by_name);
    //  One series per name: of two ids under one name (a tenant made
    //  again), the database's
    size_t kept = 0;
    for (size_t i = 0; i < snap->ntenants; i++) {
        s_tenant_row_t *row = &snap->tenants[i];
        if (!*row->name)
            continue;
        if (kept > 0 && strcmp(snap->tenants[kept - 1].name, row->name) == 0) {
            if (row->info)
                snap->tenants[kept - 1] = *row;
            continue;
        }
        snap->tenants[kept++] = *row;
    }
    snap->ntenants = kept;
    qsort(snap->senders, snap->nsenders, sizeof *snap->senders, s_sender_order);
}

static void s_snapshot_actor(const fq_actor_stats_t *stats, void *arg)
{
    s_snapshot_t *snap = arg;
    if (strncmp(stats->path, S_CLIENT_PREFIX, strlen(S_CLIENT_PREFIX)) == 0)
        return;
    if (snap->nactors == snap->actors_size) {
        size_t size = snap->actors_size ? snap->actors_size * 2 : S_ACTORS_INITIAL;
        fq_actor_stats_t *grown = realloc(snap->actors, size * sizeof *grown);
        if (!grown) {
            snap->failed = true;
            return;
        }
        snap->actors = grown;
        snap->actors_size = size;
    }
    snap->actors[snap->nactors++] = *stats;
}

static void s_snapshot_free(s_snapshot_t *snap)
{
    for (size_t i = 0; i < snap->nsenders; i++) {
        free(snap->senders[i].name);
        free(snap->senders[i].address);
    }
    free(snap->senders);
    free(snap->tenants);
    free(snap->actors);
    free(snap->destinations);
    free(snap->routes);
    free(snap->rates);
    free(snap->errors);
}

static int s_render_tenants(fq_buf_t *out, const s_snapshot_t *snap, bool database)
{
    int rc = 0;
    for (size_t f = 0; f < S_COUNT(s_tenant_families); f++) {
        const s_family_t *family = &s_tenant_families[f];
        rc |= s_out_family(out, family->name, family->type, family->help);
        for (size_t i = 0; i < snap->ntenants; i++) {
            rc |= s_out_sample(out, family->name, "", "tenant", snap->tenants[i].name);
            rc |= fq_buf_printf(out, "} %" PRId64 "\n",
                                s_int64_at(&snap->tenants[i].counts, family->offset));
        }
    }
    for (size_t f = 0; database && f < S_COUNT(s_tenant_db_families); f++) {
        const s_family_t *family = &s_tenant_db_families[f];
        rc |= s_out_family(out, family->name, family->type, family->help);
        for (size_t i = 0; i < snap->ntenants; i++)
            if (snap->tenants[i].info) {
                rc |= s_out_sample(out, family->name, "", "tenant", snap->tenants[i].name);
                rc |= fq_buf_printf(out, "} %" PRId64 "\n",
                                    s_int64_at(snap->tenants[i].info, family->offset));
            }
    }
    //  A rate, not a count: per second, from the count and period written
    const char *max_send_rate = "fairq_tenant_max_send_rate_per_second";
    if (database)
        rc |=
            s_out_family(out, max_send_rate, "gauge",
                         "Most messages sent a second, from the tenant's max_send_rate (0: none)");
    for (size_t i = 0; database && i < snap->ntenants; i++) {
        const fq_tenant_info_t *info = snap->tenants[i].info;
        if (!info)
            continue;
        double per_s = info->send_rate_count > 0 && info->send_rate_period_s > 0
                           ? (double)info->send_rate_count / info->send_rate_period_s
                           : 0;
        rc |= s_out_sample(out, max_send_rate, "", "tenant", snap->tenants[i].name);
        rc |= fq_buf_printf(out, "} %.6g\n", per_s);
    }
    rc |= s_out_family(out, "fairq_requests_inflight", "gauge",
                       "Requests with messages in a sender's hands");
    rc |= fq_buf_printf(out, "fairq_requests_inflight %" PRId64 "\n", snap->requests);
    const char *latency = "fairq_dispatch_latency_seconds";
    rc |= s_out_family(out, latency, "histogram",
                       "Seconds from a request's submit (or its send_at) to its messages' first "
                       "attempt handed to a sender");
    for (size_t i = 0; i < snap->ntenants; i++)
        rc |=
            s_out_histogram(out, latency, "tenant", snap->tenants[i].name,
                            &snap->tenants[i].latency, s_latency_bounds, S_COUNT(s_latency_bounds));
    return rc;
}

//  The tenants' figures of the last day, from the database
//  (fq_store_rates.h): counts, their rates, and how old they are. A rate
//  with nothing to divide by has no series: 0 would read as a clean
//  record, and a tenant that sent nothing has none.
static int s_render_rates(fq_buf_t *out, const s_snapshot_t *snap)
{
    static const struct {
        const char *name, *help;
        size_t at;
    } counts[] = {
        {"fairq_tenant_delivered_24h",
         "Mail delivered in the last 24 hours, estimated from its requests' counters",
         offsetof(fq_tenant_rates_t, delivered)},
        {"fairq_tenant_bounces_24h",
         "Hard bounces in the last 24 hours: permanent failures whose reply names a code of "
         "suppress_bounces, and bounce reports received",
         offsetof(fq_tenant_rates_t, bounces)},
        {"fairq_tenant_complaints_24h", "Complaints (abuse reports) received in the last 24 hours",
         offsetof(fq_tenant_rates_t, complaints)},
        {"fairq_tenant_unsubscribes_24h", "One-click unsubscribes in the last 24 hours",
         offsetof(fq_tenant_rates_t, unsubscribes)},
        {"fairq_tenant_suppressions", "Entries on the tenant's own suppression list",
         offsetof(fq_tenant_rates_t, suppressions)},
    };
    static const struct {
        const char *name, *help;
        double (*rate)(const fq_tenant_rates_t *figures);
    } rates[] = {
        {"fairq_tenant_bounce_rate",
         "Hard bounces over mail delivered or hard-bounced in the last 24 hours, 0..1 (no "
         "series without either)",
         fq_tenant_bounce_rate},
        {"fairq_tenant_complaint_rate",
         "Complaints over mail delivered in the last 24 hours, 0..1 (no series without a "
         "delivery)",
         fq_tenant_complaint_rate},
    };
    int rc = 0;
    for (size_t f = 0; f < S_COUNT(counts); f++) {
        rc |= s_out_family(out, counts[f].name, "gauge", counts[f].help);
        for (size_t i = 0; i < snap->nrates; i++) {
            rc |= s_out_sample(out, counts[f].name, "", "tenant", snap->rates[i].name);
            rc |= fq_buf_printf(out, "} %" PRId64 "\n", s_int64_at(&snap->rates[i], counts[f].at));
        }
    }
    for (size_t f = 0; f < S_COUNT(rates); f++) {
        rc |= s_out_family(out, rates[f].name, "gauge", rates[f].help);
        for (size_t i = 0; i < snap->nrates; i++) {
            double rate = rates[f].rate(&snap->rates[i]);
            if (rate < 0)
                continue;
            rc |= s_out_sample(out, rates[f].name, "", "tenant", snap->rates[i].name);
            rc |= fq_buf_add_str(out, "} ");
            rc |= s_out_double(out, rate);
            rc |= fq_buf_add_char(out, '\n');
        }
    }
    if (snap->rates) {
        const char *age = "fairq_tenant_rates_age_seconds";
        rc |=
            s_out_family(out, age, "gauge",
                         "Seconds since the tenants' 24-hour figures were read from the database");
        rc |= fq_buf_printf(out, "%s %.3f\n", age, snap->rates_age_s);
    }
    return rc;
}

//  The errors of the failed and dead messages, from the database: the
//  samples were written when they were read (fq_metrics_errors).
static int s_render_errors(fq_buf_t *out, const s_snapshot_t *snap)
{
    int rc = s_out_family(out, "fairq_message_errors", "gauge",
                          "Failed and dead messages by tenant, destination and the reply code and "
                          "enhanced status code of their last error (the most frequent groups)");
    return rc | (snap->errors ? fq_buf_add_str(out, snap->errors) : 0);
}

static int s_render_senders(fq_buf_t *out, const s_snapshot_t *snap)
{
    int64_t connected = 0;
    for (size_t i = 0; i < snap->nsenders; i++)
        connected += snap->senders[i].counts.up;
    int rc = s_out_family(out, "fairq_senders_connected", "gauge", "Senders connected");
    rc |= fq_buf_printf(out, "fairq_senders_connected %" PRId64 "\n", connected);
    for (size_t f = 0; f < S_COUNT(s_sender_families); f++) {
        const s_family_t *family = &s_sender_families[f];
        rc |= s_out_family(out, family->name, family->type, family->help);
        for (size_t i = 0; i < snap->nsenders; i++) {
            const s_sender_row_t *row = &snap->senders[i];
            rc |= s_out_sample(out, family->name, "", "sender", row->name);
            rc |= fq_buf_add_str(out, ",address=\"");
            rc |= s_out_label(out, row->address);
            rc |= fq_buf_printf(out, "\"} %" PRId64 "\n", s_int64_at(&row->counts, family->offset));
        }
    }
    return rc;
}

static int s_render_actors(fq_buf_t *out, const s_snapshot_t *snap)
{
    int rc = s_out_family(out, "fairq_dead_letters_total", "counter",
                          "Messages dropped because their actor was gone");
    rc |= fq_buf_printf(out, "fairq_dead_letters_total %" PRIu64 "\n", snap->dead_letters);
    for (size_t f = 0; f < S_COUNT(s_actor_families); f++) {
        const s_family_t *family = &s_actor_families[f];
        rc |= s_out_family(out, family->name, family->type, family->help);
        for (size_t i = 0; i < snap->nactors; i++) {
            uint64_t value;
            memcpy(&value, (const char *)&snap->actors[i] + family->offset, sizeof value);
            rc |= s_out_sample(out, family->name, "", "actor", snap->actors[i].path);
            rc |= fq_buf_printf(out, "} %" PRIu64 "\n", value);
        }
    }
    return rc;
}

static int s_render_db(fq_buf_t *out, const s_snapshot_t *snap)
{
    const char *rows = "fairq_db_batch_rows", *seconds = "fairq_db_batch_seconds",
               *errors = "fairq_db_errors_total";
    int rc = s_out_family(out, rows, "histogram", "Rows per database batch, by statement");
    for (int i = 0; i < FQ_METRICS_DB_COUNT; i++)
        rc |= s_out_histogram(out, rows, "statement", s_statement_names[i], &snap->db[i].rows,
                              s_rows_bounds, S_COUNT(s_rows_bounds));
    rc |= s_out_family(out, seconds, "histogram", "Seconds per database batch, by statement");
    for (int i = 0; i < FQ_METRICS_DB_COUNT; i++)
        rc |= s_out_histogram(out, seconds, "statement", s_statement_names[i], &snap->db[i].seconds,
                              s_seconds_bounds, S_COUNT(s_seconds_bounds));
    rc |= s_out_family(out, errors, "counter", "Database batches that failed, by statement");
    for (int i = 0; i < FQ_METRICS_DB_COUNT; i++) {
        rc |= s_out_sample(out, errors, "", "statement", s_statement_names[i]);
        rc |= fq_buf_printf(out, "} %" PRId64 "\n", snap->db[i].errors);
    }
    rc |= s_out_family(out, "fairq_store_unwritten", "gauge",
                       "Outcomes received from senders and not yet written by the store");
    rc |= fq_buf_printf(out, "fairq_store_unwritten %" PRId64 "\n", snap->store_unwritten);
    rc |= s_out_family(out, "fairq_store_waits_total", "counter",
                       "Times dispatch stopped until the store had written the outcomes it held");
    rc |= fq_buf_printf(out, "fairq_store_waits_total %" PRId64 "\n", snap->store_waits);
    rc |= s_out_family(out, "fairq_store_wait_seconds_total", "counter",
                       "Seconds dispatch stood still until the store had caught up");
    rc |= fq_buf_printf(out, "fairq_store_wait_seconds_total %.6f\n",
                        (double)snap->store_wait_us / S_US_PER_S);
    return rc;
}

//  The scheduler's lanes: what waits for credit per channel. Messages
//  ready with no credit and none in flight wait for a sender of their
//  channel (none serves it, or none is connected).
static int s_render_channels(fq_buf_t *out, const s_snapshot_t *snap)
{
    static const struct {
        const char *name, *help;
        size_t at;
    } families[] = {
        {"fairq_channel_ready",
         "Messages the scheduler holds ready, waiting for credit, by channel",
         offsetof(s_channel_t, ready)},
        {"fairq_channel_credit", "Free sender credit, by channel", offsetof(s_channel_t, credit)},
        {"fairq_channel_inflight", "Messages in senders' hands, by channel",
         offsetof(s_channel_t, inflight)},
    };
    int rc = 0;
    for (size_t f = 0; f < S_COUNT(families); f++) {
        rc |= s_out_family(out, families[f].name, "gauge", families[f].help);
        for (size_t i = 0; i < snap->nchannels; i++) {
            const s_channel_t *channel = &snap->channels[i];
            rc |= s_out_sample(out, families[f].name, "", "channel", channel->name);
            rc |= fq_buf_printf(out, "} %" PRId64 "\n",
                                *(const int64_t *)((const char *)channel + families[f].at));
        }
    }
    return rc;
}

//  A destination's figures, each as the exposition writes it.
static double s_destination_ready(const s_destination_t *d)
{
    return (double)d->figures.ready;
}
static double s_destination_inflight(const s_destination_t *d)
{
    return (double)d->figures.inflight;
}
static double s_destination_max_inflight(const s_destination_t *d)
{
    return (double)d->figures.max_inflight;
}
static double s_destination_configured(const s_destination_t *d)
{
    return d->figures.configured_per_s;
}
static double s_destination_effective(const s_destination_t *d)
{
    return d->figures.effective_per_s;
}
static double s_destination_suspended(const s_destination_t *d)
{
    return (double)d->figures.suspended_for_ms / S_MS_PER_S;
}
static double s_destination_sent(const s_destination_t *d)
{
    return (double)d->figures.sent;
}
static double s_destination_deferred(const s_destination_t *d)
{
    return (double)d->figures.deferred;
}
static double s_destination_throttled(const s_destination_t *d)
{
    return (double)d->figures.throttled;
}

//  The destinations as the scheduler shapes them: each gauge and counter
//  with destination="name"; the state as one series per state name, 1 for
//  the current one (the Prometheus way of an enumeration).
static int s_render_destinations(fq_buf_t *out, const s_snapshot_t *snap)
{
    static const struct {
        const char *name, *type, *help;
        double (*value)(const s_destination_t *d);
        bool limit; //  0 is none: written +Inf
    } families[] = {
        {"fairq_destination_ready", "gauge",
         "Messages the scheduler holds ready for the destination", s_destination_ready, false},
        {"fairq_destination_inflight", "gauge", "Messages of the destination in senders' hands",
         s_destination_inflight, false},
        {"fairq_destination_max_inflight", "gauge",
         "Most messages of the destination in senders' hands at once (+Inf: no limit)",
         s_destination_max_inflight, true},
        {"fairq_destination_configured_rate", "gauge",
         "The destination's configured rate, messages a second (+Inf: no limit)",
         s_destination_configured, true},
        {"fairq_destination_effective_rate", "gauge",
         "The rate the destination is shaped to now, messages a second, lowered after "
         "throttling replies (+Inf: no limit)",
         s_destination_effective, true},
        {"fairq_destination_suspended_seconds", "gauge",
         "Seconds left of the destination's suspension (0 unless suspended)",
         s_destination_suspended, false},
        {"fairq_destination_sent_total", "counter",
         "Messages of the destination released to senders", s_destination_sent, false},
        {"fairq_destination_deferred_total", "counter",
         "Messages of the destination given back without an attempt", s_destination_deferred,
         false},
        {"fairq_destination_throttled_total", "counter",
         "Throttling replies from the destination (it asked to slow down)", s_destination_throttled,
         false},
    };
    int rc = 0;
    for (size_t f = 0; f < S_COUNT(families); f++) {
        rc |= s_out_family(out, families[f].name, families[f].type, families[f].help);
        for (size_t i = 0; i < snap->ndestinations; i++) {
            double value = families[f].value(&snap->destinations[i]);
            rc |=
                s_out_sample(out, families[f].name, "", "destination", snap->destinations[i].name);
            rc |= fq_buf_add_str(out, "} ");
            //  A limit that never binds is +Inf: a 0 would read as a
            //  destination that takes nothing
            rc |= families[f].limit && value <= 0 ? fq_buf_add_str(out, "+Inf")
                                                  : s_out_double(out, value);
            rc |= fq_buf_add_char(out, '\n');
        }
    }
    const char *state = "fairq_destination_state";
    rc |= s_out_family(out, state, "gauge",
                       "1 for the destination's state now (open, throttled: slowed after "
                       "throttling replies, suspended: nothing sent for a while), else 0");
    for (size_t i = 0; i < snap->ndestinations; i++) {
        const s_destination_t *destination = &snap->destinations[i];
        bool known = false;
        for (size_t k = 0; k < S_COUNT(s_destination_states); k++) {
            bool now = strcmp(destination->state, s_destination_states[k]) == 0;
            known = known || now;
            rc |= s_out_sample(out, state, "", "destination", destination->name);
            rc |= fq_buf_printf(out, ",state=\"%s\"} %d\n", s_destination_states[k], now);
        }
        //  A state this list lacks (a scheduler newer than it) still shows
        if (!known) {
            rc |= s_out_sample(out, state, "", "destination", destination->name);
            rc |= fq_buf_add_str(out, ",state=\"");
            rc |= s_out_label(out, destination->state);
            rc |= fq_buf_add_str(out, "\"} 1\n");
        }
    }
    return rc;
}

//  Starts a sample of a delivery histogram: name suffix{first="value"
//  and, for a route, ,channel="value"; the caller writes the rest.
static int s_out_route(fq_buf_t *out, const char *name, const char *suffix, const char *label,
                       const char *value, const char *channel)
{
    int rc = s_out_sample(out, name, suffix, label, value);
    if (channel) {
        rc |= fq_buf_add_str(out, ",channel=\"");
        rc |= s_out_label(out, channel);
        rc |= fq_buf_add_char(out, '"');
    }
    return rc;
}

static int s_out_delivered(fq_buf_t *out, const char *name, const char *label, const char *value,
                           const char *channel, const fq_latency_histogram_t *histogram)
{
    int rc = 0;
    uint64_t cumulative = 0;
    for (size_t i = 0; i < FQ_LATENCY_BOUNDS; i++) {
        cumulative += histogram->buckets[i];
        rc |= s_out_route(out, name, "_bucket", label, value, channel);
        rc |= fq_buf_add_str(out, ",le=\"");
        rc |= s_out_double(out, fq_latency_bounds[i]);
        rc |= fq_buf_printf(out, "\"} %" PRIu64 "\n", cumulative);
    }
    rc |= s_out_route(out, name, "_bucket", label, value, channel);
    rc |= fq_buf_printf(out, ",le=\"+Inf\"} %" PRIu64 "\n", histogram->count);
    rc |= s_out_route(out, name, "_sum", label, value, channel);
    rc |= fq_buf_add_str(out, "} ");
    rc |= s_out_double(out, histogram->sum);
    rc |= fq_buf_add_char(out, '\n');
    rc |= s_out_route(out, name, "_count", label, value, channel);
    return rc | fq_buf_printf(out, "} %" PRIu64 "\n", histogram->count);
}

//  The times of delivered messages (fq_latency.h), by tenant and by
//  destination and channel: four families, not two with either labels,
//  so that a sum over one family counts each delivery once.
static int s_render_delivered(fq_buf_t *out, const s_snapshot_t *snap)
{
    static const char *const tenant_delivery = "fairq_tenant_delivery_seconds",
                             *tenant_end = "fairq_tenant_end_to_end_seconds",
                             *route_delivery = "fairq_destination_delivery_seconds",
                             *route_end = "fairq_destination_end_to_end_seconds";
    static const char delivery_help[] =
        "Seconds from a message's hand-off to a sender to its ack, of messages acked";
    static const char end_help[] = "Seconds from when a message's request was due (accepted, or "
                                   "its send_at if later) to its ack, of messages acked";
    int rc = s_out_family(out, tenant_delivery, "histogram", delivery_help);
    for (size_t i = 0; i < snap->ntenants; i++)
        rc |= s_out_delivered(out, tenant_delivery, "tenant", snap->tenants[i].name, NULL,
                              &snap->tenants[i].delivered.delivery);
    rc |= s_out_family(out, tenant_end, "histogram", end_help);
    for (size_t i = 0; i < snap->ntenants; i++)
        rc |= s_out_delivered(out, tenant_end, "tenant", snap->tenants[i].name, NULL,
                              &snap->tenants[i].delivered.end_to_end);
    rc |= s_out_family(out, route_delivery, "histogram", delivery_help);
    for (size_t i = 0; i < snap->nroutes; i++)
        rc |= s_out_delivered(out, route_delivery, "destination", snap->routes[i].destination,
                              snap->routes[i].channel, &snap->routes[i].delivered.delivery);
    rc |= s_out_family(out, route_end, "histogram", end_help);
    for (size_t i = 0; i < snap->nroutes; i++)
        rc |= s_out_delivered(out, route_end, "destination", snap->routes[i].destination,
                              snap->routes[i].channel, &snap->routes[i].delivered.end_to_end);
    return rc;
}

//  Who leads, as this instance last read it, and whether it is this one.
static int s_render_leadership(fq_buf_t *out, const fq_lease_t *lease)
{
    if (!lease)
        return 0;
    fq_lease_view_t view;
    fq_lease_view(lease, &view);
    int rc = s_out_family(out, "fairq_leader", "gauge",
                          "1 when this fairqd leads (splits, schedules, dispatches), else 0");
    rc |= fq_buf_printf(out, "fairq_leader %d\n", view.leading ? 1 : 0);
    rc |= s_out_family(out, "fairq_leader_lease_held", "gauge",
                       "1 while this fairqd holds the leader's lease and may dispatch, else 0");
    rc |= fq_buf_printf(out, "fairq_leader_lease_held %d\n", view.held ? 1 : 0);
    if (!view.known || !view.holder[0])
        return rc;
    rc |= s_out_family(out, "fairq_leader_epoch", "gauge",
                       "the current leader's epoch (it grows with every takeover), by holder");
    rc |= s_out_sample(out, "fairq_leader_epoch", "", "holder", view.holder);
    rc |= fq_buf_printf(out, "} %" PRId64 "\n", view.epoch);
    rc |= s_out_family(out, "fairq_leader_since_seconds", "gauge",
                       "when the current leader took over, Unix time");
    rc |= s_out_sample(out, "fairq_leader_since_seconds", "", "holder", view.holder);
    return rc | fq_buf_printf(out, "} %.3f\n", (double)view.since_ms / 1000.0);
}

void fq_metrics_channel(fq_metrics_t *self, const char *channel, int64_t ready, int64_t credit,
                        int64_t inflight)
{
    if (!self || !channel)
        return;
    pthread_mutex_lock(&self->lock);
    s_channel_t *found = NULL;
    for (size_t i = 0; i < self->nchannels && !found; i++)
        if (strcmp(self->channels[i].name, channel) == 0)
            found = &self->channels[i];
    if (!found && self->nchannels < S_CHANNELS_MAX) {
        found = &self->channels[self->nchannels++];
        snprintf(found->name, sizeof found->name, "%s", channel);
    }
    if (found) {
        found->ready = ready;
        found->credit = credit;
        found->inflight = inflight;
    }
    pthread_mutex_unlock(&self->lock);
}

void fq_metrics_tenant_budget(fq_metrics_t *self, int64_t tenant_id, bool held, int64_t sent_today)
{
    if (!self)
        return;
    pthread_mutex_lock(&self->lock);
    s_tenant_t *tenant = s_tenant(self, tenant_id);
    if (tenant) {
        tenant->counts.send_held = held;
        tenant->counts.sent_today = sent_today;
    }
    pthread_mutex_unlock(&self->lock);
}

//  Whether refresh is due, handing the read to the caller when it is.
static bool s_refresh_due(fq_metrics_t *self, s_refresh_t *refresh)
{
    if (!self)
        return false;
    pthread_mutex_lock(&self->lock);
    bool due = !refresh->reading &&
               (!refresh->read ||
                self->now_ms(self->clock_arg) - refresh->at >= FQ_METRICS_RATES_REFRESH_MS);
    if (due)
        refresh->reading = true;
    pthread_mutex_unlock(&self->lock);
    return due;
}

//  The caller told to read says it did: read (now), or failed (still due).
//  Under the lock.
static void s_refresh_done(fq_metrics_t *self, s_refresh_t *refresh, bool read)
{
    refresh->reading = false;
    if (read) {
        refresh->at = self->now_ms(self->clock_arg);
        refresh->read = true;
    }
}

bool fq_metrics_tenant_rates_due(fq_metrics_t *self)
{
    return s_refresh_due(self, self ? &self->rates_refresh : NULL);
}

bool fq_metrics_errors_due(fq_metrics_t *self)
{
    return s_refresh_due(self, self ? &self->errors_refresh : NULL);
}

static int s_rates_order(const void *a, const void *b)
{
    return strcmp(((const fq_tenant_rates_t *)a)->name, ((const fq_tenant_rates_t *)b)->name);
}

void fq_metrics_tenant_rates(fq_metrics_t *self, const fq_tenant_rates_list_t *rates)
{
    if (!self)
        return;
    //  Copied before the lock: a scrape never waits for an allocation.
    //  Sorted by the bytes of the names (the database's collation may
    //  order them otherwise), for fq_metrics_tenant_rates_of's search
    fq_tenant_rates_t *copy = NULL;
    if (rates && (copy = calloc(rates->count + 1, sizeof *copy)) && rates->count) {
        memcpy(copy, rates->rows, rates->count * sizeof *copy);
        qsort(copy, rates->count, sizeof *copy, s_rates_order);
    }
    pthread_mutex_lock(&self->lock);
    s_refresh_done(self, &self->rates_refresh, copy != NULL);
    if (copy) {
        free(self->rates);
        self->rates = copy;
        self->nrates = rates->count;
    }
    pthread_mutex_unlock(&self->lock);
}

void fq_metrics_tenant_rates_of(fq_metrics_t *self, const char *tenant, double *bounce_rate,
                                double *complaint_rate)
{
    double bounce = -1, complaint = -1;
    if (self && tenant) {
        fq_tenant_rates_t key = {0};
        snprintf(key.name, sizeof key.name, "%s", tenant);
        pthread_mutex_lock(&self->lock);
        const fq_tenant_rates_t *found =
            self->rates ? bsearch(&key, self->rates, self->nrates, sizeof key, s_rates_order)
                        : NULL;
        if (found) {
            bounce = fq_tenant_bounce_rate(found);
            complaint = fq_tenant_complaint_rate(found);
        }
        pthread_mutex_unlock(&self->lock);
    }
    if (bounce_rate)
        *bounce_rate = bounce;
    if (complaint_rate)
        *complaint_rate = complaint;
}

void fq_metrics_errors(fq_metrics_t *self, const fq_error_summary_t *errors)
{
    if (!self)
        return;
    //  Written before the lock: a scrape never waits for it
    fq_buf_t out = {0};
    int rc = errors ? 0 : -1;
    for (size_t i = 0; errors && i < errors->count; i++) {
        const fq_error_count_t *e = &errors->rows[i];
        rc |= s_out_sample(&out, "fairq_message_errors", "", "tenant", e->tenant);
        rc |= fq_buf_add_str(&out, ",destination=\"");
        rc |= s_out_label(&out, e->destination);
        rc |= fq_buf_add_str(&out, "\",code=\"");
        rc |= s_out_label(&out, e->code ? e->code : "");
        rc |= fq_buf_add_str(&out, "\",enhanced=\"");
        rc |= s_out_label(&out, e->enhanced ? e->enhanced : "");
        rc |= fq_buf_printf(&out, "\"} %" PRId64 "\n", e->count);
    }
    //  A failed read, or out of memory: the last figures stay, still due
    char *text = rc ? NULL : fq_buf_take(&out);
    fq_buf_free(&out);
    pthread_mutex_lock(&self->lock);
    s_refresh_done(self, &self->errors_refresh, text != NULL);
    if (text) {
        free(self->errors);
        self->errors = text;
    }
    pthread_mutex_unlock(&self->lock);
}

void fq_metrics_destination(fq_metrics_t *self, const fq_metrics_destination_t *destination)
{
    if (!self || !destination || !destination->name)
        return;
    char name[FQ_DESTINATION_NAME_SIZE];
    snprintf(name, sizeof name, "%s", destination->name);
    pthread_mutex_lock(&self->lock);
    s_destination_t *found = zhashx_lookup(self->destinations, name);
    if (!found && zhashx_size(self->destinations) < S_DESTINATIONS_MAX &&
        (found = calloc(1, sizeof *found))) {
        memcpy(found->name, name, sizeof found->name);
        if (zhashx_insert(self->destinations, found->name, found) != 0) {
            free(found);
            found = NULL;
        }
    }
    if (found) {
        snprintf(found->state, sizeof found->state, "%s",
                 destination->state ? destination->state : s_destination_states[0]);
        found->figures = *destination;
        found->figures.name = found->figures.state = NULL; //  Not kept: copied above
    }
    pthread_mutex_unlock(&self->lock);
}

void fq_metrics_destination_forget(fq_metrics_t *self, const char *name)
{
    if (!self || !name)
        return;
    pthread_mutex_lock(&self->lock);
    zhashx_delete(self->destinations, name);
    //  Its routes, a channel each: gathered first, a hash is not changed
    //  while walked
    zlistx_t *gone = zlistx_new();
    for (s_route_t *route = gone ? zhashx_first(self->routes) : NULL; route;
         route = zhashx_next(self->routes))
        if (strcmp(route->destination, name) == 0)
            zlistx_add_end(gone, (void *)zhashx_cursor(self->routes));
    for (const char *key = gone ? zlistx_first(gone) : NULL; key; key = zlistx_next(gone)) {
        char copy[S_ROUTE_KEY_SIZE];
        snprintf(copy, sizeof copy, "%s", key);
        zhashx_delete(self->routes, copy);
    }
    zlistx_destroy(&gone);
    pthread_mutex_unlock(&self->lock);
}

bool fq_metrics_destination_live(fq_metrics_t *self, const char *name,
                                 fq_metrics_destination_t *out, char state[FQ_METRICS_STATE_SIZE])
{
    *out = (fq_metrics_destination_t){.name = name, .state = state};
    snprintf(state, FQ_METRICS_STATE_SIZE, "%s", s_destination_states[0]);
    if (!self || !name)
        return false;
    pthread_mutex_lock(&self->lock);
    const s_destination_t *found = zhashx_lookup(self->destinations, name);
    if (found) {
        memcpy(state, found->state, FQ_METRICS_STATE_SIZE);
        *out = found->figures;
        out->name = name;
        out->state = state;
    }
    pthread_mutex_unlock(&self->lock);
    return found != NULL;
}

char *fq_metrics_render(fq_metrics_t *self, fq_system_t *sys, const fq_tenant_list_t *tenants)
{
    s_snapshot_t snap = {0};
    s_snapshot_take(&snap, self, tenants ? tenants->count : 0);
    if (!snap.failed)
        s_snapshot_join(&snap, tenants);
    if (!snap.failed && sys) {
        fq_system_foreach_stats(sys, s_snapshot_actor, &snap);
        snap.dead_letters = fq_system_dead_letters(sys);
    }
    if (!snap.failed && snap.nactors)
        qsort(snap.actors, snap.nactors, sizeof *snap.actors, s_actor_order);

    fq_buf_t out = {0};
    int rc = snap.failed ? -1 : 0;
    rc |= s_out_family(&out, "fairq_database_up", "gauge",
                       "1 when fairqd could read the tenants' figures from the database, else 0");
    rc |= fq_buf_printf(&out, "fairq_database_up %d\n", tenants ? 1 : 0);
    rc |= s_render_leadership(&out, self ? self->lease : NULL);
    rc |= s_render_tenants(&out, &snap, tenants != NULL);
    rc |= s_render_rates(&out, &snap);
    rc |= s_render_errors(&out, &snap);
    rc |= s_render_senders(&out, &snap);
    rc |= s_render_channels(&out, &snap);
    rc |= s_render_destinations(&out, &snap);
    rc |= s_render_delivered(&out, &snap);
    if (sys)
        rc |= s_render_actors(&out, &snap);
    rc |= s_render_db(&out, &snap);
    s_snapshot_free(&snap);
    if (rc) {
        fq_buf_free(&out);
        return NULL;
    }
    return fq_buf_take(&out);
}
