/*  store_channels_test.c — requests on channels besides mail (migration
    0015) against a real PostgreSQL: an http request stored, read back
    (its secret never) and loaded for the splitter and the dispatcher with
    its tenant's default secret; its fingerprint; what fairq.submit_keyed
    refuses in SQL, and its older forms still taking mail; recipient keys
    split where addresses would be refused; the schema's limits the same
    as channels/fq_channel.h's; a nack's Retry-After kept; searches and a
    cancel by recipient key. */
#include "fq_channel.h"
#include "fq_error.h"
#include "fq_store.h"
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include "fq_test_sql.h"

#define S_SECRET       "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
#define S_OTHER_SECRET "whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="

//  A second's slack for comparing the database's times.
#define S_SLACK_S 1

static char s_conninfo[128];

static int s_group_setup(void **state)
{
    (void)state;
    const char *tenants[] = {"hooks", "mail", NULL};
    return fq_test_db_prepare(s_conninfo, sizeof s_conninfo, tenants, NULL);
}

static int s_group_teardown(void **state)
{
    (void)state;
    fq_test_db_drop();
    return 0;
}

//  An http request of tenant "hooks" with headers, a body and a secret.
static fq_submit_t s_http_request(const char *recipients)
{
    return (fq_submit_t){.tenant = "hooks",
                         .channel = "http",
                         .http_method = "POST",
                         .http_url = "https://hooks.example/in/{{id}}",
                         .http_headers_json = "{\"X-Token\":\"t-{{token}}\"}",
                         .http_body = "{\"id\": \"{{id}}\"}",
                         .http_body_format = "json",
                         .signing_secret = S_SECRET,
                         .recipients_json = recipients};
}

//  Splits every chunk of request with the fields of its templates.
static void s_split_all(fq_store_t *store, int64_t request, const char *const *fields, size_t count,
                        size_t nheader, fq_split_result_t *result)
{
    int rc;
    while ((rc = fq_store_split_chunk(store, request, fields, count, nheader, result)) == 1)
        if (result->last)
            break;
    if (rc < 0)
        fail_msg("split: %s", fq_store_error(store));
}

