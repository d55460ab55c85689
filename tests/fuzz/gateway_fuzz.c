/*  gateway_fuzz.c — libFuzzer target: frames from a peer into a live
    fairqd actor system, through its gateway, the way a fairq-sender's
    frames arrive; not only through the envelope decoder.

    Once per process (LLVMFuzzerInitialize) it starts an actor system named
    as fairqd's (the defaults of fq_fairqd_keys.h), with:

        /system/gateway     bound in insecure mode on an inproc endpoint
                            (FQ_GATEWAY_FUZZ_ENDPOINT names another, say an
                            ipc:// one, or tcp:// with a fixed port)
        /user/dispatcher    the real dispatcher (actors/fq_dispatcher.c): it
                            is the actor that peers talk to. Its database is
                            a socket directory that does not exist: the
                            connection fails at once and is retried with
                            back-off (fq_db.h), so whatever would load rows
                            holds its credit and nothing reaches a sender.
        /user/scheduler, /user/store, /user/intake, /user/reaper and
        /user/splitter-N    stand-ins, which read whatever reaches them

    and the peer: a raw DEALER socket (plain CZMQ, not the runtime), which
    says GW_HELLO and waits for GW_WELCOME as a sender's gateway does.

    An input is a series of frames, each a 2-byte big-endian prefix and that
    many bytes (fewer if the input ends first). Bit 15 of the prefix sends
    the frame as part of a multi-part message with the next one (the last
    frame of an input is always sent whole). At most S_FRAMES_MAX frames
    are sent per input; the rest is ignored. For each input the peer:

        1. says GW_HELLO again: the gateway replaces the peer, and every
           local watcher of its actors hears TERMINATED, so the dispatcher
           forgets the senders the previous input registered;
        2. sends the frames;
        3. says GW_HELLO once more (the input may have said GW_BYE) and asks
           the gateway something it refuses: its ERROR answer, which carries
           our correlation id, comes after every frame before it is handled;
        4. waits until every actor has handled what it was sent (the actors
           answer a local STATS_QUERY after what they took before it, and
           fq_system_stats counts what waits in their mailboxes);
        5. checks that the system has not failed.

    A dispatcher that received from the peer anything but the sender
    protocol (which step 1 undoes) holds state no reset clears (DRAIN makes
    it stop dispatching for good): it is then started afresh, so that each
    input meets the same system and a finding replays on its own.

    A finding is an abort(), which libFuzzer reports with its input:
    * the system failed (an escalation reached a guardian), or an actor or
      the gateway stopped answering;
    * a frame the gateway sent the peer did not decode;
    * a message from the peer reached an actor as a runtime message (STOP,
      TERMINATED, ...), with a sender that cannot be answered, or still
      addressed onwards;
    * a reply forged by the peer completed a local ask;
    * with fairqd's admission table (when fq_gateway.h and fq_messages.h
      have it, see CMakeLists.txt): a message from the peer reached any
      path but /user/dispatcher, or one the table does not admit;
    * and whatever AddressSanitizer and UndefinedBehaviorSanitizer report:
      each actor decodes every body as every message type of fq_sysmsg.def
      and fq_messages.def, as its own type the way the actors do
      (fq_msg_decode), and reads every field decoded.

    Logs are silenced; FQ_GATEWAY_FUZZ_VERBOSE=1 keeps them.

    Build and run (new inputs go to the first directory, the seeds stay):

        CC=clang cmake -S . -B build/fuzz -DFQ_FUZZ=ON -DFQ_BUILD_TESTS=OFF
        cmake --build build/fuzz --target gateway_fuzz
        mkdir -p build/fuzz/gateway_work
        build/fuzz/tests/fuzz/gateway_fuzz -max_len=4096 -max_total_time=60 \
            build/fuzz/gateway_work tests/fuzz/gateway_corpus

    The normal test suite runs it without libFuzzer: gateway_fuzz_replay.c. */
#include "gateway_fuzz.h"
#include "fq_fairqd_keys.h"
#include "fq_gateway.h"
#include "fq_log.h"
#include "fq_messages.h"
#include "fq_pipeline.h"
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

//  The endpoint the gateway binds when FQ_GATEWAY_FUZZ_ENDPOINT is unset:
//  inproc skips the kernel and ZMTP, and the gateway's code is the same.
#define S_ENDPOINT     "inproc://fairq-gateway-fuzz"
#define S_ENDPOINT_ENV "FQ_GATEWAY_FUZZ_ENDPOINT"
#define S_VERBOSE_ENV  "FQ_GATEWAY_FUZZ_VERBOSE"

//  A database that can never be reached: a unix socket directory that
//  does not exist, so a connection fails at once rather than after a
//  time-out. It names its host, so the PG* variables of a test run
//  (pg_virtualenv) cannot point it at a real server.
#define S_DATABASE "host=/nonexistent/fairq-gateway-fuzz dbname=fairq connect_timeout=1"

//  The peer: its system name, the path its messages come from, and the
//  gateway protocol version it speaks (fq_gateway.c's).
#define S_PEER_NAME    "fuzz"
#define S_PEER_PATH    "/user/sender"
#define S_PEER_VERSION 1

#define S_GATEWAY "/system/gateway"

//  Frames per input: bounds what one input can make the gateway answer,
//  far below the peer's receive high-water mark, since the peer reads only
//  once the input is sent.
#define S_FRAMES_MAX 64
//  Each frame's length prefix, and its bit that sends the frame as a part
//  of a multi-part message.
#define S_PREFIX_SIZE 2
#define S_PREFIX_MORE 0x8000u

//  How long an answer may take before the system counts as hung:
//  generous, since sanitizers slow everything down and the machine may be
//  busy with other builds.
#define S_ANSWER_TIMEOUT_MS 10000

//  The correlation ids of the peer's barrier asks (step 3) carry this tag,
//  so that an input's own asks do not end the wait by chance.
#define S_BARRIER_TAG 0xfa17000000000000ull

