/*  csv_test.c — the CSV of recipients that `fairq submit --csv` reads, as
    a stream.

    RFC 4180 and the three allowances fq_cli_csv.h promises (any line end,
    empty lines skipped, a byte order mark ignored); every malformed file
    refused with the line of its mistake, never guessed at; the recipients
    built from the header's names, the address from the "to" column, else
    "email", as JSON that jansson reads back; and the stream itself: the
    text cut into pieces at every byte boundary (inside a quote, between
    CR and LF, inside a UTF-8 sequence) reads exactly as the whole, and a
    record longer than FQ_CLI_CSV_RECORD_MAX is refused at its line
    instead of growing without bound.

    Every text below is read whole, then cut at each of its bytes, then
    one byte at a time, and must give the same records or the same error.
*/
#include "fq_cli_csv.h"
#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

//  Rows of the large file: enough that the buffers grow many times, and
//  that the text spans many pieces
#define S_MANY_ROWS 20000

//  Texts up to this size are also read cut at each of their bytes
#define S_SPLIT_ALL_MAX 4096

//  Pieces the large texts are read in besides whole: a byte, an odd size
#define S_ODD_PIECE 7

// --------------------------------------------------------------------------
//  Helpers

//  A text handed to the reader in pieces: first up to split bytes (0: no
//  split), then at most piece bytes a time (0: as much as asked).
typedef struct {
    const char *data;
    size_t size;
    size_t pos;
    size_t split;
    size_t piece;
    int fail_at; //  Fail with EIO once pos reaches this (-1: never)
} s_source_t;

static ssize_t s_read(void *arg, char *buffer, size_t size)
{
    s_source_t *self = arg;
    if (self->fail_at >= 0 && self->pos >= (size_t)self->fail_at) {
        errno = EIO;
        return -1;
    }
    size_t n = self->size - self->pos;
    if (self->split && self->pos < self->split)
        n = self->split - self->pos;
    else if (self->piece && n > self->piece)
        n = self->piece;
    if (n > size)
        n = size;
    memcpy(buffer, self->data + self->pos, n);
    self->pos += n;
    return (ssize_t)n;
}

//  What a text read to its end gave: the header and every record, or the
//  error.
typedef struct {
    bool ok;
    fq_cli_csv_error_t error;
    size_t columns;
    char **header;
    size_t rows;
    char **cells; //  rows * columns
    size_t *lines;
    size_t header_line;
} s_table_t;

static void s_table_free(s_table_t *table)
{
    for (size_t c = 0; table->header && c < table->columns; c++)
        free(table->header[c]);
    for (size_t i = 0; table->cells && i < table->rows * table->columns; i++)
        free(table->cells[i]);
    free(table->header);
    free(table->cells);
    free(table->lines);
    memset(table, 0, sizeof *table);
}

//  Reads text cut as split and piece say into table.
static void s_read_table(const char *text, size_t size, size_t split, size_t piece,
                         s_table_t *table)
{
    memset(table, 0, sizeof *table);
    s_source_t source = {text, size, 0, split, piece, -1};
    fq_cli_csv_t *csv = fq_cli_csv_new(s_read, &source);
    assert_non_null(csv);
    if (fq_cli_csv_read_header(csv, &table->error) != 0) {
        fq_cli_csv_destroy(&csv);
        return;
    }
    table->columns = fq_cli_csv_columns(csv);
    table->header_line = fq_cli_csv_header_line(csv);
    table->header = calloc(table->columns, sizeof *table->header);
    for (size_t c = 0; c < table->columns; c++)
        table->header[c] = strdup(fq_cli_csv_header(csv, c));
    assert_null(fq_cli_csv_header(csv, table->columns));
    int rc;
    size_t capacity = 0;
    while ((rc = fq_cli_csv_next(csv, &table->error)) == 1) {
        if (table->rows++ == capacity) {
            capacity = capacity ? capacity * 2 : S_ODD_PIECE;
            table->cells = realloc(table->cells, capacity * table->columns * sizeof(char *));
            table->lines = realloc(table->lines, capacity * sizeof(size_t));
            assert_true(table->cells && table->lines);
        }
        for (size_t c = 0; c < table->columns; c++)
            table->cells[(table->rows - 1) * table->columns + c] = strdup(fq_cli_csv_field(csv, c));
        assert_null(fq_cli_csv_field(csv, table->columns));
        table->lines[table->rows - 1] = fq_cli_csv_line(csv);
    }
    table->ok = rc == 0;
    fq_cli_csv_destroy(&csv);
    assert_null(csv);
    fq_cli_csv_destroy(&csv); //  Safe twice
}

