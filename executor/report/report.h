/* report.h - what a run measured beside what its plan predicted.
 *
 * Predicted values come from the plan: per pipeline rank the bubble and
 * peak memory of plan->pred, and the busy time and span of zb_simulate on
 * plan->sched with plan->costs (seconds on the plan's device). Measured
 * ones come from zb_run_result (seconds on this machine). Measured MFU is
 * plan->pred.mfu * plan->pred.step_s / measured step time: the plan's model
 * FLOPs per step (which its MFU and step time encode) over the measured
 * time, against the plan's device peak; for the cpu device that peak is a
 * guess (docs/model-format.md), and the table and report say so.
 * Memory compares like with like: the predicted peak less the planner's
 * workspace margin against what the stage allocated. Bubble rates compare directly
 * whatever the speed of the machine.
 */
#ifndef ZB_REPORT_H
#define ZB_REPORT_H

#include <stdio.h>

#include "common/zb_plan.h"
#include "executor/base.h"

/* The plan's prediction per pipeline rank. */
typedef struct {
    double *busy_s, *span_s;   /* [pp] from zb_simulate */
} zb_report_pred;

zb_status zb_report_pred_make(const zb_plan *plan, zb_report_pred *out,
                              zb_err *err);
void zb_report_pred_free(zb_report_pred *p);

/* Where and how the run happened, for the report's run: section. */
typedef struct {
    const char *backend;       /* "cpu" */
    const char *plan_path;     /* as given on the command line */
    const char *plan_hash;     /* its content hash when read (zb_plan.h's
                                  zb_plan_file_hash), or NULL */
    const char *version;       /* zbrun's git describe at build time */
    const char *blas;          /* zb_blas_describe's line, or NULL */
    double wall_s;             /* whole run, set-up and outputs included */
    int cores;                 /* online CPUs */
    double load_start, load_end;  /* 1-minute load average, -1 unknown */
} zb_report_meta;

/* The 1-minute load average from /proc/loadavg, -1 when unknown. */
double zb_load_average(void);

/* The plan's predicted peak memory of pipeline rank r without the
 * workspace margin the planner adds (64 MiB on the cpu device) and, on a
 * GPU, the transport's staging rings: the basis of the measured number,
 * which counts only what the stage allocates. */
double zb_report_pred_mem(const zb_plan *plan, int r);
/* Those two, as the planner computes them (planner/cost/plan_fit.h). */
double zb_report_margin_bytes(const zb_plan *plan);

/* YAML report, written atomically:
 *   report: 1, plan: {...}, run: {plan_path, plan_hash, zbrun_version, wall_s,
 *   machine: {cores, device, blas, load_start, load_end}, ...},
 *   summary: {... measured and
 *   predicted_*, replayed_bubble_rate (replay.h), mfu_peak}, steps: [{step, loss, lr, grad_norm, time_s}],
 *   pipeline_ranks: [{pp_rank, busy_s, predicted_busy_s, span_s,
 *   predicted_span_s, bubble, predicted_bubble, peak_mem_bytes,
 *   predicted_peak_mem_bytes}], ranks: [{rank, pp_rank, dp_rank, tp_rank,
 *   busy_s, span_s, bubble, recv_s, stall_s, boundary_s, boundary_idle_s,
 *   boundary_busy_s, verdict_wait_s, static_bytes, act_peak_bytes}], stages:
 *   [{vstage, pass, time_s, predicted_time_s, samples}] (pass_times.h),
 *   timeline: [{pp_rank, step, actions: [[label, start_s, end_s], ...]}]
 *   (the last kept step of the dp 0 tp 0 ranks, from its first start). */
zb_status zb_report_write(const char *path, const zb_plan *plan,
                          const zb_run_result *res, const zb_report_meta *meta,
                          zb_err *err);

/* The human tables: one row per pipeline rank, measured (predicted); one
 * row per virtual stage with its pass times; then a summary line. */
void zb_report_table(FILE *out, const zb_plan *plan, const zb_run_result *res,
                     const zb_report_pred *pred);

#endif
