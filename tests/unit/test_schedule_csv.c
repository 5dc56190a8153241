/* test_schedule_csv.c - PyTorch's compute-only CSV (zb_schedule_csv.h) and
 * zb_sim_check_limit.
 *
 * - issue 19's instance: the Zero Bubble authors' main-branch ZB-V order
 *   (zbv.py, fill_f = fill_b = False; printed by their code, held here as
 *   data) parses as a V schedule and zb's simulator gives it the span the
 *   issue quotes, 23630, within the limit 3000; zb-auto-v is no longer.
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
