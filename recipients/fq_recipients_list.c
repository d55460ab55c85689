/*  fq_recipients_list.c — a list of recipients walked as text (see
    fq_recipients.h).

    The list is not parsed whole: then one recipient jansson cannot hold (a
    number like 1e400) would fail them all, and the fields would be
    written again by jansson rather than kept as they came (0.1 must stay
    0.1). Walked as text, only where each value begins and ends is found.
    The text is trusted to be well-formed JSON (the server's output, or a
    body already checked), so strings are skipped by their quotes and
    escapes and containers by their brackets, nothing more.
*/
#include "fq_recipients.h"
#include "fq_utf8.h"
#include <stdio.h>
#include <string.h>

//  Longest key quoted in a reason, bytes (as fq_recipients.c quotes a
//  field's name).
#define S_KEY_QUOTED_MAX 64

static const char *s_space(const char *at, const char *end)
{
    while (at < end && (*at == ' ' || *at == '\t' || *at == '\n' || *at == '\r'))
        at++;
    return at;
}

//  The end of the JSON value that starts at at, or NULL if it has none.
static const char *s_value_end(const char *at, const char *end)
{
    if (at >= end)
        return NULL;
    if (*at == '"') {
        for (at++; at < end; at++)
            if (*at == '\\')
                at++;
            else if (*at == '"')
                return at + 1;
        return NULL;
    }
    if (*at == '{' || *at == '[') {
        int depth = 0;
        for (; at < end; at++) {
            if (*at == '"') {
                at = s_value_end(at, end);
                if (!at)
                    return NULL;
                at--;
            } else if (*at == '{' || *at == '[')
                depth++;
            else if ((*at == '}' || *at == ']') && --depth == 0)
                return at + 1;
        }
        return NULL;
    }
    const char *start = at;
    while (at < end && !strchr(",}] \t\r\n", *at))
        at++;
    return at > start ? at : NULL;
}

void fq_recipients_scan_start(fq_recipients_scan_t *scan, const char *text, size_t size)
{
    const char *end = text + size;
    const char *at = s_space(text, end);
    *scan = (fq_recipients_scan_t){.end = end, .malformed = at == end || *at != '['};
    at = scan->malformed ? end : s_space(at + 1, end);
    //  An empty list: nothing to walk
    scan->at = at < end && *at == ']' ? end : at;
}

const char *fq_recipients_scan_next(fq_recipients_scan_t *scan, size_t *size)
{
    if (scan->malformed || scan->at >= scan->end)
        return NULL;
    const char *element = scan->at;
    const char *element_end = s_value_end(element, scan->end);
    const char *at = element_end ? s_space(element_end, scan->end) : NULL;
    if (!at || at == scan->end || (*at != ',' && *at != ']')) {
        scan->malformed = true;
        scan->at = scan->end;
        return NULL;
    }
    //  After the closing bracket nothing is read
    scan->at = *at == ']' ? scan->end : s_space(at + 1, scan->end);
    *size = (size_t)(element_end - element);
    return element;
}

//  A member of an object walked as text: its key with its quotes, and its
//  value.
typedef struct {
    const char *key;
    size_t key_size;
    const char *value;
    size_t value_size;
} s_member_t;

//  The member of an object at *at, after its '{' or the ',' after the
//  member before; false at the object's end. *at is then where the next
//  one is read.
static bool s_next_member(const char **at, const char *end, s_member_t *member)
{
    const char *key = *at;
    if (key >= end || *key != '"')
        return false;
    const char *key_end = s_value_end(key, end);
    const char *value = key_end ? s_space(key_end, end) : NULL;
    if (!value || value == end || *value != ':')
        return false;
    value = s_space(value + 1, end);
    const char *value_end = s_value_end(value, end);
    if (!value_end)
        return false;
    *member = (s_member_t){key, (size_t)(key_end - key), value, (size_t)(value_end - value)};
    const char *after = s_space(value_end, end);
    //  After the last member, nothing more is read
    *at = after < end && *after == ',' ? s_space(after + 1, end) : end;
    return true;
}

