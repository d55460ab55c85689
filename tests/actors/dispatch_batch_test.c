/*  dispatch_batch_test.c — one sender's messages of a DISPATCH gathered
    into one MESSAGES frame (fq_dispatch_batch.h): it goes once it holds
    FQ_DISPATCH_BATCH_MESSAGES messages or FQ_DISPATCH_BATCH_BYTES bytes,
    and a message's bytes are its subject, its body, its text_body and its
    extra headers,
    so a request whose every message carries kilobytes of headers does not
    fill a frame far past the budget. */
#include "fq_dispatch_batch.h"
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

//  Extra headers of a message, names and values together: the most a
//  request may give (FQ_MAIL_HEADERS_BYTES_MAX, 8 KiB), less a little.
#define S_HEADER_COUNT       8
#define S_HEADER_VALUE_BYTES 1000

//  Messages of S_HEADER_COUNT headers of S_HEADER_VALUE_BYTES each that
//  fill a batch by their headers: FQ_DISPATCH_BATCH_BYTES over theirs,
//  rounded up, well below FQ_DISPATCH_BATCH_MESSAGES.
#define S_HEADER_BYTES (S_HEADER_COUNT * (sizeof "X-Tag-0" - 1 + S_HEADER_VALUE_BYTES))
#define S_FULL_AFTER   ((FQ_DISPATCH_BATCH_BYTES + S_HEADER_BYTES - 1) / S_HEADER_BYTES)

//  Adds a message of a one-byte subject and body (what the batch takes and
//  frees) with the headers given, borrowed.
static void s_add(fq_dispatch_batch_t *batch, fq_strmap_t headers)
{
    fq_message_t message = {.id = batch->count + 1,
                            .tenant = "acme",
                            .request = 1,
                            .attempt = 1,
                            .to = "ann@example.org",
                            .from = "shop@example.com",
                            .subject = strdup("s"),
                            .body = strdup("b"),
                            .headers = headers};
    assert_non_null(message.subject);
    assert_non_null(message.body);
    assert_int_equal(
        fq_dispatch_batch_add(batch, &message, (fq_dispatch_batch_item_t){1, 1, -1, NULL}), 0);
}

//  1. Without headers a batch goes at FQ_DISPATCH_BATCH_MESSAGES.
static void test_full_by_count(void **unused)
{
    (void)unused;
    fq_dispatch_batch_t batch = {0};
    for (int i = 0; i < FQ_DISPATCH_BATCH_MESSAGES; i++) {
        assert_false(fq_dispatch_batch_full(&batch));
        s_add(&batch, (fq_strmap_t){0});
    }
    assert_true(fq_dispatch_batch_full(&batch));
    assert_int_equal(fq_dispatch_batch_frame(&batch).messages.count, FQ_DISPATCH_BATCH_MESSAGES);
    fq_dispatch_batch_clear(&batch);
    assert_false(fq_dispatch_batch_full(&batch));
    fq_dispatch_batch_release(&batch);
}

//  2. Messages of small subjects and bodies but kilobytes of extra headers
//  fill a batch by their bytes: the headers count.
static void test_headers_count_against_the_bytes(void **unused)
{
    (void)unused;
    static char value[S_HEADER_VALUE_BYTES + 1];
    memset(value, 'v', S_HEADER_VALUE_BYTES);
    const char *names[S_HEADER_COUNT], *values[S_HEADER_COUNT];
    static char name_text[S_HEADER_COUNT][sizeof "X-Tag-0"];
    for (size_t i = 0; i < S_HEADER_COUNT; i++) {
        memcpy(name_text[i], "X-Tag-0", sizeof "X-Tag-0");
        name_text[i][sizeof "X-Tag-0" - 2] = (char)('0' + i);
        names[i] = name_text[i];
        values[i] = value;
    }
    fq_strmap_t headers = {S_HEADER_COUNT, names, values};
    assert_true(S_FULL_AFTER < FQ_DISPATCH_BATCH_MESSAGES);

    fq_dispatch_batch_t batch = {0};
    for (size_t i = 0; i < S_FULL_AFTER; i++) {
        assert_false(fq_dispatch_batch_full(&batch));
        s_add(&batch, headers);
    }
    assert_true(fq_dispatch_batch_full(&batch));
    assert_true(batch.bytes >= FQ_DISPATCH_BATCH_BYTES);
    fq_dispatch_batch_clear(&batch);
    assert_int_equal(batch.bytes, 0);
    fq_dispatch_batch_release(&batch);
}

//  3. A text_body (the batch takes and frees it, as the body) counts as
//  its bytes; a message without one (NULL) counts none for it.
#define S_TEXT_BODY_BYTES 100000
static void test_text_body_counts_against_the_bytes(void **unused)
{
    (void)unused;
    fq_dispatch_batch_t batch = {0};
    size_t full_after = (FQ_DISPATCH_BATCH_BYTES + S_TEXT_BODY_BYTES - 1) / S_TEXT_BODY_BYTES;
    for (size_t i = 0; i < full_after; i++) {
        assert_false(fq_dispatch_batch_full(&batch));
        char *text = malloc(S_TEXT_BODY_BYTES + 1);
        assert_non_null(text);
        memset(text, 't', S_TEXT_BODY_BYTES);
        text[S_TEXT_BODY_BYTES] = 0;
        fq_message_t message = {
            .id = i + 1, .subject = strdup("s"), .body = strdup("b"), .text_body = text};
        assert_int_equal(
            fq_dispatch_batch_add(&batch, &message, (fq_dispatch_batch_item_t){1, 1, -1, NULL}), 0);
        assert_int_equal(batch.bytes, (i + 1) * (2 + S_TEXT_BODY_BYTES));
    }
    assert_true(fq_dispatch_batch_full(&batch));
    fq_dispatch_batch_clear(&batch);
    s_add(&batch, (fq_strmap_t){0});
    assert_int_equal(batch.bytes, 2);
    fq_dispatch_batch_clear(&batch);
    fq_dispatch_batch_release(&batch);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full_by_count),
        cmocka_unit_test(test_headers_count_against_the_bytes),
        cmocka_unit_test(test_text_body_counts_against_the_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
