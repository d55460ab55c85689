/*  fq_transport_smtp.c — the smtp kind: libcurl's SMTP client.

    One easy handle lives as long as the transport. libcurl keeps the
    handle's connection open after a transfer and the next transfer to
    the same URL reuses it: the next message starts at MAIL FROM, without
    a new TCP (and TLS) handshake, EHLO or AUTH. libcurl closes the
    connection when a transfer fails in the middle of a transaction (a
    refused RCPT, a timeout), so a message never starts inside a
    half-finished one; a refusal after the data ends the transaction
    cleanly and the connection stays.

    libcurl reports a failure as a CURLcode and the last reply code; the
    server's own words ("550 5.1.1 <x@y>: no such user") only pass through
    its debug callback. So the handle runs verbose with s_debug as its
    sink, which keeps the last failing reply for the error message and
    notes whether it answered a command of the mail transaction (MAIL,
    RCPT, DATA, the data itself) or of the session (greeting, EHLO, AUTH,
    STARTTLS).

    That distinction decides permanence. A 5xx about this message (no
    such user, message refused) is permanent: the message is dead. A 5xx
    about the session (bad credentials, our address refused at the
    greeting) is the sender's configuration, the same for every message;
    marking them all dead would throw a whole campaign away, so it is
    transient and an operator sees its text in the retries.

    Some transient failures are the moment's, not the message's, and
    fairqd answers them by slowing the destination down without counting
    an attempt (fq_transport.h): the server throttles (fq_smtp_classify
    says which replies do), or no connection to it could be made (refused,
    its name not resolved, the connect timeout: fq_transport_curl_failure).
*/
#include "fq_error.h"
#include "fq_transport_smtp.h"
#include "fq_mime.h"
#include <assert.h>
#include <ctype.h>
#include <curl/curl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

//  A delivery that takes longer has failed (transiently): long enough for
//  a slow server's content checks after the data, short enough that a
//  hung server does not hold a worker for minutes.
#define S_TIMEOUT_DEFAULT_MS 30000

//  RFC 5321 4.5.3.1.5: a reply line is at most 512 octets with its CRLF.
//  A multi-line reply is kept joined on one line, as far as this holds.
#define S_REPLY_SIZE 513

//  Reply codes: three digits, the first giving the class (RFC 5321 4.2.1).
#define S_CODE_DIGITS       3
#define S_CODE_TRANSIENT    4 //  4yz: transient negative completion
#define S_CODE_PERMANENT    5 //  5yz: permanent negative completion
#define S_CODE_CLASS_DIVIDE 100

//  The 4yz replies that throttle whatever they answer (fq_smtp_classify):
//  421 "service not available, closing transmission channel" (Gmail's
//  "421 4.7.28 ... rate limited", Yahoo's "421 4.7.0 [TSS04] ...
//  temporarily deferred"), 452 "insufficient system storage" (and "too
//  many recipients"), 454 "temporarily unavailable" (Amazon SES's "454
//  Throttling failure: Maximum sending rate exceeded"); 451 "local error"
//  throttles when its enhanced code is of the policy subject (Outlook's
//  "451 4.7.500 Server busy"), not otherwise ("451 4.3.0 try later").
#define S_CODE_CLOSING     421
#define S_CODE_LOCAL_ERROR 451
#define S_CODE_STORAGE     452
#define S_CODE_UNAVAILABLE 454

//  Enhanced status codes (RFC 3463) follow the reply code: "class.subject
//  .detail", the class the reply's, subject and detail of 1 to 3 digits.
//  The subjects that decide here: X.7.X security or policy (a rate limit
//  among them), and X.2.X the recipient's mailbox (full, disabled,
//  receiving too fast), which speaks of one recipient and so never
//  throttles the destination.
#define S_ENHANCED_DIGITS_MAX 3
#define S_SUBJECT_MAILBOX     2
#define S_SUBJECT_POLICY      7

//  Words of a 4yz reply's text that say the server throttles, whatever
//  its code (case does not matter): "450 4.7.1 too many connections from
//  your IP", "451 Rate limit exceeded, slow down".
static const char *const s_throttle_words[] = {"rate limit", "rate-limit", "ratelimit", "throttl",
                                               "too many"};

//  The ASCII delete character, a control like those below space.
#define S_DEL 0x7F

//  An EHLO name is a domain name: at most 255 octets (RFC 1035 2.3.4).
#define S_HELO_MAX 255

