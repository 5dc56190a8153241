/* test_cost_llama.c - the cost model of Llama-shaped blocks (GQA, SwiGLU,
 * RMSNorm, RoPE, no biases, untied 128k head) against hand computations:
 * forward GEMM FLOPs 2(2h^2 + 2h*kv + 3hf) per token (DESIGN.md), the
 * parameter count of Llama 3 8B from the table (8,030,261,248), GQA's and
 * SwiGLU's activation bytes (Korthikanti et al. 2022's counting), the step
 * FLOPs as Megatron-LM counts them, and the TP rule on kv_heads. */
#include <check.h>
#include <math.h>
#include <string.h>

#include "planner/cost/cost.h"

#define GIB (1024.0 * 1024.0 * 1024.0)
#define REL(a, b) ck_assert_double_eq_tol((a), (b), 1e-9 * fabs(b) + 1e-30)

/* Llama 3 8B (Dubey et al. 2024, Table 3) on an H100-like device, bf16. */
static zb_model llama8b(void) {
    zb_model m;
    memset(&m, 0, sizeof m);
    strcpy(m.name, "llama3-8b");
    m.arch = (zb_arch){.layers = 32, .hidden = 4096, .heads = 32, .kv_heads = 8,
                       .ffn_hidden = 14336, .seq_len = 8192, .vocab = 128256,
                       .mlp = ZB_MLP_SWIGLU, .norm = ZB_NORM_RMSNORM,
                       .position = ZB_POS_ROPE, .rope_theta = 500000,
                       .no_bias = true, .tied_embeddings = false};
    m.train.global_batch = 512;
    m.train.micro_batch = 1;
    m.train.precision = ZB_PREC_BF16;
    m.cluster.nodes = 1;
    m.cluster.devices_per_node = 8;
    strcpy(m.cluster.device.name, "h100-sxm");
    m.cluster.device.peak_bf16_flops = 989e12;
    m.cluster.device.peak_fp32_flops = 67e12;
    m.cluster.device.mem_bytes = 80 * GIB;
    m.cluster.device.mem_bw_Bps = 3350e9;
    m.cluster.intra_bw_Bps = 450e9;
    m.cluster.intra_lat_s = 5e-6;
    m.cluster.inter_bw_Bps = 50e9;
    m.cluster.inter_lat_s = 10e-6;
    return m;
}

static zb_cost_table eval(const zb_model *m, int tp, int b) {
    zb_cost_table ct;
    zb_err err;
    zb_status st = zb_cost_eval(m, tp, b, &ct, &err);
    ck_assert_msg(st == ZB_OK, "%s", err.msg);
    return ct;
}

START_TEST(layer_flops) {
    /* per token: Q, O 2h^2 each, K, V 2h*kv each (kv = 8 * 128 = 1024),
     * gate, up, down 2hf each; attention core 4sh (unmasked). */
    zb_model m = llama8b();
    double s = 8192, h = 4096, kv = 1024, f = 14336;
    for (int t = 1; t <= 8; t *= 2) {
        zb_cost_table ct = eval(&m, t, 1);
        double gemm = s * (2 * (2 * h * h + 2 * h * kv + 3 * h * f)) / t;
        double attn = 4 * s * s * h / t;
        REL(ct.layer.f_flops, gemm + attn);
        REL(ct.layer.b_flops, gemm + 2 * attn);
        REL(ct.layer.w_flops, gemm);
    }
    /* the untied 128k head: 2 s h V/t in each of F, B, W */
    REL(eval(&m, 1, 1).head.f_flops, 2 * s * h * 128256);
}
END_TEST

START_TEST(params_8b) {
    zb_model m = llama8b();
    zb_cost_table ct = eval(&m, 1, 1);
    /* per block: 2h^2 + 2h*kv + 3hf + 2h (two RMSNorm gains), no biases */
    REL(ct.layer.params, 2 * 4096.0 * 4096 + 2 * 4096.0 * 1024 + 3 * 4096.0 * 14336 + 2 * 4096);
    REL(ct.embed.params, 128256.0 * 4096);          /* no position table */
    REL(ct.head.params, 128256.0 * 4096 + 4096);    /* untied + final norm */
    REL(32 * ct.layer.params + ct.embed.params + ct.head.params, 8030261248.0);
    ck_assert_uint_eq(zb_model_params(&m.arch), 8030261248ull);
    /* Q, K, V biases (Qwen2): h + 2kv more, sharded with the columns */
    zb_model q = m;
    q.arch.qkv_bias = true;
    REL(eval(&q, 2, 1).layer.params - eval(&m, 2, 1).layer.params, (4096.0 + 2048) / 2);
    /* t = 8: every matrix sharded, norms replicated; kv_heads 8 / 8 */
    ct = eval(&m, 8, 1);
    REL(ct.layer.params,
        (2 * 4096.0 * 4096 + 2 * 4096.0 * 1024 + 3 * 4096.0 * 14336) / 8 + 2 * 4096);
}
END_TEST

