/* test_cost.c - the cost model against hand computations: FLOPs (DESIGN.md,
 * Qi et al. 2023), activation bytes (Korthikanti et al. 2022), parameter
 * counts (GPT-2 124M), static memory (ZeRO), ring all-reduce and p2p, the
 * Megatron step FLOPs, and the GEMM efficiency's shape. */
#include <check.h>
#include <math.h>
#include <string.h>

#include "planner/cost/cost.h"
#include "planner/cost/dp.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

/* GPT-2 124M on an A100-80GB-like device, b = 1, bf16, no TP options. */
static zb_model gpt2(void) {
    zb_model m;
    memset(&m, 0, sizeof m);
    strcpy(m.name, "gpt2");
    m.arch = (zb_arch){.layers = 12, .hidden = 768, .heads = 12,
                       .ffn_hidden = 3072, .seq_len = 1024, .vocab = 50257,
                       .tied_embeddings = true};
    m.train.global_batch = 512;
    m.train.micro_batch = 1;
    m.train.precision = ZB_PREC_BF16;
    m.train.recompute = ZB_RECOMPUTE_NONE;
    m.cluster.nodes = 1;
    m.cluster.devices_per_node = 8;
    strcpy(m.cluster.device.name, "a100-80gb");
    m.cluster.device.peak_bf16_flops = 312e12;
    m.cluster.device.peak_fp32_flops = 19.5e12;
    m.cluster.device.mem_bytes = 80 * GIB;
    m.cluster.device.mem_bw_Bps = 2039e9;
    m.cluster.intra_bw_Bps = 100e9;
    m.cluster.intra_lat_s = 5e-6;
    m.cluster.inter_bw_Bps = 25e9;
    m.cluster.inter_lat_s = 20e-6;
    return m;
}

static zb_cost_table eval(const zb_model *m, int tp, int b) {
    zb_cost_table ct;
    zb_err err;
    zb_status st = zb_cost_eval(m, tp, b, &ct, &err);
    ck_assert_msg(st == ZB_OK, "%s", err.msg);
    return ct;
}

#define REL(a, b) ck_assert_double_eq_tol((a), (b), 1e-9 * fabs(b) + 1e-30)

START_TEST(layer_flops_design_formula) {
    /* DESIGN.md / Qi et al. 2023 Table 1, s=1024, h=768, b=1:
     * F = bsh(24h + 4s), B = bsh(24h + 8s), W = bsh(24h), each / t. */
    zb_model m = gpt2();
    for (int t = 1; t <= 2; t++) {
        zb_cost_table ct = eval(&m, t, 1);
        REL(ct.layer.f_flops, 1024.0 * 768 * (24 * 768 + 4 * 1024) / t);
        REL(ct.layer.b_flops, 1024.0 * 768 * (24 * 768 + 8 * 1024) / t);
        REL(ct.layer.w_flops, 1024.0 * 768 * (24 * 768) / t);
    }
    /* b = 4 scales everything by 4. */
    zb_cost_table c4 = eval(&m, 1, 4);
    REL(c4.layer.f_flops, 4 * 1024.0 * 768 * (24 * 768 + 4 * 1024));
}
END_TEST

START_TEST(layer_flops_general_ffn) {
    /* f = 2h = 1536, from the GEMMs: QKV 6bsh^2, proj 2bsh^2, MLP 4bshf,
     * attention 4bs^2h in F (8 in B). bs = 1024, h = 768, t = 2. */
    zb_model m = gpt2();
    m.arch.ffn_hidden = 1536;
    zb_cost_table ct = eval(&m, 2, 1);
    double gemm = 6.0 * 1024 * 768 * 768 + 2.0 * 1024 * 768 * 768 +
                  4.0 * 1024 * 768 * 1536;
    double attn = 4.0 * 1024 * 1024 * 768;
    REL(ct.layer.f_flops, (gemm + attn) / 2);
    REL(ct.layer.b_flops, (gemm + 2 * attn) / 2);
    REL(ct.layer.w_flops, gemm / 2);
}
END_TEST

