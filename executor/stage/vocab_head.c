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

/* ==== the stage's vocabulary shard (gpt.h zb_gpt_vocab, stage.h) ====
 * Host memory, summed with plain loops in rank order: the cpu backend
 * only, fp32 activations (zb_gpt_vocab_new refuses anything else). */
#include <stdlib.h>
#include <string.h>

#include "common/zb_lower.h"
#include "executor/stage/gpt.h"

#define OP2(name, ...) ZB_TRY(st->ops.name(st->ops.ctx, __VA_ARGS__, err))

static size_t nc(const zb_stage *st) { return (size_t)st->N * st->C; }

static zb_status vocab_check(const zb_stage *st, zb_err *err) {
    if (st->cfg.backend != ZB_BACKEND_CPU || st->es != sizeof(float))
        return zb_fail(err, ZB_EINPUT, "vocabulary parallelism runs on the "
                       "cpu backend with fp32 activations only");
    if (st->tp != 1 || st->plan->sched.placement == ZB_PLACE_DUAL)
        return zb_fail(err, ZB_EINPUT, "vocabulary parallelism runs with tp 1 "
                       "and without placement dual only");
    return ZB_OK;
}

/* Where the pieces live: ranks of vstage 0 and the last, the shard. */
static void vocab_where(zb_stage *st, zb_gpt_vocab *vp) {
    const zb_plan *p = st->plan;
    int chunk;
    vp->variant = p->vocab_parallel;
    vp->p = p->pp;
    vp->me = st->cfg.pp_rank;
    zb_vstage_owner(&p->sched, 0, &vp->E, &chunk);
    zb_vstage_owner(&p->sched, p->pp * p->v - 1, &vp->L, &chunk);
    vp->wte = st->pt.vocab_wte;
    vp->head = st->pt.vocab_head;
    vp->v0 = st->pt.vocab_row0;
    vp->Vl = st->pt.t[vp->wte].rows;
    vp->ld = vp->Vl > 0 ? vp->Vl : 1;
}

static void *calloc_or(size_t n, size_t sz, bool *ok, zb_err *err) {
    void *p = zb_calloc(n ? n : 1, sz, err);
    if (!p) *ok = false;
    return p;
}

zb_status zb_gpt_vocab_new(zb_stage *st, zb_err *err) {
    if (!st->plan->vocab_parallel) return ZB_OK;
    ZB_TRY(vocab_check(st, err));
    zb_gpt_vocab *vp = zb_calloc(1, sizeof *vp, err);
    if (!vp) return ZB_ENOMEM;
    st->vp = vp;
    vocab_where(st, vp);
    size_t m = (size_t)st->m, p = (size_t)vp->p, N = (size_t)st->N;
    size_t NC = nc(st), NV = N * (size_t)vp->ld;
    bool ok = true, v2 = vp->variant == 2;
    vp->emb = calloc_or(m * p * NC, sizeof(float), &ok, err);
    vp->x = calloc_or(m * NC, sizeof(float), &ok, err);
    vp->logits = calloc_or(m * NV, sizeof(float), &ok, err);
    vp->dlogits = calloc_or(m * NV, sizeof(float), &ok, err);
    vp->local = calloc_or(m * 3 * N, sizeof(double), &ok, err);
    vp->global = calloc_or(m * 3 * N, sizeof(double), &ok, err);
    vp->tab = calloc_or(m * p * 3 * N, sizeof(double), &ok, err);
    vp->A = v2 ? calloc_or(m * NC, sizeof(float), &ok, err) : NULL;
    vp->G = v2 ? calloc_or(m * NC, sizeof(float), &ok, err) : NULL;
    vp->dx = calloc_or(m * p * NC, sizeof(float), &ok, err);
    vp->demb = calloc_or(m * NC, sizeof(float), &ok, err);
    vp->tok = calloc_or(m * N, sizeof(int), &ok, err);
    vp->tgt = calloc_or(m * N, sizeof(int), &ok, err);
    return ok ? ZB_OK : ZB_ENOMEM;
}

void zb_gpt_vocab_free(zb_stage *st) {
    zb_gpt_vocab *vp = st->vp;
    if (!vp) return;
    free(vp->emb);
    free(vp->x);
    free(vp->logits);
    free(vp->dlogits);
    free(vp->local);
    free(vp->global);
    free(vp->tab);
    free(vp->A);
    free(vp->G);
    free(vp->dx);
    free(vp->demb);
    free(vp->tok);
    free(vp->tgt);
    free(vp);
    st->vp = NULL;
}

