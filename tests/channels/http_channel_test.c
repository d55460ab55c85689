/*  http_channel_test.c — channel names, the rule of an http request, and
    its messages rendered and signed (channels/fq_channel.h), no I/O.

    The signature is checked against the known-answer vector the Standard
    Webhooks project publishes with its libraries (libraries/go/
    webhook_test.go, TestWebhookSign): secret
    whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw, id msg_p5jXN8AQM9LWM0D4loKWxJek,
    timestamp 1614265330, payload {"test": 2432232314}, signature
    v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE= (Python's hmac module
    gives the same). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "fq_channel.h"
#include "fq_error.h"
#include <stdlib.h>
#include <string.h>

#define S_VECTOR_SECRET    "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
#define S_VECTOR_ID        "msg_p5jXN8AQM9LWM0D4loKWxJek"
#define S_VECTOR_TIMESTAMP 1614265330
#define S_VECTOR_PAYLOAD   "{\"test\": 2432232314}"
#define S_VECTOR_SIGNATURE "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="

//  The problem of spec, or NULL.
static const char *s_problem(const fq_http_spec_t *spec)
{
    static char problem[FQ_HTTP_PROBLEM_SIZE];
    return fq_http_spec_problem(spec, problem, sizeof problem);
}

//  Asserts that spec is refused with a problem holding words.
static void s_refused(const fq_http_spec_t *spec, const char *words)
{
    const char *problem = s_problem(spec);
    if (!problem)
        fail_msg("taken, but should be refused with \"%s\"", words);
    if (!strstr(problem, words))
        fail_msg("refused with \"%s\", wanted \"%s\"", problem, words);
}

//  The value of header name in a rendered message, or NULL.
static const char *s_header(const fq_http_message_t *message, const char *name)
{
    for (size_t i = 0; i < message->nheaders; i++)
        if (strcmp(message->header_names[i], name) == 0)
            return message->header_values[i];
    return NULL;
}

static void test_channel_names(void **unused)
{
    (void)unused;
    assert_null(fq_channel_name_problem("email"));
    assert_null(fq_channel_name_problem("http"));
    assert_null(fq_channel_name_problem("sms_eu-2"));
    assert_null(fq_channel_name_problem("abcdefghijklmnopqrstuvwxyz012345")); //  32
    assert_non_null(fq_channel_name_problem("abcdefghijklmnopqrstuvwxyz0123456"));
    assert_non_null(fq_channel_name_problem(""));
    assert_non_null(fq_channel_name_problem(NULL));
    assert_non_null(fq_channel_name_problem("HTTP"));
    assert_non_null(fq_channel_name_problem("sms push"));
    assert_non_null(fq_channel_name_problem("a.b"));
    assert_true(fq_channel_is_email(NULL));
    assert_true(fq_channel_is_email(""));
    assert_true(fq_channel_is_email("email"));
    assert_false(fq_channel_is_email("http"));
    fq_http_body_format_t format;
    assert_int_equal(fq_http_body_format_parse("form", &format), 0);
    assert_int_equal(format, FQ_HTTP_BODY_FORM);
    assert_string_equal(fq_http_body_format_name(format), "form");
    assert_int_equal(fq_http_body_format_parse("xml", &format), -1);
}

//  The known-answer vector of Standard Webhooks, and the secret's rule.
static void test_signature_known_answer(void **unused)
{
    (void)unused;
    unsigned char key[FQ_HTTP_SECRET_MAX];
    int size = fq_http_secret_decode(S_VECTOR_SECRET, key);
    assert_int_equal(size, 24);
    char signature[FQ_HTTP_SIGNATURE_SIZE];
    assert_int_equal(fq_http_sign(key, (size_t)size, S_VECTOR_ID, S_VECTOR_TIMESTAMP,
                                  S_VECTOR_PAYLOAD, strlen(S_VECTOR_PAYLOAD), signature),
                     0);
    assert_string_equal(signature, S_VECTOR_SIGNATURE);

    assert_null(fq_http_secret_problem(S_VECTOR_SECRET));
    //  64 bytes (86 characters and two '='), and one more refused
    char longest[64 + 128];
    snprintf(
        longest, sizeof longest, "whsec_%.86s==",
        "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA");
    assert_null(fq_http_secret_problem(longest));
    assert_int_equal(fq_http_secret_decode(longest, key), 64);
    snprintf(
        longest, sizeof longest, "whsec_%.88s",
        "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA");
    assert_non_null(fq_http_secret_problem(longest));
    const char *bad[] = {"MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", //  No prefix
                         "whsec_",
                         "whsec_MfKQ9r8GKYqrTwjU",                 //  12 bytes
                         "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaS",  //  Not whole groups
                         "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLa-w", //  URL-safe alphabet
                         "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw===="};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        if (!fq_http_secret_problem(bad[i]))
            fail_msg("secret \"%s\" taken", bad[i]);
}

//  What a good request looks like, and each refusal naming its place.
static void test_spec_rule(void **unused)
{
    (void)unused;
    const char *names[] = {"X-Sig", "Authorization"};
    const char *values[] = {"t={{token}}", "Bearer abc"};
    fq_http_spec_t good = {.method = "POST",
                           .url = "https://hooks.example:8443/in/{{id}}?k={{ key }}",
                           .header_names = names,
                           .header_values = values,
                           .nheaders = 2,
                           .body = "{\"id\": \"{{id}}\", \"n\": {{n}}}",
                           .body_format = FQ_HTTP_BODY_JSON,
                           .secret = S_VECTOR_SECRET};
    assert_null(s_problem(&good));
    fq_http_spec_t spec = good;
    spec.url = "http://[::1]:8080/x";
    assert_null(s_problem(&spec));

    spec = good;
    spec.method = "post";
    s_refused(&spec, "http.method: must be POST, PUT, PATCH, DELETE or GET");
    spec.method = "CONNECT";
    s_refused(&spec, "http.method");

    const struct {
        const char *url, *words;
    } urls[] = {
        {"ftp://hooks.example/", "must start with http:// or https://"},
        {"hooks.example/x", "must start with http://"},
        {"https://{{host}}/x", "not in its host"},
        {"https://hooks.example{{p}}", "not in its host"},
        {"https:///x", "has no host"},
        {"https://user:pw@hooks.example/", "holds credentials"},
        {"https://hooks.example/a b", "holds a space"},
        {"https://hooks.example/\xc3\xa9", "non-ASCII"},
        {"https://hooks.example/x#frag", "fragment"},
        {"https://hooks.example:0/", "port is not within"},
        {"https://hooks.example:70000/", "port is not within"},
        {"https://hooks.example:8o/", "port is not a number"},
        {"https://hooks_example/", "its host holds"},
        {"https://hooks.example/{{id", "http.url: unclosed tag at byte"},
    };
    for (size_t i = 0; i < sizeof urls / sizeof *urls; i++) {
        spec = good;
        spec.url = urls[i].url;
        s_refused(&spec, urls[i].words);
    }
    char *long_url = malloc(FQ_HTTP_URL_MAX + 2);
    memset(long_url, 'a', FQ_HTTP_URL_MAX + 1);
    memcpy(long_url, "https://a.example/", strlen("https://a.example/"));
    long_url[FQ_HTTP_URL_MAX + 1] = 0;
    spec = good;
    spec.url = long_url;
    s_refused(&spec, "http.url: longer than 8192 bytes");
    long_url[FQ_HTTP_URL_MAX] = 0;
    assert_null(s_problem(&spec));
    free(long_url);

    const struct {
        const char *name, *value, *words;
    } headers[] = {
        {"X Sig", "1", "a header's name is"},
        {"X-Sig:", "1", "a header's name is"},
        {"", "1", "a header's name is"},
        {"Host", "evil.example", "cannot be given"},
        {"content-length", "1", "cannot be given"},
        {"Transfer-Encoding", "chunked", "cannot be given"},
        {"CONNECTION", "close", "cannot be given"},
        {"Webhook-Signature", "v1,x", "cannot be given"},
        {"x-sig", "1", "given twice"},
        {"X-A", "a\rb", "control character"},
        {"X-A", "a\x01", "control character"},
        {"X-A", "{{a", "unclosed tag"},
    };
    for (size_t i = 0; i < sizeof headers / sizeof *headers; i++) {
        const char *hn[] = {"X-Sig", headers[i].name}, *hv[] = {"1", headers[i].value};
        spec = good;
        spec.header_names = hn;
        spec.header_values = hv;
        spec.nheaders = 2;
        s_refused(&spec, headers[i].words);
        if (!strstr(s_problem(&spec), "http.headers"))
            fail_msg("%s does not name its place", s_problem(&spec));
    }
    const char *many_names[FQ_HTTP_HEADERS_MAX + 1], *many_values[FQ_HTTP_HEADERS_MAX + 1];
    char many[FQ_HTTP_HEADERS_MAX + 1][8];
    for (int i = 0; i <= FQ_HTTP_HEADERS_MAX; i++) {
        snprintf(many[i], sizeof many[i], "X-%d", i);
        many_names[i] = many[i];
        many_values[i] = "v";
    }
    spec = good;
    spec.header_names = many_names;
    spec.header_values = many_values;
    spec.nheaders = FQ_HTTP_HEADERS_MAX;
    assert_null(s_problem(&spec));
    spec.nheaders = FQ_HTTP_HEADERS_MAX + 1;
    s_refused(&spec, "more than 32 headers");

    spec = good;
    spec.method = "GET";
    s_refused(&spec, "http.body: a GET has no body");
    spec.body = NULL;
    assert_null(s_problem(&spec));
    spec = good;
    spec.body = "{\"id\": {{id}"; //  Unclosed tag
    s_refused(&spec, "http.body: unclosed tag at byte");
    spec.body = "{\"id\": \"{{id}}\""; //  Not JSON once filled
    s_refused(&spec, "http.body: not JSON once its fields are filled in");
    spec.body_format = FQ_HTTP_BODY_FORM; //  A form is not checked as JSON
    assert_null(s_problem(&spec));
    char *long_body = malloc(FQ_HTTP_BODY_MAX + 2);
    memset(long_body, ' ', FQ_HTTP_BODY_MAX + 1);
    long_body[0] = '1';
    long_body[FQ_HTTP_BODY_MAX + 1] = 0;
    spec = good;
    spec.body = long_body;
    s_refused(&spec, "http.body: longer than 262144 bytes");
    long_body[FQ_HTTP_BODY_MAX] = 0;
    assert_null(s_problem(&spec));
    free(long_body);

    spec = good;
    spec.secret = "whsec_short";
    s_refused(&spec, "http.signing_secret: a signing secret is");
    spec.secret = NULL;
    assert_null(s_problem(&spec));
}

//  Values encoded for their place: percent-encoded in the URL,
//  JSON-escaped in a json body, as they are in a header; Content-Type
//  from the format; a number printed as a mail prints it.
static void test_render_encodes_each_place(void **unused)
{
    (void)unused;
    const char *names[] = {"X-Who"};
    const char *values[] = {"{{name}} <{{{name}}}>"};
    fq_http_spec_t spec = {.method = "PUT",
                           .url = "https://hooks.example/u/{{name}}?q={{{q}}}&n={{n}}&r={{r}}",
                           .header_names = names,
                           .header_values = values,
                           .nheaders = 1,
                           .body = "{\"name\": \"{{name}}\", \"n\": {{n}}, \"ok\": {{ok}},"
                                   " \"r\": {{r}}, \"q\": \"{{{q}}}\"}",
                           .body_format = FQ_HTTP_BODY_JSON};
    char error[FQ_HTTP_PROBLEM_SIZE];
    fq_http_templates_t *templates = fq_http_templates_new(&spec, error, sizeof error);
    if (!templates)
        fail_msg("%s", error);
    assert_string_equal(fq_http_templates_method(templates), "PUT");
    json_t *fields = json_loads("{\"name\": \"Ann \\\"A\\\" /\\u00e9\", \"q\": \"a&b=c d+e\","
                                " \"n\": -42, \"ok\": true, \"r\": 19.99}",
                                0, NULL);
    fq_http_message_t message;
    int rc = fq_http_render(templates, fields, 7, 1700000000, &message, error, sizeof error);
    if (rc)
        fail_msg("%s", error);
    assert_string_equal(message.url, "https://hooks.example/u/Ann%20%22A%22%20%2F%C3%A9"
                                     "?q=a%26b%3Dc%20d%2Be&n=-42&r=19.99");
    assert_string_equal(message.body, "{\"name\": \"Ann \\\"A\\\" /\xc3\xa9\", \"n\": -42,"
                                      " \"ok\": true, \"r\": 19.99, \"q\": \"a&b=c d+e\"}");
    assert_int_equal(message.body_size, strlen(message.body));
    assert_int_equal(message.nheaders, 2);
    assert_string_equal(s_header(&message, "X-Who"), "Ann \"A\" /\xc3\xa9 <Ann \"A\" /\xc3\xa9>");
    assert_string_equal(s_header(&message, "Content-Type"), "application/json");
    assert_null(s_header(&message, "webhook-signature")); //  No secret: not signed
    fq_http_message_free(&message);
    fq_http_message_free(&message); //  Safe twice

    //  A field missing, or a header value made to hold CR, is an error
    //  naming the place; the splitter refuses such recipients before
    json_object_del(fields, "q");
    rc = fq_http_render(templates, fields, 7, 1700000000, &message, error, sizeof error);
    assert_int_equal(rc, FQ_ENOFIELD);
    assert_non_null(strstr(error, "http.url: missing field \"q\""));
    assert_null(message.url);
    json_object_set_new(fields, "q", json_string("x"));
    json_object_set_new(fields, "name", json_string("a\r\nBcc: x"));
    rc = fq_http_render(templates, fields, 7, 1700000000, &message, error, sizeof error);
    assert_int_equal(rc, FQ_EHEADER);
    assert_non_null(strstr(error, "http.headers \"X-Who\""));
    json_object_set_new(fields, "name", json_string("a\x01"));
    rc = fq_http_render(templates, fields, 7, 1700000000, &message, error, sizeof error);
    assert_int_equal(rc, FQ_EHEADER);
    assert_non_null(strstr(error, "control character"));
    //  A string where the body wants a number: not JSON, refused
    json_object_set_new(fields, "name", json_string("B"));
    json_object_set_new(fields, "n", json_string("4 2"));
    rc = fq_http_render(templates, fields, 7, 1700000000, &message, error, sizeof error);
    assert_int_equal(rc, FQ_EINVAL);
    assert_non_null(strstr(error, "http.body: not JSON once rendered"));
    json_decref(fields);

    size_t count, nheader;
    const char **used = fq_http_templates_fields(templates, &count, &nheader);
    assert_non_null(used);
    assert_int_equal(nheader, 1); //  {{name}} and {{{name}}}: one field of the header
    assert_string_equal(used[0], "name");
    assert_int_equal(count, 1 + 4 + 5);
    free(used);
    fq_http_templates_destroy(&templates);
    fq_http_templates_destroy(&templates); //  Safe twice
    assert_null(templates);
}

//  A form body, form-encoded; a Content-Type given is kept; a request
//  without a body has none and no Content-Type.
static void test_render_form_and_no_body(void **unused)
{
    (void)unused;
    fq_http_spec_t spec = {.method = "POST",
                           .url = "http://hooks.example/f",
                           .body = "to={{to}}&text={{text}}",
                           .body_format = FQ_HTTP_BODY_FORM};
    char error[FQ_HTTP_PROBLEM_SIZE];
    fq_http_templates_t *templates = fq_http_templates_new(&spec, error, sizeof error);
    assert_non_null(templates);
    json_t *fields = json_pack("{s:s, s:s}", "to", "+49 170", "text", "a&b=c~ é");
    fq_http_message_t message;
    assert_int_equal(fq_http_render(templates, fields, 1, 0, &message, error, sizeof error), 0);
    assert_string_equal(message.body, "to=%2B49+170&text=a%26b%3Dc~+%C3%A9");
    assert_string_equal(s_header(&message, "Content-Type"), "application/x-www-form-urlencoded");
    fq_http_message_free(&message);
    fq_http_templates_destroy(&templates);

    const char *names[] = {"content-type"}, *values[] = {"text/plain; charset=utf-8"};
    spec.header_names = names;
    spec.header_values = values;
    spec.nheaders = 1;
    templates = fq_http_templates_new(&spec, error, sizeof error);
    assert_int_equal(fq_http_render(templates, fields, 1, 0, &message, error, sizeof error), 0);
    assert_int_equal(message.nheaders, 1);
    assert_string_equal(s_header(&message, "content-type"), "text/plain; charset=utf-8");
    fq_http_message_free(&message);
    fq_http_templates_destroy(&templates);

    fq_http_spec_t get = {.method = "GET", .url = "https://hooks.example/ping?to={{to}}"};
    templates = fq_http_templates_new(&get, error, sizeof error);
    assert_int_equal(fq_http_render(templates, fields, 1, 0, &message, error, sizeof error), 0);
    assert_string_equal(message.url, "https://hooks.example/ping?to=%2B49%20170");
    assert_string_equal(message.body, "");
    assert_int_equal(message.nheaders, 0);
    assert_null(message.header_names);
    fq_http_message_free(&message);
    fq_http_templates_destroy(&templates);
    json_decref(fields);

    //  A bad request is refused by the parse too, with its problem
    get.url = "https://{{h}}/";
    assert_null(fq_http_templates_new(&get, error, sizeof error));
    assert_non_null(strstr(error, "not in its host"));
}

//  A signed message: webhook-id "msg_<id>" (stable), webhook-timestamp
//  the time given, webhook-signature over id.timestamp.body, which the
//  vector's signing function reproduces.
static void test_render_signs(void **unused)
{
    (void)unused;
    fq_http_spec_t spec = {.method = "POST",
                           .url = "https://hooks.example/e",
                           .body = "{\"test\": {{n}}}",
                           .body_format = FQ_HTTP_BODY_JSON,
                           .secret = S_VECTOR_SECRET};
    char error[FQ_HTTP_PROBLEM_SIZE];
    fq_http_templates_t *templates = fq_http_templates_new(&spec, error, sizeof error);
    assert_non_null(templates);
    json_t *fields = json_pack("{s:I}", "n", (json_int_t)2432232314LL);
    fq_http_message_t message;
    assert_int_equal(fq_http_render(templates, fields, 123456789, S_VECTOR_TIMESTAMP, &message,
                                    error, sizeof error),
                     0);
    assert_string_equal(message.body, "{\"test\": 2432232314}");
    assert_string_equal(s_header(&message, "webhook-id"), "msg_123456789");
    assert_string_equal(s_header(&message, "webhook-timestamp"), "1614265330");
    unsigned char key[FQ_HTTP_SECRET_MAX];
    int size = fq_http_secret_decode(S_VECTOR_SECRET, key);
    char signature[FQ_HTTP_SIGNATURE_SIZE];
    assert_int_equal(fq_http_sign(key, (size_t)size, "msg_123456789", S_VECTOR_TIMESTAMP,
                                  message.body, message.body_size, signature),
                     0);
    assert_string_equal(s_header(&message, "webhook-signature"), signature);
    //  The order: the request's own, Content-Type, then the three
    assert_string_equal(message.header_names[0], "Content-Type");
    assert_string_equal(message.header_names[3], "webhook-signature");
    fq_http_message_free(&message);

    //  The vector's own id and body: its published signature
    fq_http_spec_t literal = spec;
    literal.body = S_VECTOR_PAYLOAD;
    fq_http_templates_t *fixed = fq_http_templates_new(&literal, error, sizeof error);
    assert_non_null(fixed);
    assert_int_equal(fq_http_sign(key, (size_t)size, S_VECTOR_ID, S_VECTOR_TIMESTAMP,
                                  S_VECTOR_PAYLOAD, strlen(S_VECTOR_PAYLOAD), signature),
                     0);
    assert_string_equal(signature, S_VECTOR_SIGNATURE);
    fq_http_templates_destroy(&fixed);
    json_decref(fields);
    fq_http_templates_destroy(&templates);
}

//  During a rotation a message carries two signatures, the new secret's
//  first, then the previous one's after a space: a receiver verifies with
//  either. A previous secret without a current one signs nothing, and a
//  malformed one is refused by the rule.
static void test_render_signs_twice_in_rotation(void **unused)
{
    (void)unused;
    const char *previous = "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=";
    fq_http_spec_t spec = {.method = "POST",
                           .url = "https://hooks.example/e",
                           .body = "{\"n\": {{n}}}",
                           .body_format = FQ_HTTP_BODY_JSON,
                           .secret = S_VECTOR_SECRET,
                           .previous_secret = previous};
    char error[FQ_HTTP_PROBLEM_SIZE];
    fq_http_templates_t *templates = fq_http_templates_new(&spec, error, sizeof error);
    assert_non_null(templates);
    json_t *fields = json_pack("{s:i}", "n", 7);
    fq_http_message_t message;
    assert_int_equal(
        fq_http_render(templates, fields, 42, S_VECTOR_TIMESTAMP, &message, error, sizeof error),
        0);
    unsigned char key[FQ_HTTP_SECRET_MAX];
    char current[FQ_HTTP_SIGNATURE_SIZE], old[FQ_HTTP_SIGNATURE_SIZE], both[128];
    int size = fq_http_secret_decode(S_VECTOR_SECRET, key);
    assert_int_equal(fq_http_sign(key, (size_t)size, "msg_42", S_VECTOR_TIMESTAMP, message.body,
                                  message.body_size, current),
                     0);
    size = fq_http_secret_decode(previous, key);
    assert_true(size > 0);
    assert_int_equal(fq_http_sign(key, (size_t)size, "msg_42", S_VECTOR_TIMESTAMP, message.body,
                                  message.body_size, old),
                     0);
    snprintf(both, sizeof both, "%s %s", current, old);
    assert_string_equal(s_header(&message, "webhook-signature"), both);
    fq_http_message_free(&message);
    fq_http_templates_destroy(&templates);

    spec.secret = NULL; //  Unsigned: the previous secret alone signs nothing
    templates = fq_http_templates_new(&spec, error, sizeof error);
    assert_non_null(templates);
    assert_int_equal(
        fq_http_render(templates, fields, 42, S_VECTOR_TIMESTAMP, &message, error, sizeof error),
        0);
    assert_null(s_header(&message, "webhook-signature"));
    fq_http_message_free(&message);
    fq_http_templates_destroy(&templates);

    spec.secret = S_VECTOR_SECRET;
    spec.previous_secret = "whsec_short";
    assert_null(fq_http_templates_new(&spec, error, sizeof error));
    assert_non_null(strstr(error, "http.previous_secret"));
    json_decref(fields);
}

//  The host a request's messages go to, as the splitter stamps their
//  destination by it: lowercase, without port, path or user information.
static void test_url_host(void **state)
{
    (void)state;
    char host[64];
    fq_http_url_host("https://Api.Example.COM:8443/x/{{id}}?q=1", host, sizeof host);
    assert_string_equal(host, "api.example.com");
    fq_http_url_host("http://hooks.example", host, sizeof host);
    assert_string_equal(host, "hooks.example");
    fq_http_url_host("http://user:pw@hooks.example/a", host, sizeof host);
    assert_string_equal(host, "hooks.example");
    fq_http_url_host("http://[::1]:8080/a", host, sizeof host);
    assert_string_equal(host, "[::1]");
    fq_http_url_host("http://127.0.0.1#frag", host, sizeof host);
    assert_string_equal(host, "127.0.0.1");
    //  None: no scheme of http, no URL, no room
    fq_http_url_host("ftp://files.example/", host, sizeof host);
    assert_string_equal(host, "");
    fq_http_url_host(NULL, host, sizeof host);
    assert_string_equal(host, "");
    fq_http_url_host("https://a-rather-long-host.example/", host, 8);
    assert_string_equal(host, "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_channel_names),
        cmocka_unit_test(test_signature_known_answer),
        cmocka_unit_test(test_spec_rule),
        cmocka_unit_test(test_render_encodes_each_place),
        cmocka_unit_test(test_render_form_and_no_body),
        cmocka_unit_test(test_render_signs),
        cmocka_unit_test(test_render_signs_twice_in_rotation),
        cmocka_unit_test(test_url_host),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
