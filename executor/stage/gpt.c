/* gpt.c - the stage program (stage.h) over a backend's op table (ops.h):
 * set-up and the arena, activation slots, the step's accounting (loss,
 * gradient norm, pass times), AdamW and checkpoints. The passes themselves
 * are gpt_passes.c, the slot layout gpt_layout.c; the backend queries of
 * stage.h (which backends this build has) are here too. Nothing here knows which backend runs: the CPU ops
 * (ops_cpu.c) and the CUDA ops (ops_cuda.cu) get the same calls.
 *
 * Memory: one arena of backend memory per stage, sized from the plan at
 * creation (parameters, gradients, AdamW moments, activation slots,
 * scratch) and carved into 256-byte aligned buffers; nothing is allocated
 * after zb_stage_new. A microbatch takes a slot at act_in or F and gives
 * it back after W/BW; the given-back slot keeps its contents until the
 * next microbatch takes it, so grad_out can be read (sent) after BW. A
 * schedule needing more slots fails in F with "no free activation slot".
 * Under full recompute the part of a slot that B rebuilds for W (gpt.h,
 * zb_slot_view) comes from a second pool, taken at B and given back with
 * the slot; recompute's one-layer scratch is not per microbatch.
 *
 * Asynchronous backends: passes only enqueue; loss_sum, grad_sumsq,
 * params_to_host, save and pass_times wait (the op table's to_host). A
 * failure inside a call that cannot return it (void, double) is kept and
 * returned by the next pass (the double calls return NaN).
 */
#include "executor/stage/gpt.h"
#include "common/zb_lower.h"
#include "executor/stage/cuda_choice.h"

#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define ZB_ARENA_ALIGN 256 /* bytes: every carved buffer starts aligned */

/* ---- which backends this build has ---- */

const char *zb_backend_name(zb_backend b) {
    return b == ZB_BACKEND_CUDA ? "cuda" : "cpu";
}

bool zb_backend_cuda_built(void) {
#ifdef ZB_HAVE_CUDA
    return true;
#else
    return false;
#endif
}

int zb_backend_cuda_devices(void) {
#ifdef ZB_HAVE_CUDA
    return zb_ops_cuda_device_count();
#else
    return 0;
#endif
}

void zb_backend_cuda_device_name(int device, char *buf, size_t n) {
#ifdef ZB_HAVE_CUDA
    zb_ops_cuda_device_name(device, buf, n);
#else
    snprintf(buf, n, "?");
    (void)device;
#endif
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
    if (cfg->backend == ZB_BACKEND_CUDA) { /* the limit of its attention */
        char why[sizeof err->msg];
        bool bf16 = p->model.train.precision == ZB_PREC_BF16;
        if (zb_cuda_attention_refusal(bf16, a->hidden, a->heads, p->tp, why,
                                      sizeof why))
            return zb_fail(err, ZB_EINPUT, "%s", why);
    }
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
    st->rms = a->norm == ZB_NORM_RMSNORM;
    st->swiglu = a->mlp == ZB_MLP_SWIGLU;
    st->rope = a->position == ZB_POS_ROPE;
    st->gqa = !zb_arch_is_gpt2(a); /* the Llama ops, MHA included */
    st->theta = (float)a->rope_theta;
    st->hs = a->heads > 0 ? a->hidden / a->heads : 0;
    st->KVl = zb_arch_kv_heads(a) / st->tp;
    st->QKVl = st->Cl + 2 * st->KVl * st->hs;
    st->FCl = st->swiglu ? 2 * st->Fl : st->Fl;
    st->Vl = zb_vocab_rows_per_rank(st->V, st->tp);
    st->v0 = st->Vl * st->cfg.tp_rank;
    st->Vv = st->V - st->v0 < st->Vl ? st->V - st->v0 : st->Vl;
    if (st->Vv < 0) st->Vv = 0; /* tp > V: a rank of padding only */
    st->v = p->v;
    st->m = p->m;
    st->rc = p->model.train.recompute;
    st->max_passes = p->sched.len[st->cfg.pp_rank];
}

