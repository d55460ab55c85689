/*  fq_store_suppressions.c — suppression lists as tenants and the operator
    manage them (see fq_store_suppressions.h; the schema is migration
    0019's).

    A list is named by its tenant's name, or NULL for the global one, and
    each statement finds its list itself: S_LIST is the list's key in the
    unique index suppressions_list_address_idx, (coalesce(tenant_id, 0),
    address), 0 for the global list and NULL for a tenant that does not
    exist. So every call is one round trip that tells "no such tenant"
    from "not on the list", and each read or write of an entry is one probe
    of that index, a page one range scan of it in address order.

    Every value is checked in C before it is sent (the address by the
    recipients' rule, lowercased here), so what the schema's CHECKs refuse
    never reaches them from here; they stay the last line.
*/
#include "fq_store_suppressions.h"
#include "fq_error.h"
#include "fq_limits.h"
#include "fq_store_internal.h"
#include "fq_utf8.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  The list's key: 0 for the global list ($1 NULL), the tenant's id, or
//  NULL for a tenant that does not exist.
#define S_LIST                                                                                     \
    "(SELECT CASE WHEN $1::text IS NULL THEN 0::bigint"                                            \
    " ELSE (SELECT t.id FROM fairq.tenants t WHERE t.name = $1::text) END)"

//  The same for an import's transaction, the tenant locked against its
//  deletion until the transaction ends, as the foreign key's own check
//  would lock it (an import of many statements must not find its tenant
//  gone halfway). A read takes no lock: it writes nothing.
#define S_LIST_LOCKED                                                                              \
    "(SELECT CASE WHEN $1::text IS NULL THEN 0::bigint"                                            \
    " ELSE (SELECT t.id FROM fairq.tenants t WHERE t.name = $1::text FOR KEY SHARE) END)"

//  The columns of an entry after the list's key, as every read names
//  them: s is the entry's row.
#define S_ENTRY_COLUMNS                                                                            \
    "s.address, s.reason::text, s.detail, floor(extract(epoch FROM s.created_at))::bigint"

//  The columns of a result: the list's key, then the entry's.
enum { S_LIST_ID, S_ADDRESS, S_REASON, S_DETAIL, S_AT };

//  What a bad value may be quoted with in a message, at most.
#define S_QUOTE_MAX 100

//  ASCII's letters: an address is ASCII (the rule), so lowercasing it is
//  this, as the schema's lower() is for ASCII.
#define S_UPPER_FIRST 'A'
#define S_UPPER_LAST  'Z'
#define S_CASE_OFFSET ('a' - 'A')

//  Control characters a detail may not hold: C0 and DEL (C1 are checked
//  as UTF-8 sequences).
#define S_CONTROL_LAST 0x1f
#define S_CONTROL_DEL  0x7f
#define S_C1_LEAD      0xc2
#define S_C1_FIRST     0x80
#define S_C1_LAST      0x9f

//  ---------------------------------------------------------------------
//  Checks

//  The list's name for a message: "tenant \"acme\"" or "the global list".
static void s_list_name(char *out, size_t size, const char *tenant)
{
    if (tenant)
        snprintf(out, size, "the suppression list of tenant \"%.*s\"", FQ_TENANT_NAME_MAX, tenant);
    else
        snprintf(out, size, "the global suppression list");
}

//  Room for s_list_name's text.
#define S_LIST_NAME_SIZE (FQ_TENANT_NAME_MAX + 64)

static int s_no_tenant(fq_store_t *self, const char *tenant)
{
    return fq_store_fail(self, FQ_ENOTFOUND, "could not read tenant: \"%.*s\" does not exist",
                         FQ_TENANT_NAME_MAX, tenant);
}

//  A tenant's name that no tenant can have is none that exists: the
//  database is not asked (nor given text it may refuse).
static int s_check_tenant(fq_store_t *self, const char *tenant)
{
    return tenant && !fq_tenant_name_valid(tenant) ? s_no_tenant(self, tenant) : 0;
}

