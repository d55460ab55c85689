/*  fq_bench_runtime.c — throughput and latency figures of the actor runtime.

    A benchmark, not a test: it measures and prints, and exits 0 whatever
    the figures say (non-zero only when something fails). One run measures

      1. tell throughput between two actors of one system: a producer tells
         N messages to a consumer that decodes and counts each one;
      2. ask round-trip latency between two actors (p50, p99): an asker
         asks an echo, and asks again from the reply's callback;
      3. a raw ZeroMQ PUSH/PULL inproc baseline doing the same msgpack work
         per message on two plain threads, so that what the runtime adds
         shows as the ratio runtime / raw;
      4. tell throughput across the gateway: two systems in this process
         joined over loopback tcp with CURVE, a producer in one telling
         N messages to a sink in the other.

    Throughput runs from the producer's first send to the consumer having
    handled the last message (both read CLOCK_MONOTONIC, which every thread
    of the process shares). Each measurement is repeated --runs times, the
    four interleaved so that background load hits them alike; the table
    gives the best and median run, and judges the targets on the best run.

    Usage: fq_bench_runtime [--messages N] [--gateway-messages N] [--asks N]
                            [--runs R] [--quick] [--only tell,raw,ask,gateway]
*/
#include "fq_bench_util.h"
#include "fq_bench_msgs.h"
#include "fq_gateway.h"
#include "fq_log.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

//  Defaults: large enough that start-up costs and timer resolution vanish
//  into the total (about a second per run at the targets).
#define S_DEFAULT_MESSAGES         2000000
#define S_DEFAULT_GATEWAY_MESSAGES 300000
#define S_DEFAULT_ASKS             20000
#define S_DEFAULT_RUNS             3

//  --quick: a smoke run, for sanitizer builds and CI, not for figures.
#define S_QUICK_MESSAGES         20000
#define S_QUICK_GATEWAY_MESSAGES 5000
#define S_QUICK_ASKS             1000

//  Upper bound of --runs: figures are kept per run.

//  Messages sent once before measuring, so that first-use costs (socket
//  connects, route caches, zone growth, page faults) are not timed.
#define S_WARMUP_MESSAGES 10000

//  The measured message's payload: a fixed 16-byte string.
#define S_PAYLOAD      "0123456789abcdef"
#define S_PAYLOAD_SIZE (sizeof S_PAYLOAD - 1)

//  The targets the runtime is held to.
#define S_TARGET_TELL_RATE    1000000.0 //  msgs/s between two local actors
#define S_TARGET_RAW_FRACTION 0.5       //  runtime tell rate / raw rate
#define S_TARGET_GATEWAY_RATE 100000.0  //  msgs/s across the gateway

//  How long one measurement may take before it counts as failed: a fixed
//  allowance plus one second per S_SLOWEST_RATE messages, far below any
//  rate worth reporting.
#define S_DEADLINE_BASE_MS 30000
#define S_SLOWEST_RATE     10000

//  An ask unanswered this long fails the latency run.
#define S_ASK_TIMEOUT_MS 5000

//  How long the joining system may take to be welcomed by the bound one.
#define S_GATEWAY_CONNECT_MS 10000

//  Mailbox queue limit of every benchmark system, and of the raw pair's
//  sockets, so that both queue alike: the runtime's default.
#define S_MAILBOX_HWM FQ_DEFAULT_MAILBOX_HWM

//  Where the raw baseline's sockets meet.
#define S_RAW_ENDPOINT "inproc://fq-bench-raw"

#define S_NS_PER_S  1000000000u
#define S_NS_PER_US 1000u
#define S_MS_PER_S  1000

//  Fields of a runtime envelope (fq_envelope.h), which the raw baseline
//  packs too so that both move the same bytes.
enum { S_ENVELOPE_FIELDS = 6, S_BODY_FIELDS = 2 };

//  Paths of the benchmark's actors.
#define S_PRODUCER "/user/producer"
#define S_CONSUMER "/user/consumer"
#define S_ASKER    "/user/asker"
#define S_ECHO     "/user/echo"
#define S_SINK     "/user/sink"

//  What the joining system may send into the bound one: the stream, and
//  the notice that it is over.
static const fq_gateway_admit_t s_sink_admit[] = {
    {FQ_MSG_BENCH_MSG, S_SINK, FQ_ADMIT_TELL},
    {FQ_MSG_BENCH_DONE, S_SINK, FQ_ADMIT_TELL},
};
#define S_SINK_ADMIT_COUNT (sizeof s_sink_admit / sizeof s_sink_admit[0])

static uint64_t s_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * S_NS_PER_S + (uint64_t)ts.tv_nsec;
}

static int s_deadline_ms(uint64_t count)
{
    return S_DEADLINE_BASE_MS + (int)(count / S_SLOWEST_RATE) * S_MS_PER_S;
}

//  ---------------------------------------------------------------------
//  Actors

