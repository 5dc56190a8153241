/* test_schedules.c - the hand-made schedule generators and the registry.
 *
 * Bubbles and peaks are checked against the closed forms of the papers
 * (DESIGN.md, "Known closed forms"), computed here by hand from the cost
 * inputs; validity by counting every pass ourselves and by running the
 * simulator, which rejects missing/repeated passes and deadlocks.
 * T_comm = 0 unless said. Bubble time = longest stage span - m(F+B+W),
 * with F, B, W the per-rank totals for one microbatch.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "common/zb_sim.h"
#include "planner/registry/registry.h"
#include "planner/schedules/handmade.h"

#define TOL 1e-9

/* ---- helpers ---------------------------------------------------------- */

/* Virtual stage by the placement rules of zb_schedule.h, written out here
 * rather than calling zb_vstage, so the count below is independent. */
static int vstage_of(const zb_schedule *s, int r, int c) {
    if (s->placement == ZB_PLACE_V) return c == 0 ? r : 2 * s->p - 1 - r;
    return c * s->p + r;
}

/* Every (virtual stage, microbatch) has exactly one F and either one BW or
 * one B and one W; split must say which. One ck_assert per schedule: Check
 * records every assertion, which is slow inside these loops. */
static void count_passes(const zb_schedule *s, bool split) {
    int n = s->p * s->v, m = s->m, bad = 0;
    int *cnt = calloc((size_t)n * m * 4, sizeof(int));
    ck_assert_ptr_nonnull(cnt);
    for (int r = 0; r < s->p; r++) {
        for (int i = 0; i < s->len[r]; i++) {
            const zb_action *a = &s->acts[r][i];
            if (a->chunk >= s->v || a->mb < 0 || a->mb >= m || a->pass > ZB_BW) {
                bad++;
                continue;
            }
            cnt[((size_t)vstage_of(s, r, a->chunk) * m + a->mb) * 4 + a->pass]++;
        }
    }
    for (int i = 0; i < n * m; i++) {
        const int *c = cnt + (size_t)i * 4;
        if (c[ZB_F] != 1 || c[ZB_B] != split || c[ZB_W] != split || c[ZB_BW] != !split)
            bad++;
    }
    free(cnt);
    ck_assert_msg(bad == 0, "%s p=%d m=%d: %d actions out of range or passes "
                  "missing/repeated", s->name, s->p, s->m, bad);
}

/* Simulate with uniform per-virtual-stage costs; must succeed. */
static void sim_uniform(const zb_schedule *s, double tf, double tb, double tw,
                        double tc, double mb, double mw, zb_sim_result *res) {
    zb_costs c;
    zb_err err;
    ck_assert_int_eq(zb_costs_uniform(&c, s->p * s->v, tf, tb, tw, tc, mb, mw,
                                      &err), ZB_OK);
    zb_status st = zb_simulate(s, &c, res, &err);
    ck_assert_msg(st == ZB_OK, "%s p=%d m=%d: %s", s->name, s->p, s->m, err.msg);
    zb_costs_free(&c);
}

static double max_peak(const zb_sim_result *res) {
    double mx = 0;
    for (int r = 0; r < res->p; r++)
        if (res->peak_mem[r] > mx) mx = res->peak_mem[r];
    return mx;
}

typedef struct { double f, b, w; } fbw;

/* ---- closed forms ----------------------------------------------------- */

/* 1F1B and GPipe: bubble (p-1)(F+B+W); peaks p*M_B (1F1B, m >= p) and
 * m*M_B (GPipe) on rank 0. */
START_TEST(fused_bubble_and_peak) {
    const fbw costs[] = {{1, 1, 1}, {1, 2, 1}, {1.5, 2, 0.5}, {1, 1, 2}};
    const double MB = 3, MW = 1;
    for (int p = 1; p <= 8; p++)
        for (int m = 1; m <= 4 * p; m++)
            for (size_t k = 0; k < sizeof costs / sizeof costs[0]; k++) {
                fbw t = costs[k];
                zb_schedule s;
                zb_sim_result res;
                zb_err err;
                double want = (p - 1) * (t.f + t.b + t.w);
                ck_assert_int_eq(zb_sched_1f1b(p, m, &s, &err), ZB_OK);
                sim_uniform(&s, t.f, t.b, t.w, 0, MB, MW, &res);
                ck_assert_double_eq_tol(res.max_span - m * (t.f + t.b + t.w), want, TOL);
                ck_assert_double_eq_tol(res.peak_mem[0], (m < p ? m : p) * MB, TOL);
                ck_assert_double_eq_tol(max_peak(&res), res.peak_mem[0], TOL);
                zb_sim_result_free(&res);
                zb_schedule_free(&s);

                ck_assert_int_eq(zb_sched_gpipe(p, m, &s, &err), ZB_OK);
                sim_uniform(&s, t.f, t.b, t.w, 0, MB, MW, &res);
                ck_assert_double_eq_tol(res.max_span - m * (t.f + t.b + t.w), want, TOL);
                ck_assert_double_eq_tol(res.peak_mem[0], m * MB, TOL);
                zb_sim_result_free(&res);
                zb_schedule_free(&s);
            }
}
END_TEST

