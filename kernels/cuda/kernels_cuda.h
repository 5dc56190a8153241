/* kernels_cuda.h - CUDA twins of the elementwise CPU kernels.
 * Shapes and semantics are those of the CPU headers (kernels/layernorm.h,
 * gelu.h, crossentropy.h, adamw.h, embed.h): += where the CPU kernel
 * accumulates, = where it writes. All pointers are device pointers. Each
 * wrapper only enqueues work on `stream` (0 = default stream) and returns
 * the launch status; it never synchronises, prints or exits. Reductions
 * use a fixed order (one owner per output element), so results repeat
 * bit for bit from run to run.
 * Differences from the CPU: statistics are summed in float except the
 * cross-entropy softmax sum (double), so results match the CPU to
 * rounding, not bitwise.
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
/* W over the full grid (slabs of rows, then the slabs in order):
 * scratch of zb_cuda_wgrad_scratch_floats(N, C) floats, free again when
 * the work enqueued after the call runs */
cudaError_t zb_cuda_layernorm_backward_weight(float *dweight, float *dbias,
                                              const float *dout,
                                              const float *inp,
                                              const float *mean,
                                              const float *rstd, int N, int C,
                                              float *scratch,
                                              cudaStream_t stream);
size_t zb_cuda_wgrad_scratch_floats(int N, int C);

/* inp, out, dout, dinp [N] */
cudaError_t zb_cuda_gelu_forward(float *out, const float *inp, size_t N,
                                 cudaStream_t stream);
cudaError_t zb_cuda_gelu_backward(float *dinp, const float *inp,
                                  const float *dout, size_t N,
                                  cudaStream_t stream);

/* vocabulary-parallel cross-entropy (kernels/crossentropy.h's shard
 * pieces): zl, dzl [N, Vl] with row stride ld >= Vl; targets [N]; rowmax, M, S, Zt [N]; tab [tp, N];
 * losses [N]; ce_loss adds the sum of the row losses (one block, a fixed
 * order: within rounding of the CPU's row order) to *acc */
cudaError_t zb_cuda_ce_max(double *rowmax, const float *zl, int N, int Vl,
                           int ld, cudaStream_t stream);
cudaError_t zb_cuda_ce_max_combine(double *tab, int tp, int N,
                                   cudaStream_t stream);
cudaError_t zb_cuda_ce_stats(double *S, double *Zt, const float *zl,
                             const double *M, const int *targets, int v0,
                             int N, int Vl, int ld, cudaStream_t stream);
cudaError_t zb_cuda_ce_loss(double *acc, float *losses, const double *M,
                            const double *S, const double *Zt, int N,
                            cudaStream_t stream);
cudaError_t zb_cuda_ce_backward(float *dzl, const float *zl, const double *M,
                                const double *S, const int *targets, int v0,
                                float scale, int N, int Vl, int ld,
                                cudaStream_t stream);
/* tp 1 (kernels/crossentropy.h's zb_ce_fused): losses [N] (=), *acc +=
 * their sum in row order, dzl [N, V] = scale (softmax - onehot) (=), zl
 * and dzl with row stride ld >= V (padding never read or written); each
 * row read from HBM once (crossentropy.cu says how) */
cudaError_t zb_cuda_ce_fused(double *acc, float *losses, float *dzl,
                             const float *zl, const int *targets, float scale,
                             int N, int V, int ld, cudaStream_t stream);
/* params, grads, m, v [n] */
cudaError_t zb_cuda_adamw_update(float *params, const float *grads, float *m,
                                 float *v, size_t n, float lr, float beta1,
                                 float beta2, float eps, float weight_decay,
                                 float grad_scale, int t, cudaStream_t stream);

/* vocabulary-parallel embedding (kernels/embed.h's shard pieces):
 * tokens [N]; wtel, dwtel [nv, C] rows [v0, v0 + nv); wpe [maxT, C];
 * out, dout [N = B*T, C] */
cudaError_t zb_cuda_embed_tokens(float *out, const int *tokens,
                                 const float *wtel, int v0, int nv, int N,
                                 int C, cudaStream_t stream);
cudaError_t zb_cuda_embed_add_pos(float *out, const float *wpe, int B, int T,
                                  int C, cudaStream_t stream);
/* dwtel: scratch of zb_cuda_embed_scratch_bytes(N) bytes (the sort's);
 * cudaErrorInvalidValue if scratch_bytes is smaller */
cudaError_t zb_cuda_embed_scratch_bytes(int N, size_t *bytes);
cudaError_t zb_cuda_embed_tokens_backward(float *dwtel, const float *dout,
                                          const int *tokens, int v0, int nv,
                                          int N, int C, void *scratch,
                                          size_t scratch_bytes,
                                          cudaStream_t stream);
cudaError_t zb_cuda_embed_pos_backward(float *dwpe, const float *dout, int B,
                                       int T, int C, cudaStream_t stream);
