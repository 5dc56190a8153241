/* layernorm_math.h - LayerNorm's per-element arithmetic, for
 * kernels/layernorm.c and kernels/cuda/layernorm.cu (zb_hd.h). The row
 * statistics (mean, rstd, the two means of the backward) are reductions
 * that each side computes its own way; what is done with them is here.
 *   xhat = (x - mean) * rstd;  y = xhat * w + b
 *   with g = dy * w:  dx = rstd * (g - mean(g) - xhat * mean(g * xhat))
 */
#ifndef ZB_LAYERNORM_MATH_H
#define ZB_LAYERNORM_MATH_H

#include "kernels/zb_hd.h"

#define ZB_LN_EPS 1e-5

ZB_HD float zb_ln_xhat(float x, float mean, float rstd) {
    return (x - mean) * rstd;
}

ZB_HD float zb_ln_out(float x, float mean, float rstd, float w, float b) {
    return (x - mean) * rstd * w + b;
}

ZB_HD float zb_ln_dx(float g, float g_mean, float xhat, float gx_mean,
                     float rstd) {
    return rstd * (g - g_mean - xhat * gx_mean);
}

#endif
