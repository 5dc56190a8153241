/* ops_cpu.c - the op table (ops.h) on the host: kernels/ and OpenBLAS,
 * every op synchronous (done when it returns). Backend memory is host
 * memory; the arena is one zeroed, 256-byte aligned allocation. The ops
 * are the very kernel calls the CPU stage always made, so its results are
 * bit for bit those of before the op table. Activations are fp32 (act_dtype
 * ZB_DT_F32): every zb_act pointer is a float pointer here; buffers packed
 * (act_align 4) as before activations had a type. The second part is the
 * same ops over bf16 activations, a test hook (zb_ops_cpu_bf16). */
#include "executor/stage/ops.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/adamw.h"
#include "kernels/attention.h"
#include "kernels/bf16.h"
#include "kernels/crossentropy.h"
#include "kernels/embed.h"
#include "kernels/gelu.h"
#include "kernels/layernorm.h"
#include "kernels/matmul.h"
#include "kernels/rmsnorm.h"
#include "kernels/rope.h"
#include "kernels/swiglu.h"
#include "kernels/vocab_out.h"

#define ZB_ARENA_ALIGN 256

static zb_status c_alloc(void *ctx, size_t bytes, void **out, zb_err *err) {
    size_t n = (bytes + ZB_ARENA_ALIGN - 1) / ZB_ARENA_ALIGN * ZB_ARENA_ALIGN;
    *out = aligned_alloc(ZB_ARENA_ALIGN, n ? n : ZB_ARENA_ALIGN);
    if (!*out)
        return zb_fail(err, ZB_ENOMEM, "out of memory: %zu bytes for the "
                       "stage arena", n);
    memset(*out, 0, n);
    return ZB_OK;
}
static void c_release(void *ctx, void *p) { free(p); }
static zb_status c_copy(void *ctx, void *dst, const void *src, size_t bytes,
                        zb_err *err) {
    if (bytes) memcpy(dst, src, bytes);
    return ZB_OK;
}
static zb_status c_memset0(void *ctx, void *p, size_t bytes, zb_err *err) {
    if (bytes) memset(p, 0, bytes);
    return ZB_OK;
}

/* bias rows first and the product added onto them (beta 1), then GELU */
static zb_status c_gemm(void *ctx, const zb_gemm *g, zb_err *err) {
    const char *bad = zb_gemm_check(g);
    if (bad) return zb_fail(err, ZB_ERUNTIME, "gemm %dx%dx%d: %s", g->M, g->N,
                            g->K, bad);
    if (g->ab_type != ZB_DT_F32 || g->c_type != ZB_DT_F32)
        return zb_fail(err, ZB_ERUNTIME, "gemm %dx%dx%d: the CPU ops multiply "
                       "fp32 only", g->M, g->N, g->K);
    const float *A = g->A, *B = g->B;
    float *gelu = g->gelu_out;
    for (int b = 0; b < g->batch; b++) {
        float *C = (float *)g->C + b * g->sc, beta = g->beta;
        if (g->bias) {
            for (int r = 0; r < g->M; r++)
                memcpy(C + (size_t)r * g->ldc, g->bias, (size_t)g->N * sizeof *C);
            beta = 1.0f;
        }
        zb_sgemm_blocked(g->ta, g->tb, g->M, g->N, g->K, g->alpha,
                         A + b * g->sa, g->lda, B + b * g->sb, g->ldb,
                         beta, C, g->ldc);
        if (gelu) zb_gelu_forward(gelu + b * g->sc, C, (size_t)g->M * g->N);
    }
    return ZB_OK;
}

/* fp32 views of the activation pointers (act_dtype fp32) */
#define F(p) ((float *)(p))
#define CF(p) ((const float *)(p))

static zb_status c_colsum_add(void *ctx, float *dbias, const zb_act *dout,
                              int N, int OC, zb_err *err) {
    zb_colsum_add(dbias, CF(dout), N, OC);
    return ZB_OK;
}

/* Elements below which a loop runs on one thread. */
#define ZB_OMP_MIN_ELEMS (1 << 16)

static zb_status c_residual_add(void *ctx, zb_act *out_, const zb_act *x_,
                                const float *part, const float *bias, int N,
                                int C, zb_err *err) {
    float *out = F(out_);
    const float *x = CF(x_);
#pragma omp parallel for schedule(static) if ((size_t)N * C >= ZB_OMP_MIN_ELEMS)
    for (int n = 0; n < N; n++)
        for (int c = 0; c < C; c++) {
            size_t i = (size_t)n * C + c;
            out[i] = x[i] + (part[i] + bias[c]);
        }
    return ZB_OK;
}

static zb_status c_gelu_bwd(void *ctx, zb_act *dinp, const zb_act *inp,
                            const zb_act *dout, size_t n, zb_err *err) {
    zb_gelu_backward(F(dinp), CF(inp), CF(dout), n);
    return ZB_OK;
}

static zb_status c_cast(void *ctx, zb_act *dst, const float *src, size_t n,
                        zb_err *err) {
    if (n) memcpy(dst, src, n * sizeof *src);
    return ZB_OK;
}

