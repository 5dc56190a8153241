/* gpt_passes.c - the GPT's passes F, B, W of one chunk and microbatch,
 * written once against the op table (ops.h); the CPU and the CUDA backend
 * run exactly this.
 *
 * Model (GPT-2): x0 = wte[tokens] + wpe; block: x + attn(ln1(x)) then
 * x + mlp(ln2(x)), attn = proj(attention(qkv(.))), mlp = fc2(gelu(fc(.)));
 * head: final LayerNorm, logits = lnf @ W^T (W = wte when tied), loss =
 * cross-entropy. Parameters: stage_params.h (layout, TP shards, init).
 * Llama-shaped blocks (the model's keys, each on its own): RMSNorm for
 * the LayerNorms; GQA attention (gqa_fwd/bwd, used for every non-GPT-2
 * model) with RoPE applied in place on q and k after the qkv GEMM (and
 * undone on dqkv after gqa_bwd); SwiGLU: fc is W1 over W3 into fch [N,
 * 2Fl], swiglu_fwd gives fch_gelu, fc2 is W2; absent biases are NULL;
 * position rope: x0 = wte[tokens] only.
 *
 *   F  embedding (if held), blocks, head (if held): the head also computes
 *      the loss and dlogits (scaled by loss_scale) and keeps them.
 *   B  input gradients only, last block to first; keeps the dout of every
 *      linear layer and LayerNorm in the microbatch's slot for W.
 *   W  all weight gradients (+=) from what F and B kept; embedding last.
 * Recompute (gpt.h, zb_slot_view): selective keeps no attention
 * probabilities, B rebuilds each block's (attn_fwd, one layer at a time);
 * full keeps only the blocks' inputs, B rebuilds each block's activations
 * up to the GELU from its input just before that block's backward. Both
 * run the forward's ops on the same inputs: bit-identical to none.
 * TP (Megatron): the partial outputs of proj and fc2 (row-parallel) are
 * all-reduced in F before the replicated bias and the residual are added;
 * the partial input gradients of qkv and fc (column-parallel) are
 * all-reduced in B. Vocabulary-parallel embedding and head: each TP rank
 * holds rows [v0, v0 + Vv) of the token table / LM head. F of the
 * embedding looks up the tokens in its rows (0 for the others),
 * all-reduces [N, C] and then adds wpe; W scatter-adds only its rows. The
 * head computes logits [N, Vv] of its rows only; the cross-entropy
 * all-reduces the row maxima and then sum(exp) and the target logit over
 * TP (doubles, [tp, N] or [2, N]), so no rank holds [N, V]; B all-reduces
 * the partial input gradient of the head GEMM. With tied embeddings both
 * copies use the same rows on the same TP rank.
 *
 * Types (gpt.h): activations in the backend's act_dtype, the GEMMs'
 * weights from wlow (act), LayerNorm weights, biases, the embedding tables
 * and every gradient of a parameter fp32; the TP sums go through the fp32
 * `partial`.
 *
 * Neighbouring virtual stage on this rank (V placement's turn, or p = 1):
 * F copies that chunk's act_out into this chunk's act_in, and B copies
 * this chunk's grad_out into that chunk's grad_in, so each chunk's slot
 * owns everything its W reads, whatever order the two W passes run in.
 */
#include "executor/stage/gpt.h"

/* Call op `name` of the table with the backend's state and err. */
#define OP(name, ...) ZB_TRY(st->ops.name(st->ops.ctx, __VA_ARGS__, err))

typedef struct {
    float *ln1w, *ln1b, *qkvw, *qkvb, *projw, *projb;
    float *ln2w, *ln2b, *fcw, *fcb, *fc2w, *fc2b;
    /* the matrices as the GEMMs read them (params only: from wlow) */
    const zb_act *qkvm, *projm, *fcm, *fc2m;
} layer_params;

static float *tensor(const zb_stage *st, float *base, int idx) {
    return base + st->pt.t[idx].off;
}

/* A tensor that may be absent (empty under the model's keys): NULL then. */
static float *maybe(const zb_stage *st, float *base, int idx) {
    return idx >= 0 && st->pt.t[idx].rows > 0 ? tensor(st, base, idx) : NULL;
}

/* Parameter idx as the GEMMs read it (wlow, act). */
static const zb_act *wmat(const zb_stage *st, int idx) {
    return zb_gpt_act_at(st, st->wlow, st->pt.t[idx].off);
}

