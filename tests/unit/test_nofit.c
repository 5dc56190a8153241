/* test_nofit.c - "no candidate fits" says by how much (planner/search/
 * nofit.c, the closest candidate kept by search.c): GPT-2 1.5B on two
 * A100-40GB at micro-batch 8 fits nowhere; the closest candidate's peak
 * (and each lever's best or closest) is recomputed the executor's way,
 * cost model and simulator through cost/plan_fit.h on the plan of that
 * layout, and must equal what the search reported; the levers that fit
 * are under the limit, those that do not are over; a closest candidate
 * that is only a static bound (GPT-3 175B on 32 GPUs) is below every
 * schedule's peak at its layout. Runs from the repository root. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/zb_plan.h"
#include "planner/cost/plan_fit.h"
#include "planner/search/levers.h"
#include "planner/search/nofit.h"
#include "planner/search/search.h"

static zb_model load(const char *path) {
    zb_model m;
    zb_err e;
    ck_assert_msg(zb_model_load(path, &m, &e) == ZB_OK, "%s", e.msg);
    return m;
}

/* The 1.5B model on 1 x 2 A100-40GB, micro-batch 8: nothing fits. */
static zb_model tight(zb_search_opts *o) {
    zb_model m = load("models/gpt2-1.5b.yaml");
    m.cluster.nodes = 1;
    m.cluster.devices_per_node = 2;
    m.cluster.device = *zb_device_lookup("a100-40gb");
    zb_search_opts_default(o);
    o->micro_batch = 8;
    return m;
}

/* The layout k of model m (its levers, m's cluster) planned, and its peak
 * per device computed by cost/plan_fit.h: the largest pipeline rank's
 * static memory, simulated activations and workspace. */
static double direct_peak(const zb_model *m, const zb_search_opts *base,
                          const zb_closest *k) {
    zb_model lm = *m;
    lm.train.recompute = k->recompute;
    lm.train.sequence_parallel = k->sp;
    lm.train.zero1 = k->zero1;
    zb_search_opts o = *base;
    o.dp = k->dp; o.tp = k->tp; o.pp = k->pp; o.v = k->v;
    o.micro_batch = k->micro_batch;
    o.levers = false;
    o.exhaustive = true;   /* keeps candidates over memory */
    snprintf(o.schedule, sizeof o.schedule, "%s", k->schedule);
    zb_search_result r;
    zb_err e;
    ck_assert_msg(zb_search(&lm, &o, &r, &e) == ZB_OK, "%s", e.msg);
    ck_assert_int_gt(r.n, 0);
    zb_plan plan;
    ck_assert_msg(zb_search_make_plan(&lm, &r.cand[0], &plan, &e) == ZB_OK, "%s", e.msg);
    double need[256], peak = 0;
    ck_assert_int_le(plan.pp, 256);
    ck_assert_msg(zb_plan_mem_need(&plan, lm.cluster.device.name, need, &e) == ZB_OK,
                  "%s", e.msg);
    for (int i = 0; i < plan.pp; i++) peak = fmax(peak, need[i]);
    zb_plan_free(&plan);
    zb_search_result_free(&r);
    return peak;
}

static void near(double got, double want, const char *what) {
    ck_assert_msg(fabs(got - want) <= 1e-9 * want, "%s: %.6f GiB, direct %.6f GiB", what,
                  got / 1073741824.0, want / 1073741824.0);
}

START_TEST(closest_is_the_cost_models) {
    zb_search_opts o;
    zb_model m = tight(&o);
    zb_search_result r;
    zb_err e;
    ck_assert_int_eq(zb_search_levers(&m, &o, &r, &e), ZB_EINFEASIBLE);
    const zb_closest *k = &r.closest;
    double limit = m.cluster.device.mem_bytes * (1 - o.mem_margin);
    ck_assert(k->exact && k->schedule[0]);
    ck_assert(k->mem_bytes > limit);
    near(k->mem_bytes, direct_peak(&m, &o, k), "closest");
    /* and it is the closest: every candidate of the exhaustive search is
     * at least as big (none fits) */
    zb_search_opts all = o;
    all.exhaustive = true;
    all.top_k = 1000;
    zb_search_result every;
    ck_assert(zb_search(&m, &all, &every, &e) == ZB_OK);
    for (int i = 0; i < every.n; i++) {
        ck_assert(!every.cand[i].fits);
        ck_assert(every.cand[i].peak_mem_bytes >= k->mem_bytes);
    }
    zb_search_result_free(&every);
    zb_search_result_free(&r);
}
END_TEST

