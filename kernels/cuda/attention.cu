/* attention.cu - fused causal self-attention on the GPU (FlashAttention
 * style: online softmax, no [T, T] matrix in memory; the backward pass
 * recomputes the probabilities from the saved row log-sum-exp).
 * Same layout and maths as kernels/attention.c:
 *   qkv, dqkv [B, T, 3C]  (q at channel 0, k at C, v at 2C; head h uses
 *                          channels h*hs .. h*hs+hs-1 of each, hs = C/NH)
 *   out, dout [B, T, C];  lse [B, NH, T] = log sum_t2 exp(s[t, t2]) (saved
 *   by F for B);  dsum [B, NH, T] backward scratch
 *   s[t, t2] = q_t . k_t2 / sqrt(hs) for t2 <= t
 * One thread owns one query row (F, dq) or one key row (dk, dv); a block
 * of ZB_ATT_BR rows walks the key (query) rows in tiles staged in shared
 * memory. Every output element has exactly one owner that sums in a fixed
 * order: no atomics, results repeat bit for bit.
 * hs must be 16, 32, 64 or 128 (others: cudaErrorInvalidValue).
 */
#include "kernels/cuda/kernels_cuda.h"

#include <math.h>

#define ZB_ATT_BR 64            /* rows (threads) per block */
#define ZB_ATT_TILE_FLOATS 2048 /* floats per staged tile: BC * HS */

template <int HS> struct AttTile {
    static constexpr int BC = ZB_ATT_TILE_FLOATS / HS; /* rows per tile */
};

template <int HS>
__device__ static inline float dot_row(const float *a, const float *b) {
    float s = 0.0f;
#pragma unroll
    for (int d = 0; d < HS; d++) s += a[d] * b[d];
    return s;
}

/* Stage rows [r0, r0 + BC) of two [T, ld] views into shared memory (zeros
 * past T). */
template <int HS>
__device__ static void stage_tile(float *sa, float *sb, const float *a,
                                  const float *b, int r0, int T, int ld) {
    constexpr int BC = AttTile<HS>::BC;
    for (int idx = threadIdx.x; idx < BC * HS; idx += blockDim.x) {
        int r = r0 + idx / HS, d = idx % HS;
        sa[idx] = r < T ? a[(size_t)r * ld + d] : 0.0f;
        sb[idx] = r < T ? b[(size_t)r * ld + d] : 0.0f;
    }
}

template <int HS>
__global__ static void att_forward(float *out, float *lse, const float *qkv,
                                   int T, int C, int NH, float scale) {
    constexpr int BC = AttTile<HS>::BC;
    __shared__ float ks[BC * HS], vs[BC * HS];
    int bh = blockIdx.y, b = bh / NH, h = bh % NH, ld = 3 * C;
    int i = blockIdx.x * ZB_ATT_BR + threadIdx.x;
    const float *base = qkv + (size_t)b * T * ld + h * HS;
    float q[HS], o[HS], m = -INFINITY, l = 0.0f;
#pragma unroll
    for (int d = 0; d < HS; d++) {
        q[d] = i < T ? base[(size_t)i * ld + d] * scale : 0.0f;
        o[d] = 0.0f;
    }
    int last = min(T - 1, (int)(blockIdx.x * ZB_ATT_BR + ZB_ATT_BR - 1));
    for (int j0 = 0; j0 <= last; j0 += BC) {
        stage_tile<HS>(ks, vs, base + C, base + 2 * C, j0, T, ld);
        __syncthreads();
        int jn = i < T ? min(BC, i - j0 + 1) : 0;
        for (int jj = 0; jj < jn; jj++) {
            float s = dot_row<HS>(q, ks + jj * HS);
            if (s > m) { /* new running max: rescale what is summed */
                float corr = expf(m - s);
                l *= corr;
#pragma unroll
                for (int d = 0; d < HS; d++) o[d] *= corr;
                m = s;
            }
            float p = expf(s - m);
            l += p;
#pragma unroll
            for (int d = 0; d < HS; d++) o[d] += p * vs[jj * HS + d];
        }
        __syncthreads();
    }
    if (i >= T) return;
    float *y = out + ((size_t)b * T + i) * C + h * HS;
#pragma unroll
    for (int d = 0; d < HS; d++) y[d] = o[d] / l;
    lse[(size_t)bh * T + i] = m + logf(l);
}

/* dsum[b, h, t] = sum_d dout[t, d] * out[t, d] (softmax backward term) */
__global__ static void att_dsum(float *dsum, const float *out,
                                const float *dout, int B, int T, int C,
                                int NH) {
    size_t r = blockIdx.x * (size_t)blockDim.x + threadIdx.x; /* b, h, t */
    if (r >= (size_t)B * NH * T) return;
    int t = (int)(r % T), bh = (int)(r / T), b = bh / NH, h = bh % NH;
    int hs = C / NH;
    size_t off = ((size_t)b * T + t) * C + (size_t)h * hs;
    float s = 0.0f;
    for (int d = 0; d < hs; d++) s += dout[off + d] * out[off + d];
    dsum[r] = s;
}

