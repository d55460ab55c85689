/*  actor_lifecycle_test.c — timers, death watch, graceful stop of a
    subtree, per-actor counters and stopping a whole system. */
#include "fq_system.h"
#include "fq_test_msgs.h"
#include <stdarg.h>
#include <setjmp.h>
#include <cmocka.h>
#include <pthread.h>
#include <errno.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <time.h>
#include "fq_test_support.h"

//  Delay of the one-shot timer under test.
#define S_ONCE_MS 100

//  Interval of the periodic timer under test, and ticks before cancelling.
#define S_EVERY_MS     20
#define S_EVERY_CANCEL 5

//  Messages queued before a stop, or behind a blocked actor.
#define S_QUEUED 100

//  How many actors the stop log has room for.
#define S_LOG_MAX 16

//  How many times the same path is stopped and spawned again.
#define S_RESPAWNS 200

//  ---------------------------------------------------------------------
//  Behaviours

//  The ticker sets its timers in start and tells each TICK it receives,
//  numbered, to report_to; it cancels its periodic timer after
//  cancel_after ticks.
typedef struct {
    const char *report_to;
    int once_ms;      //  0 = no one-shot timer
    int every_ms;     //  0 = no periodic timer
    int cancel_after; //  0 = never cancel
} s_ticker_args_t;

typedef struct {
    const s_ticker_args_t *args;
    uint64_t ticks;
    int every_timer;
} s_ticker_t;

static int s_ticker_start(fq_ctx_t *ctx, void *args, void **state_p)
{
    s_ticker_t *self = calloc(1, sizeof *self);
    if (!self)
        return FQ_ENOMEM;
    self->args = args;
    fq_tick_t tick = {.n = 0};
    int rc = 0;
    if (self->args->once_ms)
        rc = fq_timer_once(ctx, self->args->once_ms, &fq_tick_desc, &tick);
    if (rc >= 0 && self->args->every_ms)
        rc = fq_timer_every(ctx, self->args->every_ms, &fq_tick_desc, &tick);
    if (rc < 0) {
        free(self); //  stop does not run after a failed start
        return rc;
    }
    self->every_timer = self->args->every_ms ? rc : 0;
    *state_p = self;
    return 0;
}

static int s_ticker_receive(fq_ctx_t *ctx, void *state, const fq_msg_t *msg)
{
    s_ticker_t *self = state;
    if (msg->type != FQ_MSG_TICK)
        return 0;
    fq_tick_t tick = {.n = ++self->ticks};
    if (self->args->cancel_after && tick.n == (uint64_t)self->args->cancel_after)
        fq_timer_cancel(ctx, self->every_timer);
    return fq_tell(ctx, self->args->report_to, &fq_tick_desc, &tick);
}

static void s_ticker_stop(fq_ctx_t *ctx, void *state)
{
    (void)ctx;
    free(state);
}

static const fq_behaviour_t s_ticker = {
    .name = "ticker", .start = s_ticker_start, .receive = s_ticker_receive, .stop = s_ticker_stop};

//  The counter counts COUNTs; its stop records how many it had handled.
typedef struct {
    atomic_int counted;
    atomic_int counted_at_stop;
    atomic_int stops;
} s_counter_args_t;

static int s_counter_start(fq_ctx_t *ctx, void *args, void **state_p)
{
    (void)ctx;
    *state_p = args;
    return 0;
}

static int s_counter_receive(fq_ctx_t *ctx, void *state, const fq_msg_t *msg)
{
    (void)ctx;
    s_counter_args_t *self = state;
    if (msg->type == FQ_MSG_COUNT)
        atomic_fetch_add(&self->counted, 1);
    return 0;
}

static void s_counter_stop(fq_ctx_t *ctx, void *state)
{
    (void)ctx;
    s_counter_args_t *self = state;
    atomic_store(&self->counted_at_stop, atomic_load(&self->counted));
    atomic_fetch_add(&self->stops, 1);
}

static const fq_behaviour_t s_counter = {.name = "counter",
                                         .start = s_counter_start,
                                         .receive = s_counter_receive,
                                         .stop = s_counter_stop};

//  The watcher watches target from its start and passes each TERMINATED
//  on to report_to. On STOP_AFTER it tells COUNTs, then stops the target.
typedef struct {
    const char *target;
    const char *report_to;
} s_watcher_args_t;

