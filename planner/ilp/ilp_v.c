/* ilp_v.c - zb_ilp_v_schedule: the V placement (v = 2) split-B/W schedule
 * problem as a MIP, solved with GLPK and warm-started (ilp/ilp_loop.h).
 *
 * Rank r holds virtual stages r (chunk 0) and 2p-1-r (chunk 1). Passes:
 * F, B, W of microbatch j on virtual stage s; E(X) is the end of pass X.
 * The dependency graph: the chains (passes of one kind on one stage keep
 * microbatch order, as every generator and heuristic does: symmetry
 * breaking), F(s,j) after F(s-1,j), B(s,j) after B(s+1,j) (on the last
 * stage after F(s,j)), W(s,j) after B(s,j), each plus T_comm where the two
 * stages live on different ranks. Two passes on one rank are ordered by the
 * graph when one reaches the other (transitive closure, bitsets); every
 * other pair gets a binary and two big-M rows (M from the time windows),
 * unless a window rules one order out. Memory after every pass that raises
 * it (F, and B when M_W > M_B): the sum of the deltas of the rank's passes
 * before it (constants where the graph orders them, binaries otherwise)
 * <= limit. The objective: C >= E(last W of each chunk of rank r) - S_r,
 * minimise C, the longest rank span; S_r, the start of rank r's first pass
 * F(r,0), is fixed at its earliest as in ilp_loop.c (the simulator starts every
 * pass as early as its order allows). Windows: earliest ends along the
 * graph; latest ends S + H minus the paths to a rank's end, H the warm
 * schedule's span. Warm start, time limit, acceptance (simulated, no worse
 * than the warm schedule) and the report are as in ilp/ilp_loop.c (ilp/glpk.h).
 * Weaker than the LOOP model (no work or memory-precedence rows): meant for
 * small instances; above MAX_V_PASSES passes the warm schedule comes back.
 */
#include "planner/ilp/ilp_v.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "planner/ilp/glpk.h"
#include "planner/auto/greedy.h"

#define MAX_V_PASSES 576

typedef struct {
    int p, m, n, npass, words;
    const zb_costs *c;
    double limit, H, lb;
    double *t, *es, *lf, *start;     /* [npass], start [p] */
    int *topo;                       /* [npass] a topological order */
    uint64_t *reach;                 /* [npass][words] passes reachable */
    int *list, per;                  /* [p][per] passes of each rank */
    int *pair;                       /* [p][per][per] pair index or -1 */
    int npair, *px, *py;             /* pair q: X = px[q], Y = py[q] */
    signed char *fix;                /* [npair] -1 free, 1 X first, 0 Y first */
} vinst;

static double maxd(double a, double b) { return a > b ? a : b; }
static double mind(double a, double b) { return a < b ? a : b; }

static int pid(const vinst *I, int s, int k, int j) { return (s * 3 + k) * I->m + j; }
static int stage_of(const vinst *I, int id) { return id / (3 * I->m); }
static int kind_of(const vinst *I, int id) { return (id / I->m) % 3; }
static int owner(const vinst *I, int s) { return s < I->p ? s : 2 * I->p - 1 - s; }
static int rank_of(const vinst *I, int id) { return owner(I, stage_of(I, id)); }

static int col_e(int id) { return id + 1; }
static int col_c(const vinst *I) { return I->npass + 1; }
static int col_o(const vinst *I, int q) { return I->npass + 2 + q; }

static double hop(const vinst *I, int a, int b) {
    return owner(I, a) == owner(I, b) ? 0 : I->c->t_comm[a < b ? a : b];
}

/* Predecessors of pass id (at most 2) with the transfer time before it. */
static int preds(const vinst *I, int id, int *pr, double *cm) {
    int s = stage_of(I, id), k = kind_of(I, id), j = id % I->m, np = 0;
    if (j > 0) pr[np] = id - 1, cm[np++] = 0;
    if (k == ZB_F && s > 0) pr[np] = pid(I, s - 1, ZB_F, j), cm[np++] = hop(I, s - 1, s);
    if (k == ZB_B) {
        if (s == I->n - 1) pr[np] = pid(I, s, ZB_F, j), cm[np++] = 0;
        else pr[np] = pid(I, s + 1, ZB_B, j), cm[np++] = hop(I, s + 1, s);
    }
    if (k == ZB_W) pr[np] = pid(I, s, ZB_B, j), cm[np++] = 0;
    return np;
}

