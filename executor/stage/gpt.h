/* gpt.h - private to the stage program (gpt.c: set-up, memory, optimizer,
 * checkpoints; gpt_passes.c: F, B, W; gpt_layout.c: what a slot holds):
 * the state of one rank's stage and
 * the views of its arena. Every pointer here is backend memory (ops.h),
 * touched only through the op table.
 *
 * Sizes: N = B*T tokens of a microbatch, C hidden, Cl = C/tp and Fl = F/tp
 * the local widths of the sharded matmuls, NHl = heads/tp, V vocab, Vl =
 * ceil(V/tp) vocabulary rows per TP rank (stage_params.h) of which Vv are
 * real, starting at row v0.
 *
 * Element types (ops.h: "act" = the backend's act_dtype, fp32 or bf16;
 * es = its size, 4 or 2 bytes). Every buffer is carved in bytes and
 * starts at a multiple of ops.act_align.
 *   tensor                                   type   why
 *   resid, act_in/act_out (block in/outputs) act    the bulk of memory
 *   dresid, grad_in/grad_out                 act    as their activations
 *   ln1, qkv, atty, res2, ln2, fch, fch_gelu act    GEMM/kernel operands
 *   dres2, dln2, dfch, dqkv, dln1            act    W's GEMM operands
 *   lnf, dlnf, logits, dlogits               act    head GEMM operands;
 *                                                   softmax sums in fp64
 *   dgelu, datty (B scratch)                 act    GEMM outputs
 * Llama-shaped blocks: qkv/dqkv are [N, QKVl] (GQA: q, then the local k
 * and v heads; RoPE applied in place, so qkv is what the attention read
 * and dqkv the gradient of the GEMM's output), fch/dfch [N, FCl] (SwiGLU:
 * W1 x | W3 x), fch_gelu the gate's output [N, Fl]; RMSNorm keeps only
 * rstd (the mean buffers are carved, unused).
 *   attention's saved / scratch              the backend's (bytes): cpu
 *                                            probabilities in act; cuda
 *                                            GEMM path probabilities in
 *                                            act, fused path row lse fp32
 *   ln*_mean, ln*_rstd, lnf_mean/rstd        fp32   statistics
 *   partial (row-parallel sums, TP-reduced)  fp32   the transport sums fp32
 *   losses fp32; ce statistics, acc          fp64
 *   params, grads, AdamW m and v             fp32   master copy, fp32
 *                                                   accumulation (beta 1)
 *   wlow (matrix weights for the GEMMs)      act    bf16: a rounded copy of
 *                                                   params, refreshed after
 *                                                   every change of them;
 *                                                   fp32: params itself
 * A TP-reduced input gradient (dln2, dln1, dlnf) is computed into partial
 * in fp32, summed over TP, then cast into its act buffer; at tp 1 the GEMM
 * writes the act buffer directly. The embedding is looked up in fp32
 * (partial), summed over TP, and embed_add_pos writes resid[0].
 */
#ifndef ZB_STAGE_GPT_H
#define ZB_STAGE_GPT_H

#include "executor/stage/ops.h"
#include "executor/stage/slots.h"
#include "executor/stage/stage.h"
#include "executor/stage/stage_params.h"

typedef struct {
    int vstage, n_layers;
    bool embed, head;
    int prev;               /* chunk on this rank holding vstage-1, or -1 */
    zb_pchunk pc;           /* its tensors */
    zb_slots sl;            /* which slot holds which microbatch */
    size_t layer_bytes;     /* one block's activations in a slot */
    size_t slot_bytes;      /* the part taken at F (all of it unless full
                               recompute) */
    char *slots;            /* [sl.n, slot_bytes] */
    int *tokens;            /* [max(sl.n, 1), N] */
    /* full recompute: the part taken at B, which B rebuilds for W */
    zb_slots bsl;           /* which B part holds which microbatch */
    size_t bslot_bytes;     /* 0 unless full recompute */
    char *bslots;           /* [bsl.n, bslot_bytes] */
} zb_gpt_chunk;

