/* auto/auto_v.h - zb_auto_v: the automatic zero-bubble schedule for the V
 * placement (v = 2, zb-auto-v) under a per-rank memory limit: the same
 * contract as zb_auto_heuristic (auto/auto_loop.h), its candidates the V
 * round scheduler (auto/vrounds.h), the list scheduler's V policies
 * (auto/greedy.h), ZB-V and the building-block orders
 * (schedules/vblock_search.h), improved by a local search (auto/vlocal.h)
 * at tight limits; on small instances there also the same search at a
 * few tighter limits and a deep local search, each kept only when
 * strictly shorter; then the authors' building-block framework
 * (auto/vauto.h), kept only when strictly shorter too; last, on tiny
 * instances, a search from three starts (auto/vlocal.h, auto/vshallow.h),
 * again kept only when strictly shorter.
 */
#ifndef ZB_AUTO_V_H
#define ZB_AUTO_V_H

#include "common/zb_schedule.h"
#include "common/zb_sim.h"

zb_status zb_auto_v(int p, int m, const zb_costs *c, double mem_limit,
                    zb_schedule *out, zb_err *err);

#endif
