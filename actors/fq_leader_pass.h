/*  fq_leader_pass.h — what the actors that run one store pass every
    poll_ms while this fairqd leads share (the webhook feeder, the schedule
    firer): their own database connection, their timer, and the pass run
    only while the lease lets this fairqd dispatch, a database error
    handed to the connection (made again when it was lost). Each such actor
    is its pass and three one-line callbacks that call these. */
#ifndef FQ_LEADER_PASS_H
#define FQ_LEADER_PASS_H

#include "fq_pipeline.h"

//  One pass on store: a negative code when the database failed it.
typedef int(fq_leader_pass_fn)(fq_store_t *store, const fq_pipeline_config_t *config);

//  For the actor's start: its state (*state_p), with a connection named
//  who (for the log) and a tick every poll_ms. args is the actor's
//  fq_pipeline_config_t. Returns 0 or FQ_ENOMEM.
int fq_leader_pass_start(fq_ctx_t *ctx, void *args, const char *who, void **state_p);

//  For a tick: runs pass, if this fairqd may dispatch and its database
//  answers.
void fq_leader_pass_run(void *state, fq_leader_pass_fn *pass);

//  For the actor's stop: closes the connection, frees the state.
void fq_leader_pass_stop(void *state);

#endif
