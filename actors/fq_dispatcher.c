/*  fq_dispatcher.c — /user/dispatcher: the sender workers' side of fairqd.

    Senders are remote actors (fairq-sender, docs/protocol.md) that reach
    this actor through the gateway. Each says HELLO, is watched, and grants
    credit: how many messages it may hold at once. The dispatcher passes
    free credit on to the scheduler, which answers with exactly that many
    picks (DISPATCH), in the order picked, most with the row the
    scheduler's page read (actors/fq_row_cache.h); the dispatcher loads the
    others, renders each message just before sending it (template + the
    recipient's fields) and gives it to a sender with credit left, each
    request's messages taking turns among them (s_choose).

    Every message handed out is tracked until its ACK or NACK, which go to
    the store (batched there) and back to the scheduler as SETTLED with the
    credit they restore. When a sender leaves (BYE), says HELLO again (it
    restarted), or is declared dead by the gateway (missed heartbeats, a
    TERMINATED notice), its messages go back to the scheduler at once and
    its unused credit is withdrawn.

    Frames that do not decode are counted, logged and dropped; a message
    from an address that never said HELLO is ignored.

    What it hands out and what comes back is recorded in fq_metrics (per
    tenant, request and sender, the dispatch latency, and each ack's
    delivery and end-to-end times per tenant and route), gathered per
    DISPATCH and per flush of answers, so the shared lock is taken once for
    a whole batch.

    A request of a channel other than mail (api/API.md, "Channels") is
    rendered for it: an http request's URL, headers and body, encoded and
    signed by channels/fq_channel.h, go in MSG's to, headers and body with
    its channel and method; another channel's body is rendered as it is,
    for the recipient's key.

    A mail request with one-click unsubscribe on (docs/feedback.md) gets,
    per message, a token sealed for its tenant, request and recipient
    (unsubscribe/fq_unsubscribe_token.h): its URL is the template field
    unsubscribe_url, fairq's over a recipient's own, and its
    List-Unsubscribe value goes in MSG's list_unsubscribe, which the
    sender writes with List-Unsubscribe-Post.

    Credit is kept per sender and channel (docs/protocol.md, rule 2): a
    sender's HELLO lists the channels it serves (channel=NAME; none is
    email alone), its CREDIT names the channel it is for, and a message
    goes only to a sender with free credit for its channel. What flows
    back to the scheduler (CREDIT_CHANGED, SETTLED) names the channel too,
    so each of its lanes counts only its own credit. */
#include "fq_channel.h"
#include "fq_relay_pace.h"
#include "fq_db.h"
#include "fq_dispatch_batch.h"
#include "fq_intkeys.h"
#include "fq_log.h"
#include "fq_pipeline.h"
#include "fq_row_cache.h"
#include "fq_store_window.h"
#include "fq_template.h"
#include "fq_unsubscribe_token.h"
#include <regex.h>
#include <stdlib.h>
#include <string.h>

//  The most credit one sender may hold: a sender asking for more is capped,
//  so a bad (or hostile) peer cannot make fairqd hand it the whole backlog.
#define S_SENDER_CREDIT_MAX 10000

//  Parsed templates are cached per request; past this many bytes of
//  template text the cache starts over (requests come back in turn).
#define S_TEMPLATE_CACHE_BYTES (64 * 1024 * 1024)

//  Room for a render or load error.
#define S_ERROR_MAX 512

//  Acks come one by one from the senders. Passing each on at once would
//  wake the store and the scheduler once per message; they are gathered
//  until the mailbox is empty (the behaviour's idle) or S_ANSWER_BATCH
//  have come, and passed on in one message each.
#define S_ANSWER_BATCH 128

//  Shortest wait before credit held back for a failing database is freed:
//  a statement the database refuses while connected would otherwise be
//  retried every millisecond.
#define S_HOLD_MIN_MS 100

//  While credit is kept back for the store (fq_store_window.h), how often
//  the store is asked how far it wrote (and the wait's time so far goes to
//  the metrics): its answers after each write end the wait; the question
//  only matters when a store or a dispatcher restarted, and no answer to
//  come would cover what this one counts as told.
#define S_STORE_ASK_MS 1000

//  Most channels one sender serves: a HELLO listing more keeps the first
//  ones. The dispatcher's lanes are the channels its senders serve (and
//  a lane a DISPATCH names), dropped as the last sender of one leaves.
#define S_SENDER_CHANNELS_MAX 16
_Static_assert(S_SENDER_CHANNELS_MAX <= FQ_RELAY_PACE_CHANNELS,
               "a paced sender's channels fit its pace");

//  Most routes (a channel and a destination) the metrics are told of: as
//  many as fq_metrics keeps destinations. A message past them counts for
//  its tenant only.
#define S_ROUTES_MAX 10000

//  Where a message went, by channel and destination, as its delivery and
//  end-to-end times are recorded (fq_metrics_batch_delivered): one copy of
//  the two names per route, which each flight points to, rather than a
//  copy per message.
typedef struct {
    const char *channel;
    const char *destination;
} s_route_t;

//  A sender's credit and load on one channel it serves.
typedef struct {
    char channel[FQ_CHANNEL_NAME_SIZE];
    int64_t credit; //  Messages of this channel it may still be given
    size_t inflight;
} s_sender_channel_t;

typedef struct {
    char *address; //  Where its messages go (fq://system/user/sender)
    char *name;
    int64_t credit; //  Messages it may still be given, all channels
    size_t inflight;
    s_sender_channel_t channels[S_SENDER_CHANNELS_MAX]; //  What it serves
    size_t nchannels;
    bool leaving;            //  Said BYE: finishes what it holds, gets nothing new
    uint64_t metrics_id;     //  Its records in fq_metrics (0: none)
    bool batches;            //  Its HELLO listed "batch": it takes MESSAGES
    fq_dispatch_batch_t out; //  What this DISPATCH has for it so far
    //  Its relay's limit (max_rate in its HELLO): the credit it grants is
    //  held here and passed on at that rate; NULL: none
    fq_relay_pace_t *pace;
} s_sender_t;

typedef struct {
    fq_template_t *subject;
    fq_template_t *body;
    fq_template_t *text_body; //  The HTML body's plain-text alternative; NULL: none
    bool body_is_html;
    char *from;
    char *tenant;
    size_t bytes;
    int max_attempts;
    int64_t due_at_ms; //  When the request was due (Unix ms): the dispatch latency's start
    //  Its extra headers, Reply-To among them: the same for each of its
    //  messages, whose MSG borrows them (not templates: sent as given)
    char **header_names;
    char **header_values;
    size_t nheaders;
    //  A channel other than mail: its name (NULL: mail); an http request's
    //  templates (else body is the channel's body, subject NULL)
    char *channel;
    fq_http_templates_t *http;
    //  Mail with one-click unsubscribe: a link per message (its own
    //  List-Unsubscribe and List-Unsubscribe-Post were left out at load)
    bool unsubscribe;
} s_templates_t;

//  Messages leaving flight, gathered per incoming message and told to the
//  scheduler in one SETTLED each for requeued and for settled ones.
typedef struct {
    uint64_t *messages, *requests, *tenants;
    //  What each cost (fairness_cost bytes or time; 0: not charged), told
    //  only when some did: the scheduler charges it to their tenants
    uint64_t *costs;
    bool costed;
    uint32_t count, capacity;
    int64_t credit;
    uint32_t retry_after_s; //  The longest Retry-After among them (throttled ones)
} s_settle_t;

//  What the dispatcher tells the scheduler about one channel's lane:
//  messages settled, and given back unsent (a sender gone; or deferred
//  by the receiver, throttling or unreachable, which shapes their
//  destinations in the scheduler).
typedef struct {
    char channel[FQ_CHANNEL_NAME_SIZE];
    s_settle_t done, answered, requeue, throttled, unreachable;
    int64_t withheld; //  Credit kept back while the database is away
    int64_t behind;   //  Credit kept back while the store is behind
} s_lane_t;

typedef struct {
    s_sender_t *sender;
    s_lane_t *lane;     //  Its channel's
    int sender_channel; //  Index in the sender's channels
    int64_t request_id;
    int64_t tenant_id;
    bool last_attempt; //  A failure now makes it dead (the request's max_attempts)
    //  Its destination is a named one: a deferral goes back to the
    //  scheduler, which adapts that destination's budget; "default"'s is
    //  one budget for every domain not named, so a deferral there is the
    //  message's own, waiting its back-off in the store
    bool named_destination;
    //  What the message costs its tenant under fairness_cost: its
    //  rendered bytes, and when it was handed out (zclock_usecs)
    uint64_t bytes;
    int64_t handed_us;
    //  Where it went (NULL: not known) and when its request was due (Unix
    //  ms; 0: not known), for its delivery and end-to-end times
    const s_route_t *route;
    int64_t due_at_ms;
} s_flight_t;

typedef struct {
    fq_pipeline_config_t *config;
    fq_db_t *db;
    zhashx_t *senders;   //  address -> s_sender_t*, owned
    zlistx_t *turns;     //  The senders, in turn order (borrowed)
    zhashx_t *inflight;  //  message id -> s_flight_t*, owned
    zhashx_t *templates; //  request id -> s_templates_t*, owned
    size_t template_bytes;
    //  A DISPATCH's requests whose templates are not cached (s_dispatch)
    int64_t wanted[FQ_STORE_TEMPLATES_MAX];
    s_lane_t **lanes; //  Per channel, each its own allocation: flights point to it
    size_t nlanes, lanes_capacity;
    uint64_t *acks; //  Acks gathered for the store
    uint32_t acks_held, acks_capacity;
    fq_store_window_t store_window; //  Outcomes told to the store and not yet written
    bool store_ask_armed;
    int64_t store_waiting_since; //  zclock_usecs() since credit is kept back; 0: it is not
    bool retry_armed;
    int64_t pace_at; //  zclock_usecs() the relay pace timer is set for; 0: none
    bool draining;
    //  suppress_bounces' pattern (fq_store_bounce_pattern: valid POSIX ERE
    //  too), to count hard bounces in the metrics as the store suppresses
    //  their addresses
    regex_t bounces;
    bool has_bounces;
    fq_metrics_batch_t *metrics; //  NULL without metrics
    zhashx_t *routes;            //  "destination\tchannel" -> s_route_t*, owned (with metrics)
    const s_route_t *last_route; //  The last one found: a DISPATCH's messages share a few
    bool senders_changed;        //  A sender's credit or in flight changed since the last record
    uint64_t sent, acked, nacked, deferred, malformed, unknown_peer, render_failed, stray;
    uint64_t rows_given, rows_loaded; //  Picks' rows as paged, and as loaded here
    uint64_t store_waits;             //  Times credit was kept back for the store
    int64_t store_wait_us;            //  How long, the waits that ended
    struct {
        int64_t unwritten, waited;
        uint64_t waits;
    } store_told; //  The store's figures as last given to the metrics
} s_self_t;

