/* auto_v.c - zb_auto_v: the automatic zero-bubble schedule for the V
 * placement (v = 2; chunk 0 of rank r is virtual stage r, chunk 1 is stage
 * 2p-1-r), the shape of ZB-V (Qi et al., "Zero Bubble Pipeline
 * Parallelism", 2023, sec. 6), under a per-rank memory limit.
 *
 * Same list scheduler as zb-auto (auto/greedy.h). On V one rank holds two
 * chunks, so the policies also choose which ready B goes first (the later
 * virtual stage, whose B feeds the backward chain, or the lower microbatch)
 * and how much memory to keep for chunk-1 F passes (reserve_all); F may go
 * before a ready B while fewer than cap F are in flight (FILL) or right
 * after a B (ALTERNATE), which keeps new microbatches flowing when B is the
 * slow pass. The 15 policies are a greedy set cover of the best policy on
 * 700 instances (p 2..8, m p..4p, seven cost shapes, limits 2..3p chunk
 * activations) out of 60 combinations; the best of all 60 is on average
 * 0.03 % better, at most 2.2 %. The hand-made ZB-V order competes too, so
 * where it fits the limit zb-auto-v is never worse than it. Below ZB-V's
 * memory the building blocks are also reordered (V-Min's and V-Half's are
 * then the authors' V-Min and V-Half orders) and, on instances of at most
 * 16384 passes, the winner is improved by a local search (auto/vlocal.h).
 * On instances of at most 1536 passes, at or below ZB-V's memory, the
 * whole search also runs at a few tighter limits (the heuristic is not
 * monotone in the limit) and the winner goes through the deep local
 * search; either replaces it only when strictly shorter, so every order
 * they do not shorten stays as it was. Last, below ZB-V's memory, the
 * authors' own building-block framework (auto/vauto.h) builds its best
 * order over every block; it replaces the winner only when strictly
 * shorter (then polished by the same local searches), so zb-auto-v is
 * never longer than the authors' v_auto_schedule at the same limit. On
 * tiny instances (at most 72 passes) a last search from three starts
 * (tiny_search) may shorten the order further, again only when strictly
 * shorter, and so may the whole search one grain looser (looser): there
 * zb-auto-v matches the V ILP's proven optima.
 */
#include "planner/auto/auto_v.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

#include "planner/auto/greedy.h"
#include "planner/auto/vauto.h"
#include "planner/auto/vlocal.h"
#include "planner/auto/vrounds.h"
#include "planner/auto/vshallow.h"
#include "planner/schedules/handmade.h"
#include "planner/schedules/vblock_search.h"

typedef struct {
    int f_first, cap_2p;   /* cap_2p: FILL's cap is 2p (else p) */
    double w_gap;
    int b_late_first, reserve_all;
} v_policy;

static const v_policy policies[] = {
    {ZB_FIRST_FILL, 1, 1.0, 1, 0},      {ZB_FIRST_ALTERNATE, 0, 0.0, 0, 0},
    {ZB_FIRST_ALTERNATE, 0, 0.0, 1, 1}, {ZB_FIRST_B, 0, 1.0, 1, 0},
    {ZB_FIRST_FILL, 1, 0.5, 0, 1},      {ZB_FIRST_FILL, 1, 0.0, 0, 0},
    {ZB_FIRST_FILL, 1, 0.5, 1, 1},      {ZB_FIRST_ALTERNATE, 0, 1.0, 1, 0},
    {ZB_FIRST_B, 0, 0.0, 0, 1},         {ZB_FIRST_FILL, 0, 1.0, 0, 0},
    {ZB_FIRST_FILL, 1, 0.0, 1, 1},      {ZB_FIRST_B, 0, 1.0, 0, 0},
    {ZB_FIRST_FILL, 1, 0.0, 1, 0},      {ZB_FIRST_FILL, 1, 0.0, 0, 1},
    {ZB_FIRST_FILL, 1, 1.0, 0, 1},
};

#define N_POL (int)(sizeof policies / sizeof policies[0])

/* As in auto/auto_loop.c: large instances try only the first (most useful)
 * policies (zb_greedy_policy_count), at least 6. */
#define MIN_POL 6

/* Passes the building-block search may schedule in all (each block costs
 * 6pm): every block up to about p 4, m 32; a few hundred at p 16, m 64. */
#define VBLOCK_BUDGET 3000000L

/* Grid cells the authors' building-block framework (auto/vauto.h) may
 * build: every block up to about p 4, m 32. */
#define VAUTO_BUDGET 4000000L

