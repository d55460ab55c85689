/*  fq_splitter.c — /user/splitter-N: recipients into message rows.

    A SPLIT names a request; the splitter writes its next stored chunk of
    recipients as message rows (COPY, or one INSERT for a small request,
    in one transaction with the chunk's deletion: fq_store_split_chunk) and
    tells the scheduler, which decides
    what it splits next (fq_scheduler.c): one chunk at a time, so requests
    take turns chunk by chunk and small ones go first.

    Recipients are checked against the fields the templates use; a bad
    recipient is rejected alone (fairq.rejects), the others go on. A
    request of a channel other than mail has recipient keys rather than
    addresses (the store tells them apart), and its own templates: an http
    request's URL, header values and body (channels/fq_channel.h), another
    channel's body. Each chunk's rows, rejects and time are recorded in
    fq_metrics.

    Each message is stamped with its destination as it is written (0016):
    the destination naming its recipient's domain, or an http request's
    URL host, or "default". The domains are read again between splits,
    every S_DOMAINS_MS / 2, so a change of a destination's domains reaches
    the messages split from a second after it at the latest; the
    scheduler hears which destinations each chunk went to in SPLIT_DONE.

    The request's templates are read in the split's first round trip
    (fq_store_split_chunk_with), and worked out there (s_prepare). */
#include "fq_channel.h"
#include "fq_db.h"
#include "fq_log.h"
#include "fq_pipeline.h"
#include "fq_store_shaping.h"
#include "fq_template.h"
#include "fq_unsubscribe_token.h"
#include <stdlib.h>
#include <string.h>

//  How old the splitter's copy of the destinations' domains may be at a
//  split. A timer reads them again every half of it, between splits, so
//  that a split seldom waits for that query too: under load each round
//  trip to a busy server is a wait, and a new tenant's request waits for
//  its split.
#define S_DOMAINS_MS 1000

//  Room for why a split failed: the store's message, which may quote a
//  template's error.
#define S_ERROR_SIZE 1024

typedef struct {
    fq_pipeline_config_t *config;
    fq_db_t *db;
    fq_metrics_batch_t *metrics; //  NULL without metrics
    zhashx_t *domains;           //  domain -> its destination's name (owned copies)
    int64_t domains_read;        //  zclock_mono() when they were read; 0: never
    fq_split_destinations_t destinations;
    uint64_t chunks, split, rejected;
} s_self_t;

static void s_domain_add(const char *domain, const char *destination, void *arg)
{
    zhashx_t *domains = arg;
    char *copy = strdup(destination);
    if (copy && zhashx_insert(domains, domain, copy) != 0)
        free(copy);
}

static void s_string_free(void **item)
{
    free(*item);
    *item = NULL;
}

//  Reads the named domains again when the copy is max_age_ms old or
//  older; keeps the old copy when the database fails (a split then fails
//  too, and is tried again).
static void s_domains_refresh(s_self_t *self, fq_store_t *store, int64_t max_age_ms)
{
    int64_t now = zclock_mono();
    if (self->domains_read && now - self->domains_read < max_age_ms)
        return;
    zhashx_t *domains = zhashx_new();
    if (!domains)
        return;
    zhashx_set_destructor(domains, s_string_free);
    int n = fq_store_destination_domains(store, s_domain_add, domains);
    if (n < 0) {
        zhashx_destroy(&domains);
        return;
    }
    zhashx_destroy(&self->domains);
    self->domains = domains;
    self->domains_read = now;
}

static const char *s_of_domain(const char *domain, void *arg)
{
    s_self_t *self = arg;
    return self->domains ? zhashx_lookup(self->domains, domain) : NULL;
}

//  What a request's templates parse to, for the fields every recipient
//  must have: mail's subject, body and text_body (NULL: none); another
//  channel's body; an http request's templates.
typedef struct {
    fq_template_t *subject, *body, *text;
    fq_http_templates_t *http;
} s_parsed_t;

static void s_parsed_destroy(s_parsed_t *parsed)
{
    fq_template_destroy(&parsed->subject);
    fq_template_destroy(&parsed->body);
    fq_template_destroy(&parsed->text);
    fq_http_templates_destroy(&parsed->http);
}

//  Appends template's fields (if any) to names at *count, but skip (NULL:
//  none): a field fairq gives each message itself.
static void s_add_fields(const fq_template_t *template, const char **names, size_t *count,
                         const char *skip)
{
    for (size_t i = 0; template && i < fq_template_field_count(template); i++)
        if (!skip || strcmp(fq_template_field(template, i), skip) != 0)
            names[(*count)++] = fq_template_field(template, i);
}

//  An http request's fields: its headers' first (*nheader of them). A
//  request that breaks the rule of an http request (it was stored by SQL,
//  which checks less) is split all the same, its recipients checked for
//  no field: each of its messages dies at dispatch with the reason, where
//  the tenant reads it, rather than the request waiting unsplit for ever.
static const char **s_http_fields(uint64_t request_id, const fq_request_templates_t *templates,
                                  s_parsed_t *parsed, size_t *count, size_t *nheader)
{
    char problem[FQ_HTTP_PROBLEM_SIZE];
    parsed->http = fq_pipeline_http_templates(templates, problem, sizeof problem);
    if (parsed->http)
        return fq_http_templates_fields(parsed->http, count, nheader);
    fq_log(FQ_LOG_WARNING,
           "splitter: request %llu cannot be sent (%s): its messages will die with the reason",
           (unsigned long long)request_id, problem);
    *count = *nheader = 0;
    return calloc(1, sizeof(const char *));
}

