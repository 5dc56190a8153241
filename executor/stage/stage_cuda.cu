/* stage_cuda.cu - the GPT stage on one CUDA device (cuBLAS + kernels/cuda),
 * behind the same backend table as stage_cpu.c (stage_backend.h). It is
 * that file's twin, pass by pass: same model, same parameter table and
 * initialisation (stage_params.h, drawn on the host and copied), the same
 * activation-slot discipline and the same transfer-buffer contract; only
 * the memory (device) and the attention (fused, kernels/cuda/attention.cu:
 * the slot keeps the row log-sum-exp [B, NHl, T] instead of the [T, T]
 * softmax) differ. Precision: fp32 everywhere (cuBLAS without TF32), so
 * results match the CPU stage to rounding.
 *
 * Memory: one device arena per stage, sized from the plan at creation
 * (parameters, gradients, AdamW moments, activation slots, scratch) and
 * carved into buffers; nothing is allocated on the device afterwards. Out
 * of memory names the rank, the bytes asked and the bytes free.
 *
 * Streams and time: all work of the stage goes to one compute stream of
 * its own (the transport orders its copies against it, transport.h).
 * Passes only enqueue. Two events bracket every pass; the host waits for
 * the device at the start of a step (zb_stage_zero_grads, which also
 * takes the reference time) and when it reads the step's loss and
 * gradient norm. A CUDA failure inside a void or double call is kept and
 * returned by the next pass (the double calls return NaN). Debugging:
 * ZB_CUDA_SYNC=1 waits after every pass and names the pass that faulted.
 *
 * Sizes as in stage_cpu.c: N = B*T tokens, C hidden, Cl = C/tp, Fl = F/tp,
 * NHl = heads/tp, V vocab.
 */
extern "C" {
#include "executor/stage/stage.h"
#include "executor/stage/stage_backend.h"
#include "executor/stage/slots.h"
#include "executor/stage/stage_params.h"
}
#include "executor/host/cuda_util.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>


#define ZB_ARENA_ALIGN 256 /* bytes: every carved buffer starts aligned */
#define ZB_CUBLAS_WORKSPACE ((size_t)32 << 20) /* what cuBLAS asks on Hopper */

struct cu_chunk {
    int vstage, n_layers;
    bool embed, head;
    int prev;               /* chunk on this rank holding vstage-1, or -1 */
    zb_pchunk pc;
    zb_slots sl;            /* host: which slot holds which microbatch */
    size_t layer_floats, slot_floats;
    float *slots;           /* device [sl.n, slot_floats] */
    int *tokens;            /* device [sl.n, N] */
    int *targets;           /* device [sl.n, N] (head chunk) */
    int *staged;            /* pinned host [sl.n, 2, N]: tokens, targets
                               on their way to the device */
    cudaEvent_t *staged_done; /* [sl.n] the copies out of staged ended */
};

struct cu_stage {
    zb_stage_cfg cfg;
    const zb_plan *plan;
    int B, T, N, C, V, NH, F;
    int tp, Cl, Fl, NHl;
    int v, m;
    bool bf16;              /* plan precision bf16: tensor-core GEMMs */
    bool debug_sync;        /* ZB_CUDA_SYNC=1: wait after every pass */
    zb_ptable pt;
    cudaStream_t stream;
    cublasHandle_t blas;
    char *arena;            /* device, the only allocation */
    size_t arena_bytes;
    float *params, *grads, *mom1, *mom2;     /* device [pt.floats] */
    float *partial;         /* [N, C] row-parallel output before reduce */
    float *logits;          /* [N, V] */
    float *losses;          /* [N] */
    float *dgelu;           /* [N, Fl] */
    float *datty;           /* [N, Cl] */
    float *dsum;            /* [B, NHl, T] attention backward scratch */
    double *acc;            /* [2]: loss sum, grad sum of squares */
    void *workspace;        /* cuBLAS workspace, ZB_CUBLAS_WORKSPACE bytes */
    double *sum_scratch;    /* zb_cuda_sum_scratch_doubles() */
    cu_chunk *chunks;       /* host [v] */
    float *host;            /* host [pt.floats]: init, save, load */
    /* host copies of acc after the step's wait */
    mutable double loss_host, sumsq_host;
    mutable bool loss_valid;
    /* first CUDA failure of a call that cannot return it */
    mutable zb_status sticky;
    mutable zb_err sticky_err;
    double act_bytes, act_peak_bytes;
    /* pass events of this step; reference event and its host time */
    int max_passes, n_passes;
    cudaEvent_t *ev_start, *ev_end;
    cudaEvent_t ev_ref;
    double ref_host_s;
};

