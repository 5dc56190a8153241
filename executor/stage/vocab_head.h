/* vocab_head.h - the output layer and its softmax cross-entropy with the
 * vocabulary sharded over the pipeline (x TP) ranks, as the stage program
 * runs it: the S and T passes (Yeung et al. 2024, "Balancing Pipeline
 * Parallelism with Vocabulary Parallelism"), written once against the op
 * table (ops.h), on one shard's buffers. The exchanges between the passes
 * (the statistics gathered in shard order, the input gradients summed) are
 * the caller's: the transport's, in a fixed order.
 *
 * A shard holds vocabulary rows [v0, v0 + Vl) of the output layer W
 * (tied: the token table's same rows). N token rows (b*s), hidden C.
 *   S  (both variants) Y = X W^T into logits [N, ld]; local [3, N] = this
 *      shard's row max m, sum of exp(Y - m), target logit (0 if the target
 *      is not in the shard) (kernels/vocab_out.h).
 *      Variant 2 also: P = exp(Y - m) (in dlogits, free until T), A = P W
 *      and G = W[target - v0] or 0, [N, C] fp32 each: the paper's
 *      one-barrier algorithm, the input gradient before the statistics.
 *   combine: tab [p, 3, N] (every shard's local, shard order) -> global
 *      [3, N] = (M, S, Zt), the same bits on every shard.
 *   dx2 (variant 2, after combine): this shard's share of the input
 *      gradient, dx = scale (exp(m - M) / S  A - G) [N, C] fp32 (=); the
 *      sum of the shards' dx is dL/dX times scale.
 *   T  dY = scale (softmax - onehot) of these rows into dlogits (=);
 *      losses [N] (=, the same on every shard) and *acc += their sum when
 *      acc is not NULL; variant 1: dx = dY W [N, C] fp32 (=), this shard's
 *      share of the input gradient; both: dW += dY^T X.
 * Types: X, W, logits, dlogits act (ops.act_dtype); Wf, dW, A, G, dx
 * fp32; statistics fp64. Every pointer is backend memory; nothing is
 * allocated by these four.
 * vocab_head.c also holds the stage's side of vocabulary parallelism
 * (gpt.h zb_gpt_vocab: the per-microbatch buffers, S/T of the stage
 * program, the stage.h zb_stage_vocab_* steps and message buffers).
 */
#ifndef ZB_STAGE_VOCAB_HEAD_H
#define ZB_STAGE_VOCAB_HEAD_H

#include "executor/stage/ops.h"

typedef struct {
    int N, C;            /* token rows, hidden */
    int v0, Vl, ld;      /* rows [v0, v0 + Vl); logits row stride ld >= Vl */
    const zb_act *X;     /* [N, C] final-norm output (every shard the same) */
    const zb_act *W;     /* [Vl, C] this shard's rows as the GEMMs read them */
    const float *Wf;     /* [Vl, C] the same rows fp32 (variant 2's G) */
    float *dW;           /* [Vl, C] += gradient */
    const int *targets;  /* [N] */
    zb_act *logits;      /* [N, ld] S writes, T reads */
    zb_act *dlogits;     /* [N, ld] T writes (variant 2: S's scratch) */
    double *local;       /* [3, N] S writes: m, s, zt */
    double *global;      /* [3, N] combine writes: M, S, Zt */
    float *A, *G;        /* variant 2: [N, C] each, S writes */
} zb_vocab_shard;

zb_status zb_vocab_s(const zb_ops *o, const zb_vocab_shard *v, int variant,
                     zb_err *err);
zb_status zb_vocab_combine(const zb_ops *o, const zb_vocab_shard *v,
                           const double *tab, int p, zb_err *err);
zb_status zb_vocab_dx2(const zb_ops *o, const zb_vocab_shard *v, float scale,
                       float *dx, zb_err *err);
/* dx: variant 1 [N, C] (=); variant 2 NULL. */
zb_status zb_vocab_t(const zb_ops *o, const zb_vocab_shard *v, int variant,
                     float scale, double *acc, float *losses, float *dx,
                     zb_err *err);

#endif
