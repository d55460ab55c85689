/*  fq_send_budget.h — one tenant's send budget: how many of its messages
    the scheduler may hand out now (migration 0017, docs/fairness.md,
    "Tenant send budgets").

    Two limits, each optional:

    * A send rate: a token bucket of one second's worth (fq_rate.h's
      default burst), refilled continuously; a fraction of a token is
      kept, so 7/min is 7 a minute.
    * A daily quota: messages handed out in one UTC day, less those given
      back unsent (their sender died, the receiver deferred them). The
      count lives in the database, reserved in blocks before they are
      handed out (the caller's fq_store_reserve_sends), so no crash or
      failover lets a tenant past its quota: a scheduler that starts
      counts every reservation made that day as sent. A block is a
      fiftieth of the quota, at least 1 and at most 1,000: a crash costs
      the tenant at most that much of its day, and the database sees one
      write per block, not per message.

    The budget never talks to the database itself: it says how much to
    reserve (fq_send_budget_want) and is told what was (_reserved). Times
    are microseconds of a monotonic clock; days are days since 1970-01-01
    UTC; both come from the caller, so tests control them. Pure logic, no
    I/O, no allocation: the caller embeds one per limited tenant. */
#ifndef FQ_SEND_BUDGET_H
#define FQ_SEND_BUDGET_H

#include "fq_rate.h"
#include "fq_shaper.h"
#include <stdbool.h>
#include <stdint.h>

//  The largest block reserved at once, and the share of the quota one is.
#define FQ_SEND_BUDGET_BLOCK_MAX   1000
#define FQ_SEND_BUDGET_BLOCK_SHARE 50

typedef struct {
    fq_shaper_t rate; //  Used as a plain token bucket (no throttling)
    bool has_rate;
    int64_t quota;    //  0: none
    int64_t day;      //  The day used and reserved are of
    int64_t used;     //  Handed out that day, less what came back
    int64_t reserved; //  Reserved in the database that day, by anyone
    bool loaded;      //  reserved was read for day
    bool dirty;       //  used changed since it was last recorded
} fq_send_budget_t;

//  Sets self up (zeroed first by the caller), or reconfigures it keeping
//  its counts and tokens: rate NULL is no rate, quota 0 no quota.
void fq_send_budget_configure(fq_send_budget_t *self, const fq_rate_t *rate, int64_t quota,
                              int64_t now_us);

//  True when it limits anything.
bool fq_send_budget_limits(const fq_send_budget_t *self);

//  Moves to day if it is a new one: the count starts at 0 and the day's
//  reservations are to be read (fq_send_budget_want asks for a block).
void fq_send_budget_today(fq_send_budget_t *self, int64_t day);

//  How many may be handed out now: the lesser of the rate's whole tokens
//  and what is reserved but unused; INT64_MAX when nothing limits.
int64_t fq_send_budget_allowance(fq_send_budget_t *self, int64_t now_us);

//  How much more to reserve now: a block when the reservation is used up
//  (or not read yet today) and the quota is not reached, else 0.
int64_t fq_send_budget_want(const fq_send_budget_t *self);

//  A reservation answered: before is what had been reserved that day
//  before it (counted as used when the day's first read finds it, as an
//  earlier leader may have handed it out), after what is now.
void fq_send_budget_reserved(fq_send_budget_t *self, int64_t before, int64_t after);

//  n messages were handed out (taking n tokens and n of the reservation).
void fq_send_budget_take(fq_send_budget_t *self, int64_t n, int64_t now_us);

//  n messages of day came back unsent: they no longer count.
void fq_send_budget_give_back(fq_send_budget_t *self, int64_t n, int64_t day);

//  True when the day's quota is spent (nothing more can be reserved).
bool fq_send_budget_quota_spent(const fq_send_budget_t *self);

//  For a budget whose allowance is 0: microseconds until time alone gives
//  it one (the rate's next token, or the next UTC day when the quota is
//  spent: seconds_into_day is the wall clock's seconds since midnight UTC),
//  at least 1; -1 when time alone will not (a reservation is wanted).
int64_t fq_send_budget_wait_us(fq_send_budget_t *self, int64_t now_us, int64_t seconds_into_day);

#endif