static double delta_mem(const vinst *I, int id) {
    int s = stage_of(I, id), k = kind_of(I, id);
    const zb_costs *c = I->c;
    return k == ZB_F ? c->m_b[s] : k == ZB_B ? c->m_w[s] - c->m_b[s] : -c->m_w[s];
}

static bool reaches(const vinst *I, int a, int b) {
    return (I->reach[(size_t)a * I->words + b / 64] >> (b % 64)) & 1;
}

/* Times, order and closure of the graph. */
static void graph(vinst *I) {
    int m = I->m, n = I->n, q = 0;
    for (int j = 0; j < m; j++) { /* F up, B down, W: a topological order */
        for (int s = 0; s < n; s++) I->topo[q++] = pid(I, s, ZB_F, j);
        for (int s = n - 1; s >= 0; s--) I->topo[q++] = pid(I, s, ZB_B, j);
        for (int s = 0; s < n; s++) I->topo[q++] = pid(I, s, ZB_W, j);
    }
    for (int i = 0; i < I->npass; i++) {
        int x = I->topo[i], pr[2];
        double cm[2], t = 0;
        int np = preds(I, x, pr, cm);
        for (int e = 0; e < np; e++) t = maxd(t, I->es[pr[e]] + cm[e]);
        I->es[x] = t + I->t[x];
    }
    for (int r = 0; r < I->p; r++) I->start[r] = I->es[pid(I, r, ZB_F, 0)] - I->t[pid(I, r, ZB_F, 0)];
}

static void windows(vinst *I) {
    for (int id = 0; id < I->npass; id++) I->lf[id] = I->start[rank_of(I, id)] + I->H;
    memset(I->reach, 0, (size_t)I->npass * I->words * sizeof(uint64_t));
    for (int i = I->npass - 1; i >= 0; i--) {
        int x = I->topo[i], pr[2];
        double cm[2];
        int np = preds(I, x, pr, cm);
        for (int e = 0; e < np; e++) {
            I->lf[pr[e]] = mind(I->lf[pr[e]], I->lf[x] - I->t[x] - cm[e]);
            uint64_t *dst = I->reach + (size_t)pr[e] * I->words;
            const uint64_t *src = I->reach + (size_t)x * I->words;
            for (int w = 0; w < I->words; w++) dst[w] |= src[w];
            dst[x / 64] |= 1ull << (x % 64);
        }
    }
}

static double tol_of(const vinst *I) { return 1e-9 * maxd(1.0, I->H); }

/* Pairs of passes on one rank that the graph leaves unordered; a window
 * that rules one order out fixes it. False if the windows rule out both. */
static bool make_pairs(vinst *I) {
    int per = I->per;
    double tol = tol_of(I);
    I->npair = 0;
    for (int r = 0; r < I->p; r++)
        for (int a = 0; a < per; a++)
            for (int b = 0; b < per; b++) {
                int *slot = &I->pair[((size_t)r * per + a) * per + b];
                *slot = -1;
                if (b <= a) continue;
                int x = I->list[r * per + a], y = I->list[r * per + b];
                if (reaches(I, x, y) || reaches(I, y, x)) continue;
                bool xf = I->lf[y] - I->es[x] >= I->t[y] - tol;
                bool yf = I->lf[x] - I->es[y] >= I->t[x] - tol;
                if (!xf && !yf) return false;
                int q = I->npair++;
                I->px[q] = x, I->py[q] = y;
                I->fix[q] = xf && yf ? -1 : xf ? 1 : 0;
                *slot = q;
            }
    return true;
}

/* Is X before Y (same rank) as a constant (1 / 0) or through pair q:
 * returns -1 and sets *q, *x_first_is_one (o_q = 1 means X first). */
static int before(const vinst *I, int r, int a, int b, int *q, bool *direct) {
    int x = I->list[r * I->per + a], y = I->list[r * I->per + b];
    if (reaches(I, x, y)) return 1;
    if (reaches(I, y, x)) return 0;
    int lo = a < b ? a : b, hi = a < b ? b : a;
    *q = I->pair[((size_t)r * I->per + lo) * I->per + hi];
    if (I->fix[*q] >= 0) return a < b ? I->fix[*q] : 1 - I->fix[*q];
    *direct = a < b; /* o = 1 puts list[lo] first */
    return -1;
}