static float *emb_of(const zb_stage *st, int mb, int r) {
    return st->vp->emb + ((size_t)mb * st->vp->p + (size_t)r) * nc(st);
}
static float *dx_of(const zb_stage *st, int mb, int r) {
    return st->vp->dx + ((size_t)mb * st->vp->p + (size_t)r) * nc(st);
}
static zb_act *act_of(const zb_stage *st, zb_act *base, int mb) {
    return zb_gpt_act_at(st, base, (size_t)mb * nc(st));
}

/* The shard's view of microbatch mb. */
static void shard_of(zb_stage *st, int mb, zb_vocab_shard *v) {
    zb_gpt_vocab *vp = st->vp;
    size_t N = (size_t)st->N, NV = N * (size_t)vp->ld;
    const zb_ptensor *w = &st->pt.t[vp->head];
    *v = (zb_vocab_shard){
        .N = st->N, .C = st->C, .v0 = vp->v0, .Vl = vp->Vl, .ld = vp->ld,
        .X = act_of(st, vp->x, mb),
        .W = zb_gpt_act_at(st, st->wlow, w->off), .Wf = st->params + w->off,
        .dW = st->grads + w->off, .targets = vp->tgt + (size_t)mb * N,
        .logits = zb_gpt_act_at(st, vp->logits, (size_t)mb * NV),
        .dlogits = zb_gpt_act_at(st, vp->dlogits, (size_t)mb * NV),
        .local = vp->local + (size_t)mb * 3 * N,
        .global = vp->global + (size_t)mb * 3 * N,
        .A = vp->A ? vp->A + (size_t)mb * nc(st) : NULL,
        .G = vp->G ? vp->G + (size_t)mb * nc(st) : NULL};
}

static zb_status bad_mb(const zb_stage *st, int mb, const char *what,
                        zb_err *err) {
    if (!st->vp)
        return zb_fail(err, ZB_ERUNTIME, "%s: the plan has no vocabulary "
                       "parallelism", what);
    if (mb < 0 || mb >= st->m)
        return zb_fail(err, ZB_ERUNTIME, "%s: mb %d out of range (m=%d)",
                       what, mb, st->m);
    return ZB_OK;
}

zb_status zb_gpt_vocab_s(zb_stage *st, int mb, const int *targets,
                         zb_err *err) {
    ZB_TRY(bad_mb(st, mb, "S", err));
    if (!targets) return zb_fail(err, ZB_ERUNTIME, "S needs targets");
    size_t N = (size_t)st->N;
    for (size_t i = 0; i < N; i++)
        if (targets[i] < 0 || targets[i] >= st->V)
            return zb_fail(err, ZB_ERUNTIME, "targets[%zu] = %d outside the "
                           "vocabulary [0, %d)", i, targets[i], st->V);
    memcpy(st->vp->tgt + (size_t)mb * N, targets, N * sizeof(int));
    zb_vocab_shard v;
    shard_of(st, mb, &v);
    return zb_vocab_s(&st->ops, &v, st->vp->variant, err);
}

/* T: variant 1 combines the gathered statistics first (variant 2 did in
 * DX2); the loss is counted once, on the last stage's rank. */
zb_status zb_gpt_vocab_t(zb_stage *st, int mb, float scale, zb_err *err) {
    ZB_TRY(bad_mb(st, mb, "T", err));
    zb_gpt_vocab *vp = st->vp;
    zb_vocab_shard v;
    shard_of(st, mb, &v);
    size_t tab = (size_t)mb * vp->p * 3 * st->N;
    if (vp->variant == 1)
        ZB_TRY(zb_vocab_combine(&st->ops, &v, vp->tab + tab, vp->p, err));
    return zb_vocab_t(&st->ops, &v, vp->variant, scale,
                      vp->me == vp->L ? &st->acc[0] : NULL, st->losses,
                      vp->variant == 1 ? dx_of(st, mb, vp->me) : NULL, err);
}

/* dst[i] = sum over ranks r in increasing order of parts(r)[i]. */
static void sum_ranks(float *dst, float *(*part)(const zb_stage *, int, int),
                      const zb_stage *st, int mb) {
    size_t n = nc(st);
    for (size_t i = 0; i < n; i++) {
        float s = 0.0f;
        for (int r = 0; r < st->vp->p; r++) s += part(st, mb, r)[i];
        dst[i] = s;
    }
}

