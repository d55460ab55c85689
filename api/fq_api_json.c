/*  fq_api_json.c — a request body checked as JSON whole, without being
    built whole.

    jansson builds a tree of the whole document, each value an object of
    its own: a submit of 26 MB made fairqd grow by 450 MB, most of it the
    recipients, which fairqd never reads (the splitter does, a chunk at a
    time, from the database). So a body is read in two passes over its
    text instead: the first checks it is JSON as jansson would take it,
    allocating nothing; the second walks the members of its top object,
    so that only the small values the handler reads are built, and a large
    one (the recipients) is handed on as the slice of the body it is.

    What jansson refuses is refused alike: invalid UTF-8 (overlong forms,
    surrogates, beyond U+10FFFF), "\u0000" and lone surrogate escapes,
    control characters in strings, integers beyond 64 bits, numbers no
    double holds, nesting deeper than jansson's 2048, anything after the
    document. A key repeated in the top object is refused by the caller.
*/
#include "fq_api_internal.h"
#include "fq_utf8.h"
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  jansson's limit on nesting (JSON_PARSER_MAX_DEPTH): a value inside this
//  many arrays and objects is refused, as jansson refuses it.
#define S_DEPTH_MAX 2048

//  The largest integer jansson holds (json_int_t is 64 bits), as digits,
//  and the most negative one's digits.
#define S_INT_MAX_DIGITS "9223372036854775807"
#define S_INT_MIN_DIGITS "9223372036854775808"

//  Hex digits of a \u escape.
#define S_ESCAPE_DIGITS 4

//  UTF-16 surrogates, which \u escapes must pair: high then low.
#define S_HIGH_SURROGATE_FIRST 0xd800
#define S_HIGH_SURROGATE_LAST  0xdbff
#define S_LOW_SURROGATE_FIRST  0xdc00
#define S_LOW_SURROGATE_LAST   0xdfff

typedef struct {
    const char *start; //  The text, NUL-terminated at end
    const char *at;
    const char *end;
    char *error;
    size_t error_size;
} s_scan_t;

static bool s_fail(s_scan_t *self, const char *what)
{
    snprintf(self->error, self->error_size, "malformed JSON at byte %zu: %s",
             (size_t)(self->at - self->start), what);
    return false;
}

static void s_skip_space(s_scan_t *self)
{
    while (self->at < self->end &&
           (*self->at == ' ' || *self->at == '\t' || *self->at == '\n' || *self->at == '\r'))
        self->at++;
}

//  The value of the four hex digits at text, or -1.
static long s_hex4(const char *text, const char *end)
{
    long value = 0;
    for (int i = 0; i < S_ESCAPE_DIGITS; i++) {
        if (text + i >= end)
            return -1;
        char c = text[i];
        int digit = c >= '0' && c <= '9'   ? c - '0'
                    : c >= 'a' && c <= 'f' ? c - 'a' + 10
                    : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                           : -1;
        if (digit < 0)
            return -1;
        value = value * 16 + digit;
    }
    return value;
}

