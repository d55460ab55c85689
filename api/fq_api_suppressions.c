/*  fq_api_suppressions.c — suppression lists (api/API.md, "Suppression
    lists"): a tenant's under /v1/tenants/{name}/suppressions, the
    operator's global one under /v1/suppressions (admin). Entries are read
    a page at a time in address order, one by one, added (reason manual),
    removed, and imported from CSV text; the store holds the rules
    (fq_store_suppressions.h: the address rule, lowercasing, the detail's
    limits) and answers a refusal in its own words, which are fairq's.

    A tenant's token manages its own tenant's list only: another tenant's
    answers 404 as a tenant that does not exist, as everywhere. The global
    routes are admin routes (fq_http.c answers 403 to a tenant's token).

    An import is CSV (RFC 4180: fields between commas, a field in double
    quotes may hold commas, line breaks and "" for a quote). Its first
    line is a header when one of its fields is "address" or "email" (in
    any case): that column holds the addresses, the others are not read.
    Otherwise every line's first field is an address. Blank lines are
    skipped and spaces around a field dropped. Each address is checked by
    the recipients' rule: a line that is not one is refused alone, listed
    with its line number and why, and the others are added, all in one
    transaction of the store. The body is read where it lies, never
    copied: an address at a time.
*/
#include "fq_api_internal.h"
#include "fq_limits.h"
#include "fq_recipients.h"
#include "fq_store_suppressions.h"
#include "fq_utf8.h"
#include <stdlib.h>
#include <string.h>
#include <strings.h>

//  An import lists at most this many refused lines: enough to see what
//  is wrong with a file, small whatever the file (the count says how many).
#define S_REFUSED_LISTED 100

//  What a refused line's text is quoted with in its answer, at most.
#define S_QUOTE_MAX 100

//  Room for a field of an import: one byte more than an address may have,
//  so that a longer one is seen as such, and the NUL.
#define S_FIELD_SIZE (FQ_RECIPIENT_ADDRESS_MAX + 2)

//  The UTF-8 byte order mark a spreadsheet may write first.
#define S_BOM "\xef\xbb\xbf"

//  Names of a header's address column.
static const char *const s_address_columns[] = {"address", "email", NULL};

//  ---------------------------------------------------------------------
//  The list of a call

//  The entry object of API.md.
static json_t *s_entry_json(const fq_suppression_t *e)
{
    return json_pack("{s:s, s:s, s:o, s:o}", "address", e->address, "reason", e->reason, "detail",
                     e->detail ? json_string(e->detail) : json_null(), "created_at",
                     fq_api_time(e->created_at));
}

//  ---------------------------------------------------------------------
//  GET a page

static void s_list(fq_api_call_t *call, const char *tenant)
{
    static const char *const params[] = {"after", "limit", NULL};
    int64_t limit;
    if (!fq_api_query_allowed(call, params) ||
        !fq_api_parse_int(call, fq_api_query(call, "limit"), "limit", 1, FQ_STORE_PAGE_MAX,
                          FQ_API_PAGE_DEFAULT, &limit))
        return;
    const char *after = fq_api_query(call, "after");
    //  A malformed cursor: the store's words (400); no such tenant: 404
    fq_suppression_page_t page;
    int rc = fq_store_suppressions(call->store, tenant, after, (int)limit, &page);
    //  The first page says how many the list holds: it costs a count of
    //  the whole list, which a client paging through it needs once
    fq_suppression_counts_t counts = {0};
    if (rc >= 0 && !(after && *after)) {
        int counted = fq_store_suppression_counts(call->store, tenant, &counts);
        if (counted < 0) {
            fq_suppression_page_free(&page);
            rc = counted;
        }
    }
    if (rc < 0) {
        fq_api_fail_store(call, rc);
        return;
    }
    json_t *rows = json_array();
    for (size_t i = 0; rows && i < page.count; i++)
        if (json_array_append_new(rows, s_entry_json(&page.rows[i])) != 0) {
            json_decref(rows);
            rows = NULL;
        }
    //  A full page may have more after it: its last address is the cursor
    json_t *next =
        page.count == (size_t)limit ? json_string(page.rows[page.count - 1].address) : json_null();
    json_t *answer = rows ? json_pack("{s:o, s:o}", "suppressions", rows, "next", next) : NULL;
    if (answer && !(after && *after)) {
        json_t *by_reason = json_object();
        for (size_t r = 0; r < FQ_SUPPRESSION_REASON_COUNT; r++)
            json_object_set_new(by_reason, fq_suppression_reasons[r],
                                json_integer(counts.by_reason[r]));
        json_object_set_new(by_reason, "total", json_integer(counts.total));
        json_object_set_new(answer, "counts", by_reason);
    }
    fq_suppression_page_free(&page);
    if (!answer) {
        fq_api_fail(call, MHD_HTTP_INTERNAL_SERVER_ERROR,
                    "the page could not be written as JSON (out of memory)");
        return;
    }
    fq_api_reply(call, MHD_HTTP_OK, answer);
}

