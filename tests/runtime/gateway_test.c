/*  gateway_test.c — the remote gateway between processes: CURVE allow and
    refusal, death watch of a killed peer, reconnect (after a clean stop and
    after a crash), remote stop, hostile input (malformed and forged frames,
    a peer that never reads), a welcomed peer that asks and never reads the
    replies (dropped, without holding up the others), insecure mode, a port
    already in use, and a throughput sanity check.

    Most tests run the far system in a process of its own, fq_test_peer
    (fq_test_peer.c), started with posix_spawn: once CZMQ runs its threads
    a process must never fork without exec. Heartbeats are short (100 ms,
    dead after 600 ms) so that deaths show within a second.

    Only one CURVE-bound gateway runs in a process at a time (zauth serves
    the process-wide ZAP endpoint; see test_one_curve_server_per_process).
*/
#include "fq_gateway.h"
#include "fq_test_admit.h"
#include "fq_test_msgs.h"
#include <errno.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <cmocka.h>
#include "fq_test_port.h"

extern char **environ;

#ifndef FQ_TEST_PEER_PATH
#define FQ_TEST_PEER_PATH "fq_test_peer"
#endif

#define S_GATEWAY "/system/gateway"

//  Short heartbeats, so that a dead peer shows within a second.
#define S_HEARTBEAT_MS         100
#define S_HEARTBEAT_TIMEOUT_MS 600
#define S_RECONNECT_MIN_MS     50
#define S_RECONNECT_MAX_MS     400

//  Generous bounds for things that normally take milliseconds: sanitizers
//  and a loaded machine slow process start and CURVE handshakes down.
#define S_READY_TIMEOUT_MS   10000
#define S_EXIT_TIMEOUT_MS    10000
#define S_ASK_TIMEOUT_MS     3000
#define S_CONNECT_TIMEOUT_MS 5000

//  fq_test_peer's exit code when it was never welcomed.
#define S_PEER_NOT_CONNECTED 3
//  How long a peer that should be refused keeps trying before it gives up.
#define S_REFUSED_TRY_MS 1500

//  The death of a killed peer must be reported within this.
#define S_DEATH_NOTICE_MAX_MS 3000
//  A refused ask must fail this fast: it is not a time-out.
#define S_PROMPT_MS 1000

//  Random frames sent to the gateway, and their largest size.
#define S_NOISE_FRAMES   200
#define S_NOISE_MAX_SIZE 64

//  A flood big enough to fill a non-reading peer's pipe and socket buffers
//  several times over (its kernel receive buffer kept small on purpose).
#define S_FLOOD_FRAMES 300000
#define S_FLOOD_RCVBUF 4096

//  A welcomed peer that asks and never reads the answers: its asks carry
//  this much text (the echo's small replies are what fill its pipe, so
//  their number matters, not the asks' size), the flood goes on this long
//  at most, and the well-behaved peer's asks meanwhile must each be
//  answered within S_STALL_ASK_MAX_MS (well under a second normally;
//  sanitizers slow everything down). Once the staller is dropped, the
//  flood goes on S_STALL_AFTER_MS more.
#define S_STALL_TEXT_SIZE  256
#define S_STALL_FLOOD_MS   8000
#define S_STALL_ASK_MAX_MS 1500
#define S_STALL_AFTER_MS   500

#define S_THROUGHPUT_TELLS  50000
#define S_THROUGHPUT_ASK_MS 60000

//  "tcp://127.0.0.1:port" followed by path ("" for the bare endpoint).
static char *s_address(char *buf, size_t size, int port, const char *path)
{
    snprintf(buf, size, "tcp://127.0.0.1:%d%s", port, path);
    return buf;
}

//  ---------------------------------------------------------------------
//  Keys: a temporary directory with the server's certificate, peers'
//  certificates (secret included) and allow/, the public certificates the
//  bound side lets in.

typedef struct {
    char dir[64];
    char allow[96];
    zcert_t *server;
} s_keys_t;

//  The keys directory of the running test, removed by the teardown if the
//  test fails before it does.
static char s_keys_dir[64];

static void s_remove_dir(const char *path)
{
    zdir_t *dir = zdir_new(path, NULL);
    if (dir) {
        zdir_remove(dir, true);
        zdir_destroy(&dir);
    }
}

static void s_keys_new(s_keys_t *keys)
{
    snprintf(keys->dir, sizeof keys->dir, "/tmp/fq-gateway-test-XXXXXX");
    assert_non_null(mkdtemp(keys->dir));
    snprintf(s_keys_dir, sizeof s_keys_dir, "%s", keys->dir);
    snprintf(keys->allow, sizeof keys->allow, "%s/allow", keys->dir);
    assert_int_equal(zsys_dir_create("%s", keys->allow), 0);
    keys->server = zcert_new();
    assert_non_null(keys->server);
}

//  A new certificate for name, saved as dir/name.cert (for fq_test_peer's
//  cert_file) and, if allowed, listed in allow/. Caller destroys it.
static zcert_t *s_keys_add(s_keys_t *keys, const char *name, bool allowed, char *path,
                           size_t path_size)
{
    zcert_t *cert = zcert_new();
    assert_non_null(cert);
    snprintf(path, path_size, "%s/%s.cert", keys->dir, name);
    assert_int_equal(zcert_save(cert, path), 0);
    if (allowed) {
        char public_path[256];
        snprintf(public_path, sizeof public_path, "%s/%s.cert", keys->allow, name);
        assert_int_equal(zcert_save_public(cert, public_path), 0);
    }
    return cert;
}

static void s_keys_destroy(s_keys_t *keys)
{
    s_remove_dir(keys->dir);
    s_keys_dir[0] = 0;
    zcert_destroy(&keys->server);
}

//  ---------------------------------------------------------------------
//  Peer processes (fq_test_peer)

typedef struct {
    pid_t pid;
    int in;  //  Our end of its stdin: commands
    int out; //  Our end of its stdout: "ready" and answers
    char line[256];
    size_t used;
} s_peer_t;

//  Peers still running, killed by s_teardown if a test fails midway.
#define S_PEERS_MAX 8
static pid_t s_running[S_PEERS_MAX];

static void s_running_set(pid_t old, pid_t pid)
{
    for (int i = 0; i < S_PEERS_MAX; i++)
        if (s_running[i] == old) {
            s_running[i] = pid;
            return;
        }
}

static const char *s_peer_program(void)
{
    const char *path = getenv("FQ_TEST_PEER");
    return path && *path ? path : FQ_TEST_PEER_PATH;
}

