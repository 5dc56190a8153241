/* layernorm.cu - LayerNorm on the GPU, twin of kernels/layernorm.c.
 *   inp, out, dout, dinp [N, C]; weight, bias, dweight, dbias [C];
 *   mean, rstd [N]; eps = 1e-5
 * F and B: one warp per row. W over the full grid: a block per 32 columns
 * and slab of rows (reduce.cuh), 32 row groups each summing its rows of
 * the slab in order, then the groups in order into the slab's partial;
 * then the slabs in order per column (coalesced and deterministic).
 */
#include "kernels/cuda/act.cuh"
#include "kernels/cuda/kernels_cuda.h"
#include "kernels/cuda/reduce.cuh"
#include "kernels/layernorm_math.h"
#define ZB_LN_WARPS 4 /* rows per block in F and B */

template <typename T>
__global__ static void ln_forward(T *out, float *mean, float *rstd,
                                  const T *inp, const float *weight,
                                  const float *bias, int N, int C) {
    int row = blockIdx.x * ZB_LN_WARPS + threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    if (row >= N) return; /* the whole warp leaves together */
    const T *x = inp + (size_t)row * C; /* [C] */
    T *y = out + (size_t)row * C;       /* [C] */
    float s = 0.0f;
    for (int c = lane; c < C; c += 32) s += zb_ld(x[c]);
    float m = zb_warp_sum(s) / C;
    float var = 0.0f;
    for (int c = lane; c < C; c += 32)
        var += (zb_ld(x[c]) - m) * (zb_ld(x[c]) - m);
    float r = rsqrtf(zb_warp_sum(var) / C + (float)ZB_LN_EPS);
    for (int c = lane; c < C; c += 32)
        y[c] = zb_to<T>(zb_ln_out(zb_ld(x[c]), m, r, weight[c], bias[c]));
    if (lane == 0) {
        mean[row] = m;
        rstd[row] = r;
    }
}

/* dx += rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dout * weight */
template <typename T>
__global__ static void ln_backward_input(T *dinp, const T *dout, const T *inp,
                                         const float *weight,
                                         const float *mean, const float *rstd,
                                         int N, int C) {
    int row = blockIdx.x * ZB_LN_WARPS + threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    if (row >= N) return;
    const T *x = inp + (size_t)row * C;   /* [C] */
    const T *dy = dout + (size_t)row * C; /* [C] */
    T *dx = dinp + (size_t)row * C;       /* [C] */
    float m = mean[row], r = rstd[row];
    float g_sum = 0.0f, gx_sum = 0.0f;
    for (int c = lane; c < C; c += 32) {
        float g = zb_ld(dy[c]) * weight[c];
        g_sum += g;
        gx_sum += g * (zb_ld(x[c]) - m) * r;
    }
    float g_mean = zb_warp_sum(g_sum) / C, gx_mean = zb_warp_sum(gx_sum) / C;
    for (int c = lane; c < C; c += 32) {
        dx[c] = zb_to<T>(zb_ld(dx[c]) +
                         zb_ln_dx(zb_ld(dy[c]) * weight[c], g_mean,
                                  zb_ln_xhat(zb_ld(x[c]), m, r), gx_mean, r));
    }
}

/* W: column c of one slab of rows is owned by thread x of one block; the
 * block's ZB_LN_WROWS thread rows each sum the slab's rows y, y +
 * ZB_LN_WROWS, ... in order, then row 0 adds the partial sums in y order;
 * ln_weight_final adds the slabs in order (fixed order: the result repeats
 * bit for bit). */
#define ZB_LN_WCOLS 32
#define ZB_LN_WROWS 32
/* partial[slab, 0, c] (weight) and partial[slab, 1, c] (bias) */
template <typename T>
__global__ static void ln_backward_weight(float *partial, const T *dout,
                                          const T *inp, const float *mean,
                                          const float *rstd, int N, int C) {
    __shared__ float pw[ZB_LN_WROWS][ZB_LN_WCOLS], pb[ZB_LN_WROWS][ZB_LN_WCOLS];
    int c = blockIdx.x * ZB_LN_WCOLS + threadIdx.x, y = threadIdx.y;
    int rows = zb_wgrad_rows(N), n0 = blockIdx.y * rows;
    int n1 = min(N, n0 + rows);
    float dw = 0.0f, db = 0.0f;
    if (c < C)
        for (int n = n0 + y; n < n1; n += ZB_LN_WROWS) {
            float dy = zb_ld(dout[(size_t)n * C + c]);
            dw += dy * zb_ln_xhat(zb_ld(inp[(size_t)n * C + c]), mean[n],
                                  rstd[n]);
            db += dy;
        }
    pw[y][threadIdx.x] = dw;
    pb[y][threadIdx.x] = db;
    __syncthreads();
    if (y != 0 || c >= C) return;
    float sw = 0.0f, sb = 0.0f;
    for (int r = 0; r < ZB_LN_WROWS; r++) {
        sw += pw[r][threadIdx.x];
        sb += pb[r][threadIdx.x];
    }
    float *p = partial + (size_t)blockIdx.y * 2 * C;
    p[c] = sw;
    p[C + c] = sb;
}

