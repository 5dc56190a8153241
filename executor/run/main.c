/* main.c - zbrun: execute a plan written by zbplan (docs/zbrun.md).
 *
 *   zbrun PLAN [--steps N] [--backend cpu|cuda|auto] [--report FILE]
 *              [--trace FILE] [--svg FILE] [--checkpoint-every N]
 *              [--checkpoint-dir DIR] [--resume | --resume=auto] [--threads N]
 *              [--export FILE] [--profile FILE] [--metrics FILE]
 *              [--tensorboard DIR] [--log-every N] [--dry-run] [-q]
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
#include "version.h"   /* ZB_VERSION: git describe at build time (Makefile) */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <omp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "common/zb_afile.h"
#include "common/zb_error.h"
#include "common/zb_override.h"
#include "common/zb_plan.h"
#include "common/zb_suggest.h"
#include "common/zb_yaml.h"
#include "executor/host/blas_env.h"
#include "executor/state/checkpoint.h"
#include "executor/state/data.h"
#include "executor/comm/launch.h"
#include "executor/state/llmc.h"
#include "executor/host/meminfo.h"
#include "executor/host/memlimit.h"
#include "executor/report/metrics.h"
#include "executor/report/tensorboard.h"
#include "executor/state/crc32c.h"
#include "executor/run/preflight.h"
#include "executor/run/procs.h"
#include "executor/report/profile.h"
#include "executor/report/report.h"
#include "executor/run/run_checks.h"
#include "planner/cost/plan_fit.h"
#include "executor/host/signals.h"
#include "executor/host/stdfds.h"
#include "executor/run/runtime.h"
#include "executor/stage/stage.h"
#include "executor/report/svg.h"
#include "executor/report/trace.h"

static const char usage[] =
    "usage: zbrun PLAN [options]\n"
    "Train the model of PLAN (written by zbplan) with its schedule.\n"
    "  --steps N             train N steps (default: the plan's training.steps)\n"
    "  --backend B           cpu, cuda or auto (default auto: cuda when this\n"
    "                        build has CUDA and a device is visible, else cpu)\n"
    "  --report FILE         write the run report (YAML; default: none)\n"
    "  --trace FILE          write a Chrome/Perfetto trace (JSON; default: none)\n"
    "  --svg FILE            write the planned and executed timelines (SVG; default: none)\n"
    "  --metrics FILE        stream one record per step (step, time, loss, lr, grad\n"
    "                        norm, tokens/s, tokens seen, step ms, MFU, peak memory\n"
    "                        per rank, val loss when due), flushed per step\n"
    "                        (default: none)\n"
    "  --metrics-format F    jsonl or csv (default: csv when FILE ends in .csv,\n"
    "                        else jsonl: one JSON object per line)\n"
    "  --tensorboard DIR     write TensorBoard event files into DIR (created when\n"
    "                        missing; default: none)\n"
    "  --log-every N         print a step line every N steps, the last and those\n"
    "                        with a validation loss always (default: 1; on a\n"
    "                        terminal: a tenth of the steps, at least 5)\n"
    "  --profile FILE        write measured pass, transfer and all-reduce times\n"
    "                        and memory beside the plan's, for zbplan --profile\n"
    "                        (default: none)\n"
    "  --set KEY=VALUE       change a run option of the plan before it is checked:\n"
    "                        training.steps, training.seed, training.optimizer.*,\n"
    "                        training.data.*, training.val.* (e.g. --set\n"
    "                        training.optimizer.lr=1e-3; repeatable; default: none)\n"
    "  --checkpoint-every N  save a checkpoint every N steps (default: never)\n"
    "  --checkpoint-dir DIR  where checkpoints go (default: checkpoints)\n"
    "  --resume              continue after the newest checkpoint in DIR; none\n"
    "                        there is an error (default: off)\n"
    "  --resume=auto         continue after the newest checkpoint in DIR when\n"
    "                        there is one, else start fresh (rerun a job unchanged)\n"
    "  --dry-run             check the plan, data, memory, outputs, checkpoint\n"
    "                        folder and launch, print what would run, train nothing\n"
    "  --resume-changed      resume even if --steps or the seed differ from the\n"
    "                        checkpoint's (the learning-rate schedule or data change)\n"
    "  --overwrite-checkpoints  let a run without --resume replace the checkpoint\n"
    "                        in DIR (default: such a run is refused)\n"
    "  --max-loss-ratio R    stop when the loss exceeds R x the first step's\n"
    "                        (default 10; 0: never)\n"
    "  --threads N           OpenMP threads per rank (default: max(1, cores / ranks))\n"
    "  --export FILE         after training, write the model as an llm.c checkpoint\n"
    "                        (default: none)\n"
    "  -q, --quiet           print nothing but errors (default: off)\n"
    "  -h, --help            this text\n"
    "  --version             zbrun's version (git describe at build time)\n"
    "Environment: OMP_WAIT_POLICY (default passive), OPENBLAS_CORETYPE (default:\n"
    "  the best kernel this CPU runs; a value you set is kept), ZB_PIN=0 (do not\n"
    "  bind ranks to cores; default: bound when ranks x threads fit the cores),\n"
    "  ZB_COMM_TIMEOUT_S and ZB_BOOTSTRAP_TIMEOUT_S under a launcher; with\n"
    "  --backend cuda: ZB_CUDA_SHARE=1 (every rank on device 0, sharing it;\n"
    "  default: rank r on device r; more ranks than devices is an error),\n"
    "  CUDA_MODULE_LOADING (default EAGER) and ZB_CUDA_SYNC=1 (wait after\n"
    "  every pass to name the one that faulted; slow); for tests,\n"
    "  ZB_TEST_HOLD=N (every rank waits after step N until SIGUSR1; SIGINT\n"
    "  or SIGTERM stops there) (docs/zbrun.md).\n"
    "Launchers: under mpirun, srun or a torchrun-style environment each process\n"
    "  runs one rank; otherwise every rank is a thread of this process.\n"
    "Exit status: 0 done; 2 bad usage, bad plan or missing data (nothing run);\n"
    "  1 failure while running (I/O, non-finite or diverging loss, dead peer);\n"
    "  130/143 stopped by SIGINT/SIGTERM after a step.\n"
    "Docs: docs/zbrun.md (options, output, report, clusters), docs/plan-format.md.\n";

