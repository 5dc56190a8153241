/* test_search.c - the plan search (planner/search/search.c): forced choices,
 * layout rules, memory dropping, ranking (checked against an exhaustive
 * run without pruning), the step-time formula by hand, and the plan made
 * from the winner surviving zb_plan_write / zb_plan_read. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/zb_plan.h"
#include "planner/cli/explain.h"
#include "planner/cost/cost.h"
#include "planner/cost/partition.h"
#include "planner/cost/plan_fit.h"
#include "planner/registry/registry.h"
#include "planner/search/levers.h"
#include "planner/search/search.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

/* A small GPT on `nodes` x `dpn` devices of type dev. */
static zb_model model(int layers, int gb, int nodes, int dpn, const char *dev) {
    zb_model m;
    memset(&m, 0, sizeof m);
    snprintf(m.name, sizeof m.name, "t");
    m.arch = (zb_arch){.layers = layers, .hidden = 512, .heads = 8,
                       .ffn_hidden = 2048, .seq_len = 256, .vocab = 1024,
                       .tied_embeddings = true};
    m.train.global_batch = gb;
    m.train.micro_batch = 0;
    m.train.steps = 1;
    m.train.seed = 1;
    m.train.precision = ZB_PREC_BF16;
    m.train.opt = (zb_optim){.lr = 1e-3, .min_lr = 1e-4, .beta1 = 0.9,
                             .beta2 = 0.95, .eps = 1e-8, .weight_decay = 0.1,
                             .grad_clip = 1.0, .warmup_steps = 1,
                             .cosine = true};
    m.cluster.nodes = nodes;
    m.cluster.devices_per_node = dpn;
    m.cluster.device = *zb_device_lookup(dev);
    m.cluster.intra_bw_Bps = 300e9;
    m.cluster.intra_lat_s = 5e-6;
    m.cluster.inter_bw_Bps = 25e9;
    m.cluster.inter_lat_s = 10e-6;
    return m;
}

static void run(const zb_model *m, const zb_search_opts *o,
                zb_search_result *r) {
    zb_err err;
    zb_status st = zb_search(m, o, r, &err);
    ck_assert_msg(st == ZB_OK, "zb_search: %s", err.msg);
    ck_assert_int_gt(r->n, 0);
}

static void check_batch(const zb_model *m, const zb_search_result *r) {
    for (int i = 0; i < r->n; i++) {
        const zb_candidate *c = &r->cand[i];
        ck_assert_int_eq(c->m * c->micro_batch * c->dp, m->train.global_batch);
        ck_assert_int_le(c->pp * c->v, m->arch.layers);
    }
}

START_TEST(forced_choices) {
    zb_model m = model(8, 32, 1, 8, "a100-80gb");
    zb_search_opts o;
    zb_search_opts_default(&o);
    o.dp = 2; o.tp = 2; o.pp = 2; o.micro_batch = 2; o.top_k = 20;
    snprintf(o.schedule, sizeof o.schedule, "1f1b");
    zb_search_result r;
    run(&m, &o, &r);
    for (int i = 0; i < r.n; i++) {
        const zb_candidate *c = &r.cand[i];
        ck_assert(c->dp == 2 && c->tp == 2 && c->pp == 2 && c->v == 1);
        ck_assert_int_eq(c->micro_batch, 2);
        ck_assert_int_eq(c->m, 8);
        ck_assert_str_eq(c->schedule, "1f1b");
    }
    zb_search_result_free(&r);
    /* interleaved with forced chunks */
    snprintf(o.schedule, sizeof o.schedule, "interleaved");
    o.v = 4; o.dp = 0; o.tp = 1; o.pp = 2; o.micro_batch = 0;
    run(&m, &o, &r);
    for (int i = 0; i < r.n; i++) {
        ck_assert_int_eq(r.cand[i].v, 4);
        ck_assert_int_eq(r.cand[i].dp, 4);
        ck_assert_str_eq(r.cand[i].schedule, "interleaved");
    }
    check_batch(&m, &r);
    zb_search_result_free(&r);
}
END_TEST

/* One pipeline stage: only 1F1B; full recompute: no split-B/W schedule,
 * unless forced. */
START_TEST(redundant_schedules_skipped) {
    zb_model m = model(8, 32, 1, 8, "a100-80gb");
    zb_search_opts o;
    zb_search_opts_default(&o);
    o.top_k = 200;
    o.pp = 1;
    zb_search_result r;
    run(&m, &o, &r);
    ck_assert_int_gt(r.n, 0);
    for (int i = 0; i < r.n; i++) ck_assert_str_eq(r.cand[i].schedule, "1f1b");
    zb_search_result_free(&r);
    o.pp = 4;
    m.train.recompute = ZB_RECOMPUTE_FULL;
    run(&m, &o, &r);
    ck_assert_int_gt(r.n, 0);
    for (int i = 0; i < r.n; i++)
        ck_assert_msg(!zb_schedule_splits_bw(r.cand[i].schedule), "%s",
                      r.cand[i].schedule);
    zb_search_result_free(&r);
    snprintf(o.schedule, sizeof o.schedule, "zb-h1");
    run(&m, &o, &r);
    ck_assert_int_gt(r.n, 0);
    ck_assert_str_eq(r.cand[0].schedule, "zb-h1");
    zb_search_result_free(&r);
}
END_TEST

