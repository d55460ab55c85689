/*  fq_bench_pipeline.c — the whole pipeline, from outside: fairqd and
    fairq-sender as they run in production, measured end to end.

    A benchmark, not a test: it measures and prints, and exits 0 whatever
    the figures say (non-zero only when something fails: a query, a child
    that will not start, dies or ends with a non-zero status, a load that
    stalls; a failed run is reported and the next one tried). It runs
    the real binaries (the paths built with it; FQ_FAIRQD and FQ_SENDER
    override them) against the PG* environment:

        pg_virtualenv -t -v 15 build/release/tests/bench/fq_bench_pipeline

    Each run starts fairqd on a database of its own (fairqd applies the
    migrations) and S fairq-sender processes with the null transport and
    concurrency C, each writing its deliveries to a file (--file: one line
    "<unix ns> <message id> <tenant> <request id>" per message). Children
    write their logs to files in a directory printed at the start, and are
    killed on every way out (SIGKILL from the kernel if this program dies:
    PR_SET_PDEATHSIG). One run measures

      1. throughput: T tenants of equal weight each submit one request of
         N / T recipients with fairq.submit_json, back to back on one
         connection; the clock runs from the first submit until the sum of
         fairq.requests.sent over those requests is N (polled every
         S_POLL_MS), so it holds submitting, splitting, scheduling,
         rendering, the senders and the persisted acks. Beside it, in the
         same database: the raw floor, the same N rows COPYed into a bare
         table like fairq.messages (LIKE ... INCLUDING ALL, its fillfactor)
         in chunks of fairq.chunk_size() rows per transaction, then
         updated as the store acks them (status, try_count,
         last_attempt_at, updated_at) in batches of ack_batch rows per
         transaction, in the order a fair dispatcher acks them (one row of
         each tenant in turn); floor = N / (COPY time + UPDATE time);
      2. new-tenant wait: P new tenants each submit a one-recipient
         request, spread over the whole load (probe k once 2 % + 93 % k / P
         of it is delivered, and at least S_PROBE_GAP_MS after the previous
         one's submit, acked or not); the wait is
         from the submit's return (its commit) to the delivery line of the
         null transport's log (CLOCK_REALTIME on both sides), or, if the
         senders wrote no log, to when the benchmark saw the request's
         sent counter at 1 (an upper bound: the ack batch and the poll);
      3. fairness: Jain's index, (sum x)^2 / (k sum x^2), of k tenants'
         shares x in each window of S_WINDOW consecutive deliveries (the
         logs merged in time order, probes left out): over all T tenants
         while every one is backlogged, from the last tenant's first
         delivery to the first tenant's last one; and, as that span is
         mostly empty (submitted back to back, the first tenants are done
         before the last are split: fairqd is work-conserving), over the
         tenants backlogged through each window (delivered to before it
         and after it). Without logs, the windows are whole ack batches
         (fairq.messages.updated_at) adding up to S_WINDOW or more;
      4. fairness with every tenant backlogged (the target), by
         construction: a fresh fairqd with no sender, the T tenants each
         submit one request of F / T recipients; once every one is split
         (fairq.requests.split = total), the senders start as in the load
         and drain them; Jain's index over all T tenants in each window of
         S_WINDOW deliveries from the first delivery to the first tenant's
         last one, while all are still backlogged;
      5. memory: a fresh fairqd with no sender, R requests of a few
         recipients each from S_MEMORY_TENANTS tenants; once every one is
         split (fairq.requests.split = total) and S_LOADED_POLLS poll
         intervals later, fairqd's VmRSS and VmHWM (/proc/PID/status).

    While the load runs it also records where the CPU went (/proc: fairqd
    and its busiest threads, the senders, the cluster's postgres
    processes, everything else) and which statements the database was
    running (pg_stat_activity, sampled every S_ACTIVITY_MS), so that a slow
    figure says where the time goes. The children run through links named
    S_FAIRQD_LINK and S_SENDER_LINK, out of reach of a `pkill fairqd` by
    someone else on the machine. A load that stops making progress for
    S_STALL_MS is reported as stalled (its other figures still count) and
    fails the benchmark. The pipeline and its floor alternate which goes first;
    a warm-up floor, not counted, takes the new cluster's first-use costs
    (WAL segments created). The table gives the best, the median and the
    worst run (best: the higher rate or index, the lower wait or memory)
    and judges the targets on the worst: a target holds in every run.

    With --channel http the requests are webhooks instead of mail: each
    of the load's, the probes' and the fairness phase's requests has
    channel http, a POST to S_HTTP_URL (a local sink, fq_bench_sink.c: a
    libmicrohttpd server answering 200 with an empty body, a child
    started with each phase's senders and stopped after them), a small
    JSON body template (S_HTTP_BODY) and a signing secret (S_HTTP_SECRET:
    every message is signed, so the HMAC is in the figures); the senders
    serve --channels http (libcurl, one handle per worker, its
    connections kept alive). The sink logs each request it receives in
    the form of the null transport's delivery log (its time, the message
    id of its webhook-id header, the tenant of its path), which stands in
    for the senders' logs (probes' waits, fairness), and counts the ones
    without a webhook-signature (a run with any fails). Its CPU is a
    group of its own. Each run also measures the same load with the null
    transport (mail, as without the option) in a database of its own, the
    two alternating which goes first, so that each http figure has the
    null one of the same run beside it; the floor is measured once a run,
    beside the http load. The memory test submits http requests.

    Usage: fq_bench_pipeline [--messages N] [--tenants T] [--senders S]
                             [--concurrency C] [--fairness-messages F]
                             [--runs R] [--quick] [--channel email|http]
                             [--sink-threads N]
*/
//  libpq first: fq_bench_util.h then offers its PostgreSQL helpers
#include <libpq-fe.h>
#include "fq_bench_fifo.h"
#include "fq_bench_util.h"
#include "fq_test_db.h"
#include <arpa/inet.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define S_PROGRAM "fq_bench_pipeline"

//  A macro's value as a string literal
#define S_STR_(x) #x
#define S_STR(x)  S_STR_(x)

#ifndef FQ_FAIRQD_PATH
#define FQ_FAIRQD_PATH "fairqd"
#endif
#ifndef FQ_SENDER_PATH
#define FQ_SENDER_PATH "fairq-sender"
#endif
#ifndef FQ_SINK_PATH
#define FQ_SINK_PATH "fq_bench_sink"
#endif

//  Defaults: a million messages from a hundred tenants of 10,000
//  recipients each (one chunk each, fairq.chunk_size()), which drains for
//  long enough that the start and the end vanish into the total. Two
//  senders of 64 each: more credit than the scheduler needs to keep every
//  tenant's turn filled (the credit bound is what makes it fair,
//  docs/fairness.md), few enough processes for a 2-core machine.
#define S_DEFAULT_MESSAGES    1000000
#define S_DEFAULT_TENANTS     100
#define S_DEFAULT_SENDERS     2
#define S_DEFAULT_CONCURRENCY 64
#define S_DEFAULT_RUNS        3
#define S_DEFAULT_PROBES      60
#define S_DEFAULT_REQUESTS    10000 //  Active requests of the memory test

//  The fairness phase's backlog: this many recipients per tenant, 200,000
//  messages at a hundred tenants, 2,000 windows of S_WINDOW of which most
//  see every tenant backlogged; a few seconds to drain on a 2-core machine.
#define S_DEFAULT_FAIRNESS_RECIPIENTS 2000

//  --quick: a smoke run, for sanitizer builds, not for figures.
#define S_QUICK_MESSAGES            20000
#define S_QUICK_TENANTS             20
#define S_QUICK_PROBES              5
#define S_QUICK_REQUESTS            1000
#define S_QUICK_FAIRNESS_RECIPIENTS 500

//  Upper bounds of the options. One request's recipients go to
//  fairq.submit_json as one value, kept below the 256 MB that the jsonb
//  form (fairq.submit) allows (about 90 bytes each here); a sender's concurrency is its workers
//  (FQ_SENDER_WORKERS).
#define S_MAX_MESSAGES    10000000
#define S_MAX_PER_REQUEST 2000000
#define S_MAX_TENANTS     10000
#define S_MAX_SENDERS     16
#define S_MAX_CONCURRENCY 1000
//  --channel http: the sink's libmicrohttpd threads (--sink-threads)
#define S_MAX_SINK_THREADS 64

//  The targets fairq is held to (judged on the worst run: each holds in every run).
#define S_TARGET_RATE           50000.0 //  msgs/s, first submit to last ack
#define S_TARGET_FLOOR_FRACTION 0.7     //  pipeline rate / raw floor rate, in one run
#define S_TARGET_WAIT_P99_MS    50.0    //  A new tenant's first message, submit to delivery
#define S_TARGET_WAIT_MAX_MS    100.0
#define S_TARGET_PROBES         50    //  New tenants probed in one run
#define S_TARGET_JAIN           0.99  //  The least fair window
#define S_TARGET_RSS_MB         100.0 //  fairqd with S_DEFAULT_REQUESTS active

//  fairqd's settings that the benchmark depends on, passed explicitly
//  (they are fairqd's defaults, fq_fairqd_keys.h): the slow poll, which the
//  memory test waits out, and the ack batch, which the floor copies.
#define S_FAIRQD_POLL_MS   1000
#define S_FAIRQD_ACK_BATCH 500

//  How the benchmark watches. The load is polled every S_POLL_MS (the
//  throughput's resolution: 20 ms of a run of seconds); while a probe is
//  out and no delivery is logged, every S_PROBE_POLL_MS, so that the
//  fallback wait is close. With delivery logs the probes' waits come
//  from them, and closer polling would only take the machine's CPU from
//  the pipeline.
#define S_POLL_MS       20
#define S_PROBE_POLL_MS 2

//  The probes are spread over the whole load: probe k of P goes out once
//  S_PROBE_FROM_FRACTION + k / P of the span up to S_PROBE_TO_FRACTION is
//  delivered (from the start, while campaigns are still being split, to
//  near the end), at least a gap after the previous one's submit. Not
//  after its ack: an ack batch is written a few hundred ms after its
//  delivery under this load, and waiting for it left runs short of
//  probes (29 to 60 of 60). A probe waits tens of ms, a gap is longer:
//  they seldom overlap, as new tenants arriving on their own would.
#define S_PROBE_FROM_FRACTION 0.02
#define S_PROBE_TO_FRACTION   0.95
#define S_PROBE_GAP_MS        100
#define S_PROBE_TIMEOUT_MS    30000 //  A probe left out after the load ended
#define S_PROBES_MAX          1000  //  Most probes one run measures

//  The naive FIFO queue beside the floor (fq_bench_fifo.h): workers, as
//  many as the senders' connections a queue of that kind would use, each
//  claiming an ack batch at a time; its newcomer comes once a fifth of the
//  rows is done, and waits behind the other four fifths.
#define S_FIFO_WORKERS     4
#define S_FIFO_NEWCOMER_AT 0.2
#define S_PROBE_NAMED_MS   50.0 //  A probe that waited longer is named in the report

//  What the database is doing is sampled every S_ACTIVITY_MS during the
//  load: each statement by its first S_ACTIVITY_LABEL - 1 characters, the
//  S_ACTIVITY_SHOWN most seen printed.
#define S_ACTIVITY_MS    100
#define S_ACTIVITY_LABEL 48
#define S_ACTIVITY_KINDS 32
#define S_ACTIVITY_SHOWN 6

//  Deliveries per fairness window: ten per tenant at a hundred tenants.
#define S_WINDOW 1000

//  Memory test: requests of a few recipients from this many tenants,
//  submitted in statements of S_SUBMIT_BATCH requests; RSS is read this
//  many poll intervals after the last is split (the scheduler loads open
//  requests on its poll).
#define S_MEMORY_TENANTS    100
#define S_MEMORY_RECIPIENTS 3
#define S_SUBMIT_BATCH      100
#define S_LOADED_POLLS      3

//  Patience. fairqd drains in-flight work on SIGTERM for up to its
//  drain_timeout_ms (10 s by default), so a stop waits a little longer.
#define S_READY_TIMEOUT_MS 60000
#define S_STOP_TIMEOUT_MS  20000
#define S_STALL_MS         30000  //  No ack for this long: the pipeline is stuck
#define S_SPLIT_TIMEOUT_MS 600000 //  The memory test's splits
#define S_WAIT_STEP_MS     20     //  Between two looks at a log or a child

#define S_NS_PER_MS 1000000u
#define S_US_PER_MS 1000u
#define S_KB_PER_MB 1024.0

//  Paths, log lines, names
#define S_DIR_SIZE      128 //  The logs' directory, /tmp/fq_bench_pipeline.XXXXXX
#define S_PATH_SIZE     (S_DIR_SIZE + 64)
#define S_LOG_READ_MAX  (1024 * 1024) //  Of a child's log, searched for a line
#define S_PROCS_MAX     4096          //  Processes followed for CPU
#define S_THREADS_MAX   256           //  fairqd threads followed for CPU
#define S_PG_NAMES_MAX  256           //  postgres processes named (pg_stat_activity)
#define S_TOP_SESSIONS  6             //  postgres's busiest kinds of process shown
#define S_TOP_THREADS   4             //  fairqd's busiest threads shown
#define S_DATABASE_SIZE 64

//  The names the children run under (links in the logs' directory)
#define S_FAIRQD_LINK "fqbench-daemon"
#define S_SENDER_LINK "fqbench-sender"
#define S_SINK_LINK   "fqbench-sink"

//  What fairqd and the senders say once they can work (fairqd.c,
//  fq_sender.c)
#define S_FAIRQD_READY   "INFO:  ready"
#define S_SENDER_WELCOME "sender: welcomed by"
//  And the sink (fq_bench_sink.c): once it listens, and its counts at its end
#define S_SINK_READY "sink: listening on"
#define S_SINK_DONE  "sink: done: requests %llu unsigned %llu empty %llu bad %llu connections %llu"

//  The requests: templates with the fields every recipient has
#define S_TENANT_PREFIX "bench-"
#define S_PROBE_PREFIX  "probe-"
#define S_MEMORY_PREFIX "memory-"
#define S_FROM          "bench@example.com"
#define S_SUBJECT       "Hello {{name}}"
#define S_BODY          "Your code is {{code}}"

//  Recipient i of a request, as submitted (JSON) and as a COPY row of the
//  floor's table (its fields the JSON text the splitter writes); they are
//  spread over S_DOMAINS domains. Every tenant mails the same list.
#define S_RECIPIENT_JSON                                                                           \
    "{\"to\":\"user%llu@example%llu.com\",\"fields\":{\"name\":\"User %llu\",\"code\":\"%llu\"}}"
#define S_RECIPIENT_ROW                                                                            \
    "%lld\t%lld\tuser%llu@example%llu.com\t{\"name\":\"User %llu\",\"code\":\"%llu\"}\n"
#define S_DOMAINS 100

#define S_SUBMIT_SQL "SELECT fairq.submit_json($1, $2, $3, $4, $5::json)"

//  --channel http: the same recipients, each one webhook to the sink,
//  POST S_HTTP_URL (the tenant in its path, for the sink's log) with
//  S_HTTP_BODY, signed with S_HTTP_SECRET (Standard Webhooks: fairqd's
//  dispatcher computes an HMAC-SHA256 per message). Submitted with the
//  defaults of fairq.submit_json (send now, priority 0, 5 attempts).
#define S_HTTP_URL             "http://127.0.0.1:%d/hook/%s/{{code}}"
#define S_HTTP_BODY            "{\"name\": \"{{name}}\", \"code\": \"{{code}}\"}"
#define S_HTTP_SECRET          "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
#define S_HTTP_MEMORY_PORT     9 //  The memory test's requests are never sent
#define S_DEFAULT_SINK_THREADS 2
#define S_HTTP_SUBMIT_SQL                                                                          \
    "SELECT k.request_id FROM fairq.submit_keyed($1, NULL, NULL, NULL, $2::json, false, now(),"    \
    " 0, 5, NULL, NULL, NULL, NULL, NULL, channel => 'http', http_method => 'POST',"               \
    " http_url => $3, http_body => $4, http_body_format => 'json', signing_secret => $5) k"
//  The load's progress and the probe's: one look at the requests' counters
#define S_PROGRESS_SQL                                                                             \
    "SELECT coalesce(sum(sent) FILTER (WHERE id = ANY($1::bigint[])), 0),"                         \
    "       coalesce(sum(sent) FILTER (WHERE id = $2::bigint), 0) FROM fairq.requests"

//  The raw floor: the store's statements without the checks of status and
//  the counters of the request (as in fq_bench_store)
#define S_STORE_TABLE  "fairq.messages"
#define S_RAW_TABLE    "bench_raw"
#define S_RAW_COPY_SQL "COPY " S_RAW_TABLE " (request_id, tenant_id, recipient, fields) FROM STDIN"
#define S_RAW_ACK_SQL                                                                              \
    "UPDATE " S_RAW_TABLE " m SET status = 'sent', try_count = try_count + 1,"                     \
    " last_attempt_at = now(), next_attempt_at = NULL, updated_at = now()"                         \
    " FROM unnest($1::bigint[]) a(id) WHERE m.id = a.id"

static double s_ms(uint64_t ns)
{
    return (double)ns / S_NS_PER_MS;
}

static double s_seconds(uint64_t ns)
{
    return (double)ns / FQ_BENCH_NS_PER_S;
}

static int64_t s_real_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * FQ_BENCH_NS_PER_S + ts.tv_nsec;
}

static void s_sleep_ms(int ms)
{
    usleep((useconds_t)ms * S_US_PER_MS);
}

//  ---------------------------------------------------------------------
//  Children: fairqd and the senders

//  Every child alive, so that any way out kills them: the signal handler
//  and the atexit handler read this (a signal handler can reach nothing
//  else). 0 marks a free slot. fairqd, the senders, the sink.
#define S_CHILDREN_MAX (S_MAX_SENDERS + 2)
static volatile sig_atomic_t s_children[S_CHILDREN_MAX];

static void s_kill_children(void)
{
    for (int i = 0; i < S_CHILDREN_MAX; i++)
        if (s_children[i] > 0)
            kill((pid_t)s_children[i], SIGKILL);
}

static void s_on_signal(int sig)
{
    s_kill_children();
    signal(sig, SIG_DFL);
    raise(sig);
}

typedef struct {
    char name[32]; //  "fairqd", "fairq-sender 1"
    char log[S_PATH_SIZE];
    pid_t pid;  //  0 when none is running
    int slot;   //  In s_children
    int status; //  Its wait status, once it ended
    bool ended;
} s_proc_t;

//  Starts program with argv (NULL-terminated, argv[0] the program), its
//  stdout and stderr to the file log. Returns 0 or -1.
static int s_proc_start(s_proc_t *self, const char *name, const char *program, char *const argv[],
                        const char *log)
{
    *self = (s_proc_t){.slot = -1};
    snprintf(self->name, sizeof self->name, "%s", name);
    snprintf(self->log, sizeof self->log, "%s", log);
    for (int i = 0; i < S_CHILDREN_MAX && self->slot < 0; i++)
        if (s_children[i] == 0)
            self->slot = i;
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (self->slot < 0 || fd < 0) {
        fprintf(stderr, S_PROGRAM ": could not start %s: %s\n", name,
                fd < 0 ? strerror(errno) : "too many children");
        if (fd >= 0)
            close(fd);
        return -1;
    }
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) {
        //  Dies with the benchmark, however the benchmark ends
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(127);
        dup2(fd, STDOUT_FILENO);
        dup2(fd, STDERR_FILENO);
        execv(program, argv);
        dprintf(STDERR_FILENO, S_PROGRAM ": could not run %s: %s\n", program, strerror(errno));
        _exit(127);
    }
    int fork_errno = errno;
    close(fd);
    if (pid < 0) {
        fprintf(stderr, S_PROGRAM ": could not start %s: %s\n", name, strerror(fork_errno));
        return -1;
    }
    self->pid = pid;
    s_children[self->slot] = pid;
    return 0;
}

static void s_proc_reaped(s_proc_t *self, int status)
{
    self->status = status;
    self->ended = true;
    s_children[self->slot] = 0;
}

//  True while it runs; reaps it once it ended.
static bool s_proc_alive(s_proc_t *self)
{
    if (self->pid <= 0 || self->ended)
        return false;
    int status;
    if (waitpid(self->pid, &status, WNOHANG) == self->pid)
        s_proc_reaped(self, status);
    return !self->ended;
}

//  How it ended, in words, into out.
static const char *s_proc_how(const s_proc_t *self, char *out, size_t size)
{
    if (WIFEXITED(self->status))
        snprintf(out, size, "exit status %d", WEXITSTATUS(self->status));
    else if (WIFSIGNALED(self->status))
        snprintf(out, size, "killed by signal %d", WTERMSIG(self->status));
    else
        snprintf(out, size, "wait status %d", self->status);
    return out;
}

//  Asks it to stop (SIGTERM) and waits up to timeout_ms, then kills it.
//  Returns 0 if it stopped by itself with exit status 0, else -1 (said).
static int s_proc_stop(s_proc_t *self, int timeout_ms)
{
    if (self->pid <= 0)
        return 0;
    if (!self->ended)
        kill(self->pid, SIGTERM);
    uint64_t deadline = fq_bench_now_ns() + (uint64_t)timeout_ms * S_NS_PER_MS;
    while (s_proc_alive(self) && fq_bench_now_ns() < deadline)
        s_sleep_ms(S_WAIT_STEP_MS);
    bool killed = false;
    if (!self->ended) {
        kill(self->pid, SIGKILL);
        int status;
        if (waitpid(self->pid, &status, 0) == self->pid)
            s_proc_reaped(self, status);
        killed = true;
    }
    self->pid = 0;
    bool clean = !killed && WIFEXITED(self->status) && WEXITSTATUS(self->status) == 0;
    if (!clean) {
        char how[64];
        fprintf(stderr, S_PROGRAM ": %s %s (log: %s)\n", self->name,
                killed ? "did not stop within the timeout and was killed"
                       : s_proc_how(self, how, sizeof how),
                self->log);
    }
    return clean ? 0 : -1;
}

