/*  fq_row_cache.h — the rows the scheduler paged, kept until their picks
    go to the dispatcher.

    A page reads each message's heap tuple to see that it is pending; the
    rest of the row (recipient, fields, attempts, destination) is in the
    same tuple. The scheduler keeps those rows here and hands each over
    with its pick (DISPATCH's rows), so the dispatcher renders it without
    reading it again: one read of a message instead of two, which was a
    sixth of the database's time under load (README, issue 13's
    measurements).

    A row is what the database said when it was paged. It is given out
    only while it is fresh (at most fresh_us old): a message cancelled on
    its own, which no NOTIFY tells the scheduler, is then sent only if it
    was picked within that time of its cancel, like one already in a
    sender's hands; a cancelled, paused or rescheduled request leaves the
    scheduler's lanes at its NOTIFY, its rows unpicked. A row that is not
    fresh is dropped, and the dispatcher loads its message (checking its
    status) as it loads every message that comes without one: retries,
    messages given back by a dead sender, requests split at their submit.
    So the cache holds what is about to go out: under load a row lives
    milliseconds, and rows a slow request left behind are dropped as they
    age (fq_row_cache_expire). Past max_bytes of rows, a page's rows are
    not kept (their messages are loaded again, as before).

    Pure memory, no I/O: tested alone (tests/actors/row_cache_test.c). */
#ifndef FQ_ROW_CACHE_H
#define FQ_ROW_CACHE_H

#include "fq_store.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

//  How long a paged row stays fresh: the scheduler gives it out with its
//  pick only within this time of its page, and the dispatcher renders it
//  only within this time too (a DISPATCH may wait in its mailbox behind a
//  slow load), else it loads the message again.
#define FQ_ROW_FRESH_US 500000

typedef struct fq_row_cache fq_row_cache_t;

fq_row_cache_t *fq_row_cache_new(size_t max_bytes, int64_t fresh_us);
void fq_row_cache_destroy(fq_row_cache_t **self_p);

//  Whether there is room for more rows (a page asks for them only then).
bool fq_row_cache_has_room(const fq_row_cache_t *self);

//  Keeps a copy of row, paged at now_us (the clock must not go back
//  between calls); it replaces a row of the same id. Returns 0, 1 when
//  there was no room (not kept), or FQ_ENOMEM.
int fq_row_cache_put(fq_row_cache_t *self, const fq_message_row_t *row, int64_t now_us);

//  Takes the row of id out of the cache: the row, if one was paged at
//  most fresh_us before now_us, for the caller to free with free(), with
//  when it was paged in *paged_us; else NULL (an older one is dropped).
fq_message_row_t *fq_row_cache_take(fq_row_cache_t *self, int64_t id, int64_t now_us,
                                    int64_t *paged_us);

//  Drops the row of id, if there is one.
void fq_row_cache_drop(fq_row_cache_t *self, int64_t id);

//  Drops every row older than fresh_us at now_us. Returns how many.
size_t fq_row_cache_expire(fq_row_cache_t *self, int64_t now_us);

//  Rows held, and their bytes.
size_t fq_row_cache_count(const fq_row_cache_t *self);
size_t fq_row_cache_bytes(const fq_row_cache_t *self);

#endif
