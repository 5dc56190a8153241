/* cuda_test.h - the harness the CUDA kernel tests share (test_kernels_cuda.cu,
 * test_bf16_cuda.cu): the failure count, device buffers freed at the end,
 * a CUDA call that ends the test on error, the random inputs, the
 * GPU-vs-CPU comparison and the op table opened on device 0. Header-only
 * (static), one test program per translation unit. */
#ifndef ZB_TESTS_CUDA_TEST_H
#define ZB_TESTS_CUDA_TEST_H

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <cuda_runtime_api.h>

extern "C" {
#include "executor/stage/cuda_choice.h"
#include "executor/stage/ops.h"
}
#include "kernels/cuda/kernels_cuda.h"

static int failures;
static std::vector<void *> device_allocs; /* freed by zb_test_finish */

/* A CUDA failure ends the test with 1. */
#define EXPECT_CUDA(call)                                                      \
    do {                                                                       \
        cudaError_t e_ = (call);                                               \
        if (e_ != cudaSuccess) {                                               \
            fprintf(stderr, "%s:%d: %s: %s (%s)\n", __FILE__, __LINE__, #call, \
                    cudaGetErrorString(e_), zb_cuda_error_msg());              \
            exit(1);                                                           \
        }                                                                      \
    } while (0)

/* xorshift state; a test sets its own seed before drawing */
static unsigned long long rng = 12345;
static float frand(void) { /* uniform in [-1, 1) */
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)((double)(rng >> 40) / (1 << 23) - 1.0);
}

/* bytes of device memory (at least 1), freed at the end */
static void *dev_bytes(size_t bytes) {
    void *d = nullptr;
    EXPECT_CUDA(cudaMalloc(&d, bytes ? bytes : 1));
    device_allocs.push_back(d);
    return d;
}

/* bytes of device memory set to 0xff (NaN as fp32 and bf16): a kernel
 * that writes must overwrite them */
static void *nan_bytes(size_t bytes) {
    void *d = dev_bytes(bytes);
    EXPECT_CUDA(cudaMemset(d, 0xff, bytes));
    return d;
}

/* |gpu - cpu| <= atol + rtol |cpu| for every element (NaN fails); prints
 * one line and counts a failure */
static void compare_vec(const char *what, const std::vector<float> &cpu,
                        const std::vector<float> &gpu, double rtol,
                        double atol) {
    size_t bad = 0, first = 0;
    double worst = 0.0;
    for (size_t i = 0; i < cpu.size(); i++) {
        double err = std::fabs((double)gpu[i] - cpu[i]);
        if (!(err <= atol + rtol * std::fabs(cpu[i])) && !bad++) first = i;
        if (!(err <= worst)) worst = err;
    }
    printf("%-34s n=%-8zu max |gpu-cpu| %.3g  %s\n", what, cpu.size(), worst,
           bad ? "FAIL" : "ok");
    if (bad) {
        printf("  %zu mismatches, first [%zu]: gpu %.9g cpu %.9g\n", bad, first,
               gpu[first], cpu[first]);
        failures++;
    }
}

/* The CUDA op table on device 0 (one pass timed, small uploads); a
 * failure ends the test. bf16 activations need attn_gemm (the stage's own
 * rule, zb_cuda_attn_gemm): open_ops(b, zb_cuda_attn_gemm(b), ...) is
 * always accepted. */
static void open_ops(bool bf16, bool attn_gemm, int wgrad_rows,
                     int wgrad_cols, zb_ops *ops) {
    /* the combinations zb_ops_cuda refuses are a test's own bug: said as
     * such, before any device call (the rule is CPU-tested) */
    const char *bad = zb_cuda_ops_cfg_refusal(bf16, attn_gemm);
    if (bad) {
        fprintf(stderr, "test bug: open_ops(bf16 %d, attn_gemm %d): %s\n",
                (int)bf16, (int)attn_gemm, bad);
        exit(1);
    }
    zb_ops_cuda_cfg cfg = {};
    cfg.device = 0;
    cfg.bf16 = bf16;
    cfg.attn_gemm = attn_gemm;
    cfg.max_passes = 1;
    cfg.upload_bytes = 64;
    cfg.wgrad_rows = wgrad_rows;
    cfg.wgrad_cols = wgrad_cols;
    zb_err err = {};
    if (zb_ops_cuda(&cfg, ops, &err) != ZB_OK) {
        fprintf(stderr, "zb_ops_cuda: %s\n", err.msg);
        exit(1);
    }
}

/* Frees the device buffers, prints the verdict; main's exit status. */
static int zb_test_finish(void) {
    for (void *p : device_allocs) cudaFree(p);
    printf("%s: %d failure(s)\n", failures ? "FAIL" : "PASS", failures);
    return failures ? 1 : 0;
}

#endif