//  The scratch zone of the peer's decoding, and its first chunk.
#define S_ZONE_CHUNK 4096

//  ---------------------------------------------------------------------
//  What reached the actors

typedef struct {
    const char *path;
    atomic_uint_fast64_t remote; //  Messages from the peer
    atomic_uint_fast64_t local;  //  Messages from local actors
    atomic_uint_fast64_t digest; //  Sum over every field decoded (keeps the reads)
} s_target_t;

//  fairqd's actors (fq_pipeline.h); the dispatcher first. The splitters'
//  number is fairqd's default, read at start.
enum { S_DISPATCHER, S_SCHEDULER, S_STORE, S_INTAKE, S_REAPER, S_SPLITTER_FIRST };
static s_target_t s_targets[S_SPLITTER_FIRST + FQ_SPLITTERS_MAX] = {
    [S_DISPATCHER] = {.path = FQ_PATH_DISPATCHER}, [S_SCHEDULER] = {.path = FQ_PATH_SCHEDULER},
    [S_STORE] = {.path = FQ_PATH_STORE},           [S_INTAKE] = {.path = FQ_PATH_INTAKE},
    [S_REAPER] = {.path = FQ_PATH_REAPER},
};
static char s_splitter_paths[FQ_SPLITTERS_MAX][FQ_PATH_MAX + 1];

//  The process's one system and peer: libFuzzer calls the target from one
//  thread, with no handle of its own to pass.
static struct {
    fq_config_t *config;
    fq_metrics_t *metrics;
    fq_system_t *sys;
    fq_client_t *client; //  For the settling asks (step 4)
    zsock_t *peer;
    msgpack_sbuffer buf;
    msgpack_zone zone;
    size_t targets; //  Live entries of s_targets
    fq_pipeline_config_t pipeline;
    fq_behaviour_t dispatcher; //  fq_dispatcher_behaviour, its receive checked
    atomic_bool dispatcher_tainted;
    //  Per settled path (s_targets, then the gateway): its handled count
    //  once it last answered, when nothing else was waiting
    uint64_t settled[S_SPLITTER_FIRST + FQ_SPLITTERS_MAX + 1];
    uint64_t barriers;
    uint64_t client_tells; //  Messages from the peer that reached our client
} s_fuzz;

//  ---------------------------------------------------------------------
//  Findings

static void s_fail(const char *format, ...) __attribute__((format(printf, 1, 2), noreturn));
static void s_fail(const char *format, ...)
{
    va_list args;
    va_start(args, format);
    fprintf(stderr, "gateway_fuzz: ");
    vfprintf(stderr, format, args);
    fprintf(stderr, "\n");
    va_end(args);
    char reason[FQ_PATH_MAX + 320];
    if (s_fuzz.sys && fq_system_failed(s_fuzz.sys, reason, sizeof reason))
        fprintf(stderr, "gateway_fuzz: the system failed: %s\n", reason);
    fflush(stderr);
    abort();
}

//  ---------------------------------------------------------------------
//  Every message type, generated from the two schema files

//  Readers of decoded fields: every byte a decoder handed out is read, so
//  that AddressSanitizer sees a string without its NUL or a list longer
//  than its memory.
static uint64_t s_read_str(const char *s)
{
    if (!s)
        s_fail("a decoded string is NULL (fq_schema.h promises \"\" at least)");
    return strlen(s);
}

//  (No message has a BIN field today; the schema allows one.)
__attribute__((unused)) static uint64_t s_read_bin(fq_bin_t bin)
{
    uint64_t sum = 0;
    for (size_t i = 0; i < bin.size; i++)
        sum += ((const uint8_t *)bin.data)[i];
    return sum;
}

static uint64_t s_read_strmap(fq_strmap_t map)
{
    uint64_t sum = 0;
    for (uint32_t i = 0; i < map.count; i++)
        sum += s_read_str(map.keys[i]) + s_read_str(map.values[i]);
    return sum;
}

static uint64_t s_read_u64list(fq_u64list_t list)
{
    uint64_t sum = 0;
    for (uint32_t i = 0; i < list.count; i++)
        sum += list.items[i];
    return sum;
}

//  s_read_<type>: decodes msg's body as that type, the way an actor does
//  (fq_msg_decode) when any_type is false, or whatever msg's type is, and
//  reads each field. Returns the decoder's code.
#define FQ_U64(n)       digest += m.n;
#define FQ_I64(n)       digest += (uint64_t)m.n;
#define FQ_U32(n)       digest += m.n;
#define FQ_BOOL(n)      digest += m.n;
#define FQ_DOUBLE(n)    digest += m.n != m.n;
#define FQ_STR(n)       digest += s_read_str(m.n);
#define FQ_STR_OPT(n)   digest += s_read_str(m.n);
#define FQ_U32_OPT(n)   digest += m.n;
#define FQ_BIN(n)       digest += s_read_bin(m.n);
#define FQ_STRMAP(n)    digest += s_read_strmap(m.n);
#define FQ_U64LIST(n)   digest += s_read_u64list(m.n);
#define FQ_LIST(n, low) digest += m.n.count;
#define FQ_MESSAGE(UP, low, id, fields)                                                            \
    static int s_read_##low(const fq_msg_t *msg, bool any_type, uint64_t *digest_p)                \
    {                                                                                              \
        fq_##low##_t m;                                                                            \
        int rc = any_type ? fq_##low##_decode(msg->body, &m, msg->zone)                            \
                          : fq_msg_decode(msg, &fq_##low##_desc, &m);                              \
        if (rc == 0) {                                                                             \
            uint64_t digest = 0;                                                                   \
            fields *digest_p += digest;                                                            \
        }                                                                                          \
        return rc;                                                                                 \
    }
#include "fq_sysmsg.def"
#include "fq_messages.def"
#include "fq_schema_undef.h"

//  s_sample_<type>: appends an envelope of that type to buf, every field
//  set (a text, 1, true, lists of S_SAMPLE_ITEMS), for the seed corpus.
#define S_SAMPLE_TEXT  "fuzz"
#define S_SAMPLE_ITEMS 2
static const char *s_sample_keys[S_SAMPLE_ITEMS] = {"k1", "k2"};
static const char *s_sample_values[S_SAMPLE_ITEMS] = {"v1", "v2"};
static const uint64_t s_sample_ids[S_SAMPLE_ITEMS] = {1, 2};
#define FQ_U64(n)       m.n = 1;
#define FQ_I64(n)       m.n = 1;
#define FQ_U32(n)       m.n = 1;
#define FQ_BOOL(n)      m.n = true;
#define FQ_DOUBLE(n)    m.n = 1;
#define FQ_STR(n)       m.n = S_SAMPLE_TEXT;
#define FQ_STR_OPT(n)   m.n = S_SAMPLE_TEXT;
#define FQ_U32_OPT(n)   m.n = 1;
#define FQ_BIN(n)       m.n = (fq_bin_t){S_SAMPLE_TEXT, sizeof S_SAMPLE_TEXT - 1};
#define FQ_STRMAP(n)    m.n = (fq_strmap_t){S_SAMPLE_ITEMS, s_sample_keys, s_sample_values};
#define FQ_U64LIST(n)   m.n = (fq_u64list_t){S_SAMPLE_ITEMS, s_sample_ids};
#define FQ_LIST(n, low) m.n.count = 0;
#define FQ_MESSAGE(UP, low, id, fields)                                                            \
    static int s_sample_##low(msgpack_sbuffer *buf, uint32_t flags, uint64_t corr,                 \
                              const char *sender, const char *to)                                  \
    {                                                                                              \
        fq_##low##_t m = {0};                                                                      \
        fields return fq_envelope_encode(buf, (id), flags, corr, sender, to, &fq_##low##_desc, &m, \
                                         NULL);                                                    \
    }