/* Passes each of the local searches (auto/vlocal.h) may simulate:
 * about 0.1-0.3 s each. */
#define VLOCAL_BUDGET 2000000L

/* The largest instance (6pm passes) whose every building block is
 * reordered and whose winner is searched locally (p 16, m 170); above it
 * only V-Min and V-Half are reordered, so large plans stay fast. */
#define VLOCAL_MAX_PASSES 16384L

/* The largest instance that also tries tighter limits and the deep local
 * search (auto/vlocal.h): each tighter limit costs a whole search. */
#define TIGHTER_MAX_PASSES 1536L
#define TIGHTER_MAX 4

/* Passes the deep local search and its kicks (auto/vlocal.h) may simulate
 * on those instances: about 0.1-0.2 s; half of it leaves p 3, m 3
 * cases 4 % above the ILP's optimum that this reaches. */
#define DEEP_BUDGET 4000000L

/* Tiny instances (at most 72 passes: p 3, m 4 or p 2, m 6), where the V
 * ILP proves its optimum in seconds to minutes: a last search from three
 * starts (tiny_search), blocks of up to 3 passes in its moves, 1 000 000
 * passes simulated per start (about 0.05 s in all at p 3, m 3). */
#define TINY_MAX_PASSES 72L
#define TINY_BLOCK 3
#define TINY_BUDGET 1000000L

/* Below ZB-V's memory (p times a rank's two chunk activations, on some
 * rank): the regime of the authors' V-Half, V-Min and v_auto_schedule,
 * where the blocks are reordered and the winner searched locally. */
static bool tight(int p, const zb_costs *c, double mem_limit) {
    for (int r = 0; r < p; r++)
        if (mem_limit < p * (c->m_b[r] + c->m_b[2 * p - 1 - r])) return true;
    return false;
}

/* The heuristic at one limit: every candidate, the best kept, searched
 * locally (zb_vlocal) when *local and polish (the tighter limits leave
 * that to the deep search of the winner, at a quarter of the cost). */
static zb_status search_at(int p, int m, const zb_costs *c, double mem_limit,
                           bool polish, bool *local, zb_schedule *out, zb_err *err) {
    int *caps = zb_calloc(2 * (size_t)p, sizeof(int), err); /* p, then 2p */
    if (!caps) return ZB_ENOMEM;
    for (int r = 0; r < p; r++) caps[r] = p, caps[p + r] = 2 * p;
    zb_greedy_policy pol[N_POL];
    for (int i = 0; i < N_POL; i++) {
        const v_policy *vp = &policies[i];
        pol[i] = (zb_greedy_policy){
            .cap = vp->f_first == ZB_FIRST_FILL ? caps + (vp->cap_2p ? p : 0) : NULL,
            .w_gap = vp->w_gap,
            .b_late_first = vp->b_late_first,
            .reserve_all = vp->reserve_all,
            .f_first = vp->f_first};
    }
    zb_schedule seeds[2 + ZB_VROUNDS_MAX];
    zb_err ignored;
    int nseeds = zb_sched_zbv(p, m, &seeds[0], &ignored) == ZB_OK;
    /* the round scheduler's runs (auto/vrounds.h) compete as well */
    int nr = 0;
    zb_status st = zb_greedy_check(p, m, 2, ZB_PLACE_V, c, mem_limit,
                                   "zb-auto-v", err);
    int tight_ = st == ZB_OK && tight(p, c, mem_limit); /* c checked */
    *local = tight_ && 6L * p * m <= VLOCAL_MAX_PASSES;
    if (st == ZB_OK)
        st = zb_vrounds_seeds(p, m, c, mem_limit, seeds + nseeds, &nr, err);
    nseeds += nr;
    /* the building blocks' best order within the limit (V-Min, V-Half and
     * the uniform-offset blocks, schedules/vblock.h) */
    int found = 0;
    if (st == ZB_OK)
        st = zb_vblock_best(p, m, c, mem_limit, VBLOCK_BUDGET, *local ? 2 : tight_,
                            &seeds[nseeds], &found, err);
    nseeds += found;
    if (st != ZB_ENOMEM)
        st = zb_greedy_search("zb-auto-v", p, m, 2, ZB_PLACE_V, c, mem_limit,
                              pol, zb_greedy_policy_count(6L * p * m, N_POL, MIN_POL),
                              seeds, nseeds, out, err);
    if (st == ZB_OK && *local && polish) st = zb_vlocal(out, c, mem_limit, VLOCAL_BUDGET, err);
    for (int i = 0; i < nseeds; i++) zb_schedule_free(&seeds[i]);
    free(caps);
    return st;
}