/* Block l of chunk ck in base (params or grads). */
static void layer_params_get(const zb_stage *st, float *base,
                             const zb_gpt_chunk *ck, int l, layer_params *w) {
    int t0 = ck->pc.layer0 + l * ZB_T_PER_LAYER;
    bool p = base == st->params;
    w->qkvm = p ? wmat(st, t0 + ZB_T_QKVW) : NULL;
    w->projm = p ? wmat(st, t0 + ZB_T_PROJW) : NULL;
    w->fcm = p ? wmat(st, t0 + ZB_T_FCW) : NULL;
    w->fc2m = p ? wmat(st, t0 + ZB_T_FC2W) : NULL;
    w->ln1w = tensor(st, base, t0 + ZB_T_LN1W);
    w->ln1b = maybe(st, base, t0 + ZB_T_LN1B);
    w->qkvw = tensor(st, base, t0 + ZB_T_QKVW);
    w->qkvb = maybe(st, base, t0 + ZB_T_QKVB);
    w->projw = tensor(st, base, t0 + ZB_T_PROJW);
    w->projb = maybe(st, base, t0 + ZB_T_PROJB);
    w->ln2w = tensor(st, base, t0 + ZB_T_LN2W);
    w->ln2b = maybe(st, base, t0 + ZB_T_LN2B);
    w->fcw = tensor(st, base, t0 + ZB_T_FCW);
    w->fcb = maybe(st, base, t0 + ZB_T_FCB);
    w->fc2w = tensor(st, base, t0 + ZB_T_FC2W);
    w->fc2b = maybe(st, base, t0 + ZB_T_FC2B);
}

static void layer_acts_get(const zb_stage *st, const zb_gpt_chunk *ck,
                           const zb_slot_view *sv, int l, zb_layer_acts *a) {
    zb_gpt_layer_carve(st, sv->layers + (size_t)l * ck->layer_bytes, a);
}

/* Where F writes block l's activations: its slot, or under full recompute
 * the one-layer scratch (B rebuilds them into the slot's B part). */
static void layer_acts_fwd(const zb_stage *st, const zb_gpt_chunk *ck,
                           const zb_slot_view *sv, int l, zb_layer_acts *a) {
    if (st->rc == ZB_RECOMPUTE_FULL) zb_gpt_layer_carve_fwd(st, st->rc_layer, a);
    else layer_acts_get(st, ck, sv, l, a);
}

static int ld(int n) { return n > 0 ? n : 1; }

/* ---- linear layers: inp [N, C], w [OC, C] (act), bias [OC] (fp32),
 * out/dout [N, OC] with row stride ldo >= OC (the logits' padded stride,
 * else OC); out of type ot (act, or fp32 into partial) ---- */

/* out = inp @ w^T + bias; gelu_out (may be NULL, act) = GELU(out) */
static zb_status linear_fwd(zb_stage *st, void *out, zb_dtype ot,
                            const zb_act *inp, const zb_act *w,
                            const float *bias, int N, int C, int OC, int ldo,
                            zb_act *gelu_out, zb_err *err) {
    zb_gemm g = {.M = N, .N = OC, .K = C, .ta = false, .tb = true,
                 .A = inp, .lda = ld(C), .B = w, .ldb = ld(C), .C = out,
                 .ldc = ld(ldo), .batch = 1, .alpha = 1.0f, .beta = 0.0f,
                 .bias = bias, .gelu_out = gelu_out,
                 .ab_type = st->ops.act_dtype, .c_type = ot};
    return st->ops.gemm(st->ops.ctx, &g, err);
}

/* B: dinp[N, C] += dout[N, OC] @ w[OC, C] */
static zb_status linear_bwd_input(zb_stage *st, void *dinp, zb_dtype ot,
                                  const zb_act *dout, const zb_act *w, int N,
                                  int C, int OC, int ldo, zb_err *err) {
    zb_gemm g = {.M = N, .N = C, .K = OC, .A = dout, .lda = ld(ldo), .B = w,
                 .ldb = ld(C), .C = dinp, .ldc = ld(C), .batch = 1,
                 .alpha = 1.0f, .beta = 1.0f, .ab_type = st->ops.act_dtype,
                 .c_type = ot};
    return st->ops.gemm(st->ops.ctx, &g, err);
}

/* W: dw[OC, C] += dout^T @ inp (fp32 accumulation into the fp32
 * gradient); dbias[OC] += column sums (may be NULL) */
static zb_status linear_bwd_weight(zb_stage *st, float *dw, float *dbias,
                                   const zb_act *dout, const zb_act *inp,
                                   int N, int C, int OC, int ldo, zb_err *err) {
    zb_gemm g = {.M = OC, .N = C, .K = N, .ta = true, .A = dout,
                 .lda = ld(ldo), .B = inp, .ldb = ld(C), .C = dw, .ldc = ld(C),
                 .batch = 1, .alpha = 1.0f, .beta = 1.0f,
                 .ab_type = st->ops.act_dtype, .c_type = ZB_DT_F32};
    ZB_TRY(st->ops.gemm(st->ops.ctx, &g, err));
    if (dbias) OP(colsum_add, dbias, dout, N, OC);
    return ZB_OK;
}

