/* zb_ticks.c - see zb_ticks.h. */
#include "common/zb_ticks.h"

#include <math.h>
#include <stdio.h>

double zb_tick_step(double vmax, int max_n, int *n) {
    if (!(vmax > 0) || !isfinite(vmax) || max_n < 1) {
        *n = 1;
        return 1;
    }
    static const double mant[] = {1, 2, 5};
    double p = pow(10, floor(log10(vmax / max_n)));
    for (int e = 0; e < 3; e++, p *= 10)
        for (int k = 0; k < 3; k++) {
            double step = mant[k] * p;
            double c = ceil(vmax / step - 1e-9);
            if (c <= max_n) {
                *n = c < 1 ? 1 : (int)c;
                return step;
            }
        }
    *n = max_n;   /* not reached: 10 x the first power always fits */
    return vmax / max_n;
}

void zb_tick_label(double v, double step, char *buf, size_t cap) {
    int dec = step >= 1 ? 0 : (int)ceil(-log10(step) - 1e-9);
    if (dec > 9) dec = 9;
    snprintf(buf, cap, "%.*f", dec, fabs(v) < step * 1e-6 ? 0.0 : v);
}