/* Vocabulary parallelism over the pipeline (plan->vocab_parallel;
 * vocab_head.c): one rank's shard of the embedding and output layer, with
 * buffers per microbatch of the step ([m] each, index mb), since the
 * exchanges around S and T span the step. Backend memory (an arena of
 * its own) except the host mirrors, made only when the backend's memory
 * is a device's; fp32 activations (zb_stage_new refuses others). p
 * pipeline ranks, the vocabulary in ns = pp x tp shards, N, C as above;
 * every [m] buffer's mb stride is its *_bytes, rounded up to 256 bytes. */
typedef struct {
    int variant, p, me;      /* 1 or 2; pipeline ranks; this one */
    int ns, shard;           /* shards (pp x tp), this rank's (its slot in
                                the statistics table) */
    int E, L;                /* pipeline ranks of vstage 0 and the last */
    int wte, head;           /* tensor indices (tied: equal) */
    int v0, Vl, ld;          /* the shard's rows; logits row stride (Vl
                                rounded up to ops.logits_align) */
    size_t parts_bytes;      /* mb stride of emb and dx: [p][N, C] fp32 */
    size_t f_bytes, a_bytes; /* of A and G ([N, C] fp32), of x and demb
                                ([N, C] act) */
    size_t l_bytes;          /* of logits and dlogits ([N, ld] act) */
    void *arena;             /* ops.alloc: every buffer below but the host
                                mirrors */
    float *emb;              /* [m][p][N, C] partial embeddings by rank;
                                [mb][E] is the sum after EMB_SUM on E */
    zb_act *x;               /* [m][N, C] X, the final norm's output */
    zb_act *logits, *dlogits;/* [m][N, ld] */
    double *local, *global;  /* [m][3, N] */
    double *tab;             /* [m][ns, 3, N] C1's table */
    float *A, *G;            /* variant 2: [m][N, C] each */
    float *dx;               /* [m][p][N, C] dX parts by rank; [mb][L] is
                                the sum after DX_SUM on L */
    zb_act *demb;            /* [m][N, C] embedding output's gradient */
    int *tok, *tgt;          /* [m][N] */
    /* host mirrors (device backends, or the cpu under the test hook
     * ZB_VOCAB_HOST_MIRRORS=1; else NULL: the cpu's memory is the host's):
     * the table the transport all-reduces, S's statistics, the parts of a
     * sum and their sum */
    double *tab_host;        /* [m][ns, 3, N] */
    double *local_host;      /* [m][3, N] */
    float *sum_host;         /* [p + 1][N, C] */
} zb_gpt_vocab;

