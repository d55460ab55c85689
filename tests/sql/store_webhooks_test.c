/*  store_webhooks_test.c — tenants' webhook endpoints (fq_store_webhooks.h,
    migration 0020) against a real PostgreSQL: their CRUD (a secret fairq
    makes or the tenant gives, the types checked and named, the limit of
    endpoints, another tenant's endpoint answering as one that does not
    exist, rotation keeping the previous secret for a while, a delete
    cancelling the batch in flight), and the feed (fairq.webhooks_feed):
    an endpoint starts after the events already committed, gets its
    tenant's events only, in reading order, in batches of GET /v1/events'
    form, one batch in flight at a time, the cursor moving only past a
    batch delivered, the types it wants (walking past the others a scan at
    a time), the back-off and the disabling after failures and the same
    events again after, a body the http channel renders as it is whatever
    braces the events hold, the batch's bytes, a batch's own ack, nack,
    split and finish writing no event, and a pass reading the messages of
    the batches out only.

    Events are written by SQL, each statement its own transaction (but
    where a test holds one open on purpose). Events are read only from
    transactions older than every one still running in the cluster
    (pg_snapshot_xmin), so this program runs alone (RUN_SERIAL), and each
    feed that expects events waits until every event committed is behind
    that bound. Every test has tenants of its own; the endpoints are
    deleted after each test, so that a feed (which walks every endpoint)
    submits only the running test's batches. */
#include "fq_channel.h"
#include "fq_error.h"
#include "fq_store.h"
#include "fq_store_events.h"
#include "fq_store_webhooks.h"
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include "fq_test_sql.h"

//  How long a feed may wait for transactions still running in the cluster
//  (autovacuum's, say) that hold the snapshot's bound back.
#define S_SETTLE_MS 10000

#define S_URL "https://hooks.example.com/fairq"
//  "whsec_" and the base64 of 32 bytes, and of 24
#define S_SECRET  "whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="
#define S_SECRET2 "whsec_////////////////////////////////"

static char s_conninfo[128];

static int s_group_setup(void **state)
{
    (void)state;
    const char *tenants[] = {"acme",   "bravo",     "flight", "start", "held",  "feeda",
                             "feedb",  "types",     "fail",   "tmpl",  "bytes", "acks",
                             "braces", "bystander", "broken", "fine",  "rows",  NULL};
    return fq_test_db_prepare(s_conninfo, sizeof s_conninfo, tenants, NULL);
}

static int s_group_teardown(void **state)
{
    (void)state;
    fq_test_db_drop();
    return 0;
}

//  After each test: no endpoint is left for the next one's feeds.
static int s_teardown(void **state)
{
    (void)state;
    PGconn *conn = PQconnectdb(s_conninfo);
    PQclear(PQexec(conn, "DELETE FROM fairq.webhooks"));
    PQfinish(conn);
    return 0;
}

static int64_t s_tenant(PGconn *conn, const char *name)
{
    int64_t id = fq_test_int(conn, "SELECT id FROM fairq.tenants WHERE name = $1", 1, name);
    assert_true(id > 0);
    return id;
}

//  Writes one event in a transaction of its own (conn's, if it is in one)
//  and returns its id. request and message 0 are none; recipient and
//  detail NULL are none.
static int64_t s_event(PGconn *conn, int64_t tenant, int64_t request, int64_t message,
                       const char *type, const char *recipient, const char *detail)
{
    char t[32], r[32], m[32];
    return fq_test_int(conn,
                       "INSERT INTO fairq.events (tenant_id, request_id, message_id, type,"
                       " recipient, detail) VALUES ($1::bigint, nullif($2::bigint, 0),"
                       " nullif($3::bigint, 0), $4::fairq.event_type, $5, $6) RETURNING id",
                       6, fq_test_param(t, sizeof t, tenant), fq_test_param(r, sizeof r, request),
                       fq_test_param(m, sizeof m, message), type, recipient, detail);
}

//  Waits until every event committed is of a transaction older than every
//  one running, as a feed reads them.
static void s_settle(PGconn *conn)
{
    int64_t deadline = fq_test_now_ms() + S_SETTLE_MS;
    while (fq_test_int(conn,
                       "SELECT (pg_snapshot_xmin(pg_current_snapshot())"
                       " > coalesce((SELECT max(txid) FROM fairq.events), '0'::xid8))::int",
                       0) != 1) {
        assert_true(fq_test_now_ms() < deadline);
        fq_test_sleep_ms(20);
    }
}

//  The feed as fairqd runs it, with a batch of 3 and the back-off of
//  40 s doubling up to 60 s.
static fq_webhook_feed_t s_feed_default(void)
{
    return (fq_webhook_feed_t){.batch = 3,
                               .bytes = FQ_WEBHOOK_BATCH_BYTES,
                               .scan = FQ_WEBHOOK_SCAN,
                               .max_attempts = 5,
                               .base_ms = 40000,
                               .cap_ms = 60000,
                               .disable_after_s = 3600};
}

//  One pass; fails the test on an error. Returns the batches submitted.
static int s_feed(fq_store_t *store, const fq_webhook_feed_t *feed)
{
    int rc = fq_store_webhooks_feed(store, feed);
    if (rc < 0)
        fail_msg("feed: %s (%s)", fq_store_error(store), fq_err_name(rc));
    return rc;
}

//  Creates an endpoint of tenant; returns its id.
static int64_t s_create(fq_store_t *store, const char *tenant, const fq_webhook_spec_t *spec)
{
    fq_webhook_list_t list;
    int rc = fq_store_webhook_create(store, tenant, spec, &list);
    if (rc)
        fail_msg("create: %s (%s)", fq_store_error(store), fq_err_name(rc));
    assert_int_equal(list.count, 1);
    int64_t id = list.rows[0].id;
    fq_webhook_list_free(&list);
    return id;
}

//  Endpoint id of tenant, as GET shows it, into *out (one row).
static void s_get(fq_store_t *store, const char *tenant, int64_t id, fq_webhook_list_t *out)
{
    int rc = fq_store_webhooks(store, tenant, id, out);
    if (rc != 1)
        fail_msg("get webhook %lld: %d %s", (long long)id, rc, fq_store_error(store));
    assert_int_equal(out->count, 1);
    assert_int_equal(out->rows[0].id, id);
}

//  The call failed with rc, out empty, the store's message holding words.
static void s_refused(fq_store_t *store, int got, const fq_webhook_list_t *out, int rc,
                      const char *words)
{
    if (got != rc)
        fail_msg("%d (%s), wanted %s", got, fq_store_error(store), fq_err_name(rc));
    if (out) {
        assert_int_equal(out->count, 0);
        assert_null(out->rows);
    }
    if (!strstr(fq_store_error(store), words))
        fail_msg("\"%s\" does not say \"%s\"", fq_store_error(store), words);
}

static int64_t s_batches(PGconn *conn, int64_t webhook)
{
    char w[32];
    return fq_test_int(conn, "SELECT count(*) FROM fairq.requests WHERE webhook_id = $1::bigint", 1,
                       fq_test_param(w, sizeof w, webhook));
}

//  The endpoint's newest batch request.
static int64_t s_last_batch(PGconn *conn, int64_t webhook)
{
    char w[32];
    return fq_test_int(conn, "SELECT max(id) FROM fairq.requests WHERE webhook_id = $1::bigint", 1,
                       fq_test_param(w, sizeof w, webhook));
}

//  Splits request (one recipient) as the splitter does; returns its
//  message's id.
static int64_t s_split(fq_store_t *store, PGconn *conn, int64_t request)
{
    fq_split_result_t split;
    int rc;
    while ((rc = fq_store_split_chunk(store, request, NULL, 0, 0, &split)) == 1)
        if (split.last)
            break;
    if (rc < 0)
        fail_msg("split: %s", fq_store_error(store));
    char r[32];
    int64_t message =
        fq_test_int(conn, "SELECT id FROM fairq.messages WHERE request_id = $1::bigint", 1,
                    fq_test_param(r, sizeof r, request));
    assert_true(message > 0);
    return message;
}

//  The batch was delivered, as the senders' ack and the finish write it
//  (here by SQL).
static void s_deliver(fq_store_t *store, PGconn *conn, int64_t request)
{
    char m[32], r[32];
    fq_test_param(m, sizeof m, s_split(store, conn, request));
    fq_test_exec(conn,
                 "UPDATE fairq.messages SET status = 'sent', try_count = 1, next_attempt_at = NULL"
                 " WHERE id = $1::bigint",
                 1, m);
    fq_test_exec(conn,
                 "UPDATE fairq.requests SET status = 'done', sent = 1, finished_at = now()"
                 " WHERE id = $1::bigint",
                 1, fq_test_param(r, sizeof r, request));
}

//  The batch died: its message's answer was a permanent error, through the
//  store's nack and finish.
static void s_fail(fq_store_t *store, PGconn *conn, int64_t request, const char *error)
{
    int64_t message = s_split(store, conn, request);
    fq_nack_t nack = {.id = message, .permanent = true, .error = error};
    assert_int_equal(fq_store_nack_batch(store, &nack, 1, &(fq_retry_policy_t){1000, 1000, NULL}),
                     1);
    assert_true(fq_store_finish_requests(store, 100) >= 1);
    char r[32];
    char *status = fq_test_text(conn,
                                "SELECT status || ' ' || dead FROM fairq.requests"
                                " WHERE id = $1::bigint",
                                1, fq_test_param(r, sizeof r, request));
    assert_string_equal(status, "done 1");
    free(status);
}