static void s_proc_kill(s_proc_t *self)
{
    if (self->pid > 0 && !self->ended) {
        kill(self->pid, SIGKILL);
        int status;
        if (waitpid(self->pid, &status, 0) == self->pid)
            s_proc_reaped(self, status);
    }
    self->pid = 0;
}

//  Waits until the child's log holds needle; returns 0, or -1 (said) when
//  it ended first or timeout_ms passed.
static int s_proc_wait_log(s_proc_t *self, const char *needle, int timeout_ms)
{
    static char text[S_LOG_READ_MAX + 1];
    uint64_t deadline = fq_bench_now_ns() + (uint64_t)timeout_ms * S_NS_PER_MS;
    for (;;) {
        FILE *file = fopen(self->log, "r");
        size_t len = file ? fread(text, 1, S_LOG_READ_MAX, file) : 0;
        if (file)
            fclose(file);
        text[len] = 0;
        if (strstr(text, needle))
            return 0;
        if (!s_proc_alive(self)) {
            char how[64];
            fprintf(stderr, S_PROGRAM ": %s ended (%s) before it logged \"%s\" (log: %s)\n",
                    self->name, s_proc_how(self, how, sizeof how), needle, self->log);
            return -1;
        }
        if (fq_bench_now_ns() > deadline) {
            fprintf(stderr, S_PROGRAM ": %s did not log \"%s\" within %d ms (log: %s)\n",
                    self->name, needle, timeout_ms, self->log);
            return -1;
        }
        s_sleep_ms(S_WAIT_STEP_MS);
    }
}

//  True if the child's log holds needle.
static bool s_log_contains(const s_proc_t *self, const char *needle)
{
    FILE *file = fopen(self->log, "r");
    char line[1024];
    bool found = false;
    while (file && !found && fgets(line, sizeof line, file))
        found = strstr(line, needle) != NULL;
    if (file)
        fclose(file);
    return found;
}

//  Prints the lines of the child's log that report errors (up to a few),
//  so that a failure says what the child said about it.
#define S_ERRORS_SHOWN 10
static void s_proc_print_errors(const s_proc_t *self)
{
    FILE *file = fopen(self->log, "r");
    char line[1024];
    int shown = 0;
    while (file && fgets(line, sizeof line, file) && shown < S_ERRORS_SHOWN)
        if (strstr(line, "ERROR:") || strstr(line, "FATAL:") || strstr(line, "PANIC:")) {
            fprintf(stderr, "  %s: %s", self->name, line);
            shown++;
        }
    if (file)
        fclose(file);
}

//  A TCP port on the loopback that is free now (the kernel's choice).
static int s_free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof addr;
    int port = -1;
    if (fd >= 0 && bind(fd, (struct sockaddr *)&addr, sizeof addr) == 0 &&
        getsockname(fd, (struct sockaddr *)&addr, &len) == 0)
        port = ntohs(addr.sin_port);
    if (fd >= 0)
        close(fd);
    if (port < 0)
        fprintf(stderr, S_PROGRAM ": could not find a free port: %s\n", strerror(errno));
    return port;
}

//  ---------------------------------------------------------------------
//  /proc: memory and CPU

//  VmRSS and VmHWM of pid in MB; 0 and -1 (said) if unreadable.
static int s_read_rss(pid_t pid, double *rss_mb, double *hwm_mb)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *file = fopen(path, "r");
    if (!file) {
        fprintf(stderr, S_PROGRAM ": could not read %s: %s\n", path, strerror(errno));
        return -1;
    }
    long rss = -1, hwm = -1;
    while (fgets(line, sizeof line, file)) {
        sscanf(line, "VmRSS: %ld kB", &rss);
        sscanf(line, "VmHWM: %ld kB", &hwm);
    }
    fclose(file);
    if (rss < 0 || hwm < 0) {
        fprintf(stderr, S_PROGRAM ": no VmRSS or VmHWM in %s\n", path);
        return -1;
    }
    *rss_mb = (double)rss / S_KB_PER_MB;
    *hwm_mb = (double)hwm / S_KB_PER_MB;
    return 0;
}

//  Where CPU time goes while the load runs, in clock ticks.
//  The sink's (--channel http) is shown only when one ran.
enum {
    S_CPU_FAIRQD,
    S_CPU_SENDERS,
    S_CPU_SINK,
    S_CPU_POSTGRES,
    S_CPU_BENCH,
    S_CPU_OTHER,
    S_CPU_GROUPS
};
static const char *const s_cpu_names[S_CPU_GROUPS] = {"fairqd",   "senders",   "sink",
                                                      "postgres", "benchmark", "other"};

//  The same in numbers: cores of each group, and the machine's busy share
//  (NAN until measured).
typedef struct {
    double cores[S_CPU_GROUPS];
    double busy;
    bool sink; //  A sink ran
} s_cpu_figures_t;

//  One process's (or thread's) CPU time so far.
typedef struct {
    int id;    //  pid or tid
    int group; //  S_CPU_*
    uint64_t ticks;
    char name[16]; //  A fairqd thread's: its actor (fq_actor.c names them)
} s_ticks_t;

//  Whom a postgres process serves: fairqd's sessions name their actor
//  ("fairq store" is the store writer's), the others their backend type.
typedef struct {
    int pid;
    char name[32];
} s_pg_name_t;

typedef struct {
    s_ticks_t procs[S_PROCS_MAX];
    size_t nprocs;
    s_pg_name_t pg_names[S_PG_NAMES_MAX]; //  Read after the snapshot (s_pg_names)
    size_t npg_names;
    s_ticks_t threads[S_THREADS_MAX]; //  fairqd's
    size_t nthreads;
    uint64_t machine_busy, machine_all; //  /proc/stat, every CPU
    bool sink;                          //  A sink was followed
} s_cpu_t;

//  utime + stime and the parent of the process (or thread) whose stat file
//  is path; its command into comm. Returns 0 or -1.
static int s_read_stat(const char *path, char *comm, size_t comm_size, int *ppid, uint64_t *ticks)
{
    char text[1024];
    FILE *file = fopen(path, "r");
    size_t len = file ? fread(text, 1, sizeof text - 1, file) : 0;
    if (file)
        fclose(file);
    text[len] = 0;
    //  "pid (comm) state ppid ...": the command may hold blanks and ')'
    char *open = strchr(text, '('), *close = strrchr(text, ')');
    if (!open || !close || close < open)
        return -1;
    snprintf(comm, comm_size, "%.*s", (int)(close - open - 1), open + 1);
    unsigned long utime, stime;
    if (sscanf(close + 1, " %*c %d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", ppid, &utime,
               &stime) != 3)
        return -1;
    *ticks = (uint64_t)utime + stime;
    return 0;
}

//  Takes a look at every process: the children by pid (sink: 0 for
//  none), the cluster's postgres processes by their postmaster, this
//  program, the rest.
static void s_cpu_snapshot(s_cpu_t *self, pid_t fairqd, const s_proc_t *senders, int nsenders,
                           pid_t sink, int postmaster)
{
    self->nprocs = self->nthreads = self->npg_names = 0;
    self->sink = sink > 0;
    DIR *proc = opendir("/proc");
    struct dirent *entry;
    char path[64 + sizeof entry->d_name], comm[64];
    while (proc && (entry = readdir(proc)) && self->nprocs < S_PROCS_MAX) {
        if (!isdigit((unsigned char)entry->d_name[0]))
            continue;
        int pid = atoi(entry->d_name), ppid;
        uint64_t ticks;
        snprintf(path, sizeof path, "/proc/%s/stat", entry->d_name);
        if (s_read_stat(path, comm, sizeof comm, &ppid, &ticks))
            continue;
        int group = S_CPU_OTHER;
        if (pid == fairqd)
            group = S_CPU_FAIRQD;
        else if (pid == getpid())
            group = S_CPU_BENCH;
        else if (postmaster > 0 && strcmp(comm, "postgres") == 0 &&
                 (pid == postmaster || ppid == postmaster))
            group = S_CPU_POSTGRES;
        for (int i = 0; i < nsenders; i++)
            if (pid == senders[i].pid)
                group = S_CPU_SENDERS;
        if (sink > 0 && pid == sink)
            group = S_CPU_SINK;
        self->procs[self->nprocs++] = (s_ticks_t){pid, group, ticks, ""};
    }
    if (proc)
        closedir(proc);
    //  fairqd's threads, one by one
    snprintf(path, sizeof path, "/proc/%d/task", (int)fairqd);
    DIR *tasks = opendir(path);
    while (tasks && (entry = readdir(tasks)) && self->nthreads < S_THREADS_MAX) {
        if (!isdigit((unsigned char)entry->d_name[0]))
            continue;
        char stat[sizeof path + sizeof entry->d_name + 8];
        int ppid;
        uint64_t ticks;
        snprintf(stat, sizeof stat, "%s/%s/stat", path, entry->d_name);
        if (s_read_stat(stat, comm, sizeof comm, &ppid, &ticks) == 0) {
            s_ticks_t *thread = &self->threads[self->nthreads++];
            *thread = (s_ticks_t){atoi(entry->d_name), S_CPU_FAIRQD, ticks, ""};
            snprintf(thread->name, sizeof thread->name, "%.15s", comm);
        }
    }
    if (tasks)
        closedir(tasks);
    //  "cpu user nice system idle iowait irq softirq steal ..."
    FILE *file = fopen("/proc/stat", "r");
    unsigned long long v[8] = {0};
    self->machine_busy = self->machine_all = 0;
    if (file && fscanf(file, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
                       &v[3], &v[4], &v[5], &v[6], &v[7]) == 8) {
        self->machine_busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
        self->machine_all = self->machine_busy + v[3] + v[4];
    }
    if (file)
        fclose(file);
}

//  What each of after's entries used since before: all it has if it is new
//  (it started in between); one that ended in between is not counted.
static void s_ticks_used(const s_ticks_t *before, size_t nbefore, const s_ticks_t *after,
                         size_t nafter, s_ticks_t *used)
{
    for (size_t i = 0; i < nafter; i++) {
        uint64_t start = 0;
        for (size_t j = 0; j < nbefore; j++)
            if (before[j].id == after[i].id && before[j].ticks <= after[i].ticks)
                start = before[j].ticks;
        used[i] = after[i];
        used[i].ticks = after[i].ticks - start;
    }
}

static int s_ticks_compare(const void *a, const void *b)
{
    uint64_t x = ((const s_ticks_t *)a)->ticks, y = ((const s_ticks_t *)b)->ticks;
    return x > y ? -1 : x < y;
}

//  fairqd's busiest threads between before and after, as "name value, ..."
//  into out: ticks / tick with decimals places. Returns the length written.
static size_t s_threads_describe(const s_cpu_t *before, const s_cpu_t *after, double tick,
                                 int decimals, char *out, size_t size)
{
    static s_ticks_t used[S_THREADS_MAX];
    s_ticks_used(before->threads, before->nthreads, after->threads, after->nthreads, used);
    qsort(used, after->nthreads, sizeof *used, s_ticks_compare);
    size_t len = 0;
    out[0] = 0;
    for (size_t i = 0; i < after->nthreads && i < S_TOP_THREADS && len < size; i++)
        len += (size_t)snprintf(out + len, size - len, "%s%s %.*f", i ? ", " : "", used[i].name,
                                decimals, (double)used[i].ticks / tick);
    return len < size ? len : size - 1;
}

//  postgres's CPU between before and after by whom each process serves
//  (after's names; "ended" for one not named), the busiest first, in
//  cores, as " (store 0.45, splitter-1 0.30, ...)" into out. Returns the
//  length written.
static size_t s_pg_describe(const s_cpu_t *before, const s_cpu_t *after, double tick, char *out,
                            size_t size)
{
    static s_ticks_t used[S_PROCS_MAX];
    static s_ticks_t kinds[S_PG_NAMES_MAX + 1];
    size_t nkinds = 0;
    s_ticks_used(before->procs, before->nprocs, after->procs, after->nprocs, used);
    for (size_t i = 0; i < after->nprocs; i++) {
        if (used[i].group != S_CPU_POSTGRES)
            continue;
        const char *name = "ended";
        for (size_t k = 0; k < after->npg_names; k++)
            if (after->pg_names[k].pid == used[i].id)
                name = after->pg_names[k].name;
        size_t k = 0;
        while (k < nkinds && strcmp(kinds[k].name, name) != 0)
            k++;
        if (k == nkinds) {
            if (nkinds == S_PG_NAMES_MAX + 1)
                continue;
            kinds[nkinds] = (s_ticks_t){0, S_CPU_POSTGRES, 0, ""};
            snprintf(kinds[nkinds++].name, sizeof kinds[0].name, "%.15s", name);
        }
        kinds[k].ticks += used[i].ticks;
    }
    qsort(kinds, nkinds, sizeof *kinds, s_ticks_compare);
    size_t len = (size_t)snprintf(out, size, " (");
    for (size_t k = 0; k < nkinds && k < S_TOP_SESSIONS && len < size; k++)
        len += (size_t)snprintf(out + len, size - len, "%s%s %.2f", k ? ", " : "", kinds[k].name,
                                (double)kinds[k].ticks / tick);
    if (len < size)
        len += (size_t)snprintf(out + len, size - len, ")");
    return len < size ? len : size - 1;
}

//  The CPU used between before and after, in cores (1.00: one core busy
//  all the time), as one line of text into out, and in figures.
static void s_cpu_describe(const s_cpu_t *before, const s_cpu_t *after, double seconds, char *out,
                           size_t size, s_cpu_figures_t *figures)
{
    static s_ticks_t used[S_PROCS_MAX];
    double tick = (double)sysconf(_SC_CLK_TCK) * seconds;
    uint64_t group[S_CPU_GROUPS] = {0}, ours = 0;
    s_ticks_used(before->procs, before->nprocs, after->procs, after->nprocs, used);
    for (size_t i = 0; i < after->nprocs; i++)
        group[used[i].group] += used[i].ticks;
    //  The rest of the machine's busy time, rather than the sum of the
    //  other processes: many (builds, tests) start and end in between
    uint64_t busy = after->machine_busy - before->machine_busy;
    for (int g = 0; g < S_CPU_GROUPS; g++)
        ours += g == S_CPU_OTHER ? 0 : group[g];
    group[S_CPU_OTHER] = busy > ours ? busy - ours : 0;
    for (int g = 0; g < S_CPU_GROUPS; g++)
        figures->cores[g] = (double)group[g] / tick;
    figures->sink = after->sink;
    size_t len = 0;
    for (int g = 0; g < S_CPU_GROUPS && len < size; g++) {
        if (g == S_CPU_SINK && !after->sink)
            continue;
        len += (size_t)snprintf(out + len, size - len, "%s%s %.2f", g ? ", " : "", s_cpu_names[g],
                                (double)group[g] / tick);
        if (g == S_CPU_POSTGRES && after->npg_names > 0 && len < size)
            len += s_pg_describe(before, after, tick, out + len, size - len);
        if (g != S_CPU_FAIRQD || len >= size)
            continue;
        //  Its busiest threads: one near 1.00 is a bottleneck
        len += (size_t)snprintf(out + len, size - len, " (%zu threads, busiest ", after->nthreads);
        if (len < size)
            len += s_threads_describe(before, after, tick, 2, out + len, size - len);
        if (len < size)
            len += (size_t)snprintf(out + len, size - len, ")");
    }
    uint64_t all = after->machine_all - before->machine_all;
    figures->busy =
        all ? (double)(after->machine_busy - before->machine_busy) / (double)all : (double)NAN;
    if (all && len < size)
        snprintf(out + len, size - len, "; machine busy %.0f%% of %ld cores",
                 100.0 * (double)(after->machine_busy - before->machine_busy) / (double)all,
                 sysconf(_SC_NPROCESSORS_ONLN));
}

//  ---------------------------------------------------------------------
//  The benchmark

typedef struct {
    uint64_t messages;
    uint64_t tenants;
    uint64_t senders;
    uint64_t concurrency;
    int runs;
    int probes;
    uint64_t requests;          //  Active requests of the memory test
    uint64_t fairness_messages; //  The fairness phase's backlog, a multiple of tenants
    bool insecure;              //  The gateway without CURVE (production never runs so)
    bool scale, quick;          //  The cost curves instead of the runs; small counts
    const char *curve;          //  With scale: only this curve's points (NULL: all)
    bool http;                  //  --channel http: webhooks to a sink, beside the null load
    uint64_t sink_threads;      //  The sink's libmicrohttpd threads
} s_options_t;

//  A new tenant's one-recipient request, submitted while the load drains.
typedef struct {
    int64_t request_id;
    int64_t commit_real_ns; //  CLOCK_REALTIME when the submit returned
    uint64_t commit_ns;     //  The same on CLOCK_MONOTONIC
    uint64_t seen_ns;       //  When its sent counter was seen at 1; 0: not (yet)
    int64_t delivered_ns;   //  CLOCK_REALTIME of its delivery in a sender's log; 0: none
    double at;              //  The share of the load delivered when it was submitted
} s_probe_t;

//  One delivery from the senders' logs (or one ack from the database):
//  its time and the tenant's index.
typedef struct {
    int64_t ns;
    int64_t id; //  The message's (0 for an ack batch's)
    int32_t tenant;
} s_delivery_t;

//  Jain's index over windows of deliveries, and where they came from.
typedef struct {
    size_t windows;    //  Counted
    size_t deliveries; //  In them
    double min, median;
    uint64_t fewest, most; //  Tenants counted in one window
    int64_t worst_ns;      //  Where the least fair window starts
    uint64_t worst_k;      //  And its tenants
} s_fairness_t;

//  What the database was doing during the load: how often each statement
//  was seen running (pg_stat_activity, sampled), by its first words.
typedef struct {
    char label[S_ACTIVITY_LABEL];
    unsigned seen;
} s_statement_t;

typedef struct {
    s_statement_t statements[S_ACTIVITY_KINDS];
    size_t kinds;
    unsigned samples;
} s_activity_t;

//  What one run measured. NAN where nothing was measured.
typedef struct {
    double rate, floor; //  msgs/s
    double submit_s, load_s, copy_s, update_s;
    fq_bench_fifo_result_t fifo; //  The naive FIFO queue on the same rows
    bool stalled;                //  No ack for S_STALL_MS before the last
    uint64_t stalled_at;         //  Acks by then
    double stalled_rate;         //  msgs/s until then
    int probes_sent, probes_measured;
    double wait_p50, wait_p99, wait_max; //  ms
    char slowest[320];                   //  The slowest probes' waits, and when they came
    bool wait_from_log;
    uint64_t duplicates;               //  Deliveries of a message beyond its first
    s_fairness_t all;                  //  Every tenant, while all are backlogged
    s_fairness_t active;               //  The tenants backlogged at the time
    double last_start_s, first_done_s; //  The last tenant's first delivery, the first one's last
    int64_t start_real_ns;             //  The load's first submit, CLOCK_REALTIME
    //  The fairness phase: every tenant backlogged before the senders start
    s_fairness_t backlog;      //  Every tenant, from the first delivery to the first one done
    double backlog_split_s;    //  First submit until every request is split
    double backlog_drain_s;    //  Senders started until every message is acked
    int64_t backlog_start_ns;  //  The first delivery, CLOCK_REALTIME
    double backlog_last_start; //  s from it: the last tenant's first delivery
    double backlog_first_done; //  And the first tenant's last one
    uint64_t backlog_duplicates;
    bool backlog_from_log;
    double rss_mb, hwm_mb, idle_rss_mb, split_s;
    char cpu[512];
    double wal_bytes, wal_fpi; //  WAL written during the load, and its full-page images
    s_cpu_figures_t cpu_figures;
    s_activity_t activity;
    //  --channel http: what the sink counted during the load (S_SINK_DONE)
    bool http;
    unsigned long long sink_requests, sink_unsigned, sink_empty, sink_bad, sink_connections;
} s_run_t;

typedef struct {
    const char *fairqd; //  The programs
    const char *sender;
    const char *sink;              //  With --channel http
    char dir[S_DIR_SIZE];          //  Logs
    char fairqd_link[S_PATH_SIZE]; //  What runs: links to the programs in dir
    char sender_link[S_PATH_SIZE];
    char sink_link[S_PATH_SIZE];
    bool curve;                     //  The gateway with CURVE, as in production:
    char server_cert[S_PATH_SIZE];  //  fairqd's certificate,
    char allow_dir[S_PATH_SIZE];    //  the senders' public ones it lets in,
    char sender_certs[S_PATH_SIZE]; //  and theirs, with their secrets
    char database[S_DATABASE_SIZE];
    PGconn *conn; //  On database
    int postmaster;
    int chunk_size;            //  fairq.chunk_size()
    char *recipients;          //  One load request's recipients, JSON, built once
    char *fairness_recipients; //  One fairness request's, the same
    int64_t *requests;         //  The load's request ids, per tenant
    char *request_array;
    int64_t *raw_ids;   //  The floor's rows, in id order
    int64_t *raw_order; //  The same in the order they are acked
    s_probe_t *probes;
    s_delivery_t *deliveries;
    size_t ndeliveries, deliveries_capacity;
    s_proc_t fairqd_proc;
    s_proc_t senders[S_MAX_SENDERS];
    int nsenders; //  Started
    //  The phase under way sends http requests (--channel http) to the
    //  sink, on sink_port; the last sink stopped counted sink_counts
    bool http;
    s_proc_t sink_proc;
    int sink_port;
    unsigned long long sink_counts[5]; //  requests, unsigned, empty, bad, connections
    fq_bench_text_t text;
    bool child_failed; //  A child ended badly: the benchmark fails at the end
    bool warmed_up;    //  The method printed and the warm-up done
} s_bench_t;

