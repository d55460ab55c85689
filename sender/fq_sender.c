/*  fq_sender.c — the sender actor and its delivery workers (fq_sender.h).

    The sender actor says HELLO to the dispatcher (an ask, retried with
    doubling waits until fairqd answers WELCOME), watches it, and grants
    for each channel one credit per idle worker of the channel's pool
    (CREDIT n, channel). Each MSG goes to an idle worker of its channel;
    each outcome goes back as ACK or NACK, which gives the credit back to
    that channel: the dispatcher counts each channel's credit apart, so a
    channel whose receiver hangs holds its own workers and no others.

    When the gateway declares fairqd dead (missed heartbeats, a dropped
    connection, BYE), the dispatcher has already given this sender's
    messages back to its scheduler (or, when it was the leader of several
    fairqd and died, the new leader sends them again). The sender then
    says HELLO again, to whichever fairqd the gateway joins next; outcomes
    that arrive meanwhile are kept and sent after the WELCOME (late
    answers: fairqd drops them, since only the sender holding a message may
    answer for it, and the message, given back, goes out again), and each
    worker still busy with a message of the old session gives its credit
    back with an explicit CREDIT 1 of its channel when done, since fairqd
    no longer counts that message as this sender's.

    Batches (protocol 2): the HELLO lists "batch", so fairqd may send the
    messages of one dispatch as one MESSAGES frame; and when fairqd's
    WELCOME says protocol 2 or later, the ACKs of one burst go back as one
    ACKS, sent once the actor has handled every message waiting (its idle)
    or S_ACKS_MAX are gathered: no wait is added.

    Channels: the HELLO lists "channel=NAME" for each channel served, and
    each message goes to a transport of its channel; one of a channel not
    served is NACKed (transient) at once. A channel of the null kind is
    delivered by this actor itself (below), its pool a number of credits
    and no workers; each other channel by a pool of workers of its own,
    each holding the channel's transport alone. A NACK carries the wait
    the receiver asked for (retry_after_s, HTTP's Retry-After), which the
    worker's DELIVERED brought, and its deferral: the outcome THROTTLED or
    UNREACHABLE (fq_transport.h), which DELIVERED brings as it is, becomes
    a transient NACK that tells fairqd the receiver throttled or could not
    be reached. */
#include "fq_sender.h"
#include "fq_log.h"
#include <assert.h>
#include <ctype.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

//  How long fairqd has to answer HELLO, and the waits between attempts.
//  Both waits are short and do not grow: when the gateway joins a new
//  leader the sender should be served within a fraction of a second, not
//  after a back-off grown while the cluster changed leaders. A HELLO while
//  the gateway has joined no fairqd fails at once, here, and costs a
//  message to the gateway and its answer: it is said again soonest, so
//  that the HELLO follows the join by a few ms (at 100 ms it came 50 ms
//  after it on average, a sixth of a takeover's time after the lease).
//  After S_HELLO_UNJOINED_FAST_MS with none joined (longer than any
//  failover: fairqd is down) the wait is the longer one again.
#define S_HELLO_TIMEOUT_MS        2000
#define S_HELLO_RETRY_MS          100
#define S_HELLO_RETRY_UNJOINED_MS 10
#define S_HELLO_UNJOINED_FAST_MS  10000

//  Room for a delivery error.
#define S_ERROR_MAX 512

#define S_TICK_HELLO 1

//  Most ids one ACKS carries.
#define S_ACKS_MAX 512

//  Room for a worker's name: "worker-" and a number.
#define S_WORKER_NAME_SIZE 32

//  Room for a channel's credit in the log, besides its name: ", " and
//  " 200".
#define S_CREDIT_SHOWN 8

//  As much of an unknown channel's name as an error shows: a name from a
//  peer may be anything.
#define S_CHANNEL_SHOWN (FQ_SENDER_CHANNEL_NAME_MAX + 1)

typedef struct {
    uint64_t id; //  Message being delivered, 0 when idle
    uint64_t session;
    int channel; //  Whose pool it belongs to
} s_worker_t;

//  A channel's pool: size workers, idle of them idle, which are
//  workers[first .. first + size - 1]. A null-kind channel, delivered by
//  the sender actor at once, has no workers: size is its credit, and all
//  of it stays idle.
typedef struct {
    int first;
    int size;
    int idle;
} s_pool_t;

//  An outcome waiting for fairqd to be back.
typedef struct {
    uint64_t id;
    uint32_t outcome;
    char *error;
    uint32_t retry_after_s;
} s_outcome_t;

//  What a worker is spawned with (its spawn's args, freed with it): the
//  sender's configuration, borrowed, and its channel's index in it.
typedef struct {
    const fq_sender_config_t *config;
    int channel;
} s_worker_args_t;

//  A worker's channel and that channel's transport.
typedef struct {
    const fq_sender_config_t *config;
    int channel;
    fq_transport_t *transport;
} s_worker_state_t;

