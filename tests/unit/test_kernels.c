/* test_kernels.c - the CPU kernels in kernels/ against independent
 * references.
 *
 * Every kernel's forward is compared with a double-precision reference
 * written here from the formula. Every backward is compared with central
 * finite differences of loss = sum(out * w) for random w, taken twice:
 *   - on the float kernel itself (eps 1e-3): loose tolerances, float noise;
 *   - on the double reference (eps 1e-6): tight tolerances that a wrong
 *     term or a wrong index cannot pass.
 * Plus: the += contract of every backward, BLAS against the plain loops,
 * attention causality, cross-entropy of uniform logits, AdamW by hand, and
 * bitwise equal results for 1, 2 and 3 OpenMP threads (OpenBLAS keeps
 * its own thread count: see kernels/matmul.c).
 */
#include <check.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/adamw.h"
#include "kernels/attention.h"
#include "kernels/crossentropy.h"
#include "kernels/embed.h"
#include "kernels/fastexp.h"
#include "kernels/gelu.h"
#include "kernels/layernorm.h"
#include "kernels/matmul.h"
#include "kernels/parallel.h"
#include "executor/stage/ops.h"
#include "tests/unit/test_rand.h"

/* ------------------------------------------------------------------ */
/* helpers                                                            */

static double *dbuf(size_t n) {
    double *p = calloc(n ? n : 1, sizeof *p);
    ck_assert_ptr_nonnull(p);
    return p;
}

static double *dcopy(const float *x, size_t n) {
    double *p = dbuf(n);
    for (size_t i = 0; i < n; i++) p[i] = x[i];
    return p;
}

static double wsum(const float *out, const float *w, size_t n) {
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += (double)out[i] * w[i];
    return s;
}

static double wsum_d(const double *out, const float *w, size_t n) {
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += out[i] * w[i];
    return s;
}

/* Check records every passing ck_assert, which is slow in loops over
 * thousands of elements: test first, call Check only to fail. */
static void assert_near(double got, double want, double rtol, double atol,
                        const char *what, size_t i) {
    if (!(fabs(got - want) <= atol + rtol * fabs(want)))
        ck_abort_msg("%s[%zu]: got %.9g, want %.9g", what, i, got, want);
}

/* ------------------------------------------------------------------ */
/* double references, written from the formulas                       */

/* out[N, OC] = inp[N, C] @ w[OC, C]^T + b[OC] (b may be NULL) */
static void ref_matmul(double *out, const double *inp, const double *w,
                       const double *b, int N, int C, int OC) {
    for (int n = 0; n < N; n++)
        for (int o = 0; o < OC; o++) {
            double s = b ? b[o] : 0.0;
            for (int c = 0; c < C; c++) s += inp[n * C + c] * w[o * C + c];
            out[n * OC + o] = s;
        }
}

static void ref_layernorm(double *out, double *mean, double *rstd,
                          const double *inp, const double *w, const double *b,
                          int N, int C) {
    for (int n = 0; n < N; n++) {
        const double *x = inp + n * C;
        double m = 0.0, var = 0.0;
        for (int c = 0; c < C; c++) m += x[c] / C;
        for (int c = 0; c < C; c++) var += (x[c] - m) * (x[c] - m) / C;
        double s = 1.0 / sqrt(var + 1e-5);
        for (int c = 0; c < C; c++) out[n * C + c] = (x[c] - m) * s * w[c] + b[c];
        if (mean) mean[n] = m;
        if (rstd) rstd[n] = s;
    }
}

/* qkv [B, T, 3C] -> out [B, T, C], att [B, NH, T, T] (may be NULL) */
static void ref_attention(double *out, double *att, const double *qkv, int B,
                          int T, int C, int NH) {
    int hs = C / NH;
    double p[64]; /* T <= 64 in these tests */
    ck_assert_int_le(T, 64);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++)
            for (int t = 0; t < T; t++) {
                const double *q = qkv + (b * T + t) * 3 * C + h * hs;
                double mx = -INFINITY, sum = 0.0;
                for (int u = 0; u <= t; u++) {
                    const double *k = qkv + (b * T + u) * 3 * C + C + h * hs;
                    double d = 0.0;
                    for (int i = 0; i < hs; i++) d += q[i] * k[i];
                    p[u] = d / sqrt((double)hs);
                    mx = fmax(mx, p[u]);
                }
                for (int u = 0; u <= t; u++) sum += (p[u] = exp(p[u] - mx));
                for (int i = 0; i < hs; i++) {
                    double o = 0.0;
                    for (int u = 0; u <= t; u++)
                        o += p[u] / sum * qkv[(b * T + u) * 3 * C + 2 * C + h * hs + i];
                    out[(b * T + t) * C + h * hs + i] = o;
                }
                if (!att) continue;
                for (int u = 0; u < T; u++)
                    att[((b * NH + h) * T + t) * T + u] = u <= t ? p[u] / sum : 0.0;
            }
}

static double ref_gelu(double x) {
    return 0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}

static void ref_embed(double *out, const int *tok, const double *wte,
                      const double *wpe, int B, int T, int C) {
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
            for (int c = 0; c < C; c++)
                out[(b * T + t) * C + c] =
                    wte[tok[b * T + t] * C + c] + wpe[t * C + c];
}

/* -log softmax(z)[target], straight from the definition */
static double ref_ce_row(const double *z, int V, int target) {
    double mx = -INFINITY, s = 0.0;
    for (int v = 0; v < V; v++) mx = fmax(mx, z[v]);
    for (int v = 0; v < V; v++) s += exp(z[v] - mx);
    return log(s) + mx - z[target];
}

/* ------------------------------------------------------------------ */
/* finite-difference harness                                          */

enum { FD_MAXIN = 3 };
#define FD_EPS_F 1e-3f
#define FD_EPS_D 1e-6
/* float FD is noisy (each loss carries ~1e-6 of rounding): loose */
#define FD_RTOL_F 2e-2
#define FD_ATOL_F 5e-3
/* double FD of the reference is exact to ~1e-9: tight */
#define FD_RTOL_D 1e-4
#define FD_ATOL_D 2e-5

typedef struct fd_ctx fd_ctx;
struct fd_ctx {
    int N, C, OC, B, T, NH, V; /* the dimensions a kernel uses */
    int nin;                   /* inputs with gradients */
    float *x[FD_MAXIN];
    double *xd[FD_MAXIN]; /* double copies for the reference */
    size_t xn[FD_MAXIN];
    float *out, *wts; /* [outn] kernel output, loss weights */
    double *outd;     /* [outn] reference output */
    size_t outn;
    float *aux1, *aux2; /* saved state: mean/rstd, att */
    int *tokens;        /* embed tokens, crossentropy targets */
    double (*loss_f)(fd_ctx *); /* runs the kernel, sum(out * wts) */
    double (*loss_d)(fd_ctx *); /* runs the reference, sum(outd * wts) */
};

/* Allocate inputs (random in [-scale, scale]), outputs and weights. */
static void fd_init(fd_ctx *c, int nin, const size_t *xn, size_t outn,
                    float scale) {
    c->nin = nin;
    for (int k = 0; k < nin; k++) {
        c->xn[k] = xn[k];
        c->x[k] = frandbuf(xn[k], scale);
        c->xd[k] = dcopy(c->x[k], xn[k]);
    }
    c->outn = outn;
    c->out = fbuf(outn);
    c->outd = dbuf(outn);
    c->wts = frandbuf(outn, 1.0f);
}

