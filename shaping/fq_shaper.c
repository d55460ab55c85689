/*  fq_shaper.c — one destination's adaptive token bucket (see fq_shaper.h).

    Two clocks: the caller's, and "shaper time", the caller's minus the
    suspensions so far (paused_us). The bucket, the climb and the observed
    rate run on shaper time, so a suspension freezes them with no special
    case in each: while suspended, shaper time stands at the suspension's
    start; when it ends, paused_us grows by its length.
*/
#include "fq_shaper.h"
#include <math.h>
#include <string.h>

#define S_US_PER_S INT64_C(1000000)

//  The lowest rate throttling brings a destination to: one message per
//  10 s still learns when the receiver recovers, and no receiver minds it.
#define S_FLOOR_PER_S 0.1

//  The climb's step: this share of the ceiling per quiet second (from half
//  back to full in 10 s), but at least S_STEP_MIN_PER_S, so that a slow
//  destination does not take minutes to climb from the floor.
#define S_STEP_SHARE     0.05
#define S_STEP_MIN_PER_S 0.1

//  One climb step per whole second without a throttling reply.
#define S_CLIMB_STEP_US S_US_PER_S

//  At most one decrease per second: the replies to one burst arrive
//  together and say one thing.
#define S_DECREASE_GAP_US S_US_PER_S

//  Where a destination with no configured rate starts when it throttles
//  before anything was observed of it (halved at once to 5/s): modest
//  enough for a receiver that complains, fast enough to find out soon.
#define S_UNOBSERVED_PER_S 10.0

//  The observed rate counts releases in two windows of this length, the
//  current one and the one before: "the last second or two", in O(1).
#define S_WINDOW_US S_US_PER_S

//  Suspension back-off: the first, and the most it doubles to.
#define S_BACKOFF_FIRST_US (30 * S_US_PER_S)
#define S_BACKOFF_MAX_US   (900 * S_US_PER_S)

//  Tokens refilled in many small steps lose a few ulps: 0.9999999999 is a
//  whole token.
#define S_TOKEN_EPSILON 1e-9

//  The same slack for counting climb steps: 10.000000001 steps are 10.
#define S_STEPS_EPSILON 1e-6

//  The largest burst: a bucket beyond it is unlimited in practice, and
//  tokens stay exact integers in a double (2^53).
#define S_BURST_MAX (INT64_C(1) << 53)

//  The longest wait reported, far beyond any real one, so that a debt at
//  a tiny rate cannot overflow.
#define S_WAIT_MAX_US (INT64_C(1) << 62)

const char *fq_shaper_state_name(fq_shaper_state_t state)
{
    switch (state) {
    case FQ_SHAPER_OPEN:
        return "open";
    case FQ_SHAPER_THROTTLED:
        return "throttled";
    case FQ_SHAPER_SUSPENDED:
        return "suspended";
    }
    return "unknown";
}

// --------------------------------------------------------------------------
//  The bucket and the climb

//  Whether the bucket limits releases: a configured rate, or a throttled
//  destination (which has an effective rate even without one).
static bool s_limited(const fq_shaper_t *self)
{
    return self->configured_per_s > 0 || self->throttled;
}

//  The effective rate, 0 for no limit (the climb brought up to date).
static double s_rate(const fq_shaper_t *self)
{
    return self->throttled ? self->climb_per_s : self->configured_per_s;
}

//  The bucket's capacity while limited. Without a configured rate (so
//  throttled), one second's worth of the rate it was taking: constant for
//  the throttle, so that reads cannot change it.
static double s_capacity(const fq_shaper_t *self)
{
    if (self->configured_per_s > 0)
        return (double)self->burst;
    return fmax(1.0, ceil(self->ceiling_per_s));
}

