/*  fq_rate_limit.h — per-tenant limits of events per minute.

    A token bucket per key: it holds up to rate tokens (a minute's worth)
    and gains rate/60 a second, so a tenant may submit a burst of its
    whole minute at once and then its rate on average, never more than
    twice its rate in any minute. Thread-safe. The limit is per fairqd
    process: with several fairqd behind one address each enforces it. */
#ifndef FQ_RATE_LIMIT_H
#define FQ_RATE_LIMIT_H

#include <stdbool.h>
#include <stdint.h>

typedef struct fq_rate_limit fq_rate_limit_t;

//  NULL when out of memory.
fq_rate_limit_t *fq_rate_limit_new(void);
void fq_rate_limit_destroy(fq_rate_limit_t **self_p);

//  Takes one token of key's bucket for rate events per minute (rate > 0)
//  at now_ms (a monotonic clock). Returns true when allowed; otherwise
//  false and *retry_after_s, the whole seconds until a token is back.
bool fq_rate_limit_take(fq_rate_limit_t *self, const char *key, int rate, int64_t now_ms,
                        int *retry_after_s);

//  Gives back the token a take got, when what it paid for did not happen
//  (a submit the database refused). Never fills past the rate.
void fq_rate_limit_give_back(fq_rate_limit_t *self, const char *key, int rate);

#endif