static int s_exec(s_bench_t *self, const char *sql, const char *what)
{
    return fq_bench_exec(S_PROGRAM, self->conn, sql, what);
}

static int s_exec_params(s_bench_t *self, const char *sql, int nparams, const char *const *params,
                         const char *what)
{
    PGresult *res = PQexecParams(self->conn, sql, nparams, NULL, params, NULL, NULL, 0);
    if (fq_bench_check(S_PROGRAM, self->conn, res, PGRES_COMMAND_OK, what))
        return -1;
    PQclear(res);
    return 0;
}

static int s_value(s_bench_t *self, const char *sql, const char *param, char *out, size_t size,
                   const char *what)
{
    return fq_bench_value(S_PROGRAM, self->conn, sql, param, out, size, what);
}

static int s_tenant_name(char *out, size_t size, const char *prefix, uint64_t index)
{
    return snprintf(out, size, "%s%04llu", prefix, (unsigned long long)index);
}

//  One load request's recipients as a JSON array.
static char *s_recipients_json(uint64_t count)
{
    fq_bench_text_t json = {0};
    int rc = fq_bench_text_printf(&json, "[");
    for (uint64_t i = 0; i < count && rc == 0; i++)
        rc = fq_bench_text_printf(&json, i ? "," S_RECIPIENT_JSON : S_RECIPIENT_JSON,
                                  (unsigned long long)i, (unsigned long long)(i % S_DOMAINS),
                                  (unsigned long long)i, (unsigned long long)i);
    if (rc == 0)
        rc = fq_bench_text_printf(&json, "]");
    if (rc) {
        fq_bench_text_free(&json);
        return NULL;
    }
    return json.data;
}

//  Names the cluster's processes in cpu: fairqd's sessions by their actor,
//  this program's as "benchmark", any other by its backend type.
static void s_pg_names(s_bench_t *self, s_cpu_t *cpu)
{
    cpu->npg_names = 0;
    PGresult *res =
        PQexec(self->conn, "SELECT pid, CASE WHEN pid = pg_backend_pid() THEN 'benchmark'"
                           " WHEN application_name LIKE 'fairq %' THEN substr(application_name, 7)"
                           " ELSE backend_type END FROM pg_stat_activity");
    if (PQresultStatus(res) == PGRES_TUPLES_OK)
        for (int i = 0; i < PQntuples(res) && cpu->npg_names < S_PG_NAMES_MAX; i++) {
            s_pg_name_t *name = &cpu->pg_names[cpu->npg_names++];
            name->pid = atoi(PQgetvalue(res, i, 0));
            snprintf(name->name, sizeof name->name, "%s", PQgetvalue(res, i, 1));
        }
    PQclear(res);
}

//  Creates database name (the pid in it keeps it new) and connects to it.
static int s_database_open(s_bench_t *self, const char *name)
{
    char sql[128];
    snprintf(sql, sizeof sql, "CREATE DATABASE %s", name);
    if (fq_test_db_admin(sql))
        return -1;
    snprintf(self->database, sizeof self->database, "%s", name);
    char conninfo[S_DATABASE_SIZE + 16];
    snprintf(conninfo, sizeof conninfo, "dbname=%s", name);
    self->conn = PQconnectdb(conninfo);
    if (PQstatus(self->conn) != CONNECTION_OK) {
        fprintf(stderr, S_PROGRAM ": could not connect to database: %s",
                PQerrorMessage(self->conn));
        return -1;
    }
    return 0;
}

static void s_database_close(s_bench_t *self)
{
    if (self->conn)
        PQfinish(self->conn);
    self->conn = NULL;
    if (self->database[0]) {
        char sql[128];
        snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS %s WITH (FORCE)", self->database);
        fq_test_db_admin(sql);
    }
    self->database[0] = 0;
}

//  Starts fairqd on the open database with its gateway on port, and waits
//  until it is ready (its migrations applied).
static int s_fairqd_start(s_bench_t *self, const char *log, int port)
{
    char database[S_DATABASE_SIZE + 32], bind[64], poll[32], batch[32];
    char cert[S_PATH_SIZE + 32], allow[S_PATH_SIZE + 32];
    snprintf(database, sizeof database, "--database=dbname=%s", self->database);
    snprintf(bind, sizeof bind, "--gateway_bind=tcp://127.0.0.1:%d", port);
    snprintf(poll, sizeof poll, "--poll_ms=%d", S_FAIRQD_POLL_MS);
    snprintf(batch, sizeof batch, "--ack_batch=%d", S_FAIRQD_ACK_BATCH);
    snprintf(cert, sizeof cert, "--gateway_cert=%s", self->server_cert);
    snprintf(allow, sizeof allow, "--gateway_allow_dir=%s", self->allow_dir);
    //  No HTTP API: the benchmark measures the pipeline, and 8080 may be taken
    char *argv[] = {self->fairqd_link, database, bind, poll, batch,
                    "--http_listen=",  NULL,     NULL, NULL};
    if (self->curve) {
        argv[6] = cert;
        argv[7] = allow;
    } else
        argv[6] = "--gateway_insecure";
    if (s_proc_start(&self->fairqd_proc, "fairqd", self->fairqd_link, argv, log))
        return -1;
    return s_proc_wait_log(&self->fairqd_proc, S_FAIRQD_READY, S_READY_TIMEOUT_MS);
}

//  Runs program to its end; 0 if it exited 0, else -1 (said).
static int s_proc_run(s_bench_t *self, const char *what, char *const argv[])
{
    char log[S_PATH_SIZE + 64];
    snprintf(log, sizeof log, "%s/%s.log", self->dir, what);
    s_proc_t proc;
    if (s_proc_start(&proc, what, argv[0], argv, log))
        return -1;
    uint64_t deadline = fq_bench_now_ns() + (uint64_t)S_READY_TIMEOUT_MS * S_NS_PER_MS;
    while (s_proc_alive(&proc) && fq_bench_now_ns() < deadline)
        s_sleep_ms(S_WAIT_STEP_MS);
    return s_proc_stop(&proc, 0);
}

//  Copies the file at from to to; 0 or -1 (said).
static int s_copy_file(const char *from, const char *to)
{
    char text[4096];
    FILE *in = fopen(from, "r");
    size_t len = in ? fread(text, 1, sizeof text, in) : 0;
    FILE *out = in ? fopen(to, "w") : NULL;
    bool ok = in && out && feof(in) && fwrite(text, 1, len, out) == len;
    if (in)
        fclose(in);
    if (out && fclose(out))
        ok = false;
    if (!ok)
        fprintf(stderr, S_PROGRAM ": could not copy %s to %s\n", from, to);
    return ok ? 0 : -1;
}

//  The production gateway's CURVE material, made by fairq-sender
//  --make-cert as an operator would: fairqd's certificate, one per sender,
//  and the allow directory holding the senders' public halves.
static int s_certs_make(s_bench_t *self, const s_options_t *opts)
{
    snprintf(self->sender_certs, sizeof self->sender_certs, "%s/certs", self->dir);
    snprintf(self->allow_dir, sizeof self->allow_dir, "%s/allowed", self->dir);
    snprintf(self->server_cert, sizeof self->server_cert, "%s/certs/fairqd", self->dir);
    if (mkdir(self->sender_certs, 0700) || mkdir(self->allow_dir, 0700)) {
        fprintf(stderr, S_PROGRAM ": could not create %s: %s\n", self->sender_certs,
                strerror(errno));
        return -1;
    }
    char *server[] = {self->sender_link, "--make-cert", self->server_cert, NULL};
    if (s_proc_run(self, "make-cert-fairqd", server))
        return -1;
    for (uint64_t i = 0; i < opts->senders; i++) {
        char cert[S_PATH_SIZE + 64], allowed[S_PATH_SIZE + 64], what[48];
        snprintf(cert, sizeof cert, "%s/bench-sender-%llu", self->sender_certs,
                 (unsigned long long)i + 1);
        snprintf(allowed, sizeof allowed, "%s/bench-sender-%llu", self->allow_dir,
                 (unsigned long long)i + 1);
        snprintf(what, sizeof what, "make-cert-sender%llu", (unsigned long long)i + 1);
        char *argv[] = {self->sender_link, "--make-cert", cert, NULL};
        if (s_proc_run(self, what, argv) || s_copy_file(cert, allowed))
            return -1;
    }
    return 0;
}

//  The delivery log of sender i (from 0) in run into path.
static void s_deliveries_path(const s_bench_t *self, const char *run, uint64_t i, char *path,
                              size_t size)
{
    snprintf(path, size, "%s/%s-sender%llu.deliveries", self->dir, run, (unsigned long long)i + 1);
}

//  The sink's delivery log in run into path.
static void s_sink_deliveries_path(const s_bench_t *self, const char *run, char *path, size_t size)
{
    snprintf(path, size, "%s/%s-sink.deliveries", self->dir, run);
}

//  Delivery log i of run into path: sender i's for i below opts->senders,
//  the sink's for i = opts->senders.
static void s_log_path(const s_bench_t *self, const s_options_t *opts, const char *run, uint64_t i,
                       char *path, size_t size)
{
    if (i < opts->senders)
        s_deliveries_path(self, run, i, path, size);
    else
        s_sink_deliveries_path(self, run, path, size);
}

//  Starts the senders and waits until fairqd welcomed each.
static int s_senders_start(s_bench_t *self, const s_options_t *opts, const char *run, int port)
{
    char connect[64], concurrency[32];
    snprintf(connect, sizeof connect, "tcp://127.0.0.1:%d", port);
    snprintf(concurrency, sizeof concurrency, "%llu", (unsigned long long)opts->concurrency);
    for (uint64_t i = 0; i < opts->senders; i++) {
        char name[48], log[S_PATH_SIZE], deliveries[S_PATH_SIZE], what[48];
        snprintf(name, sizeof name, "bench-sender-%llu", (unsigned long long)i + 1);
        snprintf(what, sizeof what, "fairq-sender %llu", (unsigned long long)i + 1);
        snprintf(log, sizeof log, "%s/%s-sender%llu.log", self->dir, run,
                 (unsigned long long)i + 1);
        s_deliveries_path(self, run, i, deliveries, sizeof deliveries);
        unlink(deliveries);
        char cert[S_PATH_SIZE + 64];
        snprintf(cert, sizeof cert, "%s/%s", self->sender_certs, name);
        char *argv[20] = {self->sender_link, "--connect", connect,  "--transport", "null",
                          "--concurrency",   concurrency, "--name", name,          "--file",
                          deliveries};
        int argc = 11;
        //  The http channel alone (libcurl); the email channel's null
        //  transport and its log are then unused
        if (self->http) {
            argv[argc++] = "--channels";
            argv[argc++] = "http";
        }
        if (self->curve) {
            argv[argc++] = "--cert";
            argv[argc++] = cert;
            argv[argc++] = "--server-cert";
            argv[argc++] = self->server_cert;
        } else
            argv[argc++] = "--insecure";
        if (s_proc_start(&self->senders[i], what, self->sender_link, argv, log))
            return -1;
        self->nsenders = (int)i + 1;
    }
    for (int i = 0; i < self->nsenders; i++)
        if (s_proc_wait_log(&self->senders[i], S_SENDER_WELCOME, S_READY_TIMEOUT_MS))
            return -1;
    return 0;
}

//  --channel http: starts the sink of the phase name on a free port (the
//  phase's requests name it) and waits until it listens. Its delivery log
//  is <name>-sink.deliveries, read as the senders' are.
static int s_sink_start(s_bench_t *self, const s_options_t *opts, const char *name)
{
    char log[S_PATH_SIZE], deliveries[S_PATH_SIZE], port[16], threads[24];
    self->sink_port = s_free_port();
    if (self->sink_port < 0)
        return -1;
    snprintf(log, sizeof log, "%s/%s-sink.log", self->dir, name);
    s_sink_deliveries_path(self, name, deliveries, sizeof deliveries);
    snprintf(port, sizeof port, "%d", self->sink_port);
    snprintf(threads, sizeof threads, "%llu", (unsigned long long)opts->sink_threads);
    char *argv[] = {
        self->sink_link,       "--port", port, "--threads", threads, "--log", deliveries,
        "--require-signature", NULL};
    if (s_proc_start(&self->sink_proc, "sink", self->sink_link, argv, log))
        return -1;
    return s_proc_wait_log(&self->sink_proc, S_SINK_READY, S_READY_TIMEOUT_MS);
}

//  Stops the sink (SIGTERM: it writes the rest of its log) and reads what
//  it counted into sink_counts; -1 (said) if it ended badly or said none.
static int s_sink_stop(s_bench_t *self)
{
    unsigned long long *c = self->sink_counts;
    c[0] = c[1] = c[2] = c[3] = c[4] = 0;
    int rc = s_proc_stop(&self->sink_proc, S_STOP_TIMEOUT_MS);
    FILE *file = fopen(self->sink_proc.log, "r");
    char line[256];
    bool found = false;
    while (file && fgets(line, sizeof line, file))
        found = found || sscanf(line, S_SINK_DONE, &c[0], &c[1], &c[2], &c[3], &c[4]) == 5;
    if (file)
        fclose(file);
    if (!found) {
        fprintf(stderr, S_PROGRAM ": the sink did not say what it received (log: %s)\n",
                self->sink_proc.log);
        rc = -1;
    }
    return rc;
}

//  What the sink stopped last received, into run; -1 (said) if any
//  request lacked its signature or body, or was not a POST to /hook/...
static int s_sink_check(s_bench_t *self, s_run_t *run)
{
    const unsigned long long *c = self->sink_counts;
    run->sink_requests = c[0];
    run->sink_unsigned = c[1];
    run->sink_empty = c[2];
    run->sink_bad = c[3];
    run->sink_connections = c[4];
    if (c[1] == 0 && c[2] == 0 && c[3] == 0)
        return 0;
    fprintf(stderr,
            S_PROGRAM ": of %llu requests the sink received, %llu had no webhook-signature, %llu "
                      "no body, %llu were not a POST to /hook/TENANT/... (log: %s)\n",
            c[0], c[1], c[2], c[3], self->sink_proc.log);
    return -1;
}

//  Stops the senders, then the sink if one runs, then fairqd, each with
//  SIGTERM (they drain); a child that ends badly is said and fails the
//  benchmark at the end.
static void s_children_stop(s_bench_t *self)
{
    for (int i = 0; i < self->nsenders; i++)
        if (s_proc_stop(&self->senders[i], S_STOP_TIMEOUT_MS))
            self->child_failed = true;
    self->nsenders = 0;
    if (self->sink_proc.pid > 0 && s_sink_stop(self))
        self->child_failed = true;
    if (s_proc_stop(&self->fairqd_proc, S_STOP_TIMEOUT_MS))
        self->child_failed = true;
}

static void s_children_kill(s_bench_t *self)
{
    for (int i = 0; i < self->nsenders; i++)
        s_proc_kill(&self->senders[i]);
    self->nsenders = 0;
    s_proc_kill(&self->sink_proc);
    s_proc_kill(&self->fairqd_proc);
}

//  Dies or fails: -1 (said) if a child is no longer running.
static int s_children_check(s_bench_t *self)
{
    s_proc_t *procs[S_CHILDREN_MAX] = {&self->fairqd_proc};
    int n = 1;
    for (int i = 0; i < self->nsenders; i++)
        procs[n++] = &self->senders[i];
    if (self->sink_proc.pid > 0)
        procs[n++] = &self->sink_proc;
    for (int i = 0; i < n; i++)
        if (!s_proc_alive(procs[i])) {
            char how[64];
            fprintf(stderr, S_PROGRAM ": %s ended during the run (%s; log: %s)\n", procs[i]->name,
                    s_proc_how(procs[i], how, sizeof how), procs[i]->log);
            //  This benchmark sends SIGTERM only once the load is over
            if (s_log_contains(procs[i], "received SIGTERM"))
                fprintf(stderr,
                        S_PROGRAM ": its log says it received SIGTERM, which this "
                                  "benchmark did not send: another program on this machine?\n");
            s_proc_print_errors(procs[i]);
            return -1;
        }
    return 0;
}

//  Before each timed part: a checkpoint, so none is under way as it
//  starts, and sync(2), so the kernel's writeback of what it wrote (with
//  fsync=off it stays dirty in the page cache) does not run during it.
static int s_quiesce(s_bench_t *self)
{
    if (s_exec(self, "CHECKPOINT", "checkpoint"))
        return -1;
    sync();
    return 0;
}

//  ---------------------------------------------------------------------
//  The raw floor

//  Row i of the floor: recipient i % (N / T) of tenant i / (N / T), as the
//  splitter writes it (the request and tenant ids are stand-ins).
typedef struct {
    uint64_t per_tenant;
} s_floor_rows_t;

static int s_floor_row(fq_bench_text_t *text, uint64_t i, void *arg)
{
    const s_floor_rows_t *rows = arg;
    uint64_t tenant = i / rows->per_tenant, j = i % rows->per_tenant;
    return fq_bench_text_printf(text, S_RECIPIENT_ROW, (long long)tenant + 1, (long long)tenant + 1,
                                (unsigned long long)j, (unsigned long long)(j % S_DOMAINS),
                                (unsigned long long)j, (unsigned long long)j);
}

//  The floor's table: autovacuum off, so that a worker woken by a million
//  dead rows does not take CPU from whatever runs next (the floor is the
//  best case); fairq's own tables keep it, as in production.
static int s_floor_setup(s_bench_t *self, char *options, size_t size)
{
    if (fq_bench_raw_create(S_PROGRAM, self->conn, S_RAW_TABLE, S_STORE_TABLE, options, size) ||
        s_exec(self, "ALTER TABLE " S_RAW_TABLE " SET (autovacuum_enabled = off)",
               "turn autovacuum off"))
        return -1;
    char value[32];
    if (s_value(self, "SELECT fairq.chunk_size()", NULL, value, sizeof value,
                "read the chunk size"))
        return -1;
    self->chunk_size = atoi(value);
    return self->chunk_size > 0 ? 0 : -1;
}

//  COPY then UPDATE of N rows; the table is emptied afterwards, untimed.
static int s_floor(s_bench_t *self, const s_options_t *opts, s_run_t *run)
{
    uint64_t n = opts->messages, per = n / opts->tenants, chunk = (uint64_t)self->chunk_size;
    s_floor_rows_t rows = {per};
    if (s_quiesce(self))
        return -1;
    uint64_t start = fq_bench_now_ns();
    for (uint64_t first = 0; first < n; first += chunk) {
        uint64_t count = n - first < chunk ? n - first : chunk;
        if (fq_bench_copy_rows(S_PROGRAM, self->conn, S_RAW_COPY_SQL, S_RAW_TABLE, &self->text,
                               first, count, s_floor_row, &rows))
            return -1;
    }
    uint64_t copied = fq_bench_now_ns();
    //  The ids in COPY order (tenant by tenant), then in the order a fair
    //  dispatcher acks them: one of each tenant in turn (untimed)
    PGresult *res = PQexec(self->conn, "SELECT id FROM " S_RAW_TABLE " ORDER BY id");
    if (fq_bench_check(S_PROGRAM, self->conn, res, PGRES_TUPLES_OK, "read the floor's ids"))
        return -1;
    if ((uint64_t)PQntuples(res) != n) {
        fprintf(stderr, S_PROGRAM ": " S_RAW_TABLE " has %d rows, not %llu\n", PQntuples(res),
                (unsigned long long)n);
        PQclear(res);
        return -1;
    }
    for (uint64_t i = 0; i < n; i++)
        self->raw_ids[i] = strtoll(PQgetvalue(res, (int)i, 0), NULL, 10);
    PQclear(res);
    for (uint64_t i = 0, k = 0; i < per; i++)
        for (uint64_t t = 0; t < opts->tenants; t++)
            self->raw_order[k++] = self->raw_ids[t * per + i];
    uint64_t updating = fq_bench_now_ns(), updated = 0;
    for (uint64_t first = 0; first < n; first += S_FAIRQD_ACK_BATCH) {
        uint64_t count = n - first < S_FAIRQD_ACK_BATCH ? n - first : S_FAIRQD_ACK_BATCH, done;
        if (fq_bench_update_ids(S_PROGRAM, self->conn, S_RAW_ACK_SQL, S_RAW_TABLE, &self->text,
                                self->raw_order + first, count, &done))
            return -1;
        updated += done;
    }
    uint64_t end = fq_bench_now_ns();
    if (updated != n) {
        fprintf(stderr, S_PROGRAM ": updated %llu of %llu rows\n", (unsigned long long)updated,
                (unsigned long long)n);
        return -1;
    }
    run->copy_s = s_seconds(copied - start);
    run->update_s = s_seconds(end - updating);
    run->floor = (double)n / (run->copy_s + run->update_s);
    return s_exec(self, "TRUNCATE " S_RAW_TABLE, "empty " S_RAW_TABLE);
}

//  The naive queue, beside the floor: the same rows, FIFO.
static int s_fifo(s_bench_t *self, const s_options_t *opts, s_run_t *run)
{
    s_floor_rows_t rows = {opts->messages / opts->tenants};
    if (s_quiesce(self))
        return -1;
    char conninfo[S_DATABASE_SIZE + 16];
    snprintf(conninfo, sizeof conninfo, "dbname=%s", self->database);
    return fq_bench_fifo_run(S_PROGRAM, self->conn, conninfo, opts->messages, S_FIFO_WORKERS,
                             S_FAIRQD_ACK_BATCH, S_FIFO_NEWCOMER_AT, s_floor_row, &rows,
                             &run->fifo);
}

