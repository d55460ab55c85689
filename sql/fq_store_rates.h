/*  fq_store_rates.h — each tenant's deliverability over a window: mail
    delivered, hard bounces, complaints, unsubscribes, and the entries of
    its suppression list. What GET /metrics shows as the tenants' bounce
    and complaint rates (metrics/fq_metrics.h), refreshed once a minute,
    never per message. Defined in fq_store_rates.c; docs/feedback.md,
    "Bounce and complaint rates", says what each counts and why.

    From the database, so the figures survive a restart and every fairqd,
    leader or standby, shows the same. What each costs:

    * delivered: from the requests' own counters (fairq.requests.sent),
      never from counting messages or message.sent events (a day of them
      is millions of rows, and none are written with fairqd's
      sent_events = false). A request's deliveries are spread evenly over
      its span, from its first possible delivery (created_at, or send_at
      when later) to its last change (updated_at, which every ack batch
      sets): one wholly in the window counts whole, one that began before
      counts the share of its span inside. Only mail requests (channel
      email) count, and only the unfinished ones and those finished in the
      window, read from their partial indexes (0001, 0003).
    * bounces, complaints, unsubscribes: counted from their events of the
      window, which are few, through the partial index of migration 0023.
      A hard bounce is a message.dead whose reply matches the pattern of
      fairqd's suppress_bounces (the very test the nack batch suppresses
      by, fq_store_bounce_pattern) or a message.bounced (a DSN that came
      back later); a message is one bounce however it came back.
    * suppressions: the entries of the tenant's own list, one index-only
      scan of suppressions_list_address_idx (0019).
*/
#ifndef FQ_STORE_RATES_H
#define FQ_STORE_RATES_H

#include "fq_limits.h"
#include "fq_store.h"
#include <stdint.h>

//  The window of the figures GET /metrics shows: the last 24 hours, the
//  day over which Gmail's Postmaster Tools report a sender's spam rate
//  (and over which Gmail and Yahoo hold bulk senders to it).
#define FQ_STORE_RATES_WINDOW_S 86400

typedef struct {
    int64_t tenant_id;
    char name[FQ_TENANT_NAME_SIZE];
    //  Mail delivered in the window (receivers' acks), estimated from the
    //  requests' counters as above
    int64_t delivered;
    //  Hard bounces in the window: every one, and of them those refused at
    //  SMTP time (a message.dead: never delivered, so not in delivered)
    int64_t bounces, bounces_refused;
    int64_t complaints;   //  message.complained events in the window
    int64_t unsubscribes; //  message.unsubscribed events in the window
    int64_t suppressions; //  Entries of its own suppression list now
} fq_tenant_rates_t;

typedef struct {
    fq_tenant_rates_t *rows; //  Owned by the caller: fq_tenant_rates_free
    size_t count;
} fq_tenant_rates_list_t;

//  Every tenant's figures over the last window_s seconds (> 0) up to the
//  database's now, by name. bounce_pattern: fairqd's suppress_bounces as
//  fq_store_bounce_pattern made it (NULL or "": only message.bounced
//  counts as a hard bounce). Returns how many tenants, FQ_EINVAL (a window
//  not above 0) or FQ_EDB.
int fq_store_tenant_rates(fq_store_t *self, const char *bounce_pattern, int window_s,
                          fq_tenant_rates_list_t *list);
void fq_tenant_rates_free(fq_tenant_rates_list_t *list);

//  The rates of figures as GET /metrics shows them, 0..1; < 0 when there
//  is nothing to divide by. Bounce rate: hard bounces over the messages
//  that met a receiver's verdict (delivered, or refused with a hard
//  bounce), so that a list of bad addresses shows 100%, not more.
//  Complaint rate: complaints over delivered, as Gmail and Yahoo count it.
//  Either is at most 1 (delivered is an estimate; the events are exact).
double fq_tenant_bounce_rate(const fq_tenant_rates_t *figures);
double fq_tenant_complaint_rate(const fq_tenant_rates_t *figures);

#endif
