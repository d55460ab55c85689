/*  fq_cli_csv.c — RFC 4180 CSV of recipients, read as a stream (the rules:
    fq_cli_csv.h).

    The text comes in pieces of FQ_CLI_CSV_PIECE bytes and goes through
    two small steps, byte by byte, so that where one piece ends never
    matters (a quote, a CRLF or a UTF-8 sequence may be split anywhere):

    * s_peek and s_take look at and consume the next byte, reading another
      piece when one is used up. Every byte is checked as it is taken
      (UTF-8 with fq_utf8.h's byte-at-a-time checks, no NUL) and counted
      into its line and its record's size.
    * s_read_record is the state machine of one record: it copies the
      fields into one buffer, NUL-terminated, and finds them by offset, so
      a record makes no allocation once the buffers have grown to fit.

    The recipients' JSON is written one record at a time into a buffer
    that the caller drains (fq_cli_csv_recipients_read), so a file of any
    size streams through memory bounded by FQ_CLI_CSV_RECORD_MAX.
*/
#include "fq_cli_csv.h"
#include "fq_buf.h"
#include "fq_utf8.h"
#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

//  What the array of a record's fields grows from
#define S_INITIAL_FIELDS 64

//  The UTF-8 byte order mark
#define S_BOM      "\xEF\xBB\xBF"
#define S_BOM_SIZE 3

//  What s_peek and s_take return instead of a byte
#define S_END  (-1) //  The text is over
#define S_FAIL (-2) //  An error, filled in

//  The longest a byte becomes in a JSON string: "\u001F"
#define S_JSON_ESCAPE_MAX 6

//  A UTF-8 continuation byte is 10xxxxxx: the bytes after the second of a
//  sequence may be any such (fq_utf8_second_ok narrows the second)
#define S_CONTINUATION_MASK 0xC0
#define S_CONTINUATION      0x80

//  The names of the address column, first found wins (fq_cli_csv.h)
static const char *const s_address_names[] = {"to", "email", NULL};

//  Where the recipients' JSON is
typedef enum {
    S_JSON_START,   //  Nothing written yet
    S_JSON_RECORDS, //  "[" and the records so far
    S_JSON_DONE     //  "]" written too
} s_json_state_t;

struct fq_cli_csv {
    fq_cli_csv_read_fn *read;
    void *arg;
    char *piece; //  FQ_CLI_CSV_PIECE bytes of the text
    size_t piece_len;
    size_t piece_pos;
    bool at_end;      //  read said the text is over
    size_t line;      //  The line of the next byte
    bool after_cr;    //  The last byte was CR (a LF after it is the same line end)
    size_t utf8_left; //  Continuation bytes the sequence under way still needs
    bool utf8_second; //  The next of them is the second byte of the sequence
    unsigned char utf8_lead;
    size_t utf8_line;

    //  The record being read
    bool in_record;
    size_t record_bytes; //  Taken since its first byte
    size_t record_line;
    size_t quote_line; //  Where the open quoted field starts; 0 when none is open
    fq_buf_t text;     //  Its fields, each NUL-terminated
    size_t *fields;    //  Offset in text of each field
    size_t nfields;
    size_t fields_capacity;

    //  The header, kept apart from the records
    bool header_read;
    fq_buf_t header_text;
    size_t *header_fields;
    size_t columns;
    size_t header_line;

    //  The recipients' JSON: out.data[out_pos..out.size) is still to be read
    s_json_state_t json;
    size_t address; //  The address column
    size_t recipients;
    fq_buf_t out;
    size_t out_pos;
};

static void s_error(fq_cli_csv_error_t *error, size_t line, const char *format, ...)
    __attribute__((format(printf, 3, 4)));

static void s_error(fq_cli_csv_error_t *error, size_t line, const char *format, ...)
{
    error->line = line;
    error->errnum = 0;
    va_list args;
    va_start(args, format);
    vsnprintf(error->message, sizeof error->message, format, args);
    va_end(args);
}

//  Makes room for needed offsets in *fields (capacity counted in items).
static bool s_grow_fields(size_t **fields, size_t *capacity, size_t needed)
{
    if (needed <= *capacity)
        return true;
    size_t next = *capacity ? *capacity : S_INITIAL_FIELDS;
    while (next < needed)
        next *= 2;
    size_t *grown = realloc(*fields, next * sizeof *grown);
    if (!grown)
        return false;
    *fields = grown;
    *capacity = next;
    return true;
}