//  Checks address by the rule and writes it lowercased into out. Returns
//  0 or FQ_EINVAL with the rule's words.
static int s_address(fq_store_t *self, const char *address, char out[FQ_SUPPRESSION_ADDRESS_SIZE])
{
    size_t size = address ? strlen(address) : 0;
    const char *problem = fq_recipient_address_problem(address ? address : "", size);
    if (problem)
        return fq_store_fail(self, FQ_EINVAL, "invalid address \"%.*s\": %s",
                             (int)fq_utf8_prefix(address ? address : "", size, S_QUOTE_MAX),
                             address ? address : "", problem);
    for (size_t i = 0; i <= size; i++)
        out[i] = address[i] >= S_UPPER_FIRST && address[i] <= S_UPPER_LAST
                     ? (char)(address[i] + S_CASE_OFFSET)
                     : address[i];
    return 0;
}

//  Checks a write's reason and detail. Returns 0 or FQ_EINVAL.
static int s_check_entry(fq_store_t *self, const char *reason, const char *detail)
{
    if (!fq_suppression_reason(reason))
        return fq_store_fail(self, FQ_EINVAL,
                             "reason must be one of " FQ_SUPPRESSION_REASONS_TEXT ", not \"%.*s\"",
                             S_QUOTE_MAX, reason ? reason : "");
    if (!detail)
        return 0;
    size_t size = strlen(detail);
    if (size > FQ_SUPPRESSION_DETAIL_MAX)
        return fq_store_fail(self, FQ_EINVAL, "detail must be at most %d bytes, not %zu",
                             FQ_SUPPRESSION_DETAIL_MAX, size);
    if (!fq_utf8_valid(detail, size))
        return fq_store_fail(self, FQ_EINVAL, "detail is not valid UTF-8");
    for (size_t i = 0; i < size; i++) {
        unsigned char c = (unsigned char)detail[i];
        if (c <= S_CONTROL_LAST || c == S_CONTROL_DEL ||
            (c == S_C1_LEAD && (unsigned char)detail[i + 1] >= S_C1_FIRST &&
             (unsigned char)detail[i + 1] <= S_C1_LAST))
            return fq_store_fail(self, FQ_EINVAL,
                                 "detail must be text without control characters (one at byte %zu)",
                                 i);
    }
    return 0;
}

//  ---------------------------------------------------------------------
//  Entries

//  Fills entry from row of res, its strings at *strings.
static void s_fill(const PGresult *res, int row, fq_suppression_t *entry, char **strings)
{
    const char *reason = fq_suppression_reason(PQgetvalue(res, row, S_REASON));
    //  A reason only a newer schema knows
    *entry = (fq_suppression_t){.reason = reason ? reason : "unknown",
                                .created_at = fq_store_int64(res, row, S_AT)};
    entry->address = fq_store_text_copy(res, row, S_ADDRESS, strings);
    entry->detail = fq_store_text_copy(res, row, S_DETAIL, strings);
}

//  The entry of row of res, one allocation (NULL when out of memory).
static fq_suppression_t *s_entry(const PGresult *res, int row)
{
    size_t size = sizeof(fq_suppression_t) + fq_store_text_size(res, row, S_ADDRESS) +
                  fq_store_text_size(res, row, S_DETAIL);
    fq_suppression_t *entry = malloc(size);
    if (entry) {
        char *strings = (char *)(entry + 1);
        s_fill(res, row, entry, &strings);
    }
    return entry;
}

//  After a statement whose first row tells the list's key and whether the
//  entry is there: FQ_ENOTFOUND for no tenant, or (missing) for no entry.
static int s_found(fq_store_t *self, const PGresult *res, const char *tenant, const char *address,
                   bool missing)
{
    if (PQntuples(res) < 1 || PQgetisnull(res, 0, S_LIST_ID))
        return s_no_tenant(self, tenant ? tenant : "");
    if (missing) {
        char list[S_LIST_NAME_SIZE];
        s_list_name(list, sizeof list, tenant);
        return fq_store_fail(self, FQ_ENOTFOUND, "\"%s\" is not on %s", address, list);
    }
    return 0;
}

int fq_store_suppression_get(fq_store_t *self, const char *tenant, const char *address,
                             fq_suppression_t **entry)
{
    *entry = NULL;
    char lower[FQ_SUPPRESSION_ADDRESS_SIZE];
    int rc = s_check_tenant(self, tenant);
    if (rc == 0)
        rc = s_address(self, address, lower);
    if (rc)
        return rc;
    const char *params[] = {tenant, lower};
    PGresult *res = fq_store_query(self,
                                   "SELECT l.id, " S_ENTRY_COLUMNS " FROM (SELECT " S_LIST
                                   " AS id) l LEFT JOIN fairq.suppressions s"
                                   " ON coalesce(s.tenant_id, 0) = l.id AND s.address = $2::text",
                                   2, params, PGRES_TUPLES_OK, "read suppression", &rc);
    if (!res)
        return rc;
    rc = s_found(self, res, tenant, lower, PQgetisnull(res, 0, S_ADDRESS));
    if (rc == 0 && !(*entry = s_entry(res, 0)))
        rc = fq_store_fail(self, FQ_ENOMEM, "out of memory");
    PQclear(res);
    return rc;
}