static void fd_free(fd_ctx *c) {
    for (int k = 0; k < c->nin; k++) {
        free(c->x[k]);
        free(c->xd[k]);
    }
    free(c->out);
    free(c->outd);
    free(c->wts);
    free(c->aux1);
    free(c->aux2);
    free(c->tokens);
}

/* The kernel's forward against the reference, element by element. */
static void fd_check_forward(fd_ctx *c, double rtol, double atol,
                             const char *what) {
    c->loss_f(c);
    c->loss_d(c);
    for (size_t i = 0; i < c->outn; i++)
        assert_near(c->out[i], c->outd[i], rtol, atol, what, i);
}

static double fd_float(fd_ctx *c, int k, size_t i) {
    float x0 = c->x[k][i], xp = x0 + FD_EPS_F, xm = x0 - FD_EPS_F;
    c->x[k][i] = xp;
    double lp = c->loss_f(c);
    c->x[k][i] = xm;
    double lm = c->loss_f(c);
    c->x[k][i] = x0;
    return (lp - lm) / ((double)xp - (double)xm);
}

static double fd_double(fd_ctx *c, int k, size_t i) {
    double x0 = c->xd[k][i];
    c->xd[k][i] = x0 + FD_EPS_D;
    double lp = c->loss_d(c);
    c->xd[k][i] = x0 - FD_EPS_D;
    double lm = c->loss_d(c);
    c->xd[k][i] = x0;
    return (lp - lm) / (2 * FD_EPS_D);
}

/* grad[k] is the analytic gradient of the loss w.r.t. input k. */
static void fd_check_grads(fd_ctx *c, float **grad, const char *name) {
    char what[64];
    for (int k = 0; k < c->nin; k++) {
        snprintf(what, sizeof what, "%s d(input %d) vs float FD", name, k);
        for (size_t i = 0; i < c->xn[k]; i++)
            assert_near(grad[k][i], fd_float(c, k, i), FD_RTOL_F, FD_ATOL_F,
                        what, i);
        snprintf(what, sizeof what, "%s d(input %d) vs double FD", name, k);
        for (size_t i = 0; i < c->xn[k]; i++)
            assert_near(grad[k][i], fd_double(c, k, i), FD_RTOL_D, FD_ATOL_D,
                        what, i);
    }
}

/* Accumulate contract: a backward run on a buffer holding init must give
 * init + (the same backward run on zeros). */
static void check_accumulates(const float *init, const float *from_zero,
                              const float *from_init, size_t n,
                              const char *what) {
    for (size_t i = 0; i < n; i++)
        assert_near(from_init[i], (double)init[i] + from_zero[i], 1e-6, 1e-6,
                    what, i);
}

/* ------------------------------------------------------------------ */
/* matmul                                                             */

static double mm_loss_f(fd_ctx *c) {
    zb_matmul_forward(c->out, c->x[0], c->x[1], c->x[2], c->N, c->C, c->OC);
    return wsum(c->out, c->wts, c->outn);
}

static double mm_loss_d(fd_ctx *c) {
    ref_matmul(c->outd, c->xd[0], c->xd[1], c->xd[2], c->N, c->C, c->OC);
    return wsum_d(c->outd, c->wts, c->outn);
}

static void mm_setup(fd_ctx *c, int N, int C, int OC) {
    *c = (fd_ctx){.N = N, .C = C, .OC = OC};
    size_t xn[3] = {(size_t)N * C, (size_t)OC * C, (size_t)OC};
    fd_init(c, 3, xn, (size_t)N * OC, 1.0f);
    c->loss_f = mm_loss_f;
    c->loss_d = mm_loss_d;
}

/* BLAS forward and the plain-loop reference against exact double sums. */
static void check_matmul_forward(int N, int C, int OC, int with_bias) {
    fd_ctx c;
    mm_setup(&c, N, C, OC);
    const float *bias = with_bias ? c.x[2] : NULL;
    float *ref = fbuf(c.outn);
    zb_matmul_forward(c.out, c.x[0], c.x[1], bias, N, C, OC);
    zb_matmul_forward_ref(ref, c.x[0], c.x[1], bias, N, C, OC);
    ref_matmul(c.outd, c.xd[0], c.xd[1], with_bias ? c.xd[2] : NULL, N, C, OC);
    /* float dot products of C terms of size <= 1: error <~ C * 2^-24 */
    double atol = 1e-6 * (C + 1);
    for (size_t i = 0; i < c.outn; i++) {
        assert_near(c.out[i], c.outd[i], 0, atol, "blas forward", i);
        assert_near(ref[i], c.outd[i], 0, atol, "ref forward", i);
    }
    free(ref);
    fd_free(&c);
}

START_TEST(test_matmul_forward_shapes) {
    static const int shapes[][3] = {{1, 1, 1},     {7, 13, 5},   {3, 64, 192},
                                    {33, 65, 257}, {128, 64, 256}};
    seed(11);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int bias = 0; bias <= 1; bias++)
            check_matmul_forward(shapes[s][0], shapes[s][1], shapes[s][2], bias);
}
END_TEST

/* Both backward halves against double loops, on nonzero buffers (+=). */
START_TEST(test_matmul_backward_vs_loops) {
    const int N = 17, C = 23, OC = 70; /* OC spans two dbias blocks */
    seed(12);
    float *inp = frandbuf((size_t)N * C, 1), *w = frandbuf((size_t)OC * C, 1);
    float *dout = frandbuf((size_t)N * OC, 1);
    float *dinp = frandbuf((size_t)N * C, 1), *dw = frandbuf((size_t)OC * C, 1);
    float *db = frandbuf((size_t)OC, 1);
    float *dinp0 = fdup(dinp, (size_t)N * C), *dw0 = fdup(dw, (size_t)OC * C);
    float *db0 = fdup(db, OC);
    zb_matmul_backward_input(dinp, dout, w, N, C, OC);
    zb_matmul_backward_weight(dw, db, dout, inp, N, C, OC);
    for (int n = 0; n < N; n++)
        for (int c = 0; c < C; c++) {
            double s = dinp0[n * C + c];
            for (int o = 0; o < OC; o++) s += (double)dout[n * OC + o] * w[o * C + c];
            assert_near(dinp[n * C + c], s, 0, 2e-6 * OC, "dinp", n * C + c);
        }
    for (int o = 0; o < OC; o++) {
        double sb = db0[o];
        for (int n = 0; n < N; n++) sb += dout[n * OC + o];
        assert_near(db[o], sb, 0, 2e-6 * N, "dbias", o);
        for (int c = 0; c < C; c++) {
            double s = dw0[o * C + c];
            for (int n = 0; n < N; n++) s += (double)dout[n * OC + o] * inp[n * C + c];
            assert_near(dw[o * C + c], s, 0, 2e-6 * N, "dweight", o * C + c);
        }
    }
    /* NULL dbias leaves the weight gradient as it was computed above */
    float *dw2 = fdup(dw0, (size_t)OC * C);
    zb_matmul_backward_weight(dw2, NULL, dout, inp, N, C, OC);
    ck_assert_mem_eq(dw2, dw, (size_t)OC * C * sizeof(float));
    free(inp), free(w), free(dout), free(dinp), free(dw), free(db);
    free(dinp0), free(dw0), free(db0), free(dw2);
}
END_TEST