//  Fails unless two readings of one text gave the same.
static void s_same_table(const s_table_t *a, const s_table_t *b, size_t split, size_t piece)
{
    if (a->ok != b->ok || a->columns != b->columns || a->rows != b->rows ||
        a->header_line != b->header_line)
        fail_msg("split %zu, piece %zu: another outcome (%d, %zu rows; whole: %d, %zu rows: %s)",
                 split, piece, b->ok, b->rows, a->ok, a->rows, a->error.message);
    if (!a->ok && (a->error.line != b->error.line || strcmp(a->error.message, b->error.message)))
        fail_msg("split %zu, piece %zu: error at line %zu \"%s\", whole: line %zu \"%s\"", split,
                 piece, b->error.line, b->error.message, a->error.line, a->error.message);
    for (size_t c = 0; c < a->columns; c++)
        assert_string_equal(a->header[c], b->header[c]);
    for (size_t r = 0; r < a->rows; r++) {
        assert_int_equal(a->lines[r], b->lines[r]);
        for (size_t c = 0; c < a->columns; c++)
            assert_string_equal(a->cells[r * a->columns + c], b->cells[r * b->columns + c]);
    }
}

//  Reads text whole, then cut at every byte (when short) and a byte at a
//  time, which must all agree. Returns the whole reading.
static void s_read_all_ways(const char *text, size_t size, s_table_t *table)
{
    s_read_table(text, size, 0, 0, table);
    s_table_t other;
    for (size_t split = 1; size <= S_SPLIT_ALL_MAX && split < size; split++) {
        s_read_table(text, size, split, 0, &other);
        s_same_table(table, &other, split, 0);
        s_table_free(&other);
    }
    size_t pieces[] = {1, S_ODD_PIECE};
    for (size_t i = 0; i < sizeof pieces / sizeof pieces[0]; i++) {
        s_read_table(text, size, 0, pieces[i], &other);
        s_same_table(table, &other, 0, pieces[i]);
        s_table_free(&other);
    }
}

//  Reads text (a C string, or size bytes of it), which must succeed.
static void s_parse_n(const char *text, size_t size, s_table_t *table)
{
    s_read_all_ways(text, size, table);
    if (!table->ok)
        fail_msg("refused at line %zu: %s", table->error.line, table->error.message);
}

static void s_parse(const char *text, s_table_t *table)
{
    s_parse_n(text, strlen(text), table);
}

static const char *s_header(const s_table_t *table, size_t column)
{
    return column < table->columns ? table->header[column] : NULL;
}

static const char *s_cell(const s_table_t *table, size_t row, size_t column)
{
    return row < table->rows && column < table->columns
               ? table->cells[row * table->columns + column]
               : NULL;
}

//  Reads text, which must fail at line with a message holding words.
static void s_refuse_n(const char *text, size_t size, size_t line, const char *words)
{
    s_table_t table;
    s_read_all_ways(text, size, &table);
    if (table.ok)
        fail_msg("read what should be refused: %s", text);
    assert_int_equal(table.error.line, line);
    if (!strstr(table.error.message, words))
        fail_msg("message \"%s\" does not say \"%s\"", table.error.message, words);
    s_table_free(&table);
}

static void s_refuse(const char *text, size_t line, const char *words)
{
    s_refuse_n(text, strlen(text), line, words);
}