static void add_rows(const vinst *I, zb_rows *R) {
    for (int id = 0; id < I->npass; id++) {
        int pr[2];
        double cm[2];
        int np = preds(I, id, pr, cm);
        for (int e = 0; e < np; e++)
            zb_row2(R, col_e(id), 1, col_e(pr[e]), -1, GLP_LO, cm[e] + I->t[id]);
    }
    for (int r = 0; r < I->p; r++)
        for (int k = 0; k < 2; k++) { /* C >= E(last W of chunk k) - S_r */
            int s = k == 0 ? r : 2 * I->p - 1 - r;
            zb_row2(R, col_c(I), 1, col_e(pid(I, s, ZB_W, I->m - 1)), -1, GLP_LO,
                    -I->start[r]);
        }
    for (int q = 0; q < I->npair; q++) {
        int x = I->px[q], y = I->py[q];
        double tx = I->t[x], ty = I->t[y];
        if (I->fix[q] == 1) {
            zb_row2(R, col_e(y), 1, col_e(x), -1, GLP_LO, ty);
        } else if (I->fix[q] == 0) {
            zb_row2(R, col_e(x), 1, col_e(y), -1, GLP_LO, tx);
        } else { /* o = 1: E(y) - E(x) >= ty; o = 0: E(x) - E(y) >= tx */
            double m1 = ty - I->es[y] + I->lf[x], m0 = tx - I->es[x] + I->lf[y];
            zb_row_add(R, col_e(y), 1);
            zb_row_add(R, col_e(x), -1);
            zb_row_add(R, col_o(I, q), -m1);
            zb_row_end(R, GLP_LO, ty - m1);
            zb_row_add(R, col_e(x), 1);
            zb_row_add(R, col_e(y), -1);
            zb_row_add(R, col_o(I, q), m0);
            zb_row_end(R, GLP_LO, tx);
        }
    }
    /* memory after every pass that raises it */
    for (int r = 0; r < I->p; r++)
        for (int b = 0; b < I->per; b++) {
            int x = I->list[r * I->per + b];
            double dx = delta_mem(I, x), K = dx;
            if (dx <= 0) continue;
            for (int a = 0; a < I->per; a++) {
                if (a == b) continue;
                int q = -1;
                bool direct = false;
                double d = delta_mem(I, I->list[r * I->per + a]);
                int v = before(I, r, a, b, &q, &direct);
                if (v >= 0) {
                    K += v * d;
                } else if (direct) { /* Y = list[a] first when o = 1 */
                    zb_row_add(R, col_o(I, q), d);
                } else { /* list[b] first when o = 1: Y before it is 1 - o */
                    K += d;
                    zb_row_add(R, col_o(I, q), -d);
                }
            }
            zb_row_end(R, GLP_UP, I->limit - K);
        }
}

static int ncols(const vinst *I) { return I->npass + 1 + I->npair; }

static void load_columns(const vinst *I, glp_prob *P) {
    double tol = tol_of(I);
    glp_add_cols(P, ncols(I));
    for (int id = 0; id < I->npass; id++)
        glp_set_col_bnds(P, col_e(id), GLP_DB, I->es[id] - tol, I->lf[id] + tol);
    for (int r = 0; r < I->p; r++) {
        int f0 = pid(I, r, ZB_F, 0);
        glp_set_col_bnds(P, col_e(f0), GLP_FX, I->es[f0], I->es[f0]);
    }
    glp_set_col_bnds(P, col_c(I), GLP_DB, I->lb - tol, I->H + tol);
    glp_set_obj_coef(P, col_c(I), 1.0);
    for (int q = 0; q < I->npair; q++) {
        glp_set_col_kind(P, col_o(I, q), GLP_BV);
        if (I->fix[q] >= 0)
            glp_set_col_bnds(P, col_o(I, q), GLP_FX, I->fix[q], I->fix[q]);
    }
    glp_set_obj_dir(P, GLP_MIN);
}

/* The warm schedule as a column vector; *in_space false if it breaks the
 * microbatch order (then it is not offered). pos[id]: index on its rank. */
