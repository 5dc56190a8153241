/* gelu.h - GELU, tanh approximation (as GPT-2).
 *   inp, out, dout, dinp [N]. Backward accumulates (+=). */
#ifndef ZB_KERNELS_GELU_H
#define ZB_KERNELS_GELU_H

#include <stddef.h>

void zb_gelu_forward(float *out, const float *inp, size_t N);
void zb_gelu_backward(float *dinp, const float *inp, const float *dout,
                      size_t N);

#endif