//  libcurl may speak only these: no redirect or URL trick can turn the
//  handle into an HTTP or FILE client.
#define S_PROTOCOLS "smtp,smtps"

struct fq_smtp {
    CURL *curl;
    char curl_error[CURL_ERROR_SIZE]; //  libcurl's detail of the last failure
    //  What the server said during the current delivery (s_debug)
    char reply[S_REPLY_SIZE];   //  The reply being read, lines joined
    char failure[S_REPLY_SIZE]; //  The last 4xx or 5xx reply, whole
    long failure_code;
    bool failure_in_transaction; //  It answered MAIL, RCPT, DATA or the data
    bool in_transaction;         //  The last command sent was one of those
    bool quitting;               //  QUIT sent: its reply tells nothing
    size_t replies;              //  Reply lines received
    //  The message being uploaded (s_read)
    const char *data;
    size_t len;
    size_t sent;
};

// --------------------------------------------------------------------------
//  What the server says

//  The reply code at the start of line, or 0 if it has none.
static long s_reply_code(const char *line, size_t len)
{
    if (len < S_CODE_DIGITS)
        return 0;
    long code = 0;
    for (size_t i = 0; i < S_CODE_DIGITS; i++) {
        if (line[i] < '0' || line[i] > '9')
            return 0;
        code = code * 10 + (line[i] - '0');
    }
    return code;
}

//  The subject of reply's enhanced status code ("451 4.7.500 Server
//  busy": 7), or -1 when it has none.
static int s_enhanced_subject(const char *reply)
{
    //  After the code, a space, or a '-' in a reply of several lines
    if (strlen(reply) < S_CODE_DIGITS + 1 ||
        (reply[S_CODE_DIGITS] != ' ' && reply[S_CODE_DIGITS] != '-'))
        return -1;
    const char *at = reply + S_CODE_DIGITS + 1;
    if (at[0] != reply[0] || at[1] != '.')
        return -1;
    at += 2;
    int subject = 0;
    size_t digits = 0;
    while (digits < S_ENHANCED_DIGITS_MAX && isdigit((unsigned char)at[digits]))
        subject = subject * 10 + (at[digits++] - '0');
    if (digits == 0 || at[digits] != '.' || !isdigit((unsigned char)at[digits + 1]))
        return -1;
    return subject;
}

fq_delivery_result_t fq_smtp_classify(long code, const char *reply, bool in_transaction)
{
    long class = code / S_CODE_CLASS_DIVIDE;
    if (class == S_CODE_PERMANENT)
        return in_transaction ? FQ_DELIVERY_PERMANENT : FQ_DELIVERY_TRANSIENT;
    if (class != S_CODE_TRANSIENT)
        return FQ_DELIVERY_TRANSIENT;
    //  The server closes the session on us: never this message's fault
    if (code == S_CODE_CLOSING)
        return FQ_DELIVERY_THROTTLED;
    int subject = s_enhanced_subject(reply);
    if (subject == S_SUBJECT_MAILBOX)
        return FQ_DELIVERY_TRANSIENT;
    if ((code == S_CODE_LOCAL_ERROR && subject == S_SUBJECT_POLICY) || code == S_CODE_STORAGE ||
        code == S_CODE_UNAVAILABLE)
        return FQ_DELIVERY_THROTTLED;
    for (size_t i = 0; i < sizeof s_throttle_words / sizeof s_throttle_words[0]; i++)
        if (strcasestr(reply, s_throttle_words[i]))
            return FQ_DELIVERY_THROTTLED;
    return FQ_DELIVERY_TRANSIENT;
}

static bool s_starts_with(const char *data, size_t len, const char *prefix)
{
    size_t prefix_len = strlen(prefix);
    return len >= prefix_len && strncasecmp(data, prefix, prefix_len) == 0;
}

//  One line the server sent, CRLF stripped.
static void s_reply_line(fq_smtp_t *self, const char *line, size_t len)
{
    self->replies++;
    //  "250-..." continues a reply, "250 ..." (or a bare "250") ends it
    bool last = len <= S_CODE_DIGITS || line[S_CODE_DIGITS] != '-';
    size_t used = strlen(self->reply);
    snprintf(self->reply + used, sizeof self->reply - used, "%s%.*s", used ? " " : "", (int)len,
             line);
    //  The reply ends up in logs and the database: no control characters
    //  (a stray CR, terminal escapes) from a server we do not control
    for (char *c = self->reply + used; *c; c++)
        if ((unsigned char)*c < ' ' || *c == S_DEL)
            *c = ' ';
    if (!last)
        return;
    long code = s_reply_code(line, len);
    //  After a failure libcurl says QUIT: its "221 Bye" explains nothing
    if (!self->quitting && code / S_CODE_CLASS_DIVIDE >= S_CODE_TRANSIENT) {
        memcpy(self->failure, self->reply, sizeof self->failure);
        self->failure_code = code;
        self->failure_in_transaction = self->in_transaction;
    } else if (!self->quitting) {
        //  The session went on after a refusal (EHLO refused, HELO taken):
        //  that refusal was not the failure
        self->failure[0] = 0;
        self->failure_code = 0;
    }
    self->reply[0] = 0;
}

