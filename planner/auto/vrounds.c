/* vrounds.c - see auto/vrounds.h.
 *
 * State: per virtual stage the passes placed of each kind (microbatch
 * order) and the end of every F and B (INFINITY until placed); per rank
 * when it is free (e), its memory, its idle time after its first pass
 * (bub) and a queue of owed W (virtual stages, in B order, so W runs in the
 * order its B ran). Times are the simulator's for the order built so far.
 */
#include "planner/auto/vrounds.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "planner/par.h"
#include "planner/auto/greedy.h"

typedef struct {
    int p, m, n;
    const zb_costs *c;
    const zb_vrounds_policy *pol;
    double limit, tol, approved_max;
    int *nf, *nb, *nw;          /* [n] */
    double *end_f, *end_b;      /* [n*m] */
    double *e, *mem, *bub;      /* [p] */
    int *wq, *qh, *qt;          /* [p*2m] owed W per rank; head, tail [p] */
    double worst;
    zb_schedule *out;
} vr;

static double maxd(double a, double b) { return a > b ? a : b; }

static int vs(const vr *V, int r, int k) { return k == 0 ? r : 2 * V->p - 1 - r; }
static int owner(const vr *V, int s) { return s < V->p ? s : 2 * V->p - 1 - s; }

/* Transfer time from stage a to its neighbour b (0 on the same rank). */
static double hop(const vr *V, int a, int b) {
    return owner(V, a) == owner(V, b) ? 0 : V->c->t_comm[a < b ? a : b];
}

/* When the next F (kind ZB_F) or B of stage s can have its input;
 * INFINITY if its producer is not placed (or all m are placed). */
static double input(const vr *V, int s, int kind) {
    int m = V->m;
    if (kind == ZB_F) {
        int j = V->nf[s];
        if (j >= m) return INFINITY;
        return s == 0 ? 0 : V->end_f[(size_t)(s - 1) * m + j] + hop(V, s - 1, s);
    }
    int j = V->nb[s];
    if (j >= m || j >= V->nf[s]) return INFINITY;
    if (s == V->n - 1) return V->end_f[(size_t)s * m + j];
    return V->end_b[(size_t)(s + 1) * m + j] + hop(V, s + 1, s);
}

static zb_status fail(zb_err *err, const char *what, int r) {
    return zb_fail(err, ZB_EINFEASIBLE, "zb-auto-v rounds: rank %d: %s", r, what);
}

/* Place the next pass of `kind` of chunk k on rank r (W: the oldest owed). */
static zb_status put(vr *V, int r, int kind, int k, zb_err *err) {
    const zb_costs *c = V->c;
    int m = V->m, s, j;
    double at, d;
    if (kind == ZB_W) {
        if (V->qh[r] == V->qt[r]) return fail(err, "no W owed", r);
        s = V->wq[(size_t)r * 2 * m + V->qh[r]++];
        at = 0; /* its B ran earlier on this rank */
    } else {
        s = vs(V, r, k);
        at = input(V, s, kind);
        if (isinf(at)) return fail(err, "input not placed", r);
    }
    double t0 = maxd(V->e[r], at);
    if (V->nf[vs(V, r, 0)] > 0) {
        V->bub[r] += t0 - V->e[r];
        V->worst = maxd(V->worst, V->bub[r]);
    }
    size_t cell = (size_t)s * m;
    if (kind == ZB_F) {
        j = V->nf[s]++;
        d = c->t_f[s];
        V->end_f[cell + j] = t0 + d;
        V->mem[r] += c->m_b[s];
    } else if (kind == ZB_B) {
        j = V->nb[s]++;
        d = c->t_b[s];
        V->end_b[cell + j] = t0 + d;
        V->mem[r] += c->m_w[s] - c->m_b[s];
        V->wq[(size_t)r * 2 * m + V->qt[r]++] = s;
    } else {
        j = V->nw[s]++;
        d = c->t_w[s];
        V->mem[r] -= c->m_w[s];
    }
    V->e[r] = t0 + d;
    if (V->mem[r] > V->limit + V->tol) return fail(err, "over the memory limit", r);
    return zb_schedule_push(V->out, r, (zb_pass)kind, j, s < V->p ? 0 : 1, err);
}

