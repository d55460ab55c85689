/*  fq_test_sql.h — raw libpq helpers for the store's integration tests.

    The store is tested from outside as well as through its API: these
    helpers open plain libpq connections (an application's, a listener's,
    an operator's) to the test database and read what the store wrote.
    Include after <cmocka.h>: a failed query fails the running test. */
#ifndef FQ_TEST_SQL_H
#define FQ_TEST_SQL_H

#include "fq_store.h"
#include "fq_test_db.h"
#include <libpq-fe.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

//  Most parameters one helper call passes.
#define FQ_TEST_MAX_PARAMS 8

//  Connects to conninfo, or fails the test.
static inline PGconn *fq_test_connect(const char *conninfo)
{
    PGconn *conn = PQconnectdb(conninfo);
    if (PQstatus(conn) != CONNECTION_OK) {
        char message[512];
        snprintf(message, sizeof message, "%s", PQerrorMessage(conn));
        PQfinish(conn);
        fail_msg("connect %s: %s", conninfo, message);
    }
    return conn;
}

//  Runs sql with nparams text parameters (the varargs, NULL for SQL NULL)
//  and checks the result's status; the caller PQclears it.
static inline PGresult *fq_test_vquery(PGconn *conn, ExecStatusType wanted, const char *sql,
                                       int nparams, va_list args)
{
    const char *params[FQ_TEST_MAX_PARAMS] = {0};
    assert_true(nparams <= FQ_TEST_MAX_PARAMS);
    for (int i = 0; i < nparams; i++)
        params[i] = va_arg(args, const char *);
    PGresult *res = PQexecParams(conn, sql, nparams, NULL, params, NULL, NULL, 0);
    if (PQresultStatus(res) != wanted) {
        char message[1024];
        snprintf(message, sizeof message, "%s", PQresultErrorMessage(res));
        PQclear(res);
        fail_msg("%s: %s", sql, message);
    }
    return res;
}

static inline PGresult *fq_test_query(PGconn *conn, const char *sql, int nparams, ...)
{
    va_list args;
    va_start(args, nparams);
    PGresult *res = fq_test_vquery(conn, PGRES_TUPLES_OK, sql, nparams, args);
    va_end(args);
    return res;
}

//  Runs a statement that returns no rows.
static inline void fq_test_exec(PGconn *conn, const char *sql, int nparams, ...)
{
    va_list args;
    va_start(args, nparams);
    PQclear(fq_test_vquery(conn, PGRES_COMMAND_OK, sql, nparams, args));
    va_end(args);
}

//  The first column of the first row as an integer (0 when NULL).
static inline int64_t fq_test_int(PGconn *conn, const char *sql, int nparams, ...)
{
    va_list args;
    va_start(args, nparams);
    PGresult *res = fq_test_vquery(conn, PGRES_TUPLES_OK, sql, nparams, args);
    va_end(args);
    if (PQntuples(res) != 1) {
        int rows = PQntuples(res);
        PQclear(res);
        fail_msg("%s: %d rows, wanted 1", sql, rows);
    }
    int64_t value = PQgetisnull(res, 0, 0) ? 0 : strtoll(PQgetvalue(res, 0, 0), NULL, 10);
    PQclear(res);
    return value;
}

//  The first column of the first row as text, malloc'ed (NULL when NULL).
static inline char *fq_test_text(PGconn *conn, const char *sql, int nparams, ...)
{
    va_list args;
    va_start(args, nparams);
    PGresult *res = fq_test_vquery(conn, PGRES_TUPLES_OK, sql, nparams, args);
    va_end(args);
    char *value = NULL;
    if (PQntuples(res) >= 1 && !PQgetisnull(res, 0, 0)) {
        value = malloc((size_t)PQgetlength(res, 0, 0) + 1);
        assert_non_null(value);
        memcpy(value, PQgetvalue(res, 0, 0), (size_t)PQgetlength(res, 0, 0) + 1);
    }
    PQclear(res);
    return value;
}

//  An integer as a query parameter, in caller-provided storage.
static inline const char *fq_test_param(char *buf, size_t size, int64_t value)
{
    snprintf(buf, size, "%lld", (long long)value);
    return buf;
}

//  Monotonic milliseconds, for deadlines.
static inline int64_t fq_test_now_ms(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

static inline void fq_test_sleep_ms(int ms)
{
    struct timespec delay = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&delay, NULL);
}

