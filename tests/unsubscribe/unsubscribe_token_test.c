/*  unsubscribe_token_test.c — the token of a one-click unsubscribe URL
    (fq_unsubscribe_token.h): what is sealed opens to the same tenant,
    request and recipient; a token changed in any byte, cut short, sealed
    under another key, or no token at all is refused; the key comes from a
    secret of enough bytes, read from a file only its owner and group may
    read. */
#include "fq_error.h"
#include "fq_unsubscribe_token.h"
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#define S_SECRET       "0123456789abcdef0123456789abcdef"
#define S_OTHER_SECRET "fedcba9876543210fedcba9876543210"
#define S_ERROR_SIZE   256

static void s_key(const char *secret, unsigned char key[FQ_UNSUBSCRIBE_KEY_SIZE])
{
    assert_int_equal(fq_unsubscribe_key(secret, strlen(secret), key), 0);
}

static void s_seal(const unsigned char *key, int64_t tenant, int64_t request, const char *recipient,
                   char token[FQ_UNSUBSCRIBE_TOKEN_SIZE])
{
    fq_unsubscribe_target_t target = {.tenant_id = tenant, .request_id = request};
    snprintf(target.recipient, sizeof target.recipient, "%s", recipient);
    assert_int_equal(fq_unsubscribe_token(key, &target, token, FQ_UNSUBSCRIBE_TOKEN_SIZE), 0);
}

//  1. What is sealed opens to itself; the token is base64url, names no id
//  and no address, and differs each time (a random nonce).
static void test_round_trip(void **unused)
{
    (void)unused;
    unsigned char key[FQ_UNSUBSCRIBE_KEY_SIZE];
    s_key(S_SECRET, key);
    char token[FQ_UNSUBSCRIBE_TOKEN_SIZE], again[FQ_UNSUBSCRIBE_TOKEN_SIZE];
    s_seal(key, 42, 1234567, "Bob@Example.org", token);
    s_seal(key, 42, 1234567, "Bob@Example.org", again);
    assert_string_not_equal(token, again);
    assert_int_equal(strspn(token, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                   "0123456789-_"),
                     strlen(token));
    assert_null(strstr(token, "Bob"));
    fq_unsubscribe_target_t target;
    assert_int_equal(fq_unsubscribe_open(key, token, &target), 0);
    assert_int_equal(target.tenant_id, 42);
    assert_int_equal(target.request_id, 1234567);
    assert_string_equal(target.recipient, "Bob@Example.org");
    assert_int_equal(fq_unsubscribe_open(key, again, &target), 0);
    assert_string_equal(target.recipient, "Bob@Example.org");

    //  The longest address and the largest ids fit the token's room
    char longest[FQ_RECIPIENT_ADDRESS_MAX + 1];
    memset(longest, 'a', FQ_RECIPIENT_ADDRESS_MAX);
    longest[FQ_RECIPIENT_ADDRESS_MAX - 12] = '@';
    longest[FQ_RECIPIENT_ADDRESS_MAX] = '\0';
    s_seal(key, INT64_MAX, INT64_MAX, longest, token);
    assert_true(strlen(token) < FQ_UNSUBSCRIBE_TOKEN_SIZE);
    assert_int_equal(fq_unsubscribe_open(key, token, &target), 0);
    assert_int_equal(target.tenant_id, INT64_MAX);
    assert_string_equal(target.recipient, longest);
}

//  2. Every byte of the token is checked: one character changed anywhere
//  (the version's, the nonce's, the ciphertext's, the tag's) is refused.
static void test_tampered(void **unused)
{
    (void)unused;
    unsigned char key[FQ_UNSUBSCRIBE_KEY_SIZE];
    s_key(S_SECRET, key);
    char token[FQ_UNSUBSCRIBE_TOKEN_SIZE];
    s_seal(key, 7, 8, "ann@example.org", token);
    fq_unsubscribe_target_t target;
    size_t len = strlen(token);
    //  The last character holds only some of the bits of its 6; one of
    //  the others is changed there
    for (size_t i = 0; i < len; i++) {
        char copy[FQ_UNSUBSCRIBE_TOKEN_SIZE];
        memcpy(copy, token, len + 1);
        copy[i] = copy[i] == 'A' ? 'B' : 'A';
        assert_int_equal(fq_unsubscribe_open(key, copy, &target), FQ_EINVAL);
        assert_int_equal(target.tenant_id, 0);
    }
}

//  3. Cut short, or with bytes added: refused.
static void test_truncated(void **unused)
{
    (void)unused;
    unsigned char key[FQ_UNSUBSCRIBE_KEY_SIZE];
    s_key(S_SECRET, key);
    char token[FQ_UNSUBSCRIBE_TOKEN_SIZE];
    s_seal(key, 7, 8, "ann@example.org", token);
    fq_unsubscribe_target_t target;
    for (size_t len = strlen(token); len-- > 0;) {
        token[len] = '\0';
        assert_int_equal(fq_unsubscribe_open(key, token, &target), FQ_EINVAL);
    }
    s_seal(key, 7, 8, "ann@example.org", token);
    char longer[FQ_UNSUBSCRIBE_TOKEN_SIZE + 8];
    snprintf(longer, sizeof longer, "%sAAAA", token);
    assert_int_equal(fq_unsubscribe_open(key, longer, &target), FQ_EINVAL);
}