static zb_status c_ln_fwd(void *ctx, zb_act *out, float *mean, float *rstd,
                          const zb_act *inp, const float *w, const float *b,
                          int N, int C, zb_err *err) {
    zb_layernorm_forward(F(out), mean, rstd, CF(inp), w, b, N, C);
    return ZB_OK;
}
static zb_status c_ln_bwd_input(void *ctx, zb_act *dinp, const zb_act *dout,
                                const zb_act *inp, const float *w,
                                const float *mean, const float *rstd, int N,
                                int C, zb_err *err) {
    zb_layernorm_backward_input(F(dinp), CF(dout), CF(inp), w, mean, rstd, N,
                                C);
    return ZB_OK;
}
static zb_status c_ln_bwd_weight(void *ctx, float *dw, float *db,
                                 const zb_act *dout, const zb_act *inp,
                                 const float *mean, const float *rstd, int N,
                                 int C, zb_err *err) {
    zb_layernorm_backward_weight(dw, db, CF(dout), CF(inp), mean, rstd, N, C);
    return ZB_OK;
}

/* the CPU attention keeps the softmax [B, NH, T, T] in floats; its
 * backward the same size of scratch */
static size_t c_attn_full(void *ctx, int B, int NH, int T) {
    return (size_t)B * NH * T * T * sizeof(float);
}
static zb_status c_attn_fwd(void *ctx, zb_act *out, void *saved,
                            const zb_act *qkv, int B, int T, int C, int NH,
                            zb_err *err) {
    zb_attention_forward(F(out), saved, CF(qkv), B, T, C, NH);
    return ZB_OK;
}
static zb_status c_attn_bwd(void *ctx, zb_act *dqkv, void *scratch,
                            const zb_act *dout, const zb_act *qkv,
                            const zb_act *out, const void *saved, int B,
                            int T, int C, int NH, zb_err *err) {
    memset(dqkv, 0, (size_t)B * T * 3 * C * sizeof(float));
    zb_attention_backward(F(dqkv), scratch, CF(dout), CF(qkv), saved, B, T, C,
                          NH);
    return ZB_OK;
}

static zb_status c_embed_tokens(void *ctx, float *out, const int *tokens,
                                const float *wtel, int v0, int nv, int N,
                                int C, zb_err *err) {
    zb_embed_tokens_shard(out, tokens, wtel, v0, nv, N, C);
    return ZB_OK;
}
static zb_status c_embed_add_pos(void *ctx, zb_act *out, const float *tok,
                                 const float *wpe, int B, int T, int C,
                                 zb_err *err) {
    if (CF(out) != tok) memcpy(out, tok, (size_t)B * T * C * sizeof *tok);
    zb_embed_add_pos(F(out), wpe, B, T, C);
    return ZB_OK;
}
static zb_status c_embed_tokens_bwd(void *ctx, float *dwtel,
                                    const zb_act *dout, const int *tokens,
                                    int v0, int nv, int N, int C,
                                    zb_err *err) {
    zb_embed_tokens_shard_backward(dwtel, CF(dout), tokens, v0, nv, N, C);
    return ZB_OK;
}
static zb_status c_embed_pos_bwd(void *ctx, float *dwpe, const zb_act *dout,
                                 int B, int T, int C, zb_err *err) {
    zb_embed_pos_backward(dwpe, CF(dout), B, T, C);
    return ZB_OK;
}

/* The kernels take contiguous rows; a padded stride goes row by row (each
 * row is computed alone either way, so the results are the same). */
static zb_status c_ce_max(void *ctx, double *rowmax, const zb_act *zl_,
                          int N, int Vl, int ld, zb_err *err) {
    const float *zl = CF(zl_);
    if (ld == Vl) zb_ce_shard_max(rowmax, zl, N, Vl);
    else
        for (int n = 0; n < N; n++)
            zb_ce_shard_max(rowmax + n, zl + (size_t)n * ld, 1, Vl);
    return ZB_OK;
}
static zb_status c_ce_max_combine(void *ctx, double *tab, int tp, int N,
                                  zb_err *err) {
    for (int n = 0; n < N; n++)
        for (int k = 1; k < tp; k++)
            if (tab[(size_t)k * N + n] > tab[n]) tab[n] = tab[(size_t)k * N + n];
    return ZB_OK;
}
static zb_status c_ce_stats(void *ctx, double *S, double *Zt,
                            const zb_act *zl_, const double *M,
                            const int *targets, int v0, int N, int Vl, int ld,
                            zb_err *err) {
    const float *zl = CF(zl_);
    if (ld == Vl) zb_ce_shard_stats(S, Zt, zl, M, targets, v0, N, Vl);
    else
        for (int n = 0; n < N; n++)
            zb_ce_shard_stats(S + n, Zt + n, zl + (size_t)n * ld, M + n,
                              targets + n, v0, 1, Vl);
    return ZB_OK;
}
static zb_status c_ce_loss(void *ctx, double *acc, float *losses,
                           const double *M, const double *S, const double *Zt,
                           int N, zb_err *err) {
    *acc += zb_ce_shard_loss(losses, M, S, Zt, N);
    return ZB_OK;
}
static zb_status c_ce_bwd(void *ctx, zb_act *dzl_, const zb_act *zl_,
                          const double *M, const double *S, const int *targets,
                          int v0, float scale, int N, int Vl, int ld,
                          zb_err *err) {
    float *dzl = F(dzl_);
    const float *zl = CF(zl_);
    if (ld == Vl) zb_ce_shard_backward(dzl, zl, M, S, targets, v0, scale, N, Vl);
    else
        for (int n = 0; n < N; n++)
            zb_ce_shard_backward(dzl + (size_t)n * ld, zl + (size_t)n * ld,
                                 M + n, S + n, targets + n, v0, scale, 1, Vl);
    return ZB_OK;
}

