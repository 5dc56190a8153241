/* embed.h - token + learned position embedding.
 *   tokens [B, T] ints in [0, V); wte [V, C]; wpe [maxT, C]; out [B, T, C]
 * The embedding has no input gradient: its backward is all W (+=). */
#ifndef ZB_KERNELS_EMBED_H
#define ZB_KERNELS_EMBED_H

void zb_embed_forward(float *out, const int *tokens, const float *wte,
                      const float *wpe, int B, int T, int C);
void zb_embed_backward(float *dwte, float *dwpe, const float *dout,
                       const int *tokens, int B, int T, int C);

/* Vocabulary-parallel pieces: this rank holds rows [v0, v0 + nv) of the
 * token table as wtel [nv, C] (Megatron's vocab-parallel embedding).
 *   token part: out[n] = wtel[tokens[n] - v0], or 0 when the token is not in
 *     the shard (writes; the caller all-reduces out over the TP group);
 *   position part: out[b, t] += wpe[t] (after that all-reduce);
 *   dwtel[tokens[n] - v0] += dout[n] for the tokens in the shard.
 * With v0 = 0, nv = V these give exactly zb_embed_forward/backward. */
void zb_embed_tokens_shard(float *out, const int *tokens, const float *wtel,
                           int v0, int nv, int N, int C);
void zb_embed_add_pos(float *out, const float *wpe, int B, int T, int C);
void zb_embed_tokens_shard_backward(float *dwtel, const float *dout,
                                    const int *tokens, int v0, int nv, int N,
                                    int C);
void zb_embed_pos_backward(float *dwpe, const float *dout, int B, int T,
                           int C);

#endif