/* ZB-H1: bubble (p-1)(F+B-W) for m >= p and T_W <= T_F (the cool-down
 * slots a W fills are T_F long); peak p*M_B on rank 0, no rank above it,
 * also when W keeps all of B's memory (M_W = M_B). */
START_TEST(zbh1_bubble_and_peak) {
    const fbw costs[] = {{1, 1, 1}, {1, 2, 1}, {2, 2, 1}, {1.5, 1, 0.5}, {2, 1, 1.5}};
    const double mws[] = {1, 3};
    for (int p = 1; p <= 8; p++)
        for (int m = p; m <= 4 * p; m++)
            for (size_t k = 0; k < sizeof costs / sizeof costs[0]; k++)
                for (int w = 0; w < 2; w++) {
                    fbw t = costs[k];
                    zb_schedule s;
                    zb_sim_result res;
                    zb_err err;
                    ck_assert_int_eq(zb_sched_zbh1(p, m, &s, &err), ZB_OK);
                    sim_uniform(&s, t.f, t.b, t.w, 0, 3, mws[w], &res);
                    ck_assert_double_eq_tol(res.max_span - m * (t.f + t.b + t.w),
                                            (p - 1) * (t.f + t.b - t.w), TOL);
                    ck_assert_double_eq_tol(res.peak_mem[0], p * 3.0, TOL);
                    ck_assert(max_peak(&res) <= p * 3.0 + TOL);
                    zb_sim_result_free(&res);
                    zb_schedule_free(&s);
                }
}
END_TEST

/* ZB-H2: bubble (p-1)(F+B-2W) for m >= 2p, T_W <= T_F and 2T_W <= T_F+T_B
 * (zero at F = B = W); peak (2p-1)*M_B on rank 0 and at most that on any. */
START_TEST(zbh2_bubble_and_peak) {
    const fbw costs[] = {{1, 1, 1}, {1, 2, 1}, {2, 2, 1}, {1, 1.5, 0.5}, {2, 1, 1.5}};
    const double mws[] = {1, 3};
    for (int p = 1; p <= 8; p++)
        for (int m = 2 * p; m <= 4 * p; m++)
            for (size_t k = 0; k < sizeof costs / sizeof costs[0]; k++)
                for (int w = 0; w < 2; w++) {
                    fbw t = costs[k];
                    zb_schedule s;
                    zb_sim_result res;
                    zb_err err;
                    ck_assert_int_eq(zb_sched_zbh2(p, m, &s, &err), ZB_OK);
                    sim_uniform(&s, t.f, t.b, t.w, 0, 3, mws[w], &res);
                    ck_assert_double_eq_tol(res.max_span - m * (t.f + t.b + t.w),
                                            (p - 1) * (t.f + t.b - 2 * t.w), TOL);
                    ck_assert_double_eq_tol(res.peak_mem[0], (2 * p - 1) * 3.0, TOL);
                    ck_assert(max_peak(&res) <= (2 * p - 1) * 3.0 + TOL);
                    zb_sim_result_free(&res);
                    zb_schedule_free(&s);
                }
}
END_TEST

/* ZB-H1 beats 1F1B by exactly (p-1)*2W and ZB-H2 by (p-1)*3W at F=B=W:
 * the same numbers seen as a comparison (a third of 1F1B's bubble, zero). */
