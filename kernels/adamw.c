/* adamw.c - AdamW update and gradient sum of squares, see adamw.h.
 *   params, grads, m, v [n]
 * AdamW (Loshchilov & Hutter, "Decoupled Weight Decay Regularization"):
 *   g = grad * grad_scale
 *   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
 *   mhat = m / (1 - b1^t);  vhat = v / (1 - b2^t)
 *   p -= lr * (mhat / (sqrt(vhat) + eps) + wd * p)
 * The decay acts on p directly and never enters m or v.
 */
#include "kernels/adamw.h"

#include <math.h>

#include "kernels/adamw_math.h"
#include "kernels/parallel.h"

/* zb_sumsq splits x into this many fixed chunks whatever the thread count,
 * then adds the chunk sums in order, so the result is reproducible. */
#define ZB_SUMSQ_CHUNKS 64

/* Elements [i0, i1), vectorised (ZB_SIMD_CLONES, parallel.h): divisions
 * and square roots 4-16 at a time, each lane the scalar loop's IEEE
 * operations (adamw_math.h, shared with the CUDA twin), so the results
 * are equal. */
ZB_SIMD_CLONES
static void adamw_range(float *params, const float *grads, float *m, float *v,
                        const zb_adamw_k *k, size_t i0, size_t i1) {
#pragma omp simd
    for (size_t i = i0; i < i1; i++)
        zb_adamw_elem(&params[i], &m[i], &v[i], grads[i], k);
}

void zb_adamw_update(float *params, const float *grads, float *m, float *v,
                     size_t n, float lr, float beta1, float beta2, float eps,
                     float weight_decay, float grad_scale, int t) {
    zb_adamw_k k = {lr, beta1, beta2, eps, weight_decay, grad_scale,
                    (float)(1.0 - pow(beta1, t)),   /* bias corrections */
                    (float)(1.0 - pow(beta2, t))};
    size_t nb = (n + ZB_SIMD_BLOCK - 1) / ZB_SIMD_BLOCK;
#pragma omp parallel for schedule(static) if (ZB_OMP_WORTH(n))
    for (size_t b = 0; b < nb; b++)
        adamw_range(params, grads, m, v, &k, b * ZB_SIMD_BLOCK,
                    b + 1 < nb ? (b + 1) * ZB_SIMD_BLOCK : n);
}

double zb_sumsq(const float *x, size_t n) {
    double part[ZB_SUMSQ_CHUNKS]; /* sum of squares of each chunk */
    size_t chunk = (n + ZB_SUMSQ_CHUNKS - 1) / ZB_SUMSQ_CHUNKS;
#pragma omp parallel for schedule(static) if (ZB_OMP_WORTH(n))
    for (int k = 0; k < ZB_SUMSQ_CHUNKS; k++) {
        size_t i0 = (size_t)k * chunk;
        size_t i1 = i0 + chunk < n ? i0 + chunk : n;
        double s = 0.0;
        for (size_t i = i0; i < i1; i++) s += (double)x[i] * x[i];
        part[k] = s;
    }
    double total = 0.0;
    for (int k = 0; k < ZB_SUMSQ_CHUNKS; k++) total += part[k];
    return total;
}
