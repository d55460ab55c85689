/*  recipient_key_test.c — the recipients of a channel other than mail: a
    "to" that is a key naming the recipient, not an address (an http
    request's recipient "cust-42"), its rule, and the header fields of such
    a request (its HTTP headers') refused with CR or LF. */
#include "fq_recipients.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

//  An http request whose header values use {{ token }} and whose body
//  uses {{ text }}: the key rule, and token goes into a header.
static const char *const S_FIELDS[] = {"token", "text"};
static const fq_recipient_rules_t S_KEY_RULES = {S_FIELDS, 2, 1, true};

static const char *s_check(const char *json, const fq_recipient_rules_t *rules, char *reason)
{
    json_t *recipient = NULL;
    const char *problem =
        fq_recipient_read(json, strlen(json), rules, &recipient, reason, FQ_RECIPIENT_REASON_SIZE);
    json_decref(recipient);
    return problem;
}

static void test_key_rule(void **state)
{
    (void)state;
    assert_null(fq_recipient_key_problem("cust-42", 7));
    assert_null(fq_recipient_key_problem("Ann Example <not an address>", 28));
    assert_null(fq_recipient_key_problem("k\xc3\xa9y", 4)); //  UTF-8
    char longest[FQ_RECIPIENT_KEY_MAX + 1];
    memset(longest, 'k', sizeof longest);
    assert_null(fq_recipient_key_problem(longest, FQ_RECIPIENT_KEY_MAX));
    assert_string_equal(fq_recipient_key_problem(longest, FQ_RECIPIENT_KEY_MAX + 1),
                        "recipient key longer than 320 bytes");
    assert_string_equal(fq_recipient_key_problem("", 0), "empty recipient key");
    const char *controls[] = {"a\rb", "a\nb", "a\tb", "a\x7f", "a\xc2\x85", "a\0b"};
    for (size_t i = 0; i < sizeof controls / sizeof *controls; i++)
        assert_string_equal(fq_recipient_key_problem(controls[i], 3),
                            "recipient key contains a control character");
    assert_string_equal(fq_recipient_key_problem("a\xc3", 2), "recipient key is not valid UTF-8");
}

static void test_key_recipients(void **state)
{
    (void)state;
    char reason[FQ_RECIPIENT_REASON_SIZE];
    //  A key is no address, and needs to be none
    assert_null(s_check("{\"to\": \"cust-42\", \"fields\": {\"token\": \"t\", \"text\": \"x\"}}",
                        &S_KEY_RULES, reason));
    //  The same recipient under mail's rules: not an address
    fq_recipient_rules_t mail = S_KEY_RULES;
    mail.key_only = false;
    assert_string_equal(s_check("{\"to\": \"cust-42\", \"fields\": {\"token\": \"t\", \"text\": "
                                "\"x\"}}",
                                &mail, reason),
                        "address is not local@domain");
    assert_string_equal(s_check("{\"to\": \"\", \"fields\": {\"token\": \"t\", \"text\": \"x\"}}",
                                &S_KEY_RULES, reason),
                        "empty recipient key");
    assert_string_equal(s_check("{\"to\": \"a\\u0085b\", \"fields\": {}}", &S_KEY_RULES, reason),
                        "recipient key contains a control character");
    assert_string_equal(s_check("{\"fields\": {}}", &S_KEY_RULES, reason),
                        "recipient has no \"to\" string");
    //  A header's field on two lines: refused, naming where it goes
    assert_string_equal(s_check("{\"to\": \"k\", \"fields\": {\"token\": \"a\\r\\nX: y\","
                                " \"text\": \"two\\nlines\"}}",
                                &S_KEY_RULES, reason),
                        "field \"token\" goes into a header and holds CR, LF or NUL");
    assert_string_equal(
        s_check("{\"to\": \"k\", \"fields\": {\"token\": \"t\"}}", &S_KEY_RULES, reason),
        "field \"text\" used by the template is missing");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_key_rule),
        cmocka_unit_test(test_key_recipients),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