fq_cli_csv_t *fq_cli_csv_new(fq_cli_csv_read_fn *read, void *arg)
{
    fq_cli_csv_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    self->piece = malloc(FQ_CLI_CSV_PIECE);
    if (!self->piece) {
        free(self);
        return NULL;
    }
    self->read = read;
    self->arg = arg;
    self->line = 1;
    return self;
}

void fq_cli_csv_destroy(fq_cli_csv_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    fq_cli_csv_t *self = *self_p;
    free(self->piece);
    fq_buf_free(&self->text);
    free(self->fields);
    fq_buf_free(&self->header_text);
    free(self->header_fields);
    fq_buf_free(&self->out);
    free(self);
    *self_p = NULL;
}

//  ---------------------------------------------------------------------
//  Bytes

//  Appends what read gives to the piece (there must be room). Returns 0,
//  S_END, or S_FAIL (error filled).
static int s_read_more(fq_cli_csv_t *self, fq_cli_csv_error_t *error)
{
    if (self->at_end)
        return S_END;
    ssize_t got;
    do
        got = self->read(self->arg, self->piece + self->piece_len,
                         FQ_CLI_CSV_PIECE - self->piece_len);
    while (got < 0 && errno == EINTR);
    if (got < 0) {
        int errnum = errno;
        s_error(error, self->line, "could not read: %s", strerror(errnum));
        error->errnum = errnum;
        return S_FAIL;
    }
    if (got == 0) {
        self->at_end = true;
        return S_END;
    }
    self->piece_len += (size_t)got;
    return 0;
}

static bool s_utf8_error(const fq_cli_csv_t *self, fq_cli_csv_error_t *error)
{
    s_error(error, self->utf8_line, "invalid UTF-8 (byte 0x%02X; save the file as UTF-8)",
            self->utf8_lead);
    return false;
}

//  The next byte, not taken: S_END at the end of the text. A byte that
//  cannot continue the UTF-8 sequence under way is an error already.
static int s_peek(fq_cli_csv_t *self, fq_cli_csv_error_t *error)
{
    if (self->piece_pos == self->piece_len) {
        self->piece_pos = self->piece_len = 0;
        int rc = s_read_more(self, error);
        if (rc == S_END && self->utf8_left) {
            s_utf8_error(self, error);
            return S_FAIL;
        }
        if (rc)
            return rc;
    }
    int c = (unsigned char)self->piece[self->piece_pos];
    if (self->utf8_left &&
        (self->utf8_second ? !fq_utf8_second_ok(self->utf8_lead, (unsigned char)c)
                           : (c & S_CONTINUATION_MASK) != S_CONTINUATION)) {
        s_utf8_error(self, error);
        return S_FAIL;
    }
    return c;
}

//  Checks byte c, the next of the text: no NUL, and UTF-8 (RFC 3629: no
//  overlong forms, no surrogates, nothing above U+10FFFF). The lead byte
//  says how long its sequence is, and which second byte may follow it
//  (fq_utf8.h); s_peek refuses a byte that cannot come next before it is
//  taken, so that it is never read as a comma, quote or line end.
static bool s_check_byte(fq_cli_csv_t *self, unsigned char c, fq_cli_csv_error_t *error)
{
    if (self->utf8_left) {
        //  A byte s_peek let through
        self->utf8_left--;
        self->utf8_second = false;
        return true;
    }
    if (c == 0) {
        s_error(error, self->line, "NUL byte (a CSV file is text)");
        return false;
    }
    size_t length = fq_utf8_lead_length(c);
    if (length == 1)
        return true;
    self->utf8_lead = c;
    self->utf8_line = self->line;
    if (length == 0)
        return s_utf8_error(self, error);
    self->utf8_left = length - 1;
    self->utf8_second = true;
    return true;
}

static void s_too_long(const fq_cli_csv_t *self, fq_cli_csv_error_t *error)
{
    if (self->quote_line)
        s_error(error, self->quote_line,
                "quoted field runs past %d bytes, the most one record may hold (a closing "
                "'\"' missing?)",
                FQ_CLI_CSV_RECORD_MAX);
    else
        s_error(error, self->record_line,
                "record longer than %d bytes, the most one record may hold", FQ_CLI_CSV_RECORD_MAX);
}

