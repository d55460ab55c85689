/*  fq_czmq_log.c — CZMQ's own log lines, in fairq's format (see
    fq_czmq_log.h).

    CZMQ's zsys log writes to a stream of the program's choice
    (zsys_set_logstream): it gets one made with fopencookie, which cuts
    what comes into lines and logs each through fq_log. zconfig's parser
    prints with zclock_log instead, deprecated, straight to stdout, and no
    setting changes that: this file defines zclock_log itself, and the
    dynamic linker binds CZMQ's calls to the program's definition, as it
    binds a program's own malloc (CZMQ calls its exported functions through
    the PLT). tests/log checks both ways in a real process.
*/
#include "fq_czmq_log.h"
#include "fq_buf.h"
#include "fq_log.h"
#include <ctype.h>
#include <czmq.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

//  What a routed line says before CZMQ's text, to tell it from fairq's.
#define S_PREFIX "czmq: "

//  CZMQ's level letters (zsys_error ... zsys_debug, and zconfig's "E"):
//  fq_log has no notice, which is logged as info.
static const struct {
    char letter;
    fq_log_level_t level;
} s_levels[] = {
    {'E', FQ_LOG_ERROR}, {'W', FQ_LOG_WARNING}, {'N', FQ_LOG_INFO},
    {'I', FQ_LOG_INFO},  {'D', FQ_LOG_DEBUG},
};

//  CZMQ's time stamp, "%y-%m-%d %H:%M:%S " in local time: a digit where
//  this has a '9'. fq_log stamps each line itself, in UTC.
static const char s_stamp_shape[] = "99-99-99 99:99:99 ";

static pthread_once_t s_once = PTHREAD_ONCE_INIT;

//  zsys's log stream, open for the rest of the process: CZMQ writes to it
//  until its exit handler has run.
static FILE *s_stream;

//  A line not ended yet. stdio calls s_stream_write with the stream
//  locked, so the lock guards this too.
static fq_buf_t s_partial;

//  The fq_log level of a CZMQ level letter; false for another character.
static bool s_level(char letter, fq_log_level_t *level)
{
    for (size_t i = 0; i < sizeof s_levels / sizeof s_levels[0]; i++)
        if (s_levels[i].letter == letter) {
            *level = s_levels[i].level;
            return true;
        }
    return false;
}

//  text past its start word, or NULL when it does not start with it.
static const char *s_after(const char *text, const char *word)
{
    size_t len = strlen(word);
    return strncmp(text, word, len) == 0 ? text + len : NULL;
}

//  text past CZMQ's time stamp, or NULL when it does not start with one.
static const char *s_after_stamp(const char *text)
{
    for (size_t i = 0; i < sizeof s_stamp_shape - 1; i++) {
        bool digit = s_stamp_shape[i] == '9';
        if (digit ? !isdigit((unsigned char)text[i]) : text[i] != s_stamp_shape[i])
            return NULL;
    }
    return text + sizeof s_stamp_shape - 1;
}

//  Logs a line of zsys's: "L: 25-01-02 03:04:05 text", or with a log
//  identity (ZSYS_LOGIDENT) "L: (ident) 25-01-02 03:04:05 text". A line
//  of another shape is logged whole, as info.
static void s_zsys_line(const char *line)
{
    fq_log_level_t level = FQ_LOG_INFO;
    const char *text = s_level(line[0], &level) ? s_after(line + 1, ": ") : NULL;
    if (text && *text == '(') {
        const char *ident_end = strstr(text, ") ");
        text = ident_end ? ident_end + strlen(") ") : NULL;
    }
    text = text ? s_after_stamp(text) : NULL;
    if (text)
        fq_log(level, S_PREFIX "%s", text);
    else
        fq_log(FQ_LOG_INFO, S_PREFIX "%s", line);
}

//  Logs a line of zclock_log's: zconfig's "L (zconfig): text", as
//  "zconfig: text" at L's level. A line of another shape is logged whole,
//  as info.
static void s_zclock_line(const char *line)
{
    fq_log_level_t level = FQ_LOG_INFO;
    const char *name = s_level(line[0], &level) ? s_after(line + 1, " (") : NULL;
    const char *name_end = name ? strstr(name, "): ") : NULL;
    if (name_end)
        fq_log(level, S_PREFIX "%.*s: %s", (int)(name_end - name), name, name_end + strlen("): "));
    else
        fq_log(FQ_LOG_INFO, S_PREFIX "%s", line);
}

//  The stream's writes: whole lines are logged, the rest kept for the
//  next write. Out of memory loses the piece, not the line.
static ssize_t s_stream_write(void *cookie, const char *data, size_t size)
{
    (void)cookie;
    for (size_t at = 0; at < size;) {
        const char *newline = memchr(data + at, '\n', size - at);
        size_t end = newline ? (size_t)(newline - data) : size;
        fq_buf_add(&s_partial, data + at, end - at);
        if (newline && s_partial.size > 0) {
            s_zsys_line(s_partial.data);
            fq_buf_reset(&s_partial);
        }
        at = newline ? end + 1 : size;
    }
    return (ssize_t)size;
}

static void s_route(void)
{
    s_stream = fopencookie(NULL, "w", (cookie_io_functions_t){.write = s_stream_write});
    if (!s_stream)
        return; //  Out of memory: CZMQ's lines keep their own format
    zsys_set_logsystem(false);
    zsys_set_logstream(s_stream);
}

void fq_czmq_log_route(void)
{
    pthread_once(&s_once, s_route);
}

//  Takes the place of CZMQ's zclock_log (see above), which zconfig calls
//  on a file it cannot parse.
void zclock_log(const char *format, ...)
{
    fq_buf_t line = {0};
    va_list args;
    va_start(args, format);
    int rc = fq_buf_vprintf(&line, format, args);
    va_end(args);
    if (rc == 0)
        s_zclock_line(line.data);
    fq_buf_free(&line);
}
