/* test_sim.c - the simulator and the lowering against hand-computed
 * timelines on small hand-written schedules. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/zb_lower.h"
#include "common/zb_sim.h"

/* Build a schedule from a string per rank: "F0 F1 B0 W0 B1 W1" (pass +
 * microbatch, optional ".c" chunk suffix like "F0.1"). */
static void build(zb_schedule *s, int p, int m, int v, zb_placement pl,
                  const char *const *ranks) {
    zb_err err;
    ck_assert_int_eq(zb_schedule_init(s, "test", p, m, v, pl, 2, &err), ZB_OK);
    for (int r = 0; r < p; r++) {
        char *dup = strdup(ranks[r]);
        for (char *tok = strtok(dup, " "); tok; tok = strtok(NULL, " ")) {
            int pass = tok[0] == 'F' ? ZB_F : tok[0] == 'W' ? ZB_W
                       : tok[1] == 'W' ? ZB_BW : ZB_B;
            const char *num = tok + (pass == ZB_BW ? 2 : 1);
            int mb = atoi(num), chunk = 0;
            const char *dot = strchr(num, '.');
            if (dot) chunk = atoi(dot + 1);
            ck_assert_int_eq(zb_schedule_push(s, r, pass, mb, chunk, &err), ZB_OK);
        }
        free(dup);
    }
}

START_TEST(two_stage_timeline) {
    /* p=2, m=2, F=1, B=2, W=1, comm=0.5. Hand timeline:
     * r0: F0 [0,1] F1 [1,2]               B0 [6.5,8.5] W0 [8.5,9.5] B1 [..]
     * r1: F0 [1.5,2.5] B0 [2.5,4.5] F1 [4.5,5.5] B1 [5.5,7.5] W0 [7.5,8.5] W1 [8.5,9.5]
     * r0's B0 waits for r1's B0 end 4.5 + 0.5 = 5, so B0 [5,7], W0 [7,8],
     * B1 needs r1 B1 end 7.5 + .5 = 8 -> [8,10], W1 [10,11]. */
    const char *ranks[] = {"F0 F1 B0 W0 B1 W1", "F0 B0 F1 B1 W0 W1"};
    zb_schedule s;
    build(&s, 2, 2, 1, ZB_PLACE_LOOP, ranks);
    zb_costs c;
    zb_err err;
    ck_assert_int_eq(zb_costs_uniform(&c, 2, 1, 2, 1, 0.5, 10, 4, &err), ZB_OK);
    zb_sim_result res;
    ck_assert_int_eq(zb_simulate(&s, &c, &res, &err), ZB_OK);
    double want0[] = {0, 1, 5, 7, 8, 10}, want1[] = {1.5, 2.5, 4.5, 5.5, 7.5, 8.5};
    for (int i = 0; i < 6; i++) {
        ck_assert_double_eq_tol(res.start[res.off[0] + i], want0[i], 1e-12);
        ck_assert_double_eq_tol(res.start[res.off[1] + i], want1[i], 1e-12);
    }
    ck_assert_double_eq_tol(res.last_end, 11, 1e-12);
    ck_assert_double_eq_tol(res.span[1], 9.5 - 1.5, 1e-12);
    ck_assert_double_eq_tol(res.busy[0], 8, 1e-12);
    ck_assert_double_eq_tol(res.bubble[0], (11 - 8) / 11.0, 1e-12);
    /* overall: (max span 11 - mean busy 8) / 11 */
    ck_assert_double_eq_tol(res.bubble_rate, 3 / 11.0, 1e-12);
    /* memory r0: F0 10, F1 20 (peak), B0 -> 14, W0 -> 10, ... */
    ck_assert_double_eq_tol(res.peak_mem[0], 20, 1e-12);
    ck_assert_double_eq_tol(res.peak_mem[1], 14, 1e-12); /* F0 10, B0 4, F1 14 */
    double mk, pk;
    ck_assert_int_eq(zb_simulate_fast(&s, &c, NULL, &mk, &pk, &err), ZB_OK);
    ck_assert_double_eq_tol(mk, 11, 1e-12);
    ck_assert_double_eq_tol(pk, 20, 1e-12);
    zb_sim_result_free(&res);
    zb_costs_free(&c);
    zb_schedule_free(&s);
}
END_TEST

/* M_W > M_B (full recomputation): B adds M_W - M_B, and a fused BW holds
 * that rise while it runs before freeing M_B; with M_W < M_B a BW only
 * frees. One rank, F=1, B=2, W=1. */
