/*  log_test.c — one format for every line a fairq program writes
    (fq_log.h): fairq's own lines, the runtime's, and CZMQ's own.

    Each test captures the process's stdout (file descriptor 1, where
    fq_log writes unless told otherwise) in a temporary file, logs, and
    reads the lines back: each must be

        2025-01-02 03:04:05.678 UTC [pid] LEVEL:  text

    CZMQ writes its last lines from its exit handler, after main returns,
    so the test of those runs this program again (S_EXIT_LINES_ARG) and
    reads that process's stdout.
*/
#include "fq_gateway.h"
#include "fq_log.h"
#include "fq_system.h"
#include "fq_test_msgs.h"
#include <stdarg.h>
#include <setjmp.h>
#include <cmocka.h>
#include <fcntl.h>
#include <regex.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

//  A line of fairq's: its stamp, pid, level tag and text (the groups).
#define S_LINE_PATTERN                                                                             \
    "^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3} UTC "                       \
    "\\[([0-9]+)\\] (DEBUG|INFO|WARNING|ERROR|FATAL):  (.*)$"
#define S_GROUP_PID   1
#define S_GROUP_LEVEL 2
#define S_GROUP_TEXT  3
#define S_GROUPS      4

//  How long a test waits for a line an actor thread writes: generous, as
//  tests run under ASan on a shared two-core machine.
#define S_WAIT_MS 5000
#define S_POLL_MS 5

//  Run with this argument, the program leaves a socket open at exit, for
//  CZMQ's exit handler to complain about (test_czmq_exit_lines).
#define S_EXIT_LINES_ARG "--leave-a-socket-open"

//  What zconfig cannot parse: a name followed by a second word.
#define S_NOT_ZPL "hello world\n"

//  ---------------------------------------------------------------------
//  Capturing stdout

typedef struct {
    FILE *file; //  Where file descriptor 1 goes meanwhile
    int saved;  //  Where it went before
} s_capture_t;

static void s_capture_start(s_capture_t *self)
{
    fflush(stdout);
    self->file = tmpfile();
    assert_non_null(self->file);
    self->saved = dup(STDOUT_FILENO);
    assert_true(self->saved >= 0);
    assert_true(dup2(fileno(self->file), STDOUT_FILENO) >= 0);
}

//  What was written so far, while the capture goes on. Caller frees.
static char *s_capture_text(s_capture_t *self)
{
    fflush(stdout);
    struct stat st;
    assert_int_equal(fstat(fileno(self->file), &st), 0);
    char *text = calloc(1, (size_t)st.st_size + 1);
    assert_non_null(text);
    assert_int_equal(pread(fileno(self->file), text, (size_t)st.st_size, 0), st.st_size);
    return text;
}

//  Ends the capture: stdout is the test's again. Returns what was
//  written; caller frees.
static char *s_capture_end(s_capture_t *self)
{
    char *text = s_capture_text(self);
    assert_true(dup2(self->saved, STDOUT_FILENO) >= 0);
    close(self->saved);
    fclose(self->file);
    return text;
}

//  ---------------------------------------------------------------------
//  Reading lines back

//  Checks that every line of text is one of fairq's, of this process
//  (pid) or any (0). Returns how many lines there are.
static int s_check_lines(const char *text, pid_t pid)
{
    regex_t pattern;
    assert_int_equal(regcomp(&pattern, S_LINE_PATTERN, REG_EXTENDED), 0);
    int count = 0;
    for (const char *line = text; *line; count++) {
        size_t len = strcspn(line, "\n");
        assert_int_equal(line[len], '\n'); //  Every line ends
        char *copy = strndup(line, len);
        assert_non_null(copy);
        regmatch_t groups[S_GROUPS];
        if (regexec(&pattern, copy, S_GROUPS, groups, 0) != 0)
            fail_msg("not a line of fairq's: \"%s\"", copy);
        if (pid)
            assert_int_equal(atoi(copy + groups[S_GROUP_PID].rm_so), pid);
        free(copy);
        line += len + 1;
    }
    regfree(&pattern);
    return count;
}