//  ---------------------------------------------------------------------
//  The load

//  Creates the load's tenants (and none of the probes': they are new).
static int s_load_tenants(s_bench_t *self, const s_options_t *opts)
{
    fq_bench_text_t *text = &self->text;
    text->size = 0;
    int rc = fq_bench_text_printf(text, "{");
    for (uint64_t t = 0; t < opts->tenants && rc == 0; t++) {
        char name[32];
        s_tenant_name(name, sizeof name, S_TENANT_PREFIX, t);
        rc = fq_bench_text_printf(text, t ? ",%s" : "%s", name);
    }
    rc = rc ? rc : fq_bench_text_printf(text, "}");
    if (rc) {
        fprintf(stderr, S_PROGRAM ": out of memory\n");
        return -1;
    }
    const char *params[] = {text->data};
    PGresult *res =
        PQexecParams(self->conn, "INSERT INTO fairq.tenants (name) SELECT unnest($1::text[])", 1,
                     NULL, params, NULL, NULL, 0);
    if (fq_bench_check(S_PROGRAM, self->conn, res, PGRES_COMMAND_OK, "create the tenants"))
        return -1;
    PQclear(res);
    return 0;
}

//  Submits tenant's request of recipients (JSON), mail or, in a phase of
//  --channel http, webhooks to the sink; *id gets its id.
static int s_submit(s_bench_t *self, const char *tenant, const char *recipients, int64_t *id)
{
    char url[128];
    snprintf(url, sizeof url, S_HTTP_URL, self->sink_port, tenant);
    const char *mail[] = {tenant, S_FROM, S_SUBJECT, S_BODY, recipients};
    const char *http[] = {tenant, recipients, url, S_HTTP_BODY, S_HTTP_SECRET};
    PGresult *res = PQexecParams(self->conn, self->http ? S_HTTP_SUBMIT_SQL : S_SUBMIT_SQL, 5, NULL,
                                 self->http ? http : mail, NULL, NULL, 0);
    if (fq_bench_check(S_PROGRAM, self->conn, res, PGRES_TUPLES_OK, "submit a request"))
        return -1;
    *id = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
    PQclear(res);
    return 0;
}

//  Probe k: a new tenant, and its one-recipient request.
static int s_probe_submit(s_bench_t *self, int k)
{
    char name[32];
    s_tenant_name(name, sizeof name, S_PROBE_PREFIX, (uint64_t)k);
    const char *params[] = {name};
    PGresult *res = PQexecParams(self->conn, "INSERT INTO fairq.tenants (name) VALUES ($1)", 1,
                                 NULL, params, NULL, NULL, 0);
    if (fq_bench_check(S_PROGRAM, self->conn, res, PGRES_COMMAND_OK, "create a probe's tenant"))
        return -1;
    PQclear(res);
    s_probe_t *probe = &self->probes[k];
    *probe = (s_probe_t){0};
    char recipients[256];
    snprintf(recipients, sizeof recipients, "[" S_RECIPIENT_JSON "]", 0ULL, 0ULL, 0ULL, 0ULL);
    if (s_submit(self, name, recipients, &probe->request_id))
        return -1;
    probe->commit_ns = fq_bench_now_ns();
    probe->commit_real_ns = s_real_ns();
    return 0;
}

//  The ids of the tenants' requests as an array literal, request_array.
static int s_request_array(s_bench_t *self, uint64_t tenants)
{
    fq_bench_text_t *text = &self->text;
    text->size = 0;
    int rc = fq_bench_text_printf(text, "{");
    for (uint64_t t = 0; t < tenants && rc == 0; t++)
        rc = fq_bench_text_printf(text, t ? ",%lld" : "%lld", (long long)self->requests[t]);
    rc = rc ? rc : fq_bench_text_printf(text, "}");
    free(self->request_array);
    self->request_array = rc ? NULL : strdup(text->data);
    if (!self->request_array) {
        fprintf(stderr, S_PROGRAM ": out of memory\n");
        return -1;
    }
    return 0;
}

//  Waits until count requests are split (each row's split counter, with
//  its rejects, at its total); log is fairqd's, named if it takes too long.
static int s_wait_split(s_bench_t *self, uint64_t count, const char *log)
{
    uint64_t deadline = fq_bench_now_ns() + (uint64_t)S_SPLIT_TIMEOUT_MS * S_NS_PER_MS;
    char split[32];
    for (;;) {
        if (s_value(self, "SELECT count(*) FROM fairq.requests WHERE split + rejected = total",
                    NULL, split, sizeof split, "count the split requests"))
            return -1;
        if (strtoull(split, NULL, 10) >= count)
            return 0;
        if (fq_bench_now_ns() > deadline) {
            fprintf(stderr, S_PROGRAM ": %s of %llu requests split after %d ms (log: %s)\n", split,
                    (unsigned long long)count, S_SPLIT_TIMEOUT_MS, log);
            return -1;
        }
        if (s_children_check(self))
            return -1;
        s_sleep_ms(S_POLL_MS);
    }
}

//  Sent counters: of the load's requests and of request probe_id (0: none).
static int s_progress(s_bench_t *self, int64_t probe_id, uint64_t *sent, uint64_t *probe_sent)
{
    char probe[32];
    snprintf(probe, sizeof probe, "%lld", (long long)probe_id);
    const char *params[] = {self->request_array, probe};
    PGresult *res = PQexecPrepared(self->conn, "progress", 2, params, NULL, NULL, 0);
    if (fq_bench_check(S_PROGRAM, self->conn, res, PGRES_TUPLES_OK, "read the progress"))
        return -1;
    *sent = strtoull(PQgetvalue(res, 0, 0), NULL, 10);
    *probe_sent = strtoull(PQgetvalue(res, 0, 1), NULL, 10);
    PQclear(res);
    return 0;
}

//  Notes which statements of fairqd (and autovacuum) are running in the
//  run's database now. A sample is cheap: one look at pg_stat_activity.
static int s_sample_activity(s_bench_t *self, s_activity_t *activity)
{
    PGresult *res =
        PQexec(self->conn, "SELECT regexp_replace(query, '\\s+', ' ', 'g') FROM pg_stat_activity"
                           " WHERE datname = current_database() AND state = 'active'"
                           " AND pid <> pg_backend_pid()");
    if (fq_bench_check(S_PROGRAM, self->conn, res, PGRES_TUPLES_OK, "read pg_stat_activity"))
        return -1;
    activity->samples++;
    for (int i = 0; i < PQntuples(res); i++) {
        char label[S_ACTIVITY_LABEL];
        snprintf(label, sizeof label, "%s", PQgetvalue(res, i, 0));
        size_t k = 0;
        while (k < activity->kinds && strcmp(activity->statements[k].label, label) != 0)
            k++;
        if (k == activity->kinds && activity->kinds < S_ACTIVITY_KINDS)
            snprintf(activity->statements[activity->kinds++].label, S_ACTIVITY_LABEL, "%s", label);
        if (k < activity->kinds)
            activity->statements[k].seen++;
    }
    PQclear(res);
    return 0;
}

static int s_statement_compare(const void *a, const void *b)
{
    unsigned x = ((const s_statement_t *)a)->seen, y = ((const s_statement_t *)b)->seen;
    return x > y ? -1 : x < y;
}

//  Where the server's WAL stands, in bytes from its start (exact, from
//  the insert position), and the full-page images written so far
//  (pg_stat_wal, which each backend adds to at most a second late), into
//  bytes and fpi; each NAN when the server cannot tell (pg_stat_wal came
//  with PostgreSQL 14).
static void s_wal_read(s_bench_t *self, double *bytes, double *fpi)
{
    static const char *const queries[] = {"SELECT pg_current_wal_insert_lsn() - '0/0'::pg_lsn",
                                          "SELECT wal_fpi FROM pg_stat_wal"};
    double *out[] = {bytes, fpi};
    for (size_t i = 0; i < 2; i++) {
        *out[i] = NAN;
        PGresult *res = PQexec(self->conn, queries[i]);
        if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1 &&
            !PQgetisnull(res, 0, 0))
            *out[i] = strtod(PQgetvalue(res, 0, 0), NULL);
        PQclear(res);
    }
}

//  Whether the deliveries of run are logged: a sender's or the sink's
//  delivery log holds some.
static bool s_deliveries_logged(const s_bench_t *self, const s_options_t *opts, const char *run)
{
    for (uint64_t i = 0; i <= opts->senders; i++) {
        char path[S_PATH_SIZE];
        s_log_path(self, opts, run, i, path, sizeof path);
        struct stat st;
        if (stat(path, &st) == 0 && st.st_size > 0)
            return true;
    }
    return false;
}

//  The load of run name: submits every request, then watches it drain,
//  sending the probes one at a time. The senders are running.
static int s_load(s_bench_t *self, const s_options_t *opts, const char *name, s_run_t *run)
{
    PGresult *res = PQprepare(self->conn, "progress", S_PROGRESS_SQL, 2, NULL);
    if (fq_bench_check(S_PROGRAM, self->conn, res, PGRES_COMMAND_OK, "prepare the progress"))
        return -1;
    PQclear(res);
    if (s_quiesce(self))
        return -1;
    static s_cpu_t cpu_before, cpu_after; //  Too big for the stack
    s_cpu_snapshot(&cpu_before, self->fairqd_proc.pid, self->senders, self->nsenders,
                   self->sink_proc.pid, self->postmaster);
    double wal_before, fpi_before;
    s_wal_read(self, &wal_before, &fpi_before);
    uint64_t start = fq_bench_now_ns();
    run->start_real_ns = s_real_ns();
    for (uint64_t t = 0; t < opts->tenants; t++) {
        char name[32];
        s_tenant_name(name, sizeof name, S_TENANT_PREFIX, t);
        if (s_submit(self, name, self->recipients, &self->requests[t]))
            return -1;
    }
    run->submit_s = s_seconds(fq_bench_now_ns() - start);
    if (s_request_array(self, opts->tenants))
        return -1;

    //  Until every message is acked (or the load stalls), and then until
    //  the probes out, if any, are acked too (they were submitted during
    //  the load). Of the probes out the oldest is watched (its ack seen
    //  is the fallback wait when there is no delivery log; a later one's
    //  is seen no sooner than the ones before it).
    uint64_t sent = 0, probe_sent = 0, last_sent = 0;
    uint64_t last_progress = fq_bench_now_ns(), next_probe = 0, end = 0;
    int probe = 0; //  The oldest probe not seen acked; probes_sent: none out
    uint64_t next_sample = 0;
    bool logged = false; //  Deliveries are logged, as found at the first probe
    for (;;) {
        bool out = probe < run->probes_sent;
        if (s_progress(self, out ? self->probes[probe].request_id : 0, &sent, &probe_sent))
            return -1;
        uint64_t now = fq_bench_now_ns();
        if (!end && now >= next_sample) {
            if (s_sample_activity(self, &run->activity))
                return -1;
            next_sample = now + (uint64_t)S_ACTIVITY_MS * S_NS_PER_MS;
        }
        if (sent != last_sent) {
            last_sent = sent;
            last_progress = now;
        }
        if (end == 0 &&
            (sent >= opts->messages || now - last_progress > (uint64_t)S_STALL_MS * S_NS_PER_MS)) {
            end = now;
            s_cpu_snapshot(&cpu_after, self->fairqd_proc.pid, self->senders, self->nsenders,
                           self->sink_proc.pid, self->postmaster);
            s_pg_names(self, &cpu_after);
            s_cpu_describe(&cpu_before, &cpu_after, s_seconds(end - start), run->cpu,
                           sizeof run->cpu, &run->cpu_figures);
            s_wal_read(self, &run->wal_bytes, &run->wal_fpi);
            run->wal_bytes -= wal_before;
            run->wal_fpi -= fpi_before;
        }
        if (end && sent < opts->messages && !run->stalled) {
            //  No ack for S_STALL_MS: the figures of the rest still count
            run->stalled = true;
            run->stalled_at = sent;
            fprintf(stderr,
                    S_PROGRAM ": the load stalled at %llu of %llu messages: no ack for %d ms "
                              "(logs: %s)\n",
                    (unsigned long long)sent, (unsigned long long)opts->messages, S_STALL_MS,
                    self->dir);
            s_proc_print_errors(&self->fairqd_proc);
        }
        if (out && probe_sent > 0)
            self->probes[probe++].seen_ns = now;
        else if (out &&
                 now - self->probes[probe].commit_ns > (uint64_t)S_PROBE_TIMEOUT_MS * S_NS_PER_MS) {
            //  Its delivery may still be in the senders' logs
            fprintf(stderr, S_PROGRAM ": probe %d was not acked within %d ms\n", probe,
                    S_PROBE_TIMEOUT_MS);
            probe++;
        }
        if (end && probe >= run->probes_sent)
            break;
        double probe_at = S_PROBE_FROM_FRACTION + (S_PROBE_TO_FRACTION - S_PROBE_FROM_FRACTION) *
                                                      run->probes_sent /
                                                      (opts->probes ? opts->probes : 1);
        if (!end && run->probes_sent < opts->probes && now >= next_probe &&
            (double)sent >= probe_at * (double)opts->messages) {
            if (s_probe_submit(self, run->probes_sent))
                return -1;
            if (run->probes_sent == 0)
                logged = s_deliveries_logged(self, opts, name);
            self->probes[run->probes_sent].at = (double)sent / (double)opts->messages;
            run->probes_sent++;
            next_probe = fq_bench_now_ns() + (uint64_t)S_PROBE_GAP_MS * S_NS_PER_MS;
        }
        if (s_children_check(self))
            return -1;
        s_sleep_ms(probe < run->probes_sent && !logged ? S_PROBE_POLL_MS : S_POLL_MS);
    }
    if (run->stalled) {
        run->load_s = s_seconds(last_progress - start);
        run->stalled_rate = (double)run->stalled_at / run->load_s;
    } else {
        run->load_s = s_seconds(end - start);
        run->rate = (double)opts->messages / run->load_s;
    }
    return 0;
}

//  ---------------------------------------------------------------------
//  Analysis: waits and fairness

static int s_double_compare(const void *a, const void *b)
{
    return fq_bench_double_compare(a, b);
}

//  The nearest-rank percentile p (0..1] of n sorted values.
static double s_percentile(const double *sorted, int n, double p)
{
    int rank = (int)ceil(p * n);
    return sorted[rank < 1 ? 0 : rank - 1];
}

static int s_delivery_compare(const void *a, const void *b)
{
    int64_t x = ((const s_delivery_t *)a)->ns, y = ((const s_delivery_t *)b)->ns;
    return x < y ? -1 : x > y;
}

static int s_delivery_add(s_bench_t *self, int64_t ns, int64_t id, int32_t tenant)
{
    if (self->ndeliveries == self->deliveries_capacity) {
        size_t capacity = self->deliveries_capacity ? 2 * self->deliveries_capacity : 1024;
        s_delivery_t *grown = realloc(self->deliveries, capacity * sizeof *grown);
        if (!grown)
            return -1;
        self->deliveries = grown;
        self->deliveries_capacity = capacity;
    }
    self->deliveries[self->ndeliveries++] = (s_delivery_t){ns, id, tenant};
    return 0;
}

//  Reads the senders' delivery logs (and the sink's, which --channel
//  http writes in their stead): the load's deliveries, and each probe's
//  delivery time. Returns the lines read (0: no log), or -1.
static long s_read_deliveries(s_bench_t *self, const s_options_t *opts, const char *run)
{
    self->ndeliveries = 0;
    long lines = 0;
    for (uint64_t i = 0; i <= opts->senders; i++) {
        char path[S_PATH_SIZE];
        s_log_path(self, opts, run, i, path, sizeof path);
        FILE *file = fopen(path, "r");
        if (!file)
            continue;
        char line[512];
        while (fgets(line, sizeof line, file)) {
            long long ns, message, request;
            char tenant[128];
            if (sscanf(line, "%lld %lld %127s %lld", &ns, &message, tenant, &request) != 4)
                continue;
            lines++;
            size_t load = strlen(S_TENANT_PREFIX), probe = strlen(S_PROBE_PREFIX);
            if (strncmp(tenant, S_TENANT_PREFIX, load) == 0) {
                long t = strtol(tenant + load, NULL, 10);
                if (t >= 0 && (uint64_t)t < opts->tenants &&
                    s_delivery_add(self, ns, message, (int32_t)t)) {
                    fclose(file);
                    fprintf(stderr, S_PROGRAM ": out of memory\n");
                    return -1;
                }
            } else if (strncmp(tenant, S_PROBE_PREFIX, probe) == 0) {
                long k = strtol(tenant + probe, NULL, 10);
                if (k >= 0 && k < opts->probes &&
                    (self->probes[k].delivered_ns == 0 || ns < self->probes[k].delivered_ns))
                    self->probes[k].delivered_ns = ns;
            }
        }
        fclose(file);
        //  The figures are taken: the logs are big, and of no more use
        unlink(path);
    }
    if (self->ndeliveries)
        qsort(self->deliveries, self->ndeliveries, sizeof *self->deliveries, s_delivery_compare);
    return lines;
}

//  Without logs: the acks from the database, in the order the store wrote
//  them (each ack batch is one transaction, so one updated_at).
static int s_read_acks(s_bench_t *self, const s_options_t *opts)
{
    self->ndeliveries = 0;
    const char *params[] = {self->request_array, S_TENANT_PREFIX};
    PGresult *res =
        PQexecParams(self->conn,
                     "SELECT substr(t.name, length($2) + 1)::int,"
                     "       (extract(epoch FROM m.updated_at) * 1000000000)::bigint AS at"
                     "  FROM fairq.messages m JOIN fairq.tenants t ON t.id = m.tenant_id"
                     " WHERE m.request_id = ANY($1::bigint[]) AND m.status = 'sent' ORDER BY at",
                     2, NULL, params, NULL, NULL, 0);
    if (fq_bench_check(S_PROGRAM, self->conn, res, PGRES_TUPLES_OK, "read the acks"))
        return -1;
    int rc = 0;
    for (int i = 0; i < PQntuples(res) && rc == 0; i++) {
        long t = strtol(PQgetvalue(res, i, 0), NULL, 10);
        if (t >= 0 && (uint64_t)t < opts->tenants)
            rc = s_delivery_add(self, strtoll(PQgetvalue(res, i, 1), NULL, 10), 0, (int32_t)t);
    }
    PQclear(res);
    if (rc)
        fprintf(stderr, S_PROGRAM ": out of memory\n");
    return rc;
}

//  Each tenant's first and last delivery (INT64_MAX and INT64_MIN if it
//  has none), the last first one and the first last one, and room for
//  one Jain's index per window.
typedef struct {
    uint64_t tenants;
    int64_t *first, *last;
    int64_t last_start, first_done;
    double *scratch; //  ndeliveries / S_WINDOW + 1
} s_spans_t;

static void s_spans_destroy(s_spans_t *self)
{
    free(self->first);
    free(self->last);
    free(self->scratch);
    *self = (s_spans_t){0};
}

//  The spans of the tenants' deliveries in bench. Returns 0 or -1 (said).
static int s_spans_new(s_spans_t *self, const s_bench_t *bench, uint64_t tenants)
{
    *self =
        (s_spans_t){.tenants = tenants,
                    .first = malloc(tenants * sizeof *self->first),
                    .last = malloc(tenants * sizeof *self->last),
                    .last_start = INT64_MIN,
                    .first_done = INT64_MAX,
                    .scratch = malloc((bench->ndeliveries / S_WINDOW + 1) * sizeof *self->scratch)};
    if (!self->first || !self->last || !self->scratch) {
        s_spans_destroy(self);
        fprintf(stderr, S_PROGRAM ": out of memory\n");
        return -1;
    }
    int64_t *first = self->first, *last = self->last;
    for (uint64_t t = 0; t < tenants; t++)
        first[t] = INT64_MAX, last[t] = INT64_MIN;
    const s_delivery_t *d = bench->deliveries;
    for (size_t i = 0; i < bench->ndeliveries; i++) {
        first[d[i].tenant] = d[i].ns < first[d[i].tenant] ? d[i].ns : first[d[i].tenant];
        last[d[i].tenant] = d[i].ns > last[d[i].tenant] ? d[i].ns : last[d[i].tenant];
    }
    for (uint64_t t = 0; t < tenants; t++) {
        self->last_start = first[t] > self->last_start ? first[t] : self->last_start;
        self->first_done = last[t] < self->first_done ? last[t] : self->first_done;
    }
    return 0;
}

