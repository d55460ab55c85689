/*  fq_rate_limit.c — token buckets per key (see fq_rate_limit.h). */
#include "fq_rate_limit.h"
#include <czmq.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>

#define S_MS_PER_MINUTE 60000.0
#define S_MS_PER_S      1000.0

typedef struct {
    double tokens;
    int64_t at_ms; //  When tokens was last brought up to date
} s_bucket_t;

struct fq_rate_limit {
    pthread_mutex_t lock;
    zhashx_t *buckets; //  key -> s_bucket_t, freed with the table
};

static void s_bucket_free(void **item)
{
    free(*item);
    *item = NULL;
}

fq_rate_limit_t *fq_rate_limit_new(void)
{
    fq_rate_limit_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    self->buckets = zhashx_new();
    if (!self->buckets) {
        free(self);
        return NULL;
    }
    zhashx_set_destructor(self->buckets, s_bucket_free);
    pthread_mutex_init(&self->lock, NULL);
    return self;
}

void fq_rate_limit_destroy(fq_rate_limit_t **self_p)
{
    fq_rate_limit_t *self = *self_p;
    if (!self)
        return;
    zhashx_destroy(&self->buckets);
    pthread_mutex_destroy(&self->lock);
    free(self);
    *self_p = NULL;
}

bool fq_rate_limit_take(fq_rate_limit_t *self, const char *key, int rate, int64_t now_ms,
                        int *retry_after_s)
{
    pthread_mutex_lock(&self->lock);
    s_bucket_t *bucket = zhashx_lookup(self->buckets, key);
    if (!bucket) {
        bucket = malloc(sizeof *bucket);
        if (!bucket || zhashx_insert(self->buckets, key, bucket) != 0) {
            //  Out of memory: let the submit through rather than refuse it
            free(bucket);
            pthread_mutex_unlock(&self->lock);
            return true;
        }
        *bucket = (s_bucket_t){.tokens = rate, .at_ms = now_ms};
    }
    double per_ms = rate / S_MS_PER_MINUTE;
    bucket->tokens += (double)(now_ms - bucket->at_ms) * per_ms;
    if (bucket->tokens > rate)
        bucket->tokens = rate; //  A lowered rate takes effect at once
    bucket->at_ms = now_ms;
    bool allowed = bucket->tokens >= 1.0;
    if (allowed)
        bucket->tokens -= 1.0;
    else
        *retry_after_s = (int)ceil((1.0 - bucket->tokens) / per_ms / S_MS_PER_S);
    pthread_mutex_unlock(&self->lock);
    return allowed;
}

void fq_rate_limit_give_back(fq_rate_limit_t *self, const char *key, int rate)
{
    pthread_mutex_lock(&self->lock);
    s_bucket_t *bucket = zhashx_lookup(self->buckets, key);
    if (bucket && bucket->tokens + 1.0 <= rate)
        bucket->tokens += 1.0;
    pthread_mutex_unlock(&self->lock);
}
