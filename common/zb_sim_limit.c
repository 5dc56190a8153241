/* zb_sim_limit.c - zb_sim_check_limit (zb_sim.h): where a rank's memory
 * first goes over a limit. A rank's memory depends only on its own order
 * (F +m_b, B -(m_b - m_w), W -m_w, BW -m_b, S +m_s, T -m_s), so a walk per rank finds the
 * exact action. */
#include <math.h>

#include "common/zb_sim.h"

static double delta(const zb_schedule *s, const zb_costs *c, int r,
                    const zb_action *a) {
    int v = zb_vstage(s, r, a->chunk);
    switch (a->pass) {
    case ZB_F: return c->m_b[v];
    case ZB_B: return c->m_w[v] - c->m_b[v];
    case ZB_W: return -c->m_w[v];
    case ZB_S: return c->m_s;
    case ZB_T: return -c->m_s;
    default: return -c->m_b[v];
    }
}

zb_status zb_sim_check_limit(const zb_schedule *s, const zb_costs *c,
                             double limit, zb_err *err) {
    double tol = 1e-9 * fmax(1, fabs(limit));
    for (int r = 0; r < s->p; r++) {
        double mem = 0;
        for (int i = 0; i < s->len[r]; i++) {
            const zb_action *a = &s->acts[r][i];
            if (a->chunk >= s->v) break; /* zb_simulate reports it */
            mem += delta(s, c, r, a);
            if (mem > limit + tol)
                return zb_fail(err, ZB_EINFEASIBLE, "rank %d: action %d (%s "
                               "mb %d chunk %d): memory %.15g over the limit "
                               "%.15g", r, i, zb_pass_name((zb_pass)a->pass),
                               (int)a->mb, (int)a->chunk, mem, limit);
        }
    }
    return ZB_OK;
}
