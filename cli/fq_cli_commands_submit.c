/*  fq_cli_commands_submit.c — submit: a JSON file sent as it is, or a CSV
    of recipients (fq_cli_csv.h) with the message given by options.

    A file is checked here before anything is sent, so that a mistake in
    it is a usage error (exit 2) that names the file and line, rather than
    a 400 about a body the user never saw: the JSON's syntax; the CSV's
    structure, and the templates against its columns (with fairqd's own
    template parser, fq_template.h).
*/
#include "fq_cli_args.h"
#include "fq_cli_commands.h"
#include "fq_cli_csv.h"
#include "fq_template.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

//  API.md: priority -1000..1000, max_attempts 1..100
#define S_PRIORITY_MIN     -1000
#define S_PRIORITY_MAX     1000
#define S_ATTEMPTS_MAX     100
#define S_WATCH_INTERVAL_S 1.0

//  Reading a file: the first read's size, doubled as it fills
#define S_READ_CHUNK 65536

//  "Idempotency-Key: " and 255 bytes
#define S_HEADER_SIZE 300

//  Room for "the body template (PATH)"
#define S_WHAT_SIZE 1024

//  What a file read from standard input is called in messages
#define S_STDIN_NAME "<stdin>"

//  The whole of path ("-": standard input) into *data (NUL-terminated,
//  caller frees) and *size. Returns 0, or FQ_CLI_EXIT_USAGE (printed).
static int s_read_file(const char *path, char **data, size_t *size)
{
    bool stdin_ = strcmp(path, "-") == 0;
    FILE *file = stdin_ ? stdin : fopen(path, "rb");
    if (!file) {
        fq_cli_error("could not open \"%s\": %s", path, strerror(errno));
        return FQ_CLI_EXIT_USAGE;
    }
    size_t capacity = S_READ_CHUNK, len = 0;
    char *buffer = malloc(capacity + 1);
    bool ok = buffer != NULL;
    while (ok) {
        if (len == capacity) {
            char *grown = realloc(buffer, capacity * 2 + 1);
            if (!grown) {
                ok = false;
                break;
            }
            buffer = grown;
            capacity *= 2;
        }
        size_t n = fread(buffer + len, 1, capacity - len, file);
        len += n;
        if (n == 0)
            break;
    }
    int error = ferror(file) ? errno : ok ? 0 : ENOMEM;
    if (!stdin_)
        fclose(file);
    if (error) {
        fq_cli_error("could not read \"%s\": %s", stdin_ ? S_STDIN_NAME : path, strerror(error));
        free(buffer);
        return FQ_CLI_EXIT_USAGE;
    }
    buffer[len] = 0;
    *data = buffer;
    *size = len;
    return 0;
}

static const char *s_name(const char *path)
{
    return strcmp(path, "-") == 0 ? S_STDIN_NAME : path;
}

static const fq_cli_option_t s_submit_options[] = {
    {"csv", "FILE", "recipients from a CSV file (\"-\": standard input) instead of a JSON body"},
    {"tenant", "T", "--csv: the tenant (needed with an admin token)"},
    {"from", "ADDR", "--csv: the sender address"},
    {"subject", "S", "--csv: the subject template"},
    {"body-file", "FILE", "--csv: the body template, from a file"},
    {"html", NULL, "--csv: the body is HTML ({{field}} is HTML-escaped)"},
    {"send-at", "TIME", "--csv: send from TIME: RFC 3339 with a zone, Unix seconds, or +N[smhd]"},
    {"priority", "N", "--csv: priority within the tenant (-1000..1000, default 0)"},
    {"max-attempts", "N", "--csv: attempts per message before it is dead (1..100, default 5)"},
    {"idempotency-key", "K", "submit at most once: the same key answers the first request again"},
    {"watch", NULL, "then follow the request as status --watch does (and exit as it does)"},
    {NULL, NULL, NULL}};

//  The options that only make sense with --csv
static const char *const s_csv_only[] = {"tenant",  "from",     "subject",      "body-file", "html",
                                         "send-at", "priority", "max-attempts", NULL};

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

