/* zb_auto_vlocal.h - local search over a V schedule's W placement (internal
 * to the planner; used by zb_auto_v at tight memory limits).
 *
 * zb_vlocal improves s in place: it swaps two adjacent passes of a rank
 * where one is a W (a W one place earlier or later), simulates the order
 * with the real costs (zb_simulate_fast) and keeps the swap when the
 * longest rank span gets shorter, or equal with an earlier last end, and
 * the peak stays within mem_limit (same tolerance as the heuristic);
 * orders that deadlock are rejected. Sweeps over every rank until a sweep
 * keeps nothing or `budget` passes have been simulated. s must be a valid
 * order within the limit. ZB_ENOMEM is the only failure.
 */
#ifndef ZB_AUTO_VLOCAL_H
#define ZB_AUTO_VLOCAL_H

#include "common/zb_schedule.h"
#include "common/zb_sim.h"

zb_status zb_vlocal(zb_schedule *s, const zb_costs *c, double mem_limit,
                    long budget, zb_err *err);

#endif
