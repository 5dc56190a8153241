/* test_cost_waves.c - the partial last wave of a GEMM on a GPU
 * (docs/cost-model.md 2.1): with sm_count SMs, a GEMM of (M/T)(N/T) output
 * tiles takes W + 1/2 waves' time for W = tiles / SMs; without SMs
 * (sm_count 0, the cpu device) nothing changes. */
#include <check.h>
#include <math.h>
#include <string.h>

#include "planner/cost/cost.h"

/* A100-80GB, GPT-3 175B's layer shape at tp 8 as in Narayanan 2021 */
static zb_model gpt3(int sms) {
    zb_model m;
    memset(&m, 0, sizeof m);
    strcpy(m.name, "gpt3");
    m.arch = (zb_arch){.layers = 96, .hidden = 12288, .heads = 96,
                       .ffn_hidden = 4 * 12288, .seq_len = 2048, .vocab = 51200,
                       .tied_embeddings = true};
    m.train.global_batch = 1536;
    m.train.micro_batch = 1;
    m.train.precision = ZB_PREC_BF16;
    m.cluster.nodes = 12;
    m.cluster.devices_per_node = 8;
    m.cluster.device = *zb_device_lookup("a100-80gb");
    m.cluster.device.sm_count = sms;
    m.cluster.intra_bw_Bps = 300e9;
    m.cluster.inter_bw_Bps = 25e9;
    return m;
}

static zb_cost_table eval(const zb_model *m, int tp, int b) {
    zb_cost_table ct;
    zb_err err;
    zb_status st = zb_cost_eval(m, tp, b, &ct, &err);
    ck_assert_msg(st == ZB_OK, "%s", err.msg);
    return ct;
}

/* The head's F: one GEMM (bs, V/t, h) plus elementwise work and the
 * cross-entropy's all-reduces, which the SMs do not change: the difference
 * is the GEMM's time times (W + 1/2) / W - 1. */
START_TEST(head_gemm_partial_wave) {
    zb_model with = gpt3(108), without = gpt3(0);
    ck_assert_int_eq(zb_device_lookup("a100-80gb")->sm_count, 108);
    double bs = 2048, Vl = 51200 / 8, h = 12288, peak = 312e12;
    double t0 = 2 * bs * Vl * h / (peak * zb_gemm_efficiency(bs, Vl, h, peak));
    double W = (bs / 128) * (Vl / 128) / 108;
    double d = eval(&with, 8, 1).head.f_s - eval(&without, 8, 1).head.f_s;
    ck_assert_double_eq_tol(d, t0 * 0.5 / W, 1e-9 * t0);
}
END_TEST

/* The loss falls with the tiles: micro-batch 16 (16x the rows) loses far
 * less per FLOP than micro-batch 1; no SMs, no loss. */
START_TEST(loss_falls_with_size) {
    zb_model with = gpt3(108), without = gpt3(0);
    double r1 = eval(&with, 8, 1).layer.f_s / eval(&without, 8, 1).layer.f_s;
    double r16 = eval(&with, 8, 16).layer.f_s / eval(&without, 8, 16).layer.f_s;
    ck_assert(r1 > 1.02);
    ck_assert(r16 > 1 && r16 < 1 + (r1 - 1) / 8);
    zb_model cpu = gpt3(0);
    cpu.cluster.device = *zb_device_lookup("cpu");
    ck_assert_int_eq(cpu.cluster.device.sm_count, 0);
}
END_TEST

int main(void) {
    Suite *su = suite_create("cost_waves");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, head_gemm_partial_wave);
    tcase_add_test(tc, loss_falls_with_size);
    suite_add_tcase(su, tc);
    SRunner *sr = srunner_create(su);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