START_TEST(test_matmul_grad_fd) {
    fd_ctx c;
    seed(13);
    mm_setup(&c, 3, 5, 4);
    float *dinp = fbuf(c.xn[0]), *dw = fbuf(c.xn[1]), *db = fbuf(c.xn[2]);
    zb_matmul_backward_input(dinp, c.wts, c.x[1], c.N, c.C, c.OC);
    zb_matmul_backward_weight(dw, db, c.wts, c.x[0], c.N, c.C, c.OC);
    float *g[3] = {dinp, dw, db};
    fd_check_grads(&c, g, "matmul");
    free(dinp), free(dw), free(db);
    fd_free(&c);
}
END_TEST

/* ------------------------------------------------------------------ */
/* layernorm                                                          */

static double ln_loss_f(fd_ctx *c) {
    zb_layernorm_forward(c->out, c->aux1, c->aux2, c->x[0], c->x[1], c->x[2],
                         c->N, c->C);
    return wsum(c->out, c->wts, c->outn);
}

static double ln_loss_d(fd_ctx *c) {
    ref_layernorm(c->outd, NULL, NULL, c->xd[0], c->xd[1], c->xd[2], c->N, c->C);
    return wsum_d(c->outd, c->wts, c->outn);
}

static void ln_setup(fd_ctx *c, int N, int C) {
    *c = (fd_ctx){.N = N, .C = C};
    size_t xn[3] = {(size_t)N * C, (size_t)C, (size_t)C};
    fd_init(c, 3, xn, (size_t)N * C, 1.0f);
    for (int i = 0; i < N * C; i++) c->xd[0][i] = c->x[0][i] += 0.5f * (i % C);
    c->aux1 = fbuf(N); /* mean */
    c->aux2 = fbuf(N); /* rstd */
    c->loss_f = ln_loss_f;
    c->loss_d = ln_loss_d;
}

START_TEST(test_layernorm_forward) {
    fd_ctx c;
    seed(21);
    ln_setup(&c, 9, 70);
    fd_check_forward(&c, 1e-5, 1e-5, "layernorm out");
    double *mean = dbuf(c.N), *rstd = dbuf(c.N);
    ref_layernorm(c.outd, mean, rstd, c.xd[0], c.xd[1], c.xd[2], c.N, c.C);
    for (int n = 0; n < c.N; n++) {
        assert_near(c.aux1[n], mean[n], 1e-6, 1e-6, "mean", n);
        assert_near(c.aux2[n], rstd[n], 1e-6, 0, "rstd", n);
    }
    free(mean), free(rstd);
    fd_free(&c);
}
END_TEST

START_TEST(test_layernorm_grad_fd) {
    fd_ctx c;
    seed(22);
    ln_setup(&c, 4, 8);
    float *dinp = fbuf(c.xn[0]), *dw = fbuf(c.xn[1]), *db = fbuf(c.xn[2]);
    c.loss_f(&c); /* fills mean, rstd */
    zb_layernorm_backward_input(dinp, c.wts, c.x[0], c.x[1], c.aux1, c.aux2,
                                c.N, c.C);
    zb_layernorm_backward_weight(dw, db, c.wts, c.x[0], c.aux1, c.aux2, c.N,
                                 c.C);
    float *g[3] = {dinp, dw, db};
    fd_check_grads(&c, g, "layernorm");
    free(dinp), free(dw), free(db);
    fd_free(&c);
}
END_TEST

START_TEST(test_layernorm_accumulates) {
    fd_ctx c;
    seed(23);
    ln_setup(&c, 6, 130); /* three column blocks in the W pass */
    c.loss_f(&c);
    size_t nx = c.xn[0], nc = c.C;
    float *init_x = frandbuf(nx, 1), *init_w = frandbuf(nc, 1);
    float *init_b = frandbuf(nc, 1);
    float *x0 = fbuf(nx), *w0 = fbuf(nc), *b0 = fbuf(nc);
    float *x1 = fdup(init_x, nx), *w1 = fdup(init_w, nc), *b1 = fdup(init_b, nc);
    for (int pass = 0; pass < 2; pass++) {
        float *dx = pass ? x1 : x0, *dw = pass ? w1 : w0, *db = pass ? b1 : b0;
        zb_layernorm_backward_input(dx, c.wts, c.x[0], c.x[1], c.aux1, c.aux2,
                                    c.N, c.C);
        zb_layernorm_backward_weight(dw, db, c.wts, c.x[0], c.aux1, c.aux2,
                                     c.N, c.C);
    }
    check_accumulates(init_x, x0, x1, nx, "ln dinp +=");
    check_accumulates(init_w, w0, w1, nc, "ln dweight +=");
    check_accumulates(init_b, b0, b1, nc, "ln dbias +=");
    free(init_x), free(init_w), free(init_b), free(x0), free(w0), free(b0);
    free(x1), free(w1), free(b1);
    fd_free(&c);
}
END_TEST

/* ------------------------------------------------------------------ */
/* attention                                                          */

static double att_loss_f(fd_ctx *c) {
    zb_attention_forward(c->out, c->aux1, c->x[0], c->B, c->T, c->C, c->NH);
    return wsum(c->out, c->wts, c->outn);
}

static double att_loss_d(fd_ctx *c) {
    ref_attention(c->outd, NULL, c->xd[0], c->B, c->T, c->C, c->NH);
    return wsum_d(c->outd, c->wts, c->outn);
}

static void att_setup(fd_ctx *c, int B, int T, int C, int NH, float scale) {
    *c = (fd_ctx){.B = B, .T = T, .C = C, .NH = NH};
    size_t xn[1] = {(size_t)B * T * 3 * C};
    fd_init(c, 1, xn, (size_t)B * T * C, scale);
    c->aux1 = fbuf((size_t)B * NH * T * T); /* att */
    c->loss_f = att_loss_f;
    c->loss_d = att_loss_d;
}

START_TEST(test_attention_forward) {
    fd_ctx c;
    seed(31);
    att_setup(&c, 2, 9, 16, 4, 2.0f);
    memset(c.aux1, 0xff, (size_t)c.B * c.NH * c.T * c.T * sizeof(float)); /* NaN */
    fd_check_forward(&c, 1e-5, 1e-5, "attention out");
    size_t na = (size_t)c.B * c.NH * c.T * c.T;
    double *att = dbuf(na);
    ref_attention(c.outd, att, c.xd[0], c.B, c.T, c.C, c.NH);
    for (size_t i = 0; i < na; i++) {
        assert_near(c.aux1[i], att[i], 1e-5, 1e-6, "att", i);
        if (att[i] == 0.0 && c.aux1[i] != 0.0f)
            ck_abort_msg("att[%zu] above the diagonal is not 0", i);
    }
    free(att);
    fd_free(&c);
}
END_TEST

