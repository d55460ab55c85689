/*  fq_relay_pace.c — credit let go at a relay's rate (fq_relay_pace.h). */
#include "fq_relay_pace.h"
#include "fq_messages.h"
#include "fq_shaper.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct fq_relay_pace {
    fq_rate_t rate;
    fq_shaper_t bucket; //  No adaptation: only its tokens are used
    int64_t held[FQ_RELAY_PACE_CHANNELS];
    int64_t total;
    int turn; //  The channel the next release starts with
};

fq_relay_pace_t *fq_relay_pace_new(const fq_rate_t *rate, int64_t now_us)
{
    fq_relay_pace_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    self->rate = *rate;
    fq_shaper_init(&self->bucket, fq_rate_per_s(rate), fq_rate_default_burst(rate), 0, now_us);
    return self;
}

void fq_relay_pace_destroy(fq_relay_pace_t **self_p)
{
    free(*self_p);
    *self_p = NULL;
}

bool fq_relay_pace_capability(const char *capabilities, fq_rate_t *rate)
{
    static const char prefix[] = FQ_SENDER_CAN_MAX_RATE;
    const size_t prefix_size = sizeof prefix - 1;
    size_t size;
    const char *at = capabilities, *item;
    while ((item = fq_capability_next(&at, &size))) {
        if (size <= prefix_size || strncmp(item, prefix, prefix_size) != 0)
            continue;
        char text[FQ_RATE_TEXT_SIZE], problem[128];
        if (size - prefix_size >= sizeof text)
            return false;
        memcpy(text, item + prefix_size, size - prefix_size);
        text[size - prefix_size] = 0;
        return fq_rate_parse(text, rate, problem, sizeof problem) == 0;
    }
    return false;
}

void fq_relay_pace_hold(fq_relay_pace_t *self, int channel, int64_t n)
{
    if (channel < 0 || channel >= FQ_RELAY_PACE_CHANNELS || n <= 0)
        return;
    self->held[channel] += n;
    self->total += n;
}

int64_t fq_relay_pace_release(fq_relay_pace_t *self, int nchannels, int64_t *released,
                              int64_t now_us)
{
    if (nchannels > FQ_RELAY_PACE_CHANNELS)
        nchannels = FQ_RELAY_PACE_CHANNELS;
    for (int i = 0; i < nchannels; i++)
        released[i] = 0;
    int64_t tokens = fq_shaper_allowance(&self->bucket, 0, now_us);
    int64_t sum = 0;
    //  One credit a channel a round, so that a channel with much held does
    //  not take every token from the others
    while (tokens > 0 && self->total > 0 && nchannels > 0) {
        bool any = false;
        for (int k = 0; k < nchannels && tokens > 0; k++) {
            int c = (self->turn + k) % nchannels;
            if (self->held[c] > 0) {
                self->held[c]--;
                self->total--;
                released[c]++;
                tokens--;
                sum++;
                any = true;
            }
        }
        self->turn = (self->turn + 1) % nchannels;
        if (!any)
            break; //  What is held is on channels past nchannels
    }
    fq_shaper_take(&self->bucket, sum, now_us);
    return sum;
}

int64_t fq_relay_pace_wait_us(fq_relay_pace_t *self, int64_t now_us)
{
    if (self->total == 0)
        return -1;
    int64_t wait = fq_shaper_wait_us(&self->bucket, now_us);
    return wait < 0 ? 0 : wait;
}

int64_t fq_relay_pace_held(const fq_relay_pace_t *self)
{
    return self->total;
}

const fq_rate_t *fq_relay_pace_rate(const fq_relay_pace_t *self)
{
    return &self->rate;
}