START_TEST(zbh_vs_1f1b_at_equal_costs) {
    for (int p = 2; p <= 8; p++) {
        int m = 3 * p;
        zb_schedule s;
        zb_sim_result res;
        zb_err err;
        double bub[3];
        zb_status (*gen[3])(int, int, zb_schedule *, zb_err *) = {
            zb_sched_1f1b, zb_sched_zbh1, zb_sched_zbh2};
        for (int g = 0; g < 3; g++) {
            ck_assert_int_eq(gen[g](p, m, &s, &err), ZB_OK);
            sim_uniform(&s, 1, 1, 1, 0, 1, 1, &res);
            bub[g] = res.max_span - 3.0 * m;
            zb_sim_result_free(&res);
            zb_schedule_free(&s);
        }
        ck_assert_double_eq_tol(bub[0], 3.0 * (p - 1), TOL);
        ck_assert_double_eq_tol(bub[1], bub[0] / 3, TOL);
        ck_assert_double_eq_tol(bub[2], 0, TOL);
    }
}
END_TEST

/* Interleaved 1F1B: bubble (p-1)(F+B+W)/v with per-rank totals F, B, W,
 * each chunk costing 1/v of them. Peak on rank 0: p(1 + (p-1)/(pv))*M_B
 * (Korthikanti et al. 2022, sec. 4.2.3), i.e. (v+1)p - 1 chunk activations
 * of M_B/v each; when m = p every forward fits in the warm-up: p*M_B. */
START_TEST(interleaved_bubble) {
    const fbw costs[] = {{1, 1, 1}, {1, 2, 1}, {1.5, 2, 0.5}};
    for (int p = 1; p <= 8; p++)
        for (int v = 2; v <= 4; v++)
            for (int m = p; m <= 4 * p; m += p)
                for (size_t k = 0; k < sizeof costs / sizeof costs[0]; k++) {
                    fbw t = costs[k];
                    zb_schedule s;
                    zb_sim_result res;
                    zb_err err;
                    ck_assert_int_eq(zb_sched_interleaved(p, m, v, &s, &err), ZB_OK);
                    sim_uniform(&s, t.f / v, t.b / v, t.w / v, 0, 1.0 / v, 0.5 / v, &res);
                    ck_assert_double_eq_tol(res.max_span - m * (t.f + t.b + t.w),
                                            (p - 1) * (t.f + t.b + t.w) / v, TOL);
                    double peak = m == p ? p : p * (1 + (p - 1) / (double)(p * v));
                    ck_assert_double_eq_tol(res.peak_mem[0], peak, TOL);
                    ck_assert(max_peak(&res) <= peak + TOL);
                    zb_sim_result_free(&res);
                    zb_schedule_free(&s);
                }
}
END_TEST

/* ZB-V at T_F = T_B = T_W per chunk, m >= 2p: every rank busy from its
 * first pass to its last (zero bubble), and at most 2p chunk activations
 * = p*M_B per rank, M_B being a whole rank's (two chunks') activations of
 * one microbatch; checked with M_W = M_B (W frees everything) too. */
START_TEST(zbv_zero_bubble_and_peak) {
    const double mws[] = {0.5, 1};
    for (int p = 1; p <= 8; p++)
        for (int m = 2 * p; m <= 4 * p; m++)
            for (int w = 0; w < 2; w++) {
                zb_schedule s;
                zb_sim_result res;
                zb_err err;
                ck_assert_int_eq(zb_sched_zbv(p, m, &s, &err), ZB_OK);
                sim_uniform(&s, 1, 1, 1, 0, 1, mws[w], &res);
                for (int r = 0; r < p; r++)
                    ck_assert_double_eq_tol(res.span[r], 6.0 * m, TOL);
                ck_assert_double_eq_tol(res.bubble_rate, 0, TOL);
                ck_assert(max_peak(&res) <= 2.0 * p + TOL);
                zb_sim_result_free(&res);
                zb_schedule_free(&s);
            }
}
END_TEST

/* zb-v for m < 2p with costs (the registry): never longer than its lists
 * laid out for 2p microbatches nor than PyTorch's ScheduleZBVZeroBubble,
 * which lays them out for 2p-1; at p 4, m 5..7, T_F = T_B = T_W = 1 per
 * rank (0.5 a chunk) PyTorch's is one microbatch slot (1) shorter, and so
 * is zb-v now: 17, 19, 21 against 18, 20, 22. */
static double span_of(const zb_schedule *s, const zb_costs *c) {
    double span;
    zb_err err;
    ck_assert_int_eq(zb_simulate_fast(s, c, NULL, &span, NULL, &err), ZB_OK);
    return span;
}

