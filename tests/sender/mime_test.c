/*  mime_test.c — the RFC 5322 text that fairq-sender delivers.

    fq_mime_render turns one rendered message into what goes over SMTP
    and into mbox files. Its subject, addresses and extra headers come
    from tenants: a line break in any of them must be refused (it would
    add header lines), non-ASCII text must be encoded, and whatever the
    body holds, the text must stay 7-bit with short CRLF lines. The
    Message-ID must not change between attempts at one message.
*/
#include "fq_mail_headers.h"
#include "fq_mime.h"
#include <ctype.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

//  A fixed Date for exact comparisons: Tue, 14 Nov 2023 22:13:20 +0000.
#define S_DATE 1700000000

//  Line limits the text must keep (RFC 5322 2.1.1, RFC 2045 6.7,
//  RFC 2047 2), CRLF excluded.
#define S_HEADER_LINE_MAX 78
#define S_QP_LINE_MAX     76
#define S_EW_LINE_MAX     76
#define S_EW_MAX          75

//  A body line far longer than any line limit, of the letters a to z
//  over and over.
#define S_LONG_LINE 1000
#define S_LETTERS   26

//  A subject of this many two-byte characters needs several encoded words.
#define S_LONG_SUBJECT_CHARS 200

#define S_ERROR_SIZE FQ_TRANSPORT_ERROR_SIZE

//  The entries of the list of fields fq_mail_headers.h names as fairq's
//  own (whole names and prefixes).
#define S_OWNED_FIELDS 16

//  Headers of a message that a request may not give together: one more
//  than FQ_MAIL_HEADERS_MAX, and values that cross
//  FQ_MAIL_HEADERS_BYTES_MAX together, each well within a line.
#define S_TOO_MANY     (FQ_MAIL_HEADERS_MAX + 1)
#define S_NAME_SIZE    16
#define S_BIG_VALUE    (FQ_MAIL_HEADER_LINE_MAX - S_NAME_SIZE)
#define S_BIG_TOO_MANY (FQ_MAIL_HEADERS_BYTES_MAX / S_BIG_VALUE + 1)

// --------------------------------------------------------------------------
//  Helpers

//  A plain message to start from.
static fq_delivery_t s_message(void)
{
    return (fq_delivery_t){
        .id = 42,
        .tenant = "acme",
        .request_id = 7,
        .attempt = 1,
        .to = "ann@example.org",
        .from = "shop@example.com",
        .subject = "Your order",
        .body = "Hello Ann,\nyour order has shipped.\n",
    };
}

//  Renders msg, which must succeed, with the fixed date. Not inlined:
//  GCC 12 at -O2 then takes the text for a pointer to the local that
//  received it (a false -Wdangling-pointer).
static char *s_render(const fq_delivery_t *msg) __attribute__((noinline));

static char *s_render(const fq_delivery_t *msg)
{
    fq_mime_options_t options = {.date = S_DATE};
    char *text;
    size_t len;
    char error[S_ERROR_SIZE];
    int rc = fq_mime_render(msg, &options, &text, &len, error, sizeof error);
    if (rc != 0)
        fail_msg("render failed: %s", error);
    assert_int_equal(strlen(text), len);
    return text;
}

//  Renders msg, which must fail with code; the reason is one line.
static void s_expect_refused(const fq_delivery_t *msg, int code)
{
    fq_mime_options_t options = {.date = S_DATE};
    char *text = (char *)"unset";
    size_t len;
    char error[S_ERROR_SIZE] = "";
    int rc = fq_mime_render(msg, &options, &text, &len, error, sizeof error);
    if (rc == 0) {
        free(text);
        fail_msg("render of a bad message succeeded");
    }
    assert_int_equal(rc, code);
    assert_null(text);
    assert_true(strlen(error) > 0);
    assert_null(strpbrk(error, "\r\n"));
}

//  The end of the header block: the empty line.
static const char *s_body_of(const char *text)
{
    const char *blank = strstr(text, "\r\n\r\n");
    assert_non_null(blank);
    return blank + strlen("\r\n\r\n");
}

