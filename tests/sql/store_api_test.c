/*  store_api_test.c — what the HTTP API reads and its tokens, against a
    real PostgreSQL: tokens kept only as hashes and told apart by owner,
    a request's counters, lists by tenant and status in pages, the
    recipients refused, idempotency keys outliving a short retention, and
    a request's extra headers and reply_to. */
#include "fq_store.h"
#include "fq_error.h"
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "fq_test_sql.h"

static char s_conninfo[128];

//  Room for an id written as a query parameter.
#define S_ID_TEXT 24

//  The limits of a request's headers, FQ_MAIL_HEADERS_MAX and
//  FQ_MAIL_HEADERS_BYTES_MAX of mailheaders/fq_mail_headers.h (the store
//  and its tests link no mailheaders/): fairq.submit_keyed must hold the
//  same, and this test fails if it holds fewer or more.
#define S_HEADERS_MAX       32
#define S_HEADERS_BYTES_MAX (8 * 1024)

//  Headers that fill S_HEADERS_BYTES_MAX, each within a line: names
//  "X-Hnn" of S_HEADER_NAME_LEN bytes.
#define S_BIG_HEADERS     10
#define S_HEADER_NAME_LEN 5

//  Room for the JSON of S_HEADERS_BYTES_MAX bytes of headers and more.
#define S_HEADERS_JSON_SIZE (2 * S_HEADERS_BYTES_MAX)

static int s_group_setup(void **state)
{
    (void)state;
    return fq_test_db_create_named("api", true, s_conninfo, sizeof s_conninfo);
}

static int s_group_teardown(void **state)
{
    (void)state;
    fq_test_db_drop_named("api");
    return 0;
}

static int64_t s_submit(fq_store_t *store, const char *tenant, const char *recipients,
                        const char *key)
{
    fq_submit_t req = {.tenant = tenant,
                       .from = "news@acme.example",
                       .subject = "Hi",
                       .body = "Hello",
                       .recipients_json = recipients,
                       .idempotency_key = key};
    int64_t id = 0;
    //  1: the request the key named already
    if (fq_store_submit(store, &req, &id) < 0)
        fail_msg("submit: %s", fq_store_error(store));
    return id;
}

