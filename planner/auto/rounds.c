/* rounds.c - see auto/rounds.h.
 *
 * State: per rank (= stage) the passes placed of each kind (they run in
 * microbatch order), when the rank is free (e), its memory and its idle
 * time so far after its first pass (bub); per (stage, microbatch) the end
 * of F and B. A pass starts when its rank is free and its input is there,
 * so the times are the simulator's for the order built so far.
 */
#include "planner/auto/rounds.h"

#include <stdlib.h>
#include <string.h>

#include "planner/auto/greedy.h"

typedef struct {
    int p, m;
    const zb_costs *c;
    const zb_rounds_policy *pol;
    double limit, tol;
    int *nf, *nb, *nw, *want;   /* [p]; want: this round's F (warm-up: count) */
    double *e, *mem, *bub, *grow; /* [p] */
    double *end_f, *end_b;      /* [p*m] */
    double worst;               /* largest bub over the ranks */
    zb_schedule *out;
} rounds;

static double maxd(double a, double b) { return a > b ? a : b; }

static double comm(const rounds *R, int s) { return R->c->t_comm[s]; }

/* When the input of the next pass of `kind` on stage s is there. */
static double arrival(const rounds *R, int s, int kind) {
    int m = R->m, p = R->p;
    if (kind == ZB_F) {
        int j = R->nf[s];
        return s == 0 ? 0 : R->end_f[(size_t)(s - 1) * m + j] + comm(R, s - 1);
    }
    if (kind == ZB_B) {
        int j = R->nb[s];
        return s == p - 1 ? R->end_f[(size_t)s * m + j]
                          : R->end_b[(size_t)(s + 1) * m + j] + comm(R, s);
    }
    return R->end_b[(size_t)s * m + R->nw[s]];
}

static zb_status put(rounds *R, int s, int kind, zb_err *err) {
    const zb_costs *c = R->c;
    size_t cell = (size_t)s * R->m;
    double t0 = maxd(R->e[s], arrival(R, s, kind)), d;
    int j;
    if (R->nf[s] > 0) { /* idle inside the rank's span */
        R->bub[s] += t0 - R->e[s];
        R->worst = maxd(R->worst, R->bub[s]);
    }
    if (kind == ZB_F) {
        j = R->nf[s]++;
        d = c->t_f[s];
        R->end_f[cell + j] = t0 + d;
        R->mem[s] += c->m_b[s];
    } else if (kind == ZB_B) {
        j = R->nb[s]++;
        d = c->t_b[s];
        R->end_b[cell + j] = t0 + d;
        R->mem[s] += c->m_w[s] - c->m_b[s];
    } else {
        j = R->nw[s]++;
        d = c->t_w[s];
        R->mem[s] -= c->m_w[s];
    }
    R->e[s] = t0 + d;
    if (R->mem[s] > R->limit + R->tol)
        return zb_fail(err, ZB_EINFEASIBLE, "zb-auto rounds: rank %d over the "
                       "memory limit", s);
    return zb_schedule_push(R->out, s, (zb_pass)kind, j, 0, err);
}

/* Run owed W until `need` more fits in memory. */
static zb_status room(rounds *R, int s, double need, zb_err *err) {
    while (R->mem[s] + need > R->limit + R->tol) {
        if (R->nw[s] >= R->nb[s])
            return zb_fail(err, ZB_EINFEASIBLE, "zb-auto rounds: rank %d "
                           "cannot free memory", s);
        ZB_TRY(put(R, s, ZB_W, err));
    }
    return ZB_OK;
}

static double f_need(const rounds *R, int s) { return R->c->m_b[s] + R->grow[s]; }

/* Before a pass whose input arrives at `at`: the owed W that fit whole
 * before it; then one more W if the gap left is longer than the rank may
 * still idle (the worst rank's bubble minus its own), or if fill_gaps. */
static zb_status fill_w(rounds *R, int s, double at, zb_err *err) {
    double tw = R->c->t_w[s];
    while (R->nw[s] < R->nb[s] && R->e[s] + tw <= at + R->tol)
        ZB_TRY(put(R, s, ZB_W, err));
    if (R->nw[s] < R->nb[s] && R->e[s] < at) {
        bool small = at - R->e[s] <= R->worst - R->bub[s];
        if (!small || R->pol->fill_gaps) ZB_TRY(put(R, s, ZB_W, err));
    }
    return ZB_OK;
}

