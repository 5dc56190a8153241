/* ops.h - the op table: everything the stage program (gpt.c) asks of a
 * backend, and nothing else. The program holds the model's orchestration
 * (which op runs on which buffer, in which order, the TP reductions over
 * the transport, the activation slots); a backend only computes and
 * places memory. ops_cpu.c implements the table with kernels/ and
 * OpenBLAS, synchronously; ops_cuda.cu with cuBLAS and kernels/cuda/,
 * enqueuing every op on the rank's stream without waiting for the device
 * (only to_host and the calls said to wait do).
 *
 * Memory: every float/double/int/zb_act pointer handed to an op is
 * "backend memory" (host memory for cpu, device memory for cuda) carved
 * from the arena of alloc, except the host sides of to_host/from_host.
 * Every op returns ZB_OK or fills err (a failed launch or library call).
 *
 * Activations (zb_act) are stored as act_dtype elements, chosen by the
 * backend at creation (fp32, or bf16 for the CUDA ops under precision
 * bf16 and for the CPU test hook ZB_ACT_BF16=1); `float` pointers are
 * always fp32 (parameters, their gradients, AdamW moments, LayerNorm
 * statistics, losses, the row-parallel partial sums that TP all-reduces),
 * doubles always fp64. Ops load bf16 as fp32, compute in fp32 and round
 * to nearest even once on every store. "n elements" counts act_dtype
 * elements.
 *
 * Shapes (row-major, C contiguous): N rows (tokens), C columns; see each
 * entry. "+=" entries accumulate into their output, "=" entries write it.
 */
#ifndef ZB_STAGE_OPS_H
#define ZB_STAGE_OPS_H

#include <stdbool.h>
#include <stddef.h>

#include "common/zb_error.h"
#include "executor/stage/gemm_desc.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Activation storage: act_dtype elements; never dereferenced outside the
 * backend (a pointer type of its own so that an fp32 pointer cannot be
 * passed where activations go, nor the reverse). */
typedef struct zb_act zb_act;

