/*  fq_store_webhooks.h — tenants' webhook endpoints (sql/migrations/
    0020_webhooks.sql): registered, read, changed, rotated and deleted
    through the HTTP API's /v1/tenants/{name}/webhooks, and fed from the
    events by fairqd's webhook feeder (actors/fq_webhook_feeder.c).
    Defined in fq_store_webhooks.c; the connection and its errors are
    fq_store.h's.

    An endpoint is its tenant's, named by the tenant's name. A tenant that
    does not exist is FQ_ENOTFOUND with the words every read of a tenant
    uses; an endpoint that does not exist, or is another tenant's, is
    FQ_ENOTFOUND "webhook N does not exist". The URL is checked by the
    caller against the http channel's rule (fq_http_spec_problem) before
    it gets here; the event types against fq_feedback_names.h.
*/
#ifndef FQ_STORE_WEBHOOKS_H
#define FQ_STORE_WEBHOOKS_H

#include "fq_feedback_names.h"
#include "fq_store.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

//  Most endpoints a tenant may have: each is fed every pass, and a tenant
//  needs a few (production, staging, an archive), not hundreds.
#define FQ_WEBHOOKS_PER_TENANT_MAX 16

//  Most event types an endpoint lists (the schema's webhooks.event_types
//  CHECK): more than there are, so a list is never cut short.
#define FQ_WEBHOOK_EVENT_TYPES_MAX 64

//  A backlog is counted up to this many events, then shown as "more":
//  the count walks the tenant's events, and a dead endpoint's backlog may
//  be a campaign's million.
#define FQ_WEBHOOK_BACKLOG_COUNTED 10000

//  An endpoint as the API shows it. Strings are owned by the list.
typedef struct {
    int64_t id;
    char *url;
    //  The types it wants, comma-separated in fq_event_types' order of
    //  storage; NULL: every type
    char *event_types;
    char *secret;           //  "whsec_...": the tenant needs it to verify
    int64_t previous_until; //  Unix s; 0: no previous secret signs
    bool enabled;
    char *disabled_reason; //  NULL unless disabled by failing
    int64_t batch_request; //  The batch in flight's request; 0: none
    int batch_events;
    int failures;          //  Batches failed in a row
    int64_t failing_since; //  Unix s; 0: not failing
    char *last_error;      //  NULL: none yet
    int64_t last_error_at;
    int64_t last_success_at;
    int64_t next_attempt_at; //  No batch before (a back-off); Unix s
    int64_t delivered;       //  Events delivered
    int64_t backlog;         //  Wanted among the next FQ_WEBHOOK_BACKLOG_COUNTED events
    bool backlog_more;       //  More events than that follow (wanted or not)
    int64_t created_at;
} fq_webhook_t;

typedef struct {
    fq_webhook_t *rows;
    size_t count;
} fq_webhook_list_t;

void fq_webhook_list_free(fq_webhook_list_t *list);

//  What a create or a change gives; what is NULL (or -1) is left as it is
//  (a create needs url; types NULL there is every type).
typedef struct {
    const char *url;
    const char *const *types; //  ntypes of fq_event_types' names
    size_t ntypes;
    bool set_types;     //  A change sets types (ntypes 0: every type)
    const char *secret; //  Create only; NULL: fairq makes one
    int enabled;        //  Change only: -1 as is, 0 off, 1 on (and its failures forgotten)
} fq_webhook_spec_t;

//  Registers an endpoint of tenant from spec; it gets the events from now
//  on. *out is its one row. Returns 0, FQ_ENOTFOUND (no tenant), FQ_EINVAL
//  (more than FQ_WEBHOOKS_PER_TENANT_MAX, an unknown type, a bad secret:
//  the message says), FQ_ENOMEM or FQ_EDB.
int fq_store_webhook_create(fq_store_t *self, const char *tenant, const fq_webhook_spec_t *spec,
                            fq_webhook_list_t *out);

//  Tenant's endpoints (id 0) or the one id, in id order, each with its
//  backlog. Returns how many, or a negative code.
int fq_store_webhooks(fq_store_t *self, const char *tenant, int64_t id, fq_webhook_list_t *out);

//  Changes endpoint id of tenant as spec says; *out is its row after.
int fq_store_webhook_update(fq_store_t *self, const char *tenant, int64_t id,
                            const fq_webhook_spec_t *spec, fq_webhook_list_t *out);

//  Gives endpoint id a new secret (secret, or one fairq makes when NULL);
//  the one it had signs too for keep_s more seconds (0: not at all).
int fq_store_webhook_rotate(fq_store_t *self, const char *tenant, int64_t id, const char *secret,
                            int keep_s, fq_webhook_list_t *out);

//  Deletes endpoint id of tenant and cancels its batch in flight.
int fq_store_webhook_delete(fq_store_t *self, const char *tenant, int64_t id);

//  About the most bytes of events a batch carries, measured as the body
//  holds them ("{{" already written "{\u007b"): the http channel takes
//  bodies up to FQ_HTTP_BODY_MAX (256 KiB), and the batch's envelope and
//  the one event that may go over this limit need room besides.
#define FQ_WEBHOOK_BATCH_BYTES (192 * 1024)

//  Most events one pass reads for an endpoint: one that wants a rare type
//  walks past a campaign's million sent events ten thousand at a time,
//  and each pass stays short.
#define FQ_WEBHOOK_SCAN 10000

//  How the feeder feeds (the arguments of fairq.webhooks_feed).
typedef struct {
    int batch;           //  Events per batch at most
    int bytes;           //  About this many bytes of events per batch at most
    int scan;            //  Events read per endpoint and pass at most
    int max_attempts;    //  A batch's attempts (1..100)
    int base_ms, cap_ms; //  The back-off after a batch died
    int disable_after_s; //  Failing this long disables an endpoint
} fq_webhook_feed_t;

//  One pass of fairq.webhooks_feed (0020), fenced by the epoch. Returns
//  the batches submitted, or a negative code.
int fq_store_webhooks_feed(fq_store_t *self, const fq_webhook_feed_t *feed);

#endif
