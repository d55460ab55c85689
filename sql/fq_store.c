/*  fq_store.c — the PostgreSQL store (see fq_store.h). */
#include "fq_store_internal.h"
#include "fq_error.h"
#include "fq_migrations.h"
#include <jansson.h>
#include <libpq-fe.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  Key of the advisory lock that serialises migrations between daemons.
#define S_MIGRATION_LOCK 0x66616972710001LL

//  COPY data is handed to libpq in pieces of about this size.
#define S_COPY_FLUSH_BYTES (256 * 1024)

//  Longest recipient address (RFC 5321: 64 local + @ + 255 domain).
#define S_ADDRESS_MAX 320

//  fairq.submit_json's parameters, and the recipients' place among them.
#define S_SUBMIT_PARAMS     10
#define S_SUBMIT_RECIPIENTS 4

//  Appends s escaped for COPY's text format: the four characters COPY
//  treats specially become backslash escapes.
int fq_buf_add_copy_text(fq_buf_t *buf, const char *s, size_t size)
{
    if (fq_buf_reserve(buf, 2 * size + 1))
        return -1;
    char *out = buf->data + buf->size;
    for (size_t i = 0; i < size; i++) {
        char c = s[i];
        if (c == '\\' || c == '\t' || c == '\n' || c == '\r') {
            *out++ = '\\';
            c = c == '\t' ? 't' : c == '\n' ? 'n' : c == '\r' ? 'r' : '\\';
        }
        *out++ = c;
    }
    buf->size = (size_t)(out - buf->data);
    buf->data[buf->size] = 0;
    return 0;
}

//  Appends s as one element of a PostgreSQL array literal: quoted, with
//  quotes and backslashes escaped; NULL becomes NULL.
int fq_buf_add_array_text(fq_buf_t *buf, const char *s)
{
    if (!s)
        return fq_buf_add(buf, "NULL", 4);
    size_t size = strlen(s);
    if (fq_buf_reserve(buf, 2 * size + 3))
        return -1;
    char *out = buf->data + buf->size;
    *out++ = '"';
    for (size_t i = 0; i < size; i++) {
        if (s[i] == '"' || s[i] == '\\')
            *out++ = '\\';
        *out++ = s[i];
    }
    *out++ = '"';
    buf->size = (size_t)(out - buf->data);
    buf->data[buf->size] = 0;
    return 0;
}


//  ---------------------------------------------------------------------
//  Errors and plumbing

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
//  a violated check) is the caller's FQ_EINVAL, anything else FQ_EDB.
static int s_result_code(const char *state)
{
    if (state && (strncmp(state, "22", 2) == 0 || strncmp(state, "23", 2) == 0))
        return FQ_EINVAL;
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
    fq_store_t *self = calloc(1, sizeof *self);
    if (self)
        self->conninfo = strdup(conninfo ? conninfo : "");
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
    self->conn = PQconnectdb(self->conninfo);
    if (!self->conn || PQstatus(self->conn) != CONNECTION_OK)
        return fq_store_fail(self, FQ_EDB, "could not connect to database: %s",
                             self->conn ? PQerrorMessage(self->conn) : "out of memory");
    PQsetNoticeReceiver(self->conn, s_notice, self);
    //  Times are stored as timestamptz; the session zone only affects text.
    //  JIT is off: fairq's statements are short and many, and compiling one
    //  whose estimate crossed jit_above_cost (a stale one, after a burst of
    //  inserts) cost more than running it (measured: 64 ms of 6.4 s).
    return fq_store_exec(self, "SET application_name = 'fairq'; SET TIME ZONE 'UTC'; SET jit = off",
                         "configure the session");
}

//  ---------------------------------------------------------------------
//  Migrations

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
    char lock[64];
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
        char what[128];
        snprintf(what, sizeof what, "apply migration %s", m->name);
        rc = fq_store_exec(self, m->sql, what);
        char version[16];
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

//  ---------------------------------------------------------------------
//  Tenants

int fq_store_tenant_put(fq_store_t *self, const fq_tenant_spec_t *spec, int64_t *id)
{
    char weight[16], inflight[16], rate[16];
    snprintf(weight, sizeof weight, "%d", spec->weight);
    snprintf(inflight, sizeof inflight, "%d", spec->max_inflight);
    snprintf(rate, sizeof rate, "%d", spec->submit_rate);
    const char *params[] = {spec->name, weight, inflight, rate};
    int rc;
    PGresult *res = fq_store_query(
        self,
        "INSERT INTO fairq.tenants AS t (name, weight, max_inflight, submit_rate)"
        " VALUES ($1, CASE WHEN $2::int > 0 THEN $2::int ELSE 1 END,"
        "         CASE WHEN $3::int > 0 THEN $3::int ELSE 1000 END,"
        "         CASE WHEN $4::int > 0 THEN $4::int END)"
        " ON CONFLICT (name) DO UPDATE SET"
        "  weight = CASE WHEN $2::int > 0 THEN $2::int ELSE t.weight END,"
        "  max_inflight = CASE WHEN $3::int > 0 THEN $3::int ELSE t.max_inflight END,"
        "  submit_rate = CASE WHEN $4::int > 0 THEN $4::int"
        "                     WHEN $4::int < 0 THEN NULL ELSE t.submit_rate END"
        " RETURNING t.id",
        4, params, PGRES_TUPLES_OK, "store tenant", &rc);
    if (!res)
        return rc;
    if (id)
        *id = fq_store_int64(res, 0, 0);
    PQclear(res);
    return 0;
}

