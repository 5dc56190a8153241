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
#include "planner/auto/auto_loop.h"
#include "planner/auto/auto_v.h"
#include "planner/registry/registry.h"
#include "planner/schedules/handmade.h"

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

/* The same for p 4, m 20, per rank F 1624, B 2076, W 3212, comm 95, M_B
 * 1000, M_W 800 at 3000 (their V-Half's peak; instance 37 of the harness,
 * seed 7): zb's simulator gives it 143360; zb-auto-v used to take 143550
 * (its local search moved one pass at a time and could not change the
 * steady state's pattern, e.g. 0I,0F,0W into 0I,0W,0F on every repeat). */
static const char authors_vauto_7[] =
    "0F0,0F1,0F2,0F3,0F4,7F0,7I0,7W0,7F1,7I1,7W1,7F2,7I2,7W2,0F5,0I0,0W0,7F3,7I3,7W3,0I1,0W1,0F6,7F4,7I4,7W4,0I2,0W2,0F7,7F5,7I5,7W5,0I3,0W3,0F8,7F6,7I6,7W6,0I4,0W4,0F9,7F7,7I7,7W7,0I5,0W5,0F10,7F8,7I8,7W8,0I6,0W6,0F11,7F9,7I9,7W9,0I7,0W7,0F12,7F10,7I10,7W10,0I8,0W8,0F13,7F11,7I11,7W11,0I9,0W9,0F14,7F12,7I12,7W12,0I10,0W10,0F15,7F13,7I13,7W13,0I11,0W11,0F16,7F14,7I14,7W14,0I12,0W12,0F17,7F15,7I15,7W15,0I13,0W13,0F18,7F16,7I16,7W16,0I14,0W14,0F19,7F17,7I17,7W17,0I15,0W15,7F18,7I18,7W18,0I16,0W16,7F19,7I19,7W19,0I17,0W17,0I18,0W18,0I19,0W19\r\n"
    "1F0,1F1,1F2,1F3,6F0,6F1,6I0,6W0,6F2,6I1,6W1,1F4,6I2,1I0,6W2,1W0,6F3,1F5,1I1,6I3,1W1,6F4,6W3,1F6,1I2,6I4,1W2,6F5,6W4,1F7,1I3,6I5,1W3,6F6,6W5,1F8,1I4,6I6,1W4,6F7,6W6,1F9,1I5,6I7,1W5,6F8,6W7,1F10,1I6,6I8,1W6,6F9,6W8,1F11,1I7,6I9,1W7,6F10,6W9,1F12,1I8,6I10,1W8,6F11,6W10,1F13,1I9,6I11,1W9,6F12,6W11,1F14,1I10,6I12,1W10,6F13,6W12,1F15,1I11,6I13,1W11,6F14,6W13,1F16,1I12,6I14,1W12,6F15,6W14,1F17,1I13,6I15,1W13,6F16,6W15,1F18,1I14,6I16,1W14,6F17,6W16,1F19,1I15,6I17,1W15,6F18,6W17,1I16,1W16,6F19,6I18,6W18,6I19,1I17,6W19,1I18,1W17,1I19,1W18,1W19\r\n"
    "2F0,2F1,2F2,5F0,5F1,5F2,5I0,5W0,2F3,5I1,5W1,2I0,2W0,2F4,5F3,5I2,5W2,2I1,2W1,2F5,5F4,5I3,5W3,2I2,2W2,2F6,5F5,5I4,5W4,2I3,2W3,2F7,5F6,5I5,5W5,2I4,2W4,2F8,5F7,5I6,5W6,2I5,2W5,2F9,5F8,5I7,5W7,2I6,2W6,2F10,5F9,5I8,5W8,2I7,2W7,2F11,5F10,5I9,5W9,2I8,2W8,2F12,5F11,5I10,5W10,2I9,2W9,2F13,5F12,5I11,5W11,2I10,2W10,2F14,5F13,5I12,5W12,2I11,2W11,2F15,5F14,5I13,5W13,2I12,2W12,2F16,5F15,5I14,5W14,2I13,2W13,2F17,5F16,5I15,5W15,2I14,2W14,2F18,5F17,5I16,5W16,2I15,2W15,2F19,5F18,5I17,5W17,2I16,2W16,5F19,2I17,5I18,2W17,5I19,2I18,5W18,2I19,5W19,2W18,2W19\r\n"
    "3F0,4F0,3F1,4F1,3F2,4F2,4I0,4W0,3F3,3I0,4I1,3W0,4F3,4W1,3F4,3I1,4I2,3W1,4F4,4W2,3F5,3I2,4I3,3W2,4F5,4W3,3F6,3I3,4I4,3W3,4F6,4W4,3F7,3I4,4I5,3W4,4F7,4W5,3F8,3I5,4I6,3W5,4F8,4W6,3F9,3I6,4I7,3W6,4F9,4W7,3F10,3I7,4I8,3W7,4F10,4W8,3F11,3I8,4I9,3W8,4F11,4W9,3F12,3I9,4I10,3W9,4F12,4W10,3F13,3I10,4I11,3W10,4F13,4W11,3F14,3I11,4I12,3W11,4F14,4W12,3F15,3I12,4I13,3W12,4F15,4W13,3F16,3I13,4I14,3W13,4F16,4W14,3F17,3I14,4I15,3W14,4F17,4W15,3F18,3I15,4I16,3W15,4F18,4W16,3F19,3I16,3W16,4F19,4I17,3I17,4W17,3W17,4I18,3I18,4I19,3I19,4W18,3W18,4W19,3W19\r\n"
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
    static const struct { const char *csv; int m; double f, b, w, comm, mw, limit, span; } a[] = {
        {authors_vauto, 12, 872, 1158, 1034, 69, 472, 2000, 49481},
        {authors_vauto_7, 20, 1624, 2076, 3212, 95, 800, 3000, 143360},
    };
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(zb_sched_csv_parse(a[i].csv, strlen(a[i].csv), "vauto", &s, &err),
                         ZB_OK);
        ck_assert_int_eq(s.p, 4);
        ck_assert_int_eq(s.m, a[i].m);
        chunk_costs(&c, 4, a[i].f, a[i].b, a[i].w, a[i].comm, a[i].mw);
        ck_assert_int_eq(zb_simulate(&s, &c, &r, &err), ZB_OK);
        ck_assert_double_eq_tol(r.max_span, a[i].span, 1e-9);
        ck_assert_int_eq(zb_sim_check_limit(&s, &c, a[i].limit, &err), ZB_OK);
        zb_sim_result_free(&r);
        zb_schedule_free(&s);
        auto_v_within(4, a[i].m, &c, a[i].limit, a[i].span);
        zb_costs_free(&c);
    }
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
    round_trip("dualpipev", 4, 8, 2);
    round_trip("dualpipev", 3, 10, 2);
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