/* Warm-up: F0 everywhere; then, from the last rank up, the F each rank can
 * run before B0 comes back (time, memory, m), strictly fewer on each later
 * rank; those F, then B0 from the last rank up. */
static zb_status warm_up(rounds *R, zb_err *err) {
    const zb_costs *c = R->c;
    int p = R->p, m = R->m;
    for (int s = 0; s < p; s++) {
        ZB_TRY(room(R, s, f_need(R, s), err));
        ZB_TRY(put(R, s, ZB_F, err));
    }
    double back = R->end_f[(size_t)(p - 1) * m] + c->t_b[p - 1]; /* B0 ends */
    R->want[p - 1] = 0;
    for (int s = p - 2; s >= 0; s--) {
        double t = R->e[s], mem = R->mem[s], at = back + comm(R, s);
        int k = 0;
        while (1 + k < m && mem + f_need(R, s) <= R->limit + R->tol) {
            /* input of F_{1+k}: no earlier than rank s-1 can run it */
            double in = s == 0 ? 0 : R->end_f[(size_t)(s - 1) * m] +
                                         (1 + k) * c->t_f[s - 1] + comm(R, s - 1);
            double start = maxd(t, in);
            if (R->pol->fit_first_b ? start + c->t_f[s] > at + R->tol : start >= at)
                break;
            t = start + c->t_f[s];
            mem += c->m_b[s];
            k++;
        }
        R->want[s] = k;
        back = maxd(t, at) + c->t_b[s];
    }
    for (int s = 1; s < p; s++)
        while (R->want[s] > 0 && R->want[s] >= R->want[s - 1] && 1 + R->want[s] < m)
            R->want[s]--;
    for (int s = 0; s < p; s++)
        for (int k = 0; k < R->want[s]; k++) {
            if (s > 0 && R->nf[s - 1] <= R->nf[s]) break; /* input not placed */
            ZB_TRY(room(R, s, f_need(R, s), err));
            ZB_TRY(put(R, s, ZB_F, err));
        }
    for (int s = p - 1; s >= 0; s--) {
        ZB_TRY(room(R, s, maxd(0, c->m_w[s] - c->m_b[s]), err));
        ZB_TRY(put(R, s, ZB_B, err));
    }
    return ZB_OK;
}

/* guard_b: should rank s, more than one F ahead of rank s+1, skip its F
 * this round? The B from s+1 comes back about when s+1 has run its next F
 * and B; skip if the F (with the W memory makes it run first) would end
 * after that, and the idle this costs is within the worst rank's bubble. */
static bool skip_f(const rounds *R, int s) {
    const zb_costs *c = R->c;
    if (!R->pol->guard_b || s + 1 >= R->p || R->nf[s] < R->nf[s + 1] + 2)
        return false;
    double back = R->e[s + 1] + c->t_f[s + 1] + c->t_b[s + 1] + comm(R, s);
    if (R->e[s] >= back) return true;
    double wcost = 0, mem = R->mem[s] + f_need(R, s);
    for (int w = R->nw[s]; mem > R->limit + R->tol && w < R->nb[s]; w++) {
        wcost += c->t_w[s];
        mem -= c->m_w[s];
    }
    if (R->e[s] + c->t_f[s] + wcost <= back) return false;
    return back - R->e[s] <= R->worst - R->bub[s];
}