static void test_tokens_are_hashed_and_owned(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    assert_int_equal(
        fq_store_tenant_put(store, &(fq_tenant_spec_t){.name = "tok-a", .submit_rate = 7}, NULL),
        0);
    char admin[FQ_STORE_TOKEN_SIZE], tenant[FQ_STORE_TOKEN_SIZE];
    assert_int_equal(fq_store_token_create(store, NULL, admin, sizeof admin, NULL), 0);
    int64_t tenant_token_id = 0;
    assert_int_equal(fq_store_token_create(store, "tok-a", tenant, sizeof tenant, &tenant_token_id),
                     0);
    assert_true(tenant_token_id > 0);
    assert_int_equal(strlen(admin), FQ_STORE_TOKEN_SIZE - 1);
    assert_memory_equal(admin, "fq_", 3);
    assert_string_not_equal(admin, tenant);

    fq_token_owner_t owner;
    assert_int_equal(fq_store_token_lookup(store, admin, &owner), 0);
    assert_true(owner.admin);
    assert_int_equal(owner.tenant_id, 0);
    assert_int_equal(fq_store_token_lookup(store, tenant, &owner), 0);
    assert_false(owner.admin);
    assert_string_equal(owner.tenant, "tok-a");
    assert_int_equal(owner.submit_rate, 7);

    //  The token itself is nowhere in the database, only its hash
    PGconn *conn = fq_test_connect(s_conninfo);
    assert_int_equal(fq_test_int(conn,
                                 "SELECT count(*) FROM fairq.api_tokens"
                                 " WHERE hash = sha256(convert_to($1, 'UTF8'))",
                                 1, tenant),
                     1);
    assert_int_equal(fq_test_int(conn,
                                 "SELECT count(*) FROM fairq.api_tokens"
                                 " WHERE position(convert_to($1, 'UTF8') IN hash) > 0",
                                 1, tenant),
                     0);
    PQfinish(conn);

    //  Near misses, junk and an unknown tenant
    char wrong[FQ_STORE_TOKEN_SIZE];
    memcpy(wrong, tenant, sizeof wrong);
    wrong[10] = wrong[10] == 'A' ? 'B' : 'A';
    assert_int_equal(fq_store_token_lookup(store, wrong, &owner), FQ_ENOTFOUND);
    assert_int_equal(fq_store_token_lookup(store, "", &owner), FQ_ENOTFOUND);
    assert_int_equal(fq_store_token_lookup(store, "fq_' OR 1=1 --", &owner), FQ_ENOTFOUND);
    assert_int_equal(fq_store_token_create(store, "nobody", wrong, sizeof wrong, NULL),
                     FQ_ENOTFOUND);
    assert_int_equal(fq_store_token_create(store, NULL, wrong, 8, NULL), FQ_EINVAL);

    //  Listed by id, never shown; revoked by id, by its own tenant only
    fq_token_list_t list;
    assert_int_equal(fq_store_token_list(store, "tok-a", &list), 1);
    assert_int_equal(list.rows[0].id, tenant_token_id);
    assert_true(list.rows[0].created_at > 0);
    fq_token_list_free(&list);
    assert_int_equal(fq_store_token_list(store, NULL, &list), 1);
    fq_token_list_free(&list);
    assert_int_equal(fq_store_token_revoke(store, NULL, tenant_token_id), FQ_ENOTFOUND);
    assert_int_equal(fq_store_token_revoke(store, "tok-a", tenant_token_id + 1000), FQ_ENOTFOUND);
    assert_int_equal(fq_store_token_lookup(store, tenant, &owner), 0);
    assert_int_equal(fq_store_token_revoke(store, "tok-a", tenant_token_id), 0);
    assert_int_equal(fq_store_token_lookup(store, tenant, &owner), FQ_ENOTFOUND);
    assert_int_equal(fq_store_token_revoke(store, "tok-a", tenant_token_id), FQ_ENOTFOUND);
    assert_int_equal(fq_store_token_lookup(store, admin, &owner), 0);
    fq_store_destroy(&store);
}

static void test_request_counters_and_rejects(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    assert_int_equal(fq_store_tenant_put(store, &(fq_tenant_spec_t){.name = "req-a"}, NULL), 0);
    int64_t id = s_submit(store, "req-a",
                          "[{\"to\":\"a@x.example\"},{\"to\":\"bad\\r\\nb@x.example\"},"
                          "{\"fields\":{}},{\"to\":\"c@x.example\"}]",
                          NULL);
    fq_request_info_t info;
    assert_int_equal(fq_store_request_get(store, id, &info), 0);
    assert_string_equal(info.status, "accepted");
    assert_string_equal(info.tenant, "req-a");
    assert_int_equal(info.total, 4);
    assert_int_equal(info.pending, 4);
    assert_true(info.created_at > 0 && info.send_at >= info.created_at);
    assert_int_equal(info.finished_at, 0);
    assert_string_equal(info.headers, "{}");
    assert_null(info.reply_to);
    fq_request_info_free(&info);

    fq_split_result_t split;
    assert_int_equal(fq_store_split_chunk(store, id, NULL, 0, 0, &split), 1);
    int64_t ids[4];
    assert_int_equal(fq_store_next_ready(store, id, 0, 4, ids), 2);
    assert_int_equal(fq_store_ack_batch(store, ids, 1), 1);
    assert_int_equal(fq_store_request_get(store, id, &info), 0);
    assert_int_equal(info.sent, 1);
    assert_int_equal(info.rejected, 2);
    assert_int_equal(info.pending, 1);
    assert_int_equal(info.pending + info.failed + info.sent + info.dead + info.cancelled +
                         info.rejected,
                     info.total);
    fq_request_info_free(&info);

    fq_reject_page_t page;
    assert_int_equal(fq_store_rejects(store, id, -1, 10, &page), 2);
    assert_int_equal(page.rows[0].position, 1);
    assert_string_equal(page.rows[0].recipient, "bad\r\nb@x.example");
    assert_non_null(page.rows[0].reason);
    assert_int_equal(page.rows[1].position, 2);
    assert_null(page.rows[1].recipient);
    fq_reject_page_free(&page);
    assert_int_equal(fq_store_rejects(store, id, 1, 10, &page), 1);
    assert_int_equal(page.rows[0].position, 2);
    fq_reject_page_free(&page);
    assert_int_equal(fq_store_rejects(store, id, -1, 0, &page), FQ_EINVAL);

    assert_int_equal(fq_store_request_get(store, id + 1000, &info), FQ_ENOTFOUND);
    fq_store_destroy(&store);
}