START_TEST(recompute_flops) {
    zb_model m = gpt2();
    double F = 1024.0 * 768 * (24 * 768 + 4 * 1024);
    double B = 1024.0 * 768 * (24 * 768 + 8 * 1024);
    m.train.recompute = ZB_RECOMPUTE_FULL;
    zb_cost_table full = eval(&m, 2, 1);
    REL(full.layer.b_flops, (B + F) / 2);
    REL(full.layer.f_flops, F / 2);
    m.train.recompute = ZB_RECOMPUTE_SELECTIVE; /* + 4bs^2h / t */
    zb_cost_table sel = eval(&m, 2, 1);
    REL(sel.layer.b_flops, (B + 4.0 * 1024 * 1024 * 768) / 2);
    /* recomputation costs time in B, never in F or W */
    m.train.recompute = ZB_RECOMPUTE_NONE;
    zb_cost_table none = eval(&m, 2, 1);
    ck_assert(full.layer.b_s > sel.layer.b_s && sel.layer.b_s > none.layer.b_s);
    REL(full.layer.f_s, none.layer.f_s);
    REL(sel.layer.w_s, none.layer.w_s);
    /* full recompute re-runs the whole forward: B grows by exactly F */
    REL(full.layer.b_s, none.layer.b_s + none.layer.f_s);
}
END_TEST

START_TEST(activation_bytes_korthikanti) {
    /* Korthikanti et al. 2022 Table 2, per layer, 16-bit, s=1024, b=1,
     * h=768, a=12: sbh = 786432, 5as/h = 5*12*1024/768 = 80. */
    const double sbh = 1024.0 * 768, att = 5.0 * 12 * 1024 / 768;
    zb_model m = gpt2();
    REL(eval(&m, 1, 1).layer.m_b_bytes, sbh * (34 + att));
    REL(eval(&m, 2, 1).layer.m_b_bytes, sbh * (10 + 24 / 2.0 + att / 2));
    REL(eval(&m, 4, 1).layer.m_b_bytes, sbh * (10 + 24 / 4.0 + att / 4));
    m.train.sequence_parallel = true;
    REL(eval(&m, 2, 1).layer.m_b_bytes, sbh * (34 / 2.0 + att / 2));
    REL(eval(&m, 1, 1).layer.m_b_bytes, sbh * (34 + att)); /* SP off at t=1 */
    m.train.recompute = ZB_RECOMPUTE_SELECTIVE;           /* drops 5as/h */
    REL(eval(&m, 2, 1).layer.m_b_bytes, sbh * 34 / 2.0);
    m.train.sequence_parallel = false;
    REL(eval(&m, 2, 1).layer.m_b_bytes, sbh * (10 + 24 / 2.0));
    REL(eval(&m, 1, 1).layer.m_b_bytes, sbh * 34);
    m.train.recompute = ZB_RECOMPUTE_FULL;                /* input only: 2sbh */
    REL(eval(&m, 2, 1).layer.m_b_bytes, 2 * sbh);
    m.train.sequence_parallel = true;
    REL(eval(&m, 2, 1).layer.m_b_bytes, 2 * sbh / 2);
    /* b = 2 doubles everything */
    m.train.recompute = ZB_RECOMPUTE_NONE;
    m.train.sequence_parallel = false;
    REL(eval(&m, 1, 2).layer.m_b_bytes, 2 * sbh * (34 + att));
}
END_TEST

START_TEST(activation_bytes_fp32) {
    /* docs/cost-model.md: the 16 activation elements per token (in units of
     * h) take 4 bytes, the two dropout masks stay 1 byte: 16*4 + 2 = 66;
     * per score: 2 elements of 4 bytes + a 1-byte mask = 9 (vs 5). */
    const double sbh = 1024.0 * 768, as_h = 12.0 * 1024 / 768;
    zb_model m = gpt2();
    m.train.precision = ZB_PREC_FP32;
    REL(eval(&m, 1, 1).layer.m_b_bytes, sbh * (66 + 9 * as_h));
    /* t = 2: replicated 4 elements * 4 + 2 masks = 18, sharded 12 * 4 / 2 */
    REL(eval(&m, 2, 1).layer.m_b_bytes, sbh * (18 + 48 / 2.0 + 9 * as_h / 2));
    /* M_W: 16 elements of 4 bytes at t = 1 */
    REL(eval(&m, 1, 1).layer.m_w_bytes, sbh * 64);
}
END_TEST

