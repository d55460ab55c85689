/*  fq_store_destinations.c — destinations as an operator reads and writes
    them (see fq_store_destinations.h; the schema is migration 0016).

    A write checks everything it can in C first, so that what it refuses
    is said in words that name the destination and the value (an API
    answer and fairqd's log quote them as they are); the schema's CHECKs
    stay the last line. Then one transaction: the destinations upserted
    in one statement, their old domains freed, their new ones inserted
    with ON CONFLICT DO NOTHING, so that a domain another destination owns
    (or takes at the same moment) is found as a row not inserted, and the
    transaction rolled back with a message naming its owner.
*/
#include "fq_store_destinations.h"
#include "fq_domain.h"
#include "fq_error.h"
#include "fq_store_internal.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  The columns of a destination, its domains as one text between spaces
//  (a domain holds none), in bytewise order as the list is.
#define S_DESTINATION_SQL                                                                          \
    "SELECT d.name, coalesce(d.rate_count, 0), coalesce(d.rate_period_s, 0),"                      \
    " coalesce(d.burst, 0), coalesce(d.max_inflight, 0),"                                          \
    " extract(epoch FROM d.updated_at)::bigint,"                                                   \
    " coalesce((SELECT string_agg(x.domain, ' ' ORDER BY x.domain COLLATE \"C\")"                  \
    "           FROM fairq.destination_domains x WHERE x.destination = d.name), '')"               \
    " FROM fairq.destinations d"

//  What separates two domains in that text.
#define S_DOMAIN_SEPARATOR ' '

static const int s_periods[] = FQ_DESTINATION_PERIODS;

//  ---------------------------------------------------------------------
//  Reading

//  Fills out from row of res; its domains in one allocation. Returns 0 or
//  FQ_ENOMEM.
static int s_row(fq_store_t *self, const PGresult *res, int row, fq_destination_t *out)
{
    *out = (fq_destination_t){.rate_count = fq_store_int64(res, row, 1),
                              .rate_period_s = (int)fq_store_int64(res, row, 2),
                              .burst = fq_store_int64(res, row, 3),
                              .max_inflight = fq_store_int64(res, row, 4),
                              .updated_at = fq_store_int64(res, row, 5)};
    snprintf(out->name, sizeof out->name, "%s", PQgetvalue(res, row, 0));
    const char *text = PQgetvalue(res, row, 6);
    size_t size = strlen(text);
    if (size == 0)
        return 0;
    size_t count = 1;
    for (const char *c = text; *c; c++)
        count += *c == S_DOMAIN_SEPARATOR;
    //  The pointers, then the text they point into
    char **domains = malloc(count * sizeof *domains + size + 1);
    if (!domains)
        return fq_store_fail(self, FQ_ENOMEM, "out of memory");
    char *copy = memcpy((char *)(domains + count), text, size + 1);
    for (size_t i = 0; i < count; i++) {
        domains[i] = copy;
        copy += strcspn(copy, " ");
        *copy++ = '\0';
    }
    out->domains = domains;
    out->ndomains = count;
    return 0;
}

void fq_destination_free(fq_destination_t *destination)
{
    free(destination->domains);
    destination->domains = NULL;
    destination->ndomains = 0;
}

int fq_store_destination_get(fq_store_t *self, const char *name, fq_destination_t *out)
{
    *out = (fq_destination_t){0};
    const char *params[] = {name ? name : ""};
    int rc;
    PGresult *res = fq_store_query(self, S_DESTINATION_SQL " WHERE d.name = $1", 1, params,
                                   PGRES_TUPLES_OK, "read destination", &rc);
    if (!res)
        return rc;
    if (PQntuples(res) == 1)
        rc = s_row(self, res, 0, out);
    else
        rc =
            fq_store_fail(self, FQ_ENOTFOUND, "could not read destination: \"%.*s\" does not exist",
                          FQ_DESTINATION_NAME_MAX, params[0]);
    PQclear(res);
    return rc;
}