/* pp = 2, dp = 2: each rank's DP all-reduce starts after its own last pass,
 * so step = max_r(end_r + ar_r) + optimizer, recomputed here from the
 * candidate's spans and schedule with the simulator and the formulas. */
START_TEST(allreduce_overlaps_pipeline_tail) {
    zb_model m = model(4, 16, 1, 4, "a100-80gb");
    zb_search_opts o;
    zb_search_opts_default(&o);
    o.dp = 2; o.tp = 1; o.pp = 2; o.micro_batch = 2;
    snprintf(o.schedule, sizeof o.schedule, "1f1b");
    zb_search_result r;
    run(&m, &o, &r);
    const zb_candidate *c = &r.cand[0];
    zb_cost_table ct;
    zb_costs costs;
    zb_err err;
    ck_assert_int_eq(zb_cost_eval(&m, 1, 2, &ct, &err), ZB_OK);
    ck_assert_int_eq(zb_costs_init(&costs, 2, &err), ZB_OK);
    zb_stage_costs(&ct, c->spans, 2, 1, ZB_PLACE_LOOP, 2, 1, 4, &costs);
    zb_sim_result sim;
    ck_assert_int_eq(zb_simulate(&c->sched, &costs, &sim, &err), ZB_OK);
    double reduced = 0, max_params = 0;
    for (int k = 0; k < 2; k++) {
        const zb_stage_span *sp = &c->spans[k];
        double params = sp->n_layers * ct.layer.params +
                        (sp->embed ? ct.embed.params : 0) +
                        (sp->head ? ct.head.params : 0);
        double ar = 2.0 * 1 / 2 * params * 2 / 300e9 + 2 * 1 * 5e-6; /* ring, n=2 */
        double end = sim.end[sim.off[k + 1] - 1];
        reduced = fmax(reduced, end + ar);
        max_params = fmax(max_params, params);
    }
    double opt = max_params * 16 / (0.8 * 2039e9); /* a100-80gb bandwidth */
    ck_assert(fabs(c->pipeline_s - sim.last_end) <= 1e-12 * sim.last_end);
    ck_assert(fabs(c->allreduce_s - (reduced - sim.last_end)) <= 1e-9 * reduced);
    ck_assert(fabs(c->step_s - (reduced + opt)) <= 1e-9 * c->step_s);
    zb_sim_result_free(&sim);
    zb_costs_free(&costs);
    zb_search_result_free(&r);
}
END_TEST