static double mono_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- slot layout (stage_cpu.c's, with lse instead of att) ---- */

struct layer_acts {
    float *ln1, *ln1_mean, *ln1_rstd; /* [N, C] [N] [N] */
    float *qkv;                       /* [N, 3Cl] */
    float *lse;                       /* [B, NHl, T] attention row lse */
    float *atty;                      /* [N, Cl] */
    float *res2;                      /* [N, C] */
    float *ln2, *ln2_mean, *ln2_rstd; /* [N, C] [N] [N] */
    float *fch, *fch_gelu;            /* [N, Fl] */
    float *dres2, *dln2;              /* [N, C] kept by B for W */
    float *dfch;                      /* [N, Fl] */
    float *dqkv;                      /* [N, 3Cl] */
    float *dln1;                      /* [N, C] */
};

struct slot_view {
    float *resid, *dresid;            /* [L+1, N, C] each */
    float *lnf, *lnf_mean, *lnf_rstd; /* head: [N, C] [N] [N] */
    float *dlnf;                      /* [N, C] */
    float *dlogits;                   /* [N, V] */
    float *layers;                    /* [L, layer_floats] */
    int *tokens, *targets;            /* [N] device */
    int *staged_tokens, *staged_targets; /* [N] pinned host */
    cudaEvent_t staged_done;
};

static float *take(float *base, size_t *off, size_t n) {
    float *p = base ? base + *off : NULL;
    *off += n;
    return p;
}

static size_t layer_carve(const cu_stage *st, float *base, layer_acts *a) {
    size_t N = (size_t)st->N, C = (size_t)st->C, Cl = (size_t)st->Cl,
           Fl = (size_t)st->Fl, off = 0;
    a->ln1 = take(base, &off, N * C);
    a->ln1_mean = take(base, &off, N);
    a->ln1_rstd = take(base, &off, N);
    a->qkv = take(base, &off, N * 3 * Cl);
    a->lse = take(base, &off, (size_t)st->B * st->NHl * st->T);
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

static size_t slot_carve(const cu_stage *st, const cu_chunk *ck, float *base,
                         slot_view *sv) {
    size_t N = (size_t)st->N, C = (size_t)st->C, L = (size_t)ck->n_layers,
           off = 0, hn = ck->head ? 1 : 0;
    sv->resid = take(base, &off, (L + 1) * N * C);
    sv->dresid = take(base, &off, (L + 1) * N * C);
    sv->lnf = take(base, &off, hn * N * C);
    sv->lnf_mean = take(base, &off, hn * N);
    sv->lnf_rstd = take(base, &off, hn * N);
    sv->dlnf = take(base, &off, hn * N * C);
    sv->dlogits = take(base, &off, hn * N * (size_t)st->V);
    sv->layers = take(base, &off, L * ck->layer_floats);
    sv->tokens = sv->targets = NULL;
    return off;
}

static void slot_get(const cu_stage *st, const cu_chunk *ck, int slot,
                     slot_view *sv) {
    slot_carve(st, ck, ck->slots + (size_t)slot * ck->slot_floats, sv);
    sv->tokens = ck->tokens + (size_t)slot * st->N;
    sv->targets = ck->targets + (size_t)slot * st->N;
    sv->staged_tokens = ck->staged + (size_t)slot * 2 * st->N;
    sv->staged_targets = sv->staged_tokens + st->N;
    sv->staged_done = ck->staged_done[slot];
}

static float *resid_at(const cu_stage *st, float *buf, int l) {
    return buf + (size_t)l * st->N * st->C;
}

static void layer_acts_get(const cu_stage *st, const cu_chunk *ck,
                           const slot_view *sv, int l, layer_acts *a) {
    layer_carve(st, sv->layers + (size_t)l * ck->layer_floats, a);
}

/* ---- parameters of a block ---- */

struct layer_params {
    float *ln1w, *ln1b, *qkvw, *qkvb, *projw, *projb;
    float *ln2w, *ln2b, *fcw, *fcb, *fc2w, *fc2b;
};

static float *tensor(const cu_stage *st, float *base, int idx) {
    return base + st->pt.t[idx].off;
}

static void layer_params_get(const cu_stage *st, float *base,
                             const cu_chunk *ck, int l, layer_params *w) {
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

static zb_status tp_allreduce(cu_stage *st, float *buf, size_t n, zb_err *err) {
    if (st->tp == 1) return ZB_OK;
    return st->cfg.tr->allreduce(st->cfg.tr, st->cfg.tp_group, buf, n, err);
}

static zb_status zero(cu_stage *st, float *p, size_t n, zb_err *err) {
    ZB_CUDA(cudaMemsetAsync(p, 0, n * sizeof *p, st->stream));
    return ZB_OK;
}

static zb_status copy(cu_stage *st, float *dst, const float *src, size_t n,
                      zb_err *err) {
    ZB_CUDA(cudaMemcpyAsync(dst, src, n * sizeof *dst, cudaMemcpyDeviceToDevice,
                            st->stream));
    return ZB_OK;
}

/* A failure kept by a call that could not return it. */
static zb_status sticky_check(const cu_stage *st, zb_err *err) {
    if (st->sticky == ZB_OK) return ZB_OK;
    if (err) *err = st->sticky_err;
    return st->sticky;
}

static void keep_failure(const cu_stage *st, zb_status s, const zb_err *e) {
    if (s == ZB_OK || st->sticky != ZB_OK) return;
    st->sticky = s;
    st->sticky_err = *e;
}

/* ---- one block (stage_cpu.c's layer_forward etc., on the device) ---- */

static zb_status layer_forward(cu_stage *st, const layer_params *w,
                               const layer_acts *a, const float *x, float *out,
                               zb_err *err) {
    int N = st->N, C = st->C, Cl = st->Cl, Fl = st->Fl;
    cudaStream_t s = st->stream;
    ZB_KERNEL(zb_cuda_layernorm_forward(a->ln1, a->ln1_mean, a->ln1_rstd, x,
                                        w->ln1w, w->ln1b, N, C, s));
    ZB_KERNEL(zb_cuda_matmul_forward(st->blas, a->qkv, a->ln1, w->qkvw, w->qkvb,
                                     N, C, 3 * Cl, st->bf16, s));
    ZB_KERNEL(zb_cuda_attention_forward(a->atty, a->lse, a->qkv, st->B, st->T,
                                        Cl, st->NHl, s));
    ZB_KERNEL(zb_cuda_matmul_forward(st->blas, st->partial, a->atty, w->projw,
                                     NULL, N, Cl, C, st->bf16, s));
    ZB_TRY(tp_allreduce(st, st->partial, (size_t)N * C, err));
    ZB_KERNEL(zb_cuda_residual_add(a->res2, x, st->partial, w->projb, N, C, s));
    ZB_KERNEL(zb_cuda_layernorm_forward(a->ln2, a->ln2_mean, a->ln2_rstd,
                                        a->res2, w->ln2w, w->ln2b, N, C, s));
    ZB_KERNEL(zb_cuda_matmul_forward(st->blas, a->fch, a->ln2, w->fcw, w->fcb,
                                     N, C, Fl, st->bf16, s));
    ZB_KERNEL(zb_cuda_gelu_forward(a->fch_gelu, a->fch, (size_t)N * Fl, s));
    ZB_KERNEL(zb_cuda_matmul_forward(st->blas, st->partial, a->fch_gelu,
                                     w->fc2w, NULL, N, Fl, C, st->bf16, s));
    ZB_TRY(tp_allreduce(st, st->partial, (size_t)N * C, err));
    ZB_KERNEL(zb_cuda_residual_add(out, a->res2, st->partial, w->fc2b, N, C, s));
    return ZB_OK;
}

/* B: dx [N, C] from dout [N, C]; keeps what W needs in the slot. */
static zb_status layer_backward_b(cu_stage *st, const layer_params *w,
                                  const layer_acts *a, const float *x,
                                  const float *dout, float *dx, zb_err *err) {
    int N = st->N, C = st->C, Cl = st->Cl, Fl = st->Fl;
    size_t NC = (size_t)N * C;
    cudaStream_t s = st->stream;
    /* MLP branch */
    ZB_TRY(zero(st, st->dgelu, (size_t)N * Fl, err));
    ZB_KERNEL(zb_cuda_matmul_backward_input(st->blas, st->dgelu, dout, w->fc2w,
                                            N, Fl, C, st->bf16, s));
    ZB_TRY(zero(st, a->dfch, (size_t)N * Fl, err));
    ZB_KERNEL(zb_cuda_gelu_backward(a->dfch, a->fch, st->dgelu, (size_t)N * Fl, s));
    ZB_TRY(zero(st, a->dln2, NC, err));
    ZB_KERNEL(zb_cuda_matmul_backward_input(st->blas, a->dln2, a->dfch, w->fcw,
                                            N, C, Fl, st->bf16, s));
    ZB_TRY(tp_allreduce(st, a->dln2, NC, err));
    ZB_TRY(copy(st, a->dres2, dout, NC, err));
    ZB_KERNEL(zb_cuda_layernorm_backward_input(a->dres2, a->dln2, a->res2,
                                               w->ln2w, a->ln2_mean,
                                               a->ln2_rstd, N, C, s));
    /* attention branch */
    ZB_TRY(zero(st, st->datty, (size_t)N * Cl, err));
    ZB_KERNEL(zb_cuda_matmul_backward_input(st->blas, st->datty, a->dres2,
                                            w->projw, N, Cl, C, st->bf16, s));
    ZB_KERNEL(zb_cuda_attention_backward(a->dqkv, st->dsum, st->datty, a->qkv,
                                         a->atty, a->lse, st->B, st->T, Cl,
                                         st->NHl, s));
    ZB_TRY(zero(st, a->dln1, NC, err));
    ZB_KERNEL(zb_cuda_matmul_backward_input(st->blas, a->dln1, a->dqkv, w->qkvw,
                                            N, C, 3 * Cl, st->bf16, s));
    ZB_TRY(tp_allreduce(st, a->dln1, NC, err));
    ZB_TRY(copy(st, dx, a->dres2, NC, err));
    ZB_KERNEL(zb_cuda_layernorm_backward_input(dx, a->dln1, x, w->ln1w,
                                               a->ln1_mean, a->ln1_rstd, N, C, s));
    return ZB_OK;
}

/* W: weight gradients (+= into g) from what F and B kept. */
static zb_status layer_backward_w(cu_stage *st, const layer_params *g,
                                  const layer_acts *a, const float *x,
                                  const float *dout, zb_err *err) {
    int N = st->N, C = st->C, Cl = st->Cl, Fl = st->Fl;
    cudaStream_t s = st->stream;
    ZB_KERNEL(zb_cuda_matmul_backward_weight(st->blas, g->fc2w, g->fc2b, dout,
                                             a->fch_gelu, N, Fl, C, st->bf16, s));
    ZB_KERNEL(zb_cuda_matmul_backward_weight(st->blas, g->fcw, g->fcb, a->dfch,
                                             a->ln2, N, C, Fl, st->bf16, s));
    ZB_KERNEL(zb_cuda_layernorm_backward_weight(g->ln2w, g->ln2b, a->dln2,
                                                a->res2, a->ln2_mean,
                                                a->ln2_rstd, N, C, s));
    ZB_KERNEL(zb_cuda_matmul_backward_weight(st->blas, g->projw, g->projb,
                                             a->dres2, a->atty, N, Cl, C, st->bf16, s));
    ZB_KERNEL(zb_cuda_matmul_backward_weight(st->blas, g->qkvw, g->qkvb,
                                             a->dqkv, a->ln1, N, C, 3 * Cl, st->bf16, s));
    ZB_KERNEL(zb_cuda_layernorm_backward_weight(g->ln1w, g->ln1b, a->dln1, x,
                                                a->ln1_mean, a->ln1_rstd, N, C, s));
    return ZB_OK;
}

/* ---- head: final LayerNorm, LM head, loss ---- */

static zb_status head_forward(cu_stage *st, const cu_chunk *ck,
                              const slot_view *sv, const int *targets,
                              float loss_scale, zb_err *err) {
    int N = st->N, C = st->C, V = st->V;
    cudaStream_t s = st->stream;
    const float *h = resid_at(st, sv->resid, ck->n_layers);
    ZB_KERNEL(zb_cuda_layernorm_forward(sv->lnf, sv->lnf_mean, sv->lnf_rstd, h,
                                        tensor(st, st->params, ck->pc.lnfw),
                                        tensor(st, st->params, ck->pc.lnfb), N,
                                        C, s));
    ZB_KERNEL(zb_cuda_matmul_forward(st->blas, st->logits, sv->lnf,
                                     tensor(st, st->params, ck->pc.head), NULL,
                                     N, C, V, st->bf16, s));
    ZB_KERNEL(zb_cuda_crossentropy_forward(st->losses, st->logits, sv->targets,
                                           N, V, s));
    ZB_KERNEL(zb_cuda_sum_add(&st->acc[0], st->sum_scratch, st->losses,
                              (size_t)N, s));
    ZB_KERNEL(zb_cuda_crossentropy_backward(sv->dlogits, st->logits,
                                            sv->targets, loss_scale, N, V, s));
    return ZB_OK;
}

static zb_status head_backward_b(cu_stage *st, const cu_chunk *ck,
                                 const slot_view *sv, zb_err *err) {
    int N = st->N, C = st->C, V = st->V;
    cudaStream_t s = st->stream;
    const float *h = resid_at(st, sv->resid, ck->n_layers);
    float *dh = resid_at(st, sv->dresid, ck->n_layers);
    ZB_TRY(zero(st, sv->dlnf, (size_t)N * C, err));
    ZB_KERNEL(zb_cuda_matmul_backward_input(st->blas, sv->dlnf, sv->dlogits,
                                            tensor(st, st->params, ck->pc.head),
                                            N, C, V, st->bf16, s));
    ZB_TRY(zero(st, dh, (size_t)N * C, err));
    ZB_KERNEL(zb_cuda_layernorm_backward_input(dh, sv->dlnf, h,
                                               tensor(st, st->params, ck->pc.lnfw),
                                               sv->lnf_mean, sv->lnf_rstd, N, C, s));
    return ZB_OK;
}

static zb_status head_backward_w(cu_stage *st, const cu_chunk *ck,
                                 const slot_view *sv, zb_err *err) {
    int N = st->N, C = st->C, V = st->V;
    cudaStream_t s = st->stream;
    const float *h = resid_at(st, sv->resid, ck->n_layers);
    ZB_KERNEL(zb_cuda_matmul_backward_weight(st->blas,
                                             tensor(st, st->grads, ck->pc.head),
                                             NULL, sv->dlogits, sv->lnf, N, C,
                                             V, st->bf16, s));
    ZB_KERNEL(zb_cuda_layernorm_backward_weight(
        tensor(st, st->grads, ck->pc.lnfw), tensor(st, st->grads, ck->pc.lnfb),
        sv->dlnf, h, sv->lnf_mean, sv->lnf_rstd, N, C, s));
    return ZB_OK;
}

/* ---- slots (host bookkeeping: slots.h, shared with stage_cpu.c) ---- */

static bool bad_index(const cu_stage *st, int c, int mb) {
    return c < 0 || c >= st->v || mb < 0 || mb >= st->m;
}

static int slot_acquire(cu_stage *st, int c, int mb) {
    cu_chunk *ck = &st->chunks[c];
    bool taken;
    int s = zb_slots_acquire(&ck->sl, mb, &taken);
    if (taken) {
        st->act_bytes += (double)ck->slot_floats * sizeof(float) +
                         (double)st->N * sizeof(int);
        if (st->act_bytes > st->act_peak_bytes) st->act_peak_bytes = st->act_bytes;
    }
    return s;
}

static void slot_release(cu_stage *st, int c, int s) {
    cu_chunk *ck = &st->chunks[c];
    ck->sl.state[s] = ZB_SLOT_FREE;
    st->act_bytes -= (double)ck->slot_floats * sizeof(float) +
                     (double)st->N * sizeof(int);
}

static zb_status slot_expect(cu_stage *st, int c, int mb, int want,
                             const char *pass, int *slot, zb_err *err) {
    if (bad_index(st, c, mb))
        return zb_fail(err, ZB_ERUNTIME, "%s: chunk %d mb %d out of range "
                       "(v=%d, m=%d)", pass, c, mb, st->v, st->m);
    return zb_slots_expect(&st->chunks[c].sl, c, mb, want, pass, slot, err);
}

static float *slot_buffer(cu_stage *st, int c, int mb, bool grad, bool last) {
    if (bad_index(st, c, mb)) return NULL;
    cu_chunk *ck = &st->chunks[c];
    int s = ck->sl.slot_of[mb];
    if (s < 0) return NULL;
    slot_view sv;
    slot_get(st, ck, s, &sv);
    return resid_at(st, grad ? sv.dresid : sv.resid, last ? ck->n_layers : 0);
}

static float *cu_act_in(cu_stage *st, int c, int mb) {
    if (bad_index(st, c, mb) || slot_acquire(st, c, mb) < 0) return NULL;
    return slot_buffer(st, c, mb, false, false);
}
static float *cu_act_out(cu_stage *st, int c, int mb) {
    return slot_buffer(st, c, mb, false, true);
}
static float *cu_grad_in(cu_stage *st, int c, int mb) {
    return slot_buffer(st, c, mb, true, true);
}
static float *cu_grad_out(cu_stage *st, int c, int mb) {
    return slot_buffer(st, c, mb, true, false);
}

/* ---- passes ---- */

static zb_status check_ids(const cu_stage *st, const int *ids, const char *what,
                           zb_err *err) {
    for (int i = 0; i < st->N; i++)
        if (ids[i] < 0 || ids[i] >= st->V)
            return zb_fail(err, ZB_ERUNTIME, "%s[%d] = %d outside the "
                           "vocabulary [0, %d)", what, i, ids[i], st->V);
    return ZB_OK;
}

/* Tokens (embedding chunk) and targets (head chunk) to the slot's device
 * buffers without a host wait: through the slot's pinned staging buffer,
 * reused only once its previous copies have run (event). */
static zb_status stage_ids(cu_stage *st, const cu_chunk *ck,
                           const slot_view *sv, const int *tokens,
                           const int *targets, zb_err *err) {
    if (!ck->embed && !ck->head) return ZB_OK;
    size_t bytes = (size_t)st->N * sizeof(int);
    ZB_CUDA(cudaEventSynchronize(sv->staged_done));
    if (ck->embed) {
        memcpy(sv->staged_tokens, tokens, bytes);
        ZB_CUDA(cudaMemcpyAsync(sv->tokens, sv->staged_tokens, bytes,
                                cudaMemcpyHostToDevice, st->stream));
    }
    if (ck->head) {
        memcpy(sv->staged_targets, targets, bytes);
        ZB_CUDA(cudaMemcpyAsync(sv->targets, sv->staged_targets, bytes,
                                cudaMemcpyHostToDevice, st->stream));
    }
    ZB_CUDA(cudaEventRecord(sv->staged_done, st->stream));
    return ZB_OK;
}

static zb_status forward_input(cu_stage *st, int c, int mb, const int *tokens,
                               const slot_view *sv, zb_err *err) {
    const cu_chunk *ck = &st->chunks[c];
    if (ck->embed) {
        ZB_KERNEL(zb_cuda_embed_forward(sv->resid, sv->tokens,
                                        tensor(st, st->params, ck->pc.wte),
                                        tensor(st, st->params, ck->pc.wpe),
                                        st->B, st->T, st->C, st->stream));
    } else if (ck->prev >= 0) {
        const float *src = cu_act_out(st, ck->prev, mb);
        int ps = st->chunks[ck->prev].sl.slot_of[mb];
        if (!src || st->chunks[ck->prev].sl.state[ps] < ZB_SLOT_FWD)
            return zb_fail(err, ZB_ERUNTIME, "F on chunk %d mb %d before F "
                           "on chunk %d (its input)", c, mb, ck->prev);
        ZB_TRY(copy(st, sv->resid, src, (size_t)st->N * st->C, err));
    }
    return ZB_OK;
}

static zb_status cu_forward(cu_stage *st, int c, int mb, const int *tokens,
                            const int *targets, float loss_scale, zb_err *err) {
    if (bad_index(st, c, mb))
        return zb_fail(err, ZB_ERUNTIME, "F: chunk %d mb %d out of range "
                       "(v=%d, m=%d)", c, mb, st->v, st->m);
    cu_chunk *ck = &st->chunks[c];
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
    ZB_TRY(stage_ids(st, ck, &sv, tokens, targets, err));
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

static zb_status cu_backward_b(cu_stage *st, int c, int mb, zb_err *err) {
    int s;
    ZB_TRY(slot_expect(st, c, mb, ZB_SLOT_FWD, "B", &s, err));
    cu_chunk *ck = &st->chunks[c];
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
    if (ck->prev >= 0) {
        float *dst = cu_grad_in(st, ck->prev, mb);
        if (!dst)
            return zb_fail(err, ZB_ERUNTIME, "B on chunk %d mb %d: chunk %d "
                           "holds no activations for it", c, mb, ck->prev);
        ZB_TRY(copy(st, dst, sv.dresid, (size_t)st->N * st->C, err));
    }
    ck->sl.state[s] = ZB_SLOT_BWD;
    return ZB_OK;
}

static zb_status cu_backward_w(cu_stage *st, int c, int mb, zb_err *err) {
    int s;
    ZB_TRY(slot_expect(st, c, mb, ZB_SLOT_BWD, "W", &s, err));
    cu_chunk *ck = &st->chunks[c];
    slot_view sv;
    slot_get(st, ck, s, &sv);
    if (ck->head) ZB_TRY(head_backward_w(st, ck, &sv, err));
    for (int l = ck->n_layers - 1; l >= 0; l--) {
        layer_params g;
        layer_acts a;
        layer_params_get(st, st->grads, ck, l, &g);
        layer_acts_get(st, ck, &sv, l, &a);
        ZB_TRY(layer_backward_w(st, &g, &a, resid_at(st, sv.resid, l),
                                resid_at(st, sv.dresid, l + 1), err));
    }
    if (ck->embed)
        ZB_KERNEL(zb_cuda_embed_backward(tensor(st, st->grads, ck->pc.wte),
                                         tensor(st, st->grads, ck->pc.wpe),
                                         sv.dresid, sv.tokens, st->B, st->T,
                                         st->C, st->V, st->stream));
    slot_release(st, c, s);
    return ZB_OK;
}

/* Which pass a timed call runs. */
enum { PASS_F, PASS_B, PASS_W, PASS_BW };
static const char *const pass_names[] = {"F", "B", "W", "BW"};

struct pass_args {
    int kind, chunk, mb;
    const int *tokens, *targets;
    float loss_scale;
};

/* One pass between its two events (the i-th of the step). */
static zb_status timed_pass(cu_stage *st, const pass_args *p, zb_err *err) {
    ZB_TRY(sticky_check(st, err));
    int i = st->n_passes++;
    bool timed = i < st->max_passes;
    if (timed) ZB_CUDA(cudaEventRecord(st->ev_start[i], st->stream));
    zb_status s;
    switch (p->kind) {
    case PASS_F:
        s = cu_forward(st, p->chunk, p->mb, p->tokens, p->targets,
                       p->loss_scale, err);
        break;
    case PASS_B: s = cu_backward_b(st, p->chunk, p->mb, err); break;
    case PASS_W: s = cu_backward_w(st, p->chunk, p->mb, err); break;
    default:
        s = cu_backward_b(st, p->chunk, p->mb, err);
        if (s == ZB_OK) s = cu_backward_w(st, p->chunk, p->mb, err);
    }
    if (s != ZB_OK) return s;
    if (timed) ZB_CUDA(cudaEventRecord(st->ev_end[i], st->stream));
    if (st->debug_sync) { /* name the pass an asynchronous fault came from */
        cudaError_t e = cudaStreamSynchronize(st->stream);
        if (e == cudaSuccess) e = cudaGetLastError();
        if (e != cudaSuccess)
            return zb_fail(err, ZB_ERUNTIME, "pass %s chunk %d mb %d: %s "
                           "(ZB_CUDA_SYNC)", pass_names[p->kind],
                           p->chunk, p->mb, cudaGetErrorString(e));
    }
    return ZB_OK;
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
        a->ffn_hidden < 1 || a->heads < 1)
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
    if (!zb_cuda_attention_supported(a->hidden / p->tp, a->heads / p->tp))
        return zb_fail(err, ZB_EINPUT, "cuda stage: head size %d (hidden %d / "
                       "heads %d) is not one the fused attention kernel "
                       "supports (16, 32, 64, 128)", a->hidden / a->heads,
                       a->hidden, a->heads);
    return ZB_OK;
}

static void set_dims(cu_stage *st, const zb_plan *p) {
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
    st->v = p->v;
    st->m = p->m;
    st->bf16 = p->model.train.precision == ZB_PREC_BF16;
    const char *sync = getenv("ZB_CUDA_SYNC");
    st->debug_sync = sync && sync[0] == '1';
}

/* Bytes rounded up to the arena alignment. */
static size_t aligned(size_t bytes) {
    return (bytes + ZB_ARENA_ALIGN - 1) / ZB_ARENA_ALIGN * ZB_ARENA_ALIGN;
}

/* Next piece of the arena; with arena NULL only counts. */
static void *carve(cu_stage *st, size_t *off, size_t bytes) {
    void *p = st->arena ? st->arena + *off : NULL;
    *off += aligned(bytes);
    return p;
}

/* Host part of chunk c: layout, slot counts, bookkeeping arrays. */
static zb_status chunk_init(cu_stage *st, int c, zb_err *err) {
    const zb_plan *p = st->plan;
    cu_chunk *ck = &st->chunks[c];
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
    return zb_slots_init(&ck->sl, &p->sched, rank, c, err);
}

/* Lay out (arena NULL: measure) every device buffer; returns the bytes. */
static size_t arena_layout(cu_stage *st) {
    size_t off = 0, P = st->pt.floats > 0 ? st->pt.floats : 1;
    size_t N = (size_t)st->N, fl = sizeof(float), heads = 0;
    for (int c = 0; c < st->v; c++) heads += st->chunks[c].head;
    size_t NV = heads ? N * st->V : 1; /* logits only where a head is */
    st->params = (float *)carve(st, &off, P * fl);
    st->grads = (float *)carve(st, &off, P * fl);
    st->mom1 = (float *)carve(st, &off, P * fl);
    st->mom2 = (float *)carve(st, &off, P * fl);
    st->partial = (float *)carve(st, &off, N * st->C * fl);
    st->logits = (float *)carve(st, &off, NV * fl);
    st->losses = (float *)carve(st, &off, N * fl);
    st->dgelu = (float *)carve(st, &off, N * st->Fl * fl);
    st->datty = (float *)carve(st, &off, N * st->Cl * fl);
    st->dsum = (float *)carve(st, &off, (size_t)st->B * st->NHl * st->T * fl);
    st->workspace = carve(st, &off, ZB_CUBLAS_WORKSPACE);
    st->acc = (double *)carve(st, &off, 2 * sizeof(double));
    st->sum_scratch = (double *)carve(st, &off, zb_cuda_sum_scratch_doubles() *
                                                    sizeof(double));
    for (int c = 0; c < st->v; c++) {
        cu_chunk *ck = &st->chunks[c];
        ck->slots = (float *)carve(st, &off, (size_t)ck->sl.n * ck->slot_floats * fl);
        size_t ns = (size_t)(ck->sl.n > 0 ? ck->sl.n : 1);
        ck->tokens = (int *)carve(st, &off, ns * N * sizeof(int));
        ck->targets = (int *)carve(st, &off, ns * N * sizeof(int));
    }
    return off;
}

static zb_status alloc_arena(cu_stage *st, zb_err *err) {
    st->arena = NULL;
    st->arena_bytes = arena_layout(st);
    cudaError_t e = cudaMalloc((void **)&st->arena, st->arena_bytes);
    if (e != cudaSuccess) {
        cudaGetLastError(); /* clear the sticky-free error state */
        size_t free_b = 0, total_b = 0;
        cudaMemGetInfo(&free_b, &total_b);
        st->arena = NULL;
        return zb_fail(err, ZB_ERUNTIME, "rank (pp %d, dp %d, tp %d) on CUDA "
                       "device %d: out of device memory: %zu bytes asked, %zu "
                       "free of %zu (%s)", st->cfg.pp_rank, st->cfg.dp_rank,
                       st->cfg.tp_rank, st->cfg.device, st->arena_bytes, free_b,
                       total_b, cudaGetErrorString(e));
    }
    arena_layout(st);
    return ZB_OK;
}

/* Pinned staging buffers and their events of chunk c. */
static zb_status chunk_device_init(cu_stage *st, int c, zb_err *err) {
    cu_chunk *ck = &st->chunks[c];
    size_t ns = (size_t)(ck->sl.n > 0 ? ck->sl.n : 1);
    ZB_CUDA(cudaMallocHost((void **)&ck->staged, ns * 2 * (size_t)st->N * sizeof(int)));
    ck->staged_done = (cudaEvent_t *)zb_calloc(ns, sizeof(cudaEvent_t), err);
    if (!ck->staged_done) return ZB_ENOMEM;
    for (size_t s = 0; s < ns; s++) {
        ZB_CUDA(cudaEventCreateWithFlags(&ck->staged_done[s], cudaEventDisableTiming));
        ZB_CUDA(cudaEventRecord(ck->staged_done[s], st->stream));
    }
    return ZB_OK;
}

static zb_status init_device(cu_stage *st, zb_err *err) {
    ZB_CUDA(cudaSetDevice(st->cfg.device));
    ZB_CUDA(cudaStreamCreateWithFlags(&st->stream, cudaStreamNonBlocking));
    ZB_CUBLAS(cublasCreate(&st->blas));
    ZB_CUBLAS(cublasSetStream(st->blas, st->stream));
    /* plain fp32: no TF32, so the GPU matches the CPU to fp32 rounding */
    ZB_CUBLAS(cublasSetMathMode(st->blas, CUBLAS_DEFAULT_MATH));
    ZB_TRY(alloc_arena(st, err));
    ZB_CUBLAS(cublasSetWorkspace(st->blas, st->workspace, ZB_CUBLAS_WORKSPACE));
    for (int c = 0; c < st->v; c++) ZB_TRY(chunk_device_init(st, c, err));
    const zb_schedule *s = &st->plan->sched;
    st->max_passes = s->len[st->cfg.pp_rank];
    size_t np = (size_t)(st->max_passes > 0 ? st->max_passes : 1);
    st->ev_start = (cudaEvent_t *)zb_calloc(np, sizeof(cudaEvent_t), err);
    st->ev_end = (cudaEvent_t *)zb_calloc(np, sizeof(cudaEvent_t), err);
    if (!st->ev_start || !st->ev_end) return ZB_ENOMEM;
    for (int i = 0; i < st->max_passes; i++) {
        ZB_CUDA(cudaEventCreate(&st->ev_start[i]));
        ZB_CUDA(cudaEventCreate(&st->ev_end[i]));
    }
    ZB_CUDA(cudaEventCreate(&st->ev_ref));
    /* parameters drawn on the host (the CPU stage's values), copied once;
     * everything on the stage's own (non-blocking) stream, so that no copy
     * or memset races with its kernels */
    size_t P = st->pt.floats;
    zb_ptable_init(&st->pt, st->host, st->plan->model.train.seed);
    ZB_CUDA(cudaMemcpyAsync(st->params, st->host, P * sizeof(float),
                            cudaMemcpyHostToDevice, st->stream));
    ZB_CUDA(cudaMemsetAsync(st->grads, 0, P * sizeof(float), st->stream));
    ZB_CUDA(cudaMemsetAsync(st->mom1, 0, P * sizeof(float), st->stream));
    ZB_CUDA(cudaMemsetAsync(st->mom2, 0, P * sizeof(float), st->stream));
    ZB_CUDA(cudaMemsetAsync(st->acc, 0, 2 * sizeof(double), st->stream));
    ZB_CUDA(cudaEventRecord(st->ev_ref, st->stream));
    ZB_CUDA(cudaStreamSynchronize(st->stream));
    st->ref_host_s = mono_s();
    if (st->cfg.tr) st->cfg.tr->stream = st->stream;
    return ZB_OK;
}

static void cu_free(cu_stage *st);

static zb_status cu_new(const zb_stage_cfg *cfg, cu_stage **out, zb_err *err) {
    *out = NULL;
    ZB_TRY(check_plan(cfg, err));
    cu_stage *st = (cu_stage *)zb_calloc(1, sizeof *st, err);
    if (!st) return ZB_ENOMEM;
    st->cfg = *cfg;
    st->plan = cfg->plan;
    st->sticky = ZB_OK;
    set_dims(st, cfg->plan);
    zb_status rc = zb_ptable_build(&st->pt, cfg->plan, cfg->pp_rank,
                                   cfg->tp_rank, err);
    if (rc == ZB_OK) {
        st->chunks = (cu_chunk *)zb_calloc((size_t)st->v, sizeof *st->chunks, err);
        st->host = (float *)zb_calloc(st->pt.floats ? st->pt.floats : 1,
                                      sizeof(float), err);
        if (!st->chunks || !st->host) rc = ZB_ENOMEM;
    }
    for (int c = 0; rc == ZB_OK && c < st->v; c++) rc = chunk_init(st, c, err);
    if (rc == ZB_OK) rc = init_device(st, err);
    if (rc != ZB_OK) {
        cu_free(st);
        return rc;
    }
    *out = st;
    return ZB_OK;
}

static void cu_free(cu_stage *st) {
    if (!st) return;
    cudaSetDevice(st->cfg.device);
    if (st->stream) cudaStreamSynchronize(st->stream);
    if (st->cfg.tr && st->cfg.tr->stream == (void *)st->stream && st->stream)
        st->cfg.tr->stream = NULL;
    for (int i = 0; st->ev_start && i < st->max_passes; i++) {
        if (st->ev_start[i]) cudaEventDestroy(st->ev_start[i]);
        if (st->ev_end && st->ev_end[i]) cudaEventDestroy(st->ev_end[i]);
    }
    if (st->ev_ref) cudaEventDestroy(st->ev_ref);
    free(st->ev_start);
    free(st->ev_end);
    if (st->arena) cudaFree(st->arena);
    if (st->blas) cublasDestroy(st->blas);
    if (st->stream) cudaStreamDestroy(st->stream);
    if (st->chunks)
        for (int c = 0; c < st->v; c++) {
            cu_chunk *ck = &st->chunks[c];
            size_t ns = (size_t)(ck->sl.n > 0 ? ck->sl.n : 1);
            for (size_t k = 0; ck->staged_done && k < ns; k++)
                if (ck->staged_done[k]) cudaEventDestroy(ck->staged_done[k]);
            free(ck->staged_done);
            if (ck->staged) cudaFreeHost(ck->staged);
            zb_slots_free(&ck->sl);
        }
    free(st->chunks);
    free(st->host);
    zb_ptable_free(&st->pt);
    free(st);
}

/* ---- gradients, optimizer, accounting ---- */

/* Wait for the step, then read the loss sum and (if asked) the gradient
 * sum of squares, enqueued just before. */
static zb_status read_acc(const cu_stage *st, zb_err *err) {
    double h[2];
    ZB_CUDA(cudaMemcpyAsync(h, st->acc, sizeof h, cudaMemcpyDeviceToHost,
                            st->stream));
    ZB_CUDA(cudaStreamSynchronize(st->stream));
    st->loss_host = h[0];
    st->sumsq_host = h[1];
    st->loss_valid = true;
    return ZB_OK;
}

static double cu_loss_sum(const cu_stage *st) {
    zb_err e = {{0}};
    if (st->sticky != ZB_OK) return NAN;
    if (!st->loss_valid) {
        zb_status s = read_acc(st, &e);
        if (s != ZB_OK) {
            keep_failure(st, s, &e);
            return NAN;
        }
    }
    return st->loss_host;
}

static zb_status sumsq_enqueue(const cu_stage *st, zb_err *err) {
    ZB_CUDA(cudaMemsetAsync(&st->acc[1], 0, sizeof(double), st->stream));
    for (int j = 0; j < st->pt.n; j++) {
        const zb_ptensor *t = &st->pt.t[j];
        if (t->norm)
            ZB_KERNEL(zb_cuda_sumsq_add(&st->acc[1], st->sum_scratch,
                                        st->grads + t->off,
                                        (size_t)t->rows * t->cols, st->stream));
    }
    return read_acc(st, err);
}

static double cu_grad_sumsq(const cu_stage *st) {
    if (st->cfg.dp_rank != 0) return 0.0;
    if (st->sticky != ZB_OK) return NAN;
    zb_err e = {{0}};
    zb_status s = sumsq_enqueue(st, &e);
    if (s != ZB_OK) {
        keep_failure(st, s, &e);
        return NAN;
    }
    return st->sumsq_host;
}

/* Start of a step: wait for the last one (its AdamW), take the reference
 * time, clear gradients and sums. */
static zb_status zero_grads(cu_stage *st, zb_err *err) {
    ZB_CUDA(cudaStreamSynchronize(st->stream));
    ZB_CUDA(cudaEventRecord(st->ev_ref, st->stream));
    st->ref_host_s = mono_s();
    ZB_CUDA(cudaMemsetAsync(st->grads, 0, st->pt.floats * sizeof(float),
                            st->stream));
    ZB_CUDA(cudaMemsetAsync(st->acc, 0, 2 * sizeof(double), st->stream));
    return ZB_OK;
}

static void cu_zero_grads(cu_stage *st) {
    zb_err e = {{0}};
    st->n_passes = 0;
    st->loss_valid = false;
    st->loss_host = 0.0;
    keep_failure(st, zero_grads(st, &e), &e);
}

static float *cu_tied_grad(cu_stage *st, size_t *n) {
    if (st->pt.tied < 0) {
        *n = 0;
        return NULL;
    }
    const zb_ptensor *t = &st->pt.t[st->pt.tied];
    *n = (size_t)t->rows * t->cols;
    return st->grads + t->off;
}

static zb_status cu_adamw(cu_stage *st, float lr, float grad_scale, int t,
                          zb_err *err) {
    ZB_TRY(sticky_check(st, err));
    if (t < 1) return zb_fail(err, ZB_ERUNTIME, "AdamW step %d < 1", t);
    const zb_optim *o = &st->plan->model.train.opt;
    for (int j = 0; j < st->pt.n; j++) {
        const zb_ptensor *pt = &st->pt.t[j];
        size_t off = pt->off, n = (size_t)pt->rows * pt->cols;
        float wd = pt->decay ? (float)o->weight_decay : 0.0f;
        ZB_KERNEL(zb_cuda_adamw_update(st->params + off, st->grads + off,
                                       st->mom1 + off, st->mom2 + off, n, lr,
                                       (float)o->beta1, (float)o->beta2,
                                       (float)o->eps, wd, grad_scale, t,
                                       st->stream));
    }
    return ZB_OK;
}

static zb_status cu_params_to_host(cu_stage *st, float *dst, size_t n,
                                   zb_err *err) {
    ZB_TRY(sticky_check(st, err));
    if (n != st->pt.floats)
        return zb_fail(err, ZB_ERUNTIME, "params_to_host: %zu floats asked, "
                       "the stage has %zu", n, st->pt.floats);
    ZB_CUDA(cudaMemcpyAsync(dst, st->params, n * sizeof(float),
                            cudaMemcpyDeviceToHost, st->stream));
    ZB_CUDA(cudaStreamSynchronize(st->stream));
    return ZB_OK;
}

static zb_status cu_params_from_host(cu_stage *st, const float *src,
                                     size_t n, zb_err *err) {
    ZB_TRY(sticky_check(st, err));
    if (n != st->pt.floats)
        return zb_fail(err, ZB_ERUNTIME, "params_from_host: %zu floats given, "
                       "the stage has %zu", n, st->pt.floats);
    ZB_CUDA(cudaMemcpyAsync(st->params, src, n * sizeof(float),
                            cudaMemcpyHostToDevice, st->stream));
    ZB_CUDA(cudaStreamSynchronize(st->stream));
    return ZB_OK;
}

/* Forward-only evaluation: give back the slot of (c, mb) without B/W. */
static void cu_drop(cu_stage *st, int c, int mb) {
    if (bad_index(st, c, mb)) return;
    int s = zb_slots_owned(&st->chunks[c].sl, mb);
    if (s >= 0) slot_release(st, c, s);
}

/* Event times of this step's passes, on the host clock through the
 * reference event taken at zero_grads. */
static bool cu_pass_times(cu_stage *st, double *t_start, double *t_end, int n,
                          double t0) {
    if (n != st->n_passes || n > st->max_passes || st->sticky != ZB_OK)
        return false;
    if (cudaStreamSynchronize(st->stream) != cudaSuccess) return false;
    for (int i = 0; i < n; i++) {
        float a_ms, b_ms;
        if (cudaEventElapsedTime(&a_ms, st->ev_ref, st->ev_start[i]) != cudaSuccess ||
            cudaEventElapsedTime(&b_ms, st->ev_ref, st->ev_end[i]) != cudaSuccess)
            return false;
        t_start[i] = st->ref_host_s - t0 + 1e-3 * a_ms;
        t_end[i] = st->ref_host_s - t0 + 1e-3 * b_ms;
    }
    return true;
}

/* ---- checkpoint: the CPU stage's format (header, params, m, v) ---- */

#define ZB_CKPT_MAGIC "ZBSTAGE"
#define ZB_CKPT_VERSION 1u

struct ckpt_header {
    char magic[8];
    uint32_t version;
    uint32_t float_bytes;
    uint64_t n;
};

static zb_status cu_save(const cu_stage *st, FILE *f, zb_err *err) {
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
        ZB_CUDA(cudaMemcpyAsync(st->host, arrays[k], n * sizeof(float),
                                cudaMemcpyDeviceToHost, st->stream));
        ZB_CUDA(cudaStreamSynchronize(st->stream));
        if (fwrite(st->host, sizeof(float), n, f) != n)
            return zb_fail(err, ZB_EIO, "checkpoint: write failed");
    }
    return ZB_OK;
}

static zb_status cu_load(cu_stage *st, FILE *f, zb_err *err) {
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
        ZB_CUDA(cudaStreamSynchronize(st->stream)); /* st->host is free */
        if (fread(st->host, sizeof(float), n, f) != n)
            return zb_fail(err, ZB_EIO, "checkpoint: truncated data");
        ZB_CUDA(cudaMemcpyAsync(arrays[k], st->host, n * sizeof(float),
                                cudaMemcpyHostToDevice, st->stream));
    }
    ZB_CUDA(cudaStreamSynchronize(st->stream));
    return ZB_OK;
}

/* ---- the backend table ---- */

static cu_stage *S(void *s) { return (cu_stage *)s; }
static const cu_stage *CS(const void *s) { return (const cu_stage *)s; }

static zb_status op_create(const zb_stage_cfg *cfg, void **out, zb_err *err) {
    cu_stage *st = NULL;
    zb_status s = cu_new(cfg, &st, err);
    *out = st;
    return s;
}
static void op_destroy(void *s) { cu_free(S(s)); }
static size_t op_msg_floats(const void *s) {
    return (size_t)CS(s)->N * CS(s)->C;
}
static float *op_act_in(void *s, int c, int mb) { return cu_act_in(S(s), c, mb); }
static float *op_act_out(void *s, int c, int mb) { return cu_act_out(S(s), c, mb); }
static float *op_grad_in(void *s, int c, int mb) { return cu_grad_in(S(s), c, mb); }
static float *op_grad_out(void *s, int c, int mb) { return cu_grad_out(S(s), c, mb); }
static zb_status op_forward(void *s, int c, int mb, const int *tokens,
                            const int *targets, float loss_scale, zb_err *err) {
    pass_args p = {PASS_F, c, mb, tokens, targets, loss_scale};
    return timed_pass(S(s), &p, err);
}
static zb_status op_backward_b(void *s, int c, int mb, zb_err *err) {
    pass_args p = {PASS_B, c, mb, NULL, NULL, 0.0f};
    return timed_pass(S(s), &p, err);
}
static zb_status op_backward_w(void *s, int c, int mb, zb_err *err) {
    pass_args p = {PASS_W, c, mb, NULL, NULL, 0.0f};
    return timed_pass(S(s), &p, err);
}
static zb_status op_backward_bw(void *s, int c, int mb, zb_err *err) {
    pass_args p = {PASS_BW, c, mb, NULL, NULL, 0.0f};
    return timed_pass(S(s), &p, err);
}
static double op_loss_sum(const void *s) { return cu_loss_sum(CS(s)); }
static void op_zero_grads(void *s) { cu_zero_grads(S(s)); }
static float *op_params(void *s, size_t *n) {
    *n = S(s)->pt.floats;
    return S(s)->params;
}
static float *op_grads(void *s, size_t *n) {
    *n = S(s)->pt.floats;
    return S(s)->grads;
}
static zb_status op_params_to_host(void *s, float *dst, size_t n, zb_err *err) {
    return cu_params_to_host(S(s), dst, n, err);
}
static zb_status op_params_from_host(void *s, const float *src, size_t n,
                                     zb_err *err) {
    return cu_params_from_host(S(s), src, n, err);
}
static void op_drop(void *s, int c, int mb) { cu_drop(S(s), c, mb); }
static float *op_tied_grad(void *s, size_t *n) { return cu_tied_grad(S(s), n); }
static double op_grad_sumsq(const void *s) { return cu_grad_sumsq(CS(s)); }
static zb_status op_adamw(void *s, float lr, float grad_scale, int t,
                          zb_err *err) {
    return cu_adamw(S(s), lr, grad_scale, t, err);
}
static double op_static_bytes(const void *s) {
    return 4.0 * (double)CS(s)->pt.floats * sizeof(float);
}
static double op_act_peak_bytes(const void *s) { return CS(s)->act_peak_bytes; }
static bool op_pass_times(void *s, double *t_start, double *t_end, int n,
                          double t0) {
    return cu_pass_times(S(s), t_start, t_end, n, t0);
}
static zb_status op_save(const void *s, FILE *f, zb_err *err) {
    return cu_save(CS(s), f, err);
}
static zb_status op_load(void *s, FILE *f, zb_err *err) {
    return cu_load(S(s), f, err);
}

extern "C" const zb_stage_ops zb_stage_cuda_ops = {
    "cuda", op_create, op_destroy, op_msg_floats, op_act_in, op_act_out,
    op_grad_in, op_grad_out, op_forward, op_backward_b, op_backward_w,
    op_backward_bw, op_loss_sum, op_zero_grads, op_params, op_grads,
    op_params_to_host, op_params_from_host, op_drop, op_tied_grad, op_grad_sumsq, op_adamw, op_static_bytes,
    op_act_peak_bytes, op_pass_times, op_save, op_load,
};

extern "C" int zb_stage_cuda_device_count(void) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError(); /* no driver or no device: clear, report 0 */
        return 0;
    }
    return n;
}

extern "C" void zb_stage_cuda_device_name(int device, char *buf, size_t n) {
    cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
        cudaGetLastError();
        snprintf(buf, n, "?");
        return;
    }
    snprintf(buf, n, "%s, %.0f GiB", prop.name,
             (double)prop.totalGlobalMem / (1024.0 * 1024.0 * 1024.0));
}