//  The value of header name, unfolded (line breaks of folding removed), in
//  a buffer the caller frees; NULL if absent.
static char *s_header(const char *text, const char *name)
{
    size_t name_len = strlen(name);
    const char *end = s_body_of(text);
    for (const char *line = text; line < end;) {
        const char *eol = strstr(line, "\r\n");
        if (strncmp(line, name, name_len) == 0 && line[name_len] == ':') {
            char *value = calloc(1, (size_t)(end - line));
            const char *from = line + name_len + 1;
            if (*from == ' ')
                from++;
            size_t used = 0;
            for (const char *c = from; c < end; c++) {
                if (c[0] == '\r' && c[1] == '\n') {
                    if (c[2] != ' ' && c[2] != '\t')
                        break;
                    c++;
                    continue;
                }
                value[used++] = *c;
            }
            return value;
        }
        line = eol + 2;
    }
    return NULL;
}

//  Every line of text[0, len) ends with CRLF and is at most max long.
static void s_expect_lines(const char *text, size_t len, size_t max)
{
    size_t start = 0;
    for (size_t i = 0; i < len; i++) {
        if (text[i] == '\n') {
            if (i == 0 || text[i - 1] != '\r')
                fail_msg("bare LF at %zu", i);
            if (i - 1 - start > max)
                fail_msg("line at %zu is %zu long (max %zu)", start, i - 1 - start, max);
            start = i + 1;
        } else if (text[i] == '\r' && text[i + 1] != '\n')
            fail_msg("bare CR at %zu", i);
    }
    assert_int_equal(start, len); //  Ends with CRLF
}

