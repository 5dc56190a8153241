/* stage_cpu.c - the GPT stage on the CPU (kernels/ + OpenBLAS), see stage.h.
 *
 * Model (GPT-2): x0 = wte[tokens] + wpe; block: x + attn(ln1(x)) then
 * x + mlp(ln2(x)), attn = proj(attention(qkv(.))), mlp = fc2(gelu(fc(.)));
 * head: final LayerNorm, logits = lnf @ W^T (W = wte when tied), loss =
 * cross-entropy. Parameters: stage_params.h (layout, TP shards, init).
 *
 * Sizes: N = B*T tokens of a microbatch, C hidden, Cl = C/tp and Fl = F/tp
 * the local widths of the sharded matmuls, NHl = heads/tp, V vocab.
 *
 * Passes of one chunk and microbatch:
 *   F  embedding (if held), blocks, head (if held): the head also computes
 *      the loss and dlogits (scaled by loss_scale) and keeps them.
 *   B  input gradients only, last block to first; keeps the dout of every
 *      linear layer and LayerNorm in the microbatch's slot for W.
 *   W  all weight gradients (+=) from what F and B kept; embedding last.
 *   BW B then W (so split and fused give bitwise equal gradients).
 * TP: the partial outputs of proj and fc2 (row-parallel) are all-reduced in
 * F before the replicated bias and the residual are added; the partial
 * input gradients of qkv and fc (column-parallel) are all-reduced in B.
 * Vocabulary-parallel embedding and head (Megatron): each TP rank holds
 * Vl = ceil(V/tp) rows of the token table / LM head (stage_params.h), of
 * which Vv are real (the rest is padding on the last ranks). F of the
 * embedding looks up the tokens in its rows (0 for the others), all-reduces
 * [N, C] and then adds wpe; W scatter-adds only its rows. The head computes
 * logits [N, Vv] of its rows only; the cross-entropy all-reduces the row
 * maxima and then sum(exp) and the target logit over TP (doubles, [N] or
 * [tp, N]), so no rank holds [N, V]; B all-reduces the partial input
 * gradient of the head GEMM. With tied embeddings both copies use the same
 * rows on the same TP rank, so the tied sum stays a per-shard sum.
 *
 * Neighbouring virtual stage on this rank (V placement's turn, or any
 * placement with p = 1): F copies that chunk's act_out into this chunk's
 * act_in, and B copies this chunk's grad_out into that chunk's grad_in.
 * Copies rather than pointers: each chunk's slot then owns everything its
 * W reads, whatever order the two chunks' W passes run in.
 *
 * Activation slots: per chunk, as many as the schedule ever has in flight
 * (F seen, W/BW not yet); all allocated in zb_stage_new. A microbatch takes
 * a slot at act_in or F and gives it back after W/BW; the given-back slot
 * keeps its contents until the next microbatch takes it, so grad_out can be
 * read (sent) after BW. A schedule needing more slots fails in F with
 * "no free activation slot ..." instead of overwriting live activations.
 */
#include "executor/stage/stage.h"
#include "executor/stage/stage_backend.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "executor/stage/slots.h"
#include "executor/stage/stage_params.h"
#include "kernels/adamw.h"
#include "kernels/attention.h"
#include "kernels/crossentropy.h"
#include "kernels/embed.h"
#include "kernels/gelu.h"
#include "kernels/layernorm.h"
#include "kernels/matmul.h"

/* This file's stage state (the CPU backend's); the public zb_stage of
 * stage.c holds a pointer to it. Spelt zb_stage below, as before the
 * backend split. Public entry points: zb_stage_cpu_ops at the end. */
#define zb_stage zb_stage_cpu
typedef struct zb_stage_cpu zb_stage_cpu;


typedef struct {
    int vstage, n_layers;
    bool embed, head;
    int prev;               /* chunk on this rank holding vstage-1, or -1 */
    zb_pchunk pc;           /* its tensors */
    zb_slots sl;            /* which slot holds which microbatch */
    size_t layer_floats;    /* one block's activations in a slot */
    size_t slot_floats;
    float *slots;           /* [sl.n, slot_floats] */
    int *tokens;            /* [sl.n, N] */
} chunk;

struct zb_stage {
    zb_stage_cfg cfg;
    const zb_plan *plan;
    int B, T, N, C, V, NH, F;  /* model dims, N = B*T */
    int tp, Cl, Fl, NHl;       /* local dims under TP */
    int Vl, v0, Vv;            /* vocab rows per rank, first row, real rows */
    int v, m;
    zb_ptable pt;
    float *params, *grads, *mom1, *mom2; /* [pt.floats] each */
    chunk *chunks;             /* [v] */
    float *scratch;            /* one allocation for the buffers below */
    float *partial;            /* [N, C] row-parallel output before reduce */
    float *logits;             /* [N, Vv] this rank's vocabulary rows */
    double *ce;                /* [(tp + 2) * N] cross-entropy statistics */
    float *losses;             /* [N] */
    float *dgelu;              /* [N, Fl] grad wrt gelu output */
    float *datty;              /* [N, Cl] grad wrt attention output */
    float *datt;               /* [B, NHl, T, T] attention backward scratch */
    double loss_sum;
    double act_bytes, act_peak_bytes;
};

/* ---- slot layout ---- */

typedef struct {
    float *ln1, *ln1_mean, *ln1_rstd; /* [N, C] [N] [N] */
    float *qkv;                       /* [N, 3Cl] */
    float *att;                       /* [B, NHl, T, T] */
    float *atty;                      /* [N, Cl] attention output */
    float *res2;                      /* [N, C] x + attn */
    float *ln2, *ln2_mean, *ln2_rstd; /* [N, C] [N] [N] */
    float *fch, *fch_gelu;            /* [N, Fl] */
    /* kept by B for W */
    float *dres2;                     /* [N, C] grad wrt res2 (proj dout) */
    float *dln2;                      /* [N, C] grad wrt ln2 out, reduced */
    float *dfch;                      /* [N, Fl] grad wrt fch (fc dout) */
    float *dqkv;                      /* [N, 3Cl] qkv dout */
    float *dln1;                      /* [N, C] grad wrt ln1 out, reduced */
} layer_acts;

