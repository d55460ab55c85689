/*  fq_sysmsg.c — generated codecs of the runtime's messages. */
#include "fq_sysmsg.h"

#define FQ_SCHEMA_FILE  "fq_sysmsg.def"
#define FQ_SCHEMA_TABLE fq_sysmsg_schema
#include "fq_schema_define.h"

const fq_msgdesc_t *fq_schema_find(const fq_msgdesc_t *const *table, uint32_t id)
{
    for (; *table; table++)
        if ((*table)->id == id)
            return *table;
    return NULL;
}
