/* cmp_svg.h - the schedule comparison picture (zbreport -o FILE.svg):
 * on top, per report, a pair of bars: predicted and measured bubble rate
 * (percent, one shared axis); below, the measured timeline of each report
 * (one step of the dp 0 tp 0 ranks, one row per pipeline rank), one panel
 * under another on one shared time axis so that step lengths compare.
 * Written atomically.
 */
#ifndef ZB_CMP_SVG_H
#define ZB_CMP_SVG_H

#include "compare/cmp_report.h"

zb_status zb_cmp_svg_write(const char *path, const zb_cmp_report *reps, int n,
                           zb_err *err);

#endif