static zb_status c_ce_fused(void *ctx, double *acc, float *losses,
                            zb_act *dzl, const zb_act *zl, const int *targets,
                            float scale, int N, int V, int ld, zb_err *err) {
    *acc += zb_ce_fused(losses, F(dzl), CF(zl), targets, scale, N, V, ld);
    return ZB_OK;
}

static zb_status c_sumsq_add(void *ctx, double *acc, const float *x, size_t n,
                             zb_err *err) {
    *acc += zb_sumsq(x, n);
    return ZB_OK;
}
static zb_status c_adamw(void *ctx, float *p, const float *g, float *m,
                         float *v, size_t n, float lr, float beta1,
                         float beta2, float eps, float wd, float grad_scale,
                         int t, zb_err *err) {
    zb_adamw_update(p, g, m, v, n, lr, beta1, beta2, eps, wd, grad_scale, t);
    return ZB_OK;
}

static zb_status c_nothing(void *ctx, zb_err *err) { return ZB_OK; }
static zb_status c_pass_mark(void *ctx, int i, zb_err *err) { return ZB_OK; }
/* the caller's host clock already times the synchronous passes */
static bool c_pass_times(void *ctx, double *t_start, double *t_end, int n,
                         double t0) {
    return false;
}
static void c_destroy(void *ctx) {}

/* ZB_LOGITS_ALIGN=K (tests): pad the logits' row stride to a multiple of
 * K floats as the CUDA ops do (128), so that the CPU runs that path of the
 * stage program too; unset: 1, no padding. */
static int logits_align(void) {
    const char *s = getenv("ZB_LOGITS_ALIGN");
    int k = s ? atoi(s) : 1;
    return k >= 1 && k <= 4096 ? k : 1;
}

static void cpu_llama_ops(zb_ops *o);
static void bf16_llama_ops(zb_ops *o);
static void cpu_vocab_ops(zb_ops *o);
static void bf16_vocab_ops(zb_ops *o);

void zb_ops_cpu(zb_ops *o) {
    *o = (zb_ops){
        .name = "cpu", .ctx = NULL, .stream = NULL,
        .act_dtype = ZB_DT_F32, .act_align = sizeof(float),
        .logits_align = logits_align(),
        .alloc = c_alloc, .release = c_release, .to_host = c_copy,
        .from_host = c_copy, .copy = c_copy, .memset0 = c_memset0,
        .gemm = c_gemm, .colsum_add = c_colsum_add,
        .residual_add = c_residual_add, .gelu_bwd = c_gelu_bwd,
        .cast = c_cast,
        .ln_fwd = c_ln_fwd, .ln_bwd_input = c_ln_bwd_input,
        .ln_bwd_weight = c_ln_bwd_weight,
        .attn_saved_bytes = c_attn_full, .attn_scratch_bytes = c_attn_full,
        .attn_fwd = c_attn_fwd, .attn_bwd = c_attn_bwd,
        .embed_tokens = c_embed_tokens, .embed_add_pos = c_embed_add_pos,
        .embed_tokens_bwd = c_embed_tokens_bwd,
        .embed_pos_bwd = c_embed_pos_bwd,
        .ce_max = c_ce_max, .ce_max_combine = c_ce_max_combine,
        .ce_stats = c_ce_stats, .ce_loss = c_ce_loss, .ce_bwd = c_ce_bwd,
        .ce_fused = c_ce_fused,
        .sumsq_add = c_sumsq_add, .adamw = c_adamw,
        .step_begin = c_nothing, .pass_begin = c_pass_mark,
        .pass_end = c_pass_mark, .pass_times = c_pass_times,
        .destroy = c_destroy,
    };
    cpu_llama_ops(o);
    cpu_vocab_ops(o);
}

/* ---- bf16 activations: the CPU ops with bf16 activation storage, a
 * test hook (ZB_ACT_BF16=1, ops.h) that runs the stage program's bf16
 * orchestration on the CPU: every activation buffer holds 2-byte elements
 * (kernels/bf16.h), so a buffer carved with the wrong element size, a
 * stride counted in floats or a missing cast shows up as wrong numbers.
 *
 * Each op that touches activations widens its bf16 operands into fp32
 * scratch (outputs too, so that what an op leaves alone, e.g. the
 * logits' padding, stays as it was), runs the fp32 CPU op and rounds what
 * it wrote back to bf16, nearest even: one rounding per stored element, as
 * the CUDA kernels store. The GEMMs' weights arrive in bf16 too (the
 * stage's wlow); fp32 operands (parameters, gradients, statistics, the
 * TP partial sums) pass through. The fp32 CPU ops ignore their ctx, so
 * the entries that touch no activation are theirs unchanged.
 *
 * Memory: the scratch buffers grow on demand (the largest operand seen);
 * this is a test mode, not held to "no allocation after creation".
 */

#define NSCRATCH 5 /* operands of one op at most (attn_bwd) */

typedef struct {
    zb_ops f32;              /* the fp32 CPU ops */
    float *buf[NSCRATCH];
    size_t cap[NSCRATCH];    /* floats */
} bx;

static bx *BX(void *ctx) { return (bx *)ctx; }

/* Scratch k widened from bf16 p (n elements; p NULL or n 0: empty). */
static zb_status wide(bx *x, int k, const void *p, size_t n, float **out,
                      zb_err *err) {
    if (n > x->cap[k]) {
        float *b = realloc(x->buf[k], n * sizeof *b);
        if (!b)
            return zb_fail(err, ZB_ENOMEM, "out of memory: %zu floats of bf16 "
                           "test scratch", n);
        x->buf[k] = b;
        x->cap[k] = n;
    }
    if (p && n) zb_bf16_load(x->buf[k], p, n);
    *out = x->buf[k];
    return ZB_OK;
}

