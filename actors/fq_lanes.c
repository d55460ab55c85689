/*  fq_lanes.c — a fairness core per channel and destination, credit per
    channel, a budget per destination (fq_lanes.h). */
#include "fq_lanes.h"
#include "fq_rate.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct fq_lanes {
    int prefetch;
    fq_lane_t **lanes; //  Each its own allocation: a lane never moves
    size_t count, capacity;
    fq_lane_channel_t **channels; //  Each its own allocation, never freed before the end
    size_t nchannels, channels_capacity;
    fq_lane_destination_t **destinations; //  Likewise; [0] is "default"
    size_t ndestinations, destinations_capacity;
};

//  A MESSAGE or DISPATCH of an older peer names no channel: it is mail.
static const char *s_channel_name(const char *channel)
{
    return channel && *channel ? channel : "email";
}

static const char *s_destination_name(const char *destination)
{
    return destination && *destination ? destination : FQ_STORE_DESTINATION_DEFAULT;
}

//  Grows *items (of *capacity) to hold one more. Returns 0 or -1.
static int s_grow(void ***items, size_t count, size_t *capacity)
{
    if (count < *capacity)
        return 0;
    size_t grown_capacity = *capacity ? 2 * *capacity : 4;
    void **grown = realloc(*items, grown_capacity * sizeof *grown);
    if (!grown)
        return -1;
    *items = grown;
    *capacity = grown_capacity;
    return 0;
}

static void s_lane_free(fq_lane_t **lane_p)
{
    if (*lane_p) {
        fq_fairness_destroy(&(*lane_p)->fairness);
        free(*lane_p);
        *lane_p = NULL;
    }
}

static fq_lane_destination_t *s_destination_find(fq_lanes_t *self, const char *name)
{
    for (size_t i = 0; i < self->ndestinations; i++)
        if (strcmp(self->destinations[i]->name, name) == 0)
            return self->destinations[i];
    return NULL;
}

//  The destination named so, made (with no limit) if new.
static fq_lane_destination_t *s_destination(fq_lanes_t *self, const char *name, int64_t now_us)
{
    fq_lane_destination_t *destination = s_destination_find(self, name);
    if (destination || strlen(name) >= FQ_STORE_DESTINATION_SIZE)
        return destination;
    if (s_grow((void ***)&self->destinations, self->ndestinations, &self->destinations_capacity))
        return NULL;
    destination = calloc(1, sizeof *destination);
    if (!destination)
        return NULL;
    snprintf(destination->name, sizeof destination->name, "%s", name);
    fq_shaper_init(&destination->shaper, 0, 1, 0, now_us);
    self->destinations[self->ndestinations++] = destination;
    return destination;
}

//  The budget a lane of destination name spends: its own while it is
//  configured, else the default's.
static fq_lane_destination_t *s_budget(fq_lanes_t *self, const char *name)
{
    fq_lane_destination_t *destination = s_destination_find(self, name);
    return destination && destination->configured ? destination : self->destinations[0];
}

fq_lanes_t *fq_lanes_new(int prefetch)
{
    fq_lanes_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    self->prefetch = prefetch;
    //  "default" always exists (0016), with no limit until configured
    fq_lane_destination_t *fallback = s_destination(self, FQ_STORE_DESTINATION_DEFAULT, 0);
    if (!fallback) {
        fq_lanes_destroy(&self);
        return NULL;
    }
    fallback->configured = true;
    return self;
}

void fq_lanes_destroy(fq_lanes_t **self_p)
{
    fq_lanes_t *self = *self_p;
    if (!self)
        return;
    for (size_t i = 0; i < self->count; i++)
        s_lane_free(&self->lanes[i]);
    for (size_t i = 0; i < self->nchannels; i++)
        free(self->channels[i]);
    for (size_t i = 0; i < self->ndestinations; i++)
        free(self->destinations[i]);
    free(self->lanes);
    free(self->channels);
    free(self->destinations);
    free(self);
    *self_p = NULL;
}

