/*  fq_api_events.c — /v1/events: what happened to messages and requests,
    a page at a time in reading order, with a cursor to poll from
    (api/API.md; the store's read is fq_store_events.h). A tenant's token
    reads its own tenant only: the store's filter gets its tenant id
    whatever the query says, and a tenant or request of another answers as
    one that does not exist. */
#include "fq_api_internal.h"
#include "fq_store_events.h"

//  What a bad value may be quoted with in a detail, at most.
#define S_QUOTE_MAX 40

//  The event object of API.md.
static json_t *s_event_json(const fq_event_t *e)
{
    return json_pack("{s:I, s:s, s:o, s:o, s:s, s:o, s:o, s:o}", "id", (json_int_t)e->id, "tenant",
                     e->tenant, "request",
                     e->request_id ? json_integer(e->request_id) : json_null(), "message",
                     e->message_id ? json_integer(e->message_id) : json_null(), "type", e->type,
                     "recipient", e->recipient ? json_string(e->recipient) : json_null(), "detail",
                     e->detail ? json_string(e->detail) : json_null(), "at", fq_api_time(e->at));
}

void fq_api_event_list(fq_api_call_t *call)
{
    static const char *const params[] = {"tenant", "request", "type", "after", "limit", NULL};
    fq_event_filter_t filter = {.tenant_id = call->owner.tenant_id};
    int64_t limit;
    if (!fq_api_query_allowed(call, params) ||
        !fq_api_parse_id(call, fq_api_query(call, "request"), "request", true,
                         &filter.request_id) ||
        !fq_api_parse_int(call, fq_api_query(call, "limit"), "limit", 1, FQ_STORE_PAGE_MAX,
                          FQ_API_PAGE_DEFAULT, &limit))
        return;
    filter.tenant = fq_api_query(call, "tenant");
    filter.type = fq_api_query(call, "type");
    if (filter.type && !fq_event_type(filter.type)) {
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST,
                    "type must be one of " FQ_EVENT_TYPES_TEXT ", not \"%.*s\"", S_QUOTE_MAX,
                    filter.type);
        return;
    }
    //  A malformed cursor, an empty tenant name: the store's words (400);
    //  a tenant or request unknown, or another tenant's: 404
    fq_event_page_t page;
    int rc = fq_store_events(call->store, &filter, fq_api_query(call, "after"), (int)limit, &page);
    if (rc < 0) {
        fq_api_fail_store(call, rc);
        return;
    }
    json_t *rows = json_array();
    for (size_t i = 0; rows && i < page.count; i++) {
        //  Never an event left out of its page: a poller would pass it
        if (json_array_append_new(rows, s_event_json(&page.rows[i])) != 0) {
            json_decref(rows);
            rows = NULL;
        }
    }
    if (!rows) {
        fq_api_fail(call, MHD_HTTP_INTERNAL_SERVER_ERROR,
                    "an event could not be written as JSON (out of memory)");
        fq_event_page_free(&page);
        return;
    }
    fq_api_reply(call, MHD_HTTP_OK, json_pack("{s:o, s:s}", "events", rows, "next", page.next));
    fq_event_page_free(&page);
}
