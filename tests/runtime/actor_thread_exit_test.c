/*  actor_thread_exit_test.c — an actor whose thread ends under it
    (pthread_exit inside receive) is treated as failed, and supervised.

    A test of its own because CZMQ leaks the small shim of a zactor whose
    thread never returns to it; LeakSanitizer is told to ignore exactly
    that (lsan_thread_exit.supp, set in CMakeLists.txt for this test).
*/
#include "fq_system.h"
#include "fq_test_msgs.h"
#include <stdarg.h>
#include <setjmp.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdatomic.h>
#include "fq_test_support.h"

//  The mortal: its thread ends on CRASH; it counts COUNTs. What happens
//  to it is recorded in memory shared with the test through its args.
typedef struct {
    atomic_int starts;
    atomic_int stops;
    atomic_int counted;
} s_mortal_args_t;

static int s_mortal_start(fq_ctx_t *ctx, void *args, void **state_p)
{
    (void)ctx;
    s_mortal_args_t *self = args;
    atomic_fetch_add(&self->starts, 1);
    *state_p = self;
    return 0;
}

static int s_mortal_receive(fq_ctx_t *ctx, void *state, const fq_msg_t *msg)
{
    (void)ctx;
    s_mortal_args_t *self = state;
    if (msg->type == FQ_MSG_CRASH)
        pthread_exit(NULL);
    if (msg->type == FQ_MSG_COUNT)
        atomic_fetch_add(&self->counted, 1);
    return 0;
}

static void s_mortal_stop(fq_ctx_t *ctx, void *state)
{
    (void)ctx;
    s_mortal_args_t *self = state;
    atomic_fetch_add(&self->stops, 1);
}

static const fq_behaviour_t s_mortal = {
    .name = "mortal", .start = s_mortal_start, .receive = s_mortal_receive, .stop = s_mortal_stop};

//  Fixture: a system, a client, and the mortal's shared memory (kept here
//  so that it outlives the actor until the system is destroyed).
typedef struct {
    fq_system_t *sys;
    fq_client_t *client;
    s_mortal_args_t mortal;
    s_mortal_args_t bystander;
} s_fixture_t;

static int s_setup(void **state)
{
    s_fixture_t *fx = calloc(1, sizeof *fx);
    fq_system_config_t cfg = {.name = "thread-exit"};
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

static void test_thread_exit_is_restarted(void **state)
{
    s_fixture_t *fx = *state;
    assert_int_equal(fq_system_spawn(fx->sys, "mortal", &s_mortal, &fx->mortal, NULL), 0);
    assert_int_equal(fq_system_spawn(fx->sys, "bystander", &s_mortal, &fx->bystander, NULL), 0);

    fq_crash_t crash = {.how = "exit"};
    fq_count_t count = {0};
    assert_int_equal(fq_client_tell(fx->client, "/user/mortal", &fq_crash_desc, &crash), 0);
    assert_int_equal(fq_client_tell(fx->client, "/user/mortal", &fq_count_desc, &count), 0);
    //  The actor comes back and handles what was queued behind the crash
    assert_eventually(atomic_load(&fx->mortal.counted) == 1);
    assert_int_equal(atomic_load(&fx->mortal.starts), 2);
    fq_actor_stats_t stats = fq_test_stats(fx->sys, "/user/mortal");
    //  It counts as a failure, and the restart is counted
    assert_int_equal(stats.failures, 1);
    assert_int_equal(stats.restarts, 1);
    //  stop is skipped: the state may be half-changed by the dead thread
    assert_int_equal(atomic_load(&fx->mortal.stops), 0);
    //  Its neighbour noticed nothing
    assert_int_equal(fq_client_tell(fx->client, "/user/bystander", &fq_count_desc, &count), 0);
    assert_eventually(atomic_load(&fx->bystander.counted) == 1);
    assert_int_equal(atomic_load(&fx->bystander.starts), 1);
}

static void test_thread_exit_under_stop_strategy_tells_watchers(void **state)
{
    s_fixture_t *fx = *state;
    fq_spawn_opts_t opts = fq_spawn_opts_default();
    opts.supervision.strategy = FQ_SUPERVISE_STOP;
    assert_int_equal(fq_system_spawn(fx->sys, "mortal", &s_mortal, &fx->mortal, &opts), 0);
    assert_int_equal(fq_client_watch(fx->client, "/user/mortal"), 0);

    fq_crash_t crash = {.how = "exit"};
    assert_int_equal(fq_client_tell(fx->client, "/user/mortal", &fq_crash_desc, &crash), 0);
    fq_msg_t msg;
    fq_test_expect(fx->client, FQ_MSG_TERMINATED, &msg);
    fq_terminated_t notice;
    assert_int_equal(fq_msg_decode(&msg, &fq_terminated_desc, &notice), 0);
    //  Watchers learn that it failed, and how
    assert_string_equal(notice.path, "/user/mortal");
    assert_true(notice.failed);
    assert_non_null(strstr(notice.reason, "thread ended"));
    assert_int_equal(atomic_load(&fx->mortal.starts), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_thread_exit_is_restarted, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_thread_exit_under_stop_strategy_tells_watchers,
                                        s_setup, s_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