/* At ZB-V's memory itself (tight just below it), where the local search
 * does not run but the tighter limits and the deep search do. */
static bool at_zbv(int p, const zb_costs *c, double mem_limit) {
    double below = mem_limit - 2 * zb_greedy_mem_tol(mem_limit);
    return !tight(p, c, mem_limit) && tight(p, c, below);
}

/* Longest rank span of s with costs c (INFINITY if it does not simulate). */
static double span_of(const zb_schedule *s, const zb_costs *c, zb_sim_ws *ws) {
    double span, peak;
    zb_err ignored;
    return zb_simulate_fast(s, c, ws, &span, &peak, &ignored) == ZB_OK ? span : INFINITY;
}

/* The step between the tighter limits tried: half the smallest chunk
 * activation, the grain in which a rank's memory moves. */
static double limit_step(int p, const zb_costs *c) {
    double mb = INFINITY;
    for (int s = 0; s < 2 * p; s++)
        if (c->m_b[s] > 0 && c->m_b[s] < mb) mb = c->m_b[s];
    return isinf(mb) ? 0 : mb / 2;
}

/* The heuristic is not monotone in the limit: an order it builds for a
 * tighter limit also holds within this one and can be shorter. Try up to
 * TIGHTER_MAX tighter limits, a step apart, down to the least that
 * admits a schedule; keep one only when strictly shorter. */
static zb_status tighter(int p, int m, const zb_costs *c, double mem_limit,
                         zb_schedule *out, zb_err *err) {
    zb_sim_ws *ws = zb_sim_ws_new();
    if (!ws) return zb_fail(err, ZB_ENOMEM, "zb-auto-v: out of memory");
    double best = span_of(out, c, ws), step = limit_step(p, c);
    zb_status st = ZB_OK;
    for (int k = 1; k <= TIGHTER_MAX && step > 0 && st == ZB_OK; k++) {
        double lim = mem_limit - k * step;
        zb_err e2;
        if (zb_greedy_check(p, m, 2, ZB_PLACE_V, c, lim, "zb-auto-v", &e2) != ZB_OK)
            break;
        zb_schedule t;
        bool local;
        st = search_at(p, m, c, lim, false, &local, &t, &e2);
        if (st == ZB_ENOMEM) st = zb_fail(err, st, "%s", e2.msg);
        if (st != ZB_OK) {
            st = st == ZB_ENOMEM ? st : ZB_OK; /* no order at that limit */
            continue;
        }
        double span = span_of(&t, c, ws);
        if (span < best) {
            best = span;
            zb_schedule x = *out;
            *out = t, t = x;
        }
        zb_schedule_free(&t);
    }
    zb_sim_ws_free(ws);
    return st;
}

/* The authors' building-block framework (auto/vauto.h) at this limit: its
 * best order replaces out only when strictly shorter, and is then
 * polished by the local searches (which never lengthen it). Kept apart from
 * the seeds of search_at so that every order it does not beat stays
 * byte for byte as it was (as a seed it won the greedy search and then
 * polished to longer orders than before on some instances). */
static zb_status authors_framework(int p, int m, const zb_costs *c, double mem_limit,
                                   bool deep, zb_schedule *out, zb_err *err) {
    zb_schedule v;
    int found = 0;
    ZB_TRY(zb_vauto_best(p, m, c, mem_limit, VAUTO_BUDGET, &v, &found, err));
    if (!found) return ZB_OK;
    zb_sim_ws *ws = zb_sim_ws_new();
    if (!ws) {
        zb_schedule_free(&v);
        return zb_fail(err, ZB_ENOMEM, "zb-auto-v: out of memory");
    }
    bool shorter = span_of(&v, c, ws) < span_of(out, c, ws);
    zb_sim_ws_free(ws);
    if (!shorter) {
        zb_schedule_free(&v);
        return ZB_OK;
    }
    zb_schedule_free(out);
    *out = v;
    zb_status st = zb_vlocal(out, c, mem_limit, VLOCAL_BUDGET, err);
    if (st == ZB_OK && deep) st = zb_vlocal_deep(out, c, mem_limit, DEEP_BUDGET, err);
    return st;
}

