/* gelu.cu - GELU (tanh approximation) on the GPU, twin of kernels/gelu.c.
 *   inp, out, dout, dinp [N]; one thread per element, grid-stride; the
 *   arithmetic is kernels/gelu_math.h, the CPU's.
 */
#include "kernels/cuda/kernels_cuda.h"
#include "kernels/gelu_math.h"

#define ZB_GELU_THREADS 256
#define ZB_GELU_MAX_BLOCKS 4096

__global__ static void gelu_forward(float *out, const float *inp, size_t N) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < N;
         i += (size_t)gridDim.x * blockDim.x) {
        out[i] = zb_gelu_value(inp[i]);
    }
}

__global__ static void gelu_backward(float *dinp, const float *inp,
                                     const float *dout, size_t N) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < N;
         i += (size_t)gridDim.x * blockDim.x) {
        dinp[i] += zb_gelu_slope(inp[i]) * dout[i];
    }
}

static unsigned blocks_for(size_t N) {
    size_t b = (N + ZB_GELU_THREADS - 1) / ZB_GELU_THREADS;
    return (unsigned)(b < ZB_GELU_MAX_BLOCKS ? b : ZB_GELU_MAX_BLOCKS);
}

extern "C" cudaError_t zb_cuda_gelu_forward(float *out, const float *inp,
                                            size_t N, cudaStream_t stream) {
    if (N == 0) return cudaSuccess;
    gelu_forward<<<blocks_for(N), ZB_GELU_THREADS, 0, stream>>>(out, inp, N);
    CUDA_CHECK(cudaGetLastError());
    return cudaSuccess;
}

extern "C" cudaError_t zb_cuda_gelu_backward(float *dinp, const float *inp,
                                             const float *dout, size_t N,
                                             cudaStream_t stream) {
    if (N == 0) return cudaSuccess;
    gelu_backward<<<blocks_for(N), ZB_GELU_THREADS, 0, stream>>>(dinp, inp,
                                                                 dout, N);
    CUDA_CHECK(cudaGetLastError());
    return cudaSuccess;
}