START_TEST(m_w_derivation) {
    /* Qi et al. 2023 Table 1: M_W = 32bsh at 16 bits, f = 4h, t = 1.
     * t = 2 (docs): 4 replicated + 12/2 sharded elements -> 2*(4+6) = 20.
     * SP: all sharded: 2*16/2 = 16. */
    const double sbh = 1024.0 * 768;
    zb_model m = gpt2();
    REL(eval(&m, 1, 1).layer.m_w_bytes, 32 * sbh);
    REL(eval(&m, 2, 1).layer.m_w_bytes, 20 * sbh);
    m.train.sequence_parallel = true;
    REL(eval(&m, 2, 1).layer.m_w_bytes, 16 * sbh);
    /* M_W < M_B without full recompute, for every setting tried */
    int tps[] = {1, 2, 4};
    for (int prec = 0; prec < 2; prec++)
        for (int rc = 0; rc < 2; rc++)
            for (int sp = 0; sp < 2; sp++)
                for (int i = 0; i < 3; i++) {
                    m.train.precision = prec;
                    m.train.recompute = rc;
                    m.train.sequence_parallel = sp;
                    zb_cost_table ct = eval(&m, tps[i], 1);
                    ck_assert(ct.layer.m_w_bytes < ct.layer.m_b_bytes);
                    ck_assert(ct.head.m_w_bytes < ct.head.m_b_bytes);
                }
    /* Full recompute keeps only the input (2sbh) after F, but B rebuilds
     * what W needs: M_W is the same 32sbh, above M_B (docs, section 3.2). */
    m = gpt2();
    m.train.recompute = ZB_RECOMPUTE_FULL;
    REL(eval(&m, 1, 1).layer.m_w_bytes, 32 * sbh);
    REL(eval(&m, 1, 1).layer.m_b_bytes, 2 * sbh);
}
END_TEST

START_TEST(params_gpt2) {
    /* GPT-2 124M: 124,439,808 parameters; per block 7,087,872. */
    zb_model m = gpt2();
    zb_cost_table ct = eval(&m, 1, 1);
    REL(ct.layer.params, 7087872.0);
    REL(ct.embed.params, 50257.0 * 768 + 1024.0 * 768);
    REL(ct.head.params, 50257.0 * 768 + 2 * 768); /* tied copy + final LN */
    /* counted once (tied): layers + embedding + final LN */
    REL(12 * ct.layer.params + ct.embed.params + ct.head.params - 50257.0 * 768,
        124439808.0);
    /* t = 2: QKV (3h^2+3h)/2 = 885888, proj h^2/2 + h = 295680,
     * fc1 (hf+f)/2 = 1181184, fc2 hf/2 + h = 1180416, 2 LN 3072. */
    ct = eval(&m, 2, 1);
    REL(ct.layer.params, 885888.0 + 295680 + 1181184 + 1180416 + 3072);
    /* vocab-parallel: ceil(50257/2) = 25129 rows of the token table */
    REL(ct.embed.params, 25129.0 * 768 + 1024.0 * 768);
    REL(ct.head.params, 25129.0 * 768 + 2 * 768);
    REL(ct.vocab_params, 25129.0 * 768);
}
END_TEST

START_TEST(static_memory_zero) {
    zb_model m = gpt2();
    double P = 1e6;
    REL(zb_static_mem_bytes(&m, P, 1), 16 * P); /* 2 + 2 + 4 + 4 + 4 */
    REL(zb_static_mem_bytes(&m, P, 4), 16 * P); /* zero1 off */
    m.train.zero1 = true;
    REL(zb_static_mem_bytes(&m, P, 4), (2 + 2 + 12 / 4.0) * P);
    REL(zb_static_mem_bytes(&m, P, 1), 16 * P);
    m.train.precision = ZB_PREC_FP32;              /* 4 + 4 + 8/dp */
    REL(zb_static_mem_bytes(&m, P, 4), (4 + 4 + 8 / 4.0) * P);
    m.train.zero1 = false;
    REL(zb_static_mem_bytes(&m, P, 4), 16 * P);
}
END_TEST

START_TEST(workspace) {
    zb_model m = gpt2();
    REL(zb_workspace_bytes(&m), 0.05 * 80 * GIB);  /* 4 GiB > 1 GiB */
    m.cluster.device.mem_bytes = 16 * GIB;
    REL(zb_workspace_bytes(&m), GIB);              /* 0.8 GiB < 1 GiB */
    strcpy(m.cluster.device.name, "CPU");
    ck_assert(zb_workspace_bytes(&m) < GIB && zb_workspace_bytes(&m) > 0);
}
END_TEST

