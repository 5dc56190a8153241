/* ilp_loop.c - zb_ilp_schedule: the exact LOOP (v = 1) split-B/W schedule
 * problem as a MIP, solved with GLPK and warm-started from a given schedule.
 *
 * Passes: F, B, W of microbatch j on stage s (= rank s); E(X) is the end
 * time of pass X, t(X) its duration. The model (all rows are linear):
 *   chains     E(K_j) - E(K_{j-1}) >= t(K_j)   passes of one kind on a rank
 *              keep microbatch order (symmetry breaking; every generator and
 *              the heuristic obey it), so F_i < B_j < W_k for i <= j <= k are
 *              fixed and only F_i/B_j, F_i/W_j, B_i/W_j with i > j are free;
 *   deps       E(F(s,j)) >= E(F(s-1,j)) + comm + t_f, and the same for B
 *              (from s+1, or from F on the last stage) and W (from B);
 *   order      one binary o per free pair (X before Y when o = 1), two big-M
 *              rows with M from each pass's time window [ES, LF];
 *   memory     at every F_i: (m_b - m_w) #{B_j, j < i, after F_i}
 *              + m_w #{W_j, j < i, after F_i} <= limit - m_b, which is the
 *              simulator's running sum before F_i plus m_b <= limit (and
 *              after every B_i when B raises memory, m_w > m_b);
 *   span       C >= E(W(s,m-1)) - S_s for every rank s; minimise C, the
 *              longest rank span, which is what the bubble rate measures.
 *              S_s is the start of the rank's first pass, F(s,0) (symmetry
 *              makes F_0 first and W_{m-1} last on every rank). The
 *              simulator starts every pass as early as its order allows, so
 *              S_s is fixed at F(s,0)'s earliest start (sum of t_f and comm
 *              of the stages before); fixing it loses nothing (for any
 *              order the as-early-as-possible times are feasible) and
 *              forbids a late start that would shorten a span in the model
 *              but not in the simulator: the MIP optimum is the simulator's.
 * Valid inequalities that hold for any consistent order (o monotone in i
 * and j, F/B <= F/W, B/W <= F/W) and the work a rank must run before and
 * after each pass (add_work_rows) tighten the relaxation. Windows: ES is the
 * longest path from time 0 (dependencies, and the work a rank must finish
 * before X), LF = the least over the paths from X to a rank's last pass of
 * S + H - path, with H the warm schedule's longest span: solutions worse
 * than the warm start are cut off.
 *
 * Warm start: the warm schedule's simulated end times and order go to GLPK
 * from the branch-and-bound callback (glp_ios_heur_sol at the first
 * GLP_IHEUR). That needs the callback to see our own columns, so GLPK's MIP
 * presolver stays off (with presolve on, the tree holds a transformed
 * problem); the LP relaxation is solved first with glp_simplex instead.
 * The solution is turned back into action lists (each rank sorted by E),
 * checked with zb_simulate, and returned only if its simulated longest span
 * is no worse than the warm schedule's. Instances above MAX_MODEL_PASSES are not modelled.
 *
 * GLPK keeps global state and aborts the process on a malformed problem:
 * rows are built through a helper that merges duplicate columns, and this
 * function is not thread-safe (one call at a time per process).
 */
#include "planner/ilp/ilp_loop.h"

#include "planner/ilp/glpk.h"
#include "planner/auto/greedy.h"

#include <glpk.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- the instance and its time windows ---- */

typedef struct {
    int n, m;                 /* stages (= ranks), microbatches */
    const zb_costs *c;
    double limit, H;          /* memory limit; horizon (upper bound on C) */
    double *start;            /* [n] S_s: fixed start of rank s's first pass */
    int *kf;                  /* [n] most F in flight (F done, B not) that
                                 memory allows: F_j starts after B_{j-kf}
                                 ends, as kf + 1 activations do not fit */
    int npass, npair;         /* 3nm passes; 3 * n * m(m-1)/2 pairs */
    double *t, *es, *lf;      /* [npass] duration, earliest / latest end */
    signed char *fix;         /* [npair] -1 free, else the forced value */
} inst;

enum { PAIR_FB = 0, PAIR_FW = 1, PAIR_BW = 2 };

static int pid(const inst *I, int s, int k, int j) {
    return (s * 3 + k) * I->m + j;
}

static double dur(const inst *I, int s, int k) {
    return k == ZB_F ? I->c->t_f[s] : k == ZB_B ? I->c->t_b[s] : I->c->t_w[s];
}

/* Pair (type, i, j), i > j, on stage s: X = F_i (FB, FW) or B_i (BW), Y =
 * B_j (FB) or W_j (FW, BW). o = 1 means X runs before Y. */
static int pair_index(const inst *I, int s, int type, int i, int j) {
    int per = I->m * (I->m - 1) / 2;
    return (s * 3 + type) * per + i * (i - 1) / 2 + j;
}