//  One try of an add: inserts the entry unless the list holds it. *entry
//  is the new one, or NULL when it was there.
static int s_insert(fq_store_t *self, const char *tenant, const char *address, const char *reason,
                    const char *detail, fq_suppression_t **entry)
{
    const char *params[] = {tenant, address, reason, detail};
    int rc;
    PGresult *res =
        fq_store_query(self,
                       "WITH l AS (SELECT " S_LIST " AS id),"
                       " s AS (INSERT INTO fairq.suppressions (tenant_id, address, reason, detail)"
                       "  SELECT nullif(l.id, 0), $2::text, $3::fairq.suppression_reason, $4::text"
                       "  FROM l WHERE l.id IS NOT NULL ON CONFLICT DO NOTHING"
                       "  RETURNING address, reason, detail, created_at)"
                       " SELECT l.id, " S_ENTRY_COLUMNS " FROM l LEFT JOIN s ON true",
                       4, params, PGRES_TUPLES_OK, "add suppression", &rc);
    if (!res)
        return rc;
    rc = s_found(self, res, tenant, address, false);
    if (rc == 0 && !PQgetisnull(res, 0, S_ADDRESS) && !(*entry = s_entry(res, 0)))
        rc = fq_store_fail(self, FQ_ENOMEM, "out of memory");
    PQclear(res);
    return rc;
}

int fq_store_suppression_add(fq_store_t *self, const char *tenant, const char *address,
                             const char *reason, const char *detail, fq_suppression_t **entry,
                             bool *created)
{
    if (entry)
        *entry = NULL;
    *created = false;
    char lower[FQ_SUPPRESSION_ADDRESS_SIZE];
    int rc = s_check_tenant(self, tenant);
    if (rc == 0)
        rc = s_address(self, address, lower);
    if (rc == 0)
        rc = s_check_entry(self, reason, detail);
    //  Inserted, or there: then read as it is. Removed by another call
    //  between the two, it is inserted again (once more at most)
    fq_suppression_t *got = NULL;
    for (int attempt = 0; rc == 0 && attempt < 2 && !got; attempt++) {
        rc = s_insert(self, tenant, lower, reason, detail, &got);
        *created = got != NULL;
        if (rc == 0 && !got) {
            rc = fq_store_suppression_get(self, tenant, lower, &got);
            if (rc == FQ_ENOTFOUND && attempt == 0)
                rc = 0;
        }
    }
    if (rc == 0 && entry)
        *entry = got;
    else
        free(got);
    return rc;
}

int fq_store_suppression_remove(fq_store_t *self, const char *tenant, const char *address)
{
    char lower[FQ_SUPPRESSION_ADDRESS_SIZE];
    int rc = s_check_tenant(self, tenant);
    if (rc == 0)
        rc = s_address(self, address, lower);
    if (rc)
        return rc;
    const char *params[] = {tenant, lower};
    PGresult *res = fq_store_query(
        self,
        "WITH l AS (SELECT " S_LIST " AS id),"
        " gone AS (DELETE FROM fairq.suppressions s USING l"
        "  WHERE coalesce(s.tenant_id, 0) = l.id AND s.address = $2::text RETURNING 1)"
        " SELECT l.id, (SELECT count(*) FROM gone) FROM l",
        2, params, PGRES_TUPLES_OK, "remove suppression", &rc);
    if (!res)
        return rc;
    rc = s_found(self, res, tenant, lower, fq_store_int64(res, 0, 1) == 0);
    PQclear(res);
    return rc;
}

//  ---------------------------------------------------------------------
//  Imports

//  The addresses of a batch as an array literal, lowercased.
typedef struct {
    fq_buf_t array;
    size_t count;
} s_batch_t;

