/*  fq_transport_exec.c — the exec kind: a command per message (contract
    in fq_transport_exec.h).

    fairq-sender is threaded (actors, ZeroMQ's I/O threads), so the
    command starts by posix_spawn, never a fork that would copy a process
    whose other threads hold locks: glibc's posix_spawn clones without
    copying memory and runs nothing but the file actions before exec. The
    child gets only descriptors 0, 1 and 2 (closefrom), since ZeroMQ's
    sockets and other workers' pipes are none of its business.

    One thread then feeds the command's stdin and reads its stderr at the
    same time (poll), since a command may write much before reading all:
    writing all first could block on both sides for ever. A pidfd tells
    when the command ends; where the kernel has none, a short poll step
    does. The command's end, not its pipes, ends the wait: a command that
    leaves a background child holding stderr open is not waited for.
*/
#include "fq_error.h"
#include "fq_transport_exec.h"
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sysexits.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

//  A command that takes longer has failed (transiently), and its process
//  group is killed: as long as an SMTP delivery may take.
#define S_TIMEOUT_DEFAULT_MS 30000

//  Most words a command may have (its program and arguments).
#define S_ARGS_MAX 64

//  What separates the command's words.
#define S_BLANKS " \t"

//  The variables a message sets, and the prefix of those it replaces: the
//  whole FAIRQ_ namespace of the sender's environment is kept back.
#define S_VARS       7
#define S_VAR_PREFIX "FAIRQ_"

//  Of the command's stderr, what is kept for the error: its first line
//  is shown, and a line longer than this is cut. The rest is read and
//  dropped, so that the command never blocks on a full pipe.
#define S_STDERR_KEEP 512
#define S_READ_CHUNK  4096

//  At most this much of the input is written per poll round, so that the
//  stderr side gets its turn.
#define S_WRITE_CHUNK 65536

//  Without a pidfd, how often the command's end is looked for.
#define S_REAP_STEP_MS 5

#define S_MS_PER_S  1000
#define S_NS_PER_MS 1000000

struct fq_exec {
    char *words;                //  The command, cut into words in place
    char *argv[S_ARGS_MAX + 1]; //  Into words, NULL-terminated
    char **env;                 //  The sender's environment but FAIRQ_*
    size_t env_count;
    int timeout_ms;
};

static int64_t s_now_ms(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * S_MS_PER_S + now.tv_nsec / S_NS_PER_MS;
}

// --------------------------------------------------------------------------
//  Set-up

//  Splits cfg's command into argv and checks its program.
static int s_parse_command(fq_exec_t *self, const char *command, char *error, size_t error_size)
{
    if (!command || !*command) {
        fq_error_format(error, error_size, "exec transport needs a command");
        return FQ_EINVAL;
    }
    if (!(self->words = strdup(command))) {
        fq_error_format(error, error_size, "out of memory");
        return FQ_ENOMEM;
    }
    size_t argc = 0;
    char *saved = NULL;
    for (char *word = strtok_r(self->words, S_BLANKS, &saved); word;
         word = strtok_r(NULL, S_BLANKS, &saved)) {
        if (argc == S_ARGS_MAX) {
            fq_error_format(error, error_size, "exec command has more than %d words", S_ARGS_MAX);
            return FQ_EINVAL;
        }
        self->argv[argc++] = word;
    }
    self->argv[argc] = NULL;
    if (argc == 0 || self->argv[0][0] != '/') {
        fq_error_format(error, error_size,
                        "exec command \"%s\" does not start with an absolute program path",
                        command);
        return FQ_EINVAL;
    }
    struct stat st;
    const char *reason = NULL;
    if (stat(self->argv[0], &st) != 0 || access(self->argv[0], X_OK) != 0)
        reason = strerror(errno);
    else if (!S_ISREG(st.st_mode))
        reason = "not a regular file";
    if (reason) {
        fq_error_format(error, error_size, "exec command: cannot run %s: %s", self->argv[0],
                        reason);
        return FQ_EINVAL;
    }
    return 0;
}