//  ---------------------------------------------------------------------
//  Settling

//  Adds a message to settle, with what it cost (0: not charged).
static void s_settle_add_cost(s_settle_t *settle, uint64_t message, uint64_t request,
                              uint64_t tenant, int64_t credit, uint64_t cost)
{
    if (settle->count == settle->capacity) {
        uint32_t capacity = settle->capacity ? settle->capacity * 2 : 64;
        uint64_t *m = realloc(settle->messages, capacity * sizeof *m);
        if (m)
            settle->messages = m;
        uint64_t *r = realloc(settle->requests, capacity * sizeof *r);
        if (r)
            settle->requests = r;
        uint64_t *t = realloc(settle->tenants, capacity * sizeof *t);
        if (t)
            settle->tenants = t;
        uint64_t *c = realloc(settle->costs, capacity * sizeof *c);
        if (c)
            settle->costs = c;
        if (!m || !r || !t || !c)
            return; //  Out of memory: the scheduler's count drifts, nothing is lost
        settle->capacity = capacity;
    }
    settle->messages[settle->count] = message;
    settle->requests[settle->count] = request;
    settle->tenants[settle->count] = tenant;
    settle->costs[settle->count] = cost;
    settle->costed |= cost > 0;
    settle->count++;
    settle->credit += credit;
}

static void s_settle_add(s_settle_t *settle, uint64_t message, uint64_t request, uint64_t tenant,
                         int64_t credit)
{
    s_settle_add_cost(settle, message, request, tenant, credit, 0);
}

static void s_settle_send(fq_ctx_t *ctx, s_settle_t *settle, bool requeue, uint32_t deferral,
                          bool answered, const char *channel)
{
    if (settle->count == 0 && settle->credit == 0)
        return;
    fq_settled_t settled = {.messages = {settle->count, settle->messages},
                            .requests = {settle->count, settle->requests},
                            .tenants = {settle->count, settle->tenants},
                            .costs = {settle->costed ? settle->count : 0, settle->costs},
                            .requeue = requeue,
                            .credit = settle->credit,
                            .channel = channel,
                            .deferral = deferral,
                            .retry_after_s = settle->retry_after_s,
                            .answered = answered};
    fq_tell(ctx, FQ_PATH_SCHEDULER, &fq_settled_desc, &settled);
    settle->count = 0;
    settle->costed = false;
    settle->credit = 0;
    settle->retry_after_s = 0;
}

//  ---------------------------------------------------------------------
//  Keeping pace with the store (fq_store_window.h)

static void s_store_ask_arm(fq_ctx_t *ctx, s_self_t *self)
{
    if (self->store_ask_armed)
        return;
    fq_tick_t tick = {.what = FQ_TICK_STORE};
    self->store_ask_armed = fq_timer_once(ctx, S_STORE_ASK_MS, &fq_tick_desc, &tick) > 0;
}

static bool s_store_behind(const s_self_t *self)
{
    return fq_store_window_full(&self->store_window, self->acks_held);
}

//  Keeps credit given back by lane's answers, or let go by a relay's pace,
//  while the store is behind. Returns whether it did.
static bool s_keep_back(fq_ctx_t *ctx, s_self_t *self, s_lane_t *lane, int64_t *credit)
{
    if (*credit <= 0 || !s_store_behind(self))
        return false;
    lane->behind += *credit;
    *credit = 0;
    if (!self->store_waiting_since) {
        self->store_waiting_since = zclock_usecs();
        self->store_waits++;
    }
    s_store_ask_arm(ctx, self);
    return true;
}

//  The store wrote (STORE_WRITTEN): the credit kept back goes to the
//  scheduler once it is no longer behind (none during a drain).
static void s_store_written(fq_ctx_t *ctx, s_self_t *self, uint64_t through)
{
    fq_store_window_written(&self->store_window, through);
    if (!self->store_waiting_since || s_store_behind(self))
        return;
    self->store_wait_us += zclock_usecs() - self->store_waiting_since;
    self->store_waiting_since = 0;
    for (size_t i = 0; i < self->nlanes; i++) {
        s_lane_t *lane = self->lanes[i];
        if (lane->behind && !self->draining) {
            fq_credit_changed_t changed = {.delta = lane->behind, .channel = lane->channel};
            fq_tell(ctx, FQ_PATH_SCHEDULER, &fq_credit_changed_desc, &changed);
        }
        lane->behind = 0;
    }
}

//  The ask timer: while credit is kept back, an empty STORE_ACKS asks the
//  store how far it wrote (a store holding nothing answers at once).
static void s_store_ask(fq_ctx_t *ctx, s_self_t *self)
{
    self->store_ask_armed = false;
    if (!self->store_waiting_since)
        return;
    fq_store_acks_t ask = {.through = self->store_window.told};
    fq_tell(ctx, FQ_PATH_STORE, &fq_store_acks_desc, &ask);
    s_store_ask_arm(ctx, self);
}

//  Tells the store one nack.
static void s_store_nack(fq_ctx_t *ctx, s_self_t *self, fq_store_nack_t *nack)
{
    nack->through = fq_store_window_tell(&self->store_window, 1);
    fq_tell(ctx, FQ_PATH_STORE, &fq_store_nack_desc, nack);
}

static void s_flush_settles(fq_ctx_t *ctx, s_self_t *self)
{
    //  The answers' credit, while the store is behind, stays here
    for (size_t i = 0; i < self->nlanes; i++) {
        s_lane_t *lane = self->lanes[i];
        s_keep_back(ctx, self, lane, &lane->done.credit);
        s_keep_back(ctx, self, lane, &lane->answered.credit);
        s_keep_back(ctx, self, lane, &lane->throttled.credit);
        s_keep_back(ctx, self, lane, &lane->unreachable.credit);
    }
    for (size_t i = 0; i < self->nlanes; i++) {
        s_lane_t *lane = self->lanes[i];
        s_settle_send(ctx, &lane->done, false, FQ_DEFERRAL_NONE, false, lane->channel);
        s_settle_send(ctx, &lane->answered, false, FQ_DEFERRAL_NONE, true, lane->channel);
        s_settle_send(ctx, &lane->requeue, true, FQ_DEFERRAL_NONE, false, lane->channel);
        s_settle_send(ctx, &lane->throttled, true, FQ_DEFERRAL_THROTTLED, false, lane->channel);
        s_settle_send(ctx, &lane->unreachable, true, FQ_DEFERRAL_UNREACHABLE, false, lane->channel);
    }
}

//  The lane of channel (NULL or "": email, an older peer's) if there is
//  one, else NULL.
static s_lane_t *s_lane_find(s_self_t *self, const char *channel)
{
    const char *name = channel && *channel ? channel : FQ_CHANNEL_EMAIL;
    for (size_t i = 0; i < self->nlanes; i++)
        if (streq(self->lanes[i]->channel, name))
            return self->lanes[i];
    return NULL;
}

//  The lane of channel, made if new; NULL when memory ran out.
static s_lane_t *s_lane(s_self_t *self, const char *channel)
{
    const char *name = channel && *channel ? channel : FQ_CHANNEL_EMAIL;
    s_lane_t *lane = s_lane_find(self, name);
    if (lane || strlen(name) >= FQ_CHANNEL_NAME_SIZE)
        return lane;
    if (self->nlanes == self->lanes_capacity) {
        size_t capacity = self->lanes_capacity ? 2 * self->lanes_capacity : 4;
        s_lane_t **grown = realloc(self->lanes, capacity * sizeof *grown);
        if (!grown)
            return NULL;
        self->lanes = grown;
        self->lanes_capacity = capacity;
    }
    lane = calloc(1, sizeof *lane);
    if (!lane)
        return NULL;
    snprintf(lane->channel, sizeof lane->channel, "%s", name);
    self->lanes[self->nlanes++] = lane;
    return lane;
}

static void s_lane_free(s_lane_t **lane_p)
{
    s_lane_t *lane = *lane_p;
    if (!lane)
        return;
    s_settle_t *settles[] = {&lane->done, &lane->answered, &lane->requeue, &lane->throttled,
                             &lane->unreachable};
    for (size_t i = 0; i < sizeof settles / sizeof settles[0]; i++) {
        free(settles[i]->messages);
        free(settles[i]->requests);
        free(settles[i]->tenants);
        free(settles[i]->costs);
    }
    free(lane);
    *lane_p = NULL;
}

//  The index of channel among those sender serves, or -1.
static int s_sender_channel(const s_sender_t *sender, const char *channel)
{
    for (size_t i = 0; i < sender->nchannels; i++)
        if (streq(sender->channels[i].channel, channel))
            return (int)i;
    return -1;
}

//  Applies the records gathered, with the senders' gauges when they
//  changed: one lock for the lot.
static void s_flush_metrics(s_self_t *self)
{
    if (!self->metrics)
        return;
    if (self->senders_changed) {
        for (s_sender_t *sender = zlistx_first(self->turns); sender;
             sender = zlistx_next(self->turns))
            fq_metrics_batch_sender(self->metrics, sender->metrics_id, (int64_t)sender->inflight,
                                    sender->credit);
        self->senders_changed = false;
    }
    //  The store's figures, when they moved: an idle dispatcher records
    //  nothing, and takes no lock
    int64_t unwritten = (int64_t)fq_store_window_unwritten(&self->store_window, self->acks_held);
    int64_t waited = self->store_wait_us +
                     (self->store_waiting_since ? zclock_usecs() - self->store_waiting_since : 0);
    if (unwritten != self->store_told.unwritten || waited != self->store_told.waited ||
        self->store_waits != self->store_told.waits) {
        fq_metrics_batch_store(self->metrics, unwritten, (int64_t)self->store_waits, waited);
        self->store_told.unwritten = unwritten;
        self->store_told.waited = waited;
        self->store_told.waits = self->store_waits;
    }
    fq_metrics_batch_flush(self->metrics);
}

//  Passes the gathered acks on: to the store, and their settling (with the
//  credit they give back) to the scheduler. The acks go first, so the
//  store has them before a drain is answered.
static void s_flush_answers(fq_ctx_t *ctx, s_self_t *self)
{
    if (self->acks_held) {
        fq_store_acks_t acks = {.ids = {self->acks_held, self->acks},
                                .through =
                                    fq_store_window_tell(&self->store_window, self->acks_held)};
        fq_tell(ctx, FQ_PATH_STORE, &fq_store_acks_desc, &acks);
        self->acks_held = 0;
    }
    s_flush_settles(ctx, self);
    s_flush_metrics(self);
}

//  Counts a frame that did not decode, or came where it makes no sense.
//  Logged at the 1st, 2nd, 4th, 8th, ... so a noisy peer cannot flood the log.
static void s_malformed(s_self_t *self)
{
    self->malformed++;
    if ((self->malformed & (self->malformed - 1)) == 0)
        fq_log(FQ_LOG_WARNING, "dispatcher: %llu malformed or unexpected messages dropped so far",
               (unsigned long long)self->malformed);
}

