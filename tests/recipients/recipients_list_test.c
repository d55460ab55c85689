/*  recipients_list_test.c — a list of recipients walked as text: every
    recipient found whole, in order, whatever its strings hold; fields
    kept exactly as written; a text that is not a list noticed. */
#include "fq_recipients.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

//  Most recipients a test list holds.
#define S_FOUND_MAX 8

//  Walks text; writes each recipient found, NUL-terminated, into found.
//  Returns how many, and whether the text was malformed in *malformed.
static size_t s_walk(const char *text, char found[S_FOUND_MAX][128], bool *malformed)
{
    fq_recipients_scan_t scan;
    fq_recipients_scan_start(&scan, text, strlen(text));
    size_t count = 0, size;
    const char *recipient;
    while ((recipient = fq_recipients_scan_next(&scan, &size))) {
        assert_true(count < S_FOUND_MAX);
        assert_true(size < sizeof found[count]);
        memcpy(found[count], recipient, size);
        found[count++][size] = 0;
    }
    *malformed = scan.malformed;
    return count;
}

//  Walks list and expects exactly the recipients wanted, in order.
static void s_expect_found(const char *list, const char *const *wanted, size_t count)
{
    char found[S_FOUND_MAX][128];
    bool malformed;
    assert_int_equal(s_walk(list, found, &malformed), count);
    assert_false(malformed);
    for (size_t i = 0; i < count; i++)
        assert_string_equal(found[i], wanted[i]);
}

static void test_recipients_in_order(void **state)
{
    (void)state;
    const char *wanted[] = {
        "{\"to\": \"a@example.com\"}",
        "{\"to\": \"b@example.com\", \"fields\": {\"n\": [1, {\"x\": 2}]}}",
        "42",
        "\"c@example.com\"",
        "null",
    };
    s_expect_found(" [ {\"to\": \"a@example.com\"},\n\t{\"to\": \"b@example.com\","
                   " \"fields\": {\"n\": [1, {\"x\": 2}]}} , 42,\"c@example.com\",null ] ",
                   wanted, sizeof wanted / sizeof wanted[0]);
}

//  Brackets, braces, commas and escaped quotes inside strings are text.
static void test_strings_hold_anything(void **state)
{
    (void)state;
    const char *wanted[] = {
        "{\"to\": \"a]@x.example\", \"fields\": {\"s\": \"}, {\\\"q\\\": [\"}}",
        "{\"to\": \"\\\\\"}",
    };
    s_expect_found("[{\"to\": \"a]@x.example\", \"fields\": {\"s\": \"}, {\\\"q\\\": [\"}},"
                   "{\"to\": \"\\\\\"}]",
                   wanted, sizeof wanted / sizeof wanted[0]);
}

//  How many recipients a walk of text finds, and whether it ends because
//  the text is not a list.
typedef struct {
    const char *text;
    size_t found;
    bool malformed;
} s_walk_case_t;

static void s_expect_walks(const s_walk_case_t *cases, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        char found[S_FOUND_MAX][128];
        bool malformed;
        size_t n = s_walk(cases[i].text, found, &malformed);
        if (n != cases[i].found || malformed != cases[i].malformed)
            fail_msg("%s: %zu found%s, wanted %zu%s", cases[i].text, n,
                     malformed ? " (malformed)" : "", cases[i].found,
                     cases[i].malformed ? " (malformed)" : "");
    }
}

static void test_empty_lists(void **state)
{
    (void)state;
    const s_walk_case_t cases[] = {
        {"[]", 0, false},
        {" [ \n ] ", 0, false},
        //  What follows the list is not read
        {"[{\"to\": \"a@example.com\"}] trailing", 1, false},
    };
    s_expect_walks(cases, sizeof cases / sizeof cases[0]);
}

//  A text that is not a list of values is noticed where its shape breaks;
//  the recipients before that point were found.
static void test_not_a_list(void **state)
{
    (void)state;
    const s_walk_case_t cases[] = {
        {"", 0, true},
        {"{\"to\": \"a@example.com\"}", 0, true},
        {"[{\"to\": \"a@example.com\"}, {\"to\": \"b", 1, true},
        {"[1 2]", 0, true},
        {"[{\"to\": \"a@example.com\"}", 0, true},
    };
    s_expect_walks(cases, sizeof cases / sizeof cases[0]);
}

