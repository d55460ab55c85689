/*  fairqd.c — the fairq daemon (docs/architecture.md, docs/operations.md).

        fairqd [--config PATH] [--KEY=VALUE ...]    (--help lists the keys)
        fairqd token create --admin | --tenant NAME [--json] [--KEY=VALUE ...]

    The second form makes a bearer token of the HTTP API straight in the
    database, to bootstrap (fq_token_command.h): it is told apart by its
    first argument, before anything else happens, and reads the same
    configuration.

    The daemon starts in this order, logging each step on stdout:

    1. The configuration (fq_fairqd_keys.h, read by config/fq_config.h).
       An error goes to stderr and ends fairqd with exit code 2; --help,
       --version and --print-config print and exit 0.
       A database connection string that libpq cannot read is such an
       error too: no retry would ever mend it.
    2. PostgreSQL. fairqd connects, retrying with doubling waits
       (database_retry_min_ms up to database_retry_max_ms) until the
       database answers or SIGTERM/SIGINT comes, and logs each failed
       attempt. Then it applies the migrations the database lacks. A
       database whose schema is newer than this program is refused (exit
       3): old code must not write into a schema it does not know.
       Then it writes the destinations of destinations_file, read (and
       its faults refused, exit 2) with the configuration.
    3. The actor system, named by the key "name", and the HTTP API: from
       here on this fairqd serves the API, as a standby.
    4. Leadership (fq_lease_keeper.h): it looks at the leader's lease in
       the database, and takes it over once no other fairqd holds it. Then
       it leads: it starts, with gateway_bind, its gateway, which sender
       workers connect to, and the pipeline, whose writes carry the
       lease's epoch. A gateway that refuses its configuration (a
       certificate without its secret, an allow directory that is missing
       or unreadable) ends fairqd with exit code 2, its reason logged by
       the gateway: fairqd must not run where no sender can ever join.
    5. It renews the lease (or, as a standby, watches it) until SIGTERM or
       SIGINT, then drains the pipeline, stops the system (each actor
       finishes its work first), gives the lease up, closes the store,
       logs "stopped" and exits 0. A leader that finds another has taken
       over (it was frozen, or cut off from the database, longer than its
       lease) exits 4 at once, to start again as a standby: what its
       pipeline holds in memory belongs to an epoch that is over.

    The exit codes are fq_fairqd.h's, shared with "fairqd token create".

    Signals: SIGTERM, SIGINT, SIGHUP and S_SIGNAL_ESCALATED are blocked
    from the first line of the daemon's start, before CZMQ or libpq start
    a thread (threads inherit the mask), and the main thread alone takes
    them, with sigwait and sigtimedwait. No handler ever runs, so nothing
    happens in signal context: the work a signal asks for is done by the
    main thread in its own time. A blocked connection attempt is not
    interrupted: add connect_timeout to the connection string to bound it.

    SIGHUP reloads the configuration, wherever the main thread waits (for
    the database at start, or between two looks at the lease): the config
    file and the environment are read again, under the flags fairqd was
    started with, which keep their precedence. The keys that can change
    live take their new values (s_live_keys); every other key that changed
    is logged as needing a restart and keeps its running value. A
    configuration with an error is logged and changes nothing: a reload
    never stops fairqd. The destinations_file is read again and written
    to the database; one with a fault is logged and the destinations kept.

    Log lines are "2025-01-02 03:04:05.678 UTC [pid] LEVEL:  message", one
    per event, messages in PostgreSQL's style. The runtime's lines and
    CZMQ's own are fq_log lines too (CZMQ's prefixed "czmq: "): one format
    for every line of the log.

    Under systemd: Restart=on-failure, and RestartPreventExitStatus=2 3,
    since restarting does not mend a configuration or an old binary (4,
    deposed, is restarted: it comes back as a standby).
*/
#include "fq_buf.h"
#include "fq_config.h"
#include "fq_destinations_file.h"
#include "fq_error.h"
#include "fq_fairqd.h"
#include "fq_gateway.h"
#include "fq_http.h"
#include "fq_lease.h"
#include "fq_lease_keeper.h"
#include "fq_log.h"
#include "fq_metrics.h"
#include "fq_pipeline.h"
#include "fq_store.h"
#include "fq_store_destinations.h"
#include "fq_system.h"
#include "fq_token_command.h"
#include "fq_unsubscribe_token.h"
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

//  What a guardian raises at the main thread when a failure escalates to
//  it: fairqd then exits, and systemd restarts it (fq_system.h).
#define S_SIGNAL_ESCALATED SIGUSR1

//  The gateway binds in its own thread, after fq_gateway_start returns:
//  fairqd says it listens only once it answers as bound. A bind that keeps
//  failing (a port in use) escalates, once the gateway's restarts run out,
//  well within this; fairqd looks for that every S_GATEWAY_POLL_MS.
#define S_GATEWAY_BIND_TIMEOUT_MS 10000
#define S_GATEWAY_POLL_MS         100
//  How long a new leader's other actors wait for the store, scheduler and
//  dispatcher to connect (fq_pipeline.h): at most this, and at most this
//  part of the lease. The main thread waits, and it renews the lease: the
//  next renewal is due half a lease after the takeover whatever the start
//  took (s_lease_step), and a slow start must leave it time before the
//  lease the leader trusts itself with ends (nine tenths of it).
#define S_PIPELINE_READY_MS        1000
#define S_PIPELINE_READY_PER_LEASE 3

#define S_NS_PER_MS 1000000L
#define S_NS_PER_S  1000000000LL

typedef struct {
    fq_config_t *config; //  Borrowed; a reload changes its live keys
    int argc;            //  The command line, read again by a reload
    char **argv;
    sigset_t signals; //  The signals the main thread takes
    pthread_t main_thread;
    fq_store_t *store;
    fq_system_t *system;
    fq_metrics_t *metrics; //  Shared by the actors and the HTTP API
    fq_http_t *http;
    fq_lease_t *lease; //  Who leads; shared by the actors, the HTTP API and the metrics
    fq_lease_keeper_t *keeper;
    bool leading; //  The gateway and the pipeline run
    //  The destinations_file as read at start (or again by a reload
    //  meanwhile), until it is written once the schema is there; then a
    //  reload writes what it reads itself
    fq_destinations_file_t destinations;
    bool destinations_written;
    //  One-click unsubscribe (docs/feedback.md): the public listener, the
    //  base URL of links without its final '/' ("": off), and the key its
    //  tokens are sealed with, read from unsubscribe_secret_file at start
    fq_http_t *unsubscribe_http;
    char unsubscribe_url[FQ_FAIRQD_ERROR_MAX];
    unsigned char unsubscribe_key[FQ_UNSUBSCRIBE_KEY_SIZE];
} s_daemon_t;

