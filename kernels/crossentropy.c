/* crossentropy.c - softmax cross-entropy over a vocabulary, see
 * crossentropy.h.
 *   logits, dlogits [N, V]; targets [N]; losses [N]
 * loss_n = log(sum_v exp(z_v - max)) + max - z_target: the max is taken
 * out before exp so nothing overflows; the terms exp(z_v - max) <= 1 are
 * exact to a float ulp and are summed in double, so a large vocabulary or
 * a confident row does not lose its small loss to rounding.
 * The unsharded functions are the sharded pieces with one shard, so both
 * paths do the same arithmetic.
 */
#include "kernels/crossentropy.h"

#include <math.h>
#include <stddef.h>

#include "kernels/parallel.h"

static float row_max(const float *z, int V) {
    float m = -INFINITY;
    for (int v = 0; v < V; v++) m = z[v] > m ? z[v] : m;
    return m;
}

static double row_sumexp(const float *z, int V, float m) {
    double s = 0.0;
    for (int v = 0; v < V; v++) s += expf(z[v] - m);
    return s;
}

/* dz[:V] = scale (softmax - onehot(k)) of z, from its max m and sum of
 * exp(z - m) s; k outside [0, V): no one-hot term here. */
static void row_dsoftmax(float *dz, const float *z, int V, float m, double s,
                         int k, float scale) {
    float inv = (float)(1.0 / s);
    for (int v = 0; v < V; v++) dz[v] = scale * (expf(z[v] - m) * inv);
    if (k >= 0 && k < V) dz[k] -= scale;
}

double zb_crossentropy_forward(float *losses, const float *logits,
                               const int *targets, int N, int V) {
#pragma omp parallel for schedule(static) if (ZB_OMP_WORTH((size_t)N * V))
    for (int n = 0; n < N; n++) {
        const float *z = logits + (size_t)n * V; /* [V] */
        float m = row_max(z, V);
        double s = row_sumexp(z, V, m);
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
        float m = row_max(z, V);
        row_dsoftmax(dz, z, V, m, row_sumexp(z, V, m), targets[n], scale);
    }
}

/* ---- vocabulary-parallel pieces ---- */

void zb_ce_shard_max(double *rowmax, const float *zl, int N, int Vl) {
#pragma omp parallel for schedule(static) if (ZB_OMP_WORTH((size_t)N * Vl))
    for (int n = 0; n < N; n++) rowmax[n] = row_max(zl + (size_t)n * Vl, Vl);
}

void zb_ce_shard_stats(double *sumexp, double *ztgt, const float *zl,
                       const double *M, const int *targets, int v0, int N,
                       int Vl) {
#pragma omp parallel for schedule(static) if (ZB_OMP_WORTH((size_t)N * Vl))
    for (int n = 0; n < N; n++) {
        const float *z = zl + (size_t)n * Vl; /* [Vl] */
        sumexp[n] = row_sumexp(z, Vl, (float)M[n]);
        int k = targets[n] - v0;
        ztgt[n] = k >= 0 && k < Vl ? (double)z[k] : 0.0;
    }
}

double zb_ce_shard_loss(float *losses, const double *M, const double *S,
                        const double *Zt, int N) {
    double total = 0.0;
    for (int n = 0; n < N; n++) {
        losses[n] = (float)(log(S[n]) + (double)(float)M[n] - Zt[n]);
        total += losses[n];
    }
    return total;
}

void zb_ce_shard_backward(float *dzl, const float *zl, const double *M,
                          const double *S, const int *targets, int v0,
                          float scale, int N, int Vl) {
#pragma omp parallel for schedule(static) if (ZB_OMP_WORTH((size_t)N * Vl))
    for (int n = 0; n < N; n++) {
        const float *z = zl + (size_t)n * Vl; /* [Vl] */
        float *dz = dzl + (size_t)n * Vl;     /* [Vl] */
        row_dsoftmax(dz, z, Vl, (float)M[n], S[n], targets[n] - v0, scale);
    }
}

/* Pieces 1-4 with v0 = 0 row by row: m is the row max (a float, what
 * (float)M[n] gives back), the sum of exp(z - m) in double, the target's
 * logit, the loss as zb_ce_shard_loss forms it, then dzl as
 * zb_ce_shard_backward writes it. */
static float ce_fused_row(float *dz, const float *z, int target, float scale,
                          int V) {
    float m = row_max(z, V);
    double s = row_sumexp(z, V, m);
    double zt = target >= 0 && target < V ? (double)z[target] : 0.0;
    row_dsoftmax(dz, z, V, m, s, target, scale);
    return (float)(log(s) + (double)m - zt);
}

double zb_ce_fused(float *losses, float *dzl, const float *zl,
                   const int *targets, float scale, int N, int V, int ld) {
#pragma omp parallel for schedule(static) if (ZB_OMP_WORTH((size_t)N * V))
    for (int n = 0; n < N; n++)
        losses[n] = ce_fused_row(dzl + (size_t)n * ld, zl + (size_t)n * ld,
                                 targets[n], scale, V);
    double total = 0.0; /* serial: the same value for any thread count */
    for (int n = 0; n < N; n++) total += losses[n];
    return total;
}
