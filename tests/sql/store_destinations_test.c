/*  store_destinations_test.c — destinations as an operator reads and
    writes them (fq_store_destinations.h, migration 0016) against a real
    PostgreSQL: "default" there from the start; a destination created,
    read back whole with its domains lowercased and sorted, replaced whole;
    a domain another destination owns refused, naming both, and nothing
    of the write kept; a write of several at once that moves a domain
    between two of them; every refusal of a spec before the database
    sees it; "default" taking no domains and never deleted; a delete
    freeing its domains; the limits of fq_limits.h and fq_domain.h the
    schema's own. */
#include "fq_domain.h"
#include "fq_error.h"
#include "fq_limits.h"
#include "fq_store.h"
#include "fq_store_destinations.h"
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include "fq_test_sql.h"

static char s_conninfo[128];

static int s_group_setup(void **state)
{
    (void)state;
    const char *tenants[] = {NULL};
    return fq_test_db_prepare(s_conninfo, sizeof s_conninfo, tenants, NULL);
}

static int s_group_teardown(void **state)
{
    (void)state;
    fq_test_db_drop();
    return 0;
}

//  Each test works on names of its own, and removes them at the end.
static void s_clean(fq_store_t *store)
{
    PGconn *conn = fq_test_connect(s_conninfo);
    fq_test_exec(conn, "DELETE FROM fairq.destinations WHERE name <> 'default'", 0);
    PQfinish(conn);
    (void)store;
}

//  put, or fail with the store's message.
static bool s_put(fq_store_t *store, const fq_destination_spec_t *spec)
{
    bool created = false;
    int rc = fq_store_destination_put(store, spec, &created);
    if (rc)
        fail_msg("put %s: %s", spec->name, fq_store_error(store));
    return created;
}

//  put must fail with rc, its message holding each of the words.
static void s_refused(fq_store_t *store, const fq_destination_spec_t *spec, int rc,
                      const char *words, const char *more)
{
    int got = fq_store_destination_put(store, spec, NULL);
    if (got != rc)
        fail_msg("put %s: %s (%d), wanted %s", spec->name ? spec->name : "(null)",
                 fq_store_error(store), got, fq_err_name(rc));
    if (!strstr(fq_store_error(store), words) || (more && !strstr(fq_store_error(store), more)))
        fail_msg("put %s: \"%s\" does not say \"%s\" and \"%s\"", spec->name, fq_store_error(store),
                 words, more ? more : "");
}

static void test_default_exists_and_stays(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    fq_destination_t d;
    assert_int_equal(fq_store_destination_get(store, FQ_DESTINATION_DEFAULT, &d), 0);
    assert_string_equal(d.name, "default");
    assert_int_equal(d.rate_count, 0);
    assert_int_equal(d.max_inflight, 0);
    assert_int_equal(d.ndomains, 0);
    assert_true(d.updated_at > 0);
    fq_destination_free(&d);

    //  "default" may be given a budget, never domains nor a delete
    const char *gmail[] = {"gmail.com"};
    s_refused(store, &(fq_destination_spec_t){.name = "default", .domains = gmail, .ndomains = 1},
              FQ_EINVAL, "takes no domains", NULL);
    assert_int_equal(fq_store_destination_delete(store, "default"), FQ_EINVAL);
    assert_non_null(strstr(fq_store_error(store), "cannot be deleted"));
    assert_false(s_put(store, &(fq_destination_spec_t){.name = "default",
                                                       .rate_count = 5000,
                                                       .rate_period_s = 3600,
                                                       .max_inflight = 20}));
    assert_int_equal(fq_store_destination_get(store, "default", &d), 0);
    assert_int_equal(d.rate_count, 5000);
    assert_int_equal(d.rate_period_s, 3600);
    assert_int_equal(d.burst, 0);
    assert_int_equal(d.max_inflight, 20);
    fq_destination_free(&d);
    assert_false(s_put(store, &(fq_destination_spec_t){.name = "default"}));

    //  The schema holds too, whoever writes
    PGconn *conn = fq_test_connect(s_conninfo);
    PGresult *res = PQexec(conn, "DELETE FROM fairq.destinations WHERE name = 'default'");
    assert_int_equal(PQresultStatus(res), PGRES_FATAL_ERROR);
    PQclear(res);
    PQfinish(conn);
    fq_store_destroy(&store);
}