static zb_status round_i(rounds *R, int i, zb_err *err) {
    const zb_costs *c = R->c;
    int p = R->p, m = R->m;
    for (int s = 0; s < p; s++) R->want[s] = R->nf[s] < m && !skip_f(R, s);
    for (int s = p - 2; s >= 0; s--)
        if (R->want[s + 1] < R->want[s]) R->want[s] = R->want[s + 1];
    for (int s = 0; s < p; s++) {
        if (!R->want[s] || (s > 0 && R->nf[s - 1] <= R->nf[s])) continue;
        ZB_TRY(room(R, s, f_need(R, s), err));
        if (s > 0) ZB_TRY(fill_w(R, s, arrival(R, s, ZB_F), err));
        ZB_TRY(put(R, s, ZB_F, err));
    }
    for (int s = p - 1; s >= 0; s--) {
        if (R->nb[s] != i || R->nf[s] <= i)
            return zb_fail(err, ZB_EINFEASIBLE, "zb-auto rounds: rank %d has "
                           "no F for B %d", s, i);
        ZB_TRY(room(R, s, maxd(0, c->m_w[s] - c->m_b[s]), err));
        if (s + 1 < p) ZB_TRY(fill_w(R, s, arrival(R, s, ZB_B), err));
        if (s == 0 && R->nf[s] == m)
            while (R->nw[s] < R->nb[s]) ZB_TRY(put(R, s, ZB_W, err));
        ZB_TRY(put(R, s, ZB_B, err));
    }
    return ZB_OK;
}

static void rounds_free(rounds *R) {
    free(R->nf);
    free(R->e);
    free(R->end_f);
    R->nf = NULL, R->e = NULL, R->end_f = NULL;
}

static zb_status rounds_init(rounds *R, int p, int m, const zb_costs *c,
                             double limit, const zb_rounds_policy *pol,
                             zb_schedule *out, zb_err *err) {
    memset(R, 0, sizeof *R);
    R->p = p, R->m = m, R->c = c, R->pol = pol, R->out = out;
    R->limit = limit;
    R->tol = zb_greedy_mem_tol(limit);
    R->nf = zb_calloc(4 * (size_t)p, sizeof(int), err);
    R->e = zb_calloc(4 * (size_t)p, sizeof(double), err);
    R->end_f = zb_calloc(2 * (size_t)p * (size_t)m, sizeof(double), err);
    if (!R->nf || !R->e || !R->end_f) {
        rounds_free(R);
        return ZB_ENOMEM;
    }
    R->nb = R->nf + p, R->nw = R->nb + p, R->want = R->nw + p;
    R->mem = R->e + p, R->bub = R->mem + p, R->grow = R->bub + p;
    R->end_b = R->end_f + (size_t)p * m;
    for (int s = 0; s < p; s++) R->grow[s] = maxd(0, c->m_w[s] - c->m_b[s]);
    return ZB_OK;
}

zb_status zb_rounds_run(int p, int m, const zb_costs *c, double mem_limit,
                        const zb_rounds_policy *pol, zb_schedule *out,
                        zb_err *err) {
    memset(out, 0, sizeof *out);
    ZB_TRY(zb_schedule_init(out, "zb-auto", p, m, 1, ZB_PLACE_LOOP, 3 * m, err));
    rounds R = {0};
    zb_status st = rounds_init(&R, p, m, c, mem_limit, pol, out, err);
    if (st == ZB_OK) st = warm_up(&R, err);
    for (int i = 1; i < m && st == ZB_OK; i++) st = round_i(&R, i, err);
    for (int s = 0; s < p && st == ZB_OK; s++)
        while (R.nw[s] < m && st == ZB_OK) st = put(&R, s, ZB_W, err);
    for (int s = 0; s < p && st == ZB_OK; s++)
        if (R.nf[s] != m || R.nb[s] != m)
            st = zb_fail(err, ZB_EINFEASIBLE, "zb-auto rounds: rank %d ran %d "
                         "F and %d B of %d", s, R.nf[s], R.nb[s], m);
    rounds_free(&R);
    if (st != ZB_OK) zb_schedule_free(out);
    return st;
}

zb_status zb_rounds_seeds(int p, int m, const zb_costs *c, double mem_limit,
                          zb_schedule *seeds, int *n, zb_err *err) {
    *n = 0;
    for (int k = 0; k < ZB_ROUNDS_MAX; k++) {
        zb_rounds_policy pol = {k & 1, (k >> 1) & 1, (k >> 2) & 1};
        zb_err e2;
        zb_status st = zb_rounds_run(p, m, c, mem_limit, &pol, &seeds[*n], &e2);
        if (st == ZB_OK) (*n)++;
        else if (st == ZB_ENOMEM) {
            for (int i = 0; i < *n; i++) zb_schedule_free(&seeds[i]);
            *n = 0;
            return zb_fail(err, st, "%s", e2.msg);
        }
    }
    return ZB_OK;
}
