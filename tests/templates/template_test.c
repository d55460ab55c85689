/*  template_test.c — message templates, as the splitter and dispatcher use them.

    The splitter parses a request's subject and body once
    (fq_template_new), checks every recipient's fields against them
    (fq_template_check_fields) and the dispatcher renders each message just
    before sending (fq_template_render_json). Templates and fields both come
    from tenants, so every malformed template must be refused with a message
    naming the byte at fault, and no value may ever change the structure of
    what is sent: no markup in HTML bodies, no extra header lines, no
    second round of substitution.
*/
#include "fq_error.h"
#include "fq_template.h"
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

//  The number of tags in the large templates: far more than any real
//  template, enough that a quadratic render would take minutes.
#define S_MANY 100000

// --------------------------------------------------------------------------
//  Helpers

//  Parses JSON text (the fields of one recipient, as the HTTP API gets them).
static json_t *s_json(const char *text)
{
    json_error_t error;
    json_t *json = json_loads(text, JSON_DECODE_ANY, &error);
    if (!json)
        fail_msg("bad test JSON %s: %s", text, error.text);
    return json;
}

//  Parses a template that must be valid.
static fq_template_t *s_template(const char *text, fq_template_mode_t mode)
{
    char error[FQ_TEMPLATE_ERROR_SIZE];
    fq_template_t *self = fq_template_new(text, mode, error, sizeof error);
    if (!self)
        fail_msg("template \"%s\" refused: %s", text, error);
    return self;
}

//  Renders text in mode with the JSON fields and checks the result is
//  exactly expected (expected_len bytes, for results holding odd bytes).
static void s_expect_render_n(const char *text, fq_template_mode_t mode, const char *fields_json,
                              const char *expected, size_t expected_len)
{
    fq_template_t *self = s_template(text, mode);
    json_t *fields = s_json(fields_json);
    char error[FQ_TEMPLATE_ERROR_SIZE];
    assert_int_equal(fq_template_check_fields(self, fields, error, sizeof error), 0);
    char *out;
    size_t out_len;
    int rc = fq_template_render_json(self, fields, &out, &out_len, error, sizeof error);
    if (rc != 0)
        fail_msg("render of \"%s\" failed: %s (%s)", text, error, fq_err_name(rc));
    assert_int_equal(out_len, expected_len);
    assert_memory_equal(out, expected, expected_len);
    assert_int_equal(out[out_len], 0);
    free(out);
    json_decref(fields);
    fq_template_destroy(&self);
}

static void s_expect_render(const char *text, fq_template_mode_t mode, const char *fields_json,
                            const char *expected)
{
    s_expect_render_n(text, mode, fields_json, expected, strlen(expected));
}

//  Renders text with fields, which must fail with code and exactly message,
//  from both fq_template_check_fields and fq_template_render_json.
static void s_expect_render_error(const char *text, fq_template_mode_t mode,
                                  const char *fields_json, int code, const char *message)
{
    fq_template_t *self = s_template(text, mode);
    json_t *fields = s_json(fields_json);
    char error[FQ_TEMPLATE_ERROR_SIZE];
    assert_int_equal(fq_template_check_fields(self, fields, error, sizeof error), code);
    assert_string_equal(error, message);

    char *out = (char *)"not touched";
    size_t out_len = 1;
    error[0] = 0;
    assert_int_equal(fq_template_render_json(self, fields, &out, &out_len, error, sizeof error),
                     code);
    assert_string_equal(error, message);
    //  Never a partial result
    assert_null(out);
    assert_int_equal(out_len, 0);
    json_decref(fields);
    fq_template_destroy(&self);
}

//  Parses text, which must be refused with exactly message.
static void s_expect_parse_error(const char *text, fq_template_mode_t mode, const char *message)
{
    char error[FQ_TEMPLATE_ERROR_SIZE] = "";
    fq_template_t *self = fq_template_new(text, mode, error, sizeof error);
    if (self)
        fail_msg("template \"%s\" accepted, expected: %s", text, message);
    if (strcmp(error, message) != 0)
        fail_msg("template \"%s\"\n  refused with: %s\n  expected:     %s", text, error, message);
}

//  A recipient's fields as name/value pairs, for fq_template_render with a
//  lookup callback; counts the lookups.
typedef struct {
    const char *const *pairs; //  name, value, name, value, ..., NULL
    size_t lookups;
} s_pairs_t;

static const char *s_pairs_lookup(void *arg, const char *name)
{
    s_pairs_t *fields = arg;
    fields->lookups++;
    for (size_t k = 0; fields->pairs[k]; k += 2)
        if (strcmp(fields->pairs[k], name) == 0)
            return fields->pairs[k + 1];
    return NULL;
}

//  Builds a string of count copies of unit; the caller frees it.
static char *s_repeat(const char *unit, size_t count)
{
    size_t unit_len = strlen(unit);
    char *text = malloc(unit_len * count + 1);
    assert_non_null(text);
    for (size_t k = 0; k < count; k++)
        memcpy(text + k * unit_len, unit, unit_len);
    text[unit_len * count] = 0;
    return text;
}

// --------------------------------------------------------------------------
//  Substitution