/* PyTorch's ScheduleDualPipeV orders as its _dump_csv writes them (one row
 * per rank, overlapped cells "(0F3;3B1)OVERLAP_F_B"), the rows of
 * tests/pytorch/dualpipev_p*_m*.csv (torch 2.15.0's own output,
 * tests/pytorch/gen_csv.py): read, they are zb's dualpipev
 * action for action, overlap flags included, and written back byte for
 * byte. */
static const char dpv_p2_m4[] =
    "0F0,0F1,0F2,3F0,3I0,3W0,3F1,(0F3;3B1)OVERLAP_F_B,(3F2;0B0)OVERLAP_F_B,3B2,"
    "(3F3;0B1)OVERLAP_F_B,3B3,0I2,0W2,0I3,0W3\r\n"
    "1F0,2F0,1F1,2F1,1F2,2B0,(2F2;1B0)OVERLAP_F_B,(1F3;2B1)OVERLAP_F_B,"
    "(2F3;1B1)OVERLAP_F_B,2B2,1B2,2I3,1I3,2W3,1W3\r\n";
static const char dpv_p3_m6[] =
    "0F0,0F1,0F2,0F3,0F4,5F0,5I0,5W0,5F1,5I1,5W1,5F2,(0F5;5B2)OVERLAP_F_B,"
    "(5F3;0B0)OVERLAP_F_B,5B3,(5F4;0B1)OVERLAP_F_B,5B4,(5F5;0B2)OVERLAP_F_B,5B5,"
    "0I3,0W3,0I4,0W4,0I5,0W5\r\n"
    "1F0,1F1,1F2,4F0,1F3,4F1,4I0,4W0,4F2,(1F4;4B1)OVERLAP_F_B,(4F3;1B0)OVERLAP_F_B,"
    "(1F5;4B2)OVERLAP_F_B,(4F4;1B1)OVERLAP_F_B,4B3,(4F5;1B2)OVERLAP_F_B,4B4,1B3,"
    "4I5,1I4,4W5,1I5,1W4,1W5\r\n"
    "2F0,3F0,2F1,3F1,2F2,3F2,2F3,3B0,(3F3;2B0)OVERLAP_F_B,(2F4;3B1)OVERLAP_F_B,"
    "(3F4;2B1)OVERLAP_F_B,(2F5;3B2)OVERLAP_F_B,(3F5;2B2)OVERLAP_F_B,3B3,2B3,3B4,"
    "2I4,3I5,2I5,2W4,3W5,2W5\r\n";

