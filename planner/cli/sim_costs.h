/* sim_costs.h - `zbplan sim --costs FILE`: per-stage costs from a small CSV
 * file (internal to the planner's sim command).
 *
 * One line per stage, six numbers separated by commas: F, B, W, comm,
 * mem_f, mem_w (the meaning and units of --cost-f, --cost-b, --cost-w,
 * --cost-comm, --mem-f, --mem-w). Blank lines and lines starting with '#'
 * are skipped; every number must be finite, >= 0 and <= 1e30. Bad input is
 * ZB_EINPUT "FILE:LINE: what". Two more numbers, S and T (the vocabulary
 * passes' --cost-s, --cost-t), may end every line; they must then be on
 * every line and the same on each (every rank holds an equal shard).
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
    int ncols;      /* 6, or 8 with S, T */
    double *v;      /* [n * 8]: F, B, W, comm, mem_f, mem_w, S, T (0 when
                       ncols is 6) */
} zb_sim_costs_file;

zb_status zb_sim_costs_read(const char *path, zb_sim_costs_file *f, zb_err *err);
void zb_sim_costs_free(zb_sim_costs_file *f);
/* c is initialised by the call (n = p*v). placement maps rank rows to
 * virtual stages (zb_placement_vstage). */
zb_status zb_sim_costs_apply(const zb_sim_costs_file *f, const char *path,
                             int p, int v, zb_placement pl, zb_costs *c,
                             zb_err *err);

#endif
