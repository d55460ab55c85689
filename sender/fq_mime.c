/*  fq_mime.c — RFC 5322 rendering of one message (contract in fq_mime.h).

    Everything is written into one fq_buf_t. Each writer returns 0, or -1
    when memory ran out (fq_buf.h), ORed together and checked once at the
    end. Header fields are checked before they are written; the first bad
    one ends the render with an error that names it, so an operator can
    find the template or recipient at fault.
*/
#include "fq_buf.h"
#include "fq_error.h"
#include "fq_mail_headers.h"
#include "fq_mime.h"
#include "fq_utf8.h"
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>

//  RFC 5322 2.1.1: a line SHOULD be at most 78 characters, CRLF excluded
//  (and MUST be at most FQ_MAIL_HEADER_LINE_MAX).
#define S_LINE_PREFERED 78

//  RFC 2045 6.7 (5): encoded lines are at most 76 characters. A soft line
//  break's "=" is one of them, so a line holds 75 characters of text.
#define S_QP_LINE_MAX  76
#define S_QP_TEXT_MAX  (S_QP_LINE_MAX - 1)
#define S_QP_TOKEN_MAX 3 //  "=XX"

//  RFC 2047 2: a line holding an encoded word is at most 76 characters,
//  and each encoded word "=?UTF-8?B?...?=" at most 75.
#define S_EW_LINE_MAX 76
#define S_EW_PREFIX   "=?UTF-8?B?"
#define S_EW_SUFFIX   "?="
#define S_EW_OVERHEAD (sizeof S_EW_PREFIX - 1 + sizeof S_EW_SUFFIX - 1)

//  Base64 turns each group of 3 bytes into 4 characters of 6 bits each.
#define S_B64_IN   3
#define S_B64_OUT  4
#define S_B64_BITS 6
#define S_B64_MASK 0x3F

//  Quoted-printable writes a byte as two hex digits of 4 bits each.
#define S_HEX_BITS 4
#define S_HEX_MASK 0xF

//  The longest run of UTF-8 continuation bytes after a lead byte; an
//  encoded word may not end inside a character (RFC 2047 5 (3)).
#define S_UTF8_CONTINUATION_MAX 3

//  struct tm counts years from 1900.
#define S_TM_YEAR_BASE 1900

//  The ASCII delete character, a control like those below space.
#define S_DEL 0x7F

//  "From " at the start of a line, which mbox readers take for the start
//  of the next message.
#define S_FROM_LINE     "From "
#define S_FROM_LINE_LEN (sizeof S_FROM_LINE - 1)