//  Producer: on BENCH_RUN, tells count BENCH_MSGs to target, then BENCH_DONE.
//  All in one handler: the benchmark wants the send path, not fairness.
static int s_producer_receive(fq_ctx_t *ctx, void *state, const fq_msg_t *msg)
{
    (void)state;
    fq_bench_run_t run;
    if (fq_msg_decode(msg, &fq_bench_run_desc, &run))
        return 0;
    fq_bench_msg_t bench = {.payload = S_PAYLOAD};
    fq_bench_done_t done = {.notify = run.notify, .start_ns = s_now_ns()};
    for (bench.seq = 0; bench.seq < run.count; bench.seq++) {
        int rc = fq_tell(ctx, run.target, &fq_bench_msg_desc, &bench);
        if (rc) {
            done.error = rc;
            break;
        }
    }
    done.sent = bench.seq;
    int rc = fq_tell(ctx, run.target, &fq_bench_done_desc, &done);
    if (rc)
        zsys_error("fq_bench_runtime: producer could not send DONE to %s: %s", run.target,
                   fq_strerror(rc));
    return 0;
}
static const fq_behaviour_t s_producer = {.name = "producer", .receive = s_producer_receive};

//  Consumer: decodes and counts each BENCH_MSG; on BENCH_DONE reports the
//  count to the notify address and starts over.
typedef struct {
    uint64_t received;
    uint64_t bad;
    uint64_t next_seq;
} s_consumer_t;

static int s_consumer_start(fq_ctx_t *ctx, void *args, void **state_p)
{
    (void)ctx;
    (void)args;
    *state_p = calloc(1, sizeof(s_consumer_t));
    return *state_p ? 0 : FQ_ENOMEM;
}

static void s_consumer_stop(fq_ctx_t *ctx, void *state)
{
    (void)ctx;
    free(state);
}

static int s_consumer_receive(fq_ctx_t *ctx, void *state, const fq_msg_t *msg)
{
    s_consumer_t *self = state;
    if (msg->type == FQ_MSG_BENCH_MSG) {
        fq_bench_msg_t bench;
        if (fq_msg_decode(msg, &fq_bench_msg_desc, &bench) || bench.seq != self->next_seq ||
            strlen(bench.payload) != S_PAYLOAD_SIZE)
            self->bad++;
        else
            self->next_seq = bench.seq + 1;
        self->received++;
        return 0;
    }
    fq_bench_done_t done;
    if (fq_msg_decode(msg, &fq_bench_done_desc, &done)) {
        self->bad++;
        return 0;
    }
    fq_bench_count_t count = {.sent = done.sent,
                              .received = self->received,
                              .bad = self->bad,
                              .error = done.error,
                              .start_ns = done.start_ns,
                              .end_ns = s_now_ns()};
    *self = (s_consumer_t){0};
    int rc = fq_tell(ctx, done.notify, &fq_bench_count_desc, &count);
    if (rc)
        zsys_error("fq_bench_runtime: consumer could not report to %s: %s", done.notify,
                   fq_strerror(rc));
    return 0;
}
static const fq_behaviour_t s_consumer = {.name = "consumer",
                                          .start = s_consumer_start,
                                          .receive = s_consumer_receive,
                                          .stop = s_consumer_stop};

//  Echo: answers each BENCH_MSG ask with the same message.
static int s_echo_receive(fq_ctx_t *ctx, void *state, const fq_msg_t *msg)
{
    (void)state;
    fq_bench_msg_t bench;
    if (fq_msg_decode(msg, &fq_bench_msg_desc, &bench))
        return 0;
    return fq_reply(ctx, msg, &fq_bench_msg_desc, &bench);
}
static const fq_behaviour_t s_echo = {.name = "echo", .receive = s_echo_receive};

//  Asker: on BENCH_RUN, asks target count times in sequence, each ask sent
//  from the previous reply's callback, and reports the latencies.
typedef struct {
    uint64_t *samples; //  Round trips in ns, one per completed ask
    uint64_t count;
    uint64_t done;
    uint64_t sent_ns;
    char target[FQ_ADDRESS_MAX + 1];
    char notify[FQ_ADDRESS_MAX + 1];
} s_asker_t;

static int s_asker_start(fq_ctx_t *ctx, void *args, void **state_p)
{
    (void)ctx;
    (void)args;
    *state_p = calloc(1, sizeof(s_asker_t));
    return *state_p ? 0 : FQ_ENOMEM;
}

static void s_asker_stop(fq_ctx_t *ctx, void *state)
{
    (void)ctx;
    s_asker_t *self = state;
    free(self->samples);
    free(self);
}

