/*  fq_cron.c — a cron expression parsed into its sets (fq_cron.h). */
#include "fq_cron.h"
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

//  The five fields, in their order.
enum { S_MINUTE, S_HOUR, S_DAY, S_MONTH, S_WEEKDAY, S_FIELDS };

//  Longest name of a month or weekday, and longest number, read, bytes.
#define S_NAME_MAX   3
#define S_NUMBER_MAX 2

//  A month's most days (February: 29, in a leap year), to refuse a
//  day-of-month that no month given has.
static const int s_month_days[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

#define S_MONTHS 12

static const char *const s_month_names[S_MONTHS] = {"jan", "feb", "mar", "apr", "may", "jun",
                                                    "jul", "aug", "sep", "oct", "nov", "dec"};

#define S_WEEKDAYS 7

static const char *const s_weekday_names[S_WEEKDAYS] = {"sun", "mon", "tue", "wed",
                                                        "thu", "fri", "sat"};

typedef struct {
    const char *name; //  As a problem says it
    int min, max;
    const char *const *names; //  Names of min.. in order; NULL: none
    int nnames;
} s_field_t;

static const s_field_t s_fields[S_FIELDS] = {
    {"minute", 0, 59, NULL, 0},
    {"hour", 0, 23, NULL, 0},
    {"day-of-month", 1, 31, NULL, 0},
    {"month", 1, 12, s_month_names, S_MONTHS},
    //  7 is Sunday too, folded onto 0 once parsed
    {"day-of-week", 0, 7, s_weekday_names, S_WEEKDAYS},
};

//  The shorthands and what they stand for.
static const struct {
    const char *name;
    const char *expression;
} s_shorthands[] = {
    {"@yearly", "0 0 1 1 *"}, {"@annually", "0 0 1 1 *"}, {"@monthly", "0 0 1 * *"},
    {"@weekly", "0 0 * * 0"}, {"@daily", "0 0 * * *"},    {"@midnight", "0 0 * * *"},
    {"@hourly", "0 * * * *"},
};

typedef struct {
    const char *at;      //  Where reading is
    const char *end;     //  The field's end
    const s_field_t *fd; //  Which field
    char *problem;
    size_t problem_size;
} s_reader_t;

//  Says the field's problem; returns false.
static bool s_fail(s_reader_t *self, const char *format, ...) __attribute__((format(printf, 2, 3)));

static bool s_fail(s_reader_t *self, const char *format, ...)
{
    char said[FQ_CRON_PROBLEM_SIZE];
    va_list args;
    va_start(args, format);
    vsnprintf(said, sizeof said, format, args);
    va_end(args);
    snprintf(self->problem, self->problem_size, "%s: %s", self->fd->name, said);
    return false;
}

//  One value (a number or a name) into *value.
static bool s_value(s_reader_t *self, int *value)
{
    const char *start = self->at;
    if (isdigit((unsigned char)*self->at)) {
        int n = 0;
        while (self->at < self->end && isdigit((unsigned char)*self->at) &&
               self->at - start < S_NUMBER_MAX + 1)
            n = n * 10 + (*self->at++ - '0');
        char word[S_NUMBER_MAX + 2];
        snprintf(word, sizeof word, "%.*s", (int)(self->at - start), start);
        if (self->at - start > S_NUMBER_MAX || n < self->fd->min || n > self->fd->max)
            return s_fail(self, "%s is out of range %d..%d", word, self->fd->min, self->fd->max);
        *value = n;
        return true;
    }
    while (self->at < self->end && isalpha((unsigned char)*self->at) &&
           self->at - start <= S_NAME_MAX)
        self->at++;
    char word[S_NAME_MAX + 2];
    snprintf(word, sizeof word, "%.*s", (int)(self->at - start), start);
    for (int i = 0; self->fd->names && i < self->fd->nnames; i++)
        if (strcasecmp(word, self->fd->names[i]) == 0) {
            *value = self->fd->min + i;
            return true;
        }
    if (self->at == start) {
        char c[2] = {*self->at ? *self->at : ' ', 0};
        return s_fail(self, "expected a number, found \"%s\"", c);
    }
    if (self->fd->names)
        return s_fail(self, "\"%s\" is not a name it takes", word);
    return s_fail(self, "\"%s\" is not a number", word);
}

//  One item: "*", "a" or "a-b", then "/n", its values set in *bits.
static bool s_item(s_reader_t *self, uint64_t *bits)
{
    int lo = self->fd->min, hi = self->fd->max;
    bool single = false;
    if (self->at < self->end && *self->at == '*')
        self->at++;
    else {
        if (!s_value(self, &lo))
            return false;
        hi = lo;
        single = true;
        if (self->at < self->end && *self->at == '-') {
            self->at++;
            single = false;
            if (!s_value(self, &hi))
                return false;
            if (hi < lo)
                return s_fail(self, "range %d-%d goes backwards", lo, hi);
        }
    }
    int step = 1;
    if (self->at < self->end && *self->at == '/') {
        self->at++;
        const char *start = self->at;
        step = 0;
        while (self->at < self->end && isdigit((unsigned char)*self->at) &&
               self->at - start <= S_NUMBER_MAX)
            step = step * 10 + (*self->at++ - '0');
        int span = self->fd->max - self->fd->min + 1;
        if (self->at == start || step < 1 || step > span)
            return s_fail(self, "a step is a number 1..%d", span);
        //  "a/n": from a to the field's end
        if (single)
            hi = self->fd->max;
    }
    if (self->at < self->end && *self->at != ',') {
        char c[2] = {*self->at, 0};
        return s_fail(self, "unexpected \"%s\"", c);
    }
    for (int v = lo; v <= hi; v += step)
        *bits |= (uint64_t)1 << v;
    return true;
}

//  One field's text (start..end) into *bits.
static bool s_field(s_reader_t *self, uint64_t *bits)
{
    *bits = 0;
    if (self->at == self->end)
        return s_fail(self, "is empty");
    while (true) {
        if (!s_item(self, bits))
            return false;
        if (self->at == self->end)
            return true;
        self->at++; //  The comma
        if (self->at == self->end || *self->at == ',')
            return s_fail(self, "an empty item in a list");
    }
}

//  Whether some month given has a day given (day-of-week unrestricted).
static bool s_day_exists(const fq_cron_t *cron)
{
    for (int m = 1; m <= S_MONTHS; m++)
        for (int d = 1; (cron->months >> m & 1) && d <= s_month_days[m - 1]; d++)
            if (cron->days >> d & 1)
                return true;
    return false;
}

bool fq_cron_parse(const char *text, fq_cron_t *cron, char *problem, size_t problem_size)
{
    *cron = (fq_cron_t){0};
    if (strlen(text) > FQ_CRON_MAX) {
        snprintf(problem, problem_size, "a cron expression is at most %d bytes", FQ_CRON_MAX);
        return false;
    }
    while (isspace((unsigned char)*text))
        text++;
    if (*text == '@') {
        size_t len = strcspn(text, " \t\r\n");
        for (size_t i = 0; i < sizeof s_shorthands / sizeof *s_shorthands; i++)
            if (strlen(s_shorthands[i].name) == len &&
                strncasecmp(text, s_shorthands[i].name, len) == 0 &&
                !text[len + strspn(text + len, " \t\r\n")])
                return fq_cron_parse(s_shorthands[i].expression, cron, problem, problem_size);
        snprintf(problem, problem_size,
                 "\"%.*s\" is not one of @yearly, @annually, @monthly, @weekly, @daily, "
                 "@midnight and @hourly",
                 (int)(len > S_NAME_MAX * 4 ? S_NAME_MAX * 4 : len), text);
        return false;
    }
    uint64_t bits[S_FIELDS];
    int fields = 0;
    const char *at = text;
    while (*at) {
        const char *end = at + strcspn(at, " \t\r\n");
        if (fields == S_FIELDS) {
            snprintf(problem, problem_size,
                     "a cron expression has 5 fields (minute hour day-of-month month "
                     "day-of-week), this one more");
            return false;
        }
        s_reader_t reader = {at, end, &s_fields[fields], problem, problem_size};
        if (!s_field(&reader, &bits[fields]))
            return false;
        if (fields == S_DAY)
            cron->days_any = *at == '*';
        if (fields == S_WEEKDAY)
            cron->weekdays_any = *at == '*';
        fields++;
        at = end + strspn(end, " \t\r\n");
    }
    if (fields < S_FIELDS) {
        snprintf(problem, problem_size,
                 "a cron expression has 5 fields (minute hour day-of-month month day-of-week), "
                 "this one %d",
                 fields);
        return false;
    }
    cron->minutes = bits[S_MINUTE];
    cron->hours = (uint32_t)bits[S_HOUR];
    cron->days = (uint32_t)bits[S_DAY];
    cron->months = (uint16_t)bits[S_MONTH];
    //  Sunday written 7 is Sunday 0
    cron->weekdays =
        (uint8_t)((bits[S_WEEKDAY] | bits[S_WEEKDAY] >> S_WEEKDAYS) & ((1u << S_WEEKDAYS) - 1));
    if (!cron->days_any && cron->weekdays_any && !s_day_exists(cron)) {
        snprintf(problem, problem_size,
                 "day-of-month: no month given has such a day, so it would never fire");
        return false;
    }
    return true;
}

bool fq_cron_matches(const fq_cron_t *cron, int month, int day, int weekday, int hour, int minute)
{
    if (!(cron->minutes >> minute & 1) || !(cron->hours >> hour & 1) ||
        !(cron->months >> month & 1))
        return false;
    bool by_day = cron->days >> day & 1, by_weekday = cron->weekdays >> weekday & 1;
    //  Both restricted: either will do (the usual rule of cron)
    if (!cron->days_any && !cron->weekdays_any)
        return by_day || by_weekday;
    return by_day && by_weekday;
}