static int s_hex_value(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

//  Decodes a quoted-printable body (soft breaks removed, =XX decoded,
//  CRLF kept). The caller frees.
static char *s_qp_decode(const char *qp)
{
    char *out = calloc(1, strlen(qp) + 1);
    size_t used = 0;
    for (const char *c = qp; *c; c++) {
        if (c[0] == '=' && c[1] == '\r' && c[2] == '\n')
            c += 2;
        else if (c[0] == '=') {
            int high = s_hex_value(c[1]), low = s_hex_value(c[2]);
            if (high < 0 || low < 0)
                fail_msg("bad escape at \"%.8s\"", c);
            out[used++] = (char)(high * 16 + low);
            c += 2;
        } else
            out[used++] = *c;
    }
    return out;
}

static int s_b64_value(char c)
{
    const char *alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const char *at = strchr(alphabet, c);
    return c && at ? (int)(at - alphabet) : -1;
}

//  Appends the base64 text b64 (len characters), decoded, to out.
static size_t s_b64_decode(const char *b64, size_t len, char *out)
{
    size_t used = 0;
    uint32_t bits = 0;
    int count = 0;
    for (size_t i = 0; i < len && b64[i] != '='; i++) {
        int value = s_b64_value(b64[i]);
        if (value < 0)
            fail_msg("bad base64 character '%c'", b64[i]);
        bits = bits << 6 | (uint32_t)value;
        count += 6;
        if (count >= 8) {
            count -= 8;
            out[used++] = (char)(bits >> count & 0xFF);
        }
    }
    return used;
}

//  True when bytes [0, len) are whole UTF-8 characters.
static bool s_whole_utf8(const unsigned char *text, size_t len)
{
    for (size_t i = 0; i < len;) {
        size_t n = text[i] < 0x80 ? 1 : text[i] >= 0xF0 ? 4 : text[i] >= 0xE0 ? 3 : 2;
        if (i + n > len)
            return false;
        for (size_t k = 1; k < n; k++)
            if ((text[i + k] & 0xC0) != 0x80)
                return false;
        i += n;
    }
    return true;
}

//  Decodes an unfolded value made of =?UTF-8?B?...?= words; each must
//  be at most 75 characters and hold whole characters. The caller frees.
static char *s_decode_words(const char *value)
{
    char *out = calloc(1, strlen(value) + 1);
    size_t used = 0;
    const char *c = value;
    while (*c) {
        while (*c == ' ')
            c++;
        if (!*c)
            break;
        if (strncmp(c, "=?UTF-8?B?", 10) != 0)
            fail_msg("not an encoded word: \"%s\"", c);
        const char *end = strstr(c + 10, "?=");
        assert_non_null(end);
        assert_true((size_t)(end + 2 - c) <= S_EW_MAX);
        size_t got = s_b64_decode(c + 10, (size_t)(end - c - 10), out + used);
        if (!s_whole_utf8((unsigned char *)out + used, got))
            fail_msg("encoded word \"%.*s\" splits a character", (int)(end + 2 - c), c);
        used += got;
        c = end + 2;
    }
    return out;
}

// --------------------------------------------------------------------------
//  Tests

//  1. A plain message, whole: the headers in order, the body encoded.
static void test_plain_message(void **unused)
{
    (void)unused;
    fq_delivery_t msg = s_message();
    char *text = s_render(&msg);
    assert_string_equal(text, "Date: Tue, 14 Nov 2023 22:13:20 +0000\r\n"
                              "From: shop@example.com\r\n"
                              "To: ann@example.org\r\n"
                              "Subject: Your order\r\n"
                              "Message-ID: <fairq.42@example.com>\r\n"
                              "MIME-Version: 1.0\r\n"
                              "Content-Type: text/plain; charset=UTF-8\r\n"
                              "Content-Transfer-Encoding: quoted-printable\r\n"
                              "\r\n"
                              "Hello Ann,\r\n"
                              "your order has shipped.\r\n");
    free(text);
}

//  2. A subject with non-ASCII text is one RFC 2047 encoded word.
static void test_subject_encoded(void **unused)
{
    (void)unused;
    fq_delivery_t msg = s_message();
    msg.subject = "Café ☕";
    char *text = s_render(&msg);
    assert_non_null(strstr(text, "\r\nSubject: =?UTF-8?B?Q2Fmw6kg4piV?=\r\n"));
    free(text);

    //  ASCII that reads like an encoded word is encoded, so that no
    //  reader decodes what the tenant wrote literally
    msg.subject = "Price =?UTF-8?B?Zm9v?= today";
    text = s_render(&msg);
    char *subject = s_header(text, "Subject");
    char *decoded = s_decode_words(subject);
    assert_string_equal(decoded, msg.subject);
    free(decoded);
    free(subject);
    free(text);
}

//  3. A long non-ASCII subject: many encoded words on folded lines of at
//  most 76 characters, none splitting a character, together the subject.
static void test_long_subject_split_on_characters(void **unused)
{
    (void)unused;
    char subject[S_LONG_SUBJECT_CHARS * 2 + 1] = "";
    for (int i = 0; i < S_LONG_SUBJECT_CHARS; i++)
        strcat(subject, "é");
    fq_delivery_t msg = s_message();
    msg.subject = subject;
    char *text = s_render(&msg);
    const char *body = s_body_of(text);
    s_expect_lines(text, (size_t)(body - text), S_EW_LINE_MAX);
    char *value = s_header(text, "Subject");
    char *decoded = s_decode_words(value);
    assert_string_equal(decoded, subject);
    free(decoded);
    free(value);
    free(text);

    //  Three- and four-byte characters at every offset
    strcpy(subject, "x");
    for (int i = 0; i < S_LONG_SUBJECT_CHARS / 4; i++)
        strcat(subject, i % 2 ? "☕" : "😀");
    text = s_render(&msg);
    value = s_header(text, "Subject");
    decoded = s_decode_words(value);
    assert_string_equal(decoded, subject);
    free(decoded);
    free(value);
    free(text);
}

//  4. A long ASCII subject is folded at blanks, and unfolds to itself.
static void test_long_ascii_subject_folded(void **unused)
{
    (void)unused;
    const char *subject = "Our spring sale starts today: everything in the garden section is "
                          "half price until Sunday, and delivery is free on orders over 50";
    fq_delivery_t msg = s_message();
    msg.subject = subject;
    char *text = s_render(&msg);
    const char *body = s_body_of(text);
    s_expect_lines(text, (size_t)(body - text), S_HEADER_LINE_MAX);
    char *value = s_header(text, "Subject");
    assert_string_equal(value, subject);
    free(value);
    free(text);
}

//  5. The Message-ID depends on the id and the domain only: every
//  attempt at a message carries the same one.
static void test_message_id_stable(void **unused)
{
    (void)unused;
    fq_delivery_t msg = s_message();
    msg.from = "Shop <shop@shop.example.com>";
    char *first = s_render(&msg);
    msg.attempt = 3;
    msg.subject = "Your order (again)";
    fq_mime_options_t options = {.date = S_DATE + 3600};
    char *again, error[S_ERROR_SIZE];
    size_t len;
    assert_int_equal(fq_mime_render(&msg, &options, &again, &len, error, sizeof error), 0);
    char *id_first = s_header(first, "Message-ID");
    char *id_again = s_header(again, "Message-ID");
    assert_string_equal(id_first, "<fairq.42@shop.example.com>");
    assert_string_equal(id_again, id_first);
    free(id_first);
    free(id_again);
    free(first);
    free(again);

    //  Another message, another id
    msg.id = 43;
    char *other = s_render(&msg);
    char *id_other = s_header(other, "Message-ID");
    assert_string_equal(id_other, "<fairq.43@shop.example.com>");
    free(id_other);
    free(other);

    //  A configured domain wins over the sender's
    options.message_id_domain = "mail.fairq.example";
    assert_int_equal(fq_mime_render(&msg, &options, &again, &len, error, sizeof error), 0);
    id_again = s_header(again, "Message-ID");
    assert_string_equal(id_again, "<fairq.43@mail.fairq.example>");
    free(id_again);
    free(again);
    assert_int_equal(fq_mime_check_domain("mail.fairq.example"), 0);
    assert_int_equal(fq_mime_check_domain("[192.0.2.1]"), 0);
    assert_int_equal(fq_mime_check_domain("bad domain"), FQ_EINVAL);
    assert_int_equal(fq_mime_check_domain("x>y"), FQ_EINVAL);
    assert_int_equal(fq_mime_check_domain(""), FQ_EINVAL);

    //  Without either, there is no Message-ID to give
    msg.from = "postmaster";
    s_expect_refused(&msg, FQ_EINVAL);
}

//  6. A line break in the subject, an address or an extra header would
//  let a tenant add header lines: refused, as are other controls.
static void test_line_breaks_refused(void **unused)
{
    (void)unused;
    fq_delivery_t msg = s_message();
    msg.subject = "Hello\r\nBcc: everyone@example.com";
    s_expect_refused(&msg, FQ_EHEADER);
    msg.subject = "Hello\nthere";
    s_expect_refused(&msg, FQ_EHEADER);
    msg.subject = "Hello\rthere";
    s_expect_refused(&msg, FQ_EHEADER);
    msg.subject = "Bell\a";
    s_expect_refused(&msg, FQ_EHEADER);

    msg = s_message();
    msg.from = "shop@example.com\r\nBcc: x@example.com";
    s_expect_refused(&msg, FQ_EHEADER);
    msg = s_message();
    msg.to = "Ann\n <ann@example.org>";
    s_expect_refused(&msg, FQ_EHEADER);

    const char *names[] = {"X-Campaign"};
    const char *values[] = {"spring\r\nBcc: x@example.com"};
    msg = s_message();
    msg.nheaders = 1;
    msg.header_names = names;
    msg.header_values = values;
    s_expect_refused(&msg, FQ_EHEADER);
    values[0] = "tab\tis fine, DEL \x7F is not";
    s_expect_refused(&msg, FQ_EHEADER);
    values[0] = "caf\xC3\xA9"; //  Not printable ASCII: refused, not guessed at
    s_expect_refused(&msg, FQ_EHEADER);
    values[0] = "spring";
    names[0] = "X-Campaign\r\nBcc";
    s_expect_refused(&msg, FQ_EHEADER);
    names[0] = "X-Campaign: spring\r\nX-Other";
    s_expect_refused(&msg, FQ_EHEADER);
    names[0] = "X Campaign";
    s_expect_refused(&msg, FQ_EHEADER);
}

//  7. Other bad input: not one address, headers fairq writes itself,
//  lines over 998 characters.
static void test_bad_fields_refused(void **unused)
{
    (void)unused;
    fq_delivery_t msg = s_message();
    msg.to = "";
    s_expect_refused(&msg, FQ_EINVAL);
    msg.to = NULL;
    s_expect_refused(&msg, FQ_EINVAL);
    msg.to = "ann@example.org, bob@example.org";
    s_expect_refused(&msg, FQ_EINVAL);
    msg.to = "Ann <ann@example.org";
    s_expect_refused(&msg, FQ_EINVAL);
    msg = s_message();
    msg.from = "sh\xC3\xB6p@example.com";
    s_expect_refused(&msg, FQ_EINVAL);

    const char *names[] = {"X-Campaign", "content-type"};
    const char *values[] = {"spring", "text/x-evil"};
    msg = s_message();
    msg.nheaders = 2;
    msg.header_names = names;
    msg.header_values = values;
    s_expect_refused(&msg, FQ_EINVAL);
    names[1] = "Message-Id";
    s_expect_refused(&msg, FQ_EINVAL);

    static char long_value[S_LONG_LINE + 1];
    memset(long_value, 'v', S_LONG_LINE);
    names[1] = "X-Long";
    values[1] = long_value;
    s_expect_refused(&msg, FQ_EINVAL);
}

//  8. The body: long lines, 8-bit text, "=", trailing blanks, "From "
//  and "." at line starts, mixed line ends. The text stays 7-bit with
//  lines of at most 76 characters and decodes back to the body exactly.
static void test_body_encoded(void **unused)
{
    (void)unused;
    static char body[S_LONG_LINE * 2];
    char *at = body;
    at += sprintf(at, "Grüße aus Köln = 100%% sicher   \n");
    at += sprintf(at, "From here on, lines are long:\r\n");
    for (int i = 0; i < S_LONG_LINE; i++)
        *at++ = (char)('a' + i % S_LETTERS);
    at += sprintf(at, "\n.a line with a dot\nlone CR\rinside\nend with tab\t");
    fq_delivery_t msg = s_message();
    msg.body = body;
    char *text = s_render(&msg);
    size_t len = strlen(text);
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)text[i] >= 0x80)
            fail_msg("8-bit byte at %zu", i);
    const char *encoded = s_body_of(text);
    s_expect_lines(encoded, strlen(encoded), S_QP_LINE_MAX);
    assert_non_null(strstr(encoded, "\r\n=46rom here on"));
    assert_non_null(strstr(encoded, "Gr=C3=BC=C3=9Fe"));
    assert_non_null(strstr(encoded, "=3D 100% sicher  =20\r\n"));
    assert_non_null(strstr(encoded, "lone CR=0Dinside"));

    char *decoded = s_qp_decode(encoded);
    static char expected[S_LONG_LINE * 2];
    at = expected;
    at += sprintf(at, "Grüße aus Köln = 100%% sicher   \r\n");
    at += sprintf(at, "From here on, lines are long:\r\n");
    for (int i = 0; i < S_LONG_LINE; i++)
        *at++ = (char)('a' + i % S_LETTERS);
    sprintf(at, "\r\n.a line with a dot\r\nlone CR\rinside\r\nend with tab\t\r\n");
    assert_string_equal(decoded, expected);
    free(decoded);
    free(text);
}

