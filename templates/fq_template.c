/*  fq_template.c — message templates (grammar and contract in fq_template.h).

    Parsing turns the text into a list of segments: literal byte ranges of
    a private copy of the text, and field references by index into the
    list of distinct names. Rendering resolves each distinct field once,
    adds up the output size, allocates once and copies: linear in the size
    of the output, however many tags the template holds.
*/
#include "fq_template.h"
#include "fq_error.h"
#include "fq_utf8.h"
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  Distinct names are interned through an open-addressing table whose
//  size is a power of two, at most half full so that probe runs stay short.
#define S_TABLE_MIN_SLOTS 16
#define S_TABLE_EMPTY     SIZE_MAX

//  Growable arrays start at this many entries and double.
#define S_ARRAY_MIN 8

//  FNV-1a, 64 bits: short names, no adversary able to pick the table size
//  from outside (it depends only on how many distinct names there are).
#define S_FNV_OFFSET 14695981039346656037ULL
#define S_FNV_PRIME  1099511628211ULL

//  Room for a number's JSON text: an int64 takes 20 characters with its
//  sign, a double printed with 17 significant digits at most 24
//  ("-1.2345678901234567e-308"); with the NUL and a margin.
#define S_NUMBER_SIZE 32

//  Jansson prints reals with this many significant digits at most; fewer
//  are tried first so that 19.99 renders as "19.99", not as the 17-digit
//  "19.989999999999998" that denotes the same double.
#define S_REAL_DIGITS_MIN 15
#define S_REAL_DIGITS_MAX 17

typedef enum {
    S_LITERAL,       //  bytes of the template text
    S_FIELD,         //  a field, verbatim
    S_FIELD_ESCAPED, //  a field, HTML-escaped
} s_kind_t;

typedef struct {
    s_kind_t kind;
    size_t offset; //  S_LITERAL: where the bytes start in self->text
    size_t len;    //  S_LITERAL: how many
    size_t field;  //  S_FIELD*: index into self->fields
} s_segment_t;

struct _fq_template_t {
    fq_template_mode_t mode;
    char *text; //  Private copy of the template; literals point into it
    s_segment_t *segments;
    size_t segment_count;
    size_t segment_cap;
    char **fields; //  Distinct names in order of first use
    size_t field_count;
    size_t field_cap;
};

//  One field's value during one render.
typedef struct {
    const char *data;
    size_t len;
    size_t escaped_len; //  HTML templates only: len once escaped
    char number[S_NUMBER_SIZE];
} s_value_t;

//  State that only parsing needs.
typedef struct {
    fq_template_t *self;
    const char *text;
    size_t len;
    size_t *slots; //  Interning table: field indices, or S_TABLE_EMPTY
    size_t slot_count;
    char *error;
    size_t error_size;
} s_parser_t;

//  Grows *array of *cap entries of size bytes so that it holds at least
//  one more than count. Returns 0 or FQ_ENOMEM (the array is then intact).
static int s_reserve(void **array, size_t *cap, size_t count, size_t size)
{
    if (count < *cap)
        return 0;
    size_t new_cap = *cap ? *cap * 2 : S_ARRAY_MIN;
    if (new_cap < *cap || new_cap > SIZE_MAX / size)
        return FQ_ENOMEM;
    void *grown = realloc(*array, new_cap * size);
    if (!grown)
        return FQ_ENOMEM;
    *array = grown;
    *cap = new_cap;
    return 0;
}

// --------------------------------------------------------------------------
//  Scanning the text

