/*  mail_headers_test.c — the rule a request's extra headers are held to
    (fq_mail_headers.h), as fairqd's API checks it at submit and
    fairq-sender before it writes them: field names, values that cannot
    add a header line, the fields fairq writes itself in any case, the
    length of a line. */
#include "fq_error.h"
#include "fq_mail_headers.h"
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

//  A value one byte too long for one line with a name of one character.
#define S_TOO_LONG (FQ_MAIL_HEADER_LINE_MAX - 2)

static int s_problem(const char *name, const char *value, char *reason)
{
    return fq_mail_header_problem(name, value, reason, FQ_MAIL_HEADER_REASON_SIZE);
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
    const char *owned[] = {
        "From",       "to",           "SUBJECT",      "date",
        "Message-Id", "mime-version", "content-type", "Content-transfer-encoding",
        "return-path"};
    for (size_t i = 0; i < sizeof owned / sizeof *owned; i++) {
        assert_true(fq_mail_header_owned(owned[i]));
        assert_int_equal(s_problem(owned[i], "x", reason), FQ_EINVAL);
        assert_non_null(strstr(reason, "written by fairq"));
    }
    size_t count = 0;
    while (fq_mail_header_owned_name(count))
        count++;
    assert_int_equal(count, sizeof owned / sizeof *owned);
    assert_false(fq_mail_header_owned("Reply-To"));
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_headers),
        cmocka_unit_test(test_injection_refused),
        cmocka_unit_test(test_owned_and_long_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
