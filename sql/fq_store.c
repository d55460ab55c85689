/*  fq_store.c — the store's connection: making it, its errors, running
    statements on it, and the notifications it receives (see fq_store.h).
*/
#include "fq_store_internal.h"
#include "fq_error.h"
#include <errno.h>
#include <libpq-fe.h>
#include <poll.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  Room for a LISTEN statement: a channel's name is an identifier of at
//  most NAMEDATALEN - 1 bytes, each quote doubled when quoted.
#define S_LISTEN_SQL_SIZE 256

/*  A session is never configured with SET. Behind PgBouncer in transaction
    pooling (docs/operations.md, "Behind PgBouncer") each transaction may
    run on another server connection, and a SET stays on the one it ran
    on: it would be lost to fairq's next statement, and handed to whichever
    client that server connection serves next. So what fairq once SET on
    each session now goes another way, setting by setting:

    * application_name travels in the startup packet, which PgBouncer
      reads and applies to every server connection it lends the client.
    * TimeZone is not needed: times cross as epoch seconds both ways
      (extract(epoch FROM ...) out, to_timestamp($n) in), which no session
      zone changes, and no statement formats or parses a time as text.
    * jit (off, for fairq: its statements are short and many, and
      compiling one whose stale estimate crossed jit_above_cost cost more
      than running it, 64 ms of 6.4 s measured) is the server's to set
      for fairq's role: ALTER ROLE ... SET jit = off applies to that role's
      sessions, pooled or direct, and to no one else's. The startup
      packet cannot carry it: PgBouncer refuses an "options" parameter
      (or, told to ignore it, drops it), and a per-statement setting would
      cost every statement a transaction.
    * A setting one statement needs goes in that statement's own
      transaction (fq_store_query_after), as the scheduler's paging does. */
#define S_APPLICATION_NAME "fairq"

//  ---------------------------------------------------------------------
//  Errors and statements

int fq_store_fail(fq_store_t *self, int code, const char *format, ...)
{
    self->sqlstate[0] = self->constraint[0] = '\0';
    va_list args;
    va_start(args, format);
    vsnprintf(self->error, sizeof self->error, format, args);
    va_end(args);
    //  libpq's messages end in a newline; ours do not
    size_t len = strlen(self->error);
    while (len && (self->error[len - 1] == '\n' || self->error[len - 1] == ' '))
        self->error[--len] = 0;
    return code;
}

//  Maps a failed result to a code: data the database refused (bad input,
//  a violated check) is the caller's FQ_EINVAL, a fence that refused a
//  stale leader's write FQ_EDEPOSED, anything else FQ_EDB.
static int s_result_code(const char *state)
{
    if (state && (strncmp(state, "22", 2) == 0 || strncmp(state, "23", 2) == 0))
        return FQ_EINVAL;
    if (state && strcmp(state, FQ_STORE_SQLSTATE_DEPOSED) == 0)
        return FQ_EDEPOSED;
    return FQ_EDB;
}

//  Whether a failure with this SQLSTATE (NULL: libpq's own, no answer of
//  the server's) leaves the connection unusable. libpq marks a connection
//  bad only once it reads the end of it: a statement sent into a session
//  the server ended (a restart) can fail with "server closed the
//  connection unexpectedly" while the connection still reads as OK, and
//  the next statement on it would fail the same way. So an error libpq
//  made up itself (no SQLSTATE: it could not send, or read no answer),
//  class 08 (connection exception) and the server's own shutdown and
//  restart codes all count as a lost connection, to be made again.
static bool s_connection_lost(PGconn *conn, const PGresult *res, const char *state)
{
    if (PQstatus(conn) != CONNECTION_OK)
        return true;
    if (res && PQresultStatus(res) != PGRES_FATAL_ERROR)
        return false; //  Another status than the one wanted: not an error
    return !state || strncmp(state, "08", 2) == 0 ||
           strcmp(state, "57P01") == 0 || //  admin_shutdown
           strcmp(state, "57P02") == 0 || //  crash_shutdown
           strcmp(state, "57P03") == 0;   //  cannot_connect_now
}

//  Checks res against the status wanted; on failure records "could not
//  <what>: <server message>", clears res and returns the code.
int fq_store_check(fq_store_t *self, PGresult *res, ExecStatusType wanted, const char *what)
{
    if (res && PQresultStatus(res) == wanted)
        return 0;
    const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    const char *constraint = res ? PQresultErrorField(res, PG_DIAG_CONSTRAINT_NAME) : NULL;
    const char *primary = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
    int code = s_result_code(state);
    fq_store_fail(self, code, "could not %s: %s", what,
                  primary ? primary : PQerrorMessage(self->conn));
    snprintf(self->sqlstate, sizeof self->sqlstate, "%s", state ? state : "");
    snprintf(self->constraint, sizeof self->constraint, "%s", constraint ? constraint : "");
    if (s_connection_lost(self->conn, res, state))
        self->lost = true;
    PQclear(res);
    return code;
}

