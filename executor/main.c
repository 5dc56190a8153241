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
 *
 * Under a launcher (launch.h: mpirun, srun, ...) each process runs one rank
 * (procs.h); rank 0 prints and writes the files, other ranks print only
 * their errors, prefixed "rank N:"; a failure after MPI is up ends the job.
 */
#include <errno.h>
#include <limits.h>
#include <omp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/zb_error.h"
#include "common/zb_plan.h"
#include "executor/launch.h"
#include "executor/procs.h"
#include "executor/report.h"
#include "executor/runtime.h"
#include "executor/svg.h"
#include "executor/trace.h"

static const char usage[] =
    "usage: zbrun PLAN [options]\n"
    "  --steps N             train N steps (default: the plan's training.steps)\n"
    "  --backend B           cpu, cuda or auto (default auto: cpu in this build)\n"
    "  --report FILE         write the run report (YAML)\n"
    "  --trace FILE          write a Chrome/Perfetto trace (JSON)\n"
    "  --svg FILE            write the planned and executed timelines (SVG)\n"
    "  --checkpoint-every N  save a checkpoint every N steps (default: never)\n"
    "  --checkpoint-dir DIR  where checkpoints go (default: checkpoints)\n"
    "  --resume              continue after the newest checkpoint in DIR\n"
    "  --threads N           OpenMP threads per rank (default: cores / ranks)\n"
    "  -q                    print nothing but errors\n"
    "  -h, --help            this text\n";

typedef struct {
    const char *plan_path, *backend, *report, *trace, *svg, *ckpt_dir;
    int steps, ckpt_every, threads;
    bool resume, quiet, help;
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
    if (a->help) return ZB_OK;
    if (!a->plan_path) return zb_fail(err, ZB_EINPUT, "no plan given (usage: zbrun PLAN [options])");
    if (strcmp(a->backend, "cpu") && strcmp(a->backend, "cuda") && strcmp(a->backend, "auto"))
        return zb_fail(err, ZB_EINPUT, "--backend must be cpu, cuda or auto, got '%s'",
                       a->backend);
    if (!strcmp(a->backend, "cuda"))
        return zb_fail(err, ZB_EINPUT, "cuda backend not built (no GPU support compiled in)");
    a->backend = "cpu";   /* auto: the only backend compiled in */
    return ZB_OK;
}

/* ---- per-step output ---- */

typedef struct {
    bool tty, quiet, started;
    int first, every;
    const char *ckpt_dir;
} printer;

static void print_step_line(const zb_step_info *s) {
    printf("step %d/%d loss %.6f lr %.6e grad_norm %.6f tokens_per_s %.1f ms %.3f\n",
           s->step, s->steps, s->loss, s->lr, s->grad_norm, s->tokens_per_s,
           s->step_s * 1e3);
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
    if (!p->tty) {
        print_step_line(s);
        fflush(stdout);
        return;
    }
    int done = s->step - p->first + 1, left = s->steps - s->step;
    if (s->step == p->first || s->step % p->every == 0 || left == 0) {
        printf("\r\033[K");
        print_step_line(s);
    }
    double eta = left * s->elapsed_s / done;
    printf("\r\033[Kstep %d/%d  loss %.4f  %.0f tokens/s  %.1f s left", s->step,
           s->steps, s->loss, s->tokens_per_s, eta);
    fflush(stdout);
}

/* ---- after the run ---- */

