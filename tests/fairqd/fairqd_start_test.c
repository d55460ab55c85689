/*  fairqd_start_test.c — the real fairqd binary, started with posix_spawn
    against databases of its own (fq_test_sql.h), its stdout read through a
    pipe and its stderr kept in a file:

    * a first start applies every migration, logs each step in the log
      format, and a SIGTERM stops it cleanly (exit 0, "stopped");
    * a second start (configured by a file) applies nothing, ignores a
      stray SIGUSR1, and SIGINT stops it as well;
    * a database newer than the binary is refused (exit 3, the store's
      error in the log);
    * a configuration error ends it with exit 2 and the message on stderr,
      a database connection string libpq cannot read among them (with
      libpq's reason, its password masked), never retried;
    * an unreachable database is retried, with doubling waits, until
      SIGTERM; a database that appears meanwhile is used;
    * --help, --version and --print-config print and exit 0;
    * SIGHUP reloads the config file and the environment under the flags
      it was started with: log_level changes at once (debug lines
      appear), a key that cannot change live is named as needing a
      restart, a summary line says what changed; a file with an error is
      logged and the running configuration kept, fairqd still runs;
    * the gateway: insecure, with CURVE (an allowed sender joins), one
      that cannot start (exit 1), and one whose configuration it refuses
      (exit 2): a certificate that is missing or lacks its _secret file,
      an allow directory that is missing, a plain file or unreadable;
    * "fairqd token create": a fresh database gets its schema and an admin
      token that the store knows as one; a tenant's token from a config
      file, in JSON; exit 1 for no such tenant or an unreachable database
      (one attempt, no retry), 2 for bad arguments or configuration, 3 for
      a newer schema; the token alone on stdout, errors on stderr.

    fairqd is found by the path compiled in (FQ_FAIRQD overrides it). */
#include "fq_gateway.h"
#include "fq_test_migrations.h"
#include "fq_store.h"
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <regex.h>
#include <stdbool.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include "fq_test_sql.h"

extern char **environ;

#ifndef FQ_FAIRQD_PATH
#define FQ_FAIRQD_PATH "fairqd"
#endif

//  fairqd's exit codes (fairqd.c).
#define S_EXIT_OK      0
#define S_EXIT_FAILURE 1
#define S_EXIT_CONFIG  2
#define S_EXIT_SCHEMA  3

//  Generous bounds for what takes milliseconds: sanitizers and a loaded
//  machine slow process start, migrations and CURVE handshakes down.
#define S_STEP_TIMEOUT_MS 30000
//  Failed connection attempts the test sees before it stops fairqd.
#define S_RETRY_LINES 4

//  Short connection retries, so that a test sees several in a second.
#define S_RETRY_MIN_MS "20"
#define S_RETRY_MAX_MS "80"

//  Buffers: unread output, every line seen (for failure messages), a line.
#define S_PENDING_SIZE 16384
#define S_SEEN_SIZE    65536
#define S_LINE_SIZE    4096
#define S_PATH_SIZE    256
#define S_ARGS_MAX     16
#define S_ENV_EXTRA    4

//  What "fairqd token create" prints: "fq_" and 43 characters of URL-safe
//  base64 (FQ_STORE_TOKEN_SIZE with its NUL)
#define S_TOKEN_RE "fq_[A-Za-z0-9_-]{43}"

//  One log line of fairqd's own: time in UTC with milliseconds, pid, level
//  and a message that starts in lower case (PostgreSQL's style).
#define S_LOG_LINE_RE                                                                              \
    "^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3} UTC \\[([0-9]+)\\] "        \
    "(DEBUG|INFO|WARNING|ERROR|FATAL):  [a-z]"

typedef struct {
    pid_t pid;
    int out;                      //  Read end of its stdout
    char err_path[S_PATH_SIZE];   //  Its stderr
    char pending[S_PENDING_SIZE]; //  Read, not yet a whole line
    size_t pending_len;
    char seen[S_SEEN_SIZE]; //  Every line so far
    size_t seen_len;
    bool ended; //  Its stdout is closed
} s_fairqd_t;

//  The fairqd of the running test, killed by the teardown if the test
//  fails before it ends; and the same for its temporary files.
static s_fairqd_t *s_current;
static char s_temp_dir[S_PATH_SIZE];

static const char *s_program(void)
{
    const char *path = getenv("FQ_FAIRQD");
    return path && *path ? path : FQ_FAIRQD_PATH;
}

//  Starts fairqd with args (NULL-terminated) and the test's environment
//  plus env_extra (NULL-terminated "NAME=value", or NULL).
static void s_start(s_fairqd_t *self, const char *const *args, const char *const *env_extra)
{
    memset(self, 0, sizeof *self);
    int out[2];
    assert_int_equal(pipe2(out, O_CLOEXEC), 0);
    snprintf(self->err_path, sizeof self->err_path, "/tmp/fairqd_start_test_err_XXXXXX");
    int err = mkostemp(self->err_path, O_CLOEXEC);
    assert_true(err >= 0);

    const char *program = s_program();
    char *argv[S_ARGS_MAX + 2] = {(char *)program};
    for (int i = 0; args[i]; i++) {
        assert_true(i < S_ARGS_MAX);
        argv[i + 1] = (char *)args[i];
    }
    size_t nenv = 0;
    while (environ[nenv])
        nenv++;
    char **envp = calloc(nenv + S_ENV_EXTRA + 2, sizeof *envp);
    assert_non_null(envp);
    memcpy(envp, environ, nenv * sizeof *envp);
    //  The HTTP API on a port of its own: tests run side by side, and the
    //  default 8080 may be anyone's
    envp[nenv++] = "FAIRQ_HTTP_LISTEN=127.0.0.1:0";
    for (int i = 0; env_extra && env_extra[i]; i++) {
        assert_true(i < S_ENV_EXTRA);
        envp[nenv++] = (char *)env_extra[i];
    }

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, err, STDERR_FILENO);
    int rc = posix_spawn(&self->pid, program, &actions, NULL, argv, envp);
    posix_spawn_file_actions_destroy(&actions);
    free(envp);
    close(out[1]);
    close(err);
    self->out = out[0];
    if (rc != 0)
        fail_msg("could not start %s: %s", program, strerror(rc));
    s_current = self;
}

//  Everything fairqd wrote on stderr, malloc'ed.
static char *s_stderr(s_fairqd_t *self)
{
    FILE *file = fopen(self->err_path, "r");
    assert_non_null(file);
    char *text = calloc(1, S_SEEN_SIZE);
    assert_non_null(text);
    size_t len = fread(text, 1, S_SEEN_SIZE - 1, file);
    text[len] = 0;
    fclose(file);
    return text;
}

//  Fails the test with what fairqd wrote so far.
static void s_fail_with_output(s_fairqd_t *self, const char *what)
{
    //  Static: fail_msg does not return, so nothing here could be freed
    static char err[S_SEEN_SIZE];
    char *text = s_stderr(self);
    snprintf(err, sizeof err, "%s", text);
    free(text);
    fail_msg("%s\n--- fairqd stdout:\n%.*s--- fairqd stderr:\n%s", what, (int)self->seen_len,
             self->seen, err);
}

//  Reads fairqd's next stdout line until deadline. Returns 0, or -1 once
//  its output ended or the time is up.
static int s_next_line(s_fairqd_t *self, int64_t deadline, char *line, size_t size)
{
    while (true) {
        char *newline = memchr(self->pending, '\n', self->pending_len);
        if (newline) {
            size_t len = (size_t)(newline - self->pending);
            snprintf(line, size, "%.*s", (int)len, self->pending);
            if (self->seen_len + len + 1 < sizeof self->seen) {
                memcpy(self->seen + self->seen_len, self->pending, len + 1);
                self->seen_len += len + 1;
            }
            self->pending_len -= len + 1;
            memmove(self->pending, newline + 1, self->pending_len);
            return 0;
        }
        int64_t wait = deadline - fq_test_now_ms();
        if (self->ended || wait <= 0 || self->pending_len == sizeof self->pending)
            return -1;
        struct pollfd item = {.fd = self->out, .events = POLLIN};
        int rc = poll(&item, 1, (int)wait);
        if (rc < 0 && errno == EINTR)
            continue;
        if (rc <= 0)
            return -1;
        ssize_t got = read(self->out, self->pending + self->pending_len,
                           sizeof self->pending - self->pending_len);
        if (got <= 0)
            self->ended = true;
        else
            self->pending_len += (size_t)got;
    }
}

