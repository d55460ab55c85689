/*  actor_messaging_test.c — tell, ask, replies, time-outs, addressing errors
    and spawn name rules, between actors and from clients. */
#include "fq_system.h"
#include "fq_test_msgs.h"
#include <stdarg.h>
#include <setjmp.h>
#include <cmocka.h>
#include "fq_test_support.h"

//  Time-out of the asks that are meant to time out.
#define S_ASK_TIMEOUT_MS 100

//  Time-out of the asks that are meant to succeed.
#define S_ASK_OK_MS FQ_TEST_WAIT_MS

//  How long the slow actor takes to answer: well past S_ASK_TIMEOUT_MS.
#define S_SLOW_REPLY_MS 300

//  Messages in the ordering test: the size of a default mailbox.
#define S_BURST_COUNT 10000

//  ---------------------------------------------------------------------
//  Behaviours

//  Answers a PING with a PONG of seq + 1: as a reply when asked, else as a
//  plain tell back to the sender.
static int s_echo_receive(fq_ctx_t *ctx, void *state, const fq_msg_t *msg)
{
    (void)state;
    fq_ping_t ping;
    if (fq_msg_decode(msg, &fq_ping_desc, &ping))
        return 0;
    fq_pong_t pong = {.seq = ping.seq + 1, .text = ping.text};
    if (msg->flags & FQ_ENV_ASK)
        return fq_reply(ctx, msg, &fq_pong_desc, &pong);
    return fq_tell(ctx, msg->sender, &fq_pong_desc, &pong);
}
static const fq_behaviour_t s_echo = {.name = "echo", .receive = s_echo_receive};

//  Takes every message and never answers.
static int s_sink_receive(fq_ctx_t *ctx, void *state, const fq_msg_t *msg)
{
    (void)ctx;
    (void)state;
    (void)msg;
    return 0;
}
static const fq_behaviour_t s_sink = {.name = "sink", .receive = s_sink_receive};

//  An echo that takes S_SLOW_REPLY_MS to answer.
static int s_slow_receive(fq_ctx_t *ctx, void *state, const fq_msg_t *msg)
{
    zclock_sleep(S_SLOW_REPLY_MS);
    return s_echo_receive(ctx, state, msg);
}
static const fq_behaviour_t s_slow = {.name = "slow", .receive = s_slow_receive};

//  Answers every ask with an ERROR saying there is no such actor.
static int s_refuser_receive(fq_ctx_t *ctx, void *state, const fq_msg_t *msg)
{
    (void)state;
    fq_error_t error = {.code = FQ_ENOACTOR, .text = "no such job"};
    return fq_reply(ctx, msg, &fq_error_desc, &error);
}
static const fq_behaviour_t s_refuser = {.name = "refuser", .receive = s_refuser_receive};

//  The asker: on ASK_VIA it asks another actor a PING and tells the
//  outcome as a RESULT to its args, the address of the test's client.
//  A CRASH makes it fail (its parent restarts it).
static void s_asker_on_reply(fq_ctx_t *ctx, void *state, int status, const fq_msg_t *reply,
                             void *arg)
{
    (void)arg;
    if (status == FQ_ECLOSED)
        return; //  The asker is stopping: nobody to report to any more
    const char *report_to = state;
    fq_result_t result = {.status = status, .text = ""};
    fq_pong_t pong;
    if (status == 0 && fq_msg_decode(reply, &fq_pong_desc, &pong) == 0) {
        result.value = pong.seq;
        result.text = pong.text;
    }
    fq_tell(ctx, report_to, &fq_result_desc, &result);
}

static int s_asker_start(fq_ctx_t *ctx, void *args, void **state_p)
{
    (void)ctx;
    *state_p = args;
    return 0;
}

