/*  fq_cli_table.c — aligned tables and values for people. */
#include "fq_cli_table.h"
#include "fq_utf8.h"
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define S_INITIAL_CELLS 64

//  Columns are this many spaces apart
#define S_GAP 2

//  Units of fq_cli_format_age
#define S_MINUTE_S 60
#define S_HOUR_S   3600
#define S_DAY_S    86400

//  The control characters: C0, and DEL
#define S_CONTROL_LAST 0x1F
#define S_DEL          0x7F
//  ... and C1, U+0080..U+009F, in UTF-8 0xC2 0x80..0x9F
#define S_C1_LEAD 0xC2
#define S_C1_LAST 0x9F

struct fq_cli_table {
    size_t columns;
    char *align;
    char **cells; //  Headers first, then the rows
    size_t ncells;
    size_t capacity;
};

static int s_push(fq_cli_table_t *self, const char *text)
{
    if (self->ncells == self->capacity) {
        size_t next = self->capacity ? self->capacity * 2 : S_INITIAL_CELLS;
        char **grown = realloc(self->cells, next * sizeof *grown);
        if (!grown)
            return -1;
        self->cells = grown;
        self->capacity = next;
    }
    char escaped[FQ_CLI_VALUE_SIZE];
    fq_cli_escape(escaped, sizeof escaped, text);
    char *copy = strdup(escaped);
    if (!copy)
        return -1;
    self->cells[self->ncells++] = copy;
    return 0;
}

fq_cli_table_t *fq_cli_table_new(const char *const *headers, const char *align)
{
    fq_cli_table_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    self->columns = strlen(align);
    self->align = strdup(align);
    bool ok = self->align != NULL;
    for (size_t c = 0; ok && c < self->columns; c++)
        ok = s_push(self, headers[c]) == 0;
    if (!ok)
        fq_cli_table_destroy(&self);
    return self;
}

void fq_cli_table_destroy(fq_cli_table_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    fq_cli_table_t *self = *self_p;
    for (size_t i = 0; i < self->ncells; i++)
        free(self->cells[i]);
    free(self->cells);
    free(self->align);
    free(self);
    *self_p = NULL;
}

int fq_cli_table_add(fq_cli_table_t *self, const char *text)
{
    return s_push(self, text ? text : "-");
}

int fq_cli_table_add_json(fq_cli_table_t *self, const json_t *value)
{
    char text[FQ_CLI_VALUE_SIZE];
    fq_cli_format_value(text, sizeof text, value);
    return fq_cli_table_add(self, text);
}

size_t fq_cli_table_rows(const fq_cli_table_t *self)
{
    return self->ncells / self->columns - 1;
}

size_t fq_cli_table_width(const fq_cli_table_t *self, size_t max_rows)
{
    size_t rows = self->ncells / self->columns; //  Header included
    if (max_rows != SIZE_MAX && rows > max_rows + 1)
        rows = max_rows + 1;
    size_t total = 0;
    for (size_t c = 0; c < self->columns; c++) {
        size_t widest = 0;
        for (size_t r = 0; r < rows; r++) {
            size_t w = fq_cli_width(self->cells[r * self->columns + c]);
            widest = w > widest ? w : widest;
        }
        total += widest + (c + 1 < self->columns ? S_GAP : 0);
    }
    return total;
}

void fq_cli_table_print(const fq_cli_table_t *self, FILE *out, size_t max_rows, const char *eol)
{
    size_t rows = self->ncells / self->columns; //  Header included
    if (max_rows != SIZE_MAX && rows > max_rows + 1)
        rows = max_rows + 1;
    size_t *widths = calloc(self->columns, sizeof *widths);
    if (!widths)
        return;
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < self->columns; c++) {
            size_t w = fq_cli_width(self->cells[r * self->columns + c]);
            if (w > widths[c])
                widths[c] = w;
        }
    for (size_t r = 0; r < rows; r++) {
        for (size_t c = 0; c < self->columns; c++) {
            const char *cell = self->cells[r * self->columns + c];
            int pad = (int)(widths[c] - fq_cli_width(cell));
            bool last = c + 1 == self->columns;
            if (self->align[c] == 'r')
                fprintf(out, "%*s%s", pad, "", cell);
            else
                //  The last column is not padded: no trailing blanks
                fprintf(out, "%s%*s", cell, last ? 0 : pad, "");
            if (!last)
                fprintf(out, "%*s", S_GAP, "");
        }
        fputs(eol, out);
    }
    free(widths);
}

