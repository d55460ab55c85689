/*  fq_migrations.h — the schema migrations compiled into fairq.

    Each file sql/migrations/NNNN_name.sql becomes one entry, in version
    order; fq_store_migrate applies those a database does not have yet. */
#ifndef FQ_MIGRATIONS_H
#define FQ_MIGRATIONS_H

#include <stddef.h>

typedef struct {
    int version;      //  NNNN of the file name
    const char *name; //  The file name without .sql
    const char *sql;
} fq_migration_t;

//  Ends with an entry whose sql is NULL.
extern const fq_migration_t fq_migrations[];

#endif
