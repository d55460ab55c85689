/*  fq_sender.h — the actors of fairq-sender.

        /user/sender             speaks the sender protocol with fairqd's
                                 dispatcher (docs/protocol.md)
        /user/sender/worker-N    delivers one message at a time through
                                 its own transports (fq_transport.h)

    The sender grants fairqd as much credit as it has idle workers, so it
    never holds a message it cannot start delivering at once.

    Channels. A sender serves one or more channels ("email", "http", any
    other name), each through a transport of its own kind; each worker
    holds one transport per channel, so that each keeps its connections.
    The HELLO's capabilities say which: the transports' kinds, "batch",
    and one "channel=NAME" per channel served, e.g.

        smtp,http,batch,channel=email,channel=http

    A message of a channel the sender does not serve is answered with a
    transient NACK saying so (fairqd routes by these capabilities; this is
    the safety net behind it). */
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

//  Most channels one sender serves, and the longest name of one: 1 to 32
//  of a-z 0-9 _ -, the rule fairqd takes a request's channel by
//  (channels/fq_channel.h, a folder sender/ does not use). Their tokens
//  must fit in HELLO's capabilities as well.
#define FQ_SENDER_CHANNELS_MAX     8
#define FQ_SENDER_CHANNEL_NAME_MAX 32

//  The longest capabilities a HELLO may carry: fairqd drops a HELLO with
//  more (docs/protocol.md, rule 1).
#define FQ_SENDER_CAPABILITIES_MAX 128

//  A capability token's prefix naming a channel served: "channel=http".
#define FQ_SENDER_CAN_CHANNEL "channel="

//  One channel served, and the transport that delivers it.
typedef struct {
    const char *name; //  "email", "http", ...
    fq_transport_config_t transport;
} fq_sender_channel_t;

typedef struct {
    const char *dispatcher; //  Address of fairqd's dispatcher
    const char *name;       //  Said in HELLO
    const char *version;
    int concurrency; //  Workers, 1..FQ_SENDER_WORKERS
    //  The channels served (nchannels of them, names unique and valid).
    //  None: the email channel alone, through transport.
    int nchannels;
    fq_sender_channel_t channels[FQ_SENDER_CHANNELS_MAX];
    fq_transport_config_t transport;
} fq_sender_config_t;

//  Whether name may name a channel (see FQ_SENDER_CHANNEL_NAME_MAX).
bool fq_sender_channel_name_valid(const char *name);

//  Splits list, channel names separated by commas (blanks around them
//  allowed), into names (*count of them). Returns 0, or FQ_EINVAL with
//  the reason in error: no name, an invalid one, one given twice, more
//  than FQ_SENDER_CHANNELS_MAX.
int fq_sender_channels_parse(const char *list,
                             char names[FQ_SENDER_CHANNELS_MAX][FQ_SENDER_CHANNEL_NAME_MAX + 1],
                             int *count, char *error, size_t error_size);

//  Writes the capabilities config's HELLO says (above) to out (size
//  bytes). Returns 0, or FQ_ETOOBIG when they do not fit in size or in
//  FQ_SENDER_CAPABILITIES_MAX characters (too many channels, or names
//  too long).
int fq_sender_capabilities(const fq_sender_config_t *config, char *out, size_t size);

//  Spawns /user/sender and its workers. Strings are copied. Returns 0 or a
//  code.
int fq_sender_start(fq_system_t *sys, const fq_sender_config_t *config);

//  Says BYE and waits up to timeout_ms for the workers to finish the
//  messages they hold (their outcomes are sent). Returns how many were
//  still being delivered when it gave up.
int fq_sender_drain(fq_system_t *sys, int timeout_ms);

#endif
