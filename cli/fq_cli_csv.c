/*  fq_cli_csv.c — RFC 4180 CSV of recipients (the rules: fq_cli_csv.h).

    The text is checked whole first (UTF-8, NUL bytes), then read record by
    record with a small state machine. Fields are copied into one buffer,
    NUL-terminated, and found by offset: a file of a million recipients
    makes two allocations that grow, not millions.
*/
#include "fq_cli_csv.h"
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

//  What a buffer grows from
#define S_INITIAL_CAPACITY 64

//  The UTF-8 byte order mark
#define S_BOM      "\xEF\xBB\xBF"
#define S_BOM_SIZE 3

//  The names of the address column, first found wins (fq_cli_csv.h)
static const char *const s_address_names[] = {"to", "email", NULL};

struct fq_cli_csv {
    char *text; //  Every field, each NUL-terminated
    size_t text_size;
    size_t text_capacity;
    size_t *fields; //  Offset in text of each field, record after record
    size_t nfields;
    size_t fields_capacity;
    size_t *lines;   //  The line where each record starts
    size_t nrecords; //  The header's included
    size_t records_capacity;
    size_t columns; //  Fields per record (the header's count)
};

static void s_error(fq_cli_csv_error_t *error, size_t line, const char *format, ...)
    __attribute__((format(printf, 3, 4)));

static void s_error(fq_cli_csv_error_t *error, size_t line, const char *format, ...)
{
    error->line = line;
    va_list args;
    va_start(args, format);
    vsnprintf(error->message, sizeof error->message, format, args);
    va_end(args);
}

//  Makes room for more items in *array (capacity counted in items).
static bool s_grow(void **array, size_t *capacity, size_t needed, size_t item_size)
{
    if (needed <= *capacity)
        return true;
    size_t next = *capacity ? *capacity : S_INITIAL_CAPACITY;
    while (next < needed)
        next *= 2;
    void *grown = realloc(*array, next * item_size);
    if (!grown)
        return false;
    *array = grown;
    *capacity = next;
    return true;
}

static bool s_put_char(fq_cli_csv_t *self, char c)
{
    if (!s_grow((void **)&self->text, &self->text_capacity, self->text_size + 1, 1))
        return false;
    self->text[self->text_size++] = c;
    return true;
}

//  Length of the valid UTF-8 sequence at s (at most n bytes), 0 if none:
//  no overlong forms, no surrogates, nothing above U+10FFFF (RFC 3629).
static size_t s_utf8_length(const unsigned char *s, size_t n)
{
    if (s[0] < 0x80)
        return 1;
    size_t len;
    unsigned int min, cp;
    if ((s[0] & 0xE0) == 0xC0)
        len = 2, min = 0x80, cp = s[0] & 0x1F;
    else if ((s[0] & 0xF0) == 0xE0)
        len = 3, min = 0x800, cp = s[0] & 0x0F;
    else if ((s[0] & 0xF8) == 0xF0)
        len = 4, min = 0x10000, cp = s[0] & 0x07;
    else
        return 0;
    if (len > n)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return len;
}

//  Checks the whole text: UTF-8 throughout, no NUL byte.
static bool s_check_text(const char *data, size_t size, fq_cli_csv_error_t *error)
{
    const unsigned char *s = (const unsigned char *)data;
    size_t line = 1;
    for (size_t i = 0; i < size;) {
        if (s[i] == 0) {
            s_error(error, line, "NUL byte (a CSV file is text)");
            return false;
        }
        size_t len = s_utf8_length(s + i, size - i);
        if (len == 0) {
            s_error(error, line, "invalid UTF-8 (byte 0x%02X; save the file as UTF-8)", s[i]);
            return false;
        }
        if (s[i] == '\n' || (s[i] == '\r' && (i + 1 == size || s[i + 1] != '\n')))
            line++;
        i += len;
    }
    return true;
}

