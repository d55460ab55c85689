/*  fq_transport.c — delivery transports: the kinds and the file kind
    (contract in fq_transport.h; the smtp kind is fq_transport_smtp.c,
    http fq_transport_http.c, exec fq_transport_exec.c).

    Every mail kind (smtp, file, and exec for the email channel) delivers
    the same text, rendered here once per attempt by fq_mime_render. A
    message that cannot be rendered (a CR in its subject, a bad address)
    will never render, so it fails for good; running out of memory is the
    one render failure worth retrying. A message of another channel is
    not mail: the http and exec kinds take its body as it is.
*/
#include "fq_error.h"
#include "fq_transport.h"
#include "fq_mime.h"
#include "fq_transport_exec.h"
#include "fq_transport_http.h"
#include "fq_transport_smtp.h"
#include "fq_utf8.h"
#include <assert.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

//  An mbox file holds people's mail: readable by its owner only unless
//  the operator creates it otherwise beforehand.
#define S_FILE_MODE 0600

//  The mbox separator line names this sender: "From fairq@HOST DATE".
#define S_MBOX_USER        "fairq"
#define S_MBOX_HOST_NONE   "localhost"
#define S_MBOX_SENDER_SIZE (sizeof S_MBOX_USER "@" + HOST_NAME_MAX + 1)

//  Longest line of the null kind's delivery log (a tenant name is at most
//  64 bytes; longer input is cut, never split over lines).
#define S_NULL_LOG_LINE_MAX 160

//  What stands for a byte of outside text that is not UTF-8.
#define S_NOT_UTF8 '?'

//  The ASCII delete character, a control like those below space.
#define S_DEL 0x7F

//  As much of a channel's name as an error shows (names are short; one
//  from a peer may be anything).
#define S_CHANNEL_SHOWN 64

typedef enum {
    S_KIND_NULL,
    S_KIND_FILE,
    S_KIND_SMTP,
    S_KIND_HTTP,
    S_KIND_EXEC,
} s_kind_t;

//  The kinds by name, as fq_transport_config_t's kind says them.
static const struct {
    const char *name;
    s_kind_t kind;
} s_kinds[] = {
    {"null", S_KIND_NULL}, {"file", S_KIND_FILE}, {"smtp", S_KIND_SMTP},
    {"http", S_KIND_HTTP}, {"exec", S_KIND_EXEC},
};
#define S_KIND_NAMES "smtp, file, null, http or exec"

struct fq_transport {
    s_kind_t kind;
    char *message_id_domain; //  NULL: each sender's domain
    fq_smtp_t *smtp;         //  smtp
    fq_http_t *http;         //  http
    fq_exec_t *exec;         //  exec
    int fd;                  //  file: open for appending, -1 otherwise
    char *path;              //  file: for error messages
    char mbox_sender[S_MBOX_SENDER_SIZE];
};

// --------------------------------------------------------------------------
//  file

static int s_file_open(fq_transport_t *self, const fq_transport_config_t *cfg, char *error,
                       size_t error_size)
{
    if (!cfg->path || !*cfg->path) {
        fq_error_format(error, error_size, "file transport needs a path");
        return -1;
    }
    self->path = strdup(cfg->path);
    if (!self->path) {
        fq_error_format(error, error_size, "out of memory");
        return -1;
    }
    //  O_APPEND: each write lands at the end even if another process
    //  appended since; the lock (s_file_append) keeps records whole.
    self->fd = open(cfg->path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, S_FILE_MODE);
    if (self->fd < 0) {
        fq_error_format(error, error_size, "could not open %s for appending: %s", cfg->path,
                        strerror(errno));
        return -1;
    }
    char host[HOST_NAME_MAX + 1];
    if (gethostname(host, sizeof host) != 0 || !*host)
        snprintf(host, sizeof host, "%s", S_MBOX_HOST_NONE);
    host[HOST_NAME_MAX] = 0;
    snprintf(self->mbox_sender, sizeof self->mbox_sender, "%s@%s", S_MBOX_USER, host);
    return 0;
}

//  Writes all of data, through interruptions and short writes.
static int s_write_all(int fd, const char *data, size_t len)
{
    while (len > 0) {
        ssize_t done = write(fd, data, len);
        if (done < 0 && errno == EINTR)
            continue;
        if (done <= 0)
            return -1;
        data += done;
        len -= (size_t)done;
    }
    return 0;
}

//  Appends one record under an exclusive lock, so that records of several
//  workers and processes never interleave. A failed write (disk full) is
//  cut back off, so that the file stays a valid mbox, and is transient.
static fq_delivery_result_t s_file_append(fq_transport_t *self, const char *record, size_t len,
                                          char *error, size_t error_size)
{
    while (flock(self->fd, LOCK_EX) != 0)
        if (errno != EINTR) {
            fq_error_format(error, error_size, "could not lock %s: %s", self->path,
                            strerror(errno));
            return FQ_DELIVERY_TRANSIENT;
        }
    fq_delivery_result_t result = FQ_DELIVERY_OK;
    off_t end = lseek(self->fd, 0, SEEK_END);
    if (s_write_all(self->fd, record, len) != 0) {
        int write_errno = errno;
        if (end >= 0 && ftruncate(self->fd, end) != 0)
            write_errno = errno;
        fq_error_format(error, error_size, "could not append to %s: %s", self->path,
                        strerror(write_errno));
        result = FQ_DELIVERY_TRANSIENT;
    }
    flock(self->fd, LOCK_UN);
    return result;
}