START_TEST(comm_by_hand) {
    /* 1.5 MiB over 2 ranks at 100 GB/s, 5 us: 2*(1/2)*1572864/1e11 + 2*5e-6 */
    REL(zb_allreduce_s(1572864, 2, 100e9, 5e-6), 1.572864e-5 + 1e-5);
    /* 8 ranks: 2*(7/8)*1e9/1e11 + 14*1e-5 = 0.0175 + 0.00014 */
    REL(zb_allreduce_s(1e9, 8, 1e11, 1e-5), 0.0175 + 0.00014);
    ck_assert_double_eq(zb_allreduce_s(1e9, 1, 1e11, 1e-5), 0);
    REL(zb_p2p_s(1572864, 100e9, 5e-6), 5e-6 + 1.572864e-5);
    /* the table: b*s*h*2 bytes, /t with SP */
    zb_model m = gpt2();
    zb_cost_table ct = eval(&m, 2, 1);
    REL(ct.p2p_bytes, 1024.0 * 768 * 2);
    REL(ct.p2p_intra_s, 5e-6 + 1024.0 * 768 * 2 / 100e9);
    REL(ct.p2p_inter_s, 20e-6 + 1024.0 * 768 * 2 / 25e9);
    m.train.sequence_parallel = true;
    REL(eval(&m, 2, 1).p2p_bytes, 1024.0 * 768);
}
END_TEST

START_TEST(tp_allreduce_on_critical_path) {
    /* Only the links differ between the two models: F and B differ by two
     * all-reduces of b*s*h*2 bytes over t = 2, W not at all (no SP); with
     * SP, W re-gathers 4 tensors = 2 all-reduces' worth. */
    zb_model fast = gpt2(), slow = gpt2();
    fast.cluster.intra_bw_Bps = 1e30;
    fast.cluster.intra_lat_s = 0;
    /* ring all-reduce at 78% of the link (NCCL bus bandwidth) */
    double ar = 2 * 0.5 * (1024.0 * 768 * 2) / (0.78 * 100e9) + 2 * 5e-6;
    for (int sp = 0; sp < 2; sp++) {
        fast.train.sequence_parallel = slow.train.sequence_parallel = sp;
        zb_cost_table a = eval(&slow, 2, 1), b = eval(&fast, 2, 1);
        REL(a.layer.f_s - b.layer.f_s, 2 * ar);
        REL(a.layer.b_s - b.layer.b_s, 2 * ar);
        if (sp)
            REL(a.layer.w_s - b.layer.w_s, 2 * ar);
        else
            REL(a.layer.w_s, b.layer.w_s);
    }
    /* t = 1: no collectives, the link does not matter */
    zb_cost_table a = eval(&slow, 1, 1), b = eval(&fast, 1, 1);
    REL(a.layer.f_s, b.layer.f_s);
    /* a TP group wider than a node uses the inter-node link */
    slow.cluster.devices_per_node = 1;
    fast.cluster.devices_per_node = 1;
    fast.cluster.inter_bw_Bps = 1e30;
    fast.cluster.inter_lat_s = 0;
    fast.train.sequence_parallel = slow.train.sequence_parallel = false;
    a = eval(&slow, 2, 1);
    b = eval(&fast, 2, 1);
    double ar_inter = 2 * 0.5 * (1024.0 * 768 * 2) / (0.78 * 25e9) + 2 * 20e-6;
    REL(a.layer.f_s - b.layer.f_s, 2 * ar_inter);
}
END_TEST

START_TEST(times_bounded_by_peak) {
    /* No pass beats peak; GEMM-dominated W reaches a sane fraction of it. */
    zb_model m = gpt2();
    for (int prec = 0; prec < 2; prec++) {
        m.train.precision = prec;
        double peak = prec ? 312e12 : 19.5e12;
        zb_cost_table ct = eval(&m, 1, 8);
        REL(ct.peak_flops, peak);
        const zb_pass_cost *ps[] = {&ct.layer, &ct.head};
        for (int i = 0; i < 2; i++) {
            ck_assert(ps[i]->f_s > ps[i]->f_flops / peak);
            ck_assert(ps[i]->b_s > ps[i]->b_flops / peak);
            ck_assert(ps[i]->w_s > ps[i]->w_flops / peak);
            ck_assert(ps[i]->w_s < ps[i]->w_flops / (0.3 * peak));
        }
        /* B does more work than F, which does more than W */
        ck_assert(ct.layer.b_s > ct.layer.f_s && ct.layer.f_s > ct.layer.w_s);
        ck_assert(ct.embed.f_s > 0 && ct.embed.b_s == 0 && ct.embed.w_s > 0);
    }
}
END_TEST