static void test_put_get_list_replace_delete(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    const char *google[] = {"GoogleMail.com", "gmail.com"};
    assert_true(s_put(store, &(fq_destination_spec_t){.name = "google",
                                                      .rate_count = 100,
                                                      .rate_period_s = 1,
                                                      .burst = 200,
                                                      .max_inflight = 50,
                                                      .domains = google,
                                                      .ndomains = 2}));
    const char *yahoo[] = {"yahoo.com"};
    assert_true(s_put(store, &(fq_destination_spec_t){.name = "yahoo",
                                                      .rate_count = 5,
                                                      .rate_period_s = 60,
                                                      .domains = yahoo,
                                                      .ndomains = 1}));

    fq_destination_t d;
    assert_int_equal(fq_store_destination_get(store, "google", &d), 0);
    assert_int_equal(d.rate_count, 100);
    assert_int_equal(d.rate_period_s, 1);
    assert_int_equal(d.burst, 200);
    assert_int_equal(d.max_inflight, 50);
    //  Lowercased, sorted
    assert_int_equal(d.ndomains, 2);
    assert_string_equal(d.domains[0], "gmail.com");
    assert_string_equal(d.domains[1], "googlemail.com");
    fq_destination_free(&d);
    assert_int_equal(fq_store_destination_get(store, "nosuch", &d), FQ_ENOTFOUND);
    assert_non_null(strstr(fq_store_error(store), "\"nosuch\" does not exist"));

    fq_destination_list_t list;
    assert_int_equal(fq_store_destination_list(store, &list), 3);
    assert_string_equal(list.rows[0].name, "default");
    assert_string_equal(list.rows[1].name, "google");
    assert_string_equal(list.rows[2].name, "yahoo");
    assert_int_equal(list.rows[2].ndomains, 1);
    assert_string_equal(list.rows[2].domains[0], "yahoo.com");
    assert_int_equal(list.rows[2].burst, 0);
    fq_destination_list_free(&list);
    assert_null(list.rows);

    //  Replaced whole: what the spec leaves out is none; a domain left out
    //  is free for another
    const char *only_gmail[] = {"gmail.com"};
    assert_false(s_put(
        store, &(fq_destination_spec_t){.name = "google", .domains = only_gmail, .ndomains = 1}));
    assert_int_equal(fq_store_destination_get(store, "google", &d), 0);
    assert_int_equal(d.rate_count, 0);
    assert_int_equal(d.rate_period_s, 0);
    assert_int_equal(d.burst, 0);
    assert_int_equal(d.max_inflight, 0);
    assert_int_equal(d.ndomains, 1);
    fq_destination_free(&d);
    const char *googlemail[] = {"googlemail.com"};
    assert_true(s_put(store, &(fq_destination_spec_t){
                                 .name = "googlemail", .domains = googlemail, .ndomains = 1}));

    //  A delete frees its domains (they are "default"'s again)
    assert_int_equal(fq_store_destination_delete(store, "googlemail"), 0);
    assert_int_equal(fq_store_destination_delete(store, "googlemail"), FQ_ENOTFOUND);
    PGconn *conn = fq_test_connect(s_conninfo);
    assert_int_equal(fq_test_int(conn,
                                 "SELECT count(*) FROM fairq.destination_domains"
                                 " WHERE domain = 'googlemail.com'",
                                 0),
                     0);
    PQfinish(conn);
    s_clean(store);
    fq_store_destroy(&store);
}