static fq_delivery_result_t s_file_deliver(fq_transport_t *self, const char *text, size_t len,
                                           char *error, size_t error_size)
{
    size_t record_len;
    char *record = fq_mime_mbox_record(text, len, self->mbox_sender, time(NULL), &record_len);
    if (!record) {
        fq_error_format(error, error_size, "out of memory");
        return FQ_DELIVERY_TRANSIENT;
    }
    fq_delivery_result_t result = s_file_append(self, record, record_len, error, error_size);
    free(record);
    return result;
}

//  The null kind's delivery log: one line per message, "<unix time in ns>
//  <message id> <tenant> <request id>", for benchmarks and tests that need
//  the order and time of delivery without a mail server in the way.
static fq_delivery_result_t s_null_log(fq_transport_t *self, const fq_delivery_t *msg, char *error,
                                       size_t error_size)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    char line[S_NULL_LOG_LINE_MAX];
    int len = snprintf(line, sizeof line, "%lld%09ld %llu %s %llu\n", (long long)now.tv_sec,
                       now.tv_nsec, (unsigned long long)msg->id, msg->tenant ? msg->tenant : "-",
                       (unsigned long long)msg->request_id);
    if (len < 0 || (size_t)len >= sizeof line)
        len = (int)sizeof line - 1;
    line[len - 1] = '\n';
    //  One write(2) of the whole line, without s_file_append's lock and
    //  seek: an O_APPEND write to a regular file lands whole at the end,
    //  whatever the other workers write, and the log is read by programs,
    //  not mail readers. The lock, the seek and the unlock were three
    //  system calls a message of the benchmark's senders, more than the
    //  write itself. A failed write (disk full) may leave part of a line,
    //  and the message is retried.
    ssize_t done;
    do
        done = write(self->fd, line, (size_t)len);
    while (done < 0 && errno == EINTR);
    if (done == len)
        return FQ_DELIVERY_OK;
    fq_error_format(error, error_size, "could not append to %s: %s", self->path,
                    done < 0 ? strerror(errno) : "short write");
    return FQ_DELIVERY_TRANSIENT;
}

// --------------------------------------------------------------------------
//  What the kinds share

static pthread_once_t s_curl_once = PTHREAD_ONCE_INIT;
static CURLcode s_curl_init_rc;

//  curl_global_init is not thread-safe and must run once per process:
//  the first libcurl transport of any worker thread does it.
static void s_curl_init(void)
{
    s_curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

int fq_transport_curl_init(char *error, size_t error_size)
{
    pthread_once(&s_curl_once, s_curl_init);
    if (s_curl_init_rc == CURLE_OK)
        return 0;
    fq_error_format(error, error_size, "could not initialise libcurl: %s",
                    curl_easy_strerror(s_curl_init_rc));
    return FQ_EINVAL;
}

fq_delivery_result_t fq_transport_curl_failure(int curl_code, bool connected)
{
    switch (curl_code) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
        return FQ_DELIVERY_UNREACHABLE;
    case CURLE_OPERATION_TIMEDOUT:
        //  Resolving or connecting took the time up; a server that took
        //  the connection and then stalled is reachable, merely slow
        return connected ? FQ_DELIVERY_TRANSIENT : FQ_DELIVERY_UNREACHABLE;
    default:
        return FQ_DELIVERY_TRANSIENT;
    }
}

bool fq_transport_curl_connected(void *curl)
{
    //  Reset at each transfer's start, set once a connection is made or a
    //  kept one reused: empty after a refusal or a connect timeout
    char *address = NULL;
    return curl_easy_getinfo((CURL *)curl, CURLINFO_PRIMARY_IP, &address) == CURLE_OK && address &&
           *address;
}

void fq_transport_text_line(char *out, size_t size, const char *text, size_t len)
{
    assert(out && size > 0);
    size_t line = 0;
    while (line < len && text[line] != '\r' && text[line] != '\n')
        line++;
    //  Invalid bytes first, on a copy: a cut must fall between characters
    //  of the text as it will be shown
    size_t keep = line < size - 1 ? line : size - 1;
    memcpy(out, text, keep);
    fq_utf8_replace_invalid(out, keep, S_NOT_UTF8);
    keep = fq_utf8_prefix(out, keep, keep);
    out[keep] = 0;
    for (char *c = out; *c; c++)
        if ((unsigned char)*c < ' ' || *c == S_DEL)
            *c = ' ';
}

const char *fq_delivery_channel(const fq_delivery_t *msg)
{
    return msg->channel && *msg->channel ? msg->channel : FQ_CHANNEL_EMAIL;
}