static int s_u64_compare(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a;
    uint64_t y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

//  Nearest-rank percentile of n sorted samples.
static uint64_t s_percentile(const uint64_t *sorted, uint64_t n, unsigned percent)
{
    uint64_t rank = (n * percent + 99) / 100;
    return sorted[rank ? rank - 1 : 0];
}

static void s_asker_report(fq_ctx_t *ctx, s_asker_t *self, int error)
{
    fq_bench_latency_t latency = {.count = self->done, .error = error};
    if (self->done) {
        qsort(self->samples, self->done, sizeof *self->samples, s_u64_compare);
        uint64_t total = 0;
        for (uint64_t i = 0; i < self->done; i++)
            total += self->samples[i];
        latency.p50_ns = s_percentile(self->samples, self->done, 50);
        latency.p99_ns = s_percentile(self->samples, self->done, 99);
        latency.max_ns = self->samples[self->done - 1];
        latency.mean_ns = total / self->done;
    }
    int rc = fq_tell(ctx, self->notify, &fq_bench_latency_desc, &latency);
    if (rc)
        zsys_error("fq_bench_runtime: asker could not report to %s: %s", self->notify,
                   fq_strerror(rc));
}

static void s_asker_on_reply(fq_ctx_t *ctx, void *state, int status, const fq_msg_t *reply,
                             void *arg);

static void s_asker_next(fq_ctx_t *ctx, s_asker_t *self)
{
    fq_bench_msg_t bench = {.seq = self->done, .payload = S_PAYLOAD};
    self->sent_ns = s_now_ns();
    int rc = fq_ask(ctx, self->target, &fq_bench_msg_desc, &bench, S_ASK_TIMEOUT_MS,
                    s_asker_on_reply, NULL);
    if (rc)
        s_asker_report(ctx, self, rc);
}

static void s_asker_on_reply(fq_ctx_t *ctx, void *state, int status, const fq_msg_t *reply,
                             void *arg)
{
    (void)arg;
    uint64_t now = s_now_ns();
    s_asker_t *self = state;
    fq_bench_msg_t bench;
    if (status == 0 &&
        (fq_msg_decode(reply, &fq_bench_msg_desc, &bench) || bench.seq != self->done))
        status = FQ_EDECODE;
    if (status) {
        s_asker_report(ctx, self, status);
        return;
    }
    self->samples[self->done++] = now - self->sent_ns;
    if (self->done < self->count)
        s_asker_next(ctx, self);
    else
        s_asker_report(ctx, self, 0);
}

static int s_asker_receive(fq_ctx_t *ctx, void *state, const fq_msg_t *msg)
{
    s_asker_t *self = state;
    fq_bench_run_t run;
    if (fq_msg_decode(msg, &fq_bench_run_desc, &run) || run.count == 0)
        return 0;
    free(self->samples);
    self->samples = malloc(run.count * sizeof *self->samples);
    self->count = run.count;
    self->done = 0;
    snprintf(self->target, sizeof self->target, "%s", run.target);
    snprintf(self->notify, sizeof self->notify, "%s", run.notify);
    if (!self->samples)
        s_asker_report(ctx, self, FQ_ENOMEM);
    else
        s_asker_next(ctx, self);
    return 0;
}
static const fq_behaviour_t s_asker = {
    .name = "asker", .start = s_asker_start, .receive = s_asker_receive, .stop = s_asker_stop};

//  ---------------------------------------------------------------------
//  Runtime measurements, driven from the main thread through clients

//  Has producer tell count messages to target and waits for the consumer's
//  report at listener. *rate gets msgs/s. Returns 0, or -1 after saying why.
static int s_tell_run(fq_client_t *teller, const char *producer, fq_client_t *listener,
                      const char *target, uint64_t count, double *rate)
{
    fq_bench_run_t run = {.count = count, .target = target, .notify = fq_client_address(listener)};
    int rc = fq_client_tell(teller, producer, &fq_bench_run_desc, &run);
    fq_msg_t msg;
    if (rc == 0)
        rc = fq_client_recv(listener, s_deadline_ms(count), &msg);
    fq_bench_count_t report;
    if (rc == 0)
        rc = fq_msg_decode(&msg, &fq_bench_count_desc, &report);
    if (rc) {
        fprintf(stderr, "fq_bench_runtime: tells to %s failed: %s\n", target, fq_strerror(rc));
        return -1;
    }
    if (report.error || report.sent != count || report.received != count || report.bad) {
        fprintf(stderr,
                "fq_bench_runtime: tells to %s: sent %llu of %llu (%s), received %llu, "
                "%llu bad\n",
                target, (unsigned long long)report.sent, (unsigned long long)count,
                fq_strerror((int)report.error), (unsigned long long)report.received,
                (unsigned long long)report.bad);
        return -1;
    }
    *rate = (double)count * S_NS_PER_S / (double)(report.end_ns - report.start_ns);
    return 0;
}

//  Has the asker ask the echo count times. Returns 0, or -1 after saying why.
static int s_ask_run(fq_client_t *client, uint64_t count, fq_bench_latency_t *latency)
{
    fq_bench_run_t run = {.count = count, .target = S_ECHO, .notify = fq_client_address(client)};
    int rc = fq_client_tell(client, S_ASKER, &fq_bench_run_desc, &run);
    fq_msg_t msg;
    if (rc == 0)
        rc = fq_client_recv(client, s_deadline_ms(count), &msg);
    if (rc == 0)
        rc = fq_msg_decode(&msg, &fq_bench_latency_desc, latency);
    if (rc == 0 && latency->error)
        rc = (int)latency->error;
    if (rc) {
        fprintf(stderr, "fq_bench_runtime: asks failed: %s\n", fq_strerror(rc));
        return -1;
    }
    return 0;
}

//  ---------------------------------------------------------------------
//  Raw baseline: the same bytes over a bare PUSH/PULL pair

typedef struct {
    zsock_t *push;
    zsock_t *pull;
    uint64_t count;
    uint64_t start_ns; //  Producer's first send
    uint64_t end_ns;   //  Consumer's last message
    uint64_t received;
    uint64_t bad;
    int send_errno;
    int recv_errno;
} s_raw_t;

//  Packs what a runtime envelope holds for BENCH_MSG seq (fq_envelope.h):
//  [type, flags, corr, sender, to = nil, [seq, payload]].
static int s_raw_encode(msgpack_packer *pk, uint64_t seq)
{
    int rc = msgpack_pack_array(pk, S_ENVELOPE_FIELDS);
    rc |= msgpack_pack_uint32(pk, FQ_MSG_BENCH_MSG);
    rc |= msgpack_pack_uint32(pk, 0);
    rc |= msgpack_pack_uint64(pk, 0);
    rc |= msgpack_pack_str_with_body(pk, S_PRODUCER, strlen(S_PRODUCER));
    rc |= msgpack_pack_nil(pk);
    rc |= msgpack_pack_array(pk, S_BODY_FIELDS);
    rc |= msgpack_pack_uint64(pk, seq);
    rc |= msgpack_pack_str_with_body(pk, S_PAYLOAD, S_PAYLOAD_SIZE);
    return rc;
}

static void *s_raw_producer(void *arg)
{
    s_raw_t *self = arg;
    void *push = zsock_resolve(self->push);
    msgpack_sbuffer buf;
    msgpack_sbuffer_init(&buf);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &buf, msgpack_sbuffer_write);
    self->start_ns = s_now_ns();
    for (uint64_t seq = 0; seq < self->count; seq++) {
        msgpack_sbuffer_clear(&buf);
        if (s_raw_encode(&pk, seq) || zmq_send(push, buf.data, buf.size, 0) < 0) {
            self->send_errno = errno ? errno : ENOMEM;
            break;
        }
    }
    msgpack_sbuffer_destroy(&buf);
    return NULL;
}