static int s_asker_receive(fq_ctx_t *ctx, void *state, const fq_msg_t *msg)
{
    if (msg->type == FQ_MSG_CRASH)
        return FQ_EFAILED;
    fq_ask_via_t via;
    if (fq_msg_decode(msg, &fq_ask_via_desc, &via))
        return 0;
    fq_ping_t ping = {.seq = via.seq, .text = "via"};
    int rc = fq_ask(ctx, via.to, &fq_ping_desc, &ping, (int)via.timeout_ms, s_asker_on_reply, NULL);
    if (rc) {
        //  No callback follows a failed send: report it here
        fq_result_t result = {.status = rc, .text = "send failed"};
        fq_tell(ctx, state, &fq_result_desc, &result);
    }
    return 0;
}
static const fq_behaviour_t s_asker = {
    .name = "asker", .start = s_asker_start, .receive = s_asker_receive};

//  On BURST, tells seq 1..count to the target, then tells the sender how
//  many went.
static int s_burster_receive(fq_ctx_t *ctx, void *state, const fq_msg_t *msg)
{
    (void)state;
    fq_burst_t burst;
    if (fq_msg_decode(msg, &fq_burst_desc, &burst))
        return 0;
    fq_result_t result = {.text = ""};
    for (uint64_t seq = 1; seq <= burst.count && result.status == 0; seq++) {
        fq_ping_t ping = {.seq = seq, .text = ""};
        result.status = fq_tell(ctx, burst.to, &fq_ping_desc, &ping);
        if (result.status == 0)
            result.value = seq;
    }
    return fq_tell(ctx, msg->sender, &fq_result_desc, &result);
}
static const fq_behaviour_t s_burster = {.name = "burster", .receive = s_burster_receive};

//  The orderly receiver checks that PING seqs come as 1, 2, 3, ... and,
//  after args->expect of them, tells a RESULT to args->report_to: status
//  0 if all came in order, with the first gap in text otherwise.
typedef struct {
    const char *report_to;
    uint64_t expect;
} s_orderly_args_t;

typedef struct {
    const s_orderly_args_t *args;
    uint64_t received;
    bool disordered;
    char first_gap[64];
} s_orderly_t;

static int s_orderly_start(fq_ctx_t *ctx, void *args, void **state_p)
{
    (void)ctx;
    s_orderly_t *self = calloc(1, sizeof *self);
    if (!self)
        return FQ_ENOMEM;
    self->args = args;
    *state_p = self;
    return 0;
}

static int s_orderly_receive(fq_ctx_t *ctx, void *state, const fq_msg_t *msg)
{
    s_orderly_t *self = state;
    fq_ping_t ping;
    if (fq_msg_decode(msg, &fq_ping_desc, &ping))
        return 0;
    if (ping.seq != self->received + 1 && !self->disordered) {
        self->disordered = true;
        snprintf(self->first_gap, sizeof self->first_gap, "expected %llu, got %llu",
                 (unsigned long long)self->received + 1, (unsigned long long)ping.seq);
    }
    if (++self->received == self->args->expect) {
        fq_result_t result = {.status = self->disordered ? FQ_EFAILED : 0,
                              .value = self->received,
                              .text = self->first_gap};
        return fq_tell(ctx, self->args->report_to, &fq_result_desc, &result);
    }
    return 0;
}

static void s_orderly_stop(fq_ctx_t *ctx, void *state)
{
    (void)ctx;
    free(state);
}
static const fq_behaviour_t s_orderly = {.name = "orderly",
                                         .start = s_orderly_start,
                                         .receive = s_orderly_receive,
                                         .stop = s_orderly_stop};

//  On PING, spawns an echo child named by the PING's text (its args a
//  heap string the runtime must free) and replies RESULT with fq_spawn's
//  return code.
static int s_spawner_receive(fq_ctx_t *ctx, void *state, const fq_msg_t *msg)
{
    (void)state;
    fq_ping_t ping;
    if (fq_msg_decode(msg, &fq_ping_desc, &ping))
        return 0;
    fq_spawn_opts_t opts = fq_spawn_opts_default();
    opts.args_free = free;
    fq_result_t result = {.text = ping.text};
    result.status = fq_spawn(ctx, ping.text, &s_echo, strdup(ping.text), &opts);
    return fq_reply(ctx, msg, &fq_result_desc, &result);
}
static const fq_behaviour_t s_spawner = {.name = "spawner", .receive = s_spawner_receive};

//  ---------------------------------------------------------------------
//  Fixture: a system and a client, fresh for each test