//  ---------------------------------------------------------------------
//  Signals

//  Blocks the signals fairqd takes, in this thread and every thread it
//  starts later. Call before anything starts a thread.
static void s_block_signals(sigset_t *signals)
{
    sigemptyset(signals);
    sigaddset(signals, SIGTERM);
    sigaddset(signals, SIGINT);
    sigaddset(signals, SIGHUP);
    sigaddset(signals, S_SIGNAL_ESCALATED);
    pthread_sigmask(SIG_BLOCK, signals, NULL);
}

//  The signal's name, for the log.
static const char *s_signal_name(int sig)
{
    return sig == SIGTERM ? "SIGTERM" : sig == SIGINT ? "SIGINT" : "SIGUSR1";
}

static bool s_is_stop(int sig)
{
    return sig == SIGTERM || sig == SIGINT;
}

static void s_reload(s_daemon_t *self);
static void s_reload_destinations(s_daemon_t *self);
static fq_http_config_t s_http_config(s_daemon_t *self);

//  Waits up to timeout_ms (-1: for ever) for one of the signals. Returns
//  it, or 0 once the time is up. A SIGHUP is handled here, and the wait
//  goes on: a reload never cuts a wait short.
static int s_wait_signal(s_daemon_t *self, int timeout_ms)
{
    int sig;
    if (timeout_ms < 0)
        while (true) {
            if (sigwait(&self->signals, &sig) != 0)
                continue;
            if (sig != SIGHUP)
                return sig;
            s_reload(self);
        }
    struct timespec now, deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    int64_t deadline_ns = (int64_t)deadline.tv_sec * S_NS_PER_S + deadline.tv_nsec +
                          (int64_t)timeout_ms * S_NS_PER_MS;
    while (true) {
        clock_gettime(CLOCK_MONOTONIC, &now);
        int64_t left_ns = deadline_ns - ((int64_t)now.tv_sec * S_NS_PER_S + now.tv_nsec);
        if (left_ns <= 0)
            return 0;
        struct timespec left = {(time_t)(left_ns / S_NS_PER_S), (long)(left_ns % S_NS_PER_S)};
        sig = sigtimedwait(&self->signals, NULL, &left);
        if (sig == SIGHUP) {
            s_reload(self);
            continue;
        }
        if (sig > 0)
            return sig;
        if (errno == EAGAIN)
            return 0;
        //  EINTR: another signal (SIGCONT after a stop) cut the wait short
    }
}

//  Called in a guardian's thread when a failure escalates to it: wakes the
//  main thread, which stops fairqd. (Not a signal handler.)
static void s_on_escalation(fq_system_t *sys, const char *path, const char *reason, void *arg)
{
    (void)sys;
    (void)path;
    (void)reason;
    s_daemon_t *self = arg;
    pthread_kill(self->main_thread, S_SIGNAL_ESCALATED);
}

//  ---------------------------------------------------------------------
//  The configuration, and its reload

/*  The keys a reload changes live. Only the main thread reads them, when
    it needs them, or they are the log's, which every thread reads as it
    logs. Every other key was copied, at their start, by the actors (the
    pipeline's settings: a running actor's copy cannot be changed from
    outside it), the HTTP server, the gateway, the lease keeper or the
    store's connections, or is only read at start (database_retry_*): a
    new value of those takes effect with a restart. */
static const fq_fairqd_key_t s_live_keys[] = {
    FQ_FAIRQD_KEY_LOG_LEVEL,        //  At once
    FQ_FAIRQD_KEY_DRAIN_TIMEOUT_MS, //  At the next SIGTERM or SIGINT
    //  The HTTP server's (fq_http_set_live): for the calls that come after
    FQ_FAIRQD_KEY_HTTP_BODY_MAX,
    FQ_FAIRQD_KEY_METRICS_PUBLIC,
    FQ_FAIRQD_KEY_TENANT_WEIGHT,
    FQ_FAIRQD_KEY_TENANT_MAX_INFLIGHT,
    FQ_FAIRQD_KEY_TENANT_SUBMIT_RATE,
    //  Read again, and written to the database, at each SIGHUP
    FQ_FAIRQD_KEY_DESTINATIONS_FILE,
};

static bool s_is_live(int key)
{
    for (size_t i = 0; i < sizeof s_live_keys / sizeof s_live_keys[0]; i++)
        if ((int)s_live_keys[i] == key)
            return true;
    return false;
}

//  Logs every setting and where it came from, at debug level.
static void s_log_settings(fq_config_t *config)
{
    for (int key = 0; key < FQ_FAIRQD_KEY_COUNT; key++) {
        char *shown = fq_config_shown(config, key);
        fq_log(FQ_LOG_DEBUG, "setting %s = \"%s\" (%s)", fq_config_key_name(config, key),
               shown ? shown : "", fq_config_origin(config, key));
        free(shown);
    }
}

//  Applies the log level of config (checked by its load: a valid word).
static void s_apply_log_level(fq_config_t *config)
{
    fq_log_level_t level = FQ_LOG_INFO;
    fq_log_level_parse(fq_config_str(config, FQ_FAIRQD_KEY_LOG_LEVEL), &level);
    fq_log_set_level(level);
}

//  Adds "; " and a formatted part to a list of the reload's summary.
//  Returns 0 or FQ_ENOMEM.
static int s_list_add(fq_buf_t *list, const char *format, ...)
    __attribute__((format(printf, 2, 3)));
static int s_list_add(fq_buf_t *list, const char *format, ...)
{
    if (list->size && fq_buf_add_str(list, "; "))
        return FQ_ENOMEM;
    va_list args;
    va_start(args, format);
    int rc = fq_buf_vprintf(list, format, args);
    va_end(args);
    return rc ? FQ_ENOMEM : 0;
}

