/*  store_suppressions_api_test.c — suppression lists as tenants and the
    operator manage them (fq_store_suppressions.h, migration 0019): one
    address added, read, removed; many imported at once, in batches, all
    or none; a page at a time in address order; counts by reason. Each
    tenant's list and the global one apart; addresses lowercased; every
    refusal in words, before the database is asked. Against a real
    PostgreSQL. */
#include "fq_error.h"
#include "fq_store.h"
#include "fq_store_suppressions.h"
#include "fq_test_db.h"
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "fq_test_sql.h"

static char s_conninfo[128];

static int s_group_setup(void **state)
{
    (void)state;
    const char *tenants[] = {"acme", "bravo", NULL};
    return fq_test_db_prepare(s_conninfo, sizeof s_conninfo, tenants, NULL);
}

static int s_group_teardown(void **state)
{
    (void)state;
    fq_test_db_drop();
    return 0;
}

//  Each test starts with empty lists.
static int s_setup(void **state)
{
    (void)state;
    PGconn *conn = fq_test_connect(s_conninfo);
    fq_test_exec(conn, "DELETE FROM fairq.suppressions", 0);
    PQfinish(conn);
    return 0;
}

//  The error of the last call holds words.
static void s_error_has(fq_store_t *store, const char *words)
{
    if (!strstr(fq_store_error(store), words))
        fail_msg("error \"%s\" lacks \"%s\"", fq_store_error(store), words);
}

//  The addresses of a whole list, in order, as one text "a b c".
static char *s_listed(fq_store_t *store, const char *tenant)
{
    fq_suppression_page_t page;
    int n = fq_store_suppressions(store, tenant, NULL, FQ_STORE_PAGE_MAX, &page);
    if (n < 0)
        fail_msg("%s", fq_store_error(store));
    fq_buf_t text = {0};
    for (size_t i = 0; i < page.count; i++) {
        if (i)
            fq_buf_add_char(&text, ' ');
        fq_buf_add_str(&text, page.rows[i].address);
    }
    fq_suppression_page_free(&page);
    fq_buf_add_str(&text, "");
    return fq_buf_take(&text);
}

static void s_assert_listed(fq_store_t *store, const char *tenant, const char *want)
{
    char *got = s_listed(store, tenant);
    assert_string_equal(got, want);
    free(got);
}