static const char *s_fields(const char *recipient)
{
    static char text[128];
    size_t size = 0;
    const char *fields = fq_recipient_fields_text(recipient, strlen(recipient), &size);
    if (!fields)
        return NULL;
    assert_true(size < sizeof text);
    memcpy(text, fields, size);
    text[size] = 0;
    return text;
}

//  A recipient's fields are found as written: numbers keep their digits
//  (0.1 stays 0.1, 1e2 stays 1e2), spacing and order are kept.
static void test_fields_as_written(void **state)
{
    (void)state;
    assert_string_equal(
        s_fields("{\"to\": \"a@example.com\", \"fields\": {\"p\": 0.1, \"q\": 1e2, \"n\": \"A\"}}"),
        "{\"p\": 0.1, \"q\": 1e2, \"n\": \"A\"}");
    assert_string_equal(s_fields("{\"fields\":{},\"to\":\"a@example.com\"}"), "{}");
    //  Only the recipient's own member counts, not one nested deeper or
    //  the word in a string
    assert_string_equal(s_fields("{\"to\": \"\\\"fields\\\"@x.example\", \"x\": {\"fields\": 1},"
                                 " \"fields\" : { \"a\" : [0.10] } }"),
                        "{ \"a\" : [0.10] }");
    assert_null(s_fields("{\"to\": \"a@example.com\"}"));
    assert_null(s_fields("[{\"fields\": {}}]"));
    //  The member jansson reads: a key written with an escape is its
    //  letters, and of two the last
    assert_string_equal(s_fields("{\"to\": \"a@example.com\", \"\\u0066ields\": {\"a\": 1}}"),
                        "{\"a\": 1}");
    assert_string_equal(s_fields("{\"fields\": {\"a\": 1}, \"to\": \"a@example.com\","
                                 " \"fields\": {\"b\": 2}}"),
                        "{\"b\": 2}");
    assert_null(s_fields("42"));
}

//  A list's shape, and the first recipient that has not a recipient's.
typedef struct {
    const char *list;
    const char *problem; //  NULL: every recipient has a recipient's shape
    size_t position;     //  Of the first that has not; else the count
} s_shape_case_t;

static void s_expect_shapes(const s_shape_case_t *cases, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        char reason[FQ_RECIPIENT_REASON_SIZE];
        size_t position = 99;
        const char *problem = fq_recipients_shape_problem(cases[i].list, strlen(cases[i].list),
                                                          &position, reason, sizeof reason);
        if (!problem != !cases[i].problem || (problem && strcmp(problem, cases[i].problem) != 0) ||
            position != cases[i].position)
            fail_msg("%s: [%zu] %s, wanted [%zu] %s", cases[i].list, position,
                     problem ? problem : "(none)", cases[i].position,
                     cases[i].problem ? cases[i].problem : "(none)");
    }
}

//  Recipients of the right shape, whatever their values: those are
//  checked one by one when split (a bad one is rejected alone).
static void test_shape_of_good_lists(void **state)
{
    (void)state;
    const s_shape_case_t cases[] = {
        {"[]", NULL, 0},
        {"[{\"to\": \"a@example.com\"}]", NULL, 1},
        {" [ {\"fields\": {\"to\": 1, \"email\": 2}, \"to\": \"a@example.com\"} ,"
         "{\"to\":\"b@example.com\",\"fields\":null} ] ",
         NULL, 2},
        //  Values are not looked at: a bad address, a "to" that is no
        //  string, a key given twice
        {"[{\"to\": \"not an address\"}, {\"to\": 5}, {\"to\": null, \"to\": \"x\"}]", NULL, 3},
        //  Keys are read as JSON reads them
        {"[{\"\\u0074o\": \"a@example.com\", \"fi\\u0065lds\": {}}]", NULL, 1},
        //  A "to" inside a string or a field is not the recipient's
        {"[{\"to\": \"{\\\"email\\\": 1}\", \"fields\": {\"a\": {\"email\": [\"}\"]}}}]", NULL, 1},
    };
    s_expect_shapes(cases, sizeof cases / sizeof cases[0]);
}

