/*  fq_recipients.c — a good address and a good recipient (see
    fq_recipients.h). */
#include "fq_recipients.h"
#include "fq_utf8.h"
#include <stdio.h>
#include <string.h>

//  Longest field name quoted in a reason, bytes: a tenant can tell which
//  field it is, and the reason still fits FQ_RECIPIENT_REASON_SIZE.
#define S_REASON_NAME_MAX 64

//  Longest part of jansson's own error quoted in a reason, bytes.
#define S_READ_ERROR_MAX 100

//  Printable ASCII other than the space: the only bytes an address holds.
#define S_PRINTABLE_FIRST 0x21
#define S_PRINTABLE_LAST  0x7e

//  A number as the text of a reason.
#define S_TEXT(number)  S_TEXT_(number)
#define S_TEXT_(number) #number

//  How many bytes of text (at most max) to quote without cutting a UTF-8
//  character: a field name cut inside one made a reason invalid UTF-8, the
//  server refused the rejects, and the chunk failed on every retry.
static int s_quoted(const char *text, size_t max)
{
    return (int)fq_utf8_prefix(text, strnlen(text, max + 1), max);
}

static bool s_domain_char(const char *domain, size_t i)
{
    char c = domain[i];
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           (c == '.' && domain[i + 1] != '.');
}

const char *fq_recipient_address_problem(const char *address, size_t size)
{
    if (size == 0)
        return "empty address";
    if (size > FQ_RECIPIENT_ADDRESS_MAX)
        return "address longer than " S_TEXT(FQ_RECIPIENT_ADDRESS_MAX) " bytes";
    const char *at = NULL;
    for (size_t i = 0; i < size; i++) {
        unsigned char c = (unsigned char)address[i];
        if (c == '\r' || c == '\n')
            return "address contains CR or LF";
        if (c < S_PRINTABLE_FIRST || c > S_PRINTABLE_LAST)
            return "address contains a space, control or non-ASCII character";
        if (c == '@') {
            if (at)
                return "address has more than one @";
            at = address + i;
        }
    }
    if (!at || at == address || at == address + size - 1)
        return "address is not local@domain";
    const char *domain = at + 1;
    size_t domain_size = size - (size_t)(domain - address);
    if (domain[0] == '.' || domain[domain_size - 1] == '.' || !memchr(domain, '.', domain_size))
        return "address domain is not a dotted name";
    for (size_t i = 0; i < domain_size; i++)
        if (!s_domain_char(domain, i))
            return "address domain has an invalid character";
    return NULL;
}

//  The C1 controls, U+0080..U+009F, are written C2 80..C2 9F in UTF-8.
#define S_C1_LEAD      0xc2
#define S_C1_FIRST     0x80
#define S_C1_LAST      0x9f
#define S_CONTROL_LAST 0x1f
#define S_CONTROL_DEL  0x7f

const char *fq_recipient_key_problem(const char *key, size_t size)
{
    if (size == 0)
        return "empty recipient key";
    if (size > FQ_RECIPIENT_KEY_MAX)
        return "recipient key longer than " S_TEXT(FQ_RECIPIENT_KEY_MAX) " bytes";
    if (!fq_utf8_valid(key, size))
        return "recipient key is not valid UTF-8";
    for (size_t i = 0; i < size; i++) {
        unsigned char c = (unsigned char)key[i];
        if (c <= S_CONTROL_LAST || c == S_CONTROL_DEL ||
            (c == S_C1_LEAD && i + 1 < size && (unsigned char)key[i + 1] >= S_C1_FIRST &&
             (unsigned char)key[i + 1] <= S_C1_LAST))
            return "recipient key contains a control character";
    }
    return NULL;
}

const char *fq_recipient_to(json_t *recipient, size_t *size)
{
    json_t *to = json_is_object(recipient) ? json_object_get(recipient, "to") : NULL;
    if (!json_is_string(to))
        return NULL;
    if (size)
        *size = json_string_length(to);
    return json_string_value(to);
}

//  Why a field the rules require is refused, or NULL: missing, or (one
//  that goes into a header: the subject's, or an http request's header
//  values') a text on more than one line.
static const char *s_required_problem(json_t *fields, const char *name, bool header, bool http,
                                      char *reason, size_t reason_size)
{
    json_t *field = json_object_get(fields, name);
    if (!field) {
        snprintf(reason, reason_size, "field \"%.*s\" used by the template is missing",
                 s_quoted(name, S_REASON_NAME_MAX), name);
        return reason;
    }
    //  A header's value on two lines would be a header of its own (an
    //  injected Bcc): refused here, with the recipient's other faults,
    //  rather than found dead at send time
    if (header && json_is_string(field) &&
        strcspn(json_string_value(field), "\r\n") < json_string_length(field)) {
        snprintf(reason, reason_size, "field \"%.*s\" goes into %s and holds CR, LF or NUL",
                 s_quoted(name, S_REASON_NAME_MAX), name, http ? "a header" : "the subject");
        return reason;
    }
    return NULL;
}

const char *fq_recipient_problem(json_t *recipient, const fq_recipient_rules_t *rules, char *reason,
                                 size_t reason_size)
{
    if (!json_is_object(recipient))
        return "recipient is not an object";
    size_t to_size = 0;
    const char *to = fq_recipient_to(recipient, &to_size);
    if (!to)
        return "recipient has no \"to\" string";
    bool key_only = rules && rules->key_only;
    const char *problem = key_only ? fq_recipient_key_problem(to, to_size)
                                   : fq_recipient_address_problem(to, to_size);
    if (problem)
        return problem;
    json_t *fields = json_object_get(recipient, "fields");
    if (fields && !json_is_object(fields) && !json_is_null(fields))
        return "\"fields\" is not an object";
    const char *key;
    json_t *value;
    json_object_foreach(fields, key, value)
    {
        if (!json_is_string(value) && !json_is_number(value) && !json_is_boolean(value)) {
            snprintf(reason, reason_size, "field \"%.*s\" is not a string, number or boolean",
                     s_quoted(key, S_REASON_NAME_MAX), key);
            return reason;
        }
    }
    for (size_t i = 0; rules && i < rules->count; i++) {
        problem = s_required_problem(fields, rules->fields[i], i < rules->header_count, key_only,
                                     reason, reason_size);
        if (problem)
            return problem;
    }
    return NULL;
}

const char *fq_recipient_read(const char *text, size_t size, const fq_recipient_rules_t *rules,
                              json_t **recipient, char *reason, size_t reason_size)
{
    json_error_t error;
    *recipient = json_loadb(text, size, JSON_DECODE_ANY, &error);
    if (!*recipient) {
        snprintf(reason, reason_size, "recipient could not be read: %.*s",
                 s_quoted(error.text, S_READ_ERROR_MAX), error.text);
        return reason;
    }
    return fq_recipient_problem(*recipient, rules, reason, reason_size);
}