//  Ends the field begun at start: NUL-terminates it and records it.
static bool s_end_field(fq_cli_csv_t *self, size_t start)
{
    if (!s_put_char(self, 0) ||
        !s_grow((void **)&self->fields, &self->fields_capacity, self->nfields + 1, sizeof(size_t)))
        return false;
    self->fields[self->nfields++] = start;
    return true;
}

//  The line end at data[i], if any: its length (1 or 2), else 0.
static size_t s_line_end(const char *data, size_t size, size_t i)
{
    if (data[i] == '\n')
        return 1;
    if (data[i] == '\r')
        return i + 1 < size && data[i + 1] == '\n' ? 2 : 1;
    return 0;
}

//  Reads the record at *pos (line *line), advancing both past its line
//  end. Returns the number of fields, 0 on error (error filled).
static size_t s_read_record(fq_cli_csv_t *self, const char *data, size_t size, size_t *pos,
                            size_t *line, fq_cli_csv_error_t *error)
{
    size_t i = *pos, count = 0;
    while (true) {
        size_t start = self->text_size;
        if (i < size && data[i] == '"') {
            size_t quote_line = *line;
            i++;
            while (true) {
                if (i >= size) {
                    s_error(error, quote_line, "quoted field not closed (a '\"' is missing)");
                    return 0;
                }
                if (data[i] == '"') {
                    if (i + 1 < size && data[i + 1] == '"') {
                        if (!s_put_char(self, '"'))
                            goto nomem;
                        i += 2;
                        continue;
                    }
                    i++;
                    break;
                }
                size_t end = s_line_end(data, size, i);
                if (end)
                    (*line)++;
                //  Line breaks inside quotes are kept as written
                for (size_t k = 0; k < (end ? end : 1); k++)
                    if (!s_put_char(self, data[i + k]))
                        goto nomem;
                i += end ? end : 1;
            }
            if (i < size && data[i] != ',' && !s_line_end(data, size, i)) {
                s_error(error, *line,
                        "text after the closing quote of field %zu (write a quote inside a "
                        "quoted field as \"\")",
                        count + 1);
                return 0;
            }
        } else {
            while (i < size && data[i] != ',' && !s_line_end(data, size, i)) {
                if (data[i] == '"') {
                    s_error(error, *line,
                            "quote inside unquoted field %zu (quote the whole field and "
                            "write the quote as \"\")",
                            count + 1);
                    return 0;
                }
                if (!s_put_char(self, data[i++]))
                    goto nomem;
            }
        }
        if (!s_end_field(self, start))
            goto nomem;
        count++;
        if (i < size && data[i] == ',') {
            i++;
            continue;
        }
        if (i < size) {
            i += s_line_end(data, size, i);
            (*line)++;
        }
        *pos = i;
        return count;
    }
nomem:
    s_error(error, *line, "out of memory");
    return 0;
}

