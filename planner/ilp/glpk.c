/* glpk.c - see ilp/glpk.h. */
#include "planner/ilp/glpk.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double maxd(double a, double b) { return a > b ? a : b; }

/* ---- rows: a builder that merges duplicate columns (GLPK aborts on them) */


bool zb_rows_init(zb_rows *R, int max_row_len) {
    memset(R, 0, sizeof *R);
    R->cur_cap = max_row_len;
    R->cur_col = malloc((size_t)max_row_len * sizeof(int));
    R->cur_val = malloc((size_t)max_row_len * sizeof(double));
    return R->cur_col && R->cur_val;
}

void zb_rows_free(zb_rows *R) {
    free(R->cur_col);
    free(R->cur_val);
    free(R->type);
    free(R->rhs);
    free(R->ia);
    free(R->ja);
    free(R->ar);
}

void zb_row_add(zb_rows *R, int col, double val) {
    for (int i = 0; i < R->cur; i++)
        if (R->cur_col[i] == col) {
            R->cur_val[i] += val;
            return;
        }
    if (R->cur == R->cur_cap) { /* longer than rows_init was told */
        R->oom = true;
        return;
    }
    R->cur_col[R->cur] = col;
    R->cur_val[R->cur++] = val;
}

/* Make *p hold n elements of size elt (keeps *p on failure). */
static bool resize(void **p, int n, size_t elt) {
    void *q = realloc(*p, (size_t)n * elt);
    if (!q) return false;
    *p = q;
    return true;
}

static bool rows_reserve(zb_rows *R, int nrows, int nnz) {
    if (nrows > R->cap_rows) {
        int nc = R->cap_rows ? 2 * R->cap_rows : 1024;
        while (nc < nrows) nc *= 2;
        if (!resize((void **)&R->type, nc, sizeof(int)) ||
            !resize((void **)&R->rhs, nc, sizeof(double)))
            return false;
        R->cap_rows = nc;
    }
    if (nnz > R->cap_nnz) {
        int nc = R->cap_nnz ? 2 * R->cap_nnz : 4096;
        while (nc < nnz) nc *= 2;
        if (!resize((void **)&R->ia, nc, sizeof(int)) ||
            !resize((void **)&R->ja, nc, sizeof(int)) ||
            !resize((void **)&R->ar, nc, sizeof(double)))
            return false;
        R->cap_nnz = nc;
    }
    return true;
}

/* Close the row being built: sum(entries) >= rhs (GLP_LO) or <= rhs
 * (GLP_UP). Zero coefficients are dropped, and so is a row left empty
 * (callers only build those when the constant part holds). */
void zb_row_end(zb_rows *R, int type, double rhs) {
    int n = 0;
    for (int i = 0; i < R->cur; i++)
        if (R->cur_val[i] != 0) n++;
    if (n > 0 && !R->oom && !rows_reserve(R, R->nrows + 1, R->nnz + n + 1))
        R->oom = true;
    if (n > 0 && !R->oom) {
        R->type[R->nrows] = type;
        R->rhs[R->nrows] = rhs;
        R->nrows++;
        for (int i = 0; i < R->cur; i++) {
            if (R->cur_val[i] == 0) continue;
            R->nnz++;
            R->ia[R->nnz] = R->nrows;
            R->ja[R->nnz] = R->cur_col[i];
            R->ar[R->nnz] = R->cur_val[i];
        }
    }
    R->cur = 0;
}

/* a E(x) - E(y) >= rhs style two-term row */
void zb_row2(zb_rows *R, int c1, double v1, int c2, double v2, int type,
                 double rhs) {
    zb_row_add(R, c1, v1);
    zb_row_add(R, c2, v2);
    zb_row_end(R, type, rhs);
}

void zb_rows_load(const zb_rows *R, glp_prob *P) {
    glp_add_rows(P, R->nrows);
    for (int i = 0; i < R->nrows; i++)
        glp_set_row_bnds(P, i + 1, R->type[i], R->rhs[i], R->rhs[i]);
    glp_load_matrix(P, R->nnz, R->ia, R->ja, R->ar);
}

/* ---- solving ---- */

typedef struct {
    const double *warm;   /* column vector offered at the first GLP_IHEUR */
    bool offered, accepted;
    double bound;         /* best lower bound seen in the tree */
} tree_info;

