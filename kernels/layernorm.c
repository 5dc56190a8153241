/* layernorm.c - LayerNorm over the last dimension, see layernorm.h.
 *   inp, out, dout, dinp [N, C]; weight, bias, dweight, dbias [C];
 *   mean, rstd [N]
 * Row statistics are summed in double: cheap next to the rest of a layer,
 * and it keeps var = E[(x - mean)^2] accurate for rows with a large mean.
 */
#include "kernels/layernorm.h"

#include <math.h>
#include <stddef.h>

#include "kernels/layernorm_math.h"
#include "kernels/parallel.h"
/* Columns per thread-owned block in the W pass. */
#define ZB_LN_COLS_PER_BLOCK 64

void zb_layernorm_forward(float *out, float *mean, float *rstd,
                          const float *inp, const float *weight,
                          const float *bias, int N, int C) {
#pragma omp parallel for schedule(static) if (ZB_OMP_WORTH((size_t)N * C))
    for (int n = 0; n < N; n++) {
        const float *x = inp + (size_t)n * C; /* [C] */
        float *y = out + (size_t)n * C;       /* [C] */
        double sum = 0.0;
        for (int c = 0; c < C; c++) sum += x[c];
        double m = sum / C;
        double var = 0.0;
        for (int c = 0; c < C; c++) var += (x[c] - m) * (x[c] - m);
        float s = (float)(1.0 / sqrt(var / C + ZB_LN_EPS));
        float mf = (float)m;
        for (int c = 0; c < C; c++)
            y[c] = zb_ln_out(x[c], mf, s, weight[c], bias[c]);
        mean[n] = mf;
        rstd[n] = s;
    }
}

/* With xhat = (x - mean) * rstd and g = dout * weight (gradient w.r.t. xhat):
 *   dx = rstd * (g - mean(g) - xhat * mean(g * xhat)) */
void zb_layernorm_backward_input(float *dinp, const float *dout,
                                 const float *inp, const float *weight,
                                 const float *mean, const float *rstd, int N,
                                 int C) {
#pragma omp parallel for schedule(static) if (ZB_OMP_WORTH((size_t)N * C))
    for (int n = 0; n < N; n++) {
        const float *x = inp + (size_t)n * C;   /* [C] */
        const float *dy = dout + (size_t)n * C; /* [C] */
        float *dx = dinp + (size_t)n * C;       /* [C] */
        float m = mean[n], s = rstd[n];
        double g_sum = 0.0, gx_sum = 0.0;
        for (int c = 0; c < C; c++) {
            float g = dy[c] * weight[c];
            g_sum += g;
            gx_sum += g * ((x[c] - m) * s);
        }
        float g_mean = (float)(g_sum / C), gx_mean = (float)(gx_sum / C);
        for (int c = 0; c < C; c++) {
            dx[c] += zb_ln_dx(dy[c] * weight[c], g_mean, zb_ln_xhat(x[c], m, s),
                              gx_mean, s);
        }
    }
}

/* dweight[c] += sum_n dout[n,c] * xhat[n,c]; dbias[c] += sum_n dout[n,c].
 * A block of columns is owned by one thread and summed over rows in order,
 * so the result is the same for any thread count. */
void zb_layernorm_backward_weight(float *dweight, float *dbias,
                                  const float *dout, const float *inp,
                                  const float *mean, const float *rstd, int N,
                                  int C) {
    int nblocks = (C + ZB_LN_COLS_PER_BLOCK - 1) / ZB_LN_COLS_PER_BLOCK;
#pragma omp parallel for schedule(static) if (ZB_OMP_WORTH((size_t)N * C))
    for (int blk = 0; blk < nblocks; blk++) {
        int c0 = blk * ZB_LN_COLS_PER_BLOCK;
        int c1 = c0 + ZB_LN_COLS_PER_BLOCK < C ? c0 + ZB_LN_COLS_PER_BLOCK : C;
        float dw[ZB_LN_COLS_PER_BLOCK] = {0}, db[ZB_LN_COLS_PER_BLOCK] = {0};
        for (int n = 0; n < N; n++) {
            const float *x = inp + (size_t)n * C;   /* [C] */
            const float *dy = dout + (size_t)n * C; /* [C] */
            float m = mean[n], s = rstd[n];
            for (int c = c0; c < c1; c++) {
                dw[c - c0] += dy[c] * zb_ln_xhat(x[c], m, s);
                db[c - c0] += dy[c];
            }
        }
        for (int c = c0; c < c1; c++) {
            dweight[c] += dw[c - c0];
            dbias[c] += db[c - c0];
        }
    }
}