static bool s_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static bool s_name_first(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool s_name_char(char c)
{
    return s_name_first(c) || (c >= '0' && c <= '9') || c == '.' || c == '-';
}

//  Writes a readable form of byte c into buf: 'x' when printable, else
//  its hex value. Returns buf.
static const char *s_describe(char c, char *buf, size_t size)
{
    unsigned char byte = (unsigned char)c;
    if (byte > ' ' && byte < 0x7F)
        snprintf(buf, size, "'%c'", c);
    else
        snprintf(buf, size, "byte 0x%02X", byte);
    return buf;
}

// --------------------------------------------------------------------------
//  Parsing

static uint64_t s_hash(const char *name, size_t len)
{
    uint64_t hash = S_FNV_OFFSET;
    for (size_t i = 0; i < len; i++) {
        hash ^= (unsigned char)name[i];
        hash *= S_FNV_PRIME;
    }
    return hash;
}

//  Slot where name is, or the empty slot where it would go.
static size_t s_slot_of(const s_parser_t *parser, const char *name, size_t len)
{
    size_t mask = parser->slot_count - 1;
    size_t slot = (size_t)s_hash(name, len) & mask;
    while (parser->slots[slot] != S_TABLE_EMPTY) {
        const char *known = parser->self->fields[parser->slots[slot]];
        if (strncmp(known, name, len) == 0 && known[len] == 0)
            return slot;
        slot = (slot + 1) & mask;
    }
    return slot;
}

//  Doubles the interning table (or creates it) and rehashes the names.
static int s_table_grow(s_parser_t *parser)
{
    size_t count = parser->slot_count ? parser->slot_count * 2 : S_TABLE_MIN_SLOTS;
    size_t *slots = malloc(count * sizeof *slots);
    if (!slots)
        return FQ_ENOMEM;
    for (size_t i = 0; i < count; i++)
        slots[i] = S_TABLE_EMPTY;
    free(parser->slots);
    parser->slots = slots;
    parser->slot_count = count;
    for (size_t index = 0; index < parser->self->field_count; index++) {
        const char *name = parser->self->fields[index];
        parser->slots[s_slot_of(parser, name, strlen(name))] = index;
    }
    return 0;
}

//  Index of the field called name (len bytes), added if new; or FQ_ENOMEM.
static int s_intern(s_parser_t *parser, const char *name, size_t len, size_t *index)
{
    fq_template_t *self = parser->self;
    //  Keep the table at most half full
    if (self->field_count + 1 > parser->slot_count / 2 && s_table_grow(parser))
        return FQ_ENOMEM;
    size_t slot = s_slot_of(parser, name, len);
    if (parser->slots[slot] != S_TABLE_EMPTY) {
        *index = parser->slots[slot];
        return 0;
    }
    if (s_reserve((void **)&self->fields, &self->field_cap, self->field_count,
                  sizeof *self->fields))
        return FQ_ENOMEM;
    char *copy = strndup(name, len);
    if (!copy)
        return FQ_ENOMEM;
    *index = self->field_count;
    self->fields[self->field_count++] = copy;
    parser->slots[slot] = *index;
    return 0;
}

static int s_add_segment(fq_template_t *self, s_segment_t segment)
{
    if (s_reserve((void **)&self->segments, &self->segment_cap, self->segment_count,
                  sizeof *self->segments))
        return FQ_ENOMEM;
    self->segments[self->segment_count++] = segment;
    return 0;
}

static int s_add_literal(s_parser_t *parser, size_t from, size_t to)
{
    if (from == to)
        return 0;
    s_segment_t segment = {.kind = S_LITERAL, .offset = from, .len = to - from};
    int rc = s_add_segment(parser->self, segment);
    if (rc)
        fq_error_format(parser->error, parser->error_size, "out of memory");
    return rc;
}

//  Parses the tag that starts at byte start ("{{" or "{{{") and adds its
//  segment. Returns the offset just past the tag, or 0 with the error
//  written (no tag ends at byte 0).
static size_t s_parse_tag(s_parser_t *parser, size_t start)
{
    const char *text = parser->text;
    size_t len = parser->len;
    bool raw = start + 2 < len && text[start + 2] == '{';
    size_t braces = raw ? 3 : 2;
    const char *close = raw ? "}}}" : "}}";
    char what[sizeof "byte 0xFF"];

    size_t at = start + braces;
    while (at < len && s_space(text[at]))
        at++;
    size_t name_at = at;
    while (at < len && s_name_char(text[at]))
        at++;
    size_t name_len = at - name_at;
    if (name_len > 0 && !s_name_first(text[name_at])) {
        fq_error_format(parser->error, parser->error_size,
                        "invalid field name at byte %zu: it must start with a letter or '_'",
                        name_at);
        return 0;
    }
    if (name_len > FQ_TEMPLATE_NAME_MAX) {
        fq_error_format(parser->error, parser->error_size,
                        "invalid field name at byte %zu: longer than %d bytes", name_at,
                        FQ_TEMPLATE_NAME_MAX);
        return 0;
    }
    size_t name_end = at;
    while (at < len && s_space(text[at]))
        at++;

    if (len - at >= braces && memcmp(text + at, close, braces) == 0) {
        if (name_len == 0) {
            fq_error_format(parser->error, parser->error_size, "empty tag at byte %zu", start);
            return 0;
        }
        //  Only the double-brace form escapes, and only in HTML
        bool escape = !raw && parser->self->mode == FQ_TEMPLATE_HTML;
        s_segment_t segment = {.kind = escape ? S_FIELD_ESCAPED : S_FIELD};
        if (s_intern(parser, text + name_at, name_len, &segment.field) ||
            s_add_segment(parser->self, segment)) {
            fq_error_format(parser->error, parser->error_size, "out of memory");
            return 0;
        }
        return at + braces;
    }
    //  Not closed where it should be: say what is wrong with the most
    //  specific message. A byte that cannot be in a name, met where a name
    //  is being read, is a bad name ("{{ a$b }}", "{{ $ }}"); anything else
    //  ("{{name", "{{name}", "{{name x}}", "{{a{{b}}") leaves the tag open.
    bool in_name = at == name_end;
    if (at < len && in_name && text[at] != '}' && text[at] != '{') {
        fq_error_format(parser->error, parser->error_size,
                        "invalid field name at byte %zu: %s at byte %zu is not allowed in a name",
                        name_at, s_describe(text[at], what, sizeof what), at);
        return 0;
    }
    fq_error_format(parser->error, parser->error_size,
                    "unclosed tag at byte %zu: expected \"%s\" at byte %zu", start, close, at);
    return 0;
}

static int s_parse(s_parser_t *parser)
{
    const char *text = parser->text;
    size_t len = parser->len;
    size_t literal_from = 0;
    size_t at = 0;
    while (at + 1 < len) {
        const char *brace = memchr(text + at, '{', len - at - 1);
        if (!brace)
            break;
        at = (size_t)(brace - text);
        if (text[at + 1] != '{') {
            at++;
            continue;
        }
        if (s_add_literal(parser, literal_from, at))
            return FQ_ENOMEM;
        at = s_parse_tag(parser, at);
        if (at == 0)
            return FQ_EINVAL;
        literal_from = at;
    }
    return s_add_literal(parser, literal_from, len);
}

fq_template_t *fq_template_new_limited(const char *text, fq_template_mode_t mode, size_t max_size,
                                       char *error, size_t error_size)
{
    if (!text ||
        (mode != FQ_TEMPLATE_PLAIN && mode != FQ_TEMPLATE_HTML && mode != FQ_TEMPLATE_HEADER)) {
        fq_error_format(error, error_size, "invalid argument");
        return NULL;
    }
    //  Never read further than one byte past the limit: a hostile template
    //  of gigabytes costs no more to refuse than one just too large.
    size_t len = max_size == SIZE_MAX ? strlen(text) : strnlen(text, max_size + 1);
    if (len > max_size) {
        fq_error_format(error, error_size, "template too large at byte %zu: the limit is %zu bytes",
                        max_size, max_size);
        return NULL;
    }
    size_t bad = fq_utf8_invalid_at(text, len);
    if (bad < len) {
        fq_error_format(error, error_size, "invalid UTF-8 at byte %zu", bad);
        return NULL;
    }
    if (mode == FQ_TEMPLATE_HEADER && !fq_template_is_header_safe(text, len)) {
        size_t at = strcspn(text, "\r\n");
        fq_error_format(error, error_size, "line break in header template at byte %zu", at);
        return NULL;
    }

    fq_template_t *self = calloc(1, sizeof *self);
    if (!self || !(self->text = strndup(text, len))) {
        free(self);
        fq_error_format(error, error_size, "out of memory");
        return NULL;
    }
    self->mode = mode;
    s_parser_t parser = {
        .self = self, .text = self->text, .len = len, .error = error, .error_size = error_size};
    int rc = s_parse(&parser);
    free(parser.slots);
    if (rc)
        fq_template_destroy(&self);
    return self;
}

fq_template_t *fq_template_new(const char *text, fq_template_mode_t mode, char *error,
                               size_t error_size)
{
    return fq_template_new_limited(text, mode, FQ_TEMPLATE_MAX_SIZE, error, error_size);
}

void fq_template_destroy(fq_template_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    fq_template_t *self = *self_p;
    for (size_t index = 0; index < self->field_count; index++)
        free(self->fields[index]);
    free(self->fields);
    free(self->segments);
    free(self->text);
    free(self);
    *self_p = NULL;
}

fq_template_mode_t fq_template_mode(const fq_template_t *self)
{
    return self ? self->mode : FQ_TEMPLATE_PLAIN;
}

size_t fq_template_field_count(const fq_template_t *self)
{
    return self ? self->field_count : 0;
}

const char *fq_template_field(const fq_template_t *self, size_t index)
{
    return self && index < self->field_count ? self->fields[index] : NULL;
}

bool fq_template_is_header_safe(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (s[i] == '\r' || s[i] == '\n' || s[i] == 0)
            return false;
    return true;
}

// --------------------------------------------------------------------------
//  Rendering

//  The entity for an HTML-special byte, or NULL for any other byte.
static const char *s_entity(char c)
{
    switch (c) {
    case '&':
        return "&amp;";
    case '<':
        return "&lt;";
    case '>':
        return "&gt;";
    case '"':
        return "&quot;";
    case '\'':
        return "&#39;";
    default:
        return NULL;
    }
}

//  Checks one resolved value against the mode, and measures its escaped
//  form for HTML templates.
static int s_value_check(const fq_template_t *self, size_t index, s_value_t *value, char *error,
                         size_t error_size)
{
    if (self->mode == FQ_TEMPLATE_HEADER && !fq_template_is_header_safe(value->data, value->len)) {
        fq_error_format(error, error_size,
                        "field \"%s\" holds CR, LF or NUL, which a header line cannot carry",
                        self->fields[index]);
        return FQ_EHEADER;
    }
    if (self->mode == FQ_TEMPLATE_HTML) {
        //  Stops counting once past the output limit, so that the sum
        //  cannot overflow whatever the value's size
        value->escaped_len = 0;
        for (size_t i = 0; i < value->len && value->escaped_len <= FQ_TEMPLATE_OUTPUT_MAX; i++) {
            const char *entity = s_entity(value->data[i]);
            value->escaped_len += entity ? strlen(entity) : 1;
        }
    }
    return 0;
}

//  Adds up the output size; FQ_ETOOBIG past FQ_TEMPLATE_OUTPUT_MAX.
static int s_measure(const fq_template_t *self, const s_value_t *values, size_t *total, char *error,
                     size_t error_size)
{
    size_t sum = 0;
    for (size_t k = 0; k < self->segment_count; k++) {
        const s_segment_t *segment = &self->segments[k];
        size_t piece = segment->kind == S_LITERAL         ? segment->len
                       : segment->kind == S_FIELD_ESCAPED ? values[segment->field].escaped_len
                                                          : values[segment->field].len;
        if (piece > FQ_TEMPLATE_OUTPUT_MAX - sum) {
            fq_error_format(error, error_size, "rendered template would be larger than %d bytes",
                            FQ_TEMPLATE_OUTPUT_MAX);
            return FQ_ETOOBIG;
        }
        sum += piece;
    }
    *total = sum;
    return 0;
}

static char *s_write_escaped(char *to, const char *from, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        const char *entity = s_entity(from[i]);
        if (entity) {
            size_t entity_len = strlen(entity);
            memcpy(to, entity, entity_len);
            to += entity_len;
        } else
            *to++ = from[i];
    }
    return to;
}

