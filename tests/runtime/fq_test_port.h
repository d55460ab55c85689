/*  fq_test_port.h — free TCP ports for the gateway tests.

    The gateway tests bind real ports on 127.0.0.1. They take them from one
    range, claimed and probed free at run time: another run of a test (in
    another build directory, or another gateway test of this one, run by
    ctest at the same time) may be using some of them. Include after
    <cmocka.h>.
*/
#ifndef FQ_TEST_PORT_H
#define FQ_TEST_PORT_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define FQ_TEST_PORT_FIRST 47400
#define FQ_TEST_PORT_COUNT 100

//  A port of the range that no other test process holds and nothing
//  listens on. Each process claims its ports with an abstract unix socket
//  named after the port, which the kernel releases when the process ends,
//  however it ends; the claim stays open until then.
static inline int fq_test_free_port(void)
{
    static int next = -1;
    if (next < 0)
        next = (int)(getpid() % FQ_TEST_PORT_COUNT);
    for (int tries = 0; tries < FQ_TEST_PORT_COUNT; tries++) {
        int port = FQ_TEST_PORT_FIRST + next++ % FQ_TEST_PORT_COUNT;
        int claim = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_true(claim >= 0);
        struct sockaddr_un name = {.sun_family = AF_UNIX};
        //  sun_path[0] stays 0: an abstract name, no file
        int len = snprintf(name.sun_path + 1, sizeof name.sun_path - 1, "fq-gateway-test-%d", port);
        socklen_t size = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)len);
        if (bind(claim, (struct sockaddr *)&name, size) != 0) {
            close(claim);
            continue;
        }
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_true(fd >= 0);
        //  As ZeroMQ binds: a port left in TIME_WAIT counts as free
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        struct sockaddr_in addr = {.sin_family = AF_INET,
                                   .sin_port = htons((uint16_t)port),
                                   .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        bool available = bind(fd, (struct sockaddr *)&addr, sizeof addr) == 0;
        close(fd);
        if (available)
            return port;
        close(claim);
    }
    fail_msg("no free port in %d..%d", FQ_TEST_PORT_FIRST,
             FQ_TEST_PORT_FIRST + FQ_TEST_PORT_COUNT - 1);
    return -1;
}

#endif
