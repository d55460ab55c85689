/*  fd_reader_test.c — an actor waits on a file descriptor in its own loop
    (fq_ctx_add_fd_reader), as the intake waits on its PostgreSQL socket. */
#include "fq_system.h"
#include "fq_test_msgs.h"
#include <setjmp.h>
#include <stdarg.h>
#include <cmocka.h>
#include <unistd.h>

#define S_WAIT_MS 2000

//  The actor's args: the pipe end to read, and the client to tell.
typedef struct {
    int fd;
    const char *notify;
} s_args_t;

static int s_on_readable(fq_ctx_t *ctx, void *state, int fd)
{
    s_args_t *args = state;
    char buffer[64];
    ssize_t n = read(fd, buffer, sizeof buffer);
    if (n <= 0) {
        //  End of file: a dead descriptor stays readable, so it must go
        fq_ctx_remove_fd_reader(ctx, fd);
        fq_result_t closed = {.status = -1, .text = "closed"};
        return fq_tell(ctx, args->notify, &fq_result_desc, &closed);
    }
    fq_result_t result = {.status = 0, .value = (uint64_t)n, .text = ""};
    return fq_tell(ctx, args->notify, &fq_result_desc, &result);
}

static int s_start(fq_ctx_t *ctx, void *args, void **state_p)
{
    s_args_t *self = args;
    *state_p = self;
    return fq_ctx_add_fd_reader(ctx, self->fd, s_on_readable);
}

static int s_receive(fq_ctx_t *ctx, void *state, const fq_msg_t *msg)
{
    (void)ctx;
    (void)state;
    (void)msg;
    return 0;
}

static const fq_behaviour_t s_watcher = {
    .name = "fd watcher", .start = s_start, .receive = s_receive};

static void s_expect(fq_client_t *client, int64_t status, uint64_t value)
{
    fq_msg_t msg;
    assert_int_equal(fq_client_recv(client, S_WAIT_MS, &msg), 0);
    fq_result_t result;
    assert_int_equal(fq_msg_decode(&msg, &fq_result_desc, &result), 0);
    assert_int_equal(result.status, status);
    if (status == 0)
        assert_int_equal(result.value, value);
}

//  Bytes written to the pipe wake the actor, each time; closing the write
//  end wakes it once more, and it removes the descriptor without spinning.
static void test_fd_wakes_the_actor(void **unused)
{
    (void)unused;
    fq_system_config_t cfg = {.name = "fd"};
    fq_system_t *sys = fq_system_new(&cfg);
    fq_client_t *client = fq_client_new(sys);
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    s_args_t args = {.fd = fds[0], .notify = fq_client_address(client)};
    assert_int_equal(fq_system_spawn(sys, "watcher", &s_watcher, &args, NULL), 0);
    assert_int_equal(write(fds[1], "abc", 3), 3);
    s_expect(client, 0, 3);
    assert_int_equal(write(fds[1], "de", 2), 2);
    s_expect(client, 0, 2);
    close(fds[1]);
    s_expect(client, -1, 0);
    fq_msg_t more;
    assert_int_equal(fq_client_recv(client, 200, &more), FQ_ETIMEDOUT);
    fq_actor_stats_t stats;
    assert_int_equal(fq_system_stats(sys, "/user/watcher", &stats), 0);
    assert_int_equal(stats.failures, 0);
    fq_client_destroy(&client);
    fq_system_destroy(&sys);
    close(fds[0]);
}

//  A negative descriptor is refused.
static void test_bad_fd_is_refused(void **unused)
{
    (void)unused;
    fq_system_config_t cfg = {.name = "fdbad"};
    fq_system_t *sys = fq_system_new(&cfg);
    s_args_t args = {.fd = -1, .notify = "/temp/none"};
    fq_spawn_opts_t opts = fq_spawn_opts_default();
    opts.supervision.strategy = FQ_SUPERVISE_STOP;
    assert_int_equal(fq_system_spawn(sys, "watcher", &s_watcher, &args, &opts), 0);
    //  Its start fails with FQ_EINVAL, and it is stopped for good
    int64_t deadline = zclock_mono() + S_WAIT_MS;
    while (fq_system_lookup(sys, "/user/watcher") == 0 && zclock_mono() < deadline)
        zclock_sleep(10);
    assert_int_equal(fq_system_lookup(sys, "/user/watcher"), FQ_ENOACTOR);
    fq_system_destroy(&sys);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fd_wakes_the_actor),
        cmocka_unit_test(test_bad_fd_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
