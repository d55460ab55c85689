/*  csv_fuzz.c — libFuzzer target: any bytes through the CSV parser of
    `fairq submit --csv` must come back as a table or an error with a
    line, never a crash or a sanitizer report; a table's cells are all
    there, and its recipients are one per row or an error. Build with
    -DFQ_FUZZ=ON and CC=clang; run
    build/fuzz/tests/cli/csv_fuzz -max_total_time=60. */
#include "fq_cli_csv.h"
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fq_cli_csv_error_t error;
    fq_cli_csv_t *csv = fq_cli_csv_parse((const char *)data, size, &error);
    if (!csv) {
        //  Every refusal names a line within the text
        if (error.line == 0 || error.line > size + 1 || !error.message[0])
            abort();
        return 0;
    }
    size_t columns = fq_cli_csv_columns(csv), rows = fq_cli_csv_rows(csv);
    if (columns == 0)
        abort();
    for (size_t row = 0; row < rows; row++)
        for (size_t column = 0; column < columns; column++)
            if (!fq_cli_csv_cell(csv, row, column))
                abort();
    json_t *recipients = fq_cli_csv_recipients(csv, &error);
    if (recipients && json_array_size(recipients) != rows)
        abort();
    json_decref(recipients);
    fq_cli_csv_destroy(&csv);
    return 0;
}
