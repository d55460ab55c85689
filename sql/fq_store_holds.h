/*  fq_store_holds.h — operators' holds (sql/migrations/0024_holds.sql):
    a tenant, a destination or all of fairq's sending stopped by hand until
    released (docs/operations.md, "Holds"). Defined in fq_store_holds.c;
    the connection and its errors are fq_store.h's.

    The API places and releases them (/v1/holds), the scheduler reads them
    at each full poll (fq_store_hold_list) and keeps what they name out of
    the turns; fq_store_claim_due_retries leaves held retries unclaimed.
    Every change NOTIFYs fairq_requests (the schema's trigger), so every
    fairqd's scheduler reads them again within milliseconds. */
#ifndef FQ_STORE_HOLDS_H
#define FQ_STORE_HOLDS_H

#include "fq_limits.h"
#include "fq_store.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

//  The longest reason and author a hold keeps, in bytes (the schema's
//  CHECK holds the same numbers): a line an operator writes, not a file.
#define FQ_HOLD_REASON_MAX 500
#define FQ_HOLD_BY_MAX     100

//  A name a hold names: a tenant's or a destination's, whichever is longer.
#define FQ_HOLD_NAME_SIZE                                                                          \
    (FQ_TENANT_NAME_SIZE > FQ_DESTINATION_NAME_SIZE ? FQ_TENANT_NAME_SIZE                          \
                                                    : FQ_DESTINATION_NAME_SIZE)

typedef enum {
    FQ_HOLD_TENANT,      //  One tenant's messages, in every lane
    FQ_HOLD_DESTINATION, //  Every message to one destination (fairq.destinations)
    FQ_HOLD_ALL          //  Every message
} fq_hold_scope_t;

//  The scope's name as the API and the schema write it: "tenant",
//  "destination", "all"; static storage.
const char *fq_hold_scope_name(fq_hold_scope_t scope);

//  Reads a scope's name into *scope. Returns 0 or FQ_EINVAL.
int fq_hold_scope_parse(const char *text, fq_hold_scope_t *scope);

typedef struct {
    int64_t id;
    fq_hold_scope_t scope;
    char name[FQ_HOLD_NAME_SIZE]; //  The tenant's or destination's; "" for all
    int64_t tenant_id;            //  The tenant held; 0 for the other scopes
    char reason[FQ_HOLD_REASON_MAX + 1];
    char created_by[FQ_HOLD_BY_MAX + 1];
    int64_t created_at; //  Unix seconds
} fq_hold_t;

typedef struct {
    fq_hold_t *rows; //  Owned by the caller: fq_hold_list_free
    size_t count;
} fq_hold_list_t;

//  Every hold: all first, then tenants, then destinations, each by name.
//  Returns how many, or a negative code.
int fq_store_hold_list(fq_store_t *self, fq_hold_list_t *list);
void fq_hold_list_free(fq_hold_list_t *list);

//  Holds what scope and name (ignored for FQ_HOLD_ALL) say, with reason
//  (NULL: none) and by (who placed it, 1..FQ_HOLD_BY_MAX bytes), and
//  writes the hold into out (may be NULL). Holding what is held already
//  changes nothing: out is then the hold that was there, with its reason,
//  and *created (may be NULL) false. Returns 0; FQ_ENOTFOUND for a tenant
//  or destination that does not exist; FQ_EINVAL for a reason or author
//  too long (the message says which); or FQ_EDB.
int fq_store_hold_put(fq_store_t *self, fq_hold_scope_t scope, const char *name, const char *reason,
                      const char *by, fq_hold_t *out, bool *created);

//  Releases the hold of scope and name (ignored for FQ_HOLD_ALL), writing
//  what it was into out (may be NULL). Returns 0; FQ_ENOTFOUND when it was
//  not held (the message says so); or FQ_EDB.
int fq_store_hold_release(fq_store_t *self, fq_hold_scope_t scope, const char *name,
                          fq_hold_t *out);

#endif
