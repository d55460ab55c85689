/*  fq_store_schedules.h — tenants' schedules of recurring sends
    (sql/migrations/0025_schedules.sql): made, read, changed and deleted
    through the HTTP API's /v1/tenants/{name}/schedules, and fired by
    fairqd's schedule firer (actors/fq_schedule_firer.c). Defined in
    fq_store_schedules.c; the connection and its errors are fq_store.h's.

    A schedule is its tenant's, named by the tenant's name. A tenant that
    does not exist is FQ_ENOTFOUND with the words every read of a tenant
    uses; a schedule that does not exist, or is another tenant's, is
    FQ_ENOTFOUND "schedule X does not exist". The cron expression is
    parsed by the caller (api/fq_cron.h) into the sets stored beside it;
    the request is checked by the caller as a submit's body is, and by the
    store with a trial submit rolled back.
*/
#ifndef FQ_STORE_SCHEDULES_H
#define FQ_STORE_SCHEDULES_H

#include "fq_store.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

//  Most schedules a tenant may have: each is looked at by the firer, and a
//  tenant needs one per recurring campaign (a digest, a reminder), not
//  thousands.
#define FQ_SCHEDULES_PER_TENANT_MAX 100

//  Longest schedule name, bytes (the schema's schedules.name CHECK).
#define FQ_SCHEDULE_NAME_MAX 64

//  Longest time zone name, bytes (the schema's schedules.time_zone CHECK):
//  the longest IANA name is 32.
#define FQ_SCHEDULE_TIME_ZONE_MAX 64

//  What becomes of firings missed while no fairqd fired them (0025).
#define FQ_SCHEDULE_MISSED_LATEST "latest"
#define FQ_SCHEDULE_MISSED_SKIP   "skip"

//  Whether name is a schedule's name: 1..FQ_SCHEDULE_NAME_MAX of a-z 0-9
//  _ . - starting with a letter (so a path's segment is a name or an id).
bool fq_schedule_name_valid(const char *name);

//  A schedule as the API shows it. Strings are owned by the list.
typedef struct {
    int64_t id;
    char *name;
    char *cron;
    char *time_zone;
    char *missed; //  FQ_SCHEDULE_MISSED_*
    bool paused;
    char *request;           //  The request as given (JSON); NULL in a list
    int64_t next_fire_at;    //  Unix s; 0: none
    int64_t last_fire_at;    //  The last firing's scheduled instant; 0: none yet
    int64_t last_request_id; //  Its request; 0: none
    char *last_error;        //  Why the last firing submitted nothing; NULL: it did
    int64_t fired;           //  Requests submitted
    int64_t skipped;         //  Firings missed and skipped
    int64_t created_at;
    int64_t updated_at;
} fq_schedule_t;

typedef struct {
    fq_schedule_t *rows;
    size_t count;
} fq_schedule_list_t;

void fq_schedule_list_free(fq_schedule_list_t *list);

//  What a create or a change gives; what is NULL (or -1) is left as it is
//  (a create needs name, cron, time_zone and request).
typedef struct {
    const char *name;
    //  The expression and its sets (fq_cron_t's bits: minutes 0..59, hours
    //  0..23, days 1..31, months 1..12, weekdays 0..6), given together
    const char *cron;
    int64_t minutes, hours, days, months, weekdays;
    bool days_any, weekdays_any;
    const char *time_zone; //  An IANA name PostgreSQL knows, checked here
    const char *missed;    //  FQ_SCHEDULE_MISSED_*
    int paused;            //  -1 as is, 0 run, 1 paused
    //  The request as given (a slice: request_size bytes) and what the
    //  API made of it; submit->tenant, send_at and idempotency_key unused
    const char *request;
    size_t request_size;
    const fq_submit_t *submit;
} fq_schedule_spec_t;

//  Makes a schedule of tenant from spec (id 0) or changes schedule id;
//  *out is its one row after. Returns 0, FQ_ENOTFOUND (no tenant, no such
//  schedule), FQ_EINVAL (an unknown time zone, more than
//  FQ_SCHEDULES_PER_TENANT_MAX, a request the database refuses: the
//  message says), FQ_ECONFLICT (the name is taken), FQ_ENOMEM or FQ_EDB.
int fq_store_schedule_save(fq_store_t *self, const char *tenant, int64_t id,
                           const fq_schedule_spec_t *spec, fq_schedule_list_t *out);

//  Tenant's schedules (id 0 and name NULL: all, in name order, without
//  their requests), or the one of that id or name, with its request.
//  Returns how many, or a negative code (FQ_ENOTFOUND for a one that does
//  not exist).
int fq_store_schedules(fq_store_t *self, const char *tenant, int64_t id, const char *name,
                       fq_schedule_list_t *out);

//  Deletes schedule id of tenant; its requests already submitted stay.
int fq_store_schedule_delete(fq_store_t *self, const char *tenant, int64_t id);

//  One firing or skip of a pass.
typedef struct {
    int64_t schedule_id;
    char *tenant;
    char *name;
    int64_t fire_at;    //  The firing's scheduled instant; 0: skipped, none fired
    int64_t request_id; //  0: none (skipped, or error)
    bool replayed;      //  The firing's key named a request already: none new
    int64_t skipped;    //  Missed firings skipped
    char *error;        //  Why it submitted nothing; NULL: it did
} fq_schedule_firing_t;

typedef struct {
    fq_schedule_firing_t *rows;
    size_t count;
} fq_schedule_firing_list_t;

void fq_schedule_firing_list_free(fq_schedule_firing_list_t *list);

//  How the firer fires (the arguments of fairq.schedules_fire).
typedef struct {
    int limit;   //  Schedules per pass at most
    int grace_s; //  A firing found later than this is missed
    int counted; //  Missed firings counted one by one at most
} fq_schedule_fire_t;

//  One pass of fairq.schedules_fire (0025), fenced by the epoch: each due
//  schedule's firing submitted with its idempotency key and its next
//  firing set, in one transaction. *out lists what was done. Returns how
//  many rows, or a negative code.
int fq_store_schedules_fire(fq_store_t *self, const fq_schedule_fire_t *fire,
                            fq_schedule_firing_list_t *out);

#endif