static zb_status chunk_init(zb_stage *st, int c, zb_err *err) {
    const zb_plan *p = st->plan;
    zb_gpt_chunk *ck = &st->chunks[c];
    int rank = st->cfg.pp_rank;
    ck->vstage = zb_vstage(&p->sched, rank, c);
    const zb_stage_span *sp = &p->stages[ck->vstage];
    ck->n_layers = sp->n_layers;
    ck->embed = sp->embed;
    ck->head = sp->head;
    ck->pc = st->pt.chunk[c];
    ck->prev = -1;
    int pv = zb_vstage_prev(&p->sched, ck->vstage); /* DUAL: in its copy */
    if (pv >= 0) {
        int r, pc;
        zb_vstage_owner(&p->sched, pv, &r, &pc);
        if (r == rank) ck->prev = pc;
    }
    zb_layer_acts la;
    zb_slot_view sv;
    ck->layer_bytes = zb_gpt_layer_carve(st, NULL, &la);
    ck->slot_bytes = zb_gpt_slot_carve(st, ck, NULL, NULL, &sv,
                                       &ck->bslot_bytes);
    ZB_TRY(zb_slots_init(&ck->sl, &p->sched, rank, c, false, err));
    return zb_slots_init(&ck->bsl, &p->sched, rank, c, true, err);
}

/* Next aligned piece of the arena; with the arena NULL only counts. */
static void *carve(zb_stage *st, size_t *off, size_t bytes) {
    void *p = st->arena ? (char *)st->arena + *off : NULL;
    *off += (bytes + ZB_ARENA_ALIGN - 1) / ZB_ARENA_ALIGN * ZB_ARENA_ALIGN;
    return p;
}

/* Lay out (arena NULL: measure) every backend buffer; returns the bytes. */
static size_t arena_layout(zb_stage *st) {
    size_t off = 0, P = st->pt.floats > 0 ? st->pt.floats : 1;
    size_t N = (size_t)st->N, fl = sizeof(float), es = st->es;
    size_t scratch = st->gqa ? st->att_bytes
                             : st->ops.attn_scratch_bytes(st->ops.ctx, st->B,
                                                          st->NHl, st->T);
    st->params = carve(st, &off, P * fl);
    st->grads = carve(st, &off, P * fl);
    st->mom1 = carve(st, &off, P * fl);
    st->mom2 = carve(st, &off, P * fl);
    /* fp32 activations: the GEMMs read the parameters themselves */
    st->wlow = es == fl ? (zb_act *)st->params : carve(st, &off, P * es);
    st->partial = carve(st, &off, N * st->C * fl);
    if (st->plan->model.arch.no_bias)
        st->zero_bias = carve(st, &off, (size_t)st->C * fl);
    st->logits = carve(st, &off, N * st->Vp * es);
    st->losses = carve(st, &off, N * fl);
    st->dgelu = carve(st, &off, N * st->Fl * es);
    st->datty = carve(st, &off, N * st->Cl * es);
    st->datt = carve(st, &off, scratch);
    st->ce = carve(st, &off, (size_t)(st->tp + 2) * N * sizeof(double));
    st->acc = carve(st, &off, 2 * sizeof(double));
    st->targets = carve(st, &off, N * sizeof(int));
    /* recompute's scratch: one layer at a time, not per microbatch */
    zb_layer_acts la;
    if (st->rc != ZB_RECOMPUTE_NONE)
        st->rc_att = carve(st, &off, st->att_bytes);
    if (st->rc == ZB_RECOMPUTE_FULL)
        st->rc_layer = carve(st, &off, zb_gpt_layer_carve_fwd(st, NULL, &la));
    for (int c = 0; c < st->v; c++) {
        zb_gpt_chunk *ck = &st->chunks[c];
        size_t ns = (size_t)(ck->sl.n > 0 ? ck->sl.n : 1);
        ck->slots = carve(st, &off, (size_t)ck->sl.n * ck->slot_bytes);
        ck->tokens = carve(st, &off, ns * N * sizeof(int));
        if (ck->bslot_bytes > 0)
            ck->bslots = carve(st, &off, (size_t)ck->bsl.n * ck->bslot_bytes);
    }
    return off;
}

