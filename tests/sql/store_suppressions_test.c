/*  store_suppressions_test.c — suppression lists as the pipeline uses
    them (migration 0019, fq_store.h): a suppressed recipient is refused at
    split with the reason "suppressed" and a message.suppressed event; a
    hard bounce (a permanent failure whose reply fq_store_bounce_pattern
    names) suppresses its address for the tenant, and only that tenant.
    Against a real PostgreSQL. */
#include "fq_error.h"
#include "fq_store.h"
#include "fq_test_db.h"
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
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

static fq_store_t *s_store(void)
{
    char error[256];
    fq_store_t *store = fq_store_new(s_conninfo, error, sizeof error);
    if (!store)
        fail_msg("%s", error);
    return store;
}

//  Submits recipients (a JSON array) for tenant and splits them all.
static int64_t s_submit_split(fq_store_t *store, const char *tenant, const char *recipients,
                              fq_split_result_t *split)
{
    fq_submit_t req = {.tenant = tenant,
                       .from = "news@shop.example",
                       .subject = "Hi",
                       .body = "Hello",
                       .recipients_json = recipients};
    int64_t id;
    if (fq_store_submit(store, &req, &id))
        fail_msg("%s", fq_store_error(store));
    int rc = fq_store_split_chunk(store, id, NULL, 0, 0, split);
    if (rc != 1)
        fail_msg("split: %d %s", rc, fq_store_error(store));
    return id;
}