START_TEST(test_attention_grad_fd) {
    fd_ctx c;
    seed(32);
    att_setup(&c, 2, 4, 8, 2, 1.0f);
    float *dqkv = fbuf(c.xn[0]);
    float *datt = fbuf((size_t)c.B * c.NH * c.T * c.T); /* scratch */
    c.loss_f(&c);
    zb_attention_backward(dqkv, datt, c.wts, c.x[0], c.aux1, c.B, c.T, c.C, c.NH);
    float *g[1] = {dqkv};
    fd_check_grads(&c, g, "attention");
    /* += on a nonzero buffer */
    float *init = frandbuf(c.xn[0], 1), *acc = fdup(init, c.xn[0]);
    zb_attention_backward(acc, datt, c.wts, c.x[0], c.aux1, c.B, c.T, c.C, c.NH);
    check_accumulates(init, dqkv, acc, c.xn[0], "attention dqkv +=");
    free(dqkv), free(datt), free(init), free(acc);
    fd_free(&c);
}
END_TEST

/* Changing k and v of position t0 leaves outputs before t0 untouched, and
 * an upstream gradient on positions < t0 sends nothing to positions >= t0. */
START_TEST(test_attention_causal) {
    const int B = 2, T = 8, C = 16, NH = 2, t0 = 5;
    seed(33);
    size_t nqkv = (size_t)B * T * 3 * C, nout = (size_t)B * T * C;
    float *qkv = frandbuf(nqkv, 1), *att = fbuf((size_t)B * NH * T * T);
    float *out1 = fbuf(nout), *out2 = fbuf(nout);
    zb_attention_forward(out1, att, qkv, B, T, C, NH);
    for (int b = 0; b < B; b++)
        for (int i = C; i < 3 * C; i++) qkv[((size_t)b * T + t0) * 3 * C + i] += 0.5f;
    zb_attention_forward(out2, att, qkv, B, T, C, NH);
    size_t before = (size_t)t0 * C; /* outputs of positions 0..t0-1 */
    for (int b = 0; b < B; b++) {
        size_t row = (size_t)b * T * C;
        ck_assert_mem_eq(out1 + row, out2 + row, before * sizeof(float));
        ck_assert_msg(memcmp(out1 + row + before, out2 + row + before,
                             C * sizeof(float)) != 0, "output at t0 unchanged");
    }
    float *dout = fbuf(nout), *dqkv = fbuf(nqkv), *datt = fbuf((size_t)B * NH * T * T);
    for (int b = 0; b < B; b++)
        for (size_t i = 0; i < before; i++) dout[b * T * C + i] = frand();
    zb_attention_backward(dqkv, datt, dout, qkv, att, B, T, C, NH);
    for (int b = 0; b < B; b++)
        for (int t = t0; t < T; t++)
            for (int i = 0; i < 3 * C; i++)
                if (dqkv[((size_t)b * T + t) * 3 * C + i] != 0.0f)
                    ck_abort_msg("gradient leaked to future position %d", t);
    free(qkv), free(att), free(out1), free(out2), free(dout), free(dqkv), free(datt);
}
END_TEST

/* ------------------------------------------------------------------ */
/* gelu                                                               */

static double gelu_loss_f(fd_ctx *c) {
    zb_gelu_forward(c->out, c->x[0], c->outn);
    return wsum(c->out, c->wts, c->outn);
}

static double gelu_loss_d(fd_ctx *c) {
    for (size_t i = 0; i < c->outn; i++) c->outd[i] = ref_gelu(c->xd[0][i]);
    return wsum_d(c->outd, c->wts, c->outn);
}

static void gelu_setup(fd_ctx *c, size_t n) {
    *c = (fd_ctx){0};
    fd_init(c, 1, &n, n, 4.0f);
    c->loss_f = gelu_loss_f;
    c->loss_d = gelu_loss_d;
}

/* The vectorised expf inside GELU (kernels/fastexp.h) at its edges: huge
 * inputs either side, infinities, NaN staying NaN; and its accuracy over
 * a sweep against the double-precision formula. */
START_TEST(test_gelu_extremes) {
    float x[7] = {-200.0f, 200.0f, -INFINITY, 1e30f, NAN, -88.5f, 88.5f}, y[7];
    zb_gelu_forward(y, x, 7);
    ck_assert(fabsf(y[0]) < 1e-30f);
    ck_assert_float_eq(y[1], 200.0f);
    ck_assert(y[2] == 0.0f || isnan(y[2]) || fabsf(y[2]) < 1e-30f || isinf(y[2]));
    ck_assert_float_eq(y[3], 1e30f);
    ck_assert(isnan(y[4]));
    ck_assert(fabsf(y[5]) < 1e-30f);
    ck_assert_float_eq(y[6], 88.5f);
    enum { N = 4001 };
    static float xs[N], ys[N];
    for (int i = 0; i < N; i++) xs[i] = -10.0f + 20.0f * (float)i / (N - 1);
    zb_gelu_forward(ys, xs, N);
    for (int i = 0; i < N; i++) {
        double ref = ref_gelu(xs[i]);
        ck_assert_msg(fabs(ys[i] - ref) <= 1e-6 * (1 + fabs(ref)), "gelu(%g) = %g, want %g",
                      xs[i], ys[i], ref);
    }
}
END_TEST

/* GELU's vector clones (AVX-512, AVX2 or baseline, whichever this CPU
 * picks) give bitwise the scalar formula, element by element. */
static float gelu_scalar_gate(volatile float x) {
    float u = 0.7978845608028654f * (x + 0.044715f * x * x * x);
    return 1.0f / (1.0f + zb_fast_expf(-2.0f * u));
}

START_TEST(test_gelu_vector_equals_scalar) {
    enum { N = 10007 };
    static float x[N], d[N], y[N], g[N];
    seed(43);
    for (int i = 0; i < N; i++) {
        x[i] = 20.0f * (frand() - 0.5f);
        d[i] = frand() - 0.5f;
        g[i] = 0.0f;
    }
    zb_gelu_forward(y, x, N);
    zb_gelu_backward(g, x, d, N);
    for (int i = 0; i < N; i++) {
        float s = gelu_scalar_gate(x[i]);
        float du = 0.7978845608028654f * (1.0f + 3.0f * 0.044715f * x[i] * x[i]);
        float want_y = x[i] * s;
        float want_g = 0.0f + (s + 2.0f * x[i] * s * (1.0f - s) * du) * d[i];
        ck_assert_msg(memcmp(&y[i], &want_y, sizeof y[i]) == 0, "gelu(%a) = %a, scalar %a",
                      x[i], y[i], want_y);
        ck_assert_msg(memcmp(&g[i], &want_g, sizeof g[i]) == 0, "gelu'(%a): %a, scalar %a",
                      x[i], g[i], want_g);
    }
}
END_TEST

START_TEST(test_gelu) {
    fd_ctx c;
    seed(41);
    gelu_setup(&c, 257);
    fd_check_forward(&c, 1e-6, 1e-6, "gelu");
    float *din = fbuf(c.outn);
    zb_gelu_backward(din, c.x[0], c.wts, c.outn);
    float *g[1] = {din};
    fd_check_grads(&c, g, "gelu");
    float *init = frandbuf(c.outn, 1), *acc = fdup(init, c.outn);
    zb_gelu_backward(acc, c.x[0], c.wts, c.outn);
    check_accumulates(init, din, acc, c.outn, "gelu dinp +=");
    /* known values: gelu(0) = 0, ~x far right, ~0 far left */
    float x[3] = {0.0f, 10.0f, -10.0f}, y[3];
    zb_gelu_forward(y, x, 3);
    ck_assert_float_eq(y[0], 0.0f);
    ck_assert_float_eq_tol(y[1], 10.0f, 1e-6f);
    ck_assert_float_eq_tol(y[2], 0.0f, 1e-6f);
    free(din), free(init), free(acc);
    fd_free(&c);
}
END_TEST

