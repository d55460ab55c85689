/*  fq_bench_sink.c — the webhook receiver of the pipeline benchmark's
    http scenario (fq_bench_pipeline --channel http): an HTTP server on
    the loopback that answers every request 200 with an empty body, as
    fast as it can, so that the figures are fairq's and not a receiver's.

    libmicrohttpd with its own epoll threads (a pool of --threads, each
    with its own epoll set and its share of the connections; the senders'
    connections stay open, HTTP/1.1 keep-alive). One response, made once,
    serves every request. A request is read to its end (its body dropped)
    before it is answered.

    It counts what it is sent, and checks cheaply what every message of
    the benchmark must carry: a POST to /hook/TENANT/..., a body, and with
    --require-signature a webhook-signature header of the form
    "v1,<base64>" (its presence and form, not the HMAC: verifying is the
    receiver's cost, not fairq's). With --log PATH it writes one line per
    request, "<unix ns> <message id> <tenant> 0" (the form of the null
    transport's delivery log, which the benchmark reads the same way): the
    time the request was received whole (CLOCK_REALTIME), the id of its
    webhook-id header ("msg_<id>"; 0 without one), and the TENANT of its
    path; lines are buffered and written in blocks, so the log costs
    little.

    It prints "sink: listening on 127.0.0.1:PORT" once it accepts
    connections, and on SIGTERM or SIGINT stops, writes the rest of its
    log and prints its counts on one line, "sink: done: requests N
    unsigned N empty N bad N connections N" (unsigned: no or a malformed
    webhook-signature while it was required; empty: no body; bad: not a
    POST to /hook/TENANT/...; connections: accepted, which with clients
    that keep theirs alive is about one per client), then exits 0.

    Usage: fq_bench_sink --port PORT [--threads N] [--log PATH]
                         [--require-signature]
*/
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define S_PROGRAM "fq_bench_sink"

#define S_THREADS_DEFAULT 2
#define S_THREADS_MAX     64
#define S_CONNECTIONS_MAX 8192 //  Far more than the senders' workers
#define S_BACKLOG         1024
#define S_LOG_BUFFER      (1024 * 1024) //  Written in blocks of up to this
#define S_LINE_MAX        256
#define S_TENANT_MAX      128
#define S_NS_PER_S        1000000000LL

//  What a request must look like
#define S_PATH_PREFIX      "/hook/"
#define S_SIGNATURE_HEADER "webhook-signature"
#define S_SIGNATURE_PREFIX "v1,"
#define S_ID_HEADER        "webhook-id"
#define S_ID_PREFIX        "msg_"

//  A request's state between libmicrohttpd's calls, kept in its con_cls
//  without an allocation: the headers seen, then a body seen too.
static char s_started, s_had_body;

static struct {
    struct MHD_Response *response; //  200, empty: shared by every request
    bool require_signature;
    atomic_ullong requests, unsigned_, empty, bad, connections;
    //  The delivery log: lines gathered under the lock, written in blocks
    int log_fd; //  -1: none
    pthread_mutex_t lock;
    char *buffer;
    size_t used;
    bool log_failed;
} s_sink = {.log_fd = -1, .lock = PTHREAD_MUTEX_INITIALIZER};

//  Writes what the buffer holds; under the lock (or once the threads are
//  gone).
static void s_log_flush(void)
{
    size_t done = 0;
    while (done < s_sink.used && !s_sink.log_failed) {
        ssize_t n = write(s_sink.log_fd, s_sink.buffer + done, s_sink.used - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            fprintf(stderr, S_PROGRAM ": could not write the log: %s\n", strerror(errno));
            s_sink.log_failed = true;
        } else
            done += (size_t)n;
    }
    s_sink.used = 0;
}

static void s_log_line(const char *line, size_t len)
{
    pthread_mutex_lock(&s_sink.lock);
    if (s_sink.used + len > S_LOG_BUFFER)
        s_log_flush();
    memcpy(s_sink.buffer + s_sink.used, line, len);
    s_sink.used += len;
    pthread_mutex_unlock(&s_sink.lock);
}

