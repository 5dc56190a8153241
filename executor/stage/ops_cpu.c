/* ops_cpu.c - the op table (ops.h) on the host: kernels/ and OpenBLAS,
 * every op synchronous (done when it returns). Backend memory is host
 * memory; the arena is one zeroed, 256-byte aligned allocation. The ops
 * are the very kernel calls the CPU stage always made, so its results are
 * bit for bit those of before the op table. */
#include "executor/stage/ops.h"

#include <stdlib.h>
#include <string.h>

#include "kernels/adamw.h"
#include "kernels/attention.h"
#include "kernels/crossentropy.h"
#include "kernels/embed.h"
#include "kernels/gelu.h"
#include "kernels/layernorm.h"
#include "kernels/matmul.h"

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
    for (int b = 0; b < g->batch; b++) {
        float *C = g->C + b * g->sc, beta = g->beta;
        if (g->bias) {
            for (int r = 0; r < g->M; r++)
                memcpy(C + (size_t)r * g->ldc, g->bias, (size_t)g->N * sizeof *C);
            beta = 1.0f;
        }
        zb_sgemm_blocked(g->ta, g->tb, g->M, g->N, g->K, g->alpha,
                         g->A + b * g->sa, g->lda, g->B + b * g->sb, g->ldb,
                         beta, C, g->ldc);
        if (g->gelu_out)
            zb_gelu_forward(g->gelu_out + b * g->sc, C, (size_t)g->M * g->N);
    }
    return ZB_OK;
}

static zb_status c_colsum_add(void *ctx, float *dbias, const float *dout,
                              int N, int OC, zb_err *err) {
    zb_colsum_add(dbias, dout, N, OC);
    return ZB_OK;
}

/* Elements below which a loop runs on one thread. */
#define ZB_OMP_MIN_ELEMS (1 << 16)

static zb_status c_residual_add(void *ctx, float *out, const float *x,
                                const float *part, const float *bias, int N,
                                int C, zb_err *err) {
#pragma omp parallel for schedule(static) if ((size_t)N * C >= ZB_OMP_MIN_ELEMS)
    for (int n = 0; n < N; n++)
        for (int c = 0; c < C; c++) {
            size_t i = (size_t)n * C + c;
            out[i] = x[i] + (part[i] + bias[c]);
        }
    return ZB_OK;
}

static zb_status c_gelu_bwd(void *ctx, float *dinp, const float *inp,
                            const float *dout, size_t n, zb_err *err) {
    zb_gelu_backward(dinp, inp, dout, n);
    return ZB_OK;
}

static zb_status c_ln_fwd(void *ctx, float *out, float *mean, float *rstd,
                          const float *inp, const float *w, const float *b,
                          int N, int C, zb_err *err) {
    zb_layernorm_forward(out, mean, rstd, inp, w, b, N, C);
    return ZB_OK;
}
static zb_status c_ln_bwd_input(void *ctx, float *dinp, const float *dout,
                                const float *inp, const float *w,
                                const float *mean, const float *rstd, int N,
                                int C, zb_err *err) {
    zb_layernorm_backward_input(dinp, dout, inp, w, mean, rstd, N, C);
    return ZB_OK;
}
static zb_status c_ln_bwd_weight(void *ctx, float *dw, float *db,
                                 const float *dout, const float *inp,
                                 const float *mean, const float *rstd, int N,
                                 int C, zb_err *err) {
    zb_layernorm_backward_weight(dw, db, dout, inp, mean, rstd, N, C);
    return ZB_OK;
}

/* the CPU attention keeps the softmax [B, NH, T, T]; its backward the
 * same size of scratch */
static size_t c_attn_full(void *ctx, int B, int NH, int T) {
    return (size_t)B * NH * T * T;
}
static zb_status c_attn_fwd(void *ctx, float *out, float *saved,
                            const float *qkv, int B, int T, int C, int NH,
                            zb_err *err) {
    zb_attention_forward(out, saved, qkv, B, T, C, NH);
    return ZB_OK;
}
static zb_status c_attn_bwd(void *ctx, float *dqkv, float *scratch,
                            const float *dout, const float *qkv,
                            const float *out, const float *saved, int B,
                            int T, int C, int NH, zb_err *err) {
    memset(dqkv, 0, (size_t)B * T * 3 * C * sizeof *dqkv);
    zb_attention_backward(dqkv, scratch, dout, qkv, saved, B, T, C, NH);
    return ZB_OK;
}

static zb_status c_embed_tokens(void *ctx, float *out, const int *tokens,
                                const float *wtel, int v0, int nv, int N,
                                int C, zb_err *err) {
    zb_embed_tokens_shard(out, tokens, wtel, v0, nv, N, C);
    return ZB_OK;
}
static zb_status c_embed_add_pos(void *ctx, float *out, const float *wpe,
                                 int B, int T, int C, zb_err *err) {
    zb_embed_add_pos(out, wpe, B, T, C);
    return ZB_OK;
}
static zb_status c_embed_tokens_bwd(void *ctx, float *dwtel, const float *dout,
                                    const int *tokens, int v0, int nv, int N,
                                    int C, zb_err *err) {
    zb_embed_tokens_shard_backward(dwtel, dout, tokens, v0, nv, N, C);
    return ZB_OK;
}
static zb_status c_embed_pos_bwd(void *ctx, float *dwpe, const float *dout,
                                 int B, int T, int C, zb_err *err) {
    zb_embed_pos_backward(dwpe, dout, B, T, C);
    return ZB_OK;
}

/* The kernels take contiguous rows; a padded stride goes row by row (each
 * row is computed alone either way, so the results are the same). */
static zb_status c_ce_max(void *ctx, double *rowmax, const float *zl, int N,
                          int Vl, int ld, zb_err *err) {
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
static zb_status c_ce_stats(void *ctx, double *S, double *Zt, const float *zl,
                            const double *M, const int *targets, int v0,
                            int N, int Vl, int ld, zb_err *err) {
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
static zb_status c_ce_bwd(void *ctx, float *dzl, const float *zl,
                          const double *M, const double *S, const int *targets,
                          int v0, float scale, int N, int Vl, int ld,
                          zb_err *err) {
    if (ld == Vl) zb_ce_shard_backward(dzl, zl, M, S, targets, v0, scale, N, Vl);
    else
        for (int n = 0; n < N; n++)
            zb_ce_shard_backward(dzl + (size_t)n * ld, zl + (size_t)n * ld,
                                 M + n, S + n, targets + n, v0, scale, 1, Vl);
    return ZB_OK;
}

static zb_status c_ce_fused(void *ctx, double *acc, float *losses,
                            float *dzl, const float *zl, const int *targets,
                            float scale, int N, int V, int ld, zb_err *err) {
    *acc += zb_ce_fused(losses, dzl, zl, targets, scale, N, V, ld);
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

void zb_ops_cpu(zb_ops *o) {
    *o = (zb_ops){
        .name = "cpu", .ctx = NULL, .stream = NULL,
        .logits_align = logits_align(),
        .alloc = c_alloc, .release = c_release, .to_host = c_copy,
        .from_host = c_copy, .copy = c_copy, .memset0 = c_memset0,
        .gemm = c_gemm, .colsum_add = c_colsum_add,
        .residual_add = c_residual_add, .gelu_bwd = c_gelu_bwd,
        .ln_fwd = c_ln_fwd, .ln_bwd_input = c_ln_bwd_input,
        .ln_bwd_weight = c_ln_bwd_weight,
        .attn_saved_floats = c_attn_full, .attn_scratch_floats = c_attn_full,
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
}
