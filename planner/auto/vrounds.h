/* vrounds.h - the round scheduler behind zb-auto-v (V placement,
 * v = 2; internal to the planner), after the idea of the ZB-V heuristic of
 * Qi et al., "Zero Bubble Pipeline Parallelism" (2023, sec. 6).
 *
 * Chunk 0 of rank r is virtual stage r, chunk 1 is 2p-1-r. Timing every
 * pass as it places it (per-stage costs, transfers, memory), it builds:
 *   warm-up    chunk-0 F everywhere; from the last rank up, rank r runs
 *              chunk-0 F (on ranks 0..r together) while they end before its
 *              chunk-1 input arrives and memory keeps room for the chunk-1
 *              F they will need; then its chunk-1 F; then ranks catch up on
 *              F so that none runs fewer F than the rank before;
 *   rounds     each round one B per rank, then at most one F per rank. The
 *              B: chunk 1 first for a microbatch (its backward starts
 *              there); chunk 0 once its input from the next rank is placed.
 *              The F: chunk 1 when its input is placed, else chunk 0. The
 *              cool-down is the same rule: a B whose input is there goes
 *              before owed W, which run only where they fit whole before
 *              the next input, where memory needs them, or where the wait
 *              would exceed what the rank may still idle (the worst rank's
 *              bubble minus its own; fill_b / fill_f also fill those gaps
 *              before chunk-1 B / any F);
 *   tail       the remaining W.
 * A second run may idle each rank up to the bubble the first run left on
 * the worst rank ("approved" idle, zb_vrounds_seeds tries it). A run that
 * cannot keep the memory limit or finds an input unplaced fails
 * (ZB_EINFEASIBLE); the simulator scores the rest.
 */
#ifndef ZB_AUTO_VROUNDS_H
#define ZB_AUTO_VROUNDS_H

#include <stdbool.h>

#include "common/zb_schedule.h"
#include "common/zb_sim.h"

typedef struct {
    bool fill_b, fill_f;
    bool warm_main;          /* warm-up catch-up also while a rank has run
                                no more chunk-1 F than the rank before (the
                                authors' main branch); else only while it
                                has run fewer F in all */
    const double *approved;  /* [p] idle each rank was left, or NULL */
} zb_vrounds_policy;

/* One run; out is initialised by the call (name "zb-auto-v"); bubble_out
 * ([p], may be NULL) gets each rank's idle time inside its span. */
zb_status zb_vrounds_run(int p, int m, const zb_costs *c, double mem_limit,
                         const zb_vrounds_policy *pol, zb_schedule *out,
                         double *bubble_out, zb_err *err);

/* Every switch combination, each also rerun with its own idle as the
 * approved idle (ZB_VROUNDS_MAX runs at most); failed runs are left out.
 * The combinations run in parallel (planner/par.h); seeds come in the
 * order of one loop over them. The caller frees seeds[0..*n-1]. */
#define ZB_VROUNDS_MAX 16
zb_status zb_vrounds_seeds(int p, int m, const zb_costs *c, double mem_limit,
                           zb_schedule *seeds, int *n, zb_err *err);

#endif
