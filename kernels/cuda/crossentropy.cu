/* crossentropy.cu - softmax cross-entropy on the GPU, twin of
 * kernels/crossentropy.c.
 *   logits, dlogits [N, V]; targets [N]; losses [N]
 * One block per row: block max, then the sum of exp(z - max) in double,
 * as on the CPU. The forward writes row losses only.
 */
#include "kernels/cuda/kernels_cuda.h"
#include "kernels/cuda/reduce.cuh"

#define ZB_CE_THREADS 256

/* Row max and sum_v exp(z_v - max), known to every thread of the block. */
__device__ static void row_stats(const float *z, int V, float *maxv,
                                 double *sumexp) {
    float m = -INFINITY;
    for (int v = threadIdx.x; v < V; v += blockDim.x) m = fmaxf(m, z[v]);
    m = zb_block_reduce(m, -INFINITY, ZbWarpMax());
    double s = 0.0;
    for (int v = threadIdx.x; v < V; v += blockDim.x) s += expf(z[v] - m);
    *sumexp = zb_block_reduce(s, 0.0, ZbWarpSumD());
    *maxv = m;
}

__global__ static void ce_forward(float *losses, const float *logits,
                                  const int *targets, int V) {
    const float *z = logits + (size_t)blockIdx.x * V; /* [V] */
    float m;
    double s;
    row_stats(z, V, &m, &s);
    if (threadIdx.x == 0)
        losses[blockIdx.x] =
            (float)(log(s) + (double)m - (double)z[targets[blockIdx.x]]);
}

__global__ static void ce_backward(float *dlogits, const float *logits,
                                   const int *targets, float scale, int V) {
    const float *z = logits + (size_t)blockIdx.x * V; /* [V] */
    float *dz = dlogits + (size_t)blockIdx.x * V;     /* [V] */
    int target = targets[blockIdx.x];
    float m;
    double s;
    row_stats(z, V, &m, &s);
    float inv = (float)(1.0 / s);
    for (int v = threadIdx.x; v < V; v += blockDim.x) {
        float d = scale * (expf(z[v] - m) * inv);
        dz[v] = v == target ? d - scale : d;
    }
}

extern "C" cudaError_t zb_cuda_crossentropy_forward(float *losses,
                                                    const float *logits,
                                                    const int *targets, int N,
                                                    int V,
                                                    cudaStream_t stream) {
    if (N <= 0) return cudaSuccess;
    ce_forward<<<N, ZB_CE_THREADS, 0, stream>>>(losses, logits, targets, V);
    CUDA_CHECK(cudaGetLastError());
    return cudaSuccess;
}

extern "C" cudaError_t zb_cuda_crossentropy_backward(
    float *dlogits, const float *logits, const int *targets, float scale,
    int N, int V, cudaStream_t stream) {
    if (N <= 0) return cudaSuccess;
    ce_backward<<<N, ZB_CE_THREADS, 0, stream>>>(dlogits, logits, targets,
                                                 scale, V);
    CUDA_CHECK(cudaGetLastError());
    return cudaSuccess;
}
