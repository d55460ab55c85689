/*  address_test.c — actor paths, names and addresses.

    Paths name actors inside a system ("/user/scheduler/splitter-1"); an
    address may prefix a path with the system it lives in, by name
    ("fq://billing/user/ledger") or by endpoint ("tcp://10.0.0.7:7000/user/x").
    Addresses arrive from configuration, other systems and HTTP requests, so
    every malformed one must be refused rather than half-understood.
*/
#include "fq_address.h"
#include "fq_error.h"
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

//  Room for any system part fq_address_split can return.
#define S_SYSTEM_SIZE (FQ_ADDRESS_MAX + 1)

//  Fills buf with "/aaa/aaa..." (segments of segment_len 'a's) exactly len
//  bytes long; the last segment may be shorter but never empty. Returns buf.
static char *s_path_of_length(char *buf, size_t len, size_t segment_len)
{
    size_t at = 0;
    while (at < len) {
        buf[at++] = '/';
        for (size_t k = 0; k < segment_len && at < len; k++)
            buf[at++] = 'a';
    }
    buf[at] = 0;
    assert_true(buf[len - 1] != '/'); //  The caller's len and segment_len fit
    return buf;
}

// --------------------------------------------------------------------------
//  Names

//  Names of letters, digits, '.', '_' and '-' up to 64 bytes are valid.
static void test_valid_names(void **unused)
{
    (void)unused;
    const char *names[] = {"user", "splitter-1", "a", "A_b.c-D9", "...", "-", "_", "0", "a..b"};
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++)
        if (!fq_name_valid(names[k]))
            fail_msg("\"%s\" refused", names[k]);

    char longest[FQ_NAME_MAX + 1];
    memset(longest, 'n', FQ_NAME_MAX);
    longest[FQ_NAME_MAX] = 0;
    assert_true(fq_name_valid(longest));
}

//  Empty, NULL, over-long, "." and "..", and names with any other byte
//  (slash, space, control, non-ASCII) are refused.
static void test_invalid_names(void **unused)
{
    (void)unused;
    const char *names[] = {
        "",    ".",   "..",  "a/b",  "/a",        "a b",  " a",    "a\r", "a\n",
        "a\t", "a:b", "a@b", "a%2f", "h\xc3\xa9", "\xff", "a\x7f", "a*",  "naïve",
    };
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++)
        if (fq_name_valid(names[k]))
            fail_msg("\"%s\" accepted", names[k]);
    assert_false(fq_name_valid(NULL));

    char too_long[FQ_NAME_MAX + 2];
    memset(too_long, 'n', FQ_NAME_MAX + 1);
    too_long[FQ_NAME_MAX + 1] = 0;
    assert_false(fq_name_valid(too_long));
}

// --------------------------------------------------------------------------
//  Paths

//  Well-formed local paths are valid, up to 64-byte segments and 255
//  bytes in all.
static void test_valid_paths(void **unused)
{
    (void)unused;
    const char *paths[] = {"/user",           "/user/scheduler/splitter-1", "/a",
                           "/system/gateway", "/user/a.b/c_d/e-f/0",        "/user/...",
                           "/..a/a.."};
    for (size_t k = 0; k < sizeof paths / sizeof paths[0]; k++)
        if (!fq_path_valid(paths[k]))
            fail_msg("\"%s\" refused", paths[k]);

    char path[FQ_PATH_MAX + 2];
    assert_true(fq_path_valid(s_path_of_length(path, FQ_PATH_MAX, FQ_NAME_MAX)));
    assert_true(fq_path_valid(s_path_of_length(path, FQ_PATH_MAX, 2)));
    assert_true(fq_path_valid(s_path_of_length(path, 1 + FQ_NAME_MAX, FQ_NAME_MAX)));
}

//  Malformed paths are refused: empty, relative, the root alone, empty
//  segments ("//", trailing slash), "." and ".." segments, bad bytes.
static void test_invalid_paths(void **unused)
{
    (void)unused;
    const char *paths[] = {
        "",           "user",       "user/a",
        "/",          "//",         "//user",
        "/user//a",   "/user/",     "/user/a/",
        "/.",         "/..",        "/user/./a",
        "/user/..",   "/user/../x", "/user/a b",
        "/user/a\r",  "/user/a\nb", "/user/\xc3\xa9t\xc3\xa9",
        "/user/a\\b", "/user/a?b",  "/user/a#b",
        " /user",     "/user ",     "fq://x/user",
    };
    for (size_t k = 0; k < sizeof paths / sizeof paths[0]; k++)
        if (fq_path_valid(paths[k]))
            fail_msg("\"%s\" accepted", paths[k]);
    assert_false(fq_path_valid(NULL));
}

