/* svg.h - the pipeline timeline as a picture: two panels, "planned" (the
 * plan's schedule run through zb_simulate with the plan's costs, then the
 * predicted gradient sync and optimizer up to the predicted step time) and
 * "executed" (the last measured step of the dp 0, tp 0 replica: passes,
 * receive waits as red strips, gradient sync and optimizer), one row per
 * pipeline rank, F/B/W/BW boxes in distinct colours (chunks above 0 in a
 * lighter shade), microbatch numbers where they fit, a legend, and one
 * shared time axis with round ticks (zb_ticks.h), so lengths compare. Step
 * time is the table's: the step's wall time to the end of its optimizer
 * update (the drawn step's and the mean after the first step). Written
 * atomically. */
#ifndef ZB_SVG_H
#define ZB_SVG_H

#include "common/zb_plan.h"
#include "executor/base.h"

zb_status zb_svg_write(const char *path, const zb_plan *plan,
                       const zb_run_result *res, zb_err *err);

#endif
