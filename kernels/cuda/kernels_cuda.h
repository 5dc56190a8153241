/* kernels_cuda.h - CUDA twins of the elementwise CPU kernels.
 * Shapes and semantics are those of the CPU headers (kernels/layernorm.h,
 * gelu.h, crossentropy.h, adamw.h, embed.h): += where the CPU kernel
 * accumulates, = where it writes. All pointers are device pointers. Each
 * wrapper only enqueues work on `stream` (0 = default stream) and returns
 * the launch status; it never synchronises, prints or exits. Reductions
 * use a fixed order (one owner per output element), so results repeat
 * bit for bit from run to run.
 * Differences from the CPU: zb_cuda_crossentropy_forward writes the row
 * losses only (sum them after copying back); statistics are summed in
 * float except the cross-entropy softmax sum (double), so results match
 * the CPU to rounding, not bitwise.
 */
#ifndef ZB_KERNELS_CUDA_H
#define ZB_KERNELS_CUDA_H

#include <cuda_runtime_api.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Remember "call: error (file:line)" for a failed CUDA call; the text is
 * per thread and stays until the next failure. */
void zb_cuda_note_error(cudaError_t e, const char *call, const char *file,
                        int line);
/* The last noted failure of this thread, "" if none. */
const char *zb_cuda_error_msg(void);

/* Use in functions returning cudaError_t: note and return any failure. */
#define CUDA_CHECK(call)                                                       \
    do {                                                                       \
        cudaError_t zb_cuda_e_ = (call);                                       \
        if (zb_cuda_e_ != cudaSuccess) {                                       \
            zb_cuda_note_error(zb_cuda_e_, #call, __FILE__, __LINE__);         \
            return zb_cuda_e_;                                                 \
        }                                                                      \
    } while (0)

/* inp, out [N, C]; weight, bias [C]; mean, rstd [N] */
cudaError_t zb_cuda_layernorm_forward(float *out, float *mean, float *rstd,
                                      const float *inp, const float *weight,
                                      const float *bias, int N, int C,
                                      cudaStream_t stream);
cudaError_t zb_cuda_layernorm_backward_input(float *dinp, const float *dout,
                                             const float *inp,
                                             const float *weight,
                                             const float *mean,
                                             const float *rstd, int N, int C,
                                             cudaStream_t stream);
cudaError_t zb_cuda_layernorm_backward_weight(float *dweight, float *dbias,
                                              const float *dout,
                                              const float *inp,
                                              const float *mean,
                                              const float *rstd, int N, int C,
                                              cudaStream_t stream);

/* inp, out, dout, dinp [N] */
cudaError_t zb_cuda_gelu_forward(float *out, const float *inp, size_t N,
                                 cudaStream_t stream);
cudaError_t zb_cuda_gelu_backward(float *dinp, const float *inp,
                                  const float *dout, size_t N,
                                  cudaStream_t stream);

/* logits, dlogits [N, V]; targets [N]; losses [N] */
cudaError_t zb_cuda_crossentropy_forward(float *losses, const float *logits,
                                         const int *targets, int N, int V,
                                         cudaStream_t stream);
cudaError_t zb_cuda_crossentropy_backward(float *dlogits, const float *logits,
                                          const int *targets, float scale,
                                          int N, int V, cudaStream_t stream);

/* params, grads, m, v [n] */
cudaError_t zb_cuda_adamw_update(float *params, const float *grads, float *m,
                                 float *v, size_t n, float lr, float beta1,
                                 float beta2, float eps, float weight_decay,
                                 float grad_scale, int t, cudaStream_t stream);

/* tokens [B, T]; wte [V, C]; wpe [maxT, C]; out [B, T, C] */
cudaError_t zb_cuda_embed_forward(float *out, const int *tokens,
                                  const float *wte, const float *wpe, int B,
                                  int T, int C, cudaStream_t stream);
cudaError_t zb_cuda_embed_backward(float *dwte, float *dwpe, const float *dout,
                                   const int *tokens, int B, int T, int C,
                                   cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