//  Reads the fields the runtime's consumer reads: type, body, seq, payload.
static bool s_raw_valid(const msgpack_object *root, uint64_t seq)
{
    if (root->type != MSGPACK_OBJECT_ARRAY || root->via.array.size < S_ENVELOPE_FIELDS)
        return false;
    const msgpack_object *f = root->via.array.ptr;
    const msgpack_object *body = &f[S_ENVELOPE_FIELDS - 1];
    if (f[0].type != MSGPACK_OBJECT_POSITIVE_INTEGER || f[0].via.u64 != FQ_MSG_BENCH_MSG ||
        f[3].type != MSGPACK_OBJECT_STR || body->type != MSGPACK_OBJECT_ARRAY ||
        body->via.array.size < S_BODY_FIELDS)
        return false;
    const msgpack_object *fields = body->via.array.ptr;
    return fields[0].type == MSGPACK_OBJECT_POSITIVE_INTEGER && fields[0].via.u64 == seq &&
           fields[1].type == MSGPACK_OBJECT_STR && fields[1].via.str.size == S_PAYLOAD_SIZE;
}

static void *s_raw_consumer(void *arg)
{
    s_raw_t *self = arg;
    void *pull = zsock_resolve(self->pull);
    msgpack_zone zone;
    msgpack_zone_init(&zone, MSGPACK_ZONE_CHUNK_SIZE);
    zmq_msg_t frame;
    zmq_msg_init(&frame);
    while (self->received < self->count) {
        if (zmq_msg_recv(&frame, pull, 0) < 0) {
            self->recv_errno = zmq_errno();
            break;
        }
        msgpack_zone_clear(&zone);
        msgpack_object root;
        size_t offset = 0;
        if (msgpack_unpack(zmq_msg_data(&frame), zmq_msg_size(&frame), &offset, &zone, &root) !=
                MSGPACK_UNPACK_SUCCESS ||
            !s_raw_valid(&root, self->received))
            self->bad++;
        self->received++;
    }
    self->end_ns = s_now_ns();
    zmq_msg_close(&frame);
    msgpack_zone_destroy(&zone);
    return NULL;
}

//  One raw run of count messages; *rate gets msgs/s. Returns 0 or -1.
static int s_raw_run(uint64_t count, double *rate)
{
    s_raw_t self = {.count = count};
    self.pull = zsock_new(ZMQ_PULL);
    self.push = zsock_new(ZMQ_PUSH);
    int rc = self.pull && self.push ? 0 : -1;
    if (rc == 0) {
        //  The same queue limits a runtime mailbox and its senders have
        zsock_set_rcvhwm(self.pull, S_MAILBOX_HWM);
        zsock_set_sndhwm(self.push, S_MAILBOX_HWM);
        zsock_set_rcvtimeo(self.pull, s_deadline_ms(count));
        rc = zsock_bind(self.pull, S_RAW_ENDPOINT) == 0 &&
                     zsock_connect(self.push, S_RAW_ENDPOINT) == 0
                 ? 0
                 : -1;
    }
    pthread_t consumer, producer;
    if (rc == 0 && pthread_create(&consumer, NULL, s_raw_consumer, &self) != 0)
        rc = -1;
    if (rc == 0) {
        //  Should the producer fail, the consumer ends at its receive
        //  time-out: the pull socket is its thread's alone until then
        if (pthread_create(&producer, NULL, s_raw_producer, &self) == 0)
            pthread_join(producer, NULL);
        else
            self.send_errno = EAGAIN;
        pthread_join(consumer, NULL);
    }
    zsock_destroy(&self.push);
    zsock_destroy(&self.pull);
    if (rc || self.send_errno || self.recv_errno || self.received != count || self.bad) {
        fprintf(stderr, "fq_bench_runtime: raw run failed: %llu of %llu received, %llu bad (%s)\n",
                (unsigned long long)self.received, (unsigned long long)count,
                (unsigned long long)self.bad,
                zmq_strerror(self.send_errno ? self.send_errno : self.recv_errno));
        return -1;
    }
    *rate = (double)count * S_NS_PER_S / (double)(self.end_ns - self.start_ns);
    return 0;
}

