/*  fq_tenant_budgets.c — tenants' send rates and daily quotas, held out of
    the lanes' turns while spent (see fq_tenant_budgets.h). */
#include "fq_tenant_budgets.h"
#include "fq_error.h"
#include "fq_intkeys.h"
#include "fq_store_shaping.h"
#include <stdlib.h>
#include <time.h>

#define S_SECONDS_IN_DAY INT64_C(86400)

//  A reservation the database refused is tried again no sooner than this:
//  a database that is away is not asked at every pump.
#define S_RETRY_RESERVE_US INT64_C(500000)

typedef struct {
    int64_t tenant_id;
    fq_send_budget_t budget;
    bool held;
    int64_t reserve_after_us; //  After a failed reservation: not before then
} s_tenant_t;

struct fq_tenant_budgets {
    fq_lanes_t *lanes;
    fq_db_t *db;
    fq_tenant_budgets_wall_fn wall;
    zhashx_t *tenants;        //  id -> s_tenant_t*, owned
    size_t held;              //  Of them held now
    zhashx_t *operators_held; //  id -> S_HELD of the tenants an operator holds (0024)
};

//  The value of a tenant in the operator's set: present is all it says.
#define S_HELD ((void *)1)

static int64_t s_wall(void)
{
    return (int64_t)time(NULL);
}

static void s_tenant_free(void **item)
{
    free(*item);
    *item = NULL;
}

fq_tenant_budgets_t *fq_tenant_budgets_new(fq_lanes_t *lanes, fq_db_t *db,
                                           fq_tenant_budgets_wall_fn wall)
{
    fq_tenant_budgets_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    self->lanes = lanes;
    self->db = db;
    self->wall = wall ? wall : s_wall;
    self->tenants = zhashx_new();
    if (!self->tenants) {
        free(self);
        return NULL;
    }
    fq_intkeys_use(self->tenants);
    zhashx_set_destructor(self->tenants, s_tenant_free);
    self->operators_held = zhashx_new();
    if (!self->operators_held) {
        zhashx_destroy(&self->tenants);
        free(self);
        return NULL;
    }
    fq_intkeys_use(self->operators_held);
    return self;
}

static int64_t s_today(fq_tenant_budgets_t *self)
{
    int64_t wall = self->wall();
    return wall >= 0 ? wall / S_SECONDS_IN_DAY : 0;
}

//  Writes tenant's count for its day, giving back unused of its
//  reservation. Returns 0 or a negative code.
static int s_record(fq_tenant_budgets_t *self, s_tenant_t *tenant, int64_t unused)
{
    fq_send_budget_t *budget = &tenant->budget;
    fq_store_t *store = fq_db_store(self->db);
    int rc =
        store ? fq_store_record_sends(store, tenant->tenant_id, budget->day, unused, budget->used)
              : FQ_EDB;
    if (rc == 0)
        budget->dirty = false;
    else if (store)
        fq_db_failed(self->db, rc);
    return rc;
}

void fq_tenant_budgets_destroy(fq_tenant_budgets_t **self_p, bool stopping)
{
    fq_tenant_budgets_t *self = *self_p;
    if (!self)
        return;
    for (s_tenant_t *tenant = zhashx_first(self->tenants); tenant;
         tenant = zhashx_next(self->tenants)) {
        fq_send_budget_t *budget = &tenant->budget;
        if (budget->quota > 0 && budget->loaded && (budget->dirty || stopping))
            s_record(self, tenant, stopping ? budget->reserved - budget->used : 0);
    }
    zhashx_destroy(&self->tenants);
    zhashx_destroy(&self->operators_held);
    free(self);
    *self_p = NULL;
}

//  Whether tenant_id is out of the turns: its budget or an operator
//  holds it.
static bool s_held(fq_tenant_budgets_t *self, int64_t tenant_id)
{
    if (fq_intkey_lookup(self->operators_held, tenant_id))
        return true;
    s_tenant_t *tenant = fq_intkey_lookup(self->tenants, tenant_id);
    return tenant && tenant->held;
}

