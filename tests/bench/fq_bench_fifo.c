/*  fq_bench_fifo.c — the naive FIFO queue baseline (see fq_bench_fifo.h). */
#include "fq_bench_fifo.h"
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define S_TABLE "bench_fifo"
//  The classic shape: a state column and a partial index on what is
//  pending, claimed oldest first by workers that skip each other's rows
#define S_CREATE_SQL                                                                               \
    "DROP TABLE IF EXISTS " S_TABLE ";"                                                            \
    "CREATE TABLE " S_TABLE " (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"                \
    " request_id bigint NOT NULL, tenant_id bigint NOT NULL, recipient text NOT NULL,"             \
    " fields jsonb NOT NULL DEFAULT '{}', state smallint NOT NULL DEFAULT 0,"                      \
    " created_at timestamptz NOT NULL DEFAULT clock_timestamp(),"                                  \
    " claimed_at timestamptz, done_at timestamptz);"                                               \
    "CREATE INDEX " S_TABLE "_pending ON " S_TABLE " (id) WHERE state = 0"
#define S_COPY_SQL "COPY " S_TABLE " (request_id, tenant_id, recipient, fields) FROM STDIN"
#define S_CLAIM_SQL                                                                                \
    "WITH c AS (SELECT id FROM " S_TABLE " WHERE state = 0 ORDER BY id LIMIT $1"                   \
    " FOR UPDATE SKIP LOCKED)"                                                                     \
    " UPDATE " S_TABLE " q SET state = 1, claimed_at = clock_timestamp() FROM c"                   \
    " WHERE q.id = c.id"                                                                           \
    " RETURNING q.id"
#define S_DONE_SQL "UPDATE " S_TABLE " SET state = 2, done_at = now() WHERE id = ANY($1::bigint[])"
//  The newcomer is the one row of tenant 0; its wait, from its insert to
//  its claim, is read from its own timestamps at the end
#define S_NEWCOMER_SQL                                                                             \
    "INSERT INTO " S_TABLE " (request_id, tenant_id, recipient) VALUES (0, 0, 'new@example.com')"
#define S_NEWCOMER_WAIT_SQL                                                                        \
    "SELECT extract(epoch FROM claimed_at - created_at) FROM " S_TABLE " WHERE tenant_id = 0"

//  Rows per COPY statement, as the floor's chunks.
#define S_COPY_CHUNK 10000
//  A worker that found nothing to claim (all pending rows held by others)
//  looks again after this long.
#define S_IDLE_US 500

typedef struct {
    const char *program;
    const char *conninfo;
    uint64_t total; //  Rows to be done, the newcomer's included
    int batch;
    atomic_uint_fast64_t done;
    atomic_bool failed;
} s_shared_t;

static uint64_t s_now_ns(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
}

static int s_exec(const char *program, PGconn *conn, const char *sql, const char *what)
{
    PGresult *res = PQexec(conn, sql);
    if (fq_bench_check(program, conn, res, PGRES_COMMAND_OK, what))
        return -1;
    PQclear(res);
    return 0;
}

//  One claim and its completion. Returns the rows done, or -1.
static int s_claim_and_complete(s_shared_t *shared, PGconn *conn, fq_bench_text_t *text)
{
    char limit[16];
    snprintf(limit, sizeof limit, "%d", shared->batch);
    const char *params[] = {limit};
    PGresult *res = PQexecParams(conn, S_CLAIM_SQL, 1, NULL, params, NULL, NULL, 0);
    if (fq_bench_check(shared->program, conn, res, PGRES_TUPLES_OK, "claim a batch"))
        return -1;
    int n = PQntuples(res);
    text->size = 0;
    int rc = fq_bench_text_printf(text, "{");
    for (int i = 0; i < n && rc == 0; i++)
        rc = fq_bench_text_printf(text, i ? ",%s" : "%s", PQgetvalue(res, i, 0));
    PQclear(res);
    if (rc || fq_bench_text_printf(text, "}"))
        return -1;
    if (n == 0)
        return 0;
    const char *ids[] = {text->data};
    res = PQexecParams(conn, S_DONE_SQL, 1, NULL, ids, NULL, NULL, 0);
    if (fq_bench_check(shared->program, conn, res, PGRES_COMMAND_OK, "complete a batch"))
        return -1;
    PQclear(res);
    return n;
}