START_TEST(bw_memory_rise) {
    const char *bw[] = {"F0 F1 BW0 BW1"}, *split[] = {"F0 F1 B0 W0 B1 W1"};
    double mb[] = {2, 10}, mw[] = {5, 4};
    double want_bw[] = {4 + 3, 20}, want_split[] = {4 + 3, 20};
    for (int k = 0; k < 2; k++)
        for (int sp = 0; sp < 2; sp++) {
            zb_schedule s;
            build(&s, 1, 2, 1, ZB_PLACE_LOOP, sp ? split : bw);
            zb_costs c;
            zb_err err;
            ck_assert_int_eq(zb_costs_uniform(&c, 1, 1, 2, 1, 0, mb[k], mw[k], &err),
                             ZB_OK);
            zb_sim_result res;
            ck_assert_int_eq(zb_simulate(&s, &c, &res, &err), ZB_OK);
            ck_assert_double_eq_tol(res.peak_mem[0], sp ? want_split[k] : want_bw[k],
                                    1e-12);
            double mk, pk;
            ck_assert_int_eq(zb_simulate_fast(&s, &c, NULL, &mk, &pk, &err), ZB_OK);
            ck_assert_double_eq_tol(pk, res.peak_mem[0], 1e-12);
            zb_sim_result_free(&res);
            zb_costs_free(&c);
            zb_schedule_free(&s);
        }
}
END_TEST

static void expect_error(int p, int m, int v, zb_placement pl,
                         const char *const *ranks, const char *msg) {
    zb_schedule s;
    build(&s, p, m, v, pl, ranks);
    zb_costs c;
    zb_err err;
    ck_assert_int_eq(zb_costs_uniform(&c, p * v, 1, 1, 1, 0, 1, 1, &err), ZB_OK);
    zb_sim_result res;
    ck_assert_int_eq(zb_simulate(&s, &c, &res, &err), ZB_EINFEASIBLE);
    ck_assert_str_eq(err.msg, msg);
    zb_sim_result_free(&res);
    zb_costs_free(&c);
    zb_schedule_free(&s);
}

START_TEST(rejects_bad_schedules) {
    const char *missing[] = {"F0 F1 B0 W0 B1", "F0 B0 F1 B1 W0 W1"};
    expect_error(2, 2, 1, ZB_PLACE_LOOP, missing,
                 "rank 0: missing W of mb 1 chunk 0 (virtual stage 0)");
    const char *repeated[] = {"F0 F1 B0 W0 B1 W1 W1", "F0 B0 F1 B1 W0 W1"};
    expect_error(2, 2, 1, ZB_PLACE_LOOP, repeated,
                 "rank 0: action 6 (W mb 1 chunk 0): repeated pass");
    const char *w_first[] = {"F0 W0 B0", "F0 B0 W0"};
    expect_error(2, 1, 1, ZB_PLACE_LOOP, w_first,
                 "rank 0: action 1 (W mb 0 chunk 0): deadlock: waits for B of "
                 "mb 0 on virtual stage 0 (rank 0), which never runs first");
    const char *no_w[] = {"F0 B0", "F0 B0 W0"};
    expect_error(2, 1, 1, ZB_PLACE_LOOP, no_w,
                 "rank 0: missing W of mb 0 chunk 0 (virtual stage 0)");
    const char *mixed[] = {"F0 BW0 W0", "F0 BW0"};
    expect_error(2, 1, 1, ZB_PLACE_LOOP, mixed,
                 "rank 0: action 2 (W mb 0 chunk 0): mixes fused BW with split B/W");
    const char *range[] = {"F0 BW0 F2 BW2", "F0 BW0"};
    expect_error(2, 1, 1, ZB_PLACE_LOOP, range,
                 "rank 0: action 2 (F mb 2 chunk 0): microbatch out of range");
    /* BW after its B, a repeated F, a chunk past v: each named as such */
    const char *b_then_bw[] = {"F0 B0 BW0", "F0 BW0"};
    expect_error(2, 1, 1, ZB_PLACE_LOOP, b_then_bw,
                 "rank 0: action 2 (BW mb 0 chunk 0): mixes fused BW with split B/W");
    const char *two_f[] = {"F0 BW0", "F0 F0 BW0"};
    expect_error(2, 1, 1, ZB_PLACE_LOOP, two_f,
                 "rank 1: action 1 (F mb 0 chunk 0): repeated pass");
    const char *chunk[] = {"F0 BW0 F0.1", "F0 BW0"};
    expect_error(2, 1, 1, ZB_PLACE_LOOP, chunk,
                 "rank 0: action 2 (F mb 0 chunk 1): chunk out of range");
}
END_TEST

START_TEST(deadlock_between_ranks) {
    /* rank 1 runs F1 before F0 but rank 0 sends F0 first: fine (no
     * deadlock, just waiting); a real deadlock: rank 0 waits for B0 from
     * rank 1 before sending F1 that rank 1 needs first. */
    const char *ranks[] = {"F0 BW0 F1 BW1", "F1 BW1 F0 BW0"};
    expect_error(2, 2, 1, ZB_PLACE_LOOP, ranks,
                 "rank 0: action 1 (BW mb 0 chunk 0): deadlock: waits for B of "
                 "mb 0 on virtual stage 1 (rank 1), which never runs first");
}
END_TEST