//  The batch's http_body, parsed; checks its envelope for webhook and
//  gives its events (borrowed from the root, which the caller frees).
static json_t *s_body(PGconn *conn, int64_t request, int64_t webhook, json_t **events)
{
    char r[32];
    char *body = fq_test_text(conn, "SELECT http_body FROM fairq.requests WHERE id = $1::bigint", 1,
                              fq_test_param(r, sizeof r, request));
    assert_non_null(body);
    json_error_t error;
    json_t *root = json_loads(body, 0, &error);
    if (!root)
        fail_msg("the body is not JSON (%s): %.300s", error.text, body);
    free(body);
    assert_true(json_is_object(root));
    assert_string_equal(json_string_value(json_object_get(root, "type")), "fairq.events");
    const char *timestamp = json_string_value(json_object_get(root, "timestamp"));
    assert_non_null(timestamp);
    assert_int_equal(strlen(timestamp), 20);
    json_t *data = json_object_get(root, "data");
    assert_true(json_is_object(data));
    assert_int_equal(json_integer_value(json_object_get(data, "webhook")), webhook);
    *events = json_object_get(data, "events");
    assert_true(json_is_array(*events));
    return root;
}

//  The ids of the batch's events, in the body's order, into ids.
static size_t s_batch_ids(PGconn *conn, int64_t request, int64_t webhook, int64_t *ids, size_t max)
{
    json_t *events;
    json_t *root = s_body(conn, request, webhook, &events);
    size_t n = json_array_size(events);
    assert_true(n <= max);
    for (size_t i = 0; i < n; i++)
        ids[i] = json_integer_value(json_object_get(json_array_get(events, i), "id"));
    json_decref(root);
    return n;
}

static void s_assert_ids(const int64_t *got, size_t ngot, const int64_t *wanted, size_t nwanted)
{
    if (ngot != nwanted)
        fail_msg("%zu events, wanted %zu", ngot, nwanted);
    for (size_t i = 0; i < ngot; i++)
        if (got[i] != wanted[i])
            fail_msg("event %zu: id %lld, wanted %lld", i, (long long)got[i], (long long)wanted[i]);
}

//  The ids of the tenant's events in reading order, into ids.
static size_t s_sql_ids(PGconn *conn, int64_t tenant, int64_t *ids, size_t max)
{
    char t[32];
    PGresult *res = fq_test_query(
        conn, "SELECT id FROM fairq.events WHERE tenant_id = $1::bigint ORDER BY txid, id", 1,
        fq_test_param(t, sizeof t, tenant));
    size_t n = (size_t)PQntuples(res);
    assert_true(n <= max);
    for (size_t i = 0; i < n; i++)
        ids[i] = strtoll(PQgetvalue(res, (int)i, 0), NULL, 10);
    PQclear(res);
    return n;
}

//  An event as GET /v1/events writes it (api/fq_api_events.c).
static json_t *s_api_event(const fq_event_t *e)
{
    char at[32];
    time_t t = (time_t)e->at;
    struct tm tm;
    assert_non_null(gmtime_r(&t, &tm));
    assert_true(strftime(at, sizeof at, "%Y-%m-%dT%H:%M:%SZ", &tm) > 0);
    return json_pack("{s:I, s:s, s:o, s:o, s:s, s:o, s:o, s:s}", "id", (json_int_t)e->id, "tenant",
                     e->tenant, "request",
                     e->request_id ? json_integer(e->request_id) : json_null(), "message",
                     e->message_id ? json_integer(e->message_id) : json_null(), "type", e->type,
                     "recipient", e->recipient ? json_string(e->recipient) : json_null(), "detail",
                     e->detail ? json_string(e->detail) : json_null(), "at", at);
}

//  Each event of the batch is the one GET /v1/events gives for tenant,
//  field for field.
static void s_assert_api_form(fq_store_t *store, const char *tenant, const json_t *events)
{
    fq_event_page_t page;
    int rc = fq_store_events(store, &(fq_event_filter_t){.tenant = tenant}, NULL, FQ_STORE_PAGE_MAX,
                             &page);
    if (rc < 0)
        fail_msg("read events: %s", fq_store_error(store));
    for (size_t i = 0; i < json_array_size(events); i++) {
        json_t *got = json_array_get(events, i);
        int64_t id = json_integer_value(json_object_get(got, "id"));
        const fq_event_t *e = NULL;
        for (size_t j = 0; j < page.count && !e; j++)
            e = page.rows[j].id == id ? &page.rows[j] : NULL;
        if (!e)
            fail_msg("event %lld of the batch is not one of %s's", (long long)id, tenant);
        json_t *wanted = s_api_event(e);
        if (!json_equal(got, wanted)) {
            char *a = json_dumps(got, JSON_SORT_KEYS), *b = json_dumps(wanted, JSON_SORT_KEYS);
            fprintf(stderr, "batch: %s\nAPI:   %s\n", a, b);
            free(a);
            free(b);
            json_decref(wanted);
            fq_event_page_free(&page);
            fail_msg("event %lld differs from GET /v1/events'", (long long)id);
        }
        json_decref(wanted);
    }
    fq_event_page_free(&page);
}

//  The batch request is one the http channel sends as it is: it passes
//  the rule the dispatcher parses it by (fq_http_spec_problem), and its
//  body renders to itself (it holds no tag). Returns the rendered body
//  (free() it).
static char *s_assert_renders(PGconn *conn, int64_t request, const char *secret)
{
    char r[32];
    PGresult *res = fq_test_query(conn,
                                  "SELECT http_method, http_url, http_body, http_body_format"
                                  " FROM fairq.requests WHERE id = $1::bigint",
                                  1, fq_test_param(r, sizeof r, request));
    assert_int_equal(PQntuples(res), 1);
    assert_string_equal(PQgetvalue(res, 0, 3), "json");
    fq_http_spec_t spec = {.method = PQgetvalue(res, 0, 0),
                           .url = PQgetvalue(res, 0, 1),
                           .body = PQgetvalue(res, 0, 2),
                           .body_format = FQ_HTTP_BODY_JSON,
                           .secret = secret};
    char problem[FQ_HTTP_PROBLEM_SIZE];
    const char *why = fq_http_spec_problem(&spec, problem, sizeof problem);
    if (why) {
        char copy[FQ_HTTP_PROBLEM_SIZE];
        snprintf(copy, sizeof copy, "%s", why);
        PQclear(res);
        fail_msg("the batch breaks the http rule: %s", copy);
    }
    char error[FQ_HTTP_PROBLEM_SIZE];
    fq_http_templates_t *templates = fq_http_templates_new(&spec, error, sizeof error);
    if (!templates) {
        PQclear(res);
        fail_msg("templates: %s", error);
    }
    fq_http_message_t message;
    int rc =
        fq_http_render(templates, NULL, 42, (int64_t)time(NULL), &message, error, sizeof error);
    fq_http_templates_destroy(&templates);
    if (rc) {
        PQclear(res);
        fail_msg("render: %s", error);
    }
    assert_int_equal(message.body_size, strlen(spec.body));
    assert_memory_equal(message.body, spec.body, message.body_size);
    char *body = strdup(message.body);
    fq_http_message_free(&message);
    PQclear(res);
    return body;
}

//  No event names a request that requests (a query of one parameter,
//  param) gives; else fails listing them.
static void s_assert_no_events(PGconn *conn, const char *requests, const char *param)
{
    char sql[512];
    snprintf(sql, sizeof sql,
             "SELECT string_agg(type::text || ' of request ' || request_id"
             " || coalesce(' message ' || message_id, ''), ', ' ORDER BY txid, id)"
             " FROM fairq.events WHERE request_id IN (%s)",
             requests);
    char *events = fq_test_text(conn, sql, 1, param);
    if (events) {
        char copy[512];
        snprintf(copy, sizeof copy, "%s", events);
        free(events);
        fail_msg("a batch wrote events: %s", copy);
    }
}

//  ---------------------------------------------------------------------
//  CRUD

