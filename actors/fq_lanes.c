/*  fq_lanes.c — one fairness core and one credit per channel (fq_lanes.h). */
#include "fq_lanes.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct fq_lanes {
    int prefetch;
    fq_lane_t **lanes; //  Each its own allocation: a lane never moves
    size_t count, capacity;
};

//  A MESSAGE or DISPATCH of an older peer names no channel: it is mail.
static const char *s_name(const char *channel)
{
    return channel && *channel ? channel : "email";
}

static void s_lane_free(fq_lane_t **lane_p)
{
    if (*lane_p) {
        fq_fairness_destroy(&(*lane_p)->fairness);
        free(*lane_p);
        *lane_p = NULL;
    }
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
        s_lane_free(&self->lanes[i]);
    free(self->lanes);
    free(self);
    *self_p = NULL;
}

fq_lane_t *fq_lanes_find(fq_lanes_t *self, const char *channel)
{
    const char *name = s_name(channel);
    for (size_t i = 0; i < self->count; i++)
        if (strcmp(self->lanes[i]->channel, name) == 0)
            return self->lanes[i];
    return NULL;
}

fq_lane_t *fq_lanes_get(fq_lanes_t *self, const char *channel)
{
    fq_lane_t *lane = fq_lanes_find(self, channel);
    const char *name = s_name(channel);
    if (lane || strlen(name) >= FQ_STORE_CHANNEL_SIZE)
        return lane;
    if (self->count == self->capacity) {
        size_t capacity = self->capacity ? 2 * self->capacity : 4;
        fq_lane_t **grown = realloc(self->lanes, capacity * sizeof *grown);
        if (!grown)
            return NULL;
        self->lanes = grown;
        self->capacity = capacity;
    }
    lane = calloc(1, sizeof *lane);
    if (lane)
        lane->fairness = fq_fairness_new(self->prefetch);
    if (!lane || !lane->fairness) {
        s_lane_free(&lane);
        return NULL;
    }
    snprintf(lane->channel, sizeof lane->channel, "%s", name);
    self->lanes[self->count++] = lane;
    return lane;
}

void fq_lanes_hold(fq_lane_t *lane)
{
    lane->holds++;
}

void fq_lanes_release(fq_lane_t *lane)
{
    if (lane->holds > 0)
        lane->holds--;
}

void fq_lanes_prune(fq_lanes_t *self)
{
    for (size_t i = 0; i < self->count;) {
        fq_lane_t *lane = self->lanes[i];
        fq_fairness_stats_t stats;
        fq_fairness_stats(lane->fairness, &stats);
        if (lane->holds == 0 && lane->credit == 0 && stats.requests == 0 && stats.inflight == 0 &&
            stats.prefetched == 0) {
            s_lane_free(&self->lanes[i]);
            self->lanes[i] = self->lanes[--self->count];
        } else
            i++;
    }
}

size_t fq_lanes_count(const fq_lanes_t *self)
{
    return self->count;
}

fq_lane_t *fq_lanes_at(fq_lanes_t *self, size_t index)
{
    return index < self->count ? self->lanes[index] : NULL;
}
