/*  fq_store_encode.c — values in the text forms the server reads: COPY's
    text format and array literals (see fq_store_internal.h).

    Many values go to the server as one parameter or one COPY stream
    rather than a statement each: a batch of acks is one array, a chunk of
    messages one COPY. These write them into the shared buffer (fq_buf.h).
*/
#include "fq_store_internal.h"
#include <string.h>

//  The four characters COPY treats specially become backslash escapes.
int fq_store_copy_text(fq_buf_t *buf, const char *text, size_t size)
{
    if (fq_buf_reserve(buf, 2 * size + 1))
        return -1;
    char *out = buf->data + buf->size;
    for (size_t i = 0; i < size; i++) {
        char c = text[i];
        if (c == '\\' || c == '\t' || c == '\n' || c == '\r') {
            *out++ = '\\';
            c = c == '\t' ? 't' : c == '\n' ? 'n' : c == '\r' ? 'r' : '\\';
        }
        *out++ = c;
    }
    buf->size = (size_t)(out - buf->data);
    buf->data[buf->size] = 0;
    return 0;
}

//  Quoted, with quotes and backslashes escaped: any text is one element,
//  whatever commas or braces it holds.
int fq_store_array_text(fq_buf_t *buf, const char *text)
{
    if (!text)
        return fq_buf_add_str(buf, "NULL");
    return fq_store_array_text_n(buf, text, strlen(text));
}

int fq_store_array_text_n(fq_buf_t *buf, const char *text, size_t size)
{
    if (fq_buf_reserve(buf, 2 * size + 3))
        return -1;
    char *out = buf->data + buf->size;
    *out++ = '"';
    for (size_t i = 0; i < size; i++) {
        if (text[i] == '"' || text[i] == '\\')
            *out++ = '\\';
        *out++ = text[i];
    }
    *out++ = '"';
    buf->size = (size_t)(out - buf->data);
    buf->data[buf->size] = 0;
    return 0;
}

int fq_store_id_array(fq_buf_t *buf, const int64_t *ids, size_t count, size_t stride)
{
    //  Digits written by hand: a DISPATCH's and an ack batch's arrays are
    //  thousands of ids a second, and printf was a tenth of fairqd's time
    //  with 100,000 open requests (fq_bench_pipeline --scale)
    enum { DIGITS = 21 }; //  A sign and 19 digits, and a comma
    if (fq_buf_reserve(buf, count * DIGITS + 2) != 0)
        return -1;
    char *out = buf->data + buf->size;
    *out++ = '{';
    for (size_t i = 0; i < count; i++) {
        int64_t id = *(const int64_t *)((const char *)ids + i * stride);
        if (i)
            *out++ = ',';
        uint64_t value = id < 0 ? (uint64_t)0 - (uint64_t)id : (uint64_t)id;
        if (id < 0)
            *out++ = '-';
        char digits[DIGITS];
        int n = 0;
        do
            digits[n++] = (char)('0' + value % 10);
        while ((value /= 10) > 0);
        while (n > 0)
            *out++ = digits[--n];
    }
    *out++ = '}';
    buf->size = (size_t)(out - buf->data);
    buf->data[buf->size] = 0;
    return 0;
}
