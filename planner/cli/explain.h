/* explain.h - why this plan (zbplan's output, --explain): one candidate's
 * predicted step time and memory taken apart, and why the winner beat the
 * runner-up. docs/zbplan.md shows the output.
 *
 * Step time (seconds) of candidate c, along its busiest pipeline rank r*
 * (the most pass time per step):
 *   f_s, b_s, w_s   compute of r*'s F, B and W passes over the step (m
 *                   microbatches, every chunk), TP collectives taken out
 *   vocab_s         vocabulary parallelism: r*'s S and T passes, m (t_s +
 *                   t_t) (cost/vocab.h); 0 without it
 *   tp_s            the TP collectives inside those passes that are on the
 *                   critical path (cost/cost.h f_tp_s ...)
 *   bubble_s        pipeline idle of r* with free pipeline transfers:
 *                   (the schedule simulated with t_comm = 0) - r*'s busy
 *   p2p_s           what the transfers add: pipeline_s - that simulation
 *   dp_s, opt_s     exposed DP all-reduce and optimizer (search/search.h)
 *   other_s         step_s - all of the above (rounding; the wall clock
 *                   of another rank than r*)
 * Memory (bytes) per pipeline rank: weights, gradients, optimizer state
 * (zb_static_mem_bytes' three parts), peak activations (simulated), and
 * the workspace margin; their sum is the rank's predicted peak.
 */
#ifndef ZB_EXPLAIN_H
#define ZB_EXPLAIN_H

#include <stdio.h>

#include "common/zb_error.h"
#include "common/zb_model.h"
#include "planner/search/search.h"

#define ZB_EXPLAIN_MAX_PP 64  /* memory rows printed, one per pp rank */

typedef struct {
    int rank;                 /* r*, the busiest pipeline rank */
    double f_s, b_s, w_s, tp_s, bubble_s, p2p_s, dp_s, opt_s, other_s;
    double vocab_s;
    int pp;
    double weights[ZB_EXPLAIN_MAX_PP], grads[ZB_EXPLAIN_MAX_PP],
           optim[ZB_EXPLAIN_MAX_PP], act[ZB_EXPLAIN_MAX_PP];
    double ws;                /* workspace margin per device */
    double staging;           /* transport staging rings per device (GPUs) */
} zb_explain;

/* Take candidate c of a zb_search on model m apart. pp > ZB_EXPLAIN_MAX_PP
 * keeps the memory of the first ZB_EXPLAIN_MAX_PP ranks only. */
zb_status zb_explain_candidate(const zb_model *m, const zb_candidate *c,
                               zb_explain *e, zb_err *err);

/* The breakdown as text: a step-time line and a memory table. */
void zb_explain_print(FILE *out, const zb_candidate *c, const zb_explain *e);

/* One line: why a (ranked first) beat b: the parts of the step that
 * differ most, or the tie-break (memory, then enumeration order). */
void zb_explain_why(FILE *out, const zb_candidate *a, const zb_explain *ea,
                    const zb_candidate *b, const zb_explain *eb);

#endif
