/*  fq_lanes.c — one fairness core and one credit per channel (fq_lanes.h). */
#include "fq_lanes.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct fq_lanes {
    int prefetch;
    size_t count;
    fq_lane_t lanes[FQ_LANES_MAX];
};

//  A MESSAGE or DISPATCH of an older peer names no channel: it is mail.
static const char *s_name(const char *channel)
{
    return channel && *channel ? channel : "email";
}

fq_lanes_t *fq_lanes_new(int prefetch)
{
    fq_lanes_t *self = calloc(1, sizeof *self);
    if (self)
        self->prefetch = prefetch;
    return self;
}

void fq_lanes_destroy(fq_lanes_t **self_p)
{
    fq_lanes_t *self = *self_p;
    if (!self)
        return;
    for (size_t i = 0; i < self->count; i++)
        fq_fairness_destroy(&self->lanes[i].fairness);
    free(self);
    *self_p = NULL;
}

fq_lane_t *fq_lanes_find(fq_lanes_t *self, const char *channel)
{
    const char *name = s_name(channel);
    for (size_t i = 0; i < self->count; i++)
        if (strcmp(self->lanes[i].channel, name) == 0)
            return &self->lanes[i];
    return NULL;
}

fq_lane_t *fq_lanes_get(fq_lanes_t *self, const char *channel)
{
    fq_lane_t *lane = fq_lanes_find(self, channel);
    const char *name = s_name(channel);
    if (lane || self->count == FQ_LANES_MAX || strlen(name) >= sizeof lane->channel)
        return lane;
    fq_fairness_t *fairness = fq_fairness_new(self->prefetch);
    if (!fairness)
        return NULL;
    lane = &self->lanes[self->count++];
    *lane = (fq_lane_t){.fairness = fairness};
    snprintf(lane->channel, sizeof lane->channel, "%s", name);
    return lane;
}

size_t fq_lanes_count(const fq_lanes_t *self)
{
    return self->count;
}

fq_lane_t *fq_lanes_at(fq_lanes_t *self, size_t index)
{
    return index < self->count ? &self->lanes[index] : NULL;
}
