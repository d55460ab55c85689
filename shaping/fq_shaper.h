/*  fq_shaper.h — one destination's budget: how many of its messages the
    scheduler may release now.

    A destination (a recipient mail domain, an http host, or a named group
    of them) has a configured rate and a most in flight. Receivers also
    push back, and a sender that ignores them gets greylisted, deferred or
    blocked; so the budget adapts to what the senders report:

    * Token bucket. Tokens refill continuously at the effective rate up to
      the burst; the bucket starts full. A fraction of a token is kept, so
      7/min really is 7 a minute; only whole tokens are released.
    * Multiplicative decrease. A throttling reply (SMTP 421, 451 4.7.x,
      452, 454; HTTP 429) halves the effective rate, down to a floor of one
      message per 10 s, and cuts the bucket to at most 1 token so the lower
      rate holds at once rather than after the saved-up burst. At most one
      decrease per second: the replies to a burst sent at the old rate
      arrive together and are one signal, not fifty. A destination with no
      configured rate is halved from the rate it was observed to take over
      the last second or two (10/s when nothing was observed), and that
      observed rate is its ceiling until it is open again.
    * Additive increase. Each whole second without a throttling reply adds
      a step, 5% of the configured rate (of the ceiling without one), at
      least 0.1/s: 10 quiet seconds from half back to full. On
      reaching the configured rate the destination is open again (and one
      with no configured rate unlimited again). The climb is computed from
      the clock when the shaper is read; nothing needs calling each second.
    * Suspension. FQ_SHAPER_SUSPEND_AFTER connection failures in a row (no
      delivery between) suspend the destination for a back-off, 30 s the
      first time, doubling with each further suspension up to 15 minutes;
      a delivery sets the back-off back to 30 s. Knocking on a dead server
      every few milliseconds only fills the retry queue. The suspension
      ends by itself; the destination resumes throttled or open as it was
      (its climb is paused meanwhile: a server that was down gave no sign
      it takes more now), the run of failures at 0, and at most 1 token,
      so the first message is a probe. Failures reported during a
      suspension (replies to messages sent before it) do not extend it.

    Times are microseconds of a monotonic clock, passed in by the caller
    and never decreasing, so tests control time. Everything is O(1) and
    allocates nothing: the caller embeds an fq_shaper_t per destination.
    Reads bring the shaper up to now (hence the non-const self); what a read
    returns does not depend on how often the shaper was read before (up to
    rounding), since tokens and the climb are computed from the clock.
*/
#ifndef FQ_SHAPER_H
#define FQ_SHAPER_H

#include <stdbool.h>
#include <stdint.h>

//  Connection failures in a row that suspend a destination: one can be a
//  blip, three in a row with nothing delivered between is a server down.
#define FQ_SHAPER_SUSPEND_AFTER 3

typedef enum { FQ_SHAPER_OPEN, FQ_SHAPER_THROTTLED, FQ_SHAPER_SUSPENDED } fq_shaper_state_t;

//  "open", "throttled", "suspended" (static storage; "unknown" otherwise).
const char *fq_shaper_state_name(fq_shaper_state_t state);

//  One destination's shaping state. Embedded by the caller; its fields are
//  private to fq_shaper.c (read them through the functions below). Times
//  marked "shaper time" are the caller's clock minus the suspensions so
//  far: the adaptive state stands still while a destination is suspended.
typedef struct {
    //  Configuration
    double configured_per_s; //  0: no rate limit
    int64_t burst;           //  Bucket capacity with a configured rate
    int64_t max_inflight;    //  0: no limit
    //  Token bucket
    double tokens;       //  May be negative after a take beyond allowance
    int64_t refilled_us; //  Shaper time the tokens are counted to
    //  Adaptive rate
    bool throttled;
    double climb_per_s;   //  Effective rate from climb_us for a second
    int64_t climb_us;     //  Shaper time of the last step or throttling reply
    double ceiling_per_s; //  Where the climb ends and the destination opens
    double step_per_s;    //  Added per whole second without a throttling reply
    bool decreased;       //  decreased_us holds the last decrease
    int64_t decreased_us; //  Shaper time
    //  Observed release rate, for a destination without a configured one
    bool observing;            //  The windows below hold releases
    int64_t observed_since_us; //  Shaper time of the first release counted
    int64_t window_us;         //  Shaper time the current 1 s window started
    int64_t window_count;      //  Released in the current window
    int64_t previous_count;    //  Released in the window before it
    //  Suspension
    int failures; //  Connection failures in a row
    bool suspended;
    int64_t suspended_at_us;    //  Caller's clock
    int64_t suspended_until_us; //  Caller's clock
    int64_t backoff_us;         //  The next suspension's length
    int64_t paused_us;          //  Suspensions so far: caller's clock - shaper time
} fq_shaper_t;