START_TEST(head_and_embed) {
    zb_model m = gpt2();
    zb_cost_table ct = eval(&m, 2, 1); /* vocab-parallel: V/2 rows each */
    double bshV = 1024.0 * 768 * 25129;
    REL(ct.head.f_flops, 2 * bshV);
    REL(ct.head.b_flops, 2 * bshV);
    REL(ct.head.w_flops, 2 * bshV);
    /* fp32 logits of the local rows (4 bsV/t) are the head's activations */
    ck_assert(ct.head.m_b_bytes >= 4.0 * 1024 * 25129);
    ck_assert(ct.head.m_b_bytes < 4.0 * 1024 * 25129 + 4 * 1024.0 * 768 * 2);
    /* tp 1 holds everything; the head's time shrinks with tp */
    zb_cost_table c1 = eval(&m, 1, 1);
    REL(c1.head.f_flops, 2 * 1024.0 * 768 * 50257);
    ck_assert(ct.head.f_s < 0.75 * c1.head.f_s);
    ck_assert(ct.head.w_s < 0.75 * c1.head.w_s);
    /* tp > 1 adds the embedding's all-reduce (F) and the head's (B) */
    ck_assert(ct.embed.f_s > c1.embed.f_s);
    ck_assert_double_eq(ct.embed.f_flops + ct.embed.b_flops + ct.embed.w_flops, 0);
    /* embedding keeps the token ids (4 bytes each); after B its output
     * gradient (b*s*h*2 bytes) waits for W */
    REL(ct.embed.m_b_bytes, 4.0 * 1024);
    REL(ct.embed.m_w_bytes, 4.0 * 1024 + 1024.0 * 768 * 2);
}
END_TEST

START_TEST(step_flops_megatron) {
    /* Narayanan et al. 2021: 72 B s l h^2 (1 + s/(6h) + V/(12 l h)). */
    zb_model m = gpt2();
    double B = 512, s = 1024, l = 12, h = 768, V = 50257;
    REL(zb_model_step_flops(&m),
        72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h)));
    /* general f = 2h: 3 B (l (8sh^2 + 4shf + 4s^2h) + 2shV) */
    m.arch.ffn_hidden = 1536;
    double f = 1536;
    REL(zb_model_step_flops(&m),
        3 * B * (l * (8 * s * h * h + 4 * s * h * f + 4 * s * s * h) +
                 2 * s * h * V));
    /* consistent with the table: B(seqs) * (l (F+B+W) + head F+B+W) */
    m = gpt2();
    zb_cost_table ct = eval(&m, 1, 1);
    REL(zb_model_step_flops(&m),
        B * (l * (ct.layer.f_flops + ct.layer.b_flops + ct.layer.w_flops) +
             ct.head.f_flops + ct.head.b_flops + ct.head.w_flops));
}
END_TEST

START_TEST(gemm_efficiency_shape) {
    double sizes[] = {1, 2, 7, 16, 64, 100, 128, 129, 512, 1000, 4096, 65536, 1e6};
    double peaks[] = {0, 1e12, 19.5e12, 312e12, 2.25e15};
    int n = sizeof sizes / sizeof sizes[0];
    for (int p = 0; p < 5; p++)
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++)
                for (int k = 0; k < n; k++) {
                    double M = sizes[i], N = sizes[j], K = sizes[k], P = peaks[p];
                    double e = zb_gemm_efficiency(M, N, K, P);
                    ck_assert(e > 0 && e <= 1);
                    /* growing any dimension never lowers the efficiency */
                    if (i + 1 < n)
                        ck_assert(zb_gemm_efficiency(sizes[i + 1], N, K, P) >= e);
                    if (j + 1 < n)
                        ck_assert(zb_gemm_efficiency(M, sizes[j + 1], K, P) >= e);
                    if (k + 1 < n)
                        ck_assert(zb_gemm_efficiency(M, N, sizes[k + 1], P) >= e);
                    /* a faster device needs more work to saturate */
                    if (p + 1 < 5)
                        ck_assert(zb_gemm_efficiency(M, N, K, peaks[p + 1]) <= e);
                }
    /* strictly rising in the interesting range, and saturating */
    double a100 = 312e12;
    ck_assert(zb_gemm_efficiency(1024, 1024, 1024, a100) <
              zb_gemm_efficiency(4096, 4096, 4096, a100));
    ck_assert(zb_gemm_efficiency(64, 64, 64, a100) < 0.1);
    ck_assert(zb_gemm_efficiency(8192, 8192, 8192, a100) > 0.7);
    double big = zb_gemm_efficiency(1e5, 1e5, 1e5, a100);
    ck_assert(fabs(big - zb_gemm_efficiency(2e5, 2e5, 2e5, a100)) < 1e-3);
    /* half the saturation at work = peak * 3 us: a 1024^3 GEMM (2.1 GFLOP)
     * on a 1 TFLOP/s CPU is far past it, on an A100 it is not */
    ck_assert(zb_gemm_efficiency(1024, 1024, 1024, 1e12) >
              zb_gemm_efficiency(1024, 1024, 1024, a100) + 0.1);
}
END_TEST

