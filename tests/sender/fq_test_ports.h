/*  fq_test_ports.h — local ports where a connection fails, for the sender
    tests of receivers that cannot be reached: one that refuses
    connections at once, one that never answers them (so the client's
    connect timeout strikes). Include after <cmocka.h>.

    Each is a port of 127.0.0.1 held by a socket of the test, so no other
    test running meanwhile can start listening on it.
*/
#ifndef FQ_TEST_PORTS_H
#define FQ_TEST_PORTS_H

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

//  Connections of ours that fill a silent port's accept queue (a backlog
//  of 0 takes one; one more in case a kernel counts otherwise), and how
//  long the first may take to be made on the loopback.
#define FQ_TEST_PORT_FILLERS 2
#define FQ_TEST_PORT_FILL_MS 5000

typedef struct {
    int fd;
    int fillers[FQ_TEST_PORT_FILLERS];
    int port;
} fq_test_port_t;

//  Binds self to a free port of 127.0.0.1, without listening.
static inline void fq_test_port_bind(fq_test_port_t *self)
{
    for (int i = 0; i < FQ_TEST_PORT_FILLERS; i++)
        self->fillers[i] = -1;
    self->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(self->fd >= 0);
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(self->fd, (struct sockaddr *)&address, sizeof address), 0);
    socklen_t address_len = sizeof address;
    assert_int_equal(getsockname(self->fd, (struct sockaddr *)&address, &address_len), 0);
    self->port = ntohs(address.sin_port);
}

//  A port that refuses connections: bound but not listening.
static inline void fq_test_port_refusing(fq_test_port_t *self)
{
    fq_test_port_bind(self);
}

//  A port where a connection is never made: it listens with a backlog of
//  0, which connections of ours fill and nobody accepts, and Linux drops
//  the SYN of any connection more while the accept queue is full, so a
//  client waits until its connect timeout, as for a host that is down.
static inline void fq_test_port_silent(fq_test_port_t *self)
{
    fq_test_port_bind(self);
    assert_int_equal(listen(self->fd, 0), 0);
    struct sockaddr_in address = {.sin_family = AF_INET,
                                  .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
                                  .sin_port = htons((uint16_t)self->port)};
    for (int i = 0; i < FQ_TEST_PORT_FILLERS; i++) {
        self->fillers[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        assert_true(self->fillers[i] >= 0);
        connect(self->fillers[i], (struct sockaddr *)&address, sizeof address);
    }
    //  The first is in the queue once it is made
    struct pollfd item = {.fd = self->fillers[0], .events = POLLOUT};
    assert_int_equal(poll(&item, 1, FQ_TEST_PORT_FILL_MS), 1);
    int error = -1;
    socklen_t error_len = sizeof error;
    assert_int_equal(getsockopt(self->fillers[0], SOL_SOCKET, SO_ERROR, &error, &error_len), 0);
    assert_int_equal(error, 0);
}

static inline void fq_test_port_close(fq_test_port_t *self)
{
    for (int i = 0; i < FQ_TEST_PORT_FILLERS; i++)
        if (self->fillers[i] >= 0)
            close(self->fillers[i]);
    close(self->fd);
}

#endif