//  Takes the next byte: returns it, S_END, or S_FAIL.
static int s_take(fq_cli_csv_t *self, fq_cli_csv_error_t *error)
{
    int c = s_peek(self, error);
    if (c < 0)
        return c;
    self->piece_pos++;
    if (!s_check_byte(self, (unsigned char)c, error))
        return S_FAIL;
    if (self->in_record && ++self->record_bytes > FQ_CLI_CSV_RECORD_MAX) {
        s_too_long(self, error);
        return S_FAIL;
    }
    //  CRLF, LF and a lone CR each end one line
    if (c == '\n' ? !self->after_cr : c == '\r')
        self->line++;
    self->after_cr = c == '\r';
    return c;
}

//  Takes the line end ahead (CR, LF or CRLF). Returns 0 or -1.
static int s_take_line_end(fq_cli_csv_t *self, fq_cli_csv_error_t *error)
{
    int c = s_take(self, error);
    if (c == '\r') {
        int next = s_peek(self, error);
        if (next == S_FAIL)
            return -1;
        if (next == '\n')
            c = s_take(self, error);
    }
    return c == S_FAIL ? -1 : 0;
}

//  ---------------------------------------------------------------------
//  Records

static bool s_put(fq_cli_csv_t *self, char c)
{
    return fq_buf_add_char(&self->text, c) == 0;
}

//  Takes the run of bytes ahead that need nothing but copying into the
//  field: ASCII other than NUL, line ends, quotes and (outside quotes)
//  commas. The byte-by-byte path does the same more slowly; this one makes
//  a file of millions of records quick to read. Returns 0, or -1 (error
//  filled).
static int s_take_run(fq_cli_csv_t *self, bool quoted, fq_cli_csv_error_t *error)
{
    if (self->utf8_left)
        return 0;
    const char *start = self->piece + self->piece_pos;
    size_t left = self->piece_len - self->piece_pos, run = 0;
    //  Up to the limit: the byte past it goes the slow way, and fails
    if (left > FQ_CLI_CSV_RECORD_MAX - self->record_bytes)
        left = FQ_CLI_CSV_RECORD_MAX - self->record_bytes;
    while (run < left) {
        unsigned char c = (unsigned char)start[run];
        if (c >= 0x80 || c == 0 || c == '"' || c == '\n' || c == '\r' || (c == ',' && !quoted))
            break;
        run++;
    }
    if (run == 0)
        return 0;
    if (fq_buf_add(&self->text, start, run) != 0) {
        s_error(error, self->line, "out of memory");
        return -1;
    }
    self->piece_pos += run;
    self->record_bytes += run;
    self->after_cr = false;
    return 0;
}

//  Ends the field begun at start: NUL-terminates it and records it.
static bool s_end_field(fq_cli_csv_t *self, size_t start)
{
    if (!s_put(self, 0) || !s_grow_fields(&self->fields, &self->fields_capacity, self->nfields + 1))
        return false;
    self->fields[self->nfields++] = start;
    return true;
}

static bool s_is_field_end(int c)
{
    return c == S_END || c == ',' || c == '\n' || c == '\r';
}

//  Reads an unquoted field, up to the comma or line end after it.
static int s_read_plain(fq_cli_csv_t *self, fq_cli_csv_error_t *error)
{
    while (true) {
        if (s_take_run(self, false, error) != 0)
            return -1;
        int c = s_peek(self, error);
        if (c == S_FAIL)
            return -1;
        if (s_is_field_end(c))
            return 0;
        if (c == '"') {
            s_error(error, self->line,
                    "quote inside unquoted field %zu (quote the whole field and write the quote "
                    "as \"\")",
                    self->nfields + 1);
            return -1;
        }
        c = s_take(self, error);
        if (c == S_FAIL)
            return -1;
        if (!s_put(self, (char)c)) {
            s_error(error, self->line, "out of memory");
            return -1;
        }
    }
}