START_TEST(zbv_not_longer_than_pytorch_layout) {
    const double cs[][4] = {{1, 1, 1, 0}, {1, 2, 1, 0}, {1, 1, 2, 0}, {1.3, 2.4, 2.3, 0.14}};
    int better = 0;
    for (int p = 2; p <= 8; p++)
        for (int m = 1; m <= 2 * p + 1; m++)
            for (int k = 0; k < 4; k++) {
                zb_costs c;
                zb_err err;
                ck_assert_int_eq(zb_costs_uniform(&c, 2 * p, cs[k][0] / 2, cs[k][1] / 2,
                                                  cs[k][2] / 2, cs[k][3], 1, 0.5, &err), ZB_OK);
                zb_sched_params prm = {.p = p, .m = m, .v = 2, .costs = &c};
                zb_schedule s, a, b;
                ck_assert_int_eq(zb_schedule_make("zb-v", &prm, &s, NULL, &err), ZB_OK);
                ck_assert_int_eq(zb_sched_zbv(p, m, &a, &err), ZB_OK);
                ck_assert_int_eq(zb_sched_zbv_layout(p, m, m > 2 * p - 1 ? m : 2 * p - 1,
                                                     &b, &err), ZB_OK);
                double zs = span_of(&s, &c), za = span_of(&a, &c), zp = span_of(&b, &c);
                ck_assert_msg(zs <= za + TOL && zs <= zp + TOL, "p %d m %d costs %d: "
                              "zb-v %g, 2p layout %g, PyTorch's %g", p, m, k, zs, za, zp);
                better += zs < za - TOL;
                if (p == 4 && m >= 5 && m <= 7 && k == 0) {
                    ck_assert_double_eq_tol(za, 18 + 2 * (m - 5), TOL);
                    ck_assert_double_eq_tol(zs, 17 + 2 * (m - 5), TOL);
                }
                zb_schedule_free(&s), zb_schedule_free(&a), zb_schedule_free(&b);
                zb_costs_free(&c);
            }
    ck_assert_int_gt(better, 20);
}
END_TEST

/* V-Half and V-Min (building blocks): valid for every m, split B/W, V
 * placement, and their peak (chunk M_B = 1, M_W = M_B: nothing released
 * before W) is at most floor(p/2) + 1 and ceil(p/3) + 1 microbatches of a
 * rank (2 chunks each), against 1F1B's p: about a half and a third. */
START_TEST(vhalf_vmin_memory) {
    for (int p = 1; p <= 16; p++) {
        const int ms[] = {1, p > 1 ? p - 1 : 1, p, 2 * p, 3 * p + 1};
        for (int k = 0; k < 5; k++)
            for (int h = 0; h < 2; h++) {
                zb_schedule s;
                zb_sim_result res;
                zb_err err;
                int m = ms[k];
                ck_assert_int_eq((h ? zb_sched_vmin : zb_sched_vhalf)(p, m, &s, &err), ZB_OK);
                ck_assert_int_eq(s.placement, ZB_PLACE_V);
                ck_assert_int_eq(s.v, 2);
                count_passes(&s, true);
                sim_uniform(&s, 1, 1, 1, 0, 1, 1, &res);
                double bound = h ? (p + 2) / 3 + 1 : p / 2 + 1; /* microbatches */
                ck_assert_msg(max_peak(&res) <= 2 * bound + TOL, "%s p=%d m=%d: "
                              "peak %g chunk activations > %g", s.name, p, m,
                              max_peak(&res), 2 * bound);
                zb_sim_result_free(&res);
                zb_schedule_free(&s);
            }
    }
    zb_schedule s;
    zb_err err;
    ck_assert_int_eq(zb_sched_vmin(0, 4, &s, &err), ZB_EINPUT);
    ck_assert_int_eq(zb_sched_vhalf(4, 0, &s, &err), ZB_EINPUT);
}
END_TEST

/* ---- validity sweep --------------------------------------------------- */

typedef struct {
    const char *name;
    int v;
    bool split;
} gen_case;

static zb_status run_gen(const gen_case *g, int p, int m, zb_schedule *s,
                         zb_err *err) {
    if (!strcmp(g->name, "gpipe")) return zb_sched_gpipe(p, m, s, err);
    if (!strcmp(g->name, "1f1b")) return zb_sched_1f1b(p, m, s, err);
    if (!strcmp(g->name, "interleaved")) return zb_sched_interleaved(p, m, g->v, s, err);
    if (!strcmp(g->name, "zb-h1")) return zb_sched_zbh1(p, m, s, err);
    if (!strcmp(g->name, "zb-h2")) return zb_sched_zbh2(p, m, s, err);
    return zb_sched_zbv(p, m, s, err);
}

