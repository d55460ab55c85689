/*  fairq_sender.c — fairq-sender, a sender worker (the processes are in
    docs/architecture.md, the protocol it speaks in docs/protocol.md).

        fairq-sender --connect tcp://HOST:PORT[,tcp://HOST:PORT...] [options]
        fairq-sender --make-cert PATH

    It runs a small actor system whose gateway connects to fairqd's (CURVE:
    --cert is this sender's certificate, --server-cert fairqd's public one;
    fairqd lets it in when its public certificate is in fairqd's
    gateway_allow_dir). The sender actor says HELLO, grants credit (its
    concurrency) and delivers through the chosen transport. It reconnects
    with backoff when fairqd goes away.

    Several fairqd (one leader, the others standing by with their gateway
    unbound): --connect lists every one's gateway, and the gateway follows
    whichever binds (fq_gateway.h). They share one server certificate, so
    one --server-cert or --server-key serves them all.

    Every option may also come from the environment: FAIRQ_SENDER_ and the
    option's name in capitals with '_' for '-' (FAIRQ_SENDER_SMTP_PASSWORD
    keeps a password off the command line). Flags win.

    SIGTERM or SIGINT: BYE to fairqd, finish the messages being delivered
    (up to --drain-timeout-ms), send their outcomes, exit 0. Exit 2 for a
    usage error, CURVE material that cannot work included: a --cert that
    cannot be read or has no _secret file beside it (the gateway refuses
    it, saying why), a --server-cert or --server-key that holds no public
    key. Exit 1 when it cannot start. --make-cert writes a new CURVE
    certificate (PATH, public, and PATH_secret) and exits. */
#include "fq_gateway.h"
#include "fq_log.h"
#include "fq_sender.h"
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef FQ_VERSION
#define FQ_VERSION "unknown"
#endif

#define S_PROGRAM "fairq-sender"

enum { S_EXIT_OK = 0, S_EXIT_FAILURE = 1, S_EXIT_USAGE = 2 };

//  Defaults, and why: a concurrency of 8 keeps a typical relay busy without
//  tripping its per-client connection limits; 10 s covers an SMTP answer.
#define S_DEFAULT_CONCURRENCY      8
#define S_DEFAULT_DRAIN_TIMEOUT_MS 10000
#define S_DISPATCHER_PATH          FQ_PROTOCOL_DISPATCHER_PATH

//  ZeroMQ sockets per delivery worker (its pipe pair, mailbox and outbox,
//  with room to spare), and for everything else (the gateway, the sender
//  actor, clients).
#define S_SOCKETS_PER_WORKER 8
#define S_SOCKETS_BASE       256

//  A CURVE public key in Z85 text, and in bytes.
#define S_Z85_KEY_LEN 40
#define S_KEY_SIZE    32

//  getopt_long's codes for the options: past every short option's
//  character, so that S_OPT_BASE + an s_opt_t names the option.
#define S_OPT_BASE 1000

//  What --connect looks like, for the messages that ask for it.
#define S_CONNECT_FORM "tcp://HOST:PORT[,tcp://HOST:PORT...]"

//  What the environment's names start with, and room for the longest.
#define S_ENV_PREFIX "FAIRQ_SENDER_"
#define S_ENV_SIZE   64

//  Bounds of the timing options: below them the heartbeats (or a wait for
//  fairqd) would busy the sender, above them nobody would wait that long.
#define S_HEARTBEAT_MS_MIN         10
#define S_HEARTBEAT_MS_MAX         60000
#define S_HEARTBEAT_TIMEOUT_MS_MIN 20
#define S_HEARTBEAT_TIMEOUT_MS_MAX 600000
#define S_TIMEOUT_MS_MAX           3600000

//  Room for the transport's reason when it refuses its settings.
#define S_ERROR_SIZE 512

//  How long the last answers get to leave through the gateway before it
//  closes, at the end of a drain.
#define S_LAST_ANSWERS_MS 100

