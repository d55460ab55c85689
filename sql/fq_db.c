/*  fq_db.c — a reconnecting database connection (see fq_db.h). */
#include "fq_db.h"
#include "fq_error.h"
#include "fq_log.h"
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

//  A PostgreSQL restart or failover takes seconds: the first retry comes
//  soon, and doubling only to 1 s keeps an actor within a second of a
//  database that is back (at 5 s, the pipeline resumed up to 5 s after a
//  standby's promotion, the HTTP API at once), at a log line a second per
//  actor while it is away.
#define S_RETRY_MIN_MS 100
#define S_RETRY_MAX_MS 1000

//  Units of the monotonic clock's time.
#define S_MS_PER_S  1000
#define S_NS_PER_MS 1000000

//  Room for a connection error.
#define S_ERROR_MAX 1024

struct fq_db {
    char *conninfo;
    char *who;
    fq_store_t *store; //  NULL while not connected
    bool lost;         //  The connection was lost (or never made)
    int64_t retry_at;  //  s_now_ms() of the next attempt
    int delay_ms;
    int (*on_connect)(fq_store_t *store, void *arg);
    void *on_connect_arg;
    int64_t epoch; //  The leader's epoch every store it makes carries; 0: none
};

//  Milliseconds of the monotonic clock: waits between reconnects must not
//  jump with the wall clock.
static int64_t s_now_ms(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * S_MS_PER_S + now.tv_nsec / S_NS_PER_MS;
}

static void s_schedule_retry(fq_db_t *self)
{
    self->lost = true;
    self->retry_at = s_now_ms() + self->delay_ms;
    self->delay_ms = self->delay_ms * 2 > S_RETRY_MAX_MS ? S_RETRY_MAX_MS : self->delay_ms * 2;
}

static void s_try_connect(fq_db_t *self)
{
    int rc = 0;
    if (self->store)
        rc = fq_store_reconnect(self->store);
    else {
        char error[S_ERROR_MAX];
        //  Its sessions are named after their actor ("fairq scheduler"):
        //  pg_stat_activity shows which one runs what, and costs what
        const char *slash = strrchr(self->who, '/');
        char name[FQ_STORE_APPLICATION_NAME_SIZE];
        snprintf(name, sizeof name, "fairq %s", slash ? slash + 1 : self->who);
        self->store = fq_store_new_named(self->conninfo, name, error, sizeof error);
        if (!self->store) {
            fq_log(FQ_LOG_WARNING, "%s: %s; retrying in %d ms", self->who, error, self->delay_ms);
            s_schedule_retry(self);
            return;
        }
        fq_store_set_epoch(self->store, self->epoch);
    }
    if (rc == 0 && self->on_connect)
        rc = self->on_connect(self->store, self->on_connect_arg);
    if (rc) {
        fq_log(FQ_LOG_WARNING, "%s: %s; retrying in %d ms", self->who, fq_store_error(self->store),
               self->delay_ms);
        s_schedule_retry(self);
        return;
    }
    if (self->lost)
        fq_log(FQ_LOG_INFO, "%s: connected to database again", self->who);
    self->lost = false;
    self->delay_ms = S_RETRY_MIN_MS;
}

int fq_db_conninfo_check(const char *conninfo, char *error, size_t error_size)
{
    char *reason = NULL;
    PQconninfoOption *options = PQconninfoParse(conninfo, &reason);
    if (options) {
        PQconninfoFree(options);
        return 0;
    }
    //  No reason: libpq ran out of memory
    snprintf(error, error_size, "%s", reason ? reason : "out of memory");
    //  libpq ends its messages with a newline; the log adds its own
    error[strcspn(error, "\n")] = 0;
    PQfreemem(reason);
    return -1;
}

fq_db_t *fq_db_new(const char *conninfo, const char *who)
{
    fq_db_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    self->conninfo = strdup(conninfo);
    self->who = strdup(who);
    if (!self->conninfo || !self->who) {
        fq_db_destroy(&self);
        return NULL;
    }
    self->delay_ms = S_RETRY_MIN_MS;
    s_try_connect(self);
    return self;
}

void fq_db_destroy(fq_db_t **self_p)
{
    fq_db_t *self = *self_p;
    if (!self)
        return;
    fq_store_destroy(&self->store);
    free(self->conninfo);
    free(self->who);
    free(self);
    *self_p = NULL;
}

void fq_db_on_connect(fq_db_t *self, int (*fn)(fq_store_t *store, void *arg), void *arg)
{
    self->on_connect = fn;
    self->on_connect_arg = arg;
    if (self->store && !self->lost && fn && fn(self->store, arg) != 0) {
        fq_log(FQ_LOG_WARNING, "%s: %s", self->who, fq_store_error(self->store));
        s_schedule_retry(self);
    }
}

fq_store_t *fq_db_store(fq_db_t *self)
{
    if (self->lost && s_now_ms() >= self->retry_at)
        s_try_connect(self);
    return self->lost ? NULL : self->store;
}

bool fq_db_failed(fq_db_t *self, int rc)
{
    if (!self->store || !fq_store_connected(self->store)) {
        if (!self->lost)
            fq_log(FQ_LOG_WARNING, "%s: %s; connecting again", self->who,
                   self->store ? fq_store_error(self->store) : "not connected");
        s_schedule_retry(self);
        return true;
    }
    fq_log(FQ_LOG_ERROR, "%s: %s (%s)", self->who, fq_store_error(self->store), fq_strerror(rc));
    return false;
}

int fq_db_retry_in_ms(fq_db_t *self)
{
    if (!self->lost)
        return 0;
    int64_t left = self->retry_at - s_now_ms();
    return left > 0 ? (int)left : 0;
}

void fq_db_set_epoch(fq_db_t *self, int64_t epoch)
{
    self->epoch = epoch;
    if (self->store)
        fq_store_set_epoch(self->store, epoch);
}
