/*  fairness_test.c — who sends next, as the scheduler uses it.

    The scheduler keeps one fq_fairness_t. It adds each active request
    (fq_fairness_request_add), pages ready message ids from PostgreSQL when
    asked (fq_fairness_next_refill, then fq_fairness_request_fill) and,
    whenever the dispatcher has free credit, takes the next message to send
    (fq_fairness_next). Acks, nacks and dead senders end in
    fq_fairness_done; retries and orphaned messages come back with
    fq_fairness_push.

    The tests stand in for PostgreSQL with a small simulated database: per
    request, the message rows the splitter has written so far, served page
    by page after an id cursor. A request's ids are computed, not stored, so
    a campaign of a million messages costs no memory.
*/
#include "fq_error.h"
#include "fq_fairness.h"
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>
#include <math.h>

//  Ids kept in memory per request: small, as in production, so that tests
//  cross the refill threshold (half of it) often.
#define S_PREFETCH 8

//  Room in flight for tenants in tests that ack every message at once.
#define S_ROOM 1000

//  Rows for a request that stays backlogged whatever a test does.
#define S_ENDLESS INT64_C(1000000)

//  Message ids of request r are r * S_ID_SPACE + 1, + 2, ...: distinct
//  across requests, ascending within one, and they tell whose they are.
#define S_ID_SPACE INT64_C(10000000)

//  The most requests one simulated database holds (the scale test).
#define S_MAX_REQUESTS 10000

//  Tenants by name, for the small tests.
enum { A = 1, B, C };

// --------------------------------------------------------------------------
//  The simulated database

typedef struct {
    int64_t tenant_id;
    int64_t written; //  Rows the splitter has written so far
} s_rows_t;

typedef struct {
    fq_fairness_t *fair;
    int prefetch;
    int64_t requests; //  Request ids 1..requests are taken
    s_rows_t *rows;   //  Indexed by request id
    int64_t *page;    //  One page of ids, prefetch long
} s_db_t;

static s_db_t *s_db_new(int prefetch)
{
    s_db_t *db = calloc(1, sizeof *db);
    assert_non_null(db);
    db->fair = fq_fairness_new(prefetch);
    assert_non_null(db->fair);
    db->prefetch = prefetch;
    db->rows = calloc(S_MAX_REQUESTS + 1, sizeof *db->rows);
    db->page = calloc((size_t)prefetch, sizeof *db->page);
    assert_non_null(db->rows);
    assert_non_null(db->page);
    return db;
}

static void s_db_destroy(s_db_t **db_p)
{
    s_db_t *db = *db_p;
    fq_fairness_destroy(&db->fair);
    free(db->rows);
    free(db->page);
    free(db);
    *db_p = NULL;
}

//  The id of a request's row (counted from 0).
static int64_t s_id(int64_t request_id, int64_t row)
{
    return request_id * S_ID_SPACE + 1 + row;
}

//  The splitter writes rows messages of a new request and the intake tells
//  the scheduler; returns the request id.
static int64_t s_db_request(s_db_t *db, int64_t tenant_id, int priority, int64_t rows,
                            bool split_done)
{
    assert_true(db->requests < S_MAX_REQUESTS);
    int64_t request_id = ++db->requests;
    db->rows[request_id] = (s_rows_t){tenant_id, rows};
    assert_int_equal(
        fq_fairness_request_add(db->fair, request_id, tenant_id, priority, 0, split_done), 0);
    return request_id;
}

//  SELECT id FROM message WHERE request_id = $1 AND id > $2 ORDER BY id
//  LIMIT $3, into db->page; returns how many rows came back.
static int s_db_page(s_db_t *db, int64_t request_id, int64_t after_id, int limit)
{
    assert_true(request_id >= 1 && request_id <= db->requests);
    assert_true(limit >= 1 && limit <= db->prefetch);
    int64_t row = after_id < s_id(request_id, 0) ? 0 : after_id - s_id(request_id, 0) + 1;
    int count = 0;
    while (count < limit && row < db->rows[request_id].written)
        db->page[count++] = s_id(request_id, row++);
    return count;
}

//  Answers every page the scheduler asks for; returns how many.
static int s_db_serve(s_db_t *db)
{
    int pages = 0;
    int64_t request_id, after_id;
    int limit;
    while (fq_fairness_next_refill(db->fair, &request_id, &after_id, &limit)) {
        int count = s_db_page(db, request_id, after_id, limit);
        assert_int_equal(fq_fairness_request_fill(db->fair, request_id, db->page, count), 0);
        pages++;
    }
    return pages;
}

//  A sender asks for a message: pages are served first, as the scheduler
//  would have done while the last message was out. Returns whether there
//  was one; it stays in flight.
static bool s_db_pick(s_db_t *db, fq_pick_t *pick)
{
    s_db_serve(db);
    if (!fq_fairness_next(db->fair, pick))
        return false;
    //  Every message comes from its own request's rows, of the right tenant
    assert_int_equal(pick->message_id / S_ID_SPACE, pick->request_id);
    assert_int_equal(db->rows[pick->request_id].tenant_id, pick->tenant_id);
    return true;
}

//  As s_db_pick, and the message is acked at once.
static bool s_db_send(s_db_t *db, fq_pick_t *pick)
{
    if (!s_db_pick(db, pick))
        return false;
    fq_fairness_done(db->fair, pick->tenant_id);
    return true;
}

static fq_fairness_stats_t s_stats(const fq_fairness_t *fair)
{
    fq_fairness_stats_t stats;
    fq_fairness_stats(fair, &stats);
    return stats;
}

//  A reproducible random number (xorshift64).
static uint64_t s_random(uint64_t *state)
{
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    return *state;
}

// --------------------------------------------------------------------------
//  1. Turns

//  Three backlogged tenants of equal weight send strictly in turn.
static void test_equal_tenants_take_turns(void **state)
{
    (void)state;
    s_db_t *db = s_db_new(S_PREFETCH);
    s_db_request(db, A, 0, S_ENDLESS, true);
    s_db_request(db, B, 0, S_ENDLESS, true);
    s_db_request(db, C, 0, S_ENDLESS, true);
    for (int k = 0; k < 300; k++) {
        fq_pick_t pick;
        assert_true(s_db_send(db, &pick));
        assert_int_equal(pick.tenant_id, A + k % 3);
    }
    s_db_destroy(&db);
}

//  A tenant's two requests alternate, one message each, each in id order.
static void test_requests_of_a_tenant_take_turns(void **state)
{
    (void)state;
    s_db_t *db = s_db_new(S_PREFETCH);
    int64_t campaign = s_db_request(db, A, 0, S_ENDLESS, true);
    int64_t small = s_db_request(db, A, 0, 10, true);
    for (int k = 0; k < 20; k++) {
        fq_pick_t pick;
        assert_true(s_db_send(db, &pick));
        int64_t request_id = k % 2 == 0 ? campaign : small;
        assert_int_equal(pick.request_id, request_id);
        assert_int_equal(pick.message_id, s_id(request_id, k / 2));
    }
    //  The small request is done: the campaign goes on alone
    assert_int_equal(s_stats(db->fair).requests, 1);
    for (int k = 10; k < 20; k++) {
        fq_pick_t pick;
        assert_true(s_db_send(db, &pick));
        assert_int_equal(pick.message_id, s_id(campaign, k));
    }
    s_db_destroy(&db);
}