static void pair_passes(const inst *I, int s, int type, int i, int j, int *x,
                        int *y) {
    *x = pid(I, s, type == PAIR_BW ? ZB_B : ZB_F, i);
    *y = pid(I, s, type == PAIR_FB ? ZB_B : ZB_W, j);
}

/* Columns (1-based): E of pass id is id + 1, C is npass + 1, pair q's
 * binary is npass + 2 + q. */
static int col_e(int id) { return id + 1; }
static int col_c(const inst *I) { return I->npass + 1; }
static int col_o(const inst *I, int q) { return I->npass + 2 + q; }

static double comm(const inst *I, int s) { return I->c->t_comm[s]; }

/* Work a rank must run before / after pass (k, j), given that passes of one
 * kind keep microbatch order and F_j < B_j < W_j. */
static double work_before(const inst *I, int s, int k, int j) {
    const zb_costs *c = I->c;
    if (k == ZB_F) return j * c->t_f[s];
    if (k == ZB_B) return (j + 1) * c->t_f[s] + j * c->t_b[s];
    return (j + 1) * (c->t_f[s] + c->t_b[s]) + j * c->t_w[s];
}

static double work_after(const inst *I, int s, int k, int j) {
    const zb_costs *c = I->c;
    int m = I->m;
    if (k == ZB_F)
        return (m - 1 - j) * c->t_f[s] + (m - j) * (c->t_b[s] + c->t_w[s]);
    if (k == ZB_B) return (m - 1 - j) * c->t_b[s] + (m - j) * c->t_w[s];
    return (m - 1 - j) * c->t_w[s];
}

static double maxd(double a, double b) { return a > b ? a : b; }
static double mind(double a, double b) { return a < b ? a : b; }

/* Earliest end of every pass, in a topological order of the DAG (by
 * microbatch: F by stage up, then B by stage down; then W), raised by the
 * memory precedence (F_j after B_{j-k}, see kf) and the rank-work bound: a
 * rank starts no earlier than its first F can, and runs its fixed
 * predecessors one at a time. */
static void earliest_ends(inst *I) {
    int n = I->n, m = I->m;
    double *es = I->es;
    for (int j = 0; j < m; j++) {
        for (int s = 0; s < n; s++) {
            double t = s > 0 ? es[pid(I, s - 1, ZB_F, j)] + comm(I, s - 1) : 0;
            if (j > 0) t = maxd(t, es[pid(I, s, ZB_F, j - 1)]);
            if (j >= I->kf[s]) t = maxd(t, es[pid(I, s, ZB_B, j - I->kf[s])]);
            es[pid(I, s, ZB_F, j)] = t + I->c->t_f[s];
        }
        for (int s = n - 1; s >= 0; s--) {
            double t = s < n - 1 ? es[pid(I, s + 1, ZB_B, j)] + comm(I, s)
                                 : es[pid(I, s, ZB_F, j)];
            if (j > 0) t = maxd(t, es[pid(I, s, ZB_B, j - 1)]);
            es[pid(I, s, ZB_B, j)] = t + I->c->t_b[s];
        }
    }
    for (int s = 0; s < n; s++)
        for (int j = 0; j < m; j++) {
            double t = es[pid(I, s, ZB_B, j)];
            if (j > 0) t = maxd(t, es[pid(I, s, ZB_W, j - 1)]);
            es[pid(I, s, ZB_W, j)] = t + I->c->t_w[s];
        }
    /* Rank-work bound. It only raises values, and every DAG edge points from
     * a pass whose bound is no larger, so one pass after the sweep is
     * enough for these bounds to be valid (not necessarily the tightest). */
    for (int s = 0; s < n; s++) {
        double start = es[pid(I, s, ZB_F, 0)] - I->c->t_f[s];
        for (int k = 0; k < 3; k++)
            for (int j = 0; j < m; j++) {
                double w = start + work_before(I, s, k, j) + dur(I, s, k);
                double *e = &es[pid(I, s, k, j)];
                *e = maxd(*e, w);
            }
    }
}

/* Latest end of every pass: the least over its successors Y of LF(Y) -
 * t(Y) (- comm across ranks), and S + H minus the work its rank must still
 * run after it. Reverse topological order: W; then by microbatch down, B by
 * stage up and F by stage down (B_j precedes F_{j+k}, see kf). */