//  Reads lines until one contains needle, within timeout_ms; line (if not
//  NULL) gets it. Fails the test, showing the output, if none comes.
static void s_expect(s_fairqd_t *self, const char *needle, int timeout_ms, char *line, size_t size)
{
    int64_t deadline = fq_test_now_ms() + timeout_ms;
    char buffer[S_LINE_SIZE];
    while (s_next_line(self, deadline, buffer, sizeof buffer) == 0)
        if (strstr(buffer, needle)) {
            if (line)
                snprintf(line, size, "%s", buffer);
            return;
        }
    char what[S_LINE_SIZE + 64];
    snprintf(what, sizeof what, "fairqd did not log \"%.*s\" within %d ms", S_LINE_SIZE - 1, needle,
             timeout_ms);
    s_fail_with_output(self, what);
}

//  Reads the rest of the output, up to its end.
static void s_drain(s_fairqd_t *self)
{
    int64_t deadline = fq_test_now_ms() + S_STEP_TIMEOUT_MS;
    char line[S_LINE_SIZE];
    while (s_next_line(self, deadline, line, sizeof line) == 0)
        ;
}

//  Waits for fairqd to end. Returns its exit code, or 128 + the signal
//  that killed it; fails the test after timeout_ms.
static int s_wait(s_fairqd_t *self, int timeout_ms)
{
    int64_t deadline = fq_test_now_ms() + timeout_ms;
    while (true) {
        int status;
        pid_t rc = waitpid(self->pid, &status, WNOHANG);
        if (rc == self->pid) {
            self->pid = 0;
            s_drain(self);
            return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        }
        if (rc < 0 && errno != EINTR)
            fail_msg("waitpid: %s", strerror(errno));
        if (fq_test_now_ms() >= deadline)
            s_fail_with_output(self, "fairqd did not end");
        fq_test_sleep_ms(10);
    }
}

//  Sends sig and checks that fairqd stops cleanly: exit 0, "stopped" last.
static void s_stop(s_fairqd_t *self, int sig, const char *received)
{
    assert_int_equal(kill(self->pid, sig), 0);
    s_expect(self, received, S_STEP_TIMEOUT_MS, NULL, 0);
    char line[S_LINE_SIZE];
    s_expect(self, "INFO:  stopped", S_STEP_TIMEOUT_MS, line, sizeof line);
    int code = s_wait(self, S_STEP_TIMEOUT_MS);
    if (code != S_EXIT_OK)
        s_fail_with_output(self, "fairqd did not exit 0");
    assert_string_equal(strstr(line, "INFO:  "), "INFO:  stopped");
}

//  Checks that fairqd wrote nothing on stderr (sanitizer reports go there).
static void s_expect_quiet_stderr(s_fairqd_t *self)
{
    char *err = s_stderr(self);
    if (*err)
        s_fail_with_output(self, "fairqd wrote on stderr");
    free(err);
}

static void s_destroy(s_fairqd_t *self)
{
    if (self->pid > 0) {
        kill(self->pid, SIGKILL);
        waitpid(self->pid, NULL, 0);
        self->pid = 0;
    }
    if (self->out > 0)
        close(self->out);
    self->out = -1;
    if (self->err_path[0])
        unlink(self->err_path);
    self->err_path[0] = 0;
    s_current = NULL;
}

static void s_remove_dir(const char *path)
{
    zdir_t *dir = zdir_new(path, NULL);
    if (dir) {
        zdir_remove(dir, true);
        zdir_destroy(&dir);
    }
}

//  After each test: a fairqd still running is killed, temporary files go.
static int s_teardown(void **unused)
{
    (void)unused;
    if (s_current)
        s_destroy(s_current);
    if (s_temp_dir[0])
        s_remove_dir(s_temp_dir);
    s_temp_dir[0] = 0;
    return 0;
}

//  A temporary directory for the test's files, removed by the teardown.
static const char *s_make_temp_dir(void)
{
    snprintf(s_temp_dir, sizeof s_temp_dir, "/tmp/fairqd_start_test_XXXXXX");
    assert_non_null(mkdtemp(s_temp_dir));
    return s_temp_dir;
}

//  A loopback TCP port nothing listens on now (the kernel's choice).
static int s_free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(fd, (struct sockaddr *)&addr, sizeof addr), 0);
    socklen_t len = sizeof addr;
    assert_int_equal(getsockname(fd, (struct sockaddr *)&addr, &len), 0);
    close(fd);
    return ntohs(addr.sin_port);
}

