/* matmul.c - linear layer through OpenBLAS, see matmul.h.
 *
 * All matrices are row-major:
 *   inp [N, C], weight [OC, C], bias [OC], out/dout [N, OC]
 * Threads: one pool, OpenMP's. OpenBLAS is kept single-threaded
 * (zb_blas_single_threaded, parallel.h): its own pthread pool spun in
 * sched_yield beside the OpenMP team and took over half the samples of a
 * 2-thread run (perf). Each GEMM is cut here into blocks of ZB_GEMM_ROWS
 * output rows, one single-threaded cblas_sgemm per block, the blocks spread
 * over the OpenMP team.
 * Reproducibility: the blocks depend on the shapes only, never on the
 * thread count, and each output element belongs to one block, so results
 * repeat bit for bit for any number of threads (tests/unit/test_kernels.c).
 */
#include "kernels/matmul.h"

#include <cblas.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "kernels/parallel.h"

/* Output rows per GEMM block: small enough that the tiny model's
 * 128-row microbatches give every one of 2 threads a block, large enough
 * that OpenBLAS's packing of the other operand stays a small overhead. */
#ifndef ZB_GEMM_ROWS   /* -DZB_GEMM_ROWS=huge: one block (benchmarks only) */
#define ZB_GEMM_ROWS 64
#endif

/* Columns per block when summing dout over rows: the partial sums of a
 * block stay in registers while the rows stream past. */
#define ZB_COLS_PER_BLOCK 64

/* openblas_set_num_threads is OpenBLAS's own entry point (not in every
 * cblas.h); a second caller racing the first sets the same value. */
void openblas_set_num_threads(int n);
void zb_blas_single_threaded(void) {
    static int done;
    if (__atomic_load_n(&done, __ATOMIC_ACQUIRE)) return;
    openblas_set_num_threads(1);
    __atomic_store_n(&done, 1, __ATOMIC_RELEASE);
}

static int n_blocks(int rows) { return (rows + ZB_GEMM_ROWS - 1) / ZB_GEMM_ROWS; }
static int block_rows(int blk, int rows) {
    int left = rows - blk * ZB_GEMM_ROWS;
    return left < ZB_GEMM_ROWS ? left : ZB_GEMM_ROWS;
}

/* C[M, N] = alpha op(A) op(B) + beta C (row-major, matmul.h), by blocks of
 * ZB_GEMM_ROWS rows of C, one single-threaded cblas_sgemm per block. */
void zb_sgemm_blocked(bool ta, bool tb, int M, int N, int K, float alpha,
                      const float *A, int lda, const float *B, int ldb,
                      float beta, float *C, int ldc) {
    zb_blas_single_threaded();
    int nb = n_blocks(M);
    size_t work = (size_t)M * N * K;
#pragma omp parallel for schedule(static) if (nb > 1 && ZB_OMP_WORTH(work))
    for (int blk = 0; blk < nb; blk++) {
        int r0 = blk * ZB_GEMM_ROWS, rows = block_rows(blk, M);
        /* rows r0.. of op(A): rows of A, or columns of A when transposed */
        const float *a = ta ? A + r0 : A + (size_t)r0 * lda;
        cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
                    tb ? CblasTrans : CblasNoTrans, rows, N, K, alpha, a, lda,
                    B, ldb, beta, C + (size_t)r0 * ldc, ldc);
    }
}

/* dbias[o0..o1) += sum over n of dout[n, o0..o1), summed in row order. */
static void bias_backward(float *dbias, const float *dout, int N, int OC,
                          int o0, int o1) {
    for (int c0 = o0; c0 < o1; c0 += ZB_COLS_PER_BLOCK) {
        int c1 = c0 + ZB_COLS_PER_BLOCK < o1 ? c0 + ZB_COLS_PER_BLOCK : o1;
        float acc[ZB_COLS_PER_BLOCK] = {0}; /* [c1 - c0] */
        for (int n = 0; n < N; n++) {
            const float *dout_n = dout + (size_t)n * OC; /* [OC] */
            for (int o = c0; o < c1; o++) acc[o - c0] += dout_n[o];
        }
        for (int o = c0; o < c1; o++) dbias[o] += acc[o - c0];
    }
}

/* dbias[OC] += column sums of dout[N, OC], blocks of columns over the team */
void zb_colsum_add(float *dbias, const float *dout, int N, int OC) {
    int nb = (OC + ZB_COLS_PER_BLOCK - 1) / ZB_COLS_PER_BLOCK;
    size_t work = (size_t)N * OC;
#pragma omp parallel for schedule(static) if (nb > 1 && ZB_OMP_WORTH(work))
    for (int blk = 0; blk < nb; blk++) {
        int o0 = blk * ZB_COLS_PER_BLOCK;
        int o1 = o0 + ZB_COLS_PER_BLOCK < OC ? o0 + ZB_COLS_PER_BLOCK : OC;
        bias_backward(dbias, dout, N, OC, o0, o1);
    }
}

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
    zb_sgemm_blocked(false, true, N, OC, C, 1.0f, inp, C, weight, C, beta,
                     out, OC);
}

/* B: dinp[N, C] += dout[N, OC] @ weight[OC, C], by blocks of rows of N */
void zb_matmul_backward_input(float *dinp, const float *dout,
                              const float *weight, int N, int C, int OC) {
    zb_sgemm_blocked(false, false, N, C, OC, 1.0f, dout, OC, weight, C, 1.0f,
                     dinp, C);
}

/* W: dweight[OC, C] += dout[N, OC]^T @ inp[N, C]; dbias[OC] += colsum(dout),
 * by blocks of rows of dweight (columns of dout) */
void zb_matmul_backward_weight(float *dweight, float *dbias, const float *dout,
                               const float *inp, int N, int C, int OC) {
    zb_sgemm_blocked(true, false, OC, C, N, 1.0f, dout, OC, inp, C, 1.0f,
                     dweight, C);
    if (dbias) zb_colsum_add(dbias, dout, N, OC);
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