static bool allowed(const gen_case *g, int p, int m) {
    if (!strcmp(g->name, "interleaved")) return m % p == 0;
    if (!strcmp(g->name, "zb-h2")) return m >= 2 * p;
    return true;
}

/* p in 1..8, m in 1..4p: every allowed case has each pass exactly once and
 * simulates (with unequal costs and T_comm > 0); the others fail with
 * ZB_EINPUT and leave nothing to free. */
START_TEST(every_schedule_is_valid) {
    const gen_case gens[] = {{"gpipe", 1, false}, {"1f1b", 1, false},
                             {"interleaved", 2, false}, {"interleaved", 3, false},
                             {"zb-h1", 1, true}, {"zb-h2", 1, true},
                             {"zb-v", 2, true}};
    for (size_t g = 0; g < sizeof gens / sizeof gens[0]; g++)
        for (int p = 1; p <= 8; p++)
            for (int m = 1; m <= 4 * p; m++) {
                zb_schedule s;
                zb_err err;
                zb_status st = run_gen(&gens[g], p, m, &s, &err);
                if (!allowed(&gens[g], p, m)) {
                    ck_assert_int_eq(st, ZB_EINPUT);
                    ck_assert_ptr_null(s.acts);
                    continue;
                }
                ck_assert_msg(st == ZB_OK, "%s p=%d m=%d: %s", gens[g].name, p, m, err.msg);
                ck_assert_str_eq(s.name, gens[g].name);
                ck_assert_int_eq(s.p, p);
                ck_assert_int_eq(s.m, m);
                ck_assert_int_eq(s.v, gens[g].v);
                ck_assert_int_eq(s.placement, strcmp(gens[g].name, "zb-v") ? ZB_PLACE_LOOP
                                                                             : ZB_PLACE_V);
                count_passes(&s, gens[g].split);
                zb_sim_result res; /* validity does not depend on the costs */
                sim_uniform(&s, 1.3, 2.1, 0.7, 0.4, 2, 1, &res);
                zb_sim_result_free(&res);
                zb_schedule_free(&s);
            }
}
END_TEST

/* ---- errors ----------------------------------------------------------- */

START_TEST(generator_errors) {
    zb_schedule s;
    zb_err err;
    ck_assert_int_eq(zb_sched_zbh2(3, 5, &s, &err), ZB_EINPUT);
    ck_assert_str_eq(err.msg, "zb-h2 needs at least 2p microbatches (m=5 < 2p=6)");
    ck_assert_int_eq(zb_sched_interleaved(4, 6, 2, &s, &err), ZB_EINPUT);
    ck_assert_str_eq(err.msg, "interleaved needs microbatches (m=6) divisible by "
                              "stages (p=4)");
    ck_assert_int_eq(zb_sched_interleaved(4, 8, 1, &s, &err), ZB_EINPUT);
    ck_assert_str_eq(err.msg, "interleaved needs chunks per rank v in 2..255 (got v=1)");
    ck_assert_int_eq(zb_sched_1f1b(0, 4, &s, &err), ZB_EINPUT);
    ck_assert_str_eq(err.msg, "1f1b needs pipeline stages p in 1..1024 (got p=0)");
    ck_assert_int_eq(zb_sched_zbv(2, 0, &s, &err), ZB_EINPUT);
    ck_assert_str_eq(err.msg, "zb-v needs microbatches m in 1..1048576 (got m=0)");
    ck_assert_int_eq(zb_sched_gpipe(-1, 1, &s, &err), ZB_EINPUT);
    ck_assert_int_eq(zb_sched_zbh1(2, -3, &s, &err), ZB_EINPUT);
    zb_schedule_free(&s); /* safe after a failure */
}
END_TEST

/* ---- registry --------------------------------------------------------- */

