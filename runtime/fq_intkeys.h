/*  fq_intkeys.h — zhashx tables keyed by an integer stored in the key
    pointer itself (internal): ask correlation ids, timer ids. */
#ifndef FQ_INTKEYS_H
#define FQ_INTKEYS_H

#include <czmq.h>

static inline size_t fq_intkey_hash(const void *key)
{
    return (size_t)(uintptr_t)key;
}

static inline int fq_intkey_compare(const void *a, const void *b)
{
    return (uintptr_t)a < (uintptr_t)b ? -1 : (uintptr_t)a > (uintptr_t)b;
}

//  Makes table take integer keys: hashed and compared by value, neither
//  copied nor freed.
static inline void fq_intkeys_use(zhashx_t *table)
{
    zhashx_set_key_hasher(table, fq_intkey_hash);
    zhashx_set_key_comparator(table, fq_intkey_compare);
    zhashx_set_key_duplicator(table, NULL);
    zhashx_set_key_destructor(table, NULL);
}

#endif
