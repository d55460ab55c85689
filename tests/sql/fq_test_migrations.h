/*  fq_test_migrations.h — what the migrations compiled into this build
    are, for tests that check how many a start applies. */
#ifndef FQ_TEST_MIGRATIONS_H
#define FQ_TEST_MIGRATIONS_H

#include "fq_migrations.h"

//  How many migrations the binary knows.
static inline int fq_test_migration_count(void)
{
    int count = 0;
    for (const fq_migration_t *m = fq_migrations; m->sql; m++)
        count++;
    return count;
}

//  The latest version among them.
static inline int fq_test_latest_version(void)
{
    int latest = 0;
    for (const fq_migration_t *m = fq_migrations; m->sql; m++)
        latest = m->version > latest ? m->version : latest;
    return latest;
}

#endif
