/*  fairq_sender.c — fairq-sender, a sender worker (the processes are in
    docs/architecture.md, the protocol it speaks in docs/protocol.md).

        fairq-sender --connect tcp://HOST:PORT[,tcp://HOST:PORT...] [--config PATH] [options]
        fairq-sender --make-cert PATH

    It runs a small actor system whose gateway connects to fairqd's (CURVE:
    --cert is this sender's certificate, --server-cert fairqd's public one;
    fairqd lets it in when its public certificate is in fairqd's
    gateway_allow_dir). The sender actor says HELLO, grants credit for
    each channel it serves (its pool of workers: concurrency, or its size
    in channel_concurrency) and delivers the messages of those channels
    (channels: email through the chosen transport, http, or others
    through exec_command), each through its transport. It reconnects
    with backoff when fairqd goes away.

    Several fairqd (one leader, the others standing by with their gateway
    unbound): --connect lists every one's gateway, and the gateway follows
    whichever binds (fq_gateway.h). They share one server certificate, so
    one --server-cert or --server-key serves them all.

    Its settings are the keys of fq_sender_keys.h, read by the
    configuration engine as fairqd's are: default < config file (--config
    PATH or FAIRQ_SENDER_CONFIG, "key = value" lines) < environment
    (FAIRQ_SENDER_ and the key in capitals: FAIRQ_SENDER_SMTP_PASSWORD
    keeps a password off the command line) < flags (--smtp-url). Exit 0
    for --help, --version and --print-config (smtp_password masked).

    SIGTERM or SIGINT: BYE to fairqd, finish the messages being delivered
    (up to --drain-timeout-ms), send their outcomes, exit 0. Exit 2 for a
    usage error (a setting the configuration refuses, --connect missing
    from every source), CURVE material that cannot work included: a --cert that
    cannot be read or has no _secret file beside it (the gateway refuses
    it, saying why), a --server-cert or --server-key that holds no public
    key. Exit 1 when it cannot start. --make-cert writes a new CURVE
    certificate (PATH, public, and PATH_secret) and exits. */
#include "fq_config.h"
#include "fq_error.h"
#include "fq_gateway.h"
#include "fq_log.h"
#include "fq_rate.h"
#include "fq_sender.h"
#include "fq_sender_keys.h"
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

//  The version, passed by CMake from project(fairq VERSION ...), the one
//  place it is written.
#ifndef FQ_VERSION
#define FQ_VERSION "unknown"
#endif

#define S_PROGRAM fq_sender_schema.program

enum { S_EXIT_OK = 0, S_EXIT_FAILURE = 1, S_EXIT_USAGE = 2 };

#define S_DISPATCHER_PATH FQ_PROTOCOL_DISPATCHER_PATH

//  ZeroMQ sockets per delivery worker (its pipe pair, mailbox and outbox,
//  with room to spare), and for everything else (the gateway, the sender
//  actor, clients).
#define S_SOCKETS_PER_WORKER 8
#define S_SOCKETS_BASE       256

//  File descriptors per delivery worker: its ZeroMQ sockets' (3 measured),
//  its transport's connections, an exec command's pipes while it runs;
//  and for everything else (the gateway, logs, libraries).
#define S_FDS_PER_WORKER 8
#define S_FDS_BASE       256

//  Room for what the start's log line says of each channel served:
//  "NAME (KIND, N workers), ".
#define S_SERVED_SIZE (FQ_SENDER_CHANNELS_MAX * (FQ_SENDER_CHANNEL_NAME_MAX + 32))

//  A CURVE public key in Z85 text, and in bytes.
#define S_Z85_KEY_LEN 40
#define S_KEY_SIZE    32

//  Room for the configuration's or the transport's reason when it refuses
//  the settings.
#define S_ERROR_SIZE 1024

//  How long the last answers get to leave through the gateway before it
//  closes, at the end of a drain.
#define S_LAST_ANSWERS_MS 100