//  Copies the sender's environment, but its FAIRQ_ variables.
static int s_copy_env(fq_exec_t *self)
{
    size_t count = 0;
    for (char **var = environ; var && *var; var++)
        count++;
    self->env = calloc(count + 1, sizeof *self->env);
    if (!self->env)
        return FQ_ENOMEM;
    for (char **var = environ; var && *var; var++) {
        if (strncmp(*var, S_VAR_PREFIX, strlen(S_VAR_PREFIX)) == 0)
            continue;
        if (!(self->env[self->env_count] = strdup(*var)))
            return FQ_ENOMEM;
        self->env_count++;
    }
    return 0;
}

fq_exec_t *fq_exec_new(const fq_transport_config_t *cfg, char *error, size_t error_size)
{
    fq_exec_t *self = calloc(1, sizeof *self);
    if (!self) {
        fq_error_format(error, error_size, "out of memory");
        return NULL;
    }
    self->timeout_ms = cfg->timeout_ms > 0 ? cfg->timeout_ms : S_TIMEOUT_DEFAULT_MS;
    if (s_parse_command(self, cfg->command, error, error_size) != 0)
        fq_exec_destroy(&self);
    else if (s_copy_env(self) != 0) {
        fq_error_format(error, error_size, "out of memory");
        fq_exec_destroy(&self);
    }
    return self;
}

void fq_exec_destroy(fq_exec_t **self_p)
{
    assert(self_p);
    fq_exec_t *self = *self_p;
    if (!self)
        return;
    for (size_t i = 0; self->env && i < self->env_count; i++)
        free(self->env[i]);
    free(self->env);
    free(self->words);
    free(self);
    *self_p = NULL;
}

// --------------------------------------------------------------------------
//  One run

//  The environment of msg's command: the kept one and msg's variables
//  (vars, S_VARS strings the caller frees). A NULL-terminated array the
//  caller frees (not its strings), or NULL when out of memory.
static char **s_env(fq_exec_t *self, const fq_delivery_t *msg, char *vars[S_VARS])
{
    const char *tenant = msg->tenant ? msg->tenant : "";
    const char *to = msg->to ? msg->to : "";
    const char *method = msg->method ? msg->method : "";
    int rc = 0;
    rc |= asprintf(&vars[0], "FAIRQ_MESSAGE_ID=%llu", (unsigned long long)msg->id) < 0;
    rc |= asprintf(&vars[1], "FAIRQ_TENANT=%s", tenant) < 0;
    rc |= asprintf(&vars[2], "FAIRQ_REQUEST_ID=%llu", (unsigned long long)msg->request_id) < 0;
    rc |= asprintf(&vars[3], "FAIRQ_ATTEMPT=%u", (unsigned)msg->attempt) < 0;
    rc |= asprintf(&vars[4], "FAIRQ_CHANNEL=%s", fq_delivery_channel(msg)) < 0;
    rc |= asprintf(&vars[5], "FAIRQ_TO=%s", to) < 0;
    rc |= asprintf(&vars[6], "FAIRQ_METHOD=%s", method) < 0;
    char **env = rc ? NULL : calloc(self->env_count + S_VARS + 1, sizeof *env);
    if (!env)
        return NULL;
    memcpy(env, self->env, self->env_count * sizeof *env);
    memcpy(env + self->env_count, vars, S_VARS * sizeof *env);
    return env;
}