START_TEST(levers_by_the_cost_model) {
    zb_search_opts o;
    zb_model m = tight(&o);
    zb_search_result r;
    zb_err e;
    ck_assert_int_eq(zb_search_levers(&m, &o, &r, &e), ZB_EINFEASIBLE);
    zb_nofit nf;
    ck_assert_msg(zb_search_nofit(&m, &o, &r.closest, &nf, &e) == ZB_OK, "%s", e.msg);
    ck_assert(nf.limit_bytes == m.cluster.device.mem_bytes * (1 - o.mem_margin));
    ck_assert(nf.closest.mem_bytes == r.closest.mem_bytes);
    const char *want[] = {"recompute full", "micro-batch 1", "ZeRO-1",
                          "all memory levers", "2 x the devices (4)"};
    ck_assert_int_eq(nf.n, 5);
    int fitting = 0;
    for (int i = 0; i < nf.n; i++) {
        const zb_nofit_row *row = &nf.row[i];
        ck_assert_str_eq(row->what, want[i]);
        ck_assert_msg(row->st == ZB_OK || row->st == ZB_EINFEASIBLE, "%s: %s", row->what,
                      row->note);
        zb_model lm = m;
        if (i == 4) lm.cluster.nodes = 2;
        zb_search_opts lo = o;
        if (i == 1) lo.micro_batch = 1;
        ck_assert(row->best.exact);
        near(row->best.mem_bytes, direct_peak(&lm, &lo, &row->best), row->what);
        if (row->st == ZB_OK) {
            fitting++;
            ck_assert(row->best.mem_bytes <= nf.limit_bytes && row->step_s > 0);
        } else {
            ck_assert(row->best.mem_bytes > nf.limit_bytes);
        }
    }
    ck_assert_str_eq(nf.row[0].change, "--set training.recompute=full");
    ck_assert_str_eq(nf.row[1].change, "--micro-batch 1");
    ck_assert_str_eq(nf.row[4].change, "--set cluster.nodes=2");
    ck_assert(nf.row[0].st == ZB_OK && nf.row[0].best.recompute == ZB_RECOMPUTE_FULL);
    ck_assert(nf.row[2].st == ZB_EINFEASIBLE);   /* ZeRO-1 at dp 1 saves nothing */
    ck_assert_int_ge(fitting, 3);
    zb_search_result_free(&r);
}
END_TEST

START_TEST(static_bound) {
    zb_model m = load("models/gpt3-175b.yaml");
    m.cluster.nodes = 4;
    zb_search_opts o;
    zb_search_opts_default(&o);
    zb_search_result r;
    zb_err e;
    ck_assert_int_eq(zb_search_levers(&m, &o, &r, &e), ZB_EINFEASIBLE);
    zb_closest k = r.closest;
    zb_search_result_free(&r);
    ck_assert(!k.exact && k.schedule[0] == '\0');
    ck_assert(k.mem_bytes > m.cluster.device.mem_bytes * (1 - o.mem_margin));
    snprintf(k.schedule, sizeof k.schedule, "1f1b");
    k.v = 1;
    ck_assert(direct_peak(&m, &o, &k) >= k.mem_bytes);
    /* a forced --pp lifts in its own row */
    o.pp = 8;
    o.tp = 4;
    ck_assert_int_eq(zb_search_levers(&m, &o, &r, &e), ZB_EINFEASIBLE);
    zb_nofit nf;
    ck_assert(zb_search_nofit(&m, &o, &r.closest, &nf, &e) == ZB_OK);
    bool lifted = false;
    for (int i = 0; i < nf.n; i++)
        lifted |= strcmp(nf.row[i].what, "tp, pp searched") == 0;
    ck_assert(lifted);
    zb_search_result_free(&r);
}
END_TEST

int main(void) {
    Suite *s = suite_create("nofit");
    TCase *t = tcase_create("core");
    tcase_set_timeout(t, 120);
    tcase_add_test(t, closest_is_the_cost_models);
    tcase_add_test(t, levers_by_the_cost_model);
    tcase_add_test(t, static_bound);
    suite_add_tcase(s, t);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