//  9. HTML bodies say so; extra headers follow fairq's, in order.
static void test_html_and_extra_headers(void **unused)
{
    (void)unused;
    const char *names[] = {"List-Unsubscribe", "X-Campaign"};
    const char *values[] = {"<https://shop.example.com/u/42>", "spring sale"};
    fq_delivery_t msg = s_message();
    msg.body = "<p>Hello</p>";
    msg.body_is_html = true;
    msg.nheaders = 2;
    msg.header_names = names;
    msg.header_values = values;
    char *text = s_render(&msg);
    assert_non_null(strstr(text, "\r\nContent-Type: text/html; charset=UTF-8\r\n"
                                 "Content-Transfer-Encoding: quoted-printable\r\n"
                                 "List-Unsubscribe: <https://shop.example.com/u/42>\r\n"
                                 "X-Campaign: spring sale\r\n"
                                 "\r\n"
                                 "<p>Hello</p>\r\n"));
    free(text);
}

//  9b. An HTML body with a plain-text alternative is multipart/alternative:
//  the extra headers on the top level, the text part first and the HTML
//  second (the least preferred first, RFC 2046 5.1.4), each with its own
//  Content-Type and quoted-printable, between delimiters of the boundary
//  the top level names.
static char *s_boundary_of(const char *text)
{
    const char *at = strstr(text, "\r\nContent-Type: multipart/alternative; boundary=\"");
    assert_non_null(at);
    at += strlen("\r\nContent-Type: multipart/alternative; boundary=\"");
    const char *end = strchr(at, '"');
    assert_non_null(end);
    assert_true(end > at);
    return strndup(at, (size_t)(end - at));
}