typedef struct {
    fq_sender_config_t *config;
    //  Per channel: the null kind's transport, which delivers in this actor
    fq_transport_t *inline_transports[FQ_SENDER_CHANNELS_MAX];
    s_pool_t pools[FQ_SENDER_CHANNELS_MAX]; //  Per channel
    s_worker_t *workers;                    //  Every pool's, nworkers of them
    int nworkers;
    bool welcomed;
    bool hello_pending;     //  A HELLO ask or its retry timer is under way
    int64_t unjoined_since; //  When a HELLO first found no fairqd joined, or 0
    uint64_t session;       //  Counts WELCOMEs
    bool stopping;
    zlistx_t *held;            //  s_outcome_t*, while not welcomed
    bool acks_batched;         //  fairqd's WELCOME said protocol 2 or later: ACKS
    uint64_t acks[S_ACKS_MAX]; //  Gathered for the next ACKS
    uint32_t nacks;
    uint64_t delivered, failed, malformed, unserved;
} s_self_t;

//  ---------------------------------------------------------------------
//  Configuration copies (the spawn's args)

static void s_transport_free(fq_transport_config_t *t)
{
    const char *strings[] = {t->kind, t->url,  t->username,          t->password, t->starttls,
                             t->helo, t->path, t->message_id_domain, t->ca_file,  t->command};
    for (size_t i = 0; i < sizeof strings / sizeof strings[0]; i++)
        free((char *)strings[i]);
}

static void s_config_free(void *arg)
{
    fq_sender_config_t *config = arg;
    if (!config)
        return;
    const char *strings[] = {config->dispatcher, config->name, config->version, config->max_rate};
    for (size_t i = 0; i < sizeof strings / sizeof strings[0]; i++)
        free((char *)strings[i]);
    s_transport_free(&config->transport);
    for (int i = 0; i < config->nchannels; i++) {
        free((char *)config->channels[i].name);
        s_transport_free(&config->channels[i].transport);
    }
    free(config);
}

static const char *s_dup(const char *s, bool *failed)
{
    if (!s)
        return NULL;
    char *copy = strdup(s);
    *failed |= copy == NULL;
    return copy;
}

static void s_transport_dup(fq_transport_config_t *t, const fq_transport_config_t *from,
                            bool *failed)
{
    *t = *from;
    t->kind = s_dup(from->kind, failed);
    t->url = s_dup(from->url, failed);
    t->username = s_dup(from->username, failed);
    t->password = s_dup(from->password, failed);
    t->starttls = s_dup(from->starttls, failed);
    t->helo = s_dup(from->helo, failed);
    t->path = s_dup(from->path, failed);
    t->message_id_domain = s_dup(from->message_id_domain, failed);
    t->ca_file = s_dup(from->ca_file, failed);
    t->command = s_dup(from->command, failed);
}

//  A copy of config, its channels spelled out: none given is the email
//  channel through config->transport.
static fq_sender_config_t *s_config_dup(const fq_sender_config_t *config)
{
    fq_sender_config_t *copy = calloc(1, sizeof *copy);
    if (!copy)
        return NULL;
    copy->concurrency = config->concurrency;
    bool failed = false;
    copy->dispatcher = s_dup(config->dispatcher, &failed);
    copy->name = s_dup(config->name, &failed);
    copy->version = s_dup(config->version, &failed);
    copy->max_rate = s_dup(config->max_rate, &failed);
    s_transport_dup(&copy->transport, &config->transport, &failed);
    const fq_sender_channel_t email = {FQ_CHANNEL_EMAIL, config->transport, 0};
    const fq_sender_channel_t *channels = config->nchannels > 0 ? config->channels : &email;
    copy->nchannels = config->nchannels > 0 ? config->nchannels : 1;
    for (int i = 0; i < copy->nchannels; i++) {
        copy->channels[i].name = s_dup(channels[i].name, &failed);
        s_transport_dup(&copy->channels[i].transport, &channels[i].transport, &failed);
        copy->channels[i].concurrency = fq_sender_pool_size(config, i);
    }
    if (failed) {
        s_config_free(copy);
        return NULL;
    }
    return copy;
}

//  The index of the channel a message names in config, or -1.
static int s_channel_index(const fq_sender_config_t *config, const char *channel)
{
    const char *name = channel && *channel ? channel : FQ_CHANNEL_EMAIL;
    for (int i = 0; i < config->nchannels; i++)
        if (strcmp(config->channels[i].name, name) == 0)
            return i;
    return -1;
}

//  ---------------------------------------------------------------------
//  Channels and capabilities

bool fq_sender_channel_name_valid(const char *name)
{
    return fq_channel_name_problem(name) == NULL;
}

//  The item at *at of a comma-separated list, blanks around it dropped:
//  its first character and length; *at moves past it and its comma (NULL
//  after the last).
static const char *s_list_item(const char **at, size_t *len)
{
    const char *end = *at + strcspn(*at, ",");
    const char *first = *at, *last = end;
    while (first < last && isblank((unsigned char)*first))
        first++;
    while (last > first && isblank((unsigned char)last[-1]))
        last--;
    *len = (size_t)(last - first);
    *at = *end ? end + 1 : NULL;
    return first;
}

//  How much of a text from the configuration an error quotes.
#define S_QUOTED_MAX (2 * FQ_SENDER_CHANNEL_NAME_MAX)
//  The quoted length of len characters.
#define S_QUOTED(len) ((int)((len) < S_QUOTED_MAX ? (len) : S_QUOTED_MAX))

