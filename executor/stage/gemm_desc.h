/* gemm_desc.h - one GEMM as the stage program describes it (row-major),
 * and its translation to a column-major BLAS call (cuBLAS's convention).
 *
 * Row-major, per batch b in [0, batch):
 *   C_b[M, N] = alpha * op(A_b)[M, K] * op(B_b)[K, N] + beta * C_b
 * op(A) = A when !ta (A stored [M, K], lda >= K), A^T when ta (A stored
 * [K, M], lda >= M); the same for B with [K, N] / [N, K] and ldb; C stored
 * [M, N] with ldc >= N. X_b = X + b * sX (strides in elements).
 * Storage types: A and B hold ab_type elements (both the same), C and
 * gelu_out c_type elements; bias is always fp32; the products are summed
 * in fp32 whatever the storage (zero-initialised descriptors are fp32).
 * Epilogue (optional, in this order): bias [N] added to every row of C
 * (then beta must be 0: C = alpha op(A) op(B) + bias); gelu_out [M, N]
 * = GELU(C) (ldc must be N), C keeping the pre-activation (what B needs).
 *
 * A row-major [R, S] matrix with leading dimension ld is, bit for bit, the
 * column-major [S, R] matrix with the same ld, its transpose. So the
 * row-major product C = op(A) op(B) is the column-major product
 * C^T = op(B)^T op(A)^T: swap the operands, keep each one's transpose
 * flag, m = N, n = M, k = K. zb_gemm_colmajor does exactly that and
 * nothing else; it is pure (no CUDA), tested on the CPU against
 * cblas_sgemm(CblasColMajor, ...) in tests/unit/test_gemm_desc.c.
 * zb_gemm_lt_plan (below) maps the bias/GELU epilogue onto cuBLASLt's,
 * also pure, tested in tests/unit/test_gemm_lt.c.
 */
#ifndef ZB_STAGE_GEMM_DESC_H
#define ZB_STAGE_GEMM_DESC_H

#include <stdbool.h>

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Element types of backend tensors: fp32, or bf16 (1 sign, 8 exponent, 7
 * mantissa bits; the top half of an fp32, kernels/bf16.h). */
typedef enum { ZB_DT_F32 = 0, ZB_DT_BF16 = 1 } zb_dtype;

static inline size_t zb_dtype_bytes(zb_dtype t) {
    return t == ZB_DT_BF16 ? 2 : 4;
}

typedef struct {
    int M, N, K;
    bool ta, tb;
    const void *A;
    int lda;
    const void *B;
    int ldb;
    void *C;
    int ldc;
    int batch;                 /* >= 1 */
    long long sa, sb, sc;      /* batch strides, elements */
    float alpha, beta;
    const float *bias;         /* [N] or NULL */
    void *gelu_out;            /* [M, N] or NULL */
    zb_dtype ab_type;          /* of A and B */
    zb_dtype c_type;           /* of C and gelu_out */
} zb_gemm;

/* A column-major call: C[m, n] = alpha op(A)[m, k] op(B)[k, n] + beta C,
 * transa/transb 1 for the transpose; per batch with the strides. */
typedef struct {
    int transa, transb;
    int m, n, k;
    const void *A;
    int lda;
    long long sa;
    const void *B;
    int ldb;
    long long sb;
    void *C;
    int ldc;
    long long sc;
    int batch;
    float alpha, beta;
    zb_dtype ab_type, c_type; /* cuBLAS: Atype = Btype, Ctype; fp32 compute */
} zb_gemm_cm;

/* The column-major call computing g's product (not its epilogue). */
void zb_gemm_colmajor(const zb_gemm *g, zb_gemm_cm *out);

/* The bias/GELU epilogue in the GEMM itself (cuBLASLt's
 * CUBLASLT_EPILOGUE_BIAS / CUBLASLT_EPILOGUE_GELU_AUX_BIAS), or why not.
 * After zb_gemm_colmajor's swap D = C^T is column-major [m = N, n = M]
 * with ld ldc, and C[i, j] = D(j, i): the row-major bias over output
 * columns, bias[j] added to C[i, j] for every row i, is the bias over D's
 * rows, one value per row of D broadcast over its columns, exactly
 * cuBLASLt's bias vector (length = rows of D = m, packed). With GELU,
 * D = GELU(alpha op(A) op(B) + bias) goes to gelu_out and the epilogue's
 * aux output, the pre-activation, to C (both with ld N = m). */
typedef enum {
    ZB_LT_NONE = 0,      /* no epilogue in the GEMM: `why` says why */
    ZB_LT_BIAS,          /* D = C, bias per row of D */
    ZB_LT_GELU_AUX_BIAS, /* D = gelu_out, aux = C (pre-GELU), ld aux_ld */
} zb_lt_epilogue;

typedef struct {
    zb_lt_epilogue epi;
    const char *why;     /* ZB_LT_NONE: static text; else NULL */
    zb_gemm_cm cm;       /* the product; with epi, beta 0 and batch 1 */
    const float *bias;   /* [cm.m], fp32 (CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE
                            CUDA_R_32F when D is bf16) */
    void *D;             /* epilogue output, ld cm.ldc, cm.c_type */
    void *aux;           /* GELU_AUX_BIAS: pre-GELU output, ld aux_ld,
                            cm.c_type */
    long long aux_ld;
} zb_gemm_lt;

/* Minimum alignment (bytes) of the bias and aux pointers for the
 * epilogue; smaller falls back. */
#define ZB_LT_PTR_ALIGN 16

/* Map a well-formed g (zb_gemm_check) to the epilogue call, or to
 * ZB_LT_NONE (no bias; batch > 1; K = 0; an empty product; a bias or aux
 * pointer below ZB_LT_PTR_ALIGN; GELU's aux ld not a multiple of 8). */
void zb_gemm_lt_plan(const zb_gemm *g, zb_gemm_lt *out);

/* NULL when g is well formed (sizes >= 0, batch >= 1, leading dimensions
 * large enough, beta 0 with a bias), else what is wrong (static text). */
const char *zb_gemm_check(const zb_gemm *g);

#ifdef __cplusplus
}
#endif

#endif
