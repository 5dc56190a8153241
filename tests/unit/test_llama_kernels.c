/* test_llama_kernels.c - the Llama-shaped CPU kernels (kernels/rmsnorm.c,
 * swiglu.c, rope.c, GQA in attention.c) against independent references.
 *
 * - Forward: each kernel, fast path and reference, against a double
 *   reference written here from the formula.
 * - Backward: each analytic gradient (the float kernel's) against central
 *   finite differences of loss = sum(out * w), random w, taken on the
 *   double reference with eps 1e-6. Its truncation error is ~eps^2 and its
 *   rounding ~1e-16 / eps = 1e-10, so what is left is the float kernel's
 *   own rounding: a few ulp of sums of at most ~100 terms of size ~1, below
 *   1e-5 relative. Tolerance: |g - fd| <= 2e-5 + 1e-4 |fd|.
 * - The harness can fail: a plausible wrong gradient for each op (a term
 *   left out, the turn the wrong way, one query head of a group only) is
 *   fed to the same check and must be rejected.
 * - Fast path against reference, the += contract, bitwise equal results
 *   for 1, 2 and 3 OpenMP threads, GQA against multi-head attention on K
 *   and V heads copied G times.
 */
#include <check.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/attention.h"
#include "kernels/rmsnorm.h"
#include "kernels/rope.h"
#include "kernels/swiglu.h"
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

/* Elements of got that differ from want by more than atol + rtol |want|;
 * the first one is described in *first (for the failure message). */
static size_t mismatches(const float *got, const double *want, size_t n,
                         double rtol, double atol, char *first, size_t cap) {
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        if (!(fabs(got[i] - want[i]) <= atol + rtol * fabs(want[i])) && !bad++)
            snprintf(first, cap, "[%zu]: got %.9g, want %.9g", i, got[i],
                     want[i]);
    return bad;
}

static void assert_close(const float *got, const double *want, size_t n,
                         double rtol, double atol, const char *what) {
    char first[128] = "";
    size_t bad = mismatches(got, want, n, rtol, atol, first, sizeof first);
    ck_assert_msg(bad == 0, "%s: %zu of %zu differ, first %s", what, bad, n,
                  first);
}

static void assert_close_f(const float *got, const float *want, size_t n,
                           double rtol, double atol, const char *what) {
    double *w = dcopy(want, n);
    assert_close(got, w, n, rtol, atol, what);
    free(w);
}

/* ------------------------------------------------------------------ */
/* finite differences on a double reference                           */

#define FD_EPS 1e-6
#define FD_RTOL 1e-4
#define FD_ATOL 2e-5

/* A reference forward: out[outn] from the inputs xd[0..nin) (shape in
 * the problem); the loss is sum(out * wts). */
typedef struct fd_prob fd_prob;
struct fd_prob {
    int nin;
    double *xd[2];
    size_t xn[2];
    size_t outn;
    double *out;
    const float *wts;
    void (*ref)(const fd_prob *p); /* fills out from xd */
    int B, T, C, NH, KVH, N, F, H, hs, ld;
    double theta;
};

static double fd_loss(const fd_prob *p) {
    p->ref(p);
    double s = 0.0;
    for (size_t i = 0; i < p->outn; i++) s += p->out[i] * p->wts[i];
    return s;
}

/* d loss / d xd[k][i] for every i, by central differences */
static double *fd_grad(fd_prob *p, int k) {
    double *g = dbuf(p->xn[k]);
    for (size_t i = 0; i < p->xn[k]; i++) {
        double x0 = p->xd[k][i];
        p->xd[k][i] = x0 + FD_EPS;
        double lp = fd_loss(p);
        p->xd[k][i] = x0 - FD_EPS;
        double lm = fd_loss(p);
        p->xd[k][i] = x0;
        g[i] = (lp - lm) / (2 * FD_EPS);
    }
    return g;
}

/* Mismatches of the analytic gradient of input k against the FD one. */
static size_t fd_bad(fd_prob *p, int k, const float *grad, char *first,
                     size_t cap) {
    double *g = fd_grad(p, k);
    size_t bad = mismatches(grad, g, p->xn[k], FD_RTOL, FD_ATOL, first, cap);
    free(g);
    return bad;
}

