/* runtime.h - the plan interpreter: trains the plan's model for some steps
 * with every rank of the plan's layout (world = dp*tp*pp) as a thread of
 * this process (local transport, CPU stage), or with one rank in this
 * process and the others in other processes (zb_run_proc).
 *
 * Each rank runs the lowered program of its pipeline rank (zb_lower):
 * COMPUTE -> a stage pass, SEND/RECV -> the transport, tag zb_lower_tag,
 * peer = the global rank of that pipeline rank with our dp and tp ranks.
 * After the pipeline part of a step: tied-embedding gradient all-reduce
 * (first and last pipeline rank), DP gradient all-reduce (sum: the loss
 * scale 1/(global_batch*seq_len) already makes it the mean), global gradient
 * norm (world sum of zb_stage_grad_sumsq over dp_rank 0), clipping, the
 * learning-rate schedule (zb_lr_at, base.h), AdamW. Each rank times every compute
 * action (CLOCK_MONOTONIC, seconds since the run started); the result holds
 * what the report, trace and timeline picture need.
 *
 * Validation loss (training.val; eval.h) before the first step, every
 * val.every steps and after the last, forward only through the program's F
 * passes.
 *
 * Checkpoints (checkpoint.h) every opts->checkpoint_every steps; with
 * opts->resume the run continues after the newest complete checkpoint and
 * gives the same numbers as a run that was never interrupted.
 *
 * The library prints nothing: opts->on_step is called from rank 0's thread
 * after every step. A NaN/Inf loss or gradient norm stops the run with
 * ZB_ERUNTIME "step N rank R: loss is nan" before the update (the last
 * checkpoint stays the newest). Any rank's error aborts the transport so no
 * rank hangs; the first error is returned.
 */
#ifndef ZB_RUNTIME_H
#define ZB_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>

#include "common/zb_error.h"
#include "common/zb_lower.h"
#include "common/zb_model.h"
#include "common/zb_plan.h"
#include "executor/base.h"
#include "executor/comm/transport.h"
#include "executor/run/run_opts.h"

/* Train. res is initialised by the call; free it with zb_run_result_free,
 * also after an error (it then holds the steps that finished).
 * With opts->proc.tr every process gets the whole result: per-rank times,
 * memory and timelines are gathered from all processes (an all-reduce over
 * the world after the last step) and the per-step numbers are the same
 * everywhere; params: every rank's on rank 0 (keep_params), else only this
 * process's rank. */
zb_status zb_run(const zb_plan *plan, const zb_run_opts *opts,
                 zb_run_result *res, zb_err *err);

/* What a transport for this plan must carry: at most *max_msgs messages
 * in flight from or to one rank (one step's), each of *msg_floats floats. */
zb_status zb_run_msg_sizes(const zb_plan *plan, int *max_msgs,
                           size_t *msg_floats, zb_err *err);


/* Slots of each NCCL staging ring (transport.h, zb_nccl_ring(up, send))
 * for plan's schedule: zb_staging_slots (common/zb_staging.h), the count
 * the planner's memory prediction uses; 0 for a ring no message uses. A
 * step never reuses a slot. */
void zb_run_ring_slots(const zb_plan *plan, int slots[ZB_NCCL_RINGS]);

/* Floats of one pipeline message ([B, T, C] activations or their
 * gradient) on the CUDA backend: precision bf16 stores activations in
 * bf16, two per float (zb_stage_msg_floats), so its transports hold half
 * what fp32 needs. */
size_t zb_run_cuda_msg_floats(const zb_plan *plan);

/* The CUDA device of rank `rank` in a threaded cuda run with `devices`
 * visible: one rank per device when they suffice (and world > 1), else
 * all ranks share device 0; ZB_CUDA_SHARE=1 in the environment makes them
 * share device 0 always. */
int zb_run_cuda_device(int rank, int world, int devices);

/* NULL when a threaded cuda run of `world` ranks may start with `devices`
 * visible; else why not, written into buf[n] (one line): more ranks than
 * devices would put every rank on device 0 (each step world times the
 * work of one GPU, world times its memory), which only share (the user's
 * ZB_CUDA_SHARE=1) allows. */
const char *zb_run_cuda_share_refusal(int world, int devices, bool share,
                                      char *buf, size_t n);

/* The groups global rank `rank` of the plan's layout is in, as the
 * runtime uses them: g[0] its TP group, g[1] its DP group, g[2] its tied
 * embedding group (n = 0 when it holds no tied embedding half), g[3] its
 * copy pair under a DUAL plan (dualpipe: pipeline ranks r and pp-1-r,
 * which hold the two copies of the same two stages; n = 0 otherwise). A
 * per-process transport that must know its groups up front (NCCL) is
 * made with these. */
#define ZB_RUN_GROUPS 4
void zb_run_groups(const zb_plan *plan, int rank, zb_group g[ZB_RUN_GROUPS]);

/* Threads per rank for `world` ranks on `cores` cores: max(1, cores/world). */
int zb_threads_per_rank(int cores, int world);

#endif
