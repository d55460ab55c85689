/*  fq_row_cache.c — the scheduler's paged rows (see fq_row_cache.h). */
#include "fq_row_cache.h"
#include "fq_error.h"
#include "fq_intkeys.h"
#include <czmq.h>
#include <stdlib.h>
#include <string.h>

//  A row and its strings in one block, the row first: the block is what
//  fq_row_cache_take gives out, freed with free().
typedef struct {
    fq_message_row_t row;
    int64_t paged_us;
    size_t bytes;
    void *handle; //  In the age order (zlistx)
} s_entry_t;

struct fq_row_cache {
    zhashx_t *by_id; //  id -> s_entry_t* (not owned: the list owns)
    zlistx_t *aged;  //  The entries, oldest first
    size_t bytes, max_bytes;
    int64_t fresh_us;
};

fq_row_cache_t *fq_row_cache_new(size_t max_bytes, int64_t fresh_us)
{
    fq_row_cache_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    self->by_id = zhashx_new();
    self->aged = zlistx_new();
    if (!self->by_id || !self->aged) {
        zhashx_destroy(&self->by_id);
        zlistx_destroy(&self->aged);
        free(self);
        return NULL;
    }
    fq_intkeys_use(self->by_id);
    self->max_bytes = max_bytes;
    self->fresh_us = fresh_us;
    return self;
}

//  Takes entry out of both indexes; the caller frees or gives it out.
static void s_unlink(fq_row_cache_t *self, s_entry_t *entry)
{
    fq_intkey_delete(self->by_id, (uint64_t)entry->row.id);
    zlistx_detach(self->aged, entry->handle);
    self->bytes -= entry->bytes;
}

void fq_row_cache_destroy(fq_row_cache_t **self_p)
{
    fq_row_cache_t *self = *self_p;
    if (!self)
        return;
    for (s_entry_t *entry = zlistx_first(self->aged); entry; entry = zlistx_next(self->aged))
        free(entry);
    zlistx_destroy(&self->aged);
    zhashx_destroy(&self->by_id);
    free(self);
    *self_p = NULL;
}

bool fq_row_cache_has_room(const fq_row_cache_t *self)
{
    return self->bytes < self->max_bytes;
}

//  Copies s (NULL as "") to *text and points *to at it.
static void s_copy(char **text, const char **to, const char *s)
{
    size_t len = s ? strlen(s) : 0;
    memcpy(*text, s ? s : "", len + 1);
    *to = *text;
    *text += len + 1;
}

int fq_row_cache_put(fq_row_cache_t *self, const fq_message_row_t *row, int64_t now_us)
{
    fq_row_cache_drop(self, row->id);
    if (!fq_row_cache_has_room(self))
        return 1;
    size_t strings = (row->recipient ? strlen(row->recipient) : 0) + 1 +
                     (row->fields ? strlen(row->fields) : 0) + 1 +
                     (row->destination ? strlen(row->destination) : 0) + 1;
    s_entry_t *entry = malloc(sizeof *entry + strings);
    if (!entry)
        return FQ_ENOMEM;
    *entry = (s_entry_t){.row = *row, .paged_us = now_us, .bytes = sizeof *entry + strings};
    char *text = (char *)(entry + 1);
    s_copy(&text, &entry->row.recipient, row->recipient);
    s_copy(&text, &entry->row.fields, row->fields);
    s_copy(&text, &entry->row.destination, row->destination);
    entry->handle = zlistx_add_end(self->aged, entry);
    if (!entry->handle || fq_intkey_insert(self->by_id, (uint64_t)row->id, entry) != 0) {
        if (entry->handle)
            zlistx_detach(self->aged, entry->handle);
        free(entry);
        return FQ_ENOMEM;
    }
    self->bytes += entry->bytes;
    return 0;
}

fq_message_row_t *fq_row_cache_take(fq_row_cache_t *self, int64_t id, int64_t now_us,
                                    int64_t *paged_us)
{
    s_entry_t *entry = fq_intkey_lookup(self->by_id, (uint64_t)id);
    if (!entry)
        return NULL;
    s_unlink(self, entry);
    if (now_us - entry->paged_us > self->fresh_us) {
        free(entry);
        return NULL;
    }
    *paged_us = entry->paged_us;
    return &entry->row;
}

void fq_row_cache_drop(fq_row_cache_t *self, int64_t id)
{
    s_entry_t *entry = fq_intkey_lookup(self->by_id, (uint64_t)id);
    if (entry) {
        s_unlink(self, entry);
        free(entry);
    }
}

size_t fq_row_cache_expire(fq_row_cache_t *self, int64_t now_us)
{
    size_t dropped = 0;
    for (s_entry_t *entry = zlistx_first(self->aged);
         entry && now_us - entry->paged_us > self->fresh_us; entry = zlistx_first(self->aged)) {
        s_unlink(self, entry);
        free(entry);
        dropped++;
    }
    return dropped;
}

size_t fq_row_cache_count(const fq_row_cache_t *self)
{
    return zhashx_size(self->by_id);
}

size_t fq_row_cache_bytes(const fq_row_cache_t *self)
{
    return self->bytes;
}