//  libcurl's verbose output: HEADER_IN is what the server said, line by
//  line; HEADER_OUT the commands sent. The message itself is DATA_OUT and
//  stays out of it (and out of any log).
static int s_debug(CURL *curl, curl_infotype type, char *data, size_t size, void *userdata)
{
    (void)curl;
    fq_smtp_t *self = userdata;
    if (type == CURLINFO_HEADER_OUT) {
        //  The data after DATA is part of the transaction too, and its
        //  reply comes after no further command
        if (s_starts_with(data, size, "MAIL FROM") || s_starts_with(data, size, "RCPT TO") ||
            s_starts_with(data, size, "DATA"))
            self->in_transaction = true;
        else if (s_starts_with(data, size, "EHLO") || s_starts_with(data, size, "HELO") ||
                 s_starts_with(data, size, "AUTH") || s_starts_with(data, size, "STARTTLS") ||
                 s_starts_with(data, size, "RSET"))
            self->in_transaction = false;
        else if (s_starts_with(data, size, "QUIT"))
            self->quitting = true;
        //  Anything else is an AUTH exchange's answer: unchanged
    } else if (type == CURLINFO_HEADER_IN) {
        while (size > 0) {
            const char *newline = memchr(data, '\n', size);
            size_t len = newline ? (size_t)(newline - data) : size;
            size_t line_len = len > 0 && data[len - 1] == '\r' ? len - 1 : len;
            if (line_len > 0)
                s_reply_line(self, data, line_len);
            size_t step = newline ? len + 1 : len;
            data += step;
            size -= step;
        }
    }
    return 0;
}

//  The upload: the rendered message, as libcurl asks for it. libcurl
//  doubles a leading "." on each line and adds the final "." itself.
static size_t s_read(char *buffer, size_t size, size_t nitems, void *userdata)
{
    fq_smtp_t *self = userdata;
    size_t room = size * nitems;
    size_t left = self->len - self->sent;
    size_t count = left < room ? left : room;
    memcpy(buffer, self->data + self->sent, count);
    self->sent += count;
    return count;
}

// --------------------------------------------------------------------------
//  Set-up

//  The EHLO name goes in the URL's path (libcurl's convention): a host
//  name or an address literal, nothing that could change the URL.
static bool s_is_helo_name(const char *name)
{
    if (!*name || strlen(name) > S_HELO_MAX)
        return false;
    for (const char *c = name; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
              strchr("-.[]:", *c)))
            return false;
    return true;
}

