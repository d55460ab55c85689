/*  fq_cli_csv.h — a CSV file of recipients (RFC 4180), for
    `fairq submit --csv`.

    The format, strictly RFC 4180 with three allowances:

    * fields are separated by commas; a field may be quoted with '"', and
      then holds commas, line breaks and quotes written twice ("");
      a quote inside an unquoted field, or anything but a comma or a line
      end after a closing quote, is an error (nothing is guessed);
    * records end with CRLF, LF or a lone CR (allowance 1); the last one
      may lack its line end;
    * empty lines are skipped (allowance 2), and a UTF-8 byte order mark
      at the very start is ignored (allowance 3: spreadsheets write one);
    * the first record is the header: it names the fields, each name
      non-empty and different from the others; every other record has
      exactly as many fields as the header;
    * the text is UTF-8, without NUL bytes; nothing is trimmed.

    The recipients: the column named "to" is the address; when there is
    none, the column named "email" (either name in any case; two columns
    that both match "to", or, without one, both "email", are an error).
    Every column, the address's too, becomes a template field named as its
    header, its value a string, so a body may say {{name}} or {{email}}.
    An empty address is an error of its line.

    Errors carry the line (1-based, physical: a quoted field that spans
    lines counts them all) where the problem is, for "FILE:LINE: ...".
*/
#ifndef FQ_CLI_CSV_H
#define FQ_CLI_CSV_H

#include <jansson.h>
#include <stddef.h>

#define FQ_CLI_CSV_ERROR_SIZE 256

typedef struct {
    size_t line; //  Where the problem is, 1-based
    char message[FQ_CLI_CSV_ERROR_SIZE];
} fq_cli_csv_error_t;

typedef struct fq_cli_csv fq_cli_csv_t;

//  Parses size bytes of CSV text (need not end with NUL). Returns the
//  parsed table (caller destroys), or NULL with error filled.
fq_cli_csv_t *fq_cli_csv_parse(const char *data, size_t size, fq_cli_csv_error_t *error);
void fq_cli_csv_destroy(fq_cli_csv_t **self_p);

//  The header's names, and the records after it.
size_t fq_cli_csv_columns(const fq_cli_csv_t *self);
const char *fq_cli_csv_header(const fq_cli_csv_t *self, size_t column);
size_t fq_cli_csv_rows(const fq_cli_csv_t *self);

//  A field of a record (row counts from 0, after the header); the string
//  belongs to self.
const char *fq_cli_csv_cell(const fq_cli_csv_t *self, size_t row, size_t column);

//  The line where a record starts.
size_t fq_cli_csv_line(const fq_cli_csv_t *self, size_t row);

//  The recipients array of a submission, [{"to": ..., "fields": {...}}]
//  per record (new reference), or NULL with error filled: no address
//  column, an empty address, no records.
json_t *fq_cli_csv_recipients(const fq_cli_csv_t *self, fq_cli_csv_error_t *error);

#endif