//  Whole seconds the climb needs from climb_per_s to the ceiling; at least
//  1, so that a destination that was throttled shows so for a quiet
//  second even when its rate could not go lower (at the floor, or capped
//  by a new configured rate).
static int64_t s_climb_steps(const fq_shaper_t *self)
{
    double steps =
        ceil((self->ceiling_per_s - self->climb_per_s) / self->step_per_s - S_STEPS_EPSILON);
    return steps < 1 ? 1 : (int64_t)steps;
}

//  Tokens earned from climb_us to u seconds after it: climb_per_s in the
//  first second, a step more in each next one, the configured rate from
//  the end of the climb on (0 then means unlimited: nothing to count).
static double s_climb_area(const fq_shaper_t *self, double u, int64_t steps)
{
    double whole = u < (double)steps ? floor(u) : (double)steps;
    double area = whole * self->climb_per_s + self->step_per_s * whole * (whole - 1) / 2;
    if (u < (double)steps)
        return area + (u - whole) * (self->climb_per_s + whole * self->step_per_s);
    return area + (u - whole) * self->configured_per_s;
}

//  Adds the tokens earned from refilled_us to t, exactly, whatever steps
//  of the climb lie between.
static void s_refill(fq_shaper_t *self, int64_t t)
{
    if (t <= self->refilled_us)
        return;
    if (self->throttled) {
        int64_t steps = s_climb_steps(self);
        double u0 = (double)(self->refilled_us - self->climb_us) / S_US_PER_S;
        double u1 = (double)(t - self->climb_us) / S_US_PER_S;
        self->tokens += s_climb_area(self, u1, steps) - s_climb_area(self, u0, steps);
    } else if (self->configured_per_s > 0)
        self->tokens += self->configured_per_s * (double)(t - self->refilled_us) / S_US_PER_S;
    self->refilled_us = t;
}

//  Takes the climb's whole seconds up to t: the rate goes up a step each,
//  and the destination is open once it reaches the ceiling.
static void s_climb(fq_shaper_t *self, int64_t t)
{
    if (!self->throttled)
        return;
    int64_t seconds = (t - self->climb_us) / S_CLIMB_STEP_US;
    if (seconds >= s_climb_steps(self))
        self->throttled = false;
    else if (seconds > 0) {
        self->climb_per_s += (double)seconds * self->step_per_s;
        self->climb_us += seconds * S_CLIMB_STEP_US;
    }
}

// --------------------------------------------------------------------------
//  The observed rate

//  Moves the windows on to t; both empty means nothing observed.
static void s_roll(fq_shaper_t *self, int64_t t)
{
    if (!self->observing)
        return;
    int64_t gone = (t - self->window_us) / S_WINDOW_US;
    if (gone >= 2)
        self->observing = false;
    else if (gone == 1) {
        self->previous_count = self->window_count;
        self->window_count = 0;
        self->window_us += S_WINDOW_US;
    }
}

static void s_observe(fq_shaper_t *self, int64_t t, int64_t n)
{
    s_roll(self, t);
    if (!self->observing) {
        self->observing = true;
        self->observed_since_us = t;
        self->window_us = t;
        self->window_count = 0;
        self->previous_count = 0;
    }
    self->window_count += n;
}

//  Releases per second over the two windows (or since releases began, if
//  later), counted over at least one second so that a few messages in a
//  millisecond do not read as thousands a second. 0: nothing observed.
static double s_observed_per_s(fq_shaper_t *self, int64_t t)
{
    s_roll(self, t);
    if (!self->observing)
        return 0;
    int64_t from = self->window_us - S_WINDOW_US;
    if (from < self->observed_since_us)
        from = self->observed_since_us;
    int64_t span = t - from < S_WINDOW_US ? S_WINDOW_US : t - from;
    return (double)(self->previous_count + self->window_count) * S_US_PER_S / (double)span;
}

// --------------------------------------------------------------------------
//  Time