typedef struct {
    float *resid;   /* [L+1, N, C]: [0] chunk input (act_in or embedding
                       output), [l+1] output of block l, [L] = act_out */
    float *dresid;  /* [L+1, N, C]: their gradients, [0] = grad_out,
                       [L] = grad_in */
    float *lnf, *lnf_mean, *lnf_rstd; /* head: [N, C] [N] [N] */
    float *dlnf;    /* [N, C] grad wrt lnf output */
    float *dlogits; /* [N, Vv] loss_scale * (softmax - onehot), own rows */
    float *layers;  /* [L, layer_floats] */
    int *tokens;    /* [N] (embedding chunk) */
} slot_view;

/* Next n floats from base + *off; with base NULL only counts. */
static float *take(float *base, size_t *off, size_t n) {
    float *p = base ? base + *off : NULL;
    *off += n;
    return p;
}

static size_t layer_carve(const zb_stage *st, float *base, layer_acts *a) {
    size_t N = (size_t)st->N, C = (size_t)st->C, Cl = (size_t)st->Cl,
           Fl = (size_t)st->Fl, off = 0;
    a->ln1 = take(base, &off, N * C);
    a->ln1_mean = take(base, &off, N);
    a->ln1_rstd = take(base, &off, N);
    a->qkv = take(base, &off, N * 3 * Cl);
    a->att = take(base, &off, (size_t)st->B * st->NHl * st->T * st->T);
    a->atty = take(base, &off, N * Cl);
    a->res2 = take(base, &off, N * C);
    a->ln2 = take(base, &off, N * C);
    a->ln2_mean = take(base, &off, N);
    a->ln2_rstd = take(base, &off, N);
    a->fch = take(base, &off, N * Fl);
    a->fch_gelu = take(base, &off, N * Fl);
    a->dres2 = take(base, &off, N * C);
    a->dln2 = take(base, &off, N * C);
    a->dfch = take(base, &off, N * Fl);
    a->dqkv = take(base, &off, N * 3 * Cl);
    a->dln1 = take(base, &off, N * C);
    return off;
}

static size_t slot_carve(const zb_stage *st, const chunk *ck, float *base,
                         slot_view *sv) {
    size_t N = (size_t)st->N, C = (size_t)st->C, L = (size_t)ck->n_layers,
           off = 0;
    size_t hn = ck->head ? 1 : 0; /* head buffers only on the head chunk */
    sv->resid = take(base, &off, (L + 1) * N * C);
    sv->dresid = take(base, &off, (L + 1) * N * C);
    sv->lnf = take(base, &off, hn * N * C);
    sv->lnf_mean = take(base, &off, hn * N);
    sv->lnf_rstd = take(base, &off, hn * N);
    sv->dlnf = take(base, &off, hn * N * C);
    sv->dlogits = take(base, &off, hn * N * (size_t)st->Vv);
    sv->layers = take(base, &off, L * ck->layer_floats);
    sv->tokens = NULL;
    return off;
}

static void slot_get(const zb_stage *st, const chunk *ck, int slot,
                     slot_view *sv) {
    slot_carve(st, ck, ck->slots + (size_t)slot * ck->slot_floats, sv);
    sv->tokens = ck->tokens + (size_t)slot * st->N;
}

static float *resid_at(const zb_stage *st, float *buf, int l) {
    return buf + (size_t)l * st->N * st->C;
}

/* ---- parameters of a block ---- */

typedef struct {
    float *ln1w, *ln1b, *qkvw, *qkvb, *projw, *projb;
    float *ln2w, *ln2b, *fcw, *fcb, *fc2w, *fc2b;
} layer_params;

static float *tensor(const zb_stage *st, float *base, int idx) {
    return base + st->pt.t[idx].off;
}

/* Block l of chunk ck in base (params or grads). */
static void layer_params_get(const zb_stage *st, float *base, const chunk *ck,
                             int l, layer_params *w) {
    int t0 = ck->pc.layer0 + l * ZB_T_PER_LAYER;
    w->ln1w = tensor(st, base, t0 + ZB_T_LN1W);
    w->ln1b = tensor(st, base, t0 + ZB_T_LN1B);
    w->qkvw = tensor(st, base, t0 + ZB_T_QKVW);
    w->qkvb = tensor(st, base, t0 + ZB_T_QKVB);
    w->projw = tensor(st, base, t0 + ZB_T_PROJW);
    w->projb = tensor(st, base, t0 + ZB_T_PROJB);
    w->ln2w = tensor(st, base, t0 + ZB_T_LN2W);
    w->ln2b = tensor(st, base, t0 + ZB_T_LN2B);
    w->fcw = tensor(st, base, t0 + ZB_T_FCW);
    w->fcb = tensor(st, base, t0 + ZB_T_FCB);
    w->fc2w = tensor(st, base, t0 + ZB_T_FC2W);
    w->fc2b = tensor(st, base, t0 + ZB_T_FC2B);
}

/* ---- helpers ---- */

static zb_status tp_allreduce(zb_stage *st, float *buf, size_t n, zb_err *err) {
    if (st->tp == 1) return ZB_OK;
    return st->cfg.tr->allreduce(st->cfg.tr, st->cfg.tp_group, buf, n, err);
}

/* Elements below which a loop runs on one thread: starting a team costs
 * more than the work (and spinning threads hurt on a busy machine). */
#define ZB_OMP_MIN_ELEMS (1 << 16)

/* out[N, C] = x + part + bias (bias replicated, added once after reduce) */
static void residual_add(float *out, const float *x, const float *part,
                         const float *bias, int N, int C) {
#pragma omp parallel for schedule(static) if ((size_t)N * C >= ZB_OMP_MIN_ELEMS)
    for (int n = 0; n < N; n++)
        for (int c = 0; c < C; c++) {
            size_t i = (size_t)n * C + c;
            out[i] = x[i] + (part[i] + bias[c]);
        }
}