//  A tenant registers endpoints, reads, changes, rotates and deletes them;
//  what it gives wrong is refused in words naming it, and another
//  tenant's endpoints are as if they did not exist.
static void test_crud(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    PGconn *conn = fq_test_connect(s_conninfo);
    fq_webhook_list_t list;
    int64_t now = (int64_t)time(NULL);

    //  fairq makes the secret: "whsec_" and the base64 of 32 random bytes
    assert_int_equal(
        fq_store_webhook_create(store, "acme", &(fq_webhook_spec_t){.url = S_URL}, &list), 0);
    assert_int_equal(list.count, 1);
    fq_webhook_t *w = &list.rows[0];
    int64_t made = w->id;
    assert_true(made > 0);
    assert_string_equal(w->url, S_URL);
    assert_null(w->event_types);
    assert_non_null(w->secret);
    assert_memory_equal(w->secret, "whsec_", 6);
    assert_int_equal(strlen(w->secret), 6 + 44);
    const char *problem = fq_http_secret_problem(w->secret);
    if (problem)
        fail_msg("secret %s: %s", w->secret, problem);
    assert_int_equal(w->previous_until, 0);
    assert_true(w->enabled);
    assert_null(w->disabled_reason);
    assert_int_equal(w->batch_request, 0);
    assert_int_equal(w->batch_events, 0);
    assert_int_equal(w->failures, 0);
    assert_int_equal(w->failing_since, 0);
    assert_null(w->last_error);
    assert_int_equal(w->last_error_at, 0);
    assert_int_equal(w->last_success_at, 0);
    assert_int_equal(w->delivered, 0);
    assert_int_equal(w->backlog, 0);
    assert_false(w->backlog_more);
    assert_true(llabs(w->created_at - now) < 60);
    char made_secret[128];
    snprintf(made_secret, sizeof made_secret, "%s", w->secret);
    fq_webhook_list_free(&list);
    //  Each endpoint gets a secret of its own
    assert_int_equal(
        fq_store_webhook_create(store, "acme", &(fq_webhook_spec_t){.url = S_URL}, &list), 0);
    assert_string_not_equal(list.rows[0].secret, made_secret);
    assert_null(fq_http_secret_problem(list.rows[0].secret));
    fq_webhook_list_free(&list);

    //  A secret and types given are kept
    const char *const types[] = {"message.dead", "request.done"};
    assert_int_equal(fq_store_webhook_create(store, "acme",
                                             &(fq_webhook_spec_t){.url = S_URL "/typed",
                                                                  .types = types,
                                                                  .ntypes = 2,
                                                                  .secret = S_SECRET},
                                             &list),
                     0);
    int64_t typed = list.rows[0].id;
    assert_string_equal(list.rows[0].secret, S_SECRET);
    assert_string_equal(list.rows[0].event_types, "message.dead,request.done");
    assert_string_equal(list.rows[0].url, S_URL "/typed");
    fq_webhook_list_free(&list);

    //  Refusals: an unknown type named, a bad secret, an unknown tenant;
    //  none creates anything
    const char *const unknown[] = {"message.sent", "message.opened"};
    s_refused(store,
              fq_store_webhook_create(
                  store, "acme", &(fq_webhook_spec_t){.url = S_URL, .types = unknown, .ntypes = 2},
                  &list),
              &list, FQ_EINVAL, "\"message.opened\" is not one of " FQ_EVENT_TYPES_TEXT);
    assert_int_equal(
        fq_store_webhook_create(store, "acme",
                                &(fq_webhook_spec_t){.url = S_URL, .secret = "whsec_abc"}, &list),
        FQ_EINVAL);
    assert_int_equal(list.count, 0);
    s_refused(store,
              fq_store_webhook_create(store, "nobody", &(fq_webhook_spec_t){.url = S_URL}, &list),
              &list, FQ_ENOTFOUND, "could not read tenant: \"nobody\" does not exist");
    assert_int_equal(fq_test_int(conn, "SELECT count(*) FROM fairq.webhooks", 0), 3);

    //  At most FQ_WEBHOOKS_PER_TENANT_MAX each
    for (int i = 3; i < FQ_WEBHOOKS_PER_TENANT_MAX; i++)
        s_create(store, "acme", &(fq_webhook_spec_t){.url = S_URL});
    char words[64];
    snprintf(words, sizeof words, "at most %d webhooks", FQ_WEBHOOKS_PER_TENANT_MAX);
    s_refused(store,
              fq_store_webhook_create(store, "acme", &(fq_webhook_spec_t){.url = S_URL}, &list),
              &list, FQ_EINVAL, words);
    assert_int_equal(fq_store_webhooks(store, "acme", 0, &list), FQ_WEBHOOKS_PER_TENANT_MAX);
    assert_int_equal(list.count, FQ_WEBHOOKS_PER_TENANT_MAX);
    assert_int_equal(list.rows[0].id, made);
    for (size_t i = 1; i < list.count; i++)
        assert_true(list.rows[i].id > list.rows[i - 1].id);
    fq_webhook_list_free(&list);
    //  Another tenant has its own count
    int64_t other = s_create(store, "bravo", &(fq_webhook_spec_t){.url = S_URL "/bravo"});

    //  Another tenant's endpoint does not exist, for every call
    snprintf(words, sizeof words, "webhook %lld does not exist", (long long)other);
    s_refused(store, fq_store_webhooks(store, "acme", other, &list), &list, FQ_ENOTFOUND, words);
    s_refused(store,
              fq_store_webhook_update(store, "acme", other,
                                      &(fq_webhook_spec_t){.url = S_URL "/stolen", .enabled = 0},
                                      &list),
              &list, FQ_ENOTFOUND, words);
    s_refused(store, fq_store_webhook_rotate(store, "acme", other, NULL, 60, &list), &list,
              FQ_ENOTFOUND, words);
    s_refused(store, fq_store_webhook_delete(store, "acme", other), NULL, FQ_ENOTFOUND, words);
    s_refused(store, fq_store_webhooks(store, "nobody", other, &list), &list, FQ_ENOTFOUND,
              "could not read tenant: \"nobody\" does not exist");
    snprintf(words, sizeof words, "webhook %lld does not exist", (long long)made);
    s_refused(store, fq_store_webhooks(store, "bravo", made, &list), &list, FQ_ENOTFOUND, words);
    //  ... and is left as it was
    s_get(store, "bravo", other, &list);
    assert_string_equal(list.rows[0].url, S_URL "/bravo");
    assert_true(list.rows[0].enabled);
    fq_webhook_list_free(&list);
    assert_int_equal(fq_store_webhooks(store, "bravo", 0, &list), 1);
    fq_webhook_list_free(&list);

    //  Changes: the URL alone, then the types alone, then every type,
    //  then off and on; what is not given stays
    assert_int_equal(fq_store_webhook_update(
                         store, "acme", typed,
                         &(fq_webhook_spec_t){.url = "https://other.example.net/h", .enabled = -1},
                         &list),
                     0);
    assert_int_equal(list.count, 1);
    assert_string_equal(list.rows[0].url, "https://other.example.net/h");
    assert_string_equal(list.rows[0].event_types, "message.dead,request.done");
    assert_string_equal(list.rows[0].secret, S_SECRET);
    assert_true(list.rows[0].enabled);
    fq_webhook_list_free(&list);
    const char *const feedback[] = {"message.bounced", "message.complained"};
    assert_int_equal(
        fq_store_webhook_update(
            store, "acme", typed,
            &(fq_webhook_spec_t){.types = feedback, .ntypes = 2, .set_types = true, .enabled = -1},
            &list),
        0);
    assert_string_equal(list.rows[0].event_types, "message.bounced,message.complained");
    assert_string_equal(list.rows[0].url, "https://other.example.net/h");
    fq_webhook_list_free(&list);
    s_refused(
        store,
        fq_store_webhook_update(
            store, "acme", typed,
            &(fq_webhook_spec_t){.types = unknown, .ntypes = 2, .set_types = true, .enabled = -1},
            &list),
        &list, FQ_EINVAL, "\"message.opened\"");
    assert_int_equal(fq_store_webhook_update(store, "acme", typed,
                                             &(fq_webhook_spec_t){.set_types = true, .enabled = -1},
                                             &list),
                     0);
    assert_null(list.rows[0].event_types);
    fq_webhook_list_free(&list);
    assert_int_equal(
        fq_store_webhook_update(store, "acme", typed, &(fq_webhook_spec_t){.enabled = 0}, &list),
        0);
    assert_false(list.rows[0].enabled);
    assert_null(list.rows[0].disabled_reason);
    assert_string_equal(list.rows[0].url, "https://other.example.net/h");
    fq_webhook_list_free(&list);
    s_get(store, "acme", typed, &list);
    assert_false(list.rows[0].enabled);
    fq_webhook_list_free(&list);
    assert_int_equal(
        fq_store_webhook_update(store, "acme", typed, &(fq_webhook_spec_t){.enabled = 1}, &list),
        0);
    assert_true(list.rows[0].enabled);
    fq_webhook_list_free(&list);

    //  Rotation: the old secret signs on for keep_s, or not at all
    char m[32];
    fq_test_param(m, sizeof m, made);
    now = (int64_t)time(NULL);
    assert_int_equal(fq_store_webhook_rotate(store, "acme", made, NULL, 3600, &list), 0);
    assert_int_equal(list.count, 1);
    assert_string_not_equal(list.rows[0].secret, made_secret);
    assert_null(fq_http_secret_problem(list.rows[0].secret));
    assert_true(llabs(list.rows[0].previous_until - (now + 3600)) <= 5);
    char rotated[128];
    snprintf(rotated, sizeof rotated, "%s", list.rows[0].secret);
    fq_webhook_list_free(&list);
    char *previous = fq_test_text(
        conn, "SELECT previous_secret FROM fairq.webhooks WHERE id = $1::bigint", 1, m);
    assert_non_null(previous);
    assert_string_equal(previous, made_secret);
    free(previous);
    s_get(store, "acme", made, &list);
    assert_string_equal(list.rows[0].secret, rotated);
    assert_true(list.rows[0].previous_until > now);
    fq_webhook_list_free(&list);
    assert_int_equal(fq_store_webhook_rotate(store, "acme", made, S_SECRET2, 0, &list), 0);
    assert_string_equal(list.rows[0].secret, S_SECRET2);
    assert_int_equal(list.rows[0].previous_until, 0);
    fq_webhook_list_free(&list);
    assert_int_equal(fq_test_int(conn,
                                 "SELECT count(*) FROM fairq.webhooks WHERE id = $1::bigint"
                                 " AND previous_secret IS NULL AND previous_until IS NULL",
                                 1, m),
                     1);

    //  Delete: gone for every call
    assert_int_equal(fq_store_webhook_delete(store, "acme", made), 0);
    snprintf(words, sizeof words, "webhook %lld does not exist", (long long)made);
    s_refused(store, fq_store_webhooks(store, "acme", made, &list), &list, FQ_ENOTFOUND, words);
    s_refused(store, fq_store_webhook_delete(store, "acme", made), NULL, FQ_ENOTFOUND, words);
    s_refused(store, fq_store_webhook_rotate(store, "acme", made, NULL, 0, &list), &list,
              FQ_ENOTFOUND, words);
    assert_int_equal(fq_store_webhooks(store, "acme", 0, &list), FQ_WEBHOOKS_PER_TENANT_MAX - 1);
    fq_webhook_list_free(&list);
    //  Which makes room for one more
    s_create(store, "acme", &(fq_webhook_spec_t){.url = S_URL});
    PQfinish(conn);
    fq_store_destroy(&store);
}

