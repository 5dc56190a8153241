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
 * Backend memory (an arena of its own, from ops.alloc), touched only
 * through the op table. What the transport or the rank order needs on the
 * host goes through explicit copies when the backend's memory is a
 * device's: the statistics (allreduce_f64 works on host memory) and the
 * sums of the p ranks' parts (EMB_SUM, DX_SUM: summed on the host in rank
 * order, the cpu backend's very loop, so both backends add the same
 * floats in the same order). fp32 activations only (vocab_check).
 * With tp > 1 the vocabulary is sharded over pp x tp (stage_params.h:
 * shard pp_rank * tp + tp_rank): the pipeline exchanges run per TP rank
 * as at tp 1, and the stage adds the TP sums: the statistics table (one
 * slot per shard, so the sums are exact) before the combine, and the
 * embedding and dX sums after the pipeline's. */
#include <stdlib.h>
#include <string.h>

#include "common/zb_lower.h"
#include "executor/stage/gpt.h"

#define OP2(name, ...) ZB_TRY(st->ops.name(st->ops.ctx, __VA_ARGS__, err))
#define VOCAB_ALIGN 256 /* bytes: each buffer of the arena starts aligned */

static size_t nc(const zb_stage *st) { return (size_t)st->N * st->C; }
static size_t al(size_t bytes) {
    return (bytes + VOCAB_ALIGN - 1) / VOCAB_ALIGN * VOCAB_ALIGN;
}

/* The emb and dx messages are fp32 [N, C], zb_stage_msg_floats floats
 * each, which holds N*C floats only with fp32 activations. */
static zb_status vocab_check(const zb_stage *st, zb_err *err) {
    if (st->es != sizeof(float))
        return zb_fail(err, ZB_EINPUT, "vocabulary parallelism runs with fp32 "
                       "activations only (precision fp32 on the cuda backend)");
    if (st->plan->sched.placement == ZB_PLACE_DUAL)
        return zb_fail(err, ZB_EINPUT, "vocabulary parallelism runs without "
                       "placement dual only");
    return ZB_OK;
}

/* Where the pieces live: ranks of vstage 0 and the last, the shard; the
 * logits' row stride padded as the stage pads its own (ops.logits_align). */
static void vocab_where(zb_stage *st, zb_gpt_vocab *vp) {
    const zb_plan *p = st->plan;
    int chunk;
    vp->variant = p->vocab_parallel;
    vp->p = p->pp;
    vp->me = st->cfg.pp_rank;
    vp->ns = p->pp * st->tp;
    vp->shard = vp->me * st->tp + st->cfg.tp_rank;
    zb_vstage_owner(&p->sched, 0, &vp->E, &chunk);
    zb_vstage_owner(&p->sched, p->pp * p->v - 1, &vp->L, &chunk);
    vp->wte = st->pt.vocab_wte;
    vp->head = st->pt.vocab_head;
    vp->v0 = st->pt.vocab_row0;
    vp->Vl = st->pt.t[vp->wte].rows;
    int a = st->ops.logits_align > 0 ? st->ops.logits_align : 1;
    vp->ld = vp->Vl > 0 ? (vp->Vl + a - 1) / a * a : 1;
    size_t NC = nc(st), N = (size_t)st->N;
    vp->parts_bytes = al((size_t)vp->p * NC * sizeof(float));
    vp->f_bytes = al(NC * sizeof(float));
    vp->a_bytes = al(NC * st->es);
    vp->l_bytes = al(N * (size_t)vp->ld * st->es);
}

/* Next piece of the arena; with base NULL only counts. */
static void *take(char *base, size_t *off, size_t bytes) {
    void *p = base ? base + *off : NULL;
    *off += al(bytes);
    return p;
}

/* Lay out (base NULL: measure) the [m] buffers; returns the bytes. */
static size_t vocab_layout(zb_gpt_vocab *vp, const zb_stage *st, char *base) {
    size_t off = 0, m = (size_t)st->m, N = (size_t)st->N;
    size_t N3 = 3 * N * sizeof(double);
    bool v2 = vp->variant == 2;
    vp->emb = take(base, &off, m * vp->parts_bytes);
    vp->x = take(base, &off, m * vp->a_bytes);
    vp->logits = take(base, &off, m * vp->l_bytes);
    vp->dlogits = take(base, &off, m * vp->l_bytes);
    vp->local = take(base, &off, m * N3);
    vp->global = take(base, &off, m * N3);
    vp->tab = take(base, &off, m * (size_t)vp->ns * N3);
    vp->A = v2 ? take(base, &off, m * vp->f_bytes) : NULL;
    vp->G = v2 ? take(base, &off, m * vp->f_bytes) : NULL;
    vp->dx = take(base, &off, m * vp->parts_bytes);
    vp->demb = take(base, &off, m * vp->a_bytes);
    vp->tok = take(base, &off, m * N * sizeof(int));
    vp->tgt = take(base, &off, m * N * sizeof(int));
    return off;
}

