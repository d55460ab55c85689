/*  fq_store_writer.c — /user/store: the single writer of message outcomes.

    Acks and nacks arrive one by one from the dispatcher; writing each in a
    transaction of its own would cap fairq at the database's commit rate.
    They are batched instead (group commit): a batch is written once it
    holds ack_batch outcomes and no more are waiting in the mailbox, or
    ack_flush_ms after its first one arrived, whichever comes first. So
    at full speed a transaction carries hundreds of acks, a lone ack waits
    a few milliseconds at most, and the answers that came in while a slow
    statement ran go together into the next one. That one is at most the
    dispatcher's window (actors/fq_store_window.h): after each write the
    store tells the dispatcher how far it has written, and the dispatcher
    hands out nothing new while more than the window is unwritten.

    Nothing is dropped when the database is away: the batch is kept (it
    stays small, since nothing new is dispatched while messages cannot be
    loaded) and written once the connection is back. A crash loses at most
    the unflushed batch, whose messages are then sent again (at least
    once: docs/delivery.md).

    Each batch's size and time (or its failure) is recorded in fq_metrics. */
#include "fq_db.h"
#include "fq_log.h"
#include "fq_pipeline.h"
#include "fq_store_window.h"
#include <stdlib.h>
#include <string.h>

//  Pause before writing again a batch the database refused (a deadlock is
//  resolved at once; the pause keeps a lasting refusal from spinning).
#define S_RETRY_MS 50

typedef struct {
    fq_pipeline_config_t *config; //  Borrowed from the args
    fq_db_t *db;
    int64_t *acks;
    size_t acks_held; //  Acks held
    fq_nack_t *nacks;
    size_t nnacks;
    size_t capacity; //  Of each array: ack_batch at first
    size_t most;     //  The dispatcher's window: written at once, mailbox or not
    bool flush_armed;
    bool failed; //  The last write failed: the next waits for the timer
    //  The dispatcher's count through the last outcome received (its
    //  messages come in order; a dispatcher that restarted counts from 0
    //  again), and the last one told back to it as written (STORE_WRITTEN)
    uint64_t through, through_told;
    fq_metrics_batch_t *metrics; //  NULL without metrics
    uint64_t written_acks, written_nacks, batches;
} s_self_t;

static void s_arm(fq_ctx_t *ctx, s_self_t *self, int delay_ms)
{
    if (self->flush_armed)
        return;
    fq_tick_t tick = {.what = FQ_TICK_FLUSH};
    if (fq_timer_once(ctx, delay_ms, &fq_tick_desc, &tick) > 0)
        self->flush_armed = true;
}

static void s_free_nacks(s_self_t *self, size_t count)
{
    for (size_t i = 0; i < count; i++)
        free((char *)self->nacks[i].error);
    memmove(self->nacks, self->nacks + count, (self->nnacks - count) * sizeof *self->nacks);
    self->nnacks -= count;
}

//  Writes what is held with store, each batch measured. Returns 0, or -1
//  when it must be tried again later.
//
//  Nothing is ever dropped: an ack not written leaves its message pending
//  behind the scheduler's cursor, unsent again until a restart. A batch the
//  database refuses (a deadlock with a concurrent counter update, a
//  statement timeout) is kept and written again after a pause, like one
//  that met a lost connection. The statements only take ids, flags and
//  cleaned text, so a batch that fails for ever would mean a broken
//  database, which the log then says every time.
static int s_write(s_self_t *self, fq_store_t *store)
{
    if (self->acks_held) {
        int64_t started = zclock_usecs();
        int rc = fq_store_ack_batch_events(store, self->acks, self->acks_held,
                                           !self->config->skip_sent_events);
        fq_metrics_batch_db(self->metrics, FQ_METRICS_DB_ACKS, self->acks_held,
                            zclock_usecs() - started, rc >= 0);
        if (rc < 0) {
            fq_db_failed(self->db, rc);
            return -1;
        }
        self->written_acks += self->acks_held;
        self->acks_held = 0;
        self->batches++;
    }
    if (self->nnacks) {
        int64_t started = zclock_usecs();
        int rc = fq_store_nack_batch(store, self->nacks, self->nnacks, &self->config->retry);
        fq_metrics_batch_db(self->metrics, FQ_METRICS_DB_NACKS, self->nnacks,
                            zclock_usecs() - started, rc >= 0);
        if (rc < 0) {
            fq_db_failed(self->db, rc);
            return -1;
        }
        self->written_nacks += self->nnacks;
        s_free_nacks(self, self->nnacks);
        self->batches++;
    }
    return 0;
}