//  The digits a pool size may have at most: more would be out of range.
#define S_SIZE_DIGITS_MAX 9

int fq_sender_channels_parse(const char *list,
                             char names[FQ_SENDER_CHANNELS_MAX][FQ_SENDER_CHANNEL_NAME_MAX + 1],
                             int *count, char *error, size_t error_size)
{
    *count = 0;
    for (const char *at = list; at;) {
        size_t len;
        const char *first = s_list_item(&at, &len);
        char name[FQ_SENDER_CHANNEL_NAME_MAX + 1];
        snprintf(name, sizeof name, "%.*s", (int)len, first);
        if (len == 0) {
            fq_error_format(error, error_size, "an empty channel name");
            return FQ_EINVAL;
        }
        if (len > FQ_SENDER_CHANNEL_NAME_MAX || !fq_sender_channel_name_valid(name)) {
            fq_error_format(error, error_size,
                            "\"%.*s\" is not a channel name (1 to %d of a-z 0-9 _ -)",
                            S_QUOTED(len), first, FQ_SENDER_CHANNEL_NAME_MAX);
            return FQ_EINVAL;
        }
        for (int i = 0; i < *count; i++)
            if (strcmp(names[i], name) == 0) {
                fq_error_format(error, error_size, "channel \"%s\" is given twice", name);
                return FQ_EINVAL;
            }
        if (*count == FQ_SENDER_CHANNELS_MAX) {
            fq_error_format(error, error_size, "more than %d channels", FQ_SENDER_CHANNELS_MAX);
            return FQ_EINVAL;
        }
        memcpy(names[(*count)++], name, len + 1);
    }
    return 0;
}

int fq_sender_pools_parse(const char *list, const char names[][FQ_SENDER_CHANNEL_NAME_MAX + 1],
                          int count, int sizes[], char *error, size_t error_size)
{
    assert(count >= 0 && count <= FQ_SENDER_CHANNELS_MAX);
    bool named[FQ_SENDER_CHANNELS_MAX] = {false};
    if (strspn(list, " \t") == strlen(list))
        return 0; //  Names none
    for (const char *at = list; at;) {
        size_t len;
        const char *pair = s_list_item(&at, &len);
        const char *colon = memchr(pair, ':', len);
        if (len == 0) {
            fq_error_format(error, error_size, "an empty item (want NAME:N, ...)");
            return FQ_EINVAL;
        }
        if (!colon || colon == pair) {
            fq_error_format(error, error_size, "\"%.*s\" is not NAME:N", S_QUOTED(len), pair);
            return FQ_EINVAL;
        }
        //  The name and the number, each without the blanks around it
        const char *name = pair, *number = colon + 1;
        size_t name_len = (size_t)(colon - pair), number_len = len - name_len - 1;
        while (name_len > 0 && isblank((unsigned char)name[name_len - 1]))
            name_len--;
        while (number_len > 0 && isblank((unsigned char)*number)) {
            number++;
            number_len--;
        }
        int channel = -1;
        for (int i = 0; i < count && channel < 0; i++)
            if (strlen(names[i]) == name_len && memcmp(names[i], name, name_len) == 0)
                channel = i;
        if (channel < 0) {
            char served[FQ_SENDER_CHANNELS_MAX * (FQ_SENDER_CHANNEL_NAME_MAX + 2)] = "";
            for (int i = 0; i < count; i++) {
                size_t used = strlen(served);
                snprintf(served + used, sizeof served - used, "%s%s", i ? ", " : "", names[i]);
            }
            fq_error_format(error, error_size,
                            "\"%.*s\" is not a channel this sender serves (channels: %s)",
                            S_QUOTED(name_len), name, served);
            return FQ_EINVAL;
        }
        if (named[channel]) {
            fq_error_format(error, error_size, "channel \"%s\" is given twice", names[channel]);
            return FQ_EINVAL;
        }
        named[channel] = true;
        if (number_len == 0 || strspn(number, "0123456789") < number_len) {
            fq_error_format(error, error_size, "%s: \"%.*s\" is not an integer", names[channel],
                            S_QUOTED(number_len), number);
            return FQ_EINVAL;
        }
        long size = number_len > S_SIZE_DIGITS_MAX ? LONG_MAX : strtol(number, NULL, 10);
        if (size < 1 || size > FQ_SENDER_WORKERS) {
            fq_error_format(error, error_size, "%s: %.*s is out of range (1..%d)", names[channel],
                            S_QUOTED(number_len), number, FQ_SENDER_WORKERS);
            return FQ_EINVAL;
        }
        sizes[channel] = (int)size;
    }
    return 0;
}

int fq_sender_pool_size(const fq_sender_config_t *config, int i)
{
    if (i < config->nchannels && config->channels[i].concurrency > 0)
        return config->channels[i].concurrency;
    return config->concurrency;
}

int fq_sender_workers(const fq_sender_config_t *config)
{
    int workers = 0;
    for (int i = 0; i < (config->nchannels > 0 ? config->nchannels : 1); i++)
        workers += fq_sender_pool_size(config, i);
    return workers;
}