//  A tenant's urgent request overtakes its own campaign, never other tenants.
static void test_priority_within_a_tenant(void **state)
{
    (void)state;
    s_db_t *db = s_db_new(S_PREFETCH);
    int64_t campaign = s_db_request(db, A, 0, S_ENDLESS, true);
    s_db_request(db, B, 0, S_ENDLESS, true);
    for (int k = 0; k < 10; k++) {
        fq_pick_t pick;
        assert_true(s_db_send(db, &pick));
    }
    //  Added later, sent first among A's messages
    int64_t urgent = s_db_request(db, A, 10, 5, true);
    int urgent_sent = 0, a_sent = 0, b_sent = 0;
    for (int k = 0; k < 20; k++) {
        fq_pick_t pick;
        assert_true(s_db_send(db, &pick));
        //  The tenants still alternate
        assert_int_equal(pick.tenant_id, A + k % 2);
        if (pick.tenant_id == B) {
            b_sent++;
            continue;
        }
        a_sent++;
        if (a_sent <= 5) {
            assert_int_equal(pick.request_id, urgent);
            assert_int_equal(pick.message_id, s_id(urgent, urgent_sent++));
        } else
            assert_int_equal(pick.request_id, campaign);
    }
    assert_int_equal(urgent_sent, 5);
    assert_int_equal(b_sent, 10);
    s_db_destroy(&db);
}

// --------------------------------------------------------------------------
//  2. Weights

//  A tenant of weight 3 sends three times as much as one of weight 1.
static void test_weights_share(void **state)
{
    (void)state;
    s_db_t *db = s_db_new(S_PREFETCH);
    assert_int_equal(fq_fairness_tenant_set(db->fair, A, 3, S_ROOM), 0);
    assert_int_equal(fq_fairness_tenant_set(db->fair, B, 1, S_ROOM), 0);
    s_db_request(db, A, 0, S_ENDLESS, true);
    s_db_request(db, B, 0, S_ENDLESS, true);
    int sent[B + 1] = {0};
    for (int k = 0; k < 10000; k++) {
        fq_pick_t pick;
        assert_true(s_db_send(db, &pick));
        sent[pick.tenant_id]++;
    }
    double ratio = (double)sent[A] / sent[B];
    if (ratio < 3 * 0.95 || ratio > 3 * 1.05)
        fail_msg("A sent %d, B sent %d: ratio %.3f, expected 3 within 5%%", sent[A], sent[B],
                 ratio);
    s_db_destroy(&db);
}

#define S_JAIN_TENANTS 100
#define S_JAIN_WINDOW  1000
#define S_JAIN_PICKS   100000
#define S_MAX_WEIGHT   5

//  Jain's fairness index of what each tenant sent divided by its weight:
//  1 when every tenant got exactly its weighted share, 1/n at worst.
static double s_jain(const int *sent, const int *weight, int tenants)
{
    double sum = 0, sum_squares = 0;
    for (int tenant = 1; tenant <= tenants; tenant++) {
        double normalised = (double)sent[tenant] / weight[tenant];
        sum += normalised;
        sum_squares += normalised * normalised;
    }
    return sum * sum / (tenants * sum_squares);
}

//  100 tenants of weights 1..5 get their weighted share in every 1,000 picks (Jain >= 0.99).
static void test_weighted_fairness_index(void **state)
{
    (void)state;
    s_db_t *db = s_db_new(S_PREFETCH);
    int weight[S_JAIN_TENANTS + 1];
    uint64_t seed = 20240601;
    for (int tenant = 1; tenant <= S_JAIN_TENANTS; tenant++) {
        weight[tenant] = 1 + (int)(s_random(&seed) % S_MAX_WEIGHT);
        assert_int_equal(fq_fairness_tenant_set(db->fair, tenant, weight[tenant], S_ROOM), 0);
        s_db_request(db, tenant, 0, S_ENDLESS, true);
    }
    //  Every window: the last 1,000 picks, after each pick
    int sent[S_JAIN_TENANTS + 1] = {0};
    int64_t *window = calloc(S_JAIN_WINDOW, sizeof *window);
    assert_non_null(window);
    double worst = 1;
    for (int k = 0; k < S_JAIN_PICKS; k++) {
        fq_pick_t pick;
        assert_true(s_db_send(db, &pick));
        if (k >= S_JAIN_WINDOW)
            sent[window[k % S_JAIN_WINDOW]]--;
        window[k % S_JAIN_WINDOW] = pick.tenant_id;
        sent[pick.tenant_id]++;
        if (k < S_JAIN_WINDOW - 1)
            continue;
        double jain = s_jain(sent, weight, S_JAIN_TENANTS);
        if (jain < 0.99)
            fail_msg("picks %d to %d: Jain's index %.4f < 0.99", k + 1 - S_JAIN_WINDOW, k, jain);
        if (jain < worst)
            worst = jain;
    }
    printf("fairness: worst Jain's index over every window of %d picks: %.4f\n", S_JAIN_WINDOW,
           worst);
    free(window);
    s_db_destroy(&db);
}

// --------------------------------------------------------------------------
//  3. Newcomers

//  Tenants arriving behind a million-message backlog are served at once.
static void test_newcomer_is_not_stuck_behind_a_backlog(void **state)
{
    (void)state;
    s_db_t *db = s_db_new(S_PREFETCH);
    int64_t backlog = s_db_request(db, A, 0, 1000000, true);
    fq_pick_t pick;
    for (int k = 0; k < 10000; k++) {
        assert_true(s_db_send(db, &pick));
        assert_int_equal(pick.message_id, s_id(backlog, k));
    }
    //  A million pending messages, a few of them in memory
    assert_true(s_stats(db->fair).prefetched <= S_PREFETCH);

    s_db_request(db, B, 0, 5, true);
    s_db_request(db, C, 0, 5, true);
    int sent[C + 1] = {0};
    //  One round of the three active tenants per message of B and C
    for (int k = 0; k < 15; k++) {
        assert_true(s_db_send(db, &pick));
        sent[pick.tenant_id]++;
        //  A is never paused either: it sends once in every three
        assert_int_equal(sent[A], k / 3 + 1);
    }
    assert_int_equal(sent[B], 5);
    assert_int_equal(sent[C], 5);
    //  B's and C's requests are done; A goes on alone
    assert_int_equal(s_stats(db->fair).requests, 1);
    assert_true(s_db_send(db, &pick));
    assert_int_equal(pick.tenant_id, A);
    s_db_destroy(&db);
}

// --------------------------------------------------------------------------
//  4. Max in flight

