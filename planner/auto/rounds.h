/* rounds.h - the round scheduler behind zb-auto (LOOP placement,
 * v = 1; internal to the planner), after the idea of the ZB-2p heuristic of
 * Qi et al., "Zero Bubble Pipeline Parallelism" (2023).
 *
 * It builds the schedule one microbatch round at a time, timing every pass
 * as it places it (per-stage costs, transfers, memory):
 *   warm-up   rank r runs F passes until its first B can arrive: as many as
 *             fit in time (and memory, and m) before B0 comes back from the
 *             rank below, strictly fewer on each later rank; then B0;
 *   round i   every rank that may runs one more F, then every rank runs B_i
 *             (last rank first). Before an F or a B, W passes run only where
 *             they fit whole before that pass's input arrives (or where
 *             memory needs them); the rank with all its F done clears its
 *             owed W before its next B (only rank 0 in the rounds);
 *   tail      every rank runs its remaining W.
 * Three switches, all searched (zb_rounds_seeds):
 *   fit_first_b   in the warm-up an F must end before B0 arrives (else it
 *                 may start before and overrun the arrival);
 *   guard_b       a rank more than one F ahead of the next skips its F (stays
 *                 idle) when that F would delay the B coming back, if the
 *                 idle time it costs stays within the worst rank's bubble;
 *   fill_gaps     a W that does not fit whole before an input still runs if
 *                 the gap it would leave idle is within the worst rank's
 *                 bubble (else the rank waits for the input).
 * A run that cannot keep the memory limit fails (ZB_EINFEASIBLE); the
 * simulator scores the rest.
 */
#ifndef ZB_AUTO_ROUNDS_H
#define ZB_AUTO_ROUNDS_H

#include <stdbool.h>

#include "common/zb_schedule.h"
#include "common/zb_sim.h"

typedef struct {
    bool fit_first_b, guard_b, fill_gaps;
} zb_rounds_policy;

/* One run; out is initialised by the call (name "zb-auto"). Costs and
 * limit must have passed zb_greedy_check. */
zb_status zb_rounds_run(int p, int m, const zb_costs *c, double mem_limit,
                        const zb_rounds_policy *pol, zb_schedule *out,
                        zb_err *err);

/* Every switch combination (ZB_ROUNDS_MAX runs) into seeds[0..*n-1]; runs
 * that fail on memory are left out. The caller frees the seeds. */
#define ZB_ROUNDS_MAX 8
zb_status zb_rounds_seeds(int p, int m, const zb_costs *c, double mem_limit,
                          zb_schedule *seeds, int *n, zb_err *err);

#endif