static void zero(float *p, size_t n) { memset(p, 0, n * sizeof *p); }

/* ---- one block ---- */

/* x, out [N, C] */
static zb_status layer_forward(zb_stage *st, const layer_params *w,
                               const layer_acts *a, const float *x, float *out,
                               zb_err *err) {
    int N = st->N, C = st->C, Cl = st->Cl, Fl = st->Fl;
    zb_layernorm_forward(a->ln1, a->ln1_mean, a->ln1_rstd, x, w->ln1w, w->ln1b, N, C);
    zb_matmul_forward(a->qkv, a->ln1, w->qkvw, w->qkvb, N, C, 3 * Cl);
    zb_attention_forward(a->atty, a->att, a->qkv, st->B, st->T, Cl, st->NHl);
    zb_matmul_forward(st->partial, a->atty, w->projw, NULL, N, Cl, C);
    ZB_TRY(tp_allreduce(st, st->partial, (size_t)N * C, err));
    residual_add(a->res2, x, st->partial, w->projb, N, C);
    zb_layernorm_forward(a->ln2, a->ln2_mean, a->ln2_rstd, a->res2, w->ln2w, w->ln2b, N, C);
    zb_matmul_forward(a->fch, a->ln2, w->fcw, w->fcb, N, C, Fl);
    zb_gelu_forward(a->fch_gelu, a->fch, (size_t)N * Fl);
    zb_matmul_forward(st->partial, a->fch_gelu, w->fc2w, NULL, N, Fl, C);
    ZB_TRY(tp_allreduce(st, st->partial, (size_t)N * C, err));
    residual_add(out, a->res2, st->partial, w->fc2b, N, C);
    return ZB_OK;
}

/* B: dx [N, C] = gradient wrt x given dout [N, C] wrt the block output. */
static zb_status layer_backward_b(zb_stage *st, const layer_params *w,
                                  const layer_acts *a, const float *x,
                                  const float *dout, float *dx, zb_err *err) {
    int N = st->N, C = st->C, Cl = st->Cl, Fl = st->Fl;
    size_t NC = (size_t)N * C;
    /* MLP branch */
    zero(st->dgelu, (size_t)N * Fl);
    zb_matmul_backward_input(st->dgelu, dout, w->fc2w, N, Fl, C);
    zero(a->dfch, (size_t)N * Fl);
    zb_gelu_backward(a->dfch, a->fch, st->dgelu, (size_t)N * Fl);
    zero(a->dln2, NC);
    zb_matmul_backward_input(a->dln2, a->dfch, w->fcw, N, C, Fl);
    ZB_TRY(tp_allreduce(st, a->dln2, NC, err));
    memcpy(a->dres2, dout, NC * sizeof(float));
    zb_layernorm_backward_input(a->dres2, a->dln2, a->res2, w->ln2w,
                                a->ln2_mean, a->ln2_rstd, N, C);
    /* attention branch */
    zero(st->datty, (size_t)N * Cl);
    zb_matmul_backward_input(st->datty, a->dres2, w->projw, N, Cl, C);
    zero(a->dqkv, (size_t)N * 3 * Cl);
    zb_attention_backward(a->dqkv, st->datt, st->datty, a->qkv, a->att, st->B, st->T,
                          Cl, st->NHl);
    zero(a->dln1, NC);
    zb_matmul_backward_input(a->dln1, a->dqkv, w->qkvw, N, C, 3 * Cl);
    ZB_TRY(tp_allreduce(st, a->dln1, NC, err));
    memcpy(dx, a->dres2, NC * sizeof(float));
    zb_layernorm_backward_input(dx, a->dln1, x, w->ln1w, a->ln1_mean,
                                a->ln1_rstd, N, C);
    return ZB_OK;
}

/* W: weight gradients (+= into g) from what F and B kept. */
static void layer_backward_w(zb_stage *st, const layer_params *g,
                             const layer_acts *a, const float *x,
                             const float *dout) {
    int N = st->N, C = st->C, Cl = st->Cl, Fl = st->Fl;
    zb_matmul_backward_weight(g->fc2w, g->fc2b, dout, a->fch_gelu, N, Fl, C);
    zb_matmul_backward_weight(g->fcw, g->fcb, a->dfch, a->ln2, N, C, Fl);
    zb_layernorm_backward_weight(g->ln2w, g->ln2b, a->dln2, a->res2,
                                 a->ln2_mean, a->ln2_rstd, N, C);
    zb_matmul_backward_weight(g->projw, g->projb, a->dres2, a->atty, N, Cl, C);
    zb_matmul_backward_weight(g->qkvw, g->qkvb, a->dqkv, a->ln1, N, C, 3 * Cl);
    zb_layernorm_backward_weight(g->ln1w, g->ln1b, a->dln1, x, a->ln1_mean,
                                 a->ln1_rstd, N, C);
}

static void layer_acts_get(const zb_stage *st, const chunk *ck,
                           const slot_view *sv, int l, layer_acts *a) {
    layer_carve(st, sv->layers + (size_t)l * ck->layer_floats, a);
}

/* ---- head: final LayerNorm, LM head, loss ---- */

static zb_status tp_allreduce_f64(zb_stage *st, double *buf, size_t n,
                                  zb_err *err) {
    if (st->tp == 1) return ZB_OK;
    return st->cfg.tr->allreduce_f64(st->cfg.tr, st->cfg.tp_group, buf, n, err);
}

/* Vocab-parallel cross-entropy of logits [N, Vv] (rows v0.. of the
 * vocabulary): loss sum into st->loss_sum, dlogits of these rows. The TP
 * transport only sums, so the row maxima travel as a [tp, N] table (each
 * rank fills its own row, zeros elsewhere) and every rank takes the max. */
