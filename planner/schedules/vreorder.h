/* schedules/vreorder.h - a building block's order (schedules/vblock.h)
 * reordered in the unit-time model: what V-Half and V-Min are made of.
 */
#ifndef ZB_SCHED_VREORDER_H
#define ZB_SCHED_VREORDER_H

#include "common/zb_schedule.h"

/* Block t's order reordered in the unit model (schedules/vreorder.c): passes
 * pulled into earlier free slots within the largest rank's unit peak, the
 * warm-up with the W placed, the cool-down with and without them, then W
 * per chunk into the free slots. out is initialised by the call. */
zb_status zb_vreorder(int p, int m, const int (*t)[4], const char *name,
                      zb_schedule *out, zb_err *err);

#endif
