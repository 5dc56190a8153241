/* test_stage.c - the GPT stage on the CPU ops (executor/stage/stage.h, the
 * stage program gpt.c over ops_cpu.c):
 *  - gradients against central finite differences of the loss (1 rank);
 *  - split B then W equals fused BW, bitwise;
 *  - pipeline layouts (pp = 2 loop, interleaved, V placement on 1 and 2
 *    ranks) give the loss and gradients of the one-stage model, the test
 *    moving act_out -> act_in and grad_out -> grad_in itself;
 *  - TP = 2 on two threads with the local transport equals TP = 1;
 *  - every layout starts from the identical full model;
 *  - recompute selective and full give recompute none's loss and
 *    gradients bit for bit (pp 1, pp 2 V placement, interleaved, an empty
 *    middle stage, TP 2; split and fused BW), and hold less memory;
 *  - slots, out-of-order passes, AdamW by hand, grad norm ownership,
 *    checkpoints;
 *  - bf16 activation storage (the CPU ops' test hook ZB_ACT_BF16=1): the
 *    exact bytes of the carve, deterministic, close to fp32 but not it,
 *    a pipeline equal to the one-stage bf16 run, recompute's bits, at
 *    pp 1, zb-v's placement, interleaved, TP 2 with vocabulary padding;
 *  - Llama-shaped blocks (GQA, RoPE, SwiGLU, RMSNorm, no biases, untied
 *    head): a step's loss against a plain double reference, finite
 *    differences, pipelines, TP 2, recompute, bf16 storage, tp not
 *    dividing kv_heads refused.
 * Plans are built in memory (spans and a schedule), no plan file. */
#include <check.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "executor/stage/stage.h"
#include "executor/stage/stage_params.h"
#include "kernels/bf16.h"

#define MAXR 4 /* pipeline ranks in these tests */

typedef struct {
    int layers, C, NH, F, T, V, B, m, pp, v, tp;
    bool tied;
    bool llama; /* Llama-shaped blocks (llama_spec) */
    zb_recompute rc;
    zb_placement pl;
    int split[2 * MAXR]; /* layers per virtual stage */
} spec;

/* The one-stage model most tests compare against. */
static spec base_spec(int layers) {
    spec s = {.layers = layers, .C = 8, .NH = 2, .F = 16, .T = 5, .V = 13,
              .B = 2, .m = 2, .pp = 1, .v = 1, .tp = 1, .tied = true,
              .pl = ZB_PLACE_LOOP};
    s.split[0] = layers;
    return s;
}

/* A plan whose schedule is, on every rank: all F (chunk by chunk), then all
 * B, then all W, so each chunk has m slots. */
static void plan_build(zb_plan *p, const spec *s) {
    memset(p, 0, sizeof *p);
    zb_arch *a = &p->model.arch;
    a->layers = s->layers;
    a->hidden = s->C;
    a->heads = s->NH;
    a->ffn_hidden = s->F;
    a->seq_len = s->T;
    a->vocab = s->V;
    a->tied_embeddings = s->tied;
    if (s->llama) { /* GQA (2 query heads a kv head), SwiGLU, RMSNorm, RoPE */
        a->kv_heads = s->NH / 2;
        a->mlp = ZB_MLP_SWIGLU;
        a->norm = ZB_NORM_RMSNORM;
        a->position = ZB_POS_ROPE;
        a->rope_theta = 10000.0;
        a->no_bias = true;
    }
    p->model.train.seed = 1234;
    p->model.train.recompute = s->rc;
    p->model.train.global_batch = s->B * s->m;
    p->model.train.opt = (zb_optim){.lr = 1e-3, .beta1 = 0.9, .beta2 = 0.95,
                                    .eps = 1e-8, .weight_decay = 0.1};
    p->dp = 1;
    p->tp = s->tp;
    p->pp = s->pp;
    p->v = s->v;
    p->micro_batch = s->B;
    p->m = s->m;
    int n = s->pp * s->v, first = 0;
    p->stages = calloc((size_t)n, sizeof *p->stages);
    ck_assert_ptr_nonnull(p->stages);
    for (int vs = 0; vs < n; vs++) {
        p->stages[vs] = (zb_stage_span){first, s->split[vs], vs == 0, vs == n - 1};
        first += s->split[vs];
    }
    ck_assert_int_eq(first, s->layers);
    zb_err err;
    ck_assert_int_eq(zb_schedule_init(&p->sched, "test", s->pp, s->m, s->v,
                                      s->pl, 0, &err), ZB_OK);
    zb_pass passes[3] = {ZB_F, ZB_B, ZB_W};
    for (int r = 0; r < s->pp; r++)
        for (int k = 0; k < 3; k++)
            for (int c = 0; c < s->v; c++)
                for (int j = 0; j < s->m; j++)
                    ck_assert_int_eq(zb_schedule_push(&p->sched, r, passes[k],
                                                      j, c, &err), ZB_OK);
}

static void plan_release(zb_plan *p) {
    free(p->stages);
    zb_schedule_free(&p->sched);
}

static zb_stage *stage_make(const zb_plan *p, int pp_rank, int tp_rank,
                            zb_transport *tr, const zb_group *g) {
    zb_stage_cfg cfg = {.plan = p, .pp_rank = pp_rank, .tp_rank = tp_rank,
                        .tr = tr, .tp_group = g};
    zb_stage *st = NULL;
    zb_err err;
    zb_status rc = zb_stage_new(&cfg, &st, &err);
    ck_assert_msg(rc == ZB_OK, "zb_stage_new: %s", err.msg);
    return st;
}

/* Deterministic tokens/targets [m][B*T]. */
static void make_tokens(const spec *s, int *tok, int *tgt) {
    uint32_t x = 12345;
    for (int i = 0; i < s->m * s->B * s->T; i++) {
        x = x * 1664525u + 1013904223u;
        tok[i] = (int)((x >> 8) % (uint32_t)s->V);
        x = x * 1664525u + 1013904223u;
        tgt[i] = (int)((x >> 8) % (uint32_t)s->V);
    }
}

/* One step of a pipeline of stage objects st[pp] (GPipe order: all F, all
 * B, all W), moving messages between ranks by memcpy; neighbours on the same
 * rank pass data themselves. split: B then W, else BW. Returns the summed
 * loss of the heads times loss_scale (the mean loss). */
static double run_step(zb_stage **st, const zb_plan *p, const int *tok,
                       const int *tgt, bool split) {
    int n = p->pp * p->v, N = p->micro_batch * p->model.arch.seq_len;
    size_t msg = zb_stage_msg_floats(st[0]) * sizeof(float);
    float scale = 1.0f / (float)(N * p->m);
    zb_err err;
    for (int r = 0; r < p->pp; r++) zb_stage_zero_grads(st[r]);
    for (int j = 0; j < p->m; j++)
        for (int s = 0; s < n; s++) {
            int r, c, pr, pc;
            zb_vstage_owner(&p->sched, s, &r, &c);
            if (s > 0) {
                zb_vstage_owner(&p->sched, s - 1, &pr, &pc);
                if (pr != r) {
                    float *dst = zb_stage_act_in(st[r], c, j);
                    ck_assert_ptr_nonnull(dst);
                    memcpy(dst, zb_stage_act_out(st[pr], pc, j), msg);
                }
            }
            zb_status rc = zb_stage_forward(st[r], c, j, tok + j * N, tgt + j * N,
                                            scale, &err);
            ck_assert_msg(rc == ZB_OK, "F: %s", err.msg);
        }
    for (int j = 0; j < p->m; j++)
        for (int s = n - 1; s >= 0; s--) {
            int r, c, nr, nc;
            zb_vstage_owner(&p->sched, s, &r, &c);
            if (s < n - 1) {
                zb_vstage_owner(&p->sched, s + 1, &nr, &nc);
                if (nr != r)
                    memcpy(zb_stage_grad_in(st[r], c, j),
                           zb_stage_grad_out(st[nr], nc, j), msg);
            }
            zb_status rc = split ? zb_stage_backward_b(st[r], c, j, &err)
                                 : zb_stage_backward_bw(st[r], c, j, &err);
            ck_assert_msg(rc == ZB_OK, "B: %s", err.msg);
        }
    if (split)
        for (int j = 0; j < p->m; j++)
            for (int s = n - 1; s >= 0; s--) {
                int r, c;
                zb_vstage_owner(&p->sched, s, &r, &c);
                zb_status rc = zb_stage_backward_w(st[r], c, j, &err);
                ck_assert_msg(rc == ZB_OK, "W: %s", err.msg);
            }
    double loss = 0;
    for (int r = 0; r < p->pp; r++) loss += zb_stage_loss_sum(st[r]);
    return loss * scale;
}

/* ---- comparing a layout against the reference (tp = 1, pp = 1) ---- */

typedef struct {
    zb_ptable pt;
    float *params, *grads;
} view;

static view view_of(const zb_plan *p, zb_stage *st, int pp_rank, int tp_rank) {
    view v;
    zb_err err;
    ck_assert_int_eq(zb_ptable_build(&v.pt, p, pp_rank, tp_rank, &err), ZB_OK);
    size_t n, n2;
    v.params = zb_stage_params(st, &n);
    v.grads = zb_stage_grads(st, &n2);
    ck_assert_uint_eq(n, v.pt.floats);
    ck_assert_uint_eq(n2, v.pt.floats);
    return v;
}