#ifdef ZB_HAVE_CUDA
static int max3(int a, int b, int c) {
    int m = a > b ? a : b;
    return m > c ? m : c;
}
#endif

/* The backend's op table; the CUDA ops learn the sizes they must hold
 * scratch for (the bias and LayerNorm weight gradients: N rows, at most
 * max(C, 3C/tp, F/tp) columns). */
static zb_status ops_init(zb_stage *st, zb_err *err) {
#ifdef ZB_HAVE_CUDA
    if (st->cfg.backend == ZB_BACKEND_CUDA) {
        zb_ops_cuda_cfg c = {
            .device = st->cfg.device,
            .bf16 = st->plan->model.train.precision == ZB_PREC_BF16,
            .max_passes = st->max_passes,
            .upload_bytes = (size_t)st->N * sizeof(int),
            .wgrad_rows = st->N,
            .wgrad_cols = max3(st->C, st->QKVl, st->FCl),
            .attn_gemm = zb_cuda_attn_gemm(st->plan->model.train.precision ==
                                           ZB_PREC_BF16)};
        return zb_ops_cuda(&c, &st->ops, err);
    }
#endif
    const char *bf = getenv("ZB_ACT_BF16"); /* test hook (ops.h) */
    if (bf && !strcmp(bf, "1")) return zb_ops_cpu_bf16(&st->ops, err);
    zb_ops_cpu(&st->ops);
    return ZB_OK;
}

zb_status zb_gpt_weights_changed(zb_stage *st, zb_err *err) {
    if ((void *)st->wlow == (void *)st->params) return ZB_OK;
    return st->ops.cast(st->ops.ctx, st->wlow, st->params, st->pt.floats, err);
}

static zb_status alloc_all(zb_stage *st, zb_err *err) {
    ZB_TRY(zb_ptable_build(&st->pt, st->plan, st->cfg.pp_rank,
                           st->cfg.tp_rank, err));
    st->chunks = zb_calloc((size_t)st->v, sizeof *st->chunks, err);
    st->host = zb_calloc(st->pt.floats ? st->pt.floats : 1, sizeof(float), err);
    if (!st->chunks || !st->host) return ZB_ENOMEM;
    if (st->ops.stream && st->tp > 1) {
        st->ce_host = zb_calloc((size_t)(st->tp + 2) * st->N, sizeof(double),
                                err);
        if (!st->ce_host) return ZB_ENOMEM;
    }
    st->es = zb_dtype_bytes(st->ops.act_dtype);
    st->nc_bytes = zb_gpt_aligned(st, (size_t)st->N * st->C, st->es);
    st->att_bytes = st->gqa ? st->ops.gqa_saved_bytes(st->ops.ctx, st->B,
                                                      st->NHl, st->T)
                            : st->ops.attn_saved_bytes(st->ops.ctx, st->B,
                                                       st->NHl, st->T);
    int al = st->ops.logits_align > 0 ? st->ops.logits_align : 1;
    st->Vp = (st->Vv + al - 1) / al * al;
    for (int c = 0; c < st->v; c++) ZB_TRY(chunk_init(st, c, err));
    size_t bytes = arena_layout(st);
    ZB_TRY(st->ops.alloc(st->ops.ctx, bytes, &st->arena, err));
    arena_layout(st);
    if (st->zero_bias)
        ZB_TRY(st->ops.memset0(st->ops.ctx, st->zero_bias,
                               (size_t)st->C * sizeof(float), err));
    /* parameters drawn on the host (the same values on every backend) */
    zb_ptable_init(&st->pt, st->host, st->plan->model.train.seed);
    ZB_TRY(st->ops.from_host(st->ops.ctx, st->params, st->host,
                             st->pt.floats * sizeof(float), err));
    ZB_TRY(zb_gpt_weights_changed(st, err));
    return st->ops.step_begin(st->ops.ctx, err);
}

