/*  fq_pipeline.c — spawns fairqd's actors; drains them before a stop. */
#include "fq_pipeline.h"
#include "fq_error.h"
#include "fq_log.h"
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

fq_pipeline_config_t *fq_pipeline_config_dup(const fq_pipeline_config_t *config)
{
    fq_pipeline_config_t *copy = malloc(sizeof *copy);
    if (!copy)
        return NULL;
    *copy = *config; //  metrics and lease too: one each, shared by every actor
    copy->database = strdup(config->database);
    //  Resolved here, once: the intake's copy names the server it LISTENs on
    bool own_listen = config->database_listen && *config->database_listen;
    copy->database_listen = strdup(own_listen ? config->database_listen : config->database);
    copy->name = strdup(config->name);
    copy->retry.bounce_pattern =
        strdup(config->retry.bounce_pattern ? config->retry.bounce_pattern : "");
    copy->unsubscribe_url = strdup(config->unsubscribe_url ? config->unsubscribe_url : "");
    copy->unsubscribe_mailto = strdup(config->unsubscribe_mailto ? config->unsubscribe_mailto : "");
    if (!copy->database || !copy->database_listen || !copy->name || !copy->retry.bounce_pattern ||
        !copy->unsubscribe_url || !copy->unsubscribe_mailto) {
        fq_pipeline_config_free(copy);
        return NULL;
    }
    return copy;
}

void fq_pipeline_config_free(void *config)
{
    fq_pipeline_config_t *self = config;
    if (self) {
        free((char *)self->database);
        free((char *)self->database_listen);
        free((char *)self->name);
        free((char *)self->retry.bounce_pattern);
        free((char *)self->unsubscribe_url);
        free((char *)self->unsubscribe_mailto);
        sodium_memzero(self->unsubscribe_key, sizeof self->unsubscribe_key);
        free(self);
    }
}

fq_db_t *fq_pipeline_db(const fq_pipeline_config_t *config, const char *who)
{
    fq_db_t *db = fq_db_new(config->database, who);
    if (db)
        fq_db_set_epoch(db, config->epoch);
    return db;
}

bool fq_pipeline_may_dispatch(const fq_pipeline_config_t *config)
{
    return !config->lease || fq_lease_held(config->lease);
}

fq_http_templates_t *fq_pipeline_http_templates(const fq_request_templates_t *request, char *error,
                                                size_t error_size)
{
    fq_http_spec_t spec = {.method = request->http_method,
                           .url = request->http_url,
                           .header_names = (const char *const *)request->header_names,
                           .header_values = (const char *const *)request->header_values,
                           .nheaders = request->nheaders,
                           .body = request->http_body,
                           .secret = request->signing_secret,
                           .previous_secret = request->previous_secret};
    if (fq_http_body_format_parse(request->http_body_format, &spec.body_format) != 0) {
        fq_error_format(error, error_size, "http.body_format: not json or form");
        return NULL;
    }
    return fq_http_templates_new(&spec, error, error_size);
}

//  How each actor's failure is handled. The scheduler and the dispatcher
//  keep one account between them, in memory: the credit each sender has
//  granted and the messages each holds. Restarting one of them alone would
//  leave that account wrong (credit counted twice or never given back), so
//  their failure escalates: fairqd exits and its supervisor (systemd)
//  starts it again, which rebuilds everything from PostgreSQL and the
//  senders' new HELLOs. The other actors hold nothing that is not in the
//  database, and restart alone.
static fq_strategy_t s_strategy(const fq_behaviour_t *behaviour)
{
    return behaviour == &fq_scheduler_behaviour || behaviour == &fq_dispatcher_behaviour
               ? FQ_SUPERVISE_ESCALATE
               : FQ_SUPERVISE_RESTART;
}

static int s_spawn(fq_system_t *sys, const char *name, const fq_behaviour_t *behaviour,
                   const fq_pipeline_config_t *config)
{
    fq_pipeline_config_t *args = fq_pipeline_config_dup(config);
    if (!args)
        return FQ_ENOMEM;
    fq_spawn_opts_t opts = fq_spawn_opts_default();
    opts.args_free = fq_pipeline_config_free;
    opts.supervision.strategy = s_strategy(behaviour);
    int rc = fq_system_spawn(sys, name, behaviour, args, &opts);
    if (rc)
        fq_log(FQ_LOG_FATAL, "could not start /user/%s: %s", name, fq_strerror(rc));
    return rc;
}

int fq_pipeline_start(fq_system_t *sys, const fq_pipeline_config_t *config)
{
    if (config->splitters < 1 || config->splitters > FQ_SPLITTERS_MAX)
        return FQ_EINVAL;
    //  Those that others talk to first: the store and the scheduler exist
    //  before the dispatcher's first message to them can come
    int rc = s_spawn(sys, "store", &fq_store_writer_behaviour, config);
    if (rc == 0)
        rc = s_spawn(sys, "scheduler", &fq_scheduler_behaviour, config);
    if (rc == 0)
        rc = s_spawn(sys, "dispatcher", &fq_dispatcher_behaviour, config);
    return rc;
}

int fq_pipeline_wait_ready(fq_system_t *sys, int timeout_ms)
{
    //  An actor reads its mailbox only once its start, which opens its
    //  connection, has returned: an answer says it is done
    static const char *const paths[] = {FQ_PATH_STORE, FQ_PATH_SCHEDULER, FQ_PATH_DISPATCHER};
    fq_client_t *client = fq_client_new(sys);
    if (!client)
        return FQ_ENOMEM;
    int64_t deadline = zclock_mono() + timeout_ms;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < sizeof paths / sizeof paths[0]; i++) {
        int64_t left = deadline - zclock_mono();
        fq_msg_t reply;
        rc = left > 0 ? fq_client_ask(client, paths[i], &fq_stats_query_desc,
                                      &(fq_stats_query_t){0}, (int)left, &reply)
                      : FQ_ETIMEDOUT;
    }
    fq_client_destroy(&client);
    return rc;
}

int fq_pipeline_start_rest(fq_system_t *sys, const fq_pipeline_config_t *config)
{
    //  The scheduler's tell to a splitter not there yet fails, and the
    //  request stays first in line for its next feed (fq_scheduler.c)
    int rc = 0;
    for (int i = 1; rc == 0 && i <= config->splitters; i++) {
        char name[32];
        snprintf(name, sizeof name, "splitter-%d", i);
        rc = s_spawn(sys, name, &fq_splitter_behaviour, config);
    }
    if (rc == 0)
        rc = s_spawn(sys, "intake", &fq_intake_behaviour, config);
    if (rc == 0)
        rc = s_spawn(sys, "reaper", &fq_reaper_behaviour, config);
    if (rc == 0)
        rc = s_spawn(sys, "webhooks", &fq_webhook_feeder_behaviour, config);
    if (rc == 0)
        rc = s_spawn(sys, "schedules", &fq_schedule_firer_behaviour, config);
    return rc;
}

int fq_pipeline_drain(fq_system_t *sys, int timeout_ms)
{
    return fq_drain_wait(sys, FQ_PATH_DISPATCHER, timeout_ms);
}
