/* rmsnorm.cu - RMSNorm on the GPU, twin of kernels/rmsnorm.c.
 *   inp, out, dout, dinp [N, C]; weight, dweight [C]; rstd [N]; eps 1e-5
 * F and B: one warp per row (as layernorm.cu). W over the full grid: a
 * block per 32 columns and slab of rows (reduce.cuh), 32 row groups each
 * summing its rows of the slab in order, then the groups in order into
 * the slab's partial; then the slabs in order per column.
 */
#include "kernels/cuda/act.cuh"
#include "kernels/cuda/kernels_cuda.h"
#include "kernels/cuda/llama_cuda.h"
#include "kernels/cuda/reduce.cuh"
#include "kernels/rmsnorm_math.h"
#define ZB_RMS_WARPS 4 /* rows per block in F and B */
#define ZB_RMS_WCOLS 32
#define ZB_RMS_WROWS 32

template <typename T>
__global__ static void rms_forward(T *out, float *rstd, const T *inp,
                                   const float *weight, int N, int C) {
    int row = blockIdx.x * ZB_RMS_WARPS + threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    if (row >= N) return; /* the whole warp leaves together */
    const T *x = inp + (size_t)row * C; /* [C] */
    T *y = out + (size_t)row * C;       /* [C] */
    float ss = 0.0f;
    for (int c = lane; c < C; c += 32) ss += zb_ld(x[c]) * zb_ld(x[c]);
    float r = rsqrtf(zb_warp_sum(ss) / C + (float)ZB_RMS_EPS);
    for (int c = lane; c < C; c += 32)
        y[c] = zb_to<T>(zb_rms_out(zb_ld(x[c]), r, weight[c]));
    if (lane == 0) rstd[row] = r;
}

/* dx += rstd * (g - xhat * mean(g * xhat)), g = dout * weight */
template <typename T>
__global__ static void rms_backward_input(T *dinp, const T *dout, const T *inp,
                                          const float *weight,
                                          const float *rstd, int N, int C) {
    int row = blockIdx.x * ZB_RMS_WARPS + threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    if (row >= N) return;
    const T *x = inp + (size_t)row * C;   /* [C] */
    const T *dy = dout + (size_t)row * C; /* [C] */
    T *dx = dinp + (size_t)row * C;       /* [C] */
    float r = rstd[row], gx = 0.0f;
    for (int c = lane; c < C; c += 32)
        gx += zb_ld(dy[c]) * weight[c] * zb_rms_xhat(zb_ld(x[c]), r);
    float gx_mean = zb_warp_sum(gx) / C;
    for (int c = lane; c < C; c += 32)
        dx[c] = zb_to<T>(zb_ld(dx[c]) +
                         zb_rms_dx(zb_ld(dy[c]) * weight[c],
                                   zb_rms_xhat(zb_ld(x[c]), r), gx_mean, r));
}

/* partial[slab, c] = sum over the slab's rows of dout * xhat, in a fixed
 * order (row group y sums rows y, y + ZB_RMS_WROWS, ...; then the groups
 * in y order) */
template <typename T>
__global__ static void rms_backward_weight(float *partial, const T *dout,
                                           const T *inp, const float *rstd,
                                           int N, int C) {
    __shared__ float pw[ZB_RMS_WROWS][ZB_RMS_WCOLS];
    int c = blockIdx.x * ZB_RMS_WCOLS + threadIdx.x, y = threadIdx.y;
    int rows = zb_wgrad_rows(N), n0 = blockIdx.y * rows;
    int n1 = min(N, n0 + rows);
    float dw = 0.0f;
    if (c < C)
        for (int n = n0 + y; n < n1; n += ZB_RMS_WROWS)
            dw += zb_ld(dout[(size_t)n * C + c]) *
                  zb_rms_xhat(zb_ld(inp[(size_t)n * C + c]), rstd[n]);
    pw[y][threadIdx.x] = dw;
    __syncthreads();
    if (y != 0 || c >= C) return;
    float s = 0.0f;
    for (int k = 0; k < ZB_RMS_WROWS; k++) s += pw[k][threadIdx.x];
    partial[(size_t)blockIdx.y * C + c] = s;
}

