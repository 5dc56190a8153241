/* matmul.h - linear layer on the CPU through OpenBLAS (cblas_sgemm).
 * Row-major. The backward is split the zero-bubble way: B (input gradient)
 * and W (weight gradient) are separate calls. Backward outputs accumulate
 * (+=) so that callers can sum over residual branches and microbatches.
 *   inp [N, C], weight [OC, C], bias [OC] (may be NULL), out [N, OC]
 */
#ifndef ZB_KERNELS_MATMUL_H
#define ZB_KERNELS_MATMUL_H

#include <stdbool.h>

/* out = inp @ weight^T + bias */
void zb_matmul_forward(float *out, const float *inp, const float *weight,
                       const float *bias, int N, int C, int OC);
/* B: dinp[N, C] += dout[N, OC] @ weight[OC, C] */
void zb_matmul_backward_input(float *dinp, const float *dout,
                              const float *weight, int N, int C, int OC);
/* W: dweight[OC, C] += dout^T @ inp; dbias[OC] += column sums of dout
 * (dbias may be NULL) */
void zb_matmul_backward_weight(float *dweight, float *dbias, const float *dout,
                               const float *inp, int N, int C, int OC);

/* The GEMM under the three above: C[M, N] = alpha op(A)[M, K] op(B)[K, N]
 * + beta C, row-major, op(A) = A^T when ta (A stored [K, M]), leading
 * dimensions lda/ldb/ldc. Cut into blocks of rows of C that depend on the
 * shape only, so results repeat bit for bit for any thread count. */
void zb_sgemm_blocked(bool ta, bool tb, int M, int N, int K, float alpha,
                      const float *A, int lda, const float *B, int ldb,
                      float beta, float *C, int ldc);
/* dbias[OC] += column sums of dout[N, OC], each summed in row order */
void zb_colsum_add(float *dbias, const float *dout, int N, int OC);
/* Plain loops, the reference the BLAS path is tested against. */
void zb_matmul_forward_ref(float *out, const float *inp, const float *weight,
                           const float *bias, int N, int C, int OC);

#endif