//  Compares key in the running configuration and next: a live key takes
//  its new value (said in applied), another is said to need a restart
//  (in restart, and in a warning of its own). Returns 0 or FQ_ENOMEM.
static int s_reload_key(s_daemon_t *self, fq_config_t *next, int key, fq_buf_t *applied,
                        fq_buf_t *restart)
{
    if (fq_config_equal(self->config, next, key))
        return 0;
    const char *name = fq_config_key_name(next, key);
    //  As shown: a password in a connection string is masked
    char *before = fq_config_shown(self->config, key), *after = fq_config_shown(next, key);
    int rc = before && after ? 0 : FQ_ENOMEM;
    if (rc == 0 && s_is_live(key)) {
        rc = fq_config_adopt(self->config, next, key);
        if (rc == 0)
            rc = s_list_add(applied, "%s %s -> %s", name, before, after);
    } else if (rc == 0) {
        fq_log(FQ_LOG_WARNING, "reload: %s changed (%s -> %s, %s) but needs a restart", name,
               before, after, fq_config_origin(next, key));
        rc = s_list_add(restart, "%s needs a restart", name);
    }
    free(before);
    free(after);
    return rc;
}

//  SIGHUP: reads the configuration again, with the command line fairqd
//  was started with (its flags keep their precedence), and applies what
//  can change live. Never stops fairqd: a configuration with an error is
//  logged and the running one kept whole.
static void s_reload(s_daemon_t *self)
{
    fq_log(FQ_LOG_INFO, "received SIGHUP, reloading config");
    fq_config_t *next = fq_config_new(&fq_fairqd_schema);
    char error[FQ_FAIRQD_ERROR_MAX];
    int rc =
        next ? fq_fairqd_config_load(next, self->argc, self->argv, error, sizeof error) : FQ_ENOMEM;
    if (rc) {
        fq_log(FQ_LOG_ERROR, "could not reload config: %s; the running configuration is kept",
               rc == FQ_ENOMEM ? "out of memory" : error);
        fq_config_destroy(&next);
        return;
    }
    fq_buf_t applied = {0}, restart = {0};
    for (int key = 0; rc == 0 && key < FQ_FAIRQD_KEY_COUNT; key++)
        rc = s_reload_key(self, next, key, &applied, &restart);
    const char *file = fq_config_file(next);
    if (rc)
        fq_log(FQ_LOG_ERROR,
               "could not reload config: out of memory (some live keys may have changed)");
    else if (!applied.size && !restart.size)
        fq_log(FQ_LOG_INFO, "reloaded config %s: no change", file ? file : "(no config file)");
    else
        fq_log(FQ_LOG_INFO, "reloaded config %s: %s%s%s", file ? file : "(no config file)",
               applied.size ? applied.data : "", applied.size && restart.size ? "; " : "",
               restart.size ? restart.data : "");
    fq_buf_free(&applied);
    fq_buf_free(&restart);
    fq_config_destroy(&next);
    if (self->http) {
        fq_http_config_t http = s_http_config(self);
        fq_http_set_live(self->http, &http);
    }
    //  After the summary, so that it is seen even when the new level hides
    //  info lines; then every setting, as at start, if the level is debug
    s_apply_log_level(self->config);
    s_log_settings(self->config);
    s_reload_destinations(self);
}

//  ---------------------------------------------------------------------
//  The destinations_file (fq_destinations_file.h)

//  Reads config's destinations_file into *file (no destination when the
//  key is empty). Returns 0, or a code with "destinations_file PATH:LINE:
//  why" in error.
static int s_destinations_read(fq_config_t *config, fq_destinations_file_t *file, char *error,
                               size_t size)
{
    *file = (fq_destinations_file_t){0};
    const char *path = fq_config_str(config, FQ_FAIRQD_KEY_DESTINATIONS_FILE);
    if (!*path)
        return 0;
    //  Room for the key's name before it in error
    char why[FQ_FAIRQD_ERROR_MAX - sizeof "destinations_file "];
    int rc = fq_destinations_file_read(path, file, why, sizeof why);
    if (rc)
        snprintf(error, size, "destinations_file %s", why);
    return rc;
}

//  Where a store's refusal of the file points: the line of the destination
//  its message starts with ("destination \"NAME\": ..."), else 0.
static int s_destinations_line(const fq_destinations_file_t *file, const char *message)
{
    static const char prefix[] = "destination \"";
    if (strncmp(message, prefix, sizeof prefix - 1) != 0)
        return 0;
    const char *name = message + sizeof prefix - 1;
    size_t length = strcspn(name, "\"");
    for (size_t i = 0; i < file->count; i++)
        if (strlen(file->specs[i].name) == length &&
            strncmp(file->specs[i].name, name, length) == 0)
            return file->lines[i];
    return 0;
}

//  Writes file's destinations with store, all in one transaction, and
//  logs it. Returns 0 or the store's code, its refusal in error as
//  "destinations_file PATH[:LINE]: why".
static int s_destinations_write(fq_store_t *store, const fq_destinations_file_t *file,
                                const char *path, char *error, size_t size)
{
    int rc = fq_store_destination_put_all(store, file->specs, file->count);
    if (rc == 0) {
        fq_log(FQ_LOG_INFO, "destinations_file %s: %zu destination%s written", path, file->count,
               file->count == 1 ? "" : "s");
        return 0;
    }
    const char *message = fq_store_error(store);
    int line = s_destinations_line(file, message);
    if (line)
        snprintf(error, size, "destinations_file %s:%d: %s", path, line, message);
    else
        snprintf(error, size, "destinations_file %s: %s", path, message);
    return rc;
}

//  SIGHUP: reads the destinations_file again and writes it, with a
//  connection of its own (the main thread's is closed once fairqd runs).
//  A file with a fault, or a write the database refuses, is logged, and
//  the destinations in the database stay as they were.
static void s_reload_destinations(s_daemon_t *self)
{
    const char *path = fq_config_str(self->config, FQ_FAIRQD_KEY_DESTINATIONS_FILE);
    if (!*path)
        return;
    fq_destinations_file_t file;
    char error[FQ_FAIRQD_ERROR_MAX];
    int rc = s_destinations_read(self->config, &file, error, sizeof error);
    if (rc) {
        fq_log(FQ_LOG_ERROR, "reload: %s; the destinations are kept as they were", error);
        fq_destinations_file_free(&file);
        return;
    }
    if (!self->destinations_written) {
        //  Still starting: the start writes this one once the schema is there
        fq_destinations_file_free(&self->destinations);
        self->destinations = file;
        return;
    }
    fq_store_t *store =
        fq_store_new(fq_config_str(self->config, FQ_FAIRQD_KEY_DATABASE), error, sizeof error);
    if (!store)
        fq_log(FQ_LOG_ERROR,
               "reload: could not write destinations_file %s: %s; the destinations are kept as "
               "they were",
               path, error);
    else if (s_destinations_write(store, &file, path, error, sizeof error) != 0)
        fq_log(FQ_LOG_ERROR, "reload: %s; the destinations are kept as they were", error);
    fq_store_destroy(&store);
    fq_destinations_file_free(&file);
}

