/* crossentropy.h - softmax + cross-entropy over a vocabulary.
 *   logits [N, V], targets [N] in [0, V), losses [N]
 * Forward writes per-row losses and returns their sum (double). The
 * backward writes (not accumulates) dlogits = scale * (softmax - onehot);
 * it recomputes softmax from the logits, so nothing else is saved.
 *
 * Vocabulary-parallel pieces (Megatron's vocab-parallel cross-entropy): a
 * rank holds the logits of vocabulary rows [v0, v0 + Vl) only, zl [N, Vl].
 * The caller combines the per-rank pieces over the TP group:
 *   1. zb_ce_shard_max: row maxima of zl -> M[n] = max over ranks;
 *   2. zb_ce_shard_stats: sum_v exp(zl - M) and the target's logit (0 when
 *      the target is not in this shard) -> S[n], Zt[n] = sums over ranks;
 *   3. zb_ce_shard_loss: losses from (M, S, Zt), the same on every rank;
 *   4. zb_ce_shard_backward: this shard's dlogits.
 * With one shard (v0 = 0, Vl = V) these equal the unsharded functions
 * bitwise; no rank ever holds [N, V].
 *
 * zb_ce_fused: one shard holding the whole vocabulary (tp 1) in one pass
 * per row: the pieces 1-4 with v0 = 0, the same operations in the same
 * order, so losses, dzl and the returned sum equal the pieces' bit for
 * bit. Rows of zl and dzl have stride ld >= V (columns past V are padding:
 * never read or written). */
#ifndef ZB_KERNELS_CROSSENTROPY_H
#define ZB_KERNELS_CROSSENTROPY_H

double zb_crossentropy_forward(float *losses, const float *logits,
                               const int *targets, int N, int V);
void zb_crossentropy_backward(float *dlogits, const float *logits,
                              const int *targets, float scale, int N, int V);

/* rowmax[N] = max_v zl[n, v] (-inf when Vl = 0). */
void zb_ce_shard_max(double *rowmax, const float *zl, int N, int Vl);
/* sumexp[N] = sum_v exp(zl[n, v] - (float)M[n]) (in double);
 * ztgt[N] = zl[n, targets[n] - v0] if the target is in [v0, v0+Vl), else 0. */
void zb_ce_shard_stats(double *sumexp, double *ztgt, const float *zl,
                       const double *M, const int *targets, int v0, int N,
                       int Vl);
/* losses[n] = log(S[n]) + M[n] - Zt[n]; returns their sum (serial). */
double zb_ce_shard_loss(float *losses, const double *M, const double *S,
                        const double *Zt, int N);
/* dzl[n, v] = scale * (exp(zl - M) / S - [v0 + v == target]) (writes). */
void zb_ce_shard_backward(float *dzl, const float *zl, const double *M,
                          const double *S, const int *targets, int v0,
                          float scale, int N, int Vl);
/* losses[n] and dzl[n, :V] = scale (softmax - onehot) of zl (row stride
 * ld); returns the sum of the losses (serial, in row order). */
double zb_ce_fused(float *losses, float *dzl, const float *zl,
                   const int *targets, float scale, int N, int V, int ld);

#endif