zb_status zb_stage_new(const zb_stage_cfg *cfg, zb_stage **out, zb_err *err) {
    *out = NULL;
    if (cfg->backend != ZB_BACKEND_CPU && !zb_backend_cuda_built())
        return zb_fail(err, ZB_EINPUT, "backend %s: zbrun was built without "
                       "CUDA (no nvcc, cuBLAS or NCCL found at build time)",
                       zb_backend_name(cfg->backend));
    ZB_TRY(check_plan(cfg, err));
    zb_stage *st = zb_calloc(1, sizeof *st, err);
    if (!st) return ZB_ENOMEM;
    st->cfg = *cfg;
    st->plan = cfg->plan;
    set_dims(st, cfg->plan);
    zb_status rc = ops_init(st, err);
    if (rc == ZB_OK) rc = alloc_all(st, err);
    if (rc == ZB_OK) rc = zb_gpt_vocab_new(st, err);
    if (rc != ZB_OK) {
        zb_stage_free(st);
        return rc;
    }
    if (st->ops.stream && st->cfg.tr) st->cfg.tr->stream = st->ops.stream;
    *out = st;
    return ZB_OK;
}

void zb_stage_free(zb_stage *st) {
    if (!st) return;
    zb_gpt_vocab_free(st); /* its arena is the op table's memory */
    if (st->ops.destroy) {
        if (st->cfg.tr && st->ops.stream && st->cfg.tr->stream == st->ops.stream)
            st->cfg.tr->stream = NULL;
        if (st->arena) st->ops.release(st->ops.ctx, st->arena);
        st->ops.destroy(st->ops.ctx);
    }
    if (st->chunks)
        for (int c = 0; c < st->v; c++) {
            zb_slots_free(&st->chunks[c].sl);
            zb_slots_free(&st->chunks[c].bsl);
        }
    free(st->chunks);
    free(st->host);
    free(st->ce_host);
    zb_ptable_free(&st->pt);
    free(st);
}

/* An [N, C] activation moved as raw floats: the transports never look
 * inside a message (only TP/DP all-reduces sum, and those are fp32). */
size_t zb_stage_msg_floats(const zb_stage *st) {
    return ((size_t)st->N * st->C * st->es + sizeof(float) - 1) /
           sizeof(float);
}

/* ---- passes, bracketed for the backend's clock ---- */

static void keep_failure(const zb_stage *cst, zb_status s, const zb_err *e) {
    zb_stage *st = (zb_stage *)cst; /* the kept failure is not the model */
    if (s == ZB_OK || st->sticky != ZB_OK) return;
    st->sticky = s;
    st->sticky_err = *e;
}

static zb_status sticky_check(const zb_stage *st, zb_err *err) {
    if (st->sticky == ZB_OK) return ZB_OK;
    if (err) *err = st->sticky_err;
    return st->sticky;
}

zb_status zb_stage_failure(const zb_stage *st, zb_err *err) {
    return sticky_check(st, err);
}

enum { PASS_F, PASS_B, PASS_W, PASS_BW, PASS_S, PASS_T };

static zb_status timed(zb_stage *st, int kind, int c, int mb,
                       const int *tokens, const int *targets,
                       float loss_scale, zb_err *err) {
    ZB_TRY(sticky_check(st, err));
    int i = st->n_passes++;
    bool t = i < st->max_passes;
    if (t) ZB_TRY(st->ops.pass_begin(st->ops.ctx, i, err));
    if (kind == PASS_F)
        ZB_TRY(zb_gpt_forward(st, c, mb, tokens, targets, loss_scale, err));
    if (kind == PASS_B || kind == PASS_BW)
        ZB_TRY(zb_gpt_backward_b(st, c, mb, err));
    if (kind == PASS_W || kind == PASS_BW)
        ZB_TRY(zb_gpt_backward_w(st, c, mb, err));
    if (kind == PASS_S) ZB_TRY(zb_gpt_vocab_s(st, mb, targets, err));
    if (kind == PASS_T) ZB_TRY(zb_gpt_vocab_t(st, mb, loss_scale, err));
    if (!t) return ZB_OK;
    zb_status s = st->ops.pass_end(st->ops.ctx, i, err);
    if (s != ZB_OK) { /* name the pass (ZB_CUDA_SYNC) */
        static const char *const names[] = {"F", "B", "W", "BW", "S", "T"};
        char m[sizeof err->msg];
        snprintf(m, sizeof m, "%s", err->msg);
        return zb_fail(err, s, "pass %s chunk %d mb %d: %s", names[kind], c,
                       mb, m);
    }
    return ZB_OK;
}

