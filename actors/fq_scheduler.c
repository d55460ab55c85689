/*  fq_scheduler.c — /user/scheduler: who sends next (docs/fairness.md).

    The scheduler owns the fairness core (fq_fairness.h) and feeds it from
    PostgreSQL: the open requests whose send_at has come (polled every
    poll_ms, and soon after a NOTIFY relayed by the intake), their ready
    message ids in small pages by id cursor (a small request's come with
    its SPLIT_DONE instead), and the failed messages whose
    retry is due (claimed with a lease). Memory stays O(active requests).

    The credit bound is what makes it fair: the scheduler releases exactly
    as many messages as the senders have free credit, and nothing else
    buffers messages. A tenant that arrives while a big campaign drains is
    therefore served at the next free slot of its turn, within one round
    of the active tenants, whatever the campaign's backlog.

    It also feeds the splitters, one chunk at a time (a pull, as with the
    senders): a request with recipients still stored in chunks waits in a
    split queue, an idle splitter gets its next chunk, and a request with
    chunks left goes to the back of the queue, so big requests take turns
    chunk by chunk and each one's first messages go out after one chunk.
    Small requests have a queue of their own, served first: a 3-recipient
    request must not wait behind a hundred campaigns' chunks of 10,000.

    Messages are released lane by lane (fq_lanes.h): a lane per channel
    and destination, each a fairness core. A channel's credit goes round
    its lanes in turns, and a lane releases no more than its destination's
    budget allows now (shaping/fq_shaper.h: a rate, a burst, a most in
    flight, lowered by throttling replies and suspended by failed
    connections). A lane without budget is skipped: its messages take no
    credit and cost no attempt, and a timer wakes the pump when its budget
    grows back. A request takes part in the lane of each destination it
    has messages in, learnt from each chunk split (SPLIT_DONE) and, for a
    request taken in after a restart, from fairq.request_destinations.

    A tenant with a send rate or a daily quota (0017) is held out of every
    lane's turns while its budget is spent (fq_tenant_budgets.h): its
    messages take no credit and cost no attempt, and the others share
    what it leaves.

    An operator's holds (0024, fq_store_holds.h) are read at every full
    poll (each change NOTIFYs one) and before the first release of a
    scheduler that starts leading: a held tenant is held out of every
    lane's turns as a spent budget holds it (and let in only when both
    allow), a held destination's lanes get no turn of their channel's
    credit, and a hold of all releases nothing. Held work stays pending,
    and its due retries are not claimed (fq_store_claim_due_retries). */
#include "fq_db.h"
#include "fq_intkeys.h"
#include "fq_lanes.h"
#include "fq_log.h"
#include "fq_pipeline.h"
#include "fq_row_cache.h"
#include "fq_store_holds.h"
#include "fq_store_shaping.h"
#include "fq_tenant_budgets.h"
#include <stdlib.h>
#include <string.h>

//  Most open requests held at once; beyond it the oldest send_at first
//  (the next ones come in as these finish). Well above the 10,000 active
//  requests fairqd is sized for.
#define S_OPEN_MAX 100000

//  Most messages in one DISPATCH: a full credit window of big sender pools
//  goes out in a few messages rather than one per message.
#define S_DISPATCH_BATCH 256

//  At most this many bytes of paged rows are kept (actors/fq_row_cache.h),
//  each for FQ_ROW_FRESH_US at most. Under load a row is picked
//  milliseconds after its page; half a second covers a prefetch of a
//  hundred backlogged tenants' requests (256 rows each at a thousandth of
//  the rate each) and bounds how late a message cancelled on its own may
//  still go. 16 MB is some 80,000 rows of mail.
#define S_ROW_MAX_BYTES (16 * 1024 * 1024)

//  Due retries claimed per query, and how long a claim lasts. A claimed
//  retry waits in memory for its tenant's turn; the lease must outlast that
//  wait, else it would be claimed (and sent) twice. After a crash the
//  claims come back when the lease ends, or at once when a new leader
//  starts (a claim records its leader's epoch), or by an operator's
//  release_claims.
#define S_RETRY_BATCH   500
#define S_RETRY_LEASE_S 300

//  A NOTIFY is acted upon at once, but the next poll waits at least
//  S_SOON_MS, and twice as long as the last poll took: a burst of submits
//  makes a few polls, not one each, and with 10,000 open requests (a poll
//  of a few tens of ms) polling never takes more than a third of the time.
//  The wait is also the lag of a small request submitted right after
//  another, so it stays short.
#define S_SOON_MS 5

//  The full poll reads every open request again, for what changes without
//  a notification (a tenant's weight, a request that finished) and to
//  recover from any notification lost. With 100,000 open requests that is
//  hundreds of ms of the database and of this thread, so the periodic one
//  runs every poll_ms only while it is cheap, and otherwise takes one part
//  in S_FULL_POLL_SHARE of the time. (A notification naming no request, a
//  burst of more than the intake names, brings one sooner: see S_SOON_MS.)
//  The polls between are light: the requests scheduled for later whose
//  send_at came since the last poll that read (S_LIGHT_MARGIN_MS more, so
//  a clock step or a slow poll loses none), the due retries and the splits
//  to feed. Every submit, cancel, pause and resume has its NOTIFY, looked
//  at alone at once (s_look_at_one).
#define S_FULL_POLL_SHARE 10
#define S_LIGHT_MARGIN_MS 2000

//  Credit comes back with each burst of acks (SETTLED). Releasing it at
//  once would make a DISPATCH per SETTLED; instead it is released when the
//  mailbox is empty (the behaviour's idle), so a burst of settlements makes
//  one DISPATCH and the dispatcher loads its rows with one query.
//  A request paged to its end is let go by the fairness core while its
//  last messages are in flight. If it is still open this long after, some
//  of its messages are pending behind the cursor without being in flight
//  (an outcome that could not be recorded, say): it is paged again from
//  scan_from, so nothing stays unsent until a restart. The dispatcher
//  skips whatever of it is still in flight.
#define S_REPAGE_AFTER_MS 30000

//  Requests counted as submitted (fq_metrics) are remembered so that one
//  paused and resumed, or reprioritised, is not counted again. Past this
//  many, those no longer open are forgotten (twice the open requests held:
//  the set is pruned once per that many new requests); one paused for
//  that long counts again when it resumes.
#define S_COUNTED_MAX (2 * S_OPEN_MAX)

typedef struct {
    char channel[FQ_STORE_CHANNEL_SIZE];
    fq_lane_t **lanes; //  The lane of each destination it has messages in
    size_t nlanes, lanes_capacity;
    int64_t tenant_id;
    int weight, max_inflight; //  Its tenant's, as last read
    int64_t scan_from;        //  As last read: where a lane it joins pages from
    int priority;
    int64_t released_at; //  zclock_mono() when first seen let go; 0 = held
    uint64_t epoch;      //  The last poll that saw the request open
    int splitter;        //  The splitter on it (index), or -1
    bool queued;         //  Waiting in a split queue
    bool small;          //  Goes to the express split queue
    bool split_done;     //  Every message row exists
} s_known_t;

//  A page asked for, and the lane it fills.
typedef struct {
    fq_page_ask_t page;
    fq_lane_t *lane;
} s_ask_t;