//  Jain's index, (sum x)^2 / (k sum x^2), of the shares x of k tenants in
//  each window of S_WINDOW consecutive deliveries (the deliveries sorted
//  by time) from time from to time to; with whole_batches a window closes
//  only where the time changes (an ack batch shares one). With
//  every_tenant, k is every tenant (from and to then bound a span while
//  all are backlogged). Otherwise k is the tenants backlogged through the
//  window (delivered to before it and after it), two or more. spans hold
//  each tenant's first and last delivery and the scratch room.
static void s_jain_windows(const s_bench_t *self, const s_spans_t *spans, int64_t from, int64_t to,
                           bool whole_batches, bool every_tenant, s_fairness_t *out)
{
    *out = (s_fairness_t){.min = NAN, .median = NAN, .fewest = UINT64_MAX};
    const s_delivery_t *d = self->deliveries;
    const int64_t *first = spans->first, *last = spans->last;
    double *scratch = spans->scratch;
    size_t n = self->ndeliveries;
    uint64_t tenants = spans->tenants;
    uint64_t *counts = calloc(tenants, sizeof *counts);
    if (!counts)
        return;
    size_t in_window = 0;
    int64_t window_from = 0;
    for (size_t i = 0; i < n && from <= to; i++) {
        if (d[i].ns < from || d[i].ns > to)
            continue;
        window_from = in_window ? window_from : d[i].ns;
        counts[d[i].tenant]++;
        in_window++;
        bool boundary = !whole_batches || i + 1 == n || d[i + 1].ns != d[i].ns;
        if (in_window < S_WINDOW || !boundary)
            continue;
        double sum = 0, squares = 0;
        uint64_t k = 0;
        for (uint64_t t = 0; t < tenants; t++) {
            if (every_tenant || (first[t] < window_from && last[t] > d[i].ns)) {
                sum += (double)counts[t];
                squares += (double)counts[t] * (double)counts[t];
                k++;
            }
            counts[t] = 0;
        }
        if (k >= 2 && squares > 0) {
            double jain = sum * sum / ((double)k * squares);
            if (out->windows == 0 || jain < out->min)
                out->min = jain, out->worst_ns = window_from, out->worst_k = k;
            scratch[out->windows++] = jain;
            out->deliveries += in_window;
            out->fewest = k < out->fewest ? k : out->fewest;
            out->most = k > out->most ? k : out->most;
        }
        in_window = 0;
    }
    free(counts);
    if (out->windows) {
        qsort(scratch, out->windows, sizeof *scratch, s_double_compare);
        size_t mid = out->windows / 2;
        out->median = out->windows % 2 ? scratch[mid] : (scratch[mid - 1] + scratch[mid]) / 2;
    }
}

//  The fairness of the load's deliveries: over every tenant while all are
//  backlogged, and over the tenants backlogged at the time. Also when the
//  first tenant was done and the last one started, from the load's start.
static int s_fairness(s_bench_t *self, const s_options_t *opts, bool whole_batches, s_run_t *run)
{
    s_spans_t spans;
    if (s_spans_new(&spans, self, opts->tenants))
        return -1;
    run->last_start_s = (double)(spans.last_start - run->start_real_ns) / FQ_BENCH_NS_PER_S;
    run->first_done_s = (double)(spans.first_done - run->start_real_ns) / FQ_BENCH_NS_PER_S;
    s_jain_windows(self, &spans, spans.last_start, spans.first_done, whole_batches, true,
                   &run->all);
    s_jain_windows(self, &spans, INT64_MIN, INT64_MAX, whole_batches, false, &run->active);
    s_spans_destroy(&spans);
    return 0;
}

//  The fairness phase's: every tenant was backlogged before the first
//  delivery, so the windows over all of them run from it to the first
//  tenant's last delivery. The times are from the first delivery.
static int s_fairness_backlog(s_bench_t *self, const s_options_t *opts, bool whole_batches,
                              s_run_t *run)
{
    if (self->ndeliveries == 0)
        return 0; //  Nothing delivered: no figure
    s_spans_t spans;
    if (s_spans_new(&spans, self, opts->tenants))
        return -1;
    int64_t start = run->backlog_start_ns = self->deliveries[0].ns;
    run->backlog_last_start = (double)(spans.last_start - start) / FQ_BENCH_NS_PER_S;
    run->backlog_first_done = (double)(spans.first_done - start) / FQ_BENCH_NS_PER_S;
    s_jain_windows(self, &spans, INT64_MIN, spans.first_done, whole_batches, true, &run->backlog);
    s_spans_destroy(&spans);
    return 0;
}

static int s_id_compare(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

//  How many times each message id of the load is in the delivery logs:
//  the ids sorted into ids (ndeliveries of them); *duplicates gets the
//  deliveries beyond each message's first (at-least-once allows some).
static int64_t *s_delivered_ids(const s_bench_t *self, uint64_t *duplicates)
{
    int64_t *ids = malloc((self->ndeliveries + 1) * sizeof *ids);
    if (!ids)
        return NULL;
    for (size_t i = 0; i < self->ndeliveries; i++)
        ids[i] = self->deliveries[i].id;
    qsort(ids, self->ndeliveries, sizeof *ids, s_id_compare);
    *duplicates = 0;
    for (size_t i = 1; i < self->ndeliveries; i++)
        *duplicates += ids[i] == ids[i - 1];
    return ids;
}

//  After a stall: the load's messages not recorded as sent, and whether
//  the senders delivered them (an ack lost on the way) or not (a message
//  never dispatched), so that the report says which part lost it.
#define S_UNSENT_SHOWN 10
static int s_explain_stall(s_bench_t *self, const int64_t *ids, size_t nids)
{
    const char *params[] = {self->request_array};
    PGresult *res = PQexecParams(
        self->conn,
        "SELECT m.id, m.request_id, m.status, m.try_count, coalesce(m.last_error, ''),"
        "       r.status, r.sent, r.total"
        "  FROM fairq.messages m JOIN fairq.requests r ON r.id = m.request_id"
        " WHERE m.request_id = ANY($1::bigint[]) AND m.status <> 'sent' ORDER BY m.id LIMIT " S_STR(
            S_UNSENT_SHOWN),
        1, NULL, params, NULL, NULL, 0);
    if (fq_bench_check(S_PROGRAM, self->conn, res, PGRES_TUPLES_OK, "read the unsent messages"))
        return -1;
    fprintf(stderr, S_PROGRAM ": %d messages of the load are not sent%s\n", PQntuples(res),
            PQntuples(res) == S_UNSENT_SHOWN ? " (or more)" : "");
    for (int i = 0; i < PQntuples(res); i++) {
        int64_t id = strtoll(PQgetvalue(res, i, 0), NULL, 10);
        const int64_t *at = nids ? bsearch(&id, ids, nids, sizeof *ids, s_id_compare) : NULL;
        const int64_t *low = at, *high = at;
        while (low && low > ids && low[-1] == id)
            low--;
        while (high && high < ids + nids && *high == id)
            high++;
        size_t times = at ? (size_t)(high - low) : 0;
        fprintf(stderr,
                "  message %s of request %s: status %s, try_count %s, last_error \"%s\"; request "
                "%s, sent %s of %s; in the delivery logs %zu times\n",
                PQgetvalue(res, i, 0), PQgetvalue(res, i, 1), PQgetvalue(res, i, 2),
                PQgetvalue(res, i, 3), PQgetvalue(res, i, 4), PQgetvalue(res, i, 5),
                PQgetvalue(res, i, 6), PQgetvalue(res, i, 7), times);
    }
    PQclear(res);
    return 0;
}

//  Milliseconds from probe's submit to the start of the transaction that
//  split its one row (messages.created_at); NAN if unknown.
static double s_probe_split_ms(s_bench_t *self, const s_probe_t *probe)
{
    char id[32], created[64];
    snprintf(id, sizeof id, "%lld", (long long)probe->request_id);
    if (s_value(self,
                "SELECT (extract(epoch FROM min(created_at)) * 1e9)::bigint FROM fairq.messages"
                " WHERE request_id = $1::bigint",
                id, created, sizeof created, "read a probe's split time") ||
        !*created)
        return NAN;
    return (double)(strtoll(created, NULL, 10) - probe->commit_real_ns) / S_NS_PER_MS;
}

//  Writes each probe of the run to <logs>/<name>-probes.tsv, for a look
//  at where a slow one's wait went (fairqd's log names the moment its
//  scheduler took the request in): its request, when it came, and its
//  submit, split and delivery as CLOCK_REALTIME nanoseconds (0: unknown).
static int s_probes_write(s_bench_t *self, const char *name, const s_run_t *run)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s-probes.tsv", self->dir, name);
    FILE *file = fopen(path, "w");
    if (!file) {
        fprintf(stderr, S_PROGRAM ": %s: %s\n", path, strerror(errno));
        return -1;
    }
    fprintf(file, "probe\trequest\tat\tsubmit_ns\tsplit_ns\tdelivered_ns\n");
    for (int k = 0; k < run->probes_sent && k < S_PROBES_MAX; k++) {
        const s_probe_t *probe = &self->probes[k];
        double split_ms = s_probe_split_ms(self, probe);
        int64_t split_ns =
            isnan(split_ms) ? 0 : probe->commit_real_ns + (int64_t)(split_ms * S_NS_PER_MS);
        fprintf(file, "%d\t%lld\t%.4f\t%lld\t%lld\t%lld\n", k, (long long)probe->request_id,
                probe->at, (long long)probe->commit_real_ns, (long long)split_ns,
                (long long)probe->delivered_ns);
    }
    if (fclose(file) != 0) {
        fprintf(stderr, S_PROGRAM ": %s: %s\n", path, strerror(errno));
        return -1;
    }
    return 0;
}

//  The run's waits and fairness, from the senders' logs if they wrote
//  any, else from the database.
static int s_analyse(s_bench_t *self, const s_options_t *opts, const char *name, s_run_t *run)
{
    long lines = s_read_deliveries(self, opts, name);
    if (lines < 0)
        return -1;
    bool from_log = lines > 0;
    uint64_t duplicates = 0;
    int64_t *ids = from_log ? s_delivered_ids(self, &duplicates) : NULL;
    if (from_log && !ids) {
        fprintf(stderr, S_PROGRAM ": out of memory\n");
        return -1;
    }
    run->duplicates = duplicates;
    if (from_log && self->ndeliveries - duplicates != opts->messages)
        fprintf(stderr,
                S_PROGRAM ": warning: the senders' logs hold %zu deliveries of %llu messages of "
                          "the load, not %llu\n",
                self->ndeliveries, (unsigned long long)(self->ndeliveries - duplicates),
                (unsigned long long)opts->messages);
    int rc = run->stalled ? s_explain_stall(self, ids, from_log ? self->ndeliveries : 0) : 0;
    free(ids);
    if (rc)
        return -1;
    if (s_probes_write(self, name, run))
        return -1;
    double waits[S_PROBES_MAX];
    int nwaits = 0;
    run->wait_from_log = from_log;
    run->slowest[0] = 0;
    for (int k = 0; k < run->probes_sent && k < S_PROBES_MAX; k++) {
        const s_probe_t *probe = &self->probes[k];
        if (from_log && probe->delivered_ns)
            waits[nwaits++] = (double)(probe->delivered_ns - probe->commit_real_ns) / S_NS_PER_MS;
        else if (!from_log && probe->seen_ns)
            waits[nwaits++] = s_ms(probe->seen_ns - probe->commit_ns);
        else
            continue;
        //  Any probe above the target is named, with when it came and
        //  how much of its wait came before its row existed
        size_t len = strlen(run->slowest);
        if (waits[nwaits - 1] > S_PROBE_NAMED_MS && len + 48 < sizeof run->slowest)
            snprintf(run->slowest + len, sizeof run->slowest - len,
                     "%s%.0f ms at %.0f%% (split after %.0f)", len ? ", " : "", waits[nwaits - 1],
                     100 * probe->at, s_probe_split_ms(self, probe));
    }
    run->probes_measured = nwaits;
    if (nwaits < run->probes_sent)
        fprintf(stderr, S_PROGRAM ": warning: %d of %d probes are not %s\n",
                run->probes_sent - nwaits, run->probes_sent,
                from_log ? "in the senders' logs" : "acked");
    run->wait_p50 = run->wait_p99 = run->wait_max = NAN;
    if (nwaits) {
        qsort(waits, (size_t)nwaits, sizeof *waits, s_double_compare);
        run->wait_p50 = s_percentile(waits, nwaits, 0.5);
        run->wait_p99 = s_percentile(waits, nwaits, 0.99);
        run->wait_max = waits[nwaits - 1];
    }
    if (!from_log && s_read_acks(self, opts))
        return -1;
    return s_fairness(self, opts, !from_log, run);
}

//  ---------------------------------------------------------------------
//  Figures

//  The best of n values (the highest, or the lowest if lower_is_better),
//  NAN left out; NAN if there is none.
static double s_best(const double *values, int n, bool lower_is_better)
{
    double best = NAN;
    for (int i = 0; i < n; i++)
        if (!isnan(values[i]) &&
            (isnan(best) || (lower_is_better ? values[i] < best : values[i] > best)))
            best = values[i];
    return best;
}

static double s_median(const double *values, int n)
{
    double kept[FQ_BENCH_MAX_RUNS];
    int m = 0;
    for (int i = 0; i < n; i++)
        if (!isnan(values[i]))
            kept[m++] = values[i];
    return m ? fq_bench_median(kept, m) : NAN;
}

#define S_ROW_FORMAT "%-44s %11s %12s %12s %12s  %-12s %s\n"

//  value as format shows it ("," for grouped integers) into out, or "n/a"
//  if it is NAN; returns out.
static const char *s_figure(double value, const char *format, char *out, size_t size)
{
    if (isnan(value))
        snprintf(out, size, "n/a");
    else if (strcmp(format, ",") == 0)
        fq_bench_grouped(value, out, size);
    else
        snprintf(out, size, format, value);
    return out;
}

//  Whether value meets threshold: "PASS", "MISS", or "n/a" for none.
static const char *s_verdict(double value, bool lower_is_better, double threshold)
{
    if (isnan(value))
        return "n/a";
    return (lower_is_better ? value <= threshold : value >= threshold) ? "PASS" : "MISS";
}

//  A row: the best, median and worst of values as format shows them (","
//  for grouped integers), the target (empty: none) and whether the worst
//  run meets it, since a target holds in every run or not at all.
static void s_print_row(const char *name, const char *n, const double *values, int runs,
                        bool lower_is_better, const char *format, const char *target,
                        double threshold)
{
    double best = s_best(values, runs, lower_is_better), median = s_median(values, runs),
           worst = s_best(values, runs, !lower_is_better);
    char best_text[32], median_text[32], worst_text[32];
    s_figure(best, format, best_text, sizeof best_text);
    s_figure(median, format, median_text, sizeof median_text);
    s_figure(worst, format, worst_text, sizeof worst_text);
    printf(S_ROW_FORMAT, name, n, best_text, median_text, worst_text, target,
           target[0] ? s_verdict(worst, lower_is_better, threshold) : "");
}

//  The ratio of each run's rate to the floor measured in the same run:
//  the best, median and worst of those, judged by the worst when judged.
static void s_print_ratio_row(const char *name, const double *rate, const double *floor, int runs,
                              bool judged)
{
    double ratios[FQ_BENCH_MAX_RUNS] = {0};
    for (int i = 0; i < runs && i < FQ_BENCH_MAX_RUNS; i++)
        ratios[i] = 100 * rate[i] / floor[i];
    double best = s_best(ratios, runs, false), median = s_median(ratios, runs),
           worst = s_best(ratios, runs, true);
    char best_text[32], median_text[32], worst_text[32];
    s_figure(best, "%.1f%%", best_text, sizeof best_text);
    s_figure(median, "%.1f%%", median_text, sizeof median_text);
    s_figure(worst, "%.1f%%", worst_text, sizeof worst_text);
    printf(S_ROW_FORMAT, name, "", best_text, median_text, worst_text, judged ? ">= 70%" : "",
           judged ? s_verdict(worst, false, 100 * S_TARGET_FLOOR_FRACTION) : "");
}

//  The counts of n runs, as "12" if they are all alike, else "8-12".
static void s_count_range(const double *counts, int n, char *out, size_t size)
{
    double low = s_best(counts, n, true), high = s_best(counts, n, false);
    char a[24], b[24];
    fq_bench_grouped(low, a, sizeof a);
    fq_bench_grouped(high, b, sizeof b);
    if (low == high)
        snprintf(out, size, "%s", a);
    else
        snprintf(out, size, "%s-%s", a, b);
}

//  The table of the n runs that completed (a stalled one among them);
//  with --channel http, runs are the http ones and null_runs the null
//  loads of the same runs.
static void s_print_table(const s_options_t *opts, const s_run_t *runs, const s_run_t *null_runs,
                          int n)
{
    enum {
        RATE,
        FLOOR,
        FIFO,
        FIFO_WAIT,
        P50,
        P99,
        MAX,
        JAIN_MIN,
        JAIN_MEDIAN,
        ACTIVE_MIN,
        ACTIVE_MEDIAN,
        RSS,
        HWM,
        IDLE,
        SPLIT,
        STALLED,
        ROWS
    };
    double v[ROWS][FQ_BENCH_MAX_RUNS], windows[FQ_BENCH_MAX_RUNS],
        active_windows[FQ_BENCH_MAX_RUNS], probes[FQ_BENCH_MAX_RUNS];
    int stalled = 0;
    for (int i = 0; i < n; i++) {
        const s_run_t *r = &runs[i];
        double row[ROWS] = {[RATE] = r->rate,
                            [FLOOR] = r->floor,
                            [FIFO] = r->fifo.rate,
                            [FIFO_WAIT] = r->fifo.newcomer_wait_s * 1000,
                            [P50] = r->wait_p50,
                            [P99] = r->wait_p99,
                            [MAX] = r->wait_max,
                            [JAIN_MIN] = r->backlog.min,
                            [JAIN_MEDIAN] = r->backlog.median,
                            [ACTIVE_MIN] = r->active.min,
                            [ACTIVE_MEDIAN] = r->active.median,
                            [RSS] = r->rss_mb,
                            [HWM] = r->hwm_mb,
                            [IDLE] = r->idle_rss_mb,
                            [SPLIT] = r->split_s,
                            [STALLED] = r->stalled ? r->stalled_rate : NAN};
        for (int k = 0; k < ROWS; k++)
            v[k][i] = row[k];
        windows[i] = (double)r->backlog.windows;
        active_windows[i] = (double)r->active.windows;
        probes[i] = r->probes_measured;
        stalled += r->stalled;
    }
    char messages[32], probes_text[64], windows_text[64], active_text[64], requests[32],
        rss_name[96], rate[32], rate_target[48];
    fq_bench_grouped((double)opts->messages, messages, sizeof messages);
    s_count_range(probes, n, probes_text, sizeof probes_text);
    s_count_range(windows, n, windows_text, sizeof windows_text);
    s_count_range(active_windows, n, active_text, sizeof active_text);
    fq_bench_grouped((double)opts->requests, requests, sizeof requests);
    snprintf(rss_name, sizeof rss_name, "fairqd VmRSS, %s active requests (MB)", requests);
    snprintf(rate_target, sizeof rate_target, ">= %s",
             fq_bench_grouped(S_TARGET_RATE, rate, sizeof rate));
    if (n < opts->runs || stalled)
        printf("%d of %d runs completed, %d of them stalled (their throughput is left out)\n\n", n,
               opts->runs, stalled);
    printf(S_ROW_FORMAT, "measurement", "n", "best", "median", "worst", "target", "result");
    if (null_runs) {
        //  The targets are the null pipeline's: the http one has none
        double null_rate[FQ_BENCH_MAX_RUNS] = {0}, null_stalled[FQ_BENCH_MAX_RUNS] = {0};
        int null_stalls = 0;
        for (int i = 0; i < n; i++) {
            null_rate[i] = null_runs[i].rate;
            null_stalled[i] = null_runs[i].stalled ? null_runs[i].stalled_rate : NAN;
            null_stalls += null_runs[i].stalled;
        }
        s_print_row("http: first submit to last ack (msgs/s)", messages, v[RATE], n, false, ",", "",
                    0);
        if (stalled)
            s_print_row("http: until it stalled (msgs/s)", "", v[STALLED], n, false, ",", "", 0);
        s_print_row("null transport: the same load (msgs/s)", messages, null_rate, n, false, ",",
                    rate_target, S_TARGET_RATE);
        if (null_stalls)
            s_print_row("null transport: until it stalled (msgs/s)", "", null_stalled, n, false,
                        ",", "", 0);
        s_print_ratio_row("http / null transport, each run", v[RATE], null_rate, n, false);
        s_print_row("raw floor, COPY + batched UPDATE (msgs/s)", messages, v[FLOOR], n, false, ",",
                    "", 0);
        s_print_ratio_row("http pipeline / raw floor", v[RATE], v[FLOOR], n, false);
        s_print_ratio_row("null pipeline / raw floor", null_rate, v[FLOOR], n, true);
    } else {
        s_print_row("pipeline, first submit to last ack (msgs/s)", messages, v[RATE], n, false, ",",
                    rate_target, S_TARGET_RATE);
        if (stalled)
            s_print_row("pipeline until it stalled (msgs/s)", "", v[STALLED], n, false, ",", "", 0);
        s_print_row("raw floor, COPY + batched UPDATE (msgs/s)", messages, v[FLOOR], n, false, ",",
                    "", 0);
        s_print_ratio_row("pipeline / raw floor", v[RATE], v[FLOOR], n, true);
    }
    s_print_row("naive FIFO queue, SKIP LOCKED (msgs/s)", messages, v[FIFO], n, false, ",", "", 0);
    s_print_row("naive FIFO queue: newcomer's wait (ms)", "", v[FIFO_WAIT], n, true, "%.0f", "", 0);
    s_print_row("new-tenant wait p50 (ms)", probes_text, v[P50], n, true, "%.1f", "", 0);
    s_print_row("new-tenant wait p99 (ms)", probes_text, v[P99], n, true, "%.1f", "<= 50",
                S_TARGET_WAIT_P99_MS);
    s_print_row("new-tenant wait max (ms)", probes_text, v[MAX], n, true, "%.1f", "<= 100",
                S_TARGET_WAIT_MAX_MS);
    s_print_row("new tenants probed in a run", "", probes, n, false, "%.0f", ">= 50",
                S_TARGET_PROBES);
    s_print_row("Jain, all tenants backlogged: least fair", windows_text, v[JAIN_MIN], n, false,
                "%.4f", ">= 0.99", S_TARGET_JAIN);
    s_print_row("Jain, all tenants backlogged: median", windows_text, v[JAIN_MEDIAN], n, false,
                "%.4f", "", 0);
    s_print_row("Jain, the tenants backlogged: least fair", active_text, v[ACTIVE_MIN], n, false,
                "%.4f", "", 0);
    s_print_row("Jain, the tenants backlogged: median", active_text, v[ACTIVE_MEDIAN], n, false,
                "%.4f", "", 0);
    s_print_row(rss_name, requests, v[RSS], n, true, "%.1f", "<= 100", S_TARGET_RSS_MB);
    s_print_row("fairqd VmHWM, the same (MB)", requests, v[HWM], n, true, "%.1f", "", 0);
    s_print_row("fairqd VmRSS, idle at start (MB)", "", v[IDLE], n, true, "%.1f", "", 0);
    s_print_row("time to split them (s)", requests, v[SPLIT], n, true, "%.1f", "", 0);
}