//  4. Sealed under another secret's key: refused; the same secret always
//  gives the same key.
static void test_wrong_key(void **unused)
{
    (void)unused;
    unsigned char key[FQ_UNSUBSCRIBE_KEY_SIZE], same[FQ_UNSUBSCRIBE_KEY_SIZE],
        other[FQ_UNSUBSCRIBE_KEY_SIZE];
    s_key(S_SECRET, key);
    s_key(S_SECRET, same);
    s_key(S_OTHER_SECRET, other);
    assert_memory_equal(key, same, sizeof key);
    char token[FQ_UNSUBSCRIBE_TOKEN_SIZE];
    s_seal(key, 7, 8, "ann@example.org", token);
    fq_unsubscribe_target_t target;
    assert_int_equal(fq_unsubscribe_open(other, token, &target), FQ_EINVAL);
    assert_int_equal(fq_unsubscribe_open(same, token, &target), 0);
}

//  5. What is no token at all: refused, never a crash.
static void test_garbage(void **unused)
{
    (void)unused;
    unsigned char key[FQ_UNSUBSCRIBE_KEY_SIZE];
    s_key(S_SECRET, key);
    fq_unsubscribe_target_t target;
    const char *garbage[] = {"",
                             "x",
                             "not a token",
                             "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
                             "%2F%2F%2F",
                             "====",
                             "AQ",
                             "../../etc/passwd"};
    for (size_t i = 0; i < sizeof garbage / sizeof *garbage; i++)
        assert_int_equal(fq_unsubscribe_open(key, garbage[i], &target), FQ_EINVAL);
    assert_int_equal(fq_unsubscribe_open(key, NULL, &target), FQ_EINVAL);
    char huge[FQ_UNSUBSCRIBE_TOKEN_SIZE * 2];
    memset(huge, 'A', sizeof huge - 1);
    huge[sizeof huge - 1] = '\0';
    assert_int_equal(fq_unsubscribe_open(key, huge, &target), FQ_EINVAL);
}

//  6. What is not sealed: ids not positive, no recipient, too long a one,
//  too small a buffer.
static void test_seal_refuses(void **unused)
{
    (void)unused;
    unsigned char key[FQ_UNSUBSCRIBE_KEY_SIZE];
    s_key(S_SECRET, key);
    char token[FQ_UNSUBSCRIBE_TOKEN_SIZE];
    fq_unsubscribe_target_t target = {.tenant_id = 0, .request_id = 1, .recipient = "a@b.c"};
    assert_int_equal(fq_unsubscribe_token(key, &target, token, sizeof token), FQ_EINVAL);
    target.tenant_id = 1;
    target.request_id = -1;
    assert_int_equal(fq_unsubscribe_token(key, &target, token, sizeof token), FQ_EINVAL);
    target.request_id = 1;
    target.recipient[0] = '\0';
    assert_int_equal(fq_unsubscribe_token(key, &target, token, sizeof token), FQ_EINVAL);
    snprintf(target.recipient, sizeof target.recipient, "a@b.c");
    assert_int_equal(fq_unsubscribe_token(key, &target, token, 10), FQ_EINVAL);
    assert_int_equal(fq_unsubscribe_token(key, &target, token, sizeof token), 0);
}

//  7. The secret: at least FQ_UNSUBSCRIBE_SECRET_MIN bytes; from a file,
//  a final line break is not part of it, and a file others may read is
//  refused.
static void test_secret_file(void **unused)
{
    (void)unused;
    unsigned char key[FQ_UNSUBSCRIBE_KEY_SIZE], direct[FQ_UNSUBSCRIBE_KEY_SIZE];
    assert_int_equal(fq_unsubscribe_key("short", 5, key), FQ_EINVAL);
    s_key(S_SECRET, direct);
    char path[] = "/tmp/fq_unsubscribe_secret_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, S_SECRET "\n", strlen(S_SECRET) + 1), (ssize_t)strlen(S_SECRET) + 1);
    close(fd);
    char error[S_ERROR_SIZE] = "";
    assert_int_equal(chmod(path, 0600), 0);
    assert_int_equal(fq_unsubscribe_key_file(path, key, error, sizeof error), 0);
    assert_memory_equal(key, direct, sizeof key);
    assert_int_equal(chmod(path, 0644), 0);
    assert_int_equal(fq_unsubscribe_key_file(path, key, error, sizeof error), FQ_EINVAL);
    assert_non_null(strstr(error, "others"));
    assert_int_equal(chmod(path, 0600), 0);
    FILE *file = fopen(path, "w");
    assert_non_null(file);
    fputs("too short\n", file);
    fclose(file);
    assert_int_equal(fq_unsubscribe_key_file(path, key, error, sizeof error), FQ_EINVAL);
    assert_non_null(strstr(error, "fewer than"));
    unlink(path);
    assert_int_equal(fq_unsubscribe_key_file(path, key, error, sizeof error), FQ_EIO);
    assert_non_null(strstr(error, "could not open"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),  cmocka_unit_test(test_tampered),
        cmocka_unit_test(test_truncated),   cmocka_unit_test(test_wrong_key),
        cmocka_unit_test(test_garbage),     cmocka_unit_test(test_seal_refuses),
        cmocka_unit_test(test_secret_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
