/* test_replay.c - the replayed bubble (executor/report/replay.h): a run whose
 * every pass took exactly the plan's time replays to the plan's predicted
 * bubble; one whose stage-1 forwards took 3x replays to the simulator's
 * bubble for those costs (and not to the prediction); a fused-BW schedule
 * splits its measured BW in the plan's B:W proportion. Timelines are made
 * by hand from zb_simulate, not by running anything. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "common/zb_model.h"
#include "common/zb_sim.h"
#include "executor/report/replay.h"
#include "planner/search/search.h"

/* models/tiny.yaml planned at pp 2 with one schedule. */
static void make_plan(const char *schedule, zb_plan *pl) {
    zb_model m;
    zb_err err;
    ck_assert_int_eq(zb_model_load("models/tiny.yaml", &m, &err), ZB_OK);
    zb_search_opts o;
    zb_search_opts_default(&o);
    o.dp = o.tp = 1;
    o.pp = 2;
    snprintf(o.schedule, sizeof o.schedule, "%s", schedule);
    zb_search_result r;
    ck_assert_int_eq(zb_search(&m, &o, &r, &err), ZB_OK);
    ck_assert_int_eq(zb_search_make_plan(&m, &r.cand[0], pl, &err), ZB_OK);
    zb_search_result_free(&r);
}

/* A result with 2 kept steps (3 run) whose actions last what a simulation
 * of the plan's schedule with costs c says. */
typedef struct {
    zb_run_result res;
    int steps[2], n_acts[2];
    double *start[2], *end[2];
} fake_run;

static void fake(const zb_plan *pl, const zb_costs *c, fake_run *f) {
    zb_sim_result sim;
    zb_err err;
    ck_assert_int_eq(zb_simulate(&pl->sched, c, &sim, &err), ZB_OK);
    memset(f, 0, sizeof *f);
    f->res = (zb_run_result){.world = 2, .pp = 2, .dp = 1, .tp = 1, .first_step = 1,
                             .n_steps = 3, .trace_n = 2, .trace_step = f->steps,
                             .n_acts = f->n_acts, .t_start = f->start, .t_end = f->end};
    f->steps[0] = 2;
    f->steps[1] = 3;
    for (int r = 0; r < 2; r++) {
        int n = pl->sched.len[r];
        f->n_acts[r] = n;
        f->start[r] = calloc(2 * (size_t)n, sizeof(double));
        f->end[r] = calloc(2 * (size_t)n, sizeof(double));
        for (int k = 0; k < 2; k++)
            for (int i = 0; i < n; i++) {
                f->start[r][k * n + i] = 100.0 * k + sim.start[sim.off[r] + i];
                f->end[r][k * n + i] = 100.0 * k + sim.end[sim.off[r] + i];
            }
    }
    zb_sim_result_free(&sim);
}

static void fake_free(fake_run *f) {
    for (int r = 0; r < 2; r++) free(f->start[r]), free(f->end[r]);
}

static zb_costs copy_costs(const zb_plan *pl) {
    zb_costs c;
    zb_err err;
    int n = pl->costs.n;
    ck_assert_int_eq(zb_costs_init(&c, n, &err), ZB_OK);
    for (int s = 0; s < n; s++) {
        c.t_f[s] = pl->costs.t_f[s];
        c.t_b[s] = pl->costs.t_b[s];
        c.t_w[s] = pl->costs.t_w[s];
        c.t_comm[s] = pl->costs.t_comm[s];
        c.m_b[s] = pl->costs.m_b[s];
        c.m_w[s] = pl->costs.m_w[s];
    }
    return c;
}

static double sim_bubble(const zb_plan *pl, const zb_costs *c) {
    zb_sim_result sim;
    zb_err err;
    ck_assert_int_eq(zb_simulate(&pl->sched, c, &sim, &err), ZB_OK);
    double b = sim.bubble_rate;
    zb_sim_result_free(&sim);
    return b;
}

START_TEST(plan_times_replay_to_prediction) {
    zb_plan pl;
    make_plan("zb-h1", &pl);
    zb_costs c = copy_costs(&pl);
    fake_run f;
    fake(&pl, &c, &f);
    double b;
    zb_err err;
    ck_assert_int_eq(zb_replay_bubble(&pl, &f.res, &b, &err), ZB_OK);
    ck_assert_double_eq_tol(b, pl.pred.bubble_rate, 1e-9);
    fake_free(&f);
    /* slower forwards on stage 1: the replay follows the measured times */
    c.t_f[1] *= 3;
    fake(&pl, &c, &f);
    ck_assert_int_eq(zb_replay_bubble(&pl, &f.res, &b, &err), ZB_OK);
    ck_assert_double_eq_tol(b, sim_bubble(&pl, &c), 1e-9);
    ck_assert(b > pl.pred.bubble_rate + 0.01);
    fake_free(&f);
    zb_costs_free(&c);
    zb_plan_free(&pl);
}
END_TEST

START_TEST(fused_backward_splits_in_plan_proportion) {
    zb_plan pl;
    make_plan("1f1b", &pl);
    zb_costs c = copy_costs(&pl);
    for (int s = 0; s < c.n; s++) {   /* every pass 2x slower, BW too */
        c.t_f[s] *= 2;
        c.t_b[s] *= 2;
        c.t_w[s] *= 2;
    }
    fake_run f;
    fake(&pl, &c, &f);
    double b;
    zb_err err;
    ck_assert_int_eq(zb_replay_bubble(&pl, &f.res, &b, &err), ZB_OK);
    /* BW measured, B and W split 2x the plan's each: the simulation of the
     * doubled costs (communication as planned) */
    ck_assert_double_eq_tol(b, sim_bubble(&pl, &c), 1e-9);
    fake_free(&f);
    zb_costs_free(&c);
    zb_plan_free(&pl);
}
END_TEST

int main(void) {
    Suite *su = suite_create("replay");
    TCase *tc = tcase_create("replay");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, plan_times_replay_to_prediction);
    tcase_add_test(tc, fused_backward_splits_in_plan_proportion);
    suite_add_tcase(su, tc);
    SRunner *sr = srunner_create(su);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
