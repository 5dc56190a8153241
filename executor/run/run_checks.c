/* run_checks.c - see run_checks.h. */
#include "executor/run/run_checks.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/zb_files.h"
#include "executor/state/checkpoint.h"
#include "executor/host/memlimit.h"
#include "executor/run/preflight.h"

zb_status zb_parse_ratio(const char *name, const char *text, double *out, zb_err *err) {
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (!text[0] || *end || errno || !isfinite(v) || v < 0)
        return zb_fail(err, ZB_EINPUT, "%s must be a number >= 0, got '%s'", name, text);
    *out = v;
    return ZB_OK;
}

/* Under a launcher (mpirun, srun, torchrun) every process of the run
 * shares the checkpoint folder: only the process of rank 0 holds the
 * lock. Not under one: this process is rank 0. */
static bool lock_holder(void) {
    static const char *const vars[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK",
                                       "PMIX_RANK", "SLURM_PROCID", "RANK", NULL};
    for (int i = 0; vars[i]; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v) return atoi(v) == 0;
    }
    return true;
}

zb_status zb_run_preflight(const zb_ckpt_use *ck, int world, int threads,
                           int *lock_fd, zb_err *err) {
    *lock_fd = -1;
    if (threads > ZB_MAX_THREADS_PER_RANK || (long long)threads * world > ZB_MAX_THREADS_TOTAL)
        return zb_fail(err, ZB_EINPUT, "--threads %d is too many: at most %d per "
                       "rank and %d in all (%d ranks here)", threads,
                       ZB_MAX_THREADS_PER_RANK, ZB_MAX_THREADS_TOTAL, world);
    ZB_TRY(zb_memlimit_prepare(world, threads, err));
    if (ck && ck->dir && (ck->writes || ck->resume) && lock_holder())
        ZB_TRY(zb_preflight_checkpoints(ck->dir, ck->writes,
                                        !ck->resume && !ck->overwrite, lock_fd, err));
    return ZB_OK;
}

zb_status zb_run_check_outputs(const char *plan_path, const zb_plan *plan,
                               const char *ckpt_dir, const zb_run_outputs *o,
                               zb_err *err) {
    const zb_model *m = &plan->model;
    zb_files fs;
    zb_files_init(&fs);
    ZB_TRY(zb_files_input(&fs, "the plan", plan_path, err));
    ZB_TRY(zb_files_input(&fs, "the data file", m->train.data_path, err));
    ZB_TRY(zb_files_input(&fs, "the validation data file", m->train.val_path, err));
    ZB_TRY(zb_files_input(&fs, "the init checkpoint", m->arch.init, err));
    if (ckpt_dir) zb_files_ckpt(&fs, ckpt_dir);
    ZB_TRY(zb_files_output(&fs, "--report", o->report, err));
    ZB_TRY(zb_files_output(&fs, "--trace", o->trace, err));
    ZB_TRY(zb_files_output(&fs, "--svg", o->svg, err));
    ZB_TRY(zb_files_output(&fs, "--export", o->export_path, err));
    ZB_TRY(zb_files_output(&fs, "--profile", o->profile, err));
    return zb_files_output(&fs, "--metrics", o->metrics, err);
}

zb_status zb_run_check_model(const char *plan_path, const zb_plan *plan, zb_err *err) {
    const zb_arch *a = &plan->model.arch;
    if (zb_arch_is_gpt2(a) || !a->init[0]) return ZB_OK;
    return zb_fail(err, ZB_EINPUT, "%s: init: %s is an llm.c checkpoint, which "
                   "holds GPT-2 blocks only; this model's blocks are Llama-shaped "
                   "(drop init to start from the seeded random init)", plan_path,
                   a->init);
}

zb_status zb_run_check_vocab(const char *plan_path, const zb_plan *plan,
                             zb_err *err) {
    if (!plan->vocab_parallel) return ZB_OK;
    if (plan->model.train.val_path[0])
        return zb_fail(err, ZB_EINPUT, "%s: parallel.vocab_parallel %d: zbrun "
                       "does not evaluate (training.val) with vocabulary "
                       "parallelism yet; drop training.val", plan_path,
                       plan->vocab_parallel);
    return ZB_OK;
}

