/* schedules/vblock_search.h - the best V order over many building blocks
 * (schedules/vblock.h), each laid out, reordered (schedules/vreorder.h)
 * and squeezed (schedules/vsqueeze.h), timed with the real costs: the
 * block candidates zb-auto-v (auto/auto_v.h) weighs against its own.
 */
#ifndef ZB_SCHED_VBLOCK_SEARCH_H
#define ZB_SCHED_VBLOCK_SEARCH_H

#include "common/zb_schedule.h"
#include "common/zb_sim.h"
#include "planner/schedules/vblock.h"

/* The best order (shortest longest span, then earlier last end) within
 * mem_limit over the uniform-offset building blocks of the paper (rank 0's
 * pattern: chunk-0 F at slot 0, the other three at distinct slots 1..5;
 * each later rank moves F and chunk-1 B by d0 slots and the chunk-1 F and
 * chunk-0 B by -1, the first k ranks with d0 and the rest with d1 <= d0),
 * and the V-Min and V-Half blocks, trying blocks until `budget` passes
 * have been scheduled. Each block's order is scored as laid out and
 * squeezed (zb_vsqueeze), and reordered (zb_vreorder) too: V-Min's and
 * V-Half's when reorder >= 1, every block's when reorder >= 2.
 * *found is 0 when none fits (out untouched). */
zb_status zb_vblock_best(int p, int m, const zb_costs *c, double mem_limit,
                         long budget, int reorder, zb_schedule *out,
                         int *found, zb_err *err);

/* The best order over L's blocks (schedules/vblock_search.c): each block's
 * order reordered (when reorder >= its level), squeezed, squeezed B-first
 * and as laid out, timed with costs c; the shortest longest span within
 * mem_limit, then the earlier last end, then the first in that order.
 * The blocks are shared out to `threads` threads (0: one per core of the
 * machine, at most 8); the result does not depend on how many. *found is
 * 0 when none fits or on an error (out untouched). */
zb_status zb_vblock_eval(const zb_vblock_list *L, int m, const zb_costs *c,
                         double mem_limit, int reorder, int threads,
                         zb_schedule *out, int *found, zb_err *err);

#endif
