/*  fq_api_system.c — /healthz and /metrics (api/API.md), with the error
    summary only /metrics shows (the tenants' rates it shows too are
    fq_api_rates.c's). */
#include "fq_api_internal.h"
#include "fq_log.h"
#include "fq_metrics_holds.h"
#include <stdlib.h>

#define S_PROMETHEUS_TYPE "text/plain; version=0.0.4; charset=utf-8"

//  Who leads, as this fairqd last read the lease: "role" (leader or
//  standby) and "leader" (its name, epoch and since when). A standby is
//  healthy: it serves the API and stands by.
static void s_add_leadership(json_t *body, const fq_lease_t *lease)
{
    if (!body || !lease)
        return;
    fq_lease_view_t view;
    fq_lease_view(lease, &view);
    json_object_set_new(body, "role", json_string(view.leading ? "leader" : "standby"));
    json_object_set_new(body, "instance", json_string(fq_lease_holder(lease)));
    //  A leader that does not hold its lease now (its database is slow or
    //  away) dispatches nothing until it is renewed
    json_object_set_new(body, "lease_held", json_boolean(view.held));
    if (!view.known || !view.holder[0]) {
        json_object_set_new(body, "leader", json_null());
        return;
    }
    json_object_set_new(body, "leader",
                        json_pack("{s:s, s:I, s:o}", "instance", view.holder, "epoch",
                                  (json_int_t)view.epoch, "since",
                                  fq_api_time(view.since_ms / 1000)));
}

void fq_api_healthz(fq_api_call_t *call)
{
    if (!fq_api_query_allowed(call, NULL))
        return;
    //  A query, not only the connection's state: a server that went away
    //  is noticed here, and the connection made again on the next call
    call->store = fq_api_store(call);
    int version = 0;
    int rc = call->store ? fq_store_schema_version(call->store, &version) : -1;
    //  A connection cut by a restart of the database: one more try
    if (rc && call->store && fq_api_reconnect(call))
        rc = fq_store_schema_version(call->store, &version);
    if (rc == 0) {
        json_t *body =
            json_pack("{s:s, s:s, s:i}", "status", "ok", "database", "ok", "schema", version);
        s_add_leadership(body, call->server->lease);
        fq_api_reply(call, MHD_HTTP_OK, body);
        return;
    }
    //  The database's own words go to the log only: they name hosts and
    //  users, and /healthz needs no token
    if (rc && call->store)
        fq_log(FQ_LOG_WARNING, "http: healthz: %s", fq_store_error(call->store));
    fq_api_reply(call, MHD_HTTP_SERVICE_UNAVAILABLE,
                 json_pack("{s:s, s:s, s:s, s:s}", "error", "database_unavailable", "status",
                           "degraded", "database", "unreachable", "detail",
                           "the database cannot be reached; fairqd keeps trying"));
}

//  The errors of the failed and dead messages, which /metrics alone shows
//  (fairq_message_errors): read at most once a minute, as the rates are
//  (fq_metrics.h says why), and on their own clock, so that a GET of the
//  tenants never pays for them.
static void s_errors_refresh(fq_api_call_t *call)
{
    if (!call->store || !fq_metrics_errors_due(call->server->metrics))
        return;
    fq_error_summary_t errors;
    int summed = fq_store_error_summary(call->store, &(fq_message_filter_t){0}, NULL,
                                        FQ_METRICS_ERRORS_TOP, &errors);
    if (summed < 0)
        fq_log(FQ_LOG_WARNING, "http: error summary: %s", fq_store_error(call->store));
    //  A failed read keeps the last figures (and leaves them due)
    fq_metrics_errors(call->server->metrics, summed >= 0 ? &errors : NULL);
    fq_error_summary_free(&errors);
}

void fq_api_metrics(fq_api_call_t *call)
{
    if (!fq_api_query_allowed(call, NULL))
        return;
    //  Without the database, the figures the actors hold still count
    fq_tenant_list_t tenants = {0};
    int rc = call->store ? fq_store_tenant_list(call->store, &tenants) : -1;
    //  A connection cut by a restart of the database: one more try
    if (rc < 0 && call->store && fq_api_reconnect(call))
        rc = fq_store_tenant_list(call->store, &tenants);
    bool have_tenants = rc >= 0;
    if (have_tenants) {
        fq_api_rates_refresh(call);
        s_errors_refresh(call);
    }
    char *text = fq_metrics_render(call->server->metrics, call->server->system,
                                   have_tenants ? &tenants : NULL);
    fq_tenant_list_free(&tenants);
    //  The operators' holds, as every fairqd reads them (0024)
    fq_hold_list_t holds = {0};
    bool have_holds = have_tenants && fq_store_hold_list(call->store, &holds) >= 0;
    text = fq_metrics_holds_render(text, have_holds ? &holds : NULL);
    fq_hold_list_free(&holds);
    if (!text) {
        fq_api_fail(call, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
        return;
    }
    call->status = MHD_HTTP_OK;
    call->text = text;
    call->text_type = S_PROMETHEUS_TYPE;
}
