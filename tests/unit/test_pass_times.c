/* test_pass_times.c - measured pass times per virtual stage: means over
 * the traced steps (the run's first step left out) and over the dp x tp
 * ranks of a pipeline rank, against hand-made timelines. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "executor/report/pass_times.h"

/* pp = 2, dp = 2 (world 4), m = 2, split B/W lists "F0 F1 B0 W0 B1 W1" on
 * both pipeline ranks (validity is not this module's concern). */
static void make_plan(zb_plan *pl) {
    zb_err err;
    memset(pl, 0, sizeof *pl);
    pl->dp = 2;
    pl->tp = 1;
    pl->m = 2;
    ck_assert_int_eq(zb_plan_alloc(pl, 2, 1, &err), ZB_OK);
    ck_assert_int_eq(zb_schedule_init(&pl->sched, "t", 2, 2, 1, ZB_PLACE_LOOP, 0, &err),
                     ZB_OK);
    const zb_pass kinds[6] = {ZB_F, ZB_F, ZB_B, ZB_W, ZB_B, ZB_W};
    const int mbs[6] = {0, 1, 0, 0, 1, 1};
    for (int r = 0; r < 2; r++) {
        for (int i = 0; i < 6; i++)
            ck_assert_int_eq(zb_schedule_push(&pl->sched, r, kinds[i], mbs[i], 0, &err),
                             ZB_OK);
        pl->costs.t_f[r] = 1.0 + r;
        pl->costs.t_b[r] = 2.0;
        pl->costs.t_w[r] = 0.5;
    }
}

/* Rank g's action i in traced step k lasts dur(g, i, k). */
static double dur(int g, int i, int k) { return 0.001 * (1 + g) * (1 + i) * (1 + k); }

/* A run of steps 1..3, all traced, world ranks of na actions each, action
 * i of step k starting at 10 k + i and lasting dur(); the caller's arrays
 * (steps[3], n_acts[world], start[world], end[world]) back it. */
enum { MAXW = 4 };
typedef struct {
    int steps[3], n_acts[MAXW];
    double *start[MAXW], *end[MAXW];
} fake_trace;

static void fake_run(zb_run_result *res, fake_trace *ft, int world, int na) {
    memset(res, 0, sizeof *res);
    res->world = world;
    res->first_step = 1;
    res->trace_n = 3;
    res->trace_step = ft->steps;
    res->n_acts = ft->n_acts;
    res->t_start = ft->start;
    res->t_end = ft->end;
    for (int g = 0; g < world; g++) {
        ft->n_acts[g] = na;
        ft->start[g] = calloc((size_t)3 * na, sizeof(double));
        ft->end[g] = calloc((size_t)3 * na, sizeof(double));
        ck_assert(ft->start[g] && ft->end[g]);
        for (int k = 0; k < 3; k++)
            for (int i = 0; i < na; i++) {
                ft->start[g][k * na + i] = 10.0 * k + i;
                ft->end[g][k * na + i] = ft->start[g][k * na + i] + dur(g, i, k);
            }
    }
    for (int k = 0; k < 3; k++) ft->steps[k] = k + 1;
}

static void fake_free(fake_trace *ft, int world) {
    for (int g = 0; g < world; g++) free(ft->start[g]), free(ft->end[g]);
}

START_TEST(means_by_stage_and_pass) {
    zb_plan pl;
    make_plan(&pl);
    zb_run_result res;
    fake_trace ft;
    fake_run(&res, &ft, 4, 6);
    zb_pass_times pt;
    zb_err err;
    ck_assert_int_eq(zb_pass_times_make(&pl, &res, &pt, &err), ZB_OK);
    ck_assert_int_eq(pt.n, 2);
    /* global ranks 0,1 are pipeline rank 0 (dp 0, 1); 2,3 pipeline rank 1.
     * F on vstage 0: actions 0 and 1, ranks 0 and 1, steps 2 and 3 (k=1,2) */
    for (int s = 0; s < 2; s++) {
        int g0 = 2 * s;
        double f = 0, b = 0, w = 0;
        for (int g = g0; g < g0 + 2; g++)
            for (int k = 1; k < 3; k++) {
                f += dur(g, 0, k) + dur(g, 1, k);
                b += dur(g, 2, k) + dur(g, 4, k);
                w += dur(g, 3, k) + dur(g, 5, k);
            }
        ck_assert_int_eq(pt.count[s * 4 + ZB_F], 8);
        ck_assert_int_eq(pt.count[s * 4 + ZB_BW], 0);
        ck_assert_double_eq_tol(pt.mean_s[s * 4 + ZB_F], f / 8, 1e-12);
        ck_assert_double_eq_tol(pt.mean_s[s * 4 + ZB_B], b / 8, 1e-12);
        ck_assert_double_eq_tol(pt.mean_s[s * 4 + ZB_W], w / 8, 1e-12);
    }
    ck_assert_double_eq(zb_pass_times_predicted(&pl, 1, ZB_F), 2.0);
    ck_assert_double_eq(zb_pass_times_predicted(&pl, 1, ZB_BW), 2.5);
    /* a run resumed at step 2 keeps every traced step */
    res.first_step = 2;
    zb_pass_times pt2;
    ck_assert_int_eq(zb_pass_times_make(&pl, &res, &pt2, &err), ZB_OK);
    ck_assert_int_eq(pt2.count[ZB_F], 12);
    zb_pass_times_free(&pt2);
    zb_pass_times_free(&pt);
    fake_free(&ft, 4);
    zb_plan_free(&pl);
}
END_TEST