static void pytorch_rows(const char *text, int p, int m, int overlaps) {
    zb_schedule s, z;
    zb_err err;
    ck_assert_int_eq(zb_sched_csv_parse(text, strlen(text), "x.csv", &s, &err), ZB_OK);
    ck_assert_int_eq(s.p, p);
    ck_assert_int_eq(s.m, m);
    ck_assert_int_eq(s.placement, ZB_PLACE_V);
    int n = 0;
    for (int r = 0; r < p; r++)
        for (int i = 0; i < s.len[r]; i++) n += zb_action_overlaps(&s.acts[r][i]);
    ck_assert_int_eq(n, overlaps);
    zb_sched_params prm = {.p = p, .m = m, .v = 2};
    ck_assert_int_eq(zb_schedule_make("dualpipev", &prm, &z, NULL, &err), ZB_OK);
    for (int r = 0; r < p; r++) {
        ck_assert_int_eq(s.len[r], z.len[r]);
        ck_assert_mem_eq(s.acts[r], z.acts[r], (size_t)s.len[r] * sizeof(zb_action));
    }
    char path[] = "/tmp/zb_csv_dpv_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    ck_assert_int_eq(zb_sched_csv_write(&s, path, &err), ZB_OK);
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    char buf[4096];
    size_t len = fread(buf, 1, sizeof buf, f);
    fclose(f);
    unlink(path);
    ck_assert_uint_eq(len, strlen(text));
    ck_assert_mem_eq(buf, text, len);
    zb_schedule_free(&s);
    zb_schedule_free(&z);
}

START_TEST(pytorch_dualpipev_rows) {
    pytorch_rows(dpv_p2_m4, 2, 4, 3 + 3);   /* 2m-3p+r+1 per rank, the last one fewer */
    pytorch_rows(dpv_p3_m6, 3, 6, 4 + 5 + 5);
}
END_TEST

/* PyTorch's ScheduleZBVZeroBubble at p 2, m 3 (torch 2.15.0's output,
 * tests/pytorch/zbv_p2_m3.csv; rank 1's row starts with the
 * idle cell PyTorch writes for its late start): the lists laid out for
 * 2p-1 microbatches, which zb-v picks here when it has costs (span 9 at
 * T_F = T_B = T_W = 1 per rank); written back without the idle cell. */
START_TEST(pytorch_zbv_rows) {
    const char text[] =
        "0F0,0F1,0F2,3F0,3I0,3W0,3F1,3I1,3W1,0I0,0W0,3F2,3I2,3W2,0I1,0W1,0I2,0W2\r\n"
        ",1F0,2F0,1F1,2F1,2I0,2W0,1F2,1I0,1W0,2F2,2I1,2W1,1I1,2I2,1I2,1W1,2W2,1W2\r\n";
    zb_schedule s, lay, z;
    zb_err err;
    ck_assert_int_eq(zb_sched_csv_parse(text, strlen(text), "x.csv", &s, &err), ZB_OK);
    ck_assert_int_eq(zb_sched_zbv_layout(2, 3, 3, &lay, &err), ZB_OK);
    zb_costs c;
    ck_assert_int_eq(zb_costs_uniform(&c, 4, 0.5, 0.5, 0.5, 0, 0.5, 0.25, &err), ZB_OK);
    zb_sched_params prm = {.p = 2, .m = 3, .v = 2, .costs = &c};
    ck_assert_int_eq(zb_schedule_make("zb-v", &prm, &z, NULL, &err), ZB_OK);
    for (int r = 0; r < 2; r++) {
        ck_assert_int_eq(s.len[r], lay.len[r]);
        ck_assert_mem_eq(s.acts[r], lay.acts[r], (size_t)s.len[r] * sizeof(zb_action));
        ck_assert_int_eq(z.len[r], lay.len[r]);
        ck_assert_mem_eq(z.acts[r], lay.acts[r], (size_t)s.len[r] * sizeof(zb_action));
    }
    double span;
    ck_assert_int_eq(zb_simulate_fast(&s, &c, NULL, &span, NULL, &err), ZB_OK);
    ck_assert_double_eq_tol(span, 9, 1e-12);
    zb_schedule_free(&s), zb_schedule_free(&lay), zb_schedule_free(&z);
    zb_costs_free(&c);
}
END_TEST

START_TEST(bad_overlap_cells) {
    expect_error("0F0,(0F1;1W0)OVERLAP_F_B\n", "x.csv:1:5: bad overlapped cell "
                 "'(0F1;1W0)OVERLAP_F_B': expected (STAGE F MB;STAGE I|B MB)OVERLAP_F_B");
    expect_error("(0B1;1F0)OVERLAP_F_B\n", "x.csv:1:1: bad overlapped cell");
    expect_error("(0F1;1B0)OVERLAP\n", "x.csv:1:1: bad overlapped cell");
    expect_error("(0F1)OVERLAP_F_B\n", "x.csv:1:1: bad overlapped cell");
    expect_error("(0F1;1B0;1B1)OVERLAP_F_B\n", "x.csv:1:1: bad overlapped cell");
    expect_error("(0F1;1B0)OVERLAP_F_Bx\n", "x.csv:1:1: bad overlapped cell");
    expect_error("( 0F1 ; 1B0 )OVERLAP_F_B,(;)OVERLAP_F_B\n", "x.csv:1:26: bad overlapped cell");
}
END_TEST

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
    tcase_add_test(tc, pytorch_dualpipev_rows);
    tcase_add_test(tc, pytorch_zbv_rows);
    tcase_add_test(tc, bad_overlap_cells);
    tcase_add_test(tc, idle_cells_and_line_ends);
    tcase_add_test(tc, memory_limit_names_action);
    suite_add_tcase(su, tc);
    SRunner *sr = srunner_create(su);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
