/* test_dualpipe_bidir.c - DualPipe, bidirectional (planner/schedules/
 * dualpipe.c) and the DUAL placement it runs on (common/zb_schedule.h):
 * the simulated bubble against DeepSeek's (PP/2-1)(T_F&B + T_B - 3 T_W)
 * on uniform costs (T_B the full backward, T_F&B the overlapped step),
 * activations PP+1 stages per rank, the two copies as separate chains in
 * the simulator and in the lowering, and the refusals (odd p, odd or too
 * few microbatches). The bubble is the longest span minus the busy time
 * of the middle pair of ranks (p/2-1 and p/2), the ranks with the most
 * overlapped steps, as test_dualpipe.c does for DualPipeV.
 */
#include <check.h>
#include <string.h>

#include "common/zb_lower.h"
#include "common/zb_sim.h"
#include "planner/registry/registry.h"

static void make(int p, int m, const zb_costs *c, zb_schedule *s) {
    zb_sched_params prm = {.p = p, .m = m, .v = 2, .costs = c};
    zb_err err;
    zb_status st = zb_schedule_make("DualPipe", &prm, s, NULL, &err);
    ck_assert_msg(st == ZB_OK, "p %d m %d: %s", p, m, err.msg);
    ck_assert_str_eq(s->name, "dualpipe");
    ck_assert_int_eq(s->placement, ZB_PLACE_DUAL);
}

static int overlaps_on(const zb_schedule *s, int r) {
    int n = 0;
    for (int i = 0; i < s->len[r]; i++) n += zb_action_overlaps(&s->acts[r][i]);
    return n;
}

/* One (p, m, w, overlap) case of bubble_closed_form. */
static void bubble_case(int p, int m, double w, double o) {
    double f = 1, b = 1, full = b + w;
    zb_costs c;
    zb_err err;
    ck_assert_int_eq(zb_costs_uniform(&c, 2 * p, f, b, w, 0, 1, 0.5, &err), ZB_OK);
    c.fb_overlap = o;
    zb_schedule s;
    make(p, m, &c, &s);
    zb_sim_result res;
    ck_assert_int_eq(zb_simulate(&s, &c, &res, &err), ZB_OK);
    double fb = zb_costs_fb_time(&c, 0, 1, ZB_BW);
    double want = (p / 2 - 1) * (fb + full - 3 * w);
    int mid = p / 2 - 1;
    for (int r = 0; r < p; r++) ck_assert(res.busy[mid] <= res.busy[r] + 1e-9);
    double got = res.max_span - res.busy[mid];
    ck_assert_msg(got > want - 1e-9 && got < want + 1e-9,
                  "p %d m %d w %g o %g: bubble %g, formula %g", p, m, w, o,
                  got, want);
    /* busy: m of each pass (one stage per microbatch per rank), each
     * overlapped step saving o min(F, BW) */
    double least = f < full ? f : full;
    for (int r = 0; r < p; r++) {
        double busy = m * (f + b + w) - overlaps_on(&s, r) * o * least;
        ck_assert_double_eq_tol(res.busy[r], busy, 1e-9);
        ck_assert_int_eq(overlaps_on(&s, r), overlaps_on(&s, p - 1 - r));
    }
    zb_sim_result_free(&res);
    zb_schedule_free(&s);
    zb_costs_free(&c);
}

START_TEST(bubble_closed_form) {
    const double ws[] = {0.25, 0.5, 0.75, 1}, os[] = {0, 0.3, 1};
    int cases = 0;
    for (int p = 2; p <= 10; p += 2) {
        int ms[] = {2 * p, 2 * p + 2, 3 * p + (3 * p) % 2, 5 * p + 2};
        for (int im = 0; im < 4; im++)
            for (int iw = 0; iw < 4; iw++)
                for (int io = 0; io < 3; io++, cases++)
                    bubble_case(p, ms[im], ws[iw], os[io]);
    }
    ck_assert_int_eq(cases, 5 * 4 * 4 * 3);
}
END_TEST

