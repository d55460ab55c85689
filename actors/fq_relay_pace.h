/*  fq_relay_pace.h — a sender's relay limit, in the dispatcher.

    A sender whose relay takes no more than so many messages a second (an
    Amazon SES account's sending rate, say) says so in its HELLO
    (FQ_SENDER_CAN_MAX_RATE, "max_rate=14/s", among its capabilities:
    fairq-sender's max_rate key).
    The credit it grants is then not passed on to the scheduler at once:
    it is held here, per channel, and let go one credit per token of a
    bucket at that rate (burst: one second's worth). The dispatcher gives
    such a sender only the credit let go, so it is handed no more messages
    than its relay allows, however many workers it has; the scheduler,
    which counts only that credit, spends the rest of its time on other
    senders. Credit given back by its answers is held again the same way.
    No allocation after fq_relay_pace_new; O(channels) per call. */
#ifndef FQ_RELAY_PACE_H
#define FQ_RELAY_PACE_H

#include "fq_rate.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

//  Channels one sender serves, at most (the dispatcher's
//  S_SENDER_CHANNELS_MAX).
#define FQ_RELAY_PACE_CHANNELS 16

typedef struct fq_relay_pace fq_relay_pace_t;

//  A pace at rate, its bucket full, at now_us (a monotonic clock).
fq_relay_pace_t *fq_relay_pace_new(const fq_rate_t *rate, int64_t now_us);
void fq_relay_pace_destroy(fq_relay_pace_t **self_p);

//  Reads the relay limit among a HELLO's comma-separated capabilities
//  into *rate. Returns true when there is one that reads; false when
//  there is none, or it does not read (the sender is then not paced:
//  fairq-sender checks its own max_rate before it says it).
bool fq_relay_pace_capability(const char *capabilities, fq_rate_t *rate);

//  n credit of channel (an index below FQ_RELAY_PACE_CHANNELS) granted or
//  given back: held until fq_relay_pace_release lets it go.
void fq_relay_pace_hold(fq_relay_pace_t *self, int channel, int64_t n);

//  Lets go as much held credit as the bucket allows now, the channels in
//  turns: released[i] (nchannels of them) is channel i's. Returns the sum.
int64_t fq_relay_pace_release(fq_relay_pace_t *self, int nchannels, int64_t *released,
                              int64_t now_us);

//  Microseconds until fq_relay_pace_release could let more go, or -1 when
//  nothing is held.
int64_t fq_relay_pace_wait_us(fq_relay_pace_t *self, int64_t now_us);

//  Credit held, all channels.
int64_t fq_relay_pace_held(const fq_relay_pace_t *self);

//  The rate, for the log and the metrics ("14/s").
const fq_rate_t *fq_relay_pace_rate(const fq_relay_pace_t *self);

#endif
