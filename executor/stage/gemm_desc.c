/* gemm_desc.c - the row-major GEMM descriptor's column-major call and its
 * checks, see gemm_desc.h. */
#include "executor/stage/gemm_desc.h"

#include <stdint.h>

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
    out->ab_type = g->ab_type;
    out->c_type = g->c_type;
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

static bool aligned(const void *p) {
    return (uintptr_t)p % ZB_LT_PTR_ALIGN == 0;
}

/* The rules are cuBLASLt's (cublasLt.h, CUDA 13.0): the bias vector's
 * length is the number of rows of D and it is packed
 * (CUBLASLT_EPILOGUE_BIAS); the GELU input matrix (aux) has a leading
 * dimension divisible by 8 and no less than the rows of D
 * (CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD); aux holds D's type; the
 * bias is fp32 (with bf16 D the call sets its data type). Batched epilogues (bias and aux batch strides) are never
 * asked by the stage and fall back. */
void zb_gemm_lt_plan(const zb_gemm *g, zb_gemm_lt *out) {
    *out = (zb_gemm_lt){.epi = ZB_LT_NONE};
    zb_gemm_colmajor(g, &out->cm);
    if (!g->bias) {
        out->why = g->gelu_out ? "GELU without bias" : "no bias";
        return;
    }
    if (g->batch != 1) { out->why = "bias with batch > 1"; return; }
    if (g->M == 0 || g->N == 0 || g->K == 0) { out->why = "empty"; return; }
    if (!aligned(g->bias)) { out->why = "bias not 16-byte aligned"; return; }
    out->bias = g->bias;
    if (!g->gelu_out) {
        out->epi = ZB_LT_BIAS;
        out->D = g->C;
        return;
    }
    if (g->ldc % 8 != 0) { out->why = "GELU aux ld not a multiple of 8"; return; }
    if (!aligned(g->C) || !aligned(g->gelu_out)) {
        out->why = "GELU output not 16-byte aligned";
        return;
    }
    out->epi = ZB_LT_GELU_AUX_BIAS;
    out->D = g->gelu_out;
    out->aux = g->C;
    out->aux_ld = g->ldc; /* = N = m, zb_gemm_check */
}