static void test_http_request_stored_and_loaded(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    fq_submit_t req =
        s_http_request("[{\"to\":\"cust-1\",\"fields\":{\"id\":\"1\",\"token\":\"a\"}}]");
    req.idempotency_key = "hook-1";
    int64_t id = 0;
    assert_int_equal(fq_store_submit(store, &req, &id), 0);

    fq_request_info_t info;
    assert_int_equal(fq_store_request_get(store, id, &info), 0);
    assert_string_equal(info.channel, "http");
    assert_null(info.reply_to);
    assert_string_equal(info.headers, "{}");
    json_t *http = json_loads(info.http, 0, NULL);
    assert_non_null(http);
    assert_string_equal(json_string_value(json_object_get(http, "method")), "POST");
    assert_string_equal(json_string_value(json_object_get(http, "url")),
                        "https://hooks.example/in/{{id}}");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(http, "headers"), "X-Token")),
        "t-{{token}}");
    assert_string_equal(json_string_value(json_object_get(http, "body")), "{\"id\": \"{{id}}\"}");
    assert_string_equal(json_string_value(json_object_get(http, "body_format")), "json");
    assert_true(json_is_true(json_object_get(http, "signed")));
    assert_int_equal(json_object_size(http), 6); //  Never the secret
    assert_null(strstr(info.http, "whsec_"));
    json_decref(http);
    fq_request_info_free(&info);

    fq_request_templates_t loaded;
    assert_int_equal(fq_store_request_templates(store, id, &loaded), 0);
    assert_string_equal(loaded.channel, "http");
    assert_string_equal(loaded.http_method, "POST");
    assert_string_equal(loaded.http_url, "https://hooks.example/in/{{id}}");
    assert_string_equal(loaded.http_body, "{\"id\": \"{{id}}\"}");
    assert_string_equal(loaded.http_body_format, "json");
    assert_string_equal(loaded.signing_secret, S_SECRET);
    assert_string_equal(loaded.from_addr, "");
    assert_string_equal(loaded.subject, "");
    assert_int_equal(loaded.nheaders, 1);
    assert_string_equal(loaded.header_names[0], "X-Token");
    assert_string_equal(loaded.header_values[0], "t-{{token}}");
    fq_request_templates_free(&loaded);
    fq_request_templates_free(&loaded);
    assert_null(loaded.signing_secret);

    //  A mail request loads as before, its channel "email"
    fq_submit_t mail = {.tenant = "mail",
                        .from = "news@acme.example",
                        .subject = "Hi",
                        .body = "Body",
                        .recipients_json = "[{\"to\":\"a@example.com\"}]"};
    int64_t mail_id = 0;
    assert_int_equal(fq_store_submit(store, &mail, &mail_id), 0);
    assert_int_equal(fq_store_request_templates(store, mail_id, &loaded), 0);
    assert_string_equal(loaded.channel, "email");
    assert_null(loaded.http_url);
    assert_null(loaded.signing_secret);
    fq_request_templates_free(&loaded);
    assert_int_equal(fq_store_request_get(store, mail_id, &info), 0);
    assert_string_equal(info.channel, "email");
    assert_null(info.http);
    fq_request_info_free(&info);

    //  The same key: the same request replays; another URL, header,
    //  secret or none is another request
    int64_t again = 0;
    assert_int_equal(fq_store_submit(store, &req, &again), 1);
    assert_int_equal(again, id);
    fq_submit_t other = req;
    other.http_url = "https://hooks.example/other/{{id}}";
    assert_int_equal(fq_store_request_by_key(store, &other, &again), FQ_ECONFLICT);
    other = req;
    other.http_headers_json = "{\"X-Token\":\"u-{{token}}\"}";
    assert_int_equal(fq_store_request_by_key(store, &other, &again), FQ_ECONFLICT);
    other = req;
    other.signing_secret = S_OTHER_SECRET;
    assert_int_equal(fq_store_submit(store, &other, &again), FQ_ECONFLICT);
    other.signing_secret = NULL;
    assert_int_equal(fq_store_request_by_key(store, &other, &again), FQ_ECONFLICT);
    fq_store_destroy(&store);
}

//  A tenant's default secret signs its http requests that give none, as it
//  is at each load; it is never read back, only whether there is one.
static void test_tenant_default_secret(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    fq_tenant_spec_t spec = {.name = "signer", .signing_secret = S_OTHER_SECRET};
    assert_int_equal(fq_store_tenant_put(store, &spec, NULL), 0);
    fq_tenant_info_t tenant;
    assert_int_equal(fq_store_tenant_get(store, "signer", &tenant), 0);
    assert_true(tenant.signing_secret_set);
    fq_submit_t req = s_http_request("[{\"to\":\"k\"}]");
    req.tenant = "signer";
    req.signing_secret = NULL;
    int64_t id = 0;
    assert_int_equal(fq_store_submit(store, &req, &id), 0);
    fq_request_templates_t loaded;
    assert_int_equal(fq_store_request_templates(store, id, &loaded), 0);
    assert_string_equal(loaded.signing_secret, S_OTHER_SECRET);
    fq_request_templates_free(&loaded);

    //  An update that does not name it keeps it; "" removes it
    assert_int_equal(
        fq_store_tenant_put(store, &(fq_tenant_spec_t){.name = "signer", .weight = 2}, NULL), 0);
    assert_int_equal(fq_store_tenant_get(store, "signer", &tenant), 0);
    assert_true(tenant.signing_secret_set);
    spec = (fq_tenant_spec_t){.name = "signer", .signing_secret = ""};
    assert_int_equal(fq_store_tenant_put(store, &spec, NULL), 0);
    assert_int_equal(fq_store_tenant_get(store, "signer", &tenant), 0);
    assert_false(tenant.signing_secret_set);
    assert_int_equal(fq_store_request_templates(store, id, &loaded), 0);
    assert_null(loaded.signing_secret);
    fq_request_templates_free(&loaded);
    fq_request_info_t info;
    assert_int_equal(fq_store_request_get(store, id, &info), 0);
    assert_non_null(strstr(info.http, "\"signed\": false"));
    fq_request_info_free(&info);

    //  The schema refuses a secret that is none
    spec.signing_secret = "whsec_short";
    assert_int_equal(fq_store_tenant_put(store, &spec, NULL), FQ_EINVAL);
    assert_string_equal(fq_store_error_constraint(store), "tenants_signing_secret_check");
    fq_store_destroy(&store);
}