//  The recipients' JSON text of text, read from the source cut as split
//  and piece say and drained out bytes at a time; NULL with error when
//  refused. Caller frees.
static char *s_recipients_text(const char *text, size_t size, size_t split, size_t piece,
                               size_t out, size_t *count, fq_cli_csv_error_t *error)
{
    s_source_t source = {text, size, 0, split, piece, -1};
    fq_cli_csv_t *csv = fq_cli_csv_new(s_read, &source);
    assert_non_null(csv);
    size_t capacity = FQ_CLI_CSV_PIECE, len = 0;
    char *json = malloc(capacity);
    ssize_t got;
    do {
        if (len + out + 1 > capacity) {
            while (len + out + 1 > capacity)
                capacity *= 2;
            json = realloc(json, capacity);
        }
        assert_non_null(json);
        got = fq_cli_csv_recipients_read(csv, json + len, out, error);
        len += got > 0 ? (size_t)got : 0;
    } while (got > 0);
    json[len] = 0;
    *count = fq_cli_csv_recipients_count(csv);
    fq_cli_csv_destroy(&csv);
    if (got < 0) {
        free(json);
        return NULL;
    }
    return json;
}

//  The recipients of text, parsed back with jansson; NULL with error when
//  refused. Read whole and drained in one go, then drained a byte at a
//  time and from a text cut at every byte: the same JSON each time.
static json_t *s_recipients_n(const char *text, size_t size, fq_cli_csv_error_t *error)
{
    size_t count, other_count;
    char *whole = s_recipients_text(text, size, 0, 0, FQ_CLI_CSV_PIECE, &count, error);
    fq_cli_csv_error_t other_error;
    for (size_t split = 0; split < size && size <= S_SPLIT_ALL_MAX; split++) {
        char *other = s_recipients_text(text, size, split, 1, split % S_ODD_PIECE + 1, &other_count,
                                        &other_error);
        if (!whole != !other || (whole && strcmp(whole, other) != 0))
            fail_msg("split %zu: %s, whole: %s", split, other ? other : other_error.message,
                     whole ? whole : error->message);
        if (!whole) {
            assert_int_equal(other_error.line, error->line);
            assert_string_equal(other_error.message, error->message);
        }
        free(other);
    }
    if (!whole)
        return NULL;
    json_error_t json_error;
    json_t *recipients = json_loads(whole, 0, &json_error);
    if (!recipients)
        fail_msg("not JSON (%s): %s", json_error.text, whole);
    assert_true(json_is_array(recipients));
    assert_int_equal(json_array_size(recipients), count);
    free(whole);
    return recipients;
}

static json_t *s_recipients(const char *text, fq_cli_csv_error_t *error)
{
    return s_recipients_n(text, strlen(text), error);
}

// --------------------------------------------------------------------------
//  Well-formed files

static void test_header_names_the_fields(void **state)
{
    (void)state;
    s_table_t csv;
    s_parse("to,name,n\nann@example.org,Ann,1\nbob@example.org,Bob,2\n", &csv);
    assert_int_equal(csv.columns, 3);
    assert_string_equal(s_header(&csv, 0), "to");
    assert_string_equal(s_header(&csv, 2), "n");
    assert_null(s_header(&csv, 3));
    assert_int_equal(csv.header_line, 1);
    assert_int_equal(csv.rows, 2);
    assert_string_equal(s_cell(&csv, 0, 1), "Ann");
    assert_string_equal(s_cell(&csv, 1, 0), "bob@example.org");
    assert_null(s_cell(&csv, 2, 0));
    assert_int_equal(csv.lines[0], 2);
    assert_int_equal(csv.lines[1], 3);
    s_table_free(&csv);
}

static void test_crlf_and_no_final_line_end(void **state)
{
    (void)state;
    s_table_t csv;
    s_parse("to,name\r\nann@example.org,Ann\r\nbob@example.org,Bob", &csv);
    assert_int_equal(csv.rows, 2);
    assert_string_equal(s_cell(&csv, 0, 1), "Ann");
    assert_string_equal(s_cell(&csv, 1, 1), "Bob");
    s_table_free(&csv);
    //  A lone CR ends a record too
    s_parse("to,name\rann@example.org,Ann\r", &csv);
    assert_int_equal(csv.rows, 1);
    assert_string_equal(s_cell(&csv, 0, 1), "Ann");
    assert_int_equal(csv.lines[0], 2);
    s_table_free(&csv);
    //  CR CR LF: a lone CR, then a CRLF (an empty line between)
    s_parse("to,name\r\r\nann@example.org,Ann\n", &csv);
    assert_int_equal(csv.rows, 1);
    assert_int_equal(csv.lines[0], 3);
    s_table_free(&csv);
}