START_TEST(bad_sizes) {
    zb_model m = gpt2();
    zb_cost_table ct;
    zb_err err;
    ck_assert_int_eq(zb_cost_eval(&m, 5, 1, &ct, &err), ZB_EINFEASIBLE);
    ck_assert(strstr(err.msg, "tp 5") != NULL);
    ck_assert_int_eq(zb_cost_eval(&m, 0, 1, &ct, &err), ZB_EINFEASIBLE);
    ck_assert_int_eq(zb_cost_eval(&m, 1, 0, &ct, &err), ZB_EINFEASIBLE);
    m.cluster.device.peak_bf16_flops = 0;
    ck_assert_int_eq(zb_cost_eval(&m, 1, 1, &ct, &err), ZB_EINFEASIBLE);
}
END_TEST

/* The new terms: p2p overhead, TP overlap, fused attention, elementwise
 * work priced by memory bandwidth, a calibrated GEMM efficiency. */
/* planner/cost/dp.h: what of a DP reduction shows, by hand */
START_TEST(dp_exposed) {
    zb_model m = gpt2();
    ck_assert(zb_dp_exposed_s(&m, 1.0, 0.3, 0.2, 10) == 1.0);  /* off */
    m.train.dp_overlap = true;
    REL(zb_dp_exposed_s(&m, 1.0, 0.3, 0.2, 10), 0.7);   /* outlasts the backward */
    REL(zb_dp_exposed_s(&m, 1.0, 5.0, 0.2, 10), 0.1);   /* the last bucket */
    ck_assert(zb_dp_exposed_s(&m, 0.0, 0.3, 0.2, 10) == 0.0);
    m.train.zero1 = true;   /* reduce-scatter under B+W, all-gather under F */
    REL(zb_dp_exposed_s(&m, 1.0, 0.2, 0.1, 4), 0.3 + 0.4);
    REL(zb_dp_exposed_s(&m, 1.0, 0.2, 5.0, 4), 0.3 + 0.125);
    REL(zb_dp_exposed_s(&m, 1.0, 9.0, 9.0, 0), 1.0);    /* buckets < 1: one */
}
END_TEST