#include "fq_sysmsg.def"
#include "fq_messages.def"
#include "fq_schema_undef.h"

typedef struct {
    const fq_msgdesc_t *desc;
    int (*read)(const fq_msg_t *msg, bool any_type, uint64_t *digest_p);
    int (*sample)(msgpack_sbuffer *buf, uint32_t flags, uint64_t corr, const char *sender,
                  const char *to);
} s_schema_t;

#define FQ_U64(n)
#define FQ_I64(n)
#define FQ_U32(n)
#define FQ_BOOL(n)
#define FQ_DOUBLE(n)
#define FQ_STR(n)
#define FQ_STR_OPT(n)
#define FQ_U32_OPT(n)
#define FQ_BIN(n)
#define FQ_STRMAP(n)
#define FQ_U64LIST(n)
#define FQ_LIST(n, low)
#define FQ_MESSAGE(UP, low, id, fields) {&fq_##low##_desc, s_read_##low, s_sample_##low},
static const s_schema_t s_schemas[] = {
#include "fq_sysmsg.def"
#include "fq_messages.def"
};
#include "fq_schema_undef.h"
#define S_SCHEMAS (sizeof s_schemas / sizeof s_schemas[0])

//  ---------------------------------------------------------------------
//  fairqd's admission table

//  What the gateway lets a peer send, and where: fairqd's own table.
#define S_ADMIT       fq_protocol_fairqd_admit
#define S_ADMIT_COUNT fq_protocol_fairqd_admit_count

//  True if the table admits type to path as what flags make it, read as
//  fq_gateway.h defines it (type 0: any application message; path NULL:
//  any path), independently of the gateway's own reading.
static bool s_admitted(uint32_t type, uint32_t flags, const char *path)
{
    unsigned kind = flags & FQ_ENV_REPLY ? FQ_ADMIT_REPLY
                    : flags & FQ_ENV_ASK ? FQ_ADMIT_ASK
                                         : FQ_ADMIT_TELL;
    for (size_t i = 0; i < S_ADMIT_COUNT; i++) {
        const fq_gateway_admit_t *row = &S_ADMIT[i];
        bool type_matches = row->type == type || (row->type == 0 && type >= FQ_MSG_USER_FIRST);
        if (type_matches && (!row->path || streq(row->path, path)) && (row->kinds & kind))
            return true;
    }
    return false;
}

//  ---------------------------------------------------------------------
//  The actors

static const char *s_type_name(uint32_t type)
{
    for (size_t i = 0; i < S_SCHEMAS; i++)
        if (s_schemas[i].desc->id == type)
            return s_schemas[i].desc->name;
    return "(unknown type)";
}

//  The sender protocol (docs/protocol.md): all the dispatcher keeps of
//  it is per sender, and goes when the peer is replaced (step 1).
static bool s_sender_protocol(uint32_t type)
{
    return type == FQ_MSG_HELLO || type == FQ_MSG_CREDIT || type == FQ_MSG_ACK ||
           type == FQ_MSG_NACK || type == FQ_MSG_BYE;
}

//  What the gateway promises of a message from a peer, once delivered.
static void s_check_remote(const s_target_t *target, const fq_msg_t *msg)
{
    const char *type = s_type_name(msg->type);
    //  The runtime obeys its own messages (STOP, TERMINATED, ...): none may
    //  come from a peer. An ERROR may, as a tell, where no table refuses it.
    if (msg->type < FQ_MSG_USER_FIRST && msg->type != FQ_MSG_ERROR)
        s_fail("the peer's runtime message %s (%u) reached %s", type, msg->type, target->path);
    char system[FQ_ADDRESS_MAX + 1];
    const char *path;
    if (fq_address_split(msg->sender, system, sizeof system, &path) != 1 ||
        strncmp(msg->sender, "fq://", strlen("fq://")) != 0 || !fq_path_valid(path))
        s_fail("the peer's %s reached %s from \"%s\", which cannot be answered", type, target->path,
               msg->sender);
    if (msg->to[0])
        s_fail("the peer's %s reached %s still addressed to \"%s\"", type, target->path, msg->to);
    if (!streq(target->path, FQ_PATH_DISPATCHER))
        s_fail("the peer's %s (flags %u) reached %s: only %s faces peers", type, msg->flags,
               target->path, FQ_PATH_DISPATCHER);
    if (!s_admitted(msg->type, msg->flags, target->path))
        s_fail("the peer's %s (flags %u) reached %s, which fairqd's admission table refuses", type,
               msg->flags, target->path);
}

