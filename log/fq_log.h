/*  fq_log.h — fairq's log lines, from any thread.

    Lines go to stdout as "2025-01-02 03:04:05.678 UTC [pid] LEVEL:  text",
    one per event, messages in PostgreSQL's style (lowercase, no trailing
    period). A message spanning lines (libpq's errors) is folded into one.
    The runtime's lines and CZMQ's own come here too (fq_czmq_log.h), so a
    fairq program writes one format. The threshold and the stream are
    process-wide: the one piece of global state, as a log is one per
    process. The stream is set once at start, before any thread logs; the
    threshold may change at any time (fairqd's reload). */
#ifndef FQ_LOG_H
#define FQ_LOG_H

#include <stdio.h>

typedef enum {
    FQ_LOG_DEBUG,
    FQ_LOG_INFO,
    FQ_LOG_WARNING,
    FQ_LOG_ERROR,
    FQ_LOG_FATAL
} fq_log_level_t;

//  Sets the least severe level logged (FQ_LOG_INFO until called). Any
//  thread, any time: lines logged after it follow the new level.
void fq_log_set_level(fq_log_level_t level);

//  Sets the stream lines go to (stdout until called), which stays the
//  caller's: for a program whose stdout carries something else (a test
//  peer's answers, a benchmark's figures).
void fq_log_set_stream(FILE *stream);

//  Parses "debug", "info", "warning" or "error"; returns 0 or -1.
int fq_log_level_parse(const char *name, fq_log_level_t *level);

void fq_log(fq_log_level_t level, const char *format, ...) __attribute__((format(printf, 2, 3)));

#endif
