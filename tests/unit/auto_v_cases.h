/* auto_v_cases.h - what the zb-auto-v sweep tests share
 * (test_zb_auto_v_authors.c, test_zb_auto_v_ilp.c): reading a fixture of
 * one case per line, and zb-auto-v's span on one case's uniform costs. */
#ifndef ZB_TEST_AUTO_V_CASES_H
#define ZB_TEST_AUTO_V_CASES_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/zb_sim.h"
#include "planner/auto/auto_v.h"

/* parse fills the record rec from one line of path (lineno for its
 * message) or fails the test */
typedef void (*case_parse_fn)(const char *line, const char *path, int lineno, void *rec);

/* Every line of path but blank ones and '#' comments, parsed into records
 * of rec_size bytes (*n of them); the caller frees. */
static void *read_cases(const char *path, size_t rec_size, case_parse_fn parse, int *n) {
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "cannot open %s (run from the repository root)", path);
    char *all = NULL, buf[512];
    int cap = 0, line = 0;
    *n = 0;
    while (fgets(buf, sizeof buf, f)) {
        line++;
        if (buf[0] == '#' || buf[0] == '\n') continue;
        if (*n == cap) {
            cap = cap ? 2 * cap : 128;
            all = realloc(all, (size_t)cap * rec_size);
            ck_assert_ptr_nonnull(all);
        }
        parse(buf, path, line, all + (size_t)*n * rec_size);
        (*n)++;
    }
    ck_assert_int_eq(ferror(f), 0);
    fclose(f);
    return all;
}

/* zb-auto-v at p, m and limit on per-rank costs f, b, w, comm and memory
 * mb (kept after F), mw (after B), each split over the rank's two chunks
 * as `zbplan sim` splits them: its span, *peak its highest rank peak. */
static double auto_v_span_uniform(int p, int m, double f, double b, double w, double comm,
                                  double mb, double mw, double limit, double *peak) {
    zb_costs c;
    zb_schedule s;
    zb_err err;
    double span;
    ck_assert_int_eq(zb_costs_uniform(&c, 2 * p, f / 2, b / 2, w / 2, comm, mb / 2, mw / 2,
                                      &err), ZB_OK);
    ck_assert_msg(zb_auto_v(p, m, &c, limit, &s, &err) == ZB_OK, "%s", err.msg);
    ck_assert_int_eq(zb_simulate_fast(&s, &c, NULL, &span, peak, &err), ZB_OK);
    zb_schedule_free(&s);
    zb_costs_free(&c);
    return span;
}

#endif
