/*  fq_cli_tenant_rates.h — each tenant's bounce and complaint rate as
    fairq top shows them, read from fairqd's /metrics
    (fairq_tenant_bounce_rate and fairq_tenant_complaint_rate, one sample
    per tenant that delivered in the last 24 hours: api/API.md, GET
    /metrics; docs/feedback.md, "Bounce and complaint rates").

    Each is shown as a percentage, marked when it is above what a bulk
    sender must stay under for its mail to land:

    * complaint rate: Gmail's and Yahoo's sender requirements (2024) hold
      bulk senders under 0.3% of spam complaints, and ask them to stay
      under 0.1%. Above 0.3% is marked "!", above 0.1% "*".
    * bounce rate: no mailbox provider publishes a limit, but receivers
      read a sender that keeps mailing addresses that do not exist as one
      that bought or scraped its list; 2% is the ceiling the sending
      platforms commonly hold their customers to. Above it is marked "!".
*/
#ifndef FQ_CLI_TENANT_RATES_H
#define FQ_CLI_TENANT_RATES_H

#include "fq_limits.h"
#include <stddef.h>

//  The limits above, as ratios
#define FQ_CLI_COMPLAINT_RATE_LIMIT       0.003
#define FQ_CLI_COMPLAINT_RATE_RECOMMENDED 0.001
#define FQ_CLI_BOUNCE_RATE_LIMIT          0.02

//  The marks: above the limit, above the recommended level
#define FQ_CLI_RATE_OVER_LIMIT       "!"
#define FQ_CLI_RATE_OVER_RECOMMENDED "*"

typedef struct {
    char name[FQ_TENANT_NAME_SIZE];
    double bounce_rate, complaint_rate; //  0..1; < 0: none (nothing delivered in the window)
} fq_cli_tenant_rates_t;

//  The tenants of a /metrics text (NUL-terminated) with a rate, in the
//  order they first appear, into *out (allocated; the caller frees it),
//  *count of them. Samples that do not parse are skipped. Returns 0, or
//  -1 when out of memory (then *out is NULL).
int fq_cli_tenant_rates_parse(const char *text, fq_cli_tenant_rates_t **out, size_t *count);

//  The rates of tenant among rows, or NULL when it has none.
const fq_cli_tenant_rates_t *fq_cli_tenant_rates_find(const fq_cli_tenant_rates_t *rows,
                                                      size_t count, const char *tenant);

//  A rate as a percentage with its mark: "0.04%", "0.15%*", "2.5%!",
//  "100%!"; "-" when there is none (< 0).
void fq_cli_format_bounce_rate(char *text, size_t size, double rate);
void fq_cli_format_complaint_rate(char *text, size_t size, double rate);

#endif