static int s_watcher_start(fq_ctx_t *ctx, void *args, void **state_p)
{
    s_watcher_args_t *self = args;
    *state_p = self;
    return fq_watch(ctx, self->target);
}

static int s_watcher_receive(fq_ctx_t *ctx, void *state, const fq_msg_t *msg)
{
    s_watcher_args_t *self = state;
    fq_terminated_t notice;
    if (fq_msg_decode(msg, &fq_terminated_desc, &notice) == 0)
        return fq_tell(ctx, self->report_to, &fq_terminated_desc, &notice);
    fq_stop_after_t stop_after;
    if (fq_msg_decode(msg, &fq_stop_after_desc, &stop_after) != 0)
        return 0;
    fq_count_t count = {0};
    for (uint64_t i = 0; i < stop_after.count; i++) {
        int rc = fq_tell(ctx, stop_after.to, &fq_count_desc, &count);
        if (rc)
            return rc;
    }
    return fq_stop(ctx, stop_after.to);
}

static const fq_behaviour_t s_watcher = {
    .name = "watcher", .start = s_watcher_start, .receive = s_watcher_receive};

//  Nodes of a tree: each spawns its children in start and writes its path
//  to a shared log in stop, so a test sees the order of the stops.
typedef struct {
    pthread_mutex_t lock;
    int count;
    char paths[S_LOG_MAX][FQ_PATH_MAX + 1];
} s_stop_log_t;

typedef struct s_node s_node_t;
struct s_node {
    const char *name;
    s_node_t *children[2];
    s_stop_log_t *log;
};

static int s_node_start(fq_ctx_t *ctx, void *args, void **state_p);
static int s_node_receive(fq_ctx_t *ctx, void *state, const fq_msg_t *msg);
static void s_node_stop(fq_ctx_t *ctx, void *state);
static const fq_behaviour_t s_node = {
    .name = "node", .start = s_node_start, .receive = s_node_receive, .stop = s_node_stop};

static int s_node_start(fq_ctx_t *ctx, void *args, void **state_p)
{
    s_node_t *self = args;
    *state_p = self;
    for (size_t i = 0; i < sizeof self->children / sizeof *self->children; i++) {
        s_node_t *child = self->children[i];
        int rc = child ? fq_spawn(ctx, child->name, &s_node, child, NULL) : 0;
        if (rc)
            return rc;
    }
    return 0;
}

static int s_node_receive(fq_ctx_t *ctx, void *state, const fq_msg_t *msg)
{
    (void)ctx;
    (void)state;
    (void)msg;
    return 0;
}

static void s_node_stop(fq_ctx_t *ctx, void *state)
{
    s_node_t *self = state;
    pthread_mutex_lock(&self->log->lock);
    if (self->log->count < S_LOG_MAX)
        snprintf(self->log->paths[self->log->count++], FQ_PATH_MAX + 1, "%s", fq_self(ctx));
    pthread_mutex_unlock(&self->log->lock);
}

static int s_stop_log_count(s_stop_log_t *log)
{
    pthread_mutex_lock(&log->lock);
    int count = log->count;
    pthread_mutex_unlock(&log->lock);
    return count;
}

//  Where path stands in the stop log, or -1.
static int s_stop_log_index(s_stop_log_t *log, const char *path)
{
    int index = -1;
    pthread_mutex_lock(&log->lock);
    for (int i = 0; i < log->count && index < 0; i++)
        if (streq(log->paths[i], path))
            index = i;
    pthread_mutex_unlock(&log->lock);
    return index;
}

//  The blocker takes its first PING and then waits, in receive, until the
//  test releases it (or gives up: a failed test must not hang teardown).
typedef struct {
    sem_t entered;
    sem_t release;
} s_blocker_args_t;

static int s_blocker_start(fq_ctx_t *ctx, void *args, void **state_p)
{
    (void)ctx;
    *state_p = args;
    return 0;
}

static int s_blocker_receive(fq_ctx_t *ctx, void *state, const fq_msg_t *msg)
{
    (void)ctx;
    s_blocker_args_t *self = state;
    if (msg->type != FQ_MSG_PING)
        return 0;
    sem_post(&self->entered);
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += FQ_TEST_WAIT_MS / 1000;
    while (sem_timedwait(&self->release, &deadline) != 0 && errno == EINTR)
        ;
    return 0;
}