//  The fields every recipient of the request must have, the ones that go
//  into a header first (*nheader of them: the subject's, or an http
//  request's headers'), as an array of names (free() it) the parsed
//  templates own. Duplicates between templates are harmless to the check.
//  Returns 0, FQ_EINVAL with a message in error (a template that does not
//  parse) or FQ_ENOMEM.
static int s_required_fields(uint64_t request_id, const fq_request_templates_t *templates,
                             s_parsed_t *parsed, const char ***names, size_t *count,
                             size_t *nheader, char *error, size_t error_size)
{
    *count = *nheader = 0;
    if (strcmp(templates->channel, FQ_CHANNEL_HTTP) == 0) {
        *names = s_http_fields(request_id, templates, parsed, count, nheader);
        return *names ? 0 : FQ_ENOMEM;
    }
    bool email = fq_channel_is_email(templates->channel);
    if (email) {
        parsed->subject =
            fq_template_new(templates->subject, FQ_TEMPLATE_HEADER, error, error_size);
        if (!parsed->subject)
            return FQ_EINVAL;
    }
    //  Another channel's body is rendered as it is
    parsed->body = fq_template_new(
        templates->body, email && templates->body_is_html ? FQ_TEMPLATE_HTML : FQ_TEMPLATE_PLAIN,
        error, error_size);
    if (!parsed->body)
        return FQ_EINVAL;
    if (email && templates->text_body &&
        !(parsed->text =
              fq_template_new(templates->text_body, FQ_TEMPLATE_PLAIN, error, error_size)))
        return FQ_EINVAL;
    size_t total = (parsed->subject ? fq_template_field_count(parsed->subject) : 0) +
                   fq_template_field_count(parsed->body) +
                   (parsed->text ? fq_template_field_count(parsed->text) : 0);
    *names = calloc(total + 1, sizeof **names);
    if (!*names)
        return FQ_ENOMEM;
    //  Mail with one-click unsubscribe: its messages' unsubscribe_url is
    //  fairq's (the dispatcher's), which no recipient needs to give
    const char *skip = email && templates->unsubscribe ? FQ_UNSUBSCRIBE_FIELD : NULL;
    s_add_fields(parsed->subject, *names, count, skip);
    *nheader = *count;
    s_add_fields(parsed->body, *names, count, skip);
    s_add_fields(parsed->text, *names, count, skip);
    return 0;
}

//  What one split works out from its request's templates
//  (fq_split_prepare_fn), which lasts until the split is told.
typedef struct {
    s_self_t *self;
    uint64_t request_id;
    s_parsed_t parsed;
    const char **names; //  The required fields (into parsed); free()
    bool prepared;      //  The templates were read and parsed
    int64_t tenant_id;  //  For the metrics, with its name (free())
    char *tenant;
} s_split_t;

//  The fields every recipient must have, by the templates, and where the
//  messages go: mail by each recipient's domain, an http request's
//  messages all to its URL's host, another channel's to "default".
static int s_prepare(const fq_request_templates_t *templates, fq_split_fields_t *fields,
                     char *error, size_t error_size, void *arg)
{
    s_split_t *split = arg;
    s_self_t *self = split->self;
    split->tenant_id = templates->tenant_id;
    free(split->tenant);
    split->tenant = strdup(templates->tenant);
    size_t count = 0, nheader = 0;
    int rc = s_required_fields(split->request_id, templates, &split->parsed, &split->names, &count,
                               &nheader, error, error_size);
    if (rc)
        return rc;
    *fields = (fq_split_fields_t){split->names, count, nheader};
    self->destinations.fixed = NULL;
    if (strcmp(templates->channel, FQ_CHANNEL_HTTP) == 0) {
        char host[256];
        fq_http_url_host(templates->http_url, host, sizeof host);
        const char *name = host[0] ? s_of_domain(host, self) : NULL;
        self->destinations.fixed = name ? name : FQ_STORE_DESTINATION_DEFAULT;
    }
    split->prepared = true;
    return 0;
}

