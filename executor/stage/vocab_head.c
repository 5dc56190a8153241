/* vocab_head.c - the S and T passes of a vocabulary shard of the output
 * layer, see vocab_head.h. The GEMMs are the head's of gpt_passes.c
 * (row-major descriptors, fp32 sums); the statistics are crossentropy.h's
 * pieces with the shard's own max (online softmax), so a shard that holds
 * the whole vocabulary computes exactly the unsharded statistics.
 */
#include "executor/stage/vocab_head.h"

#define OP(name, ...) ZB_TRY(o->name(o->ctx, __VA_ARGS__, err))

static int ld1(int n) { return n > 0 ? n : 1; }

/* C[M, N] (type ct) = alpha op(A) op(B) + beta C, A and B act */
static zb_status gemm(const zb_ops *o, int M, int N, int K, bool ta, bool tb,
                      const void *A, int lda, const void *B, int ldb, void *C,
                      int ldc, float beta, zb_dtype ct, zb_err *err) {
    zb_gemm g = {.M = M, .N = N, .K = K, .ta = ta, .tb = tb, .A = A,
                 .lda = ld1(lda), .B = B, .ldb = ld1(ldb), .C = C,
                 .ldc = ld1(ldc), .batch = 1, .alpha = 1.0f, .beta = beta,
                 .ab_type = o->act_dtype, .c_type = ct};
    return o->gemm(o->ctx, &g, err);
}

/* The paper's one-barrier extra: P = exp(Y - m) in dlogits, A = P W, G =
 * the targets' rows of W (0 outside the shard). */
static zb_status s_input_grad(const zb_ops *o, const zb_vocab_shard *v,
                              zb_err *err) {
    int N = v->N, C = v->C;
    OP(vocab_exp, v->dlogits, v->logits, v->local, N, v->Vl, v->ld);
    ZB_TRY(gemm(o, N, C, v->Vl, false, false, v->dlogits, v->ld, v->W, C,
                v->A, C, 0.0f, ZB_DT_F32, err));
    OP(embed_tokens, v->G, v->targets, v->Wf, v->v0, v->Vl, N, C);
    return ZB_OK;
}

zb_status zb_vocab_s(const zb_ops *o, const zb_vocab_shard *v, int variant,
                     zb_err *err) {
    int N = v->N;
    double *m = v->local, *s = m + N, *zt = s + N;
    ZB_TRY(gemm(o, N, v->Vl, v->C, false, true, v->X, v->C, v->W, v->C,
                v->logits, v->ld, 0.0f, o->act_dtype, err));
    OP(ce_max, m, v->logits, N, v->Vl, v->ld);
    OP(ce_stats, s, zt, v->logits, m, v->targets, v->v0, N, v->Vl, v->ld);
    return variant == 2 ? s_input_grad(o, v, err) : ZB_OK;
}

zb_status zb_vocab_combine(const zb_ops *o, const zb_vocab_shard *v,
                           const double *tab, int p, zb_err *err) {
    OP(vocab_combine, v->global, tab, p, v->N);
    return ZB_OK;
}

zb_status zb_vocab_dx2(const zb_ops *o, const zb_vocab_shard *v, float scale,
                       float *dx, zb_err *err) {
    OP(vocab_dx, dx, v->A, v->G, v->local, v->global, scale, v->N, v->C);
    return ZB_OK;
}

zb_status zb_vocab_t(const zb_ops *o, const zb_vocab_shard *v, int variant,
                     float scale, double *acc, float *losses, float *dx,
                     zb_err *err) {
    int N = v->N, C = v->C;
    const double *M = v->global, *S = M + N, *Zt = S + N;
    if (acc) OP(ce_loss, acc, losses, M, S, Zt, N);
    OP(ce_bwd, v->dlogits, v->logits, M, S, v->targets, v->v0, scale, N,
       v->Vl, v->ld);
    if (variant == 1)
        ZB_TRY(gemm(o, N, C, v->Vl, false, false, v->dlogits, v->ld, v->W, C,
                    dx, C, 0.0f, ZB_DT_F32, err));
    return gemm(o, v->Vl, C, N, true, false, v->dlogits, v->ld, v->X, C,
                v->dW, C, 1.0f, ZB_DT_F32, err);
}
