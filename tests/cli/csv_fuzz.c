/*  csv_fuzz.c — libFuzzer target: any bytes through the CSV reader of
    `fairq submit --csv` must come back as recipients or an error with a
    line, never a crash or a sanitizer report; the recipients are JSON that
    jansson reads, one element per record; and the text read a byte at a
    time gives exactly what it gives read whole. Build with -DFQ_FUZZ=ON
    and CC=clang; run build/fuzz/tests/cli/csv_fuzz -max_total_time=60. */
#include "fq_buf.h"
#include "fq_cli_csv.h"
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

//  The fuzzer's bytes, handed out piece bytes at a time (0: all at once).
typedef struct {
    const uint8_t *data;
    size_t size;
    size_t pos;
    size_t piece;
} s_source_t;

static ssize_t s_read(void *arg, char *buffer, size_t size)
{
    s_source_t *self = arg;
    size_t n = self->size - self->pos;
    if (self->piece && n > self->piece)
        n = self->piece;
    if (n > size)
        n = size;
    memcpy(buffer, self->data + self->pos, n);
    self->pos += n;
    return (ssize_t)n;
}

//  The recipients' JSON of the bytes read piece at a time, or NULL with
//  error. Caller frees.
static char *s_json(const uint8_t *data, size_t size, size_t piece, size_t *count,
                    fq_cli_csv_error_t *error)
{
    s_source_t source = {data, size, 0, piece};
    fq_cli_csv_t *csv = fq_cli_csv_new(s_read, &source);
    if (!csv)
        abort();
    fq_buf_t json = {0};
    ssize_t got;
    do {
        if (fq_buf_reserve(&json, FQ_CLI_CSV_PIECE) != 0)
            abort();
        got = fq_cli_csv_recipients_read(csv, json.data + json.size, FQ_CLI_CSV_PIECE, error);
        json.size += got > 0 ? (size_t)got : 0;
        json.data[json.size] = 0;
    } while (got > 0);
    *count = fq_cli_csv_recipients_count(csv);
    fq_cli_csv_destroy(&csv);
    if (got < 0) {
        fq_buf_free(&json);
        return NULL;
    }
    return fq_buf_take(&json);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fq_cli_csv_error_t error, bytewise_error;
    size_t count, bytewise_count;
    char *whole = s_json(data, size, 0, &count, &error);
    char *bytewise = s_json(data, size, 1, &bytewise_count, &bytewise_error);
    if (!whole != !bytewise || (whole && strcmp(whole, bytewise) != 0))
        abort();
    if (!whole) {
        //  Every refusal names a line within the text, the same either way
        if (error.line == 0 || error.line > size + 1 || !error.message[0] ||
            error.line != bytewise_error.line || strcmp(error.message, bytewise_error.message))
            abort();
        return 0;
    }
    json_t *recipients = json_loads(whole, 0, NULL);
    if (!recipients || json_array_size(recipients) != count || count == 0)
        abort();
    json_decref(recipients);
    free(whole);
    free(bytewise);
    return 0;
}