//  How many times needle occurs in haystack.
static size_t s_count(const char *haystack, const char *needle)
{
    size_t n = 0;
    for (const char *at = strstr(haystack, needle); at; at = strstr(at + 1, needle))
        n++;
    return n;
}

static void test_alternative_structure(void **unused)
{
    (void)unused;
    const char *names[] = {"List-Unsubscribe"};
    const char *values[] = {"<https://shop.example.com/u/42>"};
    fq_delivery_t msg = s_message();
    msg.body = "<p>Hello Ann &amp; co</p>";
    msg.body_is_html = true;
    msg.text_body = "Hello Ann & co = friends";
    msg.nheaders = 1;
    msg.header_names = names;
    msg.header_values = values;
    char *text = s_render(&msg);
    char *b = s_boundary_of(text);
    char expected[4096];
    snprintf(expected, sizeof expected,
             "Date: Tue, 14 Nov 2023 22:13:20 +0000\r\n"
             "From: shop@example.com\r\n"
             "To: ann@example.org\r\n"
             "Subject: Your order\r\n"
             "Message-ID: <fairq.42@example.com>\r\n"
             "MIME-Version: 1.0\r\n"
             "Content-Type: multipart/alternative; boundary=\"%s\"\r\n"
             "List-Unsubscribe: <https://shop.example.com/u/42>\r\n"
             "\r\n"
             "--%s\r\n"
             "Content-Type: text/plain; charset=UTF-8\r\n"
             "Content-Transfer-Encoding: quoted-printable\r\n"
             "\r\n"
             "Hello Ann & co =3D friends\r\n"
             "\r\n"
             "--%s\r\n"
             "Content-Type: text/html; charset=UTF-8\r\n"
             "Content-Transfer-Encoding: quoted-printable\r\n"
             "\r\n"
             "<p>Hello Ann &amp; co</p>\r\n"
             "\r\n"
             "--%s--\r\n",
             b, b, b, b);
    assert_string_equal(text, expected);
    //  The text part comes before the HTML part
    assert_true(strstr(text, "text/plain") < strstr(text, "text/html"));
    free(b);
    free(text);
}

