/* zb_auto.h - automatic zero-bubble schedules under a memory limit.
 *
 * zb_auto_heuristic: for the real per-stage costs (zb_costs, LOOP placement,
 * v = 1) and a per-rank memory limit (same unit as m_b), an action list per
 * rank that never exceeds the limit and minimises the makespan (longest
 * stage span), found by a greedy list-scheduler over several policy choices
 * (warm-up depth, when to run W) keeping the best by zb_simulate_fast.
 * zb_auto_v: the same for the V placement (v = 2).
 */
#ifndef ZB_AUTO_H
#define ZB_AUTO_H

#include "common/zb_schedule.h"
#include "common/zb_sim.h"

zb_status zb_auto_heuristic(int p, int m, const zb_costs *c, double mem_limit,
                            zb_schedule *out, zb_err *err);
zb_status zb_auto_v(int p, int m, const zb_costs *c, double mem_limit,
                    zb_schedule *out, zb_err *err);

#endif
