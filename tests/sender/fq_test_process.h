/*  fq_test_process.h — the sender tests' helper processes: the sinks
    (tests/e2e/smtp_sink.py, tests/e2e/http_sink.py) and Python checks,
    started with pipes on their stdin and stdout, waited for with a
    deadline. Include after <cmocka.h>.

    A sink runs with --quit-on-eof and its stdin on a pipe of ours: it
    ends when the test closes the pipe, or when the test dies however it
    dies, so no test leaves a server behind.
*/
#ifndef FQ_TEST_PROCESS_H
#define FQ_TEST_PROCESS_H

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define FQ_TEST_MS_PER_S  1000
#define FQ_TEST_US_PER_MS 1000
#define FQ_TEST_NS_PER_MS 1000000

//  Polling step while waiting for a process to end.
#define FQ_TEST_POLL_MS 10

static inline int64_t fq_test_now_ms(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * FQ_TEST_MS_PER_S + now.tv_nsec / FQ_TEST_NS_PER_MS;
}

//  Starts argv[0] with pipes on its stdin and stdout (ours: *in, *out);
//  its stderr is ours, so what it complains about shows in the test log.
static inline pid_t fq_test_spawn(char *const argv[], int *in, int *out)
{
    int in_pipe[2], out_pipe[2];
    assert_int_equal(pipe2(in_pipe, O_CLOEXEC), 0);
    assert_int_equal(pipe2(out_pipe, O_CLOEXEC), 0);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in_pipe[0], STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
    pid_t pid;
    int rc = posix_spawn(&pid, argv[0], &actions, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    close(in_pipe[0]);
    close(out_pipe[1]);
    if (rc != 0)
        fail_msg("could not start %s: %s", argv[0], strerror(rc));
    *in = in_pipe[1];
    *out = out_pipe[0];
    return pid;
}

//  Waits up to timeout_ms for pid to end; its exit status, or -1 if it
//  still runs (then it is killed, and reaped).
static inline int fq_test_wait(pid_t pid, int timeout_ms)
{
    int64_t deadline = fq_test_now_ms() + timeout_ms;
    int status;
    while (true) {
        pid_t rc = waitpid(pid, &status, WNOHANG);
        if (rc == pid)
            return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        if (rc < 0 && errno != EINTR)
            return -1;
        if (fq_test_now_ms() >= deadline)
            break;
        usleep(FQ_TEST_POLL_MS * FQ_TEST_US_PER_MS);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return -1;
}

//  Reads one line from fd within timeout_ms, byte by byte (so nothing
//  after it is taken from the pipe). Returns 0, or -1.
static inline int fq_test_read_line(int fd, char *line, size_t size, int timeout_ms)
{
    int64_t deadline = fq_test_now_ms() + timeout_ms;
    size_t used = 0;
    while (used + 1 < size) {
        int64_t wait = deadline - fq_test_now_ms();
        if (wait <= 0)
            return -1;
        struct pollfd item = {.fd = fd, .events = POLLIN};
        int rc = poll(&item, 1, (int)wait);
        if (rc < 0 && errno == EINTR)
            continue;
        if (rc <= 0)
            return -1;
        char c;
        if (read(fd, &c, 1) != 1)
            return -1;
        if (c == '\n') {
            line[used] = 0;
            return 0;
        }
        line[used++] = c;
    }
    return -1;
}

#endif