static void on_tree(glp_tree *T, void *info) {
    tree_info *d = info;
    if (glp_ios_reason(T) == GLP_IHEUR && d->warm && !d->offered) {
        d->offered = true;
        d->accepted = glp_ios_heur_sol(T, d->warm) == 0;
    }
    int best = glp_ios_best_node(T);
    if (best) d->bound = maxd(d->bound, glp_ios_node_bound(T, best));
}

double zb_ilp_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int ms_left(double deadline) {
    if (isinf(deadline)) return INT_MAX;
    double ms = (deadline - zb_ilp_now_s()) * 1e3;
    return ms < 1 ? 1 : ms > INT_MAX ? INT_MAX : (int)ms;
}


/* LP relaxation first (presolve stays off so the callback sees our
 * columns), then branch and bound seeded with the warm vector. */
void zb_ilp_solve(glp_prob *P, const double *warm, double deadline,
                  double mip_gap, zb_ilp_solve_out *o) {
    /* msg_lev below does not cover every message: glp_adv_basis, which
     * the branch and bound may call, prints "Constructing initial
     * basis..." to stdout regardless, before zbplan's JSON. Terminal
     * output is off for the whole process. */
    glp_term_out(GLP_OFF);
    glp_smcp sp;
    glp_init_smcp(&sp);
    sp.msg_lev = GLP_MSG_OFF;
    sp.tm_lim = ms_left(deadline);
    memset(o, 0, sizeof *o);
    o->status = GLP_UNDEF;
    o->mip_ret = -1;
    /* times are seconds and memory bytes: without scaling the rows span
     * some 12 orders of magnitude and the simplex fails on real models */
    glp_scale_prob(P, GLP_SF_AUTO);
    o->lp_ret = glp_simplex(P, &sp);
    if (o->lp_ret != 0 || glp_get_status(P) != GLP_OPT) return;
    o->root = glp_get_obj_val(P);
    tree_info ti = {warm, false, false, o->root};
    glp_iocp ip;
    glp_init_iocp(&ip);
    ip.msg_lev = GLP_MSG_OFF;
    ip.presolve = GLP_OFF;
    ip.tm_lim = ms_left(deadline);
    ip.mip_gap = mip_gap;
    ip.cb_func = on_tree;
    ip.cb_info = &ti;
    /* Measured on p = 4, m = 8 with tight memory: branching on the first
     * fractional binary (stage by stage, early microbatches first) with
     * Gomory and MIR cuts proves in about a second what the default
     * Driebeck-Tomlin branching leaves at a 2-15 % gap after 10 s. */
    ip.br_tech = GLP_BR_FFV;
    ip.gmi_cuts = GLP_ON;
    ip.mir_cuts = GLP_ON;
    o->mip_ret = glp_intopt(P, &ip);
    o->status = glp_mip_status(P);
    if (o->status == GLP_OPT || o->status == GLP_FEAS) o->obj = glp_mip_obj_val(P);
    o->bound = ti.bound;
    o->accepted = ti.accepted;
}

/* mk is the returned schedule's simulated longest span; it is called
 * optimal only if the solver finished and mk is within mip_gap of the
 * proven bound (a fallback to the warm schedule may not be). */
void zb_ilp_fill_report(const zb_ilp_solve_out *o, double mk, bool own,
                        double mip_gap, double lb, zb_sched_report *rep) {
    snprintf(rep->solver, sizeof rep->solver, "%s", own ? "ilp" : "ilp-warm");
    rep->max_span = mk;
    bool done = o->mip_ret == 0 && o->status == GLP_OPT;
    double bound = maxd(lb, maxd(o->root, o->bound));
    if (done) bound = maxd(bound, o->obj); /* the proven optimum of C */
    if (bound > mk) bound = mk; /* C >= simulated span; rounding only */
    rep->bound = bound;
    rep->gap = mk > 0 ? maxd(0, (mk - bound) / mk) : 0;
    if (rep->gap < 1e-12) rep->gap = 0; /* rounding of an exact bound */
    rep->optimal = (done || o->mip_ret == GLP_EMIPGAP ||
                    mk - bound <= 1e-9 * maxd(1, mk)) &&
                   rep->gap <= mip_gap + 1e-9;
    rep->timed_out = o->lp_ret == GLP_ETMLIM || o->mip_ret == GLP_ETMLIM;
}

