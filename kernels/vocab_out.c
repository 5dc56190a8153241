/* vocab_out.c - the output layer's statistics combine and one-barrier
 * input gradient over vocabulary shards, see vocab_out.h.
 *   tab [p, 3, N]; out, MS [3, N]; zl, P [N, ld]; A, G, dx [N, C]
 * Every row is computed alone and the shards are visited in index order,
 * so results do not depend on the thread count.
 */
#include "kernels/vocab_out.h"

#include <math.h>
#include <stddef.h>

#include "kernels/parallel.h"

/* M, S, Zt of row n: the max first, then the rescaled sums in shard order. */
static void combine_row(double *out, const double *tab, int p, int N, int n) {
    size_t stride = 3 * (size_t)N; /* one shard's [3, N] */
    double M = -INFINITY, S = 0.0, Zt = 0.0;
    for (int k = 0; k < p; k++)
        if (tab[k * stride + n] > M) M = tab[k * stride + n];
    for (int k = 0; k < p; k++) {
        const double *st = tab + k * stride; /* m, s, zt of shard k */
        if (st[n] != -INFINITY) S += st[N + n] * exp(st[n] - M);
        Zt += st[2 * (size_t)N + n];
    }
    out[n] = M;
    out[N + n] = S;
    out[2 * (size_t)N + n] = Zt;
}

void zb_vocab_stats_combine(double *out, const double *tab, int p, int N) {
    for (int n = 0; n < N; n++) combine_row(out, tab, p, N, n);
}

void zb_vocab_exp(float *P, const float *zl, const double *m, int N, int Vl,
                  int ld) {
#pragma omp parallel for schedule(static) if (ZB_OMP_WORTH((size_t)N * Vl))
    for (int n = 0; n < N; n++) {
        const float *z = zl + (size_t)n * ld; /* [Vl] */
        float *e = P + (size_t)n * ld;        /* [Vl] */
        float mf = (float)m[n];
        for (int v = 0; v < Vl; v++) e[v] = expf(z[v] - mf);
    }
}

void zb_vocab_dx(float *dx, const float *A, const float *G, const double *m,
                 const double *MS, float scale, int N, int C) {
#pragma omp parallel for schedule(static) if (ZB_OMP_WORTH((size_t)N * C))
    for (int n = 0; n < N; n++) {
        const double *M = MS, *S = MS + N;
        float c = m[n] == -INFINITY ? 0.0f
                                    : (float)(exp(m[n] - M[n]) / S[n]);
        const float *a = A + (size_t)n * C, *g = G + (size_t)n * C; /* [C] */
        float *d = dx + (size_t)n * C;                              /* [C] */
        for (int i = 0; i < C; i++) d[i] = scale * (c * a[i] - g[i]);
    }
}
