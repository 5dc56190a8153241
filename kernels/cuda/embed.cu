/* embed.cu - the vocabulary-parallel embedding on the GPU, twins of
 * kernels/embed.h's shard functions.
 *   tokens [N = B*T]; wtel, dwtel [nv, C] rows [v0, v0 + nv) of the token
 *   table; wpe, dwpe [maxT, C]; out, dout [B, T, C]
 * Backward without float atomics: a token can repeat, so the positions are
 * sorted by row (CUB's stable radix sort) and each (row, channel) of dwtel
 * has one owner summing its positions in order; dwpe gets one thread per
 * (t, c) summing over the batch. Deterministic; dwtel sums in the CPU's
 * order, so it equals the CPU's bit for bit.
 */
#include "kernels/cuda/act.cuh"
#include "kernels/cuda/kernels_cuda.h"

#include <cub/device/device_radix_sort.cuh>

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

/* dwtel, spread over the chip without float atomics: the positions are
 * sorted by local row (a stable radix sort, so positions stay in order
 * within a row), then one block per run of equal rows (a segment) sums
 * that row's positions in order into dwtel. Each (row, channel) has one
 * owner adding dwtel + dout[n1] + dout[n2] + ... in increasing n, the
 * CPU's order: bit-identical to kernels/embed.c. Positions outside the
 * shard get the key nv and sort last; their segment is skipped. */
/* out[b, t] = tok[b, t] + wpe[t], rounded to bf16 */
__global__ static void embed_add_pos_bf16(zb_bf16 *out, const float *tok,
                                          const float *wpe, int BT, int T,
                                          int C) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i >= (size_t)BT * C) return;
    int bt = (int)(i / C), c = (int)(i % C);
    out[i] = __float2bfloat16_rn(tok[i] + wpe[(size_t)(bt % T) * C + c]);
}

__global__ static void embed_sort_keys(int *key, int *pos, const int *tokens,
                                       int v0, int nv, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= N) return;
    int k = tokens[i] - v0;
    key[i] = k >= 0 && k < nv ? k : nv;
    pos[i] = i;
}

/* Block (i, y) starts a segment when key[i] differs from key[i-1] and
 * owns its columns [y * ZB_SEG_COLS, +ZB_SEG_COLS): one thread per
 * column adds the segment's positions in order (the CPU's order, bit for
 * bit). A long segment (a space is about a fifth of byte tokens) is thus
 * spread over C / ZB_SEG_COLS blocks instead of one. */
#define ZB_SEG_COLS 64
template <typename T_>
__global__ static void embed_segment_sum(float *dwtel, const T_ *dout,
                                         const int *key, const int *pos,
                                         int nv, int N, int C) {
    int i = blockIdx.x, k = key[i];
    int c = blockIdx.y * ZB_SEG_COLS + threadIdx.x;
    if (k >= nv || (i > 0 && key[i - 1] == k) || c >= C) return;
    float *dte = dwtel + (size_t)k * C; /* [C] */
    float acc = dte[c];
    for (int j = i; j < N && key[j] == k; j++)
        acc += zb_ld(dout[(size_t)pos[j] * C + c]);
    dte[c] = acc;
}

template <typename T_>
__global__ static void embed_pos_backward(float *dwpe, const T_ *dout, int B,
                                          int T, int C) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= T * C) return;
    float s = 0.0f;
    for (int b = 0; b < B; b++) s += zb_ld(dout[(size_t)b * T * C + i]);
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

/* Radix-sort bits for keys in [0, nv]. */
extern "C" cudaError_t zb_cuda_embed_add_pos_bf16(void *out, const float *tok,
                                                  const float *wpe, int B,
                                                  int T, int C,
                                                  cudaStream_t stream) {
    size_t n = (size_t)B * T * C;
    if (n == 0) return cudaSuccess;
    embed_add_pos_bf16<<<blocks_for(n), ZB_EMBED_THREADS, 0, stream>>>(
        (zb_bf16 *)out, tok, wpe, B * T, T, C);
    CUDA_CHECK(cudaGetLastError());
    return cudaSuccess;
}

static int key_bits(int nv) {
    int b = 1;
    while (b < 31 && (1 << b) <= nv) b++;
    return b;
}

/* The scratch of one backward of up to N positions: keys and positions
 * twice (sort input and output) and CUB's temporary storage, each part
 * 256-byte aligned. */
struct embed_scratch {
    int *key, *pos, *key_out, *pos_out;
    void *cub;
    size_t cub_bytes;
};

