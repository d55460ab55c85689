/*  report_test.c — reading reports that come back after delivery
    (reports/fq_report.h): the DSN and ARF samples in samples/, written
    after the examples of RFC 3464 (section 9) and RFC 5965 (appendix B)
    with fairq's Message-IDs, and input that is no report: each refused
    with its reason, none a crash.
*/
#include "fq_report.h"
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#define S_ERROR_SIZE 256

//  A sample's text, one allocation the caller frees; *size its length.
static char *s_sample(const char *name, size_t *size)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", FQ_REPORT_SAMPLES, name);
    FILE *file = fopen(path, "rb");
    assert_non_null(file);
    fseek(file, 0, SEEK_END);
    long length = ftell(file);
    fseek(file, 0, SEEK_SET);
    char *text = malloc((size_t)length + 1);
    assert_non_null(text);
    assert_int_equal(fread(text, 1, (size_t)length, file), (size_t)length);
    text[length] = 0;
    fclose(file);
    *size = (size_t)length;
    return text;
}

static fq_report_t *s_parse_sample(const char *name, char *error)
{
    size_t size;
    char *text = s_sample(name, &size);
    fq_report_t *report = fq_report_parse(text, size, error, S_ERROR_SIZE);
    free(text);
    return report;
}

//  RFC 3464 9.1: one recipient, failed with a 4.0.0 status (the MTA gave
//  up after five days), and the returned message whole.
static void test_dsn_simple(void **unused)
{
    (void)unused;
    char error[S_ERROR_SIZE];
    fq_report_t *report = s_parse_sample("dsn_simple.eml", error);
    assert_non_null(report);
    assert_int_equal(report->kind, FQ_REPORT_DSN);
    assert_string_equal(fq_report_kind_name(report->kind), "dsn");
    assert_string_equal(report->message_id, "fairq.42@mail.example.org");
    assert_null(report->feedback_type);
    assert_int_equal(report->count, 1);
    assert_string_equal(report->recipients[0].recipient, "louisl@larry.slip.umd.edu");
    assert_string_equal(report->recipients[0].original_recipient, "louisl@larry.slip.umd.edu");
    assert_string_equal(report->recipients[0].action, "failed");
    assert_string_equal(report->recipients[0].status, "4.0.0");
    assert_string_equal(report->recipients[0].diagnostic, "smtp; 426 connection timed out");
    int64_t id;
    assert_int_equal(fq_report_fairq_id(report->message_id, &id), 0);
    assert_int_equal(id, 42);
    fq_report_destroy(&report);
    assert_null(report);
    fq_report_destroy(&report);
}

//  RFC 3464 9.2: three recipients (failed, delayed, failed), a folded
//  Diagnostic-Code, a comment after the Status, and the returned headers
//  only, their Message-ID folded and commented.
static void test_dsn_multi(void **unused)
{
    (void)unused;
    char error[S_ERROR_SIZE];
    fq_report_t *report = s_parse_sample("dsn_multi.eml", error);
    assert_non_null(report);
    assert_int_equal(report->kind, FQ_REPORT_DSN);
    assert_string_equal(report->message_id, "fairq.1234567@mail.example.org");
    assert_int_equal(report->count, 3);
    assert_string_equal(report->recipients[0].recipient, "arathib@vnet.ibm.com");
    assert_string_equal(report->recipients[0].status, "5.0.0");
    assert_string_equal(report->recipients[0].diagnostic,
                        "smtp;  550 'arathib@vnet.IBM.COM' is not a registered gateway user");
    assert_string_equal(report->recipients[1].recipient, "johnh@hpnjld.njd.hp.com");
    assert_string_equal(report->recipients[1].action, "delayed");
    assert_string_equal(report->recipients[1].status, "4.0.0");
    assert_null(report->recipients[1].diagnostic);
    assert_string_equal(report->recipients[2].recipient, "wsnell@sdcc13.ucsd.edu");
    assert_string_equal(report->recipients[2].action, "failed");
    assert_string_equal(report->recipients[2].diagnostic, "smtp; 550 user unknown");
    fq_report_destroy(&report);
}

//  A Postfix-like bounce: the delivery-status part in base64 with CRLF
//  lines, which GMime decodes; Final-Recipient in another case than
//  Original-Recipient.
static void test_dsn_base64(void **unused)
{
    (void)unused;
    char error[S_ERROR_SIZE];
    fq_report_t *report = s_parse_sample("dsn_base64.eml", error);
    assert_non_null(report);
    assert_string_equal(report->message_id, "fairq.7@mail.example.org");
    assert_int_equal(report->count, 1);
    assert_string_equal(report->recipients[0].recipient, "Bob@Example.NET");
    assert_string_equal(report->recipients[0].original_recipient, "bob@example.net");
    assert_string_equal(report->recipients[0].status, "5.1.1");
    assert_string_equal(report->recipients[0].diagnostic,
                        "smtp; 550 5.1.1 <bob@example.net>: Recipient address rejected: User "
                        "unknown in local recipient table");
    fq_report_destroy(&report);
}