//  What every actor here does first with a message: count it, check it,
//  and decode its body as every type there is.
static void s_inspect(s_target_t *target, const fq_msg_t *msg)
{
    if (msg->flags & FQ_ENV_REMOTE) {
        atomic_fetch_add(&target->remote, 1);
        s_check_remote(target, msg);
    } else
        atomic_fetch_add(&target->local, 1);
    uint64_t digest = 0;
    for (size_t i = 0; i < S_SCHEMAS; i++)
        s_schemas[i].read(msg, s_schemas[i].desc->id != msg->type, &digest);
    atomic_fetch_add_explicit(&target->digest, digest, memory_order_relaxed);
}

static int s_standin_start(fq_ctx_t *ctx, void *args, void **state_p)
{
    (void)ctx;
    *state_p = args;
    return 0;
}

//  A stand-in for one of fairqd's actors: it reads what comes, and answers
//  STATS_QUERY with its counts as the real ones do.
static int s_standin_receive(fq_ctx_t *ctx, void *state, const fq_msg_t *msg)
{
    s_target_t *target = state;
    s_inspect(target, msg);
    if (msg->type == FQ_MSG_STATS_QUERY && (msg->flags & FQ_ENV_ASK)) {
        const char *const keys[] = {"remote", "local"};
        const uint64_t values[] = {atomic_load(&target->remote), atomic_load(&target->local)};
        fq_stats_reply(ctx, msg, keys, values, sizeof keys / sizeof keys[0]);
    }
    return 0;
}

static const fq_behaviour_t s_standin = {
    .name = "stand-in", .start = s_standin_start, .receive = s_standin_receive};

//  The real dispatcher's receive, after the same inspection.
static int s_dispatcher_receive(fq_ctx_t *ctx, void *state, const fq_msg_t *msg)
{
    s_inspect(&s_targets[S_DISPATCHER], msg);
    if ((msg->flags & FQ_ENV_REMOTE) && !s_sender_protocol(msg->type))
        atomic_store(&s_fuzz.dispatcher_tainted, true);
    return fq_dispatcher_behaviour.receive(ctx, state, msg);
}

//  The name to spawn a top-level actor at path with: its last segment.
static const char *s_name_of(const char *path)
{
    return strrchr(path, '/') + 1;
}

//  fairqd's supervision: the dispatcher's failure escalates (fq_pipeline.c),
//  and so does a stand-in's, which can only fail by a bug here.
static fq_spawn_opts_t s_spawn_opts(void)
{
    fq_spawn_opts_t opts = fq_spawn_opts_default();
    opts.supervision.strategy = FQ_SUPERVISE_ESCALATE;
    return opts;
}

static int s_spawn_dispatcher(void)
{
    fq_pipeline_config_t *args = fq_pipeline_config_dup(&s_fuzz.pipeline);
    if (!args)
        return FQ_ENOMEM;
    fq_spawn_opts_t opts = s_spawn_opts();
    opts.args_free = fq_pipeline_config_free;
    return fq_system_spawn(s_fuzz.sys, s_name_of(FQ_PATH_DISPATCHER), &s_fuzz.dispatcher, args,
                           &opts);
}

//  Stops the dispatcher and starts a new one in its place.
static void s_restart_dispatcher(void)
{
    if (fq_client_stop(s_fuzz.client, FQ_PATH_DISPATCHER) != 0)
        s_fail("could not stop %s", FQ_PATH_DISPATCHER);
    int64_t deadline = zclock_mono() + S_ANSWER_TIMEOUT_MS;
    int rc;
    while ((rc = s_spawn_dispatcher()) == FQ_EEXIST && zclock_mono() < deadline)
        sched_yield(); //  The old one is still stopping
    if (rc)
        s_fail("could not start %s again: %s", FQ_PATH_DISPATCHER, fq_strerror(rc));
    atomic_store(&s_fuzz.dispatcher_tainted, false);
    s_fuzz.settled[S_DISPATCHER] = 0; //  A new actor counts from 0
}

static void s_on_escalation(fq_system_t *sys, const char *path, const char *reason, void *arg)
{
    (void)sys;
    (void)arg;
    fprintf(stderr, "gateway_fuzz: escalation from %s: %s\n", path, reason);
}

//  ---------------------------------------------------------------------
//  The peer

static void s_peer_send(const void *data, size_t size, bool more)
{
    if (zmq_send(zsock_resolve(s_fuzz.peer), data, size, more ? ZMQ_SNDMORE : 0) != (int)size)
        s_fail("the peer could not send a frame: %s", zmq_strerror(zmq_errno()));
}

static void s_peer_send_buf(void)
{
    s_peer_send(s_fuzz.buf.data, s_fuzz.buf.size, false);
    msgpack_sbuffer_clear(&s_fuzz.buf);
}

static void s_peer_hello(void)
{
    fq_gw_hello_t hello = {.system = S_PEER_NAME,
                           .version = S_PEER_VERSION,
                           .heartbeat_ms =
                               (uint32_t)fq_config_int(s_fuzz.config, FQ_FAIRQD_KEY_HEARTBEAT_MS)};
    if (fq_envelope_encode(&s_fuzz.buf, FQ_MSG_GW_HELLO, 0, 0, NULL, NULL, &fq_gw_hello_desc,
                           &hello, NULL))
        s_fail("could not encode HELLO");
    s_peer_send_buf();
}