//  ---------------------------------------------------------------------
//  The store

//  Connects to the database, waiting longer after each failure. Returns 0
//  once connected, or the signal that asked fairqd to stop meanwhile.
static int s_connect(s_daemon_t *self)
{
    const char *conninfo = fq_config_str(self->config, FQ_FAIRQD_KEY_DATABASE);
    char *shown = fq_config_shown(self->config, FQ_FAIRQD_KEY_DATABASE);
    if (*conninfo)
        fq_log(FQ_LOG_INFO, "connecting to database \"%s\"", shown ? shown : "");
    else
        fq_log(FQ_LOG_INFO, "connecting to database (libpq defaults and PG* environment)");
    free(shown);
    int delay_ms = fq_config_int(self->config, FQ_FAIRQD_KEY_DATABASE_RETRY_MIN_MS);
    int max_ms = fq_config_int(self->config, FQ_FAIRQD_KEY_DATABASE_RETRY_MAX_MS);
    for (int attempt = 1;; attempt++) {
        char error[FQ_FAIRQD_ERROR_MAX];
        self->store = fq_store_new(conninfo, error, sizeof error);
        if (self->store) {
            if (attempt == 1)
                fq_log(FQ_LOG_INFO, "connected to database");
            else
                fq_log(FQ_LOG_INFO, "connected to database after %d attempts", attempt);
            return 0;
        }
        fq_log(FQ_LOG_WARNING, "%s; retrying in %d ms", error, delay_ms);
        int sig = s_wait_signal(self, delay_ms);
        if (s_is_stop(sig))
            return sig;
        delay_ms = delay_ms > max_ms / 2 ? max_ms : delay_ms * 2;
    }
}

//  A store call failed: a lost connection is connected again (reconnect),
//  anything else ends fairqd. Returns the exit code, or FQ_FAIRQD_EXIT_OK.
static int s_store_failed(s_daemon_t *self, bool *reconnect)
{
    if (!fq_store_connected(self->store)) {
        fq_log(FQ_LOG_WARNING, "%s; connecting again", fq_store_error(self->store));
        *reconnect = true;
        return FQ_FAIRQD_EXIT_OK;
    }
    fq_log(FQ_LOG_FATAL, "%s", fq_store_error(self->store));
    return FQ_FAIRQD_EXIT_FAILURE;
}

//  Applies the migrations the database lacks. Returns the exit code, or
//  FQ_FAIRQD_EXIT_OK (with reconnect set if the connection was lost meanwhile).
static int s_migrate(s_daemon_t *self, bool *reconnect)
{
    *reconnect = false;
    int applied = fq_store_migrate(self->store);
    if (applied == FQ_ESCHEMA) {
        fq_log(FQ_LOG_FATAL, "%s", fq_store_error(self->store));
        return FQ_FAIRQD_EXIT_SCHEMA;
    }
    int version = 0;
    if (applied < 0 || fq_store_schema_version(self->store, &version) != 0)
        return s_store_failed(self, reconnect);
    if (applied == 0)
        fq_log(FQ_LOG_INFO, "schema at version %d, nothing to apply", version);
    else
        fq_log(FQ_LOG_INFO, "applied %d migration%s, schema at version %d", applied,
               applied == 1 ? "" : "s", version);
    return FQ_FAIRQD_EXIT_OK;
}

//  Writes the destinations_file read at start, now that the schema is
//  there. Returns the exit code (a file the database refuses, a domain of
//  another destination say, is a configuration error), or
//  FQ_FAIRQD_EXIT_OK (with reconnect set if the connection was lost).
static int s_write_destinations(s_daemon_t *self, bool *reconnect)
{
    *reconnect = false;
    const char *path = fq_config_str(self->config, FQ_FAIRQD_KEY_DESTINATIONS_FILE);
    if (!*path) {
        self->destinations_written = true;
        return FQ_FAIRQD_EXIT_OK;
    }
    char error[FQ_FAIRQD_ERROR_MAX];
    int rc = s_destinations_write(self->store, &self->destinations, path, error, sizeof error);
    if (rc == 0) {
        self->destinations_written = true;
        fq_destinations_file_free(&self->destinations);
        return FQ_FAIRQD_EXIT_OK;
    }
    if (!fq_store_connected(self->store))
        return s_store_failed(self, reconnect);
    fq_log(FQ_LOG_FATAL, "%s", error);
    return rc == FQ_EINVAL || rc == FQ_ECONFLICT ? FQ_FAIRQD_EXIT_CONFIG : FQ_FAIRQD_EXIT_FAILURE;
}

//  ---------------------------------------------------------------------
//  The actor system