static void test_quoted_fields(void **state)
{
    (void)state;
    s_table_t csv;
    s_parse("to,name,note\r\n"
            "\"ann@example.org\",\"Smith, Ann\",\"said \"\"hi\"\"\"\r\n"
            "bob@example.org,\"two\r\nlines\",\"\"\r\n"
            "carl@example.org,Carl,\"a\nb\nc\"\n"
            "dora@example.org,Dora,last\n",
            &csv);
    assert_int_equal(csv.rows, 4);
    assert_string_equal(s_cell(&csv, 0, 0), "ann@example.org");
    assert_string_equal(s_cell(&csv, 0, 1), "Smith, Ann");
    assert_string_equal(s_cell(&csv, 0, 2), "said \"hi\"");
    //  Line breaks inside quotes are kept as written
    assert_string_equal(s_cell(&csv, 1, 1), "two\r\nlines");
    assert_string_equal(s_cell(&csv, 1, 2), "");
    assert_string_equal(s_cell(&csv, 2, 2), "a\nb\nc");
    //  Lines are physical: the quoted line breaks count
    assert_int_equal(csv.lines[0], 2);
    assert_int_equal(csv.lines[1], 3);
    assert_int_equal(csv.lines[2], 5);
    assert_int_equal(csv.lines[3], 8);
    s_table_free(&csv);
}

static void test_empty_fields(void **state)
{
    (void)state;
    s_table_t csv;
    s_parse("to,a,b\nann@example.org,,\nbob@example.org,\"\",x\n", &csv);
    assert_string_equal(s_cell(&csv, 0, 1), "");
    assert_string_equal(s_cell(&csv, 0, 2), "");
    assert_string_equal(s_cell(&csv, 1, 1), "");
    assert_string_equal(s_cell(&csv, 1, 2), "x");
    s_table_free(&csv);
}

static void test_empty_lines_and_bom_skipped(void **state)
{
    (void)state;
    s_table_t csv;
    s_parse("\xEF\xBB\xBF\n\nto,name\n\nann@example.org,Ann\r\n\r\n\nbob@example.org,Bob\n\n",
            &csv);
    assert_string_equal(s_header(&csv, 0), "to"); //  Not "\xEF\xBB\xBFto"
    assert_int_equal(csv.rows, 2);
    assert_int_equal(csv.lines[0], 5);
    assert_int_equal(csv.lines[1], 8);
    s_table_free(&csv);
    //  A quoted first field after the mark
    s_parse("\xEF\xBB\xBF\"to\",name\nann@example.org,Ann\n", &csv);
    assert_string_equal(s_header(&csv, 0), "to");
    s_table_free(&csv);
    //  A mark anywhere else is text
    s_parse("to,\xEF\xBB\xBFname\nann@example.org,Ann\n", &csv);
    assert_string_equal(s_header(&csv, 1), "\xEF\xBB\xBFname");
    s_table_free(&csv);
}

static void test_nothing_is_trimmed(void **state)
{
    (void)state;
    s_table_t csv;
    s_parse("to, name\nann@example.org , Ann \n", &csv);
    assert_string_equal(s_header(&csv, 1), " name");
    assert_string_equal(s_cell(&csv, 0, 0), "ann@example.org ");
    assert_string_equal(s_cell(&csv, 0, 1), " Ann ");
    s_table_free(&csv);
}

static void test_utf8_kept(void **state)
{
    (void)state;
    s_table_t csv;
    s_parse("to,name\nzoe@example.org,Zo\xC3\xAB \xE2\x82\xAC \xF0\x9F\x93\xA7\n", &csv);
    assert_string_equal(s_cell(&csv, 0, 1), "Zo\xC3\xAB \xE2\x82\xAC \xF0\x9F\x93\xA7");
    s_table_free(&csv);
}

static void test_header_only(void **state)
{
    (void)state;
    s_table_t csv;
    s_parse("to,name\n", &csv);
    assert_int_equal(csv.rows, 0);
    s_table_free(&csv);
    fq_cli_csv_error_t error = {0};
    assert_null(s_recipients("to,name\n", &error));
    assert_int_equal(error.line, 1);
    assert_non_null(strstr(error.message, "no recipients"));
}