typedef struct {
    fq_pipeline_config_t *config;
    fq_db_t *db;
    fq_lanes_t *lanes; //  A fairness core and a credit per channel
    zhashx_t *known;   //  request id -> s_known_t*, owned
    uint64_t epoch;
    s_ask_t *stalled; //  Pages not read (the database was away): asked again
    size_t nstalled, stalled_capacity;
    fq_page_ask_t *asks;   //  One query's pages: FQ_STORE_PAGE_ASKS_MAX
    fq_lane_t **ask_lanes; //  Whose each is
    int64_t *page;         //  Their ids: FQ_STORE_PAGE_IDS_MAX
    fq_row_cache_t *rows;  //  The rows paged, until their picks go (or they age)
    int *page_counts;      //  How many of them each ask got
    bool lane_failed_said; //  A lane that could not be made was logged
    fq_due_request_t *due;
    fq_due_message_t *retries;
    bool soon_armed;
    bool claims_released;    //  An earlier leader's claims (fq_store_release_stale_claims)
    int64_t last_poll;       //  zclock_mono() of the last poll, full or light
    int64_t poll_took_ms;    //  How long the last full poll took
    int64_t last_full;       //  zclock_mono() of the last full poll
    int64_t light_window_ms; //  The light poll's reach back in time
    int64_t last_read;       //  zclock_mono() at the start of the last poll that read
    uint64_t full_polls, light_polls;
    uint64_t page_reads;                 //  Queries of pages of ids (s_pages)
    int64_t splitting[FQ_SPLITTERS_MAX]; //  Request each splitter is on, 0 = idle
    zlistx_t *express, *queue;           //  Request ids waiting for a splitter
    bool pump_wanted;                    //  Credit came back: pump once the mailbox is empty
    zhashx_t *flying;                    //  message id -> its lane, while in flight
    int64_t shape_at;                    //  zclock_usecs() the shape timer is set for, 0: none
    fq_destination_budget_t *budgets;    //  The destinations' as read: FQ_STORE_DESTINATIONS_MAX
    fq_tenant_budgets_t *sends;          //  Tenants' send rates and daily quotas
    int64_t *fresh;                      //  Requests one poll found new: S_OPEN_MAX
    fq_due_messages_t due_messages;      //  Those of a request a NOTIFY named
    fq_metrics_batch_t *metrics;         //  NULL without metrics
    zhashx_t *counted;                   //  Request ids counted as submitted (with metrics)
    uint64_t dispatched, requeued, retries_claimed;
    fq_hold_list_t holds; //  The operators' holds as last read (0024)
    bool holds_read;      //  At least once: nothing is released before
    bool held_all;        //  A hold of all stands
    bool leading;         //  At the last pump: one that starts reads the holds first
} s_self_t;

static void s_known_free(void **item)
{
    s_known_t *known = *item;
    if (known)
        free(known->lanes);
    free(known);
    *item = NULL;
}

//  Has the request take part in the lane of destination (which the
//  splitter wrote messages of it to), from its cursor. Returns the lane,
//  or NULL when memory ran out (it is paged there after the next poll
//  that reads it anew).
static fq_lane_t *s_join(s_self_t *self, int64_t request_id, s_known_t *known,
                         const char *destination)
{
    fq_lane_t *lane = fq_lanes_get(self->lanes, known->channel, destination);
    if (!lane)
        return NULL;
    for (size_t i = 0; i < known->nlanes; i++)
        if (known->lanes[i] == lane)
            return lane;
    if (known->nlanes == known->lanes_capacity) {
        size_t capacity = known->lanes_capacity ? 2 * known->lanes_capacity : 2;
        fq_lane_t **grown = realloc(known->lanes, capacity * sizeof *grown);
        if (!grown)
            return NULL;
        known->lanes = grown;
        known->lanes_capacity = capacity;
    }
    fq_fairness_tenant_set(lane->fairness, known->tenant_id, known->weight, known->max_inflight);
    fq_tenant_budgets_joined(self->sends, known->tenant_id, lane->fairness);
    if (fq_fairness_request_add(lane->fairness, request_id, known->tenant_id, known->priority,
                                known->scan_from, known->split_done) == FQ_ENOMEM)
        return NULL;
    known->lanes[known->nlanes++] = lane;
    fq_lanes_hold(lane);
    return lane;
}

//  Takes the request out of every lane it takes part in.
static void s_leave_all(s_known_t *known, int64_t request_id)
{
    for (size_t i = 0; i < known->nlanes; i++) {
        fq_fairness_request_remove(known->lanes[i]->fairness, request_id);
        fq_lanes_release(known->lanes[i]);
    }
    known->nlanes = 0;
}

//  ---------------------------------------------------------------------
//  Paging

//  Reads the pages of nasks requests in one query and hands each to the
//  fairness core. Returns 0, or -1 when the database is away (the asks are
//  kept and asked again later).
static int s_pages(s_self_t *self, const fq_page_ask_t *asks, fq_lane_t *const *lanes, int nasks)
{
    fq_store_t *store = fq_db_store(self->db);
    //  The rows too while there is room for them (they are read anyway)
    bool with_rows = fq_row_cache_has_room(self->rows);
    fq_message_rows_t rows = {0};
    int n = !store ? FQ_EDB
            : with_rows
                ? fq_store_next_ready_rows(store, asks, nasks, &rows, self->page_counts)
                : fq_store_next_ready_many(store, asks, nasks, self->page, self->page_counts);
    self->page_reads++;
    if (n < 0) {
        if (store)
            fq_db_failed(self->db, n);
        if (self->nstalled + (size_t)nasks > self->stalled_capacity) {
            size_t capacity = self->stalled_capacity ? self->stalled_capacity : 16;
            while (capacity < self->nstalled + (size_t)nasks)
                capacity *= 2;
            s_ask_t *grown = realloc(self->stalled, capacity * sizeof *grown);
            if (!grown)
                return -1; //  Lost only in memory: the requests page again after a restart
            self->stalled = grown;
            self->stalled_capacity = capacity;
        }
        for (int i = 0; i < nasks; i++)
            self->stalled[self->nstalled++] = (s_ask_t){asks[i], lanes[i]};
        return -1;
    }
    if (with_rows) {
        int64_t now_us = zclock_usecs();
        for (int i = 0; i < n; i++) {
            self->page[i] = rows.rows[i].id;
            //  One in flight (its request paged again before its outcome
            //  was written) is loaded, its status read, if picked again
            if (!fq_intkey_lookup(self->flying, (uint64_t)rows.rows[i].id))
                fq_row_cache_put(self->rows, &rows.rows[i], now_us);
        }
        fq_message_rows_free(&rows);
    }
    const int64_t *ids = self->page;
    for (int i = 0; i < nasks; i++) {
        fq_fairness_request_fill(lanes[i]->fairness, asks[i].request_id, ids, self->page_counts[i]);
        ids += self->page_counts[i];
    }
    return 0;
}

//  Serves every page the fairness core asks for, many requests to a query
//  (the pages asked for again after the database was away first).
//  Returns 0, or -1 when the database is away.
static int s_refill(s_self_t *self)
{
    for (;;) {
        int nasks = 0, nids = 0;
        while (self->nstalled > 0 && nasks < FQ_STORE_PAGE_ASKS_MAX &&
               nids + self->stalled[self->nstalled - 1].page.limit <= FQ_STORE_PAGE_IDS_MAX) {
            s_ask_t ask = self->stalled[--self->nstalled];
            self->asks[nasks] = ask.page;
            self->ask_lanes[nasks++] = ask.lane;
            nids += ask.page.limit;
        }
        for (size_t l = 0; l < fq_lanes_count(self->lanes); l++) {
            fq_lane_t *lane = fq_lanes_at(self->lanes, l);
            while (nasks < FQ_STORE_PAGE_ASKS_MAX &&
                   nids + self->config->prefetch <= FQ_STORE_PAGE_IDS_MAX &&
                   fq_fairness_next_refill(lane->fairness, &self->asks[nasks].request_id,
                                           &self->asks[nasks].after_id, &self->asks[nasks].limit)) {
                //  The lane lives as long as its asks (no pruning while
                //  pages wait to be asked again)
                self->asks[nasks].destination = lane->destination;
                self->ask_lanes[nasks] = lane;
                nids += self->asks[nasks++].limit;
            }
        }
        if (nasks == 0)
            return 0;
        if (s_pages(self, self->asks, self->ask_lanes, nasks) != 0)
            return -1;
    }
}

//  ---------------------------------------------------------------------
//  Dispatching

//  Reads the operators' holds and applies them: tenants held in every
//  lane, destinations' lanes and all checked at each pump. Returns 0, or
//  -1 when the database could not be asked (the holds stay as they were).
static int s_read_holds(s_self_t *self, fq_store_t *store)
{
    fq_hold_list_t holds;
    int n = fq_store_hold_list(store, &holds);
    if (n < 0) {
        fq_db_failed(self->db, n);
        return -1;
    }
    int64_t *tenants = malloc((holds.count + 1) * sizeof *tenants);
    size_t ntenants = 0;
    bool all = false;
    for (size_t i = 0; tenants && i < holds.count; i++) {
        if (holds.rows[i].scope == FQ_HOLD_TENANT)
            tenants[ntenants++] = holds.rows[i].tenant_id;
        all |= holds.rows[i].scope == FQ_HOLD_ALL;
    }
    if (!tenants || fq_tenant_budgets_operator_holds(self->sends, tenants, ntenants) != 0) {
        //  Out of memory: the holds as they were, read again next poll
        free(tenants);
        fq_hold_list_free(&holds);
        return -1;
    }
    free(tenants);
    if (all != self->held_all)
        fq_log(FQ_LOG_INFO, all ? "scheduler: all sending is held by an operator"
                                : "scheduler: the hold of all sending was released");
    fq_hold_list_free(&self->holds);
    self->holds = holds;
    self->held_all = all;
    self->holds_read = true;
    return 0;
}

