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
#include "kernels/cuda/act.cuh"
#include "kernels/cuda/kernels_cuda.h"
#include "kernels/cuda/reduce.cuh"

#define ZB_SM_WARPS 8 /* rows per block */

template <typename T_>
__global__ static void softmax_causal(T_ *att, int T, size_t rows) {
    size_t r = blockIdx.x * (size_t)ZB_SM_WARPS + threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    if (r >= rows) return; /* the whole warp leaves together */
    int t = (int)(r % T);
    T_ *row = att + r * T; /* [T] */
    float m = -INFINITY;
    for (int j = lane; j <= t; j += 32) m = fmaxf(m, zb_ld(row[j]));
    m = zb_warp_max(m);
    float s = 0.0f;
    for (int j = lane; j <= t; j += 32) s += expf(zb_ld(row[j]) - m);
    s = zb_warp_sum(s);
    float inv = 1.0f / s; /* s >= 1: the max term is exp(0) */
    for (int j = lane; j < T; j += 32)
        row[j] = zb_to<T_>(j <= t ? expf(zb_ld(row[j]) - m) * inv : 0.0f);
}

template <typename T_>
__global__ static void softmax_causal_backward(T_ *ds, const T_ *att, int T,
                                               size_t rows) {
    size_t r = blockIdx.x * (size_t)ZB_SM_WARPS + threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    if (r >= rows) return;
    int t = (int)(r % T);
    T_ *dr = ds + r * T;                /* [T] dP in, dS out */
    const T_ *pr = att + r * T;         /* [T] */
    float pda = 0.0f;
    for (int j = lane; j <= t; j += 32) pda += zb_ld(pr[j]) * zb_ld(dr[j]);
    pda = zb_warp_sum(pda);
    for (int j = lane; j < T; j += 32)
        dr[j] = zb_to<T_>(j <= t ? zb_ld(pr[j]) * (zb_ld(dr[j]) - pda) : 0.0f);
}

static unsigned row_blocks(size_t rows) {
    return (unsigned)((rows + ZB_SM_WARPS - 1) / ZB_SM_WARPS);
}

template <typename T_>
static cudaError_t softmax(T_ *att, int T, size_t nmat, cudaStream_t stream) {
    size_t rows = nmat * (size_t)T;
    if (rows == 0) return cudaSuccess;
    softmax_causal<T_><<<row_blocks(rows), 32 * ZB_SM_WARPS, 0, stream>>>(
        att, T, rows);
    CUDA_CHECK(cudaGetLastError());
    return cudaSuccess;
}

template <typename T_>
static cudaError_t softmax_bwd(T_ *ds, const T_ *att, int T, size_t nmat,
                               cudaStream_t stream) {
    size_t rows = nmat * (size_t)T;
    if (rows == 0) return cudaSuccess;
    softmax_causal_backward<T_>
        <<<row_blocks(rows), 32 * ZB_SM_WARPS, 0, stream>>>(ds, att, T, rows);
    CUDA_CHECK(cudaGetLastError());
    return cudaSuccess;
}

extern "C" cudaError_t zb_cuda_attn_softmax_causal(float *att, int T,
                                                   size_t nmat,
                                                   cudaStream_t stream) {
    return softmax(att, T, nmat, stream);
}

extern "C" cudaError_t zb_cuda_attn_softmax_causal_backward(
    float *ds, const float *att, int T, size_t nmat, cudaStream_t stream) {
    return softmax_bwd(ds, att, T, nmat, stream);
}

extern "C" cudaError_t zb_cuda_attn_softmax_causal_bf16(void *att, int T,
                                                        size_t nmat,
                                                        cudaStream_t stream) {
    return softmax((zb_bf16 *)att, T, nmat, stream);
}

extern "C" cudaError_t zb_cuda_attn_softmax_causal_backward_bf16(
    void *ds, const void *att, int T, size_t nmat, cudaStream_t stream) {
    return softmax_bwd((zb_bf16 *)ds, (const zb_bf16 *)att, T, nmat, stream);
}
