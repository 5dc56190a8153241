/* test_overlap.c - overlapped F&B steps (zb_schedule.h, ZB_ACT_OVERLAP):
 * the simulator's timeline, busy time and memory on a hand-computed
 * example at three overlap shares, the faults it names, the lowering's
 * order (both receives, both computes, both sends) and the step time. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "common/zb_lower.h"
#include "common/zb_sim.h"

/* One rank per string: "F0 F1 F2&BW0 BW1" (pass + microbatch, ".c" chunk
 * suffix; "X&Y" an overlapped step). */
static void build(zb_schedule *s, int p, int m, const char *const *ranks) {
    zb_err err;
    ck_assert_int_eq(zb_schedule_init(s, "test", p, m, 1, ZB_PLACE_LOOP, 2, &err), ZB_OK);
    for (int r = 0; r < p; r++) {
        char *dup = strdup(ranks[r]);
        for (char *tok = strtok(dup, " &"); tok; tok = strtok(NULL, " &")) {
            size_t at = (size_t)(tok - dup);
            int pass = tok[0] == 'F' ? ZB_F : tok[0] == 'W' ? ZB_W
                       : tok[1] == 'W' ? ZB_BW : ZB_B;
            int mb = atoi(tok + (pass == ZB_BW ? 2 : 1));
            ck_assert_int_eq(zb_schedule_push(s, r, pass, mb, 0, &err), ZB_OK);
            if (ranks[r][at + strlen(tok)] == '&')
                s->acts[r][s->len[r] - 1].flags = ZB_ACT_OVERLAP;
        }
        free(dup);
    }
}

/* p 2, m 3, F 1, B 2, W 1 (BW 3), comm 0, m_b 10, m_w 4.
 * r0: F0 [0,1] F1 [1,2] F2&BW0 starts when r1's BW0 ends (5) and lasts
 *     4 (overlap 0), 3.5 (0.5) or 3 (1); BW1 and BW2 wait for r1's.
 * r1: F0 [1,2] BW0 [2,5] F1 [5,6] BW1 [6,9] F2 [max(9, step end),+1] BW2. */
static const char *const ranks[] = {"F0 F1 F2&BW0 BW1 BW2",
                                    "F0 BW0 F1 BW1 F2 BW2"};

static void check_timeline(double overlap, double step) {
    zb_schedule s;
    build(&s, 2, 3, ranks);
    zb_costs c;
    zb_err err;
    ck_assert_int_eq(zb_costs_uniform(&c, 2, 1, 2, 1, 0, 10, 4, &err), ZB_OK);
    c.fb_overlap = overlap;
    zb_sim_result res;
    ck_assert_int_eq(zb_simulate(&s, &c, &res, &err), ZB_OK);
    const double *st = res.start + res.off[0], *en = res.end + res.off[0];
    ck_assert_double_eq_tol(st[2], 5, 1e-12);
    ck_assert_double_eq_tol(st[3], 5, 1e-12);         /* both passes of the step */
    ck_assert_double_eq_tol(en[2], 5 + step, 1e-12);
    ck_assert_double_eq_tol(en[3], 5 + step, 1e-12);
    ck_assert_double_eq_tol(st[4], 9, 1e-12);         /* BW1 after r1's BW1 */
    double f2 = 5 + step > 9 ? 5 + step : 9;          /* r1's F2 */
    ck_assert_double_eq_tol(res.start[res.off[1] + 4], f2, 1e-12);
    ck_assert_double_eq_tol(res.busy[0], 1 + 1 + step + 3 + 3, 1e-12);
    ck_assert_double_eq_tol(res.span[0], f2 + 1 + 3 + 3, 1e-12);
    ck_assert_double_eq_tol(res.peak_mem[0], 30, 1e-12); /* F2 counts before BW0 frees */
    double span, peak;
    ck_assert_int_eq(zb_simulate_fast(&s, &c, NULL, &span, &peak, &err), ZB_OK);
    ck_assert_double_eq_tol(span, res.max_span, 1e-12);
    ck_assert_double_eq_tol(peak, 30, 1e-12);
    zb_sim_result_free(&res);
    zb_costs_free(&c);
    zb_schedule_free(&s);
}

START_TEST(timeline_at_three_overlaps) {
    check_timeline(0, 4);
    check_timeline(0.5, 3.5);
    check_timeline(1, 3);
}
END_TEST

START_TEST(step_time) {
    zb_costs c;
    zb_err err;
    ck_assert_int_eq(zb_costs_uniform(&c, 2, 1, 2, 1, 0, 1, 1, &err), ZB_OK);
    c.t_f[1] = 5;
    ck_assert_double_eq_tol(zb_costs_fb_time(&c, 0, 1, ZB_B), 3, 1e-12);
    ck_assert_double_eq_tol(zb_costs_fb_time(&c, 1, 0, ZB_BW), 8, 1e-12);
    c.fb_overlap = 0.25;
    ck_assert_double_eq_tol(zb_costs_fb_time(&c, 1, 0, ZB_BW), 5 + 0.75 * 3, 1e-12);
    ck_assert_double_eq_tol(zb_costs_fb_time(&c, 0, 1, ZB_B), 2 + 0.75 * 1, 1e-12);
    c.fb_overlap = 7; /* clamped to 1 */
    ck_assert_double_eq_tol(zb_costs_fb_time(&c, 1, 0, ZB_BW), 5, 1e-12);
    zb_costs_free(&c);
}
END_TEST