//  An ACK or NACK for a message this sender does not hold right now: one
//  it was never given, given to another sender, or given back meanwhile (it
//  said HELLO again or was declared dead, and the message went to the
//  scheduler). Only the holder's answer is written: a sender may not mark
//  as sent, failed or dead what it never held. A late answer of an honest
//  sender is dropped too; the message is still pending, so it goes out
//  again (at least once, as after any sender's death).
static void s_stray(fq_ctx_t *ctx, s_self_t *self, const s_sender_t *sender, uint64_t id,
                    const char *what)
{
    self->stray++;
    fq_count_refused(ctx);
    if ((self->stray & (self->stray - 1)) == 0)
        fq_log(FQ_LOG_WARNING,
               "dispatcher: dropped %s of message %llu from sender \"%s\", which does not hold "
               "it (%llu such answers so far)",
               what, (unsigned long long)id, sender->name, (unsigned long long)self->stray);
}

//  ---------------------------------------------------------------------
//  Senders

static void s_sender_free(void **item)
{
    s_sender_t *sender = *item;
    if (sender) {
        fq_dispatch_batch_release(&sender->out);
        fq_relay_pace_destroy(&sender->pace);
        free(sender->address);
        free(sender->name);
        free(sender);
        *item = NULL;
    }
}

//  The sender's unused credit is withdrawn, from each channel's lane.
static void s_withdraw_credit(s_self_t *self, s_sender_t *sender)
{
    for (size_t i = 0; i < sender->nchannels; i++) {
        //  A channel it granted credit for has its lane (s_credit)
        s_lane_t *lane =
            sender->channels[i].credit ? s_lane_find(self, sender->channels[i].channel) : NULL;
        if (lane && !self->draining)
            lane->requeue.credit -= sender->channels[i].credit;
        sender->channels[i].credit = 0;
    }
    sender->credit = 0;
}

//  Drops the lanes no sender serves any more once what they gathered has
//  gone to the scheduler: a sender may name any channel, and one that came
//  and went with new names each time would otherwise leave a lane each.
//  Nothing points to such a lane: a flight belongs to a sender of its
//  channel. Credit kept back counts as gathered: the scheduler has been
//  told to withdraw it with its sender's, and must still be given it.
static void s_lanes_prune(s_self_t *self)
{
    for (size_t i = 0; i < self->nlanes;) {
        s_lane_t *lane = self->lanes[i];
        bool served = false;
        for (s_sender_t *sender = zlistx_first(self->turns); sender && !served;
             sender = zlistx_next(self->turns))
            served = s_sender_channel(sender, lane->channel) >= 0;
        if (served || lane->withheld || lane->behind || lane->done.count || lane->answered.count ||
            lane->requeue.count || lane->throttled.count || lane->unreachable.count ||
            lane->done.credit || lane->answered.credit || lane->requeue.credit ||
            lane->throttled.credit || lane->unreachable.credit)
            i++;
        else {
            s_lane_free(&self->lanes[i]);
            self->lanes[i] = self->lanes[--self->nlanes];
        }
    }
}

//  The sender is gone: its messages go back to the scheduler, its unused
//  credit is withdrawn.
static void s_sender_gone(fq_ctx_t *ctx, s_self_t *self, s_sender_t *sender, const char *why)
{
    fq_log(FQ_LOG_INFO, "dispatcher: sender \"%s\" at %s left (%s); %zu messages in flight go back",
           sender->name, sender->address, why, sender->inflight);
    if (sender->inflight > 0) {
        zlistx_t *back = zlistx_new();
        for (s_flight_t *flight = zhashx_first(self->inflight); flight && back;
             flight = zhashx_next(self->inflight))
            if (flight->sender == sender)
                zlistx_add_end(back, (void *)(uintptr_t)fq_intkey_cursor(self->inflight));
        for (void *item = back ? zlistx_first(back) : NULL; item; item = zlistx_next(back)) {
            uint64_t id = (uint64_t)(uintptr_t)item;
            s_flight_t *flight = fq_intkey_lookup(self->inflight, id);
            s_settle_add(&flight->lane->requeue, id, (uint64_t)flight->request_id,
                         (uint64_t)flight->tenant_id, 0);
            fq_metrics_batch_settled(self->metrics, flight->tenant_id, flight->request_id,
                                     sender->metrics_id, FQ_METRICS_REQUEUED);
            fq_intkey_delete(self->inflight, id);
        }
        zlistx_destroy(&back);
    }
    s_withdraw_credit(self, sender);
    void *handle = zlistx_find(self->turns, sender);
    if (handle)
        zlistx_delete(self->turns, handle);
    fq_unwatch(ctx, sender->address);
    uint64_t metrics_id = sender->metrics_id;
    zhashx_delete(self->senders, sender->address);
    //  Its records are applied before it leaves the metrics
    s_flush_answers(ctx, self);
    s_lanes_prune(self);
    fq_metrics_sender_leave(self->config->metrics, metrics_id);
}

//  A leaving sender that holds nothing more is gone.
static void s_sender_check_left(fq_ctx_t *ctx, s_self_t *self, s_sender_t *sender)
{
    if (sender->leaving && sender->inflight == 0)
        s_sender_gone(ctx, self, sender, "said BYE");
}

//  BYE: the sender's unused credit is withdrawn; it leaves once it has
//  answered for every message it holds (or dies first).
static void s_sender_bye(fq_ctx_t *ctx, s_self_t *self, s_sender_t *sender)
{
    fq_log(FQ_LOG_INFO, "dispatcher: sender \"%s\" said BYE with %zu messages in flight",
           sender->name, sender->inflight);
    s_withdraw_credit(self, sender);
    sender->leaving = true;
    self->senders_changed = true;
    s_flush_settles(ctx, self);
    s_sender_check_left(ctx, self, sender);
}

//  A sender with credit for channel for message id, with the channel's
//  index among its own in *index; NULL when none has any. The senders are
//  tried from the one at id modulo their number: a request's messages,
//  whose ids follow each other, take turns among the senders. Strict
//  turns per message pinned each tenant to one sender when a DISPATCH
//  held whole rounds of an even number of tenants (the scheduler picks
//  them in the same order every round), so a sender slower for a moment
//  slowed half the tenants: in fq_bench_pipeline's all-backlogged phase
//  Jain's least fair window of 1,000 deliveries was 0.982 to 0.989, and
//  in one read by hand every tenant of one sender had 11 deliveries and
//  every tenant of the other 9.
static s_sender_t *s_choose(s_self_t *self, const char *channel, uint64_t id, int *index)
{
    size_t n = zlistx_size(self->turns);
    if (n == 0)
        return NULL;
    size_t first = (size_t)(id % n);
    s_sender_t *sender = zlistx_first(self->turns);
    for (size_t i = 0; i < first; i++)
        sender = zlistx_next(self->turns);
    for (size_t i = 0; i < n; i++) {
        int c = sender->credit > 0 ? s_sender_channel(sender, channel) : -1;
        if (c >= 0 && sender->channels[c].credit > 0) {
            *index = c;
            return sender;
        }
        sender = zlistx_next(self->turns);
        if (!sender)
            sender = zlistx_first(self->turns);
    }
    return NULL;
}

//  The system a sender's address names ("fq://name" of
//  "fq://name/user/sender"), or the whole address of a local one (tests'
//  senders), into system.
static void s_system_of(const char *address, char *system, size_t size)
{
    const char *path;
    if (fq_address_split(address, system, size, &path) != 1)
        snprintf(system, size, "%s", address);
}

//  The sender registered from the same system as address, or NULL. A peer
//  system is one sender: one that said HELLO from many paths would hold the
//  credit cap many times over.
static s_sender_t *s_sender_of_system(s_self_t *self, const char *address)
{
    char wanted[FQ_ADDRESS_MAX + 1], system[FQ_ADDRESS_MAX + 1];
    s_system_of(address, wanted, sizeof wanted);
    for (s_sender_t *sender = zlistx_first(self->turns); sender;
         sender = zlistx_next(self->turns)) {
        s_system_of(sender->address, system, sizeof system);
        if (streq(system, wanted))
            return sender;
    }
    return NULL;
}

//  Longest version or capability list a HELLO may carry: they are logged.
#define S_HELLO_TEXT_MAX 128

//  A HELLO's free text: short, printable ASCII (it goes into the log).
static bool s_hello_text_valid(const char *text)
{
    size_t length = 0;
    for (; text[length]; length++)
        if (text[length] < ' ' || text[length] > '~')
            return false;
    return length <= S_HELLO_TEXT_MAX;
}

//  True if the comma-separated capabilities hold wanted (spaces around a
//  name are allowed).
static bool s_capable(const char *capabilities, const char *wanted)
{
    size_t length = strlen(wanted), size;
    const char *at = capabilities, *item;
    while ((item = fq_capability_next(&at, &size)))
        if (size == length && strncmp(item, wanted, length) == 0)
            return true;
    return false;
}

//  The channels a HELLO's capabilities list as channel=NAME tokens, into
//  sender; none (an older sender) is email alone. A name that is not one,
//  a repeat, or one past S_SENDER_CHANNELS_MAX is left out.
static void s_hello_channels(s_sender_t *sender, const char *capabilities)
{
    static const char prefix[] = "channel=";
    const size_t prefix_size = sizeof prefix - 1;
    size_t size;
    const char *at = capabilities, *item;
    while ((item = fq_capability_next(&at, &size))) {
        if (size <= prefix_size || strncmp(item, prefix, prefix_size) != 0 ||
            size - prefix_size >= FQ_CHANNEL_NAME_SIZE ||
            sender->nchannels == S_SENDER_CHANNELS_MAX)
            continue;
        char name[FQ_CHANNEL_NAME_SIZE];
        snprintf(name, sizeof name, "%.*s", (int)(size - prefix_size), item + prefix_size);
        if (!fq_channel_name_problem(name) && s_sender_channel(sender, name) < 0)
            snprintf(sender->channels[sender->nchannels++].channel, FQ_CHANNEL_NAME_SIZE, "%s",
                     name);
    }
    if (sender->nchannels == 0)
        snprintf(sender->channels[sender->nchannels++].channel, FQ_CHANNEL_NAME_SIZE, "%s",
                 FQ_CHANNEL_EMAIL);
}

