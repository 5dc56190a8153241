/* fastexp.h - expf that vectorises (internal to kernels/).
 *
 * libm's expf is a function call per element, so loops around it stay
 * scalar; this one is straight-line float arithmetic that `omp simd`
 * turns into SSE/AVX lanes. Each lane does the same IEEE operations as the
 * scalar code (C11 mode: no FMA contraction), so results do not depend on
 * the vector width or the thread count.
 *   e^x = 2^n e^r, n = round(x / ln 2), r = x - n ln 2 (ln 2 in two parts,
 *   Cody-Waite), e^r by its Taylor series to r^7 (|r| <= 0.35: truncation
 *   below 6e-9 relative); 2^n built in the exponent bits.
 * Inputs are clamped to [-87, 88]: results stay normal and finite (e^-87
 * ~ 1.6e-38, e^88 ~ 1.7e38; +-inf give those too); callers only use it
 * where that is harmless. NaN gives NaN.
 * Relative error about 2e-7 (a few ulp) against exp in double.
 * ZB_HD: the CUDA kernels run the same arithmetic (gelu_math.h).
 */
#ifndef ZB_KERNELS_FASTEXP_H
#define ZB_KERNELS_FASTEXP_H

#include <stdint.h>
#include <string.h>

#include "kernels/zb_hd.h"

ZB_HD float zb_fast_expf(float x_in) {
    /* NaN computes as 0 (no out-of-range int conversion) and is returned
     * as itself at the end, so a NaN loss still shows as NaN */
    float x = x_in == x_in ? x_in : 0.0f;
    x = x < -87.0f ? -87.0f : x;
    x = x > 88.0f ? 88.0f : x;
    /* round to nearest by the 1.5 * 2^23 trick (|x / ln 2| < 2^22) */
    float fn = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
    int32_t n = (int32_t)fn;
    float r = (x - fn * 0.693359375f) - fn * -2.12194440e-4f;
    float p = 1.0f / 5040.0f;
    p = p * r + 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    uint32_t bits = (uint32_t)(n + 127) << 23;   /* n in [-126, 127] */
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    return x_in == x_in ? p * scale : x_in;
}

#endif