static bool owes_w(const vr *V, int r) { return V->qh[r] < V->qt[r]; }

static double head_tw(const vr *V, int r) {
    return V->c->t_w[V->wq[(size_t)r * 2 * V->m + V->qh[r]]];
}

/* Run owed W until `need` more fits in memory. */
static zb_status room(vr *V, int r, double need, zb_err *err) {
    while (V->mem[r] + need > V->limit + V->tol) {
        if (!owes_w(V, r)) return fail(err, "cannot free memory", r);
        ZB_TRY(put(V, r, ZB_W, 0, err));
    }
    return ZB_OK;
}

/* Idle rank r may still take: the worst rank's bubble (or what the
 * approved idle leaves it) minus its own. */
static double allowance(const vr *V, int r) {
    double a = V->worst;
    if (V->pol->approved) a = maxd(a, V->approved_max - V->pol->approved[r]);
    return a - V->bub[r];
}

/* Before a pass whose input arrives at `at`: owed W that fit whole before
 * it; one more if the wait is longer than the allowance and `fill`. */
static zb_status fill_w(vr *V, int r, double at, bool fill, zb_err *err) {
    if (isinf(at)) return ZB_OK;
    while (owes_w(V, r) && at + V->tol >= V->e[r] + head_tw(V, r))
        ZB_TRY(put(V, r, ZB_W, 0, err));
    if (fill && owes_w(V, r) && at - V->e[r] > allowance(V, r))
        ZB_TRY(put(V, r, ZB_W, 0, err));
    return ZB_OK;
}

static zb_status warm_up(vr *V, zb_err *err) {
    const zb_costs *c = V->c;
    int p = V->p, m = V->m;
    for (int r = 0; r < p; r++) ZB_TRY(put(V, r, ZB_F, 0, err));
    for (int r = p - 1; r >= 0; r--) {
        if (r < p - 1) {
            int s0 = vs(V, r, 0), up = vs(V, r + 1, 1);
            double at = V->end_f[(size_t)up * m] + hop(V, up, up + 1);
            while (V->nf[s0] < m &&
                   V->mem[r] + c->m_b[s0] * (2 + 2 * r) <= V->limit + V->tol &&
                   V->e[r] + c->t_f[s0] <= at + V->tol)
                for (int q = 0; q <= r; q++)
                    if (V->nf[vs(V, q, 0)] < m) ZB_TRY(put(V, q, ZB_F, 0, err));
        }
        ZB_TRY(put(V, r, ZB_F, 1, err));
    }
    int k = 0;
    for (int r = 1; r < p; r++) {
        for (int guard = 0; guard < 4 * m + 4; guard++) {
            int mine = V->nf[vs(V, r, 0)] + V->nf[vs(V, r, 1)];
            int n1 = V->nf[vs(V, r, 1)], up1 = V->nf[vs(V, r - 1, 1)];
            bool behind = V->pol->warm_main && n1 <= up1 && up1 < m;
            if (mine >= V->nf[vs(V, r - 1, 0)] + V->nf[vs(V, r - 1, 1)] && !behind)
                break;
            for (int q = p - 1; q >= r; q--)
                if (V->nf[vs(V, q, k)] < m) ZB_TRY(put(V, q, ZB_F, k, err));
            k = 1 - k;
        }
    }
    return ZB_OK;
}

/* Which B rank r runs this round: 1 (chunk 1 first for a microbatch), 0,
 * or -1 for none. */
