/*  domain_test.c — what a destination's domain is (fq_domain.h): the
    names the schema takes, each fault said in words, capitals lowered
    first. (store_destinations_test holds the limits against the schema.) */
#include "fq_domain.h"
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

static const char *s_problem(const char *domain)
{
    return fq_domain_problem(domain, strlen(domain));
}

static void test_good_domains(void **unused)
{
    (void)unused;
    static const char *const good[] = {"gmail.com",     "a",      "localhost", "xn--bcher-kva.de",
                                       "1-2.3.example", "x.y.z.w"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        if (s_problem(good[i]))
            fail_msg("%s: %s", good[i], s_problem(good[i]));
}

static void test_faults_in_words(void **unused)
{
    (void)unused;
    static const struct {
        const char *domain, *words;
    } bad[] = {
        {"", "is empty"},
        {"Gmail.com", "other than a-z"},
        {"a b", "other than a-z"},
        {"a@b", "other than a-z"},
        {"a:25", "other than a-z"},
        {"b\xc3\xbc"
         "cher.de",
         "xn--"},
        {"a..b", "empty label"},
        {"a.", "empty label"},
        {".a", "empty label"},
        {"-a", "starts or ends with '-'"},
        {"a.b-", "starts or ends with '-'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *problem = s_problem(bad[i].domain);
        if (!problem || !strstr(problem, bad[i].words))
            fail_msg("\"%s\": %s, wanted \"%s\"", bad[i].domain, problem ? problem : "(good)",
                     bad[i].words);
    }
    //  A NUL within the size is a character like any other not allowed
    assert_non_null(fq_domain_problem("a\0b", 3));
    assert_non_null(fq_domain_problem(NULL, 0));
}

static void test_lengths(void **unused)
{
    (void)unused;
    char label[FQ_DOMAIN_LABEL_MAX + 2];
    memset(label, 'a', sizeof label - 1);
    label[FQ_DOMAIN_LABEL_MAX] = 0;
    assert_null(s_problem(label));
    label[FQ_DOMAIN_LABEL_MAX] = 'a';
    label[FQ_DOMAIN_LABEL_MAX + 1] = 0;
    assert_non_null(strstr(s_problem(label), "longer than 63"));
    char name[FQ_DOMAIN_MAX + 2];
    for (size_t i = 0; i < sizeof name - 1; i++)
        name[i] = i % 2 ? '.' : 'a';
    name[FQ_DOMAIN_MAX] = 0;
    assert_null(s_problem(name));
    name[FQ_DOMAIN_MAX] = '.';
    name[FQ_DOMAIN_MAX + 1] = 0;
    assert_non_null(strstr(s_problem(name), "is longer than 253"));
}

static void test_lower(void **unused)
{
    (void)unused;
    char domain[] = "GoogleMail.COM";
    fq_domain_lower(domain);
    assert_string_equal(domain, "googlemail.com");
    assert_null(s_problem(domain));
    fq_domain_lower(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_domains),
        cmocka_unit_test(test_faults_in_words),
        cmocka_unit_test(test_lengths),
        cmocka_unit_test(test_lower),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
