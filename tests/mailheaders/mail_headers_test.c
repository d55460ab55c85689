/*  mail_headers_test.c — the rule a request's extra headers are held to
    (fq_mail_headers.h), as fairqd's API checks it at submit and
    fairq-sender before it writes them: field names, values that cannot
    add a header line, the fields fairq writes itself in any case (whole
    names and prefixes), the length of a line; and the rule of a whole
    set: no name twice in any case, no Reply-To among the headers given,
    at most FQ_MAIL_HEADERS_MAX headers and FQ_MAIL_HEADERS_BYTES_MAX
    bytes. */
#include "fq_error.h"
#include "fq_mail_headers.h"
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

//  A value one byte too long for one line with a name of one character.
#define S_TOO_LONG (FQ_MAIL_HEADER_LINE_MAX - 2)

//  Room for one more header than a request may give, to cross the limit.
#define S_SET_MAX (FQ_MAIL_HEADERS_MAX + 1)

//  A name "X-H<n>" written into a set's names.
#define S_NAME_SIZE 16

//  Values of headers that cross FQ_MAIL_HEADERS_BYTES_MAX together, each
//  well within a line: nine of them make more than 8 KiB.
#define S_BIG_VALUE  (FQ_MAIL_HEADER_LINE_MAX - S_NAME_SIZE)
#define S_BIG_FILLED (FQ_MAIL_HEADERS_BYTES_MAX / S_BIG_VALUE + 1)

static int s_problem(const char *name, const char *value, char *reason)
{
    return fq_mail_header_problem(name, value, reason, FQ_MAIL_HEADER_REASON_SIZE);
}

//  The problem of n headers together, with the index at fault in *at.
static int s_set_problem(const char *const *names, const char *const *values, size_t n,
                         fq_mail_headers_form_t form, size_t *at, char *reason)
{
    return fq_mail_headers_problem(names, values, n, form, at, reason, FQ_MAIL_HEADER_REASON_SIZE);
}

//  1. What a campaign gives: taken.
static void test_good_headers(void **unused)
{
    (void)unused;
    char reason[FQ_MAIL_HEADER_REASON_SIZE];
    assert_int_equal(s_problem("X-Campaign", "spring", reason), 0);
    assert_int_equal(s_problem("List-Id", "<news.example.org>", reason), 0);
    assert_int_equal(s_problem("List-Unsubscribe", "<https://example.org/u?a=1&b=2>", reason), 0);
    assert_int_equal(s_problem("Reply-To", "help@example.org", reason), 0);
    assert_int_equal(s_problem("X-Tab", "a\tb", reason), 0);
    assert_int_equal(s_problem("X-Empty", "", reason), 0);
    assert_int_equal(s_problem("X-Template", "{{name}}", reason), 0); //  Literal
}

//  2. A name is printable ASCII without ':' or space; a value holds no CR,
//  LF or other control, and no byte beyond ASCII. The reason quotes
//  neither.
static void test_injection_refused(void **unused)
{
    (void)unused;
    char reason[FQ_MAIL_HEADER_REASON_SIZE];
    const char *names[] = {"X-A\r\nBcc", "X A", "X-A:", "X-\x7F", "X-\xC3\xA9", "X-\t"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        assert_int_equal(s_problem(names[i], "v", reason), FQ_EHEADER);
        assert_non_null(strstr(reason, "of its name"));
        assert_null(strstr(reason, "Bcc"));
    }
    assert_int_equal(s_problem("X-A", "v\r\nBcc: x@evil.test", reason), FQ_EHEADER);
    assert_non_null(strstr(reason, "CR or LF"));
    assert_null(strstr(reason, "Bcc"));
    assert_int_equal(s_problem("X-A", "v\nBcc", reason), FQ_EHEADER);
    assert_int_equal(s_problem("X-A", "v\rBcc", reason), FQ_EHEADER);
    assert_int_equal(s_problem("X-A", "bell\a", reason), FQ_EHEADER);
    assert_int_equal(s_problem("X-A", "del\x7F", reason), FQ_EHEADER);
    assert_int_equal(s_problem("X-A", "caf\xC3\xA9", reason), FQ_EHEADER);
}

