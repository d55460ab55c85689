/*  fq_db.h — an actor's own database connection, which comes back by
    itself after PostgreSQL restarts.

    Each fairqd actor that speaks SQL owns one fq_store_t (a libpq
    connection belongs to one thread). A lost connection must not fail the
    actor: its restarts would run out during an outage of a few seconds and
    take fairqd down. Instead the actor keeps its work, asks fq_db_store
    before each use, and gets the store back once a reconnect, tried with
    doubling waits, succeeds. */
#ifndef FQ_DB_H
#define FQ_DB_H

#include "fq_store.h"
#include <stdbool.h>

typedef struct fq_db fq_db_t;

//  Checks that libpq can read conninfo, a "key=value ..." connection
//  string or a postgresql:// URI. Returns 0, or -1 with libpq's reason in
//  error. Reading is not connecting: a string that reads may still name a
//  server that is not there (retried), while one that does not read never
//  will (a configuration error).
int fq_db_conninfo_check(const char *conninfo, char *error, size_t error_size);

//  Connects to conninfo (copied) for the actor called who (for the log).
//  A failed first connection is retried later, like a lost one. NULL only
//  when out of memory.
fq_db_t *fq_db_new(const char *conninfo, const char *who);
void fq_db_destroy(fq_db_t **self_p);

//  The connected store, or NULL while the database is unreachable (a
//  reconnect is tried when its wait is over). on_connect, if set, runs after
//  each successful reconnect (to LISTEN again, say); it returns 0 or a code.
fq_store_t *fq_db_store(fq_db_t *self);
void fq_db_on_connect(fq_db_t *self, int (*fn)(fq_store_t *store, void *arg), void *arg);

//  Reports that a call on the store failed with rc: logs the store's
//  message, and when the connection is lost, schedules the reconnect.
//  Returns true when the failure was the connection (try again later),
//  false when the database refused the statement itself.
bool fq_db_failed(fq_db_t *self, int rc);

//  Makes the leader-only writes of this connection, now and after every
//  reconnect, carry the leader's epoch (fq_store_set_epoch).
void fq_db_set_epoch(fq_db_t *self, int64_t epoch);

//  Milliseconds until the next reconnect attempt (0 when connected).
int fq_db_retry_in_ms(fq_db_t *self);

#endif