//  Memory shared with actors lives here, not on a test's stack: actors
//  still running at teardown may use it until the system is destroyed.
typedef struct {
    fq_system_t *sys;
    fq_client_t *client;
    s_orderly_args_t orderly;
} s_fixture_t;

static int s_setup(void **state)
{
    s_fixture_t *fx = calloc(1, sizeof *fx);
    fq_system_config_t cfg = {.name = "messaging"};
    fx->sys = fq_system_new(&cfg);
    fx->client = fx->sys ? fq_client_new(fx->sys) : NULL;
    *state = fx;
    return fx->client ? 0 : -1;
}

static int s_teardown(void **state)
{
    s_fixture_t *fx = *state;
    fq_client_destroy(&fx->client);
    fq_system_destroy(&fx->sys);
    free(fx);
    return 0;
}

//  Has /user/asker ask the actor at to a PING; returns the RESULT it reports.
static fq_result_t s_ask_via(s_fixture_t *fx, const char *to, int timeout_ms, uint64_t seq)
{
    fq_ask_via_t via = {.to = to, .timeout_ms = timeout_ms, .seq = seq};
    assert_int_equal(fq_client_tell(fx->client, "/user/asker", &fq_ask_via_desc, &via), 0);
    fq_msg_t msg;
    fq_test_expect(fx->client, FQ_MSG_RESULT, &msg);
    fq_result_t result;
    assert_int_equal(fq_msg_decode(&msg, &fq_result_desc, &result), 0);
    return result;
}

static void s_spawn_asker(s_fixture_t *fx)
{
    //  The asker reports to the client; the address lives as long as it
    void *report_to = (void *)fq_client_address(fx->client);
    assert_int_equal(fq_system_spawn(fx->sys, "asker", &s_asker, report_to, NULL), 0);
}

//  ---------------------------------------------------------------------
//  Tests

static void test_tell_keeps_order_from_one_sender(void **state)
{
    s_fixture_t *fx = *state;
    fx->orderly =
        (s_orderly_args_t){.report_to = fq_client_address(fx->client), .expect = S_BURST_COUNT};
    assert_int_equal(fq_system_spawn(fx->sys, "receiver", &s_orderly, &fx->orderly, NULL), 0);
    assert_int_equal(fq_system_spawn(fx->sys, "burster", &s_burster, NULL, NULL), 0);

    //  Two RESULTs follow, in either order: the burster's and the receiver's
    fq_burst_t burst = {.to = "/user/receiver", .count = S_BURST_COUNT};
    assert_int_equal(fq_client_tell(fx->client, "/user/burster", &fq_burst_desc, &burst), 0);
    for (int i = 0; i < 2; i++) {
        fq_msg_t msg;
        if (fq_client_recv(fx->client, FQ_TEST_WAIT_MS, &msg) != 0) {
            fq_actor_stats_t stats = fq_test_stats(fx->sys, "/user/receiver");
            fail_msg("no report %d: the receiver handled %llu, %llu queued, %llu failures", i,
                     (unsigned long long)stats.handled, (unsigned long long)stats.mailbox_depth,
                     (unsigned long long)stats.failures);
        }
        fq_result_t result;
        assert_int_equal(fq_msg_decode(&msg, &fq_result_desc, &result), 0);
        if (streq(msg.sender, "/user/burster")) {
            //  Every tell was accepted: none refused or dropped on a full mailbox
            assert_int_equal(result.status, 0);
            assert_int_equal(result.value, S_BURST_COUNT);
            continue;
        }
        assert_string_equal(msg.sender, "/user/receiver");
        //  All 10,000 arrived, in the order they were sent
        if (result.status != 0)
            fail_msg("messages out of order: %s", result.text);
        assert_int_equal(result.value, S_BURST_COUNT);
    }
}

static void test_ask_between_actors_gets_reply(void **state)
{
    s_fixture_t *fx = *state;
    s_spawn_asker(fx);
    assert_int_equal(fq_system_spawn(fx->sys, "echo", &s_echo, NULL, NULL), 0);

    fq_result_t result = s_ask_via(fx, "/user/echo", S_ASK_OK_MS, 41);
    //  The asker's callback got the echo's reply to its own request
    assert_int_equal(result.status, 0);
    assert_int_equal(result.value, 42);
    assert_string_equal(result.text, "via");
}

