/* vshallow.h - ZB-V's order with a shallower warm-up, fitted to a memory
 * limit (internal to the planner; zb_auto_v's start on tiny instances).
 *
 * Rank r's list is ZB-V's rule (schedules/zbv.c: warm-up 2(p-r)-1 chunk-0
 * F, r x (F1 F0), (p-r) x (F1 B1 W1), then F0 B0 W0 F1 B1 W1 rounds and the
 * cool-down) with d fewer chunk-0 F in its warm-up (at least one), fitted
 * to the limit: walking the list with the rank's memory (F +M_B, B
 * -(M_B - M_W), W -M_W of the pass's stage), an F that would exceed
 * mem_limit waits behind the list's next B whose F has run (moved before
 * the F, its W right after it) until it fits. Below ZB-V's memory such
 * orders are what the V ILP finds on small instances (p 2, m 4: ZB-V with
 * one warm-up F fewer on rank 0).
 *
 * zb_vshallow_best tries d = 0..2p-1, simulates every list that fits
 * (zb_simulate_fast; one that deadlocks or still exceeds the limit is
 * skipped) and puts the shortest longest span in *out (*found 1), or
 * leaves out untouched (*found 0). ZB_ENOMEM is the only failure. */
#ifndef ZB_AUTO_VSHALLOW_H
#define ZB_AUTO_VSHALLOW_H

#include "common/zb_schedule.h"
#include "common/zb_sim.h"

zb_status zb_vshallow_best(int p, int m, const zb_costs *c, double mem_limit,
                           zb_schedule *out, int *found, zb_err *err);

#endif