static int b_choice(const vr *V, int r) {
    int s0 = vs(V, r, 0), s1 = vs(V, r, 1);
    if (V->nb[s0] >= V->nb[s1]) return V->nb[s1] < V->m ? 1 : -1;
    if (r == V->p - 1 || V->nb[s1] >= V->m || !isinf(input(V, s0, ZB_B))) return 0;
    return 1;
}

/* Which F rank r runs this round (chunk 1 when its input is there), or -1. */
static int f_choice(const vr *V, int r) {
    int s0 = vs(V, r, 0), s1 = vs(V, r, 1);
    if (V->nf[s1] >= V->m) return -1;
    if (V->nf[s1] >= V->nf[s0]) return isinf(input(V, s0, ZB_F)) ? -1 : 0;
    if (!isinf(input(V, s1, ZB_F))) return 1;
    return isinf(input(V, s0, ZB_F)) ? -1 : 0;
}

static zb_status one_round(vr *V, int *bk, zb_err *err) {
    const zb_costs *c = V->c;
    int p = V->p;
    for (int r = 0; r < p; r++) {
        double up = maxd(c->m_w[vs(V, r, 0)] - c->m_b[vs(V, r, 0)],
                         c->m_w[vs(V, r, 1)] - c->m_b[vs(V, r, 1)]);
        ZB_TRY(room(V, r, maxd(0, up), err));
        bk[r] = b_choice(V, r);
    }
    /* chunk-0 B from the last rank up, then chunk-1 B from rank 0 down:
     * each one's input is placed before it when it exists this round */
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < p; i++) {
            int r = pass == 0 ? p - 1 - i : i;
            if (bk[r] != pass) continue;
            double at = input(V, vs(V, r, pass), ZB_B);
            if (isinf(at)) continue;
            ZB_TRY(fill_w(V, r, at, pass == 0 || V->pol->fill_b, err));
            ZB_TRY(put(V, r, ZB_B, pass, err));
        }
    for (int r = 0; r < p; r++) {
        int k = f_choice(V, r);
        if (k < 0) continue;
        ZB_TRY(room(V, r, c->m_b[vs(V, r, k)], err));
        ZB_TRY(fill_w(V, r, input(V, vs(V, r, k), ZB_F), V->pol->fill_f, err));
        ZB_TRY(put(V, r, ZB_F, k, err));
    }
    return ZB_OK;
}

static void vr_free(vr *V) {
    free(V->nf);
    free(V->end_f);
    free(V->e);
    free(V->wq);
    V->nf = NULL, V->end_f = NULL, V->e = NULL, V->wq = NULL;
}

static zb_status vr_init(vr *V, int p, int m, const zb_costs *c, double limit,
                         const zb_vrounds_policy *pol, zb_schedule *out,
                         zb_err *err) {
    memset(V, 0, sizeof *V);
    int n = 2 * p;
    V->p = p, V->m = m, V->n = n, V->c = c, V->pol = pol, V->out = out;
    V->limit = limit;
    V->tol = zb_greedy_mem_tol(limit);
    size_t cells = (size_t)n * (size_t)m;
    V->nf = zb_calloc(3 * (size_t)n + 2 * (size_t)p, sizeof(int), err);
    V->end_f = zb_calloc(2 * cells, sizeof(double), err);
    V->e = zb_calloc(3 * (size_t)p, sizeof(double), err);
    V->wq = zb_calloc(cells, sizeof(int), err);
    if (!V->nf || !V->end_f || !V->e || !V->wq) {
        vr_free(V);
        return ZB_ENOMEM;
    }
    V->nb = V->nf + n, V->nw = V->nb + n, V->qh = V->nw + n, V->qt = V->qh + p;
    V->end_b = V->end_f + cells;
    V->mem = V->e + p, V->bub = V->mem + p;
    for (size_t i = 0; i < 2 * cells; i++) V->end_f[i] = INFINITY;
    if (pol->approved)
        for (int r = 0; r < p; r++) V->approved_max = maxd(V->approved_max, pol->approved[r]);
    return ZB_OK;
}