//  The request is whole: counted, checked, logged.
static void s_received(struct MHD_Connection *connection, const char *url, const char *method,
                       bool had_body)
{
    atomic_fetch_add_explicit(&s_sink.requests, 1, memory_order_relaxed);
    if (!had_body)
        atomic_fetch_add_explicit(&s_sink.empty, 1, memory_order_relaxed);
    const char *tenant = NULL;
    size_t tenant_len = 0;
    if (strcmp(method, MHD_HTTP_METHOD_POST) == 0 &&
        strncmp(url, S_PATH_PREFIX, sizeof S_PATH_PREFIX - 1) == 0) {
        tenant = url + sizeof S_PATH_PREFIX - 1;
        const char *end = strchr(tenant, '/');
        tenant_len = end ? (size_t)(end - tenant) : 0;
    }
    if (tenant_len == 0 || tenant_len >= S_TENANT_MAX) {
        atomic_fetch_add_explicit(&s_sink.bad, 1, memory_order_relaxed);
        tenant = "-";
        tenant_len = 1;
    }
    if (s_sink.require_signature) {
        const char *signature =
            MHD_lookup_connection_value(connection, MHD_HEADER_KIND, S_SIGNATURE_HEADER);
        if (!signature || strncmp(signature, S_SIGNATURE_PREFIX, sizeof S_SIGNATURE_PREFIX - 1) ||
            !signature[sizeof S_SIGNATURE_PREFIX - 1])
            atomic_fetch_add_explicit(&s_sink.unsigned_, 1, memory_order_relaxed);
    }
    if (s_sink.log_fd < 0)
        return;
    const char *id = MHD_lookup_connection_value(connection, MHD_HEADER_KIND, S_ID_HEADER);
    long long message = 0;
    if (id && strncmp(id, S_ID_PREFIX, sizeof S_ID_PREFIX - 1) == 0)
        message = strtoll(id + sizeof S_ID_PREFIX - 1, NULL, 10);
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    char line[S_LINE_MAX];
    int len = snprintf(line, sizeof line, "%lld %lld %.*s 0\n",
                       (long long)now.tv_sec * S_NS_PER_S + now.tv_nsec, message, (int)tenant_len,
                       tenant);
    if (len > 0 && (size_t)len < sizeof line)
        s_log_line(line, (size_t)len);
}

static enum MHD_Result s_access(void *cls, struct MHD_Connection *connection, const char *url,
                                const char *method, const char *version, const char *upload_data,
                                size_t *upload_data_size, void **con_cls)
{
    (void)cls;
    (void)version;
    (void)upload_data;
    if (!*con_cls) {
        //  The headers: the body, if any, comes in the next calls
        *con_cls = &s_started;
        return MHD_YES;
    }
    if (*upload_data_size) {
        *upload_data_size = 0; //  Dropped
        *con_cls = &s_had_body;
        return MHD_YES;
    }
    s_received(connection, url, method, *con_cls == &s_had_body);
    return MHD_queue_response(connection, MHD_HTTP_OK, s_sink.response);
}

//  A connection opened (or closed): counted.
static void s_connection(void *cls, struct MHD_Connection *connection, void **socket_context,
                         enum MHD_ConnectionNotificationCode code)
{
    (void)cls;
    (void)connection;
    (void)socket_context;
    if (code == MHD_CONNECTION_NOTIFY_STARTED)
        atomic_fetch_add_explicit(&s_sink.connections, 1, memory_order_relaxed);
}

static void s_usage(FILE *out)
{
    fprintf(out,
            "usage: " S_PROGRAM " --port PORT [--threads N] [--log PATH] [--require-signature]\n"
            "  --port PORT          listen on 127.0.0.1:PORT\n"
            "  --threads N          libmicrohttpd's epoll threads (default %d, at most %d)\n"
            "  --log PATH           one line per request: <unix ns> <message id> <tenant> 0\n"
            "  --require-signature  count the requests without a webhook-signature v1,...\n"
            "Answers every request 200 with an empty body; on SIGTERM or SIGINT prints\n"
            "\"sink: done: requests N unsigned N empty N bad N connections N\" and exits 0.\n",
            S_THREADS_DEFAULT, S_THREADS_MAX);
}