fq_cli_csv_t *fq_cli_csv_parse(const char *data, size_t size, fq_cli_csv_error_t *error)
{
    if (!s_check_text(data, size, error))
        return NULL;
    fq_cli_csv_t *self = calloc(1, sizeof *self);
    if (!self) {
        s_error(error, 1, "out of memory");
        return NULL;
    }
    size_t pos = 0, line = 1;
    if (size >= S_BOM_SIZE && memcmp(data, S_BOM, S_BOM_SIZE) == 0)
        pos = S_BOM_SIZE;
    while (pos < size) {
        size_t blank = s_line_end(data, size, pos);
        if (blank) {
            pos += blank;
            line++;
            continue;
        }
        size_t record_line = line;
        size_t first = self->nfields;
        size_t count = s_read_record(self, data, size, &pos, &line, error);
        if (count == 0)
            goto fail;
        if (self->nrecords == 0)
            self->columns = count;
        else if (count != self->columns) {
            s_error(error, record_line, "%zu field%s, the header has %zu", count,
                    count == 1 ? "" : "s", self->columns);
            goto fail;
        }
        if (!s_grow((void **)&self->lines, &self->records_capacity, self->nrecords + 1,
                    sizeof(size_t))) {
            s_error(error, record_line, "out of memory");
            goto fail;
        }
        self->lines[self->nrecords++] = record_line;
        if (self->nrecords > 1)
            continue;
        //  The header: every column named, each name once
        for (size_t c = 0; c < count; c++) {
            const char *name = self->text + self->fields[first + c];
            if (!*name) {
                s_error(error, record_line, "column %zu of the header has no name", c + 1);
                goto fail;
            }
            for (size_t d = 0; d < c; d++)
                if (strcmp(name, self->text + self->fields[first + d]) == 0) {
                    s_error(error, record_line,
                            "column %zu of the header repeats the name \"%s\" of column %zu", c + 1,
                            name, d + 1);
                    goto fail;
                }
        }
    }
    if (self->nrecords == 0) {
        s_error(error, line > 1 ? line - 1 : 1, "no header row (the file is empty)");
        goto fail;
    }
    return self;
fail:
    fq_cli_csv_destroy(&self);
    return NULL;
}

void fq_cli_csv_destroy(fq_cli_csv_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    fq_cli_csv_t *self = *self_p;
    free(self->text);
    free(self->fields);
    free(self->lines);
    free(self);
    *self_p = NULL;
}

size_t fq_cli_csv_columns(const fq_cli_csv_t *self)
{
    return self->columns;
}

const char *fq_cli_csv_header(const fq_cli_csv_t *self, size_t column)
{
    return column < self->columns ? self->text + self->fields[column] : NULL;
}

size_t fq_cli_csv_rows(const fq_cli_csv_t *self)
{
    return self->nrecords - 1;
}

const char *fq_cli_csv_cell(const fq_cli_csv_t *self, size_t row, size_t column)
{
    if (row + 1 >= self->nrecords || column >= self->columns)
        return NULL;
    return self->text + self->fields[(row + 1) * self->columns + column];
}

size_t fq_cli_csv_line(const fq_cli_csv_t *self, size_t row)
{
    return row + 1 < self->nrecords ? self->lines[row + 1] : 0;
}

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
                s_error(error, self->lines[0],
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
    s_error(error, self->lines[0], "no address column (name one \"to\" or \"email\")");
    return -1;
}

json_t *fq_cli_csv_recipients(const fq_cli_csv_t *self, fq_cli_csv_error_t *error)
{
    size_t address;
    if (s_address_column(self, &address, error) != 0)
        return NULL;
    if (fq_cli_csv_rows(self) == 0) {
        s_error(error, self->lines[0], "no recipients (only a header row)");
        return NULL;
    }
    json_t *recipients = json_array();
    if (!recipients)
        goto nomem;
    for (size_t row = 0; row < fq_cli_csv_rows(self); row++) {
        const char *to = fq_cli_csv_cell(self, row, address);
        if (!*to) {
            s_error(error, fq_cli_csv_line(self, row), "empty address in column \"%s\"",
                    fq_cli_csv_header(self, address));
            json_decref(recipients);
            return NULL;
        }
        //  Each new object is handed to its parent at once, so that one
        //  json_decref(recipients) frees everything made so far
        json_t *recipient = json_object();
        if (json_array_append_new(recipients, recipient) != 0)
            goto nomem;
        json_t *fields = json_object();
        if (json_object_set_new(recipient, "to", json_string(to)) != 0 ||
            json_object_set_new(recipient, "fields", fields) != 0)
            goto nomem;
        for (size_t c = 0; c < self->columns; c++)
            if (json_object_set_new(fields, fq_cli_csv_header(self, c),
                                    json_string(fq_cli_csv_cell(self, row, c))) != 0)
                goto nomem;
    }
    return recipients;
nomem:
    json_decref(recipients);
    s_error(error, 1, "out of memory");
    return NULL;
}
