/* vocab_cuda.h - CUDA twins of kernels/vocab_out.h (vocab_out.cu): the
 * statistics combine over vocabulary shards and the one-barrier input
 * gradient. Shapes and semantics are the CPU header's; all pointers are
 * device pointers; each wrapper only enqueues work on `stream` and returns
 * the launch status (CUDA_CHECK, kernels_cuda.h). Every output element
 * has one owner thread that visits the shards in index order, the CPU's
 * arithmetic: the combine gives the CPU's bits where the device's exp
 * rounds as the host's (both within an ulp). The _bf16 entry takes
 * __nv_bfloat16 activations (void *; act.cuh). */
#ifndef ZB_KERNELS_CUDA_VOCAB_H
#define ZB_KERNELS_CUDA_VOCAB_H

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* out [3, N] = (M, S, Zt) of tab [p, 3, N] */
cudaError_t zb_cuda_vocab_combine(double *out, const double *tab, int p,
                                  int N, cudaStream_t stream);
/* P[n, :Vl] = exp(zl[n, :Vl] - (float)m[n]); row stride ld */
cudaError_t zb_cuda_vocab_exp(float *P, const float *zl, const double *m,
                              int N, int Vl, int ld, cudaStream_t stream);
cudaError_t zb_cuda_vocab_exp_bf16(void *P, const void *zl, const double *m,
                                   int N, int Vl, int ld, cudaStream_t stream);
/* dx [N, C] = scale (exp(m - M) / S  A - G); MS [3, N] */
cudaError_t zb_cuda_vocab_dx(float *dx, const float *A, const float *G,
                             const double *m, const double *MS, float scale,
                             int N, int C, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