/* The last step on tiny instances: the deep search with blocks of up to
 * TINY_BLOCK passes (auto/vlocal.h) from the winner, from the winner with
 * every W right after its B, and from ZB-V's order with a shallower
 * warm-up fitted to the limit (auto/vshallow.h); the shortest replaces
 * the winner only when strictly shorter. Without it p 2, m 4 and p 3, m 3
 * cases stopped 2.2 %, 12 % and 3.5 % above the ILP's proven optimum
 * (tests/ilp/v_optima.txt): the optimum there is ZB-V with one warm-up F
 * fewer, or an F moved with its B and W, which no pair move reaches. */
static zb_status tiny_search(int p, int m, const zb_costs *c, double mem_limit,
                             zb_schedule *out, zb_err *err) {
    zb_schedule shallow;
    int found = 0;
    ZB_TRY(zb_vshallow_best(p, m, c, mem_limit, &shallow, &found, err));
    zb_status st = zb_vlocal_tiny(out, found ? &shallow : NULL, c, mem_limit, TINY_BUDGET,
                                  TINY_BLOCK, err);
    if (found) zb_schedule_free(&shallow);
    return st;
}

static zb_status auto_v_at(int p, int m, const zb_costs *c, double mem_limit,
                           bool neighbour, zb_schedule *out, zb_err *err);

/* Tiny instances, the mirror of tighter(): the whole search one grain
 * (limit_step) looser, whose order is kept when it still fits this limit
 * and is strictly shorter. The searches are not monotone in the limit, and
 * a looser one can end on an order that needs no more memory than this
 * limit: p 3, m 3 at 1500 (tests/ilp/v_optima_more.txt, instance 19)
 * stopped at 35811.1 while the search at 1750 finds the proven optimum
 * 33852.8 with a peak of 1500. */
static zb_status looser(int p, int m, const zb_costs *c, double mem_limit,
                        zb_schedule *out, zb_err *err) {
    double step = limit_step(p, c);
    if (!(step > 0)) return ZB_OK;
    zb_schedule t;
    zb_err e2;
    zb_status st = auto_v_at(p, m, c, mem_limit + step, false, &t, &e2);
    if (st == ZB_ENOMEM) return zb_fail(err, st, "%s", e2.msg);
    if (st != ZB_OK) return ZB_OK; /* no order there: nothing to compare */
    zb_sim_ws *ws = zb_sim_ws_new();
    if (!ws) {
        zb_schedule_free(&t);
        return zb_fail(err, ZB_ENOMEM, "zb-auto-v: out of memory");
    }
    double span, peak, tol = 1e-9 * fmax(1, fabs(mem_limit));
    zb_err ignored;
    if (zb_simulate_fast(&t, c, ws, &span, &peak, &ignored) == ZB_OK &&
        peak <= mem_limit + tol && span < span_of(out, c, ws)) {
        zb_schedule x = *out;
        *out = t, t = x;
    }
    zb_sim_ws_free(ws);
    zb_schedule_free(&t);
    return ZB_OK;
}

zb_status zb_auto_v(int p, int m, const zb_costs *c, double mem_limit,
                    zb_schedule *out, zb_err *err) {
    if (p < 1 || m < 1)
        return zb_fail(err, ZB_EINPUT, "zb-auto-v: needs p >= 1 and m >= 1 "
                       "(got p=%d m=%d)", p, m);
    return auto_v_at(p, m, c, mem_limit, true, out, err);
}

/* zb_auto_v's steps; neighbour: also the looser search on tiny instances
 * (not inside that search itself) */
static zb_status auto_v_at(int p, int m, const zb_costs *c, double mem_limit,
                           bool neighbour, zb_schedule *out, zb_err *err) {
    bool local = false;
    zb_status st = search_at(p, m, c, mem_limit, true, &local, out, err);
    bool deep = (local || (st == ZB_OK && at_zbv(p, c, mem_limit))) &&
                p > 1 && 6L * p * m <= TIGHTER_MAX_PASSES; /* one rank never idles */
    if (st == ZB_OK && deep)
        st = tighter(p, m, c, mem_limit, out, err);
    if (st == ZB_OK && deep)
        st = zb_vlocal_deep(out, c, mem_limit, DEEP_BUDGET, err);
    if (st == ZB_OK && local)
        st = authors_framework(p, m, c, mem_limit, deep, out, err);
    bool tiny = deep && 6L * p * m <= TINY_MAX_PASSES;
    if (st == ZB_OK && tiny) st = tiny_search(p, m, c, mem_limit, out, err);
    if (st == ZB_OK && tiny && neighbour) st = looser(p, m, c, mem_limit, out, err);
    if (st != ZB_OK) zb_schedule_free(out);
    return st;
}
