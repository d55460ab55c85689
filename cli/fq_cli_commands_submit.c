/*  fq_cli_commands_submit.c — submit: a JSON file sent as it is, or a CSV
    of recipients (fq_cli_csv.h) with the message given by options.

    A file is checked here before anything is sent, so that a mistake in
    it is a usage error (exit 2) that names the file and line, rather than
    a 400 about a body the user never saw: the JSON's syntax; the CSV's
    structure, and the templates against its columns (with fairqd's own
    template parser, fq_template.h).

    A CSV file may be far larger than memory, so it is never held whole:
    it is read twice, in pieces. The first reading checks it and counts
    the bytes of the JSON it makes; the second makes that JSON again and
    streams it to the server as the body, its length announced, so that a
    server that will not take so much says 413 before any of it is sent.
    Standard input, which cannot be read twice, is copied to an unnamed
    temporary file during the first reading.
*/
#include "fq_cli_args.h"
#include "fq_limits.h"
#include "fq_cli_commands.h"
#include "fq_buf.h"
#include "fq_cli_csv.h"
#include "fq_cli_table.h"
#include "fq_template.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

//  API.md: max_attempts 1..100 (the priority range is fq_limits.h's)
#define S_ATTEMPTS_MAX     100
#define S_WATCH_INTERVAL_S 1.0

//  "Idempotency-Key: " and 255 bytes
#define S_HEADER_SIZE 300

//  Room for "the body template (PATH)"
#define S_WHAT_SIZE 1024

//  Where standard input is copied for its second reading, unless TMPDIR
//  says; the file is unlinked at once, so nothing is left behind
#define S_SPOOL_DIR  "/tmp"
#define S_SPOOL_NAME "fairq-csv-XXXXXX"

//  API.md: the status of a body larger than http_body_max
#define S_HTTP_TOO_LARGE 413

//  Room for the server's answer as told
#define S_DESCRIBE_SIZE 1024

//  The whole of path ("-": standard input) into *data (NUL-terminated,
//  caller frees) and *size. Returns 0, or FQ_CLI_EXIT_USAGE (printed).
static int s_read_file(const char *path, char **data, size_t *size)
{
    fq_buf_t buffer = {0};
    int rc = fq_cli_read_file(path, &buffer);
    if (rc) {
        fq_buf_free(&buffer);
        return rc;
    }
    *size = buffer.size;
    *data = fq_buf_take(&buffer);
    if (!*data) {
        fq_cli_error("could not read \"%s\": %s", strcmp(path, "-") == 0 ? FQ_CLI_STDIN_NAME : path,
                     strerror(ENOMEM));
        return FQ_CLI_EXIT_USAGE;
    }
    return 0;
}

static const char *s_name(const char *path)
{
    return strcmp(path, "-") == 0 ? FQ_CLI_STDIN_NAME : path;
}

static const fq_cli_option_t s_submit_options[] = {
    {"csv", "PATH", "recipients from a CSV file (\"-\": standard input) instead of a JSON body"},
    {"tenant", "NAME", "with a CSV: the tenant (needed with an admin token)"},
    {"from", "ADDR", "with a CSV: the sender address"},
    {"subject", "TEXT", "with a CSV: the subject template"},
    {"body", "TEXT", "with a CSV: the body template, as it is given"},
    {"body-file", "PATH",
     "with a CSV: the body template, from a file (\"-\": standard input); not with --body TEXT"},
    {"html", NULL, "with a CSV: the body is HTML ({{field}} is HTML-escaped)"},
    {"send-at", "TIME",
     "with a CSV: send from TIME: RFC 3339 with a zone, Unix seconds, or +N[smhd]"},
    {"priority", "N", "with a CSV: priority within the tenant (-1000..1000, default 0)"},
    {"max-attempts", "N", "with a CSV: attempts per message before it is dead (1..100, default 5)"},
    {"idempotency-key", "KEY",
     "submit at most once: the same key with the same request answers the first one again; with "
     "another request it is refused (422)"},
    {"watch", NULL, "then follow the request as status --watch does (and exit as it does)"},
    {NULL, NULL, NULL}};

//  The options that only make sense with --csv (a JSON file holds them)
static const char *const s_csv_only[] = {"tenant",       "from", "subject", "body",
                                         "body-file",    "html", "send-at", "priority",
                                         "max-attempts", NULL};

