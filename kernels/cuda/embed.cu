/* embed.cu - token + position embedding on the GPU, twin of
 * kernels/embed.c.
 *   tokens [B, T]; wte, dwte [V, C]; wpe, dwpe [maxT, C]; out, dout [B, T, C]
 * Backward without atomics: a token can repeat, so dwte gets one thread per
 * channel walking all positions in order; dwpe gets one thread per (t, c)
 * summing over the batch. Deterministic, and parallel enough for an
 * operation that runs once per microbatch.
 */
#include "kernels/cuda/kernels_cuda.h"

#define ZB_EMBED_THREADS 256

__global__ static void embed_forward(float *out, const int *tokens,
                                     const float *wte, const float *wpe,
                                     int BT, int T, int C) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i >= (size_t)BT * C) return;
    int bt = (int)(i / C), c = (int)(i % C);
    out[i] = wte[(size_t)tokens[bt] * C + c] + wpe[(size_t)(bt % T) * C + c];
}

__global__ static void embed_backward_wte(float *dwte, const float *dout,
                                          const int *tokens, int BT, int C) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    for (int bt = 0; bt < BT; bt++)
        dwte[(size_t)tokens[bt] * C + c] += dout[(size_t)bt * C + c];
}

__global__ static void embed_backward_wpe(float *dwpe, const float *dout,
                                          int B, int T, int C) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= T * C) return;
    float s = 0.0f;
    for (int b = 0; b < B; b++) s += dout[(size_t)b * T * C + i];
    dwpe[i] += s;
}

extern "C" cudaError_t zb_cuda_embed_forward(float *out, const int *tokens,
                                             const float *wte, const float *wpe,
                                             int B, int T, int C,
                                             cudaStream_t stream) {
    size_t n = (size_t)B * T * C;
    if (n == 0) return cudaSuccess;
    unsigned blocks = (unsigned)((n + ZB_EMBED_THREADS - 1) / ZB_EMBED_THREADS);
    embed_forward<<<blocks, ZB_EMBED_THREADS, 0, stream>>>(out, tokens, wte,
                                                           wpe, B * T, T, C);
    CUDA_CHECK(cudaGetLastError());
    return cudaSuccess;
}

extern "C" cudaError_t zb_cuda_embed_backward(float *dwte, float *dwpe,
                                              const float *dout,
                                              const int *tokens, int B, int T,
                                              int C, cudaStream_t stream) {
    if ((size_t)B * T * C == 0) return cudaSuccess;
    unsigned cblocks = (unsigned)((C + ZB_EMBED_THREADS - 1) / ZB_EMBED_THREADS);
    embed_backward_wte<<<cblocks, ZB_EMBED_THREADS, 0, stream>>>(dwte, dout,
                                                                 tokens, B * T, C);
    CUDA_CHECK(cudaGetLastError());
    unsigned pblocks = (unsigned)((T * C + ZB_EMBED_THREADS - 1) / ZB_EMBED_THREADS);
    embed_backward_wpe<<<pblocks, ZB_EMBED_THREADS, 0, stream>>>(dwpe, dout, B,
                                                                 T, C);
    CUDA_CHECK(cudaGetLastError());
    return cudaSuccess;
}