static void test_domain_of_another_is_a_conflict(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    const char *google[] = {"gmail.com", "googlemail.com"};
    s_put(store, &(fq_destination_spec_t){.name = "google", .domains = google, .ndomains = 2});
    //  Not moved: a conflict naming the domain and both destinations, and
    //  nothing of the write kept (not even its rate)
    const char *mine[] = {"example.org", "GMAIL.com"};
    s_refused(
        store,
        &(fq_destination_spec_t){
            .name = "mine", .rate_count = 1, .rate_period_s = 1, .domains = mine, .ndomains = 2},
        FQ_ECONFLICT, "domain \"gmail.com\" belongs to destination \"google\"",
        "destination \"mine\"");
    fq_destination_t d;
    assert_int_equal(fq_store_destination_get(store, "mine", &d), FQ_ENOTFOUND);
    PGconn *conn = fq_test_connect(s_conninfo);
    assert_int_equal(fq_test_int(conn,
                                 "SELECT count(*) FROM fairq.destination_domains WHERE domain ="
                                 " 'example.org'",
                                 0),
                     0);
    PQfinish(conn);

    //  Several at once, in one transaction: a domain moves from one to the
    //  other whatever their order
    const char *gmail[] = {"gmail.com"};
    const char *rest[] = {"googlemail.com", "google.com"};
    fq_destination_spec_t both[] = {
        {.name = "gmail", .domains = gmail, .ndomains = 1},
        {.name = "google", .domains = rest, .ndomains = 2},
    };
    assert_int_equal(fq_store_destination_put_all(store, both, 2), 0);
    assert_int_equal(fq_store_destination_get(store, "gmail", &d), 0);
    assert_int_equal(d.ndomains, 1);
    assert_string_equal(d.domains[0], "gmail.com");
    fq_destination_free(&d);
    //  All or nothing: one conflict keeps every other of the write out
    const char *yahoo[] = {"yahoo.com"};
    s_put(store, &(fq_destination_spec_t){.name = "yahoo", .domains = yahoo, .ndomains = 1});
    const char *bad[] = {"yahoo.com"};
    fq_destination_spec_t some[] = {
        {.name = "fresh", .rate_count = 3, .rate_period_s = 1},
        {.name = "taker", .domains = bad, .ndomains = 1},
    };
    assert_int_equal(fq_store_destination_put_all(store, some, 2), FQ_ECONFLICT);
    assert_int_equal(fq_store_destination_get(store, "fresh", &d), FQ_ENOTFOUND);
    //  Two of one write taking one domain, or one name twice
    fq_destination_spec_t twice[] = {
        {.name = "a", .domains = gmail, .ndomains = 1},
        {.name = "b", .domains = gmail, .ndomains = 1},
    };
    assert_int_equal(fq_store_destination_put_all(store, twice, 2), FQ_EINVAL);
    assert_non_null(strstr(fq_store_error(store), "two destinations, \"a\" and \"b\""));
    fq_destination_spec_t same[] = {{.name = "a"}, {.name = "a"}};
    assert_int_equal(fq_store_destination_put_all(store, same, 2), FQ_EINVAL);
    assert_non_null(strstr(fq_store_error(store), "\"a\" is given twice"));
    s_clean(store);
    fq_store_destroy(&store);
}

static void test_specs_refused_in_words(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    s_refused(store, &(fq_destination_spec_t){.name = "Bad Name"}, FQ_EINVAL,
              "a destination name is 1..64", NULL);
    s_refused(store, &(fq_destination_spec_t){.name = NULL}, FQ_EINVAL, "destination name", NULL);
    s_refused(store, &(fq_destination_spec_t){.name = "x", .rate_count = 5, .rate_period_s = 7},
              FQ_EINVAL, "period must be 1, 60, 3600 or 86400", NULL);
    s_refused(store,
              &(fq_destination_spec_t){.name = "x",
                                       .rate_count = (int64_t)FQ_DESTINATION_RATE_COUNT_MAX + 1,
                                       .rate_period_s = 1},
              FQ_EINVAL, "count must be within", NULL);
    s_refused(store, &(fq_destination_spec_t){.name = "x", .rate_period_s = 60}, FQ_EINVAL,
              "period without a count", NULL);
    s_refused(store, &(fq_destination_spec_t){.name = "x", .burst = 5}, FQ_EINVAL,
              "a burst needs a rate", NULL);
    s_refused(store,
              &(fq_destination_spec_t){.name = "x",
                                       .rate_count = 1,
                                       .rate_period_s = 1,
                                       .burst = FQ_DESTINATION_BURST_MAX + 1},
              FQ_EINVAL, "burst must be within 1..1000000", NULL);
    s_refused(
        store,
        &(fq_destination_spec_t){.name = "x", .max_inflight = FQ_DESTINATION_INFLIGHT_MAX + 1},
        FQ_EINVAL, "max_inflight must be within 1..1000000", NULL);
    const char *twice[] = {"a.example", "A.example"};
    s_refused(store, &(fq_destination_spec_t){.name = "x", .domains = twice, .ndomains = 2},
              FQ_EINVAL, "domain \"a.example\" is given twice", NULL);
    static const struct {
        const char *domain, *words;
    } bad[] = {
        {"", "is empty"},
        {"a..example", "empty label"},
        {".example", "empty label"},
        {"example.", "empty label"},
        {"-a.example", "starts or ends with '-'"},
        {"a-.example", "starts or ends with '-'"},
        {"user@example.org", "other than a-z 0-9 - ."},
        {"exa mple.org", "other than a-z 0-9 - ."},
        {"b\xc3\xbc"
         "cher.de",
         "xn--"},
        {"host:8080", "other than a-z 0-9 - ."},
        {"a_b.example", "other than a-z 0-9 - ."},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *domains[] = {bad[i].domain};
        s_refused(store, &(fq_destination_spec_t){.name = "x", .domains = domains, .ndomains = 1},
                  FQ_EINVAL, bad[i].words, "destination \"x\": domain");
    }
    //  Too many domains, before any is looked at
    const char **many = calloc(FQ_DESTINATION_DOMAINS_MAX + 1, sizeof *many);
    assert_non_null(many);
    for (size_t i = 0; i <= FQ_DESTINATION_DOMAINS_MAX; i++)
        many[i] = "same.example";
    s_refused(store,
              &(fq_destination_spec_t){
                  .name = "x", .domains = many, .ndomains = FQ_DESTINATION_DOMAINS_MAX + 1},
              FQ_EINVAL, "more than 1000 domains", NULL);
    free(many);
    fq_destination_t d;
    assert_int_equal(fq_store_destination_get(store, "x", &d), FQ_ENOTFOUND);
    fq_store_destroy(&store);
}

