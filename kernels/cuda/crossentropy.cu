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
 *
 * The fused op (tp 1, zb_ce_fused's twin) makes the three row passes in
 * one kernel: pass 1 the row max, pass 2 the sum of exp(z - max) in double
 * and the target logit, hence the loss, pass 3 dlogits. Only pass 1 reads
 * the row from HBM; passes 2 and 3 find it in L2 because few rows are in
 * flight: the grid has no more blocks (of 1024 threads) than the device
 * has SMs, each block looping over rows n = blockIdx.x, + gridDim.x, ...
 * A GPT-2 row of 50304 floats is 197 KiB; 132 SMs (H100/H200 SXM) x 197
 * KiB = 25.3 MiB of the 50 MiB L2 (A100: 108 x 197 KiB = 20.7 MiB of
 * 40 MiB). HBM then moves
 * one read and one write of [N, V] where the pieces move three reads and
 * one write. Every row is reduced by one block in a fixed order (strided
 * per-thread sums, then the warps in order), whatever block runs it, so
 * results repeat bit for bit; the double sum matches the CPU to rounding
 * (the pieces' kernels use 256 threads, this one 1024: the two CUDA paths
 * agree to rounding, not bitwise).
 */
#include "kernels/cuda/act.cuh"
#include "kernels/cuda/kernels_cuda.h"
#include "kernels/cuda/reduce.cuh"

#define ZB_CE_THREADS 256
#define ZB_CE_FUSED_THREADS 1024

template <typename T>
__global__ static void ce_max(double *rowmax, const T *zl, int Vl, int ld) {
    const T *z = zl + (size_t)blockIdx.x * ld; /* [Vl] */
    float m = -INFINITY;
    for (int v = threadIdx.x; v < Vl; v += blockDim.x) m = fmaxf(m, zb_ld(z[v]));
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

template <typename T>
__global__ static void ce_stats(double *S, double *Zt, const T *zl,
                                const double *M, const int *targets, int v0,
                                int Vl, int ld) {
    const T *z = zl + (size_t)blockIdx.x * ld; /* [Vl] */
    float m = (float)M[blockIdx.x];
    double s = 0.0;
    for (int v = threadIdx.x; v < Vl; v += blockDim.x)
        s += expf(zb_ld(z[v]) - m);
    s = zb_block_reduce(s, 0.0, ZbWarpSumD());
    if (threadIdx.x != 0) return;
    S[blockIdx.x] = s;
    int k = targets[blockIdx.x] - v0;
    Zt[blockIdx.x] = k >= 0 && k < Vl ? (double)zb_ld(z[k]) : 0.0;
}

/* One block: thread t the rows t, t + blockDim, ...; the sum over the
 * block's fixed reduction tree (deterministic; within rounding of the
 * CPU's row order) */
__global__ static void ce_loss(double *acc, float *losses, const double *M,
                               const double *S, const double *Zt, int N) {
    double total = 0.0;
    for (int n = threadIdx.x; n < N; n += blockDim.x) {
        losses[n] = (float)(log(S[n]) + (double)(float)M[n] - Zt[n]);
        total += losses[n];
    }
    total = zb_block_reduce(total, 0.0, ZbWarpSumD());
    if (threadIdx.x == 0) *acc += total;
}

template <typename T>
__global__ static void ce_backward(T *dzl, const T *zl, const double *M,
                                   const double *S, const int *targets, int v0,
                                   float scale, int Vl, int ld) {
    const T *z = zl + (size_t)blockIdx.x * ld; /* [Vl] */
    T *dz = dzl + (size_t)blockIdx.x * ld;     /* [Vl] */
    float m = (float)M[blockIdx.x], inv = (float)(1.0 / S[blockIdx.x]);
    int k = targets[blockIdx.x] - v0;
    for (int v = threadIdx.x; v < Vl; v += blockDim.x) {
        float d = scale * (expf(zb_ld(z[v]) - m) * inv);
        dz[v] = zb_to<T>(v == k ? d - scale : d);
    }
}

/* one block per row at a time (rows blockIdx.x, + gridDim.x, ...); the
 * loop bound is the same for every thread of the block, so all of them
 * reach the block reductions */
template <typename T>
__global__ static void __launch_bounds__(ZB_CE_FUSED_THREADS)
    ce_fused(float *losses, T *dzl, const T *zl, const int *targets,
             float scale, int N, int V, int ld) {
    for (int n = blockIdx.x; n < N; n += gridDim.x) {
        const T *z = zl + (size_t)n * ld; /* [V] */
        T *dz = dzl + (size_t)n * ld;     /* [V] */
        float m = -INFINITY;
        for (int v = threadIdx.x; v < V; v += blockDim.x)
            m = fmaxf(m, zb_ld(z[v]));
        m = zb_block_reduce(m, -INFINITY, ZbWarpMax());
        double s = 0.0;
        for (int v = threadIdx.x; v < V; v += blockDim.x)
            s += expf(zb_ld(z[v]) - m);
        s = zb_block_reduce(s, 0.0, ZbWarpSumD());
        int k = targets[n];
        if (threadIdx.x == 0) {
            double zt = k >= 0 && k < V ? (double)zb_ld(z[k]) : 0.0;
            losses[n] = (float)(log(s) + (double)m - zt);
        }
        float inv = (float)(1.0 / s);
        for (int v = threadIdx.x; v < V; v += blockDim.x) {
            float d = scale * (expf(zb_ld(z[v]) - m) * inv);
            dz[v] = zb_to<T>(v == k ? d - scale : d);
        }
    }
}

/* *acc += the losses: one block, as ce_loss */
__global__ static void ce_loss_sum(double *acc, const float *losses, int N) {
    double total = 0.0;
    for (int n = threadIdx.x; n < N; n += blockDim.x) total += losses[n];
    total = zb_block_reduce(total, 0.0, ZbWarpSumD());
    if (threadIdx.x == 0) *acc += total;
}

template <typename T>
static cudaError_t max_of(double *rowmax, const T *zl, int N, int Vl, int ld,
                          cudaStream_t stream) {
    if (N <= 0) return cudaSuccess;
    ce_max<T><<<N, ZB_CE_THREADS, 0, stream>>>(rowmax, zl, Vl, ld);
    CUDA_CHECK(cudaGetLastError());
    return cudaSuccess;
}

extern "C" cudaError_t zb_cuda_ce_max(double *rowmax, const float *zl, int N,
                                      int Vl, int ld, cudaStream_t stream) {
    return max_of(rowmax, zl, N, Vl, ld, stream);
}

extern "C" cudaError_t zb_cuda_ce_max_combine(double *tab, int tp, int N,
                                              cudaStream_t stream) {
    if (N <= 0) return cudaSuccess;
    ce_max_combine<<<(N + 255) / 256, 256, 0, stream>>>(tab, tp, N);
    CUDA_CHECK(cudaGetLastError());
    return cudaSuccess;
}

template <typename T>
static cudaError_t stats(double *S, double *Zt, const T *zl, const double *M,
                         const int *targets, int v0, int N, int Vl, int ld,
                         cudaStream_t stream) {
    if (N <= 0) return cudaSuccess;
    ce_stats<T><<<N, ZB_CE_THREADS, 0, stream>>>(S, Zt, zl, M, targets, v0, Vl,
                                                 ld);
    CUDA_CHECK(cudaGetLastError());
    return cudaSuccess;
}

extern "C" cudaError_t zb_cuda_ce_stats(double *S, double *Zt, const float *zl,
                                        const double *M, const int *targets,
                                        int v0, int N, int Vl, int ld,
                                        cudaStream_t stream) {
    return stats(S, Zt, zl, M, targets, v0, N, Vl, ld, stream);
}

extern "C" cudaError_t zb_cuda_ce_loss(double *acc, float *losses,
                                       const double *M, const double *S,
                                       const double *Zt, int N,
                                       cudaStream_t stream) {
    if (N <= 0) return cudaSuccess;
    ce_loss<<<1, ZB_CE_THREADS, 0, stream>>>(acc, losses, M, S, Zt, N);
    CUDA_CHECK(cudaGetLastError());
    return cudaSuccess;
}

template <typename T>
static cudaError_t backward(T *dzl, const T *zl, const double *M,
                            const double *S, const int *targets, int v0,
                            float scale, int N, int Vl, int ld,
                            cudaStream_t stream) {
    if (N <= 0) return cudaSuccess;
    ce_backward<T><<<N, ZB_CE_THREADS, 0, stream>>>(dzl, zl, M, S, targets, v0,
                                                    scale, Vl, ld);
    CUDA_CHECK(cudaGetLastError());
    return cudaSuccess;
}

extern "C" cudaError_t zb_cuda_ce_backward(float *dzl, const float *zl,
                                           const double *M, const double *S,
                                           const int *targets, int v0,
                                           float scale, int N, int Vl, int ld,
                                           cudaStream_t stream) {
    return backward(dzl, zl, M, S, targets, v0, scale, N, Vl, ld, stream);
}

template <typename T>
static cudaError_t fused(double *acc, float *losses, T *dzl, const T *zl,
                         const int *targets, float scale, int N, int V, int ld,
                         cudaStream_t stream) {
    if (N <= 0) return cudaSuccess;
    int dev = 0, sms = 0;
    CUDA_CHECK(cudaGetDevice(&dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount,
                                      dev));
    int grid = sms > 0 && sms < N ? sms : N; /* no more blocks than SMs */
    ce_fused<T><<<grid, ZB_CE_FUSED_THREADS, 0, stream>>>(losses, dzl, zl,
                                                          targets, scale, N, V,
                                                          ld);
    CUDA_CHECK(cudaGetLastError());
    ce_loss_sum<<<1, ZB_CE_THREADS, 0, stream>>>(acc, losses, N);
    CUDA_CHECK(cudaGetLastError());
    return cudaSuccess;
}

extern "C" cudaError_t zb_cuda_ce_fused(double *acc, float *losses,
                                        float *dzl, const float *zl,
                                        const int *targets, float scale,
                                        int N, int V, int ld,
                                        cudaStream_t stream) {
    return fused(acc, losses, dzl, zl, targets, scale, N, V, ld, stream);
}

typedef const zb_bf16 *cbf;

extern "C" cudaError_t zb_cuda_ce_max_bf16(double *rowmax, const void *zl,
                                           int N, int Vl, int ld,
                                           cudaStream_t stream) {
    return max_of(rowmax, (cbf)zl, N, Vl, ld, stream);
}

extern "C" cudaError_t zb_cuda_ce_stats_bf16(double *S, double *Zt,
                                             const void *zl, const double *M,
                                             const int *targets, int v0, int N,
                                             int Vl, int ld,
                                             cudaStream_t stream) {
    return stats(S, Zt, (cbf)zl, M, targets, v0, N, Vl, ld, stream);
}

extern "C" cudaError_t zb_cuda_ce_backward_bf16(void *dzl, const void *zl,
                                                const double *M,
                                                const double *S,
                                                const int *targets, int v0,
                                                float scale, int N, int Vl,
                                                int ld, cudaStream_t stream) {
    return backward((zb_bf16 *)dzl, (cbf)zl, M, S, targets, v0, scale, N, Vl,
                    ld, stream);
}

extern "C" cudaError_t zb_cuda_ce_fused_bf16(double *acc, float *losses,
                                             void *dzl, const void *zl,
                                             const int *targets, float scale,
                                             int N, int V, int ld,
                                             cudaStream_t stream) {
    return fused(acc, losses, (zb_bf16 *)dzl, (cbf)zl, targets, scale, N, V,
                 ld, stream);
}
