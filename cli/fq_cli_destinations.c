/*  fq_cli_destinations.c — the destinations from /metrics
    (fq_cli_destinations.h). */
#include "fq_cli_destinations.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  The families read, in the order of s_set's cases.
static const char *const s_families[] = {
    "fairq_destination_ready", "fairq_destination_inflight", "fairq_destination_effective_rate",
    "fairq_destination_suspended_seconds", "fairq_destination_state"};

//  Room first made for the destinations; doubled as they come.
#define S_INITIAL 16

//  The first state of a destination, before its sample is read.
#define S_OPEN "open"

typedef struct {
    fq_cli_destination_t *rows;
    size_t count, size;
} s_list_t;

//  The destination named name in list, added if new; NULL when out of
//  memory or the name cannot be one.
static fq_cli_destination_t *s_destination(s_list_t *list, const char *name, size_t length)
{
    for (size_t i = 0; i < list->count; i++)
        if (strlen(list->rows[i].name) == length && strncmp(list->rows[i].name, name, length) == 0)
            return &list->rows[i];
    if (length == 0 || length >= FQ_DESTINATION_NAME_SIZE)
        return NULL;
    if (list->count == list->size) {
        size_t size = list->size ? list->size * 2 : S_INITIAL;
        fq_cli_destination_t *grown = realloc(list->rows, size * sizeof *grown);
        if (!grown)
            return NULL;
        list->rows = grown;
        list->size = size;
    }
    fq_cli_destination_t *destination = &list->rows[list->count++];
    *destination = (fq_cli_destination_t){0};
    memcpy(destination->name, name, length);
    return destination;
}

//  One sample of family f: after the name's closing quote, rest is either
//  "} VALUE" or, for the state, ",state=\"STATE\"} VALUE".
static void s_set(fq_cli_destination_t *destination, size_t f, const char *rest)
{
    const char *state = NULL;
    size_t state_length = 0;
    if (f == 4) {
        static const char label[] = ",state=\"";
        if (strncmp(rest, label, sizeof label - 1) != 0)
            return;
        state = rest + sizeof label - 1;
        state_length = strcspn(state, "\"");
        rest = state + state_length + (state[state_length] ? 1 : 0);
    }
    if (strncmp(rest, "} ", 2) != 0)
        return;
    char *end;
    double value = strtod(rest + 2, &end);
    if (end == rest + 2)
        return;
    switch (f) {
    case 0:
        destination->ready = (int64_t)value;
        break;
    case 1:
        destination->inflight = (int64_t)value;
        break;
    case 2:
        destination->effective_rate = isinf(value) ? -1 : value;
        break;
    case 3:
        destination->suspended_s = value;
        break;
    default:
        if (value == 1)
            snprintf(destination->state, sizeof destination->state, "%.*s", (int)state_length,
                     state);
    }
}

int fq_cli_destinations_parse(const char *text, fq_cli_destination_t **out, size_t *count)
{
    s_list_t list = {0};
    bool failed = false;
    for (const char *line = text; line && *line && !failed;) {
        const char *end = strchr(line, '\n');
        for (size_t f = 0; f < sizeof s_families / sizeof s_families[0]; f++) {
            size_t length = strlen(s_families[f]);
            static const char label[] = "{destination=\"";
            if (strncmp(line, s_families[f], length) != 0 ||
                strncmp(line + length, label, sizeof label - 1) != 0)
                continue;
            const char *name = line + length + sizeof label - 1;
            size_t name_length = strcspn(name, "\"\n");
            if (name[name_length] != '"')
                break;
            size_t before = list.count;
            fq_cli_destination_t *destination = s_destination(&list, name, name_length);
            if (destination && list.count > before)
                snprintf(destination->state, sizeof destination->state, "%s", S_OPEN);
            //  A name too long to be one is skipped; no room is a failure
            failed = !destination && name_length > 0 && name_length < FQ_DESTINATION_NAME_SIZE;
            if (destination)
                s_set(destination, f, name + name_length + 1);
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

bool fq_cli_destination_idle(const fq_cli_destination_t *destination)
{
    return destination->ready == 0 && destination->inflight == 0 &&
           strcmp(destination->state, S_OPEN) == 0;
}