int fq_sender_capabilities(const fq_sender_config_t *config, char *out, size_t size)
{
    const fq_sender_channel_t email = {FQ_CHANNEL_EMAIL, config->transport, 0};
    const fq_sender_channel_t *channels = config->nchannels > 0 ? config->channels : &email;
    int nchannels = config->nchannels > 0 ? config->nchannels : 1;
    char text[FQ_SENDER_CAPABILITIES_MAX + 1];
    size_t used = 0;
    bool fits = true;
    //  Appends one token (prefix and name), with a comma before all but the first
#define S_TOKEN(prefix, name)                                                                      \
    do {                                                                                           \
        int n =                                                                                    \
            snprintf(text + used, sizeof text - used, "%s%s%s", used ? "," : "", prefix, name);    \
        if (n < 0 || (size_t)n >= sizeof text - used)                                              \
            fits = false;                                                                          \
        else                                                                                       \
            used += (size_t)n;                                                                     \
    } while (0)
    //  The kinds, each once, in the order of the channels
    for (int i = 0; i < nchannels && fits; i++) {
        const char *kind = channels[i].transport.kind ? channels[i].transport.kind : "";
        bool seen = false;
        for (int j = 0; j < i; j++)
            seen = seen ||
                   (channels[j].transport.kind && strcmp(channels[j].transport.kind, kind) == 0);
        if (!seen && *kind)
            S_TOKEN("", kind);
    }
    if (fits)
        S_TOKEN("", FQ_SENDER_CAN_BATCH);
    for (int i = 0; i < nchannels && fits; i++)
        S_TOKEN(FQ_SENDER_CAN_CHANNEL, channels[i].name);
    if (fits && config->max_rate && *config->max_rate)
        S_TOKEN(FQ_SENDER_CAN_MAX_RATE, config->max_rate);
#undef S_TOKEN
    if (!fits || used + 1 > size)
        return FQ_ETOOBIG;
    memcpy(out, text, used + 1);
    return 0;
}

//  What a transport delivers, from a MSG (strings borrowed from it).
static fq_delivery_t s_delivery_of(const fq_message_t *message)
{
    return (fq_delivery_t){.id = message->id,
                           .tenant = message->tenant,
                           .request_id = message->request,
                           .attempt = message->attempt,
                           .to = message->to,
                           .from = message->from,
                           .subject = message->subject,
                           .body = message->body,
                           .body_is_html = message->body_is_html,
                           .text_body = message->text_body,
                           .nheaders = message->headers.count,
                           .header_names = message->headers.keys,
                           .header_values = message->headers.values,
                           .channel = message->channel,
                           .method = message->method,
                           .list_unsubscribe = message->list_unsubscribe};
}

//  ---------------------------------------------------------------------
//  A delivery worker: one message of its channel at a time, its own
//  transport (and so its own SMTP or HTTP connections, reused from
//  message to message)

static void s_worker_state_free(s_worker_state_t *state)
{
    fq_transport_destroy(&state->transport);
    free(state);
}

static bool s_is_null_kind(const fq_transport_config_t *transport)
{
    return transport->kind && strcmp(transport->kind, "null") == 0;
}

static int s_worker_start(fq_ctx_t *ctx, void *args, void **state_p)
{
    const s_worker_args_t *worker = args;
    const fq_sender_channel_t *channel = &worker->config->channels[worker->channel];
    s_worker_state_t *state = calloc(1, sizeof *state);
    if (!state)
        return FQ_ENOMEM;
    state->config = worker->config;
    state->channel = worker->channel;
    char error[S_ERROR_MAX];
    state->transport = fq_transport_new(&channel->transport, error, sizeof error);
    if (!state->transport) {
        fq_log(FQ_LOG_ERROR, "%s: channel %s: %s", fq_self(ctx), channel->name, error);
        s_worker_state_free(state);
        return FQ_EINVAL;
    }
    *state_p = state;
    return 0;
}

static int s_worker_receive(fq_ctx_t *ctx, void *state_arg, const fq_msg_t *msg)
{
    s_worker_state_t *state = state_arg;
    fq_message_t message;
    if (msg->type != FQ_MSG_MESSAGE || fq_msg_decode(msg, &fq_message_desc, &message) != 0)
        return 0;
    fq_delivery_t delivery = s_delivery_of(&message);
    char error[S_ERROR_MAX] = "";
    uint32_t retry_after_s = 0;
    fq_delivery_result_t outcome = FQ_DELIVERY_TRANSIENT;
    //  The sender actor sends a worker only messages of its channel
    if (s_channel_index(state->config, message.channel) == state->channel)
        outcome =
            fq_transport_deliver(state->transport, &delivery, &retry_after_s, error, sizeof error);
    else
        snprintf(error, sizeof error, "worker has no transport for the message's channel");
    fq_delivered_t delivered = {.id = message.id,
                                .outcome = (uint32_t)outcome,
                                .error = error,
                                .retry_after_s = retry_after_s};
    fq_tell(ctx, FQ_SENDER_PATH, &fq_delivered_desc, &delivered);
    return 0;
}

