/* test_dualpipe.c - DualPipeV (planner/schedules/dualpipev.c) against the
 * closed forms of DeepSeek's table (PP = 2p stages on p ranks): bubble
 * (PP/2-1)(T_F&B + T_B - 3 T_W) with T_B the full backward, T_F&B the
 * overlapped step; activations PP+1 per rank; parameters 2x (two stages
 * per rank). The bubble here is the longest span minus the busy time of
 * the rank with the most overlapped steps (rank p-1), the time beyond a
 * rank that never idles; the form is exact when T_F equals the input
 * backward T_B (the table's setting) and T_W <= T_F, for any overlap
 * share; unequal_passes shows it is not beyond. */
#include <check.h>
#include <string.h>

#include "common/zb_sim.h"
#include "planner/registry/registry.h"

static void make(int p, int m, const zb_costs *c, zb_schedule *s) {
    zb_sched_params prm = {.p = p, .m = m, .v = 2, .costs = c};
    zb_err err;
    zb_status st = zb_schedule_make("dualpipev", &prm, s, NULL, &err);
    ck_assert_msg(st == ZB_OK, "p %d m %d: %s", p, m, err.msg);
}

/* Overlapped steps on rank r: steps 4 and 5 of the generator. */
static int overlaps_on(const zb_schedule *s, int r) {
    int n = 0;
    for (int i = 0; i < s->len[r]; i++) n += zb_action_overlaps(&s->acts[r][i]);
    return n;
}

START_TEST(bubble_closed_form) {
    const double ws[] = {0.25, 0.5, 0.75, 1}, os[] = {0, 0.3, 1};
    for (int p = 1; p <= 8; p++) {
        int ms[] = {2 * p, 2 * p + 1, 3 * p, 5 * p + 2};
        for (int im = 0; im < 4; im++)
            for (int iw = 0; iw < 4; iw++)
                for (int io = 0; io < 3; io++) {
                    int m = ms[im];
                    double f = 1, b = 1, w = ws[iw], o = os[io];
                    zb_costs c;
                    zb_err err;
                    ck_assert_int_eq(zb_costs_uniform(&c, 2 * p, f, b, w, 0, 1, 0.5, &err), ZB_OK);
                    c.fb_overlap = o;
                    zb_schedule s;
                    make(p, m, &c, &s);
                    zb_sim_result res;
                    ck_assert_int_eq(zb_simulate(&s, &c, &res, &err), ZB_OK);
                    double full = b + w, fb = zb_costs_fb_time(&c, 0, 1, ZB_BW);
                    ck_assert_double_eq_tol(fb, (f > full ? f : full) + (1 - o) * (f < full ? f : full), 1e-12);
                    double want = (p - 1) * (fb + full - 3 * w);
                    for (int r = 0; r < p; r++) /* rank p-1 idles least */
                        ck_assert(res.busy[p - 1] <= res.busy[r] + 1e-9);
                    double got = res.max_span - res.busy[p - 1];
                    ck_assert_msg(got > want - 1e-9 && got < want + 1e-9,
                                  "p %d m %d w %g o %g: bubble %g, formula %g",
                                  p, m, w, o, got, want);
                    /* busy: 2m of each pass, each overlapped step saving o min(F, BW) */
                    for (int r = 0; r < p; r++) {
                        int k = overlaps_on(&s, r);
                        ck_assert_int_eq(k, 2 * m - 3 * p + r + 1 - (r == p - 1));
                        double busy = 2 * m * (f + b + w) - k * o * (f < full ? f : full);
                        ck_assert_double_eq_tol(res.busy[r], busy, 1e-9);
                    }
                    zb_sim_result_free(&res);
                    zb_schedule_free(&s);
                    zb_costs_free(&c);
                }
    }
}
END_TEST

/* Unequal F and B: the simulator's span, not the formula (which assumes
 * T_F = T_B); p 4, m 8, F 1, B 2, W 1 per chunk, overlap 0. */