static zb_status tp_allreduce(zb_stage *st, float *buf, size_t n, zb_err *err) {
    if (st->tp == 1) return ZB_OK;
    return st->cfg.tr->allreduce(st->cfg.tr, st->cfg.tp_group, buf, n, err);
}

/* The transport sums doubles in host memory only: a backend with device
 * memory goes through ce_host (and waits for the device here). */
static zb_status tp_allreduce_f64(zb_stage *st, double *buf, size_t n,
                                  zb_err *err) {
    if (st->tp == 1) return ZB_OK;
    zb_transport *tr = st->cfg.tr;
    if (!st->ce_host) return tr->allreduce_f64(tr, st->cfg.tp_group, buf, n, err);
    size_t bytes = n * sizeof *buf;
    ZB_TRY(st->ops.to_host(st->ops.ctx, st->ce_host, buf, bytes, err));
    ZB_TRY(tr->allreduce_f64(tr, st->cfg.tp_group, st->ce_host, n, err));
    return st->ops.from_host(st->ops.ctx, buf, st->ce_host, bytes, err);
}

/* n activation elements */
static zb_status zero(zb_stage *st, zb_act *p, size_t n, zb_err *err) {
    return st->ops.memset0(st->ops.ctx, p, n * st->es, err);
}

static zb_status copy(zb_stage *st, zb_act *dst, const zb_act *src, size_t n,
                      zb_err *err) {
    return st->ops.copy(st->ops.ctx, dst, src, n * st->es, err);
}

/* B: dst[N, C] = dout[N, OC] @ w[OC, C] summed over TP (gpt.h): at tp 1
 * the GEMM writes dst; else it writes the fp32 partial, which the
 * transport sums and cast then stores into dst. */
static zb_status linear_bwd_input_tp(zb_stage *st, zb_act *dst,
                                     const zb_act *dout, const zb_act *w,
                                     int N, int C, int OC, int ldo,
                                     zb_err *err) {
    size_t NC = (size_t)N * C;
    if (st->tp == 1) {
        ZB_TRY(zero(st, dst, NC, err));
        return linear_bwd_input(st, dst, st->ops.act_dtype, dout, w, N, C, OC,
                                ldo, err);
    }
    ZB_TRY(st->ops.memset0(st->ops.ctx, st->partial, NC * sizeof(float), err));
    ZB_TRY(linear_bwd_input(st, st->partial, ZB_DT_F32, dout, w, N, C, OC, ldo,
                            err));
    ZB_TRY(tp_allreduce(st, st->partial, NC, err));
    OP(cast, dst, st->partial, NC);
    return ZB_OK;
}

/* ---- the block's kinds: LayerNorm or RMSNorm (mean and b unused),
 * MHA or GQA, GELU (the fc GEMM's epilogue) or SwiGLU ---- */

static zb_status norm_fwd(zb_stage *st, zb_act *out, float *mean, float *rstd,
                          const zb_act *inp, const float *w, const float *b,
                          zb_err *err) {
    if (st->rms) OP(rms_fwd, out, rstd, inp, w, st->N, st->C);
    else OP(ln_fwd, out, mean, rstd, inp, w, b, st->N, st->C);
    return ZB_OK;
}

static zb_status norm_bwd_input(zb_stage *st, zb_act *dinp,
                                const zb_act *dout, const zb_act *inp,
                                const float *w, const float *mean,
                                const float *rstd, zb_err *err) {
    if (st->rms) OP(rms_bwd_input, dinp, dout, inp, w, rstd, st->N, st->C);
    else OP(ln_bwd_input, dinp, dout, inp, w, mean, rstd, st->N, st->C);
    return ZB_OK;
}

static zb_status norm_bwd_weight(zb_stage *st, float *dw, float *db,
                                 const zb_act *dout, const zb_act *inp,
                                 const float *mean, const float *rstd,
                                 zb_err *err) {
    if (st->rms) OP(rms_bwd_weight, dw, dout, inp, rstd, st->N, st->C);
    else OP(ln_bwd_weight, dw, db, dout, inp, mean, rstd, st->N, st->C);
    return ZB_OK;
}

/* out [N, Cl] = attention of qkv (RoPE already applied to it) */
static zb_status attention_fwd(zb_stage *st, zb_act *out, void *saved,
                               const zb_act *qkv, zb_err *err) {
    if (st->gqa)
        OP(gqa_fwd, out, saved, qkv, st->B, st->T, st->Cl, st->NHl, st->KVl);
    else OP(attn_fwd, out, saved, qkv, st->B, st->T, st->Cl, st->NHl);
    return ZB_OK;
}