//  Checks that a template parses, and that the CSV has every field it
//  uses. Returns 0 or FQ_CLI_EXIT_USAGE (printed).
static int s_check_template(const char *text, fq_template_mode_t mode, const char *what,
                            const fq_cli_csv_t *csv, const char *csv_name)
{
    char error[FQ_TEMPLATE_ERROR_SIZE];
    fq_template_t *template = fq_template_new(text, mode, error, sizeof error);
    if (!template) {
        fq_cli_error("%s: %s", what, error);
        return FQ_CLI_EXIT_USAGE;
    }
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < fq_template_field_count(template); i++) {
        const char *field = fq_template_field(template, i);
        bool found = false;
        for (size_t c = 0; !found && c < fq_cli_csv_columns(csv); c++)
            found = strcmp(fq_cli_csv_header(csv, c), field) == 0;
        if (!found) {
            fq_cli_error("%s uses the field \"%s\", and %s has no column of that name", what, field,
                         csv_name);
            rc = FQ_CLI_EXIT_USAGE;
        }
    }
    fq_template_destroy(&template);
    return rc;
}

//  ---------------------------------------------------------------------
//  The CSV file, read twice

//  A CSV file opened for two readings: a regular file is read again from
//  where it started; anything else (a pipe) is copied to an unnamed
//  temporary file, the spool, as it is read the first time.
typedef struct {
    const char *path; //  As given ("-": standard input)
    FILE *file;
    off_t start;     //  Where the text starts in file (standard input may be past 0)
    FILE *spool;     //  The copy, when file cannot be read again
    FILE *reading;   //  What the reading under way reads
    bool copying;    //  The first reading of a file that is spooled
    int spool_errno; //  Why the copy failed, else 0
} s_source_t;

static void s_source_close(s_source_t *self)
{
    if (self->file && self->file != stdin)
        fclose(self->file);
    if (self->spool)
        fclose(self->spool);
    self->file = self->spool = self->reading = NULL;
}

//  An unnamed temporary file, read and written. NULL with errno set.
static FILE *s_spool_new(void)
{
    const char *dir = getenv("TMPDIR");
    char *path = NULL;
    if (asprintf(&path, "%s/%s", dir && *dir ? dir : S_SPOOL_DIR, S_SPOOL_NAME) < 0) {
        errno = ENOMEM;
        return NULL;
    }
    int fd = mkstemp(path);
    if (fd >= 0)
        unlink(path);
    free(path);
    FILE *file = fd >= 0 ? fdopen(fd, "w+b") : NULL;
    if (fd >= 0 && !file) {
        int errnum = errno;
        close(fd);
        errno = errnum;
    }
    return file;
}

//  Opens path ("-": standard input) for its first reading. Returns 0, or
//  FQ_CLI_EXIT_USAGE (printed).
static int s_source_open(s_source_t *self, const char *path)
{
    *self = (s_source_t){.path = path};
    self->file = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!self->file) {
        fq_cli_error("could not open \"%s\": %s", path, strerror(errno));
        return FQ_CLI_EXIT_USAGE;
    }
    struct stat st;
    self->start = ftello(self->file);
    if (fstat(fileno(self->file), &st) != 0 || !S_ISREG(st.st_mode) || self->start < 0) {
        self->spool = s_spool_new();
        if (!self->spool) {
            fq_cli_error("could not make a temporary copy of \"%s\" in %s: %s", s_name(path),
                         getenv("TMPDIR") ? "$TMPDIR" : S_SPOOL_DIR, strerror(errno));
            s_source_close(self);
            return FQ_CLI_EXIT_USAGE;
        }
        self->copying = true;
    }
    self->reading = self->file;
    return 0;
}

//  Back to the start, for the second reading. Returns 0, or -1 (errno).
static int s_source_rewind(s_source_t *self)
{
    if (self->spool) {
        self->copying = false;
        self->reading = self->spool;
        if (fflush(self->spool) != 0)
            return -1;
        rewind(self->spool);
        return 0;
    }
    clearerr(self->file);
    return fseeko(self->file, self->start, SEEK_SET);
}

//  fq_cli_csv_read_fn over a source.
static ssize_t s_source_read(void *arg, char *buffer, size_t size)
{
    s_source_t *self = arg;
    size_t got = fread(buffer, 1, size, self->reading);
    if (got == 0 && ferror(self->reading))
        return -1;
    if (self->copying && got > 0 && fwrite(buffer, 1, got, self->spool) != got) {
        self->spool_errno = errno ? errno : EIO;
        return -1;
    }
    return (ssize_t)got;
}

