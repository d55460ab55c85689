/*  fq_cli_rates.c — send rates from successive readings of /metrics. */
#include "fq_cli_rates.h"
#include "fq_limits.h"
#include <jansson.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

//  The label that names a sample's tenant
#define S_TENANT_LABEL "tenant"

typedef struct {
    double at;      //  When it was read
    json_t *counts; //  Tenant name -> its counter (a real)
} s_reading_t;

struct fq_cli_rates {
    size_t capacity; //  Readings kept, at most
    size_t count;
    s_reading_t *readings; //  Oldest first
};

fq_cli_rates_t *fq_cli_rates_new(size_t readings)
{
    fq_cli_rates_t *self = calloc(1, sizeof *self);
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

void fq_cli_rates_destroy(fq_cli_rates_t **self_p)
{
    fq_cli_rates_t *self = *self_p;
    if (!self)
        return;
    for (size_t i = 0; i < self->count; i++)
        json_decref(self->readings[i].counts);
    free(self->readings);
    free(self);
    *self_p = NULL;
}

//  The value of label name in a sample's labels (after its '{'), written
//  unescaped into value (size bytes): "tenant=\"acme\",x=\"y\"}". Returns
//  a pointer past the closing '}', or NULL when the labels are malformed
//  or name is not among them (value is then empty).
static const char *s_label(const char *labels, const char *name, char *value, size_t size)
{
    const char *p = labels;
    bool found = false;
    *value = 0;
    while (*p && *p != '}') {
        const char *key = p;
        size_t key_len = strcspn(p, "=},\n");
        if (p[key_len] != '=' || p[key_len + 1] != '"')
            return NULL;
        bool wanted = key_len == strlen(name) && strncmp(key, name, key_len) == 0;
        p += key_len + 2;
        size_t len = 0;
        //  Prometheus escapes \ " and line feeds in label values
        for (; *p && *p != '"' && *p != '\n'; p++) {
            char c = *p;
            if (c == '\\' && p[1]) {
                p++;
                c = *p == 'n' ? '\n' : *p;
            }
            if (wanted && len + 1 < size)
                value[len++] = c;
        }
        if (*p != '"')
            return NULL;
        if (wanted) {
            value[len] = 0;
            found = true;
        }
        p++;
        if (*p == ',')
            p++;
    }
    return *p == '}' && found ? p + 1 : NULL;
}

//  The samples of FQ_CLI_RATES_FAMILY in text, by tenant; NULL when
//  there are none and the family is not even declared (not fairqd's
//  metrics), or out of memory. A fairqd that acked nothing yet declares
//  the family without samples: a reading of nothing, not a failure.
static json_t *s_parse(const char *text)
{
    static const char family[] = FQ_CLI_RATES_FAMILY "{";
    static const char declared[] = "# TYPE " FQ_CLI_RATES_FAMILY " ";
    json_t *counts = json_object();
    bool any = false;
    for (const char *line = text; counts && line && *line;) {
        const char *end = strchr(line, '\n');
        if (strncmp(line, declared, sizeof declared - 1) == 0)
            any = true;
        else if (strncmp(line, family, sizeof family - 1) == 0) {
            char tenant[FQ_TENANT_NAME_SIZE];
            const char *rest =
                s_label(line + sizeof family - 1, S_TENANT_LABEL, tenant, sizeof tenant);
            char *number_end = NULL;
            double value = rest ? strtod(rest, &number_end) : 0;
            if (rest && number_end != rest && *tenant) {
                if (json_object_set_new(counts, tenant, json_real(value)) != 0) {
                    json_decref(counts);
                    return NULL;
                }
                any = true;
            }
        }
        line = end ? end + 1 : NULL;
    }
    if (!any) {
        json_decref(counts);
        return NULL;
    }
    return counts;
}

int fq_cli_rates_add(fq_cli_rates_t *self, double now, const char *text)
{
    json_t *counts = s_parse(text);
    if (!counts)
        return -1;
    if (self->count == self->capacity) {
        json_decref(self->readings[0].counts);
        memmove(self->readings, self->readings + 1, (self->count - 1) * sizeof *self->readings);
        self->count--;
    }
    self->readings[self->count++] = (s_reading_t){.at = now, .counts = counts};
    return 0;
}

double fq_cli_rates_get(const fq_cli_rates_t *self, const char *tenant)
{
    double span = fq_cli_rates_span(self);
    if (span <= 0)
        return -1;
    const json_t *then = json_object_get(self->readings[0].counts, tenant);
    const json_t *now = json_object_get(self->readings[self->count - 1].counts, tenant);
    //  A tenant appears once it has acks; one that went away was reset
    double delta = json_real_value(now) - json_real_value(then);
    if ((then && !now) || delta < 0)
        return -1;
    return delta / span;
}

double fq_cli_rates_span(const fq_cli_rates_t *self)
{
    if (self->count < 2)
        return 0;
    return self->readings[self->count - 1].at - self->readings[0].at;
}