START_TEST(unequal_passes) {
    zb_costs c;
    zb_err err;
    ck_assert_int_eq(zb_costs_uniform(&c, 8, 1, 2, 1, 0, 1, 0.5, &err), ZB_OK);
    zb_schedule s;
    make(4, 8, &c, &s);
    zb_sim_result res;
    ck_assert_int_eq(zb_simulate(&s, &c, &res, &err), ZB_OK);
    double formula = 3 * ((1 + 3) + 3 - 3 * 1);
    ck_assert(res.max_span - res.busy[3] != formula);
    ck_assert_double_eq_tol(res.busy[3], 2 * 8 * 4, 1e-12);
    zb_sim_result_free(&res);
    zb_schedule_free(&s);
    zb_costs_free(&c);
}
END_TEST

START_TEST(activations_pp_plus_one) {
    for (int p = 1; p <= 8; p++) {
        int ms[] = {2 * p, 3 * p + 1, 5 * p};
        for (int im = 0; im < 3; im++)
            for (int full = 0; full < 2; full++) {
                zb_costs c;
                zb_err err;
                /* m_w = m_b: nothing released before W; else half */
                ck_assert_int_eq(zb_costs_uniform(&c, 2 * p, 1, 1, 1, 0, 1,
                                                  full ? 1 : 0.5, &err), ZB_OK);
                zb_schedule s;
                make(p, ms[im], &c, &s);
                zb_sim_result res;
                ck_assert_int_eq(zb_simulate(&s, &c, &res, &err), ZB_OK);
                for (int r = 0; r < p; r++)
                    ck_assert_msg(res.peak_mem[r] == 2 * p + 1, "p %d m %d rank %d: "
                                  "peak %g, want PP+1 = %d", p, ms[im], r,
                                  res.peak_mem[r], 2 * p + 1);
                zb_sim_result_free(&res);
                zb_schedule_free(&s);
                zb_costs_free(&c);
            }
    }
}
END_TEST

START_TEST(two_stages_per_rank) {
    ck_assert_int_eq(zb_schedule_chunks("dualpipev", 4), 2);
    ck_assert_int_eq(zb_schedule_placement("dualpipev"), ZB_PLACE_V);
    zb_schedule s;
    make(4, 8, NULL, &s);
    for (int r = 0; r < 4; r++) {
        /* parameters 2x: stages r and PP-1-r, the two ends of the V */
        ck_assert_int_eq(zb_vstage(&s, r, 0), r);
        ck_assert_int_eq(zb_vstage(&s, r, 1), 7 - r);
        int n[4] = {0};
        for (int i = 0; i < s.len[r]; i++) n[s.acts[r][i].pass]++;
        ck_assert_int_eq(n[ZB_F], 16);
        ck_assert_int_eq(n[ZB_B] + n[ZB_BW], 16);
        ck_assert_int_eq(n[ZB_W], n[ZB_B]);  /* split ones: the tails */
        ck_assert_int_eq(n[ZB_B], 2 * (4 - r - 1) + r + 1);
    }
    zb_schedule_free(&s);
}
END_TEST

START_TEST(refuses_few_microbatches) {
    zb_sched_params prm = {.p = 4, .m = 7, .v = 2};
    zb_schedule s;
    zb_err err;
    ck_assert_int_eq(zb_schedule_make("dualpipev", &prm, &s, NULL, &err), ZB_EINPUT);
    ck_assert_str_eq(err.msg, "dualpipev needs at least 2p microbatches (m=7 < 2p=8)");
}
END_TEST

int main(void) {
    Suite *su = suite_create("dualpipe");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, bubble_closed_form);
    tcase_add_test(tc, unequal_passes);
    tcase_add_test(tc, activations_pp_plus_one);
    tcase_add_test(tc, two_stages_per_rank);
    tcase_add_test(tc, refuses_few_microbatches);
    suite_add_tcase(su, tc);
    SRunner *sr = srunner_create(su);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