static int s_start_gateway(s_daemon_t *self)
{
    const char *bind = fq_config_str(self->config, FQ_FAIRQD_KEY_GATEWAY_BIND);
    if (!*bind) {
        fq_log(FQ_LOG_INFO, "no gateway_bind: gateway not started, sender workers cannot connect");
        return FQ_FAIRQD_EXIT_OK;
    }
    bool insecure = fq_config_bool(self->config, FQ_FAIRQD_KEY_GATEWAY_INSECURE);
    const char *cert = fq_config_str(self->config, FQ_FAIRQD_KEY_GATEWAY_CERT);
    const char *allow_dir = fq_config_str(self->config, FQ_FAIRQD_KEY_GATEWAY_ALLOW_DIR);
    fq_gateway_config_t gateway = {
        .bind = bind,
        .cert_file = insecure ? NULL : cert,
        .allow_dir = insecure ? NULL : allow_dir,
        .insecure = insecure,
        .admit = fq_protocol_fairqd_admit,
        .admit_count = fq_protocol_fairqd_admit_count,
        .heartbeat_ms = fq_config_int(self->config, FQ_FAIRQD_KEY_HEARTBEAT_MS),
        .heartbeat_timeout_ms = fq_config_int(self->config, FQ_FAIRQD_KEY_HEARTBEAT_TIMEOUT_MS)};
    int rc = fq_gateway_start(self->system, &gateway);
    if (rc == FQ_EINVAL) {
        //  The gateway has logged what it refused
        fq_log(FQ_LOG_FATAL,
               "could not start the gateway on %s: invalid gateway configuration (gateway_cert "
               "\"%s\", gateway_allow_dir \"%s\"), see the gateway's error above",
               bind, cert, allow_dir);
        return FQ_FAIRQD_EXIT_CONFIG;
    }
    if (rc) {
        fq_log(FQ_LOG_FATAL, "could not start the gateway on %s: %s", bind, fq_strerror(rc));
        return FQ_FAIRQD_EXIT_FAILURE;
    }
    char reason[FQ_FAIRQD_ERROR_MAX];
    for (int waited = 0; fq_gateway_wait_connected(self->system, S_GATEWAY_POLL_MS) != 0;
         waited += S_GATEWAY_POLL_MS) {
        if (fq_system_failed(self->system, reason, sizeof reason)) {
            fq_log(FQ_LOG_FATAL, "could not start the gateway on %s: %s", bind, reason);
            return FQ_FAIRQD_EXIT_FAILURE;
        }
        if (waited >= S_GATEWAY_BIND_TIMEOUT_MS) {
            fq_log(FQ_LOG_FATAL, "could not start the gateway on %s: not bound after %d ms", bind,
                   S_GATEWAY_BIND_TIMEOUT_MS);
            return FQ_FAIRQD_EXIT_FAILURE;
        }
    }
    if (insecure)
        fq_log(FQ_LOG_WARNING,
               "gateway listening on %s without CURVE: anyone who reaches it is let in "
               "(gateway_insecure is for development only)",
               bind);
    else
        fq_log(FQ_LOG_INFO, "gateway listening on %s (CURVE: certificate %s, allowed in: %s)", bind,
               cert, allow_dir);
    return FQ_FAIRQD_EXIT_OK;
}

//  This instance's name as leader: the system's name, the host and the
//  process, so that the log and /healthz say which one leads.
static void s_holder_name(const char *name, char *out, size_t size)
{
    char host[256] = "";
    if (gethostname(host, sizeof host - 1) != 0)
        snprintf(host, sizeof host, "unknown-host");
    snprintf(out, size, "%s@%s:%ld", name, host, (long)getpid());
}

static int s_start_system(s_daemon_t *self)
{
    const char *name = fq_config_str(self->config, FQ_FAIRQD_KEY_NAME);
    fq_system_config_t config = {
        .name = name, .on_escalation = s_on_escalation, .on_escalation_arg = self};
    char holder[FQ_LEADER_HOLDER_SIZE];
    s_holder_name(name, holder, sizeof holder);
    self->system = fq_system_new(&config);
    self->metrics = fq_metrics_new();
    self->lease = fq_lease_new(holder);
    self->keeper =
        self->lease
            ? fq_lease_keeper_new(fq_config_str(self->config, FQ_FAIRQD_KEY_DATABASE), self->lease,
                                  fq_config_int(self->config, FQ_FAIRQD_KEY_LEASE_MS))
            : NULL;
    if (!self->system || !self->metrics || !self->keeper) {
        fq_log(FQ_LOG_FATAL, "could not start the actor system \"%s\"", name);
        return FQ_FAIRQD_EXIT_FAILURE;
    }
    fq_metrics_set_lease(self->metrics, self->lease);
    fq_log(FQ_LOG_INFO, "actor system \"%s\" started; this fairqd is %s", name, holder);
    return FQ_FAIRQD_EXIT_OK;
}

//  fairness_cost's word (the config engine allows no other).
static fq_fairness_cost_t s_fairness_cost(const char *word)
{
    if (strcmp(word, "bytes") == 0)
        return FQ_FAIRNESS_COST_BYTES;
    if (strcmp(word, "time") == 0)
        return FQ_FAIRNESS_COST_TIME;
    return FQ_FAIRNESS_COST_MESSAGES;
}

