/* sim_costs.h - `zbplan sim --costs FILE`: per-stage costs from a small CSV
 * file (internal to the planner's sim command).
 *
 * One line per stage, six numbers separated by commas: F, B, W, comm,
 * mem_f, mem_w (the meaning and units of --cost-f, --cost-b, --cost-w,
 * --cost-comm, --mem-f, --mem-w). Blank lines and lines starting with '#'
 * are skipped; every number must be finite, >= 0 and <= 1e30. Bad input is
 * ZB_EINPUT "FILE:LINE: what".
 *
 * zb_sim_costs_apply: with p rows, row r is pipeline rank r and each of its
 * v chunks gets F/v, B/v, W/v, mem_f/v, mem_w/v (as the uniform options);
 * with p*v rows, row s is virtual stage s, taken as it is. comm is the time
 * of a transfer from the stage (or the rank's chunk) to the next stage.
 */
#ifndef ZB_SIM_COSTS_H
#define ZB_SIM_COSTS_H

#include "common/zb_error.h"
#include "common/zb_sim.h"

typedef struct {
    int n;          /* rows */
    double *v;      /* [n * 6]: F, B, W, comm, mem_f, mem_w */
} zb_sim_costs_file;

zb_status zb_sim_costs_read(const char *path, zb_sim_costs_file *f, zb_err *err);
void zb_sim_costs_free(zb_sim_costs_file *f);
/* c is initialised by the call (n = p*v). placement maps rank rows to
 * virtual stages (zb_placement_vstage). */
zb_status zb_sim_costs_apply(const zb_sim_costs_file *f, const char *path,
                             int p, int v, zb_placement pl, zb_costs *c,
                             zb_err *err);

#endif