static zb_status vocab_parallel_ce(zb_stage *st, const float *logits,
                                   float *dlogits, const int *targets,
                                   float loss_scale, zb_err *err) {
    int N = st->N, tp = st->tp;
    double *tab = st->ce, *M = st->ce, *S = st->ce + (size_t)tp * N,
           *Zt = S + N;
    memset(tab, 0, (size_t)tp * N * sizeof *tab);
    zb_ce_shard_max(tab + (size_t)st->cfg.tp_rank * N, logits, N, st->Vv);
    ZB_TRY(tp_allreduce_f64(st, tab, (size_t)tp * N, err));
    for (int n = 0; n < N; n++) /* M[n] = max over ranks, in place (k >= 1) */
        for (int k = 1; k < tp; k++)
            if (tab[(size_t)k * N + n] > M[n]) M[n] = tab[(size_t)k * N + n];
    zb_ce_shard_stats(S, Zt, logits, M, targets, st->v0, N, st->Vv);
    ZB_TRY(tp_allreduce_f64(st, S, 2 * (size_t)N, err));
    st->loss_sum += zb_ce_shard_loss(st->losses, M, S, Zt, N);
    zb_ce_shard_backward(dlogits, logits, M, S, targets, st->v0, loss_scale,
                         N, st->Vv);
    return ZB_OK;
}

static zb_status head_forward(zb_stage *st, const chunk *ck,
                              const slot_view *sv, const int *targets,
                              float loss_scale, zb_err *err) {
    int N = st->N, C = st->C;
    const float *h = resid_at(st, sv->resid, ck->n_layers); /* [N, C] */
    zb_layernorm_forward(sv->lnf, sv->lnf_mean, sv->lnf_rstd, h,
                         tensor(st, st->params, ck->pc.lnfw),
                         tensor(st, st->params, ck->pc.lnfb), N, C);
    const float *wh = tensor(st, st->params, ck->pc.head); /* [Vl, C] */
    zb_matmul_forward(st->logits, sv->lnf, wh, NULL, N, C, st->Vv);
    return vocab_parallel_ce(st, st->logits, sv->dlogits, targets, loss_scale,
                             err);
}

static zb_status head_backward_b(zb_stage *st, const chunk *ck,
                                 const slot_view *sv, zb_err *err) {
    int N = st->N, C = st->C;
    const float *h = resid_at(st, sv->resid, ck->n_layers);
    float *dh = resid_at(st, sv->dresid, ck->n_layers);
    zero(sv->dlnf, (size_t)N * C);
    zb_matmul_backward_input(sv->dlnf, sv->dlogits,
                             tensor(st, st->params, ck->pc.head), N, C, st->Vv);
    /* each rank has the part from its vocabulary rows */
    ZB_TRY(tp_allreduce(st, sv->dlnf, (size_t)N * C, err));
    zero(dh, (size_t)N * C);
    zb_layernorm_backward_input(dh, sv->dlnf, h, tensor(st, st->params, ck->pc.lnfw),
                                sv->lnf_mean, sv->lnf_rstd, N, C);
    return ZB_OK;
}

static void head_backward_w(zb_stage *st, const chunk *ck, const slot_view *sv) {
    int N = st->N, C = st->C;
    const float *h = resid_at(st, sv->resid, ck->n_layers);
    zb_matmul_backward_weight(tensor(st, st->grads, ck->pc.head), NULL,
                              sv->dlogits, sv->lnf, N, C, st->Vv);
    zb_layernorm_backward_weight(tensor(st, st->grads, ck->pc.lnfw),
                                 tensor(st, st->grads, ck->pc.lnfb), sv->dlnf,
                                 h, sv->lnf_mean, sv->lnf_rstd, N, C);
}

/* ---- slots ---- */

static bool bad_index(const zb_stage *st, int c, int mb) {
    return c < 0 || c >= st->v || mb < 0 || mb >= st->m;
}

/* Slot of (chunk c, mb), taking a free one on first touch (slots.h); -1
 * if none. Counts the activation memory a newly taken slot holds. */
static int slot_acquire(zb_stage *st, int c, int mb) {
    chunk *ck = &st->chunks[c];
    bool taken;
    int s = zb_slots_acquire(&ck->sl, mb, &taken);
    if (taken) {
        st->act_bytes += (double)ck->slot_floats * sizeof(float) +
                         (double)st->N * sizeof(int);
        if (st->act_bytes > st->act_peak_bytes) st->act_peak_bytes = st->act_bytes;
    }
    return s;
}

/* Back to the pool; mapping and buffers stay until reuse (slots.h). */
static void slot_release(zb_stage *st, int c, int s) {
    chunk *ck = &st->chunks[c];
    ck->sl.state[s] = ZB_SLOT_FREE;
    st->act_bytes -= (double)ck->slot_floats * sizeof(float) +
                     (double)st->N * sizeof(int);
}

/* The slot of (c, mb) if it is in state `want`, else an error naming why. */
static zb_status slot_expect(zb_stage *st, int c, int mb, int want,
                             const char *pass, int *slot, zb_err *err) {
    if (bad_index(st, c, mb))
        return zb_fail(err, ZB_ERUNTIME, "%s: chunk %d mb %d out of range "
                       "(v=%d, m=%d)", pass, c, mb, st->v, st->m);
    return zb_slots_expect(&st->chunks[c].sl, c, mb, want, pass, slot, err);
}

/* ---- transfer buffers ---- */

static size_t cpu_stage_msg_floats(const zb_stage *st) {
    return (size_t)st->N * st->C;
}

/* Buffer l of resid (grad = false) or dresid of an existing slot. */
static float *slot_buffer(zb_stage *st, int c, int mb, bool grad, bool last) {
    if (bad_index(st, c, mb)) return NULL;
    chunk *ck = &st->chunks[c];
    int s = ck->sl.slot_of[mb];
    if (s < 0) return NULL;
    slot_view sv;
    slot_get(st, ck, s, &sv);
    return resid_at(st, grad ? sv.dresid : sv.resid, last ? ck->n_layers : 0);
}

/* NULL when (chunk, mb) is out of range or no slot is free; F then reports
 * the error in full. */