fq_lane_channel_t *fq_lanes_channel(fq_lanes_t *self, const char *channel)
{
    const char *name = s_channel_name(channel);
    for (size_t i = 0; i < self->nchannels; i++)
        if (strcmp(self->channels[i]->name, name) == 0)
            return self->channels[i];
    if (strlen(name) >= FQ_STORE_CHANNEL_SIZE ||
        s_grow((void ***)&self->channels, self->nchannels, &self->channels_capacity))
        return NULL;
    fq_lane_channel_t *made = calloc(1, sizeof *made);
    if (!made)
        return NULL;
    snprintf(made->name, sizeof made->name, "%s", name);
    self->channels[self->nchannels++] = made;
    return made;
}

fq_lane_t *fq_lanes_get(fq_lanes_t *self, const char *channel, const char *destination)
{
    const char *name = s_channel_name(channel);
    const char *to = s_destination_name(destination);
    for (size_t i = 0; i < self->count; i++)
        if (strcmp(self->lanes[i]->destination, to) == 0 &&
            strcmp(self->lanes[i]->channel->name, name) == 0)
            return self->lanes[i];
    fq_lane_channel_t *credit = fq_lanes_channel(self, name);
    if (!credit || strlen(to) >= FQ_STORE_DESTINATION_SIZE ||
        s_grow((void ***)&self->lanes, self->count, &self->capacity))
        return NULL;
    fq_lane_t *lane = calloc(1, sizeof *lane);
    if (lane)
        lane->fairness = fq_fairness_new(self->prefetch);
    if (!lane || !lane->fairness) {
        s_lane_free(&lane);
        return NULL;
    }
    snprintf(lane->destination, sizeof lane->destination, "%s", to);
    lane->channel = credit;
    lane->budget = s_budget(self, to);
    self->lanes[self->count++] = lane;
    return lane;
}

void fq_lanes_configure(fq_lanes_t *self, const fq_destination_budget_t *budgets, size_t count,
                        int64_t now_us)
{
    for (size_t i = 0; i < self->ndestinations; i++)
        self->destinations[i]->configured = false;
    self->destinations[0]->configured = true; //  Whether or not it was read
    for (size_t i = 0; i < count; i++) {
        const fq_destination_budget_t *budget = &budgets[i];
        bool known = s_destination_find(self, budget->name) != NULL;
        fq_lane_destination_t *destination = s_destination(self, budget->name, now_us);
        if (!destination)
            continue; //  Out of memory: its lanes keep the default's budget
        fq_rate_t rate = {budget->rate_count, budget->rate_period_s};
        double per_s =
            budget->rate_count > 0 && budget->rate_period_s > 0 ? fq_rate_per_s(&rate) : 0;
        int64_t burst =
            budget->burst > 0 ? budget->burst : (per_s > 0 ? fq_rate_default_burst(&rate) : 1);
        if (known)
            fq_shaper_configure(&destination->shaper, per_s, burst, budget->max_inflight, now_us);
        else
            fq_shaper_init(&destination->shaper, per_s, burst, budget->max_inflight, now_us);
        destination->configured = true;
    }
    for (size_t i = 0; i < self->count; i++) {
        fq_lane_t *lane = self->lanes[i];
        fq_lane_destination_t *budget = s_budget(self, lane->destination);
        if (budget != lane->budget) {
            //  What is in flight moves with the lane, so each budget's count
            //  stays the messages it released and has not seen settle
            fq_fairness_stats_t stats;
            fq_fairness_stats(lane->fairness, &stats);
            lane->budget->inflight -= (int64_t)stats.inflight;
            budget->inflight += (int64_t)stats.inflight;
            lane->budget = budget;
        }
    }
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
        if (lane->holds == 0 && stats.requests == 0 && stats.inflight == 0 &&
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

size_t fq_lanes_channel_count(const fq_lanes_t *self)
{
    return self->nchannels;
}

fq_lane_channel_t *fq_lanes_channel_at(fq_lanes_t *self, size_t index)
{
    return index < self->nchannels ? self->channels[index] : NULL;
}

size_t fq_lanes_destination_count(const fq_lanes_t *self)
{
    return self->ndestinations;
}

fq_lane_destination_t *fq_lanes_destination_at(fq_lanes_t *self, size_t index)
{
    return index < self->ndestinations ? self->destinations[index] : NULL;
}
