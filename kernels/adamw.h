/* adamw.h - AdamW update (Loshchilov & Hutter), bias-corrected, in place.
 *   params, grads, m, v [n]; grads are multiplied by grad_scale first
 *   (global-norm clipping); t >= 1 is the step number.
 * Also the sum of squares used for the global gradient norm. */
#ifndef ZB_KERNELS_ADAMW_H
#define ZB_KERNELS_ADAMW_H

#include <stddef.h>

void zb_adamw_update(float *params, const float *grads, float *m, float *v,
                     size_t n, float lr, float beta1, float beta2, float eps,
                     float weight_decay, float grad_scale, int t);
/* sum of x[i]^2 in double */
double zb_sumsq(const float *x, size_t n);

#endif
