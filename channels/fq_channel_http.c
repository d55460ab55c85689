/*  fq_channel_http.c — an http request's messages: its templates parsed
    once, each message rendered with its values encoded for where they
    go, and signed by Standard Webhooks (see fq_channel.h).

    The encoding is done before the template sees a value: the fields a
    template uses are copied into an object of encoded strings, which
    fq_template_render_json then inserts as they are. Numbers are printed
    by the template module itself (a one-tag template), so a number reads
    the same in a webhook as in a mail. */
#include "fq_buf.h"
#include "fq_channel.h"
#include "fq_channel_internal.h"
#include "fq_error.h"
#include "fq_template.h"
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

//  The header a body's format gives, unless the request gives its own.
#define S_CONTENT_TYPE "Content-Type"
#define S_TYPE_JSON    "application/json"
#define S_TYPE_FORM    "application/x-www-form-urlencoded"

//  webhook-id: the message's id after this prefix, as Standard Webhooks'
//  examples write ids ("msg_..."); the same on every attempt.
#define S_MESSAGE_ID_PREFIX "msg_"

//  Room for a message's id ("msg_" and 20 digits) or a timestamp's text.
#define S_ID_SIZE 32

//  Headers a render may add to the request's own: Content-Type and the
//  three of a signature.
#define S_ADDED_HEADERS 4

//  What the template that prints a number names its one field.
#define S_NUMBER_FIELD "v"

//  Room for a method's name ("DELETE").
#define S_METHOD_SIZE 8

//  Most of a header's name quoted in an error, bytes.
#define S_NAME_QUOTED 64

//  How a value is written where it goes.
typedef enum {
    S_AS_IS, //  A header value: as it is (the header template refuses CR, LF, NUL)
    S_URL,   //  Percent-encoded: all but A-Z a-z 0-9 - . _ ~
    S_FORM,  //  As S_URL, a space as '+' (application/x-www-form-urlencoded)
    S_JSON   //  A JSON string's content: quotes, backslashes, controls escaped
} s_encoding_t;

struct fq_http_templates {
    char method[S_METHOD_SIZE];
    fq_template_t *url;
    fq_template_t *body; //  NULL: no body
    fq_http_body_format_t body_format;
    char **names; //  The request's headers, nheaders of each
    fq_template_t **values;
    size_t nheaders;
    bool content_type_given;
    fq_template_t *number; //  "{{v}}": how every template prints a number
    unsigned char key[FQ_HTTP_SECRET_MAX];
    int key_size; //  0: messages are not signed
    unsigned char previous_key[FQ_HTTP_SECRET_MAX];
    int previous_key_size; //  0: no rotation under way
};

//  ---------------------------------------------------------------------
//  Parsing

void fq_http_templates_destroy(fq_http_templates_t **self_p)
{
    fq_http_templates_t *self = self_p ? *self_p : NULL;
    if (!self)
        return;
    fq_template_destroy(&self->url);
    fq_template_destroy(&self->body);
    fq_template_destroy(&self->number);
    for (size_t i = 0; i < self->nheaders; i++) {
        free(self->names ? self->names[i] : NULL);
        if (self->values)
            fq_template_destroy(&self->values[i]);
    }
    free(self->names);
    free(self->values);
    sodium_memzero(self->key, sizeof self->key);
    sodium_memzero(self->previous_key, sizeof self->previous_key);
    free(self);
    *self_p = NULL;
}

