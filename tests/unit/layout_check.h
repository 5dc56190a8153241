/* layout_check.h - for the layout-equivalence tests (test_runtime.c,
 * test_world_large.c): every rank's shard of the final parameters mapped
 * onto the single-rank run's full tensors (stage_params.h) and compared
 * element by element, within tol x the tensor's largest magnitude (so
 * near-zero elements do not count for more than they weigh), and every
 * element of the full model covered by some rank. Check assertions; for
 * inclusion by one test file each (static functions).
 */
#ifndef ZB_TEST_LAYOUT_CHECK_H
#define ZB_TEST_LAYOUT_CHECK_H

#include <check.h>
#include <math.h>
#include <stdlib.h>

#include "common/zb_plan.h"
#include "executor/base.h"
#include "executor/stage/stage_params.h"

/* scale[j] = largest |x| of full tensor j of ref (table rt). */
static double *zb_lc_scales(const zb_ptable *rt, const float *ref) {
    double *sc = calloc((size_t)rt->n, sizeof *sc);
    ck_assert_ptr_nonnull(sc);
    for (int j = 0; j < rt->n; j++)
        for (size_t i = 0; i < (size_t)rt->t[j].rows * rt->t[j].cols; i++)
            sc[j] = fmax(sc[j], fabs(ref[rt->t[j].off + i]));
    return sc;
}

/* Rank r's shards against ref; marks the full elements it covers. */
static void zb_lc_rank(const zb_plan *p, const zb_run_result *res, int r,
                       const zb_ptable *rt, const float *ref, const double *sc,
                       double tol, unsigned char *covered, const char *what) {
    int pr, dr, tr;
    zb_err err;
    zb_ptable pt;
    zb_plan_coords(p, r, &pr, &dr, &tr);
    ck_assert_msg(zb_ptable_build(&pt, p, pr, tr, &err) == ZB_OK, "%s", err.msg);
    ck_assert_uint_eq(pt.floats, res->n_params[r]);
    for (int j = 0; j < pt.n; j++) {
        const zb_ptensor *t = &pt.t[j];
        int rj = zb_ptable_find(rt, t->layer, t->id, false);
        ck_assert_msg(rj >= 0, "%s: rank %d tensor %s not in the reference",
                      what, r, t->name);
        const zb_ptensor *u = &rt->t[rj];
        ck_assert_int_eq(t->full_rows, u->rows);
        ck_assert_int_eq(t->full_cols, u->cols);
        for (size_t i = 0; i < (size_t)t->rows * t->cols; i++) {
            size_t fi = zb_ptable_full_index(&pt, t, i);
            if (fi == ZB_PTABLE_PAD) continue; /* vocabulary padding */
            double got = res->params[r][t->off + i];
            double want = ref[u->off + fi];
            covered[u->off + fi] = 1;
            ck_assert_msg(fabs(got - want) <= tol * sc[rj],
                          "%s: rank %d %s[%zu] = %.9g, single rank %.9g", what,
                          r, t->name, fi, got, want);
        }
    }
    zb_ptable_free(&pt);
}

/* All ranks of res (plan p) against the single-rank run ref_res of
 * ref_plan (kept parameters). */
static void zb_lc_check_params(const zb_plan *ref_plan,
                               const zb_run_result *ref_res, const zb_plan *p,
                               const zb_run_result *res, double tol,
                               const char *what) {
    zb_err err;
    zb_ptable rt;
    const float *ref = ref_res->params[0];
    ck_assert_msg(zb_ptable_build(&rt, ref_plan, 0, 0, &err) == ZB_OK, "%s", err.msg);
    ck_assert_uint_eq(rt.floats, ref_res->n_params[0]);
    double *sc = zb_lc_scales(&rt, ref);
    unsigned char *covered = calloc(rt.floats, 1);
    ck_assert_ptr_nonnull(covered);
    for (int r = 0; r < res->world; r++)
        zb_lc_rank(p, res, r, &rt, ref, sc, tol, covered, what);
    for (size_t i = 0; i < rt.floats; i++)
        ck_assert_msg(covered[i], "%s: parameter %zu of the full model is on "
                      "no rank", what, i);
    free(covered);
    free(sc);
    zb_ptable_free(&rt);
}

#endif