static void test_list_pages_newest_first(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    int64_t tenant_a, tenant_b;
    assert_int_equal(fq_store_tenant_put(store, &(fq_tenant_spec_t){.name = "list-a"}, &tenant_a),
                     0);
    assert_int_equal(fq_store_tenant_put(store, &(fq_tenant_spec_t){.name = "list-b"}, &tenant_b),
                     0);
    int64_t a[5];
    for (int i = 0; i < 5; i++) {
        a[i] = s_submit(store, "list-a", "[{\"to\":\"a@x.example\"}]", NULL);
        s_submit(store, "list-b", "[{\"to\":\"b@x.example\"}]", NULL);
    }
    assert_int_equal(fq_store_request_pause(store, a[1]), 1);

    fq_request_list_t list;
    assert_int_equal(fq_store_request_list(store, tenant_a, NULL, 0, 3, &list), 3);
    assert_int_equal(list.rows[0].id, a[4]);
    assert_int_equal(list.rows[2].id, a[2]);
    int64_t before = list.rows[2].id;
    fq_request_list_free(&list);
    assert_int_equal(fq_store_request_list(store, tenant_a, NULL, before, 3, &list), 2);
    assert_int_equal(list.rows[0].id, a[1]);
    assert_int_equal(list.rows[1].id, a[0]);
    fq_request_list_free(&list);

    assert_int_equal(fq_store_request_list(store, tenant_a, "paused", 0, 10, &list), 1);
    assert_int_equal(list.rows[0].id, a[1]);
    fq_request_list_free(&list);
    assert_int_equal(fq_store_request_list(store, tenant_b, "paused", 0, 10, &list), 0);
    fq_request_list_free(&list);

    assert_int_equal(fq_store_request_list(store, 0, "bogus", 0, 10, &list), FQ_EINVAL);
    assert_int_equal(fq_store_request_list(store, 0, NULL, 0, 0, &list), FQ_EINVAL);
    assert_int_equal(fq_store_request_list(store, 0, NULL, 0, FQ_STORE_PAGE_MAX + 1, &list),
                     FQ_EINVAL);

    int64_t found;
    char name[FQ_TENANT_NAME_SIZE];
    assert_int_equal(fq_store_tenant_id(store, "list-b", &found), 0);
    assert_int_equal(found, tenant_b);
    assert_int_equal(fq_store_tenant_name(store, tenant_b, name), 0);
    assert_string_equal(name, "list-b");
    assert_int_equal(fq_store_tenant_id(store, "list-zz", &found), FQ_ENOTFOUND);
    assert_int_equal(fq_store_tenant_name(store, 999999, name), FQ_ENOTFOUND);
    fq_store_destroy(&store);
}

