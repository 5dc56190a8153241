/* bench_search.c - how fast the planner is.
 *
 *   1. The whole plan for models/gpt3-175b.yaml (1024 GPUs): load, search,
 *      build the plan; median of 5 runs; target < 1 s on one core.
 *   1b. A 1T-parameter GPT (Narayanan et al. 2021, Table 1: 128 layers,
 *      hidden 25600, 160 heads, sequence 2048, batch 3072) on 16384
 *      A100-80GB, the memory levers searched too (--levers: recompute,
 *      sequence parallelism, ZeRO-1): search and plan, median of 5 runs,
 *      wall and CPU time; target < 1 s.
 *   2. Simulator throughput (zb_simulate_fast with a reused workspace) for
 *      1F1B and ZB-H1 at p = 32, m = 256, in passes (actions) per second;
 *      median of 5 runs of >= 0.2 s each; target >= 5 million passes/s.
 *   3. --solver ilp (the heuristic search, then the ILP re-solving the
 *      automatic schedules of the top k in what is left of --time-limit,
 *      default 10 s) on models/zb-6.2b.yaml and models/gpt3-175b.yaml, one
 *      run each: search and plan wall time, target < 10 s, and the
 *      winner's step beside the heuristic search's (never slower).
 * Prints PASS or MISS per target; the exit status is 0 either way (numbers
 * depend on the machine). Run from the repository root.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/zb_model.h"
#include "common/zb_plan.h"
#include "common/zb_sim.h"
#include "planner/schedules.h"
#include "planner/search.h"

#define RUNS 5

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return v[n / 2];
}

/* One full planning run; returns its time or -1 (message printed). */
static double plan_once(const char *path, int *ncand) {
    double t0 = now_s();
    zb_model m;
    zb_err err;
    zb_search_opts o;
    zb_search_result r;
    zb_plan plan;
    if (zb_model_load(path, &m, &err) != ZB_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return -1;
    }
    zb_search_opts_default(&o);
    zb_status st = zb_search(&m, &o, &r, &err);
    if (st == ZB_OK) st = zb_search_make_plan(&m, &r.cand[0], &plan, &err);
    double t = now_s() - t0;
    if (st == ZB_OK) {
        *ncand = r.simulated;
        zb_plan_free(&plan);
    } else {
        fprintf(stderr, "search: %s\n", err.msg);
    }
    zb_search_result_free(&r);
    return st == ZB_OK ? t : -1;
}

static double cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void bench_levers_1t(void) {
    zb_model m;
    memset(&m, 0, sizeof m);
    snprintf(m.name, sizeof m.name, "gpt-1t");
    m.arch = (zb_arch){.layers = 128, .hidden = 25600, .heads = 160,
                       .ffn_hidden = 4 * 25600, .seq_len = 2048,
                       .vocab = 51200, .tied_embeddings = true};
    m.train.global_batch = 3072;
    m.train.steps = 1;
    m.train.precision = ZB_PREC_BF16;
    m.train.opt = (zb_optim){.lr = 1e-4, .beta1 = 0.9, .beta2 = 0.95,
                             .eps = 1e-8, .grad_clip = 1.0};
    m.cluster.nodes = 2048;
    m.cluster.devices_per_node = 8;
    m.cluster.device = *zb_device_lookup("a100-80gb");
    m.cluster.intra_bw_Bps = 300e9;
    m.cluster.intra_lat_s = 5e-6;
    m.cluster.inter_bw_Bps = 25e9;
    m.cluster.inter_lat_s = 10e-6;
    double wall[RUNS], cpu[RUNS];
    int sims = 0, splits = 0;
    char best[128] = "";
    for (int i = 0; i < RUNS; i++) {
        double t0 = now_s(), c0 = cpu_s();
        zb_search_opts o;
        zb_search_opts_default(&o);
        o.levers = true;
        zb_search_result r;
        zb_plan plan;
        zb_err err;
        zb_status st = zb_search_levers(&m, &o, &r, &err);
        if (st == ZB_OK) st = zb_search_make_plan(&m, &r.cand[0], &plan, &err);
        wall[i] = now_s() - t0;
        cpu[i] = cpu_s() - c0;
        if (st != ZB_OK) {
            fprintf(stderr, "search 1T: %s\n", err.msg);
            zb_search_result_free(&r);
            return;
        }
        sims = r.simulated;
        splits = r.splits;
        const zb_candidate *c = &r.cand[0];
        snprintf(best, sizeof best, "dp %d tp %d pp %d %s, recompute %d sp %d "
                 "zero1 %d, %.2f s", c->dp, c->tp, c->pp, c->schedule,
                 (int)c->recompute, c->sp, c->zero1, c->step_s);
        zb_plan_free(&plan);
        zb_search_result_free(&r);
    }
    double mw = median(wall, RUNS), mc = median(cpu, RUNS);
    printf("search 1T on 16384 GPUs, levers searched: median %.4f s wall, "
           "%.4f s CPU of %d runs (%d layouts, %d schedules simulated; best %s), "
           "target < 1 s: %s\n", mw, mc, RUNS, splits, sims, best,
           mc < 1.0 ? "PASS" : "MISS");
}