static void test_ask_from_actor_times_out(void **state)
{
    s_fixture_t *fx = *state;
    s_spawn_asker(fx);
    assert_int_equal(fq_system_spawn(fx->sys, "sink", &s_sink, NULL, NULL), 0);

    int64_t started = zclock_mono();
    fq_result_t result = s_ask_via(fx, "/user/sink", S_ASK_TIMEOUT_MS, 1);
    int64_t elapsed = zclock_mono() - started;
    //  An unanswered ask ends in FQ_ETIMEDOUT, not in a hang
    assert_int_equal(result.status, FQ_ETIMEDOUT);
    //  ... and not before its time-out
    assert_true(elapsed >= S_ASK_TIMEOUT_MS);
    assert_true(elapsed < S_ASK_TIMEOUT_MS + FQ_TEST_WAIT_MS);
}

static void test_client_ask_times_out(void **state)
{
    s_fixture_t *fx = *state;
    assert_int_equal(fq_system_spawn(fx->sys, "sink", &s_sink, NULL, NULL), 0);

    fq_ping_t ping = {.seq = 1, .text = "anyone?"};
    fq_msg_t reply;
    int64_t started = zclock_mono();
    int rc =
        fq_client_ask(fx->client, "/user/sink", &fq_ping_desc, &ping, S_ASK_TIMEOUT_MS, &reply);
    int64_t elapsed = zclock_mono() - started;
    //  A blocking ask returns FQ_ETIMEDOUT once its time-out has passed
    assert_int_equal(rc, FQ_ETIMEDOUT);
    assert_true(elapsed >= S_ASK_TIMEOUT_MS);
    assert_true(elapsed < S_ASK_TIMEOUT_MS + FQ_TEST_WAIT_MS);
}

static void test_error_reply_surfaces_its_code(void **state)
{
    s_fixture_t *fx = *state;
    s_spawn_asker(fx);
    assert_int_equal(fq_system_spawn(fx->sys, "refuser", &s_refuser, NULL, NULL), 0);

    fq_ping_t ping = {.seq = 1, .text = "job 7"};
    fq_msg_t reply;
    //  A client's ask returns the code the ERROR reply carries
    assert_int_equal(
        fq_client_ask(fx->client, "/user/refuser", &fq_ping_desc, &ping, S_ASK_OK_MS, &reply),
        FQ_ENOACTOR);
    //  An actor's ask callback gets that code as its status
    assert_int_equal(s_ask_via(fx, "/user/refuser", S_ASK_OK_MS, 1).status, FQ_ENOACTOR);
}

static void test_tell_to_unknown_path_fails(void **state)
{
    s_fixture_t *fx = *state;
    s_spawn_asker(fx);
    fq_ping_t ping = {.seq = 1, .text = ""};
    fq_msg_t reply;
    //  Nobody lives at the path: the sender learns at once
    assert_int_equal(fq_client_tell(fx->client, "/user/nobody", &fq_ping_desc, &ping), FQ_ENOACTOR);
    assert_int_equal(
        fq_client_ask(fx->client, "/user/nobody", &fq_ping_desc, &ping, S_ASK_OK_MS, &reply),
        FQ_ENOACTOR);
    //  ... from an actor too, whose ask then fails without a callback
    assert_int_equal(s_ask_via(fx, "/user/nobody", S_ASK_OK_MS, 1).status, FQ_ENOACTOR);
    fq_test_expect_quiet(fx->client);
}

static void test_tell_to_malformed_address_fails(void **state)
{
    s_fixture_t *fx = *state;
    s_spawn_asker(fx);
    const char *malformed[] = {"",
                               "user/echo",
                               "/",
                               "/user/",
                               "/user//echo",
                               "/user/has space",
                               "/user/../echo",
                               "tcp://",
                               "tcp://no-port/user/echo",
                               "fq://bad name/user/echo",
                               "http://host:1/user/echo"};
    fq_ping_t ping = {.seq = 1, .text = ""};
    fq_msg_t reply;
    for (size_t i = 0; i < sizeof malformed / sizeof *malformed; i++) {
        //  A malformed address is the caller's error, from a client ...
        if (fq_client_tell(fx->client, malformed[i], &fq_ping_desc, &ping) != FQ_EINVAL)
            fail_msg("tell to \"%s\" was not FQ_EINVAL", malformed[i]);
        assert_int_equal(
            fq_client_ask(fx->client, malformed[i], &fq_ping_desc, &ping, S_ASK_OK_MS, &reply),
            FQ_EINVAL);
        //  ... or from an actor
        assert_int_equal(s_ask_via(fx, malformed[i], S_ASK_OK_MS, 1).status, FQ_EINVAL);
    }
}

