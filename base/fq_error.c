/*  fq_error.c — text for the codes of fq_error.h. */
#include "fq_error.h"
#include <stdarg.h>
#include <stdio.h>

const char *fq_strerror(int err)
{
    switch (err) {
    case FQ_OK:
        return "success";
#define X(name, text)                                                                              \
    case FQ_##name:                                                                                \
        return text;
        FQ_ERRNO_MAP(X)
#undef X
    default:
        return "unknown error";
    }
}

const char *fq_err_name(int err)
{
    switch (err) {
    case FQ_OK:
        return "OK";
#define X(name, text)                                                                              \
    case FQ_##name:                                                                                \
        return #name;
        FQ_ERRNO_MAP(X)
#undef X
    default:
        return "EUNKNOWN";
    }
}

void fq_error_format(char *error, size_t size, const char *format, ...)
{
    if (!error || size == 0)
        return;
    va_list args;
    va_start(args, format);
    vsnprintf(error, size, format, args);
    va_end(args);
}
