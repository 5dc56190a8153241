/* swiglu_math.h - the SwiGLU gate of one element, for kernels/swiglu.c and
 * kernels/cuda/swiglu.cu (zb_hd.h).
 *   out = silu(a) * b,  silu(a) = a * sigmoid(a)
 *   da = dout * b * silu'(a),  silu'(a) = s (1 + a (1 - s)), s = sigmoid(a)
 *   db = dout * silu(a)
 * sigmoid through zb_fast_expf (fastexp.h), as gelu_math.h: the loops
 * vectorise and the GPU runs the same arithmetic. exp(-a) is clamped at
 * e^88 for a < -88, where s ~ 6e-39 and silu(a) is as good as 0.
 */
#ifndef ZB_SWIGLU_MATH_H
#define ZB_SWIGLU_MATH_H

#include "kernels/fastexp.h"
#include "kernels/zb_hd.h"

ZB_HD float zb_sigmoid(float a) { return 1.0f / (1.0f + zb_fast_expf(-a)); }

ZB_HD float zb_swiglu_value(float a, float b) { return a * zb_sigmoid(a) * b; }

/* d out / d a, times dout */
ZB_HD float zb_swiglu_da(float a, float b, float dout) {
    float s = zb_sigmoid(a);
    return dout * b * (s * (1.0f + a * (1.0f - s)));
}

/* d out / d b, times dout */
ZB_HD float zb_swiglu_db(float a, float dout) {
    return dout * (a * zb_sigmoid(a));
}

#endif
