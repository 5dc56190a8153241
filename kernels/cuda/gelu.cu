/* gelu.cu - GELU (tanh approximation) on the GPU, twin of kernels/gelu.c.
 *   inp, out, dout, dinp [N]; one thread per element, grid-stride; the
 *   arithmetic is kernels/gelu_math.h, the CPU's.
 */
#include "kernels/cuda/act.cuh"
#include "kernels/cuda/kernels_cuda.h"
#include "kernels/gelu_math.h"

#define ZB_GELU_THREADS 256
#define ZB_GELU_MAX_BLOCKS 4096

template <typename T>
__global__ static void gelu_forward(T *out, const T *inp, size_t N) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < N;
         i += (size_t)gridDim.x * blockDim.x) {
        out[i] = zb_to<T>(zb_gelu_value(zb_ld(inp[i])));
    }
}

template <typename T>
__global__ static void gelu_backward(T *dinp, const T *inp, const T *dout,
                                     size_t N) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < N;
         i += (size_t)gridDim.x * blockDim.x) {
        dinp[i] = zb_to<T>(zb_ld(dinp[i]) +
                           zb_gelu_slope(zb_ld(inp[i])) * zb_ld(dout[i]));
    }
}

static unsigned blocks_for(size_t N) {
    size_t b = (N + ZB_GELU_THREADS - 1) / ZB_GELU_THREADS;
    return (unsigned)(b < ZB_GELU_MAX_BLOCKS ? b : ZB_GELU_MAX_BLOCKS);
}

template <typename T>
static cudaError_t forward(T *out, const T *inp, size_t N,
                           cudaStream_t stream) {
    if (N == 0) return cudaSuccess;
    gelu_forward<T><<<blocks_for(N), ZB_GELU_THREADS, 0, stream>>>(out, inp, N);
    CUDA_CHECK(cudaGetLastError());
    return cudaSuccess;
}

template <typename T>
static cudaError_t backward(T *dinp, const T *inp, const T *dout, size_t N,
                            cudaStream_t stream) {
    if (N == 0) return cudaSuccess;
    gelu_backward<T><<<blocks_for(N), ZB_GELU_THREADS, 0, stream>>>(dinp, inp,
                                                                    dout, N);
    CUDA_CHECK(cudaGetLastError());
    return cudaSuccess;
}

extern "C" cudaError_t zb_cuda_gelu_forward(float *out, const float *inp,
                                            size_t N, cudaStream_t stream) {
    return forward(out, inp, N, stream);
}

extern "C" cudaError_t zb_cuda_gelu_backward(float *dinp, const float *inp,
                                             const float *dout, size_t N,
                                             cudaStream_t stream) {
    return backward(dinp, inp, dout, N, stream);
}

extern "C" cudaError_t zb_cuda_gelu_forward_bf16(void *out, const void *inp,
                                                 size_t N,
                                                 cudaStream_t stream) {
    return forward((zb_bf16 *)out, (const zb_bf16 *)inp, N, stream);
}

extern "C" cudaError_t zb_cuda_gelu_backward_bf16(void *dinp, const void *inp,
                                                  const void *dout, size_t N,
                                                  cudaStream_t stream) {
    return backward((zb_bf16 *)dinp, (const zb_bf16 *)inp,
                    (const zb_bf16 *)dout, N, stream);
}
