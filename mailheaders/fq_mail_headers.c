/*  fq_mail_headers.c — the rule of a request's extra header fields
    (contract in fq_mail_headers.h). */
#include "fq_mail_headers.h"
#include "fq_error.h"
#include <string.h>
#include <strings.h>

//  What stands between a field's name and its value: ": ".
#define S_SEPARATOR_LEN 2

//  What ends an entry of s_owned that is a prefix of names, not a name.
#define S_PREFIX_MARK '-'

//  The fields fairq writes itself (RFC 5322 3.6: the origination date,
//  originator, destination and identification fields, and Subject; RFC
//  2045 the MIME ones, every Content- field, since any of them changes
//  how the one body part renders), and those only a relay or the
//  receiving side writes (the trace fields of RFC 5322 3.6.6-7 and 5321
//  4.4, the DKIM (RFC 6376), ARC (RFC 8617) and Authentication-Results
//  (RFC 8601) ones). An entry ending in S_PREFIX_MARK is a prefix.
static const char *const s_owned[] = {
    "Date",         "From",
    "Sender",       "To",
    "Cc",           "Bcc",
    "Subject",      "Message-ID",
    "MIME-Version", "Content-",
    "Return-Path",  "Received",
    "Resent-",      "DKIM-Signature",
    "ARC-",         "Authentication-Results",
};
#define S_OWNED_COUNT (sizeof s_owned / sizeof s_owned[0])

bool fq_mail_printable(unsigned char c)
{
    return c >= ' ' && c <= '~';
}

size_t fq_mail_printable_span(const char *text, size_t len)
{
    size_t i = 0;
    while (i < len && (fq_mail_printable((unsigned char)text[i]) || text[i] == '\t'))
        i++;
    return i;
}

//  Whether name is the field entry names, or starts with the prefix it is.
static bool s_owned_by(const char *entry, const char *name)
{
    size_t len = strlen(entry);
    if (entry[len - 1] == S_PREFIX_MARK)
        return strncasecmp(name, entry, len) == 0;
    return strcasecmp(name, entry) == 0;
}

bool fq_mail_header_owned(const char *name)
{
    for (size_t i = 0; name && i < S_OWNED_COUNT; i++)
        if (s_owned_by(s_owned[i], name))
            return true;
    return false;
}

bool fq_mail_header_unsubscribe(const char *name)
{
    return name && (strcasecmp(name, FQ_MAIL_HEADER_LIST_UNSUBSCRIBE) == 0 ||
                    strcasecmp(name, FQ_MAIL_HEADER_LIST_UNSUBSCRIBE_POST) == 0);
}

const char *fq_mail_header_owned_name(size_t i)
{
    return i < S_OWNED_COUNT ? s_owned[i] : NULL;
}

int fq_mail_header_problem(const char *name, const char *value, char *reason, size_t reason_size)
{
    if (!name || !*name || !value) {
        fq_error_format(reason, reason_size, "no name or no value");
        return FQ_EINVAL;
    }
    size_t name_len = strlen(name);
    for (size_t i = 0; i < name_len; i++) {
        unsigned char c = (unsigned char)name[i];
        if (!fq_mail_printable(c) || c == ' ' || c == ':') {
            fq_error_format(reason, reason_size,
                            "byte 0x%02X at %zu of its name is not allowed (a name is printable "
                            "ASCII without ':' or space)",
                            c, i);
            return FQ_EHEADER;
        }
    }
    if (fq_mail_header_owned(name)) {
        fq_error_format(reason, reason_size, "it is written by fairq and cannot be given");
        return FQ_EINVAL;
    }
    size_t value_len = strlen(value);
    size_t at = fq_mail_printable_span(value, value_len);
    if (at < value_len) {
        unsigned char c = (unsigned char)value[at];
        if (c == '\r' || c == '\n')
            fq_error_format(reason, reason_size, "its value holds CR or LF (at %zu)", at);
        else
            fq_error_format(reason, reason_size,
                            "its value holds byte 0x%02X at %zu (a value is printable ASCII)", c,
                            at);
        return FQ_EHEADER;
    }
    if (name_len + S_SEPARATOR_LEN + value_len > FQ_MAIL_HEADER_LINE_MAX) {
        fq_error_format(reason, reason_size, "its line is longer than %d characters",
                        FQ_MAIL_HEADER_LINE_MAX);
        return FQ_EINVAL;
    }
    return 0;
}

//  Whether names[i] was given before it, in any case.
static bool s_repeated(const char *const *names, size_t i)
{
    for (size_t j = 0; j < i; j++)
        if (strcasecmp(names[j], names[i]) == 0)
            return true;
    return false;
}

int fq_mail_headers_problem(const char *const *names, const char *const *values, size_t n,
                            fq_mail_headers_form_t form, size_t *at, char *reason,
                            size_t reason_size)
{
    *at = 0;
    if (n > 0 && (!names || !values)) {
        fq_error_format(reason, reason_size, "%zu headers but no names or values", n);
        return FQ_EINVAL;
    }
    size_t count = 0, bytes = 0;
    for (size_t i = 0; i < n; i++) {
        *at = i;
        int rc = fq_mail_header_problem(names[i], values[i], reason, reason_size);
        if (rc != 0)
            return rc;
        bool reply_to = strcasecmp(names[i], FQ_MAIL_HEADER_REPLY_TO) == 0;
        if (reply_to && form == FQ_MAIL_HEADERS_GIVEN) {
            fq_error_format(reason, reason_size, "give the address as reply_to, not among headers");
            return FQ_EINVAL;
        }
        if (s_repeated(names, i)) {
            fq_error_format(reason, reason_size, "it is given twice (names are case-insensitive)");
            return FQ_EINVAL;
        }
        //  The request's reply_to, carried: a field of its own, not one of
        //  the headers the limits are of
        if (reply_to)
            continue;
        if (++count > FQ_MAIL_HEADERS_MAX) {
            fq_error_format(reason, reason_size, "more than %d headers", FQ_MAIL_HEADERS_MAX);
            return FQ_EINVAL;
        }
        bytes += strlen(names[i]) + strlen(values[i]);
        if (bytes > FQ_MAIL_HEADERS_BYTES_MAX) {
            fq_error_format(reason, reason_size,
                            "with it the headers hold more than %d bytes of names and values",
                            FQ_MAIL_HEADERS_BYTES_MAX);
            return FQ_EINVAL;
        }
    }
    return 0;
}
