/*  fq_leader_pass.c — a leader's periodic store pass (see fq_leader_pass.h). */
#include "fq_leader_pass.h"
#include "fq_error.h"
#include <stdlib.h>

typedef struct {
    fq_pipeline_config_t *config;
    fq_db_t *db;
} s_self_t;

int fq_leader_pass_start(fq_ctx_t *ctx, void *args, const char *who, void **state_p)
{
    s_self_t *self = calloc(1, sizeof *self);
    if (!self)
        return FQ_ENOMEM;
    self->config = args;
    self->db = fq_pipeline_db(self->config, who);
    fq_tick_t tick = {.what = FQ_TICK_POLL};
    if (!self->db || fq_timer_every(ctx, self->config->poll_ms, &fq_tick_desc, &tick) < 0) {
        fq_db_destroy(&self->db);
        free(self);
        return FQ_ENOMEM;
    }
    *state_p = self;
    return 0;
}

void fq_leader_pass_run(void *state, fq_leader_pass_fn *pass)
{
    s_self_t *self = state;
    if (!fq_pipeline_may_dispatch(self->config))
        return;
    fq_store_t *store = fq_db_store(self->db);
    if (!store)
        return;
    int rc = pass(store, self->config);
    if (rc < 0)
        fq_db_failed(self->db, rc);
}

void fq_leader_pass_stop(void *state)
{
    s_self_t *self = state;
    fq_db_destroy(&self->db);
    free(self);
}
