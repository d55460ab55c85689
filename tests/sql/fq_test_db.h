/*  fq_test_db.h — a private database per test program.

    Tests run inside the throwaway cluster of deploy/test.sh (pg_virtualenv
    exports PGHOST, PGPORT, PGUSER, PGPASSWORD). Each program creates its
    own database, fq_test_<pid>, so tests never see each other's rows, and
    drops it at the end. */
#ifndef FQ_TEST_DB_H
#define FQ_TEST_DB_H

#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

//  Runs sql on the maintenance database; returns 0 or -1 (and prints why).
static inline int fq_test_db_admin(const char *sql)
{
    PGconn *conn = PQconnectdb("dbname=postgres");
    PGresult *res = PQstatus(conn) == CONNECTION_OK ? PQexec(conn, sql) : NULL;
    int rc = res && PQresultStatus(res) == PGRES_COMMAND_OK ? 0 : -1;
    if (rc)
        fprintf(stderr, "fq_test_db: %s: %s", sql, PQerrorMessage(conn));
    PQclear(res);
    PQfinish(conn);
    return rc;
}

//  Creates fq_test_<pid> and writes its conninfo ("dbname=...") to out.
static inline int fq_test_db_create(char *out, size_t size)
{
    char sql[128];
    snprintf(out, size, "dbname=fq_test_%d", (int)getpid());
    snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS fq_test_%d", (int)getpid());
    fq_test_db_admin(sql);
    snprintf(sql, sizeof sql, "CREATE DATABASE fq_test_%d", (int)getpid());
    return fq_test_db_admin(sql);
}

//  Has every submit to fq_test_<pid> leave its split to the splitter, for
//  the connections opened from now on: the store tests split small mail
//  requests themselves (fq_store_split_chunk), which fairq.split_at_submit
//  (0028) would otherwise have split in their submit. Returns 0 or -1.
static inline int fq_test_db_splits_by_splitter(void)
{
    char sql[128];
    snprintf(sql, sizeof sql, "ALTER DATABASE fq_test_%d SET fairq.split_at_submit = off",
             (int)getpid());
    return fq_test_db_admin(sql);
}

static inline void fq_test_db_drop(void)
{
    char sql[128];
    snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS fq_test_%d WITH (FORCE)", (int)getpid());
    fq_test_db_admin(sql);
}

#endif
