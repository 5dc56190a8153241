/* rope_math.h - rotary position embedding of one channel pair, for
 * kernels/rope.c and kernels/cuda/rope.cu (zb_hd.h).
 * Pair i of a head of hs channels (channels 2i and 2i+1, i < hs/2) at
 * position t turns by the angle t * theta^(-2i/hs) (Su et al. 2021, the
 * interleaved pairs of the original Llama code):
 *   y0 = x0 cos - x1 sin,  y1 = x0 sin + x1 cos
 * The backward is the transpose, the turn by minus the angle (sin -> -sin).
 * The angle and its cosine and sine are computed in double and rounded
 * once to float: t up to 2^20 times a frequency near 1 would lose the
 * angle's low bits in float.
 */
#ifndef ZB_ROPE_MATH_H
#define ZB_ROPE_MATH_H

#include <math.h>

#include "kernels/zb_hd.h"

ZB_HD double zb_rope_angle(int t, int i, int hs, double theta) {
    return (double)t * pow(theta, -2.0 * i / hs);
}

/* (x0, x1) turned by the angle whose cosine and sine are c and s */
ZB_HD void zb_rope_turn(float *x0, float *x1, float c, float s) {
    float a = *x0, b = *x1;
    *x0 = a * c - b * s;
    *x1 = a * s + b * c;
}

#endif