/* every option, for "did you mean" */
static const char *const option_names[] = {
    "--steps", "--backend", "--report", "--trace", "--svg", "--profile",
    "--metrics", "--metrics-format", "--set", "--tensorboard", "--log-every",
    "--checkpoint-every", "--checkpoint-dir", "--resume", "--resume-changed",
    "--max-loss-ratio", "--threads", "--export", "--quiet", "--help",
    "--version", "--dry-run", NULL};

typedef struct {
    const char *plan_path, *backend, *report, *trace, *svg, *ckpt_dir, *export_path;
    const char *profile, *metrics, *metrics_format, *tensorboard;
    zb_metrics_format mfmt;
    int log_every;       /* --log-every, 0: not given */
    zb_overrides sets;   /* --set KEY=VALUE on the plan's run options */
    int steps, ckpt_every, threads;
    bool resume, quiet, help, version, resume_changed, overwrite_ckpt;
    bool resume_auto;    /* --resume=auto: none there starts fresh */
    bool dry_run;        /* --dry-run: checks only */
    double max_loss_ratio;
    char backend_note[96];   /* how auto chose, "" otherwise */
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
    else if (!strcmp(arg, "--resume=auto")) a->resume = a->resume_auto = true;
    else if (!strncmp(arg, "--resume=", 9))
        st = zb_fail(err, ZB_EINPUT, "--resume takes no value or =auto, got '%s'", arg);
    else if (!strcmp(arg, "--dry-run")) a->dry_run = true;
    else if (!strcmp(arg, "--resume-changed")) a->resume_changed = true;
    else if (!strcmp(arg, "--overwrite-checkpoints")) a->overwrite_ckpt = true;
    else if (take_opt(argc, argv, i, "--max-loss-ratio", &v, &st, err)) {
        if (st == ZB_OK) st = zb_parse_ratio("--max-loss-ratio", v, &a->max_loss_ratio, err);
    }
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
    else if (take_opt(argc, argv, i, "--export", &v, &st, err)) a->export_path = v;
    else if (take_opt(argc, argv, i, "--profile", &v, &st, err)) a->profile = v;
    else if (take_opt(argc, argv, i, "--metrics-format", &v, &st, err)) a->metrics_format = v;
    else if (take_opt(argc, argv, i, "--metrics", &v, &st, err)) a->metrics = v;
    else if (take_opt(argc, argv, i, "--tensorboard", &v, &st, err)) a->tensorboard = v;
    else if (take_opt(argc, argv, i, "--log-every", &v, &st, err)) {
        if (st == ZB_OK) st = parse_int("--log-every", v, 1, &a->log_every, err);
    }
    else if (take_opt(argc, argv, i, "--set", &v, &st, err)) {
        if (st == ZB_OK) st = zb_overrides_add(&a->sets, v, err);
    }
    else if (arg[0] == '-' && arg[1] != '\0')
        st = zb_fail_unknown_option(err, arg, option_names, "zbrun --help");
    else if (a->plan_path)
        st = zb_fail(err, ZB_EINPUT, "one plan only, got '%s' and '%s'", a->plan_path, arg);
    else a->plan_path = arg;
    (*i)++;
    return st;
}

