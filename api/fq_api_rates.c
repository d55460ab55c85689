/*  fq_api_rates.c — the tenants' bounce and complaint rates of the last
    day (sql/fq_store_rates.h), read into the metrics for /metrics and the
    tenant object (fq_api_internal.h; docs/feedback.md). */
#include "fq_api_internal.h"
#include "fq_log.h"

void fq_api_rates_refresh(fq_api_call_t *call)
{
    //  At most once a minute (fq_metrics.h says why): with the pattern of
    //  hard bounces the nack batch suppresses by
    if (!call->store || !fq_metrics_tenant_rates_due(call->server->metrics))
        return;
    fq_tenant_rates_list_t rates;
    int read = fq_store_tenant_rates(call->store, call->server->bounce_pattern,
                                     FQ_STORE_RATES_WINDOW_S, &rates);
    if (read < 0)
        fq_log(FQ_LOG_WARNING, "http: tenant rates: %s", fq_store_error(call->store));
    //  A failed read keeps the last figures (and leaves them due)
    fq_metrics_tenant_rates(call->server->metrics, read >= 0 ? &rates : NULL);
    fq_tenant_rates_free(&rates);
}
