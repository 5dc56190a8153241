/* test_cost_regions.c - OpenMP regions per pass of the CPU backend
 * (planner/cost/regions.c) and their price in the cpu cost model: a rank
 * with more than one thread pays regions x omp_region_s per pass and its
 * one-thread kernels at one core's rate; a rank with one thread nothing. */
#include <check.h>
#include <math.h>
#include <string.h>

#include "planner/cost/cost.h"
#include "planner/cost/regions.h"

/* models/tiny.yaml's shape: 8 layers, h 64, 4 heads, s 64, V 256, b 2 */
static zb_model tiny(void) {
    zb_model m;
    memset(&m, 0, sizeof m);
    strcpy(m.name, "tiny");
    m.arch = (zb_arch){.layers = 8, .hidden = 64, .heads = 4, .ffn_hidden = 256,
                       .seq_len = 64, .vocab = 256, .tied_embeddings = true};
    m.train.global_batch = 16;
    m.train.micro_batch = 2;
    m.train.precision = ZB_PREC_FP32;
    m.cluster.nodes = 1;
    m.cluster.devices_per_node = 16;
    m.cluster.device = *zb_device_lookup("cpu");
    m.cluster.intra_bw_Bps = m.cluster.inter_bw_Bps = 10e9;
    return m;
}

#define REL(a, b) ck_assert_double_eq_tol((a), (b), 1e-12 * fabs(b))

static zb_cost_table eval(const zb_model *m) {
    zb_cost_table ct;
    zb_err err;
    zb_status st = zb_cost_eval(m, 1, m->train.micro_batch, &ct, &err);
    ck_assert_msg(st == ZB_OK, "%s", err.msg);
    return ct;
}

/* Tiny, by hand from the kernels' thresholds (16384 operations; GEMMs with
 * more than 64 rows of output; the residual add from 65536 elements):
 * N = 128 tokens x C = 64 is 8192 elements, so the LayerNorms and residual
 * adds run on one thread. F: QKV, attention, proj, fc1, GELU, fc2 = 6.
 * B: fc2, GELU, fc1, proj, attention, QKV = 6. W: the dW GEMMs and bias
 * sums of fc1 (256 rows) and QKV (192), not fc2 and proj (64) = 4.
 * Head F: logits GEMM, row max, sum(exp), dlogits (128 x 256) = 4; B: the
 * input gradient GEMM; W: the weight gradient GEMM (256 rows). Embedding:
 * none. A step of 8 microbatches: 8 x (8 x 16 + 6) = 1072, what a
 * GOMP_parallel counter saw in zbrun (1106 with the 34 of AdamW). */
START_TEST(regions_tiny) {
    zb_regions r = zb_cpu_regions_block(2, 64, 64, 256, 4, 1);
    ck_assert_double_eq(r.f, 6);
    ck_assert_double_eq(r.b, 6);
    ck_assert_double_eq(r.w, 4);
    zb_regions h = zb_cpu_regions_head(2, 64, 64, 256, 1);
    ck_assert_double_eq(h.f, 4);
    ck_assert_double_eq(h.b, 1);
    ck_assert_double_eq(h.w, 1);
    zb_regions e = zb_cpu_regions_embed(2, 64, 64);
    ck_assert_double_eq(e.f + e.b + e.w, 0);
}
END_TEST

/* Large enough that every loop is a region: F 10 (2 LN, 4 GEMMs,
 * attention, GELU, 2 residual adds), B 8, W 10 (4 GEMMs, 4 bias sums,
 * 2 LN); TP shrinks the sharded sizes only. */
START_TEST(regions_large) {
    zb_regions r = zb_cpu_regions_block(4, 512, 768, 3072, 12, 2);
    ck_assert_double_eq(r.f, 10);
    ck_assert_double_eq(r.b, 8);
    ck_assert_double_eq(r.w, 10);
    zb_regions e = zb_cpu_regions_embed(4, 512, 768);
    ck_assert_double_eq(e.f, 2);
    ck_assert_double_eq(e.w, 2);
}
END_TEST

static zb_model sized(int layers, int h, int a, int s, int V, int b) {
    zb_model m = tiny();
    m.arch = (zb_arch){.layers = layers, .hidden = h, .heads = a, .ffn_hidden = 4 * h,
                       .seq_len = s, .vocab = V, .tied_embeddings = true};
    m.train.micro_batch = b;
    return m;
}

/* Two threads, every kernel large enough to be a region: each pass is
 * slower than the same share without a team by exactly regions x
 * omp_region_s; one thread per rank pays nothing. */