START_TEST(registry_names) {
    const char *want[] = {"gpipe", "1f1b", "interleaved", "zb-h1", "zb-h2", "zb-v",
                          "zb-auto", "zb-1p", "zb-2p", "zb-auto-v", "dualpipev", NULL};
    const char *const *got = zb_schedule_names();
    for (int i = 0; want[i]; i++) ck_assert_str_eq(got[i], want[i]);
    ck_assert_ptr_null(got[11]);
    ck_assert_int_eq(zb_schedule_chunks("dualpipev", 4), 2);
    const bool v_place[] = {false, false, false, false, false, true, false, false,
                            false, true, true};
    for (int i = 0; want[i]; i++)
        ck_assert_int_eq(zb_schedule_placement(want[i]), v_place[i] ? ZB_PLACE_V : ZB_PLACE_LOOP);
    ck_assert_int_eq(zb_schedule_chunks("interleaved", 3), 3);
    ck_assert_int_eq(zb_schedule_chunks("zb-v", 5), 2);
    ck_assert_int_eq(zb_schedule_chunks("zb-auto-v", 1), 2);
    ck_assert_int_eq(zb_schedule_chunks("1f1b", 4), 1);
    ck_assert_int_eq(zb_schedule_chunks("zb-2p", 4), 1);
    ck_assert_int_eq(zb_schedule_chunks("nope", 4), 0);
    const bool split[] = {false, false, false, true, true, true, true, true, true, true, true};
    for (int i = 0; want[i]; i++) ck_assert(zb_schedule_splits_bw(want[i]) == split[i]);
    ck_assert(!zb_schedule_splits_bw("nope"));
    /* any case, and PyTorch's names */
    const char *alias[][2] = {{"DualPipeV", "dualpipev"}, {"1F1B", "1f1b"},
                              {"GPipe", "gpipe"}, {"interleaved1f1b", "interleaved"},
                              {"ZBVZeroBubble", "zb-v"}, {"ZB-H1", "zb-h1"},
                              {"V-Half", "v-half"}, {"zb-v", "zb-v"},
                              {"InterleavedZeroBubble", "zb-v"},
                              {"DualPipe", "dualpipe"}};
    for (size_t i = 0; i < sizeof alias / sizeof alias[0]; i++)
        ck_assert_str_eq(zb_schedule_resolve(alias[i][0]), alias[i][1]);
    ck_assert_ptr_null(zb_schedule_resolve("zb-v2"));
    ck_assert_int_eq(zb_schedule_chunks("DualPipeV", 4), 2);
    ck_assert_int_eq(zb_schedule_placement("ZBVZeroBubble"), ZB_PLACE_V);
    zb_sched_params prm = {.p = 2, .m = 4, .v = 2};
    zb_schedule s;
    zb_err err;
    ck_assert_int_eq(zb_schedule_make("ZBVZEROBUBBLE", &prm, &s, NULL, &err), ZB_OK);
    ck_assert_str_eq(s.name, "zb-v");
    zb_schedule_free(&s);
    char text[1024];
    zb_schedule_list_text(text, sizeof text);
    ck_assert_ptr_nonnull(strstr(text, "Schedules: gpipe 1f1b interleaved zb-h1 zb-h2 "
                                       "zb-v zb-auto zb-1p zb-2p zb-auto-v dualpipev "
                                       "v-half v-min dualpipe\n"));
    ck_assert_ptr_nonnull(strstr(text, "ZBVZeroBubble = zb-v"));
    char tiny[12];
    zb_schedule_list_text(tiny, sizeof tiny); /* cut, terminated */
    ck_assert_str_eq(tiny, "Schedules: ");
}
END_TEST