static const fq_behaviour_t s_blocker = {
    .name = "blocker", .start = s_blocker_start, .receive = s_blocker_receive};

//  ---------------------------------------------------------------------
//  Fixture: a system, a client, and the memory tests share with their
//  actors (here, not on a test's stack: actors still running at teardown
//  may use it until the system is destroyed)

typedef struct {
    fq_system_t *sys;
    fq_client_t *client;
    s_ticker_args_t ticker;
    s_counter_args_t counter;
    s_watcher_args_t watcher;
    s_stop_log_t log;
    s_node_t nodes[5];
    s_blocker_args_t blocker;
} s_fixture_t;

static int s_setup(void **state)
{
    s_fixture_t *fx = calloc(1, sizeof *fx);
    pthread_mutex_init(&fx->log.lock, NULL);
    sem_init(&fx->blocker.entered, 0, 0);
    sem_init(&fx->blocker.release, 0, 0);
    fq_system_config_t cfg = {.name = "lifecycle"};
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
    sem_destroy(&fx->blocker.entered);
    sem_destroy(&fx->blocker.release);
    pthread_mutex_destroy(&fx->log.lock);
    free(fx);
    return 0;
}

//  Builds the tree a(b, c(d)) in the fixture's nodes and spawns /user/a;
//  and e, alone, as /user/e when with_e.
static void s_spawn_tree(s_fixture_t *fx, bool with_e)
{
    s_node_t *a = &fx->nodes[0], *b = &fx->nodes[1], *c = &fx->nodes[2], *d = &fx->nodes[3];
    s_node_t *e = &fx->nodes[4];
    *d = (s_node_t){.name = "d", .log = &fx->log};
    *c = (s_node_t){.name = "c", .children = {d}, .log = &fx->log};
    *b = (s_node_t){.name = "b", .log = &fx->log};
    *a = (s_node_t){.name = "a", .children = {b, c}, .log = &fx->log};
    *e = (s_node_t){.name = "e", .log = &fx->log};
    assert_int_equal(fq_system_spawn(fx->sys, "a", &s_node, a, NULL), 0);
    if (with_e)
        assert_int_equal(fq_system_spawn(fx->sys, "e", &s_node, e, NULL), 0);
    //  Children are spawned by their parents' start: wait for the deepest
    assert_eventually(fq_test_stats(fx->sys, "/user/a/c/d").path[0]);
}

static fq_terminated_t s_decode_terminated(const fq_msg_t *msg)
{
    fq_terminated_t notice;
    assert_int_equal(fq_msg_decode(msg, &fq_terminated_desc, &notice), 0);
    return notice;
}

//  ---------------------------------------------------------------------
//  Tests

static void test_timer_once_fires_once(void **state)
{
    s_fixture_t *fx = *state;
    fx->ticker =
        (s_ticker_args_t){.report_to = fq_client_address(fx->client), .once_ms = S_ONCE_MS};
    int64_t started = zclock_mono();
    assert_int_equal(fq_system_spawn(fx->sys, "ticker", &s_ticker, &fx->ticker, NULL), 0);

    fq_msg_t msg;
    fq_test_expect(fx->client, FQ_MSG_TICK, &msg);
    int64_t elapsed = zclock_mono() - started;
    //  The timer's message came after its delay (loosely: CI is noisy) ...
    assert_true(elapsed >= S_ONCE_MS);
    assert_true(elapsed < S_ONCE_MS + FQ_TEST_WAIT_MS);
    //  ... and only once
    fq_test_expect_quiet(fx->client);
}

static void test_timer_every_repeats_until_cancelled(void **state)
{
    s_fixture_t *fx = *state;
    fx->ticker = (s_ticker_args_t){.report_to = fq_client_address(fx->client),
                                   .every_ms = S_EVERY_MS,
                                   .cancel_after = S_EVERY_CANCEL};
    int64_t started = zclock_mono();
    assert_int_equal(fq_system_spawn(fx->sys, "ticker", &s_ticker, &fx->ticker, NULL), 0);

    for (uint64_t n = 1; n <= S_EVERY_CANCEL; n++) {
        fq_msg_t msg;
        fq_test_expect(fx->client, FQ_MSG_TICK, &msg);
        fq_tick_t tick;
        assert_int_equal(fq_msg_decode(&msg, &fq_tick_desc, &tick), 0);
        assert_int_equal(tick.n, n);
    }
    //  The periodic timer fired again and again, an interval apart
    assert_true(zclock_mono() - started >= S_EVERY_CANCEL * S_EVERY_MS);
    //  Once cancelled, it fires no more
    fq_test_expect_quiet(fx->client);
}