//  Ends a suspension that is over: the climb and the bucket go on from
//  where they stood, but the bucket earns at most 1 token meanwhile.
static void s_resume(fq_shaper_t *self)
{
    int64_t length = self->suspended_until_us - self->suspended_at_us;
    if (s_limited(self))
        self->tokens = fmin(1.0, self->tokens + s_rate(self) * (double)length / S_US_PER_S);
    self->paused_us += length;
    self->suspended = false;
    self->failures = 0;
}

//  Brings the shaper up to now_us and returns the shaper time it stands at.
static int64_t s_advance(fq_shaper_t *self, int64_t now_us)
{
    if (self->suspended && now_us >= self->suspended_until_us)
        s_resume(self);
    int64_t t = (self->suspended ? self->suspended_at_us : now_us) - self->paused_us;
    s_refill(self, t);
    s_climb(self, t);
    if (s_limited(self))
        self->tokens = fmin(self->tokens, s_capacity(self));
    return t;
}

// --------------------------------------------------------------------------
//  The API

static void s_set_config(fq_shaper_t *self, double rate_per_s, int64_t burst, int64_t max_inflight)
{
    self->configured_per_s = rate_per_s > 0 && isfinite(rate_per_s) ? rate_per_s : 0;
    self->burst = burst < 1 ? 1 : burst > S_BURST_MAX ? S_BURST_MAX : burst;
    self->max_inflight = max_inflight > 0 ? max_inflight : 0;
}

void fq_shaper_init(fq_shaper_t *self, double rate_per_s, int64_t burst, int64_t max_inflight,
                    int64_t now_us)
{
    memset(self, 0, sizeof *self);
    s_set_config(self, rate_per_s, burst, max_inflight);
    self->tokens = s_limited(self) ? s_capacity(self) : 0;
    self->refilled_us = now_us;
    self->backoff_us = S_BACKOFF_FIRST_US;
}

//  The climb's end and step for a ceiling.
static void s_set_ceiling(fq_shaper_t *self, double ceiling_per_s)
{
    self->ceiling_per_s = ceiling_per_s;
    self->step_per_s = fmax(S_STEP_MIN_PER_S, S_STEP_SHARE * ceiling_per_s);
}

void fq_shaper_configure(fq_shaper_t *self, double rate_per_s, int64_t burst, int64_t max_inflight,
                         int64_t now_us)
{
    s_advance(self, now_us);
    bool was_limited = s_limited(self);
    s_set_config(self, rate_per_s, burst, max_inflight);
    if (self->throttled && self->configured_per_s > 0) {
        //  Without a configured rate now, the climb still ends at the old one
        s_set_ceiling(self, self->configured_per_s);
        self->climb_per_s = fmin(self->climb_per_s, self->configured_per_s);
    }
    if (!was_limited && s_limited(self))
        self->tokens = s_capacity(self);
    if (s_limited(self))
        self->tokens = fmin(self->tokens, s_capacity(self));
}

int64_t fq_shaper_allowance(fq_shaper_t *self, int64_t inflight, int64_t now_us)
{
    s_advance(self, now_us);
    if (self->suspended)
        return 0;
    int64_t allowance = INT64_MAX;
    if (s_limited(self)) {
        double whole = floor(self->tokens + S_TOKEN_EPSILON);
        allowance = whole < 1 ? 0 : (int64_t)whole; //  At most S_BURST_MAX: exact
    }
    if (self->max_inflight > 0) {
        int64_t room = self->max_inflight - inflight;
        if (room < 0)
            room = 0;
        if (room < allowance)
            allowance = room;
    }
    return allowance;
}

void fq_shaper_take(fq_shaper_t *self, int64_t n, int64_t now_us)
{
    int64_t t = s_advance(self, now_us);
    if (n <= 0)
        return;
    if (s_limited(self))
        self->tokens -= (double)n;
    s_observe(self, t, n);
}