//  Reads what the gateway sends the peer until an envelope of type (with
//  corr, unless any_corr) comes. Every frame must be a whole envelope.
static void s_peer_await(uint32_t type, uint64_t corr, bool any_corr)
{
    int64_t deadline = zclock_mono() + S_ANSWER_TIMEOUT_MS;
    zmq_msg_t frame;
    zmq_msg_init(&frame);
    while (true) {
        int64_t wait = deadline - zclock_mono();
        if (wait <= 0)
            s_fail("the gateway sent no %s with correlation id %llu within %d ms",
                   s_type_name(type), (unsigned long long)corr, S_ANSWER_TIMEOUT_MS);
        zmq_pollitem_t item = {zsock_resolve(s_fuzz.peer), 0, ZMQ_POLLIN, 0};
        if (zmq_poll(&item, 1, (long)wait) <= 0)
            continue;
        if (zmq_msg_recv(&frame, zsock_resolve(s_fuzz.peer), ZMQ_DONTWAIT) < 0)
            continue;
        if (zmq_msg_more(&frame))
            s_fail("the gateway sent the peer a multi-part message");
        fq_envelope_t env;
        msgpack_zone_clear(&s_fuzz.zone);
        if (fq_envelope_decode(zmq_msg_data(&frame), zmq_msg_size(&frame), &s_fuzz.zone, &env))
            s_fail("the gateway sent the peer a frame of %zu bytes that does not decode",
                   zmq_msg_size(&frame));
        if (env.type == type && (any_corr || env.corr == corr))
            break;
    }
    zmq_msg_close(&frame);
}

//  ---------------------------------------------------------------------
//  Settling (step 4)

//  Waits until every actor has handled everything sent to it so far,
//  including what the others sent it meanwhile. An actor answers an ask
//  only after the messages it took before it; so once its mailbox is
//  empty, an answered ask means it is done with all it was sent. When,
//  on a later look, its mailbox is still empty and it has taken nothing
//  since that ask, it is idle; the actors have settled when all are.
static void s_settle(void)
{
    int64_t deadline = zclock_mono() + S_ANSWER_TIMEOUT_MS;
    size_t count = s_fuzz.targets + 1; //  And the gateway, last
    bool quiet = false;
    while (!quiet) {
        quiet = true;
        for (size_t i = 0; i < count; i++) {
            bool gateway = i == s_fuzz.targets;
            const char *path = gateway ? S_GATEWAY : s_targets[i].path;
            fq_actor_stats_t stats;
            while (true) {
                if (fq_system_stats(s_fuzz.sys, path, &stats) != 0)
                    s_fail("%s is gone", path);
                if (stats.mailbox_depth == 0)
                    break;
                if (zclock_mono() > deadline)
                    s_fail("%s still has %llu messages waiting after %d ms", path,
                           (unsigned long long)stats.mailbox_depth, S_ANSWER_TIMEOUT_MS);
                sched_yield();
            }
            if (stats.handled == s_fuzz.settled[i])
                continue;
            quiet = false;
            fq_msg_t reply;
            int rc = gateway
                         ? fq_client_ask(s_fuzz.client, path, &fq_gw_status_query_desc,
                                         &(fq_gw_status_query_t){0}, S_ANSWER_TIMEOUT_MS, &reply)
                         : fq_client_ask(s_fuzz.client, path, &fq_stats_query_desc,
                                         &(fq_stats_query_t){0}, S_ANSWER_TIMEOUT_MS, &reply);
            if (rc)
                s_fail("%s did not answer a local ask: %s", path, fq_strerror(rc));
            if (reply.flags & FQ_ENV_REMOTE)
                s_fail("a reply from the peer completed a local ask of %s", path);
            s_fuzz.settled[i] = stats.handled + 1;
        }
    }
}

//  Takes what the peer told our client (it has an address, /temp/client-N,
//  like any other) so that it does not pile up.
static void s_drain_client(void)
{
    fq_msg_t msg;
    while (fq_client_recv(s_fuzz.client, 0, &msg) == 0) {
        if (!(msg.flags & FQ_ENV_REMOTE))
            continue;
        s_fuzz.client_tells++;
        s_fail("the peer's %s reached %s, which fairqd's admission table refuses",
               s_type_name(msg.type), fq_client_address(s_fuzz.client));
    }
}

//  Steps 3 to 5.
static void s_barrier(void)
{
    s_peer_hello();
    uint64_t corr = S_BARRIER_TAG | ++s_fuzz.barriers;
    //  A runtime message, which the gateway refuses and answers with ERROR
    if (fq_envelope_encode(&s_fuzz.buf, FQ_MSG_GW_STATUS_QUERY, FQ_ENV_ASK, corr, S_PEER_PATH,
                           S_GATEWAY, &fq_gw_status_query_desc, &(fq_gw_status_query_t){0}, NULL))
        s_fail("could not encode the barrier ask");
    s_peer_send_buf();
    s_peer_await(FQ_MSG_ERROR, corr, false);
    s_settle();
    s_drain_client();
    char reason[FQ_PATH_MAX + 320];
    if (fq_system_failed(s_fuzz.sys, reason, sizeof reason))
        s_fail("the system failed: %s", reason);
    if (atomic_load(&s_fuzz.dispatcher_tainted)) {
        s_restart_dispatcher();
        s_settle();
    }
}

//  ---------------------------------------------------------------------
//  Start and stop

static void s_teardown(void)
{
    fq_client_destroy(&s_fuzz.client);
    zsock_destroy(&s_fuzz.peer);
    fq_system_destroy(&s_fuzz.sys);
    fq_metrics_destroy(&s_fuzz.metrics);
    fq_config_destroy(&s_fuzz.config);
    msgpack_sbuffer_destroy(&s_fuzz.buf);
    msgpack_zone_destroy(&s_fuzz.zone);
}