//  The first recipient of another shape is named, with what it is; those
//  after it are not read.
static void test_shape_of_bad_lists(void **state)
{
    (void)state;
    const char *not_to = "expected an object with \"to\"";
    const s_shape_case_t cases[] = {
        {"[\"a@example.com\"]", "expected an object with \"to\", not a string", 0},
        {"[{\"to\": \"a@example.com\"}, 42, \"b@example.com\"]",
         "expected an object with \"to\", not a number", 1},
        {"[-1]", "expected an object with \"to\", not a number", 0},
        {"[null]", "expected an object with \"to\", not null", 0},
        {"[true]", "expected an object with \"to\", not a boolean", 0},
        {"[false]", "expected an object with \"to\", not a boolean", 0},
        {"[[{\"to\": \"a@example.com\"}]]", "expected an object with \"to\", not an array", 0},
        {"[{}]", not_to, 0},
        {"[{\"fields\": {\"name\": \"A\"}}]", not_to, 0},
        {"[{\"email\": \"a@example.com\"}]", "unknown key \"email\" (did you mean \"to\"?)", 0},
        {"[{\"To\": \"a@example.com\"}]", "unknown key \"To\" (did you mean \"to\"?)", 0},
        {"[{\"to\": \"a@example.com\", \"name\": \"A\", \"x\": 1}]",
         "unknown key \"name\" (a recipient has only \"to\" and \"fields\")", 0},
        //  A key as written, escapes and all; a long one cut with "..."
        {"[{\"e\\u006dail\": 1}]", "unknown key \"e\\u006dail\" (did you mean \"to\"?)", 0},
        {"[{\"to\": \"a@example.com\", \"k0123456789k0123456789k0123456789k0123456789k0123456789"
         "k0123456789\": 1}]",
         "unknown key \"k0123456789k0123456789k0123456789k0123456789k0123456789k01234567...\" (a "
         "recipient has only \"to\" and \"fields\")",
         0},
    };
    s_expect_shapes(cases, sizeof cases / sizeof cases[0]);
}

//  A key is cut at a character's boundary, never inside one: the reason
//  goes into JSON, which must be UTF-8.
static void test_shape_reason_is_utf8(void **state)
{
    (void)state;
    char list[256] = "[{\"";
    for (int i = 0; i < 40; i++)
        strcat(list, "\xc3\xa9"); //  80 bytes of e-acute
    strcat(list, "\": 1}]");
    char reason[FQ_RECIPIENT_REASON_SIZE];
    size_t position;
    const char *problem =
        fq_recipients_shape_problem(list, strlen(list), &position, reason, sizeof reason);
    assert_non_null(problem);
    //  64 bytes fit 32 characters of two bytes whole
    char wanted[FQ_RECIPIENT_REASON_SIZE] = "unknown key \"";
    for (int i = 0; i < 32; i++)
        strcat(wanted, "\xc3\xa9");
    strcat(wanted, "...\" (did you mean \"to\"?)");
    assert_string_equal(problem, wanted);
}

//  A long list is walked once, without building anything: a fault at its
//  end is found, at its index.
static void test_shape_of_a_long_list(void **state)
{
    (void)state;
    const char one[] = "{\"to\": \"someone@example.com\", \"fields\": {\"name\": \"Someone\"}},";
    const size_t count = 100000;
    size_t size = 1 + count * (sizeof one - 1) + strlen("\"late@example.com\"]");
    char *list = malloc(size + 1);
    assert_non_null(list);
    char *at = list;
    *at++ = '[';
    for (size_t i = 0; i < count; i++, at += sizeof one - 1)
        memcpy(at, one, sizeof one - 1);
    strcpy(at, "\"late@example.com\"]");
    char reason[FQ_RECIPIENT_REASON_SIZE];
    size_t position;
    assert_string_equal(fq_recipients_shape_problem(list, size, &position, reason, sizeof reason),
                        "expected an object with \"to\", not a string");
    assert_int_equal(position, count);
    free(list);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_recipients_in_order),  cmocka_unit_test(test_strings_hold_anything),
        cmocka_unit_test(test_empty_lists),          cmocka_unit_test(test_not_a_list),
        cmocka_unit_test(test_fields_as_written),    cmocka_unit_test(test_shape_of_good_lists),
        cmocka_unit_test(test_shape_of_bad_lists),   cmocka_unit_test(test_shape_reason_is_utf8),
        cmocka_unit_test(test_shape_of_a_long_list),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
