/*  gateway_smoke_test.c — two systems in one process joined by the gateway. */
#include "fq_gateway.h"
#include "fq_test_admit.h"
#include "fq_test_msgs.h"
#include <setjmp.h>
#include <stdarg.h>
#include <cmocka.h>

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

//  A remote ask crosses CURVE both ways and the reply names the asker remotely.
static void test_remote_ask(void **unused)
{
    (void)unused;
    char dir[] = "/tmp/fq-gw-XXXXXX";
    assert_non_null(mkdtemp(dir));
    zcert_t *server_cert = zcert_new();
    zcert_t *client_cert = zcert_new();
    char path[256];
    snprintf(path, sizeof path, "%s/client.cert", dir);
    zcert_save_public(client_cert, path);

    fq_system_t *server = fq_system_new(&(fq_system_config_t){.name = "server"});
    fq_system_t *client = fq_system_new(&(fq_system_config_t){.name = "client"});
    assert_int_equal(fq_system_spawn(server, "echo", &s_echo, NULL, NULL), 0);
    assert_int_equal(
        fq_gateway_start(server, &(fq_gateway_config_t){.bind = "tcp://127.0.0.1:47311",
                                                        .cert = server_cert,
                                                        .allow_dir = dir,
                                                        .admit = fq_test_admit_mesh,
                                                        .admit_count = FQ_TEST_ADMIT_MESH_COUNT}),
        0);
    assert_int_equal(
        fq_gateway_start(client, &(fq_gateway_config_t){.connect = "tcp://127.0.0.1:47311",
                                                        .cert = client_cert,
                                                        .server_key = zcert_public_txt(server_cert),
                                                        .admit = fq_test_admit_mesh,
                                                        .admit_count = FQ_TEST_ADMIT_MESH_COUNT}),
        0);
    assert_int_equal(fq_gateway_wait_connected(client, 5000), 0);
    fq_client_t *asker = fq_client_new(client);
    fq_msg_t reply;
    fq_ping_t ping = {.seq = 1, .text = "x"};
    assert_int_equal(
        fq_client_ask(asker, "tcp://127.0.0.1:47311/user/echo", &fq_ping_desc, &ping, 2000, &reply),
        0);
    fq_pong_t pong;
    assert_int_equal(fq_msg_decode(&reply, &fq_pong_desc, &pong), 0);
    assert_int_equal(pong.seq, 2);
    char expected[128];
    snprintf(expected, sizeof expected, "fq://client%s", fq_client_address(asker));
    assert_string_equal(pong.text, expected);
    assert_int_equal(
        fq_client_ask(asker, "fq://server/user/echo", &fq_ping_desc, &ping, 2000, &reply), 0);
    assert_int_equal(
        fq_client_ask(asker, "fq://server/user/nobody", &fq_ping_desc, &ping, 2000, &reply),
        FQ_ENOACTOR);
    fq_client_destroy(&asker);
    fq_system_destroy(&client);
    fq_system_destroy(&server);
    zcert_destroy(&server_cert);
    zcert_destroy(&client_cert);
    unlink(path);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_remote_ask)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