//  Whether the holds are known to this scheduler as it leads: read once
//  more by one that starts leading (a start, a takeover), so that nothing
//  a hold stops goes out in between.
static bool s_holds_known(s_self_t *self)
{
    if (self->holds_read && self->leading)
        return true;
    fq_store_t *store = fq_db_store(self->db);
    if (!store || s_read_holds(self, store) != 0)
        return false;
    self->leading = true;
    return true;
}

//  Releases up to most messages of lane, fairly, in one DISPATCH, each
//  taking one of its channel's credit and one of its destination's
//  budget. Returns how many, or -1 when the dispatcher is away.
static int s_release(fq_ctx_t *ctx, s_self_t *self, fq_lane_t *lane, int64_t most, int64_t now_us)
{
    uint64_t messages[S_DISPATCH_BATCH], requests[S_DISPATCH_BATCH], tenants[S_DISPATCH_BATCH];
    uint32_t n = 0;
    fq_pick_t pick;
    while (n < S_DISPATCH_BATCH && n < most && fq_fairness_next(lane->fairness, &pick)) {
        //  In flight already (its request paged again, a retry claimed
        //  again while it waited for its destination's budget): sent once
        //  is enough, and its lane stays the one it went out in
        if (fq_intkey_lookup(self->flying, (uint64_t)pick.message_id)) {
            fq_row_cache_drop(self->rows, pick.message_id);
            fq_fairness_done(lane->fairness, pick.tenant_id);
            continue;
        }
        //  Its tenant's send budget is spent: it waits in the lane, and
        //  the tenant is held out of the turns until the budget allows
        if (!fq_tenant_budgets_take(self->sends, pick.tenant_id, now_us)) {
            fq_tenant_budgets_joined(self->sends, pick.tenant_id, lane->fairness);
            fq_fairness_push(lane->fairness, pick.request_id, pick.tenant_id, pick.message_id);
            fq_fairness_done(lane->fairness, pick.tenant_id);
            continue;
        }
        //  Its SETTLED names the channel only: the lane is remembered here
        if (fq_intkey_insert(self->flying, (uint64_t)pick.message_id, lane) != 0) {
            fq_tenant_budgets_give_back(self->sends, pick.tenant_id, 1);
            fq_fairness_push(lane->fairness, pick.request_id, pick.tenant_id, pick.message_id);
            fq_fairness_done(lane->fairness, pick.tenant_id);
            break; //  Out of memory: it waits in the lane
        }
        messages[n] = (uint64_t)pick.message_id;
        requests[n] = (uint64_t)pick.request_id;
        tenants[n] = (uint64_t)pick.tenant_id;
        n++;
    }
    if (n == 0)
        return 0;
    //  The rows paged for them, fresh, go along: the dispatcher loads
    //  only the others
    fq_message_row_t *taken[S_DISPATCH_BATCH];
    fq_paged_row_t rows[S_DISPATCH_BATCH];
    uint32_t nrows = 0;
    //  Their age now: the pump's clock (now_us) is from before its pages
    int64_t taken_us = zclock_usecs(), paged_us;
    for (uint32_t i = 0; i < n; i++) {
        fq_message_row_t *row =
            fq_row_cache_take(self->rows, (int64_t)messages[i], taken_us, &paged_us);
        if (!row)
            continue;
        taken[nrows] = row;
        rows[nrows++] = (fq_paged_row_t){.id = messages[i],
                                         .recipient = row->recipient,
                                         .fields = row->fields,
                                         .try_count = (uint32_t)row->try_count,
                                         .named_destination = row->named_destination,
                                         .destination = row->destination,
                                         .paged_us = paged_us};
    }
    fq_dispatch_t dispatch = {.messages = {n, messages},
                              .requests = {n, requests},
                              .tenants = {n, tenants},
                              .channel = lane->channel->name,
                              .rows = {nrows, rows}};
    int told = fq_tell(ctx, FQ_PATH_DISPATCHER, &fq_dispatch_desc, &dispatch);
    for (uint32_t i = 0; i < nrows; i++)
        free(taken[i]);
    if (told != 0) {
        //  The dispatcher is away (restarting): the picks wait in memory
        for (uint32_t i = n; i-- > 0;) {
            fq_intkey_delete(self->flying, messages[i]);
            fq_tenant_budgets_give_back(self->sends, (int64_t)tenants[i], 1);
            fq_fairness_push(lane->fairness, (int64_t)requests[i], (int64_t)tenants[i],
                             (int64_t)messages[i]);
            fq_fairness_done(lane->fairness, (int64_t)tenants[i]);
        }
        return -1;
    }
    lane->channel->credit -= n;
    lane->budget->inflight += n;
    lane->budget->sent += n;
    fq_shaper_take(&lane->budget->shaper, n, now_us);
    lane->dispatched += n;
    self->dispatched += n;
    return (int)n;
}

//  Sets the shape timer to wake the pump in wait_us, unless it is set
//  for sooner already.
static void s_shape_later(fq_ctx_t *ctx, s_self_t *self, int64_t now_us, int64_t wait_us)
{
    int64_t at = now_us + wait_us;
    if (self->shape_at && self->shape_at <= at)
        return;
    int ms = (int)((wait_us + 999) / 1000);
    fq_tick_t tick = {.what = FQ_TICK_SHAPE};
    if (fq_timer_once(ctx, ms > 0 ? ms : 1, &fq_tick_desc, &tick) > 0)
        self->shape_at = at;
}

//  Whether lane takes turns of channel's credit: it is channel's, and no
//  operator holds its destination (its messages then wait, pending, and
//  take no credit, as a destination without budget's do).
static bool s_lane_turns(s_self_t *self, const fq_lane_t *lane, const fq_lane_channel_t *channel)
{
    if (lane->channel != channel)
        return false;
    for (size_t i = 0; i < self->holds.count; i++)
        if (self->holds.rows[i].scope == FQ_HOLD_DESTINATION &&
            strcmp(self->holds.rows[i].name, lane->destination) == 0)
            return false;
    return true;
}

//  Spends channel's free credit on its lanes in turns, each lane no more
//  than its destination's budget allows now; a lane that has messages
//  but no budget sets the shape timer for when it has.
static void s_pump_channel(fq_ctx_t *ctx, s_self_t *self, fq_lane_channel_t *channel,
                           int64_t now_us)
{
    size_t nlanes = fq_lanes_count(self->lanes), mine = 0;
    for (size_t l = 0; l < nlanes; l++)
        mine += s_lane_turns(self, fq_lanes_at(self->lanes, l), channel);
    int64_t wait_us = -1;
    bool progress = true;
    while (channel->credit > 0 && progress && mine > 0) {
        progress = false;
        //  One lane alone takes all; several share each round's credit
        int64_t quantum = channel->credit / (int64_t)mine;
        if (quantum < 1)
            quantum = 1;
        size_t first = channel->turn++ % nlanes;
        for (size_t k = 0; k < nlanes && channel->credit > 0; k++) {
            fq_lane_t *lane = fq_lanes_at(self->lanes, (first + k) % nlanes);
            if (!s_lane_turns(self, lane, channel))
                continue;
            fq_shaper_t *shaper = &lane->budget->shaper;
            int64_t allowance = fq_shaper_allowance(shaper, lane->budget->inflight, now_us);
            if (allowance <= 0) {
                fq_fairness_stats_t stats;
                fq_fairness_stats(lane->fairness, &stats);
                int64_t wait =
                    stats.prefetched || stats.requests ? fq_shaper_wait_us(shaper, now_us) : -1;
                if (wait >= 0 && (wait_us < 0 || wait < wait_us))
                    wait_us = wait;
                continue;
            }
            int64_t most = channel->credit < allowance ? channel->credit : allowance;
            int released = s_release(ctx, self, lane, most < quantum ? most : quantum, now_us);
            if (released < 0)
                return;
            progress |= released > 0;
        }
        //  Pages for what went out; the database being away ends the
        //  round, with what was prefetched gone out
        if (s_refill(self) != 0)
            break;
    }
    if (wait_us >= 0)
        s_shape_later(ctx, self, now_us, wait_us);
}

