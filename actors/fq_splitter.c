/*  fq_splitter.c — /user/splitter-N: recipients into message rows.

    A SPLIT names a request; the splitter writes its next stored chunk of
    recipients as message rows (COPY, one transaction with the chunk's
    deletion: fq_store_split_chunk) and tells the scheduler, which decides
    what it splits next (fq_scheduler.c): one chunk at a time, so requests
    take turns chunk by chunk and small ones go first.

    Recipients are checked against the fields the templates use; a bad
    recipient is rejected alone (fairq.rejects), the others go on. Each
    chunk's rows, rejects and time are recorded in fq_metrics. */
#include "fq_db.h"
#include "fq_log.h"
#include "fq_pipeline.h"
#include "fq_template.h"
#include <stdlib.h>
#include <string.h>

typedef struct {
    fq_pipeline_config_t *config;
    fq_db_t *db;
    fq_metrics_batch_t *metrics; //  NULL without metrics
    uint64_t chunks, split, rejected;
} s_self_t;

//  Parses the request's templates, whose fields every recipient must
//  have: its subject, its body and its text_body when it has one (*text
//  stays NULL otherwise). Returns 0, or FQ_EINVAL with a message in error.
static int s_parse_templates(const fq_request_templates_t *templates, fq_template_t **subject,
                             fq_template_t **body, fq_template_t **text, char *error,
                             size_t error_size)
{
    *subject = fq_template_new(templates->subject, FQ_TEMPLATE_HEADER, error, error_size);
    if (!*subject)
        return FQ_EINVAL;
    *body = fq_template_new(templates->body,
                            templates->body_is_html ? FQ_TEMPLATE_HTML : FQ_TEMPLATE_PLAIN, error,
                            error_size);
    if (!*body)
        return FQ_EINVAL;
    if (templates->text_body)
        *text = fq_template_new(templates->text_body, FQ_TEMPLATE_PLAIN, error, error_size);
    return !templates->text_body || *text ? 0 : FQ_EINVAL;
}

//  Splits one chunk of request; tells the scheduler what happened.
static void s_split(fq_ctx_t *ctx, s_self_t *self, uint64_t request_id)
{
    fq_split_done_t done = {.request = request_id, .error = ""};
    char error[FQ_TEMPLATE_ERROR_SIZE + 64] = "";
    fq_store_t *store = fq_db_store(self->db);
    fq_request_templates_t templates = {0};
    fq_template_t *subject = NULL, *body = NULL, *text = NULL;
    int rc = store ? fq_store_request_templates(store, (int64_t)request_id, &templates) : FQ_EDB;
    if (rc == 0)
        rc = s_parse_templates(&templates, &subject, &body, &text, error, sizeof error);
    if (rc == 0) {
        //  Duplicates between subject and bodies are harmless to the check
        size_t nsubject = fq_template_field_count(subject), nbody = fq_template_field_count(body);
        size_t ntext = text ? fq_template_field_count(text) : 0;
        const char **names = calloc(nsubject + nbody + ntext + 1, sizeof *names);
        if (!names)
            rc = FQ_ENOMEM;
        for (size_t i = 0; names && i < nsubject; i++)
            names[i] = fq_template_field(subject, i);
        for (size_t i = 0; names && i < nbody; i++)
            names[nsubject + i] = fq_template_field(body, i);
        for (size_t i = 0; names && i < ntext; i++)
            names[nsubject + nbody + i] = fq_template_field(text, i);
        fq_split_result_t result;
        if (names) {
            int64_t started = zclock_usecs();
            rc = fq_store_split_chunk(store, (int64_t)request_id, names, nsubject + nbody + ntext,
                                      nsubject, &result);
            if (rc != 0)
                fq_metrics_batch_db(self->metrics, FQ_METRICS_DB_SPLIT,
                                    rc > 0 ? (size_t)(result.split + result.rejected) : 0,
                                    zclock_usecs() - started, rc > 0);
            if (rc > 0) {
                fq_metrics_tenant_name(self->config->metrics, templates.tenant_id,
                                       templates.tenant);
                fq_metrics_batch_split(self->metrics, templates.tenant_id, result.split,
                                       result.rejected);
            }
            if (rc >= 0) {
                done.split = (uint32_t)result.split;
                done.rejected = (uint32_t)result.rejected;
                done.last = rc == 0 || result.last;
                self->chunks += rc > 0;
                self->split += (uint64_t)result.split;
                self->rejected += (uint64_t)result.rejected;
                rc = 0;
            }
        }
        free(names);
    }
    if (rc < 0) {
        if (!error[0])
            snprintf(error, sizeof error, "%s",
                     store ? fq_store_error(store) : "database unreachable");
        if (store && rc != FQ_EINVAL)
            fq_db_failed(self->db, rc);
        fq_log(FQ_LOG_WARNING, "%s: could not split request %llu: %s", fq_self(ctx),
               (unsigned long long)request_id, error);
        done.error = error;
    }
    fq_template_destroy(&subject);
    fq_template_destroy(&body);
    fq_template_destroy(&text);
    fq_request_templates_free(&templates);
    fq_metrics_batch_flush(self->metrics);
    fq_tell(ctx, FQ_PATH_SCHEDULER, &fq_split_done_desc, &done);
}

static int s_start(fq_ctx_t *ctx, void *args, void **state_p)
{
    s_self_t *self = calloc(1, sizeof *self);
    if (!self)
        return FQ_ENOMEM;
    self->config = args;
    self->db = fq_pipeline_db(self->config, fq_self(ctx));
    self->metrics = fq_metrics_batch_new(self->config->metrics);
    if (!self->db || (self->config->metrics && !self->metrics)) {
        fq_db_destroy(&self->db);
        fq_metrics_batch_destroy(&self->metrics);
        free(self);
        return FQ_ENOMEM;
    }
    *state_p = self;
    return 0;
}

static int s_receive(fq_ctx_t *ctx, void *state, const fq_msg_t *msg)
{
    s_self_t *self = state;
    if (msg->type == FQ_MSG_SPLIT) {
        fq_split_t split;
        if (fq_msg_decode(msg, &fq_split_desc, &split) == 0 && split.request > 0)
            s_split(ctx, self, split.request);
    }
    return 0;
}

static void s_stop(fq_ctx_t *ctx, void *state)
{
    (void)ctx;
    s_self_t *self = state;
    fq_db_destroy(&self->db);
    fq_metrics_batch_destroy(&self->metrics);
    free(self);
}

const fq_behaviour_t fq_splitter_behaviour = {
    .name = "splitter", .start = s_start, .receive = s_receive, .stop = s_stop};