//  ---------------------------------------------------------------------
//  Intake

int fq_store_submit(fq_store_t *self, const fq_submit_t *req, int64_t *request_id)
{
    char send_at[32], priority[16], attempts[16];
    snprintf(send_at, sizeof send_at, "%lld", (long long)req->send_at);
    snprintf(priority, sizeof priority, "%d", req->priority);
    snprintf(attempts, sizeof attempts, "%d", req->max_attempts > 0 ? req->max_attempts : 5);
    size_t recipients_size = req->recipients_size
                                 ? req->recipients_size
                                 : (req->recipients_json ? strlen(req->recipients_json) : 0);
    if (recipients_size > INT_MAX)
        return fq_store_fail(self, FQ_EINVAL, "could not submit request: recipients too large");
    const char *params[] = {req->tenant,
                            req->from,
                            req->subject,
                            req->body,
                            req->recipients_json,
                            req->body_is_html ? "true" : "false",
                            send_at,
                            priority,
                            attempts,
                            req->idempotency_key};
    //  The recipients in binary format, which for json is the text itself
    //  with its length: a slice of an HTTP body goes as it is, with no
    //  terminated copy of up to http_body_max bytes
    int lengths[S_SUBMIT_PARAMS] = {[S_SUBMIT_RECIPIENTS] = (int)recipients_size};
    int formats[S_SUBMIT_PARAMS] = {[S_SUBMIT_RECIPIENTS] = 1};
    PGresult *res = PQexecParams(self->conn,
                                 "SELECT fairq.submit_json($1, $2, $3, $4, $5::json, $6::boolean,"
                                 " CASE WHEN $7::bigint > 0 THEN to_timestamp($7::bigint)"
                                 " ELSE now() END, $8::int, $9::int, $10)",
                                 S_SUBMIT_PARAMS, NULL, params, lengths, formats, 0);
    int rc = fq_store_check(self, res, PGRES_TUPLES_OK, "submit request");
    if (rc)
        return rc;
    *request_id = fq_store_int64(res, 0, 0);
    PQclear(res);
    return 0;
}

int fq_store_request_templates(fq_store_t *self, int64_t request_id, fq_request_templates_t *out)
{
    char id[32];
    snprintf(id, sizeof id, "%lld", (long long)request_id);
    const char *params[] = {id};
    int rc;
    PGresult *res = fq_store_query(self,
                                   "SELECT r.id, r.tenant_id, r.subject, r.body, r.body_is_html,"
                                   " r.max_attempts, r.from_addr, t.name,"
                                   " (extract(epoch FROM greatest(r.created_at, r.send_at))"
                                   "  * 1000)::bigint FROM fairq.requests r"
                                   " JOIN fairq.tenants t ON t.id = r.tenant_id WHERE r.id = $1",
                                   1, params, PGRES_TUPLES_OK, "load request", &rc);
    if (!res)
        return rc;
    if (PQntuples(res) != 1) {
        PQclear(res);
        return fq_store_fail(self, FQ_ENOTFOUND, "request %lld does not exist",
                             (long long)request_id);
    }
    *out = (fq_request_templates_t){.id = fq_store_int64(res, 0, 0),
                                    .tenant_id = fq_store_int64(res, 0, 1),
                                    .subject = strdup(PQgetvalue(res, 0, 2)),
                                    .body = strdup(PQgetvalue(res, 0, 3)),
                                    .body_is_html = PQgetvalue(res, 0, 4)[0] == 't',
                                    .max_attempts = (int)fq_store_int64(res, 0, 5),
                                    .from_addr = strdup(PQgetvalue(res, 0, 6)),
                                    .tenant = strdup(PQgetvalue(res, 0, 7)),
                                    .due_at_ms = fq_store_int64(res, 0, 8)};
    PQclear(res);
    if (!out->subject || !out->body || !out->from_addr || !out->tenant) {
        fq_request_templates_free(out);
        return fq_store_fail(self, FQ_ENOMEM, "out of memory");
    }
    return 0;
}

void fq_request_templates_free(fq_request_templates_t *templates)
{
    free(templates->subject);
    free(templates->body);
    free(templates->from_addr);
    free(templates->tenant);
    templates->subject = templates->body = templates->from_addr = templates->tenant = NULL;
}

//  ---------------------------------------------------------------------
//  Splitting

