/* test_gemm_lt.c - the GEMM descriptor's cuBLASLt epilogue mapping
 * (zb_gemm_lt_plan, executor/stage/gemm_desc.h), the choice the CUDA ops
 * make before cublasLtMatmul. Each planned call is emulated here as
 * cuBLASLt defines it on column-major matrices: D = alpha op(A) op(B)
 * (cblas_sgemm(CblasColMajor, ...) with the planned operands), plus
 * bias[r] on every column of row r of D; with GELU the sum goes to aux and
 * GELU of it to D. The result must equal the row-major meaning of the
 * descriptor (C = alpha op(A) op(B) + bias[j] per column j, gelu_out =
 * GELU(C)) on odd shapes and every transpose; and every shape the rules
 * exclude must fall back (ZB_LT_NONE with a reason). With bf16 operands
 * and a bf16 output (the stage's bf16 activations) the plan carries the
 * types through the operand swap (A and B ab_type, D and aux c_type), and
 * the emulation reading and writing bf16 as the plan says gives the
 * row-major result within one bf16 rounding. */
#include <cblas.h>
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "executor/stage/gemm_desc.h"
#include "kernels/bf16.h"
#include "kernels/gelu.h"

static unsigned long long rng = 7;
static float frand(void) { /* uniform in [-1, 1) */
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)((double)(rng >> 40) / (1 << 23) - 1.0);
}

/* n random floats, 64-byte aligned (the CUDA arena's carving is 256) */
static float *rand_buf(size_t n) {
    size_t bytes = ((n ? n : 1) * sizeof(float) + 63) / 64 * 64;
    float *p = aligned_alloc(64, bytes);
    ck_assert_ptr_nonnull(p);
    for (size_t i = 0; i < n; i++) p[i] = frand();
    return p;
}

/* Row-major meaning, in double: C = alpha op(A) op(B) + bias. */
static void ref_rowmajor(const zb_gemm *g, float *C) {
    const float *A = g->A, *B = g->B;
    for (int i = 0; i < g->M; i++)
        for (int j = 0; j < g->N; j++) {
            double s = 0.0;
            for (int k = 0; k < g->K; k++) {
                float a = g->ta ? A[(size_t)k * g->lda + i]
                                : A[(size_t)i * g->lda + k];
                float b = g->tb ? B[(size_t)j * g->ldb + k]
                                : B[(size_t)k * g->ldb + j];
                s += (double)a * b;
            }
            C[(size_t)i * g->ldc + j] = (float)(g->alpha * s + g->bias[j]);
        }
}

/* What cublasLtMatmul does with the plan (fp32, column-major). */
static void emulate_lt(const zb_gemm_lt *p) {
    const zb_gemm_cm *c = &p->cm;
    float *D = p->D, *aux = p->aux;
    float *out = p->epi == ZB_LT_GELU_AUX_BIAS ? aux : D;
    int ld = p->epi == ZB_LT_GELU_AUX_BIAS ? (int)p->aux_ld : c->ldc;
    cblas_sgemm(CblasColMajor, c->transa ? CblasTrans : CblasNoTrans,
                c->transb ? CblasTrans : CblasNoTrans, c->m, c->n, c->k,
                c->alpha, c->A, c->lda, c->B, c->ldb, 0.0f, out, ld);
    for (int col = 0; col < c->n; col++)
        for (int r = 0; r < c->m; r++) out[(size_t)col * ld + r] += p->bias[r];
    if (p->epi == ZB_LT_GELU_AUX_BIAS)
        for (int col = 0; col < c->n; col++)
            zb_gelu_forward(D + (size_t)col * c->ldc, aux + (size_t)col * ld,
                            (size_t)c->m);
}

static double max_err(const float *got, const float *want, int rows, int cols,
                      int ld) {
    double worst = 0.0;
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++) {
            size_t k = (size_t)i * ld + j;
            double e = fabs((double)got[k] - want[k]) / (1.0 + fabs(want[k]));
            if (!(e <= worst)) worst = e; /* NaN sticks */
        }
    return worst;
}

/* One linear layer as the stage writes it (out = inp @ w^T + bias, or any
 * transpose), with ldc = N + pad, through the plan and the emulation. */
