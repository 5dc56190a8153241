/* gpt.h - private to the stage program (gpt.c: set-up, memory, optimizer,
 * checkpoints; gpt_passes.c: F, B, W; gpt_layout.c: what a slot holds):
 * the state of one rank's stage and
 * the views of its arena. Every float pointer here is backend memory
 * (ops.h), touched only through the op table.
 *
 * Sizes: N = B*T tokens of a microbatch, C hidden, Cl = C/tp and Fl = F/tp
 * the local widths of the sharded matmuls, NHl = heads/tp, V vocab, Vl =
 * ceil(V/tp) vocabulary rows per TP rank (stage_params.h) of which Vv are
 * real, starting at row v0.
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
    size_t layer_floats;    /* one block's activations in a slot */
    size_t slot_floats;     /* the part taken at F (all of it unless full
                               recompute) */
    float *slots;           /* [sl.n, slot_floats] */
    int *tokens;            /* [max(sl.n, 1), N] */
    /* full recompute: the part taken at B, which B rebuilds for W */
    zb_slots bsl;           /* which B part holds which microbatch */
    size_t bslot_floats;    /* 0 unless full recompute */
    float *bslots;          /* [bsl.n, bslot_floats] */
} zb_gpt_chunk;

struct zb_stage {
    zb_stage_cfg cfg;
    const zb_plan *plan;
    zb_ops ops;
    int B, T, N, C, V, NH, F;  /* model dims, N = B*T */
    int tp, Cl, Fl, NHl;       /* local dims under TP */
    int Vl, v0, Vv;            /* vocab rows per rank, first row, real rows */
    int Vp;                    /* row stride of logits/dlogits: Vv rounded
                                  up to ops.logits_align */
    int v, m;
    size_t att_floats;         /* attention's saved floats per layer */
    zb_recompute rc;           /* the plan's recompute (see zb_slot_view) */
    float *rc_att;             /* [att_floats] attention's saved floats of
                                  the layer at hand (selective, full) */
    float *rc_layer;           /* what F writes of one block (full: not
                                  kept; zb_gpt_layer_carve_fwd) */
    zb_ptable pt;
    void *arena;               /* the only allocation of backend memory */
    float *params, *grads, *mom1, *mom2; /* [pt.floats] each */
    zb_gpt_chunk *chunks;      /* host [v] */
    float *partial;            /* [N, C] row-parallel output before reduce */
    float *logits;             /* [N, Vp] this rank's vocabulary rows */
    double *ce;                /* [(tp + 2) * N] cross-entropy statistics */
    double *acc;               /* [2] loss sum, gradient sum of squares */
    float *losses;             /* [N] */
    float *dgelu;              /* [N, Fl] grad wrt gelu output */
    float *datty;              /* [N, Cl] grad wrt attention output */
    float *datt;               /* attention backward scratch */
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
};

/* What one block keeps in a slot. */
typedef struct {
    float *ln1, *ln1_mean, *ln1_rstd; /* [N, C] [N] [N] */
    float *qkv;                       /* [N, 3Cl] */
    float *att;                       /* att_floats: attention's saved
                                         (st->rc_att unless recompute none) */
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
} zb_layer_acts;

/* One slot of a chunk. Recompute none: all of it taken at F. Selective:
 * the same without the attention's saved floats (B rebuilds them into
 * st->rc_att). Full: F keeps resid, grad_in and the head's buffers (the
 * part taken at F); B rebuilds each block's activations from resid[l]
 * into `layers` and writes dresid (the part taken at B, NULL before B);
 * W frees both. */
typedef struct {
    float *resid;   /* [L+1, N, C]: [0] chunk input (act_in or embedding
                       output), [l+1] output of block l, [L] = act_out */
    float *dresid;  /* [L, N, C]: their gradients, [0] = grad_out; that of
                       resid[L] is grad_in (zb_gpt_dresid) */
    float *grad_in; /* [N, C] */
    float *lnf, *lnf_mean, *lnf_rstd; /* head: [N, C] [N] [N] */
    float *dlnf;    /* [N, C] grad wrt lnf output */
    float *dlogits; /* [N, Vp] loss_scale * (softmax - onehot), own rows */
    float *layers;  /* [L, layer_floats] */
    int *tokens;    /* [N] (embedding chunk) */
} zb_slot_view;

/* gpt_layout.c. Next n floats from base + *off; with base NULL only
 * counts. */
float *zb_gpt_take(float *base, size_t *off, size_t n);
size_t zb_gpt_layer_carve(const zb_stage *st, float *base, zb_layer_acts *a);
/* Only what F writes (ln1 .. fch_gelu; the gradients NULL). */
size_t zb_gpt_layer_carve_fwd(const zb_stage *st, float *base,
                              zb_layer_acts *a);
/* The F part at fbase and the B part at bbase (either may be NULL: only
 * counts); the floats of the B part into *b_floats; returns the F part's. */
size_t zb_gpt_slot_carve(const zb_stage *st, const zb_gpt_chunk *ck,
                         float *fbase, float *bbase, zb_slot_view *sv,
                         size_t *b_floats);
/* Slot `slot` (F part) with B part `bslot` (-1: none yet). */
void zb_gpt_slot_get(const zb_stage *st, const zb_gpt_chunk *ck, int slot,
                     int bslot, zb_slot_view *sv);
/* Gradient wrt resid[l] of a slot, l in [0, L]. */
float *zb_gpt_dresid(const zb_stage *st, const zb_gpt_chunk *ck,
                     const zb_slot_view *sv, int l);

/* gpt_layout.c: slot bookkeeping the set-up and the passes share */
bool zb_gpt_bad_index(const zb_stage *st, int c, int mb);
int zb_gpt_slot_acquire(zb_stage *st, int c, int mb);
void zb_gpt_slot_release(zb_stage *st, int c, int s);
/* The B part of (c, mb) (full recompute), taken at B, given back with the
 * slot by zb_gpt_slot_release; -1 if none is free. */
int zb_gpt_bslot_acquire(zb_stage *st, int c, int mb);

/* gpt_passes.c: the passes, untimed (gpt.c brackets them) */
zb_status zb_gpt_forward(zb_stage *st, int c, int mb, const int *tokens,
                         const int *targets, float loss_scale, zb_err *err);
zb_status zb_gpt_backward_b(zb_stage *st, int c, int mb, zb_err *err);
zb_status zb_gpt_backward_w(zb_stage *st, int c, int mb, zb_err *err);

#endif
