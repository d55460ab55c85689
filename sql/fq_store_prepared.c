/*  fq_store_prepared.c — the hot statements, parsed and planned once per
    connection (see fq_store_internal.h).

    A statement sent as text is parsed, analysed and planned at every run.
    For the few that run for every page of messages (the scheduler's
    paging, the dispatcher's load, the acks) that was a third of their
    backends' time: fq_bench_pipeline's profile put parsing and planning at
    7.5 % of the whole machine's CPU. Such a statement is prepared once on
    the connection, under a name made from its text, and run by name from
    then on.

    Behind a pooler in transaction mode (PgBouncer before 1.21, or without
    max_prepared_statements) a statement prepared on one server connection
    is unknown on the next: its run fails with 26000 and nothing ran. The
    store then stops preparing for the rest of the connection's life and
    runs that statement again as text, so nothing is lost and nothing needs
    configuring. The name is the text's hash, so a server connection a
    pooler shares among fairq processes holds under one name only one text
    (42P05, "already exists", is then as good as prepared), even while two
    versions of fairq run side by side.
*/
#include "fq_store_internal.h"
#include "fq_log.h"
#include <stdint.h>
#include <stdio.h>
#include <string.h>

//  The statement names the server answers with when it does not know a
//  name on this server connection, and when a table a cached plan read
//  changed its row type (a migration), and when a name is taken already.
#define S_UNKNOWN_STATEMENT   "26000"
#define S_RESULT_TYPE_CHANGED "0A000"
#define S_ALREADY_PREPARED    "42P05"

//  64-bit FNV-1a of text: names that differ whenever the texts do, for
//  all practical purposes (a few dozen statements).
static uint64_t s_hash(const char *text)
{
    uint64_t hash = 14695981039346656037ULL;
    for (const unsigned char *at = (const unsigned char *)text; *at; at++)
        hash = (hash ^ *at) * 1099511628211ULL;
    return hash;
}

const char *fq_store_prepared_name(fq_store_t *self, const char *sql, int nparams)
{
    if (self->unprepared)
        return NULL;
    //  By the text, not its address: a text built at run time that came
    //  to lie where another had been would otherwise run the other's plan.
    //  Hashing a statement costs about a microsecond, once per batch.
    uint64_t hash = s_hash(sql);
    for (int i = 0; i < self->nprepared; i++)
        if (self->prepared[i].hash == hash)
            return self->prepared[i].name;
    if (self->nprepared == FQ_STORE_PREPARED_MAX ||
        PQtransactionStatus(self->conn) == PQTRANS_INERROR)
        return NULL;
    fq_store_prepared_t *entry = &self->prepared[self->nprepared];
    snprintf(entry->name, sizeof entry->name, "fairq_%016llx", (unsigned long long)hash);
    PGresult *res = PQprepare(self->conn, entry->name, sql, nparams, NULL);
    const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    bool prepared = res && (PQresultStatus(res) == PGRES_COMMAND_OK ||
                            (state && strcmp(state, S_ALREADY_PREPARED) == 0));
    PQclear(res);
    //  Not prepared: the run as text reports whatever went wrong
    if (!prepared)
        return NULL;
    entry->hash = hash;
    self->nprepared++;
    return entry->name;
}

bool fq_store_prepared_lost(fq_store_t *self)
{
    if (strcmp(self->sqlstate, S_UNKNOWN_STATEMENT) != 0 &&
        strcmp(self->sqlstate, S_RESULT_TYPE_CHANGED) != 0)
        return false;
    fq_log(FQ_LOG_WARNING,
           "%s: %s: statements run as text on this connection from now on (it is made again "
           "after a failure)",
           self->application_name,
           strcmp(self->sqlstate, S_UNKNOWN_STATEMENT) == 0
               ? "the server forgot a statement prepared on this connection (a pooler in "
                 "transaction mode?)"
               : "a prepared statement's plan no longer fits its tables (a migration?)");
    self->unprepared = true;
    self->nprepared = 0;
    return true;
}

void fq_store_prepared_reset(fq_store_t *self)
{
    self->unprepared = false;
    self->nprepared = 0;
}
