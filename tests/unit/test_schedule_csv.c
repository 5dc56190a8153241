/* test_schedule_csv.c - PyTorch's compute-only CSV (zb_schedule_csv.h) and
 * zb_sim_check_limit.
 *
 * - issue 19's instance: the Zero Bubble authors' main-branch ZB-V order
 *   (zbv.py, fill_f = fill_b = False; printed by their code, held here as
 *   data) parses as a V schedule and zb's simulator gives it the span the
 *   issue quotes, 23630, within the limit 3000; zb-auto-v is no longer.
 * - issue 19 at tight limits: the authors' v_auto_schedule order (data),
 *   V-Half and V-Min orders (zb's v-half and v-min are the same orders)
 *   simulate to the spans their harness measured, and zb-auto-v is no
 *   longer within the same peak.
 * - export -> import -> export is byte-identical for LOOP, V, interleaved
 *   and fused-BW schedules, and the imported schedule equals the original.
 * - bad files: FILE:LINE:COL messages; placements that are neither LOOP
 *   nor V; communication actions; a memory limit broken at a named action.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/zb_schedule_csv.h"
#include "common/zb_sim.h"
#include "planner/schedules.h"
#include "planner/zb_auto.h"

static const char authors_zbv[] =
    "0F0,0F1,0F2,0F3,5F0,5I0,5F1,5I1,5W0,5F2,5I2,5W1,5W2,0I0,5F3,5I3,0W0,5W3,0I1,0W1,0I2,0W2,0I3,0W3\r\n"
    "1F0,1F1,1F2,4F0,1F3,4F1,4I0,4W0,4F2,4I1,4W1,1I0,4F3,4I2,1W0,1I1,4I3,1I2,4W2,1W1,1I3,4W3,1W2,1W3\r\n"
    "2F0,3F0,2F1,3F1,2F2,3F2,3I0,3W0,2F3,2I0,2W0,3F3,3I1,2I1,3I2,2I2,3I3,2I3,3W1,2W1,3W2,2W2,3W3,2W3\r\n";

/* zbplan sim's per-chunk costs for F 1032, B 2482, W 1712, comm 180,
 * mem-f 1000, mem-w 846 per rank (v = 2). */
static void issue19_costs(zb_costs *c) {
    zb_err err;
    ck_assert_int_eq(zb_costs_uniform(c, 6, 516, 1241, 856, 180, 500, 423, &err), ZB_OK);
}

START_TEST(issue19_authors_order_and_zb_auto_v) {
    zb_schedule s, ours;
    zb_err err;
    ck_assert_int_eq(zb_sched_csv_parse(authors_zbv, strlen(authors_zbv), "zbv", &s, &err), ZB_OK);
    ck_assert_int_eq(s.p, 3);
    ck_assert_int_eq(s.m, 4);
    ck_assert_int_eq(s.v, 2);
    ck_assert_int_eq(s.placement, ZB_PLACE_V);
    zb_costs c;
    issue19_costs(&c);
    zb_sim_result r;
    ck_assert_int_eq(zb_simulate(&s, &c, &r, &err), ZB_OK);
    ck_assert_double_eq_tol(r.max_span, 23630, 1e-9);
    for (int k = 0; k < 3; k++) ck_assert_double_le(r.peak_mem[k], 3000);
    ck_assert_int_eq(zb_sim_check_limit(&s, &c, 3000, &err), ZB_OK);
    zb_sim_result_free(&r);
    ck_assert_int_eq(zb_auto_v(3, 4, &c, 3000, &ours, &err), ZB_OK);
    ck_assert_int_eq(zb_simulate(&ours, &c, &r, &err), ZB_OK);
    ck_assert_double_le(r.max_span, 23630 + 1e-9);
    for (int k = 0; k < 3; k++) ck_assert_double_le(r.peak_mem[k], 3000);
    zb_sim_result_free(&r);
    zb_schedule_free(&ours);
    zb_schedule_free(&s);
    zb_costs_free(&c);
}
END_TEST

/* issue 19, tight limits. The authors' v_auto_schedule (main branch) order
 * for p 4, m 12, per rank F 872, B 1158, W 1034, comm 69, M_B 1000, M_W
 * 472 at 2 M_B (instance 34 of tests/bench/vs_authors_v.py, seed 19;
 * printed by the harness's vauto_order and csv_of): zb's simulator gives
 * it 49481 within 2000; zb-auto-v used to take 50029 there. */