/* --backend: cuda needs a CUDA build and a visible device; auto takes cuda
 * when both are there, cpu otherwise, and says why (a->backend_note). */
static zb_status choose_backend(args *a, zb_err *err) {
    bool built = zb_backend_cuda_built();
    int ndev = built ? zb_backend_cuda_devices() : 0;
    if (!strcmp(a->backend, "cuda")) {
        if (!built)
            return zb_fail(err, ZB_EINPUT, "--backend cuda: zbrun was built "
                           "without CUDA (nvcc, cuBLAS and NCCL were not found "
                           "at build time)");
        if (ndev == 0)
            return zb_fail(err, ZB_EINPUT, "--backend cuda: no CUDA device "
                           "visible (CUDA_VISIBLE_DEVICES=%s)",
                           getenv("CUDA_VISIBLE_DEVICES")
                               ? getenv("CUDA_VISIBLE_DEVICES") : "unset");
        return ZB_OK;
    }
    if (!strcmp(a->backend, "auto")) {
        a->backend = ndev > 0 ? "cuda" : "cpu";
        snprintf(a->backend_note, sizeof a->backend_note,
                 "backend auto: %s (%s)", a->backend,
                 !built ? "built without CUDA"
                 : ndev == 0 ? "no CUDA device visible" : "CUDA device visible");
    }
    return ZB_OK;
}