//  With retention 0, a finished request is pruned at once, unless it was
//  submitted with an idempotency key less than a day ago: the key must
//  answer the same request for a day (api/API.md).
static void test_idempotency_key_outlives_retention(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    assert_int_equal(fq_store_tenant_put(store, &(fq_tenant_spec_t){.name = "idem"}, NULL), 0);
    int64_t keyed = s_submit(store, "idem", "[{\"to\":\"a@x.example\"}]", "campaign-42");
    int64_t plain = s_submit(store, "idem", "[{\"to\":\"a@x.example\"}]", NULL);
    assert_true(fq_store_request_cancel(store, keyed) >= 0);
    assert_true(fq_store_request_cancel(store, plain) >= 0);
    PGconn *conn = fq_test_connect(s_conninfo);
    fq_test_exec(conn, "UPDATE fairq.requests SET finished_at = now() - interval '1 hour'", 0);
    fq_prune_result_t result;
    do
        assert_int_equal(fq_store_prune(store, 0, 1000, &result), 0);
    while (result.more);
    fq_request_info_t info;
    assert_int_equal(fq_store_request_get(store, plain, &info), FQ_ENOTFOUND);
    assert_int_equal(fq_store_request_get(store, keyed, &info), 0);
    fq_request_info_free(&info);
    assert_int_equal(s_submit(store, "idem", "[{\"to\":\"a@x.example\"}]", "campaign-42"), keyed);

    //  A day later the key has done its job
    fq_test_exec(conn, "UPDATE fairq.requests SET created_at = now() - interval '25 hours'", 0);
    do
        assert_int_equal(fq_store_prune(store, 0, 1000, &result), 0);
    while (result.more);
    assert_int_equal(fq_store_request_get(store, keyed, &info), FQ_ENOTFOUND);
    PQfinish(conn);
    fq_store_destroy(&store);
}

