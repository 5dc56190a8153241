/* crossentropy.h - softmax + cross-entropy over a vocabulary.
 *   logits [N, V], targets [N] in [0, V), losses [N]
 * Forward writes per-row losses and returns their sum (double). The
 * backward writes (not accumulates) dlogits = scale * (softmax - onehot);
 * it recomputes softmax from the logits, so nothing else is saved. */
#ifndef ZB_KERNELS_CROSSENTROPY_H
#define ZB_KERNELS_CROSSENTROPY_H

double zb_crossentropy_forward(float *losses, const float *logits,
                               const int *targets, int N, int V);
void zb_crossentropy_backward(float *dlogits, const float *logits,
                              const int *targets, float scale, int N, int V);

#endif