static void latest_ends(inst *I) {
    int n = I->n, m = I->m;
    const zb_costs *c = I->c;
    double *lf = I->lf;
    for (int s = 0; s < n; s++)
        for (int j = m - 1; j >= 0; j--) {
            double t = I->start[s] + I->H - work_after(I, s, ZB_W, j);
            if (j + 1 < m) t = mind(t, lf[pid(I, s, ZB_W, j + 1)] - c->t_w[s]);
            lf[pid(I, s, ZB_W, j)] = t;
        }
    for (int j = m - 1; j >= 0; j--) {
        for (int s = 0; s < n; s++) {
            double t = I->start[s] + I->H - work_after(I, s, ZB_B, j);
            t = mind(t, lf[pid(I, s, ZB_W, j)] - c->t_w[s]);
            if (j + 1 < m) t = mind(t, lf[pid(I, s, ZB_B, j + 1)] - c->t_b[s]);
            if (s > 0)
                t = mind(t, lf[pid(I, s - 1, ZB_B, j)] - c->t_b[s - 1] -
                                comm(I, s - 1));
            if (j + I->kf[s] < m)
                t = mind(t, lf[pid(I, s, ZB_F, j + I->kf[s])] - c->t_f[s]);
            lf[pid(I, s, ZB_B, j)] = t;
        }
        for (int s = n - 1; s >= 0; s--) {
            double t = I->start[s] + I->H - work_after(I, s, ZB_F, j);
            if (j + 1 < m) t = mind(t, lf[pid(I, s, ZB_F, j + 1)] - c->t_f[s]);
            if (s + 1 < n)
                t = mind(t, lf[pid(I, s + 1, ZB_F, j)] - c->t_f[s + 1] - comm(I, s));
            else
                t = mind(t, lf[pid(I, s, ZB_B, j)] - c->t_b[s]);
            lf[pid(I, s, ZB_F, j)] = t;
        }
    }
}

/* Lower bound on the longest span (needs earliest_ends): every rank runs
 * all its work, and until its first B can start it can run only F passes,
 * at most as many as fit in memory; the rest of that wait is idle inside
 * its span. (p 4, m 8, F 1, B 2, W 1, comm 0.1, limit 8 M_B: rank 0 runs 8
 * F, B0 starts at 10.6, so its span is at least 32 + 2.6 = 34.6.) */
static double span_lower_bound(const inst *I) {
    const zb_costs *c = I->c;
    double lb = 0;
    for (int s = 0; s < I->n; s++) {
        double work = I->m * (c->t_f[s] + c->t_b[s] + c->t_w[s]);
        double fit = I->kf[s];
        double b0 = I->es[pid(I, s, ZB_B, 0)] - c->t_b[s] - I->start[s];
        lb = maxd(lb, work + maxd(0, b0 - fit * c->t_f[s]));
        lb = maxd(lb, I->es[pid(I, s, ZB_W, I->m - 1)] - I->start[s]);
    }
    return lb;
}

/* ---- the model ---- */

/* Slack on windows and checks, relative to the horizon. */
static double tol_of(const inst *I) { return 1e-9 * maxd(1.0, I->H); }

static void add_time_rows(const inst *I, zb_rows *R) {
    int n = I->n, m = I->m;
    const zb_costs *c = I->c;
    for (int s = 0; s < n; s++)
        for (int k = 0; k < 3; k++)
            for (int j = 1; j < m; j++)
                zb_row2(R, col_e(pid(I, s, k, j)), 1, col_e(pid(I, s, k, j - 1)), -1,
                     GLP_LO, dur(I, s, k));
    for (int s = 0; s < n; s++)
        for (int j = 0; j < m; j++) {
            int f = pid(I, s, ZB_F, j), b = pid(I, s, ZB_B, j), w = pid(I, s, ZB_W, j);
            if (s > 0)
                zb_row2(R, col_e(f), 1, col_e(pid(I, s - 1, ZB_F, j)), -1, GLP_LO,
                     comm(I, s - 1) + c->t_f[s]);
            if (s < n - 1)
                zb_row2(R, col_e(b), 1, col_e(pid(I, s + 1, ZB_B, j)), -1, GLP_LO,
                     comm(I, s) + c->t_b[s]);
            else
                zb_row2(R, col_e(b), 1, col_e(f), -1, GLP_LO, c->t_b[s]);
            zb_row2(R, col_e(w), 1, col_e(b), -1, GLP_LO, c->t_w[s]);
        }
    for (int s = 0; s < n; s++) /* C >= span of rank s */
        zb_row2(R, col_c(I), 1, col_e(pid(I, s, ZB_W, m - 1)), -1, GLP_LO,
             -I->start[s]);
}

/* Order rows of one pair. A window that rules one order out fixes the
 * binary (and keeps a plain precedence row). Returns false if the windows
 * rule out both orders (no solution within the horizon). */
static bool add_pair(inst *I, zb_rows *R, int q, int x, int y, bool x_fits) {
    double tx = I->t[x], ty = I->t[y], tol = tol_of(I);
    bool x_first = x_fits && I->lf[y] - I->es[x] >= ty - tol; /* X before Y possible */
    bool y_first = I->lf[x] - I->es[y] >= tx - tol;
    int o = col_o(I, q);
    if (!x_first && !y_first) return false;
    if (!y_first) {
        I->fix[q] = 1;
        zb_row2(R, col_e(y), 1, col_e(x), -1, GLP_LO, ty);
    } else if (!x_first) {
        I->fix[q] = 0;
        zb_row2(R, col_e(x), 1, col_e(y), -1, GLP_LO, tx);
    } else {
        /* o = 1: E(y) - E(x) >= ty; o = 0: E(x) - E(y) >= tx. Each big M is
         * the most the other order can make its row fall short. */
        double m1 = ty - I->es[y] + I->lf[x], m0 = tx - I->es[x] + I->lf[y];
        I->fix[q] = -1;
        zb_row_add(R, col_e(y), 1);
        zb_row_add(R, col_e(x), -1);
        zb_row_add(R, o, -m1);
        zb_row_end(R, GLP_LO, ty - m1);
        zb_row_add(R, col_e(x), 1);
        zb_row_add(R, col_e(y), -1);
        zb_row_add(R, o, m0);
        zb_row_end(R, GLP_LO, tx);
    }
    return true;
}