/* bf16 p = scratch f rounded, n elements */
static void narrow(void *p, const float *f, size_t n) {
    if (p && n) zb_bf16_store(p, f, n);
}

/* Elements spanned by a [rows, cols] matrix with leading dimension ld over
 * `batch` batches `stride` apart. */
static size_t extent(int rows, int cols, int ld, int batch, long long stride) {
    if (rows <= 0 || cols <= 0) return 0;
    return (size_t)(batch - 1) * (size_t)stride + (size_t)(rows - 1) * ld +
           (size_t)cols;
}

#define W(k, p, n, out) ZB_TRY(wide(x, k, p, n, &out, err))

static zb_status b_gemm(void *ctx, const zb_gemm *g, zb_err *err) {
    bx *x = BX(ctx);
    const char *bad = zb_gemm_check(g);
    if (bad) return zb_fail(err, ZB_ERUNTIME, "gemm %dx%dx%d: %s", g->M, g->N,
                            g->K, bad);
    zb_gemm h = *g;
    float *a, *b, *c, *go = NULL;
    size_t na = extent(g->ta ? g->K : g->M, g->ta ? g->M : g->K, g->lda,
                       g->batch, g->sa);
    size_t nb = extent(g->tb ? g->N : g->K, g->tb ? g->K : g->N, g->ldb,
                       g->batch, g->sb);
    size_t nc = extent(g->M, g->N, g->ldc, g->batch, g->sc);
    if (g->ab_type == ZB_DT_BF16) {
        W(0, g->A, na, a);
        W(1, g->B, nb, b);
        h.A = a, h.B = b, h.ab_type = ZB_DT_F32;
    }
    if (g->c_type == ZB_DT_BF16) {
        W(2, g->C, nc, c);
        h.C = c, h.c_type = ZB_DT_F32;
        if (g->gelu_out) W(3, g->gelu_out, nc, go);
        h.gelu_out = go;
    }
    ZB_TRY(x->f32.gemm(NULL, &h, err));
    if (g->c_type == ZB_DT_BF16) {
        narrow(g->C, h.C, nc);
        if (g->gelu_out) narrow(g->gelu_out, go, nc);
    }
    return ZB_OK;
}

static zb_status b_colsum_add(void *ctx, float *dbias, const zb_act *dout,
                              int N, int OC, zb_err *err) {
    bx *x = BX(ctx);
    float *d;
    W(0, dout, (size_t)N * OC, d);
    return x->f32.colsum_add(NULL, dbias, (zb_act *)d, N, OC, err);
}

static zb_status b_residual_add(void *ctx, zb_act *out, const zb_act *xin,
                                const float *part, const float *bias, int N,
                                int C, zb_err *err) {
    bx *x = BX(ctx);
    size_t n = (size_t)N * C;
    float *o, *i;
    W(0, out, n, o);
    W(1, xin, n, i);
    ZB_TRY(x->f32.residual_add(NULL, (zb_act *)o, (zb_act *)i, part, bias, N,
                               C, err));
    narrow(out, o, n);
    return ZB_OK;
}

static zb_status b_gelu_bwd(void *ctx, zb_act *dinp, const zb_act *inp,
                            const zb_act *dout, size_t n, zb_err *err) {
    bx *x = BX(ctx);
    float *di, *i, *d;
    W(0, dinp, n, di);
    W(1, inp, n, i);
    W(2, dout, n, d);
    ZB_TRY(x->f32.gelu_bwd(NULL, (zb_act *)di, (zb_act *)i, (zb_act *)d, n,
                           err));
    narrow(dinp, di, n);
    return ZB_OK;
}

static zb_status b_cast(void *ctx, zb_act *dst, const float *src, size_t n,
                        zb_err *err) {
    narrow(dst, src, n);
    return ZB_OK;
}

static zb_status b_ln_fwd(void *ctx, zb_act *out, float *mean, float *rstd,
                          const zb_act *inp, const float *w, const float *b,
                          int N, int C, zb_err *err) {
    bx *x = BX(ctx);
    size_t n = (size_t)N * C;
    float *o, *i;
    W(0, out, n, o);
    W(1, inp, n, i);
    ZB_TRY(x->f32.ln_fwd(NULL, (zb_act *)o, mean, rstd, (zb_act *)i, w, b, N,
                         C, err));
    narrow(out, o, n);
    return ZB_OK;
}

static zb_status b_ln_bwd_input(void *ctx, zb_act *dinp, const zb_act *dout,
                                const zb_act *inp, const float *w,
                                const float *mean, const float *rstd, int N,
                                int C, zb_err *err) {
    bx *x = BX(ctx);
    size_t n = (size_t)N * C;
    float *di, *d, *i;
    W(0, dinp, n, di);
    W(1, dout, n, d);
    W(2, inp, n, i);
    ZB_TRY(x->f32.ln_bwd_input(NULL, (zb_act *)di, (zb_act *)d, (zb_act *)i, w,
                               mean, rstd, N, C, err));
    narrow(dinp, di, n);
    return ZB_OK;
}

static zb_status b_ln_bwd_weight(void *ctx, float *dw, float *db,
                                 const zb_act *dout, const zb_act *inp,
                                 const float *mean, const float *rstd, int N,
                                 int C, zb_err *err) {
    bx *x = BX(ctx);
    size_t n = (size_t)N * C;
    float *d, *i;
    W(0, dout, n, d);
    W(1, inp, n, i);
    return x->f32.ln_bwd_weight(NULL, dw, db, (zb_act *)d, (zb_act *)i, mean,
                                rstd, N, C, err);
}

