/*  fq_store_rates.c — each tenant's deliverability over a window (see
    fq_store_rates.h). */
#include "fq_store_rates.h"
#include "fq_store_internal.h"
#include "fq_error.h"
#include <stdio.h>
#include <stdlib.h>

//  One statement, one snapshot: every tenant, then per tenant its
//  deliveries from the requests that can hold some of the window's
//  (the unfinished ones from requests_open_idx, those finished in the
//  window from requests_finished_idx: neither grows with history), and its
//  window of rare events from events_feedback_rates_idx (0023), whose
//  predicate the type list below repeats word for word.
//
//  A request's deliveries in the window: its sent counter, times the share
//  of its span [greatest(created_at, send_at), updated_at] that lies in the
//  window (1 when the span began in it).
//
//  Measured with EXPLAIN ANALYZE (PostgreSQL 15, a laptop): a million
//  events over two days, 80,000 of them of the four types counted (40,000
//  in the window, a ten times worse day than a sender that keeps its
//  lists clean has), 100 tenants, 2,000 requests, 10,000 suppressions:
//  77 ms, every table read by an index; nearly all of it is the heap
//  fetch of each counted event (one page each: they lie among the
//  message.sent rows). See docs/feedback.md.
static const char *const S_RATES_SQL =
    "WITH w AS (SELECT now() - make_interval(secs => $2::int) AS start),"
    " r AS (SELECT tenant_id, sent, greatest(created_at, send_at) AS began, updated_at"
    "   FROM fairq.requests WHERE status IN " FQ_STORE_UNFINISHED
    "   AND channel = 'email' AND sent > 0"
    "  UNION ALL"
    "  SELECT tenant_id, sent, greatest(created_at, send_at), updated_at"
    "   FROM fairq.requests, w WHERE status IN " FQ_STORE_FINISHED " AND finished_at >= w.start"
    "   AND channel = 'email' AND sent > 0),"
    " d AS (SELECT r.tenant_id, round(sum(r.sent * CASE WHEN r.began >= w.start THEN 1"
    "     ELSE extract(epoch FROM r.updated_at - w.start)"
    "          / extract(epoch FROM r.updated_at - r.began) END))::bigint AS delivered"
    "   FROM r, w WHERE r.updated_at >= w.start GROUP BY r.tenant_id)"
    " SELECT t.id, t.name, coalesce(d.delivered, 0), e.bounces, e.refused, e.complaints,"
    "  e.unsubscribes,"
    "  (SELECT count(*) FROM fairq.suppressions s WHERE coalesce(s.tenant_id, 0) = t.id)"
    " FROM fairq.tenants t CROSS JOIN w LEFT JOIN d ON d.tenant_id = t.id"
    " CROSS JOIN LATERAL (SELECT"
    "   count(DISTINCT message_id) FILTER (WHERE type = 'message.bounced'"
    "    OR (type = 'message.dead' AND $1::text <> '' AND detail ~ $1::text)) AS bounces,"
    "   count(DISTINCT message_id) FILTER (WHERE type = 'message.dead'"
    "    AND $1::text <> '' AND detail ~ $1::text) AS refused,"
    "   count(*) FILTER (WHERE type = 'message.complained') AS complaints,"
    "   count(*) FILTER (WHERE type = 'message.unsubscribed') AS unsubscribes"
    "  FROM fairq.events e WHERE e.tenant_id = t.id AND e.at >= w.start"
    "   AND e.type IN ('message.dead', 'message.bounced', 'message.complained',"
    "                  'message.unsubscribed')) e"
    " ORDER BY t.name COLLATE \"C\"";

//  The planner's estimate of the statement above passes jit_above_cost
//  (its loop over tenants), and compiling it took longer than a quarter
//  of what it ran (28 of 115 ms; 77 without): a statement run once a minute gains
//  nothing from it. Off for its own transaction only.
static const char *const S_NO_JIT = "SELECT set_config('jit', 'off', true)";

static void s_rates_row(const PGresult *res, int row, void *item)
{
    fq_tenant_rates_t *out = item;
    *out = (fq_tenant_rates_t){.tenant_id = fq_store_int64(res, row, 0),
                               .delivered = fq_store_int64(res, row, 2),
                               .bounces = fq_store_int64(res, row, 3),
                               .bounces_refused = fq_store_int64(res, row, 4),
                               .complaints = fq_store_int64(res, row, 5),
                               .unsubscribes = fq_store_int64(res, row, 6),
                               .suppressions = fq_store_int64(res, row, 7)};
    snprintf(out->name, sizeof out->name, "%s", PQgetvalue(res, row, 1));
}

int fq_store_tenant_rates(fq_store_t *self, const char *bounce_pattern, int window_s,
                          fq_tenant_rates_list_t *list)
{
    *list = (fq_tenant_rates_list_t){0};
    if (window_s <= 0)
        return fq_store_fail(self, FQ_EINVAL,
                             "could not read tenant rates: window %d is not above 0", window_s);
    char window[FQ_STORE_INT_TEXT];
    snprintf(window, sizeof window, "%d", window_s);
    const char *params[] = {bounce_pattern ? bounce_pattern : "", window};
    int rc;
    PGresult *res = fq_store_query_after(self, S_NO_JIT, S_RATES_SQL, 2, params, PGRES_TUPLES_OK,
                                         "read tenant rates", false, &rc);
    if (!res)
        return rc;
    void *rows;
    rc = fq_store_rows(self, res, sizeof *list->rows, s_rates_row, &rows);
    list->rows = rows;
    list->count = rc > 0 ? (size_t)rc : 0;
    return rc;
}

void fq_tenant_rates_free(fq_tenant_rates_list_t *list)
{
    free(list->rows);
    *list = (fq_tenant_rates_list_t){0};
}

//  A ratio of two counts, at most 1; -1 when below is 0.
static double s_ratio(int64_t above, int64_t below)
{
    if (below <= 0)
        return -1;
    double ratio = (double)above / (double)below;
    return ratio > 1 ? 1 : ratio;
}

double fq_tenant_bounce_rate(const fq_tenant_rates_t *figures)
{
    return s_ratio(figures->bounces, figures->delivered + figures->bounces_refused);
}

double fq_tenant_complaint_rate(const fq_tenant_rates_t *figures)
{
    return s_ratio(figures->complaints, figures->delivered);
}
