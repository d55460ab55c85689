/*  fq_sender.h — the actors of fairq-sender.

        /user/sender             speaks the sender protocol with fairqd's
                                 dispatcher (docs/protocol.md)
        /user/sender/worker-N    delivers one message at a time through
                                 its own transport (fq_transport.h)

    The sender grants fairqd as much credit as it has idle workers, so it
    never holds a message it cannot start delivering at once. */
#ifndef FQ_SENDER_H
#define FQ_SENDER_H

#include "fq_messages.h"
#include "fq_system.h"
#include "fq_transport.h"

#define FQ_SENDER_PATH FQ_PROTOCOL_SENDER_PATH
//  Most delivery workers (the concurrency). Each is an actor with a few
//  ZeroMQ sockets and an SMTP connection, and each socket holds a file
//  descriptor: a few hundred stay well inside the usual 1,024 descriptors.
//  Run more senders for more.
#define FQ_SENDER_WORKERS 200

typedef struct {
    const char *dispatcher; //  Address of fairqd's dispatcher
    const char *name;       //  Said in HELLO
    const char *version;
    int concurrency; //  Workers, 1..FQ_SENDER_WORKERS
    fq_transport_config_t transport;
} fq_sender_config_t;

//  Spawns /user/sender and its workers. Strings are copied. Returns 0 or a
//  code.
int fq_sender_start(fq_system_t *sys, const fq_sender_config_t *config);

//  Says BYE and waits up to timeout_ms for the workers to finish the
//  messages they hold (their outcomes are sent). Returns how many were
//  still being delivered when it gave up.
int fq_sender_drain(fq_system_t *sys, int timeout_ms);

#endif
