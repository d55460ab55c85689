/*  fq_quantile.h — the one estimate of a quantile from a histogram's
    buckets, as Prometheus' histogram_quantile() makes it.

    fairqd answers its latency quantiles from the buckets it keeps
    (metrics/fq_latency.h) and fairq top from the buckets of /metrics read
    twice (cli/fq_cli_latency.h): both read the same answer from the same
    buckets only if both estimate the same way, so the estimate lives here,
    below both. Pure, no allocation.
*/
#ifndef FQ_QUANTILE_H
#define FQ_QUANTILE_H

#include <stddef.h>

//  The q-quantile (0..1) of the observations counted by a histogram of
//  nbounds buckets: bounds[i] is bucket i's upper bound (ascending; the
//  first bucket starts at 0), cumulative[i] the observations at or below
//  it, total all of them (the +Inf bucket). Within a bucket the
//  observations are taken as spread evenly (linear interpolation); one in
//  the +Inf bucket is answered as the highest bound, the most that can be
//  said of it. Returns -1 when total is 0 (no observation: no quantile)
//  or q is outside 0..1.
double fq_quantile(double q, const double *bounds, const double *cumulative, size_t nbounds,
                   double total);

#endif