//  A batch in flight is signed by its endpoint's secrets as they are now
//  (a rotation signs it with both), and deleting the endpoint cancels it:
//  the request and its message are cancelled, without an event.
static void test_delete_cancels_batch(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    PGconn *conn = fq_test_connect(s_conninfo);
    int64_t tenant = s_tenant(conn, "flight");
    int64_t split =
        s_create(store, "flight", &(fq_webhook_spec_t){.url = S_URL, .secret = S_SECRET});
    int64_t unsplit = s_create(store, "flight", &(fq_webhook_spec_t){.url = S_URL "/2"});
    s_event(conn, tenant, 0, 0, "message.sent", "a@example.org", NULL);
    s_settle(conn);
    fq_webhook_feed_t feed = s_feed_default();
    assert_int_equal(s_feed(store, &feed), 2);
    int64_t request = s_last_batch(conn, split), other = s_last_batch(conn, unsplit);
    assert_true(request > 0 && other > 0 && request != other);
    fq_webhook_list_t list;
    s_get(store, "flight", split, &list);
    assert_int_equal(list.rows[0].batch_request, request);
    assert_int_equal(list.rows[0].batch_events, 1);
    fq_webhook_list_free(&list);
    int64_t message = s_split(store, conn, request);

    //  The dispatcher signs it with the endpoint's secret, and during a
    //  rotation with the previous one too
    fq_request_templates_t t;
    assert_int_equal(fq_store_request_templates(store, request, &t), 0);
    assert_string_equal(t.channel, "http");
    assert_string_equal(t.signing_secret, S_SECRET);
    assert_null(t.previous_secret);
    fq_request_templates_free(&t);
    assert_int_equal(fq_store_webhook_rotate(store, "flight", split, S_SECRET2, 600, &list), 0);
    fq_webhook_list_free(&list);
    assert_int_equal(fq_store_request_templates(store, request, &t), 0);
    assert_string_equal(t.signing_secret, S_SECRET2);
    assert_non_null(t.previous_secret);
    assert_string_equal(t.previous_secret, S_SECRET);
    fq_request_templates_free(&t);

    //  Deleted with its batch split: request and message cancelled
    assert_int_equal(fq_store_webhook_delete(store, "flight", split), 0);
    char r[32], m[32];
    fq_test_param(r, sizeof r, request);
    char *state = fq_test_text(conn,
                               "SELECT status || ' ' || cancelled || ' ' || failed || ' '"
                               " || (finished_at IS NOT NULL) FROM fairq.requests"
                               " WHERE id = $1::bigint",
                               1, r);
    assert_string_equal(state, "cancelled 1 0 true");
    free(state);
    state = fq_test_text(conn, "SELECT status::text FROM fairq.messages WHERE id = $1::bigint", 1,
                         fq_test_param(m, sizeof m, message));
    assert_string_equal(state, "cancelled");
    free(state);
    s_assert_no_events(conn, "SELECT $1::bigint", r);
    //  Deleted with its batch not split yet: the request is cancelled
    assert_int_equal(fq_store_webhook_delete(store, "flight", unsplit), 0);
    fq_test_param(r, sizeof r, other);
    state =
        fq_test_text(conn, "SELECT status::text FROM fairq.requests WHERE id = $1::bigint", 1, r);
    assert_string_equal(state, "cancelled");
    free(state);
    assert_int_equal(fq_store_webhooks(store, "flight", 0, &list), 0);
    fq_webhook_list_free(&list);
    //  Nothing left to feed
    assert_int_equal(s_feed(store, &feed), 0);
    PQfinish(conn);
    fq_store_destroy(&store);
}

//  ---------------------------------------------------------------------
//  The feed

//  A new endpoint gets what happens from now on, not its tenant's
//  history: the events committed before it was created are never fed.
static void test_new_endpoint_starts_now(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    PGconn *conn = fq_test_connect(s_conninfo);
    int64_t tenant = s_tenant(conn, "start");
    s_event(conn, tenant, 0, 0, "message.sent", "old1@example.org", NULL);
    s_event(conn, tenant, 0, 0, "message.dead", "old2@example.org", "550 no");
    s_settle(conn);
    int64_t webhook = s_create(store, "start", &(fq_webhook_spec_t){.url = S_URL});
    fq_webhook_list_t list;
    s_get(store, "start", webhook, &list);
    assert_int_equal(list.rows[0].backlog, 0);
    fq_webhook_list_free(&list);
    fq_webhook_feed_t feed = s_feed_default();
    assert_int_equal(s_feed(store, &feed), 0);
    assert_int_equal(s_feed(store, &feed), 0);
    assert_int_equal(s_batches(conn, webhook), 0);

    int64_t wanted[2];
    wanted[0] = s_event(conn, tenant, 0, 0, "message.sent", "new1@example.org", NULL);
    wanted[1] = s_event(conn, tenant, 0, 0, "request.done", NULL, NULL);
    s_get(store, "start", webhook, &list);
    assert_int_equal(list.rows[0].backlog, 2);
    fq_webhook_list_free(&list);
    s_settle(conn);
    assert_int_equal(s_feed(store, &feed), 1);
    int64_t ids[8];
    size_t n = s_batch_ids(conn, s_last_batch(conn, webhook), webhook, ids, 8);
    s_assert_ids(ids, n, wanted, 2);
    PQfinish(conn);
    fq_store_destroy(&store);
}

