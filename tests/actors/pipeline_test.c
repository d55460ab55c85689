/*  pipeline_test.c — fairqd's actors together, against the real PostgreSQL.

    The pipeline runs in this process (fq_pipeline_start), and the test
    plays a sender: an fq_client says HELLO to /user/dispatcher, grants
    credit and receives MSGs as a remote fairq-sender would, without the
    gateway in between (tests/e2e run the real programs). That makes the
    protocol's rules checkable to the message: the credit bound, rendering,
    acks and nacks in the database, BYE, and hostile messages. Most tests
    play a protocol 1 sender (one MSG and one ACK per message); the batch
    tests play one that lists "batch" (MESSAGES and ACKS, protocol 2). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "fq_channel.h"
#include "fq_pipeline.h"
#include "fq_test_db.h"
#include "fq_test_sql.h"
#include <stdlib.h>
#include <string.h>
#include <time.h>

//  How long a test waits for what must come, and for what must not.
#define S_WAIT_MS  10000
#define S_QUIET_MS 400

typedef struct {
    char conninfo[128];
    fq_system_t *sys;
    fq_metrics_t *metrics; //  What fairqd's /metrics shows
    fq_client_t *sender;   //  The test, as a sender worker
    fq_store_t *store;     //  The test's own connection, to submit and check
    PGconn *conn;
} s_fixture_t;

static const char *const s_tenants[] = {"acme", "beta", NULL};

static int s_setup(void **state)
{
    s_fixture_t *self = calloc(1, sizeof *self);
    if (!self || fq_test_db_prepare(self->conninfo, sizeof self->conninfo, s_tenants, NULL))
        return -1;
    fq_system_config_t config = {.name = "fairqd-test"};
    self->sys = fq_system_new(&config);
    self->metrics = fq_metrics_new();
    fq_pipeline_config_t pipeline = {.database = self->conninfo,
                                     .name = "fairqd-test",
                                     .prefetch = 8,
                                     .splitters = 2,
                                     .poll_ms = 100,
                                     .ack_batch = 10,
                                     .ack_flush_ms = 5,
                                     .retry = {100, 1000},
                                     .retention_s = 3600,
                                     .metrics = self->metrics};
    if (!self->sys || !self->metrics || fq_pipeline_start(self->sys, &pipeline) != 0 ||
        fq_pipeline_start_rest(self->sys, &pipeline) != 0)
        return -1;
    self->sender = fq_client_new(self->sys);
    self->store = fq_test_store(self->conninfo);
    self->conn = fq_test_connect(self->conninfo);
    *state = self;
    return self->sender ? 0 : -1;
}

static int s_teardown(void **state)
{
    s_fixture_t *self = *state;
    fq_client_destroy(&self->sender);
    fq_system_destroy(&self->sys);
    fq_metrics_destroy(&self->metrics);
    fq_store_destroy(&self->store);
    PQfinish(self->conn);
    fq_test_db_drop();
    free(self);
    return 0;
}

//  Says HELLO as a sender with capabilities and grants credit.
static void s_join_as(s_fixture_t *self, const char *capabilities, uint32_t credit)
{
    fq_hello_t hello = {
        .name = "test", .version = "0", .capabilities = capabilities, .concurrency = 1};
    fq_msg_t reply;
    assert_int_equal(
        fq_client_ask(self->sender, FQ_PATH_DISPATCHER, &fq_hello_desc, &hello, S_WAIT_MS, &reply),
        0);
    fq_welcome_t welcome;
    assert_int_equal(fq_msg_decode(&reply, &fq_welcome_desc, &welcome), 0);
    assert_string_equal(welcome.system, "fairqd-test");
    assert_int_equal(welcome.protocol, FQ_SENDER_PROTOCOL);
    fq_credit_t grant = {.n = credit};
    assert_int_equal(fq_client_tell(self->sender, FQ_PATH_DISPATCHER, &fq_credit_desc, &grant), 0);
}

//  Says HELLO as client, a sender with capabilities, and grants credits[i]
//  for each channels[i] (NULL-terminated).
static void s_join_channels(fq_client_t *client, const char *name, const char *capabilities,
                            const char *const *channels, const uint32_t *credits)
{
    fq_hello_t hello = {
        .name = name, .version = "0", .capabilities = capabilities, .concurrency = 1};
    fq_msg_t reply;
    assert_int_equal(
        fq_client_ask(client, FQ_PATH_DISPATCHER, &fq_hello_desc, &hello, S_WAIT_MS, &reply), 0);
    for (size_t i = 0; channels[i]; i++) {
        fq_credit_t grant = {.n = credits[i], .channel = channels[i]};
        assert_int_equal(fq_client_tell(client, FQ_PATH_DISPATCHER, &fq_credit_desc, &grant), 0);
    }
}

//  Says HELLO as a sender that takes one MSG at a time (protocol 1).
static void s_join(s_fixture_t *self, uint32_t credit)
{
    s_join_as(self, "null", credit);
}

static int64_t s_submit(s_fixture_t *self, const char *tenant, const char *subject,
                        const char *body, bool html, const char *recipients)
{
    fq_submit_t req = {.tenant = tenant,
                       .from = "news@acme.example",
                       .subject = subject,
                       .body = body,
                       .body_is_html = html,
                       .recipients_json = recipients};
    int64_t id;
    if (fq_store_submit(self->store, &req, &id))
        fail_msg("submit: %s", fq_store_error(self->store));
    return id;
}

//  A received MSG, its strings copied (valid until the next receive).
typedef struct {
    uint64_t id, request;
    uint32_t attempt;
    char to[128], from[128], tenant[64], subject[256], body[1024];
    bool html;
    uint32_t headers;
} s_got_t;

static void s_copy(s_got_t *got, const fq_message_t *message)
{
    *got = (s_got_t){.id = message->id,
                     .request = message->request,
                     .attempt = message->attempt,
                     .html = message->body_is_html,
                     .headers = message->headers.count};
    snprintf(got->to, sizeof got->to, "%s", message->to);
    snprintf(got->from, sizeof got->from, "%s", message->from);
    snprintf(got->tenant, sizeof got->tenant, "%s", message->tenant);
    snprintf(got->subject, sizeof got->subject, "%s", message->subject);
    snprintf(got->body, sizeof got->body, "%s", message->body);
}

//  Waits up to timeout_ms for the next MSG. Returns 0, or -1 if none came.
static int s_receive(s_fixture_t *self, int timeout_ms, s_got_t *got)
{
    int64_t deadline = fq_test_now_ms() + timeout_ms;
    while (fq_test_now_ms() < deadline) {
        fq_msg_t msg;
        if (fq_client_recv(self->sender, (int)(deadline - fq_test_now_ms()), &msg) != 0)
            return -1;
        fq_message_t message;
        if (msg.type != FQ_MSG_MESSAGE || fq_msg_decode(&msg, &fq_message_desc, &message) != 0)
            continue;
        s_copy(got, &message);
        return 0;
    }
    return -1;
}

//  Waits up to timeout_ms for the next MESSAGES frame, as a batch sender
//  takes them, and copies its messages into got, which has room for at
//  most room (more fails the test: more than the credit left). A lone MSG
//  fails the test too: a sender that listed "batch" gets MESSAGES only.
//  Returns 0 with *count set, or -1 if no frame came.
static int s_receive_batch(s_fixture_t *self, int timeout_ms, s_got_t *got, uint32_t room,
                           uint32_t *count)
{
    int64_t deadline = fq_test_now_ms() + timeout_ms;
    while (fq_test_now_ms() < deadline) {
        fq_msg_t msg;
        if (fq_client_recv(self->sender, (int)(deadline - fq_test_now_ms()), &msg) != 0)
            return -1;
        if (msg.type == FQ_MSG_MESSAGE)
            fail_msg("a sender that listed \"batch\" got a lone MSG");
        fq_messages_t batch;
        if (msg.type != FQ_MSG_MESSAGES)
            continue;
        assert_int_equal(fq_msg_decode(&msg, &fq_messages_desc, &batch), 0);
        if (batch.messages.count > room)
            fail_msg("a MESSAGES of %u messages, with room for %u", batch.messages.count, room);
        for (uint32_t i = 0; i < batch.messages.count; i++)
            s_copy(&got[i], &batch.messages.items[i]);
        *count = batch.messages.count;
        return 0;
    }
    return -1;
}

static void s_ack(s_fixture_t *self, uint64_t id)
{
    fq_sender_ack_t ack = {.id = id};
    assert_int_equal(fq_client_tell(self->sender, FQ_PATH_DISPATCHER, &fq_sender_ack_desc, &ack),
                     0);
}

static void s_acks(s_fixture_t *self, const uint64_t *ids, uint32_t count)
{
    fq_sender_acks_t acks = {.ids = {count, ids}};
    assert_int_equal(fq_client_tell(self->sender, FQ_PATH_DISPATCHER, &fq_sender_acks_desc, &acks),
                     0);
}

//  Waits until sql (an integer query with one parameter) answers want.
static void s_wait_int(s_fixture_t *self, const char *sql, const char *param, int64_t want)
{
    int64_t deadline = fq_test_now_ms() + S_WAIT_MS, got = -1;
    while (fq_test_now_ms() < deadline) {
        got = fq_test_int(self->conn, sql, 1, param);
        if (got == want)
            return;
        fq_test_sleep_ms(20);
    }
    fail_msg("%s ($1 = %s): %lld, wanted %lld", sql, param, (long long)got, (long long)want);
}

static uint64_t s_stat(s_fixture_t *self, const char *path, const char *key)
{
    fq_stats_query_t query = {0};
    fq_client_t *client = fq_client_new(self->sys);
    fq_msg_t reply;
    fq_stats_t stats;
    assert_int_equal(fq_client_ask(client, path, &fq_stats_query_desc, &query, S_WAIT_MS, &reply),
                     0);
    assert_int_equal(fq_msg_decode(&reply, &fq_stats_desc, &stats), 0);
    uint64_t value = UINT64_MAX;
    for (uint32_t i = 0; i < stats.values.count; i++)
        if (strcmp(stats.values.keys[i], key) == 0)
            value = strtoull(stats.values.values[i], NULL, 10);
    fq_client_destroy(&client);
    assert_true(value != UINT64_MAX);
    return value;
}

//  Waits until the counter key of the actor at path reaches at least want
//  (messages from different clients reach a mailbox in no set order).
static void s_wait_stat(s_fixture_t *self, const char *path, const char *key, uint64_t want)
{
    int64_t deadline = fq_test_now_ms() + S_WAIT_MS;
    uint64_t got = 0;
    while (fq_test_now_ms() < deadline && (got = s_stat(self, path, key)) < want)
        fq_test_sleep_ms(20);
    if (got < want)
        fail_msg("%s %s: %llu, wanted at least %llu", path, key, (unsigned long long)got,
                 (unsigned long long)want);
}

//  Waits until the metrics' exposition holds line (a whole line).
static void s_wait_metric(s_fixture_t *self, const char *line)
{
    int64_t deadline = fq_test_now_ms() + S_WAIT_MS;
    char *text = NULL;
    while (fq_test_now_ms() < deadline) {
        free(text);
        text = fq_metrics_render(self->metrics, self->sys, NULL);
        assert_non_null(text);
        const char *at = strstr(text, line);
        if (at && (at == text || at[-1] == '\n') && at[strlen(line)] == '\n') {
            free(text);
            return;
        }
        fq_test_sleep_ms(20);
    }
    fail_msg("metrics never showed \"%s\":\n%s", line, text);
}

//  ---------------------------------------------------------------------

//  The credit bound: never more MSGs than credit granted and not given
//  back; each ACK lets exactly one more out. Then the acks are recorded.
static void test_credit_bounds_what_is_sent(void **state)
{
    s_fixture_t *self = *state;
    char *recipients = fq_test_recipients("c", 6);
    int64_t request = s_submit(self, "acme", "Hi {{name}}", "Body {{i}}", false, recipients);
    free(recipients);
    s_join(self, 2);
    s_got_t first, second, more;
    assert_int_equal(s_receive(self, S_WAIT_MS, &first), 0);
    assert_int_equal(s_receive(self, S_WAIT_MS, &second), 0);
    assert_int_equal(s_receive(self, S_QUIET_MS, &more), -1); //  Credit used up
    s_ack(self, first.id);
    assert_int_equal(s_receive(self, S_WAIT_MS, &more), 0);
    assert_int_equal(s_receive(self, S_QUIET_MS, &more), -1);
    //  The rest, one ack at a time
    s_ack(self, second.id);
    uint64_t last = more.id;
    for (int i = 0; i < 3; i++) {
        assert_int_equal(s_receive(self, S_WAIT_MS, &more), 0);
        s_ack(self, last);
        last = more.id;
    }
    s_ack(self, last);
    char id[24];
    s_wait_int(self, "SELECT sent FROM fairq.requests WHERE id = $1",
               fq_test_param(id, sizeof id, request), 6);
    s_wait_int(self,
               "SELECT count(*) FROM fairq.messages WHERE request_id = $1 AND status = 'sent'", id,
               6);
}

//  Rendering happens in the dispatcher: fields in subject and body, HTML
//  escaping in an HTML body, the tenant's name, attempt 1, a stable id.
static void test_messages_are_rendered(void **state)
{
    s_fixture_t *self = *state;
    int64_t request = s_submit(
        self, "beta", "Hello {{name}}", "<p>{{name}} &amp; {{{raw}}}</p>", true,
        "[{\"to\": \"x@example.com\", \"fields\": {\"name\": \"A<b>\", \"raw\": \"<i>ok</i>\"}}]");
    s_join(self, 4);
    s_got_t got;
    assert_int_equal(s_receive(self, S_WAIT_MS, &got), 0);
    assert_int_equal(got.request, (uint64_t)request);
    assert_string_equal(got.tenant, "beta");
    assert_string_equal(got.to, "x@example.com");
    assert_string_equal(got.subject, "Hello A<b>");
    assert_string_equal(got.body, "<p>A&lt;b&gt; &amp; <i>ok</i></p>");
    assert_true(got.html);
    assert_int_equal(got.attempt, 1);
    char id[24];
    assert_int_equal(fq_test_int(self->conn, "SELECT id FROM fairq.messages WHERE request_id = $1",
                                 1, fq_test_param(id, sizeof id, request)),
                     (int64_t)got.id);
}

//  A transient NACK comes back as a retry (attempt 2) after the backoff; a
//  permanent one makes the message dead with the server's text.
static void test_nacks_retry_or_kill(void **state)
{
    s_fixture_t *self = *state;
    int64_t request = s_submit(self, "acme", "S", "B", false,
                               "[{\"to\": \"a@example.com\"}, {\"to\": \"b@example.com\"}]");
    s_join(self, 2);
    s_got_t a, b;
    assert_int_equal(s_receive(self, S_WAIT_MS, &a), 0);
    assert_int_equal(s_receive(self, S_WAIT_MS, &b), 0);
    s_got_t *transient = strcmp(a.to, "a@example.com") == 0 ? &a : &b;
    s_got_t *permanent = transient == &a ? &b : &a;
    fq_sender_nack_t nack = {
        .id = permanent->id, .permanent = true, .error = "550 5.1.1 no such user"};
    assert_int_equal(fq_client_tell(self->sender, FQ_PATH_DISPATCHER, &fq_sender_nack_desc, &nack),
                     0);
    nack = (fq_sender_nack_t){.id = transient->id, .permanent = false, .error = "451 4.3.0 later"};
    assert_int_equal(fq_client_tell(self->sender, FQ_PATH_DISPATCHER, &fq_sender_nack_desc, &nack),
                     0);
    s_got_t retry;
    assert_int_equal(s_receive(self, S_WAIT_MS, &retry), 0);
    assert_int_equal(retry.id, transient->id);
    assert_int_equal(retry.attempt, 2);
    s_ack(self, retry.id);
    char id[24];
    fq_test_param(id, sizeof id, request);
    s_wait_int(self, "SELECT sent * 10 + dead FROM fairq.requests WHERE id = $1", id, 11);
    char *error = fq_test_text(
        self->conn, "SELECT last_error FROM fairq.messages WHERE id = $1 AND status = 'dead'", 1,
        fq_test_param(id, sizeof id, (int64_t)permanent->id));
    assert_non_null(error);
    assert_string_equal(error, "550 5.1.1 no such user");
    free(error);
}

//  BYE: the sender gets nothing new, but what it holds stays its own until
//  it answers (the ack counts).
static void test_bye_keeps_what_is_held(void **state)
{
    s_fixture_t *self = *state;
    char *recipients = fq_test_recipients("b", 3);
    int64_t request = s_submit(self, "acme", "S", "B", false, recipients);
    free(recipients);
    s_join(self, 1);
    s_got_t got, more;
    assert_int_equal(s_receive(self, S_WAIT_MS, &got), 0);
    fq_bye_t bye = {.reason = "stopping"};
    assert_int_equal(fq_client_tell(self->sender, FQ_PATH_DISPATCHER, &fq_bye_desc, &bye), 0);
    s_ack(self, got.id);
    assert_int_equal(s_receive(self, S_QUIET_MS, &more), -1);
    char id[24];
    fq_test_param(id, sizeof id, request);
    s_wait_int(self, "SELECT sent FROM fairq.requests WHERE id = $1", id, 1);
    assert_int_equal(s_stat(self, FQ_PATH_DISPATCHER, "senders"), 0);
}

//  Hostile or confused peers: messages from an address that never said
//  HELLO, a frame of a type the dispatcher does not take, picks whose
//  lists disagree, an absurd credit. Each is dropped and counted; a real
//  sender is served as before, within the credit cap.
static void test_bad_messages_are_dropped(void **state)
{
    s_fixture_t *self = *state;
    fq_client_t *stranger = fq_client_new(self->sys);
    fq_sender_ack_t ack = {.id = 12345};
    assert_int_equal(fq_client_tell(stranger, FQ_PATH_DISPATCHER, &fq_sender_ack_desc, &ack), 0);
    fq_credit_t credit = {.n = 5};
    assert_int_equal(fq_client_tell(stranger, FQ_PATH_DISPATCHER, &fq_credit_desc, &credit), 0);
    fq_welcome_t wrong = {.system = "x", .protocol = 9};
    assert_int_equal(fq_client_tell(stranger, FQ_PATH_DISPATCHER, &fq_welcome_desc, &wrong), 0);
    uint64_t one[] = {1}, two[] = {1, 2};
    fq_dispatch_t skewed = {.messages = {2, two}, .requests = {1, one}, .tenants = {2, two}};
    assert_int_equal(fq_client_tell(stranger, FQ_PATH_DISPATCHER, &fq_dispatch_desc, &skewed), 0);
    fq_client_destroy(&stranger);
    s_wait_stat(self, FQ_PATH_DISPATCHER, "unknown_peer", 2);
    s_wait_stat(self, FQ_PATH_DISPATCHER, "malformed", 2);

    char *recipients = fq_test_recipients("h", 3);
    int64_t request = s_submit(self, "acme", "S", "B", false, recipients);
    free(recipients);
    s_join(self, 4000000000u); //  Capped, not trusted
    s_got_t got[3];
    for (int i = 0; i < 3; i++) {
        assert_int_equal(s_receive(self, S_WAIT_MS, &got[i]), 0);
        s_ack(self, got[i].id);
    }
    char id[24];
    s_wait_int(self, "SELECT sent FROM fairq.requests WHERE id = $1",
               fq_test_param(id, sizeof id, request), 3);
    assert_true(s_stat(self, FQ_PATH_SCHEDULER, "credit") <= 10000);
}

//  Only the sender holding a message may answer for it: an ACK or NACK for
//  a message that is not out (never given to it), or out with another
//  sender, is dropped and counted, and the message stays as it was. The
//  holder's answer is written as before.
static void test_outcomes_only_from_the_holder(void **state)
{
    s_fixture_t *self = *state;
    char *recipients = fq_test_recipients("o", 6);
    int64_t request = s_submit(self, "acme", "S", "B", false, recipients);
    free(recipients);
    char id[24];
    fq_test_param(id, sizeof id, request);
    s_wait_int(self, "SELECT count(*) FROM fairq.messages WHERE request_id = $1", id, 6);
    s_join(self, 1);
    s_got_t held;
    assert_int_equal(s_receive(self, S_WAIT_MS, &held), 0);
    //  A second sender that holds nothing answers for the first one's
    //  message and for messages nobody holds
    fq_client_t *other = fq_client_new(self->sys);
    fq_hello_t hello = {.name = "other", .version = "0", .capabilities = "null", .concurrency = 1};
    fq_msg_t reply;
    assert_int_equal(
        fq_client_ask(other, FQ_PATH_DISPATCHER, &fq_hello_desc, &hello, S_WAIT_MS, &reply), 0);
    int64_t first =
        fq_test_int(self->conn, "SELECT min(id) FROM fairq.messages WHERE request_id = $1", 1, id);
    uint64_t not_out[3];
    for (int i = 0, n = 0; n < 3; i++)
        if ((uint64_t)(first + i) != held.id)
            not_out[n++] = (uint64_t)(first + i);
    fq_sender_ack_t ack = {.id = held.id};
    assert_int_equal(fq_client_tell(other, FQ_PATH_DISPATCHER, &fq_sender_ack_desc, &ack), 0);
    fq_sender_nack_t nack = {.id = held.id, .permanent = true, .error = "550 forged"};
    assert_int_equal(fq_client_tell(other, FQ_PATH_DISPATCHER, &fq_sender_nack_desc, &nack), 0);
    //  And the holder itself, for messages it was never given
    s_ack(self, not_out[0]);
    nack = (fq_sender_nack_t){.id = not_out[1], .permanent = true, .error = "550 forged"};
    assert_int_equal(fq_client_tell(self->sender, FQ_PATH_DISPATCHER, &fq_sender_nack_desc, &nack),
                     0);
    nack = (fq_sender_nack_t){.id = not_out[2], .permanent = false, .error = "451 forged"};
    assert_int_equal(fq_client_tell(self->sender, FQ_PATH_DISPATCHER, &fq_sender_nack_desc, &nack),
                     0);
    s_wait_stat(self, FQ_PATH_DISPATCHER, "stray", 5);
    s_wait_metric(self, "fairq_actor_refused_total{actor=\"/user/dispatcher\"} 5");
    //  Nothing was written: every message still pending, never tried
    fq_test_sleep_ms(S_QUIET_MS);
    assert_int_equal(fq_test_int(self->conn,
                                 "SELECT count(*) FROM fairq.messages WHERE request_id = $1"
                                 " AND status = 'pending' AND try_count = 0",
                                 1, id),
                     6);
    //  The holder's own answer counts
    s_ack(self, held.id);
    s_wait_int(self, "SELECT sent FROM fairq.requests WHERE id = $1", id, 1);
    fq_client_destroy(&other);
}

//  ids as a PostgreSQL array literal ("{1,2,3}"), for "= ANY($1::bigint[])".
static const char *s_id_array(char *buf, size_t size, const s_got_t *got, uint32_t count)
{
    size_t len = (size_t)snprintf(buf, size, "{");
    for (uint32_t i = 0; i < count && len < size; i++)
        len += (size_t)snprintf(buf + len, size - len, "%s%llu", i ? "," : "",
                                (unsigned long long)got[i].id);
    if (len < size)
        snprintf(buf + len, size - len, "}");
    assert_true(len + 1 < size);
    return buf;
}

//  A sender whose HELLO lists "batch" gets the MSGs of a dispatch as
//  MESSAGES frames, several to a frame and never a lone MSG; never more in
//  all than its credit, each rendered as a MSG is (see
//  test_messages_are_rendered). One ACKS answers for them all: each id is
//  written as sent, and the credit it gives back brings the rest.
static void test_batch_sender_gets_messages_frames(void **state)
{
    s_fixture_t *self = *state;
    enum { S_CREDIT = 20, S_RECIPIENTS = 30 };
    char recipients[S_RECIPIENTS * 96];
    size_t len = 0;
    for (int k = 0; k < S_RECIPIENTS; k++)
        len += (size_t)snprintf(
            recipients + len, sizeof recipients - len,
            "%s{\"to\": \"m%d@example.com\", \"fields\": {\"name\": \"A<b>%d\", \"raw\": "
            "\"<i>%d</i>\"}}",
            k ? "," : "[", k, k, k);
    snprintf(recipients + len, sizeof recipients - len, "]");
    assert_true(len + 1 < sizeof recipients);
    int64_t request = s_submit(self, "beta", "Hello {{name}}", "<p>{{name}} &amp; {{{raw}}}</p>",
                               true, recipients);
    char id[24];
    fq_test_param(id, sizeof id, request);
    //  Every message is ready before the credit comes, so that each
    //  dispatch has several to put in one frame
    s_wait_int(self, "SELECT count(*) FROM fairq.messages WHERE request_id = $1", id, S_RECIPIENTS);
    s_join_as(self, "null,batch", S_CREDIT);

    s_got_t got[S_RECIPIENTS];
    uint32_t total = 0, frames = 0, count;
    while (total < S_CREDIT) {
        assert_int_equal(s_receive_batch(self, S_WAIT_MS, got + total, S_CREDIT - total, &count),
                         0);
        assert_true(count > 0); //  An empty frame would be a frame for nothing
        total += count;
        frames++;
    }
    //  Credit used up; and batched: at least one frame carried several
    assert_int_equal(s_receive_batch(self, S_QUIET_MS, got + total, 0, &count), -1);
    assert_true(frames < total);

    bool seen[S_RECIPIENTS] = {false};
    for (uint32_t i = 0; i < total; i++) {
        int k = -1;
        assert_int_equal(sscanf(got[i].to, "m%d@example.com", &k), 1);
        assert_in_range(k, 0, S_RECIPIENTS - 1);
        assert_false(seen[k]);
        seen[k] = true;
        char want[128];
        snprintf(want, sizeof want, "Hello A<b>%d", k);
        assert_string_equal(got[i].subject, want);
        snprintf(want, sizeof want, "<p>A&lt;b&gt;%d &amp; <i>%d</i></p>", k, k);
        assert_string_equal(got[i].body, want);
        assert_true(got[i].html);
        assert_int_equal(got[i].request, (uint64_t)request);
        assert_string_equal(got[i].tenant, "beta");
        assert_string_equal(got[i].from, "news@acme.example");
        assert_int_equal(got[i].attempt, 1);
        assert_int_equal(got[i].headers, 0);
        assert_int_equal(fq_test_int(self->conn,
                                     "SELECT id FROM fairq.messages"
                                     " WHERE request_id = $1 AND recipient = $2",
                                     2, id, got[i].to),
                         (int64_t)got[i].id);
        for (uint32_t j = 0; j < i; j++)
            assert_true(got[j].id != got[i].id);
    }

    //  One ACKS for the lot: exactly these are sent, and their credit
    //  brings the rest, within the credit again
    uint64_t ids[S_RECIPIENTS];
    for (uint32_t i = 0; i < total; i++)
        ids[i] = got[i].id;
    s_acks(self, ids, total);
    char acked[S_RECIPIENTS * 24];
    s_wait_int(
        self,
        "SELECT count(*) FROM fairq.messages WHERE id = ANY($1::bigint[]) AND status = 'sent'",
        s_id_array(acked, sizeof acked, got, total), S_CREDIT);
    while (total < S_RECIPIENTS) {
        assert_int_equal(
            s_receive_batch(self, S_WAIT_MS, got + total, S_RECIPIENTS - total, &count), 0);
        for (uint32_t i = total; i < total + count; i++) {
            assert_int_equal(got[i].request, (uint64_t)request);
            for (uint32_t j = 0; j < i; j++)
                assert_true(got[j].id != got[i].id);
        }
        total += count;
    }
    assert_int_equal(s_receive_batch(self, S_QUIET_MS, got + total, 0, &count), -1);
    for (uint32_t i = S_CREDIT; i < total; i++)
        ids[i - S_CREDIT] = got[i].id;
    s_acks(self, ids, total - S_CREDIT);
    s_wait_int(self, "SELECT sent FROM fairq.requests WHERE id = $1", id, S_RECIPIENTS);
    s_wait_int(self,
               "SELECT count(*) FROM fairq.messages WHERE request_id = $1 AND status = 'sent'", id,
               S_RECIPIENTS);
    s_wait_stat(self, FQ_PATH_DISPATCHER, "acked", S_RECIPIENTS);
    assert_int_equal(s_stat(self, FQ_PATH_DISPATCHER, "stray"), 0);
    assert_int_equal(s_stat(self, FQ_PATH_DISPATCHER, "malformed"), 0);
}

//  An ACKS is read id by id, as that many ACKs: id 0 is malformed and an id
//  the sender was never given is stray, each counted and dropped (its
//  message stays unsent and goes out later as any other), while the valid
//  id beside them is written. An ACKS from an address that never said
//  HELLO is ignored, even for a message in flight.
static void test_acks_from_others_or_zero_are_dropped(void **state)
{
    s_fixture_t *self = *state;
    char *recipients = fq_test_recipients("z", 3);
    int64_t request = s_submit(self, "acme", "S", "B", false, recipients);
    free(recipients);
    char id[24], one[24];
    fq_test_param(id, sizeof id, request);
    s_wait_int(self, "SELECT count(*) FROM fairq.messages WHERE request_id = $1", id, 3);
    s_join_as(self, "null,batch", 1);
    s_got_t got[3];
    uint32_t count;
    assert_int_equal(s_receive_batch(self, S_WAIT_MS, got, 1, &count), 0);
    assert_int_equal(count, 1);
    const char *sent_sql = "SELECT count(*) FROM fairq.messages WHERE id = $1 AND status = 'sent'";

    //  A stranger answers for the message held
    fq_client_t *stranger = fq_client_new(self->sys);
    fq_sender_acks_t forged = {.ids = {1, &got[0].id}};
    assert_int_equal(fq_client_tell(stranger, FQ_PATH_DISPATCHER, &fq_sender_acks_desc, &forged),
                     0);
    fq_client_destroy(&stranger);
    s_wait_stat(self, FQ_PATH_DISPATCHER, "unknown_peer", 1);
    fq_test_sleep_ms(S_QUIET_MS);
    assert_int_equal(
        fq_test_int(self->conn, sent_sql, 1, fq_test_param(one, sizeof one, (int64_t)got[0].id)),
        0);
    assert_int_equal(s_stat(self, FQ_PATH_DISPATCHER, "acked"), 0);

    //  The holder: 0, a message it was never given, and the one it holds
    int64_t first =
        fq_test_int(self->conn, "SELECT min(id) FROM fairq.messages WHERE request_id = $1", 1, id);
    uint64_t never_given = (uint64_t)first == got[0].id ? (uint64_t)first + 1 : (uint64_t)first;
    uint64_t malformed = s_stat(self, FQ_PATH_DISPATCHER, "malformed"),
             stray = s_stat(self, FQ_PATH_DISPATCHER, "stray");
    uint64_t mixed[] = {0, never_given, got[0].id};
    s_acks(self, mixed, 3);
    s_wait_int(self, sent_sql, fq_test_param(one, sizeof one, (int64_t)got[0].id), 1);
    //  The whole ACKS was handled before the valid id's ack was written
    assert_int_equal(s_stat(self, FQ_PATH_DISPATCHER, "malformed"), malformed + 1);
    assert_int_equal(s_stat(self, FQ_PATH_DISPATCHER, "stray"), stray + 1);
    assert_int_equal(s_stat(self, FQ_PATH_DISPATCHER, "acked"), 1);
    assert_int_equal(fq_test_int(self->conn,
                                 "SELECT count(*) FROM fairq.messages"
                                 " WHERE id = $1 AND status = 'pending' AND try_count = 0",
                                 1, fq_test_param(one, sizeof one, (int64_t)never_given)),
                     1);

    //  The valid ack gave its credit back: the other two follow, one at a
    //  time, the one never given among them, and are written when acked
    for (int i = 1; i < 3; i++) {
        assert_int_equal(s_receive_batch(self, S_WAIT_MS, &got[i], 1, &count), 0);
        s_acks(self, &got[i].id, 1);
    }
    assert_true(got[1].id == never_given || got[2].id == never_given);
    s_wait_int(self, "SELECT sent FROM fairq.requests WHERE id = $1", id, 3);
}

//  Messages given back unsent (their sender restarted) go out again only
//  while their request may send: not while it is paused, and all of them
//  once it is resumed.
static void test_requeue_honours_pause(void **state)
{
    s_fixture_t *self = *state;
    char *recipients = fq_test_recipients("p", 4);
    int64_t request = s_submit(self, "acme", "S", "B", false, recipients);
    free(recipients);
    s_join(self, 2);
    s_got_t got;
    assert_int_equal(s_receive(self, S_WAIT_MS, &got), 0);
    assert_int_equal(s_receive(self, S_WAIT_MS, &got), 0);
    assert_true(fq_store_request_pause(self->store, request) >= 0);
    //  A pause takes effect at the scheduler's next poll (poll_ms 100, and
    //  sooner after the NOTIFY): the sender restarts after that
    fq_test_sleep_ms(S_QUIET_MS);
    //  The sender restarts: what it held goes back to the scheduler, and
    //  it has credit for everything
    s_join(self, 4);
    assert_int_equal(s_receive(self, S_QUIET_MS * 3, &got), -1);
    assert_true(fq_store_request_resume(self->store, request) >= 0);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(s_receive(self, S_WAIT_MS, &got), 0);
        s_ack(self, got.id);
    }
    char id[24];
    s_wait_int(self, "SELECT sent FROM fairq.requests WHERE id = $1",
               fq_test_param(id, sizeof id, request), 4);
}

//  A request cancelled while its messages wait: nothing more of it goes out.
static void test_cancelled_request_stops(void **state)
{
    s_fixture_t *self = *state;
    char *recipients = fq_test_recipients("k", 20);
    int64_t request = s_submit(self, "acme", "S", "B", false, recipients);
    free(recipients);
    s_join(self, 1);
    s_got_t got;
    assert_int_equal(s_receive(self, S_WAIT_MS, &got), 0);
    assert_true(fq_store_request_cancel(self->store, request) >= 0);
    s_ack(self, got.id);
    //  At most the one already picked against the credit just given back
    int extra = 0;
    while (s_receive(self, S_QUIET_MS * 2, &got) == 0) {
        s_ack(self, got.id);
        extra++;
    }
    assert_true(extra <= 1);
    //  Every message is final: the store ignores acks of cancelled
    //  messages, so the ones out at the cancel count as cancelled too
    char id[24];
    fq_test_param(id, sizeof id, request);
    s_wait_int(self,
               "SELECT count(*) FROM fairq.messages WHERE request_id = $1 AND status = 'cancelled'",
               id, 20);
    assert_int_equal(
        fq_test_int(self->conn, "SELECT sent FROM fairq.requests WHERE id = $1", 1, id), 0);
}

//  The rows a page read go to the dispatcher with their picks: it renders
//  them (each recipient's own fields) without reading them again. 300
//  recipients: more than a split names to the scheduler (it pages them).
static void test_paged_rows_go_with_their_picks(void **state)
{
    s_fixture_t *self = *state;
    s_join(self, 300);
    char *recipients = fq_test_recipients("row", 300);
    s_submit(self, "acme", "Hi {{name}}", "B", false, recipients);
    free(recipients);
    uint64_t loaded = s_stat(self, FQ_PATH_DISPATCHER, "rows_loaded");
    bool seen[300] = {false};
    for (int i = 0; i < 300; i++) {
        s_got_t got;
        assert_int_equal(s_receive(self, S_WAIT_MS, &got), 0);
        //  fq_test_recipients: rowN@example.com, named NN
        int n = -1;
        assert_int_equal(sscanf(got.to, "row%d@example.com", &n), 1);
        assert_true(n >= 0 && n < 300 && !seen[n]);
        seen[n] = true;
        char subject[64];
        snprintf(subject, sizeof subject, "Hi N%d", n);
        assert_string_equal(got.subject, subject);
        s_ack(self, got.id);
    }
    //  Every row that came was fresh in practice (a pick follows its page
    //  by milliseconds); a slow machine may let a few age, which are loaded
    uint64_t given = s_stat(self, FQ_PATH_DISPATCHER, "rows_given");
    assert_int_equal(given + s_stat(self, FQ_PATH_DISPATCHER, "rows_loaded") - loaded, 300);
    assert_true(given >= 256);
}

//  Two tenants' requests of each messages, acme's split before beta's is
//  submitted, then both paused (the scheduler sends nothing of its own):
//  their messages in turns (acme's, beta's, acme's, ...) in messages,
//  requests and tenants, for a test to DISPATCH itself. Returns their rows
//  (id, request_id, tenant_id, recipient, fields, destination; acme's
//  first, in id order), the caller's to PQclear.
static PGresult *s_paused_in_turns(s_fixture_t *self, int each, uint64_t *messages,
                                   uint64_t *requests, uint64_t *tenants)
{
    char *a = fq_test_recipients("a", each), *b = fq_test_recipients("b", each);
    int64_t ids[] = {s_submit(self, "acme", "S", "B", false, a), 0};
    s_wait_int(self, "SELECT count(*) FROM fairq.messages WHERE status::text = $1", "pending",
               each);
    ids[1] = s_submit(self, "beta", "S", "B", false, b);
    free(a);
    free(b);
    s_wait_int(self, "SELECT count(*) FROM fairq.messages WHERE status::text = $1", "pending",
               2 * each);
    for (int i = 0; i < 2; i++)
        assert_int_equal(fq_store_request_pause(self->store, ids[i]), 1);
    fq_test_sleep_ms(S_QUIET_MS); //  Left by the scheduler
    PGresult *res =
        PQexec(self->conn, "SELECT id, request_id, tenant_id, recipient, fields, destination"
                           " FROM fairq.messages ORDER BY request_id, id");
    assert_int_equal(PQntuples(res), 2 * each);
    for (int k = 0; k < each; k++)
        for (int t = 0; t < 2; t++) {
            int row = t * each + k, at = 2 * k + t;
            messages[at] = (uint64_t)strtoull(PQgetvalue(res, row, 0), NULL, 10);
            requests[at] = (uint64_t)strtoull(PQgetvalue(res, row, 1), NULL, 10);
            tenants[at] = (uint64_t)strtoull(PQgetvalue(res, row, 2), NULL, 10);
        }
    return res;
}

//  A DISPATCH's messages go to a sender in its order, the scheduler's
//  fair turns, whether their rows came with it or were loaded: here two
//  tenants' messages in turns, the rows of one tenant's given and the
//  other's not (their requests paused, so the scheduler sends nothing of
//  its own).
static void test_a_dispatch_keeps_its_order(void **state)
{
    s_fixture_t *self = *state;
    enum { S_EACH = 5 };
    uint64_t messages[2 * S_EACH], request_ids[2 * S_EACH], tenants[2 * S_EACH];
    PGresult *res = s_paused_in_turns(self, S_EACH, messages, request_ids, tenants);
    s_join_as(self, "null,batch", 2 * S_EACH);
    //  acme's rows come with the DISPATCH, beta's are loaded
    fq_paged_row_t rows[S_EACH];
    for (int k = 0; k < S_EACH; k++)
        rows[k] = (fq_paged_row_t){.id = messages[2 * k],
                                   .recipient = PQgetvalue(res, k, 3),
                                   .fields = PQgetvalue(res, k, 4),
                                   .destination = PQgetvalue(res, k, 5),
                                   .paged_us = zclock_usecs()};
    uint64_t loaded = s_stat(self, FQ_PATH_DISPATCHER, "rows_loaded");
    fq_dispatch_t dispatch = {.messages = {2 * S_EACH, messages},
                              .requests = {2 * S_EACH, request_ids},
                              .tenants = {2 * S_EACH, tenants},
                              .channel = "",
                              .rows = {S_EACH, rows}};
    fq_client_t *client = fq_client_new(self->sys);
    assert_int_equal(fq_client_tell(client, FQ_PATH_DISPATCHER, &fq_dispatch_desc, &dispatch), 0);
    s_got_t got[2 * S_EACH];
    uint32_t count = 0, n;
    while (count < 2 * S_EACH) {
        assert_int_equal(s_receive_batch(self, S_WAIT_MS, got + count, 2 * S_EACH - count, &n), 0);
        count += n;
    }
    for (uint32_t i = 0; i < count; i++)
        assert_int_equal(got[i].id, messages[i]);
    assert_int_equal(s_stat(self, FQ_PATH_DISPATCHER, "rows_loaded") - loaded, S_EACH);
    fq_client_destroy(&client);
    PQclear(res);
}

//  Counts the MSGs client receives until none comes for S_QUIET_MS, per
//  tenant: [0] acme's, [1] beta's.
static void s_count_tenants(fq_client_t *client, int counts[2])
{
    fq_msg_t msg;
    while (fq_client_recv(client, S_QUIET_MS, &msg) == 0) {
        fq_message_t message;
        if (msg.type != FQ_MSG_MESSAGE || fq_msg_decode(&msg, &fq_message_desc, &message) != 0)
            continue;
        counts[strcmp(message.tenant, "acme") == 0 ? 0 : 1]++;
    }
}

//  Each request's messages take turns among the senders: a DISPATCH of
//  two tenants in turns (acme, beta, acme, ...) to two senders gives each
//  sender some of both, not one tenant each, so a sender that is slower
//  for a moment does not slow one tenant alone.
static void test_a_tenant_is_not_pinned_to_a_sender(void **state)
{
    s_fixture_t *self = *state;
    enum { S_EACH = 10 };
    uint64_t messages[2 * S_EACH], request_ids[2 * S_EACH], tenants[2 * S_EACH];
    PQclear(s_paused_in_turns(self, S_EACH, messages, request_ids, tenants));
    s_join(self, S_EACH);
    fq_client_t *second = fq_client_new(self->sys);
    const char *const email[] = {"email", NULL};
    const uint32_t credits[] = {S_EACH};
    s_join_channels(second, "second", "null", email, credits);
    fq_dispatch_t dispatch = {.messages = {2 * S_EACH, messages},
                              .requests = {2 * S_EACH, request_ids},
                              .tenants = {2 * S_EACH, tenants},
                              .channel = ""};
    fq_client_t *scheduler = fq_client_new(self->sys);
    assert_int_equal(fq_client_tell(scheduler, FQ_PATH_DISPATCHER, &fq_dispatch_desc, &dispatch),
                     0);
    int first_counts[2] = {0, 0}, second_counts[2] = {0, 0};
    s_count_tenants(self->sender, first_counts);
    s_count_tenants(second, second_counts);
    print_message("first sender: %d of acme, %d of beta; second: %d and %d\n", first_counts[0],
                  first_counts[1], second_counts[0], second_counts[1]);
    assert_int_equal(first_counts[0] + second_counts[0], S_EACH);
    assert_int_equal(first_counts[1] + second_counts[1], S_EACH);
    for (int t = 0; t < 2; t++) {
        assert_true(first_counts[t] >= S_EACH / 2 - 1 && first_counts[t] <= S_EACH / 2 + 1);
        assert_true(second_counts[t] >= S_EACH / 2 - 1 && second_counts[t] <= S_EACH / 2 + 1);
    }
    fq_client_destroy(&scheduler);
    fq_client_destroy(&second);
}

//  The dispatcher renders a row that came with its pick only while it is
//  fresh: one that waited longer (behind a slow load, say) is loaded
//  again, so a message cancelled meanwhile is not sent.
static void test_a_stale_row_is_loaded_again(void **state)
{
    s_fixture_t *self = *state;
    int64_t request = s_submit(self, "acme", "S", "B", false,
                               "[{\"to\": \"a@example.com\"}, {\"to\": \"b@example.com\"}]");
    s_wait_int(self, "SELECT count(*) FROM fairq.messages WHERE status::text = $1", "pending", 2);
    assert_int_equal(fq_store_request_pause(self->store, request), 1);
    fq_test_sleep_ms(S_QUIET_MS); //  Left by the scheduler
    s_join_as(self, "null,batch", 2);
    PGresult *res = PQexec(self->conn, "SELECT id, tenant_id, recipient, fields, destination"
                                       " FROM fairq.messages ORDER BY id");
    assert_int_equal(PQntuples(res), 2);
    fq_message_filter_t filter = {.request_id = request, .recipient = "a@example.com"};
    assert_int_equal(fq_store_cancel_messages(self->store, &filter), 1);
    uint64_t messages[2], requests[2], tenants[2];
    fq_paged_row_t rows[2];
    for (int i = 0; i < 2; i++) {
        messages[i] = (uint64_t)strtoull(PQgetvalue(res, i, 0), NULL, 10);
        requests[i] = (uint64_t)request;
        tenants[i] = (uint64_t)strtoull(PQgetvalue(res, i, 1), NULL, 10);
        //  Paged two seconds ago: past its freshness
        rows[i] = (fq_paged_row_t){.id = messages[i],
                                   .recipient = PQgetvalue(res, i, 2),
                                   .fields = PQgetvalue(res, i, 3),
                                   .destination = PQgetvalue(res, i, 4),
                                   .paged_us = zclock_usecs() - 2000000};
    }
    uint64_t given = s_stat(self, FQ_PATH_DISPATCHER, "rows_given");
    fq_dispatch_t dispatch = {.messages = {2, messages},
                              .requests = {2, requests},
                              .tenants = {2, tenants},
                              .channel = "",
                              .rows = {2, rows}};
    fq_client_t *client = fq_client_new(self->sys);
    assert_int_equal(fq_client_tell(client, FQ_PATH_DISPATCHER, &fq_dispatch_desc, &dispatch), 0);
    s_got_t got[2];
    uint32_t n;
    assert_int_equal(s_receive_batch(self, S_WAIT_MS, got, 2, &n), 0);
    assert_int_equal(n, 1);
    assert_string_equal(got[0].to, "b@example.com");
    assert_int_equal(s_receive_batch(self, S_QUIET_MS, got, 2, &n), -1);
    assert_int_equal(s_stat(self, FQ_PATH_DISPATCHER, "rows_given"), given);
    fq_client_destroy(&client);
    PQclear(res);
}

//  A row is given out only while fresh: a message cancelled on its own
//  (no NOTIFY tells the scheduler) after its page, and picked more than
//  the freshness later, is loaded, found cancelled, and not sent; the
//  next one goes instead.
static void test_a_message_cancelled_after_its_page_is_not_sent(void **state)
{
    s_fixture_t *self = *state;
    s_join(self, 1);
    char *recipients = fq_test_recipients("c", 300);
    int64_t request = s_submit(self, "acme", "S", "B", false, recipients);
    free(recipients);
    s_got_t got;
    assert_int_equal(s_receive(self, S_WAIT_MS, &got), 0);
    assert_string_equal(got.to, "c0@example.com");
    fq_message_filter_t filter = {.request_id = request, .recipient = "c2@example.com"};
    assert_int_equal(fq_store_cancel_messages(self->store, &filter), 1);
    //  Past the rows' freshness (half a second)
    fq_test_sleep_ms(800);
    s_ack(self, got.id);
    assert_int_equal(s_receive(self, S_WAIT_MS, &got), 0);
    assert_string_equal(got.to, "c1@example.com");
    s_ack(self, got.id);
    assert_int_equal(s_receive(self, S_WAIT_MS, &got), 0);
    assert_string_equal(got.to, "c3@example.com");
    //  c1 and c3 loaded (c2 asked for and not found)
    assert_true(s_stat(self, FQ_PATH_DISPATCHER, "rows_loaded") >= 2);
}

//  What the actors record is what /metrics and the API's live fields show:
//  messages in flight while a sender holds them, then what became of them.
static void test_metrics_follow_the_messages(void **state)
{
    s_fixture_t *self = *state;
    int64_t request = s_submit(self, "acme", "S", "B", false,
                               "[{\"to\": \"a@example.com\"}, {\"to\": \"b@example.com\"},"
                               " {\"to\": \"c@example.com\"}]");
    s_join(self, 3);
    s_got_t got[3];
    for (int i = 0; i < 3; i++)
        assert_int_equal(s_receive(self, S_WAIT_MS, &got[i]), 0);
    s_wait_metric(self, "fairq_tenant_inflight{tenant=\"acme\"} 3");
    assert_int_equal(fq_metrics_request_inflight(self->metrics, request), 3);
    int64_t inflight = 0;
    double rate = -1;
    fq_metrics_tenant_live(self->metrics, "acme", &inflight, &rate);
    assert_int_equal(inflight, 3);
    assert_true(rate == 0);

    s_ack(self, got[0].id);
    s_ack(self, got[1].id);
    fq_sender_nack_t nack = {.id = got[2].id, .permanent = true, .error = "550 no"};
    assert_int_equal(fq_client_tell(self->sender, FQ_PATH_DISPATCHER, &fq_sender_nack_desc, &nack),
                     0);
    s_wait_metric(self, "fairq_tenant_inflight{tenant=\"acme\"} 0");
    s_wait_metric(self, "fairq_tenant_sent_total{tenant=\"acme\"} 2");
    s_wait_metric(self, "fairq_tenant_dead_total{tenant=\"acme\"} 1");
    s_wait_metric(self, "fairq_tenant_dispatched_total{tenant=\"acme\"} 3");
    s_wait_metric(self, "fairq_dispatch_latency_seconds_count{tenant=\"acme\"} 3");
    assert_int_equal(fq_metrics_request_inflight(self->metrics, request), 0);
    fq_metrics_tenant_live(self->metrics, "acme", &inflight, &rate);
    assert_int_equal(inflight, 0);
    assert_true(rate > 0);
}

//  A campaign's chunks never take the last idle splitter: with two, one
//  stays free, and a newcomer's small request is split while the big ones
//  still have chunks to go (not after them).
static void test_a_splitter_stays_free_for_small_requests(void **state)
{
    s_fixture_t *self = *state;
    //  Three requests of three chunks each (10,000 recipients a chunk)
    char *big = fq_test_recipients("big", 25000);
    int64_t bigs[3];
    for (int i = 0; i < 3; i++)
        bigs[i] = s_submit(self, i % 2 ? "beta" : "acme", "Hi {{name}}", "Body", false, big);
    free(big);
    char ids[96];
    snprintf(ids, sizeof ids, "{%lld,%lld,%lld}", (long long)bigs[0], (long long)bigs[1],
             (long long)bigs[2]);
    const char *left_sql =
        "SELECT count(*) FROM fairq.recipient_chunks WHERE request_id = ANY($1::bigint[])";
    //  While only campaigns are waiting, at most one splitter splits them
    uint64_t most_busy = 0;
    int64_t deadline = fq_test_now_ms() + S_WAIT_MS;
    while (fq_test_int(self->conn, left_sql, 1, ids) > 3 && fq_test_now_ms() < deadline) {
        uint64_t busy = s_stat(self, FQ_PATH_SCHEDULER, "splitting");
        most_busy = busy > most_busy ? busy : most_busy;
        fq_test_sleep_ms(2);
    }
    assert_int_equal(most_busy, 1);
    //  A newcomer's request is split while chunks of the campaigns are left
    int64_t small = s_submit(self, "acme", "Hi {{name}}", "Body", false,
                             "[{\"to\": \"new@example.com\", \"fields\": {\"name\": \"N\"}}]");
    char small_id[24];
    fq_test_param(small_id, sizeof small_id, small);
    s_wait_int(self, "SELECT count(*) FROM fairq.messages WHERE request_id = $1", small_id, 1);
    assert_true(fq_test_int(self->conn, left_sql, 1, ids) > 0);
}

//  A small request split at its submit (0028) is taken in with its
//  messages, read by the query that finds it due: they go out with no
//  page of ids read, each destination's in its own lane.
static void test_a_request_split_at_submit_needs_no_page(void **state)
{
    s_fixture_t *self = *state;
    fq_test_exec(self->conn, "INSERT INTO fairq.destinations (name) VALUES ('bigmail')", 0);
    fq_test_exec(self->conn,
                 "INSERT INTO fairq.destination_domains (domain, destination)"
                 " VALUES ('big.example', 'bigmail')",
                 0);
    s_join(self, 2);
    uint64_t pages = s_stat(self, FQ_PATH_SCHEDULER, "page_reads");
    fq_test_exec(self->conn, "SET fairq.split_at_submit = on", 0);
    int64_t request =
        fq_test_int(self->conn,
                    "SELECT fairq.submit_json('acme', 'news@acme.example', 'Hi {{name}}', 'Body',"
                    " '[{\"to\": \"a@x.example\", \"fields\": {\"name\": \"A\"}},"
                    "   {\"to\": \"b@big.example\", \"fields\": {\"name\": \"B\"}}]')",
                    0);
    char id[24];
    fq_test_param(id, sizeof id, request);
    assert_int_equal(
        fq_test_int(self->conn,
                    "SELECT count(*) FROM fairq.requests WHERE id = $1 AND split_at_submit", 1, id),
        1);
    s_got_t got[2];
    assert_int_equal(s_receive(self, S_WAIT_MS, &got[0]), 0);
    assert_int_equal(s_receive(self, S_WAIT_MS, &got[1]), 0);
    char to[2][128];
    snprintf(to[0], sizeof to[0], "%s", got[0].to);
    snprintf(to[1], sizeof to[1], "%s", got[1].to);
    assert_true((strcmp(to[0], "a@x.example") == 0 && strcmp(to[1], "b@big.example") == 0) ||
                (strcmp(to[1], "a@x.example") == 0 && strcmp(to[0], "b@big.example") == 0));
    assert_int_equal(s_stat(self, FQ_PATH_SCHEDULER, "page_reads"), pages);
    //  Counted as split once, by the scheduler (no splitter split it)
    s_wait_metric(self, "fairq_tenant_split_total{tenant=\"acme\"} 2");
}

//  A split the database lost (a standby promoted before the split's
//  commit reached it), after its messages went out: the request's chunk
//  is back, its messages and counts are gone, and the sender's answers
//  name rows that no longer exist. The scheduler, which saw the request
//  split and sent all of it, splits it again at a poll and sends the new
//  rows, rather than leave its recipients unsent for ever.
static void test_a_split_the_database_lost_is_split_again(void **state)
{
    s_fixture_t *self = *state;
    int64_t request = s_submit(self, "acme", "Hi {{name}}", "Body", false,
                               "[{\"to\": \"a@example.com\", \"fields\": {\"name\": \"A\"}},"
                               " {\"to\": \"b@example.com\", \"fields\": {\"name\": \"B\"}}]");
    char id[24];
    fq_test_param(id, sizeof id, request);
    s_join(self, 2);
    s_got_t lost[2];
    for (int i = 0; i < 2; i++) {
        assert_int_equal(s_receive(self, S_WAIT_MS, &lost[i]), 0);
        assert_int_equal(lost[i].request, (uint64_t)request);
    }
    //  The database as it was before the split
    assert_int_equal(
        fq_test_int(self->conn,
                    "WITH back AS (INSERT INTO fairq.recipient_chunks"
                    "  (request_id, chunk_no, first_position, recipients)"
                    "  SELECT $1, 0, 0, json_agg(json_build_object('to', recipient, 'fields',"
                    "   fields) ORDER BY id) FROM fairq.messages WHERE request_id = $1),"
                    " gone AS (DELETE FROM fairq.messages WHERE request_id = $1 RETURNING 1),"
                    " reached AS (DELETE FROM fairq.request_destinations WHERE request_id = $1),"
                    " counted AS (UPDATE fairq.requests SET split = 0, status = 'accepted'"
                    "  WHERE id = $1)"
                    " SELECT count(*) FROM gone",
                    1, id),
        2);
    for (int i = 0; i < 2; i++)
        s_ack(self, lost[i].id);
    const char *messages_sql = "SELECT count(*) FROM fairq.messages WHERE request_id = $1";
    s_wait_int(self, messages_sql, id, 2);
    s_wait_int(self, "SELECT count(*) FROM fairq.recipient_chunks WHERE request_id = $1", id, 0);
    //  The new rows go out, as the credit the answers gave back allows
    for (int i = 0; i < 2; i++) {
        s_got_t got;
        assert_int_equal(s_receive(self, S_WAIT_MS, &got), 0);
        assert_int_equal(got.request, (uint64_t)request);
        assert_true(got.id != lost[0].id && got.id != lost[1].id);
        char message[24];
        assert_int_equal(fq_test_int(self->conn,
                                     "SELECT count(*) FROM fairq.messages WHERE id = $1"
                                     " AND status = 'pending'",
                                     1, fq_test_param(message, sizeof message, (int64_t)got.id)),
                         1);
    }
}

//  The secret of the http tests (Standard Webhooks' published example).
#define S_HTTP_SECRET "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

//  Submits an http request of tenant beta to one recipient whose fields
//  need encoding, signed with S_HTTP_SECRET.
static int64_t s_submit_http(s_fixture_t *self)
{
    fq_submit_t req = {
        .tenant = "beta",
        .channel = "http",
        .http_method = "POST",
        .http_url = "https://hooks.example/c/{{id}}?n={{name}}",
        .http_headers_json = "{\"X-Name\":\"{{name}}\"}",
        .http_body = "{\"name\": \"{{name}}\"}",
        .http_body_format = "json",
        .signing_secret = S_HTTP_SECRET,
        .recipients_json =
            "[{\"to\": \"cust-7\", \"fields\": {\"id\": 7, \"name\": \"A \\\"B\\\"\"}}]"};
    int64_t id;
    if (fq_store_submit(self->store, &req, &id))
        fail_msg("submit: %s", fq_store_error(self->store));
    return id;
}

//  The value of header name of message, or NULL.
static const char *s_header_of(const fq_message_t *message, const char *name)
{
    for (uint32_t i = 0; i < message->headers.count; i++)
        if (strcmp(message->headers.keys[i], name) == 0)
            return message->headers.values[i];
    return NULL;
}

//  Checks an http message as s_submit_http's request renders it: the URL
//  as its to, its fields encoded for each place, Content-Type from its
//  format, and the Standard Webhooks headers signing it.
static void s_check_http(const fq_message_t *message)
{
    assert_string_equal(message->channel, "http");
    assert_string_equal(message->method, "POST");
    assert_string_equal(message->to, "https://hooks.example/c/7?n=A%20%22B%22");
    assert_string_equal(message->body, "{\"name\": \"A \\\"B\\\"\"}");
    assert_string_equal(message->subject, "");
    assert_string_equal(message->from, "");
    assert_string_equal(s_header_of(message, "X-Name"), "A \"B\"");
    assert_string_equal(s_header_of(message, "Content-Type"), "application/json");
    char id[32];
    snprintf(id, sizeof id, "msg_%llu", (unsigned long long)message->id);
    assert_string_equal(s_header_of(message, "webhook-id"), id);
    long long stamp = atoll(s_header_of(message, "webhook-timestamp"));
    assert_true(llabs(stamp - (long long)time(NULL)) < 60);
    unsigned char key[FQ_HTTP_SECRET_MAX];
    int size = fq_http_secret_decode(S_HTTP_SECRET, key);
    char signature[FQ_HTTP_SIGNATURE_SIZE];
    assert_int_equal(
        fq_http_sign(key, (size_t)size, id, stamp, message->body, strlen(message->body), signature),
        0);
    assert_string_equal(s_header_of(message, "webhook-signature"), signature);
}

//  An http request's message, as a protocol 1 sender gets it: the
//  rendering of channels/fq_channel.h in MSG's to, method, headers and
//  body; a retry is signed again. A mail message keeps channel "" (the
//  email path is what it was).
static void test_http_messages_rendered_and_signed(void **state)
{
    s_fixture_t *self = *state;
    int64_t request = s_submit_http(self);
    const char *const channels[] = {"http", "email", NULL};
    const uint32_t credits[] = {1, 1};
    s_join_channels(self->sender, "test", "null,channel=email,channel=http", channels, credits);
    int64_t deadline = fq_test_now_ms() + S_WAIT_MS;
    fq_msg_t msg;
    fq_message_t message;
    do
        assert_int_equal(fq_client_recv(self->sender, S_WAIT_MS, &msg), 0);
    while (msg.type != FQ_MSG_MESSAGE && fq_test_now_ms() < deadline);
    assert_int_equal(fq_msg_decode(&msg, &fq_message_desc, &message), 0);
    assert_int_equal(message.request, (uint64_t)request);
    s_check_http(&message);
    s_ack(self, message.id);
    char id[24];
    s_wait_int(self, "SELECT sent FROM fairq.requests WHERE id = $1",
               fq_test_param(id, sizeof id, request), 1);
    s_submit(self, "acme", "Hi", "Body", false, "[{\"to\": \"m@example.com\"}]");
    do
        assert_int_equal(fq_client_recv(self->sender, S_WAIT_MS, &msg), 0);
    while (msg.type != FQ_MSG_MESSAGE && fq_test_now_ms() < deadline + S_WAIT_MS);
    assert_int_equal(fq_msg_decode(&msg, &fq_message_desc, &message), 0);
    assert_string_equal(message.channel, "");
    assert_string_equal(message.method, "");
    assert_string_equal(message.to, "m@example.com");
    assert_int_equal(message.headers.count, 0);
}

//  A batch sender's MESSAGES carry an http message and another channel's
//  (its body rendered as it is, for the recipient's key); a NACK's
//  retry_after_s holds the retry back that long.
static void test_channel_batches_and_retry_after(void **state)
{
    s_fixture_t *self = *state;
    int64_t http = s_submit_http(self);
    fq_submit_t sms = {.tenant = "acme",
                       .channel = "sms",
                       .body = "Code {{code}} & <b>",
                       .recipients_json = "[{\"to\": \"+49 170 1\", \"fields\": {\"code\": 42}}]"};
    int64_t other;
    if (fq_store_submit(self->store, &sms, &other))
        fail_msg("submit: %s", fq_store_error(self->store));
    const char *const channels[] = {"http", "sms", NULL};
    const uint32_t credits[] = {1, 1};
    s_join_channels(self->sender, "test", "null,batch,channel=http,channel=sms", channels, credits);
    uint32_t seen = 0;
    uint64_t http_id = 0;
    int64_t deadline = fq_test_now_ms() + S_WAIT_MS;
    while (seen < 2 && fq_test_now_ms() < deadline) {
        fq_msg_t msg;
        fq_messages_t batch;
        if (fq_client_recv(self->sender, S_WAIT_MS, &msg) != 0)
            break;
        if (msg.type != FQ_MSG_MESSAGES)
            continue;
        assert_int_equal(fq_msg_decode(&msg, &fq_messages_desc, &batch), 0);
        for (uint32_t i = 0; i < batch.messages.count; i++, seen++) {
            const fq_message_t *message = &batch.messages.items[i];
            if (message->request == (uint64_t)http) {
                s_check_http(message);
                http_id = message->id;
            } else {
                assert_int_equal(message->request, (uint64_t)other);
                assert_string_equal(message->channel, "sms");
                assert_string_equal(message->to, "+49 170 1");
                assert_string_equal(message->body, "Code 42 & <b>");
                assert_string_equal(message->method, "");
                s_ack(self, message->id);
            }
        }
    }
    assert_int_equal(seen, 2);
    assert_true(http_id > 0);
    fq_sender_nack_t nack = {
        .id = http_id, .permanent = false, .error = "503 busy", .retry_after_s = 3600};
    assert_int_equal(fq_client_tell(self->sender, FQ_PATH_DISPATCHER, &fq_sender_nack_desc, &nack),
                     0);
    char id[24];
    s_wait_int(self,
               "SELECT count(*) FROM fairq.messages WHERE id = $1 AND status = 'failed'"
               " AND next_attempt_at > now() + interval '3500 seconds'",
               fq_test_param(id, sizeof id, (int64_t)http_id), 1);
    s_wait_int(self, "SELECT sent FROM fairq.requests WHERE id = $1",
               fq_test_param(id, sizeof id, other), 1);
}

//  A message goes only to a sender with free credit for its channel: an
//  email-only sender (no channel= in its HELLO) never gets a webhook, and
//  credit it grants for a channel it did not list is dropped; the webhook
//  waits, pending and never tried, until a sender of http joins, and then
//  goes out though its own tenant has a mail backlog stuck at its relay.
//  An http sender whose http credit is spent gets nothing more, whatever
//  the mailer's email credit: each channel's credit is its own.
static void test_channels_routed_by_credit(void **state)
{
    s_fixture_t *self = *state;
    int64_t http = s_submit_http(self);
    char http_id[24];
    fq_test_param(http_id, sizeof http_id, http);
    s_wait_int(self, "SELECT count(*) FROM fairq.messages WHERE request_id = $1", http_id, 1);
    const char *const email[] = {"email", "http", NULL};
    const uint32_t email_credits[] = {5, 5};
    s_join_channels(self->sender, "mailer", "null", email, email_credits);
    s_wait_stat(self, FQ_PATH_DISPATCHER, "malformed", 1);
    fq_test_sleep_ms(S_QUIET_MS);
    fq_msg_t msg;
    assert_int_not_equal(fq_client_recv(self->sender, S_QUIET_MS, &msg), 0);
    assert_int_equal(fq_test_int(self->conn,
                                 "SELECT count(*) FROM fairq.messages WHERE request_id = $1"
                                 " AND status = 'pending' AND try_count = 0",
                                 1, http_id),
                     1);
    //  Mail still goes to it
    int64_t mail = s_submit(self, "acme", "Hi", "Body", false, "[{\"to\": \"m@example.com\"}]");
    s_got_t got;
    assert_int_equal(s_receive(self, S_WAIT_MS, &got), 0);
    assert_int_equal(got.request, (uint64_t)mail);
    s_ack(self, got.id);
    //  The webhook's own tenant has a mail backlog its relay does not
    //  answer (the mailer takes 5 and holds them): it slows no webhook
    char *backlog = fq_test_recipients("stuck", 40);
    int64_t stuck = s_submit(self, "beta", "Hi", "Body", false, backlog);
    free(backlog);
    for (int i = 0; i < 5; i++) {
        assert_int_equal(s_receive(self, S_WAIT_MS, &got), 0);
        assert_int_equal(got.request, (uint64_t)stuck);
    }
    //  A webhook sender joins: the waiting webhook goes to it
    fq_client_t *hooks = fq_client_new(self->sys);
    const char *const http_only[] = {"http", NULL};
    const uint32_t http_credits[] = {1};
    s_join_channels(hooks, "hooks", "null,channel=http", http_only, http_credits);
    int64_t deadline = fq_test_now_ms() + S_WAIT_MS;
    fq_message_t message;
    do
        assert_int_equal(fq_client_recv(hooks, S_WAIT_MS, &msg), 0);
    while (msg.type != FQ_MSG_MESSAGE && fq_test_now_ms() < deadline);
    assert_int_equal(fq_msg_decode(&msg, &fq_message_desc, &message), 0);
    s_check_http(&message);
    //  Its http credit is spent: a second webhook waits for its ack, the
    //  mailer's email credit notwithstanding
    int64_t second = s_submit_http(self);
    char second_id[24];
    fq_test_param(second_id, sizeof second_id, second);
    s_wait_int(self, "SELECT count(*) FROM fairq.messages WHERE request_id = $1", second_id, 1);
    assert_int_not_equal(fq_client_recv(hooks, S_QUIET_MS, &msg), 0);
    assert_int_not_equal(fq_client_recv(self->sender, 10, &msg), 0);
    fq_sender_ack_t ack = {.id = message.id};
    assert_int_equal(fq_client_tell(hooks, FQ_PATH_DISPATCHER, &fq_sender_ack_desc, &ack), 0);
    deadline = fq_test_now_ms() + S_WAIT_MS;
    do
        assert_int_equal(fq_client_recv(hooks, S_WAIT_MS, &msg), 0);
    while (msg.type != FQ_MSG_MESSAGE && fq_test_now_ms() < deadline);
    assert_int_equal(fq_msg_decode(&msg, &fq_message_desc, &message), 0);
    assert_int_equal(message.request, (uint64_t)second);
    //  The scheduler kept the lanes apart
    s_wait_stat(self, FQ_PATH_SCHEDULER, "dispatched.http", 2);
    s_wait_stat(self, FQ_PATH_SCHEDULER, "dispatched.email", 6);
    fq_client_destroy(&hooks);
}

//  Channels are an open set, so nobody can use them up: a tenant's
//  requests of 40 channels no sender serves, and a sender that says HELLO
//  again and again naming 4 new channels each time with credit for each,
//  leave webhooks flowing as before.
static void test_many_channels_block_nothing(void **state)
{
    s_fixture_t *self = *state;
    for (int i = 0; i < 40; i++) {
        char channel[16];
        snprintf(channel, sizeof channel, "junk%d", i);
        fq_submit_t junk = {.tenant = "acme",
                            .channel = channel,
                            .body = "x",
                            .recipients_json = "[{\"to\": \"k\"}]"};
        int64_t id;
        if (fq_store_submit(self->store, &junk, &id))
            fail_msg("submit: %s", fq_store_error(self->store));
    }
    for (int round = 0; round < 12; round++) {
        char capabilities[128], names[4][16];
        const char *channels[5] = {names[0], names[1], names[2], names[3], NULL};
        const uint32_t credits[] = {1, 1, 1, 1};
        for (int k = 0; k < 4; k++)
            snprintf(names[k], sizeof names[k], "c%d_%d", round, k);
        snprintf(capabilities, sizeof capabilities,
                 "null,channel=%s,channel=%s,channel=%s,channel=%s", names[0], names[1], names[2],
                 names[3]);
        s_join_channels(self->sender, "noisy", capabilities, channels, credits);
    }
    int64_t http = s_submit_http(self);
    fq_client_t *hooks = fq_client_new(self->sys);
    const char *const http_only[] = {"http", NULL};
    const uint32_t http_credits[] = {1};
    s_join_channels(hooks, "hooks", "null,channel=http", http_only, http_credits);
    int64_t deadline = fq_test_now_ms() + S_WAIT_MS;
    fq_msg_t msg;
    fq_message_t message;
    do
        assert_int_equal(fq_client_recv(hooks, S_WAIT_MS, &msg), 0);
    while (msg.type != FQ_MSG_MESSAGE && fq_test_now_ms() < deadline);
    assert_int_equal(fq_msg_decode(&msg, &fq_message_desc, &message), 0);
    assert_int_equal(message.request, (uint64_t)http);
    fq_client_destroy(&hooks);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_credit_bounds_what_is_sent, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_channels_routed_by_credit, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_many_channels_block_nothing, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_messages_are_rendered, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_nacks_retry_or_kill, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_bye_keeps_what_is_held, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_bad_messages_are_dropped, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_outcomes_only_from_the_holder, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_batch_sender_gets_messages_frames, s_setup,
                                        s_teardown),
        cmocka_unit_test_setup_teardown(test_acks_from_others_or_zero_are_dropped, s_setup,
                                        s_teardown),
        cmocka_unit_test_setup_teardown(test_requeue_honours_pause, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_cancelled_request_stops, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_paged_rows_go_with_their_picks, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_a_dispatch_keeps_its_order, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_a_tenant_is_not_pinned_to_a_sender, s_setup,
                                        s_teardown),
        cmocka_unit_test_setup_teardown(test_a_stale_row_is_loaded_again, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_a_message_cancelled_after_its_page_is_not_sent,
                                        s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_metrics_follow_the_messages, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_a_splitter_stays_free_for_small_requests, s_setup,
                                        s_teardown),
        cmocka_unit_test_setup_teardown(test_a_request_split_at_submit_needs_no_page, s_setup,
                                        s_teardown),
        cmocka_unit_test_setup_teardown(test_a_split_the_database_lost_is_split_again, s_setup,
                                        s_teardown),
        cmocka_unit_test_setup_teardown(test_http_messages_rendered_and_signed, s_setup,
                                        s_teardown),
        cmocka_unit_test_setup_teardown(test_channel_batches_and_retry_after, s_setup, s_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
