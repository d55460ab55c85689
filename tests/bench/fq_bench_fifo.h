/*  fq_bench_fifo.h — the naive baseline of the pipeline benchmark: the
    classic PostgreSQL job queue, one table, workers that claim a batch of
    the oldest rows with SELECT ... FOR UPDATE SKIP LOCKED and mark them
    done in a batch, first in first out.

    It shows, in the same run as fairq and the raw floor and on the same
    rows, what a queue that does not care about tenants costs and gives:
    its throughput (COPY of the rows, then their draining by the workers,
    doing no work of their own), and what a newcomer waits behind the
    backlog (a row submitted once a share of the load is done waits for
    every older row to be claimed first).
*/
#ifndef FQ_BENCH_FIFO_H
#define FQ_BENCH_FIFO_H

//  libpq first: fq_bench_util.h has its database helpers only after it
#include <libpq-fe.h>
#include "fq_bench_util.h"
#include <stdint.h>

typedef struct {
    double copy_s;            //  COPY of the rows
    double drain_s;           //  From the first claim to the last row done
    double rate;              //  rows / (copy_s + drain_s)
    double newcomer_wait_s;   //  The newcomer's row: inserted to claimed
    uint64_t newcomer_behind; //  Rows still pending when it was inserted
} fq_bench_fifo_result_t;

//  Runs the queue on n rows (written by row, as the floor's are) in a
//  table like fairq.messages of the database conn is connected to, with
//  workers connections (conninfo) claiming batch rows at a time; the
//  newcomer's row goes in once newcomer_at (0..1) of the rows are done.
//  The table is dropped afterwards. Returns 0, or -1 (said on stderr).
int fq_bench_fifo_run(const char *program, PGconn *conn, const char *conninfo, uint64_t n,
                      int workers, int batch, double newcomer_at, fq_bench_row_fn *row, void *arg,
                      fq_bench_fifo_result_t *out);

#endif