//  This fairqd has just taken the lease over: the pipeline's actors a
//  dispatch needs start, their writes carrying the lease's epoch, then the
//  gateway, then (once the first have connected to the database) the other
//  actors. In that order: a sender that joins the moment the gateway is
//  bound finds the dispatcher there to answer its HELLO (else the HELLO is
//  lost, and the sender waits for its answer until it times out), and the
//  first message of a takeover does not wait for the database connections
//  of actors that take no part in it (fq_pipeline.h).
static int s_start_leading(s_daemon_t *self)
{
    //  The pipeline (docs/architecture.md); each actor opens its own connection
    const char *name = fq_config_str(self->config, FQ_FAIRQD_KEY_NAME);
    //  Checked as the configuration was read (fq_fairqd_keys.c)
    char bounces[FQ_STORE_BOUNCE_PATTERN_SIZE];
    if (fq_store_bounce_pattern(fq_config_str(self->config, FQ_FAIRQD_KEY_SUPPRESS_BOUNCES),
                                bounces, NULL, 0) != 0)
        bounces[0] = 0;
    fq_pipeline_config_t pipeline = {
        .database = fq_config_str(self->config, FQ_FAIRQD_KEY_DATABASE),
        .database_listen = fq_config_str(self->config, FQ_FAIRQD_KEY_DATABASE_LISTEN),
        .name = name,
        .prefetch = fq_config_int(self->config, FQ_FAIRQD_KEY_PREFETCH),
        .splitters = fq_config_int(self->config, FQ_FAIRQD_KEY_SPLITTERS),
        .poll_ms = fq_config_int(self->config, FQ_FAIRQD_KEY_POLL_MS),
        .ack_batch = fq_config_int(self->config, FQ_FAIRQD_KEY_ACK_BATCH),
        .ack_flush_ms = fq_config_int(self->config, FQ_FAIRQD_KEY_ACK_FLUSH_MS),
        .retry = {fq_config_int(self->config, FQ_FAIRQD_KEY_RETRY_BASE_MS),
                  fq_config_int(self->config, FQ_FAIRQD_KEY_RETRY_CAP_MS), bounces},
        .retention_s = fq_config_int(self->config, FQ_FAIRQD_KEY_RETENTION_S),
        .metrics = self->metrics,
        .epoch = fq_lease_epoch(self->lease),
        .lease = self->lease,
        .skip_sent_events = !fq_config_bool(self->config, FQ_FAIRQD_KEY_SENT_EVENTS),
        .webhooks = {.batch = fq_config_int(self->config, FQ_FAIRQD_KEY_WEBHOOK_BATCH),
                     .bytes = FQ_WEBHOOK_BATCH_BYTES,
                     .scan = FQ_WEBHOOK_SCAN,
                     .max_attempts = fq_config_int(self->config, FQ_FAIRQD_KEY_WEBHOOK_ATTEMPTS),
                     .disable_after_s =
                         fq_config_int(self->config, FQ_FAIRQD_KEY_WEBHOOK_DISABLE_AFTER_S)},
        .fairness_cost = s_fairness_cost(fq_config_str(self->config, FQ_FAIRQD_KEY_FAIRNESS_COST)),
        .unsubscribe_url = self->unsubscribe_url,
        .unsubscribe_mailto = fq_config_str(self->config, FQ_FAIRQD_KEY_UNSUBSCRIBE_MAILTO)};
    memcpy(pipeline.unsubscribe_key, self->unsubscribe_key, sizeof pipeline.unsubscribe_key);
    int started = fq_pipeline_start(self->system, &pipeline);
    if (started != 0) {
        sodium_memzero(pipeline.unsubscribe_key, sizeof pipeline.unsubscribe_key);
        return FQ_FAIRQD_EXIT_FAILURE;
    }
    self->leading = true;
    int rc = s_start_gateway(self);
    int ready_ms = fq_config_int(self->config, FQ_FAIRQD_KEY_LEASE_MS) / S_PIPELINE_READY_PER_LEASE;
    if (ready_ms > S_PIPELINE_READY_MS)
        ready_ms = S_PIPELINE_READY_MS;
    int ready = rc ? 0 : fq_pipeline_wait_ready(self->system, ready_ms);
    if (ready)
        fq_log(FQ_LOG_WARNING,
               "the store, scheduler and dispatcher did not all answer within %d ms (%s); "
               "starting the other actors anyway",
               ready_ms, fq_strerror(ready));
    char reason[FQ_FAIRQD_ERROR_MAX];
    if (rc == 0 && fq_system_failed(self->system, reason, sizeof reason)) {
        //  One of them failed to start and took the system down with it
        fq_log(FQ_LOG_FATAL, "could not start the pipeline: %s", reason);
        rc = FQ_FAIRQD_EXIT_FAILURE;
    }
    started = rc ? 0 : fq_pipeline_start_rest(self->system, &pipeline);
    sodium_memzero(pipeline.unsubscribe_key, sizeof pipeline.unsubscribe_key);
    if (rc)
        return rc;
    if (started != 0)
        return FQ_FAIRQD_EXIT_FAILURE;
    fq_log(FQ_LOG_INFO,
           "pipeline started: scheduler, %d splitters, dispatcher, store, intake, reaper, "
           "webhooks, schedules (epoch %lld)",
           pipeline.splitters, (long long)pipeline.epoch);
    return FQ_FAIRQD_EXIT_OK;
}

//  The HTTP server's settings, from the running configuration (at start,
//  and after a reload for the live ones).
static fq_http_config_t s_http_config(s_daemon_t *self)
{
    fq_config_t *config = self->config;
    return (fq_http_config_t){
        .listen = fq_config_str(config, FQ_FAIRQD_KEY_HTTP_LISTEN),
        .database = fq_config_str(config, FQ_FAIRQD_KEY_DATABASE),
        .body_max = (size_t)fq_config_int(config, FQ_FAIRQD_KEY_HTTP_BODY_MAX),
        .threads = fq_config_int(config, FQ_FAIRQD_KEY_HTTP_THREADS),
        .connections_max = fq_config_int(config, FQ_FAIRQD_KEY_HTTP_CONNECTIONS_MAX),
        .connections_per_ip = fq_config_int(config, FQ_FAIRQD_KEY_HTTP_CONNECTIONS_PER_IP),
        .idle_timeout_s = fq_config_int(config, FQ_FAIRQD_KEY_HTTP_IDLE_TIMEOUT_S),
        .metrics_public = fq_config_bool(config, FQ_FAIRQD_KEY_METRICS_PUBLIC),
        .suppress_bounces = fq_config_str(config, FQ_FAIRQD_KEY_SUPPRESS_BOUNCES),
        .suppress_complaints = fq_config_bool(config, FQ_FAIRQD_KEY_SUPPRESS_COMPLAINTS),
        .tenant_defaults = {fq_config_int(config, FQ_FAIRQD_KEY_TENANT_WEIGHT),
                            fq_config_int(config, FQ_FAIRQD_KEY_TENANT_MAX_INFLIGHT),
                            fq_config_int(config, FQ_FAIRQD_KEY_TENANT_SUBMIT_RATE)},
        .unsubscribe_url = self->unsubscribe_url,
        .metrics = self->metrics,
        .system = self->system,
        .lease = self->lease};
}

//  The HTTP API (api/API.md): every fairqd serves it, leader or standby;
//  a submit reaches the leader's pipeline through the database's NOTIFY.
static int s_start_http(s_daemon_t *self)
{
    const char *listen = fq_config_str(self->config, FQ_FAIRQD_KEY_HTTP_LISTEN);
    if (!*listen) {
        fq_log(FQ_LOG_INFO, "no http_listen: http api not started");
        return FQ_FAIRQD_EXIT_OK;
    }
    fq_http_config_t config = s_http_config(self);
    char error[FQ_FAIRQD_ERROR_MAX];
    self->http = fq_http_new(&config, error, sizeof error);
    if (!self->http) {
        fq_log(FQ_LOG_FATAL, "%s", error);
        return FQ_FAIRQD_EXIT_FAILURE;
    }
    fq_log(FQ_LOG_INFO, "http api listening on %s (port %d)", listen, fq_http_port(self->http));
    return FQ_FAIRQD_EXIT_OK;
}

