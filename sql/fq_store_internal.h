/*  fq_store_internal.h — what the store's source files share (internal).

    The store is one module in several files, one topic each (fq_store.h
    lists them). They share the connection and its error plumbing
    (fq_store.c), the text encodings statements take their values in
    (fq_store_encode.c) and a few SQL fragments. Nothing outside sql/
    includes this.
*/
#ifndef FQ_STORE_INTERNAL_H
#define FQ_STORE_INTERNAL_H

#include "fq_buf.h"
#include "fq_store.h"
#include <libpq-fe.h>
#include <stdint.h>

//  Room for the last error's message: a server's message with the store's
//  words before it, cut beyond that.
#define FQ_STORE_ERROR_SIZE 1024

//  Room for an SQLSTATE and its NUL.
#define FQ_STORE_SQLSTATE_SIZE 6

//  Room for a constraint's name (PostgreSQL's NAMEDATALEN) and its NUL.
#define FQ_STORE_CONSTRAINT_SIZE 64

//  Statements a connection keeps prepared (fq_store_prepared.c): the
//  hot ones, a handful; beyond it a statement runs as text.
#define FQ_STORE_PREPARED_MAX 16

//  Room for a prepared statement's name: "fairq_" and 16 hex digits.
#define FQ_STORE_PREPARED_NAME_SIZE 24

//  A statement prepared on the connection, known by its text's hash.
typedef struct {
    uint64_t hash;
    char name[FQ_STORE_PREPARED_NAME_SIZE];
} fq_store_prepared_t;

//  Room for the text of a 64-bit integer, sign and NUL included: how
//  numbers go to the server as parameters.
#define FQ_STORE_INT_TEXT 24

//  The channel of mail, the schema's default (FQ_CHANNEL_EMAIL of
//  channels/fq_channel.h, which the store may not include).
#define FQ_STORE_CHANNEL_EMAIL "email"

//  Attempts a message gets when the request does not say (fq_submit_t).
#define FQ_STORE_MAX_ATTEMPTS_DEFAULT 5

//  Request statuses, as SQL lists. Unfinished is the predicate of
//  requests_open_idx, finished that of requests_finished_idx (0003): a
//  statement that repeats one word for word can use its partial index.
#define FQ_STORE_UNFINISHED "('accepted', 'splitting', 'active', 'paused')"
#define FQ_STORE_FINISHED   "('done', 'cancelled', 'rejected')"

//  Event ids each row of fairq.event_rows owns (0029): the message.sent
//  events of one request in one ack batch share a row, at most this many,
//  and the k-th of them is the row's id + k. A read after a cursor's id I
//  therefore bounds the rows it scans by row_id > I - FQ_STORE_EVENT_BLOCK.
//  The migration's identity step and check say the same (store_events_test
//  holds them together); _TEXT is it as a literal, for the statements.
#define FQ_STORE_EVENT_BLOCK      1024
#define FQ_STORE_LITERAL_(x)      #x
#define FQ_STORE_LITERAL(x)       FQ_STORE_LITERAL_(x)
#define FQ_STORE_EVENT_BLOCK_TEXT FQ_STORE_LITERAL(FQ_STORE_EVENT_BLOCK)

struct fq_store {
    PGconn *conn;
    char *conninfo;
    //  The session's application_name unless the conninfo names one:
    //  which part of fairq runs a statement, in pg_stat_activity
    char application_name[FQ_STORE_APPLICATION_NAME_SIZE];
    char error[FQ_STORE_ERROR_SIZE];
    //  Of the last error, when the server gave it: its SQLSTATE and the
    //  constraint it names; "" for the store's own errors
    char sqlstate[FQ_STORE_SQLSTATE_SIZE];
    char constraint[FQ_STORE_CONSTRAINT_SIZE];
    //  A statement failed in a way that leaves the connection unusable
    //  (the server went away), though libpq may still call it OK
    bool lost;
    //  Pages walk messages_request_idx in order (fq_store_tune_paging)
    bool paging_tuned;
    //  The leader's epoch its writes carry (fq_store_set_epoch), as text;
    //  "" when they carry none
    char epoch[FQ_STORE_INT_TEXT];
    //  The statements prepared on this connection; unprepared once a run
    //  by name found the name unknown (a pooler in transaction mode)
    fq_store_prepared_t prepared[FQ_STORE_PREPARED_MAX];
    int nprepared;
    bool unprepared;
};

//  ---------------------------------------------------------------------
//  Errors and statements (fq_store.c)