//  Writes the batch: one statement. Adds what it inserted to *added.
static int s_write_batch(fq_store_t *self, const char *list_id, s_batch_t *batch,
                         const char *reason, const char *detail, int64_t *added)
{
    if (batch->count == 0)
        return 0;
    int rc =
        fq_buf_add_char(&batch->array, '}') ? fq_store_fail(self, FQ_ENOMEM, "out of memory") : 0;
    const char *params[] = {list_id, batch->array.data, reason, detail};
    PGresult *res =
        rc ? NULL
           : fq_store_query(self,
                            "INSERT INTO fairq.suppressions (tenant_id, address, reason, detail)"
                            " SELECT nullif($1::bigint, 0), a, $3::fairq.suppression_reason,"
                            " $4::text FROM unnest($2::text[]) a ON CONFLICT DO NOTHING",
                            4, params, PGRES_COMMAND_OK, "import suppressions", &rc);
    if (!res)
        return rc;
    *added += strtoll(PQcmdTuples(res), NULL, 10);
    PQclear(res);
    fq_buf_reset(&batch->array);
    batch->count = 0;
    return 0;
}

//  Appends an address (checked, lowercased) to the batch, and writes the
//  batch once it is full.
static int s_batch_add(fq_store_t *self, const char *list_id, s_batch_t *batch, const char *address,
                       const char *reason, const char *detail, int64_t *added)
{
    char lower[FQ_SUPPRESSION_ADDRESS_SIZE];
    int rc = s_address(self, address, lower);
    if (rc)
        return rc;
    if (fq_buf_add_char(&batch->array, batch->count ? ',' : '{') ||
        fq_store_array_text(&batch->array, lower))
        return fq_store_fail(self, FQ_ENOMEM, "out of memory");
    batch->count++;
    return batch->count < FQ_SUPPRESSION_IMPORT_BATCH
               ? 0
               : s_write_batch(self, list_id, batch, reason, detail, added);
}

//  The list's key, in the open transaction, into list_id (text). Returns
//  0, FQ_ENOTFOUND or FQ_EDB.
static int s_list_id(fq_store_t *self, const char *tenant, char list_id[FQ_STORE_INT_TEXT])
{
    const char *params[] = {tenant};
    int rc;
    PGresult *res = fq_store_query(self, "SELECT " S_LIST_LOCKED, 1, params, PGRES_TUPLES_OK,
                                   "read suppression list", &rc);
    if (!res)
        return rc;
    rc = s_found(self, res, tenant, "", false);
    if (rc == 0)
        snprintf(list_id, FQ_STORE_INT_TEXT, "%s", PQgetvalue(res, 0, S_LIST_ID));
    PQclear(res);
    return rc;
}

int fq_store_suppression_import(fq_store_t *self, const char *tenant, fq_suppression_next_fn *next,
                                void *arg, const char *reason, const char *detail, int64_t *added)
{
    *added = 0;
    int rc = s_check_tenant(self, tenant);
    if (rc == 0)
        rc = s_check_entry(self, reason, detail);
    if (rc == 0)
        rc = fq_store_exec(self, "BEGIN", "begin import of suppressions");
    if (rc)
        return rc;
    char list_id[FQ_STORE_INT_TEXT];
    s_batch_t batch = {0};
    int64_t count = 0;
    rc = s_list_id(self, tenant, list_id);
    const char *address;
    while (rc == 0 && (address = next(arg)) != NULL)
        rc = s_batch_add(self, list_id, &batch, address, reason, detail, &count);
    if (rc == 0)
        rc = s_write_batch(self, list_id, &batch, reason, detail, &count);
    if (rc == 0)
        rc = fq_store_exec(self, "COMMIT", "commit import of suppressions");
    if (rc)
        fq_store_rollback(self);
    else
        *added = count;
    fq_buf_free(&batch.array);
    return rc;
}

//  An array's addresses one by one, for an import.
typedef struct {
    const char *const *addresses;
    size_t count;
    size_t next;
} s_array_t;

static const char *s_array_next(void *arg)
{
    s_array_t *array = arg;
    return array->next < array->count ? array->addresses[array->next++] : NULL;
}

int fq_store_suppression_add_many(fq_store_t *self, const char *tenant,
                                  const char *const *addresses, size_t count, const char *reason,
                                  const char *detail, int64_t *added)
{
    s_array_t array = {addresses, count, 0};
    return fq_store_suppression_import(self, tenant, s_array_next, &array, reason, detail, added);
}