zb_status zb_run_check_vocab_cuda(const char *plan_path, const zb_plan *plan,
                                  bool device_local, zb_err *err) {
    if (!plan->vocab_parallel) return ZB_OK;
    if (plan->model.train.precision != ZB_PREC_FP32)
        return zb_fail(err, ZB_EINPUT, "%s: parallel.vocab_parallel %d with "
                       "precision bf16: zbrun trains vocabulary parallelism "
                       "on the cuda backend in fp32 only (training.precision: "
                       "fp32)", plan_path, plan->vocab_parallel);
    if (!device_local)
        return zb_fail(err, ZB_EINPUT, "%s: parallel.vocab_parallel %d on the "
                       "cuda backend runs with every rank on one device only "
                       "(ZB_CUDA_SHARE=1, one process): the NCCL transport's "
                       "staging rings do not count its messages yet", plan_path,
                       plan->vocab_parallel);
    return ZB_OK;
}

bool zb_loss_warn(double loss, double *first, bool *warned) {
    if (*first == 0) *first = loss;
    if (*warned || !(*first > 0) || loss <= ZB_LOSS_WARN_RATIO * *first) return false;
    *warned = true;
    return true;
}

/* s as one shell word: unchanged when it has only safe characters, else
 * in single quotes (a quote inside as '\''); cut at cap. */
void zb_shell_quote(const char *s, char *out, size_t cap) {
    bool plain = s[0] != '\0';
    for (const char *p = s; *p; p++)
        if (!isalnum((unsigned char)*p) && !strchr("_./:=@%+,-", *p)) plain = false;
    size_t n = 0;
    if (cap < 8) {
        if (cap) out[0] = '\0';
        return;
    }
    if (plain) {
        snprintf(out, cap, "%s", s);
        return;
    }
    out[n++] = '\'';
    for (const char *p = s; *p && n + 6 < cap; p++) {
        if (*p == '\'') {
            memcpy(out + n, "'\\''", 4);
            n += 4;
        } else {
            out[n++] = *p;
        }
    }
    out[n++] = '\'';
    out[n] = '\0';
}

void zb_print_stopped(const char *plan_path, const char *ckpt_dir, int ckpt_every,
                      const zb_run_result *res) {
    const char *sig = res->stopped == SIGINT ? "SIGINT" : res->stopped == SIGTERM
                      ? "SIGTERM" : res->stopped == SIGPIPE
                      ? "SIGPIPE (the reader of stdout went away)" : "a signal";
    int last = res->first_step + res->n_steps - 1;
    char qplan[2100], qdir[2100];
    zb_shell_quote(plan_path, qplan, sizeof qplan);
    zb_shell_quote(ckpt_dir, qdir, sizeof qdir);
    if (res->n_steps == 0) {   /* during the validation pass before step 1 */
        fprintf(stderr, "zbrun: stopped by %s in the validation pass before "
                "step %d of %d; no step ran, nothing new saved\n", sig,
                res->first_step, res->total_steps);
        return;
    }
    fprintf(stderr, "zbrun: stopped by %s after step %d of %d\n", sig, last,
            res->total_steps);
    if (res->stop_saved)
        fprintf(stderr, "zbrun: checkpoint of step %d saved; resume with: zbrun "
                "%s --resume --checkpoint-dir %s --checkpoint-every %d --steps %d\n",
                last, qplan, qdir, ckpt_every, res->total_steps);
    else
        fprintf(stderr, "zbrun: checkpoints were off, nothing saved (run with "
                "--checkpoint-every N to be able to resume)\n");
}

bool zb_msg_has_place(const char *msg, const char *plan_path) {
    size_t n = plan_path ? strlen(plan_path) : 0;
    if (n && !strncmp(msg, plan_path, n) && msg[n] == ':') return true;
    const char *colon = strchr(msg, ':');
    if (!colon || colon == msg || msg[0] == '-') return false;
    if (colon[1] >= '0' && colon[1] <= '9') return true;
    char file[512];
    snprintf(file, sizeof file, "%.*s", (int)(colon - msg), msg);
    return strchr(file, ' ') == NULL && access(file, F_OK) == 0;
}