//  9c. The boundary is drawn anew for each message and never occurs in
//  either part, even parts that imitate fairq's boundaries: it is found
//  exactly at the two delimiters and the close.
static void test_alternative_boundary_not_in_parts(void **unused)
{
    (void)unused;
    fq_delivery_t msg = s_message();
    msg.body = "<p>--=_fairq_0123456789ABCDEF0123456789ABCDEF</p>\n--\n";
    msg.body_is_html = true;
    msg.text_body = "--=_fairq_\n--=_fairq_FFFF--\n-- \n";
    char *previous = NULL;
    for (int i = 0; i < 32; i++) {
        char *text = s_render(&msg);
        char *b = s_boundary_of(text);
        assert_int_equal(strlen(b), strlen("=_fairq_") + 32);
        char delimiter[128];
        snprintf(delimiter, sizeof delimiter, "--%s", b);
        assert_int_equal(s_count(text, delimiter), 3);
        snprintf(delimiter, sizeof delimiter, "\r\n--%s\r\n", b);
        assert_int_equal(s_count(text, delimiter), 2);
        snprintf(delimiter, sizeof delimiter, "\r\n--%s--\r\n", b);
        assert_int_equal(s_count(text, delimiter), 1);
        if (previous)
            assert_string_not_equal(previous, b);
        free(previous);
        previous = b;
        free(text);
    }
    free(previous);
}

//  9d. Without a text_body (NULL or empty) an HTML message is the single
//  part it always was; a plain-text body ignores a text_body.
static void test_without_text_body_unchanged(void **unused)
{
    (void)unused;
    fq_delivery_t msg = s_message();
    msg.body = "<p>Hello</p>";
    msg.body_is_html = true;
    const char *single = "Date: Tue, 14 Nov 2023 22:13:20 +0000\r\n"
                         "From: shop@example.com\r\n"
                         "To: ann@example.org\r\n"
                         "Subject: Your order\r\n"
                         "Message-ID: <fairq.42@example.com>\r\n"
                         "MIME-Version: 1.0\r\n"
                         "Content-Type: text/html; charset=UTF-8\r\n"
                         "Content-Transfer-Encoding: quoted-printable\r\n"
                         "\r\n"
                         "<p>Hello</p>\r\n";
    const char *none[] = {NULL, ""};
    for (size_t i = 0; i < 2; i++) {
        msg.text_body = none[i];
        char *text = s_render(&msg);
        assert_string_equal(text, single);
        free(text);
    }
    msg = s_message();
    msg.text_body = "ignored";
    char *text = s_render(&msg);
    assert_null(strstr(text, "multipart"));
    assert_null(strstr(text, "ignored"));
    free(text);
}