//  True if something accepts TCP connections on the loopback port.
static bool s_port_open(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    struct sockaddr_in addr = {.sin_family = AF_INET,
                               .sin_port = htons((uint16_t)port),
                               .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    bool open = connect(fd, (struct sockaddr *)&addr, sizeof addr) == 0;
    close(fd);
    return open;
}

//  "--database=<conninfo>" for a database of the test.
static const char *s_database_flag(char *flag, size_t size, const char *conninfo)
{
    snprintf(flag, size, "--database=%s", conninfo);
    return flag;
}

//  An empty database: the first start applies every migration, logs each
//  step in fairqd's format, and SIGTERM stops it cleanly.
static void test_first_start_applies_every_migration(void **unused)
{
    (void)unused;
    char conninfo[128], database[160], line[S_LINE_SIZE], wanted[S_LINE_SIZE];
    assert_int_equal(fq_test_db_create_named("first", false, conninfo, sizeof conninfo), 0);
    const char *args[] = {s_database_flag(database, sizeof database, conninfo), NULL};
    s_fairqd_t fairqd;
    s_start(&fairqd, args, NULL);
    pid_t pid = fairqd.pid;
    s_expect(&fairqd, "INFO:  starting fairqd ", S_STEP_TIMEOUT_MS, NULL, 0);
    snprintf(wanted, sizeof wanted, "INFO:  connecting to database \"%s\"", conninfo);
    s_expect(&fairqd, wanted, S_STEP_TIMEOUT_MS, NULL, 0);
    s_expect(&fairqd, "INFO:  connected to database", S_STEP_TIMEOUT_MS, NULL, 0);
    snprintf(wanted, sizeof wanted, "INFO:  applied %d migrations, schema at version %d",
             fq_test_migration_count(), fq_test_latest_version());
    s_expect(&fairqd, wanted, S_STEP_TIMEOUT_MS, line, sizeof line);
    assert_string_equal(strstr(line, "INFO:  "), wanted); //  The whole message
    s_expect(&fairqd, "INFO:  actor system \"fairqd\" started", S_STEP_TIMEOUT_MS, NULL, 0);
    s_expect(&fairqd, "INFO:  ready", S_STEP_TIMEOUT_MS, NULL, 0);

    //  The migrations are in the database, once each
    PGconn *conn = fq_test_connect(conninfo);
    assert_int_equal(fq_test_int(conn, "SELECT count(*) FROM fairq.schema_migrations", 0),
                     fq_test_migration_count());
    PQfinish(conn);

    s_stop(&fairqd, SIGTERM, "INFO:  received SIGTERM, draining");
    s_expect_quiet_stderr(&fairqd);

    //  Every line is fairqd's format, with fairqd's pid
    regex_t format;
    assert_int_equal(regcomp(&format, S_LOG_LINE_RE, REG_EXTENDED), 0);
    int lines = 0;
    for (char *p = fairqd.seen; *p; lines++) {
        char *end = strchr(p, '\n');
        assert_non_null(end);
        snprintf(line, sizeof line, "%.*s", (int)(end - p), p);
        regmatch_t match[2];
        if (regexec(&format, line, 2, match, 0) != 0)
            fail_msg("not a log line: \"%s\"", line);
        assert_int_equal(strtol(line + match[1].rm_so, NULL, 10), pid);
        p = end + 1;
    }
    regfree(&format);
    assert_true(lines >= 7);
    s_destroy(&fairqd);
    fq_test_db_drop_named("first");
}

//  A migrated database: the next start applies nothing, and SIGINT stops
//  fairqd as SIGTERM does. Settings come from a config file here.
static void test_second_start_applies_nothing(void **unused)
{
    (void)unused;
    char conninfo[128], path[S_PATH_SIZE], wanted[S_LINE_SIZE], line[S_LINE_SIZE];
    assert_int_equal(fq_test_db_create_named("second", true, conninfo, sizeof conninfo), 0);
    assert_true(snprintf(path, sizeof path, "%s/fairq.conf", s_make_temp_dir()) < (int)sizeof path);
    FILE *file = fopen(path, "w");
    assert_non_null(file);
    fprintf(file, "# written by fairqd_start_test\ndatabase = \"%s\"\nname = second-start\n",
            conninfo);
    fclose(file);
    const char *args[] = {"--config", path, NULL};
    s_fairqd_t fairqd;
    s_start(&fairqd, args, NULL);
    snprintf(wanted, sizeof wanted, "INFO:  configuration read from %s", path);
    s_expect(&fairqd, wanted, S_STEP_TIMEOUT_MS, NULL, 0);
    snprintf(wanted, sizeof wanted, "INFO:  schema at version %d, nothing to apply",
             fq_test_latest_version());
    s_expect(&fairqd, wanted, S_STEP_TIMEOUT_MS, line, sizeof line);
    assert_string_equal(strstr(line, "INFO:  "), wanted);
    s_expect(&fairqd, "INFO:  actor system \"second-start\" started", S_STEP_TIMEOUT_MS, NULL, 0);
    s_expect(&fairqd, "INFO:  ready", S_STEP_TIMEOUT_MS, NULL, 0);
    //  SIGUSR1 is fairqd's own (an escalated failure): from outside, with
    //  nothing failed, it is ignored
    assert_int_equal(kill(fairqd.pid, SIGUSR1), 0);
    s_expect(&fairqd, "WARNING:  ignored SIGUSR1: fairqd uses it for its own failures",
             S_STEP_TIMEOUT_MS, NULL, 0);
    s_stop(&fairqd, SIGINT, "INFO:  received SIGINT, draining");
    s_expect_quiet_stderr(&fairqd);
    assert_null(strstr(fairqd.seen, "applied"));
    s_destroy(&fairqd);
    fq_test_db_drop_named("second");
}

//  A database migrated by a newer fairq: refused with the store's error,
//  exit 3, and nothing is started.
static void test_newer_schema_is_refused(void **unused)
{
    (void)unused;
    char conninfo[128], database[160], future[16], wanted[S_LINE_SIZE];
    assert_int_equal(fq_test_db_create_named("newer", true, conninfo, sizeof conninfo), 0);
    PGconn *conn = fq_test_connect(conninfo);
    fq_test_exec(conn, "INSERT INTO fairq.schema_migrations (version, name) VALUES ($1, 'future')",
                 1, fq_test_param(future, sizeof future, fq_test_latest_version() + 1));
    PQfinish(conn);
    const char *args[] = {s_database_flag(database, sizeof database, conninfo), NULL};
    s_fairqd_t fairqd;
    s_start(&fairqd, args, NULL);
    snprintf(wanted, sizeof wanted,
             "FATAL:  database schema is at version %d but this fairq knows only up to %d: "
             "upgrade fairq",
             fq_test_latest_version() + 1, fq_test_latest_version());
    s_expect(&fairqd, wanted, S_STEP_TIMEOUT_MS, NULL, 0);
    assert_int_equal(s_wait(&fairqd, S_STEP_TIMEOUT_MS), S_EXIT_SCHEMA);
    assert_non_null(strstr(fairqd.seen, "INFO:  stopped, exit code 3\n"));
    assert_null(strstr(fairqd.seen, "INFO:  ready"));
    assert_null(strstr(fairqd.seen, "actor system"));
    s_expect_quiet_stderr(&fairqd);
    s_destroy(&fairqd);
    fq_test_db_drop_named("newer");
}

//  Runs fairqd with args and env_extra and checks that it ends with a
//  configuration error: exit 2, stderr exactly "fairqd: <error>" and the
//  hint, nothing on stdout.
static void s_expect_config_error(const char *const *args, const char *const *env_extra,
                                  const char *error)
{
    s_fairqd_t fairqd;
    s_start(&fairqd, args, env_extra);
    assert_int_equal(s_wait(&fairqd, S_STEP_TIMEOUT_MS), S_EXIT_CONFIG);
    char *err = s_stderr(&fairqd);
    char wanted[S_LINE_SIZE];
    snprintf(wanted, sizeof wanted, "fairqd: %s\nTry \"fairqd --help\" for more information.\n",
             error);
    assert_string_equal(err, wanted);
    free(err);
    assert_int_equal(fairqd.seen_len, 0);
    s_destroy(&fairqd);
}

//  A bad config file, flag or variable: exit 2 with the message.
static void test_config_errors_exit_2(void **unused)
{
    (void)unused;
    char path[S_PATH_SIZE], wanted[S_LINE_SIZE];
    assert_true(snprintf(path, sizeof path, "%s/fairq.conf", s_make_temp_dir()) < (int)sizeof path);
    FILE *file = fopen(path, "w");
    assert_non_null(file);
    fprintf(file, "# a typo on line 3\n\ndatabse = dbname=x\n");
    fclose(file);
    const char *file_args[] = {"--config", path, NULL};
    snprintf(wanted, sizeof wanted,
             "config %s:3: unknown key \"databse\" (did you mean \"database\"?)", path);
    s_expect_config_error(file_args, NULL, wanted);

    const char *missing[] = {"--config=/nonexistent/fairq.conf", NULL};
    s_expect_config_error(missing, NULL,
                          "config /nonexistent/fairq.conf: could not open: No such file or "
                          "directory");
    const char *flag_args[] = {"--prefetch=0", NULL};
    s_expect_config_error(
        flag_args, NULL,
        "flag --prefetch: invalid value for \"prefetch\": 0 is out of range (2..10000)");
    const char *none[] = {NULL};
    const char *env[] = {"FAIRQ_LOG_LEVEL=loud", NULL};
    s_expect_config_error(none, env,
                          "environment FAIRQ_LOG_LEVEL: invalid value for \"log_level\": \"loud\" "
                          "is not one of debug|info|warning|error");
}

//  What libpq says of a connection string it cannot read (the test links
//  the libpq fairqd does), without its newline.
static void s_libpq_reason(const char *conninfo, char *reason, size_t size)
{
    char *error = NULL;
    PQconninfoOption *options = PQconninfoParse(conninfo, &error);
    assert_null(options);
    assert_non_null(error);
    snprintf(reason, size, "%.*s", (int)strcspn(error, "\n"), error);
    PQfreemem(error);
}

//  A connection string libpq cannot read is a configuration error, from
//  a flag, the environment or a file: exit 2 at once with libpq's reason
//  and where the string came from, not a retry for ever. A password in it
//  is masked in the message, as in the log.
static void test_malformed_database_exits_2(void **unused)
{
    (void)unused;
    char flag[S_PATH_SIZE], wanted[S_LINE_SIZE], reason[S_PATH_SIZE], path[S_PATH_SIZE];
    //  Retries would come every 20 ms: a start that retried would never end
    const char *args[] = {flag, "--database_retry_min_ms=" S_RETRY_MIN_MS,
                          "--database_retry_max_ms=" S_RETRY_MAX_MS, NULL};

    snprintf(flag, sizeof flag, "--database=%s", "host=db dbname");
    s_libpq_reason("host=db dbname", reason, sizeof reason);
    assert_non_null(strstr(reason, "\"dbname\""));
    snprintf(wanted, sizeof wanted, "flag --database: invalid value for \"database\": %s", reason);
    s_expect_config_error(args, NULL, wanted);

    snprintf(flag, sizeof flag, "--database=%s", "host=db colour=red");
    s_libpq_reason("host=db colour=red", reason, sizeof reason);
    assert_non_null(strstr(reason, "\"colour\""));
    snprintf(wanted, sizeof wanted, "flag --database: invalid value for \"database\": %s", reason);
    s_expect_config_error(args, NULL, wanted);

    const char *env[] = {"FAIRQ_DATABASE=postgresql://[::1", NULL};
    const char *none[] = {"--database_retry_min_ms=" S_RETRY_MIN_MS, NULL};
    s_libpq_reason("postgresql://[::1", reason, sizeof reason);
    snprintf(wanted, sizeof wanted,
             "environment FAIRQ_DATABASE: invalid value for \"database\": %s", reason);
    s_expect_config_error(none, env, wanted);

    //  libpq quotes a URI back whole: its password is masked
    snprintf(flag, sizeof flag, "--database=%s", "postgresql://fq:hunter2@[::1/fairq");
    s_expect_config_error(args, NULL,
                          "flag --database: invalid value for \"database\": end of string "
                          "reached when looking for matching \"]\" in IPv6 host address in URI: "
                          "\"postgresql://fq:********@[::1/fairq\"");

    assert_true(snprintf(path, sizeof path, "%s/fairq.conf", s_make_temp_dir()) < (int)sizeof path);
    FILE *file = fopen(path, "w");
    assert_non_null(file);
    fprintf(file, "name = hub\ndatabase = \"host=db colour=red\"\n");
    fclose(file);
    const char *file_args[] = {"--config", path, NULL};
    s_libpq_reason("host=db colour=red", reason, sizeof reason);
    snprintf(wanted, sizeof wanted, "config %s:2: invalid value for \"database\": %s", path,
             reason);
    s_expect_config_error(file_args, NULL, wanted);

    //  The LISTEN connection's string is checked the same way
    snprintf(flag, sizeof flag, "--database_listen=%s", "host=db colour=red");
    snprintf(wanted, sizeof wanted,
             "flag --database_listen: invalid value for \"database_listen\": %s", reason);
    s_expect_config_error(args, NULL, wanted);

    //  --help still helps
    s_fairqd_t fairqd;
    const char *help[] = {"--help", "--database=host=db dbname", NULL};
    s_start(&fairqd, help, NULL);
    assert_int_equal(s_wait(&fairqd, S_STEP_TIMEOUT_MS), S_EXIT_OK);
    s_destroy(&fairqd);
}

//  --help and --print-config print on stdout and exit 0, touching no
//  database; the printout masks the password.
static void test_help_and_print_config(void **unused)
{
    (void)unused;
    s_fairqd_t fairqd;
    const char *help[] = {"--help", NULL};
    s_start(&fairqd, help, NULL);
    assert_int_equal(s_wait(&fairqd, S_STEP_TIMEOUT_MS), S_EXIT_OK);
    assert_int_equal(strncmp(fairqd.seen, "usage: fairqd ", strlen("usage: fairqd ")), 0);
    assert_non_null(strstr(fairqd.seen, "\n  --database=CONNINFO  (FAIRQ_DATABASE, default \"\")"));
    assert_non_null(strstr(fairqd.seen, "\n  --http-listen=TEXT  (FAIRQ_HTTP_LISTEN, "));
    s_expect_quiet_stderr(&fairqd);
    s_destroy(&fairqd);

    //  --version: "fairqd" and the project's version, alone on its line
    const char *version[] = {"--version", "--databse=ignored", NULL};
    s_start(&fairqd, version, NULL);
    assert_int_equal(s_wait(&fairqd, S_STEP_TIMEOUT_MS), S_EXIT_OK);
    assert_string_equal(fairqd.seen, "fairqd " FQ_VERSION "\n");
    s_expect_quiet_stderr(&fairqd);
    s_destroy(&fairqd);

    const char *print[] = {"--print-config", "--database", "host=127.0.0.1 port=1 password=hunter2",
                           NULL};
    const char *env[] = {"FAIRQ_PREFETCH=12", NULL};
    s_start(&fairqd, print, env);
    assert_int_equal(s_wait(&fairqd, S_STEP_TIMEOUT_MS), S_EXIT_OK);
    assert_null(strstr(fairqd.seen, "hunter2"));
    assert_non_null(strstr(fairqd.seen, "\ndatabase = \"host=127.0.0.1 port=1 password=********\""
                                        "  # flag --database\n"));
    assert_non_null(strstr(fairqd.seen, "\nprefetch = 12  # environment FAIRQ_PREFETCH\n"));
    assert_null(strstr(fairqd.seen, "connecting"));
    s_expect_quiet_stderr(&fairqd);
    s_destroy(&fairqd);
}

//  Writes text as the config file at path, whole, before a SIGHUP reads it.
static void s_write_config(const char *path, const char *text)
{
    char temp[S_PATH_SIZE + 8];
    snprintf(temp, sizeof temp, "%s.new", path);
    FILE *file = fopen(temp, "w");
    assert_non_null(file);
    fputs(text, file);
    assert_int_equal(fclose(file), 0);
    assert_int_equal(rename(temp, path), 0);
}

//  SIGHUP reloads the config file under the flags fairqd started with:
//  log_level changes at once (debug lines appear), a key that cannot
//  change live is named as needing a restart and keeps its value, the
//  summary says it all; a file with an error is logged, the running
//  configuration kept, and fairqd goes on.
static void test_sighup_reloads_the_config(void **unused)
{
    (void)unused;
    char conninfo[128], path[S_PATH_SIZE], text[S_LINE_SIZE], wanted[S_LINE_SIZE];
    assert_int_equal(fq_test_db_create_named("reload", true, conninfo, sizeof conninfo), 0);
    assert_true(snprintf(path, sizeof path, "%s/fairqd.conf", s_make_temp_dir()) <
                (int)sizeof path);
    snprintf(text, sizeof text, "database = \"%s\"\nlog_level = info\n", conninfo);
    s_write_config(path, text);
    //  The flag wins over the file, at start and at every reload
    const char *args[] = {"--config", path, "--drain-timeout-ms=1234", NULL};
    s_fairqd_t fairqd;
    s_start(&fairqd, args, NULL);
    s_expect(&fairqd, "INFO:  ready", S_STEP_TIMEOUT_MS, NULL, 0);
    assert_null(strstr(fairqd.seen, "DEBUG:  "));

    snprintf(text, sizeof text,
             "database = \"%s\"\nlog_level = debug\nsplitters = 3\ndrain_timeout_ms = 99\n",
             conninfo);
    s_write_config(path, text);
    assert_int_equal(kill(fairqd.pid, SIGHUP), 0);
    s_expect(&fairqd, "INFO:  received SIGHUP, reloading config", S_STEP_TIMEOUT_MS, NULL, 0);
    snprintf(wanted, sizeof wanted,
             "WARNING:  reload: splitters changed (2 -> 3, config %s:3) but needs a restart", path);
    s_expect(&fairqd, wanted, S_STEP_TIMEOUT_MS, NULL, 0);
    snprintf(wanted, sizeof wanted,
             "INFO:  reloaded config %s: log_level info -> debug; splitters needs a restart", path);
    char line[S_LINE_SIZE];
    s_expect(&fairqd, wanted, S_STEP_TIMEOUT_MS, line, sizeof line);
    assert_string_equal(strstr(line, "INFO:  "), wanted); //  drain_timeout_ms: the flag's
    //  Debug lines now: the settings as they run, in the table's order
    //  (splitters unchanged, drain_timeout_ms the flag's)
    s_expect(&fairqd, "DEBUG:  setting splitters = \"2\" (default)", S_STEP_TIMEOUT_MS, NULL, 0);
    s_expect(&fairqd, "DEBUG:  setting drain_timeout_ms = \"1234\" (flag --drain-timeout-ms)",
             S_STEP_TIMEOUT_MS, NULL, 0);
    snprintf(wanted, sizeof wanted, "DEBUG:  setting log_level = \"debug\" (config %s:2)", path);
    s_expect(&fairqd, wanted, S_STEP_TIMEOUT_MS, NULL, 0);

    //  A typo: logged, nothing changes, fairqd runs on
    snprintf(text, sizeof text,
             "database = \"%s\"\nlog_level = info\nsplitters = 3\nlog_levle = x\n", conninfo);
    s_write_config(path, text);
    assert_int_equal(kill(fairqd.pid, SIGHUP), 0);
    snprintf(wanted, sizeof wanted,
             "ERROR:  could not reload config: config %s:4: unknown key \"log_levle\" (did you "
             "mean \"log_level\"?); the running configuration is kept",
             path);
    s_expect(&fairqd, wanted, S_STEP_TIMEOUT_MS, NULL, 0);
    assert_int_equal(kill(fairqd.pid, 0), 0);

    //  Mended: back to info; splitters is as it runs, so no longer a change
    snprintf(text, sizeof text, "database = \"%s\"\nlog_level = info\n", conninfo);
    s_write_config(path, text);
    assert_int_equal(kill(fairqd.pid, SIGHUP), 0);
    snprintf(wanted, sizeof wanted, "INFO:  reloaded config %s: log_level debug -> info", path);
    s_expect(&fairqd, wanted, S_STEP_TIMEOUT_MS, line, sizeof line);
    assert_string_equal(strstr(line, "INFO:  "), wanted);
    s_stop(&fairqd, SIGTERM, "INFO:  received SIGTERM, draining");
    s_expect_quiet_stderr(&fairqd);
    s_destroy(&fairqd);
    fq_test_db_drop_named("reload");
}

//  No server where the database should be: fairqd logs each failed
//  attempt, waits twice as long each time up to the cap, and SIGTERM ends
//  it cleanly while it waits.
static void test_unreachable_database_is_retried_until_sigterm(void **unused)
{
    (void)unused;
    const char *args[] = {"--database=host=127.0.0.1 port=1 dbname=nowhere connect_timeout=5",
                          "--database_retry_min_ms=" S_RETRY_MIN_MS,
                          "--database_retry_max_ms=" S_RETRY_MAX_MS, NULL};
    s_fairqd_t fairqd;
    s_start(&fairqd, args, NULL);
    const char *waits[S_RETRY_LINES] = {"retrying in 20 ms", "retrying in 40 ms",
                                        "retrying in 80 ms", "retrying in 80 ms"};
    for (int i = 0; i < S_RETRY_LINES; i++) {
        char line[S_LINE_SIZE];
        s_expect(&fairqd, "WARNING:  could not connect to database: ", S_STEP_TIMEOUT_MS, line,
                 sizeof line);
        assert_non_null(strstr(line, "127.0.0.1"));
        const char *tail = strstr(line, "; retrying in ");
        assert_non_null(tail);
        assert_string_equal(tail + 2, waits[i]);
    }
    s_stop(&fairqd, SIGTERM, "INFO:  received SIGTERM while connecting to the database");
    assert_null(strstr(fairqd.seen, "INFO:  ready"));
    s_expect_quiet_stderr(&fairqd);
    s_destroy(&fairqd);
}

//  A database that does not exist yet is waited for: once created, fairqd
//  connects, migrates it and runs.
static void test_database_that_appears_is_used(void **unused)
{
    (void)unused;
    char conninfo[128], database[160], sql[128];
    snprintf(conninfo, sizeof conninfo, "dbname=fq_test_%d_late", (int)getpid());
    fq_test_db_drop_named("late");
    const char *args[] = {s_database_flag(database, sizeof database, conninfo),
                          "--database_retry_min_ms=" S_RETRY_MIN_MS,
                          "--database_retry_max_ms=" S_RETRY_MAX_MS, NULL};
    s_fairqd_t fairqd;
    s_start(&fairqd, args, NULL);
    char line[S_LINE_SIZE];
    s_expect(&fairqd, "WARNING:  could not connect to database: ", S_STEP_TIMEOUT_MS, line,
             sizeof line);
    snprintf(sql, sizeof sql, "\"fq_test_%d_late\" does not exist", (int)getpid());
    assert_non_null(strstr(line, sql));
    snprintf(sql, sizeof sql, "CREATE DATABASE fq_test_%d_late", (int)getpid());
    assert_int_equal(fq_test_db_admin(sql), 0);
    s_expect(&fairqd, "INFO:  connected to database after ", S_STEP_TIMEOUT_MS, NULL, 0);
    s_expect(&fairqd, "INFO:  applied ", S_STEP_TIMEOUT_MS, NULL, 0);
    s_expect(&fairqd, "INFO:  ready", S_STEP_TIMEOUT_MS, NULL, 0);
    s_stop(&fairqd, SIGTERM, "INFO:  received SIGTERM, draining");
    s_expect_quiet_stderr(&fairqd);
    s_destroy(&fairqd);
    fq_test_db_drop_named("late");
}

//  gateway_insecure: the gateway listens (and says it is insecure), and
//  stops with fairqd.
static void test_insecure_gateway(void **unused)
{
    (void)unused;
    char conninfo[128], database[160], bind_flag[96], wanted[S_LINE_SIZE];
    assert_int_equal(fq_test_db_create_named("insecure", true, conninfo, sizeof conninfo), 0);
    int port = s_free_port();
    snprintf(bind_flag, sizeof bind_flag, "--gateway_bind=tcp://127.0.0.1:%d", port);
    const char *args[] = {s_database_flag(database, sizeof database, conninfo), bind_flag,
                          "--gateway_insecure", NULL};
    s_fairqd_t fairqd;
    s_start(&fairqd, args, NULL);
    snprintf(wanted, sizeof wanted,
             "WARNING:  gateway listening on tcp://127.0.0.1:%d without CURVE", port);
    s_expect(&fairqd, wanted, S_STEP_TIMEOUT_MS, NULL, 0);
    s_expect(&fairqd, "INFO:  ready", S_STEP_TIMEOUT_MS, NULL, 0);
    assert_true(s_port_open(port));
    s_stop(&fairqd, SIGTERM, "INFO:  received SIGTERM, draining");
    assert_false(s_port_open(port));
    s_destroy(&fairqd);
    fq_test_db_drop_named("insecure");
}

//  A CURVE gateway from gateway_cert and gateway_allow_dir: a sender whose
//  certificate is in the allow list joins fairqd's system. fairqd's
//  certificate is the one `fairqd --make-cert` writes, its secret half
//  readable by its owner only (even over an old file that was not).
static void test_curve_gateway_lets_an_allowed_sender_in(void **unused)
{
    (void)unused;
    char conninfo[128], database[160], bind_flag[96], cert_flag[S_PATH_SIZE + 32];
    char allow_flag[S_PATH_SIZE + 32], cert_path[S_PATH_SIZE], allow_dir[S_PATH_SIZE];
    char sender_path[S_PATH_SIZE * 2], endpoint[64], wanted[S_LINE_SIZE];
    assert_int_equal(fq_test_db_create_named("curve", true, conninfo, sizeof conninfo), 0);
    const char *dir = s_make_temp_dir();
    assert_true(snprintf(cert_path, sizeof cert_path, "%s/server.cert", dir) <
                (int)sizeof cert_path);
    assert_true(snprintf(allow_dir, sizeof allow_dir, "%s/allow", dir) < (int)sizeof allow_dir);
    snprintf(sender_path, sizeof sender_path, "%s/sender.cert", allow_dir);
    assert_int_equal(zsys_dir_create("%s", allow_dir), 0);
    //  A secret left readable by all at the path: the new one is not
    char secret_path[S_PATH_SIZE + 8];
    snprintf(secret_path, sizeof secret_path, "%s_secret", cert_path);
    int old_secret = open(secret_path, O_CREAT | O_WRONLY, 0644);
    assert_true(old_secret >= 0);
    assert_int_equal(fchmod(old_secret, 0644), 0);
    close(old_secret);
    s_fairqd_t fairqd;
    const char *make_cert[] = {"--make-cert", cert_path, NULL};
    s_start(&fairqd, make_cert, NULL);
    assert_int_equal(s_wait(&fairqd, S_STEP_TIMEOUT_MS), S_EXIT_OK);
    assert_non_null(strstr(fairqd.seen, "wrote "));
    s_destroy(&fairqd);
    struct stat secret;
    assert_int_equal(stat(secret_path, &secret), 0);
    assert_int_equal(secret.st_mode & 0777, 0600);
    //  The sender knows fairqd by the public half alone
    zcert_t *server = zcert_load(cert_path);
    assert_non_null(server);
    zcert_t *sender = zcert_new();
    assert_int_equal(zcert_save_public(sender, sender_path), 0);

    int port = s_free_port();
    snprintf(endpoint, sizeof endpoint, "tcp://127.0.0.1:%d", port);
    snprintf(bind_flag, sizeof bind_flag, "--gateway_bind=%s", endpoint);
    snprintf(cert_flag, sizeof cert_flag, "--gateway_cert=%s", cert_path);
    snprintf(allow_flag, sizeof allow_flag, "--gateway_allow_dir=%s", allow_dir);
    const char *args[] = {s_database_flag(database, sizeof database, conninfo),
                          bind_flag,
                          cert_flag,
                          allow_flag,
                          "--name=hub",
                          NULL};
    s_start(&fairqd, args, NULL);
    snprintf(wanted, sizeof wanted,
             "INFO:  gateway listening on %s (CURVE: certificate %s, allowed in: %s)", endpoint,
             cert_path, allow_dir);
    s_expect(&fairqd, wanted, S_STEP_TIMEOUT_MS, NULL, 0);
    s_expect(&fairqd, "INFO:  ready", S_STEP_TIMEOUT_MS, NULL, 0);

    //  A sender's system joins with the allowed certificate
    fq_system_t *system = fq_system_new(&(fq_system_config_t){.name = "sender-1"});
    assert_non_null(system);
    fq_gateway_config_t gateway = {
        .connect = endpoint, .cert = sender, .server_key = zcert_public_txt(server)};
    assert_int_equal(fq_gateway_start(system, &gateway), 0);
    if (fq_gateway_wait_connected(system, S_STEP_TIMEOUT_MS) != 0)
        s_fail_with_output(&fairqd, "the allowed sender could not join fairqd");
    s_expect(&fairqd, "peer sender-1 joined", S_STEP_TIMEOUT_MS, NULL, 0);
    fq_system_destroy(&system);

    s_stop(&fairqd, SIGTERM, "INFO:  received SIGTERM, draining");
    s_destroy(&fairqd);
    zcert_destroy(&server);
    zcert_destroy(&sender);
    fq_test_db_drop_named("curve");
}

//  A gateway that cannot start (its port is taken) ends fairqd with exit
//  1 and says why.
static void test_gateway_that_cannot_start(void **unused)
{
    (void)unused;
    char conninfo[128], database[160], bind_flag[64], wanted[S_LINE_SIZE];
    assert_int_equal(fq_test_db_create_named("nogw", true, conninfo, sizeof conninfo), 0);
    int taken = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(taken, (struct sockaddr *)&addr, sizeof addr), 0);
    assert_int_equal(listen(taken, 1), 0);
    socklen_t len = sizeof addr;
    assert_int_equal(getsockname(taken, (struct sockaddr *)&addr, &len), 0);
    int port = ntohs(addr.sin_port);
    snprintf(bind_flag, sizeof bind_flag, "--gateway_bind=tcp://127.0.0.1:%d", port);
    const char *args[] = {s_database_flag(database, sizeof database, conninfo), bind_flag,
                          "--gateway_insecure", NULL};
    s_fairqd_t fairqd;
    s_start(&fairqd, args, NULL);
    s_expect(&fairqd, "Address already in use", S_STEP_TIMEOUT_MS, NULL, 0);
    snprintf(wanted, sizeof wanted,
             "FATAL:  could not start the gateway on tcp://127.0.0.1:%d: /system/gateway: more "
             "than ",
             port);
    s_expect(&fairqd, wanted, S_STEP_TIMEOUT_MS, NULL, 0);
    assert_int_equal(s_wait(&fairqd, S_STEP_TIMEOUT_MS), S_EXIT_FAILURE);
    assert_null(strstr(fairqd.seen, "listening"));
    assert_null(strstr(fairqd.seen, "INFO:  ready"));
    s_destroy(&fairqd);
    close(taken);
    fq_test_db_drop_named("nogw");
}

