/* test_staging.c - the staging rings of the CUDA transports, counted once
 * (common/zb_staging.h) and the same on both sides: what zbrun allocates
 * and what zbplan's memory prediction adds for a GPU plan.
 *
 * - the slot count from the placement equals, per ring, the most sends
 *   and receives any rank's lowered program posts in one step, for every
 *   schedule at pp 1, 2, 4 and 8 (the transport sizes its rings from it,
 *   so a lowering that posts more would reuse a slot inside a step);
 * - hand-counted cases: 1f1b (m per ring), the V placement (2m per ring
 *   on every rank), interleaved with v 2 (rank p-1 sends down to rank 0);
 * - for several layouts (pp, v, m, micro-batch, hidden, bf16/fp32) the
 *   planner's staging bytes equal the transport's (zbrun's ring slots and
 *   message floats, allocated by zb_staging_ring_bytes) and a number
 *   written out by hand, the plan's peak memory holds them on a GPU and
 *   not on the cpu device, and zb_plan_mem_need agrees with the plan;
 *   --no-staging leaves exactly them out.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/zb_lower.h"
#include "common/zb_plan.h"
#include "common/zb_staging.h"
#include "executor/run/runtime.h"
#include "planner/cost/cost.h"
#include "planner/cost/plan_fit.h"
#include "planner/registry/registry.h"
#include "planner/search/search.h"
#include "tests/unit/sched_fixture.h"

/* The oracle: per ring, the most messages of one rank's lowered program. */
static void lowered_slots(const zb_program *prog, int slots[ZB_STAGING_RINGS]) {
    for (int k = 0; k < ZB_STAGING_RINGS; k++) slots[k] = 0;
    for (int r = 0; r < prog->p; r++) {
        int n[ZB_STAGING_RINGS] = {0};
        for (int i = 0; i < prog->len[r]; i++) {
            const zb_op *op = &prog->ops[r][i];
            if (op->kind == ZB_OP_COMPUTE) continue;
            int send = op->kind == ZB_OP_SEND;
            int up = send ? op->peer > r : op->peer < r;
            n[zb_staging_ring(up, send)]++;
        }
        for (int k = 0; k < ZB_STAGING_RINGS; k++)
            if (n[k] > slots[k]) slots[k] = n[k];
    }
}

/* 1 when the schedule was made and checked, 0 when its conditions fail. */
static int check_one(const char *name, int p, int m, int v) {
    zb_schedule s;
    zb_err err;
    if (!make_sched(name, p, m, v, &s)) return 0;
    zb_program prog;
    ck_assert_int_eq(zb_lower(&s, &prog, &err), ZB_OK);
    int want[ZB_STAGING_RINGS], got[ZB_STAGING_RINGS];
    lowered_slots(&prog, want);
    zb_staging_slots(s.p, s.v, s.placement, s.m, got);
    for (int k = 0; k < ZB_STAGING_RINGS; k++)
        ck_assert_msg(got[k] == want[k], "%s p=%d v=%d m=%d ring %d: %d slots "
                      "from the placement, %d messages lowered", name, p, s.v,
                      m, k, got[k], want[k]);
    zb_program_free(&prog);
    zb_schedule_free(&s);
    return 1;
}

START_TEST(slots_equal_lowered_messages) {
    static const int pps[] = {1, 2, 4, 8};
    int total = 0;
    for (const char *const *nm = zb_schedule_names(); *nm; nm++)
        for (int k = 0; k < 4; k++) {
            int p = pps[k];
            const int ms[] = {1, p, p + 1, 2 * p, 3 * p + 2};
            for (int j = 0; j < 5; j++) {
                total += check_one(*nm, p, ms[j], 2);
                if (!strcmp(*nm, "interleaved")) total += check_one(*nm, p, ms[j], 3);
            }
        }
    ck_assert_int_gt(total, 150);
}
END_TEST

static void expect_slots(int p, int v, zb_placement pl, int m, int a, int b,
                         int c, int d) {
    int s[ZB_STAGING_RINGS];
    zb_staging_slots(p, v, pl, m, s);
    /* ring order: down recv, down send, up recv, up send */
    ck_assert_msg(s[0] == a && s[1] == b && s[2] == c && s[3] == d,
                  "p %d v %d m %d: %d %d %d %d", p, v, m, s[0], s[1], s[2], s[3]);
}

