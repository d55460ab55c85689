/*  fq_api_whoami.c — /v1/whoami (api/API.md): who calls, as a console
    needs to know before it shows anything. */
#include "fq_api_internal.h"

void fq_api_whoami(fq_api_call_t *call)
{
    if (!fq_api_query_allowed(call, NULL))
        return;
    //  What a console shows and offers: an admin token sees every tenant,
    //  a tenant's only its own
    fq_api_reply(call, MHD_HTTP_OK,
                 json_pack("{s:b, s:o}", "admin", call->owner.admin, "tenant",
                           call->owner.admin ? json_null() : json_string(call->owner.tenant)));
}