//  Starts fairqd with a CURVE gateway from cert and allow_dir, which the
//  gateway must refuse saying reason: fairqd logs it, exits 2 (no
//  restart mends a configuration) and never says it is ready.
static void s_expect_gateway_refused(const char *conninfo, const char *cert, const char *allow_dir,
                                     const char *reason)
{
    char database[160], bind_flag[64], cert_flag[S_PATH_SIZE + 32], allow_flag[S_PATH_SIZE + 32];
    char wanted[S_LINE_SIZE];
    int port = s_free_port();
    snprintf(bind_flag, sizeof bind_flag, "--gateway_bind=tcp://127.0.0.1:%d", port);
    snprintf(cert_flag, sizeof cert_flag, "--gateway_cert=%s", cert);
    snprintf(allow_flag, sizeof allow_flag, "--gateway_allow_dir=%s", allow_dir);
    const char *args[] = {s_database_flag(database, sizeof database, conninfo), bind_flag,
                          cert_flag, allow_flag, NULL};
    s_fairqd_t fairqd;
    s_start(&fairqd, args, NULL);
    s_expect(&fairqd, reason, S_STEP_TIMEOUT_MS, NULL, 0);
    snprintf(wanted, sizeof wanted,
             "FATAL:  could not start the gateway on tcp://127.0.0.1:%d: invalid gateway "
             "configuration (gateway_cert \"%s\", gateway_allow_dir \"%s\")",
             port, cert, allow_dir);
    s_expect(&fairqd, wanted, S_STEP_TIMEOUT_MS, NULL, 0);
    assert_int_equal(s_wait(&fairqd, S_STEP_TIMEOUT_MS), S_EXIT_CONFIG);
    assert_non_null(strstr(fairqd.seen, "INFO:  stopped, exit code 2\n"));
    assert_null(strstr(fairqd.seen, "listening"));
    assert_null(strstr(fairqd.seen, "INFO:  ready"));
    assert_false(s_port_open(port));
    s_expect_quiet_stderr(&fairqd);
    s_destroy(&fairqd);
}