static float *cpu_stage_act_in(zb_stage *st, int chunk, int mb) {
    if (bad_index(st, chunk, mb) || slot_acquire(st, chunk, mb) < 0) return NULL;
    return slot_buffer(st, chunk, mb, false, false);
}
static float *cpu_stage_act_out(zb_stage *st, int chunk, int mb) {
    return slot_buffer(st, chunk, mb, false, true);
}
static float *cpu_stage_grad_in(zb_stage *st, int chunk, int mb) {
    return slot_buffer(st, chunk, mb, true, true);
}
static float *cpu_stage_grad_out(zb_stage *st, int chunk, int mb) {
    return slot_buffer(st, chunk, mb, true, false);
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

/* Inputs of F: the previous chunk's output when it is on this rank. */
static zb_status forward_input(zb_stage *st, int c, int mb, const int *tokens,
                               const slot_view *sv, zb_err *err) {
    const chunk *ck = &st->chunks[c];
    size_t NC = (size_t)st->N * st->C;
    if (ck->embed) { /* vocab-parallel lookup, sum over TP, then wpe */
        memcpy(sv->tokens, tokens, (size_t)st->N * sizeof(int));
        zb_embed_tokens_shard(sv->resid, tokens, tensor(st, st->params, ck->pc.wte),
                              st->v0, st->Vv, st->N, st->C);
        ZB_TRY(tp_allreduce(st, sv->resid, NC, err));
        zb_embed_add_pos(sv->resid, tensor(st, st->params, ck->pc.wpe), st->B,
                         st->T, st->C);
    } else if (ck->prev >= 0) {
        const float *src = cpu_stage_act_out(st, ck->prev, mb);
        int ps = st->chunks[ck->prev].sl.slot_of[mb];
        if (!src || st->chunks[ck->prev].sl.state[ps] < ZB_SLOT_FWD)
            return zb_fail(err, ZB_ERUNTIME, "F on chunk %d mb %d before F "
                           "on chunk %d (its input)", c, mb, ck->prev);
        memcpy(sv->resid, src, NC * sizeof(float));
    }
    return ZB_OK;
}

static zb_status cpu_stage_forward(zb_stage *st, int c, int mb, const int *tokens,
                           const int *targets, float loss_scale, zb_err *err) {
    if (bad_index(st, c, mb))
        return zb_fail(err, ZB_ERUNTIME, "F: chunk %d mb %d out of range "
                       "(v=%d, m=%d)", c, mb, st->v, st->m);
    chunk *ck = &st->chunks[c];
    if (ck->embed && !tokens)
        return zb_fail(err, ZB_ERUNTIME, "F on chunk %d needs tokens", c);
    if (ck->head && !targets)
        return zb_fail(err, ZB_ERUNTIME, "F on chunk %d needs targets", c);
    if (ck->embed) ZB_TRY(check_ids(st, tokens, "tokens", err));
    if (ck->head) ZB_TRY(check_ids(st, targets, "targets", err));
    int s = slot_acquire(st, c, mb);
    if (s < 0)
        return zb_fail(err, ZB_ERUNTIME, "no free activation slot on chunk "
                       "%d for mb %d (the plan allows %d in flight)", c, mb,
                       ck->sl.n);
    if (ck->sl.state[s] != ZB_SLOT_TAKEN)
        return zb_fail(err, ZB_ERUNTIME, "F on chunk %d mb %d twice", c, mb);
    slot_view sv;
    slot_get(st, ck, s, &sv);
    ZB_TRY(forward_input(st, c, mb, tokens, &sv, err));
    for (int l = 0; l < ck->n_layers; l++) {
        layer_params w;
        layer_acts a;
        layer_params_get(st, st->params, ck, l, &w);
        layer_acts_get(st, ck, &sv, l, &a);
        ZB_TRY(layer_forward(st, &w, &a, resid_at(st, sv.resid, l),
                             resid_at(st, sv.resid, l + 1), err));
    }
    if (ck->head) ZB_TRY(head_forward(st, ck, &sv, targets, loss_scale, err));
    ck->sl.state[s] = ZB_SLOT_FWD;
    return ZB_OK;
}

static zb_status cpu_stage_backward_b(zb_stage *st, int c, int mb, zb_err *err) {
    int s;
    ZB_TRY(slot_expect(st, c, mb, ZB_SLOT_FWD, "B", &s, err));
    chunk *ck = &st->chunks[c];
    slot_view sv;
    slot_get(st, ck, s, &sv);
    if (ck->head) ZB_TRY(head_backward_b(st, ck, &sv, err));
    for (int l = ck->n_layers - 1; l >= 0; l--) {
        layer_params w;
        layer_acts a;
        layer_params_get(st, st->params, ck, l, &w);
        layer_acts_get(st, ck, &sv, l, &a);
        ZB_TRY(layer_backward_b(st, &w, &a, resid_at(st, sv.resid, l),
                                resid_at(st, sv.dresid, l + 1),
                                resid_at(st, sv.dresid, l), err));
    }
    if (ck->prev >= 0) { /* hand grad_out to the chunk before, on this rank */
        float *dst = cpu_stage_grad_in(st, ck->prev, mb);
        if (!dst)
            return zb_fail(err, ZB_ERUNTIME, "B on chunk %d mb %d: chunk %d "
                           "holds no activations for it", c, mb, ck->prev);
        memcpy(dst, sv.dresid, (size_t)st->N * st->C * sizeof(float));
    }
    ck->sl.state[s] = ZB_SLOT_BWD;
    return ZB_OK;
}

static zb_status cpu_stage_backward_w(zb_stage *st, int c, int mb, zb_err *err) {
    int s;
    ZB_TRY(slot_expect(st, c, mb, ZB_SLOT_BWD, "W", &s, err));
    chunk *ck = &st->chunks[c];
    slot_view sv;
    slot_get(st, ck, s, &sv);
    if (ck->head) head_backward_w(st, ck, &sv);
    for (int l = ck->n_layers - 1; l >= 0; l--) {
        layer_params g;
        layer_acts a;
        layer_params_get(st, st->grads, ck, l, &g);
        layer_acts_get(st, ck, &sv, l, &a);
        layer_backward_w(st, &g, &a, resid_at(st, sv.resid, l),
                         resid_at(st, sv.dresid, l + 1));
    }
    if (ck->embed) {
        zb_embed_tokens_shard_backward(tensor(st, st->grads, ck->pc.wte),
                                       sv.dresid, sv.tokens, st->v0, st->Vv,
                                       st->N, st->C);
        zb_embed_pos_backward(tensor(st, st->grads, ck->pc.wpe), sv.dresid,
                              st->B, st->T, st->C);
    }
    slot_release(st, c, s);
    return ZB_OK;
}

static zb_status cpu_stage_backward_bw(zb_stage *st, int c, int mb, zb_err *err) {
    ZB_TRY(cpu_stage_backward_b(st, c, mb, err));
    return cpu_stage_backward_w(st, c, mb, err);
}

static void cpu_stage_drop(zb_stage *st, int c, int mb) {
    if (bad_index(st, c, mb)) return;
    int s = zb_slots_owned(&st->chunks[c].sl, mb);
    if (s >= 0) slot_release(st, c, s);
}

/* ---- set-up ---- */

static zb_status check_plan(const zb_stage_cfg *cfg, zb_err *err) {
    const zb_plan *p = cfg->plan;
    const zb_arch *a = &p->model.arch;
    if (p->pp < 1 || p->v < 1 || p->m < 1 || p->micro_batch < 1 || p->tp < 1)
        return zb_fail(err, ZB_EINPUT, "stage: bad plan sizes pp=%d v=%d m=%d "
                       "micro_batch=%d tp=%d", p->pp, p->v, p->m,
                       p->micro_batch, p->tp);
    if (p->sched.p != p->pp || p->sched.v != p->v || !p->stages)
        return zb_fail(err, ZB_EINPUT, "stage: schedule (p=%d v=%d) does not "
                       "match the plan (pp=%d v=%d)", p->sched.p, p->sched.v,
                       p->pp, p->v);
    if (a->layers < 1 || a->hidden < 1 || a->seq_len < 1 || a->vocab < 1 ||
        a->ffn_hidden < 1)
        return zb_fail(err, ZB_EINPUT, "stage: bad model shape");
    for (int s = 0; s < p->pp * p->v; s++) {
        const zb_stage_span *sp = &p->stages[s];
        if (sp->first_layer < 0 || sp->n_layers < 0 ||
            sp->first_layer + sp->n_layers > a->layers)
            return zb_fail(err, ZB_EINPUT, "stage: virtual stage %d holds "
                           "layers [%d, %d) outside [0, %d)", s,
                           sp->first_layer, sp->first_layer + sp->n_layers,
                           a->layers);
    }
    if (p->tp > 1 && (!cfg->tr || !cfg->tp_group || cfg->tp_group->n != p->tp))
        return zb_fail(err, ZB_EINPUT, "stage: tp=%d needs a transport and a "
                       "TP group of %d ranks", p->tp, p->tp);
    return ZB_OK;
}

static void set_dims(zb_stage *st, const zb_plan *p) {
    const zb_arch *a = &p->model.arch;
    st->B = p->micro_batch;
    st->T = a->seq_len;
    st->N = st->B * st->T;
    st->C = a->hidden;
    st->V = a->vocab;
    st->NH = a->heads;
    st->F = a->ffn_hidden;
    st->tp = p->tp;
    st->Cl = st->C / st->tp;
    st->Fl = st->F / st->tp;
    st->NHl = st->NH / st->tp;
    st->Vl = zb_vocab_rows_per_rank(st->V, st->tp);
    st->v0 = st->Vl * st->cfg.tp_rank;
    st->Vv = st->V - st->v0 < st->Vl ? st->V - st->v0 : st->Vl;
    if (st->Vv < 0) st->Vv = 0; /* tp > V: a rank of padding only */
    st->v = p->v;
    st->m = p->m;
}

static zb_status chunk_init(zb_stage *st, int c, zb_err *err) {
    const zb_plan *p = st->plan;
    chunk *ck = &st->chunks[c];
    int rank = st->cfg.pp_rank;
    ck->vstage = zb_vstage(&p->sched, rank, c);
    const zb_stage_span *sp = &p->stages[ck->vstage];
    ck->n_layers = sp->n_layers;
    ck->embed = sp->embed;
    ck->head = sp->head;
    ck->pc = st->pt.chunk[c];
    ck->prev = -1;
    if (ck->vstage > 0) {
        int r, pc;
        zb_vstage_owner(&p->sched, ck->vstage - 1, &r, &pc);
        if (r == rank) ck->prev = pc;
    }
    layer_acts la;
    slot_view sv;
    ck->layer_floats = layer_carve(st, NULL, &la);
    ck->slot_floats = slot_carve(st, ck, NULL, &sv);
    ZB_TRY(zb_slots_init(&ck->sl, &p->sched, rank, c, err));
    size_t ns = (size_t)(ck->sl.n > 0 ? ck->sl.n : 1);
    ck->slots = zb_calloc((size_t)ck->sl.n * ck->slot_floats, sizeof(float), err);
    ck->tokens = zb_calloc(ns * (size_t)st->N, sizeof(int), err);
    return ck->slots && ck->tokens ? ZB_OK : ZB_ENOMEM;
}

static zb_status alloc_buffers(zb_stage *st, zb_err *err) {
    size_t n = st->pt.floats > 0 ? st->pt.floats : 1;
    st->params = zb_calloc(n, sizeof(float), err);
    st->grads = zb_calloc(n, sizeof(float), err);
    st->mom1 = zb_calloc(n, sizeof(float), err);
    st->mom2 = zb_calloc(n, sizeof(float), err);
    size_t N = (size_t)st->N, off = 0;
    take(NULL, &off, N * st->C);
    take(NULL, &off, N * st->Vv);
    take(NULL, &off, N);
    take(NULL, &off, N * st->Fl);
    take(NULL, &off, N * st->Cl);
    take(NULL, &off, (size_t)st->B * st->NHl * st->T * st->T);
    st->scratch = zb_calloc(off, sizeof(float), err);
    st->ce = zb_calloc((size_t)(st->tp + 2) * N, sizeof(double), err);
    if (!st->params || !st->grads || !st->mom1 || !st->mom2 || !st->scratch ||
        !st->ce)
        return ZB_ENOMEM;
    off = 0;
    st->partial = take(st->scratch, &off, N * st->C);
    st->logits = take(st->scratch, &off, N * st->Vv);
    st->losses = take(st->scratch, &off, N);
    st->dgelu = take(st->scratch, &off, N * st->Fl);
    st->datty = take(st->scratch, &off, N * st->Cl);
    st->datt = take(st->scratch, &off, (size_t)st->B * st->NHl * st->T * st->T);
    return ZB_OK;
}

static void cpu_stage_free(zb_stage *st);

static zb_status cpu_stage_new(const zb_stage_cfg *cfg, zb_stage **out, zb_err *err) {
    *out = NULL;
    ZB_TRY(check_plan(cfg, err));
    zb_stage *st = zb_calloc(1, sizeof *st, err);
    if (!st) return ZB_ENOMEM;
    st->cfg = *cfg;
    st->plan = cfg->plan;
    set_dims(st, cfg->plan);
    zb_status rc = zb_ptable_build(&st->pt, cfg->plan, cfg->pp_rank,
                                   cfg->tp_rank, err);
    if (rc == ZB_OK) rc = alloc_buffers(st, err);
    if (rc == ZB_OK) {
        st->chunks = zb_calloc((size_t)st->v, sizeof *st->chunks, err);
        if (!st->chunks) rc = ZB_ENOMEM;
    }
    for (int c = 0; rc == ZB_OK && c < st->v; c++) rc = chunk_init(st, c, err);
    if (rc != ZB_OK) {
        cpu_stage_free(st);
        return rc;
    }
    zb_ptable_init(&st->pt, st->params, cfg->plan->model.train.seed);
    *out = st;
    return ZB_OK;
}

static void cpu_stage_free(zb_stage *st) {
    if (!st) return;
    if (st->chunks)
        for (int c = 0; c < st->v; c++) {
            chunk *ck = &st->chunks[c];
            free(ck->slots);
            free(ck->tokens);
            zb_slots_free(&ck->sl);
        }
    free(st->chunks);
    free(st->params);
    free(st->grads);
    free(st->mom1);
    free(st->mom2);
    free(st->scratch);
    free(st->ce);
    zb_ptable_free(&st->pt);
    free(st);
}

/* ---- gradients, optimizer, accounting ---- */

static double cpu_stage_loss_sum(const zb_stage *st) { return st->loss_sum; }

static void cpu_stage_zero_grads(zb_stage *st) {
    zero(st->grads, st->pt.floats);
    st->loss_sum = 0.0;
}

static float *cpu_stage_params(zb_stage *st, size_t *n) {
    *n = st->pt.floats;
    return st->params;
}

static float *cpu_stage_grads(zb_stage *st, size_t *n) {
    *n = st->pt.floats;
    return st->grads;
}

static float *cpu_stage_tied_grad(zb_stage *st, size_t *n) {
    if (st->pt.tied < 0) {
        *n = 0;
        return NULL;
    }
    const zb_ptensor *t = &st->pt.t[st->pt.tied];
    *n = (size_t)t->rows * t->cols;
    return st->grads + t->off;
}

static double cpu_stage_grad_sumsq(const zb_stage *st) {
    if (st->cfg.dp_rank != 0) return 0.0;
    double s = 0.0;
    for (int j = 0; j < st->pt.n; j++) {
        const zb_ptensor *t = &st->pt.t[j];
        if (t->norm) s += zb_sumsq(st->grads + t->off, (size_t)t->rows * t->cols);
    }
    return s;
}

static zb_status cpu_stage_adamw(zb_stage *st, float lr, float grad_scale, int t,
                         zb_err *err) {
    if (t < 1) return zb_fail(err, ZB_ERUNTIME, "AdamW step %d < 1", t);
    const zb_optim *o = &st->plan->model.train.opt;
    for (int j = 0; j < st->pt.n; j++) {
        const zb_ptensor *pt = &st->pt.t[j];
        size_t off = pt->off, n = (size_t)pt->rows * pt->cols;
        float wd = pt->decay ? (float)o->weight_decay : 0.0f;
        zb_adamw_update(st->params + off, st->grads + off, st->mom1 + off,
                        st->mom2 + off, n, lr, (float)o->beta1, (float)o->beta2,
                        (float)o->eps, wd, grad_scale, t);
    }
    return ZB_OK;
}

static double cpu_stage_static_bytes(const zb_stage *st) {
    return 4.0 * (double)st->pt.floats * sizeof(float);
}

static double cpu_stage_act_peak_bytes(const zb_stage *st) {
    return st->act_peak_bytes;
}

/* ---- checkpoint: header, then params, AdamW m, AdamW v (native floats) ---- */

#define ZB_CKPT_MAGIC "ZBSTAGE"
#define ZB_CKPT_VERSION 1u

typedef struct {
    char magic[8];      /* "ZBSTAGE\0" */
    uint32_t version;
    uint32_t float_bytes;
    uint64_t n;         /* floats in each of the three arrays */
} ckpt_header;

static zb_status cpu_stage_save(const zb_stage *st, FILE *f, zb_err *err) {
    ckpt_header h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, ZB_CKPT_MAGIC, sizeof ZB_CKPT_MAGIC);
    h.version = ZB_CKPT_VERSION;
    h.float_bytes = sizeof(float);
    h.n = st->pt.floats;
    size_t n = st->pt.floats;
    if (fwrite(&h, sizeof h, 1, f) != 1 ||
        fwrite(st->params, sizeof(float), n, f) != n ||
        fwrite(st->mom1, sizeof(float), n, f) != n ||
        fwrite(st->mom2, sizeof(float), n, f) != n)
        return zb_fail(err, ZB_EIO, "checkpoint: write failed");
    return ZB_OK;
}

