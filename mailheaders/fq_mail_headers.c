/*  fq_mail_headers.c — the rule of a request's extra header fields
    (contract in fq_mail_headers.h). */
#include "fq_mail_headers.h"
#include "fq_error.h"
#include <string.h>
#include <strings.h>

//  The ASCII delete character, a control like those below space.
#define S_DEL 0x7F

//  What stands between a field's name and its value: ": ".
#define S_SEPARATOR_LEN 2

static const char *const s_owned[] = {
    "Date",        "From",         "To",           "Subject",
    "Message-ID",  "MIME-Version", "Content-Type", "Content-Transfer-Encoding",
    "Return-Path",
};
#define S_OWNED_COUNT (sizeof s_owned / sizeof s_owned[0])

bool fq_mail_header_owned(const char *name)
{
    for (size_t i = 0; name && i < S_OWNED_COUNT; i++)
        if (strcasecmp(name, s_owned[i]) == 0)
            return true;
    return false;
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
        if (c <= ' ' || c >= S_DEL || c == ':') {
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
    for (size_t i = 0; i < value_len; i++) {
        unsigned char c = (unsigned char)value[i];
        if (c == '\r' || c == '\n') {
            fq_error_format(reason, reason_size, "its value holds CR or LF (at %zu)", i);
            return FQ_EHEADER;
        }
        if ((c < ' ' && c != '\t') || c >= S_DEL) {
            fq_error_format(reason, reason_size,
                            "its value holds byte 0x%02X at %zu (a value is printable ASCII)", c,
                            i);
            return FQ_EHEADER;
        }
    }
    if (name_len + S_SEPARATOR_LEN + value_len > FQ_MAIL_HEADER_LINE_MAX) {
        fq_error_format(reason, reason_size, "its line is longer than %d characters",
                        FQ_MAIL_HEADER_LINE_MAX);
        return FQ_EINVAL;
    }
    return 0;
}
