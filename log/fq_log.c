/*  fq_log.c — one line per event on stdout (see fq_log.h). */
#include "fq_log.h"
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

//  Longest message; longer ones are cut. libpq's errors, the longest
//  messages logged, are a few hundred bytes.
#define S_MESSAGE_MAX 2048
#define S_NS_PER_MS   1000000L

//  Set by the main thread (at start, and by a reload), read by every
//  thread as it logs: atomic, relaxed, since nothing else hangs on it.
static _Atomic int s_threshold = FQ_LOG_INFO;

//  NULL: stdout, which is no constant to start with.
static FILE *s_stream;

//  How lines tag each level (PostgreSQL's words), and the names of the
//  settable levels, in the order of fq_log_level_t.
static const char *const s_tags[] = {"DEBUG", "INFO", "WARNING", "ERROR", "FATAL"};
static const char *const s_names[] = {"debug", "info", "warning", "error"};

void fq_log_set_level(fq_log_level_t level)
{
    atomic_store_explicit(&s_threshold, (int)level, memory_order_relaxed);
}

void fq_log_set_stream(FILE *stream)
{
    s_stream = stream;
}

int fq_log_level_parse(const char *name, fq_log_level_t *level)
{
    for (size_t i = 0; i < sizeof s_names / sizeof s_names[0]; i++)
        if (strcmp(name, s_names[i]) == 0) {
            *level = (fq_log_level_t)i;
            return 0;
        }
    return -1;
}

//  Copies message to out as one line: each line break, with the blanks
//  around it, becomes "; " (libpq's errors have an indented second line),
//  and other control bytes become spaces.
static void s_one_line(const char *message, char *out, size_t size)
{
    size_t len = 0;
    for (const char *in = message; *in && len + 2 < size;) {
        if (*in == '\n' || *in == '\r') {
            while (len > 0 && (out[len - 1] == ' ' || out[len - 1] == '\t'))
                len--;
            while (*in == '\n' || *in == '\r' || *in == ' ' || *in == '\t')
                in++;
            if (*in && len > 0) {
                out[len++] = ';';
                out[len++] = ' ';
            }
        } else {
            char c = *in++;
            out[len++] = (unsigned char)c < ' ' ? ' ' : c;
        }
    }
    out[len] = 0;
}

void fq_log(fq_log_level_t level, const char *format, ...)
{
    if ((int)level < atomic_load_explicit(&s_threshold, memory_order_relaxed))
        return;
    char message[S_MESSAGE_MAX], line[S_MESSAGE_MAX];
    va_list args;
    va_start(args, format);
    vsnprintf(message, sizeof message, format, args);
    va_end(args);
    s_one_line(message, line, sizeof line);
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    struct tm utc;
    gmtime_r(&now.tv_sec, &utc);
    char stamp[sizeof "2025-01-02 03:04:05"];
    strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S", &utc);
    //  One stdio call per line: stdio locks the stream around it
    FILE *stream = s_stream ? s_stream : stdout;
    fprintf(stream, "%s.%03ld UTC [%d] %s:  %s\n", stamp, now.tv_nsec / S_NS_PER_MS, (int)getpid(),
            s_tags[level], line);
    fflush(stream);
}
