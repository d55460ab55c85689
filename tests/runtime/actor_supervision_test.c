/*  actor_supervision_test.c — restart, stop and escalate: what a parent
    does when a child fails, restart intensity and backoff. */
#include "fq_system.h"
#include "fq_test_msgs.h"
#include <stdarg.h>
#include <setjmp.h>
#include <cmocka.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include "fq_test_support.h"

//  Room for the timestamps of a crash loop's starts and failures.
#define S_MAX_EVENTS 16

//  A backoff long enough that the test acts well within it.
#define S_LONG_BACKOFF_MS 500

//  The first backoff in the backoff test; the second is twice this.
#define S_BACKOFF_MIN_MS 50

//  Crash-loop intensity: more than this many restarts within the window.
#define S_MAX_RESTARTS 3
#define S_WITHIN_MS    10000

//  Backoff of crash loops: short, so that they run their course quickly.
#define S_QUICK_BACKOFF_MIN_MS 5
#define S_QUICK_BACKOFF_MAX_MS 20

//  Messages told to an actor while it backs off.
#define S_QUEUED_COUNTS 5

//  ---------------------------------------------------------------------
//  The crasher: fails on CRASH (receive returns an error), counts COUNTs
//  and answers PINGs. It records what happens to it in memory the test
//  shares through its args.

typedef struct {
    int fail_starts;                //  start fails while the count of starts is at most this
    atomic_int starts;              //  start calls, over all incarnations
    atomic_int stops;               //  stop calls
    atomic_int failures;            //  CRASHes handled
    atomic_int counted;             //  COUNTs handled
    int64_t start_at[S_MAX_EVENTS]; //  Monotonic ms of each start
    int64_t fail_at[S_MAX_EVENTS];  //  ... and of each failure in receive
} s_crasher_args_t;

static int s_crasher_start(fq_ctx_t *ctx, void *args, void **state_p)
{
    (void)ctx;
    s_crasher_args_t *self = args;
    int n = atomic_load(&self->starts);
    if (n < S_MAX_EVENTS)
        self->start_at[n] = zclock_mono();
    atomic_store(&self->starts, n + 1); //  Publishes start_at[n]
    *state_p = self;
    return n + 1 <= self->fail_starts ? FQ_EFAILED : 0;
}

static int s_crasher_receive(fq_ctx_t *ctx, void *state, const fq_msg_t *msg)
{
    s_crasher_args_t *self = state;
    fq_crash_t crash;
    if (fq_msg_decode(msg, &fq_crash_desc, &crash) == 0) {
        int n = atomic_load(&self->failures);
        if (n < S_MAX_EVENTS)
            self->fail_at[n] = zclock_mono();
        atomic_store(&self->failures, n + 1);
        return FQ_EFAILED;
    }
    if (msg->type == FQ_MSG_COUNT) {
        fq_counted_t counted = {.value = (uint64_t)atomic_fetch_add(&self->counted, 1) + 1,
                                .starts = (uint64_t)atomic_load(&self->starts)};
        if (msg->flags & FQ_ENV_ASK)
            return fq_reply(ctx, msg, &fq_counted_desc, &counted);
        return 0;
    }
    fq_ping_t ping;
    if (fq_msg_decode(msg, &fq_ping_desc, &ping) == 0) {
        fq_pong_t pong = {.seq = ping.seq + 1, .text = ping.text};
        return fq_reply(ctx, msg, &fq_pong_desc, &pong);
    }
    return 0;
}

static void s_crasher_stop(fq_ctx_t *ctx, void *state)
{
    (void)ctx;
    s_crasher_args_t *self = state;
    atomic_fetch_add(&self->stops, 1);
}

static const fq_behaviour_t s_crasher = {.name = "crasher",
                                         .start = s_crasher_start,
                                         .receive = s_crasher_receive,
                                         .stop = s_crasher_stop};

//  A parent whose start spawns a crasher child named "child".
typedef struct {
    atomic_int starts;
    s_crasher_args_t child;
    fq_spawn_opts_t child_opts;
} s_parent_args_t;

static int s_parent_start(fq_ctx_t *ctx, void *args, void **state_p)
{
    s_parent_args_t *self = args;
    atomic_fetch_add(&self->starts, 1);
    *state_p = self;
    return fq_spawn(ctx, "child", &s_crasher, &self->child, &self->child_opts);
}

static int s_parent_receive(fq_ctx_t *ctx, void *state, const fq_msg_t *msg)
{
    (void)ctx;
    (void)state;
    (void)msg;
    return 0;
}

static const fq_behaviour_t s_parent = {
    .name = "parent", .start = s_parent_start, .receive = s_parent_receive};

//  ---------------------------------------------------------------------
//  Fixture: a system that records escalations to its guardians, a client