//  One scenario's column of the CPU table: the median over the n runs of
//  group g's cores, and of its CPU per message (cores / msgs/s); NAN when
//  none was measured.
static void s_cpu_medians(const s_run_t *runs, int n, int g, double *cores, double *us)
{
    double c[FQ_BENCH_MAX_RUNS], u[FQ_BENCH_MAX_RUNS];
    for (int i = 0; i < n; i++) {
        const s_cpu_figures_t *f = &runs[i].cpu_figures;
        c[i] = g < S_CPU_GROUPS ? f->cores[g] : 100 * f->busy;
        u[i] = g < S_CPU_GROUPS ? 1e6 * f->cores[g] / runs[i].rate : NAN;
    }
    *cores = s_median(c, n);
    *us = s_median(u, n);
}

//  --channel http: where the CPU went during each load, the null and the
//  http one side by side, medians of the n runs.
static void s_print_cpu_table(const s_run_t *runs, const s_run_t *null_runs, int n)
{
    printf("\ncpu during the load, in cores (and CPU per message), the median of %d run%s:\n", n,
           n == 1 ? "" : "s");
    printf("  %-14s %-26s %s\n", "", "null transport", "http channel");
    for (int g = 0; g <= S_CPU_GROUPS; g++) {
        const char *name = g < S_CPU_GROUPS ? s_cpu_names[g] : "machine busy";
        char cells[2][48];
        for (int k = 0; k < 2; k++) {
            double cores, us;
            s_cpu_medians(k ? runs : null_runs, n, g, &cores, &us);
            if ((g == S_CPU_SINK && k == 0) || isnan(cores))
                snprintf(cells[k], sizeof cells[k], "-");
            else if (g == S_CPU_GROUPS)
                snprintf(cells[k], sizeof cells[k], "%.0f%%", cores);
            else if (isnan(us))
                snprintf(cells[k], sizeof cells[k], "%.2f", cores);
            else
                snprintf(cells[k], sizeof cells[k], "%.2f (%.1f us/msg)", cores, us);
        }
        printf("  %-14s %-26s %s\n", name, cells[0], cells[1]);
    }
}

static void s_print_header(const s_bench_t *self, const s_options_t *opts)
{
    printf("fairq pipeline benchmark\n");
    //  What else the machine was doing as the benchmark began; each run's
    //  cpu line then says what ran beside it ("other")
    char load[64] = "unknown";
    FILE *loadavg = fopen("/proc/loadavg", "r");
    if (loadavg) {
        if (!fgets(load, sizeof load, loadavg))
            snprintf(load, sizeof load, "unknown");
        load[strcspn(load, "\n")] = 0;
        fclose(loadavg);
    }
    printf("machine:    nproc %ld; /proc/loadavg at the start: %s\n", sysconf(_SC_NPROCESSORS_ONLN),
           load);
    const char *build = fq_bench_build(), *sanitizer = fq_bench_sanitizer();
    printf("build:      %s%s (this program; fairqd and fairq-sender are those below)\n", build,
           sanitizer);
    if (opts->http)
        printf("programs:   %s\n            %s\n            %s\n            run as " S_FAIRQD_LINK
               ", " S_SENDER_LINK " and " S_SINK_LINK
               " (links), out of reach of a `pkill fairqd` by others\n",
               self->fairqd, self->sender, self->sink);
    else
        printf("programs:   %s\n            %s\n            run as " S_FAIRQD_LINK
               " and " S_SENDER_LINK " (links), out of reach of a `pkill fairqd` by others\n",
               self->fairqd, self->sender);
    printf("logs:       %s\n", self->dir);
    printf("runs:       %d, each in fresh databases; the pipeline and its raw floor alternate "
           "which goes first;\n"
           "            best, median and worst shown, targets judged on the worst%s\n",
           opts->runs,
           opts->runs % 2 ? " (odd --runs: the medians lean to the pipeline, first in more runs)"
                          : "");
}

static void s_print_method(const s_bench_t *self, const s_options_t *opts, const char *options)
{
    char messages[32], per[32], chunk[32], requests[32], window[32];
    fq_bench_grouped((double)opts->messages, messages, sizeof messages);
    fq_bench_grouped(S_WINDOW, window, sizeof window);
    fq_bench_grouped((double)(opts->messages / opts->tenants), per, sizeof per);
    fq_bench_grouped((double)self->chunk_size, chunk, sizeof chunk);
    fq_bench_grouped((double)opts->requests, requests, sizeof requests);
    printf("load:       %s messages: %llu tenants of weight 1, one request of %s recipients "
           "each, submitted back to back with fairq.submit_json\n"
           "            on one connection; %llu fairq-sender x concurrency %llu, null transport "
           "writing a --file delivery log;\n"
           "            gateway %s; fairqd --poll_ms=%d --ack_batch=%d, other settings its "
           "defaults; throughput from the first submit until\n"
           "            sum(fairq.requests.sent) = %s (polled every %d ms)\n",
           messages, (unsigned long long)opts->tenants, per, (unsigned long long)opts->senders,
           (unsigned long long)opts->concurrency,
           self->curve ? "with CURVE (as in production)" : "WITHOUT CURVE (--insecure)",
           S_FAIRQD_POLL_MS, S_FAIRQD_ACK_BATCH, messages, S_POLL_MS);
    if (opts->http)
        printf("http:       --channel http: the same recipients as webhooks, each a POST to "
               "http://127.0.0.1:PORT/hook/TENANT/{{code}} with the\n"
               "            json body %s, signed (Standard Webhooks, the request's "
               "secret: an HMAC-SHA256\n"
               "            per message in fairqd); the senders serve --channels http (libcurl, "
               "a handle per worker, connections kept\n"
               "            alive); the sink (fq_bench_sink: libmicrohttpd, %llu epoll threads) "
               "answers 200 with an empty body,\n"
               "            checks that each carries a webhook-signature and logs it in the "
               "delivery log's form (its receipt time,\n"
               "            CLOCK_REALTIME), which the probes and the fairness read; the "
               "fairness phase and the memory test are http\n"
               "            too. Each run also loads the same messages with the null transport "
               "(mail, as without --channel) in a\n"
               "            database of its own, the two alternating which goes first; the "
               "floor and the FIFO queue go with the http load\n",
               S_HTTP_BODY, (unsigned long long)opts->sink_threads);
    printf("floor:      in the run's database: COPY of the same %s rows into " S_RAW_TABLE
           " (LIKE " S_STORE_TABLE " INCLUDING ALL)\n"
           "            WITH (%s), autovacuum off, %s rows per transaction "
           "(fairq.chunk_size()); then UPDATE ... FROM\n"
           "            unnest($1::bigint[]) of status, try_count, last_attempt_at, updated_at, "
           "%d rows per transaction, one row of\n"
           "            each tenant in turn (the order a fair dispatcher acks them); "
           "floor = N / (COPY time + UPDATE time)\n",
           messages, options[0] ? options : "no storage parameters", chunk, S_FAIRQD_ACK_BATCH);
    printf("probes:     %d new tenants, spread from %.0f%% to %.0f%% delivered, "
           "each at least %d ms after the\n"
           "            previous one's submit, submit a 1-recipient request (split in its "
           "submit's transaction: fairq.split_at_submit,\n"
           "            on by default); wait = its line in the delivery log - the submit's "
           "return (CLOCK_REALTIME)\n",
           opts->probes, 100 * S_PROBE_FROM_FRACTION, 100 * S_PROBE_TO_FRACTION, S_PROBE_GAP_MS);
    printf("fairness:   Jain's index in each window of %s consecutive deliveries (the logs "
           "merged by time, probes left out): over all\n"
           "            %llu tenants while every one is backlogged (from the last tenant's first "
           "delivery to the first one's last;\n"
           "            mostly empty in the load: its first tenants are done before the last are "
           "split), and over the tenants\n"
           "            backlogged through the window (delivered to before it and after it)\n",
           window, (unsigned long long)opts->tenants);
    char backlog[32], backlog_per[32];
    fq_bench_grouped((double)opts->fairness_messages, backlog, sizeof backlog);
    fq_bench_grouped((double)(opts->fairness_messages / opts->tenants), backlog_per,
                     sizeof backlog_per);
    printf("backlog:    the target's fairness, all tenants backlogged by construction: a fresh "
           "fairqd with no sender; the %llu tenants\n"
           "            each submit one request of %s recipients (%s messages); once every one is "
           "split (fairq.requests.split = total),\n"
           "            the senders of the load start and drain them; Jain's index over all %llu "
           "tenants in each window of %s\n"
           "            deliveries from the first delivery to the first tenant's last one\n",
           (unsigned long long)opts->tenants, backlog_per, backlog,
           (unsigned long long)opts->tenants, window);
    printf("memory:     a fresh fairqd with no sender; %s requests of %d recipients from %d "
           "tenants (%d per statement); VmRSS and\n"
           "            VmHWM (/proc/PID/status) %d poll intervals after the last one is split\n",
           requests, S_MEMORY_RECIPIENTS, S_MEMORY_TENANTS, S_SUBMIT_BATCH, S_LOADED_POLLS);
    printf("cpu:        while the load runs, in cores (1.00 = one core all the time), from "
           "/proc/PID/stat: fairqd (and its busiest\n"
           "            threads), the senders, the cluster's postgres processes, this program; "
           "other = the machine's busy time\n"
           "            (/proc/stat) less theirs: anything else running on this machine\n");
    printf("wal:        written while the load runs (the insert position's move), per message of "
           "the load; full-page\n"
           "            images from pg_stat_wal, which backends add to up to a second late\n");
    printf("fifo:       after the floor, the same rows in a plain queue table (a state column, a "
           "partial index on what is\n"
           "            pending): %d workers claim the oldest %d with FOR UPDATE SKIP LOCKED and "
           "mark them done, first in first\n"
           "            out; rate = N / (COPY + drain); a newcomer's row goes in once %.0f%% is "
           "done (insert to claim)\n",
           S_FIFO_WORKERS, S_FAIRQD_ACK_BATCH, 100 * S_FIFO_NEWCOMER_AT);
    printf("hygiene:    CHECKPOINT and sync(2) before every timed part\n\n");
}

//  ---------------------------------------------------------------------
//  One run

static void s_run_init(s_run_t *self)
{
    *self = (s_run_t){.rate = NAN,
                      .floor = NAN,
                      .wait_p50 = NAN,
                      .wait_p99 = NAN,
                      .wait_max = NAN,
                      .all = {.min = NAN, .median = NAN},
                      .active = {.min = NAN, .median = NAN},
                      .backlog = {.min = NAN, .median = NAN},
                      .backlog_split_s = NAN,
                      .backlog_drain_s = NAN,
                      .rss_mb = NAN,
                      .hwm_mb = NAN,
                      .idle_rss_mb = NAN,
                      .split_s = NAN,
                      .wal_bytes = NAN,
                      .wal_fpi = NAN};
}

//  The load of run index: mail to the null transport, or with http the
//  same recipients as webhooks to the sink; with_floor, the raw floor and
//  the FIFO queue in the same database (before or after it).
static int s_run_load(s_bench_t *self, const s_options_t *opts, int index, s_run_t *run, bool http,
                      bool with_floor)
{
    char name[16], database[S_DATABASE_SIZE], log[S_PATH_SIZE], options[256];
    snprintf(name, sizeof name, http ? "http%d" : "run%d", index + 1);
    self->http = run->http = http;
    snprintf(database, sizeof database, "fq_bench_pipeline_%d_%s", (int)getpid(), name);
    snprintf(log, sizeof log, "%s/%s-fairqd.log", self->dir, name);
    int port = s_free_port();
    if (port < 0 || s_database_open(self, database) || s_fairqd_start(self, log, port) ||
        s_load_tenants(self, opts) || s_floor_setup(self, options, sizeof options))
        return -1;
    //  The method needs fairq's chunk size, known once a database has the
    //  schema: the first run prints it, before its warm-up
    if (!self->warmed_up) {
        s_run_t scratch = {0};
        char rate[32];
        s_print_method(self, opts, options);
        fflush(stdout);
        if (s_floor(self, opts, &scratch))
            return -1;
        printf(
            "warm-up:    one raw floor, not counted: %s msgs/s (COPY %.1f s + UPDATE %.1f s)\n\n",
            fq_bench_grouped(scratch.floor, rate, sizeof rate), scratch.copy_s, scratch.update_s);
        fflush(stdout);
        self->warmed_up = true;
    }
    //  Odd runs measure the floor first
    bool floor_first = index % 2 != 0;
    if (with_floor && floor_first && (s_floor(self, opts, run) || s_fifo(self, opts, run)))
        return -1;
    if ((http && s_sink_start(self, opts, name)) || s_senders_start(self, opts, name, port) ||
        s_load(self, opts, name, run))
        return -1;
    s_children_stop(self);
    if (http && s_sink_check(self, run))
        return -1;
    if (s_analyse(self, opts, name, run))
        return -1;
    //  The floor after the load meets no autovacuum of its leftovers
    if (with_floor && !floor_first &&
        (s_exec(self,
                "TRUNCATE " S_STORE_TABLE ", fairq.requests, fairq.recipient_chunks, fairq.rejects,"
                " fairq.request_destinations",
                "empty fairq's tables") ||
         s_floor(self, opts, run) || s_fifo(self, opts, run)))
        return -1;
    s_database_close(self);
    return 0;
}

//  The fairness phase: the backlog first, by construction (fairqd with no
//  sender, every tenant's request split), then the senders drain it, so
//  that every tenant is backlogged from the first delivery on.
static int s_run_fairness(s_bench_t *self, const s_options_t *opts, int index, s_run_t *run)
{
    char name[24], database[S_DATABASE_SIZE], log[S_PATH_SIZE];
    snprintf(name, sizeof name, "fairness%d", index + 1);
    snprintf(database, sizeof database, "fq_bench_pipeline_%d_%s", (int)getpid(), name);
    snprintf(log, sizeof log, "%s/%s-fairqd.log", self->dir, name);
    int port = s_free_port();
    //  --channel http: the requests name the sink, which starts first
    self->http = opts->http;
    if (port < 0 || s_database_open(self, database) || s_fairqd_start(self, log, port) ||
        s_load_tenants(self, opts) || (self->http && s_sink_start(self, opts, name)))
        return -1;
    uint64_t start = fq_bench_now_ns();
    for (uint64_t t = 0; t < opts->tenants; t++) {
        char tenant[32];
        s_tenant_name(tenant, sizeof tenant, S_TENANT_PREFIX, t);
        if (s_submit(self, tenant, self->fairness_recipients, &self->requests[t]))
            return -1;
    }
    if (s_request_array(self, opts->tenants) || s_wait_split(self, opts->tenants, log))
        return -1;
    run->backlog_split_s = s_seconds(fq_bench_now_ns() - start);
    if (s_senders_start(self, opts, name, port))
        return -1;
    //  Until every message is acked; no ack for S_STALL_MS fails the run
    const char *params[] = {self->request_array};
    uint64_t draining = fq_bench_now_ns(), last_progress = draining, last_sent = 0;
    for (;;) {
        PGresult *res = PQexecParams(self->conn,
                                     "SELECT coalesce(sum(sent), 0) FROM fairq.requests"
                                     " WHERE id = ANY($1::bigint[])",
                                     1, NULL, params, NULL, NULL, 0);
        if (fq_bench_check(S_PROGRAM, self->conn, res, PGRES_TUPLES_OK, "read the progress"))
            return -1;
        uint64_t sent = strtoull(PQgetvalue(res, 0, 0), NULL, 10), now = fq_bench_now_ns();
        PQclear(res);
        if (sent >= opts->fairness_messages)
            break;
        if (sent != last_sent) {
            last_sent = sent;
            last_progress = now;
        } else if (now - last_progress > (uint64_t)S_STALL_MS * S_NS_PER_MS) {
            fprintf(stderr,
                    S_PROGRAM ": the fairness phase stalled at %llu of %llu messages: no ack for "
                              "%d ms (logs: %s)\n",
                    (unsigned long long)sent, (unsigned long long)opts->fairness_messages,
                    S_STALL_MS, self->dir);
            s_proc_print_errors(&self->fairqd_proc);
            return -1;
        }
        if (s_children_check(self))
            return -1;
        s_sleep_ms(S_POLL_MS);
    }
    run->backlog_drain_s = s_seconds(fq_bench_now_ns() - draining);
    s_children_stop(self);
    s_run_t counts = {0}; //  What the sink received is checked, not kept
    if (self->http && s_sink_check(self, &counts))
        return -1;
    //  From the senders' logs if they wrote any, else from the database
    long lines = s_read_deliveries(self, opts, name);
    if (lines < 0 || (lines == 0 && s_read_acks(self, opts)))
        return -1;
    run->backlog_from_log = lines > 0;
    if (run->backlog_from_log) {
        int64_t *ids = s_delivered_ids(self, &run->backlog_duplicates);
        if (!ids) {
            fprintf(stderr, S_PROGRAM ": out of memory\n");
            return -1;
        }
        free(ids);
        if (self->ndeliveries - run->backlog_duplicates != opts->fairness_messages)
            fprintf(stderr,
                    S_PROGRAM ": warning: the senders' logs hold %zu deliveries of %llu messages "
                              "of the fairness phase, not %llu\n",
                    self->ndeliveries,
                    (unsigned long long)(self->ndeliveries - run->backlog_duplicates),
                    (unsigned long long)opts->fairness_messages);
    }
    if (s_fairness_backlog(self, opts, !run->backlog_from_log, run))
        return -1;
    s_database_close(self);
    return 0;
}

//  The memory test: R requests of a few recipients each, no sender.
static int s_run_memory(s_bench_t *self, const s_options_t *opts, int index, s_run_t *run)
{
    char database[S_DATABASE_SIZE], log[S_PATH_SIZE];
    snprintf(database, sizeof database, "fq_bench_pipeline_%d_memory%d", (int)getpid(), index + 1);
    snprintf(log, sizeof log, "%s/memory%d-fairqd.log", self->dir, index + 1);
    int port = s_free_port();
    self->http = opts->http;
    double hwm;
    if (port < 0 || s_database_open(self, database) || s_fairqd_start(self, log, port) ||
        s_read_rss(self->fairqd_proc.pid, &run->idle_rss_mb, &hwm))
        return -1;
    char tenants[32], recipients[512], first[32], last[32];
    snprintf(tenants, sizeof tenants, "%d", S_MEMORY_TENANTS);
    fq_bench_text_t *text = &self->text;
    text->size = 0;
    int rc = fq_bench_text_printf(text, "[");
    for (unsigned long long i = 0; i < S_MEMORY_RECIPIENTS && rc == 0; i++)
        rc = fq_bench_text_printf(text, i ? "," S_RECIPIENT_JSON : S_RECIPIENT_JSON, i, i, i, i);
    rc = rc ? rc : fq_bench_text_printf(text, "]");
    if (rc) {
        fprintf(stderr, S_PROGRAM ": out of memory\n");
        return -1;
    }
    snprintf(recipients, sizeof recipients, "%s", text->data);
    const char *tenant_params[] = {S_MEMORY_PREFIX, tenants};
    PGresult *res = PQexecParams(self->conn,
                                 "INSERT INTO fairq.tenants (name)"
                                 " SELECT $1 || to_char(i, 'FM0000')"
                                 " FROM generate_series(0, $2::int - 1) i",
                                 2, NULL, tenant_params, NULL, NULL, 0);
    if (fq_bench_check(S_PROGRAM, self->conn, res, PGRES_COMMAND_OK, "create the tenants"))
        return -1;
    PQclear(res);
    //  --channel http: webhooks, to a port nobody listens on (none is sent)
    char url[128];
    snprintf(url, sizeof url, S_HTTP_URL, S_HTTP_MEMORY_PORT, S_MEMORY_PREFIX);
    uint64_t start = fq_bench_now_ns();
    for (uint64_t i = 0; i < opts->requests; i += S_SUBMIT_BATCH) {
        uint64_t end = i + S_SUBMIT_BATCH < opts->requests ? i + S_SUBMIT_BATCH : opts->requests;
        snprintf(first, sizeof first, "%llu", (unsigned long long)i);
        snprintf(last, sizeof last, "%llu", (unsigned long long)end - 1);
        const char *params[] = {S_MEMORY_PREFIX, tenants,   first,  last,
                                S_FROM,          S_SUBJECT, S_BODY, recipients};
        const char *http[] = {S_MEMORY_PREFIX, tenants, first,       last,
                              recipients,      url,     S_HTTP_BODY, S_HTTP_SECRET};
        //  One statement, one transaction: S_SUBMIT_BATCH requests
        if (self->http)
            res = PQexecParams(
                self->conn,
                "SELECT count((fairq.submit_keyed($1 || to_char(i % $2::int, 'FM0000'), NULL,"
                "   NULL, NULL, $5::json, false, now(), 0, 5, NULL, NULL, NULL, NULL, NULL,"
                "   channel => 'http', http_method => 'POST', http_url => $6, http_body => $7,"
                "   http_body_format => 'json', signing_secret => $8)).request_id)"
                "  FROM generate_series($3::int, $4::int) i",
                8, NULL, http, NULL, NULL, 0);
        else
            res = PQexecParams(self->conn,
                               "SELECT count(fairq.submit($1 || to_char(i % $2::int, 'FM0000'),"
                               "                          $5, $6, $7, $8::jsonb))"
                               "  FROM generate_series($3::int, $4::int) i",
                               8, NULL, params, NULL, NULL, 0);
        if (fq_bench_check(S_PROGRAM, self->conn, res, PGRES_TUPLES_OK, "submit requests"))
            return -1;
        PQclear(res);
    }
    if (s_wait_split(self, opts->requests, log))
        return -1;
    run->split_s = s_seconds(fq_bench_now_ns() - start);
    s_sleep_ms(S_LOADED_POLLS * S_FAIRQD_POLL_MS);
    if (s_children_check(self) || s_read_rss(self->fairqd_proc.pid, &run->rss_mb, &run->hwm_mb))
        return -1;
    s_children_stop(self);
    s_database_close(self);
    return 0;
}

