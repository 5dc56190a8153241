/* test_partition.c - the exact partitioner against brute-force enumeration
 * of every contiguous split, hand-worked cases (heavy head, memory
 * tie-break, a memory limit forcing a slower split), the even split, and
 * the per-stage simulator costs with the rank/node layout of zb_plan.h. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "planner/cost/partition.h"

/* A model whose shape only matters through layers, vocab*hidden (tied
 * copy) and the precision: bf16 without ZeRO-1 is 16 bytes per parameter
 * of static memory (zb_static_mem_bytes, tested in test_cost.c). */
static zb_model model(int layers) {
    zb_model m;
    memset(&m, 0, sizeof m);
    m.arch = (zb_arch){.layers = layers, .hidden = 4, .heads = 1,
                       .ffn_hidden = 16, .seq_len = 8, .vocab = 10,
                       .tied_embeddings = true};
    m.train.precision = ZB_PREC_BF16;
    return m;
}

static void set(zb_pass_cost *c, double f, double b, double w, double mb,
                double mw, double params) {
    *c = (zb_pass_cost){.f_s = f, .b_s = b, .w_s = w, .m_b_bytes = mb,
                        .m_w_bytes = mw, .params = params};
}

/* ---- brute force ------------------------------------------------------ */

typedef struct {
    const zb_model *m;
    const zb_cost_table *ct;
    int L, n;
    double limit;
    double best_t, best_mem;  /* lexicographic optimum found */
    int found;
    int parts[16];
} brute;

static double sum3(const zb_pass_cost *c) { return c->f_s + c->b_s + c->w_s; }

/* Stage time and memory written out from the spec: F+B+W of its layers plus
 * the embedding (first) / head (last); memory 16 bytes per parameter plus
 * one microbatch's M_B; with tied embeddings one stage holding both keeps
 * one V*h matrix. */
static void stage_eval(const brute *x, int nl, int k, double *t, double *mem) {
    bool e = k == 0, h = k == x->n - 1;
    const zb_cost_table *ct = x->ct;
    *t = nl * sum3(&ct->layer) + (e ? sum3(&ct->embed) : 0) +
         (h ? sum3(&ct->head) : 0);
    double params = nl * ct->layer.params + (e ? ct->embed.params : 0) +
                    (h ? ct->head.params : 0);
    if (e && h) params -= x->ct->vocab_params;
    *mem = 16 * params + nl * ct->layer.m_b_bytes +
           (e ? ct->embed.m_b_bytes : 0) + (h ? ct->head.m_b_bytes : 0);
}

static void enumerate(brute *x, int k, int left) {
    if (k == x->n - 1) {
        x->parts[k] = left;
        double T = 0, M = 0;
        for (int i = 0; i < x->n; i++) {
            double t, mem;
            stage_eval(x, x->parts[i], i, &t, &mem);
            if (x->limit > 0 && mem > x->limit) return;
            if (t > T) T = t;
            if (mem > M) M = mem;
        }
        if (!x->found || T < x->best_t || (T == x->best_t && M < x->best_mem)) {
            x->best_t = T;
            x->best_mem = M;
        }
        x->found = 1;
        return;
    }
    for (int nl = 1; nl <= left - (x->n - 1 - k); nl++) {
        x->parts[k] = nl;
        enumerate(x, k + 1, left - nl);
    }
}

/* Check spans: contiguous, >= 1 layer each, flags, and objective values. */
static void check_spans(const brute *x, const zb_stage_span *sp) {
    double T = 0, M = 0;
    int next = 0;
    for (int k = 0; k < x->n; k++) {
        ck_assert_int_eq(sp[k].first_layer, next);
        ck_assert_int_ge(sp[k].n_layers, 1);
        ck_assert(sp[k].embed == (k == 0));
        ck_assert(sp[k].head == (k == x->n - 1));
        next += sp[k].n_layers;
        double t, mem;
        stage_eval(x, sp[k].n_layers, k, &t, &mem);
        if (x->limit > 0) ck_assert(mem <= x->limit);
        if (t > T) T = t;
        if (mem > M) M = mem;
    }
    ck_assert_int_eq(next, x->L);
    ck_assert_double_eq(T, x->best_t);
    ck_assert_double_eq(M, x->best_mem);
}

/* Small integers keep every sum exact, so ties are real ties and the
 * memory tie-break is exercised often. */
static double rnd(int lo, int hi) { return lo + rand() % (hi - lo + 1); }

