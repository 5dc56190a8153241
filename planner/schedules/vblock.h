/* vblock.h - V schedules from building blocks (Qi et al., "Pipeline
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

/* The V-Min and V-Half blocks (rank r: offsets +1/-1 and +2/-1 slots per
 * rank, with a gap between forward and backward that keeps the slots of
 * the 4 passes distinct modulo 6). t must hold [p][4]. */
void zb_vblock_vmin(int p, int (*t)[4]);
void zb_vblock_vhalf(int p, int (*t)[4]);

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

#endif