// --------------------------------------------------------------------------

fq_transport_t *fq_transport_new(const fq_transport_config_t *cfg, char *error, size_t error_size)
{
    assert(cfg);
    if (!cfg->kind || !*cfg->kind) {
        fq_error_format(error, error_size, "no transport kind (" S_KIND_NAMES ")");
        return NULL;
    }
    size_t found = 0;
    while (found < sizeof s_kinds / sizeof s_kinds[0] && strcmp(cfg->kind, s_kinds[found].name))
        found++;
    if (found == sizeof s_kinds / sizeof s_kinds[0]) {
        fq_error_format(error, error_size, "unknown transport kind \"%s\" (" S_KIND_NAMES ")",
                        cfg->kind);
        return NULL;
    }
    s_kind_t kind = s_kinds[found].kind;
    //  A bad domain here would fail every message: refuse it at start
    const char *domain = cfg->message_id_domain;
    if (domain && *domain && fq_mime_check_domain(domain) != 0) {
        fq_error_format(error, error_size, "message_id_domain \"%s\" is not a domain", domain);
        return NULL;
    }

    fq_transport_t *self = calloc(1, sizeof *self);
    if (!self) {
        fq_error_format(error, error_size, "out of memory");
        return NULL;
    }
    self->kind = kind;
    self->fd = -1;
    if (domain && *domain && !(self->message_id_domain = strdup(domain))) {
        fq_error_format(error, error_size, "out of memory");
        fq_transport_destroy(&self);
        return NULL;
    }
    //  null with a path keeps a delivery log (see fq_transport.h)
    bool wants_file = kind == S_KIND_FILE || (kind == S_KIND_NULL && cfg->path && *cfg->path);
    if (wants_file && s_file_open(self, cfg, error, error_size) != 0)
        fq_transport_destroy(&self);
    else if (kind == S_KIND_SMTP && !(self->smtp = fq_smtp_new(cfg, error, error_size)))
        fq_transport_destroy(&self);
    else if (kind == S_KIND_HTTP && !(self->http = fq_http_new(cfg, error, error_size)))
        fq_transport_destroy(&self);
    else if (kind == S_KIND_EXEC && !(self->exec = fq_exec_new(cfg, error, error_size)))
        fq_transport_destroy(&self);
    return self;
}

void fq_transport_destroy(fq_transport_t **self_p)
{
    assert(self_p);
    fq_transport_t *self = *self_p;
    if (!self)
        return;
    fq_smtp_destroy(&self->smtp);
    fq_http_destroy(&self->http);
    fq_exec_destroy(&self->exec);
    if (self->fd >= 0)
        close(self->fd);
    free(self->path);
    free(self->message_id_domain);
    free(self);
    *self_p = NULL;
}

fq_delivery_result_t fq_transport_deliver(fq_transport_t *self, const fq_delivery_t *msg,
                                          uint32_t *retry_after_s, char *error, size_t error_size)
{
    assert(self);
    assert(msg);
    if (error && error_size > 0)
        error[0] = 0;
    uint32_t ignored;
    if (!retry_after_s)
        retry_after_s = &ignored;
    *retry_after_s = 0;
    if (self->kind == S_KIND_NULL)
        return self->fd >= 0 ? s_null_log(self, msg, error, error_size) : FQ_DELIVERY_OK;
    if (self->kind == S_KIND_HTTP)
        return fq_http_send(self->http, msg, retry_after_s, error, error_size);

    bool mail = strcmp(fq_delivery_channel(msg), FQ_CHANNEL_EMAIL) == 0;
    if (self->kind == S_KIND_EXEC && !mail) {
        const char *body = msg->body ? msg->body : "";
        return fq_exec_run(self->exec, msg, body, strlen(body), error, error_size);
    }
    if (!mail) {
        //  The sender's routing went wrong, not the message: another
        //  sender may serve its channel
        const char *channel = fq_delivery_channel(msg);
        char shown[S_CHANNEL_SHOWN];
        fq_transport_text_line(shown, sizeof shown, channel, strlen(channel));
        fq_error_format(error, error_size, "a mail transport does not deliver channel \"%s\"",
                        shown);
        return FQ_DELIVERY_TRANSIENT;
    }
    fq_mime_options_t options = {.message_id_domain = self->message_id_domain};
    char *text;
    size_t len;
    int rc = fq_mime_render(msg, &options, &text, &len, error, error_size);
    if (rc != 0)
        return rc == FQ_ENOMEM ? FQ_DELIVERY_TRANSIENT : FQ_DELIVERY_PERMANENT;
    fq_delivery_result_t result;
    if (self->kind == S_KIND_SMTP)
        result = fq_smtp_send(self->smtp, msg, text, len, error, error_size);
    else if (self->kind == S_KIND_EXEC)
        result = fq_exec_run(self->exec, msg, text, len, error, error_size);
    else
        result = s_file_deliver(self, text, len, error, error_size);
    free(text);
    return result;
}