static void fd_assert(fd_prob *p, int k, const float *grad, const char *what) {
    char first[128] = "";
    size_t bad = fd_bad(p, k, grad, first, sizeof first);
    ck_assert_msg(bad == 0, "%s vs finite differences: %zu of %zu differ, "
                  "first %s", what, bad, p->xn[k], first);
}

/* The check must reject a wrong gradient (shows that the tolerance is
 * tight enough to catch the mistake named). */
static void fd_assert_rejects(fd_prob *p, int k, const float *wrong,
                              const char *mistake) {
    char first[128] = "";
    ck_assert_msg(fd_bad(p, k, wrong, first, sizeof first) > 0,
                  "the finite-difference check accepted %s", mistake);
}

static void fd_free(fd_prob *p) {
    for (int k = 0; k < p->nin; k++) free(p->xd[k]);
    free(p->out);
}

/* ------------------------------------------------------------------ */
/* double references, written from the formulas                       */

/* out = x / sqrt(mean(x^2) + 1e-5) * w; xd[0] = x [N, C], xd[1] = w [C] */
static void ref_rmsnorm(const fd_prob *p) {
    int N = p->N, C = p->C;
    for (int n = 0; n < N; n++) {
        const double *x = p->xd[0] + (size_t)n * C;
        double ms = 0.0;
        for (int c = 0; c < C; c++) ms += x[c] * x[c] / C;
        for (int c = 0; c < C; c++)
            p->out[(size_t)n * C + c] = x[c] / sqrt(ms + 1e-5) * p->xd[1][c];
    }
}

/* out = a / (1 + e^-a) * b; xd[0] = ab [N, 2F] */
static void ref_swiglu(const fd_prob *p) {
    int N = p->N, F = p->F;
    for (int n = 0; n < N; n++)
        for (int f = 0; f < F; f++) {
            double a = p->xd[0][(size_t)n * 2 * F + f];
            double b = p->xd[0][(size_t)n * 2 * F + F + f];
            p->out[(size_t)n * F + f] = a / (1.0 + exp(-a)) * b;
        }
}

/* out = x with each pair (2i, 2i+1) of the first H heads of each row
 * turned by t theta^(-2i/hs); xd[0] = x [B, T, ld] */
static void ref_rope(const fd_prob *p) {
    memcpy(p->out, p->xd[0], p->outn * sizeof *p->out);
    for (int b = 0; b < p->B; b++)
        for (int t = 0; t < p->T; t++)
            for (int h = 0; h < p->H; h++)
                for (int i = 0; i < p->hs / 2; i++) {
                    size_t j = ((size_t)b * p->T + t) * p->ld + h * p->hs + 2 * i;
                    double ang = t * pow(p->theta, -2.0 * i / p->hs);
                    double x0 = p->xd[0][j], x1 = p->xd[0][j + 1];
                    p->out[j] = x0 * cos(ang) - x1 * sin(ang);
                    p->out[j + 1] = x0 * sin(ang) + x1 * cos(ang);
                }
}

/* causal GQA: xd[0] = qkv [B, T, C + 2 KVH hs] -> out [B, T, C]; query
 * head h reads kv head h / (NH / KVH) */
static void ref_gqa(const fd_prob *p) {
    int B = p->B, T = p->T, C = p->C, NH = p->NH, KVH = p->KVH;
    int hs = C / NH, kvc = KVH * hs, ld = C + 2 * kvc, G = NH / KVH;
    double s[64];
    ck_assert_int_le(T, 64);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++)
            for (int t = 0; t < T; t++) {
                const double *q = p->xd[0] + ((size_t)b * T + t) * ld + h * hs;
                double mx = -INFINITY, sum = 0.0;
                for (int u = 0; u <= t; u++) {
                    const double *k = p->xd[0] + ((size_t)b * T + u) * ld + C +
                                      (h / G) * hs;
                    double d = 0.0;
                    for (int i = 0; i < hs; i++) d += q[i] * k[i];
                    s[u] = d / sqrt((double)hs);
                    mx = fmax(mx, s[u]);
                }
                for (int u = 0; u <= t; u++) sum += (s[u] = exp(s[u] - mx));
                for (int i = 0; i < hs; i++) {
                    double o = 0.0;
                    for (int u = 0; u <= t; u++)
                        o += s[u] / sum *
                             p->xd[0][((size_t)b * T + u) * ld + C + kvc +
                                      (h / G) * hs + i];
                    p->out[((size_t)b * T + t) * C + h * hs + i] = o;
                }
            }
}