//  The options, in one table: name, whether it takes a value, help.
#define S_OPTIONS(X)                                                                               \
    X(CONNECT, "connect", "tcp://HOST:PORT of fairqd's gateway, or of each fairqd's (required)")   \
    X(CERT, "cert", "this sender's CURVE certificate (PATH, its secret in PATH_secret)")           \
    X(SERVER_CERT, "server-cert", "fairqd's public CURVE certificate (one for all fairqd)")        \
    X(SERVER_KEY, "server-key", "fairqd's public CURVE key (Z85), instead of --server-cert")       \
    X(INSECURE, "insecure", "no CURVE (development only; fairqd must allow it too)")               \
    X(NAME, "name", "this sender's name (default: sender-HOST-PID)")                               \
    X(CONCURRENCY, "concurrency", "messages delivered at once = credit granted (default 8)")       \
    X(TRANSPORT, "transport", "smtp, file or null (default smtp)")                                 \
    X(SMTP_URL, "smtp-url", "smtp://HOST:PORT or smtps://HOST:PORT")                               \
    X(SMTP_USER, "smtp-user", "SMTP AUTH user name")                                               \
    X(SMTP_PASSWORD, "smtp-password", "SMTP AUTH password (better: the environment)")              \
    X(STARTTLS, "starttls", "try, require or never (default try)")                                 \
    X(SMTP_TIMEOUT_MS, "smtp-timeout-ms", "longest one delivery may take (default 30000)")         \
    X(TLS_INSECURE, "tls-insecure", "do not verify the SMTP server's certificate (tests)")         \
    X(HELO, "helo", "name said in EHLO")                                                           \
    X(FILE, "file", "file transport: the mbox it appends to; null: its delivery log")              \
    X(MESSAGE_ID_DOMAIN, "message-id-domain", "domain of Message-ID (default: the From domain)")   \
    X(HEARTBEAT_MS, "heartbeat-ms", "idle interval between heartbeats (default 1000)")             \
    X(HEARTBEAT_TIMEOUT_MS, "heartbeat-timeout-ms", "silence after which fairqd is gone (3000)")   \
    X(DRAIN_TIMEOUT_MS, "drain-timeout-ms", "on SIGTERM, longest wait for deliveries (10000)")     \
    X(LOG_LEVEL, "log-level", "debug, info, warning or error (default info)")                      \
    X(MAKE_CERT, "make-cert", "write a new certificate to PATH and PATH_secret, and exit")         \
    X(HELP, "help", "this text")

typedef enum {
#define X(id, name, help) S_OPT_##id,
    S_OPTIONS(X)
#undef X
        S_OPT_COUNT
} s_opt_t;

static const char *const s_names[] = {
#define X(id, name, help) name,
    S_OPTIONS(X)
#undef X
};
static const char *const s_help[] = {
#define X(id, name, help) help,
    S_OPTIONS(X)
#undef X
};

//  Options that are switches (no value).
static bool s_is_switch(s_opt_t opt)
{
    return opt == S_OPT_INSECURE || opt == S_OPT_TLS_INSECURE || opt == S_OPT_HELP;
}

static void s_usage(FILE *out)
{
    fprintf(out, "Usage: %s --connect " S_CONNECT_FORM " [options]\n\nOptions:\n", S_PROGRAM);
    for (int i = 0; i < S_OPT_COUNT; i++)
        fprintf(out, "  --%-22s %s\n", s_names[i], s_help[i]);
    fprintf(out,
            "\nSeveral fairqd (a leader and standbys): list each one's gateway in --connect,\n"
            "comma-separated (at most %d); the sender joins whichever is the leader. All of\n"
            "them use one server certificate, so one --server-cert or --server-key serves\n"
            "every endpoint.\n",
            FQ_GATEWAY_ENDPOINTS_MAX);
    fprintf(out, "\nEach option may come from the environment as FAIRQ_SENDER_<NAME>.\n");
}

//  The value of opt: the flag's, else the environment's, else NULL.
static const char *s_value(char *const values[], s_opt_t opt)
{
    if (values[opt])
        return values[opt];
    char env[S_ENV_SIZE] = S_ENV_PREFIX;
    size_t len = strlen(env);
    for (const char *c = s_names[opt]; *c && len + 1 < sizeof env; c++)
        env[len++] = *c == '-' ? '_' : (char)(*c >= 'a' && *c <= 'z' ? *c - 'a' + 'A' : *c);
    env[len] = 0;
    const char *value = getenv(env);
    return value && *value ? value : NULL;
}