static void s_hello(fq_ctx_t *ctx, s_self_t *self, const fq_msg_t *msg)
{
    fq_hello_t hello;
    //  The name is a system name, as fairq-sender checks its own
    if (fq_msg_decode(msg, &fq_hello_desc, &hello) != 0 || !*msg->sender ||
        !fq_name_valid(hello.name) || !s_hello_text_valid(hello.version) ||
        !s_hello_text_valid(hello.capabilities)) {
        s_malformed(self);
        return;
    }
    //  It restarted (or another path of its system speaks for it now):
    //  what the old registration held goes back
    s_sender_t *old = s_sender_of_system(self, msg->sender);
    if (old)
        s_sender_gone(ctx, self, old,
                      streq(old->address, msg->sender) ? "said HELLO again"
                                                       : "replaced by another path of its system");
    s_sender_t *sender = calloc(1, sizeof *sender);
    if (!sender)
        return;
    sender->address = strdup(msg->sender);
    sender->name = strdup(hello.name);
    if (!sender->address || !sender->name) {
        s_sender_free((void **)&sender);
        return;
    }
    sender->batches = s_capable(hello.capabilities, FQ_SENDER_CAN_BATCH);
    s_hello_channels(sender, hello.capabilities);
    fq_rate_t relay_rate;
    if (fq_relay_pace_capability(hello.capabilities, &relay_rate) &&
        !(sender->pace = fq_relay_pace_new(&relay_rate, zclock_usecs()))) {
        s_sender_free((void **)&sender);
        return;
    }
    sender->metrics_id = fq_metrics_sender_join(self->config->metrics, hello.name, sender->address);
    zhashx_insert(self->senders, sender->address, sender);
    zlistx_add_end(self->turns, sender);
    fq_watch(ctx, sender->address);
    fq_log(FQ_LOG_INFO, "dispatcher: sender \"%s\" joined from %s (version %s, %s, concurrency %u)",
           hello.name, sender->address, hello.version, hello.capabilities, hello.concurrency);
    fq_welcome_t welcome = {.system = fq_system_name(fq_ctx_system(ctx)),
                            .protocol = FQ_SENDER_PROTOCOL};
    fq_reply(ctx, msg, &fq_welcome_desc, &welcome);
}

//  The sender a message came from, or NULL (counted) if it never said HELLO.
static s_sender_t *s_known_sender(fq_ctx_t *ctx, s_self_t *self, const fq_msg_t *msg)
{
    s_sender_t *sender = zhashx_lookup(self->senders, msg->sender);
    if (!sender) {
        self->unknown_peer++;
        fq_count_refused(ctx);
        if ((self->unknown_peer & (self->unknown_peer - 1)) == 0)
            fq_log(FQ_LOG_WARNING, "dispatcher: ignored a message from %s, which did not say HELLO",
                   *msg->sender ? msg->sender : "an unknown address");
    }
    return sender;
}

//  Passes on as much of a paced sender's held credit as its relay's rate
//  allows now (fq_relay_pace.h), and sets the pace timer for the rest.
static void s_pace(fq_ctx_t *ctx, s_self_t *self, s_sender_t *sender)
{
    if (!sender->pace || sender->leaving)
        return;
    int64_t released[FQ_RELAY_PACE_CHANNELS];
    int64_t now = zclock_usecs();
    int nchannels = (int)sender->nchannels;
    if (fq_relay_pace_release(sender->pace, nchannels, released, now) > 0)
        for (int c = 0; c < nchannels; c++) {
            s_lane_t *lane = released[c] ? s_lane(self, sender->channels[c].channel) : NULL;
            if (!lane)
                continue; //  Out of memory for a lane: that credit is lost, as at s_credit
            sender->channels[c].credit += released[c];
            sender->credit += released[c];
            self->senders_changed = true;
            int64_t credit = released[c];
            if (self->draining || s_keep_back(ctx, self, lane, &credit))
                continue;
            fq_credit_changed_t changed = {.delta = credit, .channel = lane->channel};
            fq_tell(ctx, FQ_PATH_SCHEDULER, &fq_credit_changed_desc, &changed);
        }
    int64_t wait = fq_relay_pace_wait_us(sender->pace, now);
    if (wait < 0 || (self->pace_at && self->pace_at <= now + wait))
        return;
    int ms = (int)((wait + 999) / 1000);
    fq_tick_t tick = {.what = FQ_TICK_PACE};
    if (fq_timer_once(ctx, ms > 0 ? ms : 1, &fq_tick_desc, &tick) > 0)
        self->pace_at = now + wait;
}

//  The pace timer: every paced sender's credit that may go on now.
static void s_pace_all(fq_ctx_t *ctx, s_self_t *self)
{
    self->pace_at = 0;
    for (s_sender_t *sender = zlistx_first(self->turns); sender; sender = zlistx_next(self->turns))
        s_pace(ctx, self, sender);
}

static void s_credit(fq_ctx_t *ctx, s_self_t *self, const fq_msg_t *msg)
{
    fq_credit_t credit;
    if (fq_msg_decode(msg, &fq_credit_desc, &credit) != 0) {
        s_malformed(self);
        return;
    }
    s_sender_t *sender = s_known_sender(ctx, self, msg);
    if (!sender || sender->leaving)
        return;
    //  Credit for a channel its HELLO did not list would let it take
    //  messages it cannot deliver
    int c = s_sender_channel(sender, *credit.channel ? credit.channel : FQ_CHANNEL_EMAIL);
    s_lane_t *lane = c >= 0 ? s_lane(self, sender->channels[c].channel) : NULL;
    if (!lane) {
        s_malformed(self);
        return;
    }
    int64_t granted = credit.n;
    int64_t held = sender->pace ? fq_relay_pace_held(sender->pace) : 0;
    if (sender->credit + held + (int64_t)sender->inflight + granted > S_SENDER_CREDIT_MAX)
        granted = S_SENDER_CREDIT_MAX - sender->credit - held - (int64_t)sender->inflight;
    if (granted <= 0)
        return;
    if (sender->pace) {
        //  Passed on at its relay's rate (s_pace)
        fq_relay_pace_hold(sender->pace, c, granted);
        s_pace(ctx, self, sender);
        return;
    }
    sender->channels[c].credit += granted;
    sender->credit += granted;
    self->senders_changed = true;
    if (self->draining)
        return;
    fq_credit_changed_t changed = {.delta = granted, .channel = lane->channel};
    fq_tell(ctx, FQ_PATH_SCHEDULER, &fq_credit_changed_desc, &changed);
}

//  What an answered message cost its tenant under fairness_cost: its
//  rendered bytes, or the microseconds from its hand-out to its answer
//  (at least 1); 0 when tenants are charged per message.
static uint64_t s_cost(const s_self_t *self, const s_flight_t *flight)
{
    switch (self->config->fairness_cost) {
    case FQ_FAIRNESS_COST_BYTES:
        return flight->bytes > 0 ? flight->bytes : 1;
    case FQ_FAIRNESS_COST_TIME: {
        int64_t took = zclock_usecs() - flight->handed_us;
        return took > 0 ? (uint64_t)took : 1;
    }
    default:
        return 0;
    }
}

//  An acked message's delivery time (from its hand-off, its MSG or
//  MESSAGES frame told, to now) and end-to-end time (from when its request
//  was due, on the wall clock the database's due time is on), recorded.
static void s_delivered(s_self_t *self, const s_flight_t *flight)
{
    if (!self->metrics)
        return;
    int64_t in_sender = zclock_usecs() - flight->handed_us;
    int64_t now_ms = zclock_time();
    //  Never below 0: the database's clock may run ahead of this host's
    int64_t end_to_end = flight->due_at_ms <= 0       ? -1
                         : now_ms > flight->due_at_ms ? now_ms - flight->due_at_ms
                                                      : 0;
    const s_route_t *route = flight->route;
    fq_metrics_batch_delivered(self->metrics, flight->tenant_id, route ? route->channel : NULL,
                               route ? route->destination : NULL, in_sender > 0 ? in_sender : 0,
                               end_to_end);
}

//  An ACK or NACK: the message leaves flight and its credit comes back.
//  outcome: FQ_METRICS_SENT, or for a nack FQ_METRICS_DEAD (permanent) or
//  FQ_METRICS_FAILED (dead too at the last attempt, as the store decides),
//  FQ_METRICS_REQUEUED for a deferral. deferral: the scheduler's to act on
//  (a named destination's); reached: the receiver answered (no deferral).
//  Returns false if the message is not in flight with this sender right now
//  (see s_stray).
static bool s_answered(s_self_t *self, s_sender_t *sender, uint64_t id,
                       fq_metrics_outcome_t outcome, uint32_t deferral, bool reached)
{
    s_flight_t *flight = id ? fq_intkey_lookup(self->inflight, id) : NULL;
    if (!flight || flight->sender != sender)
        return false;
    if (outcome == FQ_METRICS_FAILED && flight->last_attempt)
        outcome = FQ_METRICS_DEAD;
    fq_metrics_batch_settled(self->metrics, flight->tenant_id, flight->request_id,
                             sender->metrics_id, outcome);
    //  Only an ack is a delivery: a nack's time says nothing of one
    if (outcome == FQ_METRICS_SENT)
        s_delivered(self, flight);
    self->senders_changed = true;
    s_sender_channel_t *channel = &sender->channels[flight->sender_channel];
    sender->inflight--;
    channel->inflight--;
    //  The answer gives its credit back, to its channel, except to a
    //  sender on its way out; a paced sender's is held (s_pace)
    bool credit_back = !sender->leaving && !sender->pace;
    sender->credit += credit_back;
    channel->credit += credit_back;
    if (sender->pace && !sender->leaving)
        fq_relay_pace_hold(sender->pace, flight->sender_channel, 1);
    //  A message of "default" deferred by its receiver (deferral NONE
    //  here: its back-off is the store's) reached nothing: plain done
    s_settle_t *settle = deferral == FQ_DEFERRAL_THROTTLED     ? &flight->lane->throttled
                         : deferral == FQ_DEFERRAL_UNREACHABLE ? &flight->lane->unreachable
                         : reached                             ? &flight->lane->answered
                                                               : &flight->lane->done;
    //  Only an answer has a cost to charge: a deferral is given back
    uint64_t cost = settle == &flight->lane->answered ? s_cost(self, flight) : 0;
    s_settle_add_cost(settle, id, (uint64_t)flight->request_id, (uint64_t)flight->tenant_id,
                      credit_back && !self->draining, cost);
    fq_intkey_delete(self->inflight, id);
    return true;
}

//  One ACK of sender's, alone or out of an ACKS.
static void s_ack_one(fq_ctx_t *ctx, s_self_t *self, s_sender_t *sender, uint64_t id)
{
    if (id == 0) {
        s_malformed(self);
        return;
    }
    if (!s_answered(self, sender, id, FQ_METRICS_SENT, FQ_DEFERRAL_NONE, true)) {
        s_stray(ctx, self, sender, id, "an ACK");
        return;
    }
    self->acked++;
    if (self->acks_held == self->acks_capacity) {
        uint32_t capacity = self->acks_capacity ? self->acks_capacity * 2 : S_ANSWER_BATCH;
        uint64_t *grown = realloc(self->acks, capacity * sizeof *grown);
        if (!grown) {
            //  Out of memory: this one goes on its own
            fq_store_acks_t one = {.ids = {1, &id},
                                   .through = fq_store_window_tell(&self->store_window, 1)};
            fq_tell(ctx, FQ_PATH_STORE, &fq_store_acks_desc, &one);
            s_pace(ctx, self, sender);
            s_flush_settles(ctx, self);
            return;
        }
        self->acks = grown;
        self->acks_capacity = capacity;
    }
    self->acks[self->acks_held++] = id;
    //  Paced credit goes on only once this ack counts as unwritten
    s_pace(ctx, self, sender);
    if (self->acks_held >= S_ANSWER_BATCH || sender->leaving)
        s_flush_answers(ctx, self);
}