//  Records an error message of the store's own (printf-style) and returns
//  code.
int fq_store_fail(fq_store_t *self, int code, const char *format, ...)
    __attribute__((format(printf, 3, 4)));

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

//  fq_store_query for a hot statement: prepared on the connection the
//  first time, run by name after (fq_store_prepared.c).
PGresult *fq_store_query_prepared(fq_store_t *self, const char *sql, int nparams,
                                  const char *const *params, ExecStatusType wanted,
                                  const char *what, int *rc);

//  The name sql runs by on this connection, prepared
//  now if it was not yet; NULL when it is to run as text (the store does
//  not prepare on this connection, or could not now).
const char *fq_store_prepared_name(fq_store_t *self, const char *sql, int nparams);

//  After a run by name failed (fq_store_check recorded its SQLSTATE):
//  whether the server did not know the name, or its plan no longer fit
//  the tables. The connection then prepares no more, and nothing ran: a
//  caller outside a transaction block runs the statement again as text.
bool fq_store_prepared_lost(fq_store_t *self);

//  Forgets what was prepared: a new connection has nothing prepared.
void fq_store_prepared_reset(fq_store_t *self);

//  Runs a statement whose one parameter ($1::bigint[]) is count ids, as
//  fq_store_query does.
PGresult *fq_store_query_ids(fq_store_t *self, const char *sql, const int64_t *ids, size_t count,
                             ExecStatusType wanted, const char *what, int *rc);

//  Most statements one pipeline sends.
#define FQ_STORE_PIPELINE_MAX 8

//  One statement of a pipeline (fq_store_pipeline): text parameters, the
//  status it must answer, what it does (for the error), and its result,
//  which the caller clears when keep is set (else it is cleared).
typedef struct {
    const char *sql;
    int nparams;
    const char *const *params;
    ExecStatusType wanted;
    const char *what;
    bool keep;
    bool prepare;  //  A hot statement: run prepared (fq_store_prepared.c)
    PGresult *res; //  Out: with keep, when every statement succeeded
} fq_store_step_t;

//  Runs count statements in one round trip: all sent, then one Sync. In
//  a transaction block each runs in it; else they run as one implicit
//  transaction. A failure skips the statements after it, and leaves an
//  open block failed (fq_store_rollback). Returns 0, or the first failing
//  statement's code with its message recorded (no result kept then).
int fq_store_pipeline(fq_store_t *self, fq_store_step_t *steps, size_t count);

//  The statement of fq_store_request_templates_many for count ids (at
//  most FQ_STORE_TEMPLATES_MAX) as step, to go in a pipeline: its one
//  parameter, *param, is the array of ids written to array (the caller
//  frees it after the pipeline ran). Returns 0 or a code.
int fq_store_templates_step(fq_store_t *self, const int64_t *ids, size_t count, fq_buf_t *array,
                            const char **param, fq_store_step_t *step);

//  Reads the templates step's result res (and clears it) into out, as
//  fq_store_request_templates_many does. Returns how many, or FQ_ENOMEM.
int fq_store_templates_read(fq_store_t *self, PGresult *res, fq_request_templates_t *out);

//  Runs setup, a SELECT without parameters (set_config(name, value, true),
//  say), then sql as fq_store_query does, in one round trip and one
//  transaction: what setup sets for its transaction holds for sql and
//  ends with it, on whichever server connection a pooler lent the
//  transaction, never lingering on the session. With prepare both run
//  prepared, as fq_store_query_prepared does.
//  Returns sql's result, which the caller clears, or NULL with *rc set.
PGresult *fq_store_query_after(fq_store_t *self, const char *setup, const char *sql, int nparams,
                               const char *const *params, ExecStatusType wanted, const char *what,
                               bool prepare, int *rc);

//  The parameter of fairq.fence (or of fairq.check_epoch, its lock-free
//  form for the hot statements: loads, acks, nacks) for this connection's
//  leader-only statements: its epoch's text, or NULL (SQL NULL: no fence)
//  when it has none. A statement calls it once, before it writes: "... AND
//  (SELECT fairq.fence($n::bigint))", an uncorrelated subquery run once.
const char *fq_store_fence(fq_store_t *self);

//  Runs SELECT fairq.fence(epoch) in the open transaction, when this
//  connection carries an epoch. Returns 0, FQ_EDEPOSED or FQ_EDB.
int fq_store_fence_transaction(fq_store_t *self);

//  Rolls back an open transaction, if any.
void fq_store_rollback(fq_store_t *self);

//  Fills one item of a list from a row of a result.
typedef void(fq_store_row_fn)(const PGresult *res, int row, void *item);