int fq_store_exec(fq_store_t *self, const char *sql, const char *what)
{
    PGresult *res = PQexec(self->conn, sql);
    int rc = fq_store_check(self, res, PGRES_COMMAND_OK, what);
    if (rc == 0)
        PQclear(res);
    return rc;
}

//  Runs a parameterised statement returning rows (or not, with
//  PGRES_COMMAND_OK); the caller clears the result.
PGresult *fq_store_query(fq_store_t *self, const char *sql, int nparams, const char *const *params,
                         ExecStatusType wanted, const char *what, int *rc)
{
    PGresult *res = PQexecParams(self->conn, sql, nparams, NULL, params, NULL, NULL, 0);
    *rc = fq_store_check(self, res, wanted, what);
    return *rc ? NULL : res;
}

PGresult *fq_store_query_prepared(fq_store_t *self, const char *sql, int nparams,
                                  const char *const *params, ExecStatusType wanted,
                                  const char *what, int *rc)
{
    //  A pipeline of one: the same round trip, and its fall-back to text
    fq_store_step_t step = {.sql = sql,
                            .nparams = nparams,
                            .params = params,
                            .wanted = wanted,
                            .what = what,
                            .keep = true,
                            .prepare = true};
    *rc = fq_store_pipeline(self, &step, 1);
    return step.res;
}

PGresult *fq_store_query_ids(fq_store_t *self, const char *sql, const int64_t *ids, size_t count,
                             ExecStatusType wanted, const char *what, int *rc)
{
    fq_buf_t array = {0};
    PGresult *res = NULL;
    if (fq_store_id_array(&array, ids, count, sizeof *ids))
        *rc = fq_store_fail(self, FQ_ENOMEM, "out of memory");
    else
        res = fq_store_query(self, sql, 1, (const char *const[]){array.data}, wanted, what, rc);
    fq_buf_free(&array);
    return res;
}

//  Runs the pipeline once; *by_name tells whether a statement ran prepared.
static int s_pipeline_run(fq_store_t *self, fq_store_step_t *steps, size_t count, bool *by_name)
{
    //  Prepared before the pipeline: a Parse that failed in it would skip
    //  the statements after it
    const char *names[FQ_STORE_PIPELINE_MAX] = {NULL};
    *by_name = false;
    for (size_t i = 0; i < count; i++) {
        steps[i].res = NULL;
        if (steps[i].prepare)
            names[i] = fq_store_prepared_name(self, steps[i].sql, steps[i].nparams);
        *by_name |= names[i] != NULL;
    }
    PGconn *conn = self->conn;
    bool sent = PQenterPipelineMode(conn);
    for (size_t i = 0; sent && i < count; i++)
        sent = names[i] ? PQsendQueryPrepared(conn, names[i], steps[i].nparams, steps[i].params,
                                              NULL, NULL, 0)
                        : PQsendQueryParams(conn, steps[i].sql, steps[i].nparams, NULL,
                                            steps[i].params, NULL, NULL, 0);
    sent = sent && PQpipelineSync(conn);
    //  Each statement's results end with a NULL; the last one counts (a
    //  statement after a failed one answers PGRES_PIPELINE_ABORTED)
    PGresult *results[FQ_STORE_PIPELINE_MAX] = {NULL};
    for (size_t i = 0; sent && i < count; i++) {
        PGresult *res;
        while ((res = PQgetResult(conn)) != NULL) {
            PQclear(results[i]);
            results[i] = res;
        }
    }
    PGresult *sync = sent ? PQgetResult(conn) : NULL;
    bool synced = sync && PQresultStatus(sync) == PGRES_PIPELINE_SYNC;
    PQclear(sync);
    //  Out of step with the server (a send failed halfway, the Sync never
    //  came): only a new connection is sure to be in step again
    bool out_of_step = !synced || !PQexitPipelineMode(conn);
    int rc = 0;
    for (size_t i = 0; i < count; i++) {
        if (rc == 0) {
            //  fq_store_check clears what fails
            rc = fq_store_check(self, results[i], steps[i].wanted, steps[i].what);
            if (rc == 0)
                steps[i].res = results[i];
        } else
            PQclear(results[i]);
    }
    if (out_of_step) {
        self->lost = true;
        if (rc == 0)
            rc = fq_store_fail(self, FQ_EDB, "could not %s: %s", count ? steps[0].what : "",
                               PQerrorMessage(conn));
    }
    for (size_t i = 0; i < count; i++)
        if (rc != 0 || !steps[i].keep) {
            PQclear(steps[i].res);
            steps[i].res = NULL;
        }
    return rc;
}