//  Reads a quoted field, from its opening quote up to the comma or line
//  end after the closing one.
static int s_read_quoted(fq_cli_csv_t *self, fq_cli_csv_error_t *error)
{
    if (s_take(self, error) == S_FAIL)
        return -1;
    self->quote_line = self->line;
    while (true) {
        if (s_take_run(self, true, error) != 0)
            return -1;
        int c = s_take(self, error);
        if (c == S_FAIL)
            return -1;
        if (c == S_END) {
            s_error(error, self->quote_line, "quoted field not closed (a '\"' is missing)");
            return -1;
        }
        if (c == '"') {
            int next = s_peek(self, error);
            if (next == S_FAIL)
                return -1;
            if (next != '"')
                break;
            if (s_take(self, error) == S_FAIL)
                return -1;
        }
        //  Line breaks inside quotes are kept as written
        if (!s_put(self, (char)c)) {
            s_error(error, self->line, "out of memory");
            return -1;
        }
    }
    self->quote_line = 0;
    int c = s_peek(self, error);
    if (c == S_FAIL)
        return -1;
    if (s_is_field_end(c))
        return 0;
    //  Taken first, so that a byte that is not UTF-8 is reported as such
    if (s_take(self, error) == S_FAIL)
        return -1;
    s_error(error, self->line,
            "text after the closing quote of field %zu (write a quote inside a quoted field "
            "as \"\")",
            self->nfields + 1);
    return -1;
}

//  Reads the next record into text and fields, skipping empty lines.
//  Returns 1, 0 at the end of the text, or -1 (error filled).
static int s_read_record(fq_cli_csv_t *self, fq_cli_csv_error_t *error)
{
    int c;
    while ((c = s_peek(self, error)) == '\n' || c == '\r')
        if (s_take_line_end(self, error) != 0)
            return -1;
    if (c < 0)
        return c == S_END ? 0 : -1;
    fq_buf_reset(&self->text);
    self->nfields = 0;
    self->record_line = self->line;
    self->record_bytes = 0;
    self->in_record = true;
    while (true) {
        size_t start = self->text.size;
        c = s_peek(self, error);
        if (c == S_FAIL || (c == '"' ? s_read_quoted(self, error) : s_read_plain(self, error)))
            return -1;
        if (!s_end_field(self, start)) {
            s_error(error, self->line, "out of memory");
            return -1;
        }
        c = s_peek(self, error);
        if (c != ',')
            break;
        if (s_take(self, error) == S_FAIL)
            return -1;
    }
    //  The line end is not the record's: a record may hold all it allows
    self->in_record = false;
    if (c == S_FAIL || (c != S_END && s_take_line_end(self, error) != 0))
        return -1;
    return 1;
}

//  The first column whose name was already used by a column before it:
//  its index in *repeat and the first user's in *first. False if none.
//  Sorted by name then column, so that a header of many columns is
//  checked in n log n.
typedef struct {
    const char *name;
    size_t column;
} s_name_t;

static int s_name_compare(const void *a, const void *b)
{
    const s_name_t *x = a, *y = b;
    int rc = strcmp(x->name, y->name);
    return rc ? rc : (x->column > y->column) - (x->column < y->column);
}

static int s_find_repeat(const fq_cli_csv_t *self, bool *found, size_t *repeat, size_t *first)
{
    *found = false;
    s_name_t *names = malloc(self->nfields * sizeof *names);
    if (!names)
        return -1;
    for (size_t c = 0; c < self->nfields; c++)
        names[c] = (s_name_t){self->text.data + self->fields[c], c};
    qsort(names, self->nfields, sizeof *names, s_name_compare);
    for (size_t i = 1; i < self->nfields; i++) {
        //  The second of each name is the first repeat of it
        bool second = strcmp(names[i].name, names[i - 1].name) == 0 &&
                      (i == 1 || strcmp(names[i - 1].name, names[i - 2].name) != 0);
        if (second && (!*found || names[i].column < *repeat)) {
            *found = true;
            *repeat = names[i].column;
            *first = names[i - 1].column;
        }
    }
    free(names);
    return 0;
}