/* dqkv = gradient wrt the qkv GEMM's output (RoPE undone) */
static zb_status attention_bwd(zb_stage *st, const zb_layer_acts *a,
                               zb_err *err) {
    if (!st->gqa) {
        OP(attn_bwd, a->dqkv, st->datt, st->datty, a->qkv, a->atty, a->att,
           st->B, st->T, st->Cl, st->NHl);
        return ZB_OK;
    }
    OP(gqa_bwd, a->dqkv, st->datt, st->datty, a->qkv, a->atty, a->att, st->B,
       st->T, st->Cl, st->NHl, st->KVl);
    if (st->rope)
        OP(rope_bwd, a->dqkv, st->B, st->T, st->NHl + st->KVl, st->hs,
           st->QKVl, st->theta);
    return ZB_OK;
}

/* qkv = ln1 @ Wqkv^T (+ b), then RoPE in place on q and k */
static zb_status qkv_fwd(zb_stage *st, const layer_params *w,
                         const zb_layer_acts *a, zb_err *err) {
    ZB_TRY(linear_fwd(st, a->qkv, st->ops.act_dtype, a->ln1, w->qkvm,
                      w->qkvb, st->N, st->C, st->QKVl, st->QKVl, NULL, err));
    if (st->rope)
        OP(rope_fwd, a->qkv, st->B, st->T, st->NHl + st->KVl, st->hs,
           st->QKVl, st->theta);
    return ZB_OK;
}

/* fch = ln2 @ Wfc^T (+ b); fch_gelu = GELU(fch) or silu(W1 x) * (W3 x) */
static zb_status mlp_in_fwd(zb_stage *st, const layer_params *w,
                            const zb_layer_acts *a, zb_err *err) {
    int N = st->N;
    if (!st->swiglu)
        return linear_fwd(st, a->fch, st->ops.act_dtype, a->ln2, w->fcm,
                          w->fcb, N, st->C, st->Fl, st->Fl, a->fch_gelu, err);
    ZB_TRY(linear_fwd(st, a->fch, st->ops.act_dtype, a->ln2, w->fcm, w->fcb,
                      N, st->C, st->FCl, st->FCl, NULL, err));
    OP(swiglu_fwd, a->fch_gelu, a->fch, N, st->Fl);
    return ZB_OK;
}

/* dfch = d/dfch given dgelu (grad wrt fch_gelu) */
static zb_status mlp_act_bwd(zb_stage *st, const zb_layer_acts *a,
                             zb_err *err) {
    int N = st->N;
    ZB_TRY(zero(st, a->dfch, (size_t)N * st->FCl, err));
    if (st->swiglu) OP(swiglu_bwd, a->dfch, a->fch, st->dgelu, N, st->Fl);
    else OP(gelu_bwd, a->dfch, a->fch, st->dgelu, (size_t)N * st->Fl);
    return ZB_OK;
}

/* out = x + (partial summed over TP) + bias (NULL: none) */
static zb_status residual(zb_stage *st, zb_act *out, const zb_act *x,
                          const float *bias, zb_err *err) {
    int N = st->N, C = st->C;
    ZB_TRY(tp_allreduce(st, st->partial, (size_t)N * C, err));
    if (bias) OP(residual_add, out, x, st->partial, bias, N, C);
    else OP(residual_add, out, x, st->partial, st->zero_bias, N, C);
    return ZB_OK;
}

/* ---- one block ---- */

/* The block's forward from x [N, C] up to the GELU: everything B and W
 * read (F, and B under full recompute). */
static zb_status layer_forward_in(zb_stage *st, const layer_params *w,
                                  const zb_layer_acts *a, const zb_act *x,
                                  zb_err *err) {
    int N = st->N, C = st->C, Cl = st->Cl;
    ZB_TRY(norm_fwd(st, a->ln1, a->ln1_mean, a->ln1_rstd, x, w->ln1w, w->ln1b,
                    err));
    ZB_TRY(qkv_fwd(st, w, a, err));
    ZB_TRY(attention_fwd(st, a->atty, a->att, a->qkv, err));
    ZB_TRY(linear_fwd(st, st->partial, ZB_DT_F32, a->atty, w->projm, NULL, N,
                      Cl, C, C, NULL, err));
    ZB_TRY(residual(st, a->res2, x, w->projb, err));
    ZB_TRY(norm_fwd(st, a->ln2, a->ln2_mean, a->ln2_rstd, a->res2, w->ln2w,
                    w->ln2b, err));
    return mlp_in_fwd(st, w, a, err);
}

/* x, out [N, C] */
static zb_status layer_forward(zb_stage *st, const layer_params *w,
                               const zb_layer_acts *a, const zb_act *x,
                               zb_act *out, zb_err *err) {
    int N = st->N, C = st->C, Fl = st->Fl;
    ZB_TRY(layer_forward_in(st, w, a, x, err));
    ZB_TRY(linear_fwd(st, st->partial, ZB_DT_F32, a->fch_gelu, w->fc2m, NULL,
                      N, Fl, C, C, NULL, err));
    return residual(st, out, a->res2, w->fc2b, err);
}

