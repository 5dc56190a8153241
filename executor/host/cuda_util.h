/* cuda_util.h - for the executor's .cu files: check macros that turn a
 * failed CUDA, cuBLAS or NCCL call into ZB_ERUNTIME with a message naming
 * the call, the error, the file and the line. They need a `zb_err *err` in
 * scope and return from a function returning zb_status. Kernels wrappers
 * (kernels/cuda/) return cudaError_t and note their message; ZB_KERNEL
 * turns that note into the same kind of failure.
 */
#ifndef ZB_CUDA_UTIL_H
#define ZB_CUDA_UTIL_H

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "common/zb_error.h"
#include "kernels/cuda/kernels_cuda.h"

#define ZB_CUDA(call)                                                          \
    do {                                                                       \
        cudaError_t zb_ce_ = (call);                                           \
        if (zb_ce_ != cudaSuccess)                                             \
            return zb_fail(err, ZB_ERUNTIME, "%s: %s (%s:%d)", #call,          \
                           cudaGetErrorString(zb_ce_), __FILE__, __LINE__);    \
    } while (0)

#define ZB_CUBLAS(call)                                                        \
    do {                                                                       \
        cublasStatus_t zb_bs_ = (call);                                        \
        if (zb_bs_ != CUBLAS_STATUS_SUCCESS)                                   \
            return zb_fail(err, ZB_ERUNTIME, "%s: %s (%s:%d)", #call,          \
                           zb_cublas_status_name(zb_bs_), __FILE__, __LINE__); \
    } while (0)

/* A kernels/cuda wrapper: its own note says which launch failed where. */
#define ZB_KERNEL(call)                                                        \
    do {                                                                       \
        cudaError_t zb_ke_ = (call);                                           \
        if (zb_ke_ != cudaSuccess)                                             \
            return zb_fail(err, ZB_ERUNTIME, "%s (called at %s:%d)",           \
                           zb_cuda_error_msg(), __FILE__, __LINE__);           \
    } while (0)

#endif