static void prob_init(fd_prob *p, int nin, const float *const *x,
                      const size_t *xn, size_t outn, const float *wts,
                      void (*ref)(const fd_prob *)) {
    p->nin = nin;
    for (int k = 0; k < nin; k++) {
        p->xn[k] = xn[k];
        p->xd[k] = dcopy(x[k], xn[k]);
    }
    p->outn = outn;
    p->out = dbuf(outn);
    p->wts = wts;
    p->ref = ref;
}

/* ------------------------------------------------------------------ */
/* RMSNorm                                                            */

START_TEST(test_rmsnorm_forward) {
    const int N = 7, C = 70; /* two column blocks in W, one odd */
    seed(101);
    float *x = frandbuf((size_t)N * C, 2.0f), *w = frandbuf(C, 1.0f);
    float *wts = frandbuf((size_t)N * C, 1.0f);
    float *y = fbuf((size_t)N * C), *yr = fbuf((size_t)N * C);
    float *r = fbuf(N), *rr = fbuf(N);
    zb_rmsnorm_forward(y, r, x, w, N, C);
    zb_rmsnorm_forward_ref(yr, rr, x, w, N, C);
    fd_prob p = {.N = N, .C = C};
    const float *in[2] = {x, w};
    size_t xn[2] = {(size_t)N * C, (size_t)C};
    prob_init(&p, 2, in, xn, (size_t)N * C, wts, ref_rmsnorm);
    p.ref(&p);
    /* float out = x * rstd * w: three roundings and rstd's own */
    assert_close(y, p.out, p.outn, 1e-6, 1e-7, "rmsnorm out");
    assert_close(yr, p.out, p.outn, 1e-6, 1e-7, "rmsnorm ref out");
    for (int n = 0; n < N; n++) {
        double ms = 0.0;
        for (int c = 0; c < C; c++) ms += (double)x[n * C + c] * x[n * C + c] / C;
        ck_assert_msg(fabs(r[n] - 1.0 / sqrt(ms + 1e-5)) <= 1e-6 * r[n],
                      "rstd[%d] = %g", n, r[n]);
    }
    ck_assert_mem_eq(r, rr, N * sizeof *r);
    fd_free(&p);
    free(x), free(w), free(wts), free(y), free(yr), free(r), free(rr);
}
END_TEST

START_TEST(test_rmsnorm_grad_fd) {
    const int N = 4, C = 9;
    seed(102);
    float *x = frandbuf((size_t)N * C, 1.5f), *w = frandbuf(C, 1.0f);
    float *dy = frandbuf((size_t)N * C, 1.0f);
    float *y = fbuf((size_t)N * C), *r = fbuf(N);
    float *dx = fbuf((size_t)N * C), *dw = fbuf(C);
    zb_rmsnorm_forward(y, r, x, w, N, C);
    zb_rmsnorm_backward_input(dx, dy, x, w, r, N, C);
    zb_rmsnorm_backward_weight(dw, dy, x, r, N, C);
    fd_prob p = {.N = N, .C = C};
    const float *in[2] = {x, w};
    size_t xn[2] = {(size_t)N * C, (size_t)C};
    prob_init(&p, 2, in, xn, (size_t)N * C, dy, ref_rmsnorm);
    fd_assert(&p, 0, dx, "rmsnorm dinp");
    fd_assert(&p, 1, dw, "rmsnorm dweight");
    /* the reference backward too */
    float *dxr = fbuf((size_t)N * C), *dwr = fbuf(C);
    zb_rmsnorm_backward_input_ref(dxr, dy, x, w, r, N, C);
    zb_rmsnorm_backward_weight_ref(dwr, dy, x, r, N, C);
    fd_assert(&p, 0, dxr, "rmsnorm ref dinp");
    fd_assert(&p, 1, dwr, "rmsnorm ref dweight");
    /* wrong: dx = rstd * g, the normalisation's own term left out */
    float *bad = fbuf((size_t)N * C);
    for (int n = 0; n < N; n++)
        for (int c = 0; c < C; c++)
            bad[n * C + c] = r[n] * dy[n * C + c] * w[c];
    fd_assert_rejects(&p, 0, bad, "dx without the -xhat mean(g xhat) term");
    fd_free(&p);
    free(x), free(w), free(dy), free(y), free(r), free(dx), free(dw);
    free(dxr), free(dwr), free(bad);
}
END_TEST

