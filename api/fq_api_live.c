/*  fq_api_live.c — /v1/senders and /v1/share (api/API.md): what the
    leading fairqd holds in memory (metrics/fq_metrics.h) of its senders
    and of each tenant's share of dispatch, for a console to draw. Nothing
    here is read from the database: a fairqd that does not lead answers
    empty lists, and the figures start again when fairqd restarts. */
#include "fq_api_internal.h"
#include "fq_metrics.h"
#include "fq_utf8.h"
#include <string.h>
#include <time.h>

#define S_MS_PER_S      1000
#define S_NS_PER_MS     1000000
#define S_SECONDS_PER_M 60

//  The window of /v1/share: 1..S_SHARE_MINUTES_MAX minutes, as many as the
//  metrics keep.
#define S_SHARE_MINUTES_MAX (FQ_METRICS_SHARE_SLOTS * FQ_METRICS_SHARE_SLOT_S / S_SECONDS_PER_M)
#define S_SLOTS_PER_MINUTE  (S_SECONDS_PER_M / FQ_METRICS_SHARE_SLOT_S)

//  A minute is whole slots, and the longest window asked for is no more
//  slots than the ring keeps: else minutes * S_SLOTS_PER_MINUTE would ask
//  fq_metrics_share for a window other than the one API.md promises
_Static_assert(S_SECONDS_PER_M % FQ_METRICS_SHARE_SLOT_S == 0,
               "a minute is a whole number of share slots");
_Static_assert(S_SHARE_MINUTES_MAX >= 1 &&
                   S_SHARE_MINUTES_MAX * S_SLOTS_PER_MINUTE <= FQ_METRICS_SHARE_SLOTS,
               "the longest /v1/share window fits the metrics' ring of slots");

//  Milliseconds of the wall clock: the share is kept on the monotonic one,
//  and only its "until" is told as a time.
static int64_t s_wall_ms(void)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    return (int64_t)now.tv_sec * S_MS_PER_S + now.tv_nsec / S_NS_PER_MS;
}

void fq_api_sender_list(fq_api_call_t *call)
{
    if (!fq_api_query_allowed(call, NULL))
        return;
    fq_metrics_sender_list_t list;
    if (fq_metrics_senders(call->server->metrics, &list) != 0) {
        fq_api_fail(call, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
        return;
    }
    json_t *rows = json_array();
    for (size_t i = 0; rows && i < list.count; i++) {
        fq_metrics_sender_view_t *s = &list.rows[i];
        //  Its name and address are its peer's choice: a JSON string must
        //  be UTF-8
        fq_utf8_replace_invalid(s->name, strlen(s->name), '?');
        fq_utf8_replace_invalid(s->address, strlen(s->address), '?');
        //  Never a sender left out of the list: the whole answer fails
        if (json_array_append_new(
                rows, json_pack("{s:s, s:s, s:b, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "name",
                                s->name, "address", s->address, "connected", s->connected, "credit",
                                (json_int_t)s->credit, "inflight", (json_int_t)s->inflight,
                                "dispatched", (json_int_t)s->dispatched, "sent",
                                (json_int_t)s->sent, "failed", (json_int_t)s->failed, "dead",
                                (json_int_t)s->dead, "requeued", (json_int_t)s->requeued)) != 0) {
            json_decref(rows);
            rows = NULL;
        }
    }
    fq_metrics_sender_list_free(&list);
    //  "o" takes rows even when the pack fails (jansson 2.11 and later)
    fq_api_reply(call, MHD_HTTP_OK, rows ? json_pack("{s:o}", "senders", rows) : NULL);
}

void fq_api_share(fq_api_call_t *call)
{
    static const char *const names[] = {"minutes", NULL};
    int64_t minutes;
    if (!fq_api_query_allowed(call, names) ||
        !fq_api_parse_int(call, fq_api_query(call, "minutes"), "minutes", 1, S_SHARE_MINUTES_MAX,
                          S_SHARE_MINUTES_MAX, &minutes))
        return;
    //  A tenant token sees its own tenant's share only
    fq_metrics_share_list_t list;
    if (fq_metrics_share(call->server->metrics, (size_t)minutes * S_SLOTS_PER_MINUTE,
                         call->owner.admin ? NULL : call->owner.tenant, &list) != 0) {
        fq_api_fail(call, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
        return;
    }
    //  The end of the newest slot, the current one: a little ahead of now,
    //  rounded to the second
    int64_t until_s = (s_wall_ms() + list.until_in_ms + S_MS_PER_S / 2) / S_MS_PER_S;
    json_t *tenants = json_array();
    for (size_t i = 0; tenants && i < list.count; i++) {
        json_t *counts = json_array();
        for (size_t k = 0; counts && k < list.slots; k++)
            if (json_array_append_new(counts,
                                      json_integer((json_int_t)list.rows[i].dispatched[k])) != 0) {
                json_decref(counts);
                counts = NULL;
            }
        //  A tenant or a slot left out would misdraw the share: the whole
        //  answer fails instead ("o" takes counts even when the pack fails)
        if (!counts ||
            json_array_append_new(tenants, json_pack("{s:s, s:o}", "name", list.rows[i].name,
                                                     "dispatched", counts)) != 0) {
            json_decref(tenants);
            tenants = NULL;
        }
    }
    fq_metrics_share_list_free(&list);
    fq_api_reply(call, MHD_HTTP_OK,
                 tenants ? json_pack("{s:i, s:o, s:o}", "slot_s", FQ_METRICS_SHARE_SLOT_S, "until",
                                     fq_api_time(until_s), "tenants", tenants)
                         : NULL);
}
