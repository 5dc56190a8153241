/* auto/auto_loop.h - automatic zero-bubble schedules under a memory limit.
 *
 * zb_auto_heuristic: for the real per-stage costs (zb_costs, LOOP placement,
 * v = 1) and a per-rank memory limit (same unit as m_b), an action list per
 * rank that never exceeds the limit and minimises the longest rank span
 * (first start to last end on one rank: what the bubble rate measures; ties
 * go to the earlier last end). Candidates: the round scheduler's runs
 * (auto/rounds.h), the list scheduler's policies (auto/greedy.h) and
 * the hand-made ZB-H1/ZB-H2 orders, each scored by zb_simulate_fast.
 * zb_auto_v: the same for the V placement (v = 2), with auto/vrounds.h
 * and ZB-V.
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
