/* main.c - zbrun: execute a plan written by zbplan (docs/zbrun.md).
 *
 *   zbrun PLAN [--steps N] [--backend cpu|cuda|auto] [--report FILE]
 *              [--trace FILE] [--svg FILE] [--checkpoint-every N]
 *              [--checkpoint-dir DIR] [--resume] [--threads N] [-q]
 *
 * Prints one line per step (on a terminal: a live progress line and a step
 * line every few steps), then a table of measured against predicted numbers
 * per pipeline rank. Files are written only when asked for. Exit status: 0
 * done, 2 bad usage or bad plan (nothing computed), 1 failure while running.
 */
#include "version.h"   /* ZB_VERSION: git describe at build time (Makefile) */
#include <errno.h>
#include <limits.h>
#include <omp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/zb_error.h"
#include "common/zb_plan.h"
#include "executor/blas_env.h"
#include "executor/data.h"
#include "executor/report.h"
#include "executor/runtime.h"
#include "executor/svg.h"
#include "executor/trace.h"

static const char usage[] =
    "usage: zbrun PLAN [options]\n"
    "Train the model of PLAN (written by zbplan) with its schedule.\n"
    "  --steps N             train N steps (default: the plan's training.steps)\n"
    "  --backend B           cpu, cuda or auto (default auto: cpu in this build)\n"
    "  --report FILE         write the run report (YAML; default: none)\n"
    "  --trace FILE          write a Chrome/Perfetto trace (JSON; default: none)\n"
    "  --svg FILE            write the planned and executed timelines (SVG; default: none)\n"
    "  --checkpoint-every N  save a checkpoint every N steps (default: never)\n"
    "  --checkpoint-dir DIR  where checkpoints go (default: checkpoints)\n"
    "  --resume              continue after the newest checkpoint in DIR (default: off)\n"
    "  --threads N           OpenMP threads per rank (default: max(1, cores / ranks))\n"
    "  -q                    print nothing but errors (default: off)\n"
    "  -h, --help            this text\n"
    "  --version             zbrun's version (git describe at build time)\n"
    "Environment: OMP_WAIT_POLICY (default passive), OPENBLAS_CORETYPE (default:\n"
    "  the best kernel this CPU runs; a value you set is kept), ZB_PIN=0 (do not\n"
    "  bind ranks to cores; default: bound when ranks x threads fit the cores).\n"
    "Exit status: 0 done; 2 bad usage, bad plan or missing data (nothing run);\n"
    "  1 failure while running (I/O, non-finite loss).\n"
    "Docs: docs/zbrun.md (options, output, report), docs/plan-format.md.\n";

typedef struct {
    const char *plan_path, *backend, *report, *trace, *svg, *ckpt_dir;
    int steps, ckpt_every, threads;
    bool resume, quiet, help, version;
} args;

/* "--name value" or "--name=value": true if argv[*i] is this option. */
static bool take_opt(int argc, char **argv, int *i, const char *name,
                     const char **val, zb_status *st, zb_err *err) {
    const char *a = argv[*i];
    size_t n = strlen(name);
    if (strncmp(a, name, n) != 0 || (a[n] != '\0' && a[n] != '=')) return false;
    if (a[n] == '=') {
        *val = a + n + 1;
    } else if (*i + 1 < argc) {
        *val = argv[++*i];
    } else {
        *st = zb_fail(err, ZB_EINPUT, "%s needs a value", name);
        *val = NULL;
    }
    return true;
}

static zb_status parse_int(const char *name, const char *text, int min,
                           int *out, zb_err *err) {
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (text[0] == '\0' || *end != '\0' || errno || v < min || v > INT_MAX)
        return zb_fail(err, ZB_EINPUT, "%s must be an integer >= %d, got '%s'",
                       name, min, text);
    *out = (int)v;
    return ZB_OK;
}