static void expect_fault(const char *r0, const char *r1, int m,
                         const char *what) {
    const char *rk[] = {r0, r1};
    zb_schedule s;
    build(&s, r1 ? 2 : 1, m, rk);
    zb_costs c;
    zb_err err;
    ck_assert_int_eq(zb_costs_uniform(&c, s.p, 1, 1, 1, 0, 1, 1, &err), ZB_OK);
    zb_sim_result res;
    ck_assert_int_eq(zb_simulate(&s, &c, &res, &err), ZB_EINFEASIBLE);
    ck_assert_msg(strstr(err.msg, what), "got '%s', want '%s'", err.msg, what);
    zb_sim_result_free(&res);
    zb_costs_free(&c);
    zb_schedule_free(&s);
}

START_TEST(faults_named) {
    expect_fault("F0 BW0&F1 BW1", NULL, 2,
                 "rank 0: action 1 (BW mb 0 chunk 0): an overlapped F&B step must start with an F");
    expect_fault("F0 BW0 F1&", NULL, 2, "action 2 (F mb 1 chunk 0): an overlapped "
                 "F&B step needs a B or BW right after its F");
    expect_fault("F0 F1&W0 B0 B1 W1", NULL, 2, "needs a B or BW right after its F");
    /* the step's B waits for its own F: a deadlock, named at the B */
    expect_fault("F0&BW0", NULL, 1, "rank 0: action 1 (BW mb 0 chunk 0): deadlock: "
                 "waits for F of mb 0 on virtual stage 0 (rank 0)");
}
END_TEST

START_TEST(lowering_order) {
    zb_schedule s;
    build(&s, 2, 3, ranks);
    zb_program prog;
    zb_err err;
    ck_assert_int_eq(zb_lower(&s, &prog, &err), ZB_OK);
    /* r0: F0 send, F1 send, then the step: recv grad of BW0, compute F2,
     * compute BW0, send act of F2; BW1, BW2 receive their gradients */
    zb_op want[] = {
        {ZB_OP_COMPUTE, 0, 0, ZB_MSG_ACT, 0, 0}, {ZB_OP_SEND, 0, 1, ZB_MSG_ACT, 1, 0},
        {ZB_OP_COMPUTE, 1, 0, ZB_MSG_ACT, 0, 1}, {ZB_OP_SEND, 1, 1, ZB_MSG_ACT, 1, 1},
        {ZB_OP_RECV, 3, 1, ZB_MSG_GRAD, 0, 0},   {ZB_OP_COMPUTE, 2, 0, ZB_MSG_ACT, 0, 2},
        {ZB_OP_COMPUTE, 3, 0, ZB_MSG_GRAD, 0, 0}, {ZB_OP_SEND, 2, 1, ZB_MSG_ACT, 1, 2},
        {ZB_OP_RECV, 4, 1, ZB_MSG_GRAD, 0, 1},   {ZB_OP_COMPUTE, 4, 0, ZB_MSG_GRAD, 0, 1},
        {ZB_OP_RECV, 5, 1, ZB_MSG_GRAD, 0, 2},   {ZB_OP_COMPUTE, 5, 0, ZB_MSG_GRAD, 0, 2}};
    int n = (int)(sizeof want / sizeof want[0]);
    ck_assert_int_eq(prog.len[0], n);
    for (int k = 0; k < n; k++) {
        const zb_op *o = &prog.ops[0][k];
        ck_assert_msg(o->kind == want[k].kind && o->action == want[k].action &&
                      o->peer == want[k].peer && o->msg == want[k].msg &&
                      o->vstage == want[k].vstage && o->mb == want[k].mb,
                      "op %d: kind %d action %d peer %d msg %d vstage %d mb %d",
                      k, o->kind, o->action, o->peer, o->msg, o->vstage, o->mb);
    }
    zb_program_free(&prog);
    zb_schedule_free(&s);
}
END_TEST

START_TEST(push_overlap) {
    zb_schedule s;
    zb_err err;
    ck_assert_int_eq(zb_schedule_init(&s, "t", 1, 2, 2, ZB_PLACE_V, 1, &err), ZB_OK);
    ck_assert_int_eq(zb_schedule_push_overlap(&s, 0, 1, 0, ZB_BW, 0, 1, &err), ZB_OK);
    ck_assert_int_eq(s.len[0], 2);
    ck_assert(zb_action_overlaps(&s.acts[0][0]));
    ck_assert(!zb_action_overlaps(&s.acts[0][1]));
    ck_assert_int_eq(s.acts[0][0].pass, ZB_F);
    ck_assert_int_eq(s.acts[0][0].mb, 1);
    ck_assert_int_eq(s.acts[0][1].pass, ZB_BW);
    ck_assert_int_eq(s.acts[0][1].chunk, 1);
    zb_schedule copy;
    ck_assert_int_eq(zb_schedule_copy(&copy, &s, &err), ZB_OK);
    ck_assert(zb_action_overlaps(&copy.acts[0][0]));
    zb_schedule_free(&copy);
    zb_schedule_free(&s);
}
END_TEST

int main(void) {
    Suite *su = suite_create("overlap");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, timeline_at_three_overlaps);
    tcase_add_test(tc, step_time);
    tcase_add_test(tc, faults_named);
    tcase_add_test(tc, lowering_order);
    tcase_add_test(tc, push_overlap);
    suite_add_tcase(su, tc);
    SRunner *sr = srunner_create(su);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