static zb_status vocab_emb(zb_stage *st, int mb, const int *tokens,
                           zb_err *err) {
    zb_gpt_vocab *vp = st->vp;
    size_t N = (size_t)st->N;
    if (!tokens) return zb_fail(err, ZB_ERUNTIME, "EMB needs tokens");
    for (size_t i = 0; i < N; i++)
        if (tokens[i] < 0 || tokens[i] >= st->V)
            return zb_fail(err, ZB_ERUNTIME, "tokens[%zu] = %d outside the "
                           "vocabulary [0, %d)", i, tokens[i], st->V);
    int *tok = vp->tok + (size_t)mb * N;
    memcpy(tok, tokens, N * sizeof(int));
    OP2(embed_tokens, emb_of(st, mb, vp->me), tok,
        st->params + st->pt.t[vp->wte].off, vp->v0, vp->Vl, st->N, st->C);
    return ZB_OK;
}

/* EMB_BWD: the embedding output's gradient of mb into this shard's rows
 * (on E from the embedding chunk's slot, kept in demb for the others). */
static zb_status vocab_emb_bwd(zb_stage *st, int mb, zb_err *err) {
    zb_gpt_vocab *vp = st->vp;
    OP2(embed_tokens_bwd, st->grads + st->pt.t[vp->wte].off,
        act_of(st, vp->demb, mb), vp->tok + (size_t)mb * st->N, vp->v0,
        vp->Vl, st->N, st->C);
    return ZB_OK;
}

zb_status zb_stage_vocab_op(zb_stage *st, int what, int mb, const int *tokens,
                            float loss_scale, zb_err *err) {
    ZB_TRY(bad_mb(st, mb, "vocabulary op", err));
    zb_gpt_vocab *vp = st->vp;
    zb_vocab_shard v;
    switch (what) {
    case ZB_V_EMB: return vocab_emb(st, mb, tokens, err);
    case ZB_V_EMB_SUM:
        sum_ranks(emb_of(st, mb, vp->me), emb_of, st, mb);
        return ZB_OK;
    case ZB_V_DX2:
        shard_of(st, mb, &v);
        ZB_TRY(zb_vocab_combine(&st->ops, &v,
                                vp->tab + (size_t)mb * vp->p * 3 * st->N,
                                vp->p, err));
        return zb_vocab_dx2(&st->ops, &v, loss_scale, dx_of(st, mb, vp->me),
                            err);
    case ZB_V_DX_SUM:
        sum_ranks(dx_of(st, mb, vp->me), dx_of, st, mb);
        return ZB_OK;
    case ZB_V_EMB_BWD: return vocab_emb_bwd(st, mb, err);
    default:
        return zb_fail(err, ZB_ERUNTIME, "vocabulary op %d is not a step of "
                       "the stage", what);
    }
}

double *zb_stage_vocab_stats(zb_stage *st, int mb, size_t *n) {
    zb_gpt_vocab *vp = st->vp;
    *n = 0;
    if (!vp || mb < 0 || mb >= st->m) return NULL;
    size_t N3 = 3 * (size_t)st->N;
    double *tab = vp->tab + (size_t)mb * vp->p * N3;
    memset(tab, 0, vp->p * N3 * sizeof *tab);
    memcpy(tab + (size_t)vp->me * N3, vp->local + (size_t)mb * N3,
           N3 * sizeof *tab);
    *n = vp->p * N3;
    return tab;
}

float *zb_stage_vocab_msg(zb_stage *st, int what, int mb, int peer,
                          bool send) {
    zb_gpt_vocab *vp = st->vp;
    if (!vp || mb < 0 || mb >= st->m || peer < 0 || peer >= vp->p)
        return NULL;
    switch (what) {
    case ZB_V_EMB: return emb_of(st, mb, send ? vp->me : peer);
    case ZB_V_X: return (float *)act_of(st, vp->x, mb);
    case ZB_V_DX: return dx_of(st, mb, send ? vp->me : peer);
    case ZB_V_DEMB: return (float *)act_of(st, vp->demb, mb);
    default: return NULL;
    }
}

/* ---- what the embedding and head chunks do with the shard ---- */

const float *zb_gpt_vocab_embedding(const zb_stage *st, int mb) {
    return emb_of(st, mb, st->vp->me);
}

zb_act *zb_gpt_vocab_x(const zb_stage *st, int mb) {
    return act_of(st, st->vp->x, mb);
}

const float *zb_gpt_vocab_dx(const zb_stage *st, int mb) {
    return dx_of(st, mb, st->vp->me);
}

zb_act *zb_gpt_vocab_demb(const zb_stage *st, int mb) {
    return act_of(st, st->vp->demb, mb);
}