//  The pipeline's settings as fairqd starts them with its defaults, but
//  for the database.
static void s_pipeline_config(fq_config_t *config, fq_pipeline_config_t *pipeline)
{
    *pipeline =
        (fq_pipeline_config_t){.database = S_DATABASE,
                               .name = fq_config_str(config, FQ_FAIRQD_KEY_NAME),
                               .prefetch = fq_config_int(config, FQ_FAIRQD_KEY_PREFETCH),
                               .splitters = fq_config_int(config, FQ_FAIRQD_KEY_SPLITTERS),
                               .poll_ms = fq_config_int(config, FQ_FAIRQD_KEY_POLL_MS),
                               .ack_batch = fq_config_int(config, FQ_FAIRQD_KEY_ACK_BATCH),
                               .ack_flush_ms = fq_config_int(config, FQ_FAIRQD_KEY_ACK_FLUSH_MS),
                               .retry = {fq_config_int(config, FQ_FAIRQD_KEY_RETRY_BASE_MS),
                                         fq_config_int(config, FQ_FAIRQD_KEY_RETRY_CAP_MS)},
                               .retention_s = fq_config_int(config, FQ_FAIRQD_KEY_RETENTION_S),
                               .metrics = s_fuzz.metrics};
}

static void s_start_actors(void)
{
    s_fuzz.dispatcher = fq_dispatcher_behaviour;
    s_fuzz.dispatcher.receive = s_dispatcher_receive;
    int rc = s_spawn_dispatcher();
    s_fuzz.targets = S_SPLITTER_FIRST;
    for (int i = 1; i <= s_fuzz.pipeline.splitters && i <= FQ_SPLITTERS_MAX; i++) {
        snprintf(s_splitter_paths[i - 1], sizeof s_splitter_paths[i - 1], "%s%d",
                 FQ_PATH_SPLITTER_PREFIX, i);
        s_targets[s_fuzz.targets++].path = s_splitter_paths[i - 1];
    }
    fq_spawn_opts_t opts = s_spawn_opts();
    for (size_t i = S_DISPATCHER + 1; rc == 0 && i < s_fuzz.targets; i++)
        rc = fq_system_spawn(s_fuzz.sys, s_name_of(s_targets[i].path), &s_standin, &s_targets[i],
                             &opts);
    if (rc)
        s_fail("could not start fairqd's actors: %s", fq_strerror(rc));
}

static void s_start_gateway(const char *endpoint)
{
    fq_gateway_config_t gateway = {
        .bind = endpoint,
        .insecure = true,
        .heartbeat_ms = fq_config_int(s_fuzz.config, FQ_FAIRQD_KEY_HEARTBEAT_MS),
        .heartbeat_timeout_ms = fq_config_int(s_fuzz.config, FQ_FAIRQD_KEY_HEARTBEAT_TIMEOUT_MS),
        .admit = S_ADMIT,
        .admit_count = S_ADMIT_COUNT,
    };
    if (fq_gateway_start(s_fuzz.sys, &gateway) != 0 ||
        fq_gateway_wait_connected(s_fuzz.sys, S_ANSWER_TIMEOUT_MS) != 0)
        s_fail("could not start the gateway on %s", endpoint);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    //  CZMQ's own exit handler comes first, so that ours, registered after
    //  it, runs before it: it would wait for the actors' sockets forever
    zsys_init();
    atexit(s_teardown);
    bool verbose = getenv(S_VERBOSE_ENV) != NULL;
    if (!verbose) {
        //  The runtime's lines and CZMQ's own go through fq_log: the
        //  threshold silences them all
        fq_log_set_level(FQ_LOG_FATAL);
    }
    msgpack_sbuffer_init(&s_fuzz.buf);
    msgpack_zone_init(&s_fuzz.zone, S_ZONE_CHUNK);
    s_fuzz.config = fq_config_new(&fq_fairqd_schema);
    s_fuzz.metrics = fq_metrics_new();
    if (!s_fuzz.config || !s_fuzz.metrics)
        s_fail("out of memory");
    s_pipeline_config(s_fuzz.config, &s_fuzz.pipeline);
    fq_system_config_t system = {.name = s_fuzz.pipeline.name, .on_escalation = s_on_escalation};
    s_fuzz.sys = fq_system_new(&system);
    if (!s_fuzz.sys)
        s_fail("could not start the actor system");
    const char *endpoint = getenv(S_ENDPOINT_ENV) ? getenv(S_ENDPOINT_ENV) : S_ENDPOINT;
    s_start_gateway(endpoint);
    s_start_actors();
    s_fuzz.client = fq_client_new(s_fuzz.sys);
    s_fuzz.peer = zsock_new(ZMQ_DEALER);
    if (!s_fuzz.client || !s_fuzz.peer)
        s_fail("out of memory");
    zsock_set_linger(s_fuzz.peer, 0);
    if (zsock_connect(s_fuzz.peer, "%s", endpoint) != 0)
        s_fail("the peer could not connect to %s", endpoint);
    s_peer_hello();
    s_peer_await(FQ_MSG_GW_WELCOME, 0, true);
    s_settle();
    fprintf(stderr,
            "gateway_fuzz: system \"%s\" with its gateway on %s, the real %s, %zu stand-ins; "
            "with fairqd's admission table\n",
            s_fuzz.pipeline.name, endpoint, FQ_PATH_DISPATCHER, s_fuzz.targets - 1);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    s_peer_hello();
    for (int frames = 1; size >= S_PREFIX_SIZE && frames <= S_FRAMES_MAX; frames++) {
        unsigned prefix = (unsigned)data[0] << 8 | data[1];
        size_t len = prefix & FQ_GATEWAY_FUZZ_FRAME_MAX;
        data += S_PREFIX_SIZE;
        size -= S_PREFIX_SIZE;
        if (len > size)
            len = size;
        const uint8_t *frame = data;
        data += len;
        size -= len;
        bool last = size < S_PREFIX_SIZE || frames == S_FRAMES_MAX;
        s_peer_send(frame, len, (prefix & S_PREFIX_MORE) && !last);
    }
    s_barrier();
    return 0;
}

//  ---------------------------------------------------------------------
//  Reports

size_t fq_gateway_fuzz_counts(fq_gateway_fuzz_count_t *counts, size_t max)
{
    for (size_t i = 0; i < s_fuzz.targets && i < max; i++)
        counts[i] = (fq_gateway_fuzz_count_t){.path = s_targets[i].path,
                                              .remote = atomic_load(&s_targets[i].remote),
                                              .local = atomic_load(&s_targets[i].local)};
    return s_fuzz.targets;
}

