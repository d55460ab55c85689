/*  fq_bench_util.h — what the benchmark programs share: parsing counts,
    medians of repeated runs, thousands separators in the tables, a clock
    and a growable text buffer; and, for the programs that include
    <libpq-fe.h> before this file, checked queries, the server settings
    that decide the figures, and the raw database floor (a bare table like
    one of fairq's, filled by COPY and updated in batches). */
#ifndef FQ_BENCH_UTIL_H
#define FQ_BENCH_UTIL_H

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

//  How this program was built, for the header of its output: figures of an
//  unoptimised or sanitized build say nothing about speed.
static inline const char *fq_bench_build(void)
{
#if defined(__OPTIMIZE__)
    return "optimised";
#else
    return "NOT optimised: figures are not representative";
#endif
}

static inline const char *fq_bench_sanitizer(void)
{
#if defined(__SANITIZE_ADDRESS__)
    return ", AddressSanitizer";
#else
    return "";
#endif
}

//  Most repetitions of one measurement (--runs).
#define FQ_BENCH_MAX_RUNS 1000

//  A positive decimal count no larger than max into *out; 0 or -1.
static inline int fq_bench_parse_count(const char *text, uint64_t max, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long value = strtoull(text, &end, 10);
    if (errno || end == text || *end || text[0] == '-' || value == 0 || value > max)
        return -1;
    *out = value;
    return 0;
}

static inline int fq_bench_double_compare(const void *a, const void *b)
{
    double x = *(const double *)a;
    double y = *(const double *)b;
    return x < y ? -1 : x > y;
}

//  Median of n values (1..FQ_BENCH_MAX_RUNS); values stay in their order.
static inline double fq_bench_median(const double *values, int n)
{
    double sorted[FQ_BENCH_MAX_RUNS];
    memcpy(sorted, values, (size_t)n * sizeof *sorted);
    qsort(sorted, (size_t)n, sizeof *sorted, fq_bench_double_compare);
    return n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
}

//  value rounded, with thousands separators ("1,234,567"), into out.
static inline const char *fq_bench_grouped(double value, char *out, size_t size)
{
    char digits[32];
    snprintf(digits, sizeof digits, "%.0f", value);
    size_t len = strlen(digits), o = 0;
    for (size_t i = 0; i < len && o + 2 < size; i++) {
        if (i && (len - i) % 3 == 0)
            out[o++] = ',';
        out[o++] = digits[i];
    }
    out[o] = 0;
    return out;
}

#define FQ_BENCH_NS_PER_S 1000000000u

//  CLOCK_MONOTONIC in nanoseconds.
static inline uint64_t fq_bench_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * FQ_BENCH_NS_PER_S + (uint64_t)ts.tv_nsec;
}

//  ---------------------------------------------------------------------
//  Text: a growable buffer for JSON, COPY rows and array literals

//  A first allocation that holds an array literal of a few hundred ids
#define FQ_BENCH_TEXT_FIRST_CAPACITY 4096

typedef struct {
    char *data;
    size_t size;
    size_t capacity;
} fq_bench_text_t;

//  Appends printf-style; returns 0, or -1 when memory runs out.
__attribute__((format(printf, 2, 3))) static inline int
fq_bench_text_printf(fq_bench_text_t *self, const char *format, ...)
{
    for (;;) {
        size_t room = self->capacity - self->size;
        va_list args;
        va_start(args, format);
        int len = self->data ? vsnprintf(self->data + self->size, room, format, args) : 0;
        va_end(args);
        if (len < 0)
            return -1;
        if (self->data && (size_t)len < room) {
            self->size += (size_t)len;
            return 0;
        }
        size_t capacity = self->capacity ? 2 * self->capacity : FQ_BENCH_TEXT_FIRST_CAPACITY;
        while (capacity < self->size + (size_t)len + 1)
            capacity *= 2;
        char *data = realloc(self->data, capacity);
        if (!data)
            return -1;
        self->data = data;
        self->capacity = capacity;
    }
}