//  A tenant's endpoint gets its tenant's events, and only those, in
//  reading order, in batches of GET /v1/events' form, each an http
//  request to the endpoint's URL; one batch at a time: the next goes only
//  once the last was delivered, and starts where it ended.
static void test_feed_batches(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    PGconn *conn = fq_test_connect(s_conninfo);
    int64_t a = s_tenant(conn, "feeda"), b = s_tenant(conn, "feedb");
    int64_t wa = s_create(store, "feeda", &(fq_webhook_spec_t){.url = S_URL "/a?x=1"});
    int64_t wb = s_create(store, "feedb", &(fq_webhook_spec_t){.url = S_URL "/b"});
    fq_webhook_list_t list;
    s_get(store, "feeda", wa, &list);
    char secret[128];
    snprintf(secret, sizeof secret, "%s", list.rows[0].secret);
    fq_webhook_list_free(&list);

    //  Eight of A's events, every field in use, B's between them; two of
    //  A's committed in another order than their ids
    s_event(conn, a, 900011, 101, "message.sent", "ann@example.org", NULL);
    s_event(conn, b, 900021, 201, "message.sent", "bob@example.org", NULL);
    s_event(conn, a, 900011, 102, "message.deferred", "cy@example.org",
            "451 4.7.1 \"try\" later\n\tsee <https://x.example/é>");
    s_event(conn, a, 900011, 0, "request.split", NULL, NULL);
    s_event(conn, b, 900021, 202, "message.dead", "dan@example.org", "550 no such user");
    s_event(conn, a, 0, 0, "message.rejected", "not an address", "invalid address");
    PGconn *early = fq_test_connect(s_conninfo);
    fq_test_exec(early, "BEGIN", 0);
    PQclear(fq_test_query(early, "SELECT pg_current_xact_id()", 0));
    int64_t later = s_event(conn, a, 900012, 103, "message.bounced", "eve@example.org", "5.1.1");
    int64_t sooner = s_event(early, a, 900012, 104, "message.cancelled", "fay@example.org", NULL);
    fq_test_exec(early, "COMMIT", 0);
    PQfinish(early);
    assert_true(sooner > later);
    s_event(conn, b, 900022, 0, "request.done", NULL, NULL);
    s_event(conn, a, 900012, 105, "message.complained", "gus@example.org", "abuse");
    s_event(conn, a, 900011, 0, "request.done", NULL, NULL);
    s_event(conn, b, 900022, 203, "message.sent", "hal@example.org", NULL);
    int64_t order_a[16], order_b[16];
    size_t na = s_sql_ids(conn, a, order_a, 16), nb = s_sql_ids(conn, b, order_b, 16);
    assert_int_equal(na, 8);
    assert_int_equal(nb, 4);
    s_get(store, "feeda", wa, &list);
    assert_int_equal(list.rows[0].backlog, 8);
    fq_webhook_list_free(&list);

    //  One batch each, of 3
    s_settle(conn);
    fq_webhook_feed_t feed = s_feed_default();
    assert_int_equal(s_feed(store, &feed), 2);
    assert_int_equal(s_batches(conn, wa), 1);
    assert_int_equal(s_batches(conn, wb), 1);
    int64_t request = s_last_batch(conn, wa);
    char r[32];
    fq_test_param(r, sizeof r, request);
    char *row = fq_test_text(conn,
                             "SELECT concat_ws('|', tenant_id, channel, http_method, http_url,"
                             " http_body_format, total, webhook_id, status,"
                             " signing_secret IS NULL, http_headers IS NULL)"
                             " FROM fairq.requests WHERE id = $1::bigint",
                             1, r);
    char wanted_row[256];
    snprintf(wanted_row, sizeof wanted_row,
             "%lld|http|POST|" S_URL "/a?x=1|json|1|%lld|accepted|t|t", (long long)a,
             (long long)wa);
    assert_string_equal(row, wanted_row);
    free(row);
    //  Its one recipient is the endpoint
    char *to = fq_test_text(conn,
                            "SELECT recipients->0->>'to' FROM fairq.recipient_chunks"
                            " WHERE request_id = $1::bigint",
                            1, r);
    char wanted_to[64];
    snprintf(wanted_to, sizeof wanted_to, "webhook %lld", (long long)wa);
    assert_string_equal(to, wanted_to);
    free(to);
    s_get(store, "feeda", wa, &list);
    assert_int_equal(list.rows[0].batch_request, request);
    assert_int_equal(list.rows[0].batch_events, 3);
    assert_int_equal(list.rows[0].delivered, 0);
    assert_int_equal(list.rows[0].backlog, 8);
    fq_webhook_list_free(&list);

    //  The body: {"type": "fairq.events", "data": {"webhook": ID,
    //  "events": [...]}}, each event as GET /v1/events gives it
    json_t *events;
    json_t *root = s_body(conn, request, wa, &events);
    assert_int_equal(json_array_size(events), 3);
    s_assert_api_form(store, "feeda", events);
    json_decref(root);
    free(s_assert_renders(conn, request, secret));
    int64_t ids[16], got[16];
    size_t n = s_batch_ids(conn, request, wa, ids, 16);
    s_assert_ids(ids, n, order_a, 3);
    //  B's batch: B's events only
    n = s_batch_ids(conn, s_last_batch(conn, wb), wb, ids, 16);
    s_assert_ids(ids, n, order_b, 3);
    root = s_body(conn, s_last_batch(conn, wb), wb, &events);
    s_assert_api_form(store, "feedb", events);
    json_decref(root);

    //  Its batch in flight: nothing more, however often
    assert_int_equal(s_feed(store, &feed), 0);
    assert_int_equal(s_feed(store, &feed), 0);
    assert_int_equal(s_batches(conn, wa), 1);

    //  Delivered: the cursor moves past it and the next 3 go
    size_t count = s_batch_ids(conn, request, wa, got, 16);
    for (int batch = 1; batch <= 3; batch++) {
        s_deliver(store, conn, request);
        assert_int_equal(s_feed(store, &feed), batch < 3 ? 1 : 0);
        s_get(store, "feeda", wa, &list);
        fq_webhook_t *w = &list.rows[0];
        assert_int_equal(w->delivered, (int64_t)count);
        assert_int_equal(w->backlog, 8 - (int64_t)count);
        assert_int_equal(w->failures, 0);
        assert_true(llabs(w->last_success_at - (int64_t)time(NULL)) < 60);
        if (batch < 3) {
            assert_int_equal(s_batches(conn, wa), batch + 1);
            request = s_last_batch(conn, wa);
            assert_int_equal(w->batch_request, request);
            root = s_body(conn, request, wa, &events);
            s_assert_api_form(store, "feeda", events);
            json_decref(root);
            count += s_batch_ids(conn, request, wa, got + count, 16 - count);
        } else {
            assert_int_equal(w->batch_request, 0);
            assert_int_equal(s_batches(conn, wa), 3);
        }
        fq_webhook_list_free(&list);
    }
    //  Every one of A's events once, in reading order: the one committed
    //  first before the other, whatever their ids
    s_assert_ids(got, count, order_a, na);
    //  B's endpoint waits for its own batch still
    s_get(store, "feedb", wb, &list);
    assert_int_equal(list.rows[0].delivered, 0);
    assert_int_equal(list.rows[0].batch_request, s_last_batch(conn, wb));
    fq_webhook_list_free(&list);
    assert_int_equal(s_batches(conn, wb), 1);
    PQfinish(conn);
    fq_store_destroy(&store);
}

//  A row of message.sent events (0029: one ack batch of a request) goes
//  out in batches that end inside it: each batch starts at the event after
//  the last one delivered, none twice, none missed, and the backlog counts
//  events, not rows.
static void test_feed_splits_a_row_of_events(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    PGconn *conn = fq_test_connect(s_conninfo);
    int64_t tenant = s_tenant(conn, "rows");
    int64_t w = s_create(store, "rows", &(fq_webhook_spec_t){.url = S_URL "/rows"});
    char t[32];
    fq_test_exec(conn,
                 "INSERT INTO fairq.event_rows (tenant_id, request_id, type, message_ids,"
                 " recipients) SELECT $1::bigint, 900031, 'message.sent', array_agg(800 + g),"
                 " array_agg('r' || g || '@example.org') FROM generate_series(1, 7) g",
                 1, fq_test_param(t, sizeof t, tenant));
    s_event(conn, tenant, 900031, 0, "request.done", NULL, NULL);
    int64_t order[16], got[16];
    size_t n = s_sql_ids(conn, tenant, order, 16);
    assert_int_equal(n, 8);
    fq_webhook_list_t list;
    s_get(store, "rows", w, &list);
    assert_int_equal(list.rows[0].backlog, 8);
    fq_webhook_list_free(&list);

    s_settle(conn);
    fq_webhook_feed_t feed = s_feed_default();
    assert_int_equal(s_feed(store, &feed), 1);
    size_t count = 0;
    for (int batch = 1; batch <= 3; batch++) {
        int64_t request = s_last_batch(conn, w);
        json_t *events;
        json_t *root = s_body(conn, request, w, &events);
        s_assert_api_form(store, "rows", events);
        json_decref(root);
        count += s_batch_ids(conn, request, w, got + count, 16 - count);
        s_deliver(store, conn, request);
        assert_int_equal(s_feed(store, &feed), batch < 3 ? 1 : 0);
        s_get(store, "rows", w, &list);
        assert_int_equal(list.rows[0].delivered, (int64_t)count);
        assert_int_equal(list.rows[0].backlog, 8 - (int64_t)count);
        fq_webhook_list_free(&list);
    }
    s_assert_ids(got, count, order, n);
    PQfinish(conn);
    fq_store_destroy(&store);
}

//  An event of a transaction still open is never passed: the batch stops
//  before it (and before everything newer), and the next batch after its
//  commit starts with it.
static void test_feed_waits_for_open_transaction(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    PGconn *conn = fq_test_connect(s_conninfo);
    int64_t tenant = s_tenant(conn, "held");
    int64_t webhook = s_create(store, "held", &(fq_webhook_spec_t){.url = S_URL});
    int64_t first = s_event(conn, tenant, 0, 0, "message.sent", "a@example.org", NULL);
    s_settle(conn);
    PGconn *open = fq_test_connect(s_conninfo);
    fq_test_exec(open, "BEGIN", 0);
    int64_t held = s_event(open, tenant, 0, 0, "message.dead", "b@example.org", "550 no");
    int64_t newer = s_event(conn, tenant, 0, 0, "message.sent", "c@example.org", NULL);
    fq_webhook_feed_t feed = s_feed_default();
    assert_int_equal(s_feed(store, &feed), 1);
    int64_t ids[8];
    size_t n = s_batch_ids(conn, s_last_batch(conn, webhook), webhook, ids, 8);
    s_assert_ids(ids, n, &first, 1);
    s_deliver(store, conn, s_last_batch(conn, webhook));
    assert_int_equal(s_feed(store, &feed), 0);
    assert_int_equal(s_feed(store, &feed), 0);
    assert_int_equal(s_batches(conn, webhook), 1);
    fq_test_exec(open, "COMMIT", 0);
    PQfinish(open);
    s_settle(conn);
    assert_int_equal(s_feed(store, &feed), 1);
    n = s_batch_ids(conn, s_last_batch(conn, webhook), webhook, ids, 8);
    int64_t wanted[] = {held, newer};
    s_assert_ids(ids, n, wanted, 2);
    PQfinish(conn);
    fq_store_destroy(&store);
}