typedef struct {
    const char *name;  /* "cpu" / "cuda" */
    void *ctx;         /* the backend's own state, first argument of all */
    void *stream;      /* cuda: the cudaStream_t every op enqueues on (the
                          transport orders its copies against it); cpu: NULL */
    zb_dtype act_dtype;  /* activation storage (see above) */
    size_t act_align;  /* bytes: every activation buffer the stage carves
                          starts at a multiple (cpu fp32 4: packed as
                          before; cpu bf16 16; cuda 256) */
    int logits_align;  /* rows of the logits (and their gradient) start at
                          multiples of this many elements: the stage pads
                          their stride (cuda 128; cpu 1, no padding, or
                          ZB_LOGITS_ALIGN from the environment for tests);
                          the padded columns never enter the softmax */

    /* ---- memory placement ---- */
    /* One zeroed arena of `bytes` (the rank's; 256-byte aligned). */
    zb_status (*alloc)(void *ctx, size_t bytes, void **out, zb_err *err);
    void (*release)(void *ctx, void *p);
    /* dst (host) = src (backend), after all work enqueued so far (waits). */
    zb_status (*to_host)(void *ctx, void *dst, const void *src, size_t bytes,
                         zb_err *err);
    /* dst (backend) = src (host); src may be reused when it returns. */
    zb_status (*from_host)(void *ctx, void *dst, const void *src,
                           size_t bytes, zb_err *err);
    /* dst = src, both backend memory, bytes */
    zb_status (*copy)(void *ctx, void *dst, const void *src, size_t bytes,
                      zb_err *err);
    zb_status (*memset0)(void *ctx, void *p, size_t bytes, zb_err *err);

    /* ---- dense ---- */
    /* gemm_desc.h: C = alpha op(A) op(B) + beta C, per batch, with the
     * optional bias and GELU epilogue. */
    zb_status (*gemm)(void *ctx, const zb_gemm *g, zb_err *err);
    /* dbias[OC] += sum over n of dout[n, :] (dout [N, OC]) */
    zb_status (*colsum_add)(void *ctx, float *dbias, const zb_act *dout,
                            int N, int OC, zb_err *err);
    /* out[N, C] = x + (part + bias[C]) (bias after the TP reduce) */
    zb_status (*residual_add)(void *ctx, zb_act *out, const zb_act *x,
                              const float *part, const float *bias, int N,
                              int C, zb_err *err);
    /* dinp[n] += gelu'(inp[n]) dout[n], n elements */
    zb_status (*gelu_bwd)(void *ctx, zb_act *dinp, const zb_act *inp,
                          const zb_act *dout, size_t n, zb_err *err);
    /* dst[n] = src[n] in act_dtype (fp32: a copy; bf16: rounded) */
    zb_status (*cast)(void *ctx, zb_act *dst, const float *src, size_t n,
                      zb_err *err);

    /* ---- LayerNorm, eps 1e-5: inp/out [N, C], w/b [C], mean/rstd [N] ---- */
    zb_status (*ln_fwd)(void *ctx, zb_act *out, float *mean, float *rstd,
                        const zb_act *inp, const float *w, const float *b,
                        int N, int C, zb_err *err);
    /* dinp += d/dinp (B) */
    zb_status (*ln_bwd_input)(void *ctx, zb_act *dinp, const zb_act *dout,
                              const zb_act *inp, const float *w,
                              const float *mean, const float *rstd, int N,
                              int C, zb_err *err);
    /* dw += sum dout*xhat, db += sum dout (W) */
    zb_status (*ln_bwd_weight)(void *ctx, float *dw, float *db,
                               const zb_act *dout, const zb_act *inp,
                               const float *mean, const float *rstd, int N,
                               int C, zb_err *err);

    /* ---- causal attention core: qkv [B, T, 3C], out/dout [B, T, C],
     * NH heads of C/NH; `saved` (what B needs besides qkv and out) and the
     * backward `scratch` are backend-sized and backend-typed (the two size
     * entries, in bytes). ---- */
    size_t (*attn_saved_bytes)(void *ctx, int B, int NH, int T);
    size_t (*attn_scratch_bytes)(void *ctx, int B, int NH, int T);
    zb_status (*attn_fwd)(void *ctx, zb_act *out, void *saved,
                          const zb_act *qkv, int B, int T, int C, int NH,
                          zb_err *err);
    /* dqkv = (writes) */
    zb_status (*attn_bwd)(void *ctx, zb_act *dqkv, void *scratch,
                          const zb_act *dout, const zb_act *qkv,
                          const zb_act *out, const void *saved, int B, int T,
                          int C, int NH, zb_err *err);

    /* ---- vocabulary-parallel embedding: this rank's rows [v0, v0+nv) of
     * the token table, wtel [nv, C]; tokens [N] (backend ints) ---- */
    /* out[n] = wtel[tok - v0] or 0 outside the shard (=; fp32, summed
     * over TP before embed_add_pos) */
    zb_status (*embed_tokens)(void *ctx, float *out, const int *tokens,
                              const float *wtel, int v0, int nv, int N, int C,
                              zb_err *err);
    /* out[b, t] = tok[b, t] + wpe[t] (=) */
    zb_status (*embed_add_pos)(void *ctx, zb_act *out, const float *tok,
                               const float *wpe, int B, int T, int C,
                               zb_err *err);
    /* dwtel[tok - v0] += dout[n] for tokens in the shard */
    zb_status (*embed_tokens_bwd)(void *ctx, float *dwtel, const zb_act *dout,
                                  const int *tokens, int v0, int nv, int N,
                                  int C, zb_err *err);
    /* dwpe[t] += sum over b of dout[b, t] */
    zb_status (*embed_pos_bwd)(void *ctx, float *dwpe, const zb_act *dout,
                               int B, int T, int C, zb_err *err);

    /* ---- vocabulary-parallel cross-entropy (kernels/crossentropy.h):
     * zl [N, Vl] this rank's logits of rows [v0, v0+Vl), row stride
     * ld >= Vl (columns past Vl are padding, never read); doubles [N] ---- */
    /* rowmax[N] = max_v zl (=) */
    zb_status (*ce_max)(void *ctx, double *rowmax, const zb_act *zl, int N,
                        int Vl, int ld, zb_err *err);
    /* tab [tp, N] (every rank's maxima) -> tab[0, n] = max over k (=) */
    zb_status (*ce_max_combine)(void *ctx, double *tab, int tp, int N,
                                zb_err *err);
    /* S[n] = sum exp(zl - M), Zt[n] = target logit or 0 (=) */
    zb_status (*ce_stats)(void *ctx, double *S, double *Zt, const zb_act *zl,
                          const double *M, const int *targets, int v0, int N,
                          int Vl, int ld, zb_err *err);
    /* losses[n] = log S + M - Zt (=); *acc += their sum, in order */
    zb_status (*ce_loss)(void *ctx, double *acc, float *losses,
                         const double *M, const double *S, const double *Zt,
                         int N, zb_err *err);
    /* dzl[:, :Vl] = scale (softmax - onehot) (=; stride ld, padding left) */
    zb_status (*ce_bwd)(void *ctx, zb_act *dzl, const zb_act *zl,
                        const double *M, const double *S, const int *targets,
                        int v0, float scale, int N, int Vl, int ld,
                        zb_err *err);
    /* tp 1 (one rank holds all V rows, v0 = 0): the pieces above in one
     * op, the same contract: losses[N] (=), *acc += their sum in order,
     * dzl[:, :V] = scale (softmax - onehot) (=; stride ld, padding left).
     * cpu: bit for bit the pieces' results (zb_ce_fused); cuda: one
     * kernel reading each row from HBM once. */
    zb_status (*ce_fused)(void *ctx, double *acc, float *losses, zb_act *dzl,
                          const zb_act *zl, const int *targets, float scale,
                          int N, int V, int ld, zb_err *err);

    /* ---- optimizer and norms ---- */
    /* *acc += sum x[i]^2 in double */
    zb_status (*sumsq_add)(void *ctx, double *acc, const float *x, size_t n,
                           zb_err *err);
    /* AdamW (kernels/adamw.h) on n floats */
    zb_status (*adamw)(void *ctx, float *p, const float *g, float *m,
                       float *v, size_t n, float lr, float beta1, float beta2,
                       float eps, float wd, float grad_scale, int t,
                       zb_err *err);

    /* ---- time and lifetime ---- */
    /* Start of a step: wait for the previous one, take the reference time. */
    zb_status (*step_begin)(void *ctx, zb_err *err);
    /* Bracket pass i of the step (i < max_passes given at creation). */
    zb_status (*pass_begin)(void *ctx, int i, zb_err *err);
    zb_status (*pass_end)(void *ctx, int i, zb_err *err);
    /* Device times of passes [0, n) since step_begin on CLOCK_MONOTONIC
     * minus t0; false when the backend has none (cpu) or cannot tell. */
    bool (*pass_times)(void *ctx, double *t_start, double *t_end, int n,
                       double t0);
    void (*destroy)(void *ctx);

    /* ---- Llama-shaped blocks (kernels/rmsnorm.h, swiglu.h, rope.h and
     * attention.h's GQA; shapes local to the TP rank, zb_llama_tp).
     * How the stage program (gpt_passes.c) uses them, block by block,
     * where the GPT calls the ops above:
     *  - ln_fwd / ln_bwd_input / ln_bwd_weight -> rms_*: only rstd is
     *    kept (the mean slot is unused), no bias gradient.
     *  - qkv GEMM of Cl + 2 KVl hs columns (no bias); then rope_fwd in
     *    place on its first NHl + KVl heads, so that the kept qkv is what
     *    the attention read (gqa_bwd and selective recompute need that).
     *    attn_fwd/attn_bwd -> gqa_fwd/gqa_bwd (saved and scratch of
     *    gqa_saved_bytes); after gqa_bwd, rope_bwd in place on dqkv: the
     *    kept dqkv is then the gradient of the GEMM's output, what both
     *    its B (linear_bwd_input_tp) and its W read. Full recompute
     *    reruns the rope after the GEMM.
     *  - MLP: one GEMM with W1 and W3 stacked per rank ([2 Fl, C], rows
     *    ffn0.. of each) into fch [N, 2 Fl], no GELU epilogue; swiglu_fwd
     *    into fch_gelu [N, Fl]; W2 as today. B: dgelu from W2, dfch
     *    zeroed, swiglu_bwd (+=), then the stacked GEMM's B with OC 2 Fl.
     *  - no biases: residual_add with a zero bias vector; position
     *    rope: no wpe, embed_add_pos -> cast of the TP-summed lookup, no
     *    embed_pos_bwd; untied head: the LM head reads its own [V, C]
     *    shard instead of the token table. ---- */
    /* RMSNorm, eps 1e-5: inp/out [N, C], w [C], rstd [N] (=) */
    zb_status (*rms_fwd)(void *ctx, zb_act *out, float *rstd,
                         const zb_act *inp, const float *w, int N, int C,
                         zb_err *err);
    /* dinp += d/dinp (B) */
    zb_status (*rms_bwd_input)(void *ctx, zb_act *dinp, const zb_act *dout,
                               const zb_act *inp, const float *w,
                               const float *rstd, int N, int C, zb_err *err);
    /* dw += sum dout * xhat (W) */
    zb_status (*rms_bwd_weight)(void *ctx, float *dw, const zb_act *dout,
                                const zb_act *inp, const float *rstd, int N,
                                int C, zb_err *err);
    /* SwiGLU gate: ab [N, 2F] (a = x W1^T | b = x W3^T), out [N, F] =
     * silu(a) * b (=); dab [N, 2F] += (B; no W part) */
    zb_status (*swiglu_fwd)(void *ctx, zb_act *out, const zb_act *ab, int N,
                            int F, zb_err *err);
    zb_status (*swiglu_bwd)(void *ctx, zb_act *dab, const zb_act *ab,
                            const zb_act *dout, int N, int F, zb_err *err);
    /* RoPE in place on x [B, T, ld]: the first H heads of hs channels of
     * each row (a GQA qkv: H = NH + KVH, ld = C + 2 KVH hs); rope_bwd
     * turns the gradient back (=, in place) */
    zb_status (*rope_fwd)(void *ctx, zb_act *x, int B, int T, int H, int hs,
                          int ld, float theta, zb_err *err);
    zb_status (*rope_bwd)(void *ctx, zb_act *dx, int B, int T, int H, int hs,
                          int ld, float theta, zb_err *err);
    /* causal GQA core: qkv [B, T, C + 2 KVH hs] (q, k, v; hs = C / NH;
     * KVH divides NH), out/dout [B, T, C]; `saved` and the backward
     * `scratch` of gqa_saved_bytes each (both backends keep the [B, NH,
     * T, T] probabilities). Fails (ZB_EINPUT) on shapes that do not
     * divide. */
    size_t (*gqa_saved_bytes)(void *ctx, int B, int NH, int T);
    zb_status (*gqa_fwd)(void *ctx, zb_act *out, void *saved,
                         const zb_act *qkv, int B, int T, int C, int NH,
                         int KVH, zb_err *err);
    /* dqkv = (writes) */
    zb_status (*gqa_bwd)(void *ctx, zb_act *dqkv, void *scratch,
                         const zb_act *dout, const zb_act *qkv,
                         const zb_act *out, const void *saved, int B, int T,
                         int C, int NH, int KVH, zb_err *err);

    /* ---- vocabulary parallelism over the pipeline (kernels/vocab_out.h;
     * the stage program's S and T passes, vocab_head.h): p shards' local
     * statistics tab [p, 3, N] (m, s, zt each, shard order) -> out [3, N]
     * = (M, S, Zt) (=), every rank the same bits ---- */
    zb_status (*vocab_combine)(void *ctx, double *out, const double *tab,
                               int p, int N, zb_err *err);
    /* P[n, :Vl] = exp(zl - (float)m[n]) (=; P and zl of row stride ld) */
    zb_status (*vocab_exp)(void *ctx, zb_act *P, const zb_act *zl,
                           const double *m, int N, int Vl, int ld,
                           zb_err *err);
    /* dx [N, C] = scale (exp(m - M) / S  A - G) (=; A, G, dx fp32;
     * m [N]; MS [3, N] the combined statistics) */
    zb_status (*vocab_dx)(void *ctx, float *dx, const float *A,
                          const float *G, const double *m, const double *MS,
                          float scale, int N, int C, zb_err *err);
} zb_ops;

