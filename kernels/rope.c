/* rope.c - rotary position embedding, see rope.h.
 *   x, dx [B, T, ld], the first H heads of hs channels of each row turn
 * Per row the cosines and sines of up to ZB_ROPE_PAIRS pairs are computed
 * once (libm cos/sin in double: the expensive part) and applied to every
 * head; rows are shared out over OpenMP, each row owned by one thread.
 */
#include "kernels/rope.h"

#include <math.h>
#include <stddef.h>

#include "kernels/parallel.h"
#include "kernels/rope_math.h"

/* Pairs whose cosines and sines are held at once (a row's head size may
 * be larger: it is done in chunks). */
#define ZB_ROPE_PAIRS 64

/* Row x [ld] at position t: every pair of its first H heads turned by
 * +angle (dir 1) or -angle (dir -1), ZB_ROPE_PAIRS pairs at a time. */
static void rope_row(float *x, int t, int H, int hs, double theta, int dir) {
    float c[ZB_ROPE_PAIRS], s[ZB_ROPE_PAIRS];
    for (int i0 = 0; i0 < hs / 2; i0 += ZB_ROPE_PAIRS) {
        int np = hs / 2 - i0 < ZB_ROPE_PAIRS ? hs / 2 - i0 : ZB_ROPE_PAIRS;
        for (int k = 0; k < np; k++) {
            double ang = zb_rope_angle(t, i0 + k, hs, theta);
            c[k] = (float)cos(ang);
            s[k] = dir * (float)sin(ang);
        }
        for (int h = 0; h < H; h++) {
            float *xh = x + (size_t)h * hs + 2 * i0; /* [2 np] */
            for (int k = 0; k < np; k++)
                zb_rope_turn(&xh[2 * k], &xh[2 * k + 1], c[k], s[k]);
        }
    }
}

static void rope_all(float *x, int B, int T, int H, int hs, int ld,
                     float theta, int dir) {
    size_t work = (size_t)B * T * H * hs;
#pragma omp parallel for schedule(static) if (ZB_OMP_WORTH(work))
    for (int r = 0; r < B * T; r++)
        rope_row(x + (size_t)r * ld, r % T, H, hs, theta, dir);
}

void zb_rope_forward(float *x, int B, int T, int H, int hs, int ld,
                     float theta) {
    rope_all(x, B, T, H, hs, ld, theta, 1);
}

void zb_rope_backward(float *dx, int B, int T, int H, int hs, int ld,
                      float theta) {
    rope_all(dx, B, T, H, hs, ld, theta, -1);
}

/* ---- references: one thread, every element's angle on its own ---- */

static void rope_ref(float *x, int B, int T, int H, int hs, int ld,
                     float theta, int dir) {
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
            for (int h = 0; h < H; h++)
                for (int i = 0; i < hs / 2; i++) {
                    float *p = x + ((size_t)b * T + t) * ld + h * hs + 2 * i;
                    double ang = t * pow((double)theta, -2.0 * i / hs);
                    float c = (float)cos(ang), s = dir * (float)sin(ang);
                    float x0 = p[0], x1 = p[1];
                    p[0] = x0 * c - x1 * s;
                    p[1] = x0 * s + x1 * c;
                }
}

void zb_rope_forward_ref(float *x, int B, int T, int H, int hs, int ld,
                         float theta) {
    rope_ref(x, B, T, H, hs, ld, theta, 1);
}

void zb_rope_backward_ref(float *dx, int B, int T, int H, int hs, int ld,
                          float theta) {
    rope_ref(dx, B, T, H, hs, ld, theta, -1);
}
