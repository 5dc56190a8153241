/* bench_search.c - how fast the planner is.
 *
 *   1. The whole plan for models/gpt3-175b.yaml (1024 GPUs): load, search,
 *      build the plan; median of 5 runs; target < 1 s on one core.
 *   1b. A 1T-parameter GPT (Narayanan et al. 2021, Table 1: 128 layers,
 *      hidden 25600, 160 heads, sequence 2048, batch 3072) on 16384
 *      A100-80GB: models/gpt3-175b.yaml with those sizes (--set), planned
 *      by $BIN/zbplan (default bin/) as a user runs it, with the model
 *      file's levers, with the memory levers searched (--levers:
 *      recompute, sequence parallelism, ZeRO-1), and with --levers
 *      --solver ilp; median of 5 runs each, wall and CPU time (the
 *      planner's threads add up in CPU) and the load average beside them;
 *      targets < 1 s wall, < 10 s with --solver ilp.
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
#include <spawn.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>   /* environ (_GNU_SOURCE) */

#include "common/zb_model.h"
#include "common/zb_plan.h"
#include "common/zb_sim.h"
#include "planner/registry/registry.h"
#include "planner/search/search.h"

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

/* One `$BIN/zbplan ARGS -q -o FILE` run: wall seconds (CPU seconds of
 * the child in *cpu), or -1 (message printed). */
static double cli_once(char *const *argv, double *cpu) {
    double t0 = now_s();
    pid_t pid;
    if (posix_spawn(&pid, argv[0], NULL, NULL, argv, environ) != 0) {
        fprintf(stderr, "bench: cannot start %s\n", argv[0]);
        return -1;
    }
    int status;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) != pid) {
        fprintf(stderr, "bench: wait for %s failed\n", argv[0]);
        return -1;
    }
    double t = now_s() - t0;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "bench: %s failed\n", argv[0]);
        return -1;
    }
    *cpu = (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec +
           (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
    return t;
}

/* The 1T model (models/gpt3-175b.yaml resized) planned by the CLI with
 * extra arguments `extra` (NULL-terminated), median of RUNS. */
static void bench_1t(const char *what, const char *const *extra, double target) {
    const char *bin = getenv("BIN") ? getenv("BIN") : "bin";
    char exe[512];
    snprintf(exe, sizeof exe, "%s/zbplan", bin);
    /* each --set is checked in turn: heads 128 divides both hiddens */
    const char *base[] = {exe, "models/gpt3-175b.yaml", "--set", "model.layers=128",
                          "--set", "model.heads=128", "--set", "model.hidden=25600",
                          "--set", "model.heads=160",
                          "--set", "model.vocab=51200", "--set",
                          "training.global_batch=3072", "--set", "cluster.nodes=2048",
                          "-q", "-o", "/tmp/zb_bench_1t.yaml"};
    const char *argv[32];
    int n = 0;
    for (size_t i = 0; i < sizeof base / sizeof base[0]; i++) argv[n++] = base[i];
    for (int i = 0; extra[i] && n < 31; i++) argv[n++] = extra[i];
    argv[n] = NULL;
    double wall[RUNS], cpu[RUNS], load[3] = {0, 0, 0};
    for (int i = 0; i < RUNS; i++)
        if ((wall[i] = cli_once((char *const *)argv, &cpu[i])) < 0) return;
    if (getloadavg(load, 3) < 1) load[0] = -1;
    double mw = median(wall, RUNS), mc = median(cpu, RUNS);
    printf("zbplan 1T on 16384 GPUs%s: median %.3f s wall, %.3f s CPU of %d "
           "runs (load %.2f), target < %g s wall: %s\n", what, mw, mc, RUNS,
           load[0], target, mw < target ? "PASS" : "MISS");
    remove("/tmp/zb_bench_1t.yaml");
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
    bench_1t("", (const char *const[]){NULL}, 1.0);
    bench_1t(", --levers", (const char *const[]){"--levers", NULL}, 1.0);
    bench_1t(", --levers --solver ilp",
             (const char *const[]){"--levers", "--solver", "ilp", NULL}, 10.0);
    bench_sim("1f1b", 32, 256);
    bench_sim("zb-h1", 32, 256);
    bench_ilp("models/zb-6.2b.yaml");
    bench_ilp("models/gpt3-175b.yaml");
    return 0;
}