void fq_gateway_fuzz_report(FILE *out)
{
    for (size_t i = 0; i < s_fuzz.targets; i++)
        fprintf(out, "  %-18s %8llu from the peer, %8llu local\n", s_targets[i].path,
                (unsigned long long)atomic_load(&s_targets[i].remote),
                (unsigned long long)atomic_load(&s_targets[i].local));
    fprintf(out, "  %-18s %8llu from the peer\n", fq_client_address(s_fuzz.client),
            (unsigned long long)s_fuzz.client_tells);
    fq_msg_t reply;
    fq_gw_status_t status;
    if (fq_client_ask(s_fuzz.client, S_GATEWAY, &fq_gw_status_query_desc,
                      &(fq_gw_status_query_t){0}, S_ANSWER_TIMEOUT_MS, &reply) == 0 &&
        fq_msg_decode(&reply, &fq_gw_status_desc, &status) == 0)
        fprintf(out, "  %-18s %8llu frames in, %llu out, %llu malformed, %llu refused\n", S_GATEWAY,
                (unsigned long long)status.frames_in, (unsigned long long)status.frames_out,
                (unsigned long long)status.malformed, (unsigned long long)status.refused);
}

//  ---------------------------------------------------------------------
//  The seed corpus

//  The paths every message type is sent to, as tell, ask and reply, each
//  with the correlation ids below: the actors a fairqd has.
static const char *const s_seed_paths[] = {FQ_PATH_DISPATCHER, FQ_PATH_STORE, FQ_PATH_SCHEDULER,
                                           FQ_PATH_INTAKE, FQ_PATH_REAPER};
static const uint64_t s_seed_corrs[] = {0, 1, UINT64_MAX};
//  And the places a peer should not reach, once each kind, with id 1: the
//  gateway and the guardians themselves, a splitter, an actor that does
//  not exist; and, added at run time, our client and the dispatcher in the
//  spelling with its system's name.
static const char *const s_seed_elsewhere[] = {S_GATEWAY, "/user", "/system",
                                               FQ_PATH_SPLITTER_PREFIX "1", "/user/nobody"};
#define S_SEED_ELSEWHERE (sizeof s_seed_elsewhere / sizeof s_seed_elsewhere[0])

static const struct {
    const char *name;
    uint32_t flags;
} s_seed_kinds[] = {{"tell", 0}, {"ask", FQ_ENV_ASK}, {"reply", FQ_ENV_REPLY}};
#define S_SEED_KINDS (sizeof s_seed_kinds / sizeof s_seed_kinds[0])

//  Appends buf's envelope to the seed as one frame, and clears buf.
static int s_seed_frame(msgpack_sbuffer *seed, msgpack_sbuffer *buf)
{
    if (buf->size > FQ_GATEWAY_FUZZ_FRAME_MAX)
        return -1;
    uint8_t prefix[S_PREFIX_SIZE] = {(uint8_t)(buf->size >> 8), (uint8_t)buf->size};
    msgpack_sbuffer_write(seed, (const char *)prefix, sizeof prefix);
    msgpack_sbuffer_write(seed, buf->data, buf->size);
    msgpack_sbuffer_clear(buf);
    return 0;
}

static int s_seed_write(const char *dir, const char *name, msgpack_sbuffer *seed)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *file = fopen(path, "wb");
    bool ok = file && fwrite(seed->data, 1, seed->size, file) == seed->size;
    if (file && fclose(file) != 0)
        ok = false;
    msgpack_sbuffer_clear(seed);
    if (!ok) {
        fprintf(stderr, "gateway_fuzz: could not write %s: %s\n", path, strerror(errno));
        return -1;
    }
    return 0;
}

//  A file name's word for a path: its last segment ("dispatcher"), or its
//  whole text with '/' and ':' as '_' where that is ambiguous.
static void s_seed_path_word(const char *path, char *word, size_t size)
{
    snprintf(word, size, "%s", path);
    for (char *c = word; *c; c++)
        if (*c == '/' || *c == ':')
            *c = '_';
}

//  A session: the frames a fairq-sender sends in its life, and a few that
//  play with the gateway's own messages, each in one input.
typedef struct {
    uint32_t flags;
    uint64_t corr;
    const char *to; //  NULL: a gateway control frame
    const fq_msgdesc_t *desc;
    const void *msg;
} s_step_t;

static int s_seed_session(const char *dir, const char *name, const s_step_t *steps, size_t count,
                          msgpack_sbuffer *seed, msgpack_sbuffer *buf)
{
    for (size_t i = 0; i < count; i++)
        if (fq_envelope_encode(buf, steps[i].desc->id, steps[i].flags, steps[i].corr,
                               steps[i].to ? S_PEER_PATH : NULL, steps[i].to, steps[i].desc,
                               steps[i].msg, NULL) ||
            s_seed_frame(seed, buf))
            return -1;
    return s_seed_write(dir, name, seed);
}

