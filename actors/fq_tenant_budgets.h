/*  fq_tenant_budgets.h — the scheduler's tenant send budgets (0017): a
    rate and a daily quota per tenant that has either, enforced as its
    messages are handed out (docs/fairness.md, "Tenant send budgets").

    A tenant whose budget is spent is held out of the turns of every lane
    (fq_fairness_tenant_hold): its messages stay pending, take no sender
    credit and cost no attempt, and the others share what it leaves. It is
    let back in when its rate has a token again, or its new UTC day starts,
    or (a reservation could not be written) the database answers again.

    The day's count is reserved in the database in blocks before it is
    handed out (fq_send_budget.h says why); each reservation is one
    statement on the scheduler's connection, one per block of a tenant's
    messages. Tenants without limits cost nothing here: they are never in
    the map.

    An operator's hold of a tenant (0024, fq_tenant_budgets_operator_holds)
    holds it out of the turns the same way: a tenant is let back in only
    when neither its budget nor an operator holds it. */
#ifndef FQ_TENANT_BUDGETS_H
#define FQ_TENANT_BUDGETS_H

#include "fq_db.h"
#include "fq_lanes.h"
#include "fq_send_budget.h"
#include <stdbool.h>
#include <stdint.h>

typedef struct fq_tenant_budgets fq_tenant_budgets_t;

//  The wall clock the days are counted by: seconds since 1970 UTC.
typedef int64_t (*fq_tenant_budgets_wall_fn)(void);

//  lanes: whose fairness cores the holds go to; db: the scheduler's
//  connection the reservations use; wall: NULL for time(NULL).
fq_tenant_budgets_t *fq_tenant_budgets_new(fq_lanes_t *lanes, fq_db_t *db,
                                           fq_tenant_budgets_wall_fn wall);

//  Records each tenant's count (and, with stopping, gives back what it
//  reserved and did not hand out) if the database is there, then frees.
void fq_tenant_budgets_destroy(fq_tenant_budgets_t **self_p, bool stopping);

//  A tenant's limits as a poll read them: rate_count messages per
//  period_s (0: no rate), quota a day (0: none). A tenant given no limits
//  is forgotten and let back in: then true (its figures are gone).
bool fq_tenant_budgets_configure(fq_tenant_budgets_t *self, int64_t tenant_id, int64_t rate_count,
                                 int period_s, int64_t quota, int64_t now_us);

//  One message of tenant_id is about to be handed out: true when its
//  budget allows it (and takes it), false when not (the caller puts the
//  message back). A tenant whose budget is spent by it, or refused, is held
//  in every lane.
bool fq_tenant_budgets_take(fq_tenant_budgets_t *self, int64_t tenant_id, int64_t now_us);

//  n messages of tenant_id came back unsent: they do not count.
void fq_tenant_budgets_give_back(fq_tenant_budgets_t *self, int64_t tenant_id, int64_t n);

//  A request of tenant_id joined fairness (a new lane, a request put
//  back): a held tenant is held there too.
void fq_tenant_budgets_joined(fq_tenant_budgets_t *self, int64_t tenant_id,
                              fq_fairness_t *fairness);

//  Lets back in the held tenants whose budget allows again. Returns the
//  microseconds until one of those still held may be let in by time alone
//  (the caller's timer), or -1 for none.
int64_t fq_tenant_budgets_wake(fq_tenant_budgets_t *self, int64_t now_us);

//  Writes the counts that changed since the last call (the figure the
//  API shows). Returns 0 or a negative code (tried again next time).
int fq_tenant_budgets_record(fq_tenant_budgets_t *self);

typedef struct {
    int64_t tenant_id;
    double rate_per_s;  //  0: no rate
    int64_t quota;      //  0: none
    int64_t sent_today; //  Handed out today, less what came back
    bool held;          //  Out of the turns now
} fq_tenant_budget_view_t;

//  The tenants an operator holds now (count ids, as the scheduler read
//  them): those newly named are held in every lane, those no longer named
//  let back in unless their budget holds them. Returns 0 or FQ_ENOMEM
//  (the set is then as it was).
int fq_tenant_budgets_operator_holds(fq_tenant_budgets_t *self, const int64_t *ids, size_t count);

//  Whether an operator holds tenant_id.
bool fq_tenant_budgets_operator_held(fq_tenant_budgets_t *self, int64_t tenant_id);

//  Calls each for every tenant with limits.
void fq_tenant_budgets_each(fq_tenant_budgets_t *self,
                            void (*each)(const fq_tenant_budget_view_t *view, void *arg),
                            void *arg);

#endif