//  A string, at its opening quote; leaves at past its closing one.
static bool s_string(s_scan_t *self)
{
    self->at++;
    while (self->at < self->end) {
        unsigned char c = (unsigned char)*self->at;
        if (c == '"') {
            self->at++;
            return true;
        }
        if (c < ' ')
            return s_fail(self, "a control character in a string");
        if (c == '\\') {
            char escape = self->at + 1 < self->end ? self->at[1] : '\0';
            if (escape != 'u') {
                if (!escape || !strchr("\"\\/bfnrt", escape))
                    return s_fail(self, "an invalid escape in a string");
                self->at += 2;
                continue;
            }
            long code = s_hex4(self->at + 2, self->end);
            if (code < 0)
                return s_fail(self, "an invalid \\u escape");
            if (code == 0)
                return s_fail(self, "\\u0000 in a string");
            if (code >= S_LOW_SURROGATE_FIRST && code <= S_LOW_SURROGATE_LAST)
                return s_fail(self, "a low surrogate escape without its high one");
            self->at += 2 + S_ESCAPE_DIGITS;
            if (code >= S_HIGH_SURROGATE_FIRST && code <= S_HIGH_SURROGATE_LAST) {
                long low = self->at + 1 < self->end && self->at[0] == '\\' && self->at[1] == 'u'
                               ? s_hex4(self->at + 2, self->end)
                               : -1;
                if (low < S_LOW_SURROGATE_FIRST || low > S_LOW_SURROGATE_LAST)
                    return s_fail(self, "a high surrogate escape without its low one");
                self->at += 2 + S_ESCAPE_DIGITS;
            }
            continue;
        }
        //  A character cut at end fails; a NUL was refused above as a
        //  control character
        size_t length = fq_utf8_sequence(self->at, (size_t)(self->end - self->at));
        if (!length)
            return s_fail(self, "invalid UTF-8");
        self->at += length;
    }
    return s_fail(self, "a string without its closing quote");
}

static bool s_is_digit(s_scan_t *self)
{
    return self->at < self->end && *self->at >= '0' && *self->at <= '9';
}

static void s_skip_digits(s_scan_t *self)
{
    while (s_is_digit(self))
        self->at++;
}

//  A number, by RFC 8259's grammar, that jansson can hold: an integer of
//  64 bits, or a real that is not infinite.
static bool s_number(s_scan_t *self)
{
    const char *first = self->at;
    bool negative = *self->at == '-';
    if (negative)
        self->at++;
    if (!s_is_digit(self))
        return s_fail(self, "a malformed number");
    if (*self->at == '0')
        self->at++;
    else
        s_skip_digits(self);
    bool integer = true;
    if (self->at < self->end && *self->at == '.') {
        integer = false;
        self->at++;
        if (!s_is_digit(self))
            return s_fail(self, "a malformed number");
        s_skip_digits(self);
    }
    if (self->at < self->end && (*self->at == 'e' || *self->at == 'E')) {
        integer = false;
        self->at++;
        if (self->at < self->end && (*self->at == '+' || *self->at == '-'))
            self->at++;
        if (!s_is_digit(self))
            return s_fail(self, "a malformed number");
        s_skip_digits(self);
    }
    if (integer) {
        const char *digits = first + negative;
        size_t count = (size_t)(self->at - digits);
        const char *limit = negative ? S_INT_MIN_DIGITS : S_INT_MAX_DIGITS;
        if (count > strlen(limit) || (count == strlen(limit) && strncmp(digits, limit, count) > 0))
            return s_fail(self, "an integer beyond 64 bits");
        return true;
    }
    //  strtod stops where the grammar did: what follows a JSON number
    //  cannot continue one (the text ends in a NUL at end)
    char *stop;
    errno = 0;
    double value = strtod(first, &stop);
    if (stop != self->at)
        return s_fail(self, "a malformed number");
    if (errno == ERANGE && isinf(value))
        return s_fail(self, "a number no double holds");
    return true;
}

static bool s_word(s_scan_t *self, const char *word)
{
    size_t length = strlen(word);
    if ((size_t)(self->end - self->at) < length || memcmp(self->at, word, length) != 0)
        return s_fail(self, "an invalid word");
    self->at += length;
    return true;
}

//  A key and its colon, in an object; leaves at the value.
static bool s_key(s_scan_t *self)
{
    s_skip_space(self);
    if (self->at >= self->end || *self->at != '"')
        return s_fail(self, "a key expected");
    if (!s_string(self))
        return false;
    s_skip_space(self);
    if (self->at >= self->end || *self->at != ':')
        return s_fail(self, "':' expected");
    self->at++;
    return true;
}