static const char authors_vauto[] =
    "0F0,0F1,0F2,7F0,7I0,7W0,7F1,7I1,7W1,0F3,0I0,0W0,7F2,7I2,0I1,7W2,0W1,0F4,7F3,7I3,0I2,7W3,0W2,0F5,7F4,7I4,0I3,7W4,0W3,0F6,7F5,7I5,0I4,7W5,0W4,0F7,7F6,7I6,0I5,7W6,0W5,0F8,7F7,7I7,0I6,7W7,0W6,0F9,7F8,7I8,0I7,7W8,0W7,0F10,7F9,7I9,0I8,7W9,0W8,0F11,7F10,7I10,0I9,7W10,0W9,7F11,7I11,7W11,0I10,0W10,0I11,0W11\r\n"
    "1F0,1F1,6F0,6F1,6I0,6W0,1F2,6I1,6W1,1I0,1W0,1F3,6F2,1I1,6I2,1W1,6W2,6F3,1F4,1I2,6I3,1W2,6W3,6F4,1F5,1I3,6I4,1W3,6W4,6F5,1F6,1I4,6I5,1W4,6W5,6F6,1F7,1I5,6I6,1W5,6W6,6F7,1F8,1I6,6I7,1W6,6W7,6F8,1F9,1I7,6I8,1W7,6W8,6F9,1F10,1I8,6I9,1W8,6W9,6F10,1F11,1I9,1W9,6I10,6W10,6F11,6I11,6W11,1I10,1W10,1I11,1W11\r\n"
    "2F0,2F1,5F0,5F1,5I0,5W0,2F2,2I0,2W0,5I1,5W1,5F2,2F3,2I1,2W1,5I2,5F3,5W2,2I2,2F4,2W2,5I3,5F4,5W3,2I3,2F5,2W3,5I4,5F5,5W4,2I4,2F6,2W4,5I5,5F6,5W5,2I5,2F7,2W5,5I6,5F7,5W6,2I6,2F8,2W6,5I7,5F8,5W7,2I7,2F9,2W7,5I8,5F9,5W8,2I8,2F10,2W8,5I9,5F10,5W9,2I9,2F11,2W9,5F11,5I10,5W10,2I10,5I11,2W10,5W11,2I11,2W11\r\n"
    "3F0,4F0,3F1,4F1,4I0,3I0,4W0,3W0,3F2,4F2,4I1,3I1,4W1,3W1,3F3,4F3,4I2,3I2,4W2,3W2,3F4,4F4,4I3,3I3,4W3,3W3,3F5,4F5,4I4,3I4,4W4,3W4,3F6,4F6,4I5,3I5,4W5,3W5,3F7,4F7,4I6,3I6,4W6,3W6,3F8,4F8,4I7,3I7,4W7,3W7,3F9,4F9,4I8,3I8,4W8,3W8,3F10,4F10,4I9,3I9,4W9,3W9,3F11,4F11,4I10,3I10,4W10,3W10,4I11,3I11,4W11,3W11\r\n"
;

static void chunk_costs(zb_costs *c, int p, double f, double b, double w,
                        double comm, double mw) {
    zb_err err;
    ck_assert_int_eq(zb_costs_uniform(c, 2 * p, f / 2, b / 2, w / 2, comm, 500, mw / 2, &err),
                     ZB_OK);
}

/* zb-auto-v at limit L on costs c: valid, within L, span <= bound. */
static void auto_v_within(int p, int m, const zb_costs *c, double limit, double bound) {
    zb_schedule s;
    zb_err err;
    zb_sim_result r;
    ck_assert_int_eq(zb_auto_v(p, m, c, limit, &s, &err), ZB_OK);
    ck_assert_int_eq(zb_simulate(&s, c, &r, &err), ZB_OK);
    ck_assert_double_le(r.max_span, bound + 1e-9);
    for (int k = 0; k < p; k++) ck_assert_double_le(r.peak_mem[k], limit + 1e-9);
    zb_sim_result_free(&r);
    zb_schedule_free(&s);
}

