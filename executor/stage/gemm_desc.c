/* gemm_desc.c - the row-major GEMM descriptor's column-major call and its
 * checks, see gemm_desc.h. */
#include "executor/stage/gemm_desc.h"

void zb_gemm_colmajor(const zb_gemm *g, zb_gemm_cm *out) {
    /* C^T[N, M] = op(B)^T[N, K] op(A)^T[K, M], each stored as given */
    out->m = g->N;
    out->n = g->M;
    out->k = g->K;
    out->transa = g->tb;
    out->A = g->B;
    out->lda = g->ldb;
    out->sa = g->sb;
    out->transb = g->ta;
    out->B = g->A;
    out->ldb = g->lda;
    out->sb = g->sa;
    out->C = g->C;
    out->ldc = g->ldc;
    out->sc = g->sc;
    out->batch = g->batch;
    out->alpha = g->alpha;
    out->beta = g->beta;
}

const char *zb_gemm_check(const zb_gemm *g) {
    if (g->M < 0 || g->N < 0 || g->K < 0) return "negative size";
    if (g->batch < 1) return "batch < 1";
    int acols = g->ta ? g->M : g->K, bcols = g->tb ? g->K : g->N;
    if (g->lda < (acols > 1 ? acols : 1)) return "lda below the row length of A";
    if (g->ldb < (bcols > 1 ? bcols : 1)) return "ldb below the row length of B";
    if (g->ldc < (g->N > 1 ? g->N : 1)) return "ldc below N";
    if (g->bias && g->beta != 0.0f) return "bias with beta != 0";
    if (g->gelu_out && g->ldc != g->N) return "GELU epilogue with ldc != N";
    return 0;
}