static zb_status cpu_stage_load(zb_stage *st, FILE *f, zb_err *err) {
    ckpt_header h;
    if (fread(&h, sizeof h, 1, f) != 1)
        return zb_fail(err, ZB_EIO, "checkpoint: truncated header");
    if (memcmp(h.magic, ZB_CKPT_MAGIC, sizeof ZB_CKPT_MAGIC) != 0)
        return zb_fail(err, ZB_EINPUT, "checkpoint: not a zb stage checkpoint "
                       "(bad magic)");
    if (h.version != ZB_CKPT_VERSION || h.float_bytes != sizeof(float))
        return zb_fail(err, ZB_EINPUT, "checkpoint: version %u with %u-byte "
                       "floats, expected version %u with %zu-byte floats",
                       h.version, h.float_bytes, ZB_CKPT_VERSION, sizeof(float));
    size_t n = st->pt.floats;
    if (h.n != n)
        return zb_fail(err, ZB_EINPUT, "checkpoint: holds %llu parameters, "
                       "this stage has %zu (another model or layout?)",
                       (unsigned long long)h.n, n);
    if (fread(st->params, sizeof(float), n, f) != n ||
        fread(st->mom1, sizeof(float), n, f) != n ||
        fread(st->mom2, sizeof(float), n, f) != n)
        return zb_fail(err, ZB_EIO, "checkpoint: truncated data");
    return ZB_OK;
}

