/*  fq_registry.c — live actors by path, with their watchers. */
#include "fq_registry.h"
#include "fq_error.h"
#include <pthread.h>

struct fq_registry {
    pthread_mutex_t lock;
    zhashx_t *entries; //  path -> fq_entry_t*, one reference each
    char system_id[64];
};

fq_registry_t *fq_registry_new(const char *system_id)
{
    fq_registry_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    self->entries = zhashx_new();
    if (!self->entries) {
        free(self);
        return NULL;
    }
    pthread_mutex_init(&self->lock, NULL);
    snprintf(self->system_id, sizeof self->system_id, "%s", system_id);
    return self;
}

void fq_registry_destroy(fq_registry_t **self_p)
{
    fq_registry_t *self = *self_p;
    if (!self)
        return;
    fq_entry_t *entry = zhashx_first(self->entries);
    while (entry) {
        atomic_store(&entry->alive, false);
        fq_entry_release(&entry);
        entry = zhashx_next(self->entries);
    }
    zhashx_destroy(&self->entries);
    pthread_mutex_destroy(&self->lock);
    free(self);
    *self_p = NULL;
}

void fq_entry_retain(fq_entry_t *entry)
{
    atomic_fetch_add(&entry->refs, 1);
}

void fq_entry_release(fq_entry_t **entry_p)
{
    fq_entry_t *entry = *entry_p;
    if (!entry)
        return;
    *entry_p = NULL;
    if (atomic_fetch_sub(&entry->refs, 1) == 1) {
        zlistx_destroy(&entry->watchers);
        free(entry);
    }
}

int fq_registry_add(fq_registry_t *self, const char *path, fq_entry_t **entry_p)
{
    if (!fq_path_valid(path))
        return FQ_EINVAL;
    fq_entry_t *entry = aligned_alloc(64, (sizeof(fq_entry_t) + 63) / 64 * 64);
    if (!entry)
        return FQ_ENOMEM;
    memset(entry, 0, sizeof *entry);
    entry->watchers = zlistx_new();
    if (!entry->watchers) {
        free(entry);
        return FQ_ENOMEM;
    }
    zlistx_set_duplicator(entry->watchers, (zlistx_duplicator_fn *)strdup);
    zlistx_set_destructor(entry->watchers, (zlistx_destructor_fn *)zstr_free);
    zlistx_set_comparator(entry->watchers, (zlistx_comparator_fn *)strcmp);
    atomic_init(&entry->refs, 2); //  The registry's and the caller's
    atomic_init(&entry->alive, true);
    snprintf(entry->path, sizeof entry->path, "%s", path);
    snprintf(entry->endpoint, sizeof entry->endpoint, "inproc://fq-%s%s", self->system_id, path);

    pthread_mutex_lock(&self->lock);
    int rc = zhashx_insert(self->entries, entry->path, entry) == 0 ? 0 : FQ_EEXIST;
    pthread_mutex_unlock(&self->lock);
    if (rc) {
        zlistx_destroy(&entry->watchers);
        free(entry);
        return rc;
    }
    *entry_p = entry;
    return 0;
}

fq_entry_t *fq_registry_lookup(fq_registry_t *self, const char *path)
{
    pthread_mutex_lock(&self->lock);
    fq_entry_t *entry = zhashx_lookup(self->entries, path);
    if (entry)
        fq_entry_retain(entry);
    pthread_mutex_unlock(&self->lock);
    return entry;
}

zlistx_t *fq_registry_remove(fq_registry_t *self, fq_entry_t *entry)
{
    zlistx_t *watchers = zlistx_new();
    pthread_mutex_lock(&self->lock);
    atomic_store(&entry->alive, false);
    if (zhashx_lookup(self->entries, entry->path) == entry) {
        zhashx_delete(self->entries, entry->path);
        fq_entry_t *registry_ref = entry;
        fq_entry_release(&registry_ref);
    }
    if (watchers) {
        //  Hand the watcher strings over rather than copying them
        zlistx_t *owned = entry->watchers;
        entry->watchers = watchers;
        watchers = owned;
    }
    pthread_mutex_unlock(&self->lock);
    return watchers;
}

int fq_registry_watch(fq_registry_t *self, const char *target, const char *watcher)
{
    int rc = FQ_ENOACTOR;
    pthread_mutex_lock(&self->lock);
    fq_entry_t *entry = zhashx_lookup(self->entries, target);
    if (entry) {
        if (!zlistx_find(entry->watchers, (void *)watcher))
            zlistx_add_end(entry->watchers, (void *)watcher);
        rc = 0;
    }
    pthread_mutex_unlock(&self->lock);
    return rc;
}

void fq_registry_unwatch(fq_registry_t *self, const char *target, const char *watcher)
{
    pthread_mutex_lock(&self->lock);
    fq_entry_t *entry = zhashx_lookup(self->entries, target);
    void *handle = entry ? zlistx_find(entry->watchers, (void *)watcher) : NULL;
    if (handle)
        zlistx_delete(entry->watchers, handle);
    pthread_mutex_unlock(&self->lock);
}

void fq_registry_foreach(fq_registry_t *self, void (*fn)(const fq_entry_t *entry, void *arg),
                         void *arg)
{
    pthread_mutex_lock(&self->lock);
    for (fq_entry_t *entry = zhashx_first(self->entries); entry; entry = zhashx_next(self->entries))
        fn(entry, arg);
    pthread_mutex_unlock(&self->lock);
}