/* Every tensor of `part` (copies included) against the reference tensor it
 * is (a shard of): params bitwise; grads within rtol of the tensor's largest
 * reference gradient. Counts the reference elements covered in seen. */
static void compare_view(const view *ref, const view *part, double rtol,
                         int *seen) {
    for (int k = 0; k < part->pt.n; k++) {
        const zb_ptensor *t = &part->pt.t[k];
        int rk = zb_ptable_find(&ref->pt, t->layer, t->id, false);
        ck_assert_int_ge(rk, 0);
        const zb_ptensor *rt = &ref->pt.t[rk];
        size_t rn = (size_t)rt->rows * rt->cols;
        double gmax = 0;
        for (size_t i = 0; i < rn; i++)
            gmax = fmax(gmax, fabs(ref->grads[rt->off + i]));
        for (size_t i = 0; i < (size_t)t->rows * t->cols; i++) {
            size_t fi = zb_ptable_full_index(&part->pt, t, i);
            if (fi == ZB_PTABLE_PAD) { /* vocabulary padding: stays zero */
                ck_assert(part->params[t->off + i] == 0.0f &&
                          part->grads[t->off + i] == 0.0f);
                continue;
            }
            ck_assert_uint_lt(fi, rn);
            float pv = part->params[t->off + i], rv = ref->params[rt->off + fi];
            ck_assert_msg(pv == rv, "%s layer %d [%zu]: param %g vs %g",
                          t->name, t->layer, i, pv, rv);
            double g = part->grads[t->off + i], rg = ref->grads[rt->off + fi];
            ck_assert_msg(fabs(g - rg) <= rtol * gmax + 1e-30,
                          "%s layer %d [%zu]: grad %.9g vs %.9g (max %.3g)",
                          t->name, t->layer, i, g, rg, gmax);
            if (!t->copy) seen[rt->off + fi]++;
        }
    }
}

/* All reference elements are covered exactly `times` times. */
static void check_coverage(const view *ref, const int *seen, int times) {
    for (size_t i = 0; i < ref->pt.floats; i++)
        ck_assert_msg(seen[i] == times, "reference float %zu covered %d times",
                      i, seen[i]);
}

/* Sum the tied embedding gradients of all ranks into each (what the runtime
 * does over the embedding group). */
static void sync_tied(zb_stage **st, int pp) {
    size_t n = 0, nn;
    float *sum = NULL;
    for (int r = 0; r < pp; r++) {
        float *g = zb_stage_tied_grad(st[r], &nn);
        if (!g) continue;
        if (!sum) {
            n = nn;
            sum = calloc(n, sizeof *sum);
        }
        ck_assert_uint_eq(nn, n);
        for (size_t i = 0; i < n; i++) sum[i] += g[i];
    }
    for (int r = 0; sum && r < pp; r++) {
        float *g = zb_stage_tied_grad(st[r], &nn);
        if (g) memcpy(g, sum, n * sizeof *g);
    }
    free(sum);
}

/* Reference run of spec s with layers in one stage. */
typedef struct {
    zb_plan plan;
    zb_stage *st;
    view v;
    double loss;
    int *tok, *tgt;
} refrun;

static void ref_run(refrun *rr, spec s) {
    s.pp = s.v = s.tp = 1;
    s.pl = ZB_PLACE_LOOP;
    memset(s.split, 0, sizeof s.split);
    s.split[0] = s.layers;
    plan_build(&rr->plan, &s);
    rr->st = stage_make(&rr->plan, 0, 0, NULL, NULL);
    size_t n = (size_t)s.m * s.B * s.T;
    rr->tok = calloc(n, sizeof(int));
    rr->tgt = calloc(n, sizeof(int));
    make_tokens(&s, rr->tok, rr->tgt);
    rr->loss = run_step(&rr->st, &rr->plan, rr->tok, rr->tgt, true);
    rr->v = view_of(&rr->plan, rr->st, 0, 0);
}

static void ref_free(refrun *rr) {
    zb_ptable_free(&rr->v.pt);
    zb_stage_free(rr->st);
    plan_release(&rr->plan);
    free(rr->tok);
    free(rr->tgt);
}

/* Run a pipeline layout and compare it with the reference. */
static void check_pipeline(spec s, int expect_tied_ranks) {
    refrun rr;
    ref_run(&rr, s);
    zb_plan p;
    plan_build(&p, &s);
    zb_stage *st[MAXR];
    for (int r = 0; r < s.pp; r++) st[r] = stage_make(&p, r, 0, NULL, NULL);
    double loss = run_step(st, &p, rr.tok, rr.tgt, true);
    ck_assert_msg(fabs(loss - rr.loss) <= 1e-6 * fabs(rr.loss),
                  "loss %.9g vs %.9g", loss, rr.loss);
    int tied = 0;
    size_t nn;
    for (int r = 0; r < s.pp; r++) tied += zb_stage_tied_grad(st[r], &nn) != NULL;
    ck_assert_int_eq(tied, expect_tied_ranks);
    sync_tied(st, s.pp);
    int *seen = calloc(rr.v.pt.floats, sizeof *seen);
    for (int r = 0; r < s.pp; r++) {
        view v = view_of(&p, st[r], r, 0);
        compare_view(&rr.v, &v, 1e-5, seen);
        zb_ptable_free(&v.pt);
    }
    check_coverage(&rr.v, seen, 1);
    /* norm: each parameter counted once over the ranks */
    double sq = 0, rsq = zb_stage_grad_sumsq(rr.st);
    for (int r = 0; r < s.pp; r++) sq += zb_stage_grad_sumsq(st[r]);
    ck_assert_msg(fabs(sq - rsq) <= 1e-5 * rsq, "sumsq %g vs %g", sq, rsq);
    free(seen);
    for (int r = 0; r < s.pp; r++) zb_stage_free(st[r]);
    plan_release(&p);
    ref_free(&rr);
}

/* ---- (a) finite differences ---- */

/* Mean loss of one microbatch (F then BW so the slot is returned). */
static double loss_of(zb_stage *st, const zb_plan *p, const int *tok,
                      const int *tgt) {
    return run_step(&st, p, tok, tgt, false);
}

/* Checks 3 elements of every tensor (only the embedding/head tensors when
 * head_only: the untied variant differs from the tied one only there). */
static void fd_check_spec(spec s, bool head_only) {
    s.m = 1;
    zb_plan p;
    plan_build(&p, &s);
    zb_stage *st = stage_make(&p, 0, 0, NULL, NULL);
    int tok[2 * 5], tgt[2 * 5];
    make_tokens(&s, tok, tgt);
    size_t n;
    float *w = zb_stage_params(st, &n);
    /* Larger weights than GPT-2's 0.02 make every gradient big enough for a
     * float32 finite difference to resolve. */
    uint32_t x = 7;
    for (size_t i = 0; i < n; i++) {
        x = x * 1664525u + 1013904223u;
        w[i] += 0.4f * ((float)(x >> 8) / 16777216.0f - 0.5f);
    }
    loss_of(st, &p, tok, tgt);
    float *g = zb_stage_grads(st, &n);
    float *grad = malloc(n * sizeof *grad);
    memcpy(grad, g, n * sizeof *grad);
    zb_ptable pt;
    zb_err err;
    ck_assert_int_eq(zb_ptable_build(&pt, &p, 0, 0, &err), ZB_OK);
    const float eps = 1e-2f;
    double worst = 0;
    int checked = 0;
    int want = 0;
    for (int k = 0; k < pt.n; k++) {
        const zb_ptensor *t = &pt.t[k];
        if (head_only && t->layer >= 0) continue;
        size_t tn = (size_t)t->rows * t->cols;
        if (tn == 0) continue; /* absent under the model's keys */
        want += 3;
        size_t picks[3] = {0, (2 * tn) / 3, tn - 1};
        for (int q = 0; q < 3; q++) {
            size_t i = t->off + picks[q];
            float w0 = w[i];
            w[i] = w0 + eps;
            double lp = loss_of(st, &p, tok, tgt);
            w[i] = w0 - eps;
            double lm = loss_of(st, &p, tok, tgt);
            w[i] = w0;
            double fd = (lp - lm) / (2.0 * eps), an = grad[i];
            double e = fabs(fd - an) / fmax(fabs(fd) + fabs(an), 1e-2);
            worst = fmax(worst, e);
            ck_assert_msg(e < 1e-2, "%s layer %d [%zu]: analytic %.6g, "
                          "finite difference %.6g", t->name, t->layer,
                          picks[q], an, fd);
            checked++;
        }
    }
    if (getenv("ZB_TEST_VERBOSE")) fprintf(stderr, "fd worst rel err %g over %d\n", worst, checked);
    ck_assert_int_eq(checked, want);
    ck_assert_int_ge(want, 3 * (head_only ? 4 : pt.n / 2));
    free(grad);
    zb_ptable_free(&pt);
    zb_stage_free(st);
    plan_release(&p);
}

static void fd_check(bool tied, bool head_only) {
    spec s = base_spec(2);
    s.tied = tied;
    fd_check_spec(s, head_only);
}