//  {{ name }} becomes the recipient's field; text around tags is kept.
static void test_substitution(void **unused)
{
    (void)unused;
    s_expect_render("Hello {{name}}, order {{order}} has shipped.", FQ_TEMPLATE_PLAIN,
                    "{\"name\": \"Ada\", \"order\": \"A-17\", \"unused\": \"x\"}",
                    "Hello Ada, order A-17 has shipped.");
    s_expect_render("{{name}}", FQ_TEMPLATE_PLAIN, "{\"name\": \"only\"}", "only");
    s_expect_render("{{a}}{{b}}", FQ_TEMPLATE_PLAIN, "{\"a\": \"1\", \"b\": \"2\"}", "12");
    s_expect_render("no tags at all", FQ_TEMPLATE_HTML, "{}", "no tags at all");
    s_expect_render("", FQ_TEMPLATE_PLAIN, "{}", "");
    s_expect_render("empty value: [{{v}}]", FQ_TEMPLATE_PLAIN, "{\"v\": \"\"}", "empty value: []");
    s_expect_render("caf\xc3\xa9 {{ who }} \xe2\x82\xac", FQ_TEMPLATE_PLAIN,
                    "{\"who\": \"Jos\\u00e9\"}", "caf\xc3\xa9 Jos\xc3\xa9 \xe2\x82\xac");
}

//  Every name the grammar allows is usable; a dot is part of the name, not
//  a path into nested objects.
static void test_field_names(void **unused)
{
    (void)unused;
    s_expect_render("{{_}}{{a.b-c_9}}{{Z}}", FQ_TEMPLATE_PLAIN,
                    "{\"_\": \"u\", \"a.b-c_9\": \"d\", \"Z\": \"z\"}", "udz");
    s_expect_render_error("{{user.first}}", FQ_TEMPLATE_PLAIN, "{\"user\": {\"first\": \"Ada\"}}",
                          FQ_ENOFIELD, "missing field \"user.first\"");

    char longest[FQ_TEMPLATE_NAME_MAX + 1];
    memset(longest, 'n', FQ_TEMPLATE_NAME_MAX);
    longest[FQ_TEMPLATE_NAME_MAX] = 0;
    char text[FQ_TEMPLATE_NAME_MAX + 8];
    char fields[FQ_TEMPLATE_NAME_MAX + 16];
    snprintf(text, sizeof text, "{{%s}}", longest);
    snprintf(fields, sizeof fields, "{\"%s\": \"ok\"}", longest);
    s_expect_render(text, FQ_TEMPLATE_PLAIN, fields, "ok");
}

//  Whitespace (space, tab, CR, LF) may surround the name in both forms.
static void test_whitespace_in_tags(void **unused)
{
    (void)unused;
    const char *texts[] = {
        "[{{name}}]",     "[{{ name }}]",         "[{{   name}}]", "[{{name   }}]",
        "[{{\tname\n}}]", "[{{\r\n name \r\n}}]", "[{{{name}}}]",  "[{{{  name\t}}}]",
    };
    for (size_t k = 0; k < sizeof texts / sizeof texts[0]; k++)
        s_expect_render(texts[k], FQ_TEMPLATE_HTML, "{\"name\": \"Ada\"}", "[Ada]");
}

//  A field may appear any number of times; the distinct names are listed
//  once each, in order of first use, in either form.
static void test_repeated_and_distinct_fields(void **unused)
{
    (void)unused;
    fq_template_t *self = s_template("{{a}} {{b}} {{ a }} {{{c}}} {{{b}}} {{a}}", FQ_TEMPLATE_HTML);
    assert_int_equal(fq_template_field_count(self), 3);
    assert_string_equal(fq_template_field(self, 0), "a");
    assert_string_equal(fq_template_field(self, 1), "b");
    assert_string_equal(fq_template_field(self, 2), "c");
    assert_null(fq_template_field(self, 3));
    assert_int_equal(fq_template_mode(self), FQ_TEMPLATE_HTML);
    fq_template_destroy(&self);

    s_expect_render("{{a}} {{b}} {{ a }} {{{c}}} {{{b}}} {{a}}", FQ_TEMPLATE_HTML,
                    "{\"a\": \"1\", \"b\": \"<2>\", \"c\": \"<3>\"}", "1 &lt;2&gt; 1 <3> <2> 1");

    self = s_template("no fields", FQ_TEMPLATE_PLAIN);
    assert_int_equal(fq_template_field_count(self), 0);
    assert_null(fq_template_field(self, 0));
    fq_template_destroy(&self);
}

//  Parse once, render many: one template serves every recipient.
static void test_render_many_recipients(void **unused)
{
    (void)unused;
    fq_template_t *self = s_template("Dear {{ name }}, {{ amount }} is due", FQ_TEMPLATE_PLAIN);
    const char *recipients[] = {
        "{\"name\": \"Ada\", \"amount\": \"10 EUR\"}",
        "{\"name\": \"Grace\", \"amount\": 12}",
        "{\"name\": \"Edsger\", \"amount\": 0.5}",
    };
    const char *expected[] = {
        "Dear Ada, 10 EUR is due",
        "Dear Grace, 12 is due",
        "Dear Edsger, 0.5 is due",
    };
    for (size_t k = 0; k < sizeof recipients / sizeof recipients[0]; k++) {
        json_t *fields = s_json(recipients[k]);
        char *out;
        size_t out_len;
        char error[FQ_TEMPLATE_ERROR_SIZE];
        assert_int_equal(fq_template_render_json(self, fields, &out, &out_len, error, sizeof error),
                         0);
        assert_string_equal(out, expected[k]);
        free(out);
        json_decref(fields);
    }
    fq_template_destroy(&self);
}