//  The same message with CRLF line ends throughout reads the same.
static void test_crlf(void **unused)
{
    (void)unused;
    size_t size;
    char *text = s_sample("dsn_multi.eml", &size);
    char *crlf = malloc(size * 2 + 1);
    assert_non_null(crlf);
    size_t n = 0;
    for (size_t i = 0; i < size; i++) {
        if (text[i] == '\n')
            crlf[n++] = '\r';
        crlf[n++] = text[i];
    }
    char error[S_ERROR_SIZE];
    fq_report_t *report = fq_report_parse(crlf, n, error, sizeof error);
    assert_non_null(report);
    assert_int_equal(report->count, 3);
    assert_string_equal(report->recipients[2].diagnostic, "smtp; 550 user unknown");
    assert_string_equal(report->message_id, "fairq.1234567@mail.example.org");
    fq_report_destroy(&report);
    free(crlf);
    free(text);
}

//  RFC 5965 B.1: no Original-Rcpt-To, so the recipient is the returned
//  message's To.
static void test_arf_simple(void **unused)
{
    (void)unused;
    char error[S_ERROR_SIZE];
    fq_report_t *report = s_parse_sample("arf_simple.eml", error);
    assert_non_null(report);
    assert_int_equal(report->kind, FQ_REPORT_ARF);
    assert_string_equal(fq_report_kind_name(report->kind), "arf");
    assert_string_equal(report->feedback_type, "abuse");
    assert_string_equal(report->message_id, "fairq.99@mail.example.org");
    assert_int_equal(report->count, 1);
    assert_string_equal(report->recipients[0].recipient, "Carol@Example.com");
    assert_null(report->recipients[0].action);
    assert_null(report->recipients[0].status);
    fq_report_destroy(&report);
}

//  RFC 5965 B.2: every optional field, Original-Rcpt-To, the returned
//  headers only (their To says nothing: Original-Rcpt-To holds).
static void test_arf_full(void **unused)
{
    (void)unused;
    char error[S_ERROR_SIZE];
    fq_report_t *report = s_parse_sample("arf_full.eml", error);
    assert_non_null(report);
    assert_int_equal(report->kind, FQ_REPORT_ARF);
    assert_string_equal(report->feedback_type, "abuse");
    assert_string_equal(report->message_id, "fairq.100@mail.example.org");
    assert_int_equal(report->count, 1);
    assert_string_equal(report->recipients[0].recipient, "user@example.com");
    fq_report_destroy(&report);
}

static void s_refused(const char *text, size_t size, const char *words)
{
    char error[S_ERROR_SIZE] = "unchanged";
    fq_report_t *report = fq_report_parse(text, size, error, sizeof error);
    assert_null(report);
    if (!strstr(error, words))
        fail_msg("error \"%s\" does not say \"%s\"", error, words);
}

static void s_refused_sample(const char *name, const char *words)
{
    size_t size;
    char *text = s_sample(name, &size);
    s_refused(text, size, words);
    free(text);
}

//  What is not a report is refused with its reason.
static void test_not_reports(void **unused)
{
    (void)unused;
    s_refused_sample("not_report.eml", "text/plain, not multipart/report");
    s_refused_sample("dsn_missing_status.eml", "no message/delivery-status part");
    s_refused_sample("report_other_type.eml", "report-type \"disposition-notification\"");
    s_refused("", 0, "empty");
    s_refused(NULL, 0, "empty");
    const char garbage[] = "\x01\x02\xff\xfe garbage \0 with a NUL\n\n\n--";
    s_refused(garbage, sizeof garbage - 1, "not a report");
    s_refused("no colon here\n", 14, "not a report");
}

//  A DSN whose status part names no recipient, an ARF without its
//  Feedback-Type.
static void test_missing_fields(void **unused)
{
    (void)unused;
    const char *dsn = "Content-Type: multipart/report; report-type=delivery-status; boundary=b\n\n"
                      "--b\nContent-Type: message/delivery-status\n\nReporting-MTA: dns; x\n\n"
                      "Action: failed\nStatus: 5.1.1\n--b--\n";
    s_refused(dsn, strlen(dsn), "no Final-Recipient");
    const char *arf = "Content-Type: multipart/report; report-type=feedback-report; boundary=b\n\n"
                      "--b\nContent-Type: message/feedback-report\n\nUser-Agent: x\nVersion: 1\n"
                      "--b--\n";
    s_refused(arf, strlen(arf), "no Feedback-Type");
}