START_TEST(gqa_swiglu_activations) {
    /* 16-bit, no TP, no recompute, fused attention (no s^2 scores): per
     * token in units of h: 4 replicated (2 norm inputs, QKV and MLP
     * inputs) + Q, K, V (1 + 2 kv/h), O's input (1), gate, up, product
     * (3f/h), + 2 one-byte masks. */
    zb_model m = llama8b();
    m.train.fused_attention = true;
    double s = 8192, h = 4096, sbh = s * h, kvh = 1024.0 / 4096, fh = 14336.0 / 4096;
    zb_cost_table ct = eval(&m, 1, 1);
    REL(ct.layer.m_b_bytes, sbh * (2 * (4 + 2 + 2 * kvh + 3 * fh) + 2));
    /* what W keeps: LN1 out, O in, LN2 out, fc2 in (f); dQKV (1 + 2kv/h),
     * dO out, dfc1 (2f), dfc2 out: 4 repl + 1 + (1 + 2kv/h) + 3f/h */
    REL(ct.layer.m_w_bytes, sbh * 2 * (4 + 1 + (1 + 2 * kvh) + 3 * fh));
    /* MHA of the same size keeps more: K and V of width h */
    zb_model mha = m;
    mha.arch.kv_heads = 32;
    zb_cost_table cm = eval(&mha, 1, 1);
    REL(cm.layer.m_b_bytes - ct.layer.m_b_bytes, sbh * 2 * 2 * (1 - kvh));
    ck_assert(cm.layer.f_s > ct.layer.f_s);
}
END_TEST

START_TEST(step_flops) {
    /* Megatron-LM's count: 3 B (l (4sh^2 + 4sh*kv + 6shf + 4s^2h) + 2shV) */
    zb_model m = llama8b();
    double B = 512, s = 8192, h = 4096, kv = 1024, f = 14336, l = 32, V = 128256;
    REL(zb_model_step_flops(&m),
        3 * B * (l * (4 * s * h * h + 4 * s * h * kv + 6 * s * h * f + 4 * s * s * h) +
                 2 * s * h * V));
    zb_cost_table ct = eval(&m, 1, 1);
    REL(zb_model_step_flops(&m),
        B * (l * (ct.layer.f_flops + ct.layer.b_flops + ct.layer.w_flops) +
             ct.head.f_flops + ct.head.b_flops + ct.head.w_flops));
}
END_TEST

START_TEST(tp_must_divide_kv_heads) {
    zb_model m = llama8b();
    m.arch.kv_heads = 4;
    zb_cost_table ct;
    zb_err err;
    ck_assert_int_eq(zb_cost_eval(&m, 8, 1, &ct, &err), ZB_EINFEASIBLE);
    ck_assert(strstr(err.msg, "kv_heads 4") != NULL);
    ck_assert_int_eq(zb_cost_eval(&m, 4, 1, &ct, &err), ZB_OK);
}
END_TEST

/* The h100-sxm and h200 entries carry the efficiencies calibrated on
 * Megatron-Core's H100 table (docs/cost-model.md 2.6): every GEMM at 0.70
 * where the default is E_MAX 0.80, the fused attention core at 0.25 where
 * the default is 0.50. With elementwise work priced at ~0 (huge bandwidth)
 * and t = 1 (no TP collectives), W is GEMMs only and F GEMMs plus the
 * attention core, so the calibrated times follow from the default ones. */
START_TEST(h100_calibration) {
    const char *names[] = {"h100-sxm", "h200"};
    for (int i = 0; i < 2; i++) {
        const zb_device *d = zb_device_lookup(names[i]);
        ck_assert_ptr_nonnull(d);
        zb_model cal = llama8b();
        cal.cluster.device = *d;
        cal.cluster.device.mem_bw_Bps = 1e30;
        cal.train.fused_attention = true;
        zb_model def = cal;
        def.cluster.device.gemm_eff = 0; /* the cost model's defaults */
        def.cluster.device.attn_eff = 0;
        zb_cost_table c = eval(&cal, 1, 1), k = eval(&def, 1, 1);
        double s = 8192, h = 4096, peak = 989e12;
        double attn_def = 4 * s * s * h / (peak * 0.50); /* F's core */
        double w = k.layer.w_s * 0.80 / 0.70;
        double f = (k.layer.f_s - attn_def) * 0.80 / 0.70 + attn_def * 0.50 / 0.25;
        ck_assert_double_eq_tol(c.layer.w_s, w, 1e-9 * w);
        ck_assert_double_eq_tol(c.layer.f_s, f, 1e-9 * f);
    }
    /* the A100 entries keep the defaults their tables were fitted with */
    ck_assert_double_eq(zb_device_lookup("a100-80gb")->gemm_eff, 0);
    ck_assert_double_eq(zb_device_lookup("a100-80gb")->attn_eff, 0);
}
END_TEST

int main(void) {
    Suite *s = suite_create("cost_llama");
    TCase *tc = tcase_create("llama");
    tcase_add_test(tc, layer_flops);
    tcase_add_test(tc, params_8b);
    tcase_add_test(tc, gqa_swiglu_activations);
    tcase_add_test(tc, step_flops);
    tcase_add_test(tc, tp_must_divide_kv_heads);
    tcase_add_test(tc, h100_calibration);
    suite_add_tcase(s, tc);
    SRunner *r = srunner_create(s);
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? 1 : 0;
}