static void lt_case(int M, int N, int K, bool ta, bool tb, int pad, bool gelu) {
    zb_gemm g = {.M = M, .N = N, .K = K, .ta = ta, .tb = tb, .batch = 1,
                 .alpha = 0.75f, .beta = 0.0f};
    g.lda = (ta ? M : K) + 1;
    g.ldb = (tb ? K : N) + 2;
    g.ldc = N + pad;
    float *A = rand_buf((size_t)(ta ? K : M) * g.lda);
    float *B = rand_buf((size_t)(tb ? N : K) * g.ldb);
    float *bias = rand_buf((size_t)N);
    size_t nc = (size_t)M * g.ldc;
    float *C = rand_buf(nc), *want = rand_buf(nc), *go = rand_buf(nc);
    float *want_go = rand_buf(nc);
    g.A = A, g.B = B, g.C = C, g.bias = bias;
    g.gelu_out = gelu ? go : NULL;
    ck_assert_ptr_null(zb_gemm_check(&g));
    zb_gemm_lt p;
    zb_gemm_lt_plan(&g, &p);
    ck_assert_int_eq(p.epi, gelu ? ZB_LT_GELU_AUX_BIAS : ZB_LT_BIAS);
    ck_assert_ptr_null(p.why);
    ck_assert_int_eq(p.cm.m, N); /* bias length = rows of D */
    ck_assert_ptr_eq(p.bias, bias);
    if (gelu) {
        ck_assert(p.aux_ld % 8 == 0 && p.aux_ld >= p.cm.m);
        ck_assert_ptr_eq(p.D, go);
        ck_assert_ptr_eq(p.aux, C);
    } else {
        ck_assert_ptr_eq(p.D, C);
    }
    memcpy(want, C, nc * sizeof *C);
    ref_rowmajor(&g, want);
    emulate_lt(&p);
    ck_assert_double_lt(max_err(C, want, M, N, g.ldc), 1e-5);
    if (gelu) {
        zb_gelu_forward(want_go, want, nc);
        ck_assert_double_lt(max_err(go, want_go, M, N, g.ldc), 1e-5);
    } else if (pad) { /* the padding of C is left alone */
        for (int i = 0; i < M; i++)
            for (int j = N; j < g.ldc; j++)
                ck_assert(C[(size_t)i * g.ldc + j] == want[(size_t)i * g.ldc + j]);
    }
    free(A), free(B), free(bias), free(C), free(want), free(go), free(want_go);
}

START_TEST(lt_matches_rowmajor) {
    static const int sz[] = {1, 3, 17, 33};
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 4; b++)
            for (int t = 0; t < 4; t++) {
                lt_case(sz[a], sz[b], sz[(a + b) % 4], t & 1, t & 2, 3, false);
                lt_case(sz[a], 8 * sz[b], sz[(a + b) % 4], t & 1, t & 2, 0,
                        true);
            }
    lt_case(64, 96, 32, false, true, 0, true); /* a GPT fc layer's shape */
}
END_TEST

/* n bf16 elements of random values */
static uint16_t *rand_bf(size_t n) {
    uint16_t *p = aligned_alloc(64, ((n ? n : 1) * 2 + 63) / 64 * 64);
    ck_assert_ptr_nonnull(p);
    for (size_t i = 0; i < n; i++) p[i] = zb_bf16_from_f32(frand());
    return p;
}

static float *widen(const void *p, size_t n) {
    float *f = malloc((n ? n : 1) * sizeof *f);
    ck_assert_ptr_nonnull(f);
    zb_bf16_load(f, p, n);
    return f;
}

/* A stage linear layer (out = inp @ w^T + bias, GELU) in bf16: plan, then
 * the planned call emulated on the operands widened per cm.ab_type, its
 * D and aux rounded to bf16 per cm.c_type; against the row-major result
 * on the same bf16 inputs. */
