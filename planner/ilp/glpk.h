/* glpk.h - what the schedule MIPs (ilp/ilp_loop.c: LOOP, ilp/ilp_v.c: V) share
 * (internal to the planner): a row builder that merges duplicate columns
 * (GLPK aborts the process on them), solving with a warm start offered at
 * the first heuristic callback, and the solver report.
 *
 * Rows are sum(entries) >= rhs (GLP_LO) or <= rhs (GLP_UP), columns
 * 1-based. zb_rows_init gets the longest row's length; a longer row, or an
 * allocation failure, sets oom (check it after building).
 */
#ifndef ZB_ILP_GLPK_H
#define ZB_ILP_GLPK_H

#include <glpk.h>
#include <stdbool.h>

#include "planner/schedules/generator.h"

typedef struct {
    int nrows, cap_rows;
    int *type;                /* GLP_LO or GLP_UP */
    double *rhs;
    int nnz, cap_nnz;
    int *ia, *ja;             /* 1-based triplets, index 0 unused */
    double *ar;
    int cur, cur_cap;         /* entries of the row being built */
    int *cur_col;
    double *cur_val;
    bool oom;
} zb_rows;

bool zb_rows_init(zb_rows *R, int max_row_len);
void zb_rows_free(zb_rows *R);
/* Add col * val to the row being built (merged with an earlier entry). */
void zb_row_add(zb_rows *R, int col, double val);
/* Close the row being built; zero coefficients and empty rows are dropped. */
void zb_row_end(zb_rows *R, int type, double rhs);
/* v1 x(c1) + v2 x(c2) (type) rhs. */
void zb_row2(zb_rows *R, int c1, double v1, int c2, double v2, int type,
             double rhs);
/* Add the rows to P (its columns must exist). */
void zb_rows_load(const zb_rows *R, glp_prob *P);

typedef struct {
    int lp_ret, mip_ret, status;  /* glp_simplex, glp_intopt, glp_mip_status */
    double root, bound, obj;      /* LP relaxation, best bound, MIP C */
    bool accepted;                /* GLPK took the warm solution */
} zb_ilp_solve_out;

/* LP relaxation (glp_simplex), then branch and bound with presolve off so
 * the callback offers `warm` (a column vector x[1..ncols], or NULL) at the
 * first GLP_IHEUR; deadline from zb_ilp_now_s (INFINITY: none). Turns
 * GLPK's terminal output off for the process (glp_term_out). */
void zb_ilp_solve(glp_prob *P, const double *warm, double deadline,
                  double mip_gap, zb_ilp_solve_out *o);
double zb_ilp_now_s(void);

/* Fill rep for a returned schedule of simulated longest span mk (own: the
 * MIP's schedule, else the warm one); lb: a lower bound known without the
 * solver. Optimal only if proven within mip_gap of mk. */
void zb_ilp_fill_report(const zb_ilp_solve_out *o, double mk, bool own,
                        double mip_gap, double lb, zb_sched_report *rep);

#endif