static void test_late_reply_to_client_is_ignored(void **state)
{
    s_fixture_t *fx = *state;
    assert_int_equal(fq_system_spawn(fx->sys, "slow", &s_slow, NULL, NULL), 0);
    assert_int_equal(fq_system_spawn(fx->sys, "echo", &s_echo, NULL, NULL), 0);
    fq_ping_t ping = {.seq = 100, .text = "slow"};
    fq_msg_t reply;
    assert_int_equal(
        fq_client_ask(fx->client, "/user/slow", &fq_ping_desc, &ping, S_ASK_TIMEOUT_MS, &reply),
        FQ_ETIMEDOUT);
    //  Wait until the slow reply sits unread in the client's inbox
    const char *self = fq_client_address(fx->client);
    assert_eventually(fq_test_stats(fx->sys, self).mailbox_depth == 1);

    ping = (fq_ping_t){.seq = 200, .text = "fast"};
    assert_int_equal(
        fq_client_ask(fx->client, "/user/echo", &fq_ping_desc, &ping, S_ASK_OK_MS, &reply), 0);
    fq_pong_t pong;
    assert_int_equal(fq_msg_decode(&reply, &fq_pong_desc, &pong), 0);
    //  The next ask gets its own reply, not the stale one queued before it
    assert_int_equal(pong.seq, 201);
    assert_string_equal(pong.text, "fast");
    //  The stale reply is not handed out as a plain message either
    fq_test_expect_quiet(fx->client);
}

//  An actor that answers the asks of many short-lived clients, each with
//  a path of its own, keeps answering: the routes it cached to clients
//  that are gone are dropped, not kept (each holds a socket; ZeroMQ allows
//  1,023, past which no socket can be made and the process aborts).
static void test_replies_to_many_clients_keep_working(void **state)
{
    s_fixture_t *fx = *state;
    assert_int_equal(fq_system_spawn(fx->sys, "echo", &s_echo, NULL, NULL), 0);
    for (int i = 0; i < 1500; i++) {
        fq_client_t *client = fq_client_new(fx->sys);
        assert_non_null(client);
        fq_ping_t ping = {.seq = (uint32_t)i, .text = "one"};
        fq_msg_t reply;
        assert_int_equal(
            fq_client_ask(client, "/user/echo", &fq_ping_desc, &ping, S_ASK_OK_MS, &reply), 0);
        fq_client_destroy(&client);
    }
}

static void test_late_reply_to_actor_is_ignored(void **state)
{
    s_fixture_t *fx = *state;
    s_spawn_asker(fx);
    assert_int_equal(fq_system_spawn(fx->sys, "slow", &s_slow, NULL, NULL), 0);
    assert_int_equal(fq_system_spawn(fx->sys, "echo", &s_echo, NULL, NULL), 0);

    assert_int_equal(s_ask_via(fx, "/user/slow", S_ASK_TIMEOUT_MS, 1).status, FQ_ETIMEDOUT);
    //  The asker takes the late reply (ASK_VIA, then the reply) ...
    assert_eventually(fq_test_stats(fx->sys, "/user/asker").handled == 2);
    //  ... without calling back a second time
    fq_test_expect_quiet(fx->client);
    //  ... and keeps serving asks
    fq_result_t result = s_ask_via(fx, "/user/echo", S_ASK_OK_MS, 7);
    assert_int_equal(result.status, 0);
    assert_int_equal(result.value, 8);
}