bool fq_api_json_valid(const char *text, size_t size, char *error, size_t error_size)
{
    s_scan_t scan = {text, text, text + size, error, error_size}, *self = &scan;
    //  Whether each open container is an object (else an array), one bit
    //  a level: no allocation, whatever the body holds
    unsigned char objects[S_DEPTH_MAX / 8] = {0};
    size_t depth = 0;
    for (;;) {
        //  A value
        s_skip_space(self);
        if (self->at >= self->end)
            return s_fail(self, "a value expected");
        char c = *self->at;
        //  jansson counts every value a level deeper than its container
        if (depth == S_DEPTH_MAX)
            return s_fail(self, "nesting deeper than 2048");
        if (c == '{' || c == '[') {
            bool object = c == '{';
            objects[depth / 8] = (unsigned char)((objects[depth / 8] & ~(1u << depth % 8)) |
                                                 (unsigned)object << depth % 8);
            depth++;
            self->at++;
            s_skip_space(self);
            if (self->at < self->end && *self->at == (object ? '}' : ']')) {
                self->at++; //  Empty: a whole value
                depth--;
            } else {
                if (object && !s_key(self))
                    return false;
                continue; //  Its first value
            }
        } else if (c == '"') {
            if (!s_string(self))
                return false;
        } else if (c == '-' || (c >= '0' && c <= '9')) {
            if (!s_number(self))
                return false;
        } else if (!s_word(self, c == 't' ? "true" : c == 'f' ? "false" : "null"))
            return false;
        //  After a value: the next of its container, or the container's end
        for (;;) {
            s_skip_space(self);
            if (depth == 0) {
                if (self->at != self->end)
                    return s_fail(self, "something after the document");
                return true;
            }
            bool object = objects[(depth - 1) / 8] >> (depth - 1) % 8 & 1;
            if (self->at < self->end && *self->at == ',') {
                self->at++;
                if (object && !s_key(self))
                    return false;
                break;
            }
            if (self->at < self->end && *self->at == (object ? '}' : ']')) {
                self->at++;
                depth--;
                continue;
            }
            return s_fail(self, object ? "',' or '}' expected" : "',' or ']' expected");
        }
    }
}

//  ---------------------------------------------------------------------
//  The top object's members, in a text fq_api_json_valid took

//  Past the string at at (its opening quote).
static const char *s_past_string(const char *at)
{
    for (at++; *at != '"'; at++)
        if (*at == '\\')
            at++;
    return at + 1;
}

//  Past the value at at.
static const char *s_past_value(const char *at, const char *end)
{
    if (*at == '"')
        return s_past_string(at);
    if (*at != '{' && *at != '[') {
        while (at < end && !strchr(",}] \t\r\n", *at))
            at++;
        return at;
    }
    size_t depth = 0;
    do {
        if (*at == '"')
            at = s_past_string(at);
        else {
            depth += *at == '{' || *at == '[';
            depth -= *at == '}' || *at == ']';
            at++;
        }
    } while (depth);
    return at;
}

static const char *s_past_space(const char *at, const char *end)
{
    while (at < end && (*at == ' ' || *at == '\t' || *at == '\n' || *at == '\r'))
        at++;
    return at;
}

int fq_api_json_members(const char *text, size_t size, fq_api_member_fn *member, void *arg)
{
    const char *end = text + size;
    const char *at = s_past_space(text, end);
    if (at >= end || *at != '{')
        return -1;
    at = s_past_space(at + 1, end);
    if (*at == '}')
        return 0;
    for (;;) {
        const char *key = at;
        at = s_past_string(at);
        size_t key_size = (size_t)(at - key);
        at = s_past_space(at, end);
        at = s_past_space(at + 1, end); //  Past the ':'
        const char *value = at;
        at = s_past_value(at, end);
        int rc = member(arg, key, key_size, value, (size_t)(at - value));
        if (rc)
            return rc;
        at = s_past_space(at, end);
        if (*at == '}')
            return 0;
        at = s_past_space(at + 1, end); //  Past the ','
    }
}

bool fq_api_json_array_empty(const char *value, size_t size)
{
    const char *end = value + size;
    return size && *value == '[' && *s_past_space(value + 1, end) == ']';
}
