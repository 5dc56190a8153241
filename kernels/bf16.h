/* bf16.h - bfloat16 on the host: the top 16 bits of an IEEE fp32 (sign,
 * 8 exponent bits, 7 mantissa bits), stored as uint16_t. Narrowing rounds
 * to nearest, ties to even (what CUDA's __float2bfloat16_rn does), so a
 * value too large for bf16 becomes infinity; a NaN stays a (quiet) NaN.
 * Widening is exact. These are the CPU reference of the CUDA kernels' bf16
 * loads and stores. */
#ifndef ZB_KERNELS_BF16_H
#define ZB_KERNELS_BF16_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline uint16_t zb_bf16_from_f32(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u) /* NaN: keep it one, quiet */
        return (uint16_t)((u >> 16) | 0x0040u);
    u += 0x7fffu + ((u >> 16) & 1u); /* nearest, ties to even */
    return (uint16_t)(u >> 16);
}

static inline float zb_bf16_to_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* dst[i] = bf16(src[i]), n elements */
static inline void zb_bf16_store(uint16_t *dst, const float *src, size_t n) {
    for (size_t i = 0; i < n; i++) dst[i] = zb_bf16_from_f32(src[i]);
}

/* dst[i] = src[i] widened, n elements */
static inline void zb_bf16_load(float *dst, const uint16_t *src, size_t n) {
    for (size_t i = 0; i < n; i++) dst[i] = zb_bf16_to_f32(src[i]);
}

#endif
