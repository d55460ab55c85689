/*  fq_test_admit.h — the admission table of the runtime tests' gateways.

    The tests join systems of their own, all trusted, that send each other
    every kind of test message: the wildcard rows let every application
    message, as a tell, an ask or a reply, and every ERROR reply through.
    The gateway still refuses the runtime's own messages from a peer. */
#ifndef FQ_TEST_ADMIT_H
#define FQ_TEST_ADMIT_H

#include "fq_gateway.h"
#include "fq_sysmsg.h"

static const fq_gateway_admit_t fq_test_admit_mesh[] = {
    {0, NULL, FQ_ADMIT_TELL | FQ_ADMIT_ASK | FQ_ADMIT_REPLY},
    {FQ_MSG_ERROR, NULL, FQ_ADMIT_REPLY},
};
#define FQ_TEST_ADMIT_MESH_COUNT (sizeof fq_test_admit_mesh / sizeof fq_test_admit_mesh[0])

#endif
