/* gelu_math.h - GELU (tanh approximation, GPT-2) of one element, for
 * kernels/gelu.c and kernels/cuda/gelu.cu (zb_hd.h).
 *   gelu(x) = 0.5 x (1 + tanh(u)),  u = sqrt(2/pi) (x + 0.044715 x^3)
 * computed as x * s with s = 0.5 (1 + tanh u) = sigmoid(2u) = 1/(1+exp(-2u)):
 * one exp instead of tanhf, and that exp is zb_fast_expf (fastexp.h), which
 * vectorises on the CPU and is the same arithmetic on the GPU. For very
 * negative x, exp(-2u) is clamped to e^88 and s is ~1e-38 rather than 0;
 * x * s is then as good as 0.
 */
#ifndef ZB_GELU_MATH_H
#define ZB_GELU_MATH_H

#include <math.h>

#include "kernels/fastexp.h"
#include "kernels/zb_hd.h"

#define ZB_GELU_K 0.7978845608028654f /* sqrt(2 / pi) */
#define ZB_GELU_A 0.044715f

/* sigmoid(2u) for the input x */
ZB_HD float zb_gelu_gate(float x) {
    float u = ZB_GELU_K * (x + ZB_GELU_A * x * x * x);
    return 1.0f / (1.0f + zb_fast_expf(-2.0f * u));
}

ZB_HD float zb_gelu_value(float x) { return x * zb_gelu_gate(x); }

/* d/dx [x s(x)] = s + x s (1 - s) 2 du/dx, du/dx = sqrt(2/pi) (1 + 3 a x^2) */
ZB_HD float zb_gelu_slope(float x) {
    float s = zb_gelu_gate(x);
    float du = ZB_GELU_K * (1.0f + 3.0f * ZB_GELU_A * x * x);
    return s + 2.0f * x * s * (1.0f - s) * du;
}

#endif
