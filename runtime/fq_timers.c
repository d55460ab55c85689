/*  fq_timers.c — binary min-heap of timers with lazy cancellation. */
#include "fq_timers.h"
#include "fq_error.h"
#include "fq_intkeys.h"
#include <czmq.h>

struct fq_timers {
    fq_timer_t **heap;
    size_t size;
    size_t capacity;
    zhashx_t *live; //  id -> timer, for cancel; entries do not own timers
    int last_id;
};

fq_timers_t *fq_timers_new(void)
{
    fq_timers_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    self->live = zhashx_new();
    if (!self->live) {
        free(self);
        return NULL;
    }
    fq_intkeys_use(self->live);
    return self;
}

void fq_timer_free(fq_timer_t **timer_p)
{
    fq_timer_t *timer = *timer_p;
    if (!timer)
        return;
    if (timer->payload_free)
        timer->payload_free(timer->payload);
    free(timer);
    *timer_p = NULL;
}

void fq_timers_destroy(fq_timers_t **self_p)
{
    fq_timers_t *self = *self_p;
    if (!self)
        return;
    for (size_t i = 0; i < self->size; i++)
        fq_timer_free(&self->heap[i]);
    free(self->heap);
    zhashx_destroy(&self->live);
    free(self);
    *self_p = NULL;
}

static bool s_before(const fq_timer_t *a, const fq_timer_t *b)
{
    return a->deadline < b->deadline || (a->deadline == b->deadline && a->id < b->id);
}

static void s_sift_up(fq_timers_t *self, size_t i)
{
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!s_before(self->heap[i], self->heap[parent]))
            break;
        fq_timer_t *tmp = self->heap[i];
        self->heap[i] = self->heap[parent];
        self->heap[parent] = tmp;
        i = parent;
    }
}

static void s_sift_down(fq_timers_t *self, size_t i)
{
    while (true) {
        size_t left = 2 * i + 1, right = left + 1, least = i;
        if (left < self->size && s_before(self->heap[left], self->heap[least]))
            least = left;
        if (right < self->size && s_before(self->heap[right], self->heap[least]))
            least = right;
        if (least == i)
            break;
        fq_timer_t *tmp = self->heap[i];
        self->heap[i] = self->heap[least];
        self->heap[least] = tmp;
        i = least;
    }
}

static int s_push(fq_timers_t *self, fq_timer_t *timer)
{
    if (self->size == self->capacity) {
        size_t capacity = self->capacity ? self->capacity * 2 : 16;
        fq_timer_t **heap = realloc(self->heap, capacity * sizeof *heap);
        if (!heap)
            return FQ_ENOMEM;
        self->heap = heap;
        self->capacity = capacity;
    }
    self->heap[self->size++] = timer;
    s_sift_up(self, self->size - 1);
    return 0;
}

static fq_timer_t *s_pop(fq_timers_t *self)
{
    fq_timer_t *top = self->heap[0];
    self->heap[0] = self->heap[--self->size];
    if (self->size)
        s_sift_down(self, 0);
    return top;
}

int fq_timers_add(fq_timers_t *self, int64_t now, int delay_ms, int interval_ms, int kind,
                  void *payload, void (*payload_free)(void *payload))
{
    fq_timer_t *timer = calloc(1, sizeof *timer);
    if (!timer) {
        if (payload_free)
            payload_free(payload);
        return FQ_ENOMEM;
    }
    //  Ids wrap after 2^31 timers; an id still in use is skipped.
    do
        self->last_id = self->last_id == INT32_MAX ? 1 : self->last_id + 1;
    while (fq_intkey_lookup(self->live, self->last_id));
    timer->id = self->last_id;
    timer->kind = kind;
    timer->deadline = now + (delay_ms > 0 ? delay_ms : 0);
    timer->interval_ms = interval_ms > 0 ? interval_ms : 0;
    timer->payload = payload;
    timer->payload_free = payload_free;
    if (s_push(self, timer)) {
        fq_timer_free(&timer); //  Not in the heap: nobody else would free it
        return FQ_ENOMEM;
    }
    if (fq_intkey_insert(self->live, timer->id, timer) != 0) {
        //  In the heap but not cancellable: leave it cancelled, freed when due
        timer->cancelled = true;
        return FQ_ENOMEM;
    }
    return timer->id;
}

void fq_timers_cancel(fq_timers_t *self, int id)
{
    if (id <= 0)
        return; //  No timer has such an id, and 0 would be a NULL key to zhashx
    fq_timer_t *timer = fq_intkey_lookup(self->live, id);
    if (timer) {
        timer->cancelled = true;
        fq_intkey_delete(self->live, id);
    }
}

long fq_timers_timeout(fq_timers_t *self, int64_t now)
{
    while (self->size && self->heap[0]->cancelled) {
        fq_timer_t *dead = s_pop(self);
        fq_timer_free(&dead);
    }
    if (!self->size)
        return -1;
    int64_t wait = self->heap[0]->deadline - now;
    return wait > 0 ? (long)wait : 0;
}

fq_timer_t *fq_timers_pop_due(fq_timers_t *self, int64_t now)
{
    while (self->size && self->heap[0]->deadline <= now) {
        fq_timer_t *timer = s_pop(self);
        if (timer->cancelled) {
            fq_timer_free(&timer);
            continue;
        }
        if (timer->interval_ms) {
            //  Catch up from now, not from the missed deadline, so a slow
            //  handler does not cause a burst of back-to-back ticks.
            timer->deadline = now + timer->interval_ms;
            if (s_push(self, timer)) {
                fq_intkey_delete(self->live, timer->id);
                fq_timer_free(&timer);
                continue;
            }
            return timer;
        }
        fq_intkey_delete(self->live, timer->id);
        return timer;
    }
    return NULL;
}
