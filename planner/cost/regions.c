/* regions.c - see cost/regions.h. Mirrors the pass programs of
 * executor/stage/gpt_passes.c on the CPU ops (executor/stage/ops_cpu.c) and
 * the thresholds of the kernels they call; change both together. */
#include "planner/cost/regions.h"

#include "kernels/parallel.h"

#define GEMM_ROWS 64        /* kernels/matmul.c ZB_GEMM_ROWS */
#define COLSUM_COLS 64      /* kernels/matmul.c ZB_COLS_PER_BLOCK */
#define RESIDUAL_MIN (1 << 16) /* ops_cpu.c ZB_OMP_MIN_ELEMS */

static double worth(double work) { return work >= ZB_OMP_MIN_WORK ? 1 : 0; }

/* zb_sgemm_blocked: C[M x N] += A[M x K] B[K x N], blocks of rows of C */
static double gemm(double M, double N, double K) {
    return M > GEMM_ROWS ? worth(M * N * K) : 0;
}

/* zb_colsum_add over [rows x cols]: blocks of columns */
static double colsum(double rows, double cols) {
    return cols > COLSUM_COLS ? worth(rows * cols) : 0;
}

bool zb_cpu_gemm_region(double M, double N, double K) { return gemm(M, N, K) > 0; }
bool zb_cpu_loop_region(double work) { return worth(work) > 0; }
bool zb_cpu_colsum_region(double rows, double cols) { return colsum(rows, cols) > 0; }
bool zb_cpu_residual_region(double elems) { return elems >= RESIDUAL_MIN; }

zb_regions zb_cpu_regions_block(int b, int s, int h, int f, int a, int t) {
    double N = (double)b * s, C = h, Cl = (double)h / t, Fl = (double)f / t;
    double nc = worth(N * C), attn = worth((double)b * s * s * Cl);
    double resid = N * C >= RESIDUAL_MIN ? 1 : 0;
    zb_regions r;
    /* LN1, QKV, attention, proj, residual, LN2, fc1, GELU, fc2, residual */
    r.f = nc + gemm(N, 3 * Cl, C) + attn + gemm(N, C, Cl) + resid + nc +
          gemm(N, Fl, C) + worth(N * Fl) + gemm(N, C, Fl) + resid;
    /* fc2, GELU, fc1, LN2, proj, attention, QKV, LN1 input gradients */
    r.b = gemm(N, Fl, C) + worth(N * Fl) + gemm(N, C, Fl) + nc +
          gemm(N, Cl, C) + attn + gemm(N, C, 3 * Cl) + nc;
    /* dW = dY^T X ([OC x C] over N rows) and the bias column sums of fc2,
     * fc1, proj and QKV; the two LayerNorms' gamma/beta */
    r.w = gemm(C, Fl, N) + colsum(N, C) + gemm(Fl, C, N) + colsum(N, Fl) +
          gemm(C, Cl, N) + colsum(N, C) + gemm(3 * Cl, C, N) +
          colsum(N, 3 * Cl) + 2 * nc;
    return r;
}

zb_regions zb_cpu_regions_embed(int b, int s, int h) {
    double nc = worth((double)b * s * h);
    /* F: token rows, then the position rows; W: both tables' gradients */
    return (zb_regions){.f = 2 * nc, .b = 0, .w = 2 * nc};
}

zb_regions zb_cpu_regions_head(int b, int s, int h, int V, int t) {
    double N = (double)b * s, C = h, Vl = (double)((V + t - 1) / t);
    double nc = worth(N * C), nv = worth(N * Vl);
    /* F: LN, logits GEMM, row max, sum(exp) and target, dlogits;
     * B: input gradient GEMM, LN; W: weight gradient GEMM, LN gamma/beta */
    return (zb_regions){.f = nc + gemm(N, Vl, C) + 3 * nv,
                        .b = gemm(N, C, Vl) + nc,
                        .w = gemm(Vl, C, N) + nc};
}