/* ---- the backend table (stage_backend.h): void * state to this file's ---- */

static zb_status op_create(const zb_stage_cfg *cfg, void **out, zb_err *err) {
    zb_stage *st;
    zb_status s = cpu_stage_new(cfg, &st, err);
    *out = st;
    return s;
}
static void op_destroy(void *s) { cpu_stage_free(s); }
static size_t op_msg_floats(const void *s) { return cpu_stage_msg_floats(s); }
static float *op_act_in(void *s, int c, int mb) { return cpu_stage_act_in(s, c, mb); }
static float *op_act_out(void *s, int c, int mb) { return cpu_stage_act_out(s, c, mb); }
static float *op_grad_in(void *s, int c, int mb) { return cpu_stage_grad_in(s, c, mb); }
static float *op_grad_out(void *s, int c, int mb) { return cpu_stage_grad_out(s, c, mb); }
static zb_status op_forward(void *s, int c, int mb, const int *tokens,
                            const int *targets, float loss_scale, zb_err *err) {
    return cpu_stage_forward(s, c, mb, tokens, targets, loss_scale, err);
}
static zb_status op_backward_b(void *s, int c, int mb, zb_err *err) {
    return cpu_stage_backward_b(s, c, mb, err);
}
static zb_status op_backward_w(void *s, int c, int mb, zb_err *err) {
    return cpu_stage_backward_w(s, c, mb, err);
}
static zb_status op_backward_bw(void *s, int c, int mb, zb_err *err) {
    return cpu_stage_backward_bw(s, c, mb, err);
}
static double op_loss_sum(const void *s) { return cpu_stage_loss_sum(s); }
static void op_zero_grads(void *s) { cpu_stage_zero_grads(s); }
static float *op_params(void *s, size_t *n) { return cpu_stage_params(s, n); }
static float *op_grads(void *s, size_t *n) { return cpu_stage_grads(s, n); }
static zb_status op_params_to_host(void *s, float *dst, size_t n, zb_err *err) {
    size_t have;
    const float *p = cpu_stage_params(s, &have);
    if (n != have)
        return zb_fail(err, ZB_ERUNTIME, "params_to_host: %zu floats asked, "
                       "the stage has %zu", n, have);
    memcpy(dst, p, n * sizeof *dst);
    return ZB_OK;
}
static zb_status op_params_from_host(void *s, const float *src, size_t n,
                                     zb_err *err) {
    size_t have;
    float *p = cpu_stage_params(s, &have);
    if (n != have)
        return zb_fail(err, ZB_ERUNTIME, "params_from_host: %zu floats given, "
                       "the stage has %zu", n, have);
    memcpy(p, src, n * sizeof *p);
    return ZB_OK;
}
static void op_drop(void *s, int c, int mb) { cpu_stage_drop(s, c, mb); }
static float *op_tied_grad(void *s, size_t *n) { return cpu_stage_tied_grad(s, n); }
static double op_grad_sumsq(const void *s) { return cpu_stage_grad_sumsq(s); }
static zb_status op_adamw(void *s, float lr, float grad_scale, int t,
                          zb_err *err) {
    return cpu_stage_adamw(s, lr, grad_scale, t, err);
}
static double op_static_bytes(const void *s) { return cpu_stage_static_bytes(s); }
static double op_act_peak_bytes(const void *s) { return cpu_stage_act_peak_bytes(s); }
/* The host clock of the caller already times the (synchronous) passes. */
static bool op_pass_times(void *s, double *t_start, double *t_end, int n,
                          double t0) {
    return false;
}
static zb_status op_save(const void *s, FILE *f, zb_err *err) {
    return cpu_stage_save(s, f, err);
}
static zb_status op_load(void *s, FILE *f, zb_err *err) {
    return cpu_stage_load(s, f, err);
}

const zb_stage_ops zb_stage_cpu_ops = {
    .name = "cpu", .create = op_create, .destroy = op_destroy,
    .msg_floats = op_msg_floats, .act_in = op_act_in, .act_out = op_act_out,
    .grad_in = op_grad_in, .grad_out = op_grad_out, .forward = op_forward,
    .backward_b = op_backward_b, .backward_w = op_backward_w,
    .backward_bw = op_backward_bw, .loss_sum = op_loss_sum,
    .zero_grads = op_zero_grads, .params = op_params, .grads = op_grads,
    .params_to_host = op_params_to_host, .params_from_host = op_params_from_host,
    .drop = op_drop, .tied_grad = op_tied_grad,
    .grad_sumsq = op_grad_sumsq, .adamw = op_adamw,
    .static_bytes = op_static_bytes, .act_peak_bytes = op_act_peak_bytes,
    .pass_times = op_pass_times, .save = op_save, .load = op_load,
};