START_TEST(make_errors) {
    zb_sched_params prm = {.p = 4, .m = 8, .v = 2};
    zb_schedule s;
    zb_err err;
    ck_assert_int_eq(zb_schedule_make("zb-h3", &prm, &s, NULL, &err), ZB_EINPUT);
    ck_assert_str_eq(err.msg, "unknown schedule 'zb-h3'; known: gpipe, 1f1b, "
                              "interleaved, zb-h1, zb-h2, zb-v, zb-auto, zb-1p, "
                              "zb-2p, zb-auto-v, dualpipev, v-half, v-min, "
                              "dualpipe");
    prm.m = 6;
    ck_assert_int_eq(zb_schedule_make("interleaved", &prm, &s, NULL, &err), ZB_EINPUT);
    ck_assert_str_eq(err.msg, "interleaved needs microbatches (m=6) divisible by "
                              "stages (p=4)");
    ck_assert_int_eq(zb_schedule_make("zb-h2", &prm, &s, NULL, &err), ZB_EINPUT);
    ck_assert_str_eq(err.msg, "zb-h2 needs at least 2p microbatches (m=6 < 2p=8)");
    prm.m = 0;
    ck_assert_int_eq(zb_schedule_make("zb-auto", &prm, &s, NULL, &err), ZB_EINPUT);
    ck_assert_str_eq(err.msg, "zb-auto needs microbatches m in 1..1048576 (got m=0)");
    prm.m = 8;
    ck_assert_int_eq(zb_schedule_make("zb-1p", &prm, &s, NULL, &err), ZB_EINPUT);
    ck_assert_str_eq(err.msg, "zb-1p needs per-stage costs for its 4 virtual stages");

    zb_costs c;
    ck_assert_int_eq(zb_costs_uniform(&c, 4, 1, 1, 1, 0, 1, 1, &err), ZB_OK);
    prm.costs = &c;
    ck_assert_int_eq(zb_schedule_make("zb-auto", &prm, &s, NULL, &err), ZB_EINPUT);
    ck_assert_str_eq(err.msg, "zb-auto needs a memory limit per rank (mem_limit > 0, got 0)");
    ck_assert_int_eq(zb_schedule_make("zb-v", &prm, &s, NULL, &err), ZB_EINPUT);
    ck_assert_str_eq(err.msg, "zb-v with p=4 has 8 virtual stages, but the costs cover 4");
    ck_assert_int_eq(zb_schedule_make("interleaved", &prm, &s, NULL, &err), ZB_EINPUT);
    ck_assert_int_eq(zb_schedule_make(NULL, &prm, &s, NULL, &err), ZB_EINPUT);
    ck_assert_int_eq(zb_schedule_make("1f1b", NULL, &s, NULL, &err), ZB_EINPUT);
    zb_schedule_free(&s);
    zb_costs_free(&c);
}
END_TEST

static bool same_actions(const zb_schedule *a, const zb_schedule *b) {
    if (a->p != b->p || a->m != b->m || a->v != b->v || a->placement != b->placement)
        return false;
    for (int r = 0; r < a->p; r++) {
        if (a->len[r] != b->len[r]) return false;
        for (int i = 0; i < a->len[r]; i++) {
            const zb_action *x = &a->acts[r][i], *y = &b->acts[r][i];
            if (x->pass != y->pass || x->chunk != y->chunk || x->mb != y->mb) return false;
        }
    }
    return true;
}

/* make() returns what the generator builds, and a report whose max_span is
 * the simulator's. */
START_TEST(make_dispatches_handmade) {
    const char *names[] = {"gpipe", "1f1b", "interleaved", "zb-h1", "zb-h2", "zb-v"};
    int p = 3, m = 6, v = 3;
    for (int k = 0; k < 6; k++) {
        int chunks = zb_schedule_chunks(names[k], v);
        zb_costs c;
        zb_err err;
        ck_assert_int_eq(zb_costs_uniform(&c, p * chunks, 1, 2, 1, 0.1, 1, 1, &err), ZB_OK);
        zb_sched_params prm = {.p = p, .m = m, .v = v, .costs = &c};
        zb_schedule s, want;
        zb_sched_report rep;
        ck_assert_int_eq(zb_schedule_make(names[k], &prm, &s, &rep, &err), ZB_OK);
        gen_case g = {names[k], v, false};
        ck_assert_int_eq(run_gen(&g, p, m, &want, &err), ZB_OK);
        ck_assert(same_actions(&s, &want));
        ck_assert_str_eq(s.name, names[k]);
        ck_assert_str_eq(rep.solver, "generator");
        zb_sim_result res;
        ck_assert_int_eq(zb_simulate(&s, &c, &res, &err), ZB_OK);
        ck_assert_double_eq_tol(rep.max_span, res.max_span, TOL);
        ck_assert(!rep.optimal && !rep.timed_out);
        zb_sim_result_free(&res);
        zb_schedule_free(&s);
        zb_schedule_free(&want);
        zb_costs_free(&c);
        /* without costs: a schedule, no max_span */
        prm.costs = NULL;
        ck_assert_int_eq(zb_schedule_make(names[k], &prm, &s, &rep, &err), ZB_OK);
        ck_assert_double_eq(rep.max_span, 0);
        zb_schedule_free(&s);
    }
}
END_TEST

