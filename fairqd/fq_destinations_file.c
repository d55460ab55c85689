/*  fq_destinations_file.c — reading fairqd's destinations_file (see
    fq_destinations_file.h).

    The text is copied once and cut in place: names and domains point into
    the copy, each domain lowercased there. The specs, their lines and all
    their domains grow in fq_buf_t's (the one growable buffer) as the lines
    are read; a spec's domains are found by their first index until the
    end, when the buffer stops moving and they become pointers.
*/
#include "fq_destinations_file.h"
#include "fq_buf.h"
#include "fq_domain.h"
#include "fq_error.h"
#include "fq_limits.h"
#include "fq_rate.h"
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  What separates fields, and domains within their field.
#define S_BLANKS           " \t\r"
#define S_DOMAIN_SEPARATOR ','
#define S_COMMENT          '#'

//  The word for "no limit" of rate= and max_inflight=.
#define S_NONE "none"

//  Room for what fq_rate_parse says of a bad rate, and for a fault's
//  words before its path and line.
#define S_PROBLEM_SIZE 256
#define S_WHY_SIZE     512

typedef struct {
    const char *path;
    int line;
    char *error;
    size_t error_size;
    fq_buf_t specs;   //  fq_destination_spec_t, domains NULL until the end
    fq_buf_t lines;   //  int, one a spec
    fq_buf_t firsts;  //  size_t, each spec's first domain in domains
    fq_buf_t domains; //  const char *, every spec's
} s_parser_t;

//  Says "PATH:LINE: why" (printf-style); returns FQ_EINVAL.
static int s_fail(s_parser_t *self, const char *format, ...) __attribute__((format(printf, 2, 3)));
static int s_fail(s_parser_t *self, const char *format, ...)
{
    char why[S_WHY_SIZE];
    va_list args;
    va_start(args, format);
    vsnprintf(why, sizeof why, format, args);
    va_end(args);
    fq_error_format(self->error, self->error_size, "%s:%d: %s", self->path, self->line, why);
    return FQ_EINVAL;
}

static size_t s_count(const fq_buf_t *buf, size_t item)
{
    return buf->size / item;
}

//  A whole number within 1..max, or none when may_be_none ("none"): 0.
static int s_number(s_parser_t *self, const char *key, const char *value, int64_t max,
                    bool may_be_none, int64_t *out)
{
    if (may_be_none && strcmp(value, S_NONE) == 0) {
        *out = 0;
        return 0;
    }
    char *end;
    errno = 0;
    long long parsed = strtoll(value, &end, 10);
    if (*value < '0' || *value > '9' || *end || errno == ERANGE || parsed < 1 || parsed > max)
        return s_fail(self, "%s must be a whole number within 1..%lld%s, not \"%.32s\"", key,
                      (long long)max, may_be_none ? " or none" : "", value);
    *out = parsed;
    return 0;
}

//  domains=a.com,b.com: each lowercased in place, checked, added.
static int s_domains(s_parser_t *self, const char *name, char *value)
{
    size_t count = 0;
    for (char *domain = value; *value;) {
        char *comma = strchr(domain, S_DOMAIN_SEPARATOR);
        if (comma)
            *comma = '\0';
        fq_domain_lower(domain);
        const char *problem = fq_domain_problem(domain, strlen(domain));
        if (problem)
            return s_fail(self, "destination \"%s\": domain \"%.*s\" %s", name, FQ_DOMAIN_MAX + 1,
                          domain, problem);
        if (++count > FQ_DESTINATION_DOMAINS_MAX)
            return s_fail(self, "destination \"%s\": more than %d domains", name,
                          FQ_DESTINATION_DOMAINS_MAX);
        const char *kept = domain;
        if (fq_buf_add(&self->domains, (const char *)&kept, sizeof kept))
            return FQ_ENOMEM;
        if (!comma)
            break;
        domain = comma + 1;
    }
    return 0;
}