static size_t align256(size_t n) { return (n + 255) & ~(size_t)255; }

static cudaError_t cub_bytes(int N, int bits, size_t *bytes) {
    *bytes = 0;
    return cub::DeviceRadixSort::SortPairs(nullptr, *bytes, (int *)nullptr,
                                           (int *)nullptr, (int *)nullptr,
                                           (int *)nullptr, N, 0, bits);
}

extern "C" cudaError_t zb_cuda_embed_scratch_bytes(int N, size_t *bytes) {
    size_t cb;
    *bytes = 0;
    CUDA_CHECK(cub_bytes(N, 32, &cb)); /* 32 bits: the most any shard sorts */
    *bytes = 4 * align256((size_t)N * sizeof(int)) + align256(cb);
    return cudaSuccess;
}

static embed_scratch carve(void *scratch, int N, size_t bytes) {
    size_t a = align256((size_t)N * sizeof(int));
    char *p = (char *)scratch;
    embed_scratch s = {(int *)p, (int *)(p + a), (int *)(p + 2 * a),
                       (int *)(p + 3 * a), p + 4 * a, bytes - 4 * a};
    return s;
}

template <typename T_>
static cudaError_t tokens_backward(float *dwtel, const T_ *dout,
                                   const int *tokens, int v0, int nv, int N,
                                   int C, void *scratch, size_t scratch_bytes,
                                   cudaStream_t stream) {
    if ((size_t)N * C == 0 || nv <= 0) return cudaSuccess;
    size_t need;
    CUDA_CHECK(zb_cuda_embed_scratch_bytes(N, &need));
    CUDA_CHECK(scratch_bytes < need ? cudaErrorInvalidValue : cudaSuccess);
    embed_scratch s = carve(scratch, N, scratch_bytes);
    int bits = key_bits(nv);
    size_t cb;
    CUDA_CHECK(cub_bytes(N, bits, &cb));
    CUDA_CHECK(cb > s.cub_bytes ? cudaErrorInvalidValue : cudaSuccess);
    embed_sort_keys<<<blocks_for((size_t)N), ZB_EMBED_THREADS, 0, stream>>>(
        s.key, s.pos, tokens, v0, nv, N);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cub::DeviceRadixSort::SortPairs(s.cub, cb, s.key, s.key_out,
                                               s.pos, s.pos_out, N, 0, bits,
                                               stream));
    dim3 grid((unsigned)N, (unsigned)((C + ZB_SEG_COLS - 1) / ZB_SEG_COLS));
    embed_segment_sum<T_><<<grid, ZB_SEG_COLS, 0, stream>>>(
        dwtel, dout, s.key_out, s.pos_out, nv, N, C);
    CUDA_CHECK(cudaGetLastError());
    return cudaSuccess;
}

template <typename T_>
static cudaError_t pos_backward(float *dwpe, const T_ *dout, int B, int T,
                                int C, cudaStream_t stream) {
    if ((size_t)T * C == 0) return cudaSuccess;
    embed_pos_backward<T_><<<blocks_for((size_t)T * C), ZB_EMBED_THREADS, 0,
                             stream>>>(dwpe, dout, B, T, C);
    CUDA_CHECK(cudaGetLastError());
    return cudaSuccess;
}

extern "C" cudaError_t zb_cuda_embed_tokens_backward(
    float *dwtel, const float *dout, const int *tokens, int v0, int nv, int N,
    int C, void *scratch, size_t scratch_bytes, cudaStream_t stream) {
    return tokens_backward(dwtel, dout, tokens, v0, nv, N, C, scratch,
                           scratch_bytes, stream);
}

extern "C" cudaError_t zb_cuda_embed_pos_backward(float *dwpe,
                                                  const float *dout, int B,
                                                  int T, int C,
                                                  cudaStream_t stream) {
    return pos_backward(dwpe, dout, B, T, C, stream);
}

extern "C" cudaError_t zb_cuda_embed_tokens_backward_bf16(
    float *dwtel, const void *dout, const int *tokens, int v0, int nv, int N,
    int C, void *scratch, size_t scratch_bytes, cudaStream_t stream) {
    return tokens_backward(dwtel, (const zb_bf16 *)dout, tokens, v0, nv, N, C,
                           scratch, scratch_bytes, stream);
}

extern "C" cudaError_t zb_cuda_embed_pos_backward_bf16(float *dwpe,
                                                       const void *dout, int B,
                                                       int T, int C,
                                                       cudaStream_t stream) {
    return pos_backward(dwpe, (const zb_bf16 *)dout, B, T, C, stream);
}
