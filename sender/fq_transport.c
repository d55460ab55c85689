/*  fq_transport.c — delivery transports: the kinds and the file kind
    (contract in fq_transport.h; the smtp kind is fq_transport_smtp.c).

    Every kind but null delivers the same text, rendered here once per
    attempt by fq_mime_render. A message that cannot be rendered (a CR in
    its subject, a bad address) will never render, so it fails for good;
    running out of memory is the one render failure worth retrying.
*/
#include "fq_error.h"
#include "fq_transport.h"
#include "fq_mime.h"
#include "fq_transport_smtp.h"
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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

typedef enum {
    S_KIND_NULL,
    S_KIND_FILE,
    S_KIND_SMTP,
} s_kind_t;

struct fq_transport {
    s_kind_t kind;
    char *message_id_domain; //  NULL: each sender's domain
    fq_smtp_t *smtp;         //  smtp
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
    return s_file_append(self, line, (size_t)len, error, error_size);
}

// --------------------------------------------------------------------------

fq_transport_t *fq_transport_new(const fq_transport_config_t *cfg, char *error, size_t error_size)
{
    assert(cfg);
    s_kind_t kind;
    if (!cfg->kind || !*cfg->kind) {
        fq_error_format(error, error_size, "no transport kind (smtp, file or null)");
        return NULL;
    }
    if (strcmp(cfg->kind, "null") == 0)
        kind = S_KIND_NULL;
    else if (strcmp(cfg->kind, "file") == 0)
        kind = S_KIND_FILE;
    else if (strcmp(cfg->kind, "smtp") == 0)
        kind = S_KIND_SMTP;
    else {
        fq_error_format(error, error_size, "unknown transport kind \"%s\" (smtp, file or null)",
                        cfg->kind);
        return NULL;
    }
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
    return self;
}

void fq_transport_destroy(fq_transport_t **self_p)
{
    assert(self_p);
    fq_transport_t *self = *self_p;
    if (!self)
        return;
    fq_smtp_destroy(&self->smtp);
    if (self->fd >= 0)
        close(self->fd);
    free(self->path);
    free(self->message_id_domain);
    free(self);
    *self_p = NULL;
}

fq_delivery_result_t fq_transport_deliver(fq_transport_t *self, const fq_delivery_t *msg,
                                          char *error, size_t error_size)
{
    assert(self);
    assert(msg);
    if (error && error_size > 0)
        error[0] = 0;
    if (self->kind == S_KIND_NULL)
        return self->fd >= 0 ? s_null_log(self, msg, error, error_size) : FQ_DELIVERY_OK;

    fq_mime_options_t options = {.message_id_domain = self->message_id_domain};
    char *text;
    size_t len;
    int rc = fq_mime_render(msg, &options, &text, &len, error, error_size);
    if (rc != 0)
        return rc == FQ_ENOMEM ? FQ_DELIVERY_TRANSIENT : FQ_DELIVERY_PERMANENT;
    fq_delivery_result_t result = self->kind == S_KIND_SMTP
                                      ? fq_smtp_send(self->smtp, msg, text, len, error, error_size)
                                      : s_file_deliver(self, text, len, error, error_size);
    free(text);
    return result;
}