//  Splits one chunk of request; tells the scheduler what happened.
static void s_split(fq_ctx_t *ctx, s_self_t *self, uint64_t request_id)
{
    fq_split_done_t done = {.request = request_id, .error = "", .destinations = ""};
    uint64_t ids[FQ_STORE_SPLIT_IDS_MAX], id_counts[FQ_STORE_SPLIT_IDS_MAX];
    char error[S_ERROR_SIZE] = "";
    fq_store_t *store = fq_db_store(self->db);
    s_split_t split = {.self = self, .request_id = request_id};
    fq_split_result_t result = {0};
    int64_t started = zclock_usecs();
    int rc = FQ_EDB;
    if (store) {
        //  Only when the timer could not keep it fresh (s_receive)
        s_domains_refresh(self, store, S_DOMAINS_MS);
        rc = fq_store_split_chunk_with(store, (int64_t)request_id, s_prepare, &split,
                                       &self->destinations, &result);
        //  The split's own statements, as before the templates were read
        //  with them: not a request gone, nor templates that do not parse
        if (rc != 0 && split.prepared)
            fq_metrics_batch_db(self->metrics, FQ_METRICS_DB_SPLIT,
                                rc > 0 ? (size_t)(result.split + result.rejected) : 0,
                                zclock_usecs() - started, rc > 0);
    }
    if (rc > 0) {
        if (split.tenant)
            fq_metrics_tenant_name(self->config->metrics, split.tenant_id, split.tenant);
        fq_metrics_batch_split(self->metrics, split.tenant_id, result.split, result.rejected);
        fq_metrics_batch_suppressed(self->metrics, split.tenant_id, result.suppressed);
    }
    if (rc >= 0) {
        done.split = (uint32_t)result.split;
        done.rejected = (uint32_t)result.rejected;
        done.destinations = self->destinations.written.size ? self->destinations.written.data : "";
        //  Whether chunks are left, as the split's own statement counted
        //  them: a split that found none to take (another splitter took
        //  the one it waited for) is not the last when more are left
        done.last = result.last;
        //  A request split whole: its messages go to the scheduler with
        //  this answer, one destination's after another
        if (result.nids > 0) {
            for (int i = 0; i < result.nids; i++)
                ids[i] = (uint64_t)result.ids[i];
            for (int k = 0; k < result.nid_counts; k++)
                id_counts[k] = (uint64_t)result.id_counts[k];
            done.ids = (fq_u64list_t){(uint32_t)result.nids, ids};
            done.id_counts = (fq_u64list_t){(uint32_t)result.nid_counts, id_counts};
        }
        self->chunks += rc > 0;
        self->split += (uint64_t)result.split;
        self->rejected += (uint64_t)result.rejected;
        rc = 0;
    }
    free(split.names);
    free(split.tenant);
    if (rc < 0) {
        snprintf(error, sizeof error, "%s", store ? fq_store_error(store) : "database unreachable");
        if (store && rc != FQ_EINVAL)
            fq_db_failed(self->db, rc);
        fq_log(FQ_LOG_WARNING, "%s: could not split request %llu: %s", fq_self(ctx),
               (unsigned long long)request_id, error);
        done.error = error;
    }
    s_parsed_destroy(&split.parsed);
    fq_metrics_batch_flush(self->metrics);
    //  The scheduler counts this splitter busy until the answer comes: one
    //  lost to a mailbox full past the send timeout would keep it busy for
    //  ever (and with two splitters no big request would be split again),
    //  so it is told again until it goes (or the scheduler is gone, whose
    //  successor starts with every splitter idle)
    while (fq_tell(ctx, FQ_PATH_SCHEDULER, &fq_split_done_desc, &done) == FQ_EFULL)
        fq_log(FQ_LOG_WARNING,
               "%s: the scheduler's mailbox stayed full; telling it again how request %llu's "
               "split went",
               fq_self(ctx), (unsigned long long)request_id);
}

//  Each new connection is warmed for its first split (fq_store_split_warm
//  says why); a warming that failed leaves the connection as it is.
static int s_warm(fq_store_t *store, void *arg)
{
    (void)arg;
    fq_store_split_warm(store);
    return 0;
}

static int s_start(fq_ctx_t *ctx, void *args, void **state_p)
{
    s_self_t *self = calloc(1, sizeof *self);
    if (!self)
        return FQ_ENOMEM;
    self->config = args;
    self->db = fq_pipeline_db(self->config, fq_self(ctx));
    self->metrics = fq_metrics_batch_new(self->config->metrics);
    self->destinations = (fq_split_destinations_t){.of_domain = s_of_domain, .arg = self};
    fq_tick_t tick = {.what = FQ_TICK_POLL};
    if (!self->db || (self->config->metrics && !self->metrics) ||
        fq_timer_every(ctx, S_DOMAINS_MS / 2, &fq_tick_desc, &tick) < 0) {
        fq_db_destroy(&self->db);
        fq_metrics_batch_destroy(&self->metrics);
        free(self);
        return FQ_ENOMEM;
    }
    fq_db_on_connect(self->db, s_warm, NULL);
    *state_p = self;
    return 0;
}

static int s_receive(fq_ctx_t *ctx, void *state, const fq_msg_t *msg)
{
    s_self_t *self = state;
    if (msg->type == FQ_MSG_TICK) {
        fq_store_t *store = fq_db_store(self->db);
        if (store)
            s_domains_refresh(self, store, S_DOMAINS_MS / 2);
    } else if (msg->type == FQ_MSG_SPLIT) {
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
    zhashx_destroy(&self->domains);
    fq_buf_free(&self->destinations.written);
    free(self);
}

const fq_behaviour_t fq_splitter_behaviour = {
    .name = "splitter", .start = s_start, .receive = s_receive, .stop = s_stop};