static bool s_true(const char *value)
{
    return value && (strcmp(value, "1") == 0 || strcasecmp(value, "true") == 0 ||
                     strcasecmp(value, "yes") == 0 || strcasecmp(value, "on") == 0);
}

//  Parses an integer option within min..max; returns 0 or -1 (printed).
static int s_int(char *const values[], s_opt_t opt, int fallback, int min, int max, int *out)
{
    const char *value = s_value(values, opt);
    if (!value) {
        *out = fallback;
        return 0;
    }
    char *end;
    long n = strtol(value, &end, 10);
    if (*end || end == value || n < min || n > max) {
        fprintf(stderr, "%s: invalid value for --%s: \"%s\" (an integer in %d..%d)\n", S_PROGRAM,
                s_names[opt], value, min, max);
        return -1;
    }
    *out = (int)n;
    return 0;
}

//  Whether key is a CURVE public key in Z85 text: 40 characters that
//  decode. libzmq asserts when handed one that does not, deep in the
//  gateway's thread, so it is checked here, as the option it came from.
static bool s_public_key_valid(const char *key)
{
    uint8_t decoded[S_KEY_SIZE];
    return key && strlen(key) == S_Z85_KEY_LEN && zmq_z85_decode(decoded, key) != NULL;
}

//  The length of the first endpoint of a --connect list.
static int s_first_endpoint_len(const char *connect)
{
    const char *separator = strchr(connect, FQ_GATEWAY_ENDPOINT_SEPARATOR);
    return separator ? (int)(separator - connect) : (int)strlen(connect);
}

static int s_make_cert(const char *path)
{
    zcert_t *cert = zcert_new();
    int rc = cert ? zcert_save(cert, path) : -1;
    zcert_destroy(&cert);
    if (rc != 0) {
        fprintf(stderr, "%s: could not write certificate \"%s\"\n", S_PROGRAM, path);
        return S_EXIT_FAILURE;
    }
    printf("wrote %s (public) and %s_secret (keep it private)\n", path, path);
    return S_EXIT_OK;
}

