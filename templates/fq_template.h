/*  fq_template.h — message templates: parse once, render per recipient.

    A request carries a subject and a body template; every recipient brings
    its own fields. The splitter parses and checks a template once, the
    dispatcher renders it for each message just before sending (the path
    of a message is in docs/architecture.md), so parsing does all the work
    that can be done once: rendering only walks the precompiled segments,
    in time linear in the output.

    Grammar
    -------
    Everything outside a tag is copied as is.

        {{ name }}      the recipient's field `name`; HTML-escaped in an HTML
                        template (& < > " ' become &amp; &lt; &gt; &quot; &#39;),
                        verbatim in plain text and header templates
        {{{ name }}}    the field verbatim in every mode (raw form), for
                        values that already are markup

    Whitespace (space, tab, CR, LF) may surround the name inside the braces.
    A name matches [A-Za-z_][A-Za-z0-9_.-]{0,63}. A dot is part of the name:
    "{{ user.first }}" looks up the field called "user.first", there is no
    nested lookup.

    There is no escape for a literal "{{": any "{{" starts a tag, and
    "{{{" starts a raw tag. A "}" or "}}" outside a tag is plain text, so
    "a{color:{{c}}}" is a tag followed by a literal "}".

    Values are inserted once and never parsed again: a value that reads
    "{{other}}" appears as exactly that text. Values are bytes: they are not
    checked for UTF-8 here (the template itself must be valid UTF-8).

    Modes
    -----
    FQ_TEMPLATE_PLAIN    text/plain bodies: every value verbatim.
    FQ_TEMPLATE_HTML     text/html bodies: {{ }} escapes, {{{ }}} does not.
    FQ_TEMPLATE_HEADER   a header line such as Subject: values verbatim, but
                         the template and every value substituted must be
                         free of CR, LF and NUL (header injection).

    Errors
    ------
    fq_template_new refuses, with a message naming the byte offset: an
    unclosed tag ("{{name", "{{name}", "{{{name}}"), an empty tag, an
    invalid field name, a template longer than its limit, invalid UTF-8,
    and (header mode) a line break. Rendering and checking fail with
    FQ_ENOFIELD (a field is missing), FQ_EFIELDTYPE (a field is an object,
    array or null), FQ_EHEADER (a header value holds CR, LF or NUL),
    FQ_ETOOBIG (the output would pass FQ_TEMPLATE_OUTPUT_MAX) or FQ_ENOMEM,
    with a message naming the field; they never return a partial result.
*/
#ifndef FQ_TEMPLATE_H
#define FQ_TEMPLATE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

//  Default limit on a template's size: far above any real subject or body
//  (mail providers cap a whole message at a few tens of MiB, attachments
//  included), low enough that a hostile request cannot make every render
//  walk megabytes of template.
#define FQ_TEMPLATE_MAX_SIZE (1024 * 1024)

//  Limit on one rendered output. A template of many tags and a large value
//  multiply each other (200,000 "{{a}}" and a 1 MiB value would be 200 GB),
//  so the product is capped before anything is allocated; real messages
//  stay well below the size mail servers accept.
#define FQ_TEMPLATE_OUTPUT_MAX (32 * 1024 * 1024)

//  Longest field name, bytes.
#define FQ_TEMPLATE_NAME_MAX 64

//  Room an error message needs; longer ones are truncated.
#define FQ_TEMPLATE_ERROR_SIZE 256

typedef enum {
    FQ_TEMPLATE_PLAIN,  //  text/plain body
    FQ_TEMPLATE_HTML,   //  text/html body: {{ }} HTML-escapes
    FQ_TEMPLATE_HEADER, //  one header line: no CR, LF or NUL anywhere
} fq_template_mode_t;

typedef struct _fq_template_t fq_template_t;

//  Looks up the field called name for one recipient: returns its value as
//  a NUL-terminated string, or NULL when the recipient has no such field.
//  The value must stay valid until fq_template_render returns; it is
//  called once per distinct field per render, never per occurrence.
typedef const char *(fq_template_lookup_fn)(void *arg, const char *name);

//  Parses text (NUL-terminated, at most FQ_TEMPLATE_MAX_SIZE bytes) as a
//  template of the given mode. Returns a new template, or NULL with a
//  message in error (if error_size > 0) such as "unclosed tag at byte 12:
//  expected \"}}\"". Does not keep text; the caller owns the result.
fq_template_t *fq_template_new(const char *text, fq_template_mode_t mode, char *error,
                               size_t error_size);

//  As fq_template_new, with a size limit of max_size bytes instead of
//  FQ_TEMPLATE_MAX_SIZE.
fq_template_t *fq_template_new_limited(const char *text, fq_template_mode_t mode, size_t max_size,
                                       char *error, size_t error_size);

//  Destroys the template and nulls *self_p; safe on NULL and twice.
void fq_template_destroy(fq_template_t **self_p);

//  The template's mode.
fq_template_mode_t fq_template_mode(const fq_template_t *self);

//  Number of distinct field names the template uses.
size_t fq_template_field_count(const fq_template_t *self);

//  The index-th distinct field name, in order of first use; NULL when
//  index >= fq_template_field_count. The template owns the string.
const char *fq_template_field(const fq_template_t *self, size_t index);

//  Renders the template with the fields lookup(arg, name) returns. On
//  success returns 0 and sets *out to a new NUL-terminated string the
//  caller frees with free(), and *out_len to its length without the NUL.
//  On failure returns a negative fq error code (see Errors above), sets
//  *out to NULL and *out_len to 0, and writes a message to error.
int fq_template_render(const fq_template_t *self, fq_template_lookup_fn *lookup, void *arg,
                       char **out, size_t *out_len, char *error, size_t error_size);

//  As fq_template_render, with the fields taken from a JSON object (NULL
//  is an empty object). Strings substitute their bytes, numbers and
//  booleans their JSON text (42, 19.99, true); objects, arrays and null
//  fail with FQ_EFIELDTYPE. Fields the template does not use are ignored.
int fq_template_render_json(const fq_template_t *self, const json_t *fields, char **out,
                            size_t *out_len, char *error, size_t error_size);

//  Checks, without rendering, that fq_template_render_json would succeed
//  with fields: returns 0, or the error code and message the render would
//  give (only FQ_ENOMEM cannot be foreseen). For the splitter, which
//  rejects a recipient before it is stored rather than at send time.
int fq_template_check_fields(const fq_template_t *self, const json_t *fields, char *error,
                             size_t error_size);

//  True when the len bytes at s may go into a header line: no CR or LF
//  (which would end the header and start another one) and no NUL (which
//  RFC 5322 forbids and C code would truncate at).
bool fq_template_is_header_safe(const char *s, size_t len);

#endif