int fq_store_pipeline(fq_store_t *self, fq_store_step_t *steps, size_t count)
{
    if (count > FQ_STORE_PIPELINE_MAX)
        return fq_store_fail(self, FQ_EINVAL, "could not %s: %zu statements in one pipeline",
                             steps[0].what, count);
    bool in_block = PQtransactionStatus(self->conn) != PQTRANS_IDLE, by_name;
    int rc = s_pipeline_run(self, steps, count, &by_name);
    if (rc && by_name && fq_store_prepared_lost(self) && !in_block) {
        //  A block the pipeline began itself (its first step a BEGIN) is
        //  left failed: rolling it back undoes this pipeline and nothing
        //  else. Then, all of it undone, it runs again as text.
        fq_store_rollback(self);
        if (PQtransactionStatus(self->conn) == PQTRANS_IDLE)
            rc = s_pipeline_run(self, steps, count, &by_name);
    }
    return rc;
}

PGresult *fq_store_query_after(fq_store_t *self, const char *setup, const char *sql, int nparams,
                               const char *const *params, ExecStatusType wanted, const char *what,
                               bool prepare, int *rc)
{
    //  Both statements, then one Sync: the server runs them in one
    //  transaction (an implicit one, or the block already open), and a
    //  pooler lends one server connection for all of it
    fq_store_step_t steps[] = {
        {.sql = setup, .wanted = PGRES_TUPLES_OK, .what = what, .prepare = prepare},
        {.sql = sql,
         .nparams = nparams,
         .params = params,
         .wanted = wanted,
         .what = what,
         .keep = true,
         .prepare = prepare}};
    *rc = fq_store_pipeline(self, steps, 2);
    return steps[1].res;
}

void fq_store_rollback(fq_store_t *self)
{
    if (PQstatus(self->conn) == CONNECTION_OK && PQtransactionStatus(self->conn) != PQTRANS_IDLE)
        PQclear(PQexec(self->conn, "ROLLBACK"));
}

int fq_store_rows(fq_store_t *self, PGresult *res, size_t item_size, fq_store_row_fn *fill,
                  void **rows)
{
    size_t n = (size_t)PQntuples(res);
    char *items = n ? calloc(n, item_size) : NULL;
    *rows = items;
    if (n && !items) {
        PQclear(res);
        return fq_store_fail(self, FQ_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < n; i++)
        fill(res, (int)i, items + i * item_size);
    PQclear(res);
    return (int)n;
}

int64_t fq_store_int64(const PGresult *res, int row, int col)
{
    return PQgetisnull(res, row, col) ? 0 : strtoll(PQgetvalue(res, row, col), NULL, 10);
}

size_t fq_store_text_size(const PGresult *res, int row, int col)
{
    return PQgetisnull(res, row, col) ? 0 : (size_t)PQgetlength(res, row, col) + 1;
}

const char *fq_store_text_copy(const PGresult *res, int row, int col, char **strings)
{
    if (PQgetisnull(res, row, col))
        return NULL;
    size_t size = (size_t)PQgetlength(res, row, col) + 1;
    char *copy = memcpy(*strings, PQgetvalue(res, row, col), size);
    *strings += size;
    return copy;
}

//  ---------------------------------------------------------------------
//  Connection

//  The server's notices ("schema already exists, skipping") are not errors
//  and would only clutter fairq's log. But an error the server sends while
//  the session is idle comes this way too, and a FATAL one is its last
//  words before it closes the session (a restart: "terminating connection
//  due to administrator command"): the connection is lost from then on.
static void s_notice(void *arg, const PGresult *res)
{
    fq_store_t *self = arg;
    const char *severity = PQresultErrorField(res, PG_DIAG_SEVERITY_NONLOCALIZED);
    if (severity && (strcmp(severity, "FATAL") == 0 || strcmp(severity, "PANIC") == 0))
        self->lost = true;
}

fq_store_t *fq_store_new(const char *conninfo, char *error, size_t error_size)
{
    return fq_store_new_named(conninfo, S_APPLICATION_NAME, error, error_size);
}

fq_store_t *fq_store_new_named(const char *conninfo, const char *name, char *error,
                               size_t error_size)
{
    fq_store_t *self = calloc(1, sizeof *self);
    if (self) {
        self->conninfo = strdup(conninfo ? conninfo : "");
        snprintf(self->application_name, sizeof self->application_name, "%s",
                 name && *name ? name : S_APPLICATION_NAME);
    }
    if (!self || !self->conninfo) {
        snprintf(error, error_size, "out of memory");
        free(self);
        return NULL;
    }
    if (fq_store_reconnect(self) != 0) {
        snprintf(error, error_size, "%s", self->error);
        fq_store_destroy(&self);
        return NULL;
    }
    return self;
}

void fq_store_destroy(fq_store_t **self_p)
{
    fq_store_t *self = *self_p;
    if (!self)
        return;
    if (self->conn)
        PQfinish(self->conn);
    free(self->conninfo);
    free(self);
    *self_p = NULL;
}

const char *fq_store_error(fq_store_t *self)
{
    return self->error;
}

const char *fq_store_error_sqlstate(fq_store_t *self)
{
    return self->sqlstate;
}

const char *fq_store_error_constraint(fq_store_t *self)
{
    return self->constraint;
}

bool fq_store_connected(fq_store_t *self)
{
    return self->conn && !self->lost && PQstatus(self->conn) == CONNECTION_OK;
}

bool fq_store_alive(fq_store_t *self)
{
    if (!fq_store_connected(self))
        return false;
    //  An idle session has little to say: what is readable is most likely
    //  the server's last words (a FATAL message, s_notice, then the end of
    //  the stream, which POLLRDHUP tells at once)
    struct pollfd pfd = {.fd = PQsocket(self->conn), .events = POLLIN | POLLRDHUP};
    if (poll(&pfd, 1, 0) <= 0)
        return true;
    if (pfd.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL) || !PQconsumeInput(self->conn))
        self->lost = true;
    if (!fq_store_connected(self))
        fq_store_fail(self, FQ_EDB, "could not use the connection: the server closed it");
    return fq_store_connected(self);
}

