/*  sender_failover_test.c — the sender actor follows its gateway from one
    fairqd to the next: when the fairqd it was welcomed by goes away, it
    says HELLO to the one the gateway joins next, is welcomed there and
    grants its credit, and watches the dispatcher there (a dispatcher that
    stops at the new fairqd makes it say HELLO again).

    The fairqd are systems of this process with a stand-in dispatcher that
    welcomes every HELLO and counts HELLOs and CREDITs; their gateways bind
    without CURVE (only one CURVE-bound gateway may run in a process).
*/
#include "fq_gateway.h"
#include "fq_sender.h"
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <cmocka.h>
#include "../runtime/fq_test_port.h"

//  Short heartbeats: a lost fairqd shows within a second.
#define S_HEARTBEAT_MS         100
#define S_HEARTBEAT_TIMEOUT_MS 600

//  What the sender must manage within: be welcomed by the next fairqd
//  after losing one (the gateway moves on at once; the sender's HELLO
//  waits are at most 1 s), and anything else that normally takes
//  milliseconds (sanitizers, a loaded machine).
#define S_FOLLOW_MAX_MS 3000
#define S_WAIT_MS       5000

#define S_ENDPOINT_SIZE 64

//  What a stand-in dispatcher has seen.
typedef struct {
    atomic_int hellos;
    atomic_int credits;
} s_seen_t;

static int s_dispatcher_start(fq_ctx_t *ctx, void *args, void **state_p)
{
    (void)ctx;
    *state_p = args;
    return 0;
}

static int s_dispatcher_receive(fq_ctx_t *ctx, void *state, const fq_msg_t *msg)
{
    s_seen_t *seen = state;
    if (msg->type == FQ_MSG_CREDIT)
        atomic_fetch_add(&seen->credits, 1);
    if (msg->type != FQ_MSG_HELLO)
        return 0;
    atomic_fetch_add(&seen->hellos, 1);
    fq_welcome_t welcome = {.system = fq_system_name(fq_ctx_system(ctx)), .protocol = 1};
    return fq_reply(ctx, msg, &fq_welcome_desc, &welcome);
}
static const fq_behaviour_t s_dispatcher = {
    .name = "dispatcher", .start = s_dispatcher_start, .receive = s_dispatcher_receive};

//  Spawns the stand-in dispatcher; a stopped one's name may take a moment
//  to be free again.
static void s_spawn_dispatcher(fq_system_t *sys, s_seen_t *seen)
{
    int64_t deadline = zclock_mono() + S_WAIT_MS;
    while (fq_system_spawn(sys, "dispatcher", &s_dispatcher, seen, NULL) != 0) {
        if (zclock_mono() > deadline)
            fail_msg("could not spawn the dispatcher again");
        zclock_sleep(10);
    }
}

//  A stand-in fairqd named name, its gateway bound on port.
static fq_system_t *s_fairqd(const char *name, int port, s_seen_t *seen)
{
    fq_system_t *sys = fq_system_new(&(fq_system_config_t){.name = name});
    assert_non_null(sys);
    s_spawn_dispatcher(sys, seen);
    char endpoint[S_ENDPOINT_SIZE];
    snprintf(endpoint, sizeof endpoint, "tcp://127.0.0.1:%d", port);
    fq_gateway_config_t cfg = {.bind = endpoint,
                               .insecure = true,
                               .admit = fq_protocol_fairqd_admit,
                               .admit_count = fq_protocol_fairqd_admit_count,
                               .heartbeat_ms = S_HEARTBEAT_MS,
                               .heartbeat_timeout_ms = S_HEARTBEAT_TIMEOUT_MS};
    assert_int_equal(fq_gateway_start(sys, &cfg), 0);
    return sys;
}

//  Waits until seen holds at least hellos HELLOs and credits CREDITs;
//  returns how long that took, or -1 after timeout_ms.
static int64_t s_wait_seen(s_seen_t *seen, int hellos, int credits, int timeout_ms)
{
    int64_t start = zclock_mono();
    while (atomic_load(&seen->hellos) < hellos || atomic_load(&seen->credits) < credits) {
        if (zclock_mono() - start > timeout_ms)
            return -1;
        zclock_sleep(10);
    }
    return zclock_mono() - start;
}

static void test_sender_follows_the_leader(void **unused)
{
    (void)unused;
    int port_a = fq_test_free_port();
    int port_b = fq_test_free_port();
    s_seen_t seen_a = {0}, seen_b = {0};
    fq_system_t *a = s_fairqd("alpha", port_a, &seen_a);
    fq_system_t *b = s_fairqd("bravo", port_b, &seen_b);

    fq_system_t *spoke = fq_system_new(&(fq_system_config_t){.name = "spoke"});
    assert_non_null(spoke);
    char list[2 * S_ENDPOINT_SIZE], dispatcher[S_ENDPOINT_SIZE + 32];
    snprintf(list, sizeof list, "tcp://127.0.0.1:%d,tcp://127.0.0.1:%d", port_a, port_b);
    //  Addressed by the first endpoint, as fairq-sender does
    snprintf(dispatcher, sizeof dispatcher, "tcp://127.0.0.1:%d%s", port_a,
             FQ_PROTOCOL_DISPATCHER_PATH);
    fq_gateway_config_t gateway = {.connect = list,
                                   .insecure = true,
                                   .admit = fq_protocol_sender_admit,
                                   .admit_count = fq_protocol_sender_admit_count,
                                   .heartbeat_ms = S_HEARTBEAT_MS,
                                   .heartbeat_timeout_ms = S_HEARTBEAT_TIMEOUT_MS};
    assert_int_equal(fq_gateway_start(spoke, &gateway), 0);
    fq_sender_config_t config = {.dispatcher = dispatcher,
                                 .name = "spoke",
                                 .version = "test",
                                 .concurrency = 2,
                                 .transport = {.kind = "null"}};
    assert_int_equal(fq_sender_start(spoke, &config), 0);
    assert_true(s_wait_seen(&seen_a, 1, 1, S_WAIT_MS) >= 0);

    //  Alpha goes: the sender is welcomed by bravo and grants it credit
    fq_system_destroy(&a);
    int64_t took = s_wait_seen(&seen_b, 1, 1, S_WAIT_MS);
    print_message("welcomed by bravo %lld ms after alpha went\n", (long long)took);
    assert_true(took >= 0 && took < S_FOLLOW_MAX_MS);

    //  It watches bravo's dispatcher: when that stops, the sender says
    //  HELLO again, and is welcomed once a dispatcher is back
    fq_client_t *client = fq_client_new(b);
    assert_non_null(client);
    assert_int_equal(
        fq_client_tell(client, FQ_PROTOCOL_DISPATCHER_PATH, &fq_stop_desc, &(fq_stop_t){0}), 0);
    s_spawn_dispatcher(b, &seen_b);
    assert_true(s_wait_seen(&seen_b, 2, 2, S_WAIT_MS) >= 0);

    fq_client_destroy(&client);
    fq_system_destroy(&spoke);
    fq_system_destroy(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sender_follows_the_leader),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
