/*  json_check_test.c — the HTTP API's JSON check (fq_api_json.c), which
    takes a body as jansson would without building it: held against
    jansson itself on a corpus of hostile documents and on thousands of
    mutations of a submit body, and the walk over the top object's
    members, which hands the recipients on as the slice of the body they
    are. */
#include "fq_api_internal.h"
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

//  Mutations of the submit body, each a few bytes changed.
#define S_MUTATIONS      20000
#define S_MUTATION_EDITS 3

//  jansson's nesting limit, and one past it.
#define S_DEPTH_MAX 2048

//  Whether jansson takes the size bytes at text (as fairqd's handlers did,
//  any value at the top).
static bool s_jansson_takes(const char *text, size_t size)
{
    json_t *json = json_loadb(text, size, JSON_DECODE_ANY, NULL);
    json_decref(json);
    return json != NULL;
}

//  fq_api_json_valid, on a copy ending in a NUL as a body does.
static bool s_valid(const char *text, size_t size)
{
    char *copy = malloc(size + 1);
    assert_non_null(copy);
    memcpy(copy, text, size);
    copy[size] = '\0';
    char error[256];
    bool valid = fq_api_json_valid(copy, size, error, sizeof error);
    if (!valid)
        assert_non_null(strstr(error, "malformed JSON at byte "));
    free(copy);
    return valid;
}

static void s_expect_as_jansson(const char *text, size_t size)
{
    bool jansson = s_jansson_takes(text, size), ours = s_valid(text, size);
    if (jansson != ours)
        fail_msg("%s takes \"%.*s\" (%zu bytes) and %s does not", jansson ? "jansson" : "fairq",
                 (int)(size < 200 ? size : 200), text, size, jansson ? "fairq" : "jansson");
}

static const char *const S_CORPUS[] = {
    "{}",
    "[]",
    "{\"a\":1}",
    " {\"a\" : [1, 2.5, -0, 1e5, 1E-5, true, false, null]} ",
    "\"x\"",
    "42",
    "-",
    "01",
    "1.",
    ".5",
    "1e",
    "1e+",
    "-0.0e-0",
    "+1",
    "0x10",
    "Infinity",
    "NaN",
    "1e309",
    "-1e309",
    "1e-400",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775808",
    "-9223372036854775809",
    "99999999999999999999",
    "{\"a\"}",
    "{\"a\":}",
    "{,}",
    "[,]",
    "[1,]",
    "{\"a\":1,}",
    "[1 2]",
    "{\"a\" 1}",
    "{1:1}",
    "tru",
    "nul",
    "truex",
    "[true false]",
    "\"\\u0000\"",
    "\"\\u00e9\"",
    "\"\\ud83d\\ude00\"",
    "\"\\ud83d\"",
    "\"\\ude00\"",
    "\"\\ud83dx\"",
    "\"\\ud83d\\u0041\"",
    "\"\\uZZZZ\"",
    "\"\\u12\"",
    "\"\\x\"",
    "\"\\/\\b\\f\\n\\r\\t\\\"\\\\\"",
    "\"a\tb\"",
    "\"a\nb\"",
    "\"\x7f\"",
    "\"\xc3\xa9\"",
    "\"\xc3\"",
    "\"\xc0\xaf\"",
    "\"\xed\xa0\x80\"",
    "\"\xf4\x90\x80\x80\"",
    "\"\xe2\x82\"",
    "\"\xf0\x9d\x84\x9e\"",
    "\xef\xbb\xbf{}",
    "{}x",
    "{}{}",
    "",
    " ",
    "\"unterminated",
    "[\"a\",",
    "{\"a\":\"b\"",
    "[[[]]]",
    "{\"a\":{\"b\":{\"c\":[]}}}",
    "[1]\n",
    "\t[1]\r\n",
};

//  Every document of the corpus is taken by both or neither.
static void test_corpus(void **unused)
{
    (void)unused;
    for (size_t i = 0; i < sizeof S_CORPUS / sizeof S_CORPUS[0]; i++)
        s_expect_as_jansson(S_CORPUS[i], strlen(S_CORPUS[i]));
    //  A NUL byte inside the document, and inside a string
    s_expect_as_jansson("{}\0", 3);
    s_expect_as_jansson("\"a\0b\"", 5);
}