//  Turns every row of res into an item of item_size bytes with fill, all
//  in one calloc'd array written to *rows (NULL when there is none), and
//  clears res. Returns how many rows, or FQ_ENOMEM (then *rows is NULL).
int fq_store_rows(fq_store_t *self, PGresult *res, size_t item_size, fq_store_row_fn *fill,
                  void **rows);

//  ---------------------------------------------------------------------
//  A statement built from fixed pieces of SQL, its values as parameters
//  (fq_store_statement.c): the searches and changes by filter, the events'
//  pages. Start one zeroed; its text is freed by fq_statement_run.

#define FQ_STATEMENT_PARAMS_MAX 16

typedef struct {
    fq_buf_t sql;
    int mem; //  -1 once the buffer could not grow
    int count;
    const char *values[FQ_STATEMENT_PARAMS_MAX];
    char text[FQ_STATEMENT_PARAMS_MAX][FQ_STORE_INT_TEXT];
} fq_statement_t;

void fq_statement_sql(fq_statement_t *q, const char *text);

//  Appends before, then "$<number>", then after.
void fq_statement_sql_param(fq_statement_t *q, const char *before, int number, const char *after);

//  Adds a parameter; returns its number ($n). A text value belongs to the
//  caller and must outlive the statement; a number is copied.
int fq_statement_text(fq_statement_t *q, const char *value);
int fq_statement_int(fq_statement_t *q, int64_t value);
int fq_statement_uint(fq_statement_t *q, uint64_t value);

//  Runs the statement built; frees its text. Returns the result (the
//  caller clears it) or NULL with *rc set (FQ_ENOMEM when the text could
//  not be built).
PGresult *fq_statement_run(fq_store_t *self, fq_statement_t *q, ExecStatusType wanted,
                           const char *what, int *rc);

//  ---------------------------------------------------------------------
//  Message filters (fq_store_operator.c), for the operator's queries and
//  the bulk actions (fq_store_bulk.c)

//  A status as a bit of the mask of statuses a query takes.
#define FQ_STATUS_BIT(status) (1u << (status))

//  A filter checked and resolved: the tenant name as its id.
typedef struct {
    const fq_message_filter_t *filter;
    int64_t tenant_by_name;
} fq_filter_resolved_t;

//  Checks filter (statuses: the FQ_STATUS_BIT mask of the statuses the
//  query accepts; change: it must narrow to a message, request, tenant,
//  recipient, domain, error or code) and resolves the names it holds; one
//  round trip at most. Returns 0 or a code, the store's error set.
int fq_store_filter_prepare(fq_store_t *self, const fq_message_filter_t *filter, unsigned statuses,
                            bool change, fq_filter_resolved_t *out, const char *what);

//  Appends " AND ..." to q for each field of the filter set; the messages
//  are "m".
void fq_store_filter_where(fq_statement_t *q, const fq_filter_resolved_t *resolved);

//  Cancels every pending and failed message a resolved filter selects, in
//  one statement with the counters and the events (fq_store_bulk.c), in
//  the caller's transaction: a request's cancel. Returns 0 with how many
//  into *changed, or a negative code.
int fq_store_cancel_all(fq_store_t *self, const fq_filter_resolved_t *resolved, int64_t *changed);

//  A column as an integer, 0 when NULL.
int64_t fq_store_int64(const PGresult *res, int row, int col);

//  For rows copied out of a result into one block (rows, then their
//  strings): the bytes a column's text takes with its NUL (0 for NULL),
//  and the copy of it at *strings, which moves past it (NULL for NULL).
size_t fq_store_text_size(const PGresult *res, int row, int col);
const char *fq_store_text_copy(const PGresult *res, int row, int col, char **strings);

//  ---------------------------------------------------------------------
//  Values as the server reads them (fq_store_encode.c), appended to the
//  shared buffer; each returns 0, or -1 when memory runs out, as fq_buf
//  does.

//  text (size bytes) escaped for COPY's text format.
int fq_store_copy_text(fq_buf_t *buf, const char *text, size_t size);

//  text as one quoted element of an array literal; NULL becomes NULL.
int fq_store_array_text(fq_buf_t *buf, const char *text);

//  The same of text's first size bytes (none of them NUL).
int fq_store_array_text_n(fq_buf_t *buf, const char *text, size_t size);

//  ids as a bigint array literal ("{1,2,3}"); stride is the distance in
//  bytes between two ids (sizeof a struct whose first field is the id).
int fq_store_id_array(fq_buf_t *buf, const int64_t *ids, size_t count, size_t stride);

#endif
