/*  store_feedback_test.c — bounces and complaints that arrive after
    delivery (fq_store_feedback.h, migration 0022): matched by message and
    recipient only, one event each however often reported, suppressed as
    the policy says. Against a real PostgreSQL. */
#include "fq_error.h"
#include "fq_store.h"
#include "fq_store_feedback.h"
#include "fq_test_db.h"
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>
#include "fq_test_sql.h"

static char s_conninfo[128];
static int64_t s_tenant;

static int s_group_setup(void **state)
{
    (void)state;
    const char *tenants[] = {"shop", NULL};
    return fq_test_db_prepare(s_conninfo, sizeof s_conninfo, tenants, &s_tenant);
}

static int s_group_teardown(void **state)
{
    (void)state;
    fq_test_db_drop();
    return 0;
}

//  Splits a request of recipients (a JSON array) of tenant shop and puts
//  the ids of its messages, in recipient order, into ids.
static void s_messages(fq_store_t *store, const char *recipients, int64_t *ids, int count)
{
    fq_submit_t req = {.tenant = "shop",
                       .from = "news@shop.example",
                       .subject = "Hi",
                       .body = "Hello",
                       .recipients_json = recipients};
    int64_t id = fq_test_submit_split(store, &req, NULL, 0);
    assert_int_equal(fq_store_next_ready(store, id, 0, count, ids), count);
}

static int64_t s_count(PGconn *conn, const char *sql, const char *param)
{
    return fq_test_int(conn, sql, 1, param);
}

static void test_bounce_matched_once_and_suppressed(void **state)
{
    (void)state;
    fq_store_t *store = fq_test_store(s_conninfo);
    int64_t ids[2];
    s_messages(store, "[{\"to\":\"Gone@Example.com\"},{\"to\":\"soft@example.com\"}]", ids, 2);
    char pattern[FQ_STORE_BOUNCE_PATTERN_SIZE];
    assert_int_equal(fq_store_bounce_pattern("5.1.1,5.1.2", pattern, NULL, 0), 0);
    fq_feedback_policy_t policy = {.bounce_pattern = pattern, .suppress_complaints = true};
    fq_feedback_t bounce = {.kind = FQ_FEEDBACK_BOUNCE,
                            .message_id = ids[0],
                            .recipient = "gone@EXAMPLE.com",
                            .status = "5.1.1",
                            .diagnostic = "smtp; 550 5.1.1 no such\r\n user"};
    fq_feedback_result_t result;
    assert_int_equal(fq_store_feedback_record(store, &bounce, &policy, &result), 0);
    assert_int_equal(result.outcome, FQ_FEEDBACK_RECORDED);
    assert_true(result.suppressed);
    assert_int_equal(result.tenant_id, s_tenant);
    assert_string_equal(result.tenant, "shop");
    //  Again: nothing more
    assert_int_equal(fq_store_feedback_record(store, &bounce, &policy, &result), 0);
    assert_int_equal(result.outcome, FQ_FEEDBACK_DUPLICATE);
    assert_false(result.suppressed);
    assert_string_equal(fq_feedback_outcome_name(result.outcome), "duplicate");
    PGconn *conn = fq_test_connect(s_conninfo);
    char id[24];
    fq_test_param(id, sizeof id, ids[0]);
    assert_int_equal(s_count(conn,
                             "SELECT count(*) FROM fairq.events WHERE message_id = $1"
                             " AND type = 'message.bounced' AND recipient = 'Gone@Example.com'"
                             " AND detail = '5.1.1 smtp; 550 5.1.1 no such   user'",
                             id),
                     1);
    assert_int_equal(s_count(conn,
                             "SELECT count(*) FROM fairq.suppressions WHERE tenant_id = $1"
                             " AND address = 'gone@example.com' AND reason = 'bounce'",
                             fq_test_param((char[24]){0}, 24, s_tenant)),
                     1);
    //  A bounce whose status the pattern does not name: its event, no
    //  suppression; a basic code matched as the reply's first word
    fq_feedback_t soft = {.kind = FQ_FEEDBACK_BOUNCE,
                          .message_id = ids[1],
                          .recipient = "soft@example.com",
                          .status = "5.2.2",
                          .diagnostic = "smtp; 552 5.2.2 mailbox full"};
    assert_int_equal(fq_store_feedback_record(store, &soft, &policy, &result), 0);
    assert_int_equal(result.outcome, FQ_FEEDBACK_RECORDED);
    assert_false(result.suppressed);
    PQfinish(conn);
    fq_store_destroy(&store);
}

