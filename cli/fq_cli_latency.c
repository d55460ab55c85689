/*  fq_cli_latency.c — delivery and end-to-end quantiles from successive
    readings of /metrics (fq_cli_latency.h). */
#include "fq_cli_latency.h"
#include "fq_limits.h"
#include "fq_quantile.h"
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  Room first made for a reading's tenants; doubled as they come.
#define S_INITIAL 16

//  Units of a time as top shows it: milliseconds below a second, seconds
//  with a decimal below 10 s, whole seconds below a minute, then minutes
//  and hours.
#define S_MS_PER_S   1000.0
#define S_DECIMAL_S  10.0
#define S_S_PER_MIN  60.0
#define S_S_PER_HOUR 3600.0

#define S_TIME_SIZE 16

typedef struct {
    double le[FQ_CLI_LATENCY_BUCKETS_MAX];
    double cumulative[FQ_CLI_LATENCY_BUCKETS_MAX];
    size_t n;
    double total; //  The +Inf bucket: every delivery
} s_histogram_t;

typedef struct {
    char name[FQ_TENANT_NAME_SIZE];
    s_histogram_t of[FQ_CLI_LATENCY_OF_END_TO_END + 1];
} s_tenant_t;

typedef struct {
    double at;
    s_tenant_t *tenants;
    size_t count, size;
} s_reading_t;

struct fq_cli_latency {
    size_t capacity;
    size_t count;
    s_reading_t *readings; //  Oldest first
};

static const char *const s_families[] = {FQ_CLI_LATENCY_DELIVERY, FQ_CLI_LATENCY_END_TO_END};

fq_cli_latency_t *fq_cli_latency_new(size_t readings)
{
    fq_cli_latency_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    self->capacity = readings < 2 ? 2 : readings;
    self->readings = calloc(self->capacity, sizeof *self->readings);
    if (!self->readings) {
        free(self);
        return NULL;
    }
    return self;
}

void fq_cli_latency_destroy(fq_cli_latency_t **self_p)
{
    fq_cli_latency_t *self = *self_p;
    if (!self)
        return;
    for (size_t i = 0; i < self->count; i++)
        free(self->readings[i].tenants);
    free(self->readings);
    free(self);
    *self_p = NULL;
}

//  The tenant named name (length bytes) in reading, added if new; NULL
//  when out of memory (*failed set) or the name cannot be one.
static s_tenant_t *s_tenant(s_reading_t *reading, const char *name, size_t length, bool *failed)
{
    //  The samples of one tenant come together: the last one is it, mostly
    for (size_t i = reading->count; i-- > 0;)
        if (strlen(reading->tenants[i].name) == length &&
            strncmp(reading->tenants[i].name, name, length) == 0)
            return &reading->tenants[i];
    if (length == 0 || length >= FQ_TENANT_NAME_SIZE)
        return NULL;
    if (reading->count == reading->size) {
        size_t size = reading->size ? reading->size * 2 : S_INITIAL;
        s_tenant_t *grown = realloc(reading->tenants, size * sizeof *grown);
        if (!grown) {
            *failed = true;
            return NULL;
        }
        reading->tenants = grown;
        reading->size = size;
    }
    s_tenant_t *tenant = &reading->tenants[reading->count++];
    memset(tenant, 0, sizeof *tenant);
    memcpy(tenant->name, name, length);
    return tenant;
}

//  One line of text, if it is a bucket of family f:
//  NAME_bucket{tenant="T",le="B"} V, as fairqd writes it (a tenant's name
//  needs no escape: fq_limits.h's rule).
static void s_line(s_reading_t *reading, const char *line, size_t f, bool *failed)
{
    static const char bucket[] = "_bucket{tenant=\"", le[] = "\",le=\"";
    size_t length = strlen(s_families[f]);
    if (strncmp(line, s_families[f], length) != 0 ||
        strncmp(line + length, bucket, sizeof bucket - 1) != 0)
        return;
    const char *name = line + length + sizeof bucket - 1;
    size_t name_length = strcspn(name, "\"\n");
    const char *bound = name + name_length;
    if (strncmp(bound, le, sizeof le - 1) != 0)
        return;
    bound += sizeof le - 1;
    size_t bound_length = strcspn(bound, "\"\n");
    if (strncmp(bound + bound_length, "\"} ", 3) != 0)
        return;
    char *end;
    double value = strtod(bound + bound_length + 3, &end);
    if (end == bound + bound_length + 3 || value < 0)
        return;
    s_tenant_t *tenant = s_tenant(reading, name, name_length, failed);
    if (!tenant)
        return;
    s_histogram_t *histogram = &tenant->of[f];
    if (strncmp(bound, "+Inf\"", 5) == 0) {
        histogram->total = value;
        return;
    }
    double le_value = strtod(bound, &end);
    if (end != bound + bound_length || histogram->n == FQ_CLI_LATENCY_BUCKETS_MAX)
        return;
    histogram->le[histogram->n] = le_value;
    histogram->cumulative[histogram->n++] = value;
}