//  Releases as many messages as there is free credit and budget, fairly,
//  in every channel; nothing while this fairqd does not hold the
//  leader's lease (its next poll tries again).
static void s_pump(fq_ctx_t *ctx, s_self_t *self)
{
    if (!fq_pipeline_may_dispatch(self->config)) {
        self->leading = false;
        return;
    }
    if (!s_holds_known(self) || self->held_all)
        return;
    s_refill(self);
    int64_t now_us = zclock_usecs();
    //  Tenants whose send budget allows again take their turns again
    int64_t wait_us = fq_tenant_budgets_wake(self->sends, now_us);
    if (wait_us >= 0)
        s_shape_later(ctx, self, now_us, wait_us);
    for (size_t c = 0; c < fq_lanes_channel_count(self->lanes); c++)
        s_pump_channel(ctx, self, fq_lanes_channel_at(self->lanes, c), now_us);
}

//  ---------------------------------------------------------------------
//  Polling the open requests and the due retries

//  Requests of at most this many recipients are split before the others'
//  chunks: one chunk of theirs is quick, and waiting would be long.
#define S_SMALL_SPLIT 1000

//  Queues a request for its next chunk.
static void s_split_queue(s_self_t *self, int64_t request_id, s_known_t *known)
{
    if (known->queued || known->splitter >= 0)
        return;
    if (zlistx_add_end(known->small ? self->express : self->queue, (void *)(uintptr_t)request_id))
        known->queued = true;
}

//  Splitters busy now.
static int s_splitters_busy(s_self_t *self)
{
    int busy = 0;
    for (int i = 0; i < self->config->splitters; i++)
        busy += self->splitting[i] != 0;
    return busy;
}

//  Gives every idle splitter the next chunk: small requests first. A big
//  request's chunk (10,000 recipients, a COPY of a few hundred ms under
//  load) never takes the last idle splitter when there are several: one
//  stays free for a small request, which a newcomer's is, so that it is
//  split the moment it comes rather than after whatever chunk is being
//  copied. Splitting a campaign runs well ahead of its dispatch even on
//  one splitter (a COPY takes rows faster than senders ack them).
static void s_split_feed(fq_ctx_t *ctx, s_self_t *self)
{
    for (int i = 0; i < self->config->splitters; i++) {
        while (!self->splitting[i]) {
            bool small = zlistx_size(self->express) > 0;
            if (!small && self->config->splitters > 1 &&
                s_splitters_busy(self) >= self->config->splitters - 1)
                return;
            zlistx_t *from = small ? self->express : self->queue;
            void *item = zlistx_first(from);
            if (!item)
                return;
            uint64_t request_id = (uint64_t)(uintptr_t)item;
            zlistx_delete(from, zlistx_cursor(from));
            s_known_t *known = fq_intkey_lookup(self->known, request_id);
            if (!known || !known->queued)
                continue; //  Gone meanwhile
            known->queued = false;
            char path[64];
            snprintf(path, sizeof path, FQ_PATH_SPLITTER_PREFIX "%d", i + 1);
            fq_split_t split = {.request = request_id};
            if (fq_tell(ctx, path, &fq_split_desc, &split) != 0) {
                //  The splitter is away (not started yet, after a takeover,
                //  or restarting): the request stays first in line, for the
                //  next feed
                known->queued = true;
                zlistx_add_start(from, item);
                return;
            }
            known->splitter = i;
            self->splitting[i] = (int64_t)request_id;
        }
    }
}

//  A splitter finished a chunk of request_id (or failed on it): it is idle.
static void s_split_over(s_self_t *self, int64_t request_id)
{
    for (int i = 0; i < self->config->splitters; i++)
        if (self->splitting[i] == request_id)
            self->splitting[i] = 0;
    s_known_t *known = fq_intkey_lookup(self->known, request_id);
    if (known)
        known->splitter = -1;
}

//  Counts a request taken up as submitted, once in this process's life;
//  one split at its submit (fairq.split_at_submit, 0028), which no
//  splitter counts, is counted as split too.
static void s_count_submitted(s_self_t *self, const fq_due_request_t *due)
{
    if (!self->metrics || fq_intkey_lookup(self->counted, due->id))
        return;
    if (zhashx_size(self->counted) >= S_COUNTED_MAX) {
        zlistx_t *gone = zlistx_new();
        for (void *item = zhashx_first(self->counted); item && gone;
             item = zhashx_next(self->counted)) {
            uint64_t id = fq_intkey_cursor(self->counted);
            if (!fq_intkey_lookup(self->known, id))
                zlistx_add_end(gone, (void *)(uintptr_t)id);
        }
        for (void *item = gone ? zlistx_first(gone) : NULL; item; item = zlistx_next(gone))
            fq_intkey_delete(self->counted, (uint64_t)(uintptr_t)item);
        zlistx_destroy(&gone);
    }
    //  The value only has to be non-NULL
    fq_intkey_insert(self->counted, due->id, (void *)(uintptr_t)1);
    fq_metrics_batch_submitted(self->metrics, due->tenant_id, due->total);
    if (due->split_at_submit)
        fq_metrics_batch_split(self->metrics, due->tenant_id, due->split, 0);
}

//  Squares what the scheduler knows of a request's splitting with what a
//  poll read (due->split_done: no chunk is left), while no splitter is on
//  it and it waits in no queue, so that no SPLIT_DONE can be on its way.
//  Chunks left of a request known as split are split again: the database
//  lost the split (a standby promoted before the split's commit reached
//  it), and its recipients would otherwise never become messages. A
//  request split in the database but not known as split lost its last
//  SPLIT_DONE (a tell that failed, a commit whose answer never came).
//  Either way the request leaves its lanes, whose cores may hold ids of
//  rows gone or have let it go as paged to its end: the next SPLIT_DONE,
//  or the poll's reading of its destinations (s_join_stored), has it
//  join them again from its cursor.
static void s_split_settle(s_self_t *self, const fq_due_request_t *due, s_known_t *known)
{
    if (known->queued || known->splitter >= 0)
        return;
    if (!due->split_done) {
        if (known->split_done) {
            fq_log(FQ_LOG_WARNING,
                   "scheduler: request %lld was known as split, but the database has "
                   "recipients of it left to split: splitting them again",
                   (long long)due->id);
            s_leave_all(known, due->id);
        }
        known->split_done = false;
        s_split_queue(self, due->id, known);
    } else if (!known->split_done) {
        known->split_done = true;
        s_leave_all(known, due->id);
    }
}

//  Takes in one open request seen by a poll. The lanes of the destinations
//  it has messages in, if any, are read by the caller (s_join_stored);
//  later chunks name theirs in SPLIT_DONE.
static void s_open(s_self_t *self, const fq_due_request_t *due)
{
    s_known_t *known = fq_intkey_lookup(self->known, due->id);
    if (known && known->priority != due->priority) {
        //  Its priority changed: it takes its new place in its tenant's
        //  order (paged again from scan_from; the dispatcher skips the
        //  messages already in flight)
        s_leave_all(known, due->id);
        fq_intkey_delete(self->known, due->id);
        known = NULL;
    }
    bool fresh = !known;
    if (!known) {
        known = calloc(1, sizeof *known);
        if (!known)
            return; //  Out of memory: it waits in the database for a later poll
        *known = (s_known_t){.tenant_id = due->tenant_id,
                             .priority = due->priority,
                             .splitter = -1,
                             .small = due->total <= S_SMALL_SPLIT,
                             .split_done = due->split_done};
        snprintf(known->channel, sizeof known->channel, "%s", due->channel);
        fq_intkey_insert(self->known, due->id, known);
        s_count_submitted(self, due);
        fq_log(FQ_LOG_INFO, "scheduler: request %lld of tenant \"%s\" is open (%s, priority %d%s)",
               (long long)due->id, due->tenant, known->channel, due->priority,
               due->split_done ? "" : ", splitting");
    }
    known->weight = due->weight;
    known->max_inflight = due->max_inflight;
    if (fq_tenant_budgets_configure(self->sends, due->tenant_id, due->send_rate_count,
                                    due->send_rate_period_s, due->daily_quota, zclock_usecs()))
        fq_metrics_tenant_budget(self->config->metrics, due->tenant_id, false, 0);
    known->scan_from = due->scan_from;
    bool held = false;
    for (size_t i = 0; i < known->nlanes; i++) {
        fq_fairness_t *fairness = known->lanes[i]->fairness;
        fq_fairness_tenant_set(fairness, due->tenant_id, due->weight, due->max_inflight);
        held |= fq_fairness_request_held(fairness, due->id);
    }
    if (!fresh && !held && known->nlanes > 0) {
        int64_t now = zclock_mono();
        if (!known->released_at)
            known->released_at = now;
        else if (now - known->released_at >= S_REPAGE_AFTER_MS) {
            known->released_at = 0;
            for (size_t i = 0; i < known->nlanes; i++)
                fq_fairness_request_add(known->lanes[i]->fairness, due->id, due->tenant_id,
                                        due->priority, due->scan_from, due->split_done);
        }
    }
    known->epoch = self->epoch;
    s_split_settle(self, due, known);
}

