/* zb_auto_vlocal.c - see zb_auto_vlocal.h. */
#include "planner/zb_auto_vlocal.h"

#include <math.h>

/* Sweeps without a strict improvement before the search stops. */
#define PATIENCE 4

typedef struct {
    const zb_costs *c;
    zb_sim_ws *ws;
    double limit, span, end, sum;
    long used, budget;
} vl_state;

/* 2 if s scores better than the best so far (which it then becomes), 1 if
 * equal, 0 if worse or invalid, -1 when out of memory. */
static int better(vl_state *V, const zb_schedule *s) {
    double span, peak;
    zb_err e2;
    zb_status st = zb_simulate_fast(s, V->c, V->ws, &span, &peak, &e2);
    V->used += (long)s->p * 6 * s->m;
    if (st == ZB_ENOMEM) return -1;
    if (st != ZB_OK || peak > V->limit + 1e-9 * fmax(1, fabs(V->limit))) return 0;
    double end = zb_sim_ws_last_end(V->ws), sum = 0;
    const double *re = zb_sim_ws_rank_end(V->ws);
    for (int r = 0; r < s->p; r++) sum += re[r];
    int eq = span == V->span && end == V->end && sum == V->sum;
    if (eq || span < V->span || (span == V->span && (end < V->end ||
                                                     (end == V->end && sum < V->sum)))) {
        V->span = span, V->end = end, V->sum = sum;
        return eq ? 1 : 2;
    }
    return 0;
}

/* May a and b (adjacent, a first) trade places? Not two passes of one kind
 * and chunk (microbatch order), not a pass and the next of its microbatch
 * on the same chunk. */
static int swappable(const zb_action *a, const zb_action *b) {
    if (a->pass == b->pass && a->chunk == b->chunk) return 0;
    return !(a->mb == b->mb && a->chunk == b->chunk);
}

zb_status zb_vlocal(zb_schedule *s, const zb_costs *c, double mem_limit,
                    long budget, zb_err *err) {
    vl_state V = {c, zb_sim_ws_new(), mem_limit, INFINITY, INFINITY, INFINITY, 0, budget};
    if (!V.ws) return zb_fail(err, ZB_ENOMEM, "zb-auto-v: out of memory");
    int r0 = better(&V, s), idle = 0;
    while (r0 >= 0 && idle < PATIENCE && V.used < V.budget) {
        idle++;
        for (int q = 0; q < s->p && r0 >= 0 && V.used < V.budget; q++) {
            int r = s->p - 1 - q;
            for (int i = 0; i + 1 < s->len[r] && V.used < V.budget; i++) {
                zb_action *a = &s->acts[r][i], t = a[0];
                if (!swappable(&a[0], &a[1])) continue;
                a[0] = a[1], a[1] = t;
                r0 = better(&V, s);
                if (r0 < 0) break;
                if (r0 == 2) idle = 0;
                if (r0 == 0) a[1] = a[0], a[0] = t;
            }
        }
    }
    zb_sim_ws_free(V.ws);
    return r0 < 0 ? zb_fail(err, ZB_ENOMEM, "zb-auto-v: out of memory") : ZB_OK;
}
