/* pass_times.h - measured time of each pass kind on each virtual stage,
 * beside the plan's cost inputs (t_f, t_b, t_w; BW = t_b + t_w). This is
 * what calibrates the cost model: a ratio far from 1 names the pass and
 * stage the model gets wrong.
 *
 * Measured = mean duration over the traced steps (zb_run_result's last
 * trace_n steps, the first step of the run left out when later ones are
 * kept: it pays for first-touch page faults) and over the dp x tp ranks of
 * the stage's pipeline rank. A pass kind the schedule never runs on a stage
 * has count 0.
 */
#ifndef ZB_PASS_TIMES_H
#define ZB_PASS_TIMES_H

#include "common/zb_plan.h"
#include "executor/base.h"

typedef struct {
    int n;              /* virtual stages, pp * v */
    double *mean_s;     /* [n * 4] by (vstage, zb_pass) */
    int *count;         /* [n * 4] */
    /* vocabulary parallelism: the S and T passes of each pipeline rank's
     * shard, by (pp rank, S = 0 / T = 1); NULL without it */
    int pp;
    double *vocab_mean_s; /* [pp * 2] */
    int *vocab_count;     /* [pp * 2] */
} zb_pass_times;

zb_status zb_pass_times_make(const zb_plan *plan, const zb_run_result *res,
                             zb_pass_times *out, zb_err *err);
void zb_pass_times_free(zb_pass_times *pt);

/* The plan's predicted time of pass k on vstage s (k = ZB_S or ZB_T: of
 * one rank's shard, the same on every rank). */
double zb_pass_times_predicted(const zb_plan *plan, int s, zb_pass k);

#endif
