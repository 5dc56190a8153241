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
 * learning-rate schedule (zb_lr_at), AdamW. Each rank times every compute
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

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/zb_error.h"
#include "common/zb_model.h"
#include "common/zb_plan.h"
#include "executor/stage.h"
#include "executor/transport.h"

/* Ranks (threads, or processes: the world group's size); more is refused. */
#define ZB_RUN_MAX_WORLD 64

typedef struct {
    int step, steps;        /* 1-based step just finished, last step */
    double loss;            /* mean cross-entropy per token of the step */
    double lr;              /* learning rate used by the update */
    double grad_norm;       /* global norm before clipping */
    double step_s;          /* wall time of the step (rank 0) */
    double tokens_per_s;    /* global_batch * seq_len / step_s */
    double elapsed_s;       /* since this run started */
    double val_loss;        /* validation loss after this step, NaN: none */
    bool eval_only;         /* only val_loss is set: the evaluation before
                               the first step (step = first step - 1) */
} zb_step_info;

typedef void (*zb_step_fn)(const zb_step_info *info, void *ctx);

/* One process per rank (a launcher started this process, launch.h): this
 * process runs only global rank `rank` over the transport `tr` (made by the
 * caller, e.g. the MPI one, sized with zb_run_msg_sizes). All zero (tr
 * NULL): every rank of the plan is a thread of this process over the local
 * transport. The plan interpreter sees only the rank and the transport. */
typedef struct {
    zb_transport *tr;       /* this rank's endpoint; NULL: ranks as threads */
    int rank, world;        /* world must equal the plan's dp*tp*pp */
    int local_rank;         /* rank on this host */
    int device;             /* cuda: this rank's CUDA device (procs.h) */
} zb_run_proc;

typedef struct {
    int steps;              /* total steps of training; 0: training.steps */
    int threads;            /* OpenMP threads per rank; 0: cores / world */
    int checkpoint_every;   /* 0: never */
    const char *checkpoint_dir; /* NULL: "checkpoints" */
    bool resume;            /* continue after the newest checkpoint (if any) */
    bool resume_changed;    /* accept another total_steps or seed on resume */
    const volatile sig_atomic_t *stop; /* polled between steps (NULL: never):
                                          nonzero ends the run after the step
                                          in progress, checkpointed when
                                          checkpoints are on */
    double max_loss_ratio;  /* > 0: stop (ZB_ERUNTIME) when a step's loss
                               exceeds this times the run's first loss */
    int trace_steps;        /* steps kept in the timeline; 0: 2 */
    bool keep_params;       /* copy each rank's final parameters into res */
    zb_backend backend;     /* cpu (0) or cuda: every rank's stage */
    zb_step_fn on_step;     /* may be NULL */
    void *on_step_ctx;
    zb_run_proc proc;       /* one process per rank; zero: threads
                               (on_step: only in rank 0's process) */
} zb_run_opts;