//  Starts the command with env, its stdin and stderr on pipes (ours:
//  *in and *err, non-blocking). Returns 0, or an errno.
static int s_spawn(fq_exec_t *self, char **env, pid_t *pid, int *in, int *err)
{
    int in_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1};
    if (pipe2(in_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0) {
        int saved = errno;
        for (int i = 0; i < 2; i++) {
            if (in_pipe[i] >= 0)
                close(in_pipe[i]);
            if (err_pipe[i] >= 0)
                close(err_pipe[i]);
        }
        return saved;
    }
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attr;
    posix_spawn_file_actions_init(&actions);
    posix_spawnattr_init(&attr);
    posix_spawn_file_actions_adddup2(&actions, in_pipe[0], STDIN_FILENO);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, err_pipe[1], STDERR_FILENO);
    posix_spawn_file_actions_addclosefrom_np(&actions, STDERR_FILENO + 1);
    //  Its own process group, so that a timeout kills whatever it started;
    //  no signal blocked (fairq-sender's threads block SIGTERM and SIGINT,
    //  this one SIGPIPE) and none ignored (fairq-sender ignores SIGPIPE)
    sigset_t none, defaults;
    sigemptyset(&none);
    sigemptyset(&defaults);
    const int reset[] = {SIGPIPE, SIGHUP, SIGINT, SIGTERM, SIGQUIT, SIGCHLD, SIGUSR1, SIGUSR2};
    for (size_t i = 0; i < sizeof reset / sizeof reset[0]; i++)
        sigaddset(&defaults, reset[i]);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                        POSIX_SPAWN_SETSIGDEF);
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    int rc = posix_spawn(pid, self->argv[0], &actions, &attr, self->argv, env);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    close(in_pipe[0]);
    close(err_pipe[1]);
    if (rc != 0) {
        close(in_pipe[1]);
        close(err_pipe[0]);
        return rc;
    }
    fcntl(in_pipe[1], F_SETFL, O_NONBLOCK);
    fcntl(err_pipe[0], F_SETFL, O_NONBLOCK);
    *in = in_pipe[1];
    *err = err_pipe[0];
    return 0;
}

//  A command's run: its pipes, what it said, how it ended.
typedef struct {
    pid_t pid;
    int in, err, pidfd;
    const char *input;
    size_t len, written;
    char said[S_STDERR_KEEP];
    size_t said_len;
    bool exited;
    int status;
} s_run_t;

static void s_close(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

//  Reads what stderr holds now; closes it at its end.
static void s_read_stderr(s_run_t *run)
{
    char chunk[S_READ_CHUNK];
    while (run->err >= 0) {
        ssize_t got = read(run->err, chunk, sizeof chunk);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0 && errno == EAGAIN)
            return;
        if (got <= 0) {
            s_close(&run->err);
            return;
        }
        size_t room = sizeof run->said - run->said_len;
        size_t keep = (size_t)got < room ? (size_t)got : room;
        memcpy(run->said + run->said_len, chunk, keep);
        run->said_len += keep;
    }
}

//  Writes what stdin takes now; closes it once all is written, or when
//  the command stopped reading (EPIPE: its exit status tells the rest).
static void s_write_stdin(s_run_t *run)
{
    if (run->in < 0)
        return;
    size_t left = run->len - run->written;
    size_t count = left < S_WRITE_CHUNK ? left : S_WRITE_CHUNK;
    ssize_t done = count ? write(run->in, run->input + run->written, count) : 0;
    if (done > 0)
        run->written += (size_t)done;
    else if (done < 0 && errno != EAGAIN && errno != EINTR)
        s_close(&run->in);
    if (run->in >= 0 && run->written == run->len)
        s_close(&run->in);
}

//  Feeds, reads and waits until the command ends or deadline passes.
//  Returns true when it ended.
static bool s_wait_end(s_run_t *run, int64_t deadline)
{
    while (true) {
        pid_t got = waitpid(run->pid, &run->status, WNOHANG);
        if (got == run->pid) {
            run->exited = true;
            s_read_stderr(run); //  What it wrote before its end
            return true;
        }
        if (got < 0 && errno != EINTR)
            return false; //  Not ours to wait for any more (cannot happen)
        int64_t left = deadline - s_now_ms();
        if (left <= 0)
            return false;
        struct pollfd items[3];
        nfds_t count = 0;
        if (run->in >= 0)
            items[count++] = (struct pollfd){.fd = run->in, .events = POLLOUT};
        if (run->err >= 0)
            items[count++] = (struct pollfd){.fd = run->err, .events = POLLIN};
        if (run->pidfd >= 0)
            items[count++] = (struct pollfd){.fd = run->pidfd, .events = POLLIN};
        int wait = run->pidfd >= 0 || left < S_REAP_STEP_MS ? (int)left : S_REAP_STEP_MS;
        if (poll(items, count, wait) < 0 && errno != EINTR)
            return false;
        for (nfds_t i = 0; i < count; i++) {
            if (!items[i].revents)
                continue;
            if (items[i].fd == run->in)
                s_write_stdin(run);
            else if (items[i].fd == run->err)
                s_read_stderr(run);
        }
        if (run->in >= 0 && run->written == run->len)
            s_close(&run->in);
    }
}

