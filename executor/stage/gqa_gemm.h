/* gqa_gemm.h - grouped-query attention as batched GEMMs around the causal
 * softmax: the descriptors (gemm_desc.h) the CUDA op table runs
 * (ops_cuda.cu: gqa_fwd, gqa_bwd), pure so that a CPU test runs the very
 * same descriptors through the CPU gemm and the CPU softmax and compares
 * them with kernels/attention.c (tests/unit/test_llama_ops.c).
 *   qkv, dqkv [B, T, ld], ld = C + 2 KVH hs: q (C), k (KVH hs), v
 *   out, dout [B, T, C]; P, dS [B, NH, T, T]; all of element type `at`
 * Query head h = kv G + g (G = NH / KVH) reads kv head kv. For one batch
 * row b and one member g of every group, the KVH heads kv = 0..KVH-1 are
 * one strided batch: q, out, dout and the [T, T] matrices step G heads,
 * k and v one head. With G = 1 that is the whole row's NH heads.
 * Forward:  S = scale q k^T (ZB_GQA_SCORES) -> causal softmax -> P;
 *           out = P v (ZB_GQA_OUT).
 * Backward: dP = dout v^T (ZB_GQA_DP, into dS) -> softmax backward -> dS;
 *           dq = scale dS k (ZB_GQA_DQ, =); dk = scale dS^T q and
 *           dv = P^T dout (ZB_GQA_DK, ZB_GQA_DV) summed over g in order:
 *           beta 0 for g = 0, then 1, so every element of dqkv is written.
 */
#ifndef ZB_STAGE_GQA_GEMM_H
#define ZB_STAGE_GQA_GEMM_H

#include <math.h>
#include <string.h>

#include "executor/stage/gemm_desc.h"

typedef struct {
    int T, C, NH, KVH, G, hs, ld;
    long long TT;
    zb_dtype at; /* element type of every operand */
} zb_gqa_geo;

/* NULL, or what is wrong with the shape. */
static inline const char *zb_gqa_geo_init(zb_gqa_geo *q, int T, int C, int NH,
                                          int KVH, zb_dtype at) {
    if (T < 1 || NH < 1 || KVH < 1 || C % NH || NH % KVH)
        return "the heads must divide the width and the key/value heads the "
               "heads";
    q->T = T, q->C = C, q->NH = NH, q->KVH = KVH, q->G = NH / KVH;
    q->hs = C / NH;
    q->ld = C + 2 * KVH * q->hs;
    q->TT = (long long)T * T;
    q->at = at;
    return NULL;
}

enum { ZB_GQA_SCORES, ZB_GQA_OUT, ZB_GQA_DP, ZB_GQA_DQ, ZB_GQA_DK,
       ZB_GQA_DV };

/* The operands: qkv, dout and P are read; S (scores / P in F, dP / dS in
 * B), out and dqkv written. */
typedef struct {
    const void *qkv, *dout, *P;
    void *S, *out, *dqkv;
} zb_gqa_bufs;

/* p + n elements of type at */
static inline void *zb_gqa_at(const zb_gqa_geo *q, const void *p, size_t n) {
    return (char *)p + n * zb_dtype_bytes(q->at);
}

static inline zb_gemm zb_gqa_op(const zb_gqa_geo *q, bool ta, bool tb,
                                int M, int N, int K, float alpha,
                                const void *A, int lda, long long sa,
                                const void *B, int ldb, long long sb,
                                float beta, void *C, int ldc, long long sc) {
    zb_gemm g;
    memset(&g, 0, sizeof g); /* no bias, no GELU (C and C++ alike) */
    g.M = M, g.N = N, g.K = K, g.ta = ta, g.tb = tb;
    g.A = A, g.lda = lda, g.sa = sa;
    g.B = B, g.ldb = ldb, g.sb = sb;
    g.C = C, g.ldc = ldc, g.sc = sc;
    g.batch = q->KVH, g.alpha = alpha, g.beta = beta;
    g.ab_type = g.c_type = q->at;
    return g;
}

/* GEMM `which` of batch row b, group member g. */
static inline zb_gemm zb_gqa_gemm(const zb_gqa_geo *q, int which, int b,
                                  int g, const zb_gqa_bufs *x) {
    int T = q->T, C = q->C, hs = q->hs, ld = q->ld;
    float scale = 1.0f / sqrtf((float)hs), beta = g ? 1.0f : 0.0f;
    size_t row = (size_t)b * T * ld, kvc = (size_t)q->KVH * hs;
    size_t mat = ((size_t)b * q->NH + g) * (size_t)q->TT;
    long long sq = (long long)q->G * hs, sm = q->G * q->TT;
    const void *qh = zb_gqa_at(q, x->qkv, row + (size_t)g * hs);
    const void *k = zb_gqa_at(q, x->qkv, row + C);
    const void *v = zb_gqa_at(q, x->qkv, row + C + kvc);
    const void *dy = zb_gqa_at(q, x->dout, (size_t)b * T * C + (size_t)g * hs);
    void *S = zb_gqa_at(q, x->S, mat);
    switch (which) {
    case ZB_GQA_SCORES:
        return zb_gqa_op(q, false, true, T, T, hs, scale, qh, ld, sq, k, ld,
                         hs, 0.0f, S, T, sm);
    case ZB_GQA_OUT:
        return zb_gqa_op(q, false, false, T, hs, T, 1.0f,
                         zb_gqa_at(q, x->P, mat), T, sm, v, ld, hs, 0.0f,
                         zb_gqa_at(q, x->out, (size_t)b * T * C +
                                                  (size_t)g * hs),
                         C, sq);
    case ZB_GQA_DP:
        return zb_gqa_op(q, false, true, T, T, hs, 1.0f, dy, C, sq, v, ld, hs,
                         0.0f, S, T, sm);
    case ZB_GQA_DQ:
        return zb_gqa_op(q, false, false, T, hs, T, scale, S, T, sm, k, ld, hs,
                         0.0f, zb_gqa_at(q, x->dqkv, row + (size_t)g * hs),
                         ld, sq);
    case ZB_GQA_DK:
        return zb_gqa_op(q, true, false, T, hs, T, scale, S, T, sm, qh, ld, sq,
                         beta, zb_gqa_at(q, x->dqkv, row + C), ld, hs);
    default: /* ZB_GQA_DV */
        return zb_gqa_op(q, true, false, T, hs, T, 1.0f,
                         zb_gqa_at(q, x->P, mat), T, sm, dy, C, sq, beta,
                         zb_gqa_at(q, x->dqkv, row + C + kvc), ld, hs);
    }
}

#endif
