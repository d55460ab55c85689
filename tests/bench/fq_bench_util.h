/*  fq_bench_util.h — what the benchmark programs share: parsing counts,
    medians of repeated runs, and thousands separators in the tables. */
#ifndef FQ_BENCH_UTIL_H
#define FQ_BENCH_UTIL_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  Most repetitions of one measurement (--runs).
#define FQ_BENCH_MAX_RUNS 1000

//  A positive decimal count no larger than max into *out; 0 or -1.
static inline int fq_bench_parse_count(const char *text, uint64_t max, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long value = strtoull(text, &end, 10);
    if (errno || end == text || *end || text[0] == '-' || value == 0 || value > max)
        return -1;
    *out = value;
    return 0;
}

static inline int fq_bench_double_compare(const void *a, const void *b)
{
    double x = *(const double *)a;
    double y = *(const double *)b;
    return x < y ? -1 : x > y;
}

//  Median of n values (1..FQ_BENCH_MAX_RUNS); values stay in their order.
static inline double fq_bench_median(const double *values, int n)
{
    double sorted[FQ_BENCH_MAX_RUNS];
    memcpy(sorted, values, (size_t)n * sizeof *sorted);
    qsort(sorted, (size_t)n, sizeof *sorted, fq_bench_double_compare);
    return n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
}

//  value rounded, with thousands separators ("1,234,567"), into out.
static inline const char *fq_bench_grouped(double value, char *out, size_t size)
{
    char digits[32];
    snprintf(digits, sizeof digits, "%.0f", value);
    size_t len = strlen(digits), o = 0;
    for (size_t i = 0; i < len && o + 2 < size; i++) {
        if (i && (len - i) % 3 == 0)
            out[o++] = ',';
        out[o++] = digits[i];
    }
    out[o] = 0;
    return out;
}

#endif