//  fq_template_render takes any lookup, called once per distinct field
//  however often it appears.
static void test_render_with_lookup(void **unused)
{
    (void)unused;
    fq_template_t *self = s_template("{{a}}-{{b}}-{{a}}-{{{a}}}", FQ_TEMPLATE_HTML);
    const char *const pairs[] = {"a", "x&y", "b", "2", NULL};
    s_pairs_t fields = {.pairs = pairs};
    char *out;
    size_t out_len;
    char error[FQ_TEMPLATE_ERROR_SIZE];
    assert_int_equal(
        fq_template_render(self, s_pairs_lookup, &fields, &out, &out_len, error, sizeof error), 0);
    assert_string_equal(out, "x&amp;y-2-x&amp;y-x&y");
    assert_int_equal(out_len, strlen(out));
    assert_int_equal(fields.lookups, 2);
    free(out);

    //  A template without fields needs no lookup
    fq_template_t *plain = s_template("static", FQ_TEMPLATE_PLAIN);
    assert_int_equal(fq_template_render(plain, NULL, NULL, &out, &out_len, error, sizeof error), 0);
    assert_string_equal(out, "static");
    free(out);
    fq_template_destroy(&plain);
    fq_template_destroy(&self);
}

// --------------------------------------------------------------------------
//  Escaping

//  In an HTML template {{ }} escapes each of & < > " ' on its own and in
//  any mix; other bytes (and the template's own markup) are kept.
static void test_html_escaping(void **unused)
{
    (void)unused;
    const char *fields = "{\"amp\": \"&\", \"lt\": \"<\", \"gt\": \">\", \"quot\": \"\\\"\", "
                         "\"apos\": \"'\", \"mix\": \"<a href=\\\"x\\\" title='t'>&amp;</a>\"}";
    s_expect_render("{{amp}}", FQ_TEMPLATE_HTML, fields, "&amp;");
    s_expect_render("{{lt}}", FQ_TEMPLATE_HTML, fields, "&lt;");
    s_expect_render("{{gt}}", FQ_TEMPLATE_HTML, fields, "&gt;");
    s_expect_render("{{quot}}", FQ_TEMPLATE_HTML, fields, "&quot;");
    s_expect_render("{{apos}}", FQ_TEMPLATE_HTML, fields, "&#39;");
    s_expect_render(
        "<p title=\"{{mix}}\">{{ mix }}</p>", FQ_TEMPLATE_HTML, fields,
        "<p title=\"&lt;a href=&quot;x&quot; title=&#39;t&#39;&gt;&amp;amp;&lt;/"
        "a&gt;\">&lt;a href=&quot;x&quot; title=&#39;t&#39;&gt;&amp;amp;&lt;/a&gt;</p>");
    s_expect_render("<b>{{ who }}</b>", FQ_TEMPLATE_HTML, "{\"who\": \"plain text \\u00e9\"}",
                    "<b>plain text \xc3\xa9</b>");
}

//  Plain text and header templates never escape.
static void test_plain_and_header_do_not_escape(void **unused)
{
    (void)unused;
    const char *fields = "{\"v\": \"<a href=\\\"x\\\">Tom & Jerry's</a>\"}";
    s_expect_render("{{v}}", FQ_TEMPLATE_PLAIN, fields, "<a href=\"x\">Tom & Jerry's</a>");
    s_expect_render("{{v}}", FQ_TEMPLATE_HEADER, fields, "<a href=\"x\">Tom & Jerry's</a>");
}

//  {{{ name }}} is verbatim in every mode, for values that are markup.
static void test_raw_form(void **unused)
{
    (void)unused;
    const char *fields = "{\"html\": \"<b>\\\"bold\\\" & 'odd'</b>\"}";
    const char *expected = "<b>\"bold\" & 'odd'</b>";
    s_expect_render("{{{html}}}", FQ_TEMPLATE_HTML, fields, expected);
    s_expect_render("{{{ html }}}", FQ_TEMPLATE_PLAIN, fields, expected);
    s_expect_render("{{{html}}}", FQ_TEMPLATE_HEADER, fields, expected);
    s_expect_render(
        "{{{html}}}|{{html}}", FQ_TEMPLATE_HTML, fields,
        "<b>\"bold\" & 'odd'</b>|&lt;b&gt;&quot;bold&quot; &amp; &#39;odd&#39;&lt;/b&gt;");
}