//  Whether text holds a line of level whose text starts with start.
static bool s_has_line(const char *text, const char *level, const char *start)
{
    char wanted[256];
    snprintf(wanted, sizeof wanted, " %s:  %s", level, start);
    for (const char *at = strstr(text, wanted); at; at = strstr(at + 1, wanted)) {
        //  At the tag of a line, not inside another's text
        const char *line = at;
        while (line > text && line[-1] != '\n')
            line--;
        if (strstr(line, " UTC [") && strstr(line, " UTC [") < at)
            return true;
    }
    return false;
}

//  Waits until the capture holds a line of level starting with start.
static void s_wait_line(s_capture_t *capture, const char *level, const char *start)
{
    int64_t deadline = zclock_mono() + S_WAIT_MS;
    for (;;) {
        char *text = s_capture_text(capture);
        bool found = s_has_line(text, level, start);
        free(text);
        if (found)
            return;
        if (zclock_mono() > deadline)
            fail_msg("no %s line \"%s...\" within %d ms", level, start, S_WAIT_MS);
        zclock_sleep(S_POLL_MS);
    }
}

//  ---------------------------------------------------------------------
//  fairq's own lines

static void test_fairq_lines(void **unused)
{
    (void)unused;
    s_capture_t capture;
    s_capture_start(&capture);
    fq_log(FQ_LOG_INFO, "connected to database after %d attempts", 3);
    fq_log(FQ_LOG_DEBUG, "not shown below the threshold");
    //  libpq's errors span lines: folded into one
    fq_log(FQ_LOG_WARNING, "could not connect to server\n\tIs the server running?\n");
    fq_log_set_level(FQ_LOG_DEBUG);
    fq_log(FQ_LOG_DEBUG, "shown at debug");
    fq_log_set_level(FQ_LOG_INFO);
    char *text = s_capture_end(&capture);
    assert_int_equal(s_check_lines(text, getpid()), 3);
    assert_true(s_has_line(text, "INFO", "connected to database after 3 attempts\n"));
    assert_true(
        s_has_line(text, "WARNING", "could not connect to server; Is the server running?\n"));
    assert_true(s_has_line(text, "DEBUG", "shown at debug\n"));
    assert_null(strstr(text, "not shown"));
    free(text);
}

//  fq_log_set_stream: a program whose stdout carries something else.
static void test_stream(void **unused)
{
    (void)unused;
    char *written = NULL;
    size_t size = 0;
    FILE *stream = open_memstream(&written, &size);
    assert_non_null(stream);
    s_capture_t capture;
    s_capture_start(&capture);
    fq_log_set_stream(stream);
    fq_log(FQ_LOG_ERROR, "into the stream");
    fq_log_set_stream(NULL);
    fclose(stream);
    char *text = s_capture_end(&capture);
    assert_string_equal(text, "");
    assert_int_equal(s_check_lines(written, getpid()), 1);
    assert_true(s_has_line(written, "ERROR", "into the stream\n"));
    free(text);
    free(written);
}

//  ---------------------------------------------------------------------
//  The runtime's lines

//  Fails on any message.
static int s_fail_receive(fq_ctx_t *ctx, void *state, const fq_msg_t *msg)
{
    (void)ctx;
    (void)state;
    (void)msg;
    return FQ_EFAILED;
}

static const fq_behaviour_t s_failing = {.name = "failing", .receive = s_fail_receive};

static void test_runtime_lines(void **unused)
{
    (void)unused;
    s_capture_t capture;
    s_capture_start(&capture);
    fq_system_t *sys = fq_system_new(&(fq_system_config_t){.name = "logged"});
    assert_non_null(sys);
    //  A gateway refused at once, in the calling thread
    assert_int_equal(fq_gateway_start(sys, &(fq_gateway_config_t){0}), FQ_EINVAL);
    //  An actor that fails, in the guardian's thread
    fq_spawn_opts_t opts = fq_spawn_opts_default();
    opts.supervision.strategy = FQ_SUPERVISE_STOP;
    assert_int_equal(fq_system_spawn(sys, "failing", &s_failing, NULL, &opts), 0);
    fq_client_t *client = fq_client_new(sys);
    assert_non_null(client);
    assert_int_equal(
        fq_client_tell(client, "/user/failing", &fq_crash_desc, &(fq_crash_t){.how = "fail"}), 0);
    s_wait_line(&capture, "WARNING", "actor /user/failing failed: ");
    fq_client_destroy(&client);
    fq_system_destroy(&sys);
    char *text = s_capture_end(&capture);
    assert_true(s_check_lines(text, getpid()) >= 2);
    assert_true(s_has_line(text, "ERROR", "gateway: nothing to bind or connect\n"));
    free(text);
}

