/* stage_ops.cu - small kernels the CUDA stage needs beside the layer
 * kernels: the residual add, sums for the loss and the gradient norm.
 * Twins: residual add of executor/stage/ops_cpu.c, zb_sumsq (kernels/adamw.c),
 * the loss sum of zb_crossentropy_forward. Sums use double and one fixed
 * order (fixed grid, per-block partials added in block order by one
 * block), so they repeat bit for bit.
 */
#include "kernels/cuda/act.cuh"
#include "kernels/cuda/kernels_cuda.h"
#include "kernels/cuda/reduce.cuh"

#define ZB_SUM_THREADS 256
#define ZB_SUM_BLOCKS 128   /* fixed: the partials' order never changes */

/* out[n, c] = x[n, c] + (part[n, c] + bias[c]) */
template <typename T>
__global__ static void residual_add(T *out, const T *x, const float *part,
                                    const float *bias, int N, int C) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < (size_t)N * C)
        out[i] = zb_to<T>(zb_ld(x[i]) + (part[i] + bias[i % C]));
}

/* dst[i] = src[i] rounded to bf16 */
__global__ static void cast_bf16(zb_bf16 *dst, const float *src, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        dst[i] = __float2bfloat16_rn(src[i]);
}

/* partial[block] = sum over the block's grid-stride elements of f(x) */
template <bool square>
__global__ static void sum_partial(double *partial, const float *x, size_t n) {
    double s = 0.0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        s += square ? (double)x[i] * x[i] : (double)x[i];
    s = zb_block_reduce(s, 0.0, ZbWarpSumD());
    if (threadIdx.x == 0) partial[blockIdx.x] = s;
}

/* *acc += sum of partial[0..n) in order (one thread) */
__global__ static void sum_final(double *acc, const double *partial, int n) {
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    double s = 0.0;
    for (int i = 0; i < n; i++) s += partial[i];
    *acc += s;
}

template <typename T>
static cudaError_t residual(T *out, const T *x, const float *part,
                            const float *bias, int N, int C,
                            cudaStream_t stream) {
    size_t n = (size_t)N * C;
    if (n == 0) return cudaSuccess;
    residual_add<T><<<(unsigned)((n + 255) / 256), 256, 0, stream>>>(
        out, x, part, bias, N, C);
    CUDA_CHECK(cudaGetLastError());
    return cudaSuccess;
}

extern "C" cudaError_t zb_cuda_residual_add(float *out, const float *x,
                                            const float *part,
                                            const float *bias, int N, int C,
                                            cudaStream_t stream) {
    return residual(out, x, part, bias, N, C, stream);
}

extern "C" cudaError_t zb_cuda_residual_add_bf16(void *out, const void *x,
                                                 const float *part,
                                                 const float *bias, int N,
                                                 int C, cudaStream_t stream) {
    return residual((zb_bf16 *)out, (const zb_bf16 *)x, part, bias, N, C,
                    stream);
}

extern "C" cudaError_t zb_cuda_cast_bf16(void *dst, const float *src, size_t n,
                                         cudaStream_t stream) {
    if (n == 0) return cudaSuccess;
    size_t b = (n + 255) / 256;
    cast_bf16<<<(unsigned)(b < 4096 ? b : 4096), 256, 0, stream>>>(
        (zb_bf16 *)dst, src, n);
    CUDA_CHECK(cudaGetLastError());
    return cudaSuccess;
}

extern "C" size_t zb_cuda_sum_scratch_doubles(void) { return ZB_SUM_BLOCKS; }

static cudaError_t sum_into(double *acc, double *scratch, const float *x,
                            size_t n, bool square, cudaStream_t stream) {
    if (n == 0) return cudaSuccess;
    if (square)
        sum_partial<true><<<ZB_SUM_BLOCKS, ZB_SUM_THREADS, 0, stream>>>(scratch, x, n);
    else
        sum_partial<false><<<ZB_SUM_BLOCKS, ZB_SUM_THREADS, 0, stream>>>(scratch, x, n);
    CUDA_CHECK(cudaGetLastError());
    sum_final<<<1, 32, 0, stream>>>(acc, scratch, ZB_SUM_BLOCKS);
    CUDA_CHECK(cudaGetLastError());
    return cudaSuccess;
}

extern "C" cudaError_t zb_cuda_sumsq_add(double *acc, double *scratch,
                                         const float *x, size_t n,
                                         cudaStream_t stream) {
    return sum_into(acc, scratch, x, n, true, stream);
}

extern "C" cudaError_t zb_cuda_sum_add(double *acc, double *scratch,
                                       const float *x, size_t n,
                                       cudaStream_t stream) {
    return sum_into(acc, scratch, x, n, false, stream);
}