//  ---------------------------------------------------------------------
//  The systems under test

//  Measurements, as --only names them.
enum {
    S_TELL = 1,
    S_RAW = 2,
    S_ASK = 4,
    S_GATEWAY = 8,
    S_ALL = S_TELL | S_RAW | S_ASK | S_GATEWAY,
};

typedef struct {
    //  Local: producer and consumer, asker and echo, in one system
    fq_system_t *local;
    fq_client_t *client;
    //  Remote: a sink in the bound system, a producer in the joining one
    char cert_dir[64];
    char cert_path[128];
    zcert_t *server_cert;
    zcert_t *client_cert;
    fq_system_t *bound;
    fq_system_t *joining;
    fq_client_t *listener; //  In bound: hears the sink's report
    fq_client_t *teller;   //  In joining: starts its producer
    char sink[FQ_ADDRESS_MAX + 1];
} s_bench_t;

static fq_system_t *s_system_new(const char *name)
{
    return fq_system_new(&(fq_system_config_t){.name = name, .mailbox_hwm = S_MAILBOX_HWM});
}

//  A loopback tcp port free right now, or a negative errno. The kernel
//  picks it; it is closed again before the gateway binds it, a small
//  window nobody else races in a benchmark run.
static int s_free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -errno;
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = 0};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    int port = -EADDRNOTAVAIL;
    if (bind(fd, (struct sockaddr *)&addr, sizeof addr) == 0 &&
        getsockname(fd, (struct sockaddr *)&addr, &len) == 0)
        port = ntohs(addr.sin_port);
    else
        port = -errno;
    close(fd);
    return port;
}

static void s_bench_destroy(s_bench_t *self)
{
    fq_client_destroy(&self->client);
    fq_client_destroy(&self->teller);
    fq_client_destroy(&self->listener);
    fq_system_destroy(&self->local);
    fq_system_destroy(&self->joining);
    fq_system_destroy(&self->bound);
    zcert_destroy(&self->server_cert);
    zcert_destroy(&self->client_cert);
    if (self->cert_path[0])
        unlink(self->cert_path);
    if (self->cert_dir[0])
        rmdir(self->cert_dir);
}

static int s_local_setup(s_bench_t *self)
{
    self->local = s_system_new("bench");
    if (!self->local || fq_system_spawn(self->local, "consumer", &s_consumer, NULL, NULL) ||
        fq_system_spawn(self->local, "producer", &s_producer, NULL, NULL) ||
        fq_system_spawn(self->local, "echo", &s_echo, NULL, NULL) ||
        fq_system_spawn(self->local, "asker", &s_asker, NULL, NULL) ||
        !(self->client = fq_client_new(self->local))) {
        fprintf(stderr, "fq_bench_runtime: could not start the local actors\n");
        return -1;
    }
    return 0;
}

static int s_remote_setup(s_bench_t *self)
{
    //  CURVE: the bound system admits the joining one's public key only
    snprintf(self->cert_dir, sizeof self->cert_dir, "/tmp/fq-bench-XXXXXX");
    if (!mkdtemp(self->cert_dir)) {
        self->cert_dir[0] = 0;
        fprintf(stderr, "fq_bench_runtime: could not create a certificate directory: %s\n",
                strerror(errno));
        return -1;
    }
    snprintf(self->cert_path, sizeof self->cert_path, "%s/joining.cert", self->cert_dir);
    self->server_cert = zcert_new();
    self->client_cert = zcert_new();
    if (!self->server_cert || !self->client_cert ||
        zcert_save_public(self->client_cert, self->cert_path) != 0) {
        fprintf(stderr, "fq_bench_runtime: could not make CURVE certificates\n");
        return -1;
    }
    int port = s_free_port();
    if (port < 0) {
        fprintf(stderr, "fq_bench_runtime: no free loopback port: %s\n", strerror(-port));
        return -1;
    }
    //  The joining side addresses the sink by the very endpoint it
    //  connects to: that is how its gateway knows the peer
    char endpoint[64];
    snprintf(endpoint, sizeof endpoint, "tcp://127.0.0.1:%d", port);
    snprintf(self->sink, sizeof self->sink, "%s%s", endpoint, S_SINK);

    self->bound = s_system_new("bench-bound");
    self->joining = s_system_new("bench-joining");
    if (!self->bound || !self->joining ||
        fq_system_spawn(self->bound, "sink", &s_consumer, NULL, NULL) ||
        fq_system_spawn(self->joining, "producer", &s_producer, NULL, NULL) ||
        fq_gateway_start(self->bound, &(fq_gateway_config_t){.bind = endpoint,
                                                             .cert = self->server_cert,
                                                             .allow_dir = self->cert_dir,
                                                             .admit = s_sink_admit,
                                                             .admit_count = S_SINK_ADMIT_COUNT}) ||
        fq_gateway_start(self->joining, &(fq_gateway_config_t){.connect = endpoint,
                                                               .cert = self->client_cert,
                                                               .server_key = zcert_public_txt(
                                                                   self->server_cert)}) ||
        fq_gateway_wait_connected(self->joining, S_GATEWAY_CONNECT_MS) ||
        !(self->listener = fq_client_new(self->bound)) ||
        !(self->teller = fq_client_new(self->joining))) {
        fprintf(stderr, "fq_bench_runtime: could not join two systems over %s\n", endpoint);
        return -1;
    }
    return 0;
}