//  ---------------------------------------------------------------------
//  Cost curves (--scale): dispatch from a backlog already split, as the
//  work grows along one axis at a time

//  One point of a curve: a backlog of messages rows over requests over
//  tenants, of which drained are dispatched and timed.
typedef struct {
    const char *curve;
    uint64_t tenants, requests, messages, drained;
} s_point_t;

static const s_point_t s_points[] = {
    {"tenants", 10, 10, 200000, 200000},      {"tenants", 100, 100, 200000, 200000},
    {"tenants", 1000, 1000, 200000, 200000},  {"tenants", 10000, 10000, 200000, 200000},
    {"requests", 100, 10000, 200000, 200000}, {"requests", 100, 100000, 400000, 200000},
    {"backlog", 100, 100, 1000000, 200000},   {"backlog", 100, 100, 10000000, 200000},
    {"backlog", 100, 100, 50000000, 200000},
};
static const s_point_t s_quick_points[] = {
    {"tenants", 10, 10, 20000, 20000},     {"tenants", 1000, 1000, 20000, 20000},
    {"requests", 100, 5000, 20000, 20000}, {"backlog", 100, 100, 100000, 20000},
    {"backlog", 100, 100, 1000000, 20000},
};

#define S_SCALE_PREFIX   "scale-"
#define S_SCALE_FILL_MAX 1000000 //  Rows inserted per statement
#define S_SCALE_POLL_MS  20      //  Progress looks: the senders' delivery logs
#define S_SCALE_SETTLE   3       //  Poll intervals for fairqd to take the requests in

typedef struct {
    double fill_s, rate, cpu_us, rss_mb, table_mb, indexes_mb;
    double vacuum_s;    //  The first VACUUM of the backlog, before the senders start
    double reused_mb;   //  The table after the drained rows were deleted, vacuumed, written again
    long autovacuums;   //  Of the messages table while the senders drained it
    double ack_lag_s;   //  From the last delivery until every ack was committed
    double postgres_us; //  The cluster's CPU per message drained (NAN: not on this machine)
    char sessions[160]; //  The same by whom each postgres process serves
    char threads[160];  //  fairqd's busiest threads, CPU per message drained
} s_point_result_t;

//  The CPU that postgres and fairqd's busiest threads used between before
//  and after, in microseconds per message of count, into result.
static void s_point_cpu(const s_cpu_t *before, const s_cpu_t *after, uint64_t count, bool postgres,
                        s_point_result_t *result)
{
    static s_ticks_t used[S_PROCS_MAX];
    double us_per_tick = 1e6 / (double)sysconf(_SC_CLK_TCK) / (double)count;
    uint64_t cluster = 0;
    s_ticks_used(before->procs, before->nprocs, after->procs, after->nprocs, used);
    for (size_t i = 0; i < after->nprocs; i++)
        if (used[i].group == S_CPU_POSTGRES)
            cluster += used[i].ticks;
    result->postgres_us = postgres ? (double)cluster * us_per_tick : (double)NAN;
    //  The descriptions print ticks / tick: ticks per microsecond per message
    result->sessions[0] = 0;
    if (postgres)
        s_pg_describe(before, after, 1.0 / us_per_tick, result->sessions, sizeof result->sessions);
    s_threads_describe(before, after, 1.0 / us_per_tick, 1, result->threads,
                       sizeof result->threads);
}

//  utime + stime of process pid, in ticks; 0 if it cannot be read.
static uint64_t s_process_ticks(pid_t pid)
{
    char path[64], comm[64];
    int ppid;
    uint64_t ticks = 0;
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    return s_read_stat(path, comm, sizeof comm, &ppid, &ticks) == 0 ? ticks : 0;
}

//  The messages table's size and its indexes', in MB.
static int s_scale_sizes(s_bench_t *self, double *table_mb, double *indexes_mb)
{
    char table[32], indexes[32];
    if (s_value(self, "SELECT pg_table_size('fairq.messages')", NULL, table, sizeof table,
                "size the messages table") ||
        s_value(self, "SELECT pg_indexes_size('fairq.messages')", NULL, indexes, sizeof indexes,
                "size the messages indexes"))
        return -1;
    *table_mb = strtod(table, NULL) / (S_KB_PER_MB * S_KB_PER_MB);
    *indexes_mb = strtod(indexes, NULL) / (S_KB_PER_MB * S_KB_PER_MB);
    return 0;
}

//  A delivery log read as it grows: the bytes read, the lines counted.
typedef struct {
    off_t offset;
    uint64_t lines;
} s_tail_t;

//  The lines in the file at path so far (those read before, and the new
//  ones since); what was counted if it cannot be read (not yet written).
static uint64_t s_tail_lines(s_tail_t *tail, const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return tail->lines;
    char buffer[65536];
    ssize_t n;
    while ((n = pread(fd, buffer, sizeof buffer, tail->offset)) > 0) {
        for (const char *at = buffer; (at = memchr(at, '\n', (size_t)(buffer + n - at))); at++)
            tail->lines++;
        tail->offset += n;
    }
    close(fd);
    return tail->lines;
}

//  How many times autovacuum has vacuumed the messages table, as the
//  statistics say (they lag by up to a stats flush); -1 if unreadable.
static long s_autovacuums(s_bench_t *self)
{
    char count[32];
    if (s_value(self,
                "SELECT autovacuum_count FROM pg_stat_user_tables"
                " WHERE relid = 'fairq.messages'::regclass",
                NULL, count, sizeof count, "read the autovacuum count"))
        return -1;
    return strtol(count, NULL, 10);
}

//  The backlog, written straight into the tables as the splitters leave
//  it: tenants, active requests whose recipients are all split, and their
//  pending messages, rendered by the load's templates. Going around the
//  submit and the split is what makes 50 million rows take minutes, not
//  hours; the rows are the ones a split writes. One transaction: fairqd
//  must not see a request before its messages (it would page it empty,
//  let it go and look again only 30 s later).
static int s_scale_fill(s_bench_t *self, const s_point_t *point)
{
    if (s_exec(self, "BEGIN", "begin the backlog"))
        return -1;
    char tenants[32], requests[32], per[32];
    snprintf(tenants, sizeof tenants, "%llu", (unsigned long long)point->tenants);
    snprintf(requests, sizeof requests, "%llu", (unsigned long long)point->requests);
    snprintf(per, sizeof per, "%llu", (unsigned long long)(point->messages / point->requests));
    const char *tenant_params[] = {S_SCALE_PREFIX, tenants};
    const char *request_params[] = {requests, tenants, per, S_FROM, S_SUBJECT, S_BODY};
    if (s_exec_params(self,
                      "INSERT INTO fairq.tenants (name)"
                      " SELECT $1 || to_char(i, 'FM00000') FROM generate_series(0, $2::int - 1) i",
                      2, tenant_params, "create the tenants") ||
        s_exec_params(self,
                      "INSERT INTO fairq.requests (tenant_id, from_addr, subject, body, status,"
                      "                            total, split)"
                      " SELECT t.id, $4, $5, $6, 'active', $3::int, $3::int"
                      "   FROM generate_series(0, $1::int - 1) i"
                      "   JOIN (SELECT id, row_number() OVER (ORDER BY id) - 1 AS k"
                      "           FROM fairq.tenants) t ON t.k = i % $2::int",
                      6, request_params, "create the requests"))
        return -1;
    //  The messages, S_SCALE_FILL_MAX rows per statement, request by request
    uint64_t per_request = point->messages / point->requests;
    uint64_t step = S_SCALE_FILL_MAX / per_request ? S_SCALE_FILL_MAX / per_request : 1;
    for (uint64_t first = 0; first < point->requests; first += step) {
        char from[32], count[32];
        snprintf(from, sizeof from, "%llu", (unsigned long long)first);
        snprintf(count, sizeof count, "%llu", (unsigned long long)step);
        const char *params[] = {from, count, per};
        if (s_exec_params(self,
                          "INSERT INTO fairq.messages (request_id, tenant_id, recipient, fields)"
                          " SELECT r.id, r.tenant_id,"
                          "        'user' || g || '@example' || r.id || '.com',"
                          "        jsonb_build_object('name', 'User ' || g, 'code', g::text)"
                          "   FROM (SELECT id, tenant_id FROM fairq.requests ORDER BY id"
                          "          OFFSET $1::int LIMIT $2::int) r,"
                          "        generate_series(1, $3::int) g",
                          3, params, "write the backlog"))
            return -1;
    }
    if (s_exec(self, "COMMIT", "commit the backlog"))
        return -1;
    return s_exec(self, "ANALYZE fairq.messages", "analyze the backlog") ||
                   s_exec(self, "ANALYZE fairq.requests", "analyze the requests")
               ? -1
               : 0;
}

//  What retention does to the table: the drained rows deleted (as the
//  reaper's prune does once their request is done and retention_s has
//  passed), a plain VACUUM, and as many rows written again: the table's
//  size afterwards, in MB.
static int s_scale_reuse(s_bench_t *self, const s_point_t *point, double *table_mb)
{
    char count[32];
    snprintf(count, sizeof count, "%llu", (unsigned long long)point->drained);
    const char *params[] = {count};
    double indexes_mb;
    if (s_exec(self, "DELETE FROM fairq.messages WHERE status = 'sent'",
               "delete the sent messages") ||
        s_exec(self, "VACUUM fairq.messages", "vacuum the messages") ||
        s_exec_params(self,
                      "INSERT INTO fairq.messages (request_id, tenant_id, recipient, fields)"
                      " SELECT r.id, r.tenant_id, 'again' || g || '@example.com', '{}'"
                      "   FROM (SELECT id, tenant_id FROM fairq.requests ORDER BY id LIMIT 1) r,"
                      "        generate_series(1, $1::int) g",
                      1, params, "write the rows again"))
        return -1;
    return s_scale_sizes(self, table_mb, &indexes_mb);
}

//  One point: a fresh database and fairqd, the backlog, then the senders
//  until drained messages are acked.
static int s_scale_point(s_bench_t *self, const s_options_t *opts, int index,
                         const s_point_t *point, s_point_result_t *result)
{
    char name[24], database[S_DATABASE_SIZE], log[S_PATH_SIZE];
    snprintf(name, sizeof name, "scale%d", index + 1);
    snprintf(database, sizeof database, "fq_bench_pipeline_%d_%s", (int)getpid(), name);
    snprintf(log, sizeof log, "%s/%s-fairqd.log", self->dir, name);
    *result = (s_point_result_t){NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, 0, NAN, NAN, "", ""};
    int port = s_free_port();
    if (port < 0 || s_database_open(self, database) || s_fairqd_start(self, log, port))
        return -1;
    uint64_t start = fq_bench_now_ns();
    if (s_scale_fill(self, point) || s_quiesce(self))
        return -1;
    result->fill_s = s_seconds(fq_bench_now_ns() - start);
    if (s_scale_sizes(self, &result->table_mb, &result->indexes_mb))
        return -1;
    //  The backlog's first VACUUM (hint bits, visibility map), as
    //  autovacuum gives a table that grew over time: without it, the one
    //  woken by the fill reads and writes the whole table while the senders
    //  drain it, which past the machine's memory is most of what is timed
    start = fq_bench_now_ns();
    if (s_exec(self, "VACUUM fairq.messages", "vacuum the backlog") || s_quiesce(self))
        return -1;
    result->vacuum_s = s_seconds(fq_bench_now_ns() - start);
    long autovacuums_before = s_autovacuums(self);
    //  fairqd takes the requests in at its next polls
    s_sleep_ms(S_SCALE_SETTLE * S_FAIRQD_POLL_MS);
    if (s_senders_start(self, opts, name, port))
        return -1;
    static s_cpu_t cpu_before, cpu_after;
    s_cpu_snapshot(&cpu_before, self->fairqd_proc.pid, self->senders, self->nsenders, 0,
                   self->postmaster);
    uint64_t ticks = s_process_ticks(self->fairqd_proc.pid);
    start = fq_bench_now_ns();
    //  Timed until the senders' delivery logs hold the point's messages;
    //  their acks are then confirmed in the database, untimed: sum(sent)
    //  over 100,000 requests is tens of ms of a PostgreSQL backend, which
    //  polled while timing took a fifth of a core from the point measured.
    //  (The http channel's sink keeps no log here: it is timed to the acks.)
    s_tail_t tails[S_MAX_SENDERS] = {{0}};
    uint64_t last_progress = start, last_seen = 0, end = 0, used = 0;
    for (bool acks = self->http;;) {
        uint64_t seen = 0, now;
        if (acks) {
            char sent_text[32];
            if (s_value(self, "SELECT coalesce(sum(sent), 0) FROM fairq.requests", NULL, sent_text,
                        sizeof sent_text, "read the progress"))
                return -1;
            seen = strtoull(sent_text, NULL, 10);
        } else {
            for (int i = 0; i < self->nsenders; i++) {
                char deliveries[S_PATH_SIZE];
                s_deliveries_path(self, name, (uint64_t)i, deliveries, sizeof deliveries);
                seen += s_tail_lines(&tails[i], deliveries);
            }
        }
        now = fq_bench_now_ns();
        if (seen >= point->drained && !end) {
            end = now;
            s_cpu_snapshot(&cpu_after, self->fairqd_proc.pid, self->senders, self->nsenders, 0,
                           self->postmaster);
            used = s_process_ticks(self->fairqd_proc.pid) - ticks;
            s_pg_names(self, &cpu_after);
        }
        if (seen >= point->drained) {
            if (acks) {
                result->ack_lag_s = s_seconds(now - end);
                break;
            }
            acks = true;
            last_seen = 0;
            continue;
        }
        if (seen != last_seen) {
            last_seen = seen;
            last_progress = now;
        } else if (now - last_progress > (uint64_t)S_STALL_MS * S_NS_PER_MS) {
            fprintf(stderr, S_PROGRAM ": %s %s stalled at %llu of %llu messages%s (logs: %s)\n",
                    name, point->curve, (unsigned long long)seen,
                    (unsigned long long)point->drained, acks ? " acked" : " delivered", self->dir);
            return -1;
        }
        if (s_children_check(self))
            return -1;
        s_sleep_ms(S_SCALE_POLL_MS);
    }
    double seconds = s_seconds(end - start);
    s_point_cpu(&cpu_before, &cpu_after, point->drained, self->postmaster > 0, result);
    result->autovacuums = s_autovacuums(self) - autovacuums_before;
    double hwm;
    if (s_read_rss(self->fairqd_proc.pid, &result->rss_mb, &hwm))
        return -1;
    result->rate = (double)point->drained / seconds;
    result->cpu_us = (double)used / (double)sysconf(_SC_CLK_TCK) * 1e6 / (double)point->drained;
    s_children_stop(self);
    if (strcmp(point->curve, "backlog") == 0 && point->messages == 1000000 &&
        s_scale_reuse(self, point, &result->reused_mb))
        return -1;
    s_database_close(self);
    return 0;
}

//  The cost curves, each point measured once per run; best and median of
//  the runs printed.
static int s_scale(s_bench_t *self, const s_options_t *opts, bool quick)
{
    const s_point_t *points = quick ? s_quick_points : s_points;
    size_t npoints = quick ? sizeof s_quick_points / sizeof s_quick_points[0]
                           : sizeof s_points / sizeof s_points[0];
    printf("cost curves: each point a fresh database and fairqd; the backlog written straight "
           "into the tables\n"
           "            (active requests, all split, pending messages as a split writes "
           "them); then %llu fairq-sender x %llu\n"
           "            (null transport, gateway %s) until the senders' delivery logs hold the "
           "point's drained messages (their acks confirmed after); rate = drained / that time;\n"
           "            fairqd CPU per message = its utime + stime over that time / drained; "
           "RSS at the end; sizes after the fill;\n"
           "            postgres CPU per message: the cluster's processes over that time / "
           "drained; likewise fairqd's busiest threads (each named after its actor)\n\n",
           (unsigned long long)opts->senders, (unsigned long long)opts->concurrency,
           self->curve ? "with CURVE" : "without CURVE");
    printf("%-9s %8s %9s %11s %9s %6s %12s %10s %9s %9s %9s\n", "curve", "tenants", "requests",
           "backlog", "drained", "runs", "msgs/s best", "median", "us/msg", "RSS MB", "MB per M");
    fflush(stdout);
    int failed = 0;
    for (size_t p = 0; p < npoints; p++) {
        if (opts->curve && strcmp(opts->curve, points[p].curve) != 0)
            continue;
        s_point_result_t results[FQ_BENCH_MAX_RUNS];
        double rates[FQ_BENCH_MAX_RUNS], cpus[FQ_BENCH_MAX_RUNS];
        int n = 0;
        for (int r = 0; r < opts->runs; r++) {
            if (s_scale_point(self, opts, (int)p * opts->runs + r, &points[p], &results[n])) {
                s_children_kill(self);
                s_database_close(self);
                failed++;
                continue;
            }
            rates[n] = results[n].rate;
            cpus[n] = results[n].cpu_us;
            n++;
        }
        if (n == 0) {
            printf("%-9s %8llu %9llu %11llu FAILED (said above)\n", points[p].curve,
                   (unsigned long long)points[p].tenants, (unsigned long long)points[p].requests,
                   (unsigned long long)points[p].messages);
            continue;
        }
        const s_point_result_t *last = &results[n - 1];
        double per_million = (last->table_mb + last->indexes_mb) * 1e6 / (double)points[p].messages;
        printf("%-9s %8llu %9llu %11llu %9llu %6d %12.0f %10.0f %9.1f %9.1f %9.0f\n",
               points[p].curve, (unsigned long long)points[p].tenants,
               (unsigned long long)points[p].requests, (unsigned long long)points[p].messages,
               (unsigned long long)points[p].drained, n, s_best(rates, n, false),
               s_median(rates, n), s_median(cpus, n), last->rss_mb, per_million);
        printf("          (fill %.1f s, vacuum %.1f s; table %.0f MB + indexes %.0f MB; "
               "autovacuums while draining: %ld; acks all committed %.2f s after the last delivery",
               last->fill_s, last->vacuum_s, last->table_mb, last->indexes_mb, last->autovacuums,
               last->ack_lag_s);
        if (!isnan(last->postgres_us))
            printf(";\n           postgres %.1f us/msg%s", last->postgres_us, last->sessions);
        printf("; fairqd's busiest threads, us/msg: %s", last->threads);
        if (!isnan(last->reused_mb))
            printf("; after the %llu sent were deleted, vacuumed and as many written again: "
                   "table %.0f MB",
                   (unsigned long long)points[p].drained, last->reused_mb);
        printf(")\n");
        fflush(stdout);
    }
    return failed ? -1 : 0;
}