//  Single braces, a lone "}}" and a "}" right after a tag are plain text.
static void test_literal_braces(void **unused)
{
    (void)unused;
    s_expect_render("a { b } c }} d {x} {", FQ_TEMPLATE_PLAIN, "{}", "a { b } c }} d {x} {");
    s_expect_render("a{color:{{c}}}", FQ_TEMPLATE_HTML, "{\"c\": \"red\"}", "a{color:red}");
    s_expect_render("{ {{c}} }", FQ_TEMPLATE_PLAIN, "{\"c\": \"x\"}", "{ x }");
}

// --------------------------------------------------------------------------
//  Values are data

//  Values that look like tags, SQL or format strings go in verbatim, and
//  what they contain is never substituted in turn.
static void test_values_not_reparsed(void **unused)
{
    (void)unused;
    const char *fields = "{\"a\": \"{{b}}\", \"b\": \"B\", \"raw\": \"{{{b}}} and }} {{\", "
                         "\"sql\": \"Robert'); DROP TABLE messages; -- \\\\ ; $1 %s %n\"}";
    s_expect_render("{{a}} {{{raw}}} {{b}}", FQ_TEMPLATE_PLAIN, fields,
                    "{{b}} {{{b}}} and }} {{ B");
    s_expect_render("{{{a}}}", FQ_TEMPLATE_HTML, fields, "{{b}}");
    s_expect_render("{{sql}}", FQ_TEMPLATE_PLAIN, fields,
                    "Robert'); DROP TABLE messages; -- \\ ; $1 %s %n");
    s_expect_render("{{{sql}}}", FQ_TEMPLATE_HEADER, fields,
                    "Robert'); DROP TABLE messages; -- \\ ; $1 %s %n");
    s_expect_render("{{sql}}", FQ_TEMPLATE_HTML, fields,
                    "Robert&#39;); DROP TABLE messages; -- \\ ; $1 %s %n");
}

//  Values are bytes: invalid UTF-8 in a value passes through untouched
//  (the template itself must be valid; see test_invalid_utf8_template).
static void test_invalid_utf8_in_values(void **unused)
{
    (void)unused;
    fq_template_t *self = s_template("[{{v}}]", FQ_TEMPLATE_HTML);
    const char *const pairs[] = {"v", "\xff\xfe\xc3<\xed\xa0\x80", NULL};
    s_pairs_t fields = {.pairs = pairs};
    char *out;
    size_t out_len;
    char error[FQ_TEMPLATE_ERROR_SIZE];
    assert_int_equal(
        fq_template_render(self, s_pairs_lookup, &fields, &out, &out_len, error, sizeof error), 0);
    assert_string_equal(out, "[\xff\xfe\xc3&lt;\xed\xa0\x80]");
    free(out);
    fq_template_destroy(&self);

    //  Jansson strings hold only UTF-8, but may hold bytes the header mode refuses
    s_expect_render("{{v}}", FQ_TEMPLATE_HEADER, "{\"v\": \"tab\\there\"}", "tab\there");
}

//  Numbers and booleans render as their JSON text; a real takes the
//  fewest digits that denote it exactly.
static void test_numbers_as_values(void **unused)
{
    (void)unused;
    const char *fields = "{\"int\": 42, \"neg\": -7, \"zero\": 0, \"max\": 9223372036854775807, "
                         "\"min\": -9223372036854775808, \"price\": 19.99, \"tenth\": 0.1, "
                         "\"whole\": 3.0, \"huge\": 1e300, \"tiny\": -2.5e-10, \"yes\": true, "
                         "\"no\": false}";
    s_expect_render("{{int}}|{{neg}}|{{zero}}|{{max}}|{{min}}", FQ_TEMPLATE_PLAIN, fields,
                    "42|-7|0|9223372036854775807|-9223372036854775808");
    s_expect_render("{{price}}|{{tenth}}|{{whole}}|{{huge}}|{{tiny}}", FQ_TEMPLATE_HTML, fields,
                    "19.99|0.1|3.0|1e300|-2.5e-10");
    s_expect_render("{{yes}} {{{no}}}", FQ_TEMPLATE_HEADER, fields, "true false");

    //  A double that needs all 17 digits keeps them
    s_expect_render("{{third}}", FQ_TEMPLATE_PLAIN, "{\"third\": 0.30000000000000004}",
                    "0.30000000000000004");
}

// --------------------------------------------------------------------------
//  Field errors

//  A missing field fails the whole render with the field's name.
static void test_missing_field(void **unused)
{
    (void)unused;
    s_expect_render_error("Hi {{name}}, {{ order }}", FQ_TEMPLATE_PLAIN, "{\"name\": \"Ada\"}",
                          FQ_ENOFIELD, "missing field \"order\"");
    s_expect_render_error("{{{raw}}}", FQ_TEMPLATE_HTML, "{}", FQ_ENOFIELD,
                          "missing field \"raw\"");
    assert_string_equal(fq_err_name(FQ_ENOFIELD), "ENOFIELD");

    //  Through a lookup, too
    fq_template_t *self = s_template("{{a}} {{b}}", FQ_TEMPLATE_PLAIN);
    const char *const pairs[] = {"a", "1", NULL};
    s_pairs_t fields = {.pairs = pairs};
    char *out = (char *)"not touched";
    size_t out_len = 1;
    char error[FQ_TEMPLATE_ERROR_SIZE];
    assert_int_equal(
        fq_template_render(self, s_pairs_lookup, &fields, &out, &out_len, error, sizeof error),
        FQ_ENOFIELD);
    assert_string_equal(error, "missing field \"b\"");
    assert_null(out);
    assert_int_equal(out_len, 0);

    //  No fields at all (NULL) is an empty object
    assert_int_equal(fq_template_render_json(self, NULL, &out, &out_len, error, sizeof error),
                     FQ_ENOFIELD);
    assert_string_equal(error, "missing field \"a\"");
    assert_int_equal(fq_template_check_fields(self, NULL, error, sizeof error), FQ_ENOFIELD);
    fq_template_destroy(&self);
}