static void s_ack(fq_ctx_t *ctx, s_self_t *self, const fq_msg_t *msg)
{
    fq_sender_ack_t ack;
    if (fq_msg_decode(msg, &fq_sender_ack_desc, &ack) != 0 || ack.id == 0) {
        s_malformed(self);
        return;
    }
    s_sender_t *sender = s_known_sender(ctx, self, msg);
    if (!sender)
        return;
    s_ack_one(ctx, self, sender, ack.id);
    s_sender_check_left(ctx, self, sender);
}

//  ACKS (protocol 2): each id as its own ACK.
static void s_acks(fq_ctx_t *ctx, s_self_t *self, const fq_msg_t *msg)
{
    fq_sender_acks_t acks;
    if (fq_msg_decode(msg, &fq_sender_acks_desc, &acks) != 0) {
        s_malformed(self);
        return;
    }
    s_sender_t *sender = s_known_sender(ctx, self, msg);
    if (!sender)
        return;
    for (uint32_t i = 0; i < acks.ids.count; i++)
        s_ack_one(ctx, self, sender, acks.ids.items[i]);
    s_sender_check_left(ctx, self, sender);
}

static void s_nack(fq_ctx_t *ctx, s_self_t *self, const fq_msg_t *msg)
{
    fq_sender_nack_t nack;
    if (fq_msg_decode(msg, &fq_sender_nack_desc, &nack) != 0 || nack.id == 0) {
        s_malformed(self);
        return;
    }
    s_sender_t *sender = s_known_sender(ctx, self, msg);
    if (!sender)
        return;
    //  A deferral (the receiver throttles, or could not be reached) is
    //  no failure of the message: it costs no attempt. To a named
    //  destination nothing is written: it stays pending and goes back to
    //  the scheduler, which slows that destination down and sends it again
    //  within the new budget. To "default" (every domain not named, one
    //  budget that one receiver must not slow down for all) it waits its
    //  own back-off in the store, as a failed message would. A permanent
    //  answer is never one.
    uint32_t deferral = nack.permanent || (nack.deferral != FQ_DEFERRAL_THROTTLED &&
                                           nack.deferral != FQ_DEFERRAL_UNREACHABLE)
                            ? FQ_DEFERRAL_NONE
                            : nack.deferral;
    s_flight_t *flight = fq_intkey_lookup(self->inflight, nack.id);
    s_lane_t *lane = flight ? flight->lane : NULL;
    uint32_t deferred_here = flight && flight->named_destination ? deferral : FQ_DEFERRAL_NONE;
    if (flight && flight->sender == sender && nack.permanent && self->has_bounces && nack.error &&
        regexec(&self->bounces, nack.error, 0, NULL, 0) == 0)
        fq_metrics_batch_bounced(self->metrics, flight->tenant_id);
    if (!s_answered(self, sender, nack.id,
                    deferral         ? FQ_METRICS_REQUEUED
                    : nack.permanent ? FQ_METRICS_DEAD
                                     : FQ_METRICS_FAILED,
                    deferred_here, deferral == FQ_DEFERRAL_NONE)) {
        s_stray(ctx, self, sender, nack.id, "a NACK");
        return;
    }
    self->nacked++;
    self->deferred += deferral != FQ_DEFERRAL_NONE;
    if (deferred_here) {
        //  The receiver's Retry-After holds the whole destination
        if (deferral == FQ_DEFERRAL_THROTTLED && nack.retry_after_s > lane->throttled.retry_after_s)
            lane->throttled.retry_after_s = nack.retry_after_s;
        s_pace(ctx, self, sender); //  Nothing to write: no outcome to count
        s_flush_answers(ctx, self);
        s_sender_check_left(ctx, self, sender);
        return;
    }
    //  The receiver's Retry-After goes with it: the store waits it out
    fq_store_nack_t store = {.id = nack.id,
                             .permanent = nack.permanent,
                             .error = nack.error,
                             .retry_after_s = nack.retry_after_s,
                             .deferral = deferral};
    s_store_nack(ctx, self, &store);
    s_pace(ctx, self, sender); //  Once the nack counts as unwritten
    s_flush_answers(ctx, self);
    s_sender_check_left(ctx, self, sender);
}

//  ---------------------------------------------------------------------
//  Rendering and sending

static void s_templates_free(void **item)
{
    s_templates_t *templates = *item;
    if (templates) {
        fq_template_destroy(&templates->subject);
        fq_template_destroy(&templates->body);
        fq_template_destroy(&templates->text_body);
        fq_http_templates_destroy(&templates->http);
        free(templates->channel);
        free(templates->from);
        free(templates->tenant);
        fq_request_templates_t headers = {.header_names = templates->header_names,
                                          .header_values = templates->header_values,
                                          .nheaders = templates->nheaders};
        fq_request_templates_free(&headers);
        free(templates);
        *item = NULL;
    }
}

//  Parses a mail request's subject, body and text_body into templates.
//  false with why in error.
static bool s_parse_mail(s_templates_t *templates, const fq_request_templates_t *loaded,
                         char *error, size_t error_size)
{
    templates->subject = fq_template_new(loaded->subject, FQ_TEMPLATE_HEADER, error, error_size);
    templates->body = templates->subject ? fq_template_new(loaded->body,
                                                           loaded->body_is_html ? FQ_TEMPLATE_HTML
                                                                                : FQ_TEMPLATE_PLAIN,
                                                           error, error_size)
                                         : NULL;
    //  Plain text: rendered as given, no HTML escaping
    if (templates->body && loaded->text_body)
        templates->text_body =
            fq_template_new(loaded->text_body, FQ_TEMPLATE_PLAIN, error, error_size);
    return templates->subject && templates->body && (templates->text_body || !loaded->text_body);
}

//  The parsed templates of request_id, loaded on first use. NULL with *rc
//  set: FQ_EDB (try again later) or another code (the request cannot be
//  rendered: message in error).
//  Parses a request's loaded templates (taken: freed here) into the
//  cache. Returns them, or NULL with *rc (FQ_EINVAL: they cannot be
//  parsed, why in error; FQ_ENOMEM).
static s_templates_t *s_templates_take(s_self_t *self, fq_request_templates_t *taken, int *rc,
                                       char *error, size_t error_size)
{
    fq_request_templates_t loaded = *taken;
    *taken = (fq_request_templates_t){0};
    int64_t request_id = loaded.id;
    s_templates_t *templates = calloc(1, sizeof *templates);
    bool parsed = false;
    if (templates) {
        bool email = fq_channel_is_email(loaded.channel);
        if (!email) {
            templates->channel = loaded.channel;
            loaded.channel = NULL;
        }
        if (email)
            parsed = s_parse_mail(templates, &loaded, error, error_size);
        else if (strcmp(templates->channel, FQ_CHANNEL_HTTP) == 0)
            parsed = (templates->http = fq_pipeline_http_templates(&loaded, error, error_size));
        else
            //  Another channel's body: rendered as it is
            parsed = (templates->body =
                          fq_template_new(loaded.body, FQ_TEMPLATE_PLAIN, error, error_size));
        templates->body_is_html = loaded.body_is_html;
        templates->unsubscribe = email && loaded.unsubscribe;
        templates->max_attempts = loaded.max_attempts;
        templates->due_at_ms = loaded.due_at_ms;
        fq_metrics_tenant_name(self->config->metrics, loaded.tenant_id, loaded.tenant);
        templates->from = loaded.from_addr;
        templates->tenant = loaded.tenant;
        loaded.from_addr = loaded.tenant = NULL;
        templates->bytes = strlen(loaded.subject) + strlen(loaded.body) +
                           (loaded.text_body ? strlen(loaded.text_body) : 0) +
                           (loaded.http_url ? strlen(loaded.http_url) : 0) +
                           (loaded.http_body ? strlen(loaded.http_body) : 0);
        for (size_t i = 0; i < loaded.nheaders; i++)
            templates->bytes += strlen(loaded.header_names[i]) + strlen(loaded.header_values[i]);
        //  Mail's headers go as they are; an http request's are templates,
        //  which its parsed templates hold
        if (email) {
            templates->header_names = loaded.header_names;
            templates->header_values = loaded.header_values;
            templates->nheaders = loaded.nheaders;
            loaded.header_names = loaded.header_values = NULL;
            loaded.nheaders = 0;
        }
    }
    fq_request_templates_free(&loaded);
    if (!templates || !parsed) {
        *rc = templates ? FQ_EINVAL : FQ_ENOMEM;
        s_templates_free((void **)&templates);
        return NULL;
    }
    fq_intkey_insert(self->templates, request_id, templates);
    self->template_bytes += templates->bytes;
    return templates;
}

//  Adds request_id to the nwanted requests of wanted (room for
//  FQ_STORE_TEMPLATES_MAX) unless its templates are cached or it is
//  there already. Returns how many are wanted now.
static size_t s_want_templates(s_self_t *self, int64_t *wanted, size_t nwanted, int64_t request_id)
{
    if (nwanted == FQ_STORE_TEMPLATES_MAX || fq_intkey_lookup(self->templates, request_id))
        return nwanted;
    for (size_t i = 0; i < nwanted; i++)
        if (wanted[i] == request_id)
            return nwanted;
    wanted[nwanted] = request_id;
    return nwanted + 1;
}

//  The parsed templates of request_id, from the cache or loaded alone.
//  NULL with *rc and why in error: FQ_EDB, FQ_ENOTFOUND, FQ_EINVAL (they
//  cannot be parsed) or FQ_ENOMEM.
static s_templates_t *s_templates(s_self_t *self, fq_store_t *store, int64_t request_id, int *rc,
                                  char *error, size_t error_size)
{
    s_templates_t *templates = fq_intkey_lookup(self->templates, request_id);
    if (templates)
        return templates;
    fq_request_templates_t loaded;
    *rc = fq_store_request_templates(store, request_id, &loaded);
    if (*rc) {
        snprintf(error, error_size, "%s", fq_store_error(store));
        return NULL;
    }
    return s_templates_take(self, &loaded, rc, error, error_size);
}