static void test_other_recipient_and_no_message(void **state)
{
    (void)state;
    fq_store_t *store = fq_test_store(s_conninfo);
    int64_t ids[1];
    s_messages(store, "[{\"to\":\"alice@example.com\"}]", ids, 1);
    fq_feedback_policy_t policy = {.suppress_complaints = true};
    fq_feedback_t forged = {.kind = FQ_FEEDBACK_COMPLAINT,
                            .message_id = ids[0],
                            .recipient = "mallory@example.com",
                            .diagnostic = "abuse"};
    fq_feedback_result_t result;
    assert_int_equal(fq_store_feedback_record(store, &forged, &policy, &result), 0);
    assert_int_equal(result.outcome, FQ_FEEDBACK_OTHER_RECIPIENT);
    assert_false(result.suppressed);
    forged.message_id = ids[0] + 1000000;
    assert_int_equal(fq_store_feedback_record(store, &forged, &policy, &result), 0);
    assert_int_equal(result.outcome, FQ_FEEDBACK_NO_MESSAGE);
    assert_int_equal(result.tenant_id, 0);
    //  Original-Recipient matches too when the final one was rewritten
    fq_feedback_t complaint = {.kind = FQ_FEEDBACK_COMPLAINT,
                               .message_id = ids[0],
                               .recipient = "alice.forwarded@elsewhere.example",
                               .original_recipient = "ALICE@example.com",
                               .diagnostic = "abuse"};
    assert_int_equal(fq_store_feedback_record(store, &complaint, &policy, &result), 0);
    assert_int_equal(result.outcome, FQ_FEEDBACK_RECORDED);
    assert_true(result.suppressed);
    PGconn *conn = fq_test_connect(s_conninfo);
    assert_int_equal(fq_test_int(conn,
                                 "SELECT count(*) FROM fairq.suppressions WHERE"
                                 " address = 'alice@example.com' AND reason = 'complaint'"
                                 " AND detail = 'abuse'",
                                 0),
                     1);
    assert_int_equal(fq_test_int(conn,
                                 "SELECT count(*) FROM fairq.events WHERE"
                                 " type = 'message.complained' AND recipient = 'alice@example.com'",
                                 0),
                     1);
    assert_int_equal(fq_test_int(conn,
                                 "SELECT count(*) FROM fairq.suppressions WHERE"
                                 " address = 'mallory@example.com'",
                                 0),
                     0);
    PQfinish(conn);
    fq_store_destroy(&store);
}

//  suppress_complaints false: the event, no suppression. Bad input is
//  FQ_EINVAL.
static void test_policy_off_and_bad_input(void **state)
{
    (void)state;
    fq_store_t *store = fq_test_store(s_conninfo);
    int64_t ids[1];
    s_messages(store, "[{\"to\":\"keep@example.com\"}]", ids, 1);
    fq_feedback_policy_t policy = {.suppress_complaints = false};
    fq_feedback_t complaint = {.kind = FQ_FEEDBACK_COMPLAINT,
                               .message_id = ids[0],
                               .recipient = "keep@example.com",
                               .diagnostic = "abuse \xff"};
    fq_feedback_result_t result;
    assert_int_equal(fq_store_feedback_record(store, &complaint, &policy, &result), 0);
    assert_int_equal(result.outcome, FQ_FEEDBACK_RECORDED);
    assert_false(result.suppressed);
    complaint.recipient = NULL;
    assert_int_equal(fq_store_feedback_record(store, &complaint, &policy, &result), FQ_EINVAL);
    complaint.recipient = "keep@example.com";
    complaint.message_id = 0;
    assert_int_equal(fq_store_feedback_record(store, &complaint, &policy, &result), FQ_EINVAL);
    fq_store_destroy(&store);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bounce_matched_once_and_suppressed),
        cmocka_unit_test(test_other_recipient_and_no_message),
        cmocka_unit_test(test_policy_off_and_bad_input),
    };
    return cmocka_run_group_tests(tests, s_group_setup, s_group_teardown);
}