START_TEST(b_can_raise_memory) {
    /* full recompute: m_w (3) > m_b (1): after F 1, after B 3, after W 0 */
    const char *ranks[] = {"F0 B0 W0"};
    zb_schedule s;
    build(&s, 1, 1, 1, ZB_PLACE_LOOP, ranks);
    zb_costs c;
    zb_err err;
    ck_assert_int_eq(zb_costs_uniform(&c, 1, 1, 1, 1, 0, 1, 3, &err), ZB_OK);
    double mk, pk;
    ck_assert_int_eq(zb_simulate_fast(&s, &c, NULL, &mk, &pk, &err), ZB_OK);
    ck_assert_double_eq_tol(pk, 3, 1e-12);
    zb_costs_free(&c);
    zb_schedule_free(&s);
}
END_TEST

START_TEST(v_placement_turn_has_no_comm) {
    /* p=1, v=2 V placement: both chunks on rank 0, comm must not apply. */
    const char *ranks[] = {"F0.0 F0.1 B0.1 B0.0 W0.1 W0.0"};
    zb_schedule s;
    build(&s, 1, 1, 2, ZB_PLACE_V, ranks);
    zb_costs c;
    zb_err err;
    ck_assert_int_eq(zb_costs_uniform(&c, 2, 1, 1, 1, 100, 1, 0.5, &err), ZB_OK);
    double mk, pk;
    ck_assert_int_eq(zb_simulate_fast(&s, &c, NULL, &mk, &pk, &err), ZB_OK);
    ck_assert_double_eq_tol(mk, 6, 1e-12);
    ck_assert_double_eq_tol(pk, 2, 1e-12);
    zb_program prog;
    ck_assert_int_eq(zb_lower(&s, &prog, &err), ZB_OK);
    ck_assert_int_eq(prog.len[0], 6); /* computes only */
    zb_program_free(&prog);
    zb_costs_free(&c);
    zb_schedule_free(&s);
}
END_TEST

/* The objective is the longest rank span, not the latest end: rank 1
 * starts at 1 and its slow W makes it end last (8) with span 7, while rank
 * 0 spans 0..5. */
START_TEST(span_is_not_last_end) {
    const char *ranks[] = {"F0 B0 W0", "F0 B0 W0"};
    zb_schedule s;
    build(&s, 2, 1, 1, ZB_PLACE_LOOP, ranks);
    zb_costs c;
    zb_err err;
    ck_assert_int_eq(zb_costs_uniform(&c, 2, 1, 1, 1, 0, 1, 0.5, &err), ZB_OK);
    c.t_w[1] = 5;
    zb_sim_result res;
    ck_assert_int_eq(zb_simulate(&s, &c, &res, &err), ZB_OK);
    ck_assert_double_eq_tol(res.span[0], 5, 1e-12);
    ck_assert_double_eq_tol(res.span[1], 7, 1e-12);
    ck_assert_double_eq_tol(res.max_span, 7, 1e-12);
    ck_assert_double_eq_tol(res.last_end, 8, 1e-12);
    /* mean busy (3 + 7) / 2 = 5 over the longest span 7 */
    ck_assert_double_eq_tol(res.bubble_rate, 2 / 7.0, 1e-12);
    double span, pk;
    zb_sim_ws *ws = zb_sim_ws_new();
    ck_assert_ptr_nonnull(ws);
    ck_assert_int_eq(zb_simulate_fast(&s, &c, ws, &span, &pk, &err), ZB_OK);
    ck_assert_double_eq_tol(span, 7, 1e-12);
    ck_assert_double_eq_tol(zb_sim_ws_last_end(ws), 8, 1e-12);
    ck_assert_double_eq_tol(zb_sim_ws_rank_end(ws)[0], 5, 1e-12);
    zb_sim_ws_free(ws);
    zb_sim_result_free(&res);
    zb_costs_free(&c);
    zb_schedule_free(&s);
}
END_TEST

/* The order the Zero Bubble authors' ZB-2p heuristic finds for p 4, m 8,
 * F 1, B 2, W 1, comm 0.1 (issue 9): longest rank span 34.6 (rank 0 runs
 * 8 F, waits for B0 at 12.6, then runs B and W back to back: 12.6 + 22). */