static bool add_order_rows(inst *I, zb_rows *R) {
    for (int s = 0; s < I->n; s++)
        for (int type = 0; type < 3; type++)
            for (int i = 1; i < I->m; i++)
                for (int j = 0; j < i; j++) {
                    int x, y;
                    pair_passes(I, s, type, i, j, &x, &y);
                    /* F_i before B_j holds i - j + 1 activations */
                    bool fits = type != PAIR_FB || i - j < I->kf[s];
                    if (!add_pair(I, R, pair_index(I, s, type, i, j), x, y, fits))
                        return false;
                }
    return true;
}

/* Memory before F_i plus m_b <= limit, in terms of the B_j and W_j (j < i)
 * that run after F_i (all other passes are fixed before or after it). When
 * B raises memory (m_w > m_b, full recompute) also after every B_i:
 * m_w + m_b #{F_i', i' > i, before B_i} + m_w #{W_j, j < i, after B_i}
 * <= limit. */
static void add_memory_rows(const inst *I, zb_rows *R) {
    const zb_costs *c = I->c;
    for (int s = 0; s < I->n; s++) {
        for (int i = 1; i < I->m; i++) {
            for (int j = 0; j < i; j++) {
                zb_row_add(R, col_o(I, pair_index(I, s, PAIR_FB, i, j)),
                        c->m_b[s] - c->m_w[s]);
                zb_row_add(R, col_o(I, pair_index(I, s, PAIR_FW, i, j)), c->m_w[s]);
            }
            zb_row_end(R, GLP_UP, I->limit - c->m_b[s]);
        }
        if (c->m_w[s] <= c->m_b[s]) continue;
        for (int i = 0; i < I->m; i++) {
            for (int i2 = i + 1; i2 < I->m; i2++)
                zb_row_add(R, col_o(I, pair_index(I, s, PAIR_FB, i2, i)), c->m_b[s]);
            for (int j = 0; j < i; j++)
                zb_row_add(R, col_o(I, pair_index(I, s, PAIR_BW, i, j)), c->m_w[s]);
            zb_row_end(R, GLP_UP, I->limit - c->m_w[s]);
        }
    }
}

/* o_ij <= o_(i-1)j and o_ij <= o_i(j+1) (X_i before Y_j implies the same
 * for the earlier X and the later Y), F/B <= F/W, B/W <= F/W. */
static void add_valid_rows(const inst *I, zb_rows *R) {
    for (int s = 0; s < I->n; s++)
        for (int i = 1; i < I->m; i++)
            for (int j = 0; j < i; j++) {
                for (int type = 0; type < 3; type++) {
                    int o = col_o(I, pair_index(I, s, type, i, j));
                    if (i - 1 > j)
                        zb_row2(R, o, 1, col_o(I, pair_index(I, s, type, i - 1, j)),
                             -1, GLP_UP, 0);
                    if (j + 1 < i)
                        zb_row2(R, o, 1, col_o(I, pair_index(I, s, type, i, j + 1)),
                             -1, GLP_UP, 0);
                }
                int fw = col_o(I, pair_index(I, s, PAIR_FW, i, j));
                zb_row2(R, col_o(I, pair_index(I, s, PAIR_FB, i, j)), 1, fw, -1, GLP_UP, 0);
                zb_row2(R, col_o(I, pair_index(I, s, PAIR_BW, i, j)), 1, fw, -1, GLP_UP, 0);
            }
}

/* Work a rank runs before pass (k, i): K + sum a_q o_q over the free pairs
 * that involve it. Adds the terms to the row being built with factor
 * `sign` and returns K. */