//  A request's extra headers and reply_to (migration 0013): kept with it,
//  read back by the API as a JSON object, loaded for the dispatcher as
//  names and values sorted by name with Reply-To last; part of the
//  fingerprint only when given, so a key used before headers existed still
//  answers its request. fairq.submit_keyed checks their shape and the
//  address in SQL too; a row stored before the migration (NULL) reads as
//  none.
static void test_request_headers(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    assert_int_equal(fq_store_tenant_put(store, &(fq_tenant_spec_t){.name = "hdr"}, NULL), 0);
    fq_submit_t req = {.tenant = "hdr",
                       .from = "news@acme.example",
                       .subject = "Hi",
                       .body = "Hello",
                       .recipients_json = "[{\"to\":\"a@x.example\"}]",
                       .idempotency_key = "with-headers",
                       .headers_json = "{\"List-Id\":\"<news.example.org>\",\"X-Campaign\":"
                                       "\"spring\"}",
                       .reply_to = "help@acme.example"};
    int64_t id = 0;
    assert_int_equal(fq_store_submit(store, &req, &id), 0);

    fq_request_info_t info;
    assert_int_equal(fq_store_request_get(store, id, &info), 0);
    assert_string_equal(info.headers,
                        "{\"List-Id\": \"<news.example.org>\", \"X-Campaign\": \"spring\"}");
    assert_string_equal(info.reply_to, "help@acme.example");
    fq_request_info_free(&info);
    fq_request_info_free(&info); //  Safe twice
    fq_request_list_t list;
    int64_t tenant;
    assert_int_equal(fq_store_tenant_id(store, "hdr", &tenant), 0);
    assert_int_equal(fq_store_request_list(store, tenant, NULL, 0, 10, &list), 1);
    assert_string_equal(list.rows[0].reply_to, "help@acme.example");
    fq_request_list_free(&list);

    fq_request_templates_t loaded;
    assert_int_equal(fq_store_request_templates(store, id, &loaded), 0);
    assert_int_equal(loaded.nheaders, 3);
    assert_string_equal(loaded.header_names[0], "List-Id");
    assert_string_equal(loaded.header_values[0], "<news.example.org>");
    assert_string_equal(loaded.header_names[1], "X-Campaign");
    assert_string_equal(loaded.header_values[1], "spring");
    assert_string_equal(loaded.header_names[2], "Reply-To");
    assert_string_equal(loaded.header_values[2], "help@acme.example");
    fq_request_templates_free(&loaded);
    fq_request_templates_free(&loaded);

    //  The same key: the same headers replay it, other headers or another
    //  reply_to (or none) are another request
    int64_t again = 0;
    assert_int_equal(fq_store_submit(store, &req, &again), 1);
    assert_int_equal(again, id);
    fq_submit_t other = req;
    other.headers_json = "{\"X-Campaign\":\"autumn\"}";
    assert_int_equal(fq_store_request_by_key(store, &other, &again), FQ_ECONFLICT);
    assert_int_equal(fq_store_submit(store, &other, &again), FQ_ECONFLICT);
    other = req;
    other.reply_to = "other@acme.example";
    assert_int_equal(fq_store_request_by_key(store, &other, &again), FQ_ECONFLICT);
    other = req;
    other.headers_json = other.reply_to = NULL;
    assert_int_equal(fq_store_request_by_key(store, &other, &again), FQ_ECONFLICT);

    //  Without headers, the fingerprint is what it was before them: a key
    //  of a request without any still finds it
    fq_submit_t plain = req;
    plain.idempotency_key = "without-headers";
    plain.headers_json = plain.reply_to = NULL;
    int64_t plain_id = 0;
    assert_int_equal(fq_store_submit(store, &plain, &plain_id), 0);
    assert_int_equal(fq_store_request_by_key(store, &plain, &again), 0);
    assert_int_equal(again, plain_id);
    assert_int_equal(fq_store_request_templates(store, plain_id, &loaded), 0);
    assert_int_equal(loaded.nheaders, 0);
    assert_null(loaded.header_names);
    fq_request_templates_free(&loaded);

    //  reply_to alone is one header
    fq_submit_t reply_only = plain;
    reply_only.idempotency_key = NULL;
    reply_only.reply_to = "help@acme.example";
    int64_t reply_id = 0;
    assert_int_equal(fq_store_submit(store, &reply_only, &reply_id), 0);
    assert_int_equal(fq_store_request_templates(store, reply_id, &loaded), 0);
    assert_int_equal(loaded.nheaders, 1);
    assert_string_equal(loaded.header_names[0], "Reply-To");
    fq_request_templates_free(&loaded);

    //  In SQL: headers must be an object of strings, reply_to an address
    fq_submit_t bad = plain;
    bad.idempotency_key = NULL;
    bad.headers_json = "[\"X-Campaign\"]";
    assert_int_equal(fq_store_submit(store, &bad, &again), FQ_EINVAL);
    assert_non_null(strstr(fq_store_error(store), "headers must be a JSON object"));
    bad.headers_json = "{\"X-Count\": 3}";
    assert_int_equal(fq_store_submit(store, &bad, &again), FQ_EINVAL);
    assert_non_null(strstr(fq_store_error(store), "X-Count"));
    bad.headers_json = NULL;
    bad.reply_to = "help@acme.example, evil@evil.test";
    assert_int_equal(fq_store_submit(store, &bad, &again), FQ_EINVAL);
    assert_non_null(strstr(fq_store_error(store), "invalid reply_to address"));

    //  The submit_keyed of 0012, which an older fairqd calls in a rolling
    //  upgrade, still submits, without headers
    PGconn *conn = fq_test_connect(s_conninfo);
    int64_t old = fq_test_int(conn,
                              "SELECT request_id FROM fairq.submit_keyed('hdr',"
                              " 'news@acme.example', 'Hi', 'Hello', '[{\"to\":\"a@x.example\"}]',"
                              " false, now(), 0, 5, NULL, NULL)",
                              0);
    assert_true(old > 0);
    //  A row stored before 0013 holds NULL in both columns
    char old_text[S_ID_TEXT];
    fq_test_param(old_text, sizeof old_text, old);
    assert_int_equal(fq_test_int(conn,
                                 "SELECT count(*) FROM fairq.requests WHERE id = $1::bigint"
                                 " AND headers IS NULL AND reply_to IS NULL",
                                 1, old_text),
                     1);
    assert_int_equal(fq_store_request_get(store, old, &info), 0);
    assert_string_equal(info.headers, "{}");
    assert_null(info.reply_to);
    fq_request_info_free(&info);
    assert_int_equal(fq_store_request_templates(store, old, &loaded), 0);
    assert_int_equal(loaded.nheaders, 0);
    fq_request_templates_free(&loaded);

    //  Several in one query, in id order, each with its own headers; an id
    //  that names no request is left out
    int64_t several[] = {reply_id, INT64_MAX, id, plain_id};
    fq_request_templates_t many[4];
    assert_int_equal(fq_store_request_templates_many(store, several, 4, many), 3);
    assert_int_equal(many[0].id, id);
    assert_int_equal(many[0].nheaders, 3);
    assert_string_equal(many[0].header_names[2], "Reply-To");
    assert_int_equal(many[1].id, plain_id);
    assert_int_equal(many[1].nheaders, 0);
    assert_int_equal(many[2].id, reply_id);
    assert_int_equal(many[2].nheaders, 1);
    assert_string_equal(many[2].tenant, "hdr");
    for (int i = 0; i < 3; i++)
        fq_request_templates_free(&many[i]);
    assert_int_equal(fq_store_request_templates(store, INT64_MAX, &loaded), FQ_ENOTFOUND);
    PQfinish(conn);
    fq_store_destroy(&store);
}

