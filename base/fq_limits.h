/*  fq_limits.h — limits that more than one part of fairq checks.

    Each is stated once here; the schema's CHECK constraints (sql/migrations)
    hold the same numbers, and a test compares the two.
*/
#ifndef FQ_LIMITS_H
#define FQ_LIMITS_H

#include <stdint.h>

//  Longest tenant name in bytes: a tenant's name is a label in metrics and
//  a path segment in the API, short by design ([a-z0-9][a-z0-9_.-]{0,63}).
#define FQ_TENANT_NAME_MAX 64

//  Room for a tenant name and its NUL.
#define FQ_TENANT_NAME_SIZE (FQ_TENANT_NAME_MAX + 1)

//  Destinations (sql/migrations/0016_destinations.sql): a name by the rule
//  of tenant names, for the same reasons (a label in metrics, a path
//  segment in the API); at most this many domains each, so that one
//  destination's object stays a small answer and a small write (the schema
//  has no such check: the API, the store and fairqd's destinations_file
//  do); its burst and most in flight within the schema's CHECKs.
#define FQ_DESTINATION_NAME_MAX     64
#define FQ_DESTINATION_NAME_SIZE    (FQ_DESTINATION_NAME_MAX + 1)
#define FQ_DESTINATION_DOMAINS_MAX  1000
#define FQ_DESTINATION_BURST_MAX    1000000
#define FQ_DESTINATION_INFLIGHT_MAX 1000000
//  A rate's count is a PostgreSQL integer (destinations.rate_count).
#define FQ_DESTINATION_RATE_COUNT_MAX 2147483647
//  Most destinations, "default" among them: the scheduler reads every
//  one's budget at each full poll and keeps each one's state, so a write
//  that would make more is refused rather than some shaped by "default".
#define FQ_DESTINATIONS_MAX 1024

//  The destination every domain no other names belongs to; it always
//  exists and takes no domains.
#define FQ_DESTINATION_DEFAULT "default"

//  A tenant's send budget (sql/migrations/0017_tenant_send_budgets.sql):
//  its rate's count (as fq_rate.h's FQ_RATE_COUNT_MAX) and its daily quota
//  are within the schema's CHECKs, which the API, the CLI and the store's
//  tests check against.
#define FQ_TENANT_SEND_RATE_COUNT_MAX INT64_C(1000000000)
#define FQ_TENANT_DAILY_QUOTA_MAX     INT64_C(1000000000000)

//  Longest name a fairqd holds the leader's lease under ("name@host:pid",
//  the schema's check of fairq.leader.holder), and room for it and its NUL.
#define FQ_LEADER_HOLDER_MAX  200
#define FQ_LEADER_HOLDER_SIZE (FQ_LEADER_HOLDER_MAX + 1)

#include <stdbool.h>

//  Whether name can be a tenant's name, by the schema's rule: 1 to
//  FQ_TENANT_NAME_MAX bytes of a-z 0-9 _ . -, the first a letter or digit.
//  Checked where a name comes in (API paths, CLI arguments) so that a typo
//  is answered as such rather than as a tenant that does not exist.
bool fq_tenant_name_valid(const char *name);

//  Whether name can be a destination's name: the rule of tenant names.
bool fq_destination_name_valid(const char *name);

//  A request's priority within its tenant, higher first; the range is wide
//  enough for any ordering an application wants, narrow enough to show.
#define FQ_PRIORITY_MIN (-1000)
#define FQ_PRIORITY_MAX 1000

//  A bulk change by filter (POST /v1/messages/bulk): the most messages one
//  batch, one transaction, takes; the store checks it and the CLI too.
#define FQ_BULK_BATCH_MAX 10000

//  The oldest age a filter may name (older_than): ten years, far past any
//  retention, and well inside PostgreSQL's intervals.
#define FQ_AGE_MAX_S (INT64_C(10) * 366 * 86400)

#endif