//  Measures, allocates and writes the output for resolved values.
static int s_render_values(const fq_template_t *self, const s_value_t *values, char **out,
                           size_t *out_len, char *error, size_t error_size)
{
    size_t total;
    int rc = s_measure(self, values, &total, error, error_size);
    if (rc)
        return rc;
    char *buffer = malloc(total + 1);
    if (!buffer) {
        fq_error_format(error, error_size, "out of memory");
        return FQ_ENOMEM;
    }
    char *to = buffer;
    for (size_t k = 0; k < self->segment_count; k++) {
        const s_segment_t *segment = &self->segments[k];
        const s_value_t *value = segment->kind == S_LITERAL ? NULL : &values[segment->field];
        if (segment->kind == S_LITERAL) {
            memcpy(to, self->text + segment->offset, segment->len);
            to += segment->len;
        } else if (segment->kind == S_FIELD_ESCAPED)
            to = s_write_escaped(to, value->data, value->len);
        else {
            memcpy(to, value->data, value->len);
            to += value->len;
        }
    }
    *to = 0;
    *out = buffer;
    *out_len = total;
    return 0;
}

//  One slot per distinct field for a render; NULL only when out of memory.
static s_value_t *s_values_new(const fq_template_t *self, char *error, size_t error_size)
{
    //  calloc(0) may return NULL: ask for one slot at least
    s_value_t *values = calloc(self->field_count ? self->field_count : 1, sizeof *values);
    if (!values)
        fq_error_format(error, error_size, "out of memory");
    return values;
}