/* fast path against reference on a size that runs the OpenMP team, and
 * the += contract: a backward on init gives init + the one on zeros */
START_TEST(test_rmsnorm_fast_vs_ref) {
    const int N = 300, C = 130;
    size_t nx = (size_t)N * C;
    seed(103);
    float *x = frandbuf(nx, 3.0f), *w = frandbuf(C, 1.0f);
    float *dy = frandbuf(nx, 1.0f), *r = fbuf(N), *rr = fbuf(N);
    float *y = fbuf(nx), *yr = fbuf(nx);
    zb_rmsnorm_forward(y, r, x, w, N, C);
    zb_rmsnorm_forward_ref(yr, rr, x, w, N, C);
    ck_assert_mem_eq(y, yr, nx * sizeof *y);
    float *init = frandbuf(nx, 1.0f), *dx = fdup(init, nx), *dxr = fbuf(nx);
    float *initw = frandbuf(C, 1.0f), *dw = fdup(initw, C), *dwr = fbuf(C);
    zb_rmsnorm_backward_input(dx, dy, x, w, r, N, C);
    zb_rmsnorm_backward_input_ref(dxr, dy, x, w, r, N, C);
    zb_rmsnorm_backward_weight(dw, dy, x, r, N, C);
    zb_rmsnorm_backward_weight_ref(dwr, dy, x, r, N, C);
    for (size_t i = 0; i < nx; i++) dxr[i] += init[i];
    for (int c = 0; c < C; c++) dwr[c] += initw[c];
    /* the reference sums in double, the fast path per element in float:
     * rounding of ~C terms of size ~1 (dx) and N terms (dw) */
    assert_close_f(dx, dxr, nx, 1e-5, 1e-5, "rmsnorm dinp += fast vs ref");
    assert_close_f(dw, dwr, C, 1e-5, 1e-4, "rmsnorm dweight += fast vs ref");
    free(x), free(w), free(dy), free(r), free(rr), free(y), free(yr);
    free(init), free(dx), free(dxr), free(initw), free(dw), free(dwr);
}
END_TEST

/* ------------------------------------------------------------------ */
/* SwiGLU                                                             */

START_TEST(test_swiglu_forward) {
    const int N = 5, F = 37;
    seed(201);
    float *ab = frandbuf((size_t)N * 2 * F, 6.0f), *wts = fbuf((size_t)N * F);
    ab[0] = -100.0f, ab[1] = 100.0f, ab[2] = 0.0f; /* the tails and 0 */
    float *y = fbuf((size_t)N * F), *yr = fbuf((size_t)N * F);
    zb_swiglu_forward(y, ab, N, F);
    zb_swiglu_forward_ref(yr, ab, N, F);
    fd_prob p = {.N = N, .F = F};
    const float *in[1] = {ab};
    size_t xn[1] = {(size_t)N * 2 * F};
    prob_init(&p, 1, in, xn, (size_t)N * F, wts, ref_swiglu);
    p.ref(&p);
    /* zb_fast_expf is within ~2e-7 of exp, libm's expf within an ulp;
     * then three float operations */
    assert_close(y, p.out, p.outn, 2e-6, 1e-7, "swiglu out");
    assert_close(yr, p.out, p.outn, 2e-6, 1e-7, "swiglu ref out");
    fd_free(&p);
    free(ab), free(wts), free(y), free(yr);
}
END_TEST

