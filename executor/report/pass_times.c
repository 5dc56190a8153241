/* pass_times.c - see pass_times.h. */
#include "executor/report/pass_times.h"

#include <stdlib.h>
#include <string.h>

double zb_pass_times_predicted(const zb_plan *plan, int s, zb_pass k) {
    const zb_costs *c = &plan->costs;
    switch (k) {
    case ZB_F: return c->t_f[s];
    case ZB_B: return c->t_b[s];
    case ZB_W: return c->t_w[s];
    case ZB_S: return c->t_s;
    case ZB_T: return c->t_t;
    default: return c->t_b[s] + c->t_w[s];
    }
}

/* First traced step to use: skip the run's first step if others exist. */
static int first_kept(const zb_run_result *res) {
    return res->trace_n > 1 && res->trace_step[0] == res->first_step ? 1 : 0;
}

zb_status zb_pass_times_make(const zb_plan *plan, const zb_run_result *res,
                             zb_pass_times *out, zb_err *err) {
    memset(out, 0, sizeof *out);
    out->n = plan->pp * plan->v;
    out->mean_s = zb_calloc((size_t)out->n * 4, sizeof(double), err);
    out->count = zb_calloc((size_t)out->n * 4, sizeof(int), err);
    if (plan->vocab_parallel) {
        out->pp = plan->pp;
        out->vocab_mean_s = zb_calloc((size_t)plan->pp * 2, sizeof(double),
                                      err);
        out->vocab_count = zb_calloc((size_t)plan->pp * 2, sizeof(int), err);
    }
    if (!out->mean_s || !out->count ||
        (plan->vocab_parallel && (!out->vocab_mean_s || !out->vocab_count))) {
        zb_pass_times_free(out);
        return ZB_ENOMEM;
    }
    const zb_schedule *s = &plan->sched;
    for (int g = 0; g < res->world; g++) {
        int pr, dr, tr;
        zb_plan_coords(plan, g, &pr, &dr, &tr);
        int na = res->n_acts[g];
        for (int k = first_kept(res); k < res->trace_n; k++) {
            for (int i = 0; i < na && i < s->len[pr]; i++) {
                const zb_action *a = &s->acts[pr][i];
                size_t at = (size_t)k * na + i;
                double t = res->t_end[g][at] - res->t_start[g][at];
                if (a->pass == ZB_S || a->pass == ZB_T) { /* a rank's shard */
                    if (!out->vocab_count) continue;
                    int cell = pr * 2 + (a->pass == ZB_T);
                    out->vocab_mean_s[cell] += t;
                    out->vocab_count[cell]++;
                    continue;
                }
                int cell = zb_vstage(s, pr, a->chunk) * 4 + a->pass;
                out->mean_s[cell] += t;
                out->count[cell]++;
            }
        }
    }
    for (int c = 0; c < out->n * 4; c++)
        if (out->count[c]) out->mean_s[c] /= out->count[c];
    for (int c = 0; out->vocab_count && c < out->pp * 2; c++)
        if (out->vocab_count[c]) out->vocab_mean_s[c] /= out->vocab_count[c];
    return ZB_OK;
}

void zb_pass_times_free(zb_pass_times *pt) {
    free(pt->mean_s);
    free(pt->count);
    free(pt->vocab_mean_s);
    free(pt->vocab_count);
    memset(pt, 0, sizeof *pt);
}