//  Tells every lane whether tenant_id takes turns now.
static void s_apply(fq_tenant_budgets_t *self, int64_t tenant_id)
{
    bool held = s_held(self, tenant_id);
    for (size_t i = 0; i < fq_lanes_count(self->lanes); i++)
        fq_fairness_tenant_hold(fq_lanes_at(self->lanes, i)->fairness, tenant_id, held);
}

static void s_hold(fq_tenant_budgets_t *self, s_tenant_t *tenant, bool held)
{
    if (tenant->held == held)
        return;
    tenant->held = held;
    if (held)
        self->held++;
    else
        self->held--;
    s_apply(self, tenant->tenant_id);
}

bool fq_tenant_budgets_configure(fq_tenant_budgets_t *self, int64_t tenant_id, int64_t rate_count,
                                 int period_s, int64_t quota, int64_t now_us)
{
    s_tenant_t *tenant = fq_intkey_lookup(self->tenants, tenant_id);
    bool rate = rate_count > 0 && period_s > 0;
    if (!rate && quota <= 0) {
        if (!tenant)
            return false;
        s_hold(self, tenant, false);
        fq_intkey_delete(self->tenants, tenant_id);
        //  Still held by an operator: its lanes hear it again
        if (fq_intkey_lookup(self->operators_held, tenant_id))
            s_apply(self, tenant_id);
        return true;
    }
    if (!tenant) {
        tenant = calloc(1, sizeof *tenant);
        if (!tenant || fq_intkey_insert(self->tenants, tenant_id, tenant) != 0) {
            free(tenant); //  Out of memory: unlimited until the next poll
            return false;
        }
        tenant->tenant_id = tenant_id;
        tenant->budget.day = s_today(self);
    }
    fq_rate_t parsed = {.count = rate_count, .period_s = period_s};
    fq_send_budget_configure(&tenant->budget, rate ? &parsed : NULL, quota, now_us);
    return false;
}

//  Reserves the next block of tenant's quota if it wants one. Returns
//  false when the database could not be asked or refused.
static bool s_reserve(fq_tenant_budgets_t *self, s_tenant_t *tenant, int64_t now_us)
{
    fq_send_budget_t *budget = &tenant->budget;
    int64_t want = fq_send_budget_want(budget);
    if (want <= 0)
        return true;
    if (now_us < tenant->reserve_after_us)
        return false;
    fq_store_t *store = fq_db_store(self->db);
    int64_t before, after;
    int rc = store ? fq_store_reserve_sends(store, tenant->tenant_id, budget->day, want,
                                            budget->quota, budget->used, &before, &after)
                   : FQ_EDB;
    if (rc != 0) {
        if (store)
            fq_db_failed(self->db, rc);
        tenant->reserve_after_us = now_us + S_RETRY_RESERVE_US;
        return false;
    }
    int64_t written = budget->used;
    fq_send_budget_reserved(budget, before, after);
    //  The reservation wrote the count too; the day's first read may have
    //  raised it (earlier leaders' reservations count as sent): that is
    //  written at the next full poll
    budget->dirty = budget->used != written;
    return true;
}

//  What tenant may hand out now, reserving first if it needs to.
static int64_t s_allowance(fq_tenant_budgets_t *self, s_tenant_t *tenant, int64_t now_us)
{
    fq_send_budget_today(&tenant->budget, s_today(self));
    int64_t allowance = fq_send_budget_allowance(&tenant->budget, now_us);
    if (allowance == 0 && fq_send_budget_want(&tenant->budget) > 0 &&
        s_reserve(self, tenant, now_us))
        allowance = fq_send_budget_allowance(&tenant->budget, now_us);
    return allowance;
}

bool fq_tenant_budgets_take(fq_tenant_budgets_t *self, int64_t tenant_id, int64_t now_us)
{
    //  Called for every message handed out: most deployments limit nobody
    if (zhashx_size(self->tenants) == 0)
        return true;
    s_tenant_t *tenant = fq_intkey_lookup(self->tenants, tenant_id);
    if (!tenant)
        return true;
    if (s_allowance(self, tenant, now_us) <= 0) {
        s_hold(self, tenant, true);
        return false;
    }
    fq_send_budget_take(&tenant->budget, 1, now_us);
    if (fq_send_budget_allowance(&tenant->budget, now_us) <= 0 &&
        s_allowance(self, tenant, now_us) <= 0)
        s_hold(self, tenant, true);
    return true;
}

