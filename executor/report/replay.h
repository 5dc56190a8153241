/* replay.h - where a measured bubble comes from: the plan's schedule
 * simulated again (zb_simulate) with the pass times this run measured
 * (pass_times.h: per virtual stage, mean over the kept steps) in place of
 * the cost model's, communication and memory costs kept from the plan.
 *
 *   planned bubble  - replayed bubble = the cost model's pass-time error
 *                     (stages or pass kinds whose ratios differ from the plan)
 *   measured bubble - replayed bubble = time lost outside the passes'
 *                     own durations: waits for messages and wake-ups, per-
 *                     pass overheads, or the rank threads waiting for a core
 *
 * A pass kind a stage never ran (a schedule with fused BW runs no B or W)
 * gets the plan's time scaled by the stage's measured/planned ratio of the
 * kinds it did run (BW splits into B and W in the plan's proportions).
 */
#ifndef ZB_REPLAY_H
#define ZB_REPLAY_H

#include "common/zb_plan.h"
#include "executor/base.h"

/* *bubble = bubble rate of the replay (zb_sim.h's definition); 0 when the
 * run kept no steps. */
zb_status zb_replay_bubble(const zb_plan *plan, const zb_run_result *res,
                           double *bubble, zb_err *err);

#endif