START_TEST(issue19_tight_limits_not_worse_than_authors) {
    zb_schedule s;
    zb_err err;
    zb_costs c;
    zb_sim_result r;
    ck_assert_int_eq(zb_sched_csv_parse(authors_vauto, strlen(authors_vauto), "vauto", &s, &err),
                     ZB_OK);
    chunk_costs(&c, 4, 872, 1158, 1034, 69, 472);
    ck_assert_int_eq(zb_simulate(&s, &c, &r, &err), ZB_OK);
    ck_assert_double_eq_tol(r.max_span, 49481, 1e-9);
    ck_assert_int_eq(zb_sim_check_limit(&s, &c, 2000, &err), ZB_OK);
    zb_sim_result_free(&r);
    zb_schedule_free(&s);
    auto_v_within(4, 12, &c, 2000, 49481);
    zb_costs_free(&c);
    /* The authors' V-Half and V-Min (zbv_greedy.py) depend on p and m only;
     * zb's v-half and v-min are the same orders (checked against theirs for
     * p 2..16 and six m each). Instances 41 and 56 of the harness: their
     * spans 167662 (V-Half, p 5, m 22, peak 3000) and 197939 (V-Min, p 15,
     * m 31, peak 6000); zb-auto-v used to take 167932 and 198280. */
    static const struct { int p, m, half; double f, b, w, comm, mw, limit, span; } t[] = {
        {5, 22, 1, 1632, 2894, 540, 263, 750, 3000, 167662},
        {15, 31, 0, 1504, 1608, 1198, 34, 520, 6000, 197939},
    };
    for (int i = 0; i < 2; i++) {
        chunk_costs(&c, t[i].p, t[i].f, t[i].b, t[i].w, t[i].comm, t[i].mw);
        ck_assert_int_eq((t[i].half ? zb_sched_vhalf : zb_sched_vmin)(t[i].p, t[i].m, &s, &err),
                         ZB_OK);
        ck_assert_int_eq(zb_simulate(&s, &c, &r, &err), ZB_OK);
        ck_assert_double_eq_tol(r.max_span, t[i].span, 1e-9);
        ck_assert_int_eq(zb_sim_check_limit(&s, &c, t[i].limit, &err), ZB_OK);
        zb_sim_result_free(&r);
        zb_schedule_free(&s);
        auto_v_within(t[i].p, t[i].m, &c, t[i].limit, t[i].span);
        zb_costs_free(&c);
    }
}
END_TEST

static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    char *buf = malloc(1 << 20);
    ck_assert_ptr_nonnull(buf);
    *len = fread(buf, 1, 1 << 20, f);
    fclose(f);
    return buf;
}

static void round_trip(const char *name, int p, int m, int v) {
    zb_costs c;
    zb_err err;
    ck_assert_int_eq(zb_costs_uniform(&c, p * v, 1, 2, 1, 0.1, 1, 0.5, &err), ZB_OK);
    zb_sched_params prm = {.p = p, .m = m, .v = v, .costs = &c, .mem_limit = 2 * p};
    zb_schedule s, back;
    ck_assert_int_eq(zb_schedule_make(name, &prm, &s, NULL, &err), ZB_OK);
    char a[] = "/tmp/zb_csv_aXXXXXX", b[] = "/tmp/zb_csv_bXXXXXX";
    int fa = mkstemp(a), fb = mkstemp(b);
    ck_assert(fa >= 0 && fb >= 0);
    close(fa), close(fb);
    ck_assert_int_eq(zb_sched_csv_write(&s, a, &err), ZB_OK);
    ck_assert_int_eq(zb_sched_csv_read(a, &back, &err), ZB_OK);
    ck_assert_int_eq(zb_sched_csv_write(&back, b, &err), ZB_OK);
    size_t la, lb;
    char *ta = slurp(a, &la), *tb = slurp(b, &lb);
    ck_assert_uint_eq(la, lb);
    ck_assert_mem_eq(ta, tb, la);
    ck_assert(la > 2 && ta[la - 2] == '\r' && ta[la - 1] == '\n');
    ck_assert_int_eq(back.p, s.p);
    ck_assert_int_eq(back.m, s.m);
    ck_assert_int_eq(back.v, s.v);
    ck_assert_int_eq(back.placement, s.placement);
    for (int r = 0; r < p; r++) {
        ck_assert_int_eq(back.len[r], s.len[r]);
        ck_assert_mem_eq(back.acts[r], s.acts[r], (size_t)s.len[r] * sizeof(zb_action));
    }
    free(ta), free(tb);
    unlink(a), unlink(b);
    zb_schedule_free(&s);
    zb_schedule_free(&back);
    zb_costs_free(&c);
}