/* With T_comm = 0 DualPipe's timeline is DualPipeV's on p/2 ranks and m/2
 * microbatches (chunk = stage of one copy there, too). */
START_TEST(same_span_as_dualpipev) {
    for (int p = 2; p <= 8; p += 2)
        for (int m = 2 * p; m <= 4 * p; m += 2) {
            zb_costs c;
            zb_err err;
            ck_assert_int_eq(zb_costs_uniform(&c, 2 * p, 1, 1.5, 0.7, 0, 1, 0.5, &err), ZB_OK);
            c.fb_overlap = 0.4;
            zb_schedule s, v;
            make(p, m, &c, &s);
            zb_sched_params prm = {.p = p / 2, .m = m / 2, .v = 2};
            ck_assert_int_eq(zb_schedule_make("dualpipev", &prm, &v, NULL, &err), ZB_OK);
            zb_costs cv;
            ck_assert_int_eq(zb_costs_uniform(&cv, p, 1, 1.5, 0.7, 0, 1, 0.5, &err), ZB_OK);
            cv.fb_overlap = 0.4;
            double a, b, pa, pb;
            ck_assert_int_eq(zb_simulate_fast(&s, &c, NULL, &a, &pa, &err), ZB_OK);
            ck_assert_int_eq(zb_simulate_fast(&v, &cv, NULL, &b, &pb, &err), ZB_OK);
            ck_assert_msg(a > b - 1e-9 && a < b + 1e-9, "p %d m %d: %g vs %g", p, m, a, b);
            ck_assert_double_eq_tol(pa, pb, 1e-12);
            zb_schedule_free(&s);
            zb_schedule_free(&v);
            zb_costs_free(&c);
            zb_costs_free(&cv);
        }
}
END_TEST

START_TEST(activations_pp_plus_one) {
    for (int p = 2; p <= 10; p += 2) {
        int ms[] = {2 * p, 3 * p + (3 * p) % 2, 5 * p};
        for (int im = 0; im < 3; im++)
            for (int full = 0; full < 2; full++) {
                zb_costs c;
                zb_err err;
                ck_assert_int_eq(zb_costs_uniform(&c, 2 * p, 1, 1, 1, 0, 1,
                                                  full ? 1 : 0.5, &err), ZB_OK);
                zb_schedule s;
                make(p, ms[im], &c, &s);
                zb_sim_result res;
                ck_assert_int_eq(zb_simulate(&s, &c, &res, &err), ZB_OK);
                for (int r = 0; r < p; r++)
                    ck_assert_msg(res.peak_mem[r] == p + 1, "p %d m %d rank %d: "
                                  "peak %g, want PP+1 = %d", p, ms[im], r,
                                  res.peak_mem[r], p + 1);
                zb_sim_result_free(&res);
                zb_schedule_free(&s);
                zb_costs_free(&c);
            }
    }
}
END_TEST

/* Placement: chunk 0 the down copy's stage r, chunk 1 the up copy's stage
 * p-1-r; each microbatch only on its direction's chunk, once per rank. */
START_TEST(two_copies) {
    ck_assert_int_eq(zb_schedule_chunks("dualpipe", 4), 2);
    ck_assert_int_eq(zb_schedule_copies("DUALPIPE"), 2);
    ck_assert_int_eq(zb_schedule_copies("dualpipev"), 1);
    ck_assert_int_eq(zb_schedule_placement("DualPipe"), ZB_PLACE_DUAL);
    ck_assert_str_eq(zb_schedule_resolve("DualPipe"), "dualpipe");
    zb_schedule s;
    make(4, 8, NULL, &s);
    ck_assert_int_eq(zb_vstage_prev(&s, 0), -1);
    ck_assert_int_eq(zb_vstage_next(&s, 3), -1);
    ck_assert_int_eq(zb_vstage_prev(&s, 4), -1);
    ck_assert_int_eq(zb_vstage_next(&s, 4), 5);
    ck_assert_int_eq(zb_vstage_next(&s, 7), -1);
    for (int r = 0; r < 4; r++) {
        ck_assert_int_eq(zb_vstage(&s, r, 0), r);
        ck_assert_int_eq(zb_vstage(&s, r, 1), 7 - r);
        int nf[8] = {0};
        for (int i = 0; i < s.len[r]; i++) {
            const zb_action *a = &s.acts[r][i];
            ck_assert_int_eq(a->chunk, a->mb >= 4);
            if (a->pass == ZB_F) nf[a->mb]++;
        }
        for (int j = 0; j < 8; j++) ck_assert_int_eq(nf[j], 1);
    }
    zb_schedule_free(&s);
}
END_TEST