fq_http_templates_t *fq_http_templates_new(const fq_http_spec_t *spec, char *error,
                                           size_t error_size)
{
    char problem[FQ_HTTP_PROBLEM_SIZE];
    const char *found = fq_http_spec_problem(spec, problem, sizeof problem);
    if (found) {
        fq_error_format(error, error_size, "%s", found);
        return NULL;
    }
    fq_http_templates_t *self = calloc(1, sizeof *self);
    if (!self) {
        fq_error_format(error, error_size, "out of memory");
        return NULL;
    }
    //  The spec was checked: a template that does not parse now is out of
    //  memory
    snprintf(self->method, sizeof self->method, "%s", spec->method);
    self->url = fq_template_new_limited(spec->url, FQ_TEMPLATE_PLAIN, FQ_HTTP_URL_MAX, NULL, 0);
    self->body = spec->body ? fq_template_new_limited(spec->body, FQ_TEMPLATE_PLAIN,
                                                      FQ_HTTP_BODY_MAX, NULL, 0)
                            : NULL;
    self->body_format = spec->body_format;
    self->number = fq_template_new("{{" S_NUMBER_FIELD "}}", FQ_TEMPLATE_PLAIN, NULL, 0);
    size_t slots = spec->nheaders ? spec->nheaders : 1;
    self->names = calloc(slots, sizeof *self->names);
    self->values = calloc(slots, sizeof *self->values);
    bool built =
        self->url && (self->body || !spec->body) && self->number && self->names && self->values;
    for (size_t i = 0; built && i < spec->nheaders; i++) {
        self->nheaders++;
        self->names[i] = strdup(spec->header_names[i]);
        self->values[i] = fq_template_new_limited(spec->header_values[i], FQ_TEMPLATE_HEADER,
                                                  FQ_HTTP_HEADERS_BYTES_MAX, NULL, 0);
        built = self->names[i] && self->values[i];
        self->content_type_given =
            self->content_type_given || strcasecmp(spec->header_names[i], S_CONTENT_TYPE) == 0;
    }
    if (built && spec->secret)
        self->key_size = fq_http_secret_decode(spec->secret, self->key);
    //  A previous secret signs only beside a current one
    if (built && spec->secret && spec->previous_secret)
        self->previous_key_size = fq_http_secret_decode(spec->previous_secret, self->previous_key);
    if (!built || self->key_size < 0 || self->previous_key_size < 0) {
        fq_error_format(error, error_size, "out of memory");
        fq_http_templates_destroy(&self);
    }
    return self;
}

const char *fq_http_templates_method(const fq_http_templates_t *self)
{
    return self->method;
}

//  Appends template's fields to names at *count.
static void s_fields_of(const fq_template_t *template, const char **names, size_t *count)
{
    for (size_t i = 0; template && i < fq_template_field_count(template); i++)
        names[(*count)++] = fq_template_field(template, i);
}

const char **fq_http_templates_fields(const fq_http_templates_t *self, size_t *count,
                                      size_t *nheader)
{
    size_t total =
        fq_template_field_count(self->url) + (self->body ? fq_template_field_count(self->body) : 0);
    for (size_t i = 0; i < self->nheaders; i++)
        total += fq_template_field_count(self->values[i]);
    const char **names = calloc(total + 1, sizeof *names);
    *count = *nheader = 0;
    if (!names)
        return NULL;
    for (size_t i = 0; i < self->nheaders; i++)
        s_fields_of(self->values[i], names, count);
    *nheader = *count;
    s_fields_of(self->url, names, count);
    s_fields_of(self->body, names, count);
    return names;
}

//  ---------------------------------------------------------------------
//  Encoding