struct zb_stage {
    zb_stage_cfg cfg;
    const zb_plan *plan;
    zb_ops ops;
    int B, T, N, C, V, NH, F;  /* model dims, N = B*T */
    int tp, Cl, Fl, NHl;       /* local dims under TP */
    /* the block's kind (zb_model.h keys): GPT-2 is all false */
    bool rms, swiglu, rope, gqa; /* RMSNorm, SwiGLU, RoPE, the GQA op */
    float theta;               /* RoPE base */
    int hs, KVl;               /* head size, local kv heads (zb_llama_tp) */
    int QKVl;                  /* local qkv width: Cl + 2 KVl hs (GPT 3Cl) */
    int FCl;                   /* local fc output width: Fl, 2Fl (SwiGLU) */
    int Vl, v0, Vv;            /* vocab rows per rank, first row, real rows */
    int Vp;                    /* row stride of logits/dlogits: Vv rounded
                                  up to ops.logits_align */
    int v, m;
    size_t es;                 /* bytes of an activation element */
    size_t nc_bytes;           /* one [N, C] activation, aligned: the
                                  stride of resid and dresid */
    size_t att_bytes;          /* attention's saved bytes per layer */
    zb_recompute rc;           /* the plan's recompute (see zb_slot_view) */
    void *rc_att;              /* [att_bytes] attention's saved bytes of
                                  the layer at hand (selective, full) */
    char *rc_layer;            /* what F writes of one block (full: not
                                  kept; zb_gpt_layer_carve_fwd) */
    zb_ptable pt;
    void *arena;               /* the only allocation of backend memory */
    float *params, *grads, *mom1, *mom2; /* [pt.floats] each */
    zb_act *wlow;              /* [pt.floats] act: the GEMMs' weights */
    zb_gpt_chunk *chunks;      /* host [v] */
    float *partial;            /* [N, C] row-parallel output before reduce */
    float *zero_bias;          /* [C] zeros, the bias of a bias-free
                                  residual_add (NULL when biases exist) */
    zb_act *logits;            /* [N, Vp] this rank's vocabulary rows */
    double *ce;                /* [(tp + 2) * N] cross-entropy statistics */
    double *acc;               /* [2] loss sum, gradient sum of squares */
    float *losses;             /* [N] */
    zb_act *dgelu;             /* [N, Fl] grad wrt gelu output */
    zb_act *datty;             /* [N, Cl] grad wrt attention output */
    void *datt;                /* attention backward scratch */
    int *targets;              /* [N] this F's targets */
    float *host;               /* host [pt.floats]: init, save, load */
    double *ce_host;           /* host [(tp + 2) * N] when the backend's
                                  memory is a device's and tp > 1 */
    int n_passes;              /* passes since zero_grads */
    int max_passes;            /* of one step (the rank's action list) */
    /* first failure of a call that cannot return it (void, double) */
    zb_status sticky;
    zb_err sticky_err;
    double act_bytes, act_peak_bytes;
    zb_gpt_vocab *vp;          /* NULL without vocabulary parallelism */
};

/* What one block keeps in a slot (act unless said fp32). */
typedef struct {
    zb_act *ln1;                      /* [N, C] */
    float *ln1_mean, *ln1_rstd;       /* [N] [N] fp32 */
    zb_act *qkv;                      /* [N, QKVl] */
    void *att;                        /* att_bytes: attention's saved
                                         (st->rc_att unless recompute none) */
    zb_act *atty;                     /* [N, Cl] attention output */
    zb_act *res2;                     /* [N, C] x + attn */
    zb_act *ln2;                      /* [N, C] */
    float *ln2_mean, *ln2_rstd;       /* [N] [N] fp32 */
    zb_act *fch, *fch_gelu;           /* [N, FCl] [N, Fl] */
    /* kept by B for W */
    zb_act *dres2;                    /* [N, C] grad wrt res2 (proj dout) */
    zb_act *dln2;                     /* [N, C] grad wrt ln2 out, reduced */
    zb_act *dfch;                     /* [N, FCl] grad wrt fch (fc dout) */
    zb_act *dqkv;                     /* [N, QKVl] qkv dout */
    zb_act *dln1;                     /* [N, C] grad wrt ln1 out, reduced */
} zb_layer_acts;

/* One slot of a chunk. Recompute none: all of it taken at F. Selective:
 * the same without the attention's saved floats (B rebuilds them into
 * st->rc_att). Full: F keeps resid, grad_in and the head's buffers (the
 * part taken at F); B rebuilds each block's activations from resid[l]
 * into `layers` and writes dresid (the part taken at B, NULL before B);
 * W frees both. */
typedef struct {
    zb_act *resid;   /* [L+1] x [N, C] (stride nc_bytes): [0] chunk input
                        (act_in or embedding output), [l+1] output of block
                        l, [L] = act_out (zb_gpt_resid) */
    zb_act *dresid;  /* [L] x [N, C]: their gradients, [0] = grad_out;
                        that of resid[L] is grad_in (zb_gpt_dresid) */
    zb_act *grad_in; /* [N, C] */
    zb_act *lnf;     /* head: [N, C] */
    float *lnf_mean, *lnf_rstd; /* head: [N] [N] fp32 */
    zb_act *dlnf;    /* [N, C] grad wrt lnf output */
    zb_act *dlogits; /* [N, Vp] loss_scale * (softmax - onehot), own rows */
    char *layers;    /* [L, layer_bytes] */
    int *tokens;     /* [N] (embedding chunk) */
} zb_slot_view;