//  A tenant at its max in flight waits for acks; the others go on.
static void test_max_inflight(void **state)
{
    (void)state;
    s_db_t *db = s_db_new(S_PREFETCH);
    assert_int_equal(fq_fairness_tenant_set(db->fair, A, 1, 2), 0);
    s_db_request(db, A, 0, S_ENDLESS, true);
    s_db_request(db, B, 0, S_ENDLESS, true);
    int sent[B + 1] = {0};
    fq_pick_t pick;
    //  Nothing is acked
    for (int k = 0; k < 20; k++) {
        assert_true(s_db_pick(db, &pick));
        sent[pick.tenant_id]++;
    }
    assert_int_equal(sent[A], 2);
    assert_int_equal(sent[B], 18);
    assert_int_equal(s_stats(db->fair).inflight, 20);
    assert_int_equal(s_stats(db->fair).ready_tenants, 1);

    //  One of A's messages is acked: A gets one more turn, soon
    fq_fairness_done(db->fair, A);
    assert_int_equal(s_stats(db->fair).ready_tenants, 2);
    sent[A] = sent[B] = 0;
    for (int k = 0; k < 3; k++) {
        assert_true(s_db_pick(db, &pick));
        sent[pick.tenant_id]++;
    }
    assert_int_equal(sent[A], 1);
    for (int k = 0; k < 10; k++) {
        assert_true(s_db_pick(db, &pick));
        assert_int_equal(pick.tenant_id, B);
    }

    //  Raising the limit lets it back in too
    assert_int_equal(fq_fairness_tenant_set(db->fair, A, 1, 3), 0);
    sent[A] = sent[B] = 0;
    for (int k = 0; k < 10; k++) {
        assert_true(s_db_pick(db, &pick));
        sent[pick.tenant_id]++;
    }
    assert_int_equal(sent[A], 1);
    s_db_destroy(&db);
}

//  A held tenant (its send budget spent) sends nothing and slows nobody;
//  let back in, it takes its turns again by its weight. A hold given
//  before the tenant has any request holds its first request too.
static void test_tenant_hold(void **state)
{
    (void)state;
    s_db_t *db = s_db_new(S_PREFETCH);
    assert_int_equal(fq_fairness_tenant_set(db->fair, A, 2, S_ROOM), 0);
    s_db_request(db, A, 0, S_ENDLESS, true);
    s_db_request(db, B, 0, S_ENDLESS, true);
    assert_int_equal(fq_fairness_tenant_hold(db->fair, A, true), 0);
    fq_pick_t pick;
    for (int k = 0; k < 30; k++) {
        assert_true(s_db_send(db, &pick));
        assert_int_equal(pick.tenant_id, B);
    }
    assert_int_equal(s_stats(db->fair).ready_tenants, 1);
    //  Back in: A (weight 2) and B (weight 1) share 2:1 at once
    assert_int_equal(fq_fairness_tenant_hold(db->fair, A, false), 0);
    int sent[C + 1] = {0};
    for (int k = 0; k < 300; k++) {
        assert_true(s_db_send(db, &pick));
        sent[pick.tenant_id]++;
    }
    assert_int_equal(sent[A], 200);
    assert_int_equal(sent[B], 100);
    //  Held before it comes: C's first request waits
    assert_int_equal(fq_fairness_tenant_hold(db->fair, C, true), 0);
    s_db_request(db, C, 0, S_ENDLESS, true);
    for (int k = 0; k < 30; k++) {
        assert_true(s_db_send(db, &pick));
        assert_true(pick.tenant_id != C);
    }
    //  Everyone held: nothing to send, the prefetched ids kept
    assert_int_equal(fq_fairness_tenant_hold(db->fair, A, true), 0);
    assert_int_equal(fq_fairness_tenant_hold(db->fair, B, true), 0);
    assert_false(s_db_send(db, &pick));
    assert_true(s_stats(db->fair).prefetched > 0);
    assert_int_equal(fq_fairness_tenant_hold(db->fair, C, false), 0);
    assert_true(s_db_send(db, &pick));
    assert_int_equal(pick.tenant_id, C);
    assert_int_equal(fq_fairness_tenant_hold(db->fair, 0, true), FQ_EINVAL);
    s_db_destroy(&db);
}

//  Charged by cost (fairness by bytes or delivery time): weights buy
//  equal shares of cost, not of messages. A's messages cost 10 each, B's
//  1, C's 4; with A at weight 2, the costs served come out 2:1:1.
static void test_charge_by_cost(void **state)
{
    (void)state;
    s_db_t *db = s_db_new(S_PREFETCH);
    assert_int_equal(fq_fairness_tenant_set(db->fair, A, 2, S_ROOM), 0);
    s_db_request(db, A, 0, S_ENDLESS, true);
    s_db_request(db, B, 0, S_ENDLESS, true);
    s_db_request(db, C, 0, S_ENDLESS, true);
    const double cost[C + 1] = {0, 10, 1, 4};
    double served[C + 1] = {0};
    int sent[C + 1] = {0};
    fq_pick_t pick;
    for (int k = 0; k < 20000; k++) {
        assert_true(s_db_send(db, &pick));
        //  The pick charged 1; the rest once known
        fq_fairness_charge(db->fair, pick.tenant_id, cost[pick.tenant_id] - 1);
        served[pick.tenant_id] += cost[pick.tenant_id];
        sent[pick.tenant_id]++;
    }
    double total = served[A] + served[B] + served[C];
    //  Within one message's cost of the shares (2:1:1)
    assert_true(fabs(served[A] / total - 0.5) < 0.002);
    assert_true(fabs(served[B] / total - 0.25) < 0.002);
    assert_true(fabs(served[C] / total - 0.25) < 0.002);
    //  So A sends a fifth of B's messages (2 / 10 against 1 / 1)
    assert_true(fabs((double)sent[A] / sent[B] - 0.2) < 0.01);
    s_db_destroy(&db);
}

//  A debt stays with a tenant that is out of the turns meanwhile: one
//  with a single message in flight at a time (max_inflight 1), charged
//  as it finishes, pays for each all the same. A refund (a negative
//  charge) is credit; odd charges are ignored.
static void test_charge_debt_kept_while_out(void **state)
{
    (void)state;
    s_db_t *db = s_db_new(S_PREFETCH);
    assert_int_equal(fq_fairness_tenant_set(db->fair, A, 1, 1), 0);
    s_db_request(db, A, 0, S_ENDLESS, true);
    s_db_request(db, B, 0, S_ENDLESS, true);
    fq_pick_t pick;
    int sent[B + 1] = {0};
    for (int k = 0; k < 4000; k++) {
        assert_true(s_db_pick(db, &pick));
        sent[pick.tenant_id]++;
        //  A is out of the ring while its one message is in flight: the
        //  charge comes then, and the answer after it
        if (pick.tenant_id == A)
            fq_fairness_charge(db->fair, A, 9);
        fq_fairness_done(db->fair, pick.tenant_id);
    }
    //  A's 10-unit messages get a tenth of B's count
    assert_true(fabs((double)sent[A] / sent[B] - 0.1) < 0.01);
    fq_fairness_charge(db->fair, 99, 5);  //  Unknown: ignored
    fq_fairness_charge(db->fair, A, NAN); //  Not a number: ignored
    //  Refunded: A's messages cost less than their picks charged, so its
    //  weight buys more of them, at once
    assert_int_equal(fq_fairness_tenant_set(db->fair, A, 1, S_ROOM), 0);
    int a_sent = 0;
    for (int k = 0; k < 60; k++) {
        assert_true(s_db_send(db, &pick));
        if (pick.tenant_id == A) {
            a_sent++;
            fq_fairness_charge(db->fair, A, -0.9); //  A cost 0.1
        }
    }
    //  Ten of A's (cost 0.1 each) to one of B's (cost 1)
    assert_true(a_sent >= 50);
    s_db_destroy(&db);
}

// --------------------------------------------------------------------------
//  5. The refill protocol