//  The body of a CSV submission (new reference), or NULL (printed).
static json_t *s_csv_body(const fq_cli_args_t *args)
{
    const char *path = fq_cli_arg(args, "csv"), *tenant = fq_cli_arg(args, "tenant");
    const char *from = fq_cli_arg(args, "from"), *subject = fq_cli_arg(args, "subject");
    const char *body_path = fq_cli_arg(args, "body-file"), *send_at = fq_cli_arg(args, "send-at");
    const char *priority = fq_cli_arg(args, "priority");
    const char *attempts = fq_cli_arg(args, "max-attempts");
    if (!from || !subject || !body_path) {
        fq_cli_error("submit --csv needs --from, --subject and --body-file");
        return NULL;
    }
    if (strcmp(path, "-") == 0 && strcmp(body_path, "-") == 0) {
        fq_cli_error("--csv and --body-file cannot both be standard input");
        return NULL;
    }
    int64_t prio = 0, max_attempts = 0;
    json_t *when = NULL;
    if ((tenant && fq_cli_parse_tenant(tenant, "tenant")) ||
        (priority &&
         fq_cli_parse_int(priority, "--priority", S_PRIORITY_MIN, S_PRIORITY_MAX, &prio)) ||
        (attempts &&
         fq_cli_parse_int(attempts, "--max-attempts", 1, S_ATTEMPTS_MAX, &max_attempts)) ||
        (send_at && fq_cli_parse_time(send_at, "--send-at", (int64_t)time(NULL), &when)))
        return NULL;
    json_t *body = json_object();
    json_t *recipients = NULL;
    char *text = NULL, *template = NULL;
    size_t size = 0, template_size = 0;
    fq_cli_csv_t *csv = NULL;
    fq_cli_csv_error_t error;
    if (s_read_file(path, &text, &size) || s_read_file(body_path, &template, &template_size))
        goto fail;
    csv = fq_cli_csv_parse(text, size, &error);
    recipients = csv ? fq_cli_csv_recipients(csv, &error) : NULL;
    if (!recipients) {
        fq_cli_error("%s:%zu: %s", s_name(path), error.line, error.message);
        goto fail;
    }
    //  The body template must be text: fq_template checks UTF-8, not NUL
    if (strlen(template) != template_size) {
        fq_cli_error("%s: NUL byte in the body template", s_name(body_path));
        goto fail;
    }
    char what[S_WHAT_SIZE];
    snprintf(what, sizeof what, "the body template (%s)", s_name(body_path));
    if (s_check_template(subject, FQ_TEMPLATE_HEADER, "--subject", csv, s_name(path)) ||
        s_check_template(template, fq_cli_flag(args, "html") ? FQ_TEMPLATE_HTML : FQ_TEMPLATE_PLAIN,
                         what, csv, s_name(path)))
        goto fail;
    //  recipients and when are lent to body (json_object_set), and let go
    //  of below whatever happens
    if ((tenant && json_object_set_new(body, "tenant", json_string(tenant))) ||
        json_object_set_new(body, "from", json_string(from)) ||
        json_object_set_new(body, "subject", json_string(subject)) ||
        json_object_set_new(body, "body", json_string(template)) ||
        (fq_cli_flag(args, "html") && json_object_set_new(body, "html", json_true())) ||
        json_object_set(body, "recipients", recipients) ||
        (when && json_object_set(body, "send_at", when)) ||
        (priority && json_object_set_new(body, "priority", json_integer(prio))) ||
        (attempts && json_object_set_new(body, "max_attempts", json_integer(max_attempts)))) {
        fq_cli_error("--from must be UTF-8 text (or out of memory)");
        goto fail;
    }
    json_decref(recipients);
    json_decref(when);
    free(text);
    free(template);
    fq_cli_csv_destroy(&csv);
    return body;
fail:
    json_decref(recipients);
    json_decref(when);
    json_decref(body);
    free(text);
    free(template);
    fq_cli_csv_destroy(&csv);
    return NULL;
}

static int s_submit(fq_cli_t *cli, const fq_cli_args_t *args)
{
    const char *csv = fq_cli_arg(args, "csv"), *key = fq_cli_arg(args, "idempotency-key");
    if (csv && args->npos > 0) {
        fq_cli_error("submit takes a JSON FILE or --csv FILE, not both");
        return FQ_CLI_EXIT_USAGE;
    }
    if (!csv && args->npos == 0) {
        fq_cli_error("submit needs a JSON FILE (\"-\": standard input) or --csv FILE");
        return FQ_CLI_EXIT_USAGE;
    }
    for (size_t i = 0; !csv && s_csv_only[i]; i++)
        if (fq_cli_flag(args, s_csv_only[i])) {
            fq_cli_error("--%s goes with --csv (a JSON file holds the whole request)",
                         s_csv_only[i]);
            return FQ_CLI_EXIT_USAGE;
        }
    if (key && fq_cli_parse_idempotency_key(key))
        return FQ_CLI_EXIT_USAGE;

    char *text = NULL;
    size_t size = 0;
    if (csv) {
        json_t *body = s_csv_body(args);
        text = body ? json_dumps(body, JSON_COMPACT) : NULL;
        if (body && !text)
            fq_cli_error("could not encode the request (out of memory)");
        json_decref(body);
        if (!text)
            return FQ_CLI_EXIT_USAGE;
        size = strlen(text);
    } else {
        const char *path = args->pos[0];
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
    }
    char header[S_HEADER_SIZE];
    const char *headers[] = {key ? header : NULL, NULL};
    if (key)
        snprintf(header, sizeof header, "Idempotency-Key: %s", key);
    fq_cli_answer_t answer = {0};
    int rc = fq_cli_call_raw(cli, "POST", "/v1/requests", text, size, headers, &answer);
    free(text);
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
            fq_cli_print_request_line(answer.json);
    }
    fq_cli_answer_reset(&answer);
    if (watch)
        rc = fq_cli_watch(cli, id, S_WATCH_INTERVAL_S);
    return rc;
}

const fq_cli_command_t fq_cli_cmd_submit = {
    .name = "submit",
    .usage = "FILE.json | --csv FILE.csv --from ADDR --subject S --body-file FILE [options]",
    .summary = "submit a request: a JSON body, or a CSV of recipients",
    .description =
        "FILE.json is the body of POST /v1/requests (api/API.md), sent as it is; \"-\" reads\n"
        "standard input. With --csv, the first row names the fields; the column \"to\" (else\n"
        "\"email\") is the address, and every column, that one too, is a template field\n"
        "({{name}}). RFC 4180: quote fields that hold commas, quotes (doubled) or line\n"
        "breaks; UTF-8; empty lines are skipped. Templates are checked against the columns\n"
        "before anything is sent.",
    .options = s_submit_options,
    .min_args = 0,
    .max_args = 1,
    .run = s_submit};
