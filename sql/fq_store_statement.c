/*  fq_store_statement.c — a statement built from fixed pieces of SQL, its
    values as parameters (see fq_store_internal.h). */
#include "fq_store_internal.h"
#include "fq_error.h"
#include <assert.h>
#include <stdio.h>
#include <string.h>

void fq_statement_sql(fq_statement_t *q, const char *text)
{
    q->mem |= fq_buf_add(&q->sql, text, strlen(text));
}

void fq_statement_sql_param(fq_statement_t *q, const char *before, int number, const char *after)
{
    char digits[FQ_STORE_INT_TEXT];
    snprintf(digits, sizeof digits, "$%d", number);
    fq_statement_sql(q, before);
    fq_statement_sql(q, digits);
    fq_statement_sql(q, after);
}

int fq_statement_text(fq_statement_t *q, const char *value)
{
    assert(q->count < FQ_STATEMENT_PARAMS_MAX);
    q->values[q->count] = value;
    return ++q->count;
}

int fq_statement_int(fq_statement_t *q, int64_t value)
{
    assert(q->count < FQ_STATEMENT_PARAMS_MAX);
    snprintf(q->text[q->count], FQ_STORE_INT_TEXT, "%lld", (long long)value);
    q->values[q->count] = q->text[q->count];
    return ++q->count;
}

int fq_statement_uint(fq_statement_t *q, uint64_t value)
{
    assert(q->count < FQ_STATEMENT_PARAMS_MAX);
    snprintf(q->text[q->count], FQ_STORE_INT_TEXT, "%llu", (unsigned long long)value);
    q->values[q->count] = q->text[q->count];
    return ++q->count;
}

PGresult *fq_statement_run(fq_store_t *self, fq_statement_t *q, ExecStatusType wanted,
                           const char *what, int *rc)
{
    PGresult *res = NULL;
    if (q->mem)
        *rc = fq_store_fail(self, FQ_ENOMEM, "out of memory");
    else
        res = fq_store_query(self, q->sql.data, q->count, q->values, wanted, what, rc);
    fq_buf_free(&q->sql);
    q->mem = 0;
    return res;
}