//  A new request has nothing to send until its first page comes.
static void test_refill_of_a_new_request(void **state)
{
    (void)state;
    fq_fairness_t *fair = fq_fairness_new(S_PREFETCH);
    assert_non_null(fair);
    assert_int_equal(fq_fairness_request_add(fair, 1, A, 0, 100, false), 0);
    fq_pick_t pick;
    assert_int_equal(fq_fairness_next(fair, &pick), 0);
    assert_int_equal(s_stats(fair).ready_tenants, 0);

    int64_t request_id, after_id;
    int limit;
    assert_int_equal(fq_fairness_next_refill(fair, &request_id, &after_id, &limit), 1);
    assert_int_equal(request_id, 1);
    assert_int_equal(after_id, 100);
    assert_true(limit >= 1 && limit <= S_PREFETCH);
    //  Asked once only
    assert_int_equal(fq_fairness_next_refill(fair, &request_id, &after_id, &limit), 0);

    const int64_t page[] = {101, 103, 104, 110};
    assert_int_equal(fq_fairness_request_fill(fair, 1, page, 4), 0);
    assert_int_equal(s_stats(fair).prefetched, 4);
    assert_int_equal(s_stats(fair).ready_tenants, 1);
    //  The ids go out in order
    for (int k = 0; k < 4; k++) {
        assert_int_equal(fq_fairness_next(fair, &pick), 1);
        assert_int_equal(pick.message_id, page[k]);
        assert_int_equal(pick.request_id, 1);
        assert_int_equal(pick.tenant_id, A);
    }
    fq_fairness_destroy(&fair);
}

//  A request asks for its next page once, when its buffer falls to half.
static void test_refill_at_half_once(void **state)
{
    (void)state;
    fq_fairness_t *fair = fq_fairness_new(S_PREFETCH);
    assert_non_null(fair);
    assert_int_equal(fq_fairness_request_add(fair, 1, A, 0, 0, true), 0);
    int64_t request_id, after_id;
    int limit;
    assert_int_equal(fq_fairness_next_refill(fair, &request_id, &after_id, &limit), 1);
    assert_int_equal(limit, S_PREFETCH);
    const int64_t page[S_PREFETCH] = {1, 2, 3, 4, 5, 6, 7, 8};
    assert_int_equal(fq_fairness_request_fill(fair, 1, page, S_PREFETCH), 0);

    fq_pick_t pick;
    //  8 -> 5 buffered: above half, no page yet
    for (int k = 0; k < 3; k++)
        assert_int_equal(fq_fairness_next(fair, &pick), 1);
    assert_int_equal(fq_fairness_next_refill(fair, &request_id, &after_id, &limit), 0);
    //  4 then 3 buffered: asked for once
    assert_int_equal(fq_fairness_next(fair, &pick), 1);
    assert_int_equal(fq_fairness_next(fair, &pick), 1);
    assert_int_equal(fq_fairness_next_refill(fair, &request_id, &after_id, &limit), 1);
    assert_int_equal(request_id, 1);
    assert_int_equal(after_id, 8);
    assert_true(limit >= 1 && limit <= S_PREFETCH);
    assert_int_equal(fq_fairness_next_refill(fair, &request_id, &after_id, &limit), 0);
    //  Still not twice while that page is being fetched
    assert_int_equal(fq_fairness_next(fair, &pick), 1);
    assert_int_equal(pick.message_id, 6);
    assert_int_equal(fq_fairness_next_refill(fair, &request_id, &after_id, &limit), 0);

    const int64_t next_page[] = {9, 10, 11};
    assert_int_equal(fq_fairness_request_fill(fair, 1, next_page, 3), 0);
    for (int64_t id = 7; id <= 11; id++) {
        assert_int_equal(fq_fairness_next(fair, &pick), 1);
        assert_int_equal(pick.message_id, id);
    }
    fq_fairness_destroy(&fair);
}

//  A request's buffer starts small and grows with the pages that come: a
//  campaign's pages of a full prefetch are held whole, wrapped around the
//  ring or not, and come out in order.
static void test_buffer_grows_with_pages(void **state)
{
    (void)state;
    enum { PREFETCH = 256 };
    fq_fairness_t *fair = fq_fairness_new(PREFETCH);
    assert_non_null(fair);
    //  Still being split: a short page does not end it
    assert_int_equal(fq_fairness_request_add(fair, 1, A, 0, 0, false), 0);
    assert_int_equal(fq_fairness_tenant_set(fair, A, 1, 100000), 0);
    int64_t request_id, after_id, next_id = 1, expected = 1;
    int limit;
    int64_t page[PREFETCH];
    fq_pick_t pick;
    //  A first page of 5, two of them picked (the ring's head moves), then
    //  pages of up to the whole prefetch
    for (int round = 0; round < 6; round++) {
        assert_int_equal(fq_fairness_next_refill(fair, &request_id, &after_id, &limit), 1);
        assert_int_equal(after_id, next_id - 1);
        int n = round == 0 ? 5 : limit;
        for (int i = 0; i < n; i++)
            page[i] = next_id++;
        assert_int_equal(fq_fairness_request_fill(fair, 1, page, n), 0);
        int picks = round == 0 ? 2 : PREFETCH / 2 + 1;
        for (int k = 0; k < picks; k++) {
            assert_int_equal(fq_fairness_next(fair, &pick), 1);
            assert_int_equal(pick.message_id, expected++);
            fq_fairness_done(fair, A);
        }
    }
    assert_true(next_id > 5 * PREFETCH / 2);
    while (fq_fairness_next(fair, &pick) == 1) {
        assert_int_equal(pick.message_id, expected++);
        fq_fairness_done(fair, A);
        if (fq_fairness_next_refill(fair, &request_id, &after_id, &limit))
            assert_int_equal(fq_fairness_request_fill(fair, 1, page, 0), 0);
    }
    assert_int_equal(expected, next_id);
    fq_fairness_destroy(&fair);
}

//  A fully split request ends with a short page, and is gone once sent.
static void test_short_page_of_split_request_exhausts_it(void **state)
{
    (void)state;
    fq_fairness_t *fair = fq_fairness_new(S_PREFETCH);
    assert_non_null(fair);
    assert_int_equal(fq_fairness_request_add(fair, 1, A, 0, 0, true), 0);
    int64_t request_id, after_id;
    int limit;
    assert_int_equal(fq_fairness_next_refill(fair, &request_id, &after_id, &limit), 1);
    const int64_t page[] = {1, 2, 3};
    assert_int_equal(fq_fairness_request_fill(fair, 1, page, 3), 0);
    fq_pick_t pick;
    for (int k = 0; k < 3; k++) {
        assert_int_equal(s_stats(fair).requests, 1);
        assert_int_equal(fq_fairness_next(fair, &pick), 1);
        //  No page asked past the end
        assert_int_equal(fq_fairness_next_refill(fair, &request_id, &after_id, &limit), 0);
    }
    assert_int_equal(s_stats(fair).requests, 0);
    assert_int_equal(s_stats(fair).ready_tenants, 0);
    assert_int_equal(fq_fairness_next(fair, &pick), 0);

    //  An empty request is gone as soon as its empty page comes
    assert_int_equal(fq_fairness_request_add(fair, 2, A, 0, 0, true), 0);
    assert_int_equal(fq_fairness_next_refill(fair, &request_id, &after_id, &limit), 1);
    assert_int_equal(fq_fairness_request_fill(fair, 2, NULL, 0), 0);
    assert_int_equal(s_stats(fair).requests, 0);
    fq_fairness_destroy(&fair);
}