//  ---------------------------------------------------------------------
//  One entry: GET, PUT, DELETE

static void s_get(fq_api_call_t *call, const char *tenant, const char *address)
{
    if (!fq_api_query_allowed(call, NULL))
        return;
    fq_suppression_t *entry;
    int rc = fq_store_suppression_get(call->store, tenant, address, &entry);
    if (rc) {
        fq_api_fail_store(call, rc);
        return;
    }
    fq_api_reply(call, MHD_HTTP_OK, s_entry_json(entry));
    free(entry);
}

static void s_put(fq_api_call_t *call, const char *tenant, const char *address)
{
    static const char *const keys[] = {"detail", NULL};
    if (!fq_api_query_allowed(call, NULL))
        return;
    //  The body is optional: none is no detail
    json_t *body = call->body_size ? fq_api_body_fields(call, keys, NULL, NULL) : json_object();
    if (!body)
        return;
    json_t *detail = json_object_get(body, "detail");
    if (detail && !json_is_null(detail) && !json_is_string(detail)) {
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST, "detail must be a string, or null");
        json_decref(body);
        return;
    }
    //  A string with a NUL in it was refused as JSON (fq_api_json_valid):
    //  its text is all of it. Too long, or a control character: the
    //  store's words
    fq_suppression_t *entry;
    bool created;
    int rc = fq_store_suppression_add(call->store, tenant, address, FQ_SUPPRESSION_MANUAL,
                                      json_string_value(detail), &entry, &created);
    json_decref(body);
    if (rc) {
        fq_api_fail_store(call, rc);
        return;
    }
    fq_api_reply(call, created ? MHD_HTTP_CREATED : MHD_HTTP_OK, s_entry_json(entry));
    free(entry);
}

static void s_delete(fq_api_call_t *call, const char *tenant, const char *address)
{
    if (!fq_api_query_allowed(call, NULL))
        return;
    int rc = fq_store_suppression_remove(call->store, tenant, address);
    if (rc) {
        fq_api_fail_store(call, rc);
        return;
    }
    fq_api_reply_empty(call);
}

//  ---------------------------------------------------------------------
//  POST import: the CSV reader

typedef struct {
    const char *at;  //  The next field
    const char *end; //  The body's end
    size_t line;     //  The line at is on, from 1
} s_csv_t;

//  How a field ended.
typedef enum { S_FIELD_NEXT, S_FIELD_LAST } s_field_end_t;

//  One field read: its text (at most S_FIELD_SIZE - 1 bytes kept, size
//  its whole length), whether it was quoted, and what was wrong with it.
typedef struct {
    char text[S_FIELD_SIZE];
    size_t size;
    bool quoted;
    const char *problem; //  Static; NULL: none
} s_field_t;

static void s_field_add(s_field_t *field, char c)
{
    if (field->size < sizeof field->text - 1)
        field->text[field->size] = c;
    field->size++;
}

//  Ends the field's text with a NUL at what was kept of it.
static size_t s_field_kept(s_field_t *field)
{
    size_t kept = field->size < sizeof field->text - 1 ? field->size : sizeof field->text - 1;
    field->text[kept] = '\0';
    return kept;
}

static bool s_blank(char c)
{
    return c == ' ' || c == '\t';
}

//  Moves past a line end at csv->at ("\n" or "\r\n"), if one is there.
static bool s_line_end(s_csv_t *csv)
{
    const char *at = csv->at;
    if (at < csv->end && *at == '\r' && at + 1 < csv->end && at[1] == '\n')
        at++;
    if (at < csv->end && *at == '\n') {
        csv->at = at + 1;
        csv->line++;
        return true;
    }
    return false;
}