static void s_join_one(int64_t request_id, const char *destination, void *arg)
{
    s_self_t *self = arg;
    s_known_t *known = fq_intkey_lookup(self->known, (uint64_t)request_id);
    if (known && !s_join(self, request_id, known, destination) && !self->lane_failed_said) {
        fq_log(FQ_LOG_ERROR, "scheduler: no lane for channel \"%s\", destination \"%s\"",
               known->channel, destination);
        self->lane_failed_said = true;
    }
}

//  The requests ids (count of them), which have messages but take part in
//  no lane yet (new to the scheduler, or whose lanes were never heard of),
//  take part in the lanes of the destinations they have messages in. A
//  request none are recorded for has its messages in "default": split by
//  a splitter before 0016's fairq.request_destinations. Returns 0 or -1
//  when the database failed (they are read again at the next full poll).
static int s_join_stored(s_self_t *self, fq_store_t *store, const int64_t *ids, size_t count)
{
    int n = fq_store_request_destinations(store, ids, count, s_join_one, self);
    for (size_t i = 0; n >= 0 && i < count; i++) {
        s_known_t *known = fq_intkey_lookup(self->known, (uint64_t)ids[i]);
        if (known && known->nlanes == 0)
            s_join_one(ids[i], FQ_STORE_DESTINATION_DEFAULT, self);
    }
    if (n < 0) {
        fq_db_failed(self->db, n);
        //  Forgotten, so that the next poll finds them new again
        for (size_t i = 0; i < count; i++) {
            s_known_t *known = fq_intkey_lookup(self->known, (uint64_t)ids[i]);
            if (known) {
                s_leave_all(known, ids[i]);
                fq_intkey_delete(self->known, (uint64_t)ids[i]);
            }
        }
        return -1;
    }
    return 0;
}

//  A request no longer open (done, cancelled, paused, rescheduled to later)
//  leaves the rings; its prefetched ids are simply forgotten.
static void s_let_go(s_self_t *self, int64_t request_id)
{
    s_known_t *known = fq_intkey_lookup(self->known, (uint64_t)request_id);
    if (known)
        s_leave_all(known, request_id);
    fq_intkey_delete(self->known, (uint64_t)request_id);
}

static void s_poll_now(fq_ctx_t *ctx, s_self_t *self, bool full);

static void s_stats_add(fq_fairness_stats_t *sum, const fq_fairness_stats_t *add)
{
    sum->tenants += add->tenants;
    sum->requests += add->requests;
    sum->ready_tenants += add->ready_tenants;
    sum->prefetched += add->prefetched;
    sum->inflight += add->inflight;
}

//  The counts of channel's lanes added up, and the messages they released.
static void s_channel_stats(s_self_t *self, const fq_lane_channel_t *channel,
                            fq_fairness_stats_t *sum, uint64_t *dispatched)
{
    *sum = (fq_fairness_stats_t){0};
    *dispatched = 0;
    for (size_t l = 0; l < fq_lanes_count(self->lanes); l++) {
        fq_lane_t *lane = fq_lanes_at(self->lanes, l);
        if (lane->channel != channel)
            continue;
        fq_fairness_stats_t stats;
        fq_fairness_stats(lane->fairness, &stats);
        s_stats_add(sum, &stats);
        *dispatched += lane->dispatched;
    }
}

//  A tenant's send budget, for the metrics: held, and its count today.
static void s_report_budget(const fq_tenant_budget_view_t *view, void *metrics)
{
    fq_metrics_tenant_budget(metrics, view->tenant_id, view->held, view->sent_today);
}

//  Each channel's ready messages, free credit and messages in flight, and
//  each destination's budget and load, and each limited tenant's send
//  budget, for the metrics: a channel whose messages wait for a sender, a
//  destination that is throttled or a tenant held by its quota shows there.
static void s_report_lanes(s_self_t *self)
{
    if (!self->config->metrics)
        return;
    for (size_t c = 0; c < fq_lanes_channel_count(self->lanes); c++) {
        fq_lane_channel_t *channel = fq_lanes_channel_at(self->lanes, c);
        fq_fairness_stats_t sum;
        uint64_t dispatched;
        s_channel_stats(self, channel, &sum, &dispatched);
        fq_metrics_channel(self->config->metrics, channel->name, (int64_t)sum.prefetched,
                           channel->credit, (int64_t)sum.inflight);
    }
    int64_t now_us = zclock_usecs();
    for (size_t d = 0; d < fq_lanes_destination_count(self->lanes); d++) {
        fq_lane_destination_t *destination = fq_lanes_destination_at(self->lanes, d);
        if (!destination->configured) {
            //  Deleted: its lanes spend the default's budget, shown there
            fq_metrics_destination_forget(self->config->metrics, destination->name);
            continue;
        }
        int64_t ready = 0;
        for (size_t l = 0; l < fq_lanes_count(self->lanes); l++) {
            fq_lane_t *lane = fq_lanes_at(self->lanes, l);
            fq_fairness_stats_t stats;
            fq_fairness_stats(lane->fairness, &stats);
            if (lane->budget == destination)
                ready += (int64_t)stats.prefetched;
        }
        fq_shaper_t *shaper = &destination->shaper;
        fq_metrics_destination_t figures = {
            .name = destination->name,
            .configured_per_s = fq_shaper_configured_per_s(shaper),
            .effective_per_s = fq_shaper_effective_per_s(shaper, now_us),
            .max_inflight = shaper->max_inflight,
            .ready = ready,
            .inflight = destination->inflight,
            .state = fq_shaper_state_name(fq_shaper_state(shaper, now_us)),
            .suspended_for_ms = fq_shaper_suspended_for_us(shaper, now_us) / 1000,
            .sent = destination->sent,
            .deferred = destination->deferred,
            .throttled = destination->throttled};
        fq_metrics_destination(self->config->metrics, &figures);
    }
    fq_tenant_budgets_each(self->sends, s_report_budget, self->config->metrics);
}

static void s_poll(fq_ctx_t *ctx, s_self_t *self, bool full)
{
    //  The daily counts, as the API shows them: a poll behind at most
    if (full && fq_pipeline_may_dispatch(self->config))
        fq_tenant_budgets_record(self->sends);
    int64_t since = self->last_read;
    self->last_poll = zclock_mono();
    if (full) {
        self->last_full = self->last_poll;
        s_poll_now(ctx, self, true);
        self->poll_took_ms = zclock_mono() - self->last_poll;
        self->full_polls++;
    } else {
        //  The light poll's window starts at the last poll's start
        self->light_window_ms = self->last_poll - since + S_LIGHT_MARGIN_MS;
        s_poll_now(ctx, self, false);
        self->light_polls++;
    }
    //  Rows a slow request (or one that left) did not use age out here
    fq_row_cache_expire(self->rows, zclock_usecs());
    fq_metrics_batch_flush(self->metrics);
    s_report_lanes(self);
}

//  The periodic poll: full when it is cheap enough (S_FULL_POLL_SHARE).
static void s_poll_periodic(fq_ctx_t *ctx, s_self_t *self)
{
    int64_t spacing = S_FULL_POLL_SHARE * self->poll_took_ms;
    if (spacing < self->config->poll_ms)
        spacing = self->config->poll_ms;
    s_poll(ctx, self, zclock_mono() - self->last_full >= spacing);
}

static void s_take_split_whole(s_self_t *self, const fq_due_request_t *due, s_known_t *known,
                               const fq_due_messages_t *messages);

//  Requests split at their submit that one poll takes in with their
//  messages (s_take_with_messages), a query each: newcomers the poll saw
//  before their NOTIFY. Past it, after a restart with thousands open, the
//  others join their lanes together and are paged.
#define S_POLL_WHOLE_MAX 32

