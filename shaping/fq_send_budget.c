/*  fq_send_budget.c — one tenant's send rate and daily quota (see
    fq_send_budget.h). */
#include "fq_send_budget.h"
#include <string.h>

#define S_US_PER_S       INT64_C(1000000)
#define S_SECONDS_IN_DAY INT64_C(86400)

void fq_send_budget_configure(fq_send_budget_t *self, const fq_rate_t *rate, int64_t quota,
                              int64_t now_us)
{
    double per_s = rate ? fq_rate_per_s(rate) : 0;
    int64_t burst = rate ? fq_rate_default_burst(rate) : 1;
    if (!self->has_rate && per_s > 0)
        fq_shaper_init(&self->rate, per_s, burst, 0, now_us); //  Starts full
    else if (self->has_rate)
        fq_shaper_configure(&self->rate, per_s, burst, 0, now_us);
    self->has_rate = per_s > 0;
    self->quota = quota > 0 ? quota : 0;
}

bool fq_send_budget_limits(const fq_send_budget_t *self)
{
    return self->has_rate || self->quota > 0;
}

void fq_send_budget_today(fq_send_budget_t *self, int64_t day)
{
    if (day == self->day)
        return;
    self->day = day;
    self->used = self->reserved = 0;
    self->loaded = false;
    self->dirty = false;
}

int64_t fq_send_budget_allowance(fq_send_budget_t *self, int64_t now_us)
{
    int64_t allowance = INT64_MAX;
    if (self->has_rate)
        allowance = fq_shaper_allowance(&self->rate, 0, now_us);
    if (self->quota > 0) {
        int64_t left = self->loaded ? self->reserved - self->used : 0;
        if (left < 0)
            left = 0;
        if (left < allowance)
            allowance = left;
    }
    return allowance;
}

int64_t fq_send_budget_want(const fq_send_budget_t *self)
{
    if (self->quota <= 0 || (self->loaded && self->used < self->reserved))
        return 0;
    if (self->loaded && self->reserved >= self->quota)
        return 0;
    int64_t block = self->quota / FQ_SEND_BUDGET_BLOCK_SHARE;
    if (block < 1)
        block = 1;
    if (block > FQ_SEND_BUDGET_BLOCK_MAX)
        block = FQ_SEND_BUDGET_BLOCK_MAX;
    return block;
}

void fq_send_budget_reserved(fq_send_budget_t *self, int64_t before, int64_t after)
{
    //  The day's first read: whatever was reserved before this budget
    //  knew of it may have gone out under an earlier leader
    if (!self->loaded && before > self->used)
        self->used = before;
    self->loaded = true;
    if (after > self->reserved)
        self->reserved = after;
}

void fq_send_budget_take(fq_send_budget_t *self, int64_t n, int64_t now_us)
{
    if (n <= 0)
        return;
    if (self->has_rate)
        fq_shaper_take(&self->rate, n, now_us);
    if (self->quota > 0) {
        self->used += n;
        self->dirty = true;
    }
}

void fq_send_budget_give_back(fq_send_budget_t *self, int64_t n, int64_t day)
{
    if (n <= 0 || self->quota <= 0 || day != self->day)
        return; //  Handed out on a day that is over: that day's count stands
    self->used = self->used > n ? self->used - n : 0;
    self->dirty = true;
}

bool fq_send_budget_quota_spent(const fq_send_budget_t *self)
{
    return self->quota > 0 && self->loaded && self->used >= self->reserved &&
           self->reserved >= self->quota;
}

int64_t fq_send_budget_wait_us(fq_send_budget_t *self, int64_t now_us, int64_t seconds_into_day)
{
    if (fq_send_budget_quota_spent(self)) {
        int64_t left_s = S_SECONDS_IN_DAY - seconds_into_day;
        return (left_s > 0 ? left_s : 1) * S_US_PER_S;
    }
    if (fq_send_budget_want(self) > 0)
        return -1;
    int64_t wait = self->has_rate ? fq_shaper_wait_us(&self->rate, now_us) : -1;
    return wait;
}