START_TEST(matches_brute_force) {
    srand(12345);
    int checked = 0, infeasible = 0;
    for (int iter = 0; iter < 3000; iter++) {
        int L = 1 + rand() % 10, n = 1 + rand() % (L < 4 ? L : 4);
        zb_model m = model(L);
        zb_cost_table ct;
        memset(&ct, 0, sizeof ct);
        ct.vocab_params = (double)m.arch.vocab * m.arch.hidden; /* tp 1 */
        set(&ct.layer, rnd(1, 4), rnd(1, 6), rnd(0, 3), rnd(1, 20), 0, rnd(1, 50));
        set(&ct.embed, rnd(0, 3), 0, rnd(0, 2), rnd(0, 5), 0, rnd(40, 200));
        set(&ct.head, rnd(0, 12), rnd(0, 12), rnd(0, 12), rnd(0, 60), 0, rnd(40, 200));
        brute x = {.m = &m, .ct = &ct, .L = L, .n = n};
        /* no limit a third of the time, else one between tight and loose */
        x.limit = rand() % 3 == 0 ? 0 : 16 * rnd(60, 400);
        enumerate(&x, 0, L);
        zb_stage_span sp[4];
        zb_err err;
        zb_status st = zb_partition(&m, &ct, n, x.limit, sp, &err);
        if (!x.found) {
            ck_assert_int_eq(st, ZB_EINFEASIBLE);
            infeasible++;
            continue;
        }
        ck_assert_msg(st == ZB_OK, "%s", err.msg);
        check_spans(&x, sp);
        checked++;
    }
    /* the random cases cover both outcomes */
    ck_assert_int_gt(checked, 1000);
    ck_assert_int_gt(infeasible, 100);
}
END_TEST

START_TEST(real_costs_match_brute_force) {
    /* The cost model's own table for a GPT-2-shaped model, 10 layers. */
    zb_model m = model(10);
    m.arch = (zb_arch){.layers = 10, .hidden = 768, .heads = 12,
                       .ffn_hidden = 3072, .seq_len = 1024, .vocab = 50257,
                       .tied_embeddings = true};
    m.cluster.devices_per_node = 8;
    m.cluster.device.peak_bf16_flops = 312e12;
    m.cluster.device.peak_fp32_flops = 19.5e12;
    m.cluster.intra_bw_Bps = m.cluster.inter_bw_Bps = 100e9;
    zb_cost_table ct;
    zb_err err;
    ck_assert_int_eq(zb_cost_eval(&m, 1, 4, &ct, &err), ZB_OK);
    for (int n = 1; n <= 4; n++) {
        brute x = {.m = &m, .ct = &ct, .L = 10, .n = n};
        enumerate(&x, 0, 10);
        zb_stage_span sp[4];
        ck_assert_int_eq(zb_partition(&m, &ct, n, 0, sp, &err), ZB_OK);
        /* sums may round differently from the brute force's: compare the
         * time with a tolerance */
        double T = 0;
        for (int k = 0; k < n; k++) {
            double t, mem;
            stage_eval(&x, sp[k].n_layers, k, &t, &mem);
            if (t > T) T = t;
        }
        ck_assert_double_eq_tol(T, x.best_t, 1e-12 * x.best_t);
        /* the LM head of GPT-2 weighs more than a block: the last stage
         * never gets more layers than the first */
        if (n > 1) ck_assert_int_le(sp[n - 1].n_layers, sp[0].n_layers);
    }
}
END_TEST

START_TEST(heavy_head) {
    /* 12 layers of time 1 (0.25 + 0.5 + 0.25), head 3, embedding 0, n = 4.
     * Stages a, b, c, d with a, b, c <= T, d + 3 <= T, a+b+c+d = 12:
     * T = 3 would need d = 0; T = 4 works, forcing d = 1 and a+b+c = 11
     * with each <= 4, i.e. {4, 4, 3} in some order. */
    zb_model m = model(12);
    zb_cost_table ct;
    memset(&ct, 0, sizeof ct);
    ct.vocab_params = (double)m.arch.vocab * m.arch.hidden; /* tp 1 */
    set(&ct.layer, 0.25, 0.5, 0.25, 1, 0, 1);
    set(&ct.head, 1, 1, 1, 1, 0, 1);
    zb_stage_span sp[4];
    zb_err err;
    ck_assert_int_eq(zb_partition(&m, &ct, 4, 0, sp, &err), ZB_OK);
    ck_assert_int_eq(sp[3].n_layers, 1);
    ck_assert_int_eq(sp[3].first_layer, 11);
    for (int k = 0; k < 3; k++) {
        ck_assert_int_ge(sp[k].n_layers, 3);
        ck_assert_int_le(sp[k].n_layers, 4);
    }
    ck_assert(sp[0].embed && !sp[0].head && sp[3].head && !sp[3].embed);
}
END_TEST