/* ------------------------------------------------------------------ */
/* embedding                                                          */

static double emb_loss_f(fd_ctx *c) {
    zb_embed_forward(c->out, c->tokens, c->x[0], c->x[1], c->B, c->T, c->C);
    return wsum(c->out, c->wts, c->outn);
}

static double emb_loss_d(fd_ctx *c) {
    ref_embed(c->outd, c->tokens, c->xd[0], c->xd[1], c->B, c->T, c->C);
    return wsum_d(c->outd, c->wts, c->outn);
}

/* maxT = T + 2: the rows of wpe past T must get no gradient */
static void emb_setup(fd_ctx *c, int B, int T, int C, int V) {
    *c = (fd_ctx){.B = B, .T = T, .C = C, .V = V};
    size_t xn[2] = {(size_t)V * C, (size_t)(T + 2) * C};
    fd_init(c, 2, xn, (size_t)B * T * C, 1.0f);
    c->tokens = calloc((size_t)B * T, sizeof(int));
    ck_assert_ptr_nonnull(c->tokens);
    for (int i = 0; i < B * T; i++) c->tokens[i] = (i * 7 + i / 3) % V;
    c->loss_f = emb_loss_f;
    c->loss_d = emb_loss_d;
}

START_TEST(test_embed) {
    fd_ctx c;
    seed(51);
    emb_setup(&c, 2, 5, 6, 4); /* 10 positions, 4 tokens: repeats */
    fd_check_forward(&c, 0, 1e-6, "embed");
    float *dwte = fbuf(c.xn[0]), *dwpe = fbuf(c.xn[1]);
    zb_embed_backward(dwte, dwpe, c.wts, c.tokens, c.B, c.T, c.C);
    float *g[2] = {dwte, dwpe};
    fd_check_grads(&c, g, "embed");
    float *ite = frandbuf(c.xn[0], 1), *ipe = frandbuf(c.xn[1], 1);
    float *ate = fdup(ite, c.xn[0]), *ape = fdup(ipe, c.xn[1]);
    zb_embed_backward(ate, ape, c.wts, c.tokens, c.B, c.T, c.C);
    check_accumulates(ite, dwte, ate, c.xn[0], "dwte +=");
    check_accumulates(ipe, dwpe, ape, c.xn[1], "dwpe +=");
    free(dwte), free(dwpe), free(ite), free(ipe), free(ate), free(ape);
    fd_free(&c);
}
END_TEST

/* ------------------------------------------------------------------ */
/* cross-entropy                                                      */

static double ce_loss_f(fd_ctx *c) {
    double sum = zb_crossentropy_forward(c->out, c->x[0], c->tokens, c->N, c->V);
    ck_assert_double_eq_tol(sum, wsum(c->out, c->wts, c->outn) / c->wts[0],
                            1e-9 * (1 + fabs(sum)));
    return wsum(c->out, c->wts, c->outn);
}

static double ce_loss_d(fd_ctx *c) {
    for (int n = 0; n < c->N; n++)
        c->outd[n] = ref_ce_row(c->xd[0] + (size_t)n * c->V, c->V, c->tokens[n]);
    return wsum_d(c->outd, c->wts, c->outn);
}

/* The backward only knows one scale for all rows: wts[n] = scale. */
static void ce_setup(fd_ctx *c, int N, int V, float scale) {
    *c = (fd_ctx){.N = N, .V = V};
    size_t xn[1] = {(size_t)N * V};
    fd_init(c, 1, xn, (size_t)N, 3.0f);
    for (int n = 0; n < N; n++) c->wts[n] = scale;
    c->tokens = calloc((size_t)N, sizeof(int));
    ck_assert_ptr_nonnull(c->tokens);
    for (int n = 0; n < N; n++) c->tokens[n] = (n * 5 + 2) % V;
    c->loss_f = ce_loss_f;
    c->loss_d = ce_loss_d;
}

START_TEST(test_crossentropy) {
    fd_ctx c;
    seed(61);
    ce_setup(&c, 5, 7, 0.2f);
    fd_check_forward(&c, 1e-6, 1e-6, "ce loss");
    float *dz = fbuf(c.xn[0]);
    zb_crossentropy_backward(dz, c.x[0], c.tokens, c.wts[0], c.N, c.V);
    float *g[1] = {dz};
    fd_check_grads(&c, g, "crossentropy");
    /* the backward writes, it does not accumulate: NaN garbage is replaced */
    float *dz2 = fbuf(c.xn[0]);
    memset(dz2, 0xff, c.xn[0] * sizeof(float));
    zb_crossentropy_backward(dz2, c.x[0], c.tokens, c.wts[0], c.N, c.V);
    ck_assert_mem_eq(dz, dz2, c.xn[0] * sizeof(float));
    free(dz), free(dz2);
    fd_free(&c);
}
END_TEST

/* Uniform logits: every class has probability 1/V, loss log(V); a huge
 * common offset must not overflow. */
START_TEST(test_crossentropy_uniform) {
    const int N = 3, V = 50257;
    float *z = fbuf((size_t)N * V), *loss = fbuf(N);
    int tgt[3] = {0, 123, V - 1};
    for (int i = 0; i < N * V; i++) z[i] = i < V ? 0.0f : (i < 2 * V ? 3.5f : 1e4f);
    double sum = zb_crossentropy_forward(loss, z, tgt, N, V);
    for (int n = 0; n < N; n++) assert_near(loss[n], log(V), 1e-6, 0, "loss", n);
    assert_near(sum, N * log(V), 1e-6, 0, "sum", 0);
    float *dz = fbuf((size_t)N * V);
    zb_crossentropy_backward(dz, z, tgt, 1.0f, N, V);
    for (int n = 0; n < N; n++) {
        assert_near(dz[n * V + (tgt[n] + 1) % V], 1.0 / V, 1e-5, 0, "p", n);
        assert_near(dz[n * V + tgt[n]], 1.0 / V - 1.0, 1e-6, 0, "p-1", n);
    }
    free(z), free(loss), free(dz);
}
END_TEST

/* Vocabulary-parallel cross-entropy: the logits split into k shards of
 * ceil(V/k) columns (the last ones short or empty), the statistics combined
 * by hand as the TP all-reduces would, against the unsharded kernels. */