static void test_reply_to_previous_incarnation_is_ignored(void **state)
{
    s_fixture_t *fx = *state;
    s_spawn_asker(fx);
    assert_int_equal(fq_system_spawn(fx->sys, "slow", &s_slow, NULL, NULL), 0);
    assert_int_equal(fq_system_spawn(fx->sys, "sink", &s_sink, NULL, NULL), 0);

    //  The asker asks the slow actor, then fails and is restarted before
    //  the answer comes; its new incarnation asks the sink, which never
    //  answers.
    fq_ask_via_t via = {.to = "/user/slow", .timeout_ms = FQ_TEST_WAIT_MS, .seq = 1};
    assert_int_equal(fq_client_tell(fx->client, "/user/asker", &fq_ask_via_desc, &via), 0);
    fq_crash_t crash = {.how = "fail"};
    assert_int_equal(fq_client_tell(fx->client, "/user/asker", &fq_crash_desc, &crash), 0);
    assert_eventually(fq_test_stats(fx->sys, "/user/asker").restarts == 1);
    fq_result_t result = s_ask_via(fx, "/user/sink", S_SLOW_REPLY_MS * 3, 2);
    //  The slow actor's reply, meant for the dead incarnation, must not
    //  complete the new incarnation's ask: that one times out
    if (result.status == 0)
        fail_msg("ask to the sink completed by a stale reply (value %llu, text \"%s\")",
                 (unsigned long long)result.value, result.text);
    assert_int_equal(result.status, FQ_ETIMEDOUT);
}

static void test_client_recv_gets_plain_tells(void **state)
{
    s_fixture_t *fx = *state;
    assert_int_equal(fq_system_spawn(fx->sys, "echo", &s_echo, NULL, NULL), 0);
    fq_ping_t ping = {.seq = 9, .text = "hello"};
    assert_int_equal(fq_client_tell(fx->client, "/user/echo", &fq_ping_desc, &ping), 0);

    fq_msg_t msg;
    fq_test_expect(fx->client, FQ_MSG_PONG, &msg);
    fq_pong_t pong;
    assert_int_equal(fq_msg_decode(&msg, &fq_pong_desc, &pong), 0);
    //  The client received the actor's tell, with its sender and body
    assert_string_equal(msg.sender, "/user/echo");
    assert_false(msg.flags & FQ_ENV_REPLY);
    assert_int_equal(msg.corr, 0);
    assert_int_equal(pong.seq, 10);
    assert_string_equal(pong.text, "hello");
}

static void test_client_ask_keeps_tells_for_recv(void **state)
{
    s_fixture_t *fx = *state;
    assert_int_equal(fq_system_spawn(fx->sys, "echo", &s_echo, NULL, NULL), 0);
    assert_int_equal(fq_system_spawn(fx->sys, "slow", &s_slow, NULL, NULL), 0);

    //  The echo's PONG (a plain tell) reaches the client while it waits
    //  for the slow actor's reply
    fq_ping_t ping = {.seq = 1, .text = "tell"};
    assert_int_equal(fq_client_tell(fx->client, "/user/echo", &fq_ping_desc, &ping), 0);
    ping = (fq_ping_t){.seq = 10, .text = "ask"};
    fq_msg_t msg;
    assert_int_equal(
        fq_client_ask(fx->client, "/user/slow", &fq_ping_desc, &ping, S_ASK_OK_MS, &msg), 0);
    //  The tell is not lost to the ask: the next recv hands it out
    int rc = fq_client_recv(fx->client, FQ_TEST_QUIET_MS, &msg);
    if (rc != 0)
        fail_msg("the tell that came during an ask was lost (%s)", fq_err_name(rc));
    assert_int_equal(msg.type, FQ_MSG_PONG);
    assert_string_equal(msg.sender, "/user/echo");
}