static void *s_worker(void *arg)
{
    s_shared_t *shared = arg;
    PGconn *conn = PQconnectdb(shared->conninfo);
    fq_bench_text_t text = {0};
    if (PQstatus(conn) != CONNECTION_OK) {
        fprintf(stderr, "%s: fifo worker: %s", shared->program, PQerrorMessage(conn));
        atomic_store(&shared->failed, true);
    }
    while (!atomic_load(&shared->failed) && atomic_load(&shared->done) < shared->total) {
        int n = s_claim_and_complete(shared, conn, &text);
        if (n < 0)
            atomic_store(&shared->failed, true);
        else if (n == 0) {
            struct timespec idle = {0, S_IDLE_US * 1000L};
            nanosleep(&idle, NULL);
        } else
            atomic_fetch_add(&shared->done, (uint64_t)n);
    }
    fq_bench_text_free(&text);
    PQfinish(conn);
    return NULL;
}

//  Inserts the newcomer's row once newcomer_at of the rows are done; waits
//  for every row to be done. Returns 0 or -1.
static int s_watch(s_shared_t *shared, PGconn *conn, uint64_t n, double newcomer_at,
                   fq_bench_fifo_result_t *out)
{
    bool inserted = false;
    while (!atomic_load(&shared->failed) && atomic_load(&shared->done) < shared->total) {
        uint64_t done = atomic_load(&shared->done);
        if (!inserted && (double)done >= newcomer_at * (double)n) {
            if (s_exec(shared->program, conn, S_NEWCOMER_SQL, "insert a newcomer"))
                return -1;
            inserted = true;
            out->newcomer_behind = n - done;
        }
        struct timespec tick = {0, 1000000L};
        nanosleep(&tick, NULL);
    }
    return atomic_load(&shared->failed) ? -1 : 0;
}

int fq_bench_fifo_run(const char *program, PGconn *conn, const char *conninfo, uint64_t n,
                      int workers, int batch, double newcomer_at, fq_bench_row_fn *row, void *arg,
                      fq_bench_fifo_result_t *out)
{
    *out = (fq_bench_fifo_result_t){0};
    fq_bench_text_t text = {0};
    if (s_exec(program, conn, S_CREATE_SQL, "create " S_TABLE) ||
        s_exec(program, conn, "CHECKPOINT", "checkpoint"))
        return -1;
    uint64_t start = s_now_ns();
    int rc = 0;
    for (uint64_t first = 0; first < n && rc == 0; first += S_COPY_CHUNK)
        rc = fq_bench_copy_rows(program, conn, S_COPY_SQL, S_TABLE, &text, first,
                                n - first < S_COPY_CHUNK ? n - first : S_COPY_CHUNK, row, arg);
    fq_bench_text_free(&text);
    if (rc)
        return -1;
    uint64_t copied = s_now_ns();
    s_shared_t shared = {.program = program, .conninfo = conninfo, .total = n + 1, .batch = batch};
    pthread_t threads[workers];
    int started = 0;
    for (; started < workers; started++)
        if (pthread_create(&threads[started], NULL, s_worker, &shared) != 0) {
            atomic_store(&shared.failed, true);
            break;
        }
    rc = s_watch(&shared, conn, n, newcomer_at, out);
    for (int i = 0; i < started; i++)
        pthread_join(threads[i], NULL);
    uint64_t end = s_now_ns();
    if (rc || atomic_load(&shared.failed)) {
        fprintf(stderr, "%s: the FIFO queue did not finish\n", program);
        return -1;
    }
    out->copy_s = (double)(copied - start) / 1e9;
    out->drain_s = (double)(end - copied) / 1e9;
    out->rate = (double)n / (out->copy_s + out->drain_s);
    PGresult *res = PQexec(conn, S_NEWCOMER_WAIT_SQL);
    if (fq_bench_check(program, conn, res, PGRES_TUPLES_OK, "read the newcomer's wait"))
        return -1;
    out->newcomer_wait_s = PQntuples(res) == 1 ? strtod(PQgetvalue(res, 0, 0), NULL) : -1;
    PQclear(res);
    return s_exec(program, conn, "DROP TABLE " S_TABLE, "drop " S_TABLE);
}