//  CURVE material with which no sender could ever join: fairqd refuses to
//  start (exit 2) and says why, rather than run where every handshake
//  fails without a word. A certificate that is not there, or without its
//  _secret file; an allow directory that is missing, a plain file, or
//  unreadable.
static void test_gateway_configuration_refused_exits_2(void **unused)
{
    (void)unused;
    char conninfo[128], cert[S_PATH_SIZE], public_only[S_PATH_SIZE], allow_dir[S_PATH_SIZE];
    char missing[S_PATH_SIZE], plain[S_PATH_SIZE], closed[S_PATH_SIZE], wanted[S_LINE_SIZE];
    assert_int_equal(fq_test_db_create_named("badgw", true, conninfo, sizeof conninfo), 0);
    const char *dir = s_make_temp_dir();
    assert_true(snprintf(cert, sizeof cert, "%s/server.cert", dir) < (int)sizeof cert);
    assert_true(snprintf(public_only, sizeof public_only, "%s/public.cert", dir) <
                (int)sizeof public_only);
    assert_true(snprintf(allow_dir, sizeof allow_dir, "%s/allow", dir) < (int)sizeof allow_dir);
    assert_true(snprintf(missing, sizeof missing, "%s/missing", dir) < (int)sizeof missing);
    assert_true(snprintf(plain, sizeof plain, "%s/plain", dir) < (int)sizeof plain);
    assert_true(snprintf(closed, sizeof closed, "%s/closed", dir) < (int)sizeof closed);
    assert_int_equal(zsys_dir_create("%s", allow_dir), 0);
    assert_int_equal(zsys_dir_create("%s", closed), 0);
    zcert_t *server = zcert_new();
    assert_int_equal(zcert_save(server, cert), 0);
    //  The public half alone: what is left when the _secret file is lost
    assert_int_equal(zcert_save_public(server, public_only), 0);
    zcert_destroy(&server);
    FILE *file = fopen(plain, "w");
    assert_non_null(file);
    fclose(file);

    snprintf(wanted, sizeof wanted, "could not load the CURVE certificate %s/nothere.cert", dir);
    char nothere[S_PATH_SIZE];
    assert_true(snprintf(nothere, sizeof nothere, "%s/nothere.cert", dir) < (int)sizeof nothere);
    s_expect_gateway_refused(conninfo, nothere, allow_dir, wanted);
    s_expect_gateway_refused(conninfo, public_only, allow_dir,
                             "the CURVE certificate has no secret key (its _secret file is "
                             "missing)");
    snprintf(wanted, sizeof wanted, "allow_dir %s: No such file or directory", missing);
    s_expect_gateway_refused(conninfo, cert, missing, wanted);
    snprintf(wanted, sizeof wanted, "allow_dir %s is not a directory", plain);
    s_expect_gateway_refused(conninfo, cert, plain, wanted);
    //  Permissions do not stop root from reading a directory
    if (geteuid() == 0)
        print_message("skipped the unreadable allow directory: running as root, who reads "
                      "it anyway\n");
    else {
        assert_int_equal(chmod(closed, 0), 0);
        snprintf(wanted, sizeof wanted, "allow_dir %s cannot be read: Permission denied", closed);
        s_expect_gateway_refused(conninfo, cert, closed, wanted);
        assert_int_equal(chmod(closed, S_IRWXU), 0);
    }
    fq_test_db_drop_named("badgw");
}