int fq_store_destination_list(fq_store_t *self, fq_destination_list_t *list)
{
    *list = (fq_destination_list_t){0};
    int rc;
    PGresult *res = fq_store_query(self, S_DESTINATION_SQL " ORDER BY d.name COLLATE \"C\"", 0,
                                   NULL, PGRES_TUPLES_OK, "list destinations", &rc);
    if (!res)
        return rc;
    int count = PQntuples(res);
    list->rows = count ? calloc((size_t)count, sizeof *list->rows) : NULL;
    if (count && !list->rows)
        rc = fq_store_fail(self, FQ_ENOMEM, "out of memory");
    for (int i = 0; rc == 0 && i < count; i++) {
        rc = s_row(self, res, i, &list->rows[i]);
        list->count += rc == 0;
    }
    PQclear(res);
    if (rc) {
        fq_destination_list_free(list);
        return rc;
    }
    return count;
}

void fq_destination_list_free(fq_destination_list_t *list)
{
    for (size_t i = 0; i < list->count; i++)
        fq_destination_free(&list->rows[i]);
    free(list->rows);
    *list = (fq_destination_list_t){0};
}

//  ---------------------------------------------------------------------
//  Checks

//  One domain of a write: lowercased, and the destination that takes it.
typedef struct {
    char *domain;     //  Into the write's own copy
    const char *name; //  The spec's
} s_domain_t;

static int s_by_domain(const void *a, const void *b)
{
    return strcmp(((const s_domain_t *)a)->domain, ((const s_domain_t *)b)->domain);
}

static int s_by_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

//  Checks spec's name and limits. Returns 0 or FQ_EINVAL with the message.
static int s_check_limits(fq_store_t *self, const fq_destination_spec_t *spec)
{
    const char *name = spec->name;
    if (!fq_destination_name_valid(name))
        return fq_store_fail(self, FQ_EINVAL,
                             "a destination name is 1..%d of a-z 0-9 _ . - and starts with a "
                             "letter or digit",
                             FQ_DESTINATION_NAME_MAX);
    if (spec->rate_count < 0 || spec->rate_count > FQ_DESTINATION_RATE_COUNT_MAX)
        return fq_store_fail(self, FQ_EINVAL,
                             "destination \"%s\": a rate's count must be within 1..%d", name,
                             FQ_DESTINATION_RATE_COUNT_MAX);
    bool period = false;
    for (size_t i = 0; i < sizeof s_periods / sizeof s_periods[0]; i++)
        period = period || spec->rate_period_s == s_periods[i];
    if (spec->rate_count > 0 && !period)
        return fq_store_fail(self, FQ_EINVAL,
                             "destination \"%s\": a rate's period must be 1, 60, 3600 or 86400 "
                             "seconds, not %d",
                             name, spec->rate_period_s);
    if (spec->rate_count == 0 && spec->rate_period_s != 0)
        return fq_store_fail(self, FQ_EINVAL, "destination \"%s\": a rate period without a count",
                             name);
    if (spec->burst < 0 || spec->burst > FQ_DESTINATION_BURST_MAX)
        return fq_store_fail(self, FQ_EINVAL, "destination \"%s\": burst must be within 1..%d",
                             name, FQ_DESTINATION_BURST_MAX);
    if (spec->burst > 0 && spec->rate_count == 0)
        return fq_store_fail(self, FQ_EINVAL,
                             "destination \"%s\": a burst needs a rate (it is the rate's bucket)",
                             name);
    if (spec->max_inflight < 0 || spec->max_inflight > FQ_DESTINATION_INFLIGHT_MAX)
        return fq_store_fail(self, FQ_EINVAL,
                             "destination \"%s\": max_inflight must be within 1..%d", name,
                             FQ_DESTINATION_INFLIGHT_MAX);
    if (spec->ndomains > FQ_DESTINATION_DOMAINS_MAX)
        return fq_store_fail(self, FQ_EINVAL, "destination \"%s\": more than %d domains", name,
                             FQ_DESTINATION_DOMAINS_MAX);
    if (spec->ndomains > 0 && strcmp(name, FQ_DESTINATION_DEFAULT) == 0)
        return fq_store_fail(self, FQ_EINVAL,
                             "the destination \"" FQ_DESTINATION_DEFAULT "\" takes no domains: it "
                             "is every domain no other destination names");
    return 0;
}

