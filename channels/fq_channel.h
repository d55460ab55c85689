/*  fq_channel.h — the channels a request goes out on besides mail: their
    names, the rule of an http request, and the rendering and signing of
    each of its messages.

    A request names its channel (api/API.md, "Channels"): "email", the
    default, is mail as fairq always sent it; "http" makes each message
    one HTTP request (a webhook) that fairq-sender makes as it is told; any
    other sane name ("sms") is a channel some sender carries out on its
    own, given the recipient's key and one rendered body. The set is open:
    fairqd does not know which channels its senders serve.

    The rule of an http request is stated once, here: fairqd's API checks
    a submit by it (a bad one is a 400 naming the place), and the
    dispatcher parses the request by it again before rendering its
    messages (a request stored by SQL that breaks it is refused there, and
    its messages die with the reason). The schema (sql/migrations/
    0015_channels.sql) checks the same limits in SQL.

    Rendering (fq_http_render) substitutes each recipient's fields into
    the request's templates (templates/fq_template.h), each value encoded
    for where it goes: percent-encoded in the URL, JSON-escaped (as a
    string's content) in a json body, form-encoded in a form body, as it
    is in a header value. {{ }} and {{{ }}} are the same here: a value is
    always encoded, so a field cannot break out of its place. When the
    request has a signing secret, the message carries the three headers of
    Standard Webhooks: webhook-id ("msg_" and the message's id, the same on
    every attempt), webhook-timestamp (Unix seconds at dispatch) and
    webhook-signature ("v1," and the base64 HMAC-SHA256, by the secret, of
    id "." timestamp "." body; during a rotation a second one, by the
    previous secret, after a space).

    No I/O and no state besides what a call is given; libsodium's HMAC-SHA256 does
    the signing. */
#ifndef FQ_CHANNEL_H
#define FQ_CHANNEL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

//  ---------------------------------------------------------------------
//  Channel names

//  A channel's name: 1..FQ_CHANNEL_NAME_MAX of a-z 0-9 _ - (the schema's
//  requests_channel_check holds the same rule).
#define FQ_CHANNEL_NAME_MAX  32
#define FQ_CHANNEL_NAME_SIZE (FQ_CHANNEL_NAME_MAX + 1)

#define FQ_CHANNEL_EMAIL "email"
#define FQ_CHANNEL_HTTP  "http"

//  Why name cannot be a channel's name, or NULL when it can (static text).
const char *fq_channel_name_problem(const char *name);

//  Whether name is mail: NULL, "" (a MESSAGE of an older fairqd) or
//  "email".
bool fq_channel_is_email(const char *name);

//  ---------------------------------------------------------------------
//  The rule of an http request

//  Longest URL template, bytes: longer than any endpoint's URL, short
//  enough that servers take it once rendered (most refuse beyond 8 KiB).
#define FQ_HTTP_URL_MAX 8192

//  Longest rendered URL, bytes: its fields percent-encoded may triple it.
#define FQ_HTTP_URL_RENDERED_MAX (64 * 1024)

//  Longest body template, bytes: a webhook's payload is small; one this
//  large rendered for a million recipients is already a lot to carry.
#define FQ_HTTP_BODY_MAX (256 * 1024)

//  Most headers an http request gives, and most bytes of their names and
//  value templates together: they travel with every message.
#define FQ_HTTP_HEADERS_MAX       32
#define FQ_HTTP_HEADERS_BYTES_MAX (8 * 1024)

//  A signing secret as Standard Webhooks writes it: "whsec_" and the
//  base64 of FQ_HTTP_SECRET_MIN..FQ_HTTP_SECRET_MAX random bytes.
#define FQ_HTTP_SECRET_PREFIX "whsec_"
#define FQ_HTTP_SECRET_MIN    24
#define FQ_HTTP_SECRET_MAX    64

//  Room for a problem or an error message, NUL included.
#define FQ_HTTP_PROBLEM_SIZE 384

//  The methods an http request may use.
#define FQ_HTTP_METHODS "POST, PUT, PATCH, DELETE or GET"

//  The headers fairq writes itself when it signs, by Standard Webhooks.
#define FQ_HTTP_HEADER_WEBHOOK_ID        "webhook-id"
#define FQ_HTTP_HEADER_WEBHOOK_TIMESTAMP "webhook-timestamp"
#define FQ_HTTP_HEADER_WEBHOOK_SIGNATURE "webhook-signature"

//  How a body's fields are encoded, and the Content-Type it goes with
//  unless the request gives one.
typedef enum {
    FQ_HTTP_BODY_JSON, //  application/json: values JSON-escaped
    FQ_HTTP_BODY_FORM  //  application/x-www-form-urlencoded: values form-encoded
} fq_http_body_format_t;

//  "json" or "form" into *format. Returns 0, or -1 for another name.
int fq_http_body_format_parse(const char *name, fq_http_body_format_t *format);

//  The format's name ("json", "form"); static text.
const char *fq_http_body_format_name(fq_http_body_format_t format);

//  An http request as it is submitted and stored. Strings are the
//  caller's.
typedef struct {
    const char *method;               //  POST, PUT, PATCH, DELETE or GET
    const char *url;                  //  Template: fields in the path and query only
    const char *const *header_names;  //  nheaders of them
    const char *const *header_values; //  Templates
    size_t nheaders;
    const char *body; //  Template; NULL: no body
    fq_http_body_format_t body_format;
    const char *secret; //  "whsec_..."; NULL: messages are not signed
    //  The secret a rotation replaced, while it still signs: each message
    //  then carries two signatures, the new one first (Standard Webhooks
    //  lets a receiver check either). NULL: none
    const char *previous_secret;
} fq_http_spec_t;