//  Takes in request_id, new to its lanes, with its pending messages read
//  by the query that finds it due (fq_store_due_request), as a newcomer's
//  NOTIFY does: no page of ids is read for it. Returns 1 when it was taken
//  so, 0 when it has no such messages (it then joins its lanes by its
//  destinations and is paged), or -1 when the database failed.
static int s_take_with_messages(s_self_t *self, fq_store_t *store, int64_t request_id,
                                s_known_t *known)
{
    fq_due_request_t due;
    fq_due_messages_t *messages = &self->due_messages;
    int n = fq_store_due_request(store, request_id, self->config->prefetch, &due, messages);
    if (n < 0) {
        fq_db_failed(self->db, n);
        return -1;
    }
    if (n == 0 || messages->nids == 0)
        return 0;
    s_take_split_whole(self, &due, known, messages);
    return 1;
}

//  Reads the open requests (all, or those come due lately) and takes them in.
static int s_read_open(fq_ctx_t *ctx, s_self_t *self, fq_store_t *store, bool full)
{
    int n = full ? fq_store_due_requests(store, S_OPEN_MAX, self->due)
                 : fq_store_due_requests_since(store, self->light_window_ms, S_OPEN_MAX, self->due);
    if (n < 0) {
        fq_db_failed(self->db, n);
        return -1;
    }
    //  The next light poll reaches back to here: one that failed (the
    //  database away) loses no request come due meanwhile
    self->last_read = self->last_poll;
    if (full) {
        self->epoch++;
        //  Not while pages wait to be read again: they point to their lanes
        if (self->nstalled == 0)
            fq_lanes_prune(self->lanes);
        //  The destinations' budgets, which change without a request
        //  changing (their changes NOTIFY a full poll)
        int budgets = fq_store_destination_budgets(store, self->budgets, FQ_STORE_DESTINATIONS_MAX);
        if (budgets < 0) {
            fq_db_failed(self->db, budgets);
            return -1;
        }
        fq_lanes_configure(self->lanes, self->budgets, (size_t)budgets, zclock_usecs());
        //  The operators' holds, likewise (their changes NOTIFY a full
        //  poll): before the requests join, so a held tenant's join held
        if (s_read_holds(self, store) != 0)
            return -1;
    }
    //  The lanes of those with messages and no lane yet (new ones, or
    //  one whose SPLIT_DONE was lost) are read at once, for all of them;
    //  one split at its submit is taken in with its messages instead, as
    //  its NOTIFY would have had it (this poll may see it first), a few
    //  per poll: a query each, where the others share one
    size_t nfresh = 0;
    int whole = 0;
    for (int i = 0; i < n; i++) {
        s_open(self, &self->due[i]);
        s_known_t *known = fq_intkey_lookup(self->known, self->due[i].id);
        if (!known || known->nlanes > 0 || !self->due[i].any_split)
            continue;
        int taken = self->due[i].split_at_submit && known->split_done && whole < S_POLL_WHOLE_MAX
                        ? s_take_with_messages(self, store, self->due[i].id, known)
                        : 0;
        if (taken < 0)
            return -1;
        whole += taken;
        if (taken == 0)
            self->fresh[nfresh++] = self->due[i].id;
    }
    if (nfresh > 0 && s_join_stored(self, store, self->fresh, nfresh) != 0)
        return -1;
    s_split_feed(ctx, self);
    if (!full)
        return 0;
    //  Requests no longer open (done, cancelled, paused, rescheduled to
    //  later) leave the rings; their prefetched ids are simply forgotten
    zlistx_t *gone = zlistx_new();
    for (s_known_t *known = zhashx_first(self->known); known && gone;
         known = zhashx_next(self->known))
        if (known->epoch != self->epoch)
            zlistx_add_end(gone, (void *)(uintptr_t)fq_intkey_cursor(self->known));
    for (void *item = gone ? zlistx_first(gone) : NULL; item; item = zlistx_next(gone))
        s_let_go(self, (int64_t)(uintptr_t)item);
    zlistx_destroy(&gone);
    return 0;
}

static void s_poll_now(fq_ctx_t *ctx, s_self_t *self, bool full)
{
    fq_store_t *store = fq_db_store(self->db);
    if (!store || s_read_open(ctx, self, store, full) != 0)
        return;

    if (!self->claims_released) {
        int released = fq_store_release_stale_claims(store);
        if (released < 0)
            fq_db_failed(self->db, released);
        else if (released > 0)
            fq_log(FQ_LOG_INFO, "scheduler: %d retries claimed by an earlier leader are due again",
                   released);
        self->claims_released = released >= 0;
    }
    //  Under a hold of all nothing is claimed: the claim would step over
    //  every due retry, all of them held, at each poll
    while (!self->held_all) {
        int claimed =
            fq_store_claim_due_retries(store, S_RETRY_BATCH, S_RETRY_LEASE_S, self->retries);
        if (claimed < 0) {
            fq_db_failed(self->db, claimed);
            break;
        }
        for (int i = 0; i < claimed; i++) {
            //  Out of memory for its lane: it waits for its lease
            fq_lane_t *lane =
                fq_lanes_get(self->lanes, self->retries[i].channel, self->retries[i].destination);
            if (lane) {
                fq_fairness_push(lane->fairness, self->retries[i].request_id,
                                 self->retries[i].tenant_id, self->retries[i].id);
                //  A lane new to its tenant: a held tenant is held there too
                fq_tenant_budgets_joined(self->sends, self->retries[i].tenant_id, lane->fairness);
            }
        }
        self->retries_claimed += (uint64_t)claimed;
        if (claimed < S_RETRY_BATCH)
            break;
    }
    s_pump(ctx, self);
}

static void s_split_lanes(s_self_t *self, const fq_split_done_t *done, s_known_t *known);

//  A request taken in split whole, with its pending messages read
//  (fq_store_due_request): its lanes take them as they take
//  those a splitter names (s_split_lanes).
static void s_take_split_whole(s_self_t *self, const fq_due_request_t *due, s_known_t *known,
                               const fq_due_messages_t *messages)
{
    uint64_t ids[FQ_STORE_SPLIT_IDS_MAX], id_counts[FQ_STORE_SPLIT_IDS_MAX];
    for (int i = 0; i < messages->nids; i++)
        ids[i] = (uint64_t)messages->ids[i];
    for (int k = 0; k < messages->ndestinations; k++)
        id_counts[k] = (uint64_t)messages->id_counts[k];
    fq_split_done_t whole = {.request = (uint64_t)due->id,
                             .split = (uint32_t)messages->nids,
                             .last = true,
                             .error = "",
                             .destinations = messages->destinations.data,
                             .ids = {(uint32_t)messages->nids, ids},
                             .id_counts = {(uint32_t)messages->ndestinations, id_counts}};
    s_split_lanes(self, &whole, known);
}

//  A NOTIFY named request_id (a submit, or a cancel, pause, resume,
//  reschedule or new priority of it): it alone is looked up, and taken in
//  if it is due, or let go if it no longer is, as a full poll would. A full
//  poll reads every open request, and its pages after it, in the
//  scheduler's thread: under a busy database that is tens of ms, in which
//  credit coming back and finished splits wait, and with it a newcomer's
//  first message. The slow poll (poll_ms) still reads them all, for what
//  changes without a notification (a tenant's weight, a send_at come).
static void s_look_at_one(fq_ctx_t *ctx, s_self_t *self, int64_t request_id)
{
    fq_store_t *store = fq_db_store(self->db);
    if (!store)
        return;
    fq_due_request_t due;
    //  A request new to the scheduler may have been split at its submit
    //  (0028): its messages come with it, as a splitter's SPLIT_DONE
    //  names those of a small request, so a newcomer's first message waits
    //  for no query of its destinations nor of a page
    bool fresh = !fq_intkey_lookup(self->known, (uint64_t)request_id);
    fq_due_messages_t *messages = &self->due_messages;
    int n =
        fq_store_due_request(store, request_id, fresh ? self->config->prefetch : 0, &due, messages);
    if (n < 0) {
        fq_db_failed(self->db, n);
        return;
    }
    if (n == 1) {
        //  A request just submitted and not split yet has no messages: its
        //  lanes come with its chunks
        s_open(self, &due);
        s_known_t *known = fq_intkey_lookup(self->known, due.id);
        if (known && known->nlanes == 0 && due.any_split) {
            if (messages->nids > 0 && known->split_done)
                s_take_split_whole(self, &due, known, messages);
            else if (s_join_stored(self, store, &due.id, 1) != 0)
                return;
        }
        s_split_feed(ctx, self);
    } else if (fq_intkey_lookup(self->known, request_id))
        s_let_go(self, request_id);
    s_pump(ctx, self);
}

//  ---------------------------------------------------------------------
//  Messages

