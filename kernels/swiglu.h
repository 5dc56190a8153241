/* swiglu.h - the SwiGLU gate of a Llama MLP (Shazeer 2020):
 *   out = silu(a) * b, where a = x W1^T and b = x W3^T are the two up
 *   projections; the down projection W2 follows (a GEMM, not here).
 *   ab, dab [N, 2F]: per row a (F columns) then b (F columns), the layout
 *       of one GEMM with W1 and W3 stacked ([2F, C]), and under tensor
 *       parallelism of each rank's column shards of both (F local)
 *   out, dout [N, F]
 * Forward writes out (=); backward accumulates into dab (+=). No W part
 * (the gate has no weights). The _ref functions are plain loops with
 * libm's expf, what the fast ones (OpenMP over rows, vector loops with
 * zb_fast_expf, shared with the CUDA twin) are tested against. */
#ifndef ZB_KERNELS_SWIGLU_H
#define ZB_KERNELS_SWIGLU_H

void zb_swiglu_forward(float *out, const float *ab, int N, int F);
void zb_swiglu_backward(float *dab, const float *ab, const float *dout, int N,
                        int F);

void zb_swiglu_forward_ref(float *out, const float *ab, int N, int F);
void zb_swiglu_backward_ref(float *dab, const float *ab, const float *dout,
                            int N, int F);

#endif
