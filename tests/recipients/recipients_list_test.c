/*  recipients_list_test.c — a list of recipients walked as text: every
    recipient found whole, in order, whatever its strings hold; fields
    kept exactly as written; a text that is not a list noticed. */
#include "fq_recipients.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
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
    assert_null(s_fields("42"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_recipients_in_order), cmocka_unit_test(test_strings_hold_anything),
        cmocka_unit_test(test_empty_lists),         cmocka_unit_test(test_not_a_list),
        cmocka_unit_test(test_fields_as_written),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
