/* agree.h - the processes of one launched job (launch.h, one rank each)
 * check at start-up that they run the same thing: under mpirun each
 * process reads its own plan file and options, and two that differ would
 * train different models silently, hang, or crash in a collective.
 *
 * zb_agree runs once the job's transport is up (procs.h): every rank puts
 * what it was given into its slot of a world all-reduce (the plan's
 * fingerprint, the schedule's name and actions, the optimizer, the seed,
 * the data file, and the options that change the run: steps, --resume,
 * --resume-changed, --checkpoint-every, --max-loss-ratio), or, on a rank
 * that could not read its plan or data (zb_agree_failed), that it failed
 * and on which host. Every rank then knows every other's, so all reach
 * the same verdict and can each print it and exit 2 without waiting for
 * one another:
 *   - a rank that failed: its own error, "rank R (host H): ...";
 *   - the others: "rank R (host H) could not start (its message says
 *     why); nothing was run";
 *   - ranks that differ: "rank R: rank S's plan or options differ from rank
 *     0's: schedule 1f1b vs zb-h1 (every process must be given the same
 *     plan and options)" on every rank.
 * Every rank failing the same way is the common case of a bad plan on a
 * shared file system: then only rank 0 prints, as before the transport.
 */
#ifndef ZB_AGREE_H
#define ZB_AGREE_H

#include <stdbool.h>

#include "common/zb_error.h"
#include "common/zb_plan.h"
#include "executor/comm/transport.h"

/* The options that change the run (steps: the run's total). */
typedef struct {
    int steps, checkpoint_every;
    bool resume, resume_changed;
    double max_loss_ratio;
} zb_agree_opts;

/* This rank's plan and options against every other rank's over tr (its
 * rank and world are the job's). ZB_OK when all agree; else ZB_EINPUT
 * with the line this rank prints in err (prefixed "rank R: ") and
 * *all_know = true: every rank failed together. Transport failures are
 * returned as they are, with *all_know = false. */
zb_status zb_agree(zb_transport *tr, const zb_plan *plan, const zb_agree_opts *o,
                   bool *all_know, zb_err *err);

/* The same exchange from a rank whose own start failed with `why`
 * (ZB_EINPUT: a missing plan or data file): err gets this rank's line
 * "rank R (host H): <why>", or nothing to print (err->msg empty) when
 * every rank failed and this is not rank 0. */
zb_status zb_agree_failed(zb_transport *tr, const zb_err *why, zb_err *err);

#endif