//  Terminates every store connection to conn's database (the store names
//  its sessions "fairq"; conn's own is psql-like and stays) and waits up to
//  timeout_ms until they are gone, as after a database restart.
static inline void fq_test_kill_store_backends(PGconn *conn, int timeout_ms)
{
    PQclear(fq_test_query(conn,
                          "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                          " WHERE datname = current_database() AND application_name = 'fairq'",
                          0));
    int64_t deadline = fq_test_now_ms() + timeout_ms;
    while (fq_test_int(conn,
                       "SELECT count(*) FROM pg_stat_activity"
                       " WHERE datname = current_database() AND application_name = 'fairq'",
                       0) > 0) {
        assert_true(fq_test_now_ms() < deadline);
        fq_test_sleep_ms(20);
    }
}

//  Opens a store on conninfo, or fails the test.
static inline fq_store_t *fq_test_store(const char *conninfo)
{
    char error[512];
    fq_store_t *store = fq_store_new(conninfo, error, sizeof error);
    if (!store)
        fail_msg("fq_store_new: %s", error);
    return store;
}

//  Creates database fq_test_<pid>_<tag>, migrated unless empty is true, and
//  writes its conninfo to out. Returns 0 or -1.
static inline int fq_test_db_create_named(const char *tag, bool migrate, char *out, size_t size)
{
    char sql[160];
    snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS fq_test_%d_%s", (int)getpid(), tag);
    fq_test_db_admin(sql);
    snprintf(sql, sizeof sql, "CREATE DATABASE fq_test_%d_%s", (int)getpid(), tag);
    if (fq_test_db_admin(sql))
        return -1;
    snprintf(out, size, "dbname=fq_test_%d_%s", (int)getpid(), tag);
    if (!migrate)
        return 0;
    char error[512];
    fq_store_t *store = fq_store_new(out, error, sizeof error);
    int applied = store ? fq_store_migrate(store) : -1;
    if (applied <= 0)
        fprintf(stderr, "fq_test: migrate %s: %s\n", out, store ? fq_store_error(store) : error);
    fq_store_destroy(&store);
    return applied > 0 ? 0 : -1;
}

static inline void fq_test_db_drop_named(const char *tag)
{
    char sql[160];
    snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS fq_test_%d_%s WITH (FORCE)", (int)getpid(),
             tag);
    fq_test_db_admin(sql);
}

//  Submits, then splits every chunk; fails the test on any error. Returns
//  the request id.
static inline int64_t fq_test_submit_split(fq_store_t *store, const fq_submit_t *req,
                                           const char *const *required, size_t nrequired)
{
    int64_t id;
    if (fq_store_submit(store, req, &id))
        fail_msg("submit: %s", fq_store_error(store));
    fq_split_result_t split;
    int rc;
    while ((rc = fq_store_split_chunk(store, id, required, nrequired, 0, &split)) == 1)
        if (split.last)
            break;
    if (rc < 0)
        fail_msg("split: %s", fq_store_error(store));
    return id;
}

//  A JSON array of n recipients: {"to": "<prefix><i>@example.com",
//  "fields": {"name": "N<i>", "i": i}}; malloc'ed.
static inline char *fq_test_recipients(const char *prefix, int n)
{
    size_t capacity = (size_t)n * (strlen(prefix) + 80) + 3;
    char *json = malloc(capacity);
    assert_non_null(json);
    size_t len = 0;
    json[len++] = '[';
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(json + len, capacity - len,
                                "%s{\"to\":\"%s%d@example.com\",\"fields\":{\"name\":\"N%d\","
                                "\"i\":%d}}",
                                i ? "," : "", prefix, i, i, i);
    json[len++] = ']';
    json[len] = 0;
    return json;
}

//  A program's group setup: creates its database (conninfo gets the
//  connection string; its submits split nothing themselves:
//  fq_test_db_splits_by_splitter), applies the migrations and adds the tenants named
//  in the NULL-terminated list; the first one's id goes to *first_tenant
//  when it is not NULL. Returns 0, or -1 after printing why.
static inline int fq_test_db_prepare(char *conninfo, size_t size, const char *const *tenants,
                                     int64_t *first_tenant)
{
    if (fq_test_db_create(conninfo, size) || fq_test_db_splits_by_splitter())
        return -1;
    char error[512];
    fq_store_t *store = fq_store_new(conninfo, error, sizeof error);
    int rc = store && fq_store_migrate(store) > 0 ? 0 : -1;
    for (size_t i = 0; rc == 0 && tenants[i]; i++)
        rc = fq_store_tenant_put(store, &(fq_tenant_spec_t){.name = tenants[i]},
                                 i == 0 ? first_tenant : NULL);
    if (rc)
        fprintf(stderr, "setup: %s\n", store ? fq_store_error(store) : error);
    fq_store_destroy(&store);
    return rc ? -1 : 0;
}

#endif