int fq_cli_csv_read_header(fq_cli_csv_t *self, fq_cli_csv_error_t *error)
{
    assert(!self->header_read);
    //  A byte order mark is looked for in the first bytes, however the
    //  text is cut into pieces
    int rc = 0;
    while (rc == 0 && self->piece_len < S_BOM_SIZE)
        rc = s_read_more(self, error);
    if (rc == S_FAIL)
        return -1;
    if (self->piece_len >= S_BOM_SIZE && memcmp(self->piece, S_BOM, S_BOM_SIZE) == 0)
        self->piece_pos = S_BOM_SIZE;

    rc = s_read_record(self, error);
    if (rc < 0)
        return -1;
    if (rc == 0) {
        s_error(error, self->line > 1 ? self->line - 1 : 1, "no header row (the file is empty)");
        return -1;
    }
    //  Every column named, each name once: the first column at fault is told
    size_t unnamed = self->nfields, repeat = 0, first = 0;
    bool repeated;
    for (size_t c = 0; unnamed == self->nfields && c < self->nfields; c++)
        if (!self->text.data[self->fields[c]])
            unnamed = c;
    if (s_find_repeat(self, &repeated, &repeat, &first) != 0) {
        s_error(error, self->record_line, "out of memory");
        return -1;
    }
    if (unnamed < self->nfields && (!repeated || unnamed < repeat)) {
        s_error(error, self->record_line, "column %zu of the header has no name", unnamed + 1);
        return -1;
    }
    if (repeated) {
        s_error(error, self->record_line,
                "column %zu of the header repeats the name \"%s\" of column %zu", repeat + 1,
                self->text.data + self->fields[repeat], first + 1);
        return -1;
    }
    //  The header keeps these buffers; the records grow new ones
    self->header_text = self->text;
    self->header_fields = self->fields;
    self->columns = self->nfields;
    self->header_line = self->record_line;
    self->text = (fq_buf_t){0};
    self->fields = NULL;
    self->nfields = self->fields_capacity = 0;
    self->header_read = true;
    return 0;
}

size_t fq_cli_csv_columns(const fq_cli_csv_t *self)
{
    return self->columns;
}

const char *fq_cli_csv_header(const fq_cli_csv_t *self, size_t column)
{
    return column < self->columns ? self->header_text.data + self->header_fields[column] : NULL;
}

size_t fq_cli_csv_header_line(const fq_cli_csv_t *self)
{
    return self->header_line;
}

int fq_cli_csv_next(fq_cli_csv_t *self, fq_cli_csv_error_t *error)
{
    assert(self->header_read);
    int rc = s_read_record(self, error);
    if (rc == 1 && self->nfields != self->columns) {
        s_error(error, self->record_line, "%zu field%s, the header has %zu", self->nfields,
                self->nfields == 1 ? "" : "s", self->columns);
        return -1;
    }
    return rc;
}

const char *fq_cli_csv_field(const fq_cli_csv_t *self, size_t column)
{
    return column < self->nfields ? self->text.data + self->fields[column] : NULL;
}

size_t fq_cli_csv_line(const fq_cli_csv_t *self)
{
    return self->record_line;
}

//  ---------------------------------------------------------------------
//  The recipients' JSON

//  The address column: the first name of s_address_names that a column
//  has (in any case). Returns 0 with *column, or -1 with error filled.
static int s_address_column(const fq_cli_csv_t *self, size_t *column, fq_cli_csv_error_t *error)
{
    for (size_t n = 0; s_address_names[n]; n++) {
        size_t found = 0;
        for (size_t c = 0; c < self->columns; c++) {
            if (strcasecmp(fq_cli_csv_header(self, c), s_address_names[n]) != 0)
                continue;
            if (found++) {
                s_error(error, self->header_line,
                        "columns %zu and %zu are both named \"%s\" (in some case): which is the "
                        "address?",
                        *column + 1, c + 1, s_address_names[n]);
                return -1;
            }
            *column = c;
        }
        if (found)
            return 0;
    }
    s_error(error, self->header_line, "no address column (name one \"to\" or \"email\")");
    return -1;
}

static bool s_out_add(fq_cli_csv_t *self, const char *text)
{
    return fq_buf_add_str(&self->out, text) == 0;
}

