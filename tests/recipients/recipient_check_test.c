/*  recipient_check_test.c — one recipient of a request, as the splitter
    judges it: what passes, the reason a tenant reads for each refusal,
    reasons that stay valid UTF-8 and within their size whatever the
    recipient holds. */
#include "fq_recipients.h"
#include "fq_utf8.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  A request whose subject uses {{ name }} and whose body uses
//  {{ footer }}: name goes into a mail header, footer does not.
static const char *const S_FIELDS[] = {"name", "footer"};
static const fq_recipient_rules_t S_RULES = {S_FIELDS, 2, 1, false};

//  Why the recipient written as json is refused (NULL: it is not), into
//  reason; checks that what is said is valid UTF-8 and fits.
static const char *s_check(const char *json, char *reason, size_t reason_size)
{
    json_t *recipient = NULL;
    const char *problem =
        fq_recipient_read(json, strlen(json), &S_RULES, &recipient, reason, reason_size);
    json_decref(recipient);
    if (problem) {
        assert_true(strlen(problem) < FQ_RECIPIENT_REASON_SIZE);
        assert_true(fq_utf8_valid(problem, strlen(problem)));
    }
    return problem;
}

static void s_expect(const char *json, const char *wanted)
{
    char reason[FQ_RECIPIENT_REASON_SIZE];
    const char *problem = s_check(json, reason, sizeof reason);
    if (!wanted && problem)
        fail_msg("%s: refused (\"%s\")", json, problem);
    if (wanted && (!problem || strcmp(problem, wanted) != 0))
        fail_msg("%s: \"%s\", wanted \"%s\"", json, problem ? problem : "(good)", wanted);
}

static void test_good_recipients_pass(void **state)
{
    (void)state;
    s_expect("{\"to\": \"a@example.com\", \"fields\": {\"name\": \"A\", \"footer\": \"F\"}}", NULL);
    //  Numbers and booleans are values too; unused fields are allowed
    s_expect("{\"to\": \"a@example.com\", \"fields\": {\"name\": 1.5, \"footer\": true,"
             " \"extra\": 7}}",
             NULL);
    //  A line break is allowed where it does not reach a header
    s_expect(
        "{\"to\": \"a@example.com\", \"fields\": {\"name\": \"A\", \"footer\": \"two\\nlines\"}}",
        NULL);
}

static void test_each_refusal_is_named(void **state)
{
    (void)state;
    s_expect("42", "recipient is not an object");
    s_expect("\"a@example.com\"", "recipient is not an object");
    s_expect("[\"a@example.com\"]", "recipient is not an object");
    s_expect("null", "recipient is not an object");
    s_expect("{\"fields\": {\"name\": \"A\", \"footer\": \"F\"}}",
             "recipient has no \"to\" string");
    s_expect("{\"to\": 42}", "recipient has no \"to\" string");
    s_expect("{\"to\": null}", "recipient has no \"to\" string");
    s_expect("{\"to\": \"no-at.example.com\"}", "address is not local@domain");
    s_expect("{\"to\": \"a@example.com\\r\\nBcc: all@example.com\"}", "address contains CR or LF");
    s_expect("{\"to\": \"a@example.com\", \"fields\": [\"name\"]}", "\"fields\" is not an object");
    s_expect("{\"to\": \"a@example.com\", \"fields\": \"name\"}", "\"fields\" is not an object");
    s_expect("{\"to\": \"a@example.com\", \"fields\": {\"name\": {\"first\": \"A\"},"
             " \"footer\": \"F\"}}",
             "field \"name\" is not a string, number or boolean");
    s_expect("{\"to\": \"a@example.com\", \"fields\": {\"name\": \"A\", \"footer\": \"F\","
             " \"deep\": [1]}}",
             "field \"deep\" is not a string, number or boolean");
    s_expect("{\"to\": \"a@example.com\", \"fields\": {\"name\": null, \"footer\": \"F\"}}",
             "field \"name\" is not a string, number or boolean");
    s_expect("{\"to\": \"a@example.com\", \"fields\": {\"footer\": \"F\"}}",
             "field \"name\" used by the template is missing");
    s_expect("{\"to\": \"a@example.com\", \"fields\": {\"name\": \"A\"}}",
             "field \"footer\" used by the template is missing");
    s_expect("{\"to\": \"a@example.com\"}", "field \"name\" used by the template is missing");
    s_expect("{\"to\": \"a@example.com\", \"fields\": null}",
             "field \"name\" used by the template is missing");
    s_expect("{\"to\": \"a@example.com\", \"fields\": {\"name\": \"A\\r\\nBcc: all@example.com\","
             " \"footer\": \"F\"}}",
             "field \"name\" goes into the subject and holds CR, LF or NUL");
}

