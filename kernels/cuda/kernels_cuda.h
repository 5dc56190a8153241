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

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Remember "call: error (file:line)" for a failed CUDA call; the text is
 * per thread and stays until the next failure. */
void zb_cuda_note_error(cudaError_t e, const char *call, const char *file,
                        int line);
/* The same for a library call that failed with a named status (cuBLAS,
 * NCCL): "call: status (file:line)". */
void zb_cuda_note_text(const char *call, const char *status, const char *file,
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
/* V: vocabulary rows of dwte (every token must be < V) */
cudaError_t zb_cuda_embed_backward(float *dwte, float *dwpe, const float *dout,
                                   const int *tokens, int B, int T, int C,
                                   int V, cudaStream_t stream);

/* ---- matmul.cu: cuBLAS linear layer, twin of kernels/matmul.h ----
 * inp [N, C], weight [OC, C], bias [OC] (may be NULL), out/dout [N, OC].
 * The handle is bound to `stream` by each call. bf16: tensor-core GEMM
 * with operands rounded to bf16 and fp32 accumulation (buffers stay fp32);
 * false: exact fp32 GEMM (no TF32). */
cudaError_t zb_cuda_matmul_forward(cublasHandle_t h, float *out,
                                   const float *inp, const float *weight,
                                   const float *bias, int N, int C, int OC,
                                   bool bf16, cudaStream_t stream);
/* B: dinp[N, C] += dout[N, OC] @ weight[OC, C] */
cudaError_t zb_cuda_matmul_backward_input(cublasHandle_t h, float *dinp,
                                          const float *dout,
                                          const float *weight, int N, int C,
                                          int OC, bool bf16,
                                          cudaStream_t stream);
/* W: dweight[OC, C] += dout^T @ inp; dbias[OC] += column sums (may be NULL) */
cudaError_t zb_cuda_matmul_backward_weight(cublasHandle_t h, float *dweight,
                                           float *dbias, const float *dout,
                                           const float *inp, int N, int C,
                                           int OC, bool bf16,
                                           cudaStream_t stream);
const char *zb_cublas_status_name(cublasStatus_t s);

/* ---- attention.cu: fused causal attention, twin of kernels/attention.h ----
 * qkv [B, T, 3C], out/dout [B, T, C], lse/dsum [B, NH, T]. F writes out
 * and lse (row log-sum-exp, what B needs instead of the [T, T] softmax);
 * B writes (=, not +=) every element of dqkv, using dsum as scratch. Head
 * size C/NH must be 16, 32, 64 or 128 (zb_cuda_attention_supported). */
bool zb_cuda_attention_supported(int C, int NH);
cudaError_t zb_cuda_attention_forward(float *out, float *lse, const float *qkv,
                                      int B, int T, int C, int NH,
                                      cudaStream_t stream);
cudaError_t zb_cuda_attention_backward(float *dqkv, float *dsum,
                                       const float *dout, const float *qkv,
                                       const float *out, const float *lse,
                                       int B, int T, int C, int NH,
                                       cudaStream_t stream);

/* ---- stage_ops.cu ---- */
/* out[N, C] = x + (part + bias[C]) (the CPU stage's residual add) */
cudaError_t zb_cuda_residual_add(float *out, const float *x, const float *part,
                                 const float *bias, int N, int C,
                                 cudaStream_t stream);
/* *acc (device double) += sum of x[i]^2 (sumsq) or x[i] (sum) over n, in a
 * fixed order; scratch: zb_cuda_sum_scratch_doubles() device doubles. */
size_t zb_cuda_sum_scratch_doubles(void);
cudaError_t zb_cuda_sumsq_add(double *acc, double *scratch, const float *x,
                              size_t n, cudaStream_t stream);
cudaError_t zb_cuda_sum_add(double *acc, double *scratch, const float *x,
                            size_t n, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
