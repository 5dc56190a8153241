/* dp.c - see cost/dp.h. */
#include "planner/cost/dp.h"

/* What of `part` (s) shows when its buckets run under `window` (s): at
 * least the last bucket. */
static double outlasts(double part, double window, int buckets) {
    double last = part / buckets, rest = part - window;
    return rest > last ? rest : last;
}

double zb_dp_exposed_s(const zb_model *m, double ar_s, double bwd_s,
                       double fwd_s, int buckets) {
    if (!m->train.dp_overlap || !(ar_s > 0)) return ar_s;
    if (buckets < 1) buckets = 1;
    if (!m->train.zero1) return outlasts(ar_s, bwd_s, buckets);
    /* ring all-reduce = reduce-scatter + all-gather of equal traffic */
    double half = ar_s / 2;
    return outlasts(half, bwd_s, buckets) + outlasts(half, fwd_s, buckets);
}