START_TEST(cost_threads_pay_regions) {
    zb_model two = sized(12, 768, 12, 512, 50257, 4);
    zb_cost_cpu_rank_share(&two, 1, 2);   /* 1 rank on 2 cores: 2 threads */
    ck_assert_int_eq(two.cluster.device.threads, 2);
    zb_model free2 = two;                 /* the same share, no team */
    free2.cluster.device.threads = 1;
    two.cluster.device.omp_region_s = 20e-6;
    zb_cost_table c = eval(&two), u = eval(&free2);
    zb_regions r = zb_cpu_regions_block(4, 512, 768, 3072, 12, 1);
    zb_regions h = zb_cpu_regions_head(4, 512, 768, 50257, 1);
    zb_regions e = zb_cpu_regions_embed(4, 512, 768);
    ck_assert_double_eq_tol(c.layer.f_s - u.layer.f_s, r.f * 20e-6, 1e-12);
    ck_assert_double_eq_tol(c.layer.b_s - u.layer.b_s, r.b * 20e-6, 1e-12);
    ck_assert_double_eq_tol(c.layer.w_s - u.layer.w_s, r.w * 20e-6, 1e-12);
    ck_assert_double_eq_tol(c.head.f_s - u.head.f_s, h.f * 20e-6, 1e-12);
    ck_assert_double_eq_tol(c.embed.w_s - u.embed.w_s, e.w * 20e-6, 1e-12);
    /* the measured cost is the one used: twice it, twice the addition */
    two.cluster.device.omp_region_s = 40e-6;
    ck_assert_double_eq_tol(eval(&two).layer.f_s - u.layer.f_s, r.f * 40e-6, 1e-12);
    /* without a measurement the default (15 us) is charged, not nothing */
    two.cluster.device.omp_region_s = 0;
    ck_assert_double_eq_tol(eval(&two).layer.f_s - u.layer.f_s, r.f * 15e-6, 1e-12);
    /* one thread per rank (2 ranks on 2 cores): no regions priced */
    zb_model one = sized(12, 768, 12, 512, 50257, 4);
    zb_cost_cpu_rank_share(&one, 2, 2);
    ck_assert_int_eq(one.cluster.device.threads, 1);
    one.cluster.device.omp_region_s = 20e-6;
    zb_model one_free = one;
    one_free.cluster.device.omp_region_s = 0;
    ck_assert_double_eq(eval(&one).layer.f_s, eval(&one_free).layer.f_s);
}
END_TEST

/* A model too small for any region runs every kernel on one thread: a
 * second thread makes no pass faster or slower; every pass costs what it
 * costs a rank of one core. */
START_TEST(cost_serial_kernels_one_thread) {
    zb_model two = sized(2, 16, 2, 8, 32, 1), one = two;
    zb_regions r = zb_cpu_regions_block(1, 8, 16, 64, 2, 1);
    ck_assert_double_eq(r.f + r.b + r.w, 0);
    zb_cost_cpu_rank_share(&two, 1, 2);
    zb_cost_cpu_rank_share(&one, 1, 1);
    zb_cost_table c2 = eval(&two), c1 = eval(&one);
    REL(c2.layer.f_s, c1.layer.f_s);
    REL(c2.layer.b_s, c1.layer.b_s);
    REL(c2.layer.w_s, c1.layer.w_s);
    REL(c2.head.f_s, c1.head.f_s);
    REL(c2.head.b_s, c1.head.b_s);
    REL(c2.head.w_s, c1.head.w_s);
    REL(c2.embed.f_s, c1.embed.f_s);
    REL(c2.embed.w_s, c1.embed.w_s);
    /* tiny: its LayerNorms, residual adds and 64-row weight GEMMs stay on
     * one thread, so 2 threads cost more than regions x omp_region_s over
     * the same share without a team */
    zb_model t2 = tiny();
    zb_cost_cpu_rank_share(&t2, 1, 2);
    t2.cluster.device.omp_region_s = 20e-6;
    zb_model tf = t2;
    tf.cluster.device.threads = 1;
    zb_regions rt = zb_cpu_regions_block(2, 64, 64, 256, 4, 1);
    ck_assert(eval(&t2).layer.w_s - eval(&tf).layer.w_s > rt.w * 20e-6 * 1.01);
}
END_TEST

/* GPU devices never pay OpenMP regions. */
START_TEST(gpu_no_regions) {
    zb_model m = tiny();
    m.cluster.device = *zb_device_lookup("a100-80gb");
    m.cluster.device.threads = 8;
    zb_model n = m;
    n.cluster.device.threads = 0;
    ck_assert_double_eq(eval(&m).layer.f_s, eval(&n).layer.f_s);
}
END_TEST

int main(void) {
    Suite *su = suite_create("cost_regions");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, regions_tiny);
    tcase_add_test(tc, regions_large);
    tcase_add_test(tc, cost_threads_pay_regions);
    tcase_add_test(tc, cost_serial_kernels_one_thread);
    tcase_add_test(tc, gpu_no_regions);
    suite_add_tcase(su, tc);
    SRunner *sr = srunner_create(su);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