//  Prints why reading the CSV failed.
static void s_csv_failed(const s_source_t *source, const fq_cli_csv_error_t *error)
{
    if (source->spool_errno)
        fq_cli_error("could not copy \"%s\" to a temporary file: %s", s_name(source->path),
                     strerror(source->spool_errno));
    else if (error->errnum)
        fq_cli_error("could not read \"%s\": %s", s_name(source->path), strerror(error->errnum));
    else
        fq_cli_error("%s:%zu: %s", s_name(source->path), error->line, error->message);
}

//  The first reading: checks the whole file and counts the bytes of its
//  recipients' JSON into *size. Returns the reader, past the end, for its
//  header; or NULL (printed).
static fq_cli_csv_t *s_csv_check(s_source_t *source, size_t *size)
{
    fq_cli_csv_t *csv = fq_cli_csv_new(s_source_read, source);
    char *scratch = malloc(FQ_CLI_CSV_PIECE);
    if (!csv || !scratch) {
        fq_cli_error("out of memory");
        goto fail;
    }
    fq_cli_csv_error_t error;
    ssize_t got;
    *size = 0;
    while ((got = fq_cli_csv_recipients_read(csv, scratch, FQ_CLI_CSV_PIECE, &error)) > 0)
        *size += (size_t)got;
    if (got < 0) {
        s_csv_failed(source, &error);
        goto fail;
    }
    free(scratch);
    return csv;
fail:
    free(scratch);
    fq_cli_csv_destroy(&csv);
    return NULL;
}

//  ---------------------------------------------------------------------
//  The body, streamed

//  The body of a CSV submission: prefix (the request's other members, an
//  object left open), the recipients read from the CSV, and "}".
typedef struct {
    const char *prefix;
    size_t prefix_size;
    size_t prefix_sent;
    fq_cli_csv_t *csv; //  The second reading
    bool recipients_done;
    bool closed; //  The final "}" is out
    size_t size; //  What the first reading counted, announced as the length
    size_t sent;
    bool failed; //  error says why
    fq_cli_csv_error_t error;
    bool changed; //  The file's JSON came out of another length
} s_upload_t;

//  fq_cli_http_read_fn: the next piece of the body.
static size_t s_upload_read(char *buffer, size_t size, void *arg)
{
    s_upload_t *self = arg;
    size_t done = self->prefix_size - self->prefix_sent;
    if (done > size)
        done = size;
    memcpy(buffer, self->prefix + self->prefix_sent, done);
    self->prefix_sent += done;
    while (done < size && !self->recipients_done) {
        ssize_t got =
            fq_cli_csv_recipients_read(self->csv, buffer + done, size - done, &self->error);
        if (got < 0) {
            self->failed = true;
            return FQ_CLI_HTTP_ABORT;
        }
        self->recipients_done = got == 0;
        done += (size_t)got;
    }
    if (done < size && self->recipients_done && !self->closed) {
        buffer[done++] = '}';
        self->closed = true;
    }
    self->sent += done;
    //  The file changed between the readings: what was announced is wrong
    if (self->sent > self->size || (done == 0 && self->sent < self->size)) {
        self->changed = true;
        return FQ_CLI_HTTP_ABORT;
    }
    return done;
}

//  The request's members other than the recipients, as the text of a
//  JSON object left open for them: "{...,". Caller frees; NULL (printed).
static char *s_csv_prefix(const fq_cli_args_t *args, const char *template, int64_t priority,
                          int64_t max_attempts, json_t *when)
{
    const char *tenant = fq_cli_arg(args, "tenant");
    json_t *head = json_object();
    if (!head || (tenant && json_object_set_new(head, "tenant", json_string(tenant))) ||
        json_object_set_new(head, "from", json_string(fq_cli_arg(args, "from"))) ||
        json_object_set_new(head, "subject", json_string(fq_cli_arg(args, "subject"))) ||
        json_object_set_new(head, "body", json_string(template)) ||
        (fq_cli_flag(args, "html") && json_object_set_new(head, "html", json_true())) ||
        (when && json_object_set(head, "send_at", when)) ||
        (fq_cli_arg(args, "priority") &&
         json_object_set_new(head, "priority", json_integer(priority))) ||
        (fq_cli_arg(args, "max-attempts") &&
         json_object_set_new(head, "max_attempts", json_integer(max_attempts)))) {
        fq_cli_error("--from must be UTF-8 text (or out of memory)");
        json_decref(head);
        return NULL;
    }
    char *text = json_dumps(head, JSON_COMPACT);
    json_decref(head);
    char *prefix = NULL;
    //  Without its closing brace, and with the name of the member to come
    if (text && asprintf(&prefix, "%.*s%s\"recipients\":", (int)strlen(text) - 1, text,
                         strcmp(text, "{}") == 0 ? "" : ",") < 0)
        prefix = NULL;
    free(text);
    if (!prefix)
        fq_cli_error("could not encode the request (out of memory)");
    return prefix;
}