/* Tensor parallelism of a Llama block over tp ranks (Megatron-style: one
 * all-reduce after attention, one after the MLP, as for the GPT):
 *  - attention: the NH query heads and the KVH key/value heads are each
 *    split in tp equal runs; rank r holds query heads [head0, head0 +
 *    heads) and kv heads [kv_head0, kv_head0 + kv_heads). G = NH / KVH
 *    is the same on every rank and rank r's query heads read exactly its
 *    own kv heads (h / G), so the local GQA is the global one restricted.
 *    Wq, Wk, Wv are column-split by head (the local qkv is [q | k | v] of
 *    the local heads), Wo row-split: each rank's partial [N, C] is summed
 *    over TP. tp must divide kv_heads: a kv head is never cut or copied.
 *  - SwiGLU MLP: W1 and W3 [F, C] column-split (rank r's output features
 *    [ffn0, ffn0 + ffn) of each, stacked into one [2 ffn, C] GEMM whose
 *    output is the local ab), the gate elementwise on them, W2 [C, F]
 *    row-split (input features [ffn0, ffn0 + ffn)): partials summed over
 *    TP. tp must divide F.
 * Fills *out for `rank` or fails (ZB_EINPUT) naming what tp does not
 * divide. Pure arithmetic, the same for both backends (ops_cpu.c). */