//  A segment over 64 bytes, or a path over 255 bytes, is refused even
//  when every byte is otherwise fine.
static void test_path_length_limits(void **unused)
{
    (void)unused;
    char path[FQ_PATH_MAX + 2];
    assert_false(fq_path_valid(s_path_of_length(path, 1 + FQ_NAME_MAX + 1, FQ_NAME_MAX + 1)));
    assert_false(fq_path_valid(s_path_of_length(path, FQ_PATH_MAX + 1, FQ_NAME_MAX)));
    assert_false(fq_path_valid(s_path_of_length(path, FQ_PATH_MAX + 1, 1)));

    //  A long segment hidden after short ones is found too
    strcpy(path, "/user/");
    memset(path + 6, 'x', FQ_NAME_MAX + 1);
    path[6 + FQ_NAME_MAX + 1] = 0;
    assert_false(fq_path_valid(path));
}

// --------------------------------------------------------------------------
//  Addresses

//  A local path splits into an empty system part and the path itself.
static void test_split_local_path(void **unused)
{
    (void)unused;
    char system[S_SYSTEM_SIZE] = "garbage";
    const char *path = NULL;
    const char *address = "/user/scheduler";
    assert_int_equal(fq_address_split(address, system, sizeof system, &path), 0);
    assert_string_equal(system, "");
    assert_ptr_equal(path, address);
}