//  What --help adds to the text generated from the keys.
static void s_help_more(FILE *out)
{
    fprintf(out,
            "\nSeveral fairqd (a leader and standbys): list each one's gateway in --connect,\n"
            "comma-separated (at most %d); the sender joins whichever is the leader. All of\n"
            "them use one server certificate, so one --server-cert or --server-key serves\n"
            "every endpoint.\n"
            "\nChannels: --channels lists the channels this sender serves (at most %d).\n"
            "  email  through --transport (smtp, file, null, or exec: --exec-command)\n"
            "  http   one HTTP(S) request per message, to its URL, with its method, headers\n"
            "         and body; 2xx delivered, 408, 425, 429, 5xx and no answer retried\n"
            "         (Retry-After passed on to fairqd), redirects and other statuses failed\n"
            "  NAME   any other: --exec-command, run once per message, no shell: the message\n"
            "         on its stdin (email: RFC 5322 text; others: the body) and FAIRQ_MESSAGE_ID,\n"
            "         FAIRQ_TENANT, FAIRQ_REQUEST_ID, FAIRQ_ATTEMPT, FAIRQ_CHANNEL, FAIRQ_TO,\n"
            "         FAIRQ_METHOD in its environment; exit 0 delivered, 75 (EX_TEMPFAIL), a\n"
            "         signal or --exec-timeout-ms retried, another exit failed for good\n"
            "HELLO tells fairqd each channel served (channel=NAME); a message of another\n"
            "channel is given back to fairqd for another sender.\n"
            "\nEach channel has a pool of workers of its own (--concurrency each, or its size\n"
            "in --channel-concurrency, e.g. http:200,sms:4), and grants fairqd credit for\n"
            "its idle workers apart: a receiver that hangs holds its own channel's workers,\n"
            "never another's. HELLO's concurrency is all pools together. A fairqd that knows\n"
            "no channels counts all credit as one: run one that does before serving more\n"
            "than email.\n",
            FQ_GATEWAY_ENDPOINTS_MAX, FQ_SENDER_CHANNELS_MAX);
}

//  A text setting that may be left out: NULL when empty.
static const char *s_optional(fq_config_t *config, fq_sender_key_t key)
{
    const char *value = fq_config_str(config, key);
    return *value ? value : NULL;
}

//  Whether key is a CURVE public key in Z85 text: 40 characters that
//  decode. libzmq asserts when handed one that does not, deep in the
//  gateway's thread, so it is checked here, as the option it came from.
static bool s_public_key_valid(const char *key)
{
    uint8_t decoded[S_KEY_SIZE];
    return key && strlen(key) == S_Z85_KEY_LEN && zmq_z85_decode(decoded, key) != NULL;
}

//  Raises the soft limit of file descriptors, up to the hard one, to what
//  workers delivery workers need: most systems start a service at 1,024,
//  which a few hundred workers pass, and ZeroMQ aborts when it cannot
//  open a socket's descriptor. Warns when the hard limit is lower.
static void s_fd_limit_raise(int workers)
{
    rlim_t need = (rlim_t)workers * S_FDS_PER_WORKER + S_FDS_BASE;
    struct rlimit limit;
    if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur >= need)
        return;
    rlim_t was = limit.rlim_cur;
    limit.rlim_cur = limit.rlim_max < need ? limit.rlim_max : need;
    if (setrlimit(RLIMIT_NOFILE, &limit) != 0)
        limit.rlim_cur = was;
    if (limit.rlim_cur < need)
        fq_log(FQ_LOG_WARNING,
               "%d delivery workers may need %llu file descriptors, and the limit is %llu (raise "
               "LimitNOFILE or lower concurrency)",
               workers, (unsigned long long)need, (unsigned long long)limit.rlim_cur);
    else
        fq_log(FQ_LOG_DEBUG,
               "raised the limit of file descriptors from %llu to %llu for %d "
               "delivery workers",
               (unsigned long long)was, (unsigned long long)limit.rlim_cur, workers);
}

//  The length of the first endpoint of a --connect list.
static int s_first_endpoint_len(const char *connect)
{
    const char *separator = strchr(connect, FQ_GATEWAY_ENDPOINT_SEPARATOR);
    return separator ? (int)(separator - connect) : (int)strlen(connect);
}