//  Sets up self, open, its bucket full. rate_per_s 0 means no rate limit;
//  burst is the bucket's capacity, at least 1 (ignored without a rate);
//  max_inflight 0 means no limit. Negative values are taken as 0 (burst
//  as 1, a rate that is not a finite number as no limit).
void fq_shaper_init(fq_shaper_t *self, double rate_per_s, int64_t burst, int64_t max_inflight,
                    int64_t now_us);

//  A configuration change (a reload). The adaptive state is kept: a
//  throttled destination stays throttled, its effective rate capped by the
//  new configured rate and its climb ending there; tokens are clamped to
//  the new burst. A destination given its first rate starts with a full
//  bucket.
void fq_shaper_configure(fq_shaper_t *self, double rate_per_s, int64_t burst, int64_t max_inflight,
                         int64_t now_us);

//  How many messages may be released now, inflight of this destination's
//  messages being in flight: the lesser of the whole tokens and
//  max_inflight - inflight; 0 while suspended; INT64_MAX when nothing
//  limits.
int64_t fq_shaper_allowance(fq_shaper_t *self, int64_t inflight, int64_t now_us);

//  n messages were released: takes n tokens (going below zero if n was
//  more than the allowance: the debt is paid by waiting) and counts them
//  for the observed rate.
void fq_shaper_take(fq_shaper_t *self, int64_t n, int64_t now_us);

//  For a destination whose allowance is 0: microseconds until a message
//  could be released by time alone (the next whole token, a climb step
//  that raises the rate, the end of a suspension), at least 1. -1 when
//  time alone will not: no rate limit, or a whole token is there already
//  (so max_inflight is what holds it; a completion will free it).
int64_t fq_shaper_wait_us(fq_shaper_t *self, int64_t now_us);

//  A message to the destination was delivered: the run of connection
//  failures ends and the back-off is 30 s again. It does not end a
//  suspension under way.
void fq_shaper_delivered(fq_shaper_t *self, int64_t now_us);

//  A throttling reply (SMTP 421, 451 4.7.x, 452, 454; HTTP 429): see the
//  multiplicative decrease above.
void fq_shaper_throttled(fq_shaper_t *self, int64_t now_us);

//  A throttling reply that also said when to come back (HTTP Retry-After,
//  wait_us from now): as fq_shaper_throttled, and the destination is
//  suspended until then (longer if a suspension under way lasts longer).
//  A receiver's own word beats any guess of the back-off; it applies to
//  the destination, as every message to it would get the same answer.
void fq_shaper_retry_after(fq_shaper_t *self, int64_t wait_us, int64_t now_us);

//  A connection failure (refused, timed out, no route): the
//  FQ_SHAPER_SUSPEND_AFTER-th in a row suspends the destination.
void fq_shaper_unreachable(fq_shaper_t *self, int64_t now_us);

//  Suspended, else throttled until the climb is done, else open.
fq_shaper_state_t fq_shaper_state(fq_shaper_t *self, int64_t now_us);

//  The rate messages are released at now, 0 meaning no limit. While
//  suspended, the rate the destination will resume at.
double fq_shaper_effective_per_s(fq_shaper_t *self, int64_t now_us);

//  The configured rate, 0 meaning none.
double fq_shaper_configured_per_s(const fq_shaper_t *self);

//  Microseconds left of the suspension, 0 when not suspended.
int64_t fq_shaper_suspended_for_us(fq_shaper_t *self, int64_t now_us);

#endif