START_TEST(test_finite_differences_tied) { fd_check(true, false); }
END_TEST

START_TEST(test_finite_differences_untied) { fd_check(false, true); }
END_TEST

/* ---- (b) split B + W equals BW ---- */

START_TEST(test_split_equals_fused) {
    spec layouts[2] = {base_spec(2), base_spec(2)};
    layouts[1].pp = 2; /* pipeline of two, one layer each */
    layouts[1].split[0] = layouts[1].split[1] = 1;
    for (int k = 0; k < 2; k++) {
        spec s = layouts[k];
        zb_plan p;
        plan_build(&p, &s);
        zb_stage *a[2], *b[2];
        for (int r = 0; r < s.pp; r++) {
            a[r] = stage_make(&p, r, 0, NULL, NULL);
            b[r] = stage_make(&p, r, 0, NULL, NULL);
        }
        int tok[2 * 10], tgt[2 * 10];
        make_tokens(&s, tok, tgt);
        double la = run_step(a, &p, tok, tgt, true);
        double lb = run_step(b, &p, tok, tgt, false);
        ck_assert(la == lb);
        for (int r = 0; r < s.pp; r++) {
            size_t n;
            float *ga = zb_stage_grads(a[r], &n), *gb = zb_stage_grads(b[r], &n);
            ck_assert_mem_eq(ga, gb, n * sizeof(float));
            double nz = zb_stage_grad_sumsq(a[r]);
            ck_assert(nz > 0);
            zb_stage_free(a[r]);
            zb_stage_free(b[r]);
        }
        plan_release(&p);
    }
}
END_TEST

/* ---- (c) pipeline layouts equal the one-stage model ---- */

START_TEST(test_pp2_tied) {
    spec s = base_spec(2);
    s.pp = 2;
    s.split[0] = s.split[1] = 1;
    check_pipeline(s, 2); /* both ranks hold a wte to sync */
}
END_TEST

START_TEST(test_pp2_untied_uneven) {
    spec s = base_spec(3);
    s.tied = false;
    s.pp = 2;
    s.split[0] = 2;
    s.split[1] = 1;
    check_pipeline(s, 0);
}
END_TEST

START_TEST(test_pp3_empty_middle_head_only) {
    spec s = base_spec(2);
    s.pp = 3;
    s.split[0] = 2; /* embedding + 2 layers | nothing | head only */
    s.split[1] = 0;
    s.split[2] = 0;
    check_pipeline(s, 2);
}
END_TEST

START_TEST(test_interleaved) {
    spec s = base_spec(4);
    s.pp = 2;
    s.v = 2; /* rank 0: vstages 0, 2; rank 1: 1, 3 */
    for (int i = 0; i < 4; i++) s.split[i] = 1;
    check_pipeline(s, 2);
}
END_TEST

/* ---- (e) V placement ---- */

START_TEST(test_v_one_rank) {
    spec s = base_spec(2);
    s.v = 2;
    s.pl = ZB_PLACE_V; /* both chunks on rank 0: the turn is local */
    s.split[0] = s.split[1] = 1;
    check_pipeline(s, 0); /* one shared wte */
}
END_TEST

START_TEST(test_v_two_ranks) {
    spec s = base_spec(4);
    s.pp = 2;
    s.v = 2;
    s.pl = ZB_PLACE_V; /* rank 0: vstages 0, 3; rank 1: 1, 2 (the turn) */
    for (int i = 0; i < 4; i++) s.split[i] = 1;
    check_pipeline(s, 0);
}
END_TEST

/* ---- the CUDA runs' warm-up (zb_stage_warmup) changes nothing ---- */

/* Layout s: every rank's stage warmed up and a fresh one give bitwise the
 * same step (loss, gradients, then parameters after AdamW is not needed:
 * the warm-up must leave parameters untouched) and activation peak. */
static void check_warmup(spec s) {
    zb_plan p;
    plan_build(&p, &s);
    zb_stage *a[MAXR], *b[MAXR];
    zb_err err;
    for (int r = 0; r < s.pp; r++) {
        a[r] = stage_make(&p, r, 0, NULL, NULL);
        b[r] = stage_make(&p, r, 0, NULL, NULL);
        ck_assert_msg(zb_stage_warmup(a[r], &err) == ZB_OK, "warmup: %s",
                      err.msg);
        ck_assert(zb_stage_loss_sum(a[r]) == 0.0);
        size_t n;
        float *ga = zb_stage_grads(a[r], &n);
        for (size_t i = 0; i < n; i++) ck_assert(ga[i] == 0.0f);
        float *pa = zb_stage_params(a[r], &n), *pb = zb_stage_params(b[r], &n);
        ck_assert_mem_eq(pa, pb, n * sizeof(float));
    }
    int tok[64], tgt[64];
    ck_assert_int_le(s.m * s.B * s.T, 64);
    make_tokens(&s, tok, tgt);
    for (int split = 0; split < 2; split++) {
        double la = run_step(a, &p, tok, tgt, split);
        double lb = run_step(b, &p, tok, tgt, split);
        ck_assert(la == lb && la > 0);
        for (int r = 0; r < s.pp; r++) {
            size_t n;
            float *ga = zb_stage_grads(a[r], &n), *gb = zb_stage_grads(b[r], &n);
            ck_assert_mem_eq(ga, gb, n * sizeof(float));
            ck_assert(zb_stage_act_peak_bytes(a[r]) ==
                      zb_stage_act_peak_bytes(b[r]));
        }
    }
    for (int r = 0; r < s.pp; r++) {
        zb_stage_free(a[r]);
        zb_stage_free(b[r]);
    }
    plan_release(&p);
}

START_TEST(test_warmup_changes_nothing) {
    check_warmup(base_spec(2));
    spec pp2 = base_spec(2);
    pp2.pp = 2;
    pp2.split[0] = pp2.split[1] = 1;
    check_warmup(pp2);
    spec v1 = base_spec(2); /* V on one rank: the turn is local */
    v1.v = 2;
    v1.pl = ZB_PLACE_V;
    v1.split[0] = v1.split[1] = 1;
    check_warmup(v1);
    spec v2 = base_spec(4); /* V on two ranks */
    v2.pp = 2;
    v2.v = 2;
    v2.pl = ZB_PLACE_V;
    for (int i = 0; i < 4; i++) v2.split[i] = 1;
    check_warmup(v2);
    spec il = v2; /* interleaved */
    il.pl = ZB_PLACE_LOOP;
    check_warmup(il);
}
END_TEST

/* ---- (d) TP = 2 on threads equals TP = 1 ---- */

typedef struct {
    const zb_plan *plan;
    zb_local_world *w;
    zb_group g;
    int rank;
    const int *tok, *tgt;
    zb_stage *st;
    double loss;
    bool fused; /* BW, else B then W */
} tp_arg;

static void *tp_thread(void *p) {
    tp_arg *a = p;
    a->loss = run_step(&a->st, a->plan, a->tok, a->tgt, !a->fused);
    return NULL;
}

/* TP = tp on tp threads equals TP = 1. V = 13 does not divide by 2 or 4,
 * so the last ranks hold vocabulary padding (stage_params.h). */
static void check_tp_spec(spec s, int tp) {
    refrun rr;
    ref_run(&rr, s);
    s.tp = tp;
    zb_plan p;
    plan_build(&p, &s);
    zb_local_world *w;
    zb_err err;
    ck_assert_int_eq(zb_local_world_new(tp, 4, (size_t)s.B * s.T * s.C, 0, &w,
                                        &err), ZB_OK);
    tp_arg args[4];
    pthread_t th[4];
    zb_group g = {.id = 1, .n = tp, .first = 0, .stride = 1};
    for (int r = 0; r < tp; r++) {
        args[r] = (tp_arg){.plan = &p, .w = w, .g = g,
                           .rank = r, .tok = rr.tok, .tgt = rr.tgt};
        args[r].st = stage_make(&p, 0, r, zb_local_transport(w, r), &args[r].g);
    }
    for (int r = 0; r < tp; r++)
        ck_assert_int_eq(pthread_create(&th[r], NULL, tp_thread, &args[r]), 0);
    for (int r = 0; r < tp; r++) pthread_join(th[r], NULL);
    int *seen = calloc(rr.v.pt.floats, sizeof *seen);
    double sq = 0;
    for (int r = 0; r < tp; r++) {
        ck_assert_msg(fabs(args[r].loss - rr.loss) <= 1e-5 * rr.loss,
                      "loss %.9g vs %.9g", args[r].loss, rr.loss);
        view v = view_of(&p, args[r].st, 0, r);
        compare_view(&rr.v, &v, 1e-5, seen);
        zb_ptable_free(&v.pt);
        sq += zb_stage_grad_sumsq(args[r].st);
    }
    /* sharded tensors are covered once, replicated ones on every rank */
    for (int k = 0; k < rr.v.pt.n; k++) {
        const zb_ptensor *t = &rr.v.pt.t[k];
        bool sharded = t->id == ZB_T_QKVW || t->id == ZB_T_QKVB || t->id == ZB_T_PROJW ||
                       t->id == ZB_T_FCW || t->id == ZB_T_FCB || t->id == ZB_T_FC2W;
        if (t->layer < 0) sharded = t->id == ZB_T_WTE || t->id == ZB_T_LMHEAD;
        for (size_t i = 0; i < (size_t)t->rows * t->cols; i++)
            ck_assert_int_eq(seen[t->off + i], sharded ? 1 : tp);
    }
    double rsq = zb_stage_grad_sumsq(rr.st);
    ck_assert_msg(fabs(sq - rsq) <= 1e-5 * rsq, "sumsq %g vs %g", sq, rsq);
    free(seen);
    for (int r = 0; r < tp; r++) zb_stage_free(args[r].st);
    zb_local_world_free(w);
    plan_release(&p);
    ref_free(&rr);
}