static double before_terms(const inst *I, zb_rows *R, int s, int k, int i,
                           double sign) {
    const zb_costs *c = I->c;
    double tf = c->t_f[s], tb = c->t_b[s], tw = c->t_w[s];
    double K = work_before(I, s, k, i);
    if (k == ZB_F) { /* B_j, W_j (j < i) before F_i unless o = 1 */
        K += i * (tb + tw);
        for (int j = 0; j < i; j++) {
            zb_row_add(R, col_o(I, pair_index(I, s, PAIR_FB, i, j)), -sign * tb);
            zb_row_add(R, col_o(I, pair_index(I, s, PAIR_FW, i, j)), -sign * tw);
        }
    } else if (k == ZB_B) { /* W_j (j < i) unless o = 1; F_i' (i' > i) if o */
        K += i * tw;
        for (int j = 0; j < i; j++)
            zb_row_add(R, col_o(I, pair_index(I, s, PAIR_BW, i, j)), -sign * tw);
        for (int i2 = i + 1; i2 < I->m; i2++)
            zb_row_add(R, col_o(I, pair_index(I, s, PAIR_FB, i2, i)), sign * tf);
    } else { /* F_i', B_i' (i' > i) before W_i if o = 1 */
        for (int i2 = i + 1; i2 < I->m; i2++) {
            zb_row_add(R, col_o(I, pair_index(I, s, PAIR_FW, i2, i)), sign * tf);
            zb_row_add(R, col_o(I, pair_index(I, s, PAIR_BW, i2, i)), sign * tb);
        }
    }
    return K;
}

/* A rank runs one pass at a time from its start S, so for every pass X:
 * E(X) >= S + (work before X) + t(X), and C >= E(X) + (work after X) - S. The pairwise big-M rows alone say little once the binaries are
 * fractional; these sums keep the relaxation honest (on p = 4, m = 8 with
 * a heavy last stage they close the root gap the pairwise rows leave). */
static void add_work_rows(const inst *I, zb_rows *R) {
    for (int s = 0; s < I->n; s++) {
        const zb_costs *c = I->c;
        double start = I->start[s];
        double total = I->m * (c->t_f[s] + c->t_b[s] + c->t_w[s]);
        for (int k = 0; k < 3; k++)
            for (int i = 0; i < I->m; i++) {
                int x = col_e(pid(I, s, k, i));
                double t = dur(I, s, k);
                zb_row_add(R, x, 1);
                double K = before_terms(I, R, s, k, i, -1.0);
                zb_row_end(R, GLP_LO, start + K + t);
                zb_row_add(R, col_c(I), 1);
                zb_row_add(R, x, -1);
                K = before_terms(I, R, s, k, i, 1.0);
                zb_row_end(R, GLP_LO, total - K - t - start);
            }
    }
}

static int ncols(const inst *I) { return I->npass + 1 + I->npair; }

/* End of rank s's first pass, F(s,0), fixed by the model. */
static double first_end(const inst *I, int s) {
    return I->start[s] + I->c->t_f[s];
}

/* Columns: E within its window (F(s,0) fixed at S_s + t_f), C within
 * [largest earliest span, H], binaries (fixed ones as fixed bounds);
 * objective min C. */
static void load_columns(const inst *I, glp_prob *P) {
    double tol = tol_of(I), clb = 0;
    glp_add_cols(P, ncols(I));
    for (int id = 0; id < I->npass; id++)
        glp_set_col_bnds(P, col_e(id), GLP_DB, I->es[id] - tol, I->lf[id] + tol);
    for (int s = 0; s < I->n; s++) {
        int f0 = pid(I, s, ZB_F, 0);
        glp_set_col_bnds(P, col_e(f0), GLP_FX, first_end(I, s), first_end(I, s));
    }
    clb = span_lower_bound(I);
    glp_set_col_bnds(P, col_c(I), GLP_DB, clb - tol, I->H + tol);
    glp_set_obj_coef(P, col_c(I), 1.0);
    for (int q = 0; q < I->npair; q++) {
        glp_set_col_kind(P, col_o(I, q), GLP_BV);
        if (I->fix[q] >= 0)
            glp_set_col_bnds(P, col_o(I, q), GLP_FX, I->fix[q], I->fix[q]);
    }
    glp_set_obj_dir(P, GLP_MIN);
}


/* ---- the warm start ---- */

/* A horizon every instance meets: one microbatch at a time through the
 * whole pipeline (each rank runs F_j B_j W_j in turn, peak m_b). */
static double serial_horizon(const inst *I) {
    double one = 0;
    for (int s = 0; s < I->n; s++) {
        one += I->c->t_f[s] + I->c->t_b[s] + I->c->t_w[s];
        if (s + 1 < I->n) one += 2 * comm(I, s);
    }
    return one * I->m;
}

/* The warm schedule as a column vector x[1..ncols] (end times from the
 * simulator, binaries from its order). *in_space is false if it breaks the
 * model's symmetry rules (then it cannot seed the solver). */