//  A deliberately plain check, for what must never reach a mail header: one
//  @, a non-empty local part of printable ASCII without spaces, and a
//  domain of letters, digits, hyphens and dots. No CR, LF or other
//  control character anywhere. fairq.address_problem (0008_submit_from.sql)
//  is the same rule in SQL: the two change together.
const char *fq_store_address_problem(const char *to, size_t len)
{
    if (len == 0)
        return "empty address";
    if (len > S_ADDRESS_MAX)
        return "address longer than 320 bytes";
    const char *at = NULL;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)to[i];
        if (c == '\r' || c == '\n')
            return "address contains CR or LF";
        if (c < 0x21 || c > 0x7e)
            return "address contains a space, control or non-ASCII character";
        if (c == '@') {
            if (at)
                return "address has more than one @";
            at = to + i;
        }
    }
    if (!at || at == to || at == to + len - 1)
        return "address is not local@domain";
    const char *domain = at + 1;
    size_t domain_len = len - (size_t)(domain - to);
    if (domain[0] == '.' || domain[domain_len - 1] == '.' || !memchr(domain, '.', domain_len))
        return "address domain is not a dotted name";
    for (size_t i = 0; i < domain_len; i++) {
        char c = domain[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '-' || (c == '.' && domain[i + 1] != '.');
        if (!ok)
            return "address domain has an invalid character";
    }
    return NULL;
}

//  Longest field name quoted in a reason, bytes.
#define S_REASON_NAME_MAX 64

//  Length of the valid UTF-8 character at s, by PostgreSQL's rules (no
//  overlong forms, no surrogates, nothing above U+10FFFF), or 0.
static size_t s_utf8_char(const unsigned char *s)
{
    size_t len;
    if (s[0] < 0x80)
        return 1;
    else if (s[0] >= 0xc2 && s[0] <= 0xdf)
        len = 2;
    else if ((s[0] & 0xf0) == 0xe0)
        len = 3;
    else if (s[0] >= 0xf0 && s[0] <= 0xf4)
        len = 4;
    else
        return 0;
    for (size_t i = 1; i < len; i++)
        if ((s[i] & 0xc0) != 0x80) //  Also stops at the terminating NUL
            return 0;
    if ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0) ||
        (s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] >= 0x90))
        return 0;
    return len;
}

//  Fix: a copy of s with every byte that is not part of valid UTF-8
//  replaced by '?'; NULL when memory runs out. The server refuses invalid
//  UTF-8 in a parameter, and refused the whole statement with it: one
//  sender's reply in Latin-1 made a nack batch fail on every retry.
static char *s_utf8_clean(const char *s)
{
    char *clean = strdup(s);
    for (char *at = clean; at && *at;) {
        size_t len = s_utf8_char((const unsigned char *)at);
        if (len == 0)
            *at++ = '?';
        else
            at += len;
    }
    return clean;
}

//  Fix: how many bytes of s (at most max) to quote without cutting a UTF-8
//  character. A field name cut in the middle of one (%.64s) made the
//  reason invalid UTF-8: the server refused the rejects, and the chunk
//  failed on every retry.
static int s_utf8_prefix(const char *s, size_t max)
{
    size_t len = strnlen(s, max + 1);
    if (len > max)
        for (len = max; len > 0 && ((unsigned char)s[len] & 0xc0) == 0x80;)
            len--;
    return (int)len;
}

//  Why a recipient is refused, or NULL if it is good. reason is scratch.
static const char *s_recipient_problem(json_t *recipient, const char *const *required,
                                       size_t nrequired, size_t nheader, char *reason,
                                       size_t reason_size)
{
    if (!json_is_object(recipient))
        return "recipient is not an object";
    json_t *to = json_object_get(recipient, "to");
    if (!json_is_string(to))
        return "recipient has no \"to\" string";
    const char *problem = fq_store_address_problem(json_string_value(to), json_string_length(to));
    if (problem)
        return problem;
    json_t *fields = json_object_get(recipient, "fields");
    if (fields && !json_is_object(fields) && !json_is_null(fields))
        return "\"fields\" is not an object";
    const char *key;
    json_t *value;
    json_object_foreach(fields, key, value)
    {
        if (!json_is_string(value) && !json_is_number(value) && !json_is_boolean(value)) {
            snprintf(reason, reason_size, "field \"%.*s\" is not a string, number or boolean",
                     s_utf8_prefix(key, S_REASON_NAME_MAX), key);
            return reason;
        }
    }
    for (size_t i = 0; i < nrequired; i++) {
        json_t *field = json_object_get(fields, required[i]);
        if (!field) {
            snprintf(reason, reason_size, "field \"%.*s\" used by the template is missing",
                     s_utf8_prefix(required[i], S_REASON_NAME_MAX), required[i]);
            return reason;
        }
        //  A header's value on two lines would be a header of its own (an
        //  injected Bcc): refused here, with the recipient's other faults,
        //  rather than found dead at send time
        if (i < nheader && json_is_string(field) &&
            strcspn(json_string_value(field), "\r\n") < json_string_length(field)) {
            snprintf(reason, reason_size,
                     "field \"%.*s\" goes into the subject and holds CR, LF or NUL",
                     s_utf8_prefix(required[i], S_REASON_NAME_MAX), required[i]);
            return reason;
        }
    }
    return NULL;
}

