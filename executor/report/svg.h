/* svg.h - the pipeline timeline as a picture: two panels, "planned" (the
 * plan's schedule run through zb_simulate with the plan's costs) and
 * "executed" (the last measured step of the dp 0, tp 0 replica), one row per
 * pipeline rank, F/B/W/BW boxes in distinct colours (chunks above 0 in a
 * lighter shade), microbatch numbers where they fit, a legend, and each
 * panel's own time axis (predicted and measured seconds differ in scale).
 * Written atomically. */
#ifndef ZB_SVG_H
#define ZB_SVG_H

#include "common/zb_plan.h"
#include "executor/base.h"

zb_status zb_svg_write(const char *path, const zb_plan *plan,
                       const zb_run_result *res, zb_err *err);

#endif