//  Asserts that the submit is refused with a message holding words, and
//  stores nothing.
static void s_refused(fq_store_t *store, const fq_submit_t *req, const char *words)
{
    int64_t id = 0;
    int rc = fq_store_submit(store, req, &id);
    if (rc != FQ_EINVAL)
        fail_msg("submit answered %d, wanted FQ_EINVAL (%s)", rc, words);
    if (!strstr(fq_store_error(store), words))
        fail_msg("refused with \"%s\", wanted \"%s\"", fq_store_error(store), words);
}

static void test_submit_refusals_in_sql(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    PGconn *conn = fq_test_connect(s_conninfo);
    int64_t before = fq_test_int(conn, "SELECT count(*) FROM fairq.requests", 0);
    const char *recipients = "[{\"to\":\"k\"}]";
    fq_submit_t req = s_http_request(recipients);
    req.channel = "HTTP";
    s_refused(store, &req, "invalid channel");
    req.channel = "sms";
    s_refused(store, &req, "the http fields are for the http channel only");
    req = s_http_request(recipients);
    req.from = "news@acme.example";
    s_refused(store, &req, "they are mail's");
    req = s_http_request(recipients);
    req.subject = "Hi";
    s_refused(store, &req, "they are mail's");
    req = s_http_request(recipients);
    req.body = "x";
    s_refused(store, &req, "gives its body as http_body");
    req = s_http_request(recipients);
    req.http_method = "CONNECT";
    s_refused(store, &req, "http_method must be");
    req = s_http_request(recipients);
    req.http_url = "ftp://hooks.example/";
    s_refused(store, &req, "http_url must start with");
    req.http_url = "https://{{host}}/";
    s_refused(store, &req, "http_url must start with");
    req = s_http_request(recipients);
    req.http_body_format = "xml";
    s_refused(store, &req, "http_body_format must be json or form");
    req = s_http_request(recipients);
    req.http_method = "GET";
    s_refused(store, &req, "a GET has no body");
    const char *bad_headers[][2] = {{"{\"Host\":\"x\"}", "cannot be given"},
                                    {"{\"webhook-id\":\"x\"}", "cannot be given"},
                                    {"{\"X A\":\"x\"}", "a header's name is"},
                                    {"{\"X-A\":\"1\",\"x-a\":\"2\"}", "given twice"},
                                    {"{\"X-A\":\"a\\u0001\"}", "control character"},
                                    {"{\"X-A\":1}", "must be a string"},
                                    {"{\"X-A\":\"{{a\"}", "unclosed tag"}};
    for (size_t i = 0; i < sizeof bad_headers / sizeof *bad_headers; i++) {
        req = s_http_request(recipients);
        req.http_headers_json = bad_headers[i][0];
        s_refused(store, &req, bad_headers[i][1]);
    }
    req = s_http_request(recipients);
    req.signing_secret = "whsec_MfKQ9r8GKYqrTwjU";
    s_refused(store, &req, "signing_secret: a signing secret is");
    req.signing_secret = "whsec_!!!!";
    s_refused(store, &req, "signing_secret: a signing secret is");
    req = s_http_request(recipients);
    req.http_url = "https://hooks.example/{{id";
    s_refused(store, &req, "unclosed tag");
    //  Another channel needs a body, and takes no http fields
    fq_submit_t sms = {.tenant = "hooks", .channel = "sms", .recipients_json = recipients};
    s_refused(store, &sms, "needs a body");
    //  Mail takes no http fields
    fq_submit_t mail = {.tenant = "mail",
                        .from = "news@acme.example",
                        .subject = "Hi",
                        .body = "B",
                        .http_url = "https://hooks.example/",
                        .recipients_json = recipients};
    s_refused(store, &mail, "the http fields are for the http channel only");
    assert_int_equal(fq_test_int(conn, "SELECT count(*) FROM fairq.requests", 0), before);

    //  Another channel: its body, rendered as it is; no from or subject
    sms.body = "Code {{code}}";
    int64_t id = 0;
    assert_int_equal(fq_store_submit(store, &sms, &id), 0);
    fq_request_templates_t loaded;
    assert_int_equal(fq_store_request_templates(store, id, &loaded), 0);
    assert_string_equal(loaded.channel, "sms");
    assert_string_equal(loaded.body, "Code {{code}}");
    assert_string_equal(loaded.from_addr, "");
    assert_null(loaded.http_method);
    fq_request_templates_free(&loaded);

    //  0014's form of submit_keyed (fourteen arguments, an older fairqd's)
    //  and 0013's still submit mail; an application names the http fields
    int64_t old = fq_test_int(conn,
                              "SELECT request_id FROM fairq.submit_keyed('mail',"
                              " 'news@acme.example', 'Hi', '<p>Hi</p>',"
                              " '[{\"to\":\"a@x.example\"}]', true, now(), 0, 5, NULL, NULL,"
                              " NULL::jsonb, NULL::text, 'Hi')",
                              0);
    assert_true(old > 0);
    int64_t older = fq_test_int(conn,
                                "SELECT request_id FROM fairq.submit_keyed('mail',"
                                " 'news@acme.example', 'Hi', 'Hello', '[{\"to\":\"a@x.example\"}]',"
                                " false, now(), 0, 5, NULL, NULL, NULL::jsonb, NULL::text)",
                                0);
    assert_true(older > 0);
    char old_id[24], older_id[24];
    assert_int_equal(fq_test_int(conn,
                                 "SELECT count(*) FROM fairq.requests WHERE channel = 'email'"
                                 " AND id IN ($1, $2)",
                                 2, fq_test_param(old_id, sizeof old_id, old),
                                 fq_test_param(older_id, sizeof older_id, older)),
                     2);
    int64_t named = fq_test_int(
        conn,
        "SELECT request_id FROM fairq.submit_keyed(tenant => 'hooks', from_addr => NULL,"
        " subject => NULL, body => NULL, recipients => '[{\"to\":\"k\"}]', body_is_html => false,"
        " send_at => now(), priority => 0, max_attempts => 5, idempotency_key => NULL,"
        " fingerprint => NULL, headers => NULL, reply_to => NULL, text_body => NULL,"
        " channel => 'http', http_method => 'PUT', http_url => 'http://hooks.example/x',"
        " http_body_format => 'form')",
        0);
    assert_true(named > 0);
    assert_int_equal(fq_store_request_templates(store, named, &loaded), 0);
    assert_string_equal(loaded.http_method, "PUT");
    assert_null(loaded.http_body);
    fq_request_templates_free(&loaded);
    PQfinish(conn);
    fq_store_destroy(&store);
}