//  Runs the sender with config until SIGTERM or SIGINT (signals: the
//  ones main blocked). Returns the exit code.
static int s_run(fq_config_t *config, sigset_t *signals)
{
    fq_log_level_t level = FQ_LOG_INFO;
    fq_log_level_parse(fq_config_str(config, FQ_SENDER_KEY_LOG_LEVEL), &level);
    fq_log_set_level(level);
    const char *connect = fq_config_str(config, FQ_SENDER_KEY_CONNECT);
    int concurrency = fq_config_int(config, FQ_SENDER_KEY_CONCURRENCY);

    char name[FQ_NAME_MAX + 1];
    if (s_optional(config, FQ_SENDER_KEY_NAME))
        snprintf(name, sizeof name, "%s", fq_config_str(config, FQ_SENDER_KEY_NAME));
    else {
        //  The host's short name, cut so that the whole fits a name
        char host[FQ_NAME_MAX] = "host";
        gethostname(host, sizeof host - 1);
        host[strcspn(host, ".")] = 0;
        host[FQ_NAME_MAX / 2] = 0;
        snprintf(name, sizeof name, "sender-%.32s-%d", host, (int)getpid());
    }

    //  Its relay's limit, written back the one way fairqd reads it
    char max_rate[FQ_RATE_TEXT_SIZE] = "";
    fq_rate_t rate;
    char problem[128];
    if (fq_rate_parse(fq_config_str(config, FQ_SENDER_KEY_MAX_RATE), &rate, problem,
                      sizeof problem) == 0)
        fq_rate_format(&rate, max_rate);
    fq_sender_config_t sender = {
        .name = name, .version = FQ_VERSION, .concurrency = concurrency, .max_rate = max_rate};
    char channel_names[FQ_SENDER_CHANNELS_MAX][FQ_SENDER_CHANNEL_NAME_MAX + 1];
    char error[S_ERROR_SIZE];
    if (fq_sender_channels_from(config, &sender, channel_names) != 0) {
        fprintf(stderr, "%s: invalid value for \"channels\"\n", S_PROGRAM);
        return S_EXIT_USAGE;
    }
    char capabilities[FQ_SENDER_CAPABILITIES_MAX + 1];
    if (fq_sender_capabilities(&sender, capabilities, sizeof capabilities) != 0) {
        fprintf(stderr,
                "%s: invalid value for \"channels\": too many channels or names too long for "
                "HELLO's capabilities (at most %d characters)\n",
                S_PROGRAM, FQ_SENDER_CAPABILITIES_MAX);
        return S_EXIT_USAGE;
    }
    //  Each channel's transport is checked here, so a wrong URL, file or
    //  command is a usage error now rather than a worker failing over and
    //  over
    char served[S_SERVED_SIZE] = "";
    for (int i = 0; i < sender.nchannels; i++) {
        const fq_sender_channel_t *channel = &sender.channels[i];
        fq_transport_t *probe = fq_transport_new(&channel->transport, error, sizeof error);
        if (!probe) {
            fprintf(stderr, "%s: channel %s: %s\n", S_PROGRAM, channel->name, error);
            return S_EXIT_USAGE;
        }
        fq_transport_destroy(&probe);
        size_t used = strlen(served);
        snprintf(served + used, sizeof served - used, "%s%s (%s, %d workers)", i ? ", " : "",
                 channel->name, channel->transport.kind, fq_sender_pool_size(&sender, i));
    }
    int workers = fq_sender_workers(&sender);

    bool insecure = fq_config_bool(config, FQ_SENDER_KEY_INSECURE);
    const char *server_key = s_optional(config, FQ_SENDER_KEY_SERVER_KEY);
    const char *server_cert_path = s_optional(config, FQ_SENDER_KEY_SERVER_CERT);
    const char *cert = s_optional(config, FQ_SENDER_KEY_CERT);
    zconfig_t *server_cert = NULL;
    if (!insecure && !server_key && server_cert_path) {
        //  The public certificate alone, read as the ZPL file it is: zcert_load
        //  would read PATH_secret too when it exists (fairqd's own secret, on
        //  a host that runs both), and a sender has no business holding it
        server_cert = zconfig_load(server_cert_path);
        server_key = server_cert ? zconfig_get(server_cert, "curve/public-key", NULL) : NULL;
        if (!s_public_key_valid(server_key)) {
            fprintf(stderr, "%s: could not read a public key from --server-cert \"%s\"\n",
                    S_PROGRAM, server_cert_path);
            zconfig_destroy(&server_cert);
            return S_EXIT_USAGE;
        }
    }
    if (!insecure && (!server_key || !cert)) {
        fprintf(stderr, "%s: CURVE needs --cert and --server-cert (or --insecure)\n", S_PROGRAM);
        zconfig_destroy(&server_cert);
        return S_EXIT_USAGE;
    }
    if (!insecure && !s_public_key_valid(server_key)) {
        fprintf(stderr,
                "%s: invalid value for --server-key: not a CURVE public key (%d characters of "
                "Z85)\n",
                S_PROGRAM, S_Z85_KEY_LEN);
        zconfig_destroy(&server_cert);
        return S_EXIT_USAGE;
    }

    //  Addressed by the first endpoint: the gateway takes any endpoint of
    //  the list to the fairqd it joined, whichever that is
    char dispatcher[FQ_ADDRESS_MAX];
    snprintf(dispatcher, sizeof dispatcher, "%.*s%s", s_first_endpoint_len(connect), connect,
             S_DISPATCHER_PATH);
    sender.dispatcher = dispatcher;
    //  Each delivery worker takes a few ZeroMQ sockets; the default cap (1,024
    //  sockets per context) must not be what limits the concurrency. Set
    //  before the first socket exists, as the descriptors' limit.
    zsys_set_max_sockets((size_t)workers * S_SOCKETS_PER_WORKER + S_SOCKETS_BASE);
    s_fd_limit_raise(workers);
    fq_system_config_t system_config = {.name = name};
    fq_system_t *sys = fq_system_new(&system_config);
    fq_gateway_config_t gateway = {
        .connect = connect,
        .cert_file = insecure ? NULL : cert,
        .server_key = insecure ? NULL : server_key,
        .insecure = insecure,
        .admit = fq_protocol_sender_admit,
        .admit_count = fq_protocol_sender_admit_count,
        .heartbeat_ms = fq_config_int(config, FQ_SENDER_KEY_HEARTBEAT_MS),
        .heartbeat_timeout_ms = fq_config_int(config, FQ_SENDER_KEY_HEARTBEAT_TIMEOUT_MS)};
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
        rc = fq_sender_start(sys, &sender);
    if (rc) {
        fq_log(FQ_LOG_FATAL, "could not start: %s", fq_strerror(rc));
        fq_system_destroy(&sys);
        return S_EXIT_FAILURE;
    }
    if (insecure)
        fq_log(FQ_LOG_WARNING, "connecting to %s without CURVE (development only)", connect);
    const char *file = fq_config_file(config);
    if (file)
        fq_log(FQ_LOG_INFO, "configuration read from %s", file);
    fq_log(FQ_LOG_INFO, "%s %s \"%s\" started: serving %s, concurrency %d, fairqd at %s", S_PROGRAM,
           FQ_VERSION, name, served, workers, connect);

    int sig;
    while (sigwait(signals, &sig) != 0)
        ;
    fq_log(FQ_LOG_INFO, "received %s, finishing deliveries", sig == SIGTERM ? "SIGTERM" : "SIGINT");
    int left = fq_sender_drain(sys, fq_config_int(config, FQ_SENDER_KEY_DRAIN_TIMEOUT_MS));
    if (left > 0)
        fq_log(FQ_LOG_WARNING, "stopping with %d deliveries unfinished (fairqd sends them again)",
               left);
    //  Let the last answers leave through the gateway before it closes
    zclock_sleep(S_LAST_ANSWERS_MS);
    fq_system_destroy(&sys);
    fq_log(FQ_LOG_INFO, "stopped");
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

    fq_config_t *config = fq_config_new(&fq_sender_schema);
    char error[S_ERROR_SIZE];
    int rc = config ? fq_config_load(config, argc, argv, NULL, error, sizeof error) : FQ_ENOMEM;
    if (rc) {
        fprintf(stderr, "%s: %s\n", S_PROGRAM, rc == FQ_ENOMEM ? "out of memory" : error);
        fprintf(stderr, "Try \"%s --help\" for more information.\n", S_PROGRAM);
        fq_config_destroy(&config);
        return rc == FQ_ENOMEM ? S_EXIT_FAILURE : S_EXIT_USAGE;
    }
    const char *path = NULL;
    switch (fq_config_action(config)) {
    case FQ_CONFIG_HELP:
        fq_config_help(config, stdout);
        s_help_more(stdout);
        break;
    case FQ_CONFIG_VERSION:
        printf("%s %s\n", S_PROGRAM, FQ_VERSION);
        break;
    case FQ_CONFIG_PRINT:
        fq_config_print(config, stdout);
        break;
    case FQ_CONFIG_COMMAND:
        //  The one command: --make-cert PATH
        rc = fq_config_command(config, &path) == FQ_SENDER_COMMAND_MAKE_CERT
                 ? fq_gateway_cert_command(S_PROGRAM, path)
                 : S_EXIT_USAGE;
        break;
    case FQ_CONFIG_RUN:
        rc = s_run(config, &signals);
        break;
    }
    fq_config_destroy(&config);
    return rc;
}
