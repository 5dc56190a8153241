/* embed.cu - the vocabulary-parallel embedding on the GPU, twins of
 * kernels/embed.h's shard functions.
 *   tokens [N = B*T]; wtel, dwtel [nv, C] rows [v0, v0 + nv) of the token
 *   table; wpe, dwpe [maxT, C]; out, dout [B, T, C]
 * Backward without atomics: a token can repeat, so each (row, channel) of
 * dwtel has one owner thread walking all positions in order (threads split
 * the shard's rows into ranges); dwpe gets one thread per (t, c) summing
 * over the batch. Deterministic; dwtel sums in the CPU's order.
 */
#include "kernels/cuda/kernels_cuda.h"

#define ZB_EMBED_THREADS 256

/* out[n, c] = wtel[tok - v0, c], 0 outside the shard */
__global__ static void embed_tokens(float *out, const int *tokens,
                                    const float *wtel, int v0, int nv, int N,
                                    int C) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i >= (size_t)N * C) return;
    int n = (int)(i / C), c = (int)(i % C), k = tokens[n] - v0;
    out[i] = k >= 0 && k < nv ? wtel[(size_t)k * C + c] : 0.0f;
}

__global__ static void embed_add_pos(float *out, const float *wpe, int BT,
                                     int T, int C) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i >= (size_t)BT * C) return;
    int bt = (int)(i / C), c = (int)(i % C);
    out[i] += wpe[(size_t)(bt % T) * C + c];
}

/* dwtel: thread (x, y) of block (bx, by) owns channel bx*32 + x of the
 * local rows of range by*ZB_EMBED_VR + y (of ZB_EMBED_VRANGES ranges); it
 * walks all positions in order (token ids staged in shared memory) and
 * adds only those whose local row is in its range. */
#define ZB_EMBED_VRANGES 64   /* row ranges: parallelism over rows */
#define ZB_EMBED_VR 8         /* ranges per block (blockDim.y) */
#define ZB_EMBED_TOK_TILE 1024

__global__ static void embed_tokens_backward(float *dwtel, const float *dout,
                                             const int *tokens, int v0,
                                             int nv, int N, int C) {
    __shared__ int tok[ZB_EMBED_TOK_TILE];
    int c = blockIdx.x * 32 + threadIdx.x;
    int range = blockIdx.y * ZB_EMBED_VR + threadIdx.y;
    int per = (nv + ZB_EMBED_VRANGES - 1) / ZB_EMBED_VRANGES;
    int r0 = range * per, r1 = min(nv, r0 + per);
    int tid = threadIdx.y * 32 + threadIdx.x, nthr = 32 * ZB_EMBED_VR;
    for (int b0 = 0; b0 < N; b0 += ZB_EMBED_TOK_TILE) {
        int nb = min(ZB_EMBED_TOK_TILE, N - b0);
        for (int i = tid; i < nb; i += nthr) tok[i] = tokens[b0 + i] - v0;
        __syncthreads();
        if (c < C)
            for (int i = 0; i < nb; i++) {
                int k = tok[i];
                if (k >= r0 && k < r1)
                    dwtel[(size_t)k * C + c] += dout[(size_t)(b0 + i) * C + c];
            }
        __syncthreads();
    }
}

__global__ static void embed_pos_backward(float *dwpe, const float *dout,
                                          int B, int T, int C) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= T * C) return;
    float s = 0.0f;
    for (int b = 0; b < B; b++) s += dout[(size_t)b * T * C + i];
    dwpe[i] += s;
}

static unsigned blocks_for(size_t n) {
    return (unsigned)((n + ZB_EMBED_THREADS - 1) / ZB_EMBED_THREADS);
}

extern "C" cudaError_t zb_cuda_embed_tokens(float *out, const int *tokens,
                                            const float *wtel, int v0, int nv,
                                            int N, int C, cudaStream_t stream) {
    size_t n = (size_t)N * C;
    if (n == 0) return cudaSuccess;
    embed_tokens<<<blocks_for(n), ZB_EMBED_THREADS, 0, stream>>>(
        out, tokens, wtel, v0, nv, N, C);
    CUDA_CHECK(cudaGetLastError());
    return cudaSuccess;
}

extern "C" cudaError_t zb_cuda_embed_add_pos(float *out, const float *wpe,
                                             int B, int T, int C,
                                             cudaStream_t stream) {
    size_t n = (size_t)B * T * C;
    if (n == 0) return cudaSuccess;
    embed_add_pos<<<blocks_for(n), ZB_EMBED_THREADS, 0, stream>>>(out, wpe,
                                                                  B * T, T, C);
    CUDA_CHECK(cudaGetLastError());
    return cudaSuccess;
}

extern "C" cudaError_t zb_cuda_embed_tokens_backward(float *dwtel,
                                                     const float *dout,
                                                     const int *tokens, int v0,
                                                     int nv, int N, int C,
                                                     cudaStream_t stream) {
    if ((size_t)N * C == 0 || nv <= 0) return cudaSuccess;
    dim3 grid((C + 31) / 32, ZB_EMBED_VRANGES / ZB_EMBED_VR);
    dim3 block(32, ZB_EMBED_VR);
    embed_tokens_backward<<<grid, block, 0, stream>>>(dwtel, dout, tokens, v0,
                                                      nv, N, C);
    CUDA_CHECK(cudaGetLastError());
    return cudaSuccess;
}

extern "C" cudaError_t zb_cuda_embed_pos_backward(float *dwpe,
                                                  const float *dout, int B,
                                                  int T, int C,
                                                  cudaStream_t stream) {
    if ((size_t)T * C == 0) return cudaSuccess;
    embed_pos_backward<<<blocks_for((size_t)T * C), ZB_EMBED_THREADS, 0,
                         stream>>>(dwpe, dout, B, T, C);
    CUDA_CHECK(cudaGetLastError());
    return cudaSuccess;
}
