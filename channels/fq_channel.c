/*  fq_channel.c — channel names and the rule of an http request (see
    fq_channel.h). */
#include "fq_channel.h"
#include "fq_channel_internal.h"
#include "fq_error.h"
#include "fq_template.h"
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

//  The bytes a channel's name is made of.
#define S_NAME_CHARS "abcdefghijklmnopqrstuvwxyz0123456789_-"

//  The bytes of base64's alphabet (RFC 4648, section 4), without '='.
#define S_BASE64_CHARS "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

//  Base64 writes 3 bytes as 4 characters, and pads with at most two '='.
#define S_BASE64_GROUP_BYTES 3
#define S_BASE64_GROUP_CHARS 4
#define S_BASE64_PAD_MAX     2

//  The bytes of an HTTP token besides letters and digits (RFC 9110, 5.6.2).
#define S_TOKEN_CHARS "!#$%&'*+-.^_`|~"

//  Printable ASCII other than the space: what a URL is written in.
#define S_URL_FIRST 0x21
#define S_URL_LAST  0x7e

//  The control characters of a header value: below the space (a tab is
//  allowed) and DEL.
#define S_DEL 0x7f

//  The largest TCP port, and the most digits one is written with.
#define S_PORT_MAX    65535
#define S_PORT_DIGITS 5

//  Most of a header's name quoted in a problem, bytes.
#define S_NAME_QUOTED 64

//  What stands for every field of a template whose result is checked
//  (fq_http_spec_problem): a number, so a json body with {{n}} unquoted is
//  JSON as much as one with "{{s}}" quoted.
#define S_PLACEHOLDER "0"

static const char *const s_methods[] = {"POST", "PUT", "PATCH", "DELETE", "GET"};

//  Headers the connection owns (RFC 9110, 7.6.1 and 6.4; the client
//  writes Host and Content-Length from the URL and the body), and those
//  fairq writes when it signs. In lower case.
static const char *const s_refused_headers[] = {"host",
                                                "content-length",
                                                "transfer-encoding",
                                                "connection",
                                                "keep-alive",
                                                "proxy-connection",
                                                "te",
                                                "trailer",
                                                "upgrade",
                                                FQ_HTTP_HEADER_WEBHOOK_ID,
                                                FQ_HTTP_HEADER_WEBHOOK_TIMESTAMP,
                                                FQ_HTTP_HEADER_WEBHOOK_SIGNATURE};

//  ---------------------------------------------------------------------
//  Names

const char *fq_channel_name_problem(const char *name)
{
    size_t size = name ? strlen(name) : 0;
    if (size == 0)
        return "a channel's name is empty";
    if (size > FQ_CHANNEL_NAME_MAX)
        return "a channel's name is longer than 32 bytes";
    if (strspn(name, S_NAME_CHARS) != size)
        return "a channel's name is made of a-z 0-9 _ - only";
    return NULL;
}

bool fq_channel_is_email(const char *name)
{
    return !name || !*name || strcmp(name, FQ_CHANNEL_EMAIL) == 0;
}

int fq_http_body_format_parse(const char *name, fq_http_body_format_t *format)
{
    if (name && strcmp(name, "json") == 0)
        *format = FQ_HTTP_BODY_JSON;
    else if (name && strcmp(name, "form") == 0)
        *format = FQ_HTTP_BODY_FORM;
    else
        return -1;
    return 0;
}

const char *fq_http_body_format_name(fq_http_body_format_t format)
{
    return format == FQ_HTTP_BODY_FORM ? "form" : "json";
}

//  ---------------------------------------------------------------------
//  Secrets

