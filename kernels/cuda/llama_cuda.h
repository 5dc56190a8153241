/* llama_cuda.h - CUDA twins of the Llama-shaped CPU kernels:
 * kernels/rmsnorm.h (rmsnorm.cu), kernels/swiglu.h (swiglu.cu),
 * kernels/rope.h (rope.cu). Shapes and semantics are the CPU headers':
 * += where the CPU kernel accumulates, = where it writes, RoPE in place.
 * All pointers are device pointers; each wrapper only enqueues work on
 * `stream` and returns the launch status (CUDA_CHECK, kernels_cuda.h); it
 * never synchronises, prints or exits. Every output element has one owner
 * and a fixed summation order: results repeat bit for bit. The per-element
 * arithmetic is the CPU's (kernels/NAME_math.h); row statistics are summed in
 * float (the CPU: double), so results match the CPU to rounding.
 * The _bf16 entries take __nv_bfloat16 activation arrays (void *; act.cuh):
 * loads widen to fp32, every store rounds to nearest even; weights,
 * statistics and weight gradients stay fp32.
 * GQA attention needs no kernel of its own: the CUDA op table runs it as
 * cuBLAS GEMMs around kernels/cuda/attn_softmax.cu (ops_cuda.cu). */
#ifndef ZB_KERNELS_CUDA_LLAMA_H
#define ZB_KERNELS_CUDA_LLAMA_H

#include <cuda_runtime_api.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* RMSNorm: inp, out, dout, dinp [N, C]; weight, dweight [C]; rstd [N].
 * W over the full grid like the LayerNorm W: scratch of
 * zb_cuda_wgrad_scratch_floats(N, C) floats (kernels_cuda.h; RMSNorm uses
 * half of it), free again when the work enqueued after the call runs. */
cudaError_t zb_cuda_rmsnorm_forward(float *out, float *rstd, const float *inp,
                                    const float *weight, int N, int C,
                                    cudaStream_t stream);
cudaError_t zb_cuda_rmsnorm_backward_input(float *dinp, const float *dout,
                                           const float *inp,
                                           const float *weight,
                                           const float *rstd, int N, int C,
                                           cudaStream_t stream);
cudaError_t zb_cuda_rmsnorm_backward_weight(float *dweight, const float *dout,
                                            const float *inp,
                                            const float *rstd, int N, int C,
                                            float *scratch,
                                            cudaStream_t stream);

/* SwiGLU gate: ab, dab [N, 2F] (a | b per row); out, dout [N, F] */
cudaError_t zb_cuda_swiglu_forward(float *out, const float *ab, int N, int F,
                                   cudaStream_t stream);
cudaError_t zb_cuda_swiglu_backward(float *dab, const float *ab,
                                    const float *dout, int N, int F,
                                    cudaStream_t stream);

/* RoPE in place: x [B, T, ld], the first H heads of hs channels turn */
cudaError_t zb_cuda_rope_forward(float *x, int B, int T, int H, int hs,
                                 int ld, float theta, cudaStream_t stream);
cudaError_t zb_cuda_rope_backward(float *dx, int B, int T, int H, int hs,
                                  int ld, float theta, cudaStream_t stream);

/* ---- bf16 activation storage ---- */
cudaError_t zb_cuda_rmsnorm_forward_bf16(void *out, float *rstd,
                                         const void *inp, const float *weight,
                                         int N, int C, cudaStream_t stream);
cudaError_t zb_cuda_rmsnorm_backward_input_bf16(void *dinp, const void *dout,
                                                const void *inp,
                                                const float *weight,
                                                const float *rstd, int N,
                                                int C, cudaStream_t stream);
cudaError_t zb_cuda_rmsnorm_backward_weight_bf16(float *dweight,
                                                 const void *dout,
                                                 const void *inp,
                                                 const float *rstd, int N,
                                                 int C, float *scratch,
                                                 cudaStream_t stream);
cudaError_t zb_cuda_swiglu_forward_bf16(void *out, const void *ab, int N,
                                        int F, cudaStream_t stream);
cudaError_t zb_cuda_swiglu_backward_bf16(void *dab, const void *ab,
                                         const void *dout, int N, int F,
                                         cudaStream_t stream);
cudaError_t zb_cuda_rope_forward_bf16(void *x, int B, int T, int H, int hs,
                                      int ld, float theta,
                                      cudaStream_t stream);
cudaError_t zb_cuda_rope_backward_bf16(void *dx, int B, int T, int H, int hs,
                                       int ld, float theta,
                                       cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
