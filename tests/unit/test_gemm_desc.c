/* test_gemm_desc.c - the row-major GEMM descriptor (executor/stage/
 * gemm_desc.h): its column-major translation, the very call the CUDA ops
 * hand to cuBLAS, fed here to cblas_sgemm(CblasColMajor, ...) and compared
 * with a plain row-major reference on odd shapes (1, 3, 17, 33, 65), all
 * four transpose combinations, padded leading dimensions and batches with
 * strides; the checks of malformed descriptors; and the CPU op table's
 * gemm (blocked OpenBLAS, bias and GELU epilogues) against the same
 * reference. */
#include <cblas.h>
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "executor/stage/gemm_desc.h"
#include "executor/stage/ops.h"
#include "kernels/gelu.h"

static unsigned long long rng = 99;
static float frand(void) { /* uniform in [-1, 1) */
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)((double)(rng >> 40) / (1 << 23) - 1.0);
}

static float *rand_buf(size_t n) {
    float *p = malloc((n ? n : 1) * sizeof *p);
    ck_assert_ptr_nonnull(p);
    for (size_t i = 0; i < n; i++) p[i] = frand();
    return p;
}

/* The descriptor's meaning, in double, written from gemm_desc.h alone. */
static void ref_gemm(const zb_gemm *g, float *C) {
    for (int b = 0; b < g->batch; b++)
        for (int i = 0; i < g->M; i++)
            for (int j = 0; j < g->N; j++) {
                double s = 0.0;
                for (int k = 0; k < g->K; k++) {
                    const float *A = (const float *)g->A + b * g->sa,
                                *B = (const float *)g->B + b * g->sb;
                    float a = g->ta ? A[(size_t)k * g->lda + i]
                                    : A[(size_t)i * g->lda + k];
                    float x = g->tb ? B[(size_t)j * g->ldb + k]
                                    : B[(size_t)k * g->ldb + j];
                    s += (double)a * x;
                }
                float *c = &C[b * g->sc + (size_t)i * g->ldc + j];
                double bias = g->bias ? g->bias[j] : 0.0;
                *c = (float)(g->alpha * s + bias + g->beta * (double)*c);
            }
}

/* A descriptor with padded leading dimensions and gaps between batches;
 * buffers allocated (free with free_desc). */
static zb_gemm make_desc(int M, int N, int K, bool ta, bool tb, int batch) {
    zb_gemm g = {.M = M, .N = N, .K = K, .ta = ta, .tb = tb, .batch = batch,
                 .alpha = 0.75f, .beta = 0.5f};
    g.lda = (ta ? M : K) + 2;
    g.ldb = (tb ? K : N) + 3;
    g.ldc = N + 1;
    g.sa = (long long)(ta ? K : M) * g.lda + 4;
    g.sb = (long long)(tb ? N : K) * g.ldb + 1;
    g.sc = (long long)M * g.ldc + 5;
    g.A = rand_buf((size_t)g.sa * batch);
    g.B = rand_buf((size_t)g.sb * batch);
    g.C = rand_buf((size_t)g.sc * batch);
    return g;
}

static void free_desc(zb_gemm *g) {
    free((void *)g->A);
    free((void *)g->B);
    free(g->C);
}

/* Largest |got - want| relative to 1 + |want| over n floats. */
static double max_err(const float *got, const float *want, size_t n) {
    double worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        double e = fabs((double)got[i] - want[i]) / (1.0 + fabs(want[i]));
        if (!(e <= worst)) worst = e; /* NaN sticks */
    }
    return worst;
}

/* The translated call through column-major BLAS, batch by batch. */
static void run_colmajor(const zb_gemm_cm *c) {
    const float *A = c->A, *B = c->B;
    float *C = c->C;
    for (int b = 0; b < c->batch; b++)
        cblas_sgemm(CblasColMajor, c->transa ? CblasTrans : CblasNoTrans,
                    c->transb ? CblasTrans : CblasNoTrans, c->m, c->n, c->k,
                    c->alpha, A + b * c->sa, c->lda, B + b * c->sb,
                    c->ldb, c->beta, C + b * c->sc, c->ldc);
}

static const int sizes[] = {1, 3, 17, 33, 65};
#define NS (int)(sizeof sizes / sizeof sizes[0])

START_TEST(colmajor_matches_rowmajor) {
    int cases = 0;
    for (int mi = 0; mi < NS; mi++)
        for (int ni = 0; ni < NS; ni++)
            for (int ki = 0; ki < NS; ki++)
                for (int t = 0; t < 4; t++) {
                    int M = sizes[mi], N = sizes[ni], K = sizes[ki];
                    int batch = (mi + ni + ki) % 3 + 1;
                    zb_gemm g = make_desc(M, N, K, t & 1, t & 2, batch);
                    ck_assert_ptr_null(zb_gemm_check(&g));
                    size_t nc = (size_t)g.sc * batch;
                    float *want = malloc(nc * sizeof *want);
                    ck_assert_ptr_nonnull(want);
                    memcpy(want, g.C, nc * sizeof *want);
                    ref_gemm(&g, want);
                    zb_gemm_cm c;
                    zb_gemm_colmajor(&g, &c);
                    ck_assert_int_eq(c.m, N); /* the operands swapped */
                    ck_assert_int_eq(c.n, M);
                    run_colmajor(&c);
                    double e = max_err(g.C, want, nc);
                    ck_assert_msg(e < 1e-5, "M %d N %d K %d ta %d tb %d batch "
                                  "%d: error %g", M, N, K, t & 1, !!(t & 2),
                                  batch, e);
                    free(want);
                    free_desc(&g);
                    cases++;
                }
    ck_assert_int_eq(cases, NS * NS * NS * 4);
}
END_TEST