/* What B of a block needs that F did not keep (recompute): full rebuilds
 * the block's activations from x, selective the attention's saved floats
 * (its output goes to datty, overwritten later in B). */
static zb_status layer_recompute(zb_stage *st, const layer_params *w,
                                 const zb_layer_acts *a, const zb_act *x,
                                 zb_err *err) {
    if (st->rc == ZB_RECOMPUTE_FULL) return layer_forward_in(st, w, a, x, err);
    if (st->rc == ZB_RECOMPUTE_SELECTIVE)
        return attention_fwd(st, st->datty, a->att, a->qkv, err);
    return ZB_OK;
}

/* B: dx [N, C] = gradient wrt x given dout [N, C] wrt the block output. */
static zb_status layer_backward_b(zb_stage *st, const layer_params *w,
                                  const zb_layer_acts *a, const zb_act *x,
                                  const zb_act *dout, zb_act *dx,
                                  zb_err *err) {
    int N = st->N, C = st->C, Cl = st->Cl, Fl = st->Fl;
    size_t NC = (size_t)N * C;
    zb_dtype at = st->ops.act_dtype;
    /* MLP branch */
    ZB_TRY(zero(st, st->dgelu, (size_t)N * Fl, err));
    ZB_TRY(linear_bwd_input(st, st->dgelu, at, dout, w->fc2m, N, Fl, C, C,
                            err));
    ZB_TRY(mlp_act_bwd(st, a, err));
    ZB_TRY(linear_bwd_input_tp(st, a->dln2, a->dfch, w->fcm, N, C, st->FCl,
                               st->FCl, err));
    ZB_TRY(copy(st, a->dres2, dout, NC, err));
    ZB_TRY(norm_bwd_input(st, a->dres2, a->dln2, a->res2, w->ln2w,
                          a->ln2_mean, a->ln2_rstd, err));
    /* attention branch */
    ZB_TRY(zero(st, st->datty, (size_t)N * Cl, err));
    ZB_TRY(linear_bwd_input(st, st->datty, at, a->dres2, w->projm, N, Cl, C, C,
                            err));
    ZB_TRY(attention_bwd(st, a, err));
    ZB_TRY(linear_bwd_input_tp(st, a->dln1, a->dqkv, w->qkvm, N, C, st->QKVl,
                               st->QKVl, err));
    ZB_TRY(copy(st, dx, a->dres2, NC, err));
    return norm_bwd_input(st, dx, a->dln1, x, w->ln1w, a->ln1_mean,
                          a->ln1_rstd, err);
}

/* W: weight gradients (+= into g) from what F and B kept. */
static zb_status layer_backward_w(zb_stage *st, const layer_params *g,
                                  const zb_layer_acts *a, const zb_act *x,
                                  const zb_act *dout, zb_err *err) {
    int N = st->N, C = st->C, Cl = st->Cl, Fl = st->Fl;
    ZB_TRY(linear_bwd_weight(st, g->fc2w, g->fc2b, dout, a->fch_gelu, N, Fl,
                             C, C, err));
    ZB_TRY(linear_bwd_weight(st, g->fcw, g->fcb, a->dfch, a->ln2, N, C,
                             st->FCl, st->FCl, err));
    ZB_TRY(norm_bwd_weight(st, g->ln2w, g->ln2b, a->dln2, a->res2,
                           a->ln2_mean, a->ln2_rstd, err));
    ZB_TRY(linear_bwd_weight(st, g->projw, g->projb, a->dres2, a->atty, N, Cl,
                             C, C, err));
    ZB_TRY(linear_bwd_weight(st, g->qkvw, g->qkvb, a->dqkv, a->ln1, N, C,
                             st->QKVl, st->QKVl, err));
    return norm_bwd_weight(st, g->ln1w, g->ln1b, a->dln1, x, a->ln1_mean,
                           a->ln1_rstd, err);
}

/* ---- head: final LayerNorm, LM head, vocabulary-parallel loss ---- */

/* Cross-entropy of logits [N, Vv] (rows v0.. of the vocabulary): loss sum
 * into acc[0], dlogits of these rows. tp 1: one fused op (the same results
 * as the pieces). Else the TP transport only sums, so the row maxima
 * travel as a [tp, N] table (each rank fills its own row, zeros
 * elsewhere) and every rank takes the max. */
