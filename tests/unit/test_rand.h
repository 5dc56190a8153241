/* test_rand.h - seeded inputs for the kernel tests (test_kernels.c,
 * test_llama_kernels.c, test_llama_ops.c): a xorshift64 stream, and float
 * buffers (zeroed, random, copied) that fail the test when calloc does. */
#ifndef ZB_TEST_RAND_H
#define ZB_TEST_RAND_H

#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_state = 1;

static inline void seed(uint64_t s) { rng_state = s ? s : 1; }

/* xorshift64: uniform in [-1, 1) with 24 random bits */
static inline float frand(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (float)((double)(rng_state >> 40) / (1 << 23) - 1.0);
}

static inline float *fbuf(size_t n) {
    float *p = calloc(n ? n : 1, sizeof *p);
    ck_assert_ptr_nonnull(p);
    return p;
}

static inline float *frandbuf(size_t n, float scale) {
    float *p = fbuf(n);
    for (size_t i = 0; i < n; i++) p[i] = scale * frand();
    return p;
}

static inline float *fdup(const float *x, size_t n) {
    float *p = fbuf(n);
    memcpy(p, x, n * sizeof *p);
    return p;
}

#endif