//  One-click unsubscribe's settings: the secret read (fairqd does not
//  start without it when unsubscribe_url is set: it could make no link,
//  nor open one), and the base URL without its final '/'. Before any
//  thread starts.
static int s_load_unsubscribe(s_daemon_t *self)
{
    const char *url = fq_config_str(self->config, FQ_FAIRQD_KEY_UNSUBSCRIBE_URL);
    snprintf(self->unsubscribe_url, sizeof self->unsubscribe_url, "%s", url);
    size_t len = strlen(self->unsubscribe_url);
    while (len > 0 && self->unsubscribe_url[len - 1] == '/')
        self->unsubscribe_url[--len] = '\0';
    if (!*url)
        return FQ_FAIRQD_EXIT_OK;
    char error[FQ_FAIRQD_ERROR_MAX];
    if (fq_unsubscribe_key_file(fq_config_str(self->config, FQ_FAIRQD_KEY_UNSUBSCRIBE_SECRET_FILE),
                                self->unsubscribe_key, error, sizeof error) != 0) {
        fq_log(FQ_LOG_FATAL, "%s", error);
        return FQ_FAIRQD_EXIT_CONFIG;
    }
    fq_log(FQ_LOG_INFO, "one-click unsubscribe: links under %s" FQ_UNSUBSCRIBE_PATH "%s",
           self->unsubscribe_url,
           *fq_config_str(self->config, FQ_FAIRQD_KEY_UNSUBSCRIBE_MAILTO) ? ", with a mailto" : "");
    return FQ_FAIRQD_EXIT_OK;
}

//  The public unsubscribe listener (unsubscribe_listen): a server of its
//  own that serves GET and POST /u/TOKEN alone, so that it may face the
//  internet while the admin API does not. Every fairqd with it set serves
//  it, leader or standby: an unsubscribe is one transaction of the
//  database. It shares the API's connection policy and threads.
static int s_start_unsubscribe(s_daemon_t *self)
{
    const char *listen = fq_config_str(self->config, FQ_FAIRQD_KEY_UNSUBSCRIBE_LISTEN);
    if (!*listen)
        return FQ_FAIRQD_EXIT_OK;
    fq_http_config_t config = s_http_config(self);
    config.listen = listen;
    config.body_max = FQ_HTTP_UNSUBSCRIBE_BODY_MAX;
    config.metrics_public = false;
    config.unsubscribe_key = self->unsubscribe_key;
    char error[FQ_FAIRQD_ERROR_MAX];
    self->unsubscribe_http = fq_http_new(&config, error, sizeof error);
    if (!self->unsubscribe_http) {
        fq_log(FQ_LOG_FATAL, "unsubscribe listener: %s", error);
        return FQ_FAIRQD_EXIT_FAILURE;
    }
    fq_log(FQ_LOG_INFO, "unsubscribe listener on %s (port %d)", listen,
           fq_http_port(self->unsubscribe_http));
    return FQ_FAIRQD_EXIT_OK;
}

//  ---------------------------------------------------------------------
//  Leadership

//  One look at the lease (fq_lease_keeper.h): a standby that takes it over
//  starts leading; a leader that was deposed stops. Returns the exit code,
//  or FQ_FAIRQD_EXIT_OK to go on, with *next_ms until the next look.
static int s_lease_step(s_daemon_t *self, int *next_ms)
{
    switch (fq_lease_keeper_step(self->keeper, next_ms)) {
    case FQ_LEASE_ELECTED: {
        //  The next renewal is due when the step said, counted from the
        //  takeover: the time the start took comes off it
        int64_t began = fq_lease_now_ms();
        int rc = s_start_leading(self);
        int64_t spent = fq_lease_now_ms() - began;
        *next_ms = spent >= *next_ms ? 0 : *next_ms - (int)spent;
        return rc;
    }
    case FQ_LEASE_DEPOSED: {
        fq_lease_view_t view;
        fq_lease_view(self->lease, &view);
        fq_log(FQ_LOG_FATAL,
               "leadership: deposed: %s leads (epoch %lld); stopping, to start again as a "
               "standby (the messages in flight here are sent again by the new leader)",
               view.holder, (long long)view.epoch);
        return FQ_FAIRQD_EXIT_DEPOSED;
    }
    default:
        return FQ_FAIRQD_EXIT_OK;
    }
}

//  A stop was asked for: a leader lets the messages in flight come back
//  first (a standby has none).
static void s_drain(s_daemon_t *self, int sig)
{
    fq_log(FQ_LOG_INFO, "received %s, %s", s_signal_name(sig),
           self->leading ? "draining" : "stopping");
    if (!self->leading)
        return;
    int left = fq_pipeline_drain(self->system,
                                 fq_config_int(self->config, FQ_FAIRQD_KEY_DRAIN_TIMEOUT_MS));
    if (left == 0)
        fq_log(FQ_LOG_INFO, "drained: no message in flight, stopping");
    else
        fq_log(FQ_LOG_WARNING,
               "stopping with %d messages in flight (they are sent again after restart)", left);
}

//  ---------------------------------------------------------------------
//  Main

//  Runs fairqd until a signal stops it. Returns the exit code.
static int s_run(s_daemon_t *self)
{
    fq_log(FQ_LOG_INFO, "starting fairqd %s", FQ_VERSION);
    const char *file = fq_config_file(self->config);
    if (file)
        fq_log(FQ_LOG_INFO, "configuration read from %s", file);
    s_log_settings(self->config);
    int rc = s_load_unsubscribe(self);
    if (rc)
        return rc;
    bool reconnect;
    do {
        int sig = s_connect(self);
        if (sig) {
            fq_log(FQ_LOG_INFO, "received %s while connecting to the database", s_signal_name(sig));
            return FQ_FAIRQD_EXIT_OK;
        }
        rc = s_migrate(self, &reconnect);
        if (rc == FQ_FAIRQD_EXIT_OK && !reconnect)
            rc = s_write_destinations(self, &reconnect);
        if (reconnect)
            fq_store_destroy(&self->store);
    } while (reconnect);
    fq_store_destroy(&self->store); //  The lease keeper has a connection of its own
    //  The first look at the lease before the HTTP API: a fairqd that leads
    //  at once (the only one) has its gateway and pipeline running when it
    //  says it is ready, and a gateway it cannot start ends it before
    int next_ms = 0;
    if (rc == FQ_FAIRQD_EXIT_OK)
        rc = s_start_system(self);
    if (rc == FQ_FAIRQD_EXIT_OK)
        rc = s_lease_step(self, &next_ms);
    if (rc == FQ_FAIRQD_EXIT_OK)
        rc = s_start_http(self);
    if (rc == FQ_FAIRQD_EXIT_OK)
        rc = s_start_unsubscribe(self);
    if (rc)
        return rc;
    fq_log(FQ_LOG_INFO, "ready");

    while (true) {
        int sig = next_ms > 0 ? s_wait_signal(self, next_ms) : 0;
        char reason[FQ_FAIRQD_ERROR_MAX];
        if (sig == 0) {
            rc = s_lease_step(self, &next_ms);
            if (rc)
                return rc;
            continue;
        }
        if (s_is_stop(sig)) {
            s_drain(self, sig);
            return FQ_FAIRQD_EXIT_OK;
        }
        if (fq_system_failed(self->system, reason, sizeof reason)) {
            fq_log(FQ_LOG_FATAL, "stopping after a failure escalated to the top: %s", reason);
            return FQ_FAIRQD_EXIT_FAILURE;
        }
        //  S_SIGNAL_ESCALATED from outside: nothing failed
        fq_log(FQ_LOG_WARNING, "ignored %s: fairqd uses it for its own failures",
               s_signal_name(sig));
    }
}