//  The lane message_id went out in, no longer in flight; its channel's
//  default lane if it is not known (sent before this scheduler started).
static fq_lane_t *s_landed(s_self_t *self, uint64_t message_id, const char *channel)
{
    fq_lane_t *lane = fq_intkey_lookup(self->flying, message_id);
    if (lane) {
        fq_intkey_delete(self->flying, message_id);
        return lane;
    }
    return fq_lanes_get(self->lanes, channel, NULL);
}

//  How fast a lane's mean cost follows its messages: about the last
//  thousand count. Slow enough that a burst of one tenant's big messages
//  does not make them look average; fast enough to follow the mix.
#define S_COST_MEAN_WEIGHT 0.001

//  An answered message of tenant cost cost (bytes or microseconds,
//  fairness_cost): its pick charged 1, an average message's cost; the
//  rest is charged now, as a multiple of the lane's mean cost.
static void s_charge(fq_lane_t *lane, int64_t tenant, uint64_t cost)
{
    if (cost == 0)
        return;
    double value = (double)cost;
    lane->cost_mean = lane->cost_mean > 0
                          ? lane->cost_mean + S_COST_MEAN_WEIGHT * (value - lane->cost_mean)
                          : value;
    fq_fairness_charge(lane->fairness, tenant, value / lane->cost_mean - 1);
}

static void s_settled(s_self_t *self, const fq_settled_t *settled)
{
    uint32_t n = settled->messages.count;
    fq_lane_channel_t *channel = fq_lanes_channel(self->lanes, settled->channel);
    if (settled->requests.count != n || settled->tenants.count != n || !channel)
        return; //  Malformed: the lists go together
    int64_t now_us = zclock_usecs();
    int64_t retry_after_us = (int64_t)settled->retry_after_s * 1000000;
    for (uint32_t i = 0; i < n; i++) {
        int64_t tenant = (int64_t)settled->tenants.items[i];
        fq_lane_t *lane = s_landed(self, settled->messages.items[i], settled->channel);
        if (!lane)
            continue; //  Out of memory for a lane: its count drifts, nothing is lost
        fq_fairness_done(lane->fairness, tenant);
        if (settled->costs.count == n)
            s_charge(lane, tenant, settled->costs.items[i]);
        //  Not answered by a receiver (given back by a dead sender,
        //  deferred, or never sendable): it does not count against its
        //  tenant's daily quota
        if (!settled->answered)
            fq_tenant_budgets_give_back(self->sends, tenant, 1);
        fq_lane_destination_t *budget = lane->budget;
        if (budget->inflight > 0)
            budget->inflight--;
        //  What the receiving side said shapes its destination: a
        //  throttling reply lowers the rate, failed connections suspend
        //  it, and an answer (not a message the dispatcher skipped) shows
        //  it is reachable
        if (settled->deferral == FQ_DEFERRAL_THROTTLED) {
            budget->deferred++;
            budget->throttled++;
            fq_shaper_retry_after(&budget->shaper, retry_after_us, now_us);
        } else if (settled->deferral == FQ_DEFERRAL_UNREACHABLE) {
            budget->deferred++;
            fq_shaper_unreachable(&budget->shaper, now_us);
        } else if (settled->answered)
            fq_shaper_delivered(&budget->shaper, now_us);
        //  Given back unsent (its sender died, or the receiver deferred
        //  it): it goes out again, within its destination's budget, only
        //  if its request is still open. One paused, cancelled or moved
        //  to later meanwhile left the open set at the last poll; its
        //  message stays pending and is paged again from scan_from if it
        //  reopens.
        if (settled->requeue && fq_intkey_lookup(self->known, settled->requests.items[i])) {
            fq_fairness_push(lane->fairness, (int64_t)settled->requests.items[i], tenant,
                             (int64_t)settled->messages.items[i]);
            self->requeued++;
        }
    }
    channel->credit += settled->credit;
    self->pump_wanted = true; //  In s_idle, once the mailbox is empty
}

//  Whether destination is among names (comma-separated).
static bool s_destination_named(const char *names, const char *destination)
{
    size_t size = strlen(destination);
    while (*names) {
        size_t length = strcspn(names, ",");
        if (length == size && memcmp(names, destination, size) == 0)
            return true;
        names += length + (names[length] == ',');
    }
    return false;
}

//  Whether done names its request's messages, id_counts[k] of them for
//  its k-th destination (those of a request split whole).
static bool s_split_ids_named(const fq_split_done_t *done)
{
    if (done->ids.count == 0 || !*done->destinations)
        return false;
    size_t ndestinations = 1, sum = 0;
    for (const char *c = done->destinations; *c; c++)
        ndestinations += *c == ',';
    if (done->id_counts.count != ndestinations)
        return false;
    for (uint32_t k = 0; k < done->id_counts.count; k++) {
        if (done->id_counts.items[k] > done->ids.count)
            return false; //  Nor may a sum wrap around
        sum += done->id_counts.items[k];
    }
    return sum == done->ids.count;
}

//  The lanes a chunk's messages went to take part in its request; each is
//  paged again, unless the splitter named every message of the request
//  (fq_fairness_request_split_all: a newcomer's small request waits for
//  no page query). After the last chunk every lane of it knows no more
//  come.
static void s_split_lanes(s_self_t *self, const fq_split_done_t *done, s_known_t *known)
{
    int64_t request_id = (int64_t)done->request;
    const char *names = done->destinations;
    //  A chunk that names none but wrote messages: they are the default
    //  destination's
    if (!*names && done->split > 0)
        names = FQ_STORE_DESTINATION_DEFAULT;
    bool named = done->last && s_split_ids_named(done);
    const uint64_t *ids = done->ids.items;
    for (uint32_t k = 0; *names; k++) {
        size_t length = strcspn(names, ",");
        char name[FQ_STORE_DESTINATION_SIZE];
        if (length > 0 && length < sizeof name) {
            memcpy(name, names, length);
            name[length] = 0;
            s_join_one(request_id, name, self);
            fq_lane_t *lane = fq_lanes_get(self->lanes, known->channel, name);
            uint64_t count = named ? done->id_counts.items[k] : 0;
            //  uint64_t and int64_t may alias each other
            if (lane && !(named && count <= (uint64_t)self->config->prefetch &&
                          fq_fairness_request_split_all(lane->fairness, request_id,
                                                        (const int64_t *)ids, (int)count) == 0))
                fq_fairness_request_split(lane->fairness, request_id, done->last);
            ids += count;
        } else
            ids += named ? done->id_counts.items[k] : 0;
        names += length + (names[length] == ',');
    }
    //  The lanes this chunk did not name learn that no more come (those it
    //  named were told above: told again, a request whose ids were named
    //  would be paged after all)
    for (size_t i = 0; done->last && i < known->nlanes; i++)
        if (!s_destination_named(done->destinations, known->lanes[i]->destination))
            fq_fairness_request_split(known->lanes[i]->fairness, request_id, true);
}

static void s_split_done(fq_ctx_t *ctx, s_self_t *self, const fq_split_done_t *done)
{
    if (done->request == 0)
        return;
    s_split_over(self, (int64_t)done->request);
    s_known_t *known = fq_intkey_lookup(self->known, done->request);
    if (known && !*done->error) {
        if (done->last)
            known->split_done = true;
        else
            s_split_queue(self, (int64_t)done->request, known);
        s_split_lanes(self, done, known);
    }
    //  After an error the request waits for the next poll to queue it again
    s_split_feed(ctx, self);
    s_pump(ctx, self);
}