static inline void fq_bench_text_free(fq_bench_text_t *self)
{
    free(self->data);
    *self = (fq_bench_text_t){0};
}

//  ---------------------------------------------------------------------
//  PostgreSQL: for the programs that include <libpq-fe.h> first (the
//  runtime's benchmark has no libpq). Every error is printed on stderr
//  prefixed with program, the benchmark's name.
#ifdef LIBPQ_FE_H

//  Checks res for the wanted status; says why not and returns -1 (res is
//  cleared then), or returns 0 and leaves res to the caller.
static inline int fq_bench_check(const char *program, PGconn *conn, PGresult *res,
                                 ExecStatusType wanted, const char *what)
{
    if (res && PQresultStatus(res) == wanted)
        return 0;
    const char *primary = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
    fprintf(stderr, "%s: could not %s: %s%s", program, what,
            primary ? primary : PQerrorMessage(conn), primary ? "\n" : "");
    PQclear(res);
    return -1;
}

//  Runs sql, which returns no rows. Returns 0 or -1.
static inline int fq_bench_exec(const char *program, PGconn *conn, const char *sql,
                                const char *what)
{
    PGresult *res = PQexec(conn, sql);
    if (fq_bench_check(program, conn, res, PGRES_COMMAND_OK, what))
        return -1;
    PQclear(res);
    return 0;
}

//  Runs a query of one row, with one parameter or none (param NULL), and
//  writes its first column to out (empty when NULL). Returns 0 or -1.
static inline int fq_bench_value(const char *program, PGconn *conn, const char *sql,
                                 const char *param, char *out, size_t size, const char *what)
{
    const char *params[] = {param};
    PGresult *res = PQexecParams(conn, sql, param ? 1 : 0, NULL, params, NULL, NULL, 0);
    if (fq_bench_check(program, conn, res, PGRES_TUPLES_OK, what))
        return -1;
    int rc = PQntuples(res) == 1 ? 0 : -1;
    if (rc == 0)
        snprintf(out, size, "%s", PQgetvalue(res, 0, 0));
    else
        fprintf(stderr, "%s: could not %s: %d rows\n", program, what, PQntuples(res));
    PQclear(res);
    return rc;
}

//  Prints the server's version and the settings that decide the figures
//  (pg_virtualenv's clusters run with fsync=off).
static inline int fq_bench_print_settings(const char *program, PGconn *conn)
{
    static const char *const names[] = {
        "fsync",        "synchronous_commit", "shared_buffers", "wal_level", "full_page_writes",
        "max_wal_size", "checkpoint_timeout", "wal_compression"};
    char version[128], value[64];
    if (fq_bench_value(program, conn, "SELECT current_setting('server_version')", NULL, version,
                       sizeof version, "read the server version"))
        return -1;
    printf("server:     PostgreSQL %s\n", version);
    printf("settings:  ");
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (fq_bench_value(program, conn, "SELECT current_setting($1)", names[i], value,
                           sizeof value, "read a setting"))
            return -1;
        printf(" %s=%s", names[i], value);
    }
    printf("\n");
    return 0;
}

//  Creates the raw floor's table raw: the columns, defaults, identity and
//  indexes of like (LIKE ... INCLUDING ALL), and its storage parameters,
//  which LIKE does not copy (fillfactor above all: it decides whether an
//  update finds room for HOT on its page). Both names are the program's
//  own constants, never user input. options gets like's parameters ("" if
//  none). Returns 0 or -1.
static inline int fq_bench_raw_create(const char *program, PGconn *conn, const char *raw,
                                      const char *like, char *options, size_t options_size)
{
    char sql[512], what[128];
    snprintf(sql, sizeof sql, "CREATE TABLE %s (LIKE %s INCLUDING ALL)", raw, like);
    snprintf(what, sizeof what, "create %s", raw);
    if (fq_bench_exec(program, conn, sql, what) ||
        fq_bench_value(program, conn,
                       "SELECT coalesce(array_to_string(reloptions, ', '), '') FROM pg_class"
                       " WHERE oid = $1::regclass",
                       like, options, options_size, "read the storage parameters"))
        return -1;
    if (options[0]) {
        //  Catalog text, not user input: the parameters like has
        snprintf(sql, sizeof sql, "ALTER TABLE %s SET (%s)", raw, options);
        if (fq_bench_exec(program, conn, sql, "copy the storage parameters"))
            return -1;
    }
    return 0;
}

