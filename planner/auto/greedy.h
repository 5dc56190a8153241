/* greedy.h - the list scheduler behind zb_auto_heuristic and
 * zb_auto_v (internal to the planner).
 *
 * It simulates time while it decides: ranks are visited in order of the time
 * they next want to decide; a rank that is free picks one pass by a fixed
 * policy (B whose input has arrived, else F if the in-flight cap and the
 * memory limit allow, else W to fill a gap or free memory, else wait for the
 * next arrival). Passes of one kind on one virtual stage keep microbatch
 * order. The result is a complete split-B/W schedule that never exceeds the
 * memory limit (F is admitted only if its activations fit, with room kept
 * for a B that raises memory and, on the V placement, for chunk-1 F passes,
 * see reserve_all; a B that does not fit waits for a W to free memory).
 *
 * zb_greedy_search runs the scheduler once per policy, scores each result
 * (and each seed schedule it is given) with zb_simulate_fast (the longest
 * rank span, which the bubble rate measures; ties broken by the earlier
 * last end) and keeps the best; a
 * policy whose run stalls is skipped (ZB_ERUNTIME if all do). Costs are
 * checked first: times and memory >= 0 and finite, and the limit must hold
 * what one microbatch needs on a rank (m_b of its stage on LOOP, of both
 * chunks on V, plus m_w - m_b when B raises memory, as under full
 * recompute, where B rebuilds what W needs).
 */
#ifndef ZB_AUTO_GREEDY_H
#define ZB_AUTO_GREEDY_H

#include "common/zb_schedule.h"
#include "common/zb_sim.h"

typedef struct {
    /* Most F passes in flight (F done, B not yet) per rank, [p], before a
     * new microbatch may enter the rank (on V the chunk-1 F of a microbatch
     * the rank holds is never capped); NULL means only the memory limit
     * bounds them. Entries < 1 count as 1. */
    const int *cap;
    /* With no B or F to run, a W is run only if the next input is expected
     * at least w_gap * t_w away (or F is blocked by memory); 0 = always. */
    double w_gap;
    /* With several B (or F) ready on one rank (V placement): 1 = the later
     * virtual stage first, 0 = the lower microbatch first. */
    int b_late_first, f_late_first;
    /* V only: keep memory for the chunk-1 F of every chunk-0 microbatch in
     * flight (1; cannot stall) or of the next one only (0; lets a rank warm
     * up twice as deep, a run that stalls is dropped from the search). */
    int reserve_all;
    /* With a B and an F both ready: ZB_FIRST_B runs the B (it is on the
     * critical path); ZB_FIRST_FILL runs the F while fewer than cap[r] F
     * are in flight (1F1B's steady state when cap = p - r);
     * ZB_FIRST_ALTERNATE runs the F right after a B (one F per B, so new
     * microbatches keep flowing when B is the bottleneck). */
    int f_first;
    /* [p] or NULL: once rank r owes more than w_lag[r] W passes, a W runs
     * before any F (after a ready B). w_lag[r] = r is ZB-H1's rhythm (rank
     * r runs W_j after B_{j+r}), 2r ZB-H2's. */
    const int *w_lag;
} zb_greedy_policy;

enum { ZB_FIRST_B = 0, ZB_FIRST_FILL = 1, ZB_FIRST_ALTERNATE = 2 };

/* Validate costs and limit for p ranks, v chunks, placement pl. what names
 * the caller in messages ("zb-auto", "zb-auto-v"). */
zb_status zb_greedy_check(int p, int m, int v, zb_placement pl,
                          const zb_costs *c, double mem_limit,
                          const char *what, zb_err *err);

/* Best schedule over npol policies and nseeds given schedules (hand-made
 * orders such as ZB-H1; a seed that is fused, of another shape, invalid or
 * over the limit is skipped); out is initialised by the call (name `name`).
 * Calls zb_greedy_check first. */
zb_status zb_greedy_search(const char *name, int p, int m, int v,
                           zb_placement pl, const zb_costs *c,
                           double mem_limit, const zb_greedy_policy *pol,
                           int npol, const zb_schedule *seeds, int nseeds,
                           zb_schedule *out, zb_err *err);

/* How many policies (of a table of npol, most useful first) a search can
 * afford: at most ZB_GREEDY_WORK_BUDGET passes scheduled in all, with
 * `passes` passes per run, but never fewer than min_pol. */
#define ZB_GREEDY_WORK_BUDGET 300000L
static inline int zb_greedy_policy_count(long passes, int npol, int min_pol) {
    long n = ZB_GREEDY_WORK_BUDGET / (passes > 0 ? passes : 1);
    return n >= npol ? npol : n < min_pol ? min_pol : (int)n;
}

/* Memory tolerance used for "within the limit" (relative + absolute). */
static inline double zb_greedy_mem_tol(double limit) {
    return 1e-9 * (limit > 1 ? limit : 1);
}

#endif