static zb_status warm_vector(const inst *I, const zb_schedule *w, double *x,
                             int *pos, bool *in_space, double *mk,
                             zb_err *err) {
    zb_sim_result res;
    zb_status st = zb_simulate(w, I->c, &res, err);
    if (st != ZB_OK) {
        zb_sim_result_free(&res);
        return st == ZB_ENOMEM ? st : zb_fail(err, ZB_EINPUT, "ilp: the warm "
                                              "schedule is invalid: %s", err->msg);
    }
    double peak = 0;
    for (int r = 0; r < w->p; r++) peak = maxd(peak, res.peak_mem[r]);
    *mk = res.max_span;
    *in_space = true;
    for (int r = 0; r < w->p; r++)
        for (int i = 0; i < w->len[r]; i++) {
            const zb_action *a = &w->acts[r][i];
            if (a->pass == ZB_BW) {
                *in_space = false;
                continue;
            }
            int id = pid(I, r, a->pass, a->mb);
            pos[id] = i;
            x[col_e(id)] = res.end[res.off[r] + i];
        }
    for (int s = 0; s < w->p; s++) /* equal up to rounding: use the bound */
        x[col_e(pid(I, s, ZB_F, 0))] = first_end(I, s);
    zb_sim_result_free(&res);
    if (peak > I->limit + 1e-9 * maxd(1, I->limit))
        return zb_fail(err, ZB_EINPUT, "ilp: the warm schedule peaks at %g, "
                       "over the memory limit %g", peak, I->limit);
    for (int s = 0; s < I->n && *in_space; s++)
        for (int j = 0; j < I->m; j++) {
            int f = pos[pid(I, s, ZB_F, j)], b = pos[pid(I, s, ZB_B, j)],
                wj = pos[pid(I, s, ZB_W, j)];
            if (!(f < b && b < wj)) *in_space = false;
            for (int k = 0; k < 3 && j > 0; k++)
                if (pos[pid(I, s, k, j)] < pos[pid(I, s, k, j - 1)]) *in_space = false;
        }
    x[col_c(I)] = *mk;
    for (int s = 0; s < I->n; s++)
        for (int type = 0; type < 3; type++)
            for (int i = 1; i < I->m; i++)
                for (int j = 0; j < i; j++) {
                    int a, b;
                    pair_passes(I, s, type, i, j, &a, &b);
                    x[col_o(I, pair_index(I, s, type, i, j))] = pos[a] < pos[b];
                }
    return ZB_OK;
}

/* Does x meet every row, window and fixed binary? (A failure is a bug in
 * this file: the warm schedule is a feasible point of the model.) */
static bool satisfies(const inst *I, const zb_rows *R, const double *x) {
    double tol = 1e-7 * maxd(1.0, I->H);
    double *act = calloc((size_t)R->nrows + 1, sizeof(double));
    if (!act) return false;
    for (int k = 1; k <= R->nnz; k++) act[R->ia[k] - 1] += R->ar[k] * x[R->ja[k]];
    bool ok = true;
    for (int i = 0; i < R->nrows && ok; i++)
        ok = R->type[i] == GLP_LO ? act[i] >= R->rhs[i] - tol
                                  : act[i] <= R->rhs[i] + tol;
    for (int id = 0; id < I->npass && ok; id++)
        ok = x[col_e(id)] >= I->es[id] - tol && x[col_e(id)] <= I->lf[id] + tol;
    for (int q = 0; q < I->npair && ok; q++)
        ok = I->fix[q] < 0 || x[col_o(I, q)] == I->fix[q];
    free(act);
    return ok;
}

/* ---- back to a schedule ---- */

typedef struct {
    double e;
    int k, j;
} ended;

static int by_end(const void *a, const void *b) {
    const ended *x = a, *y = b;
    if (x->e != y->e) return x->e < y->e ? -1 : 1;
    if (x->k != y->k) return x->k - y->k;
    return x->j - y->j;
}

/* Each rank's passes sorted by their end time in the MIP solution. */
static zb_status extract(const inst *I, glp_prob *P, const char *name,
                         zb_schedule *out, zb_err *err) {
    ended *row = zb_calloc((size_t)3 * I->m, sizeof *row, err);
    if (!row) return ZB_ENOMEM;
    zb_status st = zb_schedule_init(out, name, I->n, I->m, 1, ZB_PLACE_LOOP,
                                    3 * I->m, err);
    for (int s = 0; s < I->n && st == ZB_OK; s++) {
        int q = 0;
        for (int k = 0; k < 3; k++)
            for (int j = 0; j < I->m; j++)
                row[q++] = (ended){glp_mip_col_val(P, col_e(pid(I, s, k, j))), k, j};
        qsort(row, (size_t)q, sizeof *row, by_end);
        for (int i = 0; i < q && st == ZB_OK; i++)
            st = zb_schedule_push(out, s, (zb_pass)row[i].k, row[i].j, 0, err);
    }
    free(row);
    if (st != ZB_OK) zb_schedule_free(out);
    return st;
}

/* ---- the entry point ---- */

static void inst_free(inst *I) {
    free(I->t);
    free(I->es);
    free(I->lf);
    free(I->fix);
    free(I->start);
    free(I->kf);
}

/* Larger instances are not modelled (3 p m (m-1) / 2 binaries: p = 16,
 * m = 64 already has 96 768); the warm schedule comes back with the
 * dependency and rank-work bound. */
#define MAX_MODEL_PASSES 3072

