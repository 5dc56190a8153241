/* zb_sim.h - event-driven pipeline simulator.
 *
 * Runs any zb_schedule against per-virtual-stage costs: each rank executes
 * its list in order; a pass starts when the rank is free and its dependency
 * has ended (+ t_comm when the dependency crosses ranks, zb_lower.h). It
 * rejects schedules that miss or repeat a pass, use a chunk/microbatch out of
 * range, or deadlock (a dependency that can never be met, such as W before
 * its B on the same rank), naming the rank and the action.
 *
 * Memory per rank: F adds m_b[s], B releases m_b[s]-m_w[s], W releases
 * m_w[s], BW releases m_b[s]. Peak = running maximum (starting from 0);
 * m_w may exceed m_b (full recompute: B rebuilds what W needs), then B
 * raises memory.
 * Overlapped F&B steps (zb_schedule.h, ZB_ACT_OVERLAP): the step starts
 * when the rank is free and both passes' dependencies have ended; both
 * passes end at start + zb_costs_fb_time; memory changes as F then B
 * (so F's activations count before B releases its own); the step adds its
 * time, not the two passes', to busy. Fault: an overlap flag on anything
 * but an F followed by a B or BW on the same rank.
 * Vocabulary passes S and T (zb_schedule.h): dependencies and memory as
 * zb_costs says; they count in busy like any pass.
 * Bubble: per rank, span = last end - first start, busy = sum of its pass
 * (and overlapped step) times, bubble[r] = (span - busy) / span. Overall bubble_rate is taken over
 * the longest span: (max_span - mean busy) / max_span, which is the Zero
 * Bubble paper's (span - m(T_F+T_B+T_W)) / span when stages are equal.
 */
#ifndef ZB_SIM_H
#define ZB_SIM_H

#include <stdbool.h>

#include "common/zb_error.h"
#include "common/zb_schedule.h"

typedef struct {
    int n;               /* virtual stages = p * v */
    double *t_f, *t_b, *t_w;  /* [n] seconds per pass (BW = t_b + t_w) */
    double *t_comm;      /* [n] seconds to move one activation (or gradient)
                            between virtual stage s and s+1; t_comm[n-1]
                            unused */
    double *m_b, *m_w;   /* [n] bytes (any unit): kept after F / after B */
    double fb_overlap;   /* share in [0, 1] of the shorter pass of an
                            overlapped F&B step hidden under the longer:
                            0 (the default, what a backend that runs the
                            two passes one after the other does) to 1 */
    /* Vocabulary passes (zb_schedule.h; used only when the schedule's
     * vocab is 1 or 2), the same on every rank. S(mb) on rank r starts
     * after F(mb) of the last virtual stage ends, plus t_bcast unless r
     * owns that stage; T(mb) after every rank's S(mb) ended, plus t_c1;
     * B/BW(mb) of the last virtual stage also after every rank's T(mb),
     * plus t_c2 (variant 1), or S(mb), plus t_c1 (variant 2). S adds m_s
     * to its rank's memory, T releases it. */
    double t_s, t_t;     /* seconds per S / T pass (one rank's shard) */
    double t_bcast;      /* X(mb) [b*s, h] to every pipeline rank */
    double t_c1, t_c2;   /* the all-reduces C1 (after S), C2 (after T) */
    double m_s;          /* bytes held from S to T on each rank */
} zb_costs;

/* Time of an overlapped F&B step: F of virtual stage vs_f and b_pass (ZB_B
 * or ZB_BW) of virtual stage vs_b, a = t_f[vs_f], b = t_b[vs_b] (+ t_w[vs_b]
 * for BW): max(a, b) + (1 - fb_overlap) * min(a, b). fb_overlap 0 gives
 * a + b, 1 gives max(a, b) (docs/schedules.md, "Overlapped F&B steps"). */
double zb_costs_fb_time(const zb_costs *c, int vs_f, int vs_b, int b_pass);

/* Allocate [n] arrays, zeroed. */
zb_status zb_costs_init(zb_costs *c, int n, zb_err *err);
void zb_costs_free(zb_costs *c);
/* Uniform costs for every virtual stage. */
zb_status zb_costs_uniform(zb_costs *c, int n, double tf, double tb, double tw,
                           double tcomm, double mb, double mw, zb_err *err);

typedef struct {
    int p;
    double *start, *end;  /* per action, flat: rank r's action i is at
                             index off[r] + i */
    int *off;             /* [p+1] */
    double max_span;      /* longest rank span (last end - first start on
                             one rank): the pipeline's step-time objective,
                             the one the bubble rate uses */
    double last_end;      /* latest end over all ranks, counted from time 0
                             (the first pass of rank 0 starts at 0); >=
                             max_span; wall-clock of one isolated step */
    double bubble_rate;   /* overall, see above */
    double *span, *busy, *bubble, *peak_mem; /* [p] */
} zb_sim_result;

/* Simulate. res is initialised by the call (free with zb_sim_result_free,
 * also after an error). Invalid schedules: ZB_EINFEASIBLE with a message
 * such as "rank 2: action 7 (B mb 3 chunk 0): deadlock, waits for B mb 3 on
 * virtual stage 3". */
zb_status zb_simulate(const zb_schedule *s, const zb_costs *c,
                      zb_sim_result *res, zb_err *err);
void zb_sim_result_free(zb_sim_result *res);

/* ZB_EINFEASIBLE at the first action (in rank order) after which a rank's
 * memory exceeds limit (same rule and unit as peak_mem), naming the rank
 * and the action: "rank 1: action 4 (F mb 3 chunk 0): memory 5 over the
 * limit 4"; ZB_OK when every rank stays within it. */
zb_status zb_sim_check_limit(const zb_schedule *s, const zb_costs *c,
                             double limit, zb_err *err);

/* Only the objective and validity, no per-action output and no allocation
 * beyond a reusable workspace: for search loops (zb-auto, plan search).
 * Returns ZB_OK and sets *max_span (longest rank span, as zb_sim_result)
 * and *max_peak (max over ranks), either may be NULL, or an error like
 * zb_simulate. ws may be NULL (allocates internally). */
typedef struct zb_sim_ws zb_sim_ws;
zb_sim_ws *zb_sim_ws_new(void);
void zb_sim_ws_free(zb_sim_ws *ws);
zb_status zb_simulate_fast(const zb_schedule *s, const zb_costs *c,
                           zb_sim_ws *ws, double *max_span, double *max_peak,
                           zb_err *err);
/* End time of each rank's last pass in the last successful
 * zb_simulate_fast with this workspace ([p], owned by ws), and their
 * maximum (zb_sim_result.last_end). */
const double *zb_sim_ws_rank_end(const zb_sim_ws *ws);
double zb_sim_ws_last_end(const zb_sim_ws *ws);

#endif
