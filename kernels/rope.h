/* rope.h - rotary position embedding (RoPE) of Q and K, in place.
 *   x [B, T, ld]: row (b, t) is at x + (b T + t) ld and has position t;
 *   its first H heads of hs channels (columns [0, H hs), hs even) turn,
 *   the rest of the row is left alone. For a GQA qkv [B, T, (NH + 2 KVH)
 *   hs] (q heads, then k heads, then v heads) H = NH + KVH turns Q and K
 *   in one call: the turn depends on the channel within the head and the
 *   position only, the same for Q and K.
 *   theta: the base (10000 in Llama 2, 500000 in Llama 3).
 * Forward: x = R(t) x. Backward: dx = R(t)^T dx, the gradient of the
 * values before the turn from the gradient of the turned ones (RoPE is
 * linear and orthogonal). Both write in place (=); no W part.
 * The _ref functions compute each element's angle on its own; the fast
 * ones share each row's cosines and sines among its H heads and run rows
 * over OpenMP. Both round the double cosine and sine to float; they agree
 * to an ulp of those (libm's sin, cos and sincos may differ in the last
 * bit of a double). */
#ifndef ZB_KERNELS_ROPE_H
#define ZB_KERNELS_ROPE_H

void zb_rope_forward(float *x, int B, int T, int H, int hs, int ld,
                     float theta);
void zb_rope_backward(float *dx, int B, int T, int H, int hs, int ld,
                      float theta);

void zb_rope_forward_ref(float *x, int B, int T, int H, int hs, int ld,
                         float theta);
void zb_rope_backward_ref(float *dx, int B, int T, int H, int hs, int ld,
                          float theta);

#endif
