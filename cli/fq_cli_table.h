/*  fq_cli_table.h — output for people: aligned tables, label/value lists,
    and the formatting of the API's values (ages, rates, nulls).

    Everything shown comes from the server, and part of it from far away
    (an SMTP server's error text, a recipient as a tenant wrote it): a
    control character in it could move the cursor or change the terminal,
    so every cell is shown with control characters escaped ("\r", "\x1b").
*/
#ifndef FQ_CLI_TABLE_H
#define FQ_CLI_TABLE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

//  Longest cell shown; longer ones end with "..."
#define FQ_CLI_CELL_MAX 200

//  A cell or value's text for people
#define FQ_CLI_VALUE_SIZE (FQ_CLI_CELL_MAX * 4 + 8)

typedef struct fq_cli_table fq_cli_table_t;

//  A table with a column per character of align ('l' left, 'r' right),
//  headed by headers (as many). NULL when out of memory.
fq_cli_table_t *fq_cli_table_new(const char *const *headers, const char *align);
void fq_cli_table_destroy(fq_cli_table_t **self_p);

//  Adds the next cell, row after row (text is copied, escaped). Returns 0,
//  or -1 when out of memory.
int fq_cli_table_add(fq_cli_table_t *self, const char *text);

//  Adds a JSON value as text (fq_cli_format_value).
int fq_cli_table_add_json(fq_cli_table_t *self, const json_t *value);

//  Rows added so far.
size_t fq_cli_table_rows(const fq_cli_table_t *self);

//  Characters the widest line of fq_cli_table_print(self, ..., max_rows,
//  ...) takes, its columns two spaces apart.
size_t fq_cli_table_width(const fq_cli_table_t *self, size_t max_rows);

//  Prints the header and the first max_rows rows (all: SIZE_MAX), columns
//  two spaces apart, each line ending with eol ("\n"; top adds "erase to
//  the end of the line" before it).
void fq_cli_table_print(const fq_cli_table_t *self, FILE *out, size_t max_rows, const char *eol);

//  Prints "label  value" lines, labels aligned: pairs is label, key, ...,
//  NULL; each value is object's member key (fq_cli_format_value).
void fq_cli_print_fields(FILE *out, const json_t *object, const char *const *pairs);

//  A JSON value as people read it: strings as they are (escaped), numbers,
//  "-" for null or missing, reals with one decimal.
void fq_cli_format_value(char *text, size_t size, const json_t *value);

//  A duration in seconds, short: "42s", "5m03s", "2h05m", "3d04h"; "-"
//  when negative or not a number.
void fq_cli_format_age(char *text, size_t size, double seconds);

//  The same for a JSON number of seconds; "-" for null or missing.
void fq_cli_format_age_value(char *text, size_t size, const json_t *seconds);

//  text with control characters and invalid UTF-8 escaped, cut at
//  FQ_CLI_CELL_MAX characters.
void fq_cli_escape(char *out, size_t size, const char *text);

//  Characters a terminal shows for text (UTF-8 sequences count one).
size_t fq_cli_width(const char *text);

#endif