void fq_cli_print_fields(FILE *out, const json_t *object, const char *const *pairs)
{
    size_t width = 0;
    for (size_t i = 0; pairs[i]; i += 2)
        if (strlen(pairs[i]) > width)
            width = strlen(pairs[i]);
    for (size_t i = 0; pairs[i]; i += 2) {
        char text[FQ_CLI_VALUE_SIZE];
        fq_cli_format_value(text, sizeof text, json_object_get(object, pairs[i + 1]));
        fprintf(out, "%-*s  %s\n", (int)width, pairs[i], text);
    }
}

void fq_cli_format_value(char *text, size_t size, const json_t *value)
{
    if (json_is_string(value))
        fq_cli_escape(text, size, json_string_value(value));
    else if (json_is_integer(value))
        snprintf(text, size, "%lld", (long long)json_integer_value(value));
    else if (json_is_real(value))
        snprintf(text, size, "%.1f", json_real_value(value));
    else if (json_is_true(value))
        snprintf(text, size, "yes");
    else if (json_is_false(value))
        snprintf(text, size, "no");
    else if (!value || json_is_null(value))
        snprintf(text, size, "-");
    else {
        //  An object or array where a scalar was expected: show it compact
        char *dump = json_dumps(value, JSON_COMPACT);
        fq_cli_escape(text, size, dump ? dump : "?");
        free(dump);
    }
}

void fq_cli_format_age(char *text, size_t size, double seconds)
{
    if (isnan(seconds) || seconds < 0) {
        snprintf(text, size, "-");
        return;
    }
    long long s = (long long)seconds;
    if (s < S_MINUTE_S)
        snprintf(text, size, "%llds", s);
    else if (s < S_HOUR_S)
        snprintf(text, size, "%lldm%02llds", s / S_MINUTE_S, s % S_MINUTE_S);
    else if (s < S_DAY_S)
        snprintf(text, size, "%lldh%02lldm", s / S_HOUR_S, s % S_HOUR_S / S_MINUTE_S);
    else
        snprintf(text, size, "%lldd%02lldh", s / S_DAY_S, s % S_DAY_S / S_HOUR_S);
}

void fq_cli_format_age_value(char *text, size_t size, const json_t *seconds)
{
    if (json_is_number(seconds))
        fq_cli_format_age(text, size, json_number_value(seconds));
    else
        snprintf(text, size, "-");
}

void fq_cli_escape(char *out, size_t size, const char *text)
{
    if (size == 0)
        return;
    const unsigned char *s = (const unsigned char *)text;
    size_t o = 0, shown = 0, left = strlen(text);
    //  Room kept for the longest escape ("\xNN") or sequence, "..." and NUL
    const size_t reserve = 8;
    while (*s && o + reserve < size) {
        if (shown == FQ_CLI_CELL_MAX) {
            memcpy(out + o, "...", 3);
            o += 3;
            break;
        }
        //  Invalid UTF-8 is shown byte by byte, escaped: a terminal's
        //  decoder must not swallow what follows it
        size_t len = fq_utf8_sequence((const char *)s, left);
        if (*s == '\n' || *s == '\r' || *s == '\t') {
            out[o++] = '\\';
            out[o++] = *s == '\n' ? 'n' : *s == '\r' ? 'r' : 't';
            len = 1;
        } else if (len == 0 || *s <= S_CONTROL_LAST || *s == S_DEL) {
            o += (size_t)snprintf(out + o, size - o, "\\x%02X", *s);
            len = 1;
        } else if (len == 2 && s[0] == S_C1_LEAD && s[1] <= S_C1_LAST) {
            //  A C1 control (U+0080..U+009F): some terminals act on them
            o += (size_t)snprintf(out + o, size - o, "\\u%04X", s[1]);
        } else {
            memcpy(out + o, s, len);
            o += len;
        }
        s += len;
        left -= len;
        shown++;
    }
    out[o] = 0;
}

size_t fq_cli_width(const char *text)
{
    size_t width = 0;
    for (const unsigned char *s = (const unsigned char *)text; *s; s++)
        if ((*s & 0xC0) != 0x80)
            width++;
    return width;
}
