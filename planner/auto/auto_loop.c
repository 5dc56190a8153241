/* auto_loop.c - zb_auto_heuristic: the automatic zero-bubble schedule for the
 * LOOP placement (v = 1), after the heuristic of Qi et al., "Zero Bubble
 * Pipeline Parallelism" (2023), sec. 3.1: warm up with as many F as memory
 * allows, then prefer B, fill gaps with W, and finish with the remaining W.
 *
 * auto/greedy.h does the scheduling and the scoring; this file only
 * chooses the policies to try. Each is an in-flight F cap per rank r of
 * a (p - r) + b (1F1B and ZB-H1 warm up p - r, ZB-H2 2(p - r) - 1; a = 0 is
 * memory only), a W gap rule, which of a ready B and F goes first, and an
 * optional W rhythm (ZB-H1 runs W_j after B_{j+r}, ZB-H2 after B_{j+2r}).
 * The hand-made ZB-H1 and ZB-H2 orders and the round scheduler's 8 runs
 * (auto/rounds.h, which reach the Zero Bubble authors' ZB-1p/ZB-2p
 * spans) are scored as well; the shortest longest span wins.
 * The 18 policies are a greedy set cover of the best policy on 1176
 * instances (p 2..12, m p..4p, seven cost shapes from uniform to random
 * per-stage costs with communication, limits M_B..3p M_B) out of 648
 * combinations; the best of all 648 is on average 0.003 % better, at most
 * 1.4 %. Cost: up to 18 list-scheduler runs and simulations, each
 * O(p m log p) (see zb_greedy_policy_count for large instances).
 */
#include "planner/auto/auto_loop.h"

#include <stdlib.h>

#include "planner/auto/greedy.h"
#include "planner/auto/rounds.h"
#include "planner/schedules/handmade.h"

typedef struct {
    int cap_a, cap_b;  /* cap[r] = cap_a (p - r) + cap_b; cap_a = 0: none */
    double w_gap;
    int f_first;
    int lag_a;         /* w_lag[r] = lag_a r; 0: no rhythm */
} loop_policy;

static const loop_policy policies[] = {
    {3, 0, 0.0, ZB_FIRST_ALTERNATE, 0}, {2, -1, 0.5, ZB_FIRST_FILL, 0},
    {2, -1, 0.0, ZB_FIRST_FILL, 0},     {1, 0, 1.0, ZB_FIRST_FILL, 1},
    {2, 0, 0.0, ZB_FIRST_ALTERNATE, 0}, {3, 0, 0.5, ZB_FIRST_B, 0},
    {1, -1, 0.5, ZB_FIRST_B, 0},        {2, 0, 0.5, ZB_FIRST_FILL, 0},
    {1, 0, 0.5, ZB_FIRST_FILL, 0},      {2, -1, 1.0, ZB_FIRST_FILL, 0},
    {2, -1, 1.0, ZB_FIRST_FILL, 2},     {1, 0, 0.0, ZB_FIRST_FILL, 0},
    {1, 1, 0.5, ZB_FIRST_FILL, 1},      {1, 2, 0.5, ZB_FIRST_ALTERNATE, 2},
    {1, 0, 1.0, ZB_FIRST_FILL, 0},      {2, -1, 0.5, ZB_FIRST_B, 0},
    {2, -1, 0.5, ZB_FIRST_FILL, 1},     {2, -1, 0.5, ZB_FIRST_FILL, 2},
};

#define N_POL (int)(sizeof policies / sizeof policies[0])

/* Large instances try only the first policies (the table is in order of
 * usefulness, zb_greedy_policy_count): at most 300000 passes in all, at least 8
 * policies. p = 32, m = 256 gets 12 (mean loss on the sweep above
 * 0.008 % instead of 0.003 %); up to 16666 passes try all 18. */
#define MIN_POL 8

zb_status zb_auto_heuristic(int p, int m, const zb_costs *c, double mem_limit,
                            zb_schedule *out, zb_err *err) {
    if (p < 1 || m < 1)
        return zb_fail(err, ZB_EINPUT, "zb-auto: needs p >= 1 and m >= 1 "
                       "(got p=%d m=%d)", p, m);
    /* per policy: cap[p] then lag[p] */
    int *ints = zb_calloc((size_t)N_POL * 2 * (size_t)p, sizeof(int), err);
    if (!ints) return ZB_ENOMEM;
    zb_greedy_policy pol[N_POL];
    for (int i = 0; i < N_POL; i++) {
        const loop_policy *lp = &policies[i];
        int *cap = ints + (size_t)i * 2 * p, *lag = cap + p;
        for (int r = 0; r < p; r++) {
            cap[r] = lp->cap_a * (p - r) + lp->cap_b;
            lag[r] = lp->lag_a * r;
        }
        pol[i] = (zb_greedy_policy){.cap = lp->cap_a ? cap : NULL,
                                    .w_gap = lp->w_gap,
                                    .reserve_all = 1,
                                    .f_first = lp->f_first,
                                    .w_lag = lp->lag_a ? lag : NULL};
    }
    /* ZB-H1 and ZB-H2 compete too: where they fit the limit, zb-auto is
     * never worse than them (the greedy alone can trail them by a few
     * tenths of a percent when transfers take time). */
    zb_schedule seeds[2 + ZB_ROUNDS_MAX];
    zb_err ignored;
    int nseeds = 0;
    if (zb_sched_zbh1(p, m, &seeds[nseeds], &ignored) == ZB_OK) nseeds++;
    if (zb_sched_zbh2(p, m, &seeds[nseeds], &ignored) == ZB_OK) nseeds++;
    /* the round scheduler's runs (auto/rounds.h) compete as well */
    int nr = 0;
    zb_status rst = zb_greedy_check(p, m, 1, ZB_PLACE_LOOP, c, mem_limit,
                                    "zb-auto", err);
    if (rst == ZB_OK)
        rst = zb_rounds_seeds(p, m, c, mem_limit, seeds + nseeds, &nr, err);
    if (rst == ZB_ENOMEM) {
        for (int i = 0; i < nseeds; i++) zb_schedule_free(&seeds[i]);
        free(ints);
        return rst;
    }
    nseeds += nr;
    zb_status st = zb_greedy_search("zb-auto", p, m, 1, ZB_PLACE_LOOP, c,
                                    mem_limit, pol, zb_greedy_policy_count(3L * p * m, N_POL, MIN_POL), seeds,
                                    nseeds, out, err);
    for (int i = 0; i < nseeds; i++) zb_schedule_free(&seeds[i]);
    free(ints);
    return st;
}