//  Submits a CSV of recipients: checks the options and the files, then
//  streams the body. Returns the exit code, with answer filled when the
//  server answered 2xx (every failure is printed).
static int s_csv_submit(fq_cli_t *cli, const fq_cli_args_t *args, const char *const *headers,
                        fq_cli_answer_t *answer)
{
    const char *path = fq_cli_arg(args, "csv"), *tenant = fq_cli_arg(args, "tenant");
    const char *from = fq_cli_arg(args, "from"), *subject = fq_cli_arg(args, "subject");
    const char *body_path = fq_cli_arg(args, "body-file"), *send_at = fq_cli_arg(args, "send-at");
    const char *body = fq_cli_arg(args, "body");
    const char *priority = fq_cli_arg(args, "priority");
    const char *attempts = fq_cli_arg(args, "max-attempts");
    if (body && body_path) {
        fq_cli_error("submit --csv takes the body template from --body TEXT or from --body-file "
                     "PATH, not both");
        return FQ_CLI_EXIT_USAGE;
    }
    if (!from || !subject || (!body && !body_path)) {
        fq_cli_error("submit --csv needs --from ADDR, --subject TEXT and --body TEXT (or "
                     "--body-file PATH)");
        return FQ_CLI_EXIT_USAGE;
    }
    if (body_path && strcmp(path, "-") == 0 && strcmp(body_path, "-") == 0) {
        fq_cli_error("--csv and --body-file cannot both be standard input");
        return FQ_CLI_EXIT_USAGE;
    }
    //  "+1h" is turned into a time here, at each run: a retry with the
    //  same key would ask for another time, which is another request to the
    //  API (refused, 422), not the same one again
    if (send_at && send_at[0] == '+' && fq_cli_arg(args, "idempotency-key")) {
        fq_cli_error("--send-at %s with --idempotency-key: a retry would ask for another time "
                     "and be refused (422); give the time itself (RFC 3339 or Unix seconds)",
                     send_at);
        return FQ_CLI_EXIT_USAGE;
    }
    int64_t prio = 0, max_attempts = 0;
    json_t *when = NULL;
    if ((tenant && fq_cli_parse_tenant(tenant, "tenant")) ||
        (priority &&
         fq_cli_parse_int(priority, "--priority", FQ_PRIORITY_MIN, FQ_PRIORITY_MAX, &prio)) ||
        (attempts &&
         fq_cli_parse_int(attempts, "--max-attempts", 1, S_ATTEMPTS_MAX, &max_attempts)) ||
        (send_at && fq_cli_parse_time(send_at, "--send-at", (int64_t)time(NULL), &when)))
        return FQ_CLI_EXIT_USAGE;

    int rc = FQ_CLI_EXIT_USAGE;
    char *template = NULL, *prefix = NULL;
    size_t template_size = 0, json_size = 0;
    fq_cli_csv_t *csv = NULL;
    s_source_t source = {0};
    s_upload_t upload = {0};
    if (s_source_open(&source, path))
        goto done;
    if (body) {
        template = strdup(body);
        template_size = strlen(body);
        if (!template) {
            fq_cli_error("out of memory");
            goto done;
        }
    } else if (s_read_file(body_path, &template, &template_size))
        goto done;
    csv = s_csv_check(&source, &json_size);
    if (!csv)
        goto done;
    //  The body template must be text: fq_template checks UTF-8, not NUL
    //  (an argument cannot hold one)
    if (strlen(template) != template_size) {
        fq_cli_error("%s: NUL byte in the body template", s_name(body_path));
        goto done;
    }
    char what[S_WHAT_SIZE];
    snprintf(what, sizeof what, "the body template (%s)", body ? "--body" : s_name(body_path));
    if (s_check_template(subject, FQ_TEMPLATE_HEADER, "--subject", csv, s_name(path)) ||
        s_check_template(template, fq_cli_flag(args, "html") ? FQ_TEMPLATE_HTML : FQ_TEMPLATE_PLAIN,
                         what, csv, s_name(path)))
        goto done;
    size_t recipients = fq_cli_csv_recipients_count(csv);
    fq_cli_csv_destroy(&csv);
    prefix = s_csv_prefix(args, template, prio, max_attempts, when);
    if (!prefix)
        goto done;

    //  The second reading, sent as it is read
    if (s_source_rewind(&source) != 0) {
        fq_cli_error("could not read \"%s\" again: %s", s_name(path), strerror(errno));
        goto done;
    }
    csv = fq_cli_csv_new(s_source_read, &source);
    if (!csv) {
        fq_cli_error("out of memory");
        goto done;
    }
    upload = (s_upload_t){.prefix = prefix,
                          .prefix_size = strlen(prefix),
                          .csv = csv,
                          .size = strlen(prefix) + json_size + 1};
    //  Failures are told here, with what the server cannot know
    bool quiet = cli->quiet;
    cli->quiet = true;
    rc = fq_cli_call_stream(cli, "POST", "/v1/requests", s_upload_read, &upload, upload.size,
                            headers, answer);
    cli->quiet = quiet;
    if (upload.failed) {
        //  The server never got a whole body: nothing was submitted
        s_csv_failed(&source, &upload.error);
        if (!upload.error.errnum && !source.spool_errno)
            fq_cli_error("\"%s\" changed while it was sent; nothing was submitted", s_name(path));
        rc = FQ_CLI_EXIT_USAGE;
    } else if (upload.changed) {
        fq_cli_error("\"%s\" changed while it was sent; nothing was submitted", s_name(path));
        rc = FQ_CLI_EXIT_USAGE;
    } else if (answer->status == S_HTTP_TOO_LARGE) {
        char text[S_DESCRIBE_SIZE];
        fq_cli_answer_describe(answer, text, sizeof text);
        fq_cli_error("%s: %zu recipients make a request of %zu bytes, more than the server takes "
                     "(%s); split the file, or raise the server's http_body_max",
                     s_name(path), recipients, upload.size, text);
    } else if (rc != FQ_CLI_EXIT_OK && !quiet)
        fq_cli_report(cli, answer);
done:
    fq_cli_csv_destroy(&csv);
    s_source_close(&source);
    json_decref(when);
    free(template);
    free(prefix);
    return rc;
}