//  ---------------------------------------------------------------------
//  fairqd token create

//  Runs "fairqd token create" with args and env_extra to its end. Returns
//  its exit code; its stdout is in self->seen, its stderr in *err (the
//  caller frees).
static int s_token_create(s_fairqd_t *self, const char *const *args, const char *const *env_extra,
                          char **err)
{
    const char *argv[S_ARGS_MAX + 1] = {"token", "create"};
    int n = 2;
    for (int i = 0; args[i]; i++) {
        assert_true(n < S_ARGS_MAX);
        argv[n++] = args[i];
    }
    argv[n] = NULL;
    s_start(self, argv, env_extra);
    int code = s_wait(self, S_STEP_TIMEOUT_MS);
    *err = s_stderr(self);
    return code;
}

//  True when text is exactly pattern (an extended regex), the whole of it.
static bool s_matches(const char *text, const char *pattern)
{
    char anchored[S_LINE_SIZE];
    snprintf(anchored, sizeof anchored, "^%s$", pattern);
    regex_t re;
    assert_int_equal(regcomp(&re, anchored, REG_EXTENDED | REG_NOSUB), 0);
    bool match = regexec(&re, text, 0, NULL, 0) == 0;
    regfree(&re);
    return match;
}

//  Whose token the store says token is; fails the test if it knows none.
static fq_token_owner_t s_owner(const char *conninfo, const char *token)
{
    fq_store_t *store = fq_test_store(conninfo);
    fq_token_owner_t owner;
    int rc = fq_store_token_lookup(store, token, &owner);
    if (rc != 0)
        fail_msg("the store does not know the token: %s", fq_store_error(store));
    fq_store_destroy(&store);
    return owner;
}