/* Host mirrors when the backend's memory is a device's (ops.stream, as
 * the stage's ce_host): the statistics table and the local statistics
 * (allreduce_f64 sums host memory), the p parts of a sum. The test hook
 * ZB_VOCAB_HOST_MIRRORS=1 makes them on the cpu backend too, so that the
 * CPU runs the device path's copies (to_host, from_host: memcpy there)
 * and its offsets; the sums are the same. */
static bool want_mirrors(const zb_stage *st) {
    const char *hook = getenv("ZB_VOCAB_HOST_MIRRORS");
    return st->ops.stream || (hook && !strcmp(hook, "1"));
}

static zb_status host_mirrors(zb_stage *st, zb_gpt_vocab *vp, zb_err *err) {
    if (!want_mirrors(st)) return ZB_OK;
    size_t m = (size_t)st->m, N3 = 3 * (size_t)st->N, p = (size_t)vp->p;
    vp->tab_host = zb_calloc(m * (size_t)vp->ns * N3, sizeof(double), err);
    vp->local_host = zb_calloc(m * N3, sizeof(double), err);
    vp->sum_host = zb_calloc((p + 1) * nc(st), sizeof(float), err);
    return vp->tab_host && vp->local_host && vp->sum_host ? ZB_OK : ZB_ENOMEM;
}

zb_status zb_gpt_vocab_new(zb_stage *st, zb_err *err) {
    if (!st->plan->vocab_parallel) return ZB_OK;
    ZB_TRY(vocab_check(st, err));
    zb_gpt_vocab *vp = zb_calloc(1, sizeof *vp, err);
    if (!vp) return ZB_ENOMEM;
    st->vp = vp;
    vocab_where(st, vp);
    size_t bytes = vocab_layout(vp, st, NULL);
    void *arena;
    ZB_TRY(st->ops.alloc(st->ops.ctx, bytes, &arena, err)); /* zeroed */
    vp->arena = arena;
    vocab_layout(vp, st, arena);
    return host_mirrors(st, vp, err);
}

/* Before the op table is destroyed (the arena is its memory). */
void zb_gpt_vocab_free(zb_stage *st) {
    zb_gpt_vocab *vp = st->vp;
    if (!vp) return;
    if (vp->arena) st->ops.release(st->ops.ctx, vp->arena);
    free(vp->tab_host);
    free(vp->local_host);
    free(vp->sum_host);
    free(vp);
    st->vp = NULL;
}

static float *emb_of(const zb_stage *st, int mb, int r) {
    char *b = (char *)st->vp->emb + (size_t)mb * st->vp->parts_bytes;
    return (float *)b + (size_t)r * nc(st);
}
static float *dx_of(const zb_stage *st, int mb, int r) {
    char *b = (char *)st->vp->dx + (size_t)mb * st->vp->parts_bytes;
    return (float *)b + (size_t)r * nc(st);
}
static void *at(void *base, size_t stride, int mb) {
    return (char *)base + (size_t)mb * stride;
}