static void check_tp(int tp, bool tied) {
    spec s = base_spec(2);
    s.NH = 4;
    s.C = 16;
    s.F = 24; /* Fl = 12 at tp 2 */
    s.tied = tied;
    check_tp_spec(s, tp);
}

START_TEST(test_tp2_equals_tp1) { check_tp(2, true); }
END_TEST

START_TEST(test_tp4_untied_vocab_padding) { check_tp(4, false); }
END_TEST

/* The logits' row stride padded as the CUDA ops pad it (ZB_LOGITS_ALIGN,
 * ops.h): the same loss and gradients bit for bit (the padding is never
 * read), on one stage and under TP 4 with vocabulary padding. */
START_TEST(test_padded_logits_stride) {
    spec s = base_spec(2);
    zb_plan p;
    plan_build(&p, &s);
    int tok[2 * 10], tgt[2 * 10];
    make_tokens(&s, tok, tgt);
    unsetenv("ZB_LOGITS_ALIGN");
    zb_stage *a = stage_make(&p, 0, 0, NULL, NULL);
    setenv("ZB_LOGITS_ALIGN", "128", 1);
    zb_stage *b = stage_make(&p, 0, 0, NULL, NULL);
    double la = run_step(&a, &p, tok, tgt, true);
    double lb = run_step(&b, &p, tok, tgt, true);
    ck_assert(la == lb);
    size_t n;
    float *ga = zb_stage_grads(a, &n), *gb = zb_stage_grads(b, &n);
    ck_assert_mem_eq(ga, gb, n * sizeof(float));
    ck_assert(zb_stage_grad_sumsq(b) > 0);
    /* the padded stage holds more activation memory (dlogits' padding) */
    ck_assert(zb_stage_act_peak_bytes(b) > zb_stage_act_peak_bytes(a));
    zb_stage_free(a);
    zb_stage_free(b);
    plan_release(&p);
    check_tp(4, false);
    unsetenv("ZB_LOGITS_ALIGN");
}
END_TEST

/* ---- (f) recompute: the same bits, less memory ---- */

typedef struct {
    zb_plan plan;
    zb_stage *st[MAXR];
    zb_local_world *w;
    tp_arg args[MAXR];
    double loss;
} layout_run;

/* One step of layout s (pp > 1 or tp > 1 on threads, not both) on the
 * tokens of s's reference. */
static void layout_step(layout_run *lr, const spec *s, const int *tok,
                        const int *tgt, bool split) {
    plan_build(&lr->plan, s);
    lr->w = NULL;
    if (s->tp == 1) {
        for (int r = 0; r < s->pp; r++)
            lr->st[r] = stage_make(&lr->plan, r, 0, NULL, NULL);
        lr->loss = run_step(lr->st, &lr->plan, tok, tgt, split);
        return;
    }
    zb_err err;
    ck_assert_int_eq(s->pp, 1);
    ck_assert_int_eq(zb_local_world_new(s->tp, 4, (size_t)s->B * s->T * s->C,
                                        0, &lr->w, &err), ZB_OK);
    zb_group g = {.id = 1, .n = s->tp, .first = 0, .stride = 1};
    pthread_t th[MAXR];
    for (int r = 0; r < s->tp; r++) {
        lr->args[r] = (tp_arg){.plan = &lr->plan, .w = lr->w, .g = g,
                               .rank = r, .tok = tok, .tgt = tgt};
        lr->st[r] = lr->args[r].st =
            stage_make(&lr->plan, 0, r, zb_local_transport(lr->w, r),
                       &lr->args[r].g);
    }
    for (int r = 0; r < s->tp; r++) {
        lr->args[r].fused = !split;
        ck_assert_int_eq(pthread_create(&th[r], NULL, tp_thread, &lr->args[r]), 0);
    }
    for (int r = 0; r < s->tp; r++) pthread_join(th[r], NULL);
    lr->loss = lr->args[0].loss;
}

static int layout_ranks(const spec *s) { return s->tp > 1 ? s->tp : s->pp; }

static void layout_free(layout_run *lr, const spec *s) {
    for (int r = 0; r < layout_ranks(s); r++) zb_stage_free(lr->st[r]);
    if (lr->w) zb_local_world_free(lr->w);
    plan_release(&lr->plan);
}

/* Highest activation peak over the layout's ranks. */
static double layout_peak(const layout_run *lr, const spec *s) {
    double pk = 0;
    for (int r = 0; r < layout_ranks(s); r++)
        pk = fmax(pk, zb_stage_act_peak_bytes(lr->st[r]));
    return pk;
}

/* Layout s with recompute none, selective and full: the same loss and
 * gradients bit for bit; the peak activation memory falls (fused BW: each
 * microbatch's rebuilt part lives only inside its BW). */
static void check_recompute(spec s) {
    size_t n = (size_t)s.m * s.B * s.T;
    int *tok = calloc(n, sizeof *tok), *tgt = calloc(n, sizeof *tgt);
    make_tokens(&s, tok, tgt);
    for (int split = 0; split < 2; split++) {
        layout_run lr[3];
        double peak[3];
        for (int k = 0; k < 3; k++) {
            spec sk = s;
            sk.rc = (zb_recompute)k; /* none, selective, full */
            layout_step(&lr[k], &sk, tok, tgt, split);
            peak[k] = layout_peak(&lr[k], &sk);
        }
        for (int k = 1; k < 3; k++) {
            ck_assert_msg(lr[k].loss == lr[0].loss, "recompute %d split %d: "
                          "loss %.9g vs %.9g", k, split, lr[k].loss, lr[0].loss);
            for (int r = 0; r < layout_ranks(&s); r++) {
                size_t n0, nk;
                float *g0 = zb_stage_grads(lr[0].st[r], &n0);
                float *gk = zb_stage_grads(lr[k].st[r], &nk);
                ck_assert_uint_eq(n0, nk);
                ck_assert_msg(memcmp(g0, gk, n0 * sizeof *g0) == 0,
                              "recompute %d split %d rank %d: gradients differ",
                              k, split, r);
                ck_assert(zb_stage_grad_sumsq(lr[k].st[r]) > 0 ||
                          s.tp > 1);
            }
        }
        ck_assert_msg(peak[1] < peak[0], "selective %g vs none %g", peak[1],
                      peak[0]);
        if (split) /* all B before any W: every rebuilt part is held */
            ck_assert_msg(peak[2] <= peak[1], "full %g vs selective %g",
                          peak[2], peak[1]);
        else
            ck_assert_msg(peak[2] < peak[1], "full %g vs selective %g",
                          peak[2], peak[1]);
        for (int k = 0; k < 3; k++) {
            spec sk = s;
            sk.rc = (zb_recompute)k;
            layout_free(&lr[k], &sk);
        }
    }
    free(tok);
    free(tgt);
}

START_TEST(test_recompute_pp1) { check_recompute(base_spec(3)); }
END_TEST

START_TEST(test_recompute_v_two_ranks) {
    spec s = base_spec(4);
    s.pp = 2;
    s.v = 2;
    s.pl = ZB_PLACE_V;
    for (int i = 0; i < 4; i++) s.split[i] = 1;
    check_recompute(s);
}
END_TEST

START_TEST(test_recompute_interleaved_empty) {
    spec s = base_spec(4);
    s.pp = 2;
    s.v = 2;
    s.split[0] = 2; /* rank 0: vstages 0 (2 layers), 2 (none); rank 1: 1, 3 */
    s.split[1] = 1;
    s.split[2] = 0;
    s.split[3] = 1;
    check_recompute(s);
}
END_TEST

START_TEST(test_recompute_tp2) {
    spec s = base_spec(2);
    s.NH = 4;
    s.C = 16;
    s.F = 24;
    s.tp = 2; /* V = 13: vocabulary padding on rank 1 */
    check_recompute(s);
}
END_TEST

/* ---- slots and pass order ---- */

