/* crossentropy.cu - the vocabulary-parallel cross-entropy pieces on the
 * GPU, twins of kernels/crossentropy.h's zb_ce_shard_* (same doubles, same
 * formulas; sums in a fixed order, so results repeat bit for bit, and
 * match the CPU to rounding).
 *   zl, dzl [N, Vl] logits of vocabulary rows [v0, v0 + Vl), row stride
 *   ld >= Vl (the columns past Vl are padding: never read or written);
 *   targets [N];
 *   rowmax, M, S, Zt [N] doubles; tab [tp, N]; losses [N]
 * One block per row for the row passes; the loss sum is one block adding
 * the rows in order.
 */
#include "kernels/cuda/kernels_cuda.h"
#include "kernels/cuda/reduce.cuh"

#define ZB_CE_THREADS 256

__global__ static void ce_max(double *rowmax, const float *zl, int Vl,
                              int ld) {
    const float *z = zl + (size_t)blockIdx.x * ld; /* [Vl] */
    float m = -INFINITY;
    for (int v = threadIdx.x; v < Vl; v += blockDim.x) m = fmaxf(m, z[v]);
    m = zb_block_reduce(m, -INFINITY, ZbWarpMax());
    if (threadIdx.x == 0) rowmax[blockIdx.x] = (double)m;
}

__global__ static void ce_max_combine(double *tab, int tp, int N) {
    int n = blockIdx.x * blockDim.x + threadIdx.x;
    if (n >= N) return;
    double m = tab[n];
    for (int k = 1; k < tp; k++) m = fmax(m, tab[(size_t)k * N + n]);
    tab[n] = m;
}

__global__ static void ce_stats(double *S, double *Zt, const float *zl,
                                const double *M, const int *targets, int v0,
                                int Vl, int ld) {
    const float *z = zl + (size_t)blockIdx.x * ld; /* [Vl] */
    float m = (float)M[blockIdx.x];
    double s = 0.0;
    for (int v = threadIdx.x; v < Vl; v += blockDim.x) s += expf(z[v] - m);
    s = zb_block_reduce(s, 0.0, ZbWarpSumD());
    if (threadIdx.x != 0) return;
    S[blockIdx.x] = s;
    int k = targets[blockIdx.x] - v0;
    Zt[blockIdx.x] = k >= 0 && k < Vl ? (double)z[k] : 0.0;
}

/* one thread: the rows in order, as the CPU */
__global__ static void ce_loss(double *acc, float *losses, const double *M,
                               const double *S, const double *Zt, int N) {
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    double total = 0.0;
    for (int n = 0; n < N; n++) {
        losses[n] = (float)(log(S[n]) + (double)(float)M[n] - Zt[n]);
        total += losses[n];
    }
    *acc += total;
}

__global__ static void ce_backward(float *dzl, const float *zl,
                                   const double *M, const double *S,
                                   const int *targets, int v0, float scale,
                                   int Vl, int ld) {
    const float *z = zl + (size_t)blockIdx.x * ld; /* [Vl] */
    float *dz = dzl + (size_t)blockIdx.x * ld;     /* [Vl] */
    float m = (float)M[blockIdx.x], inv = (float)(1.0 / S[blockIdx.x]);
    int k = targets[blockIdx.x] - v0;
    for (int v = threadIdx.x; v < Vl; v += blockDim.x) {
        float d = scale * (expf(z[v] - m) * inv);
        dz[v] = v == k ? d - scale : d;
    }
}

extern "C" cudaError_t zb_cuda_ce_max(double *rowmax, const float *zl, int N,
                                      int Vl, int ld, cudaStream_t stream) {
    if (N <= 0) return cudaSuccess;
    ce_max<<<N, ZB_CE_THREADS, 0, stream>>>(rowmax, zl, Vl, ld);
    CUDA_CHECK(cudaGetLastError());
    return cudaSuccess;
}

extern "C" cudaError_t zb_cuda_ce_max_combine(double *tab, int tp, int N,
                                              cudaStream_t stream) {
    if (N <= 0) return cudaSuccess;
    ce_max_combine<<<(N + 255) / 256, 256, 0, stream>>>(tab, tp, N);
    CUDA_CHECK(cudaGetLastError());
    return cudaSuccess;
}

extern "C" cudaError_t zb_cuda_ce_stats(double *S, double *Zt, const float *zl,
                                        const double *M, const int *targets,
                                        int v0, int N, int Vl, int ld,
                                        cudaStream_t stream) {
    if (N <= 0) return cudaSuccess;
    ce_stats<<<N, ZB_CE_THREADS, 0, stream>>>(S, Zt, zl, M, targets, v0, Vl,
                                              ld);
    CUDA_CHECK(cudaGetLastError());
    return cudaSuccess;
}

extern "C" cudaError_t zb_cuda_ce_loss(double *acc, float *losses,
                                       const double *M, const double *S,
                                       const double *Zt, int N,
                                       cudaStream_t stream) {
    if (N <= 0) return cudaSuccess;
    ce_loss<<<1, 32, 0, stream>>>(acc, losses, M, S, Zt, N);
    CUDA_CHECK(cudaGetLastError());
    return cudaSuccess;
}

extern "C" cudaError_t zb_cuda_ce_backward(float *dzl, const float *zl,
                                           const double *M, const double *S,
                                           const int *targets, int v0,
                                           float scale, int N, int Vl, int ld,
                                           cudaStream_t stream) {
    if (N <= 0) return cudaSuccess;
    ce_backward<<<N, ZB_CE_THREADS, 0, stream>>>(dzl, zl, M, S, targets, v0,
                                                 scale, Vl, ld);
    CUDA_CHECK(cudaGetLastError());
    return cudaSuccess;
}