typedef struct {
    int64_t chunk_no;
    int64_t first_position;
    int64_t tenant_id;
    bool cancelled;
    //  The chunk's row; its last column is the recipients, a JSON array
    //  as the server stores it; owned
    PGresult *recipients;
} s_chunk_t;

//  Spans of JSON text. The chunk is the server's own output (json_agg of
//  jsonb elements), so it is well formed; these only find where values
//  begin and end, and each recipient is still parsed and checked alone.

static const char *s_json_space(const char *at, const char *end)
{
    while (at < end && (*at == ' ' || *at == '\t' || *at == '\n' || *at == '\r'))
        at++;
    return at;
}

//  The end of the JSON value that starts at at, or NULL if it has none.
static const char *s_json_value_end(const char *at, const char *end)
{
    if (at >= end)
        return NULL;
    if (*at == '"') {
        for (at++; at < end; at++)
            if (*at == '\\')
                at++;
            else if (*at == '"')
                return at + 1;
        return NULL;
    }
    if (*at == '{' || *at == '[') {
        int depth = 0;
        for (; at < end; at++) {
            if (*at == '"') {
                at = s_json_value_end(at, end);
                if (!at)
                    return NULL;
                at--;
            } else if (*at == '{' || *at == '[')
                depth++;
            else if ((*at == '}' || *at == ']') && --depth == 0)
                return at + 1;
        }
        return NULL;
    }
    const char *start = at;
    while (at < end && !strchr(",}] \t\r\n", *at))
        at++;
    return at > start ? at : NULL;
}

//  The text of the member "fields" of the object element, or NULL.
static const char *s_json_fields(const char *at, const char *end, size_t *size)
{
    static const char key[] = "\"fields\"";
    at = s_json_space(at, end);
    if (at == end || *at != '{')
        return NULL;
    at = s_json_space(at + 1, end);
    while (at < end && *at == '"') {
        const char *key_end = s_json_value_end(at, end);
        const char *value = key_end ? s_json_space(key_end, end) : NULL;
        if (!value || value == end || *value != ':')
            return NULL;
        value = s_json_space(value + 1, end);
        const char *value_end = s_json_value_end(value, end);
        if (!value_end)
            return NULL;
        if ((size_t)(key_end - at) == sizeof key - 1 && memcmp(at, key, sizeof key - 1) == 0) {
            *size = (size_t)(value_end - value);
            return value;
        }
        at = s_json_space(value_end, end);
        if (at == end || *at != ',')
            return NULL;
        at = s_json_space(at + 1, end);
    }
    return NULL;
}

//  Locks and reads the first chunk left, in the open transaction. Returns 1
//  with it, 0 if none is left.
static int s_take_chunk(fq_store_t *self, const char *request_id, s_chunk_t *chunk)
{
    const char *params[] = {request_id};
    int rc;
    PGresult *res = fq_store_query(self,
                                   "SELECT c.chunk_no, c.first_position, r.tenant_id,"
                                   " r.status = 'cancelled', c.recipients"
                                   " FROM fairq.recipient_chunks c"
                                   " JOIN fairq.requests r ON r.id = c.request_id"
                                   " WHERE c.request_id = $1 ORDER BY c.chunk_no LIMIT 1"
                                   " FOR UPDATE OF c",
                                   1, params, PGRES_TUPLES_OK, "read recipients", &rc);
    if (!res)
        return rc;
    if (PQntuples(res) == 0) {
        PQclear(res);
        return 0;
    }
    chunk->chunk_no = fq_store_int64(res, 0, 0);
    chunk->first_position = fq_store_int64(res, 0, 1);
    chunk->tenant_id = fq_store_int64(res, 0, 2);
    chunk->cancelled = PQgetvalue(res, 0, 3)[0] == 't';
    //  Each recipient's "fields" is copied as the server's own text (see
    //  s_copy_messages); the chunk is read whole, as one value, which
    //  costs the server less than cutting it into rows
    chunk->recipients = res;
    return 1;
}