//  A request's recipients are keys when it is not mail: "cust-1" is split,
//  an empty key or one with a control character rejected alone; a field of
//  a header holding CR is rejected as for a subject. The same keys in a
//  mail request are no addresses.
static void test_recipient_keys_split(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    const char *recipients =
        "[{\"to\":\"cust-1\",\"fields\":{\"token\":\"a\",\"id\":\"1\"}},"
        "{\"to\":\"\",\"fields\":{\"token\":\"a\",\"id\":\"2\"}},"
        "{\"to\":\"a\\u0007b\",\"fields\":{\"token\":\"a\",\"id\":\"3\"}},"
        "{\"to\":\"cust-4\",\"fields\":{\"token\":\"a\\r\\nX: y\",\"id\":\"4\"}},"
        "{\"to\":\"Cust 5 <no address>\",\"fields\":{\"token\":\"b\",\"id\":\"5\"}}]";
    fq_submit_t req = s_http_request(recipients);
    int64_t id = 0;
    assert_int_equal(fq_store_submit(store, &req, &id), 0);
    const char *fields[] = {"token", "id", "id"};
    fq_split_result_t result;
    s_split_all(store, id, fields, 3, 1, &result);
    fq_reject_page_t rejects;
    assert_int_equal(fq_store_rejects(store, id, -1, 10, &rejects), 3);
    assert_string_equal(rejects.rows[0].reason, "empty recipient key");
    assert_string_equal(rejects.rows[1].reason, "recipient key contains a control character");
    assert_string_equal(rejects.rows[2].reason,
                        "field \"token\" goes into a header and holds CR, LF or NUL");
    fq_reject_page_free(&rejects);

    //  Searched by key, exactly as an address is; cancelled by request
    fq_message_page_t page;
    fq_message_filter_t filter = {.recipient = "cust 5 <no address>"};
    assert_int_equal(fq_store_search_messages(store, &filter, 0, 10, &page), 1);
    assert_string_equal(page.rows[0].recipient, "Cust 5 <no address>");
    fq_message_page_free(&page);
    filter = (fq_message_filter_t){.request_id = id};
    assert_int_equal(fq_store_search_messages(store, &filter, 0, 10, &page), 2);
    fq_message_page_free(&page);
    assert_int_equal(fq_store_request_pause(store, id), 1);
    assert_int_equal(fq_store_request_resume(store, id), 1);
    assert_int_equal(fq_store_request_cancel(store, id), 2);

    //  Mail: the same "to" are not addresses
    fq_submit_t mail = {.tenant = "mail",
                        .from = "news@acme.example",
                        .subject = "Hi",
                        .body = "B",
                        .recipients_json = "[{\"to\":\"cust-1\"},{\"to\":\"a@example.com\"}]"};
    assert_int_equal(fq_store_submit(store, &mail, &id), 0);
    s_split_all(store, id, NULL, 0, 0, &result);
    assert_int_equal(fq_store_rejects(store, id, -1, 10, &rejects), 1);
    assert_string_equal(rejects.rows[0].reason, "address is not local@domain");
    fq_reject_page_free(&rejects);
    fq_store_destroy(&store);
}