static zb_status warm_vector(const vinst *I, const zb_schedule *w, double *x,
                             int *pos, bool *in_space, double *span,
                             zb_err *err) {
    zb_sim_result res;
    zb_status st = zb_simulate(w, I->c, &res, err);
    if (st != ZB_OK) {
        zb_sim_result_free(&res);
        return st == ZB_ENOMEM ? st : zb_fail(err, ZB_EINPUT, "ilp: the warm "
                                              "schedule is invalid: %s", err->msg);
    }
    double peak = 0;
    *in_space = true;
    *span = res.max_span;
    for (int r = 0; r < w->p; r++) {
        peak = maxd(peak, res.peak_mem[r]);
        for (int i = 0; i < w->len[r]; i++) {
            const zb_action *a = &w->acts[r][i];
            if (a->pass == ZB_BW) {
                *in_space = false;
                continue;
            }
            int id = pid(I, zb_vstage(w, r, a->chunk), a->pass, a->mb);
            pos[id] = i;
            x[col_e(id)] = res.end[res.off[r] + i];
        }
    }
    zb_sim_result_free(&res);
    if (peak > I->limit + zb_greedy_mem_tol(I->limit))
        return zb_fail(err, ZB_EINPUT, "ilp: the warm schedule peaks at %g, "
                       "over the memory limit %g", peak, I->limit);
    for (int id = 0; id < I->npass && *in_space; id++)
        if (id % I->m > 0 && pos[id] < pos[id - 1]) *in_space = false;
    for (int r = 0; r < I->p; r++) x[col_e(pid(I, r, ZB_F, 0))] = I->es[pid(I, r, ZB_F, 0)];
    x[col_c(I)] = *span;
    for (int q = 0; q < I->npair; q++) x[col_o(I, q)] = pos[I->px[q]] < pos[I->py[q]];
    return ZB_OK;
}

typedef struct {
    double e;
    int topo, id;
} ended;

static int by_end(const void *a, const void *b) {
    const ended *x = a, *y = b;
    if (x->e != y->e) return x->e < y->e ? -1 : 1;
    return x->topo - y->topo;
}

/* Each rank's passes sorted by end time (ties: topological order). */
static zb_status extract(const vinst *I, glp_prob *P, const char *name,
                         zb_schedule *out, zb_err *err) {
    ended *row = zb_calloc((size_t)I->per, sizeof *row, err);
    int *rank_topo = zb_calloc((size_t)I->npass, sizeof(int), err);
    zb_status st = row && rank_topo ? ZB_OK : ZB_ENOMEM;
    if (st == ZB_OK) st = zb_schedule_init(out, name, I->p, I->m, 2, ZB_PLACE_V, I->per, err);
    for (int i = 0; st == ZB_OK && i < I->npass; i++) rank_topo[I->topo[i]] = i;
    for (int r = 0; r < I->p && st == ZB_OK; r++) {
        for (int a = 0; a < I->per; a++) {
            int id = I->list[r * I->per + a];
            row[a] = (ended){glp_mip_col_val(P, col_e(id)), rank_topo[id], id};
        }
        qsort(row, (size_t)I->per, sizeof *row, by_end);
        for (int a = 0; a < I->per && st == ZB_OK; a++) {
            int id = row[a].id, s = stage_of(I, id);
            st = zb_schedule_push(out, r, (zb_pass)kind_of(I, id), id % I->m,
                                  s < I->p ? 0 : 1, err);
        }
    }
    free(row);
    free(rank_topo);
    if (st != ZB_OK && out->len) zb_schedule_free(out);
    return st;
}

static void vinst_free(vinst *I) {
    free(I->t);
    free(I->es);
    free(I->lf);
    free(I->start);
    free(I->topo);
    free(I->reach);
    free(I->list);
    free(I->pair);
    free(I->px);
    free(I->py);
    free(I->fix);
}

static zb_status vinst_init(vinst *I, int p, int m, const zb_costs *c,
                            double limit, zb_err *err) {
    memset(I, 0, sizeof *I);
    I->p = p, I->m = m, I->n = 2 * p, I->c = c, I->limit = limit;
    I->npass = 6 * p * m;
    I->per = 6 * m;
    I->words = (I->npass + 63) / 64;
    size_t N = (size_t)I->npass, per = (size_t)I->per, pairs = (size_t)p * per * per;
    I->t = zb_calloc(N, sizeof(double), err);
    I->es = zb_calloc(N, sizeof(double), err);
    I->lf = zb_calloc(N, sizeof(double), err);
    I->start = zb_calloc((size_t)p, sizeof(double), err);
    I->topo = zb_calloc(N, sizeof(int), err);
    I->reach = zb_calloc(N * (size_t)I->words, sizeof(uint64_t), err);
    I->list = zb_calloc(N, sizeof(int), err);
    I->pair = zb_calloc(pairs, sizeof(int), err);
    I->px = zb_calloc(pairs / 2 + 1, sizeof(int), err);
    I->py = zb_calloc(pairs / 2 + 1, sizeof(int), err);
    I->fix = zb_calloc(pairs / 2 + 1, 1, err);
    if (!I->t || !I->es || !I->lf || !I->start || !I->topo || !I->reach ||
        !I->list || !I->pair || !I->px || !I->py || !I->fix) {
        vinst_free(I);
        return ZB_ENOMEM;
    }
    int *fill = zb_calloc((size_t)p, sizeof(int), err);
    if (!fill) {
        vinst_free(I);
        return ZB_ENOMEM;
    }
    for (int id = 0; id < I->npass; id++) {
        int s = stage_of(I, id), k = kind_of(I, id), r = owner(I, s);
        I->t[id] = k == ZB_F ? c->t_f[s] : k == ZB_B ? c->t_b[s] : c->t_w[s];
        I->list[r * I->per + fill[r]++] = id;
    }
    free(fill);
    /* lower bound: every rank runs all its work */
    for (int r = 0; r < p; r++) {
        double work = 0;
        for (int a = 0; a < I->per; a++) work += I->t[I->list[r * I->per + a]];
        I->lb = maxd(I->lb, work);
    }
    return ZB_OK;
}

