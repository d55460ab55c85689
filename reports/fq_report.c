/*  fq_report.c — DSN and ARF reports from raw messages (see fq_report.h).

    GMime builds the MIME tree, decodes each part's transfer encoding and
    parses the returned message; this file finds the report's parts in
    that tree and reads their fields. A message/delivery-status or
    message/feedback-report part is, to GMime, a leaf with an opaque body:
    its content is header blocks separated by blank lines (RFC 3464 2.1:
    the per-message fields, then one block per recipient; RFC 5965 3.1:
    one block), which s_fields reads, after GMime decoded the part.
*/
#include "fq_report.h"
#include <ctype.h>
#include <gmime/gmime.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

//  How deep the report's multipart/report is looked for: itself, or a
//  part of a part (an MTA wraps none deeper); GMime bounds the tree's own
//  depth, this bounds the search.
#define S_SEARCH_DEPTH 3

//  Most of a status part or a headers part that is read, decoded: a
//  delivery-status of FQ_REPORT_RECIPIENTS_MAX recipients is a few
//  hundred bytes each; the rest of a longer part is not read.
#define S_PART_MAX (256 * 1024)

//  Room for a field's name (the longest of RFC 3464 and 5965 is 26
//  bytes: "X-Actual-Recipient" and longer extension fields are cut).
#define S_NAME_SIZE 64

//  Room for an address: RFC 5321's 64 + 1 + 255, and the NUL.
#define S_ADDRESS_SIZE 321

//  ---------------------------------------------------------------------
//  Errors and strings

static void s_error(char *error, size_t error_size, const char *format, ...)
    __attribute__((format(printf, 3, 4)));

static void s_error(char *error, size_t error_size, const char *format, ...)
{
    if (!error || error_size == 0)
        return;
    va_list args;
    va_start(args, format);
    vsnprintf(error, error_size, format, args);
    va_end(args);
}

static void s_lower(char *text)
{
    for (; text && *text; text++)
        *text = (char)tolower((unsigned char)*text);
}

//  A copy of text, cut to FQ_REPORT_FIELD_MAX bytes; NULL for NULL or "".
static char *s_copy(const char *text)
{
    if (!text || !*text)
        return NULL;
    return strndup(text, FQ_REPORT_FIELD_MAX);
}

const char *fq_report_kind_name(fq_report_kind_t kind)
{
    return kind == FQ_REPORT_ARF ? "arf" : "dsn";
}

