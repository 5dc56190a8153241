/* ilp/ilp_v.h - zb_ilp_v_schedule: the V placement (v = 2) split-B/W
 * schedule problem as a MIP solved with GLPK, warm-started from a given
 * schedule (ilp/ilp_v.c describes the model); the same contract as
 * zb_ilp_schedule (ilp/ilp_loop.h): on time-out the best schedule found,
 * never worse than the warm start.
 */
#ifndef ZB_ILP_V_H
#define ZB_ILP_V_H

#include "common/zb_schedule.h"
#include "common/zb_sim.h"
#include "planner/schedules/generator.h"

/* warm must be a valid V schedule of the same shape. Weaker relaxation
 * than the LOOP model; above 576 passes (6pm) the warm schedule comes back with the
 * work bound. */
zb_status zb_ilp_v_schedule(int p, int m, const zb_costs *c, double mem_limit,
                            const zb_schedule *warm, double time_limit_s,
                            double mip_gap, zb_schedule *out,
                            zb_sched_report *rep, zb_err *err);

#endif
