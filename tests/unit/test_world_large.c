/* test_world_large.c - worlds beyond 64 ranks, as threads of one process
 * (local transport): the micro model (tests/models/micro.yaml) trained 3
 * steps with 256 ranks, dp 32 x pp 8 and tp 2 x pp 8 x dp 16 (1f1b), must
 * give what the single-rank run gives, to test_runtime.c's layout
 * equivalence: every step's loss within 1e-5 relative, every parameter
 * within 1e-5 of its tensor's largest magnitude, every element of the full
 * model held by some rank. The world group (256 members) and the DP groups
 * (32, 16) exercise groups past the old 64-member limit.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/zb_model.h"
#include "common/zb_plan.h"
#include "executor/run/runtime.h"
#include "executor/stage/stage_params.h"
#include "planner/cost/partition.h"
#include "planner/registry/registry.h"
#include "tests/unit/layout_check.h"

#define STEPS 3

static zb_status build_plan(zb_plan *p, int dp, int tp, int pp, zb_err *err) {
    memset(p, 0, sizeof *p);
    ZB_TRY(zb_model_load("tests/models/micro.yaml", &p->model, err));
    ZB_TRY(zb_plan_alloc(p, pp, 1, err));
    p->dp = dp;
    p->tp = tp;
    p->micro_batch = p->model.train.micro_batch;
    p->m = p->model.train.global_batch / (dp * p->micro_batch);
    snprintf(p->solver, sizeof p->solver, "generator");
    zb_partition_even(p->model.arch.layers, pp, p->stages);
    for (int s = 0; s < pp; s++) {
        p->costs.t_f[s] = p->costs.t_b[s] = p->costs.t_w[s] = 1;
        p->costs.m_b[s] = 1;
        p->costs.m_w[s] = 0.5;
    }
    zb_sched_params prm = {.p = pp, .m = p->m, .v = 1, .costs = &p->costs};
    zb_status s = zb_schedule_make("1f1b", &prm, &p->sched, NULL, err);
    if (s != ZB_OK) zb_plan_free(p);
    return s;
}

static void run(const zb_plan *p, zb_run_result *res) {
    zb_run_opts o = {.steps = STEPS, .threads = 1, .keep_params = true};
    zb_err err;
    ck_assert_msg(zb_run(p, &o, res, &err) == ZB_OK, "world %d: %s",
                  zb_plan_world(p), err.msg);
    ck_assert_int_eq(res->n_steps, STEPS);
}

static void check_layout(int dp, int tp, int pp) {
    zb_err err;
    zb_plan ref_p, p;
    ck_assert_msg(build_plan(&ref_p, 1, 1, 1, &err) == ZB_OK, "%s", err.msg);
    ck_assert_msg(build_plan(&p, dp, tp, pp, &err) == ZB_OK, "%s", err.msg);
    ck_assert_int_eq(zb_plan_world(&p), 256);
    zb_run_result ref, res;
    run(&ref_p, &ref);
    run(&p, &res);
    ck_assert(isfinite(ref.loss[0]) && ref.loss[STEPS - 1] != ref.loss[0]);
    for (int k = 0; k < STEPS; k++)
        ck_assert_msg(fabs(res.loss[k] - ref.loss[k]) <= 1e-5 * fabs(ref.loss[k]),
                      "dp %d tp %d pp %d step %d: loss %.9g, single rank %.9g",
                      dp, tp, pp, k + 1, res.loss[k], ref.loss[k]);
    char what[64];
    snprintf(what, sizeof what, "world %d (dp %d tp %d pp %d)", res.world, dp,
             tp, pp);
    zb_lc_check_params(&ref_p, &ref, &p, &res, 1e-5, what);
    zb_run_result_free(&res);
    zb_run_result_free(&ref);
    zb_plan_free(&p);
    zb_plan_free(&ref_p);
}

START_TEST(test_dp32_pp8) { check_layout(32, 1, 8); }
END_TEST

START_TEST(test_tp2_pp8_dp16) { check_layout(16, 2, 8); }
END_TEST

int main(void) {
    Suite *su = suite_create("world_large");
    TCase *tc = tcase_create("world_large");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_dp32_pp8);
    tcase_add_test(tc, test_tp2_pp8_dp16);
    suite_add_tcase(su, tc);
    SRunner *sr = srunner_create(su);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
