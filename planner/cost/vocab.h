/* vocab.h - what vocabulary parallelism (Yeung et al. 2024; the plan's
 * parallel.vocab_parallel, docs/plan-format.md) does to a layout's costs.
 *
 * The input embedding and the output layer are sharded by vocabulary rows
 * over the pp x tp ranks: each holds Vs = ceil(V / (pp tp)) rows of each
 * table (one table with tied embeddings). zb_vocab_eval rewrites a cost
 * table (cost.h) for it and returns the vocabulary passes' costs:
 *   head  -> the final norm only (ct->head_norm);
 *   embed -> the lookup of its rows, plus the pp all-reduce of the partial
 *            embeddings [b s h] in F and the broadcast of their gradient
 *            in W; params: the position table only;
 *   vocab_rank_params = Vs h (tied) or 2 Vs h on EVERY pipeline rank.
 * S and T are the head's passes for one shard (cost model at Vs rows per
 * TP rank): variant 1 S = F (logits, max, sum of exp), T = B + W (softmax,
 * dX, dW); variant 2 S = F + B (the paper's one-barrier algorithm computes
 * the dX parts in S), T = W. M_S = what the shard's head keeps after F
 * (fp32 logits, its input, statistics). Communication over the pp group
 * (inter-node bandwidth once dp tp pp ranks exceed a node): X's broadcast
 * e b s h bytes (bytes / bw + ceil(log2 pp) latencies); C1 all-reduces 3
 * fp32 per token (max, sum, target logit), variant 2 also the dX parts
 * ((4 + e) b s h bytes); C2 (variant 1) the fp32 dX, 4 b s h bytes.
 * docs/cost-model.md, "Vocabulary parallelism", gives the sources.
 */
#ifndef ZB_COST_VOCAB_H
#define ZB_COST_VOCAB_H

#include "common/zb_error.h"
#include "common/zb_model.h"
#include "common/zb_sim.h"
#include "planner/cost/cost.h"

typedef struct {
    int variant;            /* 0 none, 1, 2 */
    double shard_rows;      /* Vs */
    double t_s, t_t, t_bcast, t_c1, t_c2, m_s; /* zb_costs' vocabulary fields */
} zb_vocab_cost;

/* Rewrite ct (made by zb_cost_eval for m, tp, micro_batch) for variant
 * (1 or 2) on a dp x tp x pp layout and fill out. variant 0: ct is left
 * alone and out is zero. pp < 2 with a variant is ZB_EINPUT. */
zb_status zb_vocab_eval(const zb_model *m, int dp, int tp, int pp,
                        int micro_batch, int variant, zb_cost_table *ct,
                        zb_vocab_cost *out, zb_err *err);

/* Copy out's costs into the simulator's (zeros for variant 0). */
void zb_vocab_apply(const zb_vocab_cost *vc, zb_costs *c);

#endif
