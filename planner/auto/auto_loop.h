/* auto_loop.h - the automatic zero-bubble schedule for the LOOP
 * placement (zb-auto, and zb-1p/zb-2p's heuristic) under a memory limit.
 *
 * zb_auto_heuristic: for the real per-stage costs (zb_costs, LOOP placement,
 * v = 1) and a per-rank memory limit (same unit as m_b), an action list per
 * rank that never exceeds the limit and minimises the longest rank span
 * (first start to last end on one rank: what the bubble rate measures; ties
 * go to the earlier last end). Candidates: the round scheduler's runs
 * (auto/rounds.h), the list scheduler's policies (auto/greedy.h) and
 * the hand-made ZB-H1/ZB-H2 orders, each scored by zb_simulate_fast.
 */
#ifndef ZB_AUTO_LOOP_H
#define ZB_AUTO_LOOP_H

#include "common/zb_schedule.h"
#include "common/zb_sim.h"

zb_status zb_auto_heuristic(int p, int m, const zb_costs *c, double mem_limit,
                            zb_schedule *out, zb_err *err);

#endif
