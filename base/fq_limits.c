/*  fq_limits.c — the checks of limits several parts share (see
    fq_limits.h). */
#include "fq_limits.h"

#include <string.h>

//  The characters of a tenant name, and those it may start with.
#define S_NAME_START "abcdefghijklmnopqrstuvwxyz0123456789"
#define S_NAME_CHARS S_NAME_START "_.-"

bool fq_tenant_name_valid(const char *name)
{
    size_t len = name ? strlen(name) : 0;
    if (len < 1 || len > FQ_TENANT_NAME_MAX || !strchr(S_NAME_START, name[0]))
        return false;
    return strspn(name, S_NAME_CHARS) == len;
}

bool fq_destination_name_valid(const char *name)
{
    //  The schema's check of destinations.name is tenants_name_check again
    _Static_assert(FQ_DESTINATION_NAME_MAX == FQ_TENANT_NAME_MAX, "one rule of names");
    return fq_tenant_name_valid(name);
}
