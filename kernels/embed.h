/* embed.h - token + learned position embedding.
 *   tokens [B, T] ints in [0, V); wte [V, C]; wpe [maxT, C]; out [B, T, C]
 * The embedding has no input gradient: its backward is all W (+=). */
#ifndef ZB_KERNELS_EMBED_H
#define ZB_KERNELS_EMBED_H

void zb_embed_forward(float *out, const int *tokens, const float *wte,
                      const float *wpe, int B, int T, int C);
void zb_embed_backward(float *dwte, float *dwpe, const float *dout,
                       const int *tokens, int B, int T, int C);

#endif
