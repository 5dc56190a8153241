/* attn_softmax.cu - the softmax pieces of the GEMM attention (the CUDA ops'
 * attention in precision bf16: QK^T and PV are cuBLAS batched GEMMs on the
 * tensor cores around these), twins of kernels/attention.h's
 * zb_attn_softmax_causal and zb_attn_softmax_causal_backward.
 *   att, ds [nmat, T, T] in place; row t of each matrix sees columns 0..t
 *   (causal), the rest is written 0.
 * One warp per row; sums in float over the warp's lanes then a warp
 * reduction (fixed order: results repeat bit for bit, and match the CPU's
 * serial sums to rounding).
 */
#include "kernels/cuda/kernels_cuda.h"
#include "kernels/cuda/reduce.cuh"

#define ZB_SM_WARPS 8 /* rows per block */

__global__ static void softmax_causal(float *att, int T, size_t rows) {
    size_t r = blockIdx.x * (size_t)ZB_SM_WARPS + threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    if (r >= rows) return; /* the whole warp leaves together */
    int t = (int)(r % T);
    float *row = att + r * T; /* [T] */
    float m = -INFINITY;
    for (int j = lane; j <= t; j += 32) m = fmaxf(m, row[j]);
    m = zb_warp_max(m);
    float s = 0.0f;
    for (int j = lane; j <= t; j += 32) s += expf(row[j] - m);
    s = zb_warp_sum(s);
    float inv = 1.0f / s; /* s >= 1: the max term is exp(0) */
    for (int j = lane; j < T; j += 32)
        row[j] = j <= t ? expf(row[j] - m) * inv : 0.0f;
}

__global__ static void softmax_causal_backward(float *ds, const float *att,
                                               int T, size_t rows) {
    size_t r = blockIdx.x * (size_t)ZB_SM_WARPS + threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    if (r >= rows) return;
    int t = (int)(r % T);
    float *dr = ds + r * T;             /* [T] dP in, dS out */
    const float *pr = att + r * T;      /* [T] */
    float pda = 0.0f;
    for (int j = lane; j <= t; j += 32) pda += pr[j] * dr[j];
    pda = zb_warp_sum(pda);
    for (int j = lane; j < T; j += 32)
        dr[j] = j <= t ? pr[j] * (dr[j] - pda) : 0.0f;
}

static unsigned row_blocks(size_t rows) {
    return (unsigned)((rows + ZB_SM_WARPS - 1) / ZB_SM_WARPS);
}

extern "C" cudaError_t zb_cuda_attn_softmax_causal(float *att, int T,
                                                   size_t nmat,
                                                   cudaStream_t stream) {
    size_t rows = nmat * (size_t)T;
    if (rows == 0) return cudaSuccess;
    softmax_causal<<<row_blocks(rows), 32 * ZB_SM_WARPS, 0, stream>>>(att, T,
                                                                      rows);
    CUDA_CHECK(cudaGetLastError());
    return cudaSuccess;
}

extern "C" cudaError_t zb_cuda_attn_softmax_causal_backward(
    float *ds, const float *att, int T, size_t nmat, cudaStream_t stream) {
    size_t rows = nmat * (size_t)T;
    if (rows == 0) return cudaSuccess;
    softmax_causal_backward<<<row_blocks(rows), 32 * ZB_SM_WARPS, 0, stream>>>(
        ds, att, T, rows);
    CUDA_CHECK(cudaGetLastError());
    return cudaSuccess;
}
