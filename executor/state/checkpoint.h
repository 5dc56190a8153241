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
 * it), the seed, the layout the rank files belong to, the model's shape
 * (layers, hidden, heads, ffn_hidden, seq_len, vocab, tied embeddings) and
 * the plan's fingerprint (zb_plan_fingerprint: shapes, batch, split; not
 * the run options), and the divergence baseline: the loss --max-loss-ratio
 * compares with (the first step's of the run that began training) and the
 * newest step whose loss passed the checks. Resuming checks the layout and
 * the model shape against the plan (a mismatch names both values; another
 * fingerprint with the same shapes, e.g. a plan re-made from a profile, is
 * fine). The model has no dropout, so there is no RNG state to keep.
 *
 * Index format 2 (this zb) adds model, fingerprint, baseline_loss and
 * last_good_step; format 1 (older zb) lacks them and still resumes, with
 * the layout check only and the resumed run's first loss as baseline. A
 * higher format is refused as written by a newer zb.
 */
#ifndef ZB_CHECKPOINT_H
#define ZB_CHECKPOINT_H

#include <stdbool.h>

#include "common/zb_error.h"
#include "common/zb_plan.h"
#include "common/zb_yaml.h"
#include "executor/stage/stage.h"

#define ZB_CKPT_VERSION 1        /* rank files */
#define ZB_CKPT_INDEX_VERSION 2  /* latest.yaml; 1 is still read */

typedef struct {
    int step;          /* steps completed (>= 1) */
    int total_steps;   /* of the run that wrote it */
    int data_position; /* the next step reads batch data_position (0-based) */
    long long seed;    /* training.seed of the run that wrote it */
    double baseline_loss; /* --max-loss-ratio's reference; 0: none (format 1) */
    int last_good_step;   /* newest step whose loss passed; 0: unknown */
    bool has_data;        /* the index's data map (older indexes lack it): */
    int global_batch;     /*   training.global_batch of the run */
    bool data_sequential; /*   training.data.order: sequential */
    char data_path[1024]; /*   the data file's real path; "": built-in corpus */
} zb_ckpt_index;

/* What a commit records besides the plan's layout and model. */
typedef struct {
    int step, total_steps;
    double baseline_loss;  /* the loss the divergence check compares with */
    int last_good_step;    /* newest step whose loss passed the checks */
} zb_ckpt_state;

/* Resuming from idx into a run of total_steps steps of plan: a different
 * total (it shapes the learning-rate schedule: the message names the
 * first step left whose learning rate differs, with both values) or seed
 * (it picks the data batches) is ZB_EINPUT saying what would change and
 * that the option --resume-changed accepts it; with allow_changed, ZB_OK.
 * Another training.global_batch, data file or data order (recorded in
 * the index since issue 29; an older index has none) is refused even with
 * allow_changed: the data position would point at other samples. */
zb_status zb_ckpt_check_resume(const char *dir, const zb_ckpt_index *idx,
                               const zb_plan *plan, int total_steps,
                               bool allow_changed, zb_err *err);

/* One writer or any number of readers per checkpoint folder: create DIR
 * if needed and take an flock on DIR/.lock (*fd, release with
 * zb_ckpt_unlock): exclusive for a run that writes checkpoints (it writes
 * its pid into the file), shared for one that only resumes from them, so
 * that no run rotates the folder while another reads it. A folder held by
 * another process is ZB_EINPUT naming it and the writer's pid. DIR that
 * cannot be created is ZB_EINPUT (exit 2) naming it and why. */
zb_status zb_ckpt_lock(const char *dir, bool shared, int *fd, zb_err *err);
void zb_ckpt_unlock(int fd);

/* A run that writes checkpoints but does not resume: DIR holding a
 * checkpoint (an index or step folders) is ZB_EINPUT saying which step it
 * holds and that --resume continues it and --overwrite-checkpoints
 * replaces it; an empty or missing DIR is fine. */
zb_status zb_ckpt_check_fresh(const char *dir, zb_err *err);

/* Index helpers (ckpt_guard.c): write the plan's model map, and check a
 * read one against the plan (ZB_EINPUT "DIR/latest.yaml:l:c: the
 * checkpoint's model has heads 4, the plan's heads 8 ..."). */
void zb_ckpt_write_model(zb_yw *w, const zb_plan *plan);
/* The index's data map: global_batch, path (real path), order. Reading
 * it (optional: idx->has_data) ZB_EINPUT on a malformed map. */
void zb_ckpt_write_data(zb_yw *w, const zb_plan *plan);
zb_status zb_ckpt_read_data(const zb_ydoc *doc, const zb_ynode *root,
                            zb_ckpt_index *idx, zb_err *err);
zb_status zb_ckpt_check_model(const zb_ydoc *doc, const zb_ynode *model,
                              const zb_plan *plan, zb_err *err);

/* Read DIR/latest.yaml. *found = false (and ZB_OK) when there is none.
 * An index that does not parse, belongs to another layout or model, is of
 * a newer format, is a dangling link or names a step folder that is not
 * there is ZB_EINPUT "DIR/latest.yaml:line:col: ...". */
zb_status zb_ckpt_find(const char *dir, const zb_plan *plan,
                       zb_ckpt_index *idx, bool *found, zb_err *err);

/* Create DIR and DIR/step-<step> (called once, before the ranks save). */
zb_status zb_ckpt_begin(const char *dir, int step, zb_err *err);

/* One rank's file of step `step`. */
zb_status zb_ckpt_save_rank(const char *dir, int step, int rank, int world,
                            const zb_stage *st, zb_err *err);
zb_status zb_ckpt_load_rank(const char *dir, int step, int rank, int world,
                            zb_stage *st, zb_err *err);

/* After every rank saved: write the index for cs->step, then remove every
 * other step folder (the previous checkpoint, leftovers of a killed run) on
 * a best-effort basis. */
zb_status zb_ckpt_commit(const char *dir, const zb_plan *plan,
                         const zb_ckpt_state *cs, zb_err *err);

#endif