int main(int argc, char **argv)
{
    long port = -1, threads = S_THREADS_DEFAULT;
    const char *log = NULL;
    for (int i = 1; i < argc; i++) {
        const char *value = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        if (strcmp(argv[i], "--require-signature") == 0) {
            s_sink.require_signature = true;
            continue;
        }
        if (strcmp(argv[i], "--help") == 0) {
            s_usage(stdout);
            return 0;
        }
        if (!value) {
            s_usage(stderr);
            return 2;
        }
        if (strcmp(argv[i], "--port") == 0)
            port = strtol(value, &end, 10);
        else if (strcmp(argv[i], "--threads") == 0)
            threads = strtol(value, &end, 10);
        else if (strcmp(argv[i], "--log") == 0)
            log = value;
        else {
            s_usage(stderr);
            return 2;
        }
        if (end && *end) {
            s_usage(stderr);
            return 2;
        }
        i++;
    }
    if (port <= 0 || port > 65535 || threads < 1 || threads > S_THREADS_MAX) {
        s_usage(stderr);
        return 2;
    }
    if (log) {
        s_sink.log_fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
        s_sink.buffer = malloc(S_LOG_BUFFER);
        if (s_sink.log_fd < 0 || !s_sink.buffer) {
            fprintf(stderr, S_PROGRAM ": could not open %s: %s\n", log, strerror(errno));
            return 1;
        }
    }
    //  The signals are taken here, by sigwait: libmicrohttpd's threads,
    //  started after, inherit the mask and never see them
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGTERM);
    sigaddset(&signals, SIGINT);
    pthread_sigmask(SIG_BLOCK, &signals, NULL);
    signal(SIGPIPE, SIG_IGN);

    s_sink.response = MHD_create_response_from_buffer(0, "", MHD_RESPMEM_PERSISTENT);
    struct sockaddr_in addr = {.sin_family = AF_INET,
                               .sin_port = htons((uint16_t)port),
                               .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    struct MHD_Daemon *daemon =
        s_sink.response
            ? MHD_start_daemon(
                  MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG, (uint16_t)port, NULL, NULL,
                  s_access, NULL, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
                  MHD_OPTION_THREAD_POOL_SIZE, (unsigned)threads, MHD_OPTION_CONNECTION_LIMIT,
                  (unsigned)S_CONNECTIONS_MAX, MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned)S_BACKLOG,
                  MHD_OPTION_NOTIFY_CONNECTION, s_connection, NULL, MHD_OPTION_END)
            : NULL;
    if (!daemon) {
        fprintf(stderr, S_PROGRAM ": could not listen on 127.0.0.1:%ld\n", port);
        return 1;
    }
    printf("sink: listening on 127.0.0.1:%ld with %ld threads%s%s\n", port, threads,
           s_sink.require_signature ? ", webhook-signature required" : "", log ? ", logging" : "");
    fflush(stdout);
    int sig = 0;
    while (sigwait(&signals, &sig) != 0)
        ;
    MHD_stop_daemon(daemon);
    MHD_destroy_response(s_sink.response);
    int rc = 0;
    if (s_sink.log_fd >= 0) {
        s_log_flush();
        rc = s_sink.log_failed || close(s_sink.log_fd) ? 1 : 0;
        free(s_sink.buffer);
    }
    printf("sink: done: requests %llu unsigned %llu empty %llu bad %llu connections %llu\n",
           (unsigned long long)atomic_load(&s_sink.requests),
           (unsigned long long)atomic_load(&s_sink.unsigned_),
           (unsigned long long)atomic_load(&s_sink.empty),
           (unsigned long long)atomic_load(&s_sink.bad),
           (unsigned long long)atomic_load(&s_sink.connections));
    fflush(stdout);
    return rc;
}