//  Keeps one pick's credit back while the database fails, or the leader's
//  lease is not held: the message goes back to the scheduler, and its
//  credit is freed only when the database answers again and the lease is
//  held (s_retry), so a failing query is not retried in a loop.
static void s_hold(fq_ctx_t *ctx, s_self_t *self, s_lane_t *lane, uint64_t id, uint64_t request,
                   uint64_t tenant)
{
    s_settle_add(&lane->requeue, id, request, tenant, 0);
    if (self->draining)
        return;
    lane->withheld++;
    if (!self->retry_armed) {
        int delay = fq_db_retry_in_ms(self->db);
        fq_tick_t tick = {.what = FQ_TICK_RETRY};
        self->retry_armed = fq_timer_once(ctx, delay > S_HOLD_MIN_MS ? delay : S_HOLD_MIN_MS,
                                          &fq_tick_desc, &tick) > 0;
    }
}

//  Milliseconds from when a request was due to now_ms (both Unix ms): a
//  first attempt's dispatch latency. Never below 0 (the database's clock
//  may run ahead of this host's); -1 when the request's time is unknown.
static int64_t s_latency_ms(const s_templates_t *templates, int64_t now_ms)
{
    if (templates->due_at_ms <= 0)
        return -1;
    return now_ms > templates->due_at_ms ? now_ms - templates->due_at_ms : 0;
}

//  What a render made for one MSG, owned until the MSG has gone (or its
//  batch has taken it): mail's subject, body and text_body, or a
//  channel's body and, for http, the block its URL and headers are in.
typedef struct {
    char *subject, *body, *text;
    void *block;
} s_rendered_t;

static void s_rendered_free(s_rendered_t *rendered)
{
    free(rendered->subject);
    free(rendered->body);
    free(rendered->text);
    free(rendered->block);
    *rendered = (s_rendered_t){0};
}

//  Sends what sender's batch holds as one MESSAGES. Its messages were
//  counted in flight as they were added; if the frame cannot go (its peer
//  is going, most likely), each is taken back as s_send_row does for a MSG
//  that cannot: the sender keeps its credit, the pick gives its own back.
static void s_batch_send(fq_ctx_t *ctx, s_self_t *self, s_sender_t *sender, s_lane_t *lane)
{
    fq_dispatch_batch_t *out = &sender->out;
    if (out->count == 0)
        return;
    //  A batch holds the messages of one DISPATCH: of lane's channel
    int c = s_sender_channel(sender, lane->channel);
    fq_messages_t frame = fq_dispatch_batch_frame(out);
    bool sent = fq_tell(ctx, sender->address, &fq_messages_desc, &frame) == 0;
    int64_t handed_us = zclock_usecs();
    for (uint32_t i = 0; i < out->count; i++) {
        const fq_dispatch_batch_item_t *item = &out->items[i];
        uint64_t id = out->messages[i].id;
        if (sent) {
            fq_metrics_batch_dispatched(self->metrics, item->tenant_id, item->request_id,
                                        sender->metrics_id, item->latency_ms);
            //  Handed off now, not when rendered: its time in the sender
            //  starts with the frame, not with the rest of the DISPATCH
            //  rendered meanwhile
            s_flight_t *flight = fq_intkey_lookup(self->inflight, id);
            if (flight)
                flight->handed_us = handed_us;
        } else {
            fq_intkey_delete(self->inflight, id);
            sender->credit++;
            sender->inflight--;
            sender->channels[c].credit++;
            sender->channels[c].inflight--;
            self->sent--;
            s_settle_add(&lane->requeue, id, (uint64_t)item->request_id, (uint64_t)item->tenant_id,
                         1);
        }
    }
    fq_dispatch_batch_clear(out);
}

//  Adds a rendered message to sender's batch (sent when full, or at the end
//  of the DISPATCH), in flight from now on. Returns 0 with message's
//  subject and body taken (and block, what its to and headers point into,
//  NULL when they are borrowed), or -1 (out of memory) with the pick
//  settled to be sent again.
//  The bytes of a message as rendered for its receiver (its subject,
//  bodies, headers and address), what fairness_cost bytes charges.
static uint64_t s_message_bytes(const fq_message_t *message)
{
    const char *parts[] = {message->to,   message->from,      message->subject,
                           message->body, message->text_body, message->list_unsubscribe};
    uint64_t bytes = 0;
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++)
        bytes += parts[i] ? strlen(parts[i]) : 0;
    for (uint32_t i = 0; i < message->headers.count; i++)
        bytes += strlen(message->headers.keys[i]) + strlen(message->headers.values[i]);
    return bytes;
}

//  The route of channel and destination, interned (made on first use);
//  NULL without metrics, without a destination, past S_ROUTES_MAX or out
//  of memory.
static const s_route_t *s_route(s_self_t *self, const char *channel, const char *destination)
{
    if (!self->routes || !destination)
        return NULL;
    const s_route_t *last = self->last_route;
    if (last && streq(last->destination, destination) && streq(last->channel, channel))
        return last;
    char key[FQ_STORE_DESTINATION_SIZE + FQ_CHANNEL_NAME_SIZE + 1];
    snprintf(key, sizeof key, "%s\t%s", destination, channel);
    s_route_t *route = zhashx_lookup(self->routes, key);
    if (!route && zhashx_size(self->routes) < S_ROUTES_MAX) {
        //  One block: the route, then its two names
        size_t channel_size = strlen(channel) + 1, destination_size = strlen(destination) + 1;
        route = malloc(sizeof *route + channel_size + destination_size);
        if (!route)
            return NULL;
        char *names = (char *)(route + 1);
        memcpy(names, channel, channel_size);
        memcpy(names + channel_size, destination, destination_size);
        *route = (s_route_t){names, names + channel_size};
        if (zhashx_insert(self->routes, key, route) != 0) {
            free(route);
            return NULL;
        }
    }
    if (route)
        self->last_route = route;
    return route;
}

//  message (of row) goes to sender (its channel index channel): flight
//  (allocated) holds what its answer needs, and the sender's credit pays.
static void s_take_off(s_self_t *self, s_flight_t *flight, s_sender_t *sender, int channel,
                       s_lane_t *lane, const fq_message_t *message, const fq_message_row_t *row,
                       const s_templates_t *templates)
{
    uint64_t id = message->id;
    *flight = (s_flight_t){sender,
                           lane,
                           channel,
                           row->request_id,
                           row->tenant_id,
                           row->try_count + 1 >= templates->max_attempts,
                           row->named_destination,
                           s_message_bytes(message),
                           zclock_usecs(),
                           s_route(self, lane->channel, row->destination),
                           templates->due_at_ms};
    fq_intkey_insert(self->inflight, id, flight);
    sender->credit--;
    sender->inflight++;
    sender->channels[channel].credit--;
    sender->channels[channel].inflight++;
    self->sent++;
    self->senders_changed = true;
}

static int s_batch_add(fq_ctx_t *ctx, s_self_t *self, s_sender_t *sender, int channel,
                       s_lane_t *lane, const fq_message_t *message, const fq_message_row_t *row,
                       const s_templates_t *templates, int64_t now_ms, void *block)
{
    fq_dispatch_batch_item_t item = {row->request_id, row->tenant_id,
                                     row->try_count == 0 ? s_latency_ms(templates, now_ms) : -1,
                                     block};
    s_flight_t *flight = malloc(sizeof *flight);
    if (!flight || fq_dispatch_batch_add(&sender->out, message, item) != 0) {
        free(flight);
        s_settle_add(&lane->requeue, message->id, (uint64_t)row->request_id,
                     (uint64_t)row->tenant_id, 1);
        return -1;
    }
    s_take_off(self, flight, sender, channel, lane, message, row, templates);
    if (fq_dispatch_batch_full(&sender->out))
        s_batch_send(ctx, self, sender, lane);
    return 0;
}

//  Of a mail message of row with one-click unsubscribe: seals its token,
//  sets its URL as the template field FQ_UNSUBSCRIBE_FIELD in fields
//  (over a recipient's own of that name), and makes its List-Unsubscribe
//  value (the URL, then the mailto when configured) into *value
//  (malloc'ed). Without an unsubscribe_url the mail could not carry the
//  link its request promises, and is not sent: it dies with the reason,
//  which the operator reads (and retries it, POST /v1/messages/{id}/retry,
//  once fairqd has the key: fairqd refuses to start without it only where
//  unsubscribe_listen is set).
//  Returns 0, or an fq code with why in error.
static int s_unsubscribe_link(const fq_pipeline_config_t *config, const fq_message_row_t *row,
                              json_t *fields, char **value, char *error, size_t error_size)
{
    *value = NULL;
    if (!config->unsubscribe_url || !*config->unsubscribe_url) {
        fq_error_format(error, error_size,
                        "its request has one-click unsubscribe on, but fairqd has no "
                        "unsubscribe_url: the mail cannot carry its link");
        return FQ_EINVAL;
    }
    fq_unsubscribe_target_t target = {.tenant_id = row->tenant_id, .request_id = row->request_id};
    char token[FQ_UNSUBSCRIBE_TOKEN_SIZE];
    if (strlen(row->recipient) >= sizeof target.recipient ||
        snprintf(target.recipient, sizeof target.recipient, "%s", row->recipient) < 0 ||
        fq_unsubscribe_token(config->unsubscribe_key, &target, token, sizeof token) != 0) {
        fq_error_format(error, error_size, "could not seal its unsubscribe token");
        return FQ_EINVAL;
    }
    fq_buf_t url = {0}, list = {0};
    int mem = fq_buf_printf(&url, "%s" FQ_UNSUBSCRIBE_PATH "%s", config->unsubscribe_url, token);
    if (!mem)
        mem = fq_buf_printf(&list, "<%s>", url.data);
    if (!mem && config->unsubscribe_mailto && *config->unsubscribe_mailto)
        mem = fq_buf_printf(&list, ", <mailto:%s?subject=unsubscribe>", config->unsubscribe_mailto);
    if (!mem && (!json_is_object(fields) ||
                 json_object_set_new(fields, FQ_UNSUBSCRIBE_FIELD, json_string(url.data)) != 0))
        mem = -1;
    fq_buf_free(&url);
    if (mem) {
        fq_buf_free(&list);
        fq_error_format(error, error_size, "out of memory making its unsubscribe link");
        return FQ_ENOMEM;
    }
    *value = fq_buf_take(&list);
    return 0;
}

//  Renders a mail message of row with fields into message and rendered.
//  Returns 0, or an fq code with why in error.
static int s_render_mail(const s_templates_t *templates, const json_t *fields,
                         fq_message_t *message, s_rendered_t *rendered, char *error,
                         size_t error_size)
{
    size_t len;
    int rc = fq_template_render_json(templates->subject, fields, &rendered->subject, &len, error,
                                     error_size);
    if (rc == 0)
        rc = fq_template_render_json(templates->body, fields, &rendered->body, &len, error,
                                     error_size);
    if (rc == 0 && templates->text_body)
        rc = fq_template_render_json(templates->text_body, fields, &rendered->text, &len, error,
                                     error_size);
    message->subject = rendered->subject;
    message->body = rendered->body;
    message->headers =
        (fq_strmap_t){(uint32_t)templates->nheaders, (const char **)templates->header_names,
                      (const char **)templates->header_values};
    //  NULL goes as "": no alternative
    message->text_body = rendered->text;
    return rc;
}