int main(int argc, char *argv[])
{
    //  Before any thread starts: they inherit the mask, main takes the signals
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGTERM);
    sigaddset(&signals, SIGINT);
    pthread_sigmask(SIG_BLOCK, &signals, NULL);
    signal(SIGPIPE, SIG_IGN);

    struct option longopts[S_OPT_COUNT + 1];
    for (int i = 0; i < S_OPT_COUNT; i++)
        longopts[i] = (struct option){s_names[i], s_is_switch(i) ? no_argument : required_argument,
                                      NULL, S_OPT_BASE + i};
    longopts[S_OPT_COUNT] = (struct option){0};
    char *values[S_OPT_COUNT] = {0};
    int c;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        if (c == 'h')
            c = S_OPT_BASE + S_OPT_HELP;
        if (c < S_OPT_BASE || c >= S_OPT_BASE + S_OPT_COUNT) {
            fprintf(stderr, "Try \"%s --help\" for more information.\n", S_PROGRAM);
            return S_EXIT_USAGE;
        }
        values[c - S_OPT_BASE] = optarg ? optarg : "true";
    }
    if (optind < argc) {
        fprintf(stderr, "%s: unexpected argument \"%s\"\n", S_PROGRAM, argv[optind]);
        return S_EXIT_USAGE;
    }
    if (values[S_OPT_HELP]) {
        s_usage(stdout);
        return S_EXIT_OK;
    }
    if (values[S_OPT_MAKE_CERT])
        return s_make_cert(values[S_OPT_MAKE_CERT]);

    fq_log_level_t level = FQ_LOG_INFO;
    const char *level_name = s_value(values, S_OPT_LOG_LEVEL);
    if (level_name && fq_log_level_parse(level_name, &level) != 0) {
        fprintf(stderr, "%s: invalid value for --log-level: \"%s\"\n", S_PROGRAM, level_name);
        return S_EXIT_USAGE;
    }
    fq_log_set_level(level);
    const char *connect = s_value(values, S_OPT_CONNECT);
    if (!connect) {
        fprintf(stderr, "%s: --connect " S_CONNECT_FORM " is required\n", S_PROGRAM);
        return S_EXIT_USAGE;
    }
    char problem[S_ERROR_SIZE];
    if (!fq_gateway_endpoints_valid(connect, problem, sizeof problem)) {
        fprintf(stderr, "%s: invalid value for --connect: %s (want " S_CONNECT_FORM ")\n",
                S_PROGRAM, problem);
        return S_EXIT_USAGE;
    }
    int concurrency, heartbeat_ms, heartbeat_timeout_ms, drain_ms, smtp_timeout_ms;
    if (s_int(values, S_OPT_CONCURRENCY, S_DEFAULT_CONCURRENCY, 1, FQ_SENDER_WORKERS,
              &concurrency) ||
        s_int(values, S_OPT_HEARTBEAT_MS, FQ_GATEWAY_HEARTBEAT_MS, S_HEARTBEAT_MS_MIN,
              S_HEARTBEAT_MS_MAX, &heartbeat_ms) ||
        s_int(values, S_OPT_HEARTBEAT_TIMEOUT_MS, FQ_GATEWAY_HEARTBEAT_TIMEOUT_MS,
              S_HEARTBEAT_TIMEOUT_MS_MIN, S_HEARTBEAT_TIMEOUT_MS_MAX, &heartbeat_timeout_ms) ||
        s_int(values, S_OPT_DRAIN_TIMEOUT_MS, S_DEFAULT_DRAIN_TIMEOUT_MS, 0, S_TIMEOUT_MS_MAX,
              &drain_ms) ||
        s_int(values, S_OPT_SMTP_TIMEOUT_MS, 0, 0, S_TIMEOUT_MS_MAX, &smtp_timeout_ms))
        return S_EXIT_USAGE;

    char name[FQ_NAME_MAX + 1];
    if (s_value(values, S_OPT_NAME))
        snprintf(name, sizeof name, "%s", s_value(values, S_OPT_NAME));
    else {
        //  The host's short name, cut so that the whole fits a name
        char host[FQ_NAME_MAX] = "host";
        gethostname(host, sizeof host - 1);
        host[strcspn(host, ".")] = 0;
        host[FQ_NAME_MAX / 2] = 0;
        snprintf(name, sizeof name, "sender-%.32s-%d", host, (int)getpid());
    }
    if (!fq_name_valid(name)) {
        fprintf(stderr, "%s: invalid --name \"%s\" (letters, digits, '.', '_', '-')\n", S_PROGRAM,
                name);
        return S_EXIT_USAGE;
    }

    fq_sender_config_t config = {
        .name = name,
        .version = FQ_VERSION,
        .concurrency = concurrency,
        .transport = {.kind = s_value(values, S_OPT_TRANSPORT) ? s_value(values, S_OPT_TRANSPORT)
                                                               : "smtp",
                      .url = s_value(values, S_OPT_SMTP_URL),
                      .username = s_value(values, S_OPT_SMTP_USER),
                      .password = s_value(values, S_OPT_SMTP_PASSWORD),
                      .starttls = s_value(values, S_OPT_STARTTLS),
                      .insecure_tls = s_true(s_value(values, S_OPT_TLS_INSECURE)),
                      .timeout_ms = smtp_timeout_ms,
                      .helo = s_value(values, S_OPT_HELO),
                      .path = s_value(values, S_OPT_FILE),
                      .message_id_domain = s_value(values, S_OPT_MESSAGE_ID_DOMAIN)}};
    //  The transport is checked here, so a wrong URL or file is a usage
    //  error now rather than a worker failing over and over
    char error[S_ERROR_SIZE];
    fq_transport_t *probe = fq_transport_new(&config.transport, error, sizeof error);
    if (!probe) {
        fprintf(stderr, "%s: %s\n", S_PROGRAM, error);
        return S_EXIT_USAGE;
    }
    fq_transport_destroy(&probe);

    bool insecure = s_true(s_value(values, S_OPT_INSECURE));
    const char *server_key = s_value(values, S_OPT_SERVER_KEY);
    zconfig_t *server_cert = NULL;
    if (!insecure && !server_key && s_value(values, S_OPT_SERVER_CERT)) {
        //  The public certificate alone, read as the ZPL file it is: zcert_load
        //  would read PATH_secret too when it exists (fairqd's own secret, on
        //  a host that runs both), and a sender has no business holding it
        server_cert = zconfig_load(s_value(values, S_OPT_SERVER_CERT));
        server_key = server_cert ? zconfig_get(server_cert, "curve/public-key", NULL) : NULL;
        if (!s_public_key_valid(server_key)) {
            fprintf(stderr, "%s: could not read a public key from --server-cert \"%s\"\n",
                    S_PROGRAM, s_value(values, S_OPT_SERVER_CERT));
            zconfig_destroy(&server_cert);
            return S_EXIT_USAGE;
        }
    }
    if (!insecure && (!server_key || !s_value(values, S_OPT_CERT))) {
        fprintf(stderr, "%s: CURVE needs --cert and --server-cert (or --insecure)\n", S_PROGRAM);
        zconfig_destroy(&server_cert);
        return S_EXIT_USAGE;
    }
    if (!insecure && !s_public_key_valid(server_key)) {
        fprintf(stderr,
                "%s: invalid value for --server-key: not a CURVE public key (%d characters of "
                "Z85)\n",
                S_PROGRAM, S_Z85_KEY_LEN);
        return S_EXIT_USAGE;
    }

    //  Addressed by the first endpoint: the gateway takes any endpoint of
    //  the list to the fairqd it joined, whichever that is
    char dispatcher[FQ_ADDRESS_MAX];
    snprintf(dispatcher, sizeof dispatcher, "%.*s%s", s_first_endpoint_len(connect), connect,
             S_DISPATCHER_PATH);
    config.dispatcher = dispatcher;
    //  Each delivery worker takes a few ZeroMQ sockets; the default cap (1,024
    //  sockets per context) must not be what limits the concurrency. Set
    //  before the first socket exists.
    zsys_set_max_sockets((size_t)concurrency * S_SOCKETS_PER_WORKER + S_SOCKETS_BASE);
    fq_system_config_t system_config = {.name = name};
    fq_system_t *sys = fq_system_new(&system_config);
    fq_gateway_config_t gateway = {.connect = connect,
                                   .cert_file = insecure ? NULL : s_value(values, S_OPT_CERT),
                                   .server_key = insecure ? NULL : server_key,
                                   .insecure = insecure,
                                   .admit = fq_protocol_sender_admit,
                                   .admit_count = fq_protocol_sender_admit_count,
                                   .heartbeat_ms = heartbeat_ms,
                                   .heartbeat_timeout_ms = heartbeat_timeout_ms};
    int rc = sys ? fq_gateway_start(sys, &gateway) : FQ_ENOMEM;
    zconfig_destroy(&server_cert);
    if (rc == FQ_EINVAL) {
        //  The gateway has logged what it refused: a sender that started
        //  anyway would knock at fairqd's door for ever, never let in
        fprintf(stderr,
                "%s: invalid CURVE configuration (--cert, --server-cert, --server-key), see the "
                "gateway's error above\n",
                S_PROGRAM);
        fq_system_destroy(&sys);
        return S_EXIT_USAGE;
    }
    if (rc == 0)
        rc = fq_sender_start(sys, &config);
    if (rc) {
        fq_log(FQ_LOG_FATAL, "could not start: %s", fq_strerror(rc));
        fq_system_destroy(&sys);
        return S_EXIT_FAILURE;
    }
    if (insecure)
        fq_log(FQ_LOG_WARNING, "connecting to %s without CURVE (development only)", connect);
    fq_log(FQ_LOG_INFO, "%s %s \"%s\" started: %s transport, concurrency %d, fairqd at %s",
           S_PROGRAM, FQ_VERSION, name, config.transport.kind, concurrency, connect);

    int sig;
    while (sigwait(&signals, &sig) != 0)
        ;
    fq_log(FQ_LOG_INFO, "received %s, finishing deliveries", sig == SIGTERM ? "SIGTERM" : "SIGINT");
    int left = fq_sender_drain(sys, drain_ms);
    if (left > 0)
        fq_log(FQ_LOG_WARNING, "stopping with %d deliveries unfinished (fairqd sends them again)",
               left);
    //  Let the last answers leave through the gateway before it closes
    zclock_sleep(S_LAST_ANSWERS_MS);
    fq_system_destroy(&sys);
    fq_log(FQ_LOG_INFO, "stopped");
    return S_EXIT_OK;
}