static void ce_shard_case(int N, int V, int k, float scale) {
    float *z = frandbuf((size_t)N * V, 4.0f), *loss = fbuf(N), *dz = fbuf((size_t)N * V);
    int *tgt = calloc((size_t)N, sizeof(int));
    ck_assert_ptr_nonnull(tgt);
    for (int n = 0; n < N; n++) tgt[n] = (n * 7 + 3) % V;
    double want = zb_crossentropy_forward(loss, z, tgt, N, V);
    zb_crossentropy_backward(dz, z, tgt, scale, N, V);
    int Vl = (V + k - 1) / k;
    double *M = calloc((size_t)N, sizeof(double)), *S = calloc((size_t)N, sizeof(double)),
           *Zt = calloc((size_t)N, sizeof(double)), *t1 = calloc((size_t)N, sizeof(double)),
           *t2 = calloc((size_t)N, sizeof(double));
    float *zl = fbuf((size_t)N * Vl), *dzl = fbuf((size_t)N * Vl), *ls = fbuf(N);
    ck_assert(M && S && Zt && t1 && t2);
    for (int n = 0; n < N; n++) M[n] = -INFINITY;
    for (int r = 0; r < k; r++) { /* the max "all-reduce" */
        int v0 = r * Vl, nv = V - v0 < Vl ? (V - v0 > 0 ? V - v0 : 0) : Vl;
        for (int n = 0; n < N; n++) memcpy(zl + (size_t)n * nv, z + (size_t)n * V + v0, nv * sizeof(float));
        zb_ce_shard_max(t1, zl, N, nv);
        for (int n = 0; n < N; n++) M[n] = fmax(M[n], t1[n]);
    }
    for (int r = 0; r < k; r++) { /* the sum all-reduce */
        int v0 = r * Vl, nv = V - v0 < Vl ? (V - v0 > 0 ? V - v0 : 0) : Vl;
        for (int n = 0; n < N; n++) memcpy(zl + (size_t)n * nv, z + (size_t)n * V + v0, nv * sizeof(float));
        zb_ce_shard_stats(t1, t2, zl, M, tgt, v0, N, nv);
        for (int n = 0; n < N; n++) S[n] += t1[n], Zt[n] += t2[n];
    }
    double got = zb_ce_shard_loss(ls, M, S, Zt, N);
    assert_near(got, want, 1e-6, 0, "sharded loss sum", k);
    for (int n = 0; n < N; n++) assert_near(ls[n], loss[n], 1e-5, 1e-6, "sharded loss", n);
    for (int r = 0; r < k; r++) {
        int v0 = r * Vl, nv = V - v0 < Vl ? (V - v0 > 0 ? V - v0 : 0) : Vl;
        for (int n = 0; n < N; n++) memcpy(zl + (size_t)n * nv, z + (size_t)n * V + v0, nv * sizeof(float));
        zb_ce_shard_backward(dzl, zl, M, S, tgt, v0, scale, N, nv);
        for (int n = 0; n < N; n++)
            for (int v = 0; v < nv; v++)
                assert_near(dzl[(size_t)n * nv + v], dz[(size_t)n * V + v0 + v], 1e-5,
                            1e-7 * scale, "sharded dlogits", v0 + v);
    }
    if (k == 1) { /* one shard: the same arithmetic, bitwise */
        ck_assert(got == want);
        ck_assert_mem_eq(dzl, dz, (size_t)N * V * sizeof(float));
    }
    free(z), free(loss), free(dz), free(tgt), free(M), free(S), free(Zt);
    free(t1), free(t2), free(zl), free(dzl), free(ls);
}

/* The CPU op table's fused cross-entropy (tp 1) against the pieces in the
 * stage's order (ce_max, ce_max_combine, ce_stats, ce_loss, ce_bwd) on
 * rows of stride ld: losses, dlogits and the loss sum bit for bit, the
 * padding of dlogits untouched. */
static void ce_fused_case(int N, int V, int ld, float scale) {
    zb_ops o;
    zb_ops_cpu(&o);
    zb_err err = {0};
    float *z = frandbuf((size_t)N * ld, 6.0f), *l1 = fbuf(N), *l2 = fbuf(N);
    float *d1 = fbuf((size_t)N * ld), *d2 = fbuf((size_t)N * ld);
    int *tgt = calloc((size_t)N, sizeof(int));
    double *st = calloc(3 * (size_t)N, sizeof(double));
    ck_assert(tgt && st);
    for (int n = 0; n < N; n++) tgt[n] = (n * 11 + 5) % V;
    tgt[N - 1] = V - 1;
    for (size_t i = 0; i < (size_t)N * ld; i++) d1[i] = d2[i] = -7.0f;
    double a1 = 0.5, a2 = 0.5, *M = st, *S = st + N, *Zt = st + 2 * N;
    zb_act *za = (zb_act *)z, *d1a = (zb_act *)d1, *d2a = (zb_act *)d2;
    ck_assert_int_eq(o.ce_max(o.ctx, M, za, N, V, ld, &err), ZB_OK);
    ck_assert_int_eq(o.ce_max_combine(o.ctx, M, 1, N, &err), ZB_OK);
    ck_assert_int_eq(o.ce_stats(o.ctx, S, Zt, za, M, tgt, 0, N, V, ld, &err), ZB_OK);
    ck_assert_int_eq(o.ce_loss(o.ctx, &a1, l1, M, S, Zt, N, &err), ZB_OK);
    ck_assert_int_eq(o.ce_bwd(o.ctx, d1a, za, M, S, tgt, 0, scale, N, V, ld, &err), ZB_OK);
    ck_assert_int_eq(o.ce_fused(o.ctx, &a2, l2, d2a, za, tgt, scale, N, V, ld, &err), ZB_OK);
    ck_assert(a1 == a2 && (V == 1 || a1 != 0.5)); /* V 1: loss 0 */
    ck_assert_mem_eq(l1, l2, (size_t)N * sizeof(float));
    ck_assert_mem_eq(d1, d2, (size_t)N * ld * sizeof(float));
    for (int n = 0; n < N; n++)
        for (int v = V; v < ld; v++) ck_assert(d2[(size_t)n * ld + v] == -7.0f);
    free(z), free(l1), free(l2), free(d1), free(d2), free(tgt), free(st);
}

START_TEST(test_crossentropy_fused) {
    seed(71);
    ce_fused_case(1, 1, 1, 1.0f);
    ce_fused_case(7, 13, 13, 0.3f);
    ce_fused_case(7, 13, 16, 0.3f);        /* padded stride */
    ce_fused_case(33, 301, 384, 1.0f / 33); /* odd V, stride of 128 */
    ce_fused_case(64, 2051, 2051, 0.125f);  /* rows split over threads */
}
END_TEST

START_TEST(test_crossentropy_sharded) {
    seed(67);
    ce_shard_case(6, 13, 1, 0.3f);
    ce_shard_case(6, 13, 2, 0.3f);  /* 7 + 6 */
    ce_shard_case(6, 13, 4, 0.3f);  /* 4 + 4 + 4 + 1 */
    ce_shard_case(3, 5, 4, 1.0f);   /* 2 + 2 + 1 + 0: an empty shard */
    ce_shard_case(4, 1000, 8, 0.01f);
}
END_TEST

/* Vocabulary-parallel embedding: the token parts summed over shards plus
 * the position part equal zb_embed_forward bitwise; the shard backwards
 * together equal zb_embed_backward. */