/* One option at argv[*i]; advances *i past it. */
static zb_status parse_one(int argc, char **argv, int *i, args *a, zb_err *err) {
    const char *v = NULL, *arg = argv[*i];
    zb_status st = ZB_OK;
    if (!strcmp(arg, "-h") || !strcmp(arg, "--help")) a->help = true;
    else if (!strcmp(arg, "--version")) a->version = true;
    else if (!strcmp(arg, "-q") || !strcmp(arg, "--quiet")) a->quiet = true;
    else if (!strcmp(arg, "--resume")) a->resume = true;
    else if (take_opt(argc, argv, i, "--steps", &v, &st, err)) {
        if (st == ZB_OK) st = parse_int("--steps", v, 1, &a->steps, err);
    } else if (take_opt(argc, argv, i, "--threads", &v, &st, err)) {
        if (st == ZB_OK) st = parse_int("--threads", v, 1, &a->threads, err);
    } else if (take_opt(argc, argv, i, "--checkpoint-every", &v, &st, err)) {
        if (st == ZB_OK) st = parse_int("--checkpoint-every", v, 1, &a->ckpt_every, err);
    } else if (take_opt(argc, argv, i, "--checkpoint-dir", &v, &st, err)) a->ckpt_dir = v;
    else if (take_opt(argc, argv, i, "--backend", &v, &st, err)) a->backend = v;
    else if (take_opt(argc, argv, i, "--report", &v, &st, err)) a->report = v;
    else if (take_opt(argc, argv, i, "--trace", &v, &st, err)) a->trace = v;
    else if (take_opt(argc, argv, i, "--svg", &v, &st, err)) a->svg = v;
    else if (arg[0] == '-' && arg[1] != '\0')
        st = zb_fail(err, ZB_EINPUT, "unknown option '%s' (see zbrun --help)", arg);
    else if (a->plan_path)
        st = zb_fail(err, ZB_EINPUT, "one plan only, got '%s' and '%s'", a->plan_path, arg);
    else a->plan_path = arg;
    (*i)++;
    return st;
}

