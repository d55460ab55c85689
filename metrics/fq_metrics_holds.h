/*  fq_metrics_holds.h — operators' holds in Prometheus' text format
    (docs/operations.md, "Holds"): fairq_held_all, and
    fairq_destination_held for each destination held. Tenants' holds are
    fq_metrics_render's fairq_tenant_held, a figure of each tenant's row.

    Read from the database by whoever serves /metrics (fq_store_hold_list),
    so that every fairqd shows the same holds, leader or not. */
#ifndef FQ_METRICS_HOLDS_H
#define FQ_METRICS_HOLDS_H

#include "fq_store_holds.h"

//  Appends the holds' families to text (fq_metrics_render's, owned; taken
//  and freed here). holds NULL (the database away) appends nothing.
//  Returns the text grown (owned by the caller), or NULL out of memory.
char *fq_metrics_holds_render(char *text, const fq_hold_list_t *holds);

#endif
