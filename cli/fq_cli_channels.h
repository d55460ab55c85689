/*  fq_cli_channels.h — each channel's lane as fairq top shows it, read
    from fairqd's /metrics (fairq_channel_ready, _credit and _inflight,
    one sample per channel: api/API.md, GET /metrics).

    A channel whose messages are ready while it has no free credit and
    none in flight waits for a sender: no connected sender serves it. top
    says so on the channel's line, since such messages are neither failed
    nor dead, only waiting.
*/
#ifndef FQ_CLI_CHANNELS_H
#define FQ_CLI_CHANNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FQ_CLI_CHANNELS_MAX 32
#define FQ_CLI_CHANNEL_SIZE 33

typedef struct {
    char name[FQ_CLI_CHANNEL_SIZE];
    int64_t ready, credit, inflight;
} fq_cli_channel_t;

//  The channels of a /metrics text (NUL-terminated), in the order they
//  first appear, into out (at most max). Returns how many; samples that
//  do not parse, or past max, are skipped.
size_t fq_cli_channels_parse(const char *text, fq_cli_channel_t *out, size_t max);

//  True when channel's messages wait for a sender that serves it.
bool fq_cli_channel_waits(const fq_cli_channel_t *channel);

#endif
