/*  fq_store_events.h — reading fairq.events, the outbox of what happened
    to messages and requests (sql/migrations/0018_events.sql), a page at a
    time in reading order. Defined in fq_store_events.c; the connection and
    its errors are fq_store.h's. The pipeline writes the events; this is
    their read side (GET /v1/events).

    Reading order is (txid, id), and a page holds only rows of transactions
    older than every one still running (txid < pg_snapshot_xmin of the
    statement's snapshot). A transaction that commits later has a txid at
    or above that bound, so it sorts after any cursor a page hands out: a
    reader that follows the cursors misses no event and sees none twice,
    whatever order transactions commit in. The price (the migration's
    words): a transaction that runs long holds back every newer event,
    of every tenant, until it ends.

    A cursor is opaque text for callers ("12345-678": the last row's txid
    and id); "0-0" is the start.
*/
#ifndef FQ_STORE_EVENTS_H
#define FQ_STORE_EVENTS_H

#include "fq_feedback_names.h"
#include "fq_store.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

//  Room for a cursor: two numbers of at most 20 digits, '-' and the NUL.
#define FQ_EVENT_CURSOR_SIZE 48

//  The cursor of the start: before every event.
#define FQ_EVENT_CURSOR_START "0-0"

//  Which events a page takes: every field set must match (AND); 0 or NULL
//  leave a field out. Strings are the caller's.
typedef struct {
    int64_t tenant_id;  //  A tenant by id (a tenant token's own)
    const char *tenant; //  A tenant by name; with tenant_id, both must name the same one
    int64_t request_id; //  Events of this request (its tenant's, when a tenant is named)
    const char *type;   //  One of fq_event_types
} fq_event_filter_t;

//  One event. Its strings point into the page.
typedef struct {
    int64_t id;
    const char *tenant;    //  The tenant's name
    int64_t request_id;    //  0: none
    int64_t message_id;    //  0: none (a request's event, a rejected recipient)
    const char *type;      //  One of fq_event_types (static)
    const char *recipient; //  NULL: none
    const char *detail;    //  The receiver's reply, or why rejected; NULL: none
    int64_t at;            //  Unix seconds (UTC)
} fq_event_t;

//  A page: rows and their strings are one block, owned by the caller and
//  freed with fq_event_page_free.
typedef struct {
    fq_event_t *rows;
    size_t count;
    //  Where the next page starts: after the last row; with no row, the
    //  cursor given (FQ_EVENT_CURSOR_START when none was)
    char next[FQ_EVENT_CURSOR_SIZE];
} fq_event_page_t;

//  Up to limit (1..FQ_STORE_PAGE_MAX) events matching filter after the
//  cursor after (NULL: from the start), in reading order. A tenant or
//  request named that does not exist, or a request of another tenant than
//  the one named, is FQ_ENOTFOUND (the same message for both: "request N
//  does not exist"). A malformed cursor, an unknown type, a bad limit or
//  a negative id is FQ_EINVAL, refused before the database is asked, with
//  a message saying what is wrong. Returns how many rows page holds (0:
//  none yet), or a negative code; on failure page is empty.
int fq_store_events(fq_store_t *self, const fq_event_filter_t *filter, const char *after, int limit,
                    fq_event_page_t *page);
void fq_event_page_free(fq_event_page_t *page);

//  How the database would run that read: EXPLAIN (FORMAT JSON) of the
//  very statement fq_store_events sends, with the same values (for the
//  tests that check a tenant's page walks its index). *plan is the
//  caller's, free() it. Returns 0 or a code as for the read.
int fq_store_explain_events(fq_store_t *self, const fq_event_filter_t *filter, const char *after,
                            int limit, char **plan);

#endif