/* The gaps between batches and past ldc are not written. */
START_TEST(colmajor_leaves_padding) {
    zb_gemm g = make_desc(17, 33, 3, true, true, 3);
    size_t nc = (size_t)g.sc * g.batch;
    float *before = malloc(nc * sizeof *before);
    ck_assert_ptr_nonnull(before);
    memcpy(before, g.C, nc * sizeof *before);
    zb_gemm_cm c;
    zb_gemm_colmajor(&g, &c);
    run_colmajor(&c);
    for (int b = 0; b < g.batch; b++)
        for (long long i = 0; i < g.sc; i++) {
            bool inside = i < (long long)g.M * g.ldc && i % g.ldc < g.N;
            if (!inside)
                ck_assert(memcmp((float *)g.C + b * g.sc + i,
                                 &before[b * g.sc + i],
                                 sizeof(float)) == 0);
        }
    free(before);
    free_desc(&g);
}
END_TEST

START_TEST(check_rejects) {
    zb_gemm g = make_desc(3, 17, 33, false, false, 1);
    zb_gemm h = g;
    h.lda = 32; /* below K */
    ck_assert_ptr_nonnull(zb_gemm_check(&h));
    h = g;
    h.ta = true; /* now A is [K, M]: lda 35 >= M, fine */
    ck_assert_ptr_null(zb_gemm_check(&h));
    h = g;
    h.ldb = 16;
    ck_assert_ptr_nonnull(zb_gemm_check(&h));
    h = g;
    h.ldc = 16;
    ck_assert_ptr_nonnull(zb_gemm_check(&h));
    h = g;
    h.batch = 0;
    ck_assert_ptr_nonnull(zb_gemm_check(&h));
    h = g;
    h.bias = g.A; /* a bias needs beta 0 */
    ck_assert_ptr_nonnull(zb_gemm_check(&h));
    h.beta = 0.0f;
    ck_assert_ptr_null(zb_gemm_check(&h));
    h.gelu_out = g.C; /* GELU needs ldc == N */
    ck_assert_ptr_nonnull(zb_gemm_check(&h));
    free_desc(&g);
}
END_TEST

/* The CPU op table's gemm: blocked OpenBLAS (M past one 64-row block),
 * every transpose, batches; the bias and GELU epilogues. */
START_TEST(cpu_op_gemm) {
    zb_ops ops;
    zb_ops_cpu(&ops);
    zb_err err = {{0}};
    for (int t = 0; t < 4; t++) {
        zb_gemm g = make_desc(65 + 64, 33, 17, t & 1, t & 2, 2);
        size_t nc = (size_t)g.sc * g.batch;
        float *want = malloc(nc * sizeof *want);
        ck_assert_ptr_nonnull(want);
        memcpy(want, g.C, nc * sizeof *want);
        ref_gemm(&g, want);
        ck_assert_int_eq(ops.gemm(ops.ctx, &g, &err), ZB_OK);
        ck_assert_double_lt(max_err(g.C, want, nc), 1e-5);
        free(want);
        free_desc(&g);
    }
    zb_gemm g = make_desc(33, 17, 65, false, true, 1);
    g.ldc = g.N; /* GELU needs a contiguous C */
    g.beta = 0.0f;
    float *bias = rand_buf((size_t)g.N);
    g.bias = bias;
    size_t nc = (size_t)g.M * g.N;
    float *want = calloc(nc, sizeof *want), *gelu = calloc(nc, sizeof *gelu),
          *want_gelu = calloc(nc, sizeof *want_gelu);
    ck_assert(want && gelu && want_gelu);
    ref_gemm(&g, want);
    zb_gelu_forward(want_gelu, want, nc);
    g.gelu_out = gelu;
    ck_assert_int_eq(ops.gemm(ops.ctx, &g, &err), ZB_OK);
    ck_assert_double_lt(max_err(g.C, want, nc), 1e-5);
    ck_assert_double_lt(max_err(gelu, want_gelu, nc), 1e-5);
    zb_gemm bad = g;
    bad.ldc = g.N + 1; /* GELU with a padded C is refused, with a message */
    ck_assert_int_eq(ops.gemm(ops.ctx, &bad, &err), ZB_ERUNTIME);
    ck_assert_ptr_nonnull(strstr(err.msg, "GELU"));
    free(want);
    free(gelu);
    free(want_gelu);
    free(bias);
    free_desc(&g);
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("gemm_desc");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, colmajor_matches_rowmajor);
    tcase_add_test(tc, colmajor_leaves_padding);
    tcase_add_test(tc, check_rejects);
    tcase_add_test(tc, cpu_op_gemm);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