//  The C limits are the schema's: the largest value each allows is stored
//  through the store, and one more is refused by the database itself (in
//  SQL, past the store's own checks).
static void test_limits_are_the_schemas(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    char label[FQ_DOMAIN_LABEL_MAX + 1];
    memset(label, 'a', FQ_DOMAIN_LABEL_MAX);
    label[FQ_DOMAIN_LABEL_MAX] = 0;
    //  Four labels of 63 and dots make 255: three of 63 and one of 61, 253
    char longest[FQ_DOMAIN_SIZE];
    snprintf(longest, sizeof longest, "%s.%s.%s.%.61s", label, label, label, label);
    assert_int_equal(strlen(longest), FQ_DOMAIN_MAX);
    assert_null(fq_domain_problem(longest, strlen(longest)));
    char name[FQ_DESTINATION_NAME_SIZE];
    memset(name, 'n', FQ_DESTINATION_NAME_MAX);
    name[FQ_DESTINATION_NAME_MAX] = 0;
    const char *domains[] = {longest};
    s_put(store, &(fq_destination_spec_t){.name = name,
                                          .rate_count = FQ_DESTINATION_RATE_COUNT_MAX,
                                          .rate_period_s = 86400,
                                          .burst = FQ_DESTINATION_BURST_MAX,
                                          .max_inflight = FQ_DESTINATION_INFLIGHT_MAX,
                                          .domains = domains,
                                          .ndomains = 1});
    fq_destination_t d;
    assert_int_equal(fq_store_destination_get(store, name, &d), 0);
    assert_string_equal(d.name, name);
    assert_string_equal(d.domains[0], longest);
    assert_int_equal(d.rate_count, FQ_DESTINATION_RATE_COUNT_MAX);
    fq_destination_free(&d);

    PGconn *conn = fq_test_connect(s_conninfo);
    char one_more[FQ_DESTINATION_NAME_SIZE + 1], burst[32], inflight[32];
    memset(one_more, 'n', FQ_DESTINATION_NAME_MAX + 1);
    one_more[FQ_DESTINATION_NAME_MAX + 1] = 0;
    snprintf(burst, sizeof burst, "%d", FQ_DESTINATION_BURST_MAX + 1);
    snprintf(inflight, sizeof inflight, "%d", FQ_DESTINATION_INFLIGHT_MAX + 1);
    char too_long[FQ_DOMAIN_SIZE + 2];
    snprintf(too_long, sizeof too_long, "a.%s", longest);
    static const char *const refused[] = {
        "INSERT INTO fairq.destinations (name) VALUES ($1)",
        "INSERT INTO fairq.destinations (name, rate_count, rate_period_s, burst)"
        " VALUES ('b', 1, 1, $1::int)",
        "INSERT INTO fairq.destinations (name, max_inflight) VALUES ('m', $1::int)",
        "INSERT INTO fairq.destination_domains (domain, destination) VALUES ($1, 'default')",
        "INSERT INTO fairq.destination_domains (domain, destination)"
        " SELECT $1, name FROM fairq.destinations WHERE name <> 'default' LIMIT 1",
    };
    const char *values[] = {one_more, burst, inflight, "ok.example", too_long};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        PGresult *res = PQexecParams(conn, refused[i], 1, NULL, &values[i], NULL, NULL, 0);
        if (PQresultStatus(res) != PGRES_FATAL_ERROR)
            fail_msg("the schema took %s with %s", refused[i], values[i]);
        PQclear(res);
    }
    PQfinish(conn);
    s_clean(store);
    fq_store_destroy(&store);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_exists_and_stays),
        cmocka_unit_test(test_put_get_list_replace_delete),
        cmocka_unit_test(test_domain_of_another_is_a_conflict),
        cmocka_unit_test(test_specs_refused_in_words),
        cmocka_unit_test(test_limits_are_the_schemas),
    };
    return cmocka_run_group_tests(tests, s_group_setup, s_group_teardown);
}
