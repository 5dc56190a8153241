/* gelu.c - GELU with the tanh approximation used by GPT-2, see gelu.h.
 *   inp, out, dout, dinp [N]
 * The arithmetic of one element is kernels/gelu_math.h (shared with the
 * CUDA twin): the sigmoid form, one expf instead of libm's tanhf, which
 * measured ~30% of a tiny-model training step (perf, tests/bench/run.sh).
 */
#include "kernels/gelu.h"

#include <math.h>

#include "kernels/gelu_math.h"
#include "kernels/parallel.h"

void zb_gelu_forward(float *out, const float *inp, size_t N) {
#pragma omp parallel for schedule(static) if (ZB_OMP_WORTH(N))
    for (size_t i = 0; i < N; i++) out[i] = zb_gelu_value(inp[i]);
}

void zb_gelu_backward(float *dinp, const float *inp, const float *dout,
                      size_t N) {
#pragma omp parallel for schedule(static) if (ZB_OMP_WORTH(N))
    for (size_t i = 0; i < N; i++) dinp[i] += zb_gelu_slope(inp[i]) * dout[i];
}
