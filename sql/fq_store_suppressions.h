/*  fq_store_suppressions.h — suppression lists as tenants and the operator
    manage them (the HTTP API's /v1/tenants/{name}/suppressions and
    /v1/suppressions): sql/migrations/0019_suppressions.sql says what a
    list is, and fq_store.h how the split refuses what a list holds.
    Defined in fq_store_suppressions.c; the connection and its errors are
    fq_store.h's.

    A list is a tenant's, named by the tenant's name, or the operator's
    global one, named by NULL. A tenant that does not exist is FQ_ENOTFOUND
    with the words every read of a tenant uses ("could not read tenant:
    \"x\" does not exist"), so that the API answers it as it does elsewhere.

    Addresses are taken in any case and kept lowercased: Bob@Example.com
    and bob@example.com are one entry. Each is checked by the recipients'
    address rule (recipients/fq_recipients.h) before it reaches the
    database, so the schema's CHECK never fires on an address the API took:
    what the rule refuses is FQ_EINVAL with its words ("invalid address
    \"x\": address is not local@domain"). An entry added again keeps the
    first one (its reason, detail and time).
*/
#ifndef FQ_STORE_SUPPRESSIONS_H
#define FQ_STORE_SUPPRESSIONS_H

#include "fq_recipients.h"
#include "fq_feedback_names.h"
#include "fq_store.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

//  Longest detail in bytes: the schema's suppressions_detail_check.
#define FQ_SUPPRESSION_DETAIL_MAX 2000

//  Room for an address (FQ_RECIPIENT_ADDRESS_MAX bytes) and its NUL.
#define FQ_SUPPRESSION_ADDRESS_SIZE (FQ_RECIPIENT_ADDRESS_MAX + 1)

//  Addresses an import writes with one statement: the batch's array is at
//  most some 3 MB of text for the server, and a list of millions is a few
//  hundred statements.
#define FQ_SUPPRESSION_IMPORT_BATCH 5000

//  One entry. Its strings point into the block that holds it.
typedef struct {
    const char *address; //  Lowercase
    const char *reason;  //  One of fq_suppression_reasons (static)
    const char *detail;  //  NULL: none
    int64_t created_at;  //  Unix seconds (UTC)
} fq_suppression_t;

//  A page: rows and their strings are one block, owned by the caller and
//  freed with fq_suppression_page_free.
typedef struct {
    fq_suppression_t *rows;
    size_t count;
} fq_suppression_page_t;

//  Entries by reason, in the order of fq_suppression_reasons, and in all.
typedef struct {
    int64_t by_reason[FQ_SUPPRESSION_REASON_COUNT];
    int64_t total;
} fq_suppression_counts_t;

//  Adds address to the list of tenant (NULL: the global list) with reason
//  (one of fq_suppression_reasons) and detail (NULL: none; at most
//  FQ_SUPPRESSION_DETAIL_MAX bytes of UTF-8 without control characters).
//  *created says whether it is new; an address the list holds already is
//  left as it is. *entry (may be NULL) is the entry as the list holds it
//  now, one allocation the caller free()s. Returns 0, FQ_EINVAL (a bad
//  address, reason or detail, the message says which), FQ_ENOTFOUND (no
//  such tenant), FQ_ENOMEM or FQ_EDB.
int fq_store_suppression_add(fq_store_t *self, const char *tenant, const char *address,
                             const char *reason, const char *detail, fq_suppression_t **entry,
                             bool *created);

//  Where an import's addresses come from: the next one (NUL-terminated,
//  the caller's, kept until the next call), or NULL at the end.
typedef const char *(fq_suppression_next_fn)(void *arg);

//  Adds every address next yields (with arg) to the list, as
//  fq_store_suppression_add does, FQ_SUPPRESSION_IMPORT_BATCH to a
//  statement, all in one transaction: all of them, or none. An address
//  the list holds already, or given twice, is left as it is; *added says
//  how many were new. An address the rule refuses is FQ_EINVAL (naming
//  it) and nothing is added: a caller with untrusted input checks each by
//  fq_recipient_address_problem first. Returns 0 or a code as for the add.
int fq_store_suppression_import(fq_store_t *self, const char *tenant, fq_suppression_next_fn *next,
                                void *arg, const char *reason, const char *detail, int64_t *added);

//  The same for count addresses in an array (the caller's).
int fq_store_suppression_add_many(fq_store_t *self, const char *tenant,
                                  const char *const *addresses, size_t count, const char *reason,
                                  const char *detail, int64_t *added);

//  Removes address (any case) from the list. Returns 0; FQ_ENOTFOUND when
//  the list does not hold it ("\"x\" is not on the suppression list of
//  tenant \"acme\"") or there is no such tenant; FQ_EINVAL for a bad
//  address; or FQ_EDB.
int fq_store_suppression_remove(fq_store_t *self, const char *tenant, const char *address);

//  The entry of address (any case) into *entry, one allocation the caller
//  free()s. Returns 0, FQ_ENOTFOUND (as for the remove), FQ_EINVAL,
//  FQ_ENOMEM or FQ_EDB.
int fq_store_suppression_get(fq_store_t *self, const char *tenant, const char *address,
                             fq_suppression_t **entry);

//  Up to limit (1..FQ_STORE_PAGE_MAX) entries of the list in address order
//  (the database's collation, which its index keeps), after the address
//  after (any case; NULL: from the start): a page's last address is where
//  the next one starts. A cursor that is not an address, or a bad limit,
//  is FQ_EINVAL. Returns how many rows page holds (0: none after), or a
//  negative code; on failure page is empty.
int fq_store_suppressions(fq_store_t *self, const char *tenant, const char *after, int limit,
                          fq_suppression_page_t *page);
void fq_suppression_page_free(fq_suppression_page_t *page);

//  How many entries the list holds, by reason. Returns 0, FQ_ENOTFOUND
//  (no such tenant) or FQ_EDB.
int fq_store_suppression_counts(fq_store_t *self, const char *tenant,
                                fq_suppression_counts_t *counts);

#endif