START_TEST(test_embed_sharded) {
    seed(71);
    const int B = 2, T = 5, C = 6, V = 11, N = B * T, k = 3, Vl = 4;
    float *wte = frandbuf((size_t)V * C, 1), *wpe = frandbuf((size_t)T * C, 1);
    float *dout = frandbuf((size_t)N * C, 1);
    int tok[10];
    for (int i = 0; i < N; i++) tok[i] = (i * 7 + 1) % V;
    float *ref = fbuf((size_t)N * C), *sum = fbuf((size_t)N * C), *part = fbuf((size_t)N * C);
    zb_embed_forward(ref, tok, wte, wpe, B, T, C);
    float *dwte = fbuf((size_t)V * C), *dwpe = fbuf((size_t)T * C);
    zb_embed_backward(dwte, dwpe, dout, tok, B, T, C);
    float *dwtel = fbuf((size_t)Vl * C);
    for (int r = 0; r < k; r++) {
        int v0 = r * Vl, nv = V - v0 < Vl ? V - v0 : Vl;
        zb_embed_tokens_shard(part, tok, wte + (size_t)v0 * C, v0, nv, N, C);
        for (int i = 0; i < N * C; i++) sum[i] += part[i];
        memset(dwtel, 0, (size_t)Vl * C * sizeof(float));
        zb_embed_tokens_shard_backward(dwtel, dout, tok, v0, nv, N, C);
        ck_assert_mem_eq(dwtel, dwte + (size_t)v0 * C, (size_t)nv * C * sizeof(float));
    }
    zb_embed_add_pos(sum, wpe, B, T, C);
    ck_assert_mem_eq(sum, ref, (size_t)N * C * sizeof(float));
    float *dwpe2 = fbuf((size_t)T * C);
    zb_embed_pos_backward(dwpe2, dout, B, T, C);
    ck_assert_mem_eq(dwpe2, dwpe, (size_t)T * C * sizeof(float));
    free(wte), free(wpe), free(dout), free(ref), free(sum), free(part);
    free(dwte), free(dwpe), free(dwtel), free(dwpe2);
}
END_TEST

/* ------------------------------------------------------------------ */
/* AdamW and sum of squares                                           */

/* One step by hand: p = 1, grad 0.5 * scale 2 = 1, m = v = 0, t = 1:
 * m = 0.1, v = 0.001, mhat = 1, vhat = 1,
 * p = 1 - 0.1 * (1 / (1 + 1e-8) + 0.01 * 1) = 0.899 */
START_TEST(test_adamw_one_step) {
    float p[2] = {1.0f, -2.0f}, g[2] = {0.5f, -0.25f}, m[2] = {0}, v[2] = {0};
    zb_adamw_update(p, g, m, v, 2, 0.1f, 0.9f, 0.999f, 1e-8f, 0.01f, 2.0f, 1);
    ck_assert_float_eq_tol(m[0], 0.1f, 1e-7f);
    ck_assert_float_eq_tol(v[0], 0.001f, 2e-8f); /* 1 - 0.999f is inexact */
    ck_assert_float_eq_tol(p[0], 0.899f, 1e-6f);
    /* g = -0.5: m = -0.05, v = 0.00025, mhat = -0.5, vhat = 0.25,
     * p = -2 - 0.1 * (-0.5 / 0.5 + 0.01 * -2) = -2 + 0.1 * 1.02 = -1.898 */
    ck_assert_float_eq_tol(m[1], -0.05f, 1e-7f);
    ck_assert_float_eq_tol(v[1], 0.00025f, 5e-9f);
    ck_assert_float_eq_tol(p[1], -1.898f, 1e-6f);
}
END_TEST

/* With a constant gradient g, bias correction makes mhat = g and
 * vhat = g^2 at every step, so each step moves p by lr * sign(g). */
START_TEST(test_adamw_constant_gradient) {
    float p[3] = {0.5f, 0.5f, 0.5f}, g[3] = {3.0f, -0.01f, 1e-3f};
    float m[3] = {0}, v[3] = {0};
    for (int t = 1; t <= 5; t++)
        zb_adamw_update(p, g, m, v, 3, 0.01f, 0.9f, 0.95f, 1e-12f, 0.0f, 1.0f, t);
    ck_assert_float_eq_tol(p[0], 0.45f, 2e-6f);
    ck_assert_float_eq_tol(p[1], 0.55f, 2e-6f);
    ck_assert_float_eq_tol(p[2], 0.45f, 2e-6f);
}
END_TEST

/* Decoupled decay: with zero gradients p shrinks by (1 - lr * wd) per step
 * and m, v stay zero; without decay nothing moves. grad_scale multiplies
 * the gradient before anything else. */
START_TEST(test_adamw_weight_decay_and_scale) {
    float p[2] = {2.0f, -4.0f}, g[2] = {0}, m[2] = {0}, v[2] = {0};
    zb_adamw_update(p, g, m, v, 2, 0.1f, 0.9f, 0.999f, 1e-8f, 0.5f, 1.0f, 1);
    zb_adamw_update(p, g, m, v, 2, 0.1f, 0.9f, 0.999f, 1e-8f, 0.5f, 1.0f, 2);
    ck_assert_float_eq_tol(p[0], 2.0f * 0.95f * 0.95f, 1e-6f);
    ck_assert_float_eq_tol(p[1], -4.0f * 0.95f * 0.95f, 1e-6f);
    ck_assert_float_eq(m[0], 0.0f);
    ck_assert_float_eq(v[1], 0.0f);
    zb_adamw_update(p, g, m, v, 2, 0.1f, 0.9f, 0.999f, 1e-8f, 0.0f, 1.0f, 3);
    ck_assert_float_eq_tol(p[0], 2.0f * 0.95f * 0.95f, 1e-6f);

    float pa[1] = {1}, ga[1] = {4}, ma[1] = {0}, va[1] = {0};
    float pb[1] = {1}, gb[1] = {1}, mb[1] = {0}, vb[1] = {0};
    zb_adamw_update(pa, ga, ma, va, 1, 0.1f, 0.9f, 0.999f, 1e-8f, 0.01f, 0.25f, 1);
    zb_adamw_update(pb, gb, mb, vb, 1, 0.1f, 0.9f, 0.999f, 1e-8f, 0.01f, 1.0f, 1);
    ck_assert_float_eq(pa[0], pb[0]);
    ck_assert_float_eq(ma[0], mb[0]);
    ck_assert_float_eq(va[0], vb[0]);
}
END_TEST

START_TEST(test_sumsq) {
    float x[3] = {1.0f, -2.0f, 3.0f};
    ck_assert_double_eq(zb_sumsq(x, 3), 14.0);
    ck_assert_double_eq(zb_sumsq(x, 0), 0.0);
    const size_t n = 100003; /* not a multiple of the chunk count */
    seed(71);
    float *y = frandbuf(n, 1);
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += (double)y[i] * y[i];
    ck_assert_double_eq_tol(zb_sumsq(y, n), s, 1e-12 * s);
    free(y);
}
END_TEST

/* ------------------------------------------------------------------ */
/* determinism across thread counts                                   */

typedef struct {
    float *buf;
    size_t len, cap;
} sink;

static void sink_add(sink *s, const float *x, size_t n) {
    if (s->len + n > s->cap) {
        size_t cap = 2 * (s->len + n);
        float *p = realloc(s->buf, cap * sizeof *p);
        ck_assert_ptr_nonnull(p);
        s->buf = p;
        s->cap = cap;
    }
    memcpy(s->buf + s->len, x, n * sizeof *x);
    s->len += n;
}