//  Writes into json a headers object of count headers "X-H00": "vvv...",
//  whose names and values hold bytes bytes together (each value as long
//  as the others, the last taking the rest).
static void s_headers_json(char *json, size_t count, size_t bytes)
{
    size_t value_len = (bytes - count * S_HEADER_NAME_LEN) / count;
    size_t at = (size_t)snprintf(json, S_HEADERS_JSON_SIZE, "{");
    for (size_t i = 0; i < count; i++) {
        size_t len =
            i + 1 < count ? value_len : bytes - count * S_HEADER_NAME_LEN - value_len * (count - 1);
        at += (size_t)snprintf(json + at, S_HEADERS_JSON_SIZE - at, "%s\"X-H%02zu\":\"",
                               i ? "," : "", i);
        assert_true(at + len + sizeof "\"}" <= S_HEADERS_JSON_SIZE);
        memset(json + at, 'v', len);
        at += len;
        at += (size_t)snprintf(json + at, S_HEADERS_JSON_SIZE - at, "\"");
    }
    snprintf(json + at, S_HEADERS_JSON_SIZE - at, "}");
}

//  fairq.submit_keyed refuses in SQL the headers fairqd's API refuses as a
//  set (mailheaders/fq_mail_headers.h, fq_mail_headers_problem), so a
//  submit in SQL cannot store them either: more than S_HEADERS_MAX, more
//  than S_HEADERS_BYTES_MAX bytes of names and values, a name given twice
//  in another case (X-A and x-a), Reply-To among them in any case (with a
//  reply_to, a message would carry two). Up to the limits they are taken.
static void test_request_header_set_refused(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    assert_int_equal(fq_store_tenant_put(store, &(fq_tenant_spec_t){.name = "hdrset"}, NULL), 0);
    static char json[S_HEADERS_JSON_SIZE];
    fq_submit_t req = {.tenant = "hdrset",
                       .from = "news@acme.example",
                       .subject = "Hi",
                       .body = "Hello",
                       .recipients_json = "[{\"to\":\"a@x.example\"}]",
                       .headers_json = json};
    int64_t id = 0;

    s_headers_json(json, S_HEADERS_MAX, S_HEADERS_MAX * (S_HEADER_NAME_LEN + 1));
    assert_int_equal(fq_store_submit(store, &req, &id), 0);
    s_headers_json(json, S_HEADERS_MAX + 1, (S_HEADERS_MAX + 1) * (S_HEADER_NAME_LEN + 1));
    assert_int_equal(fq_store_submit(store, &req, &id), FQ_EINVAL);
    assert_non_null(strstr(fq_store_error(store), "more than 32 headers"));

    s_headers_json(json, S_BIG_HEADERS, S_HEADERS_BYTES_MAX);
    assert_int_equal(fq_store_submit(store, &req, &id), 0);
    s_headers_json(json, S_BIG_HEADERS, S_HEADERS_BYTES_MAX + 1);
    assert_int_equal(fq_store_submit(store, &req, &id), FQ_EINVAL);
    assert_non_null(strstr(fq_store_error(store), "more than 8192 bytes"));

    req.headers_json = "{\"X-Campaign\":\"a\",\"x-campaign\":\"b\"}";
    assert_int_equal(fq_store_submit(store, &req, &id), FQ_EINVAL);
    assert_non_null(strstr(fq_store_error(store), "given twice"));

    req.headers_json = "{\"reply-to\":\"evil@evil.test\"}";
    assert_int_equal(fq_store_submit(store, &req, &id), FQ_EINVAL);
    assert_non_null(strstr(fq_store_error(store), "\"reply-to\""));
    req.reply_to = "help@acme.example";
    req.headers_json = "{\"Reply-To\":\"evil@evil.test\"}";
    assert_int_equal(fq_store_submit(store, &req, &id), FQ_EINVAL);
    assert_non_null(strstr(fq_store_error(store), "reply_to"));

    //  Nothing refused was stored
    PGconn *conn = fq_test_connect(s_conninfo);
    assert_int_equal(fq_test_int(conn,
                                 "SELECT count(*) FROM fairq.requests r JOIN fairq.tenants t"
                                 " ON t.id = r.tenant_id WHERE t.name = 'hdrset'",
                                 0),
                     2);
    PQfinish(conn);
    fq_store_destroy(&store);
}

