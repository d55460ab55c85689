/*  fq_store_destinations.h — the store's destinations, as an operator
    reads and writes them (the HTTP API's /v1/destinations, fairqd's
    destinations_file): sql/migrations/0016_destinations.sql says what a
    destination is. Defined in fq_store_destinations.c; the connection and
    its errors are fq_store.h's.

    A rate crosses as two integers, a count and a period in seconds: the
    store knows no rate text ("100/s" is shaping/'s to read and write).

    Every write is one transaction: a destination is written whole (its
    limits and its full list of domains) or not at all, and a domain
    another destination owns is a conflict naming both, never a silent
    move. "default" always exists, takes no domains and cannot be deleted.
    Domains are taken in any case and stored in lowercase, each checked
    (recipients/fq_domain.h) before the schema's CHECK would refuse it.
*/
#ifndef FQ_STORE_DESTINATIONS_H
#define FQ_STORE_DESTINATIONS_H

#include "fq_limits.h"
#include "fq_store.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

//  The periods a rate may be counted over (the schema's check): a second,
//  a minute, an hour, a day.
#define FQ_DESTINATION_PERIODS                                                                     \
    {                                                                                              \
        1, 60, 3600, 86400                                                                         \
    }

//  A destination as a write gives it: every field, whole.
typedef struct {
    const char *name;
    int64_t rate_count;         //  Messages per rate_period_s; 0: no rate
    int rate_period_s;          //  1, 60, 3600 or 86400 with a rate; 0 without
    int64_t burst;              //  Tokens of its bucket, 1..FQ_DESTINATION_BURST_MAX; 0: the
                                //  rate's default (only with a rate)
    int64_t max_inflight;       //  1..FQ_DESTINATION_INFLIGHT_MAX; 0: no limit
    const char *const *domains; //  The caller's, in any case; none for "default"
    size_t ndomains;            //  At most FQ_DESTINATION_DOMAINS_MAX
} fq_destination_spec_t;

//  A destination as the store keeps it.
typedef struct {
    char name[FQ_DESTINATION_NAME_SIZE];
    int64_t rate_count;   //  0: no rate
    int rate_period_s;    //  0: no rate
    int64_t burst;        //  0: the rate's default
    int64_t max_inflight; //  0: no limit
    int64_t updated_at;   //  Unix seconds of its last write
    char **domains;       //  Lowercase, sorted (bytewise); one allocation of the row's
    size_t ndomains;
} fq_destination_t;

typedef struct {
    fq_destination_t *rows; //  Owned by the caller: fq_destination_list_free
    size_t count;
} fq_destination_list_t;

//  Every destination, by name (bytewise), with its domains. Returns how
//  many, or a negative code.
int fq_store_destination_list(fq_store_t *self, fq_destination_list_t *list);
void fq_destination_list_free(fq_destination_list_t *list);

//  One destination by name, into out (the caller frees it with
//  fq_destination_free). Returns 0, FQ_ENOTFOUND or FQ_EDB.
int fq_store_destination_get(fq_store_t *self, const char *name, fq_destination_t *out);
void fq_destination_free(fq_destination_t *destination);

//  Creates spec's destination or replaces it whole: its rate, burst, most
//  in flight and domains (those it had and spec lacks are freed for
//  others). *created (may be NULL) says it is new. Returns 0; FQ_EINVAL
//  for a spec that cannot be (a bad name, rate, burst or domain, a burst
//  without a rate, a domain twice, too many, any for "default": the
//  message says which); FQ_ECONFLICT for a domain another destination
//  owns (the message names it and both destinations); or FQ_EDB.
int fq_store_destination_put(fq_store_t *self, const fq_destination_spec_t *spec, bool *created);

//  Puts count destinations as fq_store_destination_put does, all in one
//  transaction: all of them, or none. A domain may move between two of
//  them (each gives up its old domains before any takes its new ones);
//  a name given twice, or a domain two of them take, is FQ_EINVAL.
//  Destinations not named are left alone.
int fq_store_destination_put_all(fq_store_t *self, const fq_destination_spec_t *specs,
                                 size_t count);

//  Deletes a destination and frees its domains (they are "default"'s from
//  then on). Returns 0, FQ_ENOTFOUND, FQ_EINVAL for "default", or FQ_EDB.
int fq_store_destination_delete(fq_store_t *self, const char *name);

#endif