START_TEST(overheads_overlap_fused_bandwidth) {
    zb_model m = gpt2(), g = gpt2();
    zb_cost_table base = eval(&m, 2, 1);
    m.cluster.intra_p2p_s = 30e-6;
    m.cluster.inter_p2p_s = 70e-6;
    zb_cost_table c = eval(&m, 2, 1);
    REL(c.p2p_intra_s - base.p2p_intra_s, 30e-6);
    REL(c.p2p_inter_s - base.p2p_inter_s, 70e-6);
    /* TP overlap hides eff of the F/B all-reduces */
    zb_model fast = gpt2();
    fast.cluster.intra_bw_Bps = 1e30;
    fast.cluster.intra_lat_s = 0;
    double exposed = base.layer.f_s - eval(&fast, 2, 1).layer.f_s;
    m = gpt2();
    m.train.tp_overlap = true;
    m.train.tp_overlap_eff = 0.75;
    c = eval(&m, 2, 1);
    REL(c.layer.f_s - eval(&fast, 2, 1).layer.f_s, 0.25 * exposed);
    ck_assert(c.layer.b_s < base.layer.b_s);
    /* fused attention: no s^2 activations, different attention time */
    m = gpt2();
    m.train.fused_attention = true;
    c = eval(&m, 1, 1);
    zb_cost_table u = eval(&g, 1, 1);
    double scores = 12.0 * 1024 * 1024 * (2 * 2 + 1); /* a s^2 b (2e+1) */
    REL(u.layer.m_b_bytes - c.layer.m_b_bytes, scores);
    ck_assert(c.layer.f_s < u.layer.f_s);
    REL(c.layer.f_flops, u.layer.f_flops);
    /* elementwise work scales with 1 / bandwidth: halving it adds exactly
     * the elementwise time again; GEMM FLOPs do not change */
    m = gpt2();
    m.cluster.device.mem_bw_Bps /= 2;
    c = eval(&m, 1, 1);
    ck_assert(c.layer.f_s > u.layer.f_s);
    REL(c.layer.f_flops, u.layer.f_flops);
    double el = c.layer.f_s - u.layer.f_s;
    m.cluster.device.mem_bw_Bps /= 2;
    REL(eval(&m, 1, 1).layer.f_s - c.layer.f_s, 2 * el);
    /* a calibrated GEMM efficiency scales the GEMM time */
    m = gpt2();
    m.cluster.device.gemm_eff = 0.4; /* half of the default 0.8 */
    c = eval(&m, 1, 1);
    ck_assert(c.head.w_s > 1.9 * u.head.w_s && c.head.w_s < 2.0 * u.head.w_s + 1e-9);
}

/* The cpu device: a rank's share of the cores scales its peak and
 * bandwidth (whole threads, or a time share when ranks outnumber cores);
 * a rank with more threads is faster, not slower; other devices keep
 * theirs. The CPU backend's memory: a slot held from F to W (M_B = M_W). */
START_TEST(cpu_rank_share) {
    zb_model m = gpt2();
    m.cluster.device = *zb_device_lookup("cpu");
    m.train.precision = ZB_PREC_FP32;
    double peak = m.cluster.device.peak_fp32_flops;
    zb_model a = m, b = m, c = m;
    ck_assert_double_eq(zb_cost_cpu_rank_share(&a, 1, 4), 4);
    ck_assert_double_eq(zb_cost_cpu_rank_share(&b, 3, 4), 1);
    ck_assert_double_eq(zb_cost_cpu_rank_share(&c, 8, 2), 0.25);
    REL(a.cluster.device.peak_fp32_flops, 4 * peak);
    REL(c.cluster.device.peak_fp32_flops, 0.25 * peak);
    zb_cost_table t4 = eval(&a, 1, 1), t1 = eval(&b, 1, 1);
    ck_assert(t4.layer.f_s < t1.layer.f_s && t4.layer.f_s > t1.layer.f_s / 4);
    ck_assert(t4.layer.m_b_bytes == t4.layer.m_w_bytes);
    ck_assert(t4.chunk_act_bytes > 0);
    zb_model g = gpt2();
    ck_assert_double_eq(zb_cost_cpu_rank_share(&g, 1, 64), 1);
    ck_assert_double_eq(g.cluster.device.peak_bf16_flops, 312e12);
    ck_assert_int_ge(zb_cost_cpu_cores(), 1);
}
END_TEST

END_TEST

int main(void) {
    Suite *su = suite_create("cost");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, layer_flops_design_formula);
    tcase_add_test(tc, layer_flops_general_ffn);
    tcase_add_test(tc, recompute_flops);
    tcase_add_test(tc, activation_bytes_korthikanti);
    tcase_add_test(tc, activation_bytes_fp32);
    tcase_add_test(tc, m_w_derivation);
    tcase_add_test(tc, params_gpt2);
    tcase_add_test(tc, static_memory_zero);
    tcase_add_test(tc, workspace);
    tcase_add_test(tc, cpu_rank_share);
    tcase_add_test(tc, comm_by_hand);
    tcase_add_test(tc, tp_allreduce_on_critical_path);
    tcase_add_test(tc, times_bounded_by_peak);
    tcase_add_test(tc, head_and_embed);
    tcase_add_test(tc, step_flops_megatron);
    tcase_add_test(tc, gemm_efficiency_shape);
    tcase_add_test(tc, bad_sizes);
    tcase_add_test(tc, overheads_overlap_fused_bandwidth);
    tcase_add_test(tc, dp_exposed);
    suite_add_tcase(su, tc);
    SRunner *sr = srunner_create(su);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
