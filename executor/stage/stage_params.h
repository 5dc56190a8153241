/* stage_params.h - the parameter table of one rank's stage: which tensors
 * it holds, where each lives in the flat parameter buffer, how it is sharded
 * over TP, and its deterministic initialisation. Backend independent: the
 * stage program (gpt.c) initialises on the host with it and copies to the
 * backend, and tests use it to gather shards into full tensors.
 *
 * Tensors, in buffer order, per chunk (chunk 0 first):
 *   embedding chunk:  wte [V, C], wpe [T, C]                      (layer -1)
 *   block l (global index), ids 0..11:
 *     ln1.w, ln1.b [C]; qkv.w [3C/t, C], qkv.b [3C/t];
 *     proj.w [C, C/t], proj.b [C]; ln2.w, ln2.b [C];
 *     fc.w [F/t, C], fc.b [F/t]; fc2.w [C, F/t], fc2.b [C]
 *   head chunk:       lnf.w, lnf.b [C]; then the LM head weight [V, C]:
 *     untied: "lm_head" (own tensor id); tied and the embedding on this
 *     rank: wte itself (no new tensor); tied and the embedding elsewhere:
 *     "wte.copy", drawn with wte's (layer, id) so both copies start equal.
 * TP shards (Megatron): qkv keeps rows of q, k and v of its heads; fc keeps
 * rows; proj and fc2 keep columns; the token table (wte, wte.copy) and the
 * LM head keep vocabulary rows (vocab-parallel); everything else (wpe,
 * LayerNorms, row-parallel biases) is replicated.
 * Llama-shaped blocks (zb_model.h keys): the same twelve ids, absent
 * tensors empty (0 rows): RMSNorm drops ln*.b and lnf.b, bias: false the
 * linear biases (qkv_bias: true keeps qkv.b); qkv.w is [C + 2 kv, C] with
 * kv = kv_heads * C / heads (GQA), each rank keeping its query heads and
 * its kv_heads / tp key/value heads; swiglu makes fc.w [2F, C] (W1 over
 * W3, each row-sharded, ZB_SHARD_GLU) and fc2.w W2; position rope has no
 * wpe (chunk wpe -1); an untied head has its own lm_head.
 * Vocabulary parallelism over the pipeline (plan->vocab_parallel): the
 * token table and the untied LM head are rank tensors outside the chunks,
 * rows of this rank's shard over pp x tp (ZB_SHARD_VOCAB, no padding);
 * tied embeddings share the one shard (no copy, nothing to sync).
 * Vocabulary padding: each TP rank holds Vl = ceil(V / tp) rows, rank k the
 * rows [k*Vl, k*Vl + Vl). full_rows stays the true V; a local row whose
 * global row is >= V is padding: initialised 0, never read by the model, its
 * gradient stays 0, and zb_ptable_full_index returns ZB_PTABLE_PAD for it
 * (a loader skips those elements). At tp = 1 there is no padding.
 *
 * Init: element (r, c) of a full tensor [R, Cols] is the normal number drawn
 * from counter r*Cols + c of a counter-based generator keyed by (seed,
 * layer, id); std 0.02 (0.02/sqrt(2*layers) for proj.w and fc2.w, GPT-2),
 * LayerNorm weights 1, biases 0. A rank computes only its shard's counters,
 * which is the same as drawing the whole tensor and keeping the shard.
 */
#ifndef ZB_STAGE_PARAMS_H
#define ZB_STAGE_PARAMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/zb_plan.h"

typedef enum {
    ZB_SHARD_NONE = 0, /* replicated over TP */
    ZB_SHARD_ROWS,     /* rows [tp_rank*rows, +rows) */
    ZB_SHARD_COLS,     /* columns [tp_rank*cols, +cols) */
    ZB_SHARD_QKV,      /* the q, k and v row blocks of this rank's heads
                          (q: q_rows / tp rows, k and v: kv_rows / tp) */
    ZB_SHARD_GLU,      /* two equal row blocks (SwiGLU's W1 over W3), rows
                          of each as ZB_SHARD_ROWS */
    ZB_SHARD_VOCAB     /* vocabulary parallelism: rows [vocab_row0, +rows),
                          this rank's shard over pp x tp (zb_vocab_split) */
} zb_shard;