static zb_status parse_args(int argc, char **argv, args *a, zb_err *err) {
    memset(a, 0, sizeof *a);
    a->backend = "auto";
    a->max_loss_ratio = ZB_MAX_LOSS_RATIO_DEFAULT;
    for (int i = 1; i < argc;) ZB_TRY(parse_one(argc, argv, &i, a, err));
    if (a->help || a->version) return ZB_OK;
    if (!a->plan_path) return zb_fail(err, ZB_EINPUT, "no plan given (usage: zbrun PLAN [options])");
    if (a->metrics_format && !a->metrics)
        return zb_fail(err, ZB_EINPUT, "--metrics-format needs --metrics FILE");
    if (a->metrics) ZB_TRY(zb_metrics_format_of(a->metrics_format, a->metrics, &a->mfmt, err));
    static const char *const run_keys[] = {"training.steps", "training.seed",
        "training.optimizer.", "training.data.", "training.val.", "training.val", NULL};
    ZB_TRY(zb_overrides_only(&a->sets, run_keys, "zbrun changes only run options "
                             "(training.steps, training.seed, training.optimizer.*, "
                             "training.data.*, training.val.*); the model, batch and "
                             "cluster shape the plan: replan with zbplan MODEL --set ...",
                             err));
    if (strcmp(a->backend, "cpu") && strcmp(a->backend, "cuda") && strcmp(a->backend, "auto"))
        return zb_fail(err, ZB_EINPUT, "--backend must be cpu, cuda or auto, got '%s'",
                       a->backend);
    return choose_backend(a, err);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- per-step output ---- */

typedef struct {
    bool tty, quiet, started, warned;
    double loss0;
    int first, every;
    const char *ckpt_dir;
    zb_metrics *metrics;   /* --metrics, NULL: none */
    zb_tb *tb;             /* --tensorboard, NULL: none */
} printer;

static void print_step_line(const zb_step_info *s, double eta_s) {
    printf("step %d/%d loss %.6f lr %.6e grad_norm %.6f tokens_per_s %.1f ms %.3f"
           " elapsed_s %.1f eta_s %.1f", s->step, s->steps, s->loss, s->lr,
           s->grad_norm, s->tokens_per_s, s->step_s * 1e3, s->elapsed_s, eta_s);
    if (!isnan(s->val_loss)) printf(" val_loss %.6f", s->val_loss);
    printf("\n");
}

/* A test's hold (ZB_TEST_HOLD): every rank says so, then waits for SIGUSR1
 * (go on) or SIGINT/SIGTERM (stop after this step). */
static void on_hold(int rank, int step, void *ctx) {
    (void)ctx;
    fprintf(stderr, "zbrun: rank %d: held after step %d (ZB_TEST_HOLD): "
            "SIGUSR1 goes on, SIGINT or SIGTERM stops\n", rank, step);
    fflush(stderr);
    zb_signals_wait_go();
}

/* ZB_TEST_HOLD=N: a step number >= 1, or unset (0). */
static zb_status test_hold(int *step, zb_err *err) {
    const char *v = getenv("ZB_TEST_HOLD");
    *step = 0;
    if (!v) return ZB_OK;
    char *end;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (errno || end == v || *end || n < 1 || n > INT_MAX)
        return zb_fail(err, ZB_EINPUT, "ZB_TEST_HOLD '%s' is not a step number "
                       "(1 or more)", v);
    *step = (int)n;
    return ZB_OK;
}

static void on_step(const zb_step_info *s, void *ctx) {
    printer *p = ctx;
    if (zb_loss_warn(s->loss, &p->loss0, &p->warned))
        fprintf(stderr, "zbrun: warning: step %d loss %.4g is over %.0f x the "
                "first step's %.4g (the run stops above --max-loss-ratio)\n",
                s->step, s->loss, ZB_LOSS_WARN_RATIO, p->loss0);
    zb_metrics_step(p->metrics, s);
    zb_tb_step(p->tb, s);
    if (p->quiet) return;
    if (s->eval_only) {   /* the validation loss before training */
        printf("step %d/%d val_loss %.6f\n", s->step, s->steps, s->val_loss);
        zb_signals_flush(stdout);   /* EPIPE: stop (signals.h) */
        return;
    }
    if (!p->started) {
        p->started = true;
        p->first = s->step;
        if (s->step > 1)
            printf("resumed after step %d from %s\n", s->step - 1, p->ckpt_dir);
    }
    int done = s->step - p->first + 1, left = s->steps - s->step;
    double eta = left * s->elapsed_s / done;
    bool due = s->step % p->every == 0 || left == 0 || !isnan(s->val_loss);
    if (!p->tty) {
        if (due) print_step_line(s, eta);
        zb_signals_flush(stdout);
        return;
    }
    if (s->step == p->first || due) {
        printf("\r\033[K");
        print_step_line(s, eta);
    }
    printf("\r\033[Kstep %d/%d  loss %.4f  %.0f tokens/s  %.1f s left", s->step,
           s->steps, s->loss, s->tokens_per_s, eta);
    zb_signals_flush(stdout);
}

/* ---- after the run ---- */

/* Every output, even after one failed; the first failure is returned and
 * the others are printed on stderr. */
static zb_status write_outputs(const args *a, const zb_plan *plan,
                               const zb_run_result *res, zb_report_meta *meta,
                               zb_err *err) {
    meta->load_end = zb_load_average();
    meta->wall_s = now_s() - meta->wall_s;   /* held the start until now */
    static const char *const what[] = {"report", "trace", "timelines",
                                       "llm.c checkpoint", "profile"};
    static const char *const hint[] = {"", " (open it at https://ui.perfetto.dev)",
                                       " (open it in a browser)", "", ""};
    const char *const paths[] = {a->report, a->trace, a->svg, a->export_path, a->profile};
    zb_status first = ZB_OK;
    for (int k = 0; k < 5; k++) {
        if (!paths[k]) continue;
        zb_err e;
        zb_status s = k == 0 ? zb_report_write(paths[k], plan, res, meta, &e)
                    : k == 1 ? zb_trace_write(paths[k], plan, res, &e)
                    : k == 2 ? zb_svg_write(paths[k], plan, res, &e)
                    : k == 4 ? zb_profile_write(paths[k], plan, res, &e)
                    : res->n_steps == 0
                        ? zb_fail(&e, ZB_ERUNTIME, "--export: no step ran here, "
                                  "so no weights were gathered to export")
                        : zb_llmc_export(paths[k], plan, res->params, &e);
        if (s == ZB_OK && !a->quiet) printf("%s: %s%s\n", what[k], paths[k], hint[k]);
        if (s != ZB_OK && first != ZB_OK) fprintf(stderr, "zbrun: %s\n", e.msg);
        if (s != ZB_OK && first == ZB_OK) {
            first = s;
            *err = e;
        }
    }
    if (a->quiet) return first;
    if (a->ckpt_every) printf("checkpoints: %s/\n", a->ckpt_dir ? a->ckpt_dir : "checkpoints");
    printf("wall time %.1f s (load average %.2f at the start, %.2f at the end, "
           "%d cores)\n", meta->wall_s, meta->load_start, meta->load_end,
           meta->cores);
    return first;
}

static zb_status print_summary(const zb_plan *plan, const zb_run_result *res,
                               zb_err *err) {
    if (res->n_steps == 0 && res->stopped) return ZB_OK;   /* zb_print_stopped */
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
    if (res->n_val > 0)
        printf("val_loss %.6f (step %d) -> %.6f (step %d)\n", res->val_loss[0],
               res->val_step[0], res->val_loss[res->n_val - 1],
               res->val_step[res->n_val - 1]);
    return ZB_OK;
}

/* Which CUDA device each rank runs on (the runtime's rule). */
static void print_placement(const zb_plan *plan) {
    int world = zb_plan_world(plan), ndev = zb_backend_cuda_devices();
    for (int d = 0; d < ndev; d++) {
        int first = -1, last = -1, count = 0;
        for (int r = 0; r < world; r++)
            if (zb_run_cuda_device(r, world, ndev) == d) {
                if (first < 0) first = r;
                last = r;
                count++;
            }
        if (!count) continue;
        char name[128];
        zb_backend_cuda_device_name(d, name, sizeof name);
        if (count == 1)
            printf("rank %d on CUDA device %d (%s)\n", first, d, name);
        else
            printf("ranks %d..%d on CUDA device %d (%s), sharing it\n", first,
                   last, d, name);
    }
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
    char blas[256];
    zb_blas_describe(blas, sizeof blas);
    printf("blas: %s\n", blas);
    if (a->backend_note[0]) printf("%s\n", a->backend_note);
    if (!strcmp(a->backend, "cuda") && !launched) print_placement(plan);
    int cores = launched ? (int)sysconf(_SC_NPROCESSORS_ONLN) : omp_get_num_procs();
    if (strcmp(a->backend, "cpu") == 0 && here > cores)
        printf("note: %d ranks share %d cores; measured spans and bubbles "
               "include the time-sharing\n", here, cores);
    const zb_training *t = &plan->model.train;
    /* say what the stage does not do, rather than let numbers mislead */
    if (!strcmp(a->backend, "cpu") &&
        (t->precision != ZB_PREC_FP32 || t->sequence_parallel))
        printf("note: the cpu backend computes in fp32 and does not run "
               "sequence parallelism; the plan's precision and sequence "
               "parallelism shape only its predictions\n");
    if (!strcmp(a->backend, "cuda") && t->sequence_parallel)
        printf("note: the cuda backend does not run sequence parallelism; "
               "the plan's sequence parallelism shapes only its "
               "predictions\n");
    if (t->tp_overlap || t->dp_overlap)
        printf("note: zbrun runs TP and DP collectives between passes, not "
               "under them; the plan's tp_overlap/dp_overlap shape only its "
               "predictions\n");
}

static const char *pr_dir(const args *a) {
    return a->ckpt_dir ? a->ckpt_dir : "checkpoints";
}

/* A model file given where a plan belongs: its top level has 'model' and
 * no 'schedule', which every plan has. */
static bool is_model(const char *path) {
    zb_ydoc d;
    zb_err e;
    if (zb_ydoc_load(path, &d, &e) != ZB_OK) return false;
    bool model = d.root && d.root->type == ZB_Y_MAP && zb_ymap_get(d.root, "model") &&
                 !zb_ymap_get(d.root, "schedule");
    zb_ydoc_free(&d);
    return model;
}

/* Read the plan and check what zbrun needs of it before any rank starts;
 * every failure here is bad input (exit 2) and leaves *plan freed. */
static zb_status load_plan(const args *a, zb_plan *plan, zb_err *err) {
    /* a plan that cannot be read is bad input, even when it is missing */
    if (zb_plan_read_set(a->plan_path, &a->sets, plan, err) != ZB_OK) {
        if (is_model(a->plan_path))
            zb_fail(err, ZB_EINPUT, "%s:1:1: this is a model, not a plan; plan "
                    "it first: zbplan %s -o plan.yaml && zbrun plan.yaml",
                    a->plan_path, a->plan_path);
        return ZB_EINPUT;
    }
    if (zb_run_check_model(a->plan_path, plan, err) != ZB_OK ||   /* GPT-2 blocks only */
        zb_run_check_vocab(a->plan_path, plan, err) != ZB_OK) {
        zb_plan_free(plan);
        return ZB_EINPUT;
    }
    /* empty text path: the built-in corpus; relative: from here or the
     * plan's folder (data.h) */
    if (zb_data_locate(a->plan_path, &plan->model, err) != ZB_OK) {
        zb_plan_free(plan);
        return ZB_EINPUT;
    }
    if (a->export_path && !plan->model.arch.tied_embeddings) {
        zb_fail(err, ZB_EINPUT, "%s: --export writes llm.c checkpoints, whose LM "
                "head is wte; this model has tied_embeddings: false", a->plan_path);
        zb_plan_free(plan);
        return ZB_EINPUT;
    }
    return ZB_OK;
}

/* --resume needs a checkpoint in DIR; --resume=auto without one starts
 * fresh (a->resume off), so that a job script reruns unchanged after a
 * preemption, replacing the step folders of a first checkpoint that a
 * kill left unfinished (without a complete checkpoint nothing else of
 * zbrun's can be there). A checkpoint that is there but unusable is an error either
 * way (zb_ckpt_find), never a silent fresh start over it. */
static zb_status resume_source(args *a, const zb_plan *plan, zb_err *err) {
    zb_ckpt_index idx;
    bool found;
    if (!a->resume) return ZB_OK;
    ZB_TRY(zb_ckpt_find(pr_dir(a), plan, &idx, &found, err));
    if (found) return ZB_OK;
    if (a->resume_auto) {   /* what a killed first checkpoint left is replaced */
        a->resume = false;
        a->overwrite_ckpt = true;
        return ZB_OK;
    }
    return zb_fail(err, ZB_EINPUT, "--resume: no checkpoint in %s/ (no latest.yaml); "
                   "run without --resume to start fresh, or with --resume=auto to "
                   "start fresh only when there is none", pr_dir(a));
}

/* --dry-run: the resume checks the run would make (the checkpoint's steps
 * and seed against this run's), then what the run would do. */
static zb_status dry_run(const args *a, const zb_plan *plan, const zb_launch *l,
                         zb_err *err) {
    int steps = a->steps ? a->steps : plan->model.train.steps;
    zb_ckpt_index idx;
    bool found = false;
    if (a->resume) ZB_TRY(zb_ckpt_find(pr_dir(a), plan, &idx, &found, err));
    if (found)
        ZB_TRY(zb_ckpt_check_resume(pr_dir(a), &idx, plan, steps, a->resume_changed, err));
    if (a->quiet) return ZB_OK;
    printf("dry run: plan, data, memory, outputs and checkpoint folder checked\n");
    if (found) printf("would resume after step %d from %s/ and train steps %d..%d\n",
                      idx.step, pr_dir(a), idx.step + 1, steps);
    else printf("would train steps 1..%d%s\n", steps, a->resume_auto
                ? " (--resume=auto: no checkpoint yet, a fresh start)" : "");
    if (l->kind == ZB_LAUNCH_NONE)
        printf("would run %d ranks as threads of this process\n", zb_plan_world(plan));
    const char *const names[] = {"report", "trace", "svg", "profile", "metrics",
                                 "tensorboard", "export"};
    const char *const paths[] = {a->report, a->trace, a->svg, a->profile, a->metrics,
                                 a->tensorboard, a->export_path};
    for (int k = 0; k < 7; k++)
        if (paths[k]) printf("would write --%s %s\n", names[k], paths[k]);
    if (a->ckpt_every)
        printf("would save a checkpoint every %d steps in %s/\n", a->ckpt_every, pr_dir(a));
    printf("nothing trained (--dry-run)\n");
    return ZB_OK;
}

static zb_status run_main(const args *a, const zb_launch *l, zb_procs *procs,
                          int *stopped, zb_err *err) {
    args me0 = *a;   /* --resume=auto may turn resuming off */
    a = &me0;
    int hold;
    ZB_TRY(test_hold(&hold, err));
    char blas[256];
    zb_blas_describe(blas, sizeof blas);
    zb_report_meta meta = {.backend = a->backend, .plan_path = a->plan_path,
                           .version = ZB_VERSION, .blas = blas,
                           .wall_s = now_s(), .cores = omp_get_num_procs(),
                           .load_start = zb_load_average()};
    zb_plan plan;
    zb_run_proc proc = {0};
    zb_backend backend = strcmp(a->backend, "cuda") ? ZB_BACKEND_CPU : ZB_BACKEND_CUDA;
    zb_status ls = load_plan(a, &plan, err);
    const char *share = getenv("ZB_CUDA_SHARE");   /* runtime.c's rule */
    if (ls == ZB_OK && backend == ZB_BACKEND_CUDA &&
        (ls = zb_run_check_vocab_cuda(a->plan_path, &plan, l->kind == ZB_LAUNCH_NONE &&
                                      share && share[0] == '1', err)) != ZB_OK)
        zb_plan_free(&plan);
    if (ls == ZB_OK && (ls = resume_source(&me0, &plan, err)) != ZB_OK)
        zb_plan_free(&plan);
    const char *resume_dir = !a->resume ? NULL : a->ckpt_dir ? a->ckpt_dir : "checkpoints";
    char plan_hash[17];   /* names the file that ran in the report */
    zb_err he;
    if (ls == ZB_OK && zb_plan_file_hash(a->plan_path, plan_hash, &he) == ZB_OK)
        meta.plan_hash = plan_hash;
    if (ls != ZB_OK)   /* under a launcher: tell the other processes */
        return l->kind == ZB_LAUNCH_NONE ? ls : zb_procs_fail_start(procs, l, backend, ls, err);
    zb_status ps = l->kind == ZB_LAUNCH_NONE ? ZB_OK
                   : zb_procs_start(procs, l, &plan, backend, resume_dir, &proc, err);
    zb_agree_opts ao = {.steps = a->steps ? a->steps : plan.model.train.steps,
                        .checkpoint_every = a->ckpt_every, .resume = a->resume,
                        .resume_changed = a->resume_changed,
                        .max_loss_ratio = a->max_loss_ratio};
    if (ps == ZB_OK && proc.tr) ps = zb_procs_check(procs, &proc, &plan, &ao, err);
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
    /* rank 0 writes the outputs and holds the checkpoint folder's lock */
    char fit_note[256];   /* plan_fit.h: refuse a plan too big for this host */
    bool limited;
    double avail = zb_host_mem_available(&limited);
    if (zb_plan_fit_host(&plan, a->plan_path, !strcmp(a->backend, "cpu"),
                         proc.tr != NULL, l->rank, here, avail, limited,
                         fit_note, sizeof fit_note, err) != ZB_OK) {
        zb_plan_free(&plan);
        return ZB_EINPUT;
    }
    bool writer = l->rank == 0;
    int lock_fd = -1;
    zb_run_outputs outs = {a->report, a->trace, a->svg, a->export_path, a->profile,
                           a->metrics};
    zb_ckpt_use ck = {pr_dir(a), a->ckpt_every > 0, a->resume, a->overwrite_ckpt};
    zb_status st = writer ? zb_run_check_outputs(a->plan_path, &plan,
                                           a->ckpt_every || a->resume ? pr_dir(a) : NULL,
                                           &outs, err) : ZB_OK;
    if (st == ZB_OK)
        st = zb_run_preflight(writer ? &ck : NULL, here, threads, &lock_fd, err);
    if (st == ZB_OK && a->dry_run) {   /* before any output is opened */
        if (!a->quiet) print_header(a, &plan, threads, here, proc.tr != NULL);
        if (!a->quiet && fit_note[0]) printf("%s\n", fit_note);
        st = dry_run(a, &plan, l, err);
        zb_ckpt_unlock(lock_fd);
        zb_plan_free(&plan);
        return st;
    }
    zb_metrics metrics;   /* checked with the other outputs above */
    if (st == ZB_OK && writer && a->metrics)
        st = zb_metrics_open(&metrics, a->metrics, a->mfmt, zb_plan_world(&plan),
                             a->resume, err);
    zb_tb tb;
    if (st == ZB_OK && writer && a->tensorboard &&
        (st = zb_tb_open(&tb, a->tensorboard, zb_crc32c, err)) != ZB_OK && a->metrics) {
        zb_err e;
        zb_metrics_close(&metrics, &e);
    }
    if (st != ZB_OK) {
        zb_ckpt_unlock(lock_fd);
        zb_plan_free(&plan);
        return st;
    }
    /* launchers hand their processes a pseudo-terminal even when the
     * job's output goes to a file: plain lines there */
    printer pr = {.tty = isatty(STDOUT_FILENO) && !proc.tr, .quiet = a->quiet,
                  .ckpt_dir = a->ckpt_dir ? a->ckpt_dir : "checkpoints",
                  .metrics = writer && a->metrics ? &metrics : NULL,
                  .tb = writer && a->tensorboard ? &tb : NULL};
    int steps = a->steps ? a->steps : plan.model.train.steps;
    pr.every = a->log_every ? a->log_every : !pr.tty ? 1 : steps >= 50 ? steps / 10 : 5;
    zb_run_opts o = {.steps = a->steps, .threads = threads,
                     .checkpoint_every = a->ckpt_every, .checkpoint_dir = a->ckpt_dir,
                     .resume = a->resume, .on_step = on_step, .on_step_ctx = &pr,
                     .resume_changed = a->resume_changed, .stop = &zb_stop_signal,
                     .max_loss_ratio = a->max_loss_ratio, .proc = proc,
                     .keep_params = a->export_path != NULL,
                     .backend = backend, .on_hold = on_hold,
                     .hold_after_step = hold};
    /* the handlers before anything is shown, so that a signal sent once
     * the header is out is always a stop (after the step, or the
     * validation pass's batch, in progress) */
    zb_signals_install();
    if (o.hold_after_step) zb_signals_install_go();
    zb_afile_stop_on(&zb_stop_signal);   /* an output FIFO's wait ends too */
    if (!a->quiet) print_header(a, &plan, threads, here, proc.tr != NULL);
    if (!a->quiet && fit_note[0]) printf("%s\n", fit_note);
    if (!a->quiet && a->resume_auto && !a->resume)
        printf("resume=auto: no checkpoint in %s/, starting at step 1\n", pr_dir(a));
    if (!a->quiet && pr.metrics)
        printf("metrics: %s (%s, a record per step)\n", a->metrics,
               a->mfmt == ZB_METRICS_CSV ? "CSV" : "JSON Lines");
    if (!a->quiet && pr.tb) printf("tensorboard: %s\n", tb.path);
    if (!a->quiet && proc.tr)
        printf("launch: %s, %d processes, one rank each, %s\n",
               zb_launcher_name(l->kind), l->world, backend == ZB_BACKEND_CUDA
               ? "NCCL transport, the CUDA device of each process: its local "
                 "rank modulo the devices it sees" : "MPI transport");
    zb_signals_flush(stdout);
    zb_run_result res;
    st = zb_run(&plan, &o, &res, err);
    if (pr.tty && pr.started) printf("\r\033[K");
    /* a failed metrics stream or event file loses no other output */
    zb_err merr, terr;
    zb_status ms = zb_metrics_close(pr.metrics, &merr);
    zb_status ts = zb_tb_close(pr.tb, &terr);
    if (ms == ZB_OK && ts != ZB_OK) {
        ms = ts;
        merr = terr;
    } else if (ts != ZB_OK) {
        fprintf(stderr, "zbrun: %s\n", terr.msg);
    }
    if (st == ZB_OK && !a->quiet) st = print_summary(&plan, &res, err);
    if (st == ZB_OK && writer) st = write_outputs(a, &plan, &res, &meta, err);
    if (ms != ZB_OK && st == ZB_OK) {
        st = ZB_EIO;
        *err = merr;
    } else if (ms != ZB_OK) {
        fprintf(stderr, "zbrun: %s\n", merr.msg);
    }
    if (st == ZB_OK && res.stopped && writer)
        zb_print_stopped(a->plan_path, pr_dir(a), a->ckpt_every, &res);
    *stopped = st == ZB_OK ? res.stopped : 0;
    zb_run_result_free(&res);
    zb_plan_free(&plan);
    zb_ckpt_unlock(lock_fd);
    return st;
}

/* Ranks are threads that block on each other (receives, all-reduces);
 * OpenMP workers that spin while waiting would steal the cores of the
 * ranks doing work. libgomp reads OMP_WAIT_POLICY once, when it is
 * loaded, so when the user has not chosen one we set "passive" and
 * re-execute ourselves once; if that fails we simply go on. */
static void prefer_passive_openmp(char **argv) {
    bool again = zb_memlimit_env();   /* OpenBLAS single-threaded: memlimit.h */
    if (!getenv("OMP_WAIT_POLICY") && setenv("OMP_WAIT_POLICY", "passive", 0) == 0)
        again = true;
    /* OpenBLAS too reads OPENBLAS_CORETYPE only when loaded (blas_env.h) */
    if (zb_blas_env_prepare()) again = true;
    /* CUDA loads every kernel at context creation, not at its first launch
     * (which drains the device: a send queued before it would become a
     * synchronous one, docs/gpu.md). The driver reads this at its first
     * call, after this point; a value the user set is kept. */
    if (setenv("CUDA_MODULE_LOADING", "EAGER", 0) != 0)
        fprintf(stderr, "zbrun: warning: CUDA_MODULE_LOADING=EAGER not set "
                "(out of memory); kernels load at first launch\n");
    if (again) execv("/proc/self/exe", argv);
}

/* One process per rank: input errors found before MPI is up are the same on
 * every process, so only rank 0 prints them; so are the step verdicts every
 * rank reaches together ("step N rank R: loss is nan"): the others give
 * rank 0 a few seconds to report and end the job first. Other errors are
 * printed by the rank that has them ("rank N:" in front) and end the job. */
static int fail_procs(const zb_launch *l, zb_procs *procs, zb_status st,
                      const zb_err *err) {
    char mine[16];
    snprintf(mine, sizeof mine, "rank %d:", l->rank);
    bool named = !strncmp(err->msg, mine, strlen(mine));
    if (procs->agreed) {   /* every process knows: each says its line (procs.h) */
        if (err->msg[0]) fprintf(stderr, "zbrun: %s\n", err->msg);
        zb_procs_finish(procs);
        return zb_exit_code(st);
    }
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
    /* the re-execution below goes through /proc/self/exe, which would make
     * ps and top show the process as "exe" */
    (void)prctl(PR_SET_NAME, "zbrun", 0, 0, 0);
    if (zb_stdfds_reserve() != 0) return 1;   /* before any file is opened */
    zb_signals_ignore_pipe();
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
    if (st == ZB_OK && a.version) {
        printf("zbrun %s\n", ZB_VERSION);
        return 0;
    }
    if (st != ZB_OK) {
        if (launch.rank == 0) fprintf(stderr, "zbrun: %s\n", err.msg);
        return zb_exit_code(st);
    }
    int stopped = 0;
    st = run_main(&a, &launch, &procs, &stopped, &err);
    fflush(stdout);
    if (launch.kind != ZB_LAUNCH_NONE) {
        if (st != ZB_OK) return fail_procs(&launch, &procs, st, &err);
        zb_procs_finish(&procs);
        return stopped ? 128 + stopped : 0;
    }
    if (stopped) return 128 + stopped;   /* 130 SIGINT, 143 SIGTERM */
    if (st == ZB_EINPUT && zb_msg_has_place(err.msg, a.plan_path))
        fprintf(stderr, "%s\n", err.msg);   /* "file:line:col: ..." already */
    else if (st != ZB_OK)
        fprintf(stderr, "zbrun: %s\n", err.msg);
    return zb_exit_code(st);
}
