/*  fq_test_support.h — waiting helpers shared by the runtime tests.

    Tests watch actors from outside: through a client's inbox, through the
    system's counters, or through memory a test shares with a behaviour
    via its args. Every wait here has a deadline, so a broken runtime fails
    a test instead of hanging it. Include after <cmocka.h>.
*/
#ifndef FQ_TEST_SUPPORT_H
#define FQ_TEST_SUPPORT_H

#include "fq_system.h"

//  How long a test waits for what should happen promptly. Generous: tests
//  run under ASan, in parallel with each other, on two-core CI machines.
#define FQ_TEST_WAIT_MS 5000

//  How long a test listens for something that must not happen.
#define FQ_TEST_QUIET_MS 300

//  Polling step while waiting; short next to every delay under test.
#define FQ_TEST_POLL_MS 2

//  Re-evaluates cond until it holds; fails the test after FQ_TEST_WAIT_MS.
#define assert_eventually(cond)                                                                    \
    do {                                                                                           \
        int64_t fq_deadline_ = zclock_mono() + FQ_TEST_WAIT_MS;                                    \
        while (!(cond)) {                                                                          \
            if (zclock_mono() > fq_deadline_)                                                      \
                fail_msg("timed out waiting for %s", #cond);                                       \
            zclock_sleep(FQ_TEST_POLL_MS);                                                         \
        }                                                                                          \
    } while (0)

//  The counters of the actor at path; all zero (and path "") if none lives.
static inline fq_actor_stats_t fq_test_stats(fq_system_t *sys, const char *path)
{
    fq_actor_stats_t stats;
    if (fq_system_stats(sys, path, &stats) != 0)
        memset(&stats, 0, sizeof stats);
    return stats;
}

//  Receives the client's next message, which must be of type type.
static inline void fq_test_expect(fq_client_t *client, uint32_t type, fq_msg_t *msg)
{
    int rc = fq_client_recv(client, FQ_TEST_WAIT_MS, msg);
    if (rc != 0)
        fail_msg("expected message %u, got %s", type, fq_err_name(rc));
    if (msg->type != type)
        fail_msg("expected message %u, got %u from %s", type, msg->type, msg->sender);
}

//  Asserts that nothing reaches the client for FQ_TEST_QUIET_MS.
static inline void fq_test_expect_quiet(fq_client_t *client)
{
    fq_msg_t msg;
    int rc = fq_client_recv(client, FQ_TEST_QUIET_MS, &msg);
    if (rc == 0)
        fail_msg("expected no message, got %u from %s", msg.type, msg.sender);
    assert_int_equal(rc, FQ_ETIMEDOUT);
}

#endif
