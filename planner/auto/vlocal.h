/* vlocal.h - local search over a V schedule's pass order (internal
 * to the planner; used by zb_auto_v at tight memory limits).
 *
 * zb_vlocal improves s in place: it swaps two adjacent passes of a rank
 * (not two of one kind and chunk, not two of one microbatch and chunk),
 * simulates the order with the real costs (zb_simulate_fast) and keeps the
 * swap when the longest rank span gets shorter, or equal with an earlier
 * last end (then a smaller sum of rank ends), or all equal (a sideways
 * move), and the peak stays within mem_limit (same tolerance as the
 * heuristic); orders that deadlock are rejected. Sweeps over every rank
 * until 4 sweeps keep no strict gain or `budget` passes have been
 * simulated. Two such searches run from s: single swaps only, and one
 * that first tries at each place the periodic move (the pair swapped on
 * every repeat of the rank's steady state at once: same kinds, chunks and
 * microbatch distance), which changes a steady state's pattern in one
 * step where single swaps would each lengthen it; the better result is
 * kept, so it is never longer than the single swaps alone. s must be a
 * valid order within the limit. ZB_ENOMEM is the only failure.
 */
#ifndef ZB_AUTO_VLOCAL_H
#define ZB_AUTO_VLOCAL_H

#include "common/zb_schedule.h"
#include "common/zb_sim.h"

zb_status zb_vlocal(zb_schedule *s, const zb_costs *c, double mem_limit,
                    long budget, zb_err *err);

/* The deep search: the periodic moves, single swaps and shift moves (a
 * pass, or a pass and the next, carried 2..8 places later or earlier past
 * passes it may swap with, in one move) under the same rule, from s; then
 * an iterated local search: from the best order, a kick of 1..4 random
 * shift moves (fixed seed: the same result on every run), the deep moves
 * until a sweep brings no strict gain, the result kept when its span is
 * not longer; until `budget` passes have been simulated. s takes the
 * result only when its longest span is strictly shorter (else s is left
 * byte for byte as it was). ZB_ENOMEM is the only failure. */
zb_status zb_vlocal_deep(zb_schedule *s, const zb_costs *c, double mem_limit,
                         long budget, zb_err *err);

/* zb_vlocal_deep with blocks of up to `block` passes (>= 1) in the shift
 * moves and the kicks, where zb_vlocal_deep carries 1 or 2 (and is this
 * with block 2): a block of three moves an F with its B and W, a step of
 * a steady state that pairs cannot reach without first lengthening the
 * order. Same contract. */
zb_status zb_vlocal_deep_blocks(zb_schedule *s, const zb_costs *c, double mem_limit,
                                long budget, int block, zb_err *err);

/* Several starts for tiny instances: zb_vlocal_deep_blocks (each with
 * `budget`) from s, from s with every W moved right after its B (valid
 * and within the limit whenever s is: no pass waits on a W, and memory
 * only falls earlier) and from extra when not NULL (skipped unless it
 * simulates within the limit); s takes the shortest result only when its
 * longest span is strictly shorter than s's. ZB_ENOMEM is the only
 * failure. */
zb_status zb_vlocal_tiny(zb_schedule *s, const zb_schedule *extra, const zb_costs *c,
                         double mem_limit, long budget, int block, zb_err *err);

#endif