//  Reads the field at csv->at into field and moves past it and the comma
//  or line end after it. Says whether the record goes on.
static s_field_end_t s_field(s_csv_t *csv, s_field_t *field)
{
    *field = (s_field_t){0};
    while (csv->at < csv->end && s_blank(*csv->at))
        csv->at++;
    if (csv->at < csv->end && *csv->at == '"') {
        field->quoted = true;
        csv->at++;
        bool closed = false;
        while (csv->at < csv->end && !closed) {
            char c = *csv->at++;
            if (c == '"' && csv->at < csv->end && *csv->at == '"')
                s_field_add(field, *csv->at++);
            else if (c == '"')
                closed = true;
            else {
                csv->line += c == '\n';
                s_field_add(field, c);
            }
        }
        if (!closed)
            field->problem = "a quoted field is not closed";
        while (csv->at < csv->end && s_blank(*csv->at))
            csv->at++;
        //  Text after the closing quote is not CSV: the rest of the field
        //  is dropped, and the line refused
        if (csv->at < csv->end && *csv->at != ',' && *csv->at != '\n' &&
            !(*csv->at == '\r' && csv->at + 1 < csv->end && csv->at[1] == '\n')) {
            field->problem = "text after the closing quote of a field";
            while (csv->at < csv->end && *csv->at != ',' && *csv->at != '\n')
                csv->at++;
        }
    } else {
        size_t trailing = 0; //  Blanks at its end, dropped
        while (csv->at < csv->end && *csv->at != ',' && *csv->at != '\n' &&
               !(*csv->at == '\r' && csv->at + 1 < csv->end && csv->at[1] == '\n')) {
            trailing = s_blank(*csv->at) ? trailing + 1 : 0;
            s_field_add(field, *csv->at++);
        }
        field->size -= trailing;
    }
    s_field_kept(field);
    if (csv->at < csv->end && *csv->at == ',') {
        csv->at++;
        return S_FIELD_NEXT;
    }
    s_line_end(csv);
    return S_FIELD_LAST;
}

//  Skips the rest of a record after a field that ended with a comma.
static void s_record_skip(s_csv_t *csv)
{
    s_field_t rest;
    while (s_field(csv, &rest) == S_FIELD_NEXT)
        ;
}

//  ---------------------------------------------------------------------
//  POST import: the lines

typedef struct {
    fq_api_call_t *call;
    s_csv_t csv;
    size_t column;   //  The address column, from 0
    bool header;     //  The first line named it
    s_field_t field; //  The address last given to the store
    int64_t given;   //  Addresses given to the store
    int64_t refused; //  Lines refused
    json_t *listed;  //  The first S_REFUSED_LISTED of them (fewer when out of memory)
} s_import_t;

//  Lists a refused line (the first S_REFUSED_LISTED), and counts it. A
//  line that cannot be listed (out of memory) is counted all the same: the
//  import goes on, its count is right.
static void s_refuse(s_import_t *self, size_t line, const s_field_t *field, const char *reason)
{
    self->refused++;
    if (self->refused > S_REFUSED_LISTED)
        return;
    size_t kept = field->size < sizeof field->text - 1 ? field->size : sizeof field->text - 1;
    char quoted[S_QUOTE_MAX + 1];
    size_t size = fq_utf8_prefix(field->text, kept, S_QUOTE_MAX);
    memcpy(quoted, field->text, size);
    //  A JSON string is UTF-8, whatever the file held
    fq_utf8_replace_invalid(quoted, size, '?');
    json_t *refusal = json_pack("{s:I, s:s%, s:s}", "line", (json_int_t)line, "address", quoted,
                                size, "reason", reason);
    if (refusal)
        json_array_append_new(self->listed, refusal);
}

//  Whether field names the address column.
static bool s_column_name(const s_field_t *field)
{
    for (size_t i = 0; s_address_columns[i]; i++)
        if (field->size == strlen(s_address_columns[i]) &&
            strcasecmp(field->text, s_address_columns[i]) == 0)
            return true;
    return false;
}

//  Reads the first line that is not blank: a header naming the address
//  column, or not (then it is read again as an address). Returns false
//  when the body holds no such line.
static bool s_header(s_import_t *self)
{
    s_csv_t *csv = &self->csv;
    if ((size_t)(csv->end - csv->at) >= strlen(S_BOM) && memcmp(csv->at, S_BOM, strlen(S_BOM)) == 0)
        csv->at += strlen(S_BOM);
    while (csv->at < csv->end) {
        s_csv_t start = *csv;
        s_field_t field;
        s_field_end_t end = s_field(csv, &field);
        if (end == S_FIELD_LAST && field.size == 0 && !field.quoted && !field.problem)
            continue; //  A blank line
        for (size_t column = 0;; column++) {
            if (s_column_name(&field) && !field.problem) {
                self->header = true;
                self->column = column;
            }
            if (end == S_FIELD_LAST)
                break;
            end = s_field(csv, &field);
        }
        if (!self->header)
            *csv = start;
        return true;
    }
    return false;
}

