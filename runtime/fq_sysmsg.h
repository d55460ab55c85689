/*  fq_sysmsg.h — typed runtime messages generated from fq_sysmsg.def. */
#ifndef FQ_SYSMSG_H
#define FQ_SYSMSG_H

#define FQ_SCHEMA_FILE "fq_sysmsg.def"
#include "fq_schema_declare.h"
#undef FQ_SCHEMA_FILE

//  Ids below this are reserved for the runtime.
#define FQ_MSG_USER_FIRST 100

//  NULL-terminated table of the runtime's message descriptors.
extern const fq_msgdesc_t *const fq_sysmsg_schema[];

//  Descriptor for id in a NULL-terminated table, or NULL.
const fq_msgdesc_t *fq_schema_find(const fq_msgdesc_t *const *table, uint32_t id);

#endif