//  10. Display names: non-ASCII ones encoded, ones with specials quoted;
//  fq_mime_address finds the address for SMTP's envelope.
static void test_display_names(void **unused)
{
    (void)unused;
    fq_delivery_t msg = s_message();
    msg.from = "Café Shop <shop@example.com>";
    msg.to = "Doe, \"Jo\" <jo@example.org>";
    char *text = s_render(&msg);
    assert_non_null(strstr(text, "\r\nFrom: =?UTF-8?B?Q2Fmw6kgU2hvcA==?= <shop@example.com>\r\n"));
    assert_non_null(strstr(text, "\r\nTo: \"Doe, \\\"Jo\\\"\" <jo@example.org>\r\n"));
    free(text);
    msg.from = "\"Café Shop\" <shop@example.com>"; //  Quoted: the same
    text = s_render(&msg);
    assert_non_null(strstr(text, "\r\nFrom: =?UTF-8?B?Q2Fmw6kgU2hvcA==?= <shop@example.com>\r\n"));
    free(text);

    char address[FQ_MIME_ADDRESS_SIZE];
    assert_int_equal(fq_mime_address("ann@example.org", address, sizeof address), 0);
    assert_string_equal(address, "ann@example.org");
    assert_int_equal(fq_mime_address(" <ann@example.org> ", address, sizeof address), 0);
    assert_string_equal(address, "ann@example.org");
    assert_int_equal(fq_mime_address("Ann Lee <ann@example.org>", address, sizeof address), 0);
    assert_string_equal(address, "ann@example.org");
    assert_int_equal(fq_mime_address("ann lee@example.org", address, sizeof address), -1);
    assert_int_equal(fq_mime_address("<>", address, sizeof address), -1);
    assert_int_equal(fq_mime_address("ann@example.org", address, 4), -1);
}

//  11. An mbox record: the separator line, LF line ends, "From " lines
//  escaped (mboxrd: one more ">"), an empty line at the end.
static void test_mbox_record(void **unused)
{
    (void)unused;
    const char *text = "Subject: x\r\n\r\nFrom the start\r\n>From quoted\r\nFromage\r\nend\r\n";
    size_t len;
    char *record = fq_mime_mbox_record(text, strlen(text), "fairq@host", S_DATE, &len);
    assert_non_null(record);
    assert_int_equal(strlen(record), len);
    assert_string_equal(record, "From fairq@host Tue Nov 14 22:13:20 2023\n"
                                "Subject: x\n"
                                "\n"
                                ">From the start\n"
                                ">>From quoted\n"
                                "Fromage\n"
                                "end\n"
                                "\n");
    free(record);

    //  A rendered message needs no escaping: its "From " lines are =46rom
    fq_delivery_t msg = s_message();
    msg.body = "From me\n";
    char *rendered = s_render(&msg);
    record = fq_mime_mbox_record(rendered, strlen(rendered), "fairq@host", S_DATE, &len);
    assert_null(strstr(record, "\n>From"));
    assert_non_null(strstr(record, "\n=46rom me\n\n"));
    free(record);
    free(rendered);
}

//  12. The rule of extra headers is the one fairqd's API checks submits by
//  (fq_mail_headers.h): every field it names as fairq's own is refused in
//  any case, Return-Path among them; Reply-To, the request's reply_to, is
//  written when it is one address and refused otherwise.
static void test_extra_headers_by_the_shared_rule(void **unused)
{
    (void)unused;
    const char *names[] = {"X-Campaign"};
    const char *values[] = {"spring"};
    fq_delivery_t msg = s_message();
    msg.nheaders = 1;
    msg.header_names = names;
    msg.header_values = values;
    size_t owned = 0;
    for (const char *name; (name = fq_mail_header_owned_name(owned)); owned++) {
        char lower[S_ERROR_SIZE];
        size_t i = 0;
        for (; name[i] && i + 1 < sizeof lower; i++)
            lower[i] = (char)tolower((unsigned char)name[i]);
        lower[i] = 0;
        names[0] = name;
        s_expect_refused(&msg, FQ_EINVAL);
        names[0] = lower;
        s_expect_refused(&msg, FQ_EINVAL);
    }
    assert_int_equal(owned, S_OWNED_FIELDS);
    const char *more_owned[] = {"Return-Path",   "Content-Disposition", "content-id",
                                "Bcc",           "Resent-From",         "ARC-Seal",
                                "DKIM-Signature"};
    for (size_t i = 0; i < sizeof more_owned / sizeof *more_owned; i++) {
        names[0] = more_owned[i];
        s_expect_refused(&msg, FQ_EINVAL);
    }

    names[0] = "Reply-To";
    values[0] = "help@example.com";
    char *text = s_render(&msg);
    assert_non_null(strstr(text, "\r\nReply-To: help@example.com\r\n"));
    free(text);
    values[0] = "help@example.com, evil@example.net";
    s_expect_refused(&msg, FQ_EINVAL);
    values[0] = "";
    s_expect_refused(&msg, FQ_EINVAL);
    names[0] = "reply-to";
    values[0] = "help@example.com\r\nBcc: x@example.com";
    s_expect_refused(&msg, FQ_EHEADER);
}