static double serial_horizon(const vinst *I) {
    double one = 0;
    for (int s = 0; s < I->n; s++) {
        one += I->c->t_f[s] + I->c->t_b[s] + I->c->t_w[s];
        if (s + 1 < I->n) one += 2 * hop(I, s, s + 1);
    }
    return one * I->m;
}

/* Return a copy of the warm schedule with the bound lb (too large, or the
 * warm start meets the bound). */
static zb_status give_warm(const vinst *I, const zb_schedule *warm, double span,
                           double mip_gap, zb_schedule *out,
                           zb_sched_report *rep, zb_err *err) {
    ZB_TRY(zb_schedule_copy(out, warm, err));
    if (rep) {
        zb_ilp_solve_out none = {.mip_ret = -1, .status = GLP_UNDEF};
        zb_ilp_fill_report(&none, span, false, mip_gap, I->lb, rep);
    }
    return ZB_OK;
}

/* The warm schedule's longest span; it must be valid and within the limit. */
static zb_status warm_span(const vinst *I, const zb_schedule *warm,
                           double *span, zb_err *err) {
    zb_sim_result res;
    zb_status st = zb_simulate(warm, I->c, &res, err);
    double peak = 0;
    for (int r = 0; st == ZB_OK && r < res.p; r++) peak = maxd(peak, res.peak_mem[r]);
    if (st == ZB_OK) *span = res.max_span;
    zb_sim_result_free(&res);
    if (st != ZB_OK)
        return st == ZB_ENOMEM ? st : zb_fail(err, ZB_EINPUT, "ilp: the warm "
                                              "schedule is invalid: %s", err->msg);
    if (peak > I->limit + zb_greedy_mem_tol(I->limit))
        return zb_fail(err, ZB_EINPUT, "ilp: the warm schedule peaks at %g, "
                       "over the memory limit %g", peak, I->limit);
    return ZB_OK;
}

/* Windows and pairs for horizon H. */
static zb_status horizon(vinst *I, double H, zb_err *err) {
    I->H = H;
    windows(I);
    if (!make_pairs(I))
        return zb_fail(err, ZB_ERUNTIME, "ilp: internal error: empty time "
                       "windows below %g", I->H);
    return ZB_OK;
}

/* Model set-up: windows, pairs, the warm vector *x (offered only when
 * *in_space; otherwise the horizon becomes the serial schedule's). */
static zb_status prepare(vinst *I, const zb_schedule *warm, double span,
                         double **x, int *pos, bool *in_space, zb_err *err) {
    ZB_TRY(horizon(I, span, err));
    *x = zb_calloc((size_t)ncols(I) + 1, sizeof(double), err);
    if (!*x) return ZB_ENOMEM;
    ZB_TRY(warm_vector(I, warm, *x, pos, in_space, &span, err));
    if (!*in_space) ZB_TRY(horizon(I, maxd(span, serial_horizon(I)), err));
    return ZB_OK;
}

/* Rows, GLPK, and the answer: the MIP's schedule if it simulates valid and
 * no worse than the warm one, else the warm one. */