//  Tells the dispatcher how far everything is written, once nothing is
//  held: it keeps credit back while too much is not (fq_store_window.h).
//  Told again only when asked (again: true), else when it moved.
static void s_tell_written(fq_ctx_t *ctx, s_self_t *self, bool again)
{
    if (self->acks_held || self->nnacks || (self->through == self->through_told && !again))
        return;
    fq_store_written_t written = {.through = self->through};
    fq_tell(ctx, FQ_PATH_DISPATCHER, &fq_store_written_desc, &written);
    self->through_told = self->through;
}

//  Writes what is held, if the database is there (s_write).
static int s_flush(fq_ctx_t *ctx, s_self_t *self)
{
    if (self->acks_held == 0 && self->nnacks == 0) {
        s_tell_written(ctx, self, false);
        return 0;
    }
    fq_store_t *store = fq_db_store(self->db);
    if (!store)
        return -1;
    int rc = s_write(self, store);
    fq_metrics_batch_flush(self->metrics);
    if (rc == 0)
        s_tell_written(ctx, self, false);
    return rc;
}

//  When to try a failed write again: when the connection is due back, or
//  after S_RETRY_MS when the database refused the statement.
static int s_retry_ms(s_self_t *self)
{
    int ms = fq_db_retry_in_ms(self->db);
    return ms > 0 ? ms : S_RETRY_MS;
}

//  Writes now, or sets the retry after a failure. Until that retry no
//  other write is tried: a database that refuses every statement would
//  otherwise be sent the batch again each time the mailbox empties.
static void s_flush_or_retry(fq_ctx_t *ctx, s_self_t *self)
{
    self->failed = s_flush(ctx, self) != 0;
    if (self->failed)
        s_arm(ctx, self, s_retry_ms(self));
}

//  A batch of the dispatcher's window is written at once; a smaller one
//  waits for the mailbox to empty (s_idle) or its deadline.
static void s_after_add(fq_ctx_t *ctx, s_self_t *self)
{
    if (!self->failed && (self->acks_held >= self->most || self->nnacks >= self->most)) {
        s_flush_or_retry(ctx, self);
        return;
    }
    s_arm(ctx, self, self->config->ack_flush_ms);
}

//  The mailbox is empty: a batch that is due goes now, with every answer
//  that came in while the last one was written.
static void s_idle(fq_ctx_t *ctx, void *state)
{
    s_self_t *self = state;
    size_t batch = (size_t)self->config->ack_batch;
    if (!self->failed && (self->acks_held >= batch || self->nnacks >= batch))
        s_flush_or_retry(ctx, self);
}

//  Room for one more of each: when the database is away the arrays grow
//  past a batch rather than lose anything.
static int s_reserve(s_self_t *self)
{
    if (self->acks_held < self->capacity && self->nnacks < self->capacity)
        return 0;
    size_t capacity = self->capacity * 2;
    int64_t *acks = realloc(self->acks, capacity * sizeof *acks);
    if (!acks)
        return FQ_ENOMEM;
    self->acks = acks;
    fq_nack_t *nacks = realloc(self->nacks, capacity * sizeof *nacks);
    if (!nacks)
        return FQ_ENOMEM;
    self->nacks = nacks;
    self->capacity = capacity;
    return 0;
}