static zb_status vocab_parallel_ce(zb_stage *st, const zb_act *logits,
                                   zb_act *dlogits, float loss_scale,
                                   zb_err *err) {
    int N = st->N, tp = st->tp;
    if (tp == 1) {
        OP(ce_fused, &st->acc[0], st->losses, dlogits, logits, st->targets,
           loss_scale, N, st->Vv, st->Vp);
        return ZB_OK;
    }
    double *tab = st->ce, *M = st->ce, *S = st->ce + (size_t)tp * N,
           *Zt = S + N;
    ZB_TRY(st->ops.memset0(st->ops.ctx, tab, (size_t)tp * N * sizeof *tab,
                           err));
    OP(ce_max, tab + (size_t)st->cfg.tp_rank * N, logits, N, st->Vv, st->Vp);
    ZB_TRY(tp_allreduce_f64(st, tab, (size_t)tp * N, err));
    OP(ce_max_combine, tab, tp, N);
    OP(ce_stats, S, Zt, logits, M, st->targets, st->v0, N, st->Vv, st->Vp);
    ZB_TRY(tp_allreduce_f64(st, S, 2 * (size_t)N, err));
    OP(ce_loss, &st->acc[0], st->losses, M, S, Zt, N);
    OP(ce_bwd, dlogits, logits, M, S, st->targets, st->v0, loss_scale, N,
       st->Vv, st->Vp);
    return ZB_OK;
}

/* Vocabulary parallelism (st->vp): the final norm's output is X, which
 * the shards' S passes take over (vocab_head.c); no logits here. */
static zb_status head_forward(zb_stage *st, const zb_gpt_chunk *ck, int mb,
                              const zb_slot_view *sv, float loss_scale,
                              zb_err *err) {
    int N = st->N, C = st->C;
    const zb_act *h = zb_gpt_resid(st, sv, ck->n_layers); /* [N, C] */
    ZB_TRY(norm_fwd(st, sv->lnf, sv->lnf_mean, sv->lnf_rstd, h,
                    tensor(st, st->params, ck->pc.lnfw),
                    maybe(st, st->params, ck->pc.lnfb), err));
    if (st->vp)
        return copy(st, zb_gpt_vocab_x(st, mb), sv->lnf, (size_t)N * C, err);
    const zb_act *wh = wmat(st, ck->pc.head); /* [Vl, C] */
    ZB_TRY(linear_fwd(st, st->logits, st->ops.act_dtype, sv->lnf, wh, NULL, N,
                      C, st->Vv, st->Vp, NULL, err));
    return vocab_parallel_ce(st, st->logits, sv->dlogits, loss_scale, err);
}

/* Vocabulary parallelism: dlnf is the shards' dX parts, summed (DX_SUM). */
static zb_status head_backward_b(zb_stage *st, const zb_gpt_chunk *ck,
                                 int mb, const zb_slot_view *sv, zb_err *err) {
    int N = st->N, C = st->C;
    const zb_act *h = zb_gpt_resid(st, sv, ck->n_layers);
    zb_act *dh = zb_gpt_dresid(st, ck, sv, ck->n_layers);
    if (st->vp)
        OP(cast, sv->dlnf, zb_gpt_vocab_dx(st, mb), (size_t)N * C);
    else /* each rank has the part from its vocabulary rows */
        ZB_TRY(linear_bwd_input_tp(st, sv->dlnf, sv->dlogits,
                                   wmat(st, ck->pc.head), N, C, st->Vv,
                                   st->Vp, err));
    ZB_TRY(zero(st, dh, (size_t)N * C, err));
    return norm_bwd_input(st, dh, sv->dlnf, h,
                          tensor(st, st->params, ck->pc.lnfw), sv->lnf_mean,
                          sv->lnf_rstd, err);
}

static zb_status head_backward_w(zb_stage *st, const zb_gpt_chunk *ck,
                                 const zb_slot_view *sv, zb_err *err) {
    int N = st->N, C = st->C;
    const zb_act *h = zb_gpt_resid(st, sv, ck->n_layers);
    if (!st->vp) /* else T's */
        ZB_TRY(linear_bwd_weight(st, tensor(st, st->grads, ck->pc.head),
                                 NULL, sv->dlogits, sv->lnf, N, C, st->Vv,
                                 st->Vp, err));
    return norm_bwd_weight(st, tensor(st, st->grads, ck->pc.lnfw),
                           maybe(st, st->grads, ck->pc.lnfb), sv->dlnf, h,
                           sv->lnf_mean, sv->lnf_rstd, err);
}

/* ---- passes ---- */

static zb_status check_ids(const zb_stage *st, const int *ids, const char *what,
                           zb_err *err) {
    for (int i = 0; i < st->N; i++)
        if (ids[i] < 0 || ids[i] >= st->V)
            return zb_fail(err, ZB_ERUNTIME, "%s[%d] = %d outside the "
                           "vocabulary [0, %d)", what, i, ids[i], st->V);
    return ZB_OK;
}

/* Buffer 0 (grad = false: resid, else its gradient) or L of (c, mb)'s
 * slot; the gradient of resid[0] under full recompute is in the B part. */
static zb_act *slot_buffer(zb_stage *st, int c, int mb, bool grad, bool last) {
    if (zb_gpt_bad_index(st, c, mb)) return NULL;
    zb_gpt_chunk *ck = &st->chunks[c];
    int s = ck->sl.slot_of[mb], bs = ck->bsl.slot_of[mb];
    if (s < 0) return NULL;
    zb_slot_view sv;
    zb_gpt_slot_get(st, ck, s, bs, &sv);
    int l = last ? ck->n_layers : 0;
    return grad ? zb_gpt_dresid(st, ck, &sv, l) : zb_gpt_resid(st, &sv, l);
}