//  Objects, arrays and null cannot be substituted.
static void test_containers_and_null_rejected(void **unused)
{
    (void)unused;
    s_expect_render_error("{{o}}", FQ_TEMPLATE_PLAIN, "{\"o\": {\"k\": \"v\"}}", FQ_EFIELDTYPE,
                          "field \"o\" is an object: only strings, numbers and booleans can be "
                          "substituted");
    s_expect_render_error("{{{a}}}", FQ_TEMPLATE_HTML, "{\"a\": [1, 2]}", FQ_EFIELDTYPE,
                          "field \"a\" is an array: only strings, numbers and booleans can be "
                          "substituted");
    s_expect_render_error("x {{ n }}", FQ_TEMPLATE_HEADER, "{\"n\": null}", FQ_EFIELDTYPE,
                          "field \"n\" is null: only strings, numbers and booleans can be "
                          "substituted");
}

//  The fields must be an object (or NULL).
static void test_fields_not_an_object(void **unused)
{
    (void)unused;
    s_expect_render_error("{{a}}", FQ_TEMPLATE_PLAIN, "[\"a\"]", FQ_EINVAL,
                          "fields must be a JSON object");
    s_expect_render_error("static", FQ_TEMPLATE_PLAIN, "\"a\"", FQ_EINVAL,
                          "fields must be a JSON object");

    fq_template_t *self = s_template("static", FQ_TEMPLATE_PLAIN);
    char *out;
    size_t out_len;
    assert_int_equal(fq_template_check_fields(self, NULL, NULL, 0), 0);
    assert_int_equal(fq_template_render_json(self, NULL, &out, &out_len, NULL, 0), 0);
    assert_string_equal(out, "static");
    free(out);
    fq_template_destroy(&self);
}

// --------------------------------------------------------------------------
//  Header mode

//  A value with CR or LF would end the Subject line and start a header of
//  the tenant's choosing: the render fails instead, in either form.
static void test_header_injection_refused(void **unused)
{
    (void)unused;
    s_expect_render("Your order {{ id }}", FQ_TEMPLATE_HEADER, "{\"id\": \"A-17\"}",
                    "Your order A-17");
    s_expect_render_error("Your order {{ id }}", FQ_TEMPLATE_HEADER,
                          "{\"id\": \"A-17\\r\\nBcc: victim@example.com\"}", FQ_EHEADER,
                          "field \"id\" holds CR, LF or NUL, which a header line cannot carry");
    s_expect_render_error("{{{ id }}}", FQ_TEMPLATE_HEADER, "{\"id\": \"x\\ny\"}", FQ_EHEADER,
                          "field \"id\" holds CR, LF or NUL, which a header line cannot carry");
    s_expect_render_error("{{id}}", FQ_TEMPLATE_HEADER, "{\"id\": \"x\\r\"}", FQ_EHEADER,
                          "field \"id\" holds CR, LF or NUL, which a header line cannot carry");
    //  A body may hold line breaks
    s_expect_render("{{id}}", FQ_TEMPLATE_PLAIN, "{\"id\": \"x\\r\\ny\"}", "x\r\ny");

    //  Through a lookup, too
    fq_template_t *self = s_template("{{ s }}", FQ_TEMPLATE_HEADER);
    const char *const pairs[] = {"s", "a\nb", NULL};
    s_pairs_t fields = {.pairs = pairs};
    char *out;
    size_t out_len;
    char error[FQ_TEMPLATE_ERROR_SIZE];
    assert_int_equal(
        fq_template_render(self, s_pairs_lookup, &fields, &out, &out_len, error, sizeof error),
        FQ_EHEADER);
    assert_null(out);
    fq_template_destroy(&self);
}

//  A header template may not hold a line break itself, even inside a tag.
static void test_header_template_line_break(void **unused)
{
    (void)unused;
    s_expect_parse_error("Hello\r\nBcc: x", FQ_TEMPLATE_HEADER,
                         "line break in header template at byte 5");
    s_expect_parse_error("Hello {{\nname }}", FQ_TEMPLATE_HEADER,
                         "line break in header template at byte 8");
    s_expect_parse_error("trailing\n", FQ_TEMPLATE_HEADER,
                         "line break in header template at byte 8");
    fq_template_t *body = s_template("Hello\r\n{{\nname }}", FQ_TEMPLATE_PLAIN);
    fq_template_destroy(&body);
}