//  An endpoint gets only the types it wants: a batch holds the rare event
//  among many others, and the others alone never make a batch, though the
//  cursor walks past them (a scan at a time), so the backlog empties.
static void test_types_and_scan(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    PGconn *conn = fq_test_connect(s_conninfo);
    int64_t tenant = s_tenant(conn, "types");
    const char *const dead[] = {"message.dead"};
    int64_t webhook =
        s_create(store, "types", &(fq_webhook_spec_t){.url = S_URL, .types = dead, .ntypes = 1});
    char w[32];
    fq_test_param(w, sizeof w, webhook);
    for (int i = 0; i < 5; i++)
        s_event(conn, tenant, 900001, 10 + i, "message.sent", "s@example.org", NULL);
    int64_t the_dead = s_event(conn, tenant, 900001, 20, "message.dead", "d@example.org", "550 no");
    int64_t last = 0;
    for (int i = 0; i < 2; i++)
        last = s_event(conn, tenant, 900001, 30 + i, "message.sent", "s@example.org", NULL);
    fq_webhook_list_t list;
    s_get(store, "types", webhook, &list);
    assert_int_equal(list.rows[0].backlog, 1);
    assert_string_equal(list.rows[0].event_types, "message.dead");
    fq_webhook_list_free(&list);
    s_settle(conn);
    fq_webhook_feed_t feed = s_feed_default();
    assert_int_equal(s_feed(store, &feed), 1);
    int64_t ids[8];
    int64_t request = s_last_batch(conn, webhook);
    size_t n = s_batch_ids(conn, request, webhook, ids, 8);
    s_assert_ids(ids, n, &the_dead, 1);
    //  The batch ends past the unwanted events after it
    assert_int_equal(
        fq_test_int(conn, "SELECT batch_end_id FROM fairq.webhooks WHERE id = $1::bigint", 1, w),
        last);
    s_deliver(store, conn, request);
    assert_int_equal(s_feed(store, &feed), 0);
    s_get(store, "types", webhook, &list);
    assert_int_equal(list.rows[0].delivered, 1);
    assert_int_equal(list.rows[0].backlog, 0);
    assert_int_equal(list.rows[0].batch_request, 0);
    fq_webhook_list_free(&list);
    assert_int_equal(
        fq_test_int(conn, "SELECT cursor_id FROM fairq.webhooks WHERE id = $1::bigint", 1, w),
        last);

    //  Only unwanted events: no batch, the cursor past them
    for (int i = 0; i < 6; i++)
        last = s_event(conn, tenant, 900002, 40 + i, "message.sent", "s@example.org", NULL);
    s_settle(conn);
    assert_int_equal(s_feed(store, &feed), 0);
    assert_int_equal(
        fq_test_int(conn, "SELECT cursor_id FROM fairq.webhooks WHERE id = $1::bigint", 1, w),
        last);
    s_get(store, "types", webhook, &list);
    assert_int_equal(list.rows[0].backlog, 0);
    assert_int_equal(list.rows[0].delivered, 1);
    assert_int_equal(list.rows[0].batch_request, 0);
    fq_webhook_list_free(&list);
    assert_int_equal(s_batches(conn, webhook), 1);

    //  A scan of 2: each pass reads two and moves past them, until the
    //  wanted one comes
    int64_t sent[4];
    for (int i = 0; i < 4; i++)
        sent[i] = s_event(conn, tenant, 900003, 50 + i, "message.sent", "s@example.org", NULL);
    the_dead = s_event(conn, tenant, 900003, 60, "message.dead", "d@example.org", "554 gone");
    s_settle(conn);
    feed.scan = 2;
    assert_int_equal(s_feed(store, &feed), 0);
    assert_int_equal(
        fq_test_int(conn, "SELECT cursor_id FROM fairq.webhooks WHERE id = $1::bigint", 1, w),
        sent[1]);
    assert_int_equal(s_feed(store, &feed), 0);
    assert_int_equal(
        fq_test_int(conn, "SELECT cursor_id FROM fairq.webhooks WHERE id = $1::bigint", 1, w),
        sent[3]);
    assert_int_equal(s_feed(store, &feed), 1);
    n = s_batch_ids(conn, s_last_batch(conn, webhook), webhook, ids, 8);
    s_assert_ids(ids, n, &the_dead, 1);
    PQfinish(conn);
    fq_store_destroy(&store);
}

//  A batch that dies counts a failure with the endpoint's answer and
//  backs off (doubling up to the cap); the same events go again after;
//  an endpoint failing too long is disabled with why, and enabling it
//  forgets its failures and sends the same events at once. A retry's
//  error shows on the endpoint while its batch is still under way.
static void test_failures(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    PGconn *conn = fq_test_connect(s_conninfo);
    int64_t tenant = s_tenant(conn, "fail");
    int64_t webhook = s_create(store, "fail", &(fq_webhook_spec_t){.url = S_URL});
    char w[32];
    fq_test_param(w, sizeof w, webhook);
    int64_t wanted[2];
    wanted[0] = s_event(conn, tenant, 0, 0, "message.sent", "a@example.org", NULL);
    wanted[1] = s_event(conn, tenant, 0, 0, "message.dead", "b@example.org", "550 no");
    s_settle(conn);
    fq_webhook_feed_t feed = s_feed_default();
    assert_int_equal(s_feed(store, &feed), 1);
    int64_t first = s_last_batch(conn, webhook);
    s_fail(store, conn, first, "503 down");

    //  The failure counted, the next try 40 s away (base_ms)
    assert_int_equal(s_feed(store, &feed), 0);
    int64_t now = (int64_t)time(NULL);
    fq_webhook_list_t list;
    s_get(store, "fail", webhook, &list);
    fq_webhook_t *h = &list.rows[0];
    assert_int_equal(h->failures, 1);
    assert_non_null(h->last_error);
    assert_string_equal(h->last_error, "503 down");
    assert_true(h->failing_since > 0 && llabs(h->failing_since - now) < 60);
    assert_true(llabs(h->last_error_at - now) < 60);
    if (llabs(h->next_attempt_at - (now + 40)) > 3)
        fail_msg("next attempt in %lld s, wanted 40", (long long)(h->next_attempt_at - now));
    assert_int_equal(h->batch_request, 0);
    assert_true(h->enabled);
    assert_int_equal(h->delivered, 0);
    assert_int_equal(h->backlog, 2);
    int64_t since = h->failing_since;
    fq_webhook_list_free(&list);
    //  Nothing before then
    assert_int_equal(s_feed(store, &feed), 0);
    assert_int_equal(s_batches(conn, webhook), 1);

    //  Then the same events again; a second failure waits twice as long,
    //  but no longer than cap_ms (60 s)
    fq_test_exec(conn, "UPDATE fairq.webhooks SET next_attempt_at = now() WHERE id = $1::bigint", 1,
                 w);
    assert_int_equal(s_feed(store, &feed), 1);
    int64_t ids[8];
    int64_t second = s_last_batch(conn, webhook);
    size_t n = s_batch_ids(conn, second, webhook, ids, 8);
    s_assert_ids(ids, n, wanted, 2);
    s_fail(store, conn, second, "503 down");
    assert_int_equal(s_feed(store, &feed), 0);
    now = (int64_t)time(NULL);
    s_get(store, "fail", webhook, &list);
    h = &list.rows[0];
    assert_int_equal(h->failures, 2);
    assert_int_equal(h->failing_since, since);
    if (llabs(h->next_attempt_at - (now + 60)) > 3)
        fail_msg("next attempt in %lld s, wanted 60", (long long)(h->next_attempt_at - now));
    fq_webhook_list_free(&list);

    //  Failing for longer than disable_after_s: disabled, with why
    fq_test_exec(conn,
                 "UPDATE fairq.webhooks SET next_attempt_at = now(),"
                 " failing_since = date_trunc('second', now()) - interval '10 s'"
                 " WHERE id = $1::bigint",
                 1, w);
    char *failing = fq_test_text(
        conn,
        "SELECT to_char(failing_since AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')"
        " FROM fairq.webhooks WHERE id = $1::bigint",
        1, w);
    assert_int_equal(s_feed(store, &feed), 1);
    int64_t third = s_last_batch(conn, webhook);
    s_fail(store, conn, third, "503 down");
    feed.disable_after_s = 1;
    assert_int_equal(s_feed(store, &feed), 0);
    s_get(store, "fail", webhook, &list);
    h = &list.rows[0];
    assert_false(h->enabled);
    assert_int_equal(h->failures, 3);
    assert_non_null(h->disabled_reason);
    char reason[128];
    snprintf(reason, sizeof reason, "failing since %s: 503 down", failing);
    assert_string_equal(h->disabled_reason, reason);
    free(failing);
    fq_webhook_list_free(&list);
    //  Disabled, it gets nothing, even when its back-off is over
    fq_test_exec(conn,
                 "UPDATE fairq.webhooks SET next_attempt_at = now() - interval '1 s'"
                 " WHERE id = $1::bigint",
                 1, w);
    feed.disable_after_s = 3600;
    assert_int_equal(s_feed(store, &feed), 0);
    assert_int_equal(s_batches(conn, webhook), 3);

    //  Enabled again: its failures forgotten, the same events at once
    assert_int_equal(
        fq_store_webhook_update(store, "fail", webhook, &(fq_webhook_spec_t){.enabled = 1}, &list),
        0);
    h = &list.rows[0];
    assert_true(h->enabled);
    assert_null(h->disabled_reason);
    assert_int_equal(h->failures, 0);
    assert_int_equal(h->failing_since, 0);
    assert_true(h->next_attempt_at <= (int64_t)time(NULL) + 1);
    fq_webhook_list_free(&list);
    assert_int_equal(s_feed(store, &feed), 1);
    int64_t fourth = s_last_batch(conn, webhook);
    n = s_batch_ids(conn, fourth, webhook, ids, 8);
    s_assert_ids(ids, n, wanted, 2);

    //  Under way, a retry's error shows on the endpoint
    int64_t message = s_split(store, conn, fourth);
    fq_nack_t nack = {.id = message, .error = "429 slow down"};
    assert_int_equal(fq_store_nack_batch(store, &nack, 1, &(fq_retry_policy_t){1000, 1000, NULL}),
                     1);
    assert_int_equal(s_feed(store, &feed), 0);
    s_get(store, "fail", webhook, &list);
    h = &list.rows[0];
    assert_string_equal(h->last_error, "429 slow down");
    assert_true(h->failing_since > 0);
    assert_int_equal(h->batch_request, fourth);
    assert_int_equal(h->failures, 0);
    fq_webhook_list_free(&list);
    //  Then delivered: the cursor moves, the failing is over
    assert_int_equal(fq_store_ack_batch(store, &message, 1), 1);
    assert_true(fq_store_finish_requests(store, 100) >= 1);
    assert_int_equal(s_feed(store, &feed), 0);
    s_get(store, "fail", webhook, &list);
    h = &list.rows[0];
    assert_int_equal(h->delivered, 2);
    assert_int_equal(h->backlog, 0);
    assert_int_equal(h->failing_since, 0);
    assert_int_equal(h->failures, 0);
    assert_int_equal(h->batch_request, 0);
    assert_true(h->last_success_at > 0);
    fq_webhook_list_free(&list);
    //  None of the batches wrote an event of its own
    s_assert_no_events(conn, "SELECT id FROM fairq.requests WHERE webhook_id = $1::bigint", w);
    PQfinish(conn);
    fq_store_destroy(&store);
}

