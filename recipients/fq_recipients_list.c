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
#include <string.h>

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

const char *fq_recipient_fields_text(const char *text, size_t size, size_t *fields_size)
{
    static const char key[] = "\"fields\"";
    const char *end = text + size;
    const char *at = s_space(text, end);
    if (at == end || *at != '{')
        return NULL;
    at = s_space(at + 1, end);
    while (at < end && *at == '"') {
        const char *key_end = s_value_end(at, end);
        const char *value = key_end ? s_space(key_end, end) : NULL;
        if (!value || value == end || *value != ':')
            return NULL;
        value = s_space(value + 1, end);
        const char *value_end = s_value_end(value, end);
        if (!value_end)
            return NULL;
        if ((size_t)(key_end - at) == sizeof key - 1 && memcmp(at, key, sizeof key - 1) == 0) {
            *fields_size = (size_t)(value_end - value);
            return value;
        }
        at = s_space(value_end, end);
        if (at == end || *at != ',')
            return NULL;
        at = s_space(at + 1, end);
    }
    return NULL;
}
