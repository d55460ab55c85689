/*  fq_utf8.c — the one UTF-8 check of fairq (see fq_utf8.h). */
#include "fq_utf8.h"

//  A continuation byte is 10xxxxxx.
static bool s_continues(unsigned char c)
{
    return (c & 0xC0) == 0x80;
}

size_t fq_utf8_lead_length(unsigned char lead)
{
    if (lead < 0x80)
        return 1;
    if (lead >= 0xC2 && lead <= 0xDF)
        return 2;
    if (lead >= 0xE0 && lead <= 0xEF)
        return 3;
    if (lead >= 0xF0 && lead <= 0xF4)
        return 4;
    return 0;
}

bool fq_utf8_second_ok(unsigned char lead, unsigned char second)
{
    unsigned char low = 0x80, high = 0xBF;
    if (lead == 0xE0)
        low = 0xA0; //  Below: overlong
    else if (lead == 0xED)
        high = 0x9F; //  Above: surrogates
    else if (lead == 0xF0)
        low = 0x90; //  Below: overlong
    else if (lead == 0xF4)
        high = 0x8F; //  Above: beyond U+10FFFF
    return second >= low && second <= high;
}

size_t fq_utf8_sequence(const char *text, size_t size)
{
    if (size == 0)
        return 0;
    const unsigned char *p = (const unsigned char *)text;
    size_t length = fq_utf8_lead_length(p[0]);
    if (length == 0 || length > size)
        return 0;
    if (length > 1 && !fq_utf8_second_ok(p[0], p[1]))
        return 0;
    for (size_t k = 2; k < length; k++)
        if (!s_continues(p[k]))
            return 0;
    return length;
}

size_t fq_utf8_invalid_at(const char *text, size_t size)
{
    size_t at = 0;
    while (at < size) {
        size_t length = fq_utf8_sequence(text + at, size - at);
        if (length == 0)
            return at;
        at += length;
    }
    return size;
}

bool fq_utf8_valid(const char *text, size_t size)
{
    return fq_utf8_invalid_at(text, size) == size;
}

void fq_utf8_replace_invalid(char *text, size_t size, char replacement)
{
    for (size_t at = 0; at < size;) {
        size_t length = fq_utf8_sequence(text + at, size - at);
        if (length)
            at += length;
        else
            text[at++] = replacement;
    }
}

size_t fq_utf8_prefix(const char *text, size_t size, size_t max)
{
    if (size <= max)
        return size;
    //  Back off the continuation bytes of a sequence the cut would split
    size_t length = max;
    while (length > 0 && s_continues((unsigned char)text[length]))
        length--;
    return length;
}
