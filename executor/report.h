/* report.h - what a run measured beside what its plan predicted.
 *
 * Predicted values come from the plan: per pipeline rank the bubble and
 * peak memory of plan->pred, and the busy time and span of zb_simulate on
 * plan->sched with plan->costs (seconds on the plan's device). Measured
 * ones come from zb_run_result (seconds on this machine). Measured MFU is
 * plan->pred.mfu * plan->pred.step_s / measured step time: the plan's model
 * FLOPs per step (which its MFU and step time encode) over the measured
 * time, against the plan's device peak. Bubble rates compare directly
 * whatever the speed of the machine.
 */
#ifndef ZB_REPORT_H
#define ZB_REPORT_H

#include <stdio.h>

#include "common/zb_plan.h"
#include "executor/runtime.h"

/* The plan's prediction per pipeline rank. */
typedef struct {
    double *busy_s, *span_s;   /* [pp] from zb_simulate */
} zb_report_pred;

zb_status zb_report_pred_make(const zb_plan *plan, zb_report_pred *out,
                              zb_err *err);
void zb_report_pred_free(zb_report_pred *p);

/* YAML report, written atomically:
 *   report: 1, plan: {...}, run: {...}, summary: {... measured and
 *   predicted_*}, steps: [{step, loss, lr, grad_norm, time_s}],
 *   pipeline_ranks: [{pp_rank, busy_s, predicted_busy_s, span_s,
 *   predicted_span_s, bubble, predicted_bubble, peak_mem_bytes,
 *   predicted_peak_mem_bytes}], ranks: [{rank, pp_rank, dp_rank, tp_rank,
 *   busy_s, span_s, bubble, static_bytes, act_peak_bytes}], stages:
 *   [{vstage, pass, time_s, predicted_time_s, samples}] (pass_times.h). */
zb_status zb_report_write(const char *path, const zb_plan *plan,
                          const zb_run_result *res, const char *backend,
                          zb_err *err);

/* The human tables: one row per pipeline rank, measured (predicted); one
 * row per virtual stage with its pass times; then a summary line. */
void zb_report_table(FILE *out, const zb_plan *plan, const zb_run_result *res,
                     const zb_report_pred *pred);

#endif
