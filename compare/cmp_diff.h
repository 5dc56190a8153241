/* cmp_diff.h - zbreport --diff A.yaml B.yaml: what differs between two
 * plans (zbplan's plan.yaml) and their predictions.
 *
 * Both files are first read as plans (zb_plan_read: a file that is not a
 * valid plan is its one-line error). Then their YAML trees are compared in
 * A's order, one line per difference, a dotted path and both values:
 *   parallel.pp: 2 -> 4
 *   prediction.step_s: 0.0736 -> 0.0899 (+22.2%)
 *   schedule.ranks[1]: 16 -> 16 actions, first difference at 2: F2 -> BW0
 *   model.kv_heads: (absent) -> 4
 * Numbers that differ show their relative change; a list of actions (the
 * schedule's ranks) shows its lengths and first difference; a list of a
 * different length says so and compares the common items. The header
 * names both files with their content hashes (zb_plan_file_hash), the last
 * line counts the differences ("no differences" for equal trees). */
#ifndef ZB_CMP_DIFF_H
#define ZB_CMP_DIFF_H

#include <stdio.h>

#include "common/zb_error.h"

/* Print the comparison of plans a and b to out; *n_diff = differences.
 * ZB_EINPUT / ZB_EIO as zb_plan_read reports a bad or unreadable plan. */
zb_status zb_cmp_diff(const char *a, const char *b, FILE *out, int *n_diff,
                      zb_err *err);

#endif