//  Starts the systems the chosen measurements need.
static int s_bench_setup(s_bench_t *self, int only)
{
    *self = (s_bench_t){0};
    if (only & (S_TELL | S_ASK) && s_local_setup(self))
        return -1;
    if (only & S_GATEWAY && s_remote_setup(self))
        return -1;
    return 0;
}

//  ---------------------------------------------------------------------
//  Figures

typedef struct {
    uint64_t messages;
    uint64_t gateway_messages;
    uint64_t asks;
    int runs;
    int only; //  S_* bits
} s_options_t;

typedef struct {
    double *tell; //  msgs/s, per run
    double *raw;
    double *p50; //  µs
    double *p99;
    double *gateway;
} s_figures_t;

//  Best of n: the highest rate, or the lowest latency.
static double s_best(const double *values, int n, bool higher_is_better)
{
    double best = values[0];
    for (int i = 1; i < n; i++)
        if (higher_is_better ? values[i] > best : values[i] < best)
            best = values[i];
    return best;
}

#define S_ROW_FORMAT "%-34s %11s %13s %13s  %-14s %s\n"

static void s_print_rate_row(const char *name, uint64_t n, const double *values, int runs,
                             const char *target, const char *verdict)
{
    char count[32], best[32], median[32];
    printf(S_ROW_FORMAT, name, fq_bench_grouped((double)n, count, sizeof count),
           fq_bench_grouped(s_best(values, runs, true), best, sizeof best),
           fq_bench_grouped(fq_bench_median(values, runs), median, sizeof median), target, verdict);
}

static void s_print_cpu(void)
{
    FILE *file = fopen("/proc/cpuinfo", "r");
    char line[256];
    while (file && fgets(line, sizeof line, file))
        if (strncmp(line, "model name", strlen("model name")) == 0 && strstr(line, ": ")) {
            printf("cpu:      %s", strstr(line, ": ") + 2);
            break;
        }
    if (file)
        fclose(file);
}

static void s_print_header(const s_options_t *opts)
{
    printf("fairq runtime benchmark\n");
    printf("machine:  nproc %ld\n", sysconf(_SC_NPROCESSORS_ONLN));
    s_print_cpu();
    const char *build = fq_bench_build(), *sanitizer = fq_bench_sanitizer();
    printf("build:    %s%s\n", build, sanitizer);
    //  Both frame sizes, so a reader sees the baseline moves the same bytes
    msgpack_sbuffer buf;
    msgpack_sbuffer_init(&buf);
    fq_bench_msg_t bench = {.seq = opts->messages - 1, .payload = S_PAYLOAD};
    fq_envelope_encode(&buf, FQ_MSG_BENCH_MSG, 0, 0, S_PRODUCER, NULL, &fq_bench_msg_desc, &bench,
                       NULL);
    size_t envelope_size = buf.size;
    msgpack_sbuffer_clear(&buf);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &buf, msgpack_sbuffer_write);
    s_raw_encode(&pk, opts->messages - 1);
    printf("message:  BENCH_MSG {seq, %zu-byte string}: runtime envelope %zu bytes, raw frame "
           "%zu bytes (largest seq)\n",
           S_PAYLOAD_SIZE, envelope_size, buf.size);
    msgpack_sbuffer_destroy(&buf);
    printf("mailbox:  hwm %d, for the runtime's mailboxes and the raw PUSH/PULL pair alike\n",
           S_MAILBOX_HWM);
    printf("runs:     %d of each, interleaved; best and median shown, targets judged on the "
           "best\n\n",
           opts->runs);
}

