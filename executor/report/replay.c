/* replay.c - see replay.h. */
#include "executor/report/replay.h"

#include "common/zb_sim.h"
#include "executor/report/pass_times.h"

/* Measured/planned over the pass kinds vstage s ran (1 when none). */
static double stage_ratio(const zb_plan *plan, const zb_pass_times *pt, int s) {
    double meas = 0, pred = 0;
    for (int k = 0; k < 4; k++) {
        int cell = s * 4 + k;
        if (!pt->count[cell]) continue;
        meas += pt->mean_s[cell];
        pred += zb_pass_times_predicted(plan, s, (zb_pass)k);
    }
    return pred > 0 && meas > 0 ? meas / pred : 1.0;
}

/* Measured time of kind k on vstage s, or the plan's scaled (see .h). */
static double pass_s(const zb_plan *plan, const zb_pass_times *pt, int s,
                     zb_pass k) {
    int cell = s * 4 + k;
    if (pt->count[cell]) return pt->mean_s[cell];
    int bw = s * 4 + ZB_BW;
    double pb = plan->costs.t_b[s], pw = plan->costs.t_w[s];
    if ((k == ZB_B || k == ZB_W) && pt->count[bw] && pb + pw > 0)
        return pt->mean_s[bw] * (k == ZB_B ? pb : pw) / (pb + pw);
    return zb_pass_times_predicted(plan, s, k) * stage_ratio(plan, pt, s);
}

zb_status zb_replay_bubble(const zb_plan *plan, const zb_run_result *res,
                           double *bubble, zb_err *err) {
    *bubble = 0;
    if (res->trace_n == 0 || res->n_steps == 0) return ZB_OK;
    zb_pass_times pt;
    ZB_TRY(zb_pass_times_make(plan, res, &pt, err));
    int n = pt.n;
    zb_costs c;
    zb_status st = zb_costs_init(&c, n, err);
    for (int s = 0; st == ZB_OK && s < n; s++) {
        c.t_f[s] = pass_s(plan, &pt, s, ZB_F);
        c.t_b[s] = pass_s(plan, &pt, s, ZB_B);
        c.t_w[s] = pass_s(plan, &pt, s, ZB_W);
        c.t_comm[s] = plan->costs.t_comm[s];
        c.m_b[s] = plan->costs.m_b[s];
        c.m_w[s] = plan->costs.m_w[s];
    }
    zb_sim_result sim;
    if (st == ZB_OK) {
        st = zb_simulate(&plan->sched, &c, &sim, err);
        if (st == ZB_OK) *bubble = sim.bubble_rate;
        zb_sim_result_free(&sim);
    }
    zb_costs_free(&c);
    zb_pass_times_free(&pt);
    return st;
}