//  ---------------------------------------------------------------------
//  Pages and counts

int fq_store_suppressions(fq_store_t *self, const char *tenant, const char *after, int limit,
                          fq_suppression_page_t *page)
{
    *page = (fq_suppression_page_t){0};
    char cursor[FQ_SUPPRESSION_ADDRESS_SIZE] = "";
    int rc = s_check_tenant(self, tenant);
    if (rc == 0 && (limit < 1 || limit > FQ_STORE_PAGE_MAX))
        rc = fq_store_fail(self, FQ_EINVAL,
                           "could not read the suppression list: limit %d is not within 1..%d",
                           limit, FQ_STORE_PAGE_MAX);
    if (rc == 0 && after && *after && s_address(self, after, cursor) != 0)
        rc = fq_store_fail(self, FQ_EINVAL,
                           "could not read the suppression list: \"%.*s\" is not a cursor (a "
                           "cursor is the \"next\" of a page: an address)",
                           (int)fq_utf8_prefix(after, strlen(after), S_QUOTE_MAX), after);
    if (rc)
        return rc;
    char limit_text[FQ_STORE_INT_TEXT];
    snprintf(limit_text, sizeof limit_text, "%d", limit);
    const char *params[] = {tenant, cursor, limit_text};
    PGresult *res =
        fq_store_query(self,
                       "SELECT l.id, " S_ENTRY_COLUMNS " FROM (SELECT " S_LIST " AS id) l"
                       " LEFT JOIN LATERAL (SELECT x.address, x.reason, x.detail, x.created_at"
                       "  FROM fairq.suppressions x WHERE coalesce(x.tenant_id, 0) = l.id"
                       "  AND x.address > $2::text ORDER BY x.address LIMIT $3::int) s ON true"
                       " ORDER BY s.address",
                       3, params, PGRES_TUPLES_OK, "read suppression list", &rc);
    if (!res)
        return rc;
    rc = s_found(self, res, tenant, "", false);
    //  No entry: the one row of the list's key alone
    int n = rc == 0 && !PQgetisnull(res, 0, S_ADDRESS) ? PQntuples(res) : 0;
    size_t size = (size_t)n * sizeof(fq_suppression_t);
    for (int i = 0; i < n; i++)
        size += fq_store_text_size(res, i, S_ADDRESS) + fq_store_text_size(res, i, S_DETAIL);
    fq_suppression_t *rows = n ? malloc(size) : NULL;
    if (n && !rows)
        rc = fq_store_fail(self, FQ_ENOMEM, "out of memory");
    if (rows) {
        char *strings = (char *)(rows + n);
        for (int i = 0; i < n; i++)
            s_fill(res, i, &rows[i], &strings);
        page->rows = rows;
        page->count = (size_t)n;
    }
    PQclear(res);
    return rc ? rc : n;
}

void fq_suppression_page_free(fq_suppression_page_t *page)
{
    free(page->rows);
    *page = (fq_suppression_page_t){0};
}

int fq_store_suppression_counts(fq_store_t *self, const char *tenant,
                                fq_suppression_counts_t *counts)
{
    *counts = (fq_suppression_counts_t){0};
    int rc = s_check_tenant(self, tenant);
    if (rc)
        return rc;
    const char *params[] = {tenant};
    PGresult *res = fq_store_query(
        self,
        "SELECT l.id, c.reason::text, c.n FROM (SELECT " S_LIST " AS id) l"
        " LEFT JOIN LATERAL (SELECT x.reason, count(*) AS n FROM fairq.suppressions x"
        "  WHERE coalesce(x.tenant_id, 0) = l.id GROUP BY x.reason) c ON true",
        1, params, PGRES_TUPLES_OK, "count suppressions", &rc);
    if (!res)
        return rc;
    rc = s_found(self, res, tenant, "", false);
    for (int i = 0; rc == 0 && i < PQntuples(res); i++) {
        if (PQgetisnull(res, i, 1))
            continue;
        int64_t n = fq_store_int64(res, i, 2);
        for (size_t r = 0; r < FQ_SUPPRESSION_REASON_COUNT; r++)
            if (strcmp(PQgetvalue(res, i, 1), fq_suppression_reasons[r]) == 0)
                counts->by_reason[r] = n;
        counts->total += n;
    }
    PQclear(res);
    return rc;
}
