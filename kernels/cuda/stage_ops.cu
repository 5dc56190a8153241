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
#define ZB_SUM_BLOCKS 512   /* fixed: the partials' order never changes */

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

template <bool square> __device__ inline double sum_term(float v) {
    return square ? (double)v * v : (double)v;
}

/* partial[block] = sum over the block's grid-stride elements of f(x).
 * Four loads in flight per thread (four independent grid strides, four
 * accumulators); the order depends only on n and the fixed grid, so the
 * result repeats bit for bit. */
template <bool square>
__global__ static void sum_partial(double *partial, const float *x, size_t n) {
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
    size_t st = (size_t)gridDim.x * blockDim.x;
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    for (; i + 3 * st < n; i += 4 * st) {
        float a = x[i], b = x[i + st], c = x[i + 2 * st], d = x[i + 3 * st];
        s0 += sum_term<square>(a);
        s1 += sum_term<square>(b);
        s2 += sum_term<square>(c);
        s3 += sum_term<square>(d);
    }
    for (; i < n; i += st) s0 += sum_term<square>(x[i]);
    double s = zb_block_reduce((s0 + s1) + (s2 + s3), 0.0, ZbWarpSumD());
    if (threadIdx.x == 0) partial[blockIdx.x] = s;
}

/* *acc += sum of partial[0..n): one block, each thread a fixed stride of
 * the partials, then the block's fixed reduction tree */
__global__ static void sum_final(double *acc, const double *partial, int n) {
    double s = 0.0;
    for (int i = threadIdx.x; i < n; i += blockDim.x) s += partial[i];
    s = zb_block_reduce(s, 0.0, ZbWarpSumD());
    if (threadIdx.x == 0) *acc += s;
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
    sum_final<<<1, ZB_SUM_THREADS, 0, stream>>>(acc, scratch, ZB_SUM_BLOCKS);
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
