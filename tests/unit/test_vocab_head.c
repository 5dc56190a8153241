/* test_vocab_head.c - the output layer with its vocabulary sharded over p
 * ranks (executor/stage/vocab_head.h over the CPU op table,
 * kernels/vocab_out.h), against the unsharded head zb runs today (the
 * GEMMs and ce_fused of one shard holding every row).
 * - For p = 1, 2, 3, 4 shards of an uneven split (V = 37), variants 1 and
 *   2, tied and untied embeddings: the shards' S, the combine of their
 *   statistics gathered in shard order, and T (variant 2: the one-barrier
 *   input gradient) give the unsharded losses, dX (the shards' parts summed
 *   in shard order) and dW (the shards' rows side by side; tied: with the
 *   embedding's gradient added to the same rows) to 1e-5; every shard
 *   computes the same statistics and losses, bit for bit.
 * - p = 1, variant 1: the unsharded bits exactly (losses, dX, dW).
 * - The embedding's shards: lookups summed over the shards give the full
 *   lookup bit for bit; their gradients are the full gradient's rows.
 * - The combine: an empty shard (max -inf) adds nothing; shards that
 *   differ only in order give the sums in shard order.
 * - The bf16 test hook's vocab_exp widens and rounds.
 */
#include <check.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "executor/stage/ops.h"
#include "executor/stage/vocab_head.h"
#include "kernels/bf16.h"
#include "kernels/vocab_out.h"
#include "tests/unit/test_rand.h"