/* Input of F: the embedding, or the previous chunk's output on this rank. */
static zb_status forward_input(zb_stage *st, int c, int mb, const int *tokens,
                               const zb_slot_view *sv, zb_err *err) {
    const zb_gpt_chunk *ck = &st->chunks[c];
    size_t NC = (size_t)st->N * st->C;
    if (ck->embed) { /* vocab-parallel lookup, sum over TP, then wpe */
        ZB_TRY(st->ops.from_host(st->ops.ctx, sv->tokens, tokens,
                                 (size_t)st->N * sizeof(int), err));
        const float *tok = st->partial;
        if (st->vp) /* the pipeline's shards' partials, summed (EMB_SUM) */
            tok = zb_gpt_vocab_embedding(st, mb);
        else {
            OP(embed_tokens, st->partial, sv->tokens,
               tensor(st, st->params, ck->pc.wte), st->v0, st->Vv, st->N,
               st->C);
            ZB_TRY(tp_allreduce(st, st->partial, NC, err));
        }
        if (ck->pc.wpe < 0) OP(cast, sv->resid, tok, NC); /* rope */
        else OP(embed_add_pos, sv->resid, tok,
                tensor(st, st->params, ck->pc.wpe), st->B, st->T, st->C);
    } else if (ck->prev >= 0) {
        const zb_act *src = slot_buffer(st, ck->prev, mb, false, true);
        int ps = st->chunks[ck->prev].sl.slot_of[mb];
        if (!src || st->chunks[ck->prev].sl.state[ps] < ZB_SLOT_FWD)
            return zb_fail(err, ZB_ERUNTIME, "F on chunk %d mb %d before F "
                           "on chunk %d (its input)", c, mb, ck->prev);
        ZB_TRY(copy(st, sv->resid, src, NC, err));
    }
    return ZB_OK;
}

zb_status zb_gpt_forward(zb_stage *st, int c, int mb, const int *tokens,
                         const int *targets, float loss_scale, zb_err *err) {
    if (zb_gpt_bad_index(st, c, mb))
        return zb_fail(err, ZB_ERUNTIME, "F: chunk %d mb %d out of range "
                       "(v=%d, m=%d)", c, mb, st->v, st->m);
    zb_gpt_chunk *ck = &st->chunks[c];
    if (ck->embed && !tokens)
        return zb_fail(err, ZB_ERUNTIME, "F on chunk %d needs tokens", c);
    if (ck->head && !targets)
        return zb_fail(err, ZB_ERUNTIME, "F on chunk %d needs targets", c);
    if (ck->embed) ZB_TRY(check_ids(st, tokens, "tokens", err));
    if (ck->head) ZB_TRY(check_ids(st, targets, "targets", err));
    int s = zb_gpt_slot_acquire(st, c, mb);
    if (s < 0)
        return zb_fail(err, ZB_ERUNTIME, "no free activation slot on chunk "
                       "%d for mb %d (the plan allows %d in flight)", c, mb,
                       ck->sl.n);
    if (ck->sl.state[s] != ZB_SLOT_TAKEN)
        return zb_fail(err, ZB_ERUNTIME, "F on chunk %d mb %d twice", c, mb);
    zb_slot_view sv;
    zb_gpt_slot_get(st, ck, s, -1, &sv);
    ZB_TRY(forward_input(st, c, mb, tokens, &sv, err));
    for (int l = 0; l < ck->n_layers; l++) {
        layer_params w;
        zb_layer_acts a;
        layer_params_get(st, st->params, ck, l, &w);
        layer_acts_fwd(st, ck, &sv, l, &a);
        ZB_TRY(layer_forward(st, &w, &a, zb_gpt_resid(st, &sv, l),
                             zb_gpt_resid(st, &sv, l + 1), err));
    }
    if (ck->head) {
        ZB_TRY(st->ops.from_host(st->ops.ctx, st->targets, targets,
                                 (size_t)st->N * sizeof(int), err));
        ZB_TRY(head_forward(st, ck, mb, &sv, loss_scale, err));
    }
    ck->sl.state[s] = ZB_SLOT_FWD;
    return ZB_OK;
}

