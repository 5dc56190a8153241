/* rmsnorm.c - RMSNorm over the last dimension, see rmsnorm.h.
 *   inp, out, dout, dinp [N, C]; weight, dweight [C]; rstd [N]
 * Row statistics are summed in double (as layernorm.c): cheap next to the
 * rest of a layer, and mean(x^2) of a wide row stays accurate. Each row
 * (F, B) or block of columns (W) is owned by one thread and summed in
 * order, so results do not depend on the thread count.
 */
#include "kernels/rmsnorm.h"

#include <math.h>
#include <stddef.h>

#include "kernels/parallel.h"
#include "kernels/rmsnorm_math.h"
/* Columns per thread-owned block in the W pass. */
#define ZB_RMS_COLS_PER_BLOCK 64

/* y [C] = x * rstd * w; returns rstd */
static float rms_row_forward(float *y, const float *x, const float *weight,
                             int C) {
    double ss = 0.0;
    for (int c = 0; c < C; c++) ss += (double)x[c] * x[c];
    float s = (float)(1.0 / sqrt(ss / C + ZB_RMS_EPS));
    for (int c = 0; c < C; c++) y[c] = zb_rms_out(x[c], s, weight[c]);
    return s;
}

/* dx [C] += rstd * (g - xhat * mean(g * xhat)), g = dy * w */
static void rms_row_backward(float *dx, const float *dy, const float *x,
                             const float *weight, float s, int C) {
    double gx_sum = 0.0;
    for (int c = 0; c < C; c++)
        gx_sum += (dy[c] * weight[c]) * zb_rms_xhat(x[c], s);
    float gx_mean = (float)(gx_sum / C);
    for (int c = 0; c < C; c++)
        dx[c] += zb_rms_dx(dy[c] * weight[c], zb_rms_xhat(x[c], s), gx_mean, s);
}

/* dw[c - c0] = sum over rows n (in order) of dy[n, c] * xhat[n, c] */
static void rms_cols_weight(float *dw, const float *dout, const float *inp,
                            const float *rstd, int N, int C, int c0, int c1) {
    for (int n = 0; n < N; n++) {
        const float *x = inp + (size_t)n * C;   /* [C] */
        const float *dy = dout + (size_t)n * C; /* [C] */
        for (int c = c0; c < c1; c++)
            dw[c - c0] += dy[c] * zb_rms_xhat(x[c], rstd[n]);
    }
}

void zb_rmsnorm_forward(float *out, float *rstd, const float *inp,
                        const float *weight, int N, int C) {
#pragma omp parallel for schedule(static) if (ZB_OMP_WORTH((size_t)N * C))
    for (int n = 0; n < N; n++)
        rstd[n] = rms_row_forward(out + (size_t)n * C, inp + (size_t)n * C,
                                  weight, C);
}

void zb_rmsnorm_backward_input(float *dinp, const float *dout,
                               const float *inp, const float *weight,
                               const float *rstd, int N, int C) {
#pragma omp parallel for schedule(static) if (ZB_OMP_WORTH((size_t)N * C))
    for (int n = 0; n < N; n++)
        rms_row_backward(dinp + (size_t)n * C, dout + (size_t)n * C,
                         inp + (size_t)n * C, weight, rstd[n], C);
}

void zb_rmsnorm_backward_weight(float *dweight, const float *dout,
                                const float *inp, const float *rstd, int N,
                                int C) {
    int nblocks = (C + ZB_RMS_COLS_PER_BLOCK - 1) / ZB_RMS_COLS_PER_BLOCK;
#pragma omp parallel for schedule(static) if (ZB_OMP_WORTH((size_t)N * C))
    for (int blk = 0; blk < nblocks; blk++) {
        int c0 = blk * ZB_RMS_COLS_PER_BLOCK;
        int c1 = c0 + ZB_RMS_COLS_PER_BLOCK < C ? c0 + ZB_RMS_COLS_PER_BLOCK : C;
        float dw[ZB_RMS_COLS_PER_BLOCK] = {0};
        rms_cols_weight(dw, dout, inp, rstd, N, C, c0, c1);
        for (int c = c0; c < c1; c++) dweight[c] += dw[c - c0];
    }
}

/* ---- references: one thread, written from the formulas without the
 * shared row helpers or rmsnorm_math.h, so that a slip in those shows up
 * as a difference ---- */

void zb_rmsnorm_forward_ref(float *out, float *rstd, const float *inp,
                            const float *weight, int N, int C) {
    for (int n = 0; n < N; n++) {
        double ss = 0.0;
        for (int c = 0; c < C; c++) ss += (double)inp[n * C + c] * inp[n * C + c];
        rstd[n] = (float)(1.0 / sqrt(ss / C + 1e-5));
        for (int c = 0; c < C; c++)
            out[n * C + c] = inp[n * C + c] * rstd[n] * weight[c];
    }
}

/* d/dx_j of x_c r w_c with r = (mean(x^2) + eps)^-1/2, dr/dx_j = -r^3 x_j / C */
void zb_rmsnorm_backward_input_ref(float *dinp, const float *dout,
                                   const float *inp, const float *weight,
                                   const float *rstd, int N, int C) {
    for (int n = 0; n < N; n++) {
        const float *x = inp + (size_t)n * C, *dy = dout + (size_t)n * C;
        double r = rstd[n], dot = 0.0; /* sum_c dy_c w_c x_c */
        for (int c = 0; c < C; c++) dot += (double)dy[c] * weight[c] * x[c];
        for (int j = 0; j < C; j++)
            dinp[(size_t)n * C + j] +=
                (float)(r * dy[j] * weight[j] - r * r * r * x[j] * dot / C);
    }
}

void zb_rmsnorm_backward_weight_ref(float *dweight, const float *dout,
                                    const float *inp, const float *rstd,
                                    int N, int C) {
    for (int c = 0; c < C; c++) {
        double dw = 0.0;
        for (int n = 0; n < N; n++)
            dw += (double)dout[(size_t)n * C + c] * inp[(size_t)n * C + c] * rstd[n];
        dweight[c] += (float)dw;
    }
}