//  The end of the run, classified, with the error said.
static fq_delivery_result_t s_outcome(fq_exec_t *self, s_run_t *run, char *error, size_t error_size)
{
    if (!run->exited) {
        fq_error_format(error, error_size, "timed out after %d ms", self->timeout_ms);
        return FQ_DELIVERY_TRANSIENT;
    }
    char line[S_STDERR_KEEP];
    fq_transport_text_line(line, sizeof line, run->said, run->said_len);
    const char *sep = *line ? ": " : "";
    if (WIFSIGNALED(run->status)) {
        const char *name = sigabbrev_np(WTERMSIG(run->status));
        if (name)
            fq_error_format(error, error_size, "killed by SIG%s%s%s", name, sep, line);
        else
            fq_error_format(error, error_size, "killed by signal %d%s%s", WTERMSIG(run->status),
                            sep, line);
        return FQ_DELIVERY_TRANSIENT;
    }
    int code = WEXITSTATUS(run->status);
    if (code == 0)
        return FQ_DELIVERY_OK;
    fq_error_format(error, error_size, "exit %d%s%s", code, sep, line);
    return code == EX_TEMPFAIL ? FQ_DELIVERY_TRANSIENT : FQ_DELIVERY_PERMANENT;
}

fq_delivery_result_t fq_exec_run(fq_exec_t *self, const fq_delivery_t *msg, const char *input,
                                 size_t len, char *error, size_t error_size)
{
    assert(self);
    char *vars[S_VARS] = {0};
    char **env = s_env(self, msg, vars);
    if (!env) {
        for (int i = 0; i < S_VARS; i++)
            free(vars[i]);
        fq_error_format(error, error_size, "out of memory");
        return FQ_DELIVERY_TRANSIENT;
    }
    //  A command that exits without reading all its input makes a write
    //  raise SIGPIPE, which would end a process that does not ignore it:
    //  blocked in this thread meanwhile, and taken back if raised here
    sigset_t pipe_only, old_mask, pending;
    sigemptyset(&pipe_only);
    sigaddset(&pipe_only, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_only, &old_mask);
    sigpending(&pending);
    bool pipe_was_pending = sigismember(&pending, SIGPIPE);

    s_run_t run = {.in = -1, .err = -1, .pidfd = -1, .input = input, .len = len};
    int64_t deadline = s_now_ms() + self->timeout_ms;
    int rc = s_spawn(self, env, &run.pid, &run.in, &run.err);
    fq_delivery_result_t result;
    if (rc != 0) {
        fq_error_format(error, error_size, "could not run %s: %s", self->argv[0], strerror(rc));
        result = FQ_DELIVERY_TRANSIENT;
    } else {
        run.pidfd = pidfd_open(run.pid, 0);
        if (run.in >= 0 && run.len == 0)
            s_close(&run.in);
        if (!s_wait_end(&run, deadline)) {
            //  Its whole group: a shell's children too
            kill(-run.pid, SIGKILL);
            while (waitpid(run.pid, &run.status, 0) < 0 && errno == EINTR)
                ;
        }
        s_close(&run.in);
        s_close(&run.err);
        s_close(&run.pidfd);
        result = s_outcome(self, &run, error, error_size);
    }

    if (!pipe_was_pending) {
        sigpending(&pending);
        if (sigismember(&pending, SIGPIPE)) {
            struct timespec zero = {0, 0};
            sigtimedwait(&pipe_only, NULL, &zero);
        }
    }
    pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
    free(env);
    for (int i = 0; i < S_VARS; i++)
        free(vars[i]);
    return result;
}
