/* vocab_out.cu - twins of kernels/vocab_out.c (vocab_cuda.h says what each
 * computes): one thread per row for the combine (shards in index order,
 * as the CPU), one block per row for the elementwise passes.
 *   tab [p, 3, N]; out, MS [3, N]; zl, P [N, ld]; A, G, dx [N, C]
 */
#include "kernels/cuda/act.cuh"
#include "kernels/cuda/kernels_cuda.h"
#include "kernels/cuda/vocab_cuda.h"

#define ZB_VOCAB_THREADS 256

__global__ static void vocab_combine(double *out, const double *tab, int p,
                                     int N) {
    int n = blockIdx.x * blockDim.x + threadIdx.x;
    if (n >= N) return;
    size_t stride = 3 * (size_t)N;
    double M = -INFINITY, S = 0.0, Zt = 0.0;
    for (int k = 0; k < p; k++) M = fmax(M, tab[k * stride + n]);
    for (int k = 0; k < p; k++) {
        const double *st = tab + k * stride; /* m, s, zt of shard k */
        if (st[n] != -INFINITY) S += st[N + n] * exp(st[n] - M);
        Zt += st[2 * (size_t)N + n];
    }
    out[n] = M;
    out[N + n] = S;
    out[2 * (size_t)N + n] = Zt;
}

template <typename T>
__global__ static void vocab_exp(T *P, const T *zl, const double *m, int Vl,
                                 int ld) {
    const T *z = zl + (size_t)blockIdx.x * ld; /* [Vl] */
    T *e = P + (size_t)blockIdx.x * ld;        /* [Vl] */
    float mf = (float)m[blockIdx.x];
    for (int v = threadIdx.x; v < Vl; v += blockDim.x)
        e[v] = zb_to<T>(expf(zb_ld(z[v]) - mf));
}

__global__ static void vocab_dx(float *dx, const float *A, const float *G,
                                const double *m, const double *MS,
                                float scale, int N, int C) {
    int n = blockIdx.x;
    double mn = m[n];
    float c = mn == -INFINITY ? 0.0f
                              : (float)(exp(mn - MS[n]) / MS[N + n]);
    const float *a = A + (size_t)n * C, *g = G + (size_t)n * C; /* [C] */
    float *d = dx + (size_t)n * C;                              /* [C] */
    for (int i = threadIdx.x; i < C; i += blockDim.x)
        d[i] = scale * (c * a[i] - g[i]);
}

extern "C" cudaError_t zb_cuda_vocab_combine(double *out, const double *tab,
                                             int p, int N,
                                             cudaStream_t stream) {
    if (N <= 0) return cudaSuccess;
    vocab_combine<<<(N + ZB_VOCAB_THREADS - 1) / ZB_VOCAB_THREADS,
                    ZB_VOCAB_THREADS, 0, stream>>>(out, tab, p, N);
    CUDA_CHECK(cudaGetLastError());
    return cudaSuccess;
}

template <typename T>
static cudaError_t exp_of(T *P, const T *zl, const double *m, int N, int Vl,
                          int ld, cudaStream_t stream) {
    if (N <= 0 || Vl <= 0) return cudaSuccess;
    vocab_exp<T><<<N, ZB_VOCAB_THREADS, 0, stream>>>(P, zl, m, Vl, ld);
    CUDA_CHECK(cudaGetLastError());
    return cudaSuccess;
}

extern "C" cudaError_t zb_cuda_vocab_exp(float *P, const float *zl,
                                         const double *m, int N, int Vl,
                                         int ld, cudaStream_t stream) {
    return exp_of(P, zl, m, N, Vl, ld, stream);
}

extern "C" cudaError_t zb_cuda_vocab_exp_bf16(void *P, const void *zl,
                                              const double *m, int N, int Vl,
                                              int ld, cudaStream_t stream) {
    return exp_of((zb_bf16 *)P, (const zb_bf16 *)zl, m, N, Vl, ld, stream);
}

extern "C" cudaError_t zb_cuda_vocab_dx(float *dx, const float *A,
                                        const float *G, const double *m,
                                        const double *MS, float scale, int N,
                                        int C, cudaStream_t stream) {
    if (N <= 0 || C <= 0) return cudaSuccess;
    vocab_dx<<<N, ZB_VOCAB_THREADS, 0, stream>>>(dx, A, G, m, MS, scale, N,
                                                 C);
    CUDA_CHECK(cudaGetLastError());
    return cudaSuccess;
}
