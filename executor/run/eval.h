/* eval.h - the validation loss inside zb_run (training.val).
 *
 * When: before the first step run (step first_step-1, "step 0" of a fresh
 * run), after every step that is a multiple of val.every (> 0), and after
 * the last step.
 * What: val.batches global batches of the validation source, read in
 * sequential order from its start (the same batches every time). For each
 * batch and each microbatch j in turn, every rank runs the F passes of its
 * own program for microbatch j (the schedule's F actions and the activation
 * transfers they imply, in program order, nothing else), then gives its
 * activation slots back (zb_stage_drop). A world barrier separates batches.
 * The loss is the world sum of the heads' per-token losses (tp rank 0) over
 * val.batches * global_batch * seq_len tokens: the same number for every
 * layout, up to float rounding.
 * Side effects: the stage's gradients and loss sum are zeroed (evaluation
 * runs between an optimizer step and the next step's zeroing); timings of
 * the training actions are untouched.
 */
#ifndef ZB_EVAL_H
#define ZB_EVAL_H

#include <stdbool.h>

#include "executor/run/run_ctx.h"

/* Room in res for every evaluation of a run of steps first..total. */
zb_status zb_eval_alloc(zb_run_result *res, const zb_plan *plan, int first,
                        int total, zb_err *err);

/* Is there an evaluation after step `step` (first-1 = before training)? */
bool zb_eval_due(const zb_run_ctx *c, int step);

/* Evaluate (every rank calls it at the same step); *loss is the mean
 * validation loss per token on every rank; rank 0 records (step, loss) in
 * the result. */
zb_status zb_eval_run(zb_rank *rk, int step, double *loss, zb_err *err);

#endif
