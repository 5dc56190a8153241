/* partition.h - assigning transformer layers, the embedding and the head to
 * virtual stages so the slowest stage is as fast as possible (exact, by
 * dynamic programming over contiguous splits), under a per-rank memory
 * limit; and turning a partition into the simulator's per-stage costs.
 */
#ifndef ZB_PARTITION_H
#define ZB_PARTITION_H

#include "common/zb_plan.h"
#include "common/zb_schedule.h"
#include "common/zb_sim.h"
#include "planner/cost/cost.h"

/* Largest (n + 1) x (layers + 1) table the partitioner fills (about 100
 * MB, O(n L log L) time); beyond it zb_partition is ZB_EINPUT. */
#define ZB_PARTITION_MAX_CELLS (1 << 23)

/* Split ct's model into n = pp*v contiguous virtual stages (vstage order),
 * minimising the largest per-stage F+B+W time; ties broken by the smaller
 * largest memory. Every vstage gets >= 1 layer unless n > layers (error).
 * mem_limit_bytes <= 0: no limit. Writes spans[n]. ZB_EINFEASIBLE if no
 * split fits. */
zb_status zb_partition(const zb_model *m, const zb_cost_table *ct, int n,
                       double mem_limit_bytes, zb_stage_span *spans,
                       zb_err *err);

/* Equal split (layers / n, remainder to the middle stages), for comparison. */
void zb_partition_even(int layers, int n, zb_stage_span *spans);

/* Fill simulator costs c (initialised by the caller with n = pp*v) from
 * spans: t_* = sum of the stage's layer (+ embed/head) pass costs, m_*
 * likewise, t_comm[s] = p2p time between vstage s and s+1, intra- or
 * inter-node as the rank layout of zb_plan.h places their pipeline ranks:
 * pipeline rank r's first device is global rank r*dp*tp, on node
 * (r*dp*tp) / devices_per_node. Same-rank neighbours cost 0 in the
 * simulator anyway (zb_lower_cross). */
void zb_stage_costs(const zb_cost_table *ct, const zb_stage_span *spans,
                    int pp, int v, zb_placement pl, int dp, int tp,
                    int devices_per_node, zb_costs *c);

#endif
