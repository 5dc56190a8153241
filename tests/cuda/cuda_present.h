/* cuda_present.h - for the CUDA tests: skip (77) only when this machine has
 * no CUDA device: cudaErrorNoDevice, zero devices, or no driver library at
 * all (libcuda.so.1 absent: the runtime then reports an "insufficient"
 * driver). Any other error (a driver older than the runtime, a broken
 * install) fails the test (1) with its message. */
#ifndef ZB_TESTS_CUDA_PRESENT_H
#define ZB_TESTS_CUDA_PRESENT_H

#include <cstdio>
#include <dlfcn.h>

#include <cuda_runtime_api.h>

/* 0: devices present; 77: none (skip); 1: a CUDA error (fail) */
static int zb_test_cuda_present(void) {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e == cudaSuccess && n > 0) return 0;
    if (e == cudaSuccess || e == cudaErrorNoDevice) {
        printf("skipped: no CUDA device\n");
        return 77;
    }
    void *drv = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!drv && e == cudaErrorInsufficientDriver) {
        printf("skipped: no CUDA driver (libcuda.so.1 not found)\n");
        return 77;
    }
    if (drv) dlclose(drv);
    printf("cudaGetDeviceCount: %s (%s)  FAIL\n", cudaGetErrorString(e),
           cudaGetErrorName(e));
    return 1;
}

#endif
