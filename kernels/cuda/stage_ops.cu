/* stage_ops.cu - small kernels the CUDA stage needs beside the layer
 * kernels: the residual add, sums for the loss and the gradient norm.
 * Twins: residual add of executor/stage/ops_cpu.c, zb_sumsq (kernels/adamw.c),
 * the loss sum of zb_crossentropy_forward. Sums use double and one fixed
 * order (fixed grid, per-block partials added in block order by one
 * block), so they repeat bit for bit.
 */
#include "kernels/cuda/kernels_cuda.h"
#include "kernels/cuda/reduce.cuh"

#define ZB_SUM_THREADS 256
#define ZB_SUM_BLOCKS 128   /* fixed: the partials' order never changes */

/* out[n, c] = x[n, c] + (part[n, c] + bias[c]) */
__global__ static void residual_add(float *out, const float *x,
                                    const float *part, const float *bias,
                                    int N, int C) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < (size_t)N * C) out[i] = x[i] + (part[i] + bias[i % C]);
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

extern "C" cudaError_t zb_cuda_residual_add(float *out, const float *x,
                                            const float *part,
                                            const float *bias, int N, int C,
                                            cudaStream_t stream) {
    size_t n = (size_t)N * C;
    if (n == 0) return cudaSuccess;
    residual_add<<<(unsigned)((n + 255) / 256), 256, 0, stream>>>(out, x, part,
                                                                  bias, N, C);
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