//  The schema's limits are channels/fq_channel.h's: a URL, a body and a
//  channel's name of exactly the limit are stored, one byte more refused
//  by the database itself.
static void test_limits_are_the_schemas(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    char *url = malloc(FQ_HTTP_URL_MAX + 2);
    memset(url, 'a', FQ_HTTP_URL_MAX + 1);
    memcpy(url, "https://a.example/", strlen("https://a.example/"));
    url[FQ_HTTP_URL_MAX] = 0;
    fq_submit_t req = s_http_request("[]");
    req.http_url = url;
    int64_t id = 0;
    assert_int_equal(fq_store_submit(store, &req, &id), 0);
    url[FQ_HTTP_URL_MAX] = 'a';
    url[FQ_HTTP_URL_MAX + 1] = 0;
    assert_int_equal(fq_store_submit(store, &req, &id), FQ_EINVAL);
    assert_string_equal(fq_store_error_constraint(store), "requests_http_check");
    free(url);

    char *body = malloc(FQ_HTTP_BODY_MAX + 2);
    memset(body, ' ', FQ_HTTP_BODY_MAX + 1);
    body[0] = '1';
    body[FQ_HTTP_BODY_MAX] = 0;
    req = s_http_request("[]");
    req.http_body = body;
    assert_int_equal(fq_store_submit(store, &req, &id), 0);
    body[FQ_HTTP_BODY_MAX] = ' ';
    body[FQ_HTTP_BODY_MAX + 1] = 0;
    assert_int_equal(fq_store_submit(store, &req, &id), FQ_EINVAL);
    assert_string_equal(fq_store_error_constraint(store), "requests_http_check");
    free(body);

    char name[FQ_CHANNEL_NAME_SIZE + 1];
    memset(name, 'c', FQ_CHANNEL_NAME_MAX);
    name[FQ_CHANNEL_NAME_MAX] = 0;
    fq_submit_t other = {.tenant = "hooks", .channel = name, .body = "b", .recipients_json = "[]"};
    assert_int_equal(fq_store_submit(store, &other, &id), 0);
    fq_request_info_t info;
    assert_int_equal(fq_store_request_get(store, id, &info), 0);
    assert_string_equal(info.channel, name);
    fq_request_info_free(&info);
    name[FQ_CHANNEL_NAME_MAX] = 'c';
    name[FQ_CHANNEL_NAME_MAX + 1] = 0;
    assert_int_equal(fq_store_submit(store, &other, &id), FQ_EINVAL);

    //  As many headers as the rule takes, and one more
    json_t *headers = json_object();
    char header[16];
    for (int i = 0; i < FQ_HTTP_HEADERS_MAX; i++) {
        snprintf(header, sizeof header, "X-%d", i);
        json_object_set_new(headers, header, json_string("v"));
    }
    char *text = json_dumps(headers, JSON_COMPACT | JSON_SORT_KEYS);
    req = s_http_request("[]");
    req.http_headers_json = text;
    assert_int_equal(fq_store_submit(store, &req, &id), 0);
    free(text);
    json_object_set_new(headers, "X-last", json_string("v"));
    text = json_dumps(headers, JSON_COMPACT | JSON_SORT_KEYS);
    req.http_headers_json = text;
    assert_int_equal(fq_store_submit(store, &req, &id), FQ_EINVAL);
    assert_non_null(strstr(fq_store_error(store), "more than 32 headers"));
    free(text);
    json_decref(headers);
    fq_store_destroy(&store);
}