static void s_worker_stop(fq_ctx_t *ctx, void *state)
{
    (void)ctx;
    s_worker_state_free(state);
}

static const fq_behaviour_t s_worker_behaviour = {.name = "delivery worker",
                                                  .start = s_worker_start,
                                                  .receive = s_worker_receive,
                                                  .stop = s_worker_stop};

//  ---------------------------------------------------------------------
//  The sender actor

static void s_hello(fq_ctx_t *ctx, s_self_t *self);

static void s_hello_later(fq_ctx_t *ctx, s_self_t *self, int delay_ms)
{
    fq_tick_t tick = {.what = S_TICK_HELLO};
    self->hello_pending = fq_timer_once(ctx, delay_ms, &fq_tick_desc, &tick) > 0;
}

//  Grants n credit of channel (its index): CREDIT n with the channel's
//  name, "email" for mail. A fairqd that knows no channels ignores the
//  name and counts it with the rest (docs/delivery.md).
static void s_credit(fq_ctx_t *ctx, s_self_t *self, int channel, uint32_t n)
{
    if (n == 0 || !self->welcomed || self->stopping)
        return;
    fq_credit_t credit = {.n = n, .channel = self->config->channels[channel].name};
    fq_tell(ctx, self->config->dispatcher, &fq_credit_desc, &credit);
}

//  Workers busy with a message, every pool's.
static int s_busy(const s_self_t *self)
{
    int busy = 0;
    for (int i = 0; i < self->config->nchannels; i++)
        busy += self->pools[i].size - self->pools[i].idle;
    return busy;
}

//  Sends the ACKs gathered: as one ACKS, or one ACK each to a fairqd of
//  protocol 1 (a WELCOME from one came since they were gathered).
static void s_acks_flush(fq_ctx_t *ctx, s_self_t *self)
{
    if (self->nacks == 0)
        return;
    if (self->acks_batched) {
        fq_sender_acks_t acks = {.ids = {self->nacks, self->acks}};
        fq_tell(ctx, self->config->dispatcher, &fq_sender_acks_desc, &acks);
    } else
        for (uint32_t i = 0; i < self->nacks; i++) {
            fq_sender_ack_t ack = {.id = self->acks[i]};
            fq_tell(ctx, self->config->dispatcher, &fq_sender_ack_desc, &ack);
        }
    self->nacks = 0;
}

//  The NACK's deferral (FQ_DEFERRAL_*) of a failed delivery's outcome.
static uint32_t s_deferral(uint32_t outcome)
{
    if (outcome == FQ_DELIVERY_THROTTLED)
        return FQ_DEFERRAL_THROTTLED;
    if (outcome == FQ_DELIVERY_UNREACHABLE)
        return FQ_DEFERRAL_UNREACHABLE;
    return FQ_DEFERRAL_NONE;
}

//  Sends an outcome to fairqd: ACK (gathered into the next ACKS when fairqd
//  takes them), or NACK (permanent or not, with its deferral).
static void s_answer(fq_ctx_t *ctx, s_self_t *self, uint64_t id, uint32_t outcome,
                     const char *error, uint32_t retry_after_s)
{
    if (outcome == FQ_DELIVERY_OK && self->acks_batched) {
        self->acks[self->nacks++] = id;
        if (self->nacks == S_ACKS_MAX)
            s_acks_flush(ctx, self);
    } else if (outcome == FQ_DELIVERY_OK) {
        fq_sender_ack_t ack = {.id = id};
        fq_tell(ctx, self->config->dispatcher, &fq_sender_ack_desc, &ack);
    } else {
        fq_sender_nack_t nack = {.id = id,
                                 .permanent = outcome == FQ_DELIVERY_PERMANENT,
                                 .error = error,
                                 .retry_after_s = retry_after_s,
                                 .deferral = s_deferral(outcome)};
        fq_tell(ctx, self->config->dispatcher, &fq_sender_nack_desc, &nack);
    }
}

