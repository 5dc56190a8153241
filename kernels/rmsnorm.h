/* rmsnorm.h - RMSNorm over the last dimension (Llama), eps = 1e-5.
 *   inp, out, dout, dinp [N, C]; weight, dweight [C]; rstd [N] (saved for
 *   the backward: 1 / sqrt(mean(x^2) + eps))
 * No mean is subtracted and there is no bias. B and W are separate (W
 * needs dout and the normalised input). Backward outputs accumulate (+=).
 * The _ref functions are plain single-threaded loops written from the
 * formulas (sums in double), what the fast ones (OpenMP over rows,
 * thread-owned column blocks in W, float per-element arithmetic shared
 * with the CUDA twin) are tested against: equal to float rounding. */
#ifndef ZB_KERNELS_RMSNORM_H
#define ZB_KERNELS_RMSNORM_H

void zb_rmsnorm_forward(float *out, float *rstd, const float *inp,
                        const float *weight, int N, int C);
/* B: dinp += d(loss)/d(inp) */
void zb_rmsnorm_backward_input(float *dinp, const float *dout,
                               const float *inp, const float *weight,
                               const float *rstd, int N, int C);
/* W: dweight += sum_n dout * xhat */
void zb_rmsnorm_backward_weight(float *dweight, const float *dout,
                                const float *inp, const float *rstd, int N,
                                int C);

void zb_rmsnorm_forward_ref(float *out, float *rstd, const float *inp,
                            const float *weight, int N, int C);
void zb_rmsnorm_backward_input_ref(float *dinp, const float *dout,
                                   const float *inp, const float *weight,
                                   const float *rstd, int N, int C);
void zb_rmsnorm_backward_weight_ref(float *dweight, const float *dout,
                                    const float *inp, const float *rstd,
                                    int N, int C);

#endif
