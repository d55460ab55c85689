/*  fq_store_window.c — how far the store may fall behind (see
    fq_store_window.h). */
#include "fq_store_window.h"

uint64_t fq_store_window_size(uint64_t ack_batch)
{
    uint64_t window = ack_batch * FQ_STORE_WINDOW_BATCHES;
    return window ? window : 1;
}

void fq_store_window_init(fq_store_window_t *self, uint64_t ack_batch)
{
    *self = (fq_store_window_t){.window = fq_store_window_size(ack_batch)};
}

uint64_t fq_store_window_tell(fq_store_window_t *self, uint64_t n)
{
    self->told += n;
    return self->told;
}

void fq_store_window_written(fq_store_window_t *self, uint64_t through)
{
    if (through > self->told)
        through = self->told;
    if (through > self->written)
        self->written = through;
}

uint64_t fq_store_window_unwritten(const fq_store_window_t *self, uint64_t gathered)
{
    return self->told - self->written + gathered;
}

bool fq_store_window_full(const fq_store_window_t *self, uint64_t gathered)
{
    return fq_store_window_unwritten(self, gathered) > self->window;
}
