/* embed.cu - token + position embedding on the GPU, twin of
 * kernels/embed.c.
 *   tokens [B, T]; wte, dwte [V, C]; wpe, dwpe [maxT, C]; out, dout [B, T, C]
 * Backward without atomics: a token can repeat, so each (row, channel) of
 * dwte has one owner thread walking all positions in order (threads split
 * the vocabulary into ranges); dwpe gets one thread per (t, c) summing
 * over the batch. Deterministic; dwte sums in the CPU's order.
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

/* dwte: thread (x, y) of block (bx, by) owns channel bx*32 + x of the rows
 * of vocabulary range by*ZB_EMBED_VR + y (of ZB_EMBED_VRANGES ranges); it
 * walks all positions in order (token ids staged in shared memory) and
 * adds only those whose token is in its range. Each (row, channel) is
 * summed by one thread in position order, as on the CPU. */
#define ZB_EMBED_VRANGES 64   /* vocabulary ranges: parallelism over rows */
#define ZB_EMBED_VR 8         /* ranges per block (blockDim.y) */
#define ZB_EMBED_TOK_TILE 1024
__global__ static void embed_backward_wte(float *dwte, const float *dout,
                                          const int *tokens, int BT, int C,
                                          int V) {
    __shared__ int tok[ZB_EMBED_TOK_TILE];
    int c = blockIdx.x * 32 + threadIdx.x;
    int range = blockIdx.y * ZB_EMBED_VR + threadIdx.y;
    int per = (V + ZB_EMBED_VRANGES - 1) / ZB_EMBED_VRANGES;
    int v0 = range * per, v1 = min(V, v0 + per);
    int tid = threadIdx.y * 32 + threadIdx.x, nthr = 32 * ZB_EMBED_VR;
    for (int b0 = 0; b0 < BT; b0 += ZB_EMBED_TOK_TILE) {
        int nb = min(ZB_EMBED_TOK_TILE, BT - b0);
        for (int i = tid; i < nb; i += nthr) tok[i] = tokens[b0 + i];
        __syncthreads();
        if (c < C)
            for (int i = 0; i < nb; i++) {
                int t = tok[i];
                if (t >= v0 && t < v1)
                    dwte[(size_t)t * C + c] += dout[(size_t)(b0 + i) * C + c];
            }
        __syncthreads();
    }
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
                                              int C, int V, cudaStream_t stream) {
    if ((size_t)B * T * C == 0) return cudaSuccess;
    dim3 wgrid((C + 31) / 32, ZB_EMBED_VRANGES / ZB_EMBED_VR);
    dim3 wblock(32, ZB_EMBED_VR);
    embed_backward_wte<<<wgrid, wblock, 0, stream>>>(dwte, dout, tokens, B * T,
                                                     C, V);
    CUDA_CHECK(cudaGetLastError());
    unsigned pblocks = (unsigned)((T * C + ZB_EMBED_THREADS - 1) / ZB_EMBED_THREADS);
    embed_backward_wpe<<<pblocks, ZB_EMBED_THREADS, 0, stream>>>(dwpe, dout, B,
                                                                 T, C);
    CUDA_CHECK(cudaGetLastError());
    return cudaSuccess;
}