typedef struct {
    int heads, head0;       /* local query heads, the first one's index */
    int kv_heads, kv_head0; /* local key/value heads */
    int ffn, ffn0;          /* local SwiGLU features, the first's index */
} zb_llama_tp;
zb_status zb_llama_tp_split(int heads, int kv_heads, int ffn, int tp,
                            int rank, zb_llama_tp *out, zb_err *err);

/* ops_cpu.c: fp32 activations; never fails. */
void zb_ops_cpu(zb_ops *ops);

/* ops_cpu.c, second part (a test hook: the stage takes it when
 * ZB_ACT_BF16=1 is in the environment): the CPU ops with bf16 activation
 * storage, so that
 * the stage program's bf16 orchestration (element sizes, strides, casts)
 * runs on the CPU; every op widens its bf16 operands, runs the fp32 op and
 * rounds what it wrote. Fails only for memory (its scratch, grown on
 * demand). */
zb_status zb_ops_cpu_bf16(zb_ops *ops, zb_err *err);

#ifdef ZB_HAVE_CUDA
/* What the CUDA ops need to know at creation. */
typedef struct {
    int device;          /* ordinal after CUDA_VISIBLE_DEVICES */
    bool bf16;           /* plan precision bf16: bf16 activations (act_dtype)
                            and bf16 GEMMs on the tensor cores; needs
                            attn_gemm */
    int max_passes;      /* passes per step to time (events) */
    size_t upload_bytes; /* largest from_host that must not wait */
    int wgrad_rows;      /* N of every colsum_add and ln_bwd_weight */
    int wgrad_cols;      /* their largest column count */
    bool attn_gemm;      /* attention as cuBLAS batched GEMMs around softmax
                            kernels (keeps the [T, T] probabilities; on the
                            tensor cores with bf16); false: the fused fp32
                            online-softmax kernel (keeps a row lse) */
} zb_ops_cuda_cfg;

/* ops_cuda.cu: stream, cuBLAS handle and workspace on cfg->device. */
zb_status zb_ops_cuda(const zb_ops_cuda_cfg *cfg, zb_ops *ops, zb_err *err);
/* Head size the attention op supports (C, NH local under TP). */
bool zb_ops_cuda_attention_supported(int C, int NH);
int zb_ops_cuda_device_count(void);
void zb_ops_cuda_device_name(int device, char *buf, size_t n);
#endif

#ifdef __cplusplus
}
#endif

#endif