//  The size bytes at data percent-encoded (form: a space as '+'), as a
//  JSON string; NULL when memory runs out.
static json_t *s_percent_encoded(const char *data, size_t size, bool form)
{
    static const char hex[] = "0123456789ABCDEF";
    fq_buf_t buf = {0};
    int mem = fq_buf_reserve(&buf, size);
    for (size_t i = 0; i < size && mem == 0; i++) {
        unsigned char c = (unsigned char)data[i];
        bool unreserved = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                          (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' || c == '~';
        if (unreserved)
            mem = fq_buf_add_char(&buf, (char)c);
        else if (form && c == ' ')
            mem = fq_buf_add_char(&buf, '+');
        else {
            char escaped[3] = {'%', hex[c >> 4], hex[c & 0xf]};
            mem = fq_buf_add(&buf, escaped, sizeof escaped);
        }
    }
    json_t *encoded = mem ? NULL : json_stringn(buf.data ? buf.data : "", buf.size);
    fq_buf_free(&buf);
    return encoded;
}

//  The size bytes at data (UTF-8, as every JSON value is) as the content
//  of a JSON string, escaped by jansson itself, as a JSON string; NULL
//  when memory runs out.
static json_t *s_json_escaped(const char *data, size_t size)
{
    json_t *string = json_stringn(data, size);
    char *dumped = string ? json_dumps(string, JSON_ENCODE_ANY) : NULL;
    json_decref(string);
    //  Without its quotes
    size_t length = dumped ? strlen(dumped) : 0;
    json_t *escaped = length >= 2 ? json_stringn(dumped + 1, length - 2) : NULL;
    free(dumped);
    return escaped;
}

//  value as encoding writes it: a string's bytes or a real's text
//  encoded; integers and booleans (whose text needs no encoding) and
//  anything else (which the render refuses in its own words) as they are.
//  A new reference, or NULL when memory runs out.
static json_t *s_encode(const fq_http_templates_t *self, json_t *value, s_encoding_t encoding)
{
    bool encode = json_is_string(value) || (json_is_real(value) && encoding != S_JSON);
    if (encoding == S_AS_IS || !encode)
        return json_incref(value);
    char *text = NULL;
    size_t size = 0;
    const char *data = json_string_value(value);
    if (json_is_real(value)) {
        json_t *wrapped = json_pack("{s:O}", S_NUMBER_FIELD, value);
        char error[FQ_TEMPLATE_ERROR_SIZE];
        if (!wrapped ||
            fq_template_render_json(self->number, wrapped, &text, &size, error, sizeof error)) {
            json_decref(wrapped);
            return NULL;
        }
        json_decref(wrapped);
        data = text;
    } else
        size = json_string_length(value);
    json_t *encoded = encoding == S_JSON ? s_json_escaped(data, size)
                                         : s_percent_encoded(data, size, encoding == S_FORM);
    free(text);
    return encoded;
}

//  Renders template with fields encoded for where it goes; the error of a
//  render names place. Returns 0 or an fq code.
static int s_render(const fq_http_templates_t *self, const fq_template_t *template,
                    const json_t *fields, s_encoding_t encoding, const char *place, char **out,
                    size_t *size, char *error, size_t error_size)
{
    json_t *encoded = json_object();
    for (size_t i = 0; encoded && i < fq_template_field_count(template); i++) {
        const char *name = fq_template_field(template, i);
        json_t *value = fields ? json_object_get(fields, name) : NULL;
        if (!value)
            continue; //  The render says it is missing
        json_t *written = s_encode(self, value, encoding);
        if (!written || json_object_set_new(encoded, name, written) != 0) {
            json_decref(encoded);
            encoded = NULL;
        }
    }
    if (!encoded) {
        fq_error_format(error, error_size, "out of memory");
        return FQ_ENOMEM;
    }
    char why[FQ_TEMPLATE_ERROR_SIZE];
    int rc = fq_template_render_json(template, encoded, out, size, why, sizeof why);
    json_decref(encoded);
    if (rc)
        fq_error_format(error, error_size, "%s: %s", place, why);
    return rc;
}

//  ---------------------------------------------------------------------
//  Signing

int fq_http_sign(const unsigned char *key, size_t key_size, const char *id, int64_t timestamp_s,
                 const char *body, size_t body_size, char signature[FQ_HTTP_SIGNATURE_SIZE])
{
    char stamp[S_ID_SIZE];
    int stamp_size = snprintf(stamp, sizeof stamp, "%lld", (long long)timestamp_s);
    unsigned char mac[crypto_auth_hmacsha256_BYTES];
    crypto_auth_hmacsha256_state state;
    //  id "." timestamp "." body, in pieces: the body is not copied
    bool signed_ =
        crypto_auth_hmacsha256_init(&state, key, key_size) == 0 &&
        crypto_auth_hmacsha256_update(&state, (const unsigned char *)id, strlen(id)) == 0 &&
        crypto_auth_hmacsha256_update(&state, (const unsigned char *)".", 1) == 0 &&
        crypto_auth_hmacsha256_update(&state, (const unsigned char *)stamp, (size_t)stamp_size) ==
            0 &&
        crypto_auth_hmacsha256_update(&state, (const unsigned char *)".", 1) == 0 &&
        crypto_auth_hmacsha256_update(&state, (const unsigned char *)body, body_size) == 0 &&
        crypto_auth_hmacsha256_final(&state, mac) == 0;
    sodium_memzero(&state, sizeof state);
    if (!signed_)
        return FQ_EINVAL;
    memcpy(signature, "v1,", 3);
    sodium_bin2base64(signature + 3, FQ_HTTP_SIGNATURE_SIZE - 3, mac, sizeof mac,
                      sodium_base64_VARIANT_ORIGINAL);
    sodium_memzero(mac, sizeof mac);
    return 0;
}

//  ---------------------------------------------------------------------
//  Rendering

//  One header of a message being put together.
typedef struct {
    const char *name, *value;
    size_t name_size, value_size;
} s_header_t;

//  Lays url and the headers out in one block for out. Returns 0 or
//  FQ_ENOMEM.
static int s_assemble(const char *url, size_t url_size, const s_header_t *headers, size_t count,
                      fq_http_message_t *out)
{
    size_t bytes = 2 * count * sizeof(char *) + url_size + 1;
    for (size_t i = 0; i < count; i++)
        bytes += headers[i].name_size + headers[i].value_size + 2;
    void *block = malloc(bytes);
    if (!block)
        return FQ_ENOMEM;
    const char **names = block, **values = names + count;
    char *text = (char *)(values + count);
    out->block = block;
    out->url = text;
    memcpy(text, url, url_size + 1);
    text += url_size + 1;
    for (size_t i = 0; i < count; i++) {
        names[i] = memcpy(text, headers[i].name, headers[i].name_size + 1);
        text += headers[i].name_size + 1;
        values[i] = memcpy(text, headers[i].value, headers[i].value_size + 1);
        text += headers[i].value_size + 1;
    }
    out->header_names = count ? names : NULL;
    out->header_values = count ? values : NULL;
    out->nheaders = count;
    return 0;
}

//  Renders the request's headers into values (freed by the caller, each),
//  checking each rendered value. Returns 0 or an fq code.
static int s_render_headers(const fq_http_templates_t *self, const json_t *fields, char **values,
                            size_t *sizes, char *error, size_t error_size)
{
    for (size_t i = 0; i < self->nheaders; i++) {
        char place[S_NAME_QUOTED + 32];
        snprintf(place, sizeof place, "http.headers \"%.*s\"", S_NAME_QUOTED, self->names[i]);
        int rc = s_render(self, self->values[i], fields, S_AS_IS, place, &values[i], &sizes[i],
                          error, error_size);
        if (rc)
            return rc;
        if (fq_channel_value_has_control(values[i], sizes[i])) {
            fq_error_format(error, error_size, "%s: its value holds a control character", place);
            return FQ_EHEADER;
        }
    }
    return 0;
}

//  Renders the body (or "" without one) into *body. Returns 0 or an fq
//  code.
static int s_render_body(const fq_http_templates_t *self, const json_t *fields, char **body,
                         size_t *size, char *error, size_t error_size)
{
    if (!self->body) {
        *body = strdup("");
        *size = 0;
        if (!*body)
            fq_error_format(error, error_size, "out of memory");
        return *body ? 0 : FQ_ENOMEM;
    }
    bool json = self->body_format == FQ_HTTP_BODY_JSON;
    int rc = s_render(self, self->body, fields, json ? S_JSON : S_FORM, "http.body", body, size,
                      error, error_size);
    if (rc || !json)
        return rc;
    //  A field given unquoted where the template expects a number gives
    //  text no receiver can read: refused here rather than sent
    json_error_t parse_error;
    json_t *parsed = json_loadb(*body, *size, JSON_DECODE_ANY, &parse_error);
    if (parsed) {
        json_decref(parsed);
        return 0;
    }
    fq_error_format(error, error_size, "http.body: not JSON once rendered: %s, at byte %d",
                    parse_error.text, parse_error.position);
    free(*body);
    *body = NULL;
    return FQ_EINVAL;
}

int fq_http_render(const fq_http_templates_t *self, const json_t *fields, uint64_t message_id,
                   int64_t timestamp_s, fq_http_message_t *out, char *error, size_t error_size)
{
    *out = (fq_http_message_t){0};
    char *url = NULL, *body = NULL, *values[FQ_HTTP_HEADERS_MAX] = {0};
    size_t url_size = 0, body_size = 0, sizes[FQ_HTTP_HEADERS_MAX] = {0};
    int rc =
        s_render(self, self->url, fields, S_URL, "http.url", &url, &url_size, error, error_size);
    if (rc == 0 && url_size > FQ_HTTP_URL_RENDERED_MAX) {
        fq_error_format(error, error_size, "http.url: longer than %d bytes once rendered",
                        FQ_HTTP_URL_RENDERED_MAX);
        rc = FQ_ETOOBIG;
    }
    if (rc == 0)
        rc = s_render_headers(self, fields, values, sizes, error, error_size);
    if (rc == 0)
        rc = s_render_body(self, fields, &body, &body_size, error, error_size);
    s_header_t headers[FQ_HTTP_HEADERS_MAX + S_ADDED_HEADERS];
    size_t count = 0;
    for (size_t i = 0; rc == 0 && i < self->nheaders; i++)
        headers[count++] =
            (s_header_t){self->names[i], values[i], strlen(self->names[i]), sizes[i]};
    if (rc == 0 && self->body && !self->content_type_given) {
        const char *type = self->body_format == FQ_HTTP_BODY_JSON ? S_TYPE_JSON : S_TYPE_FORM;
        headers[count++] = (s_header_t){S_CONTENT_TYPE, type, strlen(S_CONTENT_TYPE), strlen(type)};
    }
    //  Room for two signatures and the space between them
    char id[S_ID_SIZE], stamp[S_ID_SIZE], signature[2 * FQ_HTTP_SIGNATURE_SIZE];
    if (rc == 0 && self->key_size > 0) {
        snprintf(id, sizeof id, S_MESSAGE_ID_PREFIX "%llu", (unsigned long long)message_id);
        snprintf(stamp, sizeof stamp, "%lld", (long long)timestamp_s);
        rc = fq_http_sign(self->key, (size_t)self->key_size, id, timestamp_s, body, body_size,
                          signature);
        if (rc == 0 && self->previous_key_size > 0) {
            size_t first = strlen(signature);
            signature[first] = ' ';
            rc = fq_http_sign(self->previous_key, (size_t)self->previous_key_size, id, timestamp_s,
                              body, body_size, signature + first + 1);
        }
        if (rc)
            fq_error_format(error, error_size, "could not sign: the HMAC failed");
        const char *names[] = {FQ_HTTP_HEADER_WEBHOOK_ID, FQ_HTTP_HEADER_WEBHOOK_TIMESTAMP,
                               FQ_HTTP_HEADER_WEBHOOK_SIGNATURE};
        const char *texts[] = {id, stamp, signature};
        for (size_t i = 0; rc == 0 && i < sizeof names / sizeof *names; i++)
            headers[count++] = (s_header_t){names[i], texts[i], strlen(names[i]), strlen(texts[i])};
    }
    if (rc == 0 && (rc = s_assemble(url, url_size, headers, count, out)) != 0)
        fq_error_format(error, error_size, "out of memory");
    free(url);
    for (size_t i = 0; i < self->nheaders; i++)
        free(values[i]);
    if (rc) {
        free(body);
        *out = (fq_http_message_t){0};
        return rc;
    }
    out->body = body;
    out->body_size = body_size;
    return 0;
}

void fq_http_message_free(fq_http_message_t *message)
{
    free(message->body);
    free(message->block);
    *message = (fq_http_message_t){0};
}