START_TEST(slots_by_hand) {
    expect_slots(4, 1, ZB_PLACE_LOOP, 8, 8, 8, 8, 8); /* 1f1b */
    expect_slots(1, 1, ZB_PLACE_LOOP, 8, 0, 0, 0, 0); /* no pipeline */
    /* V: rank r's two chunks border r-1 and r+1 on both sides */
    expect_slots(4, 2, ZB_PLACE_V, 6, 12, 12, 12, 12);
    expect_slots(2, 2, ZB_PLACE_V, 3, 6, 6, 6, 6);
    /* interleaved v 2 at p 2: every one of the 3 boundaries crosses, and
     * rank 0 sends up across all three (activations of 0|1 and 2|3, the
     * gradient of 1|2, which rank 1's chunk 0 sends down): 3m per ring */
    expect_slots(2, 2, ZB_PLACE_LOOP, 5, 15, 15, 15, 15);
    /* at p 4: rank 0 borders 0|1, 3|4 and 4|5, a middle rank four
     * boundaries split two up, two down: 3m */
    expect_slots(4, 2, ZB_PLACE_LOOP, 8, 24, 24, 24, 24);
    ck_assert_uint_eq(zb_staging_msg_floats(7, 9, 2), 32); /* 126 B -> 32 */
    ck_assert_uint_eq(zb_staging_msg_floats(7, 9, 4), 63);
    int s[ZB_STAGING_RINGS] = {3, 0, 2, 1};
    ck_assert_uint_eq(zb_staging_bytes(4, s, 10), 6 * 10 * 4);
    ck_assert_uint_eq(zb_staging_bytes(1, s, 10), 10 * 4); /* one slot */
}
END_TEST

/* A small GPT on 8 devices of type dev. */
static zb_model model(int hidden, int seq, bool bf16, const char *dev) {
    zb_model m;
    memset(&m, 0, sizeof m);
    snprintf(m.name, sizeof m.name, "t");
    m.arch = (zb_arch){.layers = 8, .hidden = hidden, .heads = 8,
                       .ffn_hidden = 4 * hidden, .seq_len = seq, .vocab = 1024,
                       .tied_embeddings = true};
    m.train.global_batch = 64;
    m.train.steps = 1;
    m.train.seed = 1;
    m.train.precision = bf16 ? ZB_PREC_BF16 : ZB_PREC_FP32;
    m.train.opt = (zb_optim){.lr = 1e-3, .min_lr = 1e-4, .beta1 = 0.9,
                             .beta2 = 0.95, .eps = 1e-8, .weight_decay = 0.1,
                             .grad_clip = 1.0, .warmup_steps = 1,
                             .cosine = true};
    m.cluster.nodes = 1;
    m.cluster.devices_per_node = 8;
    m.cluster.device = *zb_device_lookup(dev);
    m.cluster.intra_bw_Bps = 300e9;
    m.cluster.intra_lat_s = 5e-6;
    m.cluster.inter_bw_Bps = 25e9;
    m.cluster.inter_lat_s = 10e-6;
    return m;
}

typedef struct {
    const char *schedule;
    int dp, pp, v, mb, hidden, seq;
    bool bf16;
    double bytes;   /* by hand: slots x message bytes, summed over rings */
} layout;

static void plan_of(const zb_model *m, const layout *L, zb_plan *plan) {
    zb_search_opts o;
    zb_search_opts_default(&o);
    o.dp = L->dp;
    o.tp = 1;
    o.pp = L->pp;
    o.v = L->v;
    o.micro_batch = L->mb;
    o.mem_margin = 0;
    o.exhaustive = true; /* keep it over memory too: only its numbers matter */
    snprintf(o.schedule, sizeof o.schedule, "%s", L->schedule);
    zb_search_result r;
    zb_err err;
    ck_assert_msg(zb_search(m, &o, &r, &err) == ZB_OK, "%s", err.msg);
    ck_assert_int_gt(r.n, 0);
    ck_assert_msg(zb_search_make_plan(m, &r.cand[0], plan, &err) == ZB_OK,
                  "%s", err.msg);
    zb_search_result_free(&r);
}

/* The transport's bytes as zbrun sizes them: its ring slots and message
 * floats, each ring allocated by zb_staging_ring_bytes (world > 1). */
static double transport_bytes(const zb_plan *plan) {
    int slots[ZB_NCCL_RINGS];
    zb_run_ring_slots(plan, slots);
    size_t msg = zb_run_cuda_msg_floats(plan), sum = 0;
    if (zb_plan_world(plan) == 1) return (double)zb_staging_ring_bytes(1, msg);
    for (int k = 0; k < ZB_NCCL_RINGS; k++)
        sum += zb_staging_ring_bytes((size_t)slots[k], msg);
    return (double)sum;
}