//  A request still being split waits for more rows instead of ending.
static void test_short_page_of_unsplit_request_waits_for_split(void **state)
{
    (void)state;
    fq_fairness_t *fair = fq_fairness_new(S_PREFETCH);
    assert_non_null(fair);
    assert_int_equal(fq_fairness_request_add(fair, 1, A, 0, 0, false), 0);
    int64_t request_id, after_id;
    int limit;
    assert_int_equal(fq_fairness_next_refill(fair, &request_id, &after_id, &limit), 1);
    const int64_t page[] = {1, 2};
    assert_int_equal(fq_fairness_request_fill(fair, 1, page, 2), 0);
    fq_pick_t pick;
    assert_int_equal(fq_fairness_next(fair, &pick), 1);
    assert_int_equal(fq_fairness_next(fair, &pick), 1);
    //  Sent everything it had, and is still there
    assert_int_equal(s_stats(fair).requests, 1);
    assert_int_equal(fq_fairness_next(fair, &pick), 0);
    //  It looks once more; the splitter has written nothing since
    assert_int_equal(fq_fairness_next_refill(fair, &request_id, &after_id, &limit), 1);
    assert_int_equal(after_id, 2);
    assert_int_equal(fq_fairness_request_fill(fair, 1, NULL, 0), 0);
    assert_int_equal(s_stats(fair).requests, 1);
    //  Then waits for the splitter rather than asking again and again
    assert_int_equal(fq_fairness_next_refill(fair, &request_id, &after_id, &limit), 0);

    //  The splitter wrote the last rows
    fq_fairness_request_split(fair, 1, true);
    assert_int_equal(fq_fairness_next_refill(fair, &request_id, &after_id, &limit), 1);
    assert_int_equal(request_id, 1);
    assert_int_equal(after_id, 2);
    const int64_t last_page[] = {3, 4, 5};
    assert_int_equal(fq_fairness_request_fill(fair, 1, last_page, 3), 0);
    for (int64_t id = 3; id <= 5; id++) {
        assert_int_equal(fq_fairness_next(fair, &pick), 1);
        assert_int_equal(pick.message_id, id);
    }
    assert_int_equal(s_stats(fair).requests, 0);
    fq_fairness_destroy(&fair);
}

//  A small request split whole hands its ids over at once: they go out
//  in order with no page asked for, and the request then ends. One with a
//  page coming, or ids buffered, is paged instead.
static void test_split_all_needs_no_page(void **state)
{
    (void)state;
    fq_fairness_t *fair = fq_fairness_new(S_PREFETCH);
    assert_non_null(fair);
    //  Added before its split: it waits in the refill queue
    assert_int_equal(fq_fairness_request_add(fair, 1, A, 0, 10, false), 0);
    const int64_t ids[] = {11, 12, 15};
    assert_int_equal(fq_fairness_request_split_all(fair, 1, ids, 3), 0);
    int64_t request_id, after_id;
    int limit;
    assert_int_equal(fq_fairness_next_refill(fair, &request_id, &after_id, &limit), 0);
    assert_int_equal(s_stats(fair).ready_tenants, 1);
    fq_pick_t pick;
    for (int k = 0; k < 3; k++) {
        assert_int_equal(fq_fairness_next(fair, &pick), 1);
        assert_int_equal(pick.message_id, ids[k]);
        assert_int_equal(pick.request_id, 1);
        assert_int_equal(fq_fairness_next_refill(fair, &request_id, &after_id, &limit), 0);
    }
    assert_int_equal(s_stats(fair).requests, 0);
    assert_int_equal(fq_fairness_next(fair, &pick), 0);

    //  A request whose page is being fetched is not filled twice
    assert_int_equal(fq_fairness_request_add(fair, 2, B, 0, 0, false), 0);
    assert_int_equal(fq_fairness_next_refill(fair, &request_id, &after_id, &limit), 1);
    assert_int_equal(request_id, 2);
    const int64_t other[] = {21, 22};
    assert_int_equal(fq_fairness_request_split_all(fair, 2, other, 2), FQ_ECONFLICT);
    assert_int_equal(fq_fairness_request_fill(fair, 2, other, 2), 0);
    //  Nor one with ids buffered
    assert_int_equal(fq_fairness_request_split_all(fair, 2, other, 2), FQ_ECONFLICT);
    assert_int_equal(fq_fairness_request_split_all(fair, 99, other, 2), FQ_ENOTFOUND);
    assert_int_equal(s_stats(fair).prefetched, 2);
    fq_fairness_destroy(&fair);
}

//  Rows the splitter writes while a page is being fetched are not lost.
static void test_split_during_refill(void **state)
{
    (void)state;
    s_db_t *db = s_db_new(S_PREFETCH);
    int64_t request = s_db_request(db, A, 0, 3, false);
    int64_t request_id, after_id;
    int limit;
    assert_int_equal(fq_fairness_next_refill(db->fair, &request_id, &after_id, &limit), 1);
    //  The page is read while only 3 rows exist...
    int count = s_db_page(db, request, after_id, limit);
    assert_int_equal(count, 3);
    //  ...the splitter writes the last 7 and says so before the page is back
    db->rows[request].written = 10;
    fq_fairness_request_split(db->fair, request, true);
    assert_int_equal(fq_fairness_request_fill(db->fair, request, db->page, count), 0);
    fq_pick_t pick;
    for (int k = 0; k < 10; k++) {
        assert_true(s_db_send(db, &pick));
        assert_int_equal(pick.message_id, s_id(request, k));
    }
    assert_false(s_db_send(db, &pick));
    assert_int_equal(s_stats(db->fair).requests, 0);
    s_db_destroy(&db);
}

//  Ids at or before the cursor in a page are ignored: nothing goes twice.
static void test_page_ids_before_cursor_ignored(void **state)
{
    (void)state;
    fq_fairness_t *fair = fq_fairness_new(S_PREFETCH);
    assert_non_null(fair);
    assert_int_equal(fq_fairness_request_add(fair, 1, A, 0, 100, false), 0);
    int64_t request_id, after_id;
    int limit;
    assert_int_equal(fq_fairness_next_refill(fair, &request_id, &after_id, &limit), 1);
    const int64_t page[] = {99, 100, 101, 102};
    assert_int_equal(fq_fairness_request_fill(fair, 1, page, 4), 0);
    assert_int_equal(s_stats(fair).prefetched, 2);
    fq_pick_t pick;
    assert_int_equal(fq_fairness_next(fair, &pick), 1);
    assert_int_equal(pick.message_id, 101);
    assert_int_equal(fq_fairness_next(fair, &pick), 1);
    assert_int_equal(pick.message_id, 102);

    //  A page overlapping the last one
    assert_int_equal(fq_fairness_next_refill(fair, &request_id, &after_id, &limit), 1);
    assert_int_equal(after_id, 102);
    const int64_t overlap[] = {101, 102, 103};
    assert_int_equal(fq_fairness_request_fill(fair, 1, overlap, 3), 0);
    assert_int_equal(s_stats(fair).prefetched, 1);
    assert_int_equal(fq_fairness_next(fair, &pick), 1);
    assert_int_equal(pick.message_id, 103);
    assert_int_equal(fq_fairness_next(fair, &pick), 0);
    fq_fairness_destroy(&fair);
}

// --------------------------------------------------------------------------
//  6. Push and done

