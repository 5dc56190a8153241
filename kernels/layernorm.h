/* layernorm.h - LayerNorm over the last dimension, eps = 1e-5.
 *   inp, out [N, C]; weight, bias [C]; mean, rstd [N] (saved for backward)
 * B and W are separate (W needs dout and the normalised input).
 * Backward outputs accumulate (+=). */
#ifndef ZB_KERNELS_LAYERNORM_H
#define ZB_KERNELS_LAYERNORM_H

void zb_layernorm_forward(float *out, float *mean, float *rstd,
                          const float *inp, const float *weight,
                          const float *bias, int N, int C);
/* B: dinp += d(loss)/d(inp) */
void zb_layernorm_backward_input(float *dinp, const float *dout,
                                 const float *inp, const float *weight,
                                 const float *mean, const float *rstd, int N,
                                 int C);
/* W: dweight += sum_n dout * xhat; dbias += sum_n dout */
void zb_layernorm_backward_weight(float *dweight, float *dbias,
                                  const float *dout, const float *inp,
                                  const float *mean, const float *rstd, int N,
                                  int C);

#endif