/* the probabilities kept in bf16 (half the fp32 ops' bytes); the
 * backward's scratch stays fp32 */
static size_t b_attn_saved(void *ctx, int B, int NH, int T) {
    return BX(ctx)->f32.attn_saved_bytes(NULL, B, NH, T) / 2;
}
static size_t b_attn_scratch(void *ctx, int B, int NH, int T) {
    return BX(ctx)->f32.attn_scratch_bytes(NULL, B, NH, T);
}

static zb_status b_gqa_fwd(void *ctx, zb_act *out, void *saved,
                           const zb_act *qkv, int B, int T, int C, int NH,
                           int KVH, zb_err *err);
static zb_status b_gqa_bwd(void *ctx, zb_act *dqkv, void *scratch,
                           const zb_act *dout, const zb_act *qkv,
                           const zb_act *out, const void *saved, int B, int T,
                           int C, int NH, int KVH, zb_err *err);

/* multi-head attention is GQA with a kv head per head (the fp32 kernels
 * are the same code, kernels/attention.c), so the bf16 hooks are too */
static zb_status b_attn_fwd(void *ctx, zb_act *out, void *saved,
                            const zb_act *qkv, int B, int T, int C, int NH,
                            zb_err *err) {
    return b_gqa_fwd(ctx, out, saved, qkv, B, T, C, NH, NH, err);
}

static zb_status b_attn_bwd(void *ctx, zb_act *dqkv, void *scratch,
                            const zb_act *dout, const zb_act *qkv,
                            const zb_act *out, const void *saved, int B,
                            int T, int C, int NH, zb_err *err) {
    return b_gqa_bwd(ctx, dqkv, scratch, dout, qkv, out, saved, B, T, C, NH,
                     NH, err);
}

static zb_status b_embed_add_pos(void *ctx, zb_act *out, const float *tok,
                                 const float *wpe, int B, int T, int C,
                                 zb_err *err) {
    bx *x = BX(ctx);
    size_t n = (size_t)B * T * C;
    float *o;
    W(0, out, n, o);
    ZB_TRY(x->f32.embed_add_pos(NULL, (zb_act *)o, tok, wpe, B, T, C, err));
    narrow(out, o, n);
    return ZB_OK;
}

static zb_status b_embed_tokens_bwd(void *ctx, float *dwtel,
                                    const zb_act *dout, const int *tokens,
                                    int v0, int nv, int N, int C,
                                    zb_err *err) {
    bx *x = BX(ctx);
    float *d;
    W(0, dout, (size_t)N * C, d);
    return x->f32.embed_tokens_bwd(NULL, dwtel, (zb_act *)d, tokens, v0, nv, N,
                                   C, err);
}

static zb_status b_embed_pos_bwd(void *ctx, float *dwpe, const zb_act *dout,
                                 int B, int T, int C, zb_err *err) {
    bx *x = BX(ctx);
    float *d;
    W(0, dout, (size_t)B * T * C, d);
    return x->f32.embed_pos_bwd(NULL, dwpe, (zb_act *)d, B, T, C, err);
}

static zb_status b_ce_max(void *ctx, double *rowmax, const zb_act *zl, int N,
                          int Vl, int ld, zb_err *err) {
    bx *x = BX(ctx);
    float *z;
    W(0, zl, extent(N, Vl, ld, 1, 0), z);
    return x->f32.ce_max(NULL, rowmax, (zb_act *)z, N, Vl, ld, err);
}

static zb_status b_ce_stats(void *ctx, double *S, double *Zt,
                            const zb_act *zl, const double *M,
                            const int *targets, int v0, int N, int Vl, int ld,
                            zb_err *err) {
    bx *x = BX(ctx);
    float *z;
    W(0, zl, extent(N, Vl, ld, 1, 0), z);
    return x->f32.ce_stats(NULL, S, Zt, (zb_act *)z, M, targets, v0, N, Vl, ld,
                           err);
}

static zb_status b_ce_bwd(void *ctx, zb_act *dzl, const zb_act *zl,
                          const double *M, const double *S, const int *targets,
                          int v0, float scale, int N, int Vl, int ld,
                          zb_err *err) {
    bx *x = BX(ctx);
    size_t n = extent(N, Vl, ld, 1, 0);
    float *dz, *z;
    W(0, dzl, n, dz);
    W(1, zl, n, z);
    ZB_TRY(x->f32.ce_bwd(NULL, (zb_act *)dz, (zb_act *)z, M, S, targets, v0,
                         scale, N, Vl, ld, err));
    narrow(dzl, dz, n);
    return ZB_OK;
}

static zb_status b_ce_fused(void *ctx, double *acc, float *losses,
                            zb_act *dzl, const zb_act *zl, const int *targets,
                            float scale, int N, int V, int ld, zb_err *err) {
    bx *x = BX(ctx);
    size_t n = extent(N, V, ld, 1, 0);
    float *dz, *z;
    W(0, dzl, n, dz);
    W(1, zl, n, z);
    ZB_TRY(x->f32.ce_fused(NULL, acc, losses, (zb_act *)dz, (zb_act *)z,
                           targets, scale, N, V, ld, err));
    narrow(dzl, dz, n);
    return ZB_OK;
}

static void b_destroy(void *ctx) {
    bx *x = BX(ctx);
    for (int k = 0; k < NSCRATCH; k++) free(x->buf[k]);
    free(x);
}

