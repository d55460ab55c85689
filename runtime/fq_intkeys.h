/*  fq_intkeys.h — zhashx tables keyed by a non-zero integer stored in the
    key pointer itself: ask correlation ids, timer ids, and the message,
    request, tenant and sender ids of the actors.

    Every access goes through these helpers, never through zhashx with a
    cast: the key 0 is the NULL pointer to CZMQ, whose zhashx asserts on a
    NULL key, and many keys come from outside (a peer's correlation id, a
    sender's message id). Here 0 is simply never in a table: a lookup of 0
    finds nothing, an insert of 0 is refused, a delete of 0 does nothing. */
#ifndef FQ_INTKEYS_H
#define FQ_INTKEYS_H

#include <czmq.h>
#include <stdint.h>

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

//  The item stored under key, or NULL (always NULL for 0).
static inline void *fq_intkey_lookup(zhashx_t *table, uint64_t key)
{
    return key ? zhashx_lookup(table, (void *)(uintptr_t)key) : NULL;
}

//  Stores item under key. Returns 0, or -1 if key is 0 or already present.
static inline int fq_intkey_insert(zhashx_t *table, uint64_t key, void *item)
{
    return key ? zhashx_insert(table, (void *)(uintptr_t)key, item) : -1;
}

//  Stores item under key, replacing what was there (nothing for 0).
static inline void fq_intkey_update(zhashx_t *table, uint64_t key, void *item)
{
    if (key)
        zhashx_update(table, (void *)(uintptr_t)key, item);
}

//  Removes key's item (destroyed if the table has a destructor).
static inline void fq_intkey_delete(zhashx_t *table, uint64_t key)
{
    if (key)
        zhashx_delete(table, (void *)(uintptr_t)key);
}

//  The key of the item zhashx_first/zhashx_next returned last.
static inline uint64_t fq_intkey_cursor(zhashx_t *table)
{
    return (uint64_t)(uintptr_t)zhashx_cursor(table);
}

#endif