/* Vocabulary parallelism: S and T are a pipeline rank's shard passes,
 * averaged per pp rank beside the per-vstage table, which they leave
 * alone. pp = 2, dp = 1, "F0 S0 B0 T0 W0" on both ranks, 3 traced steps. */
START_TEST(vocab_passes_by_rank) {
    zb_plan pl;
    zb_err err;
    memset(&pl, 0, sizeof pl);
    pl.dp = 1;
    pl.tp = 1;
    pl.m = 1;
    pl.vocab_parallel = 1;
    ck_assert_int_eq(zb_plan_alloc(&pl, 2, 1, &err), ZB_OK);
    ck_assert_int_eq(zb_schedule_init(&pl.sched, "t", 2, 1, 1, ZB_PLACE_LOOP,
                                      0, &err), ZB_OK);
    const zb_pass kinds[5] = {ZB_F, ZB_S, ZB_B, ZB_T, ZB_W};
    for (int r = 0; r < 2; r++)
        for (int i = 0; i < 5; i++)
            ck_assert_int_eq(zb_schedule_push(&pl.sched, r, kinds[i], 0, 0,
                                              &err), ZB_OK);
    pl.costs.t_s = 0.25;
    pl.costs.t_t = 0.75;
    zb_run_result res;
    fake_trace ft;
    fake_run(&res, &ft, 2, 5);
    zb_pass_times pt;
    ck_assert_int_eq(zb_pass_times_make(&pl, &res, &pt, &err), ZB_OK);
    ck_assert_ptr_nonnull(pt.vocab_count);
    ck_assert_int_eq(pt.pp, 2);
    for (int r = 0; r < 2; r++) { /* steps 2 and 3 (k = 1, 2) */
        ck_assert_int_eq(pt.vocab_count[r * 2], 2);
        ck_assert_int_eq(pt.vocab_count[r * 2 + 1], 2);
        ck_assert_double_eq_tol(pt.vocab_mean_s[r * 2],
                                (dur(r, 1, 1) + dur(r, 1, 2)) / 2, 1e-12);
        ck_assert_double_eq_tol(pt.vocab_mean_s[r * 2 + 1],
                                (dur(r, 3, 1) + dur(r, 3, 2)) / 2, 1e-12);
        /* the block passes' cells count F, B and W only */
        ck_assert_int_eq(pt.count[r * 4 + ZB_F], 2);
        ck_assert_double_eq_tol(pt.mean_s[r * 4 + ZB_B],
                                (dur(r, 2, 1) + dur(r, 2, 2)) / 2, 1e-12);
    }
    ck_assert_double_eq(zb_pass_times_predicted(&pl, 1, ZB_S), 0.25);
    ck_assert_double_eq(zb_pass_times_predicted(&pl, 0, ZB_T), 0.75);
    zb_pass_times_free(&pt);
    /* without vocabulary parallelism: no shard table */
    pl.vocab_parallel = 0;
    ck_assert_int_eq(zb_pass_times_make(&pl, &res, &pt, &err), ZB_OK);
    ck_assert_ptr_null(pt.vocab_count);
    zb_pass_times_free(&pt);
    fake_free(&ft, 2);
    zb_plan_free(&pl);
}
END_TEST

int main(void) {
    Suite *su = suite_create("pass_times");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, means_by_stage_and_pass);
    tcase_add_test(tc, vocab_passes_by_rank);
    suite_add_tcase(su, tc);
    SRunner *sr = srunner_create(su);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
