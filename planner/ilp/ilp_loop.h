/* ilp_loop.h - the exact schedule problem as a MIP solved with GLPK.
 *
 * Variables: end time of every pass, ordering binaries between passes on a
 * rank, memory constraints at every pass start, objective = the longest
 * rank span (last end - first start on one rank), the bubble rate's.
 * Warm-started from a given schedule (the heuristic's), with symmetry
 * breaking (passes of one kind keep microbatch order on a rank). On time-out
 * returns the best schedule found, never worse than the warm start.
 */
#ifndef ZB_ILP_LOOP_H
#define ZB_ILP_LOOP_H

#include "common/zb_schedule.h"
#include "common/zb_sim.h"
#include "planner/schedules/generator.h"

/* LOOP placement, v = 1, split B/W. warm: a valid schedule for the same
 * instance (required). rep is filled (solver "ilp"). */
zb_status zb_ilp_schedule(int p, int m, const zb_costs *c, double mem_limit,
                          const zb_schedule *warm, double time_limit_s,
                          double mip_gap, zb_schedule *out,
                          zb_sched_report *rep, zb_err *err);

/* Largest pass count (3*p*m) for which ZB_SOLVER_AUTO picks the ILP. */
#define ZB_ILP_AUTO_MAX_PASSES 96

#endif
