/*  table_test.c — output for people: aligned tables, ages, and the
    escaping that keeps text from far away (an SMTP server's error, a
    recipient as a tenant wrote it) from driving the terminal.
*/
#include "fq_cli_table.h"
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#define S_TEXT_SIZE 64

//  What the table prints, as a string the caller frees.
static char *s_print(const fq_cli_table_t *table, size_t max_rows)
{
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    assert_non_null(out);
    fq_cli_table_print(table, out, max_rows, "\n");
    fclose(out);
    return text;
}

static void test_table_aligned(void **state)
{
    (void)state;
    static const char *const headers[] = {"NAME", "DEPTH", "NOTE"};
    fq_cli_table_t *table = fq_cli_table_new(headers, "lrl");
    assert_non_null(table);
    fq_cli_table_add(table, "acme");
    fq_cli_table_add(table, "1500");
    fq_cli_table_add(table, "busy");
    fq_cli_table_add(table, "caf\xC3\xA9"); //  Four characters, five bytes
    fq_cli_table_add(table, "7");
    fq_cli_table_add(table, NULL);
    assert_int_equal(fq_cli_table_rows(table), 2);
    char *text = s_print(table, SIZE_MAX);
    assert_string_equal(text, "NAME  DEPTH  NOTE\n"
                              "acme   1500  busy\n"
                              "caf\xC3\xA9      7  -\n");
    free(text);
    text = s_print(table, 1);
    assert_string_equal(text, "NAME  DEPTH  NOTE\n"
                              "acme   1500  busy\n");
    free(text);
    fq_cli_table_destroy(&table);
    assert_null(table);
}

static void test_json_values(void **state)
{
    (void)state;
    char text[S_TEXT_SIZE];
    json_t *v = json_integer(42);
    fq_cli_format_value(text, sizeof text, v);
    assert_string_equal(text, "42");
    json_decref(v);
    v = json_real(850.54);
    fq_cli_format_value(text, sizeof text, v);
    assert_string_equal(text, "850.5");
    json_decref(v);
    fq_cli_format_value(text, sizeof text, json_null());
    assert_string_equal(text, "-");
    fq_cli_format_value(text, sizeof text, NULL);
    assert_string_equal(text, "-");
    fq_cli_format_value(text, sizeof text, json_true());
    assert_string_equal(text, "yes");
}

static void test_ages(void **state)
{
    (void)state;
    static const struct {
        double seconds;
        const char *text;
    } ages[] = {{0, "0s"},        {42.9, "42s"},     {60, "1m00s"},
                {303, "5m03s"},   {3600, "1h00m"},   {7500, "2h05m"},
                {86400, "1d00h"}, {273600, "3d04h"}, {-1, "-"}};
    char text[S_TEXT_SIZE];
    for (size_t i = 0; i < sizeof ages / sizeof *ages; i++) {
        fq_cli_format_age(text, sizeof text, ages[i].seconds);
        assert_string_equal(text, ages[i].text);
    }
    fq_cli_format_age_value(text, sizeof text, json_null());
    assert_string_equal(text, "-");
}

static void test_escaped(void **state)
{
    (void)state;
    char text[FQ_CLI_VALUE_SIZE];
    //  A terminal escape (clear the screen), line breaks, a C1 control (CSI)
    fq_cli_escape(text, sizeof text,
                  "550 \x1b[2Jgone\r\nX\x7f\xC2\x9B"
                  "1m");
    assert_string_equal(text, "550 \\x1B[2Jgone\\r\\nX\\x7F\\u009B1m");
    //  Invalid UTF-8 is escaped, valid is kept
    fq_cli_escape(text, sizeof text, "Zo\xEB \xC3\xAB");
    assert_string_equal(text, "Zo\\xEB \xC3\xAB");
    //  Long text is cut
    char longer[FQ_CLI_CELL_MAX * 2];
    memset(longer, 'a', sizeof longer - 1);
    longer[sizeof longer - 1] = 0;
    fq_cli_escape(text, sizeof text, longer);
    assert_int_equal(strlen(text), FQ_CLI_CELL_MAX + 3);
    assert_string_equal(text + FQ_CLI_CELL_MAX, "...");
    //  A small buffer is never overrun
    char small[8];
    fq_cli_escape(small, sizeof small, "\x01\x02\x03\x04\x05");
    assert_true(strlen(small) < sizeof small);
}

static void test_cells_escaped(void **state)
{
    (void)state;
    static const char *const headers[] = {"ERROR"};
    fq_cli_table_t *table = fq_cli_table_new(headers, "l");
    fq_cli_table_add(table, "\x1b]0;pwned\x07");
    char *text = s_print(table, SIZE_MAX);
    assert_null(strchr(text, '\x1b'));
    assert_null(strchr(text, '\x07'));
    free(text);
    fq_cli_table_destroy(&table);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_aligned), cmocka_unit_test(test_json_values),
        cmocka_unit_test(test_ages),          cmocka_unit_test(test_escaped),
        cmocka_unit_test(test_cells_escaped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