zb_status zb_gpt_backward_b(zb_stage *st, int c, int mb, zb_err *err) {
    int s;
    if (zb_gpt_bad_index(st, c, mb))
        return zb_fail(err, ZB_ERUNTIME, "B: chunk %d mb %d out of range "
                       "(v=%d, m=%d)", c, mb, st->v, st->m);
    zb_gpt_chunk *ck = &st->chunks[c];
    ZB_TRY(zb_slots_expect(&ck->sl, c, mb, ZB_SLOT_FWD, "B", &s, err));
    int bs = -1;
    if (st->rc == ZB_RECOMPUTE_FULL && (bs = zb_gpt_bslot_acquire(st, c, mb)) < 0)
        return zb_fail(err, ZB_ERUNTIME, "no free recompute slot on chunk %d "
                       "for mb %d (the plan allows %d between B and W)", c, mb,
                       ck->bsl.n);
    zb_slot_view sv;
    zb_gpt_slot_get(st, ck, s, bs, &sv);
    if (ck->head) ZB_TRY(head_backward_b(st, ck, mb, &sv, err));
    for (int l = ck->n_layers - 1; l >= 0; l--) {
        layer_params w;
        zb_layer_acts a;
        const zb_act *x = zb_gpt_resid(st, &sv, l);
        layer_params_get(st, st->params, ck, l, &w);
        layer_acts_get(st, ck, &sv, l, &a);
        ZB_TRY(layer_recompute(st, &w, &a, x, err));
        ZB_TRY(layer_backward_b(st, &w, &a, x, zb_gpt_dresid(st, ck, &sv, l + 1),
                                zb_gpt_dresid(st, ck, &sv, l), err));
    }
    if (ck->embed && st->vp) /* for EMB_BWD, here and on the other ranks */
        ZB_TRY(copy(st, zb_gpt_vocab_demb(st, mb),
                    zb_gpt_dresid(st, ck, &sv, 0), (size_t)st->N * st->C,
                    err));
    if (ck->prev >= 0) { /* hand grad_out to the chunk before, on this rank */
        zb_act *dst = slot_buffer(st, ck->prev, mb, true, true);
        if (!dst)
            return zb_fail(err, ZB_ERUNTIME, "B on chunk %d mb %d: chunk %d "
                           "holds no activations for it", c, mb, ck->prev);
        ZB_TRY(copy(st, dst, zb_gpt_dresid(st, ck, &sv, 0),
                    (size_t)st->N * st->C, err));
    }
    ck->sl.state[s] = ZB_SLOT_BWD;
    return ZB_OK;
}

zb_status zb_gpt_backward_w(zb_stage *st, int c, int mb, zb_err *err) {
    int s;
    if (zb_gpt_bad_index(st, c, mb))
        return zb_fail(err, ZB_ERUNTIME, "W: chunk %d mb %d out of range "
                       "(v=%d, m=%d)", c, mb, st->v, st->m);
    zb_gpt_chunk *ck = &st->chunks[c];
    ZB_TRY(zb_slots_expect(&ck->sl, c, mb, ZB_SLOT_BWD, "W", &s, err));
    zb_slot_view sv;
    zb_gpt_slot_get(st, ck, s, zb_slots_owned(&ck->bsl, mb), &sv);
    if (ck->head) ZB_TRY(head_backward_w(st, ck, &sv, err));
    for (int l = ck->n_layers - 1; l >= 0; l--) {
        layer_params g;
        zb_layer_acts a;
        layer_params_get(st, st->grads, ck, l, &g);
        layer_acts_get(st, ck, &sv, l, &a);
        ZB_TRY(layer_backward_w(st, &g, &a, zb_gpt_resid(st, &sv, l),
                                zb_gpt_dresid(st, ck, &sv, l + 1), err));
    }
    if (ck->embed) {
        zb_act *d0 = zb_gpt_dresid(st, ck, &sv, 0);
        if (!st->vp) /* else EMB_BWD's */
            OP(embed_tokens_bwd, tensor(st, st->grads, ck->pc.wte), d0,
               sv.tokens, st->v0, st->Vv, st->N, st->C);
        if (ck->pc.wpe >= 0)
            OP(embed_pos_bwd, tensor(st, st->grads, ck->pc.wpe), d0, st->B,
               st->T, st->C);
    }
    zb_gpt_slot_release(st, c, s);
    return ZB_OK;
}

/* Transfer buffers (stage.h): NULL when (chunk, mb) is out of range or no
 * slot is free; F then reports the error in full. The activations' storage
 * seen as zb_stage_msg_floats raw floats. */
float *zb_stage_act_in(zb_stage *st, int c, int mb) {
    if (zb_gpt_bad_index(st, c, mb) || zb_gpt_slot_acquire(st, c, mb) < 0)
        return NULL;
    return (float *)slot_buffer(st, c, mb, false, false);
}
float *zb_stage_act_out(zb_stage *st, int c, int mb) {
    return (float *)slot_buffer(st, c, mb, false, true);
}
float *zb_stage_grad_in(zb_stage *st, int c, int mb) {
    return (float *)slot_buffer(st, c, mb, true, true);
}
float *zb_stage_grad_out(zb_stage *st, int c, int mb) {
    return (float *)slot_buffer(st, c, mb, true, false);
}
