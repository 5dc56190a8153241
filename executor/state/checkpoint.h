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
#include "executor/stage/stage.h"

#define ZB_CKPT_VERSION 1

typedef struct {
    int step;          /* steps completed (>= 1) */
    int total_steps;   /* of the run that wrote it */
    int data_position; /* the next step reads batch data_position (0-based) */
    long long seed;    /* training.seed of the run that wrote it */
} zb_ckpt_index;

/* Resuming from idx into a run of total_steps steps of plan: a different
 * total (it shapes the learning-rate schedule) or seed (it picks the data
 * batches) is ZB_EINPUT saying what would change and that the option
 * --resume-changed accepts it; with allow_changed, ZB_OK. */
zb_status zb_ckpt_check_resume(const char *dir, const zb_ckpt_index *idx,
                               const zb_plan *plan, int total_steps,
                               bool allow_changed, zb_err *err);

/* One writer per checkpoint folder: create DIR if needed and take an
 * exclusive flock on DIR/.lock (*fd, release with zb_ckpt_unlock). A folder
 * held by another process is ZB_EINPUT naming it and the holder's pid. */
zb_status zb_ckpt_lock(const char *dir, int *fd, zb_err *err);
void zb_ckpt_unlock(int fd);

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