//  The first member of the JSON object at *at; false when it has none or
//  is not an object.
static bool s_first_member(const char **at, const char *end, s_member_t *member)
{
    const char *open = s_space(*at, end);
    if (open == end || *open != '{')
        return false;
    *at = s_space(open + 1, end);
    return s_next_member(at, end, member);
}

//  Whether a member's key is name, as jansson reads it: "\u0074o" is "to".
static bool s_key_is(const s_member_t *member, const char *name)
{
    size_t length = strlen(name);
    if (!memchr(member->key, '\\', member->key_size))
        return member->key_size == length + 2 && memcmp(member->key + 1, name, length) == 0;
    json_t *key = json_loadb(member->key, member->key_size, JSON_DECODE_ANY, NULL);
    bool is = json_is_string(key) && json_string_length(key) == length &&
              memcmp(json_string_value(key), name, length) == 0;
    json_decref(key);
    return is;
}

const char *fq_recipient_fields_text(const char *text, size_t size, size_t *fields_size)
{
    //  The member jansson's value is: its key read as jansson reads it
    //  ("\u0066ields" is "fields"; written raw, it failed the whole chunk
    //  at every try), and the last of two (jansson keeps the last)
    const char *at = text, *end = text + size, *found = NULL;
    s_member_t member;
    for (bool more = s_first_member(&at, end, &member); more;
         more = s_next_member(&at, end, &member))
        if (s_key_is(&member, "fields")) {
            *fields_size = member.value_size;
            found = member.value;
        }
    return found;
}

//  What a JSON value that is not an object is, by its first byte.
static const char *s_kind(char first)
{
    return first == '"'                   ? "a string"
           : first == '['                 ? "an array"
           : first == 't' || first == 'f' ? "a boolean"
           : first == 'n'                 ? "null"
                                          : "a number";
}

//  Why one recipient, the size bytes of JSON at text, has not a
//  recipient's shape, or NULL when it has.
static const char *s_shape_problem(const char *text, size_t size, char *reason, size_t reason_size)
{
    if (*text != '{') {
        snprintf(reason, reason_size, "expected an object with \"to\", not %s", s_kind(*text));
        return reason;
    }
    const char *at = text, *end = text + size;
    s_member_t member, unknown = {0};
    bool has_to = false;
    for (bool more = s_first_member(&at, end, &member); more;
         more = s_next_member(&at, end, &member)) {
        if (s_key_is(&member, "to"))
            has_to = true;
        else if (!unknown.key && !s_key_is(&member, "fields"))
            unknown = member;
    }
    if (unknown.key) {
        //  The key as it was written, without its quotes
        size_t length = unknown.key_size - 2;
        int quoted = (int)fq_utf8_prefix(unknown.key + 1, length, S_KEY_QUOTED_MAX);
        snprintf(reason, reason_size, "unknown key \"%.*s%s\" (%s)", quoted, unknown.key + 1,
                 (size_t)quoted < length ? "..." : "",
                 has_to ? "a recipient has only \"to\" and \"fields\"" : "did you mean \"to\"?");
        return reason;
    }
    if (!has_to)
        return "expected an object with \"to\"";
    return NULL;
}

const char *fq_recipients_shape_problem(const char *text, size_t size, size_t *position,
                                        char *reason, size_t reason_size)
{
    fq_recipients_scan_t scan;
    fq_recipients_scan_start(&scan, text, size);
    *position = 0;
    size_t element_size;
    const char *element;
    while ((element = fq_recipients_scan_next(&scan, &element_size))) {
        const char *problem = s_shape_problem(element, element_size, reason, reason_size);
        if (problem)
            return problem;
        (*position)++;
    }
    return scan.malformed ? "recipients must be a JSON array" : NULL;
}
