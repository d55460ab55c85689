/*  fq_quantile.c — a quantile from a histogram's buckets (fq_quantile.h). */
#include "fq_quantile.h"

double fq_quantile(double q, const double *bounds, const double *cumulative, size_t nbounds,
                   double total)
{
    if (!(total > 0) || !(q >= 0 && q <= 1) || nbounds == 0)
        return -1;
    double rank = q * total;
    size_t i = 0;
    while (i < nbounds && cumulative[i] < rank)
        i++;
    //  Above the highest bound: nothing more precise can be said
    if (i == nbounds)
        return bounds[nbounds - 1];
    double lower = i == 0 ? 0 : bounds[i - 1];
    double below = i == 0 ? 0 : cumulative[i - 1];
    double inside = cumulative[i] - below;
    if (!(inside > 0))
        return lower;
    return lower + (bounds[i] - lower) * (rank - below) / inside;
}
