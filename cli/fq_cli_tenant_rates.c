/*  fq_cli_tenant_rates.c — the tenants' bounce and complaint rates from
    /metrics (fq_cli_tenant_rates.h). */
#include "fq_cli_tenant_rates.h"
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  The families read, in the order of the fields they fill.
static const char *const s_families[] = {"fairq_tenant_bounce_rate", "fairq_tenant_complaint_rate"};

//  Room first made for the tenants; doubled as they come.
#define S_INITIAL 16

//  A percentage in as many decimals as tell the limits apart: two below
//  1% (0.10% from 0.30%), one below 10%, none above.
#define S_PERCENT          100.0
#define S_TWO_DECIMALS_PCT 1.0
#define S_ONE_DECIMAL_PCT  10.0

typedef struct {
    fq_cli_tenant_rates_t *rows;
    size_t count, size;
} s_list_t;

//  The tenant named name in list, added if new (both rates none); NULL
//  when out of memory or the name cannot be one.
static fq_cli_tenant_rates_t *s_tenant(s_list_t *list, const char *name, size_t length)
{
    for (size_t i = 0; i < list->count; i++)
        if (strlen(list->rows[i].name) == length && strncmp(list->rows[i].name, name, length) == 0)
            return &list->rows[i];
    if (length == 0 || length >= FQ_TENANT_NAME_SIZE)
        return NULL;
    if (list->count == list->size) {
        size_t size = list->size ? list->size * 2 : S_INITIAL;
        fq_cli_tenant_rates_t *grown = realloc(list->rows, size * sizeof *grown);
        if (!grown)
            return NULL;
        list->rows = grown;
        list->size = size;
    }
    fq_cli_tenant_rates_t *tenant = &list->rows[list->count++];
    *tenant = (fq_cli_tenant_rates_t){.bounce_rate = -1, .complaint_rate = -1};
    memcpy(tenant->name, name, length);
    return tenant;
}

int fq_cli_tenant_rates_parse(const char *text, fq_cli_tenant_rates_t **out, size_t *count)
{
    s_list_t list = {0};
    bool failed = false;
    for (const char *line = text; line && *line && !failed;) {
        const char *end = strchr(line, '\n');
        for (size_t f = 0; f < sizeof s_families / sizeof s_families[0]; f++) {
            size_t length = strlen(s_families[f]);
            static const char label[] = "{tenant=\"";
            if (strncmp(line, s_families[f], length) != 0 ||
                strncmp(line + length, label, sizeof label - 1) != 0)
                continue;
            const char *name = line + length + sizeof label - 1;
            size_t name_length = strcspn(name, "\"\n");
            const char *rest = name + name_length;
            char *after;
            double value = strncmp(rest, "\"} ", 3) == 0 ? strtod(rest + 3, &after) : -1;
            if (strncmp(rest, "\"} ", 3) != 0 || after == rest + 3 || value < 0)
                break;
            fq_cli_tenant_rates_t *tenant = s_tenant(&list, name, name_length);
            //  A name too long to be one is skipped; no room is a failure
            failed = !tenant && name_length > 0 && name_length < FQ_TENANT_NAME_SIZE;
            if (tenant && f == 0)
                tenant->bounce_rate = value;
            else if (tenant)
                tenant->complaint_rate = value;
            break;
        }
        line = end ? end + 1 : NULL;
    }
    if (failed) {
        free(list.rows);
        list = (s_list_t){0};
    }
    *out = list.rows;
    *count = list.count;
    return failed ? -1 : 0;
}

const fq_cli_tenant_rates_t *fq_cli_tenant_rates_find(const fq_cli_tenant_rates_t *rows,
                                                      size_t count, const char *tenant)
{
    for (size_t i = 0; tenant && i < count; i++)
        if (strcmp(rows[i].name, tenant) == 0)
            return &rows[i];
    return NULL;
}

static void s_format(char *text, size_t size, double rate, const char *mark)
{
    double percent = rate * S_PERCENT;
    if (rate < 0)
        snprintf(text, size, "-");
    else if (percent < S_TWO_DECIMALS_PCT)
        snprintf(text, size, "%.2f%%%s", percent, mark);
    else if (percent < S_ONE_DECIMAL_PCT)
        snprintf(text, size, "%.1f%%%s", percent, mark);
    else
        snprintf(text, size, "%.0f%%%s", percent, mark);
}

void fq_cli_format_bounce_rate(char *text, size_t size, double rate)
{
    s_format(text, size, rate, rate > FQ_CLI_BOUNCE_RATE_LIMIT ? FQ_CLI_RATE_OVER_LIMIT : "");
}

void fq_cli_format_complaint_rate(char *text, size_t size, double rate)
{
    s_format(text, size, rate,
             rate > FQ_CLI_COMPLAINT_RATE_LIMIT         ? FQ_CLI_RATE_OVER_LIMIT
             : rate > FQ_CLI_COMPLAINT_RATE_RECOMMENDED ? FQ_CLI_RATE_OVER_RECOMMENDED
                                                        : "");
}