static void s_on_welcome(fq_ctx_t *ctx, void *state, int status, const fq_msg_t *reply, void *arg)
{
    (void)arg;
    s_self_t *self = state;
    fq_welcome_t welcome;
    if (status != 0 || fq_msg_decode(reply, &fq_welcome_desc, &welcome) != 0) {
        //  No fairqd joined: the gateway logs its attempts, and this would
        //  be a hundred lines a second
        bool unjoined = status == FQ_EPEER;
        int64_t now = zclock_mono();
        if (!unjoined)
            self->unjoined_since = 0;
        else if (!self->unjoined_since)
            self->unjoined_since = now;
        int delay_ms = unjoined && now - self->unjoined_since < S_HELLO_UNJOINED_FAST_MS
                           ? S_HELLO_RETRY_UNJOINED_MS
                           : S_HELLO_RETRY_MS;
        if (!unjoined)
            fq_log(FQ_LOG_DEBUG, "sender: no WELCOME from %s (%s); trying again in %d ms",
                   self->config->dispatcher, fq_strerror(status), delay_ms);
        s_hello_later(ctx, self, delay_ms);
        return;
    }
    self->hello_pending = false;
    self->welcomed = true;
    self->acks_batched = welcome.protocol >= 2;
    //  ACKs gathered before go first, as they would have, in the form this
    //  fairqd takes
    s_acks_flush(ctx, self);
    self->session++;
    self->unjoined_since = 0;
    //  Watched anew at each WELCOME: the address stays the same, but the
    //  gateway places the watch at the fairqd it joined now (after a change
    //  of leader, the new one), and forgot the old watch with the old one
    fq_watch(ctx, self->config->dispatcher);
    char granted[FQ_SENDER_CHANNELS_MAX * (FQ_SENDER_CHANNEL_NAME_MAX + S_CREDIT_SHOWN)] = "";
    for (int i = 0; i < self->config->nchannels; i++) {
        size_t used = strlen(granted);
        snprintf(granted + used, sizeof granted - used, "%s%s %d", i ? ", " : "",
                 self->config->channels[i].name, self->pools[i].idle);
    }
    fq_log(FQ_LOG_INFO, "sender: welcomed by \"%s\" (protocol %u); granting credit %s",
           welcome.system, welcome.protocol, granted);
    //  Outcomes of the time fairqd was away, then each channel's credit:
    //  its idle workers (a worker busy with a message of the old session
    //  grants its own when done, s_delivered)
    for (s_outcome_t *held = zlistx_first(self->held); held; held = zlistx_next(self->held))
        s_answer(ctx, self, held->id, held->outcome, held->error, held->retry_after_s);
    zlistx_purge(self->held);
    for (int i = 0; i < self->config->nchannels; i++)
        s_credit(ctx, self, i, (uint32_t)self->pools[i].idle);
}

static void s_hello(fq_ctx_t *ctx, s_self_t *self)
{
    if (self->stopping)
        return;
    //  fq_sender_start checked that they fit
    char capabilities[FQ_SENDER_CAPABILITIES_MAX + 1] = FQ_SENDER_CAN_BATCH;
    fq_sender_capabilities(self->config, capabilities, sizeof capabilities);
    fq_hello_t hello = {.name = self->config->name,
                        .version = self->config->version,
                        .capabilities = capabilities,
                        .concurrency = (uint32_t)fq_sender_workers(self->config)};
    self->hello_pending = true;
    if (fq_ask(ctx, self->config->dispatcher, &fq_hello_desc, &hello, S_HELLO_TIMEOUT_MS,
               s_on_welcome, NULL) != 0)
        s_hello_later(ctx, self, S_HELLO_RETRY_MS);
}

static void s_outcome_free(void **item)
{
    s_outcome_t *outcome = *item;
    if (outcome) {
        free(outcome->error);
        free(outcome);
        *item = NULL;
    }
}

//  The null kind never blocks: it delivers right here, without a worker's
//  thread in between (two thread hand-offs per message saved, which is
//  most of a null sender's work), and answers at once.
static void s_deliver_inline(fq_ctx_t *ctx, s_self_t *self, fq_transport_t *transport,
                             const fq_message_t *message)
{
    fq_delivery_t delivery = s_delivery_of(message);
    char error[S_ERROR_MAX] = "";
    uint32_t retry_after_s = 0;
    fq_delivery_result_t outcome =
        fq_transport_deliver(transport, &delivery, &retry_after_s, error, sizeof error);
    if (outcome == FQ_DELIVERY_OK)
        self->delivered++;
    else
        self->failed++;
    s_answer(ctx, self, message->id, (uint32_t)outcome, error, retry_after_s);
}

//  A message of a channel this sender does not serve: fairqd should not
//  have sent it (it routes by the HELLO's channel= tokens), so it goes
//  back at once, transient, for a sender that serves it.
static void s_unserved(fq_ctx_t *ctx, s_self_t *self, const fq_message_t *message)
{
    self->unserved++;
    self->failed++;
    const char *channel = *message->channel ? message->channel : FQ_CHANNEL_EMAIL;
    char shown[S_CHANNEL_SHOWN] = "";
    if (fq_sender_channel_name_valid(channel))
        snprintf(shown, sizeof shown, "%s", channel);
    char served[FQ_SENDER_CHANNELS_MAX * (FQ_SENDER_CHANNEL_NAME_MAX + 2)] = "";
    for (int i = 0; i < self->config->nchannels; i++) {
        size_t used = strlen(served);
        snprintf(served + used, sizeof served - used, "%s%s", i ? ", " : "",
                 self->config->channels[i].name);
    }
    char error[S_ERROR_MAX];
    if (*shown)
        snprintf(error, sizeof error, "channel \"%s\" is not served by this sender (it serves %s)",
                 shown, served);
    else
        snprintf(error, sizeof error,
                 "the message's channel is not a channel name (this sender serves %s)", served);
    //  Logged at growing intervals: a misrouting fairqd repeats itself
    if ((self->unserved & (self->unserved - 1)) == 0)
        fq_log(FQ_LOG_WARNING, "sender: %s (%llu such messages so far)", error,
               (unsigned long long)self->unserved);
    s_answer(ctx, self, message->id, FQ_DELIVERY_TRANSIENT, error, 0);
}