START_TEST(authors_order_span) {
    const char *ranks[] = {
        "F0 F1 F2 F3 F4 F5 F6 F7 B0 W0 B1 W1 B2 W2 B3 W3 B4 W4 B5 W5 B6 W6 B7 W7",
        "F0 F1 F2 F3 F4 F5 F6 B0 F7 B1 W0 B2 W1 B3 W2 B4 W3 B5 W4 B6 W5 B7 W6 W7",
        "F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 W0 B5 W1 B6 W2 B7 W3 W4 W5 W6 W7",
        "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7 W0 W1 W2 W3 W4 W5 W6 W7"};
    zb_schedule s;
    build(&s, 4, 8, 1, ZB_PLACE_LOOP, ranks);
    zb_costs c;
    zb_err err;
    ck_assert_int_eq(zb_costs_uniform(&c, 4, 1, 2, 1, 0.1, 2, 1, &err), ZB_OK);
    zb_sim_result res;
    ck_assert_int_eq(zb_simulate(&s, &c, &res, &err), ZB_OK);
    ck_assert_double_eq_tol(res.span[0], 34.6, 1e-9);
    ck_assert_double_eq_tol(res.max_span, 34.6, 1e-9);
    ck_assert_double_eq_tol(res.bubble_rate, (34.6 - 32) / 34.6, 1e-9);
    ck_assert_double_ge(res.last_end, res.max_span);
    for (int r = 0; r < 4; r++) ck_assert_double_le_tol(res.peak_mem[r], 16, 1e-9);
    zb_sim_result_free(&res);
    zb_costs_free(&c);
    zb_schedule_free(&s);
}
END_TEST

START_TEST(lowering_matches_dependencies) {
    /* p=2 loop, v=2 interleaved-like: vstages 0(r0) 1(r1) 2(r0) 3(r1) */
    const char *ranks[] = {"F0.0 F0.1 BW0.1 BW0.0", "F0.0 F0.1 BW0.1 BW0.0"};
    zb_schedule s;
    build(&s, 2, 1, 2, ZB_PLACE_LOOP, ranks);
    zb_err err;
    zb_program prog;
    ck_assert_int_eq(zb_lower(&s, &prog, &err), ZB_OK);
    /* r0: F0.0 SEND(act->vs1) RECV(act vs2) F0.1 SEND(act->vs3)
     *     RECV(grad vs2) BW0.1 SEND(grad->vs1) RECV(grad vs0) BW0.0 */
    int kinds0[] = {ZB_OP_COMPUTE, ZB_OP_SEND, ZB_OP_RECV, ZB_OP_COMPUTE,
                    ZB_OP_SEND, ZB_OP_RECV, ZB_OP_COMPUTE, ZB_OP_SEND,
                    ZB_OP_RECV, ZB_OP_COMPUTE};
    ck_assert_int_eq(prog.len[0], 10);
    for (int i = 0; i < 10; i++) ck_assert_int_eq(prog.ops[0][i].kind, kinds0[i]);
    ck_assert_int_eq(prog.ops[0][1].vstage, 1);
    ck_assert_int_eq(prog.ops[0][2].vstage, 2);
    ck_assert_int_eq(prog.ops[0][8].msg, ZB_MSG_GRAD);
    ck_assert_int_eq(prog.ops[0][8].vstage, 0);
    /* every SEND has exactly one RECV with the same tag on the peer */
    int sends = 0;
    for (int r = 0; r < 2; r++)
        for (int i = 0; i < prog.len[r]; i++) {
            zb_op *o = &prog.ops[r][i];
            if (o->kind != ZB_OP_SEND) continue;
            sends++;
            int found = 0;
            for (int k = 0; k < prog.len[o->peer]; k++) {
                zb_op *q = &prog.ops[o->peer][k];
                if (q->kind == ZB_OP_RECV && q->peer == r && q->msg == o->msg &&
                    q->vstage == o->vstage && q->mb == o->mb) found++;
            }
            ck_assert_int_eq(found, 1);
        }
    ck_assert_int_eq(sends, 6);
    ck_assert_int_ne(zb_lower_tag(&s, ZB_MSG_ACT, 1, 0), zb_lower_tag(&s, ZB_MSG_GRAD, 1, 0));
    zb_program_free(&prog);
    zb_schedule_free(&s);
}
END_TEST

int main(void) {
    Suite *su = suite_create("sim");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, two_stage_timeline);
    tcase_add_test(tc, bw_memory_rise);
    tcase_add_test(tc, rejects_bad_schedules);
    tcase_add_test(tc, deadlock_between_ranks);
    tcase_add_test(tc, b_can_raise_memory);
    tcase_add_test(tc, v_placement_turn_has_no_comm);
    tcase_add_test(tc, lowering_matches_dependencies);
    tcase_add_test(tc, span_is_not_last_end);
    tcase_add_test(tc, authors_order_span);
    suite_add_tcase(su, tc);
    SRunner *sr = srunner_create(su);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