size_t fq_report_address(const char *field, char *out, size_t out_size)
{
    if (out_size == 0)
        return 0;
    out[0] = 0;
    if (!field)
        return 0;
    //  The address type ("rfc822", "utf-8": RFC 3464 2.3.2, RFC 6533) is
    //  a token before the first ';'
    const char *at = field;
    size_t type = strspn(at, " \t");
    size_t token =
        strspn(at + type, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-");
    if (token > 0 && at[type + token] == ';')
        at += type + token + 1;
    at += strspn(at, " \t");
    size_t length = strlen(at);
    while (length && (at[length - 1] == ' ' || at[length - 1] == '\t'))
        length--;
    if (length >= 2 && at[0] == '<' && at[length - 1] == '>')
        at++, length -= 2;
    if (length >= out_size)
        length = out_size - 1;
    memcpy(out, at, length);
    out[length] = 0;
    return length;
}

int fq_report_fairq_id(const char *message_id, int64_t *id)
{
    static const char prefix[] = "fairq.";
    if (!message_id)
        return -1;
    const char *at = message_id + strspn(message_id, " \t");
    bool bracket = *at == '<';
    at += bracket;
    if (strncmp(at, prefix, sizeof prefix - 1) != 0)
        return -1;
    at += sizeof prefix - 1;
    int64_t value = 0;
    size_t digits = 0;
    //  Ids are positive 64-bit integers: at most 19 digits, no sign
    for (; *at >= '0' && *at <= '9'; at++, digits++) {
        if (value > (INT64_MAX - (*at - '0')) / 10)
            return -1;
        value = value * 10 + (*at - '0');
    }
    if (digits == 0 || value <= 0 || *at != '@' || at[1] == 0 || at[1] == '>')
        return -1;
    const char *end = strchr(at, '>');
    if (bracket != (end != NULL) || (end && end[1] && strspn(end + 1, " \t") != strlen(end + 1)))
        return -1;
    *id = value;
    return 0;
}

//  ---------------------------------------------------------------------
//  Header blocks: "Name: value" lines, folded lines continued by a space
//  or a tab, blocks ended by a blank line

//  Called for each field: its block (0 first), its name and its value
//  (unfolded, trimmed, cut to FQ_REPORT_FIELD_MAX). Returns 0 to go on.
typedef int(s_field_fn)(void *arg, int block, const char *name, const char *value);

typedef struct {
    char name[S_NAME_SIZE];
    char value[FQ_REPORT_FIELD_MAX + 1];
    size_t length;
    bool open; //  A field is being read
} s_field_t;

static int s_field_end(s_field_t *field, int block, s_field_fn *fn, void *arg)
{
    if (!field->open)
        return 0;
    field->open = false;
    while (field->length &&
           (field->value[field->length - 1] == ' ' || field->value[field->length - 1] == '\t'))
        field->length--;
    field->value[field->length] = 0;
    return fn(arg, block, field->name, field->value);
}

static void s_field_add(s_field_t *field, const char *text, size_t length)
{
    size_t room = FQ_REPORT_FIELD_MAX - field->length;
    if (length > room)
        length = room;
    memcpy(field->value + field->length, text, length);
    field->length += length;
}

//  How many spaces and tabs start the size bytes at text: the parts'
//  contents are not NUL-terminated, so strspn may not read them.
static size_t s_blanks(const char *text, size_t size)
{
    size_t n = 0;
    while (n < size && (text[n] == ' ' || text[n] == '\t'))
        n++;
    return n;
}

//  Reads the header blocks of size bytes at text. Returns 0, or fn's
//  first other answer.
static int s_fields(const char *text, size_t size, s_field_fn *fn, void *arg)
{
    s_field_t field = {.open = false};
    int block = 0, rc = 0;
    bool in_block = false;
    for (size_t at = 0; at < size && rc == 0;) {
        const char *line = text + at;
        const char *newline = memchr(line, '\n', size - at);
        size_t length = newline ? (size_t)(newline - line) : size - at;
        at += length + (newline != NULL);
        if (length && line[length - 1] == '\r')
            length--;
        if (length == 0 || s_blanks(line, length) >= length) {
            //  A blank line ends the block (several count as one)
            rc = s_field_end(&field, block, fn, arg);
            if (in_block)
                block++;
            in_block = false;
            continue;
        }
        in_block = true;
        if ((line[0] == ' ' || line[0] == '\t') && field.open) {
            //  A folded line: its whitespace stands for one space
            size_t skip = s_blanks(line, length);
            s_field_add(&field, " ", 1);
            s_field_add(&field, line + skip, length - skip);
            continue;
        }
        rc = s_field_end(&field, block, fn, arg);
        const char *colon = memchr(line, ':', length);
        size_t name_length = colon ? (size_t)(colon - line) : 0;
        while (name_length && (line[name_length - 1] == ' ' || line[name_length - 1] == '\t'))
            name_length--;
        //  A line that is no field (no colon, or an empty name) is skipped
        if (!colon || name_length == 0 || rc)
            continue;
        if (name_length >= S_NAME_SIZE)
            name_length = S_NAME_SIZE - 1;
        memcpy(field.name, line, name_length);
        field.name[name_length] = 0;
        field.length = 0;
        field.open = true;
        const char *value = colon + 1;
        size_t value_length = length - (size_t)(value - line);
        size_t skip = s_blanks(value, value_length);
        s_field_add(&field, value + skip, value_length - skip);
    }
    if (rc == 0)
        rc = s_field_end(&field, block, fn, arg);
    return rc;
}

//  ---------------------------------------------------------------------
//  GMime

static pthread_once_t s_gmime_once = PTHREAD_ONCE_INIT;

//  GMime's tables (charsets, types) are set up once for the process and
//  kept: g_mime_init is not safe to call from two threads, the API's pool
//  parses from several.
static void s_gmime_init(void)
{
    g_mime_init();
}

//  The decoded content of a leaf part, at most S_PART_MAX bytes, as a
//  byte array the caller frees with g_byte_array_unref; NULL when it has
//  none. A message/* part GMime parsed as a message is written out whole.
static GByteArray *s_content(GMimeObject *part)
{
    GMimeStream *stream = g_mime_stream_mem_new();
    if (!stream)
        return NULL;
    if (GMIME_IS_PART(part)) {
        GMimeDataWrapper *content = g_mime_part_get_content(GMIME_PART(part));
        if (content)
            g_mime_data_wrapper_write_to_stream(content, stream);
    } else if (GMIME_IS_MESSAGE_PART(part)) {
        GMimeMessage *message = g_mime_message_part_get_message(GMIME_MESSAGE_PART(part));
        if (message)
            g_mime_object_write_to_stream(GMIME_OBJECT(message), NULL, stream);
    }
    GByteArray *bytes = g_mime_stream_mem_get_byte_array(GMIME_STREAM_MEM(stream));
    GByteArray *copy = NULL;
    if (bytes && bytes->len > 0) {
        copy = g_byte_array_new();
        g_byte_array_append(copy, bytes->data, bytes->len < S_PART_MAX ? bytes->len : S_PART_MAX);
    }
    g_object_unref(stream);
    return copy;
}

static bool s_is(GMimeObject *part, const char *type, const char *subtype)
{
    GMimeContentType *content_type = part ? g_mime_object_get_content_type(part) : NULL;
    return content_type && g_mime_content_type_is_type(content_type, type, subtype);
}

//  The first multipart/report of the tree at part, depth-first, within
//  depth levels; NULL when there is none.
static GMimeMultipart *s_find_report(GMimeObject *part, int depth)
{
    if (!part || depth < 0 || !GMIME_IS_MULTIPART(part))
        return NULL;
    if (s_is(part, "multipart", "report"))
        return GMIME_MULTIPART(part);
    GMimeMultipart *multipart = GMIME_MULTIPART(part);
    for (int i = 0; i < g_mime_multipart_get_count(multipart); i++) {
        GMimeMultipart *found = s_find_report(g_mime_multipart_get_part(multipart, i), depth - 1);
        if (found)
            return found;
    }
    return NULL;
}

//  ---------------------------------------------------------------------
//  The report

typedef struct {
    fq_report_t *report;
    int block; //  The block of the recipient being read, -1: none yet
    bool nomem;
} s_reader_t;

void fq_report_destroy(fq_report_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    fq_report_t *self = *self_p;
    for (size_t i = 0; i < self->count; i++) {
        free(self->recipients[i].recipient);
        free(self->recipients[i].original_recipient);
        free(self->recipients[i].action);
        free(self->recipients[i].status);
        free(self->recipients[i].diagnostic);
    }
    free(self->recipients);
    free(self->message_id);
    free(self->feedback_type);
    free(self);
    *self_p = NULL;
}

//  A new recipient at the end of the report; NULL at FQ_REPORT_RECIPIENTS_MAX
//  (the rest are not read) or when memory runs out (nomem set).
static fq_report_recipient_t *s_recipient_new(s_reader_t *reader)
{
    fq_report_t *report = reader->report;
    if (report->count >= FQ_REPORT_RECIPIENTS_MAX)
        return NULL;
    fq_report_recipient_t *grown =
        realloc(report->recipients, (report->count + 1) * sizeof *report->recipients);
    if (!grown) {
        reader->nomem = true;
        return NULL;
    }
    report->recipients = grown;
    fq_report_recipient_t *recipient = &grown[report->count++];
    memset(recipient, 0, sizeof *recipient);
    return recipient;
}

//  Sets *slot to a copy of value, once: the first of a field given twice
//  holds.
static void s_set(s_reader_t *reader, char **slot, const char *value)
{
    if (*slot || !value || !*value)
        return;
    *slot = s_copy(value);
    if (!*slot)
        reader->nomem = true;
}

static void s_set_address(s_reader_t *reader, char **slot, const char *value)
{
    char address[S_ADDRESS_SIZE];
    if (fq_report_address(value, address, sizeof address) > 0)
        s_set(reader, slot, address);
}

//  A field of a message/delivery-status part. Each block that names a
//  recipient is one; the per-message block (the first) names none.
static int s_dsn_field(void *arg, int block, const char *name, const char *value)
{
    s_reader_t *reader = arg;
    fq_report_t *report = reader->report;
    bool names =
        strcasecmp(name, "Final-Recipient") == 0 || strcasecmp(name, "Original-Recipient") == 0;
    if (block != reader->block && names) {
        if (!s_recipient_new(reader))
            return reader->nomem ? -1 : 0;
        reader->block = block;
    }
    if (block != reader->block || report->count == 0)
        return 0;
    fq_report_recipient_t *recipient = &report->recipients[report->count - 1];
    if (strcasecmp(name, "Final-Recipient") == 0)
        s_set_address(reader, &recipient->recipient, value);
    else if (strcasecmp(name, "Original-Recipient") == 0)
        s_set_address(reader, &recipient->original_recipient, value);
    else if (strcasecmp(name, "Action") == 0) {
        //  "failed (bad destination mailbox address)": a comment may follow
        char action[S_NAME_SIZE];
        snprintf(action, sizeof action, "%.*s", (int)strcspn(value, " \t("), value);
        s_lower(action);
        s_set(reader, &recipient->action, action);
    } else if (strcasecmp(name, "Status") == 0) {
        char status[S_NAME_SIZE];
        snprintf(status, sizeof status, "%.*s", (int)strcspn(value, " \t("), value);
        s_set(reader, &recipient->status, status);
    } else if (strcasecmp(name, "Diagnostic-Code") == 0)
        s_set(reader, &recipient->diagnostic, value);
    return reader->nomem ? -1 : 0;
}

//  A field of a message/feedback-report part: one block.
static int s_arf_field(void *arg, int block, const char *name, const char *value)
{
    s_reader_t *reader = arg;
    fq_report_t *report = reader->report;
    if (block != 0)
        return 0;
    if (strcasecmp(name, "Feedback-Type") == 0) {
        char type[S_NAME_SIZE];
        snprintf(type, sizeof type, "%.*s", (int)strcspn(value, " \t("), value);
        s_lower(type);
        s_set(reader, &report->feedback_type, type);
    } else if (strcasecmp(name, "Original-Rcpt-To") == 0) {
        fq_report_recipient_t *recipient = s_recipient_new(reader);
        if (recipient)
            s_set_address(reader, &recipient->recipient, value);
    }
    return reader->nomem ? -1 : 0;
}

//  What the returned headers say: Message-ID, and To (for an ARF report
//  without Original-Rcpt-To).
typedef struct {
    char *message_id; //  As written
    char *to;
} s_returned_t;

static int s_returned_field(void *arg, int block, const char *name, const char *value)
{
    s_returned_t *returned = arg;
    if (block != 0)
        return 1; //  The headers end at the first blank line
    if (strcasecmp(name, "Message-ID") == 0 && !returned->message_id)
        returned->message_id = strdup(value);
    else if (strcasecmp(name, "To") == 0 && !returned->to)
        returned->to = strdup(value);
    return 0;
}

//  The Message-ID of the returned message (message/rfc822, message/global
//  or text/rfc822-headers) into the report, and its To's mailboxes as
//  recipients when want_to and the report named none.
static void s_read_returned(s_reader_t *reader, GMimeObject *part, bool want_to)
{
    GByteArray *content = s_content(part);
    if (!content)
        return;
    s_returned_t returned = {0};
    s_fields((const char *)content->data, content->len, s_returned_field, &returned);
    g_byte_array_unref(content);
    if (returned.message_id) {
        //  GMime's Message-ID rule: comments, folding and brackets dropped
        char *id = g_mime_utils_decode_message_id(returned.message_id);
        if (id && *id)
            s_set(reader, &reader->report->message_id, id);
        g_free(id);
    }
    if (want_to && returned.to && reader->report->count == 0) {
        InternetAddressList *list = internet_address_list_parse(NULL, returned.to);
        int count = list ? internet_address_list_length(list) : 0;
        for (int i = 0; i < count && !reader->nomem; i++) {
            InternetAddress *address = internet_address_list_get_address(list, i);
            if (!INTERNET_ADDRESS_IS_MAILBOX(address))
                continue;
            const char *addr = internet_address_mailbox_get_addr(INTERNET_ADDRESS_MAILBOX(address));
            fq_report_recipient_t *recipient = addr && *addr ? s_recipient_new(reader) : NULL;
            if (recipient)
                s_set_address(reader, &recipient->recipient, addr);
        }
        if (list)
            g_object_unref(list);
    }
    free(returned.message_id);
    free(returned.to);
}

static bool s_is_returned(GMimeObject *part)
{
    return s_is(part, "message", "rfc822") || s_is(part, "message", "global") ||
           s_is(part, "text", "rfc822-headers") || s_is(part, "message", "global-headers");
}

//  Reads the report's parts (RFC 6522: a human-readable part, the
//  machine-readable one, and the returned message or its headers).
//  Returns 0, or -1 with error set.
static int s_read(s_reader_t *reader, GMimeMultipart *multipart, char *error, size_t error_size)
{
    fq_report_t *report = reader->report;
    GMimeContentType *content_type = g_mime_object_get_content_type(GMIME_OBJECT(multipart));
    const char *type = g_mime_content_type_get_parameter(content_type, "report-type");
    const char *status_type;
    s_field_fn *reader_fn;
    //  RFC 6533's message/global-delivery-status is a DSN in UTF-8
    if (type && strcasecmp(type, "delivery-status") == 0) {
        report->kind = FQ_REPORT_DSN;
        status_type = "delivery-status";
        reader_fn = s_dsn_field;
    } else if (type && strcasecmp(type, "global-delivery-status") == 0) {
        report->kind = FQ_REPORT_DSN;
        status_type = "global-delivery-status";
        reader_fn = s_dsn_field;
    } else if (type && strcasecmp(type, "feedback-report") == 0) {
        report->kind = FQ_REPORT_ARF;
        status_type = "feedback-report";
        reader_fn = s_arf_field;
    } else {
        s_error(error, error_size,
                "not a report fairq reads: multipart/report with report-type \"%.40s\" "
                "(delivery-status or feedback-report are)",
                type ? type : "");
        return -1;
    }
    GMimeObject *status = NULL, *returned = NULL;
    for (int i = 0; i < g_mime_multipart_get_count(multipart); i++) {
        GMimeObject *part = g_mime_multipart_get_part(multipart, i);
        if (!status && s_is(part, "message", status_type))
            status = part;
        else if (!returned && s_is_returned(part))
            returned = part;
    }
    if (!status) {
        s_error(error, error_size, "malformed %s report: it has no message/%s part",
                report->kind == FQ_REPORT_DSN ? "delivery status" : "feedback", status_type);
        return -1;
    }
    GByteArray *content = s_content(status);
    if (content)
        s_fields((const char *)content->data, content->len, reader_fn, reader);
    if (content)
        g_byte_array_unref(content);
    if (!reader->nomem && returned)
        s_read_returned(reader, returned, report->kind == FQ_REPORT_ARF);
    if (reader->nomem) {
        s_error(error, error_size, "out of memory");
        return -1;
    }
    if (report->kind == FQ_REPORT_DSN && report->count == 0) {
        s_error(error, error_size,
                "malformed delivery status report: no recipient (no Final-Recipient field)");
        return -1;
    }
    if (report->kind == FQ_REPORT_ARF && !report->feedback_type) {
        s_error(error, error_size, "malformed feedback report: no Feedback-Type field");
        return -1;
    }
    return 0;
}

fq_report_t *fq_report_parse(const char *data, size_t size, char *error, size_t error_size)
{
    s_error(error, error_size, "%s", "");
    if (!data || size == 0) {
        s_error(error, error_size, "not a report: the message is empty");
        return NULL;
    }
    if (size > FQ_REPORT_SIZE_MAX) {
        s_error(error, error_size, "report too large: %zu bytes, at most %d", size,
                FQ_REPORT_SIZE_MAX);
        return NULL;
    }
    pthread_once(&s_gmime_once, s_gmime_init);
    fq_report_t *report = calloc(1, sizeof *report);
    if (!report) {
        s_error(error, error_size, "out of memory");
        return NULL;
    }
    //  The stream copies the data; the parser reads it as one message
    GMimeStream *stream = g_mime_stream_mem_new_with_buffer(data, size);
    GMimeParser *parser = stream ? g_mime_parser_new_with_stream(stream) : NULL;
    GMimeMessage *message = parser ? g_mime_parser_construct_message(parser, NULL) : NULL;
    GMimeObject *top = message ? g_mime_message_get_mime_part(message) : NULL;
    int rc = -1;
    if (!message)
        s_error(error, error_size, "not a report: not a MIME message (no header could be read)");
    else if (!top)
        s_error(error, error_size, "not a report: the message has no body");
    else {
        GMimeMultipart *multipart = s_find_report(top, S_SEARCH_DEPTH);
        GMimeContentType *content_type = g_mime_object_get_content_type(top);
        if (multipart) {
            s_reader_t reader = {.report = report, .block = -1};
            rc = s_read(&reader, multipart, error, error_size);
        } else {
            char *mime_type = content_type ? g_mime_content_type_get_mime_type(content_type) : NULL;
            s_error(error, error_size, "not a report: the message is %.60s, not multipart/report",
                    mime_type ? mime_type : "of no type");
            g_free(mime_type);
        }
    }
    if (message)
        g_object_unref(message);
    if (parser)
        g_object_unref(parser);
    if (stream)
        g_object_unref(stream);
    if (rc != 0)
        fq_report_destroy(&report);
    return report;
}
