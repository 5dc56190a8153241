/* swiglu.cu - the SwiGLU gate on the GPU, twin of kernels/swiglu.c.
 *   ab, dab [N, 2F] (a | b per row); out, dout [N, F]
 * One thread per output element (n, f), grid-stride; the arithmetic is
 * kernels/swiglu_math.h, the CPU's (zb_fast_expf included).
 */
#include "kernels/cuda/act.cuh"
#include "kernels/cuda/kernels_cuda.h"
#include "kernels/cuda/llama_cuda.h"
#include "kernels/swiglu_math.h"

#define ZB_SWIGLU_THREADS 256
#define ZB_SWIGLU_MAX_BLOCKS 4096

template <typename T>
__global__ static void swiglu_forward(T *out, const T *ab, int N, int F) {
    size_t total = (size_t)N * F;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total;
         i += (size_t)gridDim.x * blockDim.x) {
        size_t n = i / F, f = i % F;
        const T *a = ab + n * 2 * F; /* [F], b = a + F */
        out[i] = zb_to<T>(zb_swiglu_value(zb_ld(a[f]), zb_ld(a[F + f])));
    }
}

template <typename T>
__global__ static void swiglu_backward(T *dab, const T *ab, const T *dout,
                                       int N, int F) {
    size_t total = (size_t)N * F;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total;
         i += (size_t)gridDim.x * blockDim.x) {
        size_t n = i / F, f = i % F, ia = n * 2 * F + f, ib = ia + F;
        float a = zb_ld(ab[ia]), b = zb_ld(ab[ib]), dy = zb_ld(dout[i]);
        dab[ia] = zb_to<T>(zb_ld(dab[ia]) + zb_swiglu_da(a, b, dy));
        dab[ib] = zb_to<T>(zb_ld(dab[ib]) + zb_swiglu_db(a, dy));
    }
}

static unsigned blocks_for(size_t n) {
    size_t b = (n + ZB_SWIGLU_THREADS - 1) / ZB_SWIGLU_THREADS;
    return (unsigned)(b < ZB_SWIGLU_MAX_BLOCKS ? b : ZB_SWIGLU_MAX_BLOCKS);
}

template <typename T>
static cudaError_t forward(T *out, const T *ab, int N, int F,
                           cudaStream_t stream) {
    if (N <= 0 || F <= 0) return cudaSuccess;
    swiglu_forward<T><<<blocks_for((size_t)N * F), ZB_SWIGLU_THREADS, 0,
                        stream>>>(out, ab, N, F);
    CUDA_CHECK(cudaGetLastError());
    return cudaSuccess;
}

template <typename T>
static cudaError_t backward(T *dab, const T *ab, const T *dout, int N, int F,
                            cudaStream_t stream) {
    if (N <= 0 || F <= 0) return cudaSuccess;
    swiglu_backward<T><<<blocks_for((size_t)N * F), ZB_SWIGLU_THREADS, 0,
                         stream>>>(dab, ab, dout, N, F);
    CUDA_CHECK(cudaGetLastError());
    return cudaSuccess;
}

extern "C" cudaError_t zb_cuda_swiglu_forward(float *out, const float *ab,
                                              int N, int F,
                                              cudaStream_t stream) {
    return forward(out, ab, N, F, stream);
}

extern "C" cudaError_t zb_cuda_swiglu_backward(float *dab, const float *ab,
                                               const float *dout, int N, int F,
                                               cudaStream_t stream) {
    return backward(dab, ab, dout, N, F, stream);
}

extern "C" cudaError_t zb_cuda_swiglu_forward_bf16(void *out, const void *ab,
                                                   int N, int F,
                                                   cudaStream_t stream) {
    return forward((zb_bf16 *)out, (const zb_bf16 *)ab, N, F, stream);
}

extern "C" cudaError_t zb_cuda_swiglu_backward_bf16(void *dab, const void *ab,
                                                    const void *dout, int N,
                                                    int F,
                                                    cudaStream_t stream) {
    return backward((zb_bf16 *)dab, (const zb_bf16 *)ab,
                    (const zb_bf16 *)dout, N, F, stream);
}