int fq_http_secret_decode(const char *secret, unsigned char key[FQ_HTTP_SECRET_MAX])
{
    size_t prefix = strlen(FQ_HTTP_SECRET_PREFIX);
    if (!secret || strncmp(secret, FQ_HTTP_SECRET_PREFIX, prefix) != 0)
        return -1;
    const char *text = secret + prefix;
    size_t size = strlen(text), chars = strspn(text, S_BASE64_CHARS);
    size_t pad = strspn(text + chars, "=");
    if (size == 0 || chars + pad != size || pad > S_BASE64_PAD_MAX ||
        size % S_BASE64_GROUP_CHARS != 0)
        return -1;
    //  Known before anything is decoded, so a long text is never decoded
    size_t bytes = size / S_BASE64_GROUP_CHARS * S_BASE64_GROUP_BYTES - pad;
    if (bytes < FQ_HTTP_SECRET_MIN || bytes > FQ_HTTP_SECRET_MAX)
        return -1;
    unsigned char decoded[FQ_HTTP_SECRET_MAX];
    size_t got = 0;
    bool good = sodium_base642bin(decoded, sizeof decoded, text, size, NULL, &got, NULL,
                                  sodium_base64_VARIANT_ORIGINAL) == 0 &&
                got == bytes;
    if (good)
        memcpy(key, decoded, bytes);
    sodium_memzero(decoded, sizeof decoded);
    return good ? (int)bytes : -1;
}

const char *fq_http_secret_problem(const char *secret)
{
    unsigned char key[FQ_HTTP_SECRET_MAX];
    int size = fq_http_secret_decode(secret, key);
    sodium_memzero(key, sizeof key);
    return size < 0 ? "a signing secret is \"whsec_\" and the base64 (with its padding) of 24 to "
                      "64 bytes"
                    : NULL;
}

//  ---------------------------------------------------------------------
//  The rule of an http request

//  Writes a problem (printf-style) into problem and returns it.
static const char *s_problem(char *problem, size_t size, const char *format, ...)
    __attribute__((format(printf, 3, 4)));

static const char *s_problem(char *problem, size_t size, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    vsnprintf(problem, size, format, args);
    va_end(args);
    return problem;
}

//  Renders template with S_PLACEHOLDER for each of its fields: what is
//  left once they are filled in, for checking what no field can change.
//  Returns the text (free() it), or NULL when memory runs out.
static char *s_filled(const fq_template_t *template, size_t *size)
{
    json_t *fields = json_object();
    for (size_t i = 0; fields && i < fq_template_field_count(template); i++)
        if (json_object_set_new(fields, fq_template_field(template, i),
                                json_string(S_PLACEHOLDER)) != 0) {
            json_decref(fields);
            fields = NULL;
        }
    char *text = NULL, error[FQ_TEMPLATE_ERROR_SIZE];
    if (fields)
        fq_template_render_json(template, fields, &text, size, error, sizeof error);
    json_decref(fields);
    return text;
}

//  A template of the request, parsed to be checked: NULL with the
//  template's own error after what (its place).
static fq_template_t *s_parse(const char *text, fq_template_mode_t mode, size_t max,
                              const char *what, char *problem, size_t size)
{
    char error[FQ_TEMPLATE_ERROR_SIZE];
    fq_template_t *template = fq_template_new_limited(text, mode, max, error, sizeof error);
    if (!template)
        s_problem(problem, size, "%s: %s", what, error);
    return template;
}

//  The authority of the URL (after "scheme://"), a literal one: a host
//  of letters, digits, dots and hyphens or an IPv6 address in brackets,
//  and a port. NULL when it is good.
static const char *s_authority_problem(const char *authority, size_t size)
{
    if (size == 0)
        return "http.url: has no host";
    if (memchr(authority, '@', size))
        return "http.url: holds credentials (user@host): give them in a header "
               "(Authorization), not in the URL";
    size_t host = 0;
    if (authority[0] == '[') {
        const char *close = memchr(authority, ']', size);
        if (!close || close == authority + 1)
            return "http.url: has an IPv6 host without its closing bracket";
        host = (size_t)(close - authority) + 1;
        for (size_t i = 1; i + 1 < host; i++)
            if (!strchr("0123456789abcdefABCDEF:.", authority[i]))
                return "http.url: has an invalid IPv6 host";
    } else {
        while (host < size && authority[host] != ':') {
            char c = authority[host];
            if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '.' || c == '-'))
                return "http.url: its host holds a character other than letters, digits, . and -";
            host++;
        }
        if (host == 0)
            return "http.url: has no host";
    }
    if (host == size)
        return NULL;
    if (authority[host] != ':')
        return "http.url: has something after its host other than a port";
    size_t digits = size - host - 1;
    long port = 0;
    for (size_t i = host + 1; i < size; i++) {
        if (authority[i] < '0' || authority[i] > '9')
            return "http.url: its port is not a number";
        port = port * 10 + (authority[i] - '0');
        if (port > S_PORT_MAX)
            break;
    }
    if (digits == 0 || digits > S_PORT_DIGITS || port < 1 || port > S_PORT_MAX)
        return "http.url: its port is not within 1..65535";
    return NULL;
}