static void s_destroy(s_self_t *self)
{
    s_free_nacks(self, self->nnacks);
    free(self->acks);
    free(self->nacks);
    fq_db_destroy(&self->db);
    fq_metrics_batch_destroy(&self->metrics);
    free(self);
}

static int s_start(fq_ctx_t *ctx, void *args, void **state_p)
{
    (void)ctx;
    s_self_t *self = calloc(1, sizeof *self);
    if (!self)
        return FQ_ENOMEM;
    self->config = args;
    self->capacity = (size_t)self->config->ack_batch;
    self->most = (size_t)fq_store_window_size((uint64_t)self->config->ack_batch);
    self->acks = malloc(self->capacity * sizeof *self->acks);
    self->nacks = malloc(self->capacity * sizeof *self->nacks);
    self->db = fq_pipeline_db(self->config, "store");
    self->metrics = fq_metrics_batch_new(self->config->metrics);
    if (!self->acks || !self->nacks || !self->db || (self->config->metrics && !self->metrics)) {
        s_destroy(self);
        return FQ_ENOMEM;
    }
    *state_p = self;
    return 0;
}

static int s_receive(fq_ctx_t *ctx, void *state, const fq_msg_t *msg)
{
    s_self_t *self = state;
    switch (msg->type) {
    case FQ_MSG_STORE_ACKS: {
        fq_store_acks_t acks;
        if (fq_msg_decode(msg, &fq_store_acks_desc, &acks))
            return 0;
        for (uint32_t i = 0; i < acks.ids.count; i++) {
            if (s_reserve(self))
                return FQ_ENOMEM;
            self->acks[self->acks_held++] = (int64_t)acks.ids.items[i];
        }
        self->through = acks.through;
        if (acks.ids.count)
            s_after_add(ctx, self);
        else {
            //  The dispatcher asks how far: told at once if nothing is
            //  held, else after the write that its deadline makes sure of
            s_tell_written(ctx, self, true);
            if (self->acks_held || self->nnacks)
                s_arm(ctx, self, self->config->ack_flush_ms);
        }
        return 0;
    }
    case FQ_MSG_STORE_NACK: {
        fq_store_nack_t nack;
        if (fq_msg_decode(msg, &fq_store_nack_desc, &nack) || s_reserve(self))
            return 0;
        char *error = strdup(nack.error);
        if (!error)
            return FQ_ENOMEM;
        self->nacks[self->nnacks++] = (fq_nack_t){.id = (int64_t)nack.id,
                                                  .permanent = nack.permanent,
                                                  .error = error,
                                                  .retry_after_s = nack.retry_after_s,
                                                  .deferred = nack.deferral != 0};
        self->through = nack.through;
        s_after_add(ctx, self);
        return 0;
    }
    case FQ_MSG_TICK:
        self->flush_armed = false;
        s_flush_or_retry(ctx, self);
        return 0;
    case FQ_MSG_STATS_QUERY: {
        const char *const keys[] = {"acks_written", "nacks_written", "batches", "held"};
        const uint64_t values[] = {self->written_acks, self->written_nacks, self->batches,
                                   self->acks_held + self->nnacks};
        fq_stats_reply(ctx, msg, keys, values, sizeof keys / sizeof keys[0]);
        return 0;
    }
    default:
        return 0;
    }
}

static void s_stop(fq_ctx_t *ctx, void *state)
{
    (void)ctx;
    s_self_t *self = state;
    //  A last write of what is held; what cannot be written is sent again
    //  after the restart, as after a crash
    if (s_flush(ctx, self) != 0 && self->acks_held + self->nnacks > 0)
        fq_log(FQ_LOG_WARNING, "store: stopping with %zu outcomes unwritten (they are sent again)",
               self->acks_held + self->nnacks);
    s_destroy(self);
}

const fq_behaviour_t fq_store_writer_behaviour = {
    .name = "store", .start = s_start, .receive = s_receive, .stop = s_stop, .idle = s_idle};