//  The patterns operators' codes make, and the codes refused.
static void test_bounce_pattern(void **state)
{
    (void)state;
    char pattern[FQ_STORE_BOUNCE_PATTERN_SIZE], problem[256];
    assert_int_equal(fq_store_bounce_pattern("", pattern, problem, sizeof problem), 0);
    assert_string_equal(pattern, "");
    assert_int_equal(fq_store_bounce_pattern("5.1.1, 5.1.10,550", pattern, problem, sizeof problem),
                     0);
    PGconn *conn = fq_test_connect(s_conninfo);
    struct {
        const char *reply;
        int bounces;
    } cases[] = {
        {"550 5.1.1 <bob@example.com>: no such user", 1},
        {"550-5.1.1 The email account that you tried to reach does not exist", 1},
        {"550 5.1.10 RESOLVER.ADR.RecipientNotFound", 1},
        {"554 5.1.12 unknown", 0},           //  5.1.12 is not 5.1.1, and 554 is not listed
        {"550 5.7.1 rejected by policy", 1}, //  550 first: listed as a basic code
        {"552 5.2.2 mailbox full", 0},
        {"421 4.7.0 try later", 0},
        {"5505.1.1", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t matches =
            fq_test_int(conn, "SELECT ($1::text ~ $2::text)::int", 2, cases[i].reply, pattern);
        if (matches != cases[i].bounces)
            fail_msg("\"%s\" ~ %s: %lld", cases[i].reply, pattern, (long long)matches);
    }
    PQfinish(conn);
    const char *bad[] = {"5.1", "6.1.1", "5.1.1.1", "55", "5500", "5.1.x", "bounce", "5.1.1;drop"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        problem[0] = 0;
        assert_int_equal(fq_store_bounce_pattern(bad[i], pattern, problem, sizeof problem),
                         FQ_EINVAL);
        assert_non_null(strstr(problem, "is not a reply code"));
    }
}

//  The tenant's list and the global one refuse at split, whatever the
//  address's case; another tenant's list does not.
static void test_suppressed_at_split(void **state)
{
    (void)state;
    fq_store_t *store = s_store();
    int64_t shop, other;
    assert_int_equal(fq_store_tenant_put(store, &(fq_tenant_spec_t){.name = "shop"}, &shop), 0);
    assert_int_equal(fq_store_tenant_put(store, &(fq_tenant_spec_t){.name = "other"}, &other), 0);
    PGconn *conn = fq_test_connect(s_conninfo);
    char shop_id[24];
    snprintf(shop_id, sizeof shop_id, "%lld", (long long)shop);
    fq_test_exec(conn,
                 "INSERT INTO fairq.suppressions (tenant_id, address, reason) VALUES"
                 " ($1, 'bob@example.com', 'manual'), (NULL, 'eve@example.com', 'complaint')",
                 1, shop_id);
    fq_split_result_t split;
    int64_t id = s_submit_split(store, "shop",
                                "[{\"to\":\"Bob@Example.com\"},{\"to\":\"ann@example.com\"},"
                                "{\"to\":\"eve@example.com\"},{\"to\":\"bad\"}]",
                                &split);
    assert_int_equal(split.split, 1);
    assert_int_equal(split.rejected, 3);
    char rid[24];
    snprintf(rid, sizeof rid, "%lld", (long long)id);
    assert_int_equal(fq_test_int(conn,
                                 "SELECT count(*) FROM fairq.rejects WHERE request_id = $1"
                                 " AND reason = 'suppressed'",
                                 1, rid),
                     2);
    assert_int_equal(fq_test_int(conn,
                                 "SELECT count(*) FROM fairq.events WHERE request_id = $1"
                                 " AND type = 'message.suppressed'",
                                 1, rid),
                     2);
    assert_int_equal(fq_test_int(conn,
                                 "SELECT count(*) FROM fairq.events WHERE request_id = $1"
                                 " AND type = 'message.rejected' AND recipient = 'bad'",
                                 1, rid),
                     1);
    //  Another tenant: only the global list holds for it
    id = s_submit_split(store, "other",
                        "[{\"to\":\"bob@example.com\"},{\"to\":\"eve@example.com\"}]", &split);
    assert_int_equal(split.split, 1);
    assert_int_equal(split.rejected, 1);
    PQfinish(conn);
    fq_store_destroy(&store);
}

//  A permanent failure the pattern names suppresses the address for its
//  tenant, once; a temporary one, or one the pattern does not name, or
//  a pattern of "", does not.
static void test_hard_bounce_suppresses(void **state)
{
    (void)state;
    fq_store_t *store = s_store();
    int64_t tenant;
    assert_int_equal(fq_store_tenant_put(store, &(fq_tenant_spec_t){.name = "bouncy"}, &tenant), 0);
    fq_split_result_t split;
    int64_t id = s_submit_split(store, "bouncy",
                                "[{\"to\":\"Gone@Example.com\"},{\"to\":\"full@example.com\"},"
                                "{\"to\":\"later@example.com\"},{\"to\":\"policy@example.com\"}]",
                                &split);
    assert_int_equal(split.split, 4);
    int64_t ids[4];
    assert_int_equal(fq_store_next_ready(store, id, 0, 4, ids), 4);
    char pattern[FQ_STORE_BOUNCE_PATTERN_SIZE];
    assert_int_equal(fq_store_bounce_pattern("5.1.1", pattern, NULL, 0), 0);
    fq_nack_t nacks[] = {
        {.id = ids[0], .permanent = true, .error = "550 5.1.1 no such user"},
        {.id = ids[1], .permanent = true, .error = "552 5.2.2 mailbox full"},
        {.id = ids[2], .permanent = false, .error = "450 5.1.1 odd but temporary"},
    };
    fq_retry_policy_t policy = {.base_ms = 1000, .cap_ms = 1000, .bounce_pattern = pattern};
    assert_int_equal(fq_store_nack_batch(store, nacks, 3, &policy), 3);
    //  Without a pattern, nothing is suppressed
    fq_nack_t policy_nack = {.id = ids[3], .permanent = true, .error = "550 5.1.1 no such user"};
    fq_retry_policy_t none = {.base_ms = 1000, .cap_ms = 1000};
    assert_int_equal(fq_store_nack_batch(store, &policy_nack, 1, &none), 1);
    PGconn *conn = fq_test_connect(s_conninfo);
    char tid[24];
    snprintf(tid, sizeof tid, "%lld", (long long)tenant);
    PGresult *res = fq_test_query(conn,
                                  "SELECT address, reason, detail FROM fairq.suppressions"
                                  " WHERE tenant_id = $1 ORDER BY address",
                                  1, tid);
    assert_int_equal(PQntuples(res), 1);
    assert_string_equal(PQgetvalue(res, 0, 0), "gone@example.com");
    assert_string_equal(PQgetvalue(res, 0, 1), "bounce");
    assert_string_equal(PQgetvalue(res, 0, 2), "550 5.1.1 no such user");
    PQclear(res);
    //  The next campaign to it is refused at split
    id = s_submit_split(store, "bouncy", "[{\"to\":\"gone@example.com\"}]", &split);
    assert_int_equal(split.split, 0);
    assert_int_equal(split.rejected, 1);
    //  Dead events carry the reply
    assert_int_equal(fq_test_int(conn,
                                 "SELECT count(*) FROM fairq.events WHERE type = 'message.dead'"
                                 " AND detail LIKE '%5.1.1%' AND tenant_id = $1",
                                 1, tid),
                     2);
    PQfinish(conn);
    fq_store_destroy(&store);
}

//  A recipient the server cannot read as text (the escape \u0000, or half
//  a surrogate pair) is rejected alone while a suppression list has
//  entries; its chunk's other recipients are split and checked as ever,
//  one with a whole pair too.
static void test_an_unreadable_recipient_does_not_stop_its_chunk(void **state)
{
    (void)state;
    fq_store_t *store = s_store();
    assert_int_equal(fq_store_tenant_put(store, &(fq_tenant_spec_t){.name = "nul"}, NULL), 0);
    PGconn *conn = fq_test_connect(s_conninfo);
    fq_test_exec(conn,
                 "INSERT INTO fairq.suppressions (tenant_id, address, reason)"
                 " VALUES (NULL, 'gone@example.com', 'manual') ON CONFLICT DO NOTHING",
                 0);
    fq_split_result_t split;
    int64_t id =
        s_submit_split(store, "nul",
                       "[{\"to\":\"a@example.com\",\"fields\":{\"n\":\"x\\u0000\"}},"
                       "{\"to\":\"gone@example.com\"},"
                       "{\"to\":\"c@example.com\",\"fields\":{\"n\":\"\\ud800\"}},"
                       "{\"to\":\"Gone@example.com\",\"fields\":{\"n\":\"\\ud83d\\ude00\"}},"
                       "{\"to\":\"b@example.com\",\"fields\":{\"n\":\"\\\\u0000\"}}]",
                       &split);
    assert_int_equal(split.split, 1);
    assert_int_equal(split.rejected, 4);
    assert_int_equal(split.suppressed, 2);
    char text[24];
    snprintf(text, sizeof text, "%lld", (long long)id);
    char *reasons = fq_test_text(conn,
                                 "SELECT string_agg(position || ' ' || left(reason, 27), ','"
                                 " ORDER BY position) FROM fairq.rejects WHERE request_id = $1",
                                 1, text);
    assert_string_equal(reasons, "0 recipient could not be read,1 suppressed,"
                                 "2 recipient could not be read,3 suppressed");
    free(reasons);
    //  The one with a backslash before "u0000" is plain text, and sent
    char *sent = fq_test_text(conn, "SELECT fields->>'n' FROM fairq.messages WHERE request_id = $1",
                              1, text);
    assert_string_equal(sent, "\\u0000");
    free(sent);
    PQfinish(conn);
    fq_store_destroy(&store);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bounce_pattern),
        cmocka_unit_test(test_suppressed_at_split),
        cmocka_unit_test(test_hard_bounce_suppresses),
        cmocka_unit_test(test_an_unreadable_recipient_does_not_stop_its_chunk),
    };
    return cmocka_run_group_tests(tests, s_group_setup, s_group_teardown);
}