static int s_begin(const fq_template_t *self, char **out, size_t *out_len, char *error,
                   size_t error_size)
{
    if (out)
        *out = NULL;
    if (out_len)
        *out_len = 0;
    if (error && error_size)
        error[0] = 0;
    if (!self || !out || !out_len) {
        fq_error_format(error, error_size, "invalid argument");
        return FQ_EINVAL;
    }
    return 0;
}

int fq_template_render(const fq_template_t *self, fq_template_lookup_fn *lookup, void *arg,
                       char **out, size_t *out_len, char *error, size_t error_size)
{
    int rc = s_begin(self, out, out_len, error, error_size);
    if (rc)
        return rc;
    if (!lookup && self->field_count > 0) {
        fq_error_format(error, error_size, "invalid argument");
        return FQ_EINVAL;
    }
    s_value_t *values = s_values_new(self, error, error_size);
    if (!values)
        return FQ_ENOMEM;
    for (size_t index = 0; index < self->field_count && rc == 0; index++) {
        const char *data = lookup(arg, self->fields[index]);
        if (!data) {
            fq_error_format(error, error_size, "missing field \"%s\"", self->fields[index]);
            rc = FQ_ENOFIELD;
            break;
        }
        values[index].data = data;
        values[index].len = strlen(data);
        rc = s_value_check(self, index, &values[index], error, error_size);
    }
    if (rc == 0)
        rc = s_render_values(self, values, out, out_len, error, error_size);
    free(values);
    return rc;
}