START_TEST(test_slot_bound_and_order) {
    spec s = base_spec(1);
    zb_plan p;
    plan_build(&p, &s);
    /* 1F1B-like list on one rank: F0 BW0 F1 BW1 -> one slot */
    p.sched.len[0] = 0;
    zb_err err;
    for (int j = 0; j < 2; j++) {
        zb_schedule_push(&p.sched, 0, ZB_F, j, 0, &err);
        zb_schedule_push(&p.sched, 0, ZB_BW, j, 0, &err);
    }
    zb_stage *st = stage_make(&p, 0, 0, NULL, NULL);
    int tok[20], tgt[20];
    make_tokens(&s, tok, tgt);
    ck_assert_int_eq(zb_stage_backward_b(st, 0, 0, &err), ZB_ERUNTIME);
    ck_assert_ptr_nonnull(strstr(err.msg, "needs F first"));
    ck_assert_int_eq(zb_stage_forward(st, 0, 0, tok, tgt, 0.1f, &err), ZB_OK);
    ck_assert_int_eq(zb_stage_forward(st, 0, 0, tok, tgt, 0.1f, &err), ZB_ERUNTIME);
    ck_assert_int_eq(zb_stage_forward(st, 0, 1, tok, tgt, 0.1f, &err), ZB_ERUNTIME);
    ck_assert_str_eq(err.msg, "no free activation slot on chunk 0 for mb 1 "
                              "(the plan allows 1 in flight)");
    ck_assert_ptr_null(zb_stage_act_in(st, 0, 1));
    ck_assert_int_eq(zb_stage_backward_w(st, 0, 0, &err), ZB_ERUNTIME);
    ck_assert_ptr_nonnull(strstr(err.msg, "needs B first"));
    double one = zb_stage_act_peak_bytes(st);
    ck_assert(one > 0);
    ck_assert_int_eq(zb_stage_backward_bw(st, 0, 0, &err), ZB_OK);
    ck_assert_int_eq(zb_stage_forward(st, 0, 1, tok, tgt, 0.1f, &err), ZB_OK);
    ck_assert_int_eq(zb_stage_backward_bw(st, 0, 1, &err), ZB_OK);
    ck_assert(zb_stage_act_peak_bytes(st) == one);
    ck_assert_int_eq(zb_stage_forward(st, 0, 2, tok, tgt, 0.1f, &err), ZB_ERUNTIME);
    int bad[10];
    memcpy(bad, tok, sizeof bad);
    bad[3] = s.V;
    ck_assert_int_eq(zb_stage_forward(st, 0, 0, bad, tgt, 0.1f, &err), ZB_ERUNTIME);
    ck_assert_ptr_nonnull(strstr(err.msg, "tokens[3]"));
    zb_stage_free(st);

    /* the all-F-first list keeps two in flight: twice the peak */
    plan_release(&p);
    plan_build(&p, &s);
    st = stage_make(&p, 0, 0, NULL, NULL);
    int tok2[20], tgt2[20];
    make_tokens(&s, tok2, tgt2);
    run_step(&st, &p, tok2, tgt2, true);
    ck_assert(zb_stage_act_peak_bytes(st) == 2 * one);
    size_t n;
    zb_stage_params(st, &n);
    ck_assert(zb_stage_static_bytes(st) == 16.0 * (double)n);
    zb_stage_free(st);
    plan_release(&p);
}
END_TEST

START_TEST(test_bad_shapes) {
    spec s = base_spec(1);
    s.tp = 2;
    s.NH = 1; /* not divisible by tp */
    zb_plan p;
    plan_build(&p, &s);
    zb_local_world *w;
    zb_err err;
    ck_assert_int_eq(zb_local_world_new(2, 2, 16, 0, &w, &err), ZB_OK);
    zb_group g = {.id = 1, .n = 2, .first = 0, .stride = 1};
    zb_stage_cfg cfg = {.plan = &p, .tr = zb_local_transport(w, 0), .tp_group = &g};
    zb_stage *st = (zb_stage *)1;
    ck_assert_int_eq(zb_stage_new(&cfg, &st, &err), ZB_EINPUT);
    ck_assert_ptr_null(st);
    ck_assert_ptr_nonnull(strstr(err.msg, "tp=2 must divide heads (1)"));
    cfg.tr = NULL;
    ck_assert_int_eq(zb_stage_new(&cfg, &st, &err), ZB_EINPUT);
    zb_local_world_free(w);
    plan_release(&p);
}
END_TEST

/* ---- optimizer, norm, checkpoint ---- */

START_TEST(test_adamw_by_hand) {
    spec s = base_spec(1);
    zb_plan p;
    plan_build(&p, &s);
    zb_stage *st = stage_make(&p, 0, 0, NULL, NULL);
    zb_ptable pt;
    zb_err err;
    ck_assert_int_eq(zb_ptable_build(&pt, &p, 0, 0, &err), ZB_OK);
    size_t n;
    float *w = zb_stage_params(st, &n), *g = zb_stage_grads(st, &n);
    float *w0 = malloc(n * sizeof *w0);
    for (size_t i = 0; i < n; i++) g[i] = 0.01f * (float)((int)(i % 7) - 3);
    memcpy(w0, w, n * sizeof *w0);
    const float lr = 0.01f, gs = 0.5f;
    ck_assert_int_eq(zb_stage_adamw(st, lr, gs, 1, &err), ZB_OK);
    /* t = 1: mhat = g', vhat = g'^2 with g' = gs * g, so the step is
     * lr * (g' / (|g'| + eps) + wd * w) (wd only on matrices/tables) */
    for (int k = 0; k < pt.n; k++) {
        const zb_ptensor *t = &pt.t[k];
        bool decay = t->id == ZB_T_WTE || t->id == ZB_T_WPE;
        if (t->layer >= 0)
            decay = t->id == ZB_T_QKVW || t->id == ZB_T_PROJW ||
                    t->id == ZB_T_FCW || t->id == ZB_T_FC2W;
        for (size_t i = t->off; i < t->off + (size_t)t->rows * t->cols; i++) {
            double gp = (double)gs * g[i];
            double want = w0[i] - lr * (gp / (fabs(gp) + 1e-8) + (decay ? 0.1 * w0[i] : 0));
            ck_assert_msg(fabs(w[i] - want) < 1e-6, "%s [%zu]: %g vs %g",
                          t->name, i - t->off, w[i], want);
        }
    }
    ck_assert_int_eq(zb_stage_adamw(st, lr, gs, 0, &err), ZB_ERUNTIME);
    free(w0);
    zb_ptable_free(&pt);
    zb_stage_free(st);
    plan_release(&p);
}
END_TEST

START_TEST(test_grad_sumsq_dp) {
    spec s = base_spec(1);
    zb_plan p;
    plan_build(&p, &s);
    p.dp = 2;
    zb_stage_cfg cfg = {.plan = &p, .dp_rank = 1};
    zb_stage *st;
    zb_err err;
    ck_assert_int_eq(zb_stage_new(&cfg, &st, &err), ZB_OK);
    size_t n;
    float *g = zb_stage_grads(st, &n);
    for (size_t i = 0; i < n; i++) g[i] = 1.0f;
    ck_assert(zb_stage_grad_sumsq(st) == 0.0); /* dp rank 0 counts */
    zb_stage_free(st);
    cfg.dp_rank = 0;
    ck_assert_int_eq(zb_stage_new(&cfg, &st, &err), ZB_OK);
    g = zb_stage_grads(st, &n);
    for (size_t i = 0; i < n; i++) g[i] = 1.0f;
    ck_assert(zb_stage_grad_sumsq(st) == (double)n);
    zb_stage_free(st);
    plan_release(&p);
}
END_TEST

START_TEST(test_checkpoint) {
    spec s = base_spec(2);
    zb_plan p;
    plan_build(&p, &s);
    zb_stage *st = stage_make(&p, 0, 0, NULL, NULL);
    int tok[20], tgt[20];
    make_tokens(&s, tok, tgt);
    run_step(&st, &p, tok, tgt, true);
    zb_err err;
    ck_assert_int_eq(zb_stage_adamw(st, 1e-2f, 1.0f, 1, &err), ZB_OK);
    size_t n;
    float *w = zb_stage_params(st, &n);
    float *saved = malloc(n * sizeof *saved);
    memcpy(saved, w, n * sizeof *saved);
    FILE *f = tmpfile();
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(zb_stage_save(st, f, &err), ZB_OK);
    /* one more identical step from the checkpoint must match */
    run_step(&st, &p, tok, tgt, true);
    ck_assert_int_eq(zb_stage_adamw(st, 1e-2f, 1.0f, 2, &err), ZB_OK);
    float *after = malloc(n * sizeof *after);
    memcpy(after, w, n * sizeof *after);
    rewind(f);
    zb_stage *st2 = stage_make(&p, 0, 0, NULL, NULL);
    ck_assert_int_eq(zb_stage_load(st2, f, &err), ZB_OK);
    float *w2 = zb_stage_params(st2, &n);
    ck_assert_mem_eq(w2, saved, n * sizeof *saved);
    run_step(&st2, &p, tok, tgt, true);
    ck_assert_int_eq(zb_stage_adamw(st2, 1e-2f, 1.0f, 2, &err), ZB_OK);
    ck_assert_mem_eq(w2, after, n * sizeof *after);
    /* a stage of another shape refuses it */
    spec s3 = base_spec(3);
    zb_plan p3;
    plan_build(&p3, &s3);
    zb_stage *st3 = stage_make(&p3, 0, 0, NULL, NULL);
    rewind(f);
    ck_assert_int_eq(zb_stage_load(st3, f, &err), ZB_EINPUT);
    ck_assert_ptr_nonnull(strstr(err.msg, "parameters"));
    /* garbage */
    FILE *g = tmpfile();
    fputs("this is not a checkpoint at all, no", g);
    rewind(g);
    ck_assert_int_eq(zb_stage_load(st2, g, &err), ZB_EINPUT);
    ck_assert_ptr_nonnull(strstr(err.msg, "magic"));
    fclose(g);
    fclose(f);
    free(saved);
    free(after);
    zb_stage_free(st);
    zb_stage_free(st2);
    zb_stage_free(st3);
    plan_release(&p);
    plan_release(&p3);
}
END_TEST