static void test_watch_sees_stop_after_queued_messages(void **state)
{
    s_fixture_t *fx = *state;
    fx->watcher =
        (s_watcher_args_t){.target = "/user/target", .report_to = fq_client_address(fx->client)};
    assert_int_equal(fq_system_spawn(fx->sys, "target", &s_counter, &fx->counter, NULL), 0);
    assert_int_equal(fq_system_spawn(fx->sys, "watcher", &s_watcher, &fx->watcher, NULL), 0);

    //  The watcher tells the target COUNTs, then stops it with fq_stop
    fq_stop_after_t stop_after = {.to = "/user/target", .count = S_QUEUED};
    assert_int_equal(fq_client_tell(fx->client, "/user/watcher", &fq_stop_after_desc, &stop_after),
                     0);

    fq_msg_t msg;
    fq_test_expect(fx->client, FQ_MSG_TERMINATED, &msg);
    fq_terminated_t notice = s_decode_terminated(&msg);
    //  The watcher was told the target ended normally, and by whom
    assert_string_equal(msg.sender, "/user/watcher");
    assert_string_equal(notice.path, "/user/target");
    assert_false(notice.failed);
    assert_non_null(strstr(notice.reason, "/user/watcher"));
    //  The stop was a poison pill: what was queued before it was handled
    assert_int_equal(atomic_load(&fx->counter.stops), 1);
    assert_int_equal(atomic_load(&fx->counter.counted_at_stop), S_QUEUED);
}

static void test_client_stop_and_watch(void **state)
{
    s_fixture_t *fx = *state;
    assert_int_equal(fq_system_spawn(fx->sys, "target", &s_counter, &fx->counter, NULL), 0);
    assert_int_equal(fq_client_watch(fx->client, "/user/target"), 0);

    fq_count_t count = {0};
    for (int i = 0; i < S_QUEUED; i++)
        assert_int_equal(fq_client_tell(fx->client, "/user/target", &fq_count_desc, &count), 0);
    assert_int_equal(fq_client_stop(fx->client, "/user/target"), 0);

    fq_msg_t msg;
    fq_test_expect(fx->client, FQ_MSG_TERMINATED, &msg);
    fq_terminated_t notice = s_decode_terminated(&msg);
    //  The client's own watch reports the stop
    assert_string_equal(notice.path, "/user/target");
    assert_false(notice.failed);
    //  Everything told before the stop was handled before it
    assert_int_equal(atomic_load(&fx->counter.counted_at_stop), S_QUEUED);
    //  The actor is gone
    assert_int_equal(fq_client_tell(fx->client, "/user/target", &fq_count_desc, &count),
                     FQ_ENOACTOR);
    //  Stopping what is not there is refused; a malformed path too
    assert_int_equal(fq_client_stop(fx->client, "/user/target"), FQ_ENOACTOR);
    assert_int_equal(fq_client_stop(fx->client, "user/target"), FQ_EINVAL);
}

static void test_watch_missing_actor_answers_at_once(void **state)
{
    s_fixture_t *fx = *state;
    fq_msg_t msg;
    //  A client watching nothing hears at once that it is gone
    assert_int_equal(fq_client_watch(fx->client, "/user/nobody"), 0);
    fq_test_expect(fx->client, FQ_MSG_TERMINATED, &msg);
    fq_terminated_t notice = s_decode_terminated(&msg);
    assert_string_equal(notice.path, "/user/nobody");
    assert_false(notice.failed);

    //  So does an actor
    fx->watcher =
        (s_watcher_args_t){.target = "/user/nobody", .report_to = fq_client_address(fx->client)};
    assert_int_equal(fq_system_spawn(fx->sys, "watcher", &s_watcher, &fx->watcher, NULL), 0);
    fq_test_expect(fx->client, FQ_MSG_TERMINATED, &msg);
    notice = s_decode_terminated(&msg);
    assert_string_equal(msg.sender, "/user/watcher");
    assert_string_equal(notice.path, "/user/nobody");
    //  A malformed address is an error, not a notice
    assert_int_equal(fq_client_watch(fx->client, "nobody"), FQ_EINVAL);
    fq_test_expect_quiet(fx->client);
}

