/*  fq_sender.h — the actors of fairq-sender.

        /user/sender             speaks the sender protocol with fairqd's
                                 dispatcher (docs/protocol.md)
        /user/sender/worker-N    delivers one message at a time, of one
                                 channel, through its own transport
                                 (fq_transport.h)

    Channels. A sender serves one or more channels ("email", "http", any
    other name), each through a transport of its own kind, by a pool of
    delivery workers of its own: each worker holds the transport of its
    channel only, and keeps its connections from message to message. The
    HELLO's capabilities say which channels: the transports' kinds,
    "batch", and one "channel=NAME" per channel served, e.g.

        smtp,http,batch,channel=email,channel=http

    Credit, per channel. The sender grants fairqd, for each channel apart,
    as much credit as that channel has idle workers (CREDIT n with the
    channel's name, "email" for mail), so it never holds a message it
    cannot start delivering at once, and a stuck relay of one channel
    never takes the workers, or the credit, of another. A message of a
    channel the sender does not serve, or of one whose workers are all
    busy (fairqd sent more than the credit), is answered with a transient
    NACK saying so (fairqd routes by the capabilities and the credit; this
    is the safety net behind them). */
#ifndef FQ_SENDER_H
#define FQ_SENDER_H

#include "fq_messages.h"
#include "fq_system.h"
#include "fq_transport.h"

#define FQ_SENDER_PATH FQ_PROTOCOL_SENDER_PATH
//  Most delivery workers of one channel (its pool). Each is an actor with
//  a few ZeroMQ sockets and its transport's connections, and each holds a
//  file descriptor: fairq-sender raises its descriptor limit to what its
//  pools need when the hard limit allows. Run more senders for more.
#define FQ_SENDER_WORKERS 200

//  Most channels one sender serves, and the longest name of one (the rule
//  of channels/fq_channel.h, fairqd's for a request's channel). Their
//  tokens must fit in HELLO's capabilities as well.
#define FQ_SENDER_CHANNELS_MAX     8
#define FQ_SENDER_CHANNEL_NAME_MAX FQ_CHANNEL_NAME_MAX

//  The longest capabilities a HELLO may carry: fairqd drops a HELLO with
//  more (docs/protocol.md, rule 1).
#define FQ_SENDER_CAPABILITIES_MAX 128

//  A capability token's prefix naming a channel served: "channel=http".
#define FQ_SENDER_CAN_CHANNEL "channel="

//  One channel served, the transport that delivers it, and the size of
//  its pool of workers.
typedef struct {
    const char *name; //  "email", "http", ...
    fq_transport_config_t transport;
    //  Its workers (and so the credit it grants), 1..FQ_SENDER_WORKERS;
    //  0: the config's concurrency
    int concurrency;
} fq_sender_channel_t;

typedef struct {
    const char *dispatcher; //  Address of fairqd's dispatcher
    const char *name;       //  Said in HELLO
    const char *version;
    //  Workers of each channel that does not say its own,
    //  1..FQ_SENDER_WORKERS
    int concurrency;
    //  The channels served (nchannels of them, names unique and valid).
    //  None: the email channel alone, through transport, concurrency
    //  workers.
    int nchannels;
    fq_sender_channel_t channels[FQ_SENDER_CHANNELS_MAX];
    fq_transport_config_t transport;
    //  Its relay's limit as fq_rate.h writes it ("14/s"), said in HELLO
    //  as FQ_SENDER_CAN_MAX_RATE; NULL or "": none
    const char *max_rate;
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

//  Reads list, the pool sizes of some of the channels names holds (count
//  of them, at most FQ_SENDER_CHANNELS_MAX): "NAME:N" pairs separated by commas, blanks around
//  names and numbers allowed ("http:200, sms:4"); empty or blank names none. Each pair sets
//  sizes[i] for names[i] = NAME; the sizes of channels the list does not name are left as they are.
//  Returns 0, or FQ_EINVAL with the reason in error: a pair that is not NAME:N, a NAME not among
//  names (or given twice), an N that is not an integer from 1 to FQ_SENDER_WORKERS.
int fq_sender_pools_parse(const char *list, const char names[][FQ_SENDER_CHANNEL_NAME_MAX + 1],
                          int count, int sizes[], char *error, size_t error_size);

//  The workers of config's channel i (its own concurrency, or config's);
//  of the email channel when config has no channels.
int fq_sender_pool_size(const fq_sender_config_t *config, int i);

//  The workers of every channel of config together: the concurrency its
//  HELLO says, and the credit it grants in all.
int fq_sender_workers(const fq_sender_config_t *config);

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