//  The JSON text of a real: the fewest digits that read back as the same
//  double, as jansson prints it (always with a '.' or an exponent).
static int s_real_text(const json_t *real, char *buffer, size_t size)
{
    int rc = FQ_EFIELDTYPE;
    for (int digits = S_REAL_DIGITS_MIN; digits <= S_REAL_DIGITS_MAX && rc; digits++) {
        char *text = json_dumps(real, JSON_ENCODE_ANY | JSON_REAL_PRECISION(digits));
        if (!text)
            return FQ_ENOMEM;
        json_t *back = json_loads(text, JSON_DECODE_ANY, NULL);
        bool same = back && json_is_real(back) && json_real_value(back) == json_real_value(real);
        //  The longest form is exact by construction: take it regardless
        if ((same || digits == S_REAL_DIGITS_MAX) && strlen(text) < size) {
            strcpy(buffer, text);
            rc = 0;
        }
        json_decref(back);
        free(text);
    }
    return rc;
}

static const char *s_json_type_name(const json_t *value)
{
    return json_is_object(value) ? "an object" : json_is_array(value) ? "an array" : "null";
}

//  Resolves field index from the JSON object fields into value.
static int s_resolve_json(const fq_template_t *self, const json_t *fields, size_t index,
                          s_value_t *value, char *error, size_t error_size)
{
    const char *name = self->fields[index];
    json_t *field = fields ? json_object_get(fields, name) : NULL;
    if (!field) {
        fq_error_format(error, error_size, "missing field \"%s\"", name);
        return FQ_ENOFIELD;
    }
    if (json_is_string(field)) {
        value->data = json_string_value(field);
        value->len = json_string_length(field);
    } else if (json_is_integer(field)) {
        snprintf(value->number, sizeof value->number, "%" JSON_INTEGER_FORMAT,
                 json_integer_value(field));
        value->data = value->number;
        value->len = strlen(value->number);
    } else if (json_is_real(field)) {
        int rc = s_real_text(field, value->number, sizeof value->number);
        if (rc == FQ_ENOMEM)
            fq_error_format(error, error_size, "out of memory");
        else if (rc)
            fq_error_format(error, error_size, "field \"%s\": number could not be printed", name);
        if (rc)
            return rc;
        value->data = value->number;
        value->len = strlen(value->number);
    } else if (json_is_boolean(field)) {
        value->data = json_is_true(field) ? "true" : "false";
        value->len = strlen(value->data);
    } else {
        fq_error_format(error, error_size,
                        "field \"%s\" is %s: only strings, numbers and booleans can be substituted",
                        name, s_json_type_name(field));
        return FQ_EFIELDTYPE;
    }
    return s_value_check(self, index, value, error, error_size);
}