zb_status zb_ops_cpu_bf16(zb_ops *o, zb_err *err) {
    bx *x = calloc(1, sizeof *x);
    if (!x) return zb_fail(err, ZB_ENOMEM, "out of memory (bf16 test ops)");
    zb_ops_cpu(&x->f32);
    *o = x->f32; /* memory, embedding lookup, optimizer, time: fp32 ops */
    o->name = "cpu-bf16";
    o->ctx = x;
    o->act_dtype = ZB_DT_BF16;
    o->act_align = 16;
    o->gemm = b_gemm;
    o->colsum_add = b_colsum_add;
    o->residual_add = b_residual_add;
    o->gelu_bwd = b_gelu_bwd;
    o->cast = b_cast;
    o->ln_fwd = b_ln_fwd;
    o->ln_bwd_input = b_ln_bwd_input;
    o->ln_bwd_weight = b_ln_bwd_weight;
    o->attn_saved_bytes = b_attn_saved;
    o->attn_scratch_bytes = b_attn_scratch;
    o->attn_fwd = b_attn_fwd;
    o->attn_bwd = b_attn_bwd;
    o->embed_add_pos = b_embed_add_pos;
    o->embed_tokens_bwd = b_embed_tokens_bwd;
    o->embed_pos_bwd = b_embed_pos_bwd;
    o->ce_max = b_ce_max;
    o->ce_stats = b_ce_stats;
    o->ce_bwd = b_ce_bwd;
    o->ce_fused = b_ce_fused;
    o->destroy = b_destroy;
    bf16_llama_ops(o);
    bf16_vocab_ops(o);
    return ZB_OK;
}

/* ---- Llama-shaped blocks (ops.h, appended): fp32, then the bf16 test
 * hook's wrappers; then the TP split ---- */

static zb_status c_rms_fwd(void *ctx, zb_act *out, float *rstd,
                           const zb_act *inp, const float *w, int N, int C,
                           zb_err *err) {
    zb_rmsnorm_forward(F(out), rstd, CF(inp), w, N, C);
    return ZB_OK;
}
static zb_status c_rms_bwd_input(void *ctx, zb_act *dinp, const zb_act *dout,
                                 const zb_act *inp, const float *w,
                                 const float *rstd, int N, int C,
                                 zb_err *err) {
    zb_rmsnorm_backward_input(F(dinp), CF(dout), CF(inp), w, rstd, N, C);
    return ZB_OK;
}
static zb_status c_rms_bwd_weight(void *ctx, float *dw, const zb_act *dout,
                                  const zb_act *inp, const float *rstd, int N,
                                  int C, zb_err *err) {
    zb_rmsnorm_backward_weight(dw, CF(dout), CF(inp), rstd, N, C);
    return ZB_OK;
}
static zb_status c_swiglu_fwd(void *ctx, zb_act *out, const zb_act *ab, int N,
                              int Fn, zb_err *err) {
    zb_swiglu_forward(F(out), CF(ab), N, Fn);
    return ZB_OK;
}
static zb_status c_swiglu_bwd(void *ctx, zb_act *dab, const zb_act *ab,
                              const zb_act *dout, int N, int Fn, zb_err *err) {
    zb_swiglu_backward(F(dab), CF(ab), CF(dout), N, Fn);
    return ZB_OK;
}
static zb_status c_rope_fwd(void *ctx, zb_act *x, int B, int T, int H, int hs,
                            int ld, float theta, zb_err *err) {
    zb_rope_forward(F(x), B, T, H, hs, ld, theta);
    return ZB_OK;
}
static zb_status c_rope_bwd(void *ctx, zb_act *dx, int B, int T, int H,
                            int hs, int ld, float theta, zb_err *err) {
    zb_rope_backward(F(dx), B, T, H, hs, ld, theta);
    return ZB_OK;
}

/* NH heads of C / NH channels, KVH kv heads each shared by NH / KVH */
static zb_status gqa_check(int C, int NH, int KVH, zb_err *err) {
    if (NH < 1 || KVH < 1 || C % NH || NH % KVH)
        return zb_fail(err, ZB_EINPUT, "attention: %d heads of width %d with "
                       "%d key/value heads: the heads must divide the width "
                       "and the key/value heads the heads", NH, C, KVH);
    return ZB_OK;
}
static zb_status c_gqa_fwd(void *ctx, zb_act *out, void *saved,
                           const zb_act *qkv, int B, int T, int C, int NH,
                           int KVH, zb_err *err) {
    ZB_TRY(gqa_check(C, NH, KVH, err));
    zb_attention_gqa_forward(F(out), saved, CF(qkv), B, T, C, NH, KVH);
    return ZB_OK;
}
static zb_status c_gqa_bwd(void *ctx, zb_act *dqkv, void *scratch,
                           const zb_act *dout, const zb_act *qkv,
                           const zb_act *out, const void *saved, int B, int T,
                           int C, int NH, int KVH, zb_err *err) {
    ZB_TRY(gqa_check(C, NH, KVH, err));
    size_t row = (size_t)C + 2 * (size_t)KVH * (C / NH);
    memset(dqkv, 0, (size_t)B * T * row * sizeof(float));
    zb_attention_gqa_backward(F(dqkv), scratch, CF(dout), CF(qkv), saved, B,
                              T, C, NH, KVH);
    return ZB_OK;
}