//  Starts fq_test_peer MODE NAME tcp://127.0.0.1:PORT CERT_FILE KEY_OR_DIR
//  TIMEOUT_MS (see fq_test_peer.c) with pipes on its stdin and stdout.
static void s_peer_start(s_peer_t *peer, const char *mode, const char *name, int port,
                         const char *cert_file, const char *key_or_dir, int timeout_ms)
{
    memset(peer, 0, sizeof *peer);
    int in[2], out[2];
    assert_int_equal(pipe2(in, O_CLOEXEC), 0);
    assert_int_equal(pipe2(out, O_CLOEXEC), 0);
    char endpoint[64], timeout[16];
    s_address(endpoint, sizeof endpoint, port, "");
    snprintf(timeout, sizeof timeout, "%d", timeout_ms);
    const char *program = s_peer_program();
    char *argv[] = {(char *)program,   (char *)mode,       (char *)name, endpoint,
                    (char *)cert_file, (char *)key_or_dir, timeout,      NULL};
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in[0], STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
    int rc = posix_spawn(&peer->pid, program, &actions, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    close(in[0]);
    close(out[1]);
    peer->in = in[1];
    peer->out = out[0];
    if (rc != 0)
        fail_msg("could not start %s: %s", program, strerror(rc));
    s_running_set(0, peer->pid);
}

//  Reads the peer's next line into line. Returns 0, or -1 at end of
//  output or after timeout_ms.
static int s_peer_read_line(s_peer_t *peer, int timeout_ms, char *line, size_t size)
{
    int64_t deadline = zclock_mono() + timeout_ms;
    while (true) {
        char *newline = memchr(peer->line, '\n', peer->used);
        if (newline) {
            size_t len = (size_t)(newline - peer->line);
            snprintf(line, size, "%.*s", (int)len, peer->line);
            peer->used -= len + 1;
            memmove(peer->line, newline + 1, peer->used);
            return 0;
        }
        int64_t wait = deadline - zclock_mono();
        if (wait <= 0 || peer->used == sizeof peer->line)
            return -1;
        struct pollfd item = {.fd = peer->out, .events = POLLIN};
        int rc = poll(&item, 1, (int)wait);
        if (rc < 0 && errno == EINTR)
            continue;
        if (rc <= 0)
            return -1;
        ssize_t got = read(peer->out, peer->line + peer->used, sizeof peer->line - peer->used);
        if (got <= 0)
            return -1;
        peer->used += (size_t)got;
    }
}

static void s_peer_expect_line(s_peer_t *peer, const char *expected, int timeout_ms)
{
    char line[256];
    if (s_peer_read_line(peer, timeout_ms, line, sizeof line) != 0)
        fail_msg("peer %d said nothing within %d ms (wanted \"%s\")", (int)peer->pid, timeout_ms,
                 expected);
    assert_string_equal(line, expected);
}

static void s_peer_command(s_peer_t *peer, const char *command)
{
    size_t len = strlen(command);
    assert_int_equal(write(peer->in, command, len), (ssize_t)len);
}

//  Waits up to timeout_ms for the peer to end. Returns its exit code,
//  128 + the signal that killed it, or -1 while it still runs.
static int s_peer_wait(s_peer_t *peer, int timeout_ms)
{
    int64_t deadline = zclock_mono() + timeout_ms;
    while (peer->pid > 0) {
        int status;
        pid_t rc = waitpid(peer->pid, &status, WNOHANG);
        if (rc == peer->pid) {
            s_running_set(peer->pid, 0);
            peer->pid = 0;
            return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        }
        if (rc < 0 && errno != EINTR)
            fail_msg("waitpid: %s", strerror(errno));
        if (zclock_mono() >= deadline)
            return -1;
        zclock_sleep(10);
    }
    return -1;
}

//  Closes our ends of the pipes; a peer still running is killed.
static void s_peer_destroy(s_peer_t *peer)
{
    if (peer->pid > 0) {
        kill(peer->pid, SIGKILL);
        waitpid(peer->pid, NULL, 0);
        s_running_set(peer->pid, 0);
        peer->pid = 0;
    }
    if (peer->in > 0)
        close(peer->in);
    if (peer->out > 0)
        close(peer->out);
    peer->in = peer->out = -1;
}

//  Ends the peer politely and checks that it exits cleanly (its own
//  sanitizers included).
static void s_peer_quit(s_peer_t *peer)
{
    s_peer_command(peer, "quit\n");
    assert_int_equal(s_peer_wait(peer, S_EXIT_TIMEOUT_MS), 0);
    s_peer_destroy(peer);
}

//  After each test: what a failed test left behind, its peers still
//  running and its keys directory, goes.
static int s_teardown(void **unused)
{
    (void)unused;
    for (int i = 0; i < S_PEERS_MAX; i++)
        if (s_running[i] > 0) {
            kill(s_running[i], SIGKILL);
            waitpid(s_running[i], NULL, 0);
            s_running[i] = 0;
        }
    if (s_keys_dir[0]) {
        s_remove_dir(s_keys_dir);
        s_keys_dir[0] = 0;
    }
    return 0;
}

//  ---------------------------------------------------------------------
//  Actors

static int s_echo_receive(fq_ctx_t *ctx, void *state, const fq_msg_t *msg)
{
    (void)state;
    fq_ping_t ping;
    if (fq_msg_decode(msg, &fq_ping_desc, &ping))
        return 0;
    fq_pong_t pong = {.seq = ping.seq + 1, .text = msg->sender};
    return fq_reply(ctx, msg, &fq_pong_desc, &pong);
}
static const fq_behaviour_t s_echo = {.name = "echo", .receive = s_echo_receive};

//  Counts TICKs, and those that did not come in order; answers TALLY.
typedef struct {
    uint64_t received;
    uint64_t misordered;
    uint64_t next;
} s_counter_t;

static int s_counter_start(fq_ctx_t *ctx, void *args, void **state_p)
{
    (void)ctx;
    (void)args;
    *state_p = calloc(1, sizeof(s_counter_t));
    return *state_p ? 0 : FQ_ENOMEM;
}

static int s_counter_receive(fq_ctx_t *ctx, void *state, const fq_msg_t *msg)
{
    s_counter_t *self = state;
    fq_tick_t tick;
    if (fq_msg_decode(msg, &fq_tick_desc, &tick) == 0) {
        self->received++;
        if (tick.n != self->next)
            self->misordered++;
        self->next = tick.n + 1;
        return 0;
    }
    fq_tally_t tally = {.received = self->received, .misordered = self->misordered};
    return msg->type == FQ_MSG_TALLY ? fq_reply(ctx, msg, &fq_tally_desc, &tally) : 0;
}

static void s_counter_stop(fq_ctx_t *ctx, void *state)
{
    (void)ctx;
    free(state);
}

static const fq_behaviour_t s_counter = {.name = "counter",
                                         .start = s_counter_start,
                                         .receive = s_counter_receive,
                                         .stop = s_counter_stop};

//  ---------------------------------------------------------------------
//  Systems and gateways

//  A system with an echo actor at /user/echo.
static fq_system_t *s_system(const char *name)
{
    fq_system_t *sys = fq_system_new(&(fq_system_config_t){.name = name});
    assert_non_null(sys);
    assert_int_equal(fq_system_spawn(sys, "echo", &s_echo, NULL, NULL), 0);
    return sys;
}

static fq_gateway_config_t s_gateway_config(void)
{
    return (fq_gateway_config_t){.admit = fq_test_admit_mesh,
                                 .admit_count = FQ_TEST_ADMIT_MESH_COUNT,
                                 .heartbeat_ms = S_HEARTBEAT_MS,
                                 .heartbeat_timeout_ms = S_HEARTBEAT_TIMEOUT_MS,
                                 .reconnect_min_ms = S_RECONNECT_MIN_MS,
                                 .reconnect_max_ms = S_RECONNECT_MAX_MS};
}

//  Binds sys's gateway on port with CURVE, letting in keys->allow.
static void s_bind_curve(fq_system_t *sys, int port, const s_keys_t *keys)
{
    char endpoint[64];
    s_address(endpoint, sizeof endpoint, port, "");
    fq_gateway_config_t cfg = s_gateway_config();
    cfg.bind = endpoint;
    cfg.cert = keys->server;
    cfg.allow_dir = keys->allow;
    assert_int_equal(fq_gateway_start(sys, &cfg), 0);
}

//  Connects sys's gateway to port: with CURVE (cert and server_key), or
//  without it when cert is NULL.
static void s_connect(fq_system_t *sys, int port, zcert_t *cert, const char *server_key)
{
    char endpoint[64];
    s_address(endpoint, sizeof endpoint, port, "");
    fq_gateway_config_t cfg = s_gateway_config();
    cfg.connect = endpoint;
    cfg.cert = cert;
    cfg.server_key = server_key;
    cfg.insecure = cert == NULL;
    assert_int_equal(fq_gateway_start(sys, &cfg), 0);
}

static fq_gw_status_t s_status(fq_system_t *sys)
{
    fq_client_t *client = fq_client_new(sys);
    assert_non_null(client);
    fq_msg_t reply;
    fq_gw_status_t status;
    assert_int_equal(fq_client_ask(client, S_GATEWAY, &fq_gw_status_query_desc,
                                   &(fq_gw_status_query_t){0}, S_ASK_TIMEOUT_MS, &reply),
                     0);
    assert_int_equal(fq_msg_decode(&reply, &fq_gw_status_desc, &status), 0);
    fq_client_destroy(&client);
    return status;
}

//  Polls the gateway's status until fn holds, for up to timeout_ms.
static bool s_status_until(fq_system_t *sys, bool (*fn)(const fq_gw_status_t *, uint64_t),
                           uint64_t arg, int timeout_ms)
{
    int64_t deadline = zclock_mono() + timeout_ms;
    do {
        fq_gw_status_t status = s_status(sys);
        if (fn(&status, arg))
            return true;
        zclock_sleep(20);
    } while (zclock_mono() < deadline);
    return false;
}

static bool s_has_peers(const fq_gw_status_t *status, uint64_t peers)
{
    return status->peers == peers;
}

static bool s_is_connected(const fq_gw_status_t *status, uint64_t connected)
{
    return status->connected == (bool)connected;
}

static bool s_refused_past(const fq_gw_status_t *status, uint64_t refused)
{
    return status->refused > refused;
}

//  Asks the echo at address; checks its PONG and returns the ask's status.
static int s_ping(fq_client_t *client, const char *address, uint64_t seq)
{
    fq_msg_t reply;
    fq_ping_t ping = {.seq = seq, .text = "ping"};
    int rc = fq_client_ask(client, address, &fq_ping_desc, &ping, S_ASK_TIMEOUT_MS, &reply);
    if (rc == 0) {
        fq_pong_t pong;
        assert_int_equal(fq_msg_decode(&reply, &fq_pong_desc, &pong), 0);
        assert_int_equal(pong.seq, seq + 1);
    }
    return rc;
}

//  Waits for a TERMINATED notice to client and checks what it says.
static void s_expect_terminated(fq_client_t *client, int timeout_ms, const char *path, bool failed)
{
    fq_msg_t msg;
    int rc;
    while ((rc = fq_client_recv(client, timeout_ms, &msg)) == 0 && msg.type != FQ_MSG_TERMINATED)
        ;
    if (rc)
        fail_msg("no TERMINATED for %s within %d ms: %s", path, timeout_ms, fq_err_name(rc));
    fq_terminated_t notice;
    assert_int_equal(fq_msg_decode(&msg, &fq_terminated_desc, &notice), 0);
    assert_string_equal(notice.path, path);
    assert_int_equal(notice.failed, failed);
}

//  ---------------------------------------------------------------------
//  1. CURVE, allowed: a peer process whose key is listed joins, and the
//  bound side reaches its actors by its system name.

static void test_curve_allowed(void **unused)
{
    (void)unused;
    int port = fq_test_free_port();
    s_keys_t keys;
    s_keys_new(&keys);
    char cert_file[256];
    zcert_t *cert = s_keys_add(&keys, "alpha", true, cert_file, sizeof cert_file);
    fq_system_t *hub = s_system("hub");
    s_bind_curve(hub, port, &keys);

    s_peer_t peer;
    s_peer_start(&peer, "connect", "alpha", port, cert_file, zcert_public_txt(keys.server),
                 S_READY_TIMEOUT_MS);
    s_peer_expect_line(&peer, "ready", S_READY_TIMEOUT_MS);
    assert_int_equal(s_status(hub).peers, 1);

    fq_client_t *client = fq_client_new(hub);
    fq_msg_t reply;
    fq_ping_t ping = {.seq = 41, .text = "hello"};
    assert_int_equal(fq_client_ask(client, "fq://alpha/user/echo", &fq_ping_desc, &ping,
                                   S_ASK_TIMEOUT_MS, &reply),
                     0);
    fq_pong_t pong;
    assert_int_equal(fq_msg_decode(&reply, &fq_pong_desc, &pong), 0);
    assert_int_equal(pong.seq, 42);
    //  The far side saw the asker as a remote address that leads back here
    char asker[128];
    snprintf(asker, sizeof asker, "fq://hub%s", fq_client_address(client));
    assert_string_equal(pong.text, asker);

    //  A peer that quits says BYE: it is soon gone from the hub (at once,
    //  normally; at the latest after the heartbeat timeout), and asks to it
    //  then fail at once
    s_peer_quit(&peer);
    assert_true(s_status_until(hub, s_has_peers, 0, S_DEATH_NOTICE_MAX_MS));
    assert_int_equal(s_ping(client, "fq://alpha/user/echo", 1), FQ_EPEER);

    fq_client_destroy(&client);
    fq_system_destroy(&hub);
    zcert_destroy(&cert);
    s_keys_destroy(&keys);
}

//  ---------------------------------------------------------------------
//  2. CURVE, refused: a peer whose key is not in the allow list never
//  joins; the hub counts no peer and asks to that name fail at once.

static void test_curve_refused(void **unused)
{
    (void)unused;
    int port = fq_test_free_port();
    s_keys_t keys;
    s_keys_new(&keys);
    char allowed_file[256], intruder_file[256];
    zcert_t *allowed = s_keys_add(&keys, "alpha", true, allowed_file, sizeof allowed_file);
    zcert_t *intruder = s_keys_add(&keys, "intruder", false, intruder_file, sizeof intruder_file);
    fq_system_t *hub = s_system("hub");
    s_bind_curve(hub, port, &keys);
    fq_client_t *client = fq_client_new(hub);

    s_peer_t peer;
    s_peer_start(&peer, "connect", "intruder", port, intruder_file, zcert_public_txt(keys.server),
                 S_REFUSED_TRY_MS);
    int code;
    while ((code = s_peer_wait(&peer, 100)) == -1) {
        //  While it keeps trying
        assert_int_equal(s_status(hub).peers, 0);
        int64_t start = zclock_mono();
        assert_int_equal(s_ping(client, "fq://intruder/user/echo", 1), FQ_EPEER);
        assert_true(zclock_mono() - start < S_PROMPT_MS);
    }
    assert_int_equal(code, S_PEER_NOT_CONNECTED);
    //  It never said ready
    char line[64];
    assert_int_equal(s_peer_read_line(&peer, S_HEARTBEAT_MS, line, sizeof line), -1);
    assert_int_equal(s_status(hub).peers, 0);

    s_peer_destroy(&peer);
    fq_client_destroy(&client);
    fq_system_destroy(&hub);
    zcert_destroy(&allowed);
    zcert_destroy(&intruder);
    s_keys_destroy(&keys);
}

//  ---------------------------------------------------------------------
//  3. Death watch: a watched peer killed outright (no BYE) is reported
//  TERMINATED, failed, once its heartbeats stop.

static void test_death_watch_on_kill(void **unused)
{
    (void)unused;
    int port = fq_test_free_port();
    s_keys_t keys;
    s_keys_new(&keys);
    char cert_file[256];
    zcert_t *cert = s_keys_add(&keys, "victim", true, cert_file, sizeof cert_file);
    fq_system_t *hub = s_system("hub");
    s_bind_curve(hub, port, &keys);

    s_peer_t peer;
    s_peer_start(&peer, "connect", "victim", port, cert_file, zcert_public_txt(keys.server),
                 S_READY_TIMEOUT_MS);
    s_peer_expect_line(&peer, "ready", S_READY_TIMEOUT_MS);

    fq_client_t *client = fq_client_new(hub);
    assert_int_equal(fq_client_watch(client, "fq://victim/user/echo"), 0);
    //  The ask follows the watch through the gateway's mailbox: once it is
    //  answered, the watch is in place on both sides
    assert_int_equal(s_ping(client, "fq://victim/user/echo", 1), 0);

    assert_int_equal(kill(peer.pid, SIGKILL), 0);
    int64_t killed = zclock_mono();
    s_expect_terminated(client, S_DEATH_NOTICE_MAX_MS * 2, "fq://victim/user/echo", true);
    int64_t elapsed = zclock_mono() - killed;
    print_message("death noticed after %lld ms\n", (long long)elapsed);
    assert_true(elapsed < S_DEATH_NOTICE_MAX_MS);
    assert_int_equal(s_peer_wait(&peer, S_EXIT_TIMEOUT_MS), 128 + SIGKILL);
    assert_int_equal(s_status(hub).peers, 0);
    assert_int_equal(s_ping(client, "fq://victim/user/echo", 2), FQ_EPEER);

    s_peer_destroy(&peer);
    fq_client_destroy(&client);
    fq_system_destroy(&hub);
    zcert_destroy(&cert);
    s_keys_destroy(&keys);
}

//  ---------------------------------------------------------------------
//  4. Reconnect: the bound system goes away and comes back on the same
//  port; the connecting system joins it again by itself.

static void test_reconnect(void **unused)
{
    (void)unused;
    int port = fq_test_free_port();
    s_keys_t keys;
    s_keys_new(&keys);
    char cert_file[256];
    zcert_t *cert = s_keys_add(&keys, "spoke", true, cert_file, sizeof cert_file);
    char echo[64];
    s_address(echo, sizeof echo, port, "/user/echo");

    fq_system_t *hub = s_system("hub");
    s_bind_curve(hub, port, &keys);
    fq_system_t *spoke = s_system("spoke");
    s_connect(spoke, port, cert, zcert_public_txt(keys.server));
    assert_int_equal(fq_gateway_wait_connected(spoke, S_CONNECT_TIMEOUT_MS), 0);
    fq_client_t *asker = fq_client_new(spoke);
    assert_int_equal(s_ping(asker, echo, 1), 0);

    //  The hub says BYE on its way out: the spoke soon knows
    fq_system_destroy(&hub);
    assert_true(s_status_until(spoke, s_is_connected, false, S_DEATH_NOTICE_MAX_MS));
    assert_int_equal(s_ping(asker, echo, 2), FQ_EPEER);

    //  Let the spoke fail to reconnect a few times, then bring the hub back
    zclock_sleep(S_HEARTBEAT_TIMEOUT_MS);
    hub = s_system("hub");
    s_bind_curve(hub, port, &keys);
    assert_int_equal(fq_gateway_wait_connected(spoke, S_CONNECT_TIMEOUT_MS), 0);
    assert_int_equal(s_ping(asker, echo, 3), 0);
    //  And the hub knows the spoke by name again
    fq_client_t *hub_asker = fq_client_new(hub);
    assert_int_equal(s_ping(hub_asker, "fq://spoke/user/echo", 4), 0);

    fq_client_destroy(&hub_asker);
    fq_client_destroy(&asker);
    fq_system_destroy(&spoke);
    fq_system_destroy(&hub);
    zcert_destroy(&cert);
    s_keys_destroy(&keys);
}

//  Asks the echo at address until it answers, for up to timeout_ms: asks
//  sent while the link is being re-established may be lost or refused.
static bool s_ping_until(fq_client_t *client, const char *address, int timeout_ms)
{
    int64_t deadline = zclock_mono() + timeout_ms;
    do {
        fq_msg_t reply;
        fq_ping_t ping = {.seq = 1, .text = "retry"};
        if (fq_client_ask(client, address, &fq_ping_desc, &ping, S_HEARTBEAT_TIMEOUT_MS, &reply) ==
            0)
            return true;
        zclock_sleep(S_HEARTBEAT_MS);
    } while (zclock_mono() < deadline);
    return false;
}

//  4b. The bound system, a process of its own, crashes (SIGKILL: no BYE)
//  and is started again on the same port: once after the connecting side
//  has declared it dead, and once at once. The connecting side notices the
//  dropped connection at once (its socket monitor), without waiting for the
//  heartbeat timeout. Either way its watchers hear of the crash and it
//  joins the new hub by itself.

static void test_reconnect_after_crash(void **unused)
{
    (void)unused;
    int port = fq_test_free_port();
    s_keys_t keys;
    s_keys_new(&keys);
    char server_file[256], cert_file[256];
    snprintf(server_file, sizeof server_file, "%s/server.cert", keys.dir);
    assert_int_equal(zcert_save(keys.server, server_file), 0);
    zcert_t *cert = s_keys_add(&keys, "spoke", true, cert_file, sizeof cert_file);
    char echo[64];
    s_address(echo, sizeof echo, port, "/user/echo");

    s_peer_t hub;
    s_peer_start(&hub, "bind", "hub", port, server_file, keys.allow, S_READY_TIMEOUT_MS);
    s_peer_expect_line(&hub, "ready", S_READY_TIMEOUT_MS);
    fq_system_t *spoke = s_system("spoke");
    s_connect(spoke, port, cert, zcert_public_txt(keys.server));
    assert_int_equal(fq_gateway_wait_connected(spoke, S_CONNECT_TIMEOUT_MS), 0);
    fq_client_t *client = fq_client_new(spoke);
    assert_int_equal(fq_client_watch(client, echo), 0);
    assert_int_equal(s_ping(client, echo, 1), 0);

    //  Crash; the spoke notices by the dropped connection; restart
    assert_int_equal(kill(hub.pid, SIGKILL), 0);
    assert_int_equal(s_peer_wait(&hub, S_EXIT_TIMEOUT_MS), 128 + SIGKILL);
    s_peer_destroy(&hub);
    s_expect_terminated(client, S_DEATH_NOTICE_MAX_MS, echo, true);
    assert_false(s_status(spoke).connected);
    s_peer_start(&hub, "bind", "hub", port, server_file, keys.allow, S_READY_TIMEOUT_MS);
    s_peer_expect_line(&hub, "ready", S_READY_TIMEOUT_MS);
    assert_int_equal(fq_gateway_wait_connected(spoke, S_CONNECT_TIMEOUT_MS), 0);
    assert_int_equal(fq_client_watch(client, echo), 0);
    assert_int_equal(s_ping(client, echo, 2), 0);

    //  Crash and restart at once
    assert_int_equal(kill(hub.pid, SIGKILL), 0);
    assert_int_equal(s_peer_wait(&hub, S_EXIT_TIMEOUT_MS), 128 + SIGKILL);
    s_peer_destroy(&hub);
    s_peer_start(&hub, "bind", "hub", port, server_file, keys.allow, S_READY_TIMEOUT_MS);
    s_peer_expect_line(&hub, "ready", S_READY_TIMEOUT_MS);
    s_expect_terminated(client, S_DEATH_NOTICE_MAX_MS, echo, true);
    fq_client_t *asker = fq_client_new(spoke);
    assert_true(s_ping_until(asker, echo, S_CONNECT_TIMEOUT_MS));
    assert_true(s_status(spoke).connected);

    s_peer_quit(&hub);
    fq_client_destroy(&asker);
    fq_client_destroy(&client);
    fq_system_destroy(&spoke);
    zcert_destroy(&cert);
    s_keys_destroy(&keys);
}

//  ---------------------------------------------------------------------
//  5. Remote stop: a watched actor that its own system stops is reported
//  TERMINATED, not failed, through GW_WATCH / GW_TERMINATED.

static void test_remote_stop(void **unused)
{
    (void)unused;
    int port = fq_test_free_port();
    s_keys_t keys;
    s_keys_new(&keys);
    char cert_file[256];
    zcert_t *cert = s_keys_add(&keys, "worker", true, cert_file, sizeof cert_file);
    fq_system_t *hub = s_system("hub");
    s_bind_curve(hub, port, &keys);
    s_peer_t peer;
    s_peer_start(&peer, "connect", "worker", port, cert_file, zcert_public_txt(keys.server),
                 S_READY_TIMEOUT_MS);
    s_peer_expect_line(&peer, "ready", S_READY_TIMEOUT_MS);

    //  Two watchers of the same remote actor: each hears of its end
    fq_client_t *client = fq_client_new(hub);
    fq_client_t *other = fq_client_new(hub);
    assert_int_equal(fq_client_watch(other, "fq://worker/user/echo"), 0);
    assert_int_equal(s_ping(other, "fq://worker/user/echo", 1), 0);
    assert_int_equal(fq_client_watch(client, "fq://worker/user/echo"), 0);
    assert_int_equal(s_ping(client, "fq://worker/user/echo", 1), 0);

    //  Watching a remote actor that is not there answers at once
    assert_int_equal(fq_client_watch(client, "fq://worker/user/nobody"), 0);
    s_expect_terminated(client, S_ASK_TIMEOUT_MS, "fq://worker/user/nobody", false);

    s_peer_command(&peer, "stop /user/echo\n");
    s_peer_expect_line(&peer, "stopping /user/echo", S_ASK_TIMEOUT_MS);
    s_expect_terminated(client, S_ASK_TIMEOUT_MS, "fq://worker/user/echo", false);
    s_expect_terminated(other, S_ASK_TIMEOUT_MS, "fq://worker/user/echo", false);
    //  The peer itself is still there: asks are answered, with "no actor"
    assert_int_equal(s_ping(client, "fq://worker/user/echo", 2), FQ_ENOACTOR);
    assert_int_equal(s_status(hub).peers, 1);

    s_peer_quit(&peer);
    fq_client_destroy(&other);
    fq_client_destroy(&client);
    fq_system_destroy(&hub);
    zcert_destroy(&cert);
    s_keys_destroy(&keys);
}

//  ---------------------------------------------------------------------
//  6. Hostile input: a raw DEALER with an allowed key sends garbage and
//  forged runtime messages; the gateway counts and drops them, stops
//  nothing, and serves legitimate peers afterwards.

static zsock_t *s_raw_new(int port, zcert_t *cert, const char *server_key)
{
    zsock_t *raw = zsock_new(ZMQ_DEALER);
    assert_non_null(raw);
    zsock_set_linger(raw, 0);
    zsock_set_rcvtimeo(raw, S_HEARTBEAT_MS);
    zcert_apply(cert, raw);
    zsock_set_curve_serverkey(raw, server_key);
    char endpoint[64];
    assert_int_equal(zsock_connect(raw, "%s", s_address(endpoint, sizeof endpoint, port, "")), 0);
    return raw;
}

static void s_raw_send(zsock_t *raw, const void *data, size_t size)
{
    assert_int_equal(zmq_send(zsock_resolve(raw), data, size, 0), (int)size);
}

static void s_raw_envelope_from(zsock_t *raw, const char *sender, uint32_t flags, uint64_t corr,
                                const char *to, const fq_msgdesc_t *desc, const void *msg)
{
    msgpack_sbuffer buf;
    msgpack_sbuffer_init(&buf);
    assert_int_equal(fq_envelope_encode(&buf, desc->id, flags, corr, sender, to, desc, msg, NULL),
                     0);
    s_raw_send(raw, buf.data, buf.size);
    msgpack_sbuffer_destroy(&buf);
}

static void s_raw_envelope(zsock_t *raw, uint32_t flags, uint64_t corr, const char *to,
                           const fq_msgdesc_t *desc, const void *msg)
{
    s_raw_envelope_from(raw, "/temp/raw", flags, corr, to, desc, msg);
}

//  Reads raw's frames until an envelope of type (with corr, unless 0)
//  comes, answering heartbeats meanwhile. Returns the frame (decode it
//  again to read it; caller destroys) or NULL after timeout_ms.
static zframe_t *s_raw_expect(zsock_t *raw, uint32_t type, uint64_t corr, int timeout_ms)
{
    int64_t deadline = zclock_mono() + timeout_ms;
    msgpack_zone zone;
    msgpack_zone_init(&zone, 1024);
    zframe_t *found = NULL;
    while (!found && zclock_mono() < deadline) {
        zframe_t *frame = zframe_recv(raw);
        if (!frame)
            continue;
        fq_envelope_t env;
        msgpack_zone_clear(&zone);
        if (fq_envelope_decode(zframe_data(frame), zframe_size(frame), &zone, &env) == 0) {
            if (env.type == type && (!corr || env.corr == corr))
                found = frame;
            else if (env.type == FQ_MSG_GW_HEARTBEAT)
                s_raw_envelope(raw, 0, 0, NULL, &fq_gw_heartbeat_desc, &(fq_gw_heartbeat_t){0});
        }
        if (frame != found)
            zframe_destroy(&frame);
    }
    msgpack_zone_destroy(&zone);
    return found;
}

//  Expects an ERROR answer to ask corr, and returns its code.
static int64_t s_raw_expect_error(zsock_t *raw, uint64_t corr)
{
    zframe_t *frame = s_raw_expect(raw, FQ_MSG_ERROR, corr, S_ASK_TIMEOUT_MS);
    assert_non_null(frame);
    msgpack_zone zone;
    msgpack_zone_init(&zone, 1024);
    fq_envelope_t env;
    assert_int_equal(fq_envelope_decode(zframe_data(frame), zframe_size(frame), &zone, &env), 0);
    fq_msg_t msg = {.type = env.type, .body = env.body, .zone = &zone};
    fq_error_t error;
    assert_int_equal(fq_msg_decode(&msg, &fq_error_desc, &error), 0);
    msgpack_zone_destroy(&zone);
    zframe_destroy(&frame);
    return error.code;
}

//  A legitimate ask from the raw peer, answered with a PONG addressed to
//  the raw peer under the name it said HELLO with.
static void s_raw_ping(zsock_t *raw, const char *to, uint64_t corr)
{
    fq_ping_t ping = {.seq = corr, .text = "raw"};
    s_raw_envelope(raw, FQ_ENV_ASK, corr, to, &fq_ping_desc, &ping);
    zframe_t *frame = s_raw_expect(raw, FQ_MSG_PONG, corr, S_ASK_TIMEOUT_MS);
    assert_non_null(frame);
    msgpack_zone zone;
    msgpack_zone_init(&zone, 1024);
    fq_envelope_t env;
    assert_int_equal(fq_envelope_decode(zframe_data(frame), zframe_size(frame), &zone, &env), 0);
    assert_true(env.flags & FQ_ENV_REPLY);
    assert_string_equal(env.to, "fq://raw/temp/raw");
    fq_msg_t msg = {.type = env.type, .body = env.body, .zone = &zone};
    fq_pong_t pong;
    assert_int_equal(fq_msg_decode(&msg, &fq_pong_desc, &pong), 0);
    assert_int_equal(pong.seq, corr + 1);
    assert_string_equal(pong.text, "fq://raw/temp/raw");
    msgpack_zone_destroy(&zone);
    zframe_destroy(&frame);
}

static void s_raw_hello(zsock_t *raw, const char *name)
{
    fq_gw_hello_t hello = {.system = name, .version = 1, .heartbeat_ms = S_HEARTBEAT_MS};
    s_raw_envelope(raw, 0, 0, NULL, &fq_gw_hello_desc, &hello);
}

//  Deterministic noise (xorshift64), so that a failure can be replayed.
static uint64_t s_noise(uint64_t *state)
{
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    return *state;
}

//  Garbage of every kind a peer could send before HELLO. Returns how many
//  frames of it the gateway must count as malformed.
static int s_raw_send_garbage(zsock_t *raw)
{
    int malformed = 0;
    //  Random bytes (not counted: one could, by chance, be well formed)
    uint64_t state = 0x9e3779b97f4a7c15u;
    for (int i = 0; i < S_NOISE_FRAMES; i++) {
        uint8_t bytes[S_NOISE_MAX_SIZE];
        size_t size = 1 + s_noise(&state) % sizeof bytes;
        for (size_t j = 0; j < size; j++)
            bytes[j] = (uint8_t)s_noise(&state);
        s_raw_send(raw, bytes, size);
    }
    //  Every truncation of a valid envelope, the empty frame included, and
    //  one with a byte too many
    msgpack_sbuffer buf;
    msgpack_sbuffer_init(&buf);
    fq_ping_t ping = {.seq = 7, .text = "truncated"};
    assert_int_equal(fq_envelope_encode(&buf, FQ_MSG_PING, FQ_ENV_ASK, 7, "/temp/raw", "/user/echo",
                                        &fq_ping_desc, &ping, NULL),
                     0);
    for (size_t len = 0; len < buf.size; len++, malformed++)
        s_raw_send(raw, buf.data, len);
    msgpack_sbuffer_write(&buf, "\xc0", 1);
    s_raw_send(raw, buf.data, buf.size);
    malformed++;
    //  Multi-part messages: gateway frames are single-part
    for (int parts = 2; parts <= 3; parts++, malformed++) {
        zmsg_t *msg = zmsg_new();
        for (int i = 0; i < parts; i++)
            zmsg_addmem(msg, buf.data, buf.size - 1);
        assert_int_equal(zmsg_send(&msg, raw), 0);
    }
    msgpack_sbuffer_destroy(&buf);
    //  Containers claiming far more than the frame holds: refused before
    //  anything is allocated for them
#define S_BYTES(literal)                                                                           \
    {                                                                                              \
        literal, sizeof literal - 1                                                                \
    }
    static const struct {
        const char *bytes;
        size_t size;
    } huge[] = {
        S_BYTES("\xdd\xff\xff\xff\xff"),                             //  array of 2^32-1
        S_BYTES("\xdf\xff\xff\xff\xff"),                             //  map of 2^32-1
        S_BYTES("\xdb\xff\xff\xff\xff"),                             //  str of 4 GB
        S_BYTES("\x96\x64\x00\x00\xa0\xc0\xdd\x7f\xff\xff\xff\x01"), //  envelope, huge body
        S_BYTES("\xdd\x7f\xff\xff\xff\x64\x00\x00\xa0\xc0\xc0"),     //  envelope, huge arity
        S_BYTES("\x96\x64\x00\x00\xdb\xff\xff\xff\xf0\xc0\xc0"),     //  huge sender
    };
#undef S_BYTES
    for (size_t i = 0; i < sizeof huge / sizeof huge[0]; i++, malformed++)
        s_raw_send(raw, huge[i].bytes, huge[i].size);
    //  HELLO with names no system may have, and with a body of the wrong shape
    char too_long[FQ_NAME_MAX + 2];
    memset(too_long, 'a', sizeof too_long - 1);
    too_long[sizeof too_long - 1] = 0;
    const char *bad_names[] = {"", "bad name", "..", "a/b", "caf\xc3\xa9", too_long};
    for (size_t i = 0; i < sizeof bad_names / sizeof bad_names[0]; i++, malformed++)
        s_raw_hello(raw, bad_names[i]);
    msgpack_sbuffer_init(&buf);
    assert_int_equal(fq_envelope_encode(&buf, FQ_MSG_GW_HELLO, 0, 0, NULL, NULL, NULL, NULL, NULL),
                     0);
    s_raw_send(raw, buf.data, buf.size);
    malformed++;
    msgpack_sbuffer_destroy(&buf);
    return malformed;
}

//  Forged runtime messages from a welcomed peer. Returns how many the
//  gateway must refuse.
static int s_raw_send_forgeries(zsock_t *raw)
{
    int refused = 0;
    //  Asked, so that the refusal is answered: EINVAL, not a delivery
    s_raw_envelope(raw, FQ_ENV_ASK, 100, "/user/victim", &fq_stop_desc, &(fq_stop_t){0});
    assert_int_equal(s_raw_expect_error(raw, 100), FQ_EINVAL);
    refused++;
    fq_terminated_t notice = {.path = "/user/victim", .failed = true, .reason = "forged"};
    s_raw_envelope(raw, FQ_ENV_ASK, 101, "/user/victim", &fq_terminated_desc, &notice);
    assert_int_equal(s_raw_expect_error(raw, 101), FQ_EINVAL);
    refused++;
    s_raw_envelope(raw, FQ_ENV_ASK, 102, S_GATEWAY, &fq_gw_status_query_desc,
                   &(fq_gw_status_query_t){0});
    assert_int_equal(s_raw_expect_error(raw, 102), FQ_EINVAL);
    refused++;
    //  Told, in every spelling of the target
    const char *targets[] = {"/user/victim", "fq://hub/user/victim", "/user", S_GATEWAY};
    for (size_t i = 0; i < sizeof targets / sizeof targets[0]; i++, refused += 2) {
        s_raw_envelope(raw, 0, 0, targets[i], &fq_stop_desc, &(fq_stop_t){0});
        s_raw_envelope(raw, 0, 0, targets[i], &fq_terminated_desc, &notice);
    }
    fq_watch_remote_t watch = {.watcher = "/user/victim", .target = "fq://raw/user/x"};
    s_raw_envelope(raw, 0, 0, S_GATEWAY, &fq_watch_remote_desc, &watch);
    refused++;
    //  Messages that cannot be answered: a behaviour's fq_reply would fail,
    //  and so would the behaviour, until escalation stopped the system
    const char *senders[] = {"", "/bad path", "fq://hub/user/echo"};
    fq_ping_t ping = {.seq = 1, .text = "who"};
    for (size_t i = 0; i < sizeof senders / sizeof senders[0]; i++, refused += 2) {
        s_raw_envelope_from(raw, senders[i], FQ_ENV_ASK, 300 + i, "/user/victim", &fq_ping_desc,
                            &ping);
        s_raw_envelope_from(raw, senders[i], 0, 0, "/user/victim", &fq_ping_desc, &ping);
    }
    return refused;
}

static void test_hostile_input(void **unused)
{
    (void)unused;
    int port = fq_test_free_port();
    s_keys_t keys;
    s_keys_new(&keys);
    char raw_file[256], spoke_file[256];
    zcert_t *raw_cert = s_keys_add(&keys, "raw", true, raw_file, sizeof raw_file);
    zcert_t *spoke_cert = s_keys_add(&keys, "spoke", true, spoke_file, sizeof spoke_file);
    const char *server_key = zcert_public_txt(keys.server);
    fq_system_t *hub = s_system("hub");
    assert_int_equal(fq_system_spawn(hub, "victim", &s_echo, NULL, NULL), 0);
    s_bind_curve(hub, port, &keys);
    fq_client_t *watcher = fq_client_new(hub);
    assert_int_equal(fq_client_watch(watcher, "/user/victim"), 0);
    fq_gw_status_t before = s_status(hub);

    //  A delivery before HELLO: the gateway does not know us and says so
    zsock_t *raw = s_raw_new(port, raw_cert, server_key);
    s_raw_envelope(raw, FQ_ENV_ASK, 1, "/user/echo", &fq_ping_desc,
                   &(fq_ping_t){.seq = 1, .text = "early"});
    zframe_t *frame = s_raw_expect(raw, FQ_MSG_GW_REHELLO, 0, S_CONNECT_TIMEOUT_MS);
    assert_non_null(frame);
    zframe_destroy(&frame);

    int malformed = s_raw_send_garbage(raw);
    //  Then a proper HELLO: the WELCOME also tells us all of the above has
    //  been read, since a peer's frames are handled in order
    s_raw_hello(raw, "raw");
    frame = s_raw_expect(raw, FQ_MSG_GW_WELCOME, 0, S_ASK_TIMEOUT_MS);
    assert_non_null(frame);
    zframe_destroy(&frame);
    fq_gw_status_t status = s_status(hub);
    print_message("malformed %llu -> %llu (at least %d expected)\n",
                  (unsigned long long)before.malformed, (unsigned long long)status.malformed,
                  malformed);
    assert_true(status.malformed >= before.malformed + (uint64_t)malformed);
    assert_int_equal(status.peers, before.peers + 1);

    //  Forged runtime messages are refused; the legitimate ask after them
    //  is answered, which also means they have all been handled
    int refused = s_raw_send_forgeries(raw);
    s_raw_envelope(raw, 0, 0, S_GATEWAY, &fq_gw_watch_desc, &(fq_gw_watch_t){.path = "not/a/path"});
    malformed++;
    s_raw_ping(raw, "/user/echo", 200);
    s_raw_ping(raw, "fq://hub/user/victim", 201);
    status = s_status(hub);
    assert_true(status.refused >= before.refused + (uint64_t)refused);
    assert_true(status.malformed >= before.malformed + (uint64_t)malformed);

    //  The victim was never stopped, nor even handed the forgeries
    fq_actor_stats_t stats;
    assert_int_equal(fq_system_stats(hub, "/user/victim", &stats), 0);
    assert_int_equal(stats.handled, 1);
    assert_int_equal(stats.failures, 0);
    assert_int_equal(stats.restarts, 0);
    assert_false(fq_system_failed(hub, NULL, 0));
    fq_msg_t msg;
    assert_int_equal(fq_client_recv(watcher, S_HEARTBEAT_MS, &msg), FQ_ETIMEDOUT);

    //  Another key may not take over the name "raw" while raw is there
    //  (raw heartbeats by hand: nothing else keeps it alive meanwhile)
    s_raw_envelope(raw, 0, 0, NULL, &fq_gw_heartbeat_desc, &(fq_gw_heartbeat_t){0});
    zsock_t *thief = s_raw_new(port, spoke_cert, server_key);
    uint64_t refused_so_far = s_status(hub).refused;
    s_raw_hello(thief, "raw");
    assert_true(s_status_until(hub, s_refused_past, refused_so_far, S_ASK_TIMEOUT_MS));
    s_raw_envelope(raw, 0, 0, NULL, &fq_gw_heartbeat_desc, &(fq_gw_heartbeat_t){0});
    s_raw_ping(raw, "/user/echo", 202);
    assert_null(s_raw_expect(thief, FQ_MSG_GW_WELCOME, 0, S_HEARTBEAT_MS));
    zsock_destroy(&thief);
    zsock_destroy(&raw);

    //  A real system still joins, and the gateway serves it
    fq_system_t *spoke = s_system("spoke");
    s_connect(spoke, port, spoke_cert, server_key);
    assert_int_equal(fq_gateway_wait_connected(spoke, S_CONNECT_TIMEOUT_MS), 0);
    fq_client_t *asker = fq_client_new(spoke);
    assert_int_equal(s_ping(asker, "fq://hub/user/echo", 300), 0);
    assert_int_equal(s_ping(asker, "fq://hub/user/victim", 301), 0);
    assert_int_equal(fq_client_recv(watcher, 0, &msg), FQ_ETIMEDOUT);

    fq_client_destroy(&asker);
    fq_system_destroy(&spoke);
    fq_client_destroy(&watcher);
    fq_system_destroy(&hub);
    zcert_destroy(&raw_cert);
    zcert_destroy(&spoke_cert);
    s_keys_destroy(&keys);
}

//  ---------------------------------------------------------------------
//  6a. The admission table: of a peer's messages only the rows of the
//  table reach an actor (type, path, and tell, ask or reply); everything
//  else is refused and counted, an ask is answered with an ERROR, and a
//  peer may watch only what it may send to. A reply with correlation id 0
//  (a NULL key for CZMQ's hash tables) harms nothing.

static void test_admission(void **unused)
{
    (void)unused;
    int port = fq_test_free_port();
    s_keys_t keys;
    s_keys_new(&keys);
    char raw_file[256];
    zcert_t *raw_cert = s_keys_add(&keys, "raw", true, raw_file, sizeof raw_file);
    fq_system_t *hub = s_system("hub");
    assert_int_equal(fq_system_spawn(hub, "victim", &s_echo, NULL, NULL), 0);
    //  PING may be asked of /user/echo, and nothing else comes in
    const fq_gateway_admit_t admit[] = {{FQ_MSG_PING, "/user/echo", FQ_ADMIT_ASK}};
    char endpoint[64];
    fq_gateway_config_t cfg = s_gateway_config();
    cfg.bind = s_address(endpoint, sizeof endpoint, port, "");
    cfg.cert = keys.server;
    cfg.allow_dir = keys.allow;
    cfg.admit = admit;
    cfg.admit_count = 1;
    assert_int_equal(fq_gateway_start(hub, &cfg), 0);
    fq_client_t *watcher = fq_client_new(hub);
    assert_int_equal(fq_client_watch(watcher, "/user/victim"), 0);

    zsock_t *raw = s_raw_new(port, raw_cert, zcert_public_txt(keys.server));
    s_raw_hello(raw, "raw");
    zframe_t *frame = s_raw_expect(raw, FQ_MSG_GW_WELCOME, 0, S_CONNECT_TIMEOUT_MS);
    assert_non_null(frame);
    zframe_destroy(&frame);
    uint64_t refused_before = s_status(hub).refused;
    fq_ping_t ping = {.seq = 1, .text = "not admitted"};
    //  The right type to the wrong path, and the wrong type to the right one
    s_raw_envelope(raw, FQ_ENV_ASK, 10, "/user/victim", &fq_ping_desc, &ping);
    assert_int_equal(s_raw_expect_error(raw, 10), FQ_EINVAL);
    s_raw_envelope(raw, FQ_ENV_ASK, 11, "/user/echo", &fq_count_desc, &(fq_count_t){0});
    assert_int_equal(s_raw_expect_error(raw, 11), FQ_EINVAL);
    //  The right type and path, but told, or as a reply (corr 0 and not)
    s_raw_envelope(raw, 0, 0, "/user/echo", &fq_ping_desc, &ping);
    s_raw_envelope(raw, FQ_ENV_REPLY, 0, "/user/echo", &fq_ping_desc, &ping);
    s_raw_envelope(raw, FQ_ENV_REPLY, 1, "/user/echo", &fq_ping_desc, &ping);
    //  Flags no peer sends: ask and reply at once, or REMOTE already
    s_raw_envelope(raw, FQ_ENV_ASK | FQ_ENV_REPLY, 12, "/user/echo", &fq_ping_desc, &ping);
    s_raw_envelope(raw, FQ_ENV_ASK | FQ_ENV_REMOTE, 13, "/user/echo", &fq_ping_desc, &ping);
    //  An ERROR reply that no row names
    fq_error_t error = {.code = FQ_EFAILED, .text = "forged"};
    s_raw_envelope(raw, FQ_ENV_REPLY, 0, "/user/echo", &fq_error_desc, &error);
    const int refused = 8;
    //  A watch of an actor it may not send to ends at once
    s_raw_envelope(raw, 0, 0, NULL, &fq_gw_watch_desc, &(fq_gw_watch_t){.path = "/user/victim"});
    frame = s_raw_expect(raw, FQ_MSG_GW_TERMINATED, 0, S_ASK_TIMEOUT_MS);
    assert_non_null(frame);
    zframe_destroy(&frame);
    //  What the table names is answered, after all of the above was handled
    s_raw_ping(raw, "/user/echo", 200);
    fq_gw_status_t status = s_status(hub);
    print_message("refused %llu -> %llu\n", (unsigned long long)refused_before,
                  (unsigned long long)status.refused);
    assert_true(status.refused >= refused_before + refused + 1);
    fq_actor_stats_t stats;
    assert_int_equal(fq_system_stats(hub, "/user/victim", &stats), 0);
    assert_int_equal(stats.handled, 0);
    assert_int_equal(fq_system_stats(hub, "/user/echo", &stats), 0);
    assert_int_equal(stats.handled, 1);
    assert_int_equal(stats.failures, 0);
    assert_false(fq_system_failed(hub, NULL, 0));
    fq_msg_t msg;
    assert_int_equal(fq_client_recv(watcher, 0, &msg), FQ_ETIMEDOUT);

    zsock_destroy(&raw);
    fq_client_destroy(&watcher);
    fq_system_destroy(&hub);
    zcert_destroy(&raw_cert);
    s_keys_destroy(&keys);
}

//  Replies that answer no ask of ours, admitted by a mesh table: the
//  correlation id 0 (never an ask's id, and a NULL key to CZMQ) and ids
//  that no ask of the actor holds complete nothing and break nothing.
static void test_reply_forgeries(void **unused)
{
    (void)unused;
    int port = fq_test_free_port();
    fq_system_t *hub = s_system("hub");
    fq_gateway_config_t cfg = s_gateway_config();
    char endpoint[64];
    cfg.bind = s_address(endpoint, sizeof endpoint, port, "");
    cfg.insecure = true;
    assert_int_equal(fq_gateway_start(hub, &cfg), 0);
    zsock_t *raw = zsock_new(ZMQ_DEALER);
    assert_non_null(raw);
    zsock_set_linger(raw, 0);
    zsock_set_rcvtimeo(raw, S_HEARTBEAT_MS);
    assert_int_equal(zsock_connect(raw, "%s", endpoint), 0);
    s_raw_hello(raw, "raw");
    zframe_t *frame = s_raw_expect(raw, FQ_MSG_GW_WELCOME, 0, S_CONNECT_TIMEOUT_MS);
    assert_non_null(frame);
    zframe_destroy(&frame);
    fq_pong_t pong = {.seq = 1, .text = "forged"};
    const uint64_t corrs[] = {0, 1, 2, 3, UINT64_MAX};
    for (size_t i = 0; i < sizeof corrs / sizeof corrs[0]; i++) {
        s_raw_envelope(raw, FQ_ENV_REPLY, corrs[i], "/user/echo", &fq_pong_desc, &pong);
        s_raw_envelope(raw, FQ_ENV_REPLY, corrs[i], "/user/echo", &fq_error_desc,
                       &(fq_error_t){.code = FQ_EFAILED, .text = "forged"});
    }
    s_raw_ping(raw, "/user/echo", 300);
    assert_false(fq_system_failed(hub, NULL, 0));
    //  A local client still gets its own answers
    fq_client_t *asker = fq_client_new(hub);
    assert_int_equal(s_ping(asker, "/user/echo", 301), 0);
    fq_client_destroy(&asker);
    zsock_destroy(&raw);
    fq_system_destroy(&hub);
}

//  A gateway with CURVE material it cannot use refuses to start, saying
//  why, rather than starting to let nobody in: a certificate without its
//  secret file, an allow directory that is missing or a plain file, and a
//  malformed admission row.
static void test_unusable_configuration(void **unused)
{
    (void)unused;
    s_keys_t keys;
    s_keys_new(&keys);
    char cert_file[256], public_only[256], plain_file[256], missing[256];
    zcert_t *cert = s_keys_add(&keys, "server", false, cert_file, sizeof cert_file);
    snprintf(public_only, sizeof public_only, "%s/public-only.cert", keys.dir);
    assert_int_equal(zcert_save_public(cert, public_only), 0);
    snprintf(plain_file, sizeof plain_file, "%s/plain", keys.dir);
    FILE *plain = fopen(plain_file, "w");
    assert_non_null(plain);
    fclose(plain);
    snprintf(missing, sizeof missing, "%s/missing", keys.dir);
    fq_system_t *hub = s_system("hub");
    char endpoint[64];
    fq_gateway_config_t cfg = s_gateway_config();
    cfg.bind = s_address(endpoint, sizeof endpoint, fq_test_free_port(), "");
    cfg.allow_dir = keys.allow;
    cfg.cert_file = public_only;
    assert_int_equal(fq_gateway_start(hub, &cfg), FQ_EINVAL);
    cfg.cert_file = missing;
    assert_int_equal(fq_gateway_start(hub, &cfg), FQ_EINVAL);
    cfg.cert_file = cert_file;
    cfg.allow_dir = missing;
    assert_int_equal(fq_gateway_start(hub, &cfg), FQ_EINVAL);
    cfg.allow_dir = plain_file;
    assert_int_equal(fq_gateway_start(hub, &cfg), FQ_EINVAL);
    cfg.allow_dir = keys.allow;
    const fq_gateway_admit_t bad_path[] = {{FQ_MSG_PING, "user/echo", FQ_ADMIT_TELL}};
    const fq_gateway_admit_t no_kinds[] = {{FQ_MSG_PING, "/user/echo", 0}};
    cfg.admit = bad_path;
    cfg.admit_count = 1;
    assert_int_equal(fq_gateway_start(hub, &cfg), FQ_EINVAL);
    cfg.admit = no_kinds;
    assert_int_equal(fq_gateway_start(hub, &cfg), FQ_EINVAL);
    //  A connecting side needs its own secret key too
    fq_gateway_config_t join = s_gateway_config();
    join.connect = endpoint;
    join.cert_file = public_only;
    join.server_key = zcert_public_txt(cert);
    assert_int_equal(fq_gateway_start(hub, &join), FQ_EINVAL);
    //  With everything right it starts
    cfg.admit = fq_test_admit_mesh;
    cfg.admit_count = FQ_TEST_ADMIT_MESH_COUNT;
    assert_int_equal(fq_gateway_start(hub, &cfg), 0);
    fq_system_destroy(&hub);
    zcert_destroy(&cert);
    s_keys_destroy(&keys);
}

//  ---------------------------------------------------------------------
//  6b. A peer that sends without ever reading what it is answered: the
//  gateway's answers (REHELLO here) pile up in its pipe until that is full.
//  The gateway must drop them rather than wait on that peer, or every other
//  peer would miss its heartbeats and be declared dead.

static void test_flood_without_reading(void **unused)
{
    (void)unused;
    int port = fq_test_free_port();
    s_keys_t keys;
    s_keys_new(&keys);
    char raw_file[256], spoke_file[256];
    zcert_t *raw_cert = s_keys_add(&keys, "raw", true, raw_file, sizeof raw_file);
    zcert_t *spoke_cert = s_keys_add(&keys, "spoke", true, spoke_file, sizeof spoke_file);
    const char *server_key = zcert_public_txt(keys.server);
    fq_system_t *hub = s_system("hub");
    s_bind_curve(hub, port, &keys);
    fq_system_t *spoke = s_system("spoke");
    s_connect(spoke, port, spoke_cert, server_key);
    assert_int_equal(fq_gateway_wait_connected(spoke, S_CONNECT_TIMEOUT_MS), 0);
    fq_client_t *watcher = fq_client_new(spoke);
    assert_int_equal(fq_client_watch(watcher, "fq://hub/user/echo"), 0);
    uint64_t frames_before = s_status(hub).frames_in;

    //  A small receive buffer, so that the peer's pipe fills up soon
    zsock_t *raw = zsock_new(ZMQ_DEALER);
    assert_non_null(raw);
    zsock_set_linger(raw, 0);
    zsock_set_rcvhwm(raw, 1);
    zsock_set_rcvbuf(raw, S_FLOOD_RCVBUF);
    zsock_set_sndtimeo(raw, S_ASK_TIMEOUT_MS);
    zcert_apply(raw_cert, raw);
    zsock_set_curve_serverkey(raw, server_key);
    char endpoint[64];
    assert_int_equal(zsock_connect(raw, "%s", s_address(endpoint, sizeof endpoint, port, "")), 0);
    msgpack_sbuffer buf;
    msgpack_sbuffer_init(&buf);
    fq_ping_t ping = {.seq = 1, .text = "flood"};
    assert_int_equal(fq_envelope_encode(&buf, FQ_MSG_PING, FQ_ENV_ASK, 1, "/temp/raw", "/user/echo",
                                        &fq_ping_desc, &ping, NULL),
                     0);
    int64_t start = zclock_mono();
    for (int i = 0; i < S_FLOOD_FRAMES; i++)
        if (zmq_send(zsock_resolve(raw), buf.data, buf.size, 0) < 0)
            fail_msg("the gateway stopped reading after %d frames", i);
    msgpack_sbuffer_destroy(&buf);

    //  The gateway reads the whole flood and answers its status promptly
    //  meanwhile (s_status fails past S_ASK_TIMEOUT_MS)
    fq_gw_status_t status;
    do {
        int64_t asked = zclock_mono();
        status = s_status(hub);
        assert_true(zclock_mono() - asked < S_PROMPT_MS);
    } while (status.frames_in < frames_before + S_FLOOD_FRAMES &&
             zclock_mono() - start < S_THROUGHPUT_ASK_MS);
    print_message("%d flood frames read in %lld ms\n", S_FLOOD_FRAMES,
                  (long long)(zclock_mono() - start));
    assert_true(status.frames_in >= frames_before + S_FLOOD_FRAMES);
    //  The other peer was served all along: never declared dead
    assert_int_equal(status.peers, 1);
    fq_client_t *asker = fq_client_new(spoke);
    assert_int_equal(s_ping(asker, "fq://hub/user/echo", 1), 0);
    fq_msg_t msg;
    assert_int_equal(fq_client_recv(watcher, 0, &msg), FQ_ETIMEDOUT);

    zsock_destroy(&raw);
    fq_client_destroy(&asker);
    fq_client_destroy(&watcher);
    fq_system_destroy(&spoke);
    fq_system_destroy(&hub);
    zcert_destroy(&raw_cert);
    zcert_destroy(&spoke_cert);
    s_keys_destroy(&keys);
}

//  ---------------------------------------------------------------------
//  6c. A welcomed peer that asks and never reads the replies: once its pipe
//  is full the gateway's sends to it fail (after one short wait), it is
//  dropped as "not reading what it is sent" (its watchers hear of it), and
//  meanwhile another peer's asks are answered as promptly as ever.

//  Sends one ask to the hub's echo over and over, from a thread of its
//  own, until told to stop. The socket is the thread's until it is joined.
typedef struct {
    zsock_t *raw;
    const void *frame;
    size_t size;
    atomic_bool stop;
    atomic_uint_fast64_t sent;
    atomic_int error; //  zmq_errno of a failed send, or 0
} s_flooder_t;

static void *s_flood(void *arg)
{
    s_flooder_t *self = arg;
    while (!atomic_load(&self->stop)) {
        if (zmq_send(zsock_resolve(self->raw), self->frame, self->size, 0) < 0) {
            atomic_store(&self->error, zmq_errno());
            break;
        }
        atomic_fetch_add(&self->sent, 1);
    }
    return NULL;
}

//  The gateway's status, without asserting (the flood must be stopped
//  before any assertion ends the test). Returns 0 or the ask's error.
static int s_status_try(fq_client_t *client, fq_gw_status_t *status)
{
    fq_msg_t reply;
    int rc = fq_client_ask(client, S_GATEWAY, &fq_gw_status_query_desc, &(fq_gw_status_query_t){0},
                           S_ASK_TIMEOUT_MS, &reply);
    return rc ? rc : fq_msg_decode(&reply, &fq_gw_status_desc, status);
}

static void test_stalled_peer_dropped(void **unused)
{
    (void)unused;
    int port = fq_test_free_port();
    s_keys_t keys;
    s_keys_new(&keys);
    char raw_file[256], spoke_file[256];
    zcert_t *raw_cert = s_keys_add(&keys, "raw", true, raw_file, sizeof raw_file);
    zcert_t *spoke_cert = s_keys_add(&keys, "spoke", true, spoke_file, sizeof spoke_file);
    const char *server_key = zcert_public_txt(keys.server);
    fq_system_t *hub = s_system("hub");
    s_bind_curve(hub, port, &keys);
    fq_system_t *spoke = s_system("spoke");
    s_connect(spoke, port, spoke_cert, server_key);
    assert_int_equal(fq_gateway_wait_connected(spoke, S_CONNECT_TIMEOUT_MS), 0);
    fq_client_t *asker = fq_client_new(spoke);
    assert_int_equal(s_ping(asker, "fq://hub/user/echo", 1), 0);
    //  Were the spoke's link ever lost, this would hear of it
    fq_client_t *spoke_watcher = fq_client_new(spoke);
    assert_int_equal(fq_client_watch(spoke_watcher, "fq://hub/user/echo"), 0);

    //  The staller: says HELLO and never reads a frame. Its pipe holds one
    //  message and its kernel receive buffer little, so that the hub's
    //  pipe to it fills up soon.
    zsock_t *raw = zsock_new(ZMQ_DEALER);
    assert_non_null(raw);
    zsock_set_linger(raw, 0);
    zsock_set_rcvhwm(raw, 1);
    zsock_set_rcvbuf(raw, S_FLOOD_RCVBUF);
    zsock_set_sndtimeo(raw, S_ASK_TIMEOUT_MS);
    zcert_apply(raw_cert, raw);
    zsock_set_curve_serverkey(raw, server_key);
    char endpoint[64];
    assert_int_equal(zsock_connect(raw, "%s", s_address(endpoint, sizeof endpoint, port, "")), 0);
    s_raw_hello(raw, "raw");
    assert_true(s_status_until(hub, s_has_peers, 2, S_CONNECT_TIMEOUT_MS));

    //  A watcher of the staller's actors on the hub; the status ask follows
    //  the watch through the gateway's mailbox, so the watch is in place
    fq_client_t *watcher = fq_client_new(hub);
    assert_int_equal(fq_client_watch(watcher, "fq://raw/user/echo"), 0);
    fq_gw_status_t status;
    assert_int_equal(s_status_try(watcher, &status), 0);
    assert_int_equal(status.peers, 2);
    uint64_t dead_before = fq_system_dead_letters(hub);

    char *text = malloc(S_STALL_TEXT_SIZE);
    assert_non_null(text);
    memset(text, 'x', S_STALL_TEXT_SIZE - 1);
    text[S_STALL_TEXT_SIZE - 1] = 0;
    msgpack_sbuffer buf;
    msgpack_sbuffer_init(&buf);
    fq_ping_t ping = {.seq = 1, .text = text};
    assert_int_equal(fq_envelope_encode(&buf, FQ_MSG_PING, FQ_ENV_ASK, 1, "/temp/raw", "/user/echo",
                                        &fq_ping_desc, &ping, NULL),
                     0);
    s_flooder_t flooder = {.raw = raw, .frame = buf.data, .size = buf.size};
    pthread_t thread;
    fq_client_t *status_client = fq_client_new(hub);
    assert_non_null(status_client);

    //  While the flood goes on, the spoke keeps asking the hub's echo and
    //  the hub's status is watched: first its sends to the staller fail
    //  (its replies become dead letters), then the staller is gone
    int64_t start = zclock_mono();
    assert_int_equal(pthread_create(&thread, NULL, s_flood, &flooder), 0);
    int64_t stalled_at = 0, dropped_at = 0, max_ask = 0, total_ask = 0;
    int asks = 0, ask_rc = 0, status_rc = 0;
    uint32_t peers_after = 0;
    while (zclock_mono() - start < S_STALL_FLOOD_MS &&
           !(dropped_at && zclock_mono() - dropped_at >= S_STALL_AFTER_MS)) {
        int64_t asked = zclock_mono();
        fq_msg_t reply;
        fq_ping_t good = {.seq = (uint64_t)asks, .text = "good"};
        ask_rc = fq_client_ask(asker, "fq://hub/user/echo", &fq_ping_desc, &good, S_ASK_TIMEOUT_MS,
                               &reply);
        int64_t took = zclock_mono() - asked;
        max_ask = took > max_ask ? took : max_ask;
        if (ask_rc)
            break;
        asks++;
        total_ask += took;
        int64_t now = zclock_mono();
        if (!stalled_at && fq_system_dead_letters(hub) > dead_before)
            stalled_at = now;
        if ((status_rc = s_status_try(status_client, &status)) != 0)
            break;
        if (!dropped_at && status.peers < 2) {
            dropped_at = now;
            peers_after = status.peers;
        }
        zclock_sleep(10);
    }
    atomic_store(&flooder.stop, true);
    pthread_join(thread, NULL);
    int64_t ended = zclock_mono();
    uint64_t dead_letters = fq_system_dead_letters(hub) - dead_before;
    print_message("flood: %llu asks of %zu bytes in %lld ms, %llu replies dropped; sends failing "
                  "after %lld ms, staller dropped after %lld ms\n",
                  (unsigned long long)atomic_load(&flooder.sent), buf.size,
                  (long long)(ended - start), (unsigned long long)dead_letters,
                  stalled_at ? (long long)(stalled_at - start) : -1LL,
                  dropped_at ? (long long)(dropped_at - start) : -1LL);
    print_message("good peer: %d asks meanwhile, %lld ms on average, %lld ms at most (%s)\n", asks,
                  asks ? (long long)(total_ask / asks) : 0LL, (long long)max_ask,
                  fq_err_name(ask_rc));
    msgpack_sbuffer_destroy(&buf);
    free(text);

    //  The flood was read all along: none of its sends timed out
    assert_int_equal(atomic_load(&flooder.error), 0);
    assert_int_equal(ask_rc, 0);
    assert_int_equal(status_rc, 0);
    assert_true(stalled_at > 0);
    assert_true(dropped_at >= stalled_at);
    assert_int_equal(peers_after, 1);
    assert_true(asks > 0);
    assert_true(max_ask < S_STALL_ASK_MAX_MS);

    //  Dropped for not reading (it kept sending, so not for silence), and
    //  its watchers heard of it
    fq_msg_t msg;
    assert_int_equal(fq_client_recv(watcher, S_ASK_TIMEOUT_MS, &msg), 0);
    assert_int_equal(msg.type, FQ_MSG_TERMINATED);
    fq_terminated_t notice;
    assert_int_equal(fq_msg_decode(&msg, &fq_terminated_desc, &notice), 0);
    assert_string_equal(notice.path, "fq://raw/user/echo");
    assert_true(notice.failed);
    print_message("the watcher heard: %s\n", notice.reason);
    assert_non_null(strstr(notice.reason, "not reading what it is sent"));
    fq_client_t *hub_asker = fq_client_new(hub);
    assert_int_equal(s_ping(hub_asker, "fq://raw/user/echo", 2), FQ_EPEER);

    //  The spoke is still there, both ways, and was never lost
    assert_int_equal(s_status(hub).peers, 1);
    assert_true(s_status(spoke).connected);
    assert_int_equal(s_ping(asker, "fq://hub/user/echo", 3), 0);
    assert_int_equal(s_ping(hub_asker, "fq://spoke/user/echo", 4), 0);
    assert_int_equal(fq_client_recv(spoke_watcher, 0, &msg), FQ_ETIMEDOUT);

    zsock_destroy(&raw);
    fq_client_destroy(&hub_asker);
    fq_client_destroy(&status_client);
    fq_client_destroy(&watcher);
    fq_client_destroy(&spoke_watcher);
    fq_client_destroy(&asker);
    fq_system_destroy(&spoke);
    fq_system_destroy(&hub);
    zcert_destroy(&raw_cert);
    zcert_destroy(&spoke_cert);
    s_keys_destroy(&keys);
}

//  ---------------------------------------------------------------------
//  7. Insecure mode joins insecure peers, and only those: no CURVE-less
//  peer passes a CURVE server, nor a CURVE peer an insecure one.

static void test_insecure_mode(void **unused)
{
    (void)unused;
    int port = fq_test_free_port();
    int curve_port = fq_test_free_port();
    int plain_port = fq_test_free_port();
    fq_system_t *hub = s_system("hub");
    fq_gateway_config_t cfg = s_gateway_config();
    char endpoint[64];
    cfg.bind = s_address(endpoint, sizeof endpoint, port, "");
    cfg.insecure = true;
    assert_int_equal(fq_gateway_start(hub, &cfg), 0);
    fq_system_t *spoke = s_system("spoke");
    s_connect(spoke, port, NULL, NULL);
    assert_int_equal(fq_gateway_wait_connected(spoke, S_CONNECT_TIMEOUT_MS), 0);
    fq_client_t *asker = fq_client_new(spoke);
    char echo[64];
    assert_int_equal(s_ping(asker, s_address(echo, sizeof echo, port, "/user/echo"), 1), 0);
    fq_client_t *hub_asker = fq_client_new(hub);
    assert_int_equal(s_ping(hub_asker, "fq://spoke/user/echo", 2), 0);
    fq_client_destroy(&hub_asker);
    fq_client_destroy(&asker);
    fq_system_destroy(&spoke);
    fq_system_destroy(&hub);

    //  A CURVE server and an insecure client; an insecure server and a
    //  CURVE client. Both pairs try at the same time.
    s_keys_t keys;
    s_keys_new(&keys);
    char cert_file[256];
    zcert_t *cert = s_keys_add(&keys, "spoke", true, cert_file, sizeof cert_file);
    fq_system_t *curve_hub = s_system("curve-hub");
    s_bind_curve(curve_hub, curve_port, &keys);
    fq_system_t *plain_hub = s_system("plain-hub");
    cfg.bind = s_address(endpoint, sizeof endpoint, plain_port, "");
    assert_int_equal(fq_gateway_start(plain_hub, &cfg), 0);
    fq_system_t *plain_spoke = s_system("plain-spoke");
    s_connect(plain_spoke, curve_port, NULL, NULL);
    fq_system_t *curve_spoke = s_system("curve-spoke");
    s_connect(curve_spoke, plain_port, cert, zcert_public_txt(keys.server));

    assert_int_equal(fq_gateway_wait_connected(plain_spoke, S_REFUSED_TRY_MS), FQ_ETIMEDOUT);
    assert_false(s_status(curve_spoke).connected);
    assert_int_equal(s_status(curve_hub).peers, 0);
    assert_int_equal(s_status(plain_hub).peers, 0);
    asker = fq_client_new(plain_spoke);
    s_address(echo, sizeof echo, curve_port, "/user/echo");
    assert_int_equal(s_ping(asker, echo, 3), FQ_EPEER);
    fq_client_destroy(&asker);

    fq_system_destroy(&curve_spoke);
    fq_system_destroy(&plain_spoke);
    fq_system_destroy(&plain_hub);
    fq_system_destroy(&curve_hub);
    zcert_destroy(&cert);
    s_keys_destroy(&keys);
}

//  ---------------------------------------------------------------------
//  7b. A port already taken: the gateway cannot start, its supervisor retries
//  and then escalates, and the process carries on. Its failed starts leave
//  nothing behind: another CURVE gateway binds in the same process.

static void test_bind_conflict(void **unused)
{
    (void)unused;
    int port = fq_test_free_port();
    int other_port = fq_test_free_port();
    s_keys_t keys;
    s_keys_new(&keys);
    char cert_file[256];
    zcert_t *cert = s_keys_add(&keys, "spoke", true, cert_file, sizeof cert_file);
    char endpoint[64];
    zsock_t *squatter = zsock_new(ZMQ_PULL);
    assert_non_null(squatter);
    assert_int_equal(zsock_bind(squatter, "%s", s_address(endpoint, sizeof endpoint, port, "")),
                     port);

    fq_system_t *hub = s_system("hub");
    //  Accepted: the bind itself happens in the gateway's own thread
    s_bind_curve(hub, port, &keys);
    char reason[256] = "";
    int64_t deadline = zclock_mono() + S_CONNECT_TIMEOUT_MS;
    while (!fq_system_failed(hub, reason, sizeof reason) && zclock_mono() < deadline)
        zclock_sleep(20);
    assert_true(fq_system_failed(hub, NULL, 0));
    print_message("escalated: %s\n", reason);
    assert_non_null(strstr(reason, "/system/gateway"));

    fq_system_t *other = s_system("other");
    s_bind_curve(other, other_port, &keys);
    fq_system_t *spoke = s_system("spoke");
    s_connect(spoke, other_port, cert, zcert_public_txt(keys.server));
    assert_int_equal(fq_gateway_wait_connected(spoke, S_CONNECT_TIMEOUT_MS), 0);

    fq_system_destroy(&spoke);
    fq_system_destroy(&other);
    fq_system_destroy(&hub);
    zsock_destroy(&squatter);
    zcert_destroy(&cert);
    s_keys_destroy(&keys);
}

//  ---------------------------------------------------------------------
//  7c. One CURVE-bound gateway per process (zauth serves the process's one
//  ZAP endpoint): a second is refused, not a crash, until the first is gone.

static void test_one_curve_server_per_process(void **unused)
{
    (void)unused;
    int port = fq_test_free_port();
    int other_port = fq_test_free_port();
    s_keys_t keys;
    s_keys_new(&keys);
    char cert_file[256];
    zcert_t *cert = s_keys_add(&keys, "spoke", true, cert_file, sizeof cert_file);
    fq_system_t *hub = s_system("hub");
    s_bind_curve(hub, port, &keys);
    fq_system_t *other = s_system("other");
    char endpoint[64];
    fq_gateway_config_t cfg = s_gateway_config();
    cfg.bind = s_address(endpoint, sizeof endpoint, other_port, "");
    cfg.cert = keys.server;
    cfg.allow_dir = keys.allow;
    assert_int_equal(fq_gateway_start(other, &cfg), FQ_EINVAL);

    fq_system_destroy(&hub);
    assert_int_equal(fq_gateway_start(other, &cfg), 0);
    fq_system_t *spoke = s_system("spoke");
    s_connect(spoke, other_port, cert, zcert_public_txt(keys.server));
    assert_int_equal(fq_gateway_wait_connected(spoke, S_CONNECT_TIMEOUT_MS), 0);

    fq_system_destroy(&spoke);
    fq_system_destroy(&other);
    zcert_destroy(&cert);
    s_keys_destroy(&keys);
}

//  ---------------------------------------------------------------------
//  8. Throughput sanity: many tells through the gateway, each way, all
//  arrive and in order.

static void s_tell_many(fq_client_t *client, const char *counter)
{
    for (uint64_t n = 0; n < S_THROUGHPUT_TELLS; n++) {
        int rc = fq_client_tell(client, counter, &fq_tick_desc, &(fq_tick_t){.n = n});
        if (rc)
            fail_msg("tell %llu failed: %s", (unsigned long long)n, fq_err_name(rc));
    }
    //  The ask travels behind the tells, so it is answered after all of them
    fq_msg_t reply;
    assert_int_equal(fq_client_ask(client, counter, &fq_tally_desc, &(fq_tally_t){0},
                                   S_THROUGHPUT_ASK_MS, &reply),
                     0);
    fq_tally_t tally;
    assert_int_equal(fq_msg_decode(&reply, &fq_tally_desc, &tally), 0);
    assert_int_equal(tally.received, S_THROUGHPUT_TELLS);
    assert_int_equal(tally.misordered, 0);
}

static void test_throughput(void **unused)
{
    (void)unused;
    int port = fq_test_free_port();
    s_keys_t keys;
    s_keys_new(&keys);
    char cert_file[256];
    zcert_t *cert = s_keys_add(&keys, "spoke", true, cert_file, sizeof cert_file);
    fq_system_t *hub = s_system("hub");
    assert_int_equal(fq_system_spawn(hub, "counter", &s_counter, NULL, NULL), 0);
    s_bind_curve(hub, port, &keys);
    fq_system_t *spoke = s_system("spoke");
    assert_int_equal(fq_system_spawn(spoke, "counter", &s_counter, NULL, NULL), 0);
    s_connect(spoke, port, cert, zcert_public_txt(keys.server));
    assert_int_equal(fq_gateway_wait_connected(spoke, S_CONNECT_TIMEOUT_MS), 0);

    fq_client_t *spoke_client = fq_client_new(spoke);
    fq_client_t *hub_client = fq_client_new(hub);
    int64_t start = zclock_mono();
    char counter[64];
    s_tell_many(spoke_client, s_address(counter, sizeof counter, port, "/user/counter"));
    int64_t middle = zclock_mono();
    s_tell_many(hub_client, "fq://spoke/user/counter");
    int64_t end = zclock_mono();
    print_message("%d tells: %lld ms connecting side to bound, %lld ms back\n", S_THROUGHPUT_TELLS,
                  (long long)(middle - start), (long long)(end - middle));
    assert_int_equal(fq_system_dead_letters(hub), 0);
    assert_int_equal(fq_system_dead_letters(spoke), 0);

    fq_client_destroy(&hub_client);
    fq_client_destroy(&spoke_client);
    fq_system_destroy(&spoke);
    fq_system_destroy(&hub);
    zcert_destroy(&cert);
    s_keys_destroy(&keys);
}

int main(void)
{
    //  A peer that died must not take us with it when we write to its stdin
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_curve_allowed, s_teardown),
        cmocka_unit_test_teardown(test_curve_refused, s_teardown),
        cmocka_unit_test_teardown(test_death_watch_on_kill, s_teardown),
        cmocka_unit_test_teardown(test_reconnect, s_teardown),
        cmocka_unit_test_teardown(test_reconnect_after_crash, s_teardown),
        cmocka_unit_test_teardown(test_remote_stop, s_teardown),
        cmocka_unit_test_teardown(test_hostile_input, s_teardown),
        cmocka_unit_test_teardown(test_admission, s_teardown),
        cmocka_unit_test_teardown(test_reply_forgeries, s_teardown),
        cmocka_unit_test_teardown(test_unusable_configuration, s_teardown),
        cmocka_unit_test_teardown(test_flood_without_reading, s_teardown),
        cmocka_unit_test_teardown(test_stalled_peer_dropped, s_teardown),
        cmocka_unit_test_teardown(test_insecure_mode, s_teardown),
        cmocka_unit_test_teardown(test_bind_conflict, s_teardown),
        cmocka_unit_test_teardown(test_one_curve_server_per_process, s_teardown),
        cmocka_unit_test_teardown(test_throughput, s_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