START_TEST(test_swiglu_grad_fd) {
    const int N = 3, F = 11;
    seed(202);
    size_t nab = (size_t)N * 2 * F, ny = (size_t)N * F;
    float *ab = frandbuf(nab, 4.0f), *dy = frandbuf(ny, 1.0f);
    float *dab = fbuf(nab), *dabr = fbuf(nab);
    zb_swiglu_backward(dab, ab, dy, N, F);
    zb_swiglu_backward_ref(dabr, ab, dy, N, F);
    fd_prob p = {.N = N, .F = F};
    const float *in[1] = {ab};
    prob_init(&p, 1, in, &nab, ny, dy, ref_swiglu);
    fd_assert(&p, 0, dab, "swiglu dab");
    fd_assert(&p, 0, dabr, "swiglu ref dab");
    /* wrong: silu'(a) taken as sigmoid(a) (the a s (1 - s) term left out) */
    float *bad = fdup(dab, nab);
    for (int n = 0; n < N; n++)
        for (int f = 0; f < F; f++) {
            float a = ab[n * 2 * F + f], b = ab[n * 2 * F + F + f];
            bad[n * 2 * F + f] = dy[n * F + f] * b / (1.0f + expf(-a));
        }
    fd_assert_rejects(&p, 0, bad, "silu'(a) = sigmoid(a)");
    fd_free(&p);
    free(ab), free(dy), free(dab), free(dabr), free(bad);
}
END_TEST

START_TEST(test_swiglu_fast_vs_ref) {
    const int N = 200, F = 100; /* over ZB_OMP_MIN_WORK: the team runs */
    size_t nab = (size_t)N * 2 * F, ny = (size_t)N * F;
    seed(203);
    float *ab = frandbuf(nab, 8.0f), *dy = frandbuf(ny, 1.0f);
    float *y = fbuf(ny), *yr = fbuf(ny);
    zb_swiglu_forward(y, ab, N, F);
    zb_swiglu_forward_ref(yr, ab, N, F);
    /* fast exp against libm's: ~2e-7 relative, a few roundings after */
    assert_close_f(y, yr, ny, 2e-6, 1e-7, "swiglu fast vs ref out");
    float *init = frandbuf(nab, 1.0f), *dab = fdup(init, nab), *dabr = fbuf(nab);
    zb_swiglu_backward(dab, ab, dy, N, F);
    zb_swiglu_backward_ref(dabr, ab, dy, N, F);
    for (size_t i = 0; i < nab; i++) dabr[i] += init[i];
    /* += onto values of size ~1: absolute, plus the exp difference */
    assert_close_f(dab, dabr, nab, 2e-6, 1e-6, "swiglu dab += fast vs ref");
    free(ab), free(dy), free(y), free(yr), free(init), free(dab), free(dabr);
}
END_TEST

/* ------------------------------------------------------------------ */
/* RoPE                                                               */

/* B 2, T 6, H 3 turned heads of hs 8 in rows of ld 34 (2 more channels
 * that must stay as they were) */
static void rope_prob(fd_prob *p, const float *x, const float *wts) {
    *p = (fd_prob){.B = 2, .T = 6, .H = 3, .hs = 8, .ld = 34, .theta = 10000};
    size_t n = (size_t)p->B * p->T * p->ld;
    const float *in[1] = {x};
    prob_init(p, 1, in, &n, n, wts, ref_rope);
}

START_TEST(test_rope_forward) {
    seed(301);
    fd_prob p;
    size_t n = 2 * 6 * 34;
    float *x = frandbuf(n, 2.0f), *wts = fbuf(n);
    rope_prob(&p, x, wts);
    p.ref(&p);
    float *y = fdup(x, n), *yr = fdup(x, n);
    zb_rope_forward(y, p.B, p.T, p.H, p.hs, p.ld, (float)p.theta);
    zb_rope_forward_ref(yr, p.B, p.T, p.H, p.hs, p.ld, (float)p.theta);
    /* cos, sin rounded to float, then two products and a sum */
    assert_close(y, p.out, n, 1e-6, 5e-7, "rope out");
    assert_close_f(y, yr, n, 1e-6, 1e-7, "rope fast vs ref"); /* below */
    for (int r = 0; r < p.B * p.T; r++) /* the channels past H heads */
        ck_assert_mem_eq(y + r * p.ld + 24, x + r * p.ld + 24, 10 * sizeof *y);
    /* position 0 does not turn */
    ck_assert_mem_eq(y, x, 24 * sizeof *y);
    /* the inverse: backward of forward gives x back (R^T R = 1) */
    zb_rope_backward(y, p.B, p.T, p.H, p.hs, p.ld, (float)p.theta);
    double *xd = dcopy(x, n);
    assert_close(y, xd, n, 1e-6, 5e-7, "rope backward(forward(x))");
    fd_free(&p);
    free(x), free(wts), free(y), free(yr), free(xd);
}
END_TEST