//  The helper the dispatcher uses for headers it builds itself.
static void test_is_header_safe(void **unused)
{
    (void)unused;
    assert_true(fq_template_is_header_safe("", 0));
    const char *subject = "Re: your order \xc3\xa9\t#1";
    assert_true(fq_template_is_header_safe(subject, strlen(subject)));
    assert_false(fq_template_is_header_safe("a\rb", 3));
    assert_false(fq_template_is_header_safe("a\nb", 3));
    assert_false(fq_template_is_header_safe("\r\n", 2));
    assert_false(fq_template_is_header_safe("a\0b", 3));
    //  Only len bytes count
    assert_true(fq_template_is_header_safe("ab\n", 2));
}

// --------------------------------------------------------------------------
//  Parse errors

//  Each malformed tag is refused with its kind and byte offset.
static void test_parse_errors(void **unused)
{
    (void)unused;
    struct {
        const char *text;
        const char *message;
    } cases[] = {
        {"Hi {{name", "unclosed tag at byte 3: expected \"}}\" at byte 9"},
        {"Hi {{name}", "unclosed tag at byte 3: expected \"}}\" at byte 9"},
        {"Hi {{name} there", "unclosed tag at byte 3: expected \"}}\" at byte 9"},
        {"Hi {{{name}}", "unclosed tag at byte 3: expected \"}}}\" at byte 10"},
        {"Hi {{{name}} there", "unclosed tag at byte 3: expected \"}}}\" at byte 10"},
        {"{{a}} then {{", "unclosed tag at byte 11: expected \"}}\" at byte 13"},
        {"{{a}} then {{ ", "unclosed tag at byte 11: expected \"}}\" at byte 14"},
        {"{{ first name }}", "unclosed tag at byte 0: expected \"}}\" at byte 9"},
        {"{{a {{b}}", "unclosed tag at byte 0: expected \"}}\" at byte 4"},
        {"{{a{{b}}", "unclosed tag at byte 0: expected \"}}\" at byte 3"},
        {"{{}", "unclosed tag at byte 0: expected \"}}\" at byte 2"},
        //  There is no escape for "{{": a fourth brace is not a name
        {"{{{{name}}}}", "unclosed tag at byte 0: expected \"}}}\" at byte 3"},
        {"{{}}", "empty tag at byte 0"},
        {"x {{ }}", "empty tag at byte 2"},
        {"x {{\t\n}}", "empty tag at byte 2"},
        {"{{{}}}", "empty tag at byte 0"},
        {"ok {{a}} {{{  }}}", "empty tag at byte 9"},
        {"{{1abc}}", "invalid field name at byte 2: it must start with a letter or '_'"},
        {"{{ -x }}", "invalid field name at byte 3: it must start with a letter or '_'"},
        {"{{{ .x }}}", "invalid field name at byte 4: it must start with a letter or '_'"},
        {"{{ a$b }}", "invalid field name at byte 3: '$' at byte 4 is not allowed in a name"},
        {"{{ $ }}", "invalid field name at byte 3: '$' at byte 3 is not allowed in a name"},
        {"{{a/b}}", "invalid field name at byte 2: '/' at byte 3 is not allowed in a name"},
        {"{{ na\xc3\xafve }}",
         "invalid field name at byte 3: byte 0xC3 at byte 5 is not allowed in a name"},
        {"{{a\vb}}", "invalid field name at byte 2: byte 0x0B at byte 3 is not allowed in a name"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
        s_expect_parse_error(cases[k].text, FQ_TEMPLATE_HTML, cases[k].message);

    char too_long[FQ_TEMPLATE_NAME_MAX + 16];
    memset(too_long, 0, sizeof too_long);
    memcpy(too_long, "ab {{ ", 6);
    memset(too_long + 6, 'n', FQ_TEMPLATE_NAME_MAX + 1);
    strcat(too_long, "}}");
    s_expect_parse_error(too_long, FQ_TEMPLATE_PLAIN,
                         "invalid field name at byte 6: longer than 64 bytes");
}

//  The error buffer is optional, and a short one gets a truncated message.
static void test_error_buffer(void **unused)
{
    (void)unused;
    assert_null(fq_template_new("{{", FQ_TEMPLATE_PLAIN, NULL, 0));
    char small[8];
    assert_null(fq_template_new("{{", FQ_TEMPLATE_PLAIN, small, sizeof small));
    assert_string_equal(small, "unclose");

    char error[FQ_TEMPLATE_ERROR_SIZE];
    assert_null(fq_template_new(NULL, FQ_TEMPLATE_PLAIN, error, sizeof error));
    assert_string_equal(error, "invalid argument");
    assert_null(fq_template_new("x", (fq_template_mode_t)7, error, sizeof error));
    assert_string_equal(error, "invalid argument");

    char *out = (char *)"not touched";
    size_t out_len = 1;
    assert_int_equal(fq_template_render_json(NULL, NULL, &out, &out_len, error, sizeof error),
                     FQ_EINVAL);
    assert_null(out);
    fq_template_t *self = s_template("{{a}}", FQ_TEMPLATE_PLAIN);
    assert_int_equal(fq_template_render(self, NULL, NULL, &out, &out_len, error, sizeof error),
                     FQ_EINVAL);
    assert_int_equal(fq_template_render_json(self, NULL, NULL, &out_len, error, sizeof error),
                     FQ_EINVAL);
    fq_template_destroy(&self);
}

//  The template must be valid UTF-8: overlong forms, surrogates, code
//  points past U+10FFFF, stray continuation bytes and cut sequences are
//  refused at the first bad byte.
static void test_invalid_utf8_template(void **unused)
{
    (void)unused;
    struct {
        const char *text;
        const char *message;
    } cases[] = {
        {"\xff", "invalid UTF-8 at byte 0"},
        {"ok \x80", "invalid UTF-8 at byte 3"},
        {"caf\xc3", "invalid UTF-8 at byte 3"},
        {"caf\xc3 ", "invalid UTF-8 at byte 3"},
        {"ab\xc0\xaf", "invalid UTF-8 at byte 2"},
        {"ab\xc1\xbf", "invalid UTF-8 at byte 2"},
        {"\xe0\x80\xaf", "invalid UTF-8 at byte 0"},
        {"x\xed\xa0\x80", "invalid UTF-8 at byte 1"},
        {"\xe2\x82", "invalid UTF-8 at byte 0"},
        {"\xf0\x80\x80\xaf", "invalid UTF-8 at byte 0"},
        {"\xf4\x90\x80\x80", "invalid UTF-8 at byte 0"},
        {"\xf5\x80\x80\x80", "invalid UTF-8 at byte 0"},
        {"{{a}} \xf0\x9d\x84", "invalid UTF-8 at byte 6"},
        {"\xe2\x82\xac\xe2\x28\xa1", "invalid UTF-8 at byte 3"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
        s_expect_parse_error(cases[k].text, FQ_TEMPLATE_PLAIN, cases[k].message);

    //  The edges of the valid ranges are accepted
    s_expect_render("\xc2\x80\xdf\xbf\xe0\xa0\x80\xed\x9f\xbf\xee\x80\x80\xef\xbf\xbf"
                    "\xf0\x90\x80\x80\xf4\x8f\xbf\xbf \xe2\x82\xac \xf0\x9d\x84\x9e",
                    FQ_TEMPLATE_PLAIN, "{}",
                    "\xc2\x80\xdf\xbf\xe0\xa0\x80\xed\x9f\xbf\xee\x80\x80\xef\xbf\xbf"
                    "\xf0\x90\x80\x80\xf4\x8f\xbf\xbf \xe2\x82\xac \xf0\x9d\x84\x9e");
}

// --------------------------------------------------------------------------
//  Limits and scale

//  A template of up to FQ_TEMPLATE_MAX_SIZE bytes is accepted, one more
//  is refused; fq_template_new_limited sets another limit.
static void test_template_size_limit(void **unused)
{
    (void)unused;
    char *text = s_repeat("x", FQ_TEMPLATE_MAX_SIZE + 1);
    char error[FQ_TEMPLATE_ERROR_SIZE];
    assert_null(fq_template_new(text, FQ_TEMPLATE_PLAIN, error, sizeof error));
    assert_string_equal(error, "template too large at byte 1048576: the limit is 1048576 bytes");

    text[FQ_TEMPLATE_MAX_SIZE] = 0;
    fq_template_t *self = s_template(text, FQ_TEMPLATE_PLAIN);
    char *out;
    size_t out_len;
    assert_int_equal(fq_template_render_json(self, NULL, &out, &out_len, error, sizeof error), 0);
    assert_int_equal(out_len, FQ_TEMPLATE_MAX_SIZE);
    free(out);
    fq_template_destroy(&self);
    free(text);

    assert_null(
        fq_template_new_limited("Hello {{name}}", FQ_TEMPLATE_PLAIN, 13, error, sizeof error));
    assert_string_equal(error, "template too large at byte 13: the limit is 13 bytes");
    self = fq_template_new_limited("Hello {{name}}", FQ_TEMPLATE_PLAIN, 14, error, sizeof error);
    assert_non_null(self);
    fq_template_destroy(&self);
}

//  Many tags times a large value could ask for gigabytes: the render is
//  refused before allocating, and the check foresees it. Escaping counts.
static void test_output_limit(void **unused)
{
    (void)unused;
    //  Unescaped the output fits, escaped (6 bytes for each '"') it does not
    const size_t tags = 1000;
    const size_t value_len = FQ_TEMPLATE_OUTPUT_MAX / tags / 2;
    char *text = s_repeat("{{v}}", tags);
    char *raw_text = s_repeat("{{{v}}}", tags);
    char *value = s_repeat("\"", value_len);
    json_t *fields = json_pack("{s:s}", "v", value);
    assert_non_null(fields);

    fq_template_t *self = s_template(text, FQ_TEMPLATE_HTML);
    char *out = (char *)"not touched";
    size_t out_len;
    char error[FQ_TEMPLATE_ERROR_SIZE];
    assert_int_equal(fq_template_check_fields(self, fields, error, sizeof error), FQ_ETOOBIG);
    assert_string_equal(error, "rendered template would be larger than 33554432 bytes");
    assert_int_equal(fq_template_render_json(self, fields, &out, &out_len, error, sizeof error),
                     FQ_ETOOBIG);
    assert_null(out);
    fq_template_destroy(&self);

    self = s_template(raw_text, FQ_TEMPLATE_HTML);
    assert_int_equal(fq_template_render_json(self, fields, &out, &out_len, error, sizeof error), 0);
    assert_int_equal(out_len, tags * value_len);
    free(out);
    fq_template_destroy(&self);

    json_decref(fields);
    free(value);
    free(raw_text);
    free(text);
}

//  S_MANY occurrences of a few fields render correctly (and promptly: the
//  render is one pass, the test would time out if it were quadratic).
static void test_many_occurrences(void **unused)
{
    (void)unused;
    char *text = s_repeat("{{ a }}<{{{b}}}>", S_MANY / 2);
    fq_template_t *self = s_template(text, FQ_TEMPLATE_HTML);
    assert_int_equal(fq_template_field_count(self), 2);
    json_t *fields = s_json("{\"a\": \"&\", \"b\": \"bb\"}");
    char *out;
    size_t out_len;
    char error[FQ_TEMPLATE_ERROR_SIZE];
    assert_int_equal(fq_template_render_json(self, fields, &out, &out_len, error, sizeof error), 0);
    char *expected = s_repeat("&amp;<bb>", S_MANY / 2);
    assert_int_equal(out_len, strlen(expected));
    assert_memory_equal(out, expected, out_len);
    free(expected);
    free(out);
    json_decref(fields);
    fq_template_destroy(&self);
    free(text);
}

//  The name of the field a distinct-fields lookup is asked for, as its
//  value: "f123" renders as "f123".
static const char *s_echo_lookup(void *arg, const char *name)
{
    (*(size_t *)arg)++;
    return name;
}

//  S_MANY distinct fields: names are interned in constant time each, and
//  each is looked up once.
static void test_many_distinct_fields(void **unused)
{
    (void)unused;
    size_t text_size = (size_t)S_MANY * sizeof "{{f99999}}";
    char *text = malloc(text_size);
    char *expected = malloc(text_size);
    assert_non_null(text);
    assert_non_null(expected);
    size_t text_len = 0, expected_len = 0;
    for (int k = 0; k < S_MANY; k++) {
        text_len += (size_t)snprintf(text + text_len, text_size - text_len, "{{f%d}}", k);
        expected_len +=
            (size_t)snprintf(expected + expected_len, text_size - expected_len, "f%d", k);
    }
    fq_template_t *self = s_template(text, FQ_TEMPLATE_PLAIN);
    assert_int_equal(fq_template_field_count(self), S_MANY);
    assert_string_equal(fq_template_field(self, S_MANY - 1), "f99999");

    size_t lookups = 0;
    char *out;
    size_t out_len;
    char error[FQ_TEMPLATE_ERROR_SIZE];
    assert_int_equal(
        fq_template_render(self, s_echo_lookup, &lookups, &out, &out_len, error, sizeof error), 0);
    assert_int_equal(lookups, S_MANY);
    assert_int_equal(out_len, expected_len);
    assert_memory_equal(out, expected, out_len);
    free(out);
    fq_template_destroy(&self);
    free(expected);
    free(text);
}

// --------------------------------------------------------------------------
//  Lifecycle

//  Destroy nulls the caller's pointer and is safe twice and on NULL.
static void test_destroy_twice(void **unused)
{
    (void)unused;
    fq_template_t *self = s_template("{{a}}", FQ_TEMPLATE_PLAIN);
    fq_template_destroy(&self);
    assert_null(self);
    fq_template_destroy(&self);
    fq_template_destroy(NULL);
    assert_int_equal(fq_template_field_count(NULL), 0);
    assert_null(fq_template_field(NULL, 0));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_substitution),
        cmocka_unit_test(test_field_names),
        cmocka_unit_test(test_whitespace_in_tags),
        cmocka_unit_test(test_repeated_and_distinct_fields),
        cmocka_unit_test(test_render_many_recipients),
        cmocka_unit_test(test_render_with_lookup),
        cmocka_unit_test(test_html_escaping),
        cmocka_unit_test(test_plain_and_header_do_not_escape),
        cmocka_unit_test(test_raw_form),
        cmocka_unit_test(test_literal_braces),
        cmocka_unit_test(test_values_not_reparsed),
        cmocka_unit_test(test_invalid_utf8_in_values),
        cmocka_unit_test(test_numbers_as_values),
        cmocka_unit_test(test_missing_field),
        cmocka_unit_test(test_containers_and_null_rejected),
        cmocka_unit_test(test_fields_not_an_object),
        cmocka_unit_test(test_header_injection_refused),
        cmocka_unit_test(test_header_template_line_break),
        cmocka_unit_test(test_is_header_safe),
        cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_error_buffer),
        cmocka_unit_test(test_invalid_utf8_template),
        cmocka_unit_test(test_template_size_limit),
        cmocka_unit_test(test_output_limit),
        cmocka_unit_test(test_many_occurrences),
        cmocka_unit_test(test_many_distinct_fields),
        cmocka_unit_test(test_destroy_twice),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
