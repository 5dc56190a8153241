/* gelu.c - GELU with the tanh approximation used by GPT-2, see gelu.h.
 *   inp, out, dout, dinp [N]
 * The arithmetic of one element is kernels/gelu_math.h (shared with the
 * CUDA twin): the sigmoid form, one expf instead of libm's tanhf, which
 * measured ~30% of a tiny-model training step (perf, tests/bench/run.sh),
 * and that expf is zb_fast_expf (fastexp.h), so the loops vectorise: libm's
 * expf kept them scalar at ~15% of a step.
 */
#include "kernels/gelu.h"

#include <math.h>

#include "kernels/gelu_math.h"
#include "kernels/parallel.h"

/* Elements [i0, i1): vector loops built for AVX-512, AVX2 and the baseline
 * (ZB_SIMD_CLONES, parallel.h), the widest the CPU runs picked at load. */
ZB_SIMD_CLONES
static void gelu_fwd_range(float *out, const float *inp, size_t i0, size_t i1) {
#pragma omp simd
    for (size_t i = i0; i < i1; i++) out[i] = zb_gelu_value(inp[i]);
}

ZB_SIMD_CLONES
static void gelu_bwd_range(float *dinp, const float *inp, const float *dout,
                           size_t i0, size_t i1) {
#pragma omp simd
    for (size_t i = i0; i < i1; i++) dinp[i] += zb_gelu_slope(inp[i]) * dout[i];
}

void zb_gelu_forward(float *out, const float *inp, size_t N) {
    size_t nb = (N + ZB_SIMD_BLOCK - 1) / ZB_SIMD_BLOCK;
#pragma omp parallel for schedule(static) if (ZB_OMP_WORTH(N))
    for (size_t b = 0; b < nb; b++)
        gelu_fwd_range(out, inp, b * ZB_SIMD_BLOCK,
                       b + 1 < nb ? (b + 1) * ZB_SIMD_BLOCK : N);
}

void zb_gelu_backward(float *dinp, const float *inp, const float *dout,
                      size_t N) {
    size_t nb = (N + ZB_SIMD_BLOCK - 1) / ZB_SIMD_BLOCK;
#pragma omp parallel for schedule(static) if (ZB_OMP_WORTH(N))
    for (size_t b = 0; b < nb; b++)
        gelu_bwd_range(dinp, inp, dout, b * ZB_SIMD_BLOCK,
                       b + 1 < nb ? (b + 1) * ZB_SIMD_BLOCK : N);
}