typedef struct {
    pthread_mutex_t lock;
    int calls;
    char path[FQ_PATH_MAX + 1];
    char reason[512];
} s_escalations_t;

//  The memory tests share with their actors lives here, not on a test's
//  stack: actors still running at teardown may touch it until the system
//  is destroyed.
typedef struct {
    fq_system_t *sys;
    fq_client_t *client;
    s_escalations_t escalations;
    s_crasher_args_t crasher;
    s_crasher_args_t bystander;
    s_parent_args_t parent;
} s_fixture_t;

static void s_on_escalation(fq_system_t *sys, const char *path, const char *reason, void *arg)
{
    (void)sys;
    s_escalations_t *record = arg;
    pthread_mutex_lock(&record->lock);
    record->calls++;
    snprintf(record->path, sizeof record->path, "%s", path);
    snprintf(record->reason, sizeof record->reason, "%s", reason);
    pthread_mutex_unlock(&record->lock);
}

static int s_escalation_calls(s_fixture_t *fx)
{
    pthread_mutex_lock(&fx->escalations.lock);
    int calls = fx->escalations.calls;
    pthread_mutex_unlock(&fx->escalations.lock);
    return calls;
}

static int s_setup(void **state)
{
    s_fixture_t *fx = calloc(1, sizeof *fx);
    pthread_mutex_init(&fx->escalations.lock, NULL);
    fq_system_config_t cfg = {.name = "supervision",
                              .on_escalation = s_on_escalation,
                              .on_escalation_arg = &fx->escalations};
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
    pthread_mutex_destroy(&fx->escalations.lock);
    free(fx);
    return 0;
}

static void s_tell_crash(s_fixture_t *fx, const char *to, const char *how)
{
    fq_crash_t crash = {.how = how};
    assert_int_equal(fq_client_tell(fx->client, to, &fq_crash_desc, &crash), 0);
}

//  Asks the crasher at path to COUNT; returns its answer.
static fq_counted_t s_ask_count(s_fixture_t *fx, const char *path)
{
    fq_count_t count = {0};
    fq_msg_t reply;
    fq_counted_t counted = {0};
    assert_int_equal(
        fq_client_ask(fx->client, path, &fq_count_desc, &count, FQ_TEST_WAIT_MS, &reply), 0);
    assert_int_equal(fq_msg_decode(&reply, &fq_counted_desc, &counted), 0);
    return counted;
}

//  Receives a TERMINATED notice, which must be about path.
static fq_terminated_t s_expect_terminated(s_fixture_t *fx, const char *path, fq_msg_t *msg)
{
    fq_terminated_t notice;
    fq_test_expect(fx->client, FQ_MSG_TERMINATED, msg);
    assert_int_equal(fq_msg_decode(msg, &fq_terminated_desc, &notice), 0);
    assert_string_equal(notice.path, path);
    return notice;
}

//  ---------------------------------------------------------------------
//  Tests

static void test_failed_actor_restarts_keeping_mailbox(void **state)
{
    s_fixture_t *fx = *state;
    s_crasher_args_t *worker = &fx->crasher;
    fq_spawn_opts_t opts = fq_spawn_opts_default();
    opts.supervision.backoff_min_ms = S_LONG_BACKOFF_MS;
    opts.supervision.backoff_max_ms = S_LONG_BACKOFF_MS;
    assert_int_equal(fq_system_spawn(fx->sys, "worker", &s_crasher, worker, &opts), 0);
    assert_int_equal(fq_system_spawn(fx->sys, "bystander", &s_crasher, &fx->bystander, NULL), 0);

    s_tell_crash(fx, "/user/worker", "fail");
    assert_eventually(fq_test_stats(fx->sys, "/user/worker").failures == 1);
    //  The failed incarnation's stop still ran, to release its state
    assert_int_equal(atomic_load(&worker->stops), 1);
    //  Messages told while it backs off are accepted ...
    fq_count_t count = {0};
    for (int i = 0; i < S_QUEUED_COUNTS; i++)
        assert_int_equal(fq_client_tell(fx->client, "/user/worker", &fq_count_desc, &count), 0);
    assert_int_equal(fq_test_stats(fx->sys, "/user/worker").restarts, 0);
    //  ... other actors keep working meanwhile ...
    assert_int_equal(s_ask_count(fx, "/user/bystander").value, 1);
    assert_int_equal(atomic_load(&worker->counted), 0);
    //  ... and the restarted actor handles them all
    assert_eventually(atomic_load(&worker->counted) == S_QUEUED_COUNTS);
    assert_int_equal(atomic_load(&worker->starts), 2);
    fq_actor_stats_t stats = fq_test_stats(fx->sys, "/user/worker");
    //  The counters show one failure and one restart
    assert_int_equal(stats.failures, 1);
    assert_int_equal(stats.restarts, 1);
    assert_int_equal(s_ask_count(fx, "/user/worker").starts, 2);
}