//  3. The fields fairq writes itself, in any case; no name or value; a
//  line longer than RFC 5322 allows.
static void test_owned_and_long_refused(void **unused)
{
    (void)unused;
    char reason[FQ_MAIL_HEADER_REASON_SIZE];
    const char *owned[] = {"From",
                           "to",
                           "SUBJECT",
                           "date",
                           "Message-Id",
                           "mime-version",
                           "content-type",
                           "Content-transfer-encoding",
                           "return-path",
                           "Content-Disposition",
                           "content-id",
                           "Sender",
                           "Cc",
                           "Bcc",
                           "Received",
                           "Resent-From",
                           "resent-message-id",
                           "DKIM-Signature",
                           "ARC-Seal",
                           "arc-authentication-results",
                           "Authentication-Results"};
    for (size_t i = 0; i < sizeof owned / sizeof *owned; i++) {
        assert_true(fq_mail_header_owned(owned[i]));
        assert_int_equal(s_problem(owned[i], "x", reason), FQ_EINVAL);
        assert_non_null(strstr(reason, "written by fairq"));
    }
    //  Prefixes are prefixes, whole names whole
    const char *free_names[] = {"X-Content-Type",     "Contents",      "X-Bcc",
                                "Bcc-Copy",           "Resent",        "ARC",
                                "DKIM-Signature-Old", "Received-SPF-X"};
    for (size_t i = 0; i < sizeof free_names / sizeof *free_names; i++)
        assert_false(fq_mail_header_owned(free_names[i]));
    //  Each entry of the list is owned itself, in any case
    size_t count = 0;
    for (const char *name; (name = fq_mail_header_owned_name(count)); count++)
        assert_true(fq_mail_header_owned(name));
    assert_true(count > 0);
    assert_false(fq_mail_header_owned(FQ_MAIL_HEADER_REPLY_TO));
    assert_false(fq_mail_header_owned("X-From"));
    assert_false(fq_mail_header_owned(NULL));

    assert_int_equal(s_problem("", "x", reason), FQ_EINVAL);
    assert_int_equal(s_problem(NULL, "x", reason), FQ_EINVAL);
    assert_int_equal(s_problem("X-A", NULL, reason), FQ_EINVAL);

    static char value[S_TOO_LONG + 1];
    memset(value, 'v', S_TOO_LONG);
    assert_int_equal(s_problem("X", value, reason), FQ_EINVAL);
    value[S_TOO_LONG - 1] = 0; //  "X: " and 995 characters: 998
    assert_int_equal(s_problem("X", value, reason), 0);
}

//  4. A set: each header by the rule of one, the index of a bad one told.
static void test_set_checks_each_header(void **unused)
{
    (void)unused;
    char reason[FQ_MAIL_HEADER_REASON_SIZE];
    size_t at = S_SET_MAX;
    const char *names[] = {"List-Id", "X-Campaign", "X-Evil"};
    const char *values[] = {"<news.example.org>", "spring", "v\r\nBcc: x@evil.test"};
    assert_int_equal(s_set_problem(names, values, 2, FQ_MAIL_HEADERS_GIVEN, &at, reason), 0);
    assert_int_equal(s_set_problem(NULL, NULL, 0, FQ_MAIL_HEADERS_GIVEN, &at, reason), 0);
    assert_int_equal(s_set_problem(names, values, 3, FQ_MAIL_HEADERS_GIVEN, &at, reason),
                     FQ_EHEADER);
    assert_int_equal(at, 2);
    assert_non_null(strstr(reason, "CR or LF"));
    names[2] = "Content-Disposition";
    values[2] = "attachment";
    assert_int_equal(s_set_problem(names, values, 3, FQ_MAIL_HEADERS_CARRIED, &at, reason),
                     FQ_EINVAL);
    assert_int_equal(at, 2);
    assert_non_null(strstr(reason, "written by fairq"));
    assert_int_equal(s_set_problem(NULL, values, 1, FQ_MAIL_HEADERS_GIVEN, &at, reason), FQ_EINVAL);
}

//  5. A name given twice, in any case, is refused at its second: X-Tag
//  and x-tag are one field.
static void test_set_refuses_a_name_twice(void **unused)
{
    (void)unused;
    char reason[FQ_MAIL_HEADER_REASON_SIZE];
    size_t at = 0;
    const char *names[] = {"X-A", "X-B", "x-a"};
    const char *values[] = {"1", "2", "3"};
    assert_int_equal(s_set_problem(names, values, 3, FQ_MAIL_HEADERS_GIVEN, &at, reason),
                     FQ_EINVAL);
    assert_int_equal(at, 2);
    assert_non_null(strstr(reason, "twice"));
    names[2] = "X-A";
    assert_int_equal(s_set_problem(names, values, 3, FQ_MAIL_HEADERS_CARRIED, &at, reason),
                     FQ_EINVAL);
    assert_int_equal(at, 2);
}