static zb_status write_outputs(const args *a, const zb_plan *plan,
                               const zb_run_result *res, zb_err *err) {
    if (a->report) ZB_TRY(zb_report_write(a->report, plan, res, a->backend, err));
    if (a->trace) ZB_TRY(zb_trace_write(a->trace, plan, res, err));
    if (a->svg) ZB_TRY(zb_svg_write(a->svg, plan, res, err));
    if (a->quiet) return ZB_OK;
    if (a->report) printf("wrote %s\n", a->report);
    if (a->trace) printf("wrote %s\n", a->trace);
    if (a->svg) printf("wrote %s\n", a->svg);
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

/* here: ranks on this host (all, or this host's processes under a
 * launcher, which may bind each to fewer cores than the host has). */
static void print_header(const args *a, const zb_plan *plan, int threads,
                         int here, bool launched) {
    int steps = a->steps ? a->steps : plan->model.train.steps;
    printf("zbrun %s: %s, %s dp %d tp %d pp %d v %d, %d microbatches of %d, "
           "%d ranks x %d threads, %s backend, %d steps\n", a->plan_path,
           plan->model.name, plan->sched.name, plan->dp, plan->tp, plan->pp,
           plan->v, plan->m, plan->micro_batch, zb_plan_world(plan), threads,
           a->backend, steps);
    int cores = launched ? (int)sysconf(_SC_NPROCESSORS_ONLN) : omp_get_num_procs();
    if (here > cores)
        printf("note: %d ranks share %d cores; measured spans and bubbles "
               "include the time-sharing\n", here, cores);
    const zb_training *t = &plan->model.train;
    /* say what the CPU stage does not do, rather than let numbers mislead */
    if (t->precision != ZB_PREC_FP32 || t->recompute != ZB_RECOMPUTE_NONE ||
        t->sequence_parallel)
        printf("note: the cpu backend computes in fp32 and keeps every "
               "activation; the plan's precision, recompute and sequence "
               "parallelism shape only its predictions\n");
}

static zb_status run_main(const args *a, const zb_launch *l, zb_procs *procs,
                          zb_err *err) {
    zb_plan plan;
    /* a plan that cannot be read is bad input, even when it is missing */
    if (zb_plan_read(a->plan_path, &plan, err) != ZB_OK) return ZB_EINPUT;
    if (!plan.model.train.data_path[0]) {
        zb_fail(err, ZB_EINPUT, "%s: training.data.path is empty; zbrun needs a "
                "data file (text, or an llm.c token shard: docs/model-format.md)",
                a->plan_path);
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
    zb_run_proc proc = {0};
    const char *resume_dir = !a->resume ? NULL : a->ckpt_dir ? a->ckpt_dir : "checkpoints";
    zb_status ps = l->kind == ZB_LAUNCH_NONE ? ZB_OK
                   : zb_procs_start(procs, l, &plan, resume_dir, &proc, err);
    if (ps != ZB_OK) {
        zb_plan_free(&plan);
        return ps;
    }
    args me = *a;   /* ranks other than 0 print only errors */
    me.quiet = a->quiet || l->rank != 0;
    a = &me;
    int here = proc.tr ? zb_procs_here(l) : zb_plan_world(&plan);
    int threads = a->threads ? a->threads : proc.tr ? zb_procs_threads(l)
                             : zb_threads_per_rank(omp_get_num_procs(), here);
    /* launchers hand their processes a pseudo-terminal even when the
     * job's output goes to a file: plain lines there */
    printer pr = {.tty = isatty(STDOUT_FILENO) && !proc.tr, .quiet = a->quiet,
                  .ckpt_dir = a->ckpt_dir ? a->ckpt_dir : "checkpoints"};
    int steps = a->steps ? a->steps : plan.model.train.steps;
    pr.every = steps >= 50 ? steps / 10 : 5;
    zb_run_opts o = {.steps = a->steps, .threads = threads,
                     .checkpoint_every = a->ckpt_every, .checkpoint_dir = a->ckpt_dir,
                     .resume = a->resume, .on_step = on_step, .on_step_ctx = &pr,
                     .proc = proc};
    if (!a->quiet) print_header(a, &plan, threads, here, proc.tr != NULL);
    if (!a->quiet && proc.tr)
        printf("launch: %s, %d processes, one rank each, MPI transport\n",
               zb_launcher_name(l->kind), l->world);
    fflush(stdout);
    zb_run_result res;
    zb_status st = zb_run(&plan, &o, &res, err);
    if (pr.tty && pr.started) printf("\r\033[K");
    if (st == ZB_OK && !a->quiet) st = print_summary(&plan, &res, err);
    if (st == ZB_OK && l->rank == 0) st = write_outputs(a, &plan, &res, err);
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
    if (getenv("OMP_WAIT_POLICY")) return;
    if (setenv("OMP_WAIT_POLICY", "passive", 0) != 0) return;
    execv("/proc/self/exe", argv);
}

/* One process per rank: input errors found before MPI is up are the same on
 * every process, so only rank 0 prints them; so are the step verdicts every
 * rank reaches together ("step N rank R: loss is nan"): the others give
 * rank 0 a few seconds to report and end the job first. Other errors are
 * printed by the rank that has them ("rank N:" in front) and end the job. */
static int fail_procs(const zb_launch *l, const zb_procs *procs, zb_status st,
                      const zb_err *err) {
    char mine[16];
    snprintf(mine, sizeof mine, "rank %d:", l->rank);
    bool named = !strncmp(err->msg, mine, strlen(mine));
    if (l->rank != 0 && procs->started && !strncmp(err->msg, "step ", 5)) {
        sleep(5);   /* normally ended by rank 0's MPI_Abort before this */
        zb_mpi_abort(zb_exit_code(st));
    }
    if (l->rank == 0 || named) fprintf(stderr, "zbrun: %s\n", err->msg);
    else if (procs->started || st != ZB_EINPUT)
        fprintf(stderr, "zbrun: rank %d: %s\n", l->rank, err->msg);
    if (procs->started) zb_mpi_abort(zb_exit_code(st));
    return zb_exit_code(st);
}

int main(int argc, char **argv) {
    prefer_passive_openmp(argv);
    args a;
    zb_err err = {{0}};
    zb_launch launch;
    zb_procs procs = {0};
    zb_status st = zb_launch_from_env(&launch, &err);
    if (st != ZB_OK) {
        fprintf(stderr, "zbrun: %s\n", err.msg);
        return zb_exit_code(st);
    }
    st = parse_args(argc, argv, &a, &err);
    if (st == ZB_OK && a.help) {
        if (launch.rank == 0) fputs(usage, stdout);
        return 0;
    }
    if (st != ZB_OK) {
        if (launch.rank == 0) fprintf(stderr, "zbrun: %s\n", err.msg);
        return zb_exit_code(st);
    }
    st = run_main(&a, &launch, &procs, &err);
    fflush(stdout);
    if (launch.kind != ZB_LAUNCH_NONE) {
        if (st != ZB_OK) return fail_procs(&launch, &procs, st, &err);
        zb_procs_finish(&procs);
        return 0;
    }
    if (st == ZB_EINPUT)
        fprintf(stderr, "%s\n", err.msg);   /* "file:line:col: ..." already */
    else if (st != ZB_OK)
        fprintf(stderr, "zbrun: %s\n", err.msg);
    return zb_exit_code(st);
}
