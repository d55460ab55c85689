/*  csv_test.c — the CSV of recipients that `fairq submit --csv` reads.

    RFC 4180 and the three allowances fq_cli_csv.h promises (any line end,
    empty lines skipped, a byte order mark ignored); every malformed file
    refused with the line of its mistake, never guessed at; and the
    recipients built from the header's names, the address from the "to"
    column, else "email".
*/
#include "fq_cli_csv.h"
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

//  Rows of the large file: enough that the buffers grow many times
#define S_MANY_ROWS 20000

// --------------------------------------------------------------------------
//  Helpers

//  Parses text (a C string, or size bytes of it), which must succeed.
static fq_cli_csv_t *s_parse_n(const char *text, size_t size)
{
    fq_cli_csv_error_t error = {0};
    fq_cli_csv_t *csv = fq_cli_csv_parse(text, size, &error);
    if (!csv)
        fail_msg("parse failed at line %zu: %s", error.line, error.message);
    return csv;
}

static fq_cli_csv_t *s_parse(const char *text)
{
    return s_parse_n(text, strlen(text));
}

//  Parses text, which must fail at line with a message holding words.
static void s_refuse_n(const char *text, size_t size, size_t line, const char *words)
{
    fq_cli_csv_error_t error = {0};
    fq_cli_csv_t *csv = fq_cli_csv_parse(text, size, &error);
    if (csv) {
        fq_cli_csv_destroy(&csv);
        fail_msg("parsed what should be refused: %s", text);
    }
    assert_int_equal(error.line, line);
    if (!strstr(error.message, words))
        fail_msg("message \"%s\" does not say \"%s\"", error.message, words);
}

static void s_refuse(const char *text, size_t line, const char *words)
{
    s_refuse_n(text, strlen(text), line, words);
}

//  The recipients of text, which must parse; NULL with error when refused.
static json_t *s_recipients(const char *text, fq_cli_csv_error_t *error)
{
    fq_cli_csv_t *csv = s_parse(text);
    json_t *recipients = fq_cli_csv_recipients(csv, error);
    fq_cli_csv_destroy(&csv);
    return recipients;
}

// --------------------------------------------------------------------------
//  Well-formed files

static void test_header_names_the_fields(void **state)
{
    (void)state;
    fq_cli_csv_t *csv = s_parse("to,name,n\nann@example.org,Ann,1\nbob@example.org,Bob,2\n");
    assert_int_equal(fq_cli_csv_columns(csv), 3);
    assert_string_equal(fq_cli_csv_header(csv, 0), "to");
    assert_string_equal(fq_cli_csv_header(csv, 2), "n");
    assert_null(fq_cli_csv_header(csv, 3));
    assert_int_equal(fq_cli_csv_rows(csv), 2);
    assert_string_equal(fq_cli_csv_cell(csv, 0, 1), "Ann");
    assert_string_equal(fq_cli_csv_cell(csv, 1, 0), "bob@example.org");
    assert_null(fq_cli_csv_cell(csv, 2, 0));
    assert_int_equal(fq_cli_csv_line(csv, 0), 2);
    assert_int_equal(fq_cli_csv_line(csv, 1), 3);
    fq_cli_csv_destroy(&csv);
    assert_null(csv);
    fq_cli_csv_destroy(&csv); //  Safe twice
}

static void test_crlf_and_no_final_line_end(void **state)
{
    (void)state;
    fq_cli_csv_t *csv = s_parse("to,name\r\nann@example.org,Ann\r\nbob@example.org,Bob");
    assert_int_equal(fq_cli_csv_rows(csv), 2);
    assert_string_equal(fq_cli_csv_cell(csv, 0, 1), "Ann");
    assert_string_equal(fq_cli_csv_cell(csv, 1, 1), "Bob");
    fq_cli_csv_destroy(&csv);
    //  A lone CR ends a record too
    csv = s_parse("to,name\rann@example.org,Ann\r");
    assert_int_equal(fq_cli_csv_rows(csv), 1);
    assert_string_equal(fq_cli_csv_cell(csv, 0, 1), "Ann");
    assert_int_equal(fq_cli_csv_line(csv, 0), 2);
    fq_cli_csv_destroy(&csv);
}

static void test_quoted_fields(void **state)
{
    (void)state;
    fq_cli_csv_t *csv = s_parse("to,name,note\r\n"
                                "\"ann@example.org\",\"Smith, Ann\",\"said \"\"hi\"\"\"\r\n"
                                "bob@example.org,\"two\r\nlines\",\"\"\r\n"
                                "carl@example.org,Carl,\"a\nb\nc\"\n"
                                "dora@example.org,Dora,last\n");
    assert_int_equal(fq_cli_csv_rows(csv), 4);
    assert_string_equal(fq_cli_csv_cell(csv, 0, 0), "ann@example.org");
    assert_string_equal(fq_cli_csv_cell(csv, 0, 1), "Smith, Ann");
    assert_string_equal(fq_cli_csv_cell(csv, 0, 2), "said \"hi\"");
    //  Line breaks inside quotes are kept as written
    assert_string_equal(fq_cli_csv_cell(csv, 1, 1), "two\r\nlines");
    assert_string_equal(fq_cli_csv_cell(csv, 1, 2), "");
    assert_string_equal(fq_cli_csv_cell(csv, 2, 2), "a\nb\nc");
    //  Lines are physical: the quoted line breaks count
    assert_int_equal(fq_cli_csv_line(csv, 0), 2);
    assert_int_equal(fq_cli_csv_line(csv, 1), 3);
    assert_int_equal(fq_cli_csv_line(csv, 2), 5);
    assert_int_equal(fq_cli_csv_line(csv, 3), 8);
    fq_cli_csv_destroy(&csv);
}