/* gpt_layout.c. The next buffer of n elements of es bytes from base +
 * *off (bytes), *off moved past it and rounded up to ops.act_align; with
 * base NULL only counts. */
void *zb_gpt_take(const zb_stage *st, char *base, size_t *off, size_t n,
                  size_t es);
/* n elements of es bytes rounded up to ops.act_align */
size_t zb_gpt_aligned(const zb_stage *st, size_t n, size_t es);
size_t zb_gpt_layer_carve(const zb_stage *st, char *base, zb_layer_acts *a);
/* Only what F writes (ln1 .. fch_gelu; the gradients NULL). */
size_t zb_gpt_layer_carve_fwd(const zb_stage *st, char *base,
                              zb_layer_acts *a);
/* The F part at fbase and the B part at bbase (either may be NULL: only
 * counts); the bytes of the B part into *b_bytes; returns the F part's. */
size_t zb_gpt_slot_carve(const zb_stage *st, const zb_gpt_chunk *ck,
                         char *fbase, char *bbase, zb_slot_view *sv,
                         size_t *b_bytes);
/* Slot `slot` (F part) with B part `bslot` (-1: none yet). */
void zb_gpt_slot_get(const zb_stage *st, const zb_gpt_chunk *ck, int slot,
                     int bslot, zb_slot_view *sv);
/* resid[l] of a slot, l in [0, L]. */
zb_act *zb_gpt_resid(const zb_stage *st, const zb_slot_view *sv, int l);
/* Gradient wrt resid[l] of a slot, l in [0, L]. */
zb_act *zb_gpt_dresid(const zb_stage *st, const zb_gpt_chunk *ck,
                      const zb_slot_view *sv, int l);
/* The activation n elements past p. */
zb_act *zb_gpt_act_at(const zb_stage *st, const zb_act *p, size_t n);

/* gpt_layout.c: slot bookkeeping the set-up and the passes share */
bool zb_gpt_bad_index(const zb_stage *st, int c, int mb);
int zb_gpt_slot_acquire(zb_stage *st, int c, int mb);
void zb_gpt_slot_release(zb_stage *st, int c, int s);
/* The B part of (c, mb) (full recompute), taken at B, given back with the
 * slot by zb_gpt_slot_release; -1 if none is free. */
int zb_gpt_bslot_acquire(zb_stage *st, int c, int mb);

/* gpt.c: after every change of params, wlow follows (bf16: rounded) */
zb_status zb_gpt_weights_changed(zb_stage *st, zb_err *err);

/* gpt_passes.c: the passes, untimed (gpt.c brackets them) */
zb_status zb_gpt_forward(zb_stage *st, int c, int mb, const int *tokens,
                         const int *targets, float loss_scale, zb_err *err);
zb_status zb_gpt_backward_b(zb_stage *st, int c, int mb, zb_err *err);
zb_status zb_gpt_backward_w(zb_stage *st, int c, int mb, zb_err *err);

/* vocab_head.c: the stage's vocabulary shard (st->vp), see stage.h */
zb_status zb_gpt_vocab_new(zb_stage *st, zb_err *err);
void zb_gpt_vocab_free(zb_stage *st);
zb_status zb_gpt_vocab_s(zb_stage *st, int mb, const int *targets,
                         zb_err *err);
zb_status zb_gpt_vocab_t(zb_stage *st, int mb, float scale, zb_err *err);
/* mb's buffers the chunks use: the summed embedding [N, C] fp32 (E, after
 * EMB_SUM), X [N, C] (F of the last vstage writes it), the summed dX
 * [N, C] fp32 (L, after DX_SUM), the embedding output's gradient [N, C]
 * (B of vstage 0 writes it on E) */
const float *zb_gpt_vocab_embedding(const zb_stage *st, int mb);
zb_act *zb_gpt_vocab_x(const zb_stage *st, int mb);
const float *zb_gpt_vocab_dx(const zb_stage *st, int mb);
zb_act *zb_gpt_vocab_demb(const zb_stage *st, int mb);

#endif
