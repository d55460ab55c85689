/*  fq_store_unsubscribe.h — one-click unsubscribe as the store does it:
    fairq.unsubscribe of sql/migrations/0021_unsubscribe.sql, which fairqd's
    public unsubscribe listener (api/fq_api_unsubscribe.c) runs for a POST
    to a URL whose token opened (docs/feedback.md, "One-click
    unsubscribe"). Defined in fq_store_unsubscribe.c; the connection and
    its errors are fq_store.h's.
*/
#ifndef FQ_STORE_UNSUBSCRIBE_H
#define FQ_STORE_UNSUBSCRIBE_H

#include "fq_store.h"
#include <stdbool.h>
#include <stdint.h>

typedef struct {
    bool known;      //  The tenant exists (false: nothing was done)
    bool suppressed; //  The address went on the tenant's list now (false: it was there)
    int cancelled;   //  Messages cancelled now
} fq_unsubscribe_result_t;

//  Unsubscribes recipient (any case) from tenant_id, for a message of
//  request_id, in one transaction: the tenant's suppression list gets the
//  address (reason "unsubscribe"), the tenant's pending and failed
//  messages to it are cancelled (their counters, a message.cancelled event
//  each), and a message.unsubscribed event is written when anything
//  changed. A second call changes nothing and answers known with
//  suppressed false and cancelled 0. Returns 0 with *out, or FQ_EINVAL (no
//  recipient, an id not positive) or FQ_EDB.
int fq_store_unsubscribe(fq_store_t *self, int64_t tenant_id, int64_t request_id,
                         const char *recipient, fq_unsubscribe_result_t *out);

#endif