void fq_tenant_budgets_give_back(fq_tenant_budgets_t *self, int64_t tenant_id, int64_t n)
{
    s_tenant_t *tenant = fq_intkey_lookup(self->tenants, tenant_id);
    if (tenant)
        fq_send_budget_give_back(&tenant->budget, n, s_today(self));
}

void fq_tenant_budgets_joined(fq_tenant_budgets_t *self, int64_t tenant_id, fq_fairness_t *fairness)
{
    if (s_held(self, tenant_id))
        fq_fairness_tenant_hold(fairness, tenant_id, true);
}

int fq_tenant_budgets_operator_holds(fq_tenant_budgets_t *self, const int64_t *ids, size_t count)
{
    zhashx_t *named = zhashx_new();
    if (!named)
        return FQ_ENOMEM;
    fq_intkeys_use(named);
    for (size_t i = 0; i < count; i++)
        if (fq_intkey_insert(named, ids[i], S_HELD) != 0 && !fq_intkey_lookup(named, ids[i])) {
            zhashx_destroy(&named);
            return FQ_ENOMEM;
        }
    zhashx_t *was = self->operators_held;
    self->operators_held = named;
    //  Those let go, then those newly held: each told its lanes once
    for (void *item = zhashx_first(was); item; item = zhashx_next(was)) {
        int64_t tenant_id = (int64_t)fq_intkey_cursor(was);
        if (!fq_intkey_lookup(named, tenant_id))
            s_apply(self, tenant_id);
    }
    for (size_t i = 0; i < count; i++)
        if (!fq_intkey_lookup(was, ids[i]))
            s_apply(self, ids[i]);
    zhashx_destroy(&was);
    return 0;
}

bool fq_tenant_budgets_operator_held(fq_tenant_budgets_t *self, int64_t tenant_id)
{
    return fq_intkey_lookup(self->operators_held, tenant_id) != NULL;
}

int64_t fq_tenant_budgets_wake(fq_tenant_budgets_t *self, int64_t now_us)
{
    if (self->held == 0)
        return -1;
    int64_t wall = self->wall();
    int64_t into_day = wall >= 0 ? wall % S_SECONDS_IN_DAY : 0;
    int64_t soonest = -1;
    for (s_tenant_t *tenant = zhashx_first(self->tenants); tenant;
         tenant = zhashx_next(self->tenants)) {
        if (!tenant->held)
            continue;
        if (s_allowance(self, tenant, now_us) > 0) {
            s_hold(self, tenant, false);
            continue;
        }
        int64_t wait = fq_send_budget_wait_us(&tenant->budget, now_us, into_day);
        if (wait < 0 && fq_send_budget_want(&tenant->budget) > 0)
            wait = tenant->reserve_after_us > now_us ? tenant->reserve_after_us - now_us : 1;
        if (wait >= 0 && (soonest < 0 || wait < soonest))
            soonest = wait;
    }
    return soonest;
}

int fq_tenant_budgets_record(fq_tenant_budgets_t *self)
{
    int rc = 0;
    int64_t today = s_today(self);
    for (s_tenant_t *tenant = zhashx_first(self->tenants); tenant && rc == 0;
         tenant = zhashx_next(self->tenants)) {
        fq_send_budget_t *budget = &tenant->budget;
        if (budget->dirty && budget->loaded && budget->day == today)
            rc = s_record(self, tenant, 0);
    }
    return rc;
}

void fq_tenant_budgets_each(fq_tenant_budgets_t *self,
                            void (*each)(const fq_tenant_budget_view_t *view, void *arg), void *arg)
{
    int64_t today = s_today(self);
    for (s_tenant_t *tenant = zhashx_first(self->tenants); tenant;
         tenant = zhashx_next(self->tenants)) {
        fq_send_budget_t *budget = &tenant->budget;
        fq_tenant_budget_view_t view = {
            .tenant_id = tenant->tenant_id,
            .rate_per_s = budget->has_rate ? fq_shaper_configured_per_s(&budget->rate) : 0,
            .quota = budget->quota,
            .sent_today = budget->day == today ? budget->used : 0,
            .held = tenant->held};
        each(&view, arg);
    }
}
