#include "fq_system.h"
#include "fq_test_msgs.h"
#include <stdarg.h>
#include <setjmp.h>
#include <cmocka.h>

static int s_echo_receive(fq_ctx_t *ctx, void *state, const fq_msg_t *msg)
{
    (void)state;
    fq_ping_t ping;
    if (fq_msg_decode(msg, &fq_ping_desc, &ping))
        return 0;
    fq_pong_t pong = {.seq = ping.seq + 1, .text = ping.text};
    return fq_reply(ctx, msg, &fq_pong_desc, &pong);
}
static const fq_behaviour_t s_echo = {.name = "echo", .receive = s_echo_receive};

static void test_ask_echo(void **unused)
{
    (void)unused;
    fq_system_config_t cfg = {.name = "smoke"};
    fq_system_t *sys = fq_system_new(&cfg);
    assert_non_null(sys);
    assert_int_equal(fq_system_spawn(sys, "echo", &s_echo, NULL, NULL), 0);
    fq_client_t *client = fq_client_new(sys);
    fq_ping_t ping = {.seq = 41, .text = "hi"};
    fq_msg_t reply;
    assert_int_equal(fq_client_ask(client, "/user/echo", &fq_ping_desc, &ping, 1000, &reply), 0);
    fq_pong_t pong;
    assert_int_equal(fq_msg_decode(&reply, &fq_pong_desc, &pong), 0);
    assert_int_equal(pong.seq, 42);
    assert_string_equal(pong.text, "hi");
    fq_client_destroy(&client);
    fq_system_destroy(&sys);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_ask_echo)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