/* The shard's view of microbatch mb. */
static void shard_of(zb_stage *st, int mb, zb_vocab_shard *v) {
    zb_gpt_vocab *vp = st->vp;
    size_t N = (size_t)st->N;
    const zb_ptensor *w = &st->pt.t[vp->head];
    *v = (zb_vocab_shard){
        .N = st->N, .C = st->C, .v0 = vp->v0, .Vl = vp->Vl, .ld = vp->ld,
        .X = at(vp->x, vp->a_bytes, mb),
        .W = zb_gpt_act_at(st, st->wlow, w->off), .Wf = st->params + w->off,
        .dW = st->grads + w->off, .targets = vp->tgt + (size_t)mb * N,
        .logits = at(vp->logits, vp->l_bytes, mb),
        .dlogits = at(vp->dlogits, vp->l_bytes, mb),
        .local = vp->local + (size_t)mb * 3 * N,
        .global = vp->global + (size_t)mb * 3 * N,
        .A = vp->A ? at(vp->A, vp->f_bytes, mb) : NULL,
        .G = vp->G ? at(vp->G, vp->f_bytes, mb) : NULL};
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

/* ids [N] (host) checked, then uploaded to dst (backend; from_host: the
 * source may be reused on return). */
static zb_status upload_ids(zb_stage *st, int *dst, const int *ids,
                            const char *what, zb_err *err) {
    size_t N = (size_t)st->N;
    for (size_t i = 0; i < N; i++)
        if (ids[i] < 0 || ids[i] >= st->V)
            return zb_fail(err, ZB_ERUNTIME, "%s[%zu] = %d outside the "
                           "vocabulary [0, %d)", what, i, ids[i], st->V);
    return st->ops.from_host(st->ops.ctx, dst, ids, N * sizeof(int), err);
}

/* S; on a device backend the local statistics then come to the host for
 * the C1 table (zb_stage_vocab_stats), a wait for the device. */
zb_status zb_gpt_vocab_s(zb_stage *st, int mb, const int *targets,
                         zb_err *err) {
    ZB_TRY(bad_mb(st, mb, "S", err));
    if (!targets) return zb_fail(err, ZB_ERUNTIME, "S needs targets");
    zb_gpt_vocab *vp = st->vp;
    size_t N3 = 3 * (size_t)st->N;
    ZB_TRY(upload_ids(st, vp->tgt + (size_t)mb * st->N, targets, "targets",
                      err));
    zb_vocab_shard v;
    shard_of(st, mb, &v);
    ZB_TRY(zb_vocab_s(&st->ops, &v, vp->variant, err));
    if (!vp->local_host) return ZB_OK;
    return st->ops.to_host(st->ops.ctx, vp->local_host + (size_t)mb * N3,
                           v.local, N3 * sizeof(double), err);
}

/* mb's C1 table as combine reads it: the pipeline group's sum (the
 * rank's), summed over TP here (host memory: on the cpu the table itself,
 * else tab_host, then uploaded). */
static zb_status tab_of(zb_stage *st, int mb, const double **out,
                        zb_err *err) {
    zb_gpt_vocab *vp = st->vp;
    size_t n = (size_t)vp->ns * 3 * st->N;
    double *dev = vp->tab + (size_t)mb * n;
    double *host = vp->tab_host ? vp->tab_host + (size_t)mb * n : dev;
    zb_transport *tr = st->cfg.tr;
    if (st->tp > 1)
        ZB_TRY(tr->allreduce_f64(tr, st->cfg.tp_group, host, n, err));
    if (vp->tab_host)
        ZB_TRY(st->ops.from_host(st->ops.ctx, dev, host, n * sizeof(double),
                                 err));
    *out = dev;
    return ZB_OK;
}

/* T: variant 1 combines the gathered statistics first (variant 2 did in
 * DX2); the loss is counted once, on the last stage's rank. */
zb_status zb_gpt_vocab_t(zb_stage *st, int mb, float scale, zb_err *err) {
    ZB_TRY(bad_mb(st, mb, "T", err));
    zb_gpt_vocab *vp = st->vp;
    zb_vocab_shard v;
    shard_of(st, mb, &v);
    if (vp->variant == 1) {
        const double *tab;
        ZB_TRY(tab_of(st, mb, &tab, err));
        ZB_TRY(zb_vocab_combine(&st->ops, &v, tab, vp->ns, err));
    }
    return zb_vocab_t(&st->ops, &v, vp->variant, scale,
                      vp->me == vp->L ? &st->acc[0] : NULL, st->losses,
                      vp->variant == 1 ? dx_of(st, mb, vp->me) : NULL, err);
}

/* dst[i] = sum over r = 0, 1, .. p-1 of parts[r n + i] (host memory). */
static void sum_ranks(float *dst, const float *parts, int p, size_t n) {
    for (size_t i = 0; i < n; i++) {
        float s = 0.0f;
        for (int r = 0; r < p; r++) s += parts[(size_t)r * n + i];
        dst[i] = s;
    }
}

/* EMB_SUM / DX_SUM: this rank's part of mb becomes the sum of the p parts
 * [p][N, C] (contiguous from part(mb, 0)); on a device backend through
 * sum_host (to_host waits for the device, from_host for its copy). Then
 * with tp > 1 the TP ranks' sums are summed (the transport's fixed order:
 * every TP rank the same bits). */
static zb_status sum_parts(zb_stage *st, int mb,
                           float *(*part)(const zb_stage *, int, int),
                           zb_err *err) {
    zb_gpt_vocab *vp = st->vp;
    size_t n = nc(st), p = (size_t)vp->p;
    float *parts = part(st, mb, 0), *dst = part(st, mb, vp->me);
    if (!vp->sum_host) {
        sum_ranks(dst, parts, vp->p, n);
    } else {
        float *h = vp->sum_host, *hs = h + p * n;
        ZB_TRY(st->ops.to_host(st->ops.ctx, h, parts, p * n * sizeof(float),
                               err));
        sum_ranks(hs, h, vp->p, n);
        ZB_TRY(st->ops.from_host(st->ops.ctx, dst, hs, n * sizeof(float),
                                 err));
    }
    if (st->tp == 1) return ZB_OK;
    return st->cfg.tr->allreduce(st->cfg.tr, st->cfg.tp_group, dst, n, err);
}

static zb_status vocab_emb(zb_stage *st, int mb, const int *tokens,
                           zb_err *err) {
    zb_gpt_vocab *vp = st->vp;
    if (!tokens) return zb_fail(err, ZB_ERUNTIME, "EMB needs tokens");
    int *tok = vp->tok + (size_t)mb * st->N;
    ZB_TRY(upload_ids(st, tok, tokens, "tokens", err));
    OP2(embed_tokens, emb_of(st, mb, vp->me), tok,
        st->params + st->pt.t[vp->wte].off, vp->v0, vp->Vl, st->N, st->C);
    return ZB_OK;
}

/* EMB_BWD: the embedding output's gradient of mb into this shard's rows
 * (on E from the embedding chunk's slot, kept in demb for the others). */
static zb_status vocab_emb_bwd(zb_stage *st, int mb, zb_err *err) {
    zb_gpt_vocab *vp = st->vp;
    OP2(embed_tokens_bwd, st->grads + st->pt.t[vp->wte].off,
        zb_gpt_vocab_demb(st, mb), vp->tok + (size_t)mb * st->N, vp->v0,
        vp->Vl, st->N, st->C);
    return ZB_OK;
}

static zb_status vocab_dx2(zb_stage *st, int mb, float loss_scale,
                           zb_err *err) {
    zb_gpt_vocab *vp = st->vp;
    zb_vocab_shard v;
    const double *tab;
    shard_of(st, mb, &v);
    ZB_TRY(tab_of(st, mb, &tab, err));
    ZB_TRY(zb_vocab_combine(&st->ops, &v, tab, vp->ns, err));
    return zb_vocab_dx2(&st->ops, &v, loss_scale, dx_of(st, mb, vp->me), err);
}

zb_status zb_stage_vocab_op(zb_stage *st, int what, int mb, const int *tokens,
                            float loss_scale, zb_err *err) {
    ZB_TRY(bad_mb(st, mb, "vocabulary op", err));
    switch (what) {
    case ZB_V_EMB: return vocab_emb(st, mb, tokens, err);
    case ZB_V_EMB_SUM: return sum_parts(st, mb, emb_of, err);
    case ZB_V_DX2: return vocab_dx2(st, mb, loss_scale, err);
    case ZB_V_DX_SUM: return sum_parts(st, mb, dx_of, err);
    case ZB_V_EMB_BWD: return vocab_emb_bwd(st, mb, err);
    default:
        return zb_fail(err, ZB_ERUNTIME, "vocabulary op %d is not a step of "
                       "the stage", what);
    }
}

/* Host memory (allreduce_f64's): the table of mb [pp * tp, 3, N] with
 * this rank's local statistics (S left them on the host: local_host, or
 * local itself on the cpu backend) in its shard's slot. */
double *zb_stage_vocab_stats(zb_stage *st, int mb, size_t *n) {
    zb_gpt_vocab *vp = st->vp;
    *n = 0;
    if (!vp || mb < 0 || mb >= st->m) return NULL;
    size_t N3 = 3 * (size_t)st->N, at_mb = (size_t)mb * vp->ns * N3;
    double *tab = vp->tab_host ? vp->tab_host + at_mb : vp->tab + at_mb;
    const double *local = vp->local_host ? vp->local_host : vp->local;
    memset(tab, 0, vp->ns * N3 * sizeof *tab);
    memcpy(tab + (size_t)vp->shard * N3, local + (size_t)mb * N3,
           N3 * sizeof *tab);
    *n = vp->ns * N3;
    return tab;
}

float *zb_stage_vocab_msg(zb_stage *st, int what, int mb, int peer,
                          bool send) {
    zb_gpt_vocab *vp = st->vp;
    if (!vp || mb < 0 || mb >= st->m || peer < 0 || peer >= vp->p)
        return NULL;
    switch (what) {
    case ZB_V_EMB: return emb_of(st, mb, send ? vp->me : peer);
    case ZB_V_X: return (float *)zb_gpt_vocab_x(st, mb);
    case ZB_V_DX: return dx_of(st, mb, send ? vp->me : peer);
    case ZB_V_DEMB: return (float *)zb_gpt_vocab_demb(st, mb);
    default: return NULL;
    }
}

/* ---- what the embedding and head chunks do with the shard ---- */

const float *zb_gpt_vocab_embedding(const zb_stage *st, int mb) {
    return emb_of(st, mb, st->vp->me);
}

zb_act *zb_gpt_vocab_x(const zb_stage *st, int mb) {
    return at(st->vp->x, st->vp->a_bytes, mb);
}

const float *zb_gpt_vocab_dx(const zb_stage *st, int mb) {
    return dx_of(st, mb, st->vp->me);
}

zb_act *zb_gpt_vocab_demb(const zb_stage *st, int mb) {
    return at(st->vp->demb, st->vp->a_bytes, mb);
}