static zb_status inst_init(inst *I, int p, int m, const zb_costs *c,
                           double limit, zb_err *err) {
    memset(I, 0, sizeof *I);
    I->n = p, I->m = m, I->c = c, I->limit = limit;
    I->npass = 3 * p * m; /* p, m checked by zb_greedy_check */
    I->npair = I->npass <= MAX_MODEL_PASSES ? 3 * p * (m * (m - 1) / 2) : 0;
    I->t = zb_calloc((size_t)I->npass, sizeof(double), err);
    I->es = zb_calloc((size_t)I->npass, sizeof(double), err);
    I->lf = zb_calloc((size_t)I->npass, sizeof(double), err);
    I->fix = zb_calloc((size_t)I->npair + 1, 1, err);
    I->start = zb_calloc((size_t)p, sizeof(double), err);
    I->kf = zb_calloc((size_t)p, sizeof(int), err);
    if (!I->t || !I->es || !I->lf || !I->fix || !I->start || !I->kf) {
        inst_free(I);
        return ZB_ENOMEM;
    }
    for (int s = 0; s < p; s++)
        for (int k = 0; k < 3; k++)
            for (int j = 0; j < m; j++) I->t[pid(I, s, k, j)] = dur(I, s, k);
    for (int s = 1; s < p; s++)
        I->start[s] = I->start[s - 1] + c->t_f[s - 1] + c->t_comm[s - 1];
    for (int s = 0; s < p; s++) {
        double room = limit + zb_greedy_mem_tol(limit);
        double k = c->m_b[s] > 0 ? floor(room / c->m_b[s]) : m;
        I->kf[s] = k >= m ? m : k < 1 ? 1 : (int)k;
    }
    return ZB_OK;
}

static zb_status check_args(int p, int m, const zb_costs *c, double limit,
                            const zb_schedule *warm, double mip_gap,
                            zb_err *err) {
    ZB_TRY(zb_greedy_check(p, m, 1, ZB_PLACE_LOOP, c, limit, "ilp", err));
    if (!warm)
        return zb_fail(err, ZB_EINPUT, "ilp: a warm-start schedule is required");
    if (warm->p != p || warm->m != m || warm->v != 1 ||
        warm->placement != ZB_PLACE_LOOP)
        return zb_fail(err, ZB_EINPUT, "ilp: the warm schedule must be LOOP "
                       "with v = 1, p = %d, m = %d (got p=%d m=%d v=%d)", p, m,
                       warm->p, warm->m, warm->v);
    if (!(mip_gap >= 0))
        return zb_fail(err, ZB_EINPUT, "ilp: mip_gap must be >= 0 (got %g)",
                       mip_gap);
    return ZB_OK;
}

/* Build the rows; false if out of memory or the windows are empty. */
static zb_status build_rows(inst *I, zb_rows *R, zb_err *err) {
    if (!zb_rows_init(R, 2 * I->m + 4)) return zb_fail(err, ZB_ENOMEM, "ilp: out of memory");
    add_time_rows(I, R);
    if (!add_order_rows(I, R))
        return zb_fail(err, ZB_ERUNTIME, "ilp: internal error: empty time "
                       "windows below the horizon %g", I->H);
    add_memory_rows(I, R);
    add_valid_rows(I, R);
    add_work_rows(I, R);
    if (R->oom) return zb_fail(err, ZB_ENOMEM, "ilp: out of memory building rows");
    return ZB_OK;
}

/* The MIP's schedule if it simulates valid and no worse than the warm one;
 * else a copy of the warm schedule. *own says which. */
static zb_status pick_result(const inst *I, glp_prob *P, const zb_ilp_solve_out *o,
                             const zb_schedule *warm, double warm_mk,
                             zb_schedule *out, double *mk, bool *own,
                             zb_err *err) {
    *own = false;
    if (o->status == GLP_OPT || o->status == GLP_FEAS) {
        ZB_TRY(extract(I, P, warm->name, out, err));
        double peak;
        zb_err ignored;
        zb_status st = zb_simulate_fast(out, I->c, NULL, mk, &peak, &ignored);
        if (st == ZB_ENOMEM) {
            zb_schedule_free(out);
            return zb_fail(err, st, "%s", ignored.msg);
        }
        *own = st == ZB_OK && peak <= I->limit + 1e-9 * maxd(1, I->limit) &&
               *mk <= warm_mk + 1e-9 * maxd(1, warm_mk);
        if (*own) return ZB_OK;
        zb_schedule_free(out);
    }
    *mk = warm_mk;
    return zb_schedule_copy(out, warm, err);
}

/* Too large to model (MAX_MODEL_PASSES): the warm schedule, with the
 * dependency and rank-work bound. */