zb_status zb_vrounds_run(int p, int m, const zb_costs *c, double mem_limit,
                         const zb_vrounds_policy *pol, zb_schedule *out,
                         double *bubble_out, zb_err *err) {
    memset(out, 0, sizeof *out);
    ZB_TRY(zb_schedule_init(out, "zb-auto-v", p, m, 2, ZB_PLACE_V, 6 * m, err));
    vr V = {0};
    int *bk = zb_calloc((size_t)p, sizeof(int), err);
    zb_status st = bk ? vr_init(&V, p, m, c, mem_limit, pol, out, err) : ZB_ENOMEM;
    if (st == ZB_OK) st = warm_up(&V, err);
    for (int i = 0; i < 2 * m && st == ZB_OK; i++) st = one_round(&V, bk, err);
    for (int r = 0; r < p && st == ZB_OK; r++)
        while (owes_w(&V, r) && st == ZB_OK) st = put(&V, r, ZB_W, 0, err);
    for (int s = 0; s < 2 * p && st == ZB_OK; s++)
        if (V.nf[s] != m || V.nb[s] != m || V.nw[s] != m)
            st = fail(err, "not every pass placed", owner(&V, s));
    if (st == ZB_OK && bubble_out) memcpy(bubble_out, V.bub, (size_t)p * sizeof(double));
    vr_free(&V);
    free(bk);
    if (st != ZB_OK) zb_schedule_free(out);
    return st;
}

/* The eight switch combinations, one item each (zb_par_fn): a run, then
 * the rerun with the first run's idle approved, into pair[k]. */
typedef struct {
    int p, m;
    const zb_costs *c;
    double limit;
    zb_schedule (*pair)[2];   /* [8] */
    int *got;                 /* [8] runs that succeeded */
    double *bub;              /* [8 * p] */
    zb_status *st;            /* [8] ZB_ENOMEM where a run ran out */
    zb_err *err;              /* [8] */
} combos;

static zb_status run_combo(void *arg, int k, int w) {
    (void)w;
    combos *C = arg;
    double *bub = C->bub + (size_t)k * C->p;
    zb_vrounds_policy pol = {k & 1, (k >> 1) & 1, (k >> 2) & 1, NULL};
    for (int again = 0; again < 2; again++) {
        pol.approved = again ? bub : NULL;
        zb_status r = zb_vrounds_run(C->p, C->m, C->c, C->limit, &pol,
                                     &C->pair[k][again], again ? NULL : bub,
                                     &C->err[k]);
        if (r == ZB_ENOMEM) return C->st[k] = r;
        if (r != ZB_OK) break; /* no idle to approve */
        C->got[k]++;
    }
    return ZB_OK;
}

zb_status zb_vrounds_seeds(int p, int m, const zb_costs *c, double mem_limit,
                           zb_schedule *seeds, int *n, zb_err *err) {
    *n = 0;
    zb_schedule pair[8][2];
    int got[8] = {0};
    zb_status sts[8] = {ZB_OK};
    zb_err errs[8];
    double *bub = zb_calloc(8 * (size_t)p, sizeof(double), err);
    if (!bub) return ZB_ENOMEM;
    combos C = {p, m, c, mem_limit, pair, got, bub, sts, errs};
    /* the combinations run in parallel (par.h); their runs are kept in the
     * order one loop over them makes, the first that ran out reported */
    zb_status st = zb_par_for(8, zb_par_threads(0, 8), run_combo, &C);
    for (int k = 0; k < 8 && st != ZB_OK; k++)
        if (sts[k] != ZB_OK) {
            st = zb_fail(err, sts[k], "%s", errs[k].msg);
            break;
        }
    for (int k = 0; k < 8; k++)
        for (int i = 0; i < got[k]; i++) {
            if (st == ZB_OK) seeds[(*n)++] = pair[k][i];
            else zb_schedule_free(&pair[k][i]);
        }
    free(bub);
    return st;
}