START_TEST(round_trip_byte_identical) {
    round_trip("zb-v", 4, 8, 2);
    round_trip("zb-h1", 4, 6, 1);
    round_trip("1f1b", 3, 5, 1);
    round_trip("interleaved", 4, 8, 3);
    round_trip("zb-auto-v", 5, 7, 2);
}
END_TEST

static void expect_error_n(const char *text, size_t len, const char *want) {
    zb_schedule s;
    zb_err err;
    ck_assert_int_eq(zb_sched_csv_parse(text, len, "x.csv", &s, &err), ZB_EINPUT);
    if (!strstr(err.msg, want))
        ck_abort_msg("'%s': got '%s', want '%s'", text, err.msg, want);
}

static void expect_error(const char *text, const char *want) {
    expect_error_n(text, strlen(text), want);
}

START_TEST(bad_files) {
    expect_error("", "x.csv: empty file");
    expect_error("0F0,0I0\r\n0F0,zz\r\n", "x.csv:2:5: bad action 'zz'");
    expect_error("0F0,0SEND_F0\n", "x.csv:1:5: bad action '0SEND_F0'");
    expect_error("0F0, 0X1\n", "x.csv:1:6: bad action '0X1'");
    expect_error("0F\n", "x.csv:1:1: bad action '0F'");
    expect_error("99999999F0\n", "x.csv:1:1: bad action");
    expect_error(",,\n", "no actions");
    expect_error("0F0,1F0\n2F0\n", "do not divide evenly");
    /* rank 1 holding stage 0: neither placement */
    expect_error("1F0\n0F0\n", "x.csv:1:1: stage 1 on rank 0: neither the LOOP");
    expect_error_n("0F0\n1F0\0\n", 9, "x.csv:2: NUL byte");
}
END_TEST

START_TEST(idle_cells_and_line_ends) {
    /* empty cells are idle steps; "\n" rows and blanks around cells too */
    const char *t = "0F0,,0I0, 0W0\n,1F0,1I0,1W0\n";
    zb_schedule s;
    zb_err err;
    ck_assert_int_eq(zb_sched_csv_parse(t, strlen(t), "x.csv", &s, &err), ZB_OK);
    ck_assert_int_eq(s.p, 2);
    ck_assert_int_eq(s.len[0], 3);
    ck_assert_int_eq(s.len[1], 3);
    ck_assert_int_eq(s.acts[0][1].pass, ZB_B);
    ck_assert_int_eq(s.acts[1][2].pass, ZB_W);
    zb_schedule_free(&s);
    /* a full backward is B */
    t = "0F0,0B0\n";
    ck_assert_int_eq(zb_sched_csv_parse(t, strlen(t), "x.csv", &s, &err), ZB_OK);
    ck_assert_int_eq(s.acts[0][1].pass, ZB_BW);
    zb_schedule_free(&s);
}
END_TEST

START_TEST(memory_limit_names_action) {
    zb_schedule s;
    zb_err err;
    const char *t = "0F0,0F1,0F2,0I0,0W0,0I1,0W1,0I2,0W2\n";
    ck_assert_int_eq(zb_sched_csv_parse(t, strlen(t), "x.csv", &s, &err), ZB_OK);
    zb_costs c;
    ck_assert_int_eq(zb_costs_uniform(&c, 1, 1, 1, 1, 0, 1, 0.5, &err), ZB_OK);
    ck_assert_int_eq(zb_sim_check_limit(&s, &c, 3, &err), ZB_OK);
    ck_assert_int_eq(zb_sim_check_limit(&s, &c, 2.5, &err), ZB_EINFEASIBLE);
    ck_assert_str_eq(err.msg, "rank 0: action 2 (F mb 2 chunk 0): memory 3 over the limit 2.5");
    zb_schedule_free(&s);
    zb_costs_free(&c);
}
END_TEST

int main(void) {
    Suite *su = suite_create("schedule_csv");
    TCase *tc = tcase_create("schedule_csv");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, issue19_authors_order_and_zb_auto_v);
    tcase_add_test(tc, issue19_tight_limits_not_worse_than_authors);
    tcase_add_test(tc, round_trip_byte_identical);
    tcase_add_test(tc, bad_files);
    tcase_add_test(tc, idle_cells_and_line_ends);
    tcase_add_test(tc, memory_limit_names_action);
    suite_add_tcase(su, tc);
    SRunner *sr = srunner_create(su);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