zb_status zb_stage_forward(zb_stage *st, int c, int mb, const int *tokens,
                           const int *targets, float loss_scale, zb_err *err) {
    return timed(st, PASS_F, c, mb, tokens, targets, loss_scale, err);
}
zb_status zb_stage_backward_b(zb_stage *st, int c, int mb, zb_err *err) {
    return timed(st, PASS_B, c, mb, NULL, NULL, 0.0f, err);
}
zb_status zb_stage_backward_w(zb_stage *st, int c, int mb, zb_err *err) {
    return timed(st, PASS_W, c, mb, NULL, NULL, 0.0f, err);
}
zb_status zb_stage_backward_bw(zb_stage *st, int c, int mb, zb_err *err) {
    return timed(st, PASS_BW, c, mb, NULL, NULL, 0.0f, err);
}
zb_status zb_stage_vocab_s(zb_stage *st, int mb, const int *targets,
                           zb_err *err) {
    return timed(st, PASS_S, 0, mb, NULL, targets, 0.0f, err);
}
zb_status zb_stage_vocab_t(zb_stage *st, int mb, float loss_scale,
                           zb_err *err) {
    return timed(st, PASS_T, 0, mb, NULL, NULL, loss_scale, err);
}

void zb_stage_drop(zb_stage *st, int c, int mb) {
    if (zb_gpt_bad_index(st, c, mb)) return;
    int s = zb_slots_owned(&st->chunks[c].sl, mb);
    if (s >= 0) zb_gpt_slot_release(st, c, s);
}

/* The warm-up's input of chunk c: zero activations (F) or gradients (B)
 * where a neighbour rank would send them; a neighbour chunk on this rank
 * hands its own over. */
static zb_status warm_input(zb_stage *st, int c, bool grad, zb_err *err) {
    const zb_schedule *s = &st->plan->sched;
    int vs = zb_vstage(s, st->cfg.pp_rank, c);
    int nb = grad ? zb_vstage_next(s, vs) : zb_vstage_prev(s, vs);
    if (nb < 0 || !zb_lower_cross(s, vs, nb)) return ZB_OK;
    float *buf = grad ? zb_stage_grad_in(st, c, 0) : zb_stage_act_in(st, c, 0);
    if (!buf) return ZB_OK;
    return st->ops.memset0(st->ops.ctx, buf, st->nc_bytes, err);
}