//  One message from fairqd, alone (MSG) or out of a MESSAGES.
static void s_take(fq_ctx_t *ctx, s_self_t *self, const fq_message_t *message)
{
    if (message->id == 0) {
        self->malformed++;
        return;
    }
    //  Even while stopping: a MSG sent before fairqd had our BYE counts on
    //  our credit, and is delivered (the drain waits for it)
    int channel = s_channel_index(self->config, message->channel);
    if (channel < 0) {
        s_unserved(ctx, self, message);
        return;
    }
    if (self->inline_transports[channel]) {
        s_deliver_inline(ctx, self, self->inline_transports[channel], message);
        return;
    }
    s_pool_t *pool = &self->pools[channel];
    int free_worker = -1;
    for (int i = pool->first; i < pool->first + pool->size && free_worker < 0; i++)
        if (self->workers[i].id == 0)
            free_worker = i;
    if (free_worker < 0) {
        //  More than the channel's credit granted (a protocol error of the
        //  other side): refused, fairqd retries it later
        char error[S_ERROR_MAX];
        snprintf(error, sizeof error, "sender has no idle worker of channel \"%s\"",
                 self->config->channels[channel].name);
        s_answer(ctx, self, message->id, FQ_DELIVERY_TRANSIENT, error, 0);
        return;
    }
    char path[sizeof FQ_SENDER_PATH "/" + S_WORKER_NAME_SIZE];
    snprintf(path, sizeof path, FQ_SENDER_PATH "/worker-%d", free_worker + 1);
    if (fq_tell(ctx, path, &fq_message_desc, message) != 0) {
        s_answer(ctx, self, message->id, FQ_DELIVERY_TRANSIENT, "sender could not start delivery",
                 0);
        return;
    }
    self->workers[free_worker].id = message->id;
    self->workers[free_worker].session = self->session;
    pool->idle--;
}

static void s_message(fq_ctx_t *ctx, s_self_t *self, const fq_msg_t *msg)
{
    fq_message_t message;
    if (fq_msg_decode(msg, &fq_message_desc, &message) != 0) {
        self->malformed++;
        return;
    }
    s_take(ctx, self, &message);
}

//  MESSAGES (protocol 2): each as its own MSG, in order.
static void s_messages(fq_ctx_t *ctx, s_self_t *self, const fq_msg_t *msg)
{
    fq_messages_t batch;
    if (fq_msg_decode(msg, &fq_messages_desc, &batch) != 0) {
        self->malformed++;
        return;
    }
    for (uint32_t i = 0; i < batch.messages.count; i++)
        s_take(ctx, self, &batch.messages.items[i]);
}

static void s_delivered(fq_ctx_t *ctx, s_self_t *self, const fq_delivered_t *delivered)
{
    s_worker_t *worker = NULL;
    for (int i = 0; i < self->nworkers && !worker; i++)
        if (self->workers[i].id == delivered->id)
            worker = &self->workers[i];
    if (!worker)
        return;
    uint64_t session = worker->session;
    int channel = worker->channel;
    worker->id = 0;
    worker->session = 0;
    self->pools[channel].idle++;
    if (delivered->outcome == FQ_DELIVERY_OK)
        self->delivered++;
    else
        self->failed++;
    if (!self->welcomed) {
        s_outcome_t *held = calloc(1, sizeof *held);
        if (held && (held->error = strdup(delivered->error)) != NULL) {
            *held = (s_outcome_t){delivered->id, delivered->outcome, held->error,
                                  delivered->retry_after_s};
            zlistx_add_end(self->held, held);
        } else
            s_outcome_free((void **)&held);
        return;
    }
    s_answer(ctx, self, delivered->id, delivered->outcome, delivered->error,
             delivered->retry_after_s);
    //  An answer restores the credit of a message of this session only;
    //  one of an older session gives its channel's back here
    if (session != self->session)
        s_credit(ctx, self, channel, 1);
}

static void s_destroy(s_self_t *self)
{
    for (int i = 0; i < FQ_SENDER_CHANNELS_MAX; i++)
        fq_transport_destroy(&self->inline_transports[i]);
    zlistx_destroy(&self->held);
    free(self->workers);
    free(self);
}

//  Spawns worker i (worker-<i + 1>) of channel's pool.
static int s_spawn_worker(fq_ctx_t *ctx, s_self_t *self, int i, int channel)
{
    self->workers[i].channel = channel;
    s_worker_args_t *worker = malloc(sizeof *worker);
    if (!worker)
        return FQ_ENOMEM;
    *worker = (s_worker_args_t){self->config, channel};
    char name[S_WORKER_NAME_SIZE];
    snprintf(name, sizeof name, "worker-%d", i + 1);
    fq_spawn_opts_t opts = fq_spawn_opts_default();
    opts.args_free = free;
    return fq_spawn(ctx, name, &s_worker_behaviour, worker, &opts);
}