//  Add, read back, add again, remove: the entry kept lowercase, the first
//  one kept, each list apart.
static void test_add_get_remove(void **state)
{
    (void)state;
    fq_store_t *store = fq_test_store(s_conninfo);
    fq_suppression_t *entry = NULL;
    bool created = false;
    assert_int_equal(fq_store_suppression_add(store, "acme", "Bob@Example.COM",
                                              FQ_SUPPRESSION_MANUAL, "asked by phone", &entry,
                                              &created),
                     0);
    assert_true(created);
    assert_string_equal(entry->address, "bob@example.com");
    assert_string_equal(entry->reason, "manual");
    assert_string_equal(entry->detail, "asked by phone");
    assert_true(entry->created_at > 0);
    int64_t at = entry->created_at;
    free(entry);

    //  Again, in another case, with another reason and detail: the first
    //  entry stays as it was
    assert_int_equal(fq_store_suppression_add(store, "acme", "BOB@example.com", "bounce", NULL,
                                              &entry, &created),
                     0);
    assert_false(created);
    assert_string_equal(entry->address, "bob@example.com");
    assert_string_equal(entry->reason, "manual");
    assert_string_equal(entry->detail, "asked by phone");
    assert_int_equal(entry->created_at, at);
    free(entry);

    //  Read in any case
    assert_int_equal(fq_store_suppression_get(store, "acme", "bOb@eXample.com", &entry), 0);
    assert_string_equal(entry->address, "bob@example.com");
    free(entry);
    //  Another tenant's list and the global one do not hold it
    assert_int_equal(fq_store_suppression_get(store, "bravo", "bob@example.com", &entry),
                     FQ_ENOTFOUND);
    assert_null(entry);
    s_error_has(store, "\"bob@example.com\" is not on the suppression list of tenant \"bravo\"");
    assert_int_equal(fq_store_suppression_get(store, NULL, "bob@example.com", &entry),
                     FQ_ENOTFOUND);
    s_error_has(store, "is not on the global suppression list");

    //  The global list: its own entry, no detail; entry may be NULL
    assert_int_equal(
        fq_store_suppression_add(store, NULL, "Eve@Example.org", "complaint", NULL, NULL, &created),
        0);
    assert_true(created);
    assert_int_equal(fq_store_suppression_get(store, NULL, "eve@example.org", &entry), 0);
    assert_string_equal(entry->reason, "complaint");
    assert_null(entry->detail);
    free(entry);
    assert_int_equal(fq_store_suppression_get(store, "acme", "eve@example.org", &entry),
                     FQ_ENOTFOUND);
    //  The same address on two lists: two entries
    assert_int_equal(
        fq_store_suppression_add(store, "bravo", "bob@example.com", "manual", NULL, NULL, &created),
        0);
    assert_true(created);
    PGconn *conn = fq_test_connect(s_conninfo);
    assert_int_equal(fq_test_int(conn,
                                 "SELECT count(*) FROM fairq.suppressions"
                                 " WHERE address = 'bob@example.com'",
                                 0),
                     2);

    //  Removed from acme's list only
    assert_int_equal(fq_store_suppression_remove(store, "acme", "BOB@EXAMPLE.COM"), 0);
    assert_int_equal(fq_store_suppression_remove(store, "acme", "bob@example.com"), FQ_ENOTFOUND);
    s_error_has(store, "\"bob@example.com\" is not on the suppression list of tenant \"acme\"");
    assert_int_equal(fq_store_suppression_get(store, "bravo", "bob@example.com", &entry), 0);
    free(entry);
    assert_int_equal(fq_store_suppression_remove(store, NULL, "eve@example.org"), 0);
    assert_int_equal(fq_store_suppression_remove(store, NULL, "eve@example.org"), FQ_ENOTFOUND);
    assert_int_equal(fq_test_int(conn, "SELECT count(*) FROM fairq.suppressions", 0), 1);
    PQfinish(conn);
    fq_store_destroy(&store);
}