//  Checks cfg's URL and sets it, with the EHLO name, on the handle.
//  Errors do not repeat the URL: it may hold a password (smtp://u:p@h).
static int s_set_url(fq_smtp_t *self, const fq_transport_config_t *cfg, char *error,
                     size_t error_size)
{
    if (!cfg->url || !*cfg->url) {
        fq_error_format(error, error_size, "smtp transport needs a url (smtp://host:port)");
        return -1;
    }
    CURLU *url = curl_url();
    if (!url) {
        fq_error_format(error, error_size, "out of memory");
        return -1;
    }
    int rc = -1;
    char *scheme = NULL, *path = NULL, *full = NULL;
    CURLUcode uc = curl_url_set(url, CURLUPART_URL, cfg->url, 0);
    if (uc != CURLUE_OK)
        fq_error_format(error, error_size, "bad smtp url: %s", curl_url_strerror(uc));
    else if (curl_url_get(url, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
             (strcmp(scheme, "smtp") != 0 && strcmp(scheme, "smtps") != 0))
        fq_error_format(error, error_size, "smtp url scheme \"%s\" is not smtp or smtps",
                        scheme ? scheme : "");
    else if (cfg->helo && *cfg->helo && !s_is_helo_name(cfg->helo))
        fq_error_format(error, error_size, "helo \"%s\" is not a host name", cfg->helo);
    else if (cfg->helo && *cfg->helo &&
             (curl_url_get(url, CURLUPART_PATH, &path, 0) != CURLUE_OK || strcmp(path, "/") != 0)) {
        //  Two EHLO names: refuse rather than pick one
        fq_error_format(error, error_size,
                        "smtp url has a path (an EHLO name) and helo is set too");
    } else {
        char helo_path[S_HELO_MAX + sizeof "/"];
        snprintf(helo_path, sizeof helo_path, "/%s", cfg->helo ? cfg->helo : "");
        bool has_helo = cfg->helo && *cfg->helo;
        if ((has_helo && curl_url_set(url, CURLUPART_PATH, helo_path, 0) != CURLUE_OK) ||
            curl_url_get(url, CURLUPART_URL, &full, 0) != CURLUE_OK ||
            curl_easy_setopt(self->curl, CURLOPT_URL, full) != CURLE_OK)
            fq_error_format(error, error_size, "could not set the smtp url");
        else
            rc = 0;
    }
    curl_free(scheme);
    curl_free(path);
    curl_free(full);
    curl_url_cleanup(url);
    return rc;
}

static int s_use_ssl(const char *starttls, long *use_ssl)
{
    if (!starttls || !*starttls || strcmp(starttls, "try") == 0)
        *use_ssl = CURLUSESSL_TRY; //  STARTTLS when the server offers it
    else if (strcmp(starttls, "require") == 0)
        *use_ssl = CURLUSESSL_ALL; //  No TLS, no mail
    else if (strcmp(starttls, "never") == 0)
        *use_ssl = CURLUSESSL_NONE;
    else
        return -1;
    return 0;
}

fq_smtp_t *fq_smtp_new(const fq_transport_config_t *cfg, char *error, size_t error_size)
{
    long use_ssl;
    if (s_use_ssl(cfg->starttls, &use_ssl) != 0) {
        fq_error_format(error, error_size, "starttls \"%s\" is not try, require or never",
                        cfg->starttls);
        return NULL;
    }
    if (fq_transport_curl_init(error, error_size) != 0)
        return NULL;
    fq_smtp_t *self = calloc(1, sizeof *self);
    if (!self || !(self->curl = curl_easy_init())) {
        fq_error_format(error, error_size, "out of memory");
        free(self);
        return NULL;
    }
    if (s_set_url(self, cfg, error, error_size) != 0) {
        fq_smtp_destroy(&self);
        return NULL;
    }
    long timeout_ms = cfg->timeout_ms > 0 ? cfg->timeout_ms : S_TIMEOUT_DEFAULT_MS;
    CURL *curl = self->curl;
    CURLcode rc = CURLE_OK;
    //  Each option is set once here; deliveries set only the envelope
#define S_SET(option, value)                                                                       \
    do {                                                                                           \
        if (rc == CURLE_OK)                                                                        \
            rc = curl_easy_setopt(curl, option, value);                                            \
    } while (0)
    S_SET(CURLOPT_PROTOCOLS_STR, S_PROTOCOLS);
    //  Worker threads: no SIGALRM for timeouts, no signals at all
    S_SET(CURLOPT_NOSIGNAL, 1L);
    S_SET(CURLOPT_USE_SSL, use_ssl);
    if (cfg->insecure_tls) {
        S_SET(CURLOPT_SSL_VERIFYPEER, 0L);
        S_SET(CURLOPT_SSL_VERIFYHOST, 0L);
    }
    if (cfg->username && *cfg->username) {
        S_SET(CURLOPT_USERNAME, cfg->username);
        S_SET(CURLOPT_PASSWORD, cfg->password ? cfg->password : "");
    }
    S_SET(CURLOPT_TIMEOUT_MS, timeout_ms);
    S_SET(CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
    //  A connection kept between messages may die silently (NAT, a
    //  firewall): probes find out before a message is lost in it
    S_SET(CURLOPT_TCP_KEEPALIVE, 1L);
    S_SET(CURLOPT_ERRORBUFFER, self->curl_error);
    //  The debug callback is only called in verbose mode; it replaces
    //  libcurl's printing to stderr
    S_SET(CURLOPT_DEBUGFUNCTION, s_debug);
    S_SET(CURLOPT_DEBUGDATA, self);
    S_SET(CURLOPT_VERBOSE, 1L);
    S_SET(CURLOPT_READFUNCTION, s_read);
    S_SET(CURLOPT_READDATA, self);
    S_SET(CURLOPT_UPLOAD, 1L);
#undef S_SET
    if (rc != CURLE_OK) {
        fq_error_format(error, error_size, "could not configure libcurl: %s",
                        curl_easy_strerror(rc));
        fq_smtp_destroy(&self);
    }
    return self;
}

void fq_smtp_destroy(fq_smtp_t **self_p)
{
    assert(self_p);
    fq_smtp_t *self = *self_p;
    if (!self)
        return;
    if (self->curl)
        curl_easy_cleanup(self->curl);
    free(self);
    *self_p = NULL;
}

// --------------------------------------------------------------------------
//  Delivery

//  One transfer of the message, from a clean slate of server words.
static CURLcode s_perform(fq_smtp_t *self)
{
    self->reply[0] = self->failure[0] = self->curl_error[0] = 0;
    self->failure_code = 0;
    self->failure_in_transaction = self->in_transaction = self->quitting = false;
    self->replies = 0;
    self->sent = 0;
    return curl_easy_perform(self->curl);
}

//  Classifies a failed transfer and says why in error.
static fq_delivery_result_t s_failure(fq_smtp_t *self, CURLcode rc, char *error, size_t error_size)
{
    long code = 0;
    curl_easy_getinfo(self->curl, CURLINFO_RESPONSE_CODE, &code);
    if (code / S_CODE_CLASS_DIVIDE < S_CODE_TRANSIENT)
        code = self->failure_code;
    if (self->failure[0] && code / S_CODE_CLASS_DIVIDE >= S_CODE_TRANSIENT) {
        fq_error_format(error, error_size, "%s", self->failure);
        return fq_smtp_classify(code, self->failure, self->failure_in_transaction);
    }
    //  No reply to show: the connection failed, timed out, TLS failed
    fq_error_format(error, error_size, "%s",
                    self->curl_error[0] ? self->curl_error : curl_easy_strerror(rc));
    return fq_transport_curl_failure(rc, fq_transport_curl_connected(self->curl));
}

fq_delivery_result_t fq_smtp_send(fq_smtp_t *self, const fq_delivery_t *msg, const char *text,
                                  size_t len, char *error, size_t error_size)
{
    assert(self);
    char from[FQ_MIME_ADDRESS_SIZE], to[FQ_MIME_ADDRESS_SIZE];
    if (fq_mime_address(msg->from, from, sizeof from) != 0 ||
        fq_mime_address(msg->to, to, sizeof to) != 0) {
        fq_error_format(error, error_size, "sender or recipient is not one address");
        return FQ_DELIVERY_PERMANENT;
    }
    struct curl_slist *rcpt = curl_slist_append(NULL, to);
    if (!rcpt) {
        fq_error_format(error, error_size, "out of memory");
        return FQ_DELIVERY_TRANSIENT;
    }
    self->data = text;
    self->len = len;
    CURLcode rc = curl_easy_setopt(self->curl, CURLOPT_MAIL_FROM, from);
    if (rc == CURLE_OK)
        rc = curl_easy_setopt(self->curl, CURLOPT_MAIL_RCPT, rcpt);
    //  The size lets libcurl announce it (SIZE=) when the server takes
    //  SIZE: a server refuses a message too large before it is sent
    if (rc == CURLE_OK)
        rc = curl_easy_setopt(self->curl, CURLOPT_INFILESIZE_LARGE, (curl_off_t)len);
    if (rc == CURLE_OK) {
        rc = s_perform(self);
        //  libcurl checks a kept connection before reusing it, but the
        //  server may close it (its idle timeout) just as the next message
        //  starts: the transfer fails on a reused connection before any
        //  reply. No command of this message was answered, so nothing was
        //  delivered: try once more, on a new connection since libcurl
        //  dropped the failed one.
        long connects = 0;
        curl_easy_getinfo(self->curl, CURLINFO_NUM_CONNECTS, &connects);
        bool lost = rc == CURLE_SEND_ERROR || rc == CURLE_RECV_ERROR || rc == CURLE_GOT_NOTHING;
        if (lost && connects == 0 && self->replies == 0)
            rc = s_perform(self);
    }
    fq_delivery_result_t result =
        rc == CURLE_OK ? FQ_DELIVERY_OK : s_failure(self, rc, error, error_size);
    //  The handle must not keep pointers to what is freed now
    curl_easy_setopt(self->curl, CURLOPT_MAIL_RCPT, NULL);
    curl_slist_free_all(rcpt);
    self->data = NULL;
    self->len = self->sent = 0;
    return result;
}
