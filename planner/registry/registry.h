/* registry/registry.h - schedule generators. Every generator fills an initialised-
 * by-the-call zb_schedule for p ranks, m microbatches.
 *
 * Hand-made: gpipe, 1f1b, interleaved (v chunks, LOOP placement; needs
 * m % p == 0), zb-h1, zb-h2 (needs m >= 2p), zb-v (v = 2, V placement);
 * v-half and v-min (v = 2, V placement, building blocks).
 * Automatic (auto/auto_loop.h, ilp/ilp_loop.h): zb-auto, zb-1p, zb-2p, zb-auto-v.
 * An unmet condition is ZB_EINPUT with a message naming it, never a wrong
 * schedule.
 */
#ifndef ZB_SCHEDULES_H
#define ZB_SCHEDULES_H

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

/* Build schedule `name` (see list above). rep may be NULL. */
zb_status zb_schedule_make(const char *name, const zb_sched_params *prm,
                           zb_schedule *out, zb_sched_report *rep,
                           zb_err *err);

/* NULL-terminated list of the planner's schedule names, in display order. */
const char *const *zb_schedule_names(void);
/* NULL-terminated list of the V building-block schedules, "v-half" and
 * "v-min" (schedules/vblock.h): zb_schedule_make and `zbplan sim` take them,
 * the plan search does not list them (zb-auto-v tries their orders). */
const char *const *zb_schedule_block_names(void);
/* Chunks per rank the named schedule needs given prm->v (1, v or 2). */
int zb_schedule_chunks(const char *name, int v);
/* True if the schedule splits B and W. */
bool zb_schedule_splits_bw(const char *name);

/* The generators (also reachable through zb_schedule_make). */
zb_status zb_sched_gpipe(int p, int m, zb_schedule *out, zb_err *err);
zb_status zb_sched_1f1b(int p, int m, zb_schedule *out, zb_err *err);
zb_status zb_sched_interleaved(int p, int m, int v, zb_schedule *out,
                               zb_err *err);
zb_status zb_sched_zbh1(int p, int m, zb_schedule *out, zb_err *err);
zb_status zb_sched_zbh2(int p, int m, zb_schedule *out, zb_err *err);
zb_status zb_sched_zbv(int p, int m, zb_schedule *out, zb_err *err);
/* V-Half and V-Min (Qi et al. 2024, building blocks, schedules/vblock.h): V
 * placement, split B/W, about 1/2 and 1/3 of 1F1B's activation memory. */
zb_status zb_sched_vhalf(int p, int m, zb_schedule *out, zb_err *err);
zb_status zb_sched_vmin(int p, int m, zb_schedule *out, zb_err *err);

#endif
