/*  fq_buf.c — the one growable byte buffer of fairq (see fq_buf.h). */
#include "fq_buf.h"

#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

//  The first allocation: one page, enough for most lines and rows.
#define S_FIRST_CAPACITY 4096

int fq_buf_reserve(fq_buf_t *buf, size_t more)
{
    return fq_buf_reserve_bounded(buf, more, SIZE_MAX - 1);
}

int fq_buf_reserve_bounded(fq_buf_t *buf, size_t more, size_t bound)
{
    if (bound > SIZE_MAX - 1 || buf->size > bound || more > bound - buf->size)
        return -1;
    size_t needed = buf->size + more + 1;
    if (needed <= buf->capacity)
        return 0;
    size_t capacity = buf->capacity ? buf->capacity : S_FIRST_CAPACITY;
    while (capacity < needed)
        capacity = capacity > SIZE_MAX / 2 ? needed : capacity * 2;
    if (capacity > bound + 1)
        capacity = bound + 1; //  Still >= needed: size + more <= bound
    char *data = realloc(buf->data, capacity);
    if (!data)
        return -1;
    if (!buf->data)
        data[0] = 0; //  A fresh buffer is the empty string at once
    buf->data = data;
    buf->capacity = capacity;
    return 0;
}

int fq_buf_add(fq_buf_t *buf, const char *data, size_t size)
{
    if (fq_buf_reserve(buf, size))
        return -1;
    if (size)
        memcpy(buf->data + buf->size, data, size);
    buf->size += size;
    buf->data[buf->size] = 0;
    return 0;
}

int fq_buf_add_str(fq_buf_t *buf, const char *text)
{
    return fq_buf_add(buf, text, strlen(text));
}

int fq_buf_add_char(fq_buf_t *buf, char c)
{
    return fq_buf_add(buf, &c, 1);
}

int fq_buf_vprintf(fq_buf_t *buf, const char *format, va_list args)
{
    va_list copy;
    va_copy(copy, args);
    int len = vsnprintf(NULL, 0, format, copy);
    va_end(copy);
    if (len < 0 || fq_buf_reserve(buf, (size_t)len))
        return -1;
    vsnprintf(buf->data + buf->size, (size_t)len + 1, format, args);
    buf->size += (size_t)len;
    return 0;
}

int fq_buf_printf(fq_buf_t *buf, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    int rc = fq_buf_vprintf(buf, format, args);
    va_end(args);
    return rc;
}

void fq_buf_reset(fq_buf_t *buf)
{
    buf->size = 0;
    if (buf->data)
        buf->data[0] = 0;
}

char *fq_buf_take(fq_buf_t *buf)
{
    char *data = buf->data ? buf->data : strdup("");
    *buf = (fq_buf_t){0};
    return data;
}

void fq_buf_free(fq_buf_t *buf)
{
    free(buf->data);
    *buf = (fq_buf_t){0};
}
