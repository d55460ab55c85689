/*  console_files_test.c — the web console's files as fairqd serves them
    (console/fq_console.h): every file of console/ is built in, as it is;
    every file the page or a script loads is one of them; and none breaks
    the rules its Content-Security-Policy sets (api/fq_api_console.c): no
    inline script, no inline event handler, no style attribute, and no
    markup made from text (innerHTML and its kin), so that a tenant's name
    or a relay's error can never become script. */
#include "fq_console.h"
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

static bool s_ends_with(const char *text, const char *end)
{
    size_t length = strlen(text), end_length = strlen(end);
    return length >= end_length && strcmp(text + length - end_length, end) == 0;
}

static bool s_web_file(const char *name)
{
    return s_ends_with(name, ".html") || s_ends_with(name, ".css") || s_ends_with(name, ".js");
}

//  The whole of console/NAME; the caller frees it.
static char *s_read_source(const char *name, size_t *size)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", FQ_CONSOLE_SOURCE_DIR, name);
    FILE *file = fopen(path, "rb");
    assert_non_null(file);
    assert_int_equal(fseek(file, 0, SEEK_END), 0);
    long length = ftell(file);
    assert_true(length >= 0);
    rewind(file);
    char *text = malloc((size_t)length + 1);
    assert_non_null(text);
    assert_int_equal(fread(text, 1, (size_t)length, file), (size_t)length);
    text[length] = '\0';
    fclose(file);
    *size = (size_t)length;
    return text;
}

static void test_every_file_of_the_folder_is_built_in_as_it_is(void **state)
{
    (void)state;
    DIR *dir = opendir(FQ_CONSOLE_SOURCE_DIR);
    assert_non_null(dir);
    int files = 0;
    for (struct dirent *entry; (entry = readdir(dir));) {
        if (!s_web_file(entry->d_name))
            continue;
        const fq_console_file_t *file = fq_console_find(entry->d_name);
        if (!file)
            fail_msg("console/%s is not in FQ_CONSOLE_FILES (console/CMakeLists.txt)",
                     entry->d_name);
        size_t size;
        char *source = s_read_source(entry->d_name, &size);
        assert_int_equal(file->size, size);
        assert_memory_equal(file->data, source, size);
        assert_int_equal(file->data[file->size], '\0');
        free(source);
        files++;
    }
    closedir(dir);
    assert_true(files >= 3);
}

static void test_each_file_has_its_media_type(void **state)
{
    (void)state;
    const fq_console_file_t *index = fq_console_find(FQ_CONSOLE_INDEX);
    assert_non_null(index);
    assert_string_equal(index->type, "text/html; charset=utf-8");
    for (const fq_console_file_t *file = fq_console_files; file->name; file++) {
        if (s_ends_with(file->name, ".js"))
            assert_string_equal(file->type, "text/javascript; charset=utf-8");
        else if (s_ends_with(file->name, ".css"))
            assert_string_equal(file->type, "text/css; charset=utf-8");
    }
    assert_null(fq_console_find("nope.js"));
    assert_null(fq_console_find(""));
    assert_null(fq_console_find("../CMakeLists.txt"));
}

//  Calls check for each text between before and the next quote after it.
static void s_each_reference(const char *text, const char *before, char quote,
                             void (*check)(const char *name, const char *in), const char *in)
{
    for (const char *at = strstr(text, before); at; at = strstr(at + 1, before)) {
        const char *start = at + strlen(before);
        const char *end = strchr(start, quote);
        assert_non_null(end);
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)(end - start), start);
        check(name, in);
    }
}

static void s_must_be_built_in(const char *name, const char *in)
{
    if (!fq_console_find(name))
        fail_msg("%s loads %s, which the console does not have", in, name);
}

static void test_what_the_page_and_scripts_load_is_there(void **state)
{
    (void)state;
    const fq_console_file_t *index = fq_console_find(FQ_CONSOLE_INDEX);
    //  The page loads its files by absolute path under /console/
    s_each_reference(index->data, "src=\"/console/", '"', s_must_be_built_in, index->name);
    s_each_reference(index->data, "href=\"/console/", '"', s_must_be_built_in, index->name);
    assert_non_null(strstr(index->data, "src=\"/console/console.js\""));
    //  The scripts import one another by relative path
    for (const fq_console_file_t *file = fq_console_files; file->name; file++)
        if (s_ends_with(file->name, ".js"))
            s_each_reference(file->data, "from \"./", '"', s_must_be_built_in, file->name);
}

//  Whether text has an attribute whose name starts with prefix: the
//  name after a space or a line break, then its "=".
static bool s_has_attribute_prefix(const char *text, const char *prefix)
{
    for (const char *at = strstr(text, prefix); at; at = strstr(at + 1, prefix)) {
        if (at == text || (at[-1] != ' ' && at[-1] != '\n'))
            continue;
        const char *name_end = at + strlen(prefix);
        while (*name_end >= 'a' && *name_end <= 'z')
            name_end++;
        if (*name_end == '=')
            return true;
    }
    return false;
}

static void test_no_file_breaks_the_content_security_policy(void **state)
{
    (void)state;
    for (const fq_console_file_t *file = fq_console_files; file->name; file++) {
        if (s_ends_with(file->name, ".html")) {
            //  Every <script> loads a file: no inline script
            for (const char *at = strstr(file->data, "<script"); at;
                 at = strstr(at + 1, "<script")) {
                const char *end = strchr(at, '>');
                assert_non_null(end);
                char tag[512];
                snprintf(tag, sizeof tag, "%.*s", (int)(end - at), at);
                if (!strstr(tag, " src=\""))
                    fail_msg("%s has an inline script: %s", file->name, tag);
            }
            if (s_has_attribute_prefix(file->data, "on"))
                fail_msg("%s has an inline event handler (on...=)", file->name);
            if (s_has_attribute_prefix(file->data, "style"))
                fail_msg("%s has a style attribute", file->name);
            assert_null(strstr(file->data, "<style"));
            //  Nothing from elsewhere: no CDN, works offline
            assert_null(strstr(file->data, "http://"));
            assert_null(strstr(file->data, "https://"));
        }
        if (s_ends_with(file->name, ".js")) {
            static const char *const markup[] = {
                "innerHTML",      "outerHTML", "insertAdjacentHTML",
                "document.write", "eval(",     "new Function"};
            for (size_t i = 0; i < sizeof markup / sizeof markup[0]; i++)
                if (strstr(file->data, markup[i]))
                    fail_msg("%s uses %s: text must go in as text", file->name, markup[i]);
            //  The token goes in a header, never in a cookie or an address
            assert_null(strstr(file->data, "document.cookie"));
            assert_null(strstr(file->data, "localStorage"));
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_file_of_the_folder_is_built_in_as_it_is),
        cmocka_unit_test(test_each_file_has_its_media_type),
        cmocka_unit_test(test_what_the_page_and_scripts_load_is_there),
        cmocka_unit_test(test_no_file_breaks_the_content_security_policy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