/* Init statistics: GPT-2 stds and LayerNorm constants, and a different
 * seed gives a different model. */
START_TEST(test_init) {
    spec s = base_spec(2);
    s.C = 32;
    s.F = 64;
    s.V = 97;
    zb_plan p;
    plan_build(&p, &s);
    zb_ptable pt;
    zb_err err;
    ck_assert_int_eq(zb_ptable_build(&pt, &p, 0, 0, &err), ZB_OK);
    float *w = malloc(pt.floats * sizeof *w), *w2 = malloc(pt.floats * sizeof *w2);
    zb_ptable_init(&pt, w, 1234);
    zb_ptable_init(&pt, w2, 1235);
    for (int k = 0; k < pt.n; k++) {
        const zb_ptensor *t = &pt.t[k];
        size_t n = (size_t)t->rows * t->cols;
        const float *x = w + t->off;
        if (t->std <= 0) {
            for (size_t i = 0; i < n; i++) ck_assert(x[i] == t->value);
            continue;
        }
        double want = (t->id == ZB_T_PROJW || t->id == ZB_T_FC2W) && t->layer >= 0
                          ? 0.02 / sqrt(2.0 * s.layers) : 0.02;
        double sum = 0, sq = 0;
        for (size_t i = 0; i < n; i++) {
            sum += x[i];
            sq += (double)x[i] * x[i];
        }
        double mean = sum / n, sd = sqrt(sq / n - mean * mean);
        ck_assert_msg(fabs(sd - want) < 0.12 * want && fabs(mean) < 0.15 * want,
                      "%s: mean %g sd %g (want sd %g)", t->name, mean, sd, want);
        ck_assert(memcmp(x, w2 + t->off, n * sizeof *x) != 0);
    }
    free(w);
    free(w2);
    zb_ptable_free(&pt);
    plan_release(&p);
}
END_TEST

/* ---- (g) bf16 activation storage: the CPU test hook ZB_ACT_BF16=1
 * (ops.h) runs the stage program's bf16 orchestration (element sizes,
 * strides, casts, half-size messages) with bf16 buffers ---- */

/* kernels/bf16.h, the bf16 test ops' rounding: to nearest, ties to even,
 * overflow to infinity, NaN kept, widening exact. */
START_TEST(test_bf16_rounding) {
    float one = 1.0f, tie_lo = 1.0f + 0x1p-8f, tie_hi = 1.0f + 3 * 0x1p-8f;
    float above = 1.0f + 0x1p-8f + 0x1p-20f;
    ck_assert(zb_bf16_to_f32(zb_bf16_from_f32(one)) == 1.0f);
    ck_assert(zb_bf16_to_f32(zb_bf16_from_f32(tie_lo)) == 1.0f); /* even */
    ck_assert(zb_bf16_to_f32(zb_bf16_from_f32(tie_hi)) == 1.0f + 0x1p-6f);
    ck_assert(zb_bf16_to_f32(zb_bf16_from_f32(above)) == 1.0f + 0x1p-7f);
    ck_assert(zb_bf16_to_f32(zb_bf16_from_f32(-tie_lo)) == -1.0f);
    ck_assert(isinf(zb_bf16_to_f32(zb_bf16_from_f32(3.4e38f))));
    ck_assert(isnan(zb_bf16_to_f32(zb_bf16_from_f32(NAN))));
    ck_assert(signbit(zb_bf16_to_f32(zb_bf16_from_f32(-0.0f))));
    for (uint32_t h = 0; h < 0x7f80; h += 37) /* every finite bf16 is exact */
        ck_assert_uint_eq(zb_bf16_from_f32(zb_bf16_to_f32((uint16_t)h)), h);
}
END_TEST

static size_t al(size_t bytes, size_t a) { return (bytes + a - 1) / a * a; }

/* The activation peak of spec s on one rank (pp 1, tp 1) under the
 * all-F-then-B-then-W list (all m microbatches held), from gpt.h's table
 * alone: activations es bytes an element, LayerNorm statistics fp32, every
 * buffer aligned to a bytes; the CPU attention keeps its probabilities
 * [B, NH, T, T] as activations (recompute none only). */
static double expect_peak(const spec *s, size_t es, size_t a) {
    size_t N = (size_t)s->B * s->T, C = s->C, L = s->layers;
    size_t nc = al(N * C * es, a), stat = al(N * sizeof(float), a);
    size_t qkv = al(3 * N * C * es, a), nf = al(N * s->F * es, a);
    size_t att = s->rc == ZB_RECOMPUTE_NONE
                     ? al((size_t)s->B * s->NH * s->T * s->T * es, a)
                     : 0;
    /* ln1 atty res2 ln2, 2 x (mean, rstd), qkv, att, fch fch_gelu; then
     * dres2 dln2 dln1, dqkv, dfch */
    size_t layer = 4 * nc + 4 * stat + qkv + att + 2 * nf + 3 * nc + qkv + nf;
    /* lnf dlnf, its statistics, dlogits [N, V] */
    size_t head = 2 * nc + 2 * stat + al(N * s->V * es, a);
    size_t fpart = (L + 1) * nc + nc + head + N * sizeof(int); /* + tokens */
    size_t bpart = L * nc + L * layer; /* dresid, blocks */
    return (double)s->m * (double)(fpart + bpart);
}

/* A layout of spec s run for `steps` steps (AdamW between them) with fp32
 * or bf16 activations; loss[t] of each. */
typedef struct {
    layout_run lr;
    double loss[4];
} bf_run;

static void layout_again(layout_run *lr, const spec *s, bool split) {
    if (s->tp == 1) {
        lr->loss = run_step(lr->st, &lr->plan, lr->args[0].tok,
                            lr->args[0].tgt, split);
        return;
    }
    pthread_t th[MAXR];
    for (int r = 0; r < s->tp; r++)
        ck_assert_int_eq(pthread_create(&th[r], NULL, tp_thread, &lr->args[r]), 0);
    for (int r = 0; r < s->tp; r++) pthread_join(th[r], NULL);
    lr->loss = lr->args[0].loss;
}

static void bf_layout(bf_run *b, const spec *s, bool bf16, const int *tok,
                      const int *tgt, bool split, int steps) {
    if (bf16) setenv("ZB_ACT_BF16", "1", 1);
    layout_step(&b->lr, s, tok, tgt, split);
    unsetenv("ZB_ACT_BF16");
    b->lr.args[0].tok = tok; /* for layout_again at tp 1 */
    b->lr.args[0].tgt = tgt;
    b->loss[0] = b->lr.loss;
    zb_err err;
    for (int t = 1; t < steps; t++) {
        if (s->tp == 1) sync_tied(b->lr.st, s->pp);
        for (int r = 0; r < layout_ranks(s); r++)
            ck_assert_msg(zb_stage_adamw(b->lr.st[r], 1e-2f, 1.0f, t, &err) ==
                          ZB_OK, "%s", err.msg);
        layout_again(&b->lr, s, split);
        b->loss[t] = b->lr.loss;
    }
}

/* Largest |a - b| of rank r's gradients over the largest |b|. */
static double grad_rel_diff(zb_stage *a, zb_stage *b) {
    size_t na, nb;
    float *ga = zb_stage_grads(a, &na), *gb = zb_stage_grads(b, &nb);
    ck_assert_uint_eq(na, nb);
    double d = 0, mx = 0;
    for (size_t i = 0; i < na; i++) {
        d = fmax(d, fabs((double)ga[i] - gb[i]));
        mx = fmax(mx, fabs((double)gb[i]));
    }
    return mx > 0 ? d / mx : d;
}

/* Layout s, 3 steps, with fp32 and twice with bf16 activations: bf16 is
 * deterministic (bit for bit twice), differs from fp32 (so it did store
 * bf16) by less than bf16 rounding explains (losses 1e-3 relative,
 * gradients 5e-2 of the largest, 1e-1 for a Llama block), and a
 * pipeline layout gives the bf16 one-stage run's first loss exactly (a
 * message of the wrong size or a stride in floats would not). */