static const char *const s_day_names[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
static const char *const s_month_names[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                            "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
static const char s_b64_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char s_hex_digits[] = "0123456789ABCDEF";

//  The boundary of a multipart/alternative message: a prefix and random
//  bytes in hex. "=_" cannot occur in quoted-printable text (its "=" is
//  always followed by a hex digit or a line break), and the random part
//  keeps one message's boundary from being guessed by its text; each is
//  checked against the encoded parts anyway, and another drawn if found,
//  up to S_BOUNDARY_TRIES times.
#define S_BOUNDARY_PREFIX "=_fairq_"
#define S_BOUNDARY_RANDOM 16
#define S_BOUNDARY_SIZE   (sizeof S_BOUNDARY_PREFIX + 2 * S_BOUNDARY_RANDOM)
#define S_BOUNDARY_TRIES  8

//  Most of a bad value quoted in an error: enough to find it by.
#define S_QUOTED_MAX 80

//  Hands the text to the caller with its length, or frees it and returns
//  NULL when memory ran out while writing it (mem is not 0).
static char *s_finish(fq_buf_t *buf, int mem, size_t *len)
{
    if (mem) {
        fq_buf_free(buf);
        return NULL;
    }
    *len = buf->size;
    return fq_buf_take(buf);
}

// --------------------------------------------------------------------------
//  Character classes

//  A control character: what may never appear in a header, CR and LF
//  above all. Tab is the one control allowed (folding whitespace).
static bool s_is_control(unsigned char c)
{
    return (c < ' ' && c != '\t') || c == S_DEL;
}

static bool s_has_control(const char *text, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (s_is_control((unsigned char)text[i]))
            return true;
    return false;
}

//  Printable ASCII or tab: what a header carries unencoded.
static bool s_all_printable_ascii(const char *text, size_t len)
{
    return fq_mail_printable_span(text, len) == len;
}

//  RFC 5322 3.2.3 atext, the characters of a dot-atom besides ".".
static bool s_is_atext(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c && strchr("!#$%&'*+-/=?^_`{|}~", c));
}

//  A domain fit for a Message-ID's right side (RFC 5322 3.6.4): a
//  dot-atom such as example.com, or a literal such as [192.0.2.1].
static bool s_is_msgid_domain(const char *domain, size_t len)
{
    if (len == 0)
        return false;
    if (domain[0] == '[') {
        if (len < 2 || domain[len - 1] != ']')
            return false;
        for (size_t i = 1; i + 1 < len; i++) {
            unsigned char c = (unsigned char)domain[i];
            if (!fq_mail_printable(c) || c == ' ' || c == '[' || c == ']' || c == '\\')
                return false;
        }
        return true;
    }
    if (domain[0] == '.' || domain[len - 1] == '.')
        return false;
    for (size_t i = 0; i < len; i++)
        if (!s_is_atext((unsigned char)domain[i]) && domain[i] != '.')
            return false;
    return true;
}

int fq_mime_check_domain(const char *domain)
{
    return domain && s_is_msgid_domain(domain, strlen(domain)) ? 0 : FQ_EINVAL;
}

// --------------------------------------------------------------------------
//  Mailboxes: "addr", "<addr>" or "Display Name <addr>"

typedef struct {
    const char *name; //  Display name, trimmed; len 0 if none
    size_t name_len;
    const char *addr; //  Address without brackets
    size_t addr_len;
} s_mailbox_t;

static bool s_is_blank(char c)
{
    return c == ' ' || c == '\t';
}

//  Splits mailbox; returns false when it is not one acceptable address.
static bool s_mailbox_parse(const char *mailbox, s_mailbox_t *box)
{
    memset(box, 0, sizeof *box);
    if (!mailbox)
        return false;
    const char *start = mailbox;
    const char *end = mailbox + strlen(mailbox);
    while (start < end && s_is_blank(*start))
        start++;
    while (end > start && s_is_blank(end[-1]))
        end--;
    if (end > start && end[-1] == '>') {
        const char *open = end - 1;
        while (open > start && *open != '<')
            open--;
        if (*open != '<')
            return false;
        box->addr = open + 1;
        box->addr_len = (size_t)(end - 1 - box->addr);
        const char *name_end = open;
        while (name_end > start && s_is_blank(name_end[-1]))
            name_end--;
        box->name = start;
        box->name_len = (size_t)(name_end - start);
    } else {
        box->addr = start;
        box->addr_len = (size_t)(end - start);
    }
    if (box->addr_len == 0 || box->addr_len >= FQ_MIME_ADDRESS_SIZE)
        return false;
    for (size_t i = 0; i < box->addr_len; i++) {
        unsigned char c = (unsigned char)box->addr[i];
        if (!fq_mail_printable(c) || c == ' ' || c == '<' || c == '>')
            return false;
    }
    return !s_has_control(box->name, box->name_len);
}

int fq_mime_address(const char *mailbox, char *address, size_t size)
{
    s_mailbox_t box;
    if (!s_mailbox_parse(mailbox, &box) || box.addr_len >= size)
        return -1;
    memcpy(address, box.addr, box.addr_len);
    address[box.addr_len] = 0;
    return 0;
}

// --------------------------------------------------------------------------
//  Header writing

//  Appends len bytes of base64.
static int s_put_base64(fq_buf_t *buf, const unsigned char *data, size_t len)
{
    int rc = 0;
    for (size_t i = 0; i < len; i += S_B64_IN) {
        size_t have = len - i < S_B64_IN ? len - i : S_B64_IN;
        uint32_t group = 0;
        for (size_t k = 0; k < S_B64_IN; k++)
            group = group << CHAR_BIT | (k < have ? data[i + k] : 0);
        //  n bytes make n + 1 characters; "=" pads the group to 4
        char out[S_B64_OUT];
        for (size_t k = 0; k < S_B64_OUT; k++)
            out[k] = k <= have
                         ? s_b64_alphabet[group >> (S_B64_BITS * (S_B64_OUT - 1 - k)) & S_B64_MASK]
                         : '=';
        rc |= fq_buf_add(buf, out, sizeof out);
    }
    return rc;
}

//  Appends text as RFC 2047 encoded words, starting at column col of the
//  current line. Each word ends on a whole UTF-8 character and each line
//  stays within 76 characters: a word that does not fit on the current
//  line goes on a folded line of its own.
static int s_put_encoded_words(fq_buf_t *buf, size_t col, const char *text, size_t len)
{
    int rc = 0;
    size_t at = 0;
    while (at < len) {
        //  How many bytes fit in " =?UTF-8?B?...?=" on this line
        size_t room =
            col + 1 + S_EW_OVERHEAD < S_EW_LINE_MAX ? S_EW_LINE_MAX - col - 1 - S_EW_OVERHEAD : 0;
        size_t cut = at + room / S_B64_OUT * S_B64_IN;
        if (cut > len)
            cut = len;
        //  Do not end the word inside a character: step back to where one
        //  starts, over up to three continuation bytes (more is not UTF-8:
        //  cut anyway, three back)
        size_t whole = at + fq_utf8_prefix(text + at, len - at, cut - at);
        bool inside = cut - whole > S_UTF8_CONTINUATION_MAX;
        cut = inside ? cut - S_UTF8_CONTINUATION_MAX : whole;
        if (col > 0 && (cut == at || inside)) {
            //  Too little room left on this line for a whole character:
            //  fold. A fresh line has room for 45 bytes, so this is once.
            rc |= fq_buf_add_str(buf, "\r\n");
            col = 0;
            continue;
        }
        rc |= fq_buf_add_char(buf, ' ');
        rc |= fq_buf_add_str(buf, S_EW_PREFIX);
        rc |= s_put_base64(buf, (const unsigned char *)text + at, cut - at);
        rc |= fq_buf_add_str(buf, S_EW_SUFFIX);
        col += 1 + S_EW_OVERHEAD + (cut - at + S_B64_IN - 1) / S_B64_IN * S_B64_OUT;
        at = cut;
    }
    return rc;
}

//  Whether printable ASCII text after column col can be folded so that no
//  line exceeds 998 characters: its longest unbreakable run decides.
static bool s_foldable(size_t col, const char *text, size_t len)
{
    size_t run = col, longest = 0;
    for (size_t i = 0; i < len; i++) {
        run = s_is_blank(text[i]) ? 1 : run + 1;
        if (run > longest)
            longest = run;
    }
    return longest <= FQ_MAIL_HEADER_LINE_MAX;
}

//  Appends printable ASCII text after column col, folded before blanks so
//  that lines stay within 78 characters where a blank allows it (and
//  within 998 where s_foldable says so).
static int s_put_folded(fq_buf_t *buf, size_t col, const char *text, size_t len)
{
    int rc = fq_buf_add_char(buf, ' ');
    col++;
    for (size_t i = 0; i < len; i++) {
        //  Fold before the first blank of a run only: a folded line made
        //  of blanks alone is not allowed (RFC 5322 3.2.2)
        if (s_is_blank(text[i]) && i > 0 && !s_is_blank(text[i - 1])) {
            size_t word = 1;
            while (i + word < len && !s_is_blank(text[i + word]))
                word++;
            if (col + word > S_LINE_PREFERED) {
                rc |= fq_buf_add_str(buf, "\r\n");
                col = 0;
            }
        }
        rc |= fq_buf_add_char(buf, text[i]);
        col++;
    }
    return rc;
}

//  An unstructured field (Subject): as it is when it is printable ASCII
//  that cannot be mistaken for encoded words (and can be folded), else
//  encoded.
static int s_put_unstructured(fq_buf_t *buf, const char *name, const char *text)
{
    size_t len = strlen(text);
    int rc = fq_buf_printf(buf, "%s:", name);
    size_t col = strlen(name) + 1;
    bool plain =
        s_all_printable_ascii(text, len) && !strstr(text, "=?") && s_foldable(col, text, len);
    rc |= plain ? s_put_folded(buf, col, text, len) : s_put_encoded_words(buf, col, text, len);
    return rc | fq_buf_add_str(buf, "\r\n");
}

//  RFC 5322 3.2.3 specials: a display name holding one must be quoted, or
//  "Doe, John <j@x>" would read as two mailboxes.
static bool s_needs_quotes(const char *name, size_t len)
{
    if (len >= 2 && name[0] == '"' && name[len - 1] == '"')
        return false; //  Quoted already
    for (size_t i = 0; i < len; i++)
        if (strchr("()<>[]:;@\\,.\"", name[i]))
            return true;
    return false;
}

//  An address field (From, To) for a parsed mailbox.
static int s_put_mailbox(fq_buf_t *buf, const char *field, const s_mailbox_t *box)
{
    int rc = fq_buf_printf(buf, "%s:", field);
    size_t col = strlen(field) + 1;
    if (box->name_len == 0)
        return rc | fq_buf_printf(buf, " %.*s\r\n", (int)box->addr_len, box->addr);
    if (!s_all_printable_ascii(box->name, box->name_len)) {
        //  Encoded words are not quoted: "Café" <a@b> encodes Café
        const char *name = box->name;
        size_t len = box->name_len;
        if (len >= 2 && name[0] == '"' && name[len - 1] == '"') {
            name++;
            len -= 2; //  Both quotes
        }
        rc |= s_put_encoded_words(buf, col, name, len);
    } else if (s_needs_quotes(box->name, box->name_len)) {
        rc |= fq_buf_add_str(buf, " \"");
        for (size_t i = 0; i < box->name_len; i++) {
            if (box->name[i] == '"' || box->name[i] == '\\')
                rc |= fq_buf_add_char(buf, '\\');
            rc |= fq_buf_add_char(buf, box->name[i]);
        }
        rc |= fq_buf_add_char(buf, '"');
    } else
        rc |= fq_buf_printf(buf, " %.*s", (int)box->name_len, box->name);
    return rc | fq_buf_printf(buf, " <%.*s>\r\n", (int)box->addr_len, box->addr);
}

//  when in UTC; the epoch for a time gmtime cannot represent.
static struct tm s_utc(time_t when)
{
    struct tm tm;
    if (!gmtime_r(&when, &tm)) {
        time_t epoch = 0;
        gmtime_r(&epoch, &tm);
    }
    return tm;
}

static int s_put_date(fq_buf_t *buf, time_t when)
{
    struct tm tm = s_utc(when);
    return fq_buf_printf(buf, "Date: %s, %02d %s %04d %02d:%02d:%02d +0000\r\n",
                         s_day_names[tm.tm_wday], tm.tm_mday, s_month_names[tm.tm_mon],
                         tm.tm_year + S_TM_YEAR_BASE, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

//  Checks the message's extra headers together by the rule fairqd's API
//  held them to at submit (fq_mail_headers_problem: each header, no name
//  twice, one Reply-To at most, the count and bytes of a request), and
//  Reply-To as one address; returns 0 or an fq error code with the reason
//  in error, which quotes no byte of a bad name (it may hold a line
//  break). Headers stored by SQL, which checks less, meet the rule here.
static int s_check_extra_headers(const fq_delivery_t *msg, char *error, size_t error_size)
{
    char reason[FQ_MAIL_HEADER_REASON_SIZE];
    size_t at;
    int rc = fq_mail_headers_problem(msg->header_names, msg->header_values, msg->nheaders,
                                     FQ_MAIL_HEADERS_CARRIED, &at, reason, sizeof reason);
    if (rc != 0) {
        //  A name is quoted only when it is harmless in a log line
        const char *name = msg->nheaders > 0 && msg->header_names ? msg->header_names[at] : NULL;
        if (name && *name && s_all_printable_ascii(name, strlen(name)))
            fq_error_format(error, error_size, "header %s: %s", name, reason);
        else
            fq_error_format(error, error_size, "extra header %zu: %s", at, reason);
        return rc;
    }
    for (size_t i = 0; i < msg->nheaders; i++) {
        const char *name = msg->header_names[i], *value = msg->header_values[i];
        s_mailbox_t box;
        if (strcasecmp(name, FQ_MAIL_HEADER_REPLY_TO) == 0 && !s_mailbox_parse(value, &box)) {
            fq_error_format(error, error_size, "header %s \"%.*s\" is not one address", name,
                            S_QUOTED_MAX, value);
            return FQ_EINVAL;
        }
    }
    return 0;
}

//  Checks the List-Unsubscribe value fairqd made for a message with
//  one-click unsubscribe (RFC 8058): one line of printable ASCII, and no
//  List-Unsubscribe or List-Unsubscribe-Post among the extra headers, as
//  two of either would leave the receiver to pick one. Returns 0 or an fq
//  error code with the reason in error.
static int s_check_list_unsubscribe(const fq_delivery_t *msg, char *error, size_t error_size)
{
    const char *value = msg->list_unsubscribe;
    if (!value || !*value)
        return 0;
    size_t len = strlen(value);
    if (fq_mail_printable_span(value, len) < len) {
        fq_error_format(error, error_size, "its List-Unsubscribe holds a byte a header cannot");
        return FQ_EHEADER;
    }
    //  Folded after the comma between its URLs: each must fit a line
    if (!s_foldable(sizeof FQ_MAIL_HEADER_LIST_UNSUBSCRIBE ":" - 1, value, len)) {
        fq_error_format(error, error_size, "its List-Unsubscribe holds a URL longer than a line");
        return FQ_EINVAL;
    }
    for (size_t i = 0; i < msg->nheaders; i++)
        if (fq_mail_header_unsubscribe(msg->header_names[i])) {
            fq_error_format(error, error_size,
                            "header %s: fairq writes it for a message with one-click unsubscribe",
                            msg->header_names[i]);
            return FQ_EINVAL;
        }
    return 0;
}

//  List-Unsubscribe and List-Unsubscribe-Post (RFC 8058 3.1), of a message
//  with one-click unsubscribe; nothing otherwise.
static int s_put_list_unsubscribe(fq_buf_t *buf, const fq_delivery_t *msg)
{
    if (!msg->list_unsubscribe || !*msg->list_unsubscribe)
        return 0;
    //  An https URL and a mailto may not fit one line together: folded
    //  between them (s_check_list_unsubscribe made sure each fits one)
    int rc = fq_buf_printf(buf, "%s:", FQ_MAIL_HEADER_LIST_UNSUBSCRIBE);
    rc |= s_put_folded(buf, sizeof FQ_MAIL_HEADER_LIST_UNSUBSCRIBE ":" - 1, msg->list_unsubscribe,
                       strlen(msg->list_unsubscribe));
    return rc | fq_buf_printf(buf, "\r\n%s: %s\r\n", FQ_MAIL_HEADER_LIST_UNSUBSCRIBE_POST,
                              FQ_MAIL_LIST_UNSUBSCRIBE_ONE_CLICK);
}

// --------------------------------------------------------------------------
//  Body: quoted-printable (RFC 2045 6.7)

//  True when text[i] ends its line: end of text or a line break next.
static bool s_at_line_end(const char *text, size_t i)
{
    return text[i] == 0 || text[i] == '\n' || (text[i] == '\r' && text[i + 1] == '\n');
}

static int s_put_quoted_printable(fq_buf_t *buf, const char *text)
{
    int rc = 0;
    size_t col = 0;
    for (size_t i = 0; text[i]; i++) {
        unsigned char c = (unsigned char)text[i];
        //  LF and CRLF are the text's line breaks; a lone CR is data
        if (c == '\n' || (c == '\r' && text[i + 1] == '\n')) {
            if (c == '\r')
                i++;
            rc |= fq_buf_add_str(buf, "\r\n");
            col = 0;
            continue;
        }
        bool blank = c == ' ' || c == '\t';
        bool encode =
            c == '=' || (!fq_mail_printable(c) && !blank) || (blank && s_at_line_end(text, i + 1));
        size_t token = encode ? S_QP_TOKEN_MAX : 1;
        if (col + token > S_QP_TEXT_MAX) {
            rc |= fq_buf_add_str(buf, "=\r\n");
            col = 0;
        }
        //  An encoded line starting "From " would start a new message in
        //  an mbox file: RFC 2049 3 (8) suggests writing its F as =46
        if (col == 0 && strncmp(text + i, S_FROM_LINE, S_FROM_LINE_LEN) == 0) {
            encode = true;
            token = S_QP_TOKEN_MAX;
        }
        if (encode) {
            char hex[S_QP_TOKEN_MAX] = {'=', s_hex_digits[c >> S_HEX_BITS],
                                        s_hex_digits[c & S_HEX_MASK]};
            rc |= fq_buf_add(buf, hex, sizeof hex);
        } else
            rc |= fq_buf_add_char(buf, (char)c);
        col += token;
    }
    //  SMTP data and mbox records end with a line break
    if (col > 0)
        rc |= fq_buf_add_str(buf, "\r\n");
    return rc;
}

//  Parses mailbox, the message's role ("sender"); returns 0 or an fq
//  error code with the reason in error, quoting the mailbox only when it
//  holds no line break.
static int s_check_mailbox(const char *role, const char *mailbox, s_mailbox_t *box, char *error,
                           size_t error_size)
{
    if (s_mailbox_parse(mailbox, box))
        return 0;
    if (mailbox && s_has_control(mailbox, strlen(mailbox))) {
        fq_error_format(error, error_size, "%s address holds a control character (CR, LF...)",
                        role);
        return FQ_EHEADER;
    }
    if (!mailbox || !*mailbox)
        fq_error_format(error, error_size, "no %s address", role);
    else
        fq_error_format(error, error_size, "%s \"%s\" is not one address", role, mailbox);
    return FQ_EINVAL;
}

// --------------------------------------------------------------------------
//  multipart/alternative (RFC 2046 5.1.4)

//  True when an encoded part holds the delimiter "--boundary".
static bool s_holds_delimiter(const fq_buf_t *part, const char *boundary)
{
    char delimiter[2 + S_BOUNDARY_SIZE];
    int n = snprintf(delimiter, sizeof delimiter, "--%s", boundary);
    return part->size > 0 && memmem(part->data, part->size, delimiter, (size_t)n) != NULL;
}

//  Draws a boundary for try number attempt into boundary. Random bytes
//  when the kernel gives them, else the message id and attempt (still
//  checked against the parts, which is what makes it safe).
static void s_boundary(char boundary[S_BOUNDARY_SIZE], uint64_t id, int attempt)
{
    unsigned char bytes[S_BOUNDARY_RANDOM];
    if (getrandom(bytes, sizeof bytes, 0) != (ssize_t)sizeof bytes) {
        memset(bytes, 0, sizeof bytes);
        memcpy(bytes, &id, sizeof id);
        bytes[sizeof id] = (unsigned char)attempt;
    }
    memcpy(boundary, S_BOUNDARY_PREFIX, sizeof S_BOUNDARY_PREFIX - 1);
    char *hex = boundary + sizeof S_BOUNDARY_PREFIX - 1;
    for (size_t i = 0; i < sizeof bytes; i++) {
        hex[2 * i] = s_hex_digits[bytes[i] >> S_HEX_BITS];
        hex[2 * i + 1] = s_hex_digits[bytes[i] & S_HEX_MASK];
    }
    hex[2 * sizeof bytes] = 0;
}

//  One part: its own Content-Type and Content-Transfer-Encoding, then the
//  encoded text, then the CRLF that belongs to the next delimiter.
static int s_put_part(fq_buf_t *buf, const char *boundary, const char *subtype,
                      const fq_buf_t *encoded)
{
    int mem = fq_buf_printf(buf, "--%s\r\n", boundary);
    mem |= fq_buf_printf(buf, "Content-Type: text/%s; charset=UTF-8\r\n", subtype);
    mem |= fq_buf_add_str(buf, "Content-Transfer-Encoding: quoted-printable\r\n\r\n");
    mem |= fq_buf_add(buf, encoded->data, encoded->size);
    mem |= fq_buf_add_str(buf, "\r\n");
    return mem;
}

//  The request's extra headers, on the top level, after fairq's own.
static void s_put_extra_headers(fq_buf_t *buf, const fq_delivery_t *msg, int *mem)
{
    for (size_t i = 0; i < msg->nheaders; i++)
        *mem |= fq_buf_printf(buf, "%s: %s\r\n", msg->header_names[i], msg->header_values[i]);
}

//  The rest of the header block and the body of an HTML message with a
//  plain-text alternative: the text part first, then the HTML, the least
//  preferred first as RFC 2046 5.1.4 orders them. Returns 0 (memory
//  failures ORed into *mem), or FQ_ENOMEM / FQ_EINVAL (no boundary that
//  the parts do not hold) with the reason in error.
static int s_put_alternative(fq_buf_t *buf, const fq_delivery_t *msg, int *mem, char *error,
                             size_t error_size)
{
    fq_buf_t text = {0}, html = {0};
    int part_mem = s_put_quoted_printable(&text, msg->text_body);
    part_mem |= s_put_quoted_printable(&html, msg->body ? msg->body : "");
    char boundary[S_BOUNDARY_SIZE];
    bool found = false;
    for (int attempt = 0; !part_mem && !found && attempt < S_BOUNDARY_TRIES; attempt++) {
        s_boundary(boundary, msg->id, attempt);
        found = !s_holds_delimiter(&text, boundary) && !s_holds_delimiter(&html, boundary);
    }
    int rc = 0;
    if (part_mem) {
        fq_error_format(error, error_size, "out of memory rendering message %" PRIu64, msg->id);
        rc = FQ_ENOMEM;
    } else if (!found) {
        fq_error_format(error, error_size, "no MIME boundary found that the message's parts lack");
        rc = FQ_EINVAL;
    } else {
        *mem |= fq_buf_printf(buf, "Content-Type: multipart/alternative; boundary=\"%s\"\r\n",
                              boundary);
        s_put_extra_headers(buf, msg, mem);
        *mem |= fq_buf_add_str(buf, "\r\n");
        *mem |= s_put_part(buf, boundary, "plain", &text);
        *mem |= s_put_part(buf, boundary, "html", &html);
        *mem |= fq_buf_printf(buf, "--%s--\r\n", boundary);
    }
    fq_buf_free(&text);
    fq_buf_free(&html);
    return rc;
}

// --------------------------------------------------------------------------

int fq_mime_render(const fq_delivery_t *msg, const fq_mime_options_t *options, char **text,
                   size_t *len, char *error, size_t error_size)
{
    *text = NULL;
    *len = 0;
    s_mailbox_t from, to;
    int rc = s_check_mailbox("sender", msg->from, &from, error, error_size);
    if (rc == 0)
        rc = s_check_mailbox("recipient", msg->to, &to, error, error_size);
    if (rc != 0)
        return rc;
    const char *subject = msg->subject ? msg->subject : "";
    if (s_has_control(subject, strlen(subject))) {
        fq_error_format(error, error_size, "subject holds a control character (CR, LF...)");
        return FQ_EHEADER;
    }
    rc = s_check_extra_headers(msg, error, error_size);
    if (rc == 0)
        rc = s_check_list_unsubscribe(msg, error, error_size);
    if (rc != 0)
        return rc;

    //  The Message-ID's domain: the configured one, else the sender's
    const char *domain = options ? options->message_id_domain : NULL;
    size_t domain_len = domain ? strlen(domain) : 0;
    if (domain_len == 0) {
        const char *at = memrchr(from.addr, '@', from.addr_len);
        domain = at ? at + 1 : "";
        domain_len = at ? (size_t)(from.addr + from.addr_len - domain) : 0;
    }
    if (!s_is_msgid_domain(domain, domain_len)) {
        fq_error_format(error, error_size, "no valid domain for the Message-ID (sender \"%.*s\")",
                        (int)from.addr_len, from.addr);
        return FQ_EINVAL;
    }

    fq_buf_t buf = {0};
    time_t date = options && options->date ? options->date : time(NULL);
    int mem = s_put_date(&buf, date);
    mem |= s_put_mailbox(&buf, "From", &from);
    mem |= s_put_mailbox(&buf, "To", &to);
    mem |= s_put_unstructured(&buf, "Subject", subject);
    mem |= fq_buf_printf(&buf, "Message-ID: <fairq.%" PRIu64 "@%.*s>\r\n", msg->id, (int)domain_len,
                         domain);
    mem |= fq_buf_add_str(&buf, "MIME-Version: 1.0\r\n");
    mem |= s_put_list_unsubscribe(&buf, msg);
    if (msg->body_is_html && msg->text_body && *msg->text_body) {
        rc = s_put_alternative(&buf, msg, &mem, error, error_size);
        if (rc != 0) {
            fq_buf_free(&buf);
            return rc;
        }
    } else {
        mem |= fq_buf_printf(&buf, "Content-Type: text/%s; charset=UTF-8\r\n",
                             msg->body_is_html ? "html" : "plain");
        mem |= fq_buf_add_str(&buf, "Content-Transfer-Encoding: quoted-printable\r\n");
        s_put_extra_headers(&buf, msg, &mem);
        mem |= fq_buf_add_str(&buf, "\r\n");
        mem |= s_put_quoted_printable(&buf, msg->body ? msg->body : "");
    }

    *text = s_finish(&buf, mem, len);
    if (!*text) {
        fq_error_format(error, error_size, "out of memory rendering message %" PRIu64, msg->id);
        return FQ_ENOMEM;
    }
    return 0;
}

// --------------------------------------------------------------------------
//  mbox

//  True when line (len bytes) is ">*From ": one that mboxrd escapes.
static bool s_is_from_line(const char *line, size_t len)
{
    size_t i = 0;
    while (i < len && line[i] == '>')
        i++;
    return len - i >= S_FROM_LINE_LEN && memcmp(line + i, S_FROM_LINE, S_FROM_LINE_LEN) == 0;
}

char *fq_mime_mbox_record(const char *text, size_t len, const char *sender, time_t when,
                          size_t *out_len)
{
    fq_buf_t buf = {0};
    //  The separator line in asctime's format, "Tue Nov 14 22:13:20 2023"
    struct tm tm = s_utc(when);
    int mem = fq_buf_printf(&buf, "From %s %s %s %2d %02d:%02d:%02d %d\n", sender,
                            s_day_names[tm.tm_wday], s_month_names[tm.tm_mon], tm.tm_mday,
                            tm.tm_hour, tm.tm_min, tm.tm_sec, tm.tm_year + S_TM_YEAR_BASE);
    size_t at = 0;
    while (at < len) {
        const char *newline = memchr(text + at, '\n', len - at);
        size_t end = newline ? (size_t)(newline - text) : len;
        size_t line_len = end - at;
        if (line_len > 0 && text[at + line_len - 1] == '\r')
            line_len--;
        if (s_is_from_line(text + at, line_len))
            mem |= fq_buf_add_char(&buf, '>');
        mem |= fq_buf_add(&buf, text + at, line_len);
        mem |= fq_buf_add_char(&buf, '\n');
        at = newline ? end + 1 : len;
    }
    //  An empty line ends the record
    mem |= fq_buf_add_char(&buf, '\n');
    return s_finish(&buf, mem, out_len);
}