//  The large text: a header and S_MANY_ROWS records, CRLF, quotes. Caller
//  frees; *len its size.
static char *s_many_rows(size_t *len)
{
    size_t size = S_MANY_ROWS * 64 + 64;
    char *text = malloc(size);
    assert_non_null(text);
    *len = (size_t)snprintf(text, size, "email,n,\"quoted, name\"\n");
    for (int i = 0; i < S_MANY_ROWS; i++)
        *len += (size_t)snprintf(text + *len, size - *len,
                                 "u%d@example.org,%d,\"U \"\"%d\"\"\"\r\n", i, i, i);
    return text;
}

static void test_many_rows(void **state)
{
    (void)state;
    size_t len;
    char *text = s_many_rows(&len);
    assert_true(len > 8 * FQ_CLI_CSV_PIECE); //  Many pieces
    s_table_t csv;
    s_parse_n(text, len, &csv);
    assert_int_equal(csv.rows, S_MANY_ROWS);
    assert_string_equal(s_cell(&csv, S_MANY_ROWS - 1, 2), "U \"19999\"");
    assert_int_equal(csv.lines[S_MANY_ROWS - 1], S_MANY_ROWS + 1);
    s_table_free(&csv);
    fq_cli_csv_error_t error;
    json_t *recipients = s_recipients_n(text, len, &error);
    assert_non_null(recipients);
    assert_int_equal(json_array_size(recipients), S_MANY_ROWS);
    json_t *last = json_array_get(recipients, S_MANY_ROWS - 1);
    assert_string_equal(json_string_value(json_object_get(last, "to")), "u19999@example.org");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(last, "fields"), "quoted, name")),
        "U \"19999\"");
    json_decref(recipients);
    free(text);
}

//  The JSON of a large file, read a byte at a time from a source that
//  gives odd pieces, is the JSON of the whole.
static void test_recipients_streamed_in_small_pieces(void **state)
{
    (void)state;
    size_t len, count, other_count;
    char *text = s_many_rows(&len);
    fq_cli_csv_error_t error;
    char *whole = s_recipients_text(text, len, 0, 0, FQ_CLI_CSV_PIECE, &count, &error);
    assert_non_null(whole);
    char *small = s_recipients_text(text, len, 0, S_ODD_PIECE, 1, &other_count, &error);
    assert_non_null(small);
    assert_string_equal(whole, small);
    assert_int_equal(count, S_MANY_ROWS);
    assert_int_equal(other_count, S_MANY_ROWS);
    free(whole);
    free(small);
    free(text);
}

// --------------------------------------------------------------------------
//  Pieces

//  A text with everything a cut could fall into: a byte order mark,
//  quoted fields that span pieces and lines, doubled quotes, CRLF, lone
//  CR, empty lines, multi-byte UTF-8. Cut at each of its bytes, and read
//  in pieces of every size up to its own: the same records every time.
static void test_pieces_split_at_every_byte(void **state)
{
    (void)state;
    static const char text[] = "\xEF\xBB\xBF"
                               "to,name,note\r\n"
                               "\r\n"
                               "\"ann@example.org\",\"Smith, \"\"Ann\"\"\",\"a\r\nb\"\r\n"
                               "bob@example.org,Zo\xC3\xAB \xE2\x82\xAC,\"\xF0\x9F\x93\xA7\"\r"
                               "carl@example.org,\"\",\"\"\"\"\n";
    size_t size = sizeof text - 1;
    s_table_t whole, other;
    s_parse_n(text, size, &whole); //  Every split, pieces of 1 and 7
    for (size_t piece = 1; piece <= size; piece++)
        for (size_t split = 0; split < piece; split++) {
            s_read_table(text, size, split, piece, &other);
            s_same_table(&whole, &other, split, piece);
            s_table_free(&other);
        }
    assert_int_equal(whole.rows, 3);
    assert_string_equal(s_cell(&whole, 0, 1), "Smith, \"Ann\"");
    assert_string_equal(s_cell(&whole, 0, 2), "a\r\nb");
    assert_string_equal(s_cell(&whole, 1, 1), "Zo\xC3\xAB \xE2\x82\xAC");
    assert_string_equal(s_cell(&whole, 1, 2), "\xF0\x9F\x93\xA7");
    assert_string_equal(s_cell(&whole, 2, 2), "\"");
    assert_int_equal(whole.lines[0], 3);
    assert_int_equal(whole.lines[1], 5);
    assert_int_equal(whole.lines[2], 6);
    s_table_free(&whole);
}

