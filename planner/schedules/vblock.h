/* schedules/vblock.h - V schedules from building blocks (Qi et al., "Pipeline
 * Parallelism with Controllable Memory", 2024; internal to the planner).
 *
 * Unit-time model: every pass takes one slot and a microbatch repeats every
 * 6 slots (F and B of both chunks plus two W). A building block gives, per
 * rank, the slot of microbatch 0's chunk-0 F, chunk-1 F, chunk-1 B and
 * chunk-0 B (t[r][0..3]); microbatch j's pass is 6j later. A rank's order
 * is its F and B passes sorted by slot, with W passes (FIFO, in B order)
 * put into the free slots as they come and the rest at the end. The order
 * is then timed by the simulator with the real costs (which "squeezes" the
 * unit slots away). The activation memory of a block is set by how long a
 * microbatch lives on a rank: V-Min about 1/3 of 1F1B's, V-Half 1/2.
 */
#ifndef ZB_SCHED_VBLOCK_H
#define ZB_SCHED_VBLOCK_H

#include <stdbool.h>

#include "common/zb_schedule.h"
#include "common/zb_sim.h"

/* The order of block t ([p][4] slots) for m microbatches; out is
 * initialised by the call (name `name`, V placement). */
zb_status zb_vblock_order(int p, int m, const int (*t)[4], const char *name,
                          zb_schedule *out, zb_err *err);

/* Pull the passes of a split V schedule into idle unit slots without
 * raising any rank's unit-model peak (schedules/vsqueeze.c) into out; out_b
 * (may be NULL) gets the same squeeze then also B pulled into the slots W
 * held and W put only into what is left idle (b_first). Both are
 * initialised by the call (and freed again on an error). */
zb_status zb_vsqueeze(const zb_schedule *in, zb_schedule *out,
                      zb_schedule *out_b, zb_err *err);

/* The unit-model timing of a complete split V schedule `in` (every pass
 * one slot, transfers free; each pass at the first slot its rank and its
 * dependency allow, the slots zb_simulate gives with unit costs): rank r's
 * action i starts at slot start[off[r] + i] (off[r] = the actions of ranks
 * before r). Returns the last end slot, -1 if the order deadlocks, -2 when
 * out of memory. */
int zb_vunit_times(const zb_schedule *in, const int *off, int *start);

/* Block t's order reordered in the unit model (schedules/vreorder.c): passes
 * pulled into earlier free slots within the largest rank's unit peak, the
 * warm-up with the W placed, the cool-down with and without them, then W
 * per chunk into the free slots. out is initialised by the call. */
zb_status zb_vreorder(int p, int m, const int (*t)[4], const char *name,
                      zb_schedule *out, zb_err *err);

/* The V-Min and V-Half blocks (rank r: offsets +1/-1 and +2/-1 slots per
 * rank, with a gap between forward and backward that keeps the slots of
 * the 4 passes distinct modulo 6). t must hold [p][4]. */
void zb_vblock_vmin(int p, int (*t)[4]);
void zb_vblock_vhalf(int p, int (*t)[4]);

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

/* Building blocks to try, in order: block i's slots are t[i*p .. i*p+p-1],
 * its reorder level level[i] (1: V-Min, V-Half; 2: the uniform-offset
 * ones). */
typedef struct {
    int p, n, cap;
    int (*t)[4];     /* [cap * p] */
    int *level;      /* [cap] */
} zb_vblock_list;

/* zb_vblock_best's list for (p, m, budget, reorder): V-Min, V-Half, then
 * the uniform-offset blocks until the budget is spent. L is initialised
 * by the call; free it with zb_vblock_list_free. */
zb_status zb_vblock_list_make(int p, int m, long budget, int reorder,
                              zb_vblock_list *L, zb_err *err);
void zb_vblock_list_free(zb_vblock_list *L);

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