static void check_bf16(spec s, bool split) {
    enum { STEPS = 3 };
    size_t n = (size_t)s.m * s.B * s.T;
    int *tok = calloc(n, sizeof *tok), *tgt = calloc(n, sizeof *tgt);
    make_tokens(&s, tok, tgt);
    bf_run f, a, b, one;
    bf_layout(&f, &s, false, tok, tgt, split, STEPS);
    bf_layout(&a, &s, true, tok, tgt, split, STEPS);
    bf_layout(&b, &s, true, tok, tgt, split, STEPS);
    spec s1 = s;
    s1.pp = s1.v = s1.tp = 1;
    s1.pl = ZB_PLACE_LOOP;
    memset(s1.split, 0, sizeof s1.split);
    s1.split[0] = s.layers;
    bf_layout(&one, &s1, true, tok, tgt, split, 1);
    bool differs = false;
    for (int t = 0; t < STEPS; t++) {
        ck_assert_msg(a.loss[t] == b.loss[t], "step %d: bf16 loss %.9g then "
                      "%.9g", t, a.loss[t], b.loss[t]);
        double rel = fabs(a.loss[t] - f.loss[t]) / f.loss[t];
        ck_assert_msg(rel < 1e-3, "step %d: bf16 loss %.9g, fp32 %.9g", t,
                      a.loss[t], f.loss[t]);
        differs |= rel > 0;
    }
    double rel1 = fabs(a.loss[0] - one.loss[0]) / one.loss[0];
    ck_assert_msg(s.tp > 1 ? rel1 < 1e-5 : rel1 == 0, "bf16 layout loss %.9g, "
                  "one stage %.9g", a.loss[0], one.loss[0]);
    for (int r = 0; r < layout_ranks(&s); r++) {
        size_t na, nb;
        float *pa = zb_stage_params(a.lr.st[r], &na);
        float *pb = zb_stage_params(b.lr.st[r], &nb);
        ck_assert(na == nb && memcmp(pa, pb, na * sizeof *pa) == 0);
        ck_assert_double_eq(grad_rel_diff(a.lr.st[r], b.lr.st[r]), 0);
        double g = grad_rel_diff(a.lr.st[r], f.lr.st[r]);
        if (getenv("ZB_TEST_VERBOSE")) fprintf(stderr, "bf16 grad off %g\n", g);
        /* a Llama block rounds more intermediates to bf16 (q, k turned by
         * RoPE, dqkv turned back, W1|W3's output before the gate) */
        ck_assert_msg(g < (s.llama ? 1e-1 : 5e-2), "rank %d: bf16 gradients "
                      "off fp32 by %.3g of the largest", r, g);
        differs |= g > 0;
        ck_assert_uint_eq(zb_stage_msg_floats(a.lr.st[r]),
                          (size_t)s.B * s.T * s.C / 2);
    }
    ck_assert_msg(differs, "bf16 storage gave the fp32 results");
    bf_run *all[] = {&f, &a, &b};
    for (int k = 0; k < 3; k++) layout_free(&all[k]->lr, &s);
    layout_free(&one.lr, &s1);
    free(tok);
    free(tgt);
}

START_TEST(test_bf16_pp1) { check_bf16(base_spec(3), true); }
END_TEST

START_TEST(test_bf16_v_two_ranks) { /* zb-v's placement */
    spec s = base_spec(4);
    s.pp = 2;
    s.v = 2;
    s.pl = ZB_PLACE_V;
    for (int i = 0; i < 4; i++) s.split[i] = 1;
    check_bf16(s, true);
    check_bf16(s, false);
}
END_TEST

START_TEST(test_bf16_interleaved) {
    spec s = base_spec(4);
    s.pp = 2;
    s.v = 2;
    for (int i = 0; i < 4; i++) s.split[i] = 1;
    check_bf16(s, true);
}
END_TEST

START_TEST(test_bf16_tp2_vocab_padding) {
    spec s = base_spec(2);
    s.NH = 4;
    s.C = 16;
    s.F = 24;
    s.tp = 2; /* V = 13: vocabulary padding on rank 1 */
    check_bf16(s, true);
    s.tied = false;
    check_bf16(s, false);
}
END_TEST

/* Recompute selective and full under bf16: recompute none's bits, less
 * memory (check_recompute), on one stage, zb-v's placement and TP 2. */
START_TEST(test_bf16_recompute) {
    setenv("ZB_ACT_BF16", "1", 1);
    check_recompute(base_spec(3));
    spec s = base_spec(4);
    s.pp = 2;
    s.v = 2;
    s.pl = ZB_PLACE_V;
    for (int i = 0; i < 4; i++) s.split[i] = 1;
    check_recompute(s);
    s = base_spec(2);
    s.NH = 4;
    s.C = 16;
    s.F = 24;
    s.tp = 2;
    check_recompute(s);
    unsetenv("ZB_ACT_BF16");
}
END_TEST

/* The bytes a bf16 stage holds: its activation peak is exactly what the
 * carve of gpt.h's table gives with 2-byte elements and 16-byte
 * alignment (and the fp32 stage's with 4 and 4), for every recompute
 * setting; bf16 is under 60% of fp32 on these small shapes (the fp32
 * statistics and the alignment keep it above half); the static bytes hold
 * the GEMMs' bf16 copy of the weights (2 more bytes a parameter). */
START_TEST(test_bf16_bytes) {
    for (int rc = 0; rc < 3; rc++) {
        spec s = base_spec(2);
        s.rc = (zb_recompute)rc;
        size_t n = (size_t)s.m * s.B * s.T;
        int *tok = calloc(n, sizeof *tok), *tgt = calloc(n, sizeof *tgt);
        make_tokens(&s, tok, tgt);
        bf_run f, b;
        bf_layout(&f, &s, false, tok, tgt, true, 1);
        bf_layout(&b, &s, true, tok, tgt, true, 1);
        double pf = zb_stage_act_peak_bytes(f.lr.st[0]);
        double pb = zb_stage_act_peak_bytes(b.lr.st[0]);
        ck_assert_msg(pf == expect_peak(&s, 4, 4), "recompute %d fp32: peak %g, "
                      "expected %g", rc, pf, expect_peak(&s, 4, 4));
        ck_assert_msg(pb == expect_peak(&s, 2, 16), "recompute %d bf16: peak "
                      "%g, expected %g", rc, pb, expect_peak(&s, 2, 16));
        ck_assert_msg(pb < 0.6 * pf, "recompute %d: bf16 %g, fp32 %g", rc, pb,
                      pf);
        size_t np;
        zb_stage_params(b.lr.st[0], &np);
        ck_assert(zb_stage_static_bytes(f.lr.st[0]) == 16.0 * (double)np);
        ck_assert(zb_stage_static_bytes(b.lr.st[0]) == 18.0 * (double)np);
        layout_free(&f.lr, &s);
        layout_free(&b.lr, &s);
        free(tok);
        free(tgt);
    }
}
END_TEST

/* ---- (h) Llama-shaped blocks: GQA, RoPE, SwiGLU, RMSNorm, no biases,
 * untied head, no position table ---- */

/* Heads 4 of head size 4 over 2 kv heads, F 24 (Fl 12 at tp 2). */
static spec llama_spec(int layers) {
    spec s = base_spec(layers);
    s.llama = true;
    s.tied = false;
    s.NH = 4;
    s.C = 16;
    s.F = 24;
    return s;
}

/* Parameter (layer, id) of a tp 1, pp 1 stage's buffer (full tensor). */
static const float *ref_tensor(const zb_ptable *pt, const float *w,
                               int layer, int id) {
    int k = zb_ptable_find(pt, layer, id, false);
    ck_assert_int_ge(k, 0);
    return w + pt->t[k].off;
}

/* y[o] = sum_i W[o, i] x[i], W [O, I] */
static void ref_matvec(double *y, const float *W, const double *x, int O,
                       int I) {
    for (int o = 0; o < O; o++) {
        double acc = 0;
        for (int i = 0; i < I; i++) acc += (double)W[(size_t)o * I + i] * x[i];
        y[o] = acc;
    }
}

static void ref_rms(double *y, const double *x, const float *g, int C) {
    double ms = 0;
    for (int c = 0; c < C; c++) ms += x[c] * x[c];
    double r = 1.0 / sqrt(ms / C + 1e-5);
    for (int c = 0; c < C; c++) y[c] = x[c] * r * g[c];
}

/* RoPE on one head vector at position t: pairs (2i, 2i+1) turn by
 * t * theta^(-2i/hs). */
static void ref_rope(double *v, int t, int hs, double theta) {
    for (int i = 0; i < hs / 2; i++) {
        double a = t * pow(theta, -2.0 * i / hs), x0 = v[2 * i],
               x1 = v[2 * i + 1];
        v[2 * i] = x0 * cos(a) - x1 * sin(a);
        v[2 * i + 1] = x0 * sin(a) + x1 * cos(a);
    }
}

