/* rmsnorm_math.h - RMSNorm's per-element arithmetic, for kernels/rmsnorm.c
 * and kernels/cuda/rmsnorm.cu (zb_hd.h). The row statistics (rstd and the
 * backward's mean(g * xhat)) are reductions each side computes its own
 * way; what is done with them is here.
 *   rstd = 1 / sqrt(mean(x^2) + eps);  xhat = x * rstd;  y = xhat * w
 *   with g = dy * w:  dx = rstd * (g - xhat * mean(g * xhat))
 * (LayerNorm without the mean and the bias: Zhang & Sennrich 2019.)
 */
#ifndef ZB_RMSNORM_MATH_H
#define ZB_RMSNORM_MATH_H

#include "kernels/zb_hd.h"

#define ZB_RMS_EPS 1e-5

ZB_HD float zb_rms_xhat(float x, float rstd) { return x * rstd; }

ZB_HD float zb_rms_out(float x, float rstd, float w) { return x * rstd * w; }

ZB_HD float zb_rms_dx(float g, float xhat, float gx_mean, float rstd) {
    return rstd * (g - xhat * gx_mean);
}

#endif
