/*  fq_store_shape.h — the queue's shape: the messages waiting (pending,
    or failed and waiting for a retry) and the recipients not yet split
    of the unfinished requests, per tenant (and destination), counted by
    how long they have waited, in the age buckets of Postfix's qshape.
    What GET /v1/shape and `fairq shape` show. Defined in
    fq_store_shape.c.

    A message waits from when its request could first send (accepted, or
    its send_at when later): a request for tomorrow is not late today, its
    messages count as "later". Read through each unfinished request's
    scan_from (the messages before it are all final), by the messages'
    (request_id, id) index: the cost is the messages from the first one
    still open on, not the history before it (a request with one early
    retry waiting is read from there).
*/
#ifndef FQ_STORE_SHAPE_H
#define FQ_STORE_SHAPE_H

#include "fq_limits.h"
#include "fq_store.h"
#include <stdbool.h>
#include <stdint.h>

//  The buckets: waited under 5 minutes, under 10, 20, ... 1280, and
//  longer; qshape's doubling edges, so a backlog's age reads at a glance
//  on one line from minutes to days.
#define FQ_SHAPE_EDGES   9
#define FQ_SHAPE_BUCKETS (FQ_SHAPE_EDGES + 1)
extern const int fq_shape_edges_min[FQ_SHAPE_EDGES];

typedef struct {
    char tenant[FQ_TENANT_NAME_SIZE];
    //  Empty unless by destination, and for the recipients not split yet
    char destination[FQ_STORE_DESTINATION_SIZE];
    int64_t total; //  later + every bucket
    int64_t later; //  Not due yet: their request's send_at is ahead
    int64_t ages[FQ_SHAPE_BUCKETS];
} fq_shape_row_t;

typedef struct {
    fq_shape_row_t *rows; //  Owned by the caller: fq_shape_free
    size_t count;
} fq_shape_t;

//  The shape of tenant_id's waiting messages (0: every tenant's), one row
//  per tenant, or per tenant and destination when by_destination; most
//  messages first. Returns how many rows, or a negative code (shape is
//  then empty).
int fq_store_shape(fq_store_t *self, int64_t tenant_id, bool by_destination, fq_shape_t *shape);
void fq_shape_free(fq_shape_t *shape);

#endif