//  An empty database: the command gives it fairq's schema (said on
//  stderr) and prints an admin token, alone on its line, that the store
//  knows as an admin's. From a config file, a tenant's token in JSON; from
//  the environment, a tenant that does not exist is exit 1; a schema newer
//  than fairqd is refused with exit 3, as fairqd's start refuses it.
static void test_token_create_makes_an_admin_token(void **unused)
{
    (void)unused;
    char conninfo[128], database[160], wanted[S_LINE_SIZE], token[S_LINE_SIZE], env[160];
    char path[S_PATH_SIZE], future[16], *err;
    assert_int_equal(fq_test_db_create_named("token", false, conninfo, sizeof conninfo), 0);
    s_fairqd_t fairqd;
    const char *admin[] = {"--admin", s_database_flag(database, sizeof database, conninfo), NULL};
    int code = s_token_create(&fairqd, admin, NULL, &err);
    if (code != S_EXIT_OK)
        s_fail_with_output(&fairqd, "fairqd token create --admin did not exit 0");
    snprintf(wanted, sizeof wanted,
             "fairqd token create: applied %d migrations, schema at version %d\n",
             fq_test_migration_count(), fq_test_latest_version());
    assert_string_equal(err, wanted);
    free(err);
    //  One line, the token alone: TOKEN=$(fairqd token create --admin)
    assert_true(fairqd.seen_len > 0 && fairqd.seen[fairqd.seen_len - 1] == '\n');
    snprintf(token, sizeof token, "%.*s", (int)fairqd.seen_len - 1, fairqd.seen);
    if (!s_matches(token, S_TOKEN_RE))
        fail_msg("not a token alone on a line: \"%s\"", fairqd.seen);
    s_destroy(&fairqd);
    fq_token_owner_t owner = s_owner(conninfo, token);
    assert_true(owner.admin);
    assert_int_equal(owner.tenant_id, 0);

    //  A tenant's token, the database named by a config file, in JSON; the
    //  schema is there already: nothing said on stderr
    fq_store_t *store = fq_test_store(conninfo);
    int64_t shop = 0;
    assert_int_equal(fq_store_tenant_put(store, &(fq_tenant_spec_t){.name = "shop"}, &shop), 0);
    fq_store_destroy(&store);
    assert_true(snprintf(path, sizeof path, "%s/fairq.conf", s_make_temp_dir()) < (int)sizeof path);
    FILE *file = fopen(path, "w");
    assert_non_null(file);
    fprintf(file, "# written by fairqd_start_test\ndatabase = \"%s\"\n", conninfo);
    fclose(file);
    const char *tenant[] = {"--config", path, "--tenant", "shop", "--json", NULL};
    code = s_token_create(&fairqd, tenant, NULL, &err);
    if (code != S_EXIT_OK)
        s_fail_with_output(&fairqd, "fairqd token create --tenant shop --json did not exit 0");
    assert_string_equal(err, "");
    free(err);
    if (!s_matches(fairqd.seen, "\\{\"tenant\":\"shop\",\"token\":\"" S_TOKEN_RE "\"\\}\n"))
        fail_msg("not the JSON of a tenant's token: \"%s\"", fairqd.seen);
    snprintf(token, sizeof token, "%.*s", FQ_STORE_TOKEN_SIZE - 1,
             strstr(fairqd.seen, "\"token\":\"") + strlen("\"token\":\""));
    s_destroy(&fairqd);
    owner = s_owner(conninfo, token);
    assert_false(owner.admin);
    assert_int_equal(owner.tenant_id, shop);

    //  The database from the environment, as fairqd reads it; no such tenant
    snprintf(env, sizeof env, "FAIRQ_DATABASE=%s", conninfo);
    const char *env_extra[] = {env, NULL};
    const char *nosuch[] = {"--tenant=nosuch", NULL};
    assert_int_equal(s_token_create(&fairqd, nosuch, env_extra, &err), S_EXIT_FAILURE);
    assert_string_equal(err, "fairqd token create: no tenant \"nosuch\" (create it first, with an "
                             "admin token: fairq tenants set nosuch)\n");
    free(err);
    assert_int_equal(fairqd.seen_len, 0);
    s_destroy(&fairqd);

    //  A schema newer than this fairqd: refused, nothing made
    PGconn *conn = fq_test_connect(conninfo);
    int64_t tokens = fq_test_int(conn, "SELECT count(*) FROM fairq.api_tokens", 0);
    fq_test_exec(conn, "INSERT INTO fairq.schema_migrations (version, name) VALUES ($1, 'future')",
                 1, fq_test_param(future, sizeof future, fq_test_latest_version() + 1));
    assert_int_equal(s_token_create(&fairqd, admin, NULL, &err), S_EXIT_SCHEMA);
    snprintf(wanted, sizeof wanted,
             "fairqd token create: database schema is at version %d but this fairq knows only up "
             "to %d: upgrade fairq\n",
             fq_test_latest_version() + 1, fq_test_latest_version());
    assert_string_equal(err, wanted);
    free(err);
    assert_int_equal(fairqd.seen_len, 0);
    s_destroy(&fairqd);
    assert_int_equal(fq_test_int(conn, "SELECT count(*) FROM fairq.api_tokens", 0), tokens);
    PQfinish(conn);
    fq_test_db_drop_named("token");
}

