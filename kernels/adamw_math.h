/* adamw_math.h - the AdamW update of one parameter, for kernels/adamw.c and
 * kernels/cuda/adamw.cu (zb_hd.h). See adamw.c for the formulas. */
#ifndef ZB_ADAMW_MATH_H
#define ZB_ADAMW_MATH_H

#include <math.h>

#include "kernels/zb_hd.h"

typedef struct {
    float lr, beta1, beta2, eps, weight_decay, grad_scale;
    float bc1, bc2;   /* bias corrections 1 - beta^t, computed in double */
} zb_adamw_k;

/* *p, *m, *v updated in place from gradient g */
ZB_HD void zb_adamw_elem(float *p, float *m, float *v, float grad,
                         const zb_adamw_k *k) {
    float g = grad * k->grad_scale;
    float mi = k->beta1 * *m + (1.0f - k->beta1) * g;
    float vi = k->beta2 * *v + (1.0f - k->beta2) * g * g;
    *m = mi;
    *v = vi;
    float mhat = mi / k->bc1, vhat = vi / k->bc2;
    *p -= k->lr * (mhat / (sqrtf(vhat) + k->eps) + k->weight_decay * *p);
}

#endif