//  A retry or a dead sender's message goes before the request's others.
static void test_push_goes_first(void **state)
{
    (void)state;
    s_db_t *db = s_db_new(S_PREFETCH);
    int64_t request = s_db_request(db, A, 0, 100, true);
    fq_pick_t first, second, pick;
    assert_true(s_db_pick(db, &first));
    assert_true(s_db_pick(db, &second));
    assert_int_equal(s_stats(db->fair).inflight, 2);
    size_t prefetched = s_stats(db->fair).prefetched;

    //  The first one is nacked for a retry later
    fq_fairness_done(db->fair, A);
    //  The second one's sender died: it goes back, and is no longer in flight
    assert_int_equal(fq_fairness_push(db->fair, request, A, second.message_id), 0);
    fq_fairness_done(db->fair, A);
    assert_int_equal(s_stats(db->fair).inflight, 0);
    assert_int_equal(s_stats(db->fair).prefetched, prefetched + 1);
    //  The retry of the first one comes due
    assert_int_equal(fq_fairness_push(db->fair, request, A, first.message_id), 0);

    assert_true(s_db_send(db, &pick));
    assert_int_equal(pick.message_id, s_id(request, 0));
    assert_true(s_db_send(db, &pick));
    assert_int_equal(pick.message_id, s_id(request, 1));
    for (int k = 2; k < 100; k++) {
        assert_true(s_db_send(db, &pick));
        assert_int_equal(pick.message_id, s_id(request, k));
    }
    assert_false(s_db_send(db, &pick));
    s_db_destroy(&db);
}

//  A retry of a request no longer active is sent, and the request ends again.
static void test_push_for_unknown_request(void **state)
{
    (void)state;
    fq_fairness_t *fair = fq_fairness_new(S_PREFETCH);
    assert_non_null(fair);
    assert_int_equal(fq_fairness_push(fair, 7, B, 700), 0);
    assert_int_equal(fq_fairness_push(fair, 7, B, 701), 0);
    fq_fairness_stats_t stats = s_stats(fair);
    assert_int_equal(stats.requests, 1);
    assert_int_equal(stats.tenants, 1);
    assert_int_equal(stats.ready_tenants, 1);
    assert_int_equal(stats.prefetched, 2);
    //  Nothing to page: it holds what was pushed
    int64_t request_id, after_id;
    int limit;
    assert_int_equal(fq_fairness_next_refill(fair, &request_id, &after_id, &limit), 0);

    fq_pick_t pick;
    assert_int_equal(fq_fairness_next(fair, &pick), 1);
    assert_int_equal(pick.message_id, 701);
    assert_int_equal(pick.request_id, 7);
    assert_int_equal(pick.tenant_id, B);
    assert_int_equal(fq_fairness_next(fair, &pick), 1);
    assert_int_equal(pick.message_id, 700);
    assert_int_equal(s_stats(fair).requests, 0);
    assert_int_equal(fq_fairness_next(fair, &pick), 0);
    fq_fairness_destroy(&fair);
}

//  Acks bring a tenant's in flight count down, never below zero.
static void test_done_decrements_inflight(void **state)
{
    (void)state;
    s_db_t *db = s_db_new(S_PREFETCH);
    s_db_request(db, A, 0, 100, true);
    s_db_request(db, B, 0, 100, true);
    fq_pick_t pick;
    for (int k = 0; k < 4; k++)
        assert_true(s_db_pick(db, &pick));
    assert_int_equal(s_stats(db->fair).inflight, 4);
    fq_fairness_done(db->fair, A);
    assert_int_equal(s_stats(db->fair).inflight, 3);
    fq_fairness_done(db->fair, A);
    fq_fairness_done(db->fair, A);  //  A had only 2 out
    fq_fairness_done(db->fair, 99); //  Unknown tenant
    assert_int_equal(s_stats(db->fair).inflight, 2);
    fq_fairness_done(db->fair, B);
    fq_fairness_done(db->fair, B);
    assert_int_equal(s_stats(db->fair).inflight, 0);
    s_db_destroy(&db);
}

// --------------------------------------------------------------------------
//  7. Remove

//  A cancelled request's buffered ids are forgotten and its tenant stops.
static void test_remove_drops_prefetch(void **state)
{
    (void)state;
    s_db_t *db = s_db_new(S_PREFETCH);
    int64_t cancelled = s_db_request(db, A, 0, 100, true);
    s_db_request(db, B, 0, 100, true);
    s_db_serve(db);
    assert_int_equal(s_stats(db->fair).prefetched, 2 * S_PREFETCH);
    assert_int_equal(s_stats(db->fair).ready_tenants, 2);

    fq_fairness_request_remove(db->fair, cancelled);
    fq_fairness_stats_t stats = s_stats(db->fair);
    assert_int_equal(stats.requests, 1);
    assert_int_equal(stats.prefetched, S_PREFETCH);
    assert_int_equal(stats.ready_tenants, 1);
    fq_pick_t pick;
    for (int k = 0; k < 20; k++) {
        assert_true(s_db_send(db, &pick));
        assert_int_equal(pick.tenant_id, B);
    }
    s_db_destroy(&db);
}

//  Removing a request that is not active changes nothing.
static void test_remove_unknown_is_noop(void **state)
{
    (void)state;
    s_db_t *db = s_db_new(S_PREFETCH);
    s_db_request(db, A, 0, 100, true);
    s_db_serve(db);
    fq_fairness_stats_t before = s_stats(db->fair);
    fq_fairness_request_remove(db->fair, 12345);
    fq_fairness_stats_t after = s_stats(db->fair);
    assert_int_equal(after.tenants, before.tenants);
    assert_int_equal(after.requests, before.requests);
    assert_int_equal(after.ready_tenants, before.ready_tenants);
    assert_int_equal(after.prefetched, before.prefetched);
    assert_int_equal(after.inflight, before.inflight);
    s_db_destroy(&db);
}

//  A removed request is no longer paged, whether queued or being fetched.
static void test_remove_queued_for_refill(void **state)
{
    (void)state;
    fq_fairness_t *fair = fq_fairness_new(S_PREFETCH);
    assert_non_null(fair);
    for (int64_t id = 1; id <= 4; id++)
        assert_int_equal(fq_fairness_request_add(fair, id, A, 0, 0, false), 0);
    assert_int_equal(fq_fairness_request_add(fair, 6, A, 0, 0, false), 0);
    fq_fairness_request_remove(fair, 2);
    fq_fairness_request_remove(fair, 6); //  The last in the queue
    fq_fairness_request_remove(fair, 4); //  The last again
    int64_t request_id, after_id;
    int limit;
    assert_int_equal(fq_fairness_next_refill(fair, &request_id, &after_id, &limit), 1);
    assert_int_equal(request_id, 1);
    //  Removed while its page is being fetched: the late page is refused
    fq_fairness_request_remove(fair, 1);
    const int64_t page[] = {1, 2};
    assert_int_equal(fq_fairness_request_fill(fair, 1, page, 2), FQ_ENOTFOUND);
    assert_int_equal(fq_fairness_next_refill(fair, &request_id, &after_id, &limit), 1);
    assert_int_equal(request_id, 3);
    assert_int_equal(fq_fairness_next_refill(fair, &request_id, &after_id, &limit), 0);
    //  The queue still works after removals at its end
    assert_int_equal(fq_fairness_request_add(fair, 5, A, 0, 0, false), 0);
    assert_int_equal(fq_fairness_next_refill(fair, &request_id, &after_id, &limit), 1);
    assert_int_equal(request_id, 5);
    assert_int_equal(s_stats(fair).prefetched, 0);
    fq_fairness_destroy(&fair);
}

// --------------------------------------------------------------------------
//  8. Scale