//  A request's status while fairqd has not checked all its recipients:
//  it checks each as it splits the request into messages, after the
//  submit was answered (api/API.md), and a paused request's split waits
static const char *const s_unchecked[] = {"accepted", "splitting", "paused", NULL};

//  What became of a submission, for people: "accepted request 42 (acme):
//  998 recipients, 2 rejected (...)". The submit's answer knows the
//  rejected recipients once fairqd has checked them: at once for a
//  request submitted before with the same key, else a moment later.
static void s_print_accepted(const json_t *request)
{
    long long id = (long long)json_integer_value(json_object_get(request, "id"));
    long long total = (long long)json_integer_value(json_object_get(request, "total"));
    long long rejected = (long long)json_integer_value(json_object_get(request, "rejected"));
    const char *status = json_string_value(json_object_get(request, "status"));
    bool checked = status != NULL;
    for (size_t i = 0; checked && s_unchecked[i]; i++)
        checked = strcmp(status, s_unchecked[i]) != 0;
    char tenant[FQ_CLI_VALUE_SIZE];
    fq_cli_format_value(tenant, sizeof tenant, json_object_get(request, "tenant"));
    printf("accepted request %lld (%s): ", id, tenant);
    if (rejected > 0)
        printf("%lld recipients, %lld rejected%s (\"%s rejects %lld\" shows them)\n",
               total - rejected, rejected, checked ? "" : " so far", FQ_CLI_PROGRAM, id);
    else if (checked)
        printf("%lld recipients, none rejected\n", total);
    else
        printf("%lld recipients (fairqd checks each as it splits the request: \"%s status "
               "%lld\" counts those rejected, \"%s rejects %lld\" shows them)\n",
               total, FQ_CLI_PROGRAM, id, FQ_CLI_PROGRAM, id);
}