//  The import's next good address, for the store: lines are read (and
//  the bad ones refused) until one is, or the body ends.
static const char *s_next(void *arg)
{
    s_import_t *self = arg;
    s_csv_t *csv = &self->csv;
    while (csv->at < csv->end) {
        size_t line = csv->line;
        s_field_t *field = &self->field;
        s_field_end_t end = S_FIELD_NEXT;
        size_t column = 0;
        for (; column <= self->column && end == S_FIELD_NEXT; column++)
            end = s_field(csv, field);
        bool found = column == self->column + 1;
        if (end == S_FIELD_NEXT)
            s_record_skip(csv);
        if (column == 1 && end == S_FIELD_LAST && field->size == 0 && !field->quoted &&
            !field->problem)
            continue; //  A blank line
        size_t kept = s_field_kept(field);
        const char *problem = !found           ? "the line has no field in the address column"
                              : field->problem ? field->problem
                                               : fq_recipient_address_problem(field->text, kept);
        if (!found)
            field->size = 0;
        if (problem) {
            s_refuse(self, line, field, problem);
            continue;
        }
        self->given++;
        return field->text;
    }
    return NULL;
}

static void s_import(fq_api_call_t *call, const char *tenant)
{
    if (!fq_api_query_allowed(call, NULL))
        return;
    s_import_t self = {
        .call = call, .csv = {call->body, call->body + call->body_size, 1}, .listed = json_array()};
    if (!self.listed) {
        fq_api_fail(call, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
        return;
    }
    if (!s_header(&self)) {
        fq_api_fail(call, MHD_HTTP_BAD_REQUEST,
                    "the body is empty: an import is CSV text, an address a line (or a header "
                    "line naming the address column, \"address\" or \"email\")");
        json_decref(self.listed);
        return;
    }
    int64_t added = 0;
    int rc = fq_store_suppression_import(call->store, tenant, s_next, &self, FQ_SUPPRESSION_MANUAL,
                                         NULL, &added);
    if (rc)
        fq_api_fail_store(call, rc);
    else
        fq_api_reply(call, MHD_HTTP_OK,
                     json_pack("{s:I, s:I, s:O, s:I}", "added", (json_int_t)added, "already",
                               (json_int_t)(self.given - added), "refused", self.listed,
                               "refused_count", (json_int_t)self.refused));
    json_decref(self.listed);
}

//  ---------------------------------------------------------------------
//  The routes: a tenant's list (its name params[0]), the global list

void fq_api_suppression_list(fq_api_call_t *call)
{
    const char *tenant;
    if (fq_api_own_tenant(call, &tenant))
        s_list(call, tenant);
}

void fq_api_suppression_get(fq_api_call_t *call)
{
    const char *tenant;
    if (fq_api_own_tenant(call, &tenant))
        s_get(call, tenant, call->params[1]);
}

void fq_api_suppression_put(fq_api_call_t *call)
{
    const char *tenant;
    if (fq_api_own_tenant(call, &tenant))
        s_put(call, tenant, call->params[1]);
}

void fq_api_suppression_delete(fq_api_call_t *call)
{
    const char *tenant;
    if (fq_api_own_tenant(call, &tenant))
        s_delete(call, tenant, call->params[1]);
}

void fq_api_suppression_import(fq_api_call_t *call)
{
    const char *tenant;
    if (fq_api_own_tenant(call, &tenant))
        s_import(call, tenant);
}

void fq_api_global_suppression_list(fq_api_call_t *call)
{
    s_list(call, NULL);
}

void fq_api_global_suppression_get(fq_api_call_t *call)
{
    s_get(call, NULL, call->params[0]);
}

void fq_api_global_suppression_put(fq_api_call_t *call)
{
    s_put(call, NULL, call->params[0]);
}

void fq_api_global_suppression_delete(fq_api_call_t *call)
{
    s_delete(call, NULL, call->params[0]);
}

void fq_api_global_suppression_import(fq_api_call_t *call)
{
    s_import(call, NULL);
}