START_TEST(planner_counts_the_transport_rings) {
    /* global batch 64 over dp: m = 64 / (dp * mb) */
    const layout cases[] = {
        /* 1f1b pp 4, m 16: 4 rings x 16 slots x 2*128*256*2 B */
        {"1f1b", 1, 4, 1, 4, 256, 128, true, 4.0 * 16 * 4 * 128 * 256 * 2},
        {"1f1b", 1, 4, 1, 4, 256, 128, false, 4.0 * 16 * 4 * 128 * 256 * 4},
        /* zb-v pp 2, m 32: 2m = 64 slots per ring, mb 2 */
        {"zb-v", 1, 2, 2, 2, 384, 64, true, 4.0 * 64 * 2 * 64 * 384 * 2},
        /* interleaved v 2 pp 4 dp 2, m 8: 3m = 24 slots per ring */
        {"interleaved", 2, 4, 2, 4, 128, 96, false, 4.0 * 24 * 4 * 96 * 128 * 4},
        /* pp 1 over dp 8: NCCL makes no ring */
        {"1f1b", 8, 1, 1, 8, 256, 128, true, 0},
        /* one GPU: the device-local transport's one slot */
        {"1f1b", 1, 1, 1, 8, 256, 128, true, 8.0 * 128 * 256 * 2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const layout *L = &cases[i];
        zb_model m = model(L->hidden, L->seq, L->bf16, "h100-sxm");
        m.cluster.devices_per_node = L->dp * L->pp;
        zb_plan plan;
        plan_of(&m, L, &plan);
        ck_assert_int_eq(plan.pp, L->pp);
        ck_assert_int_eq(plan.v, L->v);
        double got = zb_plan_staging_bytes(&plan);
        ck_assert_msg(got == L->bytes, "case %zu (%s pp %d): planner %.0f, by "
                      "hand %.0f", i, L->schedule, L->pp, got, L->bytes);
        ck_assert_msg(got == transport_bytes(&plan), "case %zu: planner %.0f, "
                      "transport %.0f", i, got, transport_bytes(&plan));
        /* the plan's peak holds the rings; zb_plan_mem_need agrees */
        double need[8], ws = zb_workspace_bytes(&m);
        zb_err err;
        ck_assert(zb_plan_mem_need(&plan, "h100-sxm", need, &err) == ZB_OK);
        for (int r = 0; r < plan.pp; r++) {
            double pk = plan.pred.peak_mem_bytes[r];
            ck_assert_msg(fabs(need[r] - pk) <= 1e-9 * pk, "case %zu rank %d: "
                          "%.0f vs %.0f", i, r, need[r], pk);
            double rest = pk - plan.pred.act_mem_bytes[r] - ws;
            ck_assert_msg(rest >= got, "case %zu rank %d: peak less activations "
                          "and workspace %.0f < staging %.0f", i, r, rest, got);
        }
        zb_plan_free(&plan);
    }
}
END_TEST

/* The cpu device runs zbrun's CPU backend: no device staging, in the
 * planner's functions and so in its plans. */
START_TEST(cpu_device_has_none) {
    zb_model m = model(256, 128, false, "cpu");
    ck_assert(zb_staging_need_bytes(&m, 1, 1, 4, 1, ZB_PLACE_LOOP, 16, 4) == 0);
    zb_model g = model(256, 128, false, "h100-sxm");
    ck_assert(zb_staging_need_bytes(&g, 1, 1, 4, 1, ZB_PLACE_LOOP, 16, 4) ==
              4.0 * 16 * 4 * 128 * 256 * 4);
}
END_TEST

/* --no-staging (zbplan, make validate): the same 1f1b layout priced
 * without the rings, its peak lower by exactly the rings' bytes. */
START_TEST(no_staging_leaves_them_out) {
    zb_model m = model(256, 128, true, "h100-sxm");
    m.cluster.devices_per_node = 4;
    double peak[2], staging[2];
    for (int k = 0; k < 2; k++) {
        zb_search_opts o;
        zb_search_opts_default(&o);
        o.dp = o.tp = 1;
        o.pp = 4;
        o.micro_batch = 4;
        o.no_staging = k == 1;
        snprintf(o.schedule, sizeof o.schedule, "1f1b");
        zb_search_result r;
        zb_err err;
        ck_assert_msg(zb_search(&m, &o, &r, &err) == ZB_OK, "%s", err.msg);
        peak[k] = r.cand[0].peak_mem_bytes;
        staging[k] = r.cand[0].staging_bytes;
        zb_search_result_free(&r);
    }
    ck_assert(staging[0] == 4.0 * 16 * 4 * 128 * 256 * 2 && staging[1] == 0);
    ck_assert_msg(fabs(peak[0] - peak[1] - staging[0]) <= 1e-9 * peak[0],
                  "%.0f - %.0f != %.0f", peak[0], peak[1], staging[0]);
}
END_TEST

int main(void) {
    Suite *su = suite_create("staging");
    TCase *tc = tcase_create("staging");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, slots_equal_lowered_messages);
    tcase_add_test(tc, slots_by_hand);
    tcase_add_test(tc, planner_counts_the_transport_rings);
    tcase_add_test(tc, cpu_device_has_none);
    tcase_add_test(tc, no_staging_leaves_them_out);
    suite_add_tcase(su, tc);
    SRunner *sr = srunner_create(su);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