/* The automatic schedules through make(): valid, within their memory
 * limits (p*M_B for zb-1p, 2p*M_B for zb-2p and zb-auto-v, the given one
 * for zb-auto), named and reported. Any correct zb_auto / ILP passes. */
static void check_auto(const char *name, int p, int m, zb_solver solver,
                       double mem_limit, double want_limit, const char *want_solver) {
    int chunks = zb_schedule_chunks(name, 1);
    zb_costs c;
    zb_err err;
    ck_assert_int_eq(zb_costs_init(&c, p * chunks, &err), ZB_OK);
    for (int i = 0; i < p * chunks; i++) { /* uneven stages */
        c.t_f[i] = 1 + 0.1 * i;
        c.t_b[i] = 1.5;
        c.t_w[i] = 0.8;
        c.t_comm[i] = 0.05;
        c.m_b[i] = 2 + (i % 2);
        c.m_w[i] = 1;
    }
    zb_sched_params prm = {.p = p, .m = m, .v = 1, .costs = &c, .mem_limit = mem_limit,
                           .solver = solver, .time_limit_s = 2, .mip_gap = 1e-4};
    zb_schedule s;
    zb_sched_report rep;
    zb_status st = zb_schedule_make(name, &prm, &s, &rep, &err);
    ck_assert_msg(st == ZB_OK, "%s: %s", name, err.msg);
    ck_assert_str_eq(s.name, name);
    if (strcmp(want_solver, "ilp*") == 0) /* the MIP's or its warm start */
        ck_assert_msg(strncmp(rep.solver, "ilp", 3) == 0, "%s", rep.solver);
    else
        ck_assert_str_eq(rep.solver, want_solver);
    ck_assert_int_eq(s.v, chunks);
    count_passes(&s, true);
    zb_sim_result res;
    ck_assert_int_eq(zb_simulate(&s, &c, &res, &err), ZB_OK);
    ck_assert(max_peak(&res) <= want_limit + TOL);
    ck_assert_double_eq_tol(rep.max_span, res.max_span, 1e-6);
    zb_sim_result_free(&res);
    zb_schedule_free(&s);
    zb_costs_free(&c);
}

START_TEST(make_dispatches_auto) {
    /* max m_b = 3 */
    check_auto("zb-1p", 4, 8, ZB_SOLVER_HEURISTIC, 0, 4 * 3.0, "heuristic");
    check_auto("zb-2p", 4, 8, ZB_SOLVER_HEURISTIC, 0, 8 * 3.0, "heuristic");
    check_auto("zb-2p", 4, 8, ZB_SOLVER_HEURISTIC, 13, 13, "heuristic");
    check_auto("zb-auto", 4, 8, ZB_SOLVER_HEURISTIC, 15, 15, "heuristic");
    check_auto("zb-auto", 4, 12, ZB_SOLVER_AUTO, 15, 15, "heuristic"); /* 144 passes */
    check_auto("zb-auto-v", 3, 6, ZB_SOLVER_HEURISTIC, 0, 6 * 3.0, "heuristic");
    check_auto("zb-auto-v", 3, 6, ZB_SOLVER_ILP, 0, 6 * 3.0, "ilp*"); /* V ILP */
    check_auto("zb-1p", 2, 3, ZB_SOLVER_AUTO, 0, 2 * 3.0, "ilp"); /* 18 passes */
}
END_TEST

int main(void) {
    Suite *su = suite_create("schedules");
    TCase *tc = tcase_create("closed_forms");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, fused_bubble_and_peak);
    tcase_add_test(tc, zbh1_bubble_and_peak);
    tcase_add_test(tc, zbh2_bubble_and_peak);
    tcase_add_test(tc, zbh_vs_1f1b_at_equal_costs);
    tcase_add_test(tc, interleaved_bubble);
    tcase_add_test(tc, zbv_zero_bubble_and_peak);
    tcase_add_test(tc, zbv_not_longer_than_pytorch_layout);
    tcase_add_test(tc, vhalf_vmin_memory);
    suite_add_tcase(su, tc);
    tc = tcase_create("validity");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, every_schedule_is_valid);
    tcase_add_test(tc, generator_errors);
    suite_add_tcase(su, tc);
    tc = tcase_create("registry");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, registry_names);
    tcase_add_test(tc, make_errors);
    tcase_add_test(tc, make_dispatches_handmade);
    tcase_add_test(tc, make_dispatches_auto);
    suite_add_tcase(su, tc);
    SRunner *sr = srunner_create(su);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
