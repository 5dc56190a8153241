/* schedules/generator.h - what every schedule generator takes and may
 * report: the parameters (p ranks, m microbatches, v chunks, the per-stage
 * costs and memory limit the automatic ones need, the ILP's solver
 * settings) and the solver report. Generators (schedules/handmade.h,
 * auto/, ilp/) include this; the registry (registry/registry.h) names
 * them, and only it includes them all.
 */
#ifndef ZB_SCHED_GENERATOR_H
#define ZB_SCHED_GENERATOR_H

#include <stdbool.h>

#include "common/zb_schedule.h"
#include "common/zb_sim.h"

typedef enum { ZB_SOLVER_HEURISTIC = 0, ZB_SOLVER_ILP = 1, ZB_SOLVER_AUTO = 2 } zb_solver;

typedef struct {
    int p, m, v;             /* v: chunks per rank (interleaved; zb-v uses 2) */
    const zb_costs *costs;   /* [p*v] per virtual stage; required by the
                                automatic schedules, ignored by others */
    double mem_limit;        /* per rank, same unit as costs->m_b; <= 0 means
                                the schedule's default (zb-1p: p*M_B,
                                zb-2p: 2p*M_B) */
    zb_solver solver;
    double time_limit_s;     /* ILP */
    double mip_gap;          /* ILP relative gap, e.g. 1e-4 */
    int vocab;               /* vocabulary parallelism 0 none, 1 or 2: the
                                registry then adds the S and T passes
                                (auto/vocab_place.h), costs->t_s.. priced */
} zb_sched_params;

/* Optional solver report, filled by the automatic schedules. */
typedef struct {
    char solver[16];         /* "generator", "heuristic", "ilp" */
    double max_span;         /* longest rank span of the returned schedule
                                (zb_sim_result.max_span, the objective) */
    double bound;            /* best lower bound on max_span (ILP), else 0 */
    double gap;              /* (max_span - bound) / max_span, ILP */
    bool optimal;            /* proven optimal for max_span: gap <= the
                                requested mip_gap */
    bool timed_out;
    double solve_s;
} zb_sched_report;

#endif