static void test_stop_strategy_stops_for_good(void **state)
{
    s_fixture_t *fx = *state;
    fq_spawn_opts_t opts = fq_spawn_opts_default();
    opts.supervision.strategy = FQ_SUPERVISE_STOP;
    assert_int_equal(fq_system_spawn(fx->sys, "fragile", &s_crasher, &fx->crasher, &opts), 0);
    assert_int_equal(fq_client_watch(fx->client, "/user/fragile"), 0);

    s_tell_crash(fx, "/user/fragile", "fail");
    fq_msg_t msg;
    fq_terminated_t notice = s_expect_terminated(fx, "/user/fragile", &msg);
    //  Watchers learn it ended, and that it failed
    assert_true(notice.failed);
    assert_non_null(strstr(notice.reason, "failed"));
    //  It is gone, not restarted
    fq_count_t count = {0};
    assert_int_equal(fq_client_tell(fx->client, "/user/fragile", &fq_count_desc, &count),
                     FQ_ENOACTOR);
    fq_actor_stats_t stats;
    assert_int_equal(fq_system_stats(fx->sys, "/user/fragile", &stats), FQ_ENOACTOR);
    assert_int_equal(atomic_load(&fx->crasher.starts), 1);
    assert_false(fq_system_failed(fx->sys, NULL, 0));
}

static void test_crash_loop_escalates_to_parent(void **state)
{
    s_fixture_t *fx = *state;
    s_parent_args_t *parent = &fx->parent;
    parent->child_opts = fq_spawn_opts_default();
    parent->child_opts.supervision = (fq_supervision_t){.strategy = FQ_SUPERVISE_RESTART,
                                                        .max_restarts = S_MAX_RESTARTS,
                                                        .within_ms = S_WITHIN_MS,
                                                        .backoff_min_ms = S_QUICK_BACKOFF_MIN_MS,
                                                        .backoff_max_ms = S_QUICK_BACKOFF_MAX_MS};
    assert_int_equal(fq_system_spawn(fx->sys, "parent", &s_parent, parent, NULL), 0);
    assert_eventually(atomic_load(&parent->child.starts) == 1);
    assert_int_equal(fq_client_watch(fx->client, "/user/parent/child"), 0);
    assert_int_equal(fq_client_watch(fx->client, "/user/parent"), 0);

    //  One crash per incarnation: each restart takes the next from the
    //  mailbox, and the fourth failure is one restart too many
    for (int i = 0; i <= S_MAX_RESTARTS; i++)
        s_tell_crash(fx, "/user/parent/child", "fail");
    fq_msg_t msg;
    fq_terminated_t notice = s_expect_terminated(fx, "/user/parent/child", &msg);
    //  The child is given up on ...
    assert_true(notice.failed);
    assert_non_null(strstr(notice.reason, "restarts"));
    assert_int_equal(atomic_load(&parent->child.failures), S_MAX_RESTARTS + 1);
    //  ... its parent fails with it and is restarted by its own supervisor,
    //  which brings up a fresh child
    assert_eventually(atomic_load(&parent->starts) >= 2);
    assert_eventually(atomic_load(&parent->child.starts) >= S_MAX_RESTARTS + 2);
    assert_eventually(fq_test_stats(fx->sys, "/user/parent").restarts >= 1);
    assert_true(fq_test_stats(fx->sys, "/user/parent").failures >= 1);
    assert_int_equal(s_ask_count(fx, "/user/parent/child").value, 1);
    //  The parent's restart is not its end: no TERMINATED for it
    fq_test_expect_quiet(fx->client);
    //  Nothing reached the guardian
    assert_false(fq_system_failed(fx->sys, NULL, 0));
    assert_int_equal(s_escalation_calls(fx), 0);
}

