/* matmul.c - linear layer through OpenBLAS, see matmul.h.
 *
 * All matrices are row-major:
 *   inp [N, C], weight [OC, C], bias [OC], out/dout [N, OC]
 * Threads: OpenBLAS runs its own thread pool inside cblas_sgemm, so this
 * file adds no OpenMP team: a team started right before or after a GEMM
 * keeps spinning on the cores OpenBLAS wants, and on 2 cores that made
 * small GEMMs up to 50x slower (tests/bench/bench_kernels.c).
 * Reproducibility: for a fixed OpenBLAS thread count the results repeat
 * bit for bit; the OpenMP thread count does not matter. Changing the
 * OpenBLAS thread count can change the last bits for some shapes (OpenBLAS
 * splits the output differently, and edge tiles take other micro-kernels).
 */
#include "kernels/matmul.h"

#include <cblas.h>
#include <stddef.h>
#include <string.h>

/* Columns per block when summing dout over rows: the partial sums of a
 * block stay in registers while the rows stream past. */
#define ZB_COLS_PER_BLOCK 64

/* out[N, OC] = inp[N, C] @ weight[OC, C]^T + bias[OC]: the bias is copied
 * into every row first and the GEMM adds onto it (beta = 1). */
void zb_matmul_forward(float *out, const float *inp, const float *weight,
                       const float *bias, int N, int C, int OC) {
    float beta = 0.0f;
    if (bias) {
        for (int n = 0; n < N; n++)
            memcpy(out + (size_t)n * OC, bias, (size_t)OC * sizeof *out);
        beta = 1.0f;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, OC, C, 1.0f, inp,
                C, weight, C, beta, out, OC);
}

/* B: dinp[N, C] += dout[N, OC] @ weight[OC, C] */
void zb_matmul_backward_input(float *dinp, const float *dout,
                              const float *weight, int N, int C, int OC) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, C, OC, 1.0f, dout,
                OC, weight, C, 1.0f, dinp, C);
}

/* dbias[OC] += sum over n of dout[n, :], summed in row order. Serial on
 * purpose (see the top of the file); it is N*OC adds next to the GEMM's
 * N*C*OC multiply-adds. */
static void bias_backward(float *dbias, const float *dout, int N, int OC) {
    for (int o0 = 0; o0 < OC; o0 += ZB_COLS_PER_BLOCK) {
        int o1 = o0 + ZB_COLS_PER_BLOCK < OC ? o0 + ZB_COLS_PER_BLOCK : OC;
        float acc[ZB_COLS_PER_BLOCK] = {0}; /* [o1 - o0] */
        for (int n = 0; n < N; n++) {
            const float *dout_n = dout + (size_t)n * OC; /* [OC] */
            for (int o = o0; o < o1; o++) acc[o - o0] += dout_n[o];
        }
        for (int o = o0; o < o1; o++) dbias[o] += acc[o - o0];
    }
}

/* W: dweight[OC, C] += dout[N, OC]^T @ inp[N, C]; dbias[OC] += colsum(dout) */
void zb_matmul_backward_weight(float *dweight, float *dbias, const float *dout,
                               const float *inp, int N, int C, int OC) {
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, OC, C, N, 1.0f, dout,
                OC, inp, C, 1.0f, dweight, C);
    if (dbias) bias_backward(dbias, dout, N, OC);
}

/* The reference: one dot product per output, summed in order. */
void zb_matmul_forward_ref(float *out, const float *inp, const float *weight,
                           const float *bias, int N, int C, int OC) {
    for (int n = 0; n < N; n++) {
        const float *inp_n = inp + (size_t)n * C; /* [C] */
        for (int o = 0; o < OC; o++) {
            const float *w_o = weight + (size_t)o * C; /* [C] */
            float val = bias ? bias[o] : 0.0f;
            for (int c = 0; c < C; c++) val += inp_n[c] * w_o[c];
            out[(size_t)n * OC + o] = val;
        }
    }
}