static void cpu_llama_ops(zb_ops *o) {
    o->rms_fwd = c_rms_fwd;
    o->rms_bwd_input = c_rms_bwd_input;
    o->rms_bwd_weight = c_rms_bwd_weight;
    o->swiglu_fwd = c_swiglu_fwd;
    o->swiglu_bwd = c_swiglu_bwd;
    o->rope_fwd = c_rope_fwd;
    o->rope_bwd = c_rope_bwd;
    o->gqa_saved_bytes = c_attn_full;
    o->gqa_fwd = c_gqa_fwd;
    o->gqa_bwd = c_gqa_bwd;
}

/* bf16 storage: widen, run the fp32 op, round what it wrote (as above) */
static zb_status b_rms_fwd(void *ctx, zb_act *out, float *rstd,
                           const zb_act *inp, const float *w, int N, int C,
                           zb_err *err) {
    bx *x = BX(ctx);
    size_t n = (size_t)N * C;
    float *o, *i;
    W(0, out, n, o);
    W(1, inp, n, i);
    ZB_TRY(x->f32.rms_fwd(NULL, (zb_act *)o, rstd, (zb_act *)i, w, N, C, err));
    narrow(out, o, n);
    return ZB_OK;
}
static zb_status b_rms_bwd_input(void *ctx, zb_act *dinp, const zb_act *dout,
                                 const zb_act *inp, const float *w,
                                 const float *rstd, int N, int C,
                                 zb_err *err) {
    bx *x = BX(ctx);
    size_t n = (size_t)N * C;
    float *di, *d, *i;
    W(0, dinp, n, di);
    W(1, dout, n, d);
    W(2, inp, n, i);
    ZB_TRY(x->f32.rms_bwd_input(NULL, (zb_act *)di, (zb_act *)d, (zb_act *)i,
                                w, rstd, N, C, err));
    narrow(dinp, di, n);
    return ZB_OK;
}
static zb_status b_rms_bwd_weight(void *ctx, float *dw, const zb_act *dout,
                                  const zb_act *inp, const float *rstd, int N,
                                  int C, zb_err *err) {
    bx *x = BX(ctx);
    size_t n = (size_t)N * C;
    float *d, *i;
    W(0, dout, n, d);
    W(1, inp, n, i);
    return x->f32.rms_bwd_weight(NULL, dw, (zb_act *)d, (zb_act *)i, rstd, N,
                                 C, err);
}
static zb_status b_swiglu_fwd(void *ctx, zb_act *out, const zb_act *ab, int N,
                              int Fn, zb_err *err) {
    bx *x = BX(ctx);
    size_t n = (size_t)N * Fn;
    float *o, *a;
    W(0, out, n, o);
    W(1, ab, 2 * n, a);
    ZB_TRY(x->f32.swiglu_fwd(NULL, (zb_act *)o, (zb_act *)a, N, Fn, err));
    narrow(out, o, n);
    return ZB_OK;
}
static zb_status b_swiglu_bwd(void *ctx, zb_act *dab, const zb_act *ab,
                              const zb_act *dout, int N, int Fn, zb_err *err) {
    bx *x = BX(ctx);
    size_t n = (size_t)N * Fn;
    float *da, *a, *d;
    W(0, dab, 2 * n, da);
    W(1, ab, 2 * n, a);
    W(2, dout, n, d);
    ZB_TRY(x->f32.swiglu_bwd(NULL, (zb_act *)da, (zb_act *)a, (zb_act *)d, N,
                             Fn, err));
    narrow(dab, da, 2 * n);
    return ZB_OK;
}
/* the rows' extent: the untouched columns past H heads round-trip
 * exactly (bf16 -> fp32 -> bf16) */
static zb_status b_rope(bx *x, zb_act *p, int B, int T, int H, int hs, int ld,
                        float theta, bool back, zb_err *err) {
    size_t n = extent(B * T, H * hs, ld, 1, 0);
    float *f;
    W(0, p, n, f);
    if (back) ZB_TRY(x->f32.rope_bwd(NULL, (zb_act *)f, B, T, H, hs, ld, theta,
                                     err));
    else ZB_TRY(x->f32.rope_fwd(NULL, (zb_act *)f, B, T, H, hs, ld, theta,
                                err));
    narrow(p, f, n);
    return ZB_OK;
}
static zb_status b_rope_fwd(void *ctx, zb_act *p, int B, int T, int H, int hs,
                            int ld, float theta, zb_err *err) {
    return b_rope(BX(ctx), p, B, T, H, hs, ld, theta, false, err);
}
static zb_status b_rope_bwd(void *ctx, zb_act *p, int B, int T, int H, int hs,
                            int ld, float theta, zb_err *err) {
    return b_rope(BX(ctx), p, B, T, H, hs, ld, theta, true, err);
}
/* the probabilities kept in bf16, as b_attn_saved */
static size_t b_gqa_saved(void *ctx, int B, int NH, int T) {
    return BX(ctx)->f32.gqa_saved_bytes(NULL, B, NH, T) / 2;
}
static zb_status b_gqa_fwd(void *ctx, zb_act *out, void *saved,
                           const zb_act *qkv, int B, int T, int C, int NH,
                           int KVH, zb_err *err) {
    bx *x = BX(ctx);
    ZB_TRY(gqa_check(C, NH, KVH, err));
    size_t n = (size_t)B * T * C, ns = b_gqa_saved(ctx, B, NH, T) / 2;
    size_t nq = (size_t)B * T * (C + 2 * (size_t)KVH * (C / NH));
    float *o, *s, *q;
    W(0, out, n, o);
    W(1, saved, ns, s);
    W(2, qkv, nq, q);
    ZB_TRY(x->f32.gqa_fwd(NULL, (zb_act *)o, s, (zb_act *)q, B, T, C, NH, KVH,
                          err));
    narrow(out, o, n);
    narrow(saved, s, ns);
    return ZB_OK;
}
/* the scratch stays fp32 (gqa_saved_bytes of the fp32 ops: the stage
 * sizes it with this table's entry, half that, so the bf16 hook keeps
 * its own in scratch 4) */