//  Runs "fairqd token create" with args and checks that it refuses them:
//  exit 2, stderr exactly "PREFIX: <error>" and the hint, nothing on
//  stdout.
static void s_expect_token_usage(const char *const *args, const char *prefix, const char *error)
{
    s_fairqd_t fairqd;
    char *err;
    assert_int_equal(s_token_create(&fairqd, args, NULL, &err), S_EXIT_CONFIG);
    char wanted[S_LINE_SIZE];
    snprintf(wanted, sizeof wanted,
             "%s: %s\nTry \"fairqd token create --help\" for more information.\n", prefix, error);
    assert_string_equal(err, wanted);
    free(err);
    assert_int_equal(fairqd.seen_len, 0);
    s_destroy(&fairqd);
}

//  Bad arguments and a bad configuration: exit 2 with a message that says
//  what is wrong, before any database is touched; --help prints the usage.
static void test_token_create_usage_errors_exit_2(void **unused)
{
    (void)unused;
    const char *prefix = "fairqd token create";
    const char *none[] = {NULL};
    s_expect_token_usage(none, prefix, "needs --admin or --tenant NAME (one of them)");
    const char *both[] = {"--admin", "--tenant", "shop", NULL};
    s_expect_token_usage(both, prefix, "needs --admin or --tenant NAME (one of them)");
    const char *valued[] = {"--admin=yes", NULL};
    s_expect_token_usage(valued, prefix, "option --admin takes no value");
    const char *empty[] = {"--tenant", "--admin", NULL};
    s_expect_token_usage(empty, prefix, "option --tenant needs a value (a tenant's name)");
    const char *twice[] = {"--tenant=a", "--tenant=b", NULL};
    s_expect_token_usage(twice, prefix, "option --tenant given more than once");
    const char *bad_name[] = {"--tenant=Shop", NULL};
    s_expect_token_usage(bad_name, prefix,
                         "invalid tenant name \"Shop\" (1..64 of a-z 0-9 _ . -, starting with a "
                         "letter or digit)");
    //  Every other argument is fairqd's configuration, with its messages
    const char *unknown[] = {"--admin", "--bogus=1", NULL};
    s_expect_token_usage(unknown, prefix, "flag --bogus: unknown key \"bogus\"");
    const char *positional[] = {"--admin", "extra", NULL};
    s_expect_token_usage(positional, prefix,
                         "argument \"extra\": unexpected (settings are --key=value)");
    const char *missing[] = {"--admin", "--config=/nonexistent/fairq.conf", NULL};
    s_expect_token_usage(missing, prefix,
                         "config /nonexistent/fairq.conf: could not open: No such file or "
                         "directory");
    char reason[S_PATH_SIZE], wanted[S_LINE_SIZE];
    s_libpq_reason("host=db dbname", reason, sizeof reason);
    snprintf(wanted, sizeof wanted, "flag --database: invalid value for \"database\": %s", reason);
    const char *malformed[] = {"--admin", "--database", "host=db dbname", NULL};
    s_expect_token_usage(malformed, prefix, wanted);

    //  "fairqd token" alone, or with another word
    s_fairqd_t fairqd;
    const char *alone[] = {"token", NULL};
    s_start(&fairqd, alone, NULL);
    assert_int_equal(s_wait(&fairqd, S_STEP_TIMEOUT_MS), S_EXIT_CONFIG);
    char *err = s_stderr(&fairqd);
    assert_string_equal(err, "fairqd token: missing subcommand (fairqd token create)\nTry "
                             "\"fairqd token create --help\" for more information.\n");
    free(err);
    s_destroy(&fairqd);
    const char *other[] = {"token", "delete", "--admin", NULL};
    s_start(&fairqd, other, NULL);
    assert_int_equal(s_wait(&fairqd, S_STEP_TIMEOUT_MS), S_EXIT_CONFIG);
    err = s_stderr(&fairqd);
    assert_non_null(strstr(err, "fairqd token: unknown subcommand \"delete\""));
    free(err);
    s_destroy(&fairqd);

    //  --help wins over a wrong argument, and exits 0
    const char *help[] = {"--tenant", "--help", NULL};
    assert_int_equal(s_token_create(&fairqd, help, NULL, &err), S_EXIT_OK);
    assert_string_equal(err, "");
    free(err);
    assert_int_equal(strncmp(fairqd.seen, "usage: fairqd token create --admin | --tenant NAME",
                             strlen("usage: fairqd token create --admin | --tenant NAME")),
                     0);
    s_destroy(&fairqd);
}

//  No server where the database should be: one attempt, then exit 1 with
//  libpq's reason, never a retry (a command that ends, not the daemon).
static void test_token_create_unreachable_database_exits_1(void **unused)
{
    (void)unused;
    const char *args[] = {"--admin",
                          "--database=host=127.0.0.1 port=1 dbname=nowhere connect_timeout=5",
                          "--database_retry_min_ms=" S_RETRY_MIN_MS, NULL};
    s_fairqd_t fairqd;
    char *err;
    assert_int_equal(s_token_create(&fairqd, args, NULL, &err), S_EXIT_FAILURE);
    const char *wanted = "fairqd token create: could not connect to database: ";
    if (strncmp(err, wanted, strlen(wanted)) != 0 || !strstr(err, "127.0.0.1"))
        fail_msg("not the connection's failure: \"%s\"", err);
    //  Once: the message is not repeated
    assert_null(strstr(err + strlen(wanted), wanted));
    free(err);
    assert_int_equal(fairqd.seen_len, 0);
    s_destroy(&fairqd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_first_start_applies_every_migration, s_teardown),
        cmocka_unit_test_teardown(test_second_start_applies_nothing, s_teardown),
        cmocka_unit_test_teardown(test_newer_schema_is_refused, s_teardown),
        cmocka_unit_test_teardown(test_config_errors_exit_2, s_teardown),
        cmocka_unit_test_teardown(test_malformed_database_exits_2, s_teardown),
        cmocka_unit_test_teardown(test_help_and_print_config, s_teardown),
        cmocka_unit_test_teardown(test_sighup_reloads_the_config, s_teardown),
        cmocka_unit_test_teardown(test_unreachable_database_is_retried_until_sigterm, s_teardown),
        cmocka_unit_test_teardown(test_database_that_appears_is_used, s_teardown),
        cmocka_unit_test_teardown(test_insecure_gateway, s_teardown),
        cmocka_unit_test_teardown(test_curve_gateway_lets_an_allowed_sender_in, s_teardown),
        cmocka_unit_test_teardown(test_gateway_that_cannot_start, s_teardown),
        cmocka_unit_test_teardown(test_gateway_configuration_refused_exits_2, s_teardown),
        cmocka_unit_test_teardown(test_token_create_makes_an_admin_token, s_teardown),
        cmocka_unit_test_teardown(test_token_create_usage_errors_exit_2, s_teardown),
        cmocka_unit_test_teardown(test_token_create_unreachable_database_exits_1, s_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
