/*  recipient_address_test.c — what a tenant is told about an address:
    the good ones of every shape pass, and each fault is named in the exact
    words a reject (or a refused from address) carries. */
#include "fq_recipients.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

static const char *s_problem(const char *address)
{
    return fq_recipient_address_problem(address, strlen(address));
}

static void s_expect(const char *address, const char *problem)
{
    const char *said = s_problem(address);
    if (!said || strcmp(said, problem) != 0)
        fail_msg("\"%s\": \"%s\", wanted \"%s\"", address, said ? said : "(good)", problem);
}

static void test_good_addresses_pass(void **state)
{
    (void)state;
    assert_null(s_problem("news@acme.example"));
    assert_null(s_problem("a@b.c"));
    assert_null(s_problem("first.last+tag@sub-domain.example.org"));
    assert_null(s_problem("o'neil\\$1;--\"x\"@example.com")); //  Printable ASCII is data
    assert_null(s_problem("UPPER@EXAMPLE.COM"));
}

static void test_each_fault_is_named(void **state)
{
    (void)state;
    s_expect("", "empty address");
    s_expect("news", "address is not local@domain");
    s_expect("@acme.example", "address is not local@domain");
    s_expect("news@", "address is not local@domain");
    s_expect("news@@acme.example", "address has more than one @");
    s_expect("a@b@example.com", "address has more than one @");
    s_expect("news@acme", "address domain is not a dotted name");
    s_expect("news@.acme.example", "address domain is not a dotted name");
    s_expect("news@acme.example.", "address domain is not a dotted name");
    s_expect("news@acme..example", "address domain has an invalid character");
    s_expect("news@acme_corp.example", "address domain has an invalid character");
    s_expect("Acme News <news@acme.example>",
             "address contains a space, control or non-ASCII character");
    s_expect("a@b.example,c@d.example", "address has more than one @");
    s_expect("a@b.example,c", "address domain has an invalid character");
}

//  What would make a header of its own never passes: CR or LF anywhere,
//  named as such even where another fault comes first in the text.
static void test_line_breaks_are_refused(void **state)
{
    (void)state;
    s_expect("news@acme.example\r\nBcc: all@example.com", "address contains CR or LF");
    s_expect("\nnews@acme.example", "address contains CR or LF");
    s_expect("news@acme.example\n", "address contains CR or LF");
    s_expect("a\r@example.com", "address contains CR or LF");
    s_expect("\tnews@acme.example", "address contains a space, control or non-ASCII character");
    s_expect("n\x7fws@acme.example", "address contains a space, control or non-ASCII character");
    //  A NUL inside the given bytes is a control character, not an end
    assert_string_equal(fq_recipient_address_problem("news\0@acme.example", 18),
                        "address contains a space, control or non-ASCII character");
}

//  Addresses are ASCII: UTF-8, well-formed or not, is refused with the
//  same words, and the reason itself is plain ASCII.
static void test_non_ascii_is_refused(void **state)
{
    (void)state;
    s_expect("caf\xc3\xa9@acme.example",
             "address contains a space, control or non-ASCII character");
    s_expect("news\xe2\x80\xa8@acme.example", //  U+2028, a line separator
             "address contains a space, control or non-ASCII character");
    s_expect("news@\xc3\xa9xample.com", "address contains a space, control or non-ASCII character");
    s_expect("\xff\xfe@acme.example", "address contains a space, control or non-ASCII character");
    s_expect("news@acme.example\xc0", "address contains a space, control or non-ASCII character");
}

//  At most FQ_RECIPIENT_ADDRESS_MAX bytes (RFC 5321): the longest passes,
//  one byte more is refused before anything else is looked at.
static void test_longest_address(void **state)
{
    (void)state;
    const char *domain = "@acme.example";
    char address[FQ_RECIPIENT_ADDRESS_MAX + 2];
    size_t local = FQ_RECIPIENT_ADDRESS_MAX - strlen(domain);
    memset(address, 'a', local);
    strcpy(address + local, domain);
    assert_int_equal(strlen(address), FQ_RECIPIENT_ADDRESS_MAX);
    assert_null(s_problem(address));
    memset(address, 'a', local + 1);
    strcpy(address + local + 1, domain);
    s_expect(address, "address longer than 320 bytes");
    //  Too long and broken too: the length is named
    address[0] = '\n';
    s_expect(address, "address longer than 320 bytes");
}

//  Only size bytes are read: an address may be a slice of a larger text.
static void test_reads_only_size_bytes(void **state)
{
    (void)state;
    const char *text = "a@b.example,c@d.example";
    assert_null(fq_recipient_address_problem(text, strlen("a@b.example")));
    assert_string_equal(fq_recipient_address_problem(text, strlen("a@b.example,")),
                        "address domain has an invalid character");
    assert_string_equal(fq_recipient_address_problem(text, 0), "empty address");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_addresses_pass),
        cmocka_unit_test(test_each_fault_is_named),
        cmocka_unit_test(test_line_breaks_are_refused),
        cmocka_unit_test(test_non_ascii_is_refused),
        cmocka_unit_test(test_longest_address),
        cmocka_unit_test(test_reads_only_size_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