static void lt_bf16_case(int M, int N, int K, bool gelu) {
    zb_gemm g = {.M = M, .N = N, .K = K, .tb = true, .lda = K, .ldb = K,
                 .ldc = N, .batch = 1, .alpha = 1.0f, .beta = 0.0f,
                 .ab_type = ZB_DT_BF16, .c_type = ZB_DT_BF16};
    size_t nc = (size_t)M * N;
    uint16_t *A = rand_bf((size_t)M * K), *B = rand_bf((size_t)N * K);
    uint16_t *C = rand_bf(nc), *go = rand_bf(nc);
    float *bias = rand_buf((size_t)N);
    g.A = A, g.B = B, g.C = C, g.bias = bias, g.gelu_out = gelu ? go : NULL;
    zb_gemm_lt p;
    zb_gemm_lt_plan(&g, &p);
    ck_assert_int_eq(p.epi, gelu ? ZB_LT_GELU_AUX_BIAS : ZB_LT_BIAS);
    ck_assert_int_eq(p.cm.ab_type, ZB_DT_BF16);
    ck_assert_int_eq(p.cm.c_type, ZB_DT_BF16);
    ck_assert_ptr_eq(p.cm.A, B); /* swapped: cm.A is the weight */
    /* the planned call on widened operands, fp32 D and aux */
    zb_gemm_lt q = p;
    float *a = widen(p.cm.A, (size_t)N * K), *b = widen(p.cm.B, (size_t)M * K);
    float *d = rand_buf(nc), *aux = rand_buf(nc);
    q.cm.A = a, q.cm.B = b;
    q.D = gelu ? d : aux;
    q.aux = gelu ? aux : NULL;
    emulate_lt(&q);
    uint16_t *outs[2] = {gelu ? go : C, C};
    float *vals[2] = {q.D, aux};
    for (int k = 0; k < (gelu ? 2 : 1); k++) zb_bf16_store(outs[k], vals[k], nc);
    /* row-major meaning on the same bf16 inputs */
    float *wa = widen(A, (size_t)M * K), *wb = widen(B, (size_t)N * K);
    float *want = rand_buf(nc), *wgo = rand_buf(nc);
    zb_gemm r = g;
    r.A = wa, r.B = wb, r.ab_type = r.c_type = ZB_DT_F32;
    ref_rowmajor(&r, want);
    zb_gelu_forward(wgo, want, nc);
    float *gc = widen(C, nc), *gg = widen(go, nc);
    ck_assert_double_lt(max_err(gc, want, M, N, N), 1.0 / 128);
    if (gelu) ck_assert_double_lt(max_err(gg, wgo, M, N, N), 1.0 / 128);
    free(A), free(B), free(C), free(go), free(bias), free(a), free(b);
    free(d), free(aux), free(wa), free(wb), free(want), free(wgo), free(gc);
    free(gg);
}

START_TEST(lt_bf16_types) {
    lt_bf16_case(64, 96, 32, true);  /* fc: bias + GELU */
    lt_bf16_case(17, 24, 33, false); /* qkv: bias */
    lt_bf16_case(5, 8, 3, true);
}
END_TEST

/* The shapes the rules exclude fall back with a reason. */
static void expect_none(const zb_gemm *g, const char *why) {
    zb_gemm_lt p;
    zb_gemm_lt_plan(g, &p);
    ck_assert_int_eq(p.epi, ZB_LT_NONE);
    ck_assert_ptr_nonnull(p.why);
    ck_assert_str_eq(p.why, why);
    /* the product itself is still zb_gemm_colmajor's */
    zb_gemm_cm c;
    zb_gemm_colmajor(g, &c);
    ck_assert(c.m == p.cm.m && c.n == p.cm.n && c.k == p.cm.k &&
              c.transa == p.cm.transa && c.transb == p.cm.transb &&
              c.A == p.cm.A && c.B == p.cm.B && c.C == p.cm.C &&
              c.lda == p.cm.lda && c.ldb == p.cm.ldb && c.ldc == p.cm.ldc &&
              c.batch == p.cm.batch && c.beta == p.cm.beta);
}

START_TEST(lt_fallbacks) {
    float *buf = rand_buf(4096);
    zb_gemm g = {.M = 4, .N = 16, .K = 8, .tb = true, .A = buf, .lda = 8,
                 .B = buf + 64, .ldb = 8, .C = buf + 256, .ldc = 16,
                 .batch = 1, .alpha = 1.0f, .beta = 0.0f, .bias = buf + 512};
    zb_gemm_lt p;
    zb_gemm_lt_plan(&g, &p);
    ck_assert_int_eq(p.epi, ZB_LT_BIAS);
    zb_gemm h = g;
    h.bias = NULL;
    h.beta = 1.0f;
    expect_none(&h, "no bias");
    h.gelu_out = buf + 1024;
    h.beta = 0.0f;
    expect_none(&h, "GELU without bias");
    h = g;
    h.batch = 2;
    h.sa = h.sb = h.sc = 512;
    expect_none(&h, "bias with batch > 1");
    h = g;
    h.K = 0;
    expect_none(&h, "empty");
    h = g;
    h.bias = buf + 513; /* 4-byte aligned only */
    expect_none(&h, "bias not 16-byte aligned");
    h = g;
    h.N = h.ldc = 12; /* aux ld 12: not a multiple of 8 */
    h.gelu_out = buf + 1024;
    expect_none(&h, "GELU aux ld not a multiple of 8");
    h.N = h.ldc = 16;
    h.gelu_out = buf + 1025;
    expect_none(&h, "GELU output not 16-byte aligned");
    h.gelu_out = buf + 1024;
    zb_gemm_lt_plan(&h, &p);
    ck_assert_int_eq(p.epi, ZB_LT_GELU_AUX_BIAS);
    h.C = buf + 258;
    expect_none(&h, "GELU output not 16-byte aligned");
    free(buf);
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("gemm_lt");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, lt_matches_rowmajor);
    tcase_add_test(tc, lt_fallbacks);
    tcase_add_test(tc, lt_bf16_types);
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