//  A read error is told with its errno, not as a CSV mistake.
static void test_read_error(void **state)
{
    (void)state;
    static const char text[] = "to,name\nann@example.org,Ann\n";
    s_source_t source = {text, sizeof text - 1, 0, 0, 4, 10};
    fq_cli_csv_t *csv = fq_cli_csv_new(s_read, &source);
    fq_cli_csv_error_t error;
    assert_int_equal(fq_cli_csv_read_header(csv, &error), 0);
    assert_int_equal(fq_cli_csv_next(csv, &error), -1);
    assert_int_equal(error.errnum, EIO);
    assert_non_null(strstr(error.message, "could not read"));
    fq_cli_csv_destroy(&csv);
}

// --------------------------------------------------------------------------
//  The limit of one record

//  A record of size bytes (from its first byte to its line end): an
//  address, a comma, then fill.
static void s_put_record(char *text, size_t *len, size_t size, char fill)
{
    static const char address[] = "ann@example.org,";
    memcpy(text + *len, address, sizeof address - 1);
    memset(text + *len + sizeof address - 1, fill, size - (sizeof address - 1));
    *len += size;
    text[(*len)++] = '\n';
}

static void test_record_limit(void **state)
{
    (void)state;
    char *text = malloc(4 * (size_t)FQ_CLI_CSV_RECORD_MAX);
    assert_non_null(text);
    static const char header[] = "to,note\n";
    size_t len = sizeof header - 1;
    memcpy(text, header, len);

    //  Exactly the limit: taken, as is its line end after it
    s_put_record(text, &len, FQ_CLI_CSV_RECORD_MAX, 'x');
    s_table_t csv;
    s_parse_n(text, len, &csv);
    assert_int_equal(csv.rows, 1);
    assert_int_equal(strlen(s_cell(&csv, 0, 1)),
                     FQ_CLI_CSV_RECORD_MAX - strlen("ann@example.org,"));
    s_table_free(&csv);

    //  One byte more, on line 3: refused there, however the text is cut
    s_put_record(text, &len, FQ_CLI_CSV_RECORD_MAX + 1, 'y');
    s_refuse_n(text, len, 3, "record longer than 1048576 bytes, the most one record may hold");

    //  A quote left open on line 2 runs on past the limit: line 2
    len = sizeof header - 1;
    memcpy(text + len, "ann@example.org,\"open\n", strlen("ann@example.org,\"open\n"));
    len += strlen("ann@example.org,\"open\n");
    for (int i = 0; i < 3; i++)
        s_put_record(text, &len, FQ_CLI_CSV_RECORD_MAX / 2, 'z');
    s_refuse_n(text, len, 2, "quoted field runs past 1048576 bytes");

    //  A header beyond the limit: line 1
    memset(text, 'h', FQ_CLI_CSV_RECORD_MAX + 1);
    s_refuse_n(text, FQ_CLI_CSV_RECORD_MAX + 1, 1, "record longer than");
    free(text);
}

// --------------------------------------------------------------------------
//  Malformed files: refused with the line of the mistake

static void test_unterminated_quote(void **state)
{
    (void)state;
    //  The line where the quoted field starts, though the file runs on
    s_refuse("to,name\nann@example.org,Ann\nbob@example.org,\"Bob\nno end\n", 3, "not closed");
    s_refuse("\"to", 1, "not closed");
}

static void test_quote_misplaced(void **state)
{
    (void)state;
    s_refuse("to,name\nann@example.org,Ann \"the\" Smith\n", 2, "quote inside unquoted field 2");
    s_refuse("to,name\nann@example.org,\"Ann\" Smith\n", 2, "after the closing quote");
    s_refuse("to,name\n\"ann@example.org\"x,Ann\n", 2, "field 1");
}

static void test_ragged_rows(void **state)
{
    (void)state;
    s_refuse("to,name\nann@example.org,Ann\nbob@example.org\n", 3, "1 field, the header has 2");
    s_refuse("to,name\nann@example.org,Ann,extra\n", 2, "3 fields, the header has 2");
    //  A trailing comma is one more (empty) field
    s_refuse("to,name\nann@example.org,Ann,\n", 2, "3 fields");
}