/* dweight[c] += sum over slabs of partial[s, 0, c]; dbias the same */
__global__ static void ln_weight_final(float *dweight, float *dbias,
                                       const float *partial, int slabs,
                                       int C) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    float sw = 0.0f, sb = 0.0f;
    for (int s = 0; s < slabs; s++) {
        sw += partial[(size_t)s * 2 * C + c];
        sb += partial[(size_t)s * 2 * C + C + c];
    }
    dweight[c] += sw;
    dbias[c] += sb;
}

static int row_blocks(int N) { return (N + ZB_LN_WARPS - 1) / ZB_LN_WARPS; }

template <typename T>
static cudaError_t forward(T *out, float *mean, float *rstd, const T *inp,
                           const float *weight, const float *bias, int N,
                           int C, cudaStream_t stream) {
    if (N <= 0) return cudaSuccess;
    ln_forward<T><<<row_blocks(N), 32 * ZB_LN_WARPS, 0, stream>>>(
        out, mean, rstd, inp, weight, bias, N, C);
    CUDA_CHECK(cudaGetLastError());
    return cudaSuccess;
}

template <typename T>
static cudaError_t backward_input(T *dinp, const T *dout, const T *inp,
                                  const float *weight, const float *mean,
                                  const float *rstd, int N, int C,
                                  cudaStream_t stream) {
    if (N <= 0) return cudaSuccess;
    ln_backward_input<T><<<row_blocks(N), 32 * ZB_LN_WARPS, 0, stream>>>(
        dinp, dout, inp, weight, mean, rstd, N, C);
    CUDA_CHECK(cudaGetLastError());
    return cudaSuccess;
}

template <typename T>
static cudaError_t backward_weight(float *dweight, float *dbias, const T *dout,
                                   const T *inp, const float *mean,
                                   const float *rstd, int N, int C,
                                   float *scratch, cudaStream_t stream) {
    if (C <= 0 || N <= 0) return cudaSuccess;
    int slabs = zb_wgrad_slabs(N);
    dim3 block(ZB_LN_WCOLS, ZB_LN_WROWS);
    dim3 grid((C + ZB_LN_WCOLS - 1) / ZB_LN_WCOLS, slabs);
    ln_backward_weight<T><<<grid, block, 0, stream>>>(scratch, dout, inp, mean,
                                                      rstd, N, C);
    CUDA_CHECK(cudaGetLastError());
    ln_weight_final<<<(C + 255) / 256, 256, 0, stream>>>(dweight, dbias,
                                                         scratch, slabs, C);
    CUDA_CHECK(cudaGetLastError());
    return cudaSuccess;
}

extern "C" cudaError_t zb_cuda_layernorm_forward(float *out, float *mean,
                                                 float *rstd, const float *inp,
                                                 const float *weight,
                                                 const float *bias, int N,
                                                 int C, cudaStream_t stream) {
    return forward(out, mean, rstd, inp, weight, bias, N, C, stream);
}

extern "C" cudaError_t zb_cuda_layernorm_backward_input(
    float *dinp, const float *dout, const float *inp, const float *weight,
    const float *mean, const float *rstd, int N, int C, cudaStream_t stream) {
    return backward_input(dinp, dout, inp, weight, mean, rstd, N, C, stream);
}

extern "C" cudaError_t zb_cuda_layernorm_backward_weight(
    float *dweight, float *dbias, const float *dout, const float *inp,
    const float *mean, const float *rstd, int N, int C, float *scratch,
    cudaStream_t stream) {
    return backward_weight(dweight, dbias, dout, inp, mean, rstd, N, C,
                           scratch, stream);
}

typedef const zb_bf16 *cbf;

extern "C" cudaError_t zb_cuda_layernorm_forward_bf16(
    void *out, float *mean, float *rstd, const void *inp, const float *weight,
    const float *bias, int N, int C, cudaStream_t stream) {
    return forward((zb_bf16 *)out, mean, rstd, (cbf)inp, weight, bias, N, C,
                   stream);
}

extern "C" cudaError_t zb_cuda_layernorm_backward_input_bf16(
    void *dinp, const void *dout, const void *inp, const float *weight,
    const float *mean, const float *rstd, int N, int C, cudaStream_t stream) {
    return backward_input((zb_bf16 *)dinp, (cbf)dout, (cbf)inp, weight, mean,
                          rstd, N, C, stream);
}

extern "C" cudaError_t zb_cuda_layernorm_backward_weight_bf16(
    float *dweight, float *dbias, const void *dout, const void *inp,
    const float *mean, const float *rstd, int N, int C, float *scratch,
    cudaStream_t stream) {
    return backward_weight(dweight, dbias, (cbf)dout, (cbf)inp, mean, rstd, N,
                           C, scratch, stream);
}

extern "C" size_t zb_cuda_wgrad_scratch_floats(int N, int C) {
    return (size_t)zb_wgrad_slabs(N) * 2 * (size_t)(C > 0 ? C : 1);
}