//  Appends text as a JSON string (RFC 8259: quote, backslash and control
//  characters escaped; the text is valid UTF-8 already).
static bool s_out_string(fq_cli_csv_t *self, const char *text)
{
    static const char hex[] = "0123456789ABCDEF";
    //  Written in place, room made first: the escapes are the hot path of
    //  a file of millions of records
    size_t len = strlen(text);
    if (fq_buf_reserve(&self->out, len * S_JSON_ESCAPE_MAX + 2) != 0)
        return false;
    char *o = self->out.data + self->out.size;
    *o++ = '"';
    for (const unsigned char *c = (const unsigned char *)text; *c; c++) {
        if (*c >= ' ' && *c != '"' && *c != '\\') {
            *o++ = (char)*c;
            continue;
        }
        const char *short_escape = *c == '"'    ? "\\\""
                                   : *c == '\\' ? "\\\\"
                                   : *c == '\n' ? "\\n"
                                   : *c == '\r' ? "\\r"
                                   : *c == '\t' ? "\\t"
                                   : *c == '\b' ? "\\b"
                                   : *c == '\f' ? "\\f"
                                                : NULL;
        if (short_escape) {
            *o++ = short_escape[0];
            *o++ = short_escape[1];
        } else {
            memcpy(o, "\\u00", 4);
            o[4] = hex[*c >> 4];
            o[5] = hex[*c & 0x0F];
            o += S_JSON_ESCAPE_MAX;
        }
    }
    *o++ = '"';
    *o = 0;
    self->out.size = (size_t)(o - self->out.data);
    return true;
}

//  Writes the record just read as {"to": ..., "fields": {...}}.
static bool s_out_recipient(fq_cli_csv_t *self)
{
    if ((self->recipients > 0 && !s_out_add(self, ",")) || !s_out_add(self, "{\"to\":") ||
        !s_out_string(self, fq_cli_csv_field(self, self->address)) ||
        !s_out_add(self, ",\"fields\":{"))
        return false;
    for (size_t c = 0; c < self->columns; c++)
        if ((c > 0 && !s_out_add(self, ",")) || !s_out_string(self, fq_cli_csv_header(self, c)) ||
            !s_out_add(self, ":") || !s_out_string(self, fq_cli_csv_field(self, c)))
            return false;
    return s_out_add(self, "}}");
}

//  Fills out with the next part of the JSON: "[", a record, or "]".
//  Returns 0, 1 when everything is out, or -1 (error filled).
static int s_json_next(fq_cli_csv_t *self, fq_cli_csv_error_t *error)
{
    fq_buf_reset(&self->out);
    self->out_pos = 0;
    bool ok = true;
    switch (self->json) {
    case S_JSON_START:
        if ((!self->header_read && fq_cli_csv_read_header(self, error) != 0) ||
            s_address_column(self, &self->address, error) != 0)
            return -1;
        ok = s_out_add(self, "[");
        self->json = S_JSON_RECORDS;
        break;
    case S_JSON_RECORDS: {
        int rc = fq_cli_csv_next(self, error);
        if (rc < 0)
            return -1;
        if (rc == 0) {
            if (self->recipients == 0) {
                s_error(error, self->header_line, "no recipients (only a header row)");
                return -1;
            }
            ok = s_out_add(self, "]");
            self->json = S_JSON_DONE;
            break;
        }
        if (!*fq_cli_csv_field(self, self->address)) {
            s_error(error, self->record_line, "empty address in column \"%s\"",
                    fq_cli_csv_header(self, self->address));
            return -1;
        }
        ok = s_out_recipient(self);
        self->recipients++;
        break;
    }
    case S_JSON_DONE:
        return 1;
    }
    if (!ok) {
        s_error(error, self->line, "out of memory");
        return -1;
    }
    return 0;
}

ssize_t fq_cli_csv_recipients_read(fq_cli_csv_t *self, char *buffer, size_t size,
                                   fq_cli_csv_error_t *error)
{
    size_t done = 0;
    while (done < size) {
        if (self->out_pos == self->out.size) {
            int rc = s_json_next(self, error);
            if (rc < 0)
                return -1;
            if (rc > 0)
                break;
        }
        size_t n = self->out.size - self->out_pos;
        if (n > size - done)
            n = size - done;
        memcpy(buffer + done, self->out.data + self->out_pos, n);
        self->out_pos += n;
        done += n;
    }
    return (ssize_t)done;
}

size_t fq_cli_csv_recipients_count(const fq_cli_csv_t *self)
{
    return self->recipients;
}