//  Where the authority of url starts (after "http://" or "https://"), or
//  NULL when url has neither scheme.
static const char *s_after_scheme(const char *url)
{
    static const char *const schemes[] = {"http://", "https://"};
    for (size_t i = 0; i < sizeof schemes / sizeof *schemes; i++)
        if (strncmp(url, schemes[i], strlen(schemes[i])) == 0)
            return url + strlen(schemes[i]);
    return NULL;
}

void fq_http_url_host(const char *url, char *host, size_t size)
{
    if (size == 0)
        return;
    *host = 0;
    const char *start = url ? s_after_scheme(url) : NULL;
    if (!start)
        return;
    size_t authority = strcspn(start, "/?#");
    //  Past any user information (the rule refuses it; SQL stores it): the
    //  host follows its last '@'
    for (size_t i = authority; i-- > 0;)
        if (start[i] == '@') {
            start += i + 1;
            authority -= i + 1;
            break;
        }
    size_t length = start[0] == '[' ? strcspn(start, "]") + 1 : strcspn(start, ":/?#");
    if (length > authority)
        length = authority;
    if (length >= size)
        return;
    for (size_t i = 0; i < length; i++) {
        char c = start[i];
        host[i] = (char)(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    }
    host[length] = 0;
}

static const char *s_url_problem(const char *url, char *problem, size_t size)
{
    if (strlen(url) > FQ_HTTP_URL_MAX)
        return s_problem(problem, size, "http.url: longer than %d bytes", FQ_HTTP_URL_MAX);
    const char *authority = s_after_scheme(url);
    if (!authority)
        return "http.url: must start with http:// or https://";
    //  The host must be known at submit: a field there would let a
    //  recipient's values choose where the request goes
    size_t authority_size = strcspn(authority, "/?#");
    for (size_t i = 0; i + 1 < authority_size; i++)
        if (authority[i] == '{' && authority[i + 1] == '{')
            return "http.url: fields may stand in its path and query only, not in its host";
    fq_template_t *template =
        s_parse(url, FQ_TEMPLATE_PLAIN, FQ_HTTP_URL_MAX, "http.url", problem, size);
    if (!template)
        return problem;
    size_t filled_size = 0;
    char *filled = s_filled(template, &filled_size);
    fq_template_destroy(&template);
    if (!filled)
        return "out of memory";
    const char *found = NULL;
    for (size_t i = 0; i < filled_size && !found; i++) {
        unsigned char c = (unsigned char)filled[i];
        if (c < S_URL_FIRST || c > S_URL_LAST)
            found = "http.url: holds a space, a control or a non-ASCII character (write it "
                    "percent-encoded)";
        else if (c == '#')
            found = "http.url: holds a fragment (#...), which never reaches the server";
    }
    if (!found) {
        const char *at = s_after_scheme(filled);
        found = s_authority_problem(at, strcspn(at, "/?"));
    }
    free(filled);
    return found;
}

//  Whether name is an HTTP token (RFC 9110, 5.6.2).
static bool s_token(const char *name)
{
    if (!*name)
        return false;
    for (const char *c = name; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
              strchr(S_TOKEN_CHARS, *c)))
            return false;
    return true;
}

bool fq_channel_value_has_control(const char *value, size_t size)
{
    for (size_t i = 0; i < size; i++) {
        unsigned char c = (unsigned char)value[i];
        if ((c < ' ' && c != '\t') || c == S_DEL)
            return true;
    }
    return false;
}