/* One sequence's blocks, written out plainly in double: h [T, C] in place. */
static void ref_llama_block(const zb_ptable *pt, const float *w, int l,
                            const spec *sp, double *h) {
    int T = sp->T, C = sp->C, NH = sp->NH, KV = NH / 2, hs = C / NH,
        F = sp->F, Q = C + 2 * KV * hs;
    double *x = calloc((size_t)C, sizeof *x), *qkv = calloc((size_t)T * Q, 8),
           *att = calloc((size_t)T * C, 8), *o = calloc((size_t)C, 8),
           *ab = calloc(2 * (size_t)F, 8), *g = calloc((size_t)F, 8);
    for (int t = 0; t < T; t++) {
        ref_rms(x, h + (size_t)t * C, ref_tensor(pt, w, l, ZB_T_LN1W), C);
        double *r = qkv + (size_t)t * Q;
        ref_matvec(r, ref_tensor(pt, w, l, ZB_T_QKVW), x, Q, C);
        for (int hh = 0; hh < NH + KV; hh++)
            ref_rope(r + hh * hs, t, hs, 10000.0);
    }
    for (int t = 0; t < T; t++)
        for (int hh = 0; hh < NH; hh++) {
            int kh = hh / (NH / KV); /* the kv head of query head hh */
            double sc[64], mx = -1e300, sum = 0;
            for (int u = 0; u <= t; u++) {
                double d = 0;
                for (int i = 0; i < hs; i++)
                    d += qkv[(size_t)t * Q + hh * hs + i] *
                         qkv[(size_t)u * Q + C + kh * hs + i];
                sc[u] = d / sqrt((double)hs);
                mx = fmax(mx, sc[u]);
            }
            for (int u = 0; u <= t; u++) sum += (sc[u] = exp(sc[u] - mx));
            for (int i = 0; i < hs; i++) {
                double acc = 0;
                for (int u = 0; u <= t; u++)
                    acc += sc[u] / sum *
                           qkv[(size_t)u * Q + C + KV * hs + kh * hs + i];
                att[(size_t)t * C + hh * hs + i] = acc;
            }
        }
    for (int t = 0; t < T; t++) {
        double *ht = h + (size_t)t * C;
        ref_matvec(o, ref_tensor(pt, w, l, ZB_T_PROJW), att + (size_t)t * C,
                   C, C);
        for (int c = 0; c < C; c++) ht[c] += o[c];
        ref_rms(x, ht, ref_tensor(pt, w, l, ZB_T_LN2W), C);
        ref_matvec(ab, ref_tensor(pt, w, l, ZB_T_FCW), x, 2 * F, C);
        for (int f = 0; f < F; f++) /* silu(W1 x) * (W3 x) */
            g[f] = ab[f] / (1.0 + exp(-ab[f])) * ab[F + f];
        ref_matvec(o, ref_tensor(pt, w, l, ZB_T_FC2W), g, C, F);
        for (int c = 0; c < C; c++) ht[c] += o[c];
    }
    free(x), free(qkv), free(att), free(o), free(ab), free(g);
}

/* Mean loss of the microbatch tok/tgt [B*T] under parameters w. */
static double ref_llama_loss(const zb_ptable *pt, const float *w,
                             const spec *sp, const int *tok, const int *tgt) {
    int T = sp->T, C = sp->C, V = sp->V;
    double *h = calloc((size_t)T * C, sizeof *h), *x = calloc((size_t)C, 8),
           *z = calloc((size_t)V, 8), loss = 0;
    const float *wte = ref_tensor(pt, w, -1, ZB_T_WTE);
    const float *head = ref_tensor(pt, w, -1, ZB_T_LMHEAD);
    for (int b = 0; b < sp->B; b++) {
        for (int t = 0; t < T; t++)
            for (int c = 0; c < C; c++)
                h[(size_t)t * C + c] = wte[(size_t)tok[b * T + t] * C + c];
        for (int l = 0; l < sp->layers; l++) ref_llama_block(pt, w, l, sp, h);
        for (int t = 0; t < T; t++) {
            ref_rms(x, h + (size_t)t * C, ref_tensor(pt, w, -1, ZB_T_LNFW), C);
            ref_matvec(z, head, x, V, C);
            double mx = -1e300, sum = 0;
            for (int v = 0; v < V; v++) mx = fmax(mx, z[v]);
            for (int v = 0; v < V; v++) sum += exp(z[v] - mx);
            loss += log(sum) + mx - z[tgt[b * T + t]];
        }
    }
    free(h), free(x), free(z);
    return loss / (sp->B * T);
}

/* A single-rank Llama step's loss equals the plain double reference, the
 * parameters perturbed so that every part of the block matters. */
START_TEST(test_llama_reference) {
    spec s = llama_spec(2);
    s.m = 1;
    zb_plan p;
    plan_build(&p, &s);
    zb_stage *st = stage_make(&p, 0, 0, NULL, NULL);
    size_t n;
    float *w = zb_stage_params(st, &n);
    uint32_t x = 99;
    for (size_t i = 0; i < n; i++) {
        x = x * 1664525u + 1013904223u;
        w[i] += 0.3f * ((float)(x >> 8) / 16777216.0f - 0.5f);
    }
    int tok[2 * 5], tgt[2 * 5];
    make_tokens(&s, tok, tgt);
    double loss = run_step(&st, &p, tok, tgt, true);
    zb_ptable pt;
    zb_err err;
    ck_assert_int_eq(zb_ptable_build(&pt, &p, 0, 0, &err), ZB_OK);
    ck_assert_int_eq(zb_ptable_find(&pt, -1, ZB_T_WPE, false), -1);
    double ref = ref_llama_loss(&pt, w, &s, tok, tgt);
    ck_assert_msg(fabs(loss - ref) <= 1e-5 * ref, "loss %.9g, reference %.9g",
                  loss, ref);
    ck_assert(fabs(loss - log(13.0)) > 1e-2); /* not a uniform guess */
    zb_ptable_free(&pt);
    zb_stage_free(st);
    plan_release(&p);
}
END_TEST

START_TEST(test_llama_finite_differences) { fd_check_spec(llama_spec(2), false); }
END_TEST

START_TEST(test_llama_pipelines) {
    spec s = llama_spec(3);
    s.pp = 2;
    s.split[0] = 2;
    s.split[1] = 1;
    check_pipeline(s, 0);
    s = llama_spec(4);
    s.pp = 2;
    s.v = 2;
    s.pl = ZB_PLACE_V;
    for (int i = 0; i < 4; i++) s.split[i] = 1;
    check_pipeline(s, 0);
}
END_TEST

START_TEST(test_llama_tp2) { check_tp_spec(llama_spec(2), 2); }
END_TEST

START_TEST(test_llama_recompute) {
    check_recompute(llama_spec(3));
    spec s = llama_spec(2);
    s.tp = 2;
    check_recompute(s);
}
END_TEST

START_TEST(test_llama_bf16) {
    check_bf16(llama_spec(3), true);
    spec s = llama_spec(2);
    s.tp = 2;
    check_bf16(s, false);
}
END_TEST

/* tp must divide kv_heads: 2 kv heads over 4 TP ranks is refused. */
START_TEST(test_llama_tp_kv_heads) {
    spec s = llama_spec(1);
    s.tp = 4;
    zb_plan p;
    plan_build(&p, &s);
    zb_local_world *w;
    zb_err err;
    ck_assert_int_eq(zb_local_world_new(4, 2, 16, 0, &w, &err), ZB_OK);
    zb_group g = {.id = 1, .n = 4, .first = 0, .stride = 1};
    zb_stage_cfg cfg = {.plan = &p, .tr = zb_local_transport(w, 0), .tp_group = &g};
    zb_stage *st = (zb_stage *)1;
    ck_assert_int_eq(zb_stage_new(&cfg, &st, &err), ZB_EINPUT);
    ck_assert_ptr_null(st);
    ck_assert_msg(strstr(err.msg, "tp=4 must divide kv_heads (2)"), "%s", err.msg);
    zb_local_world_free(w);
    plan_release(&p);
}
END_TEST

static Suite *stage_suite(void) {
    Suite *s = suite_create("stage");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_finite_differences_tied);
    tcase_add_test(tc, test_finite_differences_untied);
    tcase_add_test(tc, test_split_equals_fused);
    tcase_add_test(tc, test_warmup_changes_nothing);
    tcase_add_test(tc, test_pp2_tied);
    tcase_add_test(tc, test_pp2_untied_uneven);
    tcase_add_test(tc, test_pp3_empty_middle_head_only);
    tcase_add_test(tc, test_interleaved);
    tcase_add_test(tc, test_v_one_rank);
    tcase_add_test(tc, test_v_two_ranks);
    tcase_add_test(tc, test_tp2_equals_tp1);
    tcase_add_test(tc, test_tp4_untied_vocab_padding);
    tcase_add_test(tc, test_padded_logits_stride);
    tcase_add_test(tc, test_recompute_pp1);
    tcase_add_test(tc, test_recompute_v_two_ranks);
    tcase_add_test(tc, test_recompute_interleaved_empty);
    tcase_add_test(tc, test_recompute_tp2);
    tcase_add_test(tc, test_slot_bound_and_order);
    tcase_add_test(tc, test_bad_shapes);
    tcase_add_test(tc, test_adamw_by_hand);
    tcase_add_test(tc, test_grad_sumsq_dp);
    tcase_add_test(tc, test_checkpoint);
    tcase_add_test(tc, test_init);
    tcase_add_test(tc, test_bf16_rounding);
    tcase_add_test(tc, test_bf16_bytes);
    tcase_add_test(tc, test_bf16_pp1);
    tcase_add_test(tc, test_bf16_v_two_ranks);
    tcase_add_test(tc, test_bf16_interleaved);
    tcase_add_test(tc, test_bf16_tp2_vocab_padding);
    tcase_add_test(tc, test_bf16_recompute);
    tcase_add_test(tc, test_llama_reference);
    tcase_add_test(tc, test_llama_finite_differences);
    tcase_add_test(tc, test_llama_pipelines);
    tcase_add_test(tc, test_llama_tp2);
    tcase_add_test(tc, test_llama_recompute);
    tcase_add_test(tc, test_llama_bf16);
    tcase_add_test(tc, test_llama_tp_kv_heads);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    SRunner *sr = srunner_create(stage_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
