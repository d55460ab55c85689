/*  destinations_file_test.c — fairqd's destinations_file read
    (fq_destinations_file.h): a file of every form (fields in any order,
    none, comments, blank lines, CRLF, tabs, capitals in domains) and what
    it says; each fault said as PATH:LINE with its reason; a file read from
    disk, and one that is missing. No database: writing the specs is the
    store's (tests/sql/store_destinations_test.c). */
#include "fq_destinations_file.h"
#include "fq_error.h"
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#define S_ERROR_SIZE 1024

static int s_parse(const char *text, fq_destinations_file_t *file, char *error)
{
    return fq_destinations_file_parse(text, strlen(text), "dest.conf", file, error, S_ERROR_SIZE);
}

static void test_a_file_of_every_form(void **unused)
{
    (void)unused;
    const char *text = "# Destinations of the example\n"
                       "\n"
                       "google   rate=100/s burst=200 max_inflight=50 "
                       "domains=GMail.com,googlemail.com  # the big one\n"
                       "\tyahoo\tdomains=yahoo.com rate=5/min\r\n"
                       "default  rate=1000/h max_inflight=none\n"
                       "bare\n"
                       "open rate=none domains=\n"
                       "   # indented comment\n";
    fq_destinations_file_t file;
    char error[S_ERROR_SIZE] = "";
    int rc = s_parse(text, &file, error);
    if (rc)
        fail_msg("%s", error);
    assert_int_equal(file.count, 5);
    const fq_destination_spec_t *g = &file.specs[0];
    assert_string_equal(g->name, "google");
    assert_int_equal(file.lines[0], 3);
    assert_int_equal(g->rate_count, 100);
    assert_int_equal(g->rate_period_s, 1);
    assert_int_equal(g->burst, 200);
    assert_int_equal(g->max_inflight, 50);
    assert_int_equal(g->ndomains, 2);
    assert_string_equal(g->domains[0], "gmail.com");
    assert_string_equal(g->domains[1], "googlemail.com");
    const fq_destination_spec_t *y = &file.specs[1];
    assert_string_equal(y->name, "yahoo");
    assert_int_equal(y->rate_count, 5);
    assert_int_equal(y->rate_period_s, 60);
    assert_int_equal(y->burst, 0);
    assert_int_equal(y->ndomains, 1);
    assert_string_equal(y->domains[0], "yahoo.com");
    assert_string_equal(file.specs[2].name, "default");
    assert_int_equal(file.specs[2].rate_period_s, 3600);
    assert_int_equal(file.specs[2].max_inflight, 0);
    assert_int_equal(file.specs[2].ndomains, 0);
    assert_null(file.specs[2].domains);
    //  Every field left out is none
    assert_string_equal(file.specs[3].name, "bare");
    assert_int_equal(file.specs[3].rate_count, 0);
    assert_int_equal(file.specs[3].rate_period_s, 0);
    assert_int_equal(file.specs[3].max_inflight, 0);
    assert_int_equal(file.specs[3].ndomains, 0);
    assert_string_equal(file.specs[4].name, "open");
    assert_int_equal(file.specs[4].ndomains, 0);
    assert_int_equal(file.lines[4], 7);
    fq_destinations_file_free(&file);
    assert_null(file.specs);

    //  Nothing at all is no destination
    assert_int_equal(s_parse("", &file, error), 0);
    assert_int_equal(file.count, 0);
    fq_destinations_file_free(&file);
    assert_int_equal(s_parse("# only\n\n", &file, error), 0);
    assert_int_equal(file.count, 0);
    fq_destinations_file_free(&file);
}

