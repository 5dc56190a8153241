/* crossentropy.c - softmax cross-entropy over a vocabulary, see
 * crossentropy.h.
 *   logits, dlogits [N, V]; targets [N]; losses [N]
 * loss_n = log(sum_v exp(z_v - max)) + max - z_target: the max is taken
 * out before exp so nothing overflows; the terms exp(z_v - max) <= 1 are
 * exact to a float ulp and are summed in double, so a large vocabulary or
 * a confident row does not lose its small loss to rounding.
 */
#include "kernels/crossentropy.h"

#include <math.h>
#include <stddef.h>

#include "kernels/parallel.h"

/* Row max and sum_v exp(z_v - max). */
static void row_stats(const float *z, int V, float *maxv, double *sumexp) {
    float m = -INFINITY;
    for (int v = 0; v < V; v++) m = z[v] > m ? z[v] : m;
    double s = 0.0;
    for (int v = 0; v < V; v++) s += expf(z[v] - m);
    *maxv = m;
    *sumexp = s;
}

double zb_crossentropy_forward(float *losses, const float *logits,
                               const int *targets, int N, int V) {
#pragma omp parallel for schedule(static) if (ZB_OMP_WORTH((size_t)N * V))
    for (int n = 0; n < N; n++) {
        const float *z = logits + (size_t)n * V; /* [V] */
        float m;
        double s;
        row_stats(z, V, &m, &s);
        losses[n] = (float)(log(s) + (double)m - (double)z[targets[n]]);
    }
    /* Serial sum: the same value for any thread count. */
    double total = 0.0;
    for (int n = 0; n < N; n++) total += losses[n];
    return total;
}

void zb_crossentropy_backward(float *dlogits, const float *logits,
                              const int *targets, float scale, int N, int V) {
#pragma omp parallel for schedule(static) if (ZB_OMP_WORTH((size_t)N * V))
    for (int n = 0; n < N; n++) {
        const float *z = logits + (size_t)n * V; /* [V] */
        float *dz = dlogits + (size_t)n * V;     /* [V] */
        float m;
        double s;
        row_stats(z, V, &m, &s);
        float inv = (float)(1.0 / s);
        for (int v = 0; v < V; v++) dz[v] = scale * (expf(z[v] - m) * inv);
        dz[targets[n]] -= scale;
    }
}
