/* gelu.c - GELU with the tanh approximation used by GPT-2, see gelu.h.
 *   gelu(x) = 0.5 x (1 + tanh(u)),  u = sqrt(2/pi) (x + 0.044715 x^3)
 *   inp, out, dout, dinp [N]
 * Computed through the identity 0.5 (1 + tanh u) = sigmoid(2u) =
 * 1 / (1 + exp(-2u)): one expf instead of libm's tanhf, which measured
 * ~30% of a tiny-model training step (perf, tests/bench/run.sh), and
 * that expf is zb_fast_expf (fastexp.h), so the loops vectorise: libm's
 * expf kept them scalar at ~15% of a step.
 * For very negative x, exp(-2u) is clamped to e^88 and s is ~1e-38
 * rather than 0; x * s is then as good as 0.
 */
#include "kernels/gelu.h"

#include <math.h>

#include "kernels/fastexp.h"
#include "kernels/parallel.h"

#define ZB_GELU_K 0.7978845608028654f /* sqrt(2 / pi) */
#define ZB_GELU_A 0.044715f

/* sigmoid(2u) for the input x */
static inline float gelu_gate(float x) {
    float u = ZB_GELU_K * (x + ZB_GELU_A * x * x * x);
    return 1.0f / (1.0f + zb_fast_expf(-2.0f * u));
}

/* Elements [i0, i1): vector loops built for AVX-512, AVX2 and the baseline
 * (ZB_SIMD_CLONES, parallel.h), the widest the CPU runs picked at load. */
ZB_SIMD_CLONES
static void gelu_fwd_range(float *out, const float *inp, size_t i0, size_t i1) {
#pragma omp simd
    for (size_t i = i0; i < i1; i++) out[i] = inp[i] * gelu_gate(inp[i]);
}

ZB_SIMD_CLONES
static void gelu_bwd_range(float *dinp, const float *inp, const float *dout,
                           size_t i0, size_t i1) {
#pragma omp simd
    for (size_t i = i0; i < i1; i++) {
        float x = inp[i], s = gelu_gate(x);
        float du = ZB_GELU_K * (1.0f + 3.0f * ZB_GELU_A * x * x);
        float local = s + 2.0f * x * s * (1.0f - s) * du;
        dinp[i] += local * dout[i];
    }
}

void zb_gelu_forward(float *out, const float *inp, size_t N) {
    size_t nb = (N + ZB_SIMD_BLOCK - 1) / ZB_SIMD_BLOCK;
#pragma omp parallel for schedule(static) if (ZB_OMP_WORTH(N))
    for (size_t b = 0; b < nb; b++)
        gelu_fwd_range(out, inp, b * ZB_SIMD_BLOCK,
                       b + 1 < nb ? (b + 1) * ZB_SIMD_BLOCK : N);
}

/* d/dx [x s(x)] with s = sigmoid(2u): s + x s (1 - s) 2 du/dx,
 * du/dx = sqrt(2/pi) (1 + 3 * 0.044715 x^2) */
void zb_gelu_backward(float *dinp, const float *inp, const float *dout,
                      size_t N) {
    size_t nb = (N + ZB_SIMD_BLOCK - 1) / ZB_SIMD_BLOCK;
#pragma omp parallel for schedule(static) if (ZB_OMP_WORTH(N))
    for (size_t b = 0; b < nb; b++)
        gelu_bwd_range(dinp, inp, dout, b * ZB_SIMD_BLOCK,
                       b + 1 < nb ? (b + 1) * ZB_SIMD_BLOCK : N);
}
