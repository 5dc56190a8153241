/* checkpoint.h - training checkpoints that survive a crash at any moment.
 *
 * Layout under a checkpoint folder DIR:
 *   DIR/step-00000012/rank-00003.bin   one file per global rank: a small
 *                                      header, then zb_stage_save's data
 *   DIR/latest.yaml                    the index: which step is complete
 * Every file is written atomically (temporary file, fsync, rename). A
 * checkpoint is saved as: create the step folder, every rank writes its
 * file, then (after all ranks finished) the index is replaced, and only then
 * the other step folders are removed. A crash anywhere in between leaves
 * the index pointing at the previous complete checkpoint.
 *
 * The index records the step completed, the data position (the batches are
 * a pure function of (step, sequence), so the next step's batch is all it
 * takes), the total steps of the run (the learning-rate schedule depends on
 * it), the seed, and the layout the rank files belong to; resuming checks
 * the layout against the plan. The model has no dropout, so there is no RNG
 * state to keep.
 */
#ifndef ZB_CHECKPOINT_H
#define ZB_CHECKPOINT_H

#include <stdbool.h>

#include "common/zb_error.h"
#include "common/zb_plan.h"
#include "executor/stage.h"

#define ZB_CKPT_VERSION 1

typedef struct {
    int step;          /* steps completed (>= 1) */
    int total_steps;   /* of the run that wrote it */
    int data_position; /* the next step reads batch data_position (0-based) */
} zb_ckpt_index;

/* Read DIR/latest.yaml. *found = false (and ZB_OK) when there is none.
 * An index that does not parse or belongs to another layout is ZB_EINPUT
 * "DIR/latest.yaml:line:col: ...". */
zb_status zb_ckpt_find(const char *dir, const zb_plan *plan,
                       zb_ckpt_index *idx, bool *found, zb_err *err);

/* Create DIR and DIR/step-<step> (called once, before the ranks save). */
zb_status zb_ckpt_begin(const char *dir, int step, zb_err *err);

/* One rank's file of step `step`. */
zb_status zb_ckpt_save_rank(const char *dir, int step, int rank, int world,
                            const zb_stage *st, zb_err *err);
zb_status zb_ckpt_load_rank(const char *dir, int step, int rank, int world,
                            zb_stage *st, zb_err *err);

/* After every rank saved: write the index for `step`, then remove every
 * other step folder (the previous checkpoint, leftovers of a killed run) on
 * a best-effort basis. */
zb_status zb_ckpt_commit(const char *dir, const zb_plan *plan, int step,
                         int total_steps, zb_err *err);

#endif