#define S_SCALE_TENANTS     1000
#define S_SCALE_REQUESTS    10000
#define S_SCALE_PICKS       1000000
#define S_SCALE_CHECK_EVERY 10000
#define S_NS_PER_S          1000000000.0

//  10,000 requests: memory stays within the prefetches over a million fair picks.
static void test_many_requests(void **state)
{
    (void)state;
    s_db_t *db = s_db_new(S_PREFETCH);
    for (int request = 0; request < S_SCALE_REQUESTS; request++)
        s_db_request(db, 1 + request % S_SCALE_TENANTS, 0, S_ENDLESS, true);
    s_db_serve(db);
    const size_t bound = (size_t)S_SCALE_REQUESTS * S_PREFETCH;
    assert_true(s_stats(db->fair).prefetched <= bound);

    int *sent = calloc(S_SCALE_TENANTS + 1, sizeof *sent);
    assert_non_null(sent);
    struct timespec start, end;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (int k = 0; k < S_SCALE_PICKS; k++) {
        fq_pick_t pick;
        assert_true(s_db_send(db, &pick));
        sent[pick.tenant_id]++;
        if (k % S_SCALE_CHECK_EVERY == 0)
            assert_true(s_stats(db->fair).prefetched <= bound);
    }
    clock_gettime(CLOCK_MONOTONIC, &end);
    double elapsed =
        (double)(end.tv_sec - start.tv_sec) * S_NS_PER_S + (double)(end.tv_nsec - start.tv_nsec);
    printf("fairness: %d picks over %d requests, %.0f ns/pick (including simulated pages "
           "and acks)\n",
           S_SCALE_PICKS, S_SCALE_REQUESTS, elapsed / S_SCALE_PICKS);

    fq_fairness_stats_t stats = s_stats(db->fair);
    assert_true(stats.prefetched <= bound);
    assert_int_equal(stats.requests, S_SCALE_REQUESTS);
    assert_int_equal(stats.tenants, S_SCALE_TENANTS);
    assert_int_equal(stats.inflight, 0);
    for (int tenant = 1; tenant <= S_SCALE_TENANTS; tenant++)
        assert_int_equal(sent[tenant], S_SCALE_PICKS / S_SCALE_TENANTS);
    free(sent);
    s_db_destroy(&db);
}

// --------------------------------------------------------------------------
//  9. Bad input

//  Nonsense settings and ids are refused with a code, never a crash.
static void test_bad_input(void **state)
{
    (void)state;
    assert_null(fq_fairness_new(1));
    assert_null(fq_fairness_new(0));
    assert_null(fq_fairness_new(-8));

    fq_fairness_t *fair = fq_fairness_new(S_PREFETCH);
    assert_non_null(fair);
    assert_int_equal(fq_fairness_tenant_set(fair, A, 0, 10), FQ_EINVAL);
    assert_int_equal(fq_fairness_tenant_set(fair, A, -1, 10), FQ_EINVAL);
    assert_int_equal(fq_fairness_tenant_set(fair, A, 1, 0), FQ_EINVAL);
    assert_int_equal(fq_fairness_tenant_set(fair, A, 1, -1), FQ_EINVAL);
    assert_int_equal(s_stats(fair).tenants, 0);

    assert_int_equal(fq_fairness_request_add(fair, 1, A, 0, 0, true), 0);
    assert_int_equal(fq_fairness_request_add(fair, 1, B, 5, 0, false), FQ_EEXIST);
    assert_int_equal(s_stats(fair).requests, 1);
    assert_int_equal(s_stats(fair).tenants, 1);

    const int64_t page[] = {1};
    assert_int_equal(fq_fairness_request_fill(fair, 999, page, 1), FQ_ENOTFOUND);
    assert_int_equal(fq_fairness_request_fill(fair, 1, page, -1), FQ_EINVAL);
    assert_int_equal(s_stats(fair).prefetched, 0);

    //  Database ids start at 1: anything else is refused, not an abort
    assert_int_equal(fq_fairness_tenant_set(fair, 0, 1, 1), FQ_EINVAL);
    assert_int_equal(fq_fairness_request_add(fair, 0, A, 0, 0, true), FQ_EINVAL);
    assert_int_equal(fq_fairness_request_add(fair, 2, 0, 0, 0, true), FQ_EINVAL);
    assert_int_equal(fq_fairness_request_add(fair, -3, A, 0, 0, true), FQ_EINVAL);
    assert_int_equal(fq_fairness_push(fair, 0, A, 5), FQ_EINVAL);
    assert_int_equal(fq_fairness_push(fair, 2, 0, 5), FQ_EINVAL);
    assert_int_equal(fq_fairness_request_fill(fair, 0, page, 1), FQ_ENOTFOUND);
    fq_fairness_request_remove(fair, 0);
    fq_fairness_request_split(fair, 0, true);
    fq_fairness_done(fair, 0);
    fq_fairness_stats_t stats = s_stats(fair);
    assert_int_equal(stats.requests, 1);
    assert_int_equal(stats.tenants, 1);
    assert_int_equal(stats.prefetched, 0);

    fq_fairness_destroy(&fair);
    assert_null(fair);
    fq_fairness_destroy(&fair);
}

// --------------------------------------------------------------------------
//  10. Everything at once

#define S_MIX_TENANTS  6
#define S_MIX_REQUESTS 100
#define S_MIX_ROWS     100
#define S_MIX_STEPS    200000

//  A page read from the database and not yet delivered to the scheduler.
typedef struct {
    int64_t request_id;
    int count;
    int64_t ids[S_PREFETCH];
} s_pending_page_t;

typedef struct {
    s_db_t *db;
    int64_t total[S_MIX_REQUESTS + 1]; //  Rows each request will have
    int *acked[S_MIX_REQUESTS + 1];    //  Per row: times acked
    s_pending_page_t pages[S_MIX_REQUESTS];
    int page_count;
    fq_pick_t *out; //  Messages the senders have
    size_t out_count, out_size;
    int late_splits; //  Last rows written while a page was being read
    uint64_t seed;
} s_mix_t;

static int s_mix_random(s_mix_t *mix, int below)
{
    return (int)(s_random(&mix->seed) % (uint64_t)below);
}

//  The store reads the next page the scheduler asks for, if any; it comes
//  back later.
static bool s_mix_read_page(s_mix_t *mix)
{
    assert_true(mix->page_count < S_MIX_REQUESTS);
    s_pending_page_t *page = &mix->pages[mix->page_count];
    int64_t after_id;
    int limit;
    if (!fq_fairness_next_refill(mix->db->fair, &page->request_id, &after_id, &limit))
        return false;
    page->count = s_db_page(mix->db, page->request_id, after_id, limit);
    memcpy(page->ids, mix->db->page, (size_t)page->count * sizeof *page->ids);
    mix->page_count++;
    return true;
}

//  One read page arrives (any of them: the store answers out of order).
static void s_mix_deliver_page(s_mix_t *mix)
{
    if (mix->page_count == 0)
        return;
    int k = s_mix_random(mix, mix->page_count);
    s_pending_page_t *page = &mix->pages[k];
    assert_int_equal(
        fq_fairness_request_fill(mix->db->fair, page->request_id, page->ids, page->count), 0);
    mix->pages[k] = mix->pages[--mix->page_count];
}