/* Shapes are above ZB_OMP_MIN_WORK (kernels/parallel.h) so that every
 * kernel really runs as a team; column counts span several blocks. */
/* A double goes in bit for bit, as two floats' worth of bytes. */
static void sink_add_double(sink *s, double x) {
    float f[2];
    memcpy(f, &x, sizeof f);
    sink_add(s, f, 2);
}

static void run_matmul_ln(sink *s) {
    const int N = 67, C = 260, OC = 300;
    float *inp = frandbuf((size_t)N * C, 1), *w = frandbuf((size_t)OC * C, 1);
    float *b = frandbuf(OC, 1), *out = fbuf((size_t)N * OC);
    float *dinp = fbuf((size_t)N * C), *dw = fbuf((size_t)OC * C), *db = fbuf(OC);
    zb_matmul_forward(out, inp, w, b, N, C, OC);
    zb_matmul_backward_input(dinp, out, w, N, C, OC);
    zb_matmul_backward_weight(dw, db, out, inp, N, C, OC);
    sink_add(s, out, (size_t)N * OC), sink_add(s, dinp, (size_t)N * C);
    sink_add(s, dw, (size_t)OC * C), sink_add(s, db, OC);
    float *lo = fbuf((size_t)N * C), *mean = fbuf(N), *rstd = fbuf(N);
    float *lw = fbuf(C), *lb = fbuf(C);
    zb_layernorm_forward(lo, mean, rstd, inp, w, b, N, C);
    zb_layernorm_backward_input(dinp, lo, inp, w, mean, rstd, N, C);
    zb_layernorm_backward_weight(lw, lb, lo, inp, mean, rstd, N, C);
    sink_add(s, lo, (size_t)N * C), sink_add(s, dinp, (size_t)N * C);
    sink_add(s, lw, C), sink_add(s, lb, C);
    free(inp), free(w), free(b), free(out), free(dinp), free(dw), free(db);
    free(lo), free(mean), free(rstd), free(lw), free(lb);
}

static void run_attention_gelu(sink *s) {
    const int B = 2, T = 32, C = 96, NH = 4;
    size_t nq = (size_t)B * T * 3 * C, no = (size_t)B * T * C;
    float *qkv = frandbuf(nq, 1), *att = fbuf((size_t)B * NH * T * T);
    float *out = fbuf(no), *dqkv = fbuf(nq), *datt = fbuf((size_t)B * NH * T * T);
    zb_attention_forward(out, att, qkv, B, T, C, NH);
    zb_attention_backward(dqkv, datt, out, qkv, att, B, T, C, NH);
    sink_add(s, out, no), sink_add(s, dqkv, nq);
    float *g = fbuf(nq), *dg = fbuf(nq);
    zb_gelu_forward(g, qkv, nq);
    zb_gelu_backward(dg, qkv, dqkv, nq);
    sink_add(s, g, nq), sink_add(s, dg, nq);
    ck_assert(nq >= ZB_OMP_MIN_WORK);
    free(qkv), free(att), free(out), free(dqkv), free(datt), free(g), free(dg);
}

static void run_embed_ce_adamw(sink *s) {
    const int B = 3, T = 16, C = 400, V = 500, N = B * T;
    int tok[3 * 16];
    for (int i = 0; i < N; i++) tok[i] = (i * i) % 11;
    float *wte = frandbuf((size_t)V * C, 1), *wpe = frandbuf((size_t)T * C, 1);
    float *out = fbuf((size_t)N * C), *dte = fbuf((size_t)V * C);
    float *dpe = fbuf((size_t)T * C);
    zb_embed_forward(out, tok, wte, wpe, B, T, C);
    zb_embed_backward(dte, dpe, out, tok, B, T, C);
    sink_add(s, out, (size_t)N * C), sink_add(s, dte, (size_t)V * C);
    sink_add(s, dpe, (size_t)T * C);
    float *z = frandbuf((size_t)N * V, 5), *loss = fbuf(N), *dz = fbuf((size_t)N * V);
    double sum = zb_crossentropy_forward(loss, z, tok, N, V);
    zb_crossentropy_backward(dz, z, tok, 1.0f / N, N, V);
    sink_add(s, loss, N), sink_add_double(s, sum), sink_add(s, dz, (size_t)N * V);
    size_t n = (size_t)V * C;
    float *m = fbuf(n), *v = fbuf(n);
    zb_adamw_update(wte, dte, m, v, n, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 0.5f, 1);
    sink_add(s, wte, n), sink_add(s, m, n), sink_add(s, v, n);
    sink_add_double(s, zb_sumsq(wte, n));
    free(wte), free(wpe), free(out), free(dte), free(dpe), free(z), free(loss);
    free(dz), free(m), free(v);
}

static sink run_all(int nthreads) {
    sink s = {0};
    omp_set_dynamic(0);
    omp_set_num_threads(nthreads);
    seed(81);
    run_matmul_ln(&s);
    run_attention_gelu(&s);
    run_embed_ce_adamw(&s);
    return s;
}

START_TEST(test_deterministic_across_threads) {
    sink one = run_all(1);
    for (int nt = 2; nt <= 3; nt++) {
        sink other = run_all(nt);
        ck_assert_uint_eq(one.len, other.len);
        ck_assert_msg(memcmp(one.buf, other.buf, one.len * sizeof(float)) == 0,
                      "results with %d threads differ from 1 thread", nt);
        free(other.buf);
    }
    free(one.buf);
}
END_TEST

/* ------------------------------------------------------------------ */

static Suite *kernels_suite(void) {
    Suite *s = suite_create("kernels");
    TCase *tc = tcase_create("cpu");
    tcase_set_timeout(tc, 120); /* generous for valgrind */
    tcase_add_test(tc, test_matmul_forward_shapes);
    tcase_add_test(tc, test_matmul_backward_vs_loops);
    tcase_add_test(tc, test_matmul_grad_fd);
    tcase_add_test(tc, test_layernorm_forward);
    tcase_add_test(tc, test_layernorm_grad_fd);
    tcase_add_test(tc, test_layernorm_accumulates);
    tcase_add_test(tc, test_attention_forward);
    tcase_add_test(tc, test_attention_grad_fd);
    tcase_add_test(tc, test_attention_causal);
    tcase_add_test(tc, test_gelu);
    tcase_add_test(tc, test_gelu_extremes);
    tcase_add_test(tc, test_gelu_vector_equals_scalar);
    tcase_add_test(tc, test_embed);
    tcase_add_test(tc, test_crossentropy);
    tcase_add_test(tc, test_crossentropy_uniform);
    tcase_add_test(tc, test_crossentropy_sharded);
    tcase_add_test(tc, test_crossentropy_fused);
    tcase_add_test(tc, test_embed_sharded);
    tcase_add_test(tc, test_adamw_one_step);
    tcase_add_test(tc, test_adamw_constant_gradient);
    tcase_add_test(tc, test_adamw_weight_decay_and_scale);
    tcase_add_test(tc, test_sumsq);
    tcase_add_test(tc, test_deterministic_across_threads);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    SRunner *sr = srunner_create(kernels_suite());
    srunner_run_all(sr, CK_ENV); /* CK_VERBOSITY, default normal */
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