/* The chunks of this rank in pipeline order (ascending virtual stage). */
static void chunk_order(const zb_stage *st, int *order) {
    const zb_schedule *s = &st->plan->sched;
    for (int c = 0; c < st->v; c++) order[c] = c;
    for (int i = 1; i < st->v; i++) /* insertion sort: v is 1 or 2 */
        for (int j = i; j > 0 && zb_vstage(s, st->cfg.pp_rank, order[j]) <
                                     zb_vstage(s, st->cfg.pp_rank, order[j - 1]); j--) {
            int t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
}

/* Microbatch 0 forward through every chunk in pipeline order, then
 * backward in reverse: B then W (split), or BW. */
static zb_status warm_round(zb_stage *st, const int *order, const int *ids,
                            bool split, zb_err *err) {
    for (int i = 0; i < st->v; i++) {
        ZB_TRY(warm_input(st, order[i], false, err));
        ZB_TRY(timed(st, PASS_F, order[i], 0, ids, ids, 1.0f, err));
    }
    for (int i = st->v - 1; i >= 0; i--) {
        ZB_TRY(warm_input(st, order[i], true, err));
        ZB_TRY(timed(st, split ? PASS_B : PASS_BW, order[i], 0, NULL, NULL,
                     0.0f, err));
    }
    for (int i = st->v - 1; split && i >= 0; i--)
        ZB_TRY(timed(st, PASS_W, order[i], 0, NULL, NULL, 0.0f, err));
    return ZB_OK;
}

zb_status zb_stage_warmup(zb_stage *st, zb_err *err) {
    int *ids = zb_calloc((size_t)st->N + (size_t)st->v, sizeof *ids, err);
    if (!ids) return ZB_ENOMEM;
    int *order = ids + st->N;
    chunk_order(st, order);
    double peak = st->act_peak_bytes; /* a step's peak, not the warm-up's */
    zb_status s = warm_round(st, order, ids, true, err);
    if (s == ZB_OK) s = warm_round(st, order, ids, false, err);
    free(ids);
    st->act_peak_bytes = peak;
    ZB_TRY(s);
    zb_stage_zero_grads(st); /* waits for the device (step_begin) */
    return sticky_check(st, err);
}

bool zb_stage_pass_times(zb_stage *st, double *t_start, double *t_end, int n,
                         double t0) {
    if (n != st->n_passes || n > st->max_passes || st->sticky != ZB_OK)
        return false;
    return st->ops.pass_times(st->ops.ctx, t_start, t_end, n, t0);
}

/* ---- gradients, optimizer, accounting ---- */

double zb_stage_loss_sum(const zb_stage *st) {
    if (st->sticky != ZB_OK) return NAN;
    double h = 0.0;
    zb_err e = {{0}};
    zb_status s = st->ops.to_host(st->ops.ctx, &h, &st->acc[0], sizeof h, &e);
    keep_failure(st, s, &e);
    return s == ZB_OK ? h : NAN;
}

static zb_status zero_grads(zb_stage *st, zb_err *err) {
    ZB_TRY(st->ops.step_begin(st->ops.ctx, err));
    ZB_TRY(st->ops.memset0(st->ops.ctx, st->grads,
                           st->pt.floats * sizeof(float), err));
    return st->ops.memset0(st->ops.ctx, st->acc, 2 * sizeof(double), err);
}

void zb_stage_zero_grads(zb_stage *st) {
    zb_err e = {{0}};
    st->n_passes = 0;
    keep_failure(st, zero_grads(st, &e), &e);
}

float *zb_stage_params(zb_stage *st, size_t *n) {
    *n = st->pt.floats;
    return st->params;
}

float *zb_stage_grads(zb_stage *st, size_t *n) {
    *n = st->pt.floats;
    return st->grads;
}

zb_status zb_stage_params_to_host(zb_stage *st, float *dst, size_t n,
                                  zb_err *err) {
    ZB_TRY(sticky_check(st, err));
    if (n != st->pt.floats)
        return zb_fail(err, ZB_ERUNTIME, "params_to_host: %zu floats asked, "
                       "the stage has %zu", n, st->pt.floats);
    return st->ops.to_host(st->ops.ctx, dst, st->params, n * sizeof *dst, err);
}

zb_status zb_stage_params_from_host(zb_stage *st, const float *src, size_t n,
                                    zb_err *err) {
    ZB_TRY(sticky_check(st, err));
    if (n != st->pt.floats)
        return zb_fail(err, ZB_ERUNTIME, "params_from_host: %zu floats given, "
                       "the stage has %zu", n, st->pt.floats);
    ZB_TRY(st->ops.from_host(st->ops.ctx, st->params, src, n * sizeof *src,
                             err));
    return zb_gpt_weights_changed(st, err);
}

float *zb_stage_copy_grads(zb_stage *st, int chunk, size_t *n) {
    if (chunk < 0 || chunk >= st->v) {
        *n = 0;
        return NULL;
    }
    const zb_pchunk *ck = &st->pt.chunk[chunk];
    *n = ck->copy_floats;
    return st->grads + ck->copy_off;
}

float *zb_stage_tied_grad(zb_stage *st, size_t *n) {
    if (st->pt.tied < 0) {
        *n = 0;
        return NULL;
    }
    const zb_ptensor *t = &st->pt.t[st->pt.tied];
    *n = (size_t)t->rows * t->cols;
    return st->grads + t->off;
}

static zb_status grad_sumsq(const zb_stage *st, double *out, zb_err *err) {
    double *acc = &st->acc[1];
    void *ctx = st->ops.ctx;
    ZB_TRY(st->ops.memset0(ctx, acc, sizeof *acc, err));
    for (int j = 0; j < st->pt.n; j++) {
        const zb_ptensor *t = &st->pt.t[j];
        if (t->norm)
            ZB_TRY(st->ops.sumsq_add(ctx, acc, st->grads + t->off,
                                     (size_t)t->rows * t->cols, err));
    }
    return st->ops.to_host(ctx, out, acc, sizeof *out, err);
}

double zb_stage_grad_sumsq(const zb_stage *st) {
    if (st->cfg.dp_rank != 0) return 0.0;
    if (st->sticky != ZB_OK) return NAN;
    double s = 0.0;
    zb_err e = {{0}};
    zb_status rc = grad_sumsq(st, &s, &e);
    keep_failure(st, rc, &e);
    return rc == ZB_OK ? s : NAN;
}

zb_status zb_stage_adamw(zb_stage *st, float lr, float grad_scale, int t,
                         zb_err *err) {
    ZB_TRY(sticky_check(st, err));
    if (t < 1) return zb_fail(err, ZB_ERUNTIME, "AdamW step %d < 1", t);
    const zb_optim *o = &st->plan->model.train.opt;
    for (int j = 0; j < st->pt.n; j++) {
        const zb_ptensor *pt = &st->pt.t[j];
        size_t off = pt->off, n = (size_t)pt->rows * pt->cols;
        float wd = pt->decay ? (float)o->weight_decay : 0.0f;
        ZB_TRY(st->ops.adamw(st->ops.ctx, st->params + off, st->grads + off,
                             st->mom1 + off, st->mom2 + off, n, lr,
                             (float)o->beta1, (float)o->beta2, (float)o->eps,
                             wd, grad_scale, t, err));
    }
    return zb_gpt_weights_changed(st, err);
}

/* params, grads, AdamW m and v; with bf16 activations the GEMMs' copy */
double zb_stage_static_bytes(const zb_stage *st) {
    double P = (double)st->pt.floats;
    return 4.0 * P * sizeof(float) +
           ((void *)st->wlow != (void *)st->params ? P * (double)st->es : 0.0);
}

double zb_stage_act_peak_bytes(const zb_stage *st) {
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

zb_status zb_stage_save(const zb_stage *st, FILE *f, zb_err *err) {
    ZB_TRY(sticky_check(st, err));
    ckpt_header h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, ZB_CKPT_MAGIC, sizeof ZB_CKPT_MAGIC);
    h.version = ZB_CKPT_VERSION;
    h.float_bytes = sizeof(float);
    h.n = st->pt.floats;
    size_t n = st->pt.floats;
    if (fwrite(&h, sizeof h, 1, f) != 1)
        return zb_fail(err, ZB_EIO, "checkpoint: write failed");
    const float *arrays[3] = {st->params, st->mom1, st->mom2};
    for (int k = 0; k < 3; k++) {
        ZB_TRY(st->ops.to_host(st->ops.ctx, st->host, arrays[k],
                               n * sizeof(float), err));
        if (fwrite(st->host, sizeof(float), n, f) != n)
            return zb_fail(err, ZB_EIO, "checkpoint: write failed");
    }
    return ZB_OK;
}

zb_status zb_stage_load(zb_stage *st, FILE *f, zb_err *err) {
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
    float *arrays[3] = {st->params, st->mom1, st->mom2};
    for (int k = 0; k < 3; k++) {
        if (fread(st->host, sizeof(float), n, f) != n)
            return zb_fail(err, ZB_EIO, "checkpoint: truncated data");
        ZB_TRY(st->ops.from_host(st->ops.ctx, arrays[k], st->host,
                                 n * sizeof(float), err));
    }
    return zb_gpt_weights_changed(st, err);
}