static zb_status b_gqa_bwd(void *ctx, zb_act *dqkv, void *scratch,
                           const zb_act *dout, const zb_act *qkv,
                           const zb_act *out, const void *saved, int B, int T,
                           int C, int NH, int KVH, zb_err *err) {
    bx *x = BX(ctx);
    ZB_TRY(gqa_check(C, NH, KVH, err));
    size_t n = (size_t)B * T * C, ns = b_gqa_saved(ctx, B, NH, T) / 2;
    size_t nq = (size_t)B * T * (C + 2 * (size_t)KVH * (C / NH));
    float *dq, *d, *q, *s, *scr;
    W(0, dqkv, nq, dq);
    W(1, dout, n, d);
    W(2, qkv, nq, q);
    W(3, saved, ns, s);
    W(4, NULL, ns, scr);
    ZB_TRY(x->f32.gqa_bwd(NULL, (zb_act *)dq, scr, (zb_act *)d, (zb_act *)q,
                          NULL, s, B, T, C, NH, KVH, err));
    narrow(dqkv, dq, nq);
    return ZB_OK;
}

static void bf16_llama_ops(zb_ops *o) {
    o->rms_fwd = b_rms_fwd;
    o->rms_bwd_input = b_rms_bwd_input;
    o->rms_bwd_weight = b_rms_bwd_weight;
    o->swiglu_fwd = b_swiglu_fwd;
    o->swiglu_bwd = b_swiglu_bwd;
    o->rope_fwd = b_rope_fwd;
    o->rope_bwd = b_rope_bwd;
    o->gqa_saved_bytes = b_gqa_saved;
    o->gqa_fwd = b_gqa_fwd;
    o->gqa_bwd = b_gqa_bwd;
}

/* Equal runs of each: rank r holds [r n / tp, (r + 1) n / tp). */
zb_status zb_llama_tp_split(int heads, int kv_heads, int ffn, int tp,
                            int rank, zb_llama_tp *out, zb_err *err) {
    if (tp < 1 || rank < 0 || rank >= tp)
        return zb_fail(err, ZB_EINPUT, "tensor parallelism: rank %d of tp %d",
                       rank, tp);
    if (heads < 1 || kv_heads < 1 || heads % kv_heads)
        return zb_fail(err, ZB_EINPUT, "attention: kv_heads %d must divide "
                       "heads %d (each key/value head serves heads/kv_heads "
                       "query heads)", kv_heads, heads);
    if (kv_heads % tp)
        return zb_fail(err, ZB_EINPUT, "tp %d does not divide kv_heads %d: "
                       "each tensor-parallel rank holds whole key/value "
                       "heads (use a tp that divides kv_heads)", tp, kv_heads);
    if (ffn < 1 || ffn % tp)
        return zb_fail(err, ZB_EINPUT, "tp %d does not divide the SwiGLU "
                       "width %d (its up matrices are split by columns)", tp,
                       ffn);
    out->heads = heads / tp;
    out->head0 = rank * out->heads;
    out->kv_heads = kv_heads / tp;
    out->kv_head0 = rank * out->kv_heads;
    out->ffn = ffn / tp;
    out->ffn0 = rank * out->ffn;
    return ZB_OK;
}

/* ---- vocabulary parallelism over the pipeline (ops.h, appended): fp32,
 * then the bf16 test hook's wrapper of the one entry that reads and
 * writes activations ---- */

static zb_status c_vocab_combine(void *ctx, double *out, const double *tab,
                                 int p, int N, zb_err *err) {
    zb_vocab_stats_combine(out, tab, p, N);
    return ZB_OK;
}
static zb_status c_vocab_exp(void *ctx, zb_act *P, const zb_act *zl,
                             const double *m, int N, int Vl, int ld,
                             zb_err *err) {
    zb_vocab_exp(F(P), CF(zl), m, N, Vl, ld);
    return ZB_OK;
}
static zb_status c_vocab_dx(void *ctx, float *dx, const float *A,
                            const float *G, const double *m, const double *MS,
                            float scale, int N, int C, zb_err *err) {
    zb_vocab_dx(dx, A, G, m, MS, scale, N, C);
    return ZB_OK;
}

static void cpu_vocab_ops(zb_ops *o) {
    o->vocab_combine = c_vocab_combine;
    o->vocab_exp = c_vocab_exp;
    o->vocab_dx = c_vocab_dx;
}

static zb_status b_vocab_exp(void *ctx, zb_act *P, const zb_act *zl,
                             const double *m, int N, int Vl, int ld,
                             zb_err *err) {
    bx *x = BX(ctx);
    size_t n = extent(N, Vl, ld, 1, 0);
    float *e, *z;
    W(0, P, n, e);
    W(1, zl, n, z);
    ZB_TRY(x->f32.vocab_exp(NULL, (zb_act *)e, (zb_act *)z, m, N, Vl, ld,
                            err));
    narrow(P, e, n);
    return ZB_OK;
}

static void bf16_vocab_ops(zb_ops *o) { o->vocab_exp = b_vocab_exp; }