#define OK(call)                                                               \
    do {                                                                       \
        zb_err e_ = {0};                                                       \
        zb_err *err = &e_;                                                     \
        zb_status s_ = (call);                                                 \
        ck_assert_msg(s_ == ZB_OK, "%s: %s", #call, e_.msg);                   \
    } while (0)

enum { N = 12, C = 16, V = 37, PAD = 3 };
static const float SCALE = 1.0f / N;

static void assert_close(const float *got, const float *want, size_t n,
                         double tol, const char *what, int p, int variant,
                         bool tied) {
    for (size_t i = 0; i < n; i++)
        if (!(fabs((double)got[i] - want[i]) <= tol * (1.0 + fabs(want[i]))))
            ck_abort_msg("p %d variant %d %s: %s[%zu] got %.9g, want %.9g", p,
                         variant, tied ? "tied" : "untied", what, i, got[i],
                         want[i]);
}

static double *dbuf(size_t n) {
    double *p = calloc(n, sizeof *p);
    ck_assert_ptr_nonnull(p);
    return p;
}

/* C[M, Nc] (+)= op(A) op(B), fp32 through the op table */
static void gemm(const zb_ops *o, int M, int Nc, int K, bool ta, bool tb,
                 const float *A, int lda, const float *B, int ldb, float *Cm,
                 int ldc, float beta) {
    zb_gemm g = {.M = M, .N = Nc, .K = K, .ta = ta, .tb = tb, .A = A,
                 .lda = lda, .B = B, .ldb = ldb, .C = Cm, .ldc = ldc,
                 .batch = 1, .alpha = 1.0f, .beta = beta};
    OK(o->gemm(o->ctx, &g, err));
}

typedef struct {
    float *X, *Wh, *E;       /* [N, C], [V, C] head, [V, C] table (tied: Wh) */
    int tokens[N], targets[N];
    float *demb;             /* [N, C] gradient reaching the embedding */
    /* the unsharded results */
    float losses[N], *dX, *dW, *dE; /* dW: head (+ table when tied) */
    double loss_sum;
} problem;

static void problem_make(problem *pb, bool tied, uint64_t s) {
    seed(s);
    pb->X = frandbuf((size_t)N * C, 1.0f);
    pb->Wh = frandbuf((size_t)V * C, 0.5f);
    pb->E = tied ? pb->Wh : frandbuf((size_t)V * C, 0.5f);
    for (int n = 0; n < N; n++) {
        pb->tokens[n] = (int)((frand() + 1.0f) * 0.5f * V) % V;
        pb->targets[n] = (n * 7 + 3) % V; /* every shard gets some */
    }
    pb->demb = frandbuf((size_t)N * C, 1.0f);
}

/* Today's head: logits, ce_fused, dX = dY W, dW += dY^T X; then the
 * embedding's gradient (into dW's rows when tied). */
static void reference(const zb_ops *o, problem *pb, bool tied) {
    float *logits = fbuf((size_t)N * V), *dlog = fbuf((size_t)N * V);
    pb->dX = fbuf((size_t)N * C);
    pb->dW = fbuf((size_t)V * C);
    pb->dE = tied ? pb->dW : fbuf((size_t)V * C);
    gemm(o, N, V, C, false, true, pb->X, C, pb->Wh, C, logits, V, 0.0f);
    pb->loss_sum = 0.0;
    OK(o->ce_fused(o->ctx, &pb->loss_sum, pb->losses, (zb_act *)dlog,
                   (zb_act *)logits, pb->targets, SCALE, N, V, V, err));
    gemm(o, N, C, V, false, false, dlog, V, pb->Wh, C, pb->dX, C, 0.0f);
    gemm(o, V, C, N, true, false, dlog, V, pb->X, C, pb->dW, C, 1.0f);
    OK(o->embed_tokens_bwd(o->ctx, pb->dE, (zb_act *)pb->demb, pb->tokens, 0,
                           V, N, C, err));
    free(logits);
    free(dlog);
}

static void problem_free(problem *pb, bool tied) {
    free(pb->X);
    free(pb->Wh);
    free(pb->demb);
    free(pb->dX);
    free(pb->dW);
    if (!tied) {
        free(pb->E);
        free(pb->dE);
    }
}

/* rows [v0, v0 + Vl) of shard k of p: docs/plan-format.md's split, rows
 * [k V / p, (k + 1) V / p) in integer division */
static void split(int k, int p, int *v0, int *Vl) {
    *v0 = k * V / p;
    *Vl = (k + 1) * V / p - *v0;
}

typedef struct {
    zb_vocab_shard s;
    float *logits, *dlogits, *A, *G, *dW, *dE;
    double *local, *global;
} shard;

static void shard_make(shard *h, const problem *pb, int k, int p, bool tied) {
    int v0, Vl;
    split(k, p, &v0, &Vl);
    int ld = Vl + PAD;
    h->logits = fbuf((size_t)N * ld);
    h->dlogits = fbuf((size_t)N * ld);
    h->A = fbuf((size_t)N * C);
    h->G = fbuf((size_t)N * C);
    h->dW = fbuf((size_t)Vl * C);
    h->dE = tied ? h->dW : fbuf((size_t)Vl * C);
    h->local = dbuf(3 * N);
    h->global = dbuf(3 * N);
    h->s = (zb_vocab_shard){
        .N = N, .C = C, .v0 = v0, .Vl = Vl, .ld = ld,
        .X = (const zb_act *)pb->X, .W = (const zb_act *)(pb->Wh + (size_t)v0 * C),
        .Wf = pb->Wh + (size_t)v0 * C, .dW = h->dW, .targets = pb->targets,
        .logits = (zb_act *)h->logits, .dlogits = (zb_act *)h->dlogits,
        .local = h->local, .global = h->global, .A = h->A, .G = h->G};
}

static void shard_free(shard *h, bool tied) {
    free(h->logits);
    free(h->dlogits);
    free(h->A);
    free(h->G);
    free(h->dW);
    if (!tied) free(h->dE);
    free(h->local);
    free(h->global);
}

/* dst += src, n floats (the fixed-order sum of the shards' parts) */
static void add(float *dst, const float *src, size_t n) {
    for (size_t i = 0; i < n; i++) dst[i] += src[i];
}

/* S on every shard, the gather in shard order, the combine on every
 * shard; the statistics agree bit for bit. */
static void s_and_combine(const zb_ops *o, shard *sh, int p, int variant) {
    double *tab = dbuf((size_t)p * 3 * N);
    for (int k = 0; k < p; k++) {
        OK(zb_vocab_s(o, &sh[k].s, variant, err));
        memcpy(tab + (size_t)k * 3 * N, sh[k].local, 3 * N * sizeof *tab);
    }
    for (int k = 0; k < p; k++) {
        OK(zb_vocab_combine(o, &sh[k].s, tab, p, err));
        ck_assert_mem_eq(sh[k].global, sh[0].global, 3 * N * sizeof *tab);
    }
    free(tab);
}

/* T (and variant 2's input gradient) on every shard: losses, dX summed in
 * shard order; the embedding's gradient of each shard's rows. */
static void t_all(const zb_ops *o, const problem *pb, shard *sh, int p,
                  int variant, float *losses, double *acc, float *dX) {
    float *part = fbuf((size_t)N * C), *lk = fbuf(N);
    for (int k = 0; k < p; k++) {
        if (variant == 2) OK(zb_vocab_dx2(o, &sh[k].s, SCALE, part, err));
        OK(zb_vocab_t(o, &sh[k].s, variant, SCALE, k == 0 ? acc : NULL,
                      k == 0 ? losses : lk, variant == 1 ? part : NULL, err));
        if (k > 0) {
            double unused = 0.0;
            OK(o->ce_loss(o->ctx, &unused, lk, sh[k].global,
                          sh[k].global + N, sh[k].global + 2 * N, N, err));
            ck_assert_mem_eq(lk, losses, N * sizeof *lk);
        }
        add(dX, part, (size_t)N * C);
        OK(o->embed_tokens_bwd(o->ctx, sh[k].dE, (zb_act *)pb->demb,
                               pb->tokens, sh[k].s.v0, sh[k].s.Vl, N, C,
                               err));
    }
    free(part);
    free(lk);
}

static void run_case(int p, int variant, bool tied) {
    zb_ops o;
    zb_ops_cpu(&o);
    problem pb;
    problem_make(&pb, tied, 100 + p * 10 + variant * 2 + tied);
    reference(&o, &pb, tied);
    shard sh[4];
    for (int k = 0; k < p; k++) shard_make(&sh[k], &pb, k, p, tied);
    s_and_combine(&o, sh, p, variant);
    float losses[N], *dX = fbuf((size_t)N * C);
    double acc = 0.0;
    t_all(&o, &pb, sh, p, variant, losses, &acc, dX);

    assert_close(losses, pb.losses, N, 1e-5, "loss", p, variant, tied);
    ck_assert_msg(fabs(acc - pb.loss_sum) <= 1e-5 * (1.0 + fabs(pb.loss_sum)),
                  "p %d: loss sum %.9g, want %.9g", p, acc, pb.loss_sum);
    assert_close(dX, pb.dX, (size_t)N * C, 1e-5, "dX", p, variant, tied);
    for (int k = 0; k < p; k++) {
        size_t off = (size_t)sh[k].s.v0 * C, n = (size_t)sh[k].s.Vl * C;
        assert_close(sh[k].dW, pb.dW + off, n, 1e-5, "dW", p, variant, tied);
        if (!tied)
            ck_assert_mem_eq(sh[k].dE, pb.dE + off, n * sizeof(float));
    }
    if (p == 1 && variant == 1) { /* the unsharded bits exactly */
        ck_assert_mem_eq(losses, pb.losses, sizeof losses);
        ck_assert_mem_eq(dX, pb.dX, (size_t)N * C * sizeof *dX);
        ck_assert_mem_eq(sh[0].dW, pb.dW, (size_t)V * C * sizeof *dX);
    }
    for (int k = 0; k < p; k++) shard_free(&sh[k], tied);
    free(dX);
    problem_free(&pb, tied);
}

START_TEST(test_shards_give_the_unsharded_head) {
    for (int p = 1; p <= 4; p++)
        for (int variant = 1; variant <= 2; variant++) {
            run_case(p, variant, false);
            run_case(p, variant, true);
        }
}
END_TEST

/* The embedding's shards: summed lookups are the full lookup, bitwise. */
START_TEST(test_embedding_shards_sum_to_the_lookup) {
    zb_ops o;
    zb_ops_cpu(&o);
    problem pb;
    problem_make(&pb, false, 7);
    float *full = fbuf((size_t)N * C), *sum = fbuf((size_t)N * C),
          *part = fbuf((size_t)N * C);
    OK(o.embed_tokens(o.ctx, full, pb.tokens, pb.E, 0, V, N, C, err));
    for (int p = 1; p <= 4; p++) {
        memset(sum, 0, (size_t)N * C * sizeof *sum);
        for (int k = 0; k < p; k++) {
            int v0, Vl;
            split(k, p, &v0, &Vl);
            OK(o.embed_tokens(o.ctx, part, pb.tokens, pb.E + (size_t)v0 * C,
                              v0, Vl, N, C, err));
            add(sum, part, (size_t)N * C);
        }
        ck_assert_mem_eq(sum, full, (size_t)N * C * sizeof *sum);
    }
    free(full);
    free(sum);
    free(part);
    pb.dX = pb.dW = pb.dE = NULL;
    problem_free(&pb, false);
}
END_TEST

/* An empty shard adds nothing; the sums run in shard order. */
START_TEST(test_combine_rescales_in_shard_order) {
    enum { P = 3, R = 2 };
    double tab[P * 3 * R] = { /* [P, 3, R]: each shard's m, s, zt rows */
        /* shard 0 */ 1.0, 2.0, /**/ 3.0, 5.0, /**/ 0.0, 0.25,
        /* shard 1: empty */ -INFINITY, -INFINITY, /**/ 0.0, 0.0, /**/ 0.0, 0.0,
        /* shard 2 */ 2.0, 1.0, /**/ 4.0, 1.0, /**/ 1.5, 0.0};
    double out[3 * R];
    volatile double minus1 = -1.0; /* exp at run time, as the kernel's */
    zb_vocab_stats_combine(out, tab, P, R);
    ck_assert(out[0] == 2.0 && out[1] == 2.0);              /* M */
    ck_assert(out[2] == 0.0 + 3.0 * exp(minus1) + 4.0);     /* S, row 0 */
    ck_assert(out[3] == 0.0 + 5.0 + 1.0 * exp(minus1));     /* S, row 1 */
    ck_assert(out[4] == 1.5 && out[5] == 0.25);             /* Zt */
    /* the op table's entry is the kernel */
    zb_ops o;
    zb_ops_cpu(&o);
    double got[3 * R];
    OK(o.vocab_combine(o.ctx, got, tab, P, R, err));
    ck_assert_mem_eq(got, out, sizeof out);
}
END_TEST

/* bf16 activations: vocab_exp reads bf16 logits and rounds what it wrote. */
START_TEST(test_bf16_hook_vocab_exp) {
    zb_ops b;
    OK(zb_ops_cpu_bf16(&b, err));
    enum { R = 3, Vl = 5, LD = 7 };
    seed(3);
    float *z = frandbuf(R * LD, 2.0f), *e = fbuf(R * LD);
    uint16_t zb[R * LD], eb[R * LD];
    memset(eb, 0, sizeof eb);
    zb_bf16_store(zb, z, R * LD);
    zb_bf16_load(z, zb, R * LD); /* the values bf16 holds */
    double m[R] = {0.5, -1.0, 2.0};
    zb_vocab_exp(e, z, m, R, Vl, LD);
    OK(b.vocab_exp(b.ctx, (zb_act *)eb, (const zb_act *)zb, m, R, Vl, LD,
                   err));
    for (int r = 0; r < R; r++)
        for (int v = 0; v < Vl; v++)
            ck_assert_uint_eq(eb[r * LD + v],
                              zb_bf16_from_f32(e[r * LD + v]));
    b.destroy(b.ctx);
    free(z);
    free(e);
}
END_TEST

int main(void) {
    Suite *s = suite_create("vocab_head");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_shards_give_the_unsharded_head);
    tcase_add_test(tc, test_embedding_shards_sum_to_the_lookup);
    tcase_add_test(tc, test_combine_rescales_in_shard_order);
    tcase_add_test(tc, test_bf16_hook_vocab_exp);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