//  Events whose text holds template braces are fed all the same (the
//  batch's body is a template, and a "{{" would open a tag), and the
//  endpoint reads them back unchanged.
static void test_template_braces(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    PGconn *conn = fq_test_connect(s_conninfo);
    int64_t tenant = s_tenant(conn, "tmpl");
    int64_t webhook = s_create(store, "tmpl", &(fq_webhook_spec_t){.url = S_URL});
    static const char *const details[] = {"{{x}} {{{y}}} }}", "{{", "{{{{{", "\\{{ \"{{\" {{#if}}",
                                          "}}{{"};
    static const char *const recipients[] = {"a{{b}}@example.org", "{{{", "c@example.org", "{{",
                                             "x}}{{y"};
    enum { N = sizeof details / sizeof *details };
    for (int i = 0; i < N; i++)
        s_event(conn, tenant, 0, 0, "message.dead", recipients[i], details[i]);
    s_settle(conn);
    fq_webhook_feed_t feed = s_feed_default();
    feed.batch = 10;
    assert_int_equal(s_feed(store, &feed), 1);
    int64_t request = s_last_batch(conn, webhook);
    json_t *events;
    json_t *root = s_body(conn, request, webhook, &events);
    assert_int_equal(json_array_size(events), N);
    for (int i = 0; i < N; i++) {
        json_t *e = json_array_get(events, (size_t)i);
        assert_string_equal(json_string_value(json_object_get(e, "detail")), details[i]);
        assert_string_equal(json_string_value(json_object_get(e, "recipient")), recipients[i]);
    }
    s_assert_api_form(store, "tmpl", events);
    json_decref(root);
    //  And what the endpoint receives, once rendered, reads the same
    fq_webhook_list_t list;
    s_get(store, "tmpl", webhook, &list);
    char *rendered = s_assert_renders(conn, request, list.rows[0].secret);
    fq_webhook_list_free(&list);
    json_t *parsed = json_loads(rendered, 0, NULL);
    free(rendered);
    assert_non_null(parsed);
    events = json_object_get(json_object_get(parsed, "data"), "events");
    for (int i = 0; i < N; i++)
        assert_string_equal(
            json_string_value(json_object_get(json_array_get(events, (size_t)i), "detail")),
            details[i]);
    json_decref(parsed);
    PQfinish(conn);
    fq_store_destroy(&store);
}

//  A batch's bytes are counted as its body will hold them, "{{" already
//  written as "{\u007b" (up to 3.5 times the bytes): events whose text
//  is mostly braces still make a body within the http channel's 256 KiB
//  (FQ_HTTP_BODY_MAX), and another tenant's endpoint gets its batch in
//  the same pass. With fairqd's own settings (batch 100, bytes
//  FQ_WEBHOOK_BATCH_BYTES), a hundred events of 2000 '{' each would
//  otherwise make the submit fail.
static void test_braces_stay_within_body_max(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    PGconn *conn = fq_test_connect(s_conninfo);
    int64_t tenant = s_tenant(conn, "braces");
    int64_t webhook = s_create(store, "braces", &(fq_webhook_spec_t){.url = S_URL});
    char t[32];
    fq_test_exec(conn,
                 "INSERT INTO fairq.events (tenant_id, type, recipient, detail)"
                 " SELECT $1::bigint, 'message.dead', 'r' || g || '@example.org', repeat('{', 2000)"
                 " FROM generate_series(1, 100) g",
                 1, fq_test_param(t, sizeof t, tenant));
    //  Another tenant's endpoint, with an event of its own
    int64_t bystander = s_create(store, "bystander", &(fq_webhook_spec_t){.url = S_URL});
    s_event(conn, s_tenant(conn, "bystander"), 0, 0, "message.sent", "b@example.org", NULL);
    s_settle(conn);
    fq_webhook_feed_t feed = s_feed_default();
    feed.batch = 100;
    int rc = fq_store_webhooks_feed(store, &feed);
    if (rc < 0)
        fail_msg("the feed failed on events of braces: %s (%s)", fq_store_error(store),
                 fq_err_name(rc));
    assert_int_equal(rc, 2);
    assert_int_equal(s_batches(conn, bystander), 1);
    char r[32];
    assert_true(fq_test_int(conn,
                            "SELECT octet_length(http_body) FROM fairq.requests"
                            " WHERE id = $1::bigint",
                            1, fq_test_param(r, sizeof r, s_last_batch(conn, webhook))) <=
                FQ_HTTP_BODY_MAX);
    PQfinish(conn);
    fq_store_destroy(&store);
}

//  An endpoint whose batch cannot be made (here a URL broken by SQL
//  behind the API's back: a tag that never closes) fails alone: it shows
//  why and backs off, and another tenant's endpoint gets its batch in the
//  same pass.
static void test_one_broken_endpoint_fails_alone(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    PGconn *conn = fq_test_connect(s_conninfo);
    int64_t broken_tenant = s_tenant(conn, "broken"), fine_tenant = s_tenant(conn, "fine");
    int64_t broken = s_create(store, "broken", &(fq_webhook_spec_t){.url = S_URL});
    int64_t fine = s_create(store, "fine", &(fq_webhook_spec_t){.url = S_URL});
    char b[32];
    fq_test_exec(conn, "UPDATE fairq.webhooks SET url = 'https://hooks.example/{{' WHERE id = $1",
                 1, fq_test_param(b, sizeof b, broken));
    s_event(conn, broken_tenant, 0, 0, "message.sent", "a@example.org", NULL);
    s_event(conn, fine_tenant, 0, 0, "message.sent", "b@example.org", NULL);
    s_settle(conn);
    fq_webhook_feed_t feed = s_feed_default();
    assert_int_equal(s_feed(store, &feed), 1);
    assert_int_equal(s_batches(conn, fine), 1);
    assert_int_equal(s_batches(conn, broken), 0);
    fq_webhook_list_t list;
    s_get(store, "broken", broken, &list);
    assert_int_equal(list.rows[0].failures, 1);
    assert_non_null(list.rows[0].last_error);
    assert_non_null(strstr(list.rows[0].last_error, "could not make a batch"));
    assert_true(list.rows[0].failing_since > 0);
    assert_int_equal(list.rows[0].backlog, 1);
    fq_webhook_list_free(&list);
    PQfinish(conn);
    fq_store_destroy(&store);
}

//  A batch carries about bytes of events at most, but always its first
//  event, however large.
static void test_batch_bytes(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    PGconn *conn = fq_test_connect(s_conninfo);
    int64_t tenant = s_tenant(conn, "bytes");
    int64_t webhook = s_create(store, "bytes", &(fq_webhook_spec_t){.url = S_URL});
    char large[401];
    memset(large, 'x', 400);
    large[400] = 0;
    int64_t big[3];
    for (int i = 0; i < 3; i++)
        big[i] = s_event(conn, tenant, 0, 0, "message.dead", "r@example.org", large);
    s_settle(conn);
    fq_webhook_feed_t feed = s_feed_default();
    feed.batch = 10;
    feed.bytes = 500;
    int64_t ids[8];
    for (int i = 0; i < 3; i++) {
        assert_int_equal(s_feed(store, &feed), 1);
        int64_t request = s_last_batch(conn, webhook);
        size_t n = s_batch_ids(conn, request, webhook, ids, 8);
        s_assert_ids(ids, n, &big[i], 1);
        s_deliver(store, conn, request);
    }
    assert_int_equal(s_feed(store, &feed), 0);

    //  The limit is inclusive: two small events of exactly bytes go together
    int64_t small[5];
    for (int i = 0; i < 5; i++)
        small[i] = s_event(conn, tenant, 0, 0, "message.sent", "s@example.org", NULL);
    char a[32], b[32];
    int64_t two =
        fq_test_int(conn,
                    "SELECT sum(octet_length(fairq.event_json(e, 'bytes')::text))"
                    " FROM fairq.events e WHERE id IN ($1::bigint, $2::bigint)",
                    2, fq_test_param(a, sizeof a, small[0]), fq_test_param(b, sizeof b, small[1]));
    s_settle(conn);
    feed.bytes = (int)two;
    assert_int_equal(s_feed(store, &feed), 1);
    int64_t request = s_last_batch(conn, webhook);
    size_t n = s_batch_ids(conn, request, webhook, ids, 8);
    s_assert_ids(ids, n, small, 2);
    s_deliver(store, conn, request);
    //  One byte less: one event
    feed.bytes = (int)two - 1;
    assert_int_equal(s_feed(store, &feed), 1);
    request = s_last_batch(conn, webhook);
    n = s_batch_ids(conn, request, webhook, ids, 8);
    s_assert_ids(ids, n, &small[2], 1);
    fq_webhook_list_t list;
    s_get(store, "bytes", webhook, &list);
    assert_int_equal(list.rows[0].batch_events, 1);
    assert_int_equal(list.rows[0].delivered, 5);
    fq_webhook_list_free(&list);
    PQfinish(conn);
    fq_store_destroy(&store);
}