static int s_seed_sessions(const char *dir, msgpack_sbuffer *seed, msgpack_sbuffer *buf)
{
    const char *d = FQ_PATH_DISPATCHER;
    fq_hello_t hello = {
        .name = "sender-a", .version = "1", .capabilities = "smtp,file", .concurrency = 4};
    fq_credit_t credit = {.n = 4};
    fq_sender_ack_t ack = {.id = 1};
    fq_sender_nack_t nack = {.id = 2, .permanent = false, .error = "451 try again later"};
    fq_bye_t bye = {.reason = "stopping"};
    const s_step_t sender[] = {
        {FQ_ENV_ASK, 1, d, &fq_hello_desc, &hello},
        {0, 0, d, &fq_credit_desc, &credit},
        {0, 0, d, &fq_sender_ack_desc, &ack},
        {0, 0, d, &fq_sender_nack_desc, &nack},
        {FQ_ENV_ASK, 2, d, &fq_stats_query_desc, &(fq_stats_query_t){0}},
        {0, 0, d, &fq_bye_desc, &bye},
    };
    fq_gw_watch_t watch = {.path = d};
    fq_gw_watch_t watch_nobody = {.path = "/user/nobody"};
    fq_gw_terminated_t gone = {.path = S_PEER_PATH, .failed = true, .reason = "crashed"};
    const s_step_t watches[] = {
        {FQ_ENV_ASK, 1, d, &fq_hello_desc, &hello},
        {0, 0, NULL, &fq_gw_watch_desc, &watch},
        {0, 0, NULL, &fq_gw_watch_desc, &watch_nobody},
        {0, 0, NULL, &fq_gw_heartbeat_desc, &(fq_gw_heartbeat_t){0}},
        {0, 0, NULL, &fq_gw_terminated_desc, &gone},
        {0, 0, d, &fq_credit_desc, &credit},
    };
    fq_gw_hello_t rename = {
        .system = "other", .version = S_PEER_VERSION, .heartbeat_ms = FQ_GATEWAY_HEARTBEAT_MS};
    fq_gw_bye_t gw_bye = {.reason = "leaving"};
    const s_step_t renamed[] = {
        {FQ_ENV_ASK, 1, d, &fq_hello_desc, &hello}, {0, 0, NULL, &fq_gw_hello_desc, &rename},
        {FQ_ENV_ASK, 2, d, &fq_hello_desc, &hello}, {0, 0, d, &fq_credit_desc, &credit},
        {0, 0, NULL, &fq_gw_bye_desc, &gw_bye},     {0, 0, d, &fq_credit_desc, &credit},
    };
    fq_dispatch_t dispatch = {.messages = {S_SAMPLE_ITEMS, s_sample_ids},
                              .requests = {S_SAMPLE_ITEMS, s_sample_ids},
                              .tenants = {S_SAMPLE_ITEMS, s_sample_ids}};
    fq_drain_t drain = {.timeout_ms = 1};
    fq_tick_t tick = {.what = FQ_TICK_RETRY};
    const s_step_t inside[] = {
        {FQ_ENV_ASK, 1, d, &fq_hello_desc, &hello}, {0, 0, d, &fq_credit_desc, &credit},
        {0, 0, d, &fq_dispatch_desc, &dispatch},    {0, 0, d, &fq_tick_desc, &tick},
        {FQ_ENV_ASK, 2, d, &fq_drain_desc, &drain}, {0, 0, d, &fq_credit_desc, &credit},
    };
    struct {
        const char *name;
        const s_step_t *steps;
        size_t count;
    } sessions[] = {{"session-sender", sender, sizeof sender / sizeof sender[0]},
                    {"session-watch", watches, sizeof watches / sizeof watches[0]},
                    {"session-renamed", renamed, sizeof renamed / sizeof renamed[0]},
                    {"session-inside", inside, sizeof inside / sizeof inside[0]}};
    int written = 0;
    for (size_t i = 0; i < sizeof sessions / sizeof sessions[0]; i++, written++)
        if (s_seed_session(dir, sessions[i].name, sessions[i].steps, sessions[i].count, seed, buf))
            return -1;
    return written;
}

int fq_gateway_fuzz_write_seeds(const char *dir)
{
    msgpack_sbuffer seed, buf;
    msgpack_sbuffer_init(&seed);
    msgpack_sbuffer_init(&buf);
    int written = 0;
    char name[PATH_MAX], word[FQ_ADDRESS_MAX + 1];
    for (size_t t = 0; t < S_SCHEMAS && written >= 0; t++) {
        const s_schema_t *schema = &s_schemas[t];
        //  Every fairqd actor: each kind, each correlation id
        for (size_t p = 0; p < sizeof s_seed_paths / sizeof s_seed_paths[0] && written >= 0; p++)
            for (size_t k = 0; k < S_SEED_KINDS && written >= 0; k++) {
                for (size_t c = 0; c < sizeof s_seed_corrs / sizeof s_seed_corrs[0]; c++)
                    if (schema->sample(&buf, s_seed_kinds[k].flags, s_seed_corrs[c], S_PEER_PATH,
                                       s_seed_paths[p]) ||
                        s_seed_frame(&seed, &buf))
                        written = -1;
                snprintf(name, sizeof name, "%s-%s-%s", s_seed_kinds[k].name, schema->desc->name,
                         s_name_of(s_seed_paths[p]));
                if (written >= 0)
                    written = s_seed_write(dir, name, &seed) ? -1 : written + 1;
            }
        //  Elsewhere: each kind once
        char qualified[FQ_ADDRESS_MAX + 1];
        snprintf(qualified, sizeof qualified, "fq://%s%s", s_fuzz.pipeline.name,
                 FQ_PATH_DISPATCHER);
        const char *elsewhere[S_SEED_ELSEWHERE + 2] = {fq_client_address(s_fuzz.client), qualified};
        memcpy(elsewhere + 2, s_seed_elsewhere, sizeof s_seed_elsewhere);
        for (size_t p = 0; p < sizeof elsewhere / sizeof elsewhere[0] && written >= 0; p++) {
            for (size_t k = 0; k < S_SEED_KINDS; k++)
                if (schema->sample(&buf, s_seed_kinds[k].flags, 1, S_PEER_PATH, elsewhere[p]) ||
                    s_seed_frame(&seed, &buf))
                    written = -1;
            s_seed_path_word(elsewhere[p], word, sizeof word);
            snprintf(name, sizeof name, "any-%s-%s", schema->desc->name, word);
            if (written >= 0)
                written = s_seed_write(dir, name, &seed) ? -1 : written + 1;
        }
    }
    int sessions = written >= 0 ? s_seed_sessions(dir, &seed, &buf) : -1;
    msgpack_sbuffer_destroy(&seed);
    msgpack_sbuffer_destroy(&buf);
    if (written < 0 || sessions < 0) {
        fprintf(stderr, "gateway_fuzz: could not write the seeds in %s\n", dir);
        return -1;
    }
    return written + sessions;
}