static void test_subtree_stop_children_first(void **state)
{
    s_fixture_t *fx = *state;
    s_spawn_tree(fx, false);
    const char *paths[] = {"/user/a", "/user/a/b", "/user/a/c", "/user/a/c/d"};
    const size_t npaths = sizeof paths / sizeof *paths;
    fq_count_t count = {0};
    for (size_t i = 0; i < npaths; i++) {
        assert_int_equal(fq_client_watch(fx->client, paths[i]), 0);
        //  The client's routes to them are cached from here on
        assert_int_equal(fq_client_tell(fx->client, paths[i], &fq_count_desc, &count), 0);
    }

    assert_int_equal(fq_client_stop(fx->client, "/user/a"), 0);
    //  Every watcher is told, once per actor, of a normal stop
    bool told[4] = {false};
    for (size_t n = 0; n < npaths; n++) {
        fq_msg_t msg;
        fq_test_expect(fx->client, FQ_MSG_TERMINATED, &msg);
        fq_terminated_t notice = s_decode_terminated(&msg);
        assert_false(notice.failed);
        size_t i = 0;
        while (i < npaths && !streq(paths[i], notice.path))
            i++;
        assert_true(i < npaths);
        assert_false(told[i]);
        told[i] = true;
    }
    //  Each behaviour's stop ran, children's before their parent's
    assert_int_equal(s_stop_log_count(&fx->log), 4);
    int a = s_stop_log_index(&fx->log, "/user/a");
    int b = s_stop_log_index(&fx->log, "/user/a/b");
    int c = s_stop_log_index(&fx->log, "/user/a/c");
    int d = s_stop_log_index(&fx->log, "/user/a/c/d");
    assert_true(a >= 0 && b >= 0 && c >= 0 && d >= 0);
    assert_true(d < c);
    assert_true(c < a);
    assert_true(b < a);
    //  None of them can be reached any more, even through cached routes
    for (size_t i = 0; i < npaths; i++)
        assert_int_equal(fq_client_tell(fx->client, paths[i], &fq_count_desc, &count), FQ_ENOACTOR);
}

static void test_stats_count_depth_and_handled(void **state)
{
    s_fixture_t *fx = *state;
    assert_int_equal(fq_system_spawn(fx->sys, "blocker", &s_blocker, &fx->blocker, NULL), 0);
    fq_ping_t ping = {.seq = 1, .text = "hold on"};
    assert_int_equal(fq_client_tell(fx->client, "/user/blocker", &fq_ping_desc, &ping), 0);
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += FQ_TEST_WAIT_MS / 1000;
    assert_int_equal(sem_timedwait(&fx->blocker.entered, &deadline), 0);

    fq_count_t count = {0};
    for (int i = 0; i < S_QUEUED; i++)
        assert_int_equal(fq_client_tell(fx->client, "/user/blocker", &fq_count_desc, &count), 0);
    fq_actor_stats_t stats = fq_test_stats(fx->sys, "/user/blocker");
    //  While the actor is busy, its mailbox holds all that was sent since
    assert_string_equal(stats.path, "/user/blocker");
    assert_int_equal(stats.mailbox_depth, S_QUEUED);
    assert_int_equal(stats.handled, 1);

    sem_post(&fx->blocker.release);
    //  Released, it drains the mailbox and counts every message handled
    assert_eventually(fq_test_stats(fx->sys, "/user/blocker").mailbox_depth == 0);
    stats = fq_test_stats(fx->sys, "/user/blocker");
    assert_int_equal(stats.handled, S_QUEUED + 1);
    assert_int_equal(stats.restarts, 0);
    assert_int_equal(stats.failures, 0);
    assert_int_equal(stats.malformed, 0);
}

//  Collects the paths fq_system_foreach_stats reports.
typedef struct {
    int count;
    char paths[S_LOG_MAX][FQ_PATH_MAX + 1];
} s_listing_t;

static void s_list_actor(const fq_actor_stats_t *stats, void *arg)
{
    s_listing_t *listing = arg;
    if (listing->count < S_LOG_MAX)
        snprintf(listing->paths[listing->count], FQ_PATH_MAX + 1, "%s", stats->path);
    listing->count++;
}