static int s_start(fq_ctx_t *ctx, void *args, void **state_p)
{
    s_self_t *self = calloc(1, sizeof *self);
    if (!self)
        return FQ_ENOMEM;
    self->config = args;
    //  The pools: each channel's size is its credit; the workers, of the
    //  channels not of the null kind, numbered one after the other
    for (int i = 0; i < self->config->nchannels; i++) {
        s_pool_t *pool = &self->pools[i];
        pool->size = pool->idle = self->config->channels[i].concurrency;
        pool->first = self->nworkers;
        if (!s_is_null_kind(&self->config->channels[i].transport))
            self->nworkers += pool->size;
    }
    self->workers =
        calloc((size_t)(self->nworkers > 0 ? self->nworkers : 1), sizeof *self->workers);
    self->held = zlistx_new();
    if (!self->workers || !self->held) {
        s_destroy(self);
        return FQ_ENOMEM;
    }
    zlistx_set_destructor(self->held, s_outcome_free);
    for (int i = 0; i < self->config->nchannels; i++) {
        const fq_sender_channel_t *channel = &self->config->channels[i];
        if (!s_is_null_kind(&channel->transport))
            continue;
        char error[S_ERROR_MAX];
        self->inline_transports[i] = fq_transport_new(&channel->transport, error, sizeof error);
        if (!self->inline_transports[i]) {
            fq_log(FQ_LOG_ERROR, "sender: channel %s: %s", channel->name, error);
            s_destroy(self);
            return FQ_EINVAL;
        }
    }
    for (int channel = 0; channel < self->config->nchannels; channel++) {
        const s_pool_t *pool = &self->pools[channel];
        if (self->inline_transports[channel])
            continue; //  Delivered by this actor: no workers
        for (int i = pool->first; i < pool->first + pool->size; i++) {
            int rc = s_spawn_worker(ctx, self, i, channel);
            if (rc) {
                s_destroy(self);
                return rc;
            }
        }
    }
    *state_p = self;
    s_hello(ctx, self);
    return 0;
}

static int s_receive(fq_ctx_t *ctx, void *state, const fq_msg_t *msg)
{
    s_self_t *self = state;
    switch (msg->type) {
    case FQ_MSG_MESSAGE:
        s_message(ctx, self, msg);
        break;
    case FQ_MSG_MESSAGES:
        s_messages(ctx, self, msg);
        break;
    case FQ_MSG_DELIVERED: {
        fq_delivered_t delivered;
        if (fq_msg_decode(msg, &fq_delivered_desc, &delivered) == 0)
            s_delivered(ctx, self, &delivered);
        break;
    }
    case FQ_MSG_TERMINATED:
        //  fairqd is gone (or unreachable): its dispatcher took our
        //  messages back. Say HELLO until it answers again.
        if (self->welcomed)
            fq_log(FQ_LOG_WARNING, "sender: lost %s; saying HELLO again", self->config->dispatcher);
        self->welcomed = false;
        if (!self->hello_pending)
            s_hello(ctx, self);
        break;
    case FQ_MSG_TICK:
        self->hello_pending = false;
        if (!self->welcomed)
            s_hello(ctx, self);
        break;
    case FQ_MSG_DRAIN: {
        s_acks_flush(ctx, self); //  Before the BYE
        if (!self->stopping && self->welcomed) {
            fq_bye_t bye = {.reason = "stopping"};
            fq_tell(ctx, self->config->dispatcher, &fq_bye_desc, &bye);
        }
        self->stopping = true;
        fq_drained_t drained = {.left = (uint32_t)s_busy(self)};
        fq_reply(ctx, msg, &fq_drained_desc, &drained);
        break;
    }
    default:
        self->malformed++;
        break;
    }
    return 0;
}

static void s_stop(fq_ctx_t *ctx, void *state)
{
    s_acks_flush(ctx, state);
    s_destroy(state);
}

static void s_idle(fq_ctx_t *ctx, void *state)
{
    s_acks_flush(ctx, state);
}

static const fq_behaviour_t s_sender_behaviour = {
    .name = "sender", .start = s_start, .receive = s_receive, .stop = s_stop, .idle = s_idle};

int fq_sender_start(fq_system_t *sys, const fq_sender_config_t *config)
{
    if (config->concurrency < 1 || config->concurrency > FQ_SENDER_WORKERS ||
        config->nchannels < 0 || config->nchannels > FQ_SENDER_CHANNELS_MAX)
        return FQ_EINVAL;
    for (int i = 0; i < config->nchannels; i++)
        if (!config->channels[i].name || !fq_sender_channel_name_valid(config->channels[i].name) ||
            s_channel_index(config, config->channels[i].name) != i ||
            config->channels[i].concurrency < 0 ||
            config->channels[i].concurrency > FQ_SENDER_WORKERS)
            return FQ_EINVAL;
    char capabilities[FQ_SENDER_CAPABILITIES_MAX + 1];
    if (fq_sender_capabilities(config, capabilities, sizeof capabilities) != 0)
        return FQ_ETOOBIG;
    fq_sender_config_t *args = s_config_dup(config);
    if (!args)
        return FQ_ENOMEM;
    fq_spawn_opts_t opts = fq_spawn_opts_default();
    opts.args_free = s_config_free;
    return fq_system_spawn(sys, "sender", &s_sender_behaviour, args, &opts);
}

int fq_sender_drain(fq_system_t *sys, int timeout_ms)
{
    return fq_drain_wait(sys, FQ_SENDER_PATH, timeout_ms);
}
