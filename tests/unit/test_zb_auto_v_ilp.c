/* test_zb_auto_v_ilp.c - zb-auto-v within 2 % of the V ILP's proven
 * optimum (issue 33, point 3), without running GLPK.
 *
 * tests/ilp/v_optima.txt holds small seeded instances (p 2..3, m 2..4,
 * every limit from one microbatch's need to p M_B in steps of half a chunk
 * activation: the sweep test_zb_auto_v_ref.c runs under make bench), each
 * solved once by the V ILP with a generous time limit (written by
 * tests/ilp/v_optima.py; README there), with zb-auto-v's span when the
 * fixture was written. Here zb_auto_v runs on every case and must be
 * - within the limit;
 * - never longer than it was then (so a change can only shorten orders);
 * - where the ILP proved its optimum, at most 2 % above it, and never
 *   below the ILP's proven bound (a check of the fixture and the
 *   simulator as much as of the heuristic).
 * Deterministic: nothing depends on how fast this machine runs GLPK.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/zb_sim.h"
#include "planner/auto/auto_v.h"

#define FIXTURE "tests/ilp/v_optima.txt"

typedef struct {
    int inst, p, m, limit, proven;
    double f, b, w, comm, mw, before, ilp, bound;
} icase;

/* Every case of the fixture (*n of them); the caller frees. */
static icase *read_fixture(int *n) {
    FILE *f = fopen(FIXTURE, "r");
    ck_assert_msg(f != NULL, "cannot open %s (run from the repository root)", FIXTURE);
    icase *all = NULL;
    int cap = 0, line = 0;
    char buf[512];
    *n = 0;
    while (fgets(buf, sizeof buf, f)) {
        line++;
        if (buf[0] == '#' || buf[0] == '\n') continue;
        if (*n == cap) {
            cap = cap ? 2 * cap : 128;
            all = realloc(all, (size_t)cap * sizeof *all);
            ck_assert_ptr_nonnull(all);
        }
        icase *v = &all[*n];
        int got = sscanf(buf, "%d %d %d %lf %lf %lf %lf %lf %d %lf %lf %lf %d", &v->inst,
                         &v->p, &v->m, &v->f, &v->b, &v->w, &v->comm, &v->mw, &v->limit,
                         &v->before, &v->ilp, &v->bound, &v->proven);
        ck_assert_msg(got == 13, "%s:%d: expected 13 numbers, got %d", FIXTURE, line, got);
        (*n)++;
    }
    ck_assert_int_eq(ferror(f), 0);
    fclose(f);
    return all;
}

/* zb-auto-v on case v: its span, *peak its highest rank peak. */
static double auto_v_span(const icase *v, double *peak) {
    zb_costs c;
    zb_schedule s;
    zb_err err;
    double span;
    /* per-rank costs over the rank's two chunks, as `zbplan sim` splits them */
    ck_assert_int_eq(zb_costs_uniform(&c, 2 * v->p, v->f / 2, v->b / 2, v->w / 2, v->comm,
                                      500, v->mw / 2, &err), ZB_OK);
    ck_assert_msg(zb_auto_v(v->p, v->m, &c, v->limit, &s, &err) == ZB_OK, "%s", err.msg);
    ck_assert_int_eq(zb_simulate_fast(&s, &c, NULL, &span, peak, &err), ZB_OK);
    zb_schedule_free(&s);
    zb_costs_free(&c);
    return span;
}

START_TEST(within_2pct_of_proven_optimum) {
    int n, proven = 0, over = 0;
    double worst = 0;
    icase *all = read_fixture(&n);
    ck_assert_int_eq(n, 66); /* 10 instances, 5 or 9 limits each */
    for (int i = 0; i < n; i++) {
        const icase *v = &all[i];
        double peak, ours = auto_v_span(v, &peak);
        const double tol = 1e-9 * ours; /* the fixture prints 15 digits */
        ck_assert_msg(peak <= v->limit + 1e-9 * v->limit, "instance %d limit %d: peak %g",
                      v->inst, v->limit, peak);
        ck_assert_msg(ours <= v->before + tol, "instance %d p %d m %d limit %d: zb-auto-v "
                      "%.6f, longer than its %.6f when the fixture was written", v->inst,
                      v->p, v->m, v->limit, ours, v->before);
        if (!v->proven) continue;
        proven++;
        ck_assert_msg(ours >= v->bound - tol, "instance %d limit %d: zb-auto-v %.6f below "
                      "the ILP's proven bound %.6f", v->inst, v->limit, ours, v->bound);
        if (ours > 1.02 * v->ilp) /* every such case named, then one failure */
            printf("instance %d p %d m %d limit %d: zb-auto-v %.1f, the ILP's proven "
                   "optimum %.1f (+%.2f %%)\n", v->inst, v->p, v->m, v->limit, ours, v->ilp,
                   100 * (ours / v->ilp - 1)), over++;
        if (ours / v->ilp - 1 > worst) worst = ours / v->ilp - 1;
    }
    printf("zb_auto_v_ilp: %d cases, %d proven, worst +%.2f %%\n", n, proven, 100 * worst);
    ck_assert_msg(over == 0, "%d proven cases more than 2 %% above the optimum", over);
    ck_assert_int_ge(proven, 60); /* the fixture holds proofs, not hopes */
    free(all);
}
END_TEST

int main(void) {
    Suite *su = suite_create("zb_auto_v_ilp");
    TCase *tc = tcase_create("zb_auto_v_ilp");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, within_2pct_of_proven_optimum);
    suite_add_tcase(su, tc);
    SRunner *sr = srunner_create(su);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