//  A request's text_body (migration 0014): the plain-text alternative of
//  an HTML body, kept with it, read back and loaded for the splitter and
//  the dispatcher; part of the fingerprint only when given, so a request
//  without one keeps the fingerprint it had. fairq.submit_keyed refuses
//  it beside a plain-text body and checks its template; 0013's form,
//  which an older fairqd calls, submits without one.
static void test_request_text_body(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    assert_int_equal(fq_store_tenant_put(store, &(fq_tenant_spec_t){.name = "alt"}, NULL), 0);
    fq_submit_t req = {.tenant = "alt",
                       .from = "news@acme.example",
                       .subject = "Hi {{name}}",
                       .body = "<p>Hello {{name}}</p>",
                       .body_is_html = true,
                       .recipients_json = "[{\"to\":\"a@x.example\",\"fields\":{\"name\":\"A\"}}]",
                       .idempotency_key = "with-text",
                       .text_body = "Hello {{name}}, code {{code}}"};
    int64_t id = 0;
    assert_int_equal(fq_store_submit(store, &req, &id), 0);

    fq_request_info_t info;
    assert_int_equal(fq_store_request_get(store, id, &info), 0);
    assert_string_equal(info.text_body, "Hello {{name}}, code {{code}}");
    fq_request_info_free(&info);
    fq_request_info_free(&info); //  Safe twice
    fq_request_list_t list;
    int64_t tenant;
    assert_int_equal(fq_store_tenant_id(store, "alt", &tenant), 0);
    assert_int_equal(fq_store_request_list(store, tenant, NULL, 0, 10, &list), 1);
    assert_string_equal(list.rows[0].text_body, "Hello {{name}}, code {{code}}");
    fq_request_list_free(&list);
    fq_request_templates_t loaded;
    assert_int_equal(fq_store_request_templates(store, id, &loaded), 0);
    assert_string_equal(loaded.text_body, "Hello {{name}}, code {{code}}");
    fq_request_templates_free(&loaded);
    fq_request_templates_free(&loaded);
    assert_null(loaded.text_body);

    //  The same key: the same text_body replays, another one or none is
    //  another request
    int64_t again = 0;
    assert_int_equal(fq_store_submit(store, &req, &again), 1);
    assert_int_equal(again, id);
    fq_submit_t other = req;
    other.text_body = "Hello {{name}}";
    assert_int_equal(fq_store_request_by_key(store, &other, &again), FQ_ECONFLICT);
    assert_int_equal(fq_store_submit(store, &other, &again), FQ_ECONFLICT);
    other.text_body = NULL;
    assert_int_equal(fq_store_request_by_key(store, &other, &again), FQ_ECONFLICT);
    //  An empty text_body is given, not none
    other.text_body = "";
    assert_int_equal(fq_store_request_by_key(store, &other, &again), FQ_ECONFLICT);

    //  Without one, a request is stored and fingerprinted as before: its
    //  fingerprint is the one made with no text_body at all, which a
    //  submit that gives one does not match
    fq_submit_t plain = req;
    plain.idempotency_key = "without-text";
    plain.text_body = NULL;
    int64_t plain_id = 0;
    assert_int_equal(fq_store_submit(store, &plain, &plain_id), 0);
    assert_int_equal(fq_store_request_by_key(store, &plain, &again), 0);
    assert_int_equal(again, plain_id);
    plain.text_body = "x";
    assert_int_equal(fq_store_request_by_key(store, &plain, &again), FQ_ECONFLICT);
    assert_int_equal(fq_store_request_get(store, plain_id, &info), 0);
    assert_null(info.text_body);
    fq_request_info_free(&info);
    assert_int_equal(fq_store_request_templates(store, plain_id, &loaded), 0);
    assert_null(loaded.text_body);
    fq_request_templates_free(&loaded);

    //  In SQL: only beside an HTML body, and a template of the grammar
    fq_submit_t bad = req;
    bad.idempotency_key = NULL;
    bad.body_is_html = false;
    assert_int_equal(fq_store_submit(store, &bad, &again), FQ_EINVAL);
    assert_non_null(strstr(fq_store_error(store), "text_body"));
    bad.body_is_html = true;
    bad.text_body = "Hello {{name";
    assert_int_equal(fq_store_submit(store, &bad, &again), FQ_EINVAL);
    assert_non_null(strstr(fq_store_error(store), "unclosed tag"));

    //  0013's submit_keyed, which an older fairqd calls in a rolling
    //  upgrade, still submits, without a text_body; so does 0012's
    PGconn *conn = fq_test_connect(s_conninfo);
    int64_t old = fq_test_int(conn,
                              "SELECT request_id FROM fairq.submit_keyed('alt',"
                              " 'news@acme.example', 'Hi', '<p>Hello</p>',"
                              " '[{\"to\":\"a@x.example\"}]', true, now(), 0, 5, NULL, NULL,"
                              " '{\"X-A\":\"1\"}'::jsonb, NULL::text)",
                              0);
    assert_true(old > 0);
    int64_t older = fq_test_int(conn,
                                "SELECT request_id FROM fairq.submit_keyed('alt',"
                                " 'news@acme.example', 'Hi', 'Hello', '[{\"to\":\"a@x.example\"}]',"
                                " false, now(), 0, 5, NULL, NULL)",
                                0);
    assert_true(older > 0);
    assert_int_equal(fq_store_request_get(store, old, &info), 0);
    assert_null(info.text_body);
    assert_string_equal(info.headers, "{\"X-A\": \"1\"}");
    fq_request_info_free(&info);
    assert_int_equal(fq_store_request_templates(store, older, &loaded), 0);
    assert_null(loaded.text_body);
    fq_request_templates_free(&loaded);
    PQfinish(conn);
    fq_store_destroy(&store);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tokens_are_hashed_and_owned),
        cmocka_unit_test(test_request_counters_and_rejects),
        cmocka_unit_test(test_list_pages_newest_first),
        cmocka_unit_test(test_idempotency_key_outlives_retention),
        cmocka_unit_test(test_request_headers),
        cmocka_unit_test(test_request_text_body),
        cmocka_unit_test(test_request_header_set_refused),
    };
    return cmocka_run_group_tests(tests, s_group_setup, s_group_teardown);
}
