/*  gateway_failover_test.c — a connecting gateway given several endpoints
    (the fairqd of one cluster, of which only the leader binds) follows the
    one that serves: it skips an endpoint nothing listens on, moves on when
    its server says BYE, when the server's connection drops without a BYE
    (a killed process) and when the server falls silent (a frozen one),
    and refuses malformed lists.

    The servers are systems of this process, bound in insecure mode (only
    one CURVE-bound gateway may run in a process, see gateway_test.c),
    except for the first test, which joins over CURVE; and a raw ROUTER
    that plays a server which welcomes and then vanishes or falls silent.
*/
#include "fq_gateway.h"
#include "fq_test_admit.h"
#include "fq_test_msgs.h"
#include <setjmp.h>
#include <stdarg.h>
#include <cmocka.h>
#include "fq_test_port.h"

//  Short heartbeats, as in gateway_test.c: a silent server is dead after
//  600 ms, and an endpoint that welcomes nobody is left after as long.
#define S_HEARTBEAT_MS         100
#define S_HEARTBEAT_TIMEOUT_MS 600
#define S_RECONNECT_MIN_MS     50
#define S_RECONNECT_MAX_MS     400

//  A heartbeat timeout far longer than any move here may take: a move
//  faster than it was not made by the heartbeats.
#define S_SLOW_HEARTBEAT_TIMEOUT_MS 5000

//  How soon the gateway must have joined the next server after losing one
//  by BYE or a dropped connection: at once, give or take a slow machine.
#define S_MOVE_MAX_MS 1500

//  Generous bounds for what normally takes milliseconds (sanitizers, a
//  loaded two-core machine).
#define S_CONNECT_TIMEOUT_MS 5000
#define S_ASK_TIMEOUT_MS     3000

#define S_GATEWAY "/system/gateway"

#define S_ENDPOINT_SIZE 64
#define S_LIST_SIZE     ((FQ_GATEWAY_ENDPOINTS_MAX + 2) * S_ENDPOINT_SIZE)

//  "tcp://127.0.0.1:port" followed by path ("" for the bare endpoint).
static char *s_address(char *buf, size_t size, int port, const char *path)
{
    snprintf(buf, size, "tcp://127.0.0.1:%d%s", port, path);
    return buf;
}

//  "tcp://127.0.0.1:first,tcp://127.0.0.1:second".
static char *s_list(char *buf, size_t size, int first, int second)
{
    snprintf(buf, size, "tcp://127.0.0.1:%d,tcp://127.0.0.1:%d", first, second);
    return buf;
}

//  ---------------------------------------------------------------------
//  Servers that say who they are: /user/who answers a PING with a PONG
//  whose text is its system's name, so a test sees which server it reached.

static int s_who_receive(fq_ctx_t *ctx, void *state, const fq_msg_t *msg)
{
    (void)state;
    fq_ping_t ping;
    if (fq_msg_decode(msg, &fq_ping_desc, &ping))
        return 0;
    fq_pong_t pong = {.seq = ping.seq + 1, .text = fq_system_name(fq_ctx_system(ctx))};
    return fq_reply(ctx, msg, &fq_pong_desc, &pong);
}
static const fq_behaviour_t s_who = {.name = "who", .receive = s_who_receive};