static bool s_listed(const s_listing_t *listing, const char *path)
{
    for (int i = 0; i < listing->count && i < S_LOG_MAX; i++)
        if (streq(listing->paths[i], path))
            return true;
    return false;
}

static void test_foreach_stats_lists_live_actors(void **state)
{
    s_fixture_t *fx = *state;
    s_spawn_tree(fx, true);
    s_listing_t listing = {0};
    int count = fq_system_foreach_stats(fx->sys, s_list_actor, &listing);
    //  Every live actor is listed once, with the guardians and the client
    assert_int_equal(count, listing.count);
    const char *expected[] = {"/user",     "/system",     "/user/a", "/user/a/b",
                              "/user/a/c", "/user/a/c/d", "/user/e", fq_client_address(fx->client)};
    for (size_t i = 0; i < sizeof expected / sizeof *expected; i++)
        if (!s_listed(&listing, expected[i]))
            fail_msg("%s is not listed", expected[i]);

    assert_int_equal(fq_client_watch(fx->client, "/user/e"), 0);
    assert_int_equal(fq_client_stop(fx->client, "/user/e"), 0);
    fq_msg_t msg;
    fq_test_expect(fx->client, FQ_MSG_TERMINATED, &msg);
    //  A stopped actor is no longer listed
    listing = (s_listing_t){0};
    assert_int_equal(fq_system_foreach_stats(fx->sys, s_list_actor, &listing), count - 1);
    assert_false(s_listed(&listing, "/user/e"));
    assert_true(s_listed(&listing, "/user/a"));
}

static void test_system_destroy_stops_running_actors(void **state)
{
    s_fixture_t *fx = *state;
    s_spawn_tree(fx, true);
    fq_client_destroy(&fx->client);
    fq_system_destroy(&fx->sys);
    //  Destroying the system ran every actor's stop ...
    assert_int_equal(s_stop_log_count(&fx->log), 5);
    int a = s_stop_log_index(&fx->log, "/user/a");
    int b = s_stop_log_index(&fx->log, "/user/a/b");
    int c = s_stop_log_index(&fx->log, "/user/a/c");
    int d = s_stop_log_index(&fx->log, "/user/a/c/d");
    assert_true(s_stop_log_index(&fx->log, "/user/e") >= 0);
    //  ... children before their parents
    assert_true(a >= 0 && b >= 0 && c >= 0 && d >= 0);
    assert_true(d < c);
    assert_true(c < a);
    assert_true(b < a);
}

static void test_path_reusable_after_stop(void **state)
{
    s_fixture_t *fx = *state;
    fq_count_t count = {0};
    for (int round = 0; round < S_RESPAWNS; round++) {
        //  Once its watchers are told it stopped, its name is free again
        int rc = fq_system_spawn(fx->sys, "phoenix", &s_counter, &fx->counter, NULL);
        if (rc != 0)
            fail_msg("round %d: spawning /user/phoenix again gave %s", round, fq_err_name(rc));
        assert_int_equal(fq_client_tell(fx->client, "/user/phoenix", &fq_count_desc, &count), 0);
        assert_int_equal(fq_client_watch(fx->client, "/user/phoenix"), 0);
        assert_int_equal(fq_client_stop(fx->client, "/user/phoenix"), 0);
        fq_msg_t msg;
        fq_test_expect(fx->client, FQ_MSG_TERMINATED, &msg);
        assert_string_equal(s_decode_terminated(&msg).path, "/user/phoenix");
    }
    //  Every incarnation got its message
    assert_int_equal(atomic_load(&fx->counter.counted), S_RESPAWNS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_timer_once_fires_once, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_timer_every_repeats_until_cancelled, s_setup,
                                        s_teardown),
        cmocka_unit_test_setup_teardown(test_watch_sees_stop_after_queued_messages, s_setup,
                                        s_teardown),
        cmocka_unit_test_setup_teardown(test_client_stop_and_watch, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_watch_missing_actor_answers_at_once, s_setup,
                                        s_teardown),
        cmocka_unit_test_setup_teardown(test_subtree_stop_children_first, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_stats_count_depth_and_handled, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_foreach_stats_lists_live_actors, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_system_destroy_stops_running_actors, s_setup,
                                        s_teardown),
        cmocka_unit_test_setup_teardown(test_path_reusable_after_stop, s_setup, s_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