//  The domains of every spec, lowercased into *copy (the caller frees
//  it) and checked, sorted into *domains (the caller frees it), *count of
//  them. Returns 0, FQ_EINVAL (a bad domain, or one taken twice) or
//  FQ_ENOMEM.
static int s_collect_domains(fq_store_t *self, const fq_destination_spec_t *specs, size_t nspecs,
                             char **copy, s_domain_t **domains, size_t *count)
{
    size_t total = 0, bytes = 0;
    for (size_t s = 0; s < nspecs; s++)
        for (size_t d = 0; d < specs[s].ndomains; d++) {
            total++;
            bytes += (specs[s].domains[d] ? strlen(specs[s].domains[d]) : 0) + 1;
        }
    *copy = malloc(bytes + 1);
    *domains = calloc(total + 1, sizeof **domains);
    *count = 0;
    if (!*copy || !*domains)
        return fq_store_fail(self, FQ_ENOMEM, "out of memory");
    char *at = *copy;
    for (size_t s = 0; s < nspecs; s++)
        for (size_t d = 0; d < specs[s].ndomains; d++) {
            const char *given = specs[s].domains[d] ? specs[s].domains[d] : "";
            size_t size = strlen(given);
            memcpy(at, given, size + 1);
            fq_domain_lower(at);
            const char *problem = fq_domain_problem(at, size);
            if (problem)
                return fq_store_fail(self, FQ_EINVAL, "destination \"%s\": domain \"%.*s\" %s",
                                     specs[s].name, FQ_DOMAIN_MAX + 1, given, problem);
            (*domains)[(*count)++] = (s_domain_t){at, specs[s].name};
            at += size + 1;
        }
    qsort(*domains, *count, sizeof **domains, s_by_domain);
    for (size_t i = 1; i < *count; i++) {
        const s_domain_t *a = &(*domains)[i - 1], *b = &(*domains)[i];
        if (strcmp(a->domain, b->domain) != 0)
            continue;
        if (strcmp(a->name, b->name) == 0)
            return fq_store_fail(self, FQ_EINVAL,
                                 "destination \"%s\": domain \"%s\" is given twice", a->name,
                                 a->domain);
        return fq_store_fail(self, FQ_EINVAL,
                             "domain \"%s\" is given to two destinations, \"%s\" and \"%s\"",
                             a->domain, a->name, b->name);
    }
    return 0;
}

//  Checks every spec, and that no name is given twice. Returns 0 or
//  FQ_EINVAL (FQ_ENOMEM).
static int s_check_specs(fq_store_t *self, const fq_destination_spec_t *specs, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        int rc = s_check_limits(self, &specs[i]);
        if (rc)
            return rc;
    }
    const char **names = calloc(count + 1, sizeof *names);
    if (!names)
        return fq_store_fail(self, FQ_ENOMEM, "out of memory");
    for (size_t i = 0; i < count; i++)
        names[i] = specs[i].name;
    qsort(names, count, sizeof *names, s_by_name);
    int rc = 0;
    for (size_t i = 1; i < count && rc == 0; i++)
        if (strcmp(names[i - 1], names[i]) == 0)
            rc = fq_store_fail(self, FQ_EINVAL, "destination \"%s\" is given twice", names[i]);
    free(names);
    return rc;
}

//  ---------------------------------------------------------------------
//  Writing

//  The parameters of a write, as array literals: the destinations'
//  names, counts, periods, bursts and most in flight (0 for none), their
//  domains and who takes each.
typedef struct {
    fq_buf_t names, counts, periods, bursts, inflights, domains, owners;
} s_arrays_t;

static void s_arrays_free(s_arrays_t *arrays)
{
    fq_buf_free(&arrays->names);
    fq_buf_free(&arrays->counts);
    fq_buf_free(&arrays->periods);
    fq_buf_free(&arrays->bursts);
    fq_buf_free(&arrays->inflights);
    fq_buf_free(&arrays->domains);
    fq_buf_free(&arrays->owners);
}

//  Adds one element to an array literal being written ("{" first).
static int s_element(fq_buf_t *array, const char *text, bool quoted)
{
    int rc = fq_buf_add_char(array, array->size ? ',' : '{');
    return rc | (quoted ? fq_store_array_text(array, text) : fq_buf_add_str(array, text));
}

static int s_int_element(fq_buf_t *array, int64_t value)
{
    char text[FQ_STORE_INT_TEXT];
    snprintf(text, sizeof text, "%lld", (long long)value);
    return s_element(array, text, false);
}

//  Ends an array literal ("{}" when it holds nothing).
static int s_end(fq_buf_t *array)
{
    return array->size ? fq_buf_add_char(array, '}') : fq_buf_add_str(array, "{}");
}