static void test_faults_name_their_line(void **unused)
{
    (void)unused;
    static const struct {
        const char *text, *words;
    } bad[] = {
        {"Google rate=1/s\n", "dest.conf:1: \"Google\" is not a destination name"},
        {"\n\nx rate=10/x\n", "dest.conf:3: destination \"x\": rate \"10/x\""},
        {"x rate=\n", "dest.conf:1: destination \"x\": rate"},
        {"x speed=10/s\n", "dest.conf:1: destination \"x\": unknown field \"speed\""},
        {"x rate\n", "rate needs a value"},
        {"x rate=1/s rate=2/s\n", "rate is given twice"},
        {"x burst=5\n", "dest.conf:1: destination \"x\": burst needs a rate"},
        {"x rate=1/s burst=0\n", "burst must be a whole number within 1..1000000"},
        {"x rate=1/s burst=1000001\n", "within 1..1000000"},
        {"x rate=1/s burst=none\n", "burst must be a whole number"},
        {"x max_inflight=-1\n", "max_inflight must be a whole number within 1..1000000 or none"},
        {"x max_inflight=5x\n", "max_inflight must be"},
        {"x domains=a..com\n", "destination \"x\": domain \"a..com\" has an empty label"},
        {"x domains=a.com,\n", "domain \"\" is empty"},
        {"x domains=a.com,A.COM\n", "dest.conf:1: destination \"x\": domain \"a.com\" is given "
                                    "twice"},
        {"a domains=a.com\nb domains=b.com,a.com\n",
         "dest.conf:2: domain \"a.com\" is given to \"b\" here and to \"a\" at line 1"},
        {"a\n\na rate=1/s\n", "dest.conf:3: destination \"a\" is named again (first at line 1)"},
        {"default domains=a.com\n", "dest.conf:1: the destination \"default\" takes no domains"},
        {"x rate=1/s\ny rate=1/s\0z\n", "dest.conf:2: holds a NUL byte"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        fq_destinations_file_t file;
        char error[S_ERROR_SIZE] = "";
        //  The NUL case: its size counted past the NUL
        size_t size = strlen(bad[i].text);
        if (strstr(bad[i].words, "NUL"))
            size += 1 + strlen(bad[i].text + size + 1);
        int rc =
            fq_destinations_file_parse(bad[i].text, size, "dest.conf", &file, error, sizeof error);
        if (rc != FQ_EINVAL || !strstr(error, bad[i].words))
            fail_msg("%s: %s (%s), wanted \"%s\"", bad[i].text, error, fq_err_name(rc),
                     bad[i].words);
        fq_destinations_file_free(&file);
    }
    //  Too many domains in one line
    size_t size = 10 + (size_t)(FQ_DESTINATION_DOMAINS_MAX + 1) * 16;
    char *many = malloc(size);
    assert_non_null(many);
    int at = snprintf(many, size, "x domains=");
    for (int i = 0; i <= FQ_DESTINATION_DOMAINS_MAX; i++)
        at += snprintf(many + at, size - (size_t)at, "%sd%d.example", i ? "," : "", i);
    fq_destinations_file_t file;
    char error[S_ERROR_SIZE] = "";
    assert_int_equal(s_parse(many, &file, error), FQ_EINVAL);
    assert_non_null(strstr(error, "more than 1000 domains"));
    fq_destinations_file_free(&file);
    free(many);
}

static void test_read_from_disk(void **unused)
{
    (void)unused;
    char path[] = "/tmp/fq_destinations_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char *text = "google rate=100/s domains=gmail.com\n";
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    fq_destinations_file_t file;
    char error[S_ERROR_SIZE] = "";
    int rc = fq_destinations_file_read(path, &file, error, sizeof error);
    if (rc)
        fail_msg("%s", error);
    assert_int_equal(file.count, 1);
    assert_string_equal(file.specs[0].domains[0], "gmail.com");
    fq_destinations_file_free(&file);
    unlink(path);
    assert_int_equal(fq_destinations_file_read(path, &file, error, sizeof error), FQ_EIO);
    assert_non_null(strstr(error, path));
    assert_non_null(strstr(error, "could not open"));
    fq_destinations_file_free(&file);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_file_of_every_form),
        cmocka_unit_test(test_faults_name_their_line),
        cmocka_unit_test(test_read_from_disk),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