static zb_status parse_args(int argc, char **argv, args *a, zb_err *err) {
    memset(a, 0, sizeof *a);
    a->backend = "auto";
    for (int i = 1; i < argc;) ZB_TRY(parse_one(argc, argv, &i, a, err));
    if (a->help || a->version) return ZB_OK;
    if (!a->plan_path) return zb_fail(err, ZB_EINPUT, "no plan given (usage: zbrun PLAN [options])");
    if (strcmp(a->backend, "cpu") && strcmp(a->backend, "cuda") && strcmp(a->backend, "auto"))
        return zb_fail(err, ZB_EINPUT, "--backend must be cpu, cuda or auto, got '%s'",
                       a->backend);
    if (!strcmp(a->backend, "cuda"))
        return zb_fail(err, ZB_EINPUT, "cuda backend not built (no GPU support compiled in)");
    a->backend = "cpu";   /* auto: the only backend compiled in */
    return ZB_OK;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- per-step output ---- */

typedef struct {
    bool tty, quiet, started;
    int first, every;
    const char *ckpt_dir;
} printer;

static void print_step_line(const zb_step_info *s, double eta_s) {
    printf("step %d/%d loss %.6f lr %.6e grad_norm %.6f tokens_per_s %.1f ms %.3f"
           " elapsed_s %.1f eta_s %.1f\n", s->step, s->steps, s->loss, s->lr,
           s->grad_norm, s->tokens_per_s, s->step_s * 1e3, s->elapsed_s, eta_s);
}

static void on_step(const zb_step_info *s, void *ctx) {
    printer *p = ctx;
    if (p->quiet) return;
    if (!p->started) {
        p->started = true;
        p->first = s->step;
        if (s->step > 1)
            printf("resumed after step %d from %s\n", s->step - 1, p->ckpt_dir);
    }
    int done = s->step - p->first + 1, left = s->steps - s->step;
    double eta = left * s->elapsed_s / done;
    if (!p->tty) {
        print_step_line(s, eta);
        fflush(stdout);
        return;
    }
    if (s->step == p->first || s->step % p->every == 0 || left == 0) {
        printf("\r\033[K");
        print_step_line(s, eta);
    }
    printf("\r\033[Kstep %d/%d  loss %.4f  %.0f tokens/s  %.1f s left", s->step,
           s->steps, s->loss, s->tokens_per_s, eta);
    fflush(stdout);
}

/* ---- after the run ---- */

static zb_status write_outputs(const args *a, const zb_plan *plan,
                               const zb_run_result *res, zb_report_meta *meta,
                               zb_err *err) {
    meta->load_end = zb_load_average();
    meta->wall_s = now_s() - meta->wall_s;   /* held the start until now */
    if (a->report) ZB_TRY(zb_report_write(a->report, plan, res, meta, err));
    if (a->trace) ZB_TRY(zb_trace_write(a->trace, plan, res, err));
    if (a->svg) ZB_TRY(zb_svg_write(a->svg, plan, res, err));
    if (a->quiet) return ZB_OK;
    if (a->report) printf("report: %s\n", a->report);
    if (a->trace) printf("trace: %s (open it at https://ui.perfetto.dev)\n", a->trace);
    if (a->svg) printf("timelines: %s (open it in a browser)\n", a->svg);
    if (a->ckpt_every) printf("checkpoints: %s/\n", a->ckpt_dir ? a->ckpt_dir : "checkpoints");
    printf("wall time %.1f s (load average %.2f at the start, %.2f at the end, "
           "%d cores)\n", meta->wall_s, meta->load_start, meta->load_end,
           meta->cores);
    return ZB_OK;
}

static zb_status print_summary(const zb_plan *plan, const zb_run_result *res,
                               zb_err *err) {
    if (res->n_steps == 0) {
        printf("nothing to run: the checkpoint is at step %d of %d\n",
               res->resumed_from, res->total_steps);
        return ZB_OK;
    }
    zb_report_pred pred;
    ZB_TRY(zb_report_pred_make(plan, &pred, err));
    zb_report_table(stdout, plan, res, &pred);
    zb_report_pred_free(&pred);
    printf("loss %.6f -> %.6f over steps %d..%d\n", res->loss[0],
           res->loss[res->n_steps - 1], res->first_step,
           res->first_step + res->n_steps - 1);
    return ZB_OK;
}

static void print_header(const args *a, const zb_plan *plan, int threads) {
    int steps = a->steps ? a->steps : plan->model.train.steps;
    printf("zbrun %s: %s, %s dp %d tp %d pp %d v %d, %d microbatches of %d, "
           "%d ranks x %d threads, %s backend, %d steps\n", a->plan_path,
           plan->model.name, plan->sched.name, plan->dp, plan->tp, plan->pp,
           plan->v, plan->m, plan->micro_batch, zb_plan_world(plan), threads,
           a->backend, steps);
    char blas[256];
    zb_blas_describe(blas, sizeof blas);
    printf("blas: %s\n", blas);
    int cores = omp_get_num_procs();
    if (zb_plan_world(plan) > cores)
        printf("note: %d ranks share %d cores; measured spans and bubbles "
               "include the time-sharing\n", zb_plan_world(plan), cores);
    const zb_training *t = &plan->model.train;
    /* say what the CPU stage does not do, rather than let numbers mislead */
    if (t->precision != ZB_PREC_FP32 || t->recompute != ZB_RECOMPUTE_NONE ||
        t->sequence_parallel)
        printf("note: the cpu backend computes in fp32 and keeps every "
               "activation; the plan's precision, recompute and sequence "
               "parallelism shape only its predictions\n");
}

static zb_status run_main(const args *a, zb_err *err) {
    char blas[256];
    zb_blas_describe(blas, sizeof blas);
    zb_report_meta meta = {.backend = a->backend, .plan_path = a->plan_path,
                           .version = ZB_VERSION, .blas = blas,
                           .wall_s = now_s(), .cores = omp_get_num_procs(),
                           .load_start = zb_load_average()};
    zb_plan plan;
    /* a plan that cannot be read is bad input, even when it is missing */
    if (zb_plan_read(a->plan_path, &plan, err) != ZB_OK) return ZB_EINPUT;
    /* empty text path: the built-in corpus; relative: from here or the
     * plan's folder (data.h) */
    if (zb_data_locate(a->plan_path, &plan.model, err) != ZB_OK) {
        zb_plan_free(&plan);
        return ZB_EINPUT;
    }
    if (zb_plan_world(&plan) > ZB_RUN_MAX_WORLD) {
        zb_fail(err, ZB_EINPUT, "%s: the plan needs %d ranks; the cpu backend "
                "runs at most %d (threads of one process)", a->plan_path,
                zb_plan_world(&plan), ZB_RUN_MAX_WORLD);
        zb_plan_free(&plan);
        return ZB_EINPUT;
    }
    int threads = a->threads ? a->threads
                             : zb_threads_per_rank(omp_get_num_procs(), zb_plan_world(&plan));
    printer pr = {.tty = isatty(STDOUT_FILENO), .quiet = a->quiet,
                  .ckpt_dir = a->ckpt_dir ? a->ckpt_dir : "checkpoints"};
    int steps = a->steps ? a->steps : plan.model.train.steps;
    pr.every = steps >= 50 ? steps / 10 : 5;
    zb_run_opts o = {.steps = a->steps, .threads = threads,
                     .checkpoint_every = a->ckpt_every, .checkpoint_dir = a->ckpt_dir,
                     .resume = a->resume, .on_step = on_step, .on_step_ctx = &pr};
    if (!a->quiet) print_header(a, &plan, threads);
    fflush(stdout);
    zb_run_result res;
    zb_status st = zb_run(&plan, &o, &res, err);
    if (pr.tty && pr.started) printf("\r\033[K");
    if (st == ZB_OK && !a->quiet) st = print_summary(&plan, &res, err);
    if (st == ZB_OK) st = write_outputs(a, &plan, &res, &meta, err);
    zb_run_result_free(&res);
    zb_plan_free(&plan);
    return st;
}

/* Ranks are threads that block on each other (receives, all-reduces);
 * OpenMP workers that spin while waiting would steal the cores of the
 * ranks doing work. libgomp reads OMP_WAIT_POLICY once, when it is
 * loaded, so when the user has not chosen one we set "passive" and
 * re-execute ourselves once; if that fails we simply go on. */
static void prefer_passive_openmp(char **argv) {
    bool again = !getenv("OMP_WAIT_POLICY") &&
                 setenv("OMP_WAIT_POLICY", "passive", 0) == 0;
    /* OpenBLAS too reads OPENBLAS_CORETYPE only when loaded (blas_env.h) */
    if (zb_blas_env_prepare()) again = true;
    if (again) execv("/proc/self/exe", argv);
}

int main(int argc, char **argv) {
    prefer_passive_openmp(argv);
    args a;
    zb_err err = {{0}};
    zb_status st = parse_args(argc, argv, &a, &err);
    if (st == ZB_OK && a.help) {
        fputs(usage, stdout);
        return 0;
    }
    if (st == ZB_OK && a.version) {
        printf("zbrun %s\n", ZB_VERSION);
        return 0;
    }
    if (st != ZB_OK) {
        fprintf(stderr, "zbrun: %s\n", err.msg);
        return zb_exit_code(st);
    }
    st = run_main(&a, &err);
    fflush(stdout);
    if (st == ZB_EINPUT)
        fprintf(stderr, "%s\n", err.msg);   /* "file:line:col: ..." already */
    else if (st != ZB_OK)
        fprintf(stderr, "zbrun: %s\n", err.msg);
    return zb_exit_code(st);
}
