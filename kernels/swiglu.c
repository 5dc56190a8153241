/* swiglu.c - the SwiGLU gate, see swiglu.h.
 *   ab, dab [N, 2F] (a | b per row); out, dout [N, F]
 * The arithmetic of one element is kernels/swiglu_math.h (shared with the
 * CUDA twin); one row's F elements are one vector loop (ZB_SIMD_CLONES,
 * parallel.h), rows are shared out over OpenMP. Each output element has
 * one owner, so results do not depend on the thread count or the clone.
 */
#include "kernels/swiglu.h"

#include <math.h>
#include <stddef.h>

#include "kernels/parallel.h"
#include "kernels/swiglu_math.h"

ZB_SIMD_CLONES
static void swiglu_fwd_row(float *out, const float *a, const float *b, int F) {
#pragma omp simd
    for (int f = 0; f < F; f++) out[f] = zb_swiglu_value(a[f], b[f]);
}

ZB_SIMD_CLONES
static void swiglu_bwd_row(float *da, float *db, const float *a,
                           const float *b, const float *dout, int F) {
#pragma omp simd
    for (int f = 0; f < F; f++) {
        da[f] += zb_swiglu_da(a[f], b[f], dout[f]);
        db[f] += zb_swiglu_db(a[f], dout[f]);
    }
}

void zb_swiglu_forward(float *out, const float *ab, int N, int F) {
#pragma omp parallel for schedule(static) if (ZB_OMP_WORTH((size_t)N * F))
    for (int n = 0; n < N; n++) {
        const float *a = ab + (size_t)n * 2 * F; /* [F], b = a + F */
        swiglu_fwd_row(out + (size_t)n * F, a, a + F, F);
    }
}

void zb_swiglu_backward(float *dab, const float *ab, const float *dout, int N,
                        int F) {
#pragma omp parallel for schedule(static) if (ZB_OMP_WORTH((size_t)N * F))
    for (int n = 0; n < N; n++) {
        const float *a = ab + (size_t)n * 2 * F; /* [F], b = a + F */
        float *da = dab + (size_t)n * 2 * F;     /* [F], db = da + F */
        swiglu_bwd_row(da, da + F, a, a + F, dout + (size_t)n * F, F);
    }
}

/* ---- references: one thread, libm's expf, written from the formulas ---- */

void zb_swiglu_forward_ref(float *out, const float *ab, int N, int F) {
    for (int n = 0; n < N; n++)
        for (int f = 0; f < F; f++) {
            float a = ab[(size_t)n * 2 * F + f], b = ab[(size_t)n * 2 * F + F + f];
            out[(size_t)n * F + f] = a / (1.0f + expf(-a)) * b;
        }
}

void zb_swiglu_backward_ref(float *dab, const float *ab, const float *dout,
                            int N, int F) {
    for (int n = 0; n < N; n++)
        for (int f = 0; f < F; f++) {
            size_t ia = (size_t)n * 2 * F + f, ib = ia + F;
            float a = ab[ia], b = ab[ib], dy = dout[(size_t)n * F + f];
            float s = 1.0f / (1.0f + expf(-a));
            dab[ia] += dy * b * (s + a * s * (1.0f - s));
            dab[ib] += dy * a * s;
        }
}