static fq_system_t *s_system(const char *name)
{
    fq_system_t *sys = fq_system_new(&(fq_system_config_t){.name = name});
    assert_non_null(sys);
    assert_int_equal(fq_system_spawn(sys, "who", &s_who, NULL, NULL), 0);
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

//  A system named name whose gateway binds port, without CURVE.
static fq_system_t *s_server(const char *name, int port)
{
    fq_system_t *sys = s_system(name);
    char endpoint[S_ENDPOINT_SIZE];
    fq_gateway_config_t cfg = s_gateway_config();
    cfg.bind = s_address(endpoint, sizeof endpoint, port, "");
    cfg.insecure = true;
    assert_int_equal(fq_gateway_start(sys, &cfg), 0);
    return sys;
}

//  A system whose gateway connects to list, without CURVE, and gives a
//  server heartbeat_timeout_ms of silence.
static fq_system_t *s_spoke(const char *list, int heartbeat_timeout_ms)
{
    fq_system_t *sys = s_system("spoke");
    fq_gateway_config_t cfg = s_gateway_config();
    cfg.connect = list;
    cfg.insecure = true;
    cfg.heartbeat_timeout_ms = heartbeat_timeout_ms;
    assert_int_equal(fq_gateway_start(sys, &cfg), 0);
    return sys;
}

//  Asks /user/who at address; returns the name of the system that
//  answered (in name), or the ask's error.
static int s_who_at(fq_client_t *client, const char *address, char *name, size_t size)
{
    fq_msg_t reply;
    fq_ping_t ping = {.seq = 1, .text = "who"};
    int rc = fq_client_ask(client, address, &fq_ping_desc, &ping, S_ASK_TIMEOUT_MS, &reply);
    if (rc == 0) {
        fq_pong_t pong;
        assert_int_equal(fq_msg_decode(&reply, &fq_pong_desc, &pong), 0);
        snprintf(name, size, "%s", pong.text);
    }
    return rc;
}

//  Asserts that the ask to address is answered by the system named server.
static void s_expect_served_by(fq_client_t *client, const char *address, const char *server)
{
    char name[FQ_NAME_MAX + 1] = "";
    assert_int_equal(s_who_at(client, address, name, sizeof name), 0);
    assert_string_equal(name, server);
}

//  Waits until the spoke's gateway has joined a server; returns how long
//  that took since since.
static int64_t s_joined_after(fq_system_t *spoke, int64_t since)
{
    assert_int_equal(fq_gateway_wait_connected(spoke, S_CONNECT_TIMEOUT_MS), 0);
    return zclock_mono() - since;
}

//  Returns once the gateway has handled what client sent it so far (its
//  watches): an ask of its status from the same client comes after them.
static void s_watch_in_place(fq_client_t *client)
{
    fq_msg_t reply;
    assert_int_equal(fq_client_ask(client, S_GATEWAY, &fq_gw_status_query_desc,
                                   &(fq_gw_status_query_t){0}, S_ASK_TIMEOUT_MS, &reply),
                     0);
}

//  Waits for a TERMINATED notice to client and checks it is about target.
//  failed: whether the notice must say the actor failed (a server lost
//  without a word), or need not (a server that stops its actors first).
static void s_expect_terminated(fq_client_t *client, const char *target, bool failed)
{
    fq_msg_t msg;
    int rc;
    while ((rc = fq_client_recv(client, S_CONNECT_TIMEOUT_MS, &msg)) == 0 &&
           msg.type != FQ_MSG_TERMINATED)
        ;
    if (rc)
        fail_msg("no TERMINATED for %s: %s", target, fq_err_name(rc));
    fq_terminated_t notice;
    assert_int_equal(fq_msg_decode(&msg, &fq_terminated_desc, &notice), 0);
    assert_string_equal(notice.path, target);
    if (failed)
        assert_true(notice.failed);
}

//  ---------------------------------------------------------------------
//  1. The first endpoint has nothing bound (a standby): the gateway gives
//  up on it as soon as it refuses the connection and joins the second, over CURVE
//  with the one server key; an address naming the first endpoint reaches
//  the server it joined, as does one naming the second.

static void test_skips_unbound_endpoint(void **unused)
{
    (void)unused;
    int standby = fq_test_free_port(); //  Claimed, so nothing else binds it
    int leader = fq_test_free_port();
    char dir[] = "/tmp/fq-gateway-failover-XXXXXX";
    assert_non_null(mkdtemp(dir));
    zcert_t *server_cert = zcert_new();
    zcert_t *spoke_cert = zcert_new();
    char path[128];
    snprintf(path, sizeof path, "%s/spoke.cert", dir);
    assert_int_equal(zcert_save_public(spoke_cert, path), 0);

    fq_system_t *server = s_system("leader");
    char endpoint[S_ENDPOINT_SIZE];
    fq_gateway_config_t bind = s_gateway_config();
    bind.bind = s_address(endpoint, sizeof endpoint, leader, "");
    bind.cert = server_cert;
    bind.allow_dir = dir;
    assert_int_equal(fq_gateway_start(server, &bind), 0);

    int64_t start = zclock_mono();
    fq_system_t *spoke = s_system("spoke");
    char list[S_LIST_SIZE];
    fq_gateway_config_t join = s_gateway_config();
    join.connect = s_list(list, sizeof list, standby, leader);
    join.cert = spoke_cert;
    join.server_key = zcert_public_txt(server_cert);
    assert_int_equal(fq_gateway_start(spoke, &join), 0);
    int64_t took = s_joined_after(spoke, start);
    print_message("joined the second endpoint after %lld ms\n", (long long)took);
    //  The first refuses the connection, and the gateway moves on at once,
    //  not after a welcome timeout
    assert_true(took < S_HEARTBEAT_TIMEOUT_MS);

    fq_client_t *client = fq_client_new(spoke);
    char address[S_LIST_SIZE];
    s_expect_served_by(client, s_address(address, sizeof address, standby, "/user/who"), "leader");
    s_expect_served_by(client, s_address(address, sizeof address, leader, "/user/who"), "leader");
    //  The server knows the spoke by name, as with one endpoint
    fq_client_t *server_client = fq_client_new(server);
    s_expect_served_by(server_client, "fq://spoke/user/who", "spoke");

    fq_client_destroy(&server_client);
    fq_client_destroy(&client);
    fq_system_destroy(&spoke);
    fq_system_destroy(&server);
    zcert_destroy(&spoke_cert);
    zcert_destroy(&server_cert);
    zsys_file_delete(path);
    zsys_dir_delete("%s", dir);
}

//  ---------------------------------------------------------------------
//  2. Two servers bound, A listed first: the gateway joins A. A stops (and
//  says BYE): the gateway joins B at once, and the same address, naming
//  A's endpoint, now reaches B. A watcher of A's actor hears it is gone.

static void test_moves_on_after_bye(void **unused)
{
    (void)unused;
    int port_a = fq_test_free_port();
    int port_b = fq_test_free_port();
    fq_system_t *a = s_server("alpha", port_a);
    fq_system_t *b = s_server("bravo", port_b);
    char list[S_LIST_SIZE];
    fq_system_t *spoke = s_spoke(s_list(list, sizeof list, port_a, port_b), S_HEARTBEAT_TIMEOUT_MS);
    s_joined_after(spoke, zclock_mono());
    fq_client_t *client = fq_client_new(spoke);
    char who[S_ENDPOINT_SIZE];
    s_address(who, sizeof who, port_a, "/user/who");
    s_expect_served_by(client, who, "alpha");
    assert_int_equal(fq_client_watch(client, who), 0);
    s_expect_served_by(client, who, "alpha"); //  The watch is in place

    int64_t stopped = zclock_mono();
    fq_system_destroy(&a);
    s_expect_terminated(client, who, false);
    int64_t took = s_joined_after(spoke, stopped);
    print_message("joined B %lld ms after A said goodbye\n", (long long)took);
    assert_true(took < S_MOVE_MAX_MS);
    s_expect_served_by(client, who, "bravo");

    fq_client_destroy(&client);
    fq_system_destroy(&spoke);
    fq_system_destroy(&b);
}

//  ---------------------------------------------------------------------
//  A raw server: a ROUTER that welcomes the first HELLO as system name
//  (s_raw_welcome), then answers nothing more, not even heartbeats. Bound
//  before the gateway that joins it starts: a refused connection would
//  send that gateway on to the next endpoint at once.

static zsock_t *s_raw_server(int port)
{
    char endpoint[S_ENDPOINT_SIZE];
    zsock_t *router = zsock_new(ZMQ_ROUTER);
    assert_non_null(router);
    zsock_set_linger(router, 0);
    zsock_set_rcvtimeo(router, S_CONNECT_TIMEOUT_MS);
    assert_int_equal(zsock_bind(router, "%s", s_address(endpoint, sizeof endpoint, port, "")),
                     port);
    return router;
}

static void s_raw_welcome(zsock_t *router, const char *name)
{
    zmsg_t *hello = zmsg_recv(router);
    assert_non_null(hello);
    zframe_t *peer = zmsg_pop(hello);
    zmsg_destroy(&hello);
    msgpack_sbuffer buf;
    msgpack_sbuffer_init(&buf);
    fq_gw_welcome_t welcome = {.system = name, .version = 1};
    assert_int_equal(fq_envelope_encode(&buf, FQ_MSG_GW_WELCOME, 0, 0, NULL, NULL,
                                        &fq_gw_welcome_desc, &welcome, NULL),
                     0);
    zmsg_t *reply = zmsg_new();
    zmsg_append(reply, &peer);
    zmsg_addmem(reply, buf.data, buf.size);
    assert_int_equal(zmsg_send(&reply, router), 0);
    msgpack_sbuffer_destroy(&buf);
}

//  3. The server's connection drops without a BYE, as when its process is
//  killed (its kernel closes the socket): the gateway sees it at once,
//  long before the heartbeat timeout, and joins the next endpoint.

static void test_moves_on_when_connection_drops(void **unused)
{
    (void)unused;
    int port_a = fq_test_free_port();
    int port_b = fq_test_free_port();
    fq_system_t *b = s_server("bravo", port_b);
    zsock_t *a = s_raw_server(port_a);
    char list[S_LIST_SIZE];
    fq_system_t *spoke =
        s_spoke(s_list(list, sizeof list, port_a, port_b), S_SLOW_HEARTBEAT_TIMEOUT_MS);
    s_raw_welcome(a, "alpha");
    s_joined_after(spoke, zclock_mono());
    fq_client_t *client = fq_client_new(spoke);
    char who[S_ENDPOINT_SIZE];
    s_address(who, sizeof who, port_a, "/user/who");
    assert_int_equal(fq_client_watch(client, who), 0);
    s_watch_in_place(client);

    int64_t dropped = zclock_mono();
    zsock_destroy(&a);
    s_expect_terminated(client, who, true);
    int64_t took = s_joined_after(spoke, dropped);
    print_message("joined B %lld ms after A's connection dropped\n", (long long)took);
    assert_true(took < S_MOVE_MAX_MS);
    s_expect_served_by(client, who, "bravo");

    fq_client_destroy(&client);
    fq_system_destroy(&spoke);
    fq_system_destroy(&b);
}

//  4. The server falls silent but keeps its connection up, as a frozen
//  (SIGSTOPped) process does: the heartbeat timeout catches it, and the
//  gateway joins the next endpoint.

static void test_moves_on_when_server_falls_silent(void **unused)
{
    (void)unused;
    int port_a = fq_test_free_port();
    int port_b = fq_test_free_port();
    fq_system_t *b = s_server("bravo", port_b);
    zsock_t *a = s_raw_server(port_a);
    char list[S_LIST_SIZE];
    fq_system_t *spoke = s_spoke(s_list(list, sizeof list, port_a, port_b), S_HEARTBEAT_TIMEOUT_MS);
    s_raw_welcome(a, "alpha");
    int64_t welcomed = zclock_mono();
    s_joined_after(spoke, welcomed);
    fq_client_t *client = fq_client_new(spoke);
    char who[S_ENDPOINT_SIZE];
    s_address(who, sizeof who, port_a, "/user/who");
    assert_int_equal(fq_client_watch(client, who), 0);
    s_watch_in_place(client);

    //  Silent from its WELCOME on: the heartbeat timeout, not a dropped
    //  connection, makes the gateway give up on it and join B
    s_expect_terminated(client, who, true);
    int64_t took = s_joined_after(spoke, welcomed);
    print_message("joined B %lld ms after A's welcome\n", (long long)took);
    assert_true(took >= S_HEARTBEAT_TIMEOUT_MS);
    s_expect_served_by(client, who, "bravo");

    zsock_destroy(&a);
    fq_client_destroy(&client);
    fq_system_destroy(&spoke);
    fq_system_destroy(&b);
}

//  ---------------------------------------------------------------------
//  5. Malformed connect lists are refused, saying why; a list of the most
//  endpoints allowed is accepted.

static void test_malformed_lists(void **unused)
{
    (void)unused;
    const char *bad[] = {
        "",
        ",",
        "tcp://127.0.0.1:1,",
        ",tcp://127.0.0.1:1",
        "tcp://127.0.0.1:1,,tcp://127.0.0.1:2",
        "tcp://127.0.0.1:1,udp://127.0.0.1:2",
        "tcp://127.0.0.1:1, tcp://127.0.0.1:2",
        "tcp://",
        "127.0.0.1:1",
    };
    fq_system_t *spoke = s_system("spoke");
    fq_gateway_config_t cfg = s_gateway_config();
    cfg.insecure = true;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char problem[256] = "";
        assert_false(fq_gateway_endpoints_valid(bad[i], problem, sizeof problem));
        print_message("\"%s\": %s\n", bad[i], problem);
        assert_true(problem[0]);
        cfg.connect = bad[i];
        assert_int_equal(fq_gateway_start(spoke, &cfg), FQ_EINVAL);
    }
    //  The most endpoints allowed, and one more
    char list[S_LIST_SIZE] = "";
    size_t used = 0;
    for (int i = 1; i <= FQ_GATEWAY_ENDPOINTS_MAX + 1; i++)
        used += (size_t)snprintf(list + used, sizeof list - used, "%stcp://127.0.0.1:%d",
                                 i > 1 ? "," : "", i);
    char problem[256] = "";
    cfg.connect = list;
    assert_false(fq_gateway_endpoints_valid(list, problem, sizeof problem));
    assert_non_null(strstr(problem, "more than"));
    assert_int_equal(fq_gateway_start(spoke, &cfg), FQ_EINVAL);
    *strrchr(list, ',') = 0;
    assert_true(fq_gateway_endpoints_valid(list, problem, sizeof problem));
    assert_int_equal(fq_gateway_start(spoke, &cfg), 0);
    fq_system_destroy(&spoke);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_skips_unbound_endpoint),
        cmocka_unit_test(test_moves_on_after_bye),
        cmocka_unit_test(test_moves_on_when_connection_drops),
        cmocka_unit_test(test_moves_on_when_server_falls_silent),
        cmocka_unit_test(test_malformed_lists),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