//  Answers a STATS_QUERY: the counts of every lane added up, then each
//  channel's own (its lanes' added up) as "<count>.<channel>".
static void s_reply_stats(fq_ctx_t *ctx, s_self_t *self, const fq_msg_t *msg)
{
    enum { GLOBAL = 13, PER_CHANNEL = 4, NAME_SIZE = 64 };
    size_t most = GLOBAL + PER_CHANNEL * fq_lanes_channel_count(self->lanes);
    const char **keys = calloc(most, sizeof *keys);
    uint64_t *values = calloc(most, sizeof *values);
    char(*names)[NAME_SIZE] = calloc(most, sizeof *names);
    if (!keys || !values || !names) {
        free(keys);
        free(values);
        free(names);
        return; //  Out of memory: the ask times out
    }
    fq_fairness_stats_t total = {0};
    int64_t credit = 0;
    size_t n = GLOBAL;
    for (size_t c = 0; c < fq_lanes_channel_count(self->lanes); c++) {
        fq_lane_channel_t *channel = fq_lanes_channel_at(self->lanes, c);
        fq_fairness_stats_t sum;
        uint64_t dispatched;
        s_channel_stats(self, channel, &sum, &dispatched);
        s_stats_add(&total, &sum);
        credit += channel->credit;
        const char *what[PER_CHANNEL] = {"prefetched", "inflight", "credit", "dispatched"};
        uint64_t counts[PER_CHANNEL] = {sum.prefetched, sum.inflight, (uint64_t)channel->credit,
                                        dispatched};
        for (int k = 0; k < PER_CHANNEL; k++) {
            size_t at = n - GLOBAL;
            snprintf(names[at], NAME_SIZE, "%s.%s", what[k], channel->name);
            keys[n] = names[at];
            values[n++] = counts[k];
        }
    }
    const char *const global_keys[GLOBAL] = {
        "tenants",    "requests",    "ready_tenants", "prefetched",      "inflight",
        "credit",     "dispatched",  "requeued",      "retries_claimed", "splitting",
        "full_polls", "light_polls", "page_reads"};
    const uint64_t global_values[GLOBAL] = {total.tenants,         total.requests,
                                            total.ready_tenants,   total.prefetched,
                                            total.inflight,        (uint64_t)credit,
                                            self->dispatched,      self->requeued,
                                            self->retries_claimed, (uint64_t)s_splitters_busy(self),
                                            self->full_polls,      self->light_polls,
                                            self->page_reads};
    for (int k = 0; k < GLOBAL; k++) {
        keys[k] = global_keys[k];
        values[k] = global_values[k];
    }
    fq_stats_reply(ctx, msg, keys, values, n);
    free(keys);
    free(values);
    free(names);
}

static void s_destroy(s_self_t *self)
{
    //  Before the connection it records the counts with, and the lanes
    fq_tenant_budgets_destroy(&self->sends, true);
    zhashx_destroy(&self->flying);
    fq_row_cache_destroy(&self->rows);
    free(self->budgets);
    free(self->fresh);
    fq_metrics_batch_destroy(&self->metrics);
    zhashx_destroy(&self->counted);
    zlistx_destroy(&self->express);
    zlistx_destroy(&self->queue);
    fq_lanes_destroy(&self->lanes);
    zhashx_destroy(&self->known);
    fq_db_destroy(&self->db);
    free(self->stalled);
    free(self->asks);
    free(self->ask_lanes);
    free(self->page);
    free(self->page_counts);
    free(self->due);
    fq_buf_free(&self->due_messages.destinations);
    free(self->retries);
    fq_hold_list_free(&self->holds);
    free(self);
}

static int s_tune(fq_store_t *store, void *arg)
{
    (void)arg;
    return fq_store_tune_paging(store);
}

static int s_start(fq_ctx_t *ctx, void *args, void **state_p)
{
    s_self_t *self = calloc(1, sizeof *self);
    if (!self)
        return FQ_ENOMEM;
    self->config = args;
    self->lanes = fq_lanes_new(self->config->prefetch);
    self->known = zhashx_new();
    self->db = fq_pipeline_db(self->config, "scheduler");
    self->asks = malloc(FQ_STORE_PAGE_ASKS_MAX * sizeof *self->asks);
    self->ask_lanes = malloc(FQ_STORE_PAGE_ASKS_MAX * sizeof *self->ask_lanes);
    self->page = malloc(FQ_STORE_PAGE_IDS_MAX * sizeof *self->page);
    self->rows = fq_row_cache_new(S_ROW_MAX_BYTES, FQ_ROW_FRESH_US);
    self->page_counts = malloc(FQ_STORE_PAGE_ASKS_MAX * sizeof *self->page_counts);
    self->due = malloc(S_OPEN_MAX * sizeof *self->due);
    self->retries = malloc(S_RETRY_BATCH * sizeof *self->retries);
    self->express = zlistx_new();
    self->queue = zlistx_new();
    self->flying = zhashx_new();
    self->budgets = malloc(FQ_STORE_DESTINATIONS_MAX * sizeof *self->budgets);
    self->fresh = malloc(S_OPEN_MAX * sizeof *self->fresh);
    if (self->lanes && self->db)
        self->sends = fq_tenant_budgets_new(self->lanes, self->db, NULL);
    if (self->config->metrics) {
        self->metrics = fq_metrics_batch_new(self->config->metrics);
        self->counted = zhashx_new();
    }
    if (!self->express || !self->queue || !self->flying || !self->budgets || !self->fresh ||
        !self->sends || !self->lanes || !self->known || !self->db || !self->asks ||
        !self->ask_lanes || !self->page || !self->rows || !self->page_counts || !self->due ||
        !self->retries || (self->config->metrics && (!self->metrics || !self->counted))) {
        s_destroy(self);
        return FQ_ENOMEM;
    }
    fq_intkeys_use(self->known);
    fq_intkeys_use(self->flying);
    zhashx_set_destructor(self->known, s_known_free);
    if (self->counted)
        fq_intkeys_use(self->counted);
    fq_db_on_connect(self->db, s_tune, NULL);
    fq_tick_t tick = {.what = FQ_TICK_POLL};
    if (fq_timer_every(ctx, self->config->poll_ms, &fq_tick_desc, &tick) < 0) {
        s_destroy(self);
        return FQ_ENOMEM;
    }
    *state_p = self;
    s_poll(ctx, self, true);
    return 0;
}

static int s_receive(fq_ctx_t *ctx, void *state, const fq_msg_t *msg)
{
    s_self_t *self = state;
    switch (msg->type) {
    case FQ_MSG_SETTLED: {
        fq_settled_t settled;
        if (fq_msg_decode(msg, &fq_settled_desc, &settled) == 0)
            s_settled(self, &settled);
        break;
    }
    case FQ_MSG_CREDIT_CHANGED: {
        fq_credit_changed_t changed;
        if (fq_msg_decode(msg, &fq_credit_changed_desc, &changed) == 0) {
            fq_lane_channel_t *channel = fq_lanes_channel(self->lanes, changed.channel);
            if (channel)
                channel->credit += changed.delta;
            s_pump(ctx, self);
        }
        break;
    }
    case FQ_MSG_SPLIT_DONE: {
        fq_split_done_t done;
        if (fq_msg_decode(msg, &fq_split_done_desc, &done) == 0)
            s_split_done(ctx, self, &done);
        break;
    }
    case FQ_MSG_REQUESTS_CHANGED: {
        fq_requests_changed_t changed;
        if (fq_msg_decode(msg, &fq_requests_changed_desc, &changed) != 0)
            changed.request = 0;
        //  A named request is looked at alone, whatever changed; only a
        //  notification naming none (a reconnect, a burst) needs them all
        if (changed.request) {
            s_look_at_one(ctx, self, (int64_t)changed.request);
            break;
        }
        int64_t since = zclock_mono() - self->last_full;
        int64_t gap = 2 * self->poll_took_ms > S_SOON_MS ? 2 * self->poll_took_ms : S_SOON_MS;
        if (since >= gap)
            s_poll(ctx, self, true);
        else if (!self->soon_armed) {
            fq_tick_t tick = {.what = FQ_TICK_SOON};
            self->soon_armed = fq_timer_once(ctx, (int)(gap - since), &fq_tick_desc, &tick) > 0;
        }
        break;
    }
    case FQ_MSG_TICK: {
        fq_tick_t tick;
        if (fq_msg_decode(msg, &fq_tick_desc, &tick) != 0)
            break;
        if (tick.what == FQ_TICK_SOON) {
            self->soon_armed = false;
            s_poll(ctx, self, true);
        } else if (tick.what == FQ_TICK_SHAPE) {
            //  A destination's or a tenant's budget grew back
            self->shape_at = 0;
            s_pump(ctx, self);
        } else
            s_poll_periodic(ctx, self);
        break;
    }
    case FQ_MSG_STATS_QUERY:
        s_reply_stats(ctx, self, msg);
        break;
    default:
        break;
    }
    return 0;
}

static void s_stop(fq_ctx_t *ctx, void *state)
{
    (void)ctx;
    s_destroy(state);
}

static void s_idle(fq_ctx_t *ctx, void *state)
{
    s_self_t *self = state;
    if (self->pump_wanted) {
        self->pump_wanted = false;
        s_pump(ctx, self);
    }
}

const fq_behaviour_t fq_scheduler_behaviour = {
    .name = "scheduler", .start = s_start, .receive = s_receive, .stop = s_stop, .idle = s_idle};