int fq_store_reconnect(fq_store_t *self)
{
    if (self->conn)
        PQfinish(self->conn);
    self->lost = false;
    fq_store_prepared_reset(self);
    //  The conninfo is expanded in place of dbname; the name comes after it
    //  as a fallback, so that a conninfo's own application_name wins
    const char *const keys[] = {"dbname", "fallback_application_name", NULL};
    const char *const values[] = {self->conninfo, self->application_name, NULL};
    self->conn = PQconnectdbParams(keys, values, 1);
    if (!self->conn || PQstatus(self->conn) != CONNECTION_OK)
        return fq_store_fail(self, FQ_EDB, "could not connect to database: %s",
                             self->conn ? PQerrorMessage(self->conn) : "out of memory");
    PQsetNoticeReceiver(self->conn, s_notice, self);
    return 0;
}

//  ---------------------------------------------------------------------
//  Notifications

//  The one statement whose effect must outlive its transaction: the server
//  session it ran on listens from then on. So the connection must be a
//  session of its own, never a transaction pooler's (fairqd's
//  database_listen).
int fq_store_listen(fq_store_t *self, const char *channel)
{
    char *quoted = PQescapeIdentifier(self->conn, channel, strlen(channel));
    if (!quoted)
        return fq_store_fail(self, FQ_EDB, "could not listen: %s", PQerrorMessage(self->conn));
    char sql[S_LISTEN_SQL_SIZE];
    snprintf(sql, sizeof sql, "LISTEN %s", quoted);
    PQfreemem(quoted);
    return fq_store_exec(self, sql, "listen for notifications");
}

int fq_store_socket(fq_store_t *self)
{
    return self->conn && PQstatus(self->conn) == CONNECTION_OK ? PQsocket(self->conn) : -1;
}

int fq_store_notifications(fq_store_t *self, int64_t *requests, int max, int *nrequests)
{
    *nrequests = 0;
    if (!PQconsumeInput(self->conn) || PQstatus(self->conn) != CONNECTION_OK)
        return fq_store_fail(self, FQ_EDB, "could not read notifications: %s",
                             PQerrorMessage(self->conn));
    int count = 0;
    PGnotify *notify;
    while ((notify = PQnotifies(self->conn)) != NULL) {
        count++;
        char *end = NULL;
        errno = 0;
        long long id = strtoll(notify->extra, &end, 10);
        bool named = errno == 0 && end != notify->extra && *end == 0 && id > 0;
        if (named && *nrequests < max)
            requests[(*nrequests)++] = id;
        PQfreemem(notify);
    }
    return count;
}