//  Why spec is not an http request fairq sends, or NULL when it is. The
//  problem names its place ("http.url: ...", "http.headers \"Host\":
//  ..."); it is static text, or written into problem (size bytes,
//  FQ_HTTP_PROBLEM_SIZE is enough): a method not in FQ_HTTP_METHODS; a URL that is not http:// or
//  https:// with a host (a literal one: fields are allowed in the path
//  and query only), that holds credentials, a fragment, a space, a
//  control or a non-ASCII byte, or is longer than FQ_HTTP_URL_MAX; a
//  header name that is not an HTTP token, names a header the connection
//  owns (Host, Content-Length, Transfer-Encoding, Connection and the
//  other hop-by-hop ones) or one of Standard Webhooks', or is given twice
//  (in any case); a value with a control character; more headers or
//  bytes than FQ_HTTP_HEADERS_MAX and FQ_HTTP_HEADERS_BYTES_MAX; a body
//  longer than FQ_HTTP_BODY_MAX, or with GET, or of format json that is
//  not JSON once its fields are filled in (with 0); a template error (its
//  message, with the byte it is at); a secret as for
//  fq_http_secret_problem.
const char *fq_http_spec_problem(const fq_http_spec_t *spec, char *problem, size_t size);

//  The host of an http request's URL, lowercase, into host (size bytes):
//  "https://Api.Example.com:8443/x" gives "api.example.com", an IPv6 host
//  its brackets; "" when there is none or it does not fit. A URL's host is
//  never a template, so it is every message's destination (0016).
void fq_http_url_host(const char *url, char *host, size_t size);

//  Why secret is not a signing secret, or NULL when it is (static text).
const char *fq_http_secret_problem(const char *secret);

//  ---------------------------------------------------------------------
//  Rendering and signing

typedef struct fq_http_templates fq_http_templates_t;

//  Parses and checks spec (fq_http_spec_problem) once, for rendering its
//  messages. Returns a new object the caller owns, or NULL with why in
//  error (a problem, or "out of memory"). Keeps nothing of spec's: the
//  secret is decoded into it, and wiped when it is destroyed.
fq_http_templates_t *fq_http_templates_new(const fq_http_spec_t *spec, char *error,
                                           size_t error_size);

//  Destroys it and nulls *self_p; safe on NULL and twice.
void fq_http_templates_destroy(fq_http_templates_t **self_p);

//  The method (static text while self lives).
const char *fq_http_templates_method(const fq_http_templates_t *self);

//  The fields the templates use, template by template (a field two use
//  is named twice), those of the header values first: *nheader of them go
//  into a header, whose values may not hold CR, LF or NUL (the splitter
//  refuses such a recipient alone). Returns a new array (free() it) of
//  names the templates own, *count of them; NULL only when memory runs
//  out.
const char **fq_http_templates_fields(const fq_http_templates_t *self, size_t *count,
                                      size_t *nheader);

//  One rendered message.
typedef struct {
    char *url;                  //  Points into block
    const char **header_names;  //  nheaders of them, into block: the request's
    const char **header_values; //  own, then Content-Type unless given (with
    size_t nheaders;            //  a body), then the webhook-* when signed
    char *body;                 //  "" for none; malloc'ed, its own
    size_t body_size;
    void *block; //  url and the headers: one allocation
} fq_http_message_t;

//  Renders the message message_id of a recipient with fields (a JSON
//  object; NULL: none), at timestamp_s (Unix seconds: webhook-timestamp,
//  when signed). Returns 0 with out filled (free it with
//  fq_http_message_free, or take body and block and free() each), or
//  an fq error code with out empty and why in error: a field missing or
//  not a string, number or boolean (as fq_template_render_json says), a
//  header value that would hold a control character, a json body that is
//  not JSON once rendered, a URL longer than FQ_HTTP_URL_RENDERED_MAX,
//  FQ_ENOMEM.
int fq_http_render(const fq_http_templates_t *self, const json_t *fields, uint64_t message_id,
                   int64_t timestamp_s, fq_http_message_t *out, char *error, size_t error_size);

//  Frees what a render made; safe twice.
void fq_http_message_free(fq_http_message_t *message);

//  Room for a webhook-signature's value: "v1," and the base64 of 32
//  bytes, NUL included.
#define FQ_HTTP_SIGNATURE_SIZE 48

//  Writes into signature (FQ_HTTP_SIGNATURE_SIZE bytes) the
//  webhook-signature of Standard Webhooks for id, timestamp_s and the
//  body_size bytes at body, by the key_size bytes at key: "v1," and the
//  base64 of HMAC-SHA256(key, id "." timestamp "." body). Returns 0, or
//  FQ_EINVAL when the HMAC fails.
int fq_http_sign(const unsigned char *key, size_t key_size, const char *id, int64_t timestamp_s,
                 const char *body, size_t body_size, char signature[FQ_HTTP_SIGNATURE_SIZE]);

//  Decodes a signing secret ("whsec_" and base64) into key (room for
//  FQ_HTTP_SECRET_MAX bytes). Returns the key's size, or -1 when secret
//  is not one (fq_http_secret_problem).
int fq_http_secret_decode(const char *secret, unsigned char key[FQ_HTTP_SECRET_MAX]);

#endif