START_TEST(bad_forced) {
    zb_model m = model(8, 32, 1, 8, "a100-80gb");
    zb_search_opts o;
    zb_search_result r;
    zb_err err;
    struct { int dp, tp, pp, v; const char *sched, *want; } cases[] = {
        {0, 3, 0, 0, "", "--tp 3"},
        {0, 16, 0, 0, "", "--tp 16"},
        {2, 2, 1, 0, "", "cluster has 8"},
        {0, 0, 9, 0, "", "--pp 9"},
        {3, 0, 0, 0, "", "--dp 3"},
        {0, 0, 0, 0, "zb-x", "unknown schedule 'zb-x'"},
        {0, 0, 0, 3, "zb-v", "--chunks 3"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        zb_search_opts_default(&o);
        o.dp = cases[i].dp; o.tp = cases[i].tp; o.pp = cases[i].pp;
        o.v = cases[i].v;
        snprintf(o.schedule, sizeof o.schedule, "%s", cases[i].sched);
        ck_assert_int_eq(zb_search(&m, &o, &r, &err), ZB_EINPUT);
        ck_assert_msg(strstr(err.msg, cases[i].want), "case %zu: %s", i, err.msg);
        ck_assert_ptr_null(strchr(err.msg, '\n'));
        zb_search_result_free(&r);
    }
}
END_TEST

/* GPU clusters: all devices used, tp a power of two inside a node. */
START_TEST(gpu_world_rules) {
    zb_model m = model(8, 64, 2, 8, "h100-sxm");
    zb_search_opts o;
    zb_search_opts_default(&o);
    o.exhaustive = true;
    zb_search_result r;
    run(&m, &o, &r);
    bool seen_tp[9] = {false}, seen_pp[9] = {false};
    for (int i = 0; i < r.n; i++) {
        const zb_candidate *c = &r.cand[i];
        ck_assert_int_eq(c->dp * c->tp * c->pp, 16);
        ck_assert(c->tp == 1 || c->tp == 2 || c->tp == 4 || c->tp == 8);
        ck_assert_int_le(c->micro_batch, o.max_micro_batch);
        ck_assert_int_eq(c->micro_batch & (c->micro_batch - 1), 0);
        seen_tp[c->tp] = true;
        if (c->pp <= 8) seen_pp[c->pp] = true;
    }
    /* the whole space was visited: every tp and pp that divide 16 */
    for (int t = 1; t <= 8; t *= 2) ck_assert(seen_tp[t]);
    for (int p = 1; p <= 8; p *= 2) ck_assert(seen_pp[p]);
    check_batch(&m, &r);
    zb_search_result_free(&r);
}
END_TEST

/* The CPU device: ranks share the cores (search.h); forced sizes hold. */
START_TEST(cpu_world_rules) {
    zb_model m = model(8, 16, 1, 16, "cpu");
    zb_search_opts o;
    zb_search_opts_default(&o);
    o.top_k = 50;
    o.cores = 1;   /* one core: one rank */
    zb_search_result r;
    run(&m, &o, &r);
    ck_assert_int_eq(r.cores, 1);
    for (int i = 0; i < r.n; i++)
        ck_assert(r.cand[i].dp == 1 && r.cand[i].tp == 1 && r.cand[i].pp == 1);
    check_batch(&m, &r);
    zb_search_result_free(&r);
    /* four cores: dp x pp up to 4 ranks, tp 1 unless forced; both seen */
    o.cores = 4;
    o.auto_splits = 1000;
    run(&m, &o, &r);
    bool seen_dp = false, seen_pp = false;
    for (int i = 0; i < r.n; i++) {
        const zb_candidate *c = &r.cand[i];
        ck_assert(c->tp == 1 && c->dp * c->pp <= 4);
        seen_dp |= c->dp > 1;
        seen_pp |= c->pp > 1;
    }
    ck_assert(seen_dp && seen_pp);
    zb_search_result_free(&r);
    o.pp = 4;
    run(&m, &o, &r);
    for (int i = 0; i < r.n; i++)
        ck_assert(r.cand[i].dp == 1 && r.cand[i].tp == 1 && r.cand[i].pp == 4);
    zb_search_result_free(&r);
    o.dp = 2; o.tp = 2; o.pp = 2;
    run(&m, &o, &r);
    for (int i = 0; i < r.n; i++)
        ck_assert(r.cand[i].dp == 2 && r.cand[i].tp == 2 && r.cand[i].pp == 2);
    check_batch(&m, &r);
    zb_search_result_free(&r);
}
END_TEST

/* Pruned top-k == the first k fitting candidates of a run with no pruning
 * (brute force), for a device small enough that many do not fit. */
static void compare_with_brute_force(double mem_gib, int top_k,
                                     bool expect_unfit) {
    zb_model m = model(8, 64, 1, 8, "a100-80gb");
    m.cluster.device.mem_bytes = mem_gib * GIB;
    snprintf(m.cluster.device.name, sizeof m.cluster.device.name, "small");
    zb_search_opts o;
    zb_search_opts_default(&o);
    o.exhaustive = true;
    zb_search_result all, top;
    run(&m, &o, &all);
    o.exhaustive = false;
    o.top_k = top_k;
    o.auto_splits = 1000;   /* same schedule set as the exhaustive run */
    run(&m, &o, &top);
    int fit = 0, unfit = 0, faster_unfit = 0;
    for (int i = 0; i < all.n; i++) {
        const zb_candidate *c = &all.cand[i];
        /* the usable capacity is the device memory less the margin */
        ck_assert(c->capacity_bytes ==
                  m.cluster.device.mem_bytes * (1 - ZB_SEARCH_MEM_MARGIN));
        ck_assert_int_eq(c->fits, c->peak_mem_bytes <= c->capacity_bytes);
        if (!c->fits) {
            unfit++;
            faster_unfit += top.n > 0 && c->step_s < top.cand[top.n - 1].step_s;
            continue;
        }
        if (fit < top.n)
            ck_assert_msg(top.cand[fit].step_s == c->step_s,
                          "rank %d: %.17g vs brute force %.17g", fit,
                          top.cand[fit].step_s, c->step_s);
        fit++;
    }
    ck_assert_int_eq(top.n, fit < top_k ? fit : top_k);
    /* some faster candidates were dropped for memory, not ranked */
    if (expect_unfit) ck_assert_int_gt(faster_unfit, 0);
    else ck_assert_int_eq(unfit, 0);
    for (int i = 0; i < top.n; i++) {
        ck_assert(top.cand[i].fits);
        ck_assert(top.cand[i].peak_mem_bytes <= m.cluster.device.mem_bytes);
        if (i) ck_assert(top.cand[i - 1].step_s <= top.cand[i].step_s);
    }
    zb_search_result_free(&all);
    zb_search_result_free(&top);
}

START_TEST(drops_and_ranking) {
    compare_with_brute_force(80, 4, false);   /* plenty of memory */
    compare_with_brute_force(1.7, 3, true);   /* workspace 1 GiB: tight */
    compare_with_brute_force(1.3, 30, true);
}
END_TEST

START_TEST(nothing_fits) {
    zb_model m = model(8, 64, 1, 8, "a100-80gb");
    m.cluster.device.mem_bytes = 0.5 * GIB;  /* below the workspace */
    zb_search_opts o;
    zb_search_opts_default(&o);
    zb_search_result r;
    zb_err err;
    ck_assert_int_eq(zb_search(&m, &o, &r, &err), ZB_EINFEASIBLE);
    ck_assert_ptr_nonnull(strstr(err.msg, "no candidate fits"));
    zb_search_result_free(&r);
}
END_TEST

/* pp = 1, 1F1B: the step time and memory by hand from the cost table. */
START_TEST(formulas_by_hand) {
    zb_model m = model(4, 16, 1, 4, "a100-80gb");
    m.train.zero1 = true;
    zb_search_opts o;
    zb_search_opts_default(&o);
    o.dp = 4; o.tp = 1; o.pp = 1; o.micro_batch = 2;
    snprintf(o.schedule, sizeof o.schedule, "1f1b");
    zb_search_result r;
    run(&m, &o, &r);
    const zb_candidate *c = &r.cand[0];
    ck_assert_int_eq(c->m, 2);
    zb_cost_table ct;
    zb_err err;
    ck_assert_int_eq(zb_cost_eval(&m, 1, 2, &ct, &err), ZB_OK);
    /* one stage, one rank: F then BW per microbatch, back to back */
    const zb_pass_cost *L = &ct.layer, *E = &ct.embed, *H = &ct.head;
    double work = 4 * (L->f_s + L->b_s + L->w_s) + E->f_s + E->b_s + E->w_s +
                  H->f_s + H->b_s + H->w_s;
    ck_assert(fabs(c->pipeline_s - 2 * work) <= 1e-12 * work);
    double params = 4 * L->params + E->params + H->params - 1024.0 * 512;
    double ar = 2.0 * 3 / 4 * params * 2 / 300e9 + 2 * 3 * 5e-6;
    double opt = params / 4 * 16 / (0.8 * m.cluster.device.mem_bw_Bps);
    ck_assert(m.cluster.device.mem_bw_Bps == 2039e9); /* a100-80gb */
    ck_assert(fabs(c->allreduce_s - ar) <= 1e-9 * ar);
    ck_assert(fabs(c->optimizer_s - opt) <= 1e-9 * opt);
    ck_assert(fabs(c->step_s - (c->pipeline_s + ar + opt)) <= 1e-9 * c->step_s);
    double act = 4 * L->m_b_bytes + E->m_b_bytes + H->m_b_bytes;
    double stat = params * (2 + 2 + 12.0 / 4);   /* bf16, zero1 over 4 */
    double peak = stat + act + fmax(0.05 * 80 * GIB, GIB);
    ck_assert(fabs(c->peak_mem_bytes - peak) <= 1e-9 * peak);
    double tok = 16.0 * 256 / c->step_s;
    ck_assert(fabs(c->tokens_per_s - tok) <= 1e-9 * tok);
    double mfu = zb_model_step_flops(&m) / c->step_s / (4 * 312e12);
    ck_assert(fabs(c->mfu - mfu) <= 1e-9 * mfu);
    ck_assert(c->bubble_rate >= 0 && c->bubble_rate < 1e-9);
    zb_search_result_free(&r);
}
END_TEST

/* dp_overlap (planner/cost/dp.h), pp 1 so the rank's reduction starts at the
 * pipeline's end: buckets 4 layers + embedding + head, windows one
 * microbatch's B + W and F; with zero1 the halves overlap each window. */
START_TEST(dp_overlap_by_hand) {
    for (int z = 0; z < 2; z++) {
        zb_model m = model(4, 16, 1, 4, "a100-80gb");
        m.train.zero1 = z;
        m.cluster.intra_bw_Bps = 20e9;  /* a reduction longer than a backward */
        zb_search_opts o;
        zb_search_opts_default(&o);
        o.dp = 4; o.tp = 1; o.pp = 1; o.micro_batch = 2;
        snprintf(o.schedule, sizeof o.schedule, "1f1b");
        zb_search_result r0, r1;
        run(&m, &o, &r0);
        m.train.dp_overlap = true;
        run(&m, &o, &r1);
        zb_cost_table ct;
        zb_err err;
        ck_assert_int_eq(zb_cost_eval(&m, 1, 2, &ct, &err), ZB_OK);
        const zb_pass_cost *L = &ct.layer, *E = &ct.embed, *H = &ct.head;
        double fwd = 4 * L->f_s + E->f_s + H->f_s;
        double bwd = 4 * (L->b_s + L->w_s) + E->b_s + E->w_s + H->b_s + H->w_s;
        double ar = r0.cand[0].allreduce_s, want;
        if (z)
            want = fmax(ar / 2 - bwd, ar / 12) + fmax(ar / 2 - fwd, ar / 12);
        else
            want = fmax(ar - bwd, ar / 6);
        const zb_candidate *c = &r1.cand[0];
        ck_assert_msg(fabs(c->allreduce_s - want) <= 1e-9 * ar,
                      "zero1 %d: exposed %g, by hand %g (all-reduce %g)", z,
                      c->allreduce_s, want, ar);
        ck_assert(c->allreduce_s < ar && ar - bwd > ar / 6);
        ck_assert(fabs(c->step_s - (c->pipeline_s + want + c->optimizer_s)) <=
                  1e-9 * c->step_s);
        ck_assert(c->pipeline_s == r0.cand[0].pipeline_s);
        zb_search_result_free(&r0);
        zb_search_result_free(&r1);
    }
}
END_TEST

START_TEST(dp_group_links) {
    ck_assert(!zb_search_dp_inter_node(2, 4, 1, 8));
    ck_assert(zb_search_dp_inter_node(4, 4, 1, 8));
    ck_assert(!zb_search_dp_inter_node(1, 8, 16, 8));
    /* dp 3 x tp 2 = 6 devices per pp rank: rank 1 covers devices 6..10 */
    ck_assert(!zb_search_dp_inter_node(3, 2, 1, 8));
    ck_assert(zb_search_dp_inter_node(3, 2, 2, 8));
}
END_TEST

static void check_round_trip(const zb_model *m, const zb_candidate *c) {
    zb_plan plan, back;
    zb_err err;
    char path[] = "/tmp/zb_test_search_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    ck_assert_msg(zb_search_make_plan(m, c, &plan, &err) == ZB_OK, "%s", err.msg);
    ck_assert_int_eq(plan.m * plan.micro_batch * plan.dp, m->train.global_batch);
    ck_assert(fabs(plan.pred.step_s - c->step_s) <= 1e-12 * c->step_s);
    double pk = 0;
    for (int r = 0; r < plan.pp; r++) pk = fmax(pk, plan.pred.peak_mem_bytes[r]);
    ck_assert(fabs(pk - c->peak_mem_bytes) <= 1e-9 * pk);
    ck_assert_msg(zb_plan_write(path, &plan, &err) == ZB_OK, "%s", err.msg);
    zb_status st = zb_plan_read(path, &back, &err);
    unlink(path);
    ck_assert_msg(st == ZB_OK, "zb_plan_read: %s", err.msg);
    ck_assert(back.dp == plan.dp && back.tp == plan.tp && back.pp == plan.pp &&
              back.v == plan.v && back.m == plan.m &&
              back.micro_batch == plan.micro_batch);
    ck_assert_str_eq(back.sched.name, c->schedule);
    ck_assert_int_eq(back.sched.placement, c->sched.placement);
    for (int r = 0; r < plan.pp; r++) {
        ck_assert_int_eq(back.sched.len[r], c->sched.len[r]);
        ck_assert(memcmp(back.sched.acts[r], c->sched.acts[r],
                         (size_t)c->sched.len[r] * sizeof(zb_action)) == 0);
        ck_assert(back.pred.bubble[r] == plan.pred.bubble[r]);
    }
    for (int s = 0; s < plan.pp * plan.v; s++) {
        ck_assert_int_eq(back.stages[s].first_layer, c->spans[s].first_layer);
        ck_assert_int_eq(back.stages[s].n_layers, c->spans[s].n_layers);
        ck_assert(back.costs.t_f[s] == plan.costs.t_f[s]);
    }
    ck_assert(back.pred.step_s == plan.pred.step_s);
    zb_plan_free(&plan);
    zb_plan_free(&back);
}

START_TEST(plan_round_trip) {
    zb_model m = model(8, 64, 2, 4, "a100-80gb");
    zb_search_opts o;
    zb_search_opts_default(&o);
    o.top_k = 3;
    zb_search_result r;
    run(&m, &o, &r);
    for (int i = 0; i < r.n; i++) check_round_trip(&m, &r.cand[i]);
    zb_search_result_free(&r);
    /* a V-placement schedule and an interleaved one */
    const char *names[] = {"zb-v", "interleaved"};
    for (int k = 0; k < 2; k++) {
        zb_search_opts_default(&o);
        o.pp = 4;
        snprintf(o.schedule, sizeof o.schedule, "%s", names[k]);
        run(&m, &o, &r);
        check_round_trip(&m, &r.cand[0]);
        zb_search_result_free(&r);
    }
}
END_TEST

/* The shipped models plan without error. */
START_TEST(shipped_models) {
    const char *files[] = {"models/tiny.yaml", "models/gpt3-175b.yaml"};
    for (int k = 0; k < 2; k++) {
        zb_model m;
        zb_err err;
        ck_assert_msg(zb_model_load(files[k], &m, &err) == ZB_OK, "%s", err.msg);
        zb_search_opts o;
        zb_search_opts_default(&o);
        zb_search_result r;
        run(&m, &o, &r);
        check_batch(&m, &r);
        if (k == 1)
            for (int i = 0; i < r.n; i++)
                ck_assert_int_eq(r.cand[i].dp * r.cand[i].tp * r.cand[i].pp, 1024);
        zb_search_result_free(&r);
    }
}
END_TEST

/* Llama 3 405B with selective recomputation and --levers searched: the
 * layouts at tp 1 and 2 index attention scores past int (the plan reader
 * refuses them, zb_layout_over_limits), so no candidate has them, and the
 * search says why; under --no-staging (another framework) they are back. */
START_TEST(size_limits_respected) {
    zb_model m;
    zb_err err;
    ck_assert_msg(zb_model_load("models/llama3-405b.yaml", &m, &err) == ZB_OK, "%s", err.msg);
    m.train.recompute = ZB_RECOMPUTE_FULL;
    zb_search_opts o;
    zb_search_opts_default(&o);
    o.tp = 2;
    zb_search_result r;
    ck_assert_int_ne(zb_search(&m, &o, &r, &err), ZB_OK);
    ck_assert_msg(strstr(err.msg, "more than zbrun handles") != NULL, "%s", err.msg);
    zb_search_result_free(&r);
    o.no_staging = true;
    run(&m, &o, &r);
    int over = 0;
    for (int i = 0; i < r.n; i++) {
        const zb_candidate *c = &r.cand[i];
        zb_layout l = {c->dp, c->tp, c->pp, c->v, c->micro_batch, c->m};
        long long v, max;
        over += zb_layout_over_limits(&m.arch, &l, &v, &max) != NULL;
    }
    ck_assert_int_gt(over, 0);
    zb_search_result_free(&r);
}
END_TEST

/* zbrun's start-up check (planner/cost/plan_fit.h): a cpu plan needs exactly what the
 * search predicted per rank; the same plan made for a GPU is said so and
 * needs more on the cpu backend (fp32, every activation kept) than on the
 * GPU; a host with less available is refused with one line. */
START_TEST(fit_host_check) {
    zb_model m = model(8, 8, 1, 16, "cpu");
    zb_search_opts o;
    zb_search_opts_default(&o);
    o.pp = 2;
    snprintf(o.schedule, sizeof o.schedule, "zb-h1");
    zb_search_result r;
    run(&m, &o, &r);
    zb_plan plan;
    zb_err err;
    ck_assert(zb_search_make_plan(&m, &r.cand[0], &plan, &err) == ZB_OK);
    double need[2], total = 0;
    ck_assert(zb_plan_mem_need(&plan, "cpu", need, &err) == ZB_OK);
    for (int i = 0; i < 2; i++) {
        ck_assert_msg(fabs(need[i] - plan.pred.peak_mem_bytes[i]) <=
                      1e-9 * need[i], "rank %d: %g vs %g", i, need[i],
                      plan.pred.peak_mem_bytes[i]);
        total += need[i];
    }
    char note[256];
    ck_assert(zb_plan_fit_host(&plan, "p.yaml", true, false, 0, 1, total,
                               false, note, sizeof note, &err) == ZB_OK);
    ck_assert_str_eq(note, "");
    ck_assert(zb_plan_fit_host(&plan, "p.yaml", true, false, 0, 1, 0, false,
                               note, sizeof note, &err) == ZB_OK);
    ck_assert(zb_plan_fit_host(&plan, "p.yaml", true, false, 0, 1, total * 0.99,
                               false, note, sizeof note, &err) == ZB_EINPUT);
    ck_assert_msg(strstr(err.msg, "p.yaml: does not fit this host: 2 ranks") &&
                  strstr(err.msg, "MemAvailable"), "%s", err.msg);
    /* one process per rank: rank 1 alone, the host shared by 2 */
    ck_assert(zb_plan_fit_host(&plan, "p.yaml", true, true, 1, 2, 2 * need[1],
                               false, note, sizeof note, &err) == ZB_OK);
    ck_assert(zb_plan_fit_host(&plan, "p.yaml", true, true, 1, 2, 1.9 * need[1],
                               false, note, sizeof note, &err) == ZB_EINPUT);
    /* made for a GPU: said so, and it needs more on the cpu backend */
    plan.model.cluster.device = *zb_device_lookup("h100-sxm");
    double gpu_need[2];
    ck_assert(zb_plan_mem_need(&plan, "h100-sxm", gpu_need, &err) == ZB_OK);
    ck_assert(zb_plan_fit_host(&plan, "p.yaml", true, false, 0, 1, 1e15,
                               false, note, sizeof note, &err) == ZB_OK);
    ck_assert_msg(strstr(note, "made for h100-sxm"), "%s", note);
    ck_assert(gpu_need[0] - zb_workspace_bytes(&plan.model) <
              need[0] - zb_workspace_bytes(&m));
    ck_assert(zb_plan_fit_host(&plan, "p.yaml", false, false, 0, 1, 1,
                               false, note, sizeof note, &err) == ZB_OK);
    ck_assert_str_eq(note, "");
    zb_plan_free(&plan);
    zb_search_result_free(&r);
}
END_TEST

/* --explain (explain.h): the step parts add up to the step time (other
 * small), the memory parts of the fullest rank to the candidate's peak,
 * TP collectives appear at tp > 1 and not at tp 1; the why line names both
 * candidates. */
START_TEST(explain_parts) {
    zb_model m = model(8, 64, 1, 8, "a100-80gb");
    zb_search_opts o;
    zb_search_opts_default(&o);
    o.top_k = 10;
    zb_search_result r;
    run(&m, &o, &r);
    ck_assert_int_gt(r.n, 1);
    for (int i = 0; i < r.n; i++) {
        const zb_candidate *c = &r.cand[i];
        zb_explain e;
        zb_err err;
        ck_assert(zb_explain_candidate(&m, c, &e, &err) == ZB_OK);
        double sum = e.f_s + e.b_s + e.w_s + e.tp_s + e.bubble_s + e.p2p_s +
                     e.dp_s + e.opt_s;
        ck_assert_msg(fabs(e.other_s) <= 0.02 * c->step_s && e.other_s ==
                      c->step_s - sum, "%d: other %g of %g", i, e.other_s, c->step_s);
        ck_assert(e.f_s > 0 && e.b_s > 0 && e.w_s > 0 && e.bubble_s >= -1e-12);
        ck_assert(c->tp > 1 ? e.tp_s > 0 : e.tp_s == 0);
        double peak = 0;
        for (int k = 0; k < c->pp; k++) {
            double t = e.weights[k] + e.grads[k] + e.optim[k] + e.act[k] +
                       e.staging + e.ws;
            if (t > peak) peak = t;
        }
        ck_assert_msg(fabs(peak - c->peak_mem_bytes) <= 1e-9 * peak, "%d: %g vs %g",
                      i, peak, c->peak_mem_bytes);
    }
    zb_explain e1, e2;
    zb_err err;
    ck_assert(zb_explain_candidate(&m, &r.cand[0], &e1, &err) == ZB_OK);
    ck_assert(zb_explain_candidate(&m, &r.cand[1], &e2, &err) == ZB_OK);
    char buf[1024] = "";
    FILE *f = fmemopen(buf, sizeof buf, "w");
    ck_assert_ptr_nonnull(f);
    zb_explain_why(f, &r.cand[0], &e1, &r.cand[1], &e2);
    fclose(f);
    ck_assert_msg(strstr(buf, "why #1 (") && strstr(buf, "over #2 ("), "%s", buf);
    zb_search_result_free(&r);
}
END_TEST

/* --levers (planner/search/levers.c): on a tight device it beats the model's full
 * recomputation, ranks by step time, and the plan carries the winner's
 * levers; without --levers every candidate has the model's. */
START_TEST(levers_searched) {
    zb_model m = model(8, 64, 1, 8, "a100-80gb");
    m.cluster.device.mem_bytes = 6 * GIB;   /* memory matters */
    m.train.recompute = ZB_RECOMPUTE_FULL;
    zb_search_opts o;
    zb_search_opts_default(&o);
    o.top_k = 20;
    zb_search_result pinned, free_;
    run(&m, &o, &pinned);
    for (int i = 0; i < pinned.n; i++)
        ck_assert(pinned.cand[i].recompute == ZB_RECOMPUTE_FULL &&
                  !pinned.cand[i].sp && !pinned.cand[i].zero1);
    o.levers = true;
    zb_err err;
    ck_assert(zb_search_levers(&m, &o, &free_, &err) == ZB_OK);
    ck_assert_int_gt(free_.n, 0);
    ck_assert(free_.cand[0].step_s < pinned.cand[0].step_s);
    ck_assert(free_.cand[0].recompute != ZB_RECOMPUTE_FULL);
    for (int i = 1; i < free_.n; i++)
        ck_assert(free_.cand[i - 1].step_s <= free_.cand[i].step_s);
    zb_plan plan;
    ck_assert(zb_search_make_plan(&m, &free_.cand[0], &plan, &err) == ZB_OK);
    ck_assert(plan.model.train.recompute == free_.cand[0].recompute);
    ck_assert(plan.model.train.sequence_parallel == free_.cand[0].sp);
    ck_assert(plan.model.train.zero1 == free_.cand[0].zero1);
    ck_assert(fabs(plan.pred.step_s - free_.cand[0].step_s) <= 1e-9 * plan.pred.step_s);
    zb_plan_free(&plan);
    /* sequence parallelism has nothing to split at tp 1 (issue 29): no
     * candidate has it there, and the winner at tp 1 has it off */
    for (int i = 0; i < free_.n; i++)
        ck_assert(!(free_.cand[i].sp && free_.cand[i].tp == 1));
    zb_search_result_free(&pinned);
    zb_search_result_free(&free_);
}
END_TEST

/* --solver ilp re-solves the automatic schedules of the top k, warm-started
 * from the heuristic's: no candidate may come out slower than the
 * heuristic made it, every schedule stays valid (the plan re-simulates it),
 * and the winner is at least as fast as the heuristic search's. */
START_TEST(ilp_refines_top_k) {
    zb_model m = model(8, 16, 1, 4, "a100-80gb");
    zb_search_opts o;
    zb_search_opts_default(&o);
    o.dp = 1; o.tp = 1; o.pp = 4; o.micro_batch = 2; o.top_k = 8;
    o.time_limit_s = 0.5;
    zb_search_result h, i;
    run(&m, &o, &h);
    int autos = 0, taken = 0;
    double before[64];
    ck_assert_int_le(h.n, 64);
    for (int k = 0; k < h.n; k++) {
        before[k] = h.cand[k].step_s;
        autos += strncmp(h.cand[k].schedule, "zb-auto", 7) == 0;
    }
    ck_assert_int_gt(autos, 0);
    zb_err err;
    ck_assert_int_eq(zb_search_refine_ilp(&m, &h, o.top_k, 0.5, o.mip_gap, &err),
                     ZB_OK);
    for (int k = 0; k < h.n; k++) {
        ck_assert_double_le(h.cand[k].step_s, before[k]);
        taken += strncmp(h.cand[k].rep.solver, "ilp", 3) == 0;
    }
    o.solver = ZB_SOLVER_ILP;
    run(&m, &o, &i);
    zb_search_result_free(&h);
    o.solver = ZB_SOLVER_HEURISTIC;
    run(&m, &o, &h);
    ck_assert_double_le(i.cand[0].step_s, h.cand[0].step_s);
    for (int k = 0; k < i.n; k++) {
        for (int j = 0; j < h.n; j++)
            if (h.cand[j].key == i.cand[k].key)
                ck_assert_double_le(i.cand[k].step_s, h.cand[j].step_s);
        ck_assert(i.cand[k].peak_mem_bytes <= i.cand[k].capacity_bytes);
        zb_plan plan;
        ck_assert_msg(zb_search_make_plan(&m, &i.cand[k], &plan, &err) == ZB_OK,
                      "%s", err.msg);
        ck_assert_double_eq_tol(plan.pred.step_s, i.cand[k].step_s,
                                1e-9 * i.cand[k].step_s);
        zb_plan_free(&plan);
    }
    printf("ilp_refines_top_k: %d automatic schedule(s) in the top %d, %d "
           "took the ILP's\n", autos, o.top_k, taken);
    /* zb-auto is near optimal, so the ILP rarely beats it: give one
     * zb-auto candidate ZB-H1's order instead (valid, within its memory,
     * slower) and the ILP must find a faster one and take it */
    zb_candidate *c = NULL;
    for (int k = 0; k < h.n && !c; k++)
        if (strcmp(h.cand[k].schedule, "zb-auto") == 0) c = &h.cand[k];
    ck_assert_ptr_nonnull(c);
    zb_sched_params prm = {.p = c->pp, .m = c->m, .v = 1};
    zb_schedule zh;
    ck_assert_int_eq(zb_schedule_make("zb-h1", &prm, &zh, NULL, &err), ZB_OK);
    zb_schedule_free(&c->sched);
    c->sched = zh;
    zb_plan plan;
    ck_assert_int_eq(zb_search_make_plan(&m, c, &plan, &err), ZB_OK);
    c->step_s = plan.pred.step_s;          /* the step of ZB-H1's order */
    c->pipeline_s = plan.pred.pipeline_s;
    zb_plan_free(&plan);
    double slow = c->step_s;
    long key = c->key;
    /* that candidate alone (a one-entry view of h), with no time limit
     * (the solve stops at the MIP gap): the check is about taking a better
     * order, not about speed, and a time budget made it fail where the
     * machine or the build is slow (ASan at -O1 needed more than 2 s,
     * valgrind more than the 60 s shared by 8 candidates it then had) */
    zb_search_result one = {.cand = c, .n = 1, .cap = 1};
    ck_assert_int_eq(zb_search_refine_ilp(&m, &one, 1, INFINITY, o.mip_gap, &err),
                     ZB_OK);
    ck_assert(c->key == key);
    ck_assert_msg(c->step_s < slow, "ILP kept ZB-H1's %g s", slow);
    ck_assert(strncmp(c->rep.solver, "ilp", 3) == 0);
    ck_assert(c->peak_mem_bytes <= c->capacity_bytes);
    ck_assert_int_eq(zb_search_make_plan(&m, c, &plan, &err), ZB_OK);
    ck_assert_double_eq_tol(plan.pred.step_s, c->step_s, 1e-9 * c->step_s);
    zb_plan_free(&plan);
    for (int k = 1; k < h.n; k++)
        ck_assert(h.cand[k - 1].step_s <= h.cand[k].step_s);
    zb_search_result_free(&h);
    zb_search_result_free(&i);
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("search");
    TCase *t = tcase_create("core");
    tcase_set_timeout(t, 60);
    tcase_add_test(t, forced_choices);
    tcase_add_test(t, redundant_schedules_skipped);
    tcase_add_test(t, allreduce_overlaps_pipeline_tail);
    tcase_add_test(t, bad_forced);
    tcase_add_test(t, gpu_world_rules);
    tcase_add_test(t, cpu_world_rules);
    tcase_add_test(t, drops_and_ranking);
    tcase_add_test(t, nothing_fits);
    tcase_add_test(t, formulas_by_hand);
    tcase_add_test(t, dp_overlap_by_hand);
    tcase_add_test(t, dp_group_links);
    tcase_add_test(t, plan_round_trip);
    tcase_add_test(t, shipped_models);
    tcase_add_test(t, size_limits_respected);
    tcase_add_test(t, fit_host_check);
    tcase_add_test(t, explain_parts);
    tcase_add_test(t, levers_searched);
    tcase_add_test(t, ilp_refines_top_k);
    suite_add_tcase(s, t);
    return s;
}

int main(void) {
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
