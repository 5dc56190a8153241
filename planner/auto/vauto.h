/* auto/vauto.h - the V orders of the authors' automatic building-block
 * schedule (Qi et al., "Pipeline Parallelism with Controllable Memory",
 * 2024, sec. 3 and app. A: repeat a building block, squeeze it, reorder the
 * warm-up and the cool-down, then pull passes into the bubbles), rebuilt
 * here from that description in the unit-time grid the paper uses, as one
 * more seed of zb-auto-v (auto/auto_v.h).
 *
 * Grid: per rank a row of unit cells, each empty or one pass: F and f the
 * forward of chunk 0 and chunk 1, B and b the backward (input gradient) of
 * chunk 1 and chunk 0 (B runs down the ranks after rank 0's f, b up after
 * rank p-1's B), W and w their weight passes; microbatch k of a kind is its
 * k-th cell in the row. Unit memory: F and f add one chunk activation, W
 * and w release it (B and b keep it), which is never less than what the
 * simulator counts for the same order (B releases M_B - M_W there).
 */
#ifndef ZB_AUTO_VAUTO_H
#define ZB_AUTO_VAUTO_H

#include "common/zb_schedule.h"
#include "common/zb_sim.h"

/* Over every building block of the paper's search (rank 0's pattern: F at
 * slot 0, f, B and b at distinct slots 1..5, W and w each in the first free
 * slot after its B; each later rank moves F and B by d0 slots for the first
 * k0 ranks and by d1 <= d0 after, f and b by -1; k0 in 1..p-1), in that
 * order until `budget` grid cells have been built: the block's order at a
 * unit memory of min(2p, mem_limit / the largest chunk activation), timed
 * by zb_simulate_fast with costs c; the shortest longest span whose peak
 * is within mem_limit (then the earlier last end, then the first) goes to
 * *out, named "zb-auto-v". Needs p >= 2 and a split V cost table of 2p
 * stages. *found is 0 when no order fits (out untouched); ZB_ENOMEM is the
 * only failure. */
zb_status zb_vauto_best(int p, int m, const zb_costs *c, double mem_limit,
                        long budget, zb_schedule *out, int *found, zb_err *err);

#endif