//  A batch reports nothing itself: its split, ack and finish write no
//  event (the next batch would carry it, and so on for ever), while a
//  mail request's do; the next batch carries the mail's events only.
static void test_batch_writes_no_events(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    PGconn *conn = fq_test_connect(s_conninfo);
    int64_t tenant = s_tenant(conn, "acks");
    int64_t webhook = s_create(store, "acks", &(fq_webhook_spec_t){.url = S_URL});
    int64_t first = s_event(conn, tenant, 0, 0, "message.sent", "a@example.org", NULL);
    s_settle(conn);
    fq_webhook_feed_t feed = s_feed_default();
    assert_int_equal(s_feed(store, &feed), 1);
    int64_t batch = s_last_batch(conn, webhook);
    int64_t batch_message = s_split(store, conn, batch);
    //  Its message's recipient is the endpoint
    char bm[32], wanted_to[64];
    char *to = fq_test_text(conn, "SELECT recipient FROM fairq.messages WHERE id = $1::bigint", 1,
                            fq_test_param(bm, sizeof bm, batch_message));
    snprintf(wanted_to, sizeof wanted_to, "webhook %lld", (long long)webhook);
    assert_string_equal(to, wanted_to);
    free(to);

    //  A mail request of the same tenant
    fq_submit_t req = {.tenant = "acks",
                       .from = "news@acks.example",
                       .subject = "Hi",
                       .body = "Hello",
                       .recipients_json = "[{\"to\": \"ann@example.org\"}]"};
    int64_t mail = fq_test_submit_split(store, &req, NULL, 0);
    char m[32];
    int64_t mail_message =
        fq_test_int(conn, "SELECT id FROM fairq.messages WHERE request_id = $1::bigint", 1,
                    fq_test_param(m, sizeof m, mail));
    int64_t acked[] = {batch_message, mail_message};
    assert_int_equal(fq_store_ack_batch(store, acked, 2), 2);
    assert_true(fq_store_finish_requests(store, 100) >= 2);
    char b[32], q[32];
    fq_test_param(b, sizeof b, batch);
    fq_test_param(q, sizeof q, mail);
    char *status = fq_test_text(conn,
                                "SELECT string_agg(status::text || ' ' || sent, ',' ORDER BY id)"
                                " FROM fairq.requests WHERE id IN ($1::bigint, $2::bigint)",
                                2, b, q);
    assert_string_equal(status, "done 1,done 1");
    free(status);
    //  The batch's: none; the mail's: split, sent, done
    s_assert_no_events(conn, "SELECT $1::bigint", b);
    char *types = fq_test_text(conn,
                               "SELECT string_agg(type::text, ',' ORDER BY txid, id)"
                               " FROM fairq.events WHERE request_id = $1::bigint",
                               1, q);
    assert_string_equal(types, "request.split,message.sent,request.done");
    free(types);
    assert_int_equal(fq_test_int(conn,
                                 "SELECT count(*) FROM fairq.events WHERE message_id = $1::bigint"
                                 " AND type = 'message.sent'",
                                 1, fq_test_param(m, sizeof m, mail_message)),
                     1);

    //  The next batch: the mail's three events, after the cursor moved
    //  past the first batch
    s_settle(conn);
    assert_int_equal(s_feed(store, &feed), 1);
    fq_webhook_list_t list;
    s_get(store, "acks", webhook, &list);
    assert_int_equal(list.rows[0].delivered, 1);
    assert_int_equal(list.rows[0].batch_events, 3);
    fq_webhook_list_free(&list);
    json_t *events;
    json_t *root = s_body(conn, s_last_batch(conn, webhook), webhook, &events);
    assert_int_equal(json_array_size(events), 3);
    for (size_t i = 0; i < 3; i++) {
        json_t *e = json_array_get(events, i);
        assert_int_equal(json_integer_value(json_object_get(e, "request")), mail);
        assert_true(json_integer_value(json_object_get(e, "id")) != first);
    }
    json_decref(root);
    PQfinish(conn);
    fq_store_destroy(&store);
}

//  The rows of fairq.messages read so far, by any plan, as conn's backend
//  last reported (its own statements' counts flushed first).
static int64_t s_message_rows_read(PGconn *conn)
{
    fq_test_int(conn, "SELECT 1 FROM pg_stat_force_next_flush()", 0);
    return fq_test_int(conn,
                       "SELECT coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0)"
                       " FROM pg_stat_user_tables WHERE relid = 'fairq.messages'::regclass",
                       0);
}

//  A pass reads the message of each batch out by its request, not the
//  messages table: fairqd runs one every poll_ms, and the table holds
//  millions of rows. The join is forced to what the planner chose for the
//  pass of 0020 with fairq.webhooks never analyzed (a hash join over
//  every message, each second), and a sequential scan is kept out of the
//  lookup, which a table this small would invite.
static void test_pass_reads_only_batch_messages(void **unused)
{
    (void)unused;
    fq_store_t *store = fq_test_store(s_conninfo);
    PGconn *conn = fq_test_connect(s_conninfo);
    int64_t tenant = s_tenant(conn, "bystander");
    s_create(store, "bystander", &(fq_webhook_spec_t){.url = S_URL});
    s_event(conn, tenant, 0, 0, "message.sent", "a@example.org", NULL);
    s_settle(conn);
    fq_webhook_feed_t feed = s_feed_default();
    assert_int_equal(s_feed(store, &feed), 1); //  A batch out, not yet split
    int64_t messages = fq_test_int(conn, "SELECT count(*) FROM fairq.messages", 0);
    assert_true(messages > 10);
    fq_test_exec(conn, "SET enable_nestloop = off", 0);
    fq_test_exec(conn, "SET enable_seqscan = off", 0);
    int64_t before = s_message_rows_read(conn);
    char batch[16], bytes[16], scan[16], attempts[16], base[16], cap[16], disable[16];
    assert_int_equal(
        fq_test_int(conn,
                    "SELECT fairq.webhooks_feed($1::int, $2::int, $3::int, $4::int, $5::int,"
                    " $6::int, $7::int, NULL)",
                    7, fq_test_param(batch, sizeof batch, feed.batch),
                    fq_test_param(bytes, sizeof bytes, feed.bytes),
                    fq_test_param(scan, sizeof scan, feed.scan),
                    fq_test_param(attempts, sizeof attempts, feed.max_attempts),
                    fq_test_param(base, sizeof base, feed.base_ms),
                    fq_test_param(cap, sizeof cap, feed.cap_ms),
                    fq_test_param(disable, sizeof disable, feed.disable_after_s)),
        0);
    //  The batch's message at most (none yet: it is not split)
    int64_t read = s_message_rows_read(conn) - before;
    if (read > 1)
        fail_msg("a pass read %lld of %lld messages", (long long)read, (long long)messages);
    PQfinish(conn);
    fq_store_destroy(&store);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_crud, s_teardown),
        cmocka_unit_test_teardown(test_delete_cancels_batch, s_teardown),
        cmocka_unit_test_teardown(test_new_endpoint_starts_now, s_teardown),
        cmocka_unit_test_teardown(test_feed_batches, s_teardown),
        cmocka_unit_test_teardown(test_feed_splits_a_row_of_events, s_teardown),
        cmocka_unit_test_teardown(test_feed_waits_for_open_transaction, s_teardown),
        cmocka_unit_test_teardown(test_types_and_scan, s_teardown),
        cmocka_unit_test_teardown(test_failures, s_teardown),
        cmocka_unit_test_teardown(test_template_braces, s_teardown),
        cmocka_unit_test_teardown(test_braces_stay_within_body_max, s_teardown),
        cmocka_unit_test_teardown(test_one_broken_endpoint_fails_alone, s_teardown),
        cmocka_unit_test_teardown(test_batch_bytes, s_teardown),
        cmocka_unit_test_teardown(test_batch_writes_no_events, s_teardown),
        cmocka_unit_test_teardown(test_pass_reads_only_batch_messages, s_teardown),
    };
    return cmocka_run_group_tests(tests, s_group_setup, s_group_teardown);
}