START_TEST(test_rope_grad_fd) {
    seed(302);
    fd_prob p;
    size_t n = 2 * 6 * 34;
    float *x = frandbuf(n, 1.0f), *dy = frandbuf(n, 1.0f);
    rope_prob(&p, x, dy);
    float *dx = fdup(dy, n), *dxr = fdup(dy, n);
    zb_rope_backward(dx, p.B, p.T, p.H, p.hs, p.ld, (float)p.theta);
    zb_rope_backward_ref(dxr, p.B, p.T, p.H, p.hs, p.ld, (float)p.theta);
    fd_assert(&p, 0, dx, "rope dx");
    fd_assert(&p, 0, dxr, "rope ref dx");
    /* wrong: the gradient turned forward instead of back */
    float *bad = fdup(dy, n);
    zb_rope_forward(bad, p.B, p.T, p.H, p.hs, p.ld, (float)p.theta);
    fd_assert_rejects(&p, 0, bad, "dx = R dy instead of R^T dy");
    fd_free(&p);
    free(x), free(dy), free(dx), free(dxr), free(bad);
}
END_TEST

/* fast path (OpenMP, a head size over ZB_ROPE_PAIRS pairs: two chunks)
 * against the reference; a large theta and positions. Not bit for bit:
 * the compiler may fuse one side's cos and sin into sincos, and libm's
 * sincos, sin and cos (each picked for the CPU at load) may differ in the
 * last bit of the double, which can round the float the other way: one
 * float ulp times |x| <= 1, twice. */
START_TEST(test_rope_fast_vs_ref) {
    const int B = 2, T = 40, H = 3, hs = 160, ld = H * hs + 5;
    size_t n = (size_t)B * T * ld;
    seed(303);
    float *x = frandbuf(n, 1.0f), *y = fdup(x, n), *yr = fdup(x, n);
    zb_rope_forward(y, B, T, H, hs, ld, 500000.0f);
    zb_rope_forward_ref(yr, B, T, H, hs, ld, 500000.0f);
    assert_close_f(y, yr, n, 0, 3e-7, "rope forward fast vs ref");
    zb_rope_backward(y, B, T, H, hs, ld, 500000.0f);
    zb_rope_backward_ref(yr, B, T, H, hs, ld, 500000.0f);
    assert_close_f(y, yr, n, 0, 6e-7, "rope backward fast vs ref");
    free(x), free(y), free(yr);
}
END_TEST

/* ------------------------------------------------------------------ */
/* GQA attention                                                      */

static size_t gqa_width(int C, int NH, int KVH) {
    return (size_t)C + 2 * (size_t)KVH * (C / NH);
}