//  A nack's Retry-After: the next attempt is not before it, beyond the
//  policy's cap; without one the backoff holds; a permanent nack is dead
//  whatever it asks.
static void test_nack_retry_after(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    PGconn *conn = fq_test_connect(s_conninfo);
    fq_submit_t req = s_http_request("[{\"to\":\"a\",\"fields\":{\"id\":\"1\",\"token\":\"t\"}},"
                                     "{\"to\":\"b\",\"fields\":{\"id\":\"2\",\"token\":\"t\"}},"
                                     "{\"to\":\"c\",\"fields\":{\"id\":\"3\",\"token\":\"t\"}}]");
    int64_t id = 0;
    assert_int_equal(fq_store_submit(store, &req, &id), 0);
    fq_split_result_t result;
    s_split_all(store, id, NULL, 0, 0, &result);
    int64_t ids[3];
    char request[24];
    fq_test_param(request, sizeof request, id);
    for (int i = 0; i < 3; i++) {
        char offset[4];
        snprintf(offset, sizeof offset, "%d", i);
        ids[i] = fq_test_int(conn,
                             "SELECT id FROM fairq.messages WHERE request_id = $1"
                             " ORDER BY id OFFSET $2 LIMIT 1",
                             2, request, offset);
    }
    fq_retry_policy_t policy = {.base_ms = 100, .cap_ms = 1000};
    fq_nack_t nacks[] = {
        {.id = ids[0], .error = "503 busy", .retry_after_s = 3600},
        {.id = ids[1], .error = "503 busy"},
        {.id = ids[2], .permanent = true, .error = "410 gone", .retry_after_s = 60}};
    assert_int_equal(fq_store_nack_batch(store, nacks, 3, &policy), 3);
    char text[24];
    int64_t wait = fq_test_int(conn,
                               "SELECT extract(epoch FROM next_attempt_at - now())::bigint"
                               " FROM fairq.messages WHERE id = $1",
                               1, fq_test_param(text, sizeof text, ids[0]));
    assert_true(wait >= 3600 - S_SLACK_S && wait <= 3600);
    wait = fq_test_int(conn,
                       "SELECT ceil(extract(epoch FROM next_attempt_at - now()))::bigint"
                       " FROM fairq.messages WHERE id = $1",
                       1, fq_test_param(text, sizeof text, ids[1]));
    assert_true(wait <= 1);
    assert_int_equal(fq_test_int(conn,
                                 "SELECT count(*) FROM fairq.messages WHERE id = $1"
                                 " AND status = 'dead' AND next_attempt_at IS NULL",
                                 1, fq_test_param(text, sizeof text, ids[2])),
                     1);
    PQfinish(conn);
    fq_store_destroy(&store);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_http_request_stored_and_loaded),
        cmocka_unit_test(test_tenant_default_secret),
        cmocka_unit_test(test_submit_refusals_in_sql),
        cmocka_unit_test(test_recipient_keys_split),
        cmocka_unit_test(test_limits_are_the_schemas),
        cmocka_unit_test(test_nack_retry_after),
    };
    return cmocka_run_group_tests(tests, s_group_setup, s_group_teardown);
}