//  Runs the command of config's command line (the one: --make-cert PATH,
//  for the package's installation and for operators). Returns the exit code.
static int s_command(fq_config_t *config)
{
    const char *path = NULL;
    if (fq_config_command(config, &path) != FQ_FAIRQD_COMMAND_MAKE_CERT)
        return FQ_FAIRQD_EXIT_CONFIG;
    return fq_gateway_cert_command(FQ_FAIRQD_PROGRAM, path) == 0 ? FQ_FAIRQD_EXIT_OK
                                                                 : FQ_FAIRQD_EXIT_FAILURE;
}

int main(int argc, char *argv[])
{
    //  "fairqd token create ...": a command that ends, not the daemon. It
    //  starts no thread and takes signals the ordinary way (^C stops it)
    if (argc > 1 && strcmp(argv[1], FQ_TOKEN_COMMAND) == 0)
        return fq_token_command(argc - 1, argv + 1);

    //  First of all: the threads CZMQ and libpq start inherit this mask
    s_daemon_t fairqd = {.main_thread = pthread_self(), .argc = argc, .argv = argv};
    s_block_signals(&fairqd.signals);
    //  A log reader that went away must not kill fairqd mid-shutdown
    signal(SIGPIPE, SIG_IGN);

    fairqd.config = fq_config_new(&fq_fairqd_schema);
    char error[FQ_FAIRQD_ERROR_MAX];
    int rc = fairqd.config ? fq_fairqd_config_load(fairqd.config, argc, argv, error, sizeof error)
                           : FQ_ENOMEM;
    if (rc) {
        fprintf(stderr, "%s: %s\n", FQ_FAIRQD_PROGRAM, rc == FQ_ENOMEM ? "out of memory" : error);
        fprintf(stderr, "Try \"%s --help\" for more information.\n", FQ_FAIRQD_PROGRAM);
        fq_config_destroy(&fairqd.config);
        return rc == FQ_ENOMEM ? FQ_FAIRQD_EXIT_FAILURE : FQ_FAIRQD_EXIT_CONFIG;
    }
    fq_config_action_t action = fq_config_action(fairqd.config);
    if (action == FQ_CONFIG_HELP) {
        fq_config_help(fairqd.config, stdout);
        fq_token_command_summary(stdout);
    } else if (action == FQ_CONFIG_VERSION)
        printf("%s %s\n", FQ_FAIRQD_PROGRAM, FQ_VERSION);
    else if (action == FQ_CONFIG_PRINT)
        fq_config_print(fairqd.config, stdout);
    else if (action == FQ_CONFIG_COMMAND)
        rc = s_command(fairqd.config);
    if (action != FQ_CONFIG_RUN) {
        fq_config_destroy(&fairqd.config);
        return rc;
    }

    //  A destinations_file with a fault is a configuration error, said at
    //  once: before fairqd waits for its database
    rc = s_destinations_read(fairqd.config, &fairqd.destinations, error, sizeof error);
    if (rc) {
        fprintf(stderr, "%s: %s\n", FQ_FAIRQD_PROGRAM, rc == FQ_ENOMEM ? "out of memory" : error);
        fq_destinations_file_free(&fairqd.destinations);
        fq_config_destroy(&fairqd.config);
        return rc == FQ_ENOMEM ? FQ_FAIRQD_EXIT_FAILURE : FQ_FAIRQD_EXIT_CONFIG;
    }

    //  Every connection of fairqd (the actors', the HTTP API's) gives up
    //  after a while, retries, and stays responsive; a connect_timeout in
    //  the connection string wins. Before any thread starts
    fq_fairqd_connect_timeout();
    s_apply_log_level(fairqd.config);
    rc = s_run(&fairqd);
    //  The HTTP API first (its calls read the actors' figures), then the
    //  actors (they drain their work and may still use the database)
    fq_http_destroy(&fairqd.unsubscribe_http);
    fq_http_destroy(&fairqd.http);
    sodium_memzero(fairqd.unsubscribe_key, sizeof fairqd.unsubscribe_key);
    fq_system_destroy(&fairqd.system);
    //  Only once the actors wrote what they will: a standby that takes over
    //  now fences every later write of this epoch. Whatever the exit code:
    //  a leader that fails (its gateway refused, say) lets a standby take
    //  over at once rather than when the lease runs out; a deposed one
    //  holds nothing, and the database ignores its resignation
    if (fairqd.keeper)
        fq_lease_keeper_resign(fairqd.keeper);
    fq_lease_keeper_destroy(&fairqd.keeper);
    fq_metrics_destroy(&fairqd.metrics);
    fq_lease_destroy(&fairqd.lease);
    fq_store_destroy(&fairqd.store);
    fq_destinations_file_free(&fairqd.destinations);
    if (rc == FQ_FAIRQD_EXIT_OK)
        fq_log(FQ_LOG_INFO, "stopped");
    else
        fq_log(FQ_LOG_INFO, "stopped, exit code %d", rc);
    fq_config_destroy(&fairqd.config);
    return rc;
}