//  Streams the good recipients as COPY rows; collects the others as
//  rejects (positions, recipients and reasons as array literals).
static int s_copy_messages(fq_store_t *self, const char *request_id, const s_chunk_t *chunk,
                           const char *const *required, size_t nrequired, size_t nheader,
                           fq_buf_t *positions, fq_buf_t *addresses, fq_buf_t *reasons,
                           fq_split_result_t *result)
{
    PGresult *res = PQexec(self->conn, "COPY fairq.messages (request_id, tenant_id, recipient,"
                                       " fields) FROM STDIN");
    int rc = fq_store_check(self, res, PGRES_COPY_IN, "start COPY of messages");
    if (rc)
        return rc;
    PQclear(res);
    fq_buf_t rows = {0};
    int mem = 0; //  -1 once a buffer could not grow
    char prefix[64];
    int prefix_len =
        snprintf(prefix, sizeof prefix, "%s\t%lld\t", request_id, (long long)chunk->tenant_id);
    char reason[160];
    //  Each recipient is parsed alone, so one that jansson cannot hold (a
    //  number like 1e400) is rejected alone; its "fields" are copied as the
    //  server's text, never re-serialised (0.1 stays 0.1)
    const char *text = PQgetvalue(chunk->recipients, 0, 4);
    const char *text_end = text + PQgetlength(chunk->recipients, 0, 4);
    const char *at = s_json_space(text, text_end);
    bool bad_chunk = at == text_end || *at != '[';
    at = bad_chunk ? text_end : s_json_space(at + 1, text_end);
    if (at < text_end && *at == ']')
        at = text_end;
    for (int index = 0; at < text_end && !bad_chunk; index++) {
        const char *element = at;
        const char *element_end = s_json_value_end(element, text_end);
        at = element_end ? s_json_space(element_end, text_end) : NULL;
        if (!at || at == text_end || (*at != ',' && *at != ']')) {
            bad_chunk = true;
            break;
        }
        at = *at == ']' ? text_end : s_json_space(at + 1, text_end);
        json_error_t json_error;
        json_t *recipient =
            json_loadb(element, (size_t)(element_end - element), JSON_DECODE_ANY, &json_error);
        const char *problem = NULL;
        if (!recipient) {
            snprintf(reason, sizeof reason, "recipient could not be read: %.*s",
                     s_utf8_prefix(json_error.text, 100), json_error.text);
            problem = reason;
        } else
            problem =
                s_recipient_problem(recipient, required, nrequired, nheader, reason, sizeof reason);
        if (problem) {
            json_t *to = json_is_object(recipient) ? json_object_get(recipient, "to") : NULL;
            mem |= fq_buf_add(positions, positions->size > 1 ? "," : "", positions->size > 1);
            mem |= fq_buf_printf(positions, "%lld", (long long)(chunk->first_position + index));
            mem |= fq_buf_add(addresses, addresses->size > 1 ? "," : "", addresses->size > 1);
            mem |=
                fq_buf_add_array_text(addresses, json_is_string(to) ? json_string_value(to) : NULL);
            mem |= fq_buf_add(reasons, reasons->size > 1 ? "," : "", reasons->size > 1);
            mem |= fq_buf_add_array_text(reasons, problem);
            result->rejected++;
            json_decref(recipient);
            if (mem)
                break;
            continue;
        }
        json_t *to = json_object_get(recipient, "to");
        json_t *fields = json_object_get(recipient, "fields");
        mem |= fq_buf_add(&rows, prefix, (size_t)prefix_len);
        mem |= fq_buf_add_copy_text(&rows, json_string_value(to), json_string_length(to));
        mem |= fq_buf_add(&rows, "\t", 1);
        size_t fields_size = 0;
        const char *fields_text =
            json_is_object(fields) ? s_json_fields(element, element_end, &fields_size) : NULL;
        if (fields_text)
            mem |= fq_buf_add_copy_text(&rows, fields_text, fields_size);
        else if (json_is_object(fields)) //  Not in jsonb output text: cannot happen
            bad_chunk = true;
        else
            mem |= fq_buf_add(&rows, "{}", 2);
        json_decref(recipient);
        mem |= fq_buf_add(&rows, "\n", 1);
        result->split++;
        if (mem == 0 && rows.size >= S_COPY_FLUSH_BYTES) {
            if (PQputCopyData(self->conn, rows.data, (int)rows.size) != 1)
                rc = FQ_EDB;
            rows.size = 0;
        }
        if (rc || mem)
            break;
    }
    if (bad_chunk && rc == 0)
        rc = FQ_EINVAL;
    if (mem)
        rc = FQ_ENOMEM;
    if (rc == 0 && rows.size && PQputCopyData(self->conn, rows.data, (int)rows.size) != 1)
        rc = FQ_EDB;
    fq_buf_free(&rows);
    //  End the COPY either way, so the connection is usable again
    if (PQputCopyEnd(self->conn, rc ? "fairq split failed" : NULL) != 1)
        rc = rc ? rc : FQ_EDB;
    res = PQgetResult(self->conn);
    int end = fq_store_check(self, res, PGRES_COMMAND_OK, "COPY messages");
    if (end == 0)
        PQclear(res);
    while ((res = PQgetResult(self->conn)))
        PQclear(res);
    if (rc == FQ_ENOMEM)
        return fq_store_fail(self, rc, "out of memory");
    if (rc == FQ_EINVAL)
        return fq_store_fail(self, rc, "could not read recipients of request %s: not a JSON array",
                             request_id);
    return rc ? (end ? end
                     : fq_store_fail(self, rc, "could not COPY messages: %s",
                                     PQerrorMessage(self->conn)))
              : end;
}

