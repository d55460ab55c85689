/*  fq_rate.c — parsing and printing a rate as operators write it (see
    fq_rate.h). */
#include "fq_rate.h"
#include "fq_error.h"
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

//  The periods a rate may have, in seconds.
#define S_SECOND 1
#define S_MINUTE 60
#define S_HOUR   3600
#define S_DAY    86400

//  The most of an operator's text a message repeats: enough to recognise
//  it, not so much that a pasted paragraph pushes out what is wrong.
#define S_SHOWN_MAX 40

//  Room for the part of a message after 'rate "...": '.
#define S_DETAIL_SIZE 160

//  What every message ends with: the accepted forms, once.
#define S_UNITS "units are s, min, h, d (also sec, m, hour, day)"
#define S_FORM  "write COUNT/UNIT, as 100/s, 5/min, 10000/h or 1000/d"

typedef struct {
    const char *name;
    int period_s;
} s_unit_t;

//  The canonical name of each period comes first: fq_rate_format prints it.
static const s_unit_t s_units[] = {
    {"s", S_SECOND},   {"min", S_MINUTE}, {"h", S_HOUR},    {"d", S_DAY},
    {"sec", S_SECOND}, {"m", S_MINUTE},   {"hour", S_HOUR}, {"day", S_DAY},
};

#define S_UNIT_COUNT (sizeof s_units / sizeof s_units[0])

//  Writes 'rate "TEXT": DETAIL' into problem, TEXT cut at S_SHOWN_MAX bytes.
static int s_problem(char *problem, size_t problem_size, const char *text, const char *format, ...)
    __attribute__((format(printf, 4, 5)));

static int s_problem(char *problem, size_t problem_size, const char *text, const char *format, ...)
{
    char detail[S_DETAIL_SIZE];
    va_list args;
    va_start(args, format);
    vsnprintf(detail, sizeof detail, format, args);
    va_end(args);
    size_t length = strlen(text);
    int shown = length > S_SHOWN_MAX ? S_SHOWN_MAX : (int)length;
    fq_error_format(problem, problem_size, "rate \"%.*s%s\": %s", shown, text,
                    length > S_SHOWN_MAX ? "..." : "", detail);
    return FQ_EINVAL;
}

//  Reads count from text[0..length): digits only (no sign, no exponent, no
//  space), 1 to FQ_RATE_COUNT_MAX. Returns 0 or -1.
static int s_count(const char *text, size_t length, int64_t *count)
{
    int64_t value = 0;
    for (size_t i = 0; i < length; i++) {
        if (text[i] < '0' || text[i] > '9')
            return -1;
        value = value * 10 + (text[i] - '0');
        if (value > FQ_RATE_COUNT_MAX) //  Stop before it can overflow
            return -1;
    }
    if (value < 1)
        return -1;
    *count = value;
    return 0;
}

int fq_rate_parse(const char *text, fq_rate_t *out, char *problem, size_t problem_size)
{
    if (!text)
        text = "";
    if (!*text)
        return s_problem(problem, problem_size, text, "empty; " S_FORM);
    const char *slash = strchr(text, '/');
    if (!slash)
        return s_problem(problem, problem_size, text, "no unit; " S_FORM);
    if (slash == text)
        return s_problem(problem, problem_size, text, "no count before \"/\"; " S_FORM);

    fq_rate_t rate = {0, 0};
    size_t length = (size_t)(slash - text);
    if (s_count(text, length, &rate.count) != 0) {
        int shown = length > S_SHOWN_MAX ? S_SHOWN_MAX : (int)length;
        return s_problem(problem, problem_size, text,
                         "count \"%.*s\" is not a whole number from 1 to %lld", shown, text,
                         (long long)FQ_RATE_COUNT_MAX);
    }
    const char *unit = slash + 1;
    for (size_t i = 0; i < S_UNIT_COUNT; i++)
        if (strcmp(unit, s_units[i].name) == 0)
            rate.period_s = s_units[i].period_s;
    if (rate.period_s == 0) {
        size_t unit_length = strlen(unit);
        int shown = unit_length > S_SHOWN_MAX ? S_SHOWN_MAX : (int)unit_length;
        return s_problem(problem, problem_size, text, "unknown unit \"%.*s\"; " S_UNITS, shown,
                         unit);
    }
    *out = rate;
    return 0;
}

void fq_rate_format(const fq_rate_t *rate, char out[FQ_RATE_TEXT_SIZE])
{
    for (size_t i = 0; i < S_UNIT_COUNT; i++)
        if (s_units[i].period_s == rate->period_s) {
            snprintf(out, FQ_RATE_TEXT_SIZE, "%lld/%s", (long long)rate->count, s_units[i].name);
            return;
        }
    snprintf(out, FQ_RATE_TEXT_SIZE, "%lld/%ds", (long long)rate->count, rate->period_s);
}

double fq_rate_per_s(const fq_rate_t *rate)
{
    if (rate->period_s <= 0)
        return 0;
    return (double)rate->count / rate->period_s;
}

int64_t fq_rate_default_burst(const fq_rate_t *rate)
{
    if (rate->period_s <= 0 || rate->count < 1)
        return 1;
    //  In integers, so that "6000/min" is exactly 100, not 100.0000001 rounded up
    return (rate->count + rate->period_s - 1) / rate->period_s;
}