//  One field, KEY=VALUE, of spec.
static int s_field(s_parser_t *self, fq_destination_spec_t *spec, char *field, unsigned *seen)
{
    static const char *const keys[] = {"rate", "burst", "max_inflight", "domains"};
    char *value = strchr(field, '=');
    if (value)
        *value++ = '\0';
    size_t k = 0;
    while (k < sizeof keys / sizeof keys[0] && strcmp(field, keys[k]) != 0)
        k++;
    if (k == sizeof keys / sizeof keys[0])
        return s_fail(self,
                      "destination \"%s\": unknown field \"%.64s\" (fields are rate=, burst=, "
                      "max_inflight=, domains=)",
                      spec->name, field);
    if (!value)
        return s_fail(self, "destination \"%s\": %s needs a value: %s=...", spec->name, field,
                      field);
    if (*seen & (1u << k))
        return s_fail(self, "destination \"%s\": %s is given twice", spec->name, field);
    *seen |= 1u << k;
    switch (k) {
    case 0: {
        if (strcmp(value, S_NONE) == 0)
            return 0;
        fq_rate_t rate;
        char problem[S_PROBLEM_SIZE];
        if (fq_rate_parse(value, &rate, problem, sizeof problem) != 0)
            return s_fail(self, "destination \"%s\": %s", spec->name, problem);
        spec->rate_count = rate.count;
        spec->rate_period_s = rate.period_s;
        return 0;
    }
    case 1:
        return s_number(self, "burst", value, FQ_DESTINATION_BURST_MAX, false, &spec->burst);
    case 2:
        return s_number(self, "max_inflight", value, FQ_DESTINATION_INFLIGHT_MAX, true,
                        &spec->max_inflight);
    default:
        return s_domains(self, spec->name, value);
    }
}

//  One line, cut at its comment: nothing, or a destination.
static int s_line(s_parser_t *self, char *line)
{
    char *comment = strchr(line, S_COMMENT);
    if (comment)
        *comment = '\0';
    char *save = NULL;
    char *name = strtok_r(line, S_BLANKS, &save);
    if (!name)
        return 0;
    if (!fq_destination_name_valid(name))
        return s_fail(self,
                      "\"%.*s\" is not a destination name: 1..%d of a-z 0-9 _ . - that starts "
                      "with a letter or digit",
                      FQ_DESTINATION_NAME_MAX + 1, name, FQ_DESTINATION_NAME_MAX);
    const fq_destination_spec_t *specs = (const fq_destination_spec_t *)self->specs.data;
    for (size_t i = 0; i < s_count(&self->specs, sizeof *specs); i++)
        if (strcmp(specs[i].name, name) == 0)
            return s_fail(self, "destination \"%s\" is named again (first at line %d)", name,
                          ((const int *)self->lines.data)[i]);
    fq_destination_spec_t spec = {.name = name};
    size_t first = s_count(&self->domains, sizeof(const char *));
    unsigned seen = 0;
    char *field;
    while ((field = strtok_r(NULL, S_BLANKS, &save)) != NULL) {
        int rc = s_field(self, &spec, field, &seen);
        if (rc)
            return rc;
    }
    spec.ndomains = s_count(&self->domains, sizeof(const char *)) - first;
    if (spec.burst > 0 && spec.rate_count == 0)
        return s_fail(self, "destination \"%s\": burst needs a rate (it is the rate's bucket)",
                      name);
    if (spec.ndomains > 0 && strcmp(name, FQ_DESTINATION_DEFAULT) == 0)
        return s_fail(self,
                      "the destination \"" FQ_DESTINATION_DEFAULT "\" takes no domains: it is "
                      "every domain no other destination names");
    if (fq_buf_add(&self->specs, (const char *)&spec, sizeof spec) ||
        fq_buf_add(&self->lines, (const char *)&self->line, sizeof self->line) ||
        fq_buf_add(&self->firsts, (const char *)&first, sizeof first))
        return FQ_ENOMEM;
    return 0;
}

//  A domain and the spec that takes it, for finding one taken twice.
typedef struct {
    const char *domain;
    size_t spec;
} s_taken_t;

static int s_by_domain(const void *a, const void *b)
{
    const s_taken_t *x = a, *y = b;
    int order = strcmp(x->domain, y->domain);
    return order ? order : (x->spec > y->spec) - (x->spec < y->spec);
}