int fq_store_split_chunk(fq_store_t *self, int64_t request_id, const char *const *required_fields,
                         size_t nrequired, size_t nheader, fq_split_result_t *result)
{
    *result = (fq_split_result_t){0};
    char id[32];
    snprintf(id, sizeof id, "%lld", (long long)request_id);
    s_chunk_t chunk = {0};
    fq_buf_t positions = {0}, addresses = {0}, reasons = {0};
    int rc = fq_store_exec(self, "BEGIN", "begin split");
    int taken = rc ? rc : s_take_chunk(self, id, &chunk);
    if (taken < 0)
        rc = taken;
    if (rc == 0 && taken && !chunk.cancelled) {
        if (fq_buf_add(&positions, "{", 1) | fq_buf_add(&addresses, "{", 1) |
            fq_buf_add(&reasons, "{", 1))
            rc = fq_store_fail(self, FQ_ENOMEM, "out of memory");
        if (rc == 0)
            rc = s_copy_messages(self, id, &chunk, required_fields, nrequired, nheader, &positions,
                                 &addresses, &reasons, result);
        if (rc == 0 && (fq_buf_add(&positions, "}", 1) | fq_buf_add(&addresses, "}", 1) |
                        fq_buf_add(&reasons, "}", 1)))
            rc = fq_store_fail(self, FQ_ENOMEM, "out of memory");
    }
    if (rc == 0 && result->rejected) {
        const char *params[] = {id, positions.data, addresses.data, reasons.data};
        PGresult *res =
            fq_store_query(self,
                           "INSERT INTO fairq.rejects (request_id, position, recipient,"
                           " reason) SELECT $1, p, a, r FROM unnest($2::int[], $3::text[],"
                           " $4::text[]) AS u(p, a, r)",
                           4, params, PGRES_COMMAND_OK, "record rejected recipients", &rc);
        PQclear(res);
    }
    if (rc == 0) {
        char chunk_no[32], split[16], rejected[16];
        snprintf(chunk_no, sizeof chunk_no, "%lld", (long long)chunk.chunk_no);
        snprintf(split, sizeof split, "%d", result->split);
        snprintf(rejected, sizeof rejected, "%d", result->rejected);
        const char *params[] = {id, chunk_no, split, rejected, taken ? "true" : "false"};
        //  The chunk goes in the same transaction as its messages: a crash
        //  leaves either both or neither
        PGresult *res = fq_store_query(
            self,
            "WITH gone AS (DELETE FROM fairq.recipient_chunks"
            "              WHERE request_id = $1 AND chunk_no = $2 AND $5::boolean RETURNING 1),"
            " left_over AS (SELECT count(*) - (SELECT count(*) FROM gone) AS n"
            "               FROM fairq.recipient_chunks WHERE request_id = $1)"
            " UPDATE fairq.requests r SET split = split + $3::int,"
            "  rejected = rejected + $4::int, updated_at = now(),"
            "  status = CASE WHEN r.status IN ('accepted', 'splitting')"
            "                THEN (CASE WHEN (SELECT n FROM left_over) > 0 THEN 'splitting'"
            "                           WHEN split + $3::int = 0 THEN 'done'"
            "                           ELSE 'active' END)::fairq.request_status"
            "                ELSE r.status END,"
            //  A request that ends here (every recipient rejected) is
            //  finished now, so that retention finds it
            "  finished_at = CASE WHEN r.status IN ('accepted', 'splitting')"
            "                      AND (SELECT n FROM left_over) = 0 AND split + $3::int = 0"
            "                     THEN now() ELSE r.finished_at END"
            " WHERE r.id = $1 RETURNING (SELECT n FROM left_over)",
            5, params, PGRES_TUPLES_OK, "update request after split", &rc);
        if (res)
            result->last = PQntuples(res) == 1 && fq_store_int64(res, 0, 0) == 0;
        PQclear(res);
    }
    if (rc == 0)
        rc = fq_store_exec(self, "COMMIT", "commit split");
    if (rc)
        fq_store_rollback(self);
    PQclear(chunk.recipients);
    fq_buf_free(&positions);
    fq_buf_free(&addresses);
    fq_buf_free(&reasons);
    if (rc)
        *result = (fq_split_result_t){0};
    return rc ? rc : taken;
}

//  ---------------------------------------------------------------------
//  Status writes

int fq_buf_add_id_array(fq_buf_t *buf, const int64_t *ids, size_t count, size_t stride)
{
    int rc = fq_buf_add(buf, "{", 1);
    for (size_t i = 0; i < count && rc == 0; i++) {
        const int64_t *id = (const int64_t *)((const char *)ids + i * stride);
        rc = fq_buf_printf(buf, i ? ",%lld" : "%lld", (long long)*id);
    }
    return rc ? rc : fq_buf_add(buf, "}", 1);
}