//  ---------------------------------------------------------------------
//  CZMQ's own lines

static void test_czmq_lines(void **unused)
{
    (void)unused;
    char path[] = "/tmp/fq_log_test_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, S_NOT_ZPL, strlen(S_NOT_ZPL)), (ssize_t)strlen(S_NOT_ZPL));
    close(fd);

    s_capture_t capture;
    s_capture_start(&capture);
    //  A system routes CZMQ's log through fq_log (the first does)
    fq_system_t *sys = fq_system_new(&(fq_system_config_t){.name = "czmq"});
    assert_non_null(sys);
    zsys_error("as %s writes it", "zauth");
    zsys_warning("a warning");
    zsys_notice("a notice");
    //  zconfig's parser, which zauth runs on every file of an allow
    //  directory, prints with zclock_log
    assert_null(zconfig_load(path));
    assert_null(zcert_load(path));
    fq_system_destroy(&sys);
    char *text = s_capture_end(&capture);
    unlink(path);
    assert_int_equal(s_check_lines(text, getpid()), 5);
    assert_true(s_has_line(text, "ERROR", "czmq: as zauth writes it\n"));
    assert_true(s_has_line(text, "WARNING", "czmq: a warning\n"));
    assert_true(s_has_line(text, "INFO", "czmq: a notice\n"));
    assert_true(s_has_line(text, "ERROR", "czmq: zconfig: (1) invalid syntax 'world'\n"));
    free(text);
}

//  What the program does with S_EXIT_LINES_ARG: a system, then a socket
//  left open (held here, so that LeakSanitizer sees no leak) for CZMQ's
//  exit handler to report.
static zsock_t *s_left_open;

static int s_leave_a_socket_open(void)
{
    fq_system_t *sys = fq_system_new(&(fq_system_config_t){.name = "leaving"});
    if (!sys)
        return EXIT_FAILURE;
    fq_system_destroy(&sys);
    s_left_open = zsock_new(ZMQ_PAIR);
    return s_left_open ? EXIT_SUCCESS : EXIT_FAILURE;
}

//  CZMQ's exit handler, after main returns, reports sockets left open.
static void test_czmq_exit_lines(void **state)
{
    const char *program = *state;
    int out[2];
    assert_int_equal(pipe(out), 0);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&actions, out[0]);
    char *argv[] = {(char *)program, S_EXIT_LINES_ARG, NULL};
    pid_t pid;
    assert_int_equal(posix_spawn(&pid, program, &actions, NULL, argv, environ), 0);
    posix_spawn_file_actions_destroy(&actions);
    close(out[1]);
    char text[4096];
    size_t len = 0;
    ssize_t got;
    while (len + 1 < sizeof text && (got = read(out[0], text + len, sizeof text - 1 - len)) > 0)
        len += (size_t)got;
    text[len] = 0;
    close(out[0]);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), EXIT_SUCCESS);
    assert_int_equal(s_check_lines(text, pid), 1);
    char wanted[64];
    snprintf(wanted, sizeof wanted, "czmq: [%d]dangling 'PAIR' socket created at ", (int)pid);
    assert_true(s_has_line(text, "ERROR", wanted));
}

int main(int argc, char *argv[])
{
    if (argc == 2 && strcmp(argv[1], S_EXIT_LINES_ARG) == 0)
        return s_leave_a_socket_open();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fairq_lines),
        cmocka_unit_test(test_stream),
        cmocka_unit_test(test_runtime_lines),
        cmocka_unit_test(test_czmq_lines),
        cmocka_unit_test_prestate(test_czmq_exit_lines, "/proc/self/exe"),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
