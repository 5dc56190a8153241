/* test_zb_auto_v_authors.c - zb-auto-v never longer than the Zero Bubble
 * authors' v_auto_schedule at equal memory (issue 33, point 3).
 *
 * tests/authors/vauto_sweep.txt holds, for every case of the sweep of
 * tests/bench/vs_authors_v.py (VAUTO_SWEEP=1, seeds 1 and 2: p 3..4,
 * m p..3p, integer costs, limits p+1..2p chunk activations), the span
 * zb's simulator gives the authors' order (written by
 * tests/bench/vauto_fixture.py from their code; README there). Here
 * zb_auto_v runs at the same limit on the same costs and must be no longer
 * and within the limit. Deterministic (integer costs, fixed seeds), no
 * timing. By default a subset: the four cases zb-auto-v lost before it
 * tried the authors' framework (auto/vauto.h) and every SUBSET_STEP-th
 * case; ZB_VAUTO_SWEEP=1 runs all (make bench).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/unit/auto_v_cases.h"

#define FIXTURE "tests/authors/vauto_sweep.txt"
#define SUBSET_STEP 8

typedef struct {
    int seed, inst, p, m, f, b, w, comm, mb, mw, limit;
    double span;
} vcase;

/* The cases zb-auto-v lost by up to 1.81 % (seed, instance, limit). */
static const int former_losses[][3] = {{1, 8, 2500}, {1, 14, 3500}, {1, 17, 3500},
                                       {2, 14, 3500}};

static int is_former_loss(const vcase *v) {
    for (size_t i = 0; i < sizeof former_losses / sizeof former_losses[0]; i++)
        if (v->seed == former_losses[i][0] && v->inst == former_losses[i][1] &&
            v->limit == former_losses[i][2])
            return 1;
    return 0;
}

/* One line of the fixture: 11 integers and the authors' span. */
static void parse_case(const char *line, const char *path, int lineno, void *rec) {
    vcase *v = rec;
    int got = sscanf(line, "%d %d %d %d %d %d %d %d %d %d %d %lf", &v->seed, &v->inst, &v->p,
                     &v->m, &v->f, &v->b, &v->w, &v->comm, &v->mb, &v->mw, &v->limit,
                     &v->span);
    ck_assert_msg(got == 12, "%s:%d: expected 12 numbers, got %d", path, lineno, got);
}

static vcase *read_fixture(int *n) { return read_cases(FIXTURE, sizeof(vcase), parse_case, n); }

/* zb-auto-v on case v: its span, *peak its highest rank peak. */
static double auto_v_span(const vcase *v, double *peak) {
    return auto_v_span_uniform(v->p, v->m, v->f, v->b, v->w, v->comm, v->mb, v->mw, v->limit,
                               peak);
}

START_TEST(never_longer_than_authors) {
    int n, run = 0, losses_seen = 0;
    vcase *all = read_fixture(&n);
    ck_assert_int_ge(n, 200); /* the whole sweep: 215 cases */
    int every = getenv("ZB_VAUTO_SWEEP") != NULL;
    for (int i = 0; i < n; i++) {
        const vcase *v = &all[i];
        int former = is_former_loss(v);
        losses_seen += former;
        if (!every && !former && i % SUBSET_STEP) continue;
        double peak, ours = auto_v_span(v, &peak);
        run++;
        ck_assert_msg(ours <= v->span + 1e-9,
                      "seed %d instance %d p %d m %d limit %d: zb-auto-v %.0f, "
                      "the authors' v_auto_schedule %.0f",
                      v->seed, v->inst, v->p, v->m, v->limit, ours, v->span);
        ck_assert_double_le(peak, v->limit + 1e-9 * v->limit);
    }
    ck_assert_int_eq(losses_seen, 4); /* the fixture holds the former losses */
    ck_assert_int_ge(run, every ? n : n / SUBSET_STEP); /* nothing skipped by mistake */
    free(all);
}
END_TEST

static Suite *suite(void) {
    Suite *su = suite_create("zb_auto_v_authors");
    TCase *tc = tcase_create("zb_auto_v_authors");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, never_longer_than_authors);
    suite_add_tcase(su, tc);
    return su;
}

int main(void) {
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