static void bench_search(void) {
    const char *path = "models/gpt3-175b.yaml";
    double t[RUNS];
    int sims = 0;
    for (int i = 0; i < RUNS; i++)
        if ((t[i] = plan_once(path, &sims)) < 0) return;
    double med = median(t, RUNS);
    printf("search %s: median %.4f s of %d runs (%d schedules simulated), "
           "target < 1 s: %s\n", path, med, RUNS, sims,
           med < 1.0 ? "PASS" : "MISS");
}

/* Simulations per second of one schedule, as passes per second. */
static void bench_sim(const char *name, int p, int m) {
    zb_sched_params prm = {.p = p, .m = m, .v = 1};
    zb_schedule s;
    zb_costs c;
    zb_err err;
    if (zb_schedule_make(name, &prm, &s, NULL, &err) != ZB_OK ||
        zb_costs_uniform(&c, p, 1.0, 1.1, 0.9, 0.05, 1.0, 0.5, &err) != ZB_OK) {
        fprintf(stderr, "bench %s: %s\n", name, err.msg);
        return;
    }
    zb_sim_ws *ws = zb_sim_ws_new();
    long passes = 0;
    for (int r = 0; r < p; r++) passes += s.len[r];
    double rate[RUNS], mk = 0, pk = 0;
    for (int k = 0; k < RUNS && ws; k++) {
        long iters = 0;
        double t0 = now_s(), t;
        do {
            if (zb_simulate_fast(&s, &c, ws, &mk, &pk, &err) != ZB_OK) {
                fprintf(stderr, "bench %s: %s\n", name, err.msg);
                goto out;
            }
            iters++;
        } while ((t = now_s() - t0) < 0.2);
        rate[k] = (double)iters * (double)passes / t;
    }
    if (ws) {
        double med = median(rate, RUNS);
        printf("sim %s p=%d m=%d: %ld passes, median %.2f M passes/s, "
               "target >= 5 M: %s\n", name, p, m, passes, med / 1e6,
               med >= 5e6 ? "PASS" : "MISS");
    }
out:
    zb_sim_ws_free(ws);
    zb_schedule_free(&s);
    zb_costs_free(&c);
}

/* Search and plan with one solver: wall seconds, or -1 (message printed). */
static double ilp_once(const char *path, zb_solver solver, double *step,
                       char *solvers, size_t len) {
    double t0 = now_s();
    zb_model m;
    zb_err err;
    zb_search_opts o;
    zb_search_result r;
    zb_plan plan;
    if (zb_model_load(path, &m, &err) != ZB_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return -1;
    }
    zb_search_opts_default(&o);
    o.solver = solver;
    zb_status st = zb_search(&m, &o, &r, &err);
    if (st == ZB_OK) st = zb_search_make_plan(&m, &r.cand[0], &plan, &err);
    double t = now_s() - t0;
    if (st != ZB_OK) {
        fprintf(stderr, "search %s: %s\n", path, err.msg);
        zb_search_result_free(&r);
        return -1;
    }
    *step = r.cand[0].step_s;
    size_t at = 0;
    solvers[0] = 0;
    for (int i = 0; i < r.n && at < len; i++)
        at += (size_t)snprintf(solvers + at, len - at, "%s%s", i ? " " : "",
                               r.cand[i].rep.solver);
    zb_plan_free(&plan);
    zb_search_result_free(&r);
    return t;
}

static void bench_ilp(const char *path) {
    double hs = 0, is = 0;
    char hsol[256], isol[256];
    double th = ilp_once(path, ZB_SOLVER_HEURISTIC, &hs, hsol, sizeof hsol);
    double ti = th < 0 ? -1 : ilp_once(path, ZB_SOLVER_ILP, &is, isol, sizeof isol);
    if (ti < 0) return;
    printf("search %s --solver ilp: %.2f s wall (heuristic alone %.3f s), "
           "step %.4f s (heuristic %.4f s%s), top-k solvers [%s], target "
           "< 10 s: %s\n", path, ti, th, is, hs,
           is <= hs ? "" : ", SLOWER", isol, ti < 10.0 && is <= hs ? "PASS" : "MISS");
}

int main(void) {
    bench_search();
    bench_levers_1t();
    bench_sim("1f1b", 32, 256);
    bench_sim("zb-h1", 32, 256);
    bench_ilp("models/zb-6.2b.yaml");
    bench_ilp("models/gpt3-175b.yaml");
    return 0;
}
