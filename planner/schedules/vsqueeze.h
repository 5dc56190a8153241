/* schedules/vsqueeze.h - a split V schedule squeezed in the unit-time model
 * of the building blocks (schedules/vblock.h): passes pulled into idle
 * slots without raising any rank's unit peak, and the unit-model timing
 * that does it.
 */
#ifndef ZB_SCHED_VSQUEEZE_H
#define ZB_SCHED_VSQUEEZE_H

#include "common/zb_schedule.h"

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

#endif