static void test_empty_fields(void **state)
{
    (void)state;
    fq_cli_csv_t *csv = s_parse("to,a,b\nann@example.org,,\nbob@example.org,\"\",x\n");
    assert_string_equal(fq_cli_csv_cell(csv, 0, 1), "");
    assert_string_equal(fq_cli_csv_cell(csv, 0, 2), "");
    assert_string_equal(fq_cli_csv_cell(csv, 1, 1), "");
    assert_string_equal(fq_cli_csv_cell(csv, 1, 2), "x");
    fq_cli_csv_destroy(&csv);
}

static void test_empty_lines_and_bom_skipped(void **state)
{
    (void)state;
    fq_cli_csv_t *csv =
        s_parse("\xEF\xBB\xBF\n\nto,name\n\nann@example.org,Ann\r\n\r\n\nbob@example.org,Bob\n\n");
    assert_string_equal(fq_cli_csv_header(csv, 0), "to"); //  Not "\xEF\xBB\xBFto"
    assert_int_equal(fq_cli_csv_rows(csv), 2);
    assert_int_equal(fq_cli_csv_line(csv, 0), 5);
    assert_int_equal(fq_cli_csv_line(csv, 1), 8);
    fq_cli_csv_destroy(&csv);
}

static void test_nothing_is_trimmed(void **state)
{
    (void)state;
    fq_cli_csv_t *csv = s_parse("to, name\nann@example.org , Ann \n");
    assert_string_equal(fq_cli_csv_header(csv, 1), " name");
    assert_string_equal(fq_cli_csv_cell(csv, 0, 0), "ann@example.org ");
    assert_string_equal(fq_cli_csv_cell(csv, 0, 1), " Ann ");
    fq_cli_csv_destroy(&csv);
}

static void test_utf8_kept(void **state)
{
    (void)state;
    fq_cli_csv_t *csv =
        s_parse("to,name\nzoe@example.org,Zo\xC3\xAB \xE2\x82\xAC \xF0\x9F\x93\xA7\n");
    assert_string_equal(fq_cli_csv_cell(csv, 0, 1), "Zo\xC3\xAB \xE2\x82\xAC \xF0\x9F\x93\xA7");
    fq_cli_csv_destroy(&csv);
}

static void test_header_only(void **state)
{
    (void)state;
    fq_cli_csv_t *csv = s_parse("to,name\n");
    assert_int_equal(fq_cli_csv_rows(csv), 0);
    fq_cli_csv_error_t error = {0};
    assert_null(fq_cli_csv_recipients(csv, &error));
    assert_int_equal(error.line, 1);
    assert_non_null(strstr(error.message, "no recipients"));
    fq_cli_csv_destroy(&csv);
}

static void test_many_rows(void **state)
{
    (void)state;
    size_t size = S_MANY_ROWS * 64 + 64;
    char *text = malloc(size);
    assert_non_null(text);
    size_t len = (size_t)snprintf(text, size, "email,n,\"quoted, name\"\n");
    for (int i = 0; i < S_MANY_ROWS; i++)
        len += (size_t)snprintf(text + len, size - len, "u%d@example.org,%d,\"U \"\"%d\"\"\"\r\n",
                                i, i, i);
    fq_cli_csv_t *csv = s_parse_n(text, len);
    assert_int_equal(fq_cli_csv_rows(csv), S_MANY_ROWS);
    assert_string_equal(fq_cli_csv_cell(csv, S_MANY_ROWS - 1, 2), "U \"19999\"");
    assert_int_equal(fq_cli_csv_line(csv, S_MANY_ROWS - 1), S_MANY_ROWS + 1);
    fq_cli_csv_error_t error;
    json_t *recipients = fq_cli_csv_recipients(csv, &error);
    assert_non_null(recipients);
    assert_int_equal(json_array_size(recipients), S_MANY_ROWS);
    json_decref(recipients);
    fq_cli_csv_destroy(&csv);
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
    //  Names are compared exactly: these are two fields
    fq_cli_csv_t *csv = s_parse("to,Name,name\nann@example.org,A,a\n");
    assert_int_equal(fq_cli_csv_columns(csv), 3);
    fq_cli_csv_destroy(&csv);
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
    s_refuse("to,name\nx@example.org,\xE2\x82", 2, "invalid UTF-8");
    //  Inside a quoted field that spans lines: the line of the byte
    s_refuse("to,name\nx@example.org,\"a\nb\xFF\"\n", 3, "invalid UTF-8");
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
        cmocka_unit_test(test_unterminated_quote),
        cmocka_unit_test(test_quote_misplaced),
        cmocka_unit_test(test_ragged_rows),
        cmocka_unit_test(test_empty_header),
        cmocka_unit_test(test_duplicate_header),
        cmocka_unit_test(test_invalid_utf8),
        cmocka_unit_test(test_nul_byte),
        cmocka_unit_test(test_recipients_from_to_column),
        cmocka_unit_test(test_recipients_from_email_column),
        cmocka_unit_test(test_recipients_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