/* dq_t = scale * sum_{t2 <= t} p (dp - dsum_t) k_t2, dp = dout_t . v_t2 */
template <int HS>
__global__ static void att_backward_q(float *dqkv, const float *dout,
                                      const float *qkv, const float *lse,
                                      const float *dsum, int T, int C, int NH,
                                      float scale) {
    constexpr int BC = AttTile<HS>::BC;
    __shared__ float ks[BC * HS], vs[BC * HS];
    int bh = blockIdx.y, b = bh / NH, h = bh % NH, ld = 3 * C;
    int i = blockIdx.x * ZB_ATT_BR + threadIdx.x;
    const float *base = qkv + (size_t)b * T * ld + h * HS;
    const float *dy = dout + ((size_t)b * T + (i < T ? i : 0)) * C + h * HS;
    float q[HS], g[HS], dq[HS];
#pragma unroll
    for (int d = 0; d < HS; d++) {
        q[d] = i < T ? base[(size_t)i * ld + d] * scale : 0.0f;
        g[d] = i < T ? dy[d] : 0.0f;
        dq[d] = 0.0f;
    }
    float L = i < T ? lse[(size_t)bh * T + i] : 0.0f;
    float D = i < T ? dsum[(size_t)bh * T + i] : 0.0f;
    int last = min(T - 1, (int)(blockIdx.x * ZB_ATT_BR + ZB_ATT_BR - 1));
    for (int j0 = 0; j0 <= last; j0 += BC) {
        stage_tile<HS>(ks, vs, base + C, base + 2 * C, j0, T, ld);
        __syncthreads();
        int jn = i < T ? min(BC, i - j0 + 1) : 0;
        for (int jj = 0; jj < jn; jj++) {
            float p = expf(dot_row<HS>(q, ks + jj * HS) - L);
            float ds = p * (dot_row<HS>(g, vs + jj * HS) - D);
#pragma unroll
            for (int d = 0; d < HS; d++) dq[d] += ds * ks[jj * HS + d];
        }
        __syncthreads();
    }
    if (i >= T) return;
    float *dqi = dqkv + ((size_t)b * T + i) * ld + h * HS;
#pragma unroll
    for (int d = 0; d < HS; d++) dqi[d] = scale * dq[d];
}

/* Key row j: dv_j = sum_{t >= j} p dout_t (want_v), or
 * dk_j = scale * sum_{t >= j} p (dp - dsum_t) q_t (!want_v). */
template <int HS, bool want_v>
__global__ static void att_backward_kv(float *dqkv, const float *dout,
                                       const float *qkv, const float *lse,
                                       const float *dsum, int T, int C, int NH,
                                       float scale) {
    constexpr int BC = AttTile<HS>::BC;
    __shared__ float qs[BC * HS], gs[BC * HS], Ls[BC], Ds[BC];
    int bh = blockIdx.y, b = bh / NH, h = bh % NH, ld = 3 * C;
    int j = blockIdx.x * ZB_ATT_BR + threadIdx.x;
    const float *base = qkv + (size_t)b * T * ld + h * HS;
    const float *dyb = dout + (size_t)b * T * C + h * HS;
    float k[HS], v[HS], acc[HS];
#pragma unroll
    for (int d = 0; d < HS; d++) {
        k[d] = j < T ? base[(size_t)j * ld + C + d] * scale : 0.0f;
        v[d] = j < T && !want_v ? base[(size_t)j * ld + 2 * C + d] : 0.0f;
        acc[d] = 0.0f;
    }
    for (int i0 = blockIdx.x * ZB_ATT_BR; i0 < T; i0 += BC) {
        for (int idx = threadIdx.x; idx < BC * HS; idx += blockDim.x) {
            int r = i0 + idx / HS, d = idx % HS;
            qs[idx] = r < T ? base[(size_t)r * ld + d] : 0.0f;
            gs[idx] = r < T ? dyb[(size_t)r * C + d] : 0.0f;
        }
        for (int r = threadIdx.x; r < BC; r += blockDim.x) {
            Ls[r] = i0 + r < T ? lse[(size_t)bh * T + i0 + r] : 0.0f;
            Ds[r] = i0 + r < T ? dsum[(size_t)bh * T + i0 + r] : 0.0f;
        }
        __syncthreads();
        int ibeg = j < T ? max(0, j - i0) : BC, iend = min(BC, T - i0);
        for (int ii = ibeg; ii < iend; ii++) {
            float p = expf(dot_row<HS>(k, qs + ii * HS) - Ls[ii]);
            if (want_v) {
#pragma unroll
                for (int d = 0; d < HS; d++) acc[d] += p * gs[ii * HS + d];
            } else {
                float ds = p * (dot_row<HS>(v, gs + ii * HS) - Ds[ii]);
#pragma unroll
                for (int d = 0; d < HS; d++) acc[d] += ds * qs[ii * HS + d];
            }
        }
        __syncthreads();
    }
    if (j >= T) return;
    float *dst = dqkv + ((size_t)b * T + j) * ld + (want_v ? 2 * C : C) + h * HS;
#pragma unroll
    for (int d = 0; d < HS; d++) dst[d] = want_v ? acc[d] : scale * acc[d];
}