static void s_print_table(const s_options_t *opts, const s_figures_t *fig)
{
    int runs = opts->runs;
    const char *pass = "PASS", *miss = "MISS";
    printf(S_ROW_FORMAT, "measurement", "n", "best", "median", "target", "result");
    if (opts->only & S_TELL)
        s_print_rate_row("runtime tell, 2 actors (msgs/s)", opts->messages, fig->tell, runs,
                         ">= 1,000,000",
                         s_best(fig->tell, runs, true) >= S_TARGET_TELL_RATE ? pass : miss);
    if (opts->only & S_RAW)
        s_print_rate_row("raw PUSH/PULL + msgpack (msgs/s)", opts->messages, fig->raw, runs, "",
                         "");
    if ((opts->only & (S_TELL | S_RAW)) == (S_TELL | S_RAW)) {
        double best = s_best(fig->tell, runs, true) / s_best(fig->raw, runs, true);
        double median = fq_bench_median(fig->tell, runs) / fq_bench_median(fig->raw, runs);
        printf("%-34s %11s %12.1f%% %12.1f%%  %-14s %s\n", "runtime / raw", "", 100 * best,
               100 * median, ">= 50%", best >= S_TARGET_RAW_FRACTION ? pass : miss);
    }
    if (opts->only & S_ASK) {
        char count[32];
        fq_bench_grouped((double)opts->asks, count, sizeof count);
        printf("%-34s %11s %13.1f %13.1f\n", "ask round trip p50 (us)", count,
               s_best(fig->p50, runs, false), fq_bench_median(fig->p50, runs));
        printf("%-34s %11s %13.1f %13.1f\n", "ask round trip p99 (us)", count,
               s_best(fig->p99, runs, false), fq_bench_median(fig->p99, runs));
    }
    if (opts->only & S_GATEWAY)
        s_print_rate_row("gateway tell, tcp+CURVE (msgs/s)", opts->gateway_messages, fig->gateway,
                         runs, ">= 100,000",
                         s_best(fig->gateway, runs, true) >= S_TARGET_GATEWAY_RATE ? pass : miss);
}