static void test_spawn_duplicate_name_fails(void **state)
{
    s_fixture_t *fx = *state;
    assert_int_equal(fq_system_spawn(fx->sys, "spawner", &s_spawner, NULL, NULL), 0);
    //  A second top-level actor with the same name is refused ...
    fq_spawn_opts_t opts = fq_spawn_opts_default();
    opts.args_free = free;
    assert_int_equal(fq_system_spawn(fx->sys, "spawner", &s_echo, strdup("taken"), &opts),
                     FQ_EEXIST);

    //  ... and so is a second child with the same name
    fq_ping_t ping = {.seq = 1, .text = "kid"};
    fq_msg_t reply;
    fq_result_t result;
    for (int attempt = 0; attempt < 2; attempt++) {
        assert_int_equal(
            fq_client_ask(fx->client, "/user/spawner", &fq_ping_desc, &ping, S_ASK_OK_MS, &reply),
            0);
        assert_int_equal(fq_msg_decode(&reply, &fq_result_desc, &result), 0);
        assert_int_equal(result.status, attempt == 0 ? 0 : FQ_EEXIST);
    }
    //  The first one is unharmed and answers at its path
    assert_int_equal(
        fq_client_ask(fx->client, "/user/spawner/kid", &fq_ping_desc, &ping, S_ASK_OK_MS, &reply),
        0);
    //  The original top-level actor still answers too
    assert_int_equal(
        fq_client_ask(fx->client, "/user/spawner", &fq_ping_desc, &ping, S_ASK_OK_MS, &reply), 0);
}

static void test_spawn_invalid_name_fails(void **state)
{
    s_fixture_t *fx = *state;
    char too_long[FQ_NAME_MAX + 2];
    memset(too_long, 'x', sizeof too_long - 1);
    too_long[sizeof too_long - 1] = 0;
    const char *invalid[] = {NULL, "", ".", "..", "a/b", "/a", "has space", "tab\t", too_long};
    for (size_t i = 0; i < sizeof invalid / sizeof *invalid; i++) {
        fq_spawn_opts_t opts = fq_spawn_opts_default();
        opts.args_free = free;
        //  An invalid name is refused (and the args are still freed)
        int rc = fq_system_spawn(fx->sys, invalid[i], &s_echo, strdup("args"), &opts);
        if (rc != FQ_EINVAL)
            fail_msg("spawning \"%s\" gave %s", invalid[i] ? invalid[i] : "(null)",
                     fq_err_name(rc));
    }
    //  A behaviour without receive is refused as well
    fq_behaviour_t no_receive = {.name = "mute"};
    assert_int_equal(fq_system_spawn(fx->sys, "mute", &no_receive, NULL, NULL), FQ_EINVAL);
    assert_int_equal(fq_system_spawn(fx->sys, "nothing", NULL, NULL, NULL), FQ_EINVAL);

    //  The longest valid name is fine
    too_long[FQ_NAME_MAX] = 0;
    assert_int_equal(fq_system_spawn(fx->sys, too_long, &s_echo, NULL, NULL), 0);

    //  Children's names follow the same rules
    assert_int_equal(fq_system_spawn(fx->sys, "spawner", &s_spawner, NULL, NULL), 0);
    const char *invalid_child[] = {"", "..", "a/b", "has space"};
    for (size_t i = 0; i < sizeof invalid_child / sizeof *invalid_child; i++) {
        fq_ping_t ping = {.seq = 1, .text = invalid_child[i]};
        fq_msg_t reply;
        fq_result_t result;
        assert_int_equal(
            fq_client_ask(fx->client, "/user/spawner", &fq_ping_desc, &ping, S_ASK_OK_MS, &reply),
            0);
        assert_int_equal(fq_msg_decode(&reply, &fq_result_desc, &result), 0);
        assert_int_equal(result.status, FQ_EINVAL);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_tell_keeps_order_from_one_sender, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_ask_between_actors_gets_reply, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_replies_to_many_clients_keep_working, s_setup,
                                        s_teardown),
        cmocka_unit_test_setup_teardown(test_ask_from_actor_times_out, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_client_ask_times_out, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_error_reply_surfaces_its_code, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_tell_to_unknown_path_fails, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_tell_to_malformed_address_fails, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_late_reply_to_client_is_ignored, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_late_reply_to_actor_is_ignored, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_reply_to_previous_incarnation_is_ignored, s_setup,
                                        s_teardown),
        cmocka_unit_test_setup_teardown(test_client_recv_gets_plain_tells, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_client_ask_keeps_tells_for_recv, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_spawn_duplicate_name_fails, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_spawn_invalid_name_fails, s_setup, s_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
