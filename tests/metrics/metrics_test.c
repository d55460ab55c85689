/*  metrics_test.c — fairqd's figures, as the actors record them and
    GET /metrics shows them.

    Actors record into a batch of their own (fq_metrics_batch_*) and flush
    it; the HTTP server reads a tenant's live figures and renders the whole
    exposition, given the tenants' figures it read from the database. No
    database here: the tenant list is built by hand, as the store would
    fill it.

    Run with --exposition, the program prints a rendered exposition full of
    figures instead, for the ctest that parses it with the Prometheus
    client's own parser (tests/actors/CMakeLists.txt). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "fq_metrics.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  Tenant ids as the database would number them.
#define S_ACME  1
#define S_BETA  2
#define S_GAMMA 3

//  A request of acme's and one of beta's.
#define S_REQUEST_ACME 11
#define S_REQUEST_BETA 21

//  Departed senders fq_metrics keeps on show (S_SENDERS_GONE_MAX there).
#define S_SENDERS_GONE_MAX 64

//  Milliseconds in a second, for the fake clock.
#define S_SECOND_MS 1000

//  Asserts that text holds line as a whole line.
static void s_assert_line(const char *text, const char *line)
{
    size_t len = strlen(line);
    for (const char *at = strstr(text, line); at; at = strstr(at + 1, line))
        if ((at == text || at[-1] == '\n') && at[len] == '\n')
            return;
    print_error("missing line: %s\nin:\n%s\n", line, text);
    fail();
}

//  Asserts that no line of text starts with prefix.
static void s_assert_no_line(const char *text, const char *prefix)
{
    for (const char *at = strstr(text, prefix); at; at = strstr(at + 1, prefix))
        if (at == text || at[-1] == '\n') {
            print_error("unexpected line: %.*s\n", (int)strcspn(at, "\n"), at);
            fail();
        }
}

static size_t s_count(const char *text, const char *what)
{
    size_t n = 0;
    for (const char *at = strstr(text, what); at; at = strstr(at + 1, what))
        n++;
    return n;
}

//  The tenants as fq_store_tenant_list gives them: acme and beta.
static fq_tenant_info_t s_rows[] = {
    {.id = S_ACME,
     .name = "acme",
     .weight = 1,
     .open_requests = 2,
     .depth = 1500,
     .failed = 3,
     .unsplit = 40,
     .oldest_pending_s = 42,
     .send_rate_count = 5,
     .send_rate_period_s = 60,
     .daily_quota = 1000},
    {.id = S_BETA, .name = "beta", .weight = 1},
};
static const fq_tenant_list_t s_tenants = {s_rows, sizeof s_rows / sizeof s_rows[0]};

static int64_t s_fake_now(void *arg)
{
    return *(const int64_t *)arg;
}

//  ---------------------------------------------------------------------
//  Counters, gauges and histograms

//  One request of acme's, as the pipeline would record it: the scheduler
//  takes it up, a splitter writes its rows, the dispatcher hands out four
//  messages and hears back, the store writes the answers.
static void s_record_acme(fq_metrics_t *metrics, uint64_t sender)
{
    fq_metrics_tenant_name(metrics, S_ACME, "acme");
    fq_metrics_batch_t *batch = fq_metrics_batch_new(metrics);
    assert_non_null(batch);
    fq_metrics_batch_submitted(batch, S_ACME, 10);
    fq_metrics_batch_split(batch, S_ACME, 8, 2);
    fq_metrics_batch_db(batch, FQ_METRICS_DB_SPLIT, 10, 1500, true);
    //  Two first attempts, 250 ms and 500 ms after the request was due,
    //  and two retries (not in the latency)
    fq_metrics_batch_dispatched(batch, S_ACME, S_REQUEST_ACME, sender, 250);
    fq_metrics_batch_dispatched(batch, S_ACME, S_REQUEST_ACME, sender, 500);
    fq_metrics_batch_dispatched(batch, S_ACME, S_REQUEST_ACME, sender, -1);
    fq_metrics_batch_dispatched(batch, S_ACME, S_REQUEST_ACME, sender, -1);
    fq_metrics_batch_sender(batch, sender, 4, 6);
    fq_metrics_batch_settled(batch, S_ACME, S_REQUEST_ACME, sender, FQ_METRICS_SENT);
    fq_metrics_batch_settled(batch, S_ACME, S_REQUEST_ACME, sender, FQ_METRICS_FAILED);
    fq_metrics_batch_settled(batch, S_ACME, S_REQUEST_ACME, sender, FQ_METRICS_DEAD);
    fq_metrics_batch_sender(batch, sender, 1, 9);
    //  A message that never renders
    fq_metrics_batch_unsendable(batch, S_ACME);
    fq_metrics_batch_db(batch, FQ_METRICS_DB_LOAD, 4, 250, true);
    fq_metrics_batch_db(batch, FQ_METRICS_DB_ACKS, 100, 2000, true);
    fq_metrics_batch_db(batch, FQ_METRICS_DB_NACKS, 2, 0, false);
    //  The store fell behind twice; 37 outcomes wait for it now, after 50
    fq_metrics_batch_store(batch, 50, 1, 12000);
    fq_metrics_batch_store(batch, 37, 2, 1500000);
    fq_metrics_batch_destroy(&batch); //  Flushes
    assert_null(batch);
}

static void test_counters_gauges_and_histograms(void **state)
{
    (void)state;
    fq_metrics_t *metrics = fq_metrics_new();
    assert_non_null(metrics);
    uint64_t sender = fq_metrics_sender_join(metrics, "smtp-1", "fq://sender-1/user/sender");
    assert_true(sender > 0);
    s_record_acme(metrics, sender);

    char *text = fq_metrics_render(metrics, NULL, &s_tenants);
    assert_non_null(text);
    s_assert_line(text, "fairq_database_up 1");
    s_assert_line(text, "fairq_tenant_submitted_total{tenant=\"acme\"} 10");
    s_assert_line(text, "fairq_tenant_split_total{tenant=\"acme\"} 8");
    s_assert_line(text, "fairq_tenant_rejected_total{tenant=\"acme\"} 2");
    s_assert_line(text, "fairq_tenant_dispatched_total{tenant=\"acme\"} 4");
    s_assert_line(text, "fairq_tenant_sent_total{tenant=\"acme\"} 1");
    s_assert_line(text, "fairq_tenant_failed_total{tenant=\"acme\"} 1");
    s_assert_line(text, "fairq_tenant_dead_total{tenant=\"acme\"} 2");
    s_assert_line(text, "fairq_tenant_requeued_total{tenant=\"acme\"} 0");
    s_assert_line(text, "fairq_tenant_inflight{tenant=\"acme\"} 1");
    s_assert_line(text, "fairq_requests_inflight 1");
    //  A tenant of the database never seen here: zero counters
    s_assert_line(text, "fairq_tenant_sent_total{tenant=\"beta\"} 0");
    //  The database's figures
    s_assert_line(text, "fairq_tenant_depth{tenant=\"acme\"} 1500");
    s_assert_line(text, "fairq_tenant_failed_waiting{tenant=\"acme\"} 3");
    s_assert_line(text, "fairq_tenant_unsplit{tenant=\"acme\"} 40");
    s_assert_line(text, "fairq_tenant_open_requests{tenant=\"acme\"} 2");
    s_assert_line(text, "fairq_tenant_oldest_pending_age_seconds{tenant=\"acme\"} 42");
    s_assert_line(text, "fairq_tenant_depth{tenant=\"beta\"} 0");
    //  Its send budget: 5/min is 0.0833... a second; beta has none
    s_assert_line(text, "fairq_tenant_daily_quota{tenant=\"acme\"} 1000");
    s_assert_line(text, "fairq_tenant_max_send_rate_per_second{tenant=\"acme\"} 0.0833333");
    s_assert_line(text, "fairq_tenant_max_send_rate_per_second{tenant=\"beta\"} 0");
    //  As the scheduler holds it: held, and what counts today
    fq_metrics_tenant_budget(metrics, S_ACME, true, 1000);
    //  Suppressed at split, and a hard bounce
    fq_metrics_batch_t *batch = fq_metrics_batch_new(metrics);
    assert_non_null(batch);
    fq_metrics_batch_suppressed(batch, S_ACME, 3);
    fq_metrics_batch_suppressed(batch, S_ACME, 0);
    fq_metrics_batch_bounced(batch, S_ACME);
    fq_metrics_batch_destroy(&batch);
    free(text);
    text = fq_metrics_render(metrics, NULL, &s_tenants);
    assert_non_null(text);
    s_assert_line(text, "fairq_tenant_send_held{tenant=\"acme\"} 1");
    s_assert_line(text, "fairq_tenant_sent_today{tenant=\"acme\"} 1000");
    s_assert_line(text, "fairq_tenant_send_held{tenant=\"beta\"} 0");
    s_assert_line(text, "fairq_tenant_suppressed_total{tenant=\"acme\"} 3");
    s_assert_line(text, "fairq_tenant_bounced_total{tenant=\"acme\"} 1");
    s_assert_line(text, "fairq_tenant_bounced_total{tenant=\"beta\"} 0");

    //  The latency: cumulative buckets, le inclusive
    s_assert_line(text, "# TYPE fairq_dispatch_latency_seconds histogram");
    s_assert_line(text, "fairq_dispatch_latency_seconds_bucket{tenant=\"acme\",le=\"0.1\"} 0");
    s_assert_line(text, "fairq_dispatch_latency_seconds_bucket{tenant=\"acme\",le=\"0.25\"} 1");
    s_assert_line(text, "fairq_dispatch_latency_seconds_bucket{tenant=\"acme\",le=\"0.5\"} 2");
    s_assert_line(text, "fairq_dispatch_latency_seconds_bucket{tenant=\"acme\",le=\"14400\"} 2");
    s_assert_line(text, "fairq_dispatch_latency_seconds_bucket{tenant=\"acme\",le=\"+Inf\"} 2");
    s_assert_line(text, "fairq_dispatch_latency_seconds_sum{tenant=\"acme\"} 0.75");
    s_assert_line(text, "fairq_dispatch_latency_seconds_count{tenant=\"acme\"} 2");
    s_assert_line(text, "fairq_dispatch_latency_seconds_count{tenant=\"beta\"} 0");

    //  The sender
    const char *labels = "{sender=\"smtp-1\",address=\"fq://sender-1/user/sender\"}";
    char line[256];
    const char *const expected[][2] = {
        {"fairq_sender_up", "1"},         {"fairq_sender_dispatched_total", "4"},
        {"fairq_sender_sent_total", "1"}, {"fairq_sender_failed_total", "1"},
        {"fairq_sender_dead_total", "1"}, {"fairq_sender_requeued_total", "0"},
        {"fairq_sender_inflight", "1"},   {"fairq_sender_credit", "9"},
    };
    for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++) {
        snprintf(line, sizeof line, "%s%s %s", expected[i][0], labels, expected[i][1]);
        s_assert_line(text, line);
    }
    s_assert_line(text, "fairq_senders_connected 1");

    //  The database's batches
    s_assert_line(text, "fairq_db_batch_rows_bucket{statement=\"acks\",le=\"50\"} 0");
    s_assert_line(text, "fairq_db_batch_rows_bucket{statement=\"acks\",le=\"100\"} 1");
    s_assert_line(text, "fairq_db_batch_rows_sum{statement=\"acks\"} 100");
    s_assert_line(text, "fairq_db_batch_seconds_bucket{statement=\"acks\",le=\"0.001\"} 0");
    s_assert_line(text, "fairq_db_batch_seconds_bucket{statement=\"acks\",le=\"0.0025\"} 1");
    s_assert_line(text, "fairq_db_batch_seconds_sum{statement=\"acks\"} 0.002");
    s_assert_line(text, "fairq_db_batch_rows_count{statement=\"load\"} 1");
    s_assert_line(text, "fairq_db_batch_rows_count{statement=\"split\"} 1");
    //  A failed batch is an error, not an observation
    s_assert_line(text, "fairq_db_batch_rows_count{statement=\"nacks\"} 0");
    s_assert_line(text, "fairq_db_errors_total{statement=\"nacks\"} 1");
    s_assert_line(text, "fairq_db_errors_total{statement=\"acks\"} 0");
    s_assert_line(text, "fairq_store_unwritten 37");
    s_assert_line(text, "fairq_store_waits_total 2");
    s_assert_line(text, "fairq_store_wait_seconds_total 1.500000");

    //  HELP and TYPE once per family; no actor families without a system
    assert_int_equal(s_count(text, "# TYPE fairq_tenant_sent_total counter\n"), 1);
    assert_int_equal(s_count(text, "# HELP fairq_tenant_sent_total "), 1);
    assert_int_equal(s_count(text, "# TYPE fairq_db_batch_rows histogram\n"), 1);
    s_assert_no_line(text, "fairq_actor_");
    free(text);
    fq_metrics_destroy(&metrics);
    assert_null(metrics);
    fq_metrics_destroy(&metrics); //  Safe twice
}

//  Records under a tenant id only (the scheduler knows no names) show once
//  the name is known, from the database or from an actor.
static void test_tenant_named_later(void **state)
{
    (void)state;
    fq_metrics_t *metrics = fq_metrics_new();
    fq_metrics_batch_t *batch = fq_metrics_batch_new(metrics);
    fq_metrics_batch_submitted(batch, S_GAMMA, 7);
    fq_metrics_batch_flush(batch);

    char *text = fq_metrics_render(metrics, NULL, NULL);
    assert_non_null(text);
    s_assert_no_line(text, "fairq_tenant_submitted_total{");
    free(text);

    fq_tenant_info_t gamma = {.id = S_GAMMA, .name = "gamma"};
    fq_tenant_list_t list = {&gamma, 1};
    text = fq_metrics_render(metrics, NULL, &list);
    s_assert_line(text, "fairq_tenant_submitted_total{tenant=\"gamma\"} 7");
    free(text);

    fq_metrics_tenant_name(metrics, S_GAMMA, "gamma");
    text = fq_metrics_render(metrics, NULL, NULL);
    s_assert_line(text, "fairq_tenant_submitted_total{tenant=\"gamma\"} 7");
    free(text);
    fq_metrics_batch_destroy(&batch);
    fq_metrics_destroy(&metrics);
}

//  ---------------------------------------------------------------------
//  The database away, and no metrics at all

static void test_database_down(void **state)
{
    (void)state;
    fq_metrics_t *metrics = fq_metrics_new();
    s_record_acme(metrics, 0);
    char *text = fq_metrics_render(metrics, NULL, NULL);
    assert_non_null(text);
    s_assert_line(text, "fairq_database_up 0");
    //  The database's gauges are left out, families and all
    assert_null(strstr(text, "fairq_tenant_depth"));
    assert_null(strstr(text, "fairq_tenant_oldest_pending_age_seconds"));
    //  What fairqd counted itself is still there
    s_assert_line(text, "fairq_tenant_sent_total{tenant=\"acme\"} 1");
    s_assert_line(text, "fairq_senders_connected 0");
    free(text);
    fq_metrics_destroy(&metrics);
}

static void test_null_is_harmless(void **state)
{
    (void)state;
    assert_null(fq_metrics_batch_new(NULL));
    fq_metrics_batch_t *batch = NULL;
    fq_metrics_batch_submitted(batch, S_ACME, 1);
    fq_metrics_batch_split(batch, S_ACME, 1, 0);
    fq_metrics_batch_dispatched(batch, S_ACME, S_REQUEST_ACME, 1, 0);
    fq_metrics_batch_settled(batch, S_ACME, S_REQUEST_ACME, 1, FQ_METRICS_SENT);
    fq_metrics_batch_unsendable(batch, S_ACME);
    fq_metrics_batch_sender(batch, 1, 0, 0);
    fq_metrics_batch_db(batch, FQ_METRICS_DB_ACKS, 1, 1, true);
    fq_metrics_batch_flush(batch);
    fq_metrics_batch_destroy(&batch);

    fq_metrics_t *metrics = NULL;
    fq_metrics_set_clock(metrics, NULL, NULL);
    fq_metrics_tenant_name(metrics, S_ACME, "acme");
    assert_int_equal(fq_metrics_sender_join(metrics, "s", "fq://s/user/sender"), 0);
    fq_metrics_sender_leave(metrics, 1);
    assert_int_equal(fq_metrics_request_inflight(metrics, S_REQUEST_ACME), 0);
    int64_t inflight = -1;
    double rate = -1;
    fq_metrics_tenant_live(metrics, "acme", &inflight, &rate);
    assert_int_equal(inflight, 0);
    assert_true(rate == 0);
    fq_metrics_destroy(&metrics);

    //  Rendered without metrics: only what the database and the system say
    char *text = fq_metrics_render(NULL, NULL, &s_tenants);
    assert_non_null(text);
    s_assert_line(text, "fairq_database_up 1");
    s_assert_line(text, "fairq_tenant_depth{tenant=\"acme\"} 1500");
    s_assert_line(text, "fairq_tenant_sent_total{tenant=\"acme\"} 0");
    free(text);
}

//  ---------------------------------------------------------------------
//  Label values from remote peers

static void test_hostile_sender_name(void **state)
{
    (void)state;
    fq_metrics_t *metrics = fq_metrics_new();
    //  A quote, a backslash, a newline, a brace and a byte that is not UTF-8
    uint64_t sender =
        fq_metrics_sender_join(metrics, "evil\"} 1\\\nx\xff\xc3\xa9", "fq://a\"b/user/sender");
    assert_true(sender > 0);
    char *text = fq_metrics_render(metrics, NULL, NULL);
    assert_non_null(text);
    s_assert_line(text, "fairq_sender_up{sender=\"evil\\\"} 1\\\\\\nx\xEF\xBF\xBD\xc3\xa9\","
                        "address=\"fq://a\\\"b/user/sender\"} 1");
    //  Every line is a comment or a sample of fairq's
    for (const char *line = text; *line; line = strchr(line, '\n') + 1)
        assert_true(*line == '#' || strncmp(line, "fairq_", strlen("fairq_")) == 0);
    free(text);

    //  A name too long is cut, never within a UTF-8 character
    char name[1024];
    memset(name, 'a', sizeof name);
    for (size_t i = 1; i + 1 < sizeof name; i += 2)
        memcpy(name + i, "\xc3\xa9", 2);
    name[sizeof name - 1] = '\0';
    assert_true(fq_metrics_sender_join(metrics, name, "fq://long/user/sender") > 0);
    text = fq_metrics_render(metrics, NULL, NULL);
    assert_null(strstr(text, "\xEF\xBF\xBD\",address=\"fq://long"));
    assert_null(strstr(text, name));
    free(text);
    fq_metrics_destroy(&metrics);
}

//  ---------------------------------------------------------------------
//  Live figures of the HTTP API

static void test_send_rate_over_the_window(void **state)
{
    (void)state;
    fq_metrics_t *metrics = fq_metrics_new();
    int64_t now = 1000 * S_SECOND_MS;
    fq_metrics_set_clock(metrics, s_fake_now, &now);
    fq_metrics_tenant_name(metrics, S_ACME, "acme");
    fq_metrics_batch_t *batch = fq_metrics_batch_new(metrics);

    //  30 acks now, 30 more 30 s later
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < 30; i++) {
            fq_metrics_batch_dispatched(batch, S_ACME, S_REQUEST_ACME, 0, -1);
            fq_metrics_batch_settled(batch, S_ACME, S_REQUEST_ACME, 0, FQ_METRICS_SENT);
        }
        fq_metrics_batch_flush(batch);
        if (round == 0)
            now += 30 * S_SECOND_MS;
    }
    int64_t inflight;
    double rate;
    fq_metrics_tenant_live(metrics, "acme", &inflight, &rate);
    assert_int_equal(inflight, 0);
    assert_true(rate == 1.0); //  60 acks in the last 60 s

    now += 31 * S_SECOND_MS; //  The first 30 are out of the window
    fq_metrics_tenant_live(metrics, "acme", &inflight, &rate);
    assert_true(rate == 0.5);

    now += 30 * S_SECOND_MS; //  All are
    fq_metrics_tenant_live(metrics, "acme", &inflight, &rate);
    assert_true(rate == 0);

    //  Only acks count; a tenant never seen has nothing
    fq_metrics_batch_dispatched(batch, S_ACME, S_REQUEST_ACME, 0, -1);
    fq_metrics_batch_dispatched(batch, S_ACME, S_REQUEST_ACME, 0, -1);
    fq_metrics_batch_settled(batch, S_ACME, S_REQUEST_ACME, 0, FQ_METRICS_FAILED);
    fq_metrics_batch_flush(batch);
    fq_metrics_tenant_live(metrics, "acme", &inflight, &rate);
    assert_int_equal(inflight, 1);
    assert_true(rate == 0);
    fq_metrics_tenant_live(metrics, "nobody", &inflight, &rate);
    assert_int_equal(inflight, 0);
    fq_metrics_batch_destroy(&batch);
    fq_metrics_destroy(&metrics);
}

static void test_request_inflight(void **state)
{
    (void)state;
    fq_metrics_t *metrics = fq_metrics_new();
    uint64_t sender = fq_metrics_sender_join(metrics, "s", "fq://s/user/sender");
    fq_metrics_batch_t *batch = fq_metrics_batch_new(metrics);
    fq_metrics_batch_dispatched(batch, S_ACME, S_REQUEST_ACME, sender, 0);
    fq_metrics_batch_dispatched(batch, S_ACME, S_REQUEST_ACME, sender, 0);
    fq_metrics_batch_dispatched(batch, S_BETA, S_REQUEST_BETA, sender, 0);
    //  Nothing shows before the flush
    assert_int_equal(fq_metrics_request_inflight(metrics, S_REQUEST_ACME), 0);
    fq_metrics_batch_flush(batch);
    assert_int_equal(fq_metrics_request_inflight(metrics, S_REQUEST_ACME), 2);
    assert_int_equal(fq_metrics_request_inflight(metrics, S_REQUEST_BETA), 1);

    fq_metrics_batch_settled(batch, S_ACME, S_REQUEST_ACME, sender, FQ_METRICS_SENT);
    fq_metrics_batch_flush(batch);
    assert_int_equal(fq_metrics_request_inflight(metrics, S_REQUEST_ACME), 1);
    //  Given back when its sender died, and forgotten when the dispatcher stops
    fq_metrics_batch_settled(batch, S_ACME, S_REQUEST_ACME, sender, FQ_METRICS_REQUEUED);
    fq_metrics_batch_settled(batch, S_BETA, S_REQUEST_BETA, sender, FQ_METRICS_RELEASED);
    fq_metrics_batch_flush(batch);
    assert_int_equal(fq_metrics_request_inflight(metrics, S_REQUEST_ACME), 0);
    assert_int_equal(fq_metrics_request_inflight(metrics, S_REQUEST_BETA), 0);

    //  The table holds only requests in flight: it does not grow
    for (int64_t request = 1000; request < 1000 + 3 * 1024; request++) {
        fq_metrics_batch_dispatched(batch, S_ACME, request, sender, 0);
        fq_metrics_batch_settled(batch, S_ACME, request, sender, FQ_METRICS_SENT);
    }
    fq_metrics_batch_flush(batch);
    char *text = fq_metrics_render(metrics, NULL, NULL);
    s_assert_line(text, "fairq_requests_inflight 0");
    free(text);
    //  A requeue is counted per tenant and sender; released is not
    fq_metrics_tenant_name(metrics, S_ACME, "acme");
    text = fq_metrics_render(metrics, NULL, NULL);
    s_assert_line(text, "fairq_tenant_requeued_total{tenant=\"acme\"} 1");
    s_assert_line(text, "fairq_tenant_inflight{tenant=\"acme\"} 0");
    s_assert_line(text,
                  "fairq_sender_requeued_total{sender=\"s\",address=\"fq://s/user/sender\"} 1");
    free(text);
    fq_metrics_batch_destroy(&batch);
    fq_metrics_destroy(&metrics);
}

//  ---------------------------------------------------------------------
//  Senders coming and going

static void test_senders_come_and_go(void **state)
{
    (void)state;
    fq_metrics_t *metrics = fq_metrics_new();
    uint64_t first = fq_metrics_sender_join(metrics, "s", "fq://s/user/sender");
    fq_metrics_batch_t *batch = fq_metrics_batch_new(metrics);
    fq_metrics_batch_dispatched(batch, S_ACME, S_REQUEST_ACME, first, 0);
    fq_metrics_batch_sender(batch, first, 1, 5);
    fq_metrics_batch_flush(batch);
    fq_metrics_sender_leave(metrics, first);
    //  A record of its gauges after it left changes nothing
    fq_metrics_batch_sender(batch, first, 1, 5);
    fq_metrics_batch_flush(batch);

    const char *labels = "{sender=\"s\",address=\"fq://s/user/sender\"}";
    char line[256];
    char *text = fq_metrics_render(metrics, NULL, NULL);
    s_assert_line(text, "fairq_senders_connected 0");
    snprintf(line, sizeof line, "fairq_sender_up%s 0", labels);
    s_assert_line(text, line);
    snprintf(line, sizeof line, "fairq_sender_credit%s 0", labels);
    s_assert_line(text, line);
    snprintf(line, sizeof line, "fairq_sender_dispatched_total%s 1", labels);
    s_assert_line(text, line);
    free(text);

    //  Back with the same name and address: its counters go on
    uint64_t again = fq_metrics_sender_join(metrics, "s", "fq://s/user/sender");
    assert_true(again == first);
    fq_metrics_batch_dispatched(batch, S_ACME, S_REQUEST_ACME, again, 0);
    fq_metrics_batch_flush(batch);
    text = fq_metrics_render(metrics, NULL, NULL);
    s_assert_line(text, "fairq_senders_connected 1");
    snprintf(line, sizeof line, "fairq_sender_dispatched_total%s 2", labels);
    s_assert_line(text, line);
    free(text);

    //  Senders that come under ever new names are not all kept
    for (int i = 0; i < 4 * S_SENDERS_GONE_MAX; i++) {
        char name[32];
        snprintf(name, sizeof name, "churn-%d", i);
        fq_metrics_sender_leave(metrics, fq_metrics_sender_join(metrics, name, "fq://c/user/x"));
    }
    text = fq_metrics_render(metrics, NULL, NULL);
    assert_true(s_count(text, "\nfairq_sender_up{") <= S_SENDERS_GONE_MAX + 1);
    s_assert_line(text, "fairq_senders_connected 1");
    free(text);
    fq_metrics_batch_destroy(&batch);
    fq_metrics_destroy(&metrics);
}

//  ---------------------------------------------------------------------
//  The actors' figures

static int s_idle_start(fq_ctx_t *ctx, void *args, void **state_p)
{
    (void)ctx;
    (void)args;
    *state_p = NULL;
    return 0;
}

static int s_idle_receive(fq_ctx_t *ctx, void *state, const fq_msg_t *msg)
{
    (void)ctx;
    (void)state;
    (void)msg;
    return 0;
}

static void s_idle_stop(fq_ctx_t *ctx, void *state)
{
    (void)ctx;
    (void)state;
}

static const fq_behaviour_t s_idle = {
    .name = "idle", .start = s_idle_start, .receive = s_idle_receive, .stop = s_idle_stop};

//  A system with one actor, /user/idle.
static fq_system_t *s_system(void)
{
    fq_system_config_t config = {.name = "metrics-test"};
    fq_system_t *sys = fq_system_new(&config);
    assert_non_null(sys);
    fq_spawn_opts_t opts = fq_spawn_opts_default();
    assert_int_equal(fq_system_spawn(sys, "idle", &s_idle, NULL, &opts), 0);
    return sys;
}

static void test_actor_figures(void **state)
{
    (void)state;
    fq_system_t *sys = s_system();
    fq_metrics_t *metrics = fq_metrics_new();
    char *text = fq_metrics_render(metrics, sys, &s_tenants);
    assert_non_null(text);
    s_assert_line(text, "# TYPE fairq_actor_mailbox_depth gauge");
    s_assert_line(text, "fairq_actor_mailbox_depth{actor=\"/user/idle\"} 0");
    s_assert_line(text, "fairq_actor_restarts_total{actor=\"/user/idle\"} 0");
    s_assert_line(text, "fairq_actor_failures_total{actor=\"/user/idle\"} 0");
    assert_non_null(strstr(text, "\nfairq_actor_handled_total{actor=\"/user/idle\"} "));
    s_assert_line(text, "fairq_dead_letters_total 0");
    free(text);

    //  Clients of threads that are not actors (HTTP requests) are left out
    fq_client_t *client = fq_client_new(sys);
    assert_non_null(client);
    text = fq_metrics_render(metrics, sys, NULL);
    assert_non_null(strstr(text, "{actor=\"/user/idle\"}"));
    assert_null(strstr(text, "/temp/"));
    free(text);
    fq_client_destroy(&client);
    fq_metrics_destroy(&metrics);
    fq_system_destroy(&sys);
}

//  ---------------------------------------------------------------------
//  Many threads at once

//  Recording threads (actors), messages each, and how often each flushes.
#define S_THREADS     4
#define S_ROUNDS      2000
#define S_FLUSH_EVERY 100

static void *s_recorder(void *arg)
{
    fq_metrics_batch_t *batch = fq_metrics_batch_new(arg);
    for (int i = 0; i < S_ROUNDS; i++) {
        fq_metrics_batch_dispatched(batch, S_ACME, S_REQUEST_ACME, 0, i);
        fq_metrics_batch_settled(batch, S_ACME, S_REQUEST_ACME, 0, FQ_METRICS_SENT);
        if (i % S_FLUSH_EVERY == 0)
            fq_metrics_batch_flush(batch);
    }
    fq_metrics_batch_destroy(&batch);
    return NULL;
}

static void test_threads(void **state)
{
    (void)state;
    fq_metrics_t *metrics = fq_metrics_new();
    fq_metrics_tenant_name(metrics, S_ACME, "acme");
    pthread_t threads[S_THREADS];
    for (int i = 0; i < S_THREADS; i++)
        assert_int_equal(pthread_create(&threads[i], NULL, s_recorder, metrics), 0);
    //  Meanwhile the HTTP side reads
    for (int i = 0; i < 50; i++) {
        free(fq_metrics_render(metrics, NULL, &s_tenants));
        int64_t inflight;
        fq_metrics_tenant_live(metrics, "acme", &inflight, NULL);
        assert_true(inflight >= 0);
    }
    for (int i = 0; i < S_THREADS; i++)
        pthread_join(threads[i], NULL);
    char *text = fq_metrics_render(metrics, NULL, &s_tenants);
    char line[128];
    snprintf(line, sizeof line, "fairq_tenant_sent_total{tenant=\"acme\"} %d",
             S_THREADS * S_ROUNDS);
    s_assert_line(text, line);
    s_assert_line(text, "fairq_tenant_inflight{tenant=\"acme\"} 0");
    free(text);
    fq_metrics_destroy(&metrics);
}

//  ---------------------------------------------------------------------
//  Destinations

//  google, throttled to half its rate, as the scheduler would say it.
static void s_record_google(fq_metrics_t *metrics)
{
    fq_metrics_destination(metrics, &(fq_metrics_destination_t){.name = "google",
                                                                .configured_per_s = 100,
                                                                .effective_per_s = 50,
                                                                .max_inflight = 20,
                                                                .ready = 7,
                                                                .inflight = 3,
                                                                .state = "throttled",
                                                                .sent = 1000,
                                                                .deferred = 4,
                                                                .throttled = 2});
}

static void test_destinations(void **state)
{
    (void)state;
    fq_metrics_t *metrics = fq_metrics_new();
    fq_metrics_destination_t live;
    char live_state[FQ_METRICS_STATE_SIZE];
    //  Not told yet: all 0, open
    assert_false(fq_metrics_destination_live(metrics, "google", &live, live_state));
    assert_string_equal(live.state, "open");
    assert_string_equal(live.name, "google");
    assert_int_equal(live.sent, 0);

    s_record_google(metrics);
    //  No limit at all, then suspended
    fq_metrics_destination(metrics, &(fq_metrics_destination_t){.name = "default",
                                                                .state = "suspended",
                                                                .suspended_for_ms = 1500,
                                                                .ready = 1});
    assert_true(fq_metrics_destination_live(metrics, "google", &live, live_state));
    assert_string_equal(live.state, "throttled");
    assert_true(live.effective_per_s == 50 && live.configured_per_s == 100);
    assert_int_equal(live.max_inflight, 20);
    assert_int_equal(live.ready, 7);
    assert_int_equal(live.inflight, 3);
    assert_int_equal(live.sent, 1000);
    assert_int_equal(live.deferred, 4);
    assert_int_equal(live.throttled, 2);

    char *text = fq_metrics_render(metrics, NULL, &s_tenants);
    assert_non_null(text);
    s_assert_line(text, "# TYPE fairq_destination_ready gauge");
    s_assert_line(text, "fairq_destination_ready{destination=\"google\"} 7");
    s_assert_line(text, "fairq_destination_inflight{destination=\"google\"} 3");
    s_assert_line(text, "fairq_destination_max_inflight{destination=\"google\"} 20");
    s_assert_line(text, "fairq_destination_configured_rate{destination=\"google\"} 100");
    s_assert_line(text, "fairq_destination_effective_rate{destination=\"google\"} 50");
    s_assert_line(text, "# TYPE fairq_destination_sent_total counter");
    s_assert_line(text, "fairq_destination_sent_total{destination=\"google\"} 1000");
    s_assert_line(text, "fairq_destination_deferred_total{destination=\"google\"} 4");
    s_assert_line(text, "fairq_destination_throttled_total{destination=\"google\"} 2");
    s_assert_line(text, "fairq_destination_state{destination=\"google\",state=\"open\"} 0");
    s_assert_line(text, "fairq_destination_state{destination=\"google\",state=\"throttled\"} 1");
    s_assert_line(text, "fairq_destination_state{destination=\"google\",state=\"suspended\"} 0");
    //  No limit is +Inf, never 0 (a destination that takes nothing)
    s_assert_line(text, "fairq_destination_configured_rate{destination=\"default\"} +Inf");
    s_assert_line(text, "fairq_destination_effective_rate{destination=\"default\"} +Inf");
    s_assert_line(text, "fairq_destination_max_inflight{destination=\"default\"} +Inf");
    s_assert_line(text, "fairq_destination_suspended_seconds{destination=\"default\"} 1.5");
    s_assert_line(text, "fairq_destination_state{destination=\"default\",state=\"suspended\"} 1");
    //  By name: default before google
    assert_true(strstr(text, "fairq_destination_ready{destination=\"default\"}") <
                strstr(text, "fairq_destination_ready{destination=\"google\"}"));
    free(text);

    //  Told again: the latest figures; a state this fairqd does not know
    //  still shows, as its own series
    fq_metrics_destination(
        metrics, &(fq_metrics_destination_t){.name = "google", .state = "probing", .sent = 1001});
    text = fq_metrics_render(metrics, NULL, NULL);
    s_assert_line(text, "fairq_destination_sent_total{destination=\"google\"} 1001");
    s_assert_line(text, "fairq_destination_state{destination=\"google\",state=\"probing\"} 1");
    s_assert_line(text, "fairq_destination_state{destination=\"google\",state=\"throttled\"} 0");
    free(text);

    //  Deleted: its series go, the others stay; forgetting one not there,
    //  or with no metrics, does nothing
    fq_metrics_destination_forget(metrics, "google");
    fq_metrics_destination_forget(metrics, "google");
    fq_metrics_destination_forget(NULL, "default");
    assert_false(fq_metrics_destination_live(metrics, "google", &live, live_state));
    text = fq_metrics_render(metrics, NULL, NULL);
    assert_null(strstr(text, "destination=\"google\""));
    s_assert_line(text, "fairq_destination_state{destination=\"default\",state=\"suspended\"} 1");
    free(text);

    //  NULL metrics, NULL figures: nothing happens
    fq_metrics_destination(NULL, &(fq_metrics_destination_t){.name = "x"});
    fq_metrics_destination(metrics, NULL);
    fq_metrics_destination(metrics, &(fq_metrics_destination_t){.name = NULL});
    assert_false(fq_metrics_destination_live(NULL, "google", &live, live_state));
    assert_string_equal(live_state, "open");
    fq_metrics_destroy(&metrics);
}

//  ---------------------------------------------------------------------
//  The tenants' rates of the last day (fq_store_rates.h)

//  acme's day: 2,000 delivered, 40 hard bounces (none refused at SMTP
//  time), 6 complaints; beta's: nothing delivered, two addresses that do
//  not exist; gamma: nothing at all.
static fq_tenant_rates_t s_rates_rows[] = {
    {.tenant_id = S_ACME,
     .name = "acme",
     .delivered = 2000,
     .bounces = 40,
     .complaints = 6,
     .unsubscribes = 3,
     .suppressions = 12},
    {.tenant_id = S_BETA, .name = "beta", .bounces = 2, .bounces_refused = 2, .suppressions = 2},
    {.tenant_id = S_GAMMA, .name = "gamma"},
};
static const fq_tenant_rates_list_t s_rates = {s_rates_rows,
                                               sizeof s_rates_rows / sizeof s_rates_rows[0]};

static void test_tenant_rates(void **state)
{
    (void)state;
    fq_metrics_t *metrics = fq_metrics_new();
    int64_t now = 5 * S_SECOND_MS;
    fq_metrics_set_clock(metrics, s_fake_now, &now);
    //  Never read: the families, no series, no age
    char *text = fq_metrics_render(metrics, NULL, &s_tenants);
    s_assert_line(text, "# TYPE fairq_tenant_bounce_rate gauge");
    s_assert_no_line(text, "fairq_tenant_bounce_rate{");
    s_assert_no_line(text, "fairq_tenant_rates_age_seconds");
    free(text);
    //  Due: the first caller reads, the second (a scrape at the same time)
    //  does not
    assert_true(fq_metrics_tenant_rates_due(metrics));
    assert_false(fq_metrics_tenant_rates_due(metrics));
    fq_metrics_tenant_rates(metrics, &s_rates);
    assert_false(fq_metrics_tenant_rates_due(metrics));
    now += 30 * S_SECOND_MS;
    text = fq_metrics_render(metrics, NULL, &s_tenants);
    s_assert_line(text, "fairq_tenant_delivered_24h{tenant=\"acme\"} 2000");
    s_assert_line(text, "fairq_tenant_bounces_24h{tenant=\"acme\"} 40");
    s_assert_line(text, "fairq_tenant_complaints_24h{tenant=\"acme\"} 6");
    s_assert_line(text, "fairq_tenant_unsubscribes_24h{tenant=\"acme\"} 3");
    s_assert_line(text, "fairq_tenant_suppressions{tenant=\"acme\"} 12");
    s_assert_line(text, "fairq_tenant_bounce_rate{tenant=\"acme\"} 0.02");
    s_assert_line(text, "fairq_tenant_complaint_rate{tenant=\"acme\"} 0.003");
    //  All that met a verdict bounced; no delivery, no complaint rate
    s_assert_line(text, "fairq_tenant_bounce_rate{tenant=\"beta\"} 1");
    s_assert_no_line(text, "fairq_tenant_complaint_rate{tenant=\"beta\"}");
    s_assert_line(text, "fairq_tenant_delivered_24h{tenant=\"gamma\"} 0");
    s_assert_no_line(text, "fairq_tenant_bounce_rate{tenant=\"gamma\"}");
    s_assert_line(text, "fairq_tenant_rates_age_seconds 30.000");
    free(text);
    //  A minute after the read, due again; a failed read keeps the figures
    //  and leaves them due
    now += 30 * S_SECOND_MS;
    assert_true(fq_metrics_tenant_rates_due(metrics));
    fq_metrics_tenant_rates(metrics, NULL);
    text = fq_metrics_render(metrics, NULL, &s_tenants);
    s_assert_line(text, "fairq_tenant_bounce_rate{tenant=\"acme\"} 0.02");
    s_assert_line(text, "fairq_tenant_rates_age_seconds 60.000");
    free(text);
    assert_true(fq_metrics_tenant_rates_due(metrics));
    fq_tenant_rates_list_t none = {0};
    fq_metrics_tenant_rates(metrics, &none);
    text = fq_metrics_render(metrics, NULL, &s_tenants);
    s_assert_no_line(text, "fairq_tenant_bounce_rate{");
    s_assert_line(text, "fairq_tenant_rates_age_seconds 0.000");
    free(text);
    //  Without metrics, nothing is ever due
    assert_false(fq_metrics_tenant_rates_due(NULL));
    fq_metrics_tenant_rates(NULL, &s_rates);
    fq_metrics_destroy(&metrics);
}

//  ---------------------------------------------------------------------
//  The errors of the failed and dead messages, read with the rates

static fq_error_count_t s_error_rows[] = {
    {.tenant = "acme",
     .destination = "google",
     .code = "550",
     .enhanced = "5.1.1",
     .example = "550 5.1.1 <a@gmail.com>: no such user",
     .count = 12,
     .failed = 2,
     .dead = 10},
    {.tenant = "beta",
     .destination = "default",
     .example = "connection refused",
     .count = 3,
     .dead = 3},
    {.tenant = "ev\"il", .destination = "default", .code = "503", .count = 1, .failed = 1},
};
static const fq_error_summary_t s_errors = {s_error_rows,
                                            sizeof s_error_rows / sizeof *s_error_rows};

static void test_message_errors(void **state)
{
    (void)state;
    fq_metrics_t *metrics = fq_metrics_new();
    //  Not read yet: the family, no series
    char *text = fq_metrics_render(metrics, NULL, &s_tenants);
    s_assert_line(text, "# TYPE fairq_message_errors gauge");
    s_assert_no_line(text, "fairq_message_errors{");
    free(text);
    fq_metrics_errors(metrics, &s_errors);
    text = fq_metrics_render(metrics, NULL, &s_tenants);
    s_assert_line(text, "fairq_message_errors{tenant=\"acme\",destination=\"google\",code=\"550\","
                        "enhanced=\"5.1.1\"} 12");
    //  No code: an empty label
    s_assert_line(text, "fairq_message_errors{tenant=\"beta\",destination=\"default\",code=\"\","
                        "enhanced=\"\"} 3");
    s_assert_line(text, "fairq_message_errors{tenant=\"ev\\\"il\",destination=\"default\","
                        "code=\"503\",enhanced=\"\"} 1");
    free(text);
    //  A failed read keeps the figures; an empty one clears them
    fq_metrics_errors(metrics, NULL);
    text = fq_metrics_render(metrics, NULL, &s_tenants);
    s_assert_line(text, "fairq_message_errors{tenant=\"beta\",destination=\"default\",code=\"\","
                        "enhanced=\"\"} 3");
    free(text);
    fq_metrics_errors(metrics, &(fq_error_summary_t){0});
    text = fq_metrics_render(metrics, NULL, &s_tenants);
    s_assert_line(text, "# TYPE fairq_message_errors gauge");
    s_assert_no_line(text, "fairq_message_errors{");
    free(text);
    fq_metrics_errors(NULL, &s_errors);
    fq_metrics_destroy(&metrics);
}

//  The errors are read on their own clock, not the rates': a GET of the
//  tenants reads the rates alone, and /metrics the errors as well
static void test_message_errors_due(void **state)
{
    (void)state;
    fq_metrics_t *metrics = fq_metrics_new();
    int64_t now = 5 * S_SECOND_MS;
    fq_metrics_set_clock(metrics, s_fake_now, &now);
    //  The rates read does not make the errors read, nor the other way
    assert_true(fq_metrics_tenant_rates_due(metrics));
    fq_metrics_tenant_rates(metrics, &s_rates);
    assert_true(fq_metrics_errors_due(metrics));
    //  Handed to one caller: a second scrape at the same time reads none
    assert_false(fq_metrics_errors_due(metrics));
    //  A failed read leaves them due, the rates not
    fq_metrics_errors(metrics, NULL);
    assert_true(fq_metrics_errors_due(metrics));
    fq_metrics_errors(metrics, &s_errors);
    assert_false(fq_metrics_errors_due(metrics));
    assert_false(fq_metrics_tenant_rates_due(metrics));
    //  A minute on, both are due again
    now += FQ_METRICS_RATES_REFRESH_MS;
    assert_true(fq_metrics_errors_due(metrics));
    assert_true(fq_metrics_tenant_rates_due(metrics));
    fq_metrics_errors(metrics, &s_errors);
    fq_metrics_tenant_rates(metrics, &s_rates);
    assert_false(fq_metrics_errors_due(NULL));
    fq_metrics_destroy(&metrics);
}

//  ---------------------------------------------------------------------

//  Prints an exposition with every family filled, for the format check.
static int s_exposition(void)
{
    fq_system_t *sys = s_system();
    fq_metrics_t *metrics = fq_metrics_new();
    uint64_t sender = fq_metrics_sender_join(metrics, "evil\"\\\nname\xff", "fq://x/user/sender");
    s_record_acme(metrics, sender);
    s_record_google(metrics);
    fq_metrics_destination(metrics,
                           &(fq_metrics_destination_t){.name = "default", .state = "open"});
    //  A delivery: 0.25 s in the sender, 1.5 s end to end
    fq_metrics_batch_t *batch = fq_metrics_batch_new(metrics);
    fq_metrics_batch_delivered(batch, S_ACME, "email", "google", 250000, 1500);
    fq_metrics_batch_destroy(&batch);
    fq_metrics_tenant_rates(metrics, &s_rates);
    fq_metrics_errors(metrics, &s_errors);
    char *text = fq_metrics_render(metrics, sys, &s_tenants);
    int rc = text && fputs(text, stdout) >= 0 ? 0 : 1;
    free(text);
    fq_metrics_destroy(&metrics);
    fq_system_destroy(&sys);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--exposition") == 0)
        return s_exposition();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counters_gauges_and_histograms),
        cmocka_unit_test(test_tenant_named_later),
        cmocka_unit_test(test_database_down),
        cmocka_unit_test(test_null_is_harmless),
        cmocka_unit_test(test_hostile_sender_name),
        cmocka_unit_test(test_send_rate_over_the_window),
        cmocka_unit_test(test_request_inflight),
        cmocka_unit_test(test_senders_come_and_go),
        cmocka_unit_test(test_actor_figures),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_destinations),
        cmocka_unit_test(test_tenant_rates),
        cmocka_unit_test(test_message_errors),
        cmocka_unit_test(test_message_errors_due),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
