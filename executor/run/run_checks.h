/* run_checks.h - zbrun's guards around a run (main.c): limits on options,
 * everything checked before the first step (threads, memory limit, output
 * paths, checkpoint folder), the loss warning, and the message after an
 * interrupted run. */
#ifndef ZB_RUN_CHECKS_H
#define ZB_RUN_CHECKS_H

#include <stdbool.h>
#include <stddef.h>

#include "common/zb_error.h"
#include "common/zb_plan.h"
#include "executor/run/runtime.h"

#define ZB_MAX_LOSS_RATIO_DEFAULT 10.0  /* stop: loss > 10 x the first loss */
#define ZB_LOSS_WARN_RATIO 3.0          /* warn once: loss > 3 x the first */
#define ZB_MAX_THREADS_PER_RANK 256
#define ZB_MAX_THREADS_TOTAL 4096       /* ranks x threads per rank */

/* A ratio option: a number >= 0 (0 turns the check off). */
zb_status zb_parse_ratio(const char *name, const char *text, double *out, zb_err *err);

/* How a run uses its checkpoint folder. */
typedef struct {
    const char *dir;
    bool writes;     /* --checkpoint-every */
    bool resume;     /* --resume */
    bool overwrite;  /* --overwrite-checkpoints: a fresh run may replace one */
} zb_ckpt_use;

/* Before the first step: threads per rank within the limits above, room
 * under a memory limit (memlimit.h), and when ck is not NULL the
 * checkpoint folder (preflight.h: locked into *lock_fd, exclusively when
 * the run writes checkpoints, shared when it only resumes; a fresh run refuses a folder holding a
 * checkpoint unless ck->overwrite), under a launcher by the process of
 * rank 0 only (the launcher's OMPI_COMM_WORLD_RANK, PMI_RANK, PMIX_RANK,
 * SLURM_PROCID or RANK). Bad options and folders are ZB_EINPUT naming
 * the option. The output files are zb_run_check_outputs's. */
zb_status zb_run_preflight(const zb_ckpt_use *ck, int world, int threads,
                           int *lock_fd, zb_err *err);

/* The plan's model is one zbrun runs: GPT-2 and Llama-shaped blocks
 * (every model key), but an llm.c checkpoint (init) only for GPT-2 blocks
 * (zb_arch_is_gpt2): else ZB_EINPUT, one line naming the plan and init.
 * (--export of a Llama-shaped model is refused by zb_llmc_export.) */
zb_status zb_run_check_model(const char *plan_path, const zb_plan *plan, zb_err *err);

/* A plan with vocabulary parallelism (parallel.vocab_parallel 1 or 2, S
 * and T actions; any tp: the vocabulary sharded over pp x tp) trains
 * without a validation set (training.val: eval.c runs F only, not the
 * shards' exchanges): that is refused, ZB_EINPUT, one line naming the
 * plan. */
zb_status zb_run_check_vocab(const char *plan_path, const zb_plan *plan,
                             zb_err *err);

/* The same plan on the cuda backend: precision fp32 only (the shards'
 * embedding and input-gradient messages are fp32 [N, C], as long as an
 * fp32 activation message), and only over the device-local transport
 * (device_local: every rank a thread on one device, ZB_CUDA_SHARE=1 and
 * no launcher; the NCCL transport's staging rings are not sized for the
 * vocabulary messages); else ZB_EINPUT, one line naming the plan. */
zb_status zb_run_check_vocab_cuda(const char *plan_path, const zb_plan *plan,
                                  bool device_local, zb_err *err);

/* The files zbrun writes at the end (NULL: not asked for). */
typedef struct {
    const char *report, *trace, *svg, *export_path, *profile, *metrics;
} zb_run_outputs;

/* Before the first step, on the process that writes them: every output
 * passes common/zb_files.h's rules against the run's inputs (the plan,
 * its data and validation files, its init checkpoint), the other outputs
 * and the checkpoint folder ckpt_dir (NULL: the run keeps none):
 * ZB_EINPUT naming the option. */
zb_status zb_run_check_outputs(const char *plan_path, const zb_plan *plan,
                               const char *ckpt_dir, const zb_run_outputs *o,
                               zb_err *err);

/* A loss far above the first: true once, the first time loss exceeds
 * ZB_LOSS_WARN_RATIO x *first (*first: 0 until the first call sets it). */
bool zb_loss_warn(double loss, double *first, bool *warned);

/* Does msg start with a place, "file:line:", "PLAN:" or "file: " of an
 * existing file (then it needs no "zbrun:" in front)? */
bool zb_msg_has_place(const char *msg, const char *plan_path);

/* s as one word a shell reads back as s: as it is when it has only
 * letters, digits and _./:=@%+,- ; else in single quotes. */
void zb_shell_quote(const char *s, char *out, size_t cap);

/* After a run ended by a signal: what was done and how to resume (the
 * command keeps --checkpoint-every ckpt_every, so the resumed run saves
 * checkpoints as this one did). */
void zb_print_stopped(const char *plan_path, const char *ckpt_dir, int ckpt_every,
                      const zb_run_result *res);

#endif
