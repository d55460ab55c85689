/*  fq_cron.h — a schedule's cron expression (docs/operations.md,
    "Recurring sends"): parsed and checked once, when a schedule is made or
    changed, into the sets of minutes, hours, days, months and weekdays it
    names. Pure: no time zone, no clock, no I/O. Which instant a firing
    falls on is PostgreSQL's to say (fairq.schedule_next, migration 0025),
    which holds the time zone database; this says only which local times
    match, and why a text is no expression.

    The syntax is the standard five fields, minute hour day-of-month month
    day-of-week, each a list of items separated by commas, an item "*", a
    value, or a range "a-b", each optionally with a step "/n" ("a/n" is
    "a-max/n"). Months take JAN..DEC, weekdays SUN..SAT (any case); Sunday
    is 0 or 7. When both day-of-month and day-of-week are restricted
    (neither begins with "*"), a day matches either. The shorthands
    @yearly (@annually), @monthly, @weekly, @daily (@midnight) and @hourly
    stand for their expressions.
*/
#ifndef FQ_CRON_H
#define FQ_CRON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

//  Longest expression taken, bytes (the schema's schedules.cron CHECK):
//  five fields listing every value fit in less.
#define FQ_CRON_MAX 200

//  Room for a problem's words.
#define FQ_CRON_PROBLEM_SIZE 160

//  What an expression matches: bit n set when value n matches.
typedef struct {
    uint64_t minutes; //  0..59
    uint32_t hours;   //  0..23
    uint32_t days;    //  1..31 (day of month)
    uint16_t months;  //  1..12
    uint8_t weekdays; //  0..6, Sunday 0
    bool days_any;    //  Day-of-month begins with "*": unrestricted for the OR rule
    bool weekdays_any;
} fq_cron_t;

//  Parses text into *cron. Returns true, or false with the problem in
//  problem (which field, and why: "hour: 24 is out of range 0..23").
//  An expression that can never fire (day-of-month 30 in February only)
//  is refused too.
bool fq_cron_parse(const char *text, fq_cron_t *cron, char *problem, size_t problem_size);

//  Whether the local date and time match (month 1..12, day 1..31,
//  weekday 0..6 with Sunday 0). The rule PostgreSQL's fairq.schedule_next
//  applies, stated once more in C for the tests and for clients of the
//  parse.
bool fq_cron_matches(const fq_cron_t *cron, int month, int day, int weekday, int hour, int minute);

#endif
