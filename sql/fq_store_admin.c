/*  fq_store_admin.c — operator queries of the store (see fq_store.h). */
#include "fq_store_internal.h"