START_TEST(memory_tie_break) {
    /* 4 layers, 3 stages, layer time 1, no embed/head time: every split
     * (2,1,1), (1,2,1), (1,1,2) has largest time 2. Embedding and head
     * params 5 each, layer params 1 (x16 bytes), no M_B:
     * (2,1,1): max(16*7, 16*1, 16*6) = 112; (1,2,1): max(96, 32, 96) = 96;
     * (1,1,2): 112. Only (1,2,1) is optimal. */
    zb_model m = model(4);
    zb_cost_table ct;
    memset(&ct, 0, sizeof ct);
    ct.vocab_params = (double)m.arch.vocab * m.arch.hidden; /* tp 1 */
    set(&ct.layer, 1, 0, 0, 0, 0, 1);
    set(&ct.embed, 0, 0, 0, 0, 0, 5);
    set(&ct.head, 0, 0, 0, 0, 0, 5);
    zb_stage_span sp[3];
    zb_err err;
    ck_assert_int_eq(zb_partition(&m, &ct, 3, 0, sp, &err), ZB_OK);
    ck_assert_int_eq(sp[0].n_layers, 1);
    ck_assert_int_eq(sp[1].n_layers, 2);
    ck_assert_int_eq(sp[2].n_layers, 1);
}
END_TEST

START_TEST(memory_limit) {
    /* 4 layers, 2 stages, layer time 1: (2,2) has time 2. Layer params 1
     * and M_B 100, embedding params 10: stage 0 with nl layers needs
     * 16*(10 + nl) + 100*nl = 160 + 116 nl bytes (276, 392, 508), stage 1
     * 116 nl (232, 348). Limit 350: stage 0 takes 1 layer -> (1,3), time
     * 3, stage 1 348 <= 350. Limit 340: (1,3) fails too -> infeasible. */
    zb_model m = model(4);
    zb_cost_table ct;
    memset(&ct, 0, sizeof ct);
    ct.vocab_params = (double)m.arch.vocab * m.arch.hidden; /* tp 1 */
    set(&ct.layer, 1, 0, 0, 100, 0, 1);
    set(&ct.embed, 0, 0, 0, 0, 0, 10);
    zb_stage_span sp[2];
    zb_err err;
    ck_assert_int_eq(zb_partition(&m, &ct, 2, 0, sp, &err), ZB_OK);
    ck_assert_int_eq(sp[0].n_layers, 2);
    ck_assert_int_eq(zb_partition(&m, &ct, 2, 350, sp, &err), ZB_OK);
    ck_assert_int_eq(sp[0].n_layers, 1);
    ck_assert_int_eq(sp[1].n_layers, 3);
    ck_assert_int_eq(zb_partition(&m, &ct, 2, 340, sp, &err), ZB_EINFEASIBLE);
    ck_assert(strstr(err.msg, "4 layers") != NULL);
    /* more stages than layers, or none */
    zb_stage_span big[5];
    ck_assert_int_eq(zb_partition(&m, &ct, 5, 0, big, &err), ZB_EINFEASIBLE);
    ck_assert_int_eq(zb_partition(&m, &ct, 0, 0, big, &err), ZB_EINFEASIBLE);
}
END_TEST

START_TEST(single_stage_tied) {
    /* One stage holds embedding and head: with tied embeddings the V*h
     * matrix (10*4 = 40 params) is kept once: 16*(2 + 50 + 45 - 40). */
    zb_model m = model(2);
    zb_cost_table ct;
    memset(&ct, 0, sizeof ct);
    ct.vocab_params = (double)m.arch.vocab * m.arch.hidden; /* tp 1 */
    set(&ct.layer, 1, 0, 0, 0, 0, 1);
    set(&ct.embed, 0, 0, 0, 0, 0, 50);
    set(&ct.head, 0, 0, 0, 0, 0, 45);
    zb_stage_span sp[1];
    zb_err err;
    double need = 16.0 * (2 + 50 + 45 - 40);
    ck_assert_int_eq(zb_partition(&m, &ct, 1, need, sp, &err), ZB_OK);
    ck_assert(sp[0].embed && sp[0].head && sp[0].n_layers == 2);
    ck_assert_int_eq(zb_partition(&m, &ct, 1, need - 1, sp, &err),
                     ZB_EINFEASIBLE);
    m.arch.tied_embeddings = false;
    ck_assert_int_eq(zb_partition(&m, &ct, 1, need, sp, &err), ZB_EINFEASIBLE);
}
END_TEST

static void expect_even(int layers, int n, const int *want) {
    zb_stage_span sp[8];
    zb_partition_even(layers, n, sp);
    for (int k = 0, first = 0; k < n; k++) {
        ck_assert_int_eq(sp[k].n_layers, want[k]);
        ck_assert_int_eq(sp[k].first_layer, first);
        ck_assert(sp[k].embed == (k == 0) && sp[k].head == (k == n - 1));
        first += want[k];
    }
}