//  Too large is refused before it is read; many recipients are cut at
//  FQ_REPORT_RECIPIENTS_MAX; a field longer than FQ_REPORT_FIELD_MAX is
//  cut.
static void test_limits(void **unused)
{
    (void)unused;
    size_t huge = FQ_REPORT_SIZE_MAX + 1;
    char *text = malloc(huge);
    assert_non_null(text);
    memset(text, 'a', huge);
    s_refused(text, huge, "too large");
    free(text);

    const char *head = "Content-Type: multipart/report; report-type=delivery-status; boundary=b\n\n"
                       "--b\nContent-Type: message/delivery-status\n\nReporting-MTA: dns; x\n";
    size_t room = strlen(head) + (FQ_REPORT_RECIPIENTS_MAX * 2) * 80 + 3 * FQ_REPORT_FIELD_MAX;
    char *many = malloc(room);
    assert_non_null(many);
    size_t n = (size_t)snprintf(many, room, "%s", head);
    for (int i = 0; i < FQ_REPORT_RECIPIENTS_MAX * 2; i++)
        n += (size_t)snprintf(many + n, room - n,
                              "\nFinal-Recipient: rfc822;r%d@example.com\nAction: failed\n", i);
    n += (size_t)snprintf(many + n, room - n, "Diagnostic-Code: smtp; ");
    memset(many + n, 'x', 2 * FQ_REPORT_FIELD_MAX);
    n += 2 * FQ_REPORT_FIELD_MAX;
    n += (size_t)snprintf(many + n, room - n, "\n--b--\n");
    char error[S_ERROR_SIZE];
    fq_report_t *report = fq_report_parse(many, n, error, sizeof error);
    assert_non_null(report);
    assert_int_equal(report->count, FQ_REPORT_RECIPIENTS_MAX);
    assert_string_equal(report->recipients[FQ_REPORT_RECIPIENTS_MAX - 1].recipient,
                        "r99@example.com");
    assert_null(report->message_id);
    fq_report_destroy(&report);
    free(many);
}

//  Every prefix of a sample, and the sample with bytes flipped, parses or
//  is refused, never a crash (the sanitizers watch).
static void test_truncated_and_mangled(void **unused)
{
    (void)unused;
    static const char *const names[] = {"dsn_multi.eml", "arf_full.eml", "dsn_base64.eml"};
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        size_t size;
        char *text = s_sample(names[k], &size);
        char error[S_ERROR_SIZE];
        for (size_t cut = 0; cut <= size; cut += 7) {
            fq_report_t *report = fq_report_parse(text, cut, error, sizeof error);
            fq_report_destroy(&report);
        }
        unsigned seed = 1;
        for (int round = 0; round < 300; round++) {
            char *copy = malloc(size);
            assert_non_null(copy);
            memcpy(copy, text, size);
            for (int flips = 0; flips < 8; flips++) {
                seed = seed * 1103515245u + 12345u;
                copy[(seed >> 8) % size] = (char)(seed >> 16);
            }
            fq_report_t *report = fq_report_parse(copy, size, error, sizeof error);
            fq_report_destroy(&report);
            free(copy);
        }
        free(text);
    }
}

static void test_fairq_id(void **unused)
{
    (void)unused;
    int64_t id = 0;
    assert_int_equal(fq_report_fairq_id("<fairq.123@host>", &id), 0);
    assert_int_equal(id, 123);
    assert_int_equal(fq_report_fairq_id("fairq.9223372036854775807@h.example", &id), 0);
    assert_int_equal(id, INT64_MAX);
    assert_int_equal(fq_report_fairq_id("fairq.9223372036854775808@h", &id), -1);
    assert_int_equal(fq_report_fairq_id("<fairq.0@host>", &id), -1);
    assert_int_equal(fq_report_fairq_id("<fairq.12@>", &id), -1);
    assert_int_equal(fq_report_fairq_id("<fairq.12@host", &id), -1);
    assert_int_equal(fq_report_fairq_id("fairq.12@host>", &id), -1);
    assert_int_equal(fq_report_fairq_id("<fairq.-1@host>", &id), -1);
    assert_int_equal(fq_report_fairq_id("<other.12@host>", &id), -1);
    assert_int_equal(fq_report_fairq_id("<fairq.12x@host>", &id), -1);
    assert_int_equal(fq_report_fairq_id(NULL, &id), -1);
}

static void test_address(void **unused)
{
    (void)unused;
    char out[64];
    assert_int_equal(fq_report_address("rfc822; Bob@Example.com", out, sizeof out), 15);
    assert_string_equal(out, "Bob@Example.com");
    fq_report_address("rfc822;<bob@example.com> ", out, sizeof out);
    assert_string_equal(out, "bob@example.com");
    fq_report_address("<bob@example.com>", out, sizeof out);
    assert_string_equal(out, "bob@example.com");
    fq_report_address("utf-8; b\xc3\xb6"
                      "b@example.com",
                      out, sizeof out);
    assert_string_equal(out, "b\xc3\xb6"
                             "b@example.com");
    assert_int_equal(fq_report_address("rfc822;", out, sizeof out), 0);
    assert_int_equal(fq_report_address("rfc822; averylongaddress@example.com", out, 8), 7);
    assert_string_equal(out, "averylo");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dsn_simple),  cmocka_unit_test(test_dsn_multi),
        cmocka_unit_test(test_dsn_base64),  cmocka_unit_test(test_crlf),
        cmocka_unit_test(test_arf_simple),  cmocka_unit_test(test_arf_full),
        cmocka_unit_test(test_not_reports), cmocka_unit_test(test_missing_fields),
        cmocka_unit_test(test_limits),      cmocka_unit_test(test_truncated_and_mangled),
        cmocka_unit_test(test_fairq_id),    cmocka_unit_test(test_address),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
