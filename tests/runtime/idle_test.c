/*  idle_test.c — the behaviour's idle hook runs once the mailbox is empty,
    so an actor can gather work per message and do it once per burst. */
#include "fq_system.h"
#include "fq_test_msgs.h"
#include <setjmp.h>
#include <stdarg.h>
#include <cmocka.h>

#define S_WAIT_MS 2000
#define S_BURST   500

//  Counts messages, and idle calls with the messages seen at the last one.
typedef struct {
    uint64_t handled;
    uint64_t idles;
    uint64_t handled_at_idle;
} s_counter_t;

static int s_start(fq_ctx_t *ctx, void *args, void **state_p)
{
    (void)ctx;
    (void)args;
    *state_p = calloc(1, sizeof(s_counter_t));
    return *state_p ? 0 : FQ_ENOMEM;
}

static int s_receive(fq_ctx_t *ctx, void *state, const fq_msg_t *msg)
{
    s_counter_t *self = state;
    if (msg->type == FQ_MSG_COUNT) {
        //  The first message of the burst holds the actor up, so the rest
        //  queue behind it
        if (self->handled++ == 0)
            zclock_sleep(100);
        return 0;
    }
    if (msg->type == FQ_MSG_PING) {
        fq_counted_t counted = {.value = self->idles, .starts = self->handled_at_idle};
        return fq_reply(ctx, msg, &fq_counted_desc, &counted);
    }
    return 0;
}

static void s_idle(fq_ctx_t *ctx, void *state)
{
    (void)ctx;
    s_counter_t *self = state;
    self->idles++;
    self->handled_at_idle = self->handled;
}

static void s_stop(fq_ctx_t *ctx, void *state)
{
    (void)ctx;
    free(state);
}

static const fq_behaviour_t s_gatherer = {
    .name = "gatherer", .start = s_start, .receive = s_receive, .stop = s_stop, .idle = s_idle};

//  A burst of messages that queued up while the actor was busy makes a few
//  idle calls, not one per message, and the last one comes after all of
//  them.
static void test_idle_runs_once_per_burst(void **unused)
{
    (void)unused;
    fq_system_config_t cfg = {.name = "idle"};
    fq_system_t *sys = fq_system_new(&cfg);
    assert_int_equal(fq_system_spawn(sys, "gatherer", &s_gatherer, NULL, NULL), 0);
    fq_client_t *client = fq_client_new(sys);
    fq_count_t count = {0};
    for (int i = 0; i < S_BURST; i++)
        assert_int_equal(fq_client_tell(client, "/user/gatherer", &fq_count_desc, &count), 0);
    //  The ask queues behind the burst: when it is answered, all are handled
    fq_ping_t ping = {.seq = 1, .text = ""};
    fq_msg_t reply;
    assert_int_equal(
        fq_client_ask(client, "/user/gatherer", &fq_ping_desc, &ping, S_WAIT_MS, &reply), 0);
    fq_counted_t counted;
    assert_int_equal(fq_msg_decode(&reply, &fq_counted_desc, &counted), 0);
    //  A quiet moment later the idle has seen every message of the burst,
    //  in a few calls
    zclock_sleep(50);
    assert_int_equal(
        fq_client_ask(client, "/user/gatherer", &fq_ping_desc, &ping, S_WAIT_MS, &reply), 0);
    assert_int_equal(fq_msg_decode(&reply, &fq_counted_desc, &counted), 0);
    assert_int_equal(counted.starts, S_BURST);
    assert_true(counted.value >= 1);
    assert_true(counted.value < S_BURST / 10);
    fq_client_destroy(&client);
    fq_system_destroy(&sys);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_idle_runs_once_per_burst)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
