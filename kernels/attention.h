/* attention.h - causal multi-head self-attention core (no weights).
 *   qkv [B, T, 3C]: per position q (C), k (C), v (C), each NH heads of
 *       hs = C / NH channels (C here is the local width under TP)
 *   att [B, NH, T, T]: softmax probabilities, saved for backward
 *   out [B, T, C]
 *   datt [B, NH, T, T]: backward scratch (overwritten)
 * Scale 1/sqrt(hs). Backward accumulates into dqkv (+=); no W part. */
#ifndef ZB_KERNELS_ATTENTION_H
#define ZB_KERNELS_ATTENTION_H

#include <stddef.h>

void zb_attention_forward(float *out, float *att, const float *qkv, int B,
                          int T, int C, int NH);
/* The softmax pieces between the GEMMs, on nmat [T, T] matrices in place
 * (the CUDA attention of precision bf16 runs the same pieces around cuBLAS
 * GEMMs; kernels/cuda twins):
 *   forward: scaled scores -> causal softmax rows (entries t2 > t set 0);
 *   backward: ds holds dP = dout v^T on entry, p (dP - sum_j p dP) after. */
void zb_attn_softmax_causal(float *att, int T, size_t nmat);
void zb_attn_softmax_causal_backward(float *ds, const float *att, int T,
                                     size_t nmat);
void zb_attention_backward(float *dqkv, float *datt, const float *dout,
                           const float *qkv, const float *att, int B, int T,
                           int C, int NH);

/* Grouped-query attention (GQA, Ainslie et al. 2023): KVH key/value heads,
 * each shared by G = NH / KVH consecutive query heads (query head h reads
 * kv head h / G; KVH divides NH). Multi-query attention is KVH = 1,
 * KVH = NH is the attention above, bit for bit (those functions call
 * these).
 *   qkv, dqkv [B, T, C + 2 KVC], KVC = KVH hs, hs = C / NH: per position
 *       q (C), k (KVC), v (KVC)
 *   out, dout [B, T, C]; att, datt [B, NH, T, T] as above
 * The backward sums a kv head's gradient over its G query heads in head
 * order (+= into dqkv, like the above). */
void zb_attention_gqa_forward(float *out, float *att, const float *qkv, int B,
                              int T, int C, int NH, int KVH);
void zb_attention_gqa_backward(float *dqkv, float *datt, const float *dout,
                               const float *qkv, const float *att, int B,
                               int T, int C, int NH, int KVH);

#endif
