/*  fq_buf.h — the one growable byte buffer of fairq.

    A buffer starts zeroed (fq_buf_t buf = {0}) and owns its data until
    fq_buf_free or fq_buf_take. Its data always ends in a NUL that size does
    not count, so it can be used as a C string. Functions that grow it
    return 0, or -1 when memory runs out and leave it as it was, so callers
    may OR several calls together and check once.
*/
#ifndef FQ_BUF_H
#define FQ_BUF_H

#include <stdarg.h>
#include <stddef.h>

typedef struct {
    char *data; //  NULL until something is added
    size_t size;
    size_t capacity;
} fq_buf_t;

//  Makes room for more bytes after size (and the NUL).
int fq_buf_reserve(fq_buf_t *buf, size_t more);

//  As fq_buf_reserve, for a buffer that may never hold more than bound
//  bytes: it fails when size + more passes bound, and its doubling stops at
//  bound, so a text of known final size is held once, not in a buffer up to
//  twice as large (the HTTP API's bodies, whose size the call announced).
int fq_buf_reserve_bounded(fq_buf_t *buf, size_t more, size_t bound);

//  Appends size bytes of data.
int fq_buf_add(fq_buf_t *buf, const char *data, size_t size);

//  Appends a NUL-terminated string.
int fq_buf_add_str(fq_buf_t *buf, const char *text);

//  Appends one byte.
int fq_buf_add_char(fq_buf_t *buf, char c);

//  Appends printf-style text.
int fq_buf_printf(fq_buf_t *buf, const char *format, ...) __attribute__((format(printf, 2, 3)));
int fq_buf_vprintf(fq_buf_t *buf, const char *format, va_list args)
    __attribute__((format(printf, 2, 0)));

//  Empties the buffer and keeps its memory.
void fq_buf_reset(fq_buf_t *buf);

//  Hands the data (a NUL-terminated string the caller frees) to the caller
//  and leaves the buffer empty; an empty buffer yields "" (or NULL when
//  memory runs out).
char *fq_buf_take(fq_buf_t *buf);

//  Frees the data; the buffer is empty and may be used again.
void fq_buf_free(fq_buf_t *buf);

#endif