//  Nesting as deep as jansson takes, and one level more: empty arrays,
//  a number inside them, objects.
static void test_depth(void **unused)
{
    (void)unused;
    for (size_t depth = S_DEPTH_MAX - 1; depth <= S_DEPTH_MAX + 1; depth++) {
        char *text = malloc(2 * depth + 2);
        assert_non_null(text);
        memset(text, '[', depth);
        memset(text + depth, ']', depth);
        s_expect_as_jansson(text, 2 * depth);
        text[depth] = '1';
        memset(text + depth + 1, ']', depth);
        s_expect_as_jansson(text, 2 * depth + 1);
        free(text);
    }
    char deep[(S_DEPTH_MAX + 1) * 6 + 2];
    for (size_t levels = S_DEPTH_MAX - 1; levels <= S_DEPTH_MAX + 1; levels++) {
        size_t at = 0;
        for (size_t i = 0; i < levels; i++)
            at += (size_t)sprintf(deep + at, "{\"a\":");
        deep[at++] = '1';
        memset(deep + at, '}', levels);
        s_expect_as_jansson(deep, at + levels);
    }
}

//  Thousands of mutations of a submit body (bytes replaced by ones JSON
//  cares about): the check and jansson agree on every one.
static void test_mutations(void **unused)
{
    (void)unused;
    const char *body =
        "{\"tenant\": \"acme\", \"from\": \"news@acme.example\", \"subject\": \"Hi "
        "{{name}} \\u00e9\\ud83d\\ude00\", \"body\": \"Dear {{name}},\\n\", \"html\": "
        "false, \"priority\": -12, \"send_at\": 1.5e3, \"recipients\": [{\"to\": "
        "\"ann@example.org\", \"fields\": {\"name\": \"Ann\", \"n\": 1e-3}}, null]}";
    const char alphabet[] = "{}[]\",:\\u0123456789eE.+- \t\nabtrfnl\xc3\xa9\xed\xff\x01";
    size_t size = strlen(body);
    char *text = malloc(size + 1);
    assert_non_null(text);
    srand(42);
    int taken = 0;
    for (int m = 0; m < S_MUTATIONS; m++) {
        memcpy(text, body, size + 1);
        for (int e = 0; e < S_MUTATION_EDITS; e++)
            text[rand() % (int)size] = alphabet[rand() % (int)(sizeof alphabet - 1)];
        size_t length = m % 7 ? size : (size_t)(rand() % (int)size); //  Some cut short
        s_expect_as_jansson(text, length);
        taken += s_jansson_takes(text, length);
    }
    assert_true(taken > 0 && taken < S_MUTATIONS);
    free(text);
}

typedef struct {
    char keys[8][32];
    char values[8][256];
    int count;
} s_members_t;

static int s_member(void *arg, const char *key, size_t key_size, const char *value,
                    size_t value_size)
{
    s_members_t *members = arg;
    assert_true(members->count < 8);
    snprintf(members->keys[members->count], 32, "%.*s", (int)key_size, key);
    snprintf(members->values[members->count], 256, "%.*s", (int)value_size, value);
    members->count++;
    return 0;
}

//  The top object's members come as the slices of the text they are:
//  keys quoted, values whole (strings with escaped quotes and brackets,
//  nested containers), whatever the blanks around them.
static void test_members(void **unused)
{
    (void)unused;
    const char *text = " { \"a\" : \"x\\\"]}\" ,\"b\":[1,{\"c\":\"]\"},[]] , \"c\\u0064\":-1.5e3,"
                       "\"e\":{} ,\"f\":true\n}\n";
    assert_true(s_valid(text, strlen(text)));
    s_members_t members = {0};
    assert_int_equal(fq_api_json_members(text, strlen(text), s_member, &members), 0);
    assert_int_equal(members.count, 5);
    assert_string_equal(members.keys[0], "\"a\"");
    assert_string_equal(members.values[0], "\"x\\\"]}\"");
    assert_string_equal(members.values[1], "[1,{\"c\":\"]\"},[]]");
    assert_string_equal(members.keys[2], "\"c\\u0064\"");
    assert_string_equal(members.values[2], "-1.5e3");
    assert_string_equal(members.values[3], "{}");
    assert_string_equal(members.values[4], "true");
    assert_true(fq_api_json_array_empty("[ \n ]", 5));
    assert_false(fq_api_json_array_empty("[1]", 3));
    assert_false(fq_api_json_array_empty("{}", 2));
    s_members_t none = {0};
    assert_int_equal(fq_api_json_members("{ }", 3, s_member, &none), 0);
    assert_int_equal(none.count, 0);
    assert_int_equal(fq_api_json_members("[1]", 3, s_member, &none), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_corpus),
        cmocka_unit_test(test_depth),
        cmocka_unit_test(test_mutations),
        cmocka_unit_test(test_members),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
