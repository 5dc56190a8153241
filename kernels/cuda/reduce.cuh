/* reduce.cuh - warp and block reductions shared by the .cu kernels
 * (internal to kernels/cuda). A block reduction must be reached by every
 * thread of the block; blockDim.x is a multiple of 32, at most 1024. */
#ifndef ZB_KERNELS_CUDA_REDUCE_CUH
#define ZB_KERNELS_CUDA_REDUCE_CUH

#include <math.h>

#define ZB_FULL_MASK 0xffffffffu

template <typename T> __device__ inline T zb_warp_sum(T v) {
    for (int off = 16; off > 0; off >>= 1)
        v += __shfl_xor_sync(ZB_FULL_MASK, v, off);
    return v;
}

__device__ inline float zb_warp_max(float v) {
    for (int off = 16; off > 0; off >>= 1)
        v = fmaxf(v, __shfl_xor_sync(ZB_FULL_MASK, v, off));
    return v;
}

struct ZbWarpSumD {
    __device__ double operator()(double v) const { return zb_warp_sum(v); }
};
struct ZbWarpMax {
    __device__ float operator()(float v) const { return zb_warp_max(v); }
};

/* Reduce v over the block with warp_op, identity for absent warps; every
 * thread gets the result. */
template <typename T, typename WarpOp>
__device__ inline T zb_block_reduce(T v, T identity, WarpOp warp_op) {
    __shared__ T partial[32]; /* one per warp */
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    int nwarps = (blockDim.x + 31) >> 5;
    v = warp_op(v);
    if (lane == 0) partial[warp] = v;
    __syncthreads();
    v = (int)threadIdx.x < nwarps ? partial[threadIdx.x] : identity;
    if (warp == 0) v = warp_op(v);
    if (threadIdx.x == 0) partial[0] = v;
    __syncthreads();
    v = partial[0];
    __syncthreads(); /* partial may be written again by the next call */
    return v;
}

/* Weight-gradient column sums over a full grid: the N rows are cut into
 * zb_wgrad_slabs(N) slabs of zb_wgrad_rows(N) rows (a function of N only,
 * never of the device, so results repeat bit for bit); block (x, slab)
 * sums its slab's rows of 32 columns into scratch[slab, column], then one
 * thread per column adds the slabs in order. */
#define ZB_WGRAD_MAX_SLABS 64
#define ZB_WGRAD_MIN_ROWS 256
__host__ __device__ static inline int zb_wgrad_slabs(int N) {
    int s = (N + ZB_WGRAD_MIN_ROWS - 1) / ZB_WGRAD_MIN_ROWS;
    return s < 1 ? 1 : s > ZB_WGRAD_MAX_SLABS ? ZB_WGRAD_MAX_SLABS : s;
}
__host__ __device__ static inline int zb_wgrad_rows(int N) {
    int s = zb_wgrad_slabs(N);
    return (N + s - 1) / s;
}

#endif