//  Remote addresses split into the system part (scheme included, as the
//  gateway routes on it) and a path pointing into the address.
static void test_split_remote_addresses(void **unused)
{
    (void)unused;
    const struct {
        const char *address;
        const char *system;
        const char *path;
    } cases[] = {
        {"fq://billing/user/ledger", "fq://billing", "/user/ledger"},
        {"fq://b-2.eu_west/user/a/b/c", "fq://b-2.eu_west", "/user/a/b/c"},
        {"tcp://10.0.0.7:7000/user/x", "tcp://10.0.0.7:7000", "/user/x"},
        {"tcp://mail.example.com:5555/system/gateway", "tcp://mail.example.com:5555",
         "/system/gateway"},
        {"tcp://[::1]:7000/user/x", "tcp://[::1]:7000", "/user/x"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char system[S_SYSTEM_SIZE];
        const char *path = NULL;
        int rc = fq_address_split(cases[c].address, system, sizeof system, &path);
        if (rc != 1)
            fail_msg("\"%s\": got %d", cases[c].address, rc);
        assert_string_equal(system, cases[c].system);
        assert_string_equal(path, cases[c].path);
        //  The path is the tail of the address, not a copy
        assert_ptr_equal(path, cases[c].address + strlen(cases[c].system));
    }
}

//  Malformed addresses are refused: empty, unknown or missing scheme,
//  missing or bad path, bad system name, endpoint without a port or with
//  bad bytes.
static void test_split_invalid_addresses(void **unused)
{
    (void)unused;
    const char *addresses[] = {
        "",
        "user/x",
        "udp://h:1/x",
        "FQ://billing/x",
        "fq:/billing/x",
        "http://h:1/x",
        "fq://billing",
        "fq://billing/",
        "fq://billing//x",
        "fq://billing/x/",
        "fq://billing/../x",
        "fq:///x",
        "fq://bad name/x",
        "fq://bad:name/x",
        "fq://n\xc3\xa9/x",
        "fq://./x",
        "fq://../x",
        "tcp://hostnoport/x",
        "tcp://:1/x",
        "tcp://h:/x",
        "tcp://h:abc/x",
        "tcp://h:0/x",
        "tcp://h:65536/x",
        "tcp://h:123456/x",
        "tcp://h:1",
        "tcp://h:1/",
        "tcp:///x",
        "tcp://h :1/x",
        "tcp://h:1 /x",
        "tcp://h\r:1/x",
        "tcp://h\n:1/x",
        "tcp://h\xc3\xa9:1/x",
        "tcp://h:1/a b",
        "tcp://h:1/user/./x",
        " fq://billing/x",
    };
    for (size_t k = 0; k < sizeof addresses / sizeof addresses[0]; k++) {
        char system[S_SYSTEM_SIZE] = "unchanged";
        const char *path = NULL;
        int rc = fq_address_split(addresses[k], system, sizeof system, &path);
        if (rc != FQ_EINVAL)
            fail_msg("\"%s\": got %d", addresses[k], rc);
        assert_null(path);
        //  A refused address leaves nothing in the caller's buffer
        assert_true(system[0] == 0 || strcmp(system, "unchanged") == 0);
    }
    char system[S_SYSTEM_SIZE];
    const char *path = NULL;
    assert_int_equal(fq_address_split(NULL, system, sizeof system, &path), FQ_EINVAL);
}

//  A system name over 64 bytes is refused; exactly 64 is fine.
static void test_split_system_name_length(void **unused)
{
    (void)unused;
    char address[FQ_ADDRESS_MAX + 1];
    char system[S_SYSTEM_SIZE];
    const char *path;

    strcpy(address, "fq://");
    memset(address + 5, 's', FQ_NAME_MAX);
    strcpy(address + 5 + FQ_NAME_MAX, "/user/x");
    assert_int_equal(fq_address_split(address, system, sizeof system, &path), 1);
    assert_string_equal(path, "/user/x");

    memset(address + 5, 's', FQ_NAME_MAX + 1);
    strcpy(address + 5 + FQ_NAME_MAX + 1, "/user/x");
    assert_int_equal(fq_address_split(address, system, sizeof system, &path), FQ_EINVAL);
}

//  The path part of a remote address obeys the same limits as a local
//  path, and the whole address may not exceed FQ_ADDRESS_MAX.
static void test_split_length_limits(void **unused)
{
    (void)unused;
    char address[FQ_ADDRESS_MAX + 64];
    char system[S_SYSTEM_SIZE];
    const char *path;

    strcpy(address, "fq://billing");
    s_path_of_length(address + strlen(address), FQ_PATH_MAX, FQ_NAME_MAX);
    assert_int_equal(fq_address_split(address, system, sizeof system, &path), 1);

    strcpy(address, "fq://billing");
    s_path_of_length(address + strlen(address), FQ_PATH_MAX + 1, FQ_NAME_MAX);
    assert_int_equal(fq_address_split(address, system, sizeof system, &path), FQ_EINVAL);

    //  A long endpoint with a short path, one byte over the address limit
    strcpy(address, "tcp://");
    size_t host_len = FQ_ADDRESS_MAX - strlen("tcp://") - strlen(":1/x") + 1;
    memset(address + 6, 'h', host_len);
    strcpy(address + 6 + host_len, ":1/x");
    assert_int_equal(strlen(address), FQ_ADDRESS_MAX + 1);
    assert_int_equal(fq_address_split(address, system, sizeof system, &path), FQ_EINVAL);

    //  ...and exactly at the limit it is accepted
    memset(address + 6, 'h', host_len - 1);
    strcpy(address + 6 + host_len - 1, ":1/x");
    assert_int_equal(strlen(address), FQ_ADDRESS_MAX);
    assert_int_equal(fq_address_split(address, system, sizeof system, &path), 1);
    assert_string_equal(path, "/x");
}

//  A system buffer too small for the system part is refused, never
//  overrun; one byte for the NUL is enough room beyond the text, and a
//  zero-size buffer is refused even for a local path.
static void test_split_system_buffer_too_small(void **unused)
{
    (void)unused;
    const char *address = "tcp://10.0.0.7:7000/user/x";
    size_t need = strlen("tcp://10.0.0.7:7000") + 1;
    const char *path;
    char exact[sizeof "tcp://10.0.0.7:7000"];
    assert_int_equal(sizeof exact, need);
    assert_int_equal(fq_address_split(address, exact, sizeof exact, &path), 1);
    assert_string_equal(exact, "tcp://10.0.0.7:7000");

    for (size_t size = 1; size < need; size++) {
        char *small = malloc(size); //  Heap, so AddressSanitizer sees any overrun
        assert_non_null(small);
        assert_int_equal(fq_address_split(address, small, size, &path), FQ_EINVAL);
        free(small);
    }
    char one[1];
    assert_int_equal(fq_address_split("/user/x", one, sizeof one, &path), 0);
    assert_string_equal(one, "");
    assert_int_equal(fq_address_split("/user/x", one, 0, &path), FQ_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_names),
        cmocka_unit_test(test_invalid_names),
        cmocka_unit_test(test_valid_paths),
        cmocka_unit_test(test_invalid_paths),
        cmocka_unit_test(test_path_length_limits),
        cmocka_unit_test(test_split_local_path),
        cmocka_unit_test(test_split_remote_addresses),
        cmocka_unit_test(test_split_invalid_addresses),
        cmocka_unit_test(test_split_system_name_length),
        cmocka_unit_test(test_split_length_limits),
        cmocka_unit_test(test_split_system_buffer_too_small),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