//  6. Reply-To is the request's reply_to: never among the headers given;
//  among those a message carries once, not twice (one from headers stored
//  by SQL, one from reply_to), and counted in neither limit.
static void test_set_reply_to(void **unused)
{
    (void)unused;
    char reason[FQ_MAIL_HEADER_REASON_SIZE];
    size_t at = 0;
    const char *names[] = {"X-A", "reply-to", FQ_MAIL_HEADER_REPLY_TO};
    const char *values[] = {"1", "a@example.org", "b@example.org"};
    assert_int_equal(s_set_problem(names, values, 2, FQ_MAIL_HEADERS_GIVEN, &at, reason),
                     FQ_EINVAL);
    assert_int_equal(at, 1);
    assert_non_null(strstr(reason, "reply_to"));
    assert_int_equal(s_set_problem(names, values, 2, FQ_MAIL_HEADERS_CARRIED, &at, reason), 0);
    assert_int_equal(s_set_problem(names, values, 3, FQ_MAIL_HEADERS_CARRIED, &at, reason),
                     FQ_EINVAL);
    assert_int_equal(at, 2);
    assert_non_null(strstr(reason, "twice"));
}

//  7. At most FQ_MAIL_HEADERS_MAX headers, refused at the one past it; a
//  message carries its reply_to besides them.
static void test_set_count(void **unused)
{
    (void)unused;
    char reason[FQ_MAIL_HEADER_REASON_SIZE];
    size_t at = 0;
    static char name_text[S_SET_MAX + 1][S_NAME_SIZE];
    const char *names[S_SET_MAX + 1], *values[S_SET_MAX + 1];
    for (size_t i = 0; i < S_SET_MAX; i++) {
        snprintf(name_text[i], S_NAME_SIZE, "X-H%zu", i);
        names[i] = name_text[i];
        values[i] = "v";
    }
    assert_int_equal(
        s_set_problem(names, values, FQ_MAIL_HEADERS_MAX, FQ_MAIL_HEADERS_GIVEN, &at, reason), 0);
    assert_int_equal(s_set_problem(names, values, S_SET_MAX, FQ_MAIL_HEADERS_GIVEN, &at, reason),
                     FQ_EINVAL);
    assert_int_equal(at, FQ_MAIL_HEADERS_MAX);
    assert_non_null(strstr(reason, "more than"));
    names[FQ_MAIL_HEADERS_MAX] = FQ_MAIL_HEADER_REPLY_TO;
    values[FQ_MAIL_HEADERS_MAX] = "help@example.org";
    assert_int_equal(s_set_problem(names, values, S_SET_MAX, FQ_MAIL_HEADERS_CARRIED, &at, reason),
                     0);
    names[S_SET_MAX] = "X-Past";
    values[S_SET_MAX] = "v";
    assert_int_equal(
        s_set_problem(names, values, S_SET_MAX + 1, FQ_MAIL_HEADERS_CARRIED, &at, reason),
        FQ_EINVAL);
    assert_int_equal(at, S_SET_MAX);
}

//  8. At most FQ_MAIL_HEADERS_BYTES_MAX bytes of names and values
//  together, refused at the header that crosses it.
static void test_set_bytes(void **unused)
{
    (void)unused;
    char reason[FQ_MAIL_HEADER_REASON_SIZE];
    size_t at = 0;
    static char value[S_BIG_VALUE + 1];
    memset(value, 'v', S_BIG_VALUE);
    static char name_text[S_BIG_FILLED][S_NAME_SIZE];
    const char *names[S_BIG_FILLED], *values[S_BIG_FILLED];
    for (size_t i = 0; i < S_BIG_FILLED; i++) {
        snprintf(name_text[i], S_NAME_SIZE, "X-H%zu", i);
        names[i] = name_text[i];
        values[i] = value;
    }
    assert_int_equal(
        s_set_problem(names, values, S_BIG_FILLED - 1, FQ_MAIL_HEADERS_GIVEN, &at, reason), 0);
    assert_int_equal(s_set_problem(names, values, S_BIG_FILLED, FQ_MAIL_HEADERS_GIVEN, &at, reason),
                     FQ_EINVAL);
    assert_int_equal(at, S_BIG_FILLED - 1);
    assert_non_null(strstr(reason, "bytes"));
}

//  9. The one printable-ASCII test: space to '~', tab besides in a span.
static void test_printable(void **unused)
{
    (void)unused;
    assert_true(fq_mail_printable(' '));
    assert_true(fq_mail_printable('~'));
    assert_false(fq_mail_printable('\t'));
    assert_false(fq_mail_printable(0x7F));
    assert_false(fq_mail_printable(0xC3));
    assert_int_equal(fq_mail_printable_span("a\tb", 3), 3);
    assert_int_equal(fq_mail_printable_span("ab\r\n", 4), 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_headers),
        cmocka_unit_test(test_injection_refused),
        cmocka_unit_test(test_owned_and_long_refused),
        cmocka_unit_test(test_set_checks_each_header),
        cmocka_unit_test(test_set_refuses_a_name_twice),
        cmocka_unit_test(test_set_reply_to),
        cmocka_unit_test(test_set_count),
        cmocka_unit_test(test_set_bytes),
        cmocka_unit_test(test_printable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