//  13. The headers together are held to the rule of a request's set, as
//  fairqd's API holds a submit's (fq_mail_headers_problem), whatever
//  stored them (fairq.submit_keyed in SQL checks less): a name twice in
//  any case, two Reply-To (one among the headers, one the reply_to), more
//  headers or bytes than a request may give are each refused, a
//  permanent failure of the message; the reply_to counts in neither
//  limit.
static void test_extra_headers_as_a_set(void **unused)
{
    (void)unused;
    static char name_text[S_TOO_MANY + 1][S_NAME_SIZE];
    const char *names[S_TOO_MANY + 1], *values[S_TOO_MANY + 1];
    fq_delivery_t msg = s_message();
    msg.header_names = names;
    msg.header_values = values;

    names[0] = "X-Campaign";
    values[0] = "spring";
    names[1] = "x-campaign";
    values[1] = "autumn";
    msg.nheaders = 2;
    s_expect_refused(&msg, FQ_EINVAL);

    names[0] = "reply-to";
    values[0] = "evil@example.net";
    names[1] = FQ_MAIL_HEADER_REPLY_TO;
    values[1] = "help@example.com";
    s_expect_refused(&msg, FQ_EINVAL);

    for (size_t i = 0; i < S_TOO_MANY; i++) {
        snprintf(name_text[i], S_NAME_SIZE, "X-H%zu", i);
        names[i] = name_text[i];
        values[i] = "v";
    }
    msg.nheaders = FQ_MAIL_HEADERS_MAX;
    free(s_render(&msg));
    names[FQ_MAIL_HEADERS_MAX] = FQ_MAIL_HEADER_REPLY_TO;
    values[FQ_MAIL_HEADERS_MAX] = "help@example.com";
    msg.nheaders = S_TOO_MANY;
    char *text = s_render(&msg);
    assert_non_null(strstr(text, "\r\nReply-To: help@example.com\r\n"));
    free(text);
    names[S_TOO_MANY] = "X-Past";
    values[S_TOO_MANY] = "v";
    msg.nheaders = S_TOO_MANY + 1;
    s_expect_refused(&msg, FQ_EINVAL);

    static char big[S_BIG_VALUE + 1];
    memset(big, 'v', S_BIG_VALUE);
    for (size_t i = 0; i < S_BIG_TOO_MANY; i++)
        values[i] = big;
    msg.nheaders = S_BIG_TOO_MANY - 1;
    free(s_render(&msg));
    msg.nheaders = S_BIG_TOO_MANY;
    s_expect_refused(&msg, FQ_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_message),
        cmocka_unit_test(test_subject_encoded),
        cmocka_unit_test(test_long_subject_split_on_characters),
        cmocka_unit_test(test_long_ascii_subject_folded),
        cmocka_unit_test(test_message_id_stable),
        cmocka_unit_test(test_line_breaks_refused),
        cmocka_unit_test(test_bad_fields_refused),
        cmocka_unit_test(test_body_encoded),
        cmocka_unit_test(test_html_and_extra_headers),
        cmocka_unit_test(test_display_names),
        cmocka_unit_test(test_alternative_structure),
        cmocka_unit_test(test_alternative_boundary_not_in_parts),
        cmocka_unit_test(test_without_text_body_unchanged),
        cmocka_unit_test(test_mbox_record),
        cmocka_unit_test(test_extra_headers_by_the_shared_rule),
        cmocka_unit_test(test_extra_headers_as_a_set),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