static void gqa_case(int B, int T, int C, int NH, int KVH, uint64_t s) {
    seed(s);
    size_t nq = (size_t)B * T * gqa_width(C, NH, KVH), no = (size_t)B * T * C;
    size_t na = (size_t)B * NH * T * T;
    float *qkv = frandbuf(nq, 1.0f), *dy = frandbuf(no, 1.0f);
    float *out = fbuf(no), *att = fbuf(na), *datt = fbuf(na);
    zb_attention_gqa_forward(out, att, qkv, B, T, C, NH, KVH);
    fd_prob p = {.B = B, .T = T, .C = C, .NH = NH, .KVH = KVH};
    const float *in[1] = {qkv};
    prob_init(&p, 1, in, &nq, no, dy, ref_gqa);
    p.ref(&p);
    assert_close(out, p.out, no, 1e-5, 1e-6, "gqa out");
    float *init = frandbuf(nq, 1.0f), *dq = fdup(init, nq), *dq0 = fbuf(nq);
    zb_attention_gqa_backward(dq0, datt, dy, qkv, att, B, T, C, NH, KVH);
    zb_attention_gqa_backward(dq, datt, dy, qkv, att, B, T, C, NH, KVH);
    fd_assert(&p, 0, dq0, "gqa dqkv");
    for (size_t i = 0; i < nq; i++) dq0[i] += init[i];
    assert_close_f(dq, dq0, nq, 1e-6, 1e-6, "gqa dqkv +=");
    if (KVH < NH) {
        /* wrong: each kv head's gradient from its group's first query
         * head only (what a race or a missing sum would leave) */
        float *one = fbuf(nq);
        zb_attention_gqa_backward(one, datt, dy, qkv, att, B, T, C, NH, KVH);
        int hs = C / NH, G = NH / KVH;
        float *dyf = fdup(dy, no); /* dout of query heads g > 0 zeroed */
        for (size_t r = 0; r < (size_t)B * T; r++)
            for (int h = 0; h < NH; h++)
                if (h % G) memset(dyf + r * C + h * hs, 0, hs * sizeof *dyf);
        float *first = fbuf(nq);
        zb_attention_gqa_backward(first, datt, dyf, qkv, att, B, T, C, NH, KVH);
        for (size_t r = 0; r < (size_t)B * T; r++) /* K, V part */
            memcpy(one + r * gqa_width(C, NH, KVH) + C,
                   first + r * gqa_width(C, NH, KVH) + C,
                   2 * (size_t)KVH * hs * sizeof *one);
        fd_assert_rejects(&p, 0, one, "dk, dv from one query head a group");
        free(one), free(dyf), free(first);
    }
    fd_free(&p);
    free(qkv), free(dy), free(out), free(att), free(datt), free(init);
    free(dq), free(dq0);
}

START_TEST(test_gqa_grad_fd) {
    gqa_case(2, 5, 8, 4, 1, 401);  /* multi-query: one kv head */
    gqa_case(2, 5, 16, 4, 2, 402); /* two groups of two */
    gqa_case(1, 6, 8, 2, 2, 403);  /* KVH = NH: plain multi-head */
}
END_TEST

/* GQA equals multi-head attention whose K and V heads are the kv heads
 * copied G times; its dK, dV are the MHA ones summed over each group. */
START_TEST(test_gqa_vs_mha) {
    const int B = 2, T = 16, C = 32, NH = 8, KVH = 2, hs = C / NH, G = NH / KVH;
    const int ldg = C + 2 * KVH * hs, ldm = 3 * C;
    seed(404);
    size_t ng = (size_t)B * T * ldg, nm = (size_t)B * T * ldm;
    size_t no = (size_t)B * T * C, na = (size_t)B * NH * T * T;
    float *g = frandbuf(ng, 1.0f), *m = fbuf(nm), *dy = frandbuf(no, 1.0f);
    for (int r = 0; r < B * T; r++) {
        memcpy(m + (size_t)r * ldm, g + (size_t)r * ldg, C * sizeof *m);
        for (int h = 0; h < NH; h++)
            for (int part = 0; part < 2; part++) /* k, v */
                memcpy(m + (size_t)r * ldm + (1 + part) * C + h * hs,
                       g + (size_t)r * ldg + C + part * KVH * hs + (h / G) * hs,
                       hs * sizeof *m);
    }
    float *og = fbuf(no), *om = fbuf(no), *ag = fbuf(na), *am = fbuf(na);
    float *scratch = fbuf(na), *dg = fbuf(ng), *dm = fbuf(nm);
    zb_attention_gqa_forward(og, ag, g, B, T, C, NH, KVH);
    zb_attention_forward(om, am, m, B, T, C, NH);
    assert_close_f(og, om, no, 1e-6, 1e-7, "gqa out vs mha");
    assert_close_f(ag, am, na, 1e-6, 1e-7, "gqa att vs mha");
    zb_attention_gqa_backward(dg, scratch, dy, g, ag, B, T, C, NH, KVH);
    zb_attention_backward(dm, scratch, dy, m, am, B, T, C, NH);
    double *want = dbuf(ng);
    for (int r = 0; r < B * T; r++) {
        for (int c = 0; c < C; c++)
            want[(size_t)r * ldg + c] = dm[(size_t)r * ldm + c];
        for (int h = 0; h < NH; h++)
            for (int part = 0; part < 2; part++)
                for (int i = 0; i < hs; i++)
                    want[(size_t)r * ldg + C + part * KVH * hs + (h / G) * hs + i] +=
                        dm[(size_t)r * ldm + (1 + part) * C + h * hs + i];
    }
    /* the group's sum in another order: rounding of G terms */
    assert_close(dg, want, ng, 1e-5, 1e-6, "gqa dqkv vs summed mha");
    free(g), free(m), free(dy), free(og), free(om), free(ag), free(am);
    free(scratch), free(dg), free(dm), free(want);
}
END_TEST