static const char *s_header_problem(const fq_http_spec_t *spec, size_t i, char *problem,
                                    size_t size)
{
    const char *name = spec->header_names[i], *value = spec->header_values[i];
    if (!s_token(name))
        return s_problem(problem, size,
                         "http.headers \"%.*s\": a header's name is letters, digits and "
                         "!#$%%&'*+-.^_`|~ only",
                         S_NAME_QUOTED, name);
    for (size_t k = 0; k < sizeof s_refused_headers / sizeof *s_refused_headers; k++)
        if (strcasecmp(name, s_refused_headers[k]) == 0)
            return s_problem(problem, size,
                             "http.headers \"%.*s\": it is written by the HTTP client or by fairq "
                             "and cannot be given",
                             S_NAME_QUOTED, name);
    for (size_t k = 0; k < i; k++)
        if (strcasecmp(name, spec->header_names[k]) == 0)
            return s_problem(problem, size,
                             "http.headers \"%.*s\": given twice (names are case-insensitive)",
                             S_NAME_QUOTED, name);
    if (fq_channel_value_has_control(value, strlen(value)))
        return s_problem(problem, size,
                         "http.headers \"%.*s\": its value holds a control character",
                         S_NAME_QUOTED, name);
    char what[S_NAME_QUOTED + 32];
    snprintf(what, sizeof what, "http.headers \"%.*s\"", S_NAME_QUOTED, name);
    fq_template_t *template =
        s_parse(value, FQ_TEMPLATE_HEADER, FQ_HTTP_HEADERS_BYTES_MAX, what, problem, size);
    if (!template)
        return problem;
    fq_template_destroy(&template);
    return NULL;
}

static const char *s_headers_problem(const fq_http_spec_t *spec, char *problem, size_t size)
{
    if (spec->nheaders > FQ_HTTP_HEADERS_MAX)
        return s_problem(problem, size, "http.headers: more than %d headers", FQ_HTTP_HEADERS_MAX);
    size_t bytes = 0;
    for (size_t i = 0; i < spec->nheaders; i++)
        bytes += strlen(spec->header_names[i]) + strlen(spec->header_values[i]);
    if (bytes > FQ_HTTP_HEADERS_BYTES_MAX)
        return s_problem(problem, size, "http.headers: more than %d bytes of names and values",
                         FQ_HTTP_HEADERS_BYTES_MAX);
    for (size_t i = 0; i < spec->nheaders; i++)
        if (s_header_problem(spec, i, problem, size))
            return problem;
    return NULL;
}

static const char *s_body_problem(const fq_http_spec_t *spec, char *problem, size_t size)
{
    if (!spec->body)
        return NULL;
    if (strcmp(spec->method, "GET") == 0)
        return "http.body: a GET has no body";
    if (strlen(spec->body) > FQ_HTTP_BODY_MAX)
        return s_problem(problem, size, "http.body: longer than %d bytes", FQ_HTTP_BODY_MAX);
    fq_template_t *template =
        s_parse(spec->body, FQ_TEMPLATE_PLAIN, FQ_HTTP_BODY_MAX, "http.body", problem, size);
    if (!template)
        return problem;
    if (spec->body_format != FQ_HTTP_BODY_JSON) {
        fq_template_destroy(&template);
        return NULL;
    }
    size_t filled_size = 0;
    char *filled = s_filled(template, &filled_size);
    fq_template_destroy(&template);
    if (!filled)
        return "out of memory";
    json_error_t error;
    json_t *json = json_loadb(filled, filled_size, JSON_DECODE_ANY, &error);
    free(filled);
    if (json) {
        json_decref(json);
        return NULL;
    }
    return s_problem(problem, size,
                     "http.body: not JSON once its fields are filled in (with 0): %s, at byte %d",
                     error.text, error.position);
}

const char *fq_http_spec_problem(const fq_http_spec_t *spec, char *problem, size_t size)
{
    bool method = false;
    for (size_t i = 0; spec->method && i < sizeof s_methods / sizeof *s_methods; i++)
        method = method || strcmp(spec->method, s_methods[i]) == 0;
    if (!method)
        return "http.method: must be " FQ_HTTP_METHODS;
    if (!spec->url)
        return "http.url: is required";
    const char *found = s_url_problem(spec->url, problem, size);
    if (!found)
        found = s_headers_problem(spec, problem, size);
    if (!found)
        found = s_body_problem(spec, problem, size);
    if (!found && spec->secret && fq_http_secret_problem(spec->secret))
        found = s_problem(problem, size, "http.signing_secret: %s",
                          fq_http_secret_problem(spec->secret));
    if (!found && spec->previous_secret && fq_http_secret_problem(spec->previous_secret))
        found = s_problem(problem, size, "http.previous_secret: %s",
                          fq_http_secret_problem(spec->previous_secret));
    return found;
}