//  The ack changes only columns no index covers, so it stays a HOT update
//  (no index writes). try_count > 1 after the update means the message had
//  failed before, so the request's failed counter goes down by one.
static const char *const S_ACK_SQL =
    "WITH acked AS ("
    "  UPDATE fairq.messages m SET status = 'sent', try_count = m.try_count + 1,"
    "    last_attempt_at = now(), next_attempt_at = NULL, updated_at = now()"
    "  FROM unnest($1::bigint[]) AS a(id)"
    "  WHERE m.id = a.id AND m.status IN ('pending', 'failed')"
    "  RETURNING m.request_id, m.try_count > 1 AS was_failed),"
    " counted AS (UPDATE fairq.requests r SET sent = r.sent + c.n,"
    "    failed = r.failed - c.retried, updated_at = now()"
    "  FROM (SELECT request_id, count(*) AS n, count(*) FILTER (WHERE was_failed) AS retried"
    "        FROM acked GROUP BY request_id) c"
    "  WHERE r.id = c.request_id RETURNING c.n)"
    " SELECT coalesce(sum(n), 0) FROM counted";

int fq_store_ack_batch(fq_store_t *self, const int64_t *ids, size_t count)
{
    if (count == 0)
        return 0;
    fq_buf_t array = {0};
    if (fq_buf_add_id_array(&array, ids, count, sizeof *ids)) {
        fq_buf_free(&array);
        return fq_store_fail(self, FQ_ENOMEM, "out of memory");
    }
    const char *params[] = {array.data};
    int rc;
    //  One statement is one transaction: all of the batch or none of it
    PGresult *res = fq_store_query(self, S_ACK_SQL, 1, params, PGRES_TUPLES_OK, "apply acks", &rc);
    fq_buf_free(&array);
    if (!res)
        return rc;
    int applied = (int)fq_store_int64(res, 0, 0);
    PQclear(res);
    return applied;
}

static const char *const S_NACK_SQL =
    "WITH input AS ("
    "  SELECT * FROM unnest($1::bigint[], $2::boolean[], $3::text[]) AS n(id, permanent, error)),"
    " nacked AS ("
    "  UPDATE fairq.messages m SET"
    "    try_count = m.try_count + 1, last_attempt_at = now(), updated_at = now(),"
    "    last_error = left(i.error, 2000),"
    "    status = CASE WHEN i.permanent OR m.try_count + 1 >= r.max_attempts"
    "                  THEN 'dead' ELSE 'failed' END::fairq.message_status,"
    "    next_attempt_at = CASE WHEN i.permanent OR m.try_count + 1 >= r.max_attempts THEN NULL"
    "      ELSE now() + make_interval(secs => least($5::float8,"
    "             $4::float8 * power(2, m.try_count)) * (0.5 + random() / 2) / 1000) END"
    "  FROM input i, fairq.requests r"
    "  WHERE m.id = i.id AND r.id = m.request_id AND m.status IN ('pending', 'failed')"
    "  RETURNING m.request_id, m.status, m.try_count > 1 AS was_failed),"
    " counted AS (UPDATE fairq.requests r SET"
    "    failed = r.failed + c.failed - c.retried, dead = r.dead + c.dead, updated_at = now()"
    "  FROM (SELECT request_id, count(*) AS n,"
    "          count(*) FILTER (WHERE status = 'failed') AS failed,"
    "          count(*) FILTER (WHERE status = 'dead') AS dead,"
    "          count(*) FILTER (WHERE was_failed) AS retried"
    "        FROM nacked GROUP BY request_id) c"
    "  WHERE r.id = c.request_id RETURNING c.n)"
    " SELECT coalesce(sum(n), 0) FROM counted";

int fq_store_nack_batch(fq_store_t *self, const fq_nack_t *nacks, size_t count,
                        const fq_retry_policy_t *policy)
{
    if (count == 0)
        return 0;
    fq_buf_t ids = {0}, permanent = {0}, errors = {0};
    int mem = fq_buf_add_id_array(&ids, &nacks[0].id, count, sizeof *nacks);
    mem |= fq_buf_add(&permanent, "{", 1) | fq_buf_add(&errors, "{", 1);
    for (size_t i = 0; i < count && mem == 0; i++) {
        mem |= fq_buf_add(&permanent,
                          i ? (nacks[i].permanent ? ",t" : ",f") : (nacks[i].permanent ? "t" : "f"),
                          i ? 2 : 1);
        mem |= fq_buf_add(&errors, i ? "," : "", i ? 1 : 0);
        char *clean = s_utf8_clean(nacks[i].error ? nacks[i].error : "");
        mem |= clean ? fq_buf_add_array_text(&errors, clean) : -1;
        free(clean);
    }
    mem |= fq_buf_add(&permanent, "}", 1) | fq_buf_add(&errors, "}", 1);
    char base[16], cap[16];
    snprintf(base, sizeof base, "%d", policy->base_ms);
    snprintf(cap, sizeof cap, "%d", policy->cap_ms);
    const char *params[] = {ids.data, permanent.data, errors.data, base, cap};
    PGresult *res = NULL;
    int rc;
    if (mem)
        rc = fq_store_fail(self, FQ_ENOMEM, "out of memory");
    else
        res = fq_store_query(self, S_NACK_SQL, 5, params, PGRES_TUPLES_OK, "apply nacks", &rc);
    fq_buf_free(&ids);
    fq_buf_free(&permanent);
    fq_buf_free(&errors);
    if (!res)
        return rc;
    int applied = (int)fq_store_int64(res, 0, 0);
    PQclear(res);
    return applied;
}

