/*  fq_error.h — fairq error codes.

    Every fallible fairq function returns 0 (or a count) on success and a
    negative fq error code on failure, as libuv does. The table below is the
    one place the codes are defined; fq_strerror and fq_err_name come from it.
*/
#ifndef FQ_ERROR_H
#define FQ_ERROR_H

#include <stddef.h>

#define FQ_ERRNO_MAP(X)                                                                            \
    X(EINVAL, "invalid argument")                                                                  \
    X(ENOMEM, "out of memory")                                                                     \
    X(ETIMEDOUT, "timed out")                                                                      \
    X(ENOACTOR, "no actor at that address")                                                        \
    X(EEXIST, "an actor with that name already exists")                                            \
    X(EDECODE, "message could not be decoded")                                                     \
    X(ETOOBIG, "message too large")                                                                \
    X(EFULL, "mailbox full")                                                                       \
    X(ECLOSED, "actor system is closed")                                                           \
    X(EPEER, "remote peer unreachable")                                                            \
    X(EREFUSED, "refused by remote peer")                                                          \
    X(EFAILED, "actor failed")                                                                     \
    X(EIO, "i/o error")                                                                            \
    X(ENOFIELD, "template field missing")                                                          \
    X(EFIELDTYPE, "template field is not a string, number or boolean")                             \
    X(EHEADER, "header value holds CR, LF or NUL")                                                 \
    X(EDB, "database error")                                                                       \
    X(ESCHEMA, "database schema is newer than this program")                                       \
    X(ENOTFOUND, "not found")                                                                      \
    X(ECONFLICT, "changed by someone else meanwhile")                                              \
    X(EDEPOSED, "another fairqd leads now")

typedef enum {
    FQ_OK = 0,
#define X(name, text) FQ_##name,
    FQ_ERRNO_FIRST_ = -1000,
    FQ_ERRNO_MAP(X)
#undef X
} fq_errno_t;

//  Human-readable text for an fq error code; never NULL, static storage.
const char *fq_strerror(int err);

//  The code's name ("ETIMEDOUT"); never NULL, static storage.
const char *fq_err_name(int err);

//  Writes a message (printf-style) into a caller's error buffer of size
//  bytes, truncated to fit; does nothing when error is NULL or size 0.
//  For functions that return a code and explain it in a buffer.
void fq_error_format(char *error, size_t size, const char *format, ...)
    __attribute__((format(printf, 3, 4)));

#endif
