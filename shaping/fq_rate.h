/*  fq_rate.h — a destination's rate as operators write it: "100/s".

    A rate is a whole count of messages per period, never a fraction per
    second, so that "1000/d" means exactly that and prints back unchanged.
    The accepted text is small on purpose: COUNT/UNIT, lowercase, no
    spaces, where COUNT is 1 to FQ_RATE_COUNT_MAX and UNIT one of

        s   sec    per second      (prints as "/s")
        m   min    per minute      (prints as "/min")
        h   hour   per hour        (prints as "/h")
        d   day    per day         (prints as "/d")

    "m" is a minute, never a month: no rate is written per month.
    Pure logic, no I/O (shaping/ uses libc and base/ only).
*/
#ifndef FQ_RATE_H
#define FQ_RATE_H

#include <stddef.h>
#include <stdint.h>

//  The largest count: a billion per period is beyond any receiver, and a
//  bound keeps every rate exact in a double and its text short.
#define FQ_RATE_COUNT_MAX INT64_C(1000000000)

//  Room for any rate's canonical text and its NUL ("1000000000/min").
#define FQ_RATE_TEXT_SIZE 32

typedef struct {
    int64_t count; //  Messages per period, 1 to FQ_RATE_COUNT_MAX
    int period_s;  //  1, 60, 3600 or 86400
} fq_rate_t;

//  Parses text ("100/s", "5/min", "10000/h", "1000/d", or the other unit
//  names above) into *out. Returns 0, or FQ_EINVAL with *out untouched and
//  problem (when not NULL) saying what is wrong and what is accepted, as
//  'rate "10/x": unknown unit "x"; units are s, min, h, d (also sec, m,
//  hour, day)'. text NULL is taken as "".
int fq_rate_parse(const char *text, fq_rate_t *out, char *problem, size_t problem_size);

//  Writes the canonical text of rate into out ("100/s", "5/min", "10000/h",
//  "1000/d"), which fq_rate_parse reads back to the same rate. A period
//  other than the four (a caller's mistake) prints as "COUNT/Ns", visibly
//  wrong rather than silently rounded.
void fq_rate_format(const fq_rate_t *rate, char out[FQ_RATE_TEXT_SIZE]);

//  The rate in messages per second (0 for a period that is not positive).
double fq_rate_per_s(const fq_rate_t *rate);

//  The burst a rate gets when none is configured: one second's worth,
//  rounded up, at least 1 ("100/s" 100, "150/min" 3, "1000/d" 1), so a
//  slow rate still lets a message go at once and a fast one is not held
//  to a trickle within its second.
int64_t fq_rate_default_burst(const fq_rate_t *rate);

#endif