//  A NUL in a header field ends the header early; jansson reads no NUL
//  from text, so the recipient is built here.
static void test_nul_in_a_header_field(void **state)
{
    (void)state;
    json_t *recipient = json_pack("{s:s, s:{s:s#, s:s}}", "to", "a@example.com", "fields", "name",
                                  "A\0B", (int)3, "footer", "F");
    assert_non_null(recipient);
    char reason[FQ_RECIPIENT_REASON_SIZE];
    assert_string_equal(fq_recipient_problem(recipient, &S_RULES, reason, sizeof reason),
                        "field \"name\" goes into the subject and holds CR, LF or NUL");
    json_decref(recipient);
}

//  Without rules, nothing is required: a recipient with no fields passes.
static void test_no_rules_require_nothing(void **state)
{
    (void)state;
    json_t *recipient = NULL;
    char reason[FQ_RECIPIENT_REASON_SIZE];
    const char *text = "{\"to\": \"a@example.com\"}";
    assert_null(fq_recipient_read(text, strlen(text), NULL, &recipient, reason, sizeof reason));
    json_decref(recipient);
}

//  What jansson cannot hold refuses that recipient only, saying why.
static const char S_UNREADABLE[] = "recipient could not be read: ";

static void test_unreadable_recipient(void **state)
{
    (void)state;
    const char *texts[] = {
        "{\"to\": \"a@example.com\", \"fields\": {\"name\": \"A\", \"n\": 1e400}}",
        "{\"to\": \"a@example.com\", \"fields\": {\"n\": 123456789012345678901234567890}}",
        "{\"to\": \"a@example.com\"",
        "{\"to\": \"caf\xc3\"}",                  //  Cut inside a character
        "{\"to\": \"\xed\xa0\x80@example.com\"}", //  A surrogate
    };
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        char reason[FQ_RECIPIENT_REASON_SIZE];
        json_t *recipient = json_true(); //  Must be overwritten
        const char *problem = fq_recipient_read(texts[i], strlen(texts[i]), &S_RULES, &recipient,
                                                reason, sizeof reason);
        assert_null(recipient);
        assert_non_null(problem);
        if (strncmp(problem, S_UNREADABLE, strlen(S_UNREADABLE)) != 0)
            fail_msg("%s: \"%s\"", texts[i], problem);
        assert_true(fq_utf8_valid(problem, strlen(problem)));
    }
}

//  A field name is quoted up to 64 bytes, cut between characters, never
//  inside one: a reason holding half a character would be refused by the
//  database, and the whole chunk with it.
static void test_long_field_names_are_cut_on_a_character(void **state)
{
    (void)state;
    //  "a" then 40 é (2 bytes each): byte 64 falls inside an é
    char name[128] = "a";
    for (int i = 0; i < 40; i++)
        strcat(name, "\xc3\xa9");
    char json[512];
    snprintf(json, sizeof json,
             "{\"to\": \"a@example.com\", \"fields\": {\"name\": \"A\", \"footer\": \"F\","
             " \"%s\": {}}}",
             name);
    char reason[FQ_RECIPIENT_REASON_SIZE];
    const char *problem = s_check(json, reason, sizeof reason);
    assert_non_null(problem);
    char wanted[FQ_RECIPIENT_REASON_SIZE];
    snprintf(wanted, sizeof wanted, "field \"%.63s\" is not a string, number or boolean", name);
    assert_string_equal(problem, wanted);

    //  A name of a thousand bytes: the reason still fits
    char huge[1100];
    memset(huge, 'x', 1000);
    huge[1000] = 0;
    char *long_json = malloc(1200);
    assert_non_null(long_json);
    snprintf(long_json, 1200, "{\"to\": \"a@example.com\", \"fields\": {\"%s\": []}}", huge);
    problem = s_check(long_json, reason, sizeof reason);
    assert_non_null(problem);
    assert_non_null(strstr(problem, "field \"xxxx"));
    assert_non_null(strstr(problem, "\" is not a string, number or boolean"));
    free(long_json);
}

//  The address of a recipient, for a reject row: NULL unless a "to" string.
static void test_to(void **state)
{
    (void)state;
    json_t *recipient = json_loads("{\"to\": \"a@example.com\"}", 0, NULL);
    size_t size = 0;
    assert_string_equal(fq_recipient_to(recipient, &size), "a@example.com");
    assert_int_equal(size, strlen("a@example.com"));
    json_decref(recipient);
    recipient = json_loads("{\"to\": 42}", 0, NULL);
    assert_null(fq_recipient_to(recipient, NULL));
    json_decref(recipient);
    recipient = json_loads("[\"a@example.com\"]", 0, NULL);
    assert_null(fq_recipient_to(recipient, NULL));
    json_decref(recipient);
    assert_null(fq_recipient_to(NULL, NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_recipients_pass),
        cmocka_unit_test(test_each_refusal_is_named),
        cmocka_unit_test(test_nul_in_a_header_field),
        cmocka_unit_test(test_no_rules_require_nothing),
        cmocka_unit_test(test_unreadable_recipient),
        cmocka_unit_test(test_long_field_names_are_cut_on_a_character),
        cmocka_unit_test(test_to),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