static void test_escalation_to_guardian_fails_system(void **state)
{
    s_fixture_t *fx = *state;
    //  A child that can never start, under a parent that escalates
    s_parent_args_t *parent = &fx->parent;
    parent->child.fail_starts = INT_MAX;
    parent->child_opts = fq_spawn_opts_default();
    parent->child_opts.supervision = (fq_supervision_t){.strategy = FQ_SUPERVISE_RESTART,
                                                        .max_restarts = S_MAX_RESTARTS,
                                                        .within_ms = S_WITHIN_MS,
                                                        .backoff_min_ms = S_QUICK_BACKOFF_MIN_MS,
                                                        .backoff_max_ms = S_QUICK_BACKOFF_MAX_MS};
    fq_spawn_opts_t opts = fq_spawn_opts_default();
    opts.supervision.strategy = FQ_SUPERVISE_ESCALATE;
    assert_int_equal(fq_system_spawn(fx->sys, "bystander", &s_crasher, &fx->bystander, NULL), 0);
    assert_int_equal(fq_system_spawn(fx->sys, "parent", &s_parent, parent, &opts), 0);
    assert_int_equal(fq_client_watch(fx->client, "/user/parent"), 0);

    fq_msg_t msg;
    fq_terminated_t notice = s_expect_terminated(fx, "/user/parent", &msg);
    //  The parent is gone, as failed
    assert_true(notice.failed);
    //  The child's start was tried once and restarted up to the limit
    assert_int_equal(atomic_load(&parent->child.starts), S_MAX_RESTARTS + 1);
    assert_int_equal(atomic_load(&parent->starts), 1);

    //  The application hears of it once, from the /user guardian, with the
    //  paths that failed
    assert_eventually(s_escalation_calls(fx) == 1);
    pthread_mutex_lock(&fx->escalations.lock);
    assert_string_equal(fx->escalations.path, "/user");
    assert_non_null(strstr(fx->escalations.reason, "/user/parent"));
    assert_non_null(strstr(fx->escalations.reason, "/user/parent/child"));
    pthread_mutex_unlock(&fx->escalations.lock);
    //  The system says it failed, and why
    char reason[512] = "";
    assert_true(fq_system_failed(fx->sys, reason, sizeof reason));
    assert_non_null(strstr(reason, "/user/parent"));
    //  The rest of the system keeps running: the application decides
    assert_int_equal(s_ask_count(fx, "/user/bystander").value, 1);
}

static void test_backoff_grows_between_restarts(void **state)
{
    s_fixture_t *fx = *state;
    s_crasher_args_t *args = &fx->crasher;
    fq_spawn_opts_t opts = fq_spawn_opts_default();
    opts.supervision.backoff_min_ms = S_BACKOFF_MIN_MS;
    opts.supervision.backoff_max_ms = S_BACKOFF_MIN_MS * 20;
    assert_int_equal(fq_system_spawn(fx->sys, "flaky", &s_crasher, args, &opts), 0);

    //  The second crash waits in the mailbox for the first restart
    s_tell_crash(fx, "/user/flaky", "fail");
    s_tell_crash(fx, "/user/flaky", "fail");
    assert_eventually(atomic_load(&args->starts) == 3);
    int64_t first_delay = args->start_at[1] - args->fail_at[0];
    int64_t second_delay = args->start_at[2] - args->fail_at[1];
    //  The first restart waits backoff_min_ms, the second twice that
    assert_true(first_delay >= S_BACKOFF_MIN_MS);
    assert_true(second_delay >= 2 * S_BACKOFF_MIN_MS);
    //  ... not much longer (loosely: CI machines are noisy)
    assert_true(first_delay < S_BACKOFF_MIN_MS + FQ_TEST_WAIT_MS);
    assert_true(second_delay < 2 * S_BACKOFF_MIN_MS + FQ_TEST_WAIT_MS);
    assert_int_equal(fq_test_stats(fx->sys, "/user/flaky").restarts, 2);
}

static void test_start_error_counts_as_failure(void **state)
{
    s_fixture_t *fx = *state;
    fx->crasher.fail_starts = 2;
    fq_spawn_opts_t opts = fq_spawn_opts_default();
    opts.supervision.backoff_min_ms = S_QUICK_BACKOFF_MIN_MS;
    opts.supervision.backoff_max_ms = S_QUICK_BACKOFF_MAX_MS;
    //  Spawning succeeds: start runs in the actor's own thread
    assert_int_equal(fq_system_spawn(fx->sys, "late-bloomer", &s_crasher, &fx->crasher, &opts), 0);

    //  Two failed starts are restarted like any failure; the third works
    assert_int_equal(s_ask_count(fx, "/user/late-bloomer").starts, 3);
    fq_actor_stats_t stats = fq_test_stats(fx->sys, "/user/late-bloomer");
    assert_int_equal(stats.failures, 2);
    assert_int_equal(stats.restarts, 2);
    //  stop runs only for an incarnation whose start succeeded
    assert_int_equal(atomic_load(&fx->crasher.stops), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_failed_actor_restarts_keeping_mailbox, s_setup,
                                        s_teardown),
        cmocka_unit_test_setup_teardown(test_stop_strategy_stops_for_good, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_crash_loop_escalates_to_parent, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_escalation_to_guardian_fails_system, s_setup,
                                        s_teardown),
        cmocka_unit_test_setup_teardown(test_backoff_grows_between_restarts, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_start_error_counts_as_failure, s_setup, s_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
