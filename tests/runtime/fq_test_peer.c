/*  fq_test_peer.c — a remote actor system in a process of its own, for
    gateway_test.c.

    It runs a system named NAME with an echo actor at /user/echo (PING in,
    PONG out with seq + 1 and the asker's address as text) and a gateway
    that connects to ENDPOINT, or binds it. Once the gateway is welcomed
    (connect) or bound (bind) it prints "ready" on stdout; then it reads
    commands, one a line, on stdin:

        stop PATH   stops the local actor at PATH (answers "stopping PATH")
        quit        stops the system and exits 0 (so does end of input)

    Usage:
        fq_test_peer connect NAME ENDPOINT CERT_FILE SERVER_KEY TIMEOUT_MS
        fq_test_peer bind NAME ENDPOINT CERT_FILE ALLOW_DIR TIMEOUT_MS

    CERT_FILE is a certificate saved with zcert_save (its _secret file
    next to it); "-" runs the gateway in insecure mode (SERVER_KEY and
    ALLOW_DIR are then ignored). TIMEOUT_MS bounds the wait for "ready".
    Heartbeats are short (100 ms, dead after 600 ms), as the test's own.
*/
#include "fq_gateway.h"
#include "fq_log.h"
#include "fq_test_admit.h"
#include "fq_test_msgs.h"
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  Exit codes, so that the test can tell its cases apart.
enum {
    S_EXIT_OK = 0,
    S_EXIT_USAGE = 2,
    S_EXIT_NOT_CONNECTED = 3, //  No welcome within TIMEOUT_MS
    S_EXIT_START_FAILED = 4,  //  The system or its gateway did not start
};

//  The gateway test's timings: short, so that deaths show within a second.
#define S_HEARTBEAT_MS         100
#define S_HEARTBEAT_TIMEOUT_MS 600
#define S_RECONNECT_MIN_MS     50
#define S_RECONNECT_MAX_MS     400

//  Longest command line read from stdin, and the stop command's prefix.
#define S_LINE_MAX 512
#define S_STOP     "stop "

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

static int s_usage(void)
{
    fprintf(stderr, "usage: fq_test_peer connect NAME ENDPOINT CERT_FILE|- SERVER_KEY TIMEOUT_MS\n"
                    "       fq_test_peer bind NAME ENDPOINT CERT_FILE|- ALLOW_DIR TIMEOUT_MS\n");
    return S_EXIT_USAGE;
}

//  Serves stdin commands until quit or end of input.
static void s_serve_commands(fq_system_t *sys)
{
    fq_client_t *client = fq_client_new(sys);
    char line[S_LINE_MAX];
    while (client && fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\r\n")] = 0;
        if (streq(line, "quit"))
            break;
        if (strncmp(line, S_STOP, strlen(S_STOP)) == 0) {
            const char *path = line + strlen(S_STOP);
            int rc = fq_client_stop(client, path);
            if (rc)
                printf("error %s\n", fq_err_name(rc));
            else
                printf("stopping %s\n", path);
        } else
            printf("error unknown command\n");
        fflush(stdout);
    }
    fq_client_destroy(&client);
}

int main(int argc, char *argv[])
{
    //  stdout carries the protocol with the test: the runtime (and CZMQ
    //  through it) logs elsewhere
    fq_log_set_stream(stderr);
    //  A test that has gone away must not kill us mid-answer
    signal(SIGPIPE, SIG_IGN);
    if (argc != 7 || (!streq(argv[1], "connect") && !streq(argv[1], "bind")))
        return s_usage();
    bool bind = streq(argv[1], "bind");
    const char *name = argv[2];
    const char *endpoint = argv[3];
    const char *cert_file = argv[4];
    const char *key_or_dir = argv[5];
    int timeout_ms = atoi(argv[6]);
    if (timeout_ms <= 0)
        return s_usage();

    fq_system_t *sys = fq_system_new(&(fq_system_config_t){.name = name});
    if (!sys) {
        fprintf(stderr, "fq_test_peer: could not start system %s\n", name);
        return S_EXIT_START_FAILED;
    }
    bool insecure = streq(cert_file, "-");
    fq_gateway_config_t gw = {.bind = bind ? endpoint : NULL,
                              .connect = bind ? NULL : endpoint,
                              .cert_file = insecure ? NULL : cert_file,
                              .allow_dir = bind && !insecure ? key_or_dir : NULL,
                              .server_key = !bind && !insecure ? key_or_dir : NULL,
                              .insecure = insecure,
                              .admit = fq_test_admit_mesh,
                              .admit_count = FQ_TEST_ADMIT_MESH_COUNT,
                              .heartbeat_ms = S_HEARTBEAT_MS,
                              .heartbeat_timeout_ms = S_HEARTBEAT_TIMEOUT_MS,
                              .reconnect_min_ms = S_RECONNECT_MIN_MS,
                              .reconnect_max_ms = S_RECONNECT_MAX_MS};
    if (fq_system_spawn(sys, "echo", &s_echo, NULL, NULL) != 0 || fq_gateway_start(sys, &gw) != 0) {
        fprintf(stderr, "fq_test_peer: could not start the echo actor or the gateway\n");
        fq_system_destroy(&sys);
        return S_EXIT_START_FAILED;
    }
    //  A bound gateway counts as connected once it runs, that is once bound
    if (fq_gateway_wait_connected(sys, timeout_ms) != 0) {
        fprintf(stderr, "fq_test_peer: could not %s %s within %d ms\n", bind ? "bind" : "join",
                endpoint, timeout_ms);
        fq_system_destroy(&sys);
        return bind ? S_EXIT_START_FAILED : S_EXIT_NOT_CONNECTED;
    }
    printf("ready\n");
    fflush(stdout);
    s_serve_commands(sys);
    fq_system_destroy(&sys);
    return S_EXIT_OK;
}