/* ------------------------------------------------------------------ */
/* every fast path: the same bits for 1, 2 and 3 threads              */

typedef struct {
    float *buf;
    size_t len, cap;
} sink;

static void sink_add(sink *s, const float *x, size_t n) {
    if (s->len + n > s->cap) {
        s->cap = 2 * (s->len + n);
        s->buf = realloc(s->buf, s->cap * sizeof *s->buf);
        ck_assert_ptr_nonnull(s->buf);
    }
    memcpy(s->buf + s->len, x, n * sizeof *x);
    s->len += n;
}

static sink run_all(int threads) {
    const int N = 256, C = 96, B = 2, T = 32, NH = 8, KVH = 2;
    omp_set_num_threads(threads);
    sink s = {0};
    seed(501);
    size_t nx = (size_t)N * C;
    float *x = frandbuf(2 * nx, 2.0f), *w = frandbuf(C, 1.0f);
    float *dy = frandbuf(nx, 1.0f), *y = fbuf(nx), *r = fbuf(N);
    float *dx = fbuf(2 * nx), *dw = fbuf(C);
    zb_rmsnorm_forward(y, r, x, w, N, C);
    zb_rmsnorm_backward_input(dx, dy, x, w, r, N, C);
    zb_rmsnorm_backward_weight(dw, dy, x, r, N, C);
    sink_add(&s, y, nx), sink_add(&s, r, N), sink_add(&s, dx, nx);
    sink_add(&s, dw, C);
    zb_swiglu_forward(y, x, N, C / 2 * 2);
    zb_swiglu_backward(dx, x, dy, N, C / 2 * 2);
    sink_add(&s, y, nx), sink_add(&s, dx, 2 * nx);
    zb_rope_forward(x, N / T, T, 4, 16, C, 10000.0f);
    sink_add(&s, x, nx);
    zb_rope_backward(x, N / T, T, 4, 16, C, 10000.0f);
    sink_add(&s, x, nx);
    size_t nq = (size_t)B * T * gqa_width(C, NH, KVH), na = (size_t)B * NH * T * T;
    float *att = fbuf(na), *datt = fbuf(na), *dq = fbuf(nq);
    zb_attention_gqa_forward(y, att, x, B, T, C, NH, KVH);
    zb_attention_gqa_backward(dq, datt, dy, x, att, B, T, C, NH, KVH);
    sink_add(&s, y, (size_t)B * T * C), sink_add(&s, dq, nq);
    free(x), free(w), free(dy), free(y), free(r), free(dx), free(dw);
    free(att), free(datt), free(dq);
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

static Suite *llama_suite(void) {
    Suite *s = suite_create("llama_kernels");
    TCase *tc = tcase_create("cpu");
    tcase_set_timeout(tc, 120); /* generous for valgrind */
    tcase_add_test(tc, test_rmsnorm_forward);
    tcase_add_test(tc, test_rmsnorm_grad_fd);
    tcase_add_test(tc, test_rmsnorm_fast_vs_ref);
    tcase_add_test(tc, test_swiglu_forward);
    tcase_add_test(tc, test_swiglu_grad_fd);
    tcase_add_test(tc, test_swiglu_fast_vs_ref);
    tcase_add_test(tc, test_rope_forward);
    tcase_add_test(tc, test_rope_grad_fd);
    tcase_add_test(tc, test_rope_fast_vs_ref);
    tcase_add_test(tc, test_gqa_grad_fd);
    tcase_add_test(tc, test_gqa_vs_mha);
    tcase_add_test(tc, test_deterministic_across_threads);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    SRunner *sr = srunner_create(llama_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
