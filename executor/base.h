/* base.h - the executor's leaf: what every room may include and that
 * includes no room. The clock, the learning-rate schedule, the record of one
 * finished step (what zbrun prints) and the result of a run (what it
 * measured, which the report room turns into files). The plan interpreter
 * (run/runtime.h) fills them; nothing here knows backends or networks. */
#ifndef ZB_BASE_H
#define ZB_BASE_H

#include <stdbool.h>
#include <stddef.h>

#include "common/zb_model.h"

/* Seconds on CLOCK_MONOTONIC. */
double zb_now_s(void);
/* Seconds since 1970-01-01 UTC (CLOCK_REALTIME): timestamps in records. */
double zb_unix_s(void);

/* Learning rate of 1-based step `step` of `total`: linear warmup from
 * lr/warmup_steps to lr over the first warmup_steps steps, then cosine decay
 * reaching min_lr at step `total` (or constant lr without cosine). */
double zb_lr_at(const zb_optim *o, int step, int total);

typedef struct {
    int step, steps;        /* 1-based step just finished, last step */
    double loss;            /* mean cross-entropy per token of the step */
    double lr;              /* learning rate used by the update */
    double grad_norm;       /* global norm before clipping */
    double step_s;          /* wall time of the step (rank 0) */
    double tokens_per_s;    /* global_batch * seq_len / step_s */
    double elapsed_s;       /* since this run started */
    double val_loss;        /* validation loss after this step, NaN: none */
    bool eval_only;         /* only val_loss (and the three below) are set:
                               the evaluation before the first step (step =
                               first step - 1) */
    double unix_s;          /* wall clock (CLOCK_REALTIME) when recorded */
    long long tokens_seen;  /* training tokens in steps 1..step (a resumed
                               run counts the steps before it too) */
    int world;              /* entries of mem_bytes (0: none) */
    const double *mem_bytes;   /* [world] each global rank's peak memory so
                               far (parameters, gradients, optimizer state,
                               its activations' high-water mark), bytes; only
                               valid inside the callback */
    double mfu;             /* the plan's FLOPs per step over step_s and the
                               devices' peak: plan mfu * plan step / step_s
                               (0 when the plan predicts nothing) */
} zb_step_info;

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
    /* same basis: the step boundary, from the end of the rank's pipeline
     * program until it may start the next step's (gradient all-reduces,
     * the world check, AdamW, the between-steps stop check when the caller
     * set opts->stop; not evaluations or checkpoints). boundary_s: its wall
     * time; boundary_idle_s: the part blocked in its collectives (their
     * wall time less the rank thread's CPU time inside them: waiting for
     * the slowest member, not summing); boundary_busy_s: the rank thread's
     * CPU time over all of it (with one thread per rank its compute: sums,
     * norm, AdamW, post-validation's copies). boundary_s - boundary_idle_s
     * - boundary_busy_s is time off its core (or other threads' share).
     * verdict_wait_s: of boundary_idle_s, the part in the world all-reduce
     * of the gradient norm and loss (the wait that optimizer
     * post-validation fills with AdamW). */
    double *boundary_s, *boundary_idle_s, *boundary_busy_s;   /* [world] */
    double *verdict_wait_s;                                   /* [world] */

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

/* Free what a run put in res (also after a failed run) and zero it. */
void zb_run_result_free(zb_run_result *res);

#endif
