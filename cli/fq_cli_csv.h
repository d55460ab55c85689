/*  fq_cli_csv.h — a CSV file of recipients (RFC 4180), read as a stream,
    for `fairq submit --csv`.

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
    * the text is UTF-8, without NUL bytes; nothing is trimmed;
    * one record (a row, with every line of its quoted fields) holds at
      most FQ_CLI_CSV_RECORD_MAX bytes.

    The recipients: the column named "to" is the address; when there is
    none, the column named "email" (either name in any case; two columns
    that both match "to", or, without one, both "email", are an error).
    Every column, the address's too, becomes a template field named as its
    header, its value a string, so a body may say {{name}} or {{email}}.
    An empty address is an error of its line.

    Memory: the reader pulls the file through a buffer of
    FQ_CLI_CSV_PIECE bytes and holds the header and one record at a time,
    so what it takes is bounded by FQ_CLI_CSV_RECORD_MAX whatever the size
    of the file: a file of millions of recipients streams through it.

    Errors carry the line (1-based, physical: a quoted field that spans
    lines counts them all) where the problem is, for "FILE:LINE: ...".
*/
#ifndef FQ_CLI_CSV_H
#define FQ_CLI_CSV_H

#include <stddef.h>
#include <sys/types.h>

#define FQ_CLI_CSV_ERROR_SIZE 256

//  The most one record may hold, from its first byte to its line end.
//  The reader keeps one record in memory, so this is what bounds it: a
//  recipient's address and personal fields take a few hundred bytes, and
//  a file whose "record" runs past a megabyte has a quote left open, or
//  is not CSV at all.
#define FQ_CLI_CSV_RECORD_MAX (1024 * 1024)

//  How much of the file is read at once.
#define FQ_CLI_CSV_PIECE (64 * 1024)

typedef struct {
    size_t line; //  Where the problem is, 1-based
    int errnum;  //  A read error's errno (message: strerror), else 0
    char message[FQ_CLI_CSV_ERROR_SIZE];
} fq_cli_csv_error_t;

typedef struct fq_cli_csv fq_cli_csv_t;

//  Where a reader's bytes come from: at most size bytes into buffer.
//  Returns how many (0 only at the end), or -1 with errno set.
typedef ssize_t(fq_cli_csv_read_fn)(void *arg, char *buffer, size_t size);

//  A reader of the CSV text that read (with arg, borrowed) yields. NULL
//  when out of memory.
fq_cli_csv_t *fq_cli_csv_new(fq_cli_csv_read_fn *read, void *arg);
void fq_cli_csv_destroy(fq_cli_csv_t **self_p);

//  Reads the header, first of all. Returns 0, or -1 with error filled:
//  no header (the file is empty), a column without a name or named twice,
//  malformed CSV.
int fq_cli_csv_read_header(fq_cli_csv_t *self, fq_cli_csv_error_t *error);

//  The header's names (strings belong to self), and its line.
size_t fq_cli_csv_columns(const fq_cli_csv_t *self);
const char *fq_cli_csv_header(const fq_cli_csv_t *self, size_t column);
size_t fq_cli_csv_header_line(const fq_cli_csv_t *self);

//  Reads the next record after the header. Returns 1 with the record, 0
//  at the end of the file, or -1 with error filled.
int fq_cli_csv_next(fq_cli_csv_t *self, fq_cli_csv_error_t *error);

//  A field of the record fq_cli_csv_next read (NULL past the columns),
//  valid until the next call; and the line where the record starts.
const char *fq_cli_csv_field(const fq_cli_csv_t *self, size_t column);
size_t fq_cli_csv_line(const fq_cli_csv_t *self);

//  The recipients array of a submission as JSON text,
//  [{"to": ..., "fields": {...}}, ...], one element per record, produced
//  as the file is read: reads the header if that is not done yet, then
//  the records (do not mix with fq_cli_csv_next). Writes at most size
//  bytes into buffer. Returns how many, 0 once the whole array is out, or
//  -1 with error filled: malformed CSV, no address column, an empty
//  address, no records.
ssize_t fq_cli_csv_recipients_read(fq_cli_csv_t *self, char *buffer, size_t size,
                                   fq_cli_csv_error_t *error);

//  The recipients fq_cli_csv_recipients_read has produced so far.
size_t fq_cli_csv_recipients_count(const fq_cli_csv_t *self);

#endif