static int s_arrays_make(s_arrays_t *arrays, const fq_destination_spec_t *specs, size_t count,
                         const s_domain_t *domains, size_t ndomains)
{
    int rc = 0;
    for (size_t i = 0; i < count; i++) {
        rc |= s_element(&arrays->names, specs[i].name, true);
        rc |= s_int_element(&arrays->counts, specs[i].rate_count);
        rc |= s_int_element(&arrays->periods, specs[i].rate_count ? specs[i].rate_period_s : 0);
        rc |= s_int_element(&arrays->bursts, specs[i].burst);
        rc |= s_int_element(&arrays->inflights, specs[i].max_inflight);
    }
    for (size_t i = 0; i < ndomains; i++) {
        rc |= s_element(&arrays->domains, domains[i].domain, true);
        rc |= s_element(&arrays->owners, domains[i].name, true);
    }
    rc |= s_end(&arrays->names) | s_end(&arrays->counts) | s_end(&arrays->periods);
    rc |= s_end(&arrays->bursts) | s_end(&arrays->inflights);
    return rc | s_end(&arrays->domains) | s_end(&arrays->owners);
}

//  After some domains were not inserted: says which, and who owns it.
//  Returns FQ_ECONFLICT (or the code of a failed read).
static int s_conflict(fq_store_t *self, const s_arrays_t *arrays)
{
    const char *params[] = {arrays->domains.data, arrays->owners.data};
    int rc;
    PGresult *res = fq_store_query(
        self,
        "SELECT u.domain, u.destination, x.destination"
        " FROM unnest($1::text[], $2::text[]) AS u (domain, destination)"
        " JOIN fairq.destination_domains x ON x.domain = u.domain"
        " WHERE x.destination <> u.destination ORDER BY u.domain COLLATE \"C\" LIMIT 1",
        2, params, PGRES_TUPLES_OK, "find the owner of a domain", &rc);
    if (!res)
        return rc;
    if (PQntuples(res) == 1)
        rc = fq_store_fail(self, FQ_ECONFLICT,
                           "destination \"%s\": domain \"%s\" belongs to destination \"%s\" "
                           "(take it out of \"%s\" first)",
                           PQgetvalue(res, 0, 1), PQgetvalue(res, 0, 0), PQgetvalue(res, 0, 2),
                           PQgetvalue(res, 0, 2));
    else
        //  Taken, then given up again, by a write at the same moment
        rc = fq_store_fail(self, FQ_ECONFLICT,
                           "a domain was changed by another write at the same moment: try again");
    PQclear(res);
    return rc;
}

