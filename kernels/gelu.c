/* gelu.c - GELU with the tanh approximation used by GPT-2, see gelu.h.
 *   gelu(x) = 0.5 x (1 + tanh(u)),  u = sqrt(2/pi) (x + 0.044715 x^3)
 *   inp, out, dout, dinp [N]
 */
#include "kernels/gelu.h"

#include <math.h>

#include "kernels/parallel.h"

#define ZB_GELU_K 0.7978845608028654f /* sqrt(2 / pi) */
#define ZB_GELU_A 0.044715f

void zb_gelu_forward(float *out, const float *inp, size_t N) {
#pragma omp parallel for schedule(static) if (ZB_OMP_WORTH(N))
    for (size_t i = 0; i < N; i++) {
        float x = inp[i];
        float u = ZB_GELU_K * (x + ZB_GELU_A * x * x * x);
        out[i] = 0.5f * x * (1.0f + tanhf(u));
    }
}

/* d gelu/dx = 0.5 (1 + tanh u) + 0.5 x sech^2(u) du/dx,
 * du/dx = sqrt(2/pi) (1 + 3 * 0.044715 x^2) */
void zb_gelu_backward(float *dinp, const float *inp, const float *dout,
                      size_t N) {
#pragma omp parallel for schedule(static) if (ZB_OMP_WORTH(N))
    for (size_t i = 0; i < N; i++) {
        float x = inp[i];
        float u = ZB_GELU_K * (x + ZB_GELU_A * x * x * x);
        float th = tanhf(u);
        float sech2 = 1.0f - th * th;
        float du = ZB_GELU_K * (1.0f + 3.0f * ZB_GELU_A * x * x);
        float local = 0.5f * (1.0f + th) + 0.5f * x * sech2 * du;
        dinp[i] += local * dout[i];
    }
}