//  Every refusal, in words, before the database: bad addresses (by the
//  recipients' rule), reasons, details, tenants, limits and cursors.
static void test_refusals(void **state)
{
    (void)state;
    fq_store_t *store = fq_test_store(s_conninfo);
    bool created;
    fq_suppression_t *entry;
    const struct {
        const char *address;
        const char *words;
    } bad[] = {
        {"", "invalid address \"\": empty address"},
        {"bob", "address is not local@domain"},
        {"bob@", "address is not local@domain"},
        {"@example.com", "address is not local@domain"},
        {"bob@localhost", "address domain is not a dotted name"},
        {"bob smith@example.com", "address contains a space, control or non-ASCII character"},
        {"bob@example.com\r\nBcc: x@y.z", "address contains CR or LF"},
        {"bob\t@example.com", "control or non-ASCII"},
        {"b\xc3\xb6@example.com", "non-ASCII"},
        {"a@b@example.com", "more than one @"},
        {"bob@exa_mple.com", "address domain has an invalid character"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(
            fq_store_suppression_add(store, "acme", bad[i].address, "manual", NULL, NULL, &created),
            FQ_EINVAL);
        s_error_has(store, bad[i].words);
        assert_int_equal(fq_store_suppression_get(store, "acme", bad[i].address, &entry),
                         FQ_EINVAL);
        assert_int_equal(fq_store_suppression_remove(store, NULL, bad[i].address), FQ_EINVAL);
        s_error_has(store, bad[i].words);
    }
    char longest[FQ_RECIPIENT_ADDRESS_MAX + 2];
    memset(longest, 'a', sizeof longest - 1);
    memcpy(longest + FQ_RECIPIENT_ADDRESS_MAX - strlen("@example.com"), "@example.com",
           strlen("@example.com") + 1);
    assert_int_equal(strlen(longest), FQ_RECIPIENT_ADDRESS_MAX);
    //  320 bytes is an address; 321 is not
    assert_int_equal(
        fq_store_suppression_add(store, "acme", longest, "manual", NULL, NULL, &created), 0);
    char *too_long = NULL;
    assert_true(asprintf(&too_long, "a%s", longest) > 0);
    assert_int_equal(
        fq_store_suppression_add(store, "acme", too_long, "manual", NULL, NULL, &created),
        FQ_EINVAL);
    s_error_has(store, "address longer than 320 bytes");
    free(too_long);

    //  Reasons and details
    assert_int_equal(
        fq_store_suppression_add(store, "acme", "x@example.com", "spam", NULL, NULL, &created),
        FQ_EINVAL);
    s_error_has(store,
                "reason must be one of manual, bounce, complaint, unsubscribe, not \"spam\"");
    char detail[FQ_SUPPRESSION_DETAIL_MAX + 2];
    memset(detail, 'd', sizeof detail - 1);
    detail[sizeof detail - 1] = '\0';
    assert_int_equal(
        fq_store_suppression_add(store, "acme", "x@example.com", "manual", detail, NULL, &created),
        FQ_EINVAL);
    s_error_has(store, "detail must be at most 2000 bytes, not 2001");
    detail[FQ_SUPPRESSION_DETAIL_MAX] = '\0';
    assert_int_equal(
        fq_store_suppression_add(store, "acme", "x@example.com", "manual", detail, NULL, &created),
        0);
    const char *details[] = {"line\nbreak", "tab\there", "del\x7f", "c1 \xc2\x85", "\xff"};
    for (size_t i = 0; i < sizeof details / sizeof details[0]; i++) {
        assert_int_equal(fq_store_suppression_add(store, "acme", "y@example.com", "manual",
                                                  details[i], NULL, &created),
                         FQ_EINVAL);
        s_error_has(store, "detail");
    }
    s_error_has(store, "detail is not valid UTF-8");

    //  Tenants: one that does not exist, or cannot
    const char *tenants[] = {"nosuch", "Acme", ""};
    for (size_t i = 0; i < sizeof tenants / sizeof tenants[0]; i++) {
        assert_int_equal(fq_store_suppression_add(store, tenants[i], "x@example.com", "manual",
                                                  NULL, NULL, &created),
                         FQ_ENOTFOUND);
        s_error_has(store, "could not read tenant:");
        s_error_has(store, "does not exist");
        assert_int_equal(fq_store_suppression_get(store, tenants[i], "x@example.com", &entry),
                         FQ_ENOTFOUND);
        s_error_has(store, "does not exist");
        assert_int_equal(fq_store_suppression_remove(store, tenants[i], "x@example.com"),
                         FQ_ENOTFOUND);
        s_error_has(store, "does not exist");
        fq_suppression_page_t page;
        assert_int_equal(fq_store_suppressions(store, tenants[i], NULL, 10, &page), FQ_ENOTFOUND);
        fq_suppression_counts_t counts;
        assert_int_equal(fq_store_suppression_counts(store, tenants[i], &counts), FQ_ENOTFOUND);
        int64_t added = -1;
        const char *one[] = {"x@example.com"};
        assert_int_equal(
            fq_store_suppression_add_many(store, tenants[i], one, 1, "manual", NULL, &added),
            FQ_ENOTFOUND);
        assert_int_equal(added, 0);
    }
    s_error_has(store, "could not read tenant: \"\" does not exist");

    //  Pages: limits and cursors
    fq_suppression_page_t page;
    assert_int_equal(fq_store_suppressions(store, "acme", NULL, 0, &page), FQ_EINVAL);
    s_error_has(store, "limit 0 is not within 1..1000");
    assert_int_equal(fq_store_suppressions(store, "acme", NULL, 1001, &page), FQ_EINVAL);
    assert_int_equal(fq_store_suppressions(store, "acme", "not a cursor", 10, &page), FQ_EINVAL);
    s_error_has(store, "\"not a cursor\" is not a cursor (a cursor is the \"next\" of a page: an "
                       "address)");
    assert_null(page.rows);
    assert_int_equal(page.count, 0);

    //  Nothing of it was stored but the two good ones
    PGconn *conn = fq_test_connect(s_conninfo);
    assert_int_equal(fq_test_int(conn, "SELECT count(*) FROM fairq.suppressions", 0), 2);
    PQfinish(conn);
    fq_store_destroy(&store);
}

//  Whatever the rule takes, the schema takes: the CHECK never fires on an
//  address the store accepted, printable ASCII of every kind included.
static void test_rule_within_schema(void **state)
{
    (void)state;
    fq_store_t *store = fq_test_store(s_conninfo);
    const char *addresses[] = {"a@b.co",
                               "\"quoted\"@example.com",
                               "back\\slash@example.com",
                               "o'brien+tag{1}@Sub.Example-Mail.COM",
                               "!#$%&*/=?^_`|~@x-y.z9",
                               "NULL@example.com",
                               "a,b@example.com"};
    bool created;
    for (size_t i = 0; i < sizeof addresses / sizeof addresses[0]; i++)
        if (fq_store_suppression_add(store, "acme", addresses[i], "manual", NULL, NULL, &created))
            fail_msg("%s: %s", addresses[i], fq_store_error(store));
    //  The same through an import's array literal: all there already
    int64_t added = -1;
    assert_int_equal(fq_store_suppression_add_many(store, "bravo", addresses,
                                                   sizeof addresses / sizeof addresses[0], "manual",
                                                   NULL, &added),
                     0);
    assert_int_equal(added, sizeof addresses / sizeof addresses[0]);
    PGconn *conn = fq_test_connect(s_conninfo);
    assert_int_equal(fq_test_int(conn,
                                 "SELECT count(*) FROM fairq.suppressions a"
                                 " JOIN fairq.suppressions b ON a.address = b.address"
                                 " AND a.tenant_id <> b.tenant_id",
                                 0),
                     2 * (sizeof addresses / sizeof addresses[0]));
    assert_int_equal(fq_test_int(conn,
                                 "SELECT count(*) FROM fairq.suppressions"
                                 " WHERE address = 'o''brien+tag{1}@sub.example-mail.com'",
                                 0),
                     2);
    //  The schema's detail limit is the store's
    char *fits = fq_test_text(conn, "SELECT repeat('d', $1::int)", 1, "2000");
    fq_test_exec(conn,
                 "INSERT INTO fairq.suppressions (address, reason, detail)"
                 " VALUES ('limit@example.com', 'manual', $1)",
                 1, fits);
    free(fits);
    PGresult *res = PQexec(conn, "INSERT INTO fairq.suppressions (address, reason, detail)"
                                 " VALUES ('over@example.com', 'manual', repeat('d', 2001))");
    assert_int_equal(PQresultStatus(res), PGRES_FATAL_ERROR);
    PQclear(res);
    assert_int_equal(FQ_SUPPRESSION_DETAIL_MAX, 2000);
    PQfinish(conn);
    fq_store_destroy(&store);
}

//  An import: new, already there, twice in the import; in several
//  batches; one bad address refuses the whole of it.
static void test_import(void **state)
{
    (void)state;
    fq_store_t *store = fq_test_store(s_conninfo);
    bool created;
    assert_int_equal(fq_store_suppression_add(store, "acme", "old@example.com", "bounce",
                                              "550 5.1.1", NULL, &created),
                     0);
    const char *some[] = {"new1@example.com", "OLD@example.com", "New2@Example.com",
                          "new1@EXAMPLE.com", "new2@example.com"};
    int64_t added = -1;
    assert_int_equal(
        fq_store_suppression_add_many(store, "acme", some, 5, "manual", "imported", &added), 0);
    assert_int_equal(added, 2);
    s_assert_listed(store, "acme", "new1@example.com new2@example.com old@example.com");
    fq_suppression_t *entry;
    assert_int_equal(fq_store_suppression_get(store, "acme", "old@example.com", &entry), 0);
    assert_string_equal(entry->reason, "bounce");
    free(entry);
    assert_int_equal(fq_store_suppression_get(store, "acme", "new2@example.com", &entry), 0);
    assert_string_equal(entry->detail, "imported");
    free(entry);
    s_assert_listed(store, "bravo", "");
    s_assert_listed(store, NULL, "");

    //  Nothing: nothing added
    assert_int_equal(fq_store_suppression_add_many(store, NULL, NULL, 0, "manual", NULL, &added),
                     0);
    assert_int_equal(added, 0);

    //  More than a batch, to the global list
    size_t count = FQ_SUPPRESSION_IMPORT_BATCH * 2 + 7;
    char **many = calloc(count, sizeof *many);
    assert_non_null(many);
    for (size_t i = 0; i < count; i++)
        assert_true(asprintf(&many[i], "User%06zu@Bulk.Example", i % (count - 3)) > 0);
    assert_int_equal(fq_store_suppression_add_many(store, NULL, (const char *const *)many, count,
                                                   "unsubscribe", NULL, &added),
                     0);
    assert_int_equal(added, (int64_t)count - 3);
    fq_suppression_counts_t counts;
    assert_int_equal(fq_store_suppression_counts(store, NULL, &counts), 0);
    assert_int_equal(counts.total, (int64_t)count - 3);
    assert_int_equal(counts.by_reason[3], (int64_t)count - 3);

    //  One bad address: none of them (its batch or the ones before)
    free(many[count - 1]);
    many[count - 1] = strdup("not an address");
    for (size_t i = 0; i + 1 < count; i++)
        many[i][0] = 'V';
    assert_int_equal(fq_store_suppression_add_many(store, "bravo", (const char *const *)many, count,
                                                   "manual", NULL, &added),
                     FQ_EINVAL);
    assert_int_equal(added, 0);
    s_error_has(store, "invalid address \"not an address\"");
    s_assert_listed(store, "bravo", "");
    //  A bad reason or detail: refused before any
    assert_int_equal(fq_store_suppression_add_many(store, "bravo", some, 1, "nope", NULL, &added),
                     FQ_EINVAL);
    assert_int_equal(
        fq_store_suppression_add_many(store, "bravo", some, 1, "manual", "a\nb", &added),
        FQ_EINVAL);
    s_assert_listed(store, "bravo", "");
    for (size_t i = 0; i < count; i++)
        free(many[i]);
    free(many);
    //  The store works on after a failed import (its transaction ended)
    assert_int_equal(fq_store_suppression_add_many(store, "bravo", some, 1, "manual", NULL, &added),
                     0);
    assert_int_equal(added, 1);
    fq_store_destroy(&store);
}

//  Pages in address order, each starting after the last address of the
//  one before; the cursor in any case; an empty list; counts by reason.
static void test_pages_and_counts(void **state)
{
    (void)state;
    fq_store_t *store = fq_test_store(s_conninfo);
    const char *addresses[] = {"e@example.com", "a@example.com", "d@example.com", "c@example.com",
                               "b@example.com"};
    int64_t added;
    assert_int_equal(
        fq_store_suppression_add_many(store, "acme", addresses, 5, "manual", NULL, &added), 0);
    PGconn *conn = fq_test_connect(s_conninfo);
    fq_test_exec(conn,
                 "INSERT INTO fairq.suppressions (tenant_id, address, reason, detail)"
                 " SELECT id, 'f@example.com', 'bounce', '550 5.1.1 gone' FROM fairq.tenants"
                 " WHERE name = 'acme'",
                 0);
    PQfinish(conn);

    fq_suppression_page_t page;
    assert_int_equal(fq_store_suppressions(store, "acme", NULL, 2, &page), 2);
    assert_string_equal(page.rows[0].address, "a@example.com");
    assert_string_equal(page.rows[1].address, "b@example.com");
    fq_suppression_page_free(&page);
    assert_int_equal(fq_store_suppressions(store, "acme", "B@Example.com", 2, &page), 2);
    assert_string_equal(page.rows[0].address, "c@example.com");
    assert_string_equal(page.rows[1].address, "d@example.com");
    fq_suppression_page_free(&page);
    assert_int_equal(fq_store_suppressions(store, "acme", "d@example.com", 2, &page), 2);
    assert_string_equal(page.rows[1].address, "f@example.com");
    assert_string_equal(page.rows[1].reason, "bounce");
    assert_string_equal(page.rows[1].detail, "550 5.1.1 gone");
    assert_true(page.rows[1].created_at > 0);
    fq_suppression_page_free(&page);
    assert_int_equal(fq_store_suppressions(store, "acme", "f@example.com", 2, &page), 0);
    assert_null(page.rows);
    //  A cursor need not be on the list; "" is the start
    assert_int_equal(fq_store_suppressions(store, "acme", "bb@example.com", 1000, &page), 4);
    fq_suppression_page_free(&page);
    assert_int_equal(fq_store_suppressions(store, "acme", "", 1000, &page), 6);
    fq_suppression_page_free(&page);
    assert_int_equal(fq_store_suppressions(store, "bravo", NULL, 1000, &page), 0);
    assert_int_equal(fq_store_suppressions(store, NULL, NULL, 1000, &page), 0);

    fq_suppression_counts_t counts;
    assert_int_equal(fq_store_suppression_counts(store, "acme", &counts), 0);
    assert_int_equal(counts.total, 6);
    assert_int_equal(counts.by_reason[0], 5);
    assert_int_equal(counts.by_reason[1], 1);
    assert_int_equal(counts.by_reason[2], 0);
    assert_int_equal(counts.by_reason[3], 0);
    assert_string_equal(fq_suppression_reasons[1], "bounce");
    assert_int_equal(fq_store_suppression_counts(store, "bravo", &counts), 0);
    assert_int_equal(counts.total, 0);
    assert_int_equal(fq_store_suppression_counts(store, NULL, &counts), 0);
    assert_int_equal(counts.total, 0);
    fq_store_destroy(&store);
}

//  An address the store added is refused at split, in any case; removed,
//  it is sent again.
static void test_added_is_refused_at_split(void **state)
{
    (void)state;
    fq_store_t *store = fq_test_store(s_conninfo);
    bool created;
    assert_int_equal(
        fq_store_suppression_add(store, "acme", "Gone@Example.com", "manual", NULL, NULL, &created),
        0);
    fq_submit_t req = {.tenant = "acme",
                       .from = "news@acme.example",
                       .subject = "Hi",
                       .body = "Hello",
                       .recipients_json = "[{\"to\": \"GONE@example.COM\"}, {\"to\": "
                                          "\"here@example.com\"}]"};
    int64_t id = fq_test_submit_split(store, &req, NULL, 0);
    char id_text[32];
    PGconn *conn = fq_test_connect(s_conninfo);
    fq_test_param(id_text, sizeof id_text, id);
    assert_int_equal(fq_test_int(conn,
                                 "SELECT count(*) FROM fairq.rejects WHERE request_id = $1"
                                 " AND reason = 'suppressed' AND recipient = 'GONE@example.COM'",
                                 1, id_text),
                     1);
    assert_int_equal(
        fq_test_int(conn, "SELECT count(*) FROM fairq.messages WHERE request_id = $1", 1, id_text),
        1);
    assert_int_equal(fq_store_suppression_remove(store, "acme", "gone@example.com"), 0);
    id = fq_test_submit_split(store, &req, NULL, 0);
    fq_test_param(id_text, sizeof id_text, id);
    assert_int_equal(
        fq_test_int(conn, "SELECT count(*) FROM fairq.messages WHERE request_id = $1", 1, id_text),
        2);
    PQfinish(conn);
    fq_store_destroy(&store);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_add_get_remove, s_setup),
        cmocka_unit_test_setup(test_refusals, s_setup),
        cmocka_unit_test_setup(test_rule_within_schema, s_setup),
        cmocka_unit_test_setup(test_import, s_setup),
        cmocka_unit_test_setup(test_pages_and_counts, s_setup),
        cmocka_unit_test_setup(test_added_is_refused_at_split, s_setup),
    };
    return cmocka_run_group_tests(tests, s_group_setup, s_group_teardown);
}