typedef struct {
    int world, pp, dp, tp;
    int total_steps;        /* the run's last step number */
    int first_step;         /* first step run here (> 1 after a resume) */
    int n_steps;            /* steps run here */
    int resumed_from;       /* step of the checkpoint resumed from, 0: none */
    int threads;            /* OpenMP threads per rank used */
    int stopped;            /* *opts->stop's value when the run ended
                               early for it, else 0 */
    bool stop_saved;        /* a checkpoint holds the last step run */

    /* per step run, index k = step first_step + k */
    double *loss, *lr, *grad_norm, *step_s;          /* [n_steps] */

    /* per global rank; times are means over the steps after the first
     * (warm-up), or the only step. span: first start to last end of the
     * rank's compute actions in a step; busy: their summed durations;
     * bubble = (span - busy) / span, as zb_sim.h defines it. */
    double *span_s, *busy_s, *bubble;                /* [world] */
    double *static_bytes, *act_peak_bytes;           /* [world] */

    /* per pipeline rank: spans and busy times averaged over its dp*tp
     * ranks, memory = the largest of them */
    double *pp_span_s, *pp_busy_s, *pp_bubble, *pp_mem_bytes; /* [pp] */
    /* communication per global rank, means over the same steps: one
     * pipeline send (on the local transport a buffered copy: the receiver's
     * wait is schedule, not transfer), the step's DP gradient all-reduce and
     * tied-embedding all-reduce (0 when the rank has none; they include
     * waiting for the slowest member), and the time from the end of the
     * pipeline program to the end of the step (gradient sync, norm, AdamW) */
    double *send_s, *dp_ar_s, *emb_ar_s, *post_s;    /* [world] */

    double step_s_mean;     /* mean step time after the first step */
    double tokens_per_s;
    double bubble_rate;     /* (max pp span - mean pp busy) / max pp span */
    double mfu;             /* plan->pred.mfu * plan->pred.step_s / step_s_mean
                               (the plan's FLOPs per step over the measured
                               time; 0 when the plan predicts nothing) */

    /* Timeline of the last trace_n steps. Rank r's compute action i (its
     * pipeline rank's schedule order) of kept step k starts at
     * t_start[r][k * n_acts[r] + i], seconds since the run started. */
    int trace_n;
    int *trace_step;        /* [trace_n] step numbers, oldest first */
    int *n_acts;            /* [world] */
    double **t_start, **t_end;  /* [world][trace_n * n_acts[r]] */
    /* Transfers of the same kept steps: op k of rank r's program (zb_lower
     * of its pipeline rank; COMPUTE ops stay 0) ran from x_start[r][s *
     * n_ops[r] + k] to x_end[...]. A RECV's time is mostly waiting for the
     * message: a bubble, predicted or not. */
    int *n_ops;             /* [world] */
    double **x_start, **x_end;  /* [world][trace_n * n_ops[r]] */
    /* the end of each kept step on rank r: gradient all-reduces, norm and
     * optimizer, from tail_start[r][k] to tail_end[r][k] */
    double **tail_start, **tail_end;   /* [world][trace_n] */
    /* per global rank, mean over the steps after the first (as span_s):
     * seconds blocked in RECVs within the pipeline part of a step */
    double *recv_s;         /* [world] */
    /* same basis: seconds inside compute actions when the rank's thread was
     * not running (wall minus the thread's CPU time): waiting for a core
     * that other processes, or more ranks than cores, held. Meaningful with
     * one thread per rank only: with more it also counts the rank thread's
     * sleeps at OpenMP barriers while its workers finish (the table then
     * prints "-"). */
    double *stall_s;        /* [world] */

    /* validation (eval.h): loss after step val_step[i] (the first step - 1:
     * before training), n_val of them */
    int n_val;
    int *val_step;
    double *val_loss;
    double *val_t;          /* when it finished, seconds since the run started */

    /* opts->keep_params: rank r's flat parameter buffer after the run */
    float **params;         /* [world][n_params[r]] */
    size_t *n_params;       /* [world] */
} zb_run_result;

/* Train. res is initialised by the call; free it with zb_run_result_free,
 * also after an error (it then holds the steps that finished).
 * With opts->proc.tr every process gets the whole result: per-rank times,
 * memory and timelines are gathered from all processes (an all-reduce over
 * the world after the last step) and the per-step numbers are the same
 * everywhere; params: every rank's on rank 0 (keep_params), else only this
 * process's rank. */
zb_status zb_run(const zb_plan *plan, const zb_run_opts *opts,
                 zb_run_result *res, zb_err *err);
void zb_run_result_free(zb_run_result *res);

/* What a transport for this plan must carry: at most *max_msgs messages
 * in flight from or to one rank (one step's), each of *msg_floats floats. */
zb_status zb_run_msg_sizes(const zb_plan *plan, int *max_msgs,
                           size_t *msg_floats, zb_err *err);

/* Learning rate of 1-based step `step` of `total`: linear warmup from
 * lr/warmup_steps to lr over the first warmup_steps steps, then cosine decay
 * reaching min_lr at step `total` (or constant lr without cosine). */
double zb_lr_at(const zb_optim *o, int step, int total);

/* The CUDA device of rank `rank` in a threaded cuda run with `devices`
 * visible: one rank per device when they suffice (and world > 1), else
 * all ranks share device 0; ZB_CUDA_SHARE=1 in the environment makes them
 * share device 0 always. */
int zb_run_cuda_device(int rank, int world, int devices);

/* The groups global rank `rank` of the plan's layout is in, as the
 * runtime uses them: g[0] its TP group, g[1] its DP group, g[2] its tied
 * embedding group (n = 0 when it holds no tied embedding half). A
 * per-process transport that must know its groups up front (NCCL) is
 * made with these. */
void zb_run_groups(const zb_plan *plan, int rank, zb_group g[3]);

/* Threads per rank for `world` ranks on `cores` cores: max(1, cores/world). */
int zb_threads_per_rank(int cores, int world);

#endif
