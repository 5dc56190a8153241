/* sched_fixture.h - what the lowering tests share (test_lower_drain.c,
 * test_lower_order.c, test_staging.c): any registry schedule built by its
 * heuristic on uneven costs, so that the automatic schedules reorder. */
#ifndef ZB_TEST_SCHED_FIXTURE_H
#define ZB_TEST_SCHED_FIXTURE_H

#include <check.h>
#include <stdbool.h>

#include "common/zb_sim.h"
#include "planner/registry/registry.h"

/* Uneven costs over n virtual stages: later stages slower, W cheaper than
 * B, memory per stage. */
static void make_costs(zb_costs *c, int n) {
    zb_err err;
    ck_assert_int_eq(zb_costs_init(c, n, &err), ZB_OK);
    for (int s = 0; s < n; s++) {
        c->t_f[s] = 1.0 + 0.13 * (s % 5);
        c->t_b[s] = 1.9 + 0.07 * (s % 3);
        c->t_w[s] = 0.8 + 0.11 * (s % 4);
        c->t_comm[s] = 0.05;
        c->m_b[s] = 1.0;
        c->m_w[s] = 0.5;
    }
}

/* Builds schedule `name` (heuristic solver) into *s; false when its
 * conditions are unmet (e.g. m % p), any other failure fails the test. */
static bool make_sched(const char *name, int p, int m, int v, zb_schedule *s) {
    zb_sched_params prm = {.p = p, .m = m, .v = v, .solver = ZB_SOLVER_HEURISTIC,
                           .time_limit_s = 1, .mip_gap = 1e-4};
    zb_costs c;
    make_costs(&c, p * zb_schedule_chunks(name, v));
    prm.costs = &c;
    zb_err err;
    zb_status st = zb_schedule_make(name, &prm, s, NULL, &err);
    zb_costs_free(&c);
    if (st == ZB_EINPUT) return false;
    ck_assert_msg(st == ZB_OK, "%s p=%d m=%d: %s", name, p, m, err.msg);
    return true;
}

#endif