//  Renders a message of another channel than mail into message and
//  rendered: an http request's URL (as to), headers and body, signed at
//  now_ms; another channel's body, for the recipient's key. Returns 0, or
//  an fq code with why in error.
static int s_render_channel(const s_templates_t *templates, const fq_message_row_t *row,
                            const json_t *fields, int64_t now_ms, fq_message_t *message,
                            s_rendered_t *rendered, char *error, size_t error_size)
{
    message->channel = templates->channel;
    if (!templates->http) {
        size_t len;
        int rc = fq_template_render_json(templates->body, fields, &rendered->body, &len, error,
                                         error_size);
        message->body = rendered->body;
        return rc;
    }
    fq_http_message_t http;
    int rc = fq_http_render(templates->http, fields, (uint64_t)row->id, now_ms / 1000, &http, error,
                            error_size);
    if (rc)
        return rc;
    rendered->body = http.body;
    rendered->block = http.block;
    message->method = fq_http_templates_method(templates->http);
    message->to = http.url;
    message->body = http.body;
    message->headers =
        (fq_strmap_t){(uint32_t)http.nheaders, http.header_names, http.header_values};
    return 0;
}

//  Renders row and hands it to a sender with credit; a message that cannot
//  be sent now is settled (requeued, or dead when it can never render).
//  now_ms: the wall clock (zclock_time) at this DISPATCH.
static void s_send_row(fq_ctx_t *ctx, s_self_t *self, fq_store_t *store, s_lane_t *lane,
                       const fq_message_row_t *row, int64_t now_ms)
{
    char error[S_ERROR_MAX] = "";
    int rc = 0;
    uint64_t id = (uint64_t)row->id, request = (uint64_t)row->request_id,
             tenant = (uint64_t)row->tenant_id;
    s_templates_t *templates = s_templates(self, store, row->request_id, &rc, error, sizeof error);
    if (!templates && (rc == FQ_EDB || rc == FQ_ENOMEM)) {
        if (rc == FQ_EDB)
            fq_db_failed(self->db, rc);
        s_hold(ctx, self, lane, id, request, tenant);
        return;
    }
    if (templates &&
        !streq(templates->channel ? templates->channel : FQ_CHANNEL_EMAIL, lane->channel)) {
        //  Picked in another channel's lane: never sent through this one
        fq_log(FQ_LOG_ERROR, "dispatcher: message %llu of channel \"%s\" came in lane \"%s\"",
               (unsigned long long)id, templates->channel ? templates->channel : FQ_CHANNEL_EMAIL,
               lane->channel);
        s_settle_add(&lane->done, id, request, tenant, 1);
        return;
    }
    s_rendered_t rendered = {0};
    fq_message_t message = {.id = id,
                            .request = request,
                            .attempt = (uint32_t)row->try_count + 1,
                            .to = row->recipient};
    json_t *fields = templates ? json_loads(row->fields, 0, NULL) : NULL;
    if (templates && !fields)
        snprintf(error, sizeof error, "could not read the recipient's fields");
    if (fields) {
        message.tenant = templates->tenant;
        message.from = templates->from;
        message.body_is_html = templates->body_is_html;
        //  Mail's block is its List-Unsubscribe value: what the batch (or
        //  s_rendered_free) frees with the message
        if (!templates->channel && templates->unsubscribe) {
            char *list = NULL;
            rc = s_unsubscribe_link(self->config, row, fields, &list, error, sizeof error);
            rendered.block = list;
            message.list_unsubscribe = list;
        }
        if (rc == 0)
            rc = templates->channel
                     ? s_render_channel(templates, row, fields, now_ms, &message, &rendered, error,
                                        sizeof error)
                     : s_render_mail(templates, fields, &message, &rendered, error, sizeof error);
    }
    json_decref(fields);
    bool rendered_ok = fields && rc == 0;
    int channel = -1;
    s_sender_t *sender = rendered_ok ? s_choose(self, lane->channel, id, &channel) : NULL;
    if (!rendered_ok) {
        //  Cannot be rendered, now or ever: dead, with the reason
        self->render_failed++;
        fq_metrics_batch_unsendable(self->metrics, row->tenant_id);
        fq_store_nack_t nack = {.id = id, .permanent = true, .error = error};
        s_store_nack(ctx, self, &nack);
        s_settle_add(&lane->done, id, request, tenant, 1);
    } else if (!sender)
        //  Its sender left meanwhile, and its credit was withdrawn whole,
        //  this pick's with it: the pick gives its credit back
        s_settle_add(&lane->requeue, id, request, tenant, 1);
    else if (sender->batches) {
        if (s_batch_add(ctx, self, sender, channel, lane, &message, row, templates, now_ms,
                        rendered.block) == 0)
            rendered = (s_rendered_t){0}; //  The batch has them now
    } else {
        s_flight_t *flight = malloc(sizeof *flight);
        if (!flight || fq_tell(ctx, sender->address, &fq_message_desc, &message) != 0) {
            //  Not sent (its peer is going, most likely): the sender keeps
            //  its credit and the pick gives its own back
            free(flight);
            s_settle_add(&lane->requeue, id, request, tenant, 1);
        } else {
            s_take_off(self, flight, sender, channel, lane, &message, row, templates);
            //  The latency counts to a message's first attempt only
            fq_metrics_batch_dispatched(self->metrics, row->tenant_id, row->request_id,
                                        sender->metrics_id,
                                        row->try_count == 0 ? s_latency_ms(templates, now_ms) : -1);
        }
    }
    s_rendered_free(&rendered);
}

//  Picks from the scheduler: load their rows in one query, render, send.
//  Each pick holds one credit the scheduler counted out; every way a pick
//  ends without reaching a sender gives it back (or holds it, while the
//  database fails), else the credit would be lost for good.
static void s_dispatch(fq_ctx_t *ctx, s_self_t *self, const fq_dispatch_t *dispatch)
{
    uint32_t n = dispatch->messages.count;
    s_lane_t *lane = s_lane(self, dispatch->channel);
    if (dispatch->requests.count != n || dispatch->tenants.count != n || n > FQ_STORE_LOAD_MAX ||
        !lane) {
        s_malformed(self);
        return;
    }
    const uint64_t *messages = dispatch->messages.items, *requests = dispatch->requests.items,
                   *tenants = dispatch->tenants.items;
    int64_t *ids = malloc((n ? n : 1) * sizeof *ids);
    zhashx_t *batch = zhashx_new(); //  id -> its index + 1, until its row is sent
    //  Each pick's row to send, by its place in the DISPATCH (id 0: none):
    //  the one that came with it, else the one loaded
    fq_message_row_t *in_order = calloc(n ? n : 1, sizeof *in_order);
    if (!ids || !batch || !in_order) {
        for (uint32_t i = 0; i < n; i++)
            s_settle_add(&lane->requeue, messages[i], requests[i], tenants[i], 1);
        free(ids);
        free(in_order);
        zhashx_destroy(&batch);
        s_flush_settles(ctx, self);
        return;
    }
    fq_intkeys_use(batch);
    size_t nwanted = 0;
    for (uint32_t i = 0; i < n; i++) {
        //  Already in flight (its request was paged again), or twice in this
        //  batch (a retry claimed again): sent once is enough
        if (messages[i] == 0 || fq_intkey_lookup(self->inflight, messages[i]) ||
            fq_intkey_lookup(batch, messages[i]))
            s_settle_add(&lane->done, messages[i], requests[i], tenants[i], 1);
        else {
            fq_intkey_insert(batch, messages[i], (void *)(uintptr_t)(i + 1));
            nwanted = s_want_templates(self, self->wanted, nwanted, (int64_t)requests[i]);
        }
    }
    //  A row that came is rendered only while fresh: one that waited here
    //  behind a slow load is loaded again, its status read anew
    int64_t now_us = zclock_usecs();
    uint64_t given = 0;
    for (uint32_t i = 0; i < dispatch->rows.count; i++) {
        const fq_paged_row_t *paged = &dispatch->rows.items[i];
        uintptr_t index = (uintptr_t)fq_intkey_lookup(batch, paged->id);
        if (!index || in_order[index - 1].id || now_us - paged->paged_us > FQ_ROW_FRESH_US)
            continue;
        given++;
        in_order[index - 1] = (fq_message_row_t){.id = (int64_t)paged->id,
                                                 .request_id = (int64_t)requests[index - 1],
                                                 .tenant_id = (int64_t)tenants[index - 1],
                                                 .recipient = paged->recipient,
                                                 .fields = paged->fields,
                                                 .try_count = (int)paged->try_count,
                                                 .named_destination = paged->named_destination,
                                                 .destination = paged->destination};
    }
    //  The others are loaded now
    uint32_t nids = 0;
    for (uint32_t i = 0; i < n; i++)
        if ((uintptr_t)fq_intkey_lookup(batch, messages[i]) == i + 1 && !in_order[i].id)
            ids[nids++] = (int64_t)messages[i];
    fq_store_t *store = self->draining ? NULL : fq_db_store(self->db);
    fq_message_rows_t rows = {0};
    int64_t started = zclock_usecs();
    //  The templates of the requests not cached come with their messages,
    //  in the same round trip: messages of 100,000 requests of a few
    //  recipients each came one query per request, the dispatcher's main
    //  cost (fq_bench_pipeline --scale), and a new tenant's first message
    //  waited for a round trip of its own. One whose templates do not
    //  parse, or beyond FQ_STORE_TEMPLATES_MAX, is left to s_templates,
    //  which loads it alone and says why.
    fq_templates_ask_t ask = {.ids = self->wanted,
                              .count = nwanted,
                              .out = nwanted ? calloc(nwanted, sizeof *ask.out) : NULL};
    int loaded =
        store ? fq_store_load_with(store, ids, nids, ask.out ? &ask : NULL, &rows) : FQ_EDB;
    for (int i = 0; loaded >= 0 && i < ask.loaded; i++) {
        int rc;
        char error[S_ERROR_MAX];
        s_templates_take(self, &ask.out[i], &rc, error, sizeof error);
    }
    free(ask.out);
    if (loaded > 0)
        self->rows_loaded += (uint64_t)loaded;
    if (store && nids > 0)
        fq_metrics_batch_db(self->metrics, FQ_METRICS_DB_LOAD, nids, zclock_usecs() - started,
                            loaded >= 0);
    if (loaded < 0 && store)
        fq_db_failed(self->db, loaded);
    int64_t now_ms = zclock_time();
    for (int k = 0; k < loaded; k++) {
        uintptr_t index = (uintptr_t)fq_intkey_lookup(batch, rows.rows[k].id);
        if (index && !in_order[index - 1].id)
            in_order[index - 1] = rows.rows[k];
    }
    //  In the picks' order (the scheduler's fair order). A row that came is
    //  sent as a loaded one is, only while the database answers (it is not
    //  asked at all when every row came and every template is cached) and
    //  not during a drain; else every pick is held
    if (loaded >= 0)
        self->rows_given += given;
    for (uint32_t i = 0; loaded >= 0 && i < n; i++) {
        const fq_message_row_t *row = &in_order[i];
        if (!row->id)
            continue;
        fq_intkey_delete(batch, (uint64_t)row->id);
        //  Asked before each message: a leader frozen (SIGSTOP) or cut
        //  off mid-batch wakes to a lease that ran out, and a standby
        //  may have taken over since; what it sent before stays within
        //  its senders' credit
        if (fq_pipeline_may_dispatch(self->config))
            s_send_row(ctx, self, store, lane, row, now_ms);
        else
            s_hold(ctx, self, lane, (uint64_t)row->id, (uint64_t)row->request_id,
                   (uint64_t)row->tenant_id);
    }
    //  The batches borrow the rows' and the templates' strings: they go
    //  before either is freed
    for (s_sender_t *sender = zlistx_first(self->turns); sender; sender = zlistx_next(self->turns))
        s_batch_send(ctx, self, sender, lane);
    if (self->template_bytes > S_TEMPLATE_CACHE_BYTES) {
        zhashx_purge(self->templates);
        self->template_bytes = 0;
    }
    //  What is left was not sent: held while the database fails (or the
    //  dispatcher drains), else cancelled or sent meanwhile, nothing to send
    for (void *index = zhashx_first(batch); index; index = zhashx_next(batch)) {
        uint32_t i = (uint32_t)(uintptr_t)index - 1;
        if (loaded < 0)
            s_hold(ctx, self, lane, messages[i], requests[i], tenants[i]);
        else
            s_settle_add(&lane->done, messages[i], requests[i], tenants[i], 1);
    }
    zhashx_destroy(&batch);
    free(in_order);
    fq_message_rows_free(&rows);
    free(ids);
    s_flush_settles(ctx, self);
    s_flush_metrics(self);
}

