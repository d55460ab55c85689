/*  fq_store_internal.h — what the store's source files share (internal).

    The store is one module in several files: fq_store.c (connection,
    migrations, intake, splitting, status writes, paging) and
    fq_store_admin.c (operator queries). Nothing outside sql/ includes this.
*/
#ifndef FQ_STORE_INTERNAL_H
#define FQ_STORE_INTERNAL_H

#include "fq_buf.h"
#include "fq_store.h"
#include <libpq-fe.h>

//  Room for an SQLSTATE and its NUL.
#define FQ_STORE_SQLSTATE_SIZE 6

//  Room for a constraint's name (PostgreSQL's NAMEDATALEN) and its NUL.
#define FQ_STORE_CONSTRAINT_SIZE 64

struct fq_store {
    PGconn *conn;
    char *conninfo;
    char error[1024];
    //  Of the last error, when the server gave it: its SQLSTATE and the
    //  constraint it names; "" for the store's own errors
    char sqlstate[FQ_STORE_SQLSTATE_SIZE];
    char constraint[FQ_STORE_CONSTRAINT_SIZE];
    //  A statement failed in a way that leaves the connection unusable
    //  (the server went away), though libpq may still call it OK
    bool lost;
};

//  s escaped for COPY's text format
int fq_buf_add_copy_text(fq_buf_t *buf, const char *s, size_t size);
//  s as one quoted element of an array literal; NULL becomes NULL
int fq_buf_add_array_text(fq_buf_t *buf, const char *s);
//  ids as a bigint array literal ("{1,2,3}"); stride is the distance in
//  bytes between two ids (sizeof a struct whose first field is the id)
int fq_buf_add_id_array(fq_buf_t *buf, const int64_t *ids, size_t count, size_t stride);

//  Records an error message of the store's own (printf-style) and returns
//  code.
int fq_store_fail(fq_store_t *self, int code, const char *format, ...);

//  Checks res for the wanted status; on failure records "could not <what>:
//  <server message>" with the server's SQLSTATE and constraint, notes a
//  lost connection, clears res and returns FQ_EINVAL (data the server
//  refused) or FQ_EDB.
int fq_store_check(fq_store_t *self, PGresult *res, ExecStatusType wanted, const char *what);

//  Runs sql (no parameters, no rows). Returns 0 or a code.
int fq_store_exec(fq_store_t *self, const char *sql, const char *what);

//  Runs a parameterised statement (text parameters); returns its result,
//  which the caller clears, or NULL with *rc set.
PGresult *fq_store_query(fq_store_t *self, const char *sql, int nparams, const char *const *params,
                         ExecStatusType wanted, const char *what, int *rc);

//  Rolls back an open transaction, if any.
void fq_store_rollback(fq_store_t *self);

//  Fills one item of a list from a row of a result.
typedef void(fq_store_row_fn)(const PGresult *res, int row, void *item);

//  Turns every row of res into an item of item_size bytes with fill, all
//  in one calloc'd array written to *rows (NULL when there is none), and
//  clears res. Returns how many rows, or FQ_ENOMEM (then *rows is NULL).
int fq_store_rows(fq_store_t *self, PGresult *res, size_t item_size, fq_store_row_fn *fill,
                  void **rows);

//  A column as an integer, 0 when NULL.
int64_t fq_store_int64(const PGresult *res, int row, int col);

#endif