static zb_status solve_v(vinst *I, const zb_schedule *warm, double span,
                         const double *x, bool in_space, double deadline,
                         double mip_gap, zb_schedule *out,
                         zb_sched_report *rep, zb_err *err) {
    zb_rows R = {0};
    if (!zb_rows_init(&R, I->per + 4)) {
        zb_rows_free(&R);
        return zb_fail(err, ZB_ENOMEM, "ilp: out of memory");
    }
    add_rows(I, &R);
    zb_status st = R.oom ? zb_fail(err, ZB_ENOMEM, "ilp: out of memory building rows") : ZB_OK;
    glp_prob *P = NULL;
    zb_ilp_solve_out o;
    if (st == ZB_OK) {
        P = glp_create_prob();
        load_columns(I, P);
        zb_rows_load(&R, P);
        zb_ilp_solve(P, in_space ? x : NULL, deadline, mip_gap, &o);
        if (o.lp_ret != 0 && o.lp_ret != GLP_ETMLIM)
            st = zb_fail(err, ZB_ERUNTIME, "ilp: glp_simplex failed (code %d)", o.lp_ret);
        else if (o.mip_ret != 0 && o.mip_ret != GLP_ETMLIM &&
                 o.mip_ret != GLP_EMIPGAP && o.lp_ret == 0)
            st = zb_fail(err, ZB_ERUNTIME, "ilp: glp_intopt failed (code %d)", o.mip_ret);
    }
    bool own = false;
    double mk = span, peak;
    zb_err ignored;
    if (st == ZB_OK && (o.status == GLP_OPT || o.status == GLP_FEAS) &&
        (st = extract(I, P, warm->name, out, err)) == ZB_OK) {
        own = zb_simulate_fast(out, I->c, NULL, &mk, &peak, &ignored) == ZB_OK &&
              peak <= I->limit + zb_greedy_mem_tol(I->limit) &&
              mk <= span + 1e-9 * maxd(1, span);
        if (!own) zb_schedule_free(out);
    }
    if (!own) mk = span;
    if (st == ZB_OK && !own) st = zb_schedule_copy(out, warm, err);
    if (st == ZB_OK && rep) zb_ilp_fill_report(&o, mk, own, mip_gap, I->lb, rep);
    if (P) glp_delete_prob(P);
    zb_rows_free(&R);
    return st;
}

static zb_status run_v(vinst *I, const zb_schedule *warm, double deadline,
                       double mip_gap, zb_schedule *out, zb_sched_report *rep,
                       zb_err *err) {
    graph(I);
    double span = 0, *x = NULL;
    ZB_TRY(warm_span(I, warm, &span, err));
    if (I->npass > MAX_V_PASSES || span <= I->lb + tol_of(I))
        return give_warm(I, warm, span, mip_gap, out, rep, err);
    int *pos = zb_calloc((size_t)I->npass, sizeof(int), err);
    bool in_space = false;
    zb_status st = pos ? prepare(I, warm, span, &x, pos, &in_space, err) : ZB_ENOMEM;
    if (st == ZB_OK)
        st = solve_v(I, warm, span, x, in_space, deadline, mip_gap, out, rep, err);
    free(x);
    free(pos);
    return st;
}

zb_status zb_ilp_v_schedule(int p, int m, const zb_costs *c, double mem_limit,
                            const zb_schedule *warm, double time_limit_s,
                            double mip_gap, zb_schedule *out,
                            zb_sched_report *rep, zb_err *err) {
    double t0 = zb_ilp_now_s();
    double deadline = time_limit_s > 0 ? t0 + time_limit_s : INFINITY;
    memset(out, 0, sizeof *out);
    if (rep) memset(rep, 0, sizeof *rep);
    ZB_TRY(zb_greedy_check(p, m, 2, ZB_PLACE_V, c, mem_limit, "ilp", err));
    if (!warm)
        return zb_fail(err, ZB_EINPUT, "ilp: a warm-start schedule is required");
    if (warm->p != p || warm->m != m || warm->v != 2 || warm->placement != ZB_PLACE_V)
        return zb_fail(err, ZB_EINPUT, "ilp: the warm schedule must be V with "
                       "v = 2, p = %d, m = %d (got p=%d m=%d v=%d)", p, m,
                       warm->p, warm->m, warm->v);
    if (!(mip_gap >= 0))
        return zb_fail(err, ZB_EINPUT, "ilp: mip_gap must be >= 0 (got %g)", mip_gap);
    vinst I;
    ZB_TRY(vinst_init(&I, p, m, c, mem_limit, err));
    zb_status st = run_v(&I, warm, deadline, mip_gap, out, rep, err);
    if (st == ZB_OK && rep) rep->solve_s = zb_ilp_now_s() - t0;
    vinst_free(&I);
    return st;
}
