/*  fq_cli_channels.c — the channels' lanes from /metrics (fq_cli_channels.h). */
#include "fq_cli_channels.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const s_families[] = {"fairq_channel_ready", "fairq_channel_credit",
                                         "fairq_channel_inflight"};

//  The channel named name in out, added if new; NULL when out is full.
static fq_cli_channel_t *s_channel(fq_cli_channel_t *out, size_t *count, size_t max,
                                   const char *name, size_t length)
{
    for (size_t i = 0; i < *count; i++)
        if (strlen(out[i].name) == length && strncmp(out[i].name, name, length) == 0)
            return &out[i];
    if (*count == max || length == 0 || length >= FQ_CLI_CHANNEL_SIZE)
        return NULL;
    fq_cli_channel_t *channel = &out[(*count)++];
    *channel = (fq_cli_channel_t){0};
    memcpy(channel->name, name, length);
    return channel;
}

size_t fq_cli_channels_parse(const char *text, fq_cli_channel_t *out, size_t max)
{
    size_t count = 0;
    for (const char *line = text; line && *line;) {
        const char *end = strchr(line, '\n');
        for (size_t f = 0; f < sizeof s_families / sizeof s_families[0]; f++) {
            size_t length = strlen(s_families[f]);
            static const char label[] = "{channel=\"";
            if (strncmp(line, s_families[f], length) != 0 ||
                strncmp(line + length, label, sizeof label - 1) != 0)
                continue;
            const char *name = line + length + sizeof label - 1;
            const char *close = strstr(name, "\"} ");
            if (!close || (end && close > end))
                break;
            char *after;
            long long value = strtoll(close + 3, &after, 10);
            if (after == close + 3)
                break;
            fq_cli_channel_t *channel = s_channel(out, &count, max, name, (size_t)(close - name));
            if (channel)
                *(f == 0   ? &channel->ready
                  : f == 1 ? &channel->credit
                           : &channel->inflight) = value;
            break;
        }
        line = end ? end + 1 : NULL;
    }
    return count;
}

bool fq_cli_channel_waits(const fq_cli_channel_t *channel)
{
    return channel->ready > 0 && channel->credit == 0 && channel->inflight == 0;
}