template <int HS>
static cudaError_t launch_forward(float *out, float *lse, const float *qkv,
                                  int B, int T, int C, int NH,
                                  cudaStream_t stream) {
    dim3 grid((T + ZB_ATT_BR - 1) / ZB_ATT_BR, B * NH);
    att_forward<HS><<<grid, ZB_ATT_BR, 0, stream>>>(out, lse, qkv, T, C, NH,
                                                    1.0f / sqrtf((float)HS));
    CUDA_CHECK(cudaGetLastError());
    return cudaSuccess;
}

template <int HS>
static cudaError_t launch_backward(float *dqkv, float *dsum, const float *dout,
                                   const float *qkv, const float *out,
                                   const float *lse, int B, int T, int C,
                                   int NH, cudaStream_t stream) {
    size_t rows = (size_t)B * NH * T;
    att_dsum<<<(unsigned)((rows + 255) / 256), 256, 0, stream>>>(dsum, out, dout,
                                                                 B, T, C, NH);
    CUDA_CHECK(cudaGetLastError());
    dim3 grid((T + ZB_ATT_BR - 1) / ZB_ATT_BR, B * NH);
    float scale = 1.0f / sqrtf((float)HS);
    att_backward_q<HS><<<grid, ZB_ATT_BR, 0, stream>>>(dqkv, dout, qkv, lse,
                                                       dsum, T, C, NH, scale);
    CUDA_CHECK(cudaGetLastError());
    att_backward_kv<HS, false><<<grid, ZB_ATT_BR, 0, stream>>>(
        dqkv, dout, qkv, lse, dsum, T, C, NH, scale);
    CUDA_CHECK(cudaGetLastError());
    att_backward_kv<HS, true><<<grid, ZB_ATT_BR, 0, stream>>>(
        dqkv, dout, qkv, lse, dsum, T, C, NH, scale);
    CUDA_CHECK(cudaGetLastError());
    return cudaSuccess;
}

extern "C" bool zb_cuda_attention_supported(int C, int NH) {
    if (NH <= 0 || C % NH) return false;
    int hs = C / NH;
    return hs == 16 || hs == 32 || hs == 64 || hs == 128;
}

extern "C" cudaError_t zb_cuda_attention_forward(float *out, float *lse,
                                                 const float *qkv, int B,
                                                 int T, int C, int NH,
                                                 cudaStream_t stream) {
    if ((size_t)B * T * C == 0) return cudaSuccess;
    switch (zb_cuda_attention_supported(C, NH) ? C / NH : 0) {
    case 16: return launch_forward<16>(out, lse, qkv, B, T, C, NH, stream);
    case 32: return launch_forward<32>(out, lse, qkv, B, T, C, NH, stream);
    case 64: return launch_forward<64>(out, lse, qkv, B, T, C, NH, stream);
    case 128: return launch_forward<128>(out, lse, qkv, B, T, C, NH, stream);
    default:
        zb_cuda_note_error(cudaErrorInvalidValue, "attention: head size not "
                           "16, 32, 64 or 128", __FILE__, __LINE__);
        return cudaErrorInvalidValue;
    }
}

extern "C" cudaError_t zb_cuda_attention_backward(
    float *dqkv, float *dsum, const float *dout, const float *qkv,
    const float *out, const float *lse, int B, int T, int C, int NH,
    cudaStream_t stream) {
    if ((size_t)B * T * C == 0) return cudaSuccess;
    switch (zb_cuda_attention_supported(C, NH) ? C / NH : 0) {
    case 16: return launch_backward<16>(dqkv, dsum, dout, qkv, out, lse, B, T, C, NH, stream);
    case 32: return launch_backward<32>(dqkv, dsum, dout, qkv, out, lse, B, T, C, NH, stream);
    case 64: return launch_backward<64>(dqkv, dsum, dout, qkv, out, lse, B, T, C, NH, stream);
    case 128: return launch_backward<128>(dqkv, dsum, dout, qkv, out, lse, B, T, C, NH, stream);
    default:
        zb_cuda_note_error(cudaErrorInvalidValue, "attention: head size not "
                           "16, 32, 64 or 128", __FILE__, __LINE__);
        return cudaErrorInvalidValue;
    }
}