static void test_empty_header(void **state)
{
    (void)state;
    s_refuse("", 1, "no header row");
    s_refuse("\n\r\n\n", 3, "no header row");
    s_refuse("\xEF\xBB\xBF", 1, "no header row");
    s_refuse("to,,name\nann@example.org,x,Ann\n", 1, "column 2 of the header has no name");
    s_refuse("\nto,name,\n", 2, "column 3 of the header has no name");
}

static void test_duplicate_header(void **state)
{
    (void)state;
    s_refuse("to,name,n,name\n", 1, "column 4 of the header repeats the name \"name\" of column 2");
    //  The first column at fault is told: a repeat before an empty name...
    s_refuse("to,a,b,a,,b\n", 1, "column 4 of the header repeats the name \"a\" of column 2");
    //  ...and an empty name before a repeat
    s_refuse("to,,a,a\n", 1, "column 2 of the header has no name");
    //  Names are compared exactly: these are two fields
    s_table_t csv;
    s_parse("to,Name,name\nann@example.org,A,a\n", &csv);
    assert_int_equal(csv.columns, 3);
    s_table_free(&csv);
}

static void test_invalid_utf8(void **state)
{
    (void)state;
    //  Latin-1, as a spreadsheet might save it
    s_refuse("to,name\nann@example.org,Zo\xEB\n", 2, "invalid UTF-8 (byte 0xEB");
    //  Overlong "/", a lone continuation, a surrogate, beyond U+10FFFF, cut short
    s_refuse("to,name\n\nx@example.org,\xC0\xAF\n", 3, "invalid UTF-8");
    s_refuse("to,\x80name\n", 1, "invalid UTF-8");
    s_refuse("to,name\nx@example.org,\xED\xA0\x80\n", 2, "invalid UTF-8");
    s_refuse("to,name\nx@example.org,\xF4\x90\x80\x80\n", 2, "invalid UTF-8");
    s_refuse("to,name\nx@example.org,\xE2\x82", 2, "invalid UTF-8 (byte 0xE2");
    //  Inside a quoted field that spans lines: the line of the byte
    s_refuse("to,name\nx@example.org,\"a\nb\xFF\"\n", 3, "invalid UTF-8");
    //  A sequence cut short by a quote, a comma or a line end
    s_refuse("to,name\nx@example.org,\xC3\"\n", 2, "invalid UTF-8 (byte 0xC3");
    s_refuse("to,name\nx@example.org,\"a\xE2\x82\"\n", 2, "invalid UTF-8 (byte 0xE2");
    s_refuse("to,name\xC3\nx@example.org,a\n", 1, "invalid UTF-8");
}

static void test_nul_byte(void **state)
{
    (void)state;
    static const char text[] = "to,name\nann@example.org,A\0nn\n";
    s_refuse_n(text, sizeof text - 1, 2, "NUL byte");
    static const char quoted[] = "to,name\r\nann@example.org,\"A\r\n\0\"\r\n";
    s_refuse_n(quoted, sizeof quoted - 1, 3, "NUL byte");
}

// --------------------------------------------------------------------------
//  Recipients

static void test_recipients_from_to_column(void **state)
{
    (void)state;
    fq_cli_csv_error_t error;
    json_t *recipients =
        s_recipients("name,to,n\nAnn,ann@example.org,1\nBob,bob@example.org,2\n", &error);
    assert_non_null(recipients);
    json_t *expected = json_loads("[{\"to\": \"ann@example.org\", \"fields\": {\"name\": \"Ann\","
                                  " \"to\": \"ann@example.org\", \"n\": \"1\"}},"
                                  " {\"to\": \"bob@example.org\", \"fields\": {\"name\": \"Bob\","
                                  " \"to\": \"bob@example.org\", \"n\": \"2\"}}]",
                                  0, NULL);
    assert_true(json_equal(recipients, expected));
    json_decref(expected);
    json_decref(recipients);
}