int fq_cli_latency_add(fq_cli_latency_t *self, double now, const char *text)
{
    s_reading_t reading = {.at = now};
    bool failed = false;
    for (const char *line = text; line && *line && !failed;) {
        const char *end = strchr(line, '\n');
        if (strncmp(line, "fairq_tenant_", strlen("fairq_tenant_")) == 0)
            for (size_t f = 0; f < sizeof s_families / sizeof *s_families; f++)
                s_line(&reading, line, f, &failed);
        line = end ? end + 1 : NULL;
    }
    if (failed) {
        free(reading.tenants);
        return -1;
    }
    if (self->count == self->capacity) {
        free(self->readings[0].tenants);
        memmove(self->readings, self->readings + 1, (self->count - 1) * sizeof *self->readings);
        self->count--;
    }
    self->readings[self->count++] = reading;
    return 0;
}

static const s_tenant_t *s_find(const s_reading_t *reading, const char *tenant)
{
    for (size_t i = 0; i < reading->count; i++)
        if (strcmp(reading->tenants[i].name, tenant) == 0)
            return &reading->tenants[i];
    return NULL;
}

double fq_cli_latency_get(const fq_cli_latency_t *self, const char *tenant,
                          fq_cli_latency_of_t what, double q)
{
    if (self->count < 2 || !tenant || what > FQ_CLI_LATENCY_OF_END_TO_END)
        return -1;
    const s_tenant_t *then = s_find(&self->readings[0], tenant);
    const s_tenant_t *now = s_find(&self->readings[self->count - 1], tenant);
    if (!now)
        return -1;
    //  A tenant first seen since the oldest reading counted nothing then
    const s_histogram_t *after = &now->of[what];
    const s_histogram_t *before = then ? &then->of[what] : NULL;
    if (before && before->n != after->n && before->n != 0)
        return -1; //  Other buckets: another fairqd's
    double delta[FQ_CLI_LATENCY_BUCKETS_MAX];
    for (size_t i = 0; i < after->n; i++) {
        delta[i] = after->cumulative[i] - (before && before->n ? before->cumulative[i] : 0);
        if (delta[i] < 0)
            return -1;
    }
    double total = after->total - (before ? before->total : 0);
    if (total < 0)
        return -1;
    return fq_quantile(q, after->le, delta, after->n, total);
}

double fq_cli_latency_span(const fq_cli_latency_t *self)
{
    if (self->count < 2)
        return 0;
    return self->readings[self->count - 1].at - self->readings[0].at;
}

static void s_time(char *text, size_t size, double seconds)
{
    if (seconds < 0)
        snprintf(text, size, "-");
    else if (seconds < 1)
        snprintf(text, size, "%.0fms", seconds * S_MS_PER_S);
    else if (seconds < S_DECIMAL_S)
        snprintf(text, size, "%.1fs", seconds);
    else if (seconds < S_S_PER_MIN)
        snprintf(text, size, "%.0fs", seconds);
    else if (seconds < S_S_PER_HOUR)
        snprintf(text, size, "%.0fm", seconds / S_S_PER_MIN);
    else
        snprintf(text, size, "%.0fh", seconds / S_S_PER_HOUR);
}

void fq_cli_latency_format(char *text, size_t size, double p50, double p99)
{
    char low[S_TIME_SIZE], high[S_TIME_SIZE];
    s_time(low, sizeof low, p50);
    s_time(high, sizeof high, p99);
    snprintf(text, size, "%s/%s", low, high);
}