static void s_print_run(const s_options_t *opts, int index, const s_run_t *run)
{
    char rate[32], floor[32], pipeline[96], f[10][32];
    const char *which = run->http ? "http pipeline" : "pipeline";
    if (run->stalled)
        snprintf(pipeline, sizeof pipeline, "%s STALLED at %llu acks after %.1f s (%s msgs/s)",
                 which, (unsigned long long)run->stalled_at, run->load_s,
                 fq_bench_grouped(run->stalled_rate, rate, sizeof rate));
    else
        snprintf(pipeline, sizeof pipeline, "%s %s msgs/s (%.1f s)", which,
                 fq_bench_grouped(run->rate, rate, sizeof rate), run->load_s);
    printf("run %d/%d (%s first): submit %.1f s; %s; floor %s msgs/s (COPY %.1f s + UPDATE "
           "%.1f s); %s\n",
           index + 1, opts->runs, index % 2 ? "floor" : "pipeline", run->submit_s, pipeline,
           fq_bench_grouped(run->floor, floor, sizeof floor), run->copy_s, run->update_s,
           s_figure(100 * run->rate / run->floor, "%.1f%%", f[0], sizeof f[0]));
    printf("    new tenants: %d probes, %d measured: wait p50 %s ms, p99 %s ms, max %s ms (%s)\n",
           run->probes_sent, run->probes_measured,
           s_figure(run->wait_p50, "%.1f", f[1], sizeof f[1]),
           s_figure(run->wait_p99, "%.1f", f[2], sizeof f[2]),
           s_figure(run->wait_max, "%.1f", f[3], sizeof f[3]),
           run->wait_from_log ? "delivery log" : "sent counter: no delivery log");
    if (run->slowest[0])
        printf("      over %.0f ms: %s (share of the load delivered at its submit)\n",
               S_PROBE_NAMED_MS, run->slowest);
    char fifo_rate[32];
    printf("    naive FIFO queue (SKIP LOCKED, %d workers, batches of %d): %s rows/s (COPY %.1f s "
           "+ drain %.1f s); a newcomer behind %llu rows waited %.2f s\n",
           S_FIFO_WORKERS, S_FAIRQD_ACK_BATCH,
           fq_bench_grouped(run->fifo.rate, fifo_rate, sizeof fifo_rate), run->fifo.copy_s,
           run->fifo.drain_s, (unsigned long long)run->fifo.newcomer_behind,
           run->fifo.newcomer_wait_s);
    char span[160];
    if (run->last_start_s <= run->first_done_s)
        snprintf(span, sizeof span,
                 "all %llu tenants backlogged from %.1f s (the last one's first delivery) to "
                 "%.1f s (the first one's last)",
                 (unsigned long long)opts->tenants, run->last_start_s, run->first_done_s);
    else
        snprintf(span, sizeof span,
                 "all %llu tenants NEVER backlogged at once: the first was done at %.1f s, the "
                 "last began at %.1f s",
                 (unsigned long long)opts->tenants, run->first_done_s, run->last_start_s);
    printf("    fairness (%s, %llu duplicate deliveries): %s\n"
           "      every tenant: Jain's index min %s, median %s over %zu windows\n"
           "      the tenants backlogged through each window (%llu to %llu): Jain's index min %s "
           "(%llu tenants, at %.1f s), median %s over %zu windows\n",
           run->wait_from_log ? "delivery log" : "ack batches: no delivery log",
           (unsigned long long)run->duplicates, span,
           s_figure(run->all.min, "%.4f", f[4], sizeof f[4]),
           s_figure(run->all.median, "%.4f", f[5], sizeof f[5]), run->all.windows,
           (unsigned long long)(run->active.windows ? run->active.fewest : 0),
           (unsigned long long)run->active.most,
           s_figure(run->active.min, "%.4f", f[8], sizeof f[8]),
           (unsigned long long)run->active.worst_k,
           (double)(run->active.worst_ns - run->start_real_ns) / FQ_BENCH_NS_PER_S,
           s_figure(run->active.median, "%.4f", f[9], sizeof f[9]), run->active.windows);
    printf("    cpu during the load, in cores: %s\n", run->cpu);
    if (!isnan(run->wal_bytes))
        printf("    wal during the load: %.0f MB, %.0f bytes a message; about %.0f full-page "
               "images\n",
               run->wal_bytes / 1e6, run->wal_bytes / (double)opts->messages, run->wal_fpi);
    if (run->http)
        printf("    sink: received %llu requests over %llu connections (kept alive), each a POST "
               "to /hook/TENANT/... with a body and a webhook-signature\n",
               run->sink_requests, run->sink_connections);
    s_activity_t activity = run->activity;
    qsort(activity.statements, activity.kinds, sizeof *activity.statements, s_statement_compare);
    printf("    postgres during the load, backends running each statement on average (%u "
           "samples of pg_stat_activity):",
           activity.samples);
    for (size_t k = 0; k < activity.kinds && k < S_ACTIVITY_SHOWN; k++)
        printf("\n      %4.2f  %s",
               (double)activity.statements[k].seen / (activity.samples ? activity.samples : 1),
               activity.statements[k].label);
    printf("\n");
    char backlog[32], drain_rate[32];
    fq_bench_grouped((double)opts->fairness_messages, backlog, sizeof backlog);
    printf("    fairness, every tenant backlogged first (%s, %llu duplicate deliveries): %s "
           "messages from %llu tenants,\n"
           "      split in %.1f s before the senders started, drained in %.1f s (%s msgs/s)\n"
           "      all backlogged from the first delivery to %.1f s (the first tenant's last; the "
           "last one's first at %.2f s):\n"
           "      Jain's index min %s (at %.1f s), median %s over %zu windows\n",
           run->backlog_from_log ? "delivery log" : "ack batches: no delivery log",
           (unsigned long long)run->backlog_duplicates, backlog, (unsigned long long)opts->tenants,
           run->backlog_split_s, run->backlog_drain_s,
           fq_bench_grouped((double)opts->fairness_messages / run->backlog_drain_s, drain_rate,
                            sizeof drain_rate),
           run->backlog_first_done, run->backlog_last_start,
           s_figure(run->backlog.min, "%.4f", f[4], sizeof f[4]),
           run->backlog.windows
               ? (double)(run->backlog.worst_ns - run->backlog_start_ns) / FQ_BENCH_NS_PER_S
               : 0.0,
           s_figure(run->backlog.median, "%.4f", f[5], sizeof f[5]), run->backlog.windows);
    printf("    memory: %llu requests split in %.1f s; fairqd VmRSS %s MB, VmHWM %s MB (idle at "
           "start: %.1f MB)\n",
           (unsigned long long)opts->requests, run->split_s,
           s_figure(run->rss_mb, "%.1f", f[6], sizeof f[6]),
           s_figure(run->hwm_mb, "%.1f", f[7], sizeof f[7]), run->idle_rss_mb);
    fflush(stdout);
}

//  --channel http: the null transport's load of the same run, beside the
//  http one (run).
static void s_print_null_run(const s_options_t *opts, int index, const s_run_t *null_run,
                             const s_run_t *run)
{
    char rate[32], f[6][32];
    if (null_run->stalled)
        printf("    null transport, the same load in this run (%s): STALLED at %llu acks after "
               "%.1f s (%s msgs/s)\n",
               index % 2 ? "after the http one" : "before the http one",
               (unsigned long long)null_run->stalled_at, null_run->load_s,
               fq_bench_grouped(null_run->stalled_rate, rate, sizeof rate));
    else
        printf("    null transport, the same load in this run (%s): submit %.1f s; pipeline %s "
               "msgs/s (%.1f s), %s of the floor; http / null %s\n",
               index % 2 ? "after the http one" : "before the http one", null_run->submit_s,
               fq_bench_grouped(null_run->rate, rate, sizeof rate), null_run->load_s,
               s_figure(100 * null_run->rate / run->floor, "%.1f%%", f[0], sizeof f[0]),
               s_figure(100 * run->rate / null_run->rate, "%.1f%%", f[1], sizeof f[1]));
    printf("      new tenants: %d probes, %d measured: wait p50 %s ms, p99 %s ms, max %s ms; "
           "fairness of the tenants backlogged: Jain's min %s\n",
           null_run->probes_sent, null_run->probes_measured,
           s_figure(null_run->wait_p50, "%.1f", f[2], sizeof f[2]),
           s_figure(null_run->wait_p99, "%.1f", f[3], sizeof f[3]),
           s_figure(null_run->wait_max, "%.1f", f[4], sizeof f[4]),
           s_figure(null_run->active.min, "%.4f", f[5], sizeof f[5]));
    printf("      cpu during the load, in cores: %s\n", null_run->cpu);
    (void)opts;
    fflush(stdout);
}

//  ---------------------------------------------------------------------
//  Set-up and command line

static int s_bench_setup(s_bench_t *self, const s_options_t *opts)
{
    const char *fairqd = getenv("FQ_FAIRQD"), *sender = getenv("FQ_SENDER");
    const char *sink = getenv("FQ_SINK");
    self->fairqd = fairqd && *fairqd ? fairqd : FQ_FAIRQD_PATH;
    self->sender = sender && *sender ? sender : FQ_SENDER_PATH;
    self->sink = sink && *sink ? sink : FQ_SINK_PATH;
    //  The sink only with --channel http
    const char *programs[] = {self->fairqd, self->sender, self->sink};
    int nprograms = opts->http ? 3 : 2;
    for (int i = 0; i < nprograms; i++)
        if (access(programs[i], X_OK) != 0) {
            fprintf(stderr, S_PROGRAM ": cannot run %s: %s\n", programs[i], strerror(errno));
            return -1;
        }
    snprintf(self->dir, sizeof self->dir, "/tmp/" S_PROGRAM ".XXXXXX");
    if (!mkdtemp(self->dir)) {
        fprintf(stderr, S_PROGRAM ": could not create a directory for the logs: %s\n",
                strerror(errno));
        self->dir[0] = 0;
        return -1;
    }
    //  The children run through links of their own names, so that a broad
    //  `pkill fairq-sender` or `pkill fairqd` by someone else on the same
    //  machine does not stop them (as tests/e2e/fq_e2e.py does)
    snprintf(self->fairqd_link, sizeof self->fairqd_link, "%s/" S_FAIRQD_LINK, self->dir);
    snprintf(self->sender_link, sizeof self->sender_link, "%s/" S_SENDER_LINK, self->dir);
    snprintf(self->sink_link, sizeof self->sink_link, "%s/" S_SINK_LINK, self->dir);
    const char *links[] = {self->fairqd_link, self->sender_link, self->sink_link};
    for (int i = 0; i < nprograms; i++) {
        char *target = realpath(programs[i], NULL);
        int rc = target ? symlink(target, links[i]) : -1;
        free(target);
        if (rc) {
            fprintf(stderr, S_PROGRAM ": could not link %s to %s: %s\n", links[i], programs[i],
                    strerror(errno));
            return -1;
        }
    }
    self->curve = !opts->insecure;
    if (self->curve && s_certs_make(self, opts))
        return -1;
    uint64_t per = opts->messages / opts->tenants;
    self->recipients = s_recipients_json(per);
    self->fairness_recipients = s_recipients_json(opts->fairness_messages / opts->tenants);
    self->requests = calloc(opts->tenants, sizeof *self->requests);
    self->raw_ids = calloc(opts->messages, sizeof *self->raw_ids);
    self->raw_order = calloc(opts->messages, sizeof *self->raw_order);
    self->probes = calloc((size_t)opts->probes + 1, sizeof *self->probes);
    if (!self->recipients || !self->fairness_recipients || !self->requests || !self->raw_ids ||
        !self->raw_order || !self->probes) {
        fprintf(stderr, S_PROGRAM ": out of memory\n");
        return -1;
    }
    return 0;
}

//  Prints the server's settings and finds its postmaster (the parent of
//  this connection's backend), whose processes the CPU figures group.
static int s_server(s_bench_t *self)
{
    PGconn *conn = PQconnectdb("dbname=postgres");
    if (PQstatus(conn) != CONNECTION_OK) {
        fprintf(stderr, S_PROGRAM ": could not connect to database: %s", PQerrorMessage(conn));
        PQfinish(conn);
        return -1;
    }
    char backend[32] = "", path[64], comm[64];
    uint64_t ticks;
    int rc = fq_bench_print_settings(S_PROGRAM, conn);
    if (rc == 0)
        rc = fq_bench_value(S_PROGRAM, conn, "SELECT pg_backend_pid()", NULL, backend,
                            sizeof backend, "read the backend's pid");
    //  While the connection is open: its backend ends with it
    snprintf(path, sizeof path, "/proc/%s/stat", backend);
    if (rc || s_read_stat(path, comm, sizeof comm, &self->postmaster, &ticks))
        self->postmaster = 0; //  Not on this machine: no postgres figure
    PQfinish(conn);
    if (rc)
        return -1;
    printf("postgres:   %s\n", self->postmaster ? "on this machine (its CPU is counted)"
                                                : "not on this machine (its CPU is not counted)");
    return 0;
}

static void s_bench_destroy(s_bench_t *self)
{
    s_children_kill(self);
    s_database_close(self);
    free(self->recipients);
    free(self->fairness_recipients);
    free(self->requests);
    free(self->request_array);
    free(self->raw_ids);
    free(self->raw_order);
    free(self->probes);
    free(self->deliveries);
    fq_bench_text_free(&self->text);
}

static void s_usage(FILE *out)
{
    fprintf(out,
            "usage: " S_PROGRAM " [--messages N] [--tenants T] [--senders S]\n"
            "                         [--concurrency C] [--fairness-messages F]\n"
            "                         [--runs R] [--insecure] [--no-probes] [--scale] [--quick]\n"
            "                         [--curve C] [--channel email|http] [--sink-threads N]\n"
            "  --messages N     messages of the load, a multiple of T (default %d)\n"
            "  --tenants T      tenants of the load, one request each (default %d)\n"
            "  --senders S      fairq-sender processes, null transport (default %d)\n"
            "  --concurrency C  each sender's concurrency, its credit (default %d)\n"
            "  --fairness-messages F\n"
            "                   the fairness phase's backlog, a multiple of T, split\n"
            "                   before the senders start (default T x %d)\n"
            "  --runs R         repetitions (default %d, max %d; an even count balances\n"
            "                   which of the pipeline and its floor goes first)\n"
            "  --insecure       the gateway without CURVE (production runs with it)\n"
            "  --no-probes      no new tenants during the load: the control for the\n"
            "                   probes' own cost to the throughput\n"
            "  --scale          the cost curves instead: dispatch rate, fairqd CPU per\n"
            "                   message and RSS with 10 to 10,000 tenants, 10,000 and\n"
            "                   100,000 requests, 1 to 50 million messages pending\n"
            "                   (R runs of each point)\n"
            "  --curve C        with --scale, only the curve C: tenants, requests or\n"
            "                   backlog\n"
            "  --quick          %d messages from %d tenants, %d probes, T x %d messages in\n"
            "                   the fairness phase, %d active requests in the memory\n"
            "                   test: a smoke run, not figures\n"
            "  --channel http   the requests as signed webhooks (POST, a JSON body) to a\n"
            "                   local sink (fq_bench_sink), the senders serving --channels\n"
            "                   http; each run also measures the same load with the null\n"
            "                   transport, beside it (email: the default, mail alone)\n"
            "  --sink-threads N with --channel http, the sink's threads (default %d)\n"
            "Connects with the PG* environment, e.g. under pg_virtualenv -t -v 15. Runs\n"
            "the fairqd and fairq-sender it was built with; FQ_FAIRQD and FQ_SENDER\n"
            "name others (FQ_SINK: the sink of --channel http).\n",
            S_DEFAULT_MESSAGES, S_DEFAULT_TENANTS, S_DEFAULT_SENDERS, S_DEFAULT_CONCURRENCY,
            S_DEFAULT_FAIRNESS_RECIPIENTS, S_DEFAULT_RUNS, FQ_BENCH_MAX_RUNS, S_QUICK_MESSAGES,
            S_QUICK_TENANTS, S_QUICK_PROBES, S_QUICK_FAIRNESS_RECIPIENTS, S_QUICK_REQUESTS,
            S_DEFAULT_SINK_THREADS);
}

static int s_parse_args(int argc, char **argv, s_options_t *opts)
{
    //  The fairness phase's messages follow from the tenants, below
    *opts = (s_options_t){S_DEFAULT_MESSAGES,
                          S_DEFAULT_TENANTS,
                          S_DEFAULT_SENDERS,
                          S_DEFAULT_CONCURRENCY,
                          S_DEFAULT_RUNS,
                          S_DEFAULT_PROBES,
                          S_DEFAULT_REQUESTS,
                          0,
                          false,
                          false,
                          false,
                          NULL,
                          false,
                          S_DEFAULT_SINK_THREADS};
    uint64_t messages = 0, tenants = 0, runs = 0, fairness = 0;
    uint64_t fairness_per = S_DEFAULT_FAIRNESS_RECIPIENTS;
    bool quick = false, no_probes = false;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        const char *value = i + 1 < argc ? argv[i + 1] : "";
        int rc = 0;
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            s_usage(stdout);
            exit(0);
        }
        if (strcmp(arg, "--quick") == 0) {
            quick = true;
            continue;
        }
        if (strcmp(arg, "--insecure") == 0) {
            opts->insecure = true;
            continue;
        }
        if (strcmp(arg, "--scale") == 0) {
            opts->scale = true;
            continue;
        }
        if (strcmp(arg, "--no-probes") == 0) {
            no_probes = true;
            continue;
        }
        if (strcmp(arg, "--curve") == 0) {
            rc = strcmp(value, "tenants") && strcmp(value, "requests") && strcmp(value, "backlog");
            opts->curve = value;
        } else if (strcmp(arg, "--channel") == 0) {
            rc = strcmp(value, "email") && strcmp(value, "http");
            opts->http = strcmp(value, "http") == 0;
        } else if (strcmp(arg, "--sink-threads") == 0)
            rc = fq_bench_parse_count(value, S_MAX_SINK_THREADS, &opts->sink_threads);
        else if (strcmp(arg, "--messages") == 0)
            rc = fq_bench_parse_count(value, S_MAX_MESSAGES, &messages);
        else if (strcmp(arg, "--tenants") == 0)
            rc = fq_bench_parse_count(value, S_MAX_TENANTS, &tenants);
        else if (strcmp(arg, "--senders") == 0)
            rc = fq_bench_parse_count(value, S_MAX_SENDERS, &opts->senders);
        else if (strcmp(arg, "--concurrency") == 0)
            rc = fq_bench_parse_count(value, S_MAX_CONCURRENCY, &opts->concurrency);
        else if (strcmp(arg, "--fairness-messages") == 0)
            rc = fq_bench_parse_count(value, S_MAX_MESSAGES, &fairness);
        else if (strcmp(arg, "--runs") == 0)
            rc = fq_bench_parse_count(value, FQ_BENCH_MAX_RUNS, &runs);
        else {
            fprintf(stderr, S_PROGRAM ": unknown option: %s\n", arg);
            s_usage(stderr);
            return -1;
        }
        if (rc) {
            fprintf(stderr, S_PROGRAM ": bad value for %s: '%s'\n", arg, value);
            s_usage(stderr);
            return -1;
        }
        i++; //  The value
    }
    //  --quick sets small counts; explicit ones still win
    opts->quick = quick;
    if (quick) {
        opts->messages = S_QUICK_MESSAGES;
        opts->tenants = S_QUICK_TENANTS;
        opts->probes = S_QUICK_PROBES;
        opts->requests = S_QUICK_REQUESTS;
        fairness_per = S_QUICK_FAIRNESS_RECIPIENTS;
    }
    opts->probes = no_probes ? 0 : opts->probes;
    opts->messages = messages ? messages : opts->messages;
    opts->tenants = tenants ? tenants : opts->tenants;
    opts->runs = runs ? (int)runs : opts->runs;
    opts->fairness_messages = fairness ? fairness : opts->tenants * fairness_per;
    if (opts->http && opts->scale) {
        //  The curves write their backlog straight into the tables, as mail
        fprintf(stderr, S_PROGRAM ": --scale measures mail only: no --channel http with it\n");
        s_usage(stderr);
        return -1;
    }
    if (opts->messages % opts->tenants || opts->messages / opts->tenants > S_MAX_PER_REQUEST) {
        fprintf(stderr,
                S_PROGRAM ": --messages must be a multiple of --tenants, at most %d per tenant\n",
                S_MAX_PER_REQUEST);
        s_usage(stderr);
        return -1;
    }
    if (opts->fairness_messages % opts->tenants ||
        opts->fairness_messages / opts->tenants > S_MAX_PER_REQUEST ||
        opts->fairness_messages > S_MAX_MESSAGES) {
        fprintf(stderr,
                S_PROGRAM ": --fairness-messages must be a multiple of --tenants, at most %d per "
                          "tenant and %d in all\n",
                S_MAX_PER_REQUEST, S_MAX_MESSAGES);
        s_usage(stderr);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    s_options_t opts;
    if (s_parse_args(argc, argv, &opts))
        return 2;
    //  Children die with this program, whichever way it ends
    atexit(s_kill_children);
    signal(SIGINT, s_on_signal);
    signal(SIGTERM, s_on_signal);
    signal(SIGHUP, s_on_signal);
    s_bench_t bench = {0};
    s_run_t *runs = calloc((size_t)opts.runs, sizeof *runs);
    //  --channel http: the null loads of the same runs
    s_run_t *null_runs = calloc((size_t)opts.runs, sizeof *null_runs);
    int rc = runs && null_runs ? s_bench_setup(&bench, &opts) : -1;
    if (rc == 0) {
        s_print_header(&bench, &opts);
        rc = s_server(&bench);
    }
    //  A run that fails (a child dies, a query fails) is left out and the
    //  next one tried: the benchmark then fails at the end
    int completed = 0, failed = 0, stalled = 0;
    if (rc == 0 && opts.scale) {
        failed = s_scale(&bench, &opts, opts.quick) != 0;
        opts.runs = 0;
    }
    for (int i = 0; rc == 0 && i < opts.runs; i++) {
        s_run_t *run = &runs[completed], *null_run = &null_runs[completed];
        s_run_init(run);
        s_run_init(null_run);
        //  --channel http: the null load first in even runs, after in odd
        bool null_first = opts.http && i % 2 == 0, null_after = opts.http && !null_first;
        if ((null_first && s_run_load(&bench, &opts, i, null_run, false, false)) ||
            s_run_load(&bench, &opts, i, run, opts.http, true) ||
            (null_after && s_run_load(&bench, &opts, i, null_run, false, false)) ||
            s_run_fairness(&bench, &opts, i, run) || s_run_memory(&bench, &opts, i, run)) {
            s_children_kill(&bench);
            s_database_close(&bench);
            printf("run %d/%d FAILED (said above; the logs are in %s)\n", i + 1, opts.runs,
                   bench.dir);
            fflush(stdout);
            failed++;
            continue;
        }
        s_print_run(&opts, i, run);
        if (opts.http)
            s_print_null_run(&opts, i, null_run, run);
        stalled += run->stalled + (opts.http && null_run->stalled);
        completed++;
    }
    if (rc == 0 && completed) {
        printf("\n");
        s_print_table(&opts, runs, opts.http ? null_runs : NULL, completed);
        if (opts.http)
            s_print_cpu_table(runs, null_runs, completed);
    }
    if (rc || failed || stalled || bench.child_failed)
        fprintf(stderr, S_PROGRAM ": %s; the logs are in %s\n",
                rc        ? "failed"
                : failed  ? "some runs failed"
                : stalled ? "the load stalled"
                          : "a child ended badly",
                bench.dir);
    s_bench_destroy(&bench);
    free(runs);
    free(null_runs);
    return rc || failed || stalled || bench.child_failed ? 1 : 0;
}