/* Tensor ids of a block's tensors (layer >= 0) ... */
enum {
    ZB_T_LN1W, ZB_T_LN1B, ZB_T_QKVW, ZB_T_QKVB, ZB_T_PROJW, ZB_T_PROJB,
    ZB_T_LN2W, ZB_T_LN2B, ZB_T_FCW, ZB_T_FCB, ZB_T_FC2W, ZB_T_FC2B,
    ZB_T_PER_LAYER
};
/* ... and of the embedding/head tensors (layer -1). */
enum { ZB_T_WTE, ZB_T_WPE, ZB_T_LNFW, ZB_T_LNFB, ZB_T_LMHEAD };

typedef struct {
    char name[16];
    int layer;              /* global block index, -1 embedding/head */
    int id;                 /* ZB_T_* */
    int rows, cols;         /* local shape (vectors: cols = 1) */
    int full_rows, full_cols;
    zb_shard shard;
    bool decay;             /* 2-D weight: AdamW weight decay applies */
    bool norm;              /* counted by this rank in the global grad norm */
    bool copy;              /* tied wte copy on the head's rank */
    float std;              /* > 0: normal(0, std); else constant value */
    float value;
    size_t off;             /* first float in the flat buffer */
} zb_ptensor;

/* Tensor indices (into zb_ptable.t) of one chunk; -1 where absent. */
typedef struct {
    int wte, wpe;           /* embedding */
    int layer0;             /* first tensor of the chunk's first block */
    int n_layers;
    int lnfw, lnfb, head;   /* head: head may point at the shared wte */
    size_t copy_off, copy_floats; /* the chunk's floats but the tied table
                                     (pt->tied): what a DUAL plan's two
                                     copies of the stage sum */
} zb_pchunk;

typedef struct {
    int tp, tp_rank;
    int n;                  /* tensors */
    zb_ptensor *t;          /* [n] */
    size_t floats;          /* total floats of the flat buffer */
    int v;
    zb_pchunk *chunk;       /* [v] */
    int tied;               /* tensor synced over the embedding group, -1 */
    int q_rows, kv_rows;    /* full rows of q (hidden) and of k or v
                               (kv_heads * head size) in qkv.w */
    /* vocabulary parallelism (plan->vocab_parallel): every rank holds its
     * shard of the token table ("wte") and, untied, of the LM head
     * ("lm_head"), outside the chunks (whose wte and head are then -1; the
     * embedding chunk keeps wpe, the head chunk lnf); no tied copy */
    int vocab_wte, vocab_head; /* tensor indices, -1 without; tied: equal */
    int vocab_row0;            /* the shard's first global row */
} zb_ptable;

/* Build the table of (plan, pp_rank, tp_rank). Checks the shapes divide
 * (heads, kv_heads and ffn_hidden by tp, hidden by heads, heads by
 * kv_heads). */
zb_status zb_ptable_build(zb_ptable *pt, const zb_plan *plan, int pp_rank,
                          int tp_rank, zb_err *err);
void zb_ptable_free(zb_ptable *pt);

/* Fill params [pt->floats] with the initial values. */
void zb_ptable_init(const zb_ptable *pt, float *params, uint64_t seed);

/* Flat index in the full (unsharded) tensor of local element i of t, or
 * ZB_PTABLE_PAD when the element is vocabulary padding (no full element). */
#define ZB_PTABLE_PAD SIZE_MAX
size_t zb_ptable_full_index(const zb_ptable *pt, const zb_ptensor *t,
                            size_t i);

/* Vocabulary rows per TP rank: ceil(vocab / tp). */
int zb_vocab_rows_per_rank(int vocab, int tp);

/* Vocabulary parallelism: shard k of n holds rows [k V / n, (k + 1) V /
 * n) in integer division (docs/plan-format.md); pp rank r, tp rank t
 * holds shard r * tp + t of pp * tp. */
void zb_vocab_split(int vocab, int k, int n, int *row0, int *rows);

/* Index of the tensor (layer, id, copy) or -1. */
int zb_ptable_find(const zb_ptable *pt, int layer, int id, bool copy);

#endif