/* ---- matmul.cu: around the GEMM (twins of kernels/matmul.c) ----
 * out[n, :OC] = bias for n < N (row stride ldo), before a beta = 1 GEMM;
 * dbias[OC] += column sums of dout [N, OC], over the full grid like the
 * LayerNorm W (scratch: zb_cuda_wgrad_scratch_floats(N, OC) floats) */
cudaError_t zb_cuda_bias_rows(float *out, const float *bias, int N, int OC,
                              int ldo, cudaStream_t stream);
cudaError_t zb_cuda_colsum_add(float *dbias, const float *dout, int N, int OC,
                               float *scratch, cudaStream_t stream);
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

/* ---- attn_softmax.cu: the softmax between the attention GEMMs, twins of
 * kernels/attention.h's zb_attn_softmax_causal(_backward): att, ds
 * [nmat, T, T] in place ---- */
cudaError_t zb_cuda_attn_softmax_causal(float *att, int T, size_t nmat,
                                        cudaStream_t stream);
cudaError_t zb_cuda_attn_softmax_causal_backward(float *ds, const float *att,
                                                 int T, size_t nmat,
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

/* ---- bf16 activation storage: the kernels above that touch
 * activations, instantiated for bf16 arrays (void * = __nv_bfloat16
 * device arrays; act.cuh): loads widen to fp32, the math is the fp32
 * kernels', every store rounds to nearest even. float and double
 * arguments stay fp32/fp64 (weights, statistics, partial sums). ---- */
cudaError_t zb_cuda_layernorm_forward_bf16(void *out, float *mean, float *rstd,
                                           const void *inp,
                                           const float *weight,
                                           const float *bias, int N, int C,
                                           cudaStream_t stream);
cudaError_t zb_cuda_layernorm_backward_input_bf16(
    void *dinp, const void *dout, const void *inp, const float *weight,
    const float *mean, const float *rstd, int N, int C, cudaStream_t stream);
cudaError_t zb_cuda_layernorm_backward_weight_bf16(
    float *dweight, float *dbias, const void *dout, const void *inp,
    const float *mean, const float *rstd, int N, int C, float *scratch,
    cudaStream_t stream);
cudaError_t zb_cuda_gelu_forward_bf16(void *out, const void *inp, size_t N,
                                      cudaStream_t stream);
cudaError_t zb_cuda_gelu_backward_bf16(void *dinp, const void *inp,
                                       const void *dout, size_t N,
                                       cudaStream_t stream);
cudaError_t zb_cuda_ce_max_bf16(double *rowmax, const void *zl, int N, int Vl,
                                int ld, cudaStream_t stream);
cudaError_t zb_cuda_ce_stats_bf16(double *S, double *Zt, const void *zl,
                                  const double *M, const int *targets, int v0,
                                  int N, int Vl, int ld, cudaStream_t stream);
cudaError_t zb_cuda_ce_backward_bf16(void *dzl, const void *zl,
                                     const double *M, const double *S,
                                     const int *targets, int v0, float scale,
                                     int N, int Vl, int ld,
                                     cudaStream_t stream);
cudaError_t zb_cuda_ce_fused_bf16(double *acc, float *losses, void *dzl,
                                  const void *zl, const int *targets,
                                  float scale, int N, int V, int ld,
                                  cudaStream_t stream);
/* out[b, t] = tok[b, t] + wpe[t] (=; tok fp32, the TP-summed lookup) */
cudaError_t zb_cuda_embed_add_pos_bf16(void *out, const float *tok,
                                       const float *wpe, int B, int T, int C,
                                       cudaStream_t stream);
cudaError_t zb_cuda_embed_tokens_backward_bf16(float *dwtel, const void *dout,
                                               const int *tokens, int v0,
                                               int nv, int N, int C,
                                               void *scratch,
                                               size_t scratch_bytes,
                                               cudaStream_t stream);
cudaError_t zb_cuda_embed_pos_backward_bf16(float *dwpe, const void *dout,
                                            int B, int T, int C,
                                            cudaStream_t stream);
cudaError_t zb_cuda_bias_rows_bf16(void *out, const float *bias, int N, int OC,
                                   int ldo, cudaStream_t stream);
cudaError_t zb_cuda_colsum_add_bf16(float *dbias, const void *dout, int N,
                                    int OC, float *scratch,
                                    cudaStream_t stream);
cudaError_t zb_cuda_attn_softmax_causal_bf16(void *att, int T, size_t nmat,
                                             cudaStream_t stream);
cudaError_t zb_cuda_attn_softmax_causal_backward_bf16(void *ds,
                                                      const void *att, int T,
                                                      size_t nmat,
                                                      cudaStream_t stream);
cudaError_t zb_cuda_residual_add_bf16(void *out, const void *x,
                                      const float *part, const float *bias,
                                      int N, int C, cudaStream_t stream);
/* dst[n] = src[n] rounded to bf16 */
cudaError_t zb_cuda_cast_bf16(void *dst, const float *src, size_t n,
                              cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