static int s_submit(fq_cli_t *cli, const fq_cli_args_t *args)
{
    const char *csv = fq_cli_arg(args, "csv"), *key = fq_cli_arg(args, "idempotency-key");
    if (csv && args->npos > 0) {
        fq_cli_error("submit takes a JSON FILE or --csv PATH, not both");
        return FQ_CLI_EXIT_USAGE;
    }
    if (!csv && args->npos == 0) {
        fq_cli_error("submit needs a JSON FILE (\"-\": standard input) or --csv PATH");
        return FQ_CLI_EXIT_USAGE;
    }
    for (size_t i = 0; !csv && s_csv_only[i]; i++)
        if (fq_cli_flag(args, s_csv_only[i])) {
            fq_cli_error("--%s goes with --csv PATH (a JSON file holds the whole request)",
                         s_csv_only[i]);
            return FQ_CLI_EXIT_USAGE;
        }
    if (key && fq_cli_parse_idempotency_key(key))
        return FQ_CLI_EXIT_USAGE;

    char header[S_HEADER_SIZE];
    const char *headers[] = {key ? header : NULL, NULL};
    if (key)
        snprintf(header, sizeof header, "Idempotency-Key: %s", key);
    fq_cli_answer_t answer = {0};
    int rc;
    if (csv)
        rc = s_csv_submit(cli, args, headers, &answer);
    else {
        const char *path = args->pos[0];
        char *text = NULL;
        size_t size = 0;
        if (s_read_file(path, &text, &size))
            return FQ_CLI_EXIT_USAGE;
        //  Checked, then sent as it is (the user's bytes, not our rewrite)
        json_error_t error;
        json_t *json = json_loadb(text, size, JSON_REJECT_DUPLICATES, &error);
        if (!json || !json_is_object(json)) {
            if (json)
                fq_cli_error("%s: not a JSON object (the body of POST /v1/requests)", s_name(path));
            else
                fq_cli_error("%s:%d:%d: %s", s_name(path), error.line, error.column, error.text);
            json_decref(json);
            free(text);
            return FQ_CLI_EXIT_USAGE;
        }
        json_decref(json);
        rc = fq_cli_call_raw(cli, "POST", "/v1/requests", text, size, headers, &answer);
        free(text);
    }
    json_int_t id = json_integer_value(json_object_get(answer.json, "id"));
    if (rc == FQ_CLI_EXIT_OK && id <= 0) {
        fq_cli_error("the server accepted the request without saying its id");
        rc = FQ_CLI_EXIT_SERVER;
    }
    bool watch = rc == FQ_CLI_EXIT_OK && fq_cli_flag(args, "watch");
    if (rc == FQ_CLI_EXIT_OK && !watch) {
        if (cli->json)
            fq_cli_print_raw(&answer);
        else
            s_print_accepted(answer.json);
    }
    fq_cli_answer_reset(&answer);
    if (watch)
        rc = fq_cli_watch(cli, id, S_WATCH_INTERVAL_S);
    return rc;
}

const fq_cli_command_t fq_cli_cmd_submit = {
    .name = "submit",
    .usage = "FILE.json | --csv PATH --from ADDR --subject TEXT (--body TEXT | --body-file PATH) "
             "[--tenant NAME] [--html] [--send-at TIME] [--priority N] [--max-attempts N] "
             "[--idempotency-key KEY] [--watch]",
    .summary = "submit a request: a JSON body, or a CSV of recipients",
    .description =
        "FILE.json is the body of POST /v1/requests (api/API.md), sent as it is; \"-\" reads\n"
        "standard input. With --csv PATH, the first row names the fields; the column \"to\"\n"
        "(else \"email\") is the address, and every column, that one too, is a template field\n"
        "({{name}}). RFC 4180: quote fields that hold commas, quotes (doubled) or line\n"
        "breaks; UTF-8; empty lines are skipped; a record holds at most 1 MiB. The body\n"
        "template is --body TEXT or --body-file PATH, one of them. Templates are checked\n"
        "against the columns before anything is sent. A CSV of any size is read and sent in\n"
        "pieces, in little memory.\n"
        "\n"
        "Prints \"accepted request ID (TENANT): N recipients\", and how many were rejected\n"
        "once fairqd has checked them (it does as it splits the request, a moment after the\n"
        "submit: \"fairq status ID\" counts them then, \"fairq rejects ID\" shows them).",
    .options = s_submit_options,
    .min_args = 0,
    .max_args = 1,
    .run = s_submit};