int64_t fq_shaper_wait_us(fq_shaper_t *self, int64_t now_us)
{
    int64_t t = s_advance(self, now_us);
    if (self->suspended)
        return self->suspended_until_us - now_us;
    double rate = s_rate(self);
    if (!s_limited(self) || rate <= 0 || self->tokens + S_TOKEN_EPSILON >= 1)
        return -1;
    double wait = ceil((1 - self->tokens) * S_US_PER_S / rate);
    if (self->throttled && (double)(self->climb_us + S_CLIMB_STEP_US - t) < wait)
        wait = (double)(self->climb_us + S_CLIMB_STEP_US - t); //  The rate goes up then
    if (wait > (double)S_WAIT_MAX_US)
        return S_WAIT_MAX_US;
    return wait < 1 ? 1 : (int64_t)wait;
}

void fq_shaper_delivered(fq_shaper_t *self, int64_t now_us)
{
    s_advance(self, now_us);
    self->failures = 0;
    self->backoff_us = S_BACKOFF_FIRST_US;
}

//  The first throttling reply of an open destination: the climb starts at
//  the rate it had (its configured rate, or the rate observed) and ends
//  there again.
static void s_start_throttle(fq_shaper_t *self, int64_t t)
{
    double base = self->configured_per_s;
    if (base <= 0) {
        base = s_observed_per_s(self, t);
        if (base <= 0)
            base = S_UNOBSERVED_PER_S;
        self->tokens = 1; //  Unlimited until now: the bucket starts here
    }
    s_set_ceiling(self, base);
    self->climb_per_s = base;
    self->throttled = true;
}

void fq_shaper_throttled(fq_shaper_t *self, int64_t now_us)
{
    int64_t t = s_advance(self, now_us);
    if (!self->decreased || t - self->decreased_us >= S_DECREASE_GAP_US) {
        if (!self->throttled)
            s_start_throttle(self, t);
        //  Halved, down to the floor, but never raised by it
        double lowered = fmax(self->climb_per_s / 2, fmin(S_FLOOR_PER_S, self->climb_per_s));
        self->climb_per_s = lowered;
        self->tokens = fmin(self->tokens, 1.0);
        self->decreased = true;
        self->decreased_us = t;
    }
    self->climb_us = t; //  The quiet seconds count from the latest reply
}

void fq_shaper_retry_after(fq_shaper_t *self, int64_t wait_us, int64_t now_us)
{
    fq_shaper_throttled(self, now_us);
    if (wait_us <= 0)
        return;
    int64_t until = now_us + wait_us;
    if (self->suspended) {
        //  Longer than the suspension under way: it lasts until then
        if (until > self->suspended_until_us)
            self->suspended_until_us = until;
        return;
    }
    self->suspended = true;
    self->suspended_at_us = now_us;
    self->suspended_until_us = until;
}

void fq_shaper_unreachable(fq_shaper_t *self, int64_t now_us)
{
    s_advance(self, now_us);
    if (self->suspended)
        return;
    if (++self->failures < FQ_SHAPER_SUSPEND_AFTER)
        return;
    self->suspended = true;
    self->suspended_at_us = now_us;
    self->suspended_until_us = now_us + self->backoff_us;
    self->backoff_us =
        self->backoff_us * 2 > S_BACKOFF_MAX_US ? S_BACKOFF_MAX_US : self->backoff_us * 2;
}

fq_shaper_state_t fq_shaper_state(fq_shaper_t *self, int64_t now_us)
{
    s_advance(self, now_us);
    if (self->suspended)
        return FQ_SHAPER_SUSPENDED;
    return self->throttled ? FQ_SHAPER_THROTTLED : FQ_SHAPER_OPEN;
}

double fq_shaper_effective_per_s(fq_shaper_t *self, int64_t now_us)
{
    s_advance(self, now_us);
    return s_rate(self);
}

double fq_shaper_configured_per_s(const fq_shaper_t *self)
{
    return self->configured_per_s;
}

int64_t fq_shaper_suspended_for_us(fq_shaper_t *self, int64_t now_us)
{
    s_advance(self, now_us);
    return self->suspended ? self->suspended_until_us - now_us : 0;
}