static uint64_t s_min(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

//  Untimed first runs, so that first-use costs (socket connects, route
//  caches, zone growth, page faults) stay out of the figures.
static int s_warm_up(s_bench_t *bench, const s_options_t *opts)
{
    double rate;
    fq_bench_latency_t latency;
    int only = opts->only;
    if ((only & S_TELL && s_tell_run(bench->client, S_PRODUCER, bench->client, S_CONSUMER,
                                     s_min(S_WARMUP_MESSAGES, opts->messages), &rate)) ||
        (only & S_RAW && s_raw_run(s_min(S_WARMUP_MESSAGES, opts->messages), &rate)) ||
        (only & S_ASK &&
         s_ask_run(bench->client, s_min(S_WARMUP_MESSAGES, opts->asks), &latency)) ||
        (only & S_GATEWAY && s_tell_run(bench->teller, S_PRODUCER, bench->listener, bench->sink,
                                        s_min(S_WARMUP_MESSAGES, opts->gateway_messages), &rate)))
        return -1;
    return 0;
}

//  One run of the chosen measurements; figures go into slot run.
static int s_measure(s_bench_t *bench, const s_options_t *opts, int run, s_figures_t *fig)
{
    int only = opts->only;
    fq_bench_latency_t latency = {0};
    if ((only & S_TELL && s_tell_run(bench->client, S_PRODUCER, bench->client, S_CONSUMER,
                                     opts->messages, &fig->tell[run])) ||
        (only & S_RAW && s_raw_run(opts->messages, &fig->raw[run])) ||
        (only & S_ASK && s_ask_run(bench->client, opts->asks, &latency)) ||
        (only & S_GATEWAY && s_tell_run(bench->teller, S_PRODUCER, bench->listener, bench->sink,
                                        opts->gateway_messages, &fig->gateway[run])))
        return -1;
    fig->p50[run] = (double)latency.p50_ns / S_NS_PER_US;
    fig->p99[run] = (double)latency.p99_ns / S_NS_PER_US;

    char text[32];
    const char *sep = " ";
    printf("run %d/%d:", run + 1, opts->runs);
    if (only & S_TELL) {
        printf("%stell %s msgs/s", sep, fq_bench_grouped(fig->tell[run], text, sizeof text));
        sep = ", ";
    }
    if (only & S_RAW) {
        printf("%sraw %s msgs/s", sep, fq_bench_grouped(fig->raw[run], text, sizeof text));
        sep = ", ";
    }
    if ((only & (S_TELL | S_RAW)) == (S_TELL | S_RAW))
        printf(" (%.1f%%)", 100 * fig->tell[run] / fig->raw[run]);
    if (only & S_ASK) {
        printf("%sask p50 %.1f us p99 %.1f us max %.1f us", sep, fig->p50[run], fig->p99[run],
               (double)latency.max_ns / S_NS_PER_US);
        sep = ", ";
    }
    if (only & S_GATEWAY)
        printf("%sgateway %s msgs/s", sep, fq_bench_grouped(fig->gateway[run], text, sizeof text));
    printf("\n");
    fflush(stdout);
    return 0;
}

//  ---------------------------------------------------------------------
//  Command line

static void s_usage(FILE *out)
{
    fprintf(out,
            "usage: fq_bench_runtime [--messages N] [--gateway-messages N] [--asks N]\n"
            "                        [--runs R] [--quick] [--only LIST]\n"
            "  --messages N          tells per local throughput run (default %d)\n"
            "  --gateway-messages N  tells per gateway run (default %d)\n"
            "  --asks N              sequential asks per latency run (default %d)\n"
            "  --runs R              repetitions of each measurement (default %d, max %d)\n"
            "  --quick               small counts (%d, %d, %d): a smoke run, not figures\n"
            "  --only LIST           some of tell,raw,ask,gateway (comma-separated), for\n"
            "                        profiling one path at a time (default: all)\n",
            S_DEFAULT_MESSAGES, S_DEFAULT_GATEWAY_MESSAGES, S_DEFAULT_ASKS, S_DEFAULT_RUNS,
            FQ_BENCH_MAX_RUNS, S_QUICK_MESSAGES, S_QUICK_GATEWAY_MESSAGES, S_QUICK_ASKS);
}

//  Parses "tell,gateway" into S_* bits. Returns 0 or -1.
static int s_parse_only(const char *text, int *out)
{
    static const struct {
        const char *name;
        int bit;
    } names[] = {{"tell", S_TELL}, {"raw", S_RAW}, {"ask", S_ASK}, {"gateway", S_GATEWAY}};
    int only = 0;
    const char *item = text;
    while (*item) {
        size_t len = strcspn(item, ",");
        int bit = 0;
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
            if (strlen(names[i].name) == len && strncmp(item, names[i].name, len) == 0)
                bit = names[i].bit;
        if (!bit)
            return -1;
        only |= bit;
        item += len + (item[len] == ',');
    }
    *out = only;
    return only ? 0 : -1;
}

static int s_parse_args(int argc, char **argv, s_options_t *opts)
{
    *opts = (s_options_t){S_DEFAULT_MESSAGES, S_DEFAULT_GATEWAY_MESSAGES, S_DEFAULT_ASKS,
                          S_DEFAULT_RUNS, S_ALL};
    //  Counts beyond this would overflow the deadline arithmetic
    uint64_t max = (uint64_t)INT32_MAX / 2;
    uint64_t messages = 0, gateway_messages = 0, asks = 0, runs = 0;
    bool quick = false;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        const char *value = i + 1 < argc ? argv[i + 1] : "";
        int rc = 0;
        if (streq(arg, "--help") || streq(arg, "-h")) {
            s_usage(stdout);
            exit(0);
        }
        if (streq(arg, "--quick")) {
            quick = true;
            continue;
        }
        if (streq(arg, "--messages"))
            rc = fq_bench_parse_count(value, max, &messages);
        else if (streq(arg, "--gateway-messages"))
            rc = fq_bench_parse_count(value, max, &gateway_messages);
        else if (streq(arg, "--asks"))
            rc = fq_bench_parse_count(value, max, &asks);
        else if (streq(arg, "--runs"))
            rc = fq_bench_parse_count(value, FQ_BENCH_MAX_RUNS, &runs);
        else if (streq(arg, "--only"))
            rc = s_parse_only(value, &opts->only);
        else {
            fprintf(stderr, "fq_bench_runtime: unknown option: %s\n", arg);
            s_usage(stderr);
            return -1;
        }
        if (rc) {
            fprintf(stderr, "fq_bench_runtime: bad value for %s: '%s'\n", arg, value);
            s_usage(stderr);
            return -1;
        }
        i++; //  The value
    }
    //  --quick sets small counts; explicit counts still win
    if (quick) {
        opts->messages = S_QUICK_MESSAGES;
        opts->gateway_messages = S_QUICK_GATEWAY_MESSAGES;
        opts->asks = S_QUICK_ASKS;
    }
    if (messages)
        opts->messages = messages;
    if (gateway_messages)
        opts->gateway_messages = gateway_messages;
    if (asks)
        opts->asks = asks;
    if (runs)
        opts->runs = (int)runs;
    return 0;
}

int main(int argc, char **argv)
{
    s_options_t opts;
    if (s_parse_args(argc, argv, &opts))
        return 2;
    //  Keep stdout for the figures; the runtime's logs go to stderr
    fq_log_set_stream(stderr);
    s_print_header(&opts);

    s_figures_t fig = {
        .tell = calloc((size_t)opts.runs, sizeof(double)),
        .raw = calloc((size_t)opts.runs, sizeof(double)),
        .p50 = calloc((size_t)opts.runs, sizeof(double)),
        .p99 = calloc((size_t)opts.runs, sizeof(double)),
        .gateway = calloc((size_t)opts.runs, sizeof(double)),
    };
    s_bench_t bench;
    int rc = s_bench_setup(&bench, opts.only);
    if (rc == 0 && (!fig.tell || !fig.raw || !fig.p50 || !fig.p99 || !fig.gateway)) {
        fprintf(stderr, "fq_bench_runtime: out of memory\n");
        rc = -1;
    }
    if (rc == 0)
        rc = s_warm_up(&bench, &opts);
    for (int run = 0; rc == 0 && run < opts.runs; run++)
        rc = s_measure(&bench, &opts, run, &fig);
    if (rc == 0) {
        printf("\n");
        s_print_table(&opts, &fig);
    }
    s_bench_destroy(&bench);
    free(fig.tell);
    free(fig.raw);
    free(fig.p50);
    free(fig.p99);
    free(fig.gateway);
    return rc ? 1 : 0;
}
