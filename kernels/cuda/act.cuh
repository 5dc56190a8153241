/* act.cuh - activation storage in the kernels (internal to kernels/cuda):
 * the layer kernels are templates over the element type T of their
 * activation arrays, float (precision fp32) or __nv_bfloat16 (bf16
 * storage); zb_ld widens an element to float, zb_to<T> rounds a float to
 * nearest even (kernels/bf16.h is the CPU twin). The math stays fp32. */
#ifndef ZB_KERNELS_CUDA_ACT_CUH
#define ZB_KERNELS_CUDA_ACT_CUH

#include <cuda_bf16.h>

typedef __nv_bfloat16 zb_bf16;

__device__ __forceinline__ float zb_ld(float v) { return v; }
__device__ __forceinline__ float zb_ld(zb_bf16 v) { return __bfloat162float(v); }

template <typename T> __device__ __forceinline__ T zb_to(float v);
template <> __device__ __forceinline__ float zb_to<float>(float v) { return v; }
template <> __device__ __forceinline__ zb_bf16 zb_to<zb_bf16>(float v) {
    return __float2bfloat16_rn(v);
}

#endif