START_TEST(refusals) {
    static const struct { int p, m; const char *msg; } bad[] = {
        {3, 12, "dualpipe needs an even number of pipeline stages (p=3); "
                "dualpipev runs on any p"},
        {4, 9, "dualpipe needs an even number of microbatches, at least 2p "
               "(m=9, 2p=8)"},
        {4, 6, "dualpipe needs an even number of microbatches, at least 2p "
               "(m=6, 2p=8)"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        zb_sched_params prm = {.p = bad[i].p, .m = bad[i].m, .v = 2};
        zb_schedule s;
        zb_err err;
        ck_assert_int_eq(zb_schedule_make("dualpipe", &prm, &s, NULL, &err), ZB_EINPUT);
        ck_assert_str_eq(err.msg, bad[i].msg);
    }
}
END_TEST

/* p 2, m 2 by hand: mb 0 down (rank 0 then 1), mb 1 up (rank 1 then 0).
 *   rank 0: F0.0 F1.1 BW1.1 BW0.0      rank 1: F1.1 F0.0 BW0.0 BW1.1 */
static void tiny(zb_schedule *s) {
    zb_err err;
    ck_assert_int_eq(zb_schedule_init(s, "hand", 2, 2, 2, ZB_PLACE_DUAL, 0, &err), ZB_OK);
    static const int acts[2][4][3] = {
        {{ZB_F, 0, 0}, {ZB_F, 1, 1}, {ZB_BW, 1, 1}, {ZB_BW, 0, 0}},
        {{ZB_F, 1, 1}, {ZB_F, 0, 0}, {ZB_BW, 0, 0}, {ZB_BW, 1, 1}}};
    for (int r = 0; r < 2; r++)
        for (int i = 0; i < 4; i++)
            ck_assert_int_eq(zb_schedule_push(s, r, acts[r][i][0], acts[r][i][1],
                                              acts[r][i][2], &err), ZB_OK);
}

/* The up copy's first stage (rank 1, chunk 1) starts at 0, waiting for
 * nothing of the down copy; each transfer costs T_comm 0.5. */
START_TEST(sim_two_chains) {
    zb_schedule s;
    tiny(&s);
    zb_costs c;
    zb_err err;
    ck_assert_int_eq(zb_costs_uniform(&c, 4, 1, 1, 1, 0.5, 1, 0.5, &err), ZB_OK);
    zb_sim_result res;
    ck_assert_int_eq(zb_simulate(&s, &c, &res, &err), ZB_OK);
    static const double start[2][4] = {{0, 1.5, 2.5, 5}, {0, 1.5, 2.5, 5}};
    for (int r = 0; r < 2; r++)
        for (int i = 0; i < 4; i++)
            ck_assert_msg(res.start[res.off[r] + i] == start[r][i], "rank %d "
                          "action %d starts at %g, want %g", r, i,
                          res.start[res.off[r] + i], start[r][i]);
    ck_assert_double_eq(res.max_span, 7);
    zb_sim_result_free(&res);
    /* a down microbatch on the up copy's chunk is refused */
    s.acts[0][0].chunk = 1;
    ck_assert_int_eq(zb_simulate(&s, &c, &res, &err), ZB_EINFEASIBLE);
    ck_assert_str_eq(err.msg, "rank 0: action 0 (F mb 0 chunk 1): chunk of the "
                     "other direction's copy (DUAL: mb < m/2 runs on chunk 0)");
    zb_sim_result_free(&res);
    /* and a missing pass is named */
    s.acts[0][0].chunk = 0;
    s.len[1] = 3;
    ck_assert_int_eq(zb_simulate(&s, &c, &res, &err), ZB_EINFEASIBLE);
    ck_assert_str_eq(err.msg, "rank 1: missing B (or BW) of mb 1 chunk 1 "
                     "(virtual stage 2)");
    zb_sim_result_free(&res);
    zb_costs_free(&c);
    zb_schedule_free(&s);
}
END_TEST

/* Lowering: activations go down on chunk 0 and up on chunk 1, gradients
 * the other way; nothing crosses between the copies, nothing enters a
 * chain's first stage or leaves its last. */
START_TEST(lowering_directions) {
    zb_schedule s;
    tiny(&s);
    zb_program prog;
    zb_err err;
    ck_assert_int_eq(zb_lower(&s, &prog, &err), ZB_OK);
    /* {kind, action, peer, msg, vstage, mb} */
    static const zb_op want[2][8] = {
        {{ZB_OP_COMPUTE, 0, 0, ZB_MSG_ACT, 0, 0},
         {ZB_OP_SEND, 0, 1, ZB_MSG_ACT, 1, 0},
         {ZB_OP_RECV, 1, 1, ZB_MSG_ACT, 3, 1},
         {ZB_OP_COMPUTE, 1, 0, ZB_MSG_ACT, 3, 1},
         {ZB_OP_COMPUTE, 2, 0, ZB_MSG_GRAD, 3, 1},
         {ZB_OP_SEND, 2, 1, ZB_MSG_GRAD, 2, 1},
         {ZB_OP_RECV, 3, 1, ZB_MSG_GRAD, 0, 0},
         {ZB_OP_COMPUTE, 3, 0, ZB_MSG_GRAD, 0, 0}},
        {{ZB_OP_COMPUTE, 0, 1, ZB_MSG_ACT, 2, 1},
         {ZB_OP_SEND, 0, 0, ZB_MSG_ACT, 3, 1},
         {ZB_OP_RECV, 1, 0, ZB_MSG_ACT, 1, 0},
         {ZB_OP_COMPUTE, 1, 1, ZB_MSG_ACT, 1, 0},
         {ZB_OP_COMPUTE, 2, 1, ZB_MSG_GRAD, 1, 0},
         {ZB_OP_SEND, 2, 0, ZB_MSG_GRAD, 0, 0},
         {ZB_OP_RECV, 3, 0, ZB_MSG_GRAD, 2, 1},
         {ZB_OP_COMPUTE, 3, 1, ZB_MSG_GRAD, 2, 1}}};
    for (int r = 0; r < 2; r++) {
        ck_assert_int_eq(prog.len[r], 8);
        for (int i = 0; i < 8; i++) {
            const zb_op *o = &prog.ops[r][i], *w = &want[r][i];
            ck_assert_msg(o->kind == w->kind && o->action == w->action &&
                          o->peer == w->peer && o->msg == w->msg &&
                          o->vstage == w->vstage && o->mb == w->mb,
                          "rank %d op %d: kind %d action %d peer %d msg %d "
                          "vstage %d mb %d", r, i, o->kind, o->action, o->peer,
                          o->msg, o->vstage, o->mb);
        }
    }
    zb_program_free(&prog);
    zb_schedule_free(&s);
}
END_TEST

int main(void) {
    Suite *su = suite_create("dualpipe_bidir");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, bubble_closed_form);
    tcase_add_test(tc, same_span_as_dualpipev);
    tcase_add_test(tc, activations_pp_plus_one);
    tcase_add_test(tc, two_copies);
    tcase_add_test(tc, refusals);
    tcase_add_test(tc, sim_two_chains);
    tcase_add_test(tc, lowering_directions);
    suite_add_tcase(su, tc);
    SRunner *sr = srunner_create(su);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