//  The writes of s_put, in the open transaction. *created (may be NULL) is
//  whether the first destination is new.
static int s_write(fq_store_t *self, const s_arrays_t *arrays, size_t ndomains, bool *created)
{
    const char *upsert[] = {arrays->names.data, arrays->counts.data, arrays->periods.data,
                            arrays->bursts.data, arrays->inflights.data};
    //  Writes of destinations take turns, so that the count below sees
    //  every other write's (a transaction's lock: right behind a pooler)
    int rc;
    PGresult *res =
        fq_store_query(self, "SELECT pg_advisory_xact_lock(hashtext('fairq.destinations'))", 0,
                       NULL, PGRES_TUPLES_OK, "wait for other writes of destinations", &rc);
    if (!res)
        return rc;
    PQclear(res);
    //  Every field replaced: what a write leaves out is none (NULL)
    res = fq_store_query(
        self,
        "INSERT INTO fairq.destinations AS d (name, rate_count, rate_period_s, burst,"
        " max_inflight)"
        " SELECT u.name, nullif(u.count, 0), nullif(u.period, 0), nullif(u.burst, 0),"
        "  nullif(u.inflight, 0)"
        " FROM unnest($1::text[], $2::int[], $3::int[], $4::int[], $5::int[])"
        "  WITH ORDINALITY AS u (name, count, period, burst, inflight, n)"
        " ORDER BY u.n"
        " ON CONFLICT (name) DO UPDATE SET rate_count = excluded.rate_count,"
        "  rate_period_s = excluded.rate_period_s, burst = excluded.burst,"
        "  max_inflight = excluded.max_inflight, updated_at = now()"
        //  xmax is 0 on a row this statement inserted, not on one it updated
        " RETURNING d.name, d.xmax = 0",
        5, upsert, PGRES_TUPLES_OK, "store destination", &rc);
    if (!res)
        return rc;
    if (created && PQntuples(res) > 0)
        *created = PQgetvalue(res, 0, 1)[0] == 't';
    PQclear(res);
    res = fq_store_query(self, "SELECT count(*) FROM fairq.destinations", 0, NULL, PGRES_TUPLES_OK,
                         "count destinations", &rc);
    if (!res)
        return rc;
    int64_t total = fq_store_int64(res, 0, 0);
    PQclear(res);
    if (total > FQ_DESTINATIONS_MAX)
        return fq_store_fail(self, FQ_EINVAL,
                             "at most %d destinations (\"default\" among them): delete one first",
                             FQ_DESTINATIONS_MAX);
    res = fq_store_query(
        self, "DELETE FROM fairq.destination_domains WHERE destination = ANY ($1::text[])", 1,
        upsert, PGRES_COMMAND_OK, "free a destination's domains", &rc);
    PQclear(res);
    if (rc || ndomains == 0)
        return rc;
    const char *insert[] = {arrays->domains.data, arrays->owners.data};
    res =
        fq_store_query(self,
                       "WITH taken AS (INSERT INTO fairq.destination_domains (domain, destination)"
                       "  SELECT * FROM unnest($1::text[], $2::text[])"
                       "  ON CONFLICT (domain) DO NOTHING RETURNING 1)"
                       " SELECT count(*) FROM taken",
                       2, insert, PGRES_TUPLES_OK, "store a destination's domains", &rc);
    if (!res)
        return rc;
    bool all = fq_store_int64(res, 0, 0) == (int64_t)ndomains;
    PQclear(res);
    return all ? 0 : s_conflict(self, arrays);
}

//  Writes count specs in one transaction.
static int s_put(fq_store_t *self, const fq_destination_spec_t *specs, size_t count, bool *created)
{
    if (count == 0)
        return 0;
    char *copy = NULL;
    s_domain_t *domains = NULL;
    size_t ndomains = 0;
    s_arrays_t arrays = {0};
    int rc = s_check_specs(self, specs, count);
    if (rc == 0)
        rc = s_collect_domains(self, specs, count, &copy, &domains, &ndomains);
    if (rc == 0 && s_arrays_make(&arrays, specs, count, domains, ndomains))
        rc = fq_store_fail(self, FQ_ENOMEM, "out of memory");
    if (rc == 0)
        rc = fq_store_exec(self, "BEGIN", "begin storing destinations");
    if (rc == 0) {
        rc = s_write(self, &arrays, ndomains, created);
        if (rc == 0)
            rc = fq_store_exec(self, "COMMIT", "commit destinations");
        if (rc)
            fq_store_rollback(self);
    }
    s_arrays_free(&arrays);
    free(domains);
    free(copy);
    return rc;
}

int fq_store_destination_put(fq_store_t *self, const fq_destination_spec_t *spec, bool *created)
{
    if (created)
        *created = false;
    return s_put(self, spec, 1, created);
}

int fq_store_destination_put_all(fq_store_t *self, const fq_destination_spec_t *specs, size_t count)
{
    return s_put(self, specs, count, NULL);
}

int fq_store_destination_delete(fq_store_t *self, const char *name)
{
    if (name && strcmp(name, FQ_DESTINATION_DEFAULT) == 0)
        return fq_store_fail(self, FQ_EINVAL,
                             "the destination \"" FQ_DESTINATION_DEFAULT "\" cannot be deleted: "
                             "it is every domain no other destination names");
    const char *params[] = {name ? name : ""};
    int rc;
    //  Its domains go with it (ON DELETE CASCADE): "default"'s from now on
    PGresult *res =
        fq_store_query(self, "DELETE FROM fairq.destinations WHERE name = $1 RETURNING name", 1,
                       params, PGRES_TUPLES_OK, "delete destination", &rc);
    if (!res)
        return rc;
    if (PQntuples(res) == 0)
        rc = fq_store_fail(self, FQ_ENOTFOUND,
                           "could not delete destination: \"%.*s\" does not exist",
                           FQ_DESTINATION_NAME_MAX, params[0]);
    PQclear(res);
    return rc;
}