//  The database retry timer: once it answers, the withheld credit is free
static void s_retry(fq_ctx_t *ctx, s_self_t *self)
{
    self->retry_armed = false;
    int64_t withheld = 0;
    for (size_t i = 0; i < self->nlanes; i++)
        withheld += self->lanes[i]->withheld;
    if (withheld == 0)
        return;
    if (!fq_db_store(self->db) || !fq_pipeline_may_dispatch(self->config)) {
        int delay = fq_db_retry_in_ms(self->db);
        fq_tick_t tick = {.what = FQ_TICK_RETRY};
        self->retry_armed = fq_timer_once(ctx, delay > S_HOLD_MIN_MS ? delay : S_HOLD_MIN_MS,
                                          &fq_tick_desc, &tick) > 0;
        return;
    }
    for (size_t i = 0; i < self->nlanes; i++) {
        s_lane_t *lane = self->lanes[i];
        if (lane->withheld == 0)
            continue;
        fq_credit_changed_t changed = {.delta = lane->withheld, .channel = lane->channel};
        lane->withheld = 0;
        fq_tell(ctx, FQ_PATH_SCHEDULER, &fq_credit_changed_desc, &changed);
    }
}

//  ---------------------------------------------------------------------
//  Lifecycle

static void s_flight_free(void **item)
{
    free(*item);
    *item = NULL;
}

static void s_destroy(s_self_t *self)
{
    if (self->has_bounces)
        regfree(&self->bounces);
    fq_metrics_batch_destroy(&self->metrics);
    //  After the batch: its records borrowed the routes' names until flushed
    zhashx_destroy(&self->routes);
    free(self->acks);
    zhashx_destroy(&self->inflight);
    zlistx_destroy(&self->turns);
    zhashx_destroy(&self->senders);
    zhashx_destroy(&self->templates);
    fq_db_destroy(&self->db);
    for (size_t l = 0; l < self->nlanes; l++)
        s_lane_free(&self->lanes[l]);
    free(self->lanes);
    free(self);
}

static int s_start(fq_ctx_t *ctx, void *args, void **state_p)
{
    (void)ctx;
    s_self_t *self = calloc(1, sizeof *self);
    if (!self)
        return FQ_ENOMEM;
    self->config = args;
    fq_store_window_init(&self->store_window, (uint64_t)self->config->ack_batch);
    self->db = fq_pipeline_db(self->config, "dispatcher");
    self->senders = zhashx_new();
    self->turns = zlistx_new();
    self->inflight = zhashx_new();
    self->templates = zhashx_new();
    self->metrics = fq_metrics_batch_new(self->config->metrics);
    if (self->metrics)
        self->routes = zhashx_new();
    const char *bounces = self->config->retry.bounce_pattern;
    self->has_bounces =
        bounces && *bounces && regcomp(&self->bounces, bounces, REG_EXTENDED | REG_NOSUB) == 0;
    if (!self->db || !self->senders || !self->turns || !self->inflight || !self->templates ||
        (self->config->metrics && (!self->metrics || !self->routes))) {
        s_destroy(self);
        return FQ_ENOMEM;
    }
    if (self->routes)
        zhashx_set_destructor(self->routes, s_flight_free);
    zhashx_set_destructor(self->senders, s_sender_free);
    fq_intkeys_use(self->inflight);
    zhashx_set_destructor(self->inflight, s_flight_free);
    fq_intkeys_use(self->templates);
    zhashx_set_destructor(self->templates, s_templates_free);
    *state_p = self;
    return 0;
}

static void s_reply_stats(fq_ctx_t *ctx, s_self_t *self, const fq_msg_t *msg)
{
    const char *const keys[] = {
        "senders",         "inflight",     "sent",       "acked",         "nacked",
        "deferred",        "unknown_peer", "malformed",  "render_failed", "stray",
        "store_unwritten", "store_waits",  "rows_given", "rows_loaded"};
    const uint64_t values[] = {zhashx_size(self->senders),
                               zhashx_size(self->inflight),
                               self->sent,
                               self->acked,
                               self->nacked,
                               self->deferred,
                               self->unknown_peer,
                               self->malformed,
                               self->render_failed,
                               self->stray,
                               fq_store_window_unwritten(&self->store_window, self->acks_held),
                               self->store_waits,
                               self->rows_given,
                               self->rows_loaded};
    fq_stats_reply(ctx, msg, keys, values, sizeof keys / sizeof keys[0]);
}

static int s_receive(fq_ctx_t *ctx, void *state, const fq_msg_t *msg)
{
    s_self_t *self = state;
    switch (msg->type) {
    case FQ_MSG_DISPATCH: {
        fq_dispatch_t dispatch;
        if (fq_msg_decode(msg, &fq_dispatch_desc, &dispatch) == 0)
            s_dispatch(ctx, self, &dispatch);
        else
            s_malformed(self);
        break;
    }
    case FQ_MSG_ACK:
        s_ack(ctx, self, msg);
        break;
    case FQ_MSG_ACKS:
        s_acks(ctx, self, msg);
        break;
    case FQ_MSG_NACK:
        s_nack(ctx, self, msg);
        break;
    case FQ_MSG_CREDIT:
        s_credit(ctx, self, msg);
        break;
    case FQ_MSG_HELLO:
        s_hello(ctx, self, msg);
        break;
    case FQ_MSG_BYE: {
        s_sender_t *sender = s_known_sender(ctx, self, msg);
        if (sender)
            s_sender_bye(ctx, self, sender);
        break;
    }
    case FQ_MSG_TERMINATED: {
        fq_terminated_t terminated;
        s_sender_t *sender = fq_msg_decode(msg, &fq_terminated_desc, &terminated) == 0
                                 ? zhashx_lookup(self->senders, terminated.path)
                                 : NULL;
        if (sender)
            s_sender_gone(ctx, self, sender, *terminated.reason ? terminated.reason : "stopped");
        break;
    }
    case FQ_MSG_TICK: {
        fq_tick_t tick = {0}; //  One that does not decode: the database retry's
        if (fq_msg_decode(msg, &fq_tick_desc, &tick) == 0 && tick.what == FQ_TICK_PACE)
            s_pace_all(ctx, self);
        else if (tick.what == FQ_TICK_STORE) {
            s_store_ask(ctx, self);
            s_flush_metrics(self); //  The wait's time so far
        } else
            s_retry(ctx, self);
        break;
    }
    case FQ_MSG_STORE_WRITTEN: {
        fq_store_written_t written;
        if (fq_msg_decode(msg, &fq_store_written_desc, &written) == 0) {
            s_store_written(ctx, self, written.through);
            s_flush_metrics(self);
        }
        break;
    }
    case FQ_MSG_DRAIN: {
        //  From here on nothing new goes out; answers still come in
        if (!self->draining)
            fq_log(FQ_LOG_INFO, "dispatcher: draining, %zu messages in flight",
                   zhashx_size(self->inflight));
        self->draining = true;
        s_flush_answers(ctx, self);
        fq_drained_t drained = {.left = (uint32_t)zhashx_size(self->inflight)};
        fq_reply(ctx, msg, &fq_drained_desc, &drained);
        break;
    }
    case FQ_MSG_STATS_QUERY:
        s_reply_stats(ctx, self, msg);
        break;
    default:
        //  A type the schema has but this actor does not take
        s_malformed(self);
        break;
    }
    return 0;
}

//  The dispatcher stops: what is in flight is forgotten (sent again after
//  the restart) and the senders leave the metrics with it.
static void s_metrics_release(s_self_t *self)
{
    for (s_flight_t *flight = zhashx_first(self->inflight); flight && self->metrics;
         flight = zhashx_next(self->inflight))
        fq_metrics_batch_settled(self->metrics, flight->tenant_id, flight->request_id,
                                 flight->sender->metrics_id, FQ_METRICS_RELEASED);
    fq_metrics_batch_flush(self->metrics);
    for (s_sender_t *sender = zhashx_first(self->senders); sender;
         sender = zhashx_next(self->senders))
        fq_metrics_sender_leave(self->config->metrics, sender->metrics_id);
}

static void s_stop(fq_ctx_t *ctx, void *state)
{
    s_flush_answers(ctx, state); //  Acks gathered are not lost by a stop
    s_metrics_release(state);
    s_destroy(state);
}

static void s_idle(fq_ctx_t *ctx, void *state)
{
    s_flush_answers(ctx, state);
}

const fq_behaviour_t fq_dispatcher_behaviour = {
    .name = "dispatcher", .start = s_start, .receive = s_receive, .stop = s_stop, .idle = s_idle};