//  Resolves every field from fields into values (self->field_count slots).
static int s_resolve_all_json(const fq_template_t *self, const json_t *fields, s_value_t *values,
                              char *error, size_t error_size)
{
    if (fields && !json_is_object(fields)) {
        fq_error_format(error, error_size, "fields must be a JSON object");
        return FQ_EINVAL;
    }
    for (size_t index = 0; index < self->field_count; index++) {
        int rc = s_resolve_json(self, fields, index, &values[index], error, error_size);
        if (rc)
            return rc;
    }
    return 0;
}

int fq_template_render_json(const fq_template_t *self, const json_t *fields, char **out,
                            size_t *out_len, char *error, size_t error_size)
{
    int rc = s_begin(self, out, out_len, error, error_size);
    if (rc)
        return rc;
    s_value_t *values = s_values_new(self, error, error_size);
    if (!values)
        return FQ_ENOMEM;
    rc = s_resolve_all_json(self, fields, values, error, error_size);
    if (rc == 0)
        rc = s_render_values(self, values, out, out_len, error, error_size);
    free(values);
    return rc;
}

int fq_template_check_fields(const fq_template_t *self, const json_t *fields, char *error,
                             size_t error_size)
{
    char *unused_out;
    size_t total;
    int rc = s_begin(self, &unused_out, &total, error, error_size);
    if (rc)
        return rc;
    s_value_t *values = s_values_new(self, error, error_size);
    if (!values)
        return FQ_ENOMEM;
    rc = s_resolve_all_json(self, fields, values, error, error_size);
    if (rc == 0)
        rc = s_measure(self, values, &total, error, error_size);
    free(values);
    return rc;
}