//  Every domain once in the whole file; the line of the later is named.
static int s_domains_once(s_parser_t *self, const fq_destinations_file_t *out)
{
    size_t total = 0;
    for (size_t i = 0; i < out->count; i++)
        total += out->specs[i].ndomains;
    s_taken_t *taken = calloc(total + 1, sizeof *taken);
    if (!taken)
        return FQ_ENOMEM;
    size_t n = 0;
    for (size_t i = 0; i < out->count; i++)
        for (size_t d = 0; d < out->specs[i].ndomains; d++)
            taken[n++] = (s_taken_t){out->specs[i].domains[d], i};
    qsort(taken, n, sizeof *taken, s_by_domain);
    int rc = 0;
    for (size_t i = 1; i < n && rc == 0; i++) {
        const s_taken_t *a = &taken[i - 1], *b = &taken[i];
        if (strcmp(a->domain, b->domain) != 0)
            continue;
        self->line = out->lines[b->spec];
        if (a->spec == b->spec)
            rc = s_fail(self, "destination \"%s\": domain \"%s\" is given twice",
                        out->specs[b->spec].name, b->domain);
        else
            rc = s_fail(self, "domain \"%s\" is given to \"%s\" here and to \"%s\" at line %d",
                        b->domain, out->specs[b->spec].name, out->specs[a->spec].name,
                        out->lines[a->spec]);
    }
    free(taken);
    return rc;
}

int fq_destinations_file_parse(const char *text, size_t size, const char *path,
                               fq_destinations_file_t *out, char *error, size_t error_size)
{
    *out = (fq_destinations_file_t){0};
    s_parser_t self = {.path = path ? path : "", .error = error, .error_size = error_size};
    out->text = malloc(size + 1);
    if (!out->text)
        return FQ_ENOMEM;
    memcpy(out->text, text, size);
    out->text[size] = '\0';
    int rc = 0;
    char *line = out->text;
    for (self.line = 1; rc == 0 && line <= out->text + size; self.line++) {
        char *end = memchr(line, '\n', (size_t)(out->text + size - line));
        if (end)
            *end = '\0';
        //  A NUL inside a line would end it early, unseen
        if (strlen(line) != (size_t)((end ? end : out->text + size) - line))
            rc = s_fail(&self, "holds a NUL byte");
        else
            rc = s_line(&self, line);
        if (!end)
            break;
        line = end + 1;
    }
    out->count = s_count(&self.specs, sizeof *out->specs);
    out->specs = (fq_destination_spec_t *)self.specs.data;
    out->lines = (int *)self.lines.data;
    out->domains = (const char **)self.domains.data;
    const size_t *firsts = (const size_t *)self.firsts.data;
    for (size_t i = 0; i < out->count; i++)
        out->specs[i].domains = out->specs[i].ndomains ? out->domains + firsts[i] : NULL;
    if (rc == 0)
        rc = s_domains_once(&self, out);
    fq_buf_free(&self.firsts);
    if (rc == FQ_ENOMEM)
        fq_error_format(error, error_size, "%s: out of memory", self.path);
    return rc;
}

void fq_destinations_file_free(fq_destinations_file_t *file)
{
    free(file->specs);
    free(file->lines);
    free(file->domains);
    free(file->text);
    *file = (fq_destinations_file_t){0};
}

int fq_destinations_file_read(const char *path, fq_destinations_file_t *out, char *error,
                              size_t error_size)
{
    *out = (fq_destinations_file_t){0};
    FILE *file = fopen(path, "rb");
    if (!file) {
        fq_error_format(error, error_size, "%s: could not open: %s", path, strerror(errno));
        return FQ_EIO;
    }
    fq_buf_t text = {0};
    char chunk[BUFSIZ];
    size_t n;
    int rc = 0;
    while (rc == 0 && (n = fread(chunk, 1, sizeof chunk, file)) > 0) {
        if (text.size + n > FQ_DESTINATIONS_FILE_MAX) {
            fq_error_format(error, error_size, "%s: larger than %d bytes", path,
                            FQ_DESTINATIONS_FILE_MAX);
            rc = FQ_EINVAL;
        } else if (fq_buf_add(&text, chunk, n)) {
            fq_error_format(error, error_size, "%s: out of memory", path);
            rc = FQ_ENOMEM;
        }
    }
    if (rc == 0 && ferror(file)) {
        fq_error_format(error, error_size, "%s: could not read: %s", path, strerror(errno));
        rc = FQ_EIO;
    }
    fclose(file);
    if (rc == 0)
        rc = fq_destinations_file_parse(text.data ? text.data : "", text.size, path, out, error,
                                        error_size);
    fq_buf_free(&text);
    return rc;
}
