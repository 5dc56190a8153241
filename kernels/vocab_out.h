/* vocab_out.h - the output layer's softmax cross-entropy with the
 * vocabulary sharded over the pipeline ranks (vocabulary parallelism,
 * Yeung et al. 2024): the pieces that the S and T passes add to the
 * vocabulary-parallel cross-entropy of crossentropy.h.
 *
 * p shards, shard k holding vocabulary rows [v0_k, v0_k + Vl_k) of the
 * output layer; every shard sees all N token rows. S on shard k writes its
 * local statistics st_k [3, N] with its own row max (online softmax), so
 * that one exchange suffices:
 *   m[n]  = max_v z[n, v]            (crossentropy's ce_max; -inf if Vl 0)
 *   s[n]  = sum_v exp(z[n, v] - m)   (ce_stats with M = m; double)
 *   zt[n] = z[n, target - v0_k] or 0 (ce_stats)
 * The exchange gathers them, in shard order, into tab [p, 3, N], and every
 * shard combines the same table the same way (below), so all of them hold
 * the same global M, S, Zt bit for bit, whatever the transport:
 *   M = max_k m_k; S = sum_k s_k exp(m_k - M), k = 0, 1, .. in order (an
 *   empty shard, m_k = -inf, adds nothing); Zt = sum_k zt_k in order.
 * With p = 1 this is M = m, S = s, Zt = zt: the unsharded statistics bit
 * for bit. T then runs ce_loss and ce_bwd with (M, S, Zt) as today.
 *
 * The paper's one-barrier variant (its Algorithm 2) computes the input
 * gradient in S, before the statistics are known: with P_k = exp(Y_k - m_k)
 * (zb_vocab_exp) and A_k = P_k W_k [N, C] (a GEMM), G_k [N, C] = the row
 * W_k[target - v0_k] or 0 (the embedding lookup of the targets), the
 * input gradient of the loss times scale is
 *   dX = sum_k dX_k,  dX_k = scale (exp(m_k - M) / S  A_k - G_k)
 * (zb_vocab_dx, after the exchange of the statistics), since
 * softmax_k = exp(Y_k - M) / S = exp(m_k - M) / S  P_k.
 * Row-major, C contiguous; "=" writes its output.
 */
#ifndef ZB_KERNELS_VOCAB_OUT_H
#define ZB_KERNELS_VOCAB_OUT_H

/* out [3, N] = (M, S, Zt) of tab [p, 3, N] (=), as above. */
void zb_vocab_stats_combine(double *out, const double *tab, int p, int N);

/* P[n, :Vl] = exp(zl[n, :Vl] - (float)m[n]) (=); rows of zl and P with
 * stride ld >= Vl (columns past Vl never read or written). */
void zb_vocab_exp(float *P, const float *zl, const double *m, int N, int Vl,
                  int ld);

/* dx[n, :C] = scale ((float)(exp(m[n] - M[n]) / S[n]) A[n, :] - G[n, :])
 * (=); A, G, dx [N, C]; m [N] this shard's row maxima; MS [3, N] the
 * combined statistics (M then S). A shard with m = -inf contributes -G. */
void zb_vocab_dx(float *dx, const float *A, const float *G, const double *m,
                 const double *MS, float scale, int N, int C);

#endif