static void test_recipients_from_email_column(void **state)
{
    (void)state;
    fq_cli_csv_error_t error;
    json_t *recipients = s_recipients("Name,EMail\nAnn,ann@example.org\n", &error);
    assert_non_null(recipients);
    json_t *first = json_array_get(recipients, 0);
    assert_string_equal(json_string_value(json_object_get(first, "to")), "ann@example.org");
    //  The field keeps the header's spelling
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(first, "fields"), "EMail")),
        "ann@example.org");
    json_decref(recipients);

    //  "to" wins over "email", which is then a field like any other
    recipients = s_recipients("email,To\nold@example.org,new@example.org\n", &error);
    assert_non_null(recipients);
    first = json_array_get(recipients, 0);
    assert_string_equal(json_string_value(json_object_get(first, "to")), "new@example.org");
    json_decref(recipients);
}

//  Whatever a field holds comes back from the JSON as it was: quotes,
//  backslashes, every control character, line breaks, UTF-8; in the
//  header's names too.
static void test_recipients_json_escapes(void **state)
{
    (void)state;
    char value[64];
    size_t len = 0;
    for (char c = 1; c < ' '; c++)
        if (c != '\r' && c != '\n')
            value[len++] = c;
    value[len] = 0;
    char text[512];
    snprintf(text, sizeof text,
             "to,\"we\"\"ird\\\\name\",ctl,mixed\n"
             "ann@example.org,\"a \"\"quote\"\" and a \\\\ back\\slash\",\"%s\",\"x\r\ny\n"
             "\xC3\xAB\x7F/\"\n",
             value);
    fq_cli_csv_error_t error;
    json_t *recipients = s_recipients(text, &error);
    assert_non_null(recipients);
    json_t *fields = json_object_get(json_array_get(recipients, 0), "fields");
    assert_int_equal(json_object_size(fields), 4);
    assert_string_equal(json_string_value(json_object_get(fields, "we\"ird\\\\name")),
                        "a \"quote\" and a \\\\ back\\slash");
    assert_string_equal(json_string_value(json_object_get(fields, "ctl")), value);
    assert_string_equal(json_string_value(json_object_get(fields, "mixed")),
                        "x\r\ny\n\xC3\xAB\x7F/");
    json_decref(recipients);
}

static void test_recipients_refused(void **state)
{
    (void)state;
    fq_cli_csv_error_t error;
    assert_null(s_recipients("name,address\nAnn,ann@example.org\n", &error));
    assert_int_equal(error.line, 1);
    assert_non_null(strstr(error.message, "no address column"));

    assert_null(s_recipients("to,TO\na@example.org,b@example.org\n", &error));
    assert_non_null(strstr(error.message, "columns 1 and 2"));

    assert_null(s_recipients("\nto,name\nann@example.org,Ann\n,Bob\n", &error));
    assert_int_equal(error.line, 4);
    assert_non_null(strstr(error.message, "empty address"));

    //  A mistake after many good records still refuses the whole
    assert_null(s_recipients("to,name\na@example.org,A\nb@example.org,B\nc@example.org\n", &error));
    assert_int_equal(error.line, 4);
    assert_non_null(strstr(error.message, "1 field, the header has 2"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_header_names_the_fields),
        cmocka_unit_test(test_crlf_and_no_final_line_end),
        cmocka_unit_test(test_quoted_fields),
        cmocka_unit_test(test_empty_fields),
        cmocka_unit_test(test_empty_lines_and_bom_skipped),
        cmocka_unit_test(test_nothing_is_trimmed),
        cmocka_unit_test(test_utf8_kept),
        cmocka_unit_test(test_header_only),
        cmocka_unit_test(test_many_rows),
        cmocka_unit_test(test_recipients_streamed_in_small_pieces),
        cmocka_unit_test(test_pieces_split_at_every_byte),
        cmocka_unit_test(test_read_error),
        cmocka_unit_test(test_record_limit),
        cmocka_unit_test(test_unterminated_quote),
        cmocka_unit_test(test_quote_misplaced),
        cmocka_unit_test(test_ragged_rows),
        cmocka_unit_test(test_empty_header),
        cmocka_unit_test(test_duplicate_header),
        cmocka_unit_test(test_invalid_utf8),
        cmocka_unit_test(test_nul_byte),
        cmocka_unit_test(test_recipients_from_to_column),
        cmocka_unit_test(test_recipients_from_email_column),
        cmocka_unit_test(test_recipients_json_escapes),
        cmocka_unit_test(test_recipients_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
