/*  fq_fairness.h — who sends next: the scheduler's fairness core.

    Pure in-memory logic, no I/O, so it can be tested and measured alone.
    Two levels (docs/fairness.md works through examples):

    * tenants take turns by deficit round robin: each round a tenant earns
      its weight in credit and sends one message per turn while it has
      credit, ready messages and room under its max in flight, so a heavy
      tenant's share is spread over the round, not sent in a burst;
    * inside a tenant, its requests of the highest priority that has ready
      messages take turns, one message each, so a tenant's small request
      is not stuck behind its own big campaign.

    Memory is O(active requests): each request holds a small prefetch of
    ready message ids, paged from PostgreSQL by id cursor on demand
    (fq_fairness_next_refill). Every operation is O(1) in the backlog:
    only tenants and requests that can send right now sit in the rings.
    Tenant and request ids are database keys, from 1 up; others are refused.
*/
#ifndef FQ_FAIRNESS_H
#define FQ_FAIRNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct fq_fairness fq_fairness_t;

//  prefetch: ready ids kept per request; a refill is asked for when a
//  request's buffer falls to half of it.
fq_fairness_t *fq_fairness_new(int prefetch);
void fq_fairness_destroy(fq_fairness_t **self_p);

//  Creates or updates a tenant (weight >= 1, max_inflight >= 1).
int fq_fairness_tenant_set(fq_fairness_t *self, int64_t tenant_id, int weight, int max_inflight);

//  Holds a tenant out of the turns, or lets it back in: a held tenant
//  sends nothing, keeps its requests and their prefetched ids, and leaves
//  its place in the turn order to the others (as a tenant with nothing
//  ready does). The scheduler holds a tenant whose send budget is spent.
//  A tenant not known yet is made (with the defaults), so the hold holds
//  for the requests it brings later. Returns 0, FQ_EINVAL or FQ_ENOMEM.
int fq_fairness_tenant_hold(fq_fairness_t *self, int64_t tenant_id, bool held);

//  Adds an active request with nothing prefetched yet; it is queued for a
//  refill from after_id. split_done says whether every message row exists
//  (a short page then means the request is exhausted). Returns 0,
//  FQ_EEXIST or FQ_ENOMEM. The tenant is created with defaults if unknown.
int fq_fairness_request_add(fq_fairness_t *self, int64_t request_id, int64_t tenant_id,
                            int priority, int64_t after_id, bool split_done);

//  True while the request is held (a request paged to its end and with
//  nothing buffered is let go by itself).
bool fq_fairness_request_held(const fq_fairness_t *self, int64_t request_id);

//  Removes a request (cancelled, paused, done); its prefetched ids are
//  forgotten (they are still pending in the database).
void fq_fairness_request_remove(fq_fairness_t *self, int64_t request_id);

//  The splitter wrote more rows of a request (split_done when the last):
//  an exhausted request is paged again.
void fq_fairness_request_split(fq_fairness_t *self, int64_t request_id, bool split_done);

//  The splitter wrote every message row of a request at once and knows
//  their ids (count, ascending, after the request's cursor): they are its
//  whole page, and it is paged no more. A newcomer's one-chunk request
//  then waits for no page query. Returns 0, FQ_ECONFLICT when the request
//  has ids buffered or a page coming (page it as after
//  fq_fairness_request_split), FQ_ENOTFOUND or FQ_ENOMEM.
int fq_fairness_request_split_all(fq_fairness_t *self, int64_t request_id, const int64_t *ids,
                                  int count);

//  Takes the next request that needs a page: 1 with its id, cursor and
//  how many ids to fetch (the request is then marked as being refilled),
//  or 0 when none needs one.
int fq_fairness_next_refill(fq_fairness_t *self, int64_t *request_id, int64_t *after_id,
                            int *limit);

//  Delivers a page: count ids in ascending order, all after the cursor.
//  A page shorter than asked of a fully split request exhausts it.
int fq_fairness_request_fill(fq_fairness_t *self, int64_t request_id, const int64_t *ids,
                             int count);

//  Puts one message back in front of its request's buffer: a retry that
//  came due, or a message whose sender died. The request is created
//  (exhausted, split done) if it is not active.
int fq_fairness_push(fq_fairness_t *self, int64_t request_id, int64_t tenant_id,
                     int64_t message_id);

typedef struct {
    int64_t message_id;
    int64_t request_id;
    int64_t tenant_id;
} fq_pick_t;

//  Picks the next message to send, fairly: 1 with it (the tenant's in
//  flight count goes up), 0 when nothing can be sent now.
int fq_fairness_next(fq_fairness_t *self, fq_pick_t *pick);

//  A message of tenant_id is no longer in flight (acked, nacked, or pushed
//  back with fq_fairness_push).
void fq_fairness_done(fq_fairness_t *self, int64_t tenant_id);

//  A message of tenant_id that was picked cost cost more than the 1 its
//  pick charged (less, if negative): its weight buys fewer (or more)
//  messages from now on. For fairness by bytes or by delivery time
//  (docs/fairness.md, "What a message costs"), where a message's cost is
//  known only once it is rendered or answered. A tenant can go into debt;
//  it then sits out whole rounds until its weight has paid it off, and
//  keeps the debt while it has nothing ready. Unknown tenants and costs
//  that are not finite numbers are ignored.
void fq_fairness_charge(fq_fairness_t *self, int64_t tenant_id, double cost);

typedef struct {
    size_t tenants;
    size_t requests;
    size_t ready_tenants; //  In the round robin right now
    size_t prefetched;    //  Message ids held in memory
    size_t inflight;
} fq_fairness_stats_t;

void fq_fairness_stats(const fq_fairness_t *self, fq_fairness_stats_t *stats);

#endif
