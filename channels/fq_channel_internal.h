/*  fq_channel_internal.h — what the channel module's files share
    (internal): nothing outside channels/ includes it. */
#ifndef FQ_CHANNEL_INTERNAL_H
#define FQ_CHANNEL_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

//  Whether the size bytes at value hold a character a header value may
//  not: a control character other than the tab, or DEL.
bool fq_channel_value_has_control(const char *value, size_t size);

#endif
