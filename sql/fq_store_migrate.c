/*  fq_store_migrate.c — the schema migrations (see fq_store.h).

    The migrations are sql/migrations/NNNN_name.sql, compiled in
    (fq_migrations.h). A database records those it has in
    fairq.schema_migrations; fairqd applies the others when it starts,
    all in one transaction, so a database is never left half migrated.
*/
#include "fq_store_internal.h"
#include "fq_error.h"
#include "fq_migrations.h"
#include <stdio.h>

//  Key of the advisory lock that serialises migrations between daemons.
#define S_MIGRATION_LOCK 0x66616972710001LL

//  Room for what an error says the store tried: "apply migration " and a
//  migration's file name.
#define S_WHAT_SIZE 128

static int s_latest_known(void)
{
    int latest = 0;
    for (const fq_migration_t *m = fq_migrations; m->sql; m++)
        latest = m->version > latest ? m->version : latest;
    return latest;
}

int fq_store_schema_version(fq_store_t *self, int *version)
{
    //  Fix: two statements, not one CASE. The server resolves every table a
    //  statement names before running it, so a subquery on a missing
    //  fairq.schema_migrations failed even in the CASE branch not taken,
    //  and an empty database answered an error instead of version 0.
    int rc;
    PGresult *res = fq_store_query(self, "SELECT to_regclass('fairq.schema_migrations') IS NULL", 0,
                                   NULL, PGRES_TUPLES_OK, "read the schema version", &rc);
    if (!res)
        return rc;
    bool empty = PQgetvalue(res, 0, 0)[0] == 't';
    PQclear(res);
    *version = 0;
    if (empty)
        return 0;
    res = fq_store_query(self, "SELECT coalesce(max(version), 0) FROM fairq.schema_migrations", 0,
                         NULL, PGRES_TUPLES_OK, "read the schema version", &rc);
    if (!res)
        return rc;
    *version = (int)fq_store_int64(res, 0, 0);
    PQclear(res);
    return 0;
}

int fq_store_migrate(fq_store_t *self)
{
    char lock[FQ_STORE_INT_TEXT];
    snprintf(lock, sizeof lock, "%lld", (long long)S_MIGRATION_LOCK);
    const char *lock_param[] = {lock};
    int rc = fq_store_exec(self, "BEGIN", "begin migration");
    PGresult *res = NULL;
    if (rc == 0)
        res = fq_store_query(self, "SELECT pg_advisory_xact_lock($1::bigint)", 1, lock_param,
                             PGRES_TUPLES_OK, "lock for migration", &rc);
    PQclear(res);
    if (rc == 0)
        rc = fq_store_exec(self,
                           "CREATE SCHEMA IF NOT EXISTS fairq;"
                           "CREATE TABLE IF NOT EXISTS fairq.schema_migrations ("
                           " version integer PRIMARY KEY, name text NOT NULL,"
                           " applied_at timestamptz NOT NULL DEFAULT now())",
                           "create the migrations table");
    int current = 0;
    if (rc == 0)
        rc = fq_store_schema_version(self, &current);
    int latest = s_latest_known();
    if (rc == 0 && current > latest)
        rc = fq_store_fail(self, FQ_ESCHEMA,
                           "database schema is at version %d but this fairq knows only up to %d: "
                           "upgrade fairq",
                           current, latest);
    int applied = 0;
    for (const fq_migration_t *m = fq_migrations; rc == 0 && m->sql; m++) {
        if (m->version <= current)
            continue;
        char what[S_WHAT_SIZE];
        snprintf(what, sizeof what, "apply migration %s", m->name);
        rc = fq_store_exec(self, m->sql, what);
        char version[FQ_STORE_INT_TEXT];
        snprintf(version, sizeof version, "%d", m->version);
        const char *params[] = {version, m->name};
        if (rc == 0)
            res = fq_store_query(self,
                                 "INSERT INTO fairq.schema_migrations (version, name)"
                                 " VALUES ($1, $2)",
                                 2, params, PGRES_COMMAND_OK, what, &rc);
        PQclear(res);
        res = NULL;
        applied += rc == 0;
    }
    if (rc == 0)
        rc = fq_store_exec(self, "COMMIT", "commit migration");
    if (rc) {
        fq_store_rollback(self);
        return rc;
    }
    return applied;
}