START_TEST(even_split) {
    expect_even(12, 4, (int[]){3, 3, 3, 3});
    expect_even(13, 4, (int[]){3, 4, 3, 3});
    expect_even(14, 4, (int[]){3, 4, 4, 3});
    expect_even(15, 4, (int[]){4, 4, 4, 3});
    expect_even(7, 1, (int[]){7});
    expect_even(9, 2, (int[]){5, 4});
    expect_even(3, 5, (int[]){0, 1, 1, 1, 0});
    expect_even(17, 6, (int[]){3, 3, 3, 3, 3, 2});
    expect_even(16, 6, (int[]){2, 3, 3, 3, 3, 2});
}
END_TEST

START_TEST(stage_costs_layout) {
    zb_cost_table ct;
    memset(&ct, 0, sizeof ct);
    set(&ct.layer, 1, 2, 3, 10, 4, 0);
    set(&ct.embed, 0.5, 0, 0.25, 1, 2, 0);
    set(&ct.head, 5, 6, 7, 50, 30, 0);
    ct.p2p_intra_s = 0.01;
    ct.p2p_inter_s = 0.1;
    zb_costs c;
    zb_err err;

    /* LOOP, pp = 4, v = 1, dp = 1, tp = 2, 4 devices per node: pipeline
     * ranks start at devices 0, 2, 4, 6 -> nodes 0, 0, 1, 1. */
    zb_stage_span sp[4] = {{0, 2, true, false}, {2, 3, false, false},
                           {5, 3, false, false}, {8, 1, false, true}};
    ck_assert_int_eq(zb_costs_init(&c, 4, &err), ZB_OK);
    zb_stage_costs(&ct, sp, 4, 1, ZB_PLACE_LOOP, 1, 2, 4, &c);
    ck_assert_double_eq(c.t_f[0], 2 * 1 + 0.5);
    ck_assert_double_eq(c.t_w[0], 2 * 3 + 0.25);
    ck_assert_double_eq(c.m_b[0], 2 * 10 + 1);
    ck_assert_double_eq(c.m_w[0], 2 * 4 + 2);
    ck_assert_double_eq(c.t_b[1], 3 * 2);
    ck_assert_double_eq(c.t_f[3], 1 + 5);
    ck_assert_double_eq(c.t_b[3], 2 + 6);
    ck_assert_double_eq(c.m_b[3], 10 + 50);
    ck_assert_double_eq(c.m_w[3], 4 + 30);
    ck_assert_double_eq(c.t_comm[0], 0.01);
    ck_assert_double_eq(c.t_comm[1], 0.1);
    ck_assert_double_eq(c.t_comm[2], 0.01);
    ck_assert_double_eq(c.t_comm[3], 0);
    zb_costs_free(&c);

    /* V, pp = 2, v = 2, dp = 2, tp = 2, 4 per node: vstages on ranks
     * 0, 1, 1, 0; rank 1 starts at device 4 (node 1). 1 -> 2 stays on
     * rank 1 (no transfer). */
    ck_assert_int_eq(zb_costs_init(&c, 4, &err), ZB_OK);
    zb_stage_costs(&ct, sp, 2, 2, ZB_PLACE_V, 2, 2, 4, &c);
    ck_assert_double_eq(c.t_comm[0], 0.1);
    ck_assert_double_eq(c.t_comm[1], 0);
    ck_assert_double_eq(c.t_comm[2], 0.1);
    /* LOOP, pp = 2, v = 2, dp = 1, tp = 1, 8 per node: ranks 0, 1, 0, 1,
     * one node: every hop crosses ranks inside the node. */
    zb_stage_costs(&ct, sp, 2, 2, ZB_PLACE_LOOP, 1, 1, 8, &c);
    ck_assert_double_eq(c.t_comm[0], 0.01);
    ck_assert_double_eq(c.t_comm[1], 0.01);
    ck_assert_double_eq(c.t_comm[2], 0.01);
    ck_assert_double_eq(c.t_comm[3], 0);
    zb_costs_free(&c);
}
END_TEST

int main(void) {
    Suite *su = suite_create("partition");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, matches_brute_force);
    tcase_add_test(tc, real_costs_match_brute_force);
    tcase_add_test(tc, heavy_head);
    tcase_add_test(tc, memory_tie_break);
    tcase_add_test(tc, memory_limit);
    tcase_add_test(tc, single_stage_tied);
    tcase_add_test(tc, even_split);
    tcase_add_test(tc, stage_costs_layout);
    suite_add_tcase(su, tc);
    SRunner *sr = srunner_create(su);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
