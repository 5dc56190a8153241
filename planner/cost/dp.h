/* dp.h - how much of a rank's data-parallel gradient reduction shows
 * in the step (docs/cost-model.md, "DP overlap").
 *
 * Without training.dp_overlap the reduction starts after the rank's last
 * pass and all of it shows (what outlasts the other ranks' passes: the
 * search takes the max over ranks). With it, as Megatron-LM's
 * --overlap-grad-reduce and --overlap-param-gather do: gradients are
 * reduced in buckets (one per layer here, plus the embedding's and the
 * head's) as soon as the last microbatch's backward has produced them, so
 * the reduction runs under that backward and only what outlasts it shows,
 * at least the bucket produced last. With zero1 the reduction is a
 * reduce-scatter (half of a ring all-reduce's time) and the parameter
 * all-gather (the other half) runs under the next step's first forward,
 * whose start it delays by what outlasts it: counted with this step.
 */
#ifndef ZB_PLANNER_COST_DP_H
#define ZB_PLANNER_COST_DP_H

#include "common/zb_model.h"

/* ar_s: the rank's all-reduce alone (s); bwd_s: its B + W of one
 * microbatch; fwd_s: its F of one microbatch; buckets >= 1: the gradient
 * buckets it holds. Returns the exposed seconds, 0 <= . <= ar_s. */
double zb_dp_exposed_s(const zb_model *m, double ar_s, double bwd_s,
                       double fwd_s, int buckets);

#endif