//  ---------------------------------------------------------------------
//  Paging

int fq_store_next_ready(fq_store_t *self, int64_t request_id, int64_t after_id, int limit,
                        int64_t *ids)
{
    char id[32], after[32], count[16];
    snprintf(id, sizeof id, "%lld", (long long)request_id);
    snprintf(after, sizeof after, "%lld", (long long)after_id);
    snprintf(count, sizeof count, "%d", limit);
    const char *params[] = {id, after, count};
    int rc;
    PGresult *res = fq_store_query(self,
                                   "SELECT id FROM fairq.messages WHERE request_id = $1 AND id > $2"
                                   " AND status = 'pending' ORDER BY id LIMIT $3",
                                   3, params, PGRES_TUPLES_OK, "page ready messages", &rc);
    if (!res)
        return rc;
    int n = PQntuples(res);
    for (int i = 0; i < n; i++)
        ids[i] = fq_store_int64(res, i, 0);
    PQclear(res);
    return n;
}

int fq_store_claim_due_retries(fq_store_t *self, int limit, int lease_s, fq_due_message_t *out)
{
    char count[16], lease[16];
    snprintf(count, sizeof count, "%d", limit);
    snprintf(lease, sizeof lease, "%d", lease_s);
    const char *params[] = {count, lease};
    int rc;
    PGresult *res = fq_store_query(
        self,
        "UPDATE fairq.messages m SET next_attempt_at = now() + make_interval(secs => $2::int)"
        " FROM (SELECT id FROM fairq.messages WHERE next_attempt_at <= now()"
        "       AND status = 'failed'"
        //  A paused or cancelled request's retries wait where they are
        "       AND EXISTS (SELECT 1 FROM fairq.requests r WHERE r.id = request_id"
        "                   AND r.status IN ('splitting', 'active'))"
        "       ORDER BY next_attempt_at LIMIT $1"
        "       FOR UPDATE SKIP LOCKED) due"
        " WHERE m.id = due.id RETURNING m.id, m.request_id, m.tenant_id",
        2, params, PGRES_TUPLES_OK, "claim due retries", &rc);
    if (!res)
        return rc;
    int n = PQntuples(res);
    for (int i = 0; i < n; i++)
        out[i] = (fq_due_message_t){fq_store_int64(res, i, 0), fq_store_int64(res, i, 1),
                                    fq_store_int64(res, i, 2)};
    PQclear(res);
    return n;
}

int fq_store_due_requests(fq_store_t *self, int limit, fq_due_request_t *out)
{
    char count[16];
    snprintf(count, sizeof count, "%d", limit);
    const char *params[] = {count};
    int rc;
    //  The IN list repeats the predicate of requests_open_idx word for word,
    //  so the planner can use that partial index; paused is then left out
    PGresult *res = fq_store_query(
        self,
        "SELECT r.id, r.tenant_id, r.priority, r.scan_from,"
        " NOT EXISTS (SELECT 1 FROM fairq.recipient_chunks c WHERE c.request_id = r.id),"
        " t.weight, t.max_inflight, r.total"
        " FROM fairq.requests r JOIN fairq.tenants t ON t.id = r.tenant_id"
        " WHERE r.status IN ('accepted', 'splitting', 'active', 'paused')"
        " AND r.status <> 'paused' AND r.send_at <= now()"
        " ORDER BY r.send_at, r.id LIMIT $1",
        1, params, PGRES_TUPLES_OK, "find due requests", &rc);
    if (!res)
        return rc;
    int n = PQntuples(res);
    for (int i = 0; i < n; i++)
        out[i] = (fq_due_request_t){.id = fq_store_int64(res, i, 0),
                                    .tenant_id = fq_store_int64(res, i, 1),
                                    .priority = (int)fq_store_int64(res, i, 2),
                                    .scan_from = fq_store_int64(res, i, 3),
                                    .split_done = PQgetvalue(res, i, 4)[0] == 't',
                                    .weight = (int)fq_store_int64(res, i, 5),
                                    .max_inflight = (int)fq_store_int64(res, i, 6),
                                    .total = fq_store_int64(res, i, 7)};
    PQclear(res);
    return n;
}