//  The splitter writes some more rows of a request: often one whose page
//  is being read, the race most likely to lose messages.
static void s_mix_split(s_mix_t *mix)
{
    int64_t request_id = 1 + s_mix_random(mix, S_MIX_REQUESTS);
    if (mix->page_count > 0 && s_mix_random(mix, 2) == 0)
        request_id = mix->pages[s_mix_random(mix, mix->page_count)].request_id;
    s_rows_t *rows = &mix->db->rows[request_id];
    if (rows->written == mix->total[request_id])
        return;
    rows->written += 1 + s_mix_random(mix, S_PREFETCH / 2);
    if (rows->written > mix->total[request_id])
        rows->written = mix->total[request_id];
    bool split_done = rows->written == mix->total[request_id];
    for (int k = 0; k < mix->page_count; k++)
        if (split_done && mix->pages[k].request_id == request_id)
            mix->late_splits++;
    fq_fairness_request_split(mix->db->fair, request_id, split_done);
}

static void s_mix_pick(s_mix_t *mix)
{
    fq_pick_t pick;
    if (!fq_fairness_next(mix->db->fair, &pick))
        return;
    assert_int_equal(pick.message_id / S_ID_SPACE, pick.request_id);
    assert_int_equal(mix->db->rows[pick.request_id].tenant_id, pick.tenant_id);
    if (mix->out_count == mix->out_size) {
        mix->out_size = mix->out_size ? mix->out_size * 2 : 64;
        mix->out = realloc(mix->out, mix->out_size * sizeof *mix->out);
        assert_non_null(mix->out);
    }
    mix->out[mix->out_count++] = pick;
}

//  A sender answers for one of the messages out: an ack, or a nack (or its
//  death) putting the message back.
static void s_mix_answer(s_mix_t *mix, bool ack)
{
    if (mix->out_count == 0)
        return;
    size_t k = (size_t)s_mix_random(mix, (int)mix->out_count);
    fq_pick_t pick = mix->out[k];
    mix->out[k] = mix->out[--mix->out_count];
    if (ack)
        mix->acked[pick.request_id][pick.message_id - s_id(pick.request_id, 0)]++;
    else
        assert_int_equal(
            fq_fairness_push(mix->db->fair, pick.request_id, pick.tenant_id, pick.message_id), 0);
    fq_fairness_done(mix->db->fair, pick.tenant_id);
}

static void s_mix_settings(s_mix_t *mix)
{
    int64_t tenant_id = 1 + s_mix_random(mix, S_MIX_TENANTS);
    assert_int_equal(fq_fairness_tenant_set(mix->db->fair, tenant_id, 1 + s_mix_random(mix, 4),
                                            1 + s_mix_random(mix, 5)),
                     0);
}

//  In any mix of splits, late pages, acks, nacks and retries, every message is acked once.
static void test_everything_at_once(void **state)
{
    (void)state;
    s_mix_t *mix = calloc(1, sizeof *mix);
    assert_non_null(mix);
    mix->db = s_db_new(S_PREFETCH);
    mix->seed = 77;
    for (int request = 1; request <= S_MIX_REQUESTS; request++) {
        int64_t tenant_id = 1 + s_mix_random(mix, S_MIX_TENANTS);
        int64_t total = s_mix_random(mix, S_MIX_ROWS);
        int64_t written = s_mix_random(mix, (int)total + 1);
        assert_int_equal(
            s_db_request(mix->db, tenant_id, s_mix_random(mix, 3), written, written == total),
            request);
        mix->total[request] = total;
        mix->acked[request] = calloc((size_t)total + 1, sizeof(int));
        assert_non_null(mix->acked[request]);
    }
    //  Splitting, paging out of order, sending, acks, nacks, dead senders
    //  and setting changes, all at once
    for (int step = 0; step < S_MIX_STEPS; step++) {
        switch (s_mix_random(mix, 8)) {
        case 0:
            s_mix_split(mix);
            break;
        case 1:
            s_mix_read_page(mix);
            break;
        case 2:
            s_mix_deliver_page(mix);
            break;
        case 3:
        case 4:
            s_mix_pick(mix);
            break;
        case 5:
            s_mix_answer(mix, true);
            break;
        case 6:
            s_mix_answer(mix, s_mix_random(mix, 4) != 0);
            break;
        default:
            if (s_mix_random(mix, 100) == 0)
                s_mix_settings(mix);
        }
        assert_int_equal(s_stats(mix->db->fair).inflight, mix->out_count);
    }
    //  The splitter finishes, the store answers, senders ack
    for (int64_t request = 1; request <= S_MIX_REQUESTS; request++)
        while (mix->db->rows[request].written < mix->total[request])
            s_mix_split(mix);
    int steps = 0;
    for (;; steps++) {
        assert_true(steps < S_MIX_STEPS);
        s_mix_pick(mix);
        s_mix_answer(mix, true);
        while (mix->page_count > 0)
            s_mix_deliver_page(mix);
        //  Nothing to page, send or ack: the scheduler has nothing left
        if (!s_mix_read_page(mix) && mix->out_count == 0 && s_stats(mix->db->fair).prefetched == 0)
            break;
    }
    for (int64_t request = 1; request <= S_MIX_REQUESTS; request++)
        for (int64_t row = 0; row < mix->total[request]; row++)
            if (mix->acked[request][row] != 1)
                fail_msg("request %lld row %lld acked %d times", (long long)request, (long long)row,
                         mix->acked[request][row]);
    //  That race did happen
    printf("fairness: %d splits finished while a page was being read\n", mix->late_splits);
    assert_true(mix->late_splits > 0);
    fq_fairness_stats_t stats = s_stats(mix->db->fair);
    assert_int_equal(stats.requests, 0);
    assert_int_equal(stats.ready_tenants, 0);
    assert_int_equal(stats.inflight, 0);
    for (int request = 1; request <= S_MIX_REQUESTS; request++)
        free(mix->acked[request]);
    free(mix->out);
    s_db_destroy(&mix->db);
    free(mix);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_equal_tenants_take_turns),
        cmocka_unit_test(test_requests_of_a_tenant_take_turns),
        cmocka_unit_test(test_priority_within_a_tenant),
        cmocka_unit_test(test_weights_share),
        cmocka_unit_test(test_weighted_fairness_index),
        cmocka_unit_test(test_newcomer_is_not_stuck_behind_a_backlog),
        cmocka_unit_test(test_max_inflight),
        cmocka_unit_test(test_tenant_hold),
        cmocka_unit_test(test_charge_by_cost),
        cmocka_unit_test(test_charge_debt_kept_while_out),
        cmocka_unit_test(test_refill_of_a_new_request),
        cmocka_unit_test(test_refill_at_half_once),
        cmocka_unit_test(test_buffer_grows_with_pages),
        cmocka_unit_test(test_short_page_of_split_request_exhausts_it),
        cmocka_unit_test(test_short_page_of_unsplit_request_waits_for_split),
        cmocka_unit_test(test_split_all_needs_no_page),
        cmocka_unit_test(test_split_during_refill),
        cmocka_unit_test(test_page_ids_before_cursor_ignored),
        cmocka_unit_test(test_push_goes_first),
        cmocka_unit_test(test_push_for_unknown_request),
        cmocka_unit_test(test_done_decrements_inflight),
        cmocka_unit_test(test_remove_drops_prefetch),
        cmocka_unit_test(test_remove_unknown_is_noop),
        cmocka_unit_test(test_remove_queued_for_refill),
        cmocka_unit_test(test_many_requests),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_everything_at_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