/* dweight[c] += sum over slabs of partial[s, c], in slab order */
__global__ static void rms_weight_final(float *dweight, const float *partial,
                                        int slabs, int C) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    float s = 0.0f;
    for (int k = 0; k < slabs; k++) s += partial[(size_t)k * C + c];
    dweight[c] += s;
}

static int row_blocks(int N) { return (N + ZB_RMS_WARPS - 1) / ZB_RMS_WARPS; }

template <typename T>
static cudaError_t forward(T *out, float *rstd, const T *inp,
                           const float *weight, int N, int C,
                           cudaStream_t stream) {
    if (N <= 0) return cudaSuccess;
    rms_forward<T><<<row_blocks(N), 32 * ZB_RMS_WARPS, 0, stream>>>(
        out, rstd, inp, weight, N, C);
    CUDA_CHECK(cudaGetLastError());
    return cudaSuccess;
}

template <typename T>
static cudaError_t backward_input(T *dinp, const T *dout, const T *inp,
                                  const float *weight, const float *rstd,
                                  int N, int C, cudaStream_t stream) {
    if (N <= 0) return cudaSuccess;
    rms_backward_input<T><<<row_blocks(N), 32 * ZB_RMS_WARPS, 0, stream>>>(
        dinp, dout, inp, weight, rstd, N, C);
    CUDA_CHECK(cudaGetLastError());
    return cudaSuccess;
}

template <typename T>
static cudaError_t backward_weight(float *dweight, const T *dout, const T *inp,
                                   const float *rstd, int N, int C,
                                   float *scratch, cudaStream_t stream) {
    if (C <= 0 || N <= 0) return cudaSuccess;
    int slabs = zb_wgrad_slabs(N);
    dim3 block(ZB_RMS_WCOLS, ZB_RMS_WROWS);
    dim3 grid((C + ZB_RMS_WCOLS - 1) / ZB_RMS_WCOLS, slabs);
    rms_backward_weight<T><<<grid, block, 0, stream>>>(scratch, dout, inp,
                                                       rstd, N, C);
    CUDA_CHECK(cudaGetLastError());
    rms_weight_final<<<(C + 255) / 256, 256, 0, stream>>>(dweight, scratch,
                                                          slabs, C);
    CUDA_CHECK(cudaGetLastError());
    return cudaSuccess;
}

extern "C" cudaError_t zb_cuda_rmsnorm_forward(float *out, float *rstd,
                                               const float *inp,
                                               const float *weight, int N,
                                               int C, cudaStream_t stream) {
    return forward(out, rstd, inp, weight, N, C, stream);
}

extern "C" cudaError_t zb_cuda_rmsnorm_backward_input(
    float *dinp, const float *dout, const float *inp, const float *weight,
    const float *rstd, int N, int C, cudaStream_t stream) {
    return backward_input(dinp, dout, inp, weight, rstd, N, C, stream);
}

extern "C" cudaError_t zb_cuda_rmsnorm_backward_weight(
    float *dweight, const float *dout, const float *inp, const float *rstd,
    int N, int C, float *scratch, cudaStream_t stream) {
    return backward_weight(dweight, dout, inp, rstd, N, C, scratch, stream);
}

typedef const zb_bf16 *cbf;

extern "C" cudaError_t zb_cuda_rmsnorm_forward_bf16(void *out, float *rstd,
                                                    const void *inp,
                                                    const float *weight, int N,
                                                    int C,
                                                    cudaStream_t stream) {
    return forward((zb_bf16 *)out, rstd, (cbf)inp, weight, N, C, stream);
}

extern "C" cudaError_t zb_cuda_rmsnorm_backward_input_bf16(
    void *dinp, const void *dout, const void *inp, const float *weight,
    const float *rstd, int N, int C, cudaStream_t stream) {
    return backward_input((zb_bf16 *)dinp, (cbf)dout, (cbf)inp, weight, rstd,
                          N, C, stream);
}

extern "C" cudaError_t zb_cuda_rmsnorm_backward_weight_bf16(
    float *dweight, const void *dout, const void *inp, const float *rstd,
    int N, int C, float *scratch, cudaStream_t stream) {
    return backward_weight(dweight, (cbf)dout, (cbf)inp, rstd, N, C, scratch,
                           stream);
}