static zb_status too_big(inst *I, const zb_schedule *warm, double mip_gap,
                         zb_schedule *out, zb_sched_report *rep, zb_err *err) {
    double mk, peak;
    zb_status st = zb_simulate_fast(warm, I->c, NULL, &mk, &peak, err);
    if (st != ZB_OK)
        return st == ZB_ENOMEM ? st : zb_fail(err, ZB_EINPUT, "ilp: the warm "
                                              "schedule is invalid: %s", err->msg);
    if (peak > I->limit + 1e-9 * maxd(1, I->limit))
        return zb_fail(err, ZB_EINPUT, "ilp: the warm schedule peaks at %g, "
                       "over the memory limit %g", peak, I->limit);
    earliest_ends(I);
    double bound = span_lower_bound(I);
    ZB_TRY(zb_schedule_copy(out, warm, err));
    if (rep) {
        snprintf(rep->solver, sizeof rep->solver, "ilp-warm");
        rep->max_span = mk;
        rep->bound = bound < mk ? bound : mk;
        rep->gap = mk > 0 ? (mk - rep->bound) / mk : 0;
        rep->optimal = rep->gap <= mip_gap;
    }
    return ZB_OK;
}

/* Build, solve and read back the model; out and rep as zb_ilp_schedule. */
static zb_status run_model(inst *I, const zb_schedule *warm, double deadline,
                           double mip_gap, zb_schedule *out,
                           zb_sched_report *rep, zb_err *err) {
    zb_rows R = {0};
    glp_prob *P = NULL;
    double *x = zb_calloc((size_t)ncols(I) + 1, sizeof(double), err);
    int *pos = zb_calloc((size_t)I->npass, sizeof(int), err);
    zb_status st = x && pos ? ZB_OK : ZB_ENOMEM;
    bool in_space = false;
    double warm_mk = 0;
    if (st == ZB_OK) st = warm_vector(I, warm, x, pos, &in_space, &warm_mk, err);
    bool proven = false; /* the warm schedule meets the span bound */
    if (st == ZB_OK) {
        I->H = in_space ? warm_mk : maxd(warm_mk, serial_horizon(I));
        earliest_ends(I);
        proven = warm_mk <= span_lower_bound(I) + tol_of(I);
    }
    if (st == ZB_OK && proven) {
        free(x);
        free(pos);
        st = zb_schedule_copy(out, warm, err);
        if (st == ZB_OK && rep) {
            zb_ilp_solve_out none = {.lp_ret = 0, .mip_ret = -1, .status = GLP_UNDEF};
            zb_ilp_fill_report(&none, warm_mk, false, mip_gap, span_lower_bound(I), rep);
        }
        return st;
    }
    if (st == ZB_OK) {
        latest_ends(I);
        st = build_rows(I, &R, err);
    }
    if (st == ZB_OK && in_space && !satisfies(I, &R, x))
        st = zb_fail(err, ZB_ERUNTIME, "ilp: internal error: the warm schedule "
                     "is not a feasible point of the model");
    zb_ilp_solve_out o;
    if (st == ZB_OK) {
        P = glp_create_prob();
        load_columns(I, P);
        zb_rows_load(&R, P);
        zb_ilp_solve(P, in_space ? x : NULL, deadline, mip_gap, &o);
        if (o.lp_ret != 0 && o.lp_ret != GLP_ETMLIM)
            st = zb_fail(err, ZB_ERUNTIME, "ilp: glp_simplex failed (code %d)",
                         o.lp_ret);
        else if (o.mip_ret != 0 && o.mip_ret != GLP_ETMLIM &&
                 o.mip_ret != GLP_EMIPGAP && o.lp_ret == 0)
            st = zb_fail(err, ZB_ERUNTIME, "ilp: glp_intopt failed (code %d, "
                         "status %d)", o.mip_ret, o.status);
    }
    double mk = 0;
    bool own = false;
    if (st == ZB_OK) st = pick_result(I, P, &o, warm, warm_mk, out, &mk, &own, err);
    if (st == ZB_OK && rep) zb_ilp_fill_report(&o, mk, own, mip_gap, span_lower_bound(I), rep);
    if (P) glp_delete_prob(P);
    zb_rows_free(&R);
    free(x);
    free(pos);
    return st;
}

zb_status zb_ilp_schedule(int p, int m, const zb_costs *c, double mem_limit,
                          const zb_schedule *warm, double time_limit_s,
                          double mip_gap, zb_schedule *out,
                          zb_sched_report *rep, zb_err *err) {
    double t0 = zb_ilp_now_s();
    double deadline = time_limit_s > 0 ? t0 + time_limit_s : INFINITY;
    memset(out, 0, sizeof *out);
    if (rep) memset(rep, 0, sizeof *rep);
    ZB_TRY(check_args(p, m, c, mem_limit, warm, mip_gap, err));
    inst I;
    ZB_TRY(inst_init(&I, p, m, c, mem_limit, err));
    zb_status st = I.npass > MAX_MODEL_PASSES
                       ? too_big(&I, warm, mip_gap, out, rep, err)
                       : run_model(&I, warm, deadline, mip_gap, out, rep, err);
    if (st == ZB_OK && rep) rep->solve_s = zb_ilp_now_s() - t0;
    inst_free(&I);
    return st;
}