//  COPY data goes to libpq in pieces of about this size, as in the store.
#define FQ_BENCH_COPY_PIECE_BYTES (256 * 1024)

//  Writes row number row of a COPY, text format, to text. Returns 0 or -1.
typedef int(fq_bench_row_fn)(fq_bench_text_t *text, uint64_t row, void *arg);

//  Runs copy_sql (a COPY ... FROM STDIN into table) with rows first ..
//  first + count - 1, written by row, in one transaction; text is scratch.
static inline int fq_bench_copy_rows(const char *program, PGconn *conn, const char *copy_sql,
                                     const char *table, fq_bench_text_t *text, uint64_t first,
                                     uint64_t count, fq_bench_row_fn *row, void *arg)
{
    char what[128];
    snprintf(what, sizeof what, "start COPY into %s", table);
    PGresult *res = PQexec(conn, copy_sql);
    if (fq_bench_check(program, conn, res, PGRES_COPY_IN, what))
        return -1;
    PQclear(res);
    text->size = 0;
    int rc = 0;
    for (uint64_t i = first; i < first + count && rc == 0; i++) {
        rc = row(text, i, arg);
        if (rc == 0 && text->size >= FQ_BENCH_COPY_PIECE_BYTES) {
            rc = PQputCopyData(conn, text->data, (int)text->size) == 1 ? 0 : -1;
            text->size = 0;
        }
    }
    if (rc == 0 && text->size)
        rc = PQputCopyData(conn, text->data, (int)text->size) == 1 ? 0 : -1;
    //  End the COPY either way, so the connection is usable again
    char failed[128];
    snprintf(failed, sizeof failed, "%s: COPY failed", program);
    if (PQputCopyEnd(conn, rc ? failed : NULL) != 1)
        rc = -1;
    res = PQgetResult(conn);
    snprintf(what, sizeof what, "COPY into %s", table);
    if (fq_bench_check(program, conn, res, PGRES_COMMAND_OK, what) == 0)
        PQclear(res);
    else
        rc = -1;
    while ((res = PQgetResult(conn)))
        PQclear(res);
    return rc;
}

//  Runs update_sql, whose $1 is a bigint[], with ids[0 .. count - 1] as one
//  array literal; one statement is one transaction. *updated gets the
//  rows it changed; text is scratch. Returns 0 or -1.
static inline int fq_bench_update_ids(const char *program, PGconn *conn, const char *update_sql,
                                      const char *table, fq_bench_text_t *text, const int64_t *ids,
                                      uint64_t count, uint64_t *updated)
{
    text->size = 0;
    int rc = fq_bench_text_printf(text, "{");
    for (uint64_t i = 0; i < count && rc == 0; i++)
        rc = fq_bench_text_printf(text, i ? ",%lld" : "%lld", (long long)ids[i]);
    rc = rc ? rc : fq_bench_text_printf(text, "}");
    if (rc) {
        fprintf(stderr, "%s: out of memory\n", program);
        return -1;
    }
    char what[128];
    snprintf(what, sizeof what, "update %s", table);
    const char *params[] = {text->data};
    PGresult *res = PQexecParams(conn, update_sql, 1, NULL, params, NULL, NULL, 0);
    if (fq_bench_check(program, conn, res, PGRES_COMMAND_OK, what))
        return -1;
    *updated = strtoull(PQcmdTuples(res), NULL, 10);
    PQclear(res);
    return 0;
}

#endif //  LIBPQ_FE_H

#endif
